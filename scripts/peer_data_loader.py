#!/usr/bin/python3
"""PyTorch's DataLoader over examples on disk: the peer of `./cohort bench data`.

Debian packages no Parquet reader for Python, so the peer reads the same examples from NumPy
arrays on disk (memory-mapped: features float32 [N, 784], labels int64 [N]), written from the
Fashion-MNIST IDX files with `--write DIR` (pixels scaled to [0, 1] and normalized as the demo does).

  /usr/bin/python3 peer_data_loader.py --write DIR [--idx /usr/share/datasets/fashion-mnist]
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 peer_data_loader.py --arrays DIR --mode loader [--out F.json]
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 peer_data_loader.py --arrays DIR --mode train --world 2 [--out F.json]

--mode loader: one DataLoader (--workers worker processes, default 1) with a DistributedSampler
  for rank 0 of --world, shuffled; times how fast it delivers batches of --batch to a consumer that
  does nothing (samples/s delivered, median over --repeats passes of --steps batches).
--mode train: --world ranks (Gloo, 1 compute thread each) train the demo's MLP (784-512-256-10,
  SGD lr 0.05 momentum 0.9, batch --batch per rank) with DDP, each from its own DataLoader
  (--workers per rank) over its DistributedSampler shard; times --steps steps on rank 0 between
  two barriers after --warm steps, and the time rank 0's training loop waited for its next batch.
JSON: {"peer": "torch-dataloader", "mode", "version", "world", "workers", "batch", "examples",
       "samples_per_s", "wait_ms_per_step" (train), "runs_samples_per_s" (loader)}
"""
import argparse, gzip, json, os, statistics, time
import numpy as np
import torch
import torch.nn as nn
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch_models import mlp  # the demo's MLP, as the training peer builds it

MEAN, STD = 0.2860, 0.3530  # the demo's normalization of Fashion-MNIST's training pixels


class Arrays(Dataset):
    """Examples from two memory-mapped .npy files; opened lazily so worker processes map their own."""

    def __init__(self, directory):
        self.directory = directory
        self.n = np.load(os.path.join(directory, "labels.npy"), mmap_mode="r").shape[0]
        self.features = self.labels = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.features is None:
            self.features = np.load(os.path.join(self.directory, "features.npy"), mmap_mode="r")
            self.labels = np.load(os.path.join(self.directory, "labels.npy"), mmap_mode="r")
        return torch.from_numpy(np.array(self.features[i])), int(self.labels[i])


def idx(path, skip):
    with (gzip.open(path) if path.endswith(".gz") else open(path, "rb")) as f:
        return np.frombuffer(f.read()[skip:], dtype=np.uint8)


def write(directory, source):
    os.makedirs(directory, exist_ok=True)
    pixels = idx(os.path.join(source, "train-images-idx3-ubyte.gz"), 16).reshape(-1, 784)
    labels = idx(os.path.join(source, "train-labels-idx1-ubyte.gz"), 8).astype(np.int64)
    np.save(os.path.join(directory, "features.npy"), ((pixels / 255.0 - MEAN) / STD).astype(np.float32))
    np.save(os.path.join(directory, "labels.npy"), labels)
    print(f"wrote {len(labels)} examples to {directory}")


def loader(args, rank, world, epoch):
    sampler = DistributedSampler(Arrays(args.arrays), num_replicas=world, rank=rank, shuffle=True, seed=7)
    sampler.set_epoch(epoch)
    return DataLoader(sampler.dataset, batch_size=args.batch, sampler=sampler, num_workers=args.workers,
                      prefetch_factor=args.prefetch if args.workers > 0 else None,
                      persistent_workers=False, drop_last=True)


def batches(args, rank, world):
    """Endless batches for this rank, epoch after epoch."""
    epoch = 0
    while True:
        for batch in loader(args, rank, world, epoch):
            yield batch
        epoch += 1


def measure_loader(args):
    runs = []
    for _ in range(args.repeats):
        it = batches(args, 0, args.world)
        next(it)  # the workers have started
        start = time.perf_counter()
        for _ in range(args.steps):
            next(it)
        runs.append(args.steps * args.batch / (time.perf_counter() - start))
        del it
    return {"samples_per_s": statistics.median(runs), "runs_samples_per_s": runs}


def train(rank, args, port, out):
    torch.set_num_threads(1)
    torch.manual_seed(7)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.world)
    model = nn.parallel.DistributedDataParallel(mlp(784, 512, 256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    it = batches(args, rank, args.world)
    waited = [0.0]

    def step():
        t = time.perf_counter()
        x, y = next(it)
        waited[0] += time.perf_counter() - t
        opt.zero_grad(set_to_none=True)
        lossf(model(x), y).backward()
        opt.step()

    for _ in range(args.warm):
        step()
    dist.barrier()
    waited[0] = 0.0
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        out.update({"samples_per_s": args.steps * args.batch * args.world / seconds,
                    "wait_ms_per_step": 1000 * waited[0] / args.steps, "seconds": seconds})
        with open(args.out_tmp, "w") as f:
            json.dump(out, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", metavar="DIR", help="write the NumPy arrays from --idx and stop")
    p.add_argument("--idx", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--arrays", metavar="DIR")
    p.add_argument("--mode", choices=["loader", "train"], default="loader")
    for name, default, text in (("--world", 2, None), ("--workers", 1, None),
                                ("--prefetch", 2, "batches each worker prepares ahead"), ("--batch", 64, None),
                                ("--steps", 400, None), ("--warm", 20, None), ("--repeats", 5, None),
                                ("--port", 29611, None)):
        p.add_argument(name, type=int, default=default, help=text)
    p.add_argument("--out")
    args = p.parse_args()
    if args.write:
        write(args.write, args.idx)
        return
    if not args.arrays:
        p.error("--arrays DIR (written by --write DIR) is required")
    out = {"peer": "torch-dataloader", "mode": args.mode, "version": torch.__version__, "world": args.world,
           "workers": args.workers, "batch": args.batch, "examples": len(Arrays(args.arrays)), "steps": args.steps}
    if args.mode == "loader":
        out.update(measure_loader(args))
    else:
        args.out_tmp = (args.out or "peer-data-train.json") + ".part"
        mp.spawn(train, args=(args, args.port, out), nprocs=args.world, join=True)
        with open(args.out_tmp) as f:
            out = json.load(f)
        os.remove(args.out_tmp)
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
