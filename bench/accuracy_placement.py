#!/usr/bin/env python3
"""Benchmark: accuracy of ptq's plans against its peers on the demo model
and a MobileNet-style model (depthwise convs, ReLU6, inverted residuals;
scripts/train_mobilenet_model.py), every tool calibrated on the same images
(the first 512 Fashion-MNIST training images), top-1 on the 10,000 test
images, in one run on one machine:
- ptq: the default INT8 plan (placement trt), the ort and all placements,
  --target ort-cpu (uint8 activations) and FP8 (--core fp8): `ptq
  validate`'s top-1, the top-1 of its Q/DQ export run by onnxruntime and how
  often the two predict alike (simulation against deployment);
- onnxruntime quantize_static (QDQ, per-channel, symmetric INT8) with
  MinMax, Entropy and Percentile, its U8 model (uint8 activations, MinMax),
  and FP8 (E4M3; Distribution, the one calibrator it takes for FP8) where it
  produces one;
- NVIDIA ModelOpt's ONNX quantizer, INT8 with calibration_method max and
  entropy and FP8 (max), CPU execution provider, run with the python of
  --modelopt-python (a venv with nvidia-modelopt[onnx] and the CPU
  onnxruntime; skipped, and said so, when missing).
FP8 models are evaluated with onnxruntime's basic graph optimizations
(REFERENCE.md: the extended ones mis-rewrite FP8 Q/DQ around Conv). Writes
bench/results/<date>-accuracy-placement-<host>.md.
    .venv-bench/bin/python3 bench/accuracy_placement.py [--ptq build/ptq] [--model M] [--mobilenet M2]
        [--modelopt-python /work/venv-modelopt/bin/python] [--only demo|mobilenet]
"""
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

from accuracy_vs_ort import Reader, ort_quantized, preprocess, run, setup
from benchlib import commit, cpu_model, write_result

BASIC = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC

# run with --modelopt-python: NVIDIA ModelOpt's ONNX PTQ on the CPU execution provider
MODELOPT = r"""
import sys, numpy as np
from modelopt.onnx.quantization import quantize
src, dst, mode, method, cal = sys.argv[1:6]
quantize(src, quantize_mode=mode, calibration_data=np.load(cal), calibration_method=method, calibration_eps=["cpu"],
         high_precision_dtype="fp32", output_path=dst, log_level="WARNING")
"""


def predict(model_path, x, level=None):
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 1000]})[0].argmax(1) for i in range(0, len(x), 1000)])


def n_quantize(path):
    return sum(n.op_type == "QuantizeLinear" for n in onnx.load(path).graph.node)


def compare(a, J, tag, model, train, x_test, labels):
    """Every tool on one model: rows (label, format, ptq validate top-1 or None, onnxruntime top-1, agreement or
    None, QuantizeLinear count or quantized activations, note)."""
    fp32 = float((predict(model, x_test) == labels).mean())
    run([a.ptq, "calibrate", "--model", model, "--data", J("calib.h5"), "--out", J(f"{tag}-c.h5")])
    rows = []
    for label, fmt, flags, level in (("ptq default plan (placement trt)", "int8", [], None),
                                     ("ptq --placement ort", "int8", ["--placement", "ort"], None),
                                     ("ptq --placement all", "int8", ["--placement", "all"], None),
                                     ("ptq --target ort-cpu", "uint8", ["--target", "ort-cpu"], None),
                                     ("ptq --core fp8 (placement trt)", "fp8", ["--core", "fp8"], BASIC)):
        n = f"{tag}-{len(rows)}"
        plan, logits, qdq = J(n + ".json"), J(n + ".npy"), J(n + ".onnx")
        run([a.ptq, "plan", J(f"{tag}-c.h5"), "--model", model, *flags, "--out", plan, "--quiet"])
        run([a.ptq, "validate", "--model", model, "--plan", plan, "--data", J("test.h5"), "--report", J(n + "-rep"),
             "--logits", logits])
        run([a.ptq, "export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq, "--quiet"])
        rep = json.load(open(J(n + "-rep", "validate.json")))
        p_ort = predict(qdq, x_test, level)
        n_q = sum(e["kind"] == "activation" and e["precision"] not in ("fp32", "fp16")
                  for e in json.load(open(plan))["tensors"])
        rows.append((label, fmt, rep["top1_quant"], float((p_ort == labels).mean()),
                     float((p_ort == np.load(logits).argmax(1)).mean()), n_q, ""))
        print(tag, rows[-1], flush=True)
    for method, out in ort_quantized(model, lambda p: J(f"{tag}-{p}"), train):
        rows.append((f"onnxruntime quantize_static {method}", "int8", None,
                     float((predict(out, x_test) == labels).mean()), None, n_quantize(out), ""))
        print(tag, rows[-1], flush=True)
    name = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_inputs()[0].name
    x_cal = preprocess(train)
    for label, fmt, kw, level in (
            ("onnxruntime quantize_static U8 MinMax", "uint8",
             dict(activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8), None),
            ("onnxruntime quantize_static FP8 (Distribution, its only FP8 calibrator)", "fp8",
             dict(activation_type=QuantType.QFLOAT8E4M3FN, weight_type=QuantType.QFLOAT8E4M3FN), BASIC)):
        out = J(f"{tag}-ort-{fmt}.onnx")
        method = CalibrationMethod.Distribution if fmt == "fp8" else CalibrationMethod.MinMax
        try:
            quantize_static(model, out, Reader(x_cal, name), quant_format=QuantFormat.QDQ, per_channel=True,
                            calibrate_method=method, **kw)
            rows.append((label, fmt, None, float((predict(out, x_test, level) == labels).mean()), None,
                         n_quantize(out), ""))
        except Exception as e:  # noqa: BLE001 - a peer that cannot make the model is a result to record
            rows.append((label, fmt, None, None, None, None, f"failed: {type(e).__name__}: {str(e)[:120]}"))
        print(tag, rows[-1], flush=True)
    if not os.path.exists(a.modelopt_python):
        rows.append(("NVIDIA ModelOpt", "-", None, None, None, None, f"not run: no {a.modelopt_python}"))
        return fp32, rows
    np.save(J(f"{tag}-cal.npy"), x_cal)
    src = J(f"{tag}-modelopt-src.onnx")  # ModelOpt rewrites the model file it is given: a copy
    for mode, method, level in (("int8", "max", None), ("int8", "entropy", None), ("fp8", "max", BASIC)):
        out = J(f"{tag}-modelopt-{mode}-{method}.onnx")
        shutil.copyfile(model, src)
        p = subprocess.run([a.modelopt_python, "-c", MODELOPT, src, out, mode, method, J(f"{tag}-cal.npy")],
                           capture_output=True, text=True)
        label = f"NVIDIA ModelOpt {mode.upper()} calibration_method={method}"
        if p.returncode or not os.path.exists(out):
            rows.append((label, mode, None, None, None, None, "failed: " + p.stderr.strip()[-160:].replace("\n", " ")))
        else:
            rows.append((label, mode, None, float((predict(out, x_test, level) == labels).mean()), None,
                         n_quantize(out), ""))
        print(tag, rows[-1], flush=True)
    return fp32, rows


def main():
    def extra(ap):
        ap.add_argument("--mobilenet", default="models/fmnist_mobilenet.onnx")
        ap.add_argument("--modelopt-python", default="/work/venv-modelopt/bin/python")
        ap.add_argument("--only", choices=("demo", "mobilenet"), help="one of the two models")
    a, J, train, x_test, labels = setup("ptq-bench-place-", extra)
    results = [(m, *compare(a, J, tag, m, train, x_test, labels))
               for tag, m in (("demo", a.model), ("mobilenet", a.mobilenet)) if a.only in (None, tag)]
    host = platform.node().split(".")[0] or "host"
    date = datetime.date.today().isoformat()
    path = a.out or f"bench/results/{date}-accuracy-placement-{host}.md"
    pct = lambda v: "-" if v is None else f"{100 * v:.2f}%"  # noqa: E731
    mo_ver = subprocess.run([a.modelopt_python, "-c", "import modelopt, onnxruntime; print(modelopt.__version__, "
                             "onnxruntime.__version__)"], capture_output=True, text=True).stdout.split() \
        if os.path.exists(a.modelopt_python) else ["-", "-"]
    lines = [f"# Accuracy by tool and placement: ptq against onnxruntime and NVIDIA ModelOpt ({date})", "",
             f"- machine: {host}, {cpu_model()}; ptq commit {commit()}; onnxruntime {ort.__version__}; "
             f"ModelOpt {mo_ver[0]} (its own venv, onnxruntime {mo_ver[-1]} CPU)",
             f"- command: `{' '.join(sys.argv)}`",
             f"- calibration: the first {a.calib} Fashion-MNIST training images for every tool; accuracy: top-1 on "
             "the 10,000 test images, same preprocessing; onnxruntime with all graph optimizations, basic ones "
             "for FP8 models",
             "- onnxruntime: quantize_static, QuantFormat.QDQ, per_channel=True; INT8 rows QInt8 activations and "
             "weights, ActivationSymmetric and WeightSymmetric; U8: QUInt8 activations (asymmetric), QInt8 weights",
             "- ModelOpt: modelopt.onnx.quantization.quantize(quantize_mode int8|fp8, calibration_method, "
             "calibration_eps=[\"cpu\"], high_precision_dtype=\"fp32\"), calibration data the same images as an array",
             "- ptq: percentile 99.99 (its default calibrator), FP16 first and last layers (FP32 for ort-cpu)", ""]
    for model, fp32, rows in results:
        lines += [f"## {model}", "", f"FP32 top-1 (onnxruntime): {100 * fp32:.2f}%", "",
                  "| quantization | format | quantized activations / Q nodes | ptq validate top-1 | onnxruntime "
                  "top-1 | same prediction as ptq validate | note |", "|---|---|---|---|---|---|---|"]
        for label, fmt, sim, dep, agree, n_q, note in rows:
            lines.append(f"| {label} | {fmt} | {'-' if n_q is None else n_q} | {pct(sim)} | {pct(dep)} | "
                         f"{pct(agree)} | {note} |")
        ptq_int8 = rows[0][2]
        peers = [(r[0], r[3]) for r in rows if r[1] == "int8" and not r[0].startswith("ptq") and r[3] is not None]
        best = max(peers, key=lambda r: r[1]) if peers else ("-", None)
        ptq_fp8 = next(r[2] for r in rows if r[0].startswith("ptq --core fp8"))
        fp8_peers = [(r[0], r[3]) for r in rows if r[1] == "fp8" and not r[0].startswith("ptq") and r[3] is not None]
        best8 = max(fp8_peers, key=lambda r: r[1]) if fp8_peers else ("-", None)
        lines += ["", f"INT8: ptq's default plan {pct(ptq_int8)} (ptq validate) against the best peer, {best[0]}, "
                  f"{pct(best[1])}: " + ("at least as accurate." if best[1] is None or ptq_int8 >= best[1] else
                                         "LESS accurate."),
                  f"FP8: ptq --core fp8 {pct(ptq_fp8)} against the best peer, {best8[0]}, {pct(best8[1])}: " +
                  ("at least as accurate." if best8[1] is None or ptq_fp8 >= best8[1] else "LESS accurate."), ""]
    write_result(path, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
