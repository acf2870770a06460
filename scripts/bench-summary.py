#!/usr/bin/python3
"""Summarizes a bench-side-by-side.sh directory: medians over rounds, Cohort/peer ratios, as markdown."""
import glob, json, os, statistics, sys

out = sys.argv[1]

def load(pattern):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, pattern)))]

def size(b):
    return "-" if b == 0 else (f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB")

cohort, torch = load("cohort-collectives-*.json"), load("torch-collectives-*.json")
if cohort and torch:
    print(f"Collectives, world {cohort[0]['world']}, {len(cohort)} rounds (median over rounds of each round's median)\n")
    print("| op | size | Cohort gloo median | PyTorch gloo median | Cohort busbw GB/s | PyTorch busbw GB/s | speed ratio Cohort/PyTorch |")
    print("|---|---|---|---|---|---|---|")
    for k, row in enumerate(cohort[0]["results"]):
        c = statistics.median(r["results"][k]["median_s"] for r in cohort)
        t = statistics.median(r["results"][k]["median_s"] for r in torch)
        cb = statistics.median(r["results"][k]["busbw_gbs"] for r in cohort)
        tb = statistics.median(r["results"][k]["busbw_gbs"] for r in torch)
        print(f"| {row['op']} | {size(row['bytes'])} | {c * 1e3:.3f} ms | {t * 1e3:.3f} ms | {cb:.2f} | {tb:.2f} | {t / c:.2f} |")
    print()
for w in (1, 2):
    c, t = load(f"cohort-train-w{w}-*.json"), load(f"torch-train-w{w}-*.json")
    if c and t:
        cs = statistics.median(r["samples_per_s"] for r in c)
        ts = statistics.median(r["samples_per_s"] for r in t)
        print(f"Training world {w}: Cohort {cs:,.0f} samples/s, PyTorch DDP {ts:,.0f} samples/s, ratio {cs / ts:.2f} "
              f"(rounds: Cohort {[round(r['samples_per_s']) for r in c]}, DDP {[round(r['samples_per_s']) for r in t]})")
