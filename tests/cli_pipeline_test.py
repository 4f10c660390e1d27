"""The commands over the library pipeline (include/ptq/runner.h): JSON from
the commands is valid whatever the names in it (a `"` in an output path or
a plan's method), --device cuda:N is parsed (and falls back to the CPU with
a note where there is no GPU), validate loads the model once and its
report does not depend on the batch size, and eval --limit / calibrate
--samples pick the same samples as before."""
import json
import os
import shutil
import sys
import tempfile

import h5py
import numpy as np

from ptqtest import MODEL, check, finish, fmnist_test, have_demo, ptq


def main():
    if not have_demo():
        print("cli_pipeline_test: skipped: no demo model or Fashion-MNIST")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-pipeline-")
    try:
        images, labels = fmnist_test(600)
        data = os.path.join(tmp, "d.h5")
        with h5py.File(data, "w") as f:
            f["images"] = images
            f["labels"] = labels

        # calibrate --json with a quote and a backslash in the archive's name
        weird = os.path.join(tmp, 'we"ird\\name.h5')
        rc, out, err = ptq("calibrate", "--model", MODEL, "--data", data, "--samples", "100", "--out", weird, "--json")
        try:
            summary = json.loads(out)
            ok = summary["archive"] == weird and summary["samples"] == 100
        except (ValueError, KeyError) as e:
            ok, summary = False, str(e)
        check("calibrate --json prints valid JSON for an archive named with \" and \\", rc == 0 and ok, out[:200] + err)

        # a plan whose method holds a quote: validate runs and reports it
        plan = os.path.join(tmp, "plan.json")
        rc, out, err = ptq("plan", weird, "--model", MODEL, "--out", plan, "--quiet")
        check("plan from that archive", rc == 0, err)
        p = json.load(open(plan))
        p["method"] = 'hand "tuned" \\ by me'
        with open(plan, "w") as f:
            json.dump(p, f)
        rep = os.path.join(tmp, "rep")
        rc, out, err = ptq("validate", "--model", MODEL, "--plan", plan, "--data", data, "--report", rep)
        ok = False
        if rc == 0:
            v = json.load(open(os.path.join(rep, "validate.json")))
            ok = v["plan_method"] == p["method"]
        check("validate with a plan whose method holds \" and \\: exit 0, the method in valid JSON", ok,
              f"exit {rc}: {err.strip()[-200:]}")

        # validate's report does not depend on the batch size (one model, one executor, FP32 and the plan)
        rep2 = os.path.join(tmp, "rep2")
        rc2, _, err2 = ptq("validate", "--model", MODEL, "--plan", plan, "--data", data, "--report", rep2,
                           "--batch", "7")
        same = rc2 == 0 and open(os.path.join(rep, "validate.md")).read() == open(os.path.join(rep2, "validate.md")).read()
        j1 = json.load(open(os.path.join(rep, "validate.json"))) if rc == 0 else {}
        j2 = json.load(open(os.path.join(rep2, "validate.json"))) if rc2 == 0 else {}
        check("validate at --batch 256 and 7: the same report", same and j1 == j2, err2)

        # --device cuda:N
        rc, out, err = ptq("eval", "--model", MODEL, "--data", data, "--device", "cuda:x", "--limit", "10")
        check("--device cuda:x is refused (exit 2)", rc == 2 and "cuda:N" in err, err)
        rc, out, err = ptq("eval", "--model", MODEL, "--data", data, "--device", "tpu", "--limit", "10")
        check("--device tpu is refused (exit 2)", rc == 2, err)
        rc, out, err = ptq("version")
        if "gpu present" not in out:
            rc, out, err = ptq("eval", "--model", MODEL, "--data", data, "--device", "cuda:1", "--limit", "10")
            check("--device cuda:1 without a GPU: the CPU, with a note", rc == 0 and "running on the CPU" in err
                  and "device   cpu" in out, err)

        # eval --limit: the first N; --logits rows equal to the images evaluated
        npy = os.path.join(tmp, "l.npy")
        rc, out, err = ptq("eval", "--model", MODEL, "--data", data, "--limit", "123", "--logits", npy, "--json")
        ok = rc == 0 and json.loads(out)["samples"] == 123 and np.load(npy).shape == (123, 10)
        check("eval --limit 123 --logits: 123 rows", ok, err)
        rc, out, err = ptq("eval", "--model", MODEL, "--data", data, "--limit", "123", "--batch", "50", "--json")
        a = json.loads(out) if rc == 0 else {}
        rc, out, err = ptq("eval", "--model", MODEL, "--data", data, "--limit", "123", "--batch", "123", "--json")
        b = json.loads(out) if rc == 0 else {}
        for d in (a, b):
            [d.pop(k, None) for k in ("seconds", "images_per_s", "images_per_s_steady", "peak_rss_mib",
                                              "batch")]
        check("eval at --batch 50 and 123: the same figures", a == b and a.get("samples") == 123)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("cli_pipeline_test")


if __name__ == "__main__":
    sys.exit(main())
