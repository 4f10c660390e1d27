"""What the command-line oracle tests share (tests/cli_*_test.py): where
ptq, the demo model and Fashion-MNIST are, running ptq, recording checks,
and how onnxruntime's integer kernels behave on this CPU. ctest sets
PTQ_BIN and PTQ_SOURCE_DIR."""
import gzip
import os
import subprocess

import numpy as np

PTQ = os.environ.get("PTQ_BIN", "build/ptq")
SRC = os.environ.get("PTQ_SOURCE_DIR", ".")
MODEL = os.path.join(SRC, "models", "fmnist_resnet.onnx")
FM = os.environ.get("PTQ_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
failures = []


def ptq(*args, env=None):
    """Runs ptq, with env's variables added to the environment; (exit code, stdout, stderr)."""
    p = subprocess.run([PTQ, *args], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, **env) if env else None)
    return p.returncode, p.stdout, p.stderr


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
    if not ok:
        failures.append(name)


def have_demo():
    """The demo model and Fashion-MNIST's test split are there (else the test skips)."""
    return os.path.exists(MODEL) and os.path.exists(f"{FM}/t10k-images-idx3-ubyte.gz")


def fmnist_test(n, split="t10k"):
    """The first n test (or, split "train", training) images [n, 28, 28] uint8 and labels [n] int64."""
    with gzip.open(f"{FM}/{split}-images-idx3-ubyte.gz", "rb") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]
    with gzip.open(f"{FM}/{split}-labels-idx1-ubyte.gz", "rb") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n].astype(np.int64)
    return images, labels


def cpu_has_vnni():
    """The CPU has AVX-VNNI or AVX512-VNNI (Linux's /proc/cpuinfo flags). Without it onnxruntime's x86 integer
    kernels multiply uint8 by int8 with VPMADDUBSW, whose int16 pair sums saturate (its documented limitation,
    the reason for quantize_static's reduce_range): its all-optimization run of an INT8 or UINT8 Q/DQ model then
    rounds some sums other than ptq's simulation, which does not saturate, unless the weights are on the
    reduce_range grid [-64, 64] (reduce_range_flags)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return True  # unknown: hold the stricter bounds
    return "avx512_vnni" in flags or "avx_vnni" in flags


def reduce_range_flags(what="the INT8 plan"):
    """`ptq plan` flags for an INT8 plan whose Q/DQ export onnxruntime runs on its integer kernels: none where
    the CPU has VNNI; else --reduce-range (weights on onnxruntime's reduce_range grid [-64, 64], whose pair sums
    fit int16; cpu_has_vnni says why), with a note."""
    if cpu_has_vnni():
        return []
    print(f"note: no AVX-VNNI on this CPU: onnxruntime's integer kernels saturate uint8 x int8 pair sums in int16; "
          f"{what} takes --reduce-range (weights on [-64, 64], as quantize_static's reduce_range=True)")
    return ["--reduce-range"]


def check_ort_agrees(name, qdq, feeds, sim):
    """onnxruntime (CPU, graph optimizations off) on the exported Q/DQ model qdq makes the prediction of every row
    that `ptq validate` made (its --logits file sim)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    got = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    want = np.load(sim)
    same = int((got.argmax(1) == want.argmax(1)).sum())
    check(f"{name}: onnxruntime on the Q/DQ model makes ptq validate's prediction on all {len(got)} rows",
          same == len(got), f"{same} of {len(got)}, max |diff| {np.abs(got - want).max():.3g}")


def check_placements(label, model, data, feeds, path, placements=("trt", "all"), after_plan=None):
    """calibrate model on data, then for each placement: plan, validate (its --logits), export --format qdq, and
    onnxruntime on the export making validate's predictions (check_ort_agrees on feeds, the rows of data as the
    model's inputs). path(name): where a file of the run goes; after_plan(run, placement, plan): more checks of a
    plan that was made."""
    rc, _, err = ptq("calibrate", "--model", model, "--data", data, "--out", path(label + "-c.h5"))
    check(f"{label}: calibrate", rc == 0, err.strip()[-300:])
    for placement in placements:
        run = f"{label} ({placement})"

        def at(suffix):
            return path(f"{label}-{placement}{suffix}")
        rc, _, err = ptq("plan", path(label + "-c.h5"), "--model", model, "--placement", placement, "--out",
                         at(".json"))
        check(f"{run}: plan", rc == 0, err.strip()[-300:])
        if after_plan and rc == 0:
            after_plan(run, placement, at(".json"))
        rc, _, err = ptq("validate", "--model", model, "--plan", at(".json"), "--data", data, "--logits",
                         at(".npy"), "--report", at("-rep"))
        check(f"{run}: validate", rc == 0, err.strip()[-300:])
        rc, _, err = ptq("export", "--plan", at(".json"), "--model", model, "--format", "qdq", "--out", at(".onnx"))
        check(f"{run}: export --format qdq", rc == 0, err.strip()[-300:])
        if os.path.exists(at(".npy")) and os.path.exists(at(".onnx")):
            check_ort_agrees(run, at(".onnx"), feeds, at(".npy"))


def finish(test):
    print(f"{test}: {len(failures)} failed" + (": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0
