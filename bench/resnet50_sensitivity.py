#!/usr/bin/env python3
"""Benchmark: `ptq sensitivity` on torchvision's ResNet-50 on the GPU, every
activation and weight of the default INT8 plan, both modes ("only": that
tensor alone quantized; "all but": the default plan with it in FP16), on
1,000 images at 224x224, batch 256. The target is 120 s; the report's
per-phase seconds (read, FP32 runs, only runs, default-plan runs, all-but
runs) and `ptq eval --profile` say where the time goes.

The model is bench/resnet50_gpu.py's (random weights, BatchNorm folded,
ONNX opset 17, dynamic batch); the images are random uint8 224x224x3 in
HDF5 (NHWC), labelled with PyTorch's FP32 predictions so FP32 top-1 is the
agreement with PyTorch; 512 other random images calibrate. Runs on the GPU
machine (scripts/gpu-check.sh sens50):
    python3 bench/resnet50_sensitivity.py --ptq bundle/bin/ptq --out $OUT/sens50.md
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
import torch

from benchlib import commit, cpu_model, write_result
from resnet50_gpu import PREPROCESS, export, folded_resnet50, torch_predictions


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"resnet50_sensitivity: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True, help="results markdown")
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--calib-images", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="ptq-sens50-")
    onnx_path = os.path.join(tmp, "resnet50.onnx")
    net = folded_resnet50()
    exporter = export(net, onnx_path)
    rng = np.random.default_rng(1)
    val = rng.integers(0, 256, size=(a.images, 224, 224, 3), dtype=np.uint8)
    cal = rng.integers(0, 256, size=(a.calib_images, 224, 224, 3), dtype=np.uint8)
    val_h5, cal_h5 = os.path.join(tmp, "val.h5"), os.path.join(tmp, "cal.h5")
    with h5py.File(val_h5, "w") as f:
        f["images"] = val
        f["labels"] = torch_predictions(net, val, a.batch)
    with h5py.File(cal_h5, "w") as f:
        f["images"] = cal

    common = ["--layout", "NHWC", "--preprocess", PREPROCESS, "--device", a.device, "--batch", str(a.batch)]
    archive = os.path.join(tmp, "calib.h5")
    _, t_cal = run([a.ptq, "calibrate", "--model", onnx_path, "--data", cal_h5, "--out", archive] + common)
    sens_json = os.path.join(tmp, "sens.json")
    sens_cmd = [a.ptq, "sensitivity", "--model", onnx_path, "--calib", archive, "--data", val_h5,
                "--samples", "0", "--out", sens_json] + common
    p, t_sens = run(sens_cmd)
    print(p.stdout, f"(command: {t_sens:.1f} s)", flush=True)
    s = json.load(open(sens_json))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(s, f)
    prof, _ = run([a.ptq, "eval", "--model", onnx_path, "--data", val_h5, "--profile", "--json"] + common)
    ev = json.loads(prof.stdout)
    profile = "\n".join(l for l in prof.stderr.splitlines() if "note" not in l)

    tensors = s["tensors"]
    n_act = sum(t["kind"] == "activation" for t in tensors)
    n_w = len(tensors) - n_act
    n_only = sum(t["only"] is not None for t in tensors)
    n_b = sum(t["all_but"]["measured"] for t in tensors)
    worst = sorted((t for t in tensors if t["only"]), key=lambda t: (t["only"]["top1_delta_pts"], t["only"].get("sqnr_db", 999.0)))[:5]
    phases = [("read and preprocess (waited for)", s["seconds_read"]), ("FP32 runs", s["seconds_fp32_runs"]),
              ("only runs", s["seconds_only_runs"]), ("default-plan runs", s["seconds_default_plan_runs"]),
              ("all-but runs", s["seconds_all_but_runs"])]
    whole_run_s = a.images / ev["images_per_s"]
    equiv = s["nodes_run"] / max(1, s["nodes_if_every_run_were_whole"]) * s["runs"]
    now = datetime.datetime.now(datetime.timezone.utc)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    text = f"""# ptq sensitivity on ResNet-50, {a.device}

- ptq commit: {commit()}
- date: {now:%Y-%m-%d %H:%M} UTC
- machine: {gpu}, {cpu_model()} ({os.cpu_count()} cores), {platform.system()} {platform.release()}
- command: `python3 bench/resnet50_sensitivity.py --ptq {a.ptq} --out {a.out}`
- model: torchvision resnet50, random weights, BatchNorm folded, {exporter}, dynamic batch
- data: {a.images} random uint8 224x224x3 images labelled with PyTorch's FP32 predictions; calibration: {a.calib_images} other random images (`ptq calibrate`, {t_cal:.1f} s)
- sensitivity: `{' '.join(sens_cmd)}`

| figure | value |
|---|---|
| tensors measured | {len(tensors)} ({n_act} activations, {n_w} weights); "only" runs {n_only}, "all but" runs {n_b} |
| model runs | {s['runs']} over {s['samples']} images |
| nodes run | {s['nodes_run']} of {s['nodes_if_every_run_were_whole']} whole runs would run ({100 * s['nodes_run'] / s['nodes_if_every_run_were_whole']:.0f}%, {equiv:.0f} whole-run equivalents) |
| **wall time (command)** | **{t_sens:.1f} s** (target 120 s; the report's own figure {s['seconds']:.1f} s) |
| FP32 eval of the same images | {ev['images_per_s']:.0f} img/s, {whole_run_s:.2f} s a pass |
| FP32 top-1 (agreement with PyTorch) / default plan | {100 * s['top1_fp32']:.2f}% / {100 * s['default_plan']['top1']:.2f}% |

Where the time goes (the report's phases):

| phase | seconds |
|---|---|
""" + "".join(f"| {n} | {v:.1f} |\n" for n, v in phases) + f"""
The most harmful tensors alone (top-1 points against FP32, SQNR):
""" + "".join(f"- `{t['name']}` ({t['kind']}): {t['only']['top1_delta_pts']:+.1f} pts, {t['only'].get('sqnr_db', float('inf')):.1f} dB\n" for t in worst) + f"""
`ptq eval --profile` on the same images (FP32, waits for the GPU after each node):

```
{profile.strip()}
```

ptq sensitivity's summary:

```
{p.stdout.strip()}
```
"""
    write_result(a.out, [text])
    print("wrote", a.out)


if __name__ == "__main__":
    main()
