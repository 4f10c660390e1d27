#!/usr/bin/env python3
"""Benchmark: accuracy of ptq's default INT8 plan against onnxruntime's
quantize_static (QDQ, per-channel, symmetric INT8 weights and activations)
with its MinMax, Entropy and Percentile calibrators, in one run on the same
machine: the same 512 calibration images (the first 512 Fashion-MNIST
training images), the same preprocessing, top-1 on the 10,000 test images.
ptq's number is `ptq validate`'s quantized top-1; onnxruntime also runs
ptq's own Q/DQ export for reference. Writes bench/results/<date>-accuracy-<host>.md.
    .venv-bench/bin/python3 bench/accuracy_vs_ort.py [--ptq build/ptq]
"""
import argparse
import datetime
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                      quantize_static)

from benchlib import FM, commit, cpu_model, idx


def write_idx_gz(path, arr):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(bytes([0, 0, 0x08, arr.ndim]))
        for d in arr.shape:
            f.write(int(d).to_bytes(4, "big"))
        f.write(np.ascontiguousarray(arr).tobytes())


def preprocess(images):
    x = (images.astype(np.float32) * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353)
    return x.reshape(-1, 1, 28, 28).astype(np.float32)


def top1(model_path, x, labels):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    pred = np.concatenate([sess.run(None, {name: x[i:i + 1000]})[0].argmax(1) for i in range(0, len(x), 1000)])
    return float((pred == labels).mean())


class Reader(CalibrationDataReader):
    """Calibration batches for quantize_static: feeds {input name: array [N, ...]}, every input sliced alike."""

    def __init__(self, feeds, batch=64):
        self.feeds, self.batch, self.i = feeds, batch, 0
        self.n = len(next(iter(feeds.values())))

    def get_next(self):
        if self.i >= self.n:
            return None
        b = {k: v[self.i:self.i + self.batch] for k, v in self.feeds.items()}
        self.i += self.batch
        return b


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def setup(prefix, extra=None):
    """The command line (--ptq, --model, --calib, --out, and what extra(parser) adds), a scratch folder's path
    maker J, and the data:
    J("calib.h5") (the first --calib training images) and J("test.h5") converted by ptq; returns
    (args, J, training images [calib, 28, 28], test images preprocessed [10000, 1, 28, 28], test labels)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--model", default="models/fmnist_resnet.onnx")
    ap.add_argument("--calib", type=int, default=512)
    ap.add_argument("--out", default=None)
    if extra:
        extra(ap)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix=prefix)
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    train = idx(f"{FM}/train-images-idx3-ubyte.gz")[:a.calib]
    labels = idx(f"{FM}/t10k-labels-idx1-ubyte.gz").astype(np.int64)
    write_idx_gz(J("ci.gz"), train)
    write_idx_gz(J("cl.gz"), np.zeros(len(train), np.uint8))
    run([a.ptq, "data", "convert", "--images", J("ci.gz"), "--labels", J("cl.gz"), "--out", J("calib.h5")])
    run([a.ptq, "data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
         f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", J("test.h5")])
    return a, J, train, preprocess(idx(f"{FM}/t10k-images-idx3-ubyte.gz")), labels


def input_name(model):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_inputs()[0].name


ORT_METHODS = ("MinMax", "Entropy", "Percentile")


def ort_quantized(model, out, feeds, method):
    """onnxruntime quantize_static (QDQ, per-channel, symmetric INT8) of model into out, calibrated with method
    (one of ORT_METHODS) on feeds ({input name: array}, e.g. the preprocessed training images); returns out."""
    quantize_static(model, out, Reader(feeds), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=getattr(CalibrationMethod, method),
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    return out


def main():
    a, J, train, x_test, labels = setup("ptq-bench-acc-")
    fp32 = top1(a.model, x_test, labels)

    # ptq: calibrate -> default plan -> validate, and its Q/DQ export run by onnxruntime
    run([a.ptq, "calibrate", "--model", a.model, "--data", J("calib.h5"), "--out", J("c.h5")])
    run([a.ptq, "plan", J("c.h5"), "--model", a.model, "--out", J("plan.json"), "--quiet"])
    run([a.ptq, "validate", "--model", a.model, "--plan", J("plan.json"), "--data", J("test.h5"), "--report",
         J("rep")])
    rep = json.load(open(J("rep", "validate.json")))
    run([a.ptq, "export", "--format", "qdq", "--plan", J("plan.json"), "--model", a.model, "--out", J("ptq.onnx"),
         "--quiet"])
    rows = [("ptq default INT8 plan (ptq validate)", rep["top1_quant"]),
            ("ptq's Q/DQ export, run by onnxruntime", top1(J("ptq.onnx"), x_test, labels))]
    for method in ORT_METHODS:
        out = ort_quantized(a.model, J(f"ort-{method}.onnx"), {input_name(a.model): preprocess(train)}, method)
        rows.append((f"onnxruntime quantize_static {method}", top1(out, x_test, labels)))
        print(rows[-1], flush=True)
    best_ort = max(r[1] for r in rows[2:])
    host = platform.node().split(".")[0] or "host"
    date = datetime.date.today().isoformat()
    path = a.out or f"bench/results/{date}-accuracy-{host}.md"
    lines = [f"# INT8 accuracy: ptq's default plan vs onnxruntime's quantize_static ({date})", "",
             f"- machine: {host}, {cpu_model()}; ptq commit {commit()}; onnxruntime {ort.__version__}",
             f"- command: `{' '.join(sys.argv)}`",
             f"- model {a.model}; calibration: the first {a.calib} Fashion-MNIST training images for both; "
             "accuracy: top-1 on the 10,000 test images, same preprocessing",
             "- onnxruntime: quantize_static, QuantFormat.QDQ, per_channel=True, QInt8 activations and weights, "
             "ActivationSymmetric and WeightSymmetric", "",
             f"FP32 top-1 (onnxruntime): {100 * fp32:.2f}%", "",
             "| quantization | top-1 | drop from FP32 (points) |", "|---|---|---|"]
    for label, acc in rows:
        lines.append(f"| {label} | {100 * acc:.2f}% | {100 * (fp32 - acc):+.2f} |")
    lines += ["", f"ptq's default plan: {100 * rows[0][1]:.2f}% against the best onnxruntime calibrator's "
              f"{100 * best_ort:.2f}% ({'at least as accurate' if rows[0][1] >= best_ort else 'LESS accurate'}); "
              f"drop {100 * (fp32 - rows[0][1]):.2f} points "
              f"({'within' if fp32 - rows[0][1] <= 0.003 + 1e-12 else 'NOT within'} 0.3).", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
