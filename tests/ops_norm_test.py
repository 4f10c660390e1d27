#!/usr/bin/env python3
"""Normalisation and elementwise ops ptq refused, exit 5 "op X is not supported" (GroupNormalization at opsets 18 and
21, MeanVarianceNormalization, LpNormalization, LpPool, Hardmax, IsNaN, IsInf, Xor, BitShift): each in small models
built here with onnx.helper, and torch's nn.GroupNorm as its exporter writes it, run by `ptq eval` against onnxruntime;
hostile attributes and shapes refused naming the node; a small Conv classifier with each normalisation through
calibrate, plan, validate and a Q/DQ export that onnxruntime runs to validate's predictions (check_placements). Skips
(77) without onnx or onnxruntime. Run by ctest with PTQ_BIN and PTQ_SOURCE_DIR set."""
import io
import os
import subprocess
import sys

from ptqtest import check, check_placements, finish

try:
    import h5py
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from ops_breadth_test import conv_classifier
    from ops_shape_test import J, refused, run_eval, save, x_info
except ImportError as e:  # pragma: no cover
    print(f"ops_norm_test: skipped ({e})")
    sys.exit(77)

N = 24


def eval_vs_ort(label, model, feeds, tol=1e-5, env=None, exact=False):
    """ptq eval's logits within tol (absolute plus relative) of onnxruntime's on every element, or equal; NaN where
    onnxruntime gives NaN. An onnxruntime build without a kernel for the case (the device machine's lacks BitShift)
    skips it, saying so: there is nothing to compare with."""
    try:
        want, got, err = run_eval(label, model, feeds, env)
    except Exception as e:  # onnxruntime's NotImplemented is not importable by a stable name
        if "NOT_IMPLEMENTED" not in str(e) and type(e).__name__ != "NotImplemented":
            raise
        print(f"skip {label}: this onnxruntime has no kernel for it ({str(e).strip()[:160]})")
        return
    ok = got is not None and got.size == want.size
    why = err.strip()[-300:] if got is None else f"shape {got.shape}, onnxruntime's {want.shape}"
    if ok:
        got = got.reshape(want.shape)
        nan = np.isnan(want.astype(np.float64))
        ok = bool(np.array_equal(np.isnan(got.astype(np.float64)), nan))
        g, w = got[~nan].astype(np.float64), want[~nan].astype(np.float64)
        ok = ok and (bool(np.array_equal(g, w)) if exact else bool(np.all(np.abs(g - w) <= tol * (1 + np.abs(w)))))
        why = f"NaN at {np.isnan(got.astype(np.float64)).sum()} (onnxruntime {nan.sum()}), max |diff| " + \
            f"{np.abs(np.where(g == w, 0, g - w)).max() if g.size else 0}"
    check(f"{label}: eval {'equal to' if exact else f'within {tol:g} of'} onnxruntime", ok, why)


def flat_model(label, nodes, shape, inits=(), opset=13, out_shape=None, in_type=TensorProto.FLOAT,
               out_type=TensorProto.FLOAT):
    """x [N, prod(shape[1:])] (no image: fed as stored) reshaped to shape as 'x4', nodes reading it and writing 'z',
    then Flatten to y."""
    dims = numpy_helper.from_array(np.array((-1, *shape[1:]), np.int64), "dims")
    graph = [helper.make_node("Reshape", ["x", "dims"], ["x4"])] + nodes + [helper.make_node("Flatten", ["z"], ["y"])]
    return save(label, graph, [x_info(["N", int(np.prod(shape[1:]))], in_type)], out_shape, [dims, *inits],
                opset=opset, out_type=out_type)


def feed(rng, shape, nan=False):
    x = (rng.standard_normal((shape[0], int(np.prod(shape[1:])))) * 3 + 1).astype(np.float32)
    if nan:
        x[1, 2] = np.nan
    return {"x": x}


def check_group_norm(rng):
    """GroupNormalization at opset 18 (scale and bias per group) and 21 (per channel): groups 1, 2, 3 and C on
    [N, 6, 4, 5], a rank-2 and a rank-3 X, epsilon, a NaN (its group's outputs NaN, the others not); hostile
    num_groups, scale/bias lengths, rank and stash_type refused naming the node."""
    for opset in (18, 21):
        for shape, groups, eps in [((N, 6, 4, 5), 1, 1e-5), ((N, 6, 4, 5), 2, 1e-5), ((N, 6, 4, 5), 3, 0.1),
                                   ((N, 6, 4, 5), 6, 1e-5), ((N, 6), 3, 1e-5), ((N, 4, 7), 2, 1e-3)]:
            c = shape[1]
            n_sb = c if opset >= 21 else groups
            s = numpy_helper.from_array((rng.standard_normal(n_sb) + 1).astype(np.float32), "s")
            b = numpy_helper.from_array(rng.standard_normal(n_sb).astype(np.float32), "b")
            label = f"groupnorm{opset}_{'x'.join(map(str, shape[1:]))}_g{groups}"
            node = helper.make_node("GroupNormalization", ["x4", "s", "b"], ["z"], num_groups=groups, epsilon=eps)
            model = flat_model(label, [node], shape, [s, b], opset=opset)
            # a rank-2 X's groups hold 2 values: onnxruntime's float32 variance loses up to 3e-5 there (ptq's, in
            # double, is within 2e-7 of numpy's float64)
            eval_vs_ort(label, model, feed(rng, shape), tol=1e-4 if len(shape) == 2 else 1e-5)
            if groups == 2 and len(shape) == 4:
                eval_vs_ort(label + "_nan", model, feed(rng, shape, nan=True))
    shape = (N, 6, 2, 2)
    bad = [("missing", {}, 18, 2, ["num_groups", "missing"]), ("zero", {"num_groups": 0}, 18, 2, ["num_groups 0"]),
           ("negative", {"num_groups": -2}, 18, 2, ["num_groups -2"]),
           ("nodivide", {"num_groups": 4}, 18, 4, ["num_groups 4", "divide"]),
           ("float", {"num_groups": 2.0}, 18, 2, ["num_groups", "not an int"]),
           ("perchannel18", {"num_groups": 2}, 18, 6, ["scale", "[2]"]),
           ("pergroup21", {"num_groups": 2}, 21, 2, ["scale", "[6]"]),
           ("stash0", {"num_groups": 2, "stash_type": 0}, 21, 6, ["stash_type 0"])]
    for name, attrs, opset, n_sb, words in bad:
        s = numpy_helper.from_array(np.ones(n_sb, np.float32), "s")
        b = numpy_helper.from_array(np.zeros(n_sb, np.float32), "b")
        node = helper.make_node("GroupNormalization", ["x4", "s", "b"], ["z"], name="bad", **attrs)
        refused(f"groupnorm_{name}", flat_model(f"groupnorm_bad_{name}", [node], shape, [s, b], opset=opset),
                feed(rng, shape), words)
    s = numpy_helper.from_array(np.ones(2, np.float32), "s")
    b = numpy_helper.from_array(np.zeros(2, np.float32), "b")
    nodes = [helper.make_node("Flatten", ["x"], ["x4"], axis=0),
             helper.make_node("Reshape", ["x4", "flat"], ["x1"]),
             helper.make_node("GroupNormalization", ["x1", "s", "b"], ["z1"], name="bad", num_groups=1),
             helper.make_node("Reshape", ["z1", "back"], ["y"])]
    inits = [s, b, numpy_helper.from_array(np.array([-1], np.int64), "flat"),
             numpy_helper.from_array(np.array([N, 12], np.int64), "back")]
    refused("groupnorm_rank1", save("groupnorm_rank1", nodes, [x_info([N, 12])], [N, 12], inits, opset=18),
            feed(rng, (N, 12)), ["rank >= 2"])


def check_groupnorm_no_channels(rng):
    """GroupNormalization of X with no channels ([1, 0, 4], sliced from the input) and num_groups 2^62, which divides
    0 (opset 21: scale and bias [0]): nothing to compute, so eval ends at once with the other Concat input as the
    output (the reference walked 2^62 empty groups, a hang)."""
    nodes = [helper.make_node("Slice", ["x4", "c0", "c0", "ax1"], ["e"]),
             helper.make_node("GroupNormalization", ["e", "s", "b"], ["g"], num_groups=1 << 62, name="gn"),
             helper.make_node("Concat", ["g", "x4"], ["z"], axis=1)]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "c0"),
             numpy_helper.from_array(np.array([1], np.int64), "ax1"),
             numpy_helper.from_array(np.ones(0, np.float32), "s"),
             numpy_helper.from_array(np.zeros(0, np.float32), "b")]
    model = flat_model("groupnorm_no_channels", nodes, (1, 3, 4), inits, opset=21)
    x = feed(rng, (1, 3, 4))["x"]
    data = J("groupnorm_no_channels.h5")
    with h5py.File(data, "w") as f:
        f["x"] = x
        f["labels"] = np.zeros(1, np.int64)
    try:
        p = subprocess.run([os.environ["PTQ_BIN"], "eval", "--model", model, "--data", data, "--logits",
                            J("groupnorm_no_channels.npy")], capture_output=True, text=True, timeout=30)
        ok, why = p.returncode == 0, p.stderr.strip()[-300:]
        if ok:
            got = np.load(J("groupnorm_no_channels.npy"))
            ok, why = bool(np.array_equal(got.reshape(x.shape), x)), str(got)
    except subprocess.TimeoutExpired:
        ok, why = False, "still running after 30 s"
    check("groupnorm_no_channels: num_groups 2^62 over 0 channels ends at once", ok, why)


def check_batch_in_group(rng):
    """A model whose batch is a normalised axis (x [N, 6] unsqueezed to [1, N, 6]: GroupNormalization's channels are
    the samples): each sample's output depends on every other's, so ptq must not run it in passes of rows
    (PTQ_PASS_ROWS=5), which would take each pass's own statistics."""
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes0")
    for groups in (1, 3):
        s = numpy_helper.from_array(np.ones(groups, np.float32), "s")
        b = numpy_helper.from_array(np.zeros(groups, np.float32), "b")
        nodes = [helper.make_node("Unsqueeze", ["x", "axes0"], ["x3"]),
                 helper.make_node("GroupNormalization", ["x3", "s", "b"], ["z"], num_groups=groups),
                 helper.make_node("Squeeze", ["z", "axes0"], ["y"])]
        model = save(f"groupnorm_batch_g{groups}", nodes, [x_info(["N", 6])], ["N", 6], [axes, s, b], opset=18)
        x = (rng.standard_normal((N, 6)) * 2 + 1).astype(np.float32)
        eval_vs_ort(f"groupnorm_batch_g{groups}_passes", model, {"x": x}, env=dict(os.environ, PTQ_PASS_ROWS="5"))


def check_mvn(rng):
    """MeanVarianceNormalization at opsets 9 and 13: the default axes [0, 2, 3] (the batch's too), [1], [2, 3],
    [-1], [0, 1, 2, 3], on ranks 2 to 4; a constant slice (0, as ONNX's 1e-9 makes it; onnxruntime's NaN), a NaN;
    hostile axes refused naming the node."""
    cases = [((N, 3, 4, 5), None, 13), ((N, 3, 4, 5), None, 9), ((N, 3, 4, 5), [1], 13), ((N, 3, 4, 5), [2, 3], 13),
             ((N, 3, 4, 5), [-1], 13), ((N, 3, 4, 5), [0, 1, 2, 3], 13), ((N, 6), [1], 13), ((N, 4, 5), [0, 2], 13),
             ((N, 4, 5), [-1, 1], 9)]
    for shape, axes, opset in cases:
        label = f"mvn{opset}_{'x'.join(map(str, shape[1:]))}_" + ("dflt" if axes is None else
                                                                  "_".join(str(a) for a in axes).replace("-", "m"))
        attrs = {} if axes is None else {"axes": axes}
        model = flat_model(label, [helper.make_node("MeanVarianceNormalization", ["x4"], ["z"], **attrs)], shape,
                           opset=opset)
        eval_vs_ort(label, model, feed(rng, shape))
        if axes is None:
            eval_vs_ort(label + "_passes", model, feed(rng, shape), env=dict(os.environ, PTQ_PASS_ROWS="5"))
    shape = (N, 3, 4)
    model = flat_model("mvn_nan", [helper.make_node("MeanVarianceNormalization", ["x4"], ["z"], axes=[2])], shape)
    eval_vs_ort("mvn_nan", model, feed(rng, shape, nan=True))
    x = feed(rng, shape)["x"]
    x[3, 4:8] = 2.5
    _, got, err = run_eval("mvn_const", model, {"x": x})
    check("mvn_const: a constant slice is 0 (ONNX's (x - mean) / (std + 1e-9)), the others normalised",
          got is not None and np.all(got[3, 4:8] == 0) and abs(float(got[3, :4].std()) - 1) < 1e-3,
          err.strip()[-300:] if got is None else str(got[3, :8]))
    bad = [("axis_big", [3], ["axis 3", "out of range"]), ("axis_neg", [-4], ["axis -4", "out of range"]),
           ("twice", [1, -2], ["twice"]), ("empty", [], ["empty"]),
           ("default_rank3", None, ["axis 3", "default axes"])]
    for name, axes, words in bad:
        attrs = {} if axes is None or not axes else {"axes": axes}
        node = helper.make_node("MeanVarianceNormalization", ["x4"], ["z"], name="bad", **attrs)
        if axes == []:  # an empty INTS attribute made by hand: newer onnx cannot infer a type from []
            node.attribute.append(onnx.AttributeProto(name="axes", type=onnx.AttributeProto.INTS))
        refused(f"mvn_{name}", flat_model(f"mvn_bad_{name}", [node], shape), feed(rng, shape), words)


def check_lpnorm(rng):
    """LpNormalization (opset 1's schema, run at 13) with p 1 and 2 (the default) along axes 0 (the batch's), 1, -1
    and the default, on ranks 2 to 4, in passes of 5 too; a zero vector (0s, as onnxruntime gives), a NaN; hostile p
    and axis refused naming the node."""
    cases = [((N, 6), {}), ((N, 6), {"p": 1}), ((N, 6), {"axis": 0, "p": 2}), ((N, 3, 4), {"axis": 1, "p": 1}),
             ((N, 3, 4), {"axis": -1, "p": 2}), ((N, 2, 3, 4), {"axis": 2, "p": 1}), ((N, 2, 3, 4), {"axis": 0})]
    for shape, attrs in cases:
        label = f"lpnorm_{'x'.join(map(str, shape[1:]))}" + "".join(f"_{k}{v}" for k, v in attrs.items())
        model = flat_model(label, [helper.make_node("LpNormalization", ["x4"], ["z"], **attrs)], shape)
        x = feed(rng, shape)
        eval_vs_ort(label, model, x)
        eval_vs_ort(label + "_passes", model, x, env=dict(os.environ, PTQ_PASS_ROWS="5"))
    shape = (N, 3, 4)
    for p in (1, 2):
        model = flat_model(f"lpnorm_zero_p{p}", [helper.make_node("LpNormalization", ["x4"], ["z"], p=p)], shape)
        x = feed(rng, shape, nan=True)
        x["x"][5, 4:8] = 0
        eval_vs_ort(f"lpnorm_zero_nan_p{p}", model, x)
    for name, attrs, words in [("p3", {"p": 3}, ["p 3", "1 or 2"]), ("p0", {"p": 0}, ["p 0"]),
                               ("axis3", {"axis": 3}, ["axis 3", "out of range"]),
                               ("axis_m4", {"axis": -4}, ["axis -4", "out of range"])]:
        node = helper.make_node("LpNormalization", ["x4"], ["z"], name="bad", **attrs)
        refused(f"lpnorm_{name}", flat_model(f"lpnorm_bad_{name}", [node], shape), feed(rng, shape), words)


def check_lppool(rng):
    """LpPool with p 1, 2 (the default) and 3 over 1-D, 2-D and 3-D windows: strides, pads, auto_pad SAME_UPPER and
    SAME_LOWER at opset 11, dilations and ceil_mode at 18, opset 7 (LpPool-2); a NaN; hostile p, kernel and pads
    refused naming the node."""
    cases = [((N, 2, 9), {"kernel_shape": [3]}, 11), ((N, 3, 6, 5), {"kernel_shape": [2, 2], "p": 1}, 11),
             ((N, 3, 6, 5), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1], "p": 3}, 11),
             ((N, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, 11),
             ((N, 2, 6, 6), {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER", "p": 1}, 11),
             ((N, 2, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 1], "strides": [1, 2]}, 18),
             ((N, 2, 7, 6), {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, 18),
             ((N, 2, 3, 4, 4), {"kernel_shape": [2, 2, 2], "p": 2}, 11), ((N, 2, 5, 5), {"kernel_shape": [5, 5]}, 7)]
    for shape, attrs, opset in cases:
        label = f"lppool{opset}_{'x'.join(map(str, shape[1:]))}" + "".join(
            f"_{k}{'x'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in attrs.items())
        model = flat_model(label, [helper.make_node("LpPool", ["x4"], ["z"], **attrs)], shape, opset=opset)
        eval_vs_ort(label, model, feed(rng, shape, nan=len(shape) == 4))
    shape = (N, 2, 4, 4)
    for name, attrs, words in [("p0", {"kernel_shape": [2, 2], "p": 0}, ["p 0", "at least 1"]),
                               ("p_neg", {"kernel_shape": [2, 2], "p": -2}, ["p -2"]),
                               ("no_kernel", {}, ["kernel_shape"]),
                               ("kernel_big", {"kernel_shape": [5, 2]}, ["bad"]),
                               ("pads_neg", {"kernel_shape": [2, 2], "pads": [-1, 0, 0, 0]}, ["pads"])]:
        node = helper.make_node("LpPool", ["x4"], ["z"], name="bad", **attrs)
        refused(f"lppool_{name}", flat_model(f"lppool_bad_{name}", [node], shape), feed(rng, shape), words)


def check_hardmax(rng):
    """Hardmax at opset 13 (one axis: -1 by default, 0 (the batch's), 1, 2) and 11 (the block from axis on: 1 by
    default, 0, 2, -1), whole and in passes of 5, with ties (the first index wins), equal to onnxruntime; a row with
    NaNs one-hot at its first NaN, as ONNX's reference (numpy's argmax) gives (onnxruntime gives a row of 0s); axes
    past the rank refused naming the node."""
    cases = [((N, 3, 4), {}, 13), ((N, 3, 4), {"axis": 0}, 13), ((N, 3, 4), {"axis": 1}, 13),
             ((N, 2, 3, 4), {"axis": 2}, 13), ((N, 3, 4), {}, 11), ((N, 3, 4), {"axis": 0}, 11),
             ((N, 2, 3, 4), {"axis": 2}, 11), ((N, 2, 3, 4), {"axis": -1}, 11), ((N, 6), {}, 13)]
    for shape, attrs, opset in cases:
        label = f"hardmax{opset}_{'x'.join(map(str, shape[1:]))}" + "".join(f"_{k}{v}" for k, v in attrs.items())
        model = flat_model(label, [helper.make_node("Hardmax", ["x4"], ["z"], **attrs)], shape, opset=opset)
        x = np.round(feed(rng, shape)["x"])  # whole numbers: ties in most rows
        eval_vs_ort(label, model, {"x": x}, exact=True)
        eval_vs_ort(label + "_passes", model, {"x": x}, exact=True, env=dict(os.environ, PTQ_PASS_ROWS="5"))
    x = np.round(feed(rng, (N, 6))["x"])
    x[2, [1, 4]] = np.nan
    x[3, 5] = np.nan
    model = flat_model("hardmax_nan", [helper.make_node("Hardmax", ["x4"], ["z"])], (N, 6))
    _, got, err = run_eval("hardmax_nan", model, {"x": x})
    want = np.eye(6, dtype=np.float32)[np.argmax(x, 1)]
    check("hardmax_nan: one-hot at the first NaN or largest value, as numpy's argmax",
          got is not None and np.array_equal(got.reshape(want.shape), want), err.strip()[-300:])
    shape = (N, 3, 4)
    for name, attrs, opset in [("axis3", {"axis": 3}, 13), ("axis_m4", {"axis": -4}, 13),
                               ("axis3_op11", {"axis": 3}, 11)]:
        node = helper.make_node("Hardmax", ["x4"], ["z"], name="bad", **attrs)
        refused(f"hardmax_{name}", flat_model(f"hardmax_bad_{name}", [node], shape, opset=opset), feed(rng, shape),
                [f"axis {attrs['axis']}", "out of range"])


def check_isnan_isinf(rng):
    """IsNaN (opsets 9, 13) and IsInf (10; detect_positive and detect_negative each 0 or 1, and 2 as true) on float32
    and float64 holding NaN, +-Inf, +-0, the largest float32 and ordinary values, equal to onnxruntime (the bool output
    cast to float); an int32 input refused naming the node."""
    shape = (N, 8)
    x = feed(rng, shape)["x"]
    x[:, :6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(np.float32).max]
    rng.shuffle(x, axis=1)
    for dt, dname in ((TensorProto.FLOAT, "f32"), (TensorProto.DOUBLE, "f64")):
        cases = [("IsNaN", {}, 9), ("IsNaN", {}, 13), ("IsInf", {}, 10), ("IsInf", {"detect_positive": 0}, 13),
                 ("IsInf", {"detect_negative": 0}, 13), ("IsInf", {"detect_positive": 0, "detect_negative": 0}, 13),
                 ("IsInf", {"detect_positive": 2, "detect_negative": 1}, 13)]
        for op, attrs, opset in cases:
            label = f"{op.lower()}{opset}_{dname}" + "".join(f"_{k}{v}" for k, v in attrs.items())
            nodes = [helper.make_node("Cast", ["x4"], ["xd"], to=dt), helper.make_node(op, ["xd"], ["b"], **attrs),
                     helper.make_node("Cast", ["b"], ["z"], to=TensorProto.FLOAT)]
            eval_vs_ort(label, flat_model(label, nodes, shape, opset=opset), {"x": x}, exact=True)
    for op in ("IsNaN", "IsInf"):
        nodes = [helper.make_node("Cast", ["x4"], ["xi"], to=TensorProto.INT32),
                 helper.make_node(op, ["xi"], ["b"], name="bad"), helper.make_node("Cast", ["b"], ["z"], to=1)]
        refused(f"{op.lower()}_int32", flat_model(f"{op.lower()}_int32", nodes, shape), feed(rng, shape),
                ["int32", "float32 and float64"])


def check_xor(rng):
    """Xor of two masks (x > 0 and x < 0.5 of another row shape) with numpy broadcasting ([N, 3, 4] with [N, 3, 4],
    [4], [3, 1] and [N, 1, 4]), equal to onnxruntime (the bool output cast to float); a float input refused naming the
    node."""
    shape = (N, 3, 4)
    for other in ((N, 3, 4), (4,), (3, 1), (N, 1, 4)):
        label = "xor_" + "x".join(map(str, other)).replace(str(N), "N")
        t = numpy_helper.from_array((rng.standard_normal(other[1:] if other[0] == N else other)).astype(np.float32),
                                    "t")
        nodes = [helper.make_node("Greater", ["x4", "zero"], ["a"])]
        if other[0] == N:  # another slice of the same sample: x4[:, :1] (broadcast [N, 1, 4]) or x4 reversed
            nodes += [helper.make_node("Slice", ["x4", "s0", "s1", "s_ax"], ["o"]) if other[1] == 1 else
                      helper.make_node("Neg", ["x4"], ["o"])]
        else:
            nodes += [helper.make_node("Identity", ["t"], ["o"])]
        nodes += [helper.make_node("Less", ["o", "half"], ["b"]), helper.make_node("Xor", ["a", "b"], ["c"]),
                  helper.make_node("Cast", ["c"], ["z"], to=TensorProto.FLOAT)]
        inits = [t, numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
                 numpy_helper.from_array(np.full(1, 0.5, np.float32), "half"),
                 numpy_helper.from_array(np.array([0], np.int64), "s0"),
                 numpy_helper.from_array(np.array([1], np.int64), "s1"),
                 numpy_helper.from_array(np.array([1], np.int64), "s_ax")]
        eval_vs_ort(label, flat_model(label, nodes, shape, inits), feed(rng, shape), exact=True)
    nodes = [helper.make_node("Xor", ["x4", "x4"], ["c"], name="bad"),
             helper.make_node("Cast", ["c"], ["z"], to=TensorProto.FLOAT)]
    refused("xor_float", flat_model("xor_float", nodes, shape), feed(rng, shape), ["float32", "takes bool"])


def check_bitshift(rng):
    """BitShift LEFT and RIGHT on uint8, uint16, uint32 and uint64 (cast from the float input), values shifted by
    amounts under the width from another column (broadcast [N, 4] by [N, 1] and by [4]), equal to onnxruntime; shifts
    of the width or more give 0 (numpy's rule, ONNX's reference; onnxruntime's C++ shift is undefined there); mixed or
    signed types and a missing or unknown direction refused naming the node."""
    shape = (N, 5)
    types = [(TensorProto.UINT8, np.uint8, 8), (TensorProto.UINT16, np.uint16, 16), (TensorProto.UINT32, np.uint32, 32),
             (TensorProto.UINT64, np.uint64, 64)]
    for dt, npt, bits in types:
        for direction in ("LEFT", "RIGHT"):
            for amounts in ("column", "row"):
                label = f"bitshift_{npt.__name__}_{direction.lower()}_{amounts}"
                x = np.zeros((N, 5), np.float32)
                x[:, :4] = rng.integers(0, 256, (N, 4))
                x[:, 4] = rng.integers(0, 8, N)  # uint8's LEFT drops the high bits, as onnxruntime's does
                row = numpy_helper.from_array(np.array([0, 1, 3, 7], npt), "row")
                nodes = [helper.make_node("Cast", ["x4"], ["xu"], to=dt),
                         helper.make_node("Slice", ["xu", "c0", "c4", "ax1"], ["v"])]
                if amounts == "column":
                    nodes.append(helper.make_node("Slice", ["xu", "c4", "c5", "ax1"], ["s"]))
                else:
                    nodes.append(helper.make_node("Identity", ["row"], ["s"]))
                nodes += [helper.make_node("BitShift", ["v", "s"], ["r"], direction=direction),
                          helper.make_node("Cast", ["r"], ["z"], to=TensorProto.FLOAT)]
                inits = [row] + [numpy_helper.from_array(np.array([v], np.int64), n)
                                 for n, v in (("c0", 0), ("c4", 4), ("c5", 5), ("ax1", 1))]
                eval_vs_ort(label, flat_model(label, nodes, shape, inits), {"x": x}, exact=True)
        x = np.zeros((N, 5), np.float32)
        x[:, :4] = rng.integers(1, 256, (N, 4))
        x[:, 4] = bits + rng.integers(0, 3, N)
        for direction in ("LEFT", "RIGHT"):
            label = f"bitshift_{npt.__name__}_{direction.lower()}_wide"
            nodes = [helper.make_node("Cast", ["x4"], ["xu"], to=dt),
                     helper.make_node("Slice", ["xu", "c0", "c4", "ax1"], ["v"]),
                     helper.make_node("Slice", ["xu", "c4", "c5", "ax1"], ["s"]),
                     helper.make_node("BitShift", ["v", "s"], ["r"], direction=direction),
                     helper.make_node("Cast", ["r"], ["z"], to=TensorProto.FLOAT)]
            inits = [numpy_helper.from_array(np.array([v], np.int64), n)
                     for n, v in (("c0", 0), ("c4", 4), ("c5", 5), ("ax1", 1))]
            _, got, err = run_eval(label, flat_model(label, nodes, shape, inits), {"x": x})
            check(f"{label}: shifts of {bits} bits or more give 0", got is not None and not np.any(got),
                  err.strip()[-300:] if got is None else str(got[:2]))
    bad = [("mixed", TensorProto.UINT8, TensorProto.UINT16, {"direction": "LEFT"}, ["uint8 and uint16"]),
           ("signed", TensorProto.INT32, TensorProto.INT32, {"direction": "LEFT"}, ["int32 and int32"]),
           ("no_direction", TensorProto.UINT8, TensorProto.UINT8, {}, ["direction", "missing"]),
           ("up", TensorProto.UINT8, TensorProto.UINT8, {"direction": "UP"}, ["'UP'", "LEFT or RIGHT"])]
    for name, ta, tb, attrs, words in bad:
        nodes = [helper.make_node("Cast", ["x4"], ["a"], to=ta), helper.make_node("Cast", ["x4"], ["b"], to=tb),
                 helper.make_node("BitShift", ["a", "b"], ["r"], name="bad", **attrs),
                 helper.make_node("Cast", ["r"], ["z"], to=TensorProto.FLOAT)]
        refused(f"bitshift_{name}", flat_model(f"bitshift_bad_{name}", nodes, shape), feed(rng, shape), words)


def check_empty_wide(rng):
    """MeanVarianceNormalization, LpNormalization, Hardmax, Softmax and LogSoftmax of an empty X whose other axis is
    long ([1, 0, 2^40] from ConstantOfShape, normalised along the empty axis): nothing to compute, so eval ends at once
    (the references walked the 2^40 rows of no values, a hang)."""
    for op, attrs in (("MeanVarianceNormalization", {"axes": [1]}), ("LpNormalization", {"axis": 1}),
                      ("Hardmax", {"axis": 1}), ("Softmax", {"axis": 1}), ("LogSoftmax", {"axis": 1})):
        label = f"{op.lower()}_empty_wide"
        value = helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])
        nodes = [helper.make_node("ConstantOfShape", ["shp"], ["e"], value=value),
                 helper.make_node(op, ["e"], ["g"], name="n", **attrs),
                 helper.make_node("ReduceSum", ["g"], ["s"], keepdims=0), helper.make_node("Add", ["x", "s"], ["y"])]
        model = save(label, nodes, [x_info(["N", 4])], ["N", 4],
                     [numpy_helper.from_array(np.array([1, 0, 1 << 40], np.int64), "shp")])
        x = feed(rng, (2, 4))["x"]
        data = J(label + ".h5")
        with h5py.File(data, "w") as f:
            f["x"] = x
            f["labels"] = np.zeros(len(x), np.int64)
        try:
            p = subprocess.run([os.environ["PTQ_BIN"], "eval", "--model", model, "--data", data, "--logits",
                                J(label + ".npy")], capture_output=True, text=True, timeout=30)
            ok, why = p.returncode == 0, p.stderr.strip()[-300:]
            if ok:
                got = np.load(J(label + ".npy"))
                ok, why = bool(np.array_equal(got.reshape(x.shape), x)), str(got)
        except subprocess.TimeoutExpired:
            ok, why = False, "still running after 30 s"
        check(f"{label}: an empty [1, 0, 2^40] X ends at once", ok, why)


def check_torch_group_norm(rng):
    """torch's nn.GroupNorm as its exporter writes it: opset 17 has no GroupNormalization, so torch 1.13 to 2.x write
    Reshape, InstanceNormalization (one group a channel), Reshape, Mul and Add; this torch's exporter writes no opset
    18, so the opset-18 op is the helper-built cases' above. A diffusion UNet's block: Conv, GroupNorm, SiLU."""
    try:
        import torch
    except ImportError:
        print("torch group norm: skipped (no torch)")
        return
    torch.manual_seed(0)
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.GroupNorm(4, 8),
                                            torch.nn.SiLU(), torch.nn.Conv2d(8, 4, 3),
                                            torch.nn.GroupNorm(2, 4, affine=False), torch.nn.Flatten())

        def forward(self, x):
            return self.body(x.reshape(-1, 4, 6, 6))
    net = Block()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    x = (rng.standard_normal((N, 144)) * 2).astype(np.float32)
    path = J("torch_groupnorm17.onnx")
    buf = io.BytesIO()
    torch.onnx.export(net, torch.from_numpy(x[:2]), buf, opset_version=17, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    ops = {n.op_type for n in onnx.load(path).graph.node}
    check("torch_groupnorm17: exported InstanceNormalization", "InstanceNormalization" in ops, str(sorted(ops)))
    eval_vs_ort("torch_groupnorm17", path, {"x": x})
    eval_vs_ort("torch_groupnorm17_passes", path, {"x": x}, env=dict(os.environ, PTQ_PASS_ROWS="5"))
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    _, got, err = run_eval("torch_groupnorm17_torch", path, {"x": x})
    check("torch_groupnorm17: eval within 1e-4 of torch", got is not None and
          bool(np.all(np.abs(got.reshape(want.shape) - want) <= 1e-4 * (1 + np.abs(want)))), err.strip()[-300:])


def check_pipeline(label, model):
    """eval against onnxruntime, then calibrate, and for placements trt, ort and all: plan, validate, export
    --format qdq, onnxruntime on the export making validate's predictions."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((96, 64)).astype(np.float32)
    eval_vs_ort(label, model, {"x": x})
    check_placements(label, model, J(label + ".h5"), {"x": x}, J, placements=("trt", "ort", "all"))


def main():
    rng = np.random.default_rng(17)
    check_group_norm(rng)
    check_batch_in_group(rng)
    check_groupnorm_no_channels(rng)
    check_torch_group_norm(rng)
    check_mvn(rng)
    check_lpnorm(rng)
    check_lppool(rng)
    check_hardmax(rng)
    check_isnan_isinf(rng)
    check_xor(rng)
    check_bitshift(rng)
    check_empty_wide(rng)
    # [N, 4, 6, 6] -> GroupNormalization (2 groups; opset 18) -> Relu
    gs = numpy_helper.from_array(np.array([1.5, 0.5], np.float32), "gs")
    gb = numpy_helper.from_array(np.array([0.25, -0.25], np.float32), "gbias")
    check_pipeline("pipeline_groupnorm", conv_classifier(
        "pipe_groupnorm", [helper.make_node("GroupNormalization", ["c", "gs", "gbias"], ["n"], num_groups=2),
                           helper.make_node("Relu", ["n"], ["a"])],
        [helper.make_node("Identity", ["g"], ["y"])], opset=18, inits=[gs, gb]))
    # [N, 4, 6, 6] -> MeanVarianceNormalization over each channel's 6 x 6 -> Relu
    check_pipeline("pipeline_mvn", conv_classifier(
        "pipe_mvn", [helper.make_node("MeanVarianceNormalization", ["c"], ["n"], axes=[2, 3]),
                     helper.make_node("Relu", ["n"], ["a"])], [helper.make_node("Identity", ["g"], ["y"])]))
    # [N, 4, 6, 6] -> LpNormalization (L2) across the channels -> Relu
    check_pipeline("pipeline_lpnorm", conv_classifier(
        "pipe_lpnorm", [helper.make_node("LpNormalization", ["c"], ["n"], axis=1, p=2),
                        helper.make_node("Relu", ["n"], ["a"])], [helper.make_node("Identity", ["g"], ["y"])]))
    # [N, 4, 6, 6] -> Relu -> LpPool (L2, 2 x 2 windows, stride 2) -> [N, 4, 3, 3] -> Tile to [N, 4, 6, 6]
    reps = numpy_helper.from_array(np.array([1, 1, 2, 2], np.int64), "reps")
    check_pipeline("pipeline_lppool", conv_classifier(
        "pipe_lppool", [helper.make_node("Relu", ["c"], ["r"]),
                        helper.make_node("LpPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                        helper.make_node("Tile", ["p", "reps"], ["a"])],
        [helper.make_node("Identity", ["g"], ["y"])], inits=[reps]))
    return finish("ops_norm_test")


if __name__ == "__main__":
    sys.exit(main())
