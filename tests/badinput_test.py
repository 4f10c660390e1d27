"""The bad-input catalogue: every kind of input ptq reads (ONNX models, HDF5
image sets, calibration archives, plan JSON, PNG and JPEG folders with their
labels and classes files, IDX files, flags)
made wrong in the ways users and attackers make them, each with the exit
code and message fragment ptq must answer with (README "Exit codes"): no
crash, no hang, no allocation the file does not justify, no temporary left
behind, names from files printed with control characters escaped. ctest
label badinput; scripts/test-sanitize.sh runs it again under ASan + UBSan.
Set PTQ_BADINPUT_ONLY=substring to run some cases."""
import gzip
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptqtest import MODEL, PTQ, SRC, check, finish, fmnist_test, have_demo  # noqa: E402

PTQ_ABS = os.path.abspath(PTQ)
ONLY = os.environ.get("PTQ_BADINPUT_ONLY", "")
T = None  # the scratch folder
cases = 0


def J(*p):
    return os.path.join(T, *p)


def run(args, env=None, timeout=300):
    e = dict(os.environ)
    e.update(env or {})
    try:
        p = subprocess.run([PTQ_ABS, *args], capture_output=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:
        return None, "", "timed out"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def case(name, args, code, fragment="", env=None, out_check=None, secs=None, timeout=300):
    """One catalogue entry: ptq args -> exit code, a fragment of stderr, and
    for failures exactly one error line and no temporary left in T."""
    global cases
    if ONLY and ONLY not in name:
        return
    cases += 1
    t0 = time.time()
    rc, out, err = run(args, env, timeout)
    took = time.time() - t0
    lines = [l for l in err.splitlines() if "error:" in l]
    ok = rc == code and fragment in err
    if code != 0:
        ok = ok and len(lines) == 1 and "\x1b" not in err
    if rc is not None and rc < 0:
        ok = False
    left = [f for f in os.listdir(T) if ".tmp-" in f]
    ok = ok and not left
    if out_check is not None:
        ok = ok and out_check(out, err)
    if secs is not None:
        ok = ok and took < secs
    check(name, ok, f"exit {rc} (want {code}), {took:.1f} s: {err.strip()[-300:]!r}" + (f" left {left}" if left else ""))
    for f in left:
        os.remove(J(f))


# ---- inputs ----

def h5(path, **datasets):
    import h5py
    with h5py.File(path, "w") as f:
        for k, v in datasets.items():
            f[k] = v


def good_set(n=32):
    images, labels = fmnist_test(n)
    h5(J("good.h5"), images=images, labels=labels)
    return images, labels


def onnx_model(path, nodes, inputs, outputs, inits=(), opset=13, value_info=()):
    import onnx
    from onnx import helper
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, path)


def conv_model(path, extra_attrs=None, in_name="x"):
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.ones((10, 1, 28, 28), np.float32) * 1e-3, "w")
    attrs = {"kernel_shape": [28, 28]}
    attrs.update(extra_attrs or {})
    nodes = [helper.make_node("Conv", [in_name, "w"], ["c"], name="conv0", **attrs),
             helper.make_node("Flatten", ["c"], ["y"], name="flat")]
    onnx_model(path, nodes, [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, ["N", 1, 28, 28])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], [w])


def png_gray(w, h, rows=None):
    """An 8-bit grayscale PNG of w x h, zero pixels, compressed row by row (a bomb for large sizes)."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    z = zlib.compressobj(9)
    row = b"\x00" * (w + 1)
    idat = b"".join(z.compress(row) for _ in range(h if rows is None else rows)) + z.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def png_folder(name, files):
    root = J(name)
    os.makedirs(os.path.join(root, "a"), exist_ok=True)
    os.makedirs(os.path.join(root, "b"), exist_ok=True)
    for rel, data in files.items():
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
    return root


def idx_bytes(magic, dims, data=b""):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + data


def write(name, data, mode="wb"):
    with open(J(name), mode) as f:
        f.write(data)
    return J(name)


# ---- the catalogue ----

def models():
    from onnx import TensorProto, helper, numpy_helper
    demo = open(MODEL, "rb").read()
    case("onnx: missing file", ["info", J("nope.onnx")], 3, "nope.onnx")
    case("onnx: a folder", ["info", T], 3)
    case("onnx: empty file", ["info", write("empty.onnx", b"")], 4)
    case("onnx: text, not protobuf", ["info", write("text.onnx", b"hello, I am not a model\n" * 10)], 4)
    case("onnx: truncated to half", ["info", write("half.onnx", demo[:len(demo) // 2])], 4)
    # the three models scripts/fuzz.sh found imported no opset; each has an ai.onnx opset 13 import appended
    # (ptq refuses a model without one), which changes nothing else they show; their nodes' fuzzed attributes,
    # which no op defines (Transpose's 'perm@', Softmax's 'axi_'), are removed (ptq refuses such a node)
    # found by scripts/fuzz.sh onnx: an Expand shape whose element count passes int64 (signed overflow before)
    expand = os.path.join(SRC, "tests", "data", "badinput", "onnx_expand_overflow.onnx")
    case("onnx: Expand to more than 2^63 elements (fuzz)", ["info", expand], 6, "more than 2^63 elements")
    # found by scripts/fuzz.sh onnx: 6.9e18 int64 elements, whose byte size wrapped to 24 and made shape folding
    # write past its buffer; the size now saturates, nothing is folded, info shows the shape
    wrap = os.path.join(SRC, "tests", "data", "badinput", "onnx_expand_bytes_overflow.onnx")
    case("onnx: Expand whose byte size passes 2^64 (fuzz)", ["info", wrap], 0,
         out_check=lambda out, err: "int64 [1x6917529027641081859]" in out)
    # found by scripts/fuzz.sh onnx: dims 2.8e14 x 9e16 x 0, whose product overflowed before reaching the 0
    prod = os.path.join(SRC, "tests", "data", "badinput", "onnx_dims_prod_overflow.onnx")
    case("onnx: a product of dims past int64 with a 0 dim (fuzz)", ["info", prod], 0,
         out_check=lambda out, err: "[281474976710656x89791617082330112x0]" in out)
    # found by scripts/fuzz.sh onnx_run: a Pad of INT64_MAX on one side, whose padded size overflowed int64 (a
    # negative size in the message; undefined behaviour under UBSan)
    pad = os.path.join(SRC, "tests", "data", "badinput", "onnx_pad_overflow.onnx")
    case("onnx: Pad by 2^63 - 1 (fuzz)", ["info", pad], 6, "axis 3 of 6 by 9223372036854775807 and 0 gives more")
    # a tensor name that is not UTF-8 (protobuf strings are; onnx.load refuses it): refused, so no plan or report
    # carries it (the name patched in the bytes, the same length)
    conv_model(J("utf8.onnx"), in_name="xQQQQ")
    raw = open(J("utf8.onnx"), "rb").read().replace(b"xQQQQ", b"xQ\xffQQ")
    case("onnx: a tensor name that is not UTF-8", ["info", write("not_utf8.onnx", raw)], 4, "is not UTF-8")
    case("onnx: truncated to 10 bytes", ["info", write("ten.onnx", demo[:10])], 4)
    flipped = bytearray(demo)
    flipped[1] ^= 0xFF  # the first field's length varint
    case("onnx: bit-flipped length", ["info", write("flip.onnx", bytes(flipped))], 4)
    # graph (field 7) declared 2^40 bytes long in a 20-byte file
    huge = b"\x08\x07" + b"\x3a" + bytes([0x80, 0x80, 0x80, 0x80, 0x80, 0x20]) + b"\x00" * 8
    case("onnx: huge declared length", ["info", write("huge.onnx", huge)], 4)
    # an initializer declaring dims [2^40] with 4 bytes of data
    t = numpy_helper.from_array(np.ones(1, np.float32), "big")
    del t.dims[:]
    t.dims.extend([1 << 40])
    onnx_model(J("bigdims.onnx"), [helper.make_node("Add", ["x", "big"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [t])
    case("onnx: initializer dims past its data", ["info", J("bigdims.onnx")], 4)
    t = numpy_helper.from_array(np.ones(4, np.float32), "neg")
    del t.dims[:]
    t.dims.extend([-4])
    onnx_model(J("negdims.onnx"), [helper.make_node("Add", ["x", "neg"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [t])
    case("onnx: negative initializer dim", ["info", J("negdims.onnx")], 4)
    conv_model(J("conv_attr.onnx"), {"foo_bar": 3})
    case("onnx: unknown Conv attribute", ["eval", "--model", J("conv_attr.onnx"), "--data", J("good.h5")], 4,
         "attribute 'foo_bar' is not one ONNX defines for Conv")
    conv_model(J("conv_ok.onnx"))
    case("onnx: a plain Conv model runs", ["eval", "--model", J("conv_ok.onnx"), "--data", J("good.h5"),
                                             "--limit", "8"], 0)
    scatter_nd(helper, TensorProto, numpy_helper)
    resize(helper, TensorProto, numpy_helper)
    pad_computed(helper, TensorProto, numpy_helper)
    clip_computed(helper, TensorProto, numpy_helper)
    onnx_model(J("lstm.onnx"), [helper.make_node("Det", ["x"], ["y"], name="det0")],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 28, 28])])
    case("onnx: unsupported op", ["eval", "--model", J("lstm.onnx"), "--data", J("good.h5")], 5, "Det")
    # every unsupported node named at once, in eval and in info (exit 5 both)
    x28 = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])]
    y28 = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 28, 28])]
    three = [helper.make_node("Det", ["x"], ["h"], name="det_a"), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Det", ["r"], ["h2"], name="det_b"),
             helper.make_node("Frobnicate", ["h2"], ["y"], name="frob_c", domain="com.acme")]
    onnx_model(J("three_unsup.onnx"), three, x28, y28)
    import onnx
    m = onnx.load(J("three_unsup.onnx"))
    m.opset_import.append(helper.make_opsetid("com.acme", 3))
    onnx.save(m, J("three_unsup.onnx"))
    all_three = lambda out, err: all(f in err for f in ("3 nodes ptq cannot run", "node 'det_a': op Det "
                                                        "(domain ai.onnx, opset 13)", "node 'det_b': op Det",
                                                        "node 'frob_c': op Frobnicate (domain com.acme version 3, "
                                                        "opset 13)"))
    case("onnx: three unsupported nodes, eval names each", ["eval", "--model", J("three_unsup.onnx"),
                                                             "--data", J("good.h5")], 5, out_check=all_three)
    case("onnx: three unsupported nodes, info names each and exits 5", ["info", J("three_unsup.onnx")], 5,
         out_check=lambda out, err: all_three(out, err) and "det_b" in out)
    case("onnx: three unsupported nodes, info --json exits 5", ["info", J("three_unsup.onnx"), "--json"], 5,
         out_check=lambda out, err: json.loads(out)["supported"] is False and "frob_c" in json.loads(out)["unsupported"])
    case("onnx: a supported model, info exits 0", ["info", J("conv_ok.onnx")], 0,
         out_check=lambda out, err: "yes, every node" in out)
    # every op known, a dtype not (a Cast from float16): info's summary says no, with the node, not "yes"
    onnx_model(J("str_cast.onnx"), [helper.make_node("Cast", ["w1"], ["ws"], to=TensorProto.STRING, name="cast_s"),
                                    helper.make_node("Cast", ["ws"], ["w"], to=TensorProto.FLOAT),
                                    helper.make_node("Add", ["x", "w"], ["y"])], x28, y28,
               inits=[numpy_helper.from_array(np.ones(1, np.float32), "w1")])
    case("onnx: a Cast to string, info says not supported and exits 5", ["info", J("str_cast.onnx")], 5,
         "cast from float32 to string", out_check=lambda out, err: "yes, every node" not in out and
         re.search(r"supported  no: node 'cast_s' \(Cast", out) is not None)
    chain = [helper.make_node("Det", ["x" if i == 0 else f"h{i - 1}"], ["y" if i == 59 else f"h{i}"],
                              name=f"det_node_with_a_long_name_{i:02d}") for i in range(60)]
    onnx_model(J("sixty_unsup.onnx"), chain, x28, y28)
    case("onnx: sixty unsupported nodes, as many named as fit and the rest counted", ["info", J("sixty_unsup.onnx")],
         5, "60 nodes ptq cannot run: node 'det_node_with_a_long_name_00'",
         out_check=lambda out, err: re.search(r"; and \d+ more", err) is not None)
    onnx_model(J("aten.onnx"), [helper.make_node("ATen", ["x"], ["y"], name="aten_gelu", domain="org.pytorch.aten",
                                                 operator="gelu")], x28, y28)
    case("onnx: ATen fallback op, hint", ["info", J("aten.onnx")], 5, "operator_export_type")
    onnx_model(J("msft.onnx"), [helper.make_node("FusedGemm", ["x"], ["y"], name="fused", domain="com.microsoft")],
               x28, y28)
    case("onnx: com.microsoft op, hint", ["eval", "--model", J("msft.onnx"), "--data", J("good.h5")], 5,
         "do_constant_folding=True")
    onnx_model(J("nonzero.onnx"), [helper.make_node("NonZero", ["x"], ["y"], name="nz")], x28, y28)
    case("onnx: shape computation left in, hint", ["info", J("nonzero.onnx")], 5, "static input shapes")
    # (ptq runs Mish now, the op this case first used)
    onnx_model(J("opset18.onnx"), [helper.make_node("BitwiseNot", ["x"], ["y"], name="bitnot18")], x28, y28, opset=18)
    case("onnx: an op ONNX added at opset 18, hint", ["info", J("opset18.onnx")], 5, "opset_version=17")
    # before opset 7 BatchNormalization and Dropout take is_test, 0 (training mode) unless set: refused, naming it
    # (they ran as inference); is_test=1, as PyTorch's old exports write it, runs
    bn_inits = [numpy_helper.from_array(np.full(1, v, np.float32), n)
                for n, v in (("s", 2), ("b", 0), ("m", 1), ("v", 4))]
    for op, inputs, extra in (("BatchNormalization", ["x", "s", "b", "m", "v"], bn_inits), ("Dropout", ["x"], [])):
        for is_test in (None, 1):
            attrs = {} if is_test is None else {"is_test": is_test}
            name = f"{op.lower()}6_{is_test}.onnx"
            onnx_model(J(name), [helper.make_node(op, inputs, ["y"], name=f"{op.lower()}6", **attrs)], x28, y28,
                       extra, opset=6)
            case(f"onnx: {op} at opset 6, is_test {'unset (0)' if is_test is None else is_test}", ["info", J(name)],
                 5 if is_test is None else 0, "is_test=0 (training mode" if is_test is None else "")
    onnx_model(J("dynamo.onnx"), [helper.make_node("aten_gelu", ["x"], ["y"], name="gelu_fn",
                                                   domain="pkg.onnxscript.torch_lib")], x28, y28, opset=18)
    case("onnx: a dynamo exporter function, hint", ["info", J("dynamo.onnx")], 5, "inline_local_functions")
    onnx_model(J("det18.onnx"), [helper.make_node("Det", ["x"], ["y"], name="det18")], x28, y28, opset=18)
    case("onnx: an older op at opset 18: named, no re-export hint (opset 17 has it too)",
         ["info", J("det18.onnx")], 5, "op Det (domain ai.onnx, opset 18) is not supported by ptq",
         out_check=lambda out, err: "opset_version" not in err)
    # found by scripts/fuzz.sh onnx: a node with no output crashed shape inference
    onnx_model(J("no_output.onnx"), [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Clip", ["x"], [])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 28, 28])])
    case("onnx: a node with no output (fuzz), info exits as eval", ["info", J("no_output.onnx")], 4,
         "has no output", out_check=lambda out, err: "has no output" in out)
    case("onnx: a node with no output (fuzz), eval", ["eval", "--model", J("no_output.onnx"), "--data", J("good.h5")],
         4, "has no output")
    # an input with no type: eval's session refuses it before shapes are tried, and info exits as eval does
    onnx_model(J("notype.onnx"), [helper.make_node("Relu", ["x"], ["y"])], [helper.make_empty_tensor_value_info("x")],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])])
    for cmd in (["info", J("notype.onnx")], ["eval", "--model", J("notype.onnx"), "--data", J("good.h5")]):
        case(f"onnx: an input with no type, {cmd[0]} exits 5", cmd, 5, "input 'x' is undefined; ptq feeds")
    esc = "evil\x1b[31mred"
    conv_model(J("esc.onnx"), in_name=esc)
    case("onnx: ESC in a tensor name, info escapes it", ["info", J("esc.onnx")], 0,
         out_check=lambda out, err: "\\x1b[31m" in out and "\x1b" not in out)
    case("onnx: ESC in a tensor name, info --json escapes it", ["info", J("esc.onnx"), "--json"], 0,
         out_check=lambda out, err: "\x1b" not in out and esc in json.loads(out)["inputs"][0]["name"])
    case("onnx: ESC in a tensor name, calibrate's table escapes it",
         ["calibrate", "--model", J("esc.onnx"), "--data", J("good.h5"), "--out", J("esc-cal.h5")], 0,
         out_check=lambda out, err: "\\x1b[31m" in out and "\x1b" not in out)
    case("onnx: ESC in a tensor name, export's table escapes it",
         ["export", J("esc-cal.h5"), "--method", "minmax", "--format", "json", "--out", J("esc-ranges.json")], 0,
         out_check=lambda out, err: "\\x1b[31m" in out and "\x1b" not in out + err)
    case("onnx: ESC in a tensor name, plan --explain escapes it",
         ["plan", J("esc-cal.h5"), "--model", J("esc.onnx"), "--placement", "all", "--explain", "--out",
          J("esc-plan.json")], 0, out_check=lambda out, err: "\\x1b[31m" in out and "\x1b" not in out + err)
    # U+0085 (NEL, a C1 control) and U+2028 (LINE SEPARATOR) break a terminal's line as '\n' does: escaped as the
    # control bytes are (they were printed as they are); columns padded by characters, not bytes ('e' with an acute
    # accent is two bytes: the row was one column short per such letter)
    sep = "nel\u0085ls\u2028" + "\u00e9" * 6
    shown = "nel\\xc2\\x85ls\\xe2\\x80\\xa8" + "\u00e9" * 6
    conv_model(J("sep.onnx"), in_name=sep)

    def table(out, head):
        """The rows of the table whose header line starts with head, the header first."""
        lines = out.splitlines()
        at = next((i for i, l in enumerate(lines) if l.startswith(head)), None)
        if at is None:
            return []
        end = next((i for i in range(at + 1, len(lines)) if not lines[i].strip() or lines[i].endswith(":")),
                   len(lines))
        return lines[at:end]

    def second_column(rows, col):
        """Every row's second column starts at character col (the name, padded, before it)."""
        return len(rows) > 2 and all(r[col - 1] == " " and r[col] != " " for r in rows)

    def same_length(rows):
        """Every row as long as the header (fixed-width columns after the padded name)."""
        return len(rows) > 2 and len({len(r) for r in rows}) == 1

    def clean(out):
        return "\u0085" not in out and "\u2028" not in out and shown in out

    case("onnx: NEL and LINE SEPARATOR in a name, calibrate's table escapes them and pads by characters",
         ["calibrate", "--model", J("sep.onnx"), "--data", J("good.h5"), "--out", J("sep-cal.h5")], 0,
         out_check=lambda out, err: clean(out) and same_length(table(out, "  tensor")))
    case("onnx: NEL and LINE SEPARATOR in a name, export's table escapes them and pads by characters",
         ["export", J("sep-cal.h5"), "--method", "minmax", "--format", "json", "--out", J("sep-ranges.json")], 0,
         out_check=lambda out, err: clean(out) and same_length(table(out, "  tensor")))
    case("onnx: NEL and LINE SEPARATOR in a name, plan --explain escapes them and pads by characters",
         ["plan", J("sep-cal.h5"), "--model", J("sep.onnx"), "--placement", "all", "--explain", "--out",
          J("sep-plan.json")], 0, out_check=lambda out, err: clean(out) and
         second_column(table(out, "tensor "), len(shown) + 2))
    case("onnx: NEL and LINE SEPARATOR in a name, info escapes them and pads by characters", ["info", J("sep.onnx")],
         0, out_check=lambda out, err: clean(out) and second_column(table(out, "quantizable activations")[1:], 43))
    # a bidi override (U+202E reverses what follows it on the line: a name that shows as another) is escaped as the
    # controls are (it was printed as it is); a CJK character takes two terminal columns and is padded so (rows with
    # one were a column too long per such character)
    bidi = "rlo\u202e" + "\u4e2d" * 4
    bidi_shown = "rlo\\xe2\\x80\\xae" + "\u4e2d" * 4
    conv_model(J("bidi.onnx"), in_name=bidi)

    def cells(rows):
        """rows with each wide character followed by a NUL: one string character per terminal column."""
        return ["".join(ch + ("\0" if "\u4e00" <= ch <= "\u9fff" else "") for ch in r) for r in rows]

    def bidi_clean(out):
        return "\u202e" not in out and bidi_shown in out

    case("onnx: RLO and CJK in a name, calibrate's table escapes RLO and pads by columns",
         ["calibrate", "--model", J("bidi.onnx"), "--data", J("good.h5"), "--out", J("bidi-cal.h5")], 0,
         out_check=lambda out, err: bidi_clean(out) and same_length(cells(table(out, "  tensor"))))
    case("onnx: RLO and CJK in a name, export's table escapes RLO and pads by columns",
         ["export", J("bidi-cal.h5"), "--method", "minmax", "--format", "json", "--out", J("bidi-ranges.json")], 0,
         out_check=lambda out, err: bidi_clean(out) and same_length(cells(table(out, "  tensor"))))
    case("onnx: RLO and CJK in a name, plan --explain escapes RLO and pads by columns",
         ["plan", J("bidi-cal.h5"), "--model", J("bidi.onnx"), "--placement", "all", "--explain", "--out",
          J("bidi-plan.json")], 0, out_check=lambda out, err: bidi_clean(out) and
         second_column(cells(table(out, "tensor ")), len(bidi_shown) + 4 + 2))
    case("onnx: RLO and CJK in a name, info escapes RLO and pads by columns", ["info", J("bidi.onnx")],
         0, out_check=lambda out, err: bidi_clean(out) and
         second_column(cells(table(out, "quantizable activations")[1:]), 43))
    onnx_model(J("two_in.onnx"), [helper.make_node("Add", ["a", "b"], ["y"])],
               [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 1, 28, 28]),
                helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 1, 28, 28])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 28, 28])])
    case("onnx: two inputs, no datasets of their names", ["eval", "--model", J("two_in.onnx"), "--data", J("good.h5")],
         7, "--input NAME=DATASET")

# ---- window geometry ----

G = 1 << 31  # the largest kernel, stride, dilation or pad ptq_window_parse accepts


def scatter_nd(helper, TensorProto, numpy_helper):
    """ScatterND on each image's 784 pixels: index tuples past data's dims (in the file or computed from the
    pixels) refused at run time naming the node, before anything is written; updates of the wrong shape and
    reductions outside their opsets refused at shape inference and load."""
    def model(name, idx, upd, opset=13, computed=False, **attrs):
        nodes = [helper.make_node("Flatten", ["x"], ["f"])]
        inits = [numpy_helper.from_array(np.full((784, 10), 1e-3, np.float32), "w")]
        if computed:  # the first pixel of each image * 1e9 + 1e12, a row of the batch
            nodes += [helper.make_node("Gather", ["f", "first"], ["p"], axis=1),
                      helper.make_node("Mul", ["p", "giga"], ["pg"]), helper.make_node("Add", ["pg", "tera"], ["pt"]),
                      helper.make_node("Cast", ["pt"], ["idx"], to=TensorProto.INT64)]
            inits += [numpy_helper.from_array(np.array([0], np.int64), "first"),
                      numpy_helper.from_array(np.array(1e9, np.float32), "giga"),
                      numpy_helper.from_array(np.array(1e12, np.float32), "tera")]
            upd_name = "f"
        else:
            inits += [numpy_helper.from_array(np.array(idx, np.int64), "idx"),
                      numpy_helper.from_array(np.array(upd, np.float32), "upd")]
            upd_name = "upd"
        nodes += [helper.make_node("ScatterND", ["f", "idx", upd_name], ["s"], name="scatter0", **attrs),
                  helper.make_node("MatMul", ["s", "w"], ["y"])]
        onnx_model(J(name), nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits, opset=opset)
        return ["eval", "--model", J(name), "--data", J("good.h5"), "--limit", "8"]

    case("onnx: ScatterND in range (a negative index from the end) runs",
         model("scatter_ok.onnx", [[0, 783], [-1, -784]], [1, 2]), 0)
    case("onnx: ScatterND index past the end of an axis, refused naming the node",
         model("scatter_past.onnx", [[0, 783], [0, 784]], [1, 2]), 7,
         "node 'scatter0' (ScatterND, domain ai.onnx, opset 13): index 784 (index tuple 1, entry 1) is out of range "
         "for data's axis 1 of size 784")
    case("onnx: ScatterND index before the start (one wrap only), refused",
         model("scatter_before.onnx", [[0, -785]], [1]), 7, "index -785")
    case("onnx: ScatterND index INT64_MIN, refused", model("scatter_min.onnx", [[0, -2 ** 63]], [1]), 7,
         "index -9223372036854775808")
    case("onnx: ScatterND indices computed from the pixels, past the batch, refused",
         model("scatter_data.onnx", None, None, computed=True), 7, "out of range for data's axis 0 of size 8")
    case("onnx: ScatterND updates of the wrong shape, refused at shape inference",
         model("scatter_shape.onnx", [[0, 5]], [1, 2]), 6, "updates are 2; for data 8x784 and indices 1x2 they must "
         "be indices.shape[:-1] + data.shape[2:] = 1")
    case("onnx: ScatterND reduction before opset 16, refused",
         model("scatter_red13.onnx", [[0, 5]], [1], reduction="add"), 4, "ScatterND has no reduction attribute")
    case("onnx: ScatterND reduction max at opset 16, refused",
         model("scatter_max16.onnx", [[0, 5]], [1], opset=16, reduction="max"), 4, "max and min from 18")


def resize(helper, TensorProto, numpy_helper):
    """Resize and Upsample on the 28x28 images: scales and sizes that are negative, NaN, huge or whose product
    passes 2^40 elements, wrong counts and dtypes, bad axes, modes and options, each refused at shape inference
    naming the node, before any output is allocated."""
    def model(name, inputs, opset=13, op="Resize", **attrs):
        inits = [numpy_helper.from_array(np.full((1, 10), 1e-3, np.float32), "w")]
        names = ["x"]
        for k, v in enumerate(inputs):
            if v is None:
                names.append("")
            else:
                names.append(f"in{k}")
                inits.append(numpy_helper.from_array(np.array(v), f"in{k}"))
        nodes = [helper.make_node(op, names, ["r"], name="resize0", **attrs),
                 helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["m"]),
                 helper.make_node("MatMul", ["m", "w"], ["y"])]
        onnx_model(J(name), nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits, opset=opset)
        return ["info", J(name)]

    f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    node = "node 'resize0' (Resize, domain ai.onnx, opset 13): "
    case("onnx: Resize by 2 runs", model("rs_ok.onnx", [None, f32(1, 1, 2, 2)]), 0,
         out_check=lambda out, err: "[1x1x56x56]" in out)
    case("onnx: Resize scale 1e30, refused", model("rs_huge.onnx", [None, f32(1, 1, 1e30, 1)]), 6,
         node + "scale 1e+30 makes axis 2 of 28 longer than 2^40")
    case("onnx: Resize scale -2, refused", model("rs_neg.onnx", [None, f32(1, 1, -2, 1)]), 6,
         "scale -2 of axis 2 must be finite and above 0")
    case("onnx: Resize scale NaN, refused", model("rs_nan.onnx", [None, f32(1, 1, np.nan, 1)]), 6,
         "scale nan of axis 2 must be finite")
    case("onnx: Resize scales of 2^20 on two axes (2^50 elements), refused",
         model("rs_prod.onnx", [None, f32(1, 1, 2 ** 20, 2 ** 20)]), 6, "more than 2^40 elements")
    case("onnx: Resize size -5, refused", model("rs_size_neg.onnx", [None, None, i64(1, 1, -5, 28)]), 6,
         node + "size -5 of axis 2 is out of range (0 to 2^40)")
    case("onnx: Resize sizes INT64_MAX, refused", model("rs_size_max.onnx", [None, None, i64(1, 1, 2 ** 63 - 1, 1)]),
         6, "size 9223372036854775807 of axis 2 is out of range")
    case("onnx: Resize sizes 2^40 on two axes, refused",
         model("rs_size_prod.onnx", [None, None, i64(1, 1, 2 ** 40, 2 ** 40)]), 6, "more than 2^40 elements")
    case("onnx: Resize sizes int32, refused", model("rs_size_i32.onnx", [None, None, np.array([1, 1, 5, 5], np.int32)]),
         6, "sizes must be 1-D int64 of 4 values, got int32 of 4")
    case("onnx: Resize 2 scales for rank 4, refused", model("rs_count.onnx", [None, f32(2, 2)]), 6,
         "scales has 2 values for 4 axes")
    case("onnx: Resize with scales and sizes, refused", model("rs_both.onnx", [None, f32(1, 1, 2, 2), i64(1, 1, 5, 5)]),
         4, "give one of scales (input 2) and sizes (input 3), not both")
    case("onnx: Resize with empty scales and no sizes, refused", model("rs_none.onnx", [f32(), f32()]), 4,
         "not neither")
    case("onnx: Resize mode bicubic, refused naming the modes", model("rs_mode.onnx", [None, f32(1, 1, 2, 2)],
                                                                      mode="bicubic"), 5,
         node + "mode must be one of nearest, linear, cubic, got 'bicubic'")
    case("onnx: Resize exclude_outside 2, refused", model("rs_excl.onnx", [None, f32(1, 1, 2, 2)], mode="cubic",
                                                          exclude_outside=2), 4, "exclude_outside must be 0 or 1")
    case("onnx: Resize tf_crop_and_resize without roi, refused",
         model("rs_noroi.onnx", [None, None, i64(1, 1, 5, 5)], coordinate_transformation_mode="tf_crop_and_resize"),
         4, "tf_crop_and_resize needs the roi input")
    case("onnx: Resize tf_crop_and_resize with a NaN roi, refused",
         model("rs_roinan.onnx", [f32(0, 0, 0, np.nan, 1, 1, 1, 1), None, i64(1, 1, 5, 5)],
               coordinate_transformation_mode="tf_crop_and_resize"), 6, "roi value nan is not finite")
    case("onnx: Resize axes 4 at rank 4 (opset 18), refused",
         model("rs_axes.onnx", [None, f32(2)], opset=18, axes=[4]), 4, "axes entry 4 is out of range for rank 4")
    case("onnx: Resize axes repeated (2 and -2), refused",
         model("rs_axes2.onnx", [None, f32(2, 2)], opset=18, axes=[2, -2]), 4, "axes entry -2 is out of range for "
         "rank 4 or repeated")
    case("onnx: Resize keep_aspect_ratio_policy with scales, refused",
         model("rs_keep.onnx", [None, f32(1, 1, 2, 2)], opset=18, keep_aspect_ratio_policy="not_larger"), 4,
         "keep_aspect_ratio_policy not_larger applies to sizes")
    case("onnx: Upsample scale 0.5, refused", model("up_half.onnx", [f32(1, 1, 0.5, 1)], opset=9, op="Upsample"), 6,
         "scale 0.5 of axis 2 must be finite and 1 or more (Upsample)")
    case("onnx: Upsample 7 without its scales attribute, refused", model("up_noattr.onnx", [], opset=7, op="Upsample"),
         4, "the scales attribute (floats) is missing")


def run_time_value_cases(what, m, tag):
    """Model m ([N, 1, 28, 28] -> [N, 10]) with a value computed at run time that sets no shape: eval on cpu and ref
    gives onnxruntime's logits on 8 images, info says it is supported, calibrate runs (into tag-cal.h5)."""
    if not ONLY or ONLY in what:
        import onnxruntime as ort
        images, _ = fmnist_test(8)
        want = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(
            None, {"x": images.reshape(8, 1, 28, 28).astype(np.float32) / 255})[0]
        for dev in ("cpu", "ref"):
            case(f"{what}, eval --device {dev} matches onnxruntime",
                 ["eval", "--model", m, "--data", J("good.h5"), "--limit", "8", "--device", dev,
                  "--logits", J(f"{tag}-logits.npy")], 0,
                 out_check=lambda out, err: np.allclose(np.load(J(f"{tag}-logits.npy")), want, rtol=1e-5, atol=1e-6))
    case(f"{what}, info runs", ["info", m], 0, out_check=lambda out, err: "supported  yes" in out)
    case(f"{what}, calibrate runs", ["calibrate", "--model", m, "--data", J("good.h5"), "--out", J(f"{tag}-cal.h5")],
         0)


def pad_computed(helper, TensorProto, numpy_helper):
    """Pad whose constant_value or pads come from the pixels: the constant (the batch's largest pixel) does not
    change the output's shape, so every command runs it with onnxruntime's logits; pads computed at run time
    would, and are refused by the commands that infer every shape first, naming the node and saying why."""
    def model(name, computed):
        nodes = [helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0)]
        inits = [numpy_helper.from_array(np.full((900, 10), 1e-3, np.float32), "w"),
                 numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")]
        pad_in = ["x", "pads", "top"]
        if computed == "pads":  # pads * (top == top): the same pads, from the data
            nodes += [helper.make_node("Equal", ["top", "top"], ["same"]),
                      helper.make_node("Cast", ["same"], ["one"], to=TensorProto.INT64),
                      helper.make_node("Mul", ["pads", "one"], ["pads_run"])]
            pad_in = ["x", "pads_run"]
        nodes += [helper.make_node("Pad", pad_in, ["p"], name="pad0", mode="constant"),
                  helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("MatMul", ["f", "w"], ["y"])]
        onnx_model(J(name), nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
        return J(name)

    run_time_value_cases("onnx: Pad constant_value computed at run time", model("pad_value.onnx", "value"), "pad")
    m = model("pad_pads.onnx", "pads")
    case("onnx: Pad pads computed at run time, calibrate refuses saying why",
         ["calibrate", "--model", m, "--data", J("good.h5"), "--out", J("pad-cal2.h5")], 5,
         "node 'pad0' (Pad): input 'pads_run' (input 1) is computed at run time, but ptq needs it before the run "
         "(a shape or parameter its shape inference reads)")


def clip_computed(helper, TensorProto, numpy_helper):
    """Clip whose min is computed from the pixels (the batch's mean): it changes no shape, so every command runs it
    (calibrate, plan and info refused it before, exit 5, as if shape inference needed it), eval with
    onnxruntime's logits."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["lo"], keepdims=0),
             helper.make_node("Clip", ["x", "lo"], ["c"], name="clip0"),
             helper.make_node("Flatten", ["c"], ["f"]), helper.make_node("MatMul", ["f", "w"], ["y"])]
    inits = [numpy_helper.from_array(np.linspace(-1e-3, 1e-3, 7840, dtype=np.float32).reshape(784, 10), "w")]
    onnx_model(J("clip_min.onnx"), nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    m = J("clip_min.onnx")
    run_time_value_cases("onnx: Clip min computed at run time", m, "clip")
    case("onnx: Clip min computed at run time, plan runs",
         ["plan", J("clip-cal.h5"), "--model", m, "--out", J("clip-plan.json")], 0)
    case("onnx: Clip min computed at run time, validate runs",
         ["validate", "--model", m, "--plan", J("clip-plan.json"), "--data", J("good.h5"), "--limit", "8",
          "--report", J("clip-report")], 0)
    case("onnx: Clip min computed at run time, the Q/DQ export runs",
         ["export", "--format", "qdq", "--plan", J("clip-plan.json"), "--model", m, "--out", J("clip-qdq.onnx")], 0)


def window_model(path, nodes, inits, spatial5=False, c=10, opset=13):
    """x [N, 1, 28, 28] -> Conv 1x1 to c channels ("a"; [N, c, 28, 28, 1] as "a5" when spatial5) -> nodes
    (reading "a" or "a5", writing "p" of 10 channels) -> GlobalAveragePool -> Flatten -> y [N, 10]."""
    from onnx import TensorProto, helper, numpy_helper
    pre = [helper.make_node("Conv", ["x", "w_in"], ["a"], name="conv_in", kernel_shape=[1, 1])]
    inits = [numpy_helper.from_array(np.linspace(0.5, 1.5, c, dtype=np.float32).reshape(c, 1, 1, 1), "w_in"),
             *inits]
    if spatial5:
        pre.append(helper.make_node("Reshape", ["a", "shape5"], ["a5"], name="to5d"))
        inits.append(numpy_helper.from_array(np.array([0, 10, 28, 28, 1], np.int64), "shape5"))
    post = [helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
            helper.make_node("Flatten", ["g"], ["y"], name="flat")]
    onnx_model(path, pre + nodes + post, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits, opset=opset)


def same_logits(name, model):
    """model runs on cpu and on ref (exit 0, 8 images) with logits that agree (the pools bit for bit, the
    convolutions within 1e-4), and calibrates."""
    if ONLY and ONLY not in name:
        return
    got = {}
    for dev in ("ref", "cpu"):
        case(f"{name}, eval --device {dev} runs", ["eval", "--model", model, "--data", J("good.h5"), "--limit", "8",
                                                    "--device", dev, "--logits", J(f"win-{dev}.npy")], 0, secs=60,
             timeout=120)
        got[dev] = np.load(J(f"win-{dev}.npy")) if os.path.exists(J(f"win-{dev}.npy")) else None
        if os.path.exists(J(f"win-{dev}.npy")):
            os.remove(J(f"win-{dev}.npy"))
    ok = got["ref"] is not None and got["cpu"] is not None and got["ref"].shape == got["cpu"].shape and \
        np.allclose(got["ref"], got["cpu"], rtol=1e-4, atol=1e-6, equal_nan=True)
    check(f"{name}: cpu logits match ref", ok, "" if ok else f"{got}")
    case(f"{name}, calibrate runs", ["calibrate", "--model", model, "--data", J("good.h5"), "--out", J("win-cal.h5")],
         0, secs=60, timeout=120)
    if os.path.exists(J("win-cal.h5")):
        os.remove(J("win-cal.h5"))


def refused(name, model, node, fragment):
    """model refused (exit 5) naming node, the fragment and the limit, by eval on cpu and ref, calibrate and info,
    at once."""
    want = lambda out, err: fragment in err and "more than the 2^44 ptq runs in one node per image" in err
    for what, cmd in (("eval cpu", ["eval", "--device", "cpu"]), ("eval ref", ["eval", "--device", "ref"]),
                      ("calibrate", ["calibrate", "--out", J("win-cal.h5")])):
        case(f"{name}, {what} refuses", [cmd[0], "--model", model, "--data", J("good.h5"), *cmd[1:]], 5,
             f"node '{node}'", out_check=want, secs=20, timeout=60)
    case(f"{name}, info refuses", ["info", model], 5, f"node '{node}'", out_check=want, secs=20, timeout=60)


def windows():
    """Strides, dilations, pads and kernels near 2^31 (what ptq_window_parse accepts): each model runs, cpu as
    ref, or is refused naming the node; never a crash, a hang or an allocation of what the geometry implies."""
    from onnx import helper, numpy_helper
    # the two Convs a review found killing ptq eval (tests/parity_conv.c holds them at kernel level): the direct
    # path's row copy (strides 2^31: SIGFPE) and the depthwise path's padded plane (SIGSEGV)
    w = numpy_helper.from_array(np.linspace(-1, 1, 10 * 32 * 2, dtype=np.float32).reshape(10, 32, 1, 2), "w")
    window_model(J("win_direct.onnx"), [helper.make_node("Conv", ["a", "w"], ["p"], name="conv_direct",
                                                         kernel_shape=[1, 2], strides=[G, G], pads=[0, 0, 0, 1])],
                 [w], c=32)
    same_logits("window: Conv, strides 2^31 (direct path)", J("win_direct.onnx"))
    w = numpy_helper.from_array(np.linspace(-1, 1, 10 * 4, dtype=np.float32).reshape(10, 1, 2, 2), "w")
    window_model(J("win_dw.onnx"), [helper.make_node("Conv", ["a", "w"], ["p"], name="conv_dw", kernel_shape=[2, 2],
                                                     group=10, strides=[G, G], dilations=[G - 1, G - 1],
                                                     pads=[G, G, G - 1, G - 1])], [w])
    same_logits("window: depthwise Conv, strides, dilations and pads near 2^31", J("win_dw.onnx"))
    w = numpy_helper.from_array(np.linspace(-1, 1, 10 * 10 * 2, dtype=np.float32).reshape(10, 10, 2, 1, 1), "w")
    window_model(J("win_conv3d.onnx"), [helper.make_node("Conv", ["a5", "w"], ["p"], name="conv_3d",
                                                         kernel_shape=[2, 1, 1], strides=[G, G, G],
                                                         dilations=[G, 1, 1], pads=[G, G, 0, G - 1, 1, G])], [w],
                 spatial5=True)
    same_logits("window: 3-D Conv, strides, dilations and pads near 2^31", J("win_conv3d.onnx"))
    w = numpy_helper.from_array(np.linspace(-1, 1, 10 * 4, dtype=np.float32).reshape(10, 1, 2, 2), "w")
    window_model(J("win_convt.onnx"), [helper.make_node("ConvTranspose", ["a", "w"], ["p"], name="convt_far",
                                                        kernel_shape=[2, 2], group=10, dilations=[G, G],
                                                        pads=[G, G, 0, 0])], [w])
    same_logits("window: ConvTranspose, dilations 2^31 cropped by pads 2^31", J("win_convt.onnx"))
    for op in ("MaxPool", "AveragePool"):
        extra = {"count_include_pad": 1} if op == "AveragePool" else {}
        opset = 19 if op == "AveragePool" else 13  # AveragePool has dilations from opset 19
        window_model(J(f"win_{op}.onnx"), [helper.make_node(op, ["a"], ["p"], name=f"{op.lower()}_far",
                                                            kernel_shape=[2, 3], strides=[G, G - 1],
                                                            dilations=[G - 1, G], pads=[G - 1, G - 1, G, G],
                                                            **extra)],
                     [], opset=opset)
        same_logits(f"window: {op}, strides, dilations and pads near 2^31", J(f"win_{op}.onnx"))
        window_model(J(f"win_{op}_3d.onnx"), [helper.make_node(op, ["a5"], ["p"], name=f"{op.lower()}_3d",
                                                               kernel_shape=[3, 1 << 12, 2], strides=[1, G, G],
                                                               dilations=[1, 1, G], pads=[1, 0, G, 1, G, 0],
                                                               ceil_mode=1, **extra)],
                     [], spatial5=True, opset=opset)
        same_logits(f"window: 3-D {op}, ceil_mode, a kernel of 2^12 past the input, pads 2^31", J(f"win_{op}_3d.onnx"))
    # a Conv whose im2col rows are 2^20 taps (a 65536x16 kernel over 1 channel, 9x33 outputs, too tall a band for
    # the direct path): a tile of 64 columns took 256 MiB a worker; past 256 MiB for all workers the reference
    # loops run instead
    w = numpy_helper.from_array(np.full((1, 1, 65536, 16), 1e-6, np.float32), "w")
    w2 = numpy_helper.from_array(np.linspace(0.5, 1.5, 10, dtype=np.float32).reshape(10, 1, 1, 1), "w2")
    window_model(J("win_rows.onnx"), [helper.make_node("Conv", ["a", "w"], ["q"], name="conv_rows",
                                                       pads=[32758, 10, 32758, 10]),
                                      helper.make_node("Conv", ["q", "w2"], ["p"], name="conv_out")], [w, w2], c=1)
    if not ONLY or ONLY in "window: im2col rows of 2^20 taps":
        probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
                 "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        p = subprocess.run([sys.executable, "-c", probe, PTQ_ABS, "eval", "--model", J("win_rows.onnx"), "--data",
                            J("good.h5"), "--limit", "8", "--threads", "4"], capture_output=True, text=True,
                           timeout=300)
        rc, kib = (p.stdout.split() + ["?", "0"])[:2]
        check("window: im2col rows of 2^20 taps: eval runs within 200 MiB (4 threads)",
              rc == "0" and int(kib) < 200 * 1024, f"exit {rc}, peak RSS {int(kib) // 1024} MiB {p.stderr[-200:]}")
    # windows of 2^93 taps over a few outputs: the ref walked every tap (a hang), AveragePool's count_include_pad
    # count wrapped to 0 (UBSan: signed overflow; the average of 0 taps)
    for op in ("MaxPool", "AveragePool"):
        extra = {"count_include_pad": 1} if op == "AveragePool" else {}
        opset = 19 if op == "AveragePool" else 13  # AveragePool has dilations from opset 19
        window_model(J(f"win_{op}_huge.onnx"), [helper.make_node(op, ["a5"], ["p"], name=f"{op.lower()}_huge",
                                                                 kernel_shape=[G, G, G], pads=[1 << 30] * 6,
                                                                 **extra)], [], spatial5=True)
        refused(f"window: 3-D {op} of 2^93 taps", J(f"win_{op}_huge.onnx"), f"{op.lower()}_huge",
                "kernel [2147483648x2147483648x2147483648] over 1 input channel with output [10x29x29x2] per image: "
                "1.67e+32 taps")
    window_model(J("win_max_wide.onnx"), [helper.make_node("MaxPool", ["a"], ["p"], name="maxpool_wide",
                                                           kernel_shape=[1 << 21, 1 << 21], pads=[1 << 20] * 4)], [])
    refused("window: MaxPool of 2^42 taps per output", J("win_max_wide.onnx"), "maxpool_wide",
            "kernel [2097152x2097152] over 1 input channel with output [10x29x29]")
    # a 1024x1024 Conv (4 MiB of weights) padded to 8197x8197 outputs: 2^46 multiply-adds per image; a
    # 1024x2048 ConvTranspose dilated by 4: 4120x8216 outputs each gathering 2^21 taps (2^46)
    w = numpy_helper.from_array(np.full((1, 1, 1024, 1024), 1e-6, np.float32), "w")
    window_model(J("win_conv_work.onnx"), [helper.make_node("Conv", ["a", "w"], ["p"], name="conv_work",
                                                            pads=[4596] * 4)], [w], c=1)
    refused("window: Conv of 2^46 multiply-adds per image", J("win_conv_work.onnx"), "conv_work",
            "kernel [1024x1024] over 1 input channel with output [1x8197x8197] per image: 7.05e+13 taps")
    w = numpy_helper.from_array(np.full((1, 1, 1024, 2048), 1e-6, np.float32), "w")
    window_model(J("win_convt_work.onnx"), [helper.make_node("ConvTranspose", ["a", "w"], ["p"], name="convt_work",
                                                             dilations=[4, 4], pads=[0] * 4)], [w], c=1)
    refused("window: ConvTranspose of 2^46 taps per image", J("win_convt_work.onnx"), "convt_work",
            "kernel [1024x2048] over 1 input channel with output [1x4120x8216] per image: 7.1e+13 taps")


def hdf5_sets():
    import h5py
    images, labels = fmnist_test(16)
    M = ["eval", "--model", MODEL, "--data"]
    h5(J("i64.h5"), images=images.astype(np.int64), labels=labels)
    case("hdf5: int64 images", M + [J("i64.h5")], 4, "int64")
    h5(J("f16.h5"), images=images.astype(np.float16), labels=labels)
    case("hdf5: float16 images", M + [J("f16.h5")], 4, "float16")
    h5(J("rank2.h5"), images=images.reshape(16, -1), labels=labels)
    case("hdf5: rank-2 images", M + [J("rank2.h5")], 4, "rank 2")
    h5(J("rank5.h5"), images=images.reshape(16, 1, 1, 28, 28), labels=labels)
    case("hdf5: rank-5 images", M + [J("rank5.h5")], 4, "rank 5")
    with h5py.File(J("str.h5"), "w") as f:
        f["images"] = np.array([b"abc"] * 16)
        f["labels"] = labels
    case("hdf5: string images", M + [J("str.h5")], 4, "strings")
    with h5py.File(J("compound.h5"), "w") as f:
        f["images"] = np.zeros((16, 28, 28), dtype=[("a", "u1"), ("b", "f4")])
        f["labels"] = labels
    case("hdf5: compound images", M + [J("compound.h5")], 4, "compound")
    h5(J("flabels.h5"), images=images, labels=labels.astype(np.float32))
    case("hdf5: float labels", M + [J("flabels.h5")], 4, "integer labels")
    h5(J("nlabels.h5"), images=images, labels=labels[:10])
    case("hdf5: fewer labels than images", M + [J("nlabels.h5")], 7, "10 entries for 16 images")
    h5(J("l2.h5"), images=images, labels=np.stack([labels, labels], 1))
    case("hdf5: labels [N,2]", M + [J("l2.h5")], 4, "[N] or [N,1]")
    neg = labels.copy()
    neg[3] = -1
    h5(J("neglabel.h5"), images=images, labels=neg)
    case("hdf5: negative label", M + [J("neglabel.h5")], 7, "negative")
    # a label past the model's classes names the file and dataset, and a huge one is printed as stored
    big = labels.astype(np.int64)
    big[3] = 10
    h5(J("label10.h5"), images=images, labels=big)
    case("hdf5: label 10 for a 10-class model", M + [J("label10.h5")], 7,
         "sample 3: label 10 (labels 'labels' in " + J("label10.h5") + ") is out of range for the model's 10 classes")
    big[3] = 2**40
    h5(J("label2e40.h5"), images=images, labels=big)
    case("hdf5: label 2**40", M + [J("label2e40.h5")], 7, "label 1099511627776 of sample 3 in labels 'labels' in")
    with h5py.File(J("pastnames.h5"), "w") as f:
        f["images"] = images
        big = labels.copy()
        big[0] = 5
        f["labels"] = big
        f.attrs["class_names"] = ["a", "b"]
    case("hdf5: label past class_names", M + [J("pastnames.h5")], 7, "class_names")
    h5(J("empty.h5"), images=np.zeros((0, 28, 28), np.uint8), labels=np.zeros(0, np.int64))
    case("hdf5: no images", M + [J("empty.h5")], 7, "empty")
    h5(J("nokey.h5"), pictures=images)
    case("hdf5: no images dataset", M + [J("nokey.h5")], 7, "pictures")
    h5(J("nothing.h5"))
    case("hdf5: no dataset at all: 'it has: nothing' (was 'it has: ')", M + [J("nothing.h5")], 7,
         "looked for images, x, data, X; it has: nothing)")
    h5(J("esc.h5"), **{"pic\x1b[31m": images})
    case("hdf5: a dataset name with a terminal escape is listed escaped", M + [J("esc.h5")], 7, "it has: pic\\x1b[31m)")
    case("hdf5: --images-key missing", M + [J("good.h5"), "--images-key", "nothing"], 7, "nothing")
    case("hdf5: --layout bogus", M + [J("good.h5"), "--layout", "NWHC"], 2, "NWHC")
    h5(J("32px.h5"), images=np.zeros((4, 32, 32), np.uint8), labels=np.zeros(4, np.int64))
    case("hdf5: images of another size", M + [J("32px.h5")], 6, "32x32")
    with h5py.File(J("huge_count.h5"), "w") as f:  # 3e9 images declared in a few KiB
        f.create_dataset("images", shape=(3_000_000_000, 28, 28), dtype=np.uint8, chunks=(1, 28, 28))
        f.create_dataset("labels", shape=(3_000_000_000,), dtype=np.int64, chunks=(1024,))
    case("hdf5: 3e9 images declared, --samples 16",
         ["calibrate", "--model", MODEL, "--data", J("huge_count.h5"), "--samples", "16", "--out", J("hc.h5")], 4,
         "declare 3000000000 images", secs=60)
    case("hdf5: 3e9 images declared, eval", M + [J("huge_count.h5")], 4, "declare 3000000000 images", secs=60)
    with h5py.File(J("huge_geom.h5"), "w") as f:
        f.create_dataset("images", shape=(2, 1_000_000, 1_000_000), dtype=np.uint8, chunks=(1, 64, 64))
    case("hdf5: a 1e6 x 1e6 image declared", M + [J("huge_geom.h5")], 4, "one image would take")
    good = open(J("good.h5"), "rb").read()
    case("hdf5: truncated", M + [write("trunc.h5", good[:len(good) // 2])], 4)
    # found by scripts/fuzz.sh hdf5_set: an integer type 4 GB wide, which libhdf5 sized a buffer by
    wide = os.path.join(SRC, "tests", "data", "badinput", "set_wide_label_type.h5")
    case("hdf5: labels of a 34-gigabit integer type (fuzz)", M + [wide, "--preprocess", "resize=28"], 4,
         "integer labels of 8 to 64 bits")
    with h5py.File(J("bigchunk.h5"), "w") as f:  # chunks libhdf5 allocates whole on each read
        f.create_dataset("images", data=images, chunks=(16, 28, 28), maxshape=(None, 28, 28))
        f.create_dataset("labels", data=labels.astype(np.int32), chunks=(1 << 26,), maxshape=(None,),
                         compression="gzip")
    case("hdf5: a 256 MiB chunk of labels, --max-memory 128M", M + [J("bigchunk.h5"), "--max-memory", "128M"], 10,
         "a chunk of the labels needs 256 MiB")
    # a check child that sits out its wall-clock alarm without using the processor was stuck (a lock held at the
    # fork), not reading: one more child decides; two stuck ones are the file's verdict (PTQ_TEST_VET_STALL)
    case("hdf5: a check child stuck once, then one that reads: runs", M + [J("good.h5")], 0,
         env={"PTQ_TEST_VET_STALL": "1"}, secs=60)
    case("hdf5: two check children stuck: refused", M + [J("good.h5")], 4, "took more than 2 s",
         env={"PTQ_TEST_VET_STALL": "2"}, secs=60)
    case("hdf5: not HDF5", M + [write("text.h5", b"just text\n" * 100)], 4, "not an HDF5 file")
    with h5py.File(J("extlink.h5"), "w") as f:
        f["images"] = h5py.ExternalLink(J("good.h5"), "images")
        f["labels"] = labels
    case("hdf5: external link", M + [J("extlink.h5")], 4, "external")
    # a dangling external link, allowed: the link and its missing target named, exit 3
    with h5py.File(J("deadlink.h5"), "w") as f:
        f["images"] = h5py.ExternalLink("missing.h5", "images")
        f["labels"] = labels
    case("hdf5: a dangling external link, --allow-external-data", M + [J("deadlink.h5"), "--allow-external-data"], 3,
         "'images' in " + J("deadlink.h5") + " is an external link to missing.h5:images, which cannot be opened")
    # a filter this libhdf5 lacks (h5py's lzf): named at open, exit 5
    with h5py.File(J("lzf.h5"), "w") as f:
        f.create_dataset("images", data=images, chunks=(4, 28, 28), compression="lzf")
        f["labels"] = labels
    case("hdf5: images compressed with lzf", M + [J("lzf.h5")], 5,
         "'images' in " + J("lzf.h5") + " is compressed with HDF5 filter 32000 (lzf), which ptq cannot decode")
    esc_names = ["cat\x1b[31m", "dog"] + [f"c{i}" for i in range(8)]
    with h5py.File(J("escnames.h5"), "w") as f:
        f["images"] = images
        f["labels"] = labels
        f.attrs["class_names"] = esc_names
    case("hdf5: ESC in a class name, eval escapes it", M + [J("escnames.h5")], 0,
         out_check=lambda out, err: "cat\\x1b[31m" in out and "\x1b" not in out)


def archives():
    import h5py
    import hdf5plugin  # noqa: F401 (zstd, filter 32015, for the histograms)
    rc, _, err = run(["calibrate", "--model", MODEL, "--data", J("good.h5"), "--out", J("arc.h5")])
    check("archives: a good archive to spoil", rc == 0, err)
    if rc != 0:
        return

    def spoiled(name, fn):
        shutil.copy(J("arc.h5"), J(name))
        with h5py.File(J(name), "a") as f:
            fn(f)
        return J(name)

    E = ["export", "--method", "minmax", "--format", "json", "--out", J("r.json")]
    case("archive: a data set, not an archive", E + [J("good.h5")], 4, "not a ptq calibration archive")
    case("archive: truncated", E + [write("arc_trunc.h5", open(J("arc.h5"), "rb").read()[:3000])], 4)
    case("archive: no format", E + [spoiled("a1.h5", lambda f: f.attrs.__delitem__("format"))], 4, "format")
    case("archive: format_version 2", E + [spoiled("a2.h5", lambda f: f.attrs.__setitem__("format_version", 2))],
         5, "version 2")
    case("archive: n_bins 1000", E + [spoiled("a3.h5", lambda f: f.attrs.__setitem__("n_bins", 1000))], 4,
         "n_bins 1000")

    def cut(key, n):
        """Rewrites dataset key without its last n rows."""
        def fn(f):
            v = f[key][:]
            del f[key]
            f[key] = v[:-n]
        return fn
    case("archive: hist rows short of the names", E + [spoiled("a4.h5", cut("tensors/hist", 1))], 4)

    def bad_ids(f):
        ids = f["samples/id"][:]
        ids[0] += 1000
        del f["samples/id"]
        f["samples/id"] = ids
    case("archive: sample ids off their hash", E + [spoiled("a5.h5", bad_ids)], 4, "sample ids")

    case("archive: tensors/min shorter than the names", E + [spoiled("a6.h5", cut("tensors/min", 2))], 4)

    def twenty_million(f):
        for k in list(f["tensors"].keys()):
            del f["tensors/" + k]
        n = 20_000_000
        f.create_dataset("tensors/name", shape=(n,), dtype=h5py.string_dtype(), chunks=(4096,))
        f.create_dataset("tensors/hist", shape=(n, 4096), dtype=np.int64, chunks=(1, 4096))
        for k in ("count", "n_zero", "n_nan", "n_inf", "n_binned"):
            f.create_dataset("tensors/" + k, shape=(n,), dtype=np.int64, chunks=(4096,))
        for k in ("min", "max"):
            f.create_dataset("tensors/" + k, shape=(n,), dtype=np.float32, chunks=(4096,))
        f.create_dataset("tensors/exponent", shape=(n,), dtype=np.int32, chunks=(4096,))
    case("archive: 20M tensor names declared", E + [spoiled("a7.h5", twenty_million)], 4, "declares 20000000",
         secs=60)

    def str_attr(f):
        f.attrs["n_bins"] = "4096"
    case("archive: n_bins a string", E + [spoiled("a8.h5", str_attr)], 4)
    # found by scripts/fuzz.sh archive: a vlen string whose heap entry is corrupt
    bad_heap = os.path.join(SRC, "tests", "data", "badinput", "archive_bad_vlen_heap.h5")
    case("archive: a corrupt string heap (fuzz)", E + [bad_heap], 4, "malformed HDF5 file, refused", secs=60)
    # found by scripts/fuzz.sh archive: string lengths that make libhdf5 1.10.8 allocate and zero gigabytes
    # (2.1 GB of memory for this 37 KB file before datasets/h5vet.c; over the child's allowance, or a sanitizer
    # report in sanitizer builds), or spin on its heap for minutes
    huge = os.path.join(SRC, "tests", "data", "badinput", "archive_vlen_huge.h5")
    case("archive: string lengths of gigabytes (fuzz)", E + [huge], 4, "malformed HDF5 file, refused", secs=60)
    spin = os.path.join(SRC, "tests", "data", "badinput", "archive_vlen_spin.h5")
    case("archive: a string heap libhdf5 spins on (fuzz)", E + [spin], 4, "processor time", secs=90)
    # found by scripts/fuzz.sh archive: a chunk that decompresses short, which libhdf5 1.10.8 reads past
    # (caught by the sanitizers in the checking child; a build without them reads past it and refuses later)
    short = os.path.join(SRC, "tests", "data", "badinput", "archive_short_chunk.h5")
    case("archive: a chunk shorter than declared (fuzz)", E + [short], 4, secs=60)
    # found by scripts/fuzz.sh archive: a chunk dimension of 0, which libhdf5 1.10.8 divides by on open
    zero = os.path.join(SRC, "tests", "data", "badinput", "archive_zero_chunk_dim.h5")
    case("archive: a chunk dimension of 0 (fuzz)", E + [zero], 4, "libhdf5 crashed", secs=60)
    # under a --max-memory below the check's allowance the crash is put down to the limit, which the message sizes
    # as the other memory-limit messages do (it said "the limit of 0.0 MiB" for 1K)
    case("archive: a chunk dimension of 0 under --max-memory 1K: the limit in KiB", E + [zero, "--max-memory", "1K"],
         10, "needs more memory than the limit of 1.0 KiB (--max-memory)", secs=60)
    # run by a program that ignores SIGCHLD (inherited across exec), whose children the kernel reaps before their
    # status is read: the check's verdict still comes back, through a supervising child (it was exit 4 "ignores
    # SIGCHLD" for every HDF5 file)
    for what, arc, want, fragment in (("a sound archive", J("arc.h5"), 0, ""),
                                      ("a chunk dimension of 0", zero, 4, "libhdf5 crashed")):
        if ONLY and ONLY not in "archive: SIGCHLD ignored":
            break
        p = subprocess.run([PTQ_ABS, *E[:-1], J("sigchld.json"), arc], capture_output=True, text=True, timeout=120,
                           preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
        check(f"archive: SIGCHLD ignored, {what}: exit {want}", p.returncode == want and fragment in p.stderr,
              f"exit {p.returncode}: {p.stderr.strip()[-300:]!r}")
    # a 33 KB zstd frame of 1 GiB of zeros written as the first histogram chunk (32 KiB): libhdf5 hands the filter
    # no chunk size, and the filter allocated and filled whatever the frame declared, past --max-memory (1 GiB
    # resident under --max-memory 64M, then refused for the histogram's sums); a frame past the limit is refused
    bomb_frame = subprocess.run(["zstd", "-q", "-1", "--stream-size=1073741824", "-c"], input=bytes(1 << 30),
                                capture_output=True).stdout if shutil.which("zstd") else b""
    if bomb_frame and (not ONLY or ONLY in "archive: a zstd chunk declaring 1 GiB"):
        bomb = spoiled("a_bomb.h5", lambda f: f["tensors/hist"].id.write_direct_chunk((0, 0), bomb_frame, 0))
        probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
                 "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        p = subprocess.run([sys.executable, "-c", probe, PTQ_ABS, *E, bomb, "--max-memory", "64M"],
                           capture_output=True, text=True, timeout=300)
        rc, kib = (p.stdout.split() + ["?", "0"])[:2]
        check("archive: a zstd chunk declaring 1 GiB under --max-memory 64M: exit 4 within 256 MiB",
              rc == "4" and int(kib) < 256 * 1024 and not os.path.exists(J("r.json")),
              f"exit {rc}, peak RSS {int(kib) // 1024} MiB")
    case("merge: one archive", ["merge", J("arc.h5"), "--out", J("m.h5")], 2)
    case("merge: an archive with itself", ["merge", J("arc.h5"), J("arc.h5"), "--out", J("m.h5")], 2)
    case("export: --method bogus", ["export", J("arc.h5"), "--method", "bogus", "--format", "json",
                                     "--out", J("r.json")], 2, "bogus")


def plans():
    rc, _, err = run(["plan", J("arc.h5"), "--model", MODEL, "--out", J("plan.json"), "--quiet"])
    check("plans: a good plan to spoil", rc == 0, err)
    if rc != 0:
        return
    text = open(J("plan.json")).read()
    plan = json.loads(text)
    C = ["plan", "--check"]

    def spoiled(name, body):
        return [*C, write(name, body, "w"), "--model", MODEL]
    case("plan: the good plan checks", [*C, J("plan.json"), "--model", MODEL], 0)
    case("export: --opset 99999", ["export", "--format", "qdq", "--plan", J("plan.json"), "--model", MODEL,
                                    "--out", J("q.onnx"), "--opset", "99999"], 5, "opset 99999")
    case("plan: not JSON", spoiled("p1.json", "this is not json"), 4, "not valid JSON")
    case("plan: empty", spoiled("p2.json", ""), 4)
    case("plan: trailing garbage", spoiled("p3.json", text + "\n}{garbage"), 4,
         f"unexpected data after the value at byte {len(text) + 1}")
    case("plan: duplicate key", spoiled("p4.json", text.replace('"core":', '"method": "minmax", "core":', 1)), 4,
         "appears twice")
    dup_in_entry = text.replace('"kind":', '"name": "x", "kind":', 1)
    case("plan: duplicate key in a tensor", spoiled("p5.json", dup_in_entry), 4, "appears twice")
    p = json.loads(text)
    p["tensors"] = {"a": 1}
    case("plan: tensors an object", spoiled("p6.json", json.dumps(p)), 4, "tensors")
    p = json.loads(text)
    p["tensors"][1]["scales"] = ["0.5"]
    case("plan: a scale that is a string", spoiled("p7.json", json.dumps(p)), 4, "scale [0] is not a number")
    p = json.loads(text)
    p["format_version"] = 2
    case("plan: format_version 2", spoiled("p8.json", json.dumps(p)), 5, "version 2")
    p = json.loads(text)
    p["tensors"][1]["precision"] = "int3"
    case("plan: unknown precision", spoiled("p9.json", json.dumps(p)), 4, "int3")
    p = json.loads(text)
    p["tensors"][1]["scales"] = [-1.0]
    case("plan: negative scale", spoiled("p10.json", json.dumps(p)), 2)
    p = json.loads(text)
    q8 = next(t for t in p["tensors"] if t["precision"] == "int8" and t["kind"] == "activation")
    q8["scales"] = [1e39]  # past float32's range: the message tells the index from the value
    case("plan: a scale past float32's range", spoiled("p10b.json", json.dumps(p)), 2,
         f"'{q8['name']}': scale [0] is inf; scales must be finite and > 0")
    case("plan: nested 100000 deep", spoiled("p11.json", "[" * 100000 + "]" * 100000), 4)
    p = json.loads(text)
    w = next(t for t in p["tensors"] if t["kind"] == "weight")
    w["scales"] = [0.5] * 100000
    case("plan: 100k scales parse in linear time", spoiled("p12.json", json.dumps(p)), 2, "scale", secs=10)
    p = json.loads(text)
    p["tensors"] = [dict(plan["tensors"][0], name=f"t{i}") for i in range(100000)]
    case("plan: 100k tensors parse in linear time", spoiled("p13.json", json.dumps(p)), 2, secs=20)
    p = json.loads(text)
    p["tensors"][0]["axis"] = 1e300
    case("plan: axis 1e300", spoiled("p14.json", json.dumps(p)), 4, "axis")
    # hand edits of the fields the reader took on trust: a wrong type or an unknown name is refused, naming the
    # field (and the tensor), not read as absent or kept as a lie
    for i, (edit, fragment) in enumerate((
            (lambda q: q.update(core="fp16"), '"core" \'fp16\' is not a core precision'),
            (lambda q: q.update(core=8), '"core" is not a string'),
            (lambda q: q.update(placement="TRT"), '"placement" \'TRT\' is not one of trt, ort, all'),
            (lambda q: q.update(method=7), '"method" is not a string'),
            (lambda q: q["tensors"][1].update(rule="trt.weighted-inputs"),
             f"plan tensor '{plan['tensors'][1]['name']}': \"rule\" 'trt.weighted-inputs' is no placement rule"),
            (lambda q: q["tensors"][1].update(source=["x"]), '"source" is not a string'),
            (lambda q: q["tensors"][1].update(name=plan["tensors"][1]["name"] + "\0other"), "U+0000"))):
        p = json.loads(text)
        edit(p)
        case(f"plan: hand edit {fragment}", spoiled(f"pf{i}.json", json.dumps(p)), 4, fragment)
    # a NUL byte ended the text cJSON saw: what followed it was never read
    case("plan: a NUL byte, then garbage", spoiled("pnul.json", text + "\0}{garbage"), 4,
         f"holds a NUL byte (at byte {len(text)})")
    p = json.loads(text)
    p["method"] = "\x1b[2J"
    case("plan: --check prints the plan's method escaped", spoiled("pesc.json", json.dumps(p)), 0,
         out_check=lambda o, e: "\x1b" not in o and "by \\x1b[2J" in o)
    case("plan: --max-memory too small for the JSON",
         [*C, J("p13.json"), "--model", MODEL, "--max-memory", "1M"], 10, "--max-memory")
    # an activation of |x| near 1e-37 (a Mul by 1e-38 between two Gemms): its INT8 scale is no normal float32,
    # which the plan's own check refused (exit 2); the tensor stays FP32, saying why
    from onnx import TensorProto, helper, numpy_helper
    mats = [np.linspace(-0.5, 1.5, a * b, dtype=np.float32).reshape(a, b) / d
            for a, b, d in ((32, 784, 100), (32, 32, 1), (10, 32, 1))]
    onnx_model(J("tiny.onnx"),
               [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Gemm", ["f", "w1"], ["g1"], transB=1),
                helper.make_node("Mul", ["g1", "s"], ["t"]), helper.make_node("Gemm", ["t", "w2"], ["g2"], transB=1),
                helper.make_node("Gemm", ["g2", "w3"], ["y"], transB=1)],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
               [numpy_helper.from_array(m, f"w{i + 1}") for i, m in enumerate(mats)] +
               [numpy_helper.from_array(np.array(1e-38, np.float32), "s")])
    case("plan: a tiny activation, calibrated", ["calibrate", "--model", J("tiny.onnx"), "--data", J("good.h5"),
                                                  "--out", J("tiny.h5")], 0)

    def tiny_fp32(out, err):
        t = [e for e in json.load(open(J("tiny-plan.json")))["tensors"] if e["name"] == "t"]
        return len(t) == 1 and t[0]["precision"] == "fp32" and "no normal float32 scale" in t[0]["source"]
    case("plan: a tiny activation stays FP32 (no float32 scale)", ["plan", J("tiny.h5"), "--model",
         J("tiny.onnx"), "--out", J("tiny-plan.json")], 0, out_check=tiny_fp32)


def png_folders():
    img = np.zeros((28, 28), np.uint8)
    from cli_test import png_bytes
    M = ["eval", "--model", MODEL, "--data"]
    ok = png_bytes(img)
    root = png_folder("bomb", {"a/0.png": ok, "b/0.png": png_gray(20000, 20000)})
    case("png: 20000x20000 bomb (1 MB -> 400 MB)", M + [root], 6, "refusing to decode", secs=60)
    root = png_folder("trunc", {"a/0.png": ok, "b/0.png": ok[:len(ok) // 2]})
    case("png: truncated file", M + [root], 7, "cannot decode PNG")
    root = png_folder("notpng", {"a/0.png": ok, "b/0.png": b"GIF89a not a png at all"})
    case("png: not a PNG", M + [root], 7, "cannot decode PNG")
    root = png_folder("small", {"a/0.png": png_bytes(np.zeros((8, 8), np.uint8)), "b/0.png": png_bytes(np.zeros((8, 8), np.uint8))})
    case("png: images smaller than the model's input", M + [root], 6)
    os.makedirs(J("emptyfolder"))
    case("png: empty folder", M + [J("emptyfolder")], 7)
    fake = png_gray(30000, 30000, rows=1)  # declares 900M pixels, holds one row
    root = png_folder("liar", {"a/0.png": ok, "b/0.png": fake})
    case("png: header declaring 900M pixels", M + [root], 6, "refusing to decode")
    # class folders whose names hold a space, in both forms of a classes file
    os.makedirs(J("spaced", "my class"))
    root = png_folder("spaced", {"my class/0.png": ok, "b/1.png": ok})
    os.rmdir(J("spaced", "a"))  # png_folder makes a/ and b/
    for form, text in (("names", "my class\nb\n"), ("pairs", "my class 0\nb 1\n")):
        cls = write(f"spaced_{form}.txt", text, "w")
        case(f"png: --classes ({form}) naming 'my class'", M + [root, "--classes", cls, "--json"], 0,
             out_check=lambda o, e: json.loads(o)["samples"] == 2)
    # a label past the model's classes from a labels file names its line
    root = png_folder("lab10", {"a/0.png": ok, "b/1.png": ok})
    lab = write("lab10.txt", "a/0.png 9\nb/1.png 10\n", "w")
    case("png: labels file label 10 for a 10-class model", M + [root, "--labels", lab], 7,
         f"sample 1: label 10 (labels file {lab} line 2 (b/1.png)) is out of range")
    # data convert: the bomb cap does not shrink with --resize, and messages name --resize, not the model
    root = png_folder("convsizes", {"a/0.png": png_bytes(np.zeros((300, 300), np.uint8)),
                                    "a/1.png": png_bytes(np.zeros((56, 56), np.uint8))})
    case("data convert: --resize 28 of a 300x300 PNG", ["data", "convert", "--images", root, "--out", J("cs.h5"),
                                                        "--resize", "28"], 0)
    case("data convert: mixed sizes without --resize name --resize, not the model",
         ["data", "convert", "--images", root, "--out", J("cs2.h5")], 6,
         "1.png: image is 56x56 (width x height) but the set is 300x300 (the first image's size); pass --resize WxH",
         out_check=lambda o, e: "model" not in e and "--preprocess" not in e)
    root = png_folder("convbomb", {"a/0.png": ok, "a/1.png": png_gray(20000, 20000)})
    case("data convert: a 20000x20000 PNG is still refused", ["data", "convert", "--images", root, "--out",
                                                              J("cb.h5"), "--resize", "28"], 6,
         "more than 268435456 (data convert's limit for one image)", secs=60)
    # a dangling symlink is a missing image (exit 3, named), not a sample silently left out
    root = png_folder("dangling", {"a/0.png": ok, "b/1.png": ok})
    os.symlink(J("no-such-image.png"), os.path.join(root, "b", "2.png"))
    case("png: a dangling symlink in a class folder", M + [root], 3, "dangling/b/2.png: No such file or directory")
    case("png: a dangling symlink, data convert", ["data", "convert", "--images", root, "--out", J("dangling.h5")], 3,
         "dangling/b/2.png: No such file or directory")
    os.remove(os.path.join(root, "b", "2.png"))
    os.symlink(J("no-such-folder"), os.path.join(root, "c"))
    case("png: a dangling symlink where a class folder would be", M + [root], 3, "dangling/c: No such file")
    # the options of an HDF5 file, given with an image folder, would be ignored: refused (exit 2) naming the option
    # and the folder, in every command that reads data (they ran as if not given)
    hroot = png_folder("hdf5only", {"a/0.png": ok, "b/1.png": ok})
    for name, args, flag in (("eval", M + [hroot], ["--images-key", "pixels"]),
                             ("eval", M + [hroot], ["--labels-key", "truth"]),
                             ("eval", M + [hroot], ["--layout", "NCHW"]),
                             ("eval", M + [hroot], ["--allow-external-data"]),
                             ("calibrate", ["calibrate", "--model", MODEL, "--data", hroot, "--out", J("hk.h5")],
                              ["--images-key", "pixels"]),
                             ("sensitivity", ["sensitivity", "--model", MODEL, "--calib", J("arc.h5"), "--data", hroot,
                                              "--out", J("hk.json")], ["--layout", "NHW"]),
                             ("smooth", ["smooth", "--model", MODEL, "--data", hroot, "--out", J("hk.onnx")],
                              ["--labels-key", "truth"]),
                             ("plan --method auto", ["plan", J("arc.h5"), "--model", MODEL, "--out", J("hk-plan.json"),
                                                     "--method", "auto", "--data", hroot], ["--images-key", "pixels"])):
        case(f"png: {name} {' '.join(flag)} with an image folder", args + flag, 2,
             f"{hroot} is an image folder, but {' '.join(flag)} applies only to an HDF5 file",
             out_check=lambda o, e: not any(os.path.exists(J(f)) for f in ("hk.h5", "hk.json", "hk.onnx",
                                                                          "hk-plan.json")))
    case("png: eval --images-key and --layout with an image folder, both named", M + [hroot, "--layout", "NHW",
         "--images-key", "pixels"], 2, "--images-key pixels, --layout NHW apply only to an HDF5 file")
    case("png: an image model's --input with an image folder", M + [hroot, "--input", "input=pixels"], 2,
         f"{hroot} is an image folder, but --input input=pixels names a dataset of an HDF5 file")


def jpeg_bytes(img, quality=95):
    import io
    from PIL import Image
    b = io.BytesIO()
    Image.fromarray(img).save(b, format="JPEG", quality=quality)
    return b.getvalue()


def jpeg_sof_patched(data, h, w):
    """data with its SOF0/SOF2 marker declaring h x w."""
    b = bytearray(data)
    for i in range(2, len(b) - 8):
        if b[i] == 0xFF and b[i + 1] in (0xC0, 0xC2):
            b[i + 5:i + 9] = struct.pack(">HH", h, w)
            return bytes(b)
    raise ValueError("no SOF marker")


def jpeg_folders():
    M = ["eval", "--model", MODEL, "--data"]
    ok = jpeg_bytes(np.full((28, 28), 128, np.uint8))
    root = png_folder("jtrunc", {"a/0.jpg": ok, "b/0.jpg": ok[:len(ok) // 2]})
    case("jpeg: truncated file", M + [root], 7, "cannot decode JPEG " + os.path.join(root, "b/0.jpg"))
    noisy = jpeg_bytes(np.random.default_rng(3).integers(0, 255, (28, 28), np.uint8))
    root = png_folder("jtrunc2", {"a/0.jpg": ok, "b/0.jpg": noisy[:len(noisy) - 64]})
    case("jpeg: truncated inside the scan data", M + [root], 7, "Premature end of JPEG file")
    root = png_folder("jnot", {"a/0.jpg": ok, "b/0.JPEG": b"GIF89a not a jpeg at all"})
    case("jpeg: not a JPEG", M + [root], 7, "b/0.JPEG")
    bad = bytearray(ok)
    for i in range(len(bad) // 2, len(bad) - 2):
        bad[i] = 0xFF if i % 3 == 0 else (i * 37) & 0xFF
    root = png_folder("jcorrupt", {"a/0.jpg": ok, "b/0.jpg": bytes(bad)})
    case("jpeg: corrupt scan data", M + [root], 7, "cannot decode JPEG")
    root = png_folder("jhuge", {"a/0.jpg": ok, "b/0.jpg": jpeg_sof_patched(ok, 65000, 65000)})
    case("jpeg: header declaring 65000x65000", M + [root], 6, "refusing to decode", secs=30)
    case("jpeg: 65000x65000 with a resize (1/8 scale still too big)", M + [root, "--preprocess", "resize=28"], 6,
         "refusing to decode", secs=30)
    root = png_folder("jmixed", {"a/0.jpg": ok, "b/0.png": ok})
    case("jpeg: a JPEG named .png is decoded by its bytes, as PIL opens it", M + [root], 0)
    root = png_folder("jgood", {"a/0.jpg": ok, "a/1.jpg": ok, "b/0.jpg": ok})
    labels = write("labels.txt", "a/0.jpg 0\n../jgood/b/0.jpg 1\n", "w")
    case("labels: a path leaving the root", M + [root, "--labels", labels], 7, "line 2")
    labels = write("labels_abs.txt", f"{root}/a/0.jpg 0\n", "w")
    case("labels: an absolute path", M + [root, "--labels", labels], 7, "is absolute")
    labels = write("labels_dup.txt", "a/0.jpg 0\nb/0.jpg 1\na/0.jpg 2\n", "w")
    case("labels: a path listed twice", M + [root, "--labels", labels], 7, "already listed on line 1")
    labels = write("labels_word.txt", "a/0.jpg dog\n", "w")
    case("labels: a label that is no integer", M + [root, "--labels", labels], 7, "'dog'")
    labels = write("labels_miss.txt", "a/0.jpg 0\na/9.jpg 1\n", "w")
    case("labels: a file that is not there", M + [root, "--labels", labels], 3, "a/9.jpg")
    labels = write("labels_big.txt", "a/0.jpg 10\n", "w")
    case("labels: a label past the model's classes", M + [root, "--labels", labels], 7, "label")
    case("labels: the labels file missing", M + [root, "--labels", J("nope.txt")], 3, "nope.txt")
    # a UTF-8 byte-order mark (as Windows editors save) is skipped, in labels and classes files
    labels = write("labels_bom.txt", b"\xef\xbb\xbfa/0.jpg 9\nb/0.jpg 2\n")
    case("labels: a file starting with a UTF-8 BOM", M + [root, "--labels", labels, "--json"], 0,
         out_check=lambda o, e: json.loads(o)["samples"] == 2)
    classes = write("classes_bom.txt", b"\xef\xbb\xbfa 0\nb 1\n")
    case("classes: a file starting with a UTF-8 BOM", M + [root, "--classes", classes, "--json"], 0,
         out_check=lambda o, e: json.loads(o)["samples"] == 3)
    case("labels: with an HDF5 set", M + [J("good.h5"), "--labels", J("labels.txt")], 2, "applies to image folders")
    classes = write("classes_dup.txt", "a 0\nb 1\na 2\n", "w")
    case("classes: a name given twice", M + [root, "--classes", classes], 7, "line 3")
    classes = write("classes_idx.txt", "a 0\nb 0\n", "w")
    case("classes: an index given twice", M + [root, "--classes", classes], 7, "already given to 'a'")
    classes = write("classes_neg.txt", "a 0\nb -3\n", "w")
    case("classes: a negative index", M + [root, "--classes", classes], 7, "not an integer")
    classes = write("classes_unk.txt", "a\n", "w")
    case("classes: a folder it does not name", M + [root, "--classes", classes], 7, "class folder " + root + "/b")
    classes = write("classes_far.txt", "a 0\nb 999\n", "w")
    case("classes: an index past the model's outputs", M + [root, "--classes", classes], 7, "classes but the model outputs 10")
    D = ["data", "convert", "--images", root, "--out"]
    case("data convert: --resize 0x5", D + [J("c0.h5"), "--resize", "0x5"], 2, "--resize wants WxH")
    case("data convert: --resize 5x", D + [J("c0.h5"), "--resize", "5x"], 2, "--resize wants WxH")
    case("data convert: a folder to png", D + [J("c0"), "--format", "png"], 2, "hdf5 only")
    case("data convert: --channels 2", D + [J("c0.h5"), "--channels", "2"], 2, "--channels must be 1 or 3")
    case("data convert: a corrupt JPEG, nothing written", ["data", "convert", "--images", J("jcorrupt"), "--out",
                                                          J("c1.h5")], 7, "cannot decode JPEG",
         out_check=lambda o, e: not os.path.exists(J("c1.h5")))
    case("data convert: --resize with IDX input", ["data", "convert", "--images", J("good.h5"), "--labels",
                                                   J("good.h5"), "--out", J("c2.h5"), "--resize", "8"], 2,
         "are for an image folder")
    fifo = J("labels.fifo")
    os.mkfifo(fifo)
    case("labels: a FIFO", M + [root, "--labels", fifo], 3, "", secs=20)


def idx_files():
    C = ["data", "convert", "--out", J("conv.h5"), "--images"]
    lab = write("lab.idx", idx_bytes(0x00000801, [4], bytes([0, 1, 2, 3])))
    img = write("img.idx", idx_bytes(0x00000803, [4, 28, 28], b"\x00" * 4 * 784))
    case("idx: a good pair converts", C + [img, "--labels", lab], 0)
    if os.path.exists(J("conv.h5")):
        os.remove(J("conv.h5"))
    case("idx: bad magic", C + [write("bad.idx", idx_bytes(0x12345678, [4, 28, 28])), "--labels", lab], 4, "not an IDX")
    case("idx: float type", C + [write("f.idx", idx_bytes(0x00000D03, [4, 28, 28])), "--labels", lab], 4, "type 0x0d")
    case("idx: truncated images", C + [write("t.idx", idx_bytes(0x00000803, [4, 28, 28], b"\x00" * 100)),
                                        "--labels", lab], 4)
    case("idx: labels for 5 images of 4", C + [img, "--labels", write("l5.idx", idx_bytes(0x00000801, [5], b"\x00" * 5))],
         4, "labels")
    case("idx: 4e9 x 1e4 x 1e4 declared", C + [write("h.idx", idx_bytes(0x00000803, [4000000000, 10000, 10000])),
                                                "--labels", write("hl.idx", idx_bytes(0x00000801, [4000000000]))], 4,
         "declares", secs=30)
    case("idx: gzip declaring 4e9 labels", C + [img, "--labels",
                                                 write("hl.idx.gz", gzip.compress(idx_bytes(0x00000801, [4000000000])))],
         4, "declares", secs=30)
    case("idx: gzip garbage", C + [write("g.idx.gz", b"\x1f\x8b\x08\x00garbage-garbage"), "--labels", lab], 4)
    case("idx: --zstd-level 99", C + [img, "--labels", lab, "--zstd-level", "99"], 2)
    # an empty class name would shift every later label's name: refused, naming its position
    case("idx: --class-names a,,c,d", C + [img, "--labels", lab, "--class-names", "a,,c,d"], 2,
         "--class-names item 2 is empty")
    case("idx: --class-names with a trailing comma", C + [img, "--labels", lab, "--class-names", "a,b,c,d,"], 2,
         "--class-names item 5 is empty")
    case("idx: --class-names with a blank item", C + [img, "--labels", lab, "--class-names", " ,b,c,d"], 2,
         "--class-names item 1 is empty")


def flags():
    M = ["eval", "--model", MODEL, "--data", J("good.h5")]
    case("flags: --threads 4294967297", M + ["--threads", "4294967297"], 2, "--threads")
    case("flags: --threads 0", M + ["--threads", "0"], 2, "--threads")
    case("flags: --batch 0", M + ["--batch", "0"], 2, "--batch")
    case("flags: --batch -5", M + ["--batch", "-5"], 2, "--batch")
    case("flags: --batch 1e3", M + ["--batch", "1e3"], 2, "--batch")
    case("flags: --limit 99999999999999999999", M + ["--limit", "99999999999999999999"], 2, "--limit")
    case("flags: unknown option", M + ["--frobnicate"], 2, "frobnicate")
    case("flags: --device bogus", M + ["--device", "tpu"], 2)
    case("flags: --max-memory bogus", M + ["--max-memory", "lots"], 2, "--max-memory")
    case("flags: --max-memory 1M refuses --batch 256", M + ["--max-memory", "1M", "--batch", "256"], 10,
         "--max-memory")
    # without --batch the default shrinks to the largest power of two that fits (32 images: about 7 MiB)
    case("flags: --max-memory 3M without --batch: batch 8, with a note", M + ["--max-memory", "3M", "--json"], 0,
         "note: batch 8 (the largest power of two that fits): a batch of 32 would need",
         out_check=lambda out, err: json.loads(out)["batch"] == 8)
    case("flags: --max-memory 3M with --batch 32 is refused", M + ["--max-memory", "3M", "--batch", "32"], 10,
         "a batch of 32 samples needs")
    # under 64 MiB the HDF5 check keeps its own floor: a valid file is never called malformed for a small limit
    for limit in ("256K", "512K", "2M"):
        case(f"flags: --max-memory {limit}: the HDF5 check passes, batch shrinks", M + ["--max-memory", limit,
             "--limit", "10"], 0, "note: batch")
    case("flags: --max-memory 128K: even one sample is over it, sizes under 1 MiB in KiB",
         M + ["--max-memory", "128K", "--limit", "10"], 10, "more than the memory limit of 128.0 KiB (--max-memory); "
         "raise --max-memory")
    case("flags: --max-memory 1K: over it, sizes in KiB (was 'needs 1 MiB ... limit of 0 MiB')",
         M + ["--max-memory", "1K"], 10, "KiB (input buffers and activations), more than the memory limit of 1.0 KiB")
    case("flags: no note when the default batch fits", M + ["--json"], 0,
         out_check=lambda out, err: json.loads(out)["batch"] == 256 and "note: batch" not in err)
    case("flags: --preprocess garbage", M + ["--preprocess", "scale=banana"], 2)
    # a key given twice in the spec kept the last silently (mean 0.2 here); --preprocess given twice is refused too
    case("flags: --preprocess naming mean twice", M + ["--preprocess", "mean=0.5 mean=0.2"], 2,
         "preprocess key 'mean' is given twice (mean=0.5, then mean=0.2)")
    case("flags: --preprocess naming the height in size= and height=", M + ["--preprocess", "size=28 height=28"], 2,
         "preprocess keys 'size' and 'height' both set the height")
    case("flags: --preprocess given twice", M + ["--preprocess", "mean=0.5", "--preprocess", "mean=0.2"], 2,
         "option '--preprocess' is given twice")
    C = ["calibrate", "--model", MODEL, "--data", J("good.h5"), "--out", J("x.h5")]
    case("flags: --shard 5/2", C + ["--shard", "5/2"], 2, "shard")
    case("flags: --seed -1", C + ["--seed", "-1"], 2, "--seed")
    case("flags: --bins 1000", C + ["--bins", "1000"], 2, "bin count")
    # 2^24 bins are 128 MiB a tensor: refused before the observers are made, not found out by the OOM killer
    case("flags: --bins 16777216 over --max-memory 1G", ["calibrate", "--model", MODEL, "--data", J("good.h5"),
         "--out", J("bins24.h5"), "--bins", "16777216", "--max-memory", "1G"], 10,
         "histograms of 16777216 bins needs", out_check=lambda out, err: not os.path.exists(J("bins24.h5")))
    case("flags: --samples 0", C + ["--samples", "0"], 2, "--samples")
    # export --json --quiet printed the JSON, --quiet ignored
    case("flags: export --json --quiet", ["export", J("arc.h5"), "--method", "minmax", "--format", "json", "--out",
                                          J("jq.json"), "--json", "--quiet"], 2,
         "--json prints the ranges and --quiet prints nothing",
         out_check=lambda out, err: not os.path.exists(J("jq.json")))
    # --output names the logits: calibrate and smooth read none, and only checked that the name existed
    case("flags: calibrate --output", C + ["--output", "logits"], 2, "--output is used only by the commands that "
         "read logits", out_check=lambda out, err: not os.path.exists(J("x.h5")))
    vit = os.path.join(SRC, "models", "fmnist_vit.onnx")  # a model with something to smooth
    case("flags: smooth --output", ["smooth", "--model", vit, "--data", J("good.h5"), "--out", J("sm.onnx"),
                                    "--output", "logits"], 2, "--output is used only by the commands that read logits",
         out_check=lambda out, err: not os.path.exists(J("sm.onnx")))
    case("flags: --ops NoSuchOp", C + ["--ops", "NoSuchOp"], 2)
    # a misspelt op type beside a good one selected nothing, silently: the archive held Conv's tensors only
    case("flags: --ops Conv,Gemmm", C + ["--ops", "Conv,Gemmm"], 2, "'Gemmm' is no ONNX op type ptq knows",
         out_check=lambda out, err: not os.path.exists(J("x.h5")))
    case("flags: --ops Conv,,Gemm", C + ["--ops", "Conv,,Gemm"], 2, "op types 'Conv,,Gemm' hold an empty item")
    case("flags: --data missing", ["eval", "--model", MODEL, "--data", J("missing.h5")], 3, "missing.h5")
    if hasattr(os, "mkfifo"):
        os.mkfifo(J("fifo.h5"))
        case("flags: --data a FIFO", ["eval", "--model", MODEL, "--data", J("fifo.h5")], 3, secs=30)
        os.remove(J("fifo.h5"))


def write_failures():
    C = ["calibrate", "--model", MODEL, "--data", J("good.h5"), "--out"]
    case("write: injected failure in the archive", C + [J("wf.h5")], 3, "No space left",
         env={"PTQ_TEST_FAIL_WRITE_AFTER": "1000"}, out_check=lambda o, e: not os.path.exists(J("wf.h5")))
    lab = J("lab.idx")
    img = J("img.idx")
    case("write: injected failure in data convert", ["data", "convert", "--images", img, "--labels", lab,
                                                     "--out", J("wc.h5")], 3, "No space left",
         env={"PTQ_TEST_FAIL_WRITE_AFTER": "100"}, out_check=lambda o, e: not os.path.exists(J("wc.h5")))
    case("write: injected failure in export", ["export", J("arc.h5"), "--method", "minmax", "--format", "trt",
                                               "--out", J("wt.cache")], 3, "No space left",
         env={"PTQ_TEST_FAIL_WRITE_AFTER": "10"}, out_check=lambda o, e: not os.path.exists(J("wt.cache")))
    full = J("full")
    os.makedirs(full)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full], capture_output=True)
    if p.returncode != 0:
        print("skip write: a full disk (mounting a tmpfs is not permitted here)")
        return
    try:
        with open(os.path.join(full, "fill"), "wb") as f:
            try:
                f.write(b"\x00" * 60 * 1024)
            except OSError:
                pass
        for name, args in [("calibrate", C + [os.path.join(full, "c.h5")]),
                           ("data convert", ["data", "convert", "--images", img, "--labels", lab,
                                             "--out", os.path.join(full, "c2.h5")]),
                           ("merge", ["merge", J("arc.h5"), J("arc.h5"), "--out", os.path.join(full, "m.h5")])]:
            if name == "merge":
                continue  # merge of one archive with itself is refused before writing (above)
            global cases
            cases += 1
            rc, _, err = run(args)
            left = [f for f in os.listdir(full) if f != "fill"]
            check(f"write: full disk, {name}", rc == 3 and len(err.strip().splitlines()) == 1 and not left,
                  f"exit {rc}, left {left}: {err.strip()[-300:]!r}")
    finally:
        subprocess.run(["umount", full])


def main():
    global T
    if not have_demo():
        print("skip: no demo model or Fashion-MNIST")
        return 77
    T = tempfile.mkdtemp(prefix="ptq-badinput-")
    try:
        good_set()
        models()
        windows()
        hdf5_sets()
        archives()
        plans()
        png_folders()
        jpeg_folders()
        idx_files()
        flags()
        write_failures()
    finally:
        shutil.rmtree(T, ignore_errors=True)
    print(f"badinput: {cases} cases")
    if not ONLY and cases < 60:
        check("the catalogue holds at least 60 cases", False, str(cases))
    return finish("badinput_test")


if __name__ == "__main__":
    sys.exit(main())
