#!/usr/bin/env python3
"""Train a small MobileNetV2-style model on Fashion-MNIST for ptq's accuracy
comparisons (bench/accuracy_placement.py): a 3x3 stem, inverted residual
blocks (1x1 expansion, 3x3 depthwise, 1x1 linear projection, BatchNorm,
ReLU6, a residual Add where the shape allows), a 1x1 head conv, global
average pooling and a Linear classifier. Trains on the CPU with PyTorch
(any recent version) on the IDX files of Debian's dataset-fashion-mnist,
with the demo model's recipe and preprocessing (scripts/train_demo_model.py),
and exports models/fmnist_mobilenet.onnx (opset 13, dynamic batch, BatchNorm
folded; ReLU6 as Clip(0, 6)). Uses a GPU when PyTorch sees one; models/ holds the
one trained on the H200 machine with `--epochs 12 --train-images 60000` (all
60,000 training images; 91.64% FP32 test accuracy; about 2 minutes there).
The defaults are a small budget for a 2-core CPU (64 steps of 128 images). Run:
    python3 scripts/train_mobilenet_model.py [--epochs 2] [--train-images 4000] [--data DIR]
        [--out models/fmnist_mobilenet.onnx]
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from train_demo_model import DATA, MEAN, STD, evaluate, export_onnx, load_fmnist


def conv_bn(c_in, c_out, k, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c_out)]
    return nn.Sequential(*layers, nn.ReLU6()) if act else nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, c_in, c_out, stride, expand):
        super().__init__()
        hidden = c_in * expand
        self.residual = stride == 1 and c_in == c_out
        self.body = nn.Sequential(conv_bn(c_in, hidden, 1), conv_bn(hidden, hidden, 3, stride, groups=hidden),
                                  conv_bn(hidden, c_out, 1, act=False))

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class Net(nn.Module):
    # (expansion, channels, repeats, first stride): MobileNetV2's table, narrowed for 28x28 inputs
    CFG = [(1, 8, 1, 1), (4, 16, 2, 1), (4, 24, 2, 2), (4, 32, 2, 1), (4, 48, 1, 2)]

    def __init__(self):
        super().__init__()
        layers, c = [conv_bn(1, 16, 3, 2)], 16  # 28x28 -> 14x14 first, and narrow: CPU training in minutes
        for t, c_out, n, s in self.CFG:
            for i in range(n):
                layers.append(InvertedResidual(c, c_out, s if i == 0 else 1, t))
                c = c_out
        layers.append(conv_bn(c, 128, 1))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


def main(make_net=None, default_out="models/fmnist_mobilenet.onnx", producer="ptq/scripts/train_mobilenet_model.py"):
    """Trains make_net() (default: this MobileNet) and exports it; scripts/train_vgg_model.py passes its own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--out", default=default_out, required=default_out is None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train-images", type=int, default=4000, help="the first N training images")
    ap.add_argument("--data", default=DATA, help="folder of the Fashion-MNIST IDX files")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    xtr, ytr, xte, yte = load_fmnist(a.data, a.train_images)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    xtr, ytr = xtr.to(dev), ytr.to(dev)
    net = (make_net or Net)().to(dev)
    bs = 128
    steps = a.epochs * ((len(xtr) + bs - 1) // bs)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=4e-5, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps)
    for ep in range(a.epochs):
        net.train()
        t0 = time.time()
        perm = torch.randperm(len(xtr), device=dev)
        for i in range(0, len(xtr), bs):
            idx = perm[i:i + bs]
            xb = xtr[idx]
            flip = torch.rand(len(idx), device=dev) < 0.5  # augmentation as the demo model's: flips, shifts of up to 2 pixels
            xb[flip] = xb[flip].flip(3)
            xb = F.pad(xb, (2, 2, 2, 2), value=-MEAN / STD)
            dx, dy = rng.integers(0, 5, 2)
            xb = xb[:, :, dy:dy + 28, dx:dx + 28]
            loss = F.cross_entropy(net(xb), ytr[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {ep + 1}/{a.epochs} loss {loss.item():.3f} test {evaluate(net.cpu(), xte, yte) * 100:.2f}% "
              f"({time.time() - t0:.0f} s)", flush=True)
        net.to(dev)
    net.cpu()
    export_onnx(net, xte[:1], a.out, producer)
    print(f"wrote {a.out} ({os.path.getsize(a.out)} bytes), FP32 test accuracy {evaluate(net, xte, yte) * 100:.2f}%")


if __name__ == "__main__":
    main()
