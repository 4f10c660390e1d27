"""The torchvision zoo pipeline shared by tests/zoo_test.py and
bench/zoo_run.py: a random-image HDF5 set, then for one ONNX model `ptq
eval` against onnxruntime's FP32 logits, `ptq calibrate`, `ptq plan`, `ptq
validate`, `ptq export --format qdq` and the Q/DQ model in onnxruntime.
Needs numpy, h5py, onnxruntime (the venv of scripts/setup.sh)."""
import json
import os
import subprocess
import time

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
PREPROCESS = "mean=0.485,0.456,0.406 std=0.229,0.224,0.225"


def make_images(n, size, seed=0):
    """n random RGB images [n, size, size, 3] uint8: smooth colour blobs and
    noise at varied brightness and contrast, so a random network's
    predictions differ from image to image."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    out = np.empty((n, size, size, 3), np.uint8)
    for i in range(n):
        img = np.zeros((size, size, 3), np.float32)
        for _ in range(rng.integers(1, 6)):
            cx, cy, r = rng.random(), rng.random(), 0.05 + 0.4 * rng.random()
            blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
            img += blob[..., None] * rng.uniform(-1, 1, 3)
        img += rng.normal(0, rng.uniform(0.02, 0.3), img.shape)
        img = 0.5 + rng.uniform(0.2, 1.0) * img + rng.uniform(-0.3, 0.3)
        out[i] = np.clip(img * 255 + 0.5, 0, 255).astype(np.uint8)
    return out


def write_h5(path, images, labels):
    import h5py
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels.astype(np.int64))


def model_input(images):
    """What ptq feeds the model for --preprocess PREPROCESS: NCHW float32."""
    x = (images.astype(np.float32) * np.float32(1 / 255) - MEAN) / STD
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)).astype(np.float32)


def ort_run(path, x, batch=32, level=None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(os.environ.get("PTQ_ZOO_ORT_THREADS") or 2)
    so.log_severity_level = 3  # errors only: not a warning per unused initializer of each Q/DQ model
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + batch]})[0] for i in range(0, len(x), batch)])


def ort_basic(path, x):
    """onnxruntime's logits with only its basic graph optimizations, as
    [N, 1, classes]: one more FP32 engine for logits_bound's yardstick."""
    import onnxruntime as ort
    return ort_run(path, x, level=ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)[:, None, :]


def run_ptq(ptq_bin, *args, timeout=3600):
    t0 = time.time()
    p = subprocess.run([ptq_bin, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def logits_bound(ours, ort, exact=None, rel=1e-4, ratio=2.0, more=None):
    """Per image: ptq's logits within rel of onnxruntime's (||ptq - ort|| /
    ||ort||); or, for an image that misses it where the reference run
    (exact: a callable taking the indices of the images that miss and
    returning torch's (float64, float32) logits of the same network for
    them, from export_zoo.reference_logits; float32 [n, classes] or [n,
    engines, classes]) shows an FP32 engine's own
    rounding at least rel/4 of the result, ptq no further from the float64
    logits than ratio x the worst of onnxruntime and torch's FP32 engines
    (on the CPU; on the GPU too, cuDNN with TF32 off, where the reference
    ran there). On such an image (a random network's last layer summing
    +-100 to 0.3) two FP32 engines' roundings, each within the bound, add
    up past it. The reference runs only on the images that miss. more, a
    callable like exact returning [n, engines, classes] float32 logits of
    further FP32 engines for those images (run_model: onnxruntime with only
    its basic graph optimizations, the same library taking other kernels:
    on efficientnet_v2_l's worst image it is 2.2x as far from float64 as
    with all of them), widens the yardstick the same way.
    Returns (ok, rel_max, n_ill: images judged against float64, worst:
    the largest ||ptq - f64|| / max(||ort - f64||, ||torch32 - f64|| over
    the engines) among them, or None)."""
    d = np.linalg.norm(ours - ort, axis=1) / np.maximum(np.linalg.norm(ort, axis=1), 1e-30)
    over = np.flatnonzero(d > rel)
    if not len(over) or exact is None:
        return bool(not len(over)), float(d.max()), 0, None
    t, t32 = (np.asarray(a, np.float64) for a in exact(over))
    t32 = t32[:, None, :] if t32.ndim == 2 else t32  # [n, engines, classes]
    if more is not None:
        t32 = np.concatenate([t32, np.asarray(more(over), np.float64)], axis=1)
    e_fp32 = np.maximum(np.linalg.norm(ort[over] - t, axis=1),
                        np.linalg.norm(t32 - t[:, None, :], axis=2).max(axis=1))
    e_ours = np.linalg.norm(ours[over] - t, axis=1)
    ill = e_fp32 >= rel / 4 * np.linalg.norm(t, axis=1)
    worst = float((e_ours[ill] / e_fp32[ill]).max()) if ill.any() else None
    ok = ill.all() and (worst is None or worst <= ratio)
    return bool(ok), float(d.max()), int(ill.sum()), worst


def agreement(ours, ort, rel=1e-4):
    """ptq's FP32 argmax against onnxruntime's with near-ties set aside:
    (agree over the images that are not ties, or None where every image is
    one; ties: how many were set aside). An image is a tie where
    onnxruntime's top-2 margin is below rel x ||ort||, the same per-image
    bound as logits_bound's, and ptq's argmax is one of the classes within
    that margin of onnxruntime's top; a tie image where ptq picks any other
    class stays in, as a disagreement. Why: for ptq's argmax b to differ
    from onnxruntime's a, ort[a] - ort[b] <= |d[a]| + |d[b]| <= sqrt(2) x
    ||d|| (d = ptq - ort), so logits the bound accepts can flip an image
    whose margin is below sqrt(2) x rel x ||ort||: FP32 rounding decides
    such an image, and no FP32 engine can (resnet50 at 224x224, 256 random
    images: the smallest margin 2.4e-5, 5.1e-7 of ||ort||; float64's margin
    1.5e-5, with onnxruntime, ptq and torch FP32 each 5e-4 to 7e-4 from
    float64). The threshold is rel, not sqrt(2) x rel: a flip on an image
    whose margin lies between the two still counts. Every tie image is set
    aside, the agreeing ones too, so which images count does not depend on
    ptq's answer."""
    n = np.maximum(np.linalg.norm(ort, axis=1), 1e-30)
    rows = np.arange(len(ort))
    top, pick = ort.argmax(1), ours.argmax(1)
    second = np.partition(ort, -2, axis=1)[:, -2] if ort.shape[1] > 1 else ort[:, 0] - np.inf
    bound = rel * n
    tie = (ort[rows, top] - second < bound) & (ort[rows, top] - ort[rows, pick] < bound)
    keep = ~tie
    agree = float(np.mean(pick[keep] == top[keep])) if keep.any() else None
    return agree, int(tie.sum())


def run_model(ptq_bin, model, images, work, calib_samples=64, batch=16, threads=None, device=None, exact=None,
              qdq_images=None, ptq_args=()):
    """The whole pipeline on one model; returns a dict of what was measured:
    ok (every step ran and FP32 met the bounds: logits_bound, with exact
    its callable for x = model_input(images), or None, and agree >= 0.999),
    failed_step, error (for "bounds": which bound),
    rel_max (per image ||ptq - ort|| / ||ort||), agree (ptq's FP32 argmax
    against onnxruntime's over the images that are not ties: agreement()),
    ties (the images it set aside), agree_all (over every image), qdq_agree
    (onnxruntime on the Q/DQ model against ptq validate's quantized argmax,
    on the first qdq_images images or all) and qdq_rel_median (the median of the same relative error between those
    two), seconds per step (ref: the reference run of exact). validate's
    exit 12 (the quantized outputs collapsed, which ptq flags by design:
    random networks' logits can be tiny) is a completed step: the report
    and its logits are written, collapsed is set, and the pipeline goes on
    to the export; any other non-zero exit is a failure."""
    os.makedirs(work, exist_ok=True)
    J = lambda *p: os.path.join(work, *p)  # noqa: E731
    res = {"model": os.path.basename(model), "images": len(images), "ok": False, "failed_step": None,
           "error": "", "seconds": {}}
    x = model_input(images)
    t0 = time.time()
    ref = ort_run(model, x)
    res["seconds"]["ort"] = time.time() - t0
    write_h5(J("data.h5"), images, ref.argmax(1))  # labels: onnxruntime's FP32 predictions
    common = ["--preprocess", PREPROCESS, "--batch", str(batch)] + (["--threads", str(threads)] if threads else [])
    common += ["--device", device] if device else []
    common += list(ptq_args)  # more arguments of eval, calibrate and validate (e.g. --math fp64)
    steps = [
        ("eval", ["eval", "--model", model, "--data", J("data.h5"), "--logits", J("fp32.npy"), "--json", *common]),
        ("calibrate", ["calibrate", "--model", model, "--data", J("data.h5"), "--samples", str(calib_samples),
                       "--out", J("calib.h5"), *common]),
        ("plan", ["plan", J("calib.h5"), "--model", model, "--out", J("plan.json")]),
        ("validate", ["validate", "--model", model, "--plan", J("plan.json"), "--data", J("data.h5"), "--report",
                      J("report"), "--logits", J("quant.npy"), *common]),
        ("export", ["export", "--format", "qdq", "--plan", J("plan.json"), "--model", model, "--out",
                    J("qdq.onnx")]),
    ]
    for name, args in steps:
        rc, out, err, secs = run_ptq(ptq_bin, *args)
        res["seconds"][name] = secs
        if name == "validate" and rc == 12:  # collapse flagged: done, with its flag (README: exit codes)
            rep = J("report", "validate.json")
            flagged = os.path.exists(rep) and json.load(open(rep)).get("collapsed") is True
            if flagged and os.path.exists(J("quant.npy")):
                res["collapsed"], rc = True, 0
                why = json.load(open(rep))
                res["collapse"] = why.get("collapse", [])  # which of validate's collapse checks fired
                res["sqnr_db"] = (why.get("logits") or {}).get("sqnr_db")
        if rc != 0:
            res["failed_step"], res["error"] = name, (err.strip().splitlines() or [f"exit {rc}"])[-1][:400]
            return res
        if name == "eval":
            ours = np.load(J("fp32.npy"))
            t0 = time.time()
            res["logits_ok"], res["rel_max"], res["n_ill"], res["ill_ratio"] = logits_bound(
                ours, ref, exact, more=lambda idx: ort_basic(model, x[idx]))
            if exact is not None and res["rel_max"] > 1e-4:  # the reference ran
                res["seconds"]["ref"] = time.time() - t0
            res["agree"], res["ties"] = agreement(ours, ref)
            res["agree_all"] = float(np.mean(ours.argmax(1) == ref.argmax(1)))
            res["top1_json"] = json.loads(out)["top1"]
    quant = np.load(J("quant.npy"))
    rep = json.load(open(J("report", "validate.json")))
    res["top1_quant"] = rep.get("top1_quant")
    n_q = len(x) if qdq_images is None else min(qdq_images, len(x))
    res["qdq_images"] = n_q
    try:
        t0 = time.time()
        q = ort_run(J("qdq.onnx"), x[:n_q])
        res["seconds"]["ort_qdq"] = time.time() - t0
    except Exception as e:  # noqa: BLE001 - onnxruntime's own error, recorded
        res["failed_step"], res["error"] = "ort_qdq", str(e).splitlines()[0][:400]
        return res
    res["qdq_agree"] = float(np.mean(q.argmax(1) == quant[:n_q].argmax(1)))
    rel_q = np.linalg.norm(q - quant[:n_q], axis=1) / np.maximum(np.linalg.norm(quant[:n_q], axis=1), 1e-30)
    res["qdq_rel_median"] = float(np.median(rel_q))
    res["qdq_finite"] = bool(np.isfinite(q).all() and q.shape == ref[:n_q].shape)
    why = ([] if res["logits_ok"] else [f"logits past the bound (rel max {res['rel_max']:.2e})"]) + (
        ["every image a tie"] if res["agree"] is None else
        [f"FP32 agree {res['agree']:.4f} < 0.999"] if res["agree"] < 0.999 else []) + (
        [] if res["qdq_finite"] else ["the Q/DQ model's logits not finite or of the wrong shape"])
    res["ok"] = not why
    if why:
        res["failed_step"], res["error"] = "bounds", "; ".join(why)
    return res
