#!/usr/bin/env python3
"""Benchmark: ptq's INT8 plans under each Q/DQ placement (trt, the default;
ort; all) against onnxruntime's quantize_static (QDQ, per-channel,
symmetric INT8) with MinMax, Entropy and Percentile, in one run on the same
machine: the first 512 Fashion-MNIST training images calibrate both, top-1
on the 10,000 test images. For each ptq plan: `ptq validate`'s top-1, the
top-1 of its Q/DQ export run by onnxruntime and how often the two predict
alike (simulation against deployment). Writes
bench/results/<date>-accuracy-placement-<host>.md.
    .venv-bench/bin/python3 bench/accuracy_placement.py [--ptq build/ptq] [--model M]
"""
import datetime
import json
import platform
import sys

import numpy as np
import onnx
import onnxruntime as ort

from accuracy_vs_ort import ort_quantized, run, setup
from benchlib import commit, cpu_model


def predict(model_path, x):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 1000]})[0].argmax(1) for i in range(0, len(x), 1000)])


def main():
    a, J, train, x_test, labels = setup("ptq-bench-place-")
    fp32 = float((predict(a.model, x_test) == labels).mean())
    run([a.ptq, "calibrate", "--model", a.model, "--data", J("calib.h5"), "--out", J("c.h5")])
    rows = []  # (label, ptq validate top-1 or None, onnxruntime top-1, agreement or None, quantized activations)
    for placement in ("trt", "ort", "all"):
        plan, logits, qdq = J(f"{placement}.json"), J(f"{placement}.npy"), J(f"{placement}.onnx")
        run([a.ptq, "plan", J("c.h5"), "--model", a.model, "--placement", placement, "--out", plan, "--quiet"])
        run([a.ptq, "validate", "--model", a.model, "--plan", plan, "--data", J("test.h5"), "--report",
             J(f"rep-{placement}"), "--logits", logits])
        run([a.ptq, "export", "--format", "qdq", "--plan", plan, "--model", a.model, "--out", qdq, "--quiet"])
        rep = json.load(open(J(f"rep-{placement}", "validate.json")))
        p_ort = predict(qdq, x_test)
        n_q = sum(e["kind"] == "activation" and e["precision"] == "int8" for e in json.load(open(plan))["tensors"])
        rows.append((f"ptq --placement {placement}" + (" (default)" if placement == "trt" else ""),
                     rep["top1_quant"], float((p_ort == labels).mean()),
                     float((p_ort == np.load(logits).argmax(1)).mean()), n_q))
        print(rows[-1], flush=True)
    for method, out in ort_quantized(a.model, J, train):
        n_q = sum(n.op_type == "QuantizeLinear" for n in onnx.load(out).graph.node)
        rows.append((f"onnxruntime quantize_static {method}", None, float((predict(out, x_test) == labels).mean()),
                     None, n_q))
        print(rows[-1], flush=True)
    host = platform.node().split(".")[0] or "host"
    date = datetime.date.today().isoformat()
    path = a.out or f"bench/results/{date}-accuracy-placement-{host}.md"
    pct = lambda v: "-" if v is None else f"{100 * v:.2f}%"  # noqa: E731
    lines = [f"# INT8 accuracy by Q/DQ placement: ptq against onnxruntime's quantize_static ({date})", "",
             f"- machine: {host}, {cpu_model()}; ptq commit {commit()}; onnxruntime {ort.__version__}",
             f"- command: `{' '.join(sys.argv)}`",
             f"- model {a.model}; calibration: the first {a.calib} Fashion-MNIST training images for both; "
             "accuracy: top-1 on the 10,000 test images, same preprocessing; onnxruntime with its default "
             "(all) graph optimizations",
             "- onnxruntime: quantize_static, QuantFormat.QDQ, per_channel=True, QInt8 activations and weights, "
             "ActivationSymmetric and WeightSymmetric; ptq: percentile 99.99 (its default), FP16 first and last "
             "layers", "",
             f"FP32 top-1 (onnxruntime): {100 * fp32:.2f}%", "",
             "| quantization | quantized activations | ptq validate top-1 | onnxruntime top-1 | "
             "same prediction as ptq validate |", "|---|---|---|---|---|"]
    for label, sim, dep, agree, n_q in rows:
        lines.append(f"| {label} | {n_q} | {pct(sim)} | {pct(dep)} | {pct(agree)} |")
    lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
