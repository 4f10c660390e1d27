#!/usr/bin/env python3
"""Benchmark: what summing a convolution's input channels in slices costs
(kernels/cuda/cudnn.cu's conv_split, PTQ_CONV_SPLIT=T taps a slice, 0: one
convolution). ResNet-50 (bench/resnet50_gpu.py's folded torchvision model,
random weights) at FP32 on the GPU: `ptq eval --json`'s steady rate (after
the first batch) under each setting, the settings taken in turn --repeat
times (best of each), and PyTorch FP32 (cuDNN, benchmark mode, TF32 off) on
the same GPU in the same run, as resnet50_targets.py's target (a) measures
it. Runs on the GPU machine:
    python3 bench/conv_split_speed.py --ptq bundle/bin/ptq --out $OUT/split.md --splits default,1024,512,256
"""
import argparse
import datetime
import json
import os
import platform
import sys

import torch

from benchlib import commit, cpu_model, write_result
from resnet50_gpu import PREPROCESS, gpu_batches, resnet50_setup
from resnet50_targets import run, torch_rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--splits", default="default,1024", help="PTQ_CONV_SPLIT values; 'default': unset")
    ap.add_argument("--envs", default="", help="instead of --splits: settings separated by ';', each 'default' or "
                    "NAME=VALUE[,NAME=VALUE...] set together (e.g. 'default;PTQ_CUDNN_POINTWISE=0,PTQ_KSPLIT=256'), "
                    "or ptq eval arguments starting with -- (e.g. '--math fp64')")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("conv_split_speed: PyTorch sees no GPU")
    onnx_path, h5_path, net, exporter, images = resnet50_setup("ptq-split-", a.images)
    cmd = [a.ptq, "eval", "--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess", PREPROCESS,
           "--batch", str(a.batch), "--device", "cuda", "--json"]
    if a.envs:
        splits = a.envs.split(";")
        settings = {e: ({}, e.split()) if e.startswith("--") else
                    (dict(kv.split("=", 1) for kv in e.split(",")) if e != "default" else {}, []) for e in splits}
    else:
        splits = a.splits.split(",")
        settings = {v: ({"PTQ_CONV_SPLIT": v} if v != "default" else {}, []) for v in splits}
    rates = {s: [] for s in splits}
    for _ in range(a.repeat):
        for s in splits:
            env = dict(os.environ)
            env.pop("PTQ_CONV_SPLIT", None)
            env.update(settings[s][0])
            d = json.loads(run(cmd + settings[s][1], env)[1])
            rates[s].append(d.get("images_per_s_steady", d["images_per_s"]))
            print(f"{s}: {rates[s][-1]:.0f} img/s", flush=True)

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")
    gnet = net.to(dev).eval()
    t_fp32, t_all = torch_rates(gnet, gpu_batches(images, a.batch, dev), a.repeat)

    title = "convolution settings" if a.envs else "convolutions summed in slices of input channels (PTQ_CONV_SPLIT)"
    text = [f"# ResNet-50 FP32 forward: {title}", "",
            f"- ptq commit: {commit()}",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            f"- machine: {torch.cuda.get_device_name(0)}, {cpu_model()}, {platform.platform()}",
            f"- command: `python3 bench/conv_split_speed.py {' '.join(sys.argv[1:])}`",
            f"- model: torchvision resnet50, random weights, BatchNorm folded, {exporter}",
            f"- data: {a.images} random uint8 224x224x3 images (HDF5, NHWC), batch {a.batch}; ptq's steady rate "
            f"(`images_per_s_steady`, after the first batch), settings in turn, best of {a.repeat}",
            f"- PyTorch {torch.__version__} FP32 (cuDNN {torch.backends.cudnn.version()}, benchmark mode, TF32 off), "
            f"inference on preprocessed tensors on the GPU: {t_fp32:.0f} img/s "
            f"(runs {', '.join(f'{r:.0f}' for r in t_all)})", "",
            f"| {'setting' if a.envs else 'PTQ_CONV_SPLIT'} | ptq img/s (best) | / PyTorch FP32 | all runs |",
            "|---|---|---|---|"]
    for s in splits:
        best = max(rates[s])
        label = ("unset (off)" if not a.envs else "default") if s == "default" else s
        text.append(f"| {label} | {best:.0f} | {best / t_fp32:.2f}x | {', '.join(f'{r:.0f}' for r in rates[s])} |")
    write_result(a.out, text + [""])


if __name__ == "__main__":
    main()
