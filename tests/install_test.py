#!/usr/bin/env python3
"""libptq as an installed package: `cmake --install` into a temporary
prefix (headers, libptq.so with its soname links, bin/ptq, ptq.pc, the CMake
package), examples/calibrate_trt.c built against it twice (cc with only
pkg-config's flags; a CMake project with find_package(ptq) and ptq::ptq),
run on the demo model with 100 Fashion-MNIST images, and its TensorRT caches
equal to what the installed `ptq calibrate` + `ptq export --format trt`
write; and ptq.pc of a build whose library folder is lib/x86_64-linux-gnu
(the prefix /usr on Debian) leading to the same headers, that build made
without MPI compiling runtime/dist.c with warnings as errors. Run by ctest
(label oracle) with PTQ_BUILD_DIR and PTQ_SOURCE_DIR set."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import h5py
    from ptqtest import MODEL, SRC, check, finish, fmnist_test, have_demo
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

BUILD = os.environ.get("PTQ_BUILD_DIR", "build")
CMAKE = os.environ.get("PTQ_CMAKE") or shutil.which("cmake")
EXAMPLE = os.path.abspath(os.path.join(SRC, "examples", "calibrate_trt.c"))
METHODS = ("entropy", "minmax")


def run(name, args, env=None, cwd=None):
    """Runs args; checks it exits 0; its stdout ('' on failure)."""
    try:
        p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    except OSError as e:
        check(name, False, str(e))
        return ""
    check(name, p.returncode == 0, f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-600:]!r}"
          if p.returncode else "")
    return p.stdout if p.returncode == 0 else ""


def read(path):
    return open(path, "rb").read() if os.path.exists(path) else None


def check_cache(name, data, want):
    """A TensorRT cache: the header, then one 'name: %08x' line per tensor, equal to want."""
    lines = data.decode().splitlines() if data else []
    ok = bool(lines) and re.fullmatch(r"TRT-\d+-\w+", lines[0]) is not None
    ok = ok and len(lines) > 10 and all(re.fullmatch(r".+: [0-9a-f]{8}", l) for l in lines[1:])
    check(f"{name}: header and a line per tensor", ok, f"{len(lines)} lines, first {lines[:1]}")
    check(f"{name}: equal to ptq calibrate + export", data is not None and data == want)


def main():
    cc = shutil.which("cc")
    if not have_demo() or not cc or not shutil.which("pkg-config") or not CMAKE:
        print("skipped: needs the demo model, Fashion-MNIST, cc, pkg-config and cmake")
        return 77
    with tempfile.TemporaryDirectory(prefix="ptq-install-") as tmp:
        prefix = os.path.join(tmp, "prefix")
        run("cmake --install", [CMAKE, "--install", BUILD, "--prefix", prefix])
        lib = os.path.join(prefix, "lib")
        for f in ("include/ptq/status.h", "include/ptq/export_api.h", "include/ptq/version.h", "bin/ptq",
                  "lib/libptq.so.0.1.0", "lib/pkgconfig/ptq.pc", "lib/cmake/ptq/ptqConfig.cmake",
                  "lib/cmake/ptq/ptqConfigVersion.cmake", "lib/cmake/ptq/ptqTargets.cmake"):
            check(f"installed {f}", os.path.isfile(os.path.join(prefix, f)))
        check("soname links", os.readlink(os.path.join(lib, "libptq.so")) == "libptq.so.0" and
              os.readlink(os.path.join(lib, "libptq.so.0")) == "libptq.so.0.1.0")
        check("no build-only file installed", not os.path.exists(os.path.join(prefix, "include/ptq/version.h.in")) and
              not os.path.exists(os.path.join(lib, "libptq_static.a")))
        ptq = os.path.join(prefix, "bin", "ptq")
        # the installed command finds the installed library through its RPATH, with no help
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        # the CLI restarts itself with OPENBLAS_CORETYPE named when OpenBLAS took the CPU for a generic one
        # (cli/main.c); a program linking libptq gets OpenBLAS's own pick, so the example runs with the
        # kernels the CLI reports, for the same bits
        ver = subprocess.run([ptq, "version"], capture_output=True, text=True, env=env).stdout
        m = re.search(r"openblas kernels: (\S+)", ver)
        if m and "OPENBLAS_CORETYPE" not in env:
            env["OPENBLAS_CORETYPE"] = m.group(1)
        out = run("installed ptq version", [ptq, "version"], env=env)
        check("installed ptq reports 0.1.0", out.startswith("ptq 0.1.0\n"), out.splitlines()[0] if out else "")
        if shutil.which("ldd"):
            ldd = run("ldd installed ptq", ["ldd", ptq], env=env)
            m = re.search(r"libptq\.so\.0 => (\S+)", ldd)
            check("installed ptq loads the installed libptq", m is not None and
                  os.path.realpath(m.group(1)) == os.path.realpath(os.path.join(lib, "libptq.so.0")),
                  m.group(1) if m else ldd)

        images, labels = fmnist_test(100)
        data = os.path.join(tmp, "images.h5")
        with h5py.File(data, "w") as f:
            f["images"] = images
            f["labels"] = labels
        archive = os.path.join(tmp, "calib.h5")
        run("ptq calibrate", [ptq, "calibrate", "--model", MODEL, "--data", data, "--out", archive], env=env)
        want = {}
        for m in METHODS:
            ref = os.path.join(tmp, f"ref-{m}.cache")
            run(f"ptq export {m}", [ptq, "export", archive, "--method", m, "--format", "trt", "--out", ref,
                                    "--quiet"], env=env)
            want[m] = read(ref)

        # cc with pkg-config's flags alone (warnings as errors: the example is clean C11)
        pc_env = dict(env, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
        flags = run("pkg-config ptq", ["pkg-config", "--cflags", "--libs", "ptq"], env=pc_env).split()
        check("pkg-config: -lptq and the prefix", "-lptq" in flags and any(f.startswith("-I") for f in flags))
        exe = os.path.join(tmp, "calibrate_trt")
        run("cc example", [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", EXAMPLE, *flags, "-o", exe], env=pc_env)
        run_env = dict(env, LD_LIBRARY_PATH=lib)
        for m in METHODS:
            out_cache = os.path.join(tmp, f"cc-{m}.cache")
            run(f"pkg-config example {m}", [exe, MODEL, data, out_cache, m], env=run_env)
            check_cache(f"pkg-config example {m}", read(out_cache), want[m])
        # the example writes through the library's atomic writer: its cache path naming an input is refused before
        # any work, input intact; a write that fails (a full disk) leaves the old cache as it was, no temporary
        model_copy = os.path.join(tmp, "model-copy.onnx")
        shutil.copy(MODEL, model_copy)
        before = read(model_copy)
        p = subprocess.run([exe, model_copy, data, model_copy], capture_output=True, text=True, env=run_env)
        check("example: cache path naming the model refused, model intact",
              p.returncode == 1 and "is an input" in p.stderr and read(model_copy) == before, p.stderr)
        old_cache = os.path.join(tmp, "cc-entropy.cache")
        cache_before = read(old_cache)
        p = subprocess.run([exe, MODEL, data, old_cache], capture_output=True, text=True,
                           env=dict(run_env, PTQ_TEST_FAIL_WRITE_AFTER="0"))
        check("example: failed write refused, old cache intact, no temporary left",
              p.returncode == 1 and "cc-entropy.cache" in p.stderr and read(old_cache) == cache_before and
              not [f for f in os.listdir(tmp) if ".tmp-" in f], p.stderr)

        # ptq.pc where the library folder is two levels deep (CMAKE_INSTALL_LIBDIR lib/x86_64-linux-gnu, which
        # GNUInstallDirs picks for the prefix /usr on Debian): its relative prefix still leads to the headers
        # (and without MPI, with warnings as errors: runtime/dist.c, the one file with MPI code, compiles clean)
        cfg = os.path.join(tmp, "cfg-multiarch")
        run("configure with a multiarch libdir", [CMAKE, "-S", SRC, "-B", cfg, "-G", "Unix Makefiles",
                                                  "-DBUILD_TESTING=OFF", "-DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu",
                                                  "-DPTQ_WITH_CUDA=OFF", "-DPTQ_WITH_MPI=OFF", "-DPTQ_WERROR=ON"],
            env=env)
        run("runtime/dist.c without MPI", [CMAKE, "--build", cfg, "--target", "runtime/dist.o"], env=env)
        deep = os.path.join(prefix, "lib", "x86_64-linux-gnu", "pkgconfig")
        os.makedirs(deep)
        if os.path.isfile(os.path.join(cfg, "ptq.pc")):
            shutil.copy(os.path.join(cfg, "ptq.pc"), deep)
        deep_env = dict(env, PKG_CONFIG_PATH=deep)
        inc = run("pkg-config multiarch", ["pkg-config", "--variable=includedir", "ptq"], env=deep_env).strip()
        libdir = run("pkg-config multiarch libdir", ["pkg-config", "--variable=libdir", "ptq"], env=deep_env).strip()
        check("multiarch ptq.pc: includedir is the prefix's include", bool(inc) and
              os.path.realpath(inc) == os.path.realpath(os.path.join(prefix, "include")), inc)
        check("multiarch ptq.pc: libdir is the prefix's lib/x86_64-linux-gnu", bool(libdir) and
              os.path.realpath(libdir) == os.path.realpath(os.path.join(prefix, "lib", "x86_64-linux-gnu")), libdir)

        # a CMake project: find_package(ptq 0.1) and ptq::ptq
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.22)\nproject(use_ptq LANGUAGES C)\n"
                    "find_package(ptq 0.1 REQUIRED)\n"
                    f"add_executable(calibrate_trt {EXAMPLE})\n"
                    "target_link_libraries(calibrate_trt PRIVATE ptq::ptq)\n")
        pb = os.path.join(proj, "build")
        run("find_package(ptq) configure", [CMAKE, "-S", proj, "-B", pb, f"-DCMAKE_PREFIX_PATH={prefix}",
                                            "-DCMAKE_BUILD_TYPE=Release"], env=env)
        run("find_package(ptq) build", [CMAKE, "--build", pb], env=env)
        out_cache = os.path.join(tmp, "cmake-entropy.cache")
        run("find_package example", [os.path.join(pb, "calibrate_trt"), MODEL, data, out_cache], env=env)
        check_cache("find_package example", read(out_cache), want["entropy"])
    return finish("install_test")


if __name__ == "__main__":
    sys.exit(main())
