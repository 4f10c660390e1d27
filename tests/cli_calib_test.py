#!/usr/bin/env python3
"""`ptq calibrate`, `ptq merge` and `ptq export` end to end on the demo model:
the archive read back with h5py + hdf5plugin (every dataset, zstd filter
32015, provenance hashes recomputed here), its statistics and histograms
against onnxruntime's activations binned by numpy, identical archives
whatever the batch size, halves merged equal to the whole, the TensorRT cache
read back, and every bad input of the calibration issue with its exit code
and nothing left behind. Run by ctest (label oracle) with PTQ_BIN and
PTQ_SOURCE_DIR set."""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import h5py
    import hdf5plugin  # noqa: F401  (registers the zstd filter 32015 with h5py)
    import onnx
    import onnxruntime as ort
    from onnx import helper, TensorProto
    import onnx.numpy_helper
    from ptqtest import MODEL, PTQ, check, finish, fmnist_test, have_demo, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

N_IMAGES = 600




def run_ok(name, *args):
    rc, out, err = ptq(*args)
    check(name, rc == 0, f"exit {rc}" + (f", stderr {err.strip()[-400:]!r}" if rc else ""))
    return out


def expect_fail(name, args, code, needle, outputs, tmp):
    rc, out, err = ptq(*args)
    left = [o for o in outputs if os.path.exists(o)] + [f for f in os.listdir(tmp) if ".tmp-" in f]
    last = err.strip().splitlines()[-1] if err.strip() else ""
    check(name, rc == code and needle in err and not left, f"exit {rc} (want {code}): {last}" +
          (f"; left behind {left}" if left else ""))


def read_archive(path):
    """Every dataset and attribute of an archive, as numpy values."""
    out = {}
    with h5py.File(path, "r") as f:
        for k, v in f.attrs.items():
            out["@" + k] = v
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        f.visititems(visit)
        hist = f["tensors/hist"]
        out["!hist_filters"] = dict(hist._filters)
    return out


def same_contents(a, b, keys_prefix=("tensors/", "samples/")):
    """Statistics, histograms and sample ids equal bit for bit."""
    diff = []
    for k in a:
        if k.startswith(keys_prefix):
            if k not in b or a[k].dtype != b[k].dtype or not np.array_equal(a[k], b[k]):
                diff.append(k)
    for k in ("@sample_ids_sha256", "@n_samples", "@model_sha256", "@n_bins", "@selection", "@preprocess"):
        if a.get(k) != b.get(k) and not (isinstance(a.get(k), np.ndarray) and np.array_equal(a[k], b[k])):
            diff.append(k)
    return diff


def sample_hash(sources, ids_by_source):
    """The archive's documented sample-id hash (calib/calib_internal.h); sources by key (content SHA-256)."""
    h = hashlib.sha256()
    for name in sorted(sources):
        ids = np.sort(np.asarray(ids_by_source[name], dtype="<i8"))
        h.update(name.encode() + b"\0")
        h.update(struct.pack("<Q", len(ids)))
        h.update(ids.tobytes())
    return h.hexdigest()


def ort_activations(x, names):
    """onnxruntime's value of every named tensor for the batch x."""
    m = onnx.load(MODEL)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have and n != m.graph.input[0].name:
            m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, {m.graph.input[0].name: x})
    got = dict(zip([o.name for o in sess.get_outputs()], outs))
    got[m.graph.input[0].name] = x
    return got


def check_against_ort(arc, images):
    """min/max/counts within float rounding of onnxruntime's activations and
    the histogram close to numpy's binning of them at the archive's range."""
    x = ((images.astype(np.float32) * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353))
    x = x.reshape(-1, 1, 28, 28).astype(np.float32)
    names = [n.decode() if isinstance(n, bytes) else n for n in arc["tensors/name"]]
    acts = ort_activations(x, names)
    n_bins = int(arc["@n_bins"])
    worst_hist = 0.0
    bad = []
    for i, name in enumerate(names):
        v = acts[name].ravel().astype(np.float64)
        fin = v[np.isfinite(v)]
        if arc["tensors/count"][i] != v.size:
            bad.append(f"{name}: count {arc['tensors/count'][i]} vs {v.size}")
            continue
        tol = 1e-4 * max(1.0, np.abs(fin).max())
        if abs(arc["tensors/min"][i] - fin.min()) > tol or abs(arc["tensors/max"][i] - fin.max()) > tol:
            bad.append(f"{name}: min/max {arc['tensors/min'][i]},{arc['tensors/max'][i]} vs {fin.min()},{fin.max()}")
        nz = np.abs(fin[fin != 0])
        zeros = int((fin == 0).sum())
        if abs(arc["tensors/n_zero"][i] - zeros) > 1e-4 * v.size:
            bad.append(f"{name}: zeros {arc['tensors/n_zero'][i]} vs {zeros}")
        e = int(arc["tensors/exponent"][i])
        idx = np.minimum(np.floor(nz * (n_bins / 2.0 ** e)).astype(np.int64), n_bins - 1)
        ref = np.bincount(idx, minlength=n_bins)
        moved = np.abs(ref - arc["tensors/hist"][i]).sum() / max(1, nz.size)
        worst_hist = max(worst_hist, moved)
        if moved > 2e-3:
            bad.append(f"{name}: histogram differs from numpy's binning of onnxruntime's values by {moved:.2e}")
    check("archive statistics and histograms match onnxruntime's activations", not bad,
          f"{len(names)} tensors, worst histogram L1/count {worst_hist:.2e}" + ("; " + "; ".join(bad[:3]) if bad else ""))


def tiny_nan_model(path):
    """input -> Sub(x, x) = 0 -> Div(0, 0) = NaN everywhere -> Relu."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 28, 28])
    y = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 1, 28, 28])
    nodes = [helper.make_node("Sub", ["input", "input"], ["zero"], name="sub"),
             helper.make_node("Div", ["zero", "zero"], ["nan_everywhere"], name="div"),
             helper.make_node("Relu", ["nan_everywhere"], ["out"], name="relu")]
    g = helper.make_graph(nodes, "nan", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)


def tiny_zero_model(path):
    """Relu(input) -> 'relu:0' (a name with ':'); Sub(input, input) -> 'all_zero' -> Relu -> 'zero_out'."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 28, 28])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1, 28, 28]) for n in ("relu:0", "zero_out")]
    nodes = [helper.make_node("Relu", ["input"], ["relu:0"], name="relu"),
             helper.make_node("Sub", ["input", "input"], ["all_zero"], name="sub"),
             helper.make_node("Relu", ["all_zero"], ["zero_out"], name="relu2")]
    m = helper.make_model(helper.make_graph(nodes, "zero", [x], outs), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)


def tiny_range_model(path):
    """Relu(input) -> 'normal'; input * 1e-38 -> 'tiny' -> Relu -> 'tiny_out': ranges below about 1e-36, whose INT8
    scale is no normal float32."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 28, 28])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1, 28, 28]) for n in ("normal", "tiny_out")]
    nodes = [helper.make_node("Relu", ["input"], ["normal"], name="relu"),
             helper.make_node("Mul", ["input", "k"], ["tiny"], name="mul"),
             helper.make_node("Relu", ["tiny"], ["tiny_out"], name="relu2")]
    k = onnx.numpy_helper.from_array(np.array(1e-38, np.float32), "k")
    m = helper.make_model(helper.make_graph(nodes, "tiny", [x], outs, [k]), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)


def spaced_names(J, data):
    """Tensors named 'pad ', 'pad' and ' lead': an archive keeps every name as the model spells it, so export
    writes them and plan finds them (the reader dropped trailing spaces: 'pad ' came back as 'pad', listed twice,
    exit 4; alone it was exported under a name the model lacks and plan refused it as not in the model)."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 28, 28])
    names = ("pad ", "pad", " lead")
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1, 28, 28]) for n in names]
    nodes = [helper.make_node("Relu", ["input"], ["pad "]), helper.make_node("Tanh", ["input"], ["pad"]),
             helper.make_node("Sigmoid", ["input"], [" lead"])]
    m = helper.make_model(helper.make_graph(nodes, "spaced", [x], outs), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, J("spaced.onnx"))
    run_ok("calibrate a model whose tensor names end or start with a space", "calibrate", "--model",
           J("spaced.onnx"), "--data", data, "--out", J("spaced.h5"), "--samples", "20")
    rc, _, err = ptq("export", J("spaced.h5"), "--method", "minmax", "--format", "json", "--out", J("spaced.json"),
                     "--quiet")
    got = [t["name"] for t in json.load(open(J("spaced.json")))["tensors"]] if rc == 0 else []
    check("export json: names with leading and trailing spaces kept as the model has them",
          rc == 0 and sorted(got) == sorted(names), f"exit {rc}, {got}: {err.strip()[-200:]}")
    rc, _, err = ptq("export", J("spaced.h5"), "--method", "minmax", "--format", "trt", "--out", J("spaced.cache"),
                     "--quiet")
    got = [ln.rsplit(": ", 1)[0] for ln in open(J("spaced.cache")).read().split("\n")[1:-1]] if rc == 0 else []
    check("export trt: one line per spaced name, as spelt", rc == 0 and sorted(got) == sorted(names),
          f"exit {rc}, {got}: {err.strip()[-200:]}")
    rc, _, err = ptq("plan", J("spaced.h5"), "--model", J("spaced.onnx"), "--out", J("spaced-plan.json"))
    check("plan: the archive's spaced names are the model's", rc == 0, f"exit {rc}: {err.strip()[-200:]}")


def one_outlier(J):
    """4,095 N(0, 1) values and one 1e4 through x -> MatMul(I) -> a -> MatMul(I) -> t -> MatMul -> h -> MatMul -> y
    (t = x, quantized by the default plan; a at the FP16 edge): the calibrated amax (entropy 1e4, and the
    default percentile too) rounds nearly every value to the zero code, which ptq export and ptq plan say,
    naming the tensors; without the outlier neither warns."""
    rng = np.random.default_rng(5)
    eye = np.eye(64, dtype=np.float32)
    init = [onnx.numpy_helper.from_array(w, n) for n, w in (
        ("I1", eye), ("I2", eye), ("W1", (rng.standard_normal((64, 32)) * 0.2).astype(np.float32)),
        ("W2", (rng.standard_normal((32, 10)) * 0.3).astype(np.float32)))]
    nodes = [helper.make_node("MatMul", [a, w], [o]) for a, w, o in
             (("x", "I1", "a"), ("a", "I2", "t"), ("t", "W1", "h"), ("h", "W2", "y"))]
    g = helper.make_graph(nodes, "outlier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], initializer=init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, J("outlier.onnx"))
    x = rng.standard_normal((64, 64)).astype(np.float32)
    for name, data in (("normal", x), ("outlier", np.where(np.arange(x.size).reshape(x.shape) == 0, 1e4, x))):
        with h5py.File(J(f"{name}-data.h5"), "w") as f:
            f["x"] = data.astype(np.float32)
            f["labels"] = np.zeros(len(data), np.int64)
        run_ok(f"one outlier: calibrate {name}", "calibrate", "--model", J("outlier.onnx"), "--data",
               J(f"{name}-data.h5"), "--out", J(f"{name}-c.h5"))
        rc, _, err = ptq("export", J(f"{name}-c.h5"), "--method", "entropy", "--format", "json", "--out",
                         J(f"{name}-ranges.json"))
        warned = [n for n in ("x", "a", "t") if f"ptq export: warning: tensor '{n}'" in err]
        want = ["x", "a", "t"] if name == "outlier" else []
        check(f"one outlier: export --method entropy on the {name} archive warns of the zero code for {want}",
              rc == 0 and warned == want and (not want or "to 0" in err), f"exit {rc}, warned {warned}: {err[-300:]}")
        rc, _, err = ptq("plan", J(f"{name}-c.h5"), "--model", J("outlier.onnx"), "--out", J(f"{name}-plan.json"))
        warned = [n for n in ("x", "a", "t", "h") if f"ptq plan: warning: tensor '{n}'" in err]
        check(f"one outlier: plan (percentile 99.99) on the {name} archive warns for the quantized t only",
              rc == 0 and warned == (["t"] if name == "outlier" else []), f"exit {rc}, warned {warned}: {err[-300:]}")


def main():
    if not have_demo():
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-calib-")
    images = fmnist_test(N_IMAGES)[0]
    data = os.path.join(tmp, "calib.h5")
    with h5py.File(data, "w") as f:
        f.create_dataset("images", data=images)
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731

    # the whole set, read back; provenance recomputed here
    run_ok("calibrate", "calibrate", "--model", MODEL, "--data", data, "--out", J("whole.h5"), "--batch", "64")
    whole = read_archive(J("whole.h5"))
    model_sha = hashlib.sha256(open(MODEL, "rb").read()).hexdigest()
    names = [n.decode() if isinstance(n, bytes) else n for n in whole["tensors/name"]]
    check("archive: zstd filter 32015 on the histograms", "32015" in {str(k) for k in whole["!hist_filters"]}, str(whole["!hist_filters"]))
    check("archive: every dataset read back", all(k in whole for k in (
        "tensors/name", "tensors/count", "tensors/n_zero", "tensors/n_nan", "tensors/n_inf", "tensors/n_binned",
        "tensors/min", "tensors/max", "tensors/exponent", "tensors/hist", "samples/id", "samples/source")),
        f"{len([k for k in whole if not k.startswith(('@', '!'))])} datasets, {len(names)} tensors")
    check("archive: 23 tensors by default (float inputs of Conv/Gemm and every activation)", len(names) == 23 and
          names[0] == "input" and "logits" in names, str(len(names)))
    check("archive: model SHA-256", whole["@model_sha256"] == model_sha)
    srcs = [s.decode() if isinstance(s, bytes) else s for s in whole["@sources"]]
    data_key = hashlib.sha256(open(data, "rb").read()).hexdigest()
    keys = [s.decode() if isinstance(s, bytes) else s for s in whole["@sources_sha256"]]
    check("archive: sample ids and their SHA-256 (sources keyed by content)", srcs == [data] and keys == [data_key]
          and np.array_equal(whole["samples/id"], np.arange(N_IMAGES)) and
          whole["@sample_ids_sha256"] == sample_hash(keys, {data_key: range(N_IMAGES)}),
          str(whole["@sample_ids_sha256"])[:16])
    check("archive: ptq version, bins, selection, preprocessing", whole["@ptq_version"] and whole["@n_bins"] == 4096
          and whole["@selection"] == "ops=;tensors=" and "mean=0.286" in whole["@preprocess"])
    hist_ok = all(whole["tensors/hist"][i].sum() == whole["tensors/n_binned"][i] for i in range(len(names)))
    counts_ok = np.array_equal(whole["tensors/count"], whole["tensors/n_zero"] + whole["tensors/n_nan"] +
                               whole["tensors/n_inf"] + whole["tensors/n_binned"])
    check("archive: counts add up, histograms sum to the binned values", hist_ok and counts_ok)
    check_against_ort(whole, images)

    # batch size and sharding do not change a bit
    run_ok("calibrate --batch 1", "calibrate", "--model", MODEL, "--data", data, "--out", J("b1.h5"), "--batch", "1")
    run_ok("calibrate --batch 600", "calibrate", "--model", MODEL, "--data", data, "--out", J("b600.h5"),
           "--batch", "600", "--threads", "1")
    for other in ("b1.h5", "b600.h5"):
        d = same_contents(whole, read_archive(J(other)))
        check(f"batch 64 and {other} archives identical", not d, str(d))
    for k, bt in ((0, "50"), (1, "333"), (2, "7")):
        run_ok(f"calibrate --shard {k}/3", "calibrate", "--model", MODEL, "--data", data, "--out", J(f"s{k}.h5"),
               "--shard", f"{k}/3", "--batch", bt)
    run_ok("merge 3 shards", "merge", J("s2.h5"), J("s0.h5"), J("s1.h5"), "--out", J("merged3.h5"))
    d = same_contents(whole, read_archive(J("merged3.h5")))
    check("three shards merged (in another order) == the whole set", not d, str(d))
    run_ok("calibrate half 0/2", "calibrate", "--model", MODEL, "--data", data, "--out", J("h0.h5"), "--shard", "0/2")
    run_ok("calibrate half 1/2", "calibrate", "--model", MODEL, "--data", data, "--out", J("h1.h5"), "--shard", "1/2")
    run_ok("merge halves", "merge", J("h0.h5"), J("h1.h5"), "--out", J("halves.h5"))
    d = same_contents(whole, read_archive(J("halves.h5")))
    check("two halves merged == the whole set", not d, str(d))

    same_bytes = lambda p, q: open(p, "rb").read() == open(q, "rb").read()  # noqa: E731
    check("archive files byte-identical: batch 64, batch 1, halves merged, thirds merged",
          same_bytes(J("whole.h5"), J("b1.h5")) and same_bytes(J("whole.h5"), J("halves.h5")) and
          same_bytes(J("whole.h5"), J("merged3.h5")))
    # --help promises what holds: the same bytes on one device; --device ref (and a GPU) round activations otherwise
    rc, out, err = ptq("calibrate", "--help")
    text = " ".join(out.split())
    check("calibrate --help: the same archive on one device, not whatever the device",
          rc == 0 and "On one device the archive is the same bytes" in text and "devices round" in text and
          "whatever the batch size, device" not in text, text[:700])

    # --samples/--seed: a seeded pick, recorded
    run_ok("calibrate --samples 100 --seed 7", "calibrate", "--model", MODEL, "--data", data, "--out", J("p7.h5"),
           "--samples", "100", "--seed", "7")
    p7 = read_archive(J("p7.h5"))
    rc, _, err = ptq("calibrate", "--model", MODEL, "--data", data, "--out", J("seed-alone.h5"), "--seed", "7")
    check("--seed without --samples (every sample observed: it would do nothing) is refused, exit 2, no archive",
          rc == 2 and "--seed picks the --samples N observed" in err and not os.path.exists(J("seed-alone.h5")),
          f"exit {rc}: {err[-300:]}")
    # sensitivity's --samples 0 measures every sample: a --seed beside it would do nothing, refused the same way
    rc, _, err = ptq("sensitivity", "--model", MODEL, "--calib", J("p7.h5"), "--data", data, "--samples", "0",
                     "--seed", "3", "--out", J("seed0.json"))
    check("sensitivity --samples 0 --seed 3 is refused, exit 2, no report",
          rc == 2 and "--seed picks the --samples N measured" in err and not os.path.exists(J("seed0.json")),
          f"exit {rc}: {err[-300:]}")
    ids = p7["samples/id"]
    check("--samples 100: 100 distinct ids, hash recorded", len(set(ids.tolist())) == 100 and
          p7["@sample_ids_sha256"] == sample_hash([data_key], {data_key: ids}) and p7["tensors/count"][0] == 100 * 784)

    # export: the TensorRT cache read back gives the JSON's amax
    run_ok("export json", "export", J("whole.h5"), "--method", "entropy", "--format", "json", "--out", J("r.json"),
           "--model", MODEL, "--quiet")
    run_ok("export trt", "export", J("whole.h5"), "--method", "entropy", "--format", "trt", "--out", J("r.cache"),
           "--quiet")
    rj = json.load(open(J("r.json")))
    lines = open(J("r.cache")).read().split("\n")
    amax_trt = {}
    for ln in lines[1:-1]:
        name, hexbits = ln.rsplit(": ", 1)
        amax_trt[name] = struct.unpack(">f", bytes.fromhex(hexbits))[0] * 127
    ok = lines[0] == "TRT-100300-EntropyCalibration2" and lines[-1] == "" and len(amax_trt) == len(names)
    for t in rj["tensors"]:
        ok &= abs(amax_trt.get(t["name"], -1) - t["amax"]) <= 1e-6 * t["amax"] and t["method"] == "entropy"
    check("trt cache: header, one line per tensor, amax recovered", ok, f"{len(amax_trt)} tensors")
    run_ok("export ort", "export", J("whole.h5"), "--method", "percentile", "--format", "ort", "--out", J("ort"),
           "--quiet")
    check("ort tables written", all(os.path.exists(J("ort", f)) for f in
                                    ("calibration.flatbuffers", "calibration.json", "calibration.cache")))
    # a failed commit of the third table puts the first two back as they were (PTQ_TEST_FAIL_RENAME makes its
    # rename fail after the other two took their names)
    os.makedirs(J("ort-old"))
    for f_, body in (("calibration.flatbuffers", b"old flatbuffers"), ("calibration.json", b"old json")):
        open(J("ort-old", f_), "wb").write(body)
    rc, out, err = ptq("export", J("whole.h5"), "--method", "percentile", "--format", "ort", "--out", J("ort-old"),
                       "--quiet", env={"PTQ_TEST_FAIL_RENAME": "calibration.cache"})
    kept = [open(J("ort-old", f_), "rb").read() for f_ in ("calibration.flatbuffers", "calibration.json")]
    check("ort tables: a failed third rename leaves the old tables as they were, no temporary", rc == 3 and
          kept == [b"old flatbuffers", b"old json"] and sorted(os.listdir(J("ort-old"))) ==
          ["calibration.flatbuffers", "calibration.json"], f"exit {rc}, {kept}, {sorted(os.listdir(J('ort-old')))}, "
          f"{err.strip()[-200:]}")
    # a folder where calibration.cache goes: refused before any work (its rename failed after it all)
    os.makedirs(J("ort-old", "calibration.cache", "inside"))
    rc, out, err = ptq("export", J("whole.h5"), "--method", "percentile", "--format", "ort", "--out", J("ort-old"),
                       "--quiet")
    kept = [open(J("ort-old", f_), "rb").read() for f_ in ("calibration.flatbuffers", "calibration.json")]
    check("ort tables: a folder at calibration.cache's name refused (exit 3, naming it), the old tables kept",
          rc == 3 and "calibration.cache: it is a folder" in err and kept == [b"old flatbuffers", b"old json"],
          f"exit {rc}, {kept}: {err.strip()[-200:]}")
    run_ok("export again", "export", J("halves.h5"), "--method", "entropy", "--format", "trt", "--out", J("r2.cache"),
           "--quiet")
    check("export from the merged halves gives the same bytes", open(J("r.cache"), "rb").read() ==
          open(J("r2.cache"), "rb").read())

    # an all-zero tensor (degenerate: left out of the INT8 cache, with a warning) and a name with ':'
    zero_model = J("zero.onnx")
    tiny_zero_model(zero_model)
    run_ok("calibrate a model with an all-zero tensor", "calibrate", "--model", zero_model, "--data", data,
           "--out", J("zero.h5"), "--samples", "20")
    rc, out, err = ptq("export", J("zero.h5"), "--method", "minmax", "--format", "trt", "--out", J("zero.cache"),
                       "--quiet")
    cache = open(J("zero.cache")).read() if os.path.exists(J("zero.cache")) else ""
    check("export: ':' names written and warned about, all-zero tensors left out and warned about",
          rc == 0 and "\nrelu:0: " in cache and "all_zero" not in cache and "zero_out" not in cache and
          "saw only zeros" in err and "'relu:0' has ':'" in err,
          f"exit {rc}, stderr {err.strip()!r}")
    rc, out, err = ptq("export", J("zero.h5"), "--method", "entropy", "--format", "json", "--out", J("zero.json"),
                       "--quiet")
    zj = {t["name"]: t for t in json.load(open(J("zero.json")))["tensors"]} if rc == 0 else {}
    check("json: all-zero tensors marked degenerate with amax 0", rc == 0 and zj.get("all_zero", {}).get(
        "degenerate") is True and zj["all_zero"]["amax"] == 0 and zj["relu:0"]["amax"] > 0, str(zj.get("all_zero")))
    # only a TensorRT cache is read by a parser that cuts names at ':' (the EP's); JSON and ORT's tables keep them
    # whole, and the warning said otherwise for them too
    for fmt, out in (("json", "colon.json"), ("ort", "colon-ort")):
        rc, _, err = ptq("export", J("zero.h5"), "--method", "minmax", "--format", fmt, "--out", J(out), "--quiet")
        check(f"export --format {fmt}: no warning about ':' in names (nothing cuts them there)",
              rc == 0 and "has ':'" not in err, f"exit {rc}, stderr {err.strip()!r}")

    # ranges below about 1e-36 (no normal float32 INT8 scale): left out of the TensorRT-facing tables with a warning
    # naming them, as all-zero tensors are (both formats exited 2, writing nothing)
    tiny_range_model(J("tiny.onnx"))
    run_ok("calibrate a model with tiny ranges", "calibrate", "--model", J("tiny.onnx"), "--data", data,
           "--out", J("tiny.h5"), "--samples", "20")
    for method in ("minmax", "entropy"):
        rc, _, err = ptq("export", J("tiny.h5"), "--method", method, "--format", "trt", "--out", J("tiny.cache"),
                         "--quiet")
        cache = open(J("tiny.cache")).read() if rc == 0 else ""
        check(f"export {method} trt: tiny ranges left out with a warning naming each, the others written",
              rc == 0 and "\nnormal: " in cache and "tiny" not in cache and "tensor 'tiny'" in err and
              "tensor 'tiny_out'" in err and "left out of the TensorRT cache" in err, f"exit {rc}: {err.strip()!r}")
        rc, _, err = ptq("export", J("tiny.h5"), "--method", method, "--format", "ort", "--out", J("tiny-ort"),
                         "--quiet")
        tables = [open(J("tiny-ort", f_)).read() if rc == 0 else "" for f_ in ("calibration.cache",
                                                                               "calibration.json")]
        check(f"export {method} ort: tiny ranges out of calibration.cache (kept in calibration.json), warned about",
              rc == 0 and "normal " in tables[0] and "tiny" not in tables[0] and '"tiny"' in tables[1] and
              "tensor 'tiny'" in err and "calibration.json keeps it" in err, f"exit {rc}: {err.strip()!r}")

    # bad input: clear message, non-zero exit, nothing written
    other = J("other.onnx")
    m = onnx.load(MODEL)
    m.doc_string = "the same graph, other bytes"
    onnx.save(m, other)
    run_ok("calibrate other model", "calibrate", "--model", other, "--data", data, "--out", J("other.h5"),
           "--samples", "50")
    expect_fail("export: archive of another model", ["export", J("whole.h5"), "--method", "minmax", "--format", "trt",
                "--out", J("bad1.cache"), "--model", other], 2, "another model", [J("bad1.cache")], tmp)
    expect_fail("merge: archive of another model", ["merge", J("whole.h5"), J("other.h5"), "--out", J("bad2.h5")], 2,
                "different models", [J("bad2.h5")], tmp)
    run_ok("calibrate --bins 8192", "calibrate", "--model", MODEL, "--data", data, "--out", J("bins.h5"),
           "--bins", "8192", "--shard", "1/2")
    expect_fail("merge: different observer bins", ["merge", J("h0.h5"), J("bins.h5"), "--out", J("bad3.h5")], 2,
                "different observer bins", [J("bad3.h5")], tmp)
    run_ok("calibrate --ops Conv", "calibrate", "--model", MODEL, "--data", data, "--out", J("conv.h5"),
           "--ops", "Conv", "--shard", "1/2")
    expect_fail("merge: different tensor selection", ["merge", J("h0.h5"), J("conv.h5"), "--out", J("bad4.h5")], 2,
                "different tensor selections", [J("bad4.h5")], tmp)
    expect_fail("merge: the same samples twice", ["merge", J("h0.h5"), J("whole.h5"), "--out", J("bad5.h5")], 2,
                "count twice", [J("bad5.h5")], tmp)
    expect_fail("calibrate: a pattern that selects no tensor", ["calibrate", "--model", MODEL, "--data", data,
                "--out", J("bad6.h5"), "--tensors", "no_such_tensor*"], 2, "no_such_tensor*", [J("bad6.h5")], tmp)
    expect_fail("calibrate: an op type that selects no tensor", ["calibrate", "--model", MODEL, "--data", data,
                "--out", J("bad7.h5"), "--ops", "LSTM"], 2, "LSTM", [J("bad7.h5")], tmp)
    nan_model = J("nan.onnx")
    tiny_nan_model(nan_model)
    expect_fail("calibrate: a tensor that is all NaN", ["calibrate", "--model", nan_model, "--data", data,
                "--out", J("bad8.h5")], 7, "nan_everywhere", [J("bad8.h5")], tmp)
    blob = open(J("whole.h5"), "rb").read()
    open(J("trunc.h5"), "wb").write(blob[: len(blob) // 2])
    expect_fail("export: a truncated archive", ["export", J("trunc.h5"), "--method", "minmax", "--format", "json",
                "--out", J("bad9.json")], 4, "trunc.h5", [J("bad9.json")], tmp)
    expect_fail("export: an HDF5 file that is no archive", ["export", data, "--method", "minmax", "--format", "json",
                "--out", J("bad10.json")], 4, "not a ptq calibration archive", [J("bad10.json")], tmp)
    expect_fail("export: FP8 ranges into a TensorRT cache", ["export", J("whole.h5"), "--method", "minmax",
                "--target", "fp8-e4m3", "--format", "trt", "--out", J("bad11.cache")], 5, "INT8",
                [J("bad11.cache")], tmp)
    expect_fail("export: unknown method", ["export", J("whole.h5"), "--method", "kl", "--format", "trt",
                "--out", J("bad12.cache")], 2, "kl", [J("bad12.cache")], tmp)
    expect_fail("calibrate: bins not a power of two", ["calibrate", "--model", MODEL, "--data", data,
                "--out", J("bad13.h5"), "--bins", "3000"], 2, "power of two", [J("bad13.h5")], tmp)
    expect_fail("calibrate: a shard count that would overflow its share", ["calibrate", "--model", MODEL, "--data",
                data, "--out", J("bad14.h5"), "--samples", "10", "--shard", "9223372036854775806/9223372036854775807"],
                2, "--shard", [J("bad14.h5")], tmp)
    expect_fail("export: a --trt-version that overflows", ["export", J("whole.h5"), "--method", "minmax", "--format",
                "trt", "--out", J("bad15.cache"), "--trt-version", "99999999999.1.1"], 2, "--trt-version",
                [J("bad15.cache")], tmp)
    expect_fail("export: FP8 ranges into ORT tables leave no folder", ["export", J("whole.h5"), "--method", "minmax",
                "--target", "fp8-e4m3", "--format", "ort", "--out", J("bad16")], 5, "INT8", [J("bad16")], tmp)
    with h5py.File(J("rank9.h5"), "w") as f:  # more dims than PTQ_MAX_DIMS: the chunk cache sizing read past them
        f.create_dataset("images", data=np.zeros((4, 28, 28, 1, 1, 1, 1, 1, 1), np.uint8),
                         chunks=(1, 28, 28, 1, 1, 1, 1, 1, 1))
    expect_fail("calibrate: 9-D chunked images", ["calibrate", "--model", MODEL, "--data", J("rank9.h5"),
                "--out", J("bad18.h5")], 4, "rank 9", [J("bad18.h5")], tmp)

    # corrupt archives: exit 4 naming the file, nothing written
    def corrupt(name, edit):
        path = J(name + ".h5")
        open(path, "wb").write(open(J("h1.h5"), "rb").read())
        with h5py.File(path, "r+") as f:
            edit(f)
        return path

    def set_item(key, idx, value):
        def edit(f):
            d = f[key][()]
            d[idx] = value
            f[key][...] = d
        return edit

    def hist_above_max(f):
        h = f["tensors/hist"][()]
        k = int(np.nonzero(h[1])[0][0])
        h[1, k] -= 1
        h[1, -1] += 1
        f["tensors/hist"][...] = h

    def renamed(names):
        def edit(f):
            v = [x.decode() if isinstance(x, bytes) else x for x in f["tensors/name"][()]]
            v[: len(names)] = names
            del f["tensors/name"]
            f.create_dataset("tensors/name", data=np.array(v, dtype=object), dtype=h5py.string_dtype())
        return edit

    def not_utf8(f):  # was exit 2 ('tensor 0 name ... is not valid UTF-8' from the exporter), not the archive's fault
        v = [x if isinstance(x, bytes) else x.encode() for x in f["tensors/name"][()]]
        v[0] = b"in\xffput"
        del f["tensors/name"]
        f.create_dataset("tensors/name", data=np.array(v, dtype=object), dtype=h5py.string_dtype("ascii"))

    def no_tensors(f):
        for k in ("count", "n_zero", "n_nan", "n_inf", "n_binned", "min", "max", "exponent", "name", "hist"):
            del f["tensors/" + k]
        f.create_dataset("tensors/name", data=np.array([], dtype=object), dtype=h5py.string_dtype())

    bad_archives = [
        ("a histogram bin above max|x|", hist_above_max, "above max|x|"),
        ("max|x| 0 with binned values", lambda f: (set_item("tensors/min", 1, 0.0)(f), set_item("tensors/max", 1, 0.0)(f),
                                                    set_item("tensors/exponent", 1, 0)(f)), "does not match max|x|"),
        ("n_bins 0", lambda f: f.attrs.__setitem__("n_bins", 0), "n_bins 0"),
        ("n_bins 2^40", lambda f: f.attrs.__setitem__("n_bins", 1 << 40), "power of two"),
        ("model_sha256 not hex", lambda f: f.attrs.__setitem__("model_sha256", "z" * 64), "model_sha256"),
        ("no tensors", no_tensors, "no tensor"),
        ("a tensor named twice", renamed(["x", "x"]), "listed twice"),
        ("a tensor without a name", renamed([""]), "without a name"),
        ("a tensor name that is not UTF-8", not_utf8, "in 'tensors/name' is not UTF-8"),
        ("a sample listed twice", set_item("samples/id", 1, int(read_archive(J("h1.h5"))["samples/id"][0])),
         "listed twice"),
    ]
    for i, (what, edit, needle) in enumerate(bad_archives):
        path = corrupt(f"corrupt{i}", edit)
        expect_fail(f"export: corrupt archive, {what}", ["export", path, "--method", "entropy", "--format", "trt",
                    "--out", J(f"bad_c{i}.cache")], 4, needle, [J(f"bad_c{i}.cache")], tmp)
        expect_fail(f"merge: corrupt archive, {what}", ["merge", J("h0.h5"), path, "--out", J(f"bad_c{i}.h5")], 4,
                    needle, [J(f"bad_c{i}.h5")], tmp)

    def huge_counts(f):
        c, z = f["tensors/count"][()], f["tensors/n_zero"][()]
        c[0] += 3 << 61
        z[0] += 3 << 61
        f["tensors/count"][...] = c
        f["tensors/n_zero"][...] = z

    big0 = corrupt("big0", huge_counts)
    big1 = J("big1.h5")
    open(big1, "wb").write(open(J("h0.h5"), "rb").read())
    with h5py.File(big1, "r+") as f:
        huge_counts(f)
    expect_fail("merge: counts that would overflow", ["merge", big1, big0, "--out", J("bad17.h5")], 2,
                "2^63 - 1", [J("bad17.h5")], tmp)

    def many_sources(src, path, names):
        """src's archive with its samples credited to names[0] and names[1:] empty, unhashed (an older ptq's),
        rewritten with HDF5's newest format, whose dense attribute storage holds a 'sources' past 64 KiB."""
        with h5py.File(src, "r") as s, h5py.File(path, "w", libver="latest") as f:
            for k, v in s.attrs.items():
                if k not in ("sources", "sources_sha256", "sample_ids_sha256"):
                    f.attrs[k] = v
            s.copy(s["tensors"], f, "tensors")
            ids = s["samples/id"][()]
            f.attrs["sources"] = np.array([n.encode() for n in names])
            f.attrs["sample_ids_sha256"] = sample_hash(names, {n: ids if i == 0 else [] for i, n in enumerate(names)})
            f["samples/source"] = np.zeros(len(ids), np.int32)
            f["samples/id"] = ids
        return path

    # sources are matched pairwise (quadratic): an archive lists at most 4000; 100,000 names (1 MB) kept export
    # busy for minutes; a merge past 4000 is refused (it failed writing, after all the work), one of 4000 goes through
    crowd = many_sources(J("h1.h5"), J("crowd.h5"), [f"s{i:06d}" for i in range(100000)])
    t0 = time.monotonic()
    try:
        p = subprocess.run([PTQ, "export", crowd, "--method", "minmax", "--format", "json", "--out", J("crowd.json")],
                           capture_output=True, text=True, timeout=60)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, "timed out"
    secs = time.monotonic() - t0
    check("export: an archive of 100,000 sources refused at once", rc == 4 and "more than the 4000" in err and
          secs < 30 and not os.path.exists(J("crowd.json")), f"exit {rc} in {secs:.1f} s: {err.strip()[-200:]}")
    a = many_sources(J("h0.h5"), J("a2000.h5"), [f"a{i:05d}" for i in range(2000)])
    b = many_sources(J("h1.h5"), J("b2001.h5"), [f"b{i:05d}" for i in range(2001)])
    b2 = many_sources(J("h1.h5"), J("b2000.h5"), [f"b{i:05d}" for i in range(2000)])
    expect_fail("merge: 2000 + 2001 sources", ["merge", a, b, "--out", J("bad18.h5")], 2, "more than 4000",
                [J("bad18.h5")], tmp)
    run_ok("merge: 2000 + 2000 sources", "merge", a, b2, "--out", J("m4000.h5"))
    run_ok("export: the archive of 4000 sources", "export", J("m4000.h5"), "--method", "minmax", "--format", "json",
           "--out", J("m4000.json"))

    one_outlier(J)
    spaced_names(J, data)
    return finish("cli_calib_test")


if __name__ == "__main__":
    sys.exit(main())
