"""Preprocessing follows the model (issue 18): layout, channels and size from
the model's input, --preprocess overriding only the keys it names, the
imagenet presets, grayscale replicated with a notice, the warning when a
model has no preprocessing metadata and --preprocess names no normalization,
float HDF5 images already in [0, 1] not scaled again, the below-chance hint
of `ptq eval`, and HDF5 class_names stored as one comma-joined string.
Resize + crop equal torchvision's Resize(256) + CenterCrop(224) on PIL
images pixel for pixel (uint8 PNGs, 224x224 included), in a folder and in
the set `ptq data convert --resize` writes.

The models are tiny: GlobalAveragePool + Flatten of a [N,3,4,4] (or, through
a Transpose, [N,4,4,3]) input, so the logits are the per-channel means of
the preprocessed image and numpy recomputes them from the stored pixels."""
import json
import os
import sys
import tempfile

from ptqtest import check, finish, ptq

try:
    import h5py
    import numpy as np
    from onnx import TensorProto, helper
    import hdf5plugin  # noqa: F401  (registers the zstd filter 32015 with h5py)
    from PIL import Image
except ImportError as e:  # pragma: no cover
    print(f"preprocess_test: skipped ({e})")
    sys.exit(77)

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)
H = W = 4


def pool_model(path, nhwc, meta=None, ch=3, size=(H, W)):
    """logits[n, c] = mean over H, W of input channel c; input [N,ch,4,4] or [N,4,4,ch] (size: other dims or
    names of dynamic ones)."""
    shape = ["N", *size, ch] if nhwc else ["N", ch, *size]
    nodes = []
    src = "x"
    if nhwc:
        nodes.append(helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]))
        src = "t"
    nodes += [helper.make_node("GlobalAveragePool", [src], ["p"]), helper.make_node("Flatten", ["p"], ["y"])]
    g = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", ch])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    if meta:
        helper.set_model_props(m, {"ptq.preprocess": meta})
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def h5_set(path, images, labels, class_names=None):
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
        if class_names is not None:
            f.attrs["class_names"] = class_names


def expected(images_u8_rgb, scale, mean, std, bgr=False):
    """Per-channel mean of (x * scale - mean) / std in the model's channel order; images [N,H,W,3]."""
    x = images_u8_rgb.astype(np.float32)
    if bgr:
        x = x[..., ::-1]
    return ((x * scale - mean) / std).mean(axis=(1, 2))


def pil_resized_crop(images_u8_rgb, size=256):
    """Resize(size) + CenterCrop(H) of square H x W images, as PIL and torchvision give them: [N,H,W,3] uint8."""
    o = (size - H) // 2  # even, so round() agrees
    return np.stack([np.asarray(Image.fromarray(im).resize((size, size), Image.BILINEAR))[o:o + H, o:o + W]
                     for im in images_u8_rgb])


def gather_model(path, ch, size=224):
    """y[n, :] = x[n, ch, :, :] flattened: x [N,3,size,size] -> [N, size*size], the preprocessed pixels."""
    g = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["g"], axis=1), helper.make_node("Flatten", ["g"], ["y"])], "gather",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", size * size])],
        [helper.make_tensor("i", TensorProto.INT64, [], [ch])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def check_torchvision_geometry(tmp):
    """ptq's imagenet resize + crop (scale=1, no normalization: 0..255 values) against torchvision's
    Resize(256) + CenterCrop(224) on PIL RGB images: equal to the last bit, for sizes whose long side
    truncates (300x257), whose crop offset rounds half to even (249x240), already the crop size (224x224:
    resized too, a 1.14x zoom) and a 16x downscale of noise (2000x1500); also for the set that
    `data convert --resize 256x256` writes, read back through the same preset."""
    try:
        from torchvision import transforms
    except ImportError:
        print("skip torchvision geometry: no torchvision")
        return
    rng = np.random.default_rng(7)
    folder = os.path.join(tmp, "geo")
    os.makedirs(os.path.join(folder, "a"))
    paths = []
    for i, (w, h) in enumerate(((224, 224), (300, 257), (249, 240), (500, 375), (2000, 1500))):
        yy, xx = np.mgrid[0:h, 0:w]
        ramp = (xx * 255 // max(w - 1, 1) + yy * 3) % 256
        img = (rng.integers(0, 256, (h, w, 3)) // 2 + ramp[..., None] // 2).astype(np.uint8)
        paths.append(os.path.join(folder, "a", f"{i}_{w}x{h}.png"))
        Image.fromarray(img).save(paths[-1])
    tv = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)])
    want = np.stack([np.asarray(tv(Image.open(q).convert("RGB"))) for q in paths]).astype(np.float32)
    conv = os.path.join(tmp, "geo256.h5")
    rc, _, se = ptq("data", "convert", "--images", folder, "--out", conv, "--resize", "256x256")
    check("data convert --resize 256x256 of the geometry folder", rc == 0, f"rc {rc}: {se[-300:]}")
    if rc == 0:
        with h5py.File(conv, "r") as f:
            stored = f["images"][()]
        tv256 = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(256)])
        ref256 = np.stack([np.asarray(tv256(Image.open(q).convert("RGB"))) for q in paths])
        check("data convert --resize 256x256 stores torchvision's Resize(256) + CenterCrop(256) exactly",
              stored.shape == ref256.shape and np.array_equal(stored, ref256),
              str(np.abs(stored.astype(int) - ref256).max() if stored.shape == ref256.shape else stored.shape))
    spec = "imagenet scale=1 mean=0 std=1"
    for ch in range(3):
        model = os.path.join(tmp, f"gather{ch}.onnx")
        gather_model(model, ch)
        for what, data in (("folder", folder), ("converted set", conv)):
            rc, got, _, se = eval_logits(tmp, model, data, "--preprocess", spec)
            ok = rc == 0 and got is not None and got.shape == (len(paths), 224 * 224)
            diff = np.abs(got.reshape(-1, 224, 224) - want[..., ch]).max(axis=(1, 2)) if ok else None
            check(f"channel {ch} of imagenet resize + crop from the {what} equals torchvision's for "
                  + ", ".join(os.path.basename(q)[2:-4] for q in paths), ok and not diff.any(),
                  f"rc {rc}: per-image max diff {diff}: {se[-300:]}")


def flatten_model(path, size):
    """y = Flatten(x): x [N,3,*size] (names for dynamic dims) -> the preprocessed pixels [N, 3*H*W]."""
    g = helper.make_graph([helper.make_node("Flatten", ["x"], ["y"])], "flat",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, *size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "K"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def check_dynamic_resize(tmp):
    """A dynamic-size model ([N,3,h,w]) with resize=R and no size=: torchvision's Resize(R) alone gives each image
    its own size, and a batch needs one, so the crop is R x R (Resize(R) + CenterCrop(R)), said in a note. It had
    cropped to the first image's size: 30x20 images under resize=40 fed a 30x20 corner-offset crop of the 60x40
    resize (exit 0), and under resize=16 were refused as 'smaller than the crop 30x20', a crop nobody asked for."""
    try:
        from torchvision import transforms
    except ImportError:
        print("skip dynamic resize: no torchvision")
        return
    rng = np.random.default_rng(44)
    folder = os.path.join(tmp, "dynresize")
    os.makedirs(os.path.join(folder, "a"))
    paths = []
    for i, (w, h) in enumerate(((30, 20), (25, 40), (16, 16))):
        paths.append(os.path.join(folder, "a", f"{i}.png"))
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(paths[-1])
    model = os.path.join(tmp, "dynflat.onnx")
    flatten_model(model, ("h", "w"))
    for r in (16, 40):
        tv = transforms.Compose([transforms.Resize(r), transforms.CenterCrop(r)])
        want = np.stack([np.asarray(tv(Image.open(q).convert("RGB"))) for q in paths]).astype(np.float32)
        rc, got, _, se = eval_logits(tmp, model, folder, "--preprocess", f"scale=1 resize={r}")
        ok = rc == 0 and got is not None and got.shape == (len(paths), 3 * r * r)
        check(f"dynamic-size model, resize={r} and no size=: torchvision's Resize({r}) + CenterCrop({r})",
              ok and np.array_equal(got.reshape(-1, 3, r, r).transpose(0, 2, 3, 1), want),
              f"rc {rc}: {got.shape if got is not None else None}: {se[-300:]}")
        check(f"dynamic-size model, resize={r}: a note names the {r}x{r} crop and size=",
              f"dynamic size" in se and f"crops {r}x{r}" in se and "size=" in se, se[-400:])
    # size= still names the crop
    rc, got, _, se = eval_logits(tmp, model, folder, "--preprocess", "scale=1 resize=16 size=12x10")
    tv = transforms.Compose([transforms.Resize(16), transforms.CenterCrop((12, 10))])
    want = np.stack([np.asarray(tv(Image.open(q).convert("RGB"))) for q in paths]).astype(np.float32)
    check("dynamic-size model, resize=16 size=12x10: that crop, no note about it",
          rc == 0 and got is not None and got.shape == (len(paths), 360)
          and np.array_equal(got.reshape(-1, 3, 12, 10).transpose(0, 2, 3, 1), want) and "crops" not in se,
          f"rc {rc}: {se[-300:]}")
    # no resize: the first image's size, which the note says; an image of another size is refused naming it
    rc, _, _, se = eval_logits(tmp, model, folder, "--preprocess", "scale=1")
    check("dynamic-size model without resize=: the first image's size, said; another size refused (exit 6)",
          rc == 6 and "runs at the first image's size 30x20" in se and "1.png" in se, f"rc {rc}: {se[-400:]}")


def eval_logits(tmp, model, data, *extra):
    out = os.path.join(tmp, "logits.npy")
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = ptq("eval", "--model", model, "--data", data, "--logits", out, *extra)
    return rc, (np.load(out) if rc == 0 and os.path.exists(out) else None), so, se


def close(a, b, tol=1e-4):
    return a is not None and a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def main():
    rng = np.random.default_rng(18)
    n = 48  # enough that 0% top-1 is significantly below chance (1/3)
    rgb = rng.integers(0, 256, size=(n, H, W, 3), dtype=np.uint8)
    labels = rng.integers(0, 3, size=n).astype(np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        nchw, nhwc = os.path.join(tmp, "nchw.onnx"), os.path.join(tmp, "nhwc.onnx")
        pool_model(nchw, nhwc=False)
        pool_model(nhwc, nhwc=True)
        data = os.path.join(tmp, "rgb.h5")
        h5_set(data, rgb, labels)
        meanstd = "mean=0.485,0.456,0.406 std=0.229,0.224,0.225"
        want = expected(rgb, 1 / 255, IMAGENET_MEAN, IMAGENET_STD)

        # 1. channels and layout from the model's input: only mean/std given
        for name, model in (("NCHW", nchw), ("NHWC", nhwc)):
            rc, got, _, se = eval_logits(tmp, model, data, "--preprocess", meanstd)
            check(f"3-channel {name} model with only mean/std", rc == 0 and close(got, want), f"rc {rc}: {se[-300:]}")

        # 2. presets, and items after them
        # the presets resize to 256 and crop the model's 4x4 (torchvision's Resize(256) + CenterCrop(4))
        rgb256 = pil_resized_crop(rgb)
        rc, got, _, se = eval_logits(tmp, nchw, data, "--preprocess", "imagenet")
        check("--preprocess imagenet", rc == 0 and close(got, expected(rgb256, 1 / 255, IMAGENET_MEAN, IMAGENET_STD)),
              f"rc {rc}: {se[-300:]}")
        caffe_mean = np.array([103.939, 116.779, 123.68], np.float32)
        rc, got, _, se = eval_logits(tmp, nhwc, data, "--preprocess", "imagenet-bgr-caffe")
        check("--preprocess imagenet-bgr-caffe (BGR, scale 1, caffe means)",
              rc == 0 and close(got, expected(rgb256, 1.0, caffe_mean, 1.0, bgr=True), 1e-3), f"rc {rc}: {se[-300:]}")
        # order= after a preset: each colour keeps its mean (R 123.68), now in the model's RGB order
        rc, got, _, se = eval_logits(tmp, nchw, data, "--preprocess", "imagenet-bgr-caffe order=RGB")
        check("--preprocess imagenet-bgr-caffe order=RGB keeps the caffe means with their colours",
              rc == 0 and close(got, expected(rgb256, 1.0, caffe_mean[::-1], 1.0), 1e-3), f"rc {rc}: {se[-300:]}")
        # ... but a mean= list is per model channel: B, G, R under order=BGR
        rc, got, _, se = eval_logits(tmp, nchw, data, "--preprocess", "imagenet-bgr-caffe order=BGR mean=100,110,120")
        check("a mean= list is per model channel (BGR)",
              rc == 0 and close(got, expected(rgb256, 1.0, np.array([100, 110, 120], np.float32), 1.0, bgr=True), 1e-3),
              f"rc {rc}: {se[-300:]}")
        rc, got, _, se = eval_logits(tmp, nchw, data, "--preprocess", "imagenet std=0.5")
        check("a preset refined by a later item",
              rc == 0 and close(got, expected(rgb256, 1 / 255, IMAGENET_MEAN, 0.5)), f"rc {rc}: {se[-300:]}")
        # --preprocess overrides only what it names: the metadata's std stays
        meta_model = os.path.join(tmp, "meta.onnx")
        pool_model(meta_model, nhwc=False, meta="scale=1/255 mean=0.5 std=0.25")
        rc, got, _, se = eval_logits(tmp, meta_model, data, "--preprocess", "mean=0.1,0.2,0.3")
        check("--preprocess keeps the metadata's other keys",
              rc == 0 and close(got, expected(rgb, 1 / 255, np.array([0.1, 0.2, 0.3], np.float32), 0.25)),
              f"rc {rc}: {se[-300:]}")
        check("no warning when the model has ptq.preprocess", "warning" not in se, se[-300:])

        # a preset on a 1-channel model: its per-colour means and stds would apply R's (caffe: B's) alone, refused
        # unless mean= (and imagenet's std=) follow it
        gray = os.path.join(tmp, "gray.onnx")
        pool_model(gray, nhwc=False, ch=1)
        gray_data = os.path.join(tmp, "gray.h5")
        h5_set(gray_data, rgb[..., 0], np.zeros(n, np.int64))
        for spec, refused in (("imagenet", "means and stds are per colour (R, G, B)"),
                              ("imagenet std=0.2", "name mean= and std= for that channel"),
                              ("Imagenet-BGR-Caffe", "means are per colour (B, G, R)")):
            rc, _, _, se = eval_logits(tmp, gray, gray_data, "--preprocess", spec)
            check(f"--preprocess {spec} on a 1-channel model is refused (exit 2)",
                  rc == 2 and refused in se and "model input 'x' [?x1x4x4] takes 1 channel" in se,
                  f"rc {rc}: {se[-300:]}")
        for spec, mean, std in (("imagenet mean=0.45 std=0.25", 0.45, 0.25), ("imagenet-bgr-caffe mean=120", 120, 1)):
            rc, got, _, se = eval_logits(tmp, gray, gray_data, "--preprocess", spec)
            scale = 1.0 if "caffe" in spec else 1 / 255
            want_gray = (pil_resized_crop(rgb[..., :1].repeat(3, axis=3))[..., 0].astype(np.float32) * np.float32(scale)
                         - np.float32(mean)) / np.float32(std)
            check(f"--preprocess {spec} on a 1-channel model", rc == 0 and got is not None
                  and close(got[:, 0], want_gray.mean(axis=(1, 2)), 1e-3), f"rc {rc}: {se[-300:]}")

        # geometry the model's input fixes: --preprocess may repeat it, and naming another value is refused
        rc, got, _, se = eval_logits(tmp, nchw, data, "--preprocess", meanstd + " layout=NCHW channels=3 size=4x4")
        check("--preprocess repeating the model's layout, channels and size", rc == 0 and close(got, want),
              f"rc {rc}: {se[-300:]}")
        for item in ("layout=NHWC", "channels=1", "size=8x8"):
            rc, _, _, se = eval_logits(tmp, nchw, data, "--preprocess", "mean=0.5 std=0.5 " + item)
            check(f"--preprocess {item} contradicting the model input is refused (exit 2)",
                  rc == 2 and f"--preprocess {item} contradicts the model input 'x'" in se
                  and "(NCHW, 3 channels, 4x4); drop it" in se and "resize=" not in se, f"rc {rc}: {se[-300:]}")

        # 3. no metadata and no flag: a warning naming what was assumed
        rc, got, _, se = eval_logits(tmp, nchw, data)
        check("missing preprocessing warns (as a warning, not 'note: warning:') and names the assumption",
              rc == 0 and "ptq eval: warning: the model has no ptq.preprocess metadata and no --preprocess" in se
              and "note: warning" not in se
              and "scale=1/255 mean=0 std=1" in se and close(got, expected(rgb, 1 / 255, 0.0, 1.0)), se[-400:])
        # ... and so does a --preprocess naming only geometry; one naming scale, mean, std, order or a preset does not
        for spec in ("resize=256", "layout=NCHW channels=3 size=4x4"):
            rc, _, _, se = eval_logits(tmp, nchw, data, "--preprocess", spec)
            check(f"--preprocess \"{spec}\" (only geometry) without metadata warns and names the assumption",
                  rc == 0 and "warning: the model has no ptq.preprocess metadata and --preprocess names only "
                  "geometry" in se and "scale=1/255 mean=0 std=1 order=RGB" in se, f"rc {rc}: {se[-400:]}")
        for spec in ("resize=256 scale=1/255", "mean=0.5 size=4x4", "std=2", "order=BGR", "imagenet-bgr-caffe"):
            rc, _, _, se = eval_logits(tmp, nchw, data, "--preprocess", spec)
            check(f"--preprocess \"{spec}\" without metadata: no warning", rc == 0 and "warning" not in se,
                  f"rc {rc}: {se[-400:]}")
        # --preprocess order= reversing the metadata's order with per-channel means or stds it does not restate:
        # per colour or per model channel cannot be told, so it is refused, saying how to say which
        caffe_model = os.path.join(tmp, "caffe-meta.onnx")
        pool_model(caffe_model, nhwc=False, meta="imagenet-bgr-caffe")
        rc, _, _, se = eval_logits(tmp, caffe_model, data, "--preprocess", "order=RGB")
        check("order=RGB against imagenet-bgr-caffe metadata is refused (exit 2), naming mean=",
              rc == 2 and "turns the model's BGR channel order" in se and "name mean= in --preprocess" in se,
              f"rc {rc}: {se[-400:]}")
        rc, _, _, se = eval_logits(tmp, caffe_model, data, "--preprocess", "order=RGB mean=123.68,116.779,103.939")
        check("order=RGB with the means restated: runs", rc == 0, f"rc {rc}: {se[-400:]}")
        im_model = os.path.join(tmp, "imagenet-meta.onnx")
        pool_model(im_model, nhwc=False, meta="imagenet")
        rc, _, _, se = eval_logits(tmp, im_model, data, "--preprocess", "order=BGR mean=0.4")
        check("order=BGR against imagenet metadata restating only mean= is refused for its stds",
              rc == 2 and "name std= in --preprocess" in se, f"rc {rc}: {se[-400:]}")
        rc, _, _, se = eval_logits(tmp, im_model, data, "--preprocess", "imagenet-bgr-caffe")
        check("a preset in --preprocess over other metadata: runs", rc == 0, f"rc {rc}: {se[-400:]}")

        # metadata naming only geometry (as a Keras import's layout=NHWC) is no normalization either
        geo_model = os.path.join(tmp, "geo-meta.onnx")
        pool_model(geo_model, nhwc=False, meta="layout=NCHW")
        rc, _, _, se = eval_logits(tmp, geo_model, data)
        check("metadata naming only geometry warns and names the assumption",
              rc == 0 and "warning: the model's ptq.preprocess metadata names no normalization and no --preprocess"
              in se and "scale=1/255 mean=0 std=1" in se, f"rc {rc}: {se[-400:]}")
        rc, _, _, se = eval_logits(tmp, geo_model, data, "--preprocess", "scale=1/255")
        check("geometry-only metadata with --preprocess scale=1/255: no warning", rc == 0 and "warning" not in se,
              f"rc {rc}: {se[-400:]}")
        rc, _, _, se = eval_logits(tmp, meta_model, data)
        check("metadata naming the normalization: no warning", rc == 0 and "warning" not in se,
              f"rc {rc}: {se[-400:]}")

        # 4. grayscale into a 3-channel model: replicated, with a notice
        gray = rng.integers(0, 256, size=(n, H, W), dtype=np.uint8)
        gdata = os.path.join(tmp, "gray.h5")
        h5_set(gdata, gray, labels)
        rc, got, _, se = eval_logits(tmp, nchw, gdata, "--preprocess", meanstd)
        g3 = np.repeat(gray[..., None], 3, axis=3)
        check("grayscale replicated into 3 channels, with a notice",
              rc == 0 and "replicated" in se and close(got, expected(g3, 1 / 255, IMAGENET_MEAN, IMAGENET_STD)),
              f"rc {rc}: {se[-300:]}")

        # 4a. colour images into a 1-channel model: the note says how (it read "converting 3-channel images to
        # the model's 1 channels"), and the pixels are that luma
        rgb_one_class = os.path.join(tmp, "rgb1class.h5")
        h5_set(rgb_one_class, rgb, np.zeros(n, np.int64))
        rc, got, _, se = eval_logits(tmp, os.path.join(tmp, "gray.onnx"), rgb_one_class, "--preprocess", "scale=1/255")
        luma = (0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]) / 255
        check("RGB images into a 1-channel model: ITU-R 601 luma, and a note saying so",
              rc == 0 and close(got[:, 0], luma.mean(axis=(1, 2))) and "3-channel images into the model's 1 channel: "
              "gray by ITU-R 601 luma (0.299 R + 0.587 G + 0.114 B" in se and "1 channels" not in se,
              f"rc {rc}: {se[-300:]}")

        # 4b. an RGBA input [N,4,4,4] reads the same either way round: its readers say which (a GlobalAveragePool
        # takes NCHW, a Transpose 0,3,1,2 makes NCHW of NHWC); the shape alone had made the NCHW one NHWC
        rgba = rng.integers(0, 256, size=(n, H, W, 4), dtype=np.uint8)
        rgba_data = os.path.join(tmp, "rgba.h5")
        h5_set(rgba_data, rgba, labels)
        want_rgba = rgba.astype(np.float32).mean(axis=(1, 2)) / 255
        for layout in ("NCHW", "NHWC"):
            rgba_model = os.path.join(tmp, f"rgba-{layout}.onnx")
            pool_model(rgba_model, nhwc=layout == "NHWC", ch=4)
            rc, got, _, se = eval_logits(tmp, rgba_model, rgba_data, "--preprocess", "scale=1/255")
            check(f"an RGBA {layout} 4x4 model takes its layout from its first node",
                  rc == 0 and close(got, want_rgba), f"rc {rc}: {se[-300:]}")
            other = "NHWC" if layout == "NCHW" else "NCHW"
            rc, _, _, se = eval_logits(tmp, rgba_model, rgba_data, "--preprocess", f"scale=1/255 layout={other}")
            check(f"layout={other} contradicting the RGBA {layout} model's first node is refused (exit 2)",
                  rc == 2 and f"--preprocess layout={other} contradicts the model input 'x'" in se,
                  f"rc {rc}: {se[-300:]}")

        # 4b'. shapes both layouts fit, told apart by the model: [N,1,3,3] gray into a 3x3 gray input is NCHW (the
        # shape alone read 1x3 RGB: refused, 'images are 3x1'); [N,3,3,3] into a 3x3 RGB input fits both, so the
        # guess (NHWC) stands with a note naming the set and --layout
        gray33 = rng.integers(0, 256, size=(n, 1, 3, 3), dtype=np.uint8)
        gray33_data, gray33_model = os.path.join(tmp, "gray33.h5"), os.path.join(tmp, "gray33.onnx")
        h5_set(gray33_data, gray33, np.zeros(n, np.int64))
        pool_model(gray33_model, nhwc=False, ch=1, size=(3, 3))
        rc, got, _, se = eval_logits(tmp, gray33_model, gray33_data, "--preprocess", "scale=1/255")
        check("[N,1,3,3] into a 3x3 gray model is read as NCHW", rc == 0 and
              close(got, gray33.astype(np.float32).mean(axis=(2, 3)) / 255) and "--layout" not in se,
              f"rc {rc}: {se[-300:]}")
        rgb33 = rng.integers(0, 256, size=(n, 3, 3, 3), dtype=np.uint8)
        rgb33_data, rgb33_model = os.path.join(tmp, "rgb33.h5"), os.path.join(tmp, "rgb33.onnx")
        h5_set(rgb33_data, rgb33, labels)
        pool_model(rgb33_model, nhwc=False, ch=3, size=(3, 3))
        rc, got, _, se = eval_logits(tmp, rgb33_model, rgb33_data, "--preprocess", "scale=1/255")
        check("[N,3,3,3] into a 3x3 RGB model: read as NHWC, with a note naming the set and --layout NCHW",
              rc == 0 and close(got, rgb33.astype(np.float32).mean(axis=(1, 2)) / 255) and
              "images 'images' [48x3x3x3] in " + rgb33_data + " fit the model input alike as NHWC and as NCHW; "
              "read as NHWC" in se and "give --layout NCHW if they are stored so" in se, f"rc {rc}: {se[-300:]}")
        rc, got, _, se = eval_logits(tmp, rgb33_model, rgb33_data, "--preprocess", "scale=1/255", "--layout", "NCHW")
        check("[N,3,3,3] with --layout NCHW: read so, no note",
              rc == 0 and close(got, rgb33.astype(np.float32).mean(axis=(2, 3)) / 255) and "--layout" not in se,
              f"rc {rc}: {se[-300:]}")

        # 4c. a dynamic size ([N,3,h,w], as exports with dynamic axes declare) takes the images': every command
        # runs on it (calibrate had refused it, exit 6 "dim 2 is unknown")
        dyn = os.path.join(tmp, "dyn.onnx")
        pool_model(dyn, nhwc=False, size=("h", "w"))
        rc, got, _, se = eval_logits(tmp, dyn, data, "--preprocess", meanstd)
        check("a dynamic-size model: eval at the images' size", rc == 0 and close(got, want), f"rc {rc}: {se[-300:]}")
        arc, plan = os.path.join(tmp, "dyn.h5"), os.path.join(tmp, "dyn-plan.json")
        rc, _, se = ptq("calibrate", "--model", dyn, "--data", data, "--preprocess", meanstd, "--out", arc)
        check("a dynamic-size model: calibrate", rc == 0, f"rc {rc}: {se[-300:]}")
        rc, _, se = ptq("plan", "--model", dyn, arc, "--out", plan)
        check("a dynamic-size model: plan", rc == 0, f"rc {rc}: {se[-300:]}")
        rc, _, se = ptq("validate", "--model", dyn, "--plan", plan, "--data", data, "--preprocess", meanstd,
                        "--report", os.path.join(tmp, "dyn-rep"))
        check("a dynamic-size model: validate", rc == 0, f"rc {rc}: {se[-300:]}")
        check_dynamic_resize(tmp)

        # 5. float images: already in [0, 1] not scaled again; 0..255 floats scaled as documented
        fdata = os.path.join(tmp, "float01.h5")
        h5_set(fdata, rgb.astype(np.float32) / 255.0, labels)
        rc, got, _, se = eval_logits(tmp, nchw, fdata, "--preprocess", meanstd)
        check("float images in [0, 1] are not divided by 255 again",
              rc == 0 and "not scaled again" in se and close(got, want), f"rc {rc}: {se[-300:]}")
        rc, got, _, se = eval_logits(tmp, nchw, fdata, "--preprocess", meanstd + " scale=1/255")
        check("an explicit scale= on float [0, 1] images is honoured",
              rc == 0 and "not scaled again" not in se
              and close(got, expected(rgb.astype(np.float32) / 255.0, 1 / 255, IMAGENET_MEAN, IMAGENET_STD)),
              f"rc {rc}: {se[-300:]}")
        # a NaN or Inf pixel, first or later, is counted in a note and does not change the [0, 1] decision
        for where, bad in (("first", np.nan), ("later", np.nan), ("first", np.inf)):
            fbad = rgb.astype(np.float32) / 255.0
            fbad[0 if where == "first" else n - 1, 0, 0, 0] = bad
            fpath = os.path.join(tmp, "float01bad.h5")
            h5_set(fpath, fbad, labels)
            rc, got, _, se = eval_logits(tmp, nchw, fpath, "--preprocess", meanstd)
            ok = np.isfinite(want).all(axis=1) if got is None else np.isfinite(got).all(axis=1)
            check(f"a {bad} {where} in float [0, 1] images: noted, the set still not divided by 255",
                  rc == 0 and "1 of the" in se and "NaN or Inf" in se and "not scaled again" in se
                  and ok.sum() == n - 1 and close(got[ok], want[ok]), f"rc {rc}: {se[-300:]}")
        f255 = os.path.join(tmp, "float255.h5")
        h5_set(f255, rgb.astype(np.float32), labels)
        rc, got, _, se = eval_logits(tmp, nchw, f255, "--preprocess", meanstd)
        check("float images in 0..255 get scale 1/255", rc == 0 and "not scaled again" not in se and close(got, want),
              f"rc {rc}: {se[-300:]}")

        check("0..255 float images: a note names the range and the scale taken",
              "taken as 0..255 pixels, scale=0.00392157" in se, se[-300:])
        # nearly all in [0, 1] with a few values above: ambiguous, refused unless scale= is named
        fover = rgb.astype(np.float32) / 255.0
        fover[0, 0, 0, 0] = 1.0001
        fpath = os.path.join(tmp, "float_over.h5")
        h5_set(fpath, fover, labels)
        rc, got, _, se = eval_logits(tmp, nchw, fpath, "--preprocess", meanstd)
        check("float images in [0, 1] but one at 1.0001: refused as ambiguous (exit 2)",
              rc == 2 and "ambiguous" in se and "[0, 1.0001]" in se and "scale=1" in se, f"rc {rc}: {se[-300:]}")
        rc, got, _, se = eval_logits(tmp, nchw, fpath, "--preprocess", meanstd + " scale=1")
        check("... and read as given with scale=1",
              rc == 0 and close(got, expected(fover, 1.0, IMAGENET_MEAN, IMAGENET_STD)), f"rc {rc}: {se[-300:]}")
        fover = rgb.astype(np.float32)
        fover[rgb > 1] = 0.5  # 0..255 pixels but almost none above 1
        fover[0, 0, 0, 0] = 200.0
        h5_set(fpath, fover, labels)
        rc, got, _, se = eval_logits(tmp, nchw, fpath, "--preprocess", meanstd)
        check("fewer than 1 in 1,000 values above 1: refused as ambiguous", rc == 2 and "ambiguous" in se,
              f"rc {rc}: {se[-300:]}")

        # 6. below-chance FP32 accuracy: a hint about the labels / class map
        pred = want.argmax(axis=1)
        wrong = os.path.join(tmp, "wrong.h5")
        h5_set(wrong, rgb, (pred + 1) % 3)
        rc, _, so, se = eval_logits(tmp, nchw, wrong, "--preprocess", meanstd)
        check("below-chance accuracy prints the labels/class-map hint",
              rc == 0 and "below chance" in se and "class map" in se and "labels" in se, se[-400:])
        right = os.path.join(tmp, "right.h5")
        h5_set(right, rgb, pred)
        rc, _, so, se = eval_logits(tmp, nchw, right, "--preprocess", meanstd)
        check("no hint when the labels match", rc == 0 and "below chance" not in se, se[-300:])

        # 7. class_names as one comma-joined string reads as a list
        joined = os.path.join(tmp, "joined.h5")
        h5_set(joined, rgb, labels, class_names="cat, dog,bird")
        rc, so, se = ptq("eval", "--model", nchw, "--data", joined, "--preprocess", meanstd, "--json")
        names = []
        if rc == 0:
            names = [c.get("name") for c in json.loads(so).get("classes", [])]
        check("comma-joined class_names read as a list", names == ["cat", "dog", "bird"], f"rc {rc}: {names} {se[-300:]}")
        # an array of one name is that name, commas and all: a one-class folder named "cats," or "cats, dogs"
        # comes out of data convert so, and must read back as the folder does (it read as 2 classes, or not at all)
        one = os.path.join(tmp, "one.h5")
        h5_set(one, rgb, np.zeros(n, np.int64), class_names=np.array(["cats, dogs"], dtype=h5py.string_dtype()))
        rc, so, se = ptq("eval", "--model", nchw, "--data", one, "--preprocess", meanstd, "--json")
        names = [c.get("name") for c in json.loads(so).get("classes", [])] if rc == 0 else []
        check("one class_names string in an array stays one name", names[:1] == ["cats, dogs"] and "dogs" not in names,
              f"rc {rc}: {names[:3]} {se[-300:]}")
        for cls in ("cats, dogs", "cats,"):
            folder = os.path.join(tmp, "onecls" + str(len(cls)))
            os.makedirs(os.path.join(folder, cls))
            Image.fromarray(rgb[0]).save(os.path.join(folder, cls, "0.png"))
            converted = folder + ".h5"
            rc, _, se = ptq("data", "convert", "--images", folder, "--out", converted)
            outs = []
            for src in (folder, converted):
                rc2, so, se2 = ptq("eval", "--model", nchw, "--data", src, "--preprocess", meanstd, "--json")
                outs.append((rc2, [c.get("name") for c in json.loads(so).get("classes", [])] if rc2 == 0 else se2))
            check(f"a one-class folder '{cls}' converted reads back with its class name",
                  rc == 0 and outs[0] == outs[1] and outs[0][0] == 0 and outs[0][1][0] == cls, f"rc {rc}: {outs}")

        # 7b. 16-bit gray PNGs read as v / 257 (README's PNG item), where PIL's convert("L") clips at 255
        folder16 = os.path.join(tmp, "gray16")
        os.makedirs(os.path.join(folder16, "a"))
        g16 = rng.integers(0, 65536, size=(3, H, W), dtype=np.uint16)
        for i, img in enumerate(g16):
            Image.fromarray(img).save(os.path.join(folder16, "a", f"{i}.png"))
        gray_model = os.path.join(tmp, "gray-pool.onnx")
        pool_model(gray_model, nhwc=False, ch=1)
        rc, got, _, se = eval_logits(tmp, gray_model, folder16, "--preprocess", "scale=1/255")
        pil = np.stack([np.asarray(Image.open(os.path.join(folder16, "a", f"{i}.png")).convert("L")) for i in range(3)])
        check("16-bit gray PNGs read as v / 257 (PIL's convert('L') clips at 255 instead)",
              rc == 0 and close(got[:, 0], (g16.astype(np.float64) / 257).mean(axis=(1, 2)) / 255) and
              pil.max() == 255 and not close(got[:, 0], pil.astype(np.float64).mean(axis=(1, 2)) / 255) and
              "note: 3 of the 3 images read were 16-bit PNGs: each sample v read as v / 257" in se,
              f"rc {rc}: {se[-300:]}")

        # 7c. a folder mixing gray, RGB and RGBA PNGs: the notes count each kind over the images read (they had
        # come from the first image alone: 'grayscale images into the model's 3 channels' for a gray first image,
        # nothing when it was RGB, whatever the rest were)
        mixed = os.path.join(tmp, "mixed")
        os.makedirs(os.path.join(mixed, "a"))
        for i, mode in enumerate(("RGB", "L", "RGB", "RGBA", "L")):
            Image.fromarray(rgba[i]).convert(mode).save(os.path.join(mixed, "a", f"{i}.png"))
        rc, _, _, se = eval_logits(tmp, nchw, mixed, "--preprocess", meanstd)
        check("a mixed folder into an RGB model: '2 of the 5 images read were gray' (no note before)",
              rc == 0 and "note: 2 of the 5 images read were gray: the gray value replicated to R, G and B, into the "
              "model's 3 channels" in se and "grayscale images into" not in se, f"rc {rc}: {se[-400:]}")
        rc, _, _, se = eval_logits(tmp, gray_model, mixed, "--preprocess", "scale=1/255")
        check("a mixed folder into a gray model: RGB and RGBA counted apart",
              rc == 0 and "note: 2 of the 5 images read were RGB: gray by ITU-R 601 luma" in se and
              "note: 1 of the 5 images read was RGBA: gray by ITU-R 601 luma" in se and "3-channel images" not in se,
              f"rc {rc}: {se[-400:]}")

        # 8. the applied spec, model geometry and preset together, is what the calibration archive records
        archive = os.path.join(tmp, "calib.h5")
        rc, _, se = ptq("calibrate", "--model", nhwc, "--data", data, "--out", archive, "--preprocess", "imagenet")
        spec = ""
        if rc == 0:
            with h5py.File(archive, "r") as f:
                spec = f.attrs["preprocess"]
                spec = spec.decode() if isinstance(spec, bytes) else str(spec)
        check("the archive records the applied spec",
              "mean=0.485" in spec and "channels=3 layout=NHWC order=RGB" in spec
              and "size=4x4 resize=256" in spec and "std=0.229" in spec, f"rc {rc}: '{spec}' {se[-300:]}")
        check_torchvision_geometry(tmp)
    return finish("preprocess_test")


if __name__ == "__main__":
    sys.exit(main())
