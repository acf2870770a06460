#!/bin/bash
# ZeRO's memory and speed, world by world: Cohort's `./cohort bench train --optimizer adam --zero 0|1|2`
# beside PyTorch's DDP with and without its ZeroRedundancyOptimizer (scripts/torch_zero.py), the same
# MLP 784-H-H-10 and batches; each run reports every rank's optimizer state bytes and peak RSS.
# Usage: scripts/bench-zero-memory.sh [ROUNDS] [OUT_DIR]   (one round per world and run; ROUNDS is ignored)
# Environment:
#   WORLDS   the world sizes (default "1 2 4"); ENGINE   Cohort's engine (default shm; gloo at world 1)
#   HIDDEN   hidden width (default 4096: 20.0 M parameters, Adam state 153 MiB)
#   STEPS    timed steps (default 30; a rank of 4 on 2 CPUs trains slowly)
# Every run holds the CPU lock (scripts/lib/bench-common.sh). Writes OUT/<run>-w<world>.json and
# OUT/summary.md.
set -euo pipefail
. "$(dirname "$0")/lib/bench-common.sh"
bench_args zero-memory "$@"
mkdir -p "$OUT"
WORLDS="${WORLDS:-1 2 4}"
ENGINE="${ENGINE:-shm}"
HIDDEN="${HIDDEN:-4096}"
STEPS="${STEPS:-30}"
echo "WORLDS=$WORLDS ENGINE=$ENGINE HIDDEN=$HIDDEN STEPS=$STEPS, $(getconf _NPROCESSORS_ONLN) CPUs online, $(date -Is)" \
  > "$OUT/sitting.txt"
for w in $WORLDS; do
  engine="$ENGINE"; [ "$w" = 1 ] && engine=gloo
  for z in 0 1 2; do
    echo "== world $w: cohort zero $z" >&2
    flock -x "$LOCK" "$ROOT/cohort" bench train --world "$w" --backend "$engine" --optimizer adam --hidden "$HIDDEN" \
      --zero "$z" --steps "$STEPS" --warm 3 --json "$OUT/cohort-zero$z-w$w.json" >/dev/null
  done
  for z in 0 1; do
    echo "== world $w: torch zero $z" >&2
    flock -x "$LOCK" /usr/bin/python3 "$ROOT/scripts/torch_zero.py" --world "$w" --zero "$z" --optimizer adam \
      --hidden "$HIDDEN" --steps "$STEPS" --warm 3 --port $((29600 + w * 10 + z)) --out "$OUT/torch-zero$z-w$w.json"
  done
done
/usr/bin/python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
names = {"cohort-zero0": "Cohort, unsharded", "cohort-zero1": "Cohort, ZeRO stage 1", "cohort-zero2": "Cohort, ZeRO stage 2",
         "torch-zero0": "PyTorch DDP, unsharded", "torch-zero1": "PyTorch DDP + ZeroRedundancyOptimizer"}
mib = lambda b: b / 1048576
print("Adam, MLP of %s parameters: optimizer state and peak RSS per rank (largest rank), samples/s\n"
      % f"{json.load(open(next(out.glob('cohort-zero0-w*.json'))))['params']:,}")
print("| run | world | state per rank (MiB) | state, largest rank / world 1 | peak RSS per rank (MiB) | samples/s |")
print("|---|---|---|---|---|---|")
for stem, name in names.items():
    files = sorted(out.glob(stem + "-w*.json"), key=lambda p: int(p.stem.split("-w")[-1]))
    if not files:
        continue
    one = json.load(open(files[0]))["memory"]["optimizer_state_bytes"][0]
    for f in files:
        r = json.load(open(f))
        m = r["memory"]
        state = m["optimizer_state_bytes"]
        print(f"| {name} | {r['world']} | {' '.join(f'{mib(b):.1f}' for b in state)} | {max(state) / one:.2f} "
              f"| {' '.join(f'{mib(b):.0f}' for b in m['peak_rss_bytes'])} | {r['samples_per_s']:,.0f} |")
PY
