"""ptq smooth (SmoothQuant-style migration, issue 13 item 3) against
onnxruntime. A small graph with an outlier channel: x [N, 16] -> MatMul ->
LayerNormalization (channel 3's scale 60x the others) -> a MatMul and a
Gemm (transB) reading it -> Add -> Relu -> MatMul -> logits [N, 6]. Checks:
the smoothed model's FP32 logits equal the original's in onnxruntime
(function-preserving), the outlier channel's spread shrinks, the default
INT8 plan of the smoothed model has a better logits SQNR than the
original's (measured), alpha 0 changes nothing, and refusals (a model with
nothing to smooth, a bad --alpha, --out equal to --model) write nothing.
Then the ViT (models/fmnist_vit.onnx), when it and Fashion-MNIST are here:
smoothed, its onnxruntime logits match the original's."""
import json
import os
import sys
import tempfile

from ptqtest import FM, MODEL, SRC, check, finish, fmnist_test, ptq

try:
    import h5py
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    import onnx
except ImportError as e:  # pragma: no cover
    print(f"smooth_test: skipped ({e})")
    sys.exit(77)


def outlier_model(path, rng):
    c = 16  # K and N of 16: TensorRT runs the MatMuls in INT8 (trt.small-layer)
    scale = np.ones(c, np.float32) + 0.1 * rng.standard_normal(c).astype(np.float32)
    scale[3] = 60.0
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in (
        ("w0", rng.standard_normal((c, c)) / np.sqrt(c)), ("ln_scale", scale), ("ln_bias", 0.1 * rng.standard_normal(c)),
        ("w1", rng.standard_normal((c, c)) / np.sqrt(c)), ("w2", rng.standard_normal((c, c)) / np.sqrt(c)),
        ("b2", 0.1 * rng.standard_normal(c)), ("w3", rng.standard_normal((c, 6)) / np.sqrt(c)))]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h0"]),
             helper.make_node("LayerNormalization", ["h0", "ln_scale", "ln_bias"], ["ln"], axis=-1),
             helper.make_node("MatMul", ["ln", "w1"], ["m1"]),
             helper.make_node("Gemm", ["ln", "w2", "b2"], ["m2"], transB=1),
             helper.make_node("Add", ["m1", "m2"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("MatMul", ["r", "w3"], ["logits"])]
    g = helper.make_graph(nodes, "outlier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 6])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def ort_logits(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def rel(a, b):
    return float(np.max(np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)))


def sqnr(tmp, model, data, tag):
    """The default INT8 plan's logits SQNR (dB) from calibrate -> plan -> validate on data."""
    J = lambda p: os.path.join(tmp, f"{tag}-{p}")  # noqa: E731
    for args in (("calibrate", "--model", model, "--data", data, "--out", J("calib.h5")),
                 ("plan", J("calib.h5"), "--model", model, "--out", J("plan.json")),
                 ("validate", "--model", model, "--plan", J("plan.json"), "--data", data, "--report", J("report"))):
        rc, _, err = ptq(*args)
        if rc != 0:
            return None, f"{args[0]}: {err.strip()[-300:]}"
    return json.load(open(os.path.join(J("report"), "validate.json")))["logits"]["sqnr_db"], ""


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-smooth-")
    J = lambda p: os.path.join(tmp, p)  # noqa: E731
    rng = np.random.default_rng(0)
    model = J("outlier.onnx")
    outlier_model(model, rng)
    x = rng.standard_normal((512, 16)).astype(np.float32)
    labels = ort_logits(model, {"x": x}).argmax(1)
    with h5py.File(J("data.h5"), "w") as f:
        f["x"] = x
        f["labels"] = labels.astype(np.int64)

    rc, out, err = ptq("smooth", "--model", model, "--data", J("data.h5"), "--out", J("smooth.onnx"), "--json")
    rep = json.loads(out) if rc == 0 else {}
    check("smooth: exit 0, one group (the LayerNorm read by a MatMul and a Gemm)",
          rc == 0 and len(rep.get("groups", [])) == 1 and rep["groups"][0]["consumers"] == 2, err.strip()[-300:])
    if rc == 0:
        g = rep["groups"][0]
        check("the outlier channel's spread (max/median of max|x|) shrinks at alpha 0.5",
              g["spread_before"] > 10 and g["spread_after"] < g["spread_before"] / 3, str(g))
        want, got = ort_logits(model, {"x": x}), ort_logits(J("smooth.onnx"), {"x": x})
        check("function-preserving: onnxruntime's logits of the smoothed model equal the original's",
              rel(got, want) < 1e-5, f"rel {rel(got, want):.2e}")
        sm = onnx.load(J("smooth.onnx"))
        names = {i.name for i in sm.graph.initializer}
        check("the LayerNorm scale and bias and both weights are replaced, the rest kept",
              {"ln_scale.smooth", "ln_bias.smooth", "w1.smooth", "w2.smooth", "w0", "w3"} <= names
              and not names & {"ln_scale", "ln_bias", "w1", "w2"}, str(sorted(names)))
        before, why0 = sqnr(tmp, model, J("data.h5"), "orig")
        after, why1 = sqnr(tmp, J("smooth.onnx"), J("data.h5"), "smooth")
        print(f"  default INT8 plan, logits SQNR: original {before} dB, smoothed {after} dB")
        check("the default INT8 plan of the smoothed model has a better logits SQNR (by >= 3 dB)",
              before is not None and after is not None and after >= before + 3, f"{before} -> {after} {why0}{why1}")
    rc, _, err = ptq("smooth", "--model", model, "--data", J("data.h5"), "--out", J("a0.onnx"), "--alpha", "0")
    check("alpha 0 runs and stays function-preserving",
          rc == 0 and rel(ort_logits(J("a0.onnx"), {"x": x}), ort_logits(model, {"x": x})) < 1e-5, err.strip()[-300:])

    def refused(name, args, want, fragment, out_file):
        rc, _, err = ptq("smooth", *args)
        check(name, rc == want and fragment in err and not os.path.exists(out_file), f"exit {rc}: {err.strip()[-300:]}")

    refused("--alpha 1.5: exit 2", ["--model", model, "--data", J("data.h5"), "--out", J("b.onnx"), "--alpha", "1.5"],
            2, "--alpha", J("b.onnx"))
    refused("--alpha banana: exit 2", ["--model", model, "--data", J("data.h5"), "--out", J("b.onnx"), "--alpha",
                                       "banana"], 2, "--alpha", J("b.onnx"))
    rc, _, err = ptq("smooth", "--model", model, "--data", J("data.h5"), "--out", model)
    check("--out equal to --model: exit 2, the model untouched", rc == 2 and os.path.getsize(model) > 0, err.strip())
    if os.path.exists(MODEL):
        images, lab = fmnist_test(64)
        with h5py.File(J("fm.h5"), "w") as f:
            f["images"] = images
            f["labels"] = lab
        refused("a CNN: nothing to smooth, exit 5", ["--model", MODEL, "--data", J("fm.h5"), "--out", J("c.onnx")], 5,
                "nothing to smooth", J("c.onnx"))

    vit = os.path.join(SRC, "models", "fmnist_vit.onnx")
    if os.path.exists(vit) and os.path.exists(f"{FM}/t10k-images-idx3-ubyte.gz"):
        images, lab = fmnist_test(300)
        with h5py.File(J("vit.h5"), "w") as f:
            f["images"] = images
            f["labels"] = lab
        rc, out, err = ptq("smooth", "--model", vit, "--data", J("vit.h5"), "--samples", "200", "--out",
                           J("vit_s.onnx"), "--json")
        n = len(json.loads(out)["groups"]) if rc == 0 else 0
        check("the ViT: every pre-attention and pre-MLP LayerNorm smoothed (8)", rc == 0 and n == 8, err.strip()[-300:])
        if rc == 0:
            xv = ((images[:, None].astype(np.float32) / 255) - 0.286) / 0.353
            a, b = ort_logits(vit, {"input": xv}), ort_logits(J("vit_s.onnx"), {"input": xv})
            check("the smoothed ViT's onnxruntime logits equal the original's",
                  rel(b, a) < 1e-4 and (a.argmax(1) == b.argmax(1)).mean() >= 0.999, f"rel {rel(b, a):.2e}")
    return finish("smooth_test")


if __name__ == "__main__":
    sys.exit(main())
