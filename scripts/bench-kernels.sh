#!/usr/bin/env bash
# The reduction kernels (engines/shm's ReduceKernels) against plain loops, and against the kernels
# of another commit, in one JVM (engines/shm/src/test/java/.../kernels/ReduceKernelsBench.java).
#   scripts/bench-kernels.sh [ROUNDS] [OUT_DIR]
# Environment:
#   BASELINE  a commit whose ReduceKernels and ReduceArgs to time beside this build's (variant base)
#   SIZES, RANKS, TYPES, OPS, VARIANTS  passed on (defaults: 4K,64K,1M,16M; 2,4;
#             FLOAT32,FLOAT64,INT32,INT64; SUM,MAX; kernel,base,staged,plain with BASELINE, else
#             kernel,staged,plain)
#   JAVA_HOME a JDK >= 22 (the shm engine's)
# Needs this checkout built: mvn -o -pl engines/shm -am test-compile. Holds /tmp/cohort-cpu.lock
# (COHORT_CPU_LOCK) exclusively while it measures, as scripts/bench-sitting.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${2:-out/kernels-$(date +%Y%m%d-%H%M%S)}")"
mkdir -p "$out"
args=(--rounds "${1:-15}" --out "$out/kernels")
for v in SIZES RANKS TYPES OPS VARIANTS; do
  [ -n "${!v:-}" ] && args+=("--${v,,}" "${!v}")
done
if [ -n "${BASELINE:-}" ]; then
  base="$(mktemp -d)"
  trap 'rm -rf "$base"' EXIT
  for f in ReduceKernels ReduceArgs; do
    git show "$BASELINE:engines/shm/src/main/java/dev/cohort/shm/kernels/$f.java" > "$base/$f.java"
  done
  "${JAVA_HOME:+$JAVA_HOME/bin/}javac" --release 22 --add-modules jdk.incubator.vector -Xlint:-incubating \
    -cp api/target/classes:runtime/target/classes -d "$base/classes" "$base"/*.java
  args+=(--baseline "$base/classes")
fi
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- engines/shm || echo ' (with uncommitted changes)')"
  echo "baseline: ${BASELINE:-none}$([ -n "${BASELINE:-}" ] && echo " ($(git rev-parse --short "$BASELINE"))")"
  echo "java: $("$java" -version 2>&1 | sed -n 2p)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "args: ${args[*]}"
} > "$out/sitting.txt"
flock -x "${COHORT_CPU_LOCK:-/tmp/cohort-cpu.lock}" "$java" --add-modules jdk.incubator.vector \
  -cp engines/shm/target/classes:engines/shm/target/test-classes:api/target/classes:runtime/target/classes \
  dev.cohort.shm.kernels.ReduceKernelsBench "${args[@]}" 2> >(grep -v 'WARNING: Using incubator modules' >&2)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/sitting.txt"
echo "results: $out" >&2
