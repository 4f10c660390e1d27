#!/usr/bin/env python3
"""`ptq eval` of the demo model on all 10,000 Fashion-MNIST test images
against onnxruntime (PyPI) on the same images: predictions agree on at
least 99.9% of images, logits match within 1e-4 relative (per image,
||ptq - ort|| / ||ort||), and top-1 is at least 92%. Label oracle."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnxruntime as ort
    from ptqtest import FM, MODEL, PTQ, fmnist_test
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)


def main():
    if not os.path.exists(MODEL) or not os.path.exists(FM):
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-ort-")
    h5, logits_path = os.path.join(tmp, "fm.h5"), os.path.join(tmp, "logits.npy")
    subprocess.run([PTQ, "data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
                    f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", h5], check=True, capture_output=True)
    device = os.environ.get("PTQ_EVAL_DEVICE", "cpu")
    p = subprocess.run([PTQ, "eval", "--model", MODEL, "--data", h5, "--json", "--logits", logits_path,
                        "--device", device], capture_output=True, text=True)
    if p.returncode != 0:
        print("ptq eval failed:", p.stderr)
        return 1
    rep = json.loads(p.stdout)
    ours = np.load(logits_path)

    images, labels = fmnist_test(10000)
    x = ((images.astype(np.float32) / np.float32(255.0) - np.float32(0.286)) / np.float32(0.353))[:, None]
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    theirs = np.concatenate([sess.run(None, {"input": x[i:i + 1000]})[0] for i in range(0, len(x), 1000)])

    agree = float(np.mean(ours.argmax(1) == theirs.argmax(1)))
    rel = np.linalg.norm(ours - theirs, axis=1) / np.maximum(np.linalg.norm(theirs, axis=1), 1e-30)
    top1_ort = float(np.mean(theirs.argmax(1) == labels))
    print(f"device {rep['device']}: ptq top-1 {rep['top1'] * 100:.2f}%, onnxruntime top-1 {top1_ort * 100:.2f}%")
    print(f"predictions agree on {agree * 100:.3f}% of {len(labels)} images; "
          f"logits relative error max {rel.max():.2e}, median {np.median(rel):.2e}")
    ok = ours.shape == theirs.shape and agree >= 0.999 and rel.max() <= 1e-4 and rep["top1"] >= 0.92 \
        and rep["samples"] == 10000
    print("eval_ort_test:", "pass" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
