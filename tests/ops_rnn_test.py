#!/usr/bin/env python3
"""Recurrent layers (ONNX LSTM, GRU, RNN), which ptq refused, exit 5 "op LSTM is not supported": torch-exported
nn.LSTM / nn.GRU / nn.RNN token classifiers (embedding -> recurrent layer -> last state -> Linear; batch_first
both ways, 2 bidirectional layers) run by `ptq eval` against onnxruntime at two sequence lengths, whole and in
passes of 3 rows; one-node models built with onnx.helper for what torch does not write (layout 1, reverse,
sequence_lens, clip, input_forget, peepholes, linear_before_reset 0, Relu, Y left out); a model whose batch is
the layer's time axis, in passes; hostile attributes and shapes refused naming the node; and an LSTM classifier
through calibrate, plan, validate and a Q/DQ export that leaves the LSTM float and that onnxruntime runs to
validate's predictions (check_ort_agrees). Skips (77) without torch, onnx or onnxruntime. Run by ctest with
PTQ_BIN and PTQ_SOURCE_DIR set."""
import os
import sys
import tempfile
import warnings

from ptqtest import check, check_ort_agrees, finish, ptq

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"ops_rnn_test: skipped ({e})")
    sys.exit(77)

TMP = tempfile.mkdtemp(prefix="ptq-rnn-")
VOCAB, EMB, HID, CLASSES = 40, 8, 6, 4
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def J(*p):
    return os.path.join(TMP, *p)


def write_h5(path, feeds, labels):
    with h5py.File(path, "w") as f:
        for k, v in feeds.items():
            f[k] = v
        f["labels"] = labels


def eval_vs_ort(label, model, feeds, tol=1e-5, env=None, ref=None):
    """ptq eval's logits within tol (absolute plus relative) of onnxruntime's on every element (onnxruntime running
    ref, the same model at layout 0, where model's layer is at layout 1, which onnxruntime refuses)."""
    want = ort.InferenceSession(ref or model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    data = J(label + ".h5")
    write_h5(data, feeds, want.reshape(len(want), -1).argmax(1))
    rc, _, err = ptq("eval", "--model", model, "--data", data, "--logits", J(label + ".npy"), env=env)
    got = np.load(J(label + ".npy")) if rc == 0 else None
    diff = np.abs(got.reshape(want.shape) - want) if got is not None and got.size == want.size else None
    ok = diff is not None and bool(np.all(diff <= tol * (1 + np.abs(want))))
    check(f"{label}: eval within {tol:g} of onnxruntime", ok,
          err.strip()[-300:] if rc else f"max |diff| {diff.max() if diff is not None else 'shape'}")


class TokenClassifier(torch.nn.Module):
    """Embedding -> kind (layers, batch_first, bidirectional) -> the last layer's final hidden state(s) -> Linear."""

    def __init__(self, kind, batch_first, bidirectional, layers):
        super().__init__()
        self.kind, self.batch_first, self.bidirectional = kind, batch_first, bidirectional
        self.emb = torch.nn.Embedding(VOCAB, EMB)
        self.rnn = getattr(torch.nn, kind)(EMB, HID, num_layers=layers, batch_first=batch_first,
                                           bidirectional=bidirectional)
        self.fc = torch.nn.Linear(HID * (2 if bidirectional else 1), CLASSES)

    def forward(self, ids):
        e = self.emb(ids)
        if not self.batch_first:
            e = e.transpose(0, 1)
        out = self.rnn(e)
        h = out[1][0] if self.kind == "LSTM" else out[1]
        return self.fc(torch.cat([h[-2], h[-1]], 1) if self.bidirectional else h[-1])


def export_classifier(name, kind, batch_first, bidirectional, layers, seed=0):
    torch.manual_seed(seed)
    m = TokenClassifier(kind, batch_first, bidirectional, layers).eval()
    path = J(name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (torch.zeros(2, 5, dtype=torch.long),), path, input_names=["input_ids"],
                          output_names=["logits"], dynamic_axes={"input_ids": {0: "N", 1: "L"}, "logits": {0: "N"}},
                          opset_version=14)
    return path


def check_torch_classifiers(rng):
    cases = [("LSTM", True, False, 1), ("LSTM", False, False, 1), ("LSTM", True, True, 2), ("GRU", True, False, 1),
             ("GRU", False, True, 2), ("RNN", True, False, 1), ("RNN", False, True, 2)]
    for kind, bf, bi, layers in cases:
        name = f"torch_{kind}_bf{int(bf)}_bi{int(bi)}_l{layers}"
        model = export_classifier(name, kind, bf, bi, layers)
        for length in (7, 1):
            ids = rng.integers(0, VOCAB, size=(20, length)).astype(np.int64)
            eval_vs_ort(f"{name}_L{length}", model, {"input_ids": ids})
        ids = rng.integers(0, VOCAB, size=(20, 9)).astype(np.int64)
        eval_vs_ort(f"{name}_passes", model, {"input_ids": ids}, env={"PTQ_PASS_ROWS": "3"})


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def init_of(m, name):
    return next(i for i in m.graph.initializer if i.name == name)


def rnn_model(name, op, attrs, n_dir=1, layout=0, bias=True, lens=False, h0=False, c0=False, peep=False,
              keep_y=True, inp=3, seed=1):
    """x [N, L, inp] -> (layout 0: Transpose to [L, N, inp]) -> op -> every output kept, made batch-first and
    flattened, concatenated into y [N, k]; sequence_lens from the int32 input 'lens' [N]."""
    r = np.random.default_rng(seed)
    G = GATES[op]
    inits = [init("W", r.standard_normal((n_dir, G * HID, inp)) * 0.6),
             init("R", r.standard_normal((n_dir, G * HID, HID)) * 0.6)]
    N = helper.make_node
    nodes = [] if layout else [N("Transpose", ["x"], ["xt"], perm=[1, 0, 2])]
    ins = ["x" if layout else "xt", "W", "R", "B" if bias else "", "lens" if lens else ""]
    state = (1, 0, 2) if layout == 0 else (0, 1, 2)  # a state [n_dir, N, H] (layout 0) to [N, n_dir, H]
    if bias:
        inits.append(init("B", r.standard_normal((n_dir, 2 * G * HID)) * 0.3))
    if h0 or c0:  # the states' shape, [n_dir, N, H] or [N, n_dir, H]
        nodes += [N("Shape", ["x"], ["xs"]), N("Gather", ["xs", "zero"], ["n1"]),
                  N("Concat", ["dirs", "n1", "hid"] if layout == 0 else ["n1", "dirs", "hid"], ["h0_shape"], axis=0)]
        inits += [numpy_helper.from_array(np.array([0], np.int64), "zero"),
                  numpy_helper.from_array(np.array([n_dir], np.int64), "dirs"),
                  numpy_helper.from_array(np.array([HID], np.int64), "hid")]
    if h0 or c0 or peep:
        ins.append("h0" if h0 else "")
        shape = (n_dir, 1, HID) if layout == 0 else (1, n_dir, HID)
        if h0:  # broadcast to every sample by an Expand of the batch
            inits.append(init("h0_1", r.standard_normal(shape) * 0.5))
            nodes.append(N("Expand", ["h0_1", "h0_shape"], ["h0"]))
    if op == "LSTM" and (c0 or peep):
        ins.append("c0" if c0 else "")
        if c0:
            inits.append(init("c0_1", r.standard_normal((n_dir, 1, HID) if layout == 0 else (1, n_dir, HID))))
            nodes.append(N("Expand", ["c0_1", "h0_shape"], ["c0"]))
        if peep:
            ins.append("P")
            inits.append(init("P", r.standard_normal((n_dir, 3 * HID)) * 0.5))
    outs = ["Y" if keep_y else "", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    nodes.append(N(op, ins, outs, hidden_size=HID, **attrs, **({"layout": layout} if layout else {})))
    flat = []
    for o in outs:
        if not o:
            continue
        src = o
        if layout == 0:
            nodes.append(N("Transpose", [o], [o + "_t"], perm=[2, 0, 1, 3] if o == "Y" else list(state)))
            src = o + "_t"
        nodes.append(N("Flatten", [src], [o + "_f"], axis=1))
        flat.append(o + "_f")
    nodes.append(N("Concat", flat, ["y"], axis=1))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "L", inp])]
    if lens:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, ["N"]))
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", None])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = J(name + ".onnx")
    onnx.save(m, path)
    return path


def check_node_cases(rng):
    L, n = 5, 12
    x = (rng.standard_normal((n, L, 3)) * 1.5).astype(np.float32)
    lens = np.array([5, 1, 3, 0, 5, 2, 4, 5, 1, 3, 2, 5], np.int32)
    cases = [
        ("lstm_bidir_states", "LSTM", {"direction": "bidirectional"}, dict(n_dir=2, h0=True, c0=True)),
        ("lstm_layout1_reverse", "LSTM", {"direction": "reverse"}, dict(layout=1, h0=True, c0=True)),
        ("lstm_peep_clip", "LSTM", {"clip": 0.7}, dict(peep=True, bias=False)),
        ("lstm_input_forget", "LSTM", {"input_forget": 1}, dict(h0=True, c0=True, peep=True)),
        ("lstm_lens_bidir", "LSTM", {"direction": "bidirectional"}, dict(n_dir=2, lens=True, h0=True)),
        ("lstm_no_y", "LSTM", {}, dict(keep_y=False)),
        ("lstm_acts", "LSTM", {"activations": ["Sigmoid", "Relu", "Tanh"]}, {}),
        ("gru_lbr0", "GRU", {}, dict(h0=True)),
        ("gru_lbr1_bidir_layout1", "GRU", {"linear_before_reset": 1, "direction": "bidirectional"},
         dict(n_dir=2, layout=1, h0=True)),
        ("gru_lens_reverse_clip", "GRU", {"direction": "reverse", "clip": 0.5, "linear_before_reset": 1},
         dict(lens=True)),
        ("rnn_relu_bidir", "RNN", {"direction": "bidirectional", "activations": ["Relu", "Tanh"]},
         dict(n_dir=2, h0=True)),
        ("rnn_lens_layout1", "RNN", {}, dict(layout=1, lens=True, bias=False)),
        ("rnn_no_y_reverse", "RNN", {"direction": "reverse"}, dict(keep_y=False, h0=True)),
    ]
    for name, op, attrs, kw in cases:
        model = rnn_model(name, op, attrs, **kw)
        ref = rnn_model(name + "_layout0", op, attrs, **dict(kw, layout=0)) if kw.get("layout") else None
        feeds = {"x": x, **({"lens": lens} if kw.get("lens") else {})}
        eval_vs_ort(name, model, feeds, ref=ref)
        eval_vs_ort(name + "_passes", model, feeds, env={"PTQ_PASS_ROWS": "5"}, ref=ref)


def check_time_is_batch(rng):
    """x [N, 4, 3] fed to an LSTM of layout 0 as it is: the samples are its time steps, so running the batch in
    passes would cut the sequence (each pass a sequence of its own)."""
    r = np.random.default_rng(5)
    nodes = [helper.make_node("LSTM", ["x", "W", "R"], ["Y"], hidden_size=HID),  # no Y_h ([1, 4, H]: whole batches)
             helper.make_node("Reshape", ["Y", "shape"], ["y"])]
    inits = [init("W", r.standard_normal((1, 4 * HID, 3))), init("R", r.standard_normal((1, 4 * HID, HID))),
             numpy_helper.from_array(np.array([0, -1], np.int64), "shape")]
    g = helper.make_graph(nodes, "time_is_batch", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4 * HID])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    path = J("time_is_batch.onnx")
    onnx.save(m, path)
    x = rng.standard_normal((16, 4, 3)).astype(np.float32)
    eval_vs_ort("time_is_batch_passes", path, {"x": x}, env={"PTQ_PASS_ROWS": "3"})


def check_hostile():
    """Attributes and shapes ONNX does not allow, or ptq does not run: exit 4 or 5 naming the node."""
    x = np.zeros((4, 5, 3), np.float32)
    cases = [
        ("bad_direction", "LSTM", {"direction": "sideways"}, {}, 4, "direction must be"),
        ("bad_layout", "GRU", {"layout": 2}, {}, 4, "layout must be 0 or 1"),
        ("bad_clip", "LSTM", {"clip": -1.0}, {}, 4, "clip must be a positive"),
        ("bad_lbr", "GRU", {"linear_before_reset": 7}, {}, 4, "linear_before_reset must be 0 or 1"),
        ("bad_forget", "LSTM", {"input_forget": -1}, {}, 4, "input_forget must be 0 or 1"),
        ("bad_act", "LSTM", {"activations": ["Sigmoid", "Tanh", "HardSigmoid"]}, {}, 5, "'HardSigmoid' is not"),
        ("bad_act_count", "RNN", {"activations": ["Tanh", "Tanh"]}, {}, 4, "activations must list 1 names"),
        ("bad_alpha", "RNN", {"activations": ["Tanh"], "activation_alpha": [0.5]}, {}, 5, "activation_alpha"),
        ("bad_dir_w", "LSTM", {"direction": "bidirectional"}, {}, 6, "W (input 1) has shape [1x24x3]"),
    ]
    for name, op, attrs, kw, want_rc, want_msg in cases:
        model = rnn_model("hostile_" + name, op, attrs, **kw)
        write_h5(J(name + ".h5"), {"x": x}, np.zeros(4, np.int64))
        rc, _, err = ptq("eval", "--model", model, "--data", J(name + ".h5"))
        check(f"hostile {name}: exit {want_rc} naming the node", rc == want_rc and f"({op}, domain" in err and
              want_msg in err, f"rc {rc}: {err.strip()[-300:]}")
    for hidden, rc_want, what in ((HID - 1, 6, "hidden_size 5 does not match R's last dim 6"),
                                  (1 << 62, 6, "does not match R's"), (0, 4, "hidden_size must be at least 1")):
        model = rnn_model(f"hostile_hidden_{hidden}", "GRU", {})
        m = onnx.load(model)
        for a in next(n for n in m.graph.node if n.op_type == "GRU").attribute:
            if a.name == "hidden_size":
                a.i = hidden
        onnx.save(m, model)
        rc, _, err = ptq("eval", "--model", model, "--data", J("bad_layout.h5"))
        check(f"hostile hidden_size {hidden}: exit {rc_want} naming the node",
              rc == rc_want and "(GRU, domain" in err and what in err, f"rc {rc}: {err.strip()[-300:]}")
    for name, op, edit, want_rc, what in (
            ("B [1, 10]", "GRU", lambda m: init_of(m, "B").CopyFrom(init("B", np.zeros((1, 10)))), 6,
             "B (input 3) has shape [1x10], expected [1x36]"),
            ("P [1, 17]", "LSTM", lambda m: init_of(m, "P").CopyFrom(init("P", np.zeros((1, 17)))), 6,
             "P (input 7) has shape [1x17], expected [1x18]"),
            ("3 outputs", "GRU", lambda m: next(n for n in m.graph.node if n.op_type == "GRU").output.append("c"), 4,
             "at most 2 outputs, got 5 and 3")):
        model = rnn_model("hostile_edit", op, {}, peep=op == "LSTM")
        m = onnx.load(model)
        edit(m)
        onnx.save(m, model)
        rc, _, err = ptq("eval", "--model", model, "--data", J("bad_layout.h5"))
        check(f"hostile {op} {name}: exit {want_rc} naming the node", rc == want_rc and f"({op}, domain" in err and
              what in err, f"rc {rc}: {err.strip()[-300:]}")
    model = rnn_model("hostile_lens", "LSTM", {}, lens=True)
    for lens, bad in (([1, 2, 6, 0], "sequence_lens[2] is 6"), ([1, -1, 2, 0], "sequence_lens[1] is -1")):
        write_h5(J("lens.h5"), {"x": x, "lens": np.array(lens, np.int32)}, np.zeros(4, np.int64))
        rc, _, err = ptq("eval", "--model", model, "--data", J("lens.h5"))
        check(f"hostile sequence_lens {lens}: exit 6 naming the node", rc == 6 and "(LSTM, domain" in err and
              bad in err, f"rc {rc}: {err.strip()[-300:]}")


def in_names(k):
    """The inputs of an Einsum of k inputs: "x" alone (the name ptq feeds a lone float input from), else x0, x1..."""
    return ["x"] if k == 1 else [f"x{i}" for i in range(k)]


def einsum_model(name, equation, shapes, out_shape, dtype=TensorProto.FLOAT):
    """x0 [N, ...], x1, ... -> Einsum(equation) -> y, in dtype: float64 cast from float32 inputs (ptq feeds no
    float64), integers fed as they are; a result not float32 is cast to it for eval's logits."""
    names = in_names(len(shapes))
    nodes = [helper.make_node("Cast", [x], [x + "_d"], to=dtype) for x in names] if dtype == TensorProto.DOUBLE else []
    nodes.append(helper.make_node("Einsum", [x + "_d" for x in names] if nodes else names,
                                  ["e" if dtype != TensorProto.FLOAT else "y"], equation=equation))
    if dtype != TensorProto.FLOAT:
        nodes.append(helper.make_node("Cast", ["e"], ["y"], to=TensorProto.FLOAT))
    feed = TensorProto.FLOAT if dtype == TensorProto.DOUBLE else dtype
    inputs = [helper.make_tensor_value_info(x, feed, shp) for x, shp in zip(names, shapes)]
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = J(name + ".onnx")
    onnx.save(m, path)
    return path


def check_einsum(rng):
    """Einsum against onnxruntime on the equations torch exports (attention's, bmm, transpose), implicit outputs,
    diagonals, '...' broadcast and spaces, then hostile equations refused naming the node."""
    n = 6
    cases = [("bij,bjk->bik", [(n, 3, 4), (n, 4, 5)]), ("bhid,bhjd->bhij", [(n, 2, 3, 4), (n, 2, 5, 4)]),
             ("bhij,bhjd->bhid", [(n, 2, 3, 5), (n, 2, 5, 4)]), ("bij->bji", [(n, 3, 4)]),
             ("bi,bi->b", [(n, 7), (n, 7)]), ("bji", [(n, 3, 4)]),
             ("bii->bi", [(n, 4, 4)]), ("bii", [(n, 3, 3)]), ("b...ii->b...i", [(n, 2, 2, 3, 3)]),
             ("...ij,...jk->...ik", [(n, 1, 3, 4), (n, 2, 4, 5)]), ("b i j , b j k -> b i k", [(n, 2, 3), (n, 3, 2)]),
             ("bIj,bjK->bKI", [(n, 3, 4), (n, 4, 2)]), ("bij,bkl->bijkl", [(n, 2, 3), (n, 2, 2)]),
             ("b...,b...->b...", [(n, 3, 1), (n, 1, 4)])]
    for k, (eq, shapes) in enumerate(cases):
        feeds = {x: rng.standard_normal(shp).astype(np.float32) for x, shp in zip(in_names(len(shapes)), shapes)}
        want = ort.InferenceSession(einsum_model("probe", eq, shapes, None), providers=["CPUExecutionProvider"]).run(
            None, feeds)[0]
        model = einsum_model(f"einsum_{k}", eq, [("N",) + shp[1:] for shp in shapes], ["N"] + list(want.shape[1:]))
        eval_vs_ort(f"einsum '{eq}'", model, feeds)
    for dtype, np_dtype in ((TensorProto.INT64, np.int64), (TensorProto.INT32, np.int32),
                            (TensorProto.DOUBLE, np.float32)):
        feeds = {"x0": rng.integers(-50, 50, (n, 3, 4)).astype(np_dtype),
                 "x1": rng.integers(-50, 50, (n, 4, 2)).astype(np_dtype)}
        label = f"einsum_{TensorProto.DataType.Name(dtype).lower()}"
        eval_vs_ort(label, einsum_model(label, "bij,bjk->bik", [("N", 3, 4), ("N", 4, 2)], ["N", 3, 2], dtype), feeds)
    for k, eq in enumerate(["bi,ci->bi", "ij,kj->ij", "bi,ci->b", "bi,bi->bi", "bi,ci"]):
        # x and x: all but 'bi,bi->bi' sum over the other input's samples, so passes of 3 rows must not split them
        nodes = [helper.make_node("Einsum", ["x", "x"], ["y"], equation=eq)]
        g = helper.make_graph(nodes, "mix", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        onnx.save(m, J(f"einsum_mix{k}.onnx"))
        x = rng.standard_normal((12, 4)).astype(np.float32)
        eval_vs_ort(f"einsum '{eq}' of x and x in passes", J(f"einsum_mix{k}.onnx"), {"x": x},
                    env={"PTQ_PASS_ROWS": "3"})
    x = np.zeros((4, 3, 3), np.float32)
    hostile = [("bij->bk", "output label 'k' is in no input"), ("bij->bii", "'i' is repeated"),
               ("b.ij->bij", "one '...' and no other '.'"), ("b...i...->b", "one '...'"),
               ("bi$->b", "('$', byte 36) is not a letter"), ("bij,bjk->bik", "more terms than the node's 1"),
               ("bi->b", "term 0 has 2 letters for input 0 of rank 3"), ("bij-bij", "'-' not followed by '>'"),
               ("bij->bij->b", "'-' after the output"), ("bi...->b", "leaves out the inputs' '...'"),
               ("bij->b...", "the output has '...' but no input does"), (b"bij\xc3\xa9->b", "byte 195"),
               ("bij,bjk,bkl->bil", "equation 'bij,bjk,bkl->bil' has more terms")]
    for eq, msg in hostile:
        model = einsum_model("hostile_einsum", eq, [("N", 3, 3)], None)  # bytes: not ASCII
        write_h5(J("einsum_bad.h5"), {"x": x}, np.zeros(4, np.int64))
        rc, _, err = ptq("eval", "--model", model, "--data", J("einsum_bad.h5"))
        check(f"hostile einsum {eq!r}: refused naming the node", rc in (4, 5, 6) and "(Einsum, domain" in err and
              msg in err, f"rc {rc}: {err.strip()[-300:]}")
    x = np.zeros((4, 3), np.float32)  # 'ii' on [N, 3] at a batch of 4: no diagonal
    write_h5(J("einsum_sq.h5"), {"x": x}, np.zeros(4, np.int64))
    rc, _, err = ptq("eval", "--model", einsum_model("einsum_sq", "ii->i", [("N", 3)], None), "--data",
                     J("einsum_sq.h5"))
    check("hostile einsum 'ii' on [4, 3]: exit 6 naming the node", rc == 6 and "label 'i' is 3 in input 0 but 4" in err,
          f"rc {rc}: {err.strip()[-300:]}")
    # sizes whose product passes 2^63, 2^52 iterations from 128 KB of constants (both refused: eval ran for days),
    # and 2^30 from 12 KB (not run at load, past PTQ_FOLD_MAX_MACS)
    for k, size in ((5, 1 << 13), (4, 1 << 13), (3, 1 << 10)):
        inits = [numpy_helper.from_array(np.ones(size, np.float32), f"c{i}") for i in range(k)]
        eq = ",".join("abcde"[:k]) + "->"
        nodes = [helper.make_node("Einsum", [f"c{i}" for i in range(k)], ["s"], equation=eq),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        onnx.save(m, J(f"einsum_big{k}.onnx"))
        rc, out, err = ptq("info", J(f"einsum_big{k}.onnx"))
        want_rc, what = {5: (5, "multiply past 2^63"), 4: (5, "takes 4503599627370496 iterations"),
                         3: (0, "supported")}[k]
        check(f"einsum of {k} vectors of {size}: ptq info exits {want_rc} at once", rc == want_rc and
              what in out + err, f"rc {rc}: {(out + err).strip()[-300:]}")
        if k == 4:
            write_h5(J("einsum_big.h5"), {"x": np.zeros((2, 1), np.float32)}, np.zeros(2, np.int64))
            rc, _, err = ptq("eval", "--model", J("einsum_big4.onnx"), "--data", J("einsum_big.h5"))
            check("einsum of 2^52 iterations: eval exits 5 naming the node", rc == 5 and "(Einsum, domain" in err and
                  "more than ptq runs (2^40)" in err, f"rc {rc}: {err.strip()[-300:]}")


def check_pipeline(rng):
    """An LSTM token classifier (torch, batch_first, 1 layer) through calibrate, plan (trt and all), validate and a
    Q/DQ export: the LSTM's W, R and B stay float initializers, and onnxruntime runs the export to validate's
    predictions."""
    model = export_classifier("pipe_lstm", "LSTM", True, False, 1, seed=3)
    ids = rng.integers(0, VOCAB, size=(64, 10)).astype(np.int64)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input_ids": ids})[0]
    data = J("pipe.h5")
    write_h5(data, {"input_ids": ids}, want.argmax(1))
    rc, _, err = ptq("calibrate", "--model", model, "--data", data, "--out", J("pipe-c.h5"))
    check("pipeline: calibrate", rc == 0, err.strip()[-300:])
    for placement in ("trt", "all"):
        P = lambda suffix: J(f"pipe-{placement}{suffix}")  # noqa: E731
        rc, _, err = ptq("plan", J("pipe-c.h5"), "--model", model, "--placement", placement, "--out", P(".json"))
        check(f"pipeline ({placement}): plan", rc == 0, err.strip()[-300:])
        rc, _, err = ptq("validate", "--model", model, "--plan", P(".json"), "--data", data, "--logits", P(".npy"),
                         "--report", P("-rep"))
        check(f"pipeline ({placement}): validate", rc == 0, err.strip()[-300:])
        rc, _, err = ptq("export", "--plan", P(".json"), "--model", model, "--format", "qdq", "--out", P(".onnx"))
        check(f"pipeline ({placement}): export --format qdq", rc == 0, err.strip()[-300:])
        if not (os.path.exists(P(".npy")) and os.path.exists(P(".onnx"))):
            continue
        q = onnx.load(P(".onnx"))
        inits = {i.name for i in q.graph.initializer}
        lstm = [n for n in q.graph.node if n.op_type == "LSTM"]
        check(f"pipeline ({placement}): the LSTM's weights stay float initializers",
              len(lstm) == 1 and all(i in inits for i in lstm[0].input[1:4]), str([list(n.input) for n in lstm]))
        check_ort_agrees(f"pipeline ({placement})", P(".onnx"), {"input_ids": ids}, P(".npy"))


def main():
    rng = np.random.default_rng(11)
    check_torch_classifiers(rng)
    check_node_cases(rng)
    check_time_is_batch(rng)
    check_hostile()
    check_einsum(rng)
    check_pipeline(rng)
    return finish("ops_rnn_test")


if __name__ == "__main__":
    sys.exit(main())
