#!/usr/bin/env python3
"""Common ONNX ops torch exports (its functional code and torchvision's layers) that ptq refused, exit 5 "op X is
not supported": each in a one-node model (built here with onnx.helper) run by `ptq eval` against onnxruntime, and
in a small Conv classifier through calibrate, plan, validate and a Q/DQ export that onnxruntime runs to
validate's predictions (check_ort_agrees). Skips (77) without onnx or onnxruntime. Run by ctest with PTQ_BIN and
PTQ_SOURCE_DIR set."""
import os
import sys
import tempfile

from ptqtest import check, check_placements, finish, ptq

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"ops_breadth_test: skipped ({e})")
    sys.exit(77)

N, C = 64, 16
TMP = tempfile.mkdtemp(prefix="ptq-breadth-")


def J(*p):
    return os.path.join(TMP, *p)


def save(name, nodes, inputs, out_shape, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    if opset <= onnx.defs.onnx_opset_version():  # the venv's onnx 1.12 knows opset 17; Mish is 18's
        onnx.checker.check_model(m)
    path = J(name + ".onnx")
    onnx.save(m, path)
    return path


def x_values(rng, shape):
    """Normal values, a few large ones, exact halves (Round's ties) and integers."""
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    specials = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.0, -3.0, 0.0, 30.0, -30.0, 90.0, -90.0, 1e-6, -1e-6],
                        np.float32)
    flat[:len(specials)] = specials
    return x


def eval_vs_ort(label, model, feeds, tol=1e-5, env=None):
    """ptq eval's logits within tol (absolute plus relative) of onnxruntime's on every element."""
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    data = J(label + ".h5")
    with h5py.File(data, "w") as f:
        for k, v in feeds.items():
            f[k] = v
        f["labels"] = want.reshape(len(want), -1).argmax(1)
    rc, _, err = ptq("eval", "--model", model, "--data", data, "--logits", J(label + ".npy"), env=env)
    got = np.load(J(label + ".npy")) if rc == 0 else None
    diff = np.abs(got.reshape(want.shape) - want) if got is not None and got.size == want.size else None
    ok = diff is not None and bool(np.all(diff <= tol * (1 + np.abs(want))))
    check(f"{label}: eval within {tol:g} of onnxruntime", ok,
          err.strip()[-300:] if rc else f"max |diff| {diff.max() if diff is not None else 'shape'}")


def unary_cases():
    """(op, opset, attributes): the elementwise functions, defaults and torch's non-default parameters."""
    return [("Exp", 13, {}), ("Floor", 13, {}), ("Ceil", 13, {}), ("Round", 13, {}), ("Sin", 13, {}),
            ("Cos", 13, {}), ("Softplus", 13, {}), ("Softsign", 13, {}), ("Elu", 13, {}), ("Elu", 13, {"alpha": 0.3}),
            ("Selu", 13, {}), ("Selu", 13, {"alpha": 1.5, "gamma": 2.0}), ("Celu", 13, {}),
            ("Celu", 13, {"alpha": 0.5}), ("Celu", 13, {"alpha": -2.0}), ("Mish", 18, {}), ("Log", 13, {}),
            ("Reciprocal", 13, {})]


def check_unary(rng):
    for op, opset, attrs in unary_cases():
        label = op + "".join(f"_{k}{v}" for k, v in attrs.items())
        x = x_values(rng, (N, C))
        if op == "Exp":
            x = np.clip(x, -80, 80)  # no inf: eval's logits are checked relative to them
        if op == "Log":  # positive, tiny to large (0's -inf and a negative's NaN are not compared)
            x = np.abs(x) + np.float32(1e-30)
        if op == "Reciprocal":  # no 0 (its inf is not compared); tiny values give large finite ones
            x = np.where(np.abs(x) < 1e-6, np.float32(0.5), x).astype(np.float32)
        model = save(label, [helper.make_node(op, ["x"], ["y"], **attrs)],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C])], ["N", C], opset=opset)
        eval_vs_ort(label, model, {"x": x})
    # Celu divides by alpha: 0 is refused naming the node (exit 4), not run to NaNs
    model = save("celu0", [helper.make_node("Celu", ["x"], ["y"], name="celu0", alpha=0.0)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C])], ["N", C])
    rc, _, err = ptq("info", model)
    check("Celu alpha 0: exit 4 naming the node", rc == 4 and "celu0" in err and "alpha must not be 0" in err,
          f"rc {rc}: {err.strip()[-300:]}")


def check_prelu(rng):
    """torch's PReLU(C) (slope [C, 1, 1]), PReLU() (a scalar [1]) and a full-shape slope on [N, C, H, W]."""
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 60])  # no image: fed as stored
    x = x_values(rng, (N, 60))
    shape = numpy_helper.from_array(np.array([-1, 4, 3, 5], np.int64), "shape")
    for label, dims in [("per_channel", (4, 1, 1)), ("scalar", (1,)), ("full", (4, 3, 5)), ("last_dim", (5,))]:
        slope = numpy_helper.from_array((rng.standard_normal(dims) * 0.5).astype(np.float32), "slope")
        nodes = [helper.make_node("Reshape", ["x", "shape"], ["x4"]), helper.make_node("PRelu", ["x4", "slope"], ["p"]),
                 helper.make_node("Flatten", ["p"], ["y"])]
        eval_vs_ort("PRelu_" + label, save("prelu_" + label, nodes, [x_info], ["N", 60], [slope, shape]), {"x": x})
    # a slope that would grow X ([4, 3, 5] by a [2, 4, 3, 5] slope) is no PRelu ONNX allows: refused naming it
    slope = numpy_helper.from_array(np.ones((2, 4, 3, 5), np.float32), "slope")
    nodes = [helper.make_node("PRelu", ["x", "slope"], ["p"], name="prelu_grow"),
             helper.make_node("Flatten", ["p"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 120])], [slope])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, J("prelu_grow.onnx"))
    rc, _, err = ptq("info", J("prelu_grow.onnx"))
    check("PRelu slope [2x4x3x5] on X [1x4x3x5]: refused naming the node and both shapes",
          rc != 0 and "prelu_grow" in err and "does not broadcast to X" in err, f"rc {rc}: {err.strip()[-300:]}")


def check_log_softmax(rng):
    """LogSoftmax on [N, 4, 5]: from opset 13 over one axis (the last by default, the middle one, the batch's), before
    13 over the block the input is coerced to at axis (default 1)."""
    x = x_values(rng, (N, 20))
    shape = numpy_helper.from_array(np.array([-1, 4, 5], np.int64), "shape")
    for opset, attrs in [(13, {}), (13, {"axis": 1}), (13, {"axis": 0}), (11, {}), (11, {"axis": 2}),
                         (11, {"axis": -3})]:
        label = f"LogSoftmax_opset{opset}" + "".join(f"_{k}{v}" for k, v in attrs.items())
        nodes = [helper.make_node("Reshape", ["x", "shape"], ["x3"]),
                 helper.make_node("LogSoftmax", ["x3"], ["l"], **attrs), helper.make_node("Flatten", ["l"], ["y"])]
        model = save(label, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 20])], ["N", 20],
                     [shape], opset=opset)
        eval_vs_ort(label, model, {"x": x})
        # in passes of 5 samples (runtime/batch_rows.c), as ptq runs larger models: one over the batch's axis must
        # run whole, as a Softmax does
        eval_vs_ort(label + "_passes", model, {"x": x}, env=dict(os.environ, PTQ_PASS_ROWS="5"))


def check_minmax(rng):
    """Max and Min of one, two and four inputs, broadcast every way ([N, 6] and [N, 1] inputs, [6] and [1, 1]
    constants), on float32 and, cast to float32 for the logits, int32 and int64."""
    for op in ("Max", "Min"):
        for dt, np_dt in [(TensorProto.FLOAT, np.float32), (TensorProto.INT32, np.int32),
                          (TensorProto.INT64, np.int64)]:
            a = (rng.standard_normal((N, 6)) * 50).astype(np_dt)
            c = (rng.standard_normal((N, 1)) * 50).astype(np_dt)
            b = (rng.standard_normal(6) * 50).astype(np_dt)
            a[0, :3] = b[:3]  # ties
            consts = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array([[7]], np_dt), "k")]
            infos = {"a": helper.make_tensor_value_info("a", dt, ["N", 6]),
                     "c": helper.make_tensor_value_info("c", dt, ["N", 1])}
            for ins in (["a"], ["a", "b"], ["b", "a", "c", "k"]):
                nodes = [helper.make_node(op, ins, ["m"]), helper.make_node("Cast", ["m"], ["y"], to=TensorProto.FLOAT)]
                label = f"{op}_{np.dtype(np_dt).name}_{len(ins)}"
                used = [v for v in ("a", "c") if v in ins]
                model = save(label, nodes, [infos[v] for v in used], ["N", 6],
                             [t for t in consts if t.name in ins])
                eval_vs_ort(label, model, {v: {"a": a, "c": c}[v] for v in used})


def check_instance_norm(rng):
    """InstanceNormalization on [N, 4, 3, 5] (epsilon default and 1e-3), and GroupNorm(2, 4) as torch exports it:
    Reshape to [N, 2, -1], InstanceNormalization with unit scale and zero B, Reshape back, Mul and Add per channel;
    whole and in passes of 5 samples."""
    x = x_values(rng, (N, 60))
    shape = numpy_helper.from_array(np.array([-1, 4, 3, 5], np.int64), "shape")
    scale = numpy_helper.from_array((rng.standard_normal(4) + 1).astype(np.float32), "scale")
    bias = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "bias")
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 60])
    for attrs in ({}, {"epsilon": 1e-3}):
        label = "InstanceNorm" + "".join(f"_{k}{v}" for k, v in attrs.items())
        nodes = [helper.make_node("Reshape", ["x", "shape"], ["x4"]),
                 helper.make_node("InstanceNormalization", ["x4", "scale", "bias"], ["n"], **attrs),
                 helper.make_node("Flatten", ["n"], ["y"])]
        eval_vs_ort(label, save(label, nodes, [x_info], ["N", 60], [shape, scale, bias]), {"x": x})
    groups = numpy_helper.from_array(np.array([0, 2, -1], np.int64), "groups")
    ones = numpy_helper.from_array(np.ones(2, np.float32), "ones")
    zeros = numpy_helper.from_array(np.zeros(2, np.float32), "zeros")
    gamma = numpy_helper.from_array((rng.standard_normal((4, 1, 1)) + 1).astype(np.float32), "gamma")
    beta = numpy_helper.from_array(rng.standard_normal((4, 1, 1)).astype(np.float32), "beta")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["x4"]), helper.make_node("Reshape", ["x4", "groups"], ["xg"]),
             helper.make_node("InstanceNormalization", ["xg", "ones", "zeros"], ["ng"]),
             helper.make_node("Reshape", ["ng", "shape"], ["n4"]), helper.make_node("Mul", ["n4", "gamma"], ["m"]),
             helper.make_node("Add", ["m", "beta"], ["a"]), helper.make_node("Flatten", ["a"], ["y"])]
    model = save("groupnorm", nodes, [x_info], ["N", 60], [shape, groups, ones, zeros, gamma, beta])
    eval_vs_ort("GroupNorm", model, {"x": x})
    eval_vs_ort("GroupNorm_passes", model, {"x": x}, env=dict(os.environ, PTQ_PASS_ROWS="5"))


def conv_classifier(name, after_conv, head, opset=13, inits=()):
    """x [N, 64] (no image: fed as stored) -> [N, 1, 8, 8] -> Conv 3x3 (4 channels) -> after_conv nodes (reading
    'c', writing 'a') -> Flatten -> Gemm (10 classes, 'g') -> head nodes (reading 'g', writing 'y')."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array((rng.standard_normal((4, 1, 3, 3)) * 0.5).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(4) * 0.1).astype(np.float32), "b")
    gw = numpy_helper.from_array((rng.standard_normal((10, 144)) * 0.2).astype(np.float32), "gw")
    gb = numpy_helper.from_array(np.zeros(10, np.float32), "gb")
    shape = numpy_helper.from_array(np.array([-1, 1, 8, 8], np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["img"]),
             helper.make_node("Conv", ["img", "w", "b"], ["c"], kernel_shape=[3, 3])] + after_conv + [
        helper.make_node("Flatten", ["a"], ["f"]), helper.make_node("Gemm", ["f", "gw", "gb"], ["g"], transB=1)
    ] + head
    return save(name, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])], ["N", 10],
                [w, b, gw, gb, shape, *inits], opset=opset)


def check_pipeline(label, model):
    """eval against onnxruntime, then calibrate, and for placements trt (the default: here the small layers stay
    float) and all (Q/DQ around every activation, the new op's input and output too): plan, validate, export
    --format qdq, onnxruntime on the export making validate's predictions."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((96, 64)).astype(np.float32)
    eval_vs_ort(label, model, {"x": x})
    data = J(label + ".h5")
    check_placements(label, model, data, {"x": x}, J)


def main():
    rng = np.random.default_rng(13)
    check_unary(rng)
    check_prelu(rng)
    check_log_softmax(rng)
    check_minmax(rng)
    check_instance_norm(rng)
    slope = numpy_helper.from_array(np.array([0.25, -0.1, 0.5, 0.05], np.float32).reshape(4, 1, 1), "slope")
    check_pipeline("pipeline_prelu", conv_classifier("pipe_prelu", [helper.make_node("PRelu", ["c", "slope"], ["a"])],
                                                     [helper.make_node("Identity", ["g"], ["y"])], inits=[slope]))
    check_pipeline("pipeline_log_softmax", conv_classifier("pipe_logsm", [helper.make_node("Relu", ["c"], ["a"])],
                                                           [helper.make_node("LogSoftmax", ["g"], ["y"], axis=1)]))
    inorm = [numpy_helper.from_array(np.array([1.5, 0.5, 1.0, 2.0], np.float32), "in_scale"),
             numpy_helper.from_array(np.array([0.1, -0.2, 0.3, 0.0], np.float32), "in_bias")]
    check_pipeline("pipeline_instance_norm", conv_classifier(
        "pipe_inorm", [helper.make_node("InstanceNormalization", ["c", "in_scale", "in_bias"], ["n"]),
                       helper.make_node("Relu", ["n"], ["a"])], [helper.make_node("Identity", ["g"], ["y"])],
        inits=inorm))
    check_pipeline("pipeline_elu", conv_classifier("pipe_elu", [helper.make_node("Elu", ["c"], ["a"], alpha=0.5)],
                                                   [helper.make_node("Identity", ["g"], ["y"])]))
    return finish("ops_breadth_test")


if __name__ == "__main__":
    sys.exit(main())
