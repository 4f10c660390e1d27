#!/usr/bin/env python3
"""Models that already hold QuantizeLinear / DequantizeLinear, which ptq refused (exit 5 'op QuantizeLinear is not
supported by ptq'), ptq's own `export --format qdq` output included. One-node Q -> DQ models (opsets 10, 13, 19, 21:
per tensor, per axis, blocked; int8, uint8, int16, uint16, FLOAT8E4M3FN, FLOAT8E5M2, saturate 0 and 1; ties, NaN,
Inf, values past the range) and DQ of int8 / int32 / FP8 initializers evaluated by `ptq eval` against onnxruntime
bit for bit (the dequantized floats equal, so the codes are); hostile attributes and shapes refused naming the node;
the demo model's INT8 and FP8 Q/DQ exports evaluated by `ptq eval` to `ptq validate`'s logits and onnxruntime's
predictions; a quantize_static model (QDQ, per channel) against onnxruntime when a python with
onnxruntime.quantization is at hand (.venv-bench, or PTQ_QUANTIZE_PYTHON); calibrate / plan / sensitivity /
validate / export refusing a Q/DQ model. Skips (77) without onnx or onnxruntime. Run by ctest with PTQ_BIN and
PTQ_SOURCE_DIR set."""
import json
import os
import subprocess
import sys
import tempfile

from ptqtest import MODEL, SRC, check, check_ort_agrees, finish, fmnist_test, have_demo, ptq

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"ops_qdq_test: skipped ({e})")
    sys.exit(77)

TMP = tempfile.mkdtemp(prefix="ptq-qdq-op-")
E4M3, E5M2 = 17, 19  # TensorProto.FLOAT8E4M3FN / FLOAT8E5M2: onnx 1.12's helper knows neither


def J(*p):
    return os.path.join(TMP, *p)


def raw(name, dtype, dims, data):
    """An initializer of ONNX dtype from numpy data's bytes (raw_data), for the dtypes onnx 1.12 cannot make."""
    t = onnx.TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    t.raw_data = np.ascontiguousarray(data).tobytes()
    return t


def save(name, nodes, inits, x_shape, opset, ir=None):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir or (10 if opset >= 21 else 9 if opset >= 19 else 7)
    path = J(name + ".onnx")
    onnx.save(m, path)
    return path


def feed(label, x):
    data = J(label + ".h5")
    with h5py.File(data, "w") as f:
        f["x"] = x
        f["labels"] = np.zeros(len(x), np.int64)
    return data


def eval_exact(label, model, x):
    """ptq eval's output equals onnxruntime's element for element (NaN where it has NaN)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    rc, _, err = ptq("eval", "--model", model, "--data", feed(label, x), "--logits", J(label + ".npy"))
    got = np.load(J(label + ".npy")).reshape(want.shape) if rc == 0 else None
    ok = got is not None and np.array_equal(got, want, equal_nan=True)
    bad = "" if got is None or ok else f"{int((~((got == want) | (np.isnan(got) & np.isnan(want)))).sum())} differ"
    check(f"{label}: eval equals onnxruntime", ok, err.strip()[-300:] if rc else bad)


def x_values(rng, shape, scale):
    """Values around the grid of scale: ties (k + 0.5 steps), far past any code's range, NaN, +-Inf, -0."""
    x = (rng.standard_normal(shape) * 60 * scale).astype(np.float32)
    flat = x.reshape(-1)
    k = np.arange(-6, 7, dtype=np.float32)
    specials = np.concatenate([(k + 0.5) * scale, [np.nan, np.inf, -np.inf, -0.0, 1e6, -1e6, 3e4, -3e4, 7e4, -7e4,
                                                   450.0, 470.0, 6e4, 1e-30]]).astype(np.float32)
    flat[:len(specials)] = specials
    return x


def zp_tensor(name, dtype, np_dtype, values):
    return raw(name, dtype, [len(values)] if np.ndim(values) else [], np.asarray(values, np_dtype))


def qdq_cases():
    """(label, opset, zero point dtype and numpy type or None, scale values, zero points, Q attributes, DQ attributes,
    x shape). Scales per tensor are scalars; per axis 1-D; blocked same rank as x."""
    c = []
    c.append(("u8_opset10", 10, (TensorProto.UINT8, np.uint8), 0.05, 128, {}, {}))
    c.append(("u8_nozp_opset10", 10, None, 0.05, None, {}, {}))
    c.append(("i8_opset13", 13, (TensorProto.INT8, np.int8), 0.02, -3, {}, {}))
    c.append(("i8_axis1", 13, (TensorProto.INT8, np.int8), [0.01, 0.02, 0.5, 1e-3, 0.07, 3.0], [0, 1, -2, 5, 0, 127],
              {"axis": 1}, {"axis": 1}))
    c.append(("u8_axis_neg1", 13, (TensorProto.UINT8, np.uint8), [0.01, 0.02, 0.05, 0.1, 0.2], [0, 10, 128, 250, 255],
              {"axis": -1}, {"axis": -1}))
    c.append(("i8_axis0_len1_scale", 13, (TensorProto.INT8, np.int8), [0.03], [4], {"axis": 0}, {"axis": 0}))
    # a scalar scale beside a [1] zero point and the other way round: per tensor, as onnxruntime takes them
    c.append(("i8_zp_len1", 13, (TensorProto.INT8, np.int8), 0.03, [4], {}, {}))
    c.append(("u8_scale_len1", 13, (TensorProto.UINT8, np.uint8), [0.03], 200, {}, {}))
    c.append(("e4m3", 19, (E4M3, np.uint8), 0.5, 0, {}, {}))
    c.append(("e5m2", 19, (E5M2, np.uint8), 0.5, 0, {}, {}))
    c.append(("e4m3_axis1", 19, (E4M3, np.uint8), [0.01, 0.02, 0.5, 1e-3, 0.07, 3.0], [0] * 6, {"axis": 1},
              {"axis": 1}))
    c.append(("e4m3_nosat", 19, (E4M3, np.uint8), 1.0, 0, {"saturate": 0}, {}))
    c.append(("e5m2_nosat", 19, (E5M2, np.uint8), 1.0, 0, {"saturate": 0}, {}))
    c.append(("i16", 21, (TensorProto.INT16, np.int16), 0.001, -300, {}, {}))
    c.append(("u16_axis1", 21, (TensorProto.UINT16, np.uint16), [1e-4, 2e-3, 0.5, 1e-3, 0.07, 3.0],
              [0, 1, 32768, 65535, 7, 100], {"axis": 1}, {"axis": 1}))
    c.append(("i8_output_dtype", 21, None, 0.02, None, {"output_dtype": TensorProto.INT8}, {}))
    return c


def check_qdq(rng):
    shape = (8, 6, 5)
    for label, opset, zdt, scale, zp, qa, dqa in qdq_cases():
        s = np.asarray(scale, np.float32)
        inits = [numpy_helper.from_array(s, "s")]
        ins = ["x", "s"]
        if zdt:
            inits.append(zp_tensor("zp", zdt[0], zdt[1], zp))
            ins.append("zp")
        nodes = [helper.make_node("QuantizeLinear", ins, ["q"], name="q", **qa),
                 helper.make_node("DequantizeLinear", ["q"] + ins[1:], ["y"], name="dq", **dqa)]
        model = save(label, nodes, inits, ["N", 6, 5], opset)
        eval_exact(label, model, x_values(rng, shape, float(s.reshape(-1)[0])))
    # blocked (opset 21): axis 2 of length 5 in blocks of 2 (3 blocks, the last short), uint8 with zero points
    s = (rng.uniform(0.01, 0.1, (8, 6, 3))).astype(np.float32)
    zp = rng.integers(0, 256, (8, 6, 3)).astype(np.uint8)
    inits = [numpy_helper.from_array(s, "s"), numpy_helper.from_array(zp, "zp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], axis=2, block_size=2),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], axis=2, block_size=2)]
    eval_exact("u8_blocked", save("u8_blocked", nodes, inits, [8, 6, 5], 21), x_values(rng, shape, 0.05))
    # DequantizeLinear of initializers: int8 weights per channel into a MatMul, an int32 bias, FP8 weights
    w = rng.integers(-128, 128, (5, 4)).astype(np.int8)
    ws = rng.uniform(0.001, 0.05, 4).astype(np.float32)
    b = rng.integers(-2**31, 2**31 - 1, (4,), dtype=np.int64).astype(np.int32)
    w8 = rng.integers(0, 256, (5, 4)).astype(np.uint8)
    w8[w8 & 0x7F == 0x7F] = 0  # no NaN code among the weights
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(ws, "ws"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.float32(1e-9), "bs"), raw("w8", E4M3, [5, 4], w8),
             numpy_helper.from_array(np.float32(0.25), "w8s")]
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"], axis=1),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bf"]),
             helper.make_node("DequantizeLinear", ["w8", "w8s"], ["w8f"]),
             helper.make_node("MatMul", ["x", "wf"], ["h"]), helper.make_node("MatMul", ["x", "w8f"], ["h8"]),
             helper.make_node("Add", ["h", "bf"], ["hb"]), helper.make_node("Add", ["hb", "h8"], ["y"])]
    x = rng.standard_normal((8, 6, 5)).astype(np.float32)
    model = save("dq_weights", nodes, inits, ["N", 6, 5], 19)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    rc, _, err = ptq("eval", "--model", model, "--data", feed("dq_weights", x), "--logits", J("dq_weights.npy"))
    got = np.load(J("dq_weights.npy")).reshape(want.shape) if rc == 0 else None
    check("dq_weights: int8 per-channel, int32 and FP8 initializers dequantized into MatMul/Add within 1e-5 of "
          "onnxruntime", got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-5),
          err.strip()[-300:] if rc else f"max |diff| {np.abs(got - want).max()}")


def hostile_cases():
    """(label, opset, nodes, initializers, what the message must hold)."""
    s6 = numpy_helper.from_array(np.full(6, 0.1, np.float32), "s")
    s1 = numpy_helper.from_array(np.float32(0.1), "s")
    zi8 = numpy_helper.from_array(np.int8(0), "zp")
    zu8_6 = numpy_helper.from_array(np.zeros(6, np.uint8), "zp")

    def qdq(qa=None, dqa=None, ins=("x", "s", "zp")):
        return [helper.make_node("QuantizeLinear", list(ins), ["q"], name="bad_q", **(qa or {})),
                helper.make_node("DequantizeLinear", ["q"] + list(ins[1:]), ["y"], name="bad_dq", **(dqa or {}))]
    return [
        ("axis_out_of_range", 13, qdq({"axis": 3}), [s6, zu8_6], "axis 3 is out of range"),
        ("axis_negative_out_of_range", 13, qdq({"axis": -4}), [s6, zu8_6], "axis -4 is out of range"),
        ("scale_wrong_length", 13, qdq({"axis": 2}), [s6, zu8_6], "per axis it takes"),
        ("zp_shape", 13, qdq(), [s1, zu8_6], "the zero point's shape [6] is not the scale's [scalar]"),
        ("saturate_2", 19, qdq({"saturate": 2}), [s1, zi8], "saturate 2 must be 0 or 1"),
        ("block_negative", 21, qdq({"block_size": -2}), [s1, zi8], "block_size -2 must not be negative"),
        ("block_shape", 21, qdq({"block_size": 2, "axis": 2}), [s6, zu8_6], "blocks on that axis"),
        ("output_dtype_clash", 21, qdq({"output_dtype": TensorProto.UINT8}), [s1, zi8],
         "output_dtype 2 is not the zero point's dtype int8"),
        ("output_dtype_int4", 21, qdq({"output_dtype": 22}, ins=("x", "s")), [s1], "quantizing to"),
        ("output_dtype_float", 21, qdq({"output_dtype": TensorProto.FLOAT}, ins=("x", "s")), [s1], "quantizing to"),
        ("axis_float", 13, qdq({"axis": 1.5}), [s6, zu8_6], "attribute axis is of type FLOAT"),
        ("dq_zp_dtype", 13, [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="bad_q"),
                             helper.make_node("DequantizeLinear", ["q", "s", "zp2"], ["y"], name="bad_dq")],
         [s1, zi8, numpy_helper.from_array(np.uint8(0), "zp2")], "the zero point is uint8, input 0 int8"),
        ("dq_float_input", 13, [helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="bad_dq")], [s1],
         "input 0 is float"),
        ("scale_float16", 19, qdq(ins=("x", "s")), [numpy_helper.from_array(np.float16(0.1), "s")],
         "the scale (input 1) is float16"),
    ]


def check_hostile(rng):
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    data = feed("hostile", x)
    for label, opset, nodes, inits, want in hostile_cases():
        model = save("bad_" + label, nodes, inits, [4, 6, 5], opset)
        rc, _, err = ptq("eval", "--model", model, "--data", data)
        check(f"hostile {label}: refused naming the node ({want})", rc not in (0, 1) and "bad_" in err and
              want in err and "Traceback" not in err, f"exit {rc}: {err.strip()[-300:]}")


def demo_set(n):
    """The first n Fashion-MNIST test images as an HDF5 set, and the same rows as the demo model's input."""
    images, labels = fmnist_test(n)
    data = J("fm.h5")
    with h5py.File(data, "w") as f:
        f["images"] = images
        f["labels"] = labels
    x = ((images.astype(np.float32) * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353))
    return data, {"input": x.reshape(-1, 1, 28, 28).astype(np.float32)}


def check_demo_exports():
    """calibrate, plan, validate, export --format qdq (INT8, FP8 and --target ort-cpu's uint8 activations with zero
    points), then ptq eval of the export: validate's logits and onnxruntime's predictions on the same export."""
    data, feeds = demo_set(1000)
    rc, _, err = ptq("calibrate", "--model", MODEL, "--data", data, "--samples", "256", "--out", J("demo-c.h5"))
    check("demo: calibrate", rc == 0, err.strip()[-300:])
    for name, flags in (("int8", []), ("fp8", ["--core", "fp8"]), ("uint8-ort", ["--target", "ort-cpu"])):
        plan, sim, qdq = J(f"demo-{name}.json"), J(f"demo-{name}-sim.npy"), J(f"demo-{name}.onnx")
        for args in (("plan", J("demo-c.h5"), "--model", MODEL, *flags, "--out", plan),
                     ("validate", "--model", MODEL, "--plan", plan, "--data", data, "--logits", sim, "--report",
                      J(f"demo-{name}-rep")),
                     ("export", "--format", "qdq", "--plan", plan, "--model", MODEL, "--out", qdq)):
            rc, _, err = ptq(*args)
            check(f"demo {name}: {args[0]}", rc == 0, err.strip()[-300:])
        if not os.path.exists(qdq):
            continue
        check_ort_agrees(f"demo {name}", qdq, feeds, sim)
        rc, _, err = ptq("eval", "--model", qdq, "--data", data, "--logits", J(f"demo-{name}-eval.npy"))
        check(f"demo {name}: ptq eval of the Q/DQ export", rc == 0, err.strip()[-300:])
        if rc != 0:
            continue
        got, want = np.load(J(f"demo-{name}-eval.npy")), np.load(sim)
        same = float((got.argmax(1) == want.argmax(1)).mean())
        check(f"demo {name}: ptq eval of the export makes validate's prediction on >= 99.9% of rows", same >= 0.999,
              f"{100 * same:.2f}%, max |diff| {np.abs(got - want).max():.3g}")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        o = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        same = float((got.argmax(1) == o.argmax(1)).mean())
        check(f"demo {name}: ptq eval of the export makes onnxruntime's prediction on >= 99.9% of rows",
              same >= 0.999, f"{100 * same:.2f}%")
    return data, feeds


def check_refusals(data):
    """calibrate, plan (default, --method auto, --check), sensitivity, validate and export --format qdq of the demo
    model's INT8 Q/DQ export refused, exit 5, naming its first QuantizeLinear and pointing at the float model."""
    qdq, plan = J("demo-int8.onnx"), J("demo-int8.json")
    if not os.path.exists(qdq):
        return
    rc, out, err = ptq("info", qdq)
    check("demo: ptq info of a Q/DQ model says it is quantized already, naming its first Q/DQ node", rc == 0 and
          "quantized  already: node 'ptq_qdq/" in out and "is a QuantizeLinear" in out, f"exit {rc}: {out[-300:]}")
    rc, out, err = ptq("info", MODEL)
    check("demo: ptq info of the float model does not", rc == 0 and "quantized  already" not in out, out[-200:])
    rc, out, err = ptq("info", qdq, "--json")
    j = json.loads(out) if rc == 0 else {}
    check("demo: ptq info --json of a Q/DQ model: quantized true, first_qdq_node",
          j.get("quantized") is True and j.get("first_qdq_node", "").startswith("ptq_qdq/"), f"exit {rc}")
    for cmd in (("calibrate", "--model", qdq, "--data", data, "--out", J("refused-c.h5")),
                ("plan", J("demo-c.h5"), "--model", qdq, "--out", J("refused.json")),
                ("plan", J("demo-c.h5"), "--model", qdq, "--method", "auto", "--data", data, "--out",
                 J("refused-auto.json")),
                ("plan", "--check", plan, "--model", qdq),
                ("sensitivity", "--calib", J("demo-c.h5"), "--model", qdq, "--data", data, "--out",
                 J("refused-s.json")),
                ("validate", "--model", qdq, "--plan", plan, "--data", data, "--report", J("refused-rep")),
                ("export", "--format", "qdq", "--plan", plan, "--model", qdq, "--out", J("refused.onnx"))):
        rc, _, err = ptq(*cmd)
        how = " --method auto" if "auto" in cmd else " --check" if "--check" in cmd else ""
        check(f"demo: {cmd[0]}{how} of a Q/DQ model refused "
              "naming its first Q/DQ node", rc == 5 and "node 'ptq_qdq/" in err and "QuantizeLinear" in err and
              "float model" in err and (cmd[-1] == qdq or not os.path.exists(cmd[-1])),
              f"exit {rc}: {err.strip()[-300:]}")


QUANTIZE = r"""
import sys, numpy as np
from onnxruntime.quantization import quantize_static, QuantFormat, QuantType, CalibrationDataReader
src, dst, x = sys.argv[1], sys.argv[2], np.load(sys.argv[3])
class R(CalibrationDataReader):
    def __init__(self):
        self.it = iter([{"input": x[i:i + 32]} for i in range(0, len(x), 32)])
    def get_next(self):
        return next(self.it, None)
quantize_static(src, dst, R(), quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8)
"""


def check_quantize_static(data, feeds):
    py = os.environ.get("PTQ_QUANTIZE_PYTHON", os.path.join(SRC, ".venv-bench", "bin", "python3"))
    if not os.path.exists(py):
        print("note: no python with onnxruntime.quantization (.venv-bench or PTQ_QUANTIZE_PYTHON): quantize_static's"
              " model not checked")
        return
    np.save(J("calib-x.npy"), feeds["input"][:256])
    r = subprocess.run([py, "-c", QUANTIZE, MODEL, J("qs.onnx"), J("calib-x.npy")], capture_output=True, text=True,
                       timeout=300)
    check("quantize_static (QDQ, per channel, uint8 activations) runs", r.returncode == 0, r.stderr[-300:])
    if r.returncode != 0:
        return
    rc, _, err = ptq("eval", "--model", J("qs.onnx"), "--data", data, "--logits", J("qs.npy"))
    check("quantize_static model: ptq eval", rc == 0, err.strip()[-300:])
    if rc != 0:
        return
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(J("qs.onnx"), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = np.load(J("qs.npy"))
    same = float((got.argmax(1) == want.argmax(1)).mean())
    check("quantize_static model: ptq eval makes onnxruntime's prediction on >= 99.9% of rows", same >= 0.999,
          f"{100 * same:.2f}%, max |diff| {np.abs(got - want).max():.3g}")


def main():
    rng = np.random.default_rng(0)
    check_qdq(rng)
    check_hostile(rng)
    if have_demo():
        data, feeds = check_demo_exports()
        check_quantize_static(data, feeds)
        check_refusals(data)
    else:
        print("note: no demo model or Fashion-MNIST: the export round trip not checked")
    return finish("ops_qdq_test")


if __name__ == "__main__":
    sys.exit(main())
