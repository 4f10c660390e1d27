#!/usr/bin/env bash
# Installs what ptq needs on Debian 12 (as root, or with sudo), makes the
# Python venv for the test oracles (.venv: onnxruntime, hdf5plugin from PyPI
# on top of Debian's numpy/onnx/h5py/torch) and builds ptq into build/ with
# warnings as errors. Idempotent; called by scripts/demo.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
PKGS="build-essential cmake pkg-config libhdf5-dev libpng-dev zlib1g-dev libzstd-dev libcjson-dev
      libopenblas-dev libopenblas-openmp-dev dataset-fashion-mnist libonnx-testdata python3 python3-venv python3-numpy python3-onnx
      python3-h5py python3-flatbuffers chromium libopenmpi-dev openmpi-bin
      python3-torch python3-torchvision python3-pil libturbojpeg0-dev"
# chromium: headless, for tests/browser_report_test.py (81 MB download, 23 packages, 23 s to install on a
# Debian 12 VM that had the rest); the test skips without it. python3-torch/-torchvision: the torchvision
# zoo exports (tests/zoo_test.py); python3-pil + libturbojpeg0-dev: JPEG folders.
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ ! -x .venv/bin/python3 ] || ! .venv/bin/python3 -c "import onnxruntime, hdf5plugin" 2>/dev/null; then
    echo "setup: creating .venv (onnxruntime, hdf5plugin)"
    rm -rf .venv
    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install -q --disable-pip-version-check onnxruntime==1.32.0 hdf5plugin==7.1.0
fi

# CUDA sources build whenever nvcc is present (PTQ_CUDA); CI has the toolkit.
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPTQ_WERROR=ON -DPTQ_PYTHON="$PWD/.venv/bin/python3" >/dev/null
cmake --build build -j"$(nproc)"
