#!/usr/bin/env python3
"""Benchmark: `ptq eval` throughput on the demo model against onnxruntime on
the CPU of the same machine, in one run, on the 10,000 Fashion-MNIST test
images. Both use every core; each side runs --repeat times, the best is kept.
Several models (--model, repeatable) and other ptq binaries (--ptq-also
NAME=PATH, e.g. the commit before a change) in the same run, the sides run in
turn within each round. ptq's figure is its whole eval loop (HDF5 read + preprocessing + inference +
metrics, from its JSON `images_per_s`); onnxruntime's is inference alone on
arrays already in memory, so the ratio favours the peer.
Writes bench/results/<date>-eval-cpu-<host>.md. Run after scripts/setup.sh:
    .venv/bin/python3 bench/eval_vs_ort.py [--ptq build/ptq] [--ptq-also before=PATH] [--model M.onnx ...]
        [--batch 256] [--repeat 3]
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


def ptq_cmd(ptq, model, h5, a):
    return [ptq, "eval", "--model", model, "--data", h5, "--json", "--batch", str(a.batch), "--device", "cpu",
            "--threads", str(a.threads)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--ptq-also", action="append", default=[], metavar="NAME=PATH",
                    help="another ptq binary measured in the same run (e.g. before=/tmp/old/bin/ptq)")
    ap.add_argument("--model", action="append", default=None,
                    help="an ONNX model with input 'input' [N, 1, 28, 28] (repeatable; default the demo model)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads for both (default: every core)")
    ap.add_argument("--out-dir", default="bench/results")
    a = ap.parse_args()
    models = a.model or ["models/fmnist_resnet.onnx"]
    ptqs = [("ptq", a.ptq)] + [tuple(v.split("=", 1)) for v in a.ptq_also]

    tmp = tempfile.mkdtemp(prefix="ptq-bench-")
    h5 = os.path.join(tmp, "fm.h5")
    subprocess.run([a.ptq, "data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
                    f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", h5], check=True, capture_output=True)
    images = idx(f"{FM}/t10k-images-idx3-ubyte.gz")
    x = ((images.astype(np.float32) / np.float32(255.0) - np.float32(0.286)) / np.float32(0.353))[:, None]
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads

    sections, summary = [], []
    for model in models:
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        sess.run(None, {"input": x[: a.batch]})  # warm-up
        rates = {name: [] for name, _ in ptqs}
        rates["onnxruntime"] = []
        walls = {name: [] for name, _ in ptqs}
        top1 = {}
        for _ in range(a.repeat):  # interleaved, so a change in the machine's load meets every side alike
            for name, binary in ptqs:
                t0 = time.perf_counter()
                p = subprocess.run(ptq_cmd(binary, model, h5, a), check=True, capture_output=True, text=True)
                walls[name].append(time.perf_counter() - t0)
                rep = json.loads(p.stdout)
                rates[name].append(rep["images_per_s"])
                top1[name] = rep["top1"]
            t0 = time.perf_counter()
            for i in range(0, len(x), a.batch):
                sess.run(None, {"input": x[i:i + a.batch]})
            rates["onnxruntime"].append(len(x) / (time.perf_counter() - t0))
        best = {k: max(v) for k, v in rates.items()}
        rows = "".join(f"| {'ptq eval --device cpu' if k == 'ptq' else k} | {best[k]:.0f} | "
                       f"{', '.join(f'{r:.0f}' for r in v)} | {best[k] / best['onnxruntime']:.2f}x |\n"
                       for k, v in rates.items())
        tops = ", ".join(f"{k} {100 * v:.2f}%" for k, v in top1.items())
        sections.append(f"""## {model}

- ptq: `{' '.join(ptq_cmd(a.ptq, model, h5, a))}` (whole eval loop: HDF5 read, preprocessing, inference, metrics)

| | img/s (best) | all runs | against onnxruntime |
|---|---|---|---|
{rows}
ptq top-1: {tops}; ptq process wall time best {min(walls['ptq']):.2f} s
""")
        summary.append(f"{os.path.basename(model)} {best['ptq'] / best['onnxruntime']:.2f}x")

    now = datetime.datetime.now(datetime.timezone.utc)
    host = platform.node() or "host"
    os.makedirs(a.out_dir, exist_ok=True)
    out = os.path.join(a.out_dir, f"{now:%Y-%m-%d}-eval-cpu-{host}-{a.threads}t.md")
    also = "".join(f" --ptq-also {n}={b}" for n, b in ptqs[1:])
    margs = "".join(f" --model {m}" for m in (a.model or []))
    versions = "; ".join(f"{n} `{b}`" for n, b in ptqs)
    text = f"""# ptq eval vs onnxruntime, CPU

- ptq commit: {commit()}
- date: {now:%Y-%m-%d %H:%M} UTC
- machine: {cpu_model()}, {os.cpu_count()} cores ({a.threads} threads used), {platform.system()} {platform.release()}
- command: `.venv/bin/python3 bench/eval_vs_ort.py --ptq {a.ptq}{also}{margs} --batch {a.batch} --repeat {a.repeat} --threads {a.threads}`
- binaries: {versions}
- onnxruntime {ort.__version__}: CPUExecutionProvider, intra_op_num_threads={a.threads}, inference only on preprocessed arrays
- ptq's OpenBLAS kernels: {subprocess.run([a.ptq, 'version'], capture_output=True, text=True).stdout.split('openblas kernels:')[-1].strip().splitlines()[0]}
- images: 10,000 Fashion-MNIST test images, batch {a.batch}; {a.repeat} rounds, each running every side once in turn;
  the best run of each side

**ratio ptq / onnxruntime: {', '.join(summary)}**

""" + "\n".join(sections)
    with open(out, "w") as f:
        f.write(text)
    print(text)
    print("wrote", out)


if __name__ == "__main__":
    main()
