"""ptq sensitivity and the budgeted plan on the hard case: the demo model
with three channels of one residual block's first convolution scaled by 100
(and the next convolution's inputs by 1/100, so FP32 is unchanged; built by
scripts/make_hard_case.py). Per-tensor INT8 must then lose several points,
sensitivity must rank the two damaged activations first, and
`ptq plan --budget 0.3` must come back within 0.3 points of FP32 with at most
10% of the plan's tensors moved to FP16. Also: the report's figures do not
depend on the batch size, and bad inputs (a report for another model or
archive, a bad budget, unlabelled data, a hand-edited or corrupt report) fail
with nothing written; plan --budget and validate --sensitivity read a report
by the same rules."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from ptqtest import FM, MODEL, SRC, check, finish, fmnist_test, have_demo, ptq


def fmnist_train(n):
    import gzip
    with gzip.open(f"{FM}/train-images-idx3-ubyte.gz", "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]


def main():
    if not have_demo() or not os.path.exists(f"{FM}/train-images-idx3-ubyte.gz"):
        print("cli_sensitivity_test: skipped: no demo model or Fashion-MNIST")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-sens-")
    J = lambda *p: os.path.join(tmp, *p)
    try:
        hard = J("hard.onnx")
        subprocess.run([sys.executable, os.path.join(SRC, "scripts", "make_hard_case.py"), "--model", MODEL,
                        "--out", hard, "--blocks", "layers.1", "--alpha", "100"], check=True, capture_output=True)
        images, labels = fmnist_test(2000)
        with h5py.File(J("val.h5"), "w") as f:
            f["images"] = images
            f["labels"] = labels
        with h5py.File(J("cal.h5"), "w") as f:
            f["images"] = fmnist_train(512)
        with h5py.File(J("unlabelled.h5"), "w") as f:
            f["images"] = images[:100]
        rc, _, err = ptq("calibrate", "--model", hard, "--data", J("cal.h5"), "--out", J("calib.h5"))
        check("calibrate the hard case", rc == 0, err)

        # the default plan loses several points
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--out", J("default.json"), "--quiet")
        rc2, _, err2 = ptq("validate", "--model", hard, "--plan", J("default.json"), "--data", J("val.h5"),
                           "--report", J("rep-default"))
        drop = 0.0
        if rc == 0 and rc2 == 0:
            v = json.load(open(J("rep-default", "validate.json")))
            drop = -v["top1_delta_pts"]
        check("the hard case: the default INT8 plan loses several points", drop >= 3.0, f"{drop:.2f} points")

        # sensitivity ranks the damaged activations first
        rc, out, err = ptq("sensitivity", "--model", hard, "--calib", J("calib.h5"), "--data", J("val.h5"),
                           "--samples", "1000", "--out", J("sens.json"))
        check("sensitivity runs", rc == 0 and os.path.exists(J("sens.md")), err)
        damaged = {"/layers/layers.1/c1/Conv_output_0", "/layers/layers.1/Relu_output_0"}
        if rc == 0:
            s = json.load(open(J("sens.json")))
            measured = [t for t in s["tensors"] if t["only"]]
            ranked = sorted(measured, key=lambda t: (t["only"]["top1_delta_pts"], t["only"]["sqnr_db"]))
            top2 = {t["name"] for t in ranked[:2]}
            check("sensitivity ranks the two damaged activations first", top2 == damaged,
                  ", ".join(f'{t["name"]} {t["only"]["top1_delta_pts"]:+.1f}' for t in ranked[:4]))
            md_rows = [l for l in open(J("sens.md")) if l.startswith("| `")]
            check("sens.md lists them first too", {r.split("`")[1] for r in md_rows[:2]} == damaged)
            every = {t["name"] for t in s["tensors"]}
            plan = json.load(open(J("default.json")))
            check("every tensor of the plan is measured (activations and weights)",
                  every == {e["name"] for e in plan["tensors"]}
                  and any(t["kind"] == "weight" for t in s["tensors"]), f"{len(every)} tensors")
            t0 = s["tensors"][0]
            check("per-class recall deltas for each tensor", len(t0["all_but"]["recall_delta_pts"]) == 10)
            check("the FP32 prefix is reused (fewer nodes run than whole runs)",
                  s["nodes_run"] < s["nodes_if_every_run_were_whole"], f'{s["nodes_run"]} of {s["nodes_if_every_run_were_whole"]}')
            # the same figures at another batch size and thread count: sens.md and sens.html the same bytes,
            # sens.json all but the header's work figures (how long, how many batch runs; README)
            runs, whole, pages = [], [], []
            for batch, threads in (("256", "2"), ("77", "1")):
                os.makedirs(J(f"b{batch}"), exist_ok=True)
                out = J(f"b{batch}", "sens.json")
                rc, _, err = ptq("sensitivity", "--model", hard, "--calib", J("calib.h5"), "--data", J("val.h5"),
                                 "--samples", "200", "--batch", batch, "--threads", threads, "--out", out)
                r = json.load(open(out)) if rc == 0 else {"tensors": batch}
                runs.append(r["tensors"])
                whole.append({k: v for k, v in r.items() if not k.startswith("seconds") and k not in
                              ("runs", "nodes_run", "nodes_if_every_run_were_whole")})
                pages.append([open(J(f"b{batch}", n), "rb").read() if rc == 0 else batch
                              for n in ("sens.md", "sens.html")])
            check("the report does not depend on the batch size", runs[0] == runs[1], err)
            check("nor does any figure but the work ones, whatever --batch and --threads", whole[0] == whole[1],
                  str([k for k in whole[0] if whole[0][k] != whole[1].get(k)]))
            check("sens.md and sens.html: the same bytes whatever --batch and --threads", pages[0] == pages[1])
            # without --batch the default is sized to the memory limit, counting the values kept between runs
            rc, _, err = ptq("sensitivity", "--model", hard, "--calib", J("calib.h5"), "--data", J("val.h5"),
                             "--samples", "200", "--max-memory", "20M", "--out", J("sens-mem.json"))
            check("--max-memory 20M without --batch: a smaller batch with a note, the same report",
                  rc == 0 and "note: batch 8 " in err and "kept between runs" in err
                  and json.load(open(J("sens-mem.json")))["tensors"] == runs[0], err.strip()[-300:])
            # sens.md says what it was measured on, as sens.json does
            head = open(J("sens.md")).read().split("| tensor |")[0]
            want = [f"- **{k}**: {s[k]}" for k in ("model", "model_sha256", "data", "data_sha256", "preprocess",
                                                   "archive", "core", "method")]
            check("sens.md records the model, its SHA-256, the data, the preprocessing and the archive",
                  all(w in head for w in want), head[:600])
            # each (b) run, and an (a) run, equal validate with that one plan edit, sample for sample
            with h5py.File(J("val200.h5"), "w") as f:
                f["images"] = images[:200]
                f["labels"] = labels[:200]
            rc, _, err = ptq("sensitivity", "--model", hard, "--calib", J("calib.h5"), "--data", J("val200.h5"),
                             "--samples", "0", "--batch", "64", "--out", J("sens-all.json"))
            check("sensitivity on 200 images", rc == 0, err)
            if rc == 0:
                s2 = {t["name"]: t for t in json.load(open(J("sens-all.json")))["tensors"]}
                base = json.load(open(J("default.json")))
                weight = next(e["name"] for e in base["tensors"] if e["kind"] == "weight" and e["precision"] == "int8")
                late = [e["name"] for e in base["tensors"] if e["kind"] == "activation" and e["precision"] == "int8"][-1]
                for name in sorted(damaged) + [weight, late]:
                    # (a) quantizes a tensor the default plan leaves FP32 with the core plan's scales: not editable here
                    for mode in ("all_but", "only") if s2[name]["precision_default"] == "int8" else ("all_but",):
                        plan = json.loads(json.dumps(base))
                        for e in plan["tensors"]:
                            if mode == "all_but" and e["name"] == name:
                                e.update(precision="fp16", scales=[], axis=-1)
                            if mode == "only" and e["name"] != name:
                                e.update(precision="fp32", scales=[], axis=-1)
                        json.dump(plan, open(J("edit.json"), "w"))
                        rc, _, err = ptq("validate", "--model", hard, "--plan", J("edit.json"), "--data",
                                         J("val200.h5"), "--report", J("rep-edit"))
                        got = json.load(open(J("rep-edit", "validate.json")))["top1_quant"] if rc == 0 else -1
                        want = s2[name][mode]["top1"]
                        check(f"sensitivity's {mode} run of {name} equals validate with that plan",
                              round(got * 200) == round(want * 200), f"validate {got} sensitivity {want}: {err[-200:]}")
            # --target ort-cpu: an "all but" run (that tensor in FP32) has the logits' SQNR and KL of validate with
            # that plan, also where the tensor is a Conv's input or weight, whose int32 bias then stays float
            rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--target", "ort-cpu", "--out", J("ort.json"),
                             "--quiet")
            rc2, _, err2 = ptq("sensitivity", "--model", hard, "--calib", J("calib.h5"), "--data", J("val200.h5"),
                               "--samples", "0", "--target", "ort-cpu", "--out", J("sens-ort.json"))
            check("plan and sensitivity --target ort-cpu", rc == 0 and rc2 == 0, err + err2)
            if rc == 0 and rc2 == 0:
                base = json.load(open(J("ort.json")))
                so = {t["name"]: t for t in json.load(open(J("sens-ort.json")))["tensors"]}
                acts = [e["name"] for e in base["tensors"] if e["kind"] == "activation" and e["precision"] == "uint8"]
                weights = [e["name"] for e in base["tensors"] if e["kind"] == "weight" and e["precision"] == "int8"]
                for name in acts[:3] + weights[:2]:
                    plan = json.loads(json.dumps(base))
                    for e in plan["tensors"]:
                        if e["name"] == name:
                            e.update(precision="fp32", scales=[], axis=-1)
                            e.pop("zero_point", None)
                    json.dump(plan, open(J("edit.json"), "w"))
                    rc, _, err = ptq("validate", "--model", hard, "--plan", J("edit.json"), "--data",
                                     J("val200.h5"), "--report", J("rep-edit"))
                    got = json.load(open(J("rep-edit", "validate.json")))["logits"] if rc == 0 else {}
                    want = so[name]["all_but"]
                    check(f"ort-cpu: sensitivity's all-but SQNR and KL of {name} equal validate's with that plan",
                          all(abs(got.get(k, -1.0) - want[k]) <= 1e-9 * abs(want[k]) for k in ("sqnr_db", "kl_nats")),
                          f"validate {got.get('sqnr_db')} dB {got.get('kl_nats')}, sensitivity {want['sqnr_db']} dB "
                          f"{want['kl_nats']}: {err[-200:]}")

        # the budgeted plan
        rc, out, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0.3",
                           "--data", J("val.h5"), "--samples", "0", "--out", J("budget.json"))
        check("plan --budget 0.3: exit 0 and a trace", rc == 0 and os.path.exists(J("budget.trace.json")), err[-300:])
        if rc == 0:
            rc2, _, err2 = ptq("validate", "--model", hard, "--plan", J("budget.json"), "--data", J("val.h5"),
                               "--report", J("rep-budget"))
            v = json.load(open(J("rep-budget", "validate.json"))) if rc2 == 0 else {"top1_delta_pts": -99}
            p = json.load(open(J("budget.json")))
            d = json.load(open(J("default.json")))
            changed = [b for a, b in zip(d["tensors"], p["tensors"]) if a["precision"] != b["precision"]]
            moved = len(changed)
            check("the budgeted plan is within 0.3 points of FP32", v["top1_delta_pts"] >= -0.3,
                  f'{v["top1_delta_pts"]:+.2f} points')
            check("with at most 10% of the tensors moved to FP16", moved <= 0.1 * len(p["tensors"]),
                  f"{moved} of {len(p['tensors'])}")
            tr = json.load(open(J("budget.trace.json")))
            # each step moves one tensor; a weight whose layer then reads no quantized activation follows it
            moves = [st["moved_to_fp16"] for st in tr["steps"][1:]]
            followers = [e for e in changed if e["name"] not in moves]
            check("the trace: top-1 and the worst class after each move, every other change a weight that follows",
                  tr["met"] and len(set(moves)) == len(moves) and set(moves) <= {e["name"] for e in changed}
                  and all(e["kind"] == "weight" and e["rule"] == "weight.follows-input" for e in followers)
                  and all("worst_class" in st for st in tr["steps"]),
                  f"moves {moves}, followers {[(e['name'], e.get('rule')) for e in followers]}")
        # a budget of 0 on the hard case: moves until met; a tensor an earlier move already took to FP16 (a weight
        # that follows its layer's input) is never a step of its own: each step adds FP16 tensors, and --max-moves
        # of the steps the unlimited run took meets the budget too
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0",
                         "--data", J("val.h5"), "--samples", "0", "--out", J("b0.json"))
        tr = json.load(open(J("b0.trace.json"))) if rc in (0, 11) else {"steps": []}
        counts = [st["fp16_tensors"] for st in tr["steps"]]
        check("plan --budget 0: every step adds FP16 tensors (no step re-moves a follower)", len(counts) > 1 and
              all(b > a for a, b in zip(counts, counts[1:])), f"exit {rc}, FP16 counts {counts}: {err[-200:]}")
        if rc == 0 and len(counts) > 1:
            rc2, _, err2 = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget",
                               "0", "--max-moves", str(len(counts) - 1), "--data", J("val.h5"), "--samples", "0",
                               "--out", J("b0m.json"))
            check(f"plan --budget 0 --max-moves {len(counts) - 1} (the moves it took): met, exit 0", rc2 == 0,
                  f"exit {rc2}: {err2[-200:]}")
        # a class budget of 0: met when no class loses recall, a step the terminal says so of (it had named class 0
        # as the worst with a drop of 0.00)
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0",
                         "--class-budget", "0", "--data", J("val.h5"), "--samples", "0", "--out", J("bc0.json"))
        steps = [l for l in err.splitlines() if l.startswith("plan: step")]
        check("plan --class-budget 0: met, its last step line says no class lost recall, none names a worst class "
              "with no drop", rc == 0 and steps and "no class lost recall" in steps[-1] and
              not any("drop 0.00 pts  fp16" in l for l in steps), f"exit {rc}: {steps[-3:]} {err[-200:]}")
        # a budget that cannot be met (no move allowed): exit 11, the best plan written
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0.3",
                         "--max-moves", "0", "--data", J("val.h5"), "--samples", "300", "--out", J("never.json"))
        check("an unreachable budget: exit 11 and the best plan written", rc == 11 and os.path.exists(J("never.json")),
              f"exit {rc}: {err.strip()[-200:]}")
        # a class budget missed while top-1 is within its budget: the messages say which budget was missed (they
        # had said "no plan met the budget of 100.00 points" beside "0.00 pts lost")
        rc, out, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "100",
                           "--class-budget", "0", "--max-moves", "0", "--data", J("val.h5"), "--samples", "300",
                           "--out", J("never-class.json"))
        check("a missed class budget: exit 11, the summary gives the worst class's drop against the class budget and "
              "the exit line names both budgets", rc == 11 and re.search(r"worst class \S+ lost [0-9.]+ pts of recall "
              r"\(class budget 0\.00\)", out) and "budgets of 100.00 points of top-1 and 0.00 of a class's recall"
              in err, f"exit {rc}: {out.strip()[-300:]} {err.strip()[-300:]}")

        # --method auto on the demo model: a calibrator per activation, recorded, and no worse than entropy alone
        rc, _, err = ptq("calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J("calib-demo.h5"))
        rc, out, err = ptq("plan", J("calib-demo.h5"), "--model", MODEL, "--method", "auto", "--data", J("val.h5"),
                           "--samples", "400", "--out", J("auto.json"))
        ok = rc == 0
        if ok:
            p = json.load(open(J("auto.json")))
            acts = [e for e in p["tensors"] if e["kind"] == "activation" and e["precision"] == "int8"]
            ok = p["method"] == "auto" and acts and all(e["source"].startswith("auto: archive ") for e in acts)
        check("--method auto records a measured calibrator per quantized activation", ok, err[-300:])
        scores = {}
        for m in ("auto", "entropy"):
            plan = J("auto.json")
            if m != "auto":
                plan = J(f"{m}.json")
                ptq("plan", J("calib-demo.h5"), "--model", MODEL, "--method", m, "--out", plan, "--quiet")
            rc, _, err = ptq("validate", "--model", MODEL, "--plan", plan, "--data", J("val.h5"), "--report", J(f"rep-{m}"))
            scores[m] = json.load(open(J(f"rep-{m}", "validate.json")))["top1_quant"] if rc == 0 else -1
        check("--method auto scores at least as well as entropy alone", scores["auto"] >= scores["entropy"], str(scores))

        # bad input: nothing written
        def refused(name, args, want, fragment, out_file):
            rc, _, err = ptq(*args)
            check(name, rc == want and fragment in err and not os.path.exists(out_file), f"exit {rc}: {err.strip()}")

        refused("a sensitivity report for another model", ["plan", J("calib-demo.h5"), "--model", MODEL,
                "--sensitivity", J("sens.json"), "--budget", "0.3", "--data", J("val.h5"), "--out", J("x1.json")],
                2, "another model", J("x1.json"))
        rc, _, _ = ptq("calibrate", "--model", hard, "--data", J("cal.h5"), "--samples", "300", "--out", J("calib2.h5"))
        refused("a sensitivity report for another archive", ["plan", J("calib2.h5"), "--model", hard,
                "--sensitivity", J("sens.json"), "--budget", "0.3", "--data", J("val.h5"), "--out", J("x2.json")],
                2, "another calibration archive", J("x2.json"))
        for bad in ("-1", "nan", "abc", "inf"):
            refused(f"--budget {bad}", ["plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"),
                    "--budget", bad, "--data", J("val.h5"), "--out", J("x3.json")], 2, "--budget", J("x3.json"))
        refused("--class-budget on unlabelled data", ["plan", J("calib.h5"), "--model", hard, "--sensitivity",
                J("sens.json"), "--budget", "0.3", "--class-budget", "1", "--data", J("unlabelled.h5"),
                "--out", J("x4.json")], 7, "no labels", J("x4.json"))
        refused("sensitivity on unlabelled data", ["sensitivity", "--model", hard, "--calib", J("calib.h5"), "--data",
                J("unlabelled.h5"), "--out", J("x5.json")], 7, "no labels", J("x5.json"))
        refused("sensitivity with another model's archive", ["sensitivity", "--model", MODEL, "--calib", J("calib.h5"),
                "--data", J("val.h5"), "--out", J("x6.json")], 2, "another model", J("x6.json"))
        with open(J("notsens.json"), "w") as f:
            f.write('{"format": "ptq-plan"}')
        refused("a file that is not a sensitivity report", ["plan", J("calib.h5"), "--model", hard, "--sensitivity",
                J("notsens.json"), "--budget", "0.3", "--data", J("val.h5"), "--out", J("x7.json")], 4,
                "not a ptq sensitivity report", J("x7.json"))
        # the trace cannot be written (its rename fails): the plan that was at --out stays as it was
        with open(J("kept.json"), "w") as f:
            f.write('{"an": "older plan"}\n')
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0.3",
                         "--data", J("val.h5"), "--out", J("kept.json"),
                         env={"PTQ_TEST_FAIL_RENAME": "kept.trace.json"})
        left = [f for f in os.listdir(tmp) if f.startswith("kept.json.tmp-") or f.startswith("kept.trace.json.tmp-")]
        check("plan --budget: a trace that cannot be written leaves the plan at --out as it was (it was removed)",
              rc == 3 and "kept.trace.json" in err and open(J("kept.json")).read() == '{"an": "older plan"}\n'
              and not left and not os.path.exists(J("kept.trace.json")),
              f"exit {rc}, left {left}: {err.strip()[-200:]}")
        # a folder in the trace's place: refused before any work (its rename failed after the search)
        os.makedirs(J("kept.trace.json"), exist_ok=True)
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0.3",
                         "--data", J("val.h5"), "--out", J("kept.json"))
        check("plan --budget: a folder at the trace's name refused (exit 3, naming it), the plan at --out kept",
              rc == 3 and "kept.trace.json: it is a folder" in err and open(J("kept.json")).read() ==
              '{"an": "older plan"}\n', f"exit {rc}: {err.strip()[-200:]}")
        # a hand-edited or corrupt report: plan --budget and validate --sensitivity refuse it alike, naming the file
        sens = json.load(open(J("sens.json")))
        name4 = sens["tensors"][4]["name"]
        edits = {"notensors": (lambda q: q.__setitem__("tensors", []), 4, "no tensors"),
                 "unknown": (lambda q: q["tensors"][4].__setitem__("name", "nope"), 2, "'nope'"),
                 "dup": (lambda q: q["tensors"].append(q["tensors"][4]), 4, "listed twice"),
                 "strsqnr": (lambda q: q["tensors"][4]["only"].__setitem__("sqnr_db", "x"), 4, name4),
                 "noonly": (lambda q: q["tensors"][4].pop("only"), 4, name4),
                 "noallbut": (lambda q: q["tensors"][4].pop("all_but"), 4, name4),
                 "negsamples": (lambda q: q.__setitem__("samples", -5), 4, "samples"),
                 "ver2": (lambda q: q.__setitem__("format_version", 2), 5, "version 2"),
                 "nocore": (lambda q: q.pop("core"), 4, '"core" (the format it was measured in) is missing'),
                 "numcore": (lambda q: q.__setitem__("core", 8), 4, '"core"'),
                 "noarchive": (lambda q: q.pop("archive_sample_ids_sha256"), 4,
                               '"archive_sample_ids_sha256" (the calibration archive\'s samples) is missing'),
                 # a kind swapped: another tensor's figures, checked against the model as a plan's kinds are
                 "kindswap": (lambda q: q["tensors"][4].__setitem__(
                     "kind", "weight" if q["tensors"][4]["kind"] == "activation" else "activation"), 2,
                     f"sensitivity tensor '{name4}' is of kind"),
                 "weightswap": (lambda q: next(t for t in q["tensors"] if t["kind"] == "weight").__setitem__(
                     "kind", "activation"), 2, "is of kind activation, but the model has no float activation")}
        for tag, (edit, want, fragment) in edits.items():
            q = json.loads(json.dumps(sens))
            edit(q)
            with open(J(f"bad-{tag}.json"), "w") as f:
                json.dump(q, f)
        text = open(J("sens.json")).read()
        with open(J("bad-trailing.json"), "w") as f:
            f.write(text + "\n{}")
        with open(J("bad-nan.json"), "w") as f:
            f.write(text.replace('"top1_fp32":', '"top1_fp32": NaN, "x":', 1))
        edits["trailing"] = (None, 4, "unexpected data after the value")
        edits["nan"] = (None, 4, "not valid JSON (at byte")
        for tag, (_, want, fragment) in edits.items():
            rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J(f"bad-{tag}.json"), "--budget",
                             "0.3", "--data", J("val.h5"), "--out", J("x8.json"))
            check(f"plan --budget: a report {tag}: exit {want}, naming the file and what is off",
                  rc == want and f"bad-{tag}.json: " in err and fragment in err and not os.path.exists(J("x8.json")),
                  f"exit {rc}: {err.strip()}")
            refused(f"validate --sensitivity: a report {tag}: exit {want}", ["validate", "--model", hard, "--plan",
                    J("default.json"), "--data", J("val.h5"), "--sensitivity", J(f"bad-{tag}.json"), "--report",
                    J("x9")], want, f"bad-{tag}.json: ", J("x9", "validate.json"))
        # a report without a tensor the plan quantizes (measured for another plan): --budget would move it last, as
        # if measured harmless; it is refused, naming the file, the count and the tensor
        quantized = [t["name"] for t in json.load(open(J("default.json")))["tensors"]
                     if t["precision"] in ("int8", "fp8-e4m3", "fp8-e5m2", "uint8")]
        q = json.loads(json.dumps(sens))
        q["tensors"] = [t for t in q["tensors"] if t["name"] != quantized[-1]]
        with open(J("bad-missing.json"), "w") as f:
            json.dump(q, f)
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("bad-missing.json"), "--budget",
                         "0.3", "--data", J("val.h5"), "--out", J("x8.json"))
        check("plan --budget: a report without one of the plan's quantized tensors: exit 2, naming the file, the "
              "count and the tensor", rc == 2 and "bad-missing.json: no figure for 1 of the plan's "
              f"{len(quantized)} quantized tensors (the first: '{quantized[-1]}')" in err and
              not os.path.exists(J("x8.json")), f"exit {rc}: {err.strip()}")
        # a report measured with another calibrator: its gains are of other scales than the plan's; refused as
        # another core or target is, naming both methods. A report that records no method gets a note
        refused("plan --budget --method entropy with a percentile report: exit 2, naming both methods",
                ["plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0.3",
                 "--method", "entropy", "--data", J("val.h5"), "--out", J("x10.json")], 2,
                f"{J('sens.json')} was measured with --method {sens['method']}, the plan's is entropy", J("x10.json"))
        q = json.loads(json.dumps(sens))
        q.pop("method")
        with open(J("nomethod.json"), "w") as f:
            json.dump(q, f)
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("nomethod.json"), "--budget",
                         "0.3", "--max-moves", "0", "--data", J("val.h5"), "--samples", "100", "--out", J("x11.json"))
        check("plan --budget with a report that records no method: a note, and the plan", rc in (0, 11) and
              "nomethod.json records no method" in err and os.path.exists(J("x11.json")), f"exit {rc}: {err[-300:]}")
        # a report measured for another placement: its "all but" runs left tensors out of another default plan (an
        # ort report was taken for a trt plan); refused as another method is. A report without "placement" (made
        # before it was recorded) is taken as it was
        check("the report records the default plan's placement", sens.get("placement") == "trt", sens.get("placement"))
        refused("plan --budget --placement ort with a trt report: exit 2, naming both placements",
                ["plan", J("calib.h5"), "--model", hard, "--sensitivity", J("sens.json"), "--budget", "0.3",
                 "--placement", "ort", "--data", J("val.h5"), "--out", J("x12.json")], 2,
                f"{J('sens.json')} was measured with --placement trt, the plan's is ort", J("x12.json"))
        q = json.loads(json.dumps(sens))
        q.pop("placement", None)
        with open(J("noplacement.json"), "w") as f:
            json.dump(q, f)
        rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, "--sensitivity", J("noplacement.json"), "--budget",
                         "0.3", "--max-moves", "0", "--placement", "ort", "--data", J("val.h5"), "--samples", "100",
                         "--out", J("x13.json"))
        check("plan --budget with a report that records no placement: the plan", rc in (0, 11) and
              os.path.exists(J("x13.json")), f"exit {rc}: {err[-300:]}")
        # validate --sensitivity reads the report as plan --budget does: one measured with another method or
        # placement than the plan's is refused (report.html drew its bars beside a plan they were not measured for)
        for flag, value in (("--method", "entropy"), ("--placement", "ort")):
            rc, _, err = ptq("plan", J("calib.h5"), "--model", hard, flag, value, "--out", J(f"{value}.json"))
            want = (f"was measured with --method {sens['method']}, the plan's is entropy" if value == "entropy" else
                    "was measured with --placement trt, the plan's is ort")
            refused(f"validate --sensitivity of the default report with a plan of {flag} {value}: exit 2, naming both",
                    ["validate", "--model", hard, "--plan", J(f"{value}.json"), "--data", J("val.h5"),
                     "--sensitivity", J("sens.json"), "--report", J(f"x14{value}")], 2, f"{J('sens.json')} {want}",
                    J(f"x14{value}", "validate.json"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("cli_sensitivity_test")


if __name__ == "__main__":
    sys.exit(main())
