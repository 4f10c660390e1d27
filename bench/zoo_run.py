#!/usr/bin/env python3
"""The recorded torchvision zoo run (issue 18 item 1): every classification
architecture of scripts/export_zoo.py exported with random weights at opset
13 and 17, then scripts/zoo_pipeline.py on each (ptq eval against
onnxruntime's FP32 logits, calibrate, plan, validate, export --format qdq,
the Q/DQ model in onnxruntime; the pass rule, its ties and validate's exit 12
are zoo_pipeline.run_model's). Writes the Markdown record after every model,
so a run cut short still says what it measured and what it did not reach.

    bench/zoo_run.py --ptq build/ptq --out bench/results/2026-12-01-zoo-vm.md [--work DIR] [--only m1,m2]
    bench/zoo_run.py --ptq bundle/bin/ptq --device cuda --images 256 --qdq-images 32 --jobs 4 \\
        --deadline 540 --resume --out OUT.md      # the GPU machine: bench/zoo_gpu.sh
    bench/zoo_run.py --images 256 --jobs 4 --estimate   # the predicted seconds per model, nothing run

Without --images, the images and input size per model follow its cost on a
2-core machine (plan_for below); with --images N every model gets N images
at --size. The cheapest member of each family runs first, then the rest by
cost. --jobs N runs N models side by side (spawned processes), each with
the CPU count / N threads (PTQ_ZOO_ORT_THREADS overrides: onnxruntime's
intra-op threads, torch's, ptq's --threads); the models of ALONE run with
nothing beside them, every CPU, one opset at a time. --deadline S starts
no model whose predicted time (predict(), scaled by how the finished ones
compared with theirs) would end past S seconds from the start. --resume
keeps the rows of --out (its state block at the end) and runs only the
models and opsets it lacks, appending; the header lists every call."""
import argparse
import concurrent.futures as cf
import datetime
import json
import multiprocessing
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import export_zoo  # noqa: E402
import zoo_pipeline  # noqa: E402

# approximate GFLOPs at 224x224 (torchvision's model documentation) to order the run and size the image set
GFLOPS = {
    "resnet18": 1.8, "resnet34": 3.7, "resnet50": 4.1, "resnet101": 7.8, "resnet152": 11.5,
    "resnext50_32x4d": 4.2, "resnext101_32x8d": 16.4, "resnext101_64x4d": 15.5,
    "wide_resnet50_2": 11.4, "wide_resnet101_2": 22.8,
    "mobilenet_v2": 0.3, "mobilenet_v3_small": 0.06, "mobilenet_v3_large": 0.22,
    "efficientnet_b0": 0.39, "efficientnet_b1": 0.59, "efficientnet_b2": 0.68, "efficientnet_b3": 1.0,
    "efficientnet_b4": 1.5, "efficientnet_b5": 2.4, "efficientnet_b6": 3.4, "efficientnet_b7": 5.3,
    "efficientnet_v2_s": 2.9, "efficientnet_v2_m": 5.4, "efficientnet_v2_l": 12.4,
    "regnet_y_400mf": 0.4, "regnet_y_800mf": 0.83, "regnet_y_1_6gf": 1.6, "regnet_y_3_2gf": 3.2,
    "regnet_y_8gf": 8.5, "regnet_y_16gf": 16.0, "regnet_y_32gf": 32.3, "regnet_y_128gf": 127.5,
    "regnet_x_400mf": 0.41, "regnet_x_800mf": 0.8, "regnet_x_1_6gf": 1.6, "regnet_x_3_2gf": 3.2,
    "regnet_x_8gf": 8.0, "regnet_x_16gf": 16.0, "regnet_x_32gf": 31.7,
    "squeezenet1_0": 0.82, "squeezenet1_1": 0.35,
    "shufflenet_v2_x0_5": 0.04, "shufflenet_v2_x1_0": 0.14, "shufflenet_v2_x1_5": 0.3, "shufflenet_v2_x2_0": 0.58,
    "densenet121": 2.8, "densenet161": 7.7, "densenet169": 3.4, "densenet201": 4.3,
    "mnasnet0_5": 0.1, "mnasnet0_75": 0.21, "mnasnet1_0": 0.31, "mnasnet1_3": 0.53,
    "googlenet": 1.5, "inception_v3": 5.7, "alexnet": 0.71,
    "vgg11": 7.6, "vgg11_bn": 7.6, "vgg13": 11.3, "vgg13_bn": 11.3, "vgg16": 15.5, "vgg16_bn": 15.5,
    "vgg19": 19.6, "vgg19_bn": 19.6,
    "convnext_tiny": 4.5, "convnext_small": 8.7, "convnext_base": 15.4, "convnext_large": 34.4,
}
# the largest models run with nothing beside them, every CPU, one opset at a time: at a quarter of the
# machine onnxruntime's FP32 pass over a few hundred images would outlast a 10-minute call
OPSETS = (13, 17)
# the prior for predict(), corrected by the run's own timings: onnxruntime 1.32's FP32 throughput per
# thread (GFLOP/s as GFLOPS counts them; one thread of the 2-core VM, 32 images of 224x224: resnet50 38,
# regnet_y_3_2gf 32, convnext_tiny 26, efficientnet_b0 13) and the efficiency of threads side by side (an
# assumption: 16 CPUs may be 8 cores); the seconds per model and opset outside onnxruntime (ptq's five
# steps, two onnxruntime sessions, torch's export) and per model (build, BatchNorm passes): 22 s per
# model on the H200's host, serial, in the 2026-12-01 rest record
THREAD_GFLOPS = {"efficientnet": 13.0, "mobilenet": 13.0, "mnasnet": 13.0, "shufflenet": 13.0, "regnet": 32.0,
                 "convnext": 26.0}
THREAD_GFLOPS_OTHER, THREAD_EFFICIENCY, STEP_S, MODEL_S = 38.0, 0.6, 8.0, 6.0
ALONE = {m for m, g in GFLOPS.items() if g >= 30}  # regnet_y_32gf, regnet_x_32gf, convnext_large, regnet_y_128gf
# seconds more per opset (a guess): 2.6 GB through torch's exporter, onnx's external data, onnxruntime and
# ptq's three loads
EXTRA_S = {"regnet_y_128gf": 120.0}
STATE = "<!-- zoo_run state: bench/zoo_run.py --resume reads the lines below"


def mem_gib():
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return 0.0


def skip_reason(name, gib):
    """Why a model is not run on a machine of gib GiB of memory, or None."""
    if name == "regnet_y_128gf" and gib < 32:
        # not measured here: torch's exporter, onnxruntime and ptq each hold the 2.6 GB of weights, the
        # exporter several copies, beside the other models of --jobs
        return f"644 M parameters (2.6 GB of weights): not run with less than 32 GiB of memory ({gib:.0f} here)"
    return None


def plan_for(name, size, images=None):
    """(images, input size) for a model: N at size with --images N; else
    the 2 shared cores of the recording machine cannot give every model
    224x224 and a few hundred images."""
    if images:
        return images, size
    g = GFLOPS[name]
    if g <= 2:
        return 64, size
    # VGG's AdaptiveAvgPool2d(7) exports only when 7 divides its input (224 gives 7x7)
    small = size if name.startswith("vgg") else (size * 5 // 7 if g <= 8 else size // 2)
    return (32 if g <= 8 else 8), small


def order():
    firsts = [min(ms, key=lambda m: GFLOPS[m]) for ms in export_zoo.FAMILIES.values()]
    rest = sorted((m for m in export_zoo.ALL if m not in firsts), key=lambda m: GFLOPS[m])
    return firsts + rest


def predict(name, n, size, n_qdq, n_opsets, threads, torch_cpu):
    """Seconds for one model: onnxruntime's FP32 and Q/DQ passes (and
    export_zoo.balance's two passes over 32 images where torch_cpu) at
    THREAD_GFLOPS, plus the fixed costs."""
    g = GFLOPS[name] * (size / 224) ** 2
    work = g * (n_opsets * (n + n_qdq) + (64 if torch_cpu else 0))
    rate = THREAD_GFLOPS.get(export_zoo.family(name), THREAD_GFLOPS_OTHER) * threads * THREAD_EFFICIENCY
    return MODEL_S + (STEP_S + EXTRA_S.get(name, 0.0)) * n_opsets + work / rate


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {mem_gib():.0f} GiB, {platform.system()} "
            f"{platform.release()}")


def software():
    """(the versions the run uses, the torch device the float64 reference can use)."""
    import numpy
    import onnxruntime
    import torch
    import torchvision
    gpu = torch.cuda.is_available()
    v = (f"python {platform.python_version()}, torch {torch.__version__}, torchvision {torchvision.__version__}, "
         f"onnxruntime {onnxruntime.__version__}, numpy {numpy.__version__}")
    if gpu:
        v += f", torch CUDA {torch.version.cuda} on {torch.cuda.get_device_name(0)}"
    return v, "cuda" if gpu else "cpu"


def settings_text(c):
    st = c["settings"]
    if st["images"]:
        t = (f"{st['images']} images of {st['size']}x{st['size']} for every model, calibration on the first "
             f"{min(st['calib'], st['images'])}, the Q/DQ model in onnxruntime on the first "
             f"{min(st['qdq'] or st['images'], st['images'])}")
    else:
        S = st["size"]
        t = (f"images for CPU time on 2 shared cores: models up to 2 GFLOPs (at 224x224) get 64 images of {S}x{S}, "
             f"up to 8 GFLOPs 32 images of {S * 5 // 7}x{S * 5 // 7}, above 8 images of {S // 2}x{S // 2} (VGG "
             f"always at {S}: its adaptive pooling exports only at 224); calibration on the first {st['calib']} "
             f"(or all); the Q/DQ model in onnxruntime on " + (f"the first {st['qdq']}" if st["qdq"] else "all"))
    t += (f"; {st['jobs']} model(s) side by side, {st['threads']} CPU threads each (onnxruntime intra-op, torch"
          + (", ptq --threads" if st["ptq_threads"] else "") + ")")
    if st["jobs"] > 1:
        t += f", {', '.join(sorted(ALONE))} alone with {st['cpus']}"
    t += f"; ptq --device {st['device'] or '(ptq default)'}" + (f" {st['ptq_args']}" if st.get("ptq_args") else "")
    t += (f"; torch on {st['torch_device']} for the BatchNorm passes "
          "and the float64 reference")
    if st["deadline"]:
        t += f"; --deadline {st['deadline']:g} s"
    return t


def write(path, calls, rows, pending):
    fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
    rank = {m: i for i, m in enumerate(order())}
    rows = sorted(rows, key=lambda r: (rank.get(r["name"], 1 << 30), r["opset"]))
    lines = [f"# torchvision zoo through ptq, {calls[0]['date']}", ""]
    for k, c in enumerate(calls):
        lines.append(f"- call {k + 1}: `{c['command']}`, {c['started']} to {c['updated']} UTC; {c['machine']}; "
                     f"{c['ptq']}; {c['software']}; {settings_text(c)}")
    ref_devs = sorted({r["ref_device"] for r in rows if r.get("ref_device")} or {"cpu"})
    lines += [
        "- models: the torchvision builders of the call's torchvision (above), random weights (seed 0), BatchNorm "
        "statistics and the last layer set on 32 other random images at the model's input size "
        "(scripts/export_zoo.py), exported by the call's torch (TorchScript exporter) with a dynamic batch; a "
        "model past protobuf's 2 GB (regnet_y_128gf) with ONNX external data (its weights in one .onnx.data file "
        "beside it)",
        "- images: random RGB images (scripts/zoo_pipeline.py make_images, seed 7), labels = onnxruntime's FP32 "
        "predictions; how many, at what size, per call above and per row below",
        "- pass: ptq eval's logits within 1e-4 relative of onnxruntime's (per image, ||ptq - ort|| / "
        "||ort||), FP32 predictions agreeing on >= 99.9% of the images that are not ties, and every step "
        "(calibrate, plan, validate, export --format qdq) succeeding with a Q/DQ model onnxruntime runs to "
        "finite logits of the right shape (validate's exit 12, the quantized outputs flagged as collapsed, is a "
        "step done: the note says so); "
        "where an image misses the 1e-4 bound and an FP32 engine's own error against the float64 result "
        f"(torch float64 on {' or '.join(ref_devs)}, torch FP32 on the CPU and, where the float64 ran on a GPU, "
        "torch FP32 there too (cuDNN and cuBLAS, TF32 off: the libraries ptq's GPU path runs on; rows judged "
        "before 2026-12-02 11:00 UTC had the CPU one only, a yardstick no larger), the weights of the exported "
        "network; computed only for the images that miss) is at least 2.5e-5 (the image's logits cancel, so FP32 "
        "rounding alone is at the bound's scale), ptq must be no further from float64 than 2x the worst of "
        "onnxruntime's and torch FP32's errors (ill: how many images were judged so; ratio: the worst "
        "||ptq - f64|| / max(||ort - f64||, ||torch32 - f64|| of each engine))",
        "- ties: the images set aside from FP32 agree (scripts/zoo_pipeline.py agreement): onnxruntime's top-2 "
        "margin below 1e-4 x ||ort||, the image's own logits bound, with ptq's argmax one of the classes within "
        "that margin of onnxruntime's top (a tie where ptq picks another class counts as a disagreement). "
        "Logits within the bound can move a margin by up to sqrt(2) x 1e-4 x ||ort||, so FP32 rounding, not the "
        "engine, decides such an image; every tie image is set aside, agreeing or not. FP32 agree: over the "
        "rest",
        "- qdq: onnxruntime runs the Q/DQ model on the first `qdq n` images only: that it runs to finite logits "
        "of the right shape is part of the pass, its agreement is not. qdq agree: onnxruntime's argmax on the "
        "Q/DQ model against ptq validate's quantized argmax (random networks have small logit margins); qdq rel: "
        "the median relative difference of those logits",
        "- seconds per row: ort s, onnxruntime's FP32 pass over the row's images; ptq s, ptq's five steps; ref s, "
        "the float64 and FP32 torch reference (run once per model, so mostly on the first opset)", "",
        "| model | opset | size | images | result | rel max | ill | ratio | FP32 agree | ties | qdq n | "
        "qdq agree | qdq rel | ort s | ptq s | ref s | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        note = r.get("error") or ""
        if r.get("failed_step"):
            note = f"failed at {r['failed_step']}: {note}"
        if r.get("collapsed"):
            why = ", ".join(r.get("collapse") or [])
            sq = r.get("sqnr_db")
            why += (", " if why else "") + f"SQNR {sq:.2f} dB" if isinstance(sq, (int, float)) else ""
            note = (note + "; " if note else "") + "validate flagged a collapse (exit 12" + (f": {why})" if why else ")")
        if r.get("ref_note"):
            note = (note + "; " if note else "") + r["ref_note"]
        sec = r.get("seconds", {})
        ptq_s = sum(sec[k] for k in ("eval", "calibrate", "plan", "validate", "export") if k in sec) if sec else None
        lines.append(f"| {r['name']} | {r['opset']} | {r['size']} | {r['images']} | {'pass' if r['ok'] else 'FAIL'} | "
                     f"{fmt(r.get('rel_max'), '.2e')} | {r.get('n_ill', '-')} | {fmt(r.get('ill_ratio'), '.2f')} | "
                     f"{fmt(r.get('agree'), '.4f')} | {r.get('ties', '-')} | {r.get('qdq_images', '-')} | "
                     f"{fmt(r.get('qdq_agree'), '.4f')} | {fmt(r.get('qdq_rel_median'), '.2e')} | "
                     f"{fmt(sec.get('ort'), '.1f')} | {fmt(ptq_s, '.1f')} | {fmt(sec.get('ref'), '.1f')} | "
                     f"{note.replace('|', '/')} |")
    n_pass = {o: sum(1 for r in rows if r["ok"] and r["opset"] == o) for o in OPSETS}
    n_run = {o: sum(1 for r in rows if r["opset"] == o) for o in OPSETS}
    lines += ["", f"Passed: opset 13 {n_pass[13]} of {n_run[13]} run, opset 17 {n_pass[17]} of {n_run[17]} run."]
    if pending:
        lines += ["", "Not run: " + ", ".join(f"{m} ({why})" for m, why in pending) + "."]
    safe = lambda o: json.dumps(o).replace("-->", "--\\u003e")  # noqa: E731 - JSON still, never ending the comment
    lines += ["", STATE, safe({"calls": calls})] + [safe(r) for r in rows] + ["-->"]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def read_state(path):
    """(calls, rows) of a record this script wrote, from its state block."""
    text = open(path).read()
    if STATE not in text:
        raise SystemExit(f"zoo_run: {path} has no state block (written by an older zoo_run?): cannot --resume it")
    body = text.split(STATE, 1)[1].split("\n-->", 1)[0].strip().splitlines()
    calls = json.loads(body[0])["calls"]
    return calls, [json.loads(line) for line in body[1:] if line.strip()]


class Reference:
    """exact() for zoo_pipeline.logits_bound: torch's float64 and float32
    logits (export_zoo.reference_logits: float32 of each FP32 engine) of
    the exported network for the images asked for, each image
    computed once per model (both opsets share it); float64 on device,
    falling back to the CPU where that fails."""

    def __init__(self, name, size, model, x, device):
        self.name, self.size, self.model, self.x, self.device = name, size, model, x, device
        self.cache, self.note = {}, ""

    def __call__(self, idx):
        import numpy as np
        new = [int(i) for i in idx if int(i) not in self.cache]
        if new:
            try:
                f64, f32 = export_zoo.reference_logits(self.name, self.size, self.x[new], model=self.model,
                                                       device=self.device)
            except Exception as e:  # noqa: BLE001 - CUDA out of memory, an op without a float64 CUDA kernel, ...
                if self.device == "cpu":
                    raise
                self.note = f"float64 on the CPU: {self.device} failed ({str(e).splitlines()[0][:120]})"
                self.device = "cpu"
                f64, f32 = export_zoo.reference_logits(self.name, self.size, self.x[new], model=self.model)
            if self.device != "cpu":
                import torch
                torch.cuda.empty_cache()  # the float64 copy, for the ptq processes beside this one
            for k, i in enumerate(new):
                self.cache[i] = (f64[k], f32[k])
        # float32 [n, engines, classes]: an image computed after a fall back to the CPU has one engine fewer;
        # repeating its first keeps the worst of its own engines, which is what logits_bound takes
        f32 = [self.cache[int(i)][1] for i in idx]
        k = max(len(a) for a in f32)
        f32 = [np.concatenate([a, np.repeat(a[:1], k - len(a), axis=0)]) for a in f32]
        return np.stack([self.cache[int(i)][0] for i in idx]), np.stack(f32)


def run_one(t):
    """One model (task t: see main) in this process: export, then
    zoo_pipeline.run_model per opset of the task; returns its rows."""
    import torch
    t0 = time.time()
    os.environ["PTQ_ZOO_ORT_THREADS"] = str(t["threads"])
    torch.set_num_threads(t["threads"])
    m, n, size = t["name"], t["images"], t["size"]
    images = zoo_pipeline.make_images(n, size, seed=7)
    d = os.path.join(t["work"], m)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    base = {"name": m, "images": n, "size": size, "call": t["call"], "threads": t["threads"]}
    try:
        try:
            model = export_zoo.prepare(m, size, device=t["torch_device"])
            paths = export_zoo.export(m, d, t["opsets"], size, model=model)
        except Exception as e:  # noqa: BLE001 - torch's export error, recorded
            return [dict(base, opset=o, ok=False, failed_step="torch export", error=str(e).splitlines()[0][:300],
                         model_s=time.time() - t0) for o in t["opsets"]]
        export_s = time.time() - t0
        ref = Reference(m, size, model, zoo_pipeline.model_input(images), t["torch_device"])
        rows = []
        for o, p in zip(t["opsets"], paths):
            r = zoo_pipeline.run_model(t["ptq"], p, images, os.path.join(d, f"op{o}"), calib_samples=t["calib"],
                                       device=t["device"], exact=ref, qdq_images=t["qdq"],
                                       threads=t["threads"] if t["ptq_threads"] else None,
                                       ptq_args=t["ptq_args"].split())
            r.update(base, opset=o, export_s=export_s, ref_device=ref.device, ref_note=ref.note)
            rows.append(r)
            print(json.dumps(r), flush=True)
        for r in rows:
            r["model_s"] = time.time() - t0
        return rows
    finally:
        shutil.rmtree(d, ignore_errors=True)  # models, image sets, archives: gigabytes over the zoo


def main():
    t_start = time.time()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "2026-12-01-zoo-vm.md"))
    ap.add_argument("--work", default="/tmp/ptq-zoo-run")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--images", type=int, default=0, help="images per model, all at --size (default: plan_for's)")
    ap.add_argument("--calib", type=int, default=32, help="ptq calibrate on the first N images")
    ap.add_argument("--qdq-images", type=int, default=None,
                    help="the Q/DQ model in onnxruntime on the first N images (default: all; 32 with --images)")
    ap.add_argument("--jobs", type=int, default=1, help="models side by side")
    ap.add_argument("--cpus", type=int, default=0, help="CPUs to share among --jobs (default: all)")
    ap.add_argument("--deadline", type=float, default=0, help="seconds from the start: start no model that "
                    "would likely end after it (0: none)")
    ap.add_argument("--resume", action="store_true", help="keep --out's rows, run only what it lacks")
    ap.add_argument("--torch-device", default="auto", help="torch's device for the BatchNorm passes of "
                    "export_zoo.prepare and the float64 reference (auto: cuda where torch has it)")
    ap.add_argument("--device", default=None, help="ptq's --device for eval, calibrate and validate (default: ptq's)")
    ap.add_argument("--ptq-args", default="", help="more arguments of ptq eval, calibrate and validate "
                    "(e.g. '--math fp64')")
    ap.add_argument("--estimate", action="store_true", help="print predict()'s seconds per model and stop")
    ap.add_argument("--memory-gib", type=float, default=0, help=argparse.SUPPRESS)  # --estimate for another machine
    a = ap.parse_args()
    if a.qdq_images is None and a.images:
        a.qdq_images = 32
    only = [m for m in a.only.split(",") if m]
    unknown = [m for m in only if m not in GFLOPS]
    if unknown:
        ap.error(f"unknown models: {' '.join(unknown)}")
    cpus = a.cpus or os.cpu_count() or 1
    threads = int(os.environ.get("PTQ_ZOO_ORT_THREADS") or 0) or max(1, cpus // a.jobs)
    sw, gpu = software()
    torch_device = gpu if a.torch_device == "auto" else a.torch_device
    calls, rows = read_state(a.out) if a.resume and os.path.exists(a.out) else ([], [])
    have = {(r["name"], r["opset"]) for r in rows}
    todo, pending = [], []
    for m in (m for m in order() if not only or m in only):
        opsets = [o for o in OPSETS if (m, o) not in have]
        why = skip_reason(m, a.memory_gib or mem_gib())
        if opsets and why:
            pending.append((m, why))
            continue
        n, size = plan_for(m, a.size, a.images)
        th = cpus if m in ALONE and a.jobs > 1 else threads
        for ops in ([[o] for o in opsets] if m in ALONE else [opsets] if opsets else []):
            todo.append({"name": m, "opsets": ops, "images": n, "size": size, "threads": th,
                         "ptq_threads": th < cpus, "calib": a.calib, "qdq": a.qdq_images, "ptq": a.ptq,
                         "device": a.device, "torch_device": torch_device, "work": a.work, "call": len(calls) + 1,
                         "ptq_args": a.ptq_args,
                         "predict_s": predict(m, n, size, min(a.qdq_images or n, n), len(ops), th,
                                              torch_device == "cpu")})
    if a.estimate:
        for t in todo:
            print(f"{t['name']:22s} {','.join(map(str, t['opsets'])):5s} {t['images']:4d} x {t['size']} "
                  f"{t['threads']:3d} threads {t['predict_s']:7.1f} s")
        alone = sum(t["predict_s"] for t in todo if t["name"] in ALONE or a.jobs == 1)
        side = sum(t["predict_s"] for t in todo if t["name"] not in ALONE and a.jobs > 1) / a.jobs
        print(f"{len(todo)} tasks, about {alone + side:.0f} s ({(alone + side) / 60:.1f} min) at {a.jobs} side by "
              f"side ({side:.0f} s side by side, {alone:.0f} s alone)")
        return 0
    version = subprocess.run([a.ptq, "version"], capture_output=True, text=True).stdout.strip().splitlines()[0]
    version += f" (git {subprocess.run(['git', '-C', HERE, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()})"
    now = lambda: f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}"  # noqa: E731
    call = {"date": f"{datetime.date.today()}", "machine": machine(), "ptq": version, "software": sw,
            "command": shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]), "started": now(), "updated": now(),
            "settings": {"images": a.images, "size": a.size, "calib": a.calib, "qdq": a.qdq_images, "jobs": a.jobs,
                         "threads": threads, "ptq_threads": threads < cpus, "cpus": cpus, "device": a.device,
                         "torch_device": torch_device, "deadline": a.deadline, "ptq_args": a.ptq_args}}
    calls.append(call)
    late = list(todo)  # not started yet
    stopped = ["not reached before the run stopped"]

    def record(new_rows=()):
        rows.extend(new_rows)
        have.update((r["name"], r["opset"]) for r in new_rows)
        left = {}
        for t in todo:
            for o in t["opsets"]:
                if (t["name"], o) not in have:
                    left.setdefault(t["name"], []).append(o)
        why = lambda m, ops: stopped[0] if len(ops) == len(OPSETS) else f"opset {ops[0]}: {stopped[0]}"  # noqa: E731
        call["updated"] = now()
        write(a.out, calls, rows, pending + [(m, why(m, ops)) for m, ops in left.items()])

    record()
    spent, predicted = [0.0], [0.0]  # finished models' seconds and their predictions: predict()'s correction

    def fits(t):
        if not a.deadline:
            return True
        scale = min(max(spent[0] / predicted[0], 0.5), 5.0) if predicted[0] else 1.0
        return time.time() - t_start + scale * t["predict_s"] <= a.deadline

    def finished(t, got):
        if got and "model_s" in got[0]:
            spent[0] += got[0]["model_s"]
            predicted[0] += t["predict_s"]
        record(got)

    def failed(t, e):
        return [{"name": t["name"], "opset": o, "images": t["images"], "size": t["size"], "ok": False,
                 "failed_step": "worker", "error": f"{type(e).__name__}: {e}"[:300], "call": len(calls)}
                for o in t["opsets"]]

    if a.jobs == 1:
        while late and fits(late[0]):
            t = late.pop(0)
            try:
                got = run_one(t)
            except Exception as e:  # noqa: BLE001 - recorded; the next model runs
                got = failed(t, e)
            finished(t, got)
    else:
        pool = lambda: cf.ProcessPoolExecutor(a.jobs, mp_context=multiprocessing.get_context("spawn"))  # noqa: E731
        ex, running = pool(), {}
        while late or running:
            while late and len(running) < a.jobs and not any(t["name"] in ALONE for t, _ in running.values()):
                t = late[0]
                if t["name"] in ALONE and running or not fits(t):
                    break
                running[ex.submit(run_one, t)] = (late.pop(0), ex)
            if not running:
                break  # the next one would not fit before the deadline
            done_now, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for f in done_now:
                t, by = running.pop(f)
                try:
                    got = f.result()
                except Exception as e:  # noqa: BLE001 - a worker's crash (memory?), recorded
                    got = failed(t, e)
                    if isinstance(e, cf.process.BrokenProcessPool) and by is ex:  # every model it ran fails
                        ex.shutdown(wait=False)
                        ex = pool()
                finished(t, got)
        ex.shutdown()
    if late:
        stopped[0] = f"not started: it would likely have ended after --deadline {a.deadline:g} s"
    record()
    return 0


if __name__ == "__main__":
    sys.exit(main())
