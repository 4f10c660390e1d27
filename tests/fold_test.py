#!/usr/bin/env python3
"""Weights a model computes from constants are weights: a constructed classifier whose core Conv reads a float16
initializer cast to float32, whose second Conv reads a Constant node's value, whose MatMul reads a Transpose of an
initializer and whose Gemm head reads an Identity of one. ptq folds those nodes at load
(ptq_graph_fold_constants): `ptq info` lists the four as quantizable weights, eval equals onnxruntime's FP32
logits, the default plan gives the core ones one INT8 scale per output channel (not one per tensor, as an
activation would get), and onnxruntime on the Q/DQ export agrees with `ptq validate`'s logits, INT8 and FP8 core.
Tied constants: a bias read by one Conv and, through an Identity, by another (the split of the first's bias
leaves it for the Identity), and a weight read by its Conv and by an Identity that a folded ReduceMean reads (the
export keeps the float weight for it, as the simulation read it); the folded bias is a bias like an initializer
(ort-cpu rounds it to int32, a TensorRT plan adds it after the Conv); smooth scales a weight a folded Transpose
reads too for its MatMul alone. Hostile growth: a ConstantOfShape of 1 MiB
expanded 4x four times, and 200 Identities of a 1 MiB weight, load within 128 MiB (what folding keeps is bounded by
the model's constants, what shape inference holds by 16 MiB), and eval still gives onnxruntime's logits; three
float16 weights cast, transposed and reshaped (6x their bytes) still fold.
Run by ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import json
import os
import subprocess
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
# the four weights computed from constants, with their output channels and the axis those lie on
COMPUTED = {"W2c": (24, 0), "W3c": (24, 0), "W4t": (32, 1), "W5i": (N_CLASSES, 0)}


def save(path, nodes, inits, name, opset=13, ir_version=7, preprocess=True):
    """The graph of nodes and inits, input x [N, 1, 8, 8], output y [N, 10], saved at path."""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", N_CLASSES])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    if preprocess:
        m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.save(m, path)


def build(path, rng):
    """[N, 1, 8, 8] -> conv1 -> conv2 (Cast of float16) -> conv3 (Constant; its bias an Identity of conv2's) -> plus
    the mean of conv3's weights (through an Identity) -> pool -> MatMul (Transpose) -> Gemm (Identity) -> [N, 10]."""
    w = lambda *shape, s=0.4: (rng.standard_normal(shape) * s).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(w(24, 1, 3, 3), "W1"), numpy_helper.from_array(w(24, s=0.1), "B1"),
             numpy_helper.from_array(w(24, 24, 3, 3, s=0.12).astype(np.float16), "W2h"),
             numpy_helper.from_array(w(32, 24, s=0.3), "W4"), numpy_helper.from_array(w(N_CLASSES, 32, s=0.3), "W5"),
             numpy_helper.from_array(w(N_CLASSES, s=0.1), "B5"), numpy_helper.from_array(w(24, s=0.1), "B2")]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Cast", ["W2h"], ["W2c"], name="w2_to_float", to=TensorProto.FLOAT),
             helper.make_node("Conv", ["r1", "W2c", "B2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Identity", ["B2"], ["B2i"], name="b2_tied"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Constant", [], ["W3c"], name="w3_const",
                              value=numpy_helper.from_array(w(24, 24, 3, 3, s=0.12), "w3")),
             helper.make_node("Conv", ["r2", "W3c", "B2i"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
             helper.make_node("Identity", ["W3c"], ["W3ci"], name="w3_tied"),
             helper.make_node("ReduceMean", ["W3ci"], ["w3max"], name="w3_mean", keepdims=0),
             helper.make_node("Add", ["r3", "w3max"], ["r3b"], name="shift"),
             helper.make_node("GlobalAveragePool", ["r3b"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Transpose", ["W4"], ["W4t"], name="w4_t", perm=[1, 0]),
             helper.make_node("MatMul", ["f", "W4t"], ["m"], name="fc1"),
             helper.make_node("Relu", ["m"], ["r4"], name="relu4"),
             helper.make_node("Identity", ["W5"], ["W5i"], name="w5_same"),
             helper.make_node("Gemm", ["r4", "W5i", "B5"], ["y"], name="head", transB=1)]
    save(path, nodes, inits, "fold")


def run_ort(path, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def rel(got, want):
    return float(np.abs(got - want).max()) / float(np.abs(want).max()) if got.shape == want.shape else np.inf


def grown(path, kind, n):
    """[N, 1, 8, 8] -> Conv -> Mul by the mean of a value grown from a few constants: kind "expand", a
    ConstantOfShape of 1 MiB expanded 4x n times (each within 4x its input); kind "fan", the mean of n Identities
    of one 1 MiB weight (each the size of its input)."""
    inits = [numpy_helper.from_array(np.full((N_CLASSES, 1, 8, 8), 0.01, np.float32), "W")]
    if kind == "expand":
        inits.append(numpy_helper.from_array(np.array([1 << 18], np.int64), "s0"))
        nodes = [helper.make_node("ConstantOfShape", ["s0"], ["e0"], name="zeros",
                                  value=numpy_helper.from_array(np.array([0.5], np.float32), "v"))]
        for i in range(n):
            inits.append(numpy_helper.from_array(np.array([4] * (i + 1) + [1 << 18], np.int64), f"s{i + 1}"))
            nodes.append(helper.make_node("Expand", [f"e{i}", f"s{i + 1}"], [f"e{i + 1}"], name=f"expand{i}"))
        nodes.append(helper.make_node("ReduceMean", [f"e{n}"], ["k"], name="mean", keepdims=0))
    else:
        inits.append(numpy_helper.from_array(np.full(1 << 18, 0.5, np.float32), "big"))
        nodes = [helper.make_node("Identity", ["big"], [f"i{i}"], name=f"copy{i}") for i in range(n)]
        nodes += [helper.make_node("Add", [f"i{i}", f"i{i + 50}"], [f"i{i + 50}s"], name=f"add{i}")
                  for i in range(0, n - 50, 50)]
        nodes.append(helper.make_node("ReduceMean", [f"i{n - 50}s"], ["k"], name="mean", keepdims=0))
    nodes += [helper.make_node("Conv", ["x", "W"], ["c"], name="conv"), helper.make_node("Mul", ["c", "k"], ["m"]),
              helper.make_node("Flatten", ["m"], ["y"], name="flatten")]
    save(path, nodes, inits, kind)


def peak_rss_mib(*args):
    """Runs ptq with args from a fresh interpreter (a fork of this one would count its own pages): (exit code,
    ptq's peak resident MiB)."""
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", probe, os.environ.get("PTQ_BIN", "build/ptq"), *args],
                       capture_output=True, text=True, timeout=300)
    rc, kib = (p.stdout.split() + ["-1", "0"])[:2]
    return int(rc), int(kib) // 1024


def fp16_chains(path, d=512, layers=3):
    """[N, 1, 8, 8] -> [N, 64] -> MatMul -> layers x (MatMul by a float16 [d, d] weight cast, transposed and
    reshaped, Relu) -> MatMul -> [N, 10]: what those weights fold to is 6x the float16 bytes."""
    rng = np.random.default_rng(5)
    w = lambda *shape: (rng.standard_normal(shape) * 0.05).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(np.array([-1, 64], np.int64), "flat"), numpy_helper.from_array(w(64, d), "We"),
             numpy_helper.from_array(w(d, N_CLASSES), "Wo")]
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["h0"], name="flatten"),
             helper.make_node("MatMul", ["h0", "We"], ["r0"], name="embed")]
    for i in range(layers):
        inits += [numpy_helper.from_array(w(d, d).astype(np.float16), f"W{i}h"),
                  numpy_helper.from_array(np.array([d, d], np.int64), f"shape{i}")]
        nodes += [helper.make_node("Cast", [f"W{i}h"], [f"W{i}c"], name=f"cast{i}", to=TensorProto.FLOAT),
                  helper.make_node("Transpose", [f"W{i}c"], [f"W{i}t"], name=f"t{i}", perm=[1, 0]),
                  helper.make_node("Reshape", [f"W{i}t", f"shape{i}"], [f"W{i}"], name=f"reshape{i}"),
                  helper.make_node("MatMul", [f"r{i}", f"W{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("Relu", [f"m{i}"], [f"r{i + 1}"], name=f"relu{i}")]
    nodes.append(helper.make_node("MatMul", [f"r{layers}", "Wo"], ["y"], name="head"))
    save(path, nodes, inits, "fp16_chains", preprocess=False)


def smooth_tied(J, x):
    """SmoothQuant on a LayerNorm read by a MatMul whose weight Wq a folded Transpose reads too (a tied
    projection): the MatMul reads the scaled copy, the Transpose the float Wq, and the FP32 logits stay."""
    rng = np.random.default_rng(9)
    w = lambda *shape: (rng.standard_normal(shape) * 0.2).astype(np.float32)  # noqa: E731
    scale = np.ones(32, np.float32)
    scale[3] = 9.0  # an outlier channel to smooth
    inits = [numpy_helper.from_array(np.array([-1, 8, 8], np.int64), "rows"), numpy_helper.from_array(w(8, 32), "We"),
             numpy_helper.from_array(scale, "g"), numpy_helper.from_array(np.full(32, 0.5, np.float32), "b"),
             numpy_helper.from_array(w(32, 32), "Wq"), numpy_helper.from_array(w(32, N_CLASSES), "Wo")]
    nodes = [helper.make_node("Reshape", ["x", "rows"], ["t"], name="rows"),
             helper.make_node("MatMul", ["t", "We"], ["e"], name="embed"),
             helper.make_node("LayerNormalization", ["e", "g", "b"], ["ln"], name="ln", axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["ln", "Wq"], ["q"], name="q"),
             helper.make_node("Relu", ["q"], ["r"], name="relu"),
             helper.make_node("Transpose", ["Wq"], ["WqT"], name="wq_t", perm=[1, 0]),
             helper.make_node("MatMul", ["r", "WqT"], ["o"], name="o"),
             helper.make_node("MatMul", ["o", "Wo"], ["o2"], name="out"),
             helper.make_node("ReduceMean", ["o2"], ["y"], name="pool", axes=[1], keepdims=0)]
    save(J("tied.onnx"), nodes, inits, "smooth_tied", opset=17, ir_version=8, preprocess=False)
    rc, _, err = ptq("smooth", "--model", J("tied.onnx"), "--data", J("d.h5"), "--samples", "64", "--out",
                     J("tied_smooth.onnx"))
    got = run_ort(J("tied_smooth.onnx"), x) if rc == 0 else np.zeros(0)
    reads = {n.name: list(n.input) for n in onnx.load(J("tied_smooth.onnx")).graph.node} if rc == 0 else {}
    check("smooth of a LayerNorm whose MatMul's weight a folded Transpose reads too: the FP32 logits stay within 1e-4 "
          "(the MatMul reads the scaled copy, the Transpose the float Wq)",
          rc == 0 and rel(got, run_ort(J("tied.onnx"), x)) <= 1e-4 and reads.get("wq_t") == ["Wq"]
          and reads.get("q", ["", ""])[1] != "Wq", f"exit {rc} {err.strip()[-300:]}" if rc else
          f"{rel(got, run_ort(J('tied.onnx'), x)):.3g}, reads {reads.get('q')} {reads.get('wq_t')}")


def smooth_folded(J, x):
    """SmoothQuant on a LayerNorm whose scale is a float16 initializer cast, whose bias a Constant node holds and
    whose MatMul's weight is a Transpose of an initializer, all three computed at load: smoothed (it found nothing
    to smooth before), each reader reading a scaled copy, and the FP32 logits stay."""
    rng = np.random.default_rng(11)
    w = lambda *shape: (rng.standard_normal(shape) * 0.2).astype(np.float32)  # noqa: E731
    scale = np.ones(32, np.float16)
    scale[5] = 9.0  # an outlier channel to smooth
    inits = [numpy_helper.from_array(np.array([-1, 8, 8], np.int64), "rows"), numpy_helper.from_array(w(8, 32), "We"),
             numpy_helper.from_array(scale, "g16"), numpy_helper.from_array(w(16, 32), "WkT"),
             numpy_helper.from_array(w(16, N_CLASSES), "Wo")]
    nodes = [helper.make_node("Reshape", ["x", "rows"], ["t"], name="rows"),
             helper.make_node("MatMul", ["t", "We"], ["e"], name="embed"),
             helper.make_node("Cast", ["g16"], ["g"], name="g_cast", to=TensorProto.FLOAT),
             helper.make_node("Constant", [], ["b"], name="b_const",
                              value=numpy_helper.from_array(np.full(32, 0.5, np.float32))),
             helper.make_node("Transpose", ["WkT"], ["Wk"], name="wk_t", perm=[1, 0]),
             helper.make_node("LayerNormalization", ["e", "g", "b"], ["ln"], name="ln", axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["ln", "Wk"], ["k"], name="k"),
             helper.make_node("Relu", ["k"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "Wo"], ["o"], name="out"),
             helper.make_node("ReduceMean", ["o"], ["y"], name="pool", axes=[1], keepdims=0)]
    save(J("lnfold.onnx"), nodes, inits, "smooth_folded", opset=17, ir_version=8, preprocess=False)
    rc, _, err = ptq("smooth", "--model", J("lnfold.onnx"), "--data", J("d.h5"), "--samples", "64", "--out",
                     J("lnfold_smooth.onnx"))
    got = run_ort(J("lnfold_smooth.onnx"), x) if rc == 0 else np.zeros(0)
    m = onnx.load(J("lnfold_smooth.onnx")) if rc == 0 else None
    reads = {n.name: list(n.input) for n in m.graph.node} if m else {}
    inits = {t.name for t in m.graph.initializer} if m else set()
    read = reads.get("ln", ["", "", ""])[1:] + reads.get("k", ["", ""])[1:]
    check("smooth of a LayerNorm whose scale, bias and MatMul weight are computed at load (Cast of float16, Constant, "
          "Transpose): smoothed, the LayerNorm and MatMul read scaled copies, the FP32 logits stay within 1e-4",
          rc == 0 and rel(got, run_ort(J("lnfold.onnx"), x)) <= 1e-4 and
          read == ["g.smooth", "b.smooth", "Wk.smooth"] and set(read) <= inits,
          f"exit {rc} {err.strip()[-300:]}" if rc else f"{rel(got, run_ort(J('lnfold.onnx'), x)):.3g}, reads {read}")


def smooth_scale_is_bias(J, x):
    """SmoothQuant on a LayerNorm reading one value as both its scale and its bias, a Constant or an initializer:
    the one value is divided once (both slots read the scaled copy) and the FP32 logits stay (exit 2 'initializer
    g.smooth: the name is taken' before, the second slot's copy taking the first's name); the initializer, read by
    nothing then, is gone (it stayed, and onnxruntime warned it removed it)."""
    for kind in ("Constant", "initializer"):
        rng = np.random.default_rng(12)
        w = lambda *shape: (rng.standard_normal(shape) * 0.2).astype(np.float32)  # noqa: E731
        scale = np.ones(32, np.float32)
        scale[5] = 9.0  # an outlier channel to smooth
        inits = [numpy_helper.from_array(np.array([-1, 8, 8], np.int64), "rows"),
                 numpy_helper.from_array(w(8, 32), "We"), numpy_helper.from_array(w(32, N_CLASSES), "Wk")]
        nodes = [helper.make_node("Reshape", ["x", "rows"], ["t"], name="rows"),
                 helper.make_node("MatMul", ["t", "We"], ["e"], name="embed"),
                 helper.make_node("LayerNormalization", ["e", "g", "g"], ["ln"], name="ln", axis=-1, epsilon=1e-5),
                 helper.make_node("MatMul", ["ln", "Wk"], ["k"], name="k"),
                 helper.make_node("ReduceMean", ["k"], ["y"], name="pool", axes=[1], keepdims=0)]
        if kind == "Constant":
            nodes.insert(2, helper.make_node("Constant", [], ["g"], name="g_const",
                                             value=numpy_helper.from_array(scale)))
        else:
            inits.append(numpy_helper.from_array(scale, "g"))
        src, out = J(f"lnsame_{kind}.onnx"), J(f"lnsame_{kind}_smooth.onnx")
        save(src, nodes, inits, "smooth_scale_is_bias", opset=17, ir_version=8, preprocess=False)
        rc, _, err = ptq("smooth", "--model", src, "--data", J("d.h5"), "--samples", "64", "--out", out)
        got = run_ort(out, x) if rc == 0 else np.zeros(0)
        m = onnx.load(out) if rc == 0 else None
        reads = {n.name: list(n.input) for n in m.graph.node} if m else {}
        kept = {t.name for t in m.graph.initializer} if m else set()
        read = reads.get("ln", ["", "", ""])[1:] + reads.get("k", ["", ""])[1:]
        check(f"smooth of a LayerNorm whose scale and bias are one {kind}: both read its scaled copy, the FP32 logits "
              "stay within 1e-4, no initializer g is left", rc == 0 and rel(got, run_ort(src, x)) <= 1e-4 and
              read == ["g.smooth", "g.smooth", "Wk.smooth"] and "g" not in kept,
              f"exit {rc} {err.strip()[-300:]}" if rc else f"{rel(got, run_ort(src, x)):.3g}, reads {read}, "
              f"initializers {sorted(kept)}")


def hostile_growth(J, x):
    for kind, n, what in (("expand", 4, "a ConstantOfShape of 1 MiB expanded 4x four times (341 MiB)"),
                          ("fan", 200, "200 Identities of a 1 MiB weight (200 MiB)")):
        path = J(f"{kind}.onnx")
        grown(path, kind, n)
        rc, mib = peak_rss_mib("info", path)
        check(f"info loads {what} within 128 MiB", rc == 0 and mib < 128, f"exit {rc}, peak RSS {mib} MiB")
        rc, _, err = ptq("eval", "--model", path, "--data", J("d.h5"), "--limit", "64", "--logits", J(f"{kind}.npy"))
        got = np.load(J(f"{kind}.npy")) if rc == 0 else np.zeros(0)
        check(f"eval of {what}, the nodes left to run, gives onnxruntime's logits within 1e-5",
              rc == 0 and rel(got, run_ort(path, x[:64])) <= 1e-5, err.strip()[-300:])
    # the bound leaves room for what models fold: three float16 weights cast, transposed and reshaped are weights
    fp16_chains(J("chains.onnx"))
    rc, out, err = ptq("info", J("chains.onnx"), "--json")
    weights = {t["name"] for t in json.loads(out).get("quantizable_weights", [])} if rc == 0 else set()
    check("info lists the three float16 weights cast, transposed and reshaped as weights",
          {"W0", "W1", "W2"} <= weights, f"exit {rc} {err.strip()[-200:]} weights {sorted(weights)}")


def product_of_constants(path, side, rng):
    """x [N,1,8,8] -> Flatten -> MatMul W -> plus the mean of P = A @ B, A and B constant [side, side]."""
    a, b = (rng.standard_normal((side, side)) * 0.05).astype(np.float32), (rng.standard_normal((side, side)) * 0.05)
    inits = [numpy_helper.from_array(a, "A"), numpy_helper.from_array(b.astype(np.float32), "B"),
             numpy_helper.from_array((rng.standard_normal((64, N_CLASSES)) * 0.2).astype(np.float32), "W")]
    nodes = [helper.make_node("MatMul", ["A", "B"], ["P"], name="product"),
             helper.make_node("ReduceMean", ["P"], ["p"], name="mean", keepdims=0),
             helper.make_node("Flatten", ["x"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "W"], ["m"], name="fc"),
             helper.make_node("Add", ["m", "p"], ["y"], name="shift")]
    save(path, nodes, inits, "product")


def heavy_constants(J, x):
    """A node of constants past PTQ_FOLD_MAX_MACS (2^28 multiply-adds) runs with the data instead of at load."""
    rng = np.random.default_rng(28)
    for side, folded in ((400, True), (700, False)):  # 6.4e7 and 3.4e8 multiply-adds
        path = J(f"product{side}.onnx")
        product_of_constants(path, side, rng)
        rc, out, err = ptq("info", path, "--json")
        acts = {t["name"] for t in json.loads(out).get("quantizable_activations", [])} if rc == 0 else set()
        check(f"a MatMul of two constant {side}x{side} matrices is {'folded at load' if folded else 'left to run'}",
              rc == 0 and ("P" not in acts) == folded, f"exit {rc} {err.strip()[-200:]} activations {sorted(acts)}")
        rc, _, err = ptq("eval", "--model", path, "--data", J("d.h5"), "--limit", "64", "--logits", J("product.npy"))
        got = np.load(J("product.npy")) if rc == 0 else np.zeros(0)
        check(f"eval of the {side}x{side} product gives onnxruntime's logits within 1e-5",
              rc == 0 and rel(got, run_ort(path, x[:64])) <= 1e-5, err.strip()[-300:])


def folded_biases(J, x):
    """conv3's bias is folded (an Identity of conv2's): an ort-cpu plan rounds it to int32 as it does conv2's, and
    a TensorRT plan adds it after the Conv, as onnxruntime would otherwise round it (both only for initializers
    before; conv2's rounded bias also replaced the float one the tied Identity reads)."""
    for what, flags in (("ort-cpu", ["--target", "ort-cpu"]), ("placement ort", ["--placement", "ort"])):
        tag = what.replace(" ", "-")
        plan, q, qdq = J(f"p-{tag}.json"), J(f"q-{tag}.npy"), J(f"qdq-{tag}.onnx")
        rc, _, err = ptq("plan", J("c.h5"), "--model", J("m.onnx"), "--out", plan, *flags)
        if rc == 0:
            rc, _, err = ptq("validate", "--model", J("m.onnx"), "--plan", plan, "--data", J("d.h5"), "--report",
                             J(f"rep-{tag}"), "--logits", q)
        if rc == 0:
            rc, _, err = ptq("export", "--format", "qdq", "--plan", plan, "--model", J("m.onnx"), "--out", qdq)
        sim, dep = (np.load(q), run_ort(qdq, x)) if rc == 0 else (np.zeros(0), np.ones(1))
        check(f"{what}: onnxruntime on the export agrees with ptq validate where a Conv's bias is folded (logits "
              "within 1e-4 relative)", rc == 0 and rel(dep, sim) <= 1e-4,
              f"exit {rc} {err.strip()[-300:]}" if rc else f"{rel(dep, sim):.3g}")
        if rc == 0 and what == "ort-cpu":
            m = onnx.load(qdq)
            dq_of = {n.output[0] for n in m.graph.node if n.op_type == "DequantizeLinear"}
            reads = {n.name: list(n.input) for n in m.graph.node}
            check("ort-cpu: both biases are int32 codes, conv2's under its own name (the tied Identity reads the "
                  "float B2)", {"B2i", "ptq_qdq/B2/dq"} <= dq_of and reads.get("b2_tied") == ["B2"]
                  and reads.get("conv2", [""] * 3)[2] == "ptq_qdq/B2/dq", str(sorted(dq_of))[:300])


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-fold-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(17)
    build(J("m.onnx"), rng)
    images = rng.integers(0, 256, (N, 8, 8), dtype=np.uint8)
    x = (images.astype(np.float32) * np.float32(0.00392156862745098)).reshape(N, 1, 8, 8)
    ref = run_ort(J("m.onnx"), x)
    with h5py.File(J("d.h5"), "w") as f:
        f["images"] = images
        f["labels"] = ref.argmax(1).astype(np.int64)

    rc, out, err = ptq("info", J("m.onnx"), "--json")
    info = json.loads(out) if rc == 0 else {}
    weights = {t["name"] for t in info.get("quantizable_weights", [])}
    acts = {t["name"] for t in info.get("quantizable_activations", [])}
    check("info lists the four values computed from constants as weights, none as an activation, and counts the "
          "file's 19 nodes", rc == 0 and set(COMPUTED) <= weights and not set(COMPUTED) & acts
          and info.get("nodes") == 19, f"exit {rc} {err.strip()[-200:]} weights {sorted(weights)}")

    for device in ("cpu", "ref"):
        rc, _, err = ptq("eval", "--model", J("m.onnx"), "--data", J("d.h5"), "--device", device, "--logits",
                         J(f"fp32-{device}.npy"))
        got = np.load(J(f"fp32-{device}.npy")) if rc == 0 else np.zeros(0)
        check(f"eval --device {device} of the folded model gives onnxruntime's logits within 1e-5",
              rc == 0 and rel(got, ref) <= 1e-5, f"exit {rc} {err.strip()[-300:]}" if rc else f"{rel(got, ref):.3g}")

    rc, _, err = ptq("calibrate", "--model", J("m.onnx"), "--data", J("d.h5"), "--samples", "256", "--seed", "0",
                     "--out", J("c.h5"))
    check("calibrate on the model with computed weights", rc == 0, err.strip()[-300:])
    for core in ("int8", "fp8"):
        plan, rep, q, qdq = J(f"p-{core}.json"), J(f"rep-{core}"), J(f"q-{core}.npy"), J(f"qdq-{core}.onnx")
        rc, _, err = ptq("plan", J("c.h5"), "--model", J("m.onnx"), "--core", core, "--out", plan)
        check(f"plan --core {core}", rc == 0, err.strip()[-300:])
        if rc:
            continue
        tensors = {t["name"]: t for t in json.load(open(plan))["tensors"]}
        for name, (channels, axis) in COMPUTED.items():
            t = tensors.get(name, {})
            if name == "W5i":  # the head: an FP16 edge, a weight still
                ok = t.get("kind") == "weight" and t.get("precision") == "fp16"
            else:
                ok = (t.get("kind") == "weight" and t.get("precision", "").startswith(core[:3])
                      and len(t.get("scales", [])) == channels and t.get("axis") == axis)
            check(f"{core} plan: '{name}' is a weight{'' if name == 'W5i' else f' with {channels} scales on axis {axis}'}",
                  ok, json.dumps(t)[:300])
        rc1, _, err1 = ptq("validate", "--model", J("m.onnx"), "--plan", plan, "--data", J("d.h5"), "--report", rep,
                           "--logits", q)
        rc2, _, err2 = ptq("export", "--format", "qdq", "--plan", plan, "--model", J("m.onnx"), "--out", qdq)
        check(f"{core}: validate and the Q/DQ export run", rc1 == 0 and rc2 == 0, (err1 + err2).strip()[-300:])
        if rc1 == 0 and rc2 == 0:
            sim, dep = np.load(q), run_ort(qdq, x)
            agree = float(np.mean(sim.argmax(1) == dep.argmax(1)))
            # 1e-3: a CPU summing in another order moves an activation by one step (2.4e-4 seen on an H100 host)
            check(f"{core}: onnxruntime on the export agrees with ptq validate (logits within 1e-3 relative, every "
                  "prediction)", rel(dep, sim) <= 1e-3 and agree == 1.0, f"{rel(dep, sim):.3g}, agreement {agree}")
            m = onnx.load(qdq)
            dq_of = {n.output[0] for n in m.graph.node if n.op_type == "DequantizeLinear"}
            reads = {n.name: list(n.input) for n in m.graph.node}
            check(f"{core}: the export dequantizes the three core weights from codes; W3c, which a folded node reads "
                  "too, under its own name (conv3 reads that, the tied Identity the float W3c)",
                  {"W2c", "ptq_qdq/W3c/dq", "W4t"} <= dq_of and reads.get("conv3", [""] * 2)[1] == "ptq_qdq/W3c/dq"
                  and reads.get("w3_tied") == ["W3c"], str(sorted(dq_of))[:300])
    folded_biases(J, x)
    smooth_tied(J, x)
    smooth_folded(J, x)
    smooth_scale_is_bias(J, x)
    hostile_growth(J, x)
    heavy_constants(J, x)
    finish("fold_test")


if __name__ == "__main__":
    main()
