#!/usr/bin/env python3
"""Fidelity to FP32 of ptq's plans and of its peers' models, on the draws of
bench/accuracy_draws.py: for each TAG:MODEL:SCRATCH:TEST given and each draw
K (SCRATCH/TAG-dK-c.h5, ptq's archive of the draw's calibration samples),
- ptq's default INT8 and FP8 plans of that archive (planned now with --ptq),
  simulated by `ptq validate --logits` and exported as Q/DQ models;
- every peer model the draw made (SCRATCH/TAG-dK-PEER.onnx);
are compared with the FP32 model on the test set: top-1, the fraction of
test samples predicted as FP32 predicts them, and the logits' SQNR against
FP32's (10 log10 of sum f^2 over sum (q - f)^2, all samples and classes).
onnxruntime runs the FP32 model and every Q/DQ model (ptq's exports
included) with all graph optimizations for INT8 and the basic ones for FP8
(REFERENCE.md: the extended ones mis-rewrite FP8 Q/DQ around Conv), as the
draws records do.

Top-1 against labels moves with which few hundred test samples the
quantization flips; how far a quantized model is from its FP32 model is what
the quantizer controls, and is measured here on every sample and class.

TEST is the draws' test set: test.h5 (the Fashion-MNIST test images, read
here from the IDX files of $PTQ_FMNIST_DIR with bench/accuracy_vs_ort.py's
preprocessing) or text-test.h5 (input_ids, attention_mask and labels).

--ptq-also LABEL=PATH adds the simulated rows of another ptq binary (an
older build, to show what a change did), --variant FLAGS those of ptq's
plans with other `ptq plan` flags; the peers run once.

    python3 bench/fidelity_draws.py --ptq build/ptq [--ptq-also before=/tmp/old/bin/ptq] [--draws 5] \\
        [--out FILE] demo:models/fmnist_resnet.onnx:/tmp/ptq-bench-draws-X:test.h5 ...
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from accuracy_vs_ort import preprocess  # noqa: E402
from benchlib import FM, commit, cpu_model, idx, write_result  # noqa: E402

PEERS = (("modelopt-int8-max", "ModelOpt INT8 max", "int8"),
         ("modelopt-int8-entropy", "ModelOpt INT8 entropy", "int8"),
         ("ort-MinMax", "quantize_static MinMax", "int8"),
         ("ort-Entropy", "quantize_static Entropy", "int8"),
         ("ort-Percentile", "quantize_static Percentile", "int8"),
         ("modelopt-fp8-max", "ModelOpt FP8 max", "fp8"))
LEVEL = {"int8": ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "fp8": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC}


def test_set(scratch, test):
    """(onnxruntime feeds {input name or None: array}, labels) of a draws' test set."""
    if os.path.basename(test).startswith("text"):
        import h5py
        with h5py.File(os.path.join(scratch, test)) as f:
            return {"input_ids": f["input_ids"][:], "attention_mask": f["attention_mask"][:]}, f["labels"][:]
    x = preprocess(idx(os.path.join(FM, "t10k-images-idx3-ubyte.gz")))
    return {None: x}, idx(os.path.join(FM, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)


def logits(model, feeds, level):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {(k or sess.get_inputs()[0].name): v for k, v in feeds.items()}
    n = len(next(iter(feeds.values())))
    return np.concatenate([sess.run(None, {k: v[i:i + 500] for k, v in feeds.items()})[0]
                           for i in range(0, n, 500)]).astype(np.float64)


def measures(q, f, labels):
    """(top-1 %, agreement with FP32's predictions %, logits SQNR dB against FP32)."""
    err = np.sum((q - f) ** 2)
    sqnr = float("inf") if err == 0 else 10 * np.log10(np.sum(f ** 2) / err)
    return (100 * float((q.argmax(1) == labels).mean()), 100 * float((q.argmax(1) == f.argmax(1)).mean()), sqnr)


def ptq_rows(ptq, model, archive, test, work, fmt, flags=()):
    """ptq's default plan of archive for fmt (with plan flags): (validate's logits, the path of its Q/DQ export)."""
    plan, lg, qdq = (os.path.join(work, n) for n in ("p.json", "l.npy", "q.onnx"))
    core = (["--core", "fp8"] if fmt == "fp8" else []) + list(flags)
    run = dict(check=True, stdout=subprocess.DEVNULL)
    subprocess.run([ptq, "plan", archive, "--model", model, *core, "--out", plan, "--quiet"], **run)
    subprocess.run([ptq, "validate", "--model", model, "--plan", plan, "--data", test, "--report",
                    os.path.join(work, "r"), "--logits", lg], **run)
    subprocess.run([ptq, "export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq, "--quiet"],
                   **run)
    return np.load(lg).astype(np.float64), qdq


def model_section(a, tag, model, scratch, test):
    feeds, labels = test_set(scratch, test)
    f32 = logits(model, feeds, LEVEL["int8"])
    fp32_top1 = 100 * float((f32.argmax(1) == labels).mean())
    rows = {}  # label -> list of per-draw (top1, agree, sqnr)
    with tempfile.TemporaryDirectory() as work:
        for k in range(a.draws):
            archive = os.path.join(scratch, f"{tag}-d{k}-c.h5")
            for who, ptq, flags in a.binaries:
                for fmt in ("int8", "fp8"):
                    sim, qdq = ptq_rows(ptq, model, archive, os.path.join(scratch, test), work, fmt, flags)
                    plan = f"{who} {' '.join(flags)}" if flags else f"{who} default"
                    rows.setdefault((f"{plan} {fmt.upper()}, simulated", fmt), []).append(
                        measures(sim, f32, labels))
                    if who != "ptq" or flags:
                        continue  # another build or plan: its simulation only
                    rows.setdefault((f"{who} default {fmt.upper()}, export in onnxruntime", fmt), []).append(
                        measures(logits(qdq, feeds, LEVEL[fmt]), f32, labels))
            for peer, label, fmt in PEERS:
                path = os.path.join(scratch, f"{tag}-d{k}-{peer}.onnx")
                if os.path.exists(path):
                    rows.setdefault((label, fmt), []).append(measures(logits(path, feeds, LEVEL[fmt]), f32, labels))
            print(f"{tag} draw {k} done", flush=True)
    lines = [f"### {tag}: {model}", "",
             f"- {len(labels):,} test samples; FP32 top-1 (onnxruntime, all optimizations): {fp32_top1:.2f}%", "",
             "| model | format | draws | top-1 mean | agreement with FP32, mean | worst draw | logits SQNR dB, mean "
             "| worst draw |", "|---|---|---|---|---|---|---|---|"]
    for (label, fmt), v in rows.items():
        t, g, s = (np.array(c) for c in zip(*v))
        lines.append(f"| {label} | {fmt} | {len(v)} | {t.mean():.3f}% | {g.mean():.3f}% | {g.min():.2f}% | "
                     f"{s.mean():.2f} | {s.min():.2f} |")
    best = []
    for fmt in ("int8", "fp8"):
        peers = [(np.mean([x[1] for x in v]), np.mean([x[2] for x in v]), label) for (label, f), v in rows.items()
                 if f == fmt and not label.startswith("ptq")]
        mine = [(np.mean([x[1] for x in v]), np.mean([x[2] for x in v]), label) for (label, f), v in rows.items()
                if f == fmt and label.startswith("ptq")]
        if peers and mine:
            ga, sa = max(peers), max(peers, key=lambda p: p[1])
            best.append(f"- {fmt.upper()}: the best peer by agreement, {ga[2]}, {ga[0]:.3f}%; by SQNR, {sa[2]}, "
                        f"{sa[1]:.2f} dB; ptq: " + "; ".join(f"{m[2]} {m[0]:.3f}%, {m[1]:.2f} dB" for m in mine))
    return lines + [""] + best + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptq", required=True)
    ap.add_argument("--ptq-also", action="append", default=[], metavar="LABEL=PATH")
    ap.add_argument("--variant", action="append", default=[], metavar="PLAN-FLAGS",
                    help="also ptq's plans with these `ptq plan` flags (simulated), e.g. '--method mse'")
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--out")
    ap.add_argument("spec", nargs="+", help="TAG:MODEL:SCRATCH:TEST")
    a = ap.parse_args()
    given = a.ptq
    a.ptq = os.path.abspath(a.ptq)
    a.binaries = [("ptq", a.ptq, [])] + [("ptq " + x.split("=", 1)[0], os.path.abspath(x.split("=", 1)[1]), [])
                                         for x in a.ptq_also] + [("ptq", a.ptq, v.split()) for v in a.variant]
    start = datetime.datetime.now(datetime.timezone.utc)
    lines = [f"# Fidelity to FP32 of ptq's default plans and the peers' models, on the accuracy draws "
             f"({start:%Y-%m-%d})", "",
             f"- machine: {platform.node()}, {cpu_model()}, {os.cpu_count()} cores; ptq {commit()}; "
             f"onnxruntime {ort.__version__}",
             "- command: `python3 bench/fidelity_draws.py --ptq " + given +
             "".join(f" --ptq-also {x}" for x in a.ptq_also) +
             "".join(f" --variant '{v}'" for v in a.variant) + f" --draws {a.draws} " + " ".join(a.spec) + "`",
             "- agreement: the fraction of test samples whose top-1 class is FP32's; SQNR: 10 log10(sum f^2 / "
             "sum (q - f)^2) over every logit, f FP32's logits; onnxruntime with all optimizations for INT8 and "
             "the basic ones for FP8; means and worst over the draws", ""]
    for spec in a.spec:
        tag, model, scratch, test = spec.split(":")
        lines += model_section(a, tag, model, scratch, test)
    lines.append(f"Run time: {(datetime.datetime.now(datetime.timezone.utc) - start).total_seconds() / 60:.1f} min.")
    out = a.out or os.path.join(HERE, "results", f"{start:%Y-%m-%d}-fidelity-draws-{platform.node()}.md")
    write_result(out, lines)


if __name__ == "__main__":
    main()
