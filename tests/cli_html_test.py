#!/usr/bin/env python3
"""report.html of `ptq validate` end to end on the demo model: Fashion-MNIST
converted by `ptq data convert` (class names), calibrate -> plan -> validate
on 300 images with and without --calib. Parsed with html.parser: every
element closed, nothing fetched (no script, link, URL), two bar charts and
three 10x10 heatmaps whose cells' titles equal validate.json's confusion
matrices, the summary's numbers equal validate.json's; with --calib the
histograms of 8 int8 activations whose threshold lines equal `ptq export
--format json --method M` and whose bars add up to the archive's n_binned;
the same page twice byte for byte; hostile class names escaped (the parser
reads them back as text); a missing, malformed or another model's archive
refused before anything is written. The three confusion heatmaps as PNG
files (listed on stdout, RGB, the size of a 10-class map). The sensitivity
page (sens.html): both modes' bars, the table, the histograms of the 8 most
harmful activations in sens.json's harm order; the validation page with
--sensitivity and --trace: its sections, two trace marks per planner step;
the trace of another model's plan, target or weight grid refused, and a
sensitivity report of another archive than --calib's or of another core,
target or weight grid than the plan's;
another model's sensitivity report (exit 2) and a malformed trace (exit 4)
refused before anything is written. Report folders: an unwritable one is a
clear error (exit 3) before any image is read, and a write that fails
halfway (PTQ_TEST_FAIL_WRITE_AFTER) leaves the folder as it was: no file of
a new report, the files of an old one unchanged; likewise for sensitivity
and run. Run by ctest (label oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import h5py
    import hdf5plugin  # noqa: F401  (registers the zstd filter 32015 with h5py)
    from ptqtest import FM, MODEL, PTQ, check, finish, fmnist_test, have_demo, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}
LIMIT = 300
LONG = "c{}\x1b]0;x\x07 <b>|" + "\u00e9" * 30  # 69 bytes, more than sens.md once kept
HOSTILE = ["<script>alert(1)</script>", "a&b", "\"q\" 'x'", "ok"] + [f"c{i}" for i in range(4, 10)]


class Page(html.parser.HTMLParser):
    """The elements of a page: a stack check of nesting, the svg charts,
    heatmap cells with their titles, data-key values, threshold lines, the
    text of every element and each tensor's histogram bars."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.tags = [], [], {}
        self.svgs, self.cells, self.keys, self.thr, self.texts = [], [], {}, [], []
        self.tensors = []  # [name, [thresholds], bar count sum]
        self.title_of, self.text_of, self.key_of, self.in_h3 = None, None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "svg":
            self.svgs.append(a.get("class"))
        if tag in ("rect", "circle") and a.get("class") in ("sbar", "pt"):
            self.tags[a["class"]] = self.tags.get(a["class"], 0) + 1
        if tag == "rect" and a.get("class") == "cell":
            self.cells.append(None)
        if tag == "line" and a.get("class") == "thr":
            self.tensors[-1][1].append((a["data-method"], float(a["data-amax"])))
        if tag == "div" and a.get("class") == "tensor":
            self.tensors.append(["", [], 0])
        if tag == "h3" and self.tensors and not self.tensors[-1][0]:
            self.in_h3 = True
        elif self.in_h3:  # the name ends where the note on its precision starts
            self.in_h3 = False
        if "data-key" in a:
            self.key_of = a["data-key"]
        if tag == "title":
            self.title_of = ""
        if tag in ("text", "td"):
            self.text_of = ""
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()
        if tag == "title" and self.title_of is not None:
            t = self.title_of
            if self.cells and self.cells[-1] is None and t.startswith("true "):
                self.cells[-1] = t
            m = re.match(r"\|x\| in \[.*\): (\d+)$", t)
            if m and self.tensors:
                self.tensors[-1][2] += int(m.group(1))
            self.title_of = None
        if tag in ("text", "td") and self.text_of is not None:
            self.texts.append(self.text_of)
            self.text_of = None
        if tag == "h3":
            self.in_h3 = False

    def handle_data(self, data):
        if self.title_of is not None:
            self.title_of += data
        if self.text_of is not None:
            self.text_of += data
        if self.key_of is not None:
            self.keys[self.key_of] = data
            self.key_of = None
        if self.in_h3:
            self.tensors[-1][0] += data.strip()


def parse(path):
    text = open(path, encoding="utf-8").read()
    p = Page()
    p.feed(text)
    p.close()
    return text, p


def check_page(name, text, p, rep):
    check(f"{name}: parses, every element closed in order", not p.errors and not p.stack,
          "; ".join(p.errors[:5]) + f" open at end: {p.stack[:5]}")
    lowered = text.lower()
    check(f"{name}: self-contained (no script, link, import, url, http)",
          p.tags.get("script", 0) == 0 and p.tags.get("link", 0) == 0 and "http" not in lowered and
          "url(" not in lowered and "@import" not in lowered and p.tags.get("img", 0) == 0)
    check(f"{name}: two bar charts and three heatmaps",
          p.svgs.count("bars") == 2 and p.svgs.count("heatmap") == 3, str(p.svgs))
    names = [c["name"] for c in sorted(rep["classes"], key=lambda c: c["index"])]
    want = []
    for m in (rep["fp32"]["confusion"], rep["quant"]["confusion"], rep["confusion_delta"]):
        for r in range(10):
            for c in range(10):
                x = m[r][c]
                sign = "+" if m is rep["confusion_delta"] and x > 0 else ""
                want.append(f"true {names[r]}, predicted {names[c]}: {sign}{x}")
    check(f"{name}: 300 heatmap cells whose titles equal validate.json's matrices", p.cells == want,
          f"{len(p.cells)} cells; first differing: " +
          str(next(((a, b) for a, b in zip(p.cells, want) if a != b), None)))
    k = p.keys
    pct = lambda key: float(k.get(key, "nan").rstrip("%"))  # noqa: E731
    ok = (int(k.get("samples", -1)) == rep["samples"] == LIMIT and
          int(k.get("changed_predictions", -1)) == rep["changed_predictions"] and
          abs(float(k.get("sqnr_db", "nan")) - rep["logits"]["sqnr_db"]) <= 0.005 + 1e-9 and
          abs(float(k.get("kl_nats", "nan")) - rep["logits"]["kl_nats"]) <= 1e-5 * rep["logits"]["kl_nats"])
    for key in ("top1", "top5"):
        ok = ok and abs(pct(key + "_fp32") - 100 * rep[key + "_fp32"]) <= 0.005 + 1e-9
        ok = ok and abs(pct(key + "_quant") - 100 * rep[key + "_quant"]) <= 0.005 + 1e-9
        ok = ok and abs(float(k.get(key + "_delta_pts", "nan")) - rep[key + "_delta_pts"]) <= 0.005 + 1e-9
    check(f"{name}: the summary's numbers equal validate.json's", ok, str(k))


def main():
    if not have_demo():
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-html-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    steps = [("data", "convert", "--images", f"{FM}/t10k-images-idx3-ubyte.gz", "--labels",
              f"{FM}/t10k-labels-idx1-ubyte.gz", "--out", J("t.h5"), "--class-names", "fashion-mnist"),
             ("calibrate", "--model", MODEL, "--data", J("t.h5"), "--samples", "256", "--out", J("c.h5")),
             ("plan", J("c.h5"), "--model", MODEL, "--out", J("plan.json"))]
    for args in steps:
        rc, _, err = ptq(*args)
        check(" ".join(args[:2]), rc == 0, err.strip()[-300:])
    base = ("validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("t.h5"), "--limit", str(LIMIT))

    # without --calib: the page, no histograms
    rc, so, err = ptq(*base, "--report", J("plain"))
    check("validate without --calib", rc == 0 and "report.html" in so, err.strip()[-300:])
    if rc == 0:
        text, p = parse(J("plain", "report.html"))
        check_page("plain", text, p, json.load(open(J("plain", "validate.json"))))
        check("plain: no histogram section", not p.tensors and "id=\"tensors\"" not in text)

    # with --calib: histograms with the calibrators' thresholds
    rc, so, err = ptq(*base, "--report", J("rep"), "--calib", J("c.h5"))
    check("validate --calib", rc == 0, err.strip()[-300:])
    rc2, _, err2 = ptq(*base, "--report", J("rep2"), "--calib", J("c.h5"))
    if rc == 0 and rc2 == 0:
        text, p = parse(J("rep", "report.html"))
        check("the same run twice: byte-identical pages",
              text == open(J("rep2", "report.html"), encoding="utf-8").read())
        check_page("calib", text, p, json.load(open(J("rep", "validate.json"))))
        plan = json.load(open(J("plan.json")))
        first8 = [e["name"] for e in plan["tensors"] if e["kind"] == "activation" and e["precision"] == "int8"][:8]
        check("calib: the first 8 int8 activations of the plan, in plan order",
              [t[0] for t in p.tensors] == first8, f"{[t[0] for t in p.tensors]} vs {first8}")
        ranges = {}
        for method in ("minmax", "entropy", "percentile", "mse"):
            rc, _, err = ptq("export", J("c.h5"), "--method", method, "--format", "json", "--out",
                             J(f"{method}.json"), "--quiet")
            check(f"export {method}", rc == 0, err.strip()[-300:])
            if rc == 0:
                ranges[method] = {t["name"]: t["amax"] for t in json.load(open(J(f"{method}.json")))["tensors"]}
        scales = {e["name"]: e["scales"] for e in plan["tensors"]}
        with h5py.File(J("c.h5"), "r") as f:
            arch = dict(zip([n.decode() if isinstance(n, bytes) else n for n in f["tensors/name"][()]],
                            f["tensors/n_binned"][()].tolist()))
        bad = []
        for name, thr, bar_sum in p.tensors:
            got = dict(thr)
            for method, table in ranges.items():
                if abs(got.get(method, -1) - table[name]) > 1e-8 * table[name]:
                    bad.append(f"{name} {method}: {got.get(method)} vs {table[name]}")
            if abs(got.get("plan", -1) - scales[name][0] * 127) > 1e-6 * scales[name][0] * 127:
                bad.append(f"{name} plan: {got.get('plan')} vs {scales[name][0] * 127}")
            if bar_sum != arch[name]:
                bad.append(f"{name}: bars add up to {bar_sum}, the archive binned {arch[name]}")
        check("calib: thresholds equal `ptq export` ranges and the plan's, bars add up to n_binned",
              len(p.tensors) == 8 and not bad, "; ".join(bad[:4]))

    # hostile class names: escaped in the file, read back as the same text
    images, labels = fmnist_test(100)
    with h5py.File(J("hostile.h5"), "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
        f.attrs["class_names"] = HOSTILE
    rc, _, err = ptq("validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("hostile.h5"),
                     "--report", J("hostile"))
    check("validate on hostile class names", rc == 0, err.strip()[-300:])
    if rc == 0:
        text, p = parse(J("hostile", "report.html"))
        check("hostile: escaped in the file, no script element, the names read back as text",
              "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text and
              p.tags.get("script", 0) == 0 and not p.errors and HOSTILE[0] in p.texts and "a&b" in p.texts and
              HOSTILE[2] in p.texts, str(p.errors[:3]))

    not_utf8(J, images, labels)

    # refusals: nothing written
    shutil.copy(J("c.h5"), J("other.h5"))
    with h5py.File(J("other.h5"), "r+") as f:
        f.attrs["model_sha256"] = "e" * 64
    for name, calib, code in (("a missing archive", J("nope.h5"), 3),
                              ("a file that is not an archive", J("plan.json"), 4),
                              ("another model's archive", J("other.h5"), 2)):
        out = J("rep-" + name.replace(" ", "_"))
        rc, _, err = ptq(*base, "--report", out, "--calib", calib)
        check(f"refuses {name}", rc == code and not os.path.exists(out), f"exit {rc} (want {code}): {err.strip()}")
    png_and_sensitivity(J, base)
    report_folders(J, base)
    return finish("cli_html_test")


def not_utf8(J, images, labels):
    """Class names that are not UTF-8: every report valid UTF-8 (JSON that parses), the bad bytes as U+FFFD;
    ESC and BEL in them escaped on the terminal (eval's table, validate's FLAGGED lines, plan's steps)."""
    with h5py.File(J("raw.h5"), "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
        raw = [b"\xff\xfe\x1b]0;x\x07 bad", b"cut\x1b]0;x\x07 \xc3"]
        raw += [LONG.format(i).encode() for i in range(2, 10)]
        f.attrs.create("class_names", raw, dtype=f"S{max(map(len, raw))}")
    runs = [("eval", "--model", MODEL, "--data", J("raw.h5"), "--report", J("raw-eval.json")),
            ("validate", "--model", MODEL, "--plan", J("plan.json"), "--data", J("raw.h5"), "--report", J("raw")),
            ("sensitivity", "--model", MODEL, "--calib", J("c.h5"), "--data", J("raw.h5"), "--samples", "50",
             "--out", J("raw-sens.json")),
            ("plan", J("c.h5"), "--model", MODEL, "--sensitivity", J("raw-sens.json"), "--budget", "0", "--data",
             J("raw.h5"), "--samples", "50", "--max-moves", "1", "--out", J("raw-plan.json"))]
    for args in runs:  # eval's terminal table cuts a long name at a byte count, inside a character: bytes replaced
        p = subprocess.run([PTQ, *args], capture_output=True, text=True, errors="replace", timeout=900)
        rc, out, err = p.returncode, p.stdout, p.stderr
        check(f"{args[0]} on class names that are not UTF-8", rc in (0, 11), err.strip()[-300:])
        check(f"{args[0]}: control characters in class names escaped on the terminal",
              "\x1b" not in out + err and (args[0] != "plan" or "\\x1b]0;x\\x07" in err or all(
                  "no class lost recall" in l for l in err.splitlines() if l.startswith("plan: step"))),
              repr(err[-300:]))
    bad, names = [], set()
    for n in ("raw-eval.json", "raw/validate.json", "raw/validate.md", "raw/report.html", "raw-sens.json",
              "raw-sens.md", "raw-sens.html", "raw-plan.trace.json"):
        try:
            text = open(J(n), "rb").read().decode("utf-8")
            if n.endswith(".json"):
                doc = json.loads(text)
                for key in ("classes", "class_names"):
                    if isinstance(doc.get(key), list):
                        names.update(c["name"] if isinstance(c, dict) else c for c in doc[key])
        except (OSError, ValueError) as e:
            bad.append(f"{n}: {e}")
    check("names that are not UTF-8: every report valid UTF-8, the JSON parses, bad bytes as U+FFFD",
          not bad and {"\ufffd\ufffd\x1b]0;x\x07 bad", "cut\x1b]0;x\x07 \ufffd", LONG.format(2)} <= names,
          f"{bad[:3]} {sorted(names)[:4]}")
    # sens.md: names escaped as validate.md escapes them, long ones whole with their recall delta
    md = open(J("raw-sens.md"), encoding="utf-8").read() + open(J("raw", "validate.md"), encoding="utf-8").read()
    cells = [r.split(" | ")[5] for r in md.splitlines() if r.startswith("| `")]
    long_md = "\\\\x1b\\]0;x\\\\x07 &lt;b&gt;\\|" + "\u00e9" * 30  # LONG in Markdown
    check("sens.md, validate.md: no control character or tag; long class names whole, then the recall delta",
          not re.search("[\x00-\x08\x0b-\x1f\x7f]|<b>", md) and long_md in md and
          all(c == "—" or re.search(r" \([+-]\d+\.\d\d\)$", c) and ("\u00e9" * 30 in c or "bad" in c or "cut" in c)
              for c in cells),
          str(cells[:3]))


def png_size(path):
    """(width, height, colour type) from a PNG's header; None if it is not a PNG."""
    head = open(path, "rb").read(33)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    w, h, _, ctype = struct.unpack(">IIBB", head[16:26])
    return w, h, ctype


def harm_order(sens):
    """sens.json's measured activations, most harmful first (as sens.md): top-1 lost alone, then SQNR."""
    acts = [t for t in sens["tensors"] if t["kind"] == "activation" and t["only"]]
    sqnr = lambda t: float("inf") if t["only"].get("sqnr_infinite") else t["only"].get("sqnr_db", float("inf"))  # noqa: E731
    return [t["name"] for t in sorted(acts, key=lambda t: (t["only"]["top1_delta_pts"], sqnr(t)))]


def png_and_sensitivity(J, base):
    rc, so, err = ptq(*base, "--report", J("png"))
    check("validate: PNG heatmaps", rc == 0, err.strip()[-300:])
    if rc == 0:
        names = ["validate.json", "validate.md", "report.html", "confusion-fp32.png", "confusion-quant.png",
                 "confusion-delta.png"]
        check("validate says what it wrote into the folder", f"report   {J('png')}: " + ", ".join(names) in so,
              so[-400:])
        sizes = [png_size(J("png", n)) for n in names[3:]]
        check("three RGB PNG heatmaps of one size, large enough for 10 labelled classes",
              all(x and x == sizes[0] and x[2] == 2 and x[0] >= 500 and x[1] >= 500 for x in sizes), str(sizes))

    # sens.html next to sens.json
    rc, so, err = ptq("sensitivity", "--model", MODEL, "--calib", J("c.h5"), "--data", J("t.h5"), "--samples", "200",
                      "--out", J("sens.json"))
    check("sensitivity writes sens.json, sens.md and sens.html", rc == 0 and J("sens.html") in so and
          all(os.path.exists(J(n)) for n in ("sens.json", "sens.md", "sens.html")), err.strip()[-300:])
    if rc != 0:
        return
    sens = json.load(open(J("sens.json")))
    text, p = parse(J("sens.html"))
    n_a = sum(1 for t in sens["tensors"] if t["only"])
    n_b = sum(1 for t in sens["tensors"] if t["all_but"]["measured"])
    check("sens.html: parses, self-contained, two signed bar charts with a bar per measured tensor and mode",
          not p.errors and not p.stack and p.tags.get("script", 0) == 0 and "http" not in text.lower() and
          p.svgs.count("sbars") == 2 and p.tags.get("sbar", 0) == min(n_a, 40) + min(n_b, 40),
          f"{p.svgs}, {p.tags.get('sbar')} bars for {n_a} + {n_b}")
    check("sens.html: the histograms of the 8 most harmful activations, in harm order",
          [t[0] for t in p.tensors] == harm_order(sens)[:8] and p.svgs.count("hist") == 8,
          f"{[t[0] for t in p.tensors]} vs {harm_order(sens)[:8]}")

    # validate with --sensitivity and --trace: the run page's sections
    rc, _, err = ptq("plan", J("c.h5"), "--model", MODEL, "--sensitivity", J("sens.json"), "--budget", "0", "--data",
                     J("t.h5"), "--samples", "200", "--max-moves", "2", "--out", J("pb.json"), "--quiet")
    check("a budgeted plan with a trace", rc in (0, 11) and os.path.exists(J("pb.trace.json")), err.strip()[-300:])
    trace = json.load(open(J("pb.trace.json")))
    full = base + ("--calib", J("c.h5"), "--sensitivity", J("sens.json"), "--trace", J("pb.trace.json"))
    rc, _, err = ptq(*full, "--report", J("full"))
    check("validate --sensitivity --trace", rc == 0, err.strip()[-300:])
    if rc == 0:
        text, p = parse(J("full", "report.html"))
        check("full page: sensitivity and trace sections, two trace marks per step, histograms in harm order",
              not p.errors and 'id="sensitivity"' in text and 'id="trace"' in text and
              p.svgs.count("sbars") == 2 and p.svgs.count("trace") == 1 and
              p.tags.get("pt", 0) == 2 * len(trace["steps"]) and
              [t[0] for t in p.tensors] == [n for n in harm_order(sens) if n in [t[0] for t in p.tensors]][:8] and
              len(p.tensors) == 8, f"{p.svgs} {p.tags.get('pt')} marks for {len(trace['steps'])} steps")
    check("the trace records the model of its plan", trace.get("model", {}).get("sha256") ==
          json.load(open(J("pb.json")))["model"]["sha256"], str(trace.get("model")))
    other = dict(sens, model_sha256="e" * 64)
    json.dump(other, open(J("sens-other.json"), "w"))
    json.dump(dict(sens, archive_sample_ids_sha256="e" * 64), open(J("sens-archive.json"), "w"))
    json.dump(dict(sens, core="fp8-e4m3"), open(J("sens-fp8.json"), "w"))
    json.dump(dict(sens, target="ort-cpu"), open(J("sens-cpu.json"), "w"))
    json.dump(dict(sens, reduce_range=True), open(J("sens-rr.json"), "w"))
    open(J("bad.trace.json"), "w").write('{"format": "ptq-plan-trace", "steps": "no"}')
    json.dump(dict(trace, model={"name": "other.onnx", "sha256": "e" * 64}), open(J("other.trace.json"), "w"))
    json.dump(dict(trace, target="ort-cpu"), open(J("cpu.trace.json"), "w"))
    json.dump(dict(trace, reduce_range=True), open(J("rr.trace.json"), "w"))
    old_trace = dict(trace)
    old_trace.pop("model", None)
    json.dump(old_trace, open(J("old.trace.json"), "w"))
    rc, _, err = ptq(*base, "--trace", J("old.trace.json"), "--report", J("rep-old-trace"))
    check("takes a trace from before traces recorded their model", rc == 0, err.strip()[-300:])
    for name, extra, code in (("another model's sensitivity report", ("--sensitivity", J("sens-other.json")), 2),
                              ("a malformed trace", ("--trace", J("bad.trace.json")), 4),
                              ("the trace of another model's plan", ("--trace", J("other.trace.json")), 2),
                              ("the trace of an ort-cpu plan", ("--trace", J("cpu.trace.json")), 2),
                              ("the trace of a --reduce-range plan", ("--trace", J("rr.trace.json")), 2),
                              ("a sensitivity report of another archive than --calib's",
                               ("--calib", J("c.h5"), "--sensitivity", J("sens-archive.json")), 2),
                              ("a sensitivity report of an FP8 plan", ("--sensitivity", J("sens-fp8.json")), 2),
                              ("a sensitivity report of an ort-cpu plan", ("--sensitivity", J("sens-cpu.json")), 2),
                              ("a sensitivity report with --reduce-range", ("--sensitivity", J("sens-rr.json")), 2)):
        out = J("rep-" + name.replace(" ", "_").replace("'", ""))
        rc, _, err = ptq(*base, *extra, "--report", out)
        check(f"refuses {name} before any work", rc == code and not os.path.exists(out),
              f"exit {rc} (want {code}): {err.strip()}")


def ptq_env(env, *args):
    p = subprocess.run([PTQ, *args], capture_output=True, text=True, timeout=900, env=dict(os.environ, **env))
    return p.returncode, p.stdout, p.stderr


def report_folders(J, base):
    # unwritable: a folder inside a file; no image is read (fast), nothing made
    open(J("a-file"), "w").write("x")
    rc, _, err = ptq(*base, "--report", J("a-file", "rep"))
    check("validate: an unwritable report folder is a clear error (exit 3)",
          rc == 3 and "report folder" in err and J("a-file", "rep") in err, f"exit {rc}: {err.strip()}")
    # a write that fails halfway: a new folder is left empty (removed), an old report unchanged
    rc, _, err = ptq_env({"PTQ_TEST_FAIL_WRITE_AFTER": "3000"}, *base, "--report", J("half"))
    check("validate: a failed write leaves no report (exit 3, no folder)",
          rc == 3 and not os.path.exists(J("half")), f"exit {rc}: {err.strip()}")
    old = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png"))}
    rc, _, err = ptq_env({"PTQ_TEST_FAIL_WRITE_AFTER": "3000"}, *base, "--recall-drop", "0", "--report", J("png"))
    now = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png"))}
    check("validate: a failed write over an old report leaves it as it was", rc == 3 and now == old,
          f"exit {rc}: {sorted(now)} vs {sorted(old)}")
    # a rename that fails after others took their names (PTQ_TEST_FAIL_RENAME at report.html): those put back
    old = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png"))}
    rc, _, err = ptq(*base, "--recall-drop", "0", "--report", J("png"), env={"PTQ_TEST_FAIL_RENAME": "report.html"})
    now = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png"))}
    check("validate: a failed rename over an old report puts back the files renamed before it", rc == 3 and
          now == old, f"exit {rc}: {sorted(now)} vs {sorted(old)}, {err.strip()[-200:]}")
    # --logits beside the report take their names with it: a failed rename of the logits leaves the old report
    # and the old logits (the new report had taken its names before the logits failed)
    with open(J("old-logits.npy"), "w") as f:
        f.write("old\n")
    old = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png"))}
    rc, _, err = ptq(*base, "--recall-drop", "0", "--report", J("png"), "--logits", J("old-logits.npy"),
                     env={"PTQ_TEST_FAIL_RENAME": "old-logits.npy"})
    now = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png"))}
    check("validate --logits: a failed rename of the logits leaves the old report and the old logits (exit 3)",
          rc == 3 and now == old and open(J("old-logits.npy")).read() == "old\n",
          f"exit {rc}: {sorted(k for k in now if now[k] != old.get(k))}, {err.strip()[-200:]}")
    # a folder where report.html goes: refused before any image is read (its rename failed after the run)
    os.remove(J("png", "report.html"))
    os.makedirs(J("png", "report.html", "inside"))
    old = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png")) if n != "report.html"}
    rc, _, err = ptq(*base, "--recall-drop", "0", "--report", J("png"))
    now = {n: open(J("png", n), "rb").read() for n in os.listdir(J("png")) if n != "report.html"}
    check("validate: a folder at report.html's name refused (exit 3, naming it), the old report kept", rc == 3 and
          "report.html: it is a folder" in err and now == old, f"exit {rc}: {err.strip()[-200:]}")
    shutil.rmtree(J("png", "report.html"))
    # sensitivity: a missing folder refused before any image; a failed write leaves none of the three files
    sens = ("sensitivity", "--model", MODEL, "--calib", J("c.h5"), "--data", J("t.h5"), "--samples", "50")
    rc, _, err = ptq(*sens, "--out", J("no-such-folder", "sens.json"))
    check("sensitivity: a missing output folder is a clear error (exit 3)",
          rc == 3 and "does not exist" in err, f"exit {rc}: {err.strip()}")
    rc, _, err = ptq_env({"PTQ_TEST_FAIL_WRITE_AFTER": "3000"}, *sens, "--out", J("s2.json"))
    check("sensitivity: a failed write leaves none of sens.json, sens.md, sens.html", rc == 3 and
          not any(os.path.exists(J(n)) for n in ("s2.json", "s2.md", "s2.html")), f"exit {rc}: {err.strip()}")
    # run: an output folder that cannot be made
    rc, _, err = ptq("run", "--model", MODEL, "--calib-data", J("t.h5"), "--data", J("t.h5"), "--out",
                     J("a-file", "run"))
    check("run: an unwritable output folder is a clear error (exit 3)", rc == 3 and J("a-file", "run") in err,
          f"exit {rc}: {err.strip()}")


if __name__ == "__main__":
    sys.exit(main())
