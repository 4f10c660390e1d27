"""ptq run: every stage into one folder, and resuming: a second run with the
same inputs (whatever --threads and --batch) skips every stage, one with a
file of report/ or ort/ missing reruns that stage, a changed validation set
reruns what reads it
(sensitivity, validate) and nothing else, --force reruns everything, and a
budget no plan meets exits 11 with the best plan validated and exported;
--reduce-range reruns sensitivity, the plan and what reads them, and with
--budget the report and the budgeted plan both have it; --target ort-cpu
--budget reruns sensitivity for that target and plans with it;
--smooth ALPHA on the ViT runs `ptq smooth` first and every stage on its
model (the archive records that model's SHA-256; a second run skips it, a
new alpha reruns everything), and on a model without a LayerNorm to smooth
stops at that stage with its exit 5. A bad flag value stops the run before
its first stage."""
import hashlib
import json
import os
import shutil
import sys
import tempfile

import h5py

from ptqtest import MODEL, SRC, check, finish, fmnist_test, have_demo, ptq

VIT = os.path.join(SRC, "models", "fmnist_vit.onnx")

OUTPUTS = ["run.json", "calib.h5", "sens.json", "sens.md", "sens.html", "plan.json", "report/validate.json",
           "report/validate.md", "report/report.html", "report/confusion-fp32.png", "report/confusion-quant.png",
           "report/confusion-delta.png", "calib.cache", "ort/calibration.flatbuffers", "ort/calibration.json",
           "ort/calibration.cache", "ranges.json", "model_qdq.onnx"]


def stages(out):
    return {l[3:].split(":")[0].strip(): "skipped" not in l for l in out.splitlines() if l.startswith("== ") and "done" not in l}


def main():
    if not have_demo():
        print("cli_run_test: skipped: no demo model or Fashion-MNIST")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-run-")
    J = lambda *p: os.path.join(tmp, *p)
    try:
        images, labels = fmnist_test(700)
        with h5py.File(J("cal.h5"), "w") as f:
            f["images"] = images[:200]
        with h5py.File(J("val.h5"), "w") as f:
            f["images"] = images[200:500]
            f["labels"] = labels[200:500]
        base = ["run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out", J("out"),
                "--calib-samples", "0", "--samples", "0"]
        rc, out, err = ptq(*base)
        ran = stages(out)
        check("ptq run: exit 0, every stage ran", rc == 0 and all(ran.values()) and len(ran) == 8, err[-300:])
        missing = [o for o in OUTPUTS if not os.path.exists(J("out", o))]
        check("every output is in the folder", not missing, ", ".join(missing))
        rc, out, err = ptq(*base)
        check("a second run skips every stage", rc == 0 and not any(stages(out).values()), out)
        # a file of a folder's stage missing: that stage runs again, and puts it back
        gone = ["report/confusion-delta.png", "report/validate.md", "ort/calibration.cache", "ort/calibration.json"]
        for g in gone:
            os.remove(J("out", g))
        rc, out, err = ptq(*base)
        rerun = {k for k, v in stages(out).items() if v}
        check("a missing report or ort file reruns validate and ort only, and they are back",
              rc == 0 and rerun == {"validate", "ort"} and all(os.path.exists(J("out", g)) for g in gone),
              f"exit {rc}: {sorted(rerun)} {err[-300:]}")
        # the outputs are the same bytes whatever --threads and --batch (tests/cli_calib_test.py,
        # cli_sensitivity_test.py, cli_pipeline_test.py): changing only them reruns nothing
        rc, out, err = ptq(*base, "--threads", "1", "--batch", "37")
        check("another --threads and --batch: every stage skipped", rc == 0 and not any(stages(out).values()),
              f"exit {rc}: {out[-300:]} {err[-300:]}")
        # another validation set: sensitivity and validate rerun, calibration and exports do not
        with h5py.File(J("val.h5"), "w") as f:
            f["images"] = images[400:700]
            f["labels"] = labels[400:700]
        rc, out, err = ptq(*base)
        ran = stages(out)
        rerun = {k for k, v in ran.items() if v}
        check("a changed validation set reruns sensitivity and validate only", rc == 0 and rerun == {"sensitivity", "validate"},
              ", ".join(sorted(rerun)))
        rc, out, err = ptq(*base, "--force")
        check("--force reruns every stage", rc == 0 and all(stages(out).values()))
        v = json.load(open(J("out", "report", "validate.json")))
        check("the report covers the validation set", v["samples"] == 300)
        # --reduce-range: sensitivity, the plan and what reads them rerun, calibration does not; both record it
        rc, out, err = ptq(*base, "--reduce-range")
        ran = stages(out)
        plan = json.load(open(J("out", "plan.json"))) if rc == 0 else {}
        sens = json.load(open(J("out", "sens.json"))) if rc == 0 else {}
        check("--reduce-range: exit 0, sensitivity and the plan rerun (calibration skipped) and record reduce_range",
              rc == 0 and ran.get("sensitivity") and ran.get("plan") and not ran.get("calibrate") and
              plan.get("reduce_range") is True and sens.get("reduce_range") is True,
              f"exit {rc}: {sorted(k for k, r in ran.items() if r)} {err[-300:]}")
        # with --budget: the report is the one just made (skipped), the budgeted plan and its trace have it
        rc, out, err = ptq(*base, "--reduce-range", "--budget", "1")
        ran = stages(out)
        plan = json.load(open(J("out", "plan.json"))) if rc in (0, 11) else {}
        trace = json.load(open(J("out", "plan.trace.json"))) if rc in (0, 11) else {}
        check("--reduce-range --budget 1: the budgeted plan (sensitivity skipped) and its trace record reduce_range",
              rc in (0, 11) and ran.get("plan") and not ran.get("sensitivity") and
              plan.get("reduce_range") is True and trace.get("reduce_range") is True,
              f"exit {rc}: {sorted(k for k, r in ran.items() if r)} {err[-300:]}")
        # --target ort-cpu --budget: sensitivity reruns for the target (it is in its key), the budgeted plan moves
        # tensors to FP32 and keeps the others uint8
        rc, out, err = ptq(*base, "--reduce-range", "--target", "ort-cpu", "--budget", "1")
        ran = stages(out)
        plan = json.load(open(J("out", "plan.json"))) if rc in (0, 11) else {"tensors": []}
        sens = json.load(open(J("out", "sens.json"))) if rc in (0, 11) else {}
        check("--target ort-cpu --budget 1: sensitivity reruns and records the target, the plan is ort-cpu's (no FP16)",
              rc in (0, 11) and ran.get("sensitivity") and sens.get("target") == "ort-cpu" and
              plan.get("target") == "ort-cpu" and not any(e["precision"] == "fp16" for e in plan["tensors"]) and
              any(e["precision"] == "uint8" for e in plan["tensors"]),
              f"exit {rc}: {sorted(k for k, r in ran.items() if r)} {err[-300:]}")
        # --reference: validate takes FP32 from eval's logits; the same report figures
        rc, _, err = ptq("eval", "--model", MODEL, "--data", J("val.h5"), "--logits", J("fp32.npy"))
        check("eval --logits", rc == 0, err[-300:])
        rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                           J("out-ref"), "--calib-samples", "0", "--samples", "0", "--reference", J("fp32.npy"))
        vr = json.load(open(J("out-ref", "report", "validate.json"))) if rc == 0 else {}
        same = all(vr.get(k) == v.get(k) for k in ("top1_fp32", "top1_quant", "changed_predictions", "quant"))
        check("--reference: exit 0, validate recorded the file, the same figures as without it",
              rc == 0 and vr.get("fp32_reference") == J("fp32.npy") and same, err[-300:])
        rc, _, err = ptq("eval", "--model", MODEL, "--data", J("val.h5"), "--limit", "100", "--logits", J("f100.npy"))
        rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                           J("out-ref"), "--calib-samples", "0", "--samples", "0", "--reference", J("f100.npy"))
        ran = {k for k, r in stages(out).items() if r}
        check("--reference of another pick: validate alone reruns and exits 7 naming the file",
              rc == 7 and "f100.npy" in err and ran <= {"validate"}, f"exit {rc}: {sorted(ran)} {err[-300:]}")
        # a budget no plan meets (a plan may move one tensor at most... none here: the budget is impossible)
        rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                           J("out2"), "--calib-samples", "0", "--samples", "0", "--budget", "0", "--class-budget", "0",
                           "--core", "fp8-e5m2")
        ok_files = all(os.path.exists(J("out2", o)) for o in ("plan.json", "plan.trace.json", "model_qdq.onnx"))
        if rc == 0:  # FP16 everywhere may meet a zero budget on 300 images: then the budget was met, also fine
            tr = json.load(open(J("out2", "plan.trace.json")))
            check("--budget 0: met (exit 0) with the trace", tr["met"] and ok_files)
        else:
            check("--budget 0 not met: exit 11, the best plan validated and exported", rc == 11 and ok_files,
                  f"exit {rc}: {err.strip()[-300:]}")
        rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                           J("out3"), "--class-budget", "1")
        check("--class-budget without --budget: exit 2", rc == 2, err)
        # a bad flag value, or a --reference that is not there, stops the run before its first stage
        bads = [["--budget", "-1"], ["--budget", "nan"], ["--budget", "1", "--class-budget", "-3"],
                ["--method", "bogus"], ["--method", "percentile=101"], ["--core", "int4"], ["--core", "fp16"],
                ["--target", "bogus"], ["--target", "ort-cpu", "--core", "fp8"], ["--core", "fp8", "--reduce-range"],
                ["--device", "bogus"], ["--input", "x"], ["--smooth", "2"], ["--batch", "0"],
                ["--reference", J("none.npy")]]
        for bad in bads:
            code = 3 if bad[0] == "--reference" else 2
            rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                               J("out6"), *bad)
            check(f"{' '.join(bad)}: exit {code} before any stage, nothing written",
                  rc == code and "== " not in out and not os.path.exists(J("out6")),
                  f"exit {rc}: {out[-200:]} {err[-300:]}")

        # --smooth: the smoothed model first, every stage on it
        if os.path.exists(VIT):
            sm = ["run", "--model", VIT, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out", J("out4"),
                  "--calib-samples", "64", "--samples", "100"]
            rc, out, err = ptq(*sm, "--smooth", "0.5")
            ran = stages(out)
            check("--smooth 0.5: exit 0, the smooth stage and then the other 8", rc == 0 and list(ran)[0] == "smooth"
                  and all(ran.values()) and len(ran) == 9 and "8 LayerNorm outputs smoothed" in out, err[-300:])
            with h5py.File(J("out4", "calib.h5")) as f:
                recorded = f.attrs.get("model_sha256", b"")
            recorded = recorded.decode() if isinstance(recorded, bytes) else str(recorded)
            smoothed = hashlib.sha256(open(J("out4", "model_smooth.onnx"), "rb").read()).hexdigest() \
                if os.path.exists(J("out4", "model_smooth.onnx")) else None
            check("the archive was calibrated on DIR/model_smooth.onnx", smoothed is not None and recorded == smoothed,
                  f"archive {recorded[:16]}, smoothed {str(smoothed)[:16]}")
            rc, out, _ = ptq(*sm, "--smooth", "0.5")
            check("--smooth again: every stage skipped", rc == 0 and not any(stages(out).values()), out[-300:])
            rc, out, _ = ptq(*sm, "--smooth", "0.8")
            check("--smooth 0.8: every stage runs again", rc == 0 and all(stages(out).values()), out[-300:])
            rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                               J("out5"), "--smooth", "0.5")
            check("--smooth on a model without a LayerNorm: exit 5 at the smooth stage, naming why",
                  rc == 5 and "nothing to smooth" in err and not os.path.exists(J("out5", "calib.h5")), err[-300:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("cli_run_test")


if __name__ == "__main__":
    sys.exit(main())
