#!/usr/bin/env python3
"""Pow with an integer exponent tensor (int64 or int32: ONNX since opset 12; torch exports `x ** 2` so at some
opsets) against onnxruntime, bit for bit on the CPU and reference devices: a one-element exponent, one per row
(broadcast along the last axis, where onnxruntime computes 3 as x * x * x in float32), and one per column (pow in
double, rounded). Below opset 12 such an exponent is refused (exit 5). Label oracle."""
import os
import sys
import tempfile

from ptqtest import check, finish, ptq

try:
    import h5py
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"pow_int_test: skipped ({e})")
    sys.exit(77)

R, C = 4, 6  # x [N, R, C] -> Pow -> Flatten -> logits [N, R * C]


def model(path, exponent, opset=15):
    e = numpy_helper.from_array(exponent, "e")
    nodes = [helper.make_node("Pow", ["x", "e"], ["p"]), helper.make_node("Flatten", ["p"], ["logits"])]
    g = helper.make_graph(nodes, "pow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", R, C])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", R * C])], [e])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-pow-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(5)
    n = 4096
    x = (rng.standard_normal((n, R, C)) * 10).astype(np.float32)
    x[0, 0, :] = [0.0, -0.0, 1.0, -1.0, 3e12, -7e-13]  # zeros, overflow and underflow
    with h5py.File(J("d.h5"), "w") as f:
        f["x"] = x
        f["labels"] = np.zeros(n, np.int64)
    cases = {
        "int64 scalar 3": np.array(3, np.int64),
        "int64 per row [4, 1]": np.array([[2], [3], [-1], [7]], np.int64),
        "int32 per column [6]": np.array([3, 2, 0, -2, 5, 1], np.int32),
        "int32 scalar -3": np.array(-3, np.int32),
        "int64 [1, 1] 3": np.array([[3]], np.int64),
    }
    for name, e in cases.items():
        path = J("m.onnx")
        model(path, e)
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        for device in ("cpu", "ref"):
            out = J(f"y-{device}.npy")
            rc, _, err = ptq("eval", "--model", path, "--data", J("d.h5"), "--device", device, "--logits", out)
            got = np.load(out) if rc == 0 else np.zeros(0, np.float32)
            same = got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32))
            diff = int((got != want).sum()) if got.shape == want.shape else -1
            check(f"Pow {name} on {device}: onnxruntime's float32 bit for bit", rc == 0 and same,
                  f"exit {rc}, {diff} differ: {err.strip()[-200:]}")
    model(J("old.onnx"), np.array(2, np.int64), opset=11)
    rc, _, err = ptq("info", J("old.onnx"))
    check("Pow with an int64 exponent at opset 11 is refused (exit 5)", rc == 5 and "opset 12" in err, err.strip())
    return finish("pow_int_test")


if __name__ == "__main__":
    sys.exit(main())
