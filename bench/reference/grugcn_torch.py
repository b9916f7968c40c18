#!/usr/bin/env python3
"""The GRU-GCN teacher in PyTorch, identical in shape and training step to
the Go one (teacher package): a GRU shared by all nodes (hidden 16) over
windows of 12 steps, Z = softplus(A softplus(A H W1 + b1) W2 + b2) + H Ws + bs
with A = D^-1/2 (A+I) D^-1/2, an MLP decoder d -> d -> C with softplus,
Gaussian noise (sigma 0.01) on Z in training, masked MAE on z-scored data,
Adam (lr 1e-3, weight decay 1e-5), gradient norm clipped at 5, batches of
32 snapshots, the chronological 6:2:2 split, validation after every epoch.

It times epochs on the real SZ-taxi data with the given number of threads
and prints one line of JSON: seconds per epoch (training and validation,
as the Go trainer's epoch time), and on one core, on the real PeMS04 graph,
the per-node inference latency of the same model for the paper's protocol
(10,000 random single-node requests over the node's exact 2-hop field) and
the per-node cost of a whole-graph forward pass.

usage: grugcn_torch.py DATA_DIR [epochs] [threads] [float64|float32]
(float64 is the Go code's precision; float32 is PyTorch's default)
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

T, D = 12, 16


class GRUGCN(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gru = torch.nn.GRU(c, D, batch_first=True)
        self.l1 = torch.nn.Linear(D, D)
        self.l2 = torch.nn.Linear(D, D)
        self.skip = torch.nn.Linear(D, D)
        self.d1 = torch.nn.Linear(D, D)
        self.d2 = torch.nn.Linear(D, c)

    def forward(self, x, a, noise=0.0):
        # x: (B, N, T, C); a: (N, N)
        b, n, t, c = x.shape
        _, h = self.gru(x.reshape(b * n, t, c))
        h = h[-1].reshape(b, n, D)
        # A (X W) + b, as the Go graph convolution
        s1 = F.softplus(a @ F.linear(h, self.l1.weight) + self.l1.bias)
        z = F.softplus(a @ F.linear(s1, self.l2.weight) + self.l2.bias) + self.skip(h)
        if noise > 0:
            z = z + noise * torch.randn_like(z)
        return self.d2(F.softplus(self.d1(z)))


def norm_adj(adj):
    a = adj + np.eye(adj.shape[0])
    a = (a > 0).astype(np.float64)
    d = a.sum(1) ** -0.5
    return d[:, None] * a * d[None, :]


def main():
    data_dir = sys.argv[1]
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    dtype = {"float64": torch.float64, "float32": torch.float32}[sys.argv[4] if len(sys.argv) > 4 else "float64"]
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    series = np.load(os.path.join(data_dir, "sz-taxi", "SZ_taxi.npz"))["data"].astype(np.float64)
    steps, n, c = series.shape
    adj = np.loadtxt(os.path.join(data_dir, "sz-taxi", "SZ_taxi_adj.csv"), delimiter=",")
    adj = np.maximum(adj, adj.T)
    a = torch.tensor(norm_adj(adj), dtype=dtype)
    snaps = steps - T
    n_train, n_val = int(snaps * 0.6), int(snaps * 0.2)
    train_steps = series[: n_train + T - 1]
    mask = train_steps != 0
    mean = np.array([train_steps[..., k][mask[..., k]].mean() for k in range(c)])
    std = np.array([train_steps[..., k][mask[..., k]].std() for k in range(c)])
    z = np.where(series != 0, (series - mean) / std, 0.0)
    xs = torch.tensor(z, dtype=dtype)
    raw = torch.tensor(series, dtype=torch.float64)

    def batch(idx):
        x = torch.stack([xs[i:i + T].permute(1, 0, 2) for i in idx])  # (B, N, T, C)
        y = torch.stack([xs[i + T] for i in idx])
        m = torch.stack([raw[i + T] != 0 for i in idx])
        return x, y, m

    model = GRUGCN(c).to(dtype)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
    rng = np.random.default_rng(1)
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.train()
        order = rng.permutation(n_train)
        for lo in range(0, n_train, 32):
            x, y, m = batch(order[lo:lo + 32])
            pred = model(x, a, noise=0.01)
            loss = (torch.abs(pred - y) * m).sum() / m.sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
        model.eval()
        with torch.no_grad():
            for lo in range(n_train, n_train + n_val, 64):
                x, y, m = batch(range(lo, min(lo + 64, n_train + n_val)))
                model(x, a)
        times.append(time.perf_counter() - t0)

    # Inference on one core, as bench/inference_test.go: the real PeMS04
    # road graph, 3 channels, random readings (values do not change costs),
    # node z's forecast from its exact 2-hop field, 10,000 random requests;
    # and the whole graph at once.
    torch.set_num_threads(1)
    edges = np.loadtxt(os.path.join(data_dir, "pems", "pems04", "distance.csv"), delimiter=",", skiprows=1)
    pn = 307
    padj = np.zeros((pn, pn))
    for i, j in edges[:, :2].astype(int):
        if i != j:
            padj[i, j] = padj[j, i] = 1
    pa = torch.tensor(norm_adj(padj), dtype=dtype)
    pmodel = GRUGCN(3).to(dtype).eval()
    nb = [np.nonzero(padj[i])[0] for i in range(pn)]
    fields = []
    for zz in range(pn):
        one = set(nb[zz]) | {zz}
        two = set(one)
        for u in one:
            two |= set(nb[u])
        ns = np.array(sorted(two))
        fields.append((torch.tensor(ns), int(np.searchsorted(ns, zz)), pa[np.ix_(ns, ns)]))
    reqs = rng.integers(0, pn, 10000)
    x_all = torch.randn(pn, T, 3, dtype=dtype)
    lat = []
    with torch.no_grad():
        for zz in reqs:
            t0 = time.perf_counter()
            ns, loc, sub = fields[zz]
            pmodel(x_all[ns][None], sub)[0, loc]
            lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(20):
            pmodel(x_all[None], pa)
        graph_node_us = (time.perf_counter() - t0) / 20 / pn * 1e6
    lat = np.array(lat) * 1e6
    print(json.dumps({
        "torch": torch.__version__, "threads": threads, "dtype": str(dtype), "epochs": epochs,
        "seconds_per_epoch": min(times), "epoch_seconds": times,
        "node_p50_us": float(np.percentile(lat, 50)), "node_p99_us": float(np.percentile(lat, 99)),
        "mean_field": float(np.mean([len(f[0]) for f in fields])),
        "graph_node_us": graph_node_us,
    }))


if __name__ == "__main__":
    main()
