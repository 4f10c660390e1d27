#!/usr/bin/env python3
"""cuDNN tuning (kernels/cuda/cudnn.cu's tune()) changes no bit on ResNet-50:
the calibration archive and eval's FP32 logits with tuning at batch 256,
and with PTQ_CUDNN_TUNE=0 at batch 100, compared byte for byte; the steady
eval rate of each. Also calibration with PTQ_EPILOGUE=0, where each Conv,
Add and Relu runs and is observed apart instead of one pass per chain
(runtime/exec.c's run_observed_chain): its archive must be the same bytes
(its eval logits, from Add and Relu outside cuDNN's epilogue, are shown,
not required). The model and images are bench/resnet50_gpu.py's. --math
tf32 does all of it under TF32 (where the activations run channels last).
Runs on the GPU machine:
    python3 bench/cudnn_tune_identity.py --ptq bundle/bin/ptq --out $OUT/tune.md [--images 768] [--math tf32]
"""
import argparse
import datetime
import filecmp
import json
import os
import subprocess
import sys

import numpy as np

from benchlib import commit, write_result
from resnet50_gpu import PREPROCESS, model_and_images


def run(cmd, tune, chains=True):
    env = dict(os.environ)
    if not tune:
        env["PTQ_CUDNN_TUNE"] = "0"
    if not chains:
        env["PTQ_EPILOGUE"] = "0"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptq", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=768)
    ap.add_argument("--math", default="fp32", choices=("fp32", "tf32"))
    a = ap.parse_args()
    onnx_path, h5_path = model_and_images("ptq-tune-", a.images)
    tmp = os.path.dirname(onnx_path)
    common = ["--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess", PREPROCESS,
              "--device", "cuda", "--math", a.math]
    rows, same = [], []
    out = {}
    for tune, batch, chains in ((True, 256, True), (False, 100, True), (True, 100, True), (False, 256, True),
                                (True, 256, False)):
        tag = f"{'tuned' if tune else 'untuned'}-b{batch}{'' if chains else '-no-chains'}"
        archive, logits = os.path.join(tmp, f"{tag}.h5"), os.path.join(tmp, f"{tag}.npy")
        cal = json.loads(run([a.ptq, "calibrate", *common, "--batch", str(batch), "--out", archive, "--json"], tune,
                             chains))
        ev = json.loads(run([a.ptq, "eval", *common, "--batch", str(batch), "--logits", logits, "--json"], tune,
                            chains))
        out[tag] = (archive, logits)
        what = ("on" if tune else "PTQ_CUDNN_TUNE=0") + ("" if chains else ", PTQ_EPILOGUE=0")
        rows.append(f"| {what} | {batch} | {ev['images_per_s_steady']:.0f} | {cal['images_per_s_steady']:.0f} |")
    ref_archive, ref_logits = out["untuned-b100"]
    for tag, (archive, logits) in out.items():
        if tag == "untuned-b100":
            continue
        a_same = filecmp.cmp(archive, ref_archive, shallow=False)
        l_same = np.load(logits).tobytes() == np.load(ref_logits).tobytes()
        l_word = ("identical" if l_same else "DIFFER") if "no-chains" not in tag else \
            ("identical" if l_same else "differ (not required: Add and Relu outside cuDNN's epilogue)")
        same.append(f"- {tag}: archive {'identical' if a_same else 'DIFFERS'}, logits {l_word} (against untuned-b100)")
    lines = [
        f"# cuDNN tuning and chain observation on ResNet-50 ({a.math}): the same bits, and the rates",
        "",
        f"- ptq commit: {commit()}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- command: `python3 bench/cudnn_tune_identity.py --ptq {a.ptq} --out {a.out} --images {a.images} --math {a.math}`",
        f"- model and data: bench/resnet50_gpu.py's (torchvision resnet50, random weights, BatchNorm folded, "
        f"opset 17; {a.images} random uint8 224x224x3 images)",
        "",
        "| tuning | batch | eval img/s (steady) | calibrate img/s (steady) |",
        "|---|---|---|---|",
        *rows,
        "",
        *same,
        "",
    ]
    write_result(a.out, lines)
    if any("DIFFER" in s for s in same):
        sys.exit(1)


if __name__ == "__main__":
    main()
