#!/usr/bin/env python3
"""Where ptq's GPU time goes on ResNet-50, by op type, in one run on the GPU
machine (scripts/gpu-check.sh profile50): `--profile` tables of eval (the
Conv -> Add -> Relu chains fused in cuDNN's epilogue), eval with
PTQ_EPILOGUE=0 (every op apart, as calibration runs them), calibrate (with
its observers' share) and validate with the default INT8 plan (the FP32 and
the quantized run, and the plan's rounding; and with --reference, as target
(d) times it), each with the command's timeline (session, first batch, the
rest, reports), next to each command's steady
rate from its JSON, which runs without --profile's waits. Model and data as
bench/resnet50_gpu.py (torchvision resnet50, random weights, BatchNorm
folded, opset 17; random uint8 224x224x3 images in HDF5, batch 256).

    python3 bench/resnet50_profile.py --ptq bundle/bin/ptq --out $OUT/profile50.md
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

from benchlib import commit, write_result
from resnet50_gpu import PREPROCESS, model_and_images


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"resnet50_profile: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
    return p


def table(stderr):
    """The --profile table: the lines from its header on, notes left out."""
    lines = stderr.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("time per op type")), len(lines))
    return "\n".join(l for l in lines[start:] if "note:" not in l)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True, help="results markdown")
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    onnx_path, h5_path = model_and_images("ptq-r50prof-", a.images)
    tmp = os.path.dirname(onnx_path)
    data = ["--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess", PREPROCESS,
            "--device", "cuda", "--batch", str(a.batch)]
    arc, plan = os.path.join(tmp, "calib.h5"), os.path.join(tmp, "plan.json")
    runs = [
        ("eval", [a.ptq, "eval", *data], None),
        ("eval, PTQ_EPILOGUE=0 (no fused chains)", [a.ptq, "eval", *data], {"PTQ_EPILOGUE": "0"}),
        ("calibrate (every tensor observed)", [a.ptq, "calibrate", *data, "--out", arc], None),
    ]
    rows, tables = [], []
    for name, cmd, extra in runs:
        env = dict(os.environ, **(extra or {}))
        rep = json.loads(run(cmd + ["--json"], env).stdout)
        rows.append((name, rep.get("images_per_s_steady", 0.0), rep.get("images_per_s", 0.0)))
        prof = run(cmd + ["--profile", "--json"], env)
        tables.append((name, table(prof.stderr)))
        print(name, rows[-1][1], flush=True)
    run([a.ptq, "plan", arc, "--model", onnx_path, "--out", plan, "--quiet"])
    t0 = datetime.datetime.now()
    run([a.ptq, "validate", *data, "--plan", plan, "--report", os.path.join(tmp, "rep")])
    wall = (datetime.datetime.now() - t0).total_seconds()
    rows.append(("validate, default INT8 plan (wall, whole command)", 0.0, a.images / wall))
    prof = run([a.ptq, "validate", *data, "--plan", plan, "--report", os.path.join(tmp, "rep2"), "--profile"])
    tables.append(("validate, default INT8 plan", table(prof.stderr)))
    # as target (d) runs it: the FP32 side from eval's logits, FP32 on the first batch only
    ref = os.path.join(tmp, "fp32.npy")
    run([a.ptq, "eval", *data, "--logits", ref])
    for r in range(2):  # the second with warm caches, as the targets' best of three
        prof = run([a.ptq, "validate", *data, "--plan", plan, "--reference", ref,
                    "--report", os.path.join(tmp, f"rep-ref{r}"), "--profile"])
    tables.append(("validate --reference (eval's FP32 logits), default INT8 plan", table(prof.stderr)))

    lines = [f"# ResNet-50 on the GPU: ptq's time by op type ({datetime.date.today()})", "",
             f"- ptq commit: {commit()}", f"- machine: {platform.node()}",
             f"- command: `python3 bench/resnet50_profile.py --ptq {a.ptq} --out {a.out}`",
             f"- model and data: torchvision resnet50 (random weights, BatchNorm folded, opset 17), {a.images} random "
             f"uint8 224x224x3 images, batch {a.batch}; rates from each command's JSON without --profile",
             "", "| run | img/s after the first batch | img/s all batches |", "|---|---|---|"]
    lines += [f"| {n} | {s:.0f} | {r:.0f} |" for n, s, r in rows]
    for name, t in tables:
        lines += ["", f"## {name}, --profile", "", "```", t, "```"]
    write_result(a.out, lines + [""])


if __name__ == "__main__":
    main()
