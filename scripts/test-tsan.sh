#!/usr/bin/env bash
# Builds libptq with ThreadSanitizer into build-tsan/ (CUDA and MPI off,
# -O1) and runs the tests that use it from several threads at once:
# test_api_threads (two sessions calibrating on two threads, the HDF5
# check forked beside a thread inside libhdf5), test_h5vet_threads,
# test_runner (the prefetching worker) and test_parallel (the pool). Any
# report fails the test that hit it. Not in CI: a build of its own and
# minutes of runs. Warnings stay warnings: GCC finds maybe-uninitialized ones
# under -fsanitize=thread that it does not in the other builds. Extra args go
# to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
      -DPTQ_WERROR=OFF -DPTQ_WITH_CUDA=OFF -DPTQ_WITH_MPI=OFF -DPTQ_TSAN=ON -DPTQ_PYTHON="$PWD/.venv/bin/python3" \
      >/dev/null
tests="test_api_threads test_h5vet_threads test_runner test_parallel"
cmake --build build-tsan -j"$(nproc)" --target $tests
# halt_on_error: the first report ends the test with exitcode 66, a failure for ctest
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
cd build-tsan
ctest --output-on-failure -R "^($(echo $tests | tr ' ' '|'))\$" "$@"
echo "test-tsan: done in $(( $(date +%s) - start )) s"
