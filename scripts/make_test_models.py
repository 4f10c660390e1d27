#!/usr/bin/env python3
"""Writes the small ONNX fixtures under tests/data/onnx/ that tests/test_onnx_load.c
and tests/test_onnx_malformed.c read, and checks each with onnx's own parser.

Needs onnx (Debian's /usr/bin/python3 has onnx 1.12) and numpy. Run from the repo root:
    /usr/bin/python3 scripts/make_test_models.py [--out tests/data/onnx]
Values follow formulas the C tests recompute (e.g. w[i] = 0.5*i - 1).
"""
import argparse
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


# ---- a few protobuf wire-format writers, for encodings onnx's python API never emits ----

def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num, wire):
    return varint((num << 3) | wire)


def f_varint(num, v):
    return key(num, 0) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return key(num, 2) + varint(len(b)) + b


def f_fixed32(num, x):
    return key(num, 5) + struct.pack("<f", x)


def packed_varints(num, vals):
    return f_bytes(num, b"".join(varint(v) for v in vals))


def packed_floats(num, vals):
    return f_bytes(num, struct.pack("<%df" % len(vals), *vals))


def tensor_bytes(name, dtype, dims, body, packed_dims=False):
    """A TensorProto: name, data_type, dims (packed or one field each) and a prepared data body."""
    out = f_bytes(8, name) + f_varint(2, dtype)
    out += packed_varints(1, dims) if packed_dims else b"".join(f_varint(1, d) for d in dims)
    return out + body


def with_extra_graph_fields(model, extra):
    """Serialises model with extra GraphProto fields appended (protobuf merges them)."""
    graph = model.graph.SerializeToString() + extra
    rest = onnx.ModelProto()
    rest.CopyFrom(model)
    rest.ClearField("graph")
    return rest.SerializeToString() + f_bytes(7, graph)


# ---- fixtures ----

def graph_features(out):
    """Nodes out of topological order, an unnamed node, omitted optional input and
    output, a Constant node, an initializer also listed as a graph input, dim_param,
    value_info, metadata, a custom-domain node with every attribute kind."""
    w = (np.arange(12, dtype=np.float32) * 0.5 - 1).reshape(3, 4)
    nodes = [
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Add", ["mm", "c"], ["h"]),  # unnamed: the loader calls it Add_2
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
        helper.make_node("Constant", [], ["c"], name="const",
                         value=numpy_helper.from_array(np.array([1, 2, 3, 4], dtype=np.float32), "")),
        helper.make_node("Dropout", ["r"], ["y", ""], name="drop"),
        helper.make_node("Clip", ["y", "", "cmax"], ["z"], name="clip"),
        helper.make_node("Scale", ["x"], ["s"], name="scale", domain="com.example", alpha=0.5, count=3,
                         mode="fast", weights=[1.5, -2.0], axes=[0, -1, 2], names=["a", "bc"]),
    ]
    graph = helper.make_graph(
        nodes, "features",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "w"),
                     numpy_helper.from_array(np.array(6.0, dtype=np.float32), "cmax")],
        value_info=[helper.make_tensor_value_info("mm", TensorProto.FLOAT, ["N", 4])])
    model = helper.make_model(graph, producer_name="ptq-tests",
                              opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
    model.ir_version = 7
    helper.set_model_props(model, {"ptq.preprocess": "scale=1", "author": "ptq tests"})
    with open(os.path.join(out, "graph_features.onnx"), "wb") as f:
        f.write(model.SerializeToString())


def typed_fields(out):
    """Initializers in the typed *_data fields, packed and unpacked, and attributes
    with packed repeated scalars and no type field (IR version 1 style)."""
    f32 = [0.25 * i - 1 for i in range(6)]
    inits = [
        # float_data one field per value, dims packed
        tensor_bytes("f32_unpacked", TensorProto.FLOAT, [2, 3], b"".join(f_fixed32(4, v) for v in f32),
                     packed_dims=True),
        # float_data in two packed runs
        tensor_bytes("f32_split", TensorProto.FLOAT, [4], packed_floats(4, [1.5, -2.0]) + packed_floats(4, [3.25, 0.0])),
        tensor_bytes("i64_packed", TensorProto.INT64, [5], packed_varints(7, [-3, 0, 7, 1 << 40, -(1 << 62)])),
        tensor_bytes("i64_unpacked", TensorProto.INT64, [3], b"".join(f_varint(7, v) for v in [-1, 2, -300])),
        tensor_bytes("i8", TensorProto.INT8, [4], packed_varints(5, [-128, -1, 0, 127])),
        tensor_bytes("u8", TensorProto.UINT8, [3], b"".join(f_varint(5, v) for v in [0, 200, 255])),
        tensor_bytes("i16", TensorProto.INT16, [2], packed_varints(5, [-32768, 32767])),
        tensor_bytes("f16", TensorProto.FLOAT16, [3], packed_varints(5, [0x3C00, 0xC100, 0x7BFF])),
        tensor_bytes("bf16", TensorProto.BFLOAT16, [2], packed_varints(5, [0x3F80, 0xC020])),
        tensor_bytes("boolean", TensorProto.BOOL, [3], packed_varints(5, [1, 0, 1])),
        tensor_bytes("f64", TensorProto.DOUBLE, [2], f_bytes(10, struct.pack("<2d", 3.5, -1e300))),
        tensor_bytes("u32", TensorProto.UINT32, [2], packed_varints(11, [0, 4294967295])),
        tensor_bytes("u64", TensorProto.UINT64, [1], f_varint(11, (1 << 64) - 1)),
        tensor_bytes("scalar", TensorProto.FLOAT, [], f_fixed32(4, 42.0)),
        tensor_bytes("empty", TensorProto.FLOAT, [0, 3], b""),
    ]
    attrs = [
        f_bytes(1, "ints_packed") + f_varint(20, 7) + packed_varints(8, [1, -2, 300]),
        f_bytes(1, "floats_packed") + f_varint(20, 6) + packed_floats(7, [0.5, -1.25]),
        f_bytes(1, "untyped_int") + f_varint(3, 7),
        f_bytes(1, "untyped_floats") + f_fixed32(7, 2.0) + f_fixed32(7, 4.0),
    ]
    node = f_bytes(1, "x") + f_bytes(2, "y2") + f_bytes(4, "Attrs") + f_bytes(7, "com.example")
    node += b"".join(f_bytes(5, a) for a in attrs)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="id")], "typed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, producer_name="ptq-tests",
                              opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
    model.ir_version = 7
    data = with_extra_graph_fields(model, b"".join(f_bytes(5, t) for t in inits) + f_bytes(1, node))
    path = os.path.join(out, "typed_fields.onnx")
    with open(path, "wb") as f:
        f.write(data)

    # onnx itself must read the same values the C test expects
    m = onnx.load(path)
    got = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert np.array_equal(got["f32_unpacked"], np.array(f32, np.float32).reshape(2, 3))
    assert np.array_equal(got["f32_split"], np.array([1.5, -2.0, 3.25, 0.0], np.float32))
    assert got["i64_packed"].tolist() == [-3, 0, 7, 1 << 40, -(1 << 62)]
    assert got["i64_unpacked"].tolist() == [-1, 2, -300]
    assert got["i8"].tolist() == [-128, -1, 0, 127] and got["u8"].tolist() == [0, 200, 255]
    assert got["i16"].tolist() == [-32768, 32767]
    assert got["f16"].tolist() == [1.0, -2.5, 65504.0]
    assert got["boolean"].tolist() == [True, False, True]
    assert got["f64"].tolist() == [3.5, -1e300]
    assert got["u32"].tolist() == [0, 4294967295] and got["u64"].tolist() == [(1 << 64) - 1]
    assert got["scalar"].shape == () and float(got["scalar"]) == 42.0 and got["empty"].shape == (0, 3)
    attrs = {a.name: a for a in m.graph.node[1].attribute}
    assert list(attrs["ints_packed"].ints) == [1, -2, 300] and list(attrs["floats_packed"].floats) == [0.5, -1.25]
    assert attrs["untyped_int"].i == 7 and list(attrs["untyped_floats"].floats) == [2.0, 4.0]


def external(out):
    """Initializers in a side file next to the model (onnx's external data)."""
    folder = os.path.join(out, "external")
    os.makedirs(folder, exist_ok=True)
    for name in ("model.onnx", "weights.bin"):
        if os.path.exists(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
    a = (np.arange(6, dtype=np.float32) * 1.5).reshape(2, 3)
    b = np.array([10, 20, 30, 40], dtype=np.int64)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "ext_a"], ["y"], name="mul")], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(a, "ext_a"), numpy_helper.from_array(b, "ext_b")])
    model = helper.make_model(graph, producer_name="ptq-tests", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save_model(model, os.path.join(folder, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    m = onnx.load(os.path.join(folder, "model.onnx"))
    got = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert np.array_equal(got["ext_a"], a) and np.array_equal(got["ext_b"], b)


def tensor_pb(out):
    """A TensorProto file like the backend test data's input_0.pb, with typed int32_data."""
    t = helper.make_tensor("t", TensorProto.INT32, [2, 3], [-5, -1, 0, 1, 7, 2147483647])
    with open(os.path.join(out, "tensor_int32.pb"), "wb") as f:
        f.write(t.SerializeToString())


def multi_io(out):
    """For tests/test_multi_io.c: two_outputs.onnx, x [N,1,2,2] -> pooled = Flatten(GlobalAveragePool(x))
    [N,1] and logits = Concat(pooled, 2*pooled) [N,2], both [N, classes]; gap_and_logits.onnx, the same
    with GlobalAveragePool's [N,1,1,1] as the other output; fixed_batch4.onnx, two_outputs' logits alone
    with the input fixed at [4,1,2,2]."""
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["gap"]), helper.make_node("Flatten", ["gap"], ["pooled"]),
             helper.make_node("Mul", ["pooled", "two"], ["twice"]),
             helper.make_node("Concat", ["pooled", "twice"], ["logits"], axis=1)]

    def save(name, batch, outputs):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 2, 2])
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [batch] + d) for o, d in outputs]
        g = helper.make_graph(nodes, name, [x], outs, initializer=[two])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(out, name + ".onnx"))

    save("two_outputs", "N", [("pooled", [1]), ("logits", [2])])
    save("gap_and_logits", "N", [("gap", [1, 1, 1]), ("logits", [2])])
    save("fixed_batch4", 4, [("logits", [2])])


def named_inputs(out):
    """For tests/test_named_inputs.c: text_ids.onnx, input_ids and attention_mask int64 [N,4] ->
    e = Gather(emb, input_ids) with emb[v,d] = v + 0.1*d ([10,3]), pooled = ReduceMean over the 4
    positions of e * Cast(attention_mask) ([N,3]), logits = Gemm(pooled, w) [N,2] with
    w = [[1,0],[0,1],[0.5,0.5]]."""
    emb = np.array([[v + 0.1 * d for d in range(3)] for v in range(10)], np.float32)
    w = np.array([[1, 0], [0, 1], [0.5, 0.5]], np.float32)
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["e"], axis=0),
             helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["m", "axis2"], ["m3"]),
             helper.make_node("Mul", ["e", "m3"], ["em"]),
             helper.make_node("ReduceMean", ["em"], ["pooled"], axes=[1], keepdims=0),
             helper.make_node("Gemm", ["pooled", "w"], ["logits"])]
    inits = [numpy_helper.from_array(emb, "emb"), numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array([2], np.int64), "axis2")]
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, ["N", 4]) for n in ("input_ids", "attention_mask")]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])]
    m = helper.make_model(helper.make_graph(nodes, "text_ids", ins, outs, initializer=inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "text_ids.onnx"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join("tests", "data", "onnx"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    graph_features(args.out)
    typed_fields(args.out)
    external(args.out)
    tensor_pb(args.out)
    multi_io(args.out)
    named_inputs(args.out)
    for root, _, files in sorted(os.walk(args.out)):
        for name in sorted(files):
            path = os.path.join(root, name)
            print("%7d  %s" % (os.path.getsize(path), path))


if __name__ == "__main__":
    main()
