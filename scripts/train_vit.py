#!/usr/bin/env python3
"""Train a small Vision Transformer on Fashion-MNIST for ptq's transformer
path: 7x7 patches (16 tokens) embedded by a Linear, a learned position
embedding, pre-LayerNorm encoder layers (explicit attention: MatMul, Softmax,
MatMul; GELU MLP), mean pooling over tokens, a final LayerNorm and a Linear
classifier. No class token, so the graph needs no Shape/Expand/Concat, and
every Reshape has a constant shape with a dynamic batch (-1).
Trains on the CPU (one thread by default) on the IDX files of Debian's
dataset-fashion-mnist with the demo model's preprocessing
(scripts/train_demo_model.py) and exports models/fmnist_vit.onnx (opset 17:
LayerNormalization, GELU as Erf; dynamic batch; `ptq.preprocess` metadata),
then checks that onnxruntime, when importable, gives the torch model's test
accuracy and predictions. models/ holds the one the defaults make (7 epochs of
all 60,000 images: 86.29% FP32 test top-1; about 10 CPU minutes on one thread).
Interpreter: Debian's /usr/bin/python3 (python3-torch 1.13, python3-onnx)
trains and exports; run it from a venv made with --system-site-packages that
adds onnxruntime (scripts/setup.sh makes .venv so) to get the ORT check too.
Run:
    .venv/bin/python3 scripts/train_vit.py [--epochs 7] [--train-images 60000]
        [--threads 1] [--out models/fmnist_vit.onnx]
"""
import argparse
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from train_demo_model import DATA, MEAN, STD, evaluate, export_onnx, load_fmnist

PATCH = 7
TOKENS = (28 // PATCH) ** 2


class Attention(nn.Module):
    def __init__(self, dim, heads, tokens):
        super().__init__()
        self.heads, self.tokens, self.head_dim = heads, tokens, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):  # x: [N, T, D]
        t, h, d = self.tokens, self.heads, self.head_dim
        qkv = self.qkv(x).reshape(-1, t, 3, h, d).permute(2, 0, 3, 1, 4)  # [3, N, H, T, d]
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d)), dim=-1)  # [N, H, T, T]
        y = torch.matmul(att, v).transpose(1, 2).reshape(-1, t, h * d)  # [N, T, D]
        return self.proj(y)


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads, mlp, tokens):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.att = Attention(dim, heads, tokens)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

    def forward(self, x):
        x = x + self.att(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    def __init__(self, dim=64, depth=4, heads=4, mlp=128, classes=10):
        super().__init__()
        self.embed = nn.Linear(PATCH * PATCH, dim)
        self.pos = nn.Parameter(torch.randn(1, TOKENS, dim) * 0.02)
        self.layers = nn.Sequential(*[EncoderLayer(dim, heads, mlp, TOKENS) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):  # x: [N, 1, 28, 28] -> logits [N, classes]
        g = 28 // PATCH
        x = x.reshape(-1, g, PATCH, g, PATCH).permute(0, 1, 3, 2, 4).reshape(-1, TOKENS, PATCH * PATCH)
        x = self.layers(self.embed(x) + self.pos)
        return self.fc(self.ln(x).mean(1))


def ort_check(path, net, xte, yte):
    """onnxruntime's test accuracy and agreement with torch's predictions, or None without onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ort_pred = np.concatenate([s.run(None, {"input": xte[i:i + 1000].numpy()})[0].argmax(1)
                               for i in range(0, len(xte), 1000)])
    net.eval()
    with torch.no_grad():
        torch_pred = np.concatenate([net(xte[i:i + 1000]).argmax(1).numpy() for i in range(0, len(xte), 1000)])
    y = yte.numpy()
    return (torch_pred == y).mean(), (ort_pred == y).mean(), (ort_pred == torch_pred).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=7)
    ap.add_argument("--out", default="models/fmnist_vit.onnx")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--train-images", type=int, default=60000, help="the first N training images")
    ap.add_argument("--data", default=DATA, help="folder of the Fashion-MNIST IDX files")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    xtr, ytr, xte, yte = load_fmnist(a.data, a.train_images)
    net = ViT()
    bs = 128
    steps = a.epochs * ((len(xtr) + bs - 1) // bs)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.15)
    t_start = time.time()
    for ep in range(a.epochs):
        net.train()
        t0 = time.time()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), bs):
            idx = perm[i:i + bs]
            xb = xtr[idx]
            flip = torch.rand(len(idx)) < 0.5  # augmentation as the demo model's: flips, shifts of up to 2 pixels
            xb[flip] = xb[flip].flip(3)
            xb = F.pad(xb, (2, 2, 2, 2), value=-MEAN / STD)
            dx, dy = rng.integers(0, 5, 2)
            xb = xb[:, :, dy:dy + 28, dx:dx + 28]
            loss = F.cross_entropy(net(xb), ytr[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {ep + 1}/{a.epochs} loss {loss.item():.3f} test {evaluate(net, xte, yte) * 100:.2f}% "
              f"({time.time() - t0:.0f} s)", flush=True)
    print(f"training took {time.time() - t_start:.0f} s")
    export_onnx(net, xte[:1], a.out, "ptq/scripts/train_vit.py", opset=17)
    print(f"wrote {a.out} ({os.path.getsize(a.out)} bytes), FP32 test accuracy {evaluate(net, xte, yte) * 100:.2f}%")
    r = ort_check(a.out, net, xte, yte)
    if r is None:
        print("onnxruntime not importable: ONNX check skipped")
    else:
        print(f"test top-1: torch {r[0] * 100:.2f}%, onnxruntime {r[1] * 100:.2f}%, "
              f"prediction agreement {r[2] * 100:.2f}%")
    import onnx
    print("ops:", " ".join(sorted(set(n.op_type for n in onnx.load(a.out).graph.node))))


if __name__ == "__main__":
    main()
