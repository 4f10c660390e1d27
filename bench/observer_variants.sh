#!/usr/bin/env bash
# Side-by-side timing of variant builds of libptq: kernels/cuda/*.cu recompiled
# with other compile-time knobs (observe.cu's OBS_VEC, OBS_PREFETCH,
# OBS_CHAIN_THREADS, OBS_CHAIN_BLOCKS_PER_SM, OBS_ONCE_BLOCKS_PER_SM), each
# linked into its own libptq.so.0 that the bundle's ptq loads through
# LD_LIBRARY_PATH. bench/results/2026-12-03-resnet50-observers-2-h200.md's
# variant table was taken this way.
#   here (after cmake --build build):
#     bench/observer_variants.sh build NAME "DEFINES" [FILE.cu ...]
#       -> var/NAME/libptq.so.0.xz (sm_90; FILE.cu under kernels/cuda, default observe.cu)
#   on the GPU machine (device tool, carry bundle and var), after
#   `scripts/gpu-check.sh targets` made its model and images in /tmp/ptq-targets-*:
#     bench/observer_variants.sh run [NAME ...]      (B: the bundle's own library; default B and every var/*)
#       ptq calibrate (FP32, TF32) and eval's steady img/s, REPS runs each (default 2), and whether each
#       archive is byte-identical to the targets run's; NCU_OUT=DIR adds one chain pass under ncu --set full.
set -euo pipefail
mode=${1:-}
case $mode in
build)
    [ $# -ge 3 ] || { echo "usage: $0 build NAME \"DEFINES\" [FILE.cu ...]" >&2; exit 2; }
    name=$2 defs=$3
    shift 3
    files=${*:-observe.cu}
    root=$PWD b=$PWD/build
    [ -f "$b/CMakeFiles/ptq.dir/objects1" ] || { echo "observer_variants: no build/ (cmake --build build first)" >&2; exit 2; }
    out=$root/var/$name tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$out"
    cuda_defines=$(sed -n 's/^CUDA_DEFINES = //p' "$b/CMakeFiles/ptq_objects.dir/flags.make")
    cp "$b/CMakeFiles/ptq.dir/objects1" "$tmp/objects1"
    for f in $files; do
        (cd "$b" && eval /usr/local/cuda/bin/nvcc -O3 -DNDEBUG "$cuda_defines" $defs \
            --generate-code=arch=compute_90,code=sm_90 -Xcompiler=-fPIC -Xcompiler=-fvisibility=hidden \
            --options-file CMakeFiles/ptq_objects.dir/includes_CUDA.rsp -I../kernels/cuda \
            -c "../kernels/cuda/$f" -o "$tmp/$f.o")
        grep -q "kernels/cuda/$f.o" "$tmp/objects1" || { echo "observer_variants: $f is not in libptq" >&2; exit 2; }
        sed -i "s|CMakeFiles/ptq_objects.dir/kernels/cuda/$f.o|$tmp/$f.o|" "$tmp/objects1"
    done
    (cd "$b" && g++ -fPIC -Wl,--exclude-libs,ALL -Wl,--no-undefined -shared -Wl,-soname,libptq.so.0 \
        -o "$out/libptq.so.0" @"$tmp/objects1" @CMakeFiles/ptq.dir/linkLibs.rsp \
        -L/usr/local/cuda/targets/x86_64-linux/lib/stubs -L/usr/local/cuda/targets/x86_64-linux/lib)
    xz -f "$out/libptq.so.0"
    echo "$defs ($files)" >"$out/DEFINES"
    echo "observer_variants: $out/libptq.so.0.xz: $defs ($files)"
    ;;
run)
    shift
    eval "$(bundle/setup.sh)"
    found=$(find /usr/local /opt /usr/lib -name libcublas.so.13 -print -quit 2>/dev/null || true)
    [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found"):$LD_LIBRARY_PATH
    d=$(python3 -c "import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], 'lib'))" 2>/dev/null || true)
    [ -n "$d" ] && export PTQ_CUDNN_DIR=$d LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
    export PTQ_COMMIT=$(cat bundle/COMMIT 2>/dev/null || echo unknown)
    T=$(ls -d /tmp/ptq-targets-* 2>/dev/null | head -n 1)
    [ -n "$T" ] || { echo "observer_variants: no /tmp/ptq-targets-* (run scripts/gpu-check.sh targets first)" >&2; exit 2; }
    pre=$(cd bench && python3 -c "from resnet50_gpu import PREPROCESS; print(PREPROCESS)")
    common=(--model "$T/resnet50.onnx" --layout NHWC --preprocess "$pre" --batch 256 --device cuda)
    steady() { python3 -c "import json; d=json.load(open('/tmp/ov.json')); print(round(d.get('images_per_s_steady', 0)))"; }
    variants=${*:-B $(ls var 2>/dev/null)}
    for v in $variants; do
        lp=$LD_LIBRARY_PATH
        if [ "$v" != B ]; then
            xz -dkf "var/$v/libptq.so.0.xz"
            lp=$PWD/var/$v:$LD_LIBRARY_PATH
        fi
        what=$(cat "var/$v/DEFINES" 2>/dev/null || echo "the bundle's library")
        for m in fp32 tf32; do
            rates=""
            for _ in $(seq "${REPS:-2}"); do
                LD_LIBRARY_PATH=$lp bundle/bin/ptq calibrate "${common[@]}" --data "$T/images2048.h5" --math $m \
                    --out /tmp/ov-$v-$m.h5 --json >/tmp/ov.json
                rates="$rates $(steady)"
            done
            ref=$T/calib.h5
            [ $m = tf32 ] && ref=$T/calib-tf32.h5
            same=DIFFERS
            cmp -s /tmp/ov-$v-$m.h5 "$ref" && same=identical
            echo "variant $v ($what) calibrate $m steady img/s:$rates; archive $same to the targets run's"
        done
        rates=""
        for _ in $(seq "${REPS:-2}"); do
            LD_LIBRARY_PATH=$lp bundle/bin/ptq eval "${common[@]}" --data "$T/images2048.h5" --json >/tmp/ov.json
            rates="$rates $(steady)"
        done
        echo "variant $v ($what) eval fp32 steady img/s:$rates"
    done
    if [ -n "${NCU_OUT:-}" ] && command -v ncu >/dev/null; then
        ncu --set full -k regex:observe_chain_kernel --launch-skip 60 --launch-count 1 -f -o /tmp/ov-chain \
            bundle/bin/ptq calibrate "${common[@]}" --data "$T/images1000.h5" --out /tmp/ov-ncu.h5 >/tmp/ov-ncu.log 2>&1 ||
            tail -n 5 /tmp/ov-ncu.log
        ncu --import /tmp/ov-chain.ncu-rep --page details --csv >"$NCU_OUT/chain-details.csv"
        ncu --import /tmp/ov-chain.ncu-rep --page source --csv --print-source sass >"$NCU_OUT/chain-sass.csv"
        python3 bench/ncu_sass_summary.py "$NCU_OUT/chain-sass.csv" >"$NCU_OUT/chain-sass.md"
        grep -E "Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per" "$NCU_OUT/chain-details.csv" |
            cut -c1-200
    fi
    ;;
*)
    echo "usage: $0 build NAME \"DEFINES\" [FILE.cu ...] | run [NAME ...]" >&2
    exit 2
    ;;
esac
