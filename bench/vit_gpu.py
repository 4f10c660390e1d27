#!/usr/bin/env python3
"""ViT-B/16 on the GPU: ptq and PyTorch side by side in one run.

  (a) ptq FP32 forward (`ptq eval --device cuda`) against PyTorch FP32
      inference (TF32 off; nn.MultiheadAttention's own fast path, whatever
      attention kernel PyTorch picks for FP32);
  (b) ptq FP32 calibration with every observer (`ptq calibrate`) against
      PyTorch forward hooks with a running |x| max and a 2048-bin
      torch.histc on every Linear, LayerNorm, GELU and attention output
      (bench/resnet50_targets.py's HistcHooks, on a transformer's modules);
  (c) ptq `--math tf32` calibration against PyTorch TF32 inference;
  and the agreement of ptq's FP32 logits with PyTorch's (argmax, largest
  relative difference).
Where the time goes on ptq's side: one `ptq eval --profile` run's table,
and one of `ptq calibrate --math tf32 --profile`.
--variant VAR=VALUE (repeatable) also times `ptq eval` with that variable
in its environment (e.g. PTQ_CUDNN_SPATIAL=0: convolutions through
im2col + cuBLAS rather than cuDNN) and records its profile.

Model: torchvision vit_b_16, random weights (seed 0; the head, which torchvision
starts at zero, drawn too), exported with
bench/resnet50_gpu.py's export (TorchScript exporter, opset 17, dynamic
batch). Data: random uint8 224x224x3 in HDF5 (NHWC).
    python3 bench/vit_gpu.py --ptq bundle/bin/ptq --out $OUT/vit.md
    python3 bench/vit_gpu.py --smoke --images 4 --batch 2 --repeat 1 --out /tmp/vit.md   (no GPU: checks the script)
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch
import torchvision

from benchlib import commit, cpu_model, write_result
from resnet50_gpu import PREPROCESS, export, gpu_batches
from resnet50_targets import HistcHooks, best_json, run, torch_rates


class VitHooks(HistcHooks):
    """HistcHooks on what a ViT yields: Linear, LayerNorm, GELU and attention outputs."""
    KINDS = (torch.nn.Linear, torch.nn.LayerNorm, torch.nn.GELU, torch.nn.Conv2d, torch.nn.MultiheadAttention)

    def hook(self, mod, inp, out):
        self.observe(out[0] if isinstance(out, tuple) else out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="no GPU: everything on the CPU (use tiny sizes)")
    ap.add_argument("--variant", action="append", default=[], metavar="VAR=VALUE",
                    help="also time ptq eval (and its profile) with VAR=VALUE in the environment")
    ap.add_argument("--calib-variant", action="append", default=[], metavar="VAR=VALUE",
                    help="also time ptq calibrate --math tf32 (and its profile) with VAR=VALUE in the environment")
    ap.add_argument("--work", help="make the model and images in this folder and keep them (default: a temporary "
                    "folder)")
    a = ap.parse_args()
    if not a.smoke and not torch.cuda.is_available():
        sys.exit("vit_gpu: PyTorch sees no GPU")
    dev_name = "cpu" if a.smoke else "cuda"

    tmp = a.work or tempfile.mkdtemp(prefix="ptq-vit-")
    os.makedirs(tmp, exist_ok=True)
    onnx_path, h5_path = os.path.join(tmp, "vit_b_16.onnx"), os.path.join(tmp, "images.h5")
    torch.manual_seed(0)
    net = torchvision.models.vit_b_16().eval()
    with torch.no_grad():  # torchvision starts the head at zero: every logit would be 0
        torch.nn.init.normal_(net.heads.head.weight, std=0.02)
    exporter = export(net, onnx_path)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(a.images, 224, 224, 3), dtype=np.uint8)
    with h5py.File(h5_path, "w") as f:
        f["images"] = images
        f["labels"] = rng.integers(0, 1000, size=a.images).astype(np.int64)

    common = ["--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess", PREPROCESS,
              "--batch", str(a.batch), "--device", dev_name]
    ev, ev_rates = best_json([a.ptq, "eval", *common, "--json"], a.repeat)
    cal, cal_rates = best_json([a.ptq, "calibrate", *common, "--out", os.path.join(tmp, "calib.h5"), "--json"],
                               a.repeat)
    cal32, cal32_rates = best_json([a.ptq, "calibrate", *common, "--math", "tf32", "--out",
                                    os.path.join(tmp, "calib-tf32.h5"), "--json"], a.repeat)
    logits_path = os.path.join(tmp, "ptq.npy")
    run([a.ptq, "eval", *common, "--logits", logits_path])
    prof = subprocess.run([a.ptq, "eval", *common, "--profile"], capture_output=True, text=True)
    profile = prof.stderr.strip().splitlines()
    cprof = subprocess.run([a.ptq, "calibrate", *common, "--math", "tf32", "--out", os.path.join(tmp, "calib-p.h5"),
                            "--profile"], capture_output=True, text=True)
    variants = []
    for v in a.variant:
        var, _, value = v.partition("=")
        os.environ[var] = value
        vev, vrates = best_json([a.ptq, "eval", *common, "--json"], a.repeat)
        vprof = subprocess.run([a.ptq, "eval", *common, "--profile"], capture_output=True, text=True)
        del os.environ[var]
        variants.append((v, vev, vrates, vprof))
    calib_variants = []
    for v in a.calib_variant:
        var, _, value = v.partition("=")
        os.environ[var] = value
        vcal, vrates = best_json([a.ptq, "calibrate", *common, "--math", "tf32", "--out",
                                  os.path.join(tmp, "calib-v.h5"), "--json"], a.repeat)
        vprof = subprocess.run([a.ptq, "calibrate", *common, "--math", "tf32", "--out",
                                os.path.join(tmp, "calib-vp.h5"), "--profile"], capture_output=True, text=True)
        del os.environ[var]
        same = open(os.path.join(tmp, "calib-v.h5"), "rb").read() == open(os.path.join(tmp, "calib-tf32.h5"),
                                                                          "rb").read()
        calib_variants.append((v, vcal, vrates, vprof, same))

    torch.backends.cudnn.benchmark = True
    dev = torch.device(dev_name)
    gnet = net.to(dev).eval()
    batches = gpu_batches(images, a.batch, dev)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    with torch.no_grad():
        ref = torch.cat([gnet(b) for b in batches]).cpu().numpy()
    t_fp32, t_fp32_all = torch_rates(gnet, batches, a.repeat)
    hooks = VitHooks(gnet)
    t_hist, t_hist_all = torch_rates(gnet, batches, a.repeat, hooks)
    n_hooked = hooks.n_tensors
    hooks.remove()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    t_tf32, t_tf32_all = torch_rates(gnet, batches, a.repeat)

    got = np.load(logits_path)
    rel = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    agree = float(np.mean(got.argmax(1) == ref.argmax(1)))

    def steady(d):
        return d.get("images_per_s_steady", d["images_per_s"])

    now = datetime.datetime.now(datetime.timezone.utc)
    gpu_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (--smoke)"
    text = ["# ViT-B/16 on the GPU: ptq against PyTorch, one run",
            "",
            f"- ptq commit: {commit()}",
            f"- date: {now:%Y-%m-%d %H:%M} UTC",
            f"- machine: {gpu_name}, {cpu_model()} ({os.cpu_count()} cores), {platform.system()} {platform.release()}",
            f"- command: `python3 bench/vit_gpu.py {' '.join(sys.argv[1:])}`",
            f"- model: torchvision vit_b_16, random weights (seed 0), {exporter}, dynamic batch",
            f"- data: {a.images} random uint8 224x224x3 images (HDF5, NHWC), batch {a.batch}, best of {a.repeat}",
            f"- PyTorch {torch.__version__}, inference on preprocessed tensors already on the device; "
            f"hook-and-histc: {n_hooked} tensors a batch",
            f"- FP32 logits, ptq against PyTorch: argmax agree {agree:.4f}, largest difference {rel:.2e} of the "
            f"largest logit",
            "",
            "| ratio | got |",
            "|---|---|",
            f"| (a) FP32 forward: ptq eval (steady) / PyTorch FP32 | {steady(ev) / t_fp32:.2f}x |",
            f"| (b) FP32 calibration: ptq calibrate (steady) / PyTorch hooks + histc | {steady(cal) / t_hist:.2f}x |",
            f"| (b) FP32 calibration: ptq calibrate / ptq eval (steady) | {steady(cal) / steady(ev):.2f}x |",
            f"| (c) TF32: ptq calibrate --math tf32 (steady) / PyTorch TF32 inference | "
            f"{steady(cal32) / t_tf32:.2f}x |",
            "",
            "| run | img/s all batches | img/s after the first | wall s | all steady rates |",
            "|---|---|---|---|---|"]
    for name, d, rates in (("ptq eval FP32", ev, ev_rates), ("ptq calibrate FP32", cal, cal_rates),
                           ("ptq calibrate TF32", cal32, cal32_rates)):
        text.append(f"| {name} | {d['images_per_s']:.0f} | {steady(d):.0f} | {d['wall_s']:.2f} | "
                    f"{', '.join(f'{r:.0f}' for r in rates)} |")
    text += [f"| PyTorch FP32 | | {t_fp32:.0f} | | {', '.join(f'{r:.0f}' for r in t_fp32_all)} |",
             f"| PyTorch FP32 + hooks + histc | | {t_hist:.0f} | | {', '.join(f'{r:.0f}' for r in t_hist_all)} |",
             f"| PyTorch TF32 | | {t_tf32:.0f} | | {', '.join(f'{r:.0f}' for r in t_tf32_all)} |",
             "", f"`ptq eval --profile` (exit {prof.returncode}; on a GPU it waits for each node):", "", "```",
             *profile, "```",
             "", f"`ptq calibrate --math tf32 --profile` (exit {cprof.returncode}):", "", "```",
             *cprof.stderr.strip().splitlines(), "```"]
    for v, vev, vrates, vprof in variants:
        text += ["", f"## Variant {v}", "",
                 f"ptq eval FP32 with `{v}`: {vev['images_per_s']:.0f} img/s all batches, {steady(vev):.0f} after "
                 f"the first ({', '.join(f'{r:.0f}' for r in vrates)}), {steady(vev) / t_fp32:.2f}x PyTorch FP32",
                 "", f"`ptq eval --profile` with `{v}` (exit {vprof.returncode}):", "", "```",
                 *vprof.stderr.strip().splitlines(), "```"]
    for v, vcal, vrates, vprof, same in calib_variants:
        text += ["", f"## Calibration variant {v}", "",
                 f"ptq calibrate --math tf32 with `{v}`: {vcal['images_per_s']:.0f} img/s all batches, "
                 f"{steady(vcal):.0f} after the first ({', '.join(f'{r:.0f}' for r in vrates)}), "
                 f"{steady(vcal) / t_tf32:.2f}x PyTorch TF32; archive "
                 f"{'the same bytes as' if same else 'DIFFERS from'} the default's", "",
                 f"`ptq calibrate --math tf32 --profile` with `{v}` (exit {vprof.returncode}):", "", "```",
                 *vprof.stderr.strip().splitlines(), "```"]
    write_result(a.out, text)


if __name__ == "__main__":
    main()
