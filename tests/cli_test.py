#!/usr/bin/env python3
"""The ptq command end to end: `info`, `eval --json`, `data convert`, and
every kind of bad input the foundation issue lists, each giving one clear
message and its documented exit code (README.md), never a crash.
Run by ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import json
import os
import sys
import tempfile
import zlib
import struct

try:
    import numpy as np
    import h5py
    import onnx
    from onnx import helper, TensorProto
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

from ptqtest import FM, MODEL, check, failures, ptq  # noqa: E402


def expect(name, args, code, *needles):
    rc, out, err = ptq(*args)
    ok = rc == code and all(n in err for n in needles) and err.count("error:") <= 1
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {rc} (want {code}): {err.strip().splitlines()[-1] if err.strip() else ''}")
    if not ok:
        failures.append(name)
        print(f"      stderr: {err!r}\n      wanted substrings {needles}")


def png_bytes(img):
    """A minimal 8-bit grayscale PNG encoder (zlib + CRC), independent of ptq."""
    h, w = img.shape
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    if not os.path.exists(MODEL):
        print(f"skipped: {MODEL} missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-cli-")
    with open(MODEL, "rb") as f:
        data_bytes = f.read()

    # info
    rc, out, err = ptq("info", MODEL, "--json")
    info = json.loads(out) if rc == 0 else {}
    ok = rc == 0 and info.get("supported") and info["inputs"][0]["name"] == "input" and info["parameters"] > 10000 \
        and info["ops"].get("Conv", 0) >= 5 and len(info["quantizable_weights"]) == info["ops"]["Conv"] + info["ops"].get("Gemm", 0) \
        and info.get("runnable") is True and info.get("logits_output") == "logits"
    print(f"{'ok  ' if ok else 'FAIL'} info --json: {info.get('ops')} params {info.get('parameters')}")
    if not ok:
        failures.append("info")

    # data convert: HDF5 and PNG folder of the test split; eval on both agree
    h5 = os.path.join(tmp, "fm.h5")
    rc, out, err = ptq("data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
                       f"{FM}/t10k-labels-idx1-ubyte.gz", "--class-names", "fashion-mnist", "--out", h5)
    if rc != 0:
        failures.append("data convert hdf5")
        print("FAIL data convert:", err)
    else:
        with h5py.File(h5, "r") as f:
            ok = f["images"].shape == (10000, 28, 28) and f["labels"].shape == (10000,)
        print(f"{'ok  ' if ok else 'FAIL'} data convert -> hdf5 shapes")
        if not ok:
            failures.append("data convert shapes")
    rc, out, err = ptq("eval", "--model", MODEL, "--data", h5, "--limit", "1000", "--json")
    rep = json.loads(out) if rc == 0 else {}
    ok = rc == 0 and rep.get("samples") == 1000 and rep["top1"] > 0.85 and len(rep["confusion"]) == 10 \
        and rep["classes"][9]["name"] == "Ankle_boot" and sum(map(sum, rep["confusion"])) == 1000
    print(f"{'ok  ' if ok else 'FAIL'} eval --json --limit 1000: top1 {rep.get('top1')}")
    if not ok:
        failures.append("eval json")
        print(err)

    # --device cuda without a GPU: a notice, then the CPU
    rc, out, err = ptq("version")
    if "gpu present" not in out:
        rc, out, err = ptq("eval", "--model", MODEL, "--data", h5, "--limit", "64", "--device", "cuda")
        ok = rc == 0 and "no usable GPU" in err and "running on the CPU" in err and "device   cpu" in out
        print(f"{'ok  ' if ok else 'FAIL'} --device cuda without a GPU falls back: {err.strip()[:100]}")
        if not ok:
            failures.append("cuda fallback")

    # bad input, one by one
    expect("missing model", ["eval", "--model", os.path.join(tmp, "nope.onnx"), "--data", h5], 3, "nope.onnx")
    expect("model is a directory", ["info", tmp], 3, tmp)
    expect("missing data", ["eval", "--model", MODEL, "--data", os.path.join(tmp, "nodata.h5")], 3, "nodata.h5")
    if os.geteuid() != 0:  # root reads anything: permission bits cannot make a file unreadable then
        locked = os.path.join(tmp, "locked.onnx")
        with open(locked, "wb") as f:
            f.write(data_bytes)
        os.chmod(locked, 0)
        expect("unreadable model", ["info", locked], 3, "locked.onnx")
    garbage = os.path.join(tmp, "garbage.onnx")
    with open(garbage, "wb") as f:
        f.write(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    expect("garbage onnx", ["info", garbage], 4, "garbage.onnx")
    trunc = os.path.join(tmp, "trunc.onnx")
    with open(trunc, "wb") as f:
        f.write(data_bytes[: len(data_bytes) // 2])
    expect("truncated onnx", ["eval", "--model", trunc, "--data", h5], 4, "trunc.onnx")

    unsup = os.path.join(tmp, "unsup.onnx")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="act0"),
                           helper.make_node("Gelu", ["r"], ["y"], name="fancy_gelu", domain="com.example")],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 28, 28])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    onnx.save(m, unsup)
    expect("unsupported op", ["eval", "--model", unsup, "--data", h5], 5, "fancy_gelu", "Gelu", "com.example",
           "opset 17")

    big = os.path.join(tmp, "big")
    os.makedirs(os.path.join(big, "a"))
    with open(os.path.join(big, "a", "0.png"), "wb") as f:
        f.write(png_bytes(np.full((32, 32), 7, np.uint8)))
    expect("data shape does not fit", ["eval", "--model", MODEL, "--data", big], 6, "32x32", "28x28")

    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    expect("empty png folder", ["eval", "--model", MODEL, "--data", empty], 7, "empty")
    empty_h5 = os.path.join(tmp, "empty.h5")
    with h5py.File(empty_h5, "w") as f:
        f.create_dataset("images", shape=(0, 28, 28), dtype=np.uint8)
        f.create_dataset("labels", shape=(0,), dtype=np.int64)
    expect("empty hdf5 set", ["eval", "--model", MODEL, "--data", empty_h5], 7, "empty.h5")

    badpng = os.path.join(tmp, "badpng")
    os.makedirs(os.path.join(badpng, "cls"))
    with open(os.path.join(badpng, "cls", "a.png"), "wb") as f:
        f.write(png_bytes(np.zeros((28, 28), np.uint8)))
    with open(os.path.join(badpng, "cls", "b.png"), "wb") as f:
        f.write(png_bytes(np.zeros((28, 28), np.uint8))[:60])
    expect("undecodable png", ["eval", "--model", MODEL, "--data", badpng], 7, "b.png")

    badlab = os.path.join(tmp, "badlabel.h5")
    with h5py.File(badlab, "w") as f:
        f.create_dataset("images", data=np.zeros((20, 28, 28), np.uint8))
        f.create_dataset("labels", data=np.array([1] * 13 + [12] + [0] * 6, np.int64))
    expect("label out of range", ["eval", "--model", MODEL, "--data", badlab], 7, "sample 13", "label 12")

    expect("batch too large", ["eval", "--model", MODEL, "--data", h5, "--batch", str(2 ** 62)], 2, "--batch")
    vark = os.path.join(tmp, "vark.onnx")
    g = helper.make_graph([helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Transpose", ["f"], ["t"]),
                           helper.make_node("MatMul", ["f", "t"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "N"])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), vark)
    expect("scores per image change between batches", ["eval", "--model", vark, "--data", h5, "--limit", "150",
                                                       "--batch", "100"], 6, "'y'", "50 scores")
    npy = os.path.join(tmp, "logits.npy")
    expect("unwritable report", ["eval", "--model", MODEL, "--data", h5, "--limit", "10", "--logits", npy,
                                 "--report", os.path.join(tmp, "no", "such", "dir", "r.json")], 3, "r.json")
    left = [f for f in os.listdir(tmp) if f.startswith("logits")]
    print(f"{'ok  ' if not left else 'FAIL'} nothing half-written after a failed eval: {left}")
    if left:
        failures.append("partial output")
    # --report and --logits take their names together: a failed rename of the logits (PTQ_TEST_FAIL_RENAME) leaves
    # both files as they were (the new report had replaced the old one, then was removed: neither was left)
    rep = os.path.join(tmp, "r.json")
    for path in (rep, npy):
        with open(path, "w") as f:
            f.write("old\n")
    rc, _, err = ptq("eval", "--model", MODEL, "--data", h5, "--limit", "10", "--logits", npy, "--report", rep,
                     env={"PTQ_TEST_FAIL_RENAME": "logits.npy"})
    kept = [open(p).read() if os.path.exists(p) else None for p in (rep, npy)]
    check("eval --report --logits: a failed rename of the logits leaves both old files (exit 3)",
          rc == 3 and kept == ["old\n", "old\n"], f"exit {rc}, files {kept}, {err.strip()[-200:]}")
    expect("unknown option", ["eval", "--model", MODEL, "--data", h5, "--bogus"], 2, "--bogus")
    expect("bad device", ["eval", "--model", MODEL, "--data", h5, "--device", "tpu"], 2, "tpu")
    expect("unknown command", ["frobnicate"], 2, "frobnicate")

    # a dynamic (symbolic) output dim shows as ? / null, as the inputs' do, not as its size at batch 1
    text_model = os.path.join(os.path.dirname(MODEL), "text_encoder.onnx")
    rc, out, err = ptq("info", MODEL)
    check("info: the demo's output logits [?x10]", rc == 0 and "output     logits  float32 [?x10]" in out, out[:300])
    rc, out, err = ptq("info", text_model, "--json")
    outs = json.loads(out)["outputs"] if rc == 0 else []
    check("info --json: text_encoder's output shape [null, 6]", [o.get("shape") for o in outs] == [[None, 6]],
          str(outs))
    rc, out, err = ptq("info", MODEL, "--json")
    outs = json.loads(out)["outputs"] if rc == 0 else []
    check("info --json: the demo's output shape [null, 10]", [o.get("shape") for o in outs] == [[None, 10]], str(outs))
    expect("--output names the outputs with ? for the batch", ["eval", "--model", MODEL, "--data", h5, "--output",
           "nosuch"], 2, "its outputs: 'logits' float32 [?x10]")

    # one --batch limit, the one the message gives; --bins' message states its rule
    for cmd in (["eval", "--model", MODEL, "--data", h5], ["plan", os.path.join(tmp, "c.h5"), "--model", MODEL,
                "--method", "auto", "--data", h5, "--out", os.path.join(tmp, "pa.json")]):
        for n in ("65537", "99999999999"):
            expect(f"{cmd[0]} --batch {n}", cmd + ["--batch", n], 2,
                   f"--batch wants an integer in [1, 65536], got '{n}'")
    for n in ("3000", "0", "-4096", "12abc"):  # 0, negative and not a number: the rule too, not [1, 2^63 - 1]
        expect(f"calibrate --bins {n}", ["calibrate", "--model", MODEL, "--data", h5, "--out",
               os.path.join(tmp, "b.h5"), "--bins", n], 2,
               f"--bins wants a power of two in [2048, 16777216] (the histograms' bin count), got '{n}'")

    # a missing value is named, not filled with the next flag; a flag twice or empty is refused
    expect("--batch with no value before --limit", ["eval", "--model", MODEL, "--data", h5, "--batch", "--limit", "5"],
           2, "option '--batch' needs a value")
    expect("--limit given twice", ["eval", "--model", MODEL, "--data", h5, "--limit", "5", "--limit", "6"], 2,
           "option '--limit' is given twice")
    expect("--max-memory given twice", ["eval", "--model", MODEL, "--data", h5, "--max-memory", "4G", "--max-memory",
           "8G"], 2, "option '--max-memory' is given twice")
    expect("--model ''", ["eval", "--model", "", "--data", h5], 2, "option '--model' is empty")
    for bad in (" 8", "+8", "8 "):
        expect(f"--batch '{bad}'", ["eval", "--model", MODEL, "--data", h5, "--batch", bad], 2, "--batch wants")
    # the other numbers in flag values likewise: digits, no space, sign or hex float
    arch, folder = os.path.join(tmp, "n.h5"), os.path.join(tmp, "nfolder")
    os.makedirs(os.path.join(folder, "a"))
    with open(os.path.join(folder, "a", "0.png"), "wb") as f:
        f.write(png_bytes(np.zeros((28, 28), np.uint8)))
    rc, _, err = ptq("calibrate", "--model", MODEL, "--data", h5, "--samples", "16", "--out", arch)
    check("an archive for the export cases", rc == 0, err[-200:])
    conv = ["data", "convert", "--images", folder, "--out", os.path.join(tmp, "r.h5")]
    calib = ["calibrate", "--model", MODEL, "--data", h5, "--out", os.path.join(tmp, "s.h5")]
    trt = ["export", arch, "--method", "minmax", "--format", "trt", "--out", os.path.join(tmp, "t.cache")]
    for flag, val, cmd in (("--resize", " 4", conv), ("--resize", "4x+4", conv), ("--shard", " 0/2", calib),
                           ("--shard", "0/+2", calib), ("--trt-version", " 100300", trt),
                           ("--trt-version", "+10.3.0", trt), ("--device", "cuda: 0", ["eval", "--model", MODEL,
                                                                                       "--data", h5]),
                           ("--method", "percentile=0x63", ["export", arch, "--format", "json", "--out",
                                                            os.path.join(tmp, "m.json")]),
                           ("--max-memory", "0x10", ["eval", "--model", MODEL, "--data", h5])):
        expect(f"{flag} '{val}'", cmd + [flag, val], 2, val)
        check(f"{flag} '{val}': nothing written", not any(os.path.exists(os.path.join(tmp, n)) for n in
                                                           ("r.h5", "s.h5", "t.cache", "m.json")), "")
    expect("--budget 0x10 (a hex float)", ["plan", os.path.join(tmp, "c.h5"), "--model", MODEL, "--out",
           os.path.join(tmp, "pb.json"), "--sensitivity", "s.json", "--budget", "0x10", "--data", h5], 2,
           "--budget wants points")

    # data convert: a missing --images path is named (exit 3), not blamed on --labels
    missing = os.path.join(tmp, "nosuchdir")
    expect("data convert --images MISSING", ["data", "convert", "--images", missing, "--out",
           os.path.join(tmp, "dc.h5")], 3, f"--images {missing}: No such file or directory")
    # data convert to a PNG folder: --zstd-level, which only HDF5 chunks use, is refused rather than ignored
    idx_i, idx_l = os.path.join(tmp, "i.idx"), os.path.join(tmp, "l.idx")
    with open(idx_i, "wb") as f:
        f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, 2, 28, 28) + bytes(2 * 784))
    with open(idx_l, "wb") as f:
        f.write(struct.pack(">BBBBI", 0, 0, 8, 1, 2) + bytes([0, 1]))
    for out_args in (["--out", os.path.join(tmp, "zpng")], ["--out", os.path.join(tmp, "z.h5"), "--format", "png"]):
        expect(f"data convert {' '.join(out_args[2:]) or 'to a folder'} --zstd-level 5",
               ["data", "convert", "--images", idx_i, "--labels", idx_l, *out_args, "--zstd-level", "5"], 2,
               "--zstd-level is used only with --format hdf5")
        check("  nothing written", not os.path.exists(out_args[1]), out_args[1])
    rc, out, err = ptq("data", "convert", "--images", idx_i, "--labels", idx_l, "--out", os.path.join(tmp, "z5.h5"),
                       "--zstd-level", "5")
    check("data convert to HDF5 --zstd-level 5: written", rc == 0 and os.path.exists(os.path.join(tmp, "z5.h5")), err)

    # help and version
    rc, out, err = ptq("--help")
    check("main help lists exit codes 11 and 12 and folder -> HDF5", "11 no plan met" in out and
          "12 the quantized outputs collapsed" in out and "JPEG folder -> HDF5" in out, out[-400:])
    rc, out, err = ptq("version")
    check("version says whether a GPU is usable", rc == 0 and ("gpu present" in out or "gpu: none usable" in out), out)
    expect("version junk", ["version", "junk"], 2, "'junk'")
    rc, out, err = ptq("eval", "--help")
    check("eval --help lists --device gpu and cuda:N", "gpu" in out and "cuda:N" in out, "")
    # help CMD is CMD --help; an unknown CMD is a usage error
    for args in (["eval"], ["export"], ["data"], ["data", "convert"], ["version"], ["run"]):
        rc, out, err = ptq("help", *args)
        rc2, out2, err2 = ptq(*args, "--help")
        check(f"help {' '.join(args)} prints {' '.join(args)} --help", rc == 0 and rc2 == 0 and out == out2 and
              out.startswith(f"usage: ptq {args[0]}"), out[:120])
        rc3, out3, _ = ptq("help", *args, "--help")  # a trailing --help asks for the same page
        check(f"help {' '.join(args)} --help prints it too", rc3 == 0 and out3 == out2, out3[:120])
    for args in (["help"], ["--help"], ["-h"]):
        rc, out, err = ptq("help", *args)
        check(f"help {args[0]} prints the general help", rc == 0 and out == ptq("--help")[1], out[:80])
    expect("help bogus", ["help", "bogus"], 2, "unknown command 'bogus'")
    # a command word from the command line is escaped as names are: ESC would drive the terminal
    expect("unknown command with ESC", ["bo\x1b[31mgus"], 2, "unknown command 'bo\\x1b[31mgus'")
    expect("help of an unknown command with ESC", ["help", "bo\x1b[31mgus"], 2, "unknown command 'bo\\x1b[31mgus'")
    expect("help eval junk", ["help", "eval", "junk"], 2, "'junk'")
    expect("help eval --help junk names junk", ["help", "eval", "--help", "junk"], 2, "'junk'")
    expect("help data convert -h junk names junk", ["help", "data", "convert", "-h", "junk"], 2, "'junk'")
    # --progress: the end line even for a run shorter than the first draw (0.2 s)
    rc, out, err = ptq("eval", "--model", MODEL, "--data", h5, "--limit", "20", "--progress")
    check("eval --limit 20 --progress prints its end line", rc == 0 and "20/20 img" in err, err[-200:])

    print(f"cli_test: {len(failures)} failed" + (f": {failures}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
