#!/usr/bin/env bash
# One worker's training speed under `cohort run` against the same program as plain `java` with one
# compute thread (issue 40): the launcher's thread defaults must not oversubscribe the cores.
# The program is scripts/ThreadsMlp.java, a small MNIST-like MLP on JavaCPP's PyTorch in the
# default package, run in rounds alternating between:
#   plain        java -cp ... ThreadsMlp, OMP_NUM_THREADS=1 (nothing else set)
#   cohort       ./cohort run --nproc-per-node 1 -cp ... -- ThreadsMlp, the launcher's defaults
#   cohort-omp2  the same with the OpenMP pool at all the cores, OpenBLAS's at 1 (OMP_NUM_THREADS and
#                MKL_NUM_THREADS = cores, which libtorch reads first): does a second OpenMP thread help?
#   cohort-old   the same with the old defaults: every pool at cores / workers (OMP, OpenBLAS, MKL),
#                OpenBLAS's pool inside each OpenMP thread
# Prints each run's training time and the medians; keeps every run's JSON line under OUT_DIR.
#   scripts/bench-threads.sh [ROUNDS] [OUT_DIR]    (STEPS=N steps per run, default 4000;
#                                                   RUNS="plain cohort ..." to choose, default all four)
set -euo pipefail
. "$(dirname "$0")/lib/bench-common.sh"
bench_args threads "$@"
STEPS="${STEPS:-4000}"
RUNS="${RUNS:-plain cohort cohort-omp2 cohort-old}"
mkdir -p "$OUT/classes"
"$ROOT/cohort" run --help >/dev/null   # builds the checkout when needed
CP="$(cat "$ROOT/examples/target/classpath.txt")"
JAVA="${JAVA_HOME:?the cohort command sets it; run with JAVA_HOME set}/bin/java"
"$JAVA_HOME/bin/javac" -d "$OUT/classes" -cp "$CP" "$ROOT/scripts/ThreadsMlp.java"
clean=(env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u MKL_NUM_THREADS -u COHORT_COMPUTE_THREADS)
{ echo "host: $(nproc) CPUs, $(uname -r), $("$JAVA" -version 2>&1 | head -1)"; echo "steps: $STEPS"; echo "runs: $RUNS";
  echo "load before: $(cat /proc/loadavg)"; } > "$OUT/conditions.txt"
for ((i = 1; i <= ROUNDS; i++)); do
  for run in $RUNS; do
    start=$(date +%s.%N)
    case "$run" in
      plain)       "${clean[@]}" OMP_NUM_THREADS=1 "$JAVA" -cp "$OUT/classes:$CP" ThreadsMlp "$STEPS" ;;
      cohort)      "${clean[@]}" "$ROOT/cohort" run --nproc-per-node 1 -cp "$OUT/classes:$CP" -- ThreadsMlp "$STEPS" ;;
      cohort-omp2) t=$(nproc); "${clean[@]}" OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t "$ROOT/cohort" run \
                     --nproc-per-node 1 -cp "$OUT/classes:$CP" -- ThreadsMlp "$STEPS" ;;
      cohort-old)  t=$(nproc); "${clean[@]}" OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t MKL_NUM_THREADS=$t \
                     COHORT_COMPUTE_THREADS=$t "$ROOT/cohort" run --nproc-per-node 1 -cp "$OUT/classes:$CP" \
                     -- ThreadsMlp "$STEPS" ;;
      *) echo "unknown run $run" >&2; exit 2 ;;
    esac 2>"$OUT/$run-$i.err" | grep -o '{"train_s.*' > "$OUT/$run-$i.json"
    end=$(date +%s.%N)
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['wall_s']=round($end-$start,3); json.dump(d,open(sys.argv[1],'w'))" \
      "$OUT/$run-$i.json"
    echo "round $i $run: $(cat "$OUT/$run-$i.json")" >&2
  done
done
echo "load after: $(cat /proc/loadavg)" >> "$OUT/conditions.txt"
python3 - "$OUT" $RUNS <<'PY' | tee "$OUT/summary.md"
import glob, json, os, statistics, sys
out, runs = sys.argv[1], sys.argv[2:]
med = {}
print("| run | rounds | median training s | median wall s | torch threads | training s per round |")
print("|---|---|---|---|---|---|")
for run in runs:
    rows = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, run + "-[0-9]*.json")))]
    t = [r["train_s"] for r in rows]; w = [r["wall_s"] for r in rows]
    med[run] = (statistics.median(t), statistics.median(w))
    print(f"| {run} | {len(rows)} | {med[run][0]:.2f} | {med[run][1]:.2f} | {rows[0]['torch_threads']} | "
          + ", ".join(f"{x:.2f}" for x in t) + " |")
if "plain" in med:
    for run in runs:
        if run != "plain":
            print(f"\n{run} speed against plain java (1 thread): training {med['plain'][0] / med[run][0]:.2f}x, "
                  f"wall clock {med['plain'][1] / med[run][1]:.2f}x")
PY
