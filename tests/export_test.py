#!/usr/bin/env python3
"""The range exporters against ONNX Runtime 1.32's own write_calibration_table
(byte-identical calibration.flatbuffers/.cache/.json), its TrtTable reader and
load_tensors_data, a hand-written flatbuffers reader, the TRT cache's hex bits
and Python's repr. Needs PTQ_BUILD_DIR (ctest sets it); label oracle."""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import flatbuffers
    from flatbuffers.table import Table
    from flatbuffers import number_types as N
except ImportError as e:  # python3-flatbuffers and numpy from Debian or the venv
    print(f"export_test: skipped: {e}")
    sys.exit(77)

failures = []
METHODS = ["minmax", "entropy", "percentile", "mse"]


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def read_ranges(path):
    """ranges.txt: 'amax degenerate method percentile name' with hex floats."""
    out = []
    with open(path, "rb") as f:
        for line in f.read().split(b"\n")[:-1]:
            a, d, m, p, name = line.split(b" ", 4)
            out.append((name.decode("utf-8"), float.fromhex(a.decode()), int(d), int(m), float.fromhex(p.decode())))
    return out


def fb_table(buf):
    """calibration.flatbuffers by hand: root TrtTable, field 0 a vector of
    KeyValue tables with string fields 0 (key) and 1 (value)."""
    root = Table(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
    o = root.Offset(4)
    if not o:
        return []
    vec, n = root.Vector(o), root.VectorLen(o)
    entries = []
    for i in range(n):
        kv = Table(buf, root.Indirect(vec + 4 * i))
        ko, vo = kv.Offset(4), kv.Offset(6)
        entries.append((kv.String(ko + kv.Pos).decode("utf-8") if ko else None,
                        kv.String(vo + kv.Pos).decode("utf-8") if vo else None))
    return entries


def ort_calibration_code():
    """ONNX Runtime's write_calibration_table, TensorsData, load_tensors_data
    and the TrtTable reader. onnxruntime.quantization imports ml_dtypes and
    onnx.reference at the top, which this environment may lack (Debian's
    onnx 1.12); then the same functions are taken from ORT's installed
    sources with ast and run as they are."""
    try:
        from onnxruntime.quantization.CalTableFlatBuffers import TrtTable
        from onnxruntime.quantization.calibrate import (CalibrationMethod, TensorData, TensorsData,
                                                        load_tensors_data)
        from onnxruntime.quantization.quant_utils import write_calibration_table
        print("ORT: onnxruntime.quantization imported")
        return dict(locals())
    except ImportError as e:
        reason = e
    import ast
    import enum
    import importlib.util
    import logging
    import pathlib
    import types
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.origin:
        raise ImportError("onnxruntime is not installed")
    qdir = os.path.join(os.path.dirname(spec.origin), "quantization")
    # the package without its __init__ (which needs ml_dtypes and onnx.reference)
    pkg = types.ModuleType("onnxruntime.quantization")
    pkg.__path__ = [qdir]
    sys.modules["onnxruntime.quantization"] = pkg

    def extract(path, names, module_name, env):
        with open(path) as f:
            tree = ast.parse(f.read())
        body = [n for n in tree.body if getattr(n, "name", None) in names]
        if {n.name for n in body} != set(names):
            raise KeyError(f"{path} lacks {set(names) - {n.name for n in body}}")
        mod = types.ModuleType(module_name)
        mod.__dict__.update(env)
        exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), mod.__dict__)
        sys.modules[module_name] = mod
        return mod

    env = {"json": json, "os": os, "np": np, "Enum": enum.Enum, "Path": pathlib.Path, "logging": logging}
    cal = extract(os.path.join(qdir, "calibrate.py"),
                  ["TensorData", "TensorsData", "CalibrationMethod", "CalibrationCacheEncoder", "load_tensors_data"],
                  "onnxruntime.quantization.calibrate", env)
    qu = extract(os.path.join(qdir, "quant_utils.py"), ["write_calibration_table"],
                 "onnxruntime.quantization.quant_utils", env)
    from onnxruntime.quantization.CalTableFlatBuffers import TrtTable
    print(f"ORT: importing onnxruntime.quantization failed ({reason}); "
          "running write_calibration_table, TensorsData and load_tensors_data from its installed sources")
    return {"TrtTable": TrtTable, "CalibrationMethod": cal.CalibrationMethod, "TensorData": cal.TensorData,
            "TensorsData": cal.TensorsData, "load_tensors_data": cal.load_tensors_data,
            "write_calibration_table": qu.write_calibration_table}


def ort_cpu_tables(tmp, TensorsData, TensorData, CalibrationMethod, write_calibration_table):
    """`ptq export --target ort-cpu --format ort` on the demo model's archive: asymmetric ranges, for which ORT's
    writer puts max(highest, lowest) in the flatbuffers and the cache: byte-identical to ORT's writer fed the
    lowest/highest ptq wrote to calibration.json."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ptqtest import MODEL, fmnist_test, have_demo, ptq
    if not have_demo():
        print("export_test: ort-cpu tables skipped (no demo model or Fashion-MNIST)")
        return
    import h5py
    images, _ = fmnist_test(64)
    with h5py.File(os.path.join(tmp, "cal64.h5"), "w") as f:
        f["images"] = images
    arch, out = os.path.join(tmp, "cal64-archive.h5"), os.path.join(tmp, "ortcpu")
    rc1, _, e1 = ptq("calibrate", "--model", MODEL, "--data", os.path.join(tmp, "cal64.h5"), "--out", arch)
    rc2, _, e2 = ptq("export", arch, "--method", "minmax", "--target", "ort-cpu", "--format", "ort", "--out", out)
    check(rc1 == 0 and rc2 == 0, f"ort-cpu tables: calibrate/export exit {rc1}/{rc2}: {e1[-200:]} {e2[-200:]}")
    if rc1 or rc2:
        return
    js = json.load(open(os.path.join(out, "calibration.json")))["data"]
    asym = sum(v["lowest"] != -v["highest"] for v in js.values())
    theirs = os.path.join(tmp, "ortcpu_ort")
    os.makedirs(theirs)
    write_calibration_table(TensorsData(CalibrationMethod.MinMax, {
        n: TensorData(lowest=np.float32(v["lowest"]), highest=np.float32(v["highest"])) for n, v in js.items()}),
        dir=theirs)
    same = [f for f in ("calibration.flatbuffers", "calibration.cache", "calibration.json")
            if open(os.path.join(out, f), "rb").read() == open(os.path.join(theirs, f), "rb").read()]
    print(f"ort-cpu tables: {len(js)} tensors, {asym} asymmetric; identical to ORT's writer: {same}")
    check(asym > 0 and len(same) == 3, "ort-cpu tables differ from ORT's write_calibration_table")


def mlp(path, x):
    """x [N, 64] -> MatMul -> Relu -> Gemm (transB 0), saved at path, calibrated on x: the archive's path."""
    import h5py
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from ptqtest import ptq
    rng = np.random.default_rng(0)
    init = [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
            for n, s in (("W1", (64, 32)), ("W2", (32, 10)), ("B2", (10,)))]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "B2"], ["y"], name="gemm")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], initializer=init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)
    data, arch = path + ".h5", path + "-archive.h5"
    with h5py.File(data, "w") as f:
        f["x"] = x
        f["labels"] = np.zeros(len(x), np.int64)
    rc, _, err = ptq("calibrate", "--model", path, "--data", data, "--out", arch)
    check(rc == 0, f"calibrate {path}: {err[-300:]}")
    return arch


def no_positive_tables(tmp, TensorsData, TensorData, CalibrationMethod, write_calibration_table):
    """--target ort-cpu on a tensor with no positive value (x = -|N(0, 1)| - 0.5): its range widened to hold 0
    as the plan's is ([lowest, 0] in calibration.json and ranges.json), left out of calibration.flatbuffers and
    .cache (the TensorRT EP would read an amax of 0) with a warning naming it, exit 0; the tables otherwise
    byte-identical to ORT's writer fed ptq's calibration.json."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ptqtest import ptq
    try:
        x = -np.abs(np.random.default_rng(1).standard_normal((256, 64)).astype(np.float32)) - np.float32(0.5)
        arch = mlp(os.path.join(tmp, "neg.onnx"), x)
    except ImportError as e:
        print(f"export_test: no-positive tables skipped: {e}")
        return
    out = os.path.join(tmp, "neg_ort")
    rc, _, err = ptq("export", arch, "--method", "minmax", "--target", "ort-cpu", "--format", "ort", "--out", out)
    check(rc == 0 and "tensor 'x' has no positive values" in err and "not a normal" not in err,
          f"ort-cpu on an all-negative tensor: exit {rc}, {err.strip()[-300:]}")
    if rc:
        return
    js = json.load(open(os.path.join(out, "calibration.json")))["data"]
    check(js["x"]["highest"] == 0.0 and js["x"]["lowest"] == float(np.float32(x.min())),
          f"calibration.json: x's range {js['x']} is not [min, 0]")
    check(js["r"]["lowest"] == 0.0, f"calibration.json: Relu output's lowest {js['r']['lowest']} is not 0")
    theirs = os.path.join(tmp, "neg_ort_theirs")
    os.makedirs(theirs)
    live = {n: v for n, v in js.items() if v["highest"] > 0}
    write_calibration_table(TensorsData(CalibrationMethod.MinMax, {
        n: TensorData(lowest=np.float32(v["lowest"]), highest=np.float32(v["highest"])) for n, v in live.items()}),
        dir=theirs)
    same = [f for f in ("calibration.flatbuffers", "calibration.cache")
            if open(os.path.join(out, f), "rb").read() == open(os.path.join(theirs, f), "rb").read()]
    check(len(live) == len(js) - 1 and len(same) == 2,
          f"no-positive tables: {len(live)} of {len(js)} live; identical to ORT's writer: {same}")
    rc, _, err = ptq("export", arch, "--method", "minmax", "--target", "ort-cpu", "--format", "json", "--out",
                     os.path.join(tmp, "neg.json"))
    rj = {t["name"]: t for t in json.load(open(os.path.join(tmp, "neg.json")))["tensors"]} if rc == 0 else {}
    check(rc == 0 and rj.get("x", {}).get("highest") == 0.0, f"ranges.json: x {rj.get('x')} not widened to 0 ({err})")
    print(f"no-positive tables: x {js['x']}, left out of the TensorRT-facing tables; identical to ORT's: {same}")


def main():
    with tempfile.TemporaryDirectory(prefix="ptq-export-") as tmp:
        return run(tmp)


def run(tmp):
    build = os.environ.get("PTQ_BUILD_DIR")
    if not build:
        print("export_test: skipped (PTQ_BUILD_DIR unset)")
        return 77
    exe = os.path.join(build, "tests", "test_export")
    if not os.path.exists(exe):
        print(f"export_test: skipped ({exe} not built)")
        return 77
    d1, d2 = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    for d in (d1, d2):
        run = subprocess.run([exe, "--write", d], capture_output=True, text=True)
        print(run.stdout, end="")
        print(run.stderr, end="", file=sys.stderr)
        if run.returncode != 0:
            print(f"export_test: {exe} --write exited {run.returncode}")
            return 1

    def data(name, d=d1):
        with open(os.path.join(d, name), "rb") as f:
            return f.read()

    files = ["trt.cache", "calibration.flatbuffers", "calibration.cache", "calibration.json", "ranges.json"]
    same = [f for f in files if data(f) == data(f, d2)]
    print(f"determinism: {len(same)}/{len(files)} files identical across two runs")
    check(len(same) == len(files), "two runs gave different bytes")

    ranges = read_ranges(os.path.join(d1, "ranges.txt"))
    live = [r for r in ranges if not r[2]]
    n_colon = sum(":" in r[0] for r in ranges)
    print(f"{len(ranges)} ranges, {len(ranges) - len(live)} degenerate, {n_colon} names with ':', "
          f"{sum(any(ord(c) > 127 for c in r[0]) for r in ranges)} non-ASCII")
    check(len(ranges) >= 50 and n_colon >= 3 and len(live) < len(ranges), "the fixed set lost its variety")

    # --- repr: our shortest round-trip formatting against Python's ---
    bad = 0
    lines = data("repr.txt").decode().splitlines()
    for line in lines:
        h, s = line.split(" ")
        x = float.fromhex(h)
        if repr(x) != s:
            bad += 1
            if bad <= 5:
                print(f"  repr({h}) = {repr(x)}, ptq wrote {s}")
    print(f"repr: {len(lines) - bad}/{len(lines)} doubles formatted as Python's repr")
    check(bad == 0 and len(lines) > 15000, "ptq_export_format_double differs from repr")

    # --- TensorRT cache: header, order, exact scale bits, amax within float32 rounding ---
    text = data("trt.cache").decode("utf-8")
    check(text.endswith("\n") and "\r" not in text, "TRT cache line ends")
    lines = text.split("\n")[:-1]
    check(lines[0] == "TRT-100300-EntropyCalibration2", f"TRT header {lines[0]!r}")
    body = lines[1:]
    check(len(body) == len(live), f"TRT cache has {len(body)} entries, want {len(live)}")
    exact = close = 0
    for line, (name, amax, _, _, _) in zip(body, live):
        got_name, hexbits = line.rsplit(": ", 1)
        check(got_name == name, f"TRT cache name {got_name!r} != {name!r}")
        check(len(hexbits) == 8 and hexbits == hexbits.lower(), f"TRT cache value {hexbits!r}")
        scale = struct.unpack(">f", bytes.fromhex(hexbits))[0]
        exact += scale == float(np.float32(amax / 127.0))
        back = scale * 127.0
        close += abs(back - amax) <= amax * 2.0 ** -23
    print(f"TRT cache: {len(body)} entries, {exact} scales bit-exact, {close} amax recovered within float32 rounding")
    check(exact == len(live) and close == len(live), "TRT cache scales")
    # ORT's TensorRT-EP parser takes the name up to the first ':'
    ep_names = {line.split(":", 1)[0] for line in body}
    cut = sum(r[0] not in ep_names for r in live)
    print(f"TRT cache: {cut} names the ORT EP parser would cut at ':' (ptq counts {sum(':' in r[0] for r in live)})")
    check(cut == sum(":" in r[0] for r in live), "':' warning count")

    # --- calibration.flatbuffers: hand reader and ORT's generated reader ---
    buf = data("calibration.flatbuffers")
    entries = fb_table(buf)
    want = {name: repr(float(np.float32(amax))) for name, amax, *_ in live}
    check(len(entries) == len(want), f"flatbuffer has {len(entries)} entries, want {len(want)}")
    keys = [k for k, _ in entries]
    check(keys == sorted(want, reverse=True), "flatbuffer entries are not in ORT's (descending) order")
    good = sum(want.get(k) == v and float(v) == float(np.float32(float(v))) for k, v in entries)
    print(f"flatbuffers (hand reader): {len(entries)} entries, {good} values equal str(float32 amax)")
    check(good == len(want), "flatbuffer values")

    try:
        ort = ort_calibration_code()
    except (ImportError, OSError, KeyError) as e:
        print(f"export_test: ORT comparisons skipped: {e!r}")
        print(f"export_test: {len(failures)} failed")
        return 1 if failures else 0
    TrtTable, CalibrationMethod, TensorData, TensorsData, load_tensors_data, write_calibration_table = (
        ort["TrtTable"], ort["CalibrationMethod"], ort["TensorData"], ort["TensorsData"], ort["load_tensors_data"],
        ort["write_calibration_table"])
    t = TrtTable.TrtTable.GetRootAs(buf, 0)
    ort_read = {t.Dict(i).Key().decode(): float(t.Dict(i).Value().decode()) for i in range(t.DictLength())}
    ok = sum(np.float32(ort_read.get(n, -1)) == np.float32(a) for n, a, *_ in live)
    print(f"flatbuffers (ORT's TrtTable reader): {len(ort_read)} entries, {ok} amax equal as float32")
    check(ok == len(live) and len(ort_read) == len(live), "ORT's reader")

    # --- ORT's own writer on the same ranges: byte-identical files ---
    def tensors(rs):
        methods = {r[3] for r in rs}
        names = {1: CalibrationMethod.Entropy, 2: CalibrationMethod.Percentile}
        m = names.get(methods.pop(), CalibrationMethod.MinMax) if len(methods) == 1 else CalibrationMethod.MinMax
        return TensorsData(m, {n: TensorData(lowest=-np.float32(0.0 if d else a), highest=np.float32(0.0 if d else a))
                               for n, a, d, *_ in rs})

    ort_live, ort_all = os.path.join(tmp, "ort_live"), os.path.join(tmp, "ort_all")
    for d, rs in ((ort_live, live), (ort_all, ranges)):
        os.makedirs(d)
        write_calibration_table(tensors(rs), dir=d)
    for ours, d in (("calibration.flatbuffers", ort_live), ("calibration.cache", ort_live),
                    ("calibration.json", ort_all)):
        theirs = data(ours, d)
        mine = data(ours)
        first = next((i for i in range(min(len(mine), len(theirs))) if mine[i] != theirs[i]), None)
        print(f"{ours}: ptq {len(mine)} bytes, ORT {len(theirs)} bytes, "
              f"{'identical' if mine == theirs else f'first difference at byte {first}'}")
        check(mine == theirs, f"{ours} differs from ORT's write_calibration_table")

    ort_cpu_tables(tmp, TensorsData, TensorData, CalibrationMethod, write_calibration_table)
    no_positive_tables(tmp, TensorsData, TensorData, CalibrationMethod, write_calibration_table)

    # calibration.cache read as the text it is
    rows = [line.split(" ") for line in data("calibration.cache").decode("utf-8").split("\n")[:-1]]
    check(len(rows) == len(live), "calibration.cache entry count")

    # calibration.json: json, and ORT's loader (quantize_static's calibration_cache_path) reads it
    js = json.loads(data("calibration.json"))
    check(list(js["data"]) == [r[0] for r in ranges], "calibration.json keeps the given order")
    loaded = load_tensors_data(os.path.join(d1, "calibration.json"))
    ok = sum(float(loaded[n].range_value[1]) == float(np.float32(0.0 if d else a)) and
             float(loaded[n].range_value[0]) == -float(np.float32(0.0 if d else a)) for n, a, d, *_ in ranges)
    print(f"calibration.json: load_tensors_data gave {len(list(loaded))} tensors, {ok} ranges equal, "
          f"method {loaded.calibration_method}")
    check(ok == len(ranges), "calibration.json through load_tensors_data")

    # --- ptq's JSON: every number read back exactly ---
    pj = json.loads(data("ranges.json"))
    check(pj["format"] == "ptq-ranges" and pj["format_version"] == 1, "ranges.json header")
    check(pj["model"]["sha256"] == "0123456789abcdef" * 4 and pj["archive"]["path"] == "calib.h5", "ranges.json meta")
    ok = 0
    for e, (name, amax, d, m, p) in zip(pj["tensors"], ranges):
        fine = (e["name"] == name and e["amax"] == amax and e["degenerate"] == bool(d) and
                e["method"] == METHODS[m] and e["format"] == "int8" and
                (e.get("percentile") == p if m == 2 else "percentile" not in e) and
                (d or e["scale"] == amax / 127.0) and 0 <= e["clipped_fraction"] < 1e-3)
        ok += fine
        if not fine:
            print(f"  ranges.json entry {e!r} vs {(name, amax, d, m, p)}")
    print(f"ranges.json: {len(pj['tensors'])} tensors, {ok} read back exactly")
    check(ok == len(ranges) and len(pj["tensors"]) == len(ranges), "ranges.json values")

    print(f"export_test: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
