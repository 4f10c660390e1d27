#!/usr/bin/env bash
# Builds ptq (Release, CUDA on) into build-gpu/ and packs bundle/ for a GPU machine
# with CUDA 13 and glibc >= 2.36: bin/ptq, the C tests, their non-system libraries
# (libptq.so.0 among them: bin/ptq links it, the tests link libptq statically),
# models/ and data/. Usage: scripts/gpu-bundle.sh [--no-build]; there:
# bundle/run-tests.sh cuda|unit|parity|all, or eval "$(bundle/setup.sh)"; bundle/bin/ptq ...
# The CPU unit and parity tests (test_*, parity_*, which CI runs) are packed only with PTQ_BUNDLE_UNIT=1 and
# PTQ_BUNDLE_PARITY=1, the diagnostics
# (bin/cudnn_survey, bin/cudnn_splitk, bin/gemm_lt_survey, bin/pass_runs) only with PTQ_BUNDLE_DIAG=1:
# the device tool carries 64 MiB with the repository's files (12 MiB), so the bundle stops at 50.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PTQ_GPU_BUILD_DIR:-$root/build-gpu}
out=$root/bundle
jobs=${PTQ_JOBS:-2}
max_mib=50

die() { echo "gpu-bundle: $*" >&2; exit 1; }

if [ "${1:-}" != "--no-build" ]; then
    nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
    [ -x "$nvcc" ] || command -v nvcc >/dev/null || die "no nvcc (looked at $nvcc and PATH): CUDA 13 toolkit needed"
    log=$build/gpu-bundle-configure.log
    mkdir -p "$build"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPTQ_WITH_CUDA=ON >"$log" 2>&1 ||
        { cat "$log" >&2; die "cmake configure failed"; }
    grep -q "ptq: CUDA backend ON" "$log" || die "cmake did not enable CUDA (see $log)"
    cmake --build "$build" -j "$jobs" || die "build failed"
fi
[ -d "$build/tests" ] || die "$build has no tests/: build first (drop --no-build)"

if ! command -v patchelf >/dev/null; then
    echo "gpu-bundle: installing patchelf"
    { apt-get install -y -q patchelf >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q patchelf >/dev/null 2>&1; }; } ||
        die "patchelf is missing and apt-get could not install it"
fi

command -v xz >/dev/null || die "xz is missing (apt-get install xz-utils)"

rm -rf "$out"
mkdir -p "$out/bin" "$out/tests" "$out/lib/mpi" "$out/models" "$out/data" "$out/bench"
# what the benchmarks record as the code they ran (the device copy has no git history)
(cd "$root" && echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bundle' || echo -dirty)") \
    >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"

# executables: the CLI and every C test but the ONNX conformance runner (its data stays here)
bins=()
if [ -x "$build/ptq" ]; then
    cp "$build/ptq" "$out/bin/ptq"
    bins+=("$out/bin/ptq")
else
    echo "gpu-bundle: note: $build/ptq was not built; bundle has no bin/ptq"
fi
if [ "${PTQ_BUNDLE_DIAG:-0}" = 1 ] && [ -x "$build/bench/cudnn_survey" ]; then # a GPU diagnostic (bench/cudnn_survey.c)
    cp "$build/bench/cudnn_survey" "$out/bin/"
    bins+=("$out/bin/cudnn_survey")
fi
if [ "${PTQ_BUNDLE_DIAG:-0}" = 1 ] && [ -x "$build/bench/cudnn_splitk" ]; then # a GPU diagnostic (bench/cudnn_splitk.c)
    cp "$build/bench/cudnn_splitk" "$out/bin/"
    bins+=("$out/bin/cudnn_splitk")
fi
# a GPU diagnostic (bench/gemm_lt_survey.c)
if [ "${PTQ_BUNDLE_DIAG:-0}" = 1 ] && [ -x "$build/bench/gemm_lt_survey" ]; then
    cp "$build/bench/gemm_lt_survey" "$out/bin/"
    bins+=("$out/bin/gemm_lt_survey")
fi
if [ "${PTQ_BUNDLE_DIAG:-0}" = 1 ] && [ -x "$build/bench/pass_runs" ]; then # the CPU's passes run after run (bench/pass_runs.c)
    cp "$build/bench/pass_runs" "$out/bin/"
    bins+=("$out/bin/pass_runs")
fi
unit=()
[ "${PTQ_BUNDLE_UNIT:-0}" = 1 ] && unit=("$build"/tests/test_*)
[ "${PTQ_BUNDLE_PARITY:-0}" = 1 ] && unit+=("$build"/tests/parity_*)
for t in "${unit[@]}" "$build"/tests/cuda_*; do
    [ -f "$t" ] && [ -x "$t" ] || continue
    cp "$t" "$out/tests/"
    bins+=("$out/tests/$(basename "$t")")
done
[ ${#bins[@]} -gt 0 ] || die "no executables found in $build"

# Libraries left out: glibc (every target has one at least as new), the GCC
# runtime every CUDA 13 install already needs (libstdc++, libgcc_s; newer
# there) and CUDA's own (the target's driver and toolkit must match it).
# libgomp, OpenBLAS, HDF5 and friends are copied: a bare machine lacks them.
keep_out='^(linux-vdso|ld-linux[^/]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec'
keep_out+='|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libnvidia-[a-z-]+)\.so'
# Open MPI 4.1 (libmpi.so.40, the soname Ubuntu 24.04's 4.1.6 has too) and what
# it links go to lib/mpi: the machine's own are used when it has them (its
# mpirun, its plugins), these only where it has none (one process then).
mpi_libs='^(libmpi|libopen-rte|libopen-pal|libhwloc|libevent_core-[0-9.]+|libevent_pthreads-[0-9.]+|libudev)\.so'
missing=$(for b in "${bins[@]}"; do ldd "$b"; done | awk '/not found/ {print $1}' | sort -u |
          grep -Ev "$keep_out" || true)
[ -z "$missing" ] || die "libraries not found here: $missing"
for b in "${bins[@]}"; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
        if [[ $name =~ $mpi_libs ]]; then
            cp -L "$path" "$out/lib/mpi/$name"
        elif ! [[ $name =~ $keep_out ]]; then
            cp -L "$path" "$out/lib/$name"
        fi
    done
# libraries the GPU machine (Ubuntu 24.04: libpng, zstd, OpenBLAS, Open MPI, but
# no HDF5, cJSON or libturbojpeg) may lack must be in the bundle; ldd above
# carries them, this says so loudly should a link change drop one
for need in libhdf5_serial.so libcjson.so libturbojpeg.so.0; do
    ls "$out"/lib/"$need"* >/dev/null 2>&1 || die "the bundle lacks $need (ldd of the executables did not list it)"
done
for lib in "$out"/lib/* "$out"/lib/mpi/*; do
    [ -f "$lib" ] || continue
    chmod u+w "$lib"
    patchelf --force-rpath --set-rpath '$ORIGIN' "$lib"
done
# DT_RPATH (not RUNPATH) so it also serves the libraries' own dependencies;
# CUDA's usual homes follow for machines whose loader does not list them.
cuda_dirs='/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda-13/lib64'
for b in "${bins[@]}"; do
    patchelf --force-rpath --set-rpath "\$ORIGIN/../lib:$cuda_dirs" "$b"
done
# packed: OpenBLAS (every-CPU build) 35 MiB -> 4 MiB, the rest of the big ones halve
for lib in "$out"/lib/* "$out"/lib/mpi/*; do
    if [ -f "$lib" ] && [ "$(stat -c %s "$lib")" -gt $((1 << 20)) ]; then
        xz -9 -T "$jobs" "$lib"
    fi
done
# the test executables too (each links libptq statically: ~2 MiB -> 0.35 MiB);
# setup.sh unpacks them beside the libraries
for t in "$out"/tests/*; do
    if [ -f "$t" ] && [ -x "$t" ]; then
        xz -9 -T "$jobs" "$t"
    fi
done

# the MPI scaling benchmark (bench/mpi_scaling.sh: -np 1 against -np 2 on one GPU)
cp "$root/bench/mpi_scaling.sh" "$out/bench/"

# fixtures the tests read through PTQ_SOURCE_DIR (the bundle root) and PTQ_FMNIST_DIR
[ -d "$root/models" ] && cp -r "$root/models/." "$out/models/"
[ -d "$root/tests/data" ] && mkdir -p "$out/tests/data" && cp -r "$root/tests/data/." "$out/tests/data/"
fm=/usr/share/datasets/fashion-mnist
if [ -f "$fm/t10k-images-idx3-ubyte.gz" ]; then
    mkdir -p "$out/data/fashion-mnist"
    cp "$fm"/t10k-*-idx*-ubyte.gz "$out/data/fashion-mnist/"
fi

head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$out/lib/.stamp"
cat >"$out/setup.sh" <<'EOF'
#!/usr/bin/env bash
# Unpacks lib/*.xz and tests/*.xz once into a folder under /tmp (the bundle
# stays as it came) and prints the export that lets the loader find them (and
# run-tests.sh the tests); before calling
# bin/ptq directly: eval "$(bundle/setup.sh)". run-tests.sh does this itself.
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${TMPDIR:-/tmp}/ptq-bundle-libs-$(cat "$here/lib/.stamp")
mkdir -p "$dir"
mkdir -p "$dir/tests" "$dir/mpi"
for z in "$here"/lib/*.xz "$here"/lib/mpi/*.xz "$here"/tests/*.xz; do
    [ -e "$z" ] || continue
    case $z in
        */tests/*) so=$dir/tests/$(basename "${z%.xz}") ;;
        */lib/mpi/*) so=$dir/mpi/$(basename "${z%.xz}") ;;
        *) so=$dir/$(basename "${z%.xz}") ;;
    esac
    [ -e "$so" ] && continue
    if command -v xz >/dev/null; then
        xz -dc "$z" >"$so.tmp"
    else
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
            "$z" "$so.tmp"
    fi
    case $z in */tests/*) chmod +x "$so.tmp" ;; esac
    mv "$so.tmp" "$so"
done
# Open MPI: the machine's libmpi.so.40 (with its mpirun and plugins) when it has one, else the bundled copy
mpi=""
ldconfig -p 2>/dev/null | grep -q 'libmpi\.so\.40 ' || mpi=":$dir/mpi:$here/lib/mpi"
echo "export LD_LIBRARY_PATH=$dir:$here/lib$mpi\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} PTQ_BUNDLE_TESTS=$dir/tests"
EOF
chmod +x "$out/setup.sh"

cat >"$out/run-tests.sh" <<'EOF'
#!/usr/bin/env bash
# Runs the bundled C tests: run-tests.sh LABEL [NAME_PART]
#   LABEL: cuda (tests/cuda_*), unit (tests/test_*), parity (tests/parity_*) or all.
# Each test's output is shown indented; exit 0 pass, 77 skip, else fail.
# Ends with "N passed, N failed, N skipped"; exits 1 if any failed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
label=${1:-all}
part=${2:-}
case $label in
    cuda) pattern='cuda_*' ;;
    unit) pattern='test_*' ;;
    parity) pattern='parity_*' ;;
    all) pattern='*' ;;
    *) echo "usage: $0 cuda|unit|parity|all [NAME_PART]" >&2; exit 2 ;;
esac
export PTQ_SOURCE_DIR=$here PTQ_BUILD_DIR=$here PTQ_BIN=$here/bin/ptq PTQ_FMNIST_DIR=$here/data/fashion-mnist
setup=$("$here/setup.sh") || { echo "run-tests: could not unpack lib/*.xz" >&2; exit 2; }
eval "$setup"

# CUDA 13 runtime and cuBLAS come from the machine; look in the usual places
# when the loader does not find them, and say where they were taken from.
probe=$(ls "$PTQ_BUNDLE_TESTS"/cuda_* 2>/dev/null | head -n 1)
if [ -n "$probe" ]; then
    # libcublas is dlopen'ed (kernels/cuda/device.cu): ldd does not list it
    for lib in $(ldd "$probe" | awk '/not found/ {print $1}') \
               $(ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13 ' || echo libcublas.so.13); do
        found=$(find /usr/local /opt /usr/lib -name "$lib" -print -quit 2>/dev/null || true)
        if [ -n "$found" ]; then
            echo "run-tests: $lib from $(dirname "$found")"
            export LD_LIBRARY_PATH=$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        else
            echo "run-tests: $lib not found on this machine (CUDA 13 runtime and cuBLAS are needed)"
        fi
    done
    # cuDNN is optional and dlopen'ed too (kernels/cuda/cudnn.cu); not bundled:
    # the machine's, e.g. pip's nvidia-cudnn-cu13 wheel that PyTorch uses
    if [ -z "${PTQ_CUDNN_DIR:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcudnn\.so\.9 '; then
        found=$(find /usr/local /opt /usr/lib -name libcudnn.so.9 -print -quit 2>/dev/null || true)
        if [ -n "$found" ]; then
            echo "run-tests: libcudnn.so.9 from $(dirname "$found")"
            export PTQ_CUDNN_DIR=$(dirname "$found")
        else
            echo "run-tests: libcudnn.so.9 not found: convolutions use im2col + cuBLAS, cuda_cudnn_conv skips"
        fi
    fi
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
    sed 's/^/run-tests: GPU: /'

pass=0 fail=0 skip=0 failed=""
for t in "$PTQ_BUNDLE_TESTS"/$pattern; do
    [ -f "$t" ] && [ -x "$t" ] || continue
    name=$(basename "$t")
    [ -z "$part" ] || [[ $name == *"$part"* ]] || continue
    start=$(date +%s.%N)
    timeout "${PTQ_TEST_TIMEOUT:-1200}" "$t" >"/tmp/ptq-test-$$.log" 2>&1
    rc=$?
    secs=$(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}')
    sed 's/^/    /' "/tmp/ptq-test-$$.log"
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); echo "PASS $name (${secs} s)"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1)); echo "SKIP $name (${secs} s)"
    else
        fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name (exit $rc, ${secs} s)"
    fi
done
rm -f "/tmp/ptq-test-$$.log"
[ -z "$failed" ] || echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
EOF
chmod +x "$out/run-tests.sh"

mib=$(du -sm --apparent-size "$out" | cut -f1) # bytes carried, not disk blocks
echo "gpu-bundle: $out: ${#bins[@]} executables, $(ls "$out/lib" | wc -l) libraries, $(du -sh "$out" | cut -f1)"
[ "$mib" -lt "$max_mib" ] || die "bundle is ${mib} MiB, over the ${max_mib} MiB limit"
