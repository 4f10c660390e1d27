#!/usr/bin/env python3
"""Exports torchvision classification models with random weights (fixed
seed, eval mode so BatchNorm uses its running statistics) to ONNX with a
dynamic batch dim, one file per model and opset: OUT/<model>-op<opset>.onnx
with input "input" [N, 3, S, S] and output "logits" [N, 1000]. Random
weights alone make activations vanish or blow up (MobileNetV3's logits are
around 1e-10) and predict one class for nearly every image, so before the
export, on 32 random images of scripts/zoo_pipeline.py (another seed than
the test images): every BatchNorm takes its running statistics from one
training-mode pass, then the last layer is recentred per class and scaled
so that the logits have mean 0 and standard deviation 1 over the images.
A model past protobuf's 2 GB (regnet_y_128gf: 644 M parameters, 2.6 GB)
is written with ONNX external data: its weights in one file
<model>-op<opset>.onnx.data beside the .onnx (torch writes external data by
itself above 2 GB; onnx, where installed, gathers torch's file per tensor
into that one; without onnx the model stays in torch's layout in the folder
<model>-op<opset>.export/). --external-data forces the format on any model.
Used by tests/zoo_test.py and bench/zoo_run.py; needs torch and torchvision
(Debian's python3-torch, python3-torchvision).

    scripts/export_zoo.py --out DIR [--opsets 13,17] [--size 224] [--external-data] MODEL ...
    scripts/export_zoo.py --list        # the models it knows
"""
import argparse
import os
import shutil
import sys

# every classification builder of torchvision 0.14 in the families of issue 18
FAMILIES = {
    "resnet": ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"],
    "resnext": ["resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d"],
    "wide_resnet": ["wide_resnet50_2", "wide_resnet101_2"],
    "mobilenet": ["mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large"],
    "efficientnet": [f"efficientnet_b{i}" for i in range(8)] + ["efficientnet_v2_s", "efficientnet_v2_m",
                                                                 "efficientnet_v2_l"],
    "regnet": [f"regnet_{k}_{s}" for k, sizes in (
        ("y", ["400mf", "800mf", "1_6gf", "3_2gf", "8gf", "16gf", "32gf", "128gf"]),
        ("x", ["400mf", "800mf", "1_6gf", "3_2gf", "8gf", "16gf", "32gf"])) for s in sizes],
    "squeezenet": ["squeezenet1_0", "squeezenet1_1"],
    "shufflenet": ["shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"],
    "densenet": ["densenet121", "densenet161", "densenet169", "densenet201"],
    "mnasnet": ["mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"],
    "googlenet": ["googlenet"],
    "inception": ["inception_v3"],
    "alexnet": ["alexnet"],
    "vgg": [f"vgg{d}{bn}" for d in (11, 13, 16, 19) for bn in ("", "_bn")],
    "convnext": ["convnext_tiny", "convnext_small", "convnext_base", "convnext_large"],
}
ALL = [m for ms in FAMILIES.values() for m in ms]


def family(name):
    return next(f for f, ms in FAMILIES.items() if name in ms)


def build(name, seed):
    import torch
    import torchvision
    torch.manual_seed(seed)
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs.update(aux_logits=False, init_weights=True)  # eval mode drops the aux heads anyway
    model = getattr(torchvision.models, name)(**kwargs)
    return model.eval()


def balance(model, size, seed):
    """BatchNorm statistics and the last layer with 1000 outputs (see above)."""
    import torch
    from zoo_pipeline import make_images, model_input
    x = torch.from_numpy(model_input(make_images(32, size, seed=1000 + seed))).to(next(model.parameters()).device)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average: after one pass, that batch's statistics
        model.train()
        with torch.no_grad():
            model(x)
        model.eval()
    last = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == 1000 or
            isinstance(m, torch.nn.Conv2d) and m.out_channels == 1000][-1]
    seen = []
    hook = last.register_forward_hook(lambda m, i, o: seen.append(o))
    with torch.no_grad():
        model(x)
    hook.remove()
    o = seen[0]  # [N, 1000] or [N, 1000, H, W]
    dims = [0] + list(range(2, o.dim()))
    mean = o.mean(dims)
    std = float((o - mean.reshape((1, -1) + (1,) * (o.dim() - 2))).std().clamp_min(1e-30))
    with torch.no_grad():
        last.weight /= std
        last.bias.copy_((last.bias - mean) / std)


def prepare(name, size, seed=0, device="cpu"):
    """The network export() writes: build() then balance(), float32, left
    on the CPU; balance's two passes over 32 images run on device (a
    minute of CPU for the largest models; "cuda" with TF32 off, so float32
    throughout; the CPU where that fails)."""
    import torch
    model = build(name, seed)
    if device != "cpu":
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        try:
            balance(model.to(device), size, seed)
            return model.to("cpu")
        except Exception:  # noqa: BLE001 - no CUDA, out of memory: balanced on the CPU instead
            model = build(name, seed)
    balance(model, size, seed)
    return model


def reference_logits(name, size, x, seed=0, batch=8, model=None, device="cpu"):
    """The logits of the network export() writes (model: prepare()'s, the
    object export() was given, or None to prepare it again) on x [N, 3,
    size, size] (zoo_pipeline.model_input): (float64 computed by torch on
    device, the exact result FP32 engines are judged against where they
    disagree; float32 [N, K, classes], K FP32 engines' roundings beside
    onnxruntime's: torch on the CPU, and where device is not the CPU torch
    on device too, cuDNN and cuBLAS with TF32 off, the libraries ptq's GPU
    path runs on). The model is left float32 on the CPU."""
    import numpy as np
    import torch
    if model is None:
        model = prepare(name, size, seed)

    def run(dtype, dev):
        m = model.to(device=dev, dtype=dtype)  # in place, tensor by tensor: no second copy on the host
        with torch.no_grad():
            return np.concatenate([m(torch.from_numpy(x[i:i + batch]).to(device=dev, dtype=dtype)).double().cpu()
                                   .numpy() for i in range(0, len(x), batch)])
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        f32 = [run(torch.float32, "cpu")]
        if device != "cpu":
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
            f32.append(run(torch.float32, device))
        f64 = run(torch.float64, device)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        model.to(device="cpu", dtype=torch.float32)  # float32 -> float64 -> float32 is exact
    return f64, np.stack(f32, axis=1)


def _external(folder, model_file):
    """Whether torch wrote anything but model_file into folder (its external data)."""
    return any(f != model_file for f in os.listdir(folder))


def export(name, out_dir, opsets, size, seed=0, model=None, external_data=False):
    """Writes OUT/<name>-op<opset>.onnx for each opset (with its weights in
    <name>-op<opset>.onnx.data beside it where torch needed external data or
    external_data asks for it; see the file's header) and returns the
    paths. model: prepare()'s network, or None to prepare it here."""
    import torch
    if model is None:
        model = prepare(name, size, seed)
    x = torch.zeros(1, 3, size, size)
    paths = []
    for opset in opsets:
        base = f"{name}-op{opset}.onnx"
        path, stage = os.path.join(out_dir, base), os.path.join(out_dir, f"{name}-op{opset}.export")
        shutil.rmtree(stage, ignore_errors=True)  # a folder of its own: torch names external files by tensor
        os.makedirs(stage)
        staged = os.path.join(stage, base)
        kw = dict(opset_version=opset, input_names=["input"], output_names=["logits"],
                  dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=True)
        with torch.no_grad():
            try:  # the TorchScript exporter, as Debian's torch 1.13 has it (newer torch defaults to dynamo)
                torch.onnx.export(model, x, staged, dynamo=False, **kw)
            except TypeError:  # a torch older than the dynamo exporter: its only exporter
                torch.onnx.export(model, x, staged, **kw)
        if not external_data and not _external(stage, base):
            os.replace(staged, path)
            shutil.rmtree(stage)
            paths.append(path)
            continue
        try:
            import onnx
        except ImportError:
            if not _external(stage, base):
                raise RuntimeError(f"{name}: external data asked for, but the onnx package is not installed")
            paths.append(staged)  # torch's layout: one file per tensor beside the model
            continue
        m = onnx.load(staged)  # with torch's external files, if any
        data = base + ".data"
        for f in (path, os.path.join(out_dir, data)):
            if os.path.exists(f):
                os.remove(f)
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=data,
                        size_threshold=1024)
        del m
        shutil.rmtree(stage)
        paths.append(path)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="model names, family names, or 'all'")
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--opsets", default="13,17")
    ap.add_argument("--size", type=int, default=224, help="input height and width")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--external-data", action="store_true", help="weights in <model>.onnx.data beside each model")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for fam, ms in FAMILIES.items():
            print(f"{fam}: {' '.join(ms)}")
        return 0
    if not a.out or not a.models:
        ap.error("give --out and at least one model")
    names = []
    for m in a.models:
        names += ALL if m == "all" else FAMILIES.get(m, [m])
    unknown = [m for m in names if m not in ALL]
    if unknown:
        ap.error(f"unknown models: {' '.join(unknown)}")
    os.makedirs(a.out, exist_ok=True)
    opsets = [int(o) for o in a.opsets.split(",")]
    for m in names:
        for p in export(m, a.out, opsets, a.size, a.seed, external_data=a.external_data):
            print(p, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
