#!/usr/bin/env python3
"""ConvTranspose end to end on a constructed decoder-like classifier: Conv
-> Relu -> ConvTranspose (stride 2, group 1) -> Relu -> ConvTranspose
(stride 2, group 2, output_padding) -> Relu -> Conv -> GlobalAveragePool ->
Flatten, on random 8x8 images written with h5py. `ptq eval` (cpu and ref)
gives onnxruntime's FP32 logits within 1e-5. The default (trt) plan, the
ort placement plan and the --target ort-cpu plan quantize both
ConvTransposes' inputs (`plan --explain`: trt.weighted-input) and weights,
per output channel along axis 1 for group 1, one scale for group 2 (axis 1
then indexes a channel within each group); each is validated and exported
as Q/DQ: DequantizeLinear axis=1 on the group-1 weight, the float bias moved
to an Add (an int32 one for ort-cpu), and onnxruntime's logits on it agree
with `ptq validate`'s. A ConvTranspose attribute ptq does not know, or pads
beside output_shape, is refused naming the node. Run by ctest (label
oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import json
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

N = 1000
N_CLASSES = 10


def build(path, rng, extra_attrs=None):
    """The model: [N, 1, 8, 8] -> [N, 10]; extra_attrs go on the group-1 ConvTranspose."""
    def w(name, *shape, scale=1.0):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("W1", 4, 1, 3, 3, scale=0.5), w("B1", 4, scale=0.1),
             w("Wt1", 4, 6, 4, 4, scale=0.3), w("Bt1", 6, scale=0.1),  # [C_in, C_out/group, k, k]
             w("Wt2", 6, 2, 3, 3, scale=0.3), w("Bt2", 4, scale=0.1),  # group 2: C_out 2 * 2
             w("W3", N_CLASSES, 4, 3, 3, scale=0.3), w("B3", N_CLASSES, scale=0.1)]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("ConvTranspose", ["r1", "Wt1", "Bt1"], ["t1"], name="up1", strides=[2, 2],
                              pads=[1, 1, 1, 1], **(extra_attrs or {})),
             helper.make_node("Relu", ["t1"], ["r2"], name="relu2"),
             helper.make_node("ConvTranspose", ["r2", "Wt2", "Bt2"], ["t2"], name="up2", strides=[2, 2],
                              pads=[1, 1, 1, 1], output_padding=[1, 1], group=2),
             helper.make_node("Relu", ["t2"], ["r3"], name="relu3"),
             helper.make_node("Conv", ["r3", "W3", "B3"], ["c3"], name="conv3", strides=[4, 4], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c3"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["y"], name="flatten")]
    g = helper.make_graph(nodes, "decoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", N_CLASSES])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.save(m, path)


def run_ort(path, x, level=None):
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def close(got, want, rtol):
    """|got - want| <= rtol * max|want| elementwise (relative to the logits' scale)."""
    return got.shape == want.shape and float(np.abs(got - want).max()) <= rtol * float(np.abs(want).max())


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-convtranspose-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(11)
    build(J("m.onnx"), rng)
    images = rng.integers(0, 256, (N, 8, 8), dtype=np.uint8)
    x = (images.astype(np.float32) * np.float32(0.00392156862745098)).reshape(N, 1, 8, 8)
    ref = run_ort(J("m.onnx"), x)
    labels = ref.argmax(1)
    noisy = rng.random(N) < 0.2  # some wrong labels: an accuracy below 100% to compare
    labels[noisy] = rng.integers(0, N_CLASSES, noisy.sum())
    with h5py.File(J("d.h5"), "w") as f:
        f["images"] = images
        f["labels"] = labels.astype(np.int64)

    for device in ("cpu", "ref"):
        rc, _, err = ptq("eval", "--model", J("m.onnx"), "--data", J("d.h5"), "--device", device, "--logits",
                         J(f"fp32-{device}.npy"))
        got = np.load(J(f"fp32-{device}.npy")) if rc == 0 else np.zeros(0)
        check(f"eval --device {device}: logits equal onnxruntime's FP32 within 1e-5", rc == 0 and close(got, ref, 1e-5),
              f"exit {rc} {err.strip()[-300:]}" if rc else f"max |diff| {np.abs(got - ref).max():.3g}, "
              f"max |logit| {np.abs(ref).max():.3g}")

    rc, _, err = ptq("calibrate", "--model", J("m.onnx"), "--data", J("d.h5"), "--samples", "256", "--seed", "0",
                     "--out", J("c.h5"))
    check("calibrate", rc == 0, err.strip()[-300:])
    for name, flags in (("int8", []), ("int8-ort", ["--placement", "ort"]), ("ort-cpu", ["--target", "ort-cpu"])):
        rc, out, err = ptq("plan", J("c.h5"), "--model", J("m.onnx"), *flags, "--explain", "--out", J(f"{name}.json"))
        check(f"{name}: plan", rc == 0, err.strip()[-300:])
        if rc != 0:
            continue
        plan = {(e["name"], e["kind"] == "weight"): e for e in json.load(open(J(f"{name}.json")))["tensors"]}
        explain = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()}
        for act, weight, axis, n_scales in (("r1", "Wt1", 1, 6), ("r2", "Wt2", -1, 1)):
            a = plan.get((act, False), {})
            wt = plan.get((weight, True), {})
            want = "uint8" if name == "ort-cpu" else "int8"
            check(f"{name}: the ConvTranspose input {act} quantized to {want}",
                  a.get("precision") == want, str(a)[:300])
            if name == "int8":
                check(f"{name}: plan --explain places {act} by trt.weighted-input and {weight} by weight",
                      "trt.weighted-input" in explain.get(act, "") and " weight " in explain.get(weight, ""),
                      f"{explain.get(act, '(no line)')} | {explain.get(weight, '(no line)')}")
            check(f"{name}: the weight {weight} int8, axis {axis}, {n_scales} scale(s)",
                  wt.get("precision") == "int8" and wt.get("axis", -1) == axis and len(wt.get("scales", [])) ==
                  n_scales, str({k: wt.get(k) for k in ("precision", "axis")}) + f" {len(wt.get('scales', []))} scales")
        steps = [("validate", "--model", J("m.onnx"), "--plan", J(f"{name}.json"), "--data", J("d.h5"), "--report",
                  J(f"rep-{name}"), "--logits", J(f"{name}.npy")),
                 ("export", "--format", "qdq", "--plan", J(f"{name}.json"), "--model", J("m.onnx"), "--out",
                  J(f"{name}.onnx"))]
        for args in steps:
            rc, _, err = ptq(*args)
            check(f"{name}: {args[0]}", rc == 0, err.strip()[-300:])
        if not (os.path.exists(J(f"{name}.npy")) and os.path.exists(J(f"{name}.onnx"))):
            continue
        m = onnx.load(J(f"{name}.onnx"))
        onnx.checker.check_model(m)
        producer = {o: n for n in m.graph.node for o in n.output}
        int8 = {t.name for t in m.graph.initializer if t.data_type == TensorProto.INT8}
        int32 = {t.name for t in m.graph.initializer if t.data_type == TensorProto.INT32}
        for node_name, axis in (("up1", 1), ("up2", None)):
            n = next((n for n in m.graph.node if n.name == node_name), None)
            if n is None:
                check(f"{name}: {node_name} in the export", False)
                continue
            x_dq = producer.get(n.input[0])
            w_dq = producer.get(n.input[1])
            w_axis = None if w_dq is None else next((a.i for a in w_dq.attribute if a.name == "axis"), None)
            check(f"{name}: {node_name} reads its input through DequantizeLinear",
                  x_dq is not None and x_dq.op_type == "DequantizeLinear")
            check(f"{name}: {node_name}'s weight int8 -> DequantizeLinear " +
                  ("axis 1" if axis == 1 else "per tensor"),
                  w_dq is not None and w_dq.op_type == "DequantizeLinear" and w_dq.input[0] in int8 and
                  w_axis == axis, f"axis {w_axis}")
            b_dq = producer.get(n.input[2])
            if name == "ort-cpu":
                check(f"{name}: {node_name}'s bias int32 -> DequantizeLinear, as quantize_static writes it",
                      b_dq is not None and b_dq.op_type == "DequantizeLinear" and b_dq.input[0] in int32, n.input[2])
            else:  # onnxruntime would round a float bias to int32, which TensorRT and ptq do not
                check(f"{name}: {node_name}'s float bias moved to an Add after it",
                      n.input[2].endswith("/bias_zero") and
                      any(a.op_type == "Add" and n.output[0] in a.input for a in m.graph.node), n.input[2])
        q_ptq = np.load(J(f"{name}.npy"))
        q_ort = run_ort(J(f"{name}.onnx"), x)
        agree = float((q_ort.argmax(1) == q_ptq.argmax(1)).mean())
        scale = float(np.abs(q_ptq).max())
        diff = np.abs(q_ort - q_ptq)
        off = float((diff > 1e-3 * scale).mean())
        drift = float(np.abs(q_ptq - ref).max()) / scale
        print(f"     {name}: onnxruntime vs ptq validate: predictions agree on {100 * agree:.2f}%, logits off by more "
              f"than 1e-3 of max |logit|: {100 * off:.2f}%, max |diff| {diff.max() / scale:.2e} "
              f"(quantized vs FP32: {drift:.2e})")
        check(f"{name}: onnxruntime's predictions on the Q/DQ model agree with ptq validate's on >= 99.5%",
              agree >= 0.995, f"{100 * agree:.2f}%")
        # float sums in another order can put a value on the other side of a rounding boundary: one step
        # (1/127 of the range) where the placement quantizes the output, on few logits
        check(f"{name}: onnxruntime's logits equal ptq validate's within 1e-3 on >= 99% (all within 2%)",
              off <= 0.01 and diff.max() <= 0.02 * scale, f"{100 * off:.2f}%, max {diff.max() / scale:.3g}")

    for why, attrs, needle in (("an unknown attribute", {"foo": 1},
                                "attribute 'foo' is not one ONNX defines for ConvTranspose"),
                               ("pads beside output_shape", {"output_shape": [16, 16]}, "output_shape")):
        build(J("bad.onnx"), np.random.default_rng(1), attrs)
        rc, _, err = ptq("eval", "--model", J("bad.onnx"), "--data", J("d.h5"))
        check(f"{why}: refused naming the node", rc != 0 and "node 'up1'" in err and needle in err, err.strip()[-300:])
    return finish("convtranspose_test")


if __name__ == "__main__":
    sys.exit(main())
