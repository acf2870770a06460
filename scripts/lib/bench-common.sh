# What the bench scripts (scripts/bench-*.sh) all start with; they source this file, then call
#   bench_args NAME [ROUNDS] [OUT_DIR]
# ROOT: this checkout. PEERS: the peers' scripts ($PEERS, else ../shared/peers beside the checkout).
# LOCK: the file a run holds exclusively to have the machine to itself ($COHORT_CPU_LOCK, else
# /tmp/cohort-cpu.lock). bench_args sets ROUNDS (default 3) and OUT (default out/NAME-<date>-<time>
# in the checkout) from the script's first two arguments.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/peers}"
LOCK="${COHORT_CPU_LOCK:-/tmp/cohort-cpu.lock}"
bench_args() {
  ROUNDS="${2:-3}"
  OUT="${3:-$ROOT/out/$1-$(date +%Y%m%d-%H%M%S)}"
}
# start_run I RUN: says that round I's RUN starts, sets base to RUN without a -host-blas suffix, and
# exports COHORT_BLAS for it: RUN-host-blas is RUN with libtorch on the host's OpenBLAS
# (COHORT_BLAS=system), the peers' library; any other run uses $BLAS_DEFAULT (the script sets it).
start_run() {
  echo "== round $1 of $ROUNDS: $2" >&2
  base="${2%-host-blas}"
  if [ "$base" != "$2" ]; then export COHORT_BLAS=system; else export COHORT_BLAS="$BLAS_DEFAULT"; fi
}
