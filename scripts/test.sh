#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs the whole test suite:
# unit, parity, conformance (ONNX's own backend tests), oracle (onnxruntime,
# h5py) and cuda (skipped, exit 77, without a GPU). Extra args go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
