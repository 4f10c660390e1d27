#!/usr/bin/env python3
"""A text encoder of the shape torch exports for masked mean pooling and RoBERTa's position ids, against
onnxruntime: position ids from the attention mask by CumSum, the mask-weighted sum of the tokens' features and the
mask's count by ReduceSum (float32 and int64), their quotient into the classifier. ptq refused both ops (exit 5,
"op ReduceSum is not supported"); now eval matches onnxruntime, and calibrate, plan, validate and export run, with
onnxruntime on the Q/DQ model making `ptq validate`'s prediction on every row; datasets whose lengths differ where
both inputs declare L are refused naming them. The model is built here with
onnx.helper (opset 14: ReduceSum's axes as an input). Skips (77) without onnx or onnxruntime. Run by ctest with
PTQ_BIN and PTQ_SOURCE_DIR set."""
import os
import sys
import tempfile

from ptqtest import check, check_ort_agrees, finish, ptq

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"masked_pool_test: skipped ({e})")
    sys.exit(77)

VOCAB, H, CLASSES, L = 30, 8, 4, 12


def masked_pool_model(path):
    rng = np.random.default_rng(11)
    f32 = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(f32(VOCAB, H), "emb"), numpy_helper.from_array(f32(L + 1, H), "pos_emb"),
             numpy_helper.from_array(f32(H, H), "w1"), numpy_helper.from_array(f32(H, CLASSES), "w2"),
             numpy_helper.from_array(np.array(1, np.int64), "axis1"),
             numpy_helper.from_array(np.array([1], np.int64), "axes1"),
             numpy_helper.from_array(np.array([2], np.int64), "axes2")]
    N = helper.make_node
    nodes = [N("CumSum", ["attention_mask", "axis1"], ["pos"], exclusive=1),  # 0, 1, 2, ... over the kept tokens
             N("Gather", ["emb", "input_ids"], ["tok"]), N("Gather", ["pos_emb", "pos"], ["pe"]),
             N("Add", ["tok", "pe"], ["e"]), N("MatMul", ["e", "w1"], ["h0"]), N("Relu", ["h0"], ["h"]),
             N("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
             N("Unsqueeze", ["maskf", "axes2"], ["m3"]), N("Mul", ["h", "m3"], ["hm"]),
             N("ReduceSum", ["hm", "axes1"], ["s"], keepdims=0),
             N("ReduceSum", ["attention_mask", "axes1"], ["cnt_i"], keepdims=1),  # int64 sums
             N("Cast", ["cnt_i"], ["cnt"], to=TensorProto.FLOAT), N("Div", ["s", "cnt"], ["mean"]),
             N("MatMul", ["mean", "w2"], ["logits"])]
    g = helper.make_graph(nodes, "masked_pool",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", "L"]),
                           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["N", "L"])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-mpool-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    model = J("mpool.onnx")
    masked_pool_model(model)
    rng = np.random.default_rng(5)
    ids = rng.integers(0, VOCAB, size=(96, L)).astype(np.int64)
    lengths = rng.integers(1, L + 1, size=96)
    mask = (np.arange(L)[None, :] < lengths[:, None]).astype(np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask}
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with h5py.File(J("d.h5"), "w") as f:
        f["input_ids"], f["attention_mask"], f["labels"] = ids, mask, want.argmax(1)

    rc, _, err = ptq("eval", "--model", model, "--data", J("d.h5"), "--logits", J("l.npy"))
    got = np.load(J("l.npy")) if rc == 0 else None
    check("eval within 1e-5 of onnxruntime (CumSum, ReduceSum float32 and int64)",
          got is not None and got.shape == want.shape and np.abs(got - want).max() <= 1e-5, err.strip()[-300:])
    rc, _, err = ptq("calibrate", "--model", model, "--data", J("d.h5"), "--out", J("c.h5"))
    check("calibrate", rc == 0, err.strip()[-300:])
    rc, _, err = ptq("plan", J("c.h5"), "--model", model, "--out", J("p.json"))
    check("plan", rc == 0, err.strip()[-300:])
    rc, _, err = ptq("validate", "--model", model, "--plan", J("p.json"), "--data", J("d.h5"), "--logits", J("q.npy"),
                     "--report", J("rep"))
    check("validate", rc == 0, err.strip()[-300:])
    rc, _, err = ptq("export", "--plan", J("p.json"), "--model", model, "--format", "qdq", "--out", J("q.onnx"))
    check("export --format qdq", rc == 0, err.strip()[-300:])
    if os.path.exists(J("q.npy")) and os.path.exists(J("q.onnx")):
        check_ort_agrees("masked pool", J("q.onnx"), feeds, J("q.npy"))
    # both inputs declare [N, L]: datasets of other lengths are refused naming both (exit 6), where the model had
    # failed in a node that mixes them ("cannot broadcast")
    with h5py.File(J("short.h5"), "w") as f:
        f["input_ids"], f["attention_mask"], f["labels"] = ids, mask[:, :10], want.argmax(1)
    rc, _, err = ptq("eval", "--model", model, "--data", J("short.h5"))
    check("input_ids [96x12] with attention_mask [96x10]: exit 6 naming the shared dim 'L' and both datasets",
          rc == 6 and "model inputs 'input_ids' (dim 1) and 'attention_mask' (dim 1) share the dim 'L'" in err
          and "[96x12]" in err and "[96x10]" in err, f"rc {rc}: {err.strip()[-300:]}")
    # token ids stored as uint64, a type ptq does not read: unsupported (exit 5), not a malformed file (was exit 4)
    with h5py.File(J("u64.h5"), "w") as f:
        f["input_ids"], f["attention_mask"], f["labels"] = ids.astype(np.uint64), mask, want.argmax(1)
    rc, _, err = ptq("eval", "--model", model, "--data", J("u64.h5"))
    check("uint64 token ids: exit 5 naming the dataset and its type",
          rc == 5 and "dataset 'input_ids'" in err and "is uint64" in err, f"rc {rc}: {err.strip()[-300:]}")
    return finish("masked_pool_test")


if __name__ == "__main__":
    sys.exit(main())
