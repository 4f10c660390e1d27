"""The trained text encoder (models/text_encoder.onnx, scripts/train_text.py:
token and position embeddings, post-LayerNorm attention, GELU, masked mean
pooling; inputs input_ids and attention_mask int64 [N, L], batch and length
dynamic) against onnxruntime at three sequence lengths, the model's 64 and
two shorter ones, in one set each of token rows with random lengths (its
tokens drawn from the vocabulary, [PAD] after each row's length, the mask
1 before it): `ptq eval` logits within 1e-4 (relative per row) of
onnxruntime's and the same prediction on every row, batches of 7 (a
partial last batch); then calibrate, plan (default and FP8), validate and
export --format qdq at length 40, and onnxruntime runs the INT8 and FP8
Q/DQ models at that length with every prediction as `ptq validate` makes
it (FP8 with basic graph optimizations, as tests/qdq_export_test.py; INT8
with --reduce-range on a CPU without VNNI, ptqtest.reduce_range_flags). Fortunes
text is not needed: agreement is a property of the arithmetic, not of the
data (bench/accuracy_placement.py --only text records accuracy on it).
Skips (77) without the model or onnxruntime."""
import json
import os
import sys
import tempfile

from ptqtest import SRC, check, finish, ptq, reduce_range_flags

try:
    import h5py
    import numpy as np
    import onnxruntime as ort
    from multiio_test import eval_logits
except ImportError as e:  # pragma: no cover
    print(f"text_model_test: skipped ({e})")
    sys.exit(77)

MODEL = os.path.join(SRC, "models", "text_encoder.onnx")
VOCAB = os.path.join(SRC, "models", "text_encoder.vocab.json")
N = 120


def rows(rng, n, length, vocab):
    """input_ids, attention_mask int64 [n, length]: each row 1..length real tokens, [PAD] (0) after."""
    lens = rng.integers(1, length + 1, size=n)
    lens[0] = length  # one full row
    mask = (np.arange(length)[None, :] < lens[:, None]).astype(np.int64)
    ids = rng.integers(2, vocab, size=(n, length)).astype(np.int64) * mask
    return ids, mask


def run_ort(path, ids, mask, level=None):
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def write_set(path, ids, mask, labels):
    with h5py.File(path, "w") as f:
        f.create_dataset("input_ids", data=ids)
        f.create_dataset("attention_mask", data=mask)
        f.create_dataset("labels", data=labels)


def main():
    if not os.path.exists(MODEL):
        print("skipped: models/text_encoder.onnx missing")
        return 77
    meta = json.load(open(VOCAB))
    vocab, max_len = len(meta["vocab"]), meta["max_len"]
    rng = np.random.default_rng(13)
    tmp = tempfile.mkdtemp(prefix="ptq-text-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    for length in (max_len, 40, 9):
        ids, mask = rows(rng, N, length, vocab)
        want = run_ort(MODEL, ids, mask)
        write_set(J(f"L{length}.h5"), ids, mask, want.argmax(1))
        rc, got, rep, err = eval_logits(tmp, MODEL, J(f"L{length}.h5"), "--batch", "7")
        ok = rc == 0 and got is not None and got.shape == want.shape
        rel = (np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)).max() if ok else None
        check(f"L={length}: ptq eval logits within 1e-4 of onnxruntime's (relative, per row)",
              ok and rel <= 1e-4, f"rc {rc}, rel {rel}: {err.strip()[-300:]}")
        check(f"L={length}: the same prediction on all {N} rows",
              ok and int((got.argmax(1) == want.argmax(1)).sum()) == N, err.strip()[-200:])

    # the pipeline at length 40: calibrate, plan, validate, export, onnxruntime on the exports
    ids, mask = rows(rng, 200, 40, vocab)
    write_set(J("cal.h5"), ids, mask, run_ort(MODEL, ids, mask).argmax(1))
    rc, _, err = ptq("calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J("c.h5"))
    check("calibrate at length 40", rc == 0, err.strip()[-300:])
    for core, flags, level in (("int8", reduce_range_flags(), None),
                               ("fp8", [], ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)):
        plan = J(f"plan-{core}.json")
        rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, "--core", core, *flags, "--out", plan)
        check(f"plan --core {core}", rc == 0, err.strip()[-300:])
        q = J(f"q-{core}.npy")
        rc, _, err = ptq("validate", "--model", MODEL, "--plan", plan, "--data", J("L40.h5"), "--logits", q,
                         "--report", J(f"rep-{core}"))
        check(f"validate {core}", rc == 0 and os.path.exists(q), err.strip()[-300:])
        out = J(f"qdq-{core}.onnx")
        rc, _, err = ptq("export", "--plan", plan, "--model", MODEL, "--format", "qdq", "--out", out)
        check(f"export --format qdq ({core})", rc == 0, err.strip()[-300:])
        if rc or not os.path.exists(q):
            continue
        with h5py.File(J("L40.h5")) as f:
            x_ids, x_mask = f["input_ids"][:], f["attention_mask"][:]
        got = run_ort(out, x_ids, x_mask, level)
        sim = np.load(q)
        same = int((got.argmax(1) == sim.argmax(1)).sum())
        check(f"{core}: onnxruntime on the Q/DQ model makes ptq validate's prediction on all {len(got)} rows",
              same == len(got), f"{same} of {len(got)}")
    return finish("text_model_test")


if __name__ == "__main__":
    sys.exit(main())
