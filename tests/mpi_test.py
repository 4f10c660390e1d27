"""ptq under mpirun on the CPU (README "Running across GPUs"): calibrate,
sensitivity, validate and run with 2 and 3 ranks write the same bytes as one
process (the archive, the reports, the plan; the sensitivity report less its
seconds and work counts), splitting the samples and, in sensitivity, the
tensors; a rank that fails (an image only its share holds is corrupt, or a
failure injected through PTQ_DIST_FAIL_RANK at each agreement) ends every
rank with one message naming it, the same non-zero exit and no output.
Skips (77) when ptq is built without MPI or mpirun is missing."""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import h5py

from ptqtest import MODEL, PTQ, check, finish, fmnist_test, have_demo, ptq

MPIRUN = shutil.which("mpirun")
WORK_KEYS = ("seconds", "runs", "nodes_run", "nodes_if_every_run_were_whole", "seconds_read", "seconds_fp32_runs",
             "seconds_only_runs", "seconds_default_plan_runs", "seconds_all_but_runs")  # how long, how much: not figures


def mpi(n, *args, cwd=None, env=None):
    """ptq under mpirun -np n: (exit code, stdout, stderr)."""
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(n), PTQ, *args]
    e = dict(os.environ, **(env or {}))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd, env=e)
    return p.returncode, p.stdout, p.stderr


def ptq_in(cwd, *args):
    p = subprocess.run([PTQ, *args], capture_output=True, text=True, timeout=900, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def same_bytes(a, b):
    return os.path.exists(a) and os.path.exists(b) and open(a, "rb").read() == open(b, "rb").read()


def sens_figures(path):
    """The sensitivity report less what depends on how the work was split."""
    d = json.load(open(path))
    for k in WORK_KEYS:
        d.pop(k, None)
    return d


def ptq_errors(err):
    return [l for l in err.splitlines() if l.startswith("ptq ") and ": error: " in l]


def files_of(root):
    return sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**"), recursive=True)
                  if os.path.isfile(p))


def make_png_set(tmp, n):
    """A PNG folder of n labelled images whose last one (the last rank's share) is cut short."""
    images, labels = fmnist_test(n)
    idx_i, idx_l, out = os.path.join(tmp, "i.idx"), os.path.join(tmp, "l.idx"), os.path.join(tmp, "png")
    open(idx_i, "wb").write(struct.pack(">IIII", 0x803, n, 28, 28) + images.tobytes())
    open(idx_l, "wb").write(struct.pack(">II", 0x801, n) + labels.astype("uint8").tobytes())
    rc, _, err = ptq("data", "convert", "--images", idx_i, "--labels", idx_l, "--out", out, "--format", "png")
    check("PNG set made", rc == 0, err)
    last = sorted(glob.glob(os.path.join(out, "*", "*.png")))[-1]
    data = open(last, "rb").read()
    open(last, "wb").write(data[:60])  # the header survives, the pixels do not
    return out


def test_same_results(tmp, J):
    cal, val = J("cal.h5"), J("val.h5")
    # calibrate: one process, then 2 and 3 ranks (odd shares), and a shard of a shard
    rc, _, err = ptq("calibrate", "--model", MODEL, "--data", cal, "--out", J("c1.h5"), "--batch", "32")
    check("calibrate, one process", rc == 0, err)
    for n in (2, 3):
        rc, out, err = mpi(n, "calibrate", "--model", MODEL, "--data", cal, "--out", J(f"c{n}.h5"), "--batch", "32")
        check(f"calibrate -np {n}: exit 0, rank 0 alone prints", rc == 0 and out.count("archive ") == 1, err[-400:])
        check(f"calibrate -np {n}: the archive is byte-identical", same_bytes(J("c1.h5"), J(f"c{n}.h5")))
    # 2^23 bins: each tensor's histogram is reduced on its own (the reduction's blocks hold 2^23 words)
    wide = ["calibrate", "--model", MODEL, "--data", cal, "--bins", "8388608", "--tensors", "input,logits,/stem*"]
    rc, _, err = ptq(*wide, "--out", J("w1.h5"))
    check("calibrate --bins 8388608, one process", rc == 0, err)
    rc, _, err = mpi(2, *wide, "--out", J("w2.h5"))
    check("calibrate --bins 8388608 -np 2: byte-identical, tensor by tensor", rc == 0 and same_bytes(J("w1.h5"), J("w2.h5")),
          err[-300:])
    ptq("calibrate", "--model", MODEL, "--data", cal, "--out", J("half1.h5"), "--shard", "1/2", "--samples", "150")
    rc, _, err = mpi(3, "calibrate", "--model", MODEL, "--data", cal, "--out", J("half3.h5"), "--shard", "1/2",
                     "--samples", "150")
    check("calibrate --shard 1/2 -np 3 == the shard in one process", rc == 0 and same_bytes(J("half1.h5"), J("half3.h5")),
          err[-300:])

    # sensitivity: 3 ranks split the tensors (300 samples < 2 batches), 2 ranks at --batch 16 the samples,
    # 4 ranks at --batch 64 both (2 sample shards x 2 tensor groups)
    base = ["sensitivity", "--model", MODEL, "--calib", J("c1.h5"), "--data", val, "--samples", "0"]
    rc, _, err = ptq(*base, "--out", J("s1.json"))
    check("sensitivity, one process", rc == 0, err)
    ref = sens_figures(J("s1.json"))
    check("the sensitivity report measured tensors", len(ref.get("tensors", [])) > 10)
    for n, extra in ((3, []), (2, ["--batch", "16"]), (4, ["--batch", "64"])):
        rc, _, err = mpi(n, *base, "--out", J(f"s{n}.json"), *extra)
        check(f"sensitivity -np {n} {' '.join(extra)}: exit 0", rc == 0, err[-400:])
        if rc == 0:
            check(f"sensitivity -np {n}: the same figures", sens_figures(J(f"s{n}.json")) == ref)
            check(f"sensitivity -np {n}: sens.md byte-identical", same_bytes(J("s1.md"), J(f"s{n}.md")))

    # validate: the default plan against FP32
    rc, _, err = ptq("plan", J("c1.h5"), "--model", MODEL, "--out", J("plan.json"))
    check("plan", rc == 0, err)
    vbase = ["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", val, "--calib", J("c1.h5")]
    rc, _, err = ptq(*vbase, "--report", J("r1"))
    check("validate, one process", rc == 0, err)
    for n in (2, 3):
        rc, _, err = mpi(n, *vbase, "--report", J(f"r{n}"), "--batch", "7")
        same = [f for f in ("validate.json", "validate.md", "report.html") if same_bytes(J("r1", f), J(f"r{n}", f))]
        check(f"validate -np {n}: exit 0, every report file byte-identical", rc == 0 and len(same) == 3,
              f"{err[-300:]} same: {same}")


def manifest(path):
    """run.json with its stage keys blanked where they hash sens.json (its timings differ from run to run)."""
    m = json.load(open(path))
    return {k: v if k in ("format", "plan_budget_missed", "calibrate", "sensitivity") else "<key>" for k, v in m.items()}


def test_run(tmp, J):
    """ptq run in folders of the same relative name, so that paths inside the outputs agree."""
    for n in (1, 2, 3):
        os.makedirs(J(f"run{n}"))
        args = ["run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out", "out",
                "--calib-samples", "0", "--samples", "0"]
        rc, out, err = ptq_in(J(f"run{n}"), *args) if n == 1 else mpi(n, *args, cwd=J(f"run{n}"))
        check(f"run -np {n}: exit 0", rc == 0 and "== done" in out, err[-400:])
    ref = files_of(J("run1", "out"))
    check("run writes its outputs", len(ref) >= 11, ", ".join(ref))
    for n in (2, 3):
        got = files_of(J(f"run{n}", "out"))
        check(f"run -np {n}: the same files", got == ref, f"{got} vs {ref}")
        differ = [f for f in ref if f not in ("sens.json", "run.json")
                  and not same_bytes(J("run1", "out", f), J(f"run{n}", "out", f))]
        check(f"run -np {n}: every output byte-identical (sens.json less its timings; run.json less the keys"
              " that hash sens.json)",
              not differ and sens_figures(J("run1", "out", "sens.json")) == sens_figures(J(f"run{n}", "out", "sens.json"))
              and manifest(J("run1", "out", "run.json")) == manifest(J(f"run{n}", "out", "run.json")),
              ", ".join(differ))
    rc, out, err = mpi(2, "run", "--model", MODEL, "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out", "out",
                       "--calib-samples", "0", "--samples", "0", cwd=J("run2"))
    check("run -np 2 again: every stage skipped", rc == 0 and out.count("up to date, skipped") == 8, out[-400:])


def test_failures(tmp, J):
    png = make_png_set(tmp, 60)
    # a real failure on one rank: the corrupt image is in rank 2's share only
    for cmd in (["calibrate", "--model", MODEL, "--data", png, "--out", J("bad.h5")],
                ["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", png, "--report", J("bad_r")]):
        rc1, _, err1 = ptq(*cmd)
        rc, out, err = mpi(3, *cmd)
        errs = ptq_errors(err)
        check(f"{cmd[0]} -np 3, rank 2's image corrupt: one message naming rank 2 and the image, exit {rc1}",
              rc == rc1 == 7 and len(errs) == 1 and "rank 2 of 3: cannot decode PNG" in errs[0] and "00039" in errs[0]
              and "ptq " not in out, err[-600:])
    check("no archive, no report, no temporary left", not os.path.exists(J("bad.h5")) and not os.path.exists(J("bad_r"))
          and not glob.glob(J(".*tmp*")) and not glob.glob(J("*.tmp*")), str(os.listdir(tmp)))

    # a failure at each agreement of calibrate: after the run, around the reduction, after rank 0 wrote
    for k in range(4):
        rc, _, err = mpi(2, "calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J(f"inj{k}.h5"),
                         env={"PTQ_DIST_FAIL_RANK": f"1:{k}"})
        errs = ptq_errors(err)
        wrote = os.path.exists(J(f"inj{k}.h5"))
        # the last agreement comes after rank 0 committed the archive: the job still fails as a whole
        check(f"calibrate -np 2, rank 1 fails at agreement {k}: one message, exit 1",
              rc == 1 and len(errs) == 1 and "rank 1 of 2: injected failure" in errs[0] and (k == 3 or not wrote),
              err[-400:])
    for cmd, out in ((["sensitivity", "--model", MODEL, "--calib", J("c1.h5"), "--data", J("val.h5"), "--samples",
                       "50"], "--out"), (["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("val.h5"),
                                          "--limit", "50"], "--report")):
        rc, _, err = mpi(3, *cmd, out, J(f"inj_{cmd[0]}"), env={"PTQ_DIST_FAIL_RANK": "2"})
        errs = ptq_errors(err)
        check(f"{cmd[0]} -np 3, rank 2 fails at once: one message, exit 1, nothing written",
              rc == 1 and len(errs) == 1 and "rank 2 of 3" in errs[0] and not os.path.exists(J(f"inj_{cmd[0]}")),
              err[-400:])
    rc, _, err = mpi(3, "calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J("few.h5"), "--samples", "2")
    errs = ptq_errors(err)
    check("2 samples over 3 ranks: exit 2, one message", rc == 2 and len(errs) == 1 and "3 ranks" in errs[0], err[-300:])
    rc, _, err = mpi(2, "validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("val.h5"), "--report",
                     J("lg"), "--logits", J("lg.npy"))
    check("validate --logits under mpirun: exit 2, one message", rc == 2 and len(ptq_errors(err)) == 1, err[-300:])


def main():
    if not have_demo():
        print("mpi_test: skipped: no demo model or Fashion-MNIST")
        return 77
    rc, out, _ = ptq("version")
    if "mpi: not built in" in out or not MPIRUN:
        print(f"mpi_test: skipped: {'ptq is built without MPI' if MPIRUN else 'no mpirun on PATH'}")
        return 77
    rc, out, err = mpi(2, "version")
    if rc != 0 or "(2 ranks)" not in out:
        print(f"mpi_test: mpirun cannot start 2 ranks here: {err[-300:]}")
        return 1
    tmp = tempfile.mkdtemp(prefix="ptq-mpi-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    try:
        images, labels = fmnist_test(500)
        with h5py.File(J("cal.h5"), "w") as f:
            f["images"] = images[:200]
        with h5py.File(J("val.h5"), "w") as f:
            f["images"] = images[200:500]
            f["labels"] = labels[200:500]
        test_same_results(tmp, J)
        test_run(tmp, J)
        test_failures(tmp, J)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("mpi_test")


if __name__ == "__main__":
    sys.exit(main())
