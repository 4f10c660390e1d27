#!/usr/bin/env bash
# What a session runs on the GPU machine (device tool, repo root, bundle/
# carried; make it here first with scripts/gpu-bundle.sh). Stages, all by
# default: tests (the GPU tests and every bundled C test), eval (the demo
# model on the GPU and that machine's CPU, onnxruntime agreement, the CPU
# benchmark), calib (ptq calibrate on the GPU: archives byte-identical across
# batch sizes and shards, against the CPU's, and the side-by-side benchmark
# against onnxruntime's calibrators). Logs go to $OUT (the device tool's
# folder) or out/gpu; pipeline (calibrate -> plan -> validate on the GPU and
# the CPU, validate's logits across batch sizes, --device cuda:N); resnet50
# (bench/resnet50_gpu.py: ptq eval on ResNet-50 against PyTorch FP32); sens50
# (bench/resnet50_sensitivity.py: ptq sensitivity on ResNet-50, 1,000 images);
# targets (bench/resnet50_targets.py: the GPU-speed targets against PyTorch);
# (TARGETS_ARGS: more arguments, e.g. --skip-cpu);
# kernels, resnet50tf32 (Nsight Compute tables; eval in TF32); steady (one steady batch's kernels, calibrate
# and eval); profile50
# (bench/resnet50_profile.py: --profile tables of eval, calibrate, validate; PROFILE50_ARGS); tune
# (bench/cudnn_tune_identity.py: cuDNN tuning changes no bit of ResNet-50's archive or logits);
# zoo (bench/zoo_gpu.sh: the torchvision zoo, resuming the record ZOO_PREV if
# set; ZOO_DEADLINE/ZOO_HARD as there); zoodiag (bench/zoo_diag.py with ZOO_DIAG_ARGS);
# mpi50 (bench/mpi_resnet50.py with MPI50_ARGS: ResNet-50 under mpirun); split (bench/conv_split_speed.py
# with SPLIT_ARGS: ResNet-50 FP32 under PTQ_CONV_SPLIT settings); splitk (bin/cudnn_splitk with SPLITK_ARGS:
# cuDNN's backend engines and split-K knobs on FP32 3x3 convs against float64).
# fp64 (--math fp64 on the demo model: logits against --device ref, archives across batches); math50
# (bench/resnet50_math.py with MATH50_ARGS: every pipeline command on ResNet-50 under each --math).
# Usage: scripts/gpu-check.sh [tests] [eval] [calib] [pipeline] [fp64] [resnet50] [sens50] [targets] [kernels] [steady] [resnet50tf32] [profile50] [tune] [zoo] [zoodiag] [mpi50] [split] [splitk] [math50]
set -uo pipefail
out=${OUT:-out/gpu}
mkdir -p "$out"
b=$PWD/bundle
[ -x "$b/bin/ptq" ] || { echo "gpu-check: no bundle/ (run scripts/gpu-bundle.sh here, carry bundle)"; exit 2; }
stages=${*:-tests eval calib pipeline resnet50}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
eval "$("$b/setup.sh")"
# libcublas is dlopen'ed (kernels/cuda/device.cu), so ldd does not list it: look for it too
for lib in $(ldd "$b/bin/ptq" | awk '/not found/ {print $1}') libcublas.so.13; do
    found=$(find /usr/local /opt /usr/lib -name "$lib" -print -quit 2>/dev/null || true)
    [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found"):$LD_LIBRARY_PATH
done
# cuDNN (dlopen'ed, kernels/cuda/cudnn.cu) from the wheel PyTorch uses, else anywhere usual
if [ -z "${PTQ_CUDNN_DIR:-}" ]; then
    d=$(python3 -c "import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], 'lib'))" 2>/dev/null || true)
    [ -n "$d" ] && [ -e "$d/libcudnn.so.9" ] || d=$(dirname "$(find /usr/local /opt /usr/lib -name libcudnn.so.9 -print -quit 2>/dev/null)")
    if [ -e "$d/libcudnn.so.9" ]; then
        export PTQ_CUDNN_DIR=$d LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
    fi
fi
echo "cuDNN: ${PTQ_CUDNN_DIR:-not found (convolutions use im2col + cuBLAS)}" | tee -a "$out/gpu.txt"
ptq=$b/bin/ptq
export PTQ_COMMIT=$(cat "$b/COMMIT" 2>/dev/null || echo unknown)
model=$b/models/fmnist_resnet.onnx
fm=$b/data/fashion-mnist
h5=/tmp/ptq-fm-test.h5
rm -f "$h5"
"$ptq" data convert --images "$fm/t10k-images-idx3-ubyte.gz" --labels "$fm/t10k-labels-idx1-ubyte.gz" \
    --class-names fashion-mnist --out "$h5" >/dev/null

stage_tests() {
    echo "== GPU tests"
    "$b/run-tests.sh" cuda 2>&1 | tee "$out/cuda-tests.log"
    echo "== all bundled C tests"
    "$b/run-tests.sh" all >"$out/all-tests.log" 2>&1
    tail -n 1 "$out/all-tests.log"
}

stage_eval() {
    echo "== ptq eval --device cuda"
    "$ptq" eval --model "$model" --data "$h5" --device cuda --report "$out/eval-cuda.json" |
        tee "$out/eval-cuda.txt" | head -n 6
    for dev in cuda cpu; do
        for batch in 256 1024; do
            r=$("$ptq" eval --model "$model" --data "$h5" --device $dev --batch $batch --json |
                python3 -c "import json,sys; d=json.load(sys.stdin); print('%s top1 %.2f%% %.0f img/s' % (d['device'], 100*d['top1'], d['images_per_s']))")
            echo "eval --device $dev --batch $batch: $r" | tee -a "$out/eval-rates.txt"
        done
    done
    echo "== onnxruntime agreement, ptq on the GPU"
    PTQ_BIN=$ptq PTQ_SOURCE_DIR=$b PTQ_FMNIST_DIR=$fm PTQ_EVAL_DEVICE=cuda python3 tests/eval_ort_test.py 2>&1 |
        tee "$out/eval-ort-cuda.log"
    echo "== CPU benchmark against onnxruntime on this machine"
    for t in $(nproc) 8; do
        PTQ_FMNIST_DIR=$fm python3 bench/eval_vs_ort.py --ptq "$ptq" --model "$model" \
            --threads "$t" --out-dir "$out" 2>&1 | grep -E "^\| |ratio"
    done
}

stage_calib() {
    local t=/tmp/ptq-gpu-calib
    rm -rf "$t" && mkdir -p "$t"
    echo "== ptq calibrate --device cuda: the same archive bytes whatever the batch and sharding"
    "$ptq" calibrate --model "$model" --data "$h5" --device cuda --out "$t/g256.h5" --batch 256 --json |
        tee "$out/calib-cuda.json"
    "$ptq" calibrate --model "$model" --data "$h5" --device cuda --out "$t/g1000.h5" --batch 1000 >/dev/null
    "$ptq" calibrate --model "$model" --data "$h5" --device cuda --out "$t/g7.h5" --batch 7 >/dev/null
    "$ptq" calibrate --model "$model" --data "$h5" --device cuda --out "$t/s0.h5" --shard 0/2 --batch 77 >/dev/null
    "$ptq" calibrate --model "$model" --data "$h5" --device cuda --out "$t/s1.h5" --shard 1/2 --batch 500 >/dev/null
    "$ptq" merge "$t/s1.h5" "$t/s0.h5" --out "$t/gm.h5"
    # the images normalized on the CPU (floats uploaded) instead of on the GPU (bytes uploaded)
    PTQ_DEVICE_PREPROCESS=0 "$ptq" calibrate --model "$model" --data "$h5" --device cuda --out "$t/ghost.h5" >/dev/null
    for f in g1000 g7 gm ghost; do
        if cmp -s "$t/g256.h5" "$t/$f.h5"; then echo "cuda archive $f.h5: identical to batch 256"
        else echo "cuda archive $f.h5: DIFFERS from batch 256"; fi
    done | tee "$out/calib-cuda-identical.txt"
    echo "== the CPU's archive of the same images, and the ranges of both"
    "$ptq" calibrate --model "$model" --data "$h5" --device cpu --out "$t/c256.h5" --json | tee "$out/calib-cpu.json"
    for m in minmax entropy percentile mse; do
        "$ptq" export "$t/g256.h5" --method $m --format json --out "$t/g-$m.json" --quiet
        "$ptq" export "$t/c256.h5" --method $m --format json --out "$t/c-$m.json" --quiet
        python3 - "$t/g-$m.json" "$t/c-$m.json" $m <<'PY'
import json, sys
g = {t["name"]: t["amax"] for t in json.load(open(sys.argv[1]))["tensors"]}
c = {t["name"]: t["amax"] for t in json.load(open(sys.argv[2]))["tensors"]}
rel = max(abs(g[n] - c[n]) / c[n] for n in c if c[n] > 0)
same = sum(g[n] == c[n] for n in c)
print(f"{sys.argv[3]:<10} GPU vs CPU archive ranges: {same}/{len(c)} identical, max relative difference {rel:.2e}")
PY
    done | tee "$out/calib-gpu-vs-cpu.txt"
    echo "== side by side with onnxruntime's calibrators"
    if python3 -c "import onnxruntime.quantization" 2>/dev/null; then
        for dev in cpu cuda; do
            PTQ_FMNIST_DIR=$fm python3 bench/calib_vs_ort.py --ptq "$ptq" --model "$model" --device $dev \
                --images 1000 --out "$out/calib-$dev.md" 2>&1 | tail -n 8
        done
    else
        echo "onnxruntime.quantization does not import here: $(python3 -c 'import onnxruntime.quantization' 2>&1 | tail -n 1)"
    fi
}

# The library pipeline on the GPU: calibrate -> plan -> validate (one model,
# one executor, FP32 and the plan as an overlay), against the same on the
# CPU; validate's logits bit-identical across batch sizes; --device cuda:N.
stage_pipeline() {
    local t=/tmp/ptq-pipe
    rm -rf "$t"; mkdir -p "$t"
    echo "== pipeline on the GPU and on the CPU"
    for dev in cuda cpu; do
        "$ptq" calibrate --model "$model" --data "$h5" --samples 512 --device $dev --out "$t/$dev.h5" >/dev/null &&
            "$ptq" plan "$t/$dev.h5" --model "$model" --out "$t/$dev-plan.json" --quiet &&
            "$ptq" validate --model "$model" --plan "$t/$dev-plan.json" --data "$h5" --device $dev \
                --report "$t/$dev-report" --logits "$t/$dev-q.npy" | sed -n '4,9p'
    done 2>&1 | tee "$out/pipeline.txt"
    "$ptq" validate --model "$model" --plan "$t/cuda-plan.json" --data "$h5" --device cuda --batch 1000 \
        --report "$t/cuda-report-b1000" --logits "$t/cuda-q-b1000.npy" >/dev/null
    if cmp -s "$t/cuda-q.npy" "$t/cuda-q-b1000.npy"; then echo "validate --device cuda: quantized logits identical at batch 256 and 1000"
    else echo "validate --device cuda: quantized logits DIFFER between batch 256 and 1000"; fi | tee -a "$out/pipeline.txt"
    # --reference: the FP32 side from eval's logits (the GPU's, and the CPU's: within the 1e-3 check)
    for dev in cuda cpu; do
        "$ptq" eval --model "$model" --data "$h5" --device $dev --logits "$t/fp32-$dev.npy" >/dev/null
        "$ptq" validate --model "$model" --plan "$t/cuda-plan.json" --data "$h5" --device cuda \
            --reference "$t/fp32-$dev.npy" --report "$t/cuda-report-ref-$dev" --logits "$t/cuda-q-ref-$dev.npy" >/dev/null
        echo "validate --device cuda --reference (eval --device $dev): exit $?;" \
            "quantized logits $(cmp -s "$t/cuda-q.npy" "$t/cuda-q-ref-$dev.npy" && echo identical || echo DIFFER)" \
            "to validate without it"
    done 2>&1 | tee -a "$out/pipeline.txt"
    python3 - "$t" <<'PY' | tee -a "$out/pipeline.txt"
import json, sys
t = sys.argv[1]
for d in ("cuda", "cpu"):
    r = json.load(open(f"{t}/cuda-report-ref-{d}/validate.json"))
    print("validate --reference (eval on %s): first batch median rel diff %.3g, top-1 fp32 / quant %.4f / %.4f"
          % (d, r["fp32_reference_median_rel_diff"], r["top1_fp32"], r["top1_quant"]))
g, c = (json.load(open(f"{t}/{d}-report/validate.json")) for d in ("cuda", "cpu"))
print("top-1 fp32 / quant: cuda %.4f / %.4f, cpu %.4f / %.4f" % (g["top1_fp32"], g["top1_quant"], c["top1_fp32"], c["top1_quant"]))
PY
    for d in cuda:0 cuda:7; do
        "$ptq" eval --model "$model" --data "$h5" --device $d --limit 256 >/dev/null 2>"$t/err.txt"
        echo "eval --device $d: exit $? $(head -c 200 "$t/err.txt")"
    done | tee -a "$out/pipeline.txt"
}

# --math fp64 on the demo model: the GPU's logits against the reference
# kernels' (which sum in double too) and the default FP32's; archives the
# same bytes whatever the batch; an fp64 archive refused by merge with fp32.
stage_fp64() {
    local t=/tmp/ptq-fp64
    rm -rf "$t"; mkdir -p "$t"
    echo "== --math fp64: logits against --device ref, archives across batches"
    "$ptq" eval --model "$model" --data "$h5" --device ref --limit 2000 --logits "$t/ref.npy" >/dev/null
    "$ptq" eval --model "$model" --data "$h5" --device cuda --limit 2000 --logits "$t/fp32.npy" >/dev/null
    "$ptq" eval --model "$model" --data "$h5" --device cuda --math fp64 --limit 2000 --logits "$t/fp64.npy" \
        --json >"$t/fp64.json"
    python3 - "$t" <<'PY' | tee "$out/fp64.txt"
import json, sys
import numpy as np
t = sys.argv[1]
ref = np.load(f"{t}/ref.npy")
for m in ("fp32", "fp64"):
    y = np.load(f"{t}/{m}.npy")
    rel = np.abs(y - ref).max() / np.abs(ref).max()
    print(f"eval --device cuda --math {m}: {np.mean(y == ref):.4f} of logits with the ref's bits, "
          f"max |diff| / max |ref| {rel:.3g}, argmax agreement {np.mean(y.argmax(1) == ref.argmax(1)):.4f}")
print("eval --math fp64 JSON math:", json.load(open(f"{t}/fp64.json"))["math"])
PY
    for b in 256 1000 7; do
        "$ptq" calibrate --model "$model" --data "$h5" --samples 2000 --device cuda --math fp64 --batch $b \
            --out "$t/c$b.h5" >/dev/null
    done
    "$ptq" calibrate --model "$model" --data "$h5" --samples 2000 --device cuda --out "$t/c32.h5" >/dev/null
    for b in 1000 7; do
        cmp -s "$t/c256.h5" "$t/c$b.h5" && echo "fp64 archive at batch $b: identical to batch 256" ||
            echo "fp64 archive at batch $b: DIFFERS from batch 256"
    done | tee -a "$out/fp64.txt"
    "$ptq" merge "$t/c256.h5" "$t/c32.h5" --out "$t/m.h5" 2>&1 | head -n 2 | tee -a "$out/fp64.txt"
}

# ResNet-50 on the GPU: ptq eval (cuDNN, and PTQ_CUDNN=0) against PyTorch FP32
stage_resnet50() {
    echo "== ResNet-50: ptq eval --device cuda against PyTorch"
    python3 bench/resnet50_gpu.py --ptq "$ptq" --out "$out/resnet50.md" 2>&1 | tee "$out/resnet50.log" |
        grep -E "^\| |ratio|logits|notes"
}

# The GPU-speed targets (a)-(e) and the CPU path against onnxruntime, one run (bench/resnet50_targets.py)
stage_targets() {
    echo "== ResNet-50 targets: ptq against PyTorch (and onnxruntime's calibrators on the CPU)"
    python3 bench/resnet50_targets.py --ptq "$ptq" --out "$out/targets.md" ${TARGETS_ARGS:-} 2>&1 | tee "$out/targets.log" |
        grep -E "^\| |met\.|ratio|Error|error"
}

# ResNet-50 sensitivity on the GPU: both modes, every tensor, 1,000 images (target 120 s)
stage_sens50() {
    echo "== ResNet-50: ptq sensitivity --device cuda"
    python3 bench/resnet50_sensitivity.py --ptq "$ptq" --out "$out/sens50.md" 2>&1 | tee "$out/sens50.log" |
        grep -E "^\| |wall|Error|error"
}

# cuDNN's algorithms on ResNet-50's convolutions (bin/cudnn_survey), and the
# kernel-by-kernel comparison with PyTorch under Nsight Compute, fp32 and tf32
stage_kernels() {
    echo "== cuDNN algorithm survey"
    "$b/bin/cudnn_survey" >"$out/cudnn-survey.md" 2>&1; grep -E "^## |all 53" "$out/cudnn-survey.md"
    for m in fp32 tf32; do
        echo "== kernels ($m)"
        python3 bench/resnet50_kernels.py --ptq "$ptq" --math $m --ptq-args "--math $m" --out "$out/kernels-$m.md" 2>&1 |
            tee "$out/kernels-$m.log" | grep -E "^\*\*|^### |error|Error"
    done
}

# ResNet-50: one steady batch's kernels (Nsight Compute; 512 images less 256) of calibrate and eval, fp32
# (STEADY_COMMANDS: which of them)
stage_steady() {
    for c in ${STEADY_COMMANDS:-calibrate eval}; do
        echo "== steady batch kernels ($c)"
        python3 bench/resnet50_kernels.py --ptq "$ptq" --command $c --no-torch --steady --out "$out/steady-$c.md" \
            --rows "$out/steady-$c.csv" 2>&1 | tee "$out/steady-$c.log" | grep -E "^\*\*|^\| [a-z(]|error|Error"
    done
}

# ResNet-50: --profile tables of eval (fused and not), calibrate and validate (bench/resnet50_profile.py)
stage_profile50() {
    echo "== ResNet-50: where the time goes (--profile)"
    python3 bench/resnet50_profile.py --ptq "$ptq" --out "$out/profile50.md" ${PROFILE50_ARGS:-} 2>&1 | tee "$out/profile50.log" |
        grep -E "^\| |^[a-zA-Z(].* [0-9.]+%$|^total|Error|error|exited"
}

# ResNet-50 eval against PyTorch in TF32 (channels-last)
stage_resnet50tf32() {
    echo "== ResNet-50 tf32: ptq eval --math tf32 against PyTorch TF32 channels-last"
    python3 bench/resnet50_gpu.py --ptq "$ptq" --math tf32 --out "$out/resnet50-tf32.md" 2>&1 | tee "$out/resnet50-tf32.log" |
        grep -E "^\| |ratio|logits"
}

# cuDNN tuning changes no bit: ResNet-50's archive and logits tuned and not, two batch sizes (bench/cudnn_tune_identity.py)
stage_tune() {
    echo "== cuDNN tuning: ResNet-50 archive and logits with and without it"
    python3 bench/cudnn_tune_identity.py --ptq "$ptq" --out "$out/tune.md" 2>&1 | tee "$out/tune.log" |
        grep -E "^\| |^- |Error|error|exited"
    python3 bench/cudnn_tune_identity.py --ptq "$ptq" --out "$out/tune-tf32.md" --math tf32 2>&1 |
        tee "$out/tune-tf32.log" | grep -E "^\| |^- |Error|error|exited"
}

# one zoo model's FP32 logits under several environments (bench/zoo_diag.py; ZOO_DIAG_ARGS: its arguments)
stage_zoodiag() {
    echo "== zoo diagnosis (bench/zoo_diag.py ${ZOO_DIAG_ARGS:-})"
    python3 bench/zoo_diag.py --ptq "$ptq" ${ZOO_DIAG_ARGS:-} 2>&1 | tee "$out/zoo-diag.log" | grep -v Warning
}

# ResNet-50's FP32 forward with convolutions summed in slices of input channels and without
# (bench/conv_split_speed.py; SPLIT_ARGS: its --splits, --repeat, ...), against PyTorch FP32
stage_split() {
    echo "== ResNet-50: PTQ_CONV_SPLIT settings (bench/conv_split_speed.py ${SPLIT_ARGS:-})"
    python3 bench/conv_split_speed.py --ptq "$ptq" --out "$out/split.md" ${SPLIT_ARGS:-} 2>&1 | tee "$out/split.log"
}

# cuDNN's backend engines and their split-K knobs against float64 and the legacy algorithms (bench/cudnn_splitk.c;
# SPLITK_ARGS: its --budget-s, --tc). Engines compiled at run time need NVRTC: the wheel's, where PyTorch has one.
stage_splitk() {
    echo "== cuDNN backend engines and split-K knobs (bin/cudnn_splitk ${SPLITK_ARGS:-})"
    local nv name=cudnn-splitk
    case " ${SPLITK_ARGS:-} " in *" --tc "*) name=cudnn-splitk-tc ;; esac
    nv=$(python3 -c "import nvidia, os; print(list(nvidia.__path__)[0])" 2>/dev/null || true)
    nv=$(find ${nv:+"$nv"} /usr/local/cuda/lib64 -name 'libnvrtc.so*' -print -quit 2>/dev/null || true)
    [ -n "$nv" ] && export LD_LIBRARY_PATH=$(dirname "$nv"):$LD_LIBRARY_PATH
    echo "NVRTC: ${nv:-not found}" | tee -a "$out/gpu.txt"
    "$b/bin/cudnn_splitk" ${SPLITK_ARGS:-} >"$out/$name.md" 2>"$out/$name.err"
    echo "cudnn_splitk exited $?"
    sed -n '/^## Summary/,$p' "$out/$name.md"
    tail -n 8 "$out/$name.err"
}

# ResNet-50 calibrate and sensitivity under mpirun, against one rank and one plain process (bench/mpi_resnet50.py;
# MPI50_ARGS: its --config, --images, ... options)
stage_mpi50() {
    echo "== ResNet-50 under mpirun (bench/mpi_resnet50.py ${MPI50_ARGS:-})"
    python3 bench/mpi_resnet50.py --ptq "$ptq" --out "$out/mpi50.md" ${MPI50_ARGS:-} 2>&1 | tee "$out/mpi50.log" |
        grep -E "^\| |mpi_resnet50|Error|error"
}

# every pipeline command on ResNet-50 under each --math (bench/resnet50_math.py; MATH50_ARGS: its options)
stage_math50() {
    echo "== ResNet-50: every command under each --math (bench/resnet50_math.py ${MATH50_ARGS:-})"
    python3 bench/resnet50_math.py --ptq "$ptq" --out "$out/math50.md" ${MATH50_ARGS:-} 2>&1 |
        tee "$out/math50.log" | grep -E "^\| |^- |^  - |resnet50_math|Error|error"
}

# the torchvision zoo (issue 18): OUT/zoo/zoo-gpu.md, resumed from ZOO_PREV (a record brought back into the tree)
stage_zoo() {
    echo "== torchvision zoo (bench/zoo_gpu.sh)"
    bench/zoo_gpu.sh "$ptq" "$out/zoo" ${ZOO_PREV:+"$ZOO_PREV"}
}

for s in $stages; do "stage_$s"; done
