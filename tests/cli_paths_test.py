"""Paths that hold any bytes (a byte that starts no UTF-8 character, a line
break, an ESC sequence, Markdown and HTML syntax): every JSON ptq writes,
files and --json lines, is valid UTF-8 that json.load reads, each bad byte as
U+FFFD (README "Files ptq reads and writes"), and `ptq export --format json`
takes such paths like every other command; the terminal summaries print them
escaped as error messages do (\x1b, \xff, \x0a), and validate.md/sens.md
as one list item of valid UTF-8 with no inline HTML."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptqtest import MODEL, PTQ, check, finish, fmnist_test, have_demo  # noqa: E402

PTQ_ABS = os.path.abspath(PTQ)


def run(*args, cwd):
    """Runs ptq in cwd with bytes arguments; (exit code, stdout bytes, stderr text)."""
    p = subprocess.run([PTQ_ABS, *args], capture_output=True, timeout=600, cwd=cwd)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def loads(raw):
    """The JSON in raw (bytes, strictly UTF-8), or the reason it is not JSON."""
    try:
        return json.loads(raw.decode("utf-8")), ""
    except (UnicodeDecodeError, ValueError) as e:
        return None, str(e)[:200]


def main():
    if not have_demo():
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    import h5py
    d = tempfile.mkdtemp(prefix="ptq-paths-")
    model, archive, data = b"m\x1b[31m\xff\n<b>.onnx", b"c\xff\n.h5", b"d\xfe\n.h5"
    images, labels = fmnist_test(64)
    with h5py.File(os.path.join(os.fsencode(d), data), "w") as f:
        f["images"] = images
        f["labels"] = labels
    with open(MODEL, "rb") as src, open(os.path.join(os.fsencode(d), model), "wb") as dst:
        dst.write(src.read())
    text = {p: p.decode("utf-8", "replace") for p in (model, archive, data)}  # each bad byte as U+FFFD

    res = {"calibrate --json": run("calibrate", "--model", model, "--data", data, "--out", archive, "--json", cwd=d),
           "calibrate --shard 0/2": run("calibrate", "--model", model, "--data", data, "--out", b"h0\xff.h5",
                                        "--shard", "0/2", cwd=d),
           "calibrate --shard 1/2": run("calibrate", "--model", model, "--data", data, "--out", b"h1\xff.h5",
                                        "--shard", "1/2", cwd=d)}
    res["merge --json"] = run("merge", b"h0\xff.h5", b"h1\xff.h5", "--out", b"merged\xff.h5", "--json", cwd=d)
    res["plan"] = run("plan", archive, "--model", model, "--out", b"p\xff.json", cwd=d)
    res["plan --check"] = run("plan", "--check", b"p\xff.json", "--model", model, cwd=d)
    res["eval"] = run("eval", "--model", model, "--data", data, cwd=d)
    res["eval --json"] = run("eval", "--model", model, "--data", data, "--json", cwd=d)
    res["sensitivity"] = run("sensitivity", "--model", model, "--calib", archive, "--data", data, "--samples", "32",
                             "--out", "s.json", cwd=d)
    res["validate"] = run("validate", "--model", model, "--plan", b"p\xff.json", "--data", data,
                          "--report", b"rep\x1b[0m", cwd=d)
    res["validate --json"] = run("validate", "--model", model, "--plan", b"p\xff.json", "--data", data,
                                 "--report", "rep", "--json", cwd=d)
    res["export --format json"] = run("export", archive, "--method", "minmax", "--format", "json", "--model", model,
                                      "--out", "x.json", cwd=d)
    res["export --json"] = run("export", archive, "--method", "minmax", "--format", "trt", "--model", model,
                               "--out", "x.cache", "--json", cwd=d)
    res["info --json"] = run("info", model, "--json", cwd=d)
    check("every command runs with such paths (export --format json included)",
          all(r[0] == 0 for r in res.values()),
          "; ".join(f"{k}: exit {r[0]}: {r[2].strip()[-200:]}" for k, r in res.items() if r[0] != 0))

    def read(name):
        with open(os.path.join(os.fsencode(d), os.fsencode(name)), "rb") as f:
            return f.read()
    docs = {k: loads(res[k][1]) for k in ("calibrate --json", "merge --json", "eval --json", "export --json",
                                           "info --json")}
    docs["p.json"] = loads(read(b"p\xff.json"))
    for name in ("s.json", "rep/validate.json", "x.json"):
        docs[name] = loads(read(name)) if os.path.exists(os.path.join(d, name)) else (None, "missing")
    bad = {k: why for k, (doc, why) in docs.items() if doc is None}
    check("every JSON file and --json line is UTF-8 that json.load reads", not bad, str(bad))

    def get(k, *keys):
        doc = docs[k][0]
        for key in keys:
            doc = doc.get(key) if isinstance(doc, dict) else None
        return doc
    want = {("calibrate --json", "archive"): text[archive], ("merge --json", "archive"): "merged\ufffd.h5",
            ("eval --json", "model"): text[model], ("eval --json", "data"): text[data],
            ("export --json", "model", "path"): text[model], ("export --json", "archive", "path"): text[archive],
            ("info --json", "model"): text[model], ("p.json", "model", "name"): text[model],
            ("p.json", "archive"): text[archive], ("s.json", "model"): text[model],
            ("s.json", "archive"): text[archive], ("s.json", "data"): text[data],
            ("rep/validate.json", "model"): text[model], ("rep/validate.json", "data"): text[data],
            ("x.json", "model", "path"): text[model], ("x.json", "archive", "path"): text[archive]}
    wrong = {"/".join(k): get(*k) for k, v in want.items() if get(*k) != v}
    check("the paths read back with each bad byte as U+FFFD, the line break and ESC kept", not wrong, str(wrong))

    # the terminal: each path on its line, escaped as in error messages
    shown = {model: r"m\x1b[31m\xff\x0a<b>.onnx", archive: r"c\xff\x0a.h5", data: r"d\xfe\x0a.h5"}
    summaries = {"calibrate --shard 0/2": [r"h0\xff.h5", shown[data]], "plan": [r"p\xff.json"],
                 "plan --check": [r"p\xff.json"], "eval": [shown[model], shown[data]],
                 "sensitivity": [shown[model], shown[archive], shown[data]],
                 "validate": [shown[model], r"p\xff.json", shown[data], r"rep\x1b[0m"]}
    raw = {k: res[k][1] for k in summaries if any(c in res[k][1] for c in (b"\x1b", b"\xff", b"\xfe"))}
    missing = {k: [w for w in want if w.encode() not in res[k][1]] for k, want in summaries.items()}
    missing = {k: v for k, v in missing.items() if v}
    check("the success summaries print the paths escaped (no ESC, no raw byte, no line break inside a path)",
          not raw and not missing, f"raw {list(raw)} {list(raw.values())[:1]}, missing {missing}")

    # validate.md and sens.md: the model and the archive as one list item each, valid UTF-8, no inline HTML
    md_model = "- **model**: m\\\\x1b\\[31m\ufffd\\\\x0a&lt;b&gt;.onnx\n"
    md_archive = "- **archive**: c\ufffd\\\\x0a.h5\n"
    for name, want in (("rep\x1b[0m/validate.md", [md_model]), ("s.md", [md_model, md_archive])):
        try:
            md = read(os.fsencode(name)).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            md = f"unreadable: {e}"
        check(f"{name.split('/')[-1]}: the paths as one list item each, escaped, valid UTF-8",
              all(w in md for w in want), repr(md[:700]))
    return finish("cli_paths_test")


if __name__ == "__main__":
    sys.exit(main())
