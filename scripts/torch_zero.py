#!/usr/bin/python3
"""PyTorch's own optimizer-state sharding beside Cohort's ZeRO: DDP on Gloo with
torch.distributed.optim.ZeroRedundancyOptimizer (--zero 1) or a plain optimizer (--zero 0).

The model, data and timing are those of `./cohort bench train` and torch_ddp.py: MLP
784-H-H-10, cross-entropy, batch 64 per rank, 16 fixed random batches, 1 compute thread per
rank, the wall time of --steps steps on rank 0 between two barriers after --warm steps.
Optimizers as `./cohort bench train --optimizer`: sgd (lr 0.01), sgd-momentum (0.9), adam (lr 0.001).
PyTorch 1.13's ZeroRedundancyOptimizer assigns whole parameters to ranks (largest first to the
least loaded), allreduces every gradient (DDP) and broadcasts each rank's parameters after the step.

Each rank reports its optimizer state bytes (the tensors in optimizer.state) and peak resident set
(VmHWM); rank 0 writes them with the throughput:
  {"engine", "world", "steps", "batch_per_rank", "params", "seconds", "steps_per_s", "samples_per_s",
   "memory": {"zero_stage", "optimizer", "optimizer_state_bytes": [...], "peak_rss_bytes": [...]}}
Usage: scripts/torch_zero.py --world N [--zero 0|1] [--optimizer adam] [--hidden 4096] [--out FILE.json]
"""
import argparse, json, time
import torch
import torch.nn as nn
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

OPTIMIZERS = {
    "sgd": (torch.optim.SGD, dict(lr=0.01)),
    "sgd-momentum": (torch.optim.SGD, dict(lr=0.01, momentum=0.9)),
    "adam": (torch.optim.Adam, dict(lr=0.001)),
}


def peak_rss():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return -1


def state_bytes(opt):
    inner = opt.optim if isinstance(opt, ZeroRedundancyOptimizer) else opt
    return sum(t.numel() * t.element_size() for s in inner.state.values() for t in s.values() if torch.is_tensor(t))


def worker(rank, args):
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=args.world)
    h = args.hidden
    model = DDP(nn.Sequential(nn.Linear(784, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 10)))
    kind, options = OPTIMIZERS[args.optimizer]
    if args.zero:
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=kind, **options)
    else:
        opt = kind(model.parameters(), **options)
    lossf = nn.CrossEntropyLoss()
    xs = [torch.randn(args.batch, 784) for _ in range(16)]
    ys = [torch.randint(0, 10, (args.batch,)) for _ in range(16)]

    def step(i):
        opt.zero_grad(set_to_none=True)
        lossf(model(xs[i % 16]), ys[i % 16]).backward()
        opt.step()

    for i in range(args.warm):
        step(i)
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(args.steps):
        step(i)
    dist.barrier()
    seconds = time.perf_counter() - t0
    mine = torch.tensor([state_bytes(opt), peak_rss()], dtype=torch.int64)
    every = [torch.zeros(2, dtype=torch.int64) for _ in range(args.world)]
    dist.all_gather(every, mine)
    if rank == 0:
        n = args.world
        json.dump(dict(engine="torch-zero" if args.zero else "torch-ddp", version=torch.__version__, world=n,
                       threads_per_rank=1, steps=args.steps, batch_per_rank=args.batch,
                       params=sum(p.numel() for p in model.parameters()), seconds=seconds,
                       steps_per_s=args.steps / seconds, samples_per_s=args.steps * args.batch * n / seconds,
                       memory=dict(zero_stage=1 if args.zero else 0, optimizer=args.optimizer,
                                   optimizer_state_bytes=[int(e[0]) for e in every],
                                   peak_rss_bytes=[int(e[1]) for e in every])),
                  open(args.out, "w"), indent=2)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--zero", type=int, default=1, choices=[0, 1])
    ap.add_argument("--optimizer", default="adam", choices=sorted(OPTIMIZERS))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--port", type=int, default=29541)
    ap.add_argument("--out", default="torch-zero.json")
    args = ap.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.world)


if __name__ == "__main__":
    main()
