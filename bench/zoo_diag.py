#!/usr/bin/env python3
"""Which part of ptq's path moves a zoo model's FP32 logits: one torchvision
model, one opset, `ptq eval` under several environments (default; cuDNN off,
PTQ_CUDNN=0: im2col + cuBLAS; no fused epilogues, PTQ_EPILOGUE=0; grouped
convs off cuDNN, PTQ_CUDNN_GROUPED=0; sums in blocks, PTQ_KSPLIT=B (with
PTQ_CUDNN=0) or PTQ_CONV_SPLIT=T; ...),
each judged by bench/zoo_run.py's logits rule against the same onnxruntime
run and float64 / FP32 torch reference. Prints one line per environment.

    python3 bench/zoo_diag.py --ptq bundle/bin/ptq --model efficientnet_v2_l [--opset 13] [--images 256]
        [--device cuda] [--env PTQ_CUDNN=0 --env PTQ_EPILOGUE=0 ...] [--also-device cpu] [--pick 34,150]
        [--args "--math fp64"]
For each image judged against float64 it also prints each engine's distance
from the float64 logits relative to their norm: ptq, onnxruntime and each of
torch's FP32 engines, and onnxruntime with only its basic optimizations
(zoo_pipeline.logits_bound's yardstick).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import numpy as np  # noqa: E402

import export_zoo  # noqa: E402
import zoo_pipeline  # noqa: E402
from zoo_run import Reference  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--model", required=True)
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--device", default="cuda", help="ptq's --device")
    ap.add_argument("--torch-device", default="cuda", help="where torch prepares the model and the reference runs")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE[,NAME=VALUE...]: one more run with them set")
    ap.add_argument("--also-device", action="append", default=[], help="one more default run on this ptq --device")
    ap.add_argument("--args", action="append", default=[],
                    help="'ARG ...': one more run with these ptq eval arguments, e.g. '--math fp64'")
    ap.add_argument("--pick", default="", help="I,J,...: only these of the images (--device ref runs take minutes "
                                               "an image on the largest models)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ptq-zoo-diag-")
    images = zoo_pipeline.make_images(a.images, a.size, seed=7)  # zoo_run's images
    picked = [int(i) for i in a.pick.split(",")] if a.pick else list(range(a.images))
    images = images[picked]
    model = export_zoo.prepare(a.model, a.size, device=a.torch_device)
    path = export_zoo.export(a.model, work, [a.opset], a.size, model=model)[0]
    x = zoo_pipeline.model_input(images)
    ort = zoo_pipeline.ort_run(path, x)
    zoo_pipeline.write_h5(os.path.join(work, "data.h5"), images, ort.argmax(1))
    ref = Reference(a.model, a.size, model, x, a.torch_device)
    basic = {}  # onnxruntime's basic-optimization logits [1, classes] by image, run once whatever the runs ask

    def more(idx):
        new = [int(i) for i in idx if int(i) not in basic]
        if new:
            basic.update(zip(new, zoo_pipeline.ort_basic(path, x[new])))
        return np.stack([basic[int(i)] for i in idx])

    runs = ([("", a.device, "")] + [(env, a.device, "") for env in a.env] + [("", d, "") for d in a.also_device] +
            [("", a.device, args) for args in a.args])
    for env, device, args in runs:
        e = dict(os.environ)
        for kv in filter(None, env.split(",")):  # NAME=VALUE[,NAME=VALUE...]: all set in one run
            k, v = kv.split("=", 1)
            e[k] = v
        out = os.path.join(work, "fp32.npy")
        t0 = time.time()
        p = subprocess.run([a.ptq, "eval", "--model", path, "--data", os.path.join(work, "data.h5"), "--preprocess",
                            zoo_pipeline.PREPROCESS, "--batch", "16", "--device", device, "--logits", out] +
                           args.split(), env=e, capture_output=True, text=True)
        secs = time.time() - t0
        if p.returncode != 0:
            print(f"{env or args or 'default'}: ptq eval exit {p.returncode}: {p.stderr.strip()[-300:]}")
            continue
        ours = np.load(out)
        ok, rel_max, n_ill, ratio = zoo_pipeline.logits_bound(ours, ort, ref, more=more)
        what = (env or args or "default") + ("" if device == a.device else f", --device {device}")
        print(f"{a.model} opset {a.opset}, {what}: {'pass' if ok else 'FAIL'}, rel max {rel_max:.3g}, "
              f"ill {n_ill}, ratio {ratio if ratio is None else round(ratio, 3)}, eval {secs:.1f} s", flush=True)
        over = np.flatnonzero(np.linalg.norm(ours - ort, axis=1) / np.maximum(np.linalg.norm(ort, axis=1), 1e-30)
                              > 1e-4)
        if len(over):
            t, t32 = (np.asarray(v, np.float64) for v in ref(over))
            t32 = t32[:, None, :] if t32.ndim == 2 else t32
            t_basic = more(over)[:, 0]
            for k, i in enumerate(over):
                n = np.linalg.norm(t[k])
                engines = " ".join(f"{np.linalg.norm(t32[k, j] - t[k]) / n:.3g}" for j in range(t32.shape[1]))
                print(f"  image {picked[i]}: |f64| {n:.4g}; from float64: "
                      f"ptq {np.linalg.norm(ours[i] - t[k]) / n:.3g}, "
                      f"onnxruntime {np.linalg.norm(ort[i] - t[k]) / n:.3g} (basic optimizations "
                      f"{np.linalg.norm(t_basic[k] - t[k]) / n:.3g}), torch FP32 {engines}", flush=True)


if __name__ == "__main__":
    main()
