#!/usr/bin/env python3
"""A peer's Q/DQ model as a ptq plan: every QuantizeLinear / DequantizeLinear
pair of an ONNX Q/DQ model (NVIDIA ModelOpt's, onnxruntime quantize_static's)
becomes a plan entry for the original model's tensor, with the peer's scale,
axis and format (int8 with zero point 0, FP8 E4M3); every other tensor stays
FP32. `ptq validate --plan` then simulates exactly the quantization the peer
wrote, so its top-1 can be set beside onnxruntime's run of the peer's model,
and the peer's plan beside ptq's own (same quantization points? same scales?).

    python3 bench/peer_plan.py --model models/fmnist_resnet.onnx --qdq peer.onnx --out peer-plan.json \\
        [--diff ptq-plan.json]

--diff prints, tensor by tensor, where the peer's plan and a ptq plan differ
(precision, or scales by more than 1e-6 relative; with the ratio of the peer's
scale to ptq's). Weights that quantize_static stored already quantized (an int8
initializer NAME_quantized read by a DequantizeLinear) map back to the original
weight NAME, a graph output it renamed NAME_QuantizeLinear_Input to NAME, and
ptq's own export's ptq_qdq/NAME/... to NAME; a name the original model does not
have is an error.
Biases quantize_static stores as int32 stay float (ptq adds biases in float), and so
do the other constants it quantizes (a Constant node's output, an Add's constant
operand): a plan names activations and the weights of Conv/Gemm/MatMul only.
A zero point other than 0 (uint8 activations) is refused: ptq's trt plans are
symmetric.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# TensorProto data types by number: onnx 1.12 (Debian's, the tests' venv) predates FLOAT8E4M3FN
INT8, INT32, FLOAT8E4M3FN = 3, 6, 17
FORMATS = {INT8: "int8", FLOAT8E4M3FN: "fp8-e4m3"}


def constants(graph):
    """name -> TensorProto of every initializer and Constant node output."""
    out = {i.name: i for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    out[n.output[0]] = a.t
    return out


def values(t):
    """A TensorProto's values; FP8 ones as their bytes without the sign bit (0: a zero), which is all a zero
    point needs, and which onnx 1.12's numpy_helper cannot convert."""
    if t.data_type == FLOAT8E4M3FN:
        return np.frombuffer(t.raw_data, dtype=np.uint8) & 0x7F if t.raw_data else np.asarray(t.int32_data) & 0x7F
    return numpy_helper.to_array(t)


def peer_entries(qdq_path, original):
    m = onnx.load(qdq_path)
    g = m.graph
    consts = constants(g)
    orig_names = {i.name for i in original.graph.initializer}
    orig_values = set(orig_names)
    for n in original.graph.node:
        orig_values.update(n.output)
    orig_values.update(i.name for i in original.graph.input)
    orig_constants = {n.output[0] for n in original.graph.node if n.op_type == "Constant"}
    weights = {n.input[1] for n in original.graph.node
               if n.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul") and len(n.input) > 1}
    entries = {}
    skipped = []
    for n in g.node:
        if n.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            continue
        x = n.input[0]
        if n.op_type == "DequantizeLinear" and x not in consts:
            continue  # the DQ of an activation's Q: the Q gave the entry
        if n.op_type == "DequantizeLinear":  # a weight stored quantized (quantize_static)
            name = x[: -len("_quantized")] if x.endswith("_quantized") else x
        else:  # quantize_static renames a graph output it quantizes: NAME_QuantizeLinear_Input
            name = x[: -len("_QuantizeLinear_Input")] if x.endswith("_QuantizeLinear_Input") else x
        if name.startswith("ptq_qdq/"):  # ptq export --format qdq's own: ptq_qdq/NAME/q, ptq_qdq/NAME/biased
            name = name[len("ptq_qdq/"):].rsplit("/", 1)[0]
        if name not in orig_values:
            raise SystemExit(f"{qdq_path}: quantized tensor '{name}' is not in the original model")
        if name in orig_constants or (name in orig_names and name not in weights):
            skipped.append(name)  # a constant no weighted op reads as its weight: a plan does not name it
            continue
        for c in n.input[1:3]:
            if c and c not in consts:
                raise SystemExit(f"{qdq_path}: node '{n.name}': '{c}' is neither an initializer nor a Constant")
        scale = np.asarray(values(consts[n.input[1]]), dtype=np.float32).ravel()
        if len(n.input) < 3 or not n.input[2]:
            raise SystemExit(f"{qdq_path}: node '{n.name}' has no zero point (uint8 by default): not symmetric")
        zp = np.asarray(values(consts[n.input[2]])).astype(np.float64).ravel()
        if np.any(zp != 0):
            raise SystemExit(f"{qdq_path}: node '{n.name}' has a zero point other than 0: not symmetric")
        zpt = consts[n.input[2]].data_type
        if zpt == INT32 and n.op_type == "DequantizeLinear":
            skipped.append(name)  # an int32 bias (quantize_static): ptq adds biases in float
            continue
        fmt = FORMATS.get(zpt)
        if fmt is None:
            raise SystemExit(f"{qdq_path}: node '{n.name}': a zero point type ptq's plans do not take")
        axis = -1
        if scale.size > 1:
            axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
        kind = "weight" if name in orig_names else "activation"
        entries[name] = {"name": name, "kind": kind, "precision": fmt, "axis": int(axis),
                         "scales": [float(s) for s in scale], "source": "peer " + os.path.basename(qdq_path),
                         "rule": "peer"}
    return entries, skipped


def plan_core(entries):
    return "fp8-e4m3" if any(e["precision"] == "fp8-e4m3" for e in entries.values()) else "int8"


def write_plan(model, qdq, out):
    """Writes the peer's plan for model to out (whole or not at all); returns (entries, names left float)."""
    entries, skipped = peer_entries(qdq, onnx.load(model))
    with open(model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    plan = {"format": "ptq-plan", "format_version": 1,
            "model": {"name": os.path.basename(model), "sha256": sha},
            "archive": "", "method": "peer", "core": plan_core(entries),
            "tensors": sorted(entries.values(), key=lambda e: (e["kind"], e["name"]))}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(plan, f, indent=1)
    os.replace(tmp, out)
    return entries, skipped


def differences(entries, ours):
    """(name, peer precision, ptq precision, ptq rule or None, (min, max) of peer scale / ptq scale or None) for
    every tensor either plan quantizes, or the two put in different precisions; ours: a ptq plan's entries by
    name. The ratio is given where both quantize it in one format."""
    out = []
    for name in sorted(set(entries) | {k for k, e in ours.items() if e["precision"] != "fp32"}):
        p, o = entries.get(name), ours.get(name)
        pp = p["precision"] if p else "fp32"
        op = o["precision"] if o else "fp32"
        ratio = None
        if pp == op and p and o and p["scales"] and o["scales"]:
            r = np.asarray(p["scales"]) / np.asarray(o["scales"])
            ratio = (float(r.min()), float(r.max()))
        out.append((name, pp, op, o.get("rule", "") if o else None, ratio))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="the original FP32 model the peer quantized")
    ap.add_argument("--qdq", required=True, help="the peer's Q/DQ model")
    ap.add_argument("--out", required=True, help="the plan to write")
    ap.add_argument("--diff", help="a ptq plan to compare with, tensor by tensor")
    a = ap.parse_args()
    entries, skipped = write_plan(a.model, a.qdq, a.out)
    print(f"{a.out}: {sum(e['kind'] == 'activation' for e in entries.values())} activations and "
          f"{sum(e['kind'] == 'weight' for e in entries.values())} weights quantized ({plan_core(entries)})"
          + (f"; {len(skipped)} int32 biases and other constants left float" if skipped else ""))
    if a.diff:
        with open(a.diff) as f:
            ours = {e["name"]: e for e in json.load(f)["tensors"]}
        for name, pp, op, rule, ratio in differences(entries, ours):
            if pp != op:
                print(f"  {name}: peer {pp}, ptq {op}" + (f" ({rule})" if rule is not None else ""))
            elif ratio and (abs(ratio[0] - 1) > 1e-6 or abs(ratio[1] - 1) > 1e-6):
                print(f"  {name}: {pp} both, peer scale / ptq scale {ratio[0]:.6g}..{ratio[1]:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
