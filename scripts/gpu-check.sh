#!/usr/bin/env bash
# What a session runs on the GPU machine (device tool, repo root, bundle/
# carried; make it here first with scripts/gpu-bundle.sh): the GPU parity
# tests, every bundled C test, the demo model's eval on the GPU and on that
# machine's CPU, the onnxruntime agreement check on the GPU, and the CPU
# benchmark against onnxruntime. Logs go to $OUT (the device tool's folder)
# or out/gpu. Usage: scripts/gpu-check.sh
set -uo pipefail
out=${OUT:-out/gpu}
mkdir -p "$out"
b=$PWD/bundle
[ -x "$b/bin/ptq" ] || { echo "gpu-check: no bundle/ (run scripts/gpu-bundle.sh here, carry bundle)"; exit 2; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
echo "== GPU tests"
"$b/run-tests.sh" cuda 2>&1 | tee "$out/cuda-tests.log"
echo "== all bundled C tests"
"$b/run-tests.sh" all >"$out/all-tests.log" 2>&1
tail -n 1 "$out/all-tests.log"
eval "$("$b/setup.sh")"
for lib in $(ldd "$b/bin/ptq" | awk '/not found/ {print $1}'); do
    found=$(find /usr/local /opt /usr/lib -name "$lib" -print -quit 2>/dev/null || true)
    [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found"):$LD_LIBRARY_PATH
done
fm=$b/data/fashion-mnist
h5=/tmp/ptq-fm-test.h5
rm -f "$h5"
"$b/bin/ptq" data convert --images "$fm/t10k-images-idx3-ubyte.gz" --labels "$fm/t10k-labels-idx1-ubyte.gz" \
    --class-names fashion-mnist --out "$h5"
echo "== ptq eval --device cuda"
"$b/bin/ptq" eval --model "$b/models/fmnist_resnet.onnx" --data "$h5" --device cuda --report "$out/eval-cuda.json" |
    tee "$out/eval-cuda.txt" | head -n 6
for dev in cuda cpu; do
    for batch in 256 1024; do
        r=$("$b/bin/ptq" eval --model "$b/models/fmnist_resnet.onnx" --data "$h5" --device $dev --batch $batch --json |
            python3 -c "import json,sys; d=json.load(sys.stdin); print('%s top1 %.2f%% %.0f img/s' % (d['device'], 100*d['top1'], d['images_per_s']))")
        echo "eval --device $dev --batch $batch: $r" | tee -a "$out/eval-rates.txt"
    done
done
echo "== onnxruntime agreement, ptq on the GPU"
PTQ_BIN=$b/bin/ptq PTQ_SOURCE_DIR=$b PTQ_FMNIST_DIR=$fm PTQ_EVAL_DEVICE=cuda python3 tests/eval_ort_test.py 2>&1 |
    tee "$out/eval-ort-cuda.log"
echo "== CPU benchmark against onnxruntime on this machine"
for t in $(nproc) 8; do
    PTQ_FMNIST_DIR=$fm python3 bench/eval_vs_ort.py --ptq "$b/bin/ptq" --model "$b/models/fmnist_resnet.onnx" \
        --threads "$t" --out-dir "$out" 2>&1 | grep -E "^\| |ratio"
done
