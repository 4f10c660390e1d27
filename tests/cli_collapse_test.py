#!/usr/bin/env python3
"""`ptq validate` on outputs that collapse: a model whose Gemm reads its
input scaled by 1e-9 (logits around 1e-8), so the plan's FP16 edge flushes
that input to zero and every quantized logit row is zero. The report flags
it (JSON "collapsed"/"collapse", Markdown, HTML, terminal) and validate exits
12; the same model with the scale after the Gemm keeps its logits and exits
0 unflagged; `ptq run` goes on to its exports and exits 12 too. And `ptq
eval` on logits that are NaN for some images (a Div by the image's mean,
all-zero images): those images rank no class, count as wrong and are left
out of the confusion matrix, with a warning; NaN for every image is exit 7
with no report written. Run by ctest (label oracle) with PTQ_BIN set."""
import json
import os
import sys
import tempfile

try:
    import h5py
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from ptqtest import check, finish, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)


def model(path, w, tiny_first):
    """x [N,1,8,8] -> Flatten -> (Mul 1e-9 ->) Gemm to 10 classes (-> Mul 1e-9)."""
    nodes = [helper.make_node("Flatten", ["x"], ["f"])]
    if tiny_first:
        nodes += [helper.make_node("Mul", ["f", "tiny"], ["ft"]), helper.make_node("Gemm", ["ft", "W"], ["y"])]
    else:
        nodes += [helper.make_node("Gemm", ["f", "W"], ["g"]), helper.make_node("Mul", ["g", "tiny"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", w.shape[1]])],
                          initializer=[numpy_helper.from_array(w, "W"),
                                       numpy_helper.from_array(np.array(1e-9, np.float32), "tiny")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)


def nan_model(path, w):
    """x [N,1,8,8] -> Flatten -> Gemm, divided by the image's mean: NaN logits (0/0) for an all-zero image."""
    nodes = [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Gemm", ["f", "W"], ["g"]),
             helper.make_node("ReduceMean", ["f"], ["m"], axes=[1], keepdims=1),
             helper.make_node("Div", ["g", "m"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", w.shape[1]])],
                          initializer=[numpy_helper.from_array(w, "W")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)


def check_nan_eval(J, w, x, labels):
    nan_model(J("nan.onnx"), w)
    xz = x.copy()
    xz[:30] = 0  # 30 images give NaN logits
    for name, imgs in (("some", xz), ("all", np.zeros_like(x))):
        with h5py.File(J(f"nan-{name}.h5"), "w") as f:
            f["images"] = imgs
            f["labels"] = labels.astype(np.int64)
    rc, out, err = ptq("eval", "--model", J("nan.onnx"), "--data", J("nan-some.h5"), "--report", J("nan.json"))
    v = json.load(open(J("nan.json"))) if rc == 0 else {}
    conf = v.get("confusion", [[0]])
    check("eval, NaN logits for 30 of 200 images: no prediction for them, counted wrong, out of the confusion, "
          "warned", rc == 0 and v.get("no_prediction") == 30 and v.get("samples") == 200 and
          sum(map(sum, conf)) == 170 and v.get("top1", 1) <= 170 / 200 and "30 of the 200 images" in err and
          "no prediction  30" in out, f"exit {rc}: {err.strip()[-300:]} {v.get('no_prediction')}")
    rc, out, err = ptq("eval", "--model", J("nan.onnx"), "--data", J("nan-all.h5"), "--report", J("nan-all.json"))
    check("eval, NaN logits for every image: exit 7, no report", rc == 7 and "NaN or an infinity" in err and
          not os.path.exists(J("nan-all.json")) and not [f for f in os.listdir(J()) if ".tmp" in f],
          f"exit {rc}: {err.strip()[-300:]}")


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-collapse-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(18)
    w = rng.standard_normal((64, 10)).astype(np.float32)
    x = rng.integers(0, 256, (200, 8, 8), dtype=np.uint8)
    labels = (x.reshape(200, -1).astype(np.float32) @ w).argmax(1)  # FP32 gets them all right
    with h5py.File(J("d.h5"), "w") as f:
        f["images"] = x
        f["labels"] = labels.astype(np.int64)
    check_nan_eval(J, w, x, labels)
    for name, tiny_first, want_rc in (("tiny_input", True, 12), ("tiny_output", False, 0)):
        m = J(name + ".onnx")
        model(m, w, tiny_first)
        for args in (("calibrate", "--model", m, "--data", J("d.h5"), "--out", J(name + ".h5")),
                     ("plan", J(name + ".h5"), "--model", m, "--out", J(name + ".plan.json"))):
            rc, _, err = ptq(*args)
            check(f"{name}: {args[0]}", rc == 0, err.strip()[-300:])
        rep = J("rep-" + name)
        rc, out, err = ptq("validate", "--model", m, "--plan", J(name + ".plan.json"), "--data", J("d.h5"),
                           "--report", rep)
        errors = [line for line in err.splitlines() if "error:" in line]
        check(f"{name}: validate exits {want_rc}", rc == want_rc and len(errors) == (1 if want_rc else 0) and
              (not want_rc or "collapsed" in errors[0]), f"exit {rc}: {err.strip()[-400:]}")
        if not os.path.exists(J(rep, "validate.json")):
            check(f"{name}: the report is written", False)
            continue
        v = json.load(open(J(rep, "validate.json")))
        md = open(J(rep, "validate.md")).read()
        html = open(J(rep, "report.html")).read()
        lg = v["logits"]
        print(f"     {name}: top-1 {v['top1_fp32']:.3f} -> {v['top1_quant']:.3f}, SQNR {lg['sqnr_db']} dB, "
              f"constant rows {lg['constant_rows_fp32']} / {lg['constant_rows_quant']}, collapse {v['collapse']}")
        if want_rc:
            check(f"{name}: JSON flags the collapse with its reasons",
                  v["collapsed"] is True and {"constant_logits", "sqnr_at_most_0_db", "single_class"} <=
                  set(v["collapse"]) and lg["constant_rows_quant"] == 200 and lg["constant_rows_fp32"] == 0)
            check(f"{name}: Markdown, HTML and terminal flag it",
                  "**COLLAPSED**" in md and "<strong>Collapsed</strong>" in html and "COLLAPSED" in out)
        else:
            check(f"{name}: not flagged", v["collapsed"] is False and v["collapse"] == [] and
                  "COLLAPSED" not in md + out and "Collapsed" not in html and v["top1_quant"] > 0.9)
    # ptq run: validate's exit 12 does not stop the exports; a second run, up to date, still exits 12
    for attempt in ("first", "up to date"):
        rc, out, err = ptq("run", "--model", J("tiny_input.onnx"), "--calib-data", J("d.h5"), "--data", J("d.h5"),
                           "--out", J("run"))
        v = json.load(open(J("run", "report", "validate.json"))) if os.path.exists(J("run", "report",
                                                                                      "validate.json")) else {}
        check(f"run ({attempt}): exits 12, report flagged, exports written",
              rc == 12 and v.get("collapsed") is True and "== done" in out and
              os.path.exists(J("run", "model_qdq.onnx")) and (attempt == "first" or "up to date" in out),
              f"exit {rc}: {err.strip()[-300:]}")
    return finish("cli_collapse_test")


if __name__ == "__main__":
    sys.exit(main())
