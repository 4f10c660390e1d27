#!/usr/bin/env python3
"""The GPU-speed targets on ResNet-50, ptq and PyTorch side by side in one
run on the GPU machine (scripts/gpu-check.sh targets):

  (a) ptq FP32 forward (`ptq eval`) against PyTorch FP32 inference (cuDNN,
      TF32 off, cudnn.benchmark on);
  (b) ptq FP32 calibration with every observer (`ptq calibrate`) against
      PyTorch's hook-and-histc calibration (a forward hook on every module
      that yields an activation: running |x| max and a 2048-bin torch.histc
      of |x| over [0, that batch's max], the best case of a histogram
      calibrator, no re-binning), and against ptq's own forward;
  (c) ptq TF32 calibration against PyTorch TF32 channels-last inference;
  (d) `ptq validate` with the default INT8 plan against ptq's forward
      (the whole command's wall time for both), with the FP32 side from
      `ptq eval --logits` (`--reference`: FP32 runs on the first batch
      only), and, for comparison, without (FP32 and the plan on every
      batch);
  (e) ptq's host peak RSS calibrating and evaluating 10,000 images against
      1,000;
  and the CPU path: `ptq calibrate --device cpu` against onnxruntime's
  MinMax, Entropy and Percentile calibrators on the host's cores.

ptq's rates are its runner loop from its JSON (HDF5 read, upload,
normalization, inference, observers, metrics): `images_per_s` over all
batches and `images_per_s_steady` after the first (warm cuDNN plans and
memory, as PyTorch is timed after its warm-up). PyTorch runs on tensors
already preprocessed on the GPU. Model: torchvision resnet50, random
weights, BatchNorm folded, ONNX opset 17 (bench/resnet50_gpu.py's). Data:
random uint8 224x224x3 in HDF5 (NHWC), batch 256.
    python3 bench/resnet50_targets.py --ptq bundle/bin/ptq --out $OUT/targets.md
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

from benchlib import commit, cpu_model, write_result
from resnet50_gpu import MEAN, PREPROCESS, STD, conv_flops, export, folded_resnet50, gpu_batches

ORT_CALIB = r"""
import sys, time
import h5py, numpy as np, onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, create_calibrator
model, data, n, method, batch, aug = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
mean = np.array(%r, np.float32).reshape(1, 3, 1, 1)
std = np.array(%r, np.float32).reshape(1, 3, 1, 1)
with h5py.File(data, "r") as f:
    u8 = f["images"][:n]
class Reader(CalibrationDataReader):
    def __init__(self):
        self.i = 0
    def get_next(self):
        if self.i >= n:
            return None
        b = u8[self.i:self.i + batch].transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
        self.i += batch
        return {"input": (b - mean) / std}
t0 = time.perf_counter()
cal = create_calibrator(model, [], augmented_model_path=aug, calibrate_method=getattr(CalibrationMethod, method),
                        providers=["CPUExecutionProvider"])
cal.collect_data(Reader())
ranges = cal.compute_data()
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(time.perf_counter() - t0, len(ranges.data), int(hwm) / 1024)
""" % (MEAN, STD)


def run(cmd, env=None):
    """Runs cmd in its own process: (wall seconds, stdout). Peak memory comes
    from the child's own VmHWM (ptq's JSON peak_rss_mib): wait4's ru_maxrss
    would keep this Python's (torch-sized) peak, which the child inherits."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        status = p.wait()
        secs = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if status != 0:
            sys.exit(f"resnet50_targets: {' '.join(cmd)} exited {status}:\n{err.read()}")
        return secs, out.read()


def best_json(cmd, repeat):
    """The run of cmd (--json) with the best steady rate, its JSON and wall seconds, and every steady rate."""
    best, rates = None, []
    for _ in range(repeat):
        secs, out = run(cmd)
        d = json.loads(out)
        d["wall_s"], d["rss_mib"] = secs, d.get("peak_rss_mib", 0.0)
        rates.append(d.get("images_per_s_steady", d["images_per_s"]))
        if best is None or rates[-1] > best.get("images_per_s_steady", best["images_per_s"]):
            best = d
    return best, rates


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def torch_rates(net, batches, repeat, hooks=None):
    """Best images/s of net over batches (after 3 warm-up batches)."""
    with torch.no_grad():
        for _ in range(3):
            net(batches[0])
        sync()
        rates = []
        for _ in range(repeat):
            if hooks:
                hooks.reset()
            t0 = time.perf_counter()
            for xb in batches:
                net(xb)
            if hooks:
                hooks.finish(len(batches))
            sync()
            rates.append(sum(len(b) for b in batches) / (time.perf_counter() - t0))
    return max(rates), rates


class HistcHooks:
    """A histogram calibrator's observers as forward hooks: every module
    output that is an activation (conv, relu, pools, linear) and the input
    keep a running |x| max and a 2048-bin histogram of |x|."""

    KINDS = (torch.nn.Conv2d, torch.nn.ReLU, torch.nn.MaxPool2d, torch.nn.AdaptiveAvgPool2d, torch.nn.Linear)

    def __init__(self, net, bins=2048):
        self.bins, self.handles, self.n_tensors = bins, [], 0
        mods = [m for m in net.modules() if isinstance(m, self.KINDS)]
        for m in mods:
            self.handles.append(m.register_forward_hook(self.hook))
        self.handles.append(net.register_forward_pre_hook(lambda m, inp: self.observe(inp[0])))
        self.reset()

    def reset(self):
        self.amax, self.hist = [], []
        self.at = 0

    def observe(self, x):
        a = x.detach().abs()
        m = a.amax()
        # min = max = 0: histc takes the range from the data itself, on the GPU (its own min/max pass)
        h = torch.histc(a, bins=self.bins)
        if self.at < len(self.amax):
            self.amax[self.at] = torch.maximum(self.amax[self.at], m)
            self.hist[self.at] += h
        else:
            self.amax.append(m)
            self.hist.append(h)
        self.at += 1

    def hook(self, mod, inp, out):
        self.observe(out)

    def finish(self, n_batches=1):
        self.n_tensors = self.at // max(n_batches, 1)
        self.at = 0

    def remove(self):
        for h in self.handles:
            h.remove()


def ratio_line(name, got, target, unit="x"):
    ok = got >= target
    return f"| {name} | {got:.2f}{unit} | >= {target}{unit} | {'met' if ok else 'MISSED'} |", ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True)
    ap.add_argument("--images", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rss-images", default="1000,10000")
    ap.add_argument("--cpu-images", type=int, default=128)
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--ort-python", default=sys.executable,
                    help="the Python that runs onnxruntime's calibrators (needs onnxruntime.quantization, h5py)")
    ap.add_argument("--smoke", action="store_true",
                    help="check the script on a machine without a GPU: everything on the CPU (use tiny sizes)")
    a = ap.parse_args()
    if not a.smoke and not torch.cuda.is_available():
        sys.exit("resnet50_targets: PyTorch sees no GPU")
    rss_small, rss_large = (int(v) for v in a.rss_images.split(","))

    tmp = tempfile.mkdtemp(prefix="ptq-targets-")
    onnx_path = os.path.join(tmp, "resnet50.onnx")
    net = folded_resnet50()
    exporter = export(net, onnx_path)
    flops = conv_flops(net)
    sets = {n: os.path.join(tmp, f"images{n}.h5") for n in (a.images, rss_small, rss_large, a.cpu_images)}
    for n, path in sets.items():  # the first n of one random stream, so the sets nest
        rng = np.random.default_rng(0)
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("images", (n, 224, 224, 3), np.uint8)
            for i in range(0, n, 1000):
                ds[i:i + 1000] = rng.integers(0, 256, size=(min(1000, n - i), 224, 224, 3), dtype=np.uint8)
            f["labels"] = np.random.default_rng(1).integers(0, 1000, size=n).astype(np.int64)
    h5_path = sets[a.images]
    with h5py.File(h5_path, "r") as f:
        images = f["images"][:]

    def common(n):
        return ["--model", onnx_path, "--data", sets[n], "--layout", "NHWC", "--preprocess", PREPROCESS,
                "--batch", str(a.batch)]

    def gpu(n):
        return common(n) + ["--device", "cpu" if a.smoke else "cuda"]
    archive, archive_tf32, plan = (os.path.join(tmp, n) for n in ("calib.h5", "calib-tf32.h5", "plan.json"))
    notes = []

    # ptq on the GPU
    ev, ev_rates = best_json([a.ptq, "eval", *gpu(a.images), "--json"], a.repeat)
    cal, cal_rates = best_json([a.ptq, "calibrate", *gpu(a.images), "--out", archive, "--json"], a.repeat)
    cal32, cal32_rates = best_json([a.ptq, "calibrate", *gpu(a.images), "--math", "tf32", "--out", archive_tf32,
                                    "--json"], a.repeat)
    run([a.ptq, "plan", archive, "--model", onnx_path, "--out", plan])
    val_walls, valref_walls, ev_walls = [], [], []
    fp32_logits = os.path.join(tmp, "fp32.npy")
    run([a.ptq, "eval", *gpu(a.images), "--logits", fp32_logits])
    for r in range(a.repeat):
        val_walls.append(run([a.ptq, "validate", *gpu(a.images), "--plan", plan, "--report",
                              os.path.join(tmp, f"validate{r}")])[0])
        valref_walls.append(run([a.ptq, "validate", *gpu(a.images), "--plan", plan, "--reference", fp32_logits,
                                 "--report", os.path.join(tmp, f"validate-ref{r}")])[0])
        ev_walls.append(run([a.ptq, "eval", *gpu(a.images)])[0])
    with open(os.path.join(tmp, "validate0", "validate.json")) as f0, \
            open(os.path.join(tmp, "validate-ref0", "validate.json")) as f1:
        v0, v1 = json.load(f0), json.load(f1)
    notes.append(f"validate with and without --reference: top-1 quantized {v1['top1_quant']:.4f} and "
                 f"{v0['top1_quant']:.4f}, changed predictions {v1['changed_predictions']} and "
                 f"{v0['changed_predictions']}, SQNR {v1['logits']['sqnr_db']:.2f} and {v0['logits']['sqnr_db']:.2f} "
                 f"dB; the reference's first batch matched this run's FP32 by a median "
                 f"{v1['fp32_reference_median_rel_diff']:.2e} relative")
    rss = {}
    for n in (rss_small, rss_large):
        rss[("calibrate", n)] = json.loads(run([a.ptq, "calibrate", *gpu(n), "--out", os.path.join(tmp, f"rss{n}.h5"),
                                                "--json"])[1])["peak_rss_mib"]
        rss[("eval", n)] = json.loads(run([a.ptq, "eval", *gpu(n), "--json"])[1])["peak_rss_mib"]

    # PyTorch on the same GPU
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cpu" if a.smoke else "cuda")
    gnet = net.to(dev).eval()
    batches = gpu_batches(images, a.batch, dev)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    t_fp32, t_fp32_all = torch_rates(gnet, batches, a.repeat)
    hooks = HistcHooks(gnet)
    t_hist, t_hist_all = torch_rates(gnet, batches, a.repeat, hooks)
    n_hooked = hooks.n_tensors
    hooks.remove()
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    cl = gnet.to(memory_format=torch.channels_last)
    batches_cl = [b.contiguous(memory_format=torch.channels_last) for b in batches]
    t_tf32, t_tf32_all = torch_rates(cl, batches_cl, a.repeat)

    # the CPU path against onnxruntime's calibrators
    cpu_rows = []
    if not a.skip_cpu:
        n = a.cpu_images
        cpu_cal, _ = best_json([a.ptq, "calibrate", *common(n), "--device", "cpu", "--out",
                                os.path.join(tmp, "cpu.h5"), "--json"], 1)
        cpu_rows.append(("ptq calibrate --device cpu (min-max + histograms, every tensor)",
                         n / cpu_cal["seconds"], cpu_cal["wall_s"], cpu_cal["rss_mib"]))
        script = os.path.join(tmp, "ort_calib.py")
        with open(script, "w") as f:
            f.write(ORT_CALIB)
        for method in ("MinMax", "Entropy", "Percentile"):
            secs, out = run([a.ort_python, script, onnx_path, sets[n], str(n), method, "32",
                             os.path.join(tmp, f"aug-{method}.onnx")])
            last = out.strip().splitlines()[-1].split()  # onnxruntime prints its progress first
            inner, peak = float(last[0]), float(last[2])
            cpu_rows.append((f"onnxruntime {method} (create_calibrator + collect_data + compute_data)",
                             n / inner, secs, peak))

    # the record
    def steady(d):
        return d.get("images_per_s_steady", d["images_per_s"])

    rows, met = [], []
    for line, ok in (
            ratio_line("(a) FP32 forward: ptq eval (steady) / PyTorch FP32", steady(ev) / t_fp32, 1.0),
            ratio_line("(b) FP32 calibration: ptq calibrate (steady) / PyTorch hooks + histc", steady(cal) / t_hist,
                       3.0),
            ratio_line("(b) FP32 calibration: ptq calibrate / ptq eval (steady)", steady(cal) / steady(ev),
                       0.85),
            ratio_line("(c) TF32 calibration: ptq calibrate --math tf32 (steady) / PyTorch TF32 channels-last",
                       steady(cal32) / t_tf32, 0.8),
            ratio_line("(d) validate INT8 --reference (eval's FP32 logits) / eval, whole command (best wall time "
                       "of each)", min(ev_walls) / min(valref_walls), 0.8),
    ):
        rows.append(line)
        met.append(ok)
    rows.append(f"| (d) for comparison, not counted: validate INT8 without --reference (FP32 and the plan on every "
                f"batch) / eval | {min(ev_walls) / min(val_walls):.2f}x | | |")
    growth = {k: rss[(k, rss_large)] / rss[(k, rss_small)] for k in ("calibrate", "eval")}
    for k in ("calibrate", "eval"):
        ok = growth[k] <= 1.10
        rows.append(f"| (e) host peak RSS, ptq {k}: {rss_large:,} / {rss_small:,} images | {growth[k]:.3f}x "
                    f"({rss[(k, rss_small)]:.0f} -> {rss[(k, rss_large)]:.0f} MiB) | <= 1.10x | "
                    f"{'met' if ok else 'MISSED'} |")
        met.append(ok)

    now = datetime.datetime.now(datetime.timezone.utc)
    gpu_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (--smoke)"
    text = [f"# ResNet-50 GPU-speed targets: ptq against PyTorch, one run",
            "",
            f"- ptq commit: {commit()}",
            f"- date: {now:%Y-%m-%d %H:%M} UTC",
            f"- machine: {gpu_name}, {cpu_model()} ({os.cpu_count()} cores), {platform.system()} {platform.release()}",
            f"- command: `python3 bench/resnet50_targets.py {' '.join(sys.argv[1:])}`",
            f"- model: torchvision resnet50, random weights, BatchNorm folded, {exporter}, dynamic batch, "
            f"{flops / 1e9:.2f} GFLOP per image",
            f"- data: {a.images} random uint8 224x224x3 images (HDF5, NHWC), batch {a.batch}, best of {a.repeat}; "
            f"RSS runs on {rss_small:,} and {rss_large:,} images of the same file",
            f"- PyTorch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}), cudnn.benchmark on, inference "
            f"on preprocessed tensors already on the GPU; hook-and-histc: {n_hooked} tensors a batch",
            "",
            "| target | got | wanted | |",
            "|---|---|---|---|",
            *rows,
            "",
            f"{sum(met)} of {len(met)} met.",
            "",
            "| run | img/s all batches | img/s after the first | wall s | peak RSS MiB | all steady rates |",
            "|---|---|---|---|---|---|"]
    for name, d, rates in (("ptq eval FP32", ev, ev_rates), ("ptq calibrate FP32", cal, cal_rates),
                           ("ptq calibrate TF32", cal32, cal32_rates)):
        text.append(f"| {name} | {d['images_per_s']:.0f} | {steady(d):.0f} | {d['wall_s']:.2f} | {d['rss_mib']:.0f} "
                    f"| {', '.join(f'{r:.0f}' for r in rates)} |")
    text += [f"| ptq validate INT8 plan (wall, whole command) | {a.images / min(val_walls):.0f} (by wall) | | "
             f"{min(val_walls):.2f} | | |",
             f"| ptq validate INT8 plan --reference (wall, whole command) | {a.images / min(valref_walls):.0f} "
             f"(by wall) | | {min(valref_walls):.2f} | | |",
             f"| ptq eval (wall, whole command) | {a.images / min(ev_walls):.0f} (by wall) | | {min(ev_walls):.2f} | | |",
             f"| PyTorch FP32 | | {t_fp32:.0f} | | | {', '.join(f'{r:.0f}' for r in t_fp32_all)} |",
             f"| PyTorch FP32 + hooks + histc | | {t_hist:.0f} | | | {', '.join(f'{r:.0f}' for r in t_hist_all)} |",
             f"| PyTorch TF32 channels-last | | {t_tf32:.0f} | | | {', '.join(f'{r:.0f}' for r in t_tf32_all)} |",
             "",
             f"ptq FP32 forward: {steady(ev) * flops / 1e12:.1f} TFLOP/s (steady)."]
    if cpu_rows:
        text += ["", f"## The CPU path: calibration of {a.cpu_images} images on this host's {os.cpu_count()} cores",
                 "", "| calibrator | img/s | wall s (whole process) | peak RSS MiB |", "|---|---|---|---|"]
        for name, rate, wall, peak in cpu_rows:
            text.append(f"| {name} | {rate:.1f} | {wall:.1f} | {peak:.0f} |")
        best_ort = max(r[1] for r in cpu_rows[1:])
        text.append("")
        text.append(f"ptq / fastest onnxruntime calibrator: {cpu_rows[0][1] / best_ort:.2f}x "
                    f"(ptq's rate is its runner loop; onnxruntime's from create_calibrator to compute_data)")
    text += ["", *notes]
    write_result(a.out, text)


if __name__ == "__main__":
    main()
