#!/usr/bin/env python3
"""The recorded torchvision zoo run (issue 18 item 1): every classification
architecture of scripts/export_zoo.py exported with random weights at 224x224
at opset 13 and 17, then scripts/zoo_pipeline.py on each (ptq eval against
onnxruntime's FP32 logits, calibrate, plan, validate, export --format qdq,
the Q/DQ model in onnxruntime). Writes the Markdown record after every model,
so a run cut short still says what it measured and what it did not reach.

    bench/zoo_run.py --ptq build/ptq --out bench/results/2026-12-01-zoo-vm.md [--work DIR] [--only m1,m2]

Images and input size per model follow its cost on a 2-core machine
(plan_for below); the cheapest member of each family runs first, then the
rest by cost."""
import argparse
import datetime
import json
import os
import platform
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
# regnet_y_128gf: 644 M parameters, a 2.6 GB ONNX file, past protobuf's 2 GB without external data
SKIP = {"regnet_y_128gf": "644 M parameters: the ONNX file (2.6 GB) needs external data, past protobuf's 2 GB"}


def plan_for(name, size):
    """(images, input size) for a model: the 2 shared cores of the recording
    machine cannot give every model 224x224 and a few hundred images."""
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


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"


def write(path, meta, rows, pending):
    fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
    lines = [f"# torchvision zoo through ptq, {meta['date']}", "",
             f"- machine: {meta['machine']}", f"- ptq: {meta['ptq']}", f"- command: `{meta['command']}`",
             f"- started {meta['started']}, last update {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
             "- models: torchvision 0.14.1 builders, random weights (seed 0), BatchNorm statistics and the "
             "last layer set on 32 other random images (scripts/export_zoo.py), exported by torch 1.13 with a "
             "dynamic batch",
             "- images: random RGB images (scripts/zoo_pipeline.py make_images), labels = onnxruntime's FP32 "
             f"predictions; for CPU time on 2 shared cores: models up to 2 GFLOPs (at 224x224) get 64 images of "
             f"{meta['size']}x{meta['size']}, up to 8 GFLOPs 32 images of {meta['size'] * 5 // 7}x"
             f"{meta['size'] * 5 // 7}, above 8 images of {meta['size'] // 2}x{meta['size'] // 2} (VGG always at "
             f"{meta['size']}: its adaptive pooling exports only at 224); calibration on the first 32 (or all)",
             "- pass: ptq eval's logits within 1e-4 relative of onnxruntime 1.32's (per image, ||ptq - ort|| / "
             "||ort||), FP32 predictions agreeing on >= 99.9%, and every step (calibrate, plan, validate, export "
             "--format qdq) succeeding with a Q/DQ model onnxruntime runs to finite logits of the right shape; "
             "where an image misses the 1e-4 bound and an FP32 engine's own error against the float64 result "
             "(torch on the CPU, same weights) is at least 2.5e-5 (the image's logits cancel, so FP32 rounding "
             "alone is at the bound's scale), ptq must be no further from float64 than 2x the worse of "
             "onnxruntime's and torch FP32's errors (ill: how many images were judged so; ratio: the worst "
             "||ptq - f64|| / max(||ort - f64||, ||torch32 - f64||))",
             "- qdq agree: onnxruntime's argmax on the Q/DQ model against ptq validate's quantized argmax "
             "(random networks have small logit margins; not a pass criterion); qdq rel: the median relative "
             "difference of those logits", "",
             "| model | opset | size | images | result | rel max | ill | ratio | FP32 agree | qdq agree | qdq rel | "
             "ptq eval s | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        note = r.get("error") or ""
        if r.get("failed_step"):
            note = f"failed at {r['failed_step']}: {note}"
        lines.append(f"| {r['name']} | {r['opset']} | {r['size']} | {r['images']} | {'pass' if r['ok'] else 'FAIL'} | "
                     f"{fmt(r.get('rel_max'), '.2e')} | {r.get('n_ill', '-')} | {fmt(r.get('ill_ratio'), '.2f')} | "
                     f"{fmt(r.get('agree'), '.4f')} | "
                     f"{fmt(r.get('qdq_agree'), '.4f')} | {fmt(r.get('qdq_rel_median'), '.2e')} | "
                     f"{fmt(r.get('seconds', {}).get('eval'), '.1f')} | {note.replace('|', '/')} |")
    n_pass = {o: sum(1 for r in rows if r["ok"] and r["opset"] == o) for o in (13, 17)}
    n_run = {o: sum(1 for r in rows if r["opset"] == o) for o in (13, 17)}
    lines += ["", f"Passed: opset 13 {n_pass[13]} of {n_run[13]} run, opset 17 {n_pass[17]} of {n_run[17]} run."]
    if pending:
        lines += ["", "Not run: " + ", ".join(f"{m} ({why})" for m, why in pending) + "."]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "2026-12-01-zoo-vm.md"))
    ap.add_argument("--work", default="/tmp/ptq-zoo-run")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--device", default=None, help="ptq's --device for eval, calibrate and validate (default: ptq's)")
    a = ap.parse_args()
    names = [m for m in order() if not a.only or m in a.only.split(",")]
    version = subprocess.run([a.ptq, "version"], capture_output=True, text=True).stdout.strip().splitlines()[0]
    version += f" (git {subprocess.run(['git', '-C', HERE, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()})"
    meta = {"date": f"{datetime.date.today()}", "machine": machine(), "ptq": version,
            "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
            "started": f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC", "size": a.size}
    rows, pending = [], [(m, SKIP.get(m, "not reached before the run stopped")) for m in names]
    write(a.out, meta, rows, pending)
    for m in names:
        if m in SKIP:
            continue
        n, size = plan_for(m, a.size)
        images = zoo_pipeline.make_images(n, size, seed=7)
        d = os.path.join(a.work, m)
        os.makedirs(d, exist_ok=True)
        t0 = time.time()
        try:
            paths = export_zoo.export(m, d, [13, 17], size)
        except Exception as e:  # noqa: BLE001 - torch's export error, recorded
            for o in (13, 17):
                rows.append({"name": m, "opset": o, "images": n, "size": size, "ok": False, "failed_step": "torch export",
                             "error": str(e).splitlines()[0][:300]})
            pending = [p for p in pending if p[0] != m]
            write(a.out, meta, rows, pending)
            continue
        export_s = time.time() - t0
        for o, p in zip((13, 17), paths):
            exact = lambda: export_zoo.reference_logits(m, size, zoo_pipeline.model_input(images))  # noqa: E731
            r = zoo_pipeline.run_model(a.ptq, p, images, os.path.join(d, f"op{o}"), calib_samples=32, device=a.device,
                                       exact=exact)
            r.update(name=m, opset=o, export_s=export_s, size=size)
            rows.append(r)
            print(json.dumps(r), flush=True)
            write(a.out, meta, rows, [q for q in pending if q[0] != m])
        shutil.rmtree(d, ignore_errors=True)  # models, image sets, archives: gigabytes over the zoo
        pending = [q for q in pending if q[0] != m]
        write(a.out, meta, rows, pending)
    return 0


if __name__ == "__main__":
    sys.exit(main())
