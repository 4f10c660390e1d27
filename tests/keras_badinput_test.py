#!/usr/bin/env python3
"""Bad Keras HDF5 input (model/keras.c), made with h5py from the real
tests/data/keras/func_k3.h5: an HDF5 file that is not a Keras model (an
image set, a calibration archive), weights-only files (legacy and Keras 3),
a model_config naming a missing weight, a kernel whose shape contradicts its
config, malformed JSON (data after the value, a key twice) and config values, an external link: each a clear
message naming what is wrong and exit 4; a layer ptq does not know, or a
layer option it does not implement, is named with exit 5. Every command
takes the same loader, so eval, calibrate and export are checked on one case
each. Run by ctest (label badinput, also under the sanitizers)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import h5py
    import numpy as np
    from ptqtest import PTQ, SRC, check, finish, ptq
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

FUNC = os.path.join(SRC, "tests", "data", "keras", "func_k3.h5")


def variant(tmp, name, edit):
    """A copy of func_k3.h5 edited by edit(h5py.File)."""
    path = os.path.join(tmp, name + ".h5")
    shutil.copy(FUNC, path)
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def edit_config(fn):
    def edit(f):
        cfg = json.loads(f.attrs["model_config"])
        fn(cfg)
        f.attrs["model_config"] = json.dumps(cfg)
    return edit


def edit_text(fn):
    """An edit of model_config as text (what json.loads would not keep)."""
    def edit(f):
        raw = f.attrs["model_config"]
        f.attrs["model_config"] = fn(raw.decode() if isinstance(raw, bytes) else raw)
    return edit


def layer(cfg, name):
    return next(x for x in cfg["config"]["layers"] if x["config"]["name"] == name)


def drop_weight(f):
    g = f["model_weights/stem_conv"]
    del g["stem_conv/kernel"]
    g.attrs["weight_names"] = np.array([], dtype=np.float64)


def drop_dataset(f):
    del f["model_weights/logits/logits/bias"]


def write_model(path, layers, weights):
    """A Keras 3 .h5 written with h5py: a Sequential model_config of layers, weights {layer: {role: dataset
    arguments}} under model_weights/<layer>/<layer>/<role>."""
    with h5py.File(path, "w") as f:
        f.attrs["model_config"] = json.dumps({"class_name": "Sequential", "config": {"name": "m", "layers": layers}})
        f.attrs["keras_version"] = "3.15.1"
        f.attrs["backend"] = "jax"
        for name, ws in weights.items():
            g = f.create_group(f"model_weights/{name}")
            g.attrs["weight_names"] = np.array([f"{name}/{r}" for r in ws], dtype=object)
            for role, kw in ws.items():
                g.create_dataset(f"{name}/{role}", **kw)
    return path


def main():
    if not os.path.exists(FUNC):
        print("skipped: tests/data/keras/func_k3.h5 missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-kbad-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731

    images = J("images.h5")
    with h5py.File(images, "w") as f:
        f["images"] = np.zeros((4, 28, 28), np.uint8)
        f["labels"] = np.zeros(4, np.int64)
    archive = J("calib.h5")
    with h5py.File(archive, "w") as f:
        f.attrs["format"] = "ptq calibration archive"
        f["tensors/name"] = np.array([b"x"])
    legacy_weights = J("legacy.weights.h5")
    with h5py.File(legacy_weights, "w") as f:
        f.attrs["layer_names"] = np.array([b"dense"])
        f.create_group("dense").attrs["weight_names"] = np.array([b"dense/kernel:0"])
        f["dense/dense/kernel:0"] = np.zeros((4, 2), np.float32)
    k3_weights = J("k3.weights.h5")
    with h5py.File(k3_weights, "w") as f:
        f.create_group("layers/dense/vars")["0"] = np.zeros((4, 2), np.float32)
    ext = variant(tmp, "ext", lambda f: f.__setitem__("model_weights/elsewhere", h5py.ExternalLink("x.h5", "/y")))
    # a Conv2D whose kernel [65536, 65536, 65536, 65536] (an HDF5 dataset of no stored chunks, 9 KB) numbers 2^64
    # values: the count wrapped to 0, passed the size checks, and the HWIO -> OIHW copy wrote past a 1-byte buffer
    huge = write_model(J("huge_kernel.h5"), [
        {"class_name": "InputLayer", "config": {"batch_shape": [None, 1, 1, 65536], "dtype": "float32", "name": "x"}},
        {"class_name": "Conv2D", "config": {"name": "c", "filters": 65536, "kernel_size": [65536, 65536],
                                            "padding": "same", "use_bias": False}}],
        {"c": {"kernel": {"shape": (65536,) * 4, "chunks": (1, 1, 1, 1), "dtype": "f4"}}})
    cases = [  # (what, file, exit code, words the message must hold)
        ("a kernel of 2^64 values (no crash)", huge, 4, ["layer 'c'", "kernel", "2^63"]),
        ("an image set", images, 4, ["not a Keras model", "model_config"]),
        ("a calibration archive", archive, 4, ["calibration archive"]),
        ("a legacy weights-only file", legacy_weights, 4, ["weights-only", "model.save"]),
        ("a Keras 3 weights-only file", k3_weights, 4, ["weights-only"]),
        ("a weight the config needs is missing", variant(tmp, "noweight", drop_weight), 4,
         ["stem_conv", "'kernel' is missing"]),
        ("weight_names lists a dataset that is not there", variant(tmp, "nodata", drop_dataset), 4,
         ["logits", "no such dataset"]),
        ("a kernel whose shape contradicts filters", variant(
            tmp, "filters", edit_config(lambda c: layer(c, "stem_conv")["config"].update(filters=17))), 4,
         ["stem_conv", "kernel", "3x3x1x16", "3x3x1x17"]),
        ("a Dense kernel whose shape contradicts units", variant(
            tmp, "units", edit_config(lambda c: layer(c, "logits")["config"].update(units=12))), 4,
         ["logits", "96x10", "96x12"]),
        ("model_config that is not JSON", variant(
            tmp, "json", lambda f: f.attrs.__setitem__("model_config", "{\"class_name\": ")), 4, ["not valid JSON"]),
        ("a key twice in a layer's config (Keras takes the last, cJSON the first)", variant(
            tmp, "dupkey", edit_text(lambda t: t.replace('"activation": "linear"', '"activation": "relu", '
                                                                '"activation": "linear"', 1))), 4,
         ["model_config", "key \"activation\" appears twice", "config.layers[2].config", "'stem_conv'"]),
        ("data after model_config's JSON value", variant(tmp, "trail", edit_text(lambda t: t + "}}garbage[")), 4,
         ["model_config", "unexpected data after the value at byte"]),
        ("a Keras operation on a constant (x * 2 saves a Multiply op called on x and 2)", variant(
            tmp, "opconst", edit_config(lambda c: layer(c, "gated")["inbound_nodes"][0].update(
                args=[layer(c, "gated")["inbound_nodes"][0]["args"][0][0], 2.0]))), 5,
         ["'gated' (Multiply)", "constant argument 2", "x * 2"]),
        ("a layer quantized by model.quantize('int8')", variant(
            tmp, "quantized", edit_config(lambda c: layer(c, "stem_conv")["config"].update(dtype={
                "module": "keras.dtype_policies", "class_name": "QuantizedDTypePolicy",
                "config": {"mode": "int8", "source_name": "float32"}}))), 5,
         ["stem_conv", "quantized layer", "'int8'"]),
        ("a layer quantized by Keras 3.3's model.quantize('int8') (the policy named int8_from_float32, no mode)",
         variant(tmp, "quantized33", edit_config(lambda c: layer(c, "stem_conv")["config"].update(dtype={
             "module": "keras", "class_name": "QuantizedDTypePolicy", "config": {"name": "int8_from_float32"}}))), 5,
         ["stem_conv", "quantized layer", "'int8'"]),
        ("lora_rank without the LoRA weights", variant(
            tmp, "lora", edit_config(lambda c: layer(c, "stem_conv")["config"].update(lora_rank=2))), 4,
         ["stem_conv", "'lora_kernel_a' is missing"]),
        ("a negative kernel size", variant(
            tmp, "ksize", edit_config(lambda c: layer(c, "stem_conv")["config"].update(kernel_size=[-3, 3]))), 4,
         ["stem_conv", "kernel_size"]),
        ("an inbound node naming a layer that does not exist", variant(
            tmp, "dangling", edit_config(lambda c: layer(c, "probs")["inbound_nodes"][0]["args"][0]["config"]
                                         .update(keras_history=["ghost", 0, 0]))), 4, ["probs", "not computed"]),
        ("an external link", ext, 4, ["outside itself", "elsewhere"]),
        ("an unknown layer", variant(
            tmp, "unknown", edit_config(lambda c: layer(c, "stem_relu").update(class_name="Snake"))), 5,
         ["stem_relu", "Snake", "does not know"]),
        ("an unknown activation", variant(
            tmp, "act", edit_config(lambda c: layer(c, "stem_relu")["config"].update(activation="mish"))), 5,
         ["stem_relu", "mish"]),
        ("channels_first", variant(
            tmp, "cf", edit_config(lambda c: layer(c, "stem_conv")["config"].update(data_format="channels_first"))),
         5, ["stem_conv", "channels_first"]),
    ]
    for what, path, code, words in cases:
        rc, _, err = ptq("info", path)
        check(f"info: {what}: exit {code}, message names it", rc == code and all(w in err for w in words),
              f"exit {rc}: {err.strip()[-300:]}")
    # the other commands load through the same code
    rc, _, err = ptq("eval", "--model", J("unknown.h5"), "--data", images)
    check("eval: an unknown layer, exit 5", rc == 5 and "Snake" in err, f"exit {rc}: {err.strip()[-200:]}")
    rc, _, err = ptq("calibrate", "--model", legacy_weights, "--data", images, "--out", J("c.h5"))
    check("calibrate: a weights-only file, exit 4, nothing written", rc == 4 and not os.path.exists(J("c.h5")),
          f"exit {rc}: {err.strip()[-200:]}")
    plan = J("plan.json")
    with open(plan, "w") as f:
        json.dump({"format": "ptq-plan", "format_version": 1, "tensors": []}, f)
    rc, _, err = ptq("export", "--format", "qdq", "--plan", plan, "--model", J("filters.h5"), "--out", J("q.onnx"))
    check("export qdq: a mismatched kernel, refused, nothing written", rc in (2, 4) and
          not os.path.exists(J("q.onnx")), f"exit {rc}: {err.strip()[-200:]}")
    # a chain of 9,990 ReLUs listed backwards: each pass over the layers translated one, looking up its input among
    # all outputs (cubic: minutes); refused within the step limit, exit 5. The same chain in call order still reads.
    def relu_chain(n, backwards):
        def edit(c):
            def arg(name):
                return {"class_name": "__keras_tensor__", "config": {"shape": [None, 28, 28, 1], "dtype": "float32",
                                                                     "keras_history": [name, 0, 0]}}
            chain = [{"class_name": "ReLU", "config": {"name": f"r{i:05d}"}, "name": f"r{i:05d}",
                      "inbound_nodes": [{"args": [arg(f"r{i - 1:05d}" if i else "image")], "kwargs": {}}]}
                     for i in range(n)]
            c["config"]["layers"] = [layer(c, "image")] + (chain[::-1] if backwards else chain)
            c["config"]["output_layers"] = [f"r{n - 1:05d}", 0, 0]
        return edit
    for backwards in (True, False):
        path = variant(tmp, f"chain{int(backwards)}", edit_config(relu_chain(9990, backwards)))
        t0 = time.monotonic()
        try:
            p = subprocess.run([PTQ, "info", path], capture_output=True, text=True, timeout=60)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = None, "timed out"
        secs = time.monotonic() - t0
        want = 5 if backwards else 0
        check(f"info: 9,990 layers listed {'backwards' if backwards else 'in call order'}: exit {want} at once",
              rc == want and secs < 20 and (not backwards or "listed too far" in err),
              f"exit {rc} in {secs:.1f} s: {err.strip()[-200:]}")
    return finish("keras_badinput_test")


if __name__ == "__main__":
    sys.exit(main())
