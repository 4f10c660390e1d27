"""What the command-line oracle tests share (tests/cli_*_test.py): where
ptq, the demo model and Fashion-MNIST are, running ptq, and recording
checks. ctest sets PTQ_BIN and PTQ_SOURCE_DIR."""
import gzip
import os
import subprocess

import numpy as np

PTQ = os.environ.get("PTQ_BIN", "build/ptq")
SRC = os.environ.get("PTQ_SOURCE_DIR", ".")
MODEL = os.path.join(SRC, "models", "fmnist_resnet.onnx")
FM = os.environ.get("PTQ_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
failures = []


def ptq(*args):
    """Runs ptq; (exit code, stdout, stderr)."""
    p = subprocess.run([PTQ, *args], capture_output=True, text=True, timeout=900)
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


def finish(test):
    print(f"{test}: {len(failures)} failed" + (": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0
