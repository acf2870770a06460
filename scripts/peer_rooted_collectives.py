#!/usr/bin/python3
"""The peers' reduce, gather, scatter and all-to-all, timed as Cohort's `bench collectives` times them.

The shared peer scripts (torch_collectives.py, mpi_allreduce.py) measure allreduce, broadcast,
allgather and barrier; this one measures the other operations (and send/recv ping-pong between
ranks 0 and 1, reported one way: half the round trip, at 4 bytes and at BYTES) the same way: per iteration an
untimed barrier, then the operation timed on every rank; the iteration's time is the slowest
rank's; the result is the median (and minimum) over 30 iterations after 5 untimed ones.

  torch.distributed's Gloo:  /usr/bin/python3 peer_rooted_collectives.py torch --world 2 --out F.json
  Open MPI (mpi4py):         mpirun -np 2 /usr/bin/python3 peer_rooted_collectives.py mpi --out F.json

Sizes: BYTES (default 16 MiB) per rank for reduce and all-to-all (n blocks of BYTES/n); gather
collects BYTES/n from every rank at the root, scatter sends BYTES/n to every rank. Bus bandwidth
as in nccl-tests: reduce BYTES/time; gather, scatter and all-to-all BYTES/time x (n-1)/n.
The JSON has the peers' shape: {"engine", "version", "world", "results": [rows]}.
"""
import argparse
import json
import os
import statistics
import time

MiB = 1024 * 1024
WARM, ITERS = 5, 30


class TorchGloo:
    name = "torch-gloo"

    def __init__(self, rank, n, port):
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
        self.torch, self.dist, self.rank, self.n = torch, dist, rank, n
        self.version = torch.__version__

    def buffer(self, count):
        return self.torch.rand(count, dtype=self.torch.float32)

    def barrier(self):
        self.dist.barrier()

    def slowest(self, times):
        t = self.torch.tensor(times, dtype=self.torch.float64)
        every = [self.torch.zeros_like(t) for _ in range(self.n)]
        self.dist.all_gather(every, t)
        return self.torch.stack(every).max(dim=0).values.tolist()

    def ops(self, nbytes):
        n, count = self.n, nbytes // 4
        data, part = self.buffer(count), self.buffer(count // n)
        parts = [self.buffer(count // n) for _ in range(n)]
        out = self.torch.empty(count)
        root = self.rank == 0
        return {
            "reduce": lambda: self.dist.reduce(data, dst=0),
            "gather": lambda: self.dist.gather(part, gather_list=parts if root else None, dst=0),
            "scatter": lambda: self.dist.scatter(part, scatter_list=parts if root else None, src=0),
            "alltoall": lambda: self.dist.all_to_all_single(out, data),
        }

    def ping_pong(self, nbytes):
        x = self.buffer(max(1, nbytes // 4))

        def once():
            if self.rank == 0:
                self.dist.send(x, 1)
                self.dist.recv(x, 1)
            elif self.rank == 1:
                self.dist.recv(x, 0)
                self.dist.send(x, 0)
        return once

    def close(self):
        self.dist.destroy_process_group()


class OpenMpi:
    name = "openmpi"

    def __init__(self):
        from mpi4py import MPI
        import numpy as np
        self.MPI, self.np, self.comm = MPI, np, MPI.COMM_WORLD
        self.rank, self.n = self.comm.Get_rank(), self.comm.Get_size()
        self.version = MPI.Get_library_version().split(",")[0].strip()

    def buffer(self, count):
        return self.np.random.rand(count).astype(self.np.float32)

    def barrier(self):
        self.comm.Barrier()

    def slowest(self, times):
        mine = self.np.array(times)
        most = self.np.empty_like(mine)
        self.comm.Allreduce(mine, most, op=self.MPI.MAX)
        return most.tolist()

    def ops(self, nbytes):
        n, count = self.n, nbytes // 4
        data, part = self.buffer(count), self.buffer(count // n)
        whole, out = self.buffer(count // n * n), self.np.empty(count, dtype=self.np.float32)
        reduced = self.np.empty(count, dtype=self.np.float32)
        return {
            "reduce": lambda: self.comm.Reduce(data, reduced, op=self.MPI.SUM, root=0),
            "gather": lambda: self.comm.Gather(part, whole, root=0),
            "scatter": lambda: self.comm.Scatter(whole, part, root=0),
            "alltoall": lambda: self.comm.Alltoall(data, out),
        }

    def ping_pong(self, nbytes):
        x = self.buffer(max(1, nbytes // 4))

        def once():
            if self.rank == 0:
                self.comm.Send(x, dest=1)
                self.comm.Recv(x, source=1)
            elif self.rank == 1:
                self.comm.Recv(x, source=0)
                self.comm.Send(x, dest=0)
        return once

    def close(self):
        pass


def timed(peer, op, warm=WARM, iters=ITERS):
    for _ in range(warm):
        op()
    times = []
    for _ in range(iters):
        peer.barrier()
        t0 = time.perf_counter()
        op()
        times.append(time.perf_counter() - t0)
    slowest = peer.slowest(times)
    return statistics.median(slowest), min(slowest)


def measure(peer, nbytes, out):
    n = peer.n
    rows = []
    for name, op in peer.ops(nbytes).items():
        med, best = timed(peer, op)
        factor = 1.0 if name == "reduce" else (n - 1) / n
        algbw = nbytes / med / 1e9
        rows.append(dict(op=name, bytes=nbytes, iters=ITERS, median_s=med, min_s=best,
                         algbw_gbs=algbw, busbw_gbs=algbw * factor))
    for size in (4, nbytes):
        iters = 200 if size <= MiB else ITERS
        med, best = timed(peer, peer.ping_pong(size), 20 if size <= MiB else WARM, iters)
        med, best = med / 2, best / 2     # one way: half the round trip
        rows.append(dict(op="pingpong", bytes=size, iters=iters, median_s=med, min_s=best,
                         algbw_gbs=size / med / 1e9, busbw_gbs=size / med / 1e9))
    if peer.rank == 0:
        with open(out, "w") as f:
            json.dump(dict(engine=peer.name, version=peer.version, world=n, results=rows), f, indent=1)
    peer.barrier()
    peer.close()


def torch_worker(rank, n, port, nbytes, out):
    measure(TorchGloo(rank, n, port), nbytes, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("peer", choices=["torch", "mpi"])
    ap.add_argument("--world", type=int, default=2, help="torch only (mpirun -np sets it for mpi)")
    ap.add_argument("--port", type=int, default=29517)
    ap.add_argument("--bytes", type=int, default=16 * MiB)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    if a.peer == "mpi":
        measure(OpenMpi(), a.bytes, out)
        return
    import torch.multiprocessing as mp
    mp.spawn(torch_worker, args=(a.world, a.port, a.bytes, out), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
