#!/usr/bin/env bash
# The main job on the bundled default: sets up and builds (scripts/setup.sh),
# converts Fashion-MNIST to HDF5 sets, then for the demo model: FP32 eval on
# the 10,000 test images, then `ptq run`: calibration on 512 training images,
# per-tensor sensitivity, the default INT8 plan, validation of the plan
# against FP32 on the test images, and the exports (TensorRT cache, ONNX
# Runtime tables, JSON ranges, Q/DQ ONNX).
# Everything lands in out/demo/. Extra arguments go to `ptq eval`; without
# them eval also writes its logits (fp32.npy), which `ptq run --reference`
# uses as validate's FP32 side.
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
# without extra arguments, eval's FP32 logits stand in for validate's FP32 pass (ptq run --reference)
REF=()
[ $# -eq 0 ] && REF=(--reference $D/fp32.npy)
build/ptq eval --model $MODEL --data out/fmnist-test.h5 --device "$DEVICE" --report $D/eval.json \
    ${REF:+--logits $D/fp32.npy} "$@"
echo
echo "== ptq run: calibrate (512 training images) -> sensitivity (1,000 test images) -> plan -> validate"
echo "   (10,000 test images) -> exports; a second run skips what is done (out/demo/run.json)"
build/ptq run --model $MODEL --calib-data out/fmnist-train.h5 --data out/fmnist-test.h5 --device "$DEVICE" \
    --calib-samples 512 --samples 1000 --out $D "${REF[@]}"
echo "out/demo: eval.json (and fp32.npy, its logits), calib.h5 (archive), sens.json and sens.md (sensitivity), plan.json,"
echo "          report/validate.{json,md} and report.html, calib.cache (TensorRT), ort/ (ONNX Runtime tables),"
echo "          ranges.json, model_qdq.onnx (Q/DQ)"
