#!/usr/bin/env bash
# The main job on the bundled default: sets up and builds (scripts/setup.sh),
# converts Fashion-MNIST's 10,000 test images to an HDF5 set, and runs
# `ptq eval` of the demo model on them. Results land in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out
FM=/usr/share/datasets/fashion-mnist
if [ ! -f out/fmnist-test.h5 ]; then
    build/ptq data convert --images $FM/t10k-images-idx3-ubyte.gz --labels $FM/t10k-labels-idx1-ubyte.gz \
        --class-names fashion-mnist --out out/fmnist-test.h5
fi
DEVICE=cpu
if build/ptq version | grep -q "gpu present"; then DEVICE=cuda; fi
build/ptq eval --model models/fmnist_resnet.onnx --data out/fmnist-test.h5 --device "$DEVICE" \
    --report out/eval.json "$@"
echo "report written to out/eval.json"
