#!/usr/bin/env bash
# Cohort's engines and the peers in one sitting, alternating run by run, round by round, then a
# markdown summary (medians over rounds; ratios against each peer, median and range over rounds)
# and OUT_DIR/sitting.png, a chart of every collectives run beside the peers (allreduce bus
# bandwidth and time by size, the median over rounds; ./cohort bench chart).
#   scripts/bench-sitting.sh [ROUNDS] [OUT_DIR]
# Environment:
#   WORLD     ranks (default 2)
#   RUNS      which runs, in this order each round (default: every one that fits WORLD):
#               shm-copy     Cohort shm, allreduce from private buffers (copied in and out)
#               shm-inplace  Cohort shm, allreduce of buffers in the mapping (--in-place)
#               hier         Cohort hier, hosts of PER_HOST ranks simulated on this machine
#               gloo         Cohort gloo (the peer mesh and Gloo through c10d)
#               tcp          Cohort tcp (the peer mesh alone)
#               mpi          Cohort mpi (Open MPI through the foreign-function API; Open MPI's defaults: shared memory)
#               mpi-over-tcp Cohort mpi with Open MPI held to TCP over loopback (as mpi-tcp)
#               mpi-shm      Open MPI 4.1 through mpi4py, shared memory (vader)
#               mpi-tcp      Open MPI, TCP over loopback only
#               torch-gloo   PyTorch 1.13's Gloo (torch_collectives.py)
#               (each peer also runs scripts/peer_rooted_collectives.py: reduce, gather, scatter, all-to-all)
#               train-gloo   Cohort's training benchmark on gloo (./cohort bench train)
#               train-shm    the same on shm (gradient buckets in the arena)
#               train-tcp    the same on tcp
#               train-mpi    the same on mpi
#               train-gloo-zero1, train-shm-zero2, train-shm-zero2-bf16 …   train-ENGINE with ZeRO stage 1 or 2
#                            (--zero), gradients as bf16/fp16 when named (--grad-compression)
#               train-djl-shm, train-djl-tcp   the same through DJL's PyTorch engine (--framework djl)
#               train-djl-none, train-djl-world1   DJL: WORLD ranks training alone (the ceiling), and one rank
#               torch-ddp    PyTorch DDP on its Gloo (torch_ddp.py), the same model and batches
#                            (train-gloo, train-shm: overlap as distribute() decides for this host)
#               train-gloo-overlap, train-shm-overlap   averaging during backward, always (--overlap)
#               train-gloo-no-overlap, train-shm-no-overlap   averaging only at the step (--no-overlap)
#               train-world1, torch-ddp-world1   one rank, whatever WORLD says (nothing to average)
#               train-none   the ceiling: WORLD ranks training alone at once (--backend none), samples/s summed
#               train-gloo-wide, train-shm-wide, train-tcp-wide, train-mpi-wide, torch-ddp-wide   hidden layers
#                            of 4096 (20.0 M parameters),
#                            TRAIN_STEPS_WIDE steps
#               train-demo-mlp, train-demo-cnn   the demo's models on one rank (./cohort bench train --model)
#               torch-demo-mlp, torch-demo-cnn   the same in PyTorch on one process (scripts/torch_models.py)
#               RUN-host-blas  any train-… run with libtorch on the host's OpenBLAS (COHORT_BLAS=system),
#                            the library the peers compute with; other runs use COHORT_BLAS as set (default: bundled)
#   PER_HOST  ranks per simulated host for hier (default WORLD/2)
#   SIZES     Cohort's allreduce sizes (default 4K,64K,1M,16M); the peers run their own fixed
#             lists, of which the same sizes are compared
#   TRAIN_STEPS  timed steps of each training run (default 500)
#   BASELINE  another built checkout of Cohort (e.g. a git worktree of an older commit): RUNS may then
#             name base-shm-copy, base-shm-inplace, base-hier, base-gloo, base-tcp, base-mpi and
#             base-train-gloo, base-train-shm, base-train-tcp, base-train-mpi, the same runs from it,
#             and the summary adds each run's speed over its baseline
# Every run holds /tmp/cohort-cpu.lock exclusively (the machine to itself), so builds may
# interleave between runs but never during one.
set -euo pipefail
. "$(dirname "$0")/lib/bench-common.sh"
bench_args sitting "$@"
WORLD="${WORLD:-2}"
PER_HOST="${PER_HOST:-$((WORLD / 2))}"
SIZES="${SIZES:-4K,64K,1M,16M}"
TRAIN_STEPS="${TRAIN_STEPS:-500}"
TRAIN_STEPS_WIDE="${TRAIN_STEPS_WIDE:-60}"
if [ -z "${RUNS:-}" ]; then
  RUNS="shm-copy shm-inplace gloo mpi-shm mpi-tcp torch-gloo"
  [ "$WORLD" -ge 4 ] && RUNS="hier gloo mpi-shm mpi-tcp torch-gloo"
fi
mkdir -p "$OUT"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
alone() { flock -x "$LOCK" "$@"; }
cohort() { alone "$ROOT/cohort" bench collectives --world "$WORLD" --sizes "$SIZES" --no-chart "$@" >/dev/null; }
baseline() { alone "${BASELINE:?set BASELINE to a built checkout for base-* runs}/cohort" bench collectives --world "$WORLD" --sizes "$SIZES" "$@" >/dev/null; }
# train|ddp WORLD STEPS [PORT] OPTIONS...
train() { alone "$ROOT/cohort" bench train --world "$1" --steps "$2" "${@:3}" >/dev/null; }
basetrain() { alone "${BASELINE:?set BASELINE to a built checkout for base-* runs}/cohort" bench train --world "$1" --steps "$2" "${@:3}" >/dev/null; }
ddp() { alone /usr/bin/python3 "$PEERS/torch_ddp.py" --world "$1" --steps "$2" --port "$3" "${@:4}" >/dev/null; }
mpi() { alone mpirun --allow-run-as-root --oversubscribe -np "$WORLD" "$@" /usr/bin/python3 "$PEERS/mpi_allreduce.py"; }
# The peers' reduce, gather, scatter and all-to-all (the shared scripts measure the rest): OUT_FILE PEER [mpirun options]
rooted() {
  local out="$1" peer="$2"; shift 2
  if [ "$peer" = torch ]; then
    alone /usr/bin/python3 "$ROOT/scripts/peer_rooted_collectives.py" torch --world "$WORLD" --port $((29780 + i)) --out "$out" >/dev/null
  else
    alone mpirun --allow-run-as-root --oversubscribe -np "$WORLD" "$@" /usr/bin/python3 "$ROOT/scripts/peer_rooted_collectives.py" mpi --out "$out" >/dev/null
  fi
}
BLAS_DEFAULT="${COHORT_BLAS:-bundled}"   # libtorch's OpenBLAS for runs not named RUN-host-blas
echo "WORLD=$WORLD PER_HOST=$PER_HOST SIZES=$SIZES RUNS=$RUNS rounds=$ROUNDS, $(getconf _NPROCESSORS_ONLN) CPUs online, COHORT_BLAS=$BLAS_DEFAULT OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(auto)}, $(date -Is)" > "$OUT/sitting.txt"
for ((i = 1; i <= ROUNDS; i++)); do
  for run in $RUNS; do
    start_run "$i" "$run"
    case "$base" in
      shm-copy)    cohort --backend shm --json "$OUT/$run-$i.json" ;;
      shm-inplace) cohort --backend shm --in-place --json "$OUT/$run-$i.json" ;;
      hier)        cohort --backend hier --engine-option=--hier-ranks-per-host="$PER_HOST" --json "$OUT/$run-$i.json" ;;
      gloo)        cohort --backend gloo --json "$OUT/$run-$i.json" ;;
      tcp)         cohort --backend tcp --json "$OUT/$run-$i.json" ;;
      mpi)         cohort --backend mpi --json "$OUT/$run-$i.json" ;;
      mpi-over-tcp) OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo \
                     cohort --backend mpi --json "$OUT/$run-$i.json" ;;
      base-shm-copy)    baseline --backend shm --json "$OUT/$run-$i.json" ;;
      base-shm-inplace) baseline --backend shm --in-place --json "$OUT/$run-$i.json" ;;
      base-hier)   baseline --backend hier --engine-option=--hier-ranks-per-host="$PER_HOST" --json "$OUT/$run-$i.json" ;;
      base-gloo)   baseline --backend gloo --json "$OUT/$run-$i.json" ;;
      base-tcp)    baseline --backend tcp --json "$OUT/$run-$i.json" ;;
      base-mpi)    baseline --backend mpi --json "$OUT/$run-$i.json" ;;
      base-train-gloo|base-train-shm|base-train-tcp|base-train-mpi)
                   basetrain "$WORLD" "$TRAIN_STEPS" --backend "${base#base-train-}" --json "$OUT/$run-$i.json" ;;
      mpi-shm)     mpi > "$OUT/$run-$i.txt"; rooted "$OUT/$run-$i.rooted.json" mpi ;;
      mpi-tcp)     mpi --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo > "$OUT/$run-$i.txt"
                   rooted "$OUT/$run-$i.rooted.json" mpi --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo ;;
      torch-gloo)  alone /usr/bin/python3 "$PEERS/torch_collectives.py" --world "$WORLD" --port $((29700 + i)) \
                     --max-mib 16 --out "$OUT/$run-$i.json" >/dev/null
                   rooted "$OUT/$run-$i.rooted.json" torch ;;
      train-*-zero[12]|train-*-zero[12]-*)
                   e="${base#train-}"; z="${e#*-zero}"; e="${e%%-zero*}"; stage="${z%%-*}"; comp=none
                   [ "$z" != "$stage" ] && comp="${z#*-}"
                   train "$WORLD" "$TRAIN_STEPS" --backend "$e" --zero "$stage" --grad-compression "$comp" --json "$OUT/$run-$i.json" ;;
      train-gloo)  train "$WORLD" "$TRAIN_STEPS" --backend gloo --json "$OUT/$run-$i.json" ;;
      train-shm)   train "$WORLD" "$TRAIN_STEPS" --backend shm --json "$OUT/$run-$i.json" ;;
      train-tcp)   train "$WORLD" "$TRAIN_STEPS" --backend tcp --json "$OUT/$run-$i.json" ;;
      train-mpi)   train "$WORLD" "$TRAIN_STEPS" --backend mpi --json "$OUT/$run-$i.json" ;;
      train-djl-shm|train-djl-tcp) train "$WORLD" "$TRAIN_STEPS" --framework djl --backend "${base#train-djl-}" --json "$OUT/$run-$i.json" ;;
      train-djl-none)   train "$WORLD" "$TRAIN_STEPS" --framework djl --backend none --json "$OUT/$run-$i.json" ;;
      train-djl-world1) train 1 "$TRAIN_STEPS" --framework djl --backend none --json "$OUT/$run-$i.json" ;;
      torch-ddp)   ddp "$WORLD" "$TRAIN_STEPS" $((29750 + i)) --out "$OUT/$run-$i.json" ;;
      train-gloo-overlap) train "$WORLD" "$TRAIN_STEPS" --backend gloo --overlap --json "$OUT/$run-$i.json" ;;
      train-shm-overlap)  train "$WORLD" "$TRAIN_STEPS" --backend shm --overlap --json "$OUT/$run-$i.json" ;;
      train-gloo-no-overlap) train "$WORLD" "$TRAIN_STEPS" --backend gloo --no-overlap --json "$OUT/$run-$i.json" ;;
      train-shm-no-overlap)  train "$WORLD" "$TRAIN_STEPS" --backend shm --no-overlap --json "$OUT/$run-$i.json" ;;
      train-none)        train "$WORLD" "$TRAIN_STEPS" --backend none --json "$OUT/$run-$i.json" ;;
      train-world1)      train 1 "$TRAIN_STEPS" --backend gloo --json "$OUT/$run-$i.json" ;;
      torch-ddp-world1)  ddp 1 "$TRAIN_STEPS" $((29760 + i)) --out "$OUT/$run-$i.json" ;;
      train-gloo-wide)   train "$WORLD" "$TRAIN_STEPS_WIDE" --backend gloo --hidden 4096 --json "$OUT/$run-$i.json" ;;
      train-shm-wide)    train "$WORLD" "$TRAIN_STEPS_WIDE" --backend shm --hidden 4096 --json "$OUT/$run-$i.json" ;;
      train-tcp-wide)    train "$WORLD" "$TRAIN_STEPS_WIDE" --backend tcp --hidden 4096 --json "$OUT/$run-$i.json" ;;
      train-mpi-wide)    train "$WORLD" "$TRAIN_STEPS_WIDE" --backend mpi --hidden 4096 --json "$OUT/$run-$i.json" ;;
      torch-ddp-wide)    ddp "$WORLD" "$TRAIN_STEPS_WIDE" $((29770 + i)) --hidden 4096 --out "$OUT/$run-$i.json" ;;
      train-demo-mlp|train-demo-cnn) train 1 "$TRAIN_STEPS" --backend gloo --model "${base#train-}" --json "$OUT/$run-$i.json" ;;
      torch-demo-mlp|torch-demo-cnn) alone /usr/bin/python3 "$ROOT/scripts/torch_models.py" --model "${base#torch-}" \
                     --steps "$TRAIN_STEPS" --out "$OUT/$run-$i.json" >/dev/null ;;
      *) echo "unknown run '$run' (see the comment at the top of $0)" >&2; exit 2 ;;
    esac
  done
done
/usr/bin/python3 "$ROOT/scripts/bench-sitting-summary.py" "$OUT" | tee "$OUT/summary.md"

# The chart: each collectives run's rounds as one series, named as in the summary.
label() {
  case "$1" in
    shm-copy) echo "Cohort shm (copying)" ;;     shm-inplace) echo "Cohort shm (in place)" ;;
    hier) echo "Cohort hier" ;;                  gloo) echo "Cohort gloo" ;;
    tcp) echo "Cohort tcp" ;;                    mpi) echo "Cohort mpi" ;;
    mpi-over-tcp) echo "Cohort mpi (TCP)" ;;
    mpi-shm) echo "Open MPI shm" ;;              mpi-tcp) echo "Open MPI TCP" ;;
    torch-gloo) echo "PyTorch Gloo" ;;           base-*) echo "$(label "${1#base-}") (baseline)" ;;
    *) echo "$1" ;;
  esac
}
charted=()
for run in $RUNS; do
  for ((i = 1; i <= ROUNDS; i++)); do
    for f in "$OUT/$run-$i.json" "$OUT/$run-$i.txt"; do
      case "$run" in train-*|base-train-*|torch-ddp*|torch-demo-*) continue ;; esac
      if [ -f "$f" ]; then charted+=("$(label "$run")=$f"); fi
    done
  done
done
if [ "${#charted[@]}" -gt 0 ]; then
  "$ROOT/cohort" bench chart --median --out "$OUT/sitting.png" \
    --title "allreduce, $WORLD ranks: median of $ROUNDS round(s) per run" "${charted[@]}" >&2 \
    || echo "bench-sitting: drawing $OUT/sitting.png failed (the summary above stands)" >&2
fi
