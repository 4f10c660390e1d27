#!/usr/bin/env python3
"""What cuDNN's fused WINOGRAD algorithm costs in rounding and buys in
speed: `ptq eval --device cuda` on ResNet-50 (bench/resnet50_gpu.py's
folded model, opset 17) with the algorithm allowed (the default) and passed
over (PTQ_CUDNN_WINOGRAD=0), on the same random 224x224 images. For each:
images/s (best of --repeat, the whole eval loop from ptq's JSON) and, on
the first 64 images, the logits' distance from a float64 run of the same
network in PyTorch (per image ||ptq - f64|| / ||f64||: median and max),
beside PyTorch FP32's own (cuDNN, TF32 off). Run on the GPU machine:
    python3 bench/cudnn_winograd.py --ptq bundle/bin/ptq --out $OUT/winograd.md
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import commit, cpu_model, write_result  # noqa: E402
from resnet50_gpu import MEAN, PREPROCESS, STD, export, folded_resnet50  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ptq-winograd-")
    net = folded_resnet50()
    model = os.path.join(tmp, "resnet50.onnx")
    exporter = export(net, model)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (a.images, 224, 224, 3), dtype=np.uint8)
    data = os.path.join(tmp, "images.h5")
    with h5py.File(data, "w") as f:
        f["images"] = images
        f["labels"] = np.zeros(a.images, np.int64)
    x = (images[:64].astype(np.float64) / 255 - np.array(MEAN)) / np.array(STD)
    x = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
    with torch.no_grad():
        exact = net.double()(x).numpy()
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        f32 = net.float().cuda()(x.float().cuda()).cpu().numpy()

    def dist(y):
        r = np.linalg.norm(y[:64] - exact, axis=1) / np.linalg.norm(exact, axis=1)
        return float(np.median(r)), float(r.max())

    rows = [("PyTorch FP32 (cuDNN, TF32 off)", "-", *dist(f32))]
    for label, w in (("ptq, WINOGRAD allowed (default)", "1"), ("ptq, PTQ_CUDNN_WINOGRAD=0", "0")):
        env = dict(os.environ, PTQ_CUDNN_WINOGRAD=w)
        rates = []
        logits = os.path.join(tmp, f"logits{w}.npy")
        for _ in range(a.repeat):
            p = subprocess.run([a.ptq, "eval", "--model", model, "--data", data, "--layout", "NHWC", "--preprocess",
                                PREPROCESS, "--device", "cuda", "--batch", str(a.batch), "--json", "--logits", logits],
                               capture_output=True, text=True, env=env)
            if p.returncode != 0:
                sys.exit(f"cudnn_winograd: ptq eval exited {p.returncode}: {p.stderr}")
            rates.append(json.loads(p.stdout)["images_per_s"])
        rows.append((label, f"{max(rates):.0f}", *dist(np.load(logits))))
    lines = [f"# cuDNN WINOGRAD: rounding and speed on ResNet-50, {datetime.date.today()}", "",
             f"- machine: {torch.cuda.get_device_name(0)}, {cpu_model()}, {platform.system()} {platform.release()}",
             f"- ptq: {commit()}; PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}",
             f"- command: `{' '.join([os.path.relpath(sys.argv[0])] + sys.argv[1:])}`",
             f"- model: torchvision resnet50, random weights, BatchNorm folded, {exporter}; {a.images} random "
             f"uint8 224x224x3 images (NHWC HDF5), batch {a.batch}; images/s: ptq eval's whole loop, best of "
             f"{a.repeat}",
             "- distance: per image ||y - f64|| / ||f64|| on the first 64 images, f64 = the same network in "
             "PyTorch float64 on the CPU", "",
             "| run | images/s | distance median | distance max |", "|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]:.2e} | {r[3]:.2e} |" for r in rows]
    write_result(a.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
