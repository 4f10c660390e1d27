#!/usr/bin/env bash
# Makes .venv-bench for bench/calib_vs_ort.py and the accuracy benchmarks:
# onnxruntime.quantization needs ml_dtypes and onnx >= 1.16, newer than
# Debian's onnx 1.12 that the test oracles use, so the benchmarks get their
# own venv; h5py writes the text encoder's named-input sets
# (bench/accuracy_placement.py). Run after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! .venv-bench/bin/python3 -c "import onnxruntime.quantization, h5py" 2>/dev/null; then
    rm -rf .venv-bench
    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -q --disable-pip-version-check onnxruntime==1.32.0 onnx==1.17.0 ml_dtypes==0.5.1 \
        h5py==3.16.0
fi
echo ".venv-bench ready"
