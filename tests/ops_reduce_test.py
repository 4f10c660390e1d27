#!/usr/bin/env python3
"""ONNX's reductions, ArgMin, elementwise math (Tan ... Atanh, Sign, ThresholdedRelu, Shrink) and LRN that ptq
refused, exit 5 "op X is not supported": each in a small model (built here with onnx.helper) run by `ptq eval`
against onnxruntime (keepdims, negative axes, opset 18's axes input, empty axes with and without
noop_with_empty_axes, which leaves L1's |x|, L2's |x|, SumSquare's x^2 and LogSum's log x, empty sets, NaN), and an
embedding-style x / ReduceL2(x) and AlexNet's LRN after a Conv through calibrate, plan, validate and a Q/DQ export
that onnxruntime runs to validate's predictions (check_ort_agrees). Shares ops_breadth_test.py's model and pipeline
helpers. Skips (77) without onnx or onnxruntime. Run by ctest with PTQ_BIN and PTQ_SOURCE_DIR set."""
import sys

from ptqtest import check, finish, ptq

try:
    import h5py
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from ops_breadth_test import J, check_pipeline, conv_classifier, save
except ImportError as e:  # pragma: no cover
    print(f"ops_reduce_test: skipped ({e})")
    sys.exit(77)

N = 32
NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.INT32: np.int32,
         TensorProto.INT64: np.int64}


def eval_vs_ort(label, model, feeds, tol=1e-5):
    """ptq eval's logits within tol (absolute plus relative) of onnxruntime's; where onnxruntime's are not finite,
    the same Inf or a NaN."""
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0].astype(np.float64)
    data = J(label + ".h5")
    with h5py.File(data, "w") as f:
        for k, v in feeds.items():
            f[k] = v
        f["labels"] = np.zeros(len(want), np.int64)
    rc, _, err = ptq("eval", "--model", model, "--data", data, "--logits", J(label + ".npy"))
    got = np.load(J(label + ".npy")).astype(np.float64).reshape(want.shape) if rc == 0 else None
    ok, detail = False, err.strip()[-300:]
    if got is not None:
        fin = np.isfinite(want)
        close = np.abs(got[fin] - want[fin]) <= tol * (1 + np.abs(want[fin]))
        same = (got[~fin] == want[~fin]) | (np.isnan(got[~fin]) & np.isnan(want[~fin]))
        ok = bool(close.all() and same.all())
        detail = f"{int((~close).sum())} finite and {int((~same).sum())} non-finite values differ"
    check(f"{label}: eval within {tol:g} of onnxruntime", ok, detail)


def reduce_model(label, op, dt, shape, opset, attrs=None, axes=None, tail=None):
    """x [N, prod(shape)] float32 (no image: fed as stored) -> Reshape to [N, *shape] 'xs' -> Cast to dt -> op (axes
    as an attribute, or from opset 18 as input 1 when axes is not None) -> Cast to float32 'r' -> (tail nodes from
    'r' to 'y', or Flatten)."""
    attrs = dict(attrs or {})
    ins, inits = ["xt"], [numpy_helper.from_array(np.array([-1, *shape], np.int64), "shape")]
    if axes is not None:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        ins.append("axes")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["xs"]), helper.make_node("Cast", ["xs"], ["xt"], to=dt),
             helper.make_node(op, ins, ["o"], name=label, **attrs),
             helper.make_node("Cast", ["o"], ["r"], to=TensorProto.FLOAT)]
    nodes += tail or [helper.make_node("Flatten", ["r"], ["y"])]
    return save(label, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", int(np.prod(shape))])],
                ["N", None], inits, opset=opset)


def values(rng, op, dt, shape):
    """Inputs [N, prod(shape)] float32 each op is defined and finite on: LogSum's positive, Prod's near 1,
    LogSumExp's large (exp(x) alone would overflow float32), integers small (Prod's products within int32)."""
    if dt in (TensorProto.INT32, TensorProto.INT64):
        hi = 3 if op == "ReduceProd" else 10
        return rng.integers(-hi + 1, hi, (N, int(np.prod(shape)))).astype(np.float32)
    x = rng.standard_normal((N, int(np.prod(shape)))) * 3
    if op == "ReduceLogSum":
        x = np.abs(x) + 0.01
    elif op == "ReduceProd":
        x = 1 + x / 10
    elif op == "ReduceLogSumExp":
        x = x * 40
    return x.astype(np.float32)


REDUCES = ["ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def check_reduces(rng):
    shape = (4, 3, 5)
    for op in REDUCES:
        types = [TensorProto.FLOAT, TensorProto.DOUBLE]
        if op in ("ReduceMin", "ReduceProd", "ReduceL1", "ReduceSumSquare"):
            types += [TensorProto.INT32, TensorProto.INT64]
        for dt in types:
            x = values(rng, op, dt, shape)
            name = f"{op}_{np.dtype(NP_OF[dt]).name}"
            cases = [("axes2", 13, {"axes": [2]}, None), ("axes-1-3_nokeep", 13, {"axes": [-1, -3], "keepdims": 0},
                                                             None),
                     ("in18_axes-2", 18, {}, [-2]), ("in18_axes13_nokeep", 18, {"keepdims": 0}, [1, 3]),
                     ("in18_noop", 18, {"noop_with_empty_axes": 1}, [])]
            for tag, opset, attrs, axes in cases:
                eval_vs_ort(f"{name}_{tag}", reduce_model(f"{name}_{tag}", op, dt, shape, opset, attrs, axes), {"x": x})
        # no axes: over every axis, the batch's too ([1, 1, 1, 1], broadcast back onto x)
        x = values(rng, op, TensorProto.FLOAT, shape)
        tail = [helper.make_node("Sub", ["xs", "r"], ["d"]), helper.make_node("Flatten", ["d"], ["y"])]
        for opset, axes in [(13, None), (18, []), (18, None)]:
            label = f"{op}_all_opset{opset}{'_empty_input' if axes == [] else ''}"
            eval_vs_ort(label, reduce_model(label, op, TensorProto.FLOAT, shape, opset, axes=axes, tail=tail), {"x": x})


def check_reduce_edges(rng):
    """An empty set (a 0-long axis, from a Slice): ONNX's values (Min +Inf, Max, LogSum and LogSumExp -Inf, Prod 1,
    the rest 0; clipped to +-1e30, as eval refuses logits that are all infinite); non-finite values: Inf, a -Inf row,
    a NaN (first in its row: onnxruntime's ReduceMin and ReduceMax drop a NaN anywhere else, ONNX's reference and ptq
    do not), LogSumExp on values of 1e30 (float32's exp(x) would be Inf)."""
    x = rng.standard_normal((N, 6)).astype(np.float32)
    big = [numpy_helper.from_array(np.array(v, np.float32), n) for v, n in ((-1e30, "lo"), (1e30, "hi"))]
    for op in REDUCES + ["ReduceMax", "ReduceSum"]:
        label = f"{op}_empty_set"
        st, en, ax = (numpy_helper.from_array(np.array([v], np.int64), n) for v, n in ((2, "st"), (2, "en"), (1, "ax")))
        nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["e"]),
                 helper.make_node(op, ["e", "ax"] if op == "ReduceSum" else ["e"], ["r"], name=label,
                                  **({} if op == "ReduceSum" else {"axes": [1]})),
                 helper.make_node("Clip", ["r", "lo", "hi"], ["c"]),
                 helper.make_node("Concat", ["x", "c"], ["y"], axis=1)]
        model = save(label, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])], ["N", 7],
                     [st, en, ax, *big])
        eval_vs_ort(label, model, {"x": x})
    y = x.copy()
    y[0, 0] = np.nan
    y[1, :] = -np.inf
    y[2, 1] = np.inf
    y[4, 0] = np.nan
    y[4, 5] = np.inf
    for op in ("ReduceMin", "ReduceMax", "ReduceLogSumExp", "ReduceL2", "ReduceSumSquare", "ReduceL1"):
        v = y.copy()
        if op == "ReduceLogSumExp":  # (ptq's L2 of these, summed in double, is finite where float32's is not)
            v[3, :] = [1e30, -1e30, 3e30, 0, 1, 2]
        label = f"{op}_nonfinite"
        eval_vs_ort(label, reduce_model(label, op, TensorProto.FLOAT, [6], 13, {"axes": [1]}), {"x": v})


def check_reduce_nan_anywhere():
    """ReduceMin and ReduceMax (float32, float64) with a NaN first, in the middle and last along the reduced axis
    ([1, NaN, 2], [NaN, 1, 3], [1, 2, NaN], and a row without one), over the last, a middle and the first axis after
    the batch, two axes, and every axis but the batch: NaN wherever one is read, as ONNX defines it and numpy's
    max/min compute it, on --device cpu and ref; so every NaN onnxruntime gives, ptq gives too. onnxruntime 1.32 is
    not consistent: float32 propagates a NaN only when it comes first in its reduction order ([NaN, 1, 3] gives
    NaN, [1, NaN, 2] and [1, 2, NaN] give 2), float64 over the last axis drops every NaN ([NaN, 1, 3] gives 3), and
    its vectorized paths give two equal rows of one tensor different results ([1, NaN, 2] twice: 2 and NaN)."""
    pats = np.array([[1, np.nan, 2], [np.nan, 1, 3], [1, 2, np.nan], [4, 5, 6]], np.float64)
    n = len(pats)
    for op in ("ReduceMin", "ReduceMax"):
        for dt in (TensorProto.FLOAT, TensorProto.DOUBLE):
            for shape, axes in (([3], [1]), ([2, 3], [2]), ([2, 3, 2], [2]), ([3, 2], [1]), ([2, 3], [1, 2]),
                                ([3, 2, 2], [1, 2, 3])):
                at = shape.index(3)  # the axis the patterns lie along
                x = np.zeros((n, *shape), np.float32)
                for i, p in enumerate(pats):
                    np.moveaxis(x[i], at, -1)[...] = p.astype(np.float32)
                want = (np.min if op == "ReduceMin" else np.max)(x.astype(np.float64), axis=tuple(axes))
                label = f"{op}_{np.dtype(NP_OF[dt]).name}_nan_anywhere_{'x'.join(map(str, shape))}_axes" + \
                    "".join(map(str, axes))
                model = reduce_model(label, op, dt, shape, 13, {"axes": axes})
                feeds = {"x": x.reshape(n, -1)}
                theirs = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
                with h5py.File(J(label + ".h5"), "w") as f:
                    f["x"] = feeds["x"]
                    f["labels"] = np.zeros(n, np.int64)
                for dev in ("cpu", "ref"):
                    rc, _, err = ptq("eval", "--model", model, "--data", J(label + ".h5"), "--device", dev,
                                     "--logits", J(label + ".npy"))
                    got = np.load(J(label + ".npy")).astype(np.float64).reshape(n, -1) if rc == 0 else None
                    ok = got is not None and np.array_equal(got, want.reshape(n, -1), equal_nan=True) and \
                        bool(np.isnan(got[np.isnan(theirs.reshape(n, -1))]).all())
                    check(f"{label} --device {dev}: NaN wherever one is read (numpy's), onnxruntime's NaNs too", ok,
                          err.strip()[-300:] if got is None else f"got {got.tolist()}, numpy {want.tolist()}, "
                          f"onnxruntime {theirs.tolist()}")


def unchecked_model(label, op, attrs, shape):
    """One node op on x [shape] float32, saved without ONNX's checker (which refuses what ptq must refuse too)."""
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name=label, **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = J(label + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def check_reduce_refused():
    """ReduceL2, ReduceLogSum and ReduceLogSumExp on int32: refused naming the node (exit 5), not truncated; an axis
    out of range or repeated: exit 6 (a shape error) naming the node."""
    for op in ("ReduceL2", "ReduceLogSum", "ReduceLogSumExp"):
        label = f"{op}_int32_refused"
        model = reduce_model(label, op, TensorProto.INT32, [3], 13, {"axes": [1]})
        rc, _, err = ptq("info", model)
        check(f"{label}: exit 5 naming the node", rc == 5 and label in err and "float32 and float64" in err,
              f"rc {rc}: {err.strip()[-300:]}")
    for op, attrs in (("ReduceMin", {"axes": [2]}), ("ReduceProd", {"axes": [1, -1]}), ("ReduceL1", {"axes": [-3]})):
        label = f"{op}_bad_axes"
        rc, _, err = ptq("info", unchecked_model(label, op, attrs, [2, 3]))
        check(f"{label}: exit 6 naming the node", rc == 6 and label in err and "out of range or repeated" in err,
              f"rc {rc}: {err.strip()[-300:]}")


def check_argmin(rng):
    """ArgMin (axis, keepdims, select_last_index) on [N, 4, 3, 5] of every type it takes, with ties (integers from a
    few values, repeated floats) and a NaN first in its row (the least, as numpy's argmin; onnxruntime drops one
    anywhere else); an axis out of range refused naming the node (exit 6)."""
    shape = (4, 3, 5)
    for dt in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64):
        x = rng.integers(-2, 3, (N, 60)).astype(np.float32)
        if dt == TensorProto.FLOAT:
            x[:N // 2] = rng.standard_normal((N // 2, 60))
            x[0, 0] = np.nan
        for attrs in ({"axis": 2}, {"axis": -1, "keepdims": 0}, {"axis": 1, "select_last_index": 1},
                      {"axis": -3, "keepdims": 0, "select_last_index": 1}):
            label = f"ArgMin_{np.dtype(NP_OF[dt]).name}" + "".join(f"_{k}{v}" for k, v in attrs.items())
            eval_vs_ort(label, reduce_model(label, "ArgMin", dt, shape, 13, attrs), {"x": x})
    label = "ArgMin_bad_axis"
    rc, _, err = ptq("info", reduce_model(label, "ArgMin", TensorProto.FLOAT, [3], 13, {"axis": 2}))
    check(f"{label}: exit 6 naming the node", rc == 6 and label in err and "out of range" in err,
          f"rc {rc}: {err.strip()[-300:]}")


def check_unary(rng):
    """The float32 elementwise functions on normal values, their domain's edges (+-1 for Asin, Acos and Atanh, 1 for
    Acosh, values outside them: NaN), +-0, +-Inf, NaN, and a ThresholdedRelu and Shrink tie at alpha (lambd); Cosh
    and Sinh up to where float32 overflows. Shrink and ThresholdedRelu with their defaults and torch's Hardshrink
    (bias 0) and Softshrink (bias = lambd)."""
    edges = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, np.inf, -np.inf, np.nan, 1e-7, 89.0, -89.0, 1.5,
                      -1.5], np.float32)
    x = (rng.standard_normal((N, 24)) * 2).astype(np.float32)
    x[:N // 2, :len(edges)] = edges  # (half the rows finite: eval refuses logits that hold a NaN in every row)
    inner = np.clip(rng.uniform(-1, 1, (N, 24)), -0.999, 0.999).astype(np.float32)
    cases = [("Tan", {}), ("Asin", {}), ("Acos", {}), ("Atan", {}), ("Sinh", {}), ("Cosh", {}), ("Asinh", {}),
             ("Acosh", {}), ("Atanh", {}), ("Sign", {}), ("ThresholdedRelu", {}), ("ThresholdedRelu", {"alpha": 0.5}),
             ("Shrink", {}), ("Shrink", {"lambd": 1.5}), ("Shrink", {"lambd": 0.5, "bias": 0.5})]
    for op, attrs in cases:
        dom = 1 + np.abs(inner) if op == "Acosh" else inner
        full = x.copy()
        if op in ("Asin", "Acos", "Atanh", "Acosh"):  # the rows without edges inside the domain
            full[N // 2:] = dom[N // 2:]
        for tag, v in (("", full), ("_inner", dom)):
            label = op + "".join(f"_{k}{a}" for k, a in attrs.items()) + tag
            model = save(label, [helper.make_node(op, ["x"], ["y"], name=label, **attrs)],
                         [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 24])], ["N", 24])
            eval_vs_ort(label, model, {"x": v})


def check_lrn(rng):
    """LRN on [N, 6, 2, 5] and [N, 3, 4, 5] (sizes 1, 3, 5 and 9, wider than C; AlexNet's alpha 1e-4, beta 0.75,
    bias 1 and others; onnxruntime refuses even sizes, which ONNX defines, and inputs not of rank 4); size 0, -3,
    missing or a float, and a rank-2 input, refused naming the node."""
    x = (rng.standard_normal((N, 60)) * 4).astype(np.float32)
    for shape in ((6, 2, 5), (3, 4, 5)):
        for attrs in ({"size": 5}, {"size": 3, "alpha": 1e-3, "beta": 1.0}, {"size": 1},
                      {"size": 9, "alpha": 0.1, "beta": 0.5, "bias": 2.0}):
            label = f"LRN_c{shape[0]}" + "".join(f"_{k}{v}" for k, v in attrs.items())
            eval_vs_ort(label, reduce_model(label, "LRN", TensorProto.FLOAT, shape, 13, attrs), {"x": x})
    for label, attrs, shape, want in (("LRN_size0", {"size": 0}, [2, 6, 10], "size 0 must be at least 1"),
                                      ("LRN_size_neg", {"size": -3}, [2, 6, 10], "size -3 must be at least 1"),
                                      ("LRN_no_size", {}, [2, 6, 10], "size attribute is missing"),
                                      ("LRN_size_float", {"size": 3.0}, [2, 6, 10], "size attribute is not an int"),
                                      ("LRN_rank2", {"size": 3}, [2, 60], "input is rank 2")):
        rc, _, err = ptq("info", unchecked_model(label, "LRN", attrs, shape))
        check(f"{label}: refused naming the node", rc in (4, 6) and label in err and want in err,
              f"rc {rc}: {err.strip()[-300:]}")


def main():
    rng = np.random.default_rng(14)
    check_reduces(rng)
    check_reduce_edges(rng)
    check_reduce_nan_anywhere()
    check_reduce_refused()
    check_argmin(rng)
    check_unary(rng)
    check_lrn(rng)
    # an embedding's L2 normalisation (torch's F.normalize: x / max(ReduceL2(x), eps)) after a Conv
    eps = numpy_helper.from_array(np.array(1e-12, np.float32), "eps")
    check_pipeline("pipeline_l2norm", conv_classifier(
        "pipe_l2norm", [helper.make_node("ReduceL2", ["c"], ["n"], axes=[1, 2, 3]),
                        helper.make_node("Max", ["n", "eps"], ["m"]), helper.make_node("Div", ["c", "m"], ["a"])],
        [helper.make_node("Identity", ["g"], ["y"])], inits=[eps]))
    # AlexNet's Conv, Relu, LRN
    check_pipeline("pipeline_lrn", conv_classifier(
        "pipe_lrn", [helper.make_node("Relu", ["c"], ["r"]),
                     helper.make_node("LRN", ["r"], ["a"], size=3, alpha=1e-2, beta=0.75, bias=1.0)],
        [helper.make_node("Identity", ["g"], ["y"])]))
    return finish("ops_reduce_test")


if __name__ == "__main__":
    sys.exit(main())
