#!/usr/bin/env bash
# The fault drill, elastic against restart-and-resume: for each seed, SIGKILL a random worker (1 or 2
# of 3) after a random step, once in an elastic run (./cohort demo --elastic 2: the survivors re-form
# and go on) and once in a restarted one (--max-restarts 1: every worker restarts and resumes from the
# last checkpoint, every 100 steps); plus one uninterrupted run. Records, per run: the time from the
# kill to the next completed step, the steps redone, the final test accuracy.
#
#   scripts/elastic-drill.sh [--seeds N] [--backend auto|gloo|tcp|shm] [--epochs E] OUT_DIR
#
# Steps redone: the steps completed before the kill that were trained again (the killed step's
# number minus the step training went on from). Writes OUT_DIR/runs.jsonl (one line per run) and OUT_DIR/summary.json (medians), and prints the
# summary. Not part of CI: ~12 demo runs of 3 workers.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seeds=5 backend=auto epochs=2
while [ "$#" -gt 1 ]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    *) echo "elastic-drill: unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$#" -eq 1 ] || { echo "usage: scripts/elastic-drill.sh [--seeds N] [--backend B] [--epochs E] OUT_DIR" >&2; exit 2; }
out="$1"
mkdir -p "$out"
: > "$out/runs.jsonl"

run() {  # run NAME ENV... -- DEMO_OPTIONS...
  local name="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local log="$out/$name.log"
  rm -rf "$out/ckpt-$name"
  if ! env ${envs[@]+"${envs[@]}"} "$ROOT/cohort" demo --workers 3 --epochs "$epochs" --backend "$backend" \
      --json "$out/$name.json" "$@" > "$log" 2>&1; then
    echo "elastic-drill: run $name failed; see $log" >&2
    return 1
  fi
  python3 - "$name" "$log" "$out/$name.json" >> "$out/runs.jsonl" <<'PY'
import json, re, sys
name, log, summary = sys.argv[1:4]
text = open(log).read()
s = json.load(open(summary))
kill = re.search(r"kills itself \(SIGKILL\) after step (\d+) at (\d+) ms", text)
done = re.search(r"step (\d+) done at (\d+) ms", text)
# Where training went on: the re-formed group's step, or the checkpoint a restarted group resumed from.
went_on = re.search(r"going on with \d+ workers as generation \d+ from step (\d+)", text) \
    or re.search(r"resuming from .*\((\d+) steps done\)", text)
print(json.dumps({
    "run": name,
    "killed_after_step": int(kill.group(1)) if kill else None,
    "kill_to_next_step_ms": int(done.group(2)) - int(kill.group(2)) if kill and done else None,
    "went_on_from_step": int(went_on.group(1)) if went_on else None,
    "steps_redone": int(kill.group(1)) - int(went_on.group(1)) if kill and went_on else 0,
    "restarts": s.get("restarts"),
    "workers_at_end": s.get("workers"),
    "test_accuracy": s.get("test_accuracy"),
    "seconds": s.get("seconds"),
}))
PY
}

run uninterrupted -- --elastic 2
for seed in $(seq 1 "$seeds"); do
  RANDOM=$seed
  step=$(( RANDOM % 500 + 50 ))
  rank=$(( RANDOM % 2 + 1 ))
  run "elastic-$seed" COHORT_FAULT_AT_STEP="$step" COHORT_FAULT_RANK="$rank" -- --elastic 2
  run "restart-$seed" COHORT_FAULT_AT_STEP="$step" COHORT_FAULT_RANK="$rank" -- --max-restarts 1 \
    --checkpoint-dir "$out/ckpt-restart-$seed" --checkpoint-every 100 --resume
done

python3 - "$out" "$backend" "$epochs" <<'PY' | tee "$out/summary.json"
import json, statistics, sys
out, backend, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [json.loads(l) for l in open(out + "/runs.jsonl")]
base = next(r for r in runs if r["run"] == "uninterrupted")
def med(kind, key):
    vals = [r[key] for r in runs if r["run"].startswith(kind) and r[key] is not None]
    return statistics.median(vals) if vals else None
summary = {"backend": backend, "epochs": epochs, "workers": 3,
           "uninterrupted_accuracy": base["test_accuracy"]}
for kind in ("elastic", "restart"):
    rs = [r for r in runs if r["run"].startswith(kind)]
    summary[kind] = {
        "runs": len(rs),
        "kill_to_next_step_ms_median": med(kind, "kill_to_next_step_ms"),
        "kill_to_next_step_ms": [r["kill_to_next_step_ms"] for r in rs],
        "steps_redone": [r["steps_redone"] for r in rs],
        "accuracy_minus_uninterrupted_points": [round(100 * (r["test_accuracy"] - base["test_accuracy"]), 2) for r in rs],
        "seconds_median": med(kind, "seconds"),
    }
print(json.dumps(summary, indent=2))
PY
