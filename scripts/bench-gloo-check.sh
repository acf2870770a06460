#!/usr/bin/env bash
# The gloo engine's consistency check and direct path, side by side with PyTorch's Gloo in one
# sitting, rounds alternating:
#   A  default (consistency check on; allreduce, broadcast and barrier over Cohort's peer mesh)
#   B  check on, everything else through Gloo (--gloo-direct-max-bytes=0)
#   C  check off (--no-gloo-consistency-check): plain Gloo, as before the check existed
#   P  PyTorch 1.13's Gloo (../shared/peers/torch_collectives.py)
# The check's cost is B against C; the direct path's gain is A against B.
#   scripts/bench-gloo-check.sh [ROUNDS] [OUT_DIR] [SIZES]     (WORLD=N for N ranks; default 2)
set -euo pipefail
. "$(dirname "$0")/lib/bench-common.sh"
bench_args gloo-check "$@"
SIZES="${3:-4K,64K,256K,1M,16M}"
WORLD="${WORLD:-2}"
mkdir -p "$OUT"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
for ((i = 1; i <= ROUNDS; i++)); do
  echo "== round $i of $ROUNDS" >&2
  "$ROOT/cohort" bench collectives --backend gloo --world "$WORLD" --sizes "$SIZES" --json "$OUT/A-$i.json" >/dev/null
  "$ROOT/cohort" bench collectives --backend gloo --world "$WORLD" --sizes "$SIZES" --json "$OUT/B-$i.json" \
    --engine-option=--gloo-direct-max-bytes=0 >/dev/null
  "$ROOT/cohort" bench collectives --backend gloo --world "$WORLD" --sizes "$SIZES" --json "$OUT/C-$i.json" \
    --engine-option=--no-gloo-consistency-check >/dev/null
  /usr/bin/python3 "$PEERS/torch_collectives.py" --world "$WORLD" --port $((29650 + i)) --max-mib 16 --out "$OUT/P-$i.json" >/dev/null
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, glob, os, statistics, sys
out = sys.argv[1]
def load(tag):
    rows = {}
    for f in sorted(glob.glob(os.path.join(out, tag + "-*.json"))):
        for r in json.load(open(f))["results"]:
            rows.setdefault((r["op"], r["bytes"]), []).append(r["median_s"])
    return {k: statistics.median(v) for k, v in rows.items()}
A, B, C, P = (load(t) for t in "ABCP")
def size(b):
    return "-" if b == 0 else (f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB")
print("| op | size | A default | B check, all Gloo | C no check | PyTorch | check cost (B−C) | A/P speed | C/P speed |")
print("|---|---|---|---|---|---|---|---|---|")
for key in sorted(A, key=lambda k: (k[0] != "allreduce", k[0], k[1])):
    if key not in P or key not in B or key not in C:
        continue
    a, b, c, p = A[key] * 1e3, B[key] * 1e3, C[key] * 1e3, P[key] * 1e3
    print(f"| {key[0]} | {size(key[1])} | {a:.3f} ms | {b:.3f} ms | {c:.3f} ms | {p:.3f} ms | "
          f"{(b - c) * 1e3:+.0f} µs ({(b - c) / c * 100:+.1f}%) | {p / a:.2f} | {p / c:.2f} |")
PY
