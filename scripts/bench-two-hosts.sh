#!/usr/bin/env bash
# Cohort's engines across two hosts, alternating round by round: two network namespaces on this
# machine joined by a veth pair, each link limited to RATE by a token bucket (tc tbf), as a network
# between real hosts would be; WORLD ranks, half on each host. Then a markdown summary.
#   RATE=1gbit scripts/bench-two-hosts.sh [ROUNDS] [OUT_DIR]
# Environment: RATE (tc's syntax, e.g. 1gbit, 10gbit; empty: the veth's own speed), WORLD (default
# 4), SIZES (default 4K,64K,1M,16M), RUNS (default "hier gloo mpi": Cohort hier, Cohort gloo (or tcp),
# Open MPI with shared memory within a host and TCP between; also hier-mpi and cohort-mpi: Cohort's
# benchmark workers as one mpirun job across the hosts, on hier with Open MPI between hosts and on
# the mpi engine; train-hier, train-gloo, train-tcp, train-hier-mpi, train-mpi: ./cohort bench train
# across the hosts (the last two under mpirun), and torch-ddp: torch_ddp.py the same way, TRAIN_STEPS
# steps, default 300; train-hier-overlap: hier averaging during backward; train-hier-tcp: hier with Cohort's TCP mesh between hosts; train-hier-sync: the same without averaging, one float allreduced per step,
# compute plus the wait for the slowest rank), ENGINE_OPTIONS (for Cohort's runs, e.g. "--hier-leaders-spin-us=0"),
# TRAIN_OPTIONS (more options of Cohort's training runs, e.g. "--grad-compression bf16").
# c-full, c-full-reduce, c-sync, c-none: docs/lab/step2x2.c, the same training step in C with the
# system's OpenBLAS (hier's algorithm, or a reduce to the leader within the host, or one float per
# step, or none), TRAIN_STEPS steps: what the machine allows for this layout.
# RUN-host-blas: a train-… run with libtorch on the host's OpenBLAS (COHORT_BLAS=system), the peers'
# library; other runs use COHORT_BLAS as set (default: bundled).
# Needs root, iproute2 and Open MPI for the mpi run, PyTorch for torch-ddp, gcc for the c- runs. Each run holds /tmp/cohort-cpu.lock exclusively.
# Both "hosts" share this machine's CPUs: with more ranks than CPUs, small collectives measure the
# scheduler (Open MPI is told to yield when idle); large ones at a limited RATE measure the link.
set -euo pipefail
. "$(dirname "$0")/lib/bench-common.sh"
bench_args two-hosts "$@"
WORLD="${WORLD:-4}"
SIZES="${SIZES:-4K,64K,1M,16M}"
RUNS="${RUNS:-hier gloo mpi}"
RATE="${RATE:-}"
TRAIN_STEPS="${TRAIN_STEPS:-300}"
PER_HOST=$((WORLD / 2))
[ $((PER_HOST * 2)) = "$WORLD" ] || { echo "WORLD must be even (half the ranks on each host)" >&2; exit 2; }
TAG="$$"
NS=("cohort-bench-$TAG-0" "cohort-bench-$TAG-1")
DEV=("cbh0$TAG" "cbh1$TAG")
ADDR=(198.51.100.1 198.51.100.2)
mkdir -p "$OUT"
cleanup() { for ns in "${NS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done; }
trap cleanup EXIT
ip netns add "${NS[0]}"
ip netns add "${NS[1]}"
ip link add "${DEV[0]}" type veth peer name "${DEV[1]}"
for k in 0 1; do
  ip link set "${DEV[$k]}" netns "${NS[$k]}"
  ip -n "${NS[$k]}" addr add "${ADDR[$k]}/24" dev "${DEV[$k]}"
  ip -n "${NS[$k]}" link set "${DEV[$k]}" up
  ip -n "${NS[$k]}" link set lo up
  if [ -n "$RATE" ]; then
    ip netns exec "${NS[$k]}" tc qdisc add dev "${DEV[$k]}" root tbf rate "$RATE" burst 1mb latency 100ms
  fi
done
# Open MPI starts the other host's daemon through this "remote shell": a command in that namespace,
# under a host name of its own (Open MPI tells hosts apart by name).
AGENT="$OUT/netns-shell"
cat > "$AGENT" <<AGENT_EOF
#!/bin/sh
host="\$1"; shift
case "\$host" in ${ADDR[0]}) ns=${NS[0]} ;; *) ns=${NS[1]} ;; esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; \$*"
AGENT_EOF
chmod +x "$AGENT"
BLAS_DEFAULT="${COHORT_BLAS:-bundled}"   # libtorch's OpenBLAS for runs not named RUN-host-blas
echo "WORLD=$WORLD RATE=${RATE:-veth} SIZES=$SIZES RUNS=$RUNS rounds=$ROUNDS, $(getconf _NPROCESSORS_ONLN) CPUs online, COHORT_BLAS=$BLAS_DEFAULT OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(auto)}, $(date -Is)" > "$OUT/sitting.txt"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
exec 9>>"$LOCK"
alone() { flock -x 9; local rc=0; "$@" || rc=$?; flock -u 9; return $rc; }
on() { local k="$1"; shift; ip netns exec "${NS[$k]}" "$@"; }
# Both hosts' launchers of one Cohort run; node 0 writes the JSON.
cohort_pair() {
  local backend="$1" port="$2" json="$3" other rc=0
  local common=(bench collectives --backend "$backend" --world "$WORLD" --sizes "$SIZES" --nnodes 2
                --master-addr "${ADDR[0]}" --master-port "$port")
  for o in ${ENGINE_OPTIONS:-}; do common+=("--engine-option=$o"); done
  on 1 "$ROOT/cohort" "${common[@]}" --node-rank 1 > "$json.node1.log" 2>&1 &
  other=$!
  on 0 "$ROOT/cohort" "${common[@]}" --node-rank 0 --json "$json" > "$json.node0.log" 2>&1 || rc=$?
  wait "$other" || rc=$((rc ? rc : $?))
  return $rc
}
# Both hosts' training runs, Cohort's (backend) or DDP's (torch-ddp); node 0 writes the JSON.
train_pair() {
  local backend="$1" port="$2" json="$3" other rc=0 k
  shift 3
  for k in 1 0; do
    local cmd=("$ROOT/cohort" bench train --backend "$backend" --world "$WORLD" --steps "$TRAIN_STEPS" --nnodes 2
               --node-rank "$k" --master-addr "${ADDR[0]}" --master-port "$port" ${TRAIN_OPTIONS:-} "$@")
    [ "$backend" = torch-ddp ] && cmd=(/usr/bin/python3 "$PEERS/torch_ddp.py" --world "$WORLD" --steps "$TRAIN_STEPS"
                                        --nnodes 2 --node-rank "$k" --master-addr "${ADDR[0]}" --port "$port" --ifname "${DEV[$k]}")
    if [ "$k" = 1 ]; then
      on 1 "${cmd[@]}" > "$json.node1.log" 2>&1 &
      other=$!
    elif [ "$backend" = torch-ddp ]; then
      on 0 "${cmd[@]}" --out "$json" > "$json.node0.log" 2>&1 || rc=$?
    else
      on 0 "${cmd[@]}" --json "$json" > "$json.node0.log" 2>&1 || rc=$?
    fi
  done
  wait "$other" || rc=$((rc ? rc : $?))
  return $rc
}
# Cohort's benchmark workers (BenchMain WORKER ARGS...) as one mpirun job across both hosts, under
# the same Open MPI settings as the peer's run; the JVM through a script (mpirun rewrites "java").
JAVA_FOR_MPI="$OUT/java-for-mpirun"
JDK="${COHORT_JDK:-$(ls -d /usr/lib/jvm/*-2[2-9]-* 2>/dev/null | sort -t- -k2 -n | tail -1)}"
printf '#!/bin/sh\nexec %s/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector "$@"\n' "$JDK" > "$JAVA_FOR_MPI"
chmod +x "$JAVA_FOR_MPI"
cohort_mpirun() {
  local log="$1"; shift
  local cp
  cp="$(ls "$ROOT"/tools/dist/target/cohort-dist-*.jar | grep -v -e sources -e javadoc | head -1):$(cat "$ROOT/tools/dist/target/classpath.txt")"
  on 0 mpirun --allow-run-as-root --oversubscribe -np "$WORLD" --host "${ADDR[0]}:$PER_HOST,${ADDR[1]}:$PER_HOST" \
    --mca plm_rsh_agent "$AGENT" --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 \
    --mca btl_tcp_if_include 198.51.100.0/24 --mca oob_tcp_if_include 198.51.100.0/24 --bind-to none \
    -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 -x COHORT_COMPUTE_THREADS=1 \
    "$JAVA_FOR_MPI" -cp "$cp" dev.cohort.bench.BenchMain "$@" > "$log" 2>&1
}
cohort_mpi_collectives() {
  local backend="$1" json="$2"; shift 2
  local args=(collectives-worker --backend "$backend" --sizes "$SIZES" --json "$json" --in-place=false --warmup-ms 6000)
  for o in "$@" ${ENGINE_OPTIONS:-}; do args+=("--engine-option=$o"); done
  cohort_mpirun "$json.log" "${args[@]}"
}
cohort_mpi_train() {
  local backend="$1" json="$2"; shift 2
  local args=(train-worker --backend "$backend" --steps "$TRAIN_STEPS" --warm 20 --batch 64 --hidden 1024 --model mlp --json "$json")
  for o in "$@" ${ENGINE_OPTIONS:-}; do args+=("--engine-option=$o"); done
  cohort_mpirun "$json.log" "${args[@]}"
}
# docs/lab/step2x2.c on both hosts (built once per sitting); node 0 writes the JSON.
C_STEP="$OUT/step2x2"
c_pair() {
  local mode="$1" port="$2" json="$3" other rc=0
  [ -x "$C_STEP" ] || gcc -std=c11 -O3 -march=native -o "$C_STEP" "$ROOT/docs/lab/step2x2.c" -l:libopenblas.so.0 -lm
  on 1 "$C_STEP" 1 "${ADDR[0]}" "$port" "$TRAIN_STEPS" "$mode" --ranks-per-host "$PER_HOST" > "$json.node1.log" 2>&1 &
  other=$!
  on 0 "$C_STEP" 0 "${ADDR[1]}" "$port" "$TRAIN_STEPS" "$mode" --ranks-per-host "$PER_HOST" --json "$json" > "$json.node0.log" 2>&1 || rc=$?
  wait "$other" || rc=$((rc ? rc : $?))
  return $rc
}
mpi_pair() {
  on 0 mpirun --allow-run-as-root --oversubscribe -np "$WORLD" --host "${ADDR[0]}:$PER_HOST,${ADDR[1]}:$PER_HOST" \
    --mca plm_rsh_agent "$AGENT" --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 \
    --mca btl_tcp_if_include 198.51.100.0/24 --mca oob_tcp_if_include 198.51.100.0/24 \
    /usr/bin/python3 "$PEERS/mpi_allreduce.py" > "$1"
}
for ((i = 1; i <= ROUNDS; i++)); do
  for run in $RUNS; do
    start_run "$i" "$run"
    case "$base" in
      hier|gloo|tcp) alone cohort_pair "$run" $((31000 + 10 * i)) "$OUT/$run-$i.json" ;;
      train-hier|train-gloo|train-tcp) alone train_pair "${base#train-}" $((31001 + 10 * i)) "$OUT/$run-$i.json" ;;
      train-hier-overlap) alone train_pair hier $((31004 + 10 * i)) "$OUT/$run-$i.json" --overlap ;;
      train-hier-tcp) alone train_pair hier $((31005 + 10 * i)) "$OUT/$run-$i.json" --engine-option=--hier-between=tcp ;;
      train-hier-sync) alone train_pair hier $((31003 + 10 * i)) "$OUT/$run-$i.json" --sync-only ;;
      torch-ddp) alone train_pair torch-ddp $((31002 + 10 * i)) "$OUT/$run-$i.json" ;;
      c-full|c-full-reduce|c-sync|c-none) alone c_pair "${base#c-}" $((31006 + 10 * i)) "$OUT/$run-$i.json" ;;
      mpi)       alone mpi_pair "$OUT/mpi-hosts-$i.txt" ;;
      hier-mpi)  alone cohort_mpi_collectives hier "$OUT/hier-mpi-$i.json" --hier-between=mpi ;;
      cohort-mpi) alone cohort_mpi_collectives mpi "$OUT/mpi-$i.json" ;;
      train-hier-mpi) alone cohort_mpi_train hier "$OUT/train-hier-mpi-$i.json" --hier-between=mpi ;;
      train-mpi) alone cohort_mpi_train mpi "$OUT/train-mpi-$i.json" ;;
      *) echo "unknown run '$run'" >&2; exit 2 ;;
    esac
  done
done
/usr/bin/python3 "$ROOT/scripts/bench-sitting-summary.py" "$OUT" | tee "$OUT/summary.md"
