#!/usr/bin/env python3
"""Models whose initializers live in ONNX external data go through the ONNX
editor (model/onnx_edit.c): `ptq export --format qdq` of the demo model saved
with every tensor in one external file (size_threshold 0), calibrated and
planned on 128 Fashion-MNIST training images, is byte for byte the export of
the same model saved inline when the output stays small (every tensor
inline, no data file), and with PTQ_TEST_ONNX_INLINE_MAX=0 (the branch a
model past 2 GB takes) writes "<out>.data" beside the output: onnx.checker
and onnxruntime take both by path and the logits are bit for bit the inline
export's. `ptq smooth` of the ViT demo with its Constant values external
too. Refused, nothing written: external data leaving its folder (a symlink,
'..'), an output or its data file that would replace the data being read.
A write failing anywhere (PTQ_TEST_FAIL_WRITE_AFTER) leaves neither file,
a rename failing (PTQ_TEST_FAIL_RENAME) leaves the previous export's pair
as it was, and nothing is written outside the output's folder. The model's SHA-256
covers its data file (README "model_sha256"): a plan or an archive of the
model is refused for the same .onnx with one bit of its weights changed.
Run by ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    from ptqtest import FM, MODEL, PTQ, SRC, check, finish, have_demo
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

VIT = os.path.join(SRC, "models", "fmnist_vit.onnx")


def run(*args, env=None):
    """ptq with extra environment variables; (exit code, stdout, stderr)."""
    p = subprocess.run([PTQ, *args], capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})})
    return p.returncode, p.stdout, p.stderr


def tail(err):
    return err.strip()[-300:]


def tree(root):
    """{relative path: sha256 or link target} of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            else:
                with open(p, "rb") as fh:
                    out[rel] = hashlib.sha256(fh.read()).hexdigest()
    return out


def logits(path, x):
    so = ort.SessionOptions()
    so.log_severity_level = 3  # the unused-initializer warnings
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def save_external(source, folder, location, **kw):
    """The model at source saved in folder with every tensor in external data file location."""
    os.makedirs(folder, exist_ok=True)
    onnx.save_model(onnx.load(source), os.path.join(folder, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location, size_threshold=0, **kw)
    return os.path.join(folder, "model.onnx")


def model_sha256(path):
    """The model's SHA-256 as ptq defines it (README "model_sha256"): the file's, or with external data the
    SHA-256 of b"ptq-model-external-data\0", the file's hex digest, then each data file in the order the model
    first names it (nodes' tensors, then initializers) as its size (8 bytes, little-endian) and bytes."""
    with open(path, "rb") as f:
        own = hashlib.sha256(f.read()).hexdigest()
    m = onnx.load(path, load_external_data=False)
    tensors = [a.t for n in m.graph.node for a in n.attribute if a.HasField("t")] + list(m.graph.initializer)
    files = []
    for t in tensors:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            loc = next(e.value for e in t.external_data if e.key == "location")
            full = os.path.realpath(os.path.join(os.path.dirname(path), loc))
            if full not in files:
                files.append(full)
    if not files:
        return own
    h = hashlib.sha256(b"ptq-model-external-data\0" + own.encode())
    for full in files:
        with open(full, "rb") as f:
            data = f.read()
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def plan_for(plan, model, out):
    """plan (a JSON file) retargeted at model's SHA-256, for models that differ only in where their data is."""
    with open(plan) as f:
        p = json.load(f)
    p["model"]["sha256"] = model_sha256(model)
    with open(out, "w") as f:
        json.dump(p, f)
    return out


def external_inits(path):
    m = onnx.load(path, load_external_data=False)
    return [t for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]


def pipeline(J, x):
    os.makedirs(J("ref"))
    ref = J("ref", "model.onnx")
    onnx.save_model(onnx.load(MODEL), ref)
    ext = save_external(MODEL, J("src"), "weights.bin")
    for name, model in (("ref", ref), ("ext", ext)):
        for args in (("calibrate", "--model", model, "--data", J("train.h5"), "--samples", "128", "--seed", "0",
                      "--out", J(f"{name}.h5")),
                     ("plan", J(f"{name}.h5"), "--model", model, "--out", J(f"{name}.json"))):
            rc, _, err = run(*args)
            check(f"{name}: {args[0]}", rc == 0, tail(err))
    with open(J("ref.json")) as f, open(J("ext.json")) as g:
        a, b = json.load(f), json.load(g)
    check("the external-data model's plan is the inline one's (but the model's name and hash)",
          a["tensors"] == b["tensors"] and a["core"] == b["core"])
    check("the plans' model SHA-256: the file's for the inline model, the file's with its data file's for the "
          "external-data one", a["model"]["sha256"] == model_sha256(ref) ==
          hashlib.sha256(open(ref, "rb").read()).hexdigest() and b["model"]["sha256"] == model_sha256(ext) !=
          hashlib.sha256(open(ext, "rb").read()).hexdigest(), f"{a['model']['sha256']} {b['model']['sha256']}")
    # new weights under the same file names: another model for the plan, the archive and ptq run
    shutil.copytree(J("src"), J("src2"))
    with open(J("src2", "weights.bin"), "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    ext2 = J("src2", "model.onnx")
    rc, _, err = run("plan", "--check", J("ext.json"), "--model", ext2)
    check("new external weights, the same .onnx bytes: the plan is refused as another model's (exit 2)",
          rc == 2 and "another model" in err, f"exit {rc}: {tail(err)}")
    rc, _, err = run("plan", J("ext.h5"), "--model", ext2, "--out", J("ext2.json"))
    check("... and the archive (exit 2), no plan written", rc == 2 and "another model" in err and
          not os.path.exists(J("ext2.json")), f"exit {rc}: {tail(err)}")
    os.makedirs(J("out-ref"))
    rc, _, err = run("export", "--format", "qdq", "--plan", J("ref.json"), "--model", ref, "--out",
                     J("out-ref", "q.onnx"))
    check("export of the inline model", rc == 0, tail(err))
    want = logits(J("out-ref", "q.onnx"), x)
    src_before, ref_before = tree(J("src")), tree(J("ref"))

    # inline: a small output holds every tensor itself
    os.makedirs(J("out-inline"))
    rc, _, err = run("export", "--format", "qdq", "--plan", J("ext.json"), "--model", ext, "--out",
                     J("out-inline", "q.onnx"))
    check("export of the external-data model (inline output)", rc == 0, tail(err))
    out = J("out-inline", "q.onnx")
    if rc == 0:
        check("inline output: one file, no data file", sorted(os.listdir(J("out-inline"))) == ["q.onnx"],
              str(os.listdir(J("out-inline"))))
        check("inline output: no initializer in external data", not external_inits(out))
        with open(out, "rb") as f, open(J("out-ref", "q.onnx"), "rb") as g:
            check("inline output: byte for byte the inline model's export", f.read() == g.read())
        onnx.checker.check_model(out)
        check("inline output: onnxruntime's logits bit for bit the inline export's",
              np.array_equal(logits(out, x), want))

    # external: PTQ_TEST_ONNX_INLINE_MAX=0 takes the branch of an output past 2 GB
    force = {"PTQ_TEST_ONNX_INLINE_MAX": "0"}
    for name, plan, model in (("external-data source", J("ext.json"), ext), ("inline source", J("ref.json"), ref)):
        folder = J(f"out-ext-{name.split()[0]}")
        os.makedirs(folder)
        out = os.path.join(folder, "q.onnx")
        rc, _, err = run("export", "--format", "qdq", "--plan", plan, "--model", model, "--out", out, env=force)
        check(f"{name}: export with the data file", rc == 0, tail(err))
        if rc != 0:
            continue
        check(f"{name}: q.onnx and q.onnx.data, nothing else", sorted(os.listdir(folder)) == ["q.onnx", "q.onnx.data"],
              str(os.listdir(folder)))
        m = onnx.load(out, load_external_data=False)
        moved = external_inits(out)
        locs = {e.value for t in moved for e in t.external_data if e.key == "location"}
        big = [t.name for t in m.graph.initializer if t.data_location != onnx.TensorProto.EXTERNAL and
               len(t.raw_data) >= 1024]
        check(f"{name}: initializers in q.onnx.data (location relative), none of 1 KiB or more inline",
              len(moved) > 0 and locs == {"q.onnx.data"} and not big, f"{len(moved)} moved, {locs}, inline {big}")
        if name.startswith("external"):
            check(f"{name}: every initializer external in the source is external in the output",
                  {t.name for t in m.graph.initializer if t.name in {i.name for i in onnx.load(
                      ext, load_external_data=False).graph.initializer}} <= {t.name for t in moved})
        onnx.checker.check_model(out)
        check(f"{name}: onnxruntime's logits bit for bit the inline export's", np.array_equal(logits(out, x), want))
        full, refm = onnx.load(out), onnx.load(J("out-ref", "q.onnx"))
        check(f"{name}: nodes and initializer values as in the inline export",
              full.graph.node == refm.graph.node and
              {t.name: numpy_helper.to_array(t).tobytes() for t in full.graph.initializer} ==
              {t.name: numpy_helper.to_array(t).tobytes() for t in refm.graph.initializer})
    data_bytes = os.path.getsize(J("out-ext-external-data", "q.onnx.data")) if os.path.exists(
        J("out-ext-external-data", "q.onnx.data")) else 0

    # a failing write leaves neither file: in the data file, in the model after it, inline
    for name, env in (("in the data file", {**force, "PTQ_TEST_FAIL_WRITE_AFTER": "100"}),
                      ("in the model, the data file written",
                       {**force, "PTQ_TEST_FAIL_WRITE_AFTER": str(data_bytes + 10)}),
                      ("inline", {"PTQ_TEST_FAIL_WRITE_AFTER": "100"})):
        folder = J("out-fail")
        os.makedirs(folder, exist_ok=True)
        rc, _, err = run("export", "--format", "qdq", "--plan", J("ext.json"), "--model", ext, "--out",
                         os.path.join(folder, "q.onnx"), env=env)
        check(f"write failing {name}: exit 3, nothing left in the output's folder",
              rc == 3 and os.listdir(folder) == [], f"exit {rc}, {os.listdir(folder)}: {tail(err)}")

    # a rename failing after the data file took its name: the previous export's q.onnx and q.onnx.data both back
    # (the new data file was removed instead, leaving the old q.onnx pointing at no data)
    folder = J("out-rollback")
    os.makedirs(folder)
    out = os.path.join(folder, "q.onnx")
    rc, _, err = run("export", "--format", "qdq", "--plan", J("ext.json"), "--model", ext, "--out", out, env=force)
    before = tree(folder)
    rc2, _, err2 = run("export", "--format", "qdq", "--plan", J("ref.json"), "--model", ref, "--out", out,
                       env={**force, "PTQ_TEST_FAIL_RENAME": "q.onnx"})
    check("model rename failing after the data file's: exit 3, the previous q.onnx and q.onnx.data as they were",
          rc == 0 and rc2 == 3 and sorted(before) == ["q.onnx", "q.onnx.data"] and tree(folder) == before,
          f"exit {rc}/{rc2}, {sorted(before)} -> {sorted(tree(folder))}: {tail(err + err2)}")

    # refused: external data leaving its folder, through a symlink or '..'
    os.makedirs(J("esc-link"))
    shutil.copy(ext, J("esc-link", "model.onnx"))  # the same bytes: the plan fits
    os.symlink(os.path.join("..", "src", "weights.bin"), J("esc-link", "weights.bin"))
    esc_dot = save_external(MODEL, J("esc-dot", "in"), "weights.bin")
    m = onnx.load(esc_dot, load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "../../src/weights.bin"
    onnx.save_model(m, esc_dot)
    for name, model, plan, why in (("a symlink out of the folder", J("esc-link", "model.onnx"), J("ext.json"),
                                    "outside"),
                                   ("'..' in the location", esc_dot, plan_for(J("ext.json"), esc_dot, J("dot.json")),
                                    "'..'")):
        for env in ({}, force):
            folder = J("out-esc")
            os.makedirs(folder, exist_ok=True)
            rc, _, err = run("export", "--format", "qdq", "--plan", plan, "--model", model, "--out",
                             os.path.join(folder, "q.onnx"), env=env)
            check(f"{name}{' (data file forced)' if env else ''}: refused (exit 4), nothing written",
                  rc == 4 and why in err and os.listdir(folder) == [], f"exit {rc}, {os.listdir(folder)}: {tail(err)}")

    # refused: an output, or its data file, that would replace the data being read
    coll = save_external(MODEL, J("coll"), "q.onnx.data")
    coll_plan = plan_for(J("ext.json"), coll, J("coll.json"))
    before = tree(J("coll"))
    for name, out, env in (("the data file", J("coll", "q.onnx"), force), ("the output", J("coll", "q.onnx.data"), {})):
        rc, _, err = run("export", "--format", "qdq", "--plan", coll_plan, "--model", coll, "--out", out, env=env)
        check(f"{name} would replace the source's external data: refused (exit 2), the folder unchanged",
              rc == 2 and "external data being read" in err and tree(J("coll")) == before, f"exit {rc}: {tail(err)}")

    check("the sources' folders unchanged", tree(J("src")) == src_before and tree(J("ref")) == ref_before)


def smooth(J, x):
    """ptq smooth (new float initializers) of the ViT with its Constant values in external data too."""
    os.makedirs(J("vit-ref"))
    ref = J("vit-ref", "model.onnx")
    onnx.save_model(onnx.load(VIT), ref)
    ext = save_external(VIT, J("vit-src"), "vit.bin", convert_attribute=True)
    n_const = sum(a.t.data_location == onnx.TensorProto.EXTERNAL for n in onnx.load(ext, load_external_data=False)
                  .graph.node for a in n.attribute)
    check("ViT: Constant values in external data too", n_const > 0, f"{n_const}")
    outs = {}
    for name, model, env in (("inline", ref, {}), ("external source", ext, {}),
                             ("external source, data file", ext, {"PTQ_TEST_ONNX_INLINE_MAX": "0"})):
        folder = J("vit-out-" + name.replace(" ", "-").replace(",", ""))
        os.makedirs(folder)
        outs[name] = os.path.join(folder, "s.onnx")
        rc, _, err = run("smooth", "--model", model, "--data", J("train.h5"), "--samples", "64", "--out",
                         outs[name], env=env)
        check(f"smooth ({name})", rc == 0, tail(err))
    if not all(os.path.exists(p) for p in outs.values()):
        return
    with open(outs["inline"], "rb") as f, open(outs["external source"], "rb") as g:
        check("smooth: the external-data source's inline output is byte for byte the inline model's",
              f.read() == g.read())
    out = outs["external source, data file"]
    m = onnx.load(out, load_external_data=False)
    check("smooth with the data file: initializers external, Constant values inline (onnxruntime infers shapes "
          "from them)", len(external_inits(out)) > 0 and not any(
              a.t.data_location == onnx.TensorProto.EXTERNAL for n in m.graph.node for a in n.attribute))
    onnx.checker.check_model(out)
    want = logits(outs["inline"], x)
    check("smooth with the data file: onnxruntime's logits bit for bit the inline output's",
          np.array_equal(logits(out, x), want))


def main():
    if not have_demo() or not os.path.exists(VIT):
        print("skipped: demo models or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-qdq-ext-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rc, _, err = run("data", "convert", "--images", f"{FM}/train-images-idx3-ubyte.gz", "--labels",
                     f"{FM}/train-labels-idx1-ubyte.gz", "--out", J("train.h5"))
    check("data convert", rc == 0, tail(err))
    x = np.random.default_rng(0).standard_normal((16, 1, 28, 28)).astype(np.float32)
    pipeline(J, x)
    smooth(J, x)
    stray = [os.path.join(d, f) for d, _, files in os.walk(tmp) for f in files
             if ".tmp-" in f or (f.startswith(("q.onnx", "s.onnx")) and not os.path.basename(d).startswith(
                 ("out-", "vit-out-", "coll")))]
    check("no temporary left, no output written outside its folder", not stray, str(stray))
    rc = finish("qdq_external_data_test")
    if rc == 0:
        shutil.rmtree(tmp)
    return rc


if __name__ == "__main__":
    sys.exit(main())
