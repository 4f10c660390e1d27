#!/usr/bin/env python3
"""Every pipeline command on ResNet-50 on the GPU under each --math, side by
side in one run (scripts/gpu-check.sh math50): eval and calibrate (steady
img/s from their JSON), sensitivity (wall seconds, its report's phases), the
default plan's validate, `plan --budget` on that sensitivity report, and
`ptq run` with --budget (every stage from scratch). It records what each math
costs against fp32 and that each command runs under it.

Model and data as bench/resnet50_sensitivity.py: torchvision resnet50, random
weights, BatchNorm folded, ONNX opset 17, dynamic batch; random uint8
224x224x3 images (NHWC in HDF5) labelled with PyTorch's FP32 predictions,
and other random images to calibrate.
    python3 bench/resnet50_math.py --ptq bundle/bin/ptq --out $OUT/math50.md
--smoke checks the script on a machine without a GPU: the demo model on
random 28x28 images, --device cpu, tiny sizes.
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

from benchlib import commit, cpu_model, write_result


def run(cmd):
    """(stdout, stderr, wall seconds) of cmd; exits naming it when it fails."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"resnet50_math: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p.stdout, p.stderr, secs


def make_sets(a, tmp):
    """(model path, exporter line, validation set, calibration set, common flags)."""
    rng = np.random.default_rng(1)
    val_h5, cal_h5 = os.path.join(tmp, "val.h5"), os.path.join(tmp, "cal.h5")
    if a.smoke:
        model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "fmnist_resnet.onnx")
        with h5py.File(val_h5, "w") as f:
            f["images"] = rng.integers(0, 256, size=(a.images, 28, 28), dtype=np.uint8)
            f["labels"] = rng.integers(0, 10, size=a.images).astype(np.int64)
        with h5py.File(cal_h5, "w") as f:
            f["images"] = rng.integers(0, 256, size=(a.calib_images, 28, 28), dtype=np.uint8)
        return model, "the demo model (smoke)", val_h5, cal_h5, ["--device", "cpu", "--batch", str(a.batch)]
    from resnet50_gpu import PREPROCESS, export, folded_resnet50, torch_predictions
    model = os.path.join(tmp, "resnet50.onnx")
    net = folded_resnet50()
    exporter = export(net, model)
    val = rng.integers(0, 256, size=(a.images, 224, 224, 3), dtype=np.uint8)
    cal = rng.integers(0, 256, size=(a.calib_images, 224, 224, 3), dtype=np.uint8)
    with h5py.File(val_h5, "w") as f:
        f["images"] = val
        f["labels"] = torch_predictions(net, val, a.batch)
    with h5py.File(cal_h5, "w") as f:
        f["images"] = cal
    return model, exporter, val_h5, cal_h5, ["--layout", "NHWC", "--preprocess", PREPROCESS, "--device", "cuda",
                                             "--batch", str(a.batch)]


def one_math(a, math, model, val_h5, cal_h5, common, tmp):
    """The figures of every command under math (a dict)."""
    d = os.path.join(tmp, math)
    os.makedirs(d)
    mflag = ["--math", math]
    r = {}
    best = None
    for _ in range(a.repeat):
        out, _, secs = run([a.ptq, "eval", "--model", model, "--data", val_h5, "--json"] + common + mflag)
        e = json.loads(out)
        rate = e.get("images_per_s_steady", e["images_per_s"])
        if best is None or rate > best[0]:
            best = (rate, secs, e["top1"])
    r["eval"] = best
    archive = os.path.join(d, "calib.h5")
    out, _, secs = run([a.ptq, "calibrate", "--model", model, "--data", cal_h5, "--out", archive, "--json"]
                       + common + mflag)
    c = json.loads(out)
    r["calibrate"] = (c.get("images_per_s_steady", c["images_per_s"]), secs)
    plan = os.path.join(d, "plan.json")
    run([a.ptq, "plan", archive, "--model", model, "--out", plan])
    _, _, secs = run([a.ptq, "validate", "--model", model, "--plan", plan, "--data", val_h5, "--report",
                      os.path.join(d, "val")] + common + mflag)
    v = json.load(open(os.path.join(d, "val", "validate.json")))
    r["validate"] = (secs, v)
    sens = os.path.join(d, "sens.json")
    _, _, secs = run([a.ptq, "sensitivity", "--model", model, "--calib", archive, "--data", val_h5,
                      "--samples", str(a.sens_images), "--out", sens] + common + mflag)
    r["sensitivity"] = (secs, json.load(open(sens)))
    bplan = os.path.join(d, "plan-budget.json")
    out, err, secs = run([a.ptq, "plan", archive, "--model", model, "--sensitivity", sens, "--budget",
                          str(a.budget), "--data", val_h5, "--samples", str(a.sens_images), "--out", bplan]
                         + common + mflag)
    r["budget"] = (secs, json.load(open(bplan)), (out + err).strip().splitlines()[-1:])
    rundir = os.path.join(d, "run")
    _, _, secs = run([a.ptq, "run", "--model", model, "--calib-data", cal_h5, "--data", val_h5, "--out", rundir,
                      "--budget", str(a.budget), "--samples", str(a.sens_images), "--calib-samples", "0"]
                     + common + mflag)
    r["run"] = (secs, sorted(os.listdir(rundir)))
    r["archive_bytes"] = open(archive, "rb").read()
    return r


# the table's figures: (key, 1 for a rate in img/s where higher is faster, 0 for seconds)
FIGURES = [("eval", 1), ("calibrate", 1), ("validate", 0), ("sensitivity", 0), ("budget", 0), ("run", 0)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True)
    ap.add_argument("--maths", default="fp32,tf32,fp64")
    ap.add_argument("--images", type=int, default=1024, help="validation images (eval, validate)")
    ap.add_argument("--sens-images", type=int, default=256, help="images sensitivity and the budget measure on")
    ap.add_argument("--calib-images", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--budget", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ptq-math50-")
    model, exporter, val_h5, cal_h5, common = make_sets(a, tmp)
    maths = a.maths.split(",")
    res = {}
    for m in maths:
        print(f"== --math {m}", flush=True)
        res[m] = one_math(a, m, model, val_h5, cal_h5, common, tmp)
    base = maths[0]

    def ratio(m, fig, faster_is_bigger):
        x, y = res[m][fig][0], res[base][fig][0]
        return x / y if faster_is_bigger else y / x

    rows = []
    for m in maths:
        r = res[m]
        s = r["sensitivity"][1]
        cells = " | ".join(f"{r[f][0]:.{0 if rate else 1}f} ({ratio(m, f, rate):.2f}x)" for f, rate in FIGURES)
        rows.append(f"| {m} | {cells} | {100 * r['eval'][2]:.2f}% / {100 * s['default_plan']['top1']:.2f}% |")
    checks = []
    for m in maths:
        r = res[m]
        b = r["budget"][1]
        checks.append(f"- {m}: sensitivity measured {len(r['sensitivity'][1]['tensors'])} tensors, math "
                      f"`{r['sensitivity'][1].get('math', '?')}`; the budgeted plan's method `{b.get('method')}`, "
                      f"its last line: `{' '.join(r['budget'][2])}`; `ptq run` wrote {', '.join(r['run'][1])}")
        if m != base:
            same = r["archive_bytes"] == res[base]["archive_bytes"]
            checks.append(f"  - its archive {'is' if same else 'is not'} byte-identical to {base}'s")
    now = datetime.datetime.now(datetime.timezone.utc)
    try:
        import torch
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    except ImportError:
        gpu = "no torch"
    text = f"""# Every pipeline command on ResNet-50 under each --math{' (smoke)' if a.smoke else ''}

- ptq commit: {commit()}
- date: {now:%Y-%m-%d %H:%M} UTC
- machine: {gpu}, {cpu_model()} ({os.cpu_count()} cores), {platform.system()} {platform.release()}
- command: `python3 bench/resnet50_math.py {' '.join(sys.argv[1:])}`
- model: {exporter}; flags `{' '.join(common)}`
- data: {a.images} random images labelled with PyTorch's FP32 predictions (eval, validate); sensitivity,
  `plan --budget {a.budget}` and `ptq run --budget {a.budget}` measure on {a.sens_images} of them
  (`--samples`); {a.calib_images} other random images calibrate
- eval and calibrate: steady img/s from their JSON (eval best of {a.repeat}); the others: the command's wall
  seconds, one run each; in brackets the ratio to {base} (above 1: faster)

| math | eval img/s | calibrate img/s | validate s | sensitivity s | plan --budget s | ptq run s | top-1 FP32 / default plan |
|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + "\n\n" + "\n".join(checks) + "\n"
    write_result(a.out, [text])


if __name__ == "__main__":
    main()
