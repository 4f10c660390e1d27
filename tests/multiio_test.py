"""Models with more than one output, a fixed batch, or an NHWC input (issue
18 item 6), against onnxruntime: --output picks the logits output (eval,
sensitivity, calibrate -> plan -> validate, run --budget), a model with several outputs takes the only
[N, classes] one or is refused with the outputs listed; a fixed batch of 1
runs one sample at a time with a notice, a fixed batch of 4 in batches of 4
(a pick that is no multiple of 4 is refused); [N, H, W, C] inputs with C 1,
3 or 4 need no flag (4: RGBA, the images' alpha or an opaque one).

The models are tiny (GlobalAveragePool, Flatten, Gemm, Transpose), so
onnxruntime gives the logits of the preprocessed images (scale 1/255)."""
import json
import os
import sys
import tempfile

from ptqtest import check, finish, ptq

try:
    import h5py
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"multiio_test: skipped ({e})")
    sys.exit(77)

H = W = 4


def save(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def two_output_model(path, rng, pooled_rank2):
    """x [N,3,4,4] -> pooled = Flatten(GAP(x)) [N,3] -> logits = Gemm(pooled) [N,5]. The second output is
    pooled itself ([N,3], so two outputs are [N, classes]) or GAP(x) [N,3,1,1]."""
    w = numpy_helper.from_array(rng.standard_normal((5, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "b")
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["gap"]), helper.make_node("Flatten", ["gap"], ["pooled"]),
             helper.make_node("Gemm", ["pooled", "w", "b"], ["logits"], transB=1)]
    second = vi("pooled", ["N", 3]) if pooled_rank2 else vi("gap", ["N", 3, 1, 1])
    save(path, nodes, [vi("x", ["N", 3, H, W])], [second, vi("logits", ["N", 5])], [w, b])


def pool_model(path, shape, nhwc):
    """logits[n, c] = mean over H, W of input channel c; shape is the input's."""
    nodes, src = [], "x"
    if nhwc:
        nodes.append(helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]))
        src = "t"
    nodes += [helper.make_node("GlobalAveragePool", [src], ["p"]), helper.make_node("Flatten", ["p"], ["y"])]
    c = shape[3] if nhwc else shape[1]
    save(path, nodes, [vi("x", shape)], [vi("y", [shape[0], c])])


def ort_run(model, x, output=None):
    """onnxruntime's outputs, one sample at a time (fixed-batch models take no other)."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [output] if output else None
    return np.concatenate([sess.run(names, {"x": x[i:i + 1]})[0] for i in range(len(x))])


def eval_logits(tmp, model, data, *extra):
    out = os.path.join(tmp, "logits.npy")
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = ptq("eval", "--model", model, "--data", data, "--logits", out, "--json", *extra)
    got = np.load(out) if rc == 0 and os.path.exists(out) else None
    rep = json.loads(so) if rc == 0 else {}
    return rc, got, rep, se


def close(a, b, tol=1e-4):
    return a is not None and a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def top1(logits, labels):
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def main():
    rng = np.random.default_rng(6)
    n = 48
    rgb = rng.integers(0, 256, size=(n, H, W, 3), dtype=np.uint8)
    labels = rng.integers(0, 3, size=n).astype(np.int64)
    x_nchw = (rgb.astype(np.float32) / 255.0).transpose(0, 3, 1, 2).copy()
    x_nhwc = rgb.astype(np.float32) / 255.0
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "rgb.h5")
        with h5py.File(data, "w") as f:
            f.create_dataset("images", data=rgb)
            f.create_dataset("labels", data=labels)

        # 1. several outputs: the only [N, classes] one, --output, ambiguity refused
        one = os.path.join(tmp, "one_rank2.onnx")
        two_output_model(one, rng, pooled_rank2=False)
        want = ort_run(one, x_nchw, "logits")
        rc, got, rep, se = eval_logits(tmp, one, data)
        check("two outputs, one [N, classes]: picked with a notice, logits equal onnxruntime's",
              rc == 0 and close(got, want) and "reading logits from 'logits'" in se, f"rc {rc}: {se[-300:]}")
        check("its top-1 equals onnxruntime's", rc == 0 and abs(rep.get("top1", -1) - top1(want, labels)) < 1e-9,
              f"{rep.get('top1')} vs {top1(want, labels)}")
        amb = os.path.join(tmp, "two_rank2.onnx")
        two_output_model(amb, rng, pooled_rank2=True)
        rc, got, _, se = eval_logits(tmp, amb, data)
        check("two [N, classes] outputs without --output: exit 5 listing the outputs",
              rc == 5 and "'pooled' float32 [?x3]" in se and "'logits' float32 [?x5]" in se and "--output" in se,
              f"rc {rc}: {se[-300:]}")
        rc, out, se = ptq("info", amb)
        check("info on it: exit 0, the logits line says which outputs compete and to pass --output",
              rc == 0 and "logits     " in out and "'pooled' float32 [?x3]" in out and "--output NAME" in out,
              f"rc {rc}: {out[-400:]}")
        rc, out, se = ptq("info", amb, "--json")
        info = json.loads(out) if rc == 0 else {}
        check("info --json: runnable, no logits_output, a logits_output_note naming --output",
              info.get("runnable") is True and "logits_output" not in info and "--output" in info.get("logits_output_note", ""),
              f"rc {rc}: {out[-400:]}")
        for name in ("logits", "pooled"):
            rc, got, rep, se = eval_logits(tmp, amb, data, "--output", name)
            want = ort_run(amb, x_nchw, name)
            check(f"--output {name}: logits equal onnxruntime's", rc == 0 and close(got, want), f"rc {rc}: {se[-300:]}")
        rc, _, _, se = eval_logits(tmp, amb, data, "--output", "nope")
        check("--output naming no output: exit 2 listing the outputs",
              rc == 2 and "no output 'nope'" in se and "'logits'" in se, f"rc {rc}: {se[-300:]}")
        # calibrate observes every tensor (no logits needed), then plan and validate read --output's
        calib, plan, report = (os.path.join(tmp, p) for p in ("calib.h5", "plan.json", "report"))
        rc, _, se = ptq("calibrate", "--model", amb, "--data", data, "--out", calib)
        check("calibrate a model with two [N, classes] outputs needs no --output", rc == 0, f"rc {rc}: {se[-300:]}")
        if rc == 0:
            with h5py.File(calib, "r") as f:
                names = {s.decode() if isinstance(s, bytes) else str(s) for s in f["tensors/name"][()]}
            check("calibration observed both outputs", {"pooled", "logits"} <= names, str(sorted(names)))
        rc, _, se = ptq("plan", calib, "--model", amb, "--out", plan)
        check("plan", rc == 0, f"rc {rc}: {se[-300:]}")
        sens = os.path.join(tmp, "sens.json")
        rc, _, se = ptq("sensitivity", "--model", amb, "--calib", calib, "--data", data, "--out", sens)
        check("sensitivity without --output on an ambiguous model: exit 5", rc == 5 and "--output" in se,
              f"rc {rc}: {se[-300:]}")
        rc, _, se = ptq("sensitivity", "--model", amb, "--calib", calib, "--data", data, "--out", sens,
                        "--output", "logits")
        srep = json.load(open(sens)) if rc == 0 else {}
        check("sensitivity --output logits: its FP32 top-1 equals onnxruntime's on that output",
              rc == 0 and abs(srep.get("top1_fp32", -1) - top1(ort_run(amb, x_nchw, "logits"), labels)) < 1e-9,
              f"rc {rc}: {sorted(srep)[:20]} {se[-300:]}")
        rc, _, se = ptq("validate", "--model", amb, "--plan", plan, "--data", data, "--report", report)
        check("validate without --output on an ambiguous model: exit 5", rc == 5 and "--output" in se,
              f"rc {rc}: {se[-300:]}")
        rc, _, se = ptq("validate", "--model", amb, "--plan", plan, "--data", data, "--report", report,
                        "--output", "pooled")
        vrep = json.load(open(os.path.join(report, "validate.json"))) if rc == 0 else {}
        want = ort_run(amb, x_nchw, "pooled")
        check("validate --output pooled: FP32 top-1 equals onnxruntime's on that output",
              rc == 0 and abs(vrep["fp32"]["top1"] - top1(want, labels)) < 1e-9,
              f"rc {rc}: {vrep.get('fp32', {}).get('top1')} vs {top1(want, labels)} {se[-300:]}")

        # ptq run hands --output to the stages that read logits (the budgeted plan included)
        rc, _, se = ptq("run", "--model", amb, "--calib-data", data, "--data", data, "--out", os.path.join(tmp, "r1"))
        check("run without --output on an ambiguous model: exit 5", rc == 5 and "--output" in se, f"rc {rc}: {se[-300:]}")
        rc, _, se = ptq("run", "--model", amb, "--calib-data", data, "--data", data, "--out", os.path.join(tmp, "r2"),
                        "--budget", "50", "--output", "pooled")
        vpath = os.path.join(tmp, "r2", "report", "validate.json")
        vrep = json.load(open(vpath)) if rc == 0 and os.path.exists(vpath) else {}
        check("run --budget 50 --output pooled: validated on that output",
              rc == 0 and abs(vrep["fp32"]["top1"] - top1(ort_run(amb, x_nchw, "pooled"), labels)) < 1e-9,
              f"rc {rc}: {se[-300:]}")

        # 2. fixed batch: 1 runs one at a time with a notice; 4 in fours; a pick of 10 refused
        for b in (1, 4):
            fixed = os.path.join(tmp, f"fixed{b}.onnx")
            pool_model(fixed, [b, 3, H, W], nhwc=False)
            want = ort_run_fixed(fixed, x_nchw, b)
            rc, got, rep, se = eval_logits(tmp, fixed, data, "--batch", "16")
            check(f"fixed batch {b} with --batch 16: runs, notice, logits equal onnxruntime's",
                  rc == 0 and close(got, want) and f"fixed batch of {b}" in se and rep.get("samples") == n,
                  f"rc {rc}: {se[-300:]}")
        rc, _, _, se = eval_logits(tmp, fixed, data, "--limit", "10")
        check("fixed batch 4, 10 samples: exit 6 saying to pick a multiple of 4",
              rc == 6 and "fixed batch of 4" in se and "multiple of 4" in se, f"rc {rc}: {se[-300:]}")

        # 3. NHWC inputs from the shape alone, no flag: 3 channels, 1 channel; 4 refused by name
        m3 = os.path.join(tmp, "nhwc3.onnx")
        pool_model(m3, ["N", H, W, 3], nhwc=True)
        rc, got, _, se = eval_logits(tmp, m3, data)
        check("[N,4,4,3] input without flags: logits equal onnxruntime's", rc == 0 and close(got, ort_run(m3, x_nhwc)),
              f"rc {rc}: {se[-300:]}")
        gray = rng.integers(0, 256, size=(n, H, W), dtype=np.uint8)
        gdata = os.path.join(tmp, "gray.h5")
        with h5py.File(gdata, "w") as f:
            f.create_dataset("images", data=gray)
            f.create_dataset("labels", data=labels % 1)
        m1 = os.path.join(tmp, "nhwc1.onnx")
        pool_model(m1, ["N", H, W, 1], nhwc=True)
        rc, got, _, se = eval_logits(tmp, m1, gdata)
        xg = gray.astype(np.float32)[..., None] / 255.0
        check("[N,4,4,1] input without flags: logits equal onnxruntime's", rc == 0 and close(got, ort_run(m1, xg)),
              f"rc {rc}: {se[-300:]}")
        m4 = os.path.join(tmp, "nhwc4.onnx")
        pool_model(m4, ["N", H, W, 4], nhwc=True)
        rc, got, _, se = eval_logits(tmp, m4, data)
        x4 = np.concatenate([x_nhwc, np.ones((n, H, W, 1), np.float32)], axis=3)
        check("[N,4,4,4] input from RGB images without flags: alpha opaque (1 after scale), with a note",
              rc == 0 and close(got, ort_run(m4, x4)) and "alpha opaque" in se, f"rc {rc}: {se[-300:]}")
        rgba = rng.integers(0, 256, size=(n, H, W, 4), dtype=np.uint8)
        adata = os.path.join(tmp, "rgba.h5")
        with h5py.File(adata, "w") as f:
            f.create_dataset("images", data=rgba)
            f.create_dataset("labels", data=labels)
        rc, got, _, se = eval_logits(tmp, m4, adata, "--preprocess", "mean=0.1,0.2,0.3,0.4 std=0.5")
        want = ort_run(m4, (rgba.astype(np.float32) / 255.0 - np.array([0.1, 0.2, 0.3, 0.4], np.float32)) / 0.5)
        check("[N,4,4,4] input from RGBA images: alpha kept, four means", rc == 0 and close(got, want),
              f"rc {rc}: {se[-300:]}")
        rc, got, _, se = eval_logits(tmp, m4, adata, "--preprocess", "order=BGR")
        want = ort_run(m4, rgba[..., [2, 1, 0, 3]].astype(np.float32) / 255.0)
        check("[N,4,4,4] input with order=BGR: BGRA", rc == 0 and close(got, want), f"rc {rc}: {se[-300:]}")
    return finish("multiio_test")


def ort_run_fixed(model, x, b):
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return np.concatenate([sess.run(None, {"x": x[i:i + b]})[0] for i in range(0, len(x), b)])


if __name__ == "__main__":
    sys.exit(main())
