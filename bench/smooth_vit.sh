#!/usr/bin/env bash
# The ViT (models/fmnist_vit.onnx) with and without `ptq smooth` (alpha 0.5):
# calibrate on 512 training images, the default INT8 plan, validate on the
# 10,000 test images; prints each model's FP32 -> INT8 top-1. Needs build/ptq
# and the Fashion-MNIST sets of the README's demo (out/fmnist-train.h5,
# out/fmnist-test.h5):
#     bash bench/smooth_vit.sh
set -euo pipefail
P=${PTQ_BIN:-build/ptq}
w=$(mktemp -d)
$P smooth --model models/fmnist_vit.onnx --data out/fmnist-train.h5 --samples 512 --out $w/vit_smooth.onnx
for m in models/fmnist_vit.onnx $w/vit_smooth.onnx; do
    t=$(basename $m .onnx)
    $P calibrate --model $m --data out/fmnist-train.h5 --samples 512 --out $w/$t-calib.h5 > /dev/null
    $P plan $w/$t-calib.h5 --model $m --out $w/$t-plan.json > /dev/null
    echo "$t: $($P validate --model $m --plan $w/$t-plan.json --data out/fmnist-test.h5 --report $w/$t-report | grep -m1 'top-1')"
done
rm -rf "$w"
