#!/usr/bin/env python3
"""The peers' Q/DQ models of bench/accuracy_draws.py's draws, simulated by
`ptq validate`: for each TAG:MODEL:SCRATCH:TEST:RECORD given and each peer,
every SCRATCH/TAG-dK-PEER.onnx becomes a ptq plan (bench/peer_plan.py: the
peer's quantization points, scales and formats, the rest FP32) and `ptq
validate` on SCRATCH/TEST gives its top-1. RECORD is the draws record that
holds onnxruntime's top-1 of the same models (its "Top-1 per draw" table of
TAG); the table printed sets the two side by side, draw by draw.
Then, for draw 0, where ptq's default plan (SCRATCH/TAG-d0-c.h5 planned with
no flags but the peer's --core) and each peer's differ: tensors the peer quantizes and ptq does not
(and the reverse), and the range of the peer's scale over ptq's where both do.

    python3 bench/peer_plans.py --ptq build/ptq [--peers modelopt-int8-max,modelopt-fp8-max] \\
        demo:models/fmnist_resnet.onnx:/tmp/ptq-bench-draws-X:test.h5:bench/results/2026-12-03-accuracy-draws-vm.md
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peer_plan  # noqa: E402

PEERS = {"modelopt-int8-max": "NVIDIA ModelOpt INT8 calibration_method=max",
         "modelopt-int8-entropy": "NVIDIA ModelOpt INT8 calibration_method=entropy",
         "modelopt-fp8-max": "NVIDIA ModelOpt FP8 calibration_method=max",
         "ort-MinMax": "onnxruntime quantize_static MinMax",
         "ort-Entropy": "onnxruntime quantize_static Entropy",
         "ort-Percentile": "onnxruntime quantize_static Percentile"}


def recorded(record, tag, label):
    """onnxruntime's top-1 per draw of the peer labelled so, from the record's Top-1 table of tag."""
    with open(record) as f:
        txt = f.read()
    m = re.search(r"^#{2,3} %s: " % re.escape(tag), txt, re.M)
    if not m:
        return None
    sec = re.split(r"#{3,4} Top-1 per draw", txt[m.end():])[1]
    sec = re.split(r"\n#{2,4} ", sec)[0]
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            return [float(c.rstrip("%")) if c.endswith("%") else None for c in cells[2:-2]]
    return None


def validate(ptq, model, plan, data, work):
    rep = os.path.join(work, "r")
    subprocess.run([ptq, "validate", "--model", model, "--plan", plan, "--data", data, "--report", rep],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(rep, "validate.json")) as f:
        top1 = 100.0 * json.load(f)["top1_quant"]
    shutil.rmtree(rep)
    return top1


def mean(v):
    return sum(v) / len(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated, of: " + ", ".join(PEERS))
    ap.add_argument("specs", nargs="+", metavar="TAG:MODEL:SCRATCH:TEST:RECORD")
    a = ap.parse_args()
    ptq = os.path.abspath(a.ptq)
    with tempfile.TemporaryDirectory(prefix="ptq-peer-plans-") as work:
        return report(ptq, a.peers.split(","), a.specs, work)


def report(ptq, peers, specs, work):
    rows, diffs = [], []
    for spec in specs:
        tag, model, scratch, test, record = spec.split(":")
        draws = sorted(int(f[len(tag) + 2:-5]) for f in os.listdir(scratch)
                       if re.fullmatch(re.escape(tag) + r"-d\d+-c\.h5", f))
        ours = {}
        for core in ("int8", "fp8-e4m3"):
            ours[core] = os.path.join(work, f"ptq-{core}.json")
            subprocess.run([ptq, "plan", os.path.join(scratch, f"{tag}-d0-c.h5"), "--model", model, "--core", core,
                            "--out", ours[core], "--quiet"], check=True)
        for peer in peers:
            sims = []
            for k in draws:
                qdq = os.path.join(scratch, f"{tag}-d{k}-{peer}.onnx")
                if not os.path.exists(qdq):
                    break
                plan = os.path.join(work, "peer.json")
                entries, _ = peer_plan.write_plan(model, qdq, plan)
                try:
                    sims.append(validate(ptq, model, plan, os.path.join(scratch, test), work))
                except subprocess.CalledProcessError:
                    print(f"{tag} d{k} {peer}: ptq validate failed on the peer's plan", file=sys.stderr)
                    break
                print(f"{tag} d{k} {peer} {sims[-1]:.2f}", file=sys.stderr, flush=True)
                if k == 0:
                    diffs.append((tag, peer, plan_diff(entries, ours[peer_plan.plan_core(entries)])))
            if len(sims) != len(draws):
                continue
            ort = recorded(record, tag, PEERS[peer])
            rows.append((tag, PEERS[peer], ort, sims))
    print("| model | peer | onnxruntime's top-1 per draw (record) | mean | ptq validate of the peer's plan "
          "per draw | mean | difference of means | largest difference in a draw |")
    print("|---|---|---|---|---|---|---|---|")
    for tag, label, ort, sims in rows:
        if not ort or None in ort or len(ort) != len(sims):
            print(f"| {tag} | {label} | - | - | {', '.join('%.2f' % s for s in sims)} | {mean(sims):.3f}% | - | - |")
            continue
        worst = max((s - o for s, o in zip(sims, ort)), key=abs)
        print(f"| {tag} | {label} | {', '.join('%.2f' % o for o in ort)} | {mean(ort):.3f}% | "
              f"{', '.join('%.2f' % s for s in sims)} | {mean(sims):.3f}% | {mean(sims) - mean(ort):+.3f} | "
              f"{worst:+.2f} |")
    print()
    print("| model | peer | quantized by the peer only (of them ptq's FP16 edges) | by ptq only | both, activations: "
          "peer scale / ptq scale | both, weights |")
    print("|---|---|---|---|---|---|")
    for tag, peer, (peer_only, edges, ptq_only, ratios) in diffs:
        r = {kind: (f"{min(lo for lo, _ in v):.4g} to {max(hi for _, hi in v):.4g} ({len(v)} tensors)" if v else "-")
             for kind, v in ratios.items()}
        print(f"| {tag} | {PEERS[peer]} | {peer_only} ({edges}) | {ptq_only} | {r['activation']} | {r['weight']} |")
    return 0


def plan_diff(entries, ours_path):
    """(peer-only count, of them ptq edges, ptq-only count, scale ratios by kind where both quantize)."""
    with open(ours_path) as f:
        ours = {e["name"]: e for e in json.load(f)["tensors"]}
    quantized = ("int8", "fp8-e4m3", "fp8-e5m2", "uint8")
    peer_only = edges = ptq_only = 0
    ratios = {"activation": [], "weight": []}
    for name, pp, op, rule, ratio in peer_plan.differences(entries, ours):
        if pp in quantized and op not in quantized:
            peer_only += 1
            edges += rule == "edge"
        elif op in quantized and pp not in quantized:
            ptq_only += 1
        elif ratio:
            ratios[entries[name]["kind"]].append(ratio)
    return peer_only, edges, ptq_only, ratios


if __name__ == "__main__":
    sys.exit(main())
