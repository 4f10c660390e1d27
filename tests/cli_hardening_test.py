"""ptq reads only what the user named and writes only where it should
(README "Files ptq reads and writes"): ONNX external data that leaves the
model's folder through a symlink, HDF5 external storage and external links
(unless --allow-external-data), FIFOs given as inputs (refused at once), the
temporary-file scheme (unpredictable names, a planted symlink at the old
"<out>.tmp-<pid>" name not followed, the umask respected, a 250-byte output
name written (the temporary's stem cut to fit), nothing left after
SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGPIPE/SIGUSR1/SIGALRM), an output that is an input (exit 2, input untouched), an
output that is a FIFO (or, as root, a character device like /dev/null), or a
symlink to one:
refused before any work (exit 3) and left as it was, never replaced by a
regular file; an output that is the model's ONNX external data (exit 2), an
output that is a folder, a symlink to one or in a missing one (exit 3 before
any work),
merge telling sources apart by content rather than by path (and the same
bytes in either argument order when shards name the data or the model by
other paths), every writer past the file size limit (ulimit -f): exit 3,
nothing left, the old file kept, data convert not renaming over a file
put at its output while it converts, a failed fsync (an LD_PRELOAD shim)
keeping the old output, and SIGTERM during ptq run removing the --out folder
it made."""
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_test import png_bytes  # noqa: E402
from ptqtest import FM, MODEL, PTQ, SRC, check, finish, fmnist_test, have_demo  # noqa: E402

PTQ_ABS = os.path.abspath(PTQ)


def run(*args, cwd=None, umask=None, timeout=120):
    """Runs ptq; (exit code, stdout, stderr); exit code None when it ran past timeout (it is killed)."""
    pre = (lambda: os.umask(umask)) if umask is not None else None
    try:
        p = subprocess.run([PTQ_ABS, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                           preexec_fn=pre)
    except subprocess.TimeoutExpired:
        return None, "", "timed out"
    return p.returncode, p.stdout, p.stderr


def last_line(err):
    return err.strip().splitlines()[-1] if err.strip() else ""


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def leftovers(folder):
    return [f for f in os.listdir(folder) if ".tmp-" in f]


def expect(name, res, code, needle=""):
    rc, _, err = res
    check(name, rc == code and needle in err, f"exit {rc} (want {code}): {last_line(err)}")


def external_data(tmp):
    """ONNX external data reached through a symlink must stay in the model's folder."""
    src = os.path.join(SRC, "tests", "data", "onnx", "external")
    m = os.path.join(tmp, "onnx")
    os.makedirs(m)
    shutil.copy(os.path.join(src, "model.onnx"), m)
    outside = os.path.join(tmp, "outside.bin")
    shutil.copy(os.path.join(src, "weights.bin"), outside)
    shutil.copy(os.path.join(src, "weights.bin"), os.path.join(m, "real.bin"))
    link = os.path.join(m, "weights.bin")
    model = os.path.join(m, "model.onnx")
    os.symlink("real.bin", link)
    expect("onnx: external data through a symlink inside the model's folder is read", run("info", model), 0)
    os.remove(link)
    os.symlink(outside, link)
    rc, _, err = run("info", model)
    check("onnx: external data symlinked outside the model's folder is refused (exit 4), naming the "
          "initializer and the path", rc == 4 and "outside the model's folder" in err and outside in err and
          "initializer" in err, f"exit {rc}: {last_line(err)}")
    os.remove(link)
    os.symlink("/etc/passwd", link)
    rc, _, err = run("info", model)
    check("onnx: external data symlinked to /etc/passwd is refused", rc == 4 and "/etc/passwd" in err,
          f"exit {rc}: {last_line(err)}")


def hdf5_external(tmp, images, labels):
    """External storage and external links are refused unless --allow-external-data."""
    import h5py
    raw = os.path.join(tmp, "raw.bin")
    images.tofile(raw)
    ext = os.path.join(tmp, "ext_storage.h5")
    with h5py.File(ext, "w") as f:
        f.create_dataset("images", shape=images.shape, dtype=np.uint8, external=[(raw, 0, images.nbytes)])
        f["labels"] = labels
    other = os.path.join(tmp, "other.h5")
    with h5py.File(other, "w") as f:
        f["images"] = images
    lnk = os.path.join(tmp, "ext_link.h5")
    with h5py.File(lnk, "w") as f:
        f["images"] = h5py.ExternalLink(other, "/images")
        f["labels"] = labels
    for name, path, what in (("external storage", ext, "external storage"), ("an external link", lnk, "external link")):
        rc, _, err = run("eval", "--model", MODEL, "--data", path)
        check(f"hdf5: {name} refused by eval (exit 4) naming it and the flag", rc == 4 and what in err and
              "--allow-external-data" in err, f"exit {rc}: {last_line(err)}")
        rc, out, err = run("eval", "--model", MODEL, "--data", path, "--allow-external-data", "--json")
        check(f"hdf5: {name} read with --allow-external-data", rc == 0 and '"top1"' in out,
              f"exit {rc}: {last_line(err)}")
        out_h5 = os.path.join(tmp, "ext_calib.h5")
        expect(f"hdf5: {name} refused by calibrate", run("calibrate", "--model", MODEL, "--data", path, "--out",
                                                         out_h5), 4, what)
        check(f"hdf5: calibrate refusing {name} leaves nothing", not os.path.exists(out_h5) and not leftovers(tmp),
              str(leftovers(tmp)))
    return ext


def fifos(tmp, archive):
    """A FIFO given as any input is refused at once (exit 3), not waited on."""
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    cases = (("eval --data", ["eval", "--model", MODEL, "--data", fifo]),
             ("eval --model", ["eval", "--model", fifo, "--data", archive]),
             ("calibrate --model", ["calibrate", "--model", fifo, "--data", archive, "--out", os.path.join(tmp, "f.h5")]),
             ("plan archive", ["plan", fifo, "--model", MODEL, "--out", os.path.join(tmp, "f.json")]),
             ("plan --check", ["plan", "--check", fifo, "--model", MODEL]),
             ("export archive", ["export", fifo, "--method", "minmax", "--format", "json", "--out",
                                 os.path.join(tmp, "f.json")]),
             ("merge", ["merge", fifo, archive, "--out", os.path.join(tmp, "f.h5")]),
             ("info", ["info", fifo]),
             ("data convert --images", ["data", "convert", "--images", fifo, "--labels", fifo, "--out",
                                        os.path.join(tmp, "f2.h5")]))
    for name, args in cases:
        t0 = time.time()
        rc, _, err = run(*args, timeout=20)
        check(f"fifo: {name} refused at once (exit 3)", rc == 3 and "FIFO" in err,
              f"exit {rc} after {time.time() - t0:.1f} s: {last_line(err)}")


def special_outputs(tmp, data, archive, plan):
    """An output named by a FIFO or a device is refused at once (exit 3) and stays what it was: outputs are renamed
    into place, and a run as root with --out /dev/null once replaced the machine's /dev/null with a file."""
    import stat
    folder = os.path.join(tmp, "special")
    os.mkdir(folder)
    nodes = [("fifo", lambda p: os.mkfifo(p))]
    if os.geteuid() == 0:  # a copy of /dev/null (character device 1, 3)
        nodes.append(("chardev", lambda p: os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))))
    for kind, make in nodes:
        out = os.path.join(folder, kind)
        make(out)
        cases = (("calibrate --out", ["calibrate", "--model", MODEL, "--data", data, "--out", out]),
                 ("plan --out", ["plan", archive, "--model", MODEL, "--out", out, "--quiet"]),
                 ("export --out", ["export", archive, "--method", "minmax", "--format", "trt", "--out", out]),
                 ("export qdq --out", ["export", "--format", "qdq", "--plan", plan, "--model", MODEL, "--out", out]),
                 ("eval --logits", ["eval", "--model", MODEL, "--data", data, "--logits", out]),
                 ("eval --report", ["eval", "--model", MODEL, "--data", data, "--report", out]),
                 ("sensitivity --out", ["sensitivity", "--model", MODEL, "--calib", archive, "--data", data,
                                        "--samples", "8", "--out", out]))
        for name, args in cases:
            rc, _, err = run(*args, timeout=60)
            st = os.lstat(out)
            same = stat.S_ISFIFO(st.st_mode) if kind == "fifo" else stat.S_ISCHR(st.st_mode)
            check(f"{kind} as output: {name} refused (exit 3), the {kind} left as it was", rc == 3 and same and
                  "not a regular file" in err, f"exit {rc}: {last_line(err)}")
    check("outputs named by FIFOs or devices: nothing else written beside them",
          sorted(os.listdir(folder)) == sorted(k for k, _ in nodes), str(os.listdir(folder)))
    # a symlink to one (as /dev/stdout is, to /proc/self/fd/1): refused too; the link was replaced by a regular
    # file (as root, `--logits /dev/stdout` would have turned /dev/stdout into one)
    for kind, _ in nodes:
        link = os.path.join(tmp, f"link-to-{kind}")
        os.symlink(os.path.join(folder, kind), link)
        for name, args in (("plan --out", ["plan", archive, "--model", MODEL, "--out", link, "--quiet"]),
                           ("eval --logits", ["eval", "--model", MODEL, "--data", data, "--logits", link])):
            rc, _, err = run(*args, timeout=60)
            check(f"a symlink to a {kind} as output: {name} refused (exit 3), the link left as it was",
                  rc == 3 and os.path.islink(link) and "a symlink to" in err and "not a regular file" in err,
                  f"exit {rc}, link {os.path.islink(link)}: {last_line(err)}")
        os.remove(link)


def last_pid():
    try:
        return int(open("/proc/sys/kernel/ns_last_pid").read())
    except OSError:
        return os.getpid()


def planted_symlinks(tmp, archive):
    """Symlinks planted at every "<out>.tmp-<pid>" ptq could get are not followed."""
    victim = os.path.join(tmp, "victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    out = os.path.join(tmp, "planted.json")
    first = last_pid() + 1
    planted = [f"{out}.tmp-{pid}" for pid in range(first, first + 400)]
    for p in planted:
        os.symlink(victim, p)
    rc, _, err = run("plan", archive, "--model", MODEL, "--out", out, "--quiet")
    check("tmp: a symlink planted at <out>.tmp-<pid> is not followed (victim intact, output a regular file)",
          rc == 0 and open(victim).read() == "precious\n" and os.path.isfile(out) and not os.path.islink(out),
          f"exit {rc}: {last_line(err)}")
    for p in planted:
        os.remove(p)


def umasks(tmp, data, archive, plan):
    for mask, want in ((0o022, 0o644), (0o027, 0o640), (0o077, 0o600)):
        d = os.path.join(tmp, f"umask{mask:03o}")
        os.makedirs(d)
        outs = {"calibrate": os.path.join(d, "c.h5"), "plan": os.path.join(d, "p.json"),
                "export qdq": os.path.join(d, "q.onnx"), "export trt": os.path.join(d, "t.cache"),
                "merge": os.path.join(d, "m.h5")}
        res = [run("calibrate", "--model", MODEL, "--data", data, "--out", outs["calibrate"], "--shard", "0/2",
                   umask=mask),
               run("plan", archive, "--model", MODEL, "--out", outs["plan"], "--quiet", umask=mask),
               run("export", "--format", "qdq", "--plan", plan, "--model", MODEL, "--out", outs["export qdq"],
                   "--quiet", umask=mask),
               run("export", archive, "--method", "minmax", "--format", "trt", "--out", outs["export trt"],
                   "--quiet", umask=mask)]
        res.append(run("merge", outs["calibrate"], os.path.join(tmp, "half1.h5"), "--out", outs["merge"],
                       umask=mask))
        modes = {k: (os.stat(v).st_mode & 0o777) if os.path.exists(v) else None for k, v in outs.items()}
        check(f"umask {mask:03o}: every output is {want:03o}", all(r[0] == 0 for r in res) and
              all(m == want for m in modes.values()),
              f"exits {[r[0] for r in res]}, modes { {k: oct(m) if m else m for k, m in modes.items()} }")


def outputs_that_are_inputs(tmp, data, archive, plan):
    model = os.path.join(tmp, "model_copy.onnx")
    shutil.copy(MODEL, model)
    keep = {p: digest(p) for p in (data, archive, plan, model)}
    rel_archive = os.path.relpath(archive, tmp)
    cases = (("calibrate --out = --data", ["calibrate", "--model", model, "--data", data, "--out", data]),
             ("calibrate --out = --model", ["calibrate", "--model", model, "--data", data, "--out", model]),
             ("plan --out = --model", ["plan", archive, "--model", model, "--out", model]),
             ("plan --out = the archive (another spelling)", ["plan", "./" + rel_archive, "--model", model, "--out",
                                                               archive]),
             ("export --out = the archive", ["export", archive, "--method", "minmax", "--format", "json", "--out",
                                             archive]),
             ("export --out = --model", ["export", archive, "--method", "minmax", "--format", "trt", "--model", model,
                                         "--out", model]),
             ("export qdq --out = --model", ["export", "--format", "qdq", "--plan", plan, "--model", model, "--out",
                                             model]),
             ("export qdq --out = --plan", ["export", "--format", "qdq", "--plan", plan, "--model", model, "--out",
                                            plan]),
             ("merge --out = an input", ["merge", archive, os.path.join(tmp, "half1.h5"), "--out", archive]),
             ("validate --logits = --model", ["validate", "--model", model, "--plan", plan, "--data", data,
                                              "--report", os.path.join(tmp, "rep"), "--logits", model]),
             ("eval --report = --data", ["eval", "--model", model, "--data", data, "--report", data]))
    for name, args in cases:
        rc, _, err = run(*args, cwd=tmp)
        check(f"output = input refused (exit 2): {name}", rc == 2 and "refusing to overwrite" in err,
              f"exit {rc}: {last_line(err)}")
    # two outputs in a report folder not made yet: --logits was written, then renamed over by validate.json (exit 0)
    new_rep = os.path.join(tmp, "rep_new")
    for spelling in ("validate.json", ".//validate.json"):
        rc, _, err = run("validate", "--model", model, "--plan", plan, "--data", data, "--report", new_rep,
                         "--logits", os.path.join(new_rep, spelling), cwd=tmp)
        check(f"validate --logits = {spelling} in a --report folder not made yet: refused (exit 2), nothing made",
              rc == 2 and "are the same file" in err and not os.path.exists(new_rep), f"exit {rc}: {last_line(err)}")
        shutil.rmtree(new_rep, ignore_errors=True)
    # through a symlink to the input
    link = os.path.join(tmp, "link.h5")
    os.symlink(archive, link)
    rc, _, err = run("merge", archive, os.path.join(tmp, "half1.h5"), "--out", link)
    check("output = input refused (exit 2): merge --out a symlink to an input", rc == 2, f"exit {rc}")
    os.remove(link)
    changed = [p for p, h in keep.items() if digest(p) != h]
    check("output = input: every input left byte-identical, no temporary left", not changed and not leftovers(tmp),
          f"changed {changed}, left {leftovers(tmp)}")


def unwritable_outputs(tmp, images, labels, archive, plan):
    """An output that is a folder, or whose folder is missing, is refused before any work (exit 3, naming it), by
    every command: they ran the whole calibration, evaluation or search and then failed on the rename ("Is a
    directory") or the temporary ("No such file or directory")."""
    import h5py
    big = os.path.join(tmp, "big-labelled.h5")
    with h5py.File(big, "w") as f:
        f["images"], f["labels"] = images, labels
    d = os.path.join(tmp, "a-folder")
    os.makedirs(os.path.join(d, "inside"))
    missing = os.path.join(tmp, "no-such-folder")
    vit = os.path.join(SRC, "models", "fmnist_vit.onnx")
    ref = ["--device", "ref", "--threads", "1"]  # slow: a late refusal would take minutes
    sens = os.path.join(tmp, "unwritable-sens.json")
    rc, _, err = run("sensitivity", "--model", MODEL, "--calib", archive, "--data", big, "--samples", "8", "--out",
                     sens)
    check("unwritable outputs: setup, a sensitivity report", rc == 0, last_line(err))
    cmds = {"calibrate": ["calibrate", "--model", MODEL, "--data", big, *ref, "--out"],
            "eval --logits": ["eval", "--model", MODEL, "--data", big, *ref, "--logits"],
            "eval --report": ["eval", "--model", MODEL, "--data", big, *ref, "--report"],
            "sensitivity": ["sensitivity", "--model", MODEL, "--calib", archive, "--data", big, *ref, "--out"],
            "plan": ["plan", archive, "--model", MODEL, "--out"],
            "plan --budget": ["plan", archive, "--model", MODEL, "--budget", "1", "--sensitivity", sens, "--data", big,
                              *ref, "--out"],
            "plan --method auto": ["plan", archive, "--model", MODEL, "--method", "auto", "--data", big, *ref,
                                   "--out"],
            "export trt": ["export", archive, "--method", "entropy", "--format", "trt", "--out"],
            "export json": ["export", archive, "--method", "mse", "--format", "json", "--out"],
            "export ort": ["export", archive, "--method", "entropy", "--format", "ort", "--out"],
            "export qdq": ["export", "--format", "qdq", "--plan", plan, "--model", MODEL, "--out"],
            "merge": ["merge", archive, os.path.join(tmp, "half1.h5"), "--out"],
            "smooth": ["smooth", "--model", vit, "--data", big, "--threads", "1", "--samples", "0", "--out"]}
    for name, args in cmds.items():
        if name != "export ort":  # its --out is a folder
            rc, _, err = run(*args, d, timeout=30)
            check(f"{name}: --out a folder refused (exit 3) before any work", rc == 3 and "it is a folder" in err,
                  f"exit {rc}: {last_line(err)}")
        rc, _, err = run(*args, os.path.join(missing, "x"), timeout=30)
        check(f"{name}: an output in a missing folder refused (exit 3) before any work", rc == 3 and
              missing in err, f"exit {rc}: {last_line(err)}")
    check("unwritable outputs: nothing made", os.listdir(d) == ["inside"] and not os.path.exists(missing) and
          not leftovers(tmp), f"{os.listdir(d)}, {leftovers(tmp)}")
    # a symlink to a folder is a folder too: the output replaced the user's link after the whole job, exit 0
    link = os.path.join(tmp, "link-to-a-folder")
    os.symlink(d, link)
    for name, args in cmds.items():
        if name != "export ort":
            rc, _, err = run(*args, link, timeout=30)
            check(f"{name}: --out a symlink to a folder refused (exit 3) before any work, the link kept",
                  rc == 3 and "a symlink to a folder" in err and os.path.islink(link), f"exit {rc}: {last_line(err)}")
    check("symlink to a folder as output: nothing made in the folder", os.listdir(d) == ["inside"], str(os.listdir(d)))
    os.remove(link)


def long_names(tmp, data, archive):
    """An output name of 250 bytes (legal up to 255) is written: the temporary beside it cuts its stem to fit."""
    d = os.path.join(tmp, "long")
    os.makedirs(d)
    out, plan = os.path.join(d, "a" * 247 + ".h5"), os.path.join(d, "p" * 245 + ".json")
    res = [run("calibrate", "--model", MODEL, "--data", data, "--out", out),
           run("plan", archive, "--model", MODEL, "--out", plan, "--quiet")]
    check("250-byte output names: calibrate and plan write them, nothing else left",
          all(r[0] == 0 for r in res) and sorted(os.listdir(d)) == sorted(map(os.path.basename, (out, plan))),
          f"{[(r[0], last_line(r[2])[-120:]) for r in res]}, left {[f[-50:] for f in os.listdir(d)]}")


def data_files_are_inputs(tmp, images, labels, plan):
    """Every file a data set reads is an input of the same-file check: an
    image folder's images (an output anywhere in the folder would replace or
    join them), its --labels and --classes files, and with
    --allow-external-data what an HDF5 set's external link, external storage
    or virtual dataset reads (found where libhdf5 finds them)."""
    import h5py
    root = os.path.join(tmp, "imgs")
    names = []
    for i in range(16):
        os.makedirs(os.path.join(root, str(labels[i])), exist_ok=True)
        names.append(f"{labels[i]}/{i:03d}.png")
        with open(os.path.join(root, names[-1]), "wb") as f:
            f.write(png_bytes(images[i]))
    lab, cls = os.path.join(tmp, "lab.txt"), os.path.join(tmp, "cls.txt")
    with open(lab, "w") as f:
        f.write("".join(f"{n} {labels[i]}\n" for i, n in enumerate(names)))
    with open(cls, "w") as f:
        f.write("".join(f"{c}\n" for c in range(10)))
    ext = os.path.join(tmp, "ext")
    os.makedirs(ext)
    images[:16].tofile(os.path.join(ext, "raw.bin"))
    with h5py.File(os.path.join(ext, "target.h5"), "w") as f:
        f["images"] = images[:16]
    with h5py.File(os.path.join(ext, "link.h5"), "w") as f:
        f["images"], f["labels"] = h5py.ExternalLink("target.h5", "/images"), labels[:16]
    with h5py.File(os.path.join(ext, "raw.h5"), "w") as f:  # raw.bin from the working folder, as libhdf5 reads it
        f.create_dataset("images", shape=(16, 28, 28), dtype=np.uint8, external=[("raw.bin", 0, 16 * 784)])
        f["labels"] = labels[:16]
    layout = h5py.VirtualLayout(shape=(16, 28, 28), dtype=np.uint8)
    layout[:] = h5py.VirtualSource("target.h5", "images", shape=(16, 28, 28))
    with h5py.File(os.path.join(ext, "vds.h5"), "w") as f:  # target.h5 beside it, from any working folder
        f.create_virtual_dataset("images", layout)
        f["labels"] = labels[:16]
    inputs = [os.path.join(root, n) for n in names] + [lab, cls] + [os.path.join(ext, n) for n in os.listdir(ext)]
    keep = {p: digest(p) for p in inputs}
    image, rep = os.path.join(root, names[0]), os.path.join(tmp, "rep_data")
    folder = ["--model", MODEL, "--data", root]
    val = ["validate", "--model", MODEL, "--plan", plan, "--report", rep]
    allow = "--allow-external-data"
    cases = (("calibrate --out = an image of the folder --data", ["calibrate", *folder, "--out", image], tmp),
             ("calibrate --out a new file in a class folder", ["calibrate", *folder, "--out", image + ".h5"], tmp),
             ("eval --logits = an image", ["eval", *folder, "--logits", image], tmp),
             ("validate --logits = an image", [*val, "--data", root, "--logits", image], tmp),
             ("validate --report inside the folder --data", [*val[:-1], os.path.join(root, "rep"), "--data", root],
              tmp),
             ("calibrate --out = --labels", ["calibrate", *folder, "--labels", lab, "--out", lab], tmp),
             ("eval --logits = --classes", ["eval", *folder, "--classes", cls, "--logits", cls], tmp),
             ("validate --logits = --labels", [*val, "--data", root, "--labels", lab, "--logits", lab], tmp),
             ("calibrate --out = an external link's target", ["calibrate", "--model", MODEL, "--data", "ext/link.h5",
                                                              allow, "--out", "ext/target.h5"], tmp),
             ("eval --logits = external storage", ["eval", "--model", MODEL, "--data", "raw.h5", allow, "--logits",
                                                   "raw.bin"], ext),
             ("validate --logits = a virtual dataset's source", [*val, "--data", "ext/vds.h5", allow, "--logits",
                                                                 "ext/target.h5"], tmp))
    for name, args, cwd in cases:
        rc, _, err = run(*args, cwd=cwd)
        check(f"data set's file as output refused (exit 2): {name}", rc == 2 and "refusing to" in err,
              f"exit {rc}: {last_line(err)}")
    changed = [p for p, h in keep.items() if digest(p) != h]
    added = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if os.path.join(d, f) not in keep]
    check("data set's files: every one left byte-identical, nothing added to the folder, no temporary", not changed
          and not added and not os.path.exists(rep) and not leftovers(tmp) and not leftovers(ext),
          f"changed {changed}, added {added}")
    beside = os.path.join(tmp, "imgs_calib.h5")  # a name that only starts like the folder's
    res = [run("calibrate", *folder, "--labels", lab, "--out", beside),
           run("eval", "--model", MODEL, "--data", "vds.h5", allow, "--logits", "vds_logits.npy", cwd=ext)]
    check("data set's files: outputs beside them are written", all(r[0] == 0 for r in res) and
          os.path.exists(beside), str([last_line(r[2]) for r in res]))


def model_data_files_are_inputs(tmp, data, archive, plan):
    """The files a model's ONNX external data is read from (its weights) are inputs of the same-file check too: an
    output naming one, in every command that takes --model, is refused (exit 2) before any work and the weights stay
    intact (calibrate, run and the others replaced them: the model was lost). An output beside them is written."""
    import onnx
    models = {}
    for loc in ("w.bin", "validate.json", "calib.h5"):
        m = onnx.load(MODEL)  # a fresh copy each time: a save marks the tensors external
        d = os.path.join(tmp, "extw-" + loc.split(".")[0])
        os.makedirs(d)
        models[loc] = os.path.join(d, "model.onnx")
        onnx.save_model(m, models[loc], save_as_external_data=True, all_tensors_to_one_file=True, location=loc,
                        size_threshold=0)
    model, w = models["w.bin"], os.path.join(os.path.dirname(models["w.bin"]), "w.bin")
    keep = {os.path.join(os.path.dirname(p), loc): digest(os.path.join(os.path.dirname(p), loc))
            for loc, p in models.items()}
    link = os.path.join(tmp, "w-link.bin")
    os.symlink(w, link)
    cases = (("calibrate --out", ["calibrate", "--model", model, "--data", data, "--out", w], tmp),
             ("calibrate --out, the model named from its folder", ["calibrate", "--model", "model.onnx", "--data",
                                                                  data, "--out", "w.bin"], os.path.dirname(w)),
             ("calibrate --out a symlink to it", ["calibrate", "--model", model, "--data", data, "--out", link], tmp),
             ("eval --logits", ["eval", "--model", model, "--data", data, "--logits", w], tmp),
             ("plan --out", ["plan", archive, "--model", model, "--out", w], tmp),
             ("sensitivity --out", ["sensitivity", "--model", model, "--calib", archive, "--data", data, "--out", w],
              tmp),
             ("validate --report, a report file", ["validate", "--model", models["validate.json"], "--plan", plan,
                                                   "--data", data, "--report",
                                                   os.path.dirname(models["validate.json"])], tmp),
             ("smooth --out", ["smooth", "--model", model, "--data", data, "--out", w], tmp),
             ("run --out, its archive", ["run", "--model", models["calib.h5"], "--calib-data", data, "--data", data,
                                         "--out", os.path.dirname(models["calib.h5"])], tmp))
    for name, args, cwd in cases:
        rc, _, err = run(*args, cwd=cwd)
        check(f"model's external data as output refused (exit 2): {name}", rc == 2 and "external data being read"
              in err, f"exit {rc}: {last_line(err)}")
    changed = [p for p, h in keep.items() if digest(p) != h]
    left = [f for p in keep for f in os.listdir(os.path.dirname(p)) if f not in ("model.onnx", os.path.basename(p))]
    check("model's external data: every data file byte-identical, nothing else written beside it", not changed and
          not left, f"changed {changed}, left {left}")
    beside = os.path.join(os.path.dirname(w), "calib.h5")
    rc, _, err = run("calibrate", "--model", model, "--data", data, "--out", beside)
    check("model's external data: an output beside it is written", rc == 0 and os.path.exists(beside) and
          digest(w) == keep[w], f"exit {rc}: {last_line(err)}")


def qdq_data_file(tmp, plan, data):
    """export --format qdq's and smooth's "<out>.data" (a large model's weights; PTQ_TEST_ONNX_INLINE_MAX=0 writes it
    for any) is an output like --out: naming the plan, the model or the data set it is refused (exit 2) and they
    stay intact (smooth replaced its data set with the weights)."""
    d = os.path.join(tmp, "qdqdata")
    os.makedirs(d)
    plan_d, model_d, data_d = os.path.join(d, "o.data"), os.path.join(d, "mm.data"), os.path.join(d, "s.data")
    shutil.copy(plan, plan_d)
    shutil.copy(MODEL, model_d)
    shutil.copy(data, data_d)
    keep = {p: digest(p) for p in (plan_d, model_d, data_d)}
    env = dict(os.environ, PTQ_TEST_ONNX_INLINE_MAX="0")
    vit = os.path.join(SRC, "models", "fmnist_vit.onnx")
    for name, args in (("export qdq <out>.data = --plan", ["export", "--format", "qdq", "--plan", plan_d, "--model",
                                                           MODEL, "--out", os.path.join(d, "o")]),
                       ("export qdq <out>.data = --model", ["export", "--format", "qdq", "--plan", plan, "--model",
                                                            model_d, "--out", os.path.join(d, "mm")]),
                       ("smooth <out>.data = --data", ["smooth", "--model", vit, "--data", data_d, "--out",
                                                       os.path.join(d, "s")]),
                       ("smooth <out>.data = --model", ["smooth", "--model", model_d, "--data", data, "--out",
                                                        os.path.join(d, "mm")])):
        p = subprocess.run([PTQ_ABS, *args], capture_output=True, text=True, env=env)
        check(f"{name} refused (exit 2)", p.returncode == 2 and "refusing to overwrite" in p.stderr,
              f"exit {p.returncode}: {last_line(p.stderr)}")
    out = os.path.join(d, "fine.onnx")
    p = subprocess.run([PTQ_ABS, "export", "--format", "qdq", "--plan", plan, "--model", MODEL, "--out", out],
                       capture_output=True, text=True, env=env)
    check("export qdq: inputs intact; another name writes the model and its .data", all(
        digest(k) == v for k, v in keep.items()) and p.returncode == 0 and os.path.exists(out + ".data") and
        not leftovers(d), f"exit {p.returncode}: {last_line(p.stderr)}")


def signal_when(p, ready, sig):
    """Waits (at most 10 s) until ready() or p ends, then 0.3 s more, sends p sig and waits for it to end (killed
    after 30 s); whether p was still running when the signal went."""
    t0 = time.time()
    while time.time() - t0 < 10 and not ready() and p.poll() is None:
        time.sleep(0.02)
    time.sleep(0.3)
    still_running = p.poll() is None
    p.send_signal(sig)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return still_running


def interrupted(tmp, big):
    """SIGINT/SIGTERM, and the other signals that stop a command (SIGHUP from a closed terminal or ssh session,
    SIGQUIT, SIGPIPE, SIGUSR1, SIGALRM), during a long calibrate leave no temporary file and end ptq by that
    signal (exit 128+N in a shell); temporary names are not the pid."""
    import resource

    def no_core():  # SIGQUIT's default action dumps core
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE, signal.SIGUSR1,
                signal.SIGALRM):
        d = os.path.join(tmp, f"sig{int(sig)}")
        os.makedirs(d)
        out = os.path.join(d, "calib.h5")
        p = subprocess.Popen([PTQ_ABS, "calibrate", "--model", MODEL, "--data", big, "--out", out, "--device", "ref",
                              "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             preexec_fn=no_core)
        seen = []

        def temporary_seen():
            seen[:] = leftovers(d)
            return bool(seen)
        still_running = signal_when(p, temporary_seen, sig)
        name = seen[0] if seen else ""
        check(f"{signal.Signals(sig).name}: the temporary existed while calibrating, under an unpredictable name",
              still_running and re.fullmatch(r"calib\.h5\.tmp-[0-9a-f]{32}", name) is not None and
              str(p.pid) not in name, f"seen {seen}, pid {p.pid}, running {still_running}")
        check(f"{signal.Signals(sig).name} during calibrate: ended by the signal, nothing left in the folder",
              p.returncode == -sig and os.listdir(d) == [], f"exit {p.returncode}, left {os.listdir(d)}")


def interrupted_report(tmp, data, plan):
    """A signal during validate --report NEWDIR (the folder made before any image) removes the empty NEWDIR with
    the temporaries: it was left behind, where a failure removed it."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        report = os.path.join(tmp, f"report_sig{int(sig)}")
        p = subprocess.Popen([PTQ_ABS, "validate", "--model", MODEL, "--plan", plan, "--data", data, "--report",
                              report, "--device", "ref", "--threads", "1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        still_running = signal_when(p, lambda: os.path.isdir(report), sig)
        check(f"{signal.Signals(sig).name} during validate --report NEWDIR: ended by it, NEWDIR gone",
              still_running and p.returncode == -sig and not os.path.exists(report),
              f"running {still_running}, exit {p.returncode}, left {os.path.exists(report)}")
    kept = os.path.join(tmp, "report_kept")
    os.makedirs(kept)
    with open(os.path.join(kept, "mine.txt"), "w") as f:
        f.write("the user's\n")
    p = subprocess.Popen([PTQ_ABS, "validate", "--model", MODEL, "--plan", plan, "--data", data, "--report", kept,
                          "--device", "ref", "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    check("SIGTERM during validate into an existing folder: the folder and its file stay",
          os.listdir(kept) == ["mine.txt"], str(os.listdir(kept)))


def interrupted_run(tmp, big_labelled):
    """SIGTERM during `ptq run --out NEWDIR`'s first stage (the calibration archive's temporary in NEWDIR) removes
    the temporary and NEWDIR, which run made and nothing else holds yet: the empty NEWDIR was left behind."""
    out = os.path.join(tmp, "run_sig")
    p = subprocess.Popen([PTQ_ABS, "run", "--model", MODEL, "--calib-data", big_labelled, "--data", big_labelled,
                          "--calib-samples", "0", "--out", out, "--device", "ref", "--threads", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    still_running = signal_when(p, lambda: os.path.isdir(out) and bool(leftovers(out)), signal.SIGTERM)
    check("SIGTERM during ptq run's calibration into a new --out: ended by it, the folder gone",
          still_running and p.returncode == -signal.SIGTERM and not os.path.exists(out),
          f"running {still_running}, exit {p.returncode}, left {os.listdir(out) if os.path.isdir(out) else None}")


def file_size_limit(tmp, data, archive, plan):
    """Past the file size limit (ulimit -f, RLIMIT_FSIZE) every writer fails cleanly: exit 3 with the reason
    ("File too large") and the output's name, not its temporary's, no temporary left, the file that had the name
    before kept byte for byte. SIGXFSZ's default action ended ptq instead (exit 128+25, a core dump) with
    "<out>.tmp-<hex>" left behind, as large as the limit; the archives, data convert, export json and the streamed
    logits named "<out>.tmp-<hex>" in their error."""
    import h5py
    import resource
    images, labels = fmnist_test(2000)
    labelled = os.path.join(tmp, "fsize-labelled.h5")
    with h5py.File(labelled, "w") as f:
        f["images"], f["labels"] = images, labels
    limit = 2048  # bytes: each output below is larger

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    d = os.path.join(tmp, "fsize")
    os.makedirs(os.path.join(d, "rep"))
    pngs = os.path.join(tmp, "fsize-pngs")
    rc, _, err = run("data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
                     f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", pngs)
    check("file size limit: setup, a PNG folder", rc == 0, last_line(err))
    o = lambda name: os.path.join(d, name)  # noqa: E731
    cases = (("calibrate", ["calibrate", "--model", MODEL, "--data", data, "--out", o("c.h5")], "c.h5"),
             ("merge", ["merge", archive, os.path.join(tmp, "half1.h5"), "--out", o("m.h5")], "m.h5"),
             ("plan", ["plan", archive, "--model", MODEL, "--out", o("p.json"), "--quiet"], "p.json"),
             ("export json", ["export", archive, "--method", "minmax", "--format", "json", "--out", o("r.json")],
              "r.json"),
             ("export qdq", ["export", "--format", "qdq", "--plan", plan, "--model", MODEL, "--out", o("q.onnx")],
              "q.onnx"),
             ("eval --logits", ["eval", "--model", MODEL, "--data", data, "--logits", o("l.npy")], "l.npy"),
             ("eval --logits, 2000 rows", ["eval", "--model", MODEL, "--data", labelled, "--logits", o("l.npy")],
              "l.npy"),
             ("validate --logits, 2000 rows", ["validate", "--model", MODEL, "--plan", plan, "--data", labelled,
                                               "--report", o("rep"), "--logits", o("l.npy")], "l.npy"),
             ("validate --report", ["validate", "--model", MODEL, "--plan", plan, "--data", data, "--report",
                                    o("rep")], os.path.join("rep", "validate.json")),
             ("sensitivity", ["sensitivity", "--model", MODEL, "--calib", archive, "--data", data, "--samples", "8",
                              "--out", o("s.json")], "s.json"),
             ("data convert", ["data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
                               f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", o("fm.h5")], "fm.h5"),
             ("data convert FOLDER", ["data", "convert", "--images", pngs, "--out", o("fromdir.h5")], "fromdir.h5"))
    for name, args, old in cases:
        fresh = name.startswith("data convert")  # which refuses an existing output
        if not fresh:
            with open(o(old), "w") as f:
                f.write("the old file\n")
        try:
            p = subprocess.run([PTQ_ABS, *args], capture_output=True, text=True, timeout=120,
                               preexec_fn=small_files)
        except subprocess.TimeoutExpired:
            check(f"file size limit: {name}", False, "timed out")
            continue
        kept = not os.path.exists(o(old)) if fresh else open(o(old)).read() == "the old file\n"
        left = leftovers(d) + leftovers(o("rep"))
        for f in left:  # each case's own
            os.remove(os.path.join(d if os.path.exists(os.path.join(d, f)) else o("rep"), f))
        check(f"file size limit: {name}: exit 3, 'File too large', the old file kept, no temporary left",
              p.returncode == 3 and "File too large" in p.stderr and kept and not left,
              f"exit {p.returncode}, kept {kept}, left {left}: {last_line(p.stderr)}")
        check(f"file size limit: {name}: the error names {old}, not a temporary",
              f"cannot write {o(old)}: File too large" in p.stderr and ".tmp-" not in p.stderr, last_line(p.stderr))


def full_disk_png(tmp):
    """data convert into a PNG folder on a full file system (a 64 KiB tmpfs; skipped where mounting is not
    permitted): exit 3 naming the file in the output folder, nothing left. It named the file inside the
    temporary folder "<out>.tmp-<hex>/<class>/<n>.png", which was gone by then."""
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full], capture_output=True).returncode:
        print("skip full disk: mounting a tmpfs is not permitted here")
        return
    try:
        out = os.path.join(full, "pngs")
        rc, _, err = run("data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
                         f"{FM}/t10k-labels-idx1-ubyte.gz", "--format", "png", "--out", out)
        check("full disk: data convert --format png: exit 3 naming a file in the output folder, nothing left",
              rc == 3 and f"cannot write {out}/" in err and "No space left" in err and ".tmp-" not in err and
              os.listdir(full) == [], f"exit {rc}, left {os.listdir(full)}: {last_line(err)}")
    finally:
        subprocess.run(["umount", full])


def folder_outputs_with_slash(tmp, data, archive, plan):
    """A folder output named with a trailing slash ("ort/", "rep/") is made and filled as without it: export
    --format ort refused "ort/" (exit 3, "its folder ort/ does not exist", the folder it was asked to make)."""
    d = os.path.join(tmp, "slash")
    os.makedirs(d)
    rc, _, err = run("export", archive, "--method", "minmax", "--format", "ort", "--out", "ort/", "--quiet", cwd=d)
    check("export --format ort --out NEWDIR/: written", rc == 0 and sorted(os.listdir(os.path.join(d, "ort"))) ==
          sorted(["calibration.flatbuffers", "calibration.json", "calibration.cache"]), f"exit {rc}: {last_line(err)}")
    rc, _, err = run("validate", "--model", MODEL, "--plan", plan, "--data", data, "--report", "rep/", cwd=d)
    check("validate --report NEWDIR/: written", rc == 0 and "validate.json" in os.listdir(os.path.join(d, "rep")),
          f"exit {rc}: {last_line(err)}")
    check("folders named with a slash: nothing else made", sorted(os.listdir(d)) == ["ort", "rep"], str(os.listdir(d)))


def convert_no_clobber(tmp):
    """data convert refuses an existing output ("already exists; not overwriting it"), and keeps that promise for
    a file put at the name while it converts (another convert, a user): the finished set was renamed over it."""
    d = os.path.join(tmp, "noclobber")
    os.makedirs(d)
    out = os.path.join(d, "train.h5")
    p = subprocess.Popen([PTQ_ABS, "data", "convert", "--images", f"{FM}/train-images-idx3-ubyte.gz", "--labels",
                          f"{FM}/train-labels-idx1-ubyte.gz", "--out", out], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while time.time() - t0 < 30 and not leftovers(d) and p.poll() is None:
        time.sleep(0.005)
    seen = bool(leftovers(d)) and p.poll() is None
    with open(out, "w") as f:
        f.write("precious\n")
    _, err = p.communicate(timeout=120)
    check("data convert: a file put at --out while converting is kept (exit 3, 'already exists'), nothing left",
          seen and p.returncode == 3 and "already exists" in err and open(out).read() == "precious\n" and
          os.listdir(d) == ["train.h5"], f"seen {seen}, exit {p.returncode}, left {os.listdir(d)}: {last_line(err)}")


def fsync_failure(tmp, archive):
    """A file whose fsync fails (EIO: the disk could not store what was written, which write() and close() need
    not report) is not renamed into place: exit 3 naming the output, the old file kept, nothing left. The error was
    ignored and the file committed (exit 0). fsync is made to fail by an LD_PRELOAD shim built here with cc."""
    shim_c, shim = os.path.join(tmp, "fsync_eio.c"), os.path.join(tmp, "fsync_eio.so")
    with open(shim_c, "w") as f:
        f.write("#include <errno.h>\nint fsync(int fd) { (void)fd; errno = EIO; return -1; }\n"
                "int fdatasync(int fd) { (void)fd; errno = EIO; return -1; }\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or subprocess.run([cc, "-shared", "-fPIC", "-o", shim, shim_c], capture_output=True).returncode:
        print("skip fsync failure: no C compiler to build the shim")
        return
    d = os.path.join(tmp, "fsync")
    os.makedirs(d)
    out = os.path.join(d, "p.json")
    with open(out, "w") as f:
        f.write("the old plan\n")
    p = subprocess.run([PTQ_ABS, "plan", archive, "--model", MODEL, "--out", out, "--quiet"], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "LD_PRELOAD": shim})
    check("fsync failing: exit 3 naming the output, the old file kept, nothing left",
          p.returncode == 3 and f"cannot write {out}: Input/output error" in p.stderr and
          open(out).read() == "the old plan\n" and os.listdir(d) == ["p.json"],
          f"exit {p.returncode}, left {os.listdir(d)}: {last_line(p.stderr)}")


def signal_between_renames(tmp, archive):
    """A signal between ptq_atomic_commit_all's renames (export --format ort's three files) leaves the set whole:
    all three new or all three old, no temporary left. The handler had removed the temporaries not yet renamed, so
    calibration.flatbuffers was new and the other two old. An LD_PRELOAD shim built here with cc sends the process
    SIGTERM right after the rename onto calibration.flatbuffers."""
    shim_c, shim = os.path.join(tmp, "rename_sig.c"), os.path.join(tmp, "rename_sig.so")
    with open(shim_c, "w") as f:
        f.write("#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <signal.h>\n#include <string.h>\n"
                "#include <unistd.h>\n"
                "int rename(const char *a, const char *b) {\n"
                "    int (*real)(const char *, const char *) = (int (*)(const char *, const char *))"
                "dlsym(RTLD_NEXT, \"rename\");\n"
                "    int r = real(a, b);\n"
                "    if (r == 0 && strstr(b, \"calibration.flatbuffers\") && !strstr(b, \".tmp-\"))\n"
                "        kill(getpid(), SIGTERM);\n"
                "    return r;\n}\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or subprocess.run([cc, "-shared", "-fPIC", "-o", shim, shim_c, "-ldl"], capture_output=True).returncode:
        print("skip signal between renames: no C compiler to build the shim")
        return
    d = os.path.join(tmp, "ort-sig")
    os.makedirs(d)
    names = ("calibration.flatbuffers", "calibration.json", "calibration.cache")
    for name in names:
        with open(os.path.join(d, name), "w") as f:
            f.write("old\n")
    p = subprocess.run([PTQ_ABS, "export", archive, "--method", "minmax", "--format", "ort", "--out", d],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "LD_PRELOAD": shim})
    old = [open(os.path.join(d, name), "rb").read() == b"old\n" for name in names]
    check("a signal between the renames of export --format ort: the three files all new or all old, nothing left",
          p.returncode == -signal.SIGTERM and (all(old) or not any(old)) and sorted(os.listdir(d)) == sorted(names),
          f"exit {p.returncode}, old {old}, left {sorted(os.listdir(d))}: {last_line(p.stderr)}")


def merge_by_content(tmp, images):
    """The same samples under two paths, or in a copy, are one source; two files of one name are two."""
    import h5py
    import hdf5plugin  # noqa: F401  (registers the zstd filter 32015 with h5py)
    d = os.path.join(tmp, "merge")
    os.makedirs(os.path.join(d, "one"))
    os.makedirs(os.path.join(d, "two"))
    data = os.path.join(d, "data.h5")
    with h5py.File(data, "w") as f:
        f["images"] = images[:40]
    shutil.copy(data, os.path.join(d, "copy.h5"))
    for sub, lo in (("one", 0), ("two", 40)):
        with h5py.File(os.path.join(d, sub, "data.h5"), "w") as f:
            f["images"] = images[lo:lo + 40]

    def cal(out, data_arg, cwd, *extra):
        return run("calibrate", "--model", MODEL, "--data", data_arg, "--out", out, *extra, cwd=cwd)

    res = [cal("rel.h5", "data.h5", d, "--shard", "0/2"), cal("abs.h5", data, d),
           cal("copy_half.h5", "copy.h5", d, "--shard", "0/2"), cal("abs_half1.h5", data, d, "--shard", "1/2"),
           cal("../one.h5", "data.h5", os.path.join(d, "one")), cal("../two.h5", "data.h5", os.path.join(d, "two"))]
    check("merge setup: six calibrations", all(r[0] == 0 for r in res), str([last_line(r[2]) for r in res]))
    J = lambda p: os.path.join(d, p)  # noqa: E731
    rc, _, err = run("merge", J("rel.h5"), J("abs.h5"), "--out", J("bad1.h5"))
    check("merge: the same data by a relative and an absolute path is refused as sharing samples (exit 2)",
          rc == 2 and "same data" in err and not os.path.exists(J("bad1.h5")), f"exit {rc}: {last_line(err)}")
    rc, _, err = run("merge", J("copy_half.h5"), J("rel.h5"), "--out", J("bad2.h5"))
    check("merge: the same samples from a copied file are refused (exit 2)", rc == 2 and "same data" in err,
          f"exit {rc}: {last_line(err)}")
    rc, _, err = run("merge", J("rel.h5"), J("abs_half1.h5"), "--out", J("whole.h5"))
    check("merge: disjoint halves of one data set by two paths merge", rc == 0, f"exit {rc}: {last_line(err)}")
    # the halves also name the model by two paths: either order writes the same bytes (the smaller names kept)
    model2 = J("model-renamed.onnx")
    shutil.copy(MODEL, model2)
    rc1, _, err1 = run("calibrate", "--model", model2, "--data", data, "--out", J("abs_half1_m2.h5"), "--shard", "1/2")
    rc2, _, err2 = run("merge", J("abs_half1_m2.h5"), J("rel.h5"), "--out", J("whole_ba.h5"))
    rc3, _, err3 = run("merge", J("rel.h5"), J("abs_half1_m2.h5"), "--out", J("whole_ab.h5"))
    check("merge: halves naming the data and the model by other paths give the same bytes in either order",
          rc1 == rc2 == rc3 == 0 and digest(J("whole_ab.h5")) == digest(J("whole_ba.h5")),
          f"exit {rc1}/{rc2}/{rc3}: {last_line(err1 + err2 + err3)}")
    rc, _, err = run("merge", J("one.h5"), J("two.h5"), "--out", J("both.h5"))
    n = srcs = -1
    if rc == 0:
        with h5py.File(J("both.h5"), "r") as f:
            n, srcs = int(f.attrs["n_samples"]), len(f.attrs["sources"])
    check("merge: two different files both named data.h5 are two sources (80 samples)",
          rc == 0 and n == 80 and srcs == 2, f"exit {rc}, {n} samples, {srcs} sources: {last_line(err)}")
    # a PNG folder: its content hash is over its samples' names and bytes, whatever path names it
    png = J("png")
    rels = []
    for c, cls in enumerate(("a", "b")):
        os.makedirs(os.path.join(png, cls))
        for i in range(10):
            rel = f"{cls}/{i:02d}.png"
            with open(os.path.join(png, rel), "wb") as f:
                f.write(png_bytes(images[100 + 10 * c + i]))
            rels.append(rel)
    h = hashlib.sha256()
    for rel in rels:
        b = open(os.path.join(png, rel), "rb").read()
        h.update(rel.encode() + b"\0" + len(b).to_bytes(8, "little") + b)
    res = [cal("png_rel.h5", "png", d, "--shard", "0/2"), cal("png_abs.h5", png, d)]
    got = ""
    if res[0][0] == 0:
        with h5py.File(J("png_rel.h5"), "r") as f:
            got = f.attrs["sources_sha256"][0]
            got = got.decode() if isinstance(got, bytes) else got
    check("png folder: the content SHA-256 over relative names and bytes is recorded",
          all(r[0] == 0 for r in res) and got == h.hexdigest(), f"{got[:16]} vs {h.hexdigest()[:16]}")
    rc, _, err = run("merge", J("png_rel.h5"), J("png_abs.h5"), "--out", J("bad3.h5"))
    check("merge: a PNG folder by a relative and an absolute path is refused as sharing samples (exit 2)",
          rc == 2 and "same data" in err, f"exit {rc}: {last_line(err)}")

    # an archive from before content hashes: sources matched by name, with a warning
    old = [J("old0.h5"), J("old1.h5")]
    for src, dst in zip((J("rel.h5"), J("abs_half1.h5")), old):
        shutil.copy(src, dst)
        with h5py.File(dst, "r+") as f:
            del f.attrs["sources_sha256"]
            names = [s.decode() if isinstance(s, bytes) else s for s in f.attrs["sources"]]
            ids = np.asarray(f["samples/id"], dtype="<i8")
            h = hashlib.sha256(names[0].encode() + b"\0" + len(ids).to_bytes(8, "little") + ids.tobytes())
            f.attrs["sample_ids_sha256"] = h.hexdigest()
    rc, _, err = run("merge", old[0], old[1], "--out", J("old.h5"))
    check("merge: archives without content hashes still read and merge, sources by name, with a warning",
          rc == 0 and "by name" in err, f"exit {rc}: {last_line(err)}")


def main():
    if not have_demo():
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    import h5py
    tmp = tempfile.mkdtemp(prefix="ptq-harden-")
    images, labels = fmnist_test(2000)
    data = os.path.join(tmp, "d.h5")
    with h5py.File(data, "w") as f:
        f["images"] = images[:64]
        f["labels"] = labels[:64]
    big = os.path.join(tmp, "big.h5")
    with h5py.File(big, "w") as f:
        f["images"] = images
    archive = os.path.join(tmp, "a.h5")
    plan = os.path.join(tmp, "plan.json")
    res = [run("calibrate", "--model", MODEL, "--data", data, "--out", archive, "--shard", "0/2"),
           run("calibrate", "--model", MODEL, "--data", data, "--out", os.path.join(tmp, "half1.h5"), "--shard", "1/2")]
    res.append(run("plan", archive, "--model", MODEL, "--out", plan, "--quiet"))
    check("setup: calibrate two halves, plan", all(r[0] == 0 for r in res), str([last_line(r[2]) for r in res]))

    external_data(tmp)
    hdf5_external(tmp, images[:64], labels[:64])
    fifos(tmp, archive)
    planted_symlinks(tmp, archive)
    umasks(tmp, data, archive, plan)
    outputs_that_are_inputs(tmp, data, archive, plan)
    data_files_are_inputs(tmp, images, labels, plan)
    model_data_files_are_inputs(tmp, data, archive, plan)
    qdq_data_file(tmp, plan, data)
    special_outputs(tmp, data, archive, plan)
    long_names(tmp, data, archive)
    unwritable_outputs(tmp, images, labels, archive, plan)
    interrupted(tmp, big)
    big_labelled = os.path.join(tmp, "big_labelled.h5")
    with h5py.File(big_labelled, "w") as f:
        f["images"] = images
        f["labels"] = labels
    interrupted_report(tmp, big_labelled, plan)
    interrupted_run(tmp, big_labelled)
    merge_by_content(tmp, images)
    file_size_limit(tmp, data, archive, plan)
    folder_outputs_with_slash(tmp, data, archive, plan)
    full_disk_png(tmp)
    convert_no_clobber(tmp)
    fsync_failure(tmp, archive)
    signal_between_renames(tmp, archive)
    rc = finish("cli_hardening_test")
    if rc == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
