#!/usr/bin/env bash
# Runs Cohort's benchmarks and the peers' (shared/peers) alternately, in one sitting, and prints
# markdown tables with medians over rounds and Cohort/peer ratios.
#   scripts/bench-side-by-side.sh [ROUNDS] [OUT_DIR]      (needs shared/peers/setup.sh run once, as root)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/peers}"
ROUNDS="${1:-3}"
OUT="${2:-$ROOT/out/bench-$(date +%Y%m%d-%H%M%S)}"
TRAIN_STEPS="${TRAIN_STEPS:-500}"
mkdir -p "$OUT"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
for ((i = 1; i <= ROUNDS; i++)); do
  echo "== round $i of $ROUNDS" >&2
  "$ROOT/cohort" bench collectives --backend gloo --world 2 --json "$OUT/cohort-collectives-$i.json" >/dev/null
  /usr/bin/python3 "$PEERS/torch_collectives.py" --world 2 --port $((29600 + i)) --out "$OUT/torch-collectives-$i.json" >/dev/null
  if [ "${SHM:-1}" = 1 ]; then
    "$ROOT/cohort" bench collectives --backend shm --world 2 --json "$OUT/shm-collectives-$i.json" >/dev/null
  fi
  if [ "${MPI:-1}" = 1 ] && command -v mpirun >/dev/null; then
    mpirun --allow-run-as-root --oversubscribe -np 2 /usr/bin/python3 "$PEERS/mpi_allreduce.py" > "$OUT/mpi-shm-$i.txt"
    mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo \
      /usr/bin/python3 "$PEERS/mpi_allreduce.py" > "$OUT/mpi-tcp-$i.txt"
  fi
  for w in 1 2; do
    "$ROOT/cohort" bench train --backend gloo --world $w --steps "$TRAIN_STEPS" --json "$OUT/cohort-train-w$w-$i.json" >/dev/null
    if [ "${SHM:-1}" = 1 ] && [ $w = 2 ]; then
      "$ROOT/cohort" bench train --backend shm --world $w --steps "$TRAIN_STEPS" --json "$OUT/shm-train-w$w-$i.json" >/dev/null
    fi
    /usr/bin/python3 "$PEERS/torch_ddp.py" --world $w --steps "$TRAIN_STEPS" --port $((29700 + i * 2 + w)) --out "$OUT/torch-train-w$w-$i.json" >/dev/null
  done
done
/usr/bin/python3 "$ROOT/scripts/bench-summary.py" "$OUT"
