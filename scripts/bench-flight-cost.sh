#!/usr/bin/env bash
# What the flight recorder and a --trace recording cost training: ./cohort bench train at world 2,
# side by side in one sitting, rounds interleaved: flight recorder off (COHORT_FLIGHT_RECORDS=0),
# on (the default), and on with a JFR recording of Cohort's events (what cohort run --trace sets).
# Usage: scripts/bench-flight-cost.sh [ROUNDS]   (ENGINES="shm gloo" STEPS=600 OUT=DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
engines=${ENGINES:-"shm gloo"}
steps=${STEPS:-600}
out=${OUT:-docs/lab/results/flight-cost}
mkdir -p "$out"
trace=$(mktemp -d)
# The recording cohort run --trace starts (Tracing.javaOptions), written for this script.
cat > "$trace/cohort.jfc" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="Cohort">
  <event name="dev.cohort.Collective"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="dev.cohort.StepPart"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="dev.cohort.Step"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="dev.cohort.GradientBucket"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="dev.cohort.Checkpoint"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="dev.cohort.Reform"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.SafepointBegin"><setting name="enabled">true</setting><setting name="threshold">1 ms</setting></event>
</configuration>
XML
./cohort --version > /dev/null   # builds once, before timing
for r in $(seq 1 "$rounds"); do
  for engine in $engines; do
    for mode in off on trace; do
      json="$out/$engine-$mode-$r.json"
      case $mode in
        off) COHORT_FLIGHT_RECORDS=0 ./cohort bench train --world 2 --backend "$engine" --steps "$steps" --json "$json" ;;
        on) ./cohort bench train --world 2 --backend "$engine" --steps "$steps" --json "$json" ;;
        trace) JDK_JAVA_OPTIONS="-XX:StartFlightRecording:settings=default,settings=$trace/cohort.jfc,filename=$trace/,dumponexit=true -Xlog:jfr+startup=error" \
                 ./cohort bench train --world 2 --backend "$engine" --steps "$steps" --json "$json" ;;
      esac > "$out/$engine-$mode-$r.log" 2>&1
      echo "round $r $engine $mode: $(python3 -c "import json;print(round(json.load(open('$json'))['samples_per_s']))") samples/s"
    done
  done
done
rm -rf "$trace"
python3 - "$out" $engines <<'PY'
import json, statistics, sys, glob, os
out, engines = sys.argv[1], sys.argv[2:]
for e in engines:
    med = {m: statistics.median(json.load(open(f))['samples_per_s'] for f in glob.glob(f"{out}/{e}-{m}-*.json"))
           for m in ("off", "on", "trace")}
    print(f"{e}: off {med['off']:.0f}, on {med['on']:.0f} ({med['on']/med['off']-1:+.1%}), "
          f"trace {med['trace']:.0f} ({med['trace']/med['off']-1:+.1%}) samples/s, medians")
PY
