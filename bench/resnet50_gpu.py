#!/usr/bin/env python3
"""Benchmark: `ptq eval --device cuda` on torchvision's ResNet-50 (random
weights, BatchNorm folded into the convolutions, exported to ONNX opset 17
with a dynamic batch) against PyTorch FP32 on the same GPU, in one run, on
2,048 random uint8 224x224x3 images stored as HDF5 (NHWC). ptq's figure is
its whole eval loop (HDF5 read + preprocessing + inference + metrics, from
its JSON `images_per_s`, best of --repeat runs); PyTorch's is inference alone
on preprocessed tensors already on the GPU (cudnn.benchmark on, TF32 off for
convolutions and matmuls), so the ratio favours the peer. Also: ptq with
cuDNN switched off (PTQ_CUDNN=0, im2col + cuBLAS), `ptq eval --profile`'s
time per op type, and how far ptq's logits are from PyTorch's.
Runs on the GPU machine (scripts/gpu-check.sh resnet50):
    python3 bench/resnet50_gpu.py --ptq bundle/bin/ptq --out $OUT/resnet50.md
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
import torch
import torchvision

from benchlib import commit, cpu_model, write_result

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
PREPROCESS = "scale=0.00392156862745098 mean=%s std=%s layout=NCHW channels=3" % (
    ",".join(map(str, MEAN)), ",".join(map(str, STD)))


def folded_resnet50():
    """torchvision's resnet50, random weights and BatchNorm statistics,
    each BatchNorm folded into the conv before it (eval mode)."""
    torch.manual_seed(0)
    net = torchvision.models.resnet50(weights=None)
    with torch.no_grad():  # random running statistics, so the folding is not a no-op
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.0)
                m.bias.uniform_(-0.1, 0.1)
    net.eval()
    fuse = torch.nn.utils.fusion.fuse_conv_bn_eval
    net.conv1, net.bn1 = fuse(net.conv1, net.bn1), torch.nn.Identity()
    for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
        for blk in layer:
            for i in (1, 2, 3):
                conv, bn = getattr(blk, f"conv{i}"), getattr(blk, f"bn{i}")
                setattr(blk, f"conv{i}", fuse(conv, bn))
                setattr(blk, f"bn{i}", torch.nn.Identity())
            if blk.downsample is not None:
                blk.downsample = torch.nn.Sequential(fuse(blk.downsample[0], blk.downsample[1]))
    return net


def export(net, path):
    """The TorchScript exporter (it writes Flatten and plain Gemm); torch's
    newer dynamo exporter where that one is gone. Returns which one ran."""
    x = torch.randn(2, 3, 224, 224)
    kw = dict(input_names=["input"], output_names=["logits"], do_constant_folding=True,
              dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    try:
        torch.onnx.export(net, x, path, opset_version=17, dynamo=False, **kw)
        return "torch.onnx.export(dynamo=False), opset 17"
    except TypeError:  # a torch older than the dynamo exporter (Debian's 1.13): its only exporter
        torch.onnx.export(net, x, path, opset_version=17, **kw)
        return "torch.onnx.export, opset 17"
    except Exception as e:  # noqa: BLE001 - any failure of the old exporter: try the new one
        print(f"resnet50_gpu: the TorchScript exporter failed ({e}); trying dynamo=True", file=sys.stderr)
    torch.onnx.export(net, x, path, opset_version=18, dynamo=True, **kw)
    return "torch.onnx.export(dynamo=True), opset 18"


def resnet50_setup(prefix, n_images):
    """A temporary folder with resnet50.onnx (folded_resnet50, exported) and
    images.h5 (n_images random uint8 224x224x3 images, NHWC, and random
    labels, seed 0): (onnx path, h5 path, the net, which exporter ran, the images)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    onnx_path, h5_path = os.path.join(tmp, "resnet50.onnx"), os.path.join(tmp, "images.h5")
    net = folded_resnet50()
    exporter = export(net, onnx_path)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n_images, 224, 224, 3), dtype=np.uint8)
    with h5py.File(h5_path, "w") as f:
        f["images"] = images
        f["labels"] = rng.integers(0, 1000, size=n_images).astype(np.int64)
    return onnx_path, h5_path, net, exporter, images


def model_and_images(prefix, n_images):
    """resnet50_setup's (onnx path, h5 path)."""
    return resnet50_setup(prefix, n_images)[:2]


def gpu_batches(images, batch, dev):
    """uint8 NHWC images as PyTorch's input on dev: NCHW, scaled to [0, 1], ImageNet mean/std, in batches."""
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)
    x_all = ((torch.from_numpy(images).to(dev).permute(0, 3, 1, 2).float() / 255.0) - mean) / std
    return [x_all[i:i + batch].contiguous() for i in range(0, len(images), batch)]


def torch_predictions(net, images, batch=256):
    """PyTorch FP32's top-1 class of each uint8 NHWC image (scaled to [0, 1], ImageNet mean/std), on the GPU
    when there is one: the labels that make ptq's FP32 top-1 its agreement with PyTorch."""
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gnet = net.to(dev)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)
    out = []
    with torch.no_grad():
        for i in range(0, len(images), batch):
            x = (torch.from_numpy(images[i:i + batch]).to(dev).permute(0, 3, 1, 2).float() / 255.0 - mean) / std
            out.append(gnet(x).argmax(1).cpu().numpy())
    return np.concatenate(out).astype(np.int64)


def conv_flops(net):
    """FLOPs (2 per multiply-add) of one image through the convs and the FC layer."""
    total = [0]

    def hook(m, inp, out):
        if isinstance(m, torch.nn.Conv2d):
            total[0] += 2 * out[0].numel() * m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
        else:
            total[0] += 2 * m.in_features * m.out_features

    hs = [m.register_forward_hook(hook) for m in net.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        net(torch.zeros(1, 3, 224, 224))
    for h in hs:
        h.remove()
    return total[0]


def run_ptq(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"resnet50_gpu: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True, help="results markdown")
    ap.add_argument("--images", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--math", default="fp32", choices=("fp32", "tf32"),
                    help="ptq --math; PyTorch runs TF32 channels-last under tf32")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("resnet50_gpu: PyTorch sees no GPU")

    tmp = tempfile.mkdtemp(prefix="ptq-resnet50-")
    onnx_path, h5_path = os.path.join(tmp, "resnet50.onnx"), os.path.join(tmp, "images.h5")
    net = folded_resnet50()
    exporter = export(net, onnx_path)
    flops = conv_flops(net)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(a.images, 224, 224, 3), dtype=np.uint8)
    with h5py.File(h5_path, "w") as f:
        f["images"] = images
        f["labels"] = rng.integers(0, 1000, size=a.images).astype(np.int64)

    base = [a.ptq, "eval", "--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess", PREPROCESS,
            "--device", "cuda", "--batch", str(a.batch), "--math", a.math]
    logits_path = os.path.join(tmp, "ptq-logits.npy")
    cmd = base + ["--json"]
    rates, notes = [], ""
    for r in range(a.repeat):
        p = run_ptq(cmd + (["--logits", logits_path] if r == 0 else []))
        rep = json.loads(p.stdout)
        if not rep["device"].startswith("cuda"):
            sys.exit(f"resnet50_gpu: ptq ran on {rep['device']}, not the GPU:\n{p.stderr}")
        rates.append(rep["images_per_s"])
        notes = notes or p.stderr.strip()
    env = dict(os.environ, PTQ_CUDNN="0")
    rate_im2col = json.loads(run_ptq(cmd, env).stdout)["images_per_s"]
    profile = run_ptq(base + ["--profile", "--json"]).stderr
    profile = "\n".join(l for l in profile.splitlines() if not l.startswith("ptq eval: note"))

    torch.backends.cudnn.benchmark = True
    tf32 = a.math == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    dev = torch.device("cuda")
    gnet = net.to(dev)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)
    x_all = ((torch.from_numpy(images).to(dev).permute(0, 3, 1, 2).float() / 255.0) - mean) / std
    fmt = torch.channels_last if tf32 else torch.contiguous_format
    if tf32:
        gnet = gnet.to(memory_format=torch.channels_last)
    batches = [x_all[i:i + a.batch].contiguous(memory_format=fmt) for i in range(0, a.images, a.batch)]
    with torch.no_grad():
        for _ in range(3):  # warm-up: cudnn.benchmark's search, allocator
            gnet(batches[0])
        torch.cuda.synchronize()
        torch_rates = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            for xb in batches:
                gnet(xb)
            torch.cuda.synchronize()
            torch_rates.append(a.images / (time.perf_counter() - t0))
        ref = torch.cat([gnet(xb).double() for xb in batches[:1]]).cpu().numpy()
    got = np.load(logits_path)[: len(ref)].astype(np.float64)
    rel = np.abs(got - ref).max() / np.abs(ref).max()
    agree = (got.argmax(1) == ref.argmax(1)).mean()

    best, best_torch = max(rates), max(torch_rates)
    now = datetime.datetime.now(datetime.timezone.utc)
    gpu = torch.cuda.get_device_name(0)
    text = f"""# ptq eval on the GPU vs PyTorch, ResNet-50, {a.math}

- ptq commit: {commit()}
- date: {now:%Y-%m-%d %H:%M} UTC
- machine: {gpu}, {cpu_model()} ({os.cpu_count()} cores), {platform.system()} {platform.release()}
- command: `python3 bench/resnet50_gpu.py --ptq {a.ptq} --out {a.out} --math {a.math}`
- model: torchvision resnet50, random weights, BatchNorm folded, {exporter}, dynamic batch, {flops / 1e9:.2f} GFLOP per image
- images: {a.images} random uint8 224x224x3 (HDF5, NHWC), batch {a.batch}; best of {a.repeat} runs each
- ptq: `{' '.join(cmd)}` (whole eval loop: HDF5 read, preprocessing, inference, metrics)
- PyTorch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}): {'TF32 on, channels-last' if tf32 else 'FP32, TF32 off'}, cudnn.benchmark on; inference alone on preprocessed tensors on the GPU

| | img/s (best) | TFLOP/s | all runs |
|---|---|---|---|
| ptq eval --device cuda | {best:.0f} | {best * flops / 1e12:.1f} | {', '.join(f'{r:.0f}' for r in rates)} |
| ptq eval --device cuda, PTQ_CUDNN=0 (im2col + cuBLAS) | {rate_im2col:.0f} | {rate_im2col * flops / 1e12:.1f} | |
| PyTorch {a.math.upper()} | {best_torch:.0f} | {best_torch * flops / 1e12:.1f} | {', '.join(f'{r:.0f}' for r in torch_rates)} |

**ratio ptq / PyTorch: {best / best_torch:.2f}x** (cuDNN against im2col: {best / rate_im2col:.2f}x)

ptq's logits against PyTorch's on the first {len(ref)} images: max |difference| / max |logit| {rel:.2e}, top-1 agreement {agree * 100:.1f}%

ptq's notes: {notes or 'none'}

`ptq eval --profile` (waits for the GPU after each node):

```
{profile.strip()}
```
"""
    write_result(a.out, [text])
    print("wrote", a.out)


if __name__ == "__main__":
    main()
