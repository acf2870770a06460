#!/usr/bin/python3
"""PyTorch's training throughput on one process for the models of Cohort's demo, the peer of
`./cohort bench train --world 1 --model demo-mlp|demo-cnn|mlp` (torch_ddp.py covers the benchmark MLP
under DDP; this script trains without DDP, PyTorch's fastest path for one process).

Models: demo-mlp 784-512-256-10; demo-cnn conv 1->32 5x5, max-pool 2, conv 32->64 5x5, max-pool 2,
fc 1024->128, fc 128->10 (ReLU between); mlp 784-H-H-10. Cross-entropy, SGD lr 0.01, batch 64,
random images (16 fixed batches of 1x28x28), 1 compute thread.
Timing: wall time of `steps` full steps (zero_grad, forward, loss, backward, step) after `warm` steps.
Usage: /usr/bin/python3 scripts/torch_models.py --model demo-mlp|demo-cnn|mlp [--hidden 1024] [--steps 500]
       [--warm 20] [--batch 64] [--out FILE.json]
JSON: {"engine": "torch", "model", "version", "world": 1, "threads_per_rank", "steps", "batch_per_rank",
       "params", "seconds", "steps_per_s", "samples_per_s", "blas"} (torch_ddp.py's shape)
"""
import argparse, json, os, time
import torch
import torch.nn as nn
import torch.nn.functional as F


def loaded_blas():
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if "/" in line else ""
            name = os.path.basename(path)
            if "blas" in name or "mkl" in name:
                found.add(os.path.realpath(path))
    return sorted(found)


class DemoCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 5), nn.Conv2d(32, 64, 5)
        self.fc1, self.fc2 = nn.Linear(64 * 4 * 4, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
        return self.fc2(F.relu(self.fc1(x.reshape(x.size(0), -1))))


def mlp(*sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    return nn.Sequential(nn.Flatten(), *layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["demo-mlp", "demo-cnn", "mlp"], required=True)
    for name, default in (("--hidden", 1024), ("--steps", 500), ("--warm", 20), ("--batch", 64)):
        ap.add_argument(name, type=int, default=default)
    ap.add_argument("--out")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = {"demo-mlp": lambda: mlp(784, 512, 256, 10), "demo-cnn": DemoCnn,
             "mlp": lambda: mlp(784, a.hidden, a.hidden, 10)}[a.model]()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xs = [torch.randn(a.batch, 1, 28, 28) for _ in range(16)]
    ys = [torch.randint(0, 10, (a.batch,)) for _ in range(16)]

    def step(i):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(xs[i % 16]), ys[i % 16]).backward()
        opt.step()

    for i in range(a.warm):
        step(i)
    t0 = time.perf_counter()
    for i in range(a.steps):
        step(i)
    dt = time.perf_counter() - t0
    result = dict(engine="torch", model=a.model, version=torch.__version__, world=1,
                  threads_per_rank=torch.get_num_threads(), steps=a.steps, batch_per_rank=a.batch,
                  params=sum(p.numel() for p in model.parameters()), seconds=dt, steps_per_s=a.steps / dt,
                  samples_per_s=a.steps * a.batch / dt, blas=loaded_blas())
    print(f"torch {torch.__version__} {a.model} world=1 threads={result['threads_per_rank']} "
          f"params={result['params']} steps={a.steps} time={dt:.2f}s samples/s={result['samples_per_s']:.0f}")
    if a.out:
        json.dump(result, open(a.out, "w"))


if __name__ == "__main__":
    main()
