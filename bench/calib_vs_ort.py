#!/usr/bin/env python3
"""Benchmark: calibration of the demo model by ptq against onnxruntime's
calibrators (MinMax, Entropy, Percentile from onnxruntime.quantization), on
the same machine, the same images and the same preprocessing, in one run:
wall time and peak RSS of each, every run in its own process (os.wait4).
ptq's time for a method is one `ptq calibrate` (observers on every
quantizable tensor, archive written) plus that method's `ptq export`;
onnxruntime's is create_calibrator + collect_data + compute_data.
Also the memory bound: ptq's peak RSS calibrating on 1,000 vs 10,000 images.
Writes bench/results/<date>-calib-<host>.md. Needs onnxruntime.quantization,
which wants ml_dtypes and onnx >= 1.16 (scripts/bench-setup.sh makes .venv-bench):
    .venv-bench/bin/python3 bench/calib_vs_ort.py [--ptq build/ptq] [--images 1000] [--threads N]
"""
import argparse
import datetime
import gzip
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchlib import FM, commit, cpu_model, idx

ORT_RUN = r"""
import sys
import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, create_calibrator
model, images_path, method, batch, threads, aug = sys.argv[1:7]
images = np.load(images_path)
x = ((images.astype(np.float32) * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353)).reshape(-1, 1, 28, 28)
class Reader(CalibrationDataReader):
    def __init__(self):
        self.i = 0
    def get_next(self):
        if self.i >= len(x):
            return None
        b = x[self.i:self.i + int(batch)]
        self.i += int(batch)
        return {"input": b}
so_threads = int(threads)
cal = create_calibrator(model, [], augmented_model_path=aug, calibrate_method=getattr(CalibrationMethod, method),
                        providers=["CPUExecutionProvider"])
if so_threads > 0:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = so_threads
    cal.infer_session = ort.InferenceSession(aug, sess_options=opts, providers=["CPUExecutionProvider"])
cal.collect_data(Reader())
ranges = cal.compute_data()
print(len(ranges.data))
"""


def write_idx_gz(path, arr, magic_type=0x08):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(bytes([0, 0, magic_type, arr.ndim]))
        for d in arr.shape:
            f.write(int(d).to_bytes(4, "big"))
        f.write(np.ascontiguousarray(arr).tobytes())


def run_measured(cmd):
    """fork+exec with wait4 so the child's own peak RSS is known."""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    secs = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}")
    return secs, ru.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--model", default="models/fmnist_resnet.onnx")
    ap.add_argument("--images", type=int, default=1000, help="calibration images for the side-by-side runs")
    ap.add_argument("--batch", type=int, default=100,
                    help="images per batch; --images must be a multiple (onnxruntime's histogram collectors fail on a short last batch)")
    ap.add_argument("--threads", type=int, default=0, help="0: every core, for both")
    ap.add_argument("--device", default="cpu", help="ptq's device (the peer runs on the CPU)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.images % a.batch:
        ap.error("--images must be a multiple of --batch: onnxruntime's Entropy/Percentile collectors "
                 "np.asarray every batch together and fail on a short last one")
    tmp = tempfile.mkdtemp(prefix="ptq-bench-calib-")
    images_all = idx(f"{FM}/t10k-images-idx3-ubyte.gz")  # the 10,000 test images: what the GPU bundle carries
    labels = np.zeros(len(images_all), np.uint8)

    def dataset(n):
        """The first n images as a ptq HDF5 set (converted by ptq) and an .npy for the peer."""
        base = os.path.join(tmp, f"images{n}")
        if not os.path.exists(base + ".h5"):
            write_idx_gz(base + "-images.gz", images_all[:n])
            write_idx_gz(base + "-labels.gz", labels[:n])
            p = subprocess.run([a.ptq, "data", "convert", "--images", base + "-images.gz", "--labels",
                                base + "-labels.gz", "--out", base + ".h5"], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"ptq data convert failed ({p.returncode}): {p.stderr}")
            np.save(base + ".npy", images_all[:n])
        return base + ".h5", base + ".npy"

    thr = ["--threads", str(a.threads)] if a.threads > 0 else []
    rows = []
    # memory bound: 1,000 vs 10,000 images
    mem = {}
    for n in (1000, 10000):
        h5, _ = dataset(n)
        secs, rss = run_measured([a.ptq, "calibrate", "--model", a.model, "--data", h5, "--out",
                                  os.path.join(tmp, f"m{n}.h5"), "--batch", str(a.batch), "--device", a.device, *thr])
        mem[n] = (secs, rss)
        print(f"ptq calibrate {n:>6} images: {secs:7.2f} s, peak RSS {rss:7.1f} MiB", flush=True)
    # side by side
    h5, npy = dataset(a.images)
    arc = os.path.join(tmp, "side.h5")
    cal_s, cal_rss = run_measured([a.ptq, "calibrate", "--model", a.model, "--data", h5, "--out", arc,
                                   "--batch", str(a.batch), "--device", a.device, *thr])
    print(f"ptq calibrate {a.images} images: {cal_s:.2f} s, peak RSS {cal_rss:.1f} MiB", flush=True)
    for ptq_method, ort_method in (("minmax", "MinMax"), ("entropy", "Entropy"), ("percentile", "Percentile")):
        exp_s, exp_rss = run_measured([a.ptq, "export", arc, "--method", ptq_method, "--format", "trt", "--out",
                                       os.path.join(tmp, ptq_method + ".cache"), "--quiet"])
        ort_s, ort_rss = run_measured([sys.executable, "-c", ORT_RUN, a.model, npy, ort_method, str(a.batch),
                                       str(a.threads), os.path.join(tmp, f"aug-{ort_method}.onnx")])
        ptq_s, ptq_rss = cal_s + exp_s, max(cal_rss, exp_rss)
        rows.append((ort_method, ptq_s, ptq_rss, ort_s, ort_rss))
        print(f"{ort_method:<10} ptq {ptq_s:7.2f} s {ptq_rss:7.1f} MiB | onnxruntime {ort_s:7.2f} s {ort_rss:8.1f} MiB"
              f" | time x{ort_s / ptq_s:.2f}, memory x{ort_rss / ptq_rss:.2f}", flush=True)

    import onnxruntime as ort
    host = platform.node().split(".")[0] or "host"
    date = datetime.date.today().isoformat()
    out = a.out or f"bench/results/{date}-calib-{a.device}-{host}.md"
    ratio_mem = mem[10000][1] / mem[1000][1]
    lines = [
        f"# Calibration: ptq vs onnxruntime calibrators ({date})", "",
        f"- machine: {host}, {cpu_model()}, {os.cpu_count()} CPUs; ptq device {a.device}",
        f"- ptq commit {commit()}; onnxruntime {ort.__version__}; threads {'all' if a.threads <= 0 else a.threads}",
        f"- command: `{' '.join(sys.argv)}`",
        f"- model: {a.model}; images: the first N of the 10,000 Fashion-MNIST test images, batch {a.batch},"
        " the same preprocessing on both sides",
        "- ptq: one `ptq calibrate` (observers on all 23 quantizable tensors, archive written) + that method's"
        " `ptq export --format trt`; onnxruntime: create_calibrator + collect_data + compute_data"
        " (its defaults: Entropy 128 bins, Percentile 2048 bins at 99.999)",
        "- every run in its own process; peak RSS from wait4", "",
        f"## Side by side, {a.images} images", "",
        "| method | ptq s | ptq peak RSS MiB | onnxruntime s | onnxruntime peak RSS MiB | ptq faster by | ptq memory smaller by |",
        "|---|---|---|---|---|---|---|"]
    for m, ps, pr, os_, orss in rows:
        lines.append(f"| {m} | {ps:.2f} | {pr:.1f} | {os_:.2f} | {orss:.1f} | {os_ / ps:.2f}x | {orss / pr:.2f}x |")
    lines += ["", "## Memory bound (ptq calibrate)", "",
              "| images | s | peak RSS MiB |", "|---|---|---|",
              f"| 1,000 | {mem[1000][0]:.2f} | {mem[1000][1]:.1f} |",
              f"| 10,000 | {mem[10000][0]:.2f} | {mem[10000][1]:.1f} |", "",
              f"Peak RSS at 10,000 images is {ratio_mem:.3f}x that at 1,000 "
              f"({'within' if abs(ratio_mem - 1) <= 0.10 else 'NOT within'} 10%).", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
