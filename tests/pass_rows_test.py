"""Passes over a batch on the CPU (ptq_exec_set_pass_rows, runtime/batch_rows.c): a graph that computes each sample on
its own runs a long batch a few samples at a time, with the same logits; a graph that mixes the samples of a batch
without changing a shape must run it whole. Small hand-made models, each against onnxruntime on the whole batch: a
softmax over the batch, a batch mean taken away, a division by the batch size, a gather that reverses the batch
through Range, a Slice that reverses it, a roll by Concat of two Slices, a softmax over axis -2, a transpose [6, N]
read back as [N, 6] by Reshape, a MaxPool and a Conv along the batch as the spatial axis of [1, 6, N], an opset-11
Softmax and a LayerNormalization from axis 0 of [6, N], a table's first rows sliced by the batch size, a Trilu
(torch.tril) of [N, 6], a Reshape to [N, 2 + N // 4 % 2, -1], a ScatterND that writes the batch's first row (each
run whole: no "passes" line in --profile, logits as onnxruntime's); a model whose batch moves to axis 1 and back
through Reshape, Transpose and Gather, with its Reshape's shape made from Shape, torch's zeros_like
(ConstantOfShape of Shape), and swin_t's shifted-window mask (ConstantOfShape of a Shape past the batch, ScatterND
of rows at negative indices and of elements with reduction add over repeated tuples, Equal, Not, Where): each runs
in passes, logits as onnxruntime's and byte-identical to PTQ_PASS_ROWS=0's, and the moving one's side by side on
three threads too; a Gather whose indices are the data, out of range in a middle pass, fails as a whole run does
(exit 7, the same message, no logits file) with passes one after another and side by side. The demo's and the text
model's archives are byte-identical in passes one after another and side by side on three threads (each thread's
observers folded in). The demo model's logits are byte-identical with and without passes (the default; on three
threads the faster of whole batches and passes side by side, timed on the first batches; on two, passes side by side
from the first batch) (test_runner covers the library side). Both archives are the same bytes with every tensor
observed itself (PTQ_OBSERVE_ALIAS=0) as with the outputs of Reshape, Transpose, Unsqueeze and Flatten taking their
input's observer."""
import os
import re
import subprocess
import sys
import tempfile

from ptqtest import MODEL, PTQ, check, finish

try:
    import h5py
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"pass_rows_test: skipped ({e})")
    sys.exit(77)

N, D = 64, 6
BIG = np.iinfo(np.int64).max


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def model(path, nodes, inits, k, opset=13):
    """x float [N, D] -> ... -> logits [N, k]."""
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", k])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def batch_size(nodes, out):
    """nodes computing out = the batch size as an int64 scalar, from Shape(x)."""
    nodes += [helper.make_node("Shape", ["x"], [out + "_s"]),
              helper.make_node("Gather", [out + "_s", "zero"], [out], axis=0)]


def mixing_models(tmp):
    """(name, path): models whose samples depend on other samples of the batch, shapes unchanged."""
    out = []

    def add(name, nodes, inits, opset=13):
        path = os.path.join(tmp, name + ".onnx")
        model(path, nodes, inits, D, opset)
        out.append((name, path))

    add("softmax over the batch", [helper.make_node("Softmax", ["x"], ["logits"], axis=0)], [])
    add("batch mean taken away", [helper.make_node("ReduceMean", ["x"], ["m"], axes=[0], keepdims=1),
                                  helper.make_node("Sub", ["x", "m"], ["logits"])], [])
    nodes = []
    batch_size(nodes, "n")
    nodes += [helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
              helper.make_node("Div", ["x", "nf"], ["logits"])]
    add("divided by the batch size", nodes, [ints("zero", 0)])
    nodes = []
    batch_size(nodes, "n")
    nodes += [helper.make_node("Range", ["zero", "n", "one"], ["r"]),
              helper.make_node("Sub", ["n", "one"], ["last"]),
              helper.make_node("Sub", ["last", "r"], ["rev"]),
              helper.make_node("Gather", ["x", "rev"], ["logits"], axis=0)]
    add("gather reversing the batch", nodes, [ints("zero", 0), ints("one", 1)])
    add("slice reversing the batch", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["logits"])],
        [ints("st", [-1]), ints("en", [-BIG]), ints("ax", [0]), ints("sp", [-1])])
    add("roll by concat", [helper.make_node("Slice", ["x", "one", "big", "zero1"], ["a"]),
                           helper.make_node("Slice", ["x", "zero1", "one", "zero1"], ["b"]),
                           helper.make_node("Concat", ["a", "b"], ["logits"], axis=0)],
        [ints("one", [1]), ints("big", [BIG]), ints("zero1", [0])])
    add("softmax over axis -2 (the batch)", [helper.make_node("Softmax", ["x"], ["logits"], axis=-2)], [])
    add("scatter into the batch's first row", [helper.make_node("ScatterND", ["x", "row0", "zeros"], ["logits"])],
        [ints("row0", [[0]]), numpy_helper.from_array(np.zeros((1, D), np.float32), "zeros")])
    # [N, 6] -> [6, N] read back as [N, 6]: each row takes 6 samples' numbers, every shape as a row-wise one's
    add("transpose then reshape to [-1, 6]", [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                                              helper.make_node("Reshape", ["t", "shape"], ["logits"])],
        [ints("shape", [-1, D])])
    # the batch as the spatial axis of [1, 6, N]: a window of 3 samples
    w = np.random.default_rng(5).standard_normal((D, D, 3)).astype(np.float32)
    conv = [numpy_helper.from_array(w, "w")]
    for op, attrs, inits in (("MaxPool", {"kernel_shape": [3]}, []), ("Conv", {}, conv)):
        window = helper.make_node(op, ["u"] + [i.name for i in inits], ["c"], pads=[1, 1], **attrs)
        add(f"{op} along the batch", [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                                      helper.make_node("Unsqueeze", ["t", "zero1"], ["u"]), window,
                                      helper.make_node("Squeeze", ["c", "zero1"], ["s"]),
                                      helper.make_node("Transpose", ["s"], ["logits"], perm=[1, 0])],
            [ints("zero1", [0])] + inits)
    # normalized over [axis, rank) of [6, N]: every sample's numbers at once, shapes unchanged
    transposed = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0])]
    back = [helper.make_node("Transpose", ["y"], ["logits"], perm=[1, 0])]
    add("opset 11 Softmax over the block from axis 0", transposed + [helper.make_node("Softmax", ["t"], ["y"], axis=0)]
        + back, [], 11)
    add("LayerNormalization from axis 0", transposed + [helper.make_node("Shape", ["t"], ["ts"]),
                                                        helper.make_node("Expand", ["one", "ts"], ["scale"]),
                                                        helper.make_node("LayerNormalization", ["t", "scale"], ["y"],
                                                                         axis=0)] + back,
        [numpy_helper.from_array(np.ones((1, 1), np.float32), "one")], 17)
    # a positional table's first rows, as many as the batch: each sample gets the row of its place in the batch
    nodes = []
    batch_size(nodes, "n")
    table = numpy_helper.from_array(np.arange(2 * N * D, dtype=np.float32).reshape(2 * N, D) / N, "table")
    add("a table's rows sliced by the batch size", nodes + [helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
                                                            helper.make_node("Slice", ["table", "zero1", "n1"], ["r"]),
                                                            helper.make_node("Add", ["x", "r"], ["logits"])],
        [ints("zero", 0), ints("zero1", [0]), table])
    # a Reshape to [N, 2 + N // 4 % 2, -1]: a softmax over 3 numbers at batch 64, over 2 in passes of 5
    nodes = []
    batch_size(nodes, "n")
    nodes += [helper.make_node("Div", ["n", "four"], ["q"]), helper.make_node("Mod", ["q", "two"], ["r"]),
              helper.make_node("Add", ["r", "two"], ["a"]), helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
              helper.make_node("Unsqueeze", ["a", "zero1"], ["a1"]),
              helper.make_node("Concat", ["n1", "a1", "minus1"], ["shape"], axis=0),
              helper.make_node("Reshape", ["x", "shape"], ["r3"]), helper.make_node("Softmax", ["r3"], ["sm"]),
              helper.make_node("Reshape", ["sm", "flat"], ["logits"])]
    add("a Reshape's shape computed from the batch size", nodes,
        [ints("zero", 0), ints("zero1", [0]), ints("four", 4), ints("two", 2), ints("minus1", [-1]),
         ints("flat", [-1, D])])
    # torch.tril of a [N, D] value: which numbers of a sample survive depends on its row in the batch
    add("a Trilu over [N, D]", [helper.make_node("Trilu", ["x"], ["logits"], upper=0)], [], opset=14)
    return out


def swin_mask_model(path):
    """swin_t's shifted-window attention mask as torch.onnx.export writes it, on x [N, 6] seen as [N, 2, 3]:
    zeros of the window's shape (Shape from axis 1 on, past the batch), rows set by ScatterND at negative
    indices (Range(-1, 0)), elements added by ScatterND over repeated tuples, then Not(Equal(mask, 0)) picking
    the mask or -1 in a Where that is added to x."""
    nodes = [helper.make_node("Reshape", ["x", "win"], ["xw"]),
             helper.make_node("Shape", ["xw"], ["hw"], start=1),
             helper.make_node("ConstantOfShape", ["hw"], ["zeros"]),
             helper.make_node("Range", ["minus_one", "zero", "one"], ["rows"]),
             helper.make_node("Unsqueeze", ["rows", "last"], ["row_idx"]),
             helper.make_node("Shape", ["xw"], ["w"], start=2),
             helper.make_node("Concat", ["one1", "w"], ["row_shape"], axis=0),
             helper.make_node("ConstantOfShape", ["row_shape"], ["row_fill"],
                              value=numpy_helper.from_array(np.array([2.5], np.float32))),
             helper.make_node("ScatterND", ["zeros", "row_idx", "row_fill"], ["m1"]),
             helper.make_node("ScatterND", ["m1", "elems", "adds"], ["m2"], reduction="add"),
             helper.make_node("Equal", ["m2", "zero_f"], ["is_zero"]),
             helper.make_node("Not", ["is_zero"], ["set"]),
             helper.make_node("Where", ["set", "m2", "minus_one_f"], ["bias"]),
             helper.make_node("Add", ["xw", "bias"], ["y"]),
             helper.make_node("Reshape", ["y", "flat"], ["logits"])]
    inits = [ints("win", [-1, 2, 3]), ints("flat", [-1, D]), ints("minus_one", -1), ints("zero", 0),
             ints("one", 1), ints("one1", [1]), ints("last", [1]), ints("elems", [[0, 2], [1, -1], [0, 2]]),
             numpy_helper.from_array(np.array([3, 4, 5], np.float32), "adds"),
             numpy_helper.from_array(np.array(0, np.float32), "zero_f"),
             numpy_helper.from_array(np.array(-1, np.float32), "minus_one_f")]
    model(path, nodes, inits, D, opset=17)


def moving_model(path):
    """x [N, 6] -> Reshape [N, 2, 3] (shape from Shape) -> Transpose [2, N, 3] -> Gather axis 0 index 1 ->
    [N, 3] -> Softmax(axis -1)."""
    nodes = []
    batch_size(nodes, "n")
    nodes += [helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
              helper.make_node("Concat", ["n1", "rest"], ["shape"], axis=0),
              helper.make_node("Reshape", ["x", "shape"], ["r"]),
              helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0, 2]),
              helper.make_node("Gather", ["t", "one"], ["gth"], axis=0),
              helper.make_node("Softmax", ["gth"], ["logits"], axis=-1)]
    model(path, nodes, [ints("zero", 0), ints("zero1", [0]), ints("rest", [2, 3]), ints("one", 1)], 3)


def ptq(*args, env):
    """ptq with PTQ_PASS_ROWS set in env: (exit code, stdout, stderr)."""
    p = subprocess.run([PTQ, *args], capture_output=True, text=True, timeout=600, env=env)
    return p.returncode, p.stdout, p.stderr


def run(tmp, path, data, rows, threads=1):
    """ptq eval --profile with passes of `rows` (one after another on one thread, side by side on more)."""
    out = os.path.join(tmp, f"logits_{rows}_{threads}.npy")
    env = dict(os.environ, PTQ_PASS_ROWS=str(rows))
    rc, _, err = ptq("eval", "--model", path, "--data", data, "--device", "cpu", "--batch", str(N), "--logits", out,
                     "--threads", str(threads), "--profile", env=env)
    return rc, (np.load(out) if rc == 0 else None), err


def gather_error_model(path):
    """x [N, 6] + table[int(x[:, 0])]: a Gather whose indices are the data, out of range for one sample."""
    nodes = [helper.make_node("Slice", ["x", "s0", "s1", "ax"], ["c"]),
             helper.make_node("Cast", ["c"], ["ci"], to=TensorProto.INT64),
             helper.make_node("Squeeze", ["ci", "ax"], ["idx"]),
             helper.make_node("Gather", ["table", "idx"], ["g"], axis=0),
             helper.make_node("Add", ["x", "g"], ["logits"])]
    model(path, nodes, [ints("s0", [0]), ints("s1", [1]), ints("ax", [1]),
                        numpy_helper.from_array(np.arange(4 * D, dtype=np.float32).reshape(4, D), "table")], D)


def profile_observer_column(what, err):
    """calibrate --profile's op table gives each op type's observer time; they add up to the (observers) row."""
    rows, total = {}, None
    for line in err.splitlines():
        f = line.split()
        if len(f) == 5 and f[3].endswith("%") and f[1].isdigit():
            rows[f[0]] = float(f[4])
        elif len(f) == 3 and f[0] == "(observers)":
            total = float(f[1])
    # one decimal each: the column's sum within 0.05 ms a row of the total's
    ok = total is not None and len(rows) > 3 and abs(sum(rows.values()) - total) <= 0.05 * (len(rows) + 1) and \
        max(rows.values()) > 0
    check(f"{what} calibrate --profile: an observers column per op type ({len(rows)} rows) adding up to the "
          f"(observers) row ({total})", ok, "" if ok else err[-1500:])


def main():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, D)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "x.h5")
        with h5py.File(data, "w") as f:
            f["x"] = x
            f["labels"] = (np.arange(N) % 3).astype(np.int64)
        for name, path in mixing_models(tmp):
            want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            rc, got, err = run(tmp, path, data, 5)
            check(f"{name}: eval runs", rc == 0, "" if rc == 0 else err[-400:])
            check(f"{name}: the batch runs whole", "passes" not in err)
            check(f"{name}: logits as onnxruntime's on the whole batch",
                  got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-6))
        path = os.path.join(tmp, "moving.onnx")
        moving_model(path)
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        rc, got, err = run(tmp, path, data, 5)
        ok = rc == 0 and "passes of that many (13 passes)" in err
        check("batch through axis 1: runs in passes of 5", ok, "" if ok else err[-400:])
        check("batch through axis 1: logits as onnxruntime's", got is not None and np.allclose(got, want, rtol=1e-6))
        # side by side on three threads (one executor each): passes of 5 (13 of them), the same bytes
        rc, lanes, err = run(tmp, path, data, 5, threads=3)
        ok = rc == 0 and "passes of that many or fewer (13 passes)" in err and "side by side" in err
        check("batch through axis 1: passes side by side on three threads", ok, "" if ok else err[-400:])
        check("batch through axis 1: side by side, the same bytes", got is not None and lanes is not None and
              lanes.tobytes() == got.tobytes())
        rc0, whole, err0 = run(tmp, path, data, 0)
        check("batch through axis 1: PTQ_PASS_ROWS=0 runs whole, the same bytes",
              rc0 == 0 and "passes" not in err0 and got is not None and whole.tobytes() == got.tobytes())
        # a data-dependent error in a middle pass: reported as a whole run reports it, from any way of running
        # the passes, and no --logits file left
        path = os.path.join(tmp, "gather_error.onnx")
        gather_error_model(path)
        bad = x.copy()
        bad[:, 0] = np.arange(N) % 4
        bad[40, 0] = 9
        bad_data = os.path.join(tmp, "bad.h5")
        with h5py.File(bad_data, "w") as f:
            f["x"] = bad
            f["labels"] = (np.arange(N) % 3).astype(np.int64)
        errs = {}
        for rows, threads in ((0, 2), (5, 1), (5, 2), (5, 3)):
            out = os.path.join(tmp, f"logits_{rows}_{threads}.npy")
            if os.path.exists(out):
                os.remove(out)
            rc, _, err = run(tmp, path, bad_data, rows, threads)
            errs[(rows, threads)] = (rc, err.strip().splitlines()[-1:] if err.strip() else [])
            check(f"Gather error in a middle pass, passes of {rows} on {threads} threads: no logits file",
                  not os.path.exists(out))
        ok = errs[(0, 2)][0] == 7 and "index 9 is out of range" in str(errs[(0, 2)][1]) and \
            all(v == errs[(0, 2)] for v in errs.values())
        check("Gather error in a middle pass: exit 7 and the whole run's message every way", ok, str(errs))
        # torch's zeros_like: ConstantOfShape(Shape(x)) takes the batch size as a shape only
        path = os.path.join(tmp, "zeros_like.onnx")
        model(path, [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("ConstantOfShape", ["s"], ["z"]),
                     helper.make_node("Sub", ["z", "x"], ["logits"])], [], D)
        rc, got, err = run(tmp, path, data, 5)
        ok = rc == 0 and "passes of that many" in err and got is not None and np.array_equal(got, -x)
        check("zeros_like (ConstantOfShape of Shape): in passes, logits as onnxruntime's", ok, "" if ok else err[-400:])
        path = os.path.join(tmp, "swin_mask.onnx")
        swin_mask_model(path)
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        rc, got, err = run(tmp, path, data, 5)
        ok = rc == 0 and "passes of that many" in err and got is not None and np.array_equal(got, want)
        check("swin_t's mask (ScatterND, Not): in passes, logits as onnxruntime's", ok, "" if ok else err[-400:])
        rc0, whole, err0 = run(tmp, path, data, 0)
        check("swin_t's mask: PTQ_PASS_ROWS=0 runs whole, the same bytes",
              rc0 == 0 and "passes" not in err0 and got is not None and whole.tobytes() == got.tobytes())
        # the demo model: a whole eval in passes (the default) and without them, byte for byte; on several threads
        # the passes run side by side, one executor a thread: on two from the first batch, on three after a trial
        demo = os.path.join(tmp, "demo.h5")
        imgs = rng.integers(0, 256, size=(300, 28, 28), dtype=np.uint8)
        with h5py.File(demo, "w") as f:
            f["images"] = imgs
            f["labels"] = (np.arange(300) % 10).astype(np.int64)
        outs = {}
        for rows, threads in (("", "1"), ("0", "1"), ("7", "2"), ("", "3"), ("", "2")):
            out = os.path.join(tmp, f"demo_{rows or 'default'}_{threads}.npy")
            env = dict(os.environ, PTQ_PASS_ROWS=rows)
            batch = "32" if (rows, threads) == ("", "3") else "128" # the default on 3 threads: batches enough to time
            rc, _, err = ptq("eval", "--model", MODEL, "--data", demo, "--device", "cpu", "--batch", batch,
                             "--threads", threads, "--logits", out, "--profile", env=env)
            outs[rows if threads == "1" or rows else threads + "t"] = (rc, open(out, "rb").read() if rc == 0 else None,
                                                                        err)
        check("demo model: passes by default on one thread", outs[""][0] == 0 and "passes of that many" in outs[""][2])
        check("demo model: passes of 7 side by side on two threads",
              outs["7"][0] == 0 and "passes of that many or fewer" in outs["7"][2] and "side by side" in outs["7"][2])
        ok = outs["3t"][0] == 0 and re.search(r"passes side by side: [0-9.]+ us a sample, whole batches [0-9.]+: "
                                              r"(passes|whole batches) kept", outs["3t"][2]) is not None
        check("demo model: by default on three threads, whole batches and passes side by side timed, the faster kept",
              ok, "" if ok else outs["3t"][2][-400:])
        ok = outs["2t"][0] == 0 and "passes side by side from the first batch" in outs["2t"][2] and \
            "us a sample" not in outs["2t"][2]
        check("demo model: by default on two threads, passes side by side from the first batch, no trial", ok,
              "" if ok else outs["2t"][2][-400:])
        check("demo model: passes one after another on one thread", "side by side" not in outs[""][2])
        check("demo model: PTQ_PASS_ROWS=0 runs whole", outs["0"][0] == 0 and "passes" not in outs["0"][2])
        check("demo model: logits byte-identical with passes of the default size (1, 2, 3 threads), of 7 and without",
              outs[""][1] is not None and outs[""][1] == outs["0"][1] == outs["7"][1] == outs["3t"][1] == outs["2t"][1])
        # calibrate: the archive byte-identical with passes; the text model's /Slice_output_0 has no batch
        # dimension and is counted once per sample of each pass (passes of 1 and 3, and the default);
        text = os.path.join(os.path.dirname(MODEL), "text_encoder.onnx")
        txt = os.path.join(tmp, "txt.h5")
        n, seq = 50, 40
        lens = rng.integers(1, seq + 1, size=n)
        mask = (np.arange(seq)[None, :] < lens[:, None]).astype(np.int64)
        with h5py.File(txt, "w") as f:
            f["input_ids"] = rng.integers(2, 50, size=(n, seq)).astype(np.int64) * mask
            f["attention_mask"] = mask
        # on one thread the passes run one after another; on three side by side, each thread observing into its own
        # observers, folded in at the end
        for what, m, d, rows_list in (("demo", MODEL, demo, ("", "7")), ("text", text, txt, ("", "1", "3"))):
            archives = {}
            for rows, threads in [("0", "1")] + [(r, t) for r in rows_list for t in ("1", "3")]:
                out = os.path.join(tmp, f"{what}_{rows or 'default'}_{threads}.h5")
                env = dict(os.environ, PTQ_PASS_ROWS=rows)
                rc, _, err = ptq("calibrate", "--model", m, "--data", d, "--out", out, "--profile", "--threads",
                                 threads, env=env)
                archives[(rows, threads)] = open(out, "rb").read() if rc == 0 else None
                if (rows, threads) == ("0", "1"):
                    profile_observer_column(what, err)
                # the default on three threads times whole batches first: these sets are one batch, which runs whole
                side = threads != "1" and rows != ""
                ok = rc == 0 and (("passes" in err) == (rows != "0" and (rows, threads) != ("", "3"))) and \
                    (("side by side" in err) == side)
                check(f"{what} calibrate, PTQ_PASS_ROWS={rows or '(default)'}, {threads} threads: runs, in passes "
                      f"unless 0 (side by side on three threads when asked for)", ok, "" if ok else err[-400:])
            for rows, threads in archives:
                whole = archives[("0", "1")]
                check(f"{what} calibrate: the archive in passes of {rows or 'the default'} on {threads} threads is the "
                      "whole batch's", whole is not None and archives[(rows, threads)] == whole)
            # the outputs of Reshape, Transpose, Unsqueeze and Flatten take their input's observer (calib_set.c's
            # aliases): the same bytes as observing each (PTQ_OBSERVE_ALIAS=0), in passes on three threads too
            for rows, threads in (("0", "1"), (rows_list[-1], "3")):
                out = os.path.join(tmp, f"{what}_noalias_{rows}_{threads}.h5")
                env = dict(os.environ, PTQ_PASS_ROWS=rows, PTQ_OBSERVE_ALIAS="0")
                rc, _, err = ptq("calibrate", "--model", m, "--data", d, "--out", out, "--threads", threads, env=env)
                got = open(out, "rb").read() if rc == 0 else None
                same = got is not None and got == archives[(rows, threads)]
                check(f"{what} calibrate: the archive with every tensor observed itself (passes of {rows}, {threads} "
                      "threads) is the one with aliases", same, "" if same else err[-300:] if rc else "bytes differ")
    return finish("pass_rows_test")


if __name__ == "__main__":
    sys.exit(main())
