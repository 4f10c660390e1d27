#!/usr/bin/env python3
"""The calibration archives of bench/accuracy_draws.py's draws, without its
peers: for each draw k and model, `ptq calibrate` on the same samples
accuracy_draws gives every tool (pick(k) of the Fashion-MNIST training
images, the text model's seed-k permutation of its training quotes), written
as OUT/TAG-dK-c.h5 beside the test sets OUT/test.h5 and OUT/text-test.h5,
the layout bench/accuracy_draws_methods.sh plans and validates:

    python3 bench/draw_archives.py --ptq build/ptq --out /tmp/draws [--draws 5] [--only demo mobilenet vit text vgg]
    VARIANTS="int8: mse:--method mse" bench/accuracy_draws_methods.sh build/ptq \\
        demo:models/fmnist_resnet.onnx:/tmp/draws:test.h5 text:models/text_encoder.onnx:/tmp/draws:text-test.h5

The python needs numpy, onnx and onnxruntime with ml_dtypes (accuracy_draws'
imports).
"""
import argparse
import os
import sys
import types

import numpy as np

from accuracy_draws import pick
from accuracy_placement import fortunes_data
from accuracy_vs_ort import run, write_idx_gz
from benchlib import FM, idx

MODELS = {"demo": "models/fmnist_resnet.onnx", "mobilenet": "models/fmnist_mobilenet.onnx",
          "vit": "models/fmnist_vit.onnx", "vgg": "models/fmnist_vgg.onnx", "text": "models/text_encoder.onnx"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptq", default="build/ptq")
    ap.add_argument("--out", required=True, help="folder for the archives and test sets")
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--calib", type=int, default=512)
    ap.add_argument("--only", nargs="+", choices=tuple(MODELS), default=tuple(MODELS))
    ap.add_argument("--fortunes", default="/usr/share/games/fortunes", help="the text model's data")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    J = lambda *p: os.path.join(a.out, *p)  # noqa: E731
    train = idx(f"{FM}/train-images-idx3-ubyte.gz")
    run([a.ptq, "data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
         f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", J("test.h5")])
    for k in range(a.draws):
        rows = pick(k, len(train), a.calib)
        write_idx_gz(J(f"ci-{k}.gz"), train[rows])
        write_idx_gz(J(f"cl-{k}.gz"), np.zeros(len(rows), np.uint8))  # as accuracy_draws: calibration is unlabelled
        run([a.ptq, "data", "convert", "--images", J(f"ci-{k}.gz"), "--labels", J(f"cl-{k}.gz"), "--out",
             J(f"calib-{k}.h5")])
        for tag in a.only:
            data = J(f"calib-{k}.h5")
            if tag == "text":
                fortunes_data(types.SimpleNamespace(text=MODELS[tag], fortunes=a.fortunes, calib=a.calib, limit=0),
                              J, seed=k)
                data = J("text-calib.h5")
            run([a.ptq, "calibrate", "--model", MODELS[tag], "--data", data, "--out", J(f"{tag}-d{k}-c.h5")])
        print(f"draw {k}: {', '.join(f'{t}-d{k}-c.h5' for t in a.only)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
