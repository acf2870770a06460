#!/usr/bin/env bash
# The shm engine against Open MPI's shared-memory transport (and TCP), alternating round by round
# in one sitting, world 2, then a markdown table of medians over rounds and per-round ratios.
#   scripts/bench-shm-vs-mpi.sh [ROUNDS] [OUT_DIR]
# Each round: Cohort shm copying from private buffers, Cohort shm in place (buffers in the mapping,
# --in-place), Open MPI shared memory, Open MPI TCP (MPI_TCP=0 skips it). Every run holds
# /tmp/cohort-cpu.lock exclusively (the machine to itself), one run at a time, so builds may
# interleave between runs. SIZES (default 4K,64K,1M,16M) are Cohort's allreduce sizes; the MPI
# peer always runs its own fixed list, of which the same sizes are compared.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/peers}"
ROUNDS="${1:-3}"
OUT="${2:-$ROOT/out/shm-vs-mpi-$(date +%Y%m%d-%H%M%S)}"
SIZES="${SIZES:-4K,64K,1M,16M}"
LOCK="${COHORT_CPU_LOCK:-/tmp/cohort-cpu.lock}"
mkdir -p "$OUT"
alone() { flock -x "$LOCK" "$@"; }
for ((i = 1; i <= ROUNDS; i++)); do
  echo "== round $i of $ROUNDS" >&2
  alone "$ROOT/cohort" bench collectives --backend shm --world 2 --sizes "$SIZES" --json "$OUT/shm-copy-$i.json" >/dev/null
  alone "$ROOT/cohort" bench collectives --backend shm --world 2 --sizes "$SIZES" --in-place --json "$OUT/shm-inplace-$i.json" >/dev/null
  alone mpirun --allow-run-as-root --oversubscribe -np 2 /usr/bin/python3 "$PEERS/mpi_allreduce.py" > "$OUT/mpi-shm-$i.txt"
  if [ "${MPI_TCP:-1}" = 1 ]; then
    alone mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo \
      /usr/bin/python3 "$PEERS/mpi_allreduce.py" > "$OUT/mpi-tcp-$i.txt"
  fi
done
/usr/bin/python3 "$ROOT/scripts/bench-shm-summary.py" "$OUT" | tee "$OUT/summary.md"
