#!/usr/bin/env bash
# Spark ML beside ./cohort run, on this machine, alternating round by round:
#   spark: FashionMnistDemo on local[WORKERS] (CohortEstimator.fit, then --measure-inference: the
#          model's transform over the test rows against a one-thread libtorch loop over them);
#   run:   the same MLP, engine, optimizer (SGD, momentum 0.9), batch and epochs through
#          ./cohort demo (the launcher, one JVM per worker), from the same rows as Parquet shards
#          (--data; the Spark ranks also train from Parquet: the shard their rows were spilled to).
#   scripts/bench-spark.sh [ROUNDS] [OUT_DIR]
# Environment: EPOCHS (default 4: the first epochs warm the JIT up), BACKEND (default tcp), WORKERS (default 2), DATA_DIR (the IDX
# files, default Debian's). The figures, per round and as medians (printed, and in
# OUT/summary.json): training samples/s of the last epoch, spark over run; the rows' streaming
# time; transform's rows/s over the libtorch loop's on as many threads as task slots, and over
# the bound the rows' trip through Spark leaves (FashionMnistDemo --help). Holds $LOCK while it
# measures.
set -euo pipefail
source "$(dirname "$0")/lib/bench-common.sh"
bench_args spark "$@"
EPOCHS="${EPOCHS:-4}" BACKEND="${BACKEND:-tcp}" WORKERS="${WORKERS:-2}"
DATA_DIR="${DATA_DIR:-/usr/share/datasets/fashion-mnist}"
mkdir -p "$OUT"
"$ROOT/cohort" --version > "$OUT/version.txt"   # builds what is needed, once
source <(sed -n '/^jdk_version()/,/^}/p;/^pick_jdk()/,/^}/p;/^java_opts()/,/^}/p' "$ROOT/cohort")
pick_jdk
mljar=$(ls "$ROOT"/integrations/spark-ml/target/cohort-spark-ml-*.jar | grep -v -e '-sources' -e '-javadoc' -e '-tests' | head -n 1)
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
parquet="$(mktemp -d)"
trap 'rm -rf "$parquet"' EXIT
"$ROOT/cohort" data convert idx "$DATA_DIR/train-images-idx3-ubyte.gz" "$DATA_DIR/train-labels-idx1-ubyte.gz" \
  "$parquet/train" > "$OUT/convert.log" 2>&1
exec 9> "$LOCK"
flock 9
for i in $(seq 1 "$ROUNDS"); do
  echo "== round $i of $ROUNDS: spark" >&2
  # shellcheck disable=SC2046
  "$JAVA_HOME/bin/java" $(java_opts) -cp "$mljar:$(cat "$ROOT/integrations/spark-ml/target/classpath.txt")" \
    dev.cohort.spark.ml.FashionMnistDemo --master "local[$WORKERS]" --workers "$WORKERS" --epochs "$EPOCHS" \
    --backend "$BACKEND" --optimizer sgd --measure-inference 3 --data-dir "$DATA_DIR" --json "$OUT/spark-$i.json" \
    > "$OUT/spark-$i.log" 2>&1
  echo "== round $i of $ROUNDS: run" >&2
  "$ROOT/cohort" demo --workers "$WORKERS" --epochs "$EPOCHS" --backend "$BACKEND" --data-dir "$DATA_DIR" \
    --data "$parquet/train" --json "$OUT/run-$i.json" > "$OUT/run-$i.log" 2>&1
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, rounds + 1):
    s = json.load(open(f"{out}/spark-{i}.json"))
    r = json.load(open(f"{out}/run-{i}.json"))
    spark_sps = s["epochs_detail"][-1]["samples_per_s"]
    run_sps = r["epochs_detail"][-1]["samples_per_s"]
    rows.append({
        "round": i, "spark_samples_per_s": spark_sps, "run_samples_per_s": run_sps,
        "fit_ratio": spark_sps / run_sps, "stream_seconds": s["stream_seconds"],
        "transform_rows_per_s": s["transform_rows_per_s"], "loop_rows_per_s": s["loop_rows_per_s"],
        "row_trip_rows_per_s": s["row_trip_rows_per_s"], "task_slots": s["inference_slots"],
        "transform_ratio": s["transform_rows_per_s"] / s["loop_rows_per_s"],
        "transform_of_bound": s["transform_rows_per_s"] / s["transform_bound_rows_per_s"],
        "bound_ratio": s["transform_bound_rows_per_s"] / s["loop_rows_per_s"],
        "spark_test_accuracy": s["test_accuracy"], "run_test_accuracy": r["test_accuracy"]})
    x = rows[-1]
    print("round %d: fit %.0f vs run %.0f samples/s (%.2fx), streamed in %.1f s; transform %.0f rows/s, loop %.0f"
          " (%.2fx; Spark's row trip allows %.2fx)" % (i, spark_sps, run_sps, x["fit_ratio"], x["stream_seconds"],
          x["transform_rows_per_s"], x["loop_rows_per_s"], x["transform_ratio"], x["bound_ratio"]))
med = {k: statistics.median(x[k] for x in rows)
       for k in ("fit_ratio", "stream_seconds", "transform_ratio", "bound_ratio", "transform_of_bound")}
rng = {k: [min(x[k] for x in rows), max(x[k] for x in rows)] for k in med}
print("median: fit %.2fx (%.2f-%.2f) of run's samples/s; streaming %.1f s; transform %.2fx (%.2f-%.2f) the loop's"
      " rows/s, %.2fx of what Spark's row trip allows (bound %.2fx the loop)"
      % (med["fit_ratio"], *rng["fit_ratio"], med["stream_seconds"], med["transform_ratio"],
         *rng["transform_ratio"], med["transform_of_bound"], med["bound_ratio"]))
json.dump({"rounds": rows, "median": med, "range": rng}, open(f"{out}/summary.json", "w"), indent=2)
PY
