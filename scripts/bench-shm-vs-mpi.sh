#!/usr/bin/env bash
# The shm engine against Open MPI's shared-memory transport (and TCP) at world 2: the runs of the
# sixth and seventh sessions' sittings. MPI_TCP=0 skips Open MPI over TCP.
#   scripts/bench-shm-vs-mpi.sh [ROUNDS] [OUT_DIR]
RUNS="shm-copy shm-inplace mpi-shm"
[ "${MPI_TCP:-1}" = 1 ] && RUNS="$RUNS mpi-tcp"
WORLD=2 RUNS="$RUNS" exec "$(dirname "$0")/bench-sitting.sh" "${1:-3}" "${2:-$(dirname "$0")/../out/shm-vs-mpi-$(date +%Y%m%d-%H%M%S)}"
