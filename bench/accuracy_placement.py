#!/usr/bin/env python3
"""Benchmark: accuracy of ptq's plans against its peers, every tool
calibrated on the same samples, in one run on one machine, on up to four
models (--only picks them):
- demo (models/fmnist_resnet.onnx), mobilenet (a MobileNet-style model:
  depthwise convs, ReLU6, inverted residuals; scripts/train_mobilenet_model.py)
  and vit (models/fmnist_vit.onnx, scripts/train_vit.py): the first --calib
  Fashion-MNIST training images, top-1 on the 10,000 test images;
- text (models/text_encoder.onnx, scripts/train_text.py: int64 inputs
  input_ids and attention_mask, fed by name to every tool): --calib training
  quotes of the split scripts/text_data.py makes from Debian's fortunes (needs
  `apt-get install fortunes`), picked by a seeded permutation since the split
  is ordered by category, tokenized with the model's vocabulary; top-1 on the
  860 test quotes.
The rows:
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
onnxruntime runs every model twice, with all graph optimizations and with
the basic ones; a peer's FP8 top-1 is the basic one (REFERENCE.md: the
extended optimizations mis-rewrite FP8 Q/DQ around Conv), its INT8 top-1 the
all one. --limit N evaluates the first N test samples only (a smoke run).
Writes bench/results/<date>-accuracy-placement-<host>.md (or --out).
    .venv-bench/bin/python3 bench/accuracy_placement.py [--ptq build/ptq] [--model M] [--mobilenet M2]
        [--vit M3] [--text M4] [--only demo mobilenet vit text] [--calib 512] [--limit N]
        [--modelopt-python /work/venv-modelopt/bin/python] [--out FILE]
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

from accuracy_vs_ort import ORT_METHODS, Reader, input_name, ort_quantized, preprocess, run, setup
from benchlib import commit, cpu_model, write_result

HERE = os.path.dirname(os.path.abspath(__file__))
LEVELS = (("all", ort.GraphOptimizationLevel.ORT_ENABLE_ALL), ("basic", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC))

# run with --modelopt-python: NVIDIA ModelOpt's ONNX PTQ on the CPU execution provider; the calibration data is
# one array (.npy) or {input name: array} (.npz)
MODELOPT = r"""
import sys, numpy as np
from modelopt.onnx.quantization import quantize
src, dst, mode, method, cal = sys.argv[1:6]
data = dict(np.load(cal)) if cal.endswith(".npz") else np.load(cal)
quantize(src, quantize_mode=mode, calibration_data=data, calibration_method=method, calibration_eps=["cpu"],
         high_precision_dtype="fp32", output_path=dst, log_level="WARNING")
"""


def modelopt_versions(python):
    """(ModelOpt's version, its onnxruntime's) in the venv of python, or ("-", "-") without one."""
    code = "import modelopt, onnxruntime; print(modelopt.__version__, onnxruntime.__version__)"
    v = subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.split() \
        if os.path.exists(python) else []
    return (v[0], v[-1]) if v else ("-", "-")


def predict(model_path, feeds, level):
    """Top-1 class of every sample: feeds {input name: array [N, ...]}, 1000 samples a run."""
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    n = len(next(iter(feeds.values())))
    return np.concatenate([sess.run(None, {k: v[i:i + 1000] for k, v in feeds.items()})[0].argmax(1)
                           for i in range(0, n, 1000)])


def pct(v):
    return "-" if v is None else f"{100 * v:.2f}%"


def n_quantize(path):
    return sum(n.op_type == "QuantizeLinear" for n in onnx.load(path).graph.node)


def row(label, fmt, model, d, n_q, sim=None, sim_pred=None, note=""):
    """One table row: the model run by onnxruntime at each level of LEVELS, its top-1 and (for ptq's exports,
    sim_pred being `ptq validate`'s predictions) the fraction predicted alike; a level onnxruntime refuses is a
    note."""
    top, agree = {}, {}
    for lv, level in LEVELS:
        try:
            p = predict(model, d["x"], level)
        except Exception as e:  # noqa: BLE001 - onnxruntime refusing a model is a result to record
            note += f" {lv}: failed: {type(e).__name__}: {str(e)[:120]}"
            continue
        top[lv] = float((p == d["labels"]).mean())
        if sim_pred is not None:
            agree[lv] = float((p == sim_pred).mean())
    r = dict(label=label, fmt=fmt, sim=sim, top=top, agree=agree, n_q=n_q, note=note.strip())
    print(r, flush=True)
    return r


def failed(label, fmt, note):
    print(label, note, flush=True)
    return dict(label=label, fmt=fmt, sim=None, top={}, agree={}, n_q=None, note=note)


def compare(a, J, tag, model, d, keep=lambda label: True):
    """Every tool on one model and its data d (see fmnist_data): (FP32 top-1, rows); keep(label) picks the rows
    to make (bench/accuracy_draws.py keeps a few)."""
    fp32 = float((predict(model, d["x"], LEVELS[0][1]) == d["labels"]).mean())
    limit = ["--limit", str(a.limit)] if a.limit else []
    run([a.ptq, "calibrate", "--model", model, "--data", d["calib"], "--out", J(f"{tag}-c.h5")])
    rows = []
    for label, fmt, flags in (("ptq default plan (placement trt)", "int8", []),
                              ("ptq --placement ort", "int8", ["--placement", "ort"]),
                              ("ptq --placement all", "int8", ["--placement", "all"]),
                              ("ptq --target ort-cpu", "uint8", ["--target", "ort-cpu"]),
                              ("ptq --core fp8 (placement trt)", "fp8", ["--core", "fp8"])):
        if not keep(label):
            continue
        n = f"{tag}-{len(rows)}"
        plan, logits, qdq = J(n + ".json"), J(n + ".npy"), J(n + ".onnx")
        run([a.ptq, "plan", J(f"{tag}-c.h5"), "--model", model, *flags, "--out", plan, "--quiet"])
        run([a.ptq, "validate", "--model", model, "--plan", plan, "--data", d["test"], *limit, "--report",
             J(n + "-rep"), "--logits", logits])
        run([a.ptq, "export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq, "--quiet"])
        rep, p = json.load(open(J(n + "-rep", "validate.json"))), json.load(open(plan))
        n_q = sum(e["kind"] == "activation" and e["precision"] not in ("fp32", "fp16") for e in p["tensors"])
        rows.append(row(label, fmt, qdq, d, n_q, rep["top1_quant"], np.load(logits).argmax(1),
                        note=f"plan method {p.get('method')}"))
    for method in ORT_METHODS:
        label = f"onnxruntime quantize_static {method}"
        if not keep(label):
            continue
        try:
            out = ort_quantized(model, J(f"{tag}-ort-{method}.onnx"), d["cal"], method)
            rows.append(row(label, "int8", out, d, n_quantize(out)))
        except Exception as e:  # noqa: BLE001 - a peer that cannot make the model is a result to record
            rows.append(failed(label, "int8", f"failed: {type(e).__name__}: {str(e)[:120]}"))
    for label, fmt, kw in (
            ("onnxruntime quantize_static U8 MinMax", "uint8",
             dict(activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)),
            ("onnxruntime quantize_static FP8 (Distribution, its only FP8 calibrator)", "fp8",
             dict(activation_type=QuantType.QFLOAT8E4M3FN, weight_type=QuantType.QFLOAT8E4M3FN))):
        if not keep(label):
            continue
        out = J(f"{tag}-ort-{fmt}.onnx")
        method = CalibrationMethod.Distribution if fmt == "fp8" else CalibrationMethod.MinMax
        try:
            quantize_static(model, out, Reader(d["cal"]), quant_format=QuantFormat.QDQ, per_channel=True,
                            calibrate_method=method, **kw)
            rows.append(row(label, fmt, out, d, n_quantize(out)))
        except Exception as e:  # noqa: BLE001 - a peer that cannot make the model is a result to record
            rows.append(failed(label, fmt, f"failed: {type(e).__name__}: {str(e)[:120]}"))
    if not os.path.exists(a.modelopt_python):
        rows.append(failed("NVIDIA ModelOpt", "-", f"not run: no {a.modelopt_python}"))
        return fp32, rows
    if len(d["cal"]) == 1:
        cal = J(f"{tag}-cal.npy")
        np.save(cal, next(iter(d["cal"].values())))
    else:
        cal = J(f"{tag}-cal.npz")
        np.savez(cal, **d["cal"])
    src = J(f"{tag}-modelopt-src.onnx")  # ModelOpt rewrites the model file it is given: a copy
    for mode, method in (("int8", "max"), ("int8", "entropy"), ("fp8", "max")):
        label = f"NVIDIA ModelOpt {mode.upper()} calibration_method={method}"
        if not keep(label):
            continue
        out = J(f"{tag}-modelopt-{mode}-{method}.onnx")
        shutil.copyfile(model, src)
        p = subprocess.run([a.modelopt_python, "-c", MODELOPT, src, out, mode, method, cal],
                           capture_output=True, text=True)
        if p.returncode or not os.path.exists(out):
            rows.append(failed(label, mode, "failed: " + p.stderr.strip()[-160:].replace("\n", " ")))
        else:
            rows.append(row(label, mode, out, d, n_quantize(out)))
    return fp32, rows


def fmnist_data(a, J, model, train, x_test, labels):
    """A Fashion-MNIST model's data: ptq's HDF5 sets (calib, test), onnxruntime's feeds (cal, x), labels,
    and the sentence the record gives it."""
    n = a.limit or len(labels)
    return dict(calib=J("calib.h5"), test=J("test.h5"), cal={input_name(model): preprocess(train)},
                x={input_name(model): x_test[:n]}, labels=labels[:n],
                about=f"calibration: the first {len(train)} Fashion-MNIST training images for every tool; accuracy: "
                      f"top-1 on {'the' if n == len(labels) else f'the first {n:,} of the'} {len(labels):,} test "
                      "images, same preprocessing")


def fortunes_data(a, J, seed=0):
    """The text encoder's data (as fmnist_data): scripts/text_data.py's split of a.fortunes tokenized with the
    model's vocabulary; the calibration quotes are the a.calib first rows of a permutation of the training split
    (ordered by category) seeded with seed, in split order, for every tool."""
    sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
    import text_data  # the split and tokenizer that made the model
    meta = json.load(open(text_data.vocab_path(a.text)))
    train, test = text_data.split(text_data.read_fortunes(a.fortunes), 0)
    if (len(train), len(test)) != (meta["train_samples"], meta["test_samples"]):
        sys.exit(f"{a.fortunes}: {len(train)} training and {len(test)} test quotes, the model's vocabulary says "
                 f"{meta['train_samples']} and {meta['test_samples']}: another fortunes package")
    xtr, mtr, ytr = text_data.encode(train, meta["vocab"])
    xte, mte, yte = text_data.encode(test, meta["vocab"])
    pick = np.sort(np.random.default_rng(seed).permutation(len(train))[:a.calib])
    text_data.write_h5(J("text-calib.h5"), xtr[pick], mtr[pick], ytr[pick])
    text_data.write_h5(J("text-test.h5"), xte, mte, yte)
    n = a.limit or len(yte)
    return dict(calib=J("text-calib.h5"), test=J("text-test.h5"),
                cal={"input_ids": xtr[pick], "attention_mask": mtr[pick]},
                x={"input_ids": xte[:n], "attention_mask": mte[:n]}, labels=yte[:n],
                about=f"calibration: {len(pick)} of the {len(train):,} training quotes for every tool (rows "
                      f"`np.sort(np.random.default_rng({seed}).permutation(N)[:n])` of the split, which is ordered by "
                      f"category; per class {np.bincount(ytr[pick]).tolist()}), input_ids and attention_mask fed by "
                      f"name; accuracy: top-1 on {'the' if n == len(yte) else f'the first {n:,} of the'} {len(yte):,} "
                      "test quotes")


def verdict(rows, fmt, ptq_label, what):
    """The line comparing ptq's row ptq_label (its ptq validate top-1) with the best peer of format fmt (its
    onnxruntime top-1: basic optimizations for FP8, all for the others)."""
    lv = "basic" if fmt == "fp8" else "all"
    ptq = next(r["sim"] for r in rows if r["label"] == ptq_label)
    peers = [(r["label"], r["top"][lv]) for r in rows
             if r["fmt"] == fmt and not r["label"].startswith("ptq") and lv in r["top"]]
    best = max(peers, key=lambda r: r[1]) if peers else ("-", None)
    return (f"{what} {pct(ptq)} (ptq validate) against the best peer, {best[0]}, {pct(best[1])}: " +
            ("at least as accurate." if best[1] is None or ptq >= best[1] else "LESS accurate."))


def model_args(ap):
    """The options accuracy_placement and accuracy_draws share: the other models, their data, --limit, ModelOpt's
    python and --only."""
    ap.add_argument("--mobilenet", default="models/fmnist_mobilenet.onnx")
    ap.add_argument("--vit", default="models/fmnist_vit.onnx")
    ap.add_argument("--text", default="models/text_encoder.onnx")
    ap.add_argument("--vgg", default="models/fmnist_vgg.onnx",
                    help="a CNN held out from the choice of ptq's defaults (--only vgg; not in the default four)")
    ap.add_argument("--fortunes", default="/usr/share/games/fortunes", help="the text model's data")
    ap.add_argument("--limit", type=int, default=0, help="evaluate the first N test samples only")
    ap.add_argument("--modelopt-python", default="/work/venv-modelopt/bin/python")
    ap.add_argument("--only", nargs="+", choices=("demo", "mobilenet", "vit", "text", "vgg"),
                    default=("demo", "mobilenet", "vit", "text"), help="the models to run (default: all four)")


def record_target(a, kind):
    """The record's host, date, path (--out, else bench/results/<date>-<kind>-<host>.md) and ModelOpt's versions."""
    host = platform.node().split(".")[0] or "host"
    date = datetime.date.today().isoformat()
    return host, date, a.out or f"bench/results/{date}-{kind}-{host}.md", modelopt_versions(a.modelopt_python)


def main():
    a, J, train, x_test, labels = setup("ptq-bench-place-", model_args)
    models = {"demo": a.model, "mobilenet": a.mobilenet, "vit": a.vit, "text": a.text, "vgg": a.vgg}
    results = []
    for tag in a.only:
        m = models[tag]
        d = fortunes_data(a, J) if tag == "text" else fmnist_data(a, J, m, train, x_test, labels)
        results.append((m, d["about"], *compare(a, J, tag, m, d)))
    host, date, path, mo_ver = record_target(a, "accuracy-placement")
    lines = [f"# Accuracy by tool and placement: ptq against onnxruntime and NVIDIA ModelOpt ({date})", "",
             f"- machine: {host}, {cpu_model()}; ptq commit {commit()}; onnxruntime {ort.__version__}; "
             f"ModelOpt {mo_ver[0]} (its own venv, onnxruntime {mo_ver[-1]} CPU)",
             f"- command: `{' '.join(sys.argv)}`",
             "- onnxruntime runs every model with all graph optimizations and with the basic ones; a peer's top-1 in "
             "the verdicts is the basic one for FP8 models, the all one otherwise",
             "- onnxruntime: quantize_static, QuantFormat.QDQ, per_channel=True; INT8 rows QInt8 activations and "
             "weights, ActivationSymmetric and WeightSymmetric; U8: QUInt8 activations (asymmetric), QInt8 weights",
             "- ModelOpt: modelopt.onnx.quantization.quantize(quantize_mode int8|fp8, calibration_method, "
             "calibration_eps=[\"cpu\"], high_precision_dtype=\"fp32\"), calibration data the same samples as an "
             "array (several inputs: a dict by input name)",
             "- ptq: percentile 99.99 (its default calibrator), FP16 first and last layers (FP32 for ort-cpu); in "
             "transformers the trt placement also rounds LayerNorm, Softmax and residual Add outputs to FP16", ""]
    for model, about, fp32, rows in results:
        lines += [f"## {model}", "", f"- {about}", "", f"FP32 top-1 (onnxruntime): {100 * fp32:.2f}%", "",
                  "| quantization | format | quantized activations / Q nodes | ptq validate top-1 | onnxruntime "
                  "top-1, all optimizations | same prediction as ptq validate, all | onnxruntime top-1, basic "
                  "optimizations | same prediction as ptq validate, basic | note |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['label']} | {r['fmt']} | {'-' if r['n_q'] is None else r['n_q']} | {pct(r['sim'])} | "
                         f"{pct(r['top'].get('all'))} | {pct(r['agree'].get('all'))} | {pct(r['top'].get('basic'))} "
                         f"| {pct(r['agree'].get('basic'))} | {r['note']} |")
        lines += ["", verdict(rows, "int8", "ptq default plan (placement trt)", "INT8: ptq's default plan"),
                  verdict(rows, "fp8", "ptq --core fp8 (placement trt)", "FP8: ptq --core fp8"), ""]
    write_result(path, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
