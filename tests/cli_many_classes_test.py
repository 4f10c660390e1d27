#!/usr/bin/env python3
"""Reports at 1,000 classes: a synthetic model (x [N,1,8,8] -> Flatten ->
Gemm to k classes) on an HDF5 set written with h5py. The terminal report
of `ptq eval` stays short (lowest-recall classes and top confusions, not a
k x k matrix), the JSON holds the matrix as its nonzero cells
("confusion_sparse"), equal to numpy's confusion counts of ptq's own
logits, with the model, data and preprocessing recorded; peak memory grows
from 1,000 to 3,000 classes by little more than the matrix itself; `ptq
validate` writes sparse matrices too. Run by ctest (label oracle)."""
import json
import os
import sys
import tempfile

try:
    import hashlib

    import h5py
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from ptqtest import check, finish, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

N = 3000


def model(path, k, rng):
    w = rng.standard_normal((64, k)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    g = helper.make_graph([helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Gemm", ["f", "W", "B"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", k])],
                          initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    m.metadata_props.add(key="ptq.preprocess", value="scale=0.00392156862745098 mean=0 std=1")
    onnx.save(m, path)
    return w, b


def dense(sparse, k):
    """The k x k matrix of {"rows", "cols", "cells": [[r, c, n], ...]}."""
    m = np.zeros((k, k), np.int64)
    ok = sparse.get("rows") == k and sparse.get("cols") == k
    for r, c, n in sparse.get("cells", []):
        ok = ok and n != 0 and m[r, c] == 0
        m[r, c] = n
    return m, ok


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-many-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(7)
    rss = {}
    for k in (1000, 3000):
        w, b = model(J(f"m{k}.onnx"), k, rng)
        x = rng.integers(0, 256, (N, 8, 8), dtype=np.uint8)
        ref = (x.reshape(N, -1).astype(np.float32) / 255) @ w + b
        labels = ref.argmax(1)
        noisy = rng.random(N) < 0.3  # 30% labelled at random: confusions to show
        labels[noisy] = rng.integers(0, k, noisy.sum())
        with h5py.File(J(f"d{k}.h5"), "w") as f:
            f["images"] = x
            f["labels"] = labels.astype(np.int64)
        rc, out, err = ptq("eval", "--model", J(f"m{k}.onnx"), "--data", J(f"d{k}.h5"), "--report", J(f"r{k}.json"),
                           "--logits", J(f"l{k}.npy"))
        check(f"{k} classes: eval", rc == 0, err.strip()[-300:])
        if rc != 0:
            continue
        rep = json.load(open(J(f"r{k}.json")))
        rss[k] = rep.get("peak_rss_mib", 0)
        if k != 1000:
            continue
        lines = out.splitlines()
        print(f"     terminal: {len(lines)} lines, {len(out)} bytes; peak RSS {rss[k]:.1f} MiB")
        print("\n".join("     | " + l for l in lines[lines.index(next(l for l in lines if "top confusions" in l)):]))
        check("terminal: short, with the top confusions and no matrix",
              len(lines) < 40 and len(out) < 4000 and "top confusions" in out and "lowest recall" in out)
        logits = np.load(J(f"l{k}.npy"))
        pred = logits.argmax(1)
        want = np.zeros((k, k), np.int64)
        np.add.at(want, (labels, pred), 1)
        got, ok = dense(rep.get("confusion_sparse", {}), k)
        check("JSON: no dense matrix, the sparse one equals numpy's confusion counts",
              "confusion" not in rep and ok and np.array_equal(got, want) and
              len(rep["confusion_sparse"]["cells"]) == np.count_nonzero(want),
              f"{len(rep.get('confusion_sparse', {}).get('cells', []))} cells, {np.count_nonzero(want)} nonzero")
        top = sorted(((want[r, c], r, c) for r, c in zip(*np.nonzero(want)) if r != c), key=lambda t: (-t[0], t[1], t[2]))
        check("terminal: the largest off-diagonal count is the first confusion",
              f"{top[0][0]:8d}  " in out, f"{top[0]}")
        check("JSON: ptq's argmax agrees with numpy's forward pass", (pred == ref.argmax(1)).mean() > 0.999)
        sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()  # noqa: E731
        check("JSON: model, data and preprocessing recorded",
              rep.get("model") == J(f"m{k}.onnx") and rep.get("model_sha256") == sha(J(f"m{k}.onnx")) and
              rep.get("data") == J(f"d{k}.h5") and rep.get("data_sha256") == sha(J(f"d{k}.h5")) and
              "scale=0.0039215" in rep.get("preprocess", ""), str({q: rep.get(q) for q in ("model", "preprocess")}))
        for args in (("calibrate", "--model", J("m1000.onnx"), "--data", J("d1000.h5"), "--out", J("c.h5")),
                     ("plan", J("c.h5"), "--model", J("m1000.onnx"), "--out", J("p.json"))):
            rc, _, err = ptq(*args)
            check(args[0], rc == 0, err.strip()[-300:])
        os.makedirs(J("rep"), exist_ok=True)  # heatmaps of an earlier, smaller report in the folder
        for which in ("fp32", "quant", "delta"):
            with open(J("rep", f"confusion-{which}.png"), "wb") as f:
                f.write(b"\x89PNG of another report")
        rc, out, err = ptq("validate", "--model", J("m1000.onnx"), "--plan", J("p.json"), "--data", J("d1000.h5"),
                           "--report", J("rep"))
        stale = [n for n in os.listdir(J("rep")) if n.endswith(".png")]
        check("validate: no heatmap of another report left beside a 1,000-class one", rc == 0 and not stale,
              f"exit {rc}, {sorted(os.listdir(J('rep')))}")
        v = json.load(open(J("rep", "validate.json"))) if rc == 0 else {}
        f32, ok1 = dense(v.get("fp32", {}).get("confusion_sparse", {}), k)
        q, ok2 = dense(v.get("quant", {}).get("confusion_sparse", {}), k)
        delta, ok3 = dense(v.get("confusion_delta_sparse", {}), k)
        check("validate: sparse FP32, quantized and delta matrices, FP32 equal to eval's",
              rc == 0 and ok1 and ok2 and ok3 and np.array_equal(f32, want) and np.array_equal(delta, q - f32) and
              "confusion_delta" not in v and v.get("model_sha256") == sha(J("m1000.onnx")) and
              v.get("data_sha256") == sha(J("d1000.h5")) and "preprocess" in v, f"exit {rc}: {err.strip()[-300:]}")
        check("validate: terminal summary short", rc == 0 and len(out.splitlines()) < 30, f"{len(out.splitlines())} lines")
    if len(rss) == 2:
        matrix_mib = 8 * (3000 ** 2 - 1000 ** 2) / 2 ** 20
        grew = rss[3000] - rss[1000]
        print(f"     peak RSS {rss[1000]:.1f} MiB at 1000 classes, {rss[3000]:.1f} MiB at 3000: +{grew:.1f} MiB, "
              f"the matrix +{matrix_mib:.1f} MiB")
        check("memory: peak RSS grows by at most the matrix and 24 MiB", grew < matrix_mib + 24)
    return finish("cli_many_classes_test")


if __name__ == "__main__":
    sys.exit(main())
