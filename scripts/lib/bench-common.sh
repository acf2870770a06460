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
