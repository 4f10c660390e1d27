#!/usr/bin/env python3
"""The small torchvision classifiers end to end (issue 18; the whole zoo at
224x224 is bench/zoo_run.py's record): resnet18, mobilenet_v3_small,
squeezenet1_1, shufflenet_v2_x0_5 (channel shuffle: Shape/Gather/Div/
Reshape arithmetic with a dynamic batch), densenet121 (Pad, Concat of up
to 25 inputs), convnext_tiny (LayerNorm as ReduceMean/Pow/Sqrt at opset 13,
LayerNormalization at 17) and mnasnet0_5 (ReduceMean), exported with random
weights at 64x64 and opsets 13 and 17 by scripts/export_zoo.py, through
scripts/zoo_pipeline.py: ptq eval's logits within 1e-4 relative of
onnxruntime's with >= 99.9% of predictions agreeing on 64 random images,
then calibrate, plan, validate, export --format qdq and onnxruntime on the
Q/DQ model (finite logits of the right shape). Also: shufflenet at batch 5
(batches of 5 and a last one of 4: the shape arithmetic follows the batch),
a graph with a Concat of 70 inputs against onnxruntime, the agreement's tie
rule (zoo_pipeline.agreement) on hand-made logits, and the pipeline through
a model whose quantized outputs collapse (validate exits 12: a step done,
flagged, then the export and onnxruntime run). Label oracle; skipped
without torch, torchvision, onnx or onnxruntime."""
import os
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import onnxruntime  # noqa: F401
    import torch  # noqa: F401
    import torchvision  # noqa: F401
    from ptqtest import PTQ, SRC, check, finish, ptq
    sys.path.insert(0, os.path.join(SRC, "scripts"))
    import export_zoo
    import zoo_pipeline as zp
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

MODELS = ["resnet18", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5", "densenet121", "convnext_tiny",
          "mnasnet0_5"]
SIZE = 64


def concat70(tmp):
    """input [N, 3, 4, 4] -> 70 Mul branches (by 1..70) -> Concat on axis 1 -> GlobalAveragePool -> Flatten."""
    nodes, names, inits = [], [], []
    for i in range(70):
        inits.append(helper.make_tensor(f"k{i}", TensorProto.FLOAT, [], [float(i + 1)]))
        nodes.append(helper.make_node("Mul", ["input", f"k{i}"], [f"b{i}"]))
        names.append(f"b{i}")
    nodes += [helper.make_node("Concat", names, ["cat"], axis=1), helper.make_node("GlobalAveragePool", ["cat"], ["g"]),
              helper.make_node("Flatten", ["g"], ["logits"])]
    g = helper.make_graph(nodes, "concat70", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 4, 4])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 210])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(tmp, "concat70.onnx")
    onnx.save(m, path)
    return path


def collapse_model(tmp):
    """input [N, 3, 8, 8] -> Flatten -> Mul 1e-9 -> Gemm to 10 classes: logits around 1e-8, whose input the
    plan's FP16 edge flushes to zero (tests/cli_collapse_test.py's model, with 3 channels)."""
    w = np.random.default_rng(18).standard_normal((192, 10)).astype(np.float32)
    nodes = [helper.make_node("Flatten", ["input"], ["f"]), helper.make_node("Mul", ["f", "tiny"], ["ft"]),
             helper.make_node("Gemm", ["ft", "W"], ["logits"])]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(1e-9, np.float32), "tiny")]
    g = helper.make_graph(nodes, "collapse", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = os.path.join(tmp, "collapse.onnx")
    onnx.save(m, path)
    return path


def ties():
    """zoo_pipeline.agreement on 4 images of 4 classes (||ort|| about 10, so the tie bound is about 1e-3)."""
    ort = np.array([[10.0, 0.0, 0.0, 0.0],         # a clear winner
                    [7.0, 7.0 - 5e-4, 0.0, 0.0],   # top-2 margin 5e-4 < 1e-4 x ||ort||: a tie
                    [7.0, 7.0 - 5e-4, 0.0, 0.0],   # the same tie
                    [7.0, 7.0 - 2e-3, 0.0, 0.0]])  # margin 2e-3 > 1e-4 x ||ort||: no tie
    ours = ort.copy()
    r_same = zp.agreement(ours, ort)
    ours[1, 1] += 1e-3  # the tie flips to its second class: set aside
    r_tie = zp.agreement(ours, ort)
    ours[2, 3] = 8.0  # the other tie image picks a class outside the tie: a disagreement
    r_third = zp.agreement(ours, ort)
    ours[3, 1] += 3e-3  # a flip past the bound: a disagreement
    r_clear = zp.agreement(ours, ort)
    check("agreement: ties (top-2 margin < 1e-4 x ||ort||, ptq's pick among them) set aside, the rest counted",
          r_same == (1.0, 2) and r_tie == (1.0, 2) and r_third == (2 / 3, 1) and r_clear == (1 / 3, 1),
          f"{r_same} {r_tie} {r_third} {r_clear}")


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-zoo-")
    images = zp.make_images(64, SIZE, seed=7)
    for name in MODELS:
        paths = export_zoo.export(name, tmp, [13, 17], SIZE)
        for opset, path in zip((13, 17), paths):
            r = zp.run_model(PTQ, path, images, os.path.join(tmp, f"{name}-{opset}"), calib_samples=32)
            detail = (f"rel max {r.get('rel_max', float('nan')):.2e}, agree {(r.get('agree') or 0) * 100:.1f}% "
                      f"({r.get('ties', 0)} ties aside), qdq agree {r.get('qdq_agree', 0) * 100:.1f}%")
            if r["failed_step"] == "bounds":
                detail += f": {r['error']}"
            if r["failed_step"] and r["failed_step"] != "bounds":
                detail = f"failed at {r['failed_step']}: {r['error']}"
            check(f"{name} opset {opset}: eval vs onnxruntime, calibrate, plan, validate, qdq export in onnxruntime",
                  r["ok"], detail)

    # the shape arithmetic follows the batch: shufflenet at batch 5 over 64 images (last batch 4)
    path = os.path.join(tmp, "shufflenet_v2_x0_5-op13.onnx")
    h5, logits = os.path.join(tmp, "b5.h5"), os.path.join(tmp, "b5.npy")
    ref = zp.ort_run(path, zp.model_input(images))
    zp.write_h5(h5, images, ref.argmax(1))
    rc, _, err = ptq("eval", "--model", path, "--data", h5, "--batch", "5", "--preprocess", zp.PREPROCESS, "--logits",
                     logits)
    ok = rc == 0 and os.path.exists(logits)
    rel = float((np.linalg.norm(np.load(logits) - ref, axis=1) / np.linalg.norm(ref, axis=1)).max()) if ok else -1
    check("shufflenet_v2_x0_5 at batch 5 (13 batches, the last of 4) within 1e-4 of onnxruntime", ok and rel <= 1e-4,
          f"rel max {rel:.2e}" if ok else err.strip()[-300:])

    # no fixed limit on a node's inputs: a Concat of 70
    path = concat70(tmp)
    small = zp.make_images(10, 4, seed=3)
    ref = zp.ort_run(path, zp.model_input(small))
    zp.write_h5(h5, small, ref.argmax(1))
    rc, _, err = ptq("eval", "--model", path, "--data", h5, "--preprocess", zp.PREPROCESS, "--logits", logits)
    ok = rc == 0 and os.path.exists(logits)
    rel = float((np.linalg.norm(np.load(logits) - ref, axis=1) / np.linalg.norm(ref, axis=1)).max()) if ok else -1
    check("Concat of 70 inputs equals onnxruntime's", ok and rel <= 1e-6, f"rel max {rel:.2e}" if ok else err.strip())

    ties()
    # validate's exit 12 (collapse flagged) is a step done: the export and onnxruntime still run, the row passes
    r = zp.run_model(PTQ, collapse_model(tmp), zp.make_images(64, 8, seed=7), os.path.join(tmp, "collapse"),
                     calib_samples=32)
    check("collapsed quantized outputs: validate's exit 12 recorded, export and onnxruntime run, the row passes",
          r["ok"] and r.get("collapsed") is True and r.get("qdq_finite") is True,
          f"failed at {r['failed_step']}: {r['error']}" if r["failed_step"] else f"collapsed {r.get('collapsed')}")
    return finish("zoo_test")


if __name__ == "__main__":
    sys.exit(main())
