#!/usr/bin/env python3
"""Per-kernel times of one ResNet-50 forward at batch 256 on the GPU, ptq
against PyTorch, measured by Nsight Compute (`ncu`, metric
gpu__time_duration.sum: each kernel alone on the GPU). Says which kernels
each runs (cuDNN's algorithm shows in the kernel name) and where ptq's time
goes against the peer's, layer type by layer type.

The model and the images are bench/resnet50_gpu.py's. ptq: `ptq eval
--limit 256 --batch 256` (every kernel of the run, cuDNN planning
included). PyTorch: one forward after warm-up, between cudaProfilerStart
and Stop (`ncu --profile-from-start off`), with the math flags of --math.
Runs on the GPU machine:
    python3 bench/resnet50_kernels.py --ptq bundle/bin/ptq --out $OUT/kernels.md [--math fp32|tf32]
        [--command calibrate --no-torch] [--steady]
"""
import argparse
import collections
import csv
import datetime
import io
import os
import subprocess
import sys

from benchlib import commit, write_result
from resnet50_gpu import PREPROCESS, model_and_images

NCU = os.environ.get("NCU", "ncu")

TORCH_CHILD = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from resnet50_gpu import folded_resnet50
math = sys.argv[2]
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = math == "tf32"
torch.backends.cuda.matmul.allow_tf32 = math == "tf32"
net = folded_resnet50().cuda().eval()
if math == "tf32":
    net = net.to(memory_format=torch.channels_last)
x = torch.randn(256, 3, 224, 224, device="cuda")
if math == "tf32":
    x = x.contiguous(memory_format=torch.channels_last)
with torch.no_grad():
    for _ in range(3):
        net(x)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    net(x)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
"""


def ncu_rows(cmd, env=None):
    full = [NCU, "--csv", "--metrics", "gpu__time_duration.sum", "--print-units", "base"] + cmd
    p = subprocess.run(full, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"resnet50_kernels: {' '.join(full)} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    text = p.stdout[p.stdout.find('"ID"'):]
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        if r.get("Metric Name") == "gpu__time_duration.sum":
            rows.append((r["Kernel Name"], float(r["Metric Value"].replace(",", "")) / 1e6))  # ns -> ms
    return rows


def family(name):
    n = name.lower()
    for key, fam in (("settle", "observer settle"), ("rescue", "observer rescue"), ("observe", "observer pass"),
                     ("fprop", "conv (xmma/cutlass fprop)"), ("convolve", "conv (implicit gemm)"),
                     ("winograd", "conv (winograd)"), ("fft", "conv (fft)"), ("im2col", "conv (im2col)"),
                     ("gemm", "gemm"), ("conv", "conv (other)"), ("relu", "relu / activation"),
                     ("elementwise", "elementwise"), ("pool", "pool"), ("reduce", "reduce"), ("add", "add / bias")):
        if key in n:
            return fam
    return "other"


def steady_rows(more, fewer):
    """The kernels of the longer run less those of the shorter, name by name:
    (name, ms) rows, one per call left over, each the name's mean time of the
    difference (names whose calls or time do not grow are dropped)."""
    def sums(rows):
        d = collections.defaultdict(lambda: [0, 0.0])
        for name, ms in rows:
            d[name][0] += 1
            d[name][1] += ms
        return d
    m, f = sums(more), sums(fewer)
    out = []
    for name, (n, ms) in m.items():
        dn, dms = n - f[name][0], ms - f[name][1]
        if dn > 0 and dms > 0:
            out += [(name, dms / dn)] * dn
    return out


def table(rows, title):
    by_name = collections.defaultdict(lambda: [0, 0.0])
    by_fam = collections.defaultdict(lambda: [0, 0.0])
    for name, ms in rows:
        by_name[name][0] += 1
        by_name[name][1] += ms
        f = family(name)
        by_fam[f][0] += 1
        by_fam[f][1] += ms
    total = sum(ms for _, ms in rows)
    out = [f"### {title}: {len(rows)} kernels, {total:.2f} ms of kernel time\n",
           "| family | kernels | ms | share |", "|---|---|---|---|"]
    for f, (n, ms) in sorted(by_fam.items(), key=lambda kv: -kv[1][1]):
        out.append(f"| {f} | {n} | {ms:.2f} | {100 * ms / total:.1f}% |")
    out += ["", "| kernel (first 90 characters) | calls | ms |", "|---|---|---|"]
    for name, (n, ms) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:25]:
        out.append(f"| `{name[:90]}` | {n} | {ms:.2f} |")
    return "\n".join(out) + "\n", total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True)
    ap.add_argument("--math", default="fp32", choices=("fp32", "tf32"))
    ap.add_argument("--ptq-args", default="", help="extra arguments for ptq eval (e.g. '--math tf32')")
    ap.add_argument("--command", default="eval", choices=("eval", "calibrate"),
                    help="the ptq command measured (calibrate: every tensor observed, on its one batch)")
    ap.add_argument("--no-torch", action="store_true", help="ptq's kernels only")
    ap.add_argument("--images", type=int, default=256,
                    help="images ptq runs (batches of 256; a run of 512 less one of 256 is a steady batch)")
    ap.add_argument("--rows", help="also write ptq's kernels as CSV (name, ms) to this file")
    ap.add_argument("--steady", action="store_true",
                    help="ptq's kernels only (as --no-torch), of one steady batch: the kernels of --images 512 "
                         "less those of 256 (kernel by kernel name: calls and times subtracted)")
    a = ap.parse_args()
    if a.steady:
        a.images = 512
    onnx_path, h5_path = model_and_images("ptq-kernels-", a.images)
    tmp = os.path.dirname(onnx_path)

    def ptq_command(images):
        which = ["eval", "--limit", str(images)] if a.command == "eval" else \
            ["calibrate", "--samples", str(images), "--out", os.path.join(tmp, "calib.h5")]
        return [a.ptq, which[0], "--model", onnx_path, "--data", h5_path, "--layout", "NHWC", "--preprocess",
                PREPROCESS, "--device", "cuda", "--batch", "256", *which[1:]] + a.ptq_args.split()

    ptq_cmd = ptq_command(a.images)
    ptq_rows = ncu_rows(ptq_cmd)
    if a.steady:
        ptq_rows = steady_rows(ptq_rows, ncu_rows(ptq_command(256)))
    if a.rows:
        with open(a.rows, "w", newline="") as f:
            csv.writer(f).writerows(ptq_rows)
    if a.no_torch or a.steady:
        if a.steady:
            what, flags = "one steady batch of 256 (512 images less 256)", "--no-torch --steady"
            how = f"kernels of `{' '.join(ptq_cmd)}` less those of the same with 256 images"
        else:
            what, flags = f"{a.images} images in batches of 256", f"--images {a.images} --no-torch"
            how = f"every batch, the first with cuDNN's planning and tuning kernels: `{' '.join(ptq_cmd)}`"
        t_ptq, s_ptq = table(ptq_rows, f"ptq {a.command}, {what}")
        write_result(a.out, [f"# ResNet-50 kernel by kernel: ptq {a.command}, {what} ({a.math})\n\n"
                             f"- ptq commit: {commit()}\n- command: `python3 bench/resnet50_kernels.py --ptq {a.ptq} "
                             f"--out {a.out} --math {a.math} --command {a.command} {flags}`\n"
                             f"- ncu metric gpu__time_duration.sum (each kernel serialized), {how}\n\n"
                             f"**kernel time, {what}: ptq {s_ptq:.2f} ms**\n\n{t_ptq}"])
        return
    child = os.path.join(tmp, "torch_child.py")
    with open(child, "w") as f:
        f.write(TORCH_CHILD)
    torch_rows = ncu_rows(["--profile-from-start", "off", sys.executable, child,
                           os.path.dirname(os.path.abspath(__file__)), a.math])
    t_ptq, s_ptq = table(ptq_rows, "ptq eval, one batch of 256")
    t_torch, s_torch = table(torch_rows, f"PyTorch, one forward of 256 ({a.math})")
    now = datetime.datetime.now(datetime.timezone.utc)
    text = f"""# ResNet-50 kernel by kernel: ptq against PyTorch ({a.math})

- ptq commit: {commit()}
- date: {now:%Y-%m-%d %H:%M} UTC
- command: `python3 bench/resnet50_kernels.py --ptq {a.ptq} --out {a.out} --math {a.math}{' --ptq-args ' + repr(a.ptq_args) if a.ptq_args else ''}`
- ncu metric gpu__time_duration.sum (each kernel serialized); ptq: `{' '.join(ptq_cmd)}`

**kernel time for 256 images: ptq {s_ptq:.2f} ms, PyTorch {s_torch:.2f} ms (ratio {s_torch / s_ptq:.2f}x)**

{t_ptq}
{t_torch}"""
    write_result(a.out, [text])


if __name__ == "__main__":
    main()
