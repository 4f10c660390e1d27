#!/usr/bin/env bash
# scripts/fuzz.sh NAME SECONDS: builds the libFuzzer harness fuzz/fuzz_NAME.c
# (clang, ASan + UBSan, CUDA off) into build-fuzz/ and runs it for SECONDS on
# a working copy of the committed seed corpus fuzz/corpus/NAME. Findings
# (crash-*, leak-*, timeout-*, oom-*) land in build-fuzz/findings/NAME/; turn
# each into a regression case in tests/badinput_test.py. NAME: onnx, onnx_run,
# hdf5_set, archive, png, jpeg, lists, plan, sens, keras, idx. Keep runs short on shared machines.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/fuzz.sh NAME SECONDS}
secs=${2:-60}
[ -f "fuzz/fuzz_$name.c" ] || { echo "fuzz.sh: no fuzz/fuzz_$name.c" >&2; exit 2; }
command -v clang >/dev/null || { echo "fuzz.sh: needs clang (apt-get install clang)" >&2; exit 2; }
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DPTQ_WITH_CUDA=OFF -DPTQ_SANITIZE=ON -DPTQ_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "fuzz_$name"
work=build-fuzz/corpus/$name findings=build-fuzz/findings/$name
mkdir -p "$work" "$findings"
cp -n fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp" # leaks inside libhdf5 (see the file)
export UBSAN_OPTIONS="print_stacktrace=1"
# -timeout 20: an HDF5 input may keep ptq's checking child (datasets/h5vet.c) for its 5 s of processor time
exec build-fuzz/fuzz/"fuzz_$name" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -max_len=65536 \
    -artifact_prefix="$findings/" "$work"
