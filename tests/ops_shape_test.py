#!/usr/bin/env python3
"""Indexing and layout ops real exported models contain that ptq refused, exit 5 "op X is not supported"
(DepthToSpace, SpaceToDepth, Tile, GlobalMaxPool, Sum, Mean, Size): each in small models built here with onnx.helper
and in torch-exported ones (a pixel-shuffle super-resolution net, torch's repeat, adaptive max pooling), run by
`ptq eval` against onnxruntime; hostile attributes and shapes refused naming the node; small Conv classifiers through
calibrate, plan, validate and a Q/DQ export that onnxruntime runs to validate's predictions (check_ort_agrees).
Skips (77) without onnx or onnxruntime. Run by ctest with PTQ_BIN and PTQ_SOURCE_DIR set."""
import io
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
    from ops_breadth_test import conv_classifier
except ImportError as e:  # pragma: no cover
    print(f"ops_shape_test: skipped ({e})")
    sys.exit(77)

N = 24
TMP = tempfile.mkdtemp(prefix="ptq-shape-")


def J(*p):
    return os.path.join(TMP, *p)


def save(name, nodes, inputs, out_shape, inits=(), opset=13, out_type=TensorProto.FLOAT):
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", out_type, out_shape)],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = J(name + ".onnx")
    onnx.save(m, path)
    return path


def x_info(shape, dtype=TensorProto.FLOAT, name="x"):
    return helper.make_tensor_value_info(name, dtype, shape)


def run_eval(label, model, feeds, env=None, ort_model=None):
    """ptq eval's logits (None and the error when it fails), with labels from onnxruntime's output (of ort_model
    where given: onnxruntime lacks some integer kernels)."""
    want = ort.InferenceSession(ort_model or model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    data = J(label + ".h5")
    with h5py.File(data, "w") as f:
        for k, v in feeds.items():
            f[k] = v
        f["labels"] = want.reshape(len(want), -1).argmax(1)
    rc, _, err = ptq("eval", "--model", model, "--data", data, "--logits", J(label + ".npy"), env=env)
    return want, (np.load(J(label + ".npy")) if rc == 0 else None), err


def eval_vs_ort(label, model, feeds, tol=1e-5, env=None, exact=False, ort_model=None):
    """ptq eval's logits within tol (absolute plus relative) of onnxruntime's on every element, or equal."""
    want, got, err = run_eval(label, model, feeds, env, ort_model)
    ok = got is not None and got.size == want.size
    why = err.strip()[-300:] if got is None else f"shape {got.shape}, onnxruntime's {want.shape}"
    if ok:
        got = got.reshape(want.shape)
        ok = bool(np.array_equal(got, want)) if exact else bool(np.all(np.abs(got - want) <= tol * (1 + np.abs(want))))
        why = f"max |diff| {np.abs(np.where(got == want, 0, got - want)).max()}"
    check(f"{label}: eval {'equal to' if exact else f'within {tol:g} of'} onnxruntime", ok, why)


def refused(label, model, feeds, words):
    """ptq eval fails (not exit 0, not a crash) with a message naming the node and holding each of words."""
    data = J(label + ".h5")
    with h5py.File(data, "w") as f:
        for k, v in feeds.items():
            f[k] = v
        f["labels"] = np.zeros(len(next(iter(feeds.values()))), np.int64)
    rc, _, err = ptq("eval", "--model", model, "--data", data, "--logits", J(label + ".npy"))
    ok = rc not in (0, None) and rc < 128 and "'bad'" in err and all(w in err for w in words)
    check(f"{label}: refused naming the node", ok, f"rc {rc}: {err.strip()[-300:]}")


def check_depth_space(rng):
    """DepthToSpace DCR (the default, and before opset 11 the only mode: here at 5) and CRD with blocksizes 2 and 3
    on [N, C, H, W], SpaceToDepth with 2, 1 and 3; float32, and int64 through Cast (bit-exact; onnxruntime has no
    int64 kernel, so its float32 result on the same integers is the reference); hostile blocksizes and shapes."""
    cases = [("DepthToSpace", {"blocksize": 2}, 11, (N, 8, 3, 5)), ("DepthToSpace", {"blocksize": 2}, 5, (N, 8, 3, 5)),
             ("DepthToSpace", {"blocksize": 2, "mode": "CRD"}, 13, (N, 8, 3, 5)),
             ("DepthToSpace", {"blocksize": 3, "mode": "DCR"}, 13, (N, 18, 2, 1)),
             ("DepthToSpace", {"blocksize": 3, "mode": "CRD"}, 11, (N, 18, 2, 1)),
             ("SpaceToDepth", {"blocksize": 2}, 13, (N, 3, 4, 6)), ("SpaceToDepth", {"blocksize": 1}, 5, (N, 2, 3, 3)),
             ("SpaceToDepth", {"blocksize": 3}, 13, (N, 2, 6, 3))]
    for op, attrs, opset, shape in cases:  # fed flat ([N, C * H * W]: a 4-D input would be taken as images)
        label = op + f"_op{opset}" + "".join(f"_{k}{v}" for k, v in attrs.items())
        x = rng.standard_normal((shape[0], int(np.prod(shape[1:])))).astype(np.float32)
        dims = numpy_helper.from_array(np.array((-1, *shape[1:]), np.int64), "dims")
        reshape = [helper.make_node("Reshape", ["x", "dims"], ["x4"])]
        model = save(label, reshape + [helper.make_node(op, ["x4"], ["z"], **attrs),
                                       helper.make_node("Flatten", ["z"], ["y"])], [x_info(["N", x.shape[1]])],
                     None, [dims], opset=opset)
        eval_vs_ort(label, model, {"x": x}, exact=True)
        if opset < 6:  # ptq runs Cast from opset 6
            continue
        nodes = reshape + [helper.make_node("Cast", ["x4"], ["xi"], to=TensorProto.INT64),
                           helper.make_node(op, ["xi"], ["yi"], **attrs), helper.make_node("Cast", ["yi"], ["z"], to=1),
                           helper.make_node("Flatten", ["z"], ["y"])]
        xi = np.round(x * 1000).astype(np.float32)
        eval_vs_ort(label + "_int64", save(label + "_int64", nodes, [x_info(["N", x.shape[1]])], None, [dims],
                                           opset=opset), {"x": xi}, exact=True, ort_model=model)
    x = rng.standard_normal((4, 8, 2, 2)).astype(np.float32)
    for label, op, attrs, shape, words in [
            ("d2s_block0", "DepthToSpace", {"blocksize": 0}, (4, 8, 2, 2), ["blocksize is 0"]),
            ("d2s_block_neg", "DepthToSpace", {"blocksize": -2}, (4, 8, 2, 2), ["blocksize is -2"]),
            ("d2s_block_huge", "DepthToSpace", {"blocksize": 2**62}, (4, 8, 2, 2), ["blocksize is"]),
            ("d2s_c_not_multiple", "DepthToSpace", {"blocksize": 3}, (4, 8, 2, 2), ["multiple of blocksize^2 = 9"]),
            ("d2s_mode", "DepthToSpace", {"blocksize": 2, "mode": "XYZ"}, (4, 8, 2, 2), ["mode 'XYZ'"]),
            ("d2s_rank3", "DepthToSpace", {"blocksize": 2}, (4, 8, 4), ["rank 4"]),
            ("s2d_hw", "SpaceToDepth", {"blocksize": 3}, (4, 8, 2, 2), ["multiples of blocksize 3"])]:
        nodes = [helper.make_node("Reshape", ["x", "shape"], ["x4"]), helper.make_node(op, ["x4"], ["z"], name="bad",
                                                                                        **attrs),
                 helper.make_node("Flatten", ["z"], ["y"])]
        shape_init = numpy_helper.from_array(np.array((-1, *shape[1:]), np.int64), "shape")
        model = save(label, nodes, [x_info(["N", 32])], ["N", None], [shape_init])
        refused(label, model, {"x": x.reshape(4, 32)}, words)


def check_tile(rng):
    """Tile with constant repeats (ones, each axis, zeros), repeats computed from the input's shape (folded at load),
    on float32 and int64 (bit-exact), whole and in passes; repeats that are data (run with each batch's); hostile
    repeats refused naming the node; torch's x.repeat exported."""
    x = rng.standard_normal((N, 12)).astype(np.float32)
    dims = numpy_helper.from_array(np.array([-1, 3, 4], np.int64), "dims")
    for reps in ([1, 1, 1], [1, 2, 3], [1, 3, 1], [1, 0, 2]):
        label = "Tile_" + "_".join(map(str, reps))
        r = numpy_helper.from_array(np.array(reps, np.int64), "reps")
        nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]), helper.make_node("Tile", ["x3", "reps"], ["t"]),
                 helper.make_node("Flatten", ["t"], ["y"])]
        model = save(label, nodes, [x_info(["N", 12])], None, [dims, r])
        if reps[1]:
            eval_vs_ort(label, model, {"x": x}, exact=True)
            eval_vs_ort(label + "_passes", model, {"x": x}, exact=True, env=dict(os.environ, PTQ_PASS_ROWS="5"))
        else:  # an empty output: onnxruntime's is [N, 0]; ptq's logits of 0 classes are no model to eval
            rc, out, err = ptq("info", model)
            check(f"{label}: info infers the empty output", rc == 0 and "[1x0]" in out, out + err)
        nodes = [nodes[0], helper.make_node("Cast", ["x3"], ["xi"], to=TensorProto.INT64),
                 helper.make_node("Tile", ["xi", "reps"], ["ti"]), helper.make_node("Cast", ["ti"], ["t"], to=1),
                 nodes[2]]
        if reps[1]:
            eval_vs_ort(label + "_int64", save(label + "_int64", nodes, [x_info(["N", 12])], None, [dims, r]),
                        {"x": np.round(x * 1e4)}, exact=True)
    # repeats [1, x3.shape[2], 1] computed from the shape: folded at load, the batch dim left dynamic
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    two = numpy_helper.from_array(np.array([2], np.int64), "two")
    three = numpy_helper.from_array(np.array([3], np.int64), "three")
    nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]), helper.make_node("Shape", ["x3"], ["s"]),
             helper.make_node("Slice", ["s", "two", "three"], ["s2"]),
             helper.make_node("Concat", ["one", "s2", "one"], ["reps"], axis=0),
             helper.make_node("Tile", ["x3", "reps"], ["t"]), helper.make_node("Flatten", ["t"], ["y"])]
    model = save("Tile_shape", nodes, [x_info(["N", 12])], None, [dims, one, two, three])
    eval_vs_ort("Tile_shape", model, {"x": x}, exact=True)
    # repeats from the data (a batch's largest value): run with the repeats each batch gives, as onnxruntime does
    nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]), helper.make_node("ReduceMax", ["x"], ["m"],
                                                                                     keepdims=0),
             helper.make_node("Cast", ["m"], ["mi"], to=TensorProto.INT64),
             helper.make_node("Concat", ["one", "one", "mi_1"], ["reps"], axis=0),
             helper.make_node("Unsqueeze", ["mi", "zero"], ["mi_1"]),
             helper.make_node("Tile", ["x3", "reps"], ["t"], name="bad"), helper.make_node("Flatten", ["t"], ["y"])]
    nodes = nodes[:3] + [nodes[4], nodes[3]] + nodes[5:]
    zero = numpy_helper.from_array(np.array([0], np.int64), "zero")
    model = save("Tile_data", nodes, [x_info(["N", 12])], None, [dims, one, zero])
    eval_vs_ort("Tile_data_repeats", model, {"x": np.abs(x) + 1}, exact=True)
    eval_vs_ort("Tile_data_repeats_passes", model, {"x": np.abs(x) + 1}, exact=True,
                env=dict(os.environ, PTQ_PASS_ROWS="5"))
    x4 = rng.standard_normal((4, 12)).astype(np.float32)
    for label, reps, words in [("tile_negative", np.array([1, -1, 2], np.int64), ["repeats[1] is -1"]),
                               ("tile_short", np.array([1, 2], np.int64), ["3 entries"]),
                               ("tile_int32", np.array([1, 2, 2], np.int32), ["int64"]),
                               ("tile_overflow", np.array([1, 2**62, 2**62], np.int64), ["overflow"]),
                               ("tile_too_many", np.array([1, 2**30, 2**30], np.int64), ["too many elements"])]:
        nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]),
                 helper.make_node("Tile", ["x3", "reps"], ["t"], name="bad"), helper.make_node("Flatten", ["t"], ["y"])]
        model = save(label, nodes, [x_info(["N", 12])], None, [dims, numpy_helper.from_array(reps, "reps")])
        refused(label, model, {"x": x4}, words)
    try:
        import torch
    except ImportError:
        return

    class Repeat(torch.nn.Module):
        def forward(self, x):
            h = x.reshape(-1, 3, 4)
            return (h.repeat(1, 2, 3) * h.repeat(1, 2, 3).flip(2)).flatten(1)

    path = J("torch_repeat.onnx")
    buf = io.BytesIO()
    torch.onnx.export(Repeat(), torch.from_numpy(x[:2]), buf, opset_version=13, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    ops = {n.op_type for n in onnx.load(path).graph.node}
    check("torch_repeat: torch exported Tile", "Tile" in ops, str(sorted(ops)))
    eval_vs_ort("torch_repeat", path, {"x": x})


def check_global_maxpool(rng):
    """GlobalMaxPool over 1, 2 and 3 spatial axes (one of size 1), with -Inf, +Inf and ties, whole and in passes;
    a channel of -Inf alone gives -Inf, numpy's max as ONNX defines the op (onnxruntime's MLAS starts from -FLT_MAX
    and gives -3.4e38, so that row is checked against numpy); torch's AdaptiveMaxPool2d(1) exported; an input without
    spatial positions, of rank 2 or of int64 refused naming the node."""
    for spatial in ((7,), (3, 5), (2, 1, 3)):
        c = 3
        k = c * int(np.prod(spatial))
        x = rng.standard_normal((N, k)).astype(np.float32)
        x[0, :4] = [-np.inf, -np.inf, -np.inf, -np.inf]
        x[2, 1] = np.inf
        x[3, :] = 0.5
        label = "GlobalMaxPool_" + "x".join(map(str, spatial))
        dims = numpy_helper.from_array(np.array((-1, c, *spatial), np.int64), "dims")
        nodes = [helper.make_node("Reshape", ["x", "dims"], ["x4"]), helper.make_node("GlobalMaxPool", ["x4"], ["p"]),
                 helper.make_node("Flatten", ["p"], ["y"])]
        model = save(label, nodes, [x_info(["N", k])], ["N", c], [dims])
        eval_vs_ort(label, model, {"x": x}, exact=True)
        eval_vs_ort(label + "_passes", model, {"x": x}, exact=True, env=dict(os.environ, PTQ_PASS_ROWS="5"))
    x[1, :] = -np.inf
    _, got, err = run_eval("GlobalMaxPool_neg_inf", model, {"x": x})
    want = x.reshape(N, 3, -1).max(axis=2)
    check("GlobalMaxPool: a channel of -Inf alone gives -Inf", got is not None and np.array_equal(got, want),
          err.strip()[-300:] if got is None else str(got[1]))
    x4 = rng.standard_normal((4, 12)).astype(np.float32)
    for label, shape, cast, words in [("gmp_empty", (-1, 3, 4), False, ["spatial position"]),  # sliced to 0
                                      ("gmp_rank2", (-1, 12), False, ["rank >= 3"]),
                                      ("gmp_int64", (-1, 3, 4), True, ["int64"])]:
        nodes = [helper.make_node("Reshape", ["x", "dims"], ["x4"])]
        if label == "gmp_empty":
            nodes = [helper.make_node("Reshape", ["x", "dims"], ["x3"]),
                     helper.make_node("Slice", ["x3", "zero", "zero", "two"], ["x4"])]
        if cast:
            nodes.append(helper.make_node("Cast", ["x4"], ["x5"], to=TensorProto.INT64))
        nodes += [helper.make_node("GlobalMaxPool", ["x5" if cast else "x4"], ["p"], name="bad"),
                  helper.make_node("Flatten", ["p"], ["y"])]
        model = save(label, nodes, [x_info(["N", 12])], None,
                     [numpy_helper.from_array(np.array(shape, np.int64), "dims"),
                      numpy_helper.from_array(np.array([0], np.int64), "zero"),
                      numpy_helper.from_array(np.array([2], np.int64), "two")],
                     out_type=TensorProto.INT64 if cast else TensorProto.FLOAT)
        refused(label, model, {"x": x4}, words)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(1)

    class MaxHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 6, 3)
            self.pool = torch.nn.AdaptiveMaxPool2d(1)
            self.fc = torch.nn.Linear(6, 10)

        def forward(self, x):
            return self.fc(self.pool(self.conv(x.reshape(-1, 1, 6, 6))).flatten(1))

    x = rng.standard_normal((N, 36)).astype(np.float32)
    path = J("torch_maxhead.onnx")
    buf = io.BytesIO()
    torch.onnx.export(MaxHead().eval(), torch.from_numpy(x[:2]), buf, opset_version=13, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    ops = {n.op_type for n in onnx.load(path).graph.node}
    check("torch_maxhead: torch exported GlobalMaxPool", "GlobalMaxPool" in ops, str(sorted(ops)))
    eval_vs_ort("torch_maxhead", path, {"x": x})


def check_sum_mean(rng):
    """Sum and Mean of one, two and four inputs broadcast every way ([N, 6] and [N, 1] inputs, [6] and [1, 1]
    constants), at opsets 8 and 13, whole and in passes; an int64 input and shapes that do not broadcast refused
    naming the node."""
    a = (rng.standard_normal((N, 6)) * 50).astype(np.float32)
    c = rng.standard_normal((N, 1)).astype(np.float32)
    b = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b")
    k = numpy_helper.from_array(np.array([[7.5]], np.float32), "k")
    infos = {"a": x_info(["N", 6], name="a"), "c": x_info(["N", 1], name="c")}
    for op in ("Sum", "Mean"):
        for opset in (8, 13):
            for ins in (["a"], ["a", "b"], ["b", "a", "c", "k"], ["c", "k"]):
                label = f"{op}_op{opset}_{'_'.join(ins)}"
                used = [v for v in ("a", "c") if v in ins]
                model = save(label, [helper.make_node(op, ins, ["y"])], [infos[v] for v in used], None,
                             [t for t in (b, k) if t.name in ins], opset=opset)
                feeds = {v: {"a": a, "c": c}[v] for v in used}
                eval_vs_ort(label, model, feeds)
                eval_vs_ort(label + "_passes", model, feeds, env=dict(os.environ, PTQ_PASS_ROWS="5"))
    for label, nodes, words in [
            ("sum_int64", [helper.make_node("Cast", ["a"], ["ai"], to=TensorProto.INT64),
                           helper.make_node("Sum", ["ai", "ai"], ["si"], name="bad"),
                           helper.make_node("Cast", ["si"], ["y"], to=1)], ["int64"]),
            ("mean_bcast", [helper.make_node("Mean", ["a", "five"], ["y"], name="bad")], ["input 1"])]:
        five = numpy_helper.from_array(np.ones(5, np.float32), "five")
        refused(label, save(label, nodes, [infos["a"]], None, [five]), {"a": a[:4]}, words)


def check_size(rng):
    """Size of a batch of [N, 12] scaling it (a value that depends on the batch: the run stays whole when passes are
    asked for), Size in the shape arithmetic of a Reshape to [Size / 4, 4] (folded at load), and Size of [N, 0]."""
    x = rng.standard_normal((N, 12)).astype(np.float32)
    nodes = [helper.make_node("Size", ["x"], ["n"]), helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["x", "nf"], ["y"])]
    model = save("Size_scale", nodes, [x_info(["N", 12])], ["N", 12])
    eval_vs_ort("Size_scale", model, {"x": x})
    eval_vs_ort("Size_scale_passes", model, {"x": x}, env=dict(os.environ, PTQ_PASS_ROWS="5"))
    four = numpy_helper.from_array(np.array([4], np.int64), "four")
    twelve = numpy_helper.from_array(np.array([12], np.int64), "twelve")
    zero = numpy_helper.from_array(np.array([0], np.int64), "zero")
    nodes = [helper.make_node("Size", ["x"], ["n"]), helper.make_node("Unsqueeze", ["n", "zero"], ["n1"]),
             helper.make_node("Div", ["n1", "twelve"], ["rows"]),
             helper.make_node("Div", ["n1", "rows"], ["k"]), helper.make_node("Div", ["k", "four"], ["k4"]),
             helper.make_node("Concat", ["rows", "k4", "four"], ["dims"], axis=0),
             helper.make_node("Reshape", ["x", "dims"], ["r"]), helper.make_node("Softmax", ["r"], ["s"], axis=-1),
             helper.make_node("Flatten", ["s"], ["y"])]
    model = save("Size_reshape", nodes, [x_info(["N", 12])], ["N", 12], [four, twelve, zero])
    eval_vs_ort("Size_reshape", model, {"x": x})
    nodes = [helper.make_node("Slice", ["x", "zero", "zero", "one"], ["e"]), helper.make_node("Size", ["e"], ["n"]),
             helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT), helper.make_node("Add", ["x", "nf"], ["y"])]
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    eval_vs_ort("Size_empty", save("Size_empty", nodes, [x_info(["N", 12])], ["N", 12], [zero, one]), {"x": x})


def check_torch_pixel_shuffle(rng):
    """A super-resolution net as torch exports it (ESPCN: Conv, ReLU, Conv to r^2 channels, PixelShuffle(r)), and
    its PixelUnshuffle inverse (which torch exports as Reshape and Transpose), at opsets 11 and 13: eval within 1e-5
    of onnxruntime, whole and in passes."""
    try:
        import torch
    except ImportError:
        print("ops_shape_test: torch missing, its models skipped")
        return
    torch.manual_seed(0)

    class SuperRes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(1, 8, 3, padding=1)
            self.c2 = torch.nn.Conv2d(8, 9, 3, padding=1)
            self.shuffle = torch.nn.PixelShuffle(3)
            self.unshuffle = torch.nn.PixelUnshuffle(3)
            self.head = torch.nn.Linear(9 * 5 * 5, 10)

        def forward(self, x):
            x = x.reshape(-1, 1, 5, 5)
            up = self.shuffle(self.c2(torch.relu(self.c1(x))))  # [N, 1, 15, 15]
            return self.head(torch.flatten(self.unshuffle(up * up), 1))

    net = SuperRes().eval()
    x = rng.standard_normal((N, 25)).astype(np.float32)  # flat: a 4-D input would be taken as images
    for opset in (11, 13):
        path = J(f"superres{opset}.onnx")
        buf = io.BytesIO()
        torch.onnx.export(net, torch.from_numpy(x[:2]), buf, opset_version=opset, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        ops = {n.op_type for n in onnx.load(path).graph.node}
        check(f"superres{opset}: torch exported DepthToSpace", "DepthToSpace" in ops, str(sorted(ops)))
        eval_vs_ort(f"superres{opset}", path, {"x": x})
        eval_vs_ort(f"superres{opset}_passes", path, {"x": x}, env=dict(os.environ, PTQ_PASS_ROWS="5"))


def check_pipeline(label, model):
    """eval against onnxruntime, then calibrate, and for placements trt, ort and all: plan, validate, export
    --format qdq, onnxruntime on the export making validate's predictions."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((96, 64)).astype(np.float32)
    eval_vs_ort(label, model, {"x": x})
    data = J(label + ".h5")
    check_placements(label, model, data, {"x": x}, J, placements=("trt", "ort", "all"))


def main():
    rng = np.random.default_rng(13)
    check_depth_space(rng)
    check_torch_pixel_shuffle(rng)
    check_tile(rng)
    check_global_maxpool(rng)
    check_sum_mean(rng)
    check_size(rng)
    # [N, 4, 6, 6] -> SpaceToDepth 2 -> [N, 16, 3, 3] -> Relu -> DepthToSpace 2 CRD -> [N, 4, 6, 6]
    check_pipeline("pipeline_depth_space", conv_classifier(
        "pipe_d2s", [helper.make_node("SpaceToDepth", ["c"], ["s"], blocksize=2),
                     helper.make_node("Relu", ["s"], ["r"]),
                     helper.make_node("DepthToSpace", ["r"], ["a"], blocksize=2, mode="CRD")],
        [helper.make_node("Identity", ["g"], ["y"])]))
    # [N, 4, 6, 6] -> MaxPool 2 -> [N, 4, 3, 3] -> Tile [1, 1, 2, 2] -> [N, 4, 6, 6]
    reps = numpy_helper.from_array(np.array([1, 1, 2, 2], np.int64), "reps")
    check_pipeline("pipeline_tile", conv_classifier(
        "pipe_tile", [helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                      helper.make_node("Tile", ["p", "reps"], ["a"])],
        [helper.make_node("Identity", ["g"], ["y"])], inits=[reps]))
    # [N, 4, 6, 6] less its channel's largest value ([N, 4, 1, 1] by GlobalMaxPool)
    check_pipeline("pipeline_global_maxpool", conv_classifier(
        "pipe_gmp", [helper.make_node("GlobalMaxPool", ["c"], ["m"]), helper.make_node("Sub", ["c", "m"], ["a"])],
        [helper.make_node("Identity", ["g"], ["y"])]))
    # the mean of the Conv's output, its Relu and a per-channel constant
    shift = numpy_helper.from_array(np.array([0.5, -0.5, 0.25, 0.0], np.float32).reshape(4, 1, 1), "shift")
    check_pipeline("pipeline_mean", conv_classifier(
        "pipe_mean", [helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Mean", ["c", "r", "shift"], ["a"])],
        [helper.make_node("Identity", ["g"], ["y"])], inits=[shift]))
    return finish("ops_shape_test")


if __name__ == "__main__":
    sys.exit(main())
