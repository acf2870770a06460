#!/usr/bin/env bash
# What 16-bit compute gains or loses on this CPU, in one sitting: ./cohort bench train at fp32, bf16
# and fp16 (rounds interleaved; world 2 on shm, and world 1 on tcp, where nothing is averaged, so the
# compute alone shows), then the demo (Fashion-MNIST MLP, 2 workers, 5 epochs) at each precision
# for test accuracy and samples/s. Raw JSON and logs go to OUT.
# Usage: scripts/bench-precision.sh [ROUNDS]   (STEPS=200 OUT=DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
steps=${STEPS:-200}
out=${OUT:-docs/lab/results/mixed-precision}
mkdir -p "$out"
grep -o -m1 -E 'avx512_bf16|amx_bf16' /proc/cpuinfo > "$out/cpu-bf16-flags.txt" || echo "none (no avx512_bf16, no amx_bf16)" > "$out/cpu-bf16-flags.txt"
lscpu > "$out/lscpu.txt"
./cohort --version > /dev/null   # builds once, before timing
for r in $(seq 1 "$rounds"); do
  for precision in fp32 bf16 fp16; do
    for world in 2 1; do
      backend=shm; [ "$world" = 1 ] && backend=tcp   # a group of one: the optimizer averages nothing
      json="$out/train-$precision-w$world-$r.json"
      ./cohort bench train --world "$world" --backend "$backend" --steps "$steps" --precision "$precision" \
        --json "$json" > "$out/train-$precision-w$world-$r.log" 2>&1
      echo "round $r $precision world $world: $(python3 -c "import json;print(round(json.load(open('$json'))['samples_per_s']))") samples/s"
    done
  done
done
for precision in fp32 bf16 fp16; do
  ./cohort demo --precision "$precision" --json "$out/demo-$precision.json" > "$out/demo-$precision.log" 2>&1
  python3 -c "import json;d=json.load(open('$out/demo-$precision.json'));print('demo $precision: test accuracy', d['test_accuracy'], 'samples/s', round(d['samples_per_s']))"
done
