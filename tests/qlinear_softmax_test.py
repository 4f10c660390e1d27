#!/usr/bin/env python3
"""onnxruntime's QLinearSoftmax in `ptq validate`: a small attention
classifier made with torch (random weights: 16x16x3 input, patch Conv,
LayerNorm, qkv Linear, softmax attention over 2 heads, MLP, head), calibrated
on 256 random images, planned with --target ort-cpu (the Softmax's input and
output uint8, placement ort), validated on 300 others with --logits, exported
--format qdq and run by onnxruntime at ORT_ENABLE_ALL, where it fuses
DequantizeLinear -> Softmax -> QuantizeLinear into QLinearSoftmax (a 256-entry
exp table): the logits agree with validate's within 1e-5 relative (median)
and every prediction is equal, and onnxruntime's optimized model holds a
QLinearSoftmax. The same for the attention softmax taken over the queries
(axis 2 of [N, heads, L, L]: onnxruntime transposes around its kernel), for
a plan of placement ort with the int8 core (int8 Q/DQ), and for the plan with
the Softmax's output left in FP32 by hand, which onnxruntime does not fuse
(validate then computes a float Softmax). Skips (77) without torch or
onnxruntime. Run by ctest with PTQ_BIN set."""
import json
import os
import sys
import tempfile

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    from ptqtest import check, finish, ptq, reduce_range_flags
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

PRE = "scale=1/255 mean=0.5 std=0.25"


class Attention(torch.nn.Module):
    def __init__(self, axis, d=32, heads=2, patch=4, classes=10):
        super().__init__()
        self.axis, self.heads, self.dh = axis, heads, d // heads
        self.patch = torch.nn.Conv2d(3, d, patch, patch)
        self.ln1, self.ln2, self.ln3 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp1, self.mlp2 = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)  # [N, 16, d]
        n, L, d = t.shape
        qkv = self.qkv(self.ln1(t)).reshape(n, L, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        a = torch.softmax((qkv[0] @ qkv[1].transpose(-2, -1)) * self.dh ** -0.5, dim=self.axis)
        t = t + self.proj((a @ qkv[2]).transpose(1, 2).reshape(n, L, d))
        t = t + self.mlp2(torch.relu(self.mlp1(self.ln2(t))))
        return self.head(self.ln3(t).mean(1))


def run_ort(path, images, level, optimized):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.optimized_model_filepath = optimized
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = (images.astype(np.float32) * np.float32(1 / 255) - np.float32(0.5)) / np.float32(0.25)
    return sess.run(None, {sess.get_inputs()[0].name: x.transpose(0, 3, 1, 2).copy()})[0]


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-qsoftmax-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    torch.manual_seed(3)
    nets = {"last": Attention(-1).eval()}
    nets["axis2"] = Attention(2).eval()
    nets["axis2"].load_state_dict(nets["last"].state_dict())
    rng = np.random.default_rng(3)
    # smooth random images (a 4x4 grid upsampled, plus noise) so the attention has something to look at
    coarse = rng.integers(0, 256, (556, 4, 4, 3)).astype(np.float32)
    images = np.clip(coarse.repeat(4, 1).repeat(4, 2) + rng.normal(0, 24, (556, 16, 16, 3)), 0, 255).astype(np.uint8)
    x = torch.from_numpy((images.astype(np.float32) / 255 - 0.5) / 0.25).permute(0, 3, 1, 2)
    val = images[256:]
    flags = reduce_range_flags("the ort-cpu plan")
    for net_name, net in nets.items():
        m = J(f"{net_name}.onnx")
        torch.onnx.export(net, x[:2], m, input_names=["x"], output_names=["logits"], opset_version=13,
                          dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
        sm = [n for n in onnx.load(m).graph.node if n.op_type == "Softmax"]
        check(f"{net_name}: the model has one Softmax", len(sm) == 1)
        with torch.no_grad():
            labels = net(x).argmax(1).numpy().astype(np.int64)
        for name, sl in (("calib", slice(0, 256)), ("val", slice(256, None))):
            with h5py.File(J(f"{net_name}-{name}.h5"), "w") as f:
                f["images"] = images[sl]
                f["labels"] = labels[sl]
        rc, _, err = ptq("calibrate", "--model", m, "--data", J(f"{net_name}-calib.h5"), "--preprocess", PRE,
                         "--out", J(f"{net_name}.h5"))
        check(f"{net_name}: calibrate", rc == 0, err.strip()[-300:])
        plans = [("ort-cpu", ["--target", "ort-cpu", *flags], "uint8", 1)]
        if net_name == "last":
            plans += [("ort-int8", ["--placement", "ort", *flags], "int8", 1),
                      ("fp32-out", ["--target", "ort-cpu", *flags], "fp32", 0)]
        for tag, pflags, prec, want_fused in plans:
            plan, qdq, logits = (J(f"{net_name}-{tag}{ext}") for ext in (".json", ".onnx", ".npy"))
            rc, _, err = ptq("plan", J(f"{net_name}.h5"), "--model", m, "--method", "minmax", *pflags, "--out", plan)
            check(f"{net_name} {tag}: plan", rc == 0, err.strip()[-300:])
            if rc:
                continue
            p = json.load(open(plan))
            if tag == "fp32-out":  # by hand: the Softmax's output left in float
                for e in p["tensors"]:
                    if e["name"] == sm[0].output[0]:
                        e.update(precision="fp32", scales=[], source="by hand")
                        e.pop("zero_point", None)
                json.dump(p, open(plan, "w"))
            precs = {e["name"]: e["precision"] for e in p["tensors"]}
            check(f"{net_name} {tag}: the plan rounds the Softmax's input to {prec if want_fused else 'uint8'} and "
                  f"its output to {prec}", precs.get(sm[0].output[0]) == prec and
                  precs.get(sm[0].input[0]) == (prec if want_fused else "uint8"),
                  f"{precs.get(sm[0].input[0])} {precs.get(sm[0].output[0])}")
            rc, _, err = ptq("validate", "--model", m, "--plan", plan, "--data", J(f"{net_name}-val.h5"),
                             "--preprocess", PRE, "--report", J(f"rep-{net_name}-{tag}"), "--logits", logits)
            check(f"{net_name} {tag}: validate --logits", rc == 0, err.strip()[-300:])
            rc2, _, err2 = ptq("export", "--format", "qdq", "--plan", plan, "--model", m, "--out", qdq)
            check(f"{net_name} {tag}: export --format qdq", rc2 == 0, err2.strip()[-300:])
            if rc or rc2:
                continue
            ours = np.load(logits)
            opt = J(f"{net_name}-{tag}.opt.onnx")
            theirs = run_ort(qdq, val, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, opt)
            fused = sum(n.op_type == "QLinearSoftmax" for n in onnx.load(opt).graph.node)
            check(f"{net_name} {tag}: onnxruntime's full optimizations run the Softmax as QLinearSoftmax: "
                  f"{'yes' if want_fused else 'no'}", fused == want_fused, f"{fused} QLinearSoftmax")
            scale = np.abs(ours).max()
            rel = float(np.median(np.abs(theirs - ours) / np.maximum(np.abs(ours), 1e-3 * scale)))
            agree = float((theirs.argmax(1) == ours.argmax(1)).mean())
            check(f"{net_name} {tag}: onnxruntime at ORT_ENABLE_ALL gives validate's logits (median relative "
                  f"difference <= 1e-5) and every prediction", rel <= 1e-5 and agree == 1.0,
                  f"{rel:.2e}, {100 * agree:.2f}%")
    return finish("qlinear_softmax_test")


if __name__ == "__main__":
    sys.exit(main())
