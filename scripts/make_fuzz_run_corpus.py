#!/usr/bin/env python3
"""Writes the seed corpus of the onnx_run fuzz harness (fuzz/fuzz_onnx_run.c) into fuzz/corpus/onnx_run/: small
models of one or a few ops each with the attributes the executor reads (pads, strides, dilations, groups, axes,
perms, Slice steps, Gather indices, Reshape/Expand shapes, Pad modes, Split sizes, negative axes), the first nodes
of each model under models/ (weights and all, cut to under 64 KiB) and the small models of tests/data/onnx (but
those of ops ptq does not know).
Run from the repo root: .venv/bin/python3 scripts/make_fuzz_run_corpus.py
"""
import glob
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = "fuzz/corpus/onnx_run"
MAX_BYTES = 64 * 1024  # scripts/fuzz.sh's -max_len
rng = np.random.default_rng(7)


def w(name, *shape):
    return numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)


def i64(name, vals):
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def save(name, nodes, inits=(), in_shape=("N", 3, 6, 6), out="y", opset=13, extra_inputs=()):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))
    y = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, name, [x, *extra_inputs], [y], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="ptq-fuzz")
    m.ir_version = 8
    data = m.SerializeToString()
    assert len(data) <= MAX_BYTES, name
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(data)


def node(op, ins, outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


def synthetic():
    save("conv_pads_strides", [node("Conv", ["x", "w", "b"], pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2])],
         [w("w", 4, 3, 3, 3), w("b", 4)])
    save("conv_group_relu", [node("Conv", ["x", "w"], ["c"], group=3, auto_pad="SAME_UPPER"), node("Relu", ["c"])],
         [w("w", 3, 1, 3, 3)])
    save("conv1d", [node("Conv", ["x", "w"], pads=[2, 1], strides=[3])], [w("w", 3, 3, 2)], in_shape=("N", 3, 9))
    save("convtranspose", [node("ConvTranspose", ["x", "w", "b"], strides=[2, 2], pads=[1, 0, 0, 1],
                                output_padding=[1, 0])], [w("w", 3, 2, 3, 3), w("b", 2)])
    save("convtranspose_group", [node("ConvTranspose", ["x", "w"], group=3, dilations=[2, 1],
                                      output_shape=[9, 7], strides=[1, 1])], [w("w", 3, 1, 2, 2)])
    save("maxpool", [node("MaxPool", ["x"], kernel_shape=[3, 2], strides=[2, 1],
                          pads=[1, 0, 1, 1], ceil_mode=1)])
    save("avgpool", [node("AveragePool", ["x"], kernel_shape=[2, 3], pads=[0, 1, 1, 1], count_include_pad=1)])
    save("gap_gemm", [node("GlobalAveragePool", ["x"], ["p"]), node("Flatten", ["p"], ["f"], axis=1),
                      node("Gemm", ["f", "w", "b"], transB=1, alpha=0.5)], [w("w", 5, 3), w("b", 5)])
    save("bn_clip", [node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["n"], epsilon=1e-3),
                     node("Clip", ["n", "lo", "hi"])],
         [w("s", 3), w("bb", 3), w("m", 3), numpy_helper.from_array(np.array([0.5, 2, 1], np.float32), "v"),
          numpy_helper.from_array(np.array(-0.5, np.float32), "lo"),
          numpy_helper.from_array(np.array(0.7, np.float32), "hi")])
    save("transpose_matmul", [node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]), node("MatMul", ["t", "w"])],
         [w("w", 6, 4)])
    save("slice_steps", [node("Slice", ["x", "st", "en", "ax", "sp"])],
         [i64("st", [-1, 5, 0]), i64("en", [-100, -7, 2 ** 62]), i64("ax", [-1, 2, 1]), i64("sp", [-2, -1, 1])])
    save("gather_neg", [node("Gather", ["x", "ix"], axis=-1)], [i64("ix", [[-1, 0], [5, -6]])])
    save("gather_input_ix", [node("Gather", ["x", "ix"], axis=1)],
         extra_inputs=[helper.make_tensor_value_info("ix", TensorProto.INT64, [3])])
    save("reshape_expand", [node("Reshape", ["x", "sh"], ["r"]), node("Expand", ["r", "ex"])],
         [i64("sh", [0, -1, 1, 6]), i64("ex", [1, 1, 2, 1])])
    save("pad_reflect", [node("Pad", ["x", "pd"], mode="reflect")], [i64("pd", [0, 0, 2, 1, 0, 0, 1, 3])])
    save("pad_edge", [node("Pad", ["x", "pd", "cv"], mode="edge")],
         [i64("pd", [0, 1, 0, 5, 0, 0, 1, 0]), numpy_helper.from_array(np.array(1.5, np.float32), "cv")])
    save("split_concat", [node("Split", ["x", "sz"], ["a", "b"], axis=-2), node("Concat", ["b", "a"], axis=2)],
         [i64("sz", [2, 4])])
    save("squeeze_unsqueeze", [node("Unsqueeze", ["x", "ax"], ["u"]), node("Squeeze", ["u", "ax"])],
         [i64("ax", [-1])])
    save("softmax_reducemean", [node("Softmax", ["x"], ["s"], axis=-3),
                                node("ReduceMean", ["s"], axes=[1, -1], keepdims=0)])
    save("layernorm", [node("LayerNormalization", ["x", "g", "b"], axis=-2, epsilon=1e-4)],
         [w("g", 6, 6), w("b", 6, 6)], opset=17)
    save("shape_chain", [node("Shape", ["x"], ["s"], start=-2), node("ConstantOfShape", ["s"], ["z"]),
                         node("Add", ["x", "z"], ["a"]), node("Mul", ["a", "a"], ["m"]), node("Sub", ["m", "x"], ["d"]),
                         node("Div", ["d", "two"])],
         [numpy_helper.from_array(np.array(2.0, np.float32), "two")], opset=15)
    save("activations", [node("LeakyRelu", ["x"], ["a"], alpha=0.2), node("Sigmoid", ["a"], ["b"]),
                         node("HardSigmoid", ["b"], ["c"]), node("HardSwish", ["c"], ["d"]), node("Tanh", ["d"], ["e"]),
                         node("Erf", ["e"], ["f"]), node("Sqrt", ["f"], ["g"]), node("Pow", ["g", "two"])],
         [numpy_helper.from_array(np.array(2.0, np.float32), "two")], opset=14)
    save("where_equal", [node("Equal", ["x", "x"], ["eq"]), node("Not", ["eq"], ["ne"]),
                         node("Where", ["ne", "x", "zero"])],
         [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    save("range_cast", [node("Range", ["s", "l", "d"], ["r"]), node("Cast", ["r"], ["c"], to=TensorProto.FLOAT),
                        node("Add", ["x", "c"])], [i64("s", 0), i64("l", 6), i64("d", 1)])
    save("scatternd", [node("ScatterND", ["x", "ix", "up"])],
         [i64("ix", [[0, 1, -1], [0, 0, 2]]), w("up", 2, 6)], in_shape=(1, 3, 6, 6))
    save("mod_flatten", [node("Mod", ["x", "k"], ["m"], fmod=1), node("Flatten", ["m"], axis=-1)],
         [numpy_helper.from_array(np.array(0.75, np.float32), "k")])

def model_prefixes():
    for path in sorted(glob.glob("models/*.onnx")):
        m = onnx.load(path)
        base = os.path.splitext(os.path.basename(path))[0]
        for n in (3, 6, 12):
            if n > len(m.graph.node):
                break
            outs = [m.graph.node[n - 1].output[0]]
            ins = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
            try:
                sub = onnx.utils.Extractor(m).extract_model(ins, outs)
            except Exception as e:  # a prefix the extractor cannot cut
                print(f"{base}: first {n} nodes: {e}")
                continue
            data = sub.SerializeToString()
            if len(data) <= MAX_BYTES:
                with open(os.path.join(OUT, f"{base}_first{n}.onnx"), "wb") as f:
                    f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    synthetic()
    model_prefixes()
    for path in sorted(glob.glob("tests/data/onnx/*.onnx")) + sorted(glob.glob("fuzz/corpus/onnx/*.onnx")):
        if os.path.getsize(path) <= MAX_BYTES and "com.example" not in open(path, "rb").read().decode("latin-1"):
            shutil.copy(path, os.path.join(OUT, os.path.basename(path)))


if __name__ == "__main__":
    main()
