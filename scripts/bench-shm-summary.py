#!/usr/bin/python3
"""Summarizes a bench-shm-vs-mpi.sh directory as markdown: medians over rounds, and the range of
the per-round ratios (each round's Cohort figure over the same round's Open MPI figure)."""
import glob, json, os, statistics, sys

out = sys.argv[1]


def rounds(pattern):
    files = sorted(glob.glob(os.path.join(out, pattern)), key=lambda f: int(f.rsplit("-", 1)[1].split(".")[0]))
    return {int(f.rsplit("-", 1)[1].split(".")[0]): f for f in files}


def size(b):
    return "-" if b == 0 else (f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB")


def cohort(f):
    """(op, size label) -> (median seconds, busbw GB/s)."""
    return {(r["op"], size(r["bytes"])): (r["median_s"], r["busbw_gbs"]) for r in json.load(open(f))["results"]}


def mpi(f):
    """(op, size label) -> (median seconds, busbw GB/s); the median from algbw (the printed ms have 3 decimals)."""
    rows = {}
    names = {"allreduce": "allreduce", "bcast": "broadcast", "allgather(per-rank)": "allgather", "barrier": "barrier"}
    for line in open(f):
        p = line.split()
        if len(p) >= 7 and p[-4].endswith("ms") and p[0].lower() in names:
            label = " ".join(p[1:-5])
            alg, bus = float(p[-2]), float(p[-1])
            nbytes = {"KiB": 1 << 10, "MiB": 1 << 20}.get(p[-6], 0) * int(p[-7]) if label != "-" else 0
            med = nbytes / alg / 1e9 if alg > 0 and names[p[0].lower()] != "allgather" else float(p[-4][:-2]) / 1e3
            rows[(names[p[0].lower()], label)] = (med, bus)
    return rows


copy = {k: cohort(f) for k, f in rounds("shm-copy-*.json").items()}
inplace = {k: cohort(f) for k, f in rounds("shm-inplace-*.json").items()}
mshm = {k: mpi(f) for k, f in rounds("mpi-shm-*.txt").items()}
mtcp = {k: mpi(f) for k, f in rounds("mpi-tcp-*.txt").items()}
if not copy or not mshm:
    sys.exit(f"{out}: no shm-copy-*.json or mpi-shm-*.txt")


def med(runs, key, i):
    vals = [r[key][i] for r in runs.values() if key in r]
    return statistics.median(vals) if vals else None


def ratios(mine, key):
    rs = [mine[k][key][1] / mshm[k][key][1] for k in mine if k in mshm and key in mine[k] and key in mshm[k]
          and mshm[k][key][1] > 0]
    if not rs:
        return "-"
    return f"**{statistics.median(rs):.2f}** ({min(rs):.2f}–{max(rs):.2f})"


def us(s):
    return "-" if s is None else (f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.3f} ms")


def gbs(b):
    return "-" if b is None else f"{b:.2f}"


print(f"World 2, {len(copy)} rounds alternating (medians over rounds of each run's median; ratios: busbw, "
      "median over rounds, range in brackets)\n")
print("| op | size | shm copying | busbw | shm in place | busbw | Open MPI shm | busbw | Open MPI TCP busbw "
      "| copying / MPI shm | in place / MPI shm |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
first = copy[min(copy)]
for key in first:
    op, label = key
    ip = key if op == "allreduce" else None
    print(f"| {op} | {label} | {us(med(copy, key, 0))} | {gbs(med(copy, key, 1))} "
          f"| {us(med(inplace, ip, 0)) if ip else '-'} | {gbs(med(inplace, ip, 1)) if ip else '-'} "
          f"| {us(med(mshm, key, 0))} | {gbs(med(mshm, key, 1))} | {gbs(med(mtcp, key, 1))} "
          f"| {ratios(copy, key) if op != 'barrier' else '-'} | {ratios(inplace, ip) if ip else '-'} |")
