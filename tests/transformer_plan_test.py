#!/usr/bin/env python3
"""Quantization choices for attention on the ViT (models/fmnist_vit.onnx):
calibrate (256 Fashion-MNIST training images), the default trt plan in INT8
and FP8 E4M3 and its --explain, validate on the first 500 test images,
export --format qdq and run the Q/DQ models in onnxruntime (FP8 with basic
graph optimizations, as tests/qdq_export_test.py; INT8 with --reduce-range
on a CPU without VNNI, ptqtest.reduce_range_flags). Checks: both operands of
every attention MatMul (two activation inputs, no initializer) are
quantized; LayerNorm/residual Add outputs no MatMul reads are FP16 by rule
trt.fp16-transformer, the ones a MatMul reads its quantized input; the
explain output names the rule and why; INT8 top-1 within 1 point of FP32;
onnxruntime's predictions on the Q/DQ model agree with `ptq validate
--logits` on >= 99% of the images; the FP8 export (opset 19) has
ReduceMean's axes as an input. Skips (77) without the model or
Fashion-MNIST. Run by ctest with PTQ_BIN and PTQ_SOURCE_DIR set."""
import json
import os
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnx.numpy_helper
    import onnxruntime as ort
    from ptqtest import FM, SRC, check, finish, fmnist_test, ptq, reduce_range_flags
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

VIT = os.path.join(SRC, "models", "fmnist_vit.onnx")
N_TEST = 500
RULE = "trt.fp16-transformer"


def run_ort(path, images, level=None):
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = ((images.astype(np.float32) * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353))
    x = x.reshape(-1, 1, 28, 28).astype(np.float32)
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def main():
    if not os.path.exists(VIT) or not os.path.exists(f"{FM}/t10k-images-idx3-ubyte.gz"):
        print("skipped: models/fmnist_vit.onnx or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-tplan-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    for split, idx in (("train", "train"), ("test", "t10k")):
        rc, _, err = ptq("data", "convert", "--images", f"{FM}/{idx}-images-idx3-ubyte.gz", "--labels",
                         f"{FM}/{idx}-labels-idx1-ubyte.gz", "--class-names", "fashion-mnist", "--out",
                         J(f"{split}.h5"))
        check(f"data convert {split}", rc == 0, err.strip()[-300:])
    rc, _, err = ptq("calibrate", "--model", VIT, "--data", J("train.h5"), "--samples", "256", "--seed", "0",
                     "--out", J("c.h5"))
    check("calibrate 256 training images", rc == 0, err.strip()[-300:])

    g = onnx.load(VIT).graph
    inits = {t.name for t in g.initializer} | {o for n in g.node if n.op_type == "Constant" for o in n.output}
    producer = {o: n for n in g.node for o in n.output}
    attention = [n for n in g.node if n.op_type == "MatMul" and not any(i in inits for i in n.input)]
    check("the ViT has 8 attention MatMuls (Q.K^T and softmax.V in 4 layers)", len(attention) == 8,
          str(len(attention)))
    readers = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n.op_type)
    ln_out = [n.output[0] for n in g.node if n.op_type == "LayerNormalization"]
    softmax_out = [n.output[0] for n in g.node if n.op_type == "Softmax"]
    residual = [n.output[0] for n in g.node if n.op_type == "Add" and not any(i in inits for i in n.input)]
    check("4 Softmax, 9 LayerNormalization, 8 residual Adds", (len(softmax_out), len(ln_out), len(residual)) ==
          (4, 9, 8), f"{len(softmax_out)}, {len(ln_out)}, {len(residual)}")

    images, labels = fmnist_test(N_TEST)
    cases = [("int8", reduce_range_flags(), None, "int8"),
             ("fp8", ["--core", "fp8"], ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, "fp8-e4m3")]
    top1 = {}
    for name, flags, level, core in cases:
        rc, out, err = ptq("plan", J("c.h5"), "--model", VIT, *flags, "--out", J(f"{name}.json"), "--explain")
        check(f"{name}: plan --explain", rc == 0, err.strip()[-300:])
        check(f"{name}: --explain names {RULE} and why (FP16 in a transformer)", RULE in out and
              "FP16 enabled" in out and "trt.weighted-input" in out, out[-300:])
        if rc != 0:
            continue
        whole = json.load(open(J(f"{name}.json")))
        check(f"{name}: the default percentile, 99.99, recorded in the plan",
              whole.get("method") == "percentile=99.99", str(whole.get("method")))
        plan = {e["name"]: e for e in whole["tensors"] if e["kind"] == "activation"}
        ops = [plan.get(i, {}).get("precision") for n in attention for i in n.input]
        check(f"{name}: both operands of the 8 attention MatMuls quantized ({core})",
              len(ops) == 16 and all(p == core for p in ops), str(ops))
        kt = [plan[i]["rule"] for n in attention for i in n.input if producer[i].op_type == "Transpose"]
        check(f"{name}: K^T quantized after its Transpose (trt.commutes)", kt == ["trt.commutes"] * 4, str(kt))
        fed = [t for t in ln_out + softmax_out if "MatMul" in readers.get(t, [])]
        check(f"{name}: LayerNorm/Softmax outputs a MatMul reads are its quantized input (trt.weighted-input)",
              len(fed) == 12 and all(plan[t]["precision"] == core and plan[t]["rule"] == "trt.weighted-input"
                                     for t in fed), str([(t, plan[t]["rule"]) for t in fed]))
        rc, _, err = ptq("plan", J("c.h5"), "--model", VIT, *flags, "--method", "minmax", "--out", J(f"{name}-mm.json"))
        mm = {e["name"]: e for e in json.load(open(J(f"{name}-mm.json")))["tensors"]} if rc == 0 else {}
        sm = [(plan[t]["scales"], mm.get(t, {}).get("scales"), plan[t]["source"]) for t in softmax_out]
        check(f"{name}: the 4 Softmax outputs keep their min-max range under the default percentile, and say so",
              rc == 0 and all(a == b and len(a) == 1 and "Softmax" in why for a, b, why in sm), str(sm))
        ln_fed = [t for t in ln_out if t in fed]
        check(f"{name}: the LayerNorm outputs take the percentile (narrower than min-max)",
              rc == 0 and all(plan[t]["scales"][0] < mm[t]["scales"][0] for t in ln_fed),
              str([(plan[t]["scales"], mm.get(t, {}).get("scales")) for t in ln_fed]))
        rest = [t for t in ln_out + residual if t not in fed]
        check(f"{name}: the final LayerNorm and the 8 residual Adds in FP16 by {RULE}",
              len(rest) == 9 and all(plan[t]["precision"] == "fp16" and plan[t]["rule"] == RULE for t in rest),
              str([(t, plan[t]["precision"], plan[t]["rule"]) for t in rest]))
        rc, _, err = ptq("validate", "--model", VIT, "--plan", J(f"{name}.json"), "--data", J("test.h5"),
                         "--limit", str(N_TEST), "--report", J(f"rep-{name}"), "--logits", J(f"{name}.npy"))
        check(f"{name}: validate on {N_TEST} test images", rc == 0, err.strip()[-300:])
        rc, _, err = ptq("export", "--format", "qdq", "--plan", J(f"{name}.json"), "--model", VIT, "--out",
                         J(f"{name}.onnx"))
        check(f"{name}: export qdq", rc == 0, err.strip()[-300:])
        if not os.path.exists(J(f"{name}.onnx")) or not os.path.exists(J(f"{name}.npy")):
            continue
        m = onnx.load(J(f"{name}.onnx"))
        if name == "int8":  # onnx 1.12's checker does not know FP8
            onnx.checker.check_model(m)
        else:
            inits64 = {t.name: list(onnx.numpy_helper.to_array(t)) for t in m.graph.initializer
                       if t.data_type == onnx.TensorProto.INT64}
            rm = [n for n in m.graph.node if n.op_type == "ReduceMean"]
            check("fp8 Q/DQ model at opset 19: ReduceMean's axes moved from the attribute to an int64 input",
                  any(o.domain in ("", "ai.onnx") and o.version >= 19 for o in m.opset_import) and len(rm) == 1 and
                  not any(a.name == "axes" for a in rm[0].attribute) and len(rm[0].input) == 2 and
                  inits64.get(rm[0].input[1]) == [1], str(rm))
        fp16 = {t for t, e in plan.items() if e["precision"] == "fp16"}
        cast_in = {n.input[0] for n in m.graph.node if n.op_type == "Cast" and
                   any(a.name == "to" and a.i == onnx.TensorProto.FLOAT16 for a in n.attribute)}
        check(f"{name}: every FP16 activation passes through Cast(float16) in the Q/DQ model", cast_in == fp16,
              str(sorted(cast_in ^ fp16)))
        rep = json.load(open(J(f"rep-{name}", "validate.json")))
        top1["fp32"], top1[name] = rep["top1_fp32"], rep["top1_quant"]
        q_ptq = np.load(J(f"{name}.npy")).argmax(axis=1)
        q_ort = run_ort(J(f"{name}.onnx"), images, level).argmax(axis=1)
        agree = float((q_ort == q_ptq).mean())
        acc_ort = float((q_ort == labels).mean())
        print(f"     {name}: FP32 {100 * rep['top1_fp32']:.2f}%, ptq validate {100 * rep['top1_quant']:.2f}%, "
              f"onnxruntime {100 * acc_ort:.2f}%, agreement {100 * agree:.2f}% of {N_TEST}")
        check(f"{name}: onnxruntime agrees with ptq validate --logits on >= 99% of the images", agree >= 0.99,
              f"{100 * agree:.2f}%")
    if "int8" in top1:
        check("INT8 top-1 within 1.0 point of FP32", abs(top1["int8"] - top1["fp32"]) <= 0.01 + 1e-12,
              f"FP32 {100 * top1['fp32']:.2f}%, INT8 {100 * top1['int8']:.2f}%")
    return finish("transformer_plan_test")


if __name__ == "__main__":
    sys.exit(main())
