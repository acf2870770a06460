#!/usr/bin/python3
"""Summarizes a bench-side-by-side.sh directory: medians over rounds, Cohort/peer ratios, as markdown."""
import glob, json, os, statistics, sys

out = sys.argv[1]

def load(pattern):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, pattern)))]

def size(b):
    return "-" if b == 0 else (f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB")

cohort, torch = load("cohort-collectives-*.json"), load("torch-collectives-*.json")
shm = load("shm-collectives-*.json")

def mpi_rows(kind):
    """op -> list over rounds of (median_s, busbw) parsed from mpi_allreduce.py's table."""
    rows = {}
    for f in sorted(glob.glob(os.path.join(out, f"mpi-{kind}-*.txt"))):
        for line in open(f):
            parts = line.split()
            if len(parts) >= 7 and parts[-1].replace('.', '', 1).isdigit() and parts[-4].endswith("ms"):
                key = (parts[0].lower(), " ".join(parts[1:-5]))
                rows.setdefault(key, []).append((float(parts[-4][:-2]) / 1e3, float(parts[-1])))
    return rows
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
if shm:
    mshm, mtcp = mpi_rows("shm"), mpi_rows("tcp")
    print(f"Shared memory, world {shm[0]['world']}, {len(shm)} rounds: Cohort shm vs Open MPI (shared memory and TCP)\n")
    print("| op | size | Cohort shm median | Cohort shm busbw GB/s | Open MPI shm median | Open MPI shm busbw | Open MPI TCP busbw | Cohort shm / MPI shm busbw |")
    print("|---|---|---|---|---|---|---|---|")
    for k, row in enumerate(shm[0]["results"]):
        c = statistics.median(r["results"][k]["median_s"] for r in shm)
        cb = statistics.median(r["results"][k]["busbw_gbs"] for r in shm)
        mpi_op = {"broadcast": "bcast"}.get(row["op"], row["op"])
        key = next((kk for kk in mshm if kk[0].startswith(mpi_op) and kk[1] == size(row["bytes"])), None)
        if key:
            ms = statistics.median(v[0] for v in mshm[key]); mb = statistics.median(v[1] for v in mshm[key])
            tb = statistics.median(v[1] for v in mtcp.get(key, [(0, 0)]))
            ratio = f"{cb / mb:.2f}" if mb else "-"
            print(f"| {row['op']} | {size(row['bytes'])} | {c * 1e6:.1f} us | {cb:.2f} | {ms * 1e6:.1f} us | {mb:.2f} | {tb:.2f} | {ratio} |")
        else:
            print(f"| {row['op']} | {size(row['bytes'])} | {c * 1e6:.1f} us | {cb:.2f} | - | - | - | - |")
    print()
s2 = load("shm-train-w2-*.json")
if s2:
    print(f"Training world 2 on shm: Cohort {statistics.median(r['samples_per_s'] for r in s2):,.0f} samples/s "
          f"(rounds {[round(r['samples_per_s']) for r in s2]})")
for w in (1, 2):
    c, t = load(f"cohort-train-w{w}-*.json"), load(f"torch-train-w{w}-*.json")
    if c and t:
        cs = statistics.median(r["samples_per_s"] for r in c)
        ts = statistics.median(r["samples_per_s"] for r in t)
        print(f"Training world {w}: Cohort {cs:,.0f} samples/s, PyTorch DDP {ts:,.0f} samples/s, ratio {cs / ts:.2f} "
              f"(rounds: Cohort {[round(r['samples_per_s']) for r in c]}, DDP {[round(r['samples_per_s']) for r in t]})")
