#!/usr/bin/env python3
"""Weights stored in 16 bits: a constructed classifier whose Conv weight is a
float16 initializer and whose Conv bias a bfloat16 one, each cast to float32
(folded at load, so a weight like any other), with a float32 -> float16 -> float32 round trip of an
activation (a float16 value at run time). `ptq eval` (cpu and ref) gives
onnxruntime's FP32 logits within 1e-5; calibrate, the default plan, validate
and the Q/DQ export run on it, and onnxruntime on the export agrees with
`ptq validate`'s logits. A cast to float16 that a Conv then reads is refused
naming the node. Run by ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR
set."""
import os
import sys
import tempfile

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from ptqtest import check, finish, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

N = 600
N_CLASSES = 10


def bf16_initializer(name, values):
    """values (float32) as bfloat16 codes, rounded to nearest even."""
    b = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    codes = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return helper.make_tensor(name, TensorProto.BFLOAT16, list(values.shape), vals=codes.tobytes(), raw=True)


def build(path, rng, half_into_conv=False):
    """[N, 1, 8, 8] -> [N, 10]; half_into_conv: the second Conv reads the float16 value itself."""
    inits = [numpy_helper.from_array((rng.standard_normal((8, 1, 3, 3)) * 0.5).astype(np.float16), "W1h"),
             bf16_initializer("B1b", rng.standard_normal(8) * 0.1),
             numpy_helper.from_array((rng.standard_normal((N_CLASSES, 8, 3, 3)) * 0.3).astype(np.float32), "W2"),
             numpy_helper.from_array((rng.standard_normal(N_CLASSES) * 0.1).astype(np.float32), "B2")]
    nodes = [helper.make_node("Cast", ["W1h"], ["W1"], name="w1_to_float", to=TensorProto.FLOAT),
             helper.make_node("Cast", ["B1b"], ["B1"], name="b1_to_float", to=TensorProto.FLOAT),
             helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Cast", ["r1"], ["h1"], name="to_half", to=TensorProto.FLOAT16)]
    if half_into_conv:
        nodes.append(helper.make_node("Conv", ["h1", "W2", "B2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]))
    else:
        nodes += [helper.make_node("Cast", ["h1"], ["f1"], name="to_float", to=TensorProto.FLOAT),
                  helper.make_node("Conv", ["f1", "W2", "B2"], ["c2"], name="conv2", pads=[1, 1, 1, 1])]
    nodes += [helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
              helper.make_node("Flatten", ["g"], ["y"], name="flatten")]
    g = helper.make_graph(nodes, "cast16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", N_CLASSES])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.save(m, path)


def run_ort(path, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def rel(got, want):
    return float(np.abs(got - want).max()) / float(np.abs(want).max()) if got.shape == want.shape else np.inf


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-cast16-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(16)
    build(J("m.onnx"), rng)
    images = rng.integers(0, 256, (N, 8, 8), dtype=np.uint8)
    x = (images.astype(np.float32) * np.float32(0.00392156862745098)).reshape(N, 1, 8, 8)
    ref = run_ort(J("m.onnx"), x)
    labels = ref.argmax(1)
    with h5py.File(J("d.h5"), "w") as f:
        f["images"] = images
        f["labels"] = labels.astype(np.int64)

    for device in ("cpu", "ref"):
        rc, _, err = ptq("eval", "--model", J("m.onnx"), "--data", J("d.h5"), "--device", device, "--logits",
                         J(f"fp32-{device}.npy"))
        got = np.load(J(f"fp32-{device}.npy")) if rc == 0 else np.zeros(0)
        check(f"eval --device {device}: 16-bit weights cast to float32 and a float16 round trip give onnxruntime's "
              "logits within 1e-5", rc == 0 and rel(got, ref) <= 1e-5,
              f"exit {rc} {err.strip()[-300:]}" if rc else f"max relative diff {rel(got, ref):.3g}")

    steps = [("calibrate", "--model", J("m.onnx"), "--data", J("d.h5"), "--samples", "256", "--seed", "0", "--out",
              J("c.h5")),
             ("plan", J("c.h5"), "--model", J("m.onnx"), "--out", J("p.json")),
             ("validate", "--model", J("m.onnx"), "--plan", J("p.json"), "--data", J("d.h5"), "--report", J("rep"),
              "--logits", J("q.npy")),
             ("export", "--format", "qdq", "--plan", J("p.json"), "--model", J("m.onnx"), "--out", J("qdq.onnx"))]
    ok = True
    for args in steps:
        rc, _, err = ptq(*args)
        check(f"{args[0]} on the model with 16-bit weights", rc == 0, err.strip()[-300:])
        ok = ok and rc == 0
    if ok:
        q, dep = np.load(J("q.npy")), run_ort(J("qdq.onnx"), x)
        agree = float(np.mean(q.argmax(1) == dep.argmax(1)))
        check("onnxruntime on the Q/DQ export agrees with ptq validate (logits within 1e-4 relative, every "
              "prediction)", rel(dep, q) <= 1e-4 and agree == 1.0, f"max relative diff {rel(dep, q):.3g}, "
              f"agreement {agree:.4f}")

    build(J("h.onnx"), rng, half_into_conv=True)
    rc, _, err = ptq("eval", "--model", J("h.onnx"), "--data", J("d.h5"))
    check("a Conv reading a float16 value is refused naming the node (exit 5)",
          rc == 5 and "conv2" in err and "float16" in err, f"exit {rc}: {err.strip()[-300:]}")
    finish("cast16_test")


if __name__ == "__main__":
    main()
