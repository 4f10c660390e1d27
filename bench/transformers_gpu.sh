#!/usr/bin/env bash
# The two transformer models on the GPU against the CPU (issue 13): the text
# encoder (models/text_encoder.onnx, named int64 inputs, data from
# scripts/train_text.py --out-data out/text) and the ViT (models/fmnist_vit.onnx,
# Fashion-MNIST test images): FP32 eval logits cuda vs cpu, calibrate on each
# device, one plan, validate on each device, the quantized logits compared.
# Run on the GPU machine from the repo root with bundle/ and out/text carried:
#     bash bench/transformers_gpu.sh > $OUT/transformers.txt
set -uo pipefail
b=$PWD/bundle; ptq=$b/bin/ptq
eval "$("$b/setup.sh")"
d=$(python3 -c "import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], 'lib'))" 2>/dev/null || true)
[ -e "$d/libcudnn.so.9" ] && export PTQ_CUDNN_DIR=$d LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
w=$(mktemp -d)
fm=$b/data/fashion-mnist
$ptq data convert --images $fm/t10k-images-idx3-ubyte.gz --labels $fm/t10k-labels-idx1-ubyte.gz \
    --class-names fashion-mnist --out $w/fm-test.h5 > /dev/null
compare() { # name, a.npy, b.npy
    python3 -c "
import numpy as np; a = np.load('$2'); c = np.load('$3')
r = np.linalg.norm(a - c, axis=1) / np.linalg.norm(c, axis=1)
print('$1 cuda vs cpu: rel max %.3g, max abs %.3g, argmax agree %.4f' % (r.max(), abs(a - c).max(), (a.argmax(1) == c.argmax(1)).mean()))"
}
for m in text vit; do
    if [ $m = text ]; then model=models/text_encoder.onnx data=out/text/test.h5 calib=out/text/calib.h5
    else model=models/fmnist_vit.onnx data=$w/fm-test.h5 calib=$w/fm-test.h5; fi
    for dev in cuda cpu; do
        $ptq eval --model $model --data $data --device $dev --logits $w/$m-$dev.npy --json > $w/$m-eval-$dev.json
        python3 -c "import json; print('$m $dev FP32 top-1', json.load(open('$w/$m-eval-$dev.json'))['top1'])"
        $ptq calibrate --model $model --data $calib --samples 512 --device $dev --out $w/$m-calib-$dev.h5 > /dev/null
    done
    compare "$m FP32 logits" $w/$m-cuda.npy $w/$m-cpu.npy
    $ptq plan $w/$m-calib-cuda.h5 --model $model --out $w/$m-plan.json | head -1
    for dev in cuda cpu; do
        $ptq validate --model $model --plan $w/$m-plan.json --data $data --device $dev --report $w/$m-rep-$dev \
            --logits $w/$m-q-$dev.npy | grep -m1 "top-1"
    done
    compare "$m quantized logits" $w/$m-q-cuda.npy $w/$m-q-cpu.npy
done
rm -rf "$w"
