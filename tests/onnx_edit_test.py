#!/usr/bin/env python3
"""The ONNX editor against onnx and onnxruntime: `test_onnx_edit --copy` gives
the input's bytes and outputs; `test_onnx_edit --qdq` (Q/DQ before every
Conv/Gemm activation input, int8 per-channel weights + DequantizeLinear)
passes onnx.checker, has the expected Q/DQ node counts and int8 weights that
match a numpy reference, and agrees with the FP32 model on >= 95% of 1000
Fashion-MNIST test images. Needs PTQ_BUILD_DIR/PTQ_SOURCE_DIR; label oracle."""
import gzip
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
except ImportError as e:
    print(f"onnx_edit_test: skipped: {e}")
    sys.exit(77)

build = os.environ.get("PTQ_BUILD_DIR")
source = os.environ.get("PTQ_SOURCE_DIR")
images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
driver = os.path.join(build or "", "tests", "test_onnx_edit")
model = os.path.join(source or "", "models", "fmnist_resnet.onnx")
for need in (driver, model, images):
    if not build or not source or not os.path.exists(need):
        print(f"onnx_edit_test: skipped: {need} missing (PTQ_BUILD_DIR/PTQ_SOURCE_DIR set?)")
        sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def load_images(n):
    with gzip.open(images, "rb") as f:
        raw = f.read()
    magic, count, rows, cols = np.frombuffer(raw[:16], dtype=">u4")
    assert magic == 2051 and rows == 28 and cols == 28, (magic, rows, cols)
    img = np.frombuffer(raw[16:], dtype=np.uint8)[: n * 28 * 28].reshape(n, 1, 28, 28)
    return ((img.astype(np.float32) / 255.0 - 0.286) / 0.353).astype(np.float32)


def run(path, x):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def expected_counts(m):
    """Unique activation / weight inputs of Conv/Gemm, from onnx itself."""
    inits = {t.name for t in m.graph.initializer}
    acts, wts = [], []
    for n in m.graph.node:
        if n.op_type in ("Conv", "Gemm") and n.domain in ("", "ai.onnx"):
            if n.input[0] not in inits and n.input[0] not in acts:
                acts.append(n.input[0])
            if n.input[1] in inits and n.input[1] not in wts:
                wts.append(n.input[1])
    return acts, wts


def weight_axes(m):
    axes = {}
    for n in m.graph.node:
        if n.op_type == "Conv":
            axes[n.input[1]] = 0
        elif n.op_type == "Gemm":
            trans_b = next((a.i for a in n.attribute if a.name == "transB"), 0)
            axes[n.input[1]] = 0 if trans_b else 1
    return axes


def quantize_ref(w, axis):
    wm = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    amax = np.abs(wm).max(axis=1)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -128, 127).astype(np.int8)
    return q, scale


def main():
    x = load_images(1000)
    orig = onnx.load(model)
    with tempfile.TemporaryDirectory() as tmp:
        copy_path = os.path.join(tmp, "copy.onnx")
        qdq_path = os.path.join(tmp, "qdq.onnx")
        r = subprocess.run([driver, "--copy", model, copy_path], capture_output=True, text=True)
        check(r.returncode == 0, f"--copy exit {r.returncode}: {r.stderr}")
        r = subprocess.run([driver, "--qdq", model, qdq_path], capture_output=True, text=True)
        check(r.returncode == 0, f"--qdq exit {r.returncode}: {r.stderr}")
        print(r.stdout.strip())
        if failures:
            return
        with open(model, "rb") as f, open(copy_path, "rb") as g:
            check(f.read() == g.read(), "no-edit copy differs from the input bytes")
        y_ref = run(model, x)
        y_copy = run(copy_path, x)
        check(np.array_equal(y_ref, y_copy), "no-edit copy: onnxruntime outputs differ")

        m = onnx.load(qdq_path)
        try:
            onnx.checker.check_model(m)
        except Exception as e:  # onnx.checker.ValidationError and friends
            check(False, f"check_model: {e}")
        acts, wts = expected_counts(orig)
        n_q = sum(n.op_type == "QuantizeLinear" for n in m.graph.node)
        n_dq = sum(n.op_type == "DequantizeLinear" for n in m.graph.node)
        print(f"QuantizeLinear {n_q} (want {len(acts)}), DequantizeLinear {n_dq} (want {len(acts) + len(wts)})")
        check(n_q == len(acts), "QuantizeLinear count")
        check(n_dq == len(acts) + len(wts), "DequantizeLinear count")
        opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        check(opset >= 13, f"opset {opset}")
        check([o.name for o in m.graph.output] == [o.name for o in orig.graph.output], "graph outputs renamed")
        check([i.name for i in m.graph.input] == [i.name for i in orig.graph.input], "graph inputs changed")
        # topological order in the file itself
        known = {i.name for i in m.graph.input} | {t.name for t in m.graph.initializer}
        for n in m.graph.node:
            missing = [i for i in n.input if i and i not in known]
            check(not missing, f"node {n.name} reads {missing} before they are produced")
            known.update(n.output)
        # int8 weights and scales against numpy
        inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
        orig_inits = {t.name: numpy_helper.to_array(t) for t in orig.graph.initializer}
        axes = weight_axes(orig)
        for w in wts:
            check(w not in inits, f"float weight {w} still present")
            q_ref, s_ref = quantize_ref(orig_inits[w], axes[w])
            q, s = inits.get(w + "_int8"), inits.get(w + "_scale")
            check(q is not None and q.dtype == np.int8 and np.array_equal(q, q_ref), f"int8 weight {w}")
            check(s is not None and np.allclose(s, s_ref, rtol=1e-6, atol=0), f"weight scale {w}")
            dq = next((n for n in m.graph.node if n.output[0] == w + "_dq"), None)
            axis = next((a.i for a in dq.attribute if a.name == "axis"), 1) if dq else None
            check(axis == axes[w], f"DequantizeLinear axis of {w}: {axis}, want {axes[w]}")
        # the same model, every other byte carried over: unchanged nodes keep their attributes
        by_name = {n.name: n for n in m.graph.node}
        for n in orig.graph.node:
            e = by_name.get(n.name)
            check(e is not None and e.op_type == n.op_type and list(e.attribute) == list(n.attribute)
                  and list(e.output) == list(n.output), f"node {n.name} changed")

        y_q = run(qdq_path, x)
        agree = float(np.mean(y_q.argmax(1) == y_ref.argmax(1)))
        err = float(np.abs(y_q - y_ref).max())
        print(f"top-1 agreement Q/DQ vs FP32 on {len(x)} images: {agree:.4f}, max |dlogit| {err:.4f}")
        check(agree >= 0.95, f"top-1 agreement {agree:.4f} < 0.95")
        check(not np.array_equal(y_q, y_ref), "Q/DQ model gives the FP32 outputs exactly: nothing was quantized")


main()
if failures:
    print(f"onnx_edit_test: {len(failures)} failures")
    sys.exit(1)
print("onnx_edit_test: ok")
