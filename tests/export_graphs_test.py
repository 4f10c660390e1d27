#!/usr/bin/env python3
"""Simulation equals deployment on constructed graphs (the Q/DQ export's
edits beyond the models in models/): each graph is calibrated on random
8x8 images written with h5py, planned, validated (`--logits`) and exported
(`ptq export --format qdq`), and onnxruntime (no graph optimizations: the
Q/DQ as written) on the export gives `ptq validate`'s logits within 1e-5
relative. Graphs: nodes without a NodeProto.name (as onnx.helper and many
converters write them), where the export moves a Conv's and a Gemm's float
bias to an Add after it and, with --core fp8 (opset 19), a ReduceMean's
axes attribute to an input (also on the graph without biases). Both edits
address the node by its output: by the loader's name ("Conv_2") the export
failed, exit 2, "no existing node named Conv_2 reads 'B2'". An opset-11
graph exported at opset 13: Unsqueeze's, Squeeze's and Split's attributes
moved to inputs; a Softmax over two dims refused. An opset-9 graph: Clip's
min and max (one absent), Slice's starts, ends and axes and Dropout's
ratio moved too, and so are the Unsqueezes of a shape
ptq folded at load (onnxruntime refused both exports before: "Unrecognized
attribute: min for operator Clip", "Unsqueeze:13 has input size 1"). Always-empty tensors
(a Split's part of size 0, a Slice of none) planned in float for every
target and core, --explain saying why, and their range tables written
without them. An fp16 edge tensor past 65504: the plan warns. Run by ctest (label oracle) with
PTQ_BIN and PTQ_SOURCE_DIR set."""
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

N = 64
SIZE = 8


def unnamed(path, rng, biases=True):
    """[N, 3, 8, 8] -> Conv(bias) -> Relu -> Conv(bias, 32) -> Relu -> Conv(32) -> Relu -> ReduceMean(axes 2, 3)
    -> Gemm(bias, alpha 0.5) -> Relu -> Gemm -> [N, 10], no node named; opset 13 (ReduceMean's axes an
    attribute). biases False: none (the export then moves no bias)."""
    def w(name, *shape, scale=None):
        s = scale if scale is not None else 1 / np.sqrt(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)

    inits = [w("W1", 16, 3, 3, 3), w("B1", 16, scale=0.1), w("W2", 32, 16, 3, 3), w("B2", 32, scale=0.1),
             w("W3", 32, 32, 3, 3), w("G1", 32, 32, scale=0.3), w("C1", 32, scale=0.1), w("G2", 32, 10, scale=0.3),
             w("C2", 10, scale=0.1)]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "W3"], ["c3"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("ReduceMean", ["r3"], ["m"], axes=[2, 3], keepdims=0),
             helper.make_node("Gemm", ["m", "G1", "C1"], ["f1"], alpha=0.5),
             helper.make_node("Relu", ["f1"], ["r4"]),
             helper.make_node("Gemm", ["r4", "G2", "C2"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])
    g = helper.make_graph(nodes, "unnamed", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
                          initializer=inits)
    if not biases:
        for n in g.node:
            if n.op_type in ("Conv", "Gemm"):
                del n.input[2:]
        keep = [t for t in g.initializer if t.name[0] not in "BC"]
        del g.initializer[:]
        g.initializer.extend(keep)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.checker.check_model(m)
    onnx.save(m, path)


def opset11(path, rng, softmax_over_two=False, even_split=False):
    """An opset-11 graph whose export (opset 13) moves attributes to inputs: [N, 3, 8, 8] -> Conv(16) -> Relu ->
    Unsqueeze(axes [1]) -> Squeeze(axes [1]) -> Split(axis 1, split [6, 10]; into two halves without split when
    even_split) -> Concat(axis 1) -> Conv(10) ->
    ReduceMean(axes [2, 3], keepdims 0; an attribute until 18) -> Reshape [N, 5, 2] -> Softmax(axis 2, or 1 over both trailing dims when
    softmax_over_two) -> Reshape [N, 10]."""
    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32),
                                       name)

    inits = [w("W1", 16, 3, 3, 3), w("W2", 10, 16, 3, 3),
             numpy_helper.from_array(np.array([0, 5, 2], np.int64), "s3"),
             numpy_helper.from_array(np.array([0, 10], np.int64), "s2")]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Unsqueeze", ["r1"], ["u"], axes=[1]),
             helper.make_node("Squeeze", ["u"], ["q"], axes=[1]),
             helper.make_node("Split", ["q"], ["a", "b"], axis=1, **({} if even_split else {"split": [6, 10]})),
             helper.make_node("Concat", ["b", "a"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "W2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("ReduceMean", ["c2"], ["m"], axes=[2, 3], keepdims=0),
             helper.make_node("Reshape", ["m", "s3"], ["m3"]),
             helper.make_node("Softmax", ["m3"], ["p3"], axis=1 if softmax_over_two else 2),
             helper.make_node("Reshape", ["p3", "s2"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])
    g = helper.make_graph(nodes, "opset11", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 6
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.checker.check_model(m)
    onnx.save(m, path)


def empty(path, rng):
    """Always-empty tensors: [N, 3, 8, 8] -> Conv(16) -> Relu -> Split(axis 1, split [16, 0]) -> a [N, 16, 8, 8] and
    e [N, 0, 8, 8] -> Sigmoid -> e2 (empty, its op still run); Slice(a, channels 3:3) -> z [N, 0, 8, 8]; Concat(a, e2,
    z) -> Conv(bias, 8) -> Relu -> ReduceMean(axes 2, 3) -> Gemm -> [N, 10]."""
    def w(name, *shape, scale=None):
        s = scale if scale is not None else 1 / np.sqrt(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)

    inits = [w("W1", 16, 3, 3, 3), w("W2", 8, 16, 3, 3), w("B2", 8, scale=0.1), w("G", 8, 10, scale=0.3),
             numpy_helper.from_array(np.array([16, 0], np.int64), "split"),
             numpy_helper.from_array(np.array([3], np.int64), "at"),
             numpy_helper.from_array(np.array([1], np.int64), "axis")]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Split", ["r1", "split"], ["a", "e"], axis=1),
             helper.make_node("Sigmoid", ["e"], ["e2"]),
             helper.make_node("Slice", ["a", "at", "at", "axis"], ["z"]),
             helper.make_node("Concat", ["a", "e2", "z"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "W2", "B2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("ReduceMean", ["r2"], ["m"], axes=[2, 3], keepdims=0),
             helper.make_node("Gemm", ["m", "G"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])
    g = helper.make_graph(nodes, "empty", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.checker.check_model(m)
    onnx.save(m, path)


def run_ort(path, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def rel(got, want):
    """The largest per-image ||got - want|| / ||want||."""
    return float((np.linalg.norm(got - want, axis=1) / np.maximum(np.linalg.norm(want, axis=1), 1e-30)).max())


def opset9(path, rng):
    """An opset-9 graph whose export (opset 13) moves float and integer attributes to inputs: [N, 3, 8, 8] ->
    Conv(16) -> Clip(min 0, max 6) -> Clip(max 4 alone) -> Slice(starts [1, 1], ends [7, 7], axes [2, 3]) ->
    Dropout(ratio 0.2) -> Conv(10) -> GlobalAveragePool ->
    Reshape to a shape made of constants (Gather, Unsqueeze(axes [0]), Concat: folded at load) -> [N, 10]."""
    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32),
                                       name)

    inits = [w("W1", 16, 3, 3, 3), w("W2", 10, 16, 3, 3), numpy_helper.from_array(np.array([-1, 10], np.int64), "dims"),
             numpy_helper.from_array(np.array(0, np.int64), "i0"), numpy_helper.from_array(np.array(1, np.int64), "i1")]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c1"], ["r6"], min=0.0, max=6.0),
             helper.make_node("Clip", ["r6"], ["r4"], max=4.0),
             helper.make_node("Slice", ["r4"], ["sl"], starts=[1, 1], ends=[7, 7], axes=[2, 3]),
             helper.make_node("Dropout", ["sl"], ["dr"], ratio=0.2),
             helper.make_node("Conv", ["dr", "W2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c2"], ["gp"]),
             helper.make_node("Gather", ["dims", "i0"], ["d0"], axis=0),
             helper.make_node("Gather", ["dims", "i1"], ["d1"], axis=0),
             helper.make_node("Unsqueeze", ["d0"], ["u0"], axes=[0]),
             helper.make_node("Unsqueeze", ["d1"], ["u1"], axes=[0]),
             helper.make_node("Concat", ["u0", "u1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["gp", "shape"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])
    g = helper.make_graph(nodes, "opset9", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 4
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.checker.check_model(m)
    onnx.save(m, path)


def huge(path, rng):
    """An edge layer past FP16's range: [N, 3, 8, 8] -> Mul(1e6) -> Conv(8) -> Relu -> Conv(8) -> Relu ->
    ReduceMean(axes 2, 3) -> Gemm -> [N, 10]; the plan keeps the first layer's input and output FP16 (edge)."""
    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32),
                                       name)

    inits = [w("W1", 8, 3, 3, 3), w("W2", 8, 8, 3, 3), w("G", 8, 10),
             numpy_helper.from_array(np.array(1e6, np.float32), "k")]
    nodes = [helper.make_node("Mul", ["x", "k"], ["big"]),
             helper.make_node("Conv", ["big", "W1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("ReduceMean", ["r2"], ["m"], axes=[2, 3], keepdims=0),
             helper.make_node("Gemm", ["m", "G"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])
    g = helper.make_graph(nodes, "huge", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.checker.check_model(m)
    onnx.save(m, path)


def run_steps(tag, steps):
    """Runs each ptq command of steps (a check each, named by tag and the command); True if all exit 0."""
    ok = True
    for args in steps:
        rc, _, err = ptq(*args)
        ok = ok and rc == 0
        check(f"{tag}: {args[0]}", rc == 0, err.strip()[-300:])
    return ok


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-export-graphs-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (N, SIZE, SIZE, 3), dtype=np.uint8)
    x = np.ascontiguousarray((images.astype(np.float32) * np.float32(0.00392156862745098)).transpose(0, 3, 1, 2))

    def labelled(model, name):
        """name.h5: the images, labelled by onnxruntime's predictions on model."""
        with h5py.File(J(f"{name}.h5"), "w") as f:
            f["images"] = images
            f["labels"] = run_ort(model, x).argmax(1).astype(np.int64)

    def through_validate(tag, model):
        """tag.h5 (labelled), and the calibrate, plan and validate steps of model on it."""
        labelled(model, tag)
        return [("calibrate", "--model", model, "--data", J(f"{tag}.h5"), "--out", J(f"{tag}-c.h5")),
                ("plan", J(f"{tag}-c.h5"), "--model", model, "--out", J(f"{tag}.json")),
                ("validate", "--model", model, "--plan", J(f"{tag}.json"), "--data", J(f"{tag}.h5"), "--report",
                 J(f"rep-{tag}"), "--logits", J(f"{tag}.npy"))]
    for biases, core in ((True, "int8"), (True, "fp8"), (False, "fp8")):
        name = "unnamed" if biases else "unnamed-nobias"
        model = J(f"{name}.onnx")
        if not os.path.exists(model):
            unnamed(model, np.random.default_rng(3), biases)
            labelled(model, name)
            rc, _, err = ptq("calibrate", "--model", model, "--data", J(f"{name}.h5"), "--out", J(f"{name}-c.h5"))
            check(f"{name}: calibrate", rc == 0, err.strip()[-300:])
        tag = f"{name}-{core}"
        steps = [("plan", J(f"{name}-c.h5"), "--model", model, "--core", core, "--out", J(f"{tag}.json")),
                 ("validate", "--model", model, "--plan", J(f"{tag}.json"), "--data", J(f"{name}.h5"),
                  "--report", J(f"rep-{tag}"), "--logits", J(f"{tag}.npy")),
                 ("export", "--format", "qdq", "--plan", J(f"{tag}.json"), "--model", model, "--out",
                  J(f"{tag}.onnx"))]
        ok = run_steps(tag, steps)
        if not ok:
            continue
        m = onnx.load(J(f"{tag}.onnx"))
        adds = [n for n in m.graph.node if n.op_type == "Add" and n.input[1].endswith("/bias")]
        # under FP8 the Conv reading 16 channels stays FP16 (trt.small-layer), its bias with it
        want = ([] if not biases else ["ptq_qdq/c2/bias", "ptq_qdq/f1/bias"] if core == "int8" else
                ["ptq_qdq/f1/bias"])
        check(f"{tag}: the quantized layers' float biases moved to Adds", [n.input[1] for n in adds] == want,
              f"{[n.input[1] for n in adds]}")
        if core == "fp8":
            rm = next(n for n in m.graph.node if n.op_type == "ReduceMean")
            opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
            check(f"{tag}: opset 19, ReduceMean's axes an input", opset == 19 and len(rm.input) == 2 and
                  all(a.name != "axes" for a in rm.attribute), f"opset {opset}, " + str(rm).replace("\n", " ")[:200])
        got, want = run_ort(J(f"{tag}.onnx"), x), np.load(J(f"{tag}.npy"))
        check(f"{tag}: onnxruntime on the export gives validate's logits within 1e-5", rel(got, want) <= 1e-5,
              f"max relative difference {rel(got, want):.3g}")
    # an opset-11 model exported at opset 13: Unsqueeze's, Squeeze's and Split's attributes become inputs (onnxruntime refused the export before: "Node(Unsqueeze) ... has input size 1"); a Softmax over two
    # trailing dims, which opset 13 would normalize over one, is refused naming it
    for over_two in (False, True):
        tag = "opset11-two" if over_two else "opset11"
        model = J(f"{tag}.onnx")
        opset11(model, np.random.default_rng(4), over_two)
        steps = through_validate(tag, model)
        ok = run_steps(tag, steps)
        if not ok:
            continue
        rc, _, err = ptq("export", "--format", "qdq", "--plan", J(f"{tag}.json"), "--model", model, "--out",
                         J(f"{tag}-qdq.onnx"))
        if over_two:
            check(f"{tag}: export refuses the Softmax over two dims (exit 5, naming it), writes nothing",
                  rc == 5 and "(Softmax, opset 11) normalizes dims 1 and after of its rank-3 input together" in err
                  and not os.path.exists(J(f"{tag}-qdq.onnx")), f"exit {rc}: {err.strip()[-300:]}")
            continue
        check(f"{tag}: export", rc == 0, err.strip()[-300:])
        if rc != 0:
            continue
        m = onnx.load(J(f"{tag}-qdq.onnx"))
        moved = {n.op_type: len(n.input) == 2 and all(a.name not in ("axes", "split") for a in n.attribute)
                 for n in m.graph.node if n.op_type in ("Unsqueeze", "Squeeze", "Split")}
        opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        check(f"{tag}: opset 13, the attributes moved to inputs", opset == 13 and all(moved.values()) and
              len(moved) == 3, f"opset {opset}, {moved}")
        got, want = run_ort(J(f"{tag}-qdq.onnx"), x), np.load(J(f"{tag}.npy"))
        check(f"{tag}: onnxruntime on the export gives validate's logits within 1e-5", rel(got, want) <= 1e-5,
              f"max relative difference {rel(got, want):.3g}")
    # the same graph with a Split into halves (no split attribute or input) exported at opsets 18 and 19 (FP8's),
    # where Split needs num_outputs (onnxruntime refused the export before: "Neither 'split' input nor
    # 'num_outputs' attribute has been given"); onnx 1.12's checker knows opsets up to 17 only
    for want_opset in (18, 19):
        tag = f"split-even-{want_opset}"
        model = J(f"{tag}.onnx")
        opset11(model, np.random.default_rng(4), even_split=True)
        steps = through_validate(tag, model) + [
            ("export", "--format", "qdq", "--plan", J(f"{tag}.json"), "--model", model, "--out", J(f"{tag}-qdq.onnx"),
             "--opset", str(want_opset))]
        ok = run_steps(tag, steps)
        if not ok:
            continue
        m = onnx.load(J(f"{tag}-qdq.onnx"))
        opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        split = next(n for n in m.graph.node if n.op_type == "Split")
        attrs = {a.name: helper.get_attribute_value(a) for a in split.attribute}
        check(f"{tag}: opset {want_opset}, the Split gets num_outputs 2", opset == want_opset and
              attrs.get("num_outputs") == 2 and len(split.input) == 1, f"opset {opset}, {attrs}, {split.input}")
        try:
            got, want = run_ort(J(f"{tag}-qdq.onnx"), x), np.load(J(f"{tag}.npy"))
            check(f"{tag}: onnxruntime on the export gives validate's logits within 1e-5", rel(got, want) <= 1e-5,
                  f"max relative difference {rel(got, want):.3g}")
        except Exception as e:  # noqa: BLE001 -- onnxruntime refusing the file is the failure reported
            check(f"{tag}: onnxruntime runs the export", False, str(e).splitlines()[0][:300])
    # an opset-9 model exported at opset 13: Clip's, Slice's and Dropout's attributes become inputs, on the
    # folded Unsqueezes too; the export passes onnx's checker and onnxruntime gives validate's logits
    tag = "opset9"
    model = J(f"{tag}.onnx")
    opset9(model, np.random.default_rng(6))
    steps = through_validate(tag, model) + [
        ("export", "--format", "qdq", "--plan", J(f"{tag}.json"), "--model", model, "--out", J(f"{tag}-qdq.onnx"))]
    ok = run_steps(tag, steps)
    if ok:
        m = onnx.load(J(f"{tag}-qdq.onnx"))
        try:
            onnx.checker.check_model(m)
            why = ""
        except onnx.checker.ValidationError as e:
            why = str(e).splitlines()[0]
        check(f"{tag}: the export passes onnx's checker", not why, why)
        want = {"Clip": 3, "Slice": 4, "Dropout": 2, "Unsqueeze": 2}
        seen = {}
        for n in m.graph.node:
            if n.op_type in want:
                seen.setdefault(n.op_type, []).append(len(n.input) == want[n.op_type] and not n.attribute)
        check(f"{tag}: every Clip, Slice, Dropout and Unsqueeze takes inputs, no attributes",
              sorted(seen) == sorted(want) and all(all(v) for v in seen.values()) and len(seen["Unsqueeze"]) == 2,
              f"{seen}")
        clip2 = next((n for n in m.graph.node if n.op_type == "Clip" and n.output[0] == "r4"), None)
        inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        lo = inits.get(clip2.input[1]) if clip2 and len(clip2.input) > 1 else None
        check(f"{tag}: the Clip with max alone gets the lowest float as min",
              lo is not None and lo.shape == () and lo == np.finfo(np.float32).min, f"{lo}")
        try:
            got, want = run_ort(J(f"{tag}-qdq.onnx"), x), np.load(J(f"{tag}.npy"))
            check(f"{tag}: onnxruntime on the export gives validate's logits within 1e-5", rel(got, want) <= 1e-5,
                  f"max relative difference {rel(got, want):.3g}")
        except Exception as e:  # noqa: BLE001 -- onnxruntime refusing the file is the failure reported
            check(f"{tag}: onnxruntime runs the export", False, str(e).splitlines()[0][:300])
    # always-empty tensors (a Split's part of size 0, a Sigmoid of it, a Slice of 0 channels, all read by a Concat):
    # the plan refused them as unobserved ("tensor 'e': calibration: no finite values (0 seen...)", exit 7); they
    # stay in float with rule archive.no-range, which --explain gives, and every target's export runs as validate
    model = J("empty.onnx")
    empty(model, np.random.default_rng(5))
    with h5py.File(J("empty.h5"), "w") as f:
        f["images"] = images
        f["labels"] = run_ort(model, x).argmax(1).astype(np.int64)
    rc, _, err = ptq("calibrate", "--model", model, "--data", J("empty.h5"), "--out", J("empty-c.h5"))
    check("empty: calibrate", rc == 0, err.strip()[-300:])
    for tag, flags in (("empty-int8", []), ("empty-fp8", ["--core", "fp8"]), ("empty-ort", ["--placement", "ort"]),
                       ("empty-ort-cpu", ["--target", "ort-cpu"])):
        steps = [("plan", J("empty-c.h5"), "--model", model, *flags, "--explain", "--out", J(f"{tag}.json")),
                 ("validate", "--model", model, "--plan", J(f"{tag}.json"), "--data", J("empty.h5"), "--report",
                  J(f"rep-{tag}"), "--logits", J(f"{tag}.npy")),
                 ("export", "--format", "qdq", "--plan", J(f"{tag}.json"), "--model", model, "--out",
                  J(f"{tag}.onnx"))]
        ok, explain = True, ""
        for args in steps:
            rc, out, err = ptq(*args)
            explain = out if args[0] == "plan" else explain
            ok = ok and rc == 0
            check(f"{tag}: {args[0]}", rc == 0, err.strip()[-300:])
        if not ok:
            continue
        # placement trt quantizes none of them anyway (trt.unquantized); ort would, at Sigmoid's and Concat's inputs
        rows = {line.split()[0]: line for line in explain.splitlines() if line.split()}
        said = (lambda r: "archive.no-range" in r and "no values" in r) if "ort" in tag else (lambda r: True)
        check(f"{tag}: --explain says the empty tensors are not quantized, and why",
              all(n in rows and rows[n].split()[1] in ("fp16", "fp32") and said(rows[n]) for n in ("e", "e2", "z")),
              str([rows.get(n) for n in ("e", "e2", "z")]))
        got, want = run_ort(J(f"{tag}.onnx"), x), np.load(J(f"{tag}.npy"))
        check(f"{tag}: onnxruntime on the export gives validate's logits within 1e-5", rel(got, want) <= 1e-5,
              f"max relative difference {rel(got, want):.3g}")
    # the range tables of that archive: the empty tensors left out (json: amax 0, degenerate), a warning naming each;
    # every export had failed with exit 7 "tensor 'e': calibration: no finite values (0 seen...)"
    for fmt, out in (("trt", J("empty.cache")), ("ort", J("empty-ort")), ("json", J("empty-ranges.json"))):
        rc, _, err = ptq("export", J("empty-c.h5"), "--method", "minmax", "--format", fmt, "--out", out, "--quiet")
        names = []
        if rc == 0 and fmt == "trt":
            names = [line.split(":")[0] for line in open(out).read().splitlines()[1:]]
        elif rc == 0 and fmt == "ort":
            names = [line.split()[0] for line in open(os.path.join(out, "calibration.cache")).read().splitlines()]
        elif rc == 0:
            import json
            rows = {t["name"]: t for t in json.load(open(out))["tensors"]}
            names = [n for n, t in rows.items() if not t["degenerate"]]
            ok_json = all(rows.get(n, {}).get("degenerate") and rows[n]["amax"] == 0 for n in ("e", "e2", "z"))
            check("empty: json export keeps the empty tensors, amax 0 and degenerate", ok_json,
                  str([rows.get(n) for n in ("e", "e2", "z")]))
        warned = all(f"tensor '{n}': the archive holds no values of it" in err for n in ("e", "e2", "z"))
        check(f"empty: export --format {fmt} runs, a warning naming each empty tensor, none in the table",
              rc == 0 and warned and "r1" in names and not {"e", "e2", "z"} & set(names),
              f"exit {rc}: {err.strip()[-300:]} {names}")
    # an fp16 edge tensor whose values pass 65504: the plan says so, naming it and its rule (it had said nothing, and
    # validate's logits came out NaN)
    model = J("huge.onnx")
    huge(model, np.random.default_rng(7))
    with h5py.File(J("huge.h5"), "w") as f:
        f["images"] = images
        f["labels"] = np.zeros(N, np.int64)
    rc, _, err = ptq("calibrate", "--model", model, "--data", J("huge.h5"), "--out", J("huge-c.h5"))
    check("huge: calibrate", rc == 0, err.strip()[-300:])
    rc, _, err = ptq("plan", J("huge-c.h5"), "--model", model, "--out", J("huge.json"))
    check("huge: plan warns of the fp16 tensors past 65504, naming each and its rule",
          rc == 0 and "tensor 'big' is planned fp16 (rule edge) but the archive saw |x| up to 1e+06" in err and
          "tensor 'c1' is planned fp16 (rule edge)" in err and "tensor 'G'" not in err, f"exit {rc}: {err.strip()}")
    return finish("export_graphs_test")


if __name__ == "__main__":
    sys.exit(main())
