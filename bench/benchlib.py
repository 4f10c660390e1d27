"""What the benchmark scripts share: Fashion-MNIST IDX reading and the
machine's description for bench/results."""
import gzip
import os
import platform
import subprocess

import numpy as np

FM = os.environ.get("PTQ_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")


def idx(path):
    """An IDX file (optionally gzip'd) as a uint8 array of its dims."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def commit():
    """The ptq commit measured: $PTQ_COMMIT (scripts/gpu-check.sh sets it from
    bundle/COMMIT), else this checkout's HEAD, '-dirty' when it has changes."""
    if os.environ.get("PTQ_COMMIT"):
        return os.environ["PTQ_COMMIT"]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], capture_output=True).returncode != 0
    return (head or "unknown") + ("-dirty" if dirty else "")


def write_result(path, lines):
    """A bench/results record: the lines joined, written to path (its folder made) and printed."""
    text = "\n".join(lines)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(text)
