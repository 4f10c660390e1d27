#!/usr/bin/env python3
"""Train ptq's bundled demo model: a small residual CNN on Fashion-MNIST.

Uses Debian's python3-torch on the CPU and the IDX files of Debian's
dataset-fashion-mnist; exports models/fmnist_resnet.onnx (opset 13, dynamic
batch). The preprocessing ptq must apply is stored in the model's
metadata_props as `ptq.preprocess` (see DESIGN.md, datasets). Run:
    python3 scripts/train_demo_model.py [--epochs 12] [--out models/fmnist_resnet.onnx]
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        ndim = magic & 0xFF
        dims = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


class Block(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.c1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(c_out)
        self.c2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(c_out)
        self.skip = None
        if stride != 1 or c_in != c_out:
            self.skip = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        s = x if self.skip is None else self.skip(x)
        return F.relu(y + s)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 24, 3, 1, 1, bias=False), nn.BatchNorm2d(24), nn.ReLU())
        self.layers = nn.Sequential(Block(24, 24, 1), Block(24, 48, 2), Block(48, 96, 2))
        self.fc = nn.Linear(96, 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def to_tensor(imgs):
    return (torch.from_numpy(imgs.astype(np.float32) / 255.0).unsqueeze(1) - MEAN) / STD


def load_fmnist(data, n_train):
    """(train images, train labels, test images, test labels) from the IDX
    files in folder data: the first n_train training images (None: all); images as
    to_tensor's normalised [N, 1, 28, 28], labels int64."""
    def labels(name):
        return torch.from_numpy(read_idx(os.path.join(data, name)).astype(np.int64))
    xtr = to_tensor(read_idx(os.path.join(data, "train-images-idx3-ubyte.gz"))[:n_train])
    ytr = labels("train-labels-idx1-ubyte.gz")[:n_train]
    return xtr, ytr, to_tensor(read_idx(os.path.join(data, "t10k-images-idx3-ubyte.gz"))), labels("t10k-labels-idx1-ubyte.gz")


def evaluate(net, x, y):
    net.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            correct += (net(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
    return correct / len(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--out", default="models/fmnist_resnet.onnx")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    xtr, ytr, xte, yte = load_fmnist(DATA, None)
    net = Net()
    bs = 128
    steps = a.epochs * ((len(xtr) + bs - 1) // bs)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps)
    for ep in range(a.epochs):
        net.train()
        t0 = time.time()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), bs):
            idx = perm[i:i + bs]
            xb = xtr[idx]
            # augmentation: random horizontal flip and random shift by up to 2 pixels
            flip = torch.rand(len(idx)) < 0.5
            xb[flip] = xb[flip].flip(3)
            xb = F.pad(xb, (2, 2, 2, 2), value=-MEAN / STD)
            dx, dy = np.random.randint(0, 5, 2)
            xb = xb[:, :, dy:dy + 28, dx:dx + 28]
            loss = F.cross_entropy(net(xb), ytr[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {ep + 1}/{a.epochs} loss {loss.item():.3f} test {evaluate(net, xte, yte) * 100:.2f}% "
              f"({time.time() - t0:.0f} s)", flush=True)
    export_onnx(net, xte[:1], a.out, "ptq/scripts/train_demo_model.py")
    print(f"wrote {a.out} ({os.path.getsize(a.out)} bytes), FP32 test accuracy {evaluate(net, xte, yte) * 100:.2f}%")


def export_onnx(net, x1, out, producer, opset=13):
    """net (eval mode) as ONNX (opset 13 unless told) with a dynamic batch and the preprocessing ptq applies in metadata."""
    net.eval()
    tmp = out + ".tmp"
    kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(net, x1, tmp, opset_version=opset, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=True, **kw)
    import onnx
    m = onnx.load(tmp)
    e = m.metadata_props.add()
    e.key = "ptq.preprocess"
    e.value = f"scale=0.00392156862745098 mean={MEAN} std={STD} layout=NCHW channels=1"
    m.producer_name = producer
    onnx.checker.check_model(m)
    onnx.save(m, out)
    os.remove(tmp)


if __name__ == "__main__":
    main()
