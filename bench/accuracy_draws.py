#!/usr/bin/env python3
"""Benchmark: bench/accuracy_placement.py's comparison of ptq with its peers,
repeated over several calibration draws, so that a verdict is not one
draw's luck. Each draw gives the same calibration samples to every tool
(--calib of them, 512 by default); draw 0 is exactly accuracy_placement's
(the first 512 Fashion-MNIST training images; for the text model the rows
of its seed-0 permutation), draw k >= 1 the training rows
`np.sort(np.random.default_rng(k).choice(N, 512, replace=False))` (text:
`np.sort(np.random.default_rng(k).permutation(N)[:512])`). The rows of each
draw, made by accuracy_placement.compare:
- ptq's default INT8 plan and ptq --core fp8: `ptq validate`'s top-1, the
  top-1 of its Q/DQ export run by onnxruntime and how often the two predict
  alike;
- onnxruntime quantize_static (QDQ, per-channel, symmetric INT8) with
  MinMax, Entropy and Percentile;
- NVIDIA ModelOpt's ONNX quantizer on the CPU execution provider, INT8 with
  calibration_method max and entropy, FP8 max (--modelopt-python).
A peer's top-1 is onnxruntime's with all graph optimizations for INT8 and
with the basic ones for FP8 (as in accuracy_placement). The record gives
each model's per-draw top-1, the mean and the sample standard deviation
(ddof 1) per row, the per-draw tables, and a verdict per format comparing
ptq's mean with the mean of the peer configuration whose mean is best (peers
that failed on some draw are listed, not compared). --limit N evaluates the
first N test samples only (a smoke run). The scratch folder (calibration
sets, archives, plans, every tool's quantized model per draw) is kept in
/tmp and named on stdout. Writes bench/results/<date>-accuracy-draws-<host>.md
(or --out), rewritten after every draw. The python needs numpy, onnx,
onnxruntime with ml_dtypes (its quantization module imports it) and h5py
(text model); ModelOpt's venv: nvidia-modelopt[onnx] with the CPU onnxruntime.
    nice -n 10 python3 bench/accuracy_draws.py [--ptq build/ptq] [--draws 5] [--only demo mobilenet vit text vgg]
        [--calib 512] [--limit N] [--modelopt-python /work/venv-modelopt/bin/python] [--out FILE]
        [--model M] [--mobilenet M2] [--vit M3] [--text M4] [--vgg M5]
"""
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

from accuracy_placement import compare, fmnist_data, fortunes_data, model_args, pct, record_target, verdict
from accuracy_vs_ort import ORT_METHODS, run, setup, write_idx_gz
from benchlib import FM, commit, cpu_model, idx, write_result

PTQ_INT8, PTQ_FP8 = "ptq default plan (placement trt)", "ptq --core fp8 (placement trt)"
ROWS = (PTQ_INT8, PTQ_FP8, *(f"onnxruntime quantize_static {m}" for m in ORT_METHODS),
        "NVIDIA ModelOpt INT8 calibration_method=max", "NVIDIA ModelOpt INT8 calibration_method=entropy",
        "NVIDIA ModelOpt FP8 calibration_method=max")


def pick(k, n_train, n):
    """The training rows draw k calibrates on (Fashion-MNIST): the first n for draw 0, else n drawn with seed k."""
    return np.arange(n) if k == 0 else np.sort(np.random.default_rng(k).choice(n_train, n, replace=False))


def correct(r, n):
    """How many of the n test samples row r gets right: `ptq validate`'s for ptq's rows, onnxruntime's for a peer
    (basic optimizations for FP8, all for INT8), None when it made no model."""
    if r["label"].startswith("ptq"):
        v = r["sim"]
    else:
        v = r["top"].get("basic" if r["fmt"] == "fp8" else "all")
    return None if v is None else int(round(v * n))


def stats(counts, n):
    """(mean, sample standard deviation) of the top-1s counts/n; (None, None) when a draw is missing."""
    if not counts or any(c is None for c in counts):
        return None, None
    v = np.array(counts, np.float64) / n
    return sum(counts) / (len(counts) * n), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def cells(values, n):
    """Per-draw cells (top-1 counts of n, None for a failure), then mean and standard deviation (points)."""
    m, s = stats(values, n)
    done = [c for c in values if c is not None]
    tail = ([pct(m), f"{100 * s:.2f}"] if m is not None else
            [f"{pct(sum(done) / (len(done) * n))} ({len(done)} of {len(values)} draws)" if done else "-", "-"])
    return [pct(None if c is None else c / n) for c in values] + tail


def model_section(tag, model, draws, seconds):
    """A model's part of the record: draws is [{rows, fp32, n, about}] (one per draw done)."""
    n, k = draws[0]["n"], len(draws)
    head = "| quantization | format | " + " | ".join(f"draw {i}" for i in range(k)) + " | mean | std (points) |"
    rule = "|---|---|" + "---|" * (k + 2)
    lines = [f"## {tag}: {model}", "", f"- FP32 top-1 (onnxruntime, all optimizations): {pct(draws[0]['fp32'])}",
             f"- {k} draw{'s' if k > 1 else ''} in {seconds / 60:.1f} min"]
    lines += [f"- draw {i}: {d['about']}" for i, d in enumerate(draws)]
    lines += ["", "### Top-1 per draw (ptq: `ptq validate`; peers: onnxruntime, all optimizations for INT8, basic "
              "for FP8)", "", head, rule]
    by = {}  # label -> (fmt, [correct per draw])
    for label in ROWS:
        rs = [next((r for r in d["rows"] if r["label"] == label), None) for d in draws]
        if all(r is None for r in rs):
            continue
        fmt = next(r["fmt"] for r in rs if r is not None)
        by[label] = (fmt, [None if r is None else correct(r, n) for r in rs])
        lines.append(f"| {label} | {fmt} | " + " | ".join(cells(by[label][1], n)) + " |")
    lines += ["", "### ptq's Q/DQ exports run by onnxruntime (simulation against deployment)", "", head, rule]
    for label in (PTQ_INT8, PTQ_FP8):
        rs = [next((r for r in d["rows"] if r["label"] == label), None) for d in draws]
        for lv in ("all", "basic"):
            for what, key in (("top-1", "top"), ("same prediction as ptq validate", "agree")):
                vals = [None if r is None or lv not in r[key] else int(round(r[key][lv] * n)) for r in rs]
                lines.append(f"| {label}: {what}, {lv} optimizations | {by.get(label, ('-',))[0]} | " +
                             " | ".join(cells(vals, n)) + " |")
    lines += ["", "### Verdicts on the means", ""]
    for fmt, ptq_label, what in (("int8", PTQ_INT8, "INT8: ptq's default plan"),
                                 ("fp8", PTQ_FP8, "FP8: ptq --core fp8")):
        if ptq_label not in by:
            continue
        p = by[ptq_label][1]
        pm, ps = stats(p, n)
        peers = [(label, c) for label, (f, c) in by.items() if f == fmt and not label.startswith("ptq")]
        whole = [(label, c) for label, c in peers if stats(c, n)[0] is not None]
        gone = [f"{label} (no model on {sum(x is None for x in c)} of {k} draws)" for label, c in peers
                if stats(c, n)[0] is None]
        if pm is None or not whole:
            lines.append(f"{what}: no verdict (ptq mean {pct(pm)}; peers with every draw: {len(whole)}).")
            continue
        best, bc = max(whole, key=lambda e: sum(e[1]))
        bm, bs = stats(bc, n)
        diff = [100 * (a - b) / n for a, b in zip(p, bc)]
        ahead_all = sum(all(a >= c[i] for _, c in whole) for i, a in enumerate(p))
        lines.append(
            f"{what}: mean {pct(pm)} (std {100 * ps:.2f}) against the best peer by mean, {best}, {pct(bm)} (std "
            f"{100 * bs:.2f}): " + ("at least as accurate" if sum(p) >= sum(bc) else "LESS accurate") +
            f" (mean difference {np.mean(diff):+.3f} points, standard error "
            f"{np.std(diff, ddof=1) / np.sqrt(k) if k > 1 else 0:.3f}; per draw " +
            ", ".join(f"{x:+.2f}" for x in diff) +
            f"; ptq >= that peer in {sum(x >= 0 for x in diff)} of {k} draws, >= every {fmt.upper()} peer of its draw "
            f"in {ahead_all} of {k})." + (f" Not compared: {', '.join(gone)}." if gone else ""))
    lines.append("")
    for i, d in enumerate(draws):
        lines += [f"### {tag}, draw {i}: every row", "",
                  "| quantization | format | quantized activations / Q nodes | ptq validate top-1 | onnxruntime "
                  "top-1, all optimizations | same prediction as ptq validate, all | onnxruntime top-1, basic "
                  "optimizations | same prediction as ptq validate, basic | note |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in d["rows"]:
            lines.append(f"| {r['label']} | {r['fmt']} | {'-' if r['n_q'] is None else r['n_q']} | {pct(r['sim'])} | "
                         f"{pct(r['top'].get('all'))} | {pct(r['agree'].get('all'))} | {pct(r['top'].get('basic'))} "
                         f"| {pct(r['agree'].get('basic'))} | {r['note']} |")
        lines += ["", verdict(d["rows"], "int8", PTQ_INT8, "INT8: ptq's default plan"),
                  verdict(d["rows"], "fp8", PTQ_FP8, "FP8: ptq --core fp8"), ""]
    return lines


def main():
    def extra(ap):
        model_args(ap)
        ap.add_argument("--draws", type=int, default=5, help="calibration draws (draw 0: accuracy_placement's)")
    a, J, first, x_test, labels = setup("ptq-bench-draws-", extra)
    print("scratch folder:", J(), flush=True)
    train = idx(f"{FM}/train-images-idx3-ubyte.gz")
    train_labels = idx(f"{FM}/train-labels-idx1-ubyte.gz")
    assert np.array_equal(train[pick(0, len(train), a.calib)], first)
    models = {"demo": a.model, "mobilenet": a.mobilenet, "vit": a.vit, "text": a.text, "vgg": a.vgg}
    host, date, path, mo_ver = record_target(a, "accuracy-draws")
    header = [f"# Accuracy over calibration draws: ptq against onnxruntime and NVIDIA ModelOpt ({date})", "",
              f"- machine: {host}, {cpu_model()}, {os.cpu_count()} cores; ptq commit {commit()}; ptq binary {a.ptq} "
              f"({run([a.ptq, '--version']).splitlines()[0]}); onnxruntime {ort.__version__}, onnx {onnx.__version__}, "
              f"numpy {np.__version__}; ModelOpt {mo_ver[0]} (its own venv, onnxruntime {mo_ver[-1]} CPU)",
              f"- command: `{' '.join(sys.argv)}`",
              f"- {a.draws} calibration draws of {a.calib} training samples, each given to every tool: draw 0 is "
              "bench/accuracy_placement.py's (the first ones; text: its seed-0 permutation), draw k >= 1 the rows "
              f"`np.sort(np.random.default_rng(k).choice(N, {a.calib}, replace=False))` (text: "
              f"`np.sort(np.random.default_rng(k).permutation(N)[:{a.calib}])`)",
              "- top-1: `ptq validate`'s for ptq; onnxruntime's for a peer, all graph optimizations for INT8, basic "
              "for FP8 (REFERENCE.md: the extended ones mis-rewrite FP8 Q/DQ around Conv); std: sample standard "
              "deviation over the draws (ddof 1); a verdict compares ptq's mean with the best peer configuration's "
              "mean (the peers that made a model on every draw)",
              "- onnxruntime: quantize_static, QuantFormat.QDQ, per_channel=True, QInt8 activations and weights, "
              "ActivationSymmetric and WeightSymmetric (its FP8 and U8 rows of accuracy_placement not run)",
              "- ModelOpt: modelopt.onnx.quantization.quantize(quantize_mode int8|fp8, calibration_method, "
              "calibration_eps=[\"cpu\"], high_precision_dtype=\"fp32\"), calibration data the same samples as an "
              "array (several inputs: a dict by input name)",
              "- ptq: `ptq calibrate` on the draw, `ptq plan` with its defaults (the method its plans record, below; "
              "placement trt, FP16 first and last layers; in transformers also LayerNorm, Softmax and residual Add "
              "outputs in FP16), and with --core fp8", ""]
    sections = []
    for tag in a.only:
        m, draws, t0 = models[tag], [], time.time()
        for k in range(a.draws):
            if tag == "text":
                d = fortunes_data(a, J, seed=k)
                about = d["about"].split("; accuracy: ")
            else:
                rows = pick(k, len(train), a.calib)
                calib = J("calib.h5") if k == 0 else J(f"calib-{k}.h5")  # draw 0: setup's, the first a.calib
                if not os.path.exists(calib):  # made once, for the first Fashion-MNIST model
                    write_idx_gz(J(f"ci-{k}.gz"), train[rows])
                    write_idx_gz(J(f"cl-{k}.gz"), np.zeros(len(rows), np.uint8))
                    run([a.ptq, "data", "convert", "--images", J(f"ci-{k}.gz"), "--labels", J(f"cl-{k}.gz"),
                         "--out", calib])
                d = dict(fmnist_data(a, J, m, train[rows], x_test, labels), calib=calib)
                about = [(f"the first {a.calib} training images" if k == 0 else
                          f"{a.calib} training images drawn with seed {k} "
                          f"(rows {rows[0]}, {rows[1]}, ..., {rows[-1]})") +
                         f"; per class {np.bincount(train_labels[rows], minlength=10).tolist()}",
                         d["about"].split("; accuracy: ")[1]]
            print(f"== {tag} draw {k}: {about[0]}", flush=True)
            fp32, rows_k = compare(a, J, f"{tag}-d{k}", m, d, keep=lambda label: label in ROWS)
            draws.append(dict(rows=rows_k, fp32=fp32, n=len(d["labels"]), about=about[0]))
            section = model_section(tag, m, draws, time.time() - t0)
            section.insert(3, f"- accuracy: {about[1]}")
            write_result(path, header + [line for s in sections for line in s] + section)
        sections.append(section)
    print("scratch folder (kept):", J(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
