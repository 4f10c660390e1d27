#!/usr/bin/env python3
"""`ptq plan --placement ort` against onnxruntime 1.32's quantize_static (QDQ, per channel; INT8 symmetric
activations, and --target ort-cpu's uint8 ones) on one small graph per op of its registry that ptq runs: each op
sits between ops outside the registry (Neg, Sub), so that only its own quantizer marks its tensors. The tensors
quantize_static gives a QuantizeLinear, and whose scale each takes (a Split's, Slice's, Gather's, GatherElements',
MaxPool's, TopK's or zero-padding Pad's output its input's; a Gather's of a table from the initializers the
table's, where ptq gives it its own), are written out below as onnxruntime 1.32 makes them; ptq's plan must
quantize those tensors with those shared scales (graph outputs aside, which ptq leaves as computed). Where
scripts/bench-setup.sh made .venv-bench, quantize_static itself is run on each graph and compared too. Before
ptq's ort table had ArgMax, CumSum, Slice, Split, Pad, Where, Gather and the normalizations, ptq left their tensors
FP32, and quantized a MaxPool's output below opset 12, where quantize_static leaves it. Each INT8 plan is then
validated and exported as Q/DQ, onnxruntime on the export making ptq validate's predictions (check_ort_agrees).
Run by ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as TP, helper as H, numpy_helper as NH
    from ptqtest import SRC, check, check_ort_agrees, finish, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

N_ROWS = 16
NEG = lambda i, o: H.make_node("Neg", [i], [o])  # noqa: E731
MUL = lambda i, o, c="c": H.make_node("Mul", [i, c], [o])  # noqa: E731
C = {"c": np.float32(1.5)}
PADS = np.array([0, 0, 1, 0, 0, 2], np.int64)

# name: (nodes before the final Neg of "b", initializers, opset, what quantize_static quantizes ("t" its own scale,
# "t=u" u's), and with uint8 activations where that differs)
CASES = {
    "argmax": ([NEG("x", "a"), H.make_node("ArgMax", ["a"], ["i"], axis=-1, keepdims=1),
                H.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT), H.make_node("Sub", ["fi", "a"], ["b"])], {}, 13,
               "a", None),
    "cumsum": ([NEG("x", "a"), H.make_node("CumSum", ["a", "ax"], ["b"])], {"ax": np.int64(2)}, 13, "a,b", None),
    "slice": ([NEG("x", "a"), MUL("a", "m"), H.make_node("Slice", ["m", "st", "en", "axs"], ["b"])],
              {**C, "st": np.array([1], np.int64), "en": np.array([5], np.int64), "axs": np.array([2], np.int64)},
              13, "a,m,b=m", None),
    "split": ([NEG("x", "a"), H.make_node("Split", ["a"], ["b1", "b2"], axis=2),
               H.make_node("Sub", ["b1", "b2"], ["b"])], {}, 13, "a,b1=a,b2=a", None),
    "split_quantized": ([NEG("x", "a"), MUL("a", "m"), H.make_node("Split", ["m"], ["b1", "b2"], axis=2),
                         H.make_node("Sub", ["b1", "b2"], ["b"])], C, 13, "a,m,b1=m,b2=m", None),
    "pad_zero": ([NEG("x", "a"), H.make_node("Pad", ["a", "p"], ["b"])], {"p": PADS}, 13, "a,b=a", None),
    "pad_one": ([NEG("x", "a"), H.make_node("Pad", ["a", "p", "cv"], ["b"])], {"p": PADS, "cv": np.float32(1)}, 13,
                "a,b", None),
    "pad_reflect": ([NEG("x", "a"), H.make_node("Pad", ["a", "p"], ["b"], mode="reflect")], {"p": PADS}, 13,
                    "a,b=a", None),
    "pad_edge": ([NEG("x", "a"), H.make_node("Pad", ["a", "p"], ["b"], mode="edge")], {"p": PADS}, 13, "a,b=a", None),
    "where": ([NEG("x", "a"), MUL("a", "m1"), MUL("a", "m2", "c2"), H.make_node("Greater", ["a", "z"], ["cond"]),
               H.make_node("Where", ["cond", "m1", "m2"], ["b"])],
              {**C, "c2": np.float32(-0.5), "z": np.float32(0)}, 13, "a,m1,m2,b", None),
    "where_constant": ([NEG("x", "a"), MUL("a", "m1"), H.make_node("Greater", ["a", "z"], ["cond"]),
                        H.make_node("Where", ["cond", "m1", "z"], ["b"])], {**C, "z": np.float32(0)}, 13, "a,m1",
                       None),
    "gather": ([NEG("x", "a"), MUL("a", "m"), H.make_node("Gather", ["m", "idx"], ["b"], axis=2)],
               {**C, "idx": np.array([0, 2, 3], np.int64)}, 13, "a,m,b=m", None),
    "gather_table": ([NEG("x", "a"), H.make_node("ArgMax", ["a"], ["i"], axis=-1, keepdims=0),
                      H.make_node("Gather", ["tab", "i"], ["b"])], {"tab": np.linspace(-2, 2, 18, dtype=np.float32)
                                                                    .reshape(6, 3)}, 13, "a,b", None),
    "gather_constant_node": ([NEG("x", "a"), H.make_node("ArgMax", ["a"], ["i"], axis=-1, keepdims=0),
                              H.make_node("Constant", [], ["tab"], value=NH.from_array(
                                  np.linspace(-2, 2, 18, dtype=np.float32).reshape(6, 3))),
                              H.make_node("Gather", ["tab", "i"], ["b"])], {}, 13, "a", None),
    "gather_elements": ([NEG("x", "a"), MUL("a", "m"), H.make_node("ArgMax", ["a"], ["i"], axis=2),
                         H.make_node("GatherElements", ["m", "i"], ["b"], axis=2)], C, 13, "a,m,b=m", None),
    "gather_unquantized": ([NEG("x", "a"), H.make_node("Gather", ["a", "idx"], ["b"], axis=2)],
                           {"idx": np.array([0, 2, 3], np.int64)}, 13, "", None),
    "layernorm": ([NEG("x", "a"), H.make_node("LayerNormalization", ["a", "s", "bb"], ["b"], axis=-1)],
                  {"s": np.linspace(0.5, 1.5, 6, dtype=np.float32), "bb": np.linspace(-1, 1, 6, dtype=np.float32)},
                  17, "a,b", None),
    "instancenorm": ([NEG("x", "a"), H.make_node("InstanceNormalization", ["a", "s", "bb"], ["b"])],
                     {"s": np.linspace(0.5, 1.5, 4, dtype=np.float32), "bb": np.linspace(-1, 1, 4, dtype=np.float32)},
                     13, "a,b", None),
    "maxpool_opset11": ([NEG("x", "a"), MUL("a", "m"), H.make_node("MaxPool", ["m"], ["b"], kernel_shape=[2])], C, 11,
                        "a,m", None),
    "maxpool": ([NEG("x", "a"), MUL("a", "m"), H.make_node("MaxPool", ["m"], ["b"], kernel_shape=[2])], C, 13,
                "a,m,b=m", None),
    "topk": ([NEG("x", "a"), MUL("a", "m"), H.make_node("TopK", ["m", "k"], ["b", "bi"], axis=-1)],
             {**C, "k": np.array([4], np.int64)}, 13, "a,m,b=m", None),
    "topk_unquantized": ([NEG("x", "a"), H.make_node("TopK", ["a", "k"], ["b", "bi"], axis=1)],
                         {"k": np.array([2], np.int64)}, 11, "", None),
    "relu_reshape": ([NEG("x", "a"), MUL("a", "m"), H.make_node("Relu", ["m"], ["r"]),
                      H.make_node("Reshape", ["r", "sh"], ["b"])], {**C, "sh": np.array([0, 24], np.int64)}, 13,
                     "a,m,r,b=r", "a,r,b=r"),
}

# run with .venv-bench's python: {case: {mode: {tensor: the tensor whose scale it takes}}} from quantize_static
ORT_QUANTIZE = r"""
import json, sys, numpy as np, onnx
from onnxruntime.quantization import quantize_static, QuantFormat, QuantType, CalibrationDataReader
tmp, cases = sys.argv[1], sys.argv[2].split(",")
x = np.random.RandomState(0).randn(16, 4, 6).astype(np.float32)
class R(CalibrationDataReader):
    def __init__(s): s.it = iter([{"x": x[i:i + 4]} for i in range(0, 16, 4)])
    def get_next(s): return next(s.it, None)
out = {}
for c in cases:
    for mode in ("int8", "uint8"):
        kw = (dict(activation_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True}) if mode == "int8"
              else dict(activation_type=QuantType.QUInt8))
        dst = f"{tmp}/{c}-{mode}-q.onnx"
        quantize_static(f"{tmp}/{c}.onnx", dst, R(), quant_format=QuantFormat.QDQ, per_channel=True,
                        weight_type=QuantType.QInt8, **kw)
        q = {n.input[0]: n.input[1][:-len("_scale")] for n in onnx.load(dst).graph.node
             if n.op_type == "QuantizeLinear"}
        out.setdefault(c, {})[mode] = q
print(json.dumps(out))
"""


def build(path, nodes, inits, opset):
    nodes = nodes + [NEG("b", "nb"), H.make_node("Flatten", ["nb"], ["out"])]
    g = H.make_graph(nodes, os.path.basename(path), [H.make_tensor_value_info("x", TP.FLOAT, ["N", 4, 6])],
                     [H.make_tensor_value_info("out", TP.FLOAT, None)],
                     [NH.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m)
    onnx.save(m, path)


def parse(spec):
    """'a,b=a' -> {"a": "a", "b": "a"}"""
    return {t.split("=")[0]: t.split("=")[-1] for t in spec.split(",") if t}


def ptq_marks(plan):
    """{tensor: the tensor whose scale it takes} of a plan's quantized activations, read from the sources."""
    acts = {e["name"]: e for e in plan["tensors"] if e["kind"] == "activation"}
    out = {}
    for name, e in acts.items():
        if e["precision"] not in ("int8", "uint8"):
            continue
        root = name
        while (m := re.match(r"the scale of '(.*)'$", acts[root].get("source", ""))):
            root = m.group(1)
        out[name] = root
    return out


def check_edges(J, x):
    """Conv c1 (the first compute layer: ptq keeps it FP16, FP32 for ort-cpu) -> MaxPool p -> Conv c2 -> Relu r ->
    Conv c3 (the last) -> Transpose t -> Neg -> out. quantize_static has no edge rule: it quantizes c1 and c3 and
    gives p and t their scales (ort.same-as-input), so c2 runs quantized. ptq left p and t FP32 (its share found
    no scale at c1), so c2 read a float input and its weight followed it into float. p and t must take the scale
    c1 and c3 would have (--method minmax: max |x| / 127 of onnxruntime's c1 and c3), c2 and its weight the core,
    and the plan must say that the edges are ptq's choice, not quantize_static's."""
    rng = np.random.default_rng(5)
    inits = {"w1": rng.standard_normal((8, 4, 1)).astype(np.float32),
             "w2": (rng.standard_normal((8, 8, 3)) / 5).astype(np.float32),
             "w3": (rng.standard_normal((6, 8, 1)) / 3).astype(np.float32)}
    nodes = [H.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[1]),
             H.make_node("MaxPool", ["c1"], ["p"], kernel_shape=[2], strides=[1], pads=[0, 1]),
             H.make_node("Conv", ["p", "w2"], ["c2"], kernel_shape=[3], pads=[1, 1]),
             H.make_node("Relu", ["c2"], ["r"]), H.make_node("Conv", ["r", "w3"], ["c3"], kernel_shape=[1]),
             H.make_node("Transpose", ["c3"], ["t"], perm=[0, 2, 1]), NEG("t", "nt"),
             H.make_node("Flatten", ["nt"], ["out"])]
    model = J("edges.onnx")
    g = H.make_graph(nodes, "edges", [H.make_tensor_value_info("x", TP.FLOAT, ["N", 4, 6])],
                     [H.make_tensor_value_info("out", TP.FLOAT, None)],
                     [NH.from_array(v, k) for k, v in inits.items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, model)
    m.graph.output.extend([H.make_tensor_value_info(v, TP.FLOAT, None) for v in ("c1", "c3")])
    outs = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    amax = {"c1": float(np.abs(outs[1]).max()), "c3": float(np.abs(outs[2]).max())}
    with h5py.File(J("edges.h5"), "w") as f:
        f["x"] = x
        f["labels"] = outs[0].argmax(1)
    rc, _, err = ptq("calibrate", "--model", model, "--data", J("edges.h5"), "--out", J("edges-c.h5"))
    check("edges: calibrate", rc == 0, err.strip()[-300:])
    if rc != 0:
        return
    for mode, flags in (("int8", ["--placement", "ort"]), ("uint8", ["--target", "ort-cpu"])):
        plan = J(f"edges-{mode}.json")
        rc, _, err = ptq("plan", J("edges-c.h5"), "--model", model, *flags, "--method", "minmax", "--out", plan)
        check(f"edges {mode}: plan", rc == 0, err.strip()[-300:])
        if rc != 0:
            continue
        e = {t["name"]: t for t in json.load(open(plan))["tensors"]}
        high = "fp16" if mode == "int8" else "fp32"
        for edge, shared in (("c1", "p"), ("c3", "t")):
            got = e[shared]
            ok = e[edge]["precision"] == high and got["precision"] == mode and f"'{edge}'" in got["source"]
            if ok and mode == "int8":
                ok = abs(got["scales"][0] - amax[edge] / 127) <= 1e-5 * amax[edge] / 127
            check(f"edges {mode}: {shared} takes the scale {edge} would have ({edge} kept {high} as an edge), as "
                  f"quantize_static gives it {edge}'s", ok, f"{edge} {e[edge]}, {shared} {got}, max|{edge}| "
                  f"{amax[edge]:.6g}")
        # (uint8: c2 is left to the Relu quantize_static removes, ort.removed-activation)
        check(f"edges {mode}: the middle Conv and its weight run quantized, as quantize_static runs them",
              e["c2"]["precision"] == (mode if mode == "int8" else "fp32") and e["w2"]["precision"] == "int8",
              f"c2 {e['c2']}, w2 {e['w2']}")
        check(f"edges {mode}: the plan says the edges are ptq's, not quantize_static's",
              all("quantize_static" in e[v]["source"] for v in ("x", "c1", "r", "c3", "w1", "w3")),
              str({v: e[v]["source"] for v in ("x", "c1", "w1")}))
        if mode != "int8":
            continue
        sim, qdq = J("edges.npy"), J("edges-qdq.onnx")
        rc, _, err = ptq("validate", "--model", model, "--plan", plan, "--data", J("edges.h5"), "--logits", sim,
                         "--report", J("edges-rep"))
        if rc == 0:
            rc, _, err = ptq("export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq)
        check("edges: validate and export the ort plan", rc == 0, err.strip()[-300:])
        if rc == 0:
            check_ort_agrees("edges", qdq, {"x": x}, sim)


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-ortplace-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    x = np.random.default_rng(0).standard_normal((N_ROWS, 4, 6)).astype(np.float32)
    for name, (nodes, inits, opset, _, _) in CASES.items():
        build(J(f"{name}.onnx"), nodes, inits, opset)
    bench_py = os.path.join(SRC, ".venv-bench", "bin", "python3")
    live = None
    if os.path.exists(bench_py):
        r = subprocess.run([bench_py, "-c", ORT_QUANTIZE, tmp, ",".join(CASES)], capture_output=True, text=True,
                           timeout=300)
        check("quantize_static runs on every graph", r.returncode == 0, "" if r.returncode == 0 else r.stderr[-500:])
        live = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None
    else:
        print("note: no .venv-bench (scripts/bench-setup.sh): quantize_static not run, its recorded marks used")
    for name, (_, inits, _, want8, want_u8) in CASES.items():
        model = J(f"{name}.onnx")
        sess_out = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        with h5py.File(J(f"{name}.h5"), "w") as f:
            f["x"] = x
            f["labels"] = sess_out.argmax(1)
        rc, _, err = ptq("calibrate", "--model", model, "--data", J(f"{name}.h5"), "--out", J(f"{name}-c.h5"))
        check(f"{name}: calibrate", rc == 0, err.strip()[-300:])
        if rc != 0:
            continue
        for mode, flags in (("int8", ["--placement", "ort"]), ("uint8", ["--target", "ort-cpu"])):
            plan = J(f"{name}-{mode}.json")
            rc, _, err = ptq("plan", J(f"{name}-c.h5"), "--model", model, *flags, "--out", plan)
            check(f"{name} {mode}: plan", rc == 0, err.strip()[-300:])
            if rc != 0:
                continue
            got = ptq_marks(json.load(open(plan)))
            want = parse(want8 if mode == "int8" or want_u8 is None else want_u8)
            check(f"{name} {mode}: the tensors and shared scales quantize_static 1.32 gives", got == want,
                  f"ptq {got}, quantize_static {want}")
            if live is not None:
                # a Gather's output takes its constant table's scale there, ptq's its own
                theirs = {t: r if r in got or r not in inits else t for t, r in live[name][mode].items()
                          if not t.startswith("out")}
                check(f"{name} {mode}: the tensors and shared scales quantize_static gives here", got == theirs,
                      f"ptq {got}, quantize_static {theirs}")
            if mode != "int8":
                continue
            sim, qdq = J(f"{name}.npy"), J(f"{name}-qdq.onnx")
            rc, _, err = ptq("validate", "--model", model, "--plan", plan, "--data", J(f"{name}.h5"), "--logits", sim,
                             "--report", J(f"{name}-rep"))
            if rc == 0:
                rc, _, err = ptq("export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq)
            check(f"{name}: validate and export the ort plan", rc == 0, err.strip()[-300:])
            if rc == 0:
                check_ort_agrees(name, qdq, {"x": x}, sim)
    check_edges(J, x)
    return finish("ort_placement_test")


if __name__ == "__main__":
    sys.exit(main())
