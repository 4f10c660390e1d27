#!/usr/bin/env bash
# The main job on the bundled default: sets up and builds (scripts/setup.sh),
# converts Fashion-MNIST to HDF5 sets, runs `ptq eval` of the demo model on
# the 10,000 test images, calibrates it on 1,000 training images and exports
# the entropy ranges for TensorRT, ONNX Runtime and as JSON. Results land in
# out/. Extra arguments go to `ptq eval`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out
FM=/usr/share/datasets/fashion-mnist
MODEL=models/fmnist_resnet.onnx
for split in test train; do
    idx=$split; [ $split = test ] && idx=t10k
    if [ ! -f out/fmnist-$split.h5 ]; then
        build/ptq data convert --images $FM/$idx-images-idx3-ubyte.gz --labels $FM/$idx-labels-idx1-ubyte.gz \
            --class-names fashion-mnist --out out/fmnist-$split.h5
    fi
done
DEVICE=cpu
if build/ptq version | grep -q "gpu present"; then DEVICE=cuda; fi
build/ptq eval --model $MODEL --data out/fmnist-test.h5 --device "$DEVICE" --report out/eval.json "$@"
echo "report written to out/eval.json"
echo
build/ptq calibrate --model $MODEL --data out/fmnist-train.h5 --samples 1000 --seed 0 --device "$DEVICE" \
    --out out/calib.h5
echo
build/ptq export out/calib.h5 --model $MODEL --method entropy --format trt --out out/calib.cache --quiet
build/ptq export out/calib.h5 --model $MODEL --method entropy --format ort --out out/ort --quiet
build/ptq export out/calib.h5 --model $MODEL --method entropy --format json --out out/ranges.json
echo "calibration archive out/calib.h5; TensorRT cache out/calib.cache; ONNX Runtime tables out/ort/"
