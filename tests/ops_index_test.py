#!/usr/bin/env python3
"""Indexing ops exported models contain that ptq refused, exit 5 "op X is not supported" (TopK, GatherElements,
ScatterElements and Scatter, GatherND, OneHot, EyeLike, CastLike, ReverseSequence): each in small models built here
with onnx.helper and in torch-exported ones (a top-k pooling head; torch.gather and scatter_add), run by `ptq eval`
against onnxruntime (integer paths bit-exact); hostile attributes, shapes and indices refused naming the node; small
Conv classifiers through calibrate, plan, validate and a Q/DQ export that onnxruntime runs to validate's predictions
(check_placements). Skips (77) without onnx or onnxruntime. Run by ctest with PTQ_BIN and PTQ_SOURCE_DIR set."""
import io
import os
import sys

from ptqtest import check, check_placements, finish

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from ops_breadth_test import conv_classifier
    from ops_shape_test import J, eval_vs_ort, refused, save, x_info
except ImportError as e:  # pragma: no cover
    print(f"ops_index_test: skipped ({e})")
    sys.exit(77)

N = 24
PASSES = dict(os.environ, PTQ_PASS_ROWS="5")


def I64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def to_float(src, dst):
    return helper.make_node("Cast", [src], [dst], to=TensorProto.FLOAT)


def check_topk(rng):
    """TopK on [N, 4, 6] (fed flat) over each axis, largest and smallest, with ties (lower index first), Values and
    Indices both; k from an initializer, a folded shape computation, the attribute before opset 10; float32, float64,
    int64 and int32 (bit-exact); k 0 and the whole axis; k the batch size along the batch (mixes samples: runs whole
    in passes too); k that is data (known at the run); k out of range, hostile axes refused naming the node."""
    x = np.round(rng.standard_normal((N, 24)) * 2).astype(np.float32)  # integers: many ties
    dims = I64("dims", [-1, 4, 6])
    head = [helper.make_node("Reshape", ["x", "dims"], ["x3"])]
    tail = [to_float("i", "fi"), helper.make_node("Flatten", ["v"], ["fv"]),
            helper.make_node("Flatten", ["fi"], ["ff"]), helper.make_node("Concat", ["fv", "ff", "x"], ["y"], axis=1)]
    cases = [(13, -1, 3, {}), (13, 1, 2, {}), (13, 2, 6, {}), (11, -1, 4, {"largest": 0}), (11, 1, 4, {"largest": 0}),
             (11, -1, 2, {"sorted": 1}), (13, -1, 0, {}), (10, 2, 5, {})]
    for opset, axis, k, attrs in cases:
        label = f"TopK_op{opset}_axis{axis}_k{k}" + "".join(f"_{a}{v}" for a, v in attrs.items())
        nodes = head + [helper.make_node("TopK", ["x3", "k"], ["v", "i"], axis=axis, **attrs)] + tail
        eval_vs_ort(label, save(label, nodes, [x_info(["N", 24])], None, [dims, I64("k", [k])], opset=opset),
                    {"x": x}, exact=True)
    label = "TopK_op9_attr_k"
    nodes = head + [helper.make_node("TopK", ["x3"], ["v", "i"], axis=1, k=3)] + tail
    eval_vs_ort(label, save(label, nodes, [x_info(["N", 24])], None, [dims], opset=9), {"x": x}, exact=True)
    for dt, np_dt in ((TensorProto.DOUBLE, np.float64), (TensorProto.INT64, np.int64), (TensorProto.INT32, np.int32)):
        label = f"TopK_{np.dtype(np_dt).name}"
        nodes = head + [helper.make_node("Cast", ["x3"], ["xt"], to=dt),
                        helper.make_node("TopK", ["xt", "k"], ["vt", "i"], axis=-1), to_float("vt", "v")] + tail
        eval_vs_ort(label, save(label, nodes, [x_info(["N", 24])], None, [dims, I64("k", [3])]), {"x": x},
                    exact=True)
    # k from the input's shape, folded at load: half of the last axis
    label = "TopK_k_from_shape"
    nodes = head + [helper.make_node("Shape", ["x3"], ["s"]), helper.make_node("Slice", ["s", "st", "en"], ["l"]),
                    helper.make_node("Div", ["l", "two"], ["kk"]),
                    helper.make_node("TopK", ["x3", "kk"], ["v", "i"])] + tail
    eval_vs_ort(label, save(label, nodes, [x_info(["N", 24])], None,
                            [dims, I64("st", [2]), I64("en", [3]), I64("two", 2)]), {"x": x}, exact=True)
    # the batch ranked along axis 0, k the batch size: every sample's output depends on the others'
    label = "TopK_batch_axis"
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", ["s", "st", "en"], ["kk"]),
             helper.make_node("TopK", ["x", "kk"], ["v", "i"], axis=0)] + tail
    model = save(label, nodes, [x_info(["N", 24])], None, [I64("st", [0]), I64("en", [1])])
    eval_vs_ort(label, model, {"x": x}, exact=True)
    eval_vs_ort(label + "_passes", model, {"x": x}, exact=True, env=PASSES)
    # hostile
    xb = x[:4]
    for label, attrs, kv, words in [("topk_k_big", {}, [7], ["k 7 is out of range", "length 6"]),
                                    ("topk_k_neg", {}, [-1], ["k -1 is out of range"]),
                                    ("topk_axis", {"axis": 3}, [1], ["axis 3 is out of range for rank 3"]),
                                    ("topk_axis_neg", {"axis": -4}, [1], ["axis -4 is out of range"]),
                                    ("topk_k_two", {}, [1, 2], ["K (input 1) must be one int64 value"])]:
        nodes = head + [helper.make_node("TopK", ["x3", "k"], ["v", "i"], name="bad", **attrs)] + tail
        refused(label, save(label, nodes, [x_info(["N", 24])], None, [dims, I64("k", kv)]), {"x": xb}, words)
    label = "topk_k_int32"
    k32 = numpy_helper.from_array(np.array([2], np.int32), "k")
    nodes = head + [helper.make_node("TopK", ["x3", "k"], ["v", "i"], name="bad")] + tail
    refused(label, save(label, nodes, [x_info(["N", 24])], None, [dims, k32]), {"x": xb}, ["int32"])
    label = "TopK_k_data"  # k computed from the numbers: the shape is known only at the run, as an Expand's
    nodes = head + [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0), helper.make_node("Sigmoid", ["m"], ["sm"]),
                    helper.make_node("Mul", ["sm", "three"], ["m3"]),
                    helper.make_node("Cast", ["m3"], ["ki"], to=TensorProto.INT64),
                    helper.make_node("Reshape", ["ki", "one"], ["kk"]),
                    helper.make_node("TopK", ["x3", "kk"], ["v", "i"])] + tail
    eval_vs_ort(label, save(label, nodes, [x_info(["N", 24])], None,
                            [dims, I64("one", [1]), numpy_helper.from_array(np.float32(3), "three")]), {"x": x},
                exact=True)


def idx_info(name, shape, dtype=TensorProto.INT64):
    return helper.make_tensor_value_info(name, dtype, shape)


def check_gather_scatter(rng):
    """GatherElements (each axis, negative indices, int32 indices, int64 data bit-exact), ScatterElements (reduction
    none with repeated indices, where the last in index order wins as onnxruntime does; add and mul from opset 16, max
    and min from 18; int64 data; Scatter, its name at opset 10, and refused at 11), GatherND (batch_dims 0 on a
    table, 1 on the data, slices and single elements) on [N, 4, 6] data with indices fed beside it; along the batch
    (samples mix) whole and in passes; indices out of range and hostile shapes refused naming the node."""
    x = rng.standard_normal((N, 24)).astype(np.float32)
    dims = I64("dims", [-1, 4, 6])
    head = [helper.make_node("Reshape", ["x", "dims"], ["x3"])]
    flat = [helper.make_node("Flatten", ["z"], ["y"])]
    xi = [x_info(["N", 24])]
    for label, axis, ishape, lo, hi, dt in [("GatherElements_axis2", 2, (N, 4, 3), -6, 6, np.int64),
                                            ("GatherElements_axis1", 1, (N, 2, 6), -4, 4, np.int64),
                                            ("GatherElements_axis-1_int32", -1, (N, 3, 5), -6, 6, np.int32),
                                            ("GatherElements_batch", 0, (N, 4, 6), 0, N, np.int64)]:
        idx = rng.integers(lo, hi, ishape).astype(dt)
        tp = TensorProto.INT64 if dt == np.int64 else TensorProto.INT32
        nodes = head + [helper.make_node("GatherElements", ["x3", "i"], ["z"], axis=axis)] + flat
        model = save(label, nodes, xi + [idx_info("i", ["N", *ishape[1:]], tp)], None, [dims])
        eval_vs_ort(label, model, {"x": x, "i": idx}, exact=True)
        if axis == 0:
            eval_vs_ort(label + "_passes", model, {"x": x, "i": idx}, exact=True, env=PASSES)
    label = "GatherElements_int64"
    idx = rng.integers(-6, 6, (N, 4, 6)).astype(np.int64)
    nodes = head + [helper.make_node("Cast", ["x3"], ["x64"], to=TensorProto.INT64),
                    helper.make_node("GatherElements", ["x64", "i"], ["z64"], axis=2), to_float("z64", "z")] + flat
    xr = np.round(x * 1000).astype(np.float32)
    eval_vs_ort(label, save(label, nodes, xi + [idx_info("i", ["N", 4, 6])], None, [dims]), {"x": xr, "i": idx},
                exact=True)
    # ScatterElements: 2 updates per row of 6 along axis 2, indices repeating
    u = rng.standard_normal((N, 8)).astype(np.float32)
    udims = I64("udims", [-1, 4, 2])
    for red, opset in (("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)):
        label = f"ScatterElements_{red}"
        idx = rng.integers(-3, 3, (N, 4, 2)).astype(np.int64)  # 3 places for 2 updates: many repeats
        attrs = {} if red == "none" else {"reduction": red}
        nodes = head + [helper.make_node("Reshape", ["u", "udims"], ["u3"]),
                        helper.make_node("ScatterElements", ["x3", "i", "u3"], ["z"], axis=-1, **attrs)] + flat
        model = save(label, nodes, xi + [x_info(["N", 8], name="u"), idx_info("i", ["N", 4, 2])], None,
                     [dims, udims], opset=opset)
        eval_vs_ort(label, model, {"x": x, "u": u, "i": idx}, exact=red in ("none", "max", "min"))
    label = "Scatter_op10"  # ScatterElements' name at opsets 9 and 10 (torch.scatter exported there)
    idx = rng.integers(-6, 6, (N, 4, 2)).astype(np.int64)
    nodes = head + [helper.make_node("Reshape", ["u", "udims"], ["u3"]),
                    helper.make_node("Scatter", ["x3", "i", "u3"], ["z"], axis=2)] + flat
    model = save(label, nodes, xi + [x_info(["N", 8], name="u"), idx_info("i", ["N", 4, 2])], None, [dims, udims],
                 opset=10)
    eval_vs_ort(label, model, {"x": x, "u": u, "i": idx}, exact=True)
    label = "Scatter_op10_batch"  # along axis 0: samples written into each other, whole and in passes
    bidx = rng.integers(0, N, (N, 4, 2)).astype(np.int64)
    nodes = head + [helper.make_node("Reshape", ["u", "udims"], ["u3"]),
                    helper.make_node("Scatter", ["x3", "i", "u3"], ["z"], axis=0)] + flat
    model = save(label, nodes, xi + [x_info(["N", 8], name="u"), idx_info("i", ["N", 4, 2])], None, [dims, udims],
                 opset=10)
    eval_vs_ort(label, model, {"x": x, "u": u, "i": bidx}, exact=True)
    eval_vs_ort(label + "_passes", model, {"x": x, "u": u, "i": bidx}, exact=True, env=PASSES)
    label = "scatter_op11"  # gone from opset 11: onnxruntime refuses it too
    nodes = head + [helper.make_node("Reshape", ["u", "udims"], ["u3"]),
                    helper.make_node("Scatter", ["x3", "i", "u3"], ["z"], axis=2, name="bad")] + flat
    refused(label, save(label, nodes, xi + [x_info(["N", 8], name="u"), idx_info("i", ["N", 4, 2])], None,
                        [dims, udims], opset=11), {"x": x[:4], "u": u[:4], "i": idx[:4]}, ["deprecated from opset 11"])
    label = "ScatterElements_last_wins"  # every update of a row to one place: the last one's value
    idx = np.full((N, 4, 2), 1, np.int64)
    nodes = head + [helper.make_node("Reshape", ["u", "udims"], ["u3"]),
                    helper.make_node("ScatterElements", ["x3", "i", "u3"], ["z"], axis=2)] + flat
    model = save(label, nodes, xi + [x_info(["N", 8], name="u"), idx_info("i", ["N", 4, 2])], None, [dims, udims])
    eval_vs_ort(label, model, {"x": x, "u": u, "i": idx}, exact=True)
    label = "ScatterElements_batch"  # along axis 0: rows of one sample written into another's
    idx = rng.integers(0, N, (N, 4, 2)).astype(np.int64)
    nodes = head + [helper.make_node("Reshape", ["u", "udims"], ["u3"]),
                    helper.make_node("ScatterElements", ["x3", "i", "u3"], ["z"], axis=0)] + flat
    model = save(label, nodes, xi + [x_info(["N", 8], name="u"), idx_info("i", ["N", 4, 2])], None, [dims, udims])
    eval_vs_ort(label, model, {"x": x, "u": u, "i": idx}, exact=True)
    eval_vs_ort(label + "_passes", model, {"x": x, "u": u, "i": idx}, exact=True, env=PASSES)
    label = "ScatterElements_int64_add"
    idx = rng.integers(-6, 6, (N, 4, 2)).astype(np.int64)
    nodes = head + [helper.make_node("Reshape", ["u", "udims"], ["u3"]),
                    helper.make_node("Cast", ["x3"], ["x64"], to=TensorProto.INT64),
                    helper.make_node("Cast", ["u3"], ["u64"], to=TensorProto.INT64),
                    helper.make_node("ScatterElements", ["x64", "i", "u64"], ["z64"], axis=2, reduction="add"),
                    to_float("z64", "z")] + flat
    model = save(label, nodes, xi + [x_info(["N", 8], name="u"), idx_info("i", ["N", 4, 2])], None, [dims, udims],
                 opset=16)
    eval_vs_ort(label, model, {"x": xr, "u": np.round(u * 1000), "i": idx}, exact=True)
    # GatherND: an embedding table looked up by tuples (batch_dims 0), the data's rows by batch (batch_dims 1)
    table = numpy_helper.from_array(rng.standard_normal((5, 3, 4)).astype(np.float32), "tab")
    for label, bd, ishape, lim, data in [("GatherND_table_rows", 0, (N, 1), 5, "tab"),
                                         ("GatherND_table_elems", 0, (N, 3), None, "tab"),
                                         ("GatherND_batch1_rows", 1, (N, 2, 1), 4, "x3"),
                                         ("GatherND_batch1_elems", 1, (N, 3, 2), None, "x3"),
                                         ("GatherND_batch_axis", 0, (N, 1), N, "x3")]:
        shape = (5, 3, 4) if data == "tab" else (4, 6)
        if lim is None:  # whole tuples: each entry within its axis, negative ones too
            idx = np.stack([rng.integers(-d, d, ishape[:-1]) for d in shape[:ishape[-1]]], -1).astype(np.int64)
        else:
            idx = rng.integers(-lim if data != "x3" or bd else 0, lim, ishape).astype(np.int64)
        nodes = head + [helper.make_node("GatherND", [data, "i"], ["z"], batch_dims=bd)] + flat
        model = save(label, nodes, xi + [idx_info("i", ["N", *ishape[1:]])], None,
                     [dims] + ([table] if data == "tab" else []))
        eval_vs_ort(label, model, {"x": x, "i": idx}, exact=True)
        if label == "GatherND_batch_axis":
            eval_vs_ort(label + "_passes", model, {"x": x, "i": idx}, exact=True, env=PASSES)
    # hostile indices and shapes
    xb = x[:4]
    for label, op, attrs, ishape, val, words in [
            ("ge_index_big", "GatherElements", {"axis": 2}, (4, 4, 2), 6, ["index 6", "out of range for axis 2"]),
            ("ge_index_neg", "GatherElements", {"axis": 1}, (4, 4, 2), -5, ["index -5", "out of range for axis 1"]),
            ("ge_axis", "GatherElements", {"axis": 3}, (4, 4, 2), 0, ["axis 3 is out of range for rank 3"]),
            ("ge_rank", "GatherElements", {"axis": 1}, (4, 8), 0, ["data's rank"]),
            ("ge_longer", "GatherElements", {"axis": 1}, (4, 4, 7), 0, ["no longer on any axis but 1"]),
            ("se_index_big", "ScatterElements", {"axis": 2}, (4, 4, 2), 6, ["index 6", "out of range for axis 2"]),
            ("se_reduction", "ScatterElements", {"axis": 2, "reduction": "max"}, (4, 4, 2), 0,
             ["reduction 'max' at opset 16"]),
            ("gnd_index_big", "GatherND", {}, (4, 2), 4, ["index 4", "out of range for data's axis 0"]),
            ("gnd_tuple_long", "GatherND", {}, (4, 4), 0, ["their last from 1 to 3"]),
            ("gnd_batch_dims", "GatherND", {"batch_dims": 3}, (4, 1), 0, ["batch_dims 3"]),
            ("gnd_batch_mismatch", "GatherND", {"batch_dims": 2}, (4, 3, 1), 0, ["first 2 dims must be data's"])]:
        idx = np.full(ishape, val, np.int64)
        ins = ["x3", "i"] + (["i2f"] if op == "ScatterElements" else [])
        pre = [helper.make_node("Cast", ["i"], ["i2f"], to=TensorProto.FLOAT)] if op == "ScatterElements" else []
        nodes = head + pre + [helper.make_node(op, ins, ["z"], name="bad", **attrs)] + flat
        opset = 16 if "reduction" in attrs else 13
        model = save(label, nodes, xi + [idx_info("i", [None] * len(ishape))], None, [dims], opset=opset)
        refused(label, model, {"x": xb, "i": idx}, words)


def check_onehot(rng):
    """OneHot of [N, 3] indices (int64, int32, float32 truncated) with depth from an initializer (int64, int32, a
    float truncated), from the input's shape, at each axis; indices in [-depth, depth) counted from the end once,
    others all off_value as ONNX defines it; float32 and int64 values (bit-exact; the type triples onnxruntime has);
    hostile depth, axis and values refused naming the node."""
    x = rng.standard_normal((N, 24)).astype(np.float32)
    xi = [x_info(["N", 24])]
    vals = numpy_helper.from_array(np.array([-1.5, 2.0], np.float32), "vals")
    for label, axis, depth, idt, opset in [("OneHot_last", -1, np.int64(6), np.int64, 11),
                                           ("OneHot_axis1", 1, np.int32(6), np.int32, 11),
                                           ("OneHot_axis0_float_depth", 0, np.float32(5.7), np.int64, 9),
                                           ("OneHot_float_indices", 2, np.float32(7), np.float32, 11)]:
        idx = rng.integers(-9, 9, (N, 3)).astype(idt)
        if idt == np.float32:
            idx = idx + np.float32(0.25)  # truncated toward zero
        tp = {np.int64: TensorProto.INT64, np.int32: TensorProto.INT32, np.float32: TensorProto.FLOAT}[idt]
        nodes = [helper.make_node("OneHot", ["i", "depth", "vals"], ["o"], axis=axis)]
        if axis == 0:  # [depth, N, 3]: the batch first again
            nodes.append(helper.make_node("Transpose", ["o"], ["o2"], perm=[1, 0, 2]))
        nodes += [helper.make_node("Flatten", [nodes[-1].output[0]], ["fo"]),
                  helper.make_node("Concat", ["fo", "x"], ["y"], axis=1)]
        model = save(label, nodes, xi + [idx_info("i", ["N", 3], tp)], None,
                     [numpy_helper.from_array(np.array(depth), "depth"), vals], opset=opset)
        eval_vs_ort(label, model, {"x": x, "i": idx}, exact=True)
    label = "OneHot_depth_from_shape_int64_values"  # depth: x's length 24; int64 values
    idx = rng.integers(-30, 30, (N, 3)).astype(np.int64)
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", ["s", "st", "en"], ["depth"]),
             helper.make_node("OneHot", ["i", "depth", "vals"], ["o"]), helper.make_node("Flatten", ["o"], ["fo"]),
             to_float("fo", "ff"), helper.make_node("Concat", ["ff", "x"], ["y"], axis=1)]
    model = save(label, nodes, xi + [idx_info("i", ["N", 3])], None,
                 [I64("st", [1]), I64("en", [2]), numpy_helper.from_array(np.array([7, -3], np.int64), "vals")])
    eval_vs_ort(label, model, {"x": x, "i": idx}, exact=True)
    xb = x[:4]
    for label, depth, axis, v, words in [("onehot_depth0", np.int64(0), -1, [0.0, 1.0], ["depth 0"]),
                                         ("onehot_depth_neg", np.int64(-3), -1, [0.0, 1.0], ["depth -3"]),
                                         ("onehot_depth_huge", np.int64(2**62), -1, [0.0, 1.0],
                                          ["element count within int64"]),
                                         ("onehot_depth_nan", np.float32("nan"), -1, [0.0, 1.0], ["depth nan"]),
                                         ("onehot_axis", np.int64(4), 3, [0.0, 1.0], ["axis 3 is out of range"]),
                                         ("onehot_axis_neg", np.int64(4), -4, [0.0, 1.0], ["axis -4 is out of range"]),
                                         ("onehot_values", np.int64(4), -1, [0.0, 1.0, 2.0],
                                          ["[off_value, on_value]"])]:
        nodes = [helper.make_node("OneHot", ["i", "depth", "vals"], ["o"], name="bad", axis=axis),
                 helper.make_node("Flatten", ["o"], ["fo"]), helper.make_node("Concat", ["fo", "x"], ["y"], axis=1)]
        model = save(label, nodes, xi + [idx_info("i", ["N", 3])], None,
                     [numpy_helper.from_array(np.array(depth), "depth"),
                      numpy_helper.from_array(np.array(v, np.float32), "vals")])
        refused(label, model, {"x": xb, "i": np.zeros((4, 3), np.int64)}, words)


def check_eyelike(rng):
    """EyeLike of [N, 24] (the batch's rows: each sample's row of the identity depends on its place in the batch, so
    whole and in passes alike) and of a [4, 6] slice, k 0, 3, -2, past either edge and near int64's ends, dtype
    float32 (the default), int64, int32 and double: eval equal to onnxruntime; a 3-D input refused naming the
    node."""
    x = rng.standard_normal((N, 24)).astype(np.float32)
    xi = [x_info(["N", 24])]
    for label, k, dt in [("EyeLike_k0", 0, None), ("EyeLike_k3_int64", 3, TensorProto.INT64),
                         ("EyeLike_k-2_int32", -2, TensorProto.INT32), ("EyeLike_k30_double", 30, TensorProto.DOUBLE),
                         ("EyeLike_kmin", -2**63, None), ("EyeLike_kmax", 2**63 - 1, TensorProto.INT64)]:
        attrs = {"k": k} if dt is None else {"k": k, "dtype": dt}
        nodes = [helper.make_node("EyeLike", ["x"], ["e"], **attrs)]
        if dt is not None:
            nodes.append(to_float("e", "ef"))
        nodes.append(helper.make_node("Add", [nodes[-1].output[0], "x"], ["y"]))
        model = save(label, nodes, xi, None)
        eval_vs_ort(label, model, {"x": x}, exact=True)
        eval_vs_ort(label + "_passes", model, {"x": x}, exact=True, env=PASSES)
    label = "EyeLike_slice"  # [4, 6] of the first sample, folded at load
    nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]), helper.make_node("Gather", ["x3", "zero"], ["x2"]),
             helper.make_node("EyeLike", ["x2"], ["e"], k=1), helper.make_node("Reshape", ["e", "row"], ["er"]),
             helper.make_node("Add", ["er", "x"], ["y"])]
    eval_vs_ort(label, save(label, nodes, xi, None, [I64("dims", [-1, 4, 6]), I64("zero", 0), I64("row", [1, 24])]),
                {"x": x}, exact=True)
    label = "eyelike_rank3"
    nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]), helper.make_node("EyeLike", ["x3"], ["e"], name="bad"),
             helper.make_node("Flatten", ["e"], ["y"])]
    refused(label, save(label, nodes, xi, None, [I64("dims", [-1, 4, 6])]), {"x": x[:4]}, ["rank 3", "2-D input"])


def check_castlike(rng):
    """CastLike at opset 15 to the dtype of an initializer (int64, int32, double, float16: float32's round trip
    through them) and of a value computed at run time (only its dtype is read), back to float32 by CastLike of x:
    equal to onnxruntime."""
    x = (rng.standard_normal((N, 24)) * 300).astype(np.float32)
    xi = [x_info(["N", 24])]
    for label, like in [("CastLike_int64", np.array([1], np.int64)), ("CastLike_int32", np.array(7, np.int32)),
                        ("CastLike_double", np.zeros((2, 2), np.float64)),
                        ("CastLike_float16", np.ones(3, np.float16))]:
        nodes = [helper.make_node("CastLike", ["x", "like"], ["c"]), helper.make_node("CastLike", ["c", "x"], ["y"])]
        model = save(label, nodes, xi, None, [numpy_helper.from_array(like, "like")], opset=15)
        eval_vs_ort(label, model, {"x": x}, exact=True)
    label = "CastLike_run_time_target"
    nodes = [helper.make_node("Abs", ["x"], ["ax"]), helper.make_node("Cast", ["ax"], ["ai"], to=TensorProto.INT32),
             helper.make_node("CastLike", ["x", "ai"], ["c"]), helper.make_node("Sub", ["c", "ai"], ["d"]),
             helper.make_node("CastLike", ["d", "x"], ["y"])]
    eval_vs_ort(label, save(label, nodes, xi, None, opset=15), {"x": x}, exact=True)


def check_reverse_sequence(rng):
    """ReverseSequence on [N, 4, 6] (batch_axis 0, time_axis 1) and its [4, N, 6] transpose (the defaults), lengths
    from 0 to 4 fed beside the data; float32 and int64 (bit-exact); the batch as the time axis (samples reversed into
    each other) whole and in passes; hostile axes and lengths refused naming the node."""
    x = rng.standard_normal((N, 24)).astype(np.float32)
    xi = [x_info(["N", 24])]
    dims = I64("dims", [-1, 4, 6])
    lens = rng.integers(0, 5, N).astype(np.int64)
    li = [idx_info("l", ["N"])]
    for label, attrs, perm in [("ReverseSequence_batch_first", {"batch_axis": 0, "time_axis": 1}, None),
                               ("ReverseSequence_time_first", {}, [1, 0, 2])]:
        nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"])]
        if perm:
            nodes.append(helper.make_node("Transpose", ["x3"], ["xt"], perm=perm))
        nodes += [helper.make_node("ReverseSequence", [nodes[-1].output[0], "l"], ["r"], **attrs)]
        if perm:
            nodes.append(helper.make_node("Transpose", ["r"], ["rt"], perm=perm))
        nodes.append(helper.make_node("Flatten", [nodes[-1].output[0]], ["y"]))
        eval_vs_ort(label, save(label, nodes, xi + li, None, [dims]), {"x": x, "l": lens}, exact=True)
    label = "ReverseSequence_int64"
    nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]), helper.make_node("Cast", ["x3"], ["xi"], to=7),
             helper.make_node("ReverseSequence", ["xi", "l"], ["r"], batch_axis=0, time_axis=1), to_float("r", "rf"),
             helper.make_node("Flatten", ["rf"], ["y"])]
    eval_vs_ort(label, save(label, nodes, xi + li, None, [dims]), {"x": np.round(x * 1000), "l": lens}, exact=True)
    label = "ReverseSequence_batch_as_time"  # x [N, 24]: time the batch's axis, 24 sequences of lengths up to N
    nodes = [helper.make_node("ReverseSequence", ["x", "tl"], ["y"])]
    model = save(label, nodes, xi, None, [I64("tl", rng.integers(0, N + 1, 24))])
    eval_vs_ort(label, model, {"x": x}, exact=True)
    eval_vs_ort(label + "_passes", model, {"x": x}, exact=True, env=PASSES)
    for label, attrs, lv, words in [("rs_same_axes", {"batch_axis": 0, "time_axis": 0}, 1, ["must be 0 and 1"]),
                                    ("rs_axis2", {"batch_axis": 0, "time_axis": 2}, 1, ["must be 0 and 1"]),
                                    ("rs_len_big", {"batch_axis": 0, "time_axis": 1}, 5, ["sequence_lens[0] is 5"]),
                                    ("rs_len_neg", {"batch_axis": 0, "time_axis": 1}, -1, ["sequence_lens[0] is -1"]),
                                    ("rs_lens_short", {}, 1, ["one per batch entry"])]:
        nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]),
                 helper.make_node("ReverseSequence", ["x3", "l"], ["r"], name="bad", **attrs),
                 helper.make_node("Flatten", ["r"], ["y"])]
        rows = 3 if label == "rs_lens_short" else 4  # [3, 4, 6] with batch_axis 1: 4 lengths wanted, 3 given
        refused(label, save(label, nodes, xi + li, None, [dims]), {"x": x[:rows], "l": np.full(rows, lv, np.int64)},
                words)


def check_torch(rng):
    """A top-k pooling head as torch exports it (torch.topk over the positions of a Conv1d's features, the mean of the
    k largest per channel) at opsets 11 and 13, and torch.gather and scatter_add (GatherElements, ScatterElements,
    with reduction add at 16) at 13 and 16: eval within 1e-5 of onnxruntime, whole and in passes."""
    try:
        import torch
    except ImportError:
        print("ops_index_test: torch missing, its models skipped")
        return
    torch.manual_seed(0)

    class TopKHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(4, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8 * 2, 10)

        def forward(self, x):
            h = torch.relu(self.conv(x.reshape(-1, 4, 16)))
            top = torch.topk(h, 3, dim=-1).values  # [N, 8, 3]
            low = torch.topk(h, 2, dim=-1, largest=False).values.sum(-1)  # [N, 8]
            return self.fc(torch.cat([top.mean(-1), low], 1))

    class GatherScatter(torch.nn.Module):
        """torch.gather of each channel's 3 largest positions, scatter_add of them into 4 bins by position."""
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(4, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8 * 7, 10)

        def forward(self, x):
            h = self.conv(x.reshape(-1, 4, 16))
            idx = torch.topk(h.abs(), 3, dim=-1).indices  # [N, 8, 3]
            g = torch.gather(h, -1, idx)
            bins = torch.zeros_like(h[:, :, :4]).scatter_add(-1, idx % 4, g * g)
            return self.fc(torch.cat([g, bins], -1).flatten(1))

    x = rng.standard_normal((N, 64)).astype(np.float32)
    for name, net, want, opsets in [("topk_head", TopKHead(), "TopK", (11, 13)),
                                    ("gather_scatter", GatherScatter(), "ScatterElements", (13, 16))]:
        for opset in opsets:
            path = J(f"{name}{opset}.onnx")
            buf = io.BytesIO()
            torch.onnx.export(net.eval(), torch.from_numpy(x[:2]), buf, opset_version=opset, input_names=["x"],
                              output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
            with open(path, "wb") as f:
                f.write(buf.getvalue())
            ops = {n.op_type for n in onnx.load(path).graph.node}
            check(f"{name}{opset}: torch exported {want}", want in ops, str(sorted(ops)))
            eval_vs_ort(f"{name}{opset}", path, {"x": x})
            eval_vs_ort(f"{name}{opset}_passes", path, {"x": x}, env=PASSES)


def check_pipeline(label, model):
    """eval against onnxruntime, then calibrate, and for placements trt, ort and all: plan, validate, export
    --format qdq, onnxruntime on the export making validate's predictions."""
    x = np.random.default_rng(7).standard_normal((96, 64)).astype(np.float32)
    eval_vs_ort(label, model, {"x": x})
    check_placements(label, model, J(label + ".h5"), {"x": x}, J, placements=("trt", "ort", "all"))


def main():
    rng = np.random.default_rng(11)
    check_topk(rng)
    check_gather_scatter(rng)
    check_onehot(rng)
    check_eyelike(rng)
    check_castlike(rng)
    check_reverse_sequence(rng)
    check_torch(rng)
    # [N, 4, 6, 6] -> TopK 6 over the last axis (each row sorted) -> [N, 4, 6, 6]
    check_pipeline("pipeline_topk", conv_classifier(
        "pipe_topk", [helper.make_node("TopK", ["c", "k"], ["a", "ai"], axis=-1)],
        [helper.make_node("Identity", ["g"], ["y"])], inits=[I64("k", [6])]))
    # [N, 4, 6, 6] -> each row's order from TopK, GatherElements of c by it, ScatterElements back -> [N, 4, 6, 6]
    check_pipeline("pipeline_gather_scatter", conv_classifier(
        "pipe_gs", [helper.make_node("TopK", ["c", "k"], ["tv", "ti"], axis=-1),
                    helper.make_node("GatherElements", ["c", "ti"], ["ge"], axis=-1),
                    helper.make_node("Relu", ["ge"], ["r"]),
                    helper.make_node("ScatterElements", ["c", "ti", "r"], ["a"], axis=-1)],
        [helper.make_node("Identity", ["g"], ["y"])], inits=[I64("k", [3])]))
    return finish("ops_index_test")


if __name__ == "__main__":
    sys.exit(main())
