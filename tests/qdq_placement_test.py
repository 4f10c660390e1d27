#!/usr/bin/env python3
"""Simulation equals deployment on small constructed classifiers
(Fashion-MNIST input, random convolutions under a linear head fitted by
ridge regression on 4,000 training images), one per placement pattern: Conv->Clip and
Conv->BatchNorm->Relu with MaxPool between Convs and a Gemm head; two
Conv+activation branches joined by Concat with a MatMul head; a residual
Add of two Convs. For each, INT8 and FP8 default (trt) plans, the INT8
ort plan and the --target ort-cpu plan (uint8 activations with zero points,
int32 biases) are calibrated on 512 training images, validated by ptq on the
10,000 test images and exported as Q/DQ: onnxruntime's predictions on the export
agree with ptq's on >= 99.9% and top-1 within 0.05 point (FP8 and the ort
plan with basic graph optimizations; onnxruntime's int32 bias rounding
off, see run_ort's caller; the ort-cpu plan with all optimizations, and
onnxruntime must then run it on its integer kernels, QLinearConv; on a CPU
without VNNI, where those kernels saturate full-range weights, the ort-cpu
plan takes --reduce-range). The plans' quantized tensors are checked against the
placement rules, and, where scripts/bench-setup.sh made .venv-bench (its
onnxruntime.quantization needs ml_dtypes), the ort plan's against the
tensors onnxruntime's quantize_static (QDQ, symmetric) quantizes. A bias three
quantized Gemms share: the ort-cpu export's logits on onnxruntime within 5% of ptq's. A Conv channel of subnormal
or tiny (1e-33) weights with a bias of 1: the ort-cpu int32 bias does not saturate, the weight scale is
quantize_static's, onnxruntime's logits within 5% of ptq's.
Run by ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from ptqtest import FM, SRC, check, finish, fmnist_test, have_demo, ptq, reduce_range_flags
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

N_TEST = 10000
N_FIT = 4000
PREPROCESS = "scale=0.00392156862745098 mean=0.286 std=0.353 layout=NCHW channels=1"


class Builder:
    """A model under construction: nodes, initializers with He-scaled random weights."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, what):
        self.n += 1
        return f"{what}_{self.n}"

    def init(self, arr):
        name = self.name("w")
        self.inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out + "_node", **attrs))
        return out

    def conv(self, x, c_in, c_out, stride=1):
        w = self.rng.randn(c_out, c_in, 3, 3) * np.sqrt(2.0 / (c_in * 9))
        b = self.rng.randn(c_out) * 0.1
        return self.op("Conv", [x, self.init(w), self.init(b)], pads=[1, 1, 1, 1], strides=[stride, stride])

    def bn(self, x, c):
        r = self.rng
        return self.op("BatchNormalization", [x, self.init(1 + 0.1 * r.randn(c)), self.init(0.1 * r.randn(c)),
                                              self.init(0.1 * r.randn(c)), self.init(1 + 0.1 * r.rand(c))])

    def head(self, f, kind, n_feat):
        """A linear head on features f [N, n_feat]: Gemm (transB) or MatMul + Add; fitted later."""
        self.w = self.init(np.zeros((10, n_feat) if kind == "Gemm" else (n_feat, 10)))
        self.n_feat = n_feat
        self.b = self.init(np.zeros(10))
        self.features, self.kind = f, kind
        if kind == "Gemm":
            return self.op("Gemm", [f, self.w, self.b], transB=1)
        return self.op("Add", [self.op("MatMul", [f, self.w]), self.b])

    def model(self, x, logits, path):
        """Fits the head to the training images by least squares, then writes the model."""
        m = self.proto(x, logits, [self.features])
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        images, labels = fmnist_test(N_FIT, "train")
        f = sess.run([self.features], {x: normalized(images)})[0].astype(np.float64)
        # ridge regression on standardized features: no near-collinear feature gets a huge weight
        # that would turn rounding noise into prediction flips
        mu, sd = f.mean(axis=0), f.std(axis=0) + 1e-6
        z = (f - mu) / sd
        y = np.eye(10)[labels] - 0.1
        a = np.linalg.solve(z.T @ z + 0.1 * len(z) * np.eye(self.n_feat), z.T @ y)  # [n_feat, 10]
        w = a / sd[:, None]
        bias = -mu @ w
        w = w.T if self.kind == "Gemm" else w
        for i, t in enumerate(self.inits):
            if t.name in (self.w, self.b):
                self.inits[i] = numpy_helper.from_array((w if t.name == self.w else bias).astype(np.float32), t.name)
        m = self.proto(x, logits, [])
        onnx.checker.check_model(m)
        onnx.save(m, path)

    def proto(self, x, logits, extra_outputs):
        graph = helper.make_graph(self.nodes, "placement", [
            helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", 1, 28, 28])],
            [helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["N", 10])] +
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in extra_outputs], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        helper.set_model_props(m, {"ptq.preprocess": PREPROCESS})
        return m


def normalized(images):
    """uint8 [N, 28, 28] as the models' float input, the preprocessing ptq applies."""
    x = (images.astype(np.float32) * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353)
    return x.reshape(-1, 1, 28, 28).astype(np.float32)


# The models' layers have more than 16 channels, so that TensorRT runs each one in INT8 and FP8
# (trt.small-layer, tested by small_layers, keeps none of them in FP16).
def clip_maxpool_gemm(path):
    """Conv->Clip, Conv->BN->Relu, MaxPool, Conv->Relu, GAP, Flatten, Gemm."""
    b = Builder(1)
    c = b.op("Clip", [b.conv("input", 1, 24), b.init(np.array(0.0)), b.init(np.array(6.0))])
    bn = b.bn(b.conv(c, 24, 32), 32)
    r = b.op("Relu", [bn])
    p = b.op("MaxPool", [r], kernel_shape=[2, 2], strides=[2, 2])
    y = b.op("Relu", [b.conv(p, 32, 32)])
    f = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    b.model("input", b.head(f, "Gemm", 32), path)
    return {"trt": {p: "trt.commutes", y: "trt.unquantized"},
            "ort-cpu": {bn: "ort.removed-activation", r: "ort.activation", c: "ort.activation"}}


def concat_matmul(path):
    """Conv->Relu, two branches (Conv->Relu, Conv->LeakyRelu), Concat, Conv->Relu, GAP, Flatten, MatMul+Add."""
    b = Builder(2)
    x = b.op("Relu", [b.conv("input", 1, 24)])
    r1 = b.op("Relu", [b.conv(x, 24, 24)])
    r2 = b.op("LeakyRelu", [b.conv(x, 24, 24)], alpha=0.1)
    c = b.op("Concat", [r1, r2], axis=1)
    y = b.op("Relu", [b.conv(c, 48, 32, stride=2)])
    f = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    b.model("input", b.head(f, "MatMul", 32), path)
    return {"trt": {c: "trt.commutes", r1: "trt.unquantized", r2: "trt.unquantized", x: "trt.weighted-input"}}


def residual(path):
    """Conv->Relu, then Relu(Add(Conv(Conv->Relu), Conv skip)) twice, GAP, Flatten, Gemm."""
    b = Builder(3)
    x = b.op("Relu", [b.conv("input", 1, 24)])
    marks, cpu_marks = {}, {}
    for c_in, c_out in ((24, 32), (32, 32)):
        main = b.conv(b.op("Relu", [b.conv(x, c_in, c_out)]), c_out, c_out)
        skip = b.conv(x, c_in, c_out)
        a = b.op("Add", [main, skip])
        marks.update({main: "trt.fused", skip: "trt.residual-input", a: "trt.fused"})  # fused into the main branch
        cpu_marks.update({a: "ort.removed-activation", main: "ort.op-io", skip: "ort.op-io"})
        x = b.op("Relu", [a])
    f = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    b.model("input", b.head(f, "Gemm", 32), path)
    return {"trt": marks, "ort-cpu": cpu_marks}


def small_layers(path):
    """Conv(1->8)->Relu, Conv(8->8)->Relu, Conv(8->24)->Relu, Conv(24->24)->Relu, GAP, Flatten, Gemm: layers
    TensorRT keeps in FP16 (trt.small-layer). INT8: 8 to 8 channels (neither 16 or more, not the model's input);
    FP8 also 8 to 24 (16 channels or fewer on one side)."""
    b = Builder(4)
    x = b.op("Relu", [b.conv("input", 1, 8)])
    y1 = b.op("Relu", [b.conv(x, 8, 8)])
    y2 = b.op("Relu", [b.conv(y1, 8, 24)])
    y3 = b.op("Relu", [b.conv(y2, 24, 24)])
    f = b.op("Flatten", [b.op("GlobalAveragePool", [y3])])
    b.model("input", b.head(f, "Gemm", 24), path)
    return {"trt int8": {x: "trt.small-layer", y1: "trt.weighted-input", y2: "trt.weighted-input"},
            "trt fp8": {x: "trt.small-layer", y1: "trt.small-layer", y2: "trt.weighted-input"}}


# run with .venv-bench's python: the tensors quantize_static (QDQ, symmetric INT8) quantizes
ORT_QUANTIZE = r"""
import json, sys, numpy as np, onnx
from onnxruntime.quantization import quantize_static, QuantFormat, QuantType, CalibrationDataReader
src, dst = sys.argv[1:3]
x = np.random.RandomState(0).randn(32, 1, 28, 28).astype(np.float32)
class R(CalibrationDataReader):
    def __init__(s): s.it = iter([{"input": x[i:i + 8]} for i in range(0, 32, 8)])
    def get_next(s): return next(s.it, None)
quantize_static(src, dst, R(), quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8,
                weight_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
m = onnx.load(dst)
outs = {o.name for o in m.graph.output}
names = [n.input[0] for n in m.graph.node if n.op_type == "QuantizeLinear"]
print(json.dumps(sorted(n[:-len("_QuantizeLinear_Input")] if n.endswith("_QuantizeLinear_Input") else n
                        for n in names)))
"""


def shared_bias(J, images, cpu_flags):
    """Three quantized Gemms reading one bias (found with fuzz/fuzz_onnx_run.c's hostile models): an ort-cpu export
    quantized it once, at the first Gemm's scales, and onnxruntime's fused integer Gemms read those int32 codes at
    the others', so its logits left ptq's simulation by 12 times the largest one; each reader now has codes of its
    own, and the two differ by what onnxruntime's integer requantization does (under 1% here, 5% allowed)."""
    b = Builder(5)
    shared = b.init(b.rng.randn(24) * 0.5)
    h = b.op("Flatten", [b.op("GlobalAveragePool", [b.op("Relu", [b.conv("input", 1, 24)])])])
    for i in range(3):  # the first Gemm's output quantized as it is, the others' after a Relu
        h = b.op("Gemm", [h, b.init(b.rng.randn(24, 24) * np.sqrt(2.0 / 24)), shared], transB=1)
        h = b.op("Relu", [h]) if i else h
    b.model("input", b.head(h, "Gemm", 24), J("shared_bias.onnx"))
    plan, logits, qdq = J("sb.json"), J("sb.npy"), J("sb.onnx")
    for args in (("calibrate", "--model", J("shared_bias.onnx"), "--data", J("train.h5"), "--samples", "256",
                  "--out", J("sb.h5")),
                 ("plan", J("sb.h5"), "--model", J("shared_bias.onnx"), "--target", "ort-cpu", *cpu_flags,
                  "--out", plan),
                 ("validate", "--model", J("shared_bias.onnx"), "--plan", plan, "--data", J("test.h5"), "--limit",
                  "500", "--report", J("sb-rep"), "--logits", logits),
                 ("export", "--format", "qdq", "--plan", plan, "--model", J("shared_bias.onnx"), "--out", qdq)):
        rc, _, err = ptq(*args)
        check(f"shared bias: {args[0]}", rc == 0, err.strip()[-300:])
        if rc != 0:
            return
    ours = np.load(logits)
    theirs = run_ort(qdq, images[:500])
    diff = float(np.abs(ours - theirs).max() / np.abs(ours).max())
    check("shared bias: onnxruntime's integer kernels give ptq's logits (max diff < 5% of the largest)",
          diff < 0.05, f"{diff:.2e}")


def subnormal_channel(J, images, cpu_flags):
    """A quantized Conv whose channel 3 holds only subnormal weights (a pruned filter's leftovers) and a bias of 1:
    max|w| / 127 is below the smallest normal float32, where onnxruntime's quantize_static (compute_scale_zp) takes
    the scale 1. ptq took FLT_MIN, so the ort-cpu int32 bias's scale (input scale x FLT_MIN) was subnormal and the
    bias saturated at INT32_MAX codes: 1 became 2e-31, in validate and in onnxruntime alike. Every channel's
    int32 codes must give back its bias within half its scale."""
    channel_bias(J, images, cpu_flags, "subnormal channel", 1e-40)


def tiny_channel(J, images, cpu_flags):
    """The same with weights of 1e-33 in channel 3: max|w| / 127 = 7.9e-36 is a normal float32, but the int32 bias
    scale (input scale x that) is ~1e-37 and the bias of 1 saturated at INT32_MAX codes (it came back 4.6e-28).
    onnxruntime's quantize_static raises such a weight scale (_adjust_weight_scale_for_int32_bias) to 1.0001 x
    2 |bias| / (2^32 - 2) / input scale, and ptq's plan now does the same: that scale exactly, the bias given back."""
    channel_bias(J, images, cpu_flags, "tiny channel", 1e-33)


def channel_bias(J, images, cpu_flags, tag, tiny):
    """A Conv whose channel 3 holds weights of +-tiny and a bias of 1, planned for ort-cpu: the export's int32 bias
    gives back every channel's bias within half its scale, a raised weight scale is onnxruntime's, and onnxruntime's
    integer kernels on the export give ptq validate's logits (5% of the largest allowed, as shared_bias)."""
    b = Builder(6)
    h = b.op("Relu", [b.conv("input", 1, 24)])
    x_name = h
    h = b.conv(h, 24, 24)
    w_name, b_name = b.nodes[-1].input[1], b.nodes[-1].input[2]
    for i, t in enumerate(b.inits):
        a = numpy_helper.to_array(t).copy()
        if t.name == w_name:
            a[3] = np.float32(tiny) * np.sign(b.rng.randn(*a[3].shape))
            weight = a
        elif t.name == b_name:
            a[3] = 1.0
            bias = a
        else:
            continue
        b.inits[i] = numpy_helper.from_array(a, t.name)
    h = b.op("Flatten", [b.op("GlobalAveragePool", [b.op("Relu", [h])])])
    model = J(f"{tag}.onnx")
    b.model("input", b.head(h, "Gemm", 24), model)
    plan, qdq, logits = J(f"{tag}.json"), J(f"{tag}-qdq.onnx"), J(f"{tag}.npy")
    for args in (("calibrate", "--model", model, "--data", J("train.h5"), "--samples", "256", "--out", J("cb.h5")),
                 ("plan", J("cb.h5"), "--model", model, "--target", "ort-cpu", *cpu_flags, "--out", plan),
                 ("validate", "--model", model, "--plan", plan, "--data", J("test.h5"), "--limit", "500",
                  "--report", J("cb-rep"), "--logits", logits),
                 ("export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq)):
        rc, _, err = ptq(*args)
        check(f"{tag}: {args[0]}", rc == 0, err.strip()[-300:])
        if rc != 0:
            return
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(qdq).graph.initializer}
    q = next((a for n, a in got.items() if a.dtype == np.int32 and b_name in n and a.shape == bias.shape), None)
    scale = next((a for n, a in got.items() if a.dtype == np.float32 and b_name in n and n.endswith("scale")), None)
    back = None if q is None or scale is None else q.astype(np.float64) * scale.astype(np.float64)
    check(f"{tag}: the ort-cpu int32 bias gives back every channel's bias within half its scale",
          back is not None and bool(np.all(np.abs(back - bias) <= 0.5 * scale)),
          "no int32 bias" if back is None else f"channel 3: {bias[3]} came back {back[3]:.3g} (scale {scale[3]:.3g})")
    # onnxruntime's _adjust_weight_scale_for_int32_bias (qdq_quantizer.py), per channel, in float64 as numpy's
    entries = {e["name"]: e for e in json.load(open(plan))["tensors"]}
    x_scale = np.float64(np.float32(entries[x_name]["scales"][0]))
    w_scale = np.array(entries[w_name]["scales"], np.float32)
    qmax = 64.0 if cpu_flags else 127.0
    plain = (np.abs(weight).reshape(len(weight), -1).max(axis=1).astype(np.float64) / qmax).astype(np.float32)
    plain = np.where(plain >= np.finfo(np.float32).tiny, plain, np.float32(1))
    want_bias = 1.0001 * (2.0 * np.abs(bias.astype(np.float64))) / (2.0 ** 32 - 2)
    have = x_scale * plain.astype(np.float64)
    want = np.where((have < want_bias) & (have > 0), (plain * (want_bias / have)).astype(np.float32), plain)
    check(f"{tag}: the weight scales are onnxruntime's quantize_static's", bool(np.all(w_scale == want)),
          f"channel 3: {w_scale[3]:.8g}, onnxruntime's {want[3]:.8g}")
    ours = np.load(logits)
    theirs = run_ort(qdq, images[:500])
    diff = float(np.abs(ours - theirs).max() / np.abs(ours).max())
    check(f"{tag}: onnxruntime's integer kernels give ptq's logits (max diff < 5% of the largest)", diff < 0.05,
          f"{diff:.2e}")


def run_ort(path, images, level=None, disabled=()):
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled))
    x = normalized(images)
    return np.concatenate([sess.run(None, {"input": x[i:i + 500]})[0] for i in range(0, len(x), 500)])


def optimized_ops(path):
    """The op counts of the model onnxruntime (all optimizations, CPU) actually runs."""
    so = ort.SessionOptions()
    so.optimized_model_filepath = path + ".opt.onnx"
    so.log_severity_level = 3
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ops = {}
    for n in onnx.load(so.optimized_model_filepath).graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return ops


def main():
    if not have_demo():
        print("skipped: Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-place-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    images, labels = fmnist_test(N_TEST)
    for split, idx in (("train", "train"), ("test", "t10k")):
        rc, _, err = ptq("data", "convert", "--images", f"{FM}/{idx}-images-idx3-ubyte.gz", "--labels",
                         f"{FM}/{idx}-labels-idx1-ubyte.gz", "--out", J(f"{split}.h5"))
        check(f"data convert {split}", rc == 0, err.strip()[-300:])
    bench_py = os.path.join(SRC, ".venv-bench", "bin", "python3")
    cpu_flags = reduce_range_flags("the ort-cpu plan")
    shared_bias(J, images, cpu_flags)
    subnormal_channel(J, images, cpu_flags)
    tiny_channel(J, images, cpu_flags)
    for make in (clip_maxpool_gemm, concat_matmul, residual, small_layers):
        model = J(make.__name__ + ".onnx")
        marks = make(model)
        rc, _, err = ptq("calibrate", "--model", model, "--data", J("train.h5"), "--samples", "512", "--seed", "0",
                         "--out", J("c.h5"))
        check(f"{make.__name__}: calibrate", rc == 0, err.strip()[-300:])
        basic = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        cases = (("int8", [], None), ("fp8", ["--core", "fp8"], basic), ("int8-ort", ["--placement", "ort"], basic),
                 ("uint8-ort-cpu", ["--target", "ort-cpu", *cpu_flags], None))
        for case, flags, level in cases[:2] if make is small_layers else cases:  # its rule is trt's
            tag = f"{make.__name__} {case}"
            plan, logits, qdq = J(f"{case}.json"), J(f"{case}.npy"), J(f"{case}.onnx")
            ok = True
            for args in (("plan", J("c.h5"), "--model", model, *flags, "--out", plan),
                         ("validate", "--model", model, "--plan", plan, "--data", J("test.h5"), "--limit",
                          str(N_TEST), "--report", J("rep"), "--logits", logits),
                         ("export", "--format", "qdq", "--plan", plan, "--model", model, "--out", qdq)):
                rc, _, err = ptq(*args)
                ok = ok and rc == 0
                check(f"{tag}: {args[0]}", rc == 0, err.strip()[-300:])
            if not ok:
                continue
            p = json.load(open(plan))
            rules = {e["name"]: e.get("rule") for e in p["tensors"] if e["kind"] == "activation"}
            key = p.get("target", p["placement"])
            want = marks.get(f"{key} {case}", marks.get(key, {}))
            check(f"{tag}: placement rules", all(rules.get(n) == r for n, r in want.items()),
                  str({n: (rules.get(n), r) for n, r in want.items() if rules.get(n) != r}))
            if case == "int8-ort" and os.path.exists(bench_py):
                r = subprocess.run([bench_py, "-c", ORT_QUANTIZE, model, J("ort_q.onnx")], capture_output=True,
                                   text=True, timeout=600)
                theirs = set(json.loads(r.stdout)) if r.returncode == 0 else None
                edges = {n for n, r in rules.items() if r == "edge"}
                ours = {n for n, r in rules.items() if r not in ("edge", "ort.unquantized")}
                theirs = theirs - edges if theirs is not None else None
                check(f"{tag}: the tensors quantize_static quantizes (edges aside)", theirs is not None and
                      theirs == ours, f"only onnxruntime: {sorted(theirs - ours) if theirs else r.stderr[-300:]}, "
                      f"only ptq: {sorted(ours - theirs) if theirs else ''}")
            rep = json.load(open(J("rep", "validate.json")))
            q_ptq = np.load(logits).argmax(axis=1)
            # onnxruntime's WeightBiasQuantization rounds each float bias of a quantized Conv/Gemm to
            # int32 at input scale x weight scale, which TensorRT does not (it adds the float bias) and
            # ptq's symmetric targets do not simulate; on these random-feature models, with many
            # near-ties, that flipped ~1% of predictions. The export therefore moves such a bias into
            # an Add after the Conv (ort-cpu simulates the int32 bias and keeps it): the model runs
            # with every optimization and gives what it gives with that rewrite off. The ort plan's
            # model runs with basic optimizations: the extended ones swap its Q/DQ pairs for
            # onnxruntime's integer kernels (QLinearAdd, ...), other numerics.
            q_ort = run_ort(qdq, images, level).argmax(axis=1)
            q_nobias = run_ort(qdq, images, level, ["WeightBiasQuantization"]).argmax(axis=1)
            check(f"{tag}: onnxruntime's bias rounding changes no prediction", case == "uint8-ort-cpu" or
                  bool((q_ort == q_nobias).all()), f"{int((q_ort != q_nobias).sum())} of {N_TEST} differ")
            if case != "uint8-ort-cpu":
                m = onnx.load(qdq)
                split = [n for n in m.graph.node if n.op_type == "Add" and n.output[0].endswith("/biased")]
                check(f"{tag}: float biases split into Adds after the convolutions", len(split) >= 1,
                      str(sorted(n.op_type for n in m.graph.node)))
            if case == "uint8-ort-cpu":
                zps = {e["zero_point"] for e in p["tensors"] if e["precision"] == "uint8"}
                check(f"{tag}: uint8 activations with zero points", p.get("target") == "ort-cpu" and
                      len(zps) > 1 and all(0 <= z <= 255 for z in zps), str(zps))
                ops = optimized_ops(qdq)
                check(f"{tag}: onnxruntime runs its integer kernels", ops.get("QLinearConv", 0) >= 2, str(ops))
            acc_ort = float((q_ort == labels).mean())
            agree = float((q_ort == q_ptq).mean())
            print(f"     {tag}: FP32 {100 * rep['top1_fp32']:.2f}%, ptq {100 * rep['top1_quant']:.2f}%, "
                  f"onnxruntime {100 * acc_ort:.2f}%, agreement {100 * agree:.2f}%")
            check(f"{tag}: top-1 within 0.05 point", abs(acc_ort - rep["top1_quant"]) <= 0.0005 + 1e-12,
                  f"onnxruntime {100 * acc_ort:.2f}%, ptq {100 * rep['top1_quant']:.2f}%")
            check(f"{tag}: predictions agree on >= 99.9%", agree >= 0.999, f"{100 * agree:.2f}% of {N_TEST}")
    if not os.path.exists(bench_py):
        print("note: no .venv-bench (scripts/bench-setup.sh): quantize_static's placement not compared")
    return finish("qdq_placement_test")


if __name__ == "__main__":
    sys.exit(main())
