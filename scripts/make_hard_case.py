#!/usr/bin/env python3
"""A model that quantizes badly per tensor without changing its FP32 function
(the hard case of tests/cli_sensitivity_test.py): in each named residual
block of the demo model, a few output channels of the first convolution
(c1) are multiplied by ALPHA and the matching input channels of the second
(c2) divided by it. ReLU(a x) = a ReLU(x) for a > 0, so the logits stay the
same up to float rounding, but c1's output and the ReLU after it now hold
outliers that a per-tensor INT8 scale cannot cover without crushing the
other channels.

usage: scripts/make_hard_case.py [--model models/fmnist_resnet.onnx] --out hard.onnx
                                 [--alpha 60] [--blocks layers.1] [--channels 0,1,2]
"""
import argparse

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/fmnist_resnet.onnx")
    ap.add_argument("--out", required=True)
    ap.add_argument("--alpha", type=float, default=60.0)
    ap.add_argument("--blocks", default="layers.1", help="comma-separated residual blocks (c1 -> ReLU -> c2)")
    ap.add_argument("--channels", default="0,1,2", help="comma-separated c1 output channels to scale")
    a = ap.parse_args()
    m = onnx.load(a.model)
    inits = {t.name: t for t in m.graph.initializer}
    nodes = {n.name: n for n in m.graph.node}
    chans = [int(c) for c in a.channels.split(",")]

    def scale_init(name, fn):
        t = inits[name]
        arr = numpy_helper.to_array(t).copy()
        fn(arr)
        t.CopyFrom(numpy_helper.from_array(arr.astype(np.float32), name))

    for block in a.blocks.split(","):
        c1 = nodes[f"/layers/{block}/c1/Conv"]
        c2 = nodes[f"/layers/{block}/c2/Conv"]
        for c in chans:
            scale_init(c1.input[1], lambda w: w.__setitem__(c, w[c] * a.alpha))
            if len(c1.input) > 2:
                scale_init(c1.input[2], lambda b: b.__setitem__(c, b[c] * a.alpha))
            scale_init(c2.input[1], lambda w: w.__setitem__((slice(None), c), w[:, c] / a.alpha))
    onnx.save(m, a.out)
    print(f"wrote {a.out}: blocks {a.blocks}, channels {chans} of c1 scaled by {a.alpha:g} (c2 by 1/{a.alpha:g})")


if __name__ == "__main__":
    main()
