#!/usr/bin/env python3
"""Benchmark: host peak RSS of `ptq eval` and `ptq validate` on the CPU
against onnxruntime's InferenceSession (CPU execution provider) running the
same model on the same batches, in one run on one machine. Model:
torchvision efficientnet_b0, random weights, ONNX opset 13, dynamic batch.
Data: random uint8 224x224x3 images in HDF5 (NHWC). validate's peer is one
onnxruntime process running the FP32 model and ptq's Q/DQ export of the
same plan (`ptq export --format qdq`) on every batch, as validate runs FP32
and the plan on every batch. Every figure is the process's maximum resident
set size as wait4 reports it through /usr/bin/time (each command is its own
process, started from /usr/bin/time, not from this torch-sized Python).
With --ptq-before (a build of an earlier commit) both builds run, and
their eval logits and validate reports are compared byte for byte.
    python3 bench/rss_vs_ort.py --ptq build/ptq [--ptq-before OLD/ptq] --out bench/results/DATE-rss-efficientnet-HOST.md
"""
import argparse
import datetime
import filecmp
import os
import platform
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
import torch
import torchvision

from benchlib import commit, cpu_model, write_result
from resnet50_gpu import MEAN, PREPROCESS, STD

# one onnxruntime process: the models in argv[5:] on every batch of the set, as ptq reads it
ORT_RUN = r"""
import sys, time
import h5py, numpy as np, onnxruntime as ort
data, n, batch, threads, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
mean = np.array(%r, np.float32).reshape(1, 3, 1, 1)
std = np.array(%r, np.float32).reshape(1, 3, 1, 1)
so = ort.SessionOptions()
if threads:
    so.intra_op_num_threads = threads
sessions = [ort.InferenceSession(m, so, providers=["CPUExecutionProvider"]) for m in models]
t0 = time.perf_counter()
with h5py.File(data, "r") as f:
    images = f["images"]
    for i in range(0, n, batch):
        x = images[i:i + batch].transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
        x = (x - mean) / std
        for s in sessions:
            s.run(None, {s.get_inputs()[0].name: x})
print(time.perf_counter() - t0)
""" % (MEAN, STD)


def timed(cmd):
    """Runs cmd under /usr/bin/time: (wall seconds, stdout, peak RSS MiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-o", rss.name, "-f", "%M", *cmd], capture_output=True, text=True)
        secs = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"rss_vs_ort: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
        return secs, p.stdout, int(rss.read().split()[-1]) / 1024.0


def export(path):
    torch.manual_seed(0)
    net = torchvision.models.efficientnet_b0(weights=None).eval()
    torch.onnx.export(net, torch.randn(2, 3, 224, 224), path, opset_version=13, input_names=["input"],
                      output_names=["logits"], do_constant_folding=True,
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--ptq-before", help="a ptq built from an earlier commit, measured the same way")
    ap.add_argument("--before-commit", default="", help="that build's commit, for the record")
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=128)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="ptq --threads and onnxruntime intra-op threads (0: all)")
    ap.add_argument("--ort-python", default=sys.executable, help="the Python that runs onnxruntime (needs h5py)")
    ap.add_argument("--target", type=float, default=1.5, help="the largest ptq / onnxruntime peak RSS ratio wanted")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="ptq-rss-")
    J = lambda name: os.path.join(tmp, name)  # noqa: E731
    model, data, archive, plan, qdq = J("efficientnet_b0.onnx"), J("images.h5"), J("calib.h5"), J("plan.json"), \
        J("plan-qdq.onnx")
    export(model)
    rng = np.random.default_rng(0)
    with h5py.File(data, "w") as f:
        f["images"] = rng.integers(0, 256, size=(a.images, 224, 224, 3), dtype=np.uint8)
        f["labels"] = np.random.default_rng(1).integers(0, 1000, size=a.images).astype(np.int64)
    common = ["--model", model, "--data", data, "--layout", "NHWC", "--preprocess", PREPROCESS, "--batch",
              str(a.batch), "--device", "cpu"] + (["--threads", str(a.threads)] if a.threads else [])

    # the plan, from the build measured (the same plan file for both builds)
    timed([a.ptq, "calibrate", *common, "--out", archive])
    timed([a.ptq, "plan", archive, "--model", model, "--out", plan, "--quiet"])
    timed([a.ptq, "export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq, "--quiet"])

    builds = [("after", a.ptq, commit())]
    if a.ptq_before:
        builds.insert(0, ("before", a.ptq_before, a.before_commit or "earlier build"))
    got = {}
    for name, ptq, _ in builds:
        got[(name, "eval")] = timed([ptq, "eval", *common, "--logits", J(f"logits-{name}.npy")])
        got[(name, "validate")] = timed([ptq, "validate", *common, "--plan", plan, "--report", J(f"validate-{name}")])
    script = J("ort_run.py")
    with open(script, "w") as f:
        f.write(ORT_RUN)
    ort_args = [a.ort_python, script, data, str(a.images), str(a.batch), str(a.threads)]
    got[("ort", "eval")] = timed([*ort_args, model])
    got[("ort", "validate")] = timed([*ort_args, model, qdq])

    same = []
    if a.ptq_before:
        same.append(("eval logits (.npy)", filecmp.cmp(J("logits-before.npy"), J("logits-after.npy"), shallow=False)))
        same.append(("validate.json", filecmp.cmp(J("validate-before/validate.json"), J("validate-after/validate.json"),
                                                  shallow=False)))

    now = datetime.datetime.now(datetime.timezone.utc)
    text = ["# Host peak RSS: ptq eval and validate against onnxruntime, efficientnet_b0 on the CPU",
            "",
            f"- date: {now:%Y-%m-%d %H:%M} UTC",
            f"- machine: {cpu_model()} ({os.cpu_count()} cores), {platform.system()} {platform.release()}",
            f"- command: `python3 bench/rss_vs_ort.py --ptq {a.ptq}"
            + (f" --ptq-before {a.ptq_before} --before-commit {a.before_commit}" if a.ptq_before else "")
            + f" --images {a.images} --batch {a.batch} --out {a.out}`",
            f"- ptq commit: {commit()}" + (f"; before: {builds[0][2]}" if a.ptq_before else ""),
            f"- model: torchvision {torchvision.__version__} efficientnet_b0, random weights (seed 0), "
            f"torch {torch.__version__} torch.onnx.export opset 13, dynamic batch",
            f"- data: {a.images} random uint8 224x224x3 images (HDF5, NHWC), batch {a.batch}, "
            f"threads {a.threads or 'all'}; ptq `--device cpu`",
            "- ptq validate's plan: `ptq calibrate` + `ptq plan` (defaults) of these images; onnxruntime's validate "
            "peer runs the FP32 model and `ptq export --format qdq` of that plan on every batch, in one process",
            "- peak RSS: the maximum resident set size of each process (/usr/bin/time's %M)",
            "",
            "| command | ptq before MiB | ptq MiB | onnxruntime MiB | ptq / onnxruntime | wanted | |",
            "|---|---|---|---|---|---|---|"]
    n_met = 0
    for cmd in ("eval", "validate"):
        mine, peer = got[("after", cmd)][2], got[("ort", cmd)][2]
        before = f"{got[('before', cmd)][2]:.0f}" if a.ptq_before else "-"
        ok = mine <= a.target * peer
        n_met += ok
        text.append(f"| {cmd} | {before} | {mine:.0f} | {peer:.0f} | {mine / peer:.2f}x | <= {a.target}x | "
                    f"{'met' if ok else 'MISSED'} |")
    text += ["", f"{n_met} of 2 met. Against onnxruntime running the FP32 model alone "
             f"({got[('ort', 'eval')][2]:.0f} MiB), ptq validate is "
             f"{got[('after', 'validate')][2] / got[('ort', 'eval')][2]:.2f}x.", "", "| run | wall s |", "|---|---|"]
    for (name, cmd), (secs, _, _) in got.items():
        who = "onnxruntime" if name == "ort" else f"ptq {name}"
        text.append(f"| {who} {cmd} | {secs:.1f} |")
    if same:
        text += ["", "Before against after: " + "; ".join(f"{what} {'identical' if ok else 'DIFFERENT'}"
                                                         for what, ok in same) + "."]
    write_result(a.out, text + [""])


if __name__ == "__main__":
    main()
