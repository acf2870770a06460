#!/usr/bin/env bash
# Every comparison at world 2 in one sitting: Cohort's gloo and shm collectives beside PyTorch's
# Gloo and Open MPI (shared memory and TCP), and the training benchmark beside PyTorch DDP, runs
# alternating round by round; then markdown tables (needs shared/peers/setup.sh run once, as root).
#   scripts/bench-side-by-side.sh [ROUNDS] [OUT_DIR]
# The hierarchical backend needs more ranks: WORLD=4 scripts/bench-sitting.sh (hosts of 2).
WORLD=2 RUNS="gloo torch-gloo shm-copy shm-inplace mpi-shm mpi-tcp train-gloo train-shm torch-ddp" \
  exec "$(dirname "$0")/bench-sitting.sh" "${1:-3}" "${2:-$(dirname "$0")/../out/bench-$(date +%Y%m%d-%H%M%S)}"
