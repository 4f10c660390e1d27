#!/usr/bin/env python3
"""Benchmark: ptq calibrate and ptq sensitivity on torchvision's ResNet-50
under `mpirun -np N`, against one rank and one plain process, with the check
that every rank count writes the same bytes (issue "Two-GPU scaling run").

The model is bench/resnet50_gpu.py's (random weights, BatchNorm folded, ONNX
opset 17, dynamic batch); the data are random uint8 224x224x3 images in HDF5
(NHWC): --images to calibrate on, and --sens-images of them, labelled with
PyTorch's FP32 predictions, for sensitivity (with the one-process archive).

Each configuration (--config, repeatable) is DEVICE:THREADS:NPS, e.g.
    cuda:0:1,2      the GPU; a plain process, then mpirun -np 1 and -np 2
                    (each rank takes GPU <node rank> modulo the GPUs it sees:
                    one GPU each on a two-GPU host, both on GPU 0 on one)
    cpu:8:1,2       the CPU, --threads 8 per rank: -np 2 has twice the cores
                    of -np 1, the CPU stand-in for a second GPU
--cpu-images and --cpu-sens-images size the CPU runs (ResNet-50 on 8 cores
runs about 20 img/s). A row gives the command's wall time, ptq's own figure
(calibrate: images over its observing loop, rank 0's, reduction included;
sensitivity: its `seconds`), the slowest rank's waiting and reducing
(PTQ_DIST_STATS) and whether the output equals the plain process's: the
archive byte for byte; the sensitivity report less its seconds and work
counts (runs, nodes_*), as tests/mpi_test.py compares it. --repeat N runs
each row N times and records the fastest (every run must write the same).
For the two-GPU run (nvidia-h200-x2): --config cuda:0:1,2 --images 4096
--repeat 3, and --sens-images 500 for the tensors split (fewer samples than
two batches of 256 a rank keeps every sample; 1,000 split the samples).
    python3 bench/mpi_resnet50.py --ptq bundle/bin/ptq --out $OUT/mpi50.md \\
        [--config cuda:0:1,2] [--config cpu:8:1,2] [--images 4096] [--sens-images 1000]
"""
import argparse
import datetime
import filecmp
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
import torch

from benchlib import commit, cpu_model, write_result
from resnet50_gpu import PREPROCESS, export, folded_resnet50, torch_predictions

WORK_KEYS = ("runs", "nodes_run", "nodes_if_every_run_were_whole")


def run(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"mpi_resnet50: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p, time.perf_counter() - t0


def dist_stats(stderr):
    """The slowest rank's (waiting s, reducing s, bytes) from PTQ_DIST_STATS's lines."""
    w = r = b = 0.0
    for m in re.finditer(r"ptq: dist: rank \d+ of \d+: \d+ collectives, (\d+) bytes, waiting ([0-9.e+-]+) s, "
                         r"reducing ([0-9.e+-]+) s", stderr):
        b, w, r = max(b, float(m[1])), max(w, float(m[2])), max(r, float(m[3]))
    return w, r, int(b)


def busy(stderr):
    """Each rank's busy seconds in a sensitivity run (PTQ_DIST_STATS), by rank."""
    return [float(m[2]) for m in sorted(re.finditer(r"ptq: dist: rank (\d+) of \d+: sensitivity on .* busy ([0-9.]+) s",
                                                     stderr), key=lambda m: int(m[1]))]


def same_sensitivity(a, b):
    x, y = ({k: v for k, v in json.load(open(p)).items() if k not in WORK_KEYS and not k.startswith("seconds")}
            for p in (a, b))
    return x == y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True, help="results markdown")
    ap.add_argument("--config", action="append", help="DEVICE:THREADS:NPS (see the docstring)")
    ap.add_argument("--images", type=int, default=4096, help="GPU calibration images")
    ap.add_argument("--sens-images", type=int, default=1000, help="GPU sensitivity images")
    ap.add_argument("--cpu-images", type=int, default=512)
    ap.add_argument("--cpu-sens-images", type=int, default=8)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--stages", default="calibrate,sensitivity")
    ap.add_argument("--repeat", type=int, default=1, help="run each row this many times, record the fastest")
    a = ap.parse_args()
    configs = a.config or ["cuda:0:1,2"]
    stages = a.stages.split(",")

    tmp = tempfile.mkdtemp(prefix="ptq-mpi50-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    net = folded_resnet50()
    exporter = export(net, J("resnet50.onnx"))
    n_img = max(a.images, a.cpu_images)
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(n_img, 224, 224, 3), dtype=np.uint8)
    n_sens = max(a.sens_images, a.cpu_sens_images)
    with h5py.File(J("images.h5"), "w") as f:
        f["images"] = images
    with h5py.File(J("sens.h5"), "w") as f:
        f["images"] = images[:n_sens]
        f["labels"] = torch_predictions(net, images[:n_sens], 250)
    del images

    mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "-x", "PTQ_DIST_STATS"]
    if os.geteuid() == 0:
        mpirun.insert(1, "--allow-run-as-root")
    env = dict(os.environ, PTQ_DIST_STATS="1")
    version = subprocess.run([a.ptq, "version"], capture_output=True, text=True).stdout
    rows = []
    for cfg in configs:
        device, threads, nps = cfg.split(":")
        nps = [int(n) for n in nps.split(",")]
        gpu = device.startswith("cuda")
        n_cal = a.images if gpu else a.cpu_images
        n_sen = a.sens_images if gpu else a.cpu_sens_images
        batch = a.batch if gpu else min(a.batch, 32)
        common = ["--layout", "NHWC", "--preprocess", PREPROCESS, "--device", device, "--batch", str(batch)]
        if int(threads):
            common += ["--threads", threads]
        tag = device.replace(":", "") + "-t" + threads
        ref_archive = None
        for stage in stages:
            if stage == "sensitivity" and ref_archive is None:
                sys.exit("mpi_resnet50: sensitivity needs the calibrate stage before it")
            for np_ in [0] + nps:
                name = J(f"{tag}-{stage}-{np_}")
                if stage == "calibrate":
                    args = ["calibrate", "--model", J("resnet50.onnx"), "--data", J("images.h5"), "--samples",
                            str(n_cal), "--out", name + ".h5", "--json"]
                else:
                    args = ["sensitivity", "--model", J("resnet50.onnx"), "--calib", ref_archive, "--data",
                            J("sens.h5"), "--samples", str(n_sen), "--out", name + ".json", "--json"]
                cmd = ([a.ptq] if np_ == 0 else mpirun + ["-np", str(np_), a.ptq]) + args + common
                best, all_same = None, True
                for rep in range(a.repeat):
                    p, wall = run(cmd, env)
                    print(f"mpi_resnet50: {device} threads {threads} {stage} np {np_ or 'plain'}, run {rep + 1}: "
                          f"{wall:.1f} s", file=sys.stderr, flush=True)
                    js = json.loads(p.stdout[p.stdout.index("{"):])
                    if stage == "calibrate":
                        own = f"{js['images_per_s']:.1f} img/s ({js['seconds']:.2f} s)"
                        rate = js["images_per_s"]
                        if np_ == 0:
                            ref_archive = name + ".h5"
                        same = filecmp.cmp(ref_archive, name + ".h5", shallow=False)
                    else:
                        own = f"{js['seconds']:.2f} s"
                        rate = n_sen / js["seconds"]
                        same = same_sensitivity(J(f"{tag}-{stage}-0.json"), name + ".json")
                    w, r, b = dist_stats(p.stderr)
                    if stage == "sensitivity" and np_ > 1:
                        own += " (ranks busy " + " / ".join(f"{x:.1f}" for x in busy(p.stderr)) + " s)"
                    row = dict(device=device, threads=threads, stage=stage, np=np_, images=n_cal if
                               stage == "calibrate" else n_sen, batch=batch, wall=wall, own=own, rate=rate,
                               wait=w, reduce=r, bytes=b)
                    all_same = all_same and same
                    if best is None or row["rate"] > best["rate"]:
                        best = row
                rows.append(dict(best, same=all_same))
    base = {}
    for r in rows:
        if r["np"] == 1:
            base[(r["device"], r["threads"], r["stage"])] = r["rate"]
    now = datetime.datetime.now(datetime.timezone.utc)
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    lines = [f"# ptq calibrate and sensitivity on ResNet-50 under mpirun ({now:%Y-%m-%d})", "",
             f"- ptq commit: {commit()}; date {now:%Y-%m-%d %H:%M} UTC",
             f"- machine: {len(gpus)} GPU(s) {', '.join(sorted(set(gpus))) or '-'}, {cpu_model()} "
             f"({os.cpu_count()} cores), {platform.system()} {platform.release()}",
             f"- {next((l for l in version.splitlines() if l.startswith('mpi:')), 'mpi: ?')}",
             f"- command: `python3 bench/mpi_resnet50.py {' '.join(sys.argv[1:])}`",
             f"- model: torchvision resnet50, random weights, BatchNorm folded, {exporter}, dynamic batch",
             "- data: random uint8 224x224x3 images (HDF5, NHWC), the first N of them; sensitivity's labelled "
             "with PyTorch's FP32 predictions and measured against the plain process's archive",
             "- mpirun " + " ".join(mpirun[1:]) + " -np N; wall: the whole command (start-up, model and data "
             "opening included); ptq's figure: calibrate's images over its observing loop (rank 0, the final "
             "reduction included), sensitivity's own seconds (and each rank's seconds busy with its share of the "
             f"runs); the fastest of {a.repeat} run(s) a row; speed-up: that figure against -np 1's; wait/reduce: "
             "the slowest rank's seconds waiting at and inside collectives; same: output equal to the plain "
             "process's (archive byte for byte; sensitivity report less seconds and work counts)", "",
             "| stage | device | threads/rank | ranks | images | batch | wall s | ptq's figure | speed-up vs 1 rank "
             "| wait s | reduce s | bytes | same |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b1 = base.get((r["device"], r["threads"], r["stage"]))
        speed = "-" if r["np"] == 0 or not b1 else f"{r['rate'] / b1:.2f}x"
        lines.append(f"| {r['stage']} | {r['device']} | {r['threads'] if int(r['threads']) else 'default'} | "
                     f"{r['np'] or 'plain'} | {r['images']} | {r['batch']} | {r['wall']:.1f} | {r['own']} | {speed} "
                     f"| {r['wait']:.3f} | {r['reduce']:.4f} | {r['bytes']} | "
                     f"{'(reference)' if r['np'] == 0 else 'yes' if r['same'] else '**NO**'} |")
    write_result(a.out, lines + [""])
    print("\n".join(lines))
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
