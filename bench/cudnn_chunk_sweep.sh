#!/usr/bin/env bash
# ptq eval and calibrate on ResNet-50 (the model and 2,048 images that
# bench/resnet50_targets.py leaves in /tmp/ptq-targets-*) at each
# PTQ_CUDNN_CHUNK_SHIFT: the rate over all batches and after the first, and
# the archive's SHA-256 (the same bytes whatever the chunk). Run on the GPU
# machine after `scripts/gpu-check.sh targets`:
#     bash bench/cudnn_chunk_sweep.sh
set -u
eval "$(bundle/setup.sh)"
d=$(python3 -c "import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], 'lib'))")
export PTQ_CUDNN_DIR=$d LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
t=$(ls -d /tmp/ptq-targets-* | head -1)
PRE=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from resnet50_gpu import PREPROCESS; print(PREPROCESS)")
for shift in 0 1 2 3; do
    for cmd in eval calibrate; do
        extra=""
        [ $cmd = calibrate ] && extra="--out /tmp/sweep.h5"
        for rep in 1 2; do
            PTQ_CUDNN_CHUNK_SHIFT=$shift bundle/bin/ptq $cmd --model $t/resnet50.onnx --data $t/images2048.h5 \
                --layout NHWC --preprocess "$PRE" --device cuda --batch 256 --json $extra 2>/dev/null |
                python3 -c "import json, sys; d = json.load(sys.stdin); print('shift $shift $cmd', round(d.get('images_per_s', 0)), round(d.get('images_per_s_steady', 0)))"
        done
    done
    [ -f /tmp/sweep.h5 ] && sha256sum /tmp/sweep.h5 | cut -c1-16
done
