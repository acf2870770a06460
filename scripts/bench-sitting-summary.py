#!/usr/bin/python3
"""Summarizes a bench-sitting.sh directory as markdown.

Files: <run>-<round>.json (Cohort's benchmark and torch_collectives.py: {"world", "results": [{op,
bytes, median_s, busbw_gbs}]}; the training runs: {"samples_per_s"}), <run>-<round>.txt
(mpi_allreduce.py's table) and a peer's <run>-<round>.rooted.json (peer_rooted_collectives.py). Collectives: each run's median over rounds of its per-run median, with
its bus bandwidth; then each Cohort run's bus bandwidth over each peer's, taken round by round (the
two ran minutes apart), as the median over rounds with the range in brackets. Training: samples/s
per round, and each Cohort run over PyTorch DDP, round by round."""
import glob, json, os, re, statistics, sys

out = sys.argv[1]
ORDER = ["shm-copy", "shm-inplace", "hier", "hier-mpi", "gloo", "tcp", "mpi", "mpi-over-tcp", "mpi-shm", "mpi-tcp", "mpi-hosts", "torch-gloo"]
NAMES = {"shm-copy": "shm copying", "shm-inplace": "shm in place", "hier": "hier", "hier-mpi": "hier (Open MPI between hosts)", "gloo": "Cohort gloo",
         "tcp": "Cohort tcp", "mpi": "Cohort mpi", "mpi-over-tcp": "Cohort mpi (TCP)", "mpi-shm": "Open MPI shm", "mpi-tcp": "Open MPI TCP",
         "mpi-hosts": "Open MPI (shm within, TCP between hosts)", "torch-gloo": "PyTorch Gloo"}
PEERS = ["mpi-shm", "mpi-tcp", "mpi-hosts", "torch-gloo"]
# base-<run>: the same run from another checkout (bench-sitting.sh's BASELINE), for before/after comparisons.
BASE = ["shm-copy", "shm-inplace", "hier", "gloo", "tcp", "mpi"]
for r in BASE:
    NAMES["base-" + r] = NAMES[r] + " (baseline)"
    ORDER.append("base-" + r)
# Training runs: name, and the DDP run each is compared with (the same world and model).
TRAINING = {
    "train-gloo": ("Cohort gloo", "torch-ddp"), "train-shm": ("Cohort shm", "torch-ddp"),
    "train-hier": ("Cohort hier", "torch-ddp"), "train-tcp": ("Cohort tcp", "torch-ddp"),
    "train-mpi": ("Cohort mpi", "torch-ddp"), "train-hier-mpi": ("Cohort hier (Open MPI between hosts)", "torch-ddp"),
    "train-djl-shm": ("DJL on Cohort shm (ratio: over DJL at world 1)", "train-djl-world1"),
    "train-djl-tcp": ("DJL on Cohort tcp (ratio: over DJL at world 1)", "train-djl-world1"),
    "train-djl-none": ("DJL, ranks alone, no averaging: the ceiling (ratio: over DJL at world 1)", "train-djl-world1"),
    "train-djl-world1": ("DJL, world 1", None),
    "train-gloo-overlap": ("Cohort gloo, overlap forced", "torch-ddp"),
    "train-shm-overlap": ("Cohort shm, overlap forced", "torch-ddp"),
    "train-gloo-no-overlap": ("Cohort gloo, no overlap", "torch-ddp"),
    "train-shm-no-overlap": ("Cohort shm, no overlap", "torch-ddp"),
    "torch-ddp": ("PyTorch DDP", None),
    **{f"train-{e}-zero{z}{c}": (f"Cohort {e}, ZeRO stage {z}{', gradients as ' + c[1:] if c else ''}", "torch-ddp")
       for e in ("gloo", "shm", "tcp", "mpi", "hier") for z in (1, 2) for c in ("", "-bf16", "-fp16")},
    "train-hier-overlap": ("Cohort hier, overlap forced", "torch-ddp"),
    "train-hier-tcp": ("Cohort hier, Cohort's TCP mesh between hosts", "torch-ddp"),
    "c-full": ("C (step2x2.c): hier's algorithm", "torch-ddp"),
    "c-full-reduce": ("C (step2x2.c): reduce to the leader within the host", "torch-ddp"),
    "c-sync": ("C (step2x2.c): one float per step (the floor)", "torch-ddp"),
    "c-none": ("C (step2x2.c): ranks alone", "torch-ddp"),
    "train-hier-sync": ("Cohort hier, one float allreduced per step instead of the gradients (the floor)", "torch-ddp"),
    "train-none": ("Cohort, ranks alone (no averaging: the ceiling)", "torch-ddp"),
    **{f"base-train-{e}": (f"Cohort {e} (baseline)", "torch-ddp") for e in ("gloo", "shm", "tcp", "mpi")},
    "train-world1": ("Cohort, world 1", "torch-ddp-world1"), "torch-ddp-world1": ("PyTorch DDP, world 1", None),
    "train-gloo-wide": ("Cohort gloo, hidden 4096", "torch-ddp-wide"),
    "train-shm-wide": ("Cohort shm, hidden 4096", "torch-ddp-wide"),
    "train-tcp-wide": ("Cohort tcp, hidden 4096", "torch-ddp-wide"),
    "train-mpi-wide": ("Cohort mpi, hidden 4096", "torch-ddp-wide"),
    "torch-ddp-wide": ("PyTorch DDP, hidden 4096", None),
    "train-demo-mlp": ("Cohort, demo MLP, world 1", "torch-demo-mlp"),
    "torch-demo-mlp": ("PyTorch, demo MLP, one process", None),
    "train-demo-cnn": ("Cohort, demo CNN, world 1", "torch-demo-cnn"),
    "torch-demo-cnn": ("PyTorch, demo CNN, one process", None),
}
# RUN-host-blas: RUN with libtorch on the host's OpenBLAS (COHORT_BLAS=system), the library the peer uses
TRAINING.update({f"{run}-host-blas": (f"{name}, on the host's OpenBLAS", peer)
                 for run, (name, peer) in list(TRAINING.items()) if run.startswith("train-")})
MPI_OPS = {"allreduce": "allreduce", "bcast": "broadcast", "allgather(per-rank)": "allgather", "barrier": "barrier"}
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20}


def from_json(f):
    """(op, bytes) -> (median seconds, busbw GB/s)."""
    return {(r["op"], r["bytes"]): (r["median_s"], r["busbw_gbs"]) for r in json.load(open(f))["results"]}


def from_mpi(f):
    """(op, bytes) -> (median seconds, busbw GB/s); the median from algbw where it has more digits than the ms."""
    rows, n = {}, 2
    for line in open(f):
        m = re.search(r"np=(\d+)", line)
        if m:
            n = int(m.group(1))
        p = line.split()
        if len(p) < 7 or p[0].lower() not in MPI_OPS or not p[-4].endswith("ms"):
            continue
        op = MPI_OPS[p[0].lower()]
        nbytes = 0 if p[1] == "-" else int(p[1]) * UNITS[p[2]]
        alg, bus, ms = float(p[-2]), float(p[-1]), float(p[-4][:-2])
        moved = n * nbytes if op == "allgather" else nbytes
        rows[(op, nbytes)] = (moved / alg / 1e9 if alg > 0 else ms / 1e3, bus)
    return rows


runs, trained, computes, shares, cpus, worlds = {}, {}, {}, {}, {}, {}
for f in sorted(glob.glob(os.path.join(out, "*-[0-9]*.*")), key=lambda f: f.endswith(".rooted.json")):
    rooted = re.fullmatch(r"(.+)-(\d+)\.rooted\.json", os.path.basename(f))
    if rooted and rooted.group(1) in runs:
        # a peer's reduce, gather, scatter and all-to-all (scripts/peer_rooted_collectives.py), beside its other rows
        runs[rooted.group(1)].setdefault(int(rooted.group(2)), {}).update(from_json(f))
        continue
    m = re.fullmatch(r"(.+)-(\d+)\.(json|txt)", os.path.basename(f))
    if m and m.group(1) in NAMES:
        runs.setdefault(m.group(1), {})[int(m.group(2))] = (from_json if m.group(3) == "json" else from_mpi)(f)
    elif m and m.group(1) in TRAINING:
        result = json.load(open(f))
        trained.setdefault(m.group(1), {})[int(m.group(2))] = result["samples_per_s"]
        worlds[m.group(1)] = result.get("world", 1)
        if result.get("cpu_ms_per_step") is not None:
            cpus.setdefault(m.group(1), []).append(result["cpu_ms_per_step"])
        if "communication_share" in result:
            shares.setdefault(m.group(1), []).append(result["communication_share"])
        computes.setdefault(m.group(1), set()).add(
            (result.get("version", "?"), result.get("threads_per_rank"), tuple(result.get("blas") or ["(not recorded)"])))
present = [r for r in ORDER if r in runs]
mine = [r for r in present if r not in PEERS and not r.startswith("base-")]
if not mine and not trained:
    sys.exit(f"{out}: no Cohort runs (<run>-<round>.json) here")


def size(b):
    return "-" if b == 0 else (f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1 << 10 else f"{b} B")


def median(run, key, i):
    vals = [r[key][i] for r in runs[run].values() if key in r]
    return statistics.median(vals) if vals else None


def duration(s):
    return "-" if s is None else (f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.3f} ms")


def ratio(a, b, key):
    rs = [runs[a][i][key][1] / runs[b][i][key][1] for i in runs[a]
          if i in runs[b] and key in runs[a][i] and key in runs[b][i] and runs[b][i][key][1] > 0]
    return "-" if not rs else f"**{statistics.median(rs):.2f}** ({min(rs):.2f}–{max(rs):.2f})"


def applies(run, key):
    return run != "shm-inplace" or key[0] == "allreduce"


def reference_blas(paths):
    """Debian's reference BLAS (netlib, in .../blas/): no peer, PyTorch is ~16x slower on it."""
    return any("/blas/" in p or os.path.basename(p).startswith("libblas.so") and "openblas" not in p for p in paths)


def check_computes():
    """Prints what each training run computed with, and refuses a comparison that would mislead:
    a peer on a reference BLAS, or runs with different compute threads per rank."""
    print("\nWhat each training run computes with (threads per rank; BLAS libraries mapped):\n")
    for run, seen in computes.items():
        for version, threads, blas in sorted(seen, key=str):
            print(f"- {TRAINING[run][0]}: {version}; {threads} thread(s) per rank; {', '.join(blas)}")
    problems = []
    for run, seen in computes.items():
        if any(reference_blas(blas) for _, _, blas in seen):
            problems.append(f"{TRAINING[run][0]} ran on a reference BLAS ({run}); install libopenblas0-pthread "
                            f"(../shared/peers/setup.sh) and measure again")
    threads = {t for seen in computes.values() for _, t, _ in seen if t is not None}
    if len(threads) > 1:
        problems.append(f"the runs used different compute threads per rank ({sorted(threads)}); set "
                        f"OMP_NUM_THREADS/COHORT_COMPUTE_THREADS alike and measure again")
    if problems:
        sys.exit("no comparison: " + "; ".join(problems))


# Each run's world-1 counterpart (the same model and BLAS), for scaling efficiency.
WORLD1 = {"torch-ddp": "torch-ddp-world1", "train-djl-shm": "train-djl-world1", "train-djl-tcp": "train-djl-world1"}


def world1_of(run):
    if run in WORLD1:
        return WORLD1[run]
    return "train-world1-host-blas" if run.endswith("-host-blas") else "train-world1" if run.startswith("train-") else None


def scaling():
    """Scaling efficiency: world-N samples/s over N times world 1's, round by round (1.0: perfect)."""
    rows = []
    for run, (name, _) in TRAINING.items():
        one = world1_of(run)
        n = worlds.get(run, 1)
        if run not in trained or n < 2 or one not in trained or worlds.get(one) != 1:
            continue
        per, base = trained[run], trained[one]
        es = [per[i] / (n * base[i]) for i in per if i in base]
        if es:
            rows.append(f"| {name} | {n} | **{statistics.median(es):.2f}** ({min(es):.2f}–{max(es):.2f}) |")
    if rows:
        print("\nScaling efficiency: world-N samples/s ÷ (N × world 1's, the same framework and BLAS), round by "
              "round, median (range); 1.00 is perfect\n")
        print("| run | world | scaling efficiency |")
        print("|---|---|---|")
        print("\n".join(rows))


def training():
    check_computes()
    print("\nTraining (`./cohort bench train`, `torch_ddp.py`): samples/s per round; Cohort over PyTorch "
          "(DDP, or one process for the demo's models; the same world and model) round by round, median (range); the share of a step the training thread "
          "waited for communication, median; CPU time of all ranks' processes per step (Cohort's runs), median\n")
    print("| run | rounds | median | over PyTorch | communication | CPU per step |")
    print("|---|---|---|---|---|---|")
    for run, (name, peer) in TRAINING.items():
        if run not in trained:
            continue
        per = trained[run]
        ddp = trained.get(peer, {}) if peer else {}
        rs = [per[i] / ddp[i] for i in per if i in ddp]
        over = "-" if not rs else f"**{statistics.median(rs):.2f}** ({min(rs):.2f}–{max(rs):.2f})"
        share = f"{100 * statistics.median(shares[run]):.0f} %" if run in shares else "-"
        cpu = f"{statistics.median(cpus[run]):.1f} ms" if run in cpus else "-"
        print(f"| {name} | {', '.join(f'{per[i]:,.0f}' for i in sorted(per))} | {statistics.median(per.values()):,.0f} "
              f"| {over} | {share} | {cpu} |")
    scaling()
    based = [r for r in TRAINING if r in trained and "base-" + r in trained]
    if based:
        print("\nTraining speed over the baseline checkout, round by round (this samples/s / baseline's; above 1 is "
              "faster): median (range)\n")
        print("| run | over the baseline |")
        print("|---|---|")
        for r in based:
            per, base = trained[r], trained["base-" + r]
            rs = [per[i] / base[i] for i in per if i in base]
            print(f"| {TRAINING[r][0]} | **{statistics.median(rs):.2f}** ({min(rs):.2f}–{max(rs):.2f}) |")


if not mine:
    training()
    sys.exit(0)
rows = list(next(iter(runs[mine[0]].values())).keys())
rounds = max(len(r) for r in runs.values())
print(f"{rounds} rounds alternating; medians over rounds of each run's median (bus bandwidth in GB/s after the slash)\n")
print("| op | size | " + " | ".join(NAMES[r] for r in present) + " |")
print("|---|---|" + "---|" * len(present))
for key in rows:
    cells = []
    for r in present:
        t, bw = median(r, key, 0), median(r, key, 1)
        cells.append("-" if not applies(r, key) or t is None else duration(t) + ("" if key[0] == "barrier" else f" / {bw:.2f}"))
    print(f"| {key[0]} | {size(key[1])} | " + " | ".join(cells) + " |")
pairs = [(a, b) for a in mine for b in PEERS if b in runs]
if pairs:
    print("\nBus bandwidth ratio, Cohort over peer, round by round: median (range)\n")
    print("| op | size | " + " | ".join(f"{NAMES[a]} / {NAMES[b]}" for a, b in pairs) + " |")
    print("|---|---|" + "---|" * len(pairs))
    for key in rows:
        if key[0] == "barrier":
            continue
        print(f"| {key[0]} | {size(key[1])} | "
              + " | ".join(ratio(a, b, key) if applies(a, key) else "-" for a, b in pairs) + " |")
based = [r for r in BASE if r in runs and "base-" + r in runs]
if based:
    print("\nSpeed over the baseline checkout, round by round (baseline time / this time; above 1 is faster): "
          "median (range)\n")
    print("| op | size | " + " | ".join(NAMES[r] for r in based) + " |")
    print("|---|---|" + "---|" * len(based))
    for key in rows:
        cells = []
        for r in based:
            b = runs["base-" + r]
            rs = [b[i][key][0] / runs[r][i][key][0] for i in runs[r]
                  if i in b and key in runs[r][i] and key in b[i] and runs[r][i][key][0] > 0]
            cells.append("-" if not rs or not applies(r, key) else f"**{statistics.median(rs):.2f}** ({min(rs):.2f}–{max(rs):.2f})")
        print(f"| {key[0]} | {size(key[1])} | " + " | ".join(cells) + " |")
if trained:
    training()
