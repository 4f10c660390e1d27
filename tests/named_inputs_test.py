"""Models with named integer inputs (issue 13 item 2), against onnxruntime:
a tiny text classifier (input_ids int64 [N, L] and attention_mask int64
[N, L]: Gather on an embedding, Cast, Unsqueeze, Mul, ReduceMean, Gemm)
fed from an HDF5 set of input_ids, attention_mask and labels. Checks `ptq
eval` logits and top-1 equal onnxruntime's, that int32 and bool data are
converted for int64 inputs, that --input maps renamed datasets (and that a
dynamic L takes the data's), that `ptq calibrate` observes float tensors
only and records the input mapping, that `ptq plan` quantizes no integer
tensor, `ptq validate` runs the plan, `ptq run` goes end to end and
onnxruntime runs its Q/DQ export, that every data command's help names
--input, and the refusals: a missing dataset, a float
dataset for an int64 input, a wrong sample shape, datasets of different
sample counts, a malformed --input and --preprocess on a text model; and that
an image model's --input names its images dataset, as --images-key does; and
that a sequence-first model's default batch fits --max-memory; and a model
with ConstantOfShape as torch exports nn.TransformerEncoder's BERT-style
inputs (zeros_like(input_ids) for the token types, a float zeros tensor of
the mask's shape for the padding bias) against onnxruntime, FP32 and its
Q/DQ export at two lengths."""
import json
import os
import sys
import tempfile

from ptqtest import check, finish, ptq

try:
    import h5py
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from multiio_test import close, eval_logits, top1
except ImportError as e:  # pragma: no cover
    print(f"named_inputs_test: skipped ({e})")
    sys.exit(77)

VOCAB, L, D, K = 50, 8, 16, 4


def text_model(path, rng, seq=L):
    """logits = Gemm(mean over L of emb[input_ids] * mask, W, b)."""
    emb = rng.standard_normal((VOCAB, D)).astype(np.float32)
    w = rng.standard_normal((D, K)).astype(np.float32)
    b = rng.standard_normal(K).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["e"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["m", "axis2"], ["m3"]),
        helper.make_node("Mul", ["e", "m3"], ["em"]),
        helper.make_node("ReduceMean", ["em"], ["pooled"], axes=[1], keepdims=0),
        helper.make_node("Gemm", ["pooled", "w", "b"], ["logits"]),
    ]
    inits = [numpy_helper.from_array(emb, "emb"), numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array([2], np.int64), "axis2")]
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", seq]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["N", seq])]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", K])]
    g = helper.make_graph(nodes, "text", ins, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def write_set(path, **arrays):
    with h5py.File(path, "w") as f:
        for k, v in arrays.items():
            f.create_dataset(k, data=v)
        f.attrs["class_names"] = [f"c{i}" for i in range(K)]


def ort_logits(model, ids, mask):
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return sess.run(["logits"], {"input_ids": ids.astype(np.int64), "attention_mask": mask.astype(np.int64)})[0]


def main():
    rng = np.random.default_rng(13)
    n = 40
    ids = rng.integers(0, VOCAB, size=(n, L)).astype(np.int64)
    lengths = rng.integers(1, L + 1, size=n)
    mask = (np.arange(L)[None, :] < lengths[:, None]).astype(np.int64)
    labels = rng.integers(0, K, size=n).astype(np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "text.onnx")
        text_model(model, rng)
        want = ort_logits(model, ids, mask)
        data = os.path.join(tmp, "text.h5")
        write_set(data, input_ids=ids, attention_mask=mask, labels=labels)

        # 1. datasets named as the inputs: no flag needed
        rc, got, rep, se = eval_logits(tmp, model, data, "--batch", "7")
        check("eval: logits equal onnxruntime's", rc == 0 and close(got, want), f"rc {rc}: {se[-400:]}")
        check("eval: top-1 equals onnxruntime's", rc == 0 and abs(rep.get("top1", -1) - top1(want, labels)) < 1e-9,
              f"{rep.get('top1')} vs {top1(want, labels)}")
        check("eval: the report records the input mapping",
              rep.get("preprocess") == "inputs=input_ids:input_ids,attention_mask:attention_mask", str(rep.get("preprocess")))

        # 2. int32 ids and a bool mask are converted for the int64 inputs
        data32 = os.path.join(tmp, "text32.h5")
        write_set(data32, input_ids=ids.astype(np.int32), attention_mask=mask.astype(bool), labels=labels)
        rc, got, rep, se = eval_logits(tmp, model, data32)
        check("int32 ids and a bool mask: the same logits", rc == 0 and close(got, want), f"rc {rc}: {se[-400:]}")
        check("the conversion is noted", "fed to the model input 'input_ids' as int64" in se, se[-400:])

        # 3. --input maps renamed datasets, uint8 mask
        renamed = os.path.join(tmp, "renamed.h5")
        write_set(renamed, tokens=ids, mask=mask.astype(np.uint8), y=labels)
        rc, got, rep, se = eval_logits(tmp, model, renamed, "--input", "input_ids=tokens",
                                       "--input=attention_mask=mask")
        check("--input maps renamed datasets", rc == 0 and close(got, want), f"rc {rc}: {se[-400:]}")
        check("the mapping is recorded", rep.get("preprocess") == "inputs=input_ids:tokens,attention_mask:mask",
              str(rep.get("preprocess")))
        rc, _, _, se = eval_logits(tmp, model, renamed, "--input", "input_ids=tokens")
        check("an input left unmapped reads its own name: missing, refused naming it and the file",
              rc == 7 and "'attention_mask'" in se and renamed in se, f"rc {rc}: {se[-300:]}")

        # 4. a dynamic sequence length takes the data's
        dyn = os.path.join(tmp, "dyn.onnx")
        text_model(dyn, np.random.default_rng(13), seq="L")
        rc, got, _, se = eval_logits(tmp, dyn, data)
        check("a dynamic L takes the data's", rc == 0 and close(got, ort_logits(dyn, ids, mask)), f"rc {rc}: {se[-300:]}")

        # 5. calibrate observes float tensors only; validate runs the default plan
        calib = os.path.join(tmp, "calib.h5")
        rc, _, se = ptq("calibrate", "--model", model, "--data", data, "--out", calib)
        check("calibrate runs", rc == 0, f"rc {rc}: {se[-400:]}")
        if rc == 0:
            with h5py.File(calib, "r") as f:
                names = [s.decode() if isinstance(s, bytes) else s for s in f["tensors/name"][()]]
                pre = f.attrs["preprocess"]
                pre = pre.decode() if isinstance(pre, bytes) else pre
            check("calibration observes no integer tensor",
                  "input_ids" not in names and "attention_mask" not in names and "pooled" in names, str(names))
            check("the archive records the input mapping",
                  pre == "inputs=input_ids:input_ids,attention_mask:attention_mask", pre)
            plan = os.path.join(tmp, "plan.json")
            rc, _, se = ptq("plan", calib, "--model", model, "--out", plan)
            check("plan runs", rc == 0, f"rc {rc}: {se[-400:]}")
            if rc == 0:
                with open(plan) as f:
                    entries = json.load(f).get("tensors", [])
                quantized = {e.get("name") for e in entries} if isinstance(entries, list) else set(entries)
                check("the plan quantizes no integer tensor",
                      not ({"input_ids", "attention_mask"} & quantized) and "pooled" in quantized,
                      str(sorted(quantized))[:300])
                report = os.path.join(tmp, "report")
                rc, so, se = ptq("validate", "--model", model, "--plan", plan, "--data", data, "--calib", calib,
                                 "--report", report, "--json")
                check("validate runs the plan", rc == 0 and os.path.exists(os.path.join(report, "validate.json")),
                      f"rc {rc}: {se[-400:]}")
        out = os.path.join(tmp, "run")
        rc, _, se = ptq("run", "--model", model, "--calib-data", renamed, "--data", renamed, "--out", out,
                        "--input", "input_ids=tokens", "--input", "attention_mask=mask", "--samples", "0")
        qdq = os.path.join(out, "model_qdq.onnx")
        check("run end to end with --input", rc == 0 and os.path.exists(qdq), f"rc {rc}: {se[-400:]}")
        if os.path.exists(qdq):
            q = ort_logits(qdq, ids, mask)
            check("onnxruntime runs the Q/DQ export on the int64 inputs, near FP32",
                  q.shape == want.shape and np.allclose(q, want, atol=0.05 * np.abs(want).max()),
                  f"max diff {np.abs(q - want).max()} of {np.abs(want).max()}")
        # the --input entries in another order: the same mapping, every stage skipped; another mapping reruns
        stages = lambda so: {l[3:].split(":")[0]: "skipped" not in l for l in so.splitlines()
                             if l.startswith("== ") and "done" not in l}
        rc, so, se = ptq("run", "--model", model, "--calib-data", renamed, "--data", renamed, "--out", out,
                         "--input", "attention_mask=mask", "--input", "input_ids=tokens", "--samples", "0")
        check("run: --input entries in another order: every stage skipped",
              rc == 0 and len(stages(so)) == 8 and not any(stages(so).values()), f"rc {rc}: {so[-300:]} {se[-300:]}")
        with h5py.File(renamed, "a") as f:
            f["mask2"] = np.ones_like(mask, dtype=np.uint8)
        rc, so, se = ptq("run", "--model", model, "--calib-data", renamed, "--data", renamed, "--out", out,
                         "--input", "attention_mask=mask2", "--input", "input_ids=tokens", "--samples", "0")
        check("run: attention_mask=mask2: calibrate and the stages that read the data rerun",
              rc == 0 and {"calibrate", "sensitivity", "validate"} <= {k for k, v in stages(so).items() if v},
              f"rc {rc}: {so[-300:]} {se[-300:]}")
        # --input NAME=NAME is the default mapping spelled out: keyed as no --input, every stage skipped
        out2 = os.path.join(tmp, "run2")
        rc, so, se = ptq("run", "--model", model, "--calib-data", data, "--data", data, "--out", out2, "--samples", "0")
        check("run without --input", rc == 0, f"rc {rc}: {se[-300:]}")
        rc, so, se = ptq("run", "--model", model, "--calib-data", data, "--data", data, "--out", out2, "--samples", "0",
                         "--input", "input_ids=input_ids", "--input", "attention_mask=attention_mask")
        check("run: --input NAME=NAME for each input (the default spelled out): every stage skipped",
              rc == 0 and len(stages(so)) == 8 and not any(stages(so).values()), f"rc {rc}: {so[-300:]} {se[-300:]}")
        for cmd in ("eval", "calibrate", "validate", "sensitivity", "plan", "run"):
            rc, so, _ = ptq(cmd, "--help")
            check(f"{cmd} --help names --input", rc == 0 and "--input NAME=DATASET" in so)

        # 6. an image model: --input names its images dataset, preprocessed as with --images-key
        img_model = os.path.join(tmp, "image.onnx")
        g = helper.make_graph([helper.make_node("GlobalAveragePool", ["x"], ["gap"]),
                               helper.make_node("Flatten", ["gap"], ["logits"])], "img",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4, 4])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(img_model, "wb") as f:
            f.write(m.SerializeToString())
        pixels = rng.integers(0, 256, size=(n, 4, 4, 3), dtype=np.uint8)
        img_data = os.path.join(tmp, "pixels.h5")
        with h5py.File(img_data, "w") as f:
            f.create_dataset("pixels", data=pixels)
            f.create_dataset("labels", data=labels % 3)
        rc, by_key, rep_key, se = eval_logits(tmp, img_model, img_data, "--images-key", "pixels")
        rc2, by_map, rep_map, se2 = eval_logits(tmp, img_model, img_data, "--input", "x=pixels")
        img_want = pixels.astype(np.float32).mean(axis=(1, 2)) / 255.0
        check("an image model's --input names its images", rc == 0 and rc2 == 0 and close(by_map, img_want) and
              close(by_key, by_map, 0) and rep_map.get("preprocess") == rep_key.get("preprocess") and
              rep_map.get("preprocess", "").startswith("scale="), f"rc {rc}/{rc2}: {se[-200:]} {se2[-200:]}")

        # 7. refusals
        bad = os.path.join(tmp, "float_ids.h5")
        write_set(bad, input_ids=ids.astype(np.float32), attention_mask=mask, labels=labels)
        rc, _, _, se = eval_logits(tmp, model, bad)
        check("a float dataset for an int64 input is refused naming input, dataset and file",
              rc == 7 and "'input_ids'" in se and "float32" in se and bad in se, f"rc {rc}: {se[-300:]}")
        bad = os.path.join(tmp, "long.h5")
        write_set(bad, input_ids=np.zeros((n, L + 1), np.int64), attention_mask=mask, labels=labels)
        rc, _, _, se = eval_logits(tmp, model, bad)
        check("a wrong sample shape is refused naming input, dataset and file",
              rc == 6 and "'input_ids'" in se and bad in se, f"rc {rc}: {se[-300:]}")
        bad = os.path.join(tmp, "short.h5")
        write_set(bad, input_ids=ids, attention_mask=mask[:-1], labels=labels)
        rc, _, _, se = eval_logits(tmp, model, bad)
        check("datasets of different sample counts are refused", rc == 7 and "'attention_mask'" in se and
              "39" in se and "40" in se and bad in se, f"rc {rc}: {se[-300:]}")
        bad = os.path.join(tmp, "labels.h5")
        write_set(bad, input_ids=ids, attention_mask=mask, labels=labels[:-2])
        rc, _, _, se = eval_logits(tmp, model, bad)
        check("labels of another count are refused", rc == 7 and "labels" in se and bad in se, f"rc {rc}: {se[-300:]}")
        rc, _, _, se = eval_logits(tmp, model, data, "--input", "input_ids")
        check("a malformed --input is a usage error", rc == 2 and "NAME=DATASET" in se, f"rc {rc}: {se[-300:]}")
        rc, _, _, se = eval_logits(tmp, model, data, "--input", "nope=input_ids")
        check("--input naming no model input is refused listing the inputs",
              rc == 2 and "'nope'" in se and "'attention_mask'" in se, f"rc {rc}: {se[-300:]}")
        rc, _, _, se = eval_logits(tmp, model, data, "--preprocess", "scale=1")
        check("--preprocess on a text model is refused", rc == 2 and "--preprocess" in se, f"rc {rc}: {se[-300:]}")
        ext = os.path.join(tmp, "ext.h5")
        with h5py.File(ext, "w") as f:
            f["input_ids"] = h5py.ExternalLink(data, "input_ids")
            f.create_dataset("attention_mask", data=mask)
            f.create_dataset("labels", data=labels)
        rc, _, _, se = eval_logits(tmp, model, ext)
        check("an external link is refused", rc == 4 and "external" in se, f"rc {rc}: {se[-300:]}")
        rc, _, _, se = eval_logits(tmp, model, data, "--input", "input_ids=a", "--input", "input_ids=b")
        check("an input mapped twice is refused", rc == 2 and "twice" in se, f"rc {rc}: {se[-300:]}")
        seq_first_batch(tmp, rng)
        constant_of_shape(tmp, rng)
    return finish("named_inputs_test")


def seq_first_batch(tmp, rng):
    """A sequence-first model (x [N, L, D] transposed to [L, N, D], as torch's batch_first=False layers run):
    its activations' batch is dim 1, and the default batch under --max-memory still fits the limit."""
    seq, dim, hid, n = 512, 16, 256, 256
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             helper.make_node("MatMul", ["xt", "w"], ["h"]), helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("ReduceMean", ["hr"], ["p"], axes=[0], keepdims=0),
             helper.make_node("MatMul", ["p", "w2"], ["logits"])]
    inits = [numpy_helper.from_array(rng.standard_normal((dim, hid)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((hid, K)).astype(np.float32), "w2")]
    g = helper.make_graph(nodes, "seq_first", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", seq, dim])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", K])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    model = os.path.join(tmp, "seq_first.onnx")
    with open(model, "wb") as f:
        f.write(m.SerializeToString())
    x = rng.standard_normal((n, seq, dim)).astype(np.float32)
    data = os.path.join(tmp, "seq_first.h5")
    write_set(data, x=x, labels=rng.integers(0, K, size=n).astype(np.int64))
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["logits"], {"x": x})[0]
    # each sample's [L, 1, H] activation is 512 KiB: 64 MiB holds a batch of 32 at most, not the default 256
    rc, got, rep, se = eval_logits(tmp, model, data, "--max-memory", "64M")
    batch = rep.get("batch", 0)
    check("sequence-first activations: the default batch fits --max-memory 64M",
          rc == 0 and 0 < batch <= 32 and "note: batch" in se and close(got, want), f"rc {rc}, batch {batch}: {se[-300:]}")


def constant_of_shape(tmp, rng):
    """ConstantOfShape as torch.onnx.export writes it for a BERT-style encoder: token types = zeros_like(ids)
    (int64 value), the padding bias Where(mask == 0, -1, zeros of the mask's shape) (no value: float32 0)."""
    typ = rng.standard_normal((2, D)).astype(np.float32)
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["ids_shape"]),
        helper.make_node("ConstantOfShape", ["ids_shape"], ["types"],
                         value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Gather", ["emb", "input_ids"], ["e_tok"], axis=0),
        helper.make_node("Gather", ["typ", "types"], ["e_typ"], axis=0),
        helper.make_node("Add", ["e_tok", "e_typ"], ["e"]),
        helper.make_node("Equal", ["attention_mask", "zero"], ["pad"]),
        helper.make_node("Shape", ["attention_mask"], ["mask_shape"]),
        helper.make_node("ConstantOfShape", ["mask_shape"], ["zeros"]),
        helper.make_node("Where", ["pad", "minus_one", "zeros"], ["bias"]),
        helper.make_node("Unsqueeze", ["bias", "axis2"], ["bias3"]),
        helper.make_node("Add", ["e", "bias3"], ["eb"]),
        helper.make_node("ReduceMean", ["eb"], ["pooled"], axes=[1], keepdims=0),
        helper.make_node("Gemm", ["pooled", "w", "b"], ["logits"]),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((VOCAB, D)).astype(np.float32), "emb"),
             numpy_helper.from_array(typ, "typ"),
             numpy_helper.from_array(rng.standard_normal((D, K)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(K).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(-1, np.float32), "minus_one"),
             numpy_helper.from_array(np.array([2], np.int64), "axis2")]
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", "L"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["N", "L"])]
    g = helper.make_graph(nodes, "cos", ins, [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", K])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    model = os.path.join(tmp, "constant_of_shape.onnx")
    with open(model, "wb") as f:
        f.write(m.SerializeToString())
    rc, so, se = ptq("info", model)
    check("ConstantOfShape: info says every node is supported", rc == 0 and "yes, every node" in so,
          f"rc {rc}: {se[-300:]}")
    n = 30
    for seq in (L, 5):
        ids = rng.integers(0, VOCAB, size=(n, seq)).astype(np.int64)
        mask = (np.arange(seq)[None, :] < rng.integers(1, seq + 1, size=n)[:, None]).astype(np.int64)
        data = os.path.join(tmp, f"cos{seq}.h5")
        write_set(data, input_ids=ids, attention_mask=mask, labels=rng.integers(0, K, size=n).astype(np.int64))
        want = ort_logits(model, ids, mask)
        rc, got, _, se = eval_logits(tmp, model, data, "--batch", "7")
        check(f"ConstantOfShape, length {seq}: eval logits equal onnxruntime's", rc == 0 and close(got, want),
              f"rc {rc}: {se[-300:]}")
    calib, plan, qdq = (os.path.join(tmp, f) for f in ("cos_calib.h5", "cos_plan.json", "cos_qdq.onnx"))
    quant = os.path.join(tmp, "cos_quant.npy")
    steps = [("calibrate", "--model", model, "--data", data, "--out", calib),
             ("plan", calib, "--model", model, "--out", plan),
             ("validate", "--model", model, "--plan", plan, "--data", data, "--report", os.path.join(tmp, "cos_rep"),
              "--logits", quant),
             ("export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq)]
    for args in steps:
        rc, _, se = ptq(*args)
        check(f"ConstantOfShape: {args[0]} runs", rc == 0, f"rc {rc}: {se[-300:]}")
        if rc != 0:
            return
    q = ort_logits(qdq, ids, mask)
    check("ConstantOfShape: onnxruntime's Q/DQ logits are ptq validate's", close(q, np.load(quant)),
          f"max diff {np.abs(q - np.load(quant)).max()}")


if __name__ == "__main__":
    sys.exit(main())
