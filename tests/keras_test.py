#!/usr/bin/env python3
"""Keras HDF5 models through every stage, on the real files of
tests/data/keras (scripts/train_keras_models.py: a functional Keras 3 model,
a Sequential Keras 3 model and the same Sequential model saved by tf.keras
2.x, each with Keras's own outputs on the 10,000 Fashion-MNIST test images).
`ptq eval` matches Keras within 1e-4 relative (per image, ||ptq - keras|| /
||keras||) and agrees on >= 99.9% of predictions; `ptq info` names tensors
and weights by Keras layer; `ptq run` (calibrate, sensitivity, plan,
validate, export) runs on a .h5 and its plans name Keras layers; INT8 and
FP8 plans validate and their Q/DQ exports run in onnxruntime with
onnxruntime's top-1 within 0.05 point of `ptq validate`'s and >= 99.9% of
predictions agreeing. The layer cases (tests/data/keras/case_*.h5, made by
scripts/make_keras_cases.py: small models of random weights, each a
configuration once translated wrongly, with their input and Keras's output
in case_*.npz) give Keras's outputs within 1e-4 relative. Run by ctest
(label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import glob
import json
import os
import shutil
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import h5py
    from ptqtest import FM, SRC, check, finish, fmnist_test, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

KERAS = os.path.join(SRC, "tests", "data", "keras")
MODELS = ("func_k3", "seq_k3", "seq_tfk2")


def run_ort(path, images, level=None):
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = (images.astype(np.float32) * np.float32(1 / 255)).reshape(-1, 28, 28, 1)  # NHWC, as Keras takes it
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 1000]})[0] for i in range(0, len(x), 1000)])


def layer_cases(tmp):
    """Each case_<name>.h5: ptq eval of its input x gives Keras's y. Plus case_dense4d with its MaxPooling2D's
    strides null, which Keras reads as the pool size (the same outputs)."""
    cases = sorted(glob.glob(os.path.join(KERAS, "case_*.h5")))
    check("layer cases present", len(cases) >= 1)
    nulled = os.path.join(tmp, "case_dense4d_strides_null.h5")
    shutil.copy(os.path.join(KERAS, "case_dense4d.h5"), nulled)
    shutil.copy(os.path.join(KERAS, "case_dense4d.npz"), nulled[:-3] + ".npz")
    with h5py.File(nulled, "r+") as f:
        cfg = json.loads(f.attrs["model_config"])
        next(x for x in cfg["config"]["layers"] if x["config"]["name"] == "pool")["config"]["strides"] = None
        f.attrs["model_config"] = json.dumps(cfg)
    # the same model under Keras's mixed_float16 policy (float32 weights, float16 compute) but its logits: ptq
    # computes it in float32, Keras's float32 outputs, and says so in a note
    mixed = os.path.join(tmp, "case_dense4d_mixed16.h5")
    shutil.copy(os.path.join(KERAS, "case_dense4d.h5"), mixed)
    shutil.copy(os.path.join(KERAS, "case_dense4d.npz"), mixed[:-3] + ".npz")
    with h5py.File(mixed, "r+") as f:
        cfg = json.loads(f.attrs["model_config"])
        for layer in cfg["config"]["layers"][1:-1]:
            layer["config"]["dtype"]["config"]["name"] = "mixed_float16"
        f.attrs["model_config"] = json.dumps(cfg)
    for model in cases + [nulled, mixed]:
        name = os.path.basename(model)[:-3]
        io = np.load(model[:-3] + ".npz")
        x, want = io["x"], io["y"]
        data, got = os.path.join(tmp, f"{name}-x.h5"), os.path.join(tmp, f"{name}-y.npy")
        with h5py.File(data, "w") as f:
            f["images"] = x
            f["labels"] = np.zeros(len(x), np.int64)
        image = ["--layout", "NHWC", "--preprocess", "scale=1"] if x.ndim == 4 else []
        rc, _, err = ptq("eval", "--model", model, "--data", data, *image, "--logits", got)
        check(f"{name}: eval", rc == 0, err.strip()[-300:])
        note = "Keras computes this model in reduced precision (dtype policy mixed_float16 on 6 of 7 layers); ptq " \
            "computes it in float32"
        check(f"{name}: {'a' if model == mixed else 'no'} note on Keras's reduced precision",
              (note in err) == (model == mixed) and ("reduced precision" in err) == (model == mixed), err[-300:])
        if rc != 0:
            continue
        ours = np.load(got)
        same = ours.shape == want.shape
        rel = (np.linalg.norm(ours - want, axis=1) / np.maximum(np.linalg.norm(want, axis=1), 1e-30)).max() \
            if same else float("inf")
        check(f"{name}: outputs match Keras's within 1e-4 relative", rel <= 1e-4,
              f"shape {ours.shape} (Keras {want.shape}), max {rel:.2e}")


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-keras-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    layer_cases(tmp)
    if not os.path.exists(f"{FM}/t10k-images-idx3-ubyte.gz"):
        print("Fashion-MNIST missing: only the layer cases ran")
        return finish("keras_test")
    for split, idx in (("train", "train"), ("test", "t10k")):
        rc, _, err = ptq("data", "convert", "--images", f"{FM}/{idx}-images-idx3-ubyte.gz", "--labels",
                         f"{FM}/{idx}-labels-idx1-ubyte.gz", "--out", J(f"{split}.h5"))
        check(f"data convert {split}", rc == 0, err.strip()[-300:])
    images, labels = fmnist_test(10000)

    # FP32: ptq's outputs against Keras's own on every test image
    for m in MODELS:
        rc, out, err = ptq("eval", "--model", os.path.join(KERAS, f"{m}.h5"), "--data", J("test.h5"), "--json",
                           "--logits", J(f"{m}.npy"))
        check(f"{m}: eval", rc == 0, err.strip()[-300:])
        if rc != 0:
            continue
        ours, theirs = np.load(J(f"{m}.npy")), np.load(os.path.join(KERAS, f"{m}.expected.npy"))
        rel = np.linalg.norm(ours - theirs, axis=1) / np.maximum(np.linalg.norm(theirs, axis=1), 1e-30)
        agree = float((ours.argmax(1) == theirs.argmax(1)).mean())
        print(f"     {m}: top-1 {json.loads(out)['top1'] * 100:.2f}%, agreement with Keras {agree * 100:.2f}%, "
              f"relative error max {rel.max():.2e}")
        check(f"{m}: outputs match Keras's within 1e-4 relative on all 10,000 images",
              ours.shape == theirs.shape == (10000, 10) and rel.max() <= 1e-4, f"max {rel.max():.2e}")
        check(f"{m}: predictions agree with Keras on >= 99.9% of images", agree >= 0.999, f"{agree * 100:.2f}%")

    # names come from Keras layers
    func = os.path.join(KERAS, "func_k3.h5")
    rc, out, err = ptq("info", func, "--json")
    check("info --json on a .h5", rc == 0, err.strip()[-300:])
    info = json.loads(out) if rc == 0 else {}
    names = json.dumps(info)
    check("info names activations and weights by Keras layer", all(
        f'"{n}"' in names for n in ("image", "stem_conv", "block_add", "sep/depthwise", "probs",
                                    "stem_conv/kernel", "block_dw/kernel", "logits/kernel")), names[:300])

    # the main job on a Keras model: every stage on the .h5
    rc, out, err = ptq("run", "--model", func, "--calib-data", J("train.h5"), "--data", J("test.h5"), "--out",
                       J("run"), "--calib-samples", "256", "--samples", "300")
    check("ptq run on the functional .h5", rc == 0, err.strip()[-400:])
    if rc == 0:
        plan = json.load(open(J("run", "plan.json")))
        planned = {e["name"] for e in plan["tensors"]}
        check("the plan names Keras layers", {"stem_relu", "block_add", "stem_conv/kernel", "logits/kernel"} <= planned,
              str(sorted(planned))[:300])
        check("sens.md names Keras layers", "`block_dw`" in open(J("run", "sens.md")).read())
        rc, _, err = ptq("plan", "--check", J("run", "plan.json"), "--model", func)
        check("plan --check against the .h5", rc == 0, err.strip()[-300:])

    # INT8 and FP8 plans of both Keras 3 models: validate, export Q/DQ, onnxruntime agrees
    cases = [("int8", [], None), ("fp8", ["--core", "fp8"], ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)]
    for m in ("func_k3", "seq_k3"):
        model = os.path.join(KERAS, f"{m}.h5")
        rc, _, err = ptq("calibrate", "--model", model, "--data", J("train.h5"), "--samples", "512", "--out",
                         J(f"{m}-c.h5"))
        check(f"{m}: calibrate", rc == 0, err.strip()[-300:])
        for name, flags, level in cases:
            tag = f"{m}-{name}"
            steps = [("plan", J(f"{m}-c.h5"), "--model", model, *flags, "--out", J(f"{tag}.json")),
                     ("validate", "--model", model, "--plan", J(f"{tag}.json"), "--data", J("test.h5"), "--report",
                      J(f"rep-{tag}"), "--logits", J(f"{tag}.npy")),
                     ("export", "--format", "qdq", "--plan", J(f"{tag}.json"), "--model", model, "--out",
                      J(f"{tag}.onnx"))]
            ok = True
            for args in steps:
                rc, _, err = ptq(*args)
                check(f"{tag}: {args[0]}", rc == 0, err.strip()[-300:])
                ok = ok and rc == 0
            if not ok:
                continue
            mp = onnx.load(J(f"{tag}.onnx"))
            if name == "int8":  # onnx 1.12's checker does not know FP8
                onnx.checker.check_model(mp)
            n_q = sum(n.op_type == "QuantizeLinear" for n in mp.graph.node)
            rep = json.load(open(J(f"rep-{tag}", "validate.json")))
            q_ptq = np.load(J(f"{tag}.npy")).argmax(axis=1)
            q_ort = run_ort(J(f"{tag}.onnx"), images, level).argmax(axis=1)
            acc_ort, agree = float((q_ort == labels).mean()), float((q_ort == q_ptq).mean())
            print(f"     {tag}: FP32 {100 * rep['top1_fp32']:.2f}%, ptq validate {100 * rep['top1_quant']:.2f}%, "
                  f"onnxruntime {100 * acc_ort:.2f}%, agreement {100 * agree:.2f}%, {n_q} QuantizeLinear")
            check(f"{tag}: the Q/DQ model quantizes activations", n_q > 0)
            check(f"{tag}: validate's quantized top-1 within 2 points of FP32",
                  rep["top1_quant"] >= rep["top1_fp32"] - 0.02)
            check(f"{tag}: onnxruntime's top-1 on the Q/DQ model within 0.05 point of ptq validate's",
                  abs(acc_ort - rep["top1_quant"]) <= 0.0005 + 1e-12,
                  f"onnxruntime {100 * acc_ort:.2f}%, ptq validate {100 * rep['top1_quant']:.2f}%")
            check(f"{tag}: predictions agree with ptq's quantized ones on >= 99.9% of images", agree >= 0.999,
                  f"{100 * agree:.2f}%")
    return finish("keras_test")


if __name__ == "__main__":
    sys.exit(main())
