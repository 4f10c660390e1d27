#!/usr/bin/env python3
"""Oracle for datasets/: ptq's IDX -> HDF5 conversion and zstd filter (32015)
against h5py + hdf5plugin, both ways: test_datasets writes fm.h5 (checked here
image by image against the IDX files) and reads a file h5py wrote. ctest label
oracle; exits 77 when a module or Fashion-MNIST is missing."""
import gzip
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import h5py
    import hdf5plugin
    import numpy as np
except ImportError as e:
    print(f"datasets_test: skipped ({e})")
    sys.exit(77)

FM = os.environ.get("PTQ_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
IMAGES = os.path.join(FM, "t10k-images-idx3-ubyte.gz")
LABELS = os.path.join(FM, "t10k-labels-idx1-ubyte.gz")
CLASSES = ["0_T-shirt_top", "1_Trouser", "2_Pullover", "3_Dress", "4_Coat",
           "5_Sandal", "6_Shirt", "7_Sneaker", "8_Bag", "9_Ankle_boot"]
ZSTD_ID = 32015
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"datasets_test: FAILED: {what}", file=sys.stderr)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        ndim = magic & 0xFF
        dims = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def check_absurd_shapes(exe, tmp):
    """Sparse chunked images declare any shape in a few KiB: one whose
    per-image size wraps size_t to 0 (once a SIGFPE), one that wraps to 4 GiB,
    one just too big. ptq must refuse each at open, naming file and dataset."""
    shapes = [((1, 2**31, 2**31, 4), np.uint8), ((1, 2**32 + 1, 2**32, 1), np.uint8),
              ((2, 2**15, 2**15, 1), np.float32)]
    paths = []
    for i, (shape, dtype) in enumerate(shapes):
        path = os.path.join(tmp, f"absurd{i}.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("images", shape=shape, dtype=dtype, chunks=(1, 1, 1, shape[3]))
            f.create_dataset("labels", data=np.zeros(shape[0], np.int64))
        paths.append(path)
    run = subprocess.run([exe, "--bad-h5"] + paths, capture_output=True, text=True)
    print(run.stdout, end="")
    print(run.stderr, end="", file=sys.stderr)
    check(run.returncode == 0, f"{exe} --bad-h5 exited {run.returncode}")


def check_many_class_names(tmp):
    """data convert with 5,000 class names (more than a 64 KiB compact
    attribute holds): written as the root dataset class_names, which h5py
    reads and ptq reads back."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cli_test import png_bytes
    from ptqtest import MODEL, PTQ
    root = os.path.join(tmp, "many")
    os.makedirs(os.path.join(root, "c00000"))
    with open(os.path.join(root, "c00000", "0.png"), "wb") as f:
        f.write(png_bytes(np.zeros((28, 28), np.uint8)))
    want = [f"c{i:05d}" for i in range(5000)]
    with open(os.path.join(tmp, "many.txt"), "w") as f:
        f.write("".join(f"{n} {i}\n" for i, n in enumerate(want)))
    out = os.path.join(tmp, "many.h5")
    run = subprocess.run([PTQ, "data", "convert", "--images", root, "--classes", os.path.join(tmp, "many.txt"),
                          "--out", out], capture_output=True, text=True)
    check(run.returncode == 0, f"data convert with 5,000 classes exited {run.returncode}: {run.stderr[-300:]}")
    if run.returncode != 0:
        return
    with h5py.File(out, "r") as f:
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in f["class_names"][...]]
    check(names == want, f"5,000 class_names read by h5py: {len(names)}, {names[:2]}")
    run = subprocess.run([PTQ, "eval", "--model", MODEL, "--data", out], capture_output=True, text=True)
    check(run.returncode != 0 and "5000 classes" in run.stderr, f"ptq reads 5,000 class_names: {run.stderr[-300:]}")


def check_virtual_sources(tmp):
    """--allow-external-data: a virtual dataset whose source file is missing,
    or lacks the mapped dataset, is refused at open (exit 3) naming the
    source; libhdf5 alone reads the unmapped samples as zeros. A source found
    beside the file (from another working folder) reads as the data itself."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ptqtest import MODEL, PTQ
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (32, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 32).astype(np.int64)
    folder = os.path.join(tmp, "vds")
    os.makedirs(folder)
    plain = os.path.join(folder, "plain.h5")
    with h5py.File(plain, "w") as f:
        f["images"], f["labels"] = images, labels
    with h5py.File(os.path.join(folder, "src.h5"), "w") as f:
        f["pixels"] = images
    for name, source, key in (("missing", "nowhere.h5", "pixels"), ("nodset", "src.h5", "images"),
                              ("ok", "src.h5", "pixels")):
        layout = h5py.VirtualLayout(shape=images.shape, dtype=np.uint8)
        layout[:] = h5py.VirtualSource(source, key, shape=images.shape)
        with h5py.File(os.path.join(folder, f"{name}.h5"), "w") as f:
            f.create_virtual_dataset("images", layout)
            f["labels"] = labels

    def top1(path):
        run = subprocess.run([os.path.abspath(PTQ), "eval", "--model", os.path.abspath(MODEL), "--data", path,
                              "--allow-external-data", "--json"], capture_output=True, text=True, cwd=tmp)
        return run.returncode, run.stdout.split('"top1"')[-1][:12], run.stderr.strip()[-300:]

    for name, needle in (("missing", "nowhere.h5, which does not exist"), ("nodset", "has no such dataset")):
        rc, _, err = top1(os.path.join("vds", f"{name}.h5"))
        check(rc == 3 and "'images'" in err and needle in err,
              f"virtual dataset, source {name}: exit {rc} (want 3 naming the source): {err}")
    rc, got, err = top1(os.path.join("vds", "ok.h5"))
    rc_plain, want, _ = top1(plain)
    check(rc == 0 and rc_plain == 0 and got == want, f"virtual dataset with its source: exit {rc}, top1 {got} "
          f"(the same data stored plainly: {want}): {err}")

    # data_sha256 covers the source's bytes (ptq_dataset_file_sha256): it was the set file's alone, the same
    # whatever images the source held
    def data_sha(path):
        run = subprocess.run([os.path.abspath(PTQ), "eval", "--model", os.path.abspath(MODEL), "--data", path,
                              "--allow-external-data", "--json"], capture_output=True, text=True)
        return json.loads(run.stdout).get("data_sha256") if run.returncode == 0 else run.stderr[-300:]

    def expected(path, sources):
        h = hashlib.sha256(b"ptq-hdf5-external-data\0" + hashlib.sha256(open(path, "rb").read()).hexdigest().encode())
        for s in sources:
            data = open(s, "rb").read()
            h.update(struct.pack("<Q", len(data)) + data)
        return h.hexdigest()

    ok, src = os.path.join(folder, "ok.h5"), os.path.join(folder, "src.h5")
    before = data_sha(ok)
    with h5py.File(src, "w") as f:
        f["pixels"] = 255 - images
    after = data_sha(ok)
    check(before != after and after == expected(ok, [src]),
          f"a virtual dataset's data_sha256 covers its source file: {before} then {after}, want {expected(ok, [src])}")
    check(data_sha(plain) == hashlib.sha256(open(plain, "rb").read()).hexdigest(),
          "a self-contained set's data_sha256 is its file's SHA-256")


def main():
    build = os.environ.get("PTQ_BUILD_DIR")
    if not build:
        print("datasets_test: skipped (PTQ_BUILD_DIR unset)")
        return 77
    exe = os.path.join(build, "tests", "test_datasets")
    with tempfile.TemporaryDirectory() as tmp:
        check_absurd_shapes(exe, tmp)
        check_many_class_names(tmp)
        check_virtual_sources(tmp)
    if not os.path.exists(IMAGES) or not os.path.exists(LABELS):
        print(f"datasets_test: {len(failures)} failed; Fashion-MNIST missing, round trip skipped")
        return 1 if failures else 77
    images, labels = read_idx(IMAGES), read_idx(LABELS)
    with tempfile.TemporaryDirectory() as tmp:
        # a file in the layout h5py users write: zstd from hdf5plugin,
        # uint8 labels, fixed-length class name strings; ptq must read it
        theirs = os.path.join(tmp, "theirs.h5")
        with h5py.File(theirs, "w") as f:
            f.create_dataset("images", data=images[:2500], chunks=(500, 28, 28),
                             **hdf5plugin.Zstd(clevel=7))
            f.create_dataset("labels", data=labels[:2500])
            f.attrs["class_names"] = np.array([c.encode() for c in CLASSES])
        ours = os.path.join(tmp, "fm.h5")
        run = subprocess.run([exe, ours, theirs], capture_output=True, text=True)
        print(run.stdout, end="")
        print(run.stderr, end="", file=sys.stderr)
        check(run.returncode == 0, f"{exe} exited {run.returncode}")
        if run.returncode != 0:
            return 1

        with h5py.File(ours, "r") as f:
            img, lab = f["images"], f["labels"]
            check(img.dtype == np.uint8 and img.shape == images.shape, f"images {img.dtype} {img.shape}")
            check(lab.dtype == np.int64 and lab.shape == labels.shape, f"labels {lab.dtype} {lab.shape}")
            check(img.chunks is not None and img.chunks[1:] == (28, 28), f"images chunks {img.chunks}")
            for name, dset in (("images", img), ("labels", lab)):
                plist = dset.id.get_create_plist()
                filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
                check(len(filters) == 1 and filters[0][0] == ZSTD_ID and filters[0][2][0] == 3,
                      f"{name} filters {filters}")
            # each chunk is one zstd frame (magic 28 b5 2f fd) with its content size
            mask, raw = img.id.read_direct_chunk((0, 0, 0))
            check(mask == 0 and raw[:4] == b"\x28\xb5\x2f\xfd", f"first chunk starts {raw[:4].hex()}")
            fhd = raw[4]
            check(fhd & 0xC0 or fhd & 0x20, f"zstd frame header 0x{fhd:02x} has no content size")
            got_images, got_labels = img[...], lab[...]
            check(np.array_equal(got_images, images), "images differ from the IDX file")
            check(np.array_equal(got_labels, labels.astype(np.int64)), "labels differ from the IDX file")
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in f.attrs["class_names"]]
            check(names == CLASSES, f"class_names {names}")
            src = f.attrs["source_images"]
            src = src.decode() if isinstance(src, bytes) else str(src)
            check(src == IMAGES, f"source_images {src}")
    print(f"datasets_test: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
