"""ptq under mpirun on the CPU (README "Running across GPUs"): calibrate,
sensitivity, validate and run with 2 and 3 ranks write the same bytes as one
process (the archive, the reports, the plan; the sensitivity report less its
seconds and work counts), splitting the samples and, in sensitivity, the
tensors; a rank that fails (an image only its share holds is corrupt, or a
failure injected through PTQ_DIST_FAIL_RANK at each agreement, an output
folder or an input that differs on one rank's node) ends every rank with one
message naming it, the same non-zero exit and no output; fewer samples than
ranks leave ranks idle; validate --reference checks the job's first batch
whatever the rank count; a tensor without a batch dimension (the text
encoder's positional slice) is counted the same whatever --batch, ranks or
shards; a note that every rank has prints once, one that a rank alone has
names it; an image folder's conversion notes count every rank's images.
Skips (77) when ptq is built without MPI or mpirun is missing."""
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import h5py
import numpy as np

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
        rc, out, err = mpi(n, "calibrate", "--model", MODEL, "--data", cal, "--out", J(f"c{n}.h5"), "--batch", "32",
                           env={"PTQ_DIST_STATS": "1"})
        check(f"calibrate -np {n}: exit 0, rank 0 alone prints", rc == 0 and out.count("archive ") == 1, err[-400:])
        check(f"calibrate -np {n}: the archive is byte-identical", same_bytes(J("c1.h5"), J(f"c{n}.h5")))
        # PTQ_DIST_STATS: every rank's line (printed by the command from ptq_dist_get_stats; the library prints none)
        stats = re.findall(r"ptq: dist: rank (\d+) of (\d+): (\d+) collectives", err)
        check(f"calibrate -np {n} with PTQ_DIST_STATS: one line per rank, each with collectives",
              sorted(int(r) for r, _, _ in stats) == list(range(n)) and all(int(k) == n and int(c) > 0
                                                                          for _, k, c in stats), err[-400:])
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
    for k in range(5):
        rc, _, err = mpi(2, "calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J(f"inj{k}.h5"),
                         env={"PTQ_DIST_FAIL_RANK": f"1:{k}"})
        errs = ptq_errors(err)
        wrote = os.path.exists(J(f"inj{k}.h5"))
        # the last agreement comes after rank 0 committed the archive: the job still fails as a whole
        check(f"calibrate -np 2, rank 1 fails at agreement {k}: one message, exit 1",
              rc == 1 and len(errs) == 1 and "rank 1 of 2: injected failure" in errs[0] and (k == 4 or not wrote),
              err[-400:])
    for cmd, out in ((["sensitivity", "--model", MODEL, "--calib", J("c1.h5"), "--data", J("val.h5"), "--samples",
                       "50"], "--out"), (["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("val.h5"),
                                          "--limit", "50"], "--report")):
        rc, _, err = mpi(3, *cmd, out, J(f"inj_{cmd[0]}"), env={"PTQ_DIST_FAIL_RANK": "2"})
        errs = ptq_errors(err)
        check(f"{cmd[0]} -np 3, rank 2 fails at once: one message, exit 1, nothing written",
              rc == 1 and len(errs) == 1 and "rank 2 of 3" in errs[0] and not os.path.exists(J(f"inj_{cmd[0]}")),
              err[-400:])
    # fewer samples than ranks: the idle ranks observe nothing (the reductions are sums)
    ptq("calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J("few1.h5"), "--samples", "2")
    rc, _, err = mpi(3, "calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J("few.h5"), "--samples", "2")
    check("2 samples over 3 ranks: calibrate writes what one process does", rc == 0 and same_bytes(J("few1.h5"),
          J("few.h5")), err[-300:])
    few = ["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("val.h5"), "--limit", "2"]
    ptq(*few, "--report", J("few_r1"))
    rc, _, err = mpi(3, *few, "--report", J("few_r3"))
    check("2 samples over 3 ranks: validate writes what one process does", rc == 0 and all(
          same_bytes(J("few_r1", f), J("few_r3", f)) for f in ("validate.json", "validate.md", "report.html")), err[-300:])
    rc, _, err = mpi(2, "validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("val.h5"), "--report",
                     J("lg"), "--logits", J("lg.npy"))
    check("validate --logits under mpirun: exit 2, one message", rc == 2 and len(ptq_errors(err)) == 1, err[-300:])


def test_node_local(tmp, J):
    """Each rank runs in its own folder, as on nodes whose paths are not on a shared file system."""
    wrap = J("wrap.sh")
    open(wrap, "w").write(f'#!/bin/sh\ncd {tmp}/node$OMPI_COMM_WORLD_RANK && exec {PTQ} "$@"\n')
    os.chmod(wrap, 0o755)
    for r in (0, 1):
        os.makedirs(J(f"node{r}"))
        for src, dst in (("cal.h5", "d.h5"), ("val.h5", "v.h5"), ("c1.h5", "c.h5"), ("plan.json", "plan.json")):
            shutil.copy(J(src), J(f"node{r}", dst))
        shutil.copy(MODEL, J(f"node{r}", "m.onnx"))

    def on_nodes(*args):
        p = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2", wrap,
                            *args], capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    sens = ["sensitivity", "--model", "m.onnx", "--calib", "c.h5", "--data", "v.h5", "--samples", "20"]
    # the output folder on one node only: rank 0 writes, the others never do
    os.makedirs(J("node1", "only1"))
    rc, _, err = on_nodes(*sens, "--out", "only1/s.json")
    errs = ptq_errors(err)
    check("sensitivity -np 2, --out's folder on rank 1's node only: exit 3 at once, one message from rank 0",
          rc == 3 and len(errs) == 1 and "rank 0 of 2: cannot write only1/s.json" in errs[0], err[-400:])
    os.makedirs(J("node0", "only0"))
    rc, _, err = on_nodes(*sens, "--out", "only0/s.json")
    check("sensitivity -np 2, --out's folder on rank 0's node only: rank 0 writes the report",
          rc == 0 and os.path.exists(J("node0", "only0", "s.json")), err[-400:])
    # ptq run's later stages read what the earlier ones wrote in DIR, on every rank: refused before the first stage
    run = ["run", "--model", "m.onnx", "--calib-data", "d.h5", "--data", "v.h5", "--samples", "20"]
    for out, what in (("runout", "made by rank 0 on its node"), ("only0", "that rank 0 alone has")):
        rc, o, err = on_nodes(*run, "--out", out)
        errs = ptq_errors(err)
        check(f"run -np 2, --out a folder {what}: exit 2 before any stage, one message naming rank 1 and the folder,"
              " nothing left", rc == 2 and "== calibrate" not in o and len(errs) == 1 and
              f"rank 1 of 2: --out {out} is not the folder rank 0 writes" in errs[0] and
              sorted(os.listdir(J("node0", "only0"))) == ["s.html", "s.json", "s.md"] and
              not os.path.exists(J("node0", "runout")), f"exit {rc}: {err[-400:]}")

    def refused(what, path, args, rc_want=2):
        rc, out, err = on_nodes(*args)
        errs = ptq_errors(err)
        left = [f for r in (0, 1) for f in os.listdir(J(f"node{r}")) if "tmp" in f or f.startswith("x")]
        check(f"{what}: exit {rc_want}, one message naming rank 1 and {path}, nothing written",
              rc == rc_want and len(errs) == 1 and f"rank 1 of 2: {path} is not the file rank 0 read" in errs[0]
              and not left, f"{err[-400:]} left: {left}")

    calib = ["calibrate", "--model", "m.onnx", "--data", "d.h5", "--out", "x.h5"]
    shutil.copy(J("val.h5"), J("node1", "d.h5"))  # other images, more of them
    refused("calibrate, rank 1's d.h5 has other samples", "d.h5", calib)
    with h5py.File(J("cal.h5")) as a, h5py.File(J("node1", "d.h5"), "w") as f:
        f["images"] = a["images"][:][::-1]  # the same count, other order
    refused("calibrate, rank 1's d.h5 holds other data", "d.h5", calib)
    shutil.copy(J("cal.h5"), J("node1", "d.h5"))
    with h5py.File(J("val.h5")) as a, h5py.File(J("node1", "v.h5"), "w") as f:
        f["images"] = a["images"][:]
        f["labels"] = (a["labels"][:] + 1) % 10
    refused("validate, rank 1's v.h5 has other labels", "v.h5",
            ["validate", "--model", "m.onnx", "--plan", "plan.json", "--data", "v.h5", "--report", "xr"])
    refused("sensitivity, rank 1's v.h5 has other labels", "v.h5", [*sens, "--out", "xs.json"])
    shutil.copy(J("val.h5"), J("node1", "v.h5"))
    other = os.path.join(os.path.dirname(MODEL), "fmnist_mobilenet.onnx")
    if os.path.exists(other):
        shutil.copy(other, J("node1", "m.onnx"))
        refused("calibrate, rank 1's m.onnx is another model", "m.onnx", calib)
        shutil.copy(MODEL, J("node1", "m.onnx"))
    open(J("node1", "plan.json"), "a").write("\n")
    refused("validate, rank 1's plan.json differs", "plan.json",
            ["validate", "--model", "m.onnx", "--plan", "plan.json", "--data", "v.h5", "--report", "xr"])


def test_reference(tmp, J):
    """validate --reference checks the job's first batch, on any number of ranks."""
    import numpy as np
    rc, _, err = ptq("eval", "--model", MODEL, "--data", J("val.h5"), "--logits", J("ref.npy"))
    check("eval --logits", rc == 0, err)
    for name, rows in (("late", slice(200, None)), ("early", slice(0, 130))):
        a = np.load(J("ref.npy"))
        a[rows] += 5
        np.save(J(f"ref_{name}.npy"), a)
        base = ["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("val.h5"), "--reference",
                J(f"ref_{name}.npy")]
        rc1, _, err1 = ptq(*base, "--report", J(f"ref1_{name}"))
        for n in (2, 3):
            rc, _, err = mpi(n, *base, "--report", J(f"ref{n}_{name}"))
            errs = ptq_errors(err)
            check(f"validate --reference (rows {rows.start}.. off) -np {n}: exit {rc1} as one process",
                  rc == rc1 and (rc == 0 or len(errs) == 1 and "on the first 256 images" in errs[0]), err[-400:])
        check(f"validate --reference (rows {rows.start}.. off): exit {7 if name == 'early' else 0}",
              rc1 == (7 if name == "early" else 0), err1[-300:])


def test_batchless(tmp, J):
    """A tensor without a batch dimension (text_encoder's /Slice_output_0) is observed once per sample."""
    import numpy as np
    model = os.path.join(os.path.dirname(MODEL), "text_encoder.onnx")
    if not os.path.exists(model):
        return
    rng = np.random.default_rng(13)
    n, L = 13, 40
    lens = rng.integers(1, L + 1, size=n)
    mask = (np.arange(L)[None, :] < lens[:, None]).astype(np.int64)
    with h5py.File(J("txt.h5"), "w") as f:
        f["input_ids"] = rng.integers(2, 50, size=(n, L)).astype(np.int64) * mask
        f["attention_mask"] = mask
    base = ["calibrate", "--model", model, "--data", J("txt.h5")]
    rc, _, err = ptq(*base, "--out", J("t.h5"))
    check("text_encoder calibrate", rc == 0, err)
    for b in ("1", "4"):
        ptq(*base, "--out", J(f"t_b{b}.h5"), "--batch", b)
        check(f"text_encoder --batch {b}: the archive is byte-identical", same_bytes(J("t.h5"), J(f"t_b{b}.h5")))
    rc, _, err = mpi(2, *base, "--out", J("t_np2.h5"))
    check("text_encoder -np 2: the archive is byte-identical", rc == 0 and same_bytes(J("t.h5"), J("t_np2.h5")), err)
    for s in range(3):
        ptq(*base, "--out", J(f"t_s{s}.h5"), "--shard", f"{s}/3")
    rc, _, err = ptq("merge", J("t_s0.h5"), J("t_s1.h5"), J("t_s2.h5"), "--out", J("t_m.h5"))
    check("text_encoder: 3 shards merged equal the whole", rc == 0 and same_bytes(J("t.h5"), J("t_m.h5")), err)
    import hdf5plugin  # noqa: F401  (registers the zstd filter 32015 with h5py)
    with h5py.File(J("t.h5")) as f:
        names = [x.decode() if isinstance(x, bytes) else x for x in f["tensors/name"][:]]
        count = dict(zip(names, f["tensors/count"][:]))
    check("/Slice_output_0 counted once per sample", count.get("/Slice_output_0") == n * L * 64,
          str(count.get("/Slice_output_0")))


def test_notes(tmp, J):
    """A note every rank has (--math on the CPU) prints once, as from one process; one that a single rank has
    prints from that rank, named."""
    note = "note: --math tf32 applies to the GPU; the CPU computes in FP32"
    cmds = (["calibrate", "--model", MODEL, "--data", J("cal.h5"), "--out", J("n.h5"), "--samples", "40"],
            ["sensitivity", "--model", MODEL, "--calib", J("c1.h5"), "--data", J("val.h5"), "--samples", "20",
             "--out", J("n.json")],
            ["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("val.h5"), "--limit", "40",
             "--report", J("n_r")],
            ["eval", "--model", MODEL, "--data", J("val.h5"), "--limit", "40"])
    for cmd in cmds:
        rc, _, err = mpi(2, *cmd, "--device", "cpu", "--math", "tf32")
        lines = [l for l in err.splitlines() if "--math tf32" in l]
        check(f"{cmd[0]} -np 2 --math tf32 on the CPU: exit 0, the note once, naming no rank",
              rc == 0 and lines == [f"ptq {cmd[0]}: {note}"], err[-600:])
    wrap = J("wrap_math.sh")  # rank 1 alone asks for --math tf32
    open(wrap, "w").write(f'#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && exec {PTQ} "$@" --math tf32\n'
                          f'exec {PTQ} "$@"\n')
    os.chmod(wrap, 0o755)
    p = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "3", wrap,
                        *cmds[0], "--device", "cpu"], capture_output=True, text=True, timeout=300)
    lines = [l for l in p.stderr.splitlines() if "--math tf32" in l]
    check("calibrate -np 3, --math tf32 on rank 1 alone: its note once, naming rank 1",
          p.returncode == 0 and lines == ["ptq calibrate: note: rank 1 of 3: --math tf32 applies to the GPU; the CPU "
                                          "computes in FP32"], p.stderr[-600:])


def png_bytes(img, depth=8):
    """A PNG of img [H, W, C] (C 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; depth 8, or 16 for uint16 values)."""
    h, w, c = img.shape
    data = img.astype(">u2" if depth == 16 else np.uint8)
    raw = b"".join(b"\x00" + data[r].tobytes() for r in range(h))

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)
    kind = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, kind, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_folder_notes(tmp, J):
    """An image folder that mixes gray, gray+alpha, RGB, RGBA and 16-bit gray PNGs: the notes on what the
    conversions did count the images of every rank, as one process prints them (under mpirun each rank read its
    share and the notes printed none of them: no note at all)."""
    rng = np.random.default_rng(9)
    root = J("mixed")
    kinds = [1, 3, 4, 1, 2, 3, 1, 4, 3, 1, 16, 1, 3, 1, 4, 1, 1, 3]  # 16: a 16-bit gray PNG
    for i, k in enumerate(kinds):
        os.makedirs(os.path.join(root, f"c{i % 2}"), exist_ok=True)
        img = (rng.integers(0, 65536, (28, 28, 1)) if k == 16 else rng.integers(0, 256, (28, 28, k)))
        open(os.path.join(root, f"c{i % 2}", f"im{i:02d}.png"), "wb").write(png_bytes(img, 16 if k == 16 else 8))
    cmds = (["calibrate", "--model", MODEL, "--data", root, "--out", J("mixed-c.h5")],
            ["validate", "--model", MODEL, "--plan", J("plan.json"), "--data", root, "--report", J("mixed-r")])
    for cmd in cmds:
        rc, _, err = ptq(*cmd)
        want = [l for l in err.splitlines() if " images read " in l]
        check(f"{cmd[0]} of a mixed PNG folder, one process: exit 0, the notes of RGB, RGBA and 16-bit images",
              rc == 0 and len(want) == 3 and "3 of the 18 images read were RGBA" in err, err[-600:])
        for n in (2, 3):
            shutil.rmtree(J("mixed-r"), ignore_errors=True)
            rc, _, err = mpi(n, *cmd)
            got = [l for l in err.splitlines() if " images read " in l]
            check(f"{cmd[0]} -np {n} of a mixed PNG folder: exit 0, the notes one process prints, counted over the "
                  f"ranks", rc == 0 and got == want, f"exit {rc}, {got} (one process: {want}): {err[-400:]}")
        shutil.rmtree(J("mixed-r"), ignore_errors=True)


def test_stdout_kept(tmp, J):
    """What rank 0 prints on stdout reaches it when the job fails: the ranks exit with the failing stage's code,
    and mpirun stops the job at the first rank that does, which must not cut rank 0 off before its stdout is out
    (run --json's summary was lost in about 4 runs of 10 on 4 ranks)."""
    os.makedirs(J("stdout"))
    args = ["run", "--model", os.path.abspath(MODEL), "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
            "out", "--smooth", "0.5", "--json"]  # the demo model has nothing to smooth: exit 5 at the first stage
    rc1, out1, err1 = ptq_in(J("stdout"), *args)
    check("run --json, nothing to smooth, one process: exit 5, the summary on stdout",
          rc1 == 5 and '"exit":5' in out1, f"exit {rc1}: {err1[-300:]}")
    lost = 0
    for _ in range(12):
        rc, out, err = mpi(4, *args, cwd=J("stdout"))
        lost += rc != 5 or out != out1
    check("run --json -np 4, nothing to smooth: exit 5 and the summary on stdout, every time of 12",
          lost == 0, f"{lost} lost")


def test_run_json(tmp, J):
    """run --json moves what the stages print to stderr on rank 0 only: the other ranks' stdout stays discarded."""
    args = ["run", "--model", os.path.abspath(MODEL), "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
            "out", "--calib-samples", "20", "--samples", "20", "--json"]
    ref = None
    for n in (1, 3):
        os.makedirs(J(f"json{n}"))
        rc, out, err = ptq_in(J(f"json{n}"), *args) if n == 1 else mpi(n, *args, cwd=J(f"json{n}"))
        stages = [l for l in err.splitlines() if l.startswith("== ") or l.startswith("archive ")]
        summary = json.loads(out) if rc == 0 else {}
        ref = ref or stages
        check(f"run --json -np {n}: exit 0, the summary on stdout, the stages' output once on stderr",
              rc == 0 and summary.get("exit") == 0 and len(stages) == 11 and stages == ref, f"exit {rc}: {stages}")


def test_collapse(tmp, J):
    """validate on outputs that collapse (tests/cli_collapse_test.py's model): exit 12 on every rank, as from one
    process, and the message once."""
    import numpy as np
    from cli_collapse_test import model
    rng = np.random.default_rng(18)
    w = rng.standard_normal((64, 10)).astype(np.float32)
    x = rng.integers(0, 256, (60, 8, 8), dtype=np.uint8)
    with h5py.File(J("col.h5"), "w") as f:
        f["images"] = x
        f["labels"] = (x.reshape(60, -1).astype(np.float32) @ w).argmax(1).astype(np.int64)
    model(J("col.onnx"), w, True)
    ptq("calibrate", "--model", J("col.onnx"), "--data", J("col.h5"), "--out", J("col_c.h5"))
    ptq("plan", J("col_c.h5"), "--model", J("col.onnx"), "--out", J("col_plan.json"))
    wrap = J("wrap_rc.sh")  # each rank's own exit code, which mpirun does not tell
    open(wrap, "w").write(f'#!/bin/sh\n{PTQ} "$@"\nrc=$?\necho "rank $OMPI_COMM_WORLD_RANK exit $rc" >&2\nexit $rc\n')
    os.chmod(wrap, 0o755)
    args = ["validate", "--model", J("col.onnx"), "--plan", J("col_plan.json"), "--data", J("col.h5")]
    rc1, _, _ = ptq(*args, "--report", J("col_r1"))
    p = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "3", wrap,
                        *args, "--report", J("col_r3")], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OMPI_MCA_orte_abort_on_non_zero_status="0"))  # every wrapper ends
    exits = sorted(l for l in p.stderr.splitlines() if l.startswith("rank "))
    check("validate -np 3, collapsed outputs: every rank exits 12 as one process, one message",
          rc1 == 12 and exits == [f"rank {r} exit 12" for r in range(3)] and len(ptq_errors(p.stderr)) == 1 and
          "collapsed" in ptq_errors(p.stderr)[0], f"{exits} {p.stderr[-400:]}")


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
        only = sys.argv[1:]  # test names, for a quicker run while working on one
        for t in (test_same_results, test_run, test_failures, test_node_local, test_reference, test_batchless,
                  test_notes, test_folder_notes, test_stdout_kept, test_run_json, test_collapse):
            if not only or t.__name__ in only or t is test_same_results:
                t(tmp, J)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("mpi_test")


if __name__ == "__main__":
    sys.exit(main())
