#!/usr/bin/env python3
"""Oracle for JPEG image folders (datasets/jpeg_codec.c): JPEGs written by PIL
are decoded by ptq (read back through `ptq data convert --images`) exactly as
PIL decodes them, at full size and at the DCT scales 1/2, 1/4 and 1/8 (PIL's
draft mode): both call Debian's libjpeg-turbo with its defaults (islow IDCT,
fancy upsampling), so the tolerance is 0, not 1. `ptq eval` of the demo model
on a JPEG folder of Fashion-MNIST test images agrees with onnxruntime fed
PIL's pixels, and at quality 100 with the same images as PNG; --labels (a flat
ImageNet-style folder), --classes (folder names in another order), `data
convert` with both, and `ptq run` with --labels/--calib-labels. Label oracle;
exits 77 when PIL, h5py, onnxruntime or Fashion-MNIST is missing."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import h5py
    import hdf5plugin  # noqa: F401  (the zstd filter ptq writes)
    import numpy as np
    import onnxruntime as ort
    from PIL import Image
    from ptqtest import MODEL, check, finish, fmnist_test, have_demo, ptq
except ImportError as e:
    print(f"jpeg_test: skipped ({e})")
    sys.exit(77)

N = 1000  # Fashion-MNIST test images used
NAMES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot"]


def save(img, path, **kw):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(img).save(path, **kw)


def packed(folder, out, *extra):
    """ptq's pixels of folder: `ptq data convert --images` (scale 1, uint8) read back with h5py."""
    rc, _, err = ptq("data", "convert", "--images", folder, "--out", out, *extra)
    if rc != 0:
        check(f"data convert {os.path.basename(folder)} {' '.join(extra)}", False, err.strip())
        return None, None, {}
    with h5py.File(out, "r") as f:
        return f["images"][()], f["labels"][()], dict(f.attrs)


def pixels_test(t):
    """Full-size and DCT-scaled decodes against PIL's: every sample equal."""
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:64, 0:64]
    full = os.path.join(t, "pix_full")
    files = []
    for i in range(12):
        base = (np.sin(xx / (3 + i)) * 60 + np.cos(yy / (2 + i)) * 60 + 128)[..., None]
        rgb = np.clip(base + rng.normal(0, 25, (64, 64, 3)), 0, 255).astype(np.uint8)[:47, :61]
        sub = [0, 1, 2][i % 3]  # 4:4:4, 4:2:2, 4:2:0
        name = f"c{i % 2}/{i:02d}.{'jpg' if i % 4 else 'JPEG'}"
        save(rgb, os.path.join(full, name), quality=[75, 90, 100][i % 3], subsampling=sub)
        files.append(name)
    got, labels, _ = packed(full, os.path.join(t, "pix_full.h5"))
    if got is not None:
        order = sorted(files, key=lambda n: (n.split("/")[0], n.split("/")[1]))
        ref = np.stack([np.asarray(Image.open(os.path.join(full, n)).convert("RGB")) for n in order])
        diff = int(np.abs(got.astype(int) - ref.astype(int)).max())
        print(f"full-size RGB 61x47 (4:4:4, 4:2:2, 4:2:0; q75-100): max |ptq - PIL| = {diff}")
        check("full-size RGB decode equals PIL's", got.shape == ref.shape and diff == 0, f"max diff {diff}")
        check("labels by class folder", list(labels) == [int(n[1]) for n in order])

    for mode in ("RGB", "L"):
        scaled = os.path.join(t, f"pix_scaled_{mode}")
        names = []
        for i in range(6):
            base = (np.sin(xx / (2 + i)) * 70 + np.cos(yy / (3 + i)) * 50 + 128)
            img = np.clip(base[..., None] + rng.normal(0, 20, (64, 64, 3)), 0, 255).astype(np.uint8)
            if mode == "L":
                img = img[..., 0]
            names.append(f"k/{i}.jpg")
            save(img, os.path.join(scaled, names[-1]), quality=90)
        for side in (32, 16, 8):
            got, _, _ = packed(scaled, os.path.join(t, f"scaled_{mode}_{side}.h5"), "--resize", str(side))
            if got is None:
                continue
            ref = []
            for n in names:
                im = Image.open(os.path.join(scaled, n))
                im.draft(mode, (side, side))  # libjpeg's DCT scaling 1/2, 1/4, 1/8
                ref.append(np.asarray(im))
            ref = np.stack(ref)
            ok_size = all(r.shape[:2] == (side, side) for r in ref)
            diff = int(np.abs(got.astype(int) - ref.astype(int)).max()) if got.shape == ref.shape else -1
            print(f"{mode} 64x64 -> {side}x{side} (DCT scale 1/{64 // side}): max |ptq - PIL draft| = {diff}")
            check(f"{mode} DCT-scaled decode 1/{64 // side} equals PIL's draft", ok_size and diff == 0,
                  f"max diff {diff}, shapes {got.shape} {ref.shape}")


def by_content_test(t):
    """An image is decoded by its first bytes, as PIL opens it: a PNG named .jpg and a JPEG named .png read as
    PIL reads them; an empty file is named as empty (exit 7)."""
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)
    folder = os.path.join(t, "swapped")
    save(img, os.path.join(folder, "a", "png_named.jpg"), format="PNG")
    save(img, os.path.join(folder, "b", "jpeg_named.png"), format="JPEG", quality=95)
    got, _, _ = packed(folder, os.path.join(t, "swapped.h5"))
    if got is not None:
        ref = np.stack([np.asarray(Image.open(os.path.join(folder, n)).convert("RGB"))
                        for n in ("a/png_named.jpg", "b/jpeg_named.png")])
        check("a PNG named .jpg and a JPEG named .png decode as PIL opens them", got.shape == ref.shape and
              int(np.abs(got.astype(int) - ref.astype(int)).max()) == 0, f"shapes {got.shape} {ref.shape}")
    os.makedirs(os.path.join(t, "empty", "a"))
    open(os.path.join(t, "empty", "a", "x.jpg"), "wb").close()
    rc, _, err = ptq("data", "convert", "--images", os.path.join(t, "empty"), "--out", os.path.join(t, "e.h5"))
    check("an empty .jpg: exit 7 naming it as empty", rc == 7 and "x.jpg: the file is empty" in err, err.strip())


def fmnist_folders(t, images, labels):
    """JPEG (quality 100 and 90) and PNG class folders; a flat folder with an ImageNet-style labels file; class
    folders named by class name (sorted, they are in another order than the labels) with a classes file."""
    for i, (im, lab) in enumerate(zip(images, labels)):
        save(im, os.path.join(t, "jpg100", str(lab), f"{i:05d}.jpg"), quality=100)
        save(im, os.path.join(t, "jpg90", str(lab), f"{i:05d}.jpg"), quality=90)
        save(im, os.path.join(t, "png", str(lab), f"{i:05d}.png"))
        save(im, os.path.join(t, "flat", f"FMNIST_val_{i:08d}.JPEG"), quality=100)
        save(im, os.path.join(t, "named", NAMES[lab], f"{i:05d}.jpg"), quality=100)
    with open(os.path.join(t, "val.txt"), "w") as f:
        f.writelines(f"FMNIST_val_{i:08d}.JPEG {lab}\n" for i, lab in enumerate(labels))
    with open(os.path.join(t, "classes.txt"), "w") as f:
        f.writelines(n + "\n" for n in NAMES)


def eval_json(*args):
    rc, out, err = ptq("eval", "--model", MODEL, "--json", *args)
    if rc != 0:
        check("eval " + " ".join(args), False, err.strip())
        return None
    return json.loads(out)


def model_test(t, images, labels):
    fmnist_folders(t, images, labels)
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])

    def ort_logits(x_u8):
        x = ((x_u8.astype(np.float32) / np.float32(255.0) - np.float32(0.286)) / np.float32(0.353))[:, None]
        return np.concatenate([sess.run(None, {"input": x[i:i + 500]})[0] for i in range(0, len(x), 500)])

    res = {}
    for name in ("jpg100", "jpg90", "png"):
        lp = os.path.join(t, f"{name}.npy")
        rep = eval_json("--data", os.path.join(t, name), "--logits", lp)
        if rep is None:
            return
        res[name] = rep["top1"]
        # the folder's sample order: class by class, files sorted
        order = sorted(range(len(labels)), key=lambda i: (str(labels[i]), f"{i:05d}"))
        ext = "png" if name == "png" else "jpg"
        pil = np.stack([np.asarray(Image.open(os.path.join(t, name, str(labels[i]), f"{i:05d}.{ext}")))
                        for i in order])
        ours, theirs = np.load(lp), ort_logits(pil)
        rel = np.linalg.norm(ours - theirs, axis=1) / np.maximum(np.linalg.norm(theirs, axis=1), 1e-30)
        agree = float(np.mean(ours.argmax(1) == theirs.argmax(1)))
        top1_ort = float(np.mean(theirs.argmax(1) == labels[order]))
        print(f"{name}: ptq top-1 {rep['top1'] * 100:.2f}%, onnxruntime on PIL's pixels {top1_ort * 100:.2f}%, "
              f"agree {agree * 100:.2f}%, logits rel. error max {rel.max():.2e}")
        check(f"{name}: ptq = onnxruntime on PIL-decoded pixels", agree == 1.0 and rel.max() <= 1e-4,
              f"agree {agree}, rel {rel.max():.2e}")
    check("JPEG q100 top-1 within 0.25 points of PNG's", abs(res["jpg100"] - res["png"]) <= 0.0025,
          f"{res['jpg100']} vs {res['png']}")
    check("top-1 above 90%", res["png"] >= 0.90, str(res["png"]))

    flat = eval_json("--data", os.path.join(t, "flat"), "--labels", os.path.join(t, "val.txt"))
    named_raw = eval_json("--data", os.path.join(t, "named"))
    named = eval_json("--data", os.path.join(t, "named"), "--classes", os.path.join(t, "classes.txt"))
    if flat and named and named_raw:
        print(f"--labels flat folder: top-1 {flat['top1'] * 100:.2f}%; named folders: {named_raw['top1'] * 100:.2f}% "
              f"as sorted, {named['top1'] * 100:.2f}% with --classes")
        check("--labels: same top-1 as the class folders", flat["top1"] == res["jpg100"] and flat["samples"] == N)
        check("--classes: same top-1 as the class folders", named["top1"] == res["jpg100"])
        check("without --classes the sorted names mislabel", named_raw["top1"] < 0.5, str(named_raw["top1"]))
        names = [c.get("name") for c in named.get("classes", [])]
        check("--classes: class names in the report by index", names[:3] == NAMES[:3], str(names[:3]))

    # data convert: the JPEG folder into HDF5 gives the same accuracy; class names recorded
    got, lab, attrs = packed(os.path.join(t, "jpg100"), os.path.join(t, "jpg100.h5"))
    if got is not None:
        rep = eval_json("--data", os.path.join(t, "jpg100.h5"))
        check("data convert: HDF5 from the JPEG folder, same top-1", rep and rep["top1"] == res["jpg100"])
        check("data convert: class_names are the folder names",
              [str(s) if isinstance(s, str) else s.decode() for s in attrs.get("class_names", [])] ==
              [str(k) for k in range(10)], str(attrs.get("class_names")))
        check("data convert: images uint8 [N,28,28]", got.shape == (N, 28, 28) and got.dtype == np.uint8)
    got, lab, attrs = packed(os.path.join(t, "flat"), os.path.join(t, "flat.h5"), "--labels",
                             os.path.join(t, "val.txt"), "--classes", os.path.join(t, "classes.txt"))
    if got is not None:
        names = [s if isinstance(s, str) else s.decode() for s in attrs.get("class_names", [])]
        check("data convert --labels --classes: labels in list order, names by index",
              list(lab) == list(labels) and names == NAMES, f"{names}")
        pil = np.stack([np.asarray(Image.open(os.path.join(t, "flat", f"FMNIST_val_{i:08d}.JPEG")))
                        for i in range(N)])
        check("data convert --labels: pixels equal PIL's", np.array_equal(got, pil))
    got, _, _ = packed(os.path.join(t, "jpg100"), os.path.join(t, "jpg100_14.h5"), "--resize", "14x14")
    check("data convert --resize 14x14", got is not None and got.shape == (N, 14, 14))

    # every command that takes --data: run's stages get --labels / --calib-labels
    out = os.path.join(t, "run")
    rc, stdout, err = ptq("run", "--model", MODEL, "--calib-data", os.path.join(t, "flat"), "--calib-labels",
                          os.path.join(t, "val.txt"), "--data", os.path.join(t, "named"), "--classes",
                          os.path.join(t, "classes.txt"), "--out", out, "--calib-samples", "200", "--samples", "300")
    check("run with --calib-labels and --classes", rc == 0, err.strip()[-400:])
    if rc == 0:
        with open(os.path.join(out, "report", "validate.json")) as f:
            v = json.load(f)
        fp32 = v.get("top1_fp32")
        print(f"run: validate FP32 top-1 {fp32} on {v.get('samples')} images")
        check("run: validation saw the --classes labels", fp32 is not None and fp32 > 0.85 and v["samples"] == N,
              str(fp32))
        rc2, stdout2, _ = ptq("run", "--model", MODEL, "--calib-data", os.path.join(t, "flat"), "--calib-labels",
                              os.path.join(t, "val.txt"), "--data", os.path.join(t, "named"), "--classes",
                              os.path.join(t, "classes.txt"), "--out", out, "--calib-samples", "200",
                              "--samples", "300")
        check("run: a second run skips every stage", rc2 == 0 and "calibrate: up to date" in stdout2, stdout2[-300:])


def main():
    if not have_demo():
        print("jpeg_test: skipped (demo model or Fashion-MNIST missing)")
        return 77
    t = tempfile.mkdtemp(prefix="ptq-jpeg-")
    try:
        pixels_test(t)
        by_content_test(t)
        images, labels = fmnist_test(N)
        model_test(t, images, labels)
    finally:
        shutil.rmtree(t, ignore_errors=True)
    return finish("jpeg_test")


if __name__ == "__main__":
    sys.exit(main())
