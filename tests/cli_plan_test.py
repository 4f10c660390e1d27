#!/usr/bin/env python3
"""`ptq plan` end to end: the default INT8 and FP8 plans from a calibration
archive of the demo model (FP16 edges, per-channel weight scales checked
against numpy's max|w| / 127, and for FP8 against the one of max|w| / 448 *
2^(k / 16), k in [0, 16), whose E4M3 rounding numpy finds least wrong), `ptq plan --check` of the plan and of hand
edits it must refuse (unknown tensor, scales zero / negative / infinite, a
plan for another model, not a plan), each with its exit code and nothing
written; the --target ort-cpu plan (uint8 activations with zero points, zero
point 0 after a ReLU) and what it refuses; --reduce-range (weight scales
max|w| / 64, exported codes in [-64, 64]) and what it refuses, and with the
measured plans: `ptq sensitivity --reduce-range` records it, `plan --budget`
and `plan --method auto` write plans that have it (scales max|w| / 64 after
the moves to FP16), and a report of the other weights is refused; with
--target ort-cpu: `ptq sensitivity` records the target, `plan --budget` moves
tensors to FP32 only (uint8 activations keep their zero points), its Q/DQ
export runs in onnxruntime as `ptq validate` simulates it, a report of the other
target is refused, and `plan --method auto` keeps each method's zero point. Run by
ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import h5py
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    from ptqtest import MODEL, SRC, check, cpu_has_vnni, finish, fmnist_test, have_demo, ptq, reduce_range_flags
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)


def e4m3(v):
    """float32 values rounded to FP8 E4M3 (nearest even, saturating at 448), as float64."""
    a = np.abs(v.astype(np.float64))
    step = 2.0 ** (np.floor(np.log2(np.maximum(a, 2.0 ** -6))) - 3)
    return np.sign(v) * np.minimum(np.round(a / step) * step, 448.0)


def fp8_least_error_scale(row, base):
    """The float32 scale base * 2^(k / 16), k in [0, 16), whose quantize-dequantize of row leaves it the least
    squared error, the first on a tie."""
    best, best_s = np.inf, None
    for k in range(16):
        s = np.float32(base * 2.0 ** (k / 16))
        err = np.sum((e4m3(row / s).astype(np.float32) * s - row).astype(np.float64) ** 2)
        if err < best:
            best, best_s = err, s
    return best_s


def main():
    if not have_demo():
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-plan-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    images, labels = fmnist_test(300)
    with h5py.File(J("d.h5"), "w") as f:
        f.create_dataset("images", data=images)
    rc, _, err = ptq("calibrate", "--model", MODEL, "--data", J("d.h5"), "--out", J("c.h5"))
    check("calibrate", rc == 0, err.strip()[-300:])
    archive_sha = hashlib.sha256(open(J("c.h5"), "rb").read()).hexdigest() if rc == 0 else None

    graph = onnx.load(MODEL).graph
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    compute = [n for n in graph.node if n.op_type in ("Conv", "Gemm", "MatMul")]
    edge_weights = [compute[0].input[1], compute[-1].input[1]]

    def off_grid64(plan, w=weights):
        """plan's INT8 weights by name, and those whose scales are not numpy's max|w| / 64 per output channel."""
        w8 = {e["name"]: e for e in plan["tensors"] if e["kind"] == "weight" and e["precision"] == "int8"}
        want = {n: (np.abs(w[n].reshape(w[n].shape[0], -1)).max(axis=1).astype(np.float64) / 64).astype(np.float32)
                for n in w8}
        return w8, [n for n, e in w8.items() if not np.array_equal(np.array(e["scales"], np.float32), want[n])]

    for core, qmax in (("int8", 127.0), ("fp8", 448.0)):
        out = J(f"plan-{core}.json")
        rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--core", core, "--out", out)
        check(f"plan --core {core}", rc == 0, err.strip()[-300:])
        if rc:
            continue
        p = json.load(open(out))
        t = {e["name"]: e for e in p["tensors"]}
        edges = [n for n, e in t.items() if e["precision"] == "fp16"]
        core_name = "int8" if core == "int8" else "fp8-e4m3"
        check(f"{core}: FP16 at the edges, the core elsewhere", sorted(edges) == sorted(
            ["input", "/stem/stem.0/Conv_output_0", "/Flatten_output_0"] + edge_weights)
            and all(e["precision"] == core_name for n, e in t.items() if n not in edges and e["kind"] == "weight"),
            str(sorted(edges)))
        # the default placement (trt): the Conv inputs and the residual inputs in the core, the
        # rest float, every entry naming its rule
        core_acts = sorted(n for n, e in t.items() if e["kind"] == "activation" and e["precision"] == core_name)
        check(f"{core}: placement trt quantizes the 8 Conv and residual inputs", p.get("placement") == "trt" and
              len(core_acts) == 8 and all(t[n]["rule"] in ("trt.weighted-input", "trt.residual-input")
                                          for n in core_acts), str(core_acts))
        check(f"{core}: every other activation fp32 by a trt rule", all(
            e["precision"] == "fp32" and e["rule"] in ("trt.fused", "trt.unquantized", "trt.output") and not e["scales"]
            for n, e in t.items() if n not in edges and n not in core_acts and e["kind"] == "activation"))
        bad = 0
        n_w = 0
        for name, e in t.items():
            if e["kind"] != "weight" or e["precision"] == "fp16":
                continue
            w = weights[name]
            ref = np.abs(w.reshape(w.shape[0], -1)).max(axis=1).astype(np.float64) / qmax
            if core == "fp8":
                ref = np.array([fp8_least_error_scale(row, s) for row, s in zip(w.reshape(w.shape[0], -1), ref)])
            n_w += 1
            bad += int(not np.array_equal(np.array(e["scales"], np.float32), ref.astype(np.float32)))
        check(f"{core}: per-channel weight scales = " + ("max|w| / 127" if core == "int8" else
              "the least E4M3 rounding error of max|w| / 448 * 2^(k / 16)") + " (numpy)", n_w == 8 and bad == 0,
              f"{n_w} weights, {bad} differ")
        check(f"{core}: activation scales positive", all(
            len(e["scales"]) == 1 and e["scales"][0] > 0 for e in t.values()
            if e["kind"] == "activation" and e["precision"] == core_name))
        rc, so, err = ptq("plan", "--check", out, "--model", MODEL)
        check(f"{core}: plan --check accepts it", rc == 0 and "33 tensors" in so, so.strip()[:80])

    # the default method, percentile at 99.99: the plan records the value and equals the plan asked for with it
    for core, meth in (("int8", "percentile=99.99"), ("fp8", "percentile=99.99")):
        rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, "--core", core, "--method", meth,
                         "--out", J(f"pct-{core}.json"))
        same = rc == 0 and open(J(f"plan-{core}.json"), "rb").read() == open(J(f"pct-{core}.json"), "rb").read()
        method = json.load(open(J(f"plan-{core}.json"))).get("method") if os.path.exists(J(f"plan-{core}.json")) else None
        check(f"{core}: the default plan is --method {meth}'s, byte for byte, its method recorded",
              same and method == meth, f"{method} {err.strip()}")
    rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, "--method", "percentile=99.9", "--out", J("p999.json"))
    p999 = json.load(open(J("p999.json"))) if rc == 0 else {"tensors": []}
    s1 = [e["scales"] for e in p999["tensors"] if e["kind"] == "activation"]
    s2 = [e["scales"] for e in json.load(open(J("plan-int8.json")))["tensors"] if e["kind"] == "activation"]
    check("int8: percentile=99.9 gives narrower scales than the default 99.99 and says so", len(s1) == len(s2) and
          all(a == b == [] or a[0] < b[0] for a, b in zip(s1, s2)) and s1 != s2 and
          p999.get("method") == "percentile=99.9", err.strip())
    for bad, needle in (("percentile=", "(0, 100]"), ("percentile=100.5", "(0, 100]"),
                        ("minmax=3", "only percentile takes a value"), ("percentile=9x", "(0, 100]")):
        rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, "--method", bad, "--out", J("never-m.json"))
        check(f"--method {bad} refused (exit 2), nothing written", rc == 2 and needle in err and f"'{bad}'" in err
              and not os.path.exists(J("never-m.json")), err.strip())

    # --placement all: every observed activation in the core, no rules written (plans as before)
    rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--placement", "all", "--out", J("all.json"))
    pa = json.load(open(J("all.json"))) if rc == 0 else {"tensors": []}
    check("plan --placement all: 19 int8 activations, no placement or rule fields", rc == 0 and
          "placement" not in pa and not any("rule" in e for e in pa["tensors"]) and
          sum(e["kind"] == "activation" and e["precision"] == "int8" for e in pa["tensors"]) == 19, err.strip())
    rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--placement", "ort", "--explain", "--out", J("ort.json"))
    po = json.load(open(J("ort.json"))) if rc == 0 else {"tensors": []}
    rules = {e["name"]: e["rule"] for e in po["tensors"]}
    check("plan --placement ort --explain: quantize_static's points, one table row per entry", rc == 0 and
          po.get("placement") == "ort" and rules.get("/layers/layers.0/c1/Conv_output_0") == "ort.op-io" and
          rules.get("/layers/layers.0/Relu_output_0") == "ort.activation" and
          all(n in so for n in rules) and "ort.op-io" in so and "why" in so, so[-400:] + err.strip())
    # placement only chooses which observed tensors the plan quantizes: the archive is read, never changed
    check("plans of every placement leave the archive's bytes as calibrate wrote them",
          archive_sha == hashlib.sha256(open(J("c.h5"), "rb").read()).hexdigest() and
          all(os.path.exists(J(f)) for f in ("plan-int8.json", "all.json", "ort.json")))
    rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, "--placement", "tensorrt", "--out", J("x.json"))
    check("plan --placement tensorrt is refused (exit 2), naming the choices", rc == 2 and "trt, ort, all" in err and
          not os.path.exists(J("x.json")), err.strip())
    rc, so, err = ptq("plan", "--check", J("plan-int8.json"), "--model", MODEL, "--explain")
    check("plan --check --explain prints each tensor's rule and why", rc == 0 and "trt.residual-input" in so and
          "inside a fused" in so, so[-300:])

    # --target ort-cpu: uint8 activations with zero points, FP32 edges, placement ort by default
    rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--target", "ort-cpu", "--method", "minmax",
                      "--out", J("cpu.json"))
    pc = json.load(open(J("cpu.json"))) if rc == 0 else {"tensors": []}
    u8 = [e for e in pc["tensors"] if e["precision"] == "uint8"]
    check("plan --target ort-cpu: target, placement ort, 13 uint8 activations, FP32 edges, no fp16",
          rc == 0 and pc.get("target") == "ort-cpu" and pc.get("placement") == "ort" and len(u8) == 13 and
          not any(e["precision"] == "fp16" for e in pc["tensors"]) and "target ort-cpu" in so and
          all(0 <= e["zero_point"] <= 255 and len(e["scales"]) == 1 for e in u8), so + err.strip())
    noted = "has no VNNI" in err and "--reduce-range" in err
    check("ort-cpu: a note suggests --reduce-range exactly where the CPU has no VNNI", noted == (not cpu_has_vnni()),
          f"VNNI {cpu_has_vnni()}, stderr: {err.strip()}")
    relu_outs = [e for e in u8 if e["rule"] == "ort.activation"]
    check("ort-cpu: a ReLU output's range starts at 0: zero point 0", relu_outs and
          all(e["zero_point"] == 0 for e in relu_outs), str([(e["name"], e["zero_point"]) for e in relu_outs]))
    rc, so, err = ptq("plan", "--check", J("cpu.json"), "--model", MODEL)
    check("ort-cpu: plan --check accepts it", rc == 0, err.strip())
    for args, needle in ((["--target", "cpu"], "trt, ort-cpu"), (["--target", "ort-cpu", "--core", "fp8"], "ort-cpu"),
                         (["--core", "uint8"], "not a core precision")):
        rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, *args, "--out", J("x.json"))
        check(f"plan {' '.join(args)} is refused (exit 2)", rc == 2 and needle in err and
              not os.path.exists(J("x.json")), err.strip())
    # --reduce-range: INT8 weight scales max|w| / 64 (numpy), the Q/DQ export's weight codes in [-64, 64]
    # reaching 64 with the plan's scales, the activations as without it
    rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--target", "ort-cpu", "--method", "minmax",
                      "--reduce-range", "--out", J("cpu-rr.json"))
    pr = json.load(open(J("cpu-rr.json"))) if rc == 0 else {"tensors": []}
    rw, bad = off_grid64(pr)
    check("plan --reduce-range: \"reduce_range\": true, 8 INT8 weights at max|w| / 64, activations unchanged",
          rc == 0 and pr.get("reduce_range") is True and "reduce_range" not in pc and len(rw) == 8 and not bad and
          "reduce_range [-64, 64]" in so and "VNNI" not in err and
          [e for e in pr["tensors"] if e["kind"] == "activation"] == [e for e in pc["tensors"] if e["kind"] ==
                                                                     "activation"], f"{bad} {so} {err.strip()}")
    rc, so, err = ptq("plan", "--check", J("cpu-rr.json"), "--model", MODEL)
    check("reduce_range: plan --check accepts it and says so", rc == 0 and "reduce_range" in so, err.strip())
    rc, _, err = ptq("export", "--format", "qdq", "--plan", J("cpu-rr.json"), "--model", MODEL, "--out",
                     J("cpu-rr.onnx"))
    q = {t.name: numpy_helper.to_array(t) for t in onnx.load(J("cpu-rr.onnx")).graph.initializer} if rc == 0 else {}
    codes = [np.abs(q.get(f"ptq_qdq/{n}/q", np.zeros(1, np.int8)).astype(np.int32)).max() for n in rw]
    scales_same = all(np.array_equal(q.get(f"ptq_qdq/{n}/scale"), np.array(e["scales"], np.float32))
                      for n, e in rw.items())
    check("reduce_range: the Q/DQ export's INT8 weight codes reach 64 and no further, at the plan's scales",
          rc == 0 and codes == [64] * 8 and scales_same, f"{codes} {scales_same} {err.strip()[-300:]}")
    rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, "--reduce-range", "--core", "fp8", "--out", J("x.json"))
    check("plan --reduce-range --core fp8 is refused (exit 2)", rc == 2 and "reduce_range is for INT8" in err and
          not os.path.exists(J("x.json")), err.strip())
    rc, _, err = ptq("plan", "--check", J("cpu-rr.json"), "--model", MODEL, "--reduce-range")
    check("plan --check --reduce-range is refused (exit 2)", rc == 2 and "--check reads one" in err, err.strip())

    # --reduce-range with the measured plans, on 150 labelled images: sensitivity records it; --budget writes a
    # plan that has it, its INT8 weights at max|w| / 64 after moves to FP16 (on the hard case of
    # cli_sensitivity_test, whose default plan loses points: a zero budget takes moves), and refuses a report of
    # the other weights; --method auto on the demo model keeps it too
    with h5py.File(J("v.h5"), "w") as f:
        f["images"] = images[:150]
        f["labels"] = labels[:150]
    hard = J("hard.onnx")
    subprocess.run([sys.executable, os.path.join(SRC, "scripts", "make_hard_case.py"), "--model", MODEL,
                    "--out", hard, "--blocks", "layers.1", "--alpha", "100"], check=True, capture_output=True)
    hard_weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(hard).graph.initializer}
    rc, _, err = ptq("calibrate", "--model", hard, "--data", J("d.h5"), "--out", J("hard.h5"))
    check("calibrate the hard case", rc == 0, err.strip()[-300:])
    reports, printed = {}, {}
    for name, flags in (("s-rr", ["--reduce-range"]), ("s-full", [])):
        rc, printed[name], err = ptq("sensitivity", "--model", hard, "--calib", J("hard.h5"), "--data", J("v.h5"),
                                     "--samples", "0", *flags, "--out", J(f"{name}.json"))
        reports[name] = json.load(open(J(f"{name}.json"))) if rc == 0 else {}
        check(f"sensitivity {' '.join(flags)}: exit 0", rc == 0, err.strip()[-300:])
    md = open(J("s-rr.md")).read() if os.path.exists(J("s-rr.md")) else ""
    check("sensitivity --reduce-range: the report (JSON and Markdown) and the summary say so; without it, nothing",
          reports["s-rr"].get("reduce_range") is True and "- **reduce_range**: true" in md and
          "core int8 reduce_range" in printed["s-rr"] and "tensors" in reports["s-full"] and
          "reduce_range" not in reports["s-full"] and "reduce_range" not in printed["s-full"], printed["s-rr"])
    rc, _, err = ptq("sensitivity", "--model", hard, "--calib", J("hard.h5"), "--data", J("v.h5"), "--core", "fp8",
                     "--reduce-range", "--out", J("x.json"))
    check("sensitivity --reduce-range --core fp8 is refused (exit 2)", rc == 2 and "reduce_range is for INT8" in err
          and not os.path.exists(J("x.json")), err.strip())
    rc, so, err = ptq("plan", J("hard.h5"), "--model", hard, "--reduce-range", "--sensitivity", J("s-rr.json"),
                      "--budget", "0", "--max-moves", "3", "--data", J("v.h5"), "--samples", "0",
                      "--out", J("b-rr.json"))
    pb = json.load(open(J("b-rr.json"))) if rc in (0, 11) else {"tensors": []}
    tr = json.load(open(J("b-rr.trace.json"))) if rc in (0, 11) else {"steps": []}
    w8, bad = off_grid64(pb, hard_weights)
    moved = [e["name"] for e in pb["tensors"] if e["source"] == "budget: moved to FP16"]
    check("plan --budget --reduce-range: moves to FP16, the plan and its trace record reduce_range, the INT8 "
          "weights left at max|w| / 64", rc in (0, 11) and moved and len(tr["steps"]) == len(moved) + 1 and
          pb.get("reduce_range") is True and tr.get("reduce_range") is True and len(w8) >= 5 and not bad and
          "reduce_range [-64, 64]" in so, f"exit {rc}, moved {moved}, off the grid {bad}: {so} {err.strip()[-300:]}")
    # --math reaches the budget's measurements (on the CPU: eval's note, FP32)
    rc, _, err = ptq("plan", J("hard.h5"), "--model", hard, "--sensitivity", J("s-full.json"), "--budget", "1",
                     "--max-moves", "1", "--data", J("v.h5"), "--samples", "0", "--math", "fp64",
                     "--out", J("b-math.json"))
    check("plan --budget --math fp64: taken, with the CPU's note", rc in (0, 11) and
          "--math fp64 applies to the GPU" in err and os.path.exists(J("b-math.json")), f"exit {rc}: {err.strip()}")
    for report, flags, differs in ((J("s-full.json"), ["--reduce-range"], "measured without --reduce-range"),
                                   (J("s-rr.json"), [], "measured with --reduce-range")):
        rc, _, err = ptq("plan", J("hard.h5"), "--model", hard, *flags, "--sensitivity", report, "--budget", "1",
                         "--data", J("v.h5"), "--out", J("x.json"))
        check(f"plan --budget {' '.join(flags) or 'without --reduce-range'} and a report {differs}: exit 2 naming "
              "the report", rc == 2 and report in err and differs in err and not os.path.exists(J("x.json")),
              f"exit {rc}: {err.strip()}")

    # --target ort-cpu with the measured plans, on the hard case: sensitivity measures uint8 activations and records
    # the target; --budget moves tensors to FP32 (never FP16), the rest stays uint8 with zero points, and onnxruntime
    # runs the plan's Q/DQ export as ptq validate simulates it (weights on the reduce_range grid where the CPU has
    # no VNNI: qdq_placement_test says why); a report of the other target is refused
    cpu_flags = reduce_range_flags("the budgeted ort-cpu plan")
    rc, so, err = ptq("sensitivity", "--model", hard, "--calib", J("hard.h5"), "--data", J("v.h5"), "--samples", "0",
                      "--target", "ort-cpu", *cpu_flags, "--out", J("s-cpu.json"))
    sc = json.load(open(J("s-cpu.json"))) if rc == 0 else {"tensors": []}
    u8 = [t for t in sc["tensors"] if t["precision_default"] == "uint8"]
    check("sensitivity --target ort-cpu: the report and the summary record the target, the default plan's "
          "activations are uint8 and measured both ways", rc == 0 and sc.get("target") == "ort-cpu" and
          "target ort-cpu" in so and "target" not in reports["s-full"] and u8 and
          all(t["only"] and t["all_but"]["measured"] for t in u8), f"exit {rc}: {so} {err.strip()[-300:]}")
    md = open(J("s-cpu.md")).read() if os.path.exists(J("s-cpu.md")) else ""
    check("sensitivity --target ort-cpu: the Markdown says \"all but\" keeps the tensor in FP32",
          '"All but" is the default plan with the tensor in FP32' in md, md[:600])
    rc, so, err = ptq("plan", J("hard.h5"), "--model", hard, "--target", "ort-cpu", *cpu_flags, "--sensitivity",
                      J("s-cpu.json"), "--budget", "0", "--max-moves", "3", "--data", J("v.h5"), "--samples", "0",
                      "--out", J("b-cpu.json"))
    pb = json.load(open(J("b-cpu.json"))) if rc in (0, 11) else {"tensors": []}
    tr = json.load(open(J("b-cpu.trace.json"))) if rc in (0, 11) else {"steps": []}
    moved = [e for e in pb["tensors"] if e["source"].startswith("budget: moved")]
    acts = [e for e in pb["tensors"] if e["kind"] == "activation" and e["precision"] not in ("fp32", "fp16")]
    check("plan --budget --target ort-cpu: moves to FP32 only, no FP16 anywhere, quantized activations uint8 with "
          "zero points, the plan and its trace record the target",
          rc in (0, 11) and moved and all(e["precision"] == "fp32" and "zero_point" not in e for e in moved) and
          not any(e["precision"] == "fp16" for e in pb["tensors"]) and acts and
          all(e["precision"] == "uint8" and 0 <= e["zero_point"] <= 255 for e in acts) and
          pb.get("target") == "ort-cpu" and tr.get("target") == "ort-cpu" and
          len(tr["steps"]) > 1 and {st.get("moved_to_fp32") for st in tr["steps"][1:]} <= {e["name"] for e in moved} and
          "fp32 " in err and "in FP32" in so, f"exit {rc}, moved {[e['name'] for e in moved]}: {so} {err[-400:]}")
    for flags, report in ((["--target", "ort-cpu", *cpu_flags], J("s-rr.json" if cpu_flags else "s-full.json")),
                          (cpu_flags, J("s-cpu.json"))):
        rc, _, err = ptq("plan", J("hard.h5"), "--model", hard, *flags, "--sensitivity", report, "--budget", "1",
                         "--data", J("v.h5"), "--out", J("x.json"))
        check(f"plan --budget {' '.join(flags) or 'for trt'} and a report of the other target: exit 2 naming the "
              "report", rc == 2 and report in err and "target" in err and not os.path.exists(J("x.json")),
              f"exit {rc}: {err.strip()}")
    rc, _, err = ptq("export", "--format", "qdq", "--plan", J("b-cpu.json"), "--model", hard, "--out", J("b-cpu.onnx"))
    check("plan --budget --target ort-cpu: export --format qdq", rc == 0, err.strip()[-300:])
    rc2, _, err2 = ptq("validate", "--model", hard, "--plan", J("b-cpu.json"), "--data", J("v.h5"), "--report",
                       J("rep-cpu"), "--logits", J("b-cpu.npy"), "--trace", J("b-cpu.trace.json"))
    page = open(J("rep-cpu", "report.html")).read() if rc2 == 0 else ""
    section = page[page.find('<section id="trace">'):]
    section = section[:section.find("</section>")]
    check("validate --trace of the budgeted ort-cpu plan: the page's trace says FP32 where the moves went, never FP16",
          rc2 == 0 and "moved to FP32" in section and "moves to FP32" in section and "FP32 tensors" in section and
          "to FP32)" in section and "FP16" not in section, f"exit {rc2}: {section[:300]}")
    page = open(J("s-cpu.html")).read() if os.path.exists(J("s-cpu.html")) else ""
    section = page[page.find('<section id="sensitivity">'):]
    section = section[:section.find("</section>")]
    check("sensitivity --target ort-cpu: its page keeps the 'all but' tensor in FP32, never FP16, and names the target",
          "one tensor in FP32" in section and "only this tensor in FP32" in section and "FP16" not in section and
          "ort-cpu" in page, section[:300])
    if rc == 0 and rc2 == 0:
        sess = ort.InferenceSession(J("b-cpu.onnx"), providers=["CPUExecutionProvider"])
        x = ((images[:150].astype(np.float32) / 255 - np.float32(0.286)) / np.float32(0.353)).reshape(-1, 1, 28, 28)
        q_ort = sess.run(None, {sess.get_inputs()[0].name: x.astype(np.float32)})[0].argmax(1)
        agree = float((q_ort == np.load(J("b-cpu.npy")).argmax(1)).mean())
    else:
        agree = 0.0
    check("plan --budget --target ort-cpu: onnxruntime's predictions on its Q/DQ export agree with ptq validate's on "
          ">= 99.9%", agree >= 0.999, f"{100 * agree:.2f}% of 150; {err.strip()[-200:]} {err2.strip()[-200:]}")
    # --method auto --target ort-cpu: each activation's uint8 range (scale and zero point) is its chosen method's
    rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--method", "auto", "--target", "ort-cpu", "--data",
                      J("v.h5"), "--samples", "0", "--out", J("auto-cpu.json"))
    pa = json.load(open(J("auto-cpu.json"))) if rc == 0 else {"tensors": []}
    single = {}
    for m in ("percentile", "mse", "entropy", "minmax"):
        ptq("plan", J("c.h5"), "--model", MODEL, "--method", m, "--target", "ort-cpu", "--out", J(f"cpu-{m}.json"))
        single[m] = {e["name"]: e for e in json.load(open(J(f"cpu-{m}.json")))["tensors"]}
    chosen = [(e, e["source"].split()[2]) for e in pa["tensors"] if e["source"].startswith("auto: archive ")]
    off = [(e["name"], m) for e, m in chosen if e["precision"] != "uint8" or
           (e["scales"], e["zero_point"]) != (single[m][e["name"]]["scales"], single[m][e["name"]]["zero_point"])]
    check("plan --method auto --target ort-cpu: method auto, target ort-cpu, each uint8 activation with the scale and "
          "zero point of its chosen method's plan", rc == 0 and pa.get("method") == "auto" and
          pa.get("target") == "ort-cpu" and len(chosen) >= 10 and
          len({e.get("zero_point") for e, _ in chosen}) > 1 and not off, f"exit {rc}: {off} {err.strip()[-300:]}")
    rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--method", "auto", "--reduce-range", "--data", J("v.h5"),
                      "--samples", "0", "--out", J("auto-rr.json"))
    pa = json.load(open(J("auto-rr.json"))) if rc == 0 else {"tensors": []}
    w8, bad = off_grid64(pa)
    check("plan --method auto --reduce-range: method auto, \"reduce_range\": true, 8 INT8 weights at max|w| / 64",
          rc == 0 and pa.get("method") == "auto" and pa.get("reduce_range") is True and len(w8) == 8 and not bad and
          "reduce_range [-64, 64]" in so, f"{bad} {so} {err.strip()[-300:]}")
    pz = json.loads(json.dumps(pc))
    next(e for e in pz["tensors"] if e["precision"] == "uint8")["zero_point"] = 300
    with open(J("cpu-bad.json"), "w") as f:
        json.dump(pz, f)
    rc, _, err = ptq("plan", "--check", J("cpu-bad.json"), "--model", MODEL)
    check("ort-cpu: a zero point of 300 is refused (exit 2)", rc == 2 and "zero point 300" in err, err.strip())

    # hand edits the check refuses, nothing written
    base = json.load(open(J("plan-int8.json")))

    def edited(name, change):
        p = json.loads(json.dumps(base))
        change(p)
        path = J(name + ".json")
        with open(path, "w") as f:
            f.write(json.dumps(p).replace("Infinity", "1e999"))
        return path

    def act(p, key):
        return next(e for e in p["tensors"] if e["name"] == key)

    relu = "/stem/stem.2/Relu_output_0"
    cases = [
        ("unknown tensor", edited("unknown", lambda p: act(p, relu).update(name="no_such_tensor")), 2, "no_such_tensor"),
        ("zero scale", edited("zero", lambda p: act(p, relu).update(scales=[0.0])), 2, "finite and > 0"),
        ("negative scale", edited("neg", lambda p: act(p, relu).update(scales=[-0.01])), 2, "finite and > 0"),
        ("infinite scale", edited("inf", lambda p: act(p, relu).update(scales=[float("inf")])), 2, "finite and > 0"),
        ("a plan for another model", edited("other", lambda p: p["model"].update(sha256="f" * 64)), 2, "another model"),
        ("two scales for one activation", edited("two", lambda p: act(p, relu).update(scales=[0.1, 0.2])), 2,
         "2 scales"),
        ("not a plan", edited("notplan", lambda p: p.update(format="something")), 4, "ptq-plan"),
    ]
    for name, path, code, needle in cases:
        rc, so, err = ptq("plan", "--check", path, "--model", MODEL)
        check(f"--check refuses {name}", rc == code and needle in err and err.count("error:") == 1,
              f"exit {rc} (want {code}): {err.strip()}")
    other = J("other.onnx")
    m = onnx.load(MODEL)
    m.doc_string = "the same graph, other bytes"
    onnx.save(m, other)
    rc, so, err = ptq("plan", J("c.h5"), "--model", other, "--out", J("never.json"))
    check("plan from an archive of another model", rc == 2 and "another model" in err and
          not os.path.exists(J("never.json")), err.strip())
    rc, so, err = ptq("plan", J("c.h5"), "--model", MODEL, "--core", "fp32", "--out", J("never2.json"))
    check("plan --core fp32 refused", rc == 2 and not os.path.exists(J("never2.json")), err.strip())

    # a flag the mode or format does not use is refused, naming it, not ignored: a forgotten --budget is no
    # silent default plan
    def unused(name, args, fragment, out):
        rc, _, err = ptq(*args)
        check(name, rc == 2 and fragment in err and err.count("error:") == 1 and not os.path.exists(out),
              f"exit {rc}: {err.strip()}")

    base = ["plan", J("c.h5"), "--model", MODEL, "--out", J("never3.json")]
    unused("plan --class-budget without --budget", base + ["--class-budget", "0.5"],
           "--class-budget is used only with --budget", J("never3.json"))
    unused("plan --max-moves without --budget", base + ["--max-moves", "3"], "--max-moves is used only with --budget",
           J("never3.json"))
    unused("plan --data --samples --seed without --budget", base + ["--data", J("d.h5"), "--samples", "10", "--seed",
           "3"], "--data, --samples, --seed are used only with --budget or --method auto", J("never3.json"))
    unused("plan --math without --budget", base + ["--math", "fp64"],
           "--math is used only with --budget or --method auto", J("never3.json"))
    unused("plan --method auto --class-budget", base + ["--method", "auto", "--data", J("d.h5"), "--class-budget",
           "1"], "--class-budget is used only with --budget", J("never3.json"))
    unused("plan --check --core", ["plan", "--check", J("p999.json"), "--model", MODEL, "--core", "fp8"],
           "--core is used only to make a plan", J("never3.json"))
    unused("export --format json --opset", ["export", J("c.h5"), "--method", "minmax", "--format", "json",
           "--opset", "13", "--out", J("never.json")], "--opset is used only with --format qdq", J("never.json"))
    unused("export --format ort --trt-version", ["export", J("c.h5"), "--method", "minmax", "--format", "ort",
           "--trt-version", "8.6.1", "--out", J("never-ort")], "--trt-version is used only with --format trt",
           J("never-ort"))
    unused("export --format trt --plan", ["export", J("c.h5"), "--method", "minmax", "--format", "trt",
           "--plan", J("p999.json"), "--out", J("never.cache")], "--plan is used only with --format qdq",
           J("never.cache"))
    unused("export --format qdq --method", ["export", "--format", "qdq", "--plan", J("p999.json"),
           "--model", MODEL, "--method", "entropy", "--out", J("never.onnx")],
           "--method is used only with --format trt, ort or json", J("never.onnx"))
    left = [f for f in os.listdir(tmp) if ".tmp-" in f]
    check("no temporary files left", not left, str(left))
    return finish("cli_plan_test")


if __name__ == "__main__":
    sys.exit(main())
