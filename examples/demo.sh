#!/usr/bin/env bash
# ./cohort demo: trains on Fashion-MNIST with data-parallel workers (shm or Gloo), through the launcher.
# Builds what is needed, gets the data (installs Debian's dataset-fashion-mnist when root), trains,
# and writes the summary to out/demo-summary.json and its training curve to out/demo-summary.png.
# JAVA_HOME comes from ./cohort (the newest JDK).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA_DIR=/usr/share/datasets/fashion-mnist
PACKAGE=dataset-fashion-mnist

usage() {
  cat <<'TXT'
usage: ./cohort demo [--workers N] [--epochs E] [--model mlp|cnn] [--framework torch|djl]
                     [--backend auto|shm|gloo|hier|tcp|mpi] [--max-restarts K] [--elastic [MIN]]
                     [--json FILE] [--data-dir DIR]
                     [--spark MASTER] [TRAINER OPTIONS...]
Trains a classifier on Fashion-MNIST with N workers (default 2), started by ./cohort run.
  --workers N        workers on this machine (default 2)
  --epochs E         epochs (default 5)
  --model mlp|cnn    784-512-256-10 MLP (default) or a small CNN
  --framework F      torch (default): JavaCPP's PyTorch; djl: DJL's PyTorch engine with Cohort's
                     DistributedTrainer (on shm or tcp: engines that load no libtorch of their own)
  --backend NAME     the engine: auto (default) takes the fastest that runs here — shm (shared
                     memory, all workers on this machine) on a JDK >= 22, else gloo; hier (shm
                     within each host, Gloo between hosts) is auto's choice for several hosts;
                     tcp: Cohort's own TCP mesh, no native library; mpi: the system's Open
                     MPI (JDK >= 22; the workers are started through mpirun)
  --max-restarts K   restart the group up to K times after a failure (default 0); the run then
                     checkpoints every 100 steps and a restarted group resumes from the last one
  --elastic [MIN]    elastic: when a worker is lost, the others re-form the group in their own
                     processes and go on from the step that failed, with the model and
                     optimizer state in memory, while at least MIN workers live (default 1);
                     --elastic-batch per-worker|global says what is kept (default per-worker:
                     each worker's batch, the learning rate scaled with the workers)
  --json FILE        where the summary goes (default out/demo-summary.json); its chart
                     (loss, accuracy, samples/s per epoch, and the parts of rank 0's steps)
                     goes beside it, FILE.json -> FILE.png, and a JSON line per step of
                     rank 0's to FILE-steps.jsonl (cohort run --metrics-file)
  --data-dir DIR     the four IDX files (default /usr/share/datasets/fashion-mnist)
  --data DIR|URI     train from Parquet shards instead (a directory, glob or hdfs:// URI, as
                     dev.cohort.data.Convert writes them), each worker streaming its share; the
                     test set stays --data-dir's (--framework torch)
  --spark MASTER     train on Spark instead, e.g. --spark 'local[2]' or --spark spark://host:7077,
                     --workers tasks: the MLP (torch or djl) as Spark ML does it (Fashion-MNIST as
                     a DataFrame, CohortEstimator.fit, the test DataFrame transformed and scored by
                     Spark's evaluator; cohort-spark-ml); --model cnn or trainer options run the
                     trainer as one barrier stage of a Spark job (cohort-spark)
Any other option goes to the trainer (dev.cohort.examples.FashionMnistTrainer --help), e.g.
--lr 0.05, --batch-size 64, --checkpoint-dir DIR --resume.
TXT
}

workers=2 epochs=5 model=mlp framework=torch backend=auto max_restarts=0 elastic=0 json="$ROOT/out/demo-summary.json" data_dir="" spark="" extra=()
# The options that take a value (--NAME VALUE or --NAME=VALUE); each sets the variable of its name
# with - as _ (--max-restarts: max_restarts).
value_option() { case "$1" in --workers|--epochs|--model|--framework|--backend|--max-restarts|--json|--spark|--data-dir) ;; *) return 1 ;; esac; }
set_option() { local name="${1#--}"; printf -v "${name//-/_}" '%s' "$2"; }
need_value() { [ "$#" -ge 2 ] && [ -n "$2" ] || { echo "cohort demo: $1 needs a value" >&2; exit 2; }; }
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    -V|--version) exec "$ROOT/cohort" --version ;;
    --elastic) if [ "$#" -ge 2 ] && [ -n "$2" ] && [ -z "${2//[0-9]/}" ]; then elastic="$2"; shift 2; else elastic=1; shift; fi ;;
    --elastic=*) elastic="${1#*=}"; shift ;;
    --*=*) if value_option "${1%%=*}"; then set_option "${1%%=*}" "${1#*=}"; else extra+=("$1"); fi; shift ;;
    *) if value_option "$1"; then need_value "$@"; set_option "$1" "$2"; shift 2; else extra+=("$1"); shift; fi ;;
  esac
done
case "$workers" in ''|*[!0-9]*|0) echo "cohort demo: --workers must be a whole number >= 1, got '$workers'" >&2; exit 2 ;; esac
case "$epochs" in ''|*[!0-9]*|0) echo "cohort demo: --epochs must be a whole number >= 1, got '$epochs'" >&2; exit 2 ;; esac
case "$max_restarts" in ''|*[!0-9]*) echo "cohort demo: --max-restarts must be a whole number, got '$max_restarts'" >&2; exit 2 ;; esac
case "$elastic" in ''|*[!0-9]*) echo "cohort demo: --elastic takes the fewest workers to go on with, got '$elastic'" >&2; exit 2 ;; esac
[ "$elastic" -eq 0 ] || [ -z "$spark" ] || { echo "cohort demo: --elastic runs through ./cohort run, not --spark (a failed Spark stage is tried again)" >&2; exit 2; }
[ "$elastic" -le "$workers" ] || { echo "cohort demo: --elastic $elastic is more than --workers $workers" >&2; exit 2; }
case "$model" in mlp|cnn) ;; *) echo "cohort demo: --model must be mlp or cnn, got '$model'" >&2; exit 2 ;; esac
case "$backend" in auto|shm|gloo|hier|tcp|mpi) ;; *) echo "cohort demo: --backend must be auto, shm, gloo, hier, tcp or mpi, got '$backend'" >&2; exit 2 ;; esac
case "$framework" in torch|djl) ;; *) echo "cohort demo: --framework must be torch or djl, got '$framework'" >&2; exit 2 ;; esac

# The data: Debian's package when no directory was given.
if [ -z "$data_dir" ]; then
  data_dir="$DATA_DIR"
  if [ ! -d "$data_dir" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "cohort demo: Fashion-MNIST is missing; installing $PACKAGE ..." >&2
      if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y "$PACKAGE" >&2 \
             || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y "$PACKAGE" >&2; }; }; then
        echo "cohort demo: installing $PACKAGE failed; see the apt-get messages above" >&2
        exit 1
      fi
    else
      echo "cohort demo: Fashion-MNIST is not installed in $DATA_DIR. Install it with:" >&2
      if command -v apt-get >/dev/null 2>&1; then
        echo "  sudo apt-get install -y $PACKAGE" >&2
      else
        echo "  (Debian/Ubuntu) sudo apt-get install -y $PACKAGE" >&2
      fi
      echo "or put the four IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz," >&2
      echo "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) in a directory and pass --data-dir DIR" >&2
      exit 1
    fi
  fi
fi

# The build: ./cohort built every module on this JDK before starting this script.
: "${JAVA_HOME:?run this through ./cohort demo, which picks the JDK and builds}"
jar=$(ls -t "$ROOT"/examples/target/cohort-examples-*.jar 2>/dev/null | grep -v -e '-tests.jar' -e '-sources.jar' -e '-javadoc.jar' | head -n 1 || true)
if [ -z "$jar" ] || [ ! -f "$ROOT/examples/target/classpath.txt" ]; then
  echo "cohort demo: the examples module is not built; run this through ./cohort demo" >&2
  exit 2
fi
classpath="$jar:$(cat "$ROOT/examples/target/classpath.txt")"

# The engine: auto (the default) is decided by Backends.auto, and the launcher and rank 0 say
# which and why; a named engine that cannot run here fails saying what is missing.
# JVM options for the launcher (from ./cohort), which passes them on to its workers with what
# the engines need (shm: the Vector API module).
java_opts="${JAVA_OPTS_FOR_COHORT-}"

mkdir -p "$(dirname "$json")"
json="$(cd "$(dirname "$json")" && pwd)/$(basename "$json")"
steps="${json%.json}-steps.jsonl"
rm -f "$json" "$steps"
echo "cohort demo: training $model ($framework) on Fashion-MNIST, $workers workers, backend $backend, $epochs epochs" >&2
# The launcher starts each worker with its own class path, which is this module's: it has the trainer.
# With restarts, a restarted group must resume where the failed one stopped: checkpoint this run
# (in a directory of its own, so a later demo starts afresh) unless the user chose a directory.
recovery=()
if [ "$max_restarts" -gt 0 ] && ! printf '%s\n' ${extra[@]+"${extra[@]}"} | grep -q -- '--checkpoint-dir'; then
  recovery=(--checkpoint-dir "$ROOT/out/demo-checkpoints-$(date +%Y%m%d-%H%M%S)-$$" --checkpoint-every 100 --resume)
  echo "cohort demo: --max-restarts $max_restarts: checkpoints every 100 steps in ${recovery[1]}" >&2
fi
set +e
if [ -n "$spark" ] && [ "$model" = mlp ] && [ "${#extra[@]}" -eq 0 ] && [ "$max_restarts" -eq 0 ]; then
  mljar=$(ls "$ROOT"/integrations/spark-ml/target/cohort-spark-ml-*.jar 2>/dev/null | grep -v -e '-sources.jar' -e '-javadoc.jar' -e '-tests.jar' | head -n 1 || true)
  [ -n "$mljar" ] && [ -f "$ROOT/integrations/spark-ml/target/classpath.txt" ] || { echo "cohort demo: cohort-spark-ml is not built" >&2; exit 2; }
  case "$spark" in local*) export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}" ;; esac
  # shellcheck disable=SC2086
  "$JAVA_HOME/bin/java" $java_opts -cp "$mljar:$(cat "$ROOT/integrations/spark-ml/target/classpath.txt")" \
    dev.cohort.spark.ml.FashionMnistDemo --master "$spark" --workers "$workers" --epochs "$epochs" \
    --backend "$backend" --framework "$framework" --data-dir "$data_dir" --json "$json"
  code=$?
elif [ -n "$spark" ]; then
  # One Spark task per worker, each starting its rank's JVM; a failed stage is tried again
  # (spark.stage.maxConsecutiveAttempts) and resumes from the checkpoint when one is kept.
  sjar=$(ls "$ROOT"/tools/spark/target/cohort-spark-*.jar 2>/dev/null | grep -v -e '-sources.jar' -e '-javadoc.jar' | head -n 1 || true)
  [ -n "$sjar" ] && [ -f "$ROOT/tools/spark/target/classpath.txt" ] || { echo "cohort demo: cohort-spark is not built" >&2; exit 2; }
  case "$spark" in local*) export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}" ;; esac
  # shellcheck disable=SC2086
  "$JAVA_HOME/bin/java" $java_opts -cp "$sjar:$(cat "$ROOT/tools/spark/target/classpath.txt")" dev.cohort.spark.SparkMain \
    --master "$spark" --workers "$workers" --env "COHORT_BACKEND=$backend" -- \
    dev.cohort.examples.FashionMnistTrainer --data-dir "$data_dir" \
    --model "$model" --framework "$framework" --epochs "$epochs" --json "$json" ${recovery[@]+"${recovery[@]}"} ${extra[@]+"${extra[@]}"}
  code=$?
else
# shellcheck disable=SC2086
"$JAVA_HOME/bin/java" $java_opts -cp "$classpath" dev.cohort.launcher.LauncherMain \
  --nproc-per-node "$workers" --master-port 0 --max-restarts "$max_restarts" --elastic "$elastic" \
  --metrics-file "$steps" -- \
  dev.cohort.examples.FashionMnistTrainer --distributed-backend "$backend" --data-dir "$data_dir" \
  --model "$model" --framework "$framework" --epochs "$epochs" --json "$json" ${recovery[@]+"${recovery[@]}"} ${extra[@]+"${extra[@]}"}
code=$?
fi
set -e
if [ "$code" -eq 0 ] && [ -f "$json" ]; then
  echo "cohort demo: summary in $json:" >&2
  cat "$json" >&2
  chart="${json%.json}.png"
  if [ -f "$chart" ]; then echo "cohort demo: training curve in $chart" >&2; fi
fi
exit "$code"
