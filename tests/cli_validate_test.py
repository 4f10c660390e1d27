#!/usr/bin/env python3
"""`ptq validate` end to end on the demo model: calibrate -> plan -> validate
on 1,000 labelled Fashion-MNIST images; the report folder's JSON and
Markdown, the FP32 side equal to `ptq eval` on the same images, the
quantized side close to it, --reference (eval's logits as the FP32 side:
the same report; another order, pick, dtype or a broken file refused), and bad plans (unknown tensor, zero scale,
another model), unlabelled data and a missing plan refused with their exit
codes and no report written. Run by ctest (label oracle) with PTQ_BIN and
PTQ_SOURCE_DIR set."""
import json
import os
import sys
import tempfile

try:
    import h5py
    import numpy as np
    from ptqtest import MODEL, check, finish, fmnist_test, have_demo, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)






def main():
    if not have_demo():
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-validate-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    images, labels = fmnist_test(1000)
    with h5py.File(J("v.h5"), "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
    with h5py.File(J("unlabelled.h5"), "w") as f:
        f.create_dataset("images", data=images[:50])
    for args in (("calibrate", "--model", MODEL, "--data", J("v.h5"), "--out", J("c.h5")),
                 ("plan", J("c.h5"), "--model", MODEL, "--out", J("plan.json"))):
        rc, _, err = ptq(*args)
        check(args[0], rc == 0, err.strip()[-300:])

    rc, so, err = ptq("validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("v.h5"), "--report",
                      J("rep"))
    check("validate", rc == 0 and "top-1" in so and "changed predictions" in so, err.strip()[-300:])
    rep = json.load(open(J("rep", "validate.json"))) if rc == 0 else {}
    md = open(J("rep", "validate.md")).read() if rc == 0 else ""
    rc, so, err = ptq("eval", "--model", MODEL, "--data", J("v.h5"), "--json")
    ev = json.loads(so) if rc == 0 else {}
    check("report: FP32 top-1 equals ptq eval's on the same images",
          rep.get("samples") == 1000 and abs(rep.get("top1_fp32", -1) - ev.get("top1", -2)) < 1e-12,
          f"{rep.get('top1_fp32')} vs {ev.get('top1')}")
    drop = 100 * (rep.get("top1_fp32", 0) - rep.get("top1_quant", 0))
    check("report: the default INT8 plan loses under 1 point of top-1 here", -1 < drop < 1,
          f"{drop:+.2f} points, {rep.get('changed_predictions')} predictions changed, "
          f"SQNR {rep.get('logits', {}).get('sqnr_db')} dB")
    check("report: per-class deltas, three confusion matrices, logits SQNR/KL",
          len(rep.get("classes", [])) == 10 and "confusion_delta" in rep and "confusion" in rep.get("fp32", {}) and
          "confusion" in rep.get("quant", {}) and rep.get("logits", {}).get("kl_nats") is not None and
          md.count("|") > 100, str(sorted(rep.keys()))[:200])

    # --reference: the FP32 side from eval's logits, FP32 run on the first batch only
    rc, _, err = ptq("eval", "--model", MODEL, "--data", J("v.h5"), "--logits", J("fp32.npy"), "--batch", "256")
    check("eval --logits", rc == 0, err.strip()[-300:])
    rc, so, err = ptq("validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("v.h5"), "--report",
                      J("rep-ref"), "--reference", J("fp32.npy"), "--batch", "256")
    rr = json.load(open(J("rep-ref", "validate.json"))) if rc == 0 else {}
    same = [k for k in ("top1_fp32", "top1_quant", "changed_predictions", "fp32", "quant", "classes", "logits",
                        "confusion_delta") if rr.get(k) == rep.get(k)]
    check("validate --reference: the report equals the one of two runs a batch, the reference recorded",
          rc == 0 and len(same) == 8 and rr.get("fp32_reference") == J("fp32.npy") and
          rr.get("fp32_reference_median_rel_diff") == 0 and rr.get("fp32_reference_checked_images") == 256,
          f"exit {rc}: {err.strip()[-300:]}; equal: {same}; {rr.get('fp32_reference_median_rel_diff')}")
    # --profile: the op table, then the timeline, whose phases add up to its total
    rc, so, err = ptq("validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("v.h5"), "--report",
                      J("rep-prof"), "--reference", J("fp32.npy"), "--batch", "256", "--profile")
    tl = next((l for l in err.splitlines() if l.startswith("timeline")), "")
    phases = dict((p.rsplit(" ", 1)[0].strip(), float(p.rsplit(" ", 1)[1])) for p in tl.split(":", 1)[-1].split(";")
                  if p.strip()) if tl else {}
    want = ("opening the model, data and device", "reading the plan", "preparing its rounding", "reading the reference",
            "until the first image", "first batch", "the other batches", "until this line", "total")
    check("validate --profile: the op table and the command's timeline",
          rc == 0 and "time per op type" in err and tuple(phases) == want and
          abs(sum(v for k, v in phases.items() if k != "total") - phases["total"]) <= len(want),
          f"exit {rc}: {tl or err.strip()[-300:]}")
    fp32 = np.load(J("fp32.npy"))
    np.save(J("shuffled.npy"), fp32[::-1].copy())
    np.save(J("f64.npy"), fp32.astype(np.float64))
    with open(J("junk.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\xff\x7f{'descr': '<f4'")
    d = b"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 10), }"
    d += b" " * ((64 - (10 + len(d) + 1) % 64) % 64) + b"\n"
    with open(J("huge.npy"), "wb") as f:  # a shape that asks for far more than the file holds
        f.write(b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d + fp32[:2].tobytes())
    for name, ref, extra, code, needle in (
            ("another image order", J("shuffled.npy"), (), 7, "does not hold this model's FP32 logits"),
            ("another pick (--limit)", J("fp32.npy"), ("--limit", "300"), 7, "has 1000 rows of logits, this run 300"),
            ("float64 logits", J("f64.npy"), (), 4, "not a little-endian float32"),
            ("a truncated header", J("junk.npy"), (), 4, "header"),
            ("a shape past the file's size", J("huge.npy"), (), 4, "does not match"),
            ("a missing file", J("none.npy"), (), 3, "none.npy")):
        out = J("rep-ref-" + name.replace(" ", "_"))
        rc, so, err = ptq("validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("v.h5"), "--report",
                          out, "--reference", ref, *extra)
        check(f"validate --reference refuses {name}", rc == code and needle in err and not os.path.exists(out),
              f"exit {rc} (want {code}): {err.strip()[-300:]}")

    plan = json.load(open(J("plan.json")))

    def write_plan(name, change):
        p = json.loads(json.dumps(plan))
        change(p)
        with open(J(name), "w") as f:
            json.dump(p, f)
        return J(name)

    def first_int8(p):
        return next(e for e in p["tensors"] if e["precision"] == "int8" and e["kind"] == "activation")

    cases = [
        ("a plan naming an unknown tensor", write_plan("unknown.json", lambda p: first_int8(p).update(name="ghost")),
         J("v.h5"), 2, "ghost"),
        ("a zero scale", write_plan("zero.json", lambda p: first_int8(p).update(scales=[0])), J("v.h5"), 2,
         "finite and > 0"),
        ("a plan for another model", write_plan("other.json", lambda p: p["model"].update(sha256="e" * 64)),
         J("v.h5"), 2, "another model"),
        ("unlabelled data", J("plan.json"), J("unlabelled.h5"), 7, "no labels"),
        ("a missing plan", J("nope.json"), J("v.h5"), 3, "nope.json"),
    ]
    for name, plan_path, data, code, needle in cases:
        out = J("rep-" + name.replace(" ", "_"))
        rc, so, err = ptq("validate", "--model", MODEL, "--plan", plan_path, "--data", data, "--report", out)
        check(f"refuses {name}", rc == code and needle in err and not os.path.exists(out),
              f"exit {rc} (want {code}): {err.strip()}")
    return finish("cli_validate_test")


if __name__ == "__main__":
    sys.exit(main())
