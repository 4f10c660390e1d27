#!/usr/bin/env python3
"""ptq calibrate with two or more ptq binaries on the same models and data, side by side: the best of --repeat
wall times each, whether the archives are byte-identical to the first binary's, and where they are not, how many
tensors' ranges differ (`ptq export --format json`, min-max, percentile 99.99 and entropy) and by how much.
Markdown on stdout.

  python3 bench/calibrate_times.py --data fm.h5 --model models/fmnist_vit.onnx \\
      --ptq before=/tmp/ptq-old/b/ptq --ptq now=build/ptq
"""
import argparse
import filecmp
import json
import os
import subprocess
import tempfile
import time


def ranges(ptq, archive, method, out):
    subprocess.run([ptq, "export", archive, "--method", method, "--format", "json", "--out", out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        doc = json.load(f)
    tensors = doc.get("tensors", doc)
    if isinstance(tensors, list):
        return {t["name"]: t.get("amax") for t in tensors}
    return {k: (v.get("amax") if isinstance(v, dict) else v) for k, v in tensors.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the calibration set (HDF5 or image folder)")
    ap.add_argument("--model", action="append", required=True, help="an ONNX model (repeatable)")
    ap.add_argument("--ptq", action="append", required=True, help="NAME=PATH of a ptq binary (two or more)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bins = [b.split("=", 1) for b in args.ptq]
    work = tempfile.mkdtemp(prefix="ptq-caltimes-")
    print("| model | " + " | ".join(f"{n} s" for n, _ in bins) + " | speed-up | archive |")
    print("|---|" + "---|" * (len(bins) + 2))
    notes = []
    for model in args.model:
        best, archives = {}, {}
        for r in range(args.repeat):
            for name, path in bins:  # in turn, each round
                out = os.path.join(work, f"{name}-{os.path.basename(model)}.h5")
                if os.path.exists(out):
                    os.remove(out)
                t0 = time.time()
                subprocess.run([path, "calibrate", "--model", model, "--data", args.data, "--out", out], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                dt = time.time() - t0
                best[name] = min(best.get(name, dt), dt)
                archives[name] = out
        first = bins[0][0]
        same = [filecmp.cmp(archives[first], archives[n], shallow=False) for n, _ in bins[1:]]
        verdict = "byte-identical" if all(same) else "differs"
        speed = best[first] / best[bins[-1][0]]
        print(f"| {os.path.basename(model)} | " + " | ".join(f"{best[n]:.2f}" for n, _ in bins) +
              f" | {speed:.2f}x | {verdict} |")
        if not all(same):
            for method in ("minmax", "percentile", "entropy"):
                a = ranges(bins[-1][1], archives[first], method, os.path.join(work, "a.json"))
                b = ranges(bins[-1][1], archives[bins[-1][0]], method, os.path.join(work, "b.json"))
                diff = [k for k in a if a[k] != b.get(k)]
                rel = max((abs(a[k] - b[k]) / abs(a[k]) for k in diff if a[k]), default=0.0)
                notes.append(f"- {os.path.basename(model)}, {method}: {len(diff)} of {len(a)} tensors' ranges differ"
                             + (f", by at most {rel:.2g} relative" if diff else "")
                             + (f" (e.g. {diff[0]})" if diff else ""))
    if notes:
        print()
        print("\n".join(notes))


if __name__ == "__main__":
    main()
