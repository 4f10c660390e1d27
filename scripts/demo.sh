#!/usr/bin/env bash
# The main job on the bundled default: sets up and builds (scripts/setup.sh),
# converts Fashion-MNIST to HDF5 sets, then for the demo model: FP32 eval on
# the 10,000 test images, calibration on 512 training images, the default
# INT8 plan, validation of the plan against FP32 on the test images, and the
# exports (TensorRT cache, ONNX Runtime tables, JSON ranges, Q/DQ ONNX).
# Everything lands in out/demo/. Extra arguments go to `ptq eval`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out/demo
FM=/usr/share/datasets/fashion-mnist
MODEL=models/fmnist_resnet.onnx
D=out/demo
for split in test train; do
    idx=$split; [ $split = test ] && idx=t10k
    if [ ! -f out/fmnist-$split.h5 ]; then
        build/ptq data convert --images $FM/$idx-images-idx3-ubyte.gz --labels $FM/$idx-labels-idx1-ubyte.gz \
            --class-names fashion-mnist --out out/fmnist-$split.h5
    fi
done
DEVICE=cpu
if build/ptq version | grep -q "gpu present"; then DEVICE=cuda; fi
echo "== FP32 accuracy"
build/ptq eval --model $MODEL --data out/fmnist-test.h5 --device "$DEVICE" --report $D/eval.json "$@"
echo
echo "== calibration (512 training images)"
build/ptq calibrate --model $MODEL --data out/fmnist-train.h5 --samples 512 --seed 0 --device "$DEVICE" \
    --out $D/calib.h5
echo
echo "== plan"
build/ptq plan $D/calib.h5 --model $MODEL --out $D/plan.json
echo
echo "== validation of the plan against FP32 (10,000 test images)"
build/ptq validate --model $MODEL --plan $D/plan.json --data out/fmnist-test.h5 --device "$DEVICE" --report $D/report \
    --calib $D/calib.h5
echo
echo "== exports"
build/ptq export $D/calib.h5 --model $MODEL --method percentile --format trt --out $D/calib.cache --quiet
build/ptq export $D/calib.h5 --model $MODEL --method percentile --format ort --out $D/ort --quiet
build/ptq export $D/calib.h5 --model $MODEL --method percentile --format json --out $D/ranges.json --quiet
build/ptq export --format qdq --plan $D/plan.json --model $MODEL --out $D/fmnist_resnet_qdq.onnx
echo "out/demo: calib.h5 (archive), plan.json, report/validate.{json,md} and report.html, calib.cache (TensorRT),"
echo "          ort/ (ONNX Runtime tables), ranges.json, fmnist_resnet_qdq.onnx (Q/DQ), eval.json"
