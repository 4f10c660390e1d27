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
stops at that stage with its exit 5. A bad flag value (and a data set flag a
stage would refuse: --output, --input, --preprocess, --labels, --images-key...)
or an --out that is a file stops the run before its first stage, writing
nothing (with --json, the summary still on stdout). Resume keys do not depend on how paths and defaults are spelled,
nor on how --preprocess spells the same preprocessing (another mean reruns);
an output that is not the file its stage wrote reruns that stage; a folder
another run holds (its lock) is refused, exit 3; model_qdq.onnx.data (a
model past 2 GB) is the qdq stage's output too; the temporaries a SIGKILLed
run left are removed by the next. With
--target ort-cpu, ort/ and ranges.json are what `ptq export --target
ort-cpu` writes; with --core fp8-e5m2, ranges.json is on the plan's FP8
grid. --images-key, --labels-key, --placement, --seed and --progress reach
the stages. --math is in the keys of calibrate, sensitivity and validate
(fp32 spelled out keys as no --math; another math reruns them)."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

import ptqtest
from ptqtest import MODEL, SRC, check, finish, fmnist_test, have_demo, ptq

VIT = os.path.join(SRC, "models", "fmnist_vit.onnx")

OUTPUTS = ["run.json", "calib.h5", "sens.json", "sens.md", "sens.html", "plan.json", "report/validate.json",
           "report/validate.md", "report/report.html", "report/confusion-fp32.png", "report/confusion-quant.png",
           "report/confusion-delta.png", "calib.cache", "ort/calibration.flatbuffers", "ort/calibration.json",
           "ort/calibration.cache", "ranges.json", "model_qdq.onnx"]


def stages(out):
    return {l[3:].split(":")[0].strip(): "skipped" not in l for l in out.splitlines() if l.startswith("== ") and "done" not in l}


def ptq_in(cwd, *args):
    """Runs ptq in folder cwd; (exit code, stdout, stderr)."""
    p = subprocess.run([os.path.abspath(ptqtest.PTQ), *args], capture_output=True, text=True, timeout=900, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def tensors(path):
    """The tensors of ranges.json at path, by name."""
    return {t["name"]: t for t in json.load(open(path))["tensors"]}


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
        # --json: the stages' lines on stderr, one JSON summary on stdout
        rc, out, err = ptq(*base, "--json")
        try:
            js = json.loads(out)
        except ValueError:
            js = {}
        check("--json: a JSON summary alone on stdout: exit 0, 8 stages skipped, every output, validate's top-1",
              rc == 0 and js.get("exit") == 0 and [x["status"] for x in js.get("stages", [])] == ["skipped"] * 8
              and set(OUTPUTS) <= set(js.get("files", [])) and "run.json" in js.get("files", [])
              and isinstance(js.get("top1_quant"), float) and js.get("top1_fp32") == json.load(
                  open(J("out", "report", "validate.json")))["top1_fp32"] and "== calibrate" in err,
              f"exit {rc}: {out[-400:]}")
        # the same files and settings spelled otherwise: relative paths from another folder, --out with a slash,
        # every default spelled out, --calib-samples 00 (= 0): every stage skipped
        rc, out, err = ptq_in(tmp, "run", "--model", "./" + os.path.relpath(MODEL, tmp), "--calib-data", "cal.h5",
                              "--data", "./val.h5", "--out", "out/", "--calib-samples", "00", "--samples", "0",
                              "--method", "percentile", "--device", "cpu", "--seed", "0", "--core", "int8",
                              "--target", "trt", "--placement", "trt")
        check("other spellings of the same paths and the defaults: every stage skipped, no '//' in the page's path",
              rc == 0 and len(stages(out)) == 8 and not any(stages(out).values()) and "open out/report/report.html"
              in out, f"exit {rc}: {out[-400:]} {err[-300:]}")
        # another run working in the folder (its lock on it, held here as a run holds it): refused at once, exit 3,
        # naming the folder, nothing touched (both ran, each rewriting run.json from the manifest it read at its start
        # and the files the other wrote: a run could end with exit 0 beside the other's sensitivity and plan)
        lock = os.open(J("out"), os.O_RDONLY)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = open(J("out", "run.json"), "rb").read()
        rc, out, err = ptq(*base, "--force", "--json")
        os.close(lock)
        try:
            js = json.loads(out)
        except ValueError:
            js = {}
        check("a folder another run holds: exit 3 before any stage, naming it, run.json untouched, the JSON summary",
              rc == 3 and "another ptq run" in err and J("out") in err and "== " not in err and
              js.get("exit") == 3 and open(J("out", "run.json"), "rb").read() == before,
              f"exit {rc}: {out[-300:]} {err[-300:]}")
        # a Q/DQ model past protobuf's size keeps its weights in model_qdq.onnx.data (PTQ_TEST_ONNX_INLINE_MAX=0 takes
        # that branch): the qdq stage's output too, in run.json and --json's files; missing or damaged, it reruns (it
        # was in no digest: the stage was skipped and model_qdq.onnx left without its weights)
        ext = base[:base.index("--out")] + ["--out", J("out-ext")] + base[base.index("--out") + 2:]
        big = {"PTQ_TEST_ONNX_INLINE_MAX": "0"}
        rc, out, err = ptq(*ext, "--json", env=big)
        try:
            js = json.loads(out)
        except ValueError:
            js = {}
        recorded = json.load(open(J("out-ext", "run.json")))["outputs"].get("qdq", {}) if rc == 0 else {}
        data = open(J("out-ext", "model_qdq.onnx.data"), "rb").read() if rc == 0 else b""
        check("external data: exit 0, model_qdq.onnx.data in run.json's qdq outputs and in --json's files",
              rc == 0 and data and "model_qdq.onnx.data" in recorded and "model_qdq.onnx.data" in js.get("files", []),
              f"exit {rc}: {recorded} {err[-300:]}")
        os.remove(J("out-ext", "model_qdq.onnx.data"))
        rc, out, err = ptq(*ext, env=big)
        rerun = {k for k, v in stages(out).items() if v}
        check("model_qdq.onnx.data missing: qdq alone reruns and puts it back",
              rc == 0 and rerun == {"qdq"} and os.path.exists(J("out-ext", "model_qdq.onnx.data")) and
              open(J("out-ext", "model_qdq.onnx.data"), "rb").read() == data, f"exit {rc}: {sorted(rerun)} {err[-300:]}")
        with open(J("out-ext", "model_qdq.onnx.data"), "ab") as f:
            f.write(b"\xff" * 64)
        rc, out, err = ptq(*ext, env=big)
        rerun = {k for k, v in stages(out).items() if v}
        check("model_qdq.onnx.data damaged: qdq alone reruns, saying why, and the file is whole again",
              rc == 0 and rerun == {"qdq"} and "model_qdq.onnx.data is not the file the qdq stage wrote" in err and
              open(J("out-ext", "model_qdq.onnx.data"), "rb").read() == data, f"exit {rc}: {sorted(rerun)} {err[-300:]}")
        rc, out, err = ptq(*ext, "--force")
        check("the model inline again (--force): no model_qdq.onnx.data left beside it, none recorded",
              rc == 0 and not os.path.exists(J("out-ext", "model_qdq.onnx.data")) and "model_qdq.onnx.data" not in
              json.load(open(J("out-ext", "run.json")))["outputs"].get("qdq", {}), f"exit {rc}: {err[-300:]}")
        # the temporaries a run killed by SIGKILL leaves beside its outputs (ptq_atomic_create's "<out>.tmp-<32 hex>";
        # no other signal leaves them): the next run in the folder removes them, and nothing else (they stayed)
        stale = ["calib.h5.tmp-" + "0a" * 16, "run.json.tmp-" + "9f" * 16, os.path.join("ort", "calibration.json.tmp-" +
                 "c3" * 16), os.path.join("report", "validate.json.tmp-" + "b7" * 16)]
        others = ["calib.h5.tmp-" + "0a" * 15, "calib.h5.tmp-" + "0A" * 16, "notes.txt.tmp-" + "0a" * 16, "calib.h5.bak"]
        for name in stale + others:
            with open(J("out", name), "w") as f:
                f.write("partial")
        rc, out, err = ptq(*base)
        left = [n for n in stale if os.path.exists(J("out", n))]
        check("a SIGKILLed run's temporaries: the next run removes them (every stage skipped), and no other file",
              rc == 0 and not any(stages(out).values()) and not left and
              all(os.path.exists(J("out", n)) for n in others), f"exit {rc}: left {left} {err[-300:]}")
        for name in others:
            os.remove(J("out", name))
        # a damaged output: its stage runs again and puts the same bytes back; what reads it is skipped
        calib = open(J("out", "calib.h5"), "rb").read()
        with open(J("out", "calib.h5"), "r+b") as f:
            f.truncate(100)
        rc, out, err = ptq(*base)
        rerun = {k for k, v in stages(out).items() if v}
        check("a truncated calib.h5: calibrate alone reruns, saying why, and the archive is whole again",
              rc == 0 and rerun == {"calibrate"} and "calib.h5 is not the file the calibrate stage wrote" in err
              and open(J("out", "calib.h5"), "rb").read() == calib, f"exit {rc}: {sorted(rerun)} {err[-300:]}")
        with open(J("out", "report", "validate.md"), "a") as f:
            f.write("edited\n")
        rc, out, err = ptq(*base)
        rerun = {k for k, v in stages(out).items() if v}
        check("an edited report/validate.md: validate alone reruns", rc == 0 and rerun == {"validate"},
              f"exit {rc}: {sorted(rerun)} {err[-300:]}")
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
        # --preprocess keys by the preprocessing it gives the model, not by its text: the model's own metadata
        # (scale=0.0039... mean=0.286 std=0.353 layout=NCHW channels=1) respelled keys as no --preprocess; another
        # mean reruns what reads images and what reads their outputs; key order, spacing, 3e-1 for 0.3 and 1/255
        # for its decimal do not
        rc, out, err = ptq(*base, "--preprocess", " std=.353  mean=2.86e-1 layout=nchw channels=1")
        check("--preprocess restating the model's metadata, respelled: every stage skipped",
              rc == 0 and len(stages(out)) == 8 and not any(stages(out).values()),
              f"exit {rc}: {out[-300:]} {err[-300:]}")
        rc, out, err = ptq(*base, "--preprocess", "mean=0.3 scale=1/255")
        rerun = {k for k, v in stages(out).items() if v}
        with h5py.File(J("out", "calib.h5")) as f:
            recorded = f.attrs.get("preprocess", b"")
        recorded = recorded.decode() if isinstance(recorded, bytes) else str(recorded)
        check("--preprocess mean=0.3: calibrate, sensitivity and validate rerun, the archive records mean=0.3",
              rc == 0 and {"calibrate", "sensitivity", "validate"} <= rerun and " mean=0.300000012 " in recorded,
              f"exit {rc}: {sorted(rerun)} {recorded} {err[-300:]}")
        rc, out, err = ptq(*base, "--preprocess", "  layout=NCHW std=0.353\tscale=0.00392156862745098   mean=3e-1 ")
        check("the same preprocessing respelled (order, spacing, 3e-1, the decimal of 1/255): every stage skipped",
              rc == 0 and len(stages(out)) == 8 and not any(stages(out).values()),
              f"exit {rc}: {out[-300:]} {err[-300:]}")
        rc, out, err = ptq(*base)
        rerun = {k for k, v in stages(out).items() if v}
        check("no --preprocess again: calibrate, sensitivity and validate rerun",
              rc == 0 and {"calibrate", "sensitivity", "validate"} <= rerun, f"exit {rc}: {sorted(rerun)} {err[-300:]}")
        # --math: fp32 spelled out keys as the default; another math reruns calibrate and the stages that take it
        # (on the CPU, with eval's note, the same FP32 archive: the plan and exports, which read it, are skipped)
        rc, out, err = ptq(*base, "--math", "fp32")
        check("--math fp32 on a folder made without --math: every stage skipped",
              rc == 0 and len(stages(out)) == 8 and not any(stages(out).values()),
              f"exit {rc}: {out[-300:]} {err[-300:]}")
        rc, out, err = ptq(*base, "--math", "fp64")
        rerun = {k for k, v in stages(out).items() if v}
        check("--math fp64: exit 0, calibrate, sensitivity and validate rerun with eval's note, in FP32 on the CPU",
              rc == 0 and rerun == {"calibrate", "sensitivity", "validate"} and
              "ptq calibrate: note: --math fp64 applies to the GPU" in err and
              json.load(open(J("out", "sens.json"))).get("math") == "fp32", f"exit {rc}: {sorted(rerun)} {err[-300:]}")
        rc, out, err = ptq(*base, "--math", "fp64")
        check("--math fp64 again: every stage skipped", rc == 0 and not any(stages(out).values()),
              f"exit {rc}: {out[-300:]} {err[-300:]}")
        rc, out, err = ptq(*base)
        rerun = {k for k, v in stages(out).items() if v}
        check("back to the default math: calibrate reruns, and the stages that take --math",
              rc == 0 and {"calibrate", "sensitivity", "validate"} <= rerun, f"exit {rc}: {sorted(rerun)} {err[-300:]}")
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
        # its exports: ort/ and ranges.json hold onnxruntime's uint8 ranges, as `ptq export --target ort-cpu`
        # writes them; calib.cache stays TensorRT's INT8 (export --format trt takes no ort-cpu), so is not rerun
        rc2, _, err2 = ptq("export", J("out", "calib.h5"), "--method", "percentile", "--format", "ort", "--target",
                           "ort-cpu", "--out", J("ort-cpu"), "--quiet")
        rc3, _, err3 = ptq("export", J("out", "calib.h5"), "--method", "percentile", "--format", "json", "--target",
                           "ort-cpu", "--out", J("ort-cpu.json"), "--quiet")
        same = rc2 == 0 and all(open(J("out", "ort", f), "rb").read() == open(J("ort-cpu", f), "rb").read()
                                for f in ("calibration.json", "calibration.flatbuffers", "calibration.cache"))
        check("--target ort-cpu: ort/ is export --format ort --target ort-cpu's, ranges.json has its ranges, "
              "calib.cache was not rerun",
              rc in (0, 11) and same and rc3 == 0 and tensors(J("out", "ranges.json")) == tensors(J("ort-cpu.json"))
              and ran.get("ort") and ran.get("json") and not ran.get("trt") and "calib.cache (TensorRT) holds" in err,
              f"exit {rc}: {err2[-200:]} {err3[-200:]} {err[-300:]}")
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
        # --core fp8-e5m2: ranges.json on that grid, each activation of the plan with the plan's scale; the
        # TensorRT cache and ORT tables hold INT8 only, and the run says so
        plan = json.load(open(J("out2", "plan.json"))) if rc in (0, 11) else {"tensors": []}
        rng = tensors(J("out2", "ranges.json")) if rc in (0, 11) else {}
        acts = [e for e in plan["tensors"] if e["kind"] == "activation" and e["precision"] == "fp8-e5m2"]
        check("--core fp8-e5m2: ranges.json on the FP8 grid with the plan's scales, a note on calib.cache and ort/",
              acts and all(rng[e["name"]]["format"] == "fp8-e5m2" and
                           abs(rng[e["name"]]["scale"] - e["scales"][0]) <= 1e-6 * e["scales"][0] for e in acts)
              and "calib.cache (TensorRT) and ort/ (ONNX Runtime) hold INT8 ranges" in err,
              f"{len(acts)} FP8 activations; {err[-300:]}")
        rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                           J("out3"), "--class-budget", "1")
        check("--class-budget without --budget: exit 2", rc == 2, err)
        # a bad flag value, or a --reference that is not there, stops the run before its first stage
        bads = [["--budget", "-1"], ["--budget", "nan"], ["--budget", "1", "--class-budget", "-3"],
                ["--method", "bogus"], ["--method", "percentile=101"], ["--core", "int4"], ["--core", "fp16"],
                ["--target", "bogus"], ["--target", "ort-cpu", "--core", "fp8"], ["--core", "fp8", "--reduce-range"],
                ["--device", "bogus"], ["--input", "x"], ["--smooth", "2"], ["--batch", "0"],
                ["--reference", J("none.npy")], ["--output", "nosuch"], ["--input", "nosuch=images"],
                ["--preprocess", "scale=0"], ["--labels", J("labels.txt")], ["--calib-labels", J("labels.txt")],
                ["--images-key", "nosuch"], ["--labels-key", "nosuch"], ["--layout", "NCWH"], ["--seed", "-1"],
                ["--placement", "bogus"], ["--calib-samples", "-1"], ["--samples", "1x"], ["--math", "bogus"],
                ["--math", "FP64"], ["--out", J("a-file")]]
        with open(J("labels.txt"), "w") as f:  # a labels file, for an HDF5 set: refused
            f.write("a.png 1\n")
        open(J("a-file"), "w").close()
        for bad in bads:
            code = 3 if bad[0] in ("--reference", "--out") else 7 if bad[0].endswith("-key") else 2
            shutil.rmtree(J("out6"), ignore_errors=True)  # one a run before it left would hide this one's
            out_flag = [] if bad[0] == "--out" else ["--out", J("out6")]  # a flag given twice is refused
            rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), *out_flag,
                               *bad)
            check(f"{' '.join(bad)}: exit {code} before any stage, nothing written",
                  rc == code and "== " not in out and not os.path.exists(J("out6")) and
                  (bad[0] != "--math" or "unknown math" in err), f"exit {rc}: {out[-200:]} {err[-300:]}")
        # --json with an --out that cannot be a folder (a file, or a folder in one): stdout, moved to stderr for the
        # stages, comes back with the summary (it was left on stderr, the summary never printed)
        for dir_arg in (J("a-file"), J("a-file", "sub")):
            rc, out, err = ptq("run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                               dir_arg, "--json")
            try:
                js = json.loads(out)
            except ValueError:
                js = {}
            check(f"--json --out {os.path.relpath(dir_arg, tmp)}: exit 3, the JSON summary on stdout (exit 3, no "
                  "stage run, no file)", rc == 3 and js.get("exit") == 3 and js.get("files") == [] and
                  [x["status"] for x in js.get("stages", [])] == ["not run"] * 8 and "error" in err,
                  f"exit {rc}: stdout {out[-300:]!r} stderr {err[-300:]!r}")

        # values that start with "--", written --flag=VALUE as the README says: the stages get them whole (they were
        # passed on as "--data --x.h5", which the stages refused after run had made DIR and run.json), and a DIR
        # that starts with "--" is the plan and export stages' archive argument too
        with h5py.File(J("--x.h5"), "w") as f:
            f["images"] = images[:8]
            f["labels"] = labels[:8]
        rc, out, err = ptq_in(tmp, "run", "--model", os.path.abspath(MODEL), "--calib-data=--x.h5", "--data=--x.h5",
                              "--out=--dir", "--samples", "0")
        check("--calib-data=--x.h5 --data=--x.h5 --out=--dir: every stage ran, every output in --dir",
              rc == 0 and len(stages(out)) == 8 and all(stages(out).values()) and
              all(os.path.exists(J("--dir", o)) for o in OUTPUTS), f"exit {rc}: {out[-200:]} {err[-300:]}")
        rc, out, err = ptq_in(tmp, "run", "--model", os.path.abspath(MODEL), "--calib-data=--x.h5", "--data",
                              "./--x.h5", "--out", "./--dir", "--samples", "0")
        check("the same run spelled ./--x.h5 and ./--dir: every stage skipped",
              rc == 0 and len(stages(out)) == 8 and not any(stages(out).values()), f"exit {rc}: {err[-300:]}")

        # an input at the name of a file the run writes (run.json too), or an output folder inside an image-folder
        # data set (--data or --calib-data): refused before any stage, every input intact, no folder made
        from PIL import Image
        for i in range(20):
            os.makedirs(J("imgs", str(labels[i])), exist_ok=True)
            Image.fromarray(images[i]).save(J("imgs", str(labels[i]), f"{i}.png"))
        os.makedirs(J("clash"), exist_ok=True)
        shutil.copy(MODEL, J("clash", "run.json"))
        shutil.copy(J("cal.h5"), J("clash", "calib.cache"))
        with open(J("clash", "ranges.json"), "w") as f:
            f.write("".join(f"{c}\n" for c in range(10)))
        clashes = [("the model at DIR/run.json", ["--model", J("clash", "run.json"), "--calib-data", J("cal.h5"),
                    "--data", J("val.h5"), "--out", J("clash")], J("clash")),
                   ("--calib-data at DIR/calib.cache", ["--model", MODEL, "--calib-data", J("clash", "calib.cache"),
                    "--data", J("val.h5"), "--out", J("clash")], J("clash")),
                   ("--classes at DIR/ranges.json", ["--model", MODEL, "--calib-data", J("cal.h5"), "--data",
                    J("imgs"), "--classes", J("clash", "ranges.json"), "--out", J("clash")], J("clash")),
                   ("--out the image folder --data", ["--model", MODEL, "--calib-data", J("cal.h5"), "--data",
                    J("imgs"), "--out", J("imgs")], J("imgs")),
                   ("--out inside the image folder --calib-data", ["--model", MODEL, "--calib-data", J("imgs"),
                    "--data", J("val.h5"), "--out", J("imgs", "run")], J("imgs"))]
        keep = {p: open(p, "rb").read() for p in (J("clash", "run.json"), J("clash", "calib.cache"),
                                                  J("clash", "ranges.json"))}
        listing = sorted(os.walk(J("imgs")))
        for name, args, folder in clashes:
            rc, out, err = ptq("run", *args)
            check(f"{name}: exit 2 before any stage", rc == 2 and "== " not in out and "refusing" in err,
                  f"exit {rc}: {out[-200:]} {err[-300:]}")
        check("every input intact, nothing added to the folders", sorted(os.listdir(J("clash"))) ==
              sorted(map(os.path.basename, keep)) and all(open(p, "rb").read() == b for p, b in keep.items()) and
              sorted(os.walk(J("imgs"))) == listing)

        # flags handed to the stages: HDF5 sets of other dataset names, the placement, the seed, the progress line
        with h5py.File(J("cal_k.h5"), "w") as f:
            f["pixels"] = images[:64]
        with h5py.File(J("val_k.h5"), "w") as f:
            f["pixels"] = images[200:300]
            f["truth"] = labels[200:300]
        kb = ["run", "--model", MODEL, "--calib-data", J("cal_k.h5"), "--data", J("val_k.h5"), "--out", J("out7"),
              "--calib-samples", "0", "--samples", "0", "--images-key", "pixels", "--labels-key", "truth"]
        rc, out, err = ptq(*kb, "--placement", "all", "--seed", "3", "--progress")
        plan = json.load(open(J("out7", "plan.json"))) if rc == 0 else {}
        v = json.load(open(J("out7", "report", "validate.json"))) if rc == 0 else {}
        rc2, _, err2 = ptq("plan", J("out7", "calib.h5"), "--model", MODEL, "--out", J("p-all.json"), "--placement", "all")
        rc3, _, _ = ptq("plan", J("out7", "calib.h5"), "--model", MODEL, "--out", J("p-trt.json"))
        p_all = json.load(open(J("p-all.json")))["tensors"] if rc2 == 0 else None
        p_trt = json.load(open(J("p-trt.json")))["tensors"] if rc3 == 0 else None
        # (the progress line of sensitivity, the longest stage: a stage done in under 0.2 s draws none)
        check("--images-key, --labels-key, --placement all, --seed, --progress: exit 0, the plan is `ptq plan "
              "--placement all`'s (not the default's), the report covers the 100 images, progress on stderr",
              rc == 0 and plan.get("tensors") == p_all and p_all != p_trt and v.get("samples") == 100
              and "sensitivity:" in err, f"exit {rc}: {err[-300:]} {err2[-200:]}")
        rc, out, err = ptq(*kb, "--placement", "all", "--seed", "3", "--allow-external-data")
        check("--progress and --allow-external-data change no output: every stage skipped",
              rc == 0 and not any(stages(out).values()), f"exit {rc}: {out[-300:]} {err[-300:]}")
        # a calibration set whose images are a virtual dataset of another file: new images there are a new set,
        # though the set's own bytes stay the same (its key covered them alone: every stage was skipped)
        def vds_source(first):
            with h5py.File(J("cal_src.h5"), "w") as f:
                f["pixels"] = images[first:first + 64]
        vds_source(0)
        with h5py.File(J("cal_v.h5"), "w") as f:
            layout = h5py.VirtualLayout(shape=(64, 28, 28), dtype="u1")
            layout[:] = h5py.VirtualSource("cal_src.h5", "pixels", shape=(64, 28, 28))
            f.create_virtual_dataset("pixels", layout)
        vb = kb[:kb.index("--calib-data") + 1] + [J("cal_v.h5")] + kb[kb.index("--calib-data") + 2:]
        vb[vb.index("--out") + 1] = J("out8")
        rc, out, err = ptq(*vb, "--allow-external-data")
        vds_source(300)
        rc2, out2, err2 = ptq(*vb, "--allow-external-data")
        rerun = {k for k, v in stages(out2).items() if v}
        check("--allow-external-data: new images in a virtual dataset's source file rerun calibrate and what reads it",
              rc == 0 and rc2 == 0 and {"calibrate", "sensitivity", "plan", "validate"} <= rerun,
              f"exit {rc}, {rc2}: {sorted(rerun)} {err[-200:]} {err2[-200:]}")
        rc, out, err = ptq(*kb, "--seed", "3")
        rerun = {k for k, v in stages(out).items() if v}
        check("--placement trt (the default) after all: sensitivity, the plan and what reads it rerun, calibration not",
              rc == 0 and {"sensitivity", "plan", "validate", "qdq"} <= rerun and "calibrate" not in rerun and
              json.load(open(J("out7", "plan.json"))).get("placement") == "trt", f"exit {rc}: {sorted(rerun)}")
        rc, out, err = ptq(*kb)
        rerun = {k for k, v in stages(out).items() if v}
        check("another --seed under --calib-samples 0 and --samples 0 reruns nothing: calibrate observes all 64 and "
              "sensitivity measures all 100 (neither takes --seed then)",
              rc == 0 and not rerun, f"exit {rc}: {sorted(rerun)} {err[-300:]}")
        ks = kb[:kb.index("--samples") + 1] + ["50"] + kb[kb.index("--samples") + 2:]
        rc, out, err = ptq(*ks)
        rc2, out2, err2 = ptq(*ks, "--seed", "4")
        rerun = {k for k, v in stages(out2).items() if v}
        check("--samples 50: another --seed reruns sensitivity, which picks its 50 by it; not calibrate",
              rc == 0 and rc2 == 0 and "sensitivity" in rerun and "calibrate" not in rerun,
              f"exit {rc}, {rc2}: {sorted(rerun)} {err2[-300:]}")
        # an image folder and an HDF5 file: the HDF5 options are the file's, and reach only the stages that read it
        # (an image folder's stage refuses them); with no HDF5 set to apply to, run refuses them before any stage
        mixed = [("--calib-data a folder", ["--calib-data", J("imgs"), "--data", J("val_k.h5"), "--images-key",
                                            "pixels", "--labels-key", "truth", "--allow-external-data"]),
                 ("--data a folder", ["--calib-data", J("cal_k.h5"), "--data", J("imgs"), "--images-key", "pixels",
                                      "--layout", "NHW"])]
        for i, (name, args) in enumerate(mixed):
            rc, out, err = ptq("run", "--model", MODEL, *args, "--out", J(f"out-mixed{i}"), "--calib-samples", "0",
                               "--samples", "0")
            check(f"{name}, the other an HDF5 file, its options given: exit 0, every stage ran",
                  rc == 0 and len(stages(out)) == 8 and all(stages(out).values()), f"exit {rc}: {err[-300:]}")
        refused = [("two folders, --images-key", ["--calib-data", J("imgs"), "--data", J("imgs"), "--images-key",
                                                  "pixels"], "--images-key pixels applies only to an HDF5 file"),
                   ("two folders, --input", ["--calib-data", J("imgs"), "--data", J("imgs"), "--input",
                                             "input=pixels"], "--input input=pixels names a dataset of an HDF5 file"),
                   ("--data a folder, --labels-key", ["--calib-data", J("cal_k.h5"), "--data", J("imgs"),
                                                      "--images-key", "pixels", "--labels-key", "truth"],
                    "--labels-key truth applies only to an HDF5 file")]
        for name, args, fragment in refused:
            rc, out, err = ptq("run", "--model", MODEL, *args, "--out", J("out-refused"))
            check(f"{name}: exit 2 before any stage, naming it, nothing written",
                  rc == 2 and "== " not in out and fragment in err and not os.path.exists(J("out-refused")),
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
