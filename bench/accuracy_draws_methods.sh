#!/usr/bin/env bash
# ptq's plan with other calibrators on the archives bench/accuracy_draws.py (or bench/draw_archives.py) made, one per
# draw: for each TAG:MODEL:SCRATCH:TEST given, every SCRATCH/TAG-dK-c.h5 (draw K's `ptq calibrate`) is planned with
# `--method minmax` for INT8 and for FP8 (--core fp8), and `ptq validate` on SCRATCH/TEST prints its top-1.
# VARIANTS (space-separated NAME:PLAN-FLAGS) replaces those two, e.g. "int8: fp8:--core fp8" for the default plans.
# Prints "TAG dK VARIANT TOP1" lines; scratch files go to a temporary folder, removed at the end.
#
#     bench/accuracy_draws_methods.sh PTQ TAG:MODEL:SCRATCH:TEST ...
#     bench/accuracy_draws_methods.sh build/ptq demo:models/fmnist_resnet.onnx:/tmp/ptq-bench-draws-X:test.h5 \
#         text:models/text_encoder.onnx:/tmp/ptq-bench-draws-Y:text-test.h5
set -euo pipefail
if [ $# -lt 2 ]; then
    sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
ptq=$(realpath "$1")
shift
variants=("int8-minmax:--method minmax" "fp8-minmax:--core fp8 --method minmax")
if [ -n "${VARIANTS:-}" ]; then
    variants=()
    for v in $VARIANTS; do
        if [[ $v == *:* ]]; then variants+=("$v"); else variants[${#variants[@]}-1]+=" $v"; fi
    done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for spec in "$@"; do
    IFS=: read -r tag model scratch test <<<"$spec"
    for archive in "$scratch/$tag"-d*-c.h5; do
        k=${archive##*-d}
        k=${k%-c.h5}
        for variant in "${variants[@]}"; do
            IFS=: read -r name flags <<<"$variant"
            # shellcheck disable=SC2086 # flags: several words
            "$ptq" plan "$archive" --model "$model" $flags --out "$tmp/p.json" --quiet >/dev/null
            "$ptq" validate --model "$model" --plan "$tmp/p.json" --data "$scratch/$test" --report "$tmp/r" >/dev/null
            echo "$tag d$k $name $(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['top1_quant'])" \
                "$tmp/r/validate.json")"
            rm -rf "$tmp/r"
        done
    done
done
