#!/usr/bin/env python3
"""Channels-last activations on ResNet-50 (runtime/layout.c): ptq eval and
calibrate, FP32 and TF32, with the layout's default, PTQ_NHWC=0 (every
tensor [N, C, H, W]) and PTQ_NHWC=1 (channels last in FP32 too), batch
256; the best steady rate of each, and each run's logits against FP32
[N, C, H, W] (largest difference relative to the largest logit) and its
archive against the same math's other layout (bytes). The model and images
are bench/resnet50_gpu.py's. Runs on the GPU machine:
    python3 bench/resnet50_nhwc.py --ptq bundle/bin/ptq --out $OUT/nhwc.md [--images 1024] [--repeat 2]
"""
import argparse
import datetime
import filecmp
import json
import os

import numpy as np

from benchlib import commit, write_result
from resnet50_gpu import PREPROCESS, model_and_images, run_ptq


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptq", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    onnx_path, h5_path = model_and_images("ptq-nhwc-", a.images)
    tmp = os.path.dirname(onnx_path)
    common = ["--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess", PREPROCESS,
              "--device", "cuda", "--batch", "256", "--json"]
    configs = (("fp32", "0"), ("fp32", "1"), ("tf32", "0"), ("tf32", ""))
    rows, logits, archives = [], {}, {}
    for math, nhwc in configs:
        env = dict(os.environ)
        env.pop("PTQ_NHWC", None)
        if nhwc:
            env["PTQ_NHWC"] = nhwc
        tag = f"{math}-nhwc{nhwc or 'default'}"
        lg, ar = os.path.join(tmp, f"{tag}.npy"), os.path.join(tmp, f"{tag}.h5")
        ev = max((json.loads(run_ptq([a.ptq, "eval", *common, "--math", math, "--logits", lg], env).stdout)
                  for _ in range(a.repeat)), key=lambda j: j["images_per_s_steady"])
        cal = max((json.loads(run_ptq([a.ptq, "calibrate", *common, "--math", math, "--out", ar], env).stdout)
                   for _ in range(a.repeat)), key=lambda j: j["images_per_s_steady"])
        logits[tag], archives[tag] = np.load(lg), ar
        layout = {"0": "[N, C, H, W] (PTQ_NHWC=0)", "1": "channels last (PTQ_NHWC=1)",
                  "": "default (channels last)"}[nhwc]
        rows.append([math, layout, ev["images_per_s_steady"], cal["images_per_s_steady"], tag])
    ref = logits["fp32-nhwc0"]
    scale = float(np.abs(ref).max())
    table = []
    for math, layout, ev_rate, cal_rate, tag in rows:
        rel = float(np.abs(logits[tag] - ref).max()) / scale
        table.append(f"| {math} | {layout} | {ev_rate:.0f} | {cal_rate:.0f} | {rel:.2e} |")
    same = []
    for m, x, y in (("fp32", "fp32-nhwc0", "fp32-nhwc1"), ("tf32", "tf32-nhwc0", "tf32-nhwcdefault")):
        a_same = filecmp.cmp(archives[x], archives[y], shallow=False)
        agree = float((logits[x].argmax(1) == logits[y].argmax(1)).mean())
        same.append(f"- {m}: archive {'identical' if a_same else 'differs'} between the layouts; "
                    f"top-1 predictions agree on {agree:.2%} of {len(logits[x])} images")
    lines = [
        "# ResNet-50 with channels-last activations: rates and logits",
        "",
        f"- ptq commit: {commit()}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- command: `python3 bench/resnet50_nhwc.py --ptq {a.ptq} --out {a.out} --images {a.images} "
        f"--repeat {a.repeat}`",
        f"- model and data: bench/resnet50_gpu.py's ({a.images} random uint8 224x224x3 images), batch 256; "
        f"best steady rate of {a.repeat} runs",
        "",
        "| math | activations | eval img/s (steady) | calibrate img/s (steady) | logits: max diff / max |logit| vs FP32 [N, C, H, W] |",
        "|---|---|---|---|---|",
        *table,
        "",
        *same,
        "",
    ]
    write_result(a.out, lines)


if __name__ == "__main__":
    main()
