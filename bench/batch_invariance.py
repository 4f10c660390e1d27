#!/usr/bin/env python3
"""Whether ResNet-50's logits depend on the batch: ptq eval at batch 256,
again at 256 (run to run), and at 100, 64 and 1 (the first images only),
under each --math and PTQ_NHWC given; per configuration the images whose
logits differ from the first run's (count, first indices, largest
difference relative to the largest logit). The model and images are
bench/resnet50_gpu.py's. Runs on the GPU machine:
    python3 bench/batch_invariance.py --ptq bundle/bin/ptq --out $OUT/inv.md [--images 512] \\
        [--config tf32: --config tf32:0 --config fp32:1]
(--config MATH:PTQ_NHWC, empty for the default.) --features also compares
the final Gemm's input (the pooled features, made a second output of the
model), which tells the convolutions' part from the Gemm's.
"""
import argparse
import datetime
import os

import numpy as np

from benchlib import commit, write_result
from resnet50_gpu import PREPROCESS, model_and_images, run_ptq


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptq", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--config", action="append", default=None)
    ap.add_argument("--features", action="store_true")
    a = ap.parse_args()
    configs = a.config or ["tf32:", "tf32:0", "fp32:"]
    onnx_path, h5_path = model_and_images("ptq-inv-", a.images)
    tmp = os.path.dirname(onnx_path)
    outputs = [None]
    if a.features:
        import onnx
        m = onnx.load(onnx_path)
        gemm = [n for n in m.graph.node if n.op_type == "Gemm"][-1]
        m.graph.output.append(onnx.helper.make_tensor_value_info(gemm.input[0], onnx.TensorProto.FLOAT, None))
        onnx_path = os.path.join(tmp, "resnet50-features.onnx")
        onnx.save(m, onnx_path)
        outputs = [m.graph.output[0].name, gemm.input[0]]
    rows = []
    for cfg, output in [(c, o) for c in configs for o in outputs]:
        math, nhwc = cfg.split(":")
        env = dict(os.environ)
        env.pop("PTQ_NHWC", None)
        if nhwc:
            env["PTQ_NHWC"] = nhwc
        got = {}
        for tag, batch, limit in (("b256", 256, a.images), ("b256-again", 256, a.images), ("b100", 100, a.images),
                                  ("b64", 64, 128), ("b1", 1, 8)):
            path = os.path.join(tmp, f"{math}-{nhwc or 'default'}-{tag}.npy")
            pick = ["--output", output] if output else []
            run_ptq([a.ptq, "eval", "--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess",
                     PREPROCESS, "--device", "cuda", "--math", math, "--batch", str(batch), "--limit", str(limit),
                     "--logits", path, *pick], env)
            got[tag] = np.load(path)
        ref = got["b256"]
        scale = float(np.abs(ref).max())
        for tag in ("b256-again", "b100", "b64", "b1"):
            y = got[tag]
            r = ref[: len(y)]
            diff = np.any(y != r, axis=1)
            idx = np.nonzero(diff)[0]
            rel = float(np.abs(y - r).max()) / scale
            rows.append(f"| {math} | {nhwc or 'default'} | {output or 'logits'} | {tag} ({len(y)} images) | "
                        f"{int(diff.sum())} | "
                        f"{', '.join(map(str, idx[:8])) or '-'} | {rel:.2e} |")
    lines = [
        "# ResNet-50 logits against the batch they ran in",
        "",
        f"- ptq commit: {commit()}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- command: `python3 bench/batch_invariance.py --ptq {a.ptq} --out {a.out} --images {a.images} "
        + " ".join(f"--config {c}" for c in configs) + (" --features" if a.features else "") + "`",
        "",
        "| math | PTQ_NHWC | output | run | images differing from batch 256 | first of them | max diff / max |value| |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    write_result(a.out, lines)


if __name__ == "__main__":
    main()
