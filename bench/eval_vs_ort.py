#!/usr/bin/env python3
"""Benchmark: `ptq eval` throughput on the demo model against onnxruntime on
the CPU of the same machine, in one run, on the 10,000 Fashion-MNIST test
images. Both use every core; each side runs --repeat times, the best is kept.
ptq's figure is its whole eval loop (HDF5 read + preprocessing + inference +
metrics, from its JSON `images_per_s`); onnxruntime's is inference alone on
arrays already in memory, so the ratio favours the peer.
Writes bench/results/<date>-eval-cpu-<host>.md. Run after scripts/setup.sh:
    .venv/bin/python3 bench/eval_vs_ort.py [--ptq build/ptq] [--batch 256] [--repeat 3]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort

from benchlib import FM, commit, cpu_model, idx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--model", default="models/fmnist_resnet.onnx")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads for both (default: every core)")
    ap.add_argument("--out-dir", default="bench/results")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="ptq-bench-")
    h5 = os.path.join(tmp, "fm.h5")
    subprocess.run([a.ptq, "data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
                    f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", h5], check=True, capture_output=True)
    cmd = [a.ptq, "eval", "--model", a.model, "--data", h5, "--json", "--batch", str(a.batch), "--device", "cpu",
           "--threads", str(a.threads)]
    ptq_rates, ptq_wall, top1 = [], [], None
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, check=True, capture_output=True, text=True)
        ptq_wall.append(time.perf_counter() - t0)
        rep = json.loads(p.stdout)
        ptq_rates.append(rep["images_per_s"])
        top1 = rep["top1"]

    images = idx(f"{FM}/t10k-images-idx3-ubyte.gz")
    x = ((images.astype(np.float32) / np.float32(255.0) - np.float32(0.286)) / np.float32(0.353))[:, None]
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    sess.run(None, {"input": x[: a.batch]})  # warm-up
    ort_rates = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        for i in range(0, len(x), a.batch):
            sess.run(None, {"input": x[i:i + a.batch]})
        ort_rates.append(len(x) / (time.perf_counter() - t0))

    best_ptq, best_ort = max(ptq_rates), max(ort_rates)
    now = datetime.datetime.now(datetime.timezone.utc)
    host = platform.node() or "host"
    os.makedirs(a.out_dir, exist_ok=True)
    out = os.path.join(a.out_dir, f"{now:%Y-%m-%d}-eval-cpu-{host}-{a.threads}t.md")
    text = f"""# ptq eval vs onnxruntime, CPU, demo model

- ptq commit: {commit()}
- date: {now:%Y-%m-%d %H:%M} UTC
- machine: {cpu_model()}, {os.cpu_count()} cores ({a.threads} threads used), {platform.system()} {platform.release()}
- command: `{' '.join(['.venv/bin/python3', 'bench/eval_vs_ort.py', '--ptq', a.ptq, '--batch', str(a.batch), '--repeat', str(a.repeat), '--threads', str(a.threads)])}`
- ptq: `{' '.join(cmd)}` (whole eval loop: HDF5 read, preprocessing, inference, metrics)
- onnxruntime {ort.__version__}: CPUExecutionProvider, intra_op_num_threads={a.threads}, inference only on preprocessed arrays
- ptq's OpenBLAS kernels: {subprocess.run([a.ptq, 'version'], capture_output=True, text=True).stdout.split('openblas kernels:')[-1].strip()}
- images: 10,000 Fashion-MNIST test images, batch {a.batch}; best of {a.repeat} runs each

| | img/s (best) | all runs |
|---|---|---|
| ptq eval --device cpu | {best_ptq:.0f} | {', '.join(f'{r:.0f}' for r in ptq_rates)} |
| onnxruntime | {best_ort:.0f} | {', '.join(f'{r:.0f}' for r in ort_rates)} |

**ratio ptq / onnxruntime: {best_ptq / best_ort:.2f}x** (ptq top-1 {top1 * 100:.2f}%; ptq process wall time best {min(ptq_wall):.2f} s)
"""
    with open(out, "w") as f:
        f.write(text)
    print(text)
    print("wrote", out)


if __name__ == "__main__":
    main()
