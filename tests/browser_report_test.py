#!/usr/bin/env python3
"""report.html in a real browser: headless Chromium (Debian's `chromium`)
renders the page `ptq run` writes for the demo model (the hard case of
scripts/make_hard_case.py, so that the planner moves tensors), its
sensitivity page, and the page `ptq validate` writes for a synthetic
100-class model. It fails on any console message (the pages have no
script, so any is an error, such as an SVG attribute Chromium cannot read),
on a missing chart, and on a chart without data; a probe script, added to a
copy of the page only, measures the rendered page: nothing fetched (no
resource entry), every chart has marks of nonzero size, every heatmap k x k
cells, and its labels (at 10 and at 100 classes) at least 8 px high, inside
their chart, clear of the grid and of each other (slanted column labels:
their baselines at least a font height apart). The screenshot is decoded
and must not be blank; the page prints to a PDF of several pages. A page
with a broken SVG attribute shows that console errors are caught. Skips
(77) without chromium or the demo model. PTQ_DOCS_SCREENSHOT=FILE keeps the
demo page's screenshot; PTQ_KEEP_TMP=1 keeps the pages. Run by ctest (label
oracle) with PTQ_BIN and PTQ_SOURCE_DIR set."""
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import h5py
    import hdf5plugin  # noqa: F401  (registers the zstd filter 32015 with h5py)
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from ptqtest import FM, MODEL, SRC, check, finish, fmnist_test, have_demo, ptq
except ImportError as e:  # the venv from scripts/setup.sh has them
    print(f"skipped: {e}")
    sys.exit(77)

CHROMIUM = os.environ.get("PTQ_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
FASHION = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

# Runs in the probe copy only: measures the rendered charts, writes JSON into <pre id="probe">.
PROBE = r"""<script>
(function () {
  const marks = {heatmap: 'rect.cell', bars: 'g.row rect', sbars: 'rect.sbar', hist: 'rect', trace: 'circle.pt'};
  const out = {charts: [], heatmaps: [], fetched: performance.getEntriesByType('resource').map(e => e.name)};
  const area = e => { const r = e.getBoundingClientRect(); return r.width * r.height; };
  for (const svg of document.querySelectorAll('svg')) {
    const kind = svg.getAttribute('class');
    const m = svg.querySelectorAll(marks[kind] || 'none');
    let shown = 0;
    for (const e of m) if (area(e) > 0 && (kind !== 'hist' || e.querySelector('title'))) shown++;
    const fig = svg.closest('figure, div.tensor, section');
    out.charts.push({kind: kind, id: fig ? (fig.id || fig.className) : '', marks: m.length, shown: shown,
                     w: svg.getBoundingClientRect().width, h: svg.getBoundingClientRect().height});
    if (kind !== 'heatmap') continue;
    const box = svg.getBoundingClientRect(), cells = svg.querySelectorAll('rect.cell');
    const grid = {l: Infinity, t: Infinity};
    for (const c of cells) { const r = c.getBoundingClientRect(); grid.l = Math.min(grid.l, r.left); grid.t = Math.min(grid.t, r.top); }
    const scale = box.width / svg.viewBox.baseVal.width;
    const lab = cls => Array.from(svg.querySelectorAll('text.' + cls)).map(t => {
      const r = t.getBoundingClientRect(), m = t.transform.baseVal.consolidate();
      const angle = m ? Math.atan2(m.matrix.b, m.matrix.a) : 0;
      return {l: r.left, r: r.right, t: r.top, b: r.bottom, angle: angle,
              px: parseFloat(getComputedStyle(t).fontSize) * scale};
    });
    const rows = lab('rl'), cols = lab('cl');
    let overlaps = 0, outside = 0, on_grid = 0, min_px = Infinity;
    rows.sort((a, b) => a.t - b.t); cols.sort((a, b) => a.l - b.l);
    for (let i = 1; i < rows.length; i++) if (rows[i].t < rows[i - 1].b - 0.5) overlaps++;
    for (let i = 1; i < cols.length; i++) {
      const a = cols[i].angle;
      if (Math.abs(Math.abs(a) - Math.PI / 2) < 1e-3) {  // upright: the boxes are the glyphs'
        if (cols[i].l < cols[i - 1].r - 0.5) overlaps++;
      } else if ((cols[i].l - cols[i - 1].l) * Math.abs(Math.sin(a)) < 1.05 * cols[i].px) {
        overlaps++;  // slanted: the distance between neighbours' baselines against the font's height
      }
    }
    for (const r of rows.concat(cols)) {
      min_px = Math.min(min_px, r.px);
      if (r.l < box.left - 0.5 || r.t < box.top - 0.5 || r.r > box.right + 0.5 || r.b > box.bottom + 0.5) outside++;
    }
    for (const r of rows) if (r.r > grid.l + 0.5) on_grid++;
    for (const c of cols) if (c.b > grid.t + 0.5) on_grid++;
    out.heatmaps.push({cells: cells.length, rows: rows.length, cols: cols.length, overlaps: overlaps,
                       outside: outside, on_grid: on_grid, min_px: min_px});
  }
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def chromium(tmp, *args):
    """Runs headless chromium; (exit code, stdout, console lines from stderr)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--hide-scrollbars", f"--user-data-dir={os.path.join(tmp, 'profile')}", "--enable-logging=stderr",
           "--v=0", "--virtual-time-budget=5000", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    return p.returncode, p.stdout, console


def png_info(path):
    """(width, height, distinct colours in a sample, share of non-white pixels) of an 8-bit RGB(A) PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"depth {depth} colour type {ctype}"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    img, prev = np.zeros((h, stride), np.uint8), np.zeros(stride, np.int32)
    for y in range(h):  # undo the row filters
        f, line = raw[y * (stride + 1)], np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:
            cur = np.zeros(stride, np.int32)
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + b) // 2
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[x] = (line[x] + p) & 255
        img[y], prev = cur, cur
    pix = img.reshape(h, w, bpp)[:, :, :3]
    colours = len({tuple(p) for p in pix[::7, ::7].reshape(-1, 3)})
    return w, h, colours, float((pix.min(axis=2) < 250).mean())


def render(tmp, name, page, want_charts, k):
    """Renders page: console, the probe's measurements, the screenshot, printing."""
    rc, _, console = chromium(tmp, "--dump-dom", "file://" + page)
    check(f"{name}: chromium renders the page", rc == 0, f"exit {rc}")
    check(f"{name}: no console message", not console, "; ".join(console[:3]))
    probe = os.path.join(os.path.dirname(page), "probe.html")
    text = open(page, encoding="utf-8").read()
    open(probe, "w", encoding="utf-8").write(text.replace("</body>", PROBE + "\n</body>"))
    rc, dom, _ = chromium(tmp, "--dump-dom", "file://" + probe)
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    check(f"{name}: the probe ran", rc == 0 and m is not None, dom[-300:])
    if not m:
        return
    out = json.loads(html.unescape(m.group(1)))
    check(f"{name}: nothing fetched", not out["fetched"], str(out["fetched"][:3]))
    kinds = [c["kind"] for c in out["charts"]]
    for kind, n in want_charts.items():
        check(f"{name}: {n} {kind} chart(s)", kinds.count(kind) == n, str(kinds))
    empty = [c for c in out["charts"] if c["shown"] == 0 or c["w"] < 50 or c["h"] < 30]
    check(f"{name}: every chart drawn with data marks of nonzero size", out["charts"] and not empty, str(empty[:3]))
    for i, hm in enumerate(out["heatmaps"]):
        ok = hm["cells"] == k * k and hm["rows"] == k and hm["cols"] == k
        check(f"{name}: heatmap {i}: {k}x{k} cells, {k} row and {k} column labels", ok, str(hm))
        ok = hm["overlaps"] == 0 and hm["outside"] == 0 and hm["on_grid"] == 0 and (hm["min_px"] or 0) >= 8
        check(f"{name}: heatmap {i}: labels >= 8 px, inside the chart, clear of the grid and of each other", ok,
              str(hm))
    shot = os.path.join(tmp, name + ".png")
    rc, _, _ = chromium(tmp, f"--screenshot={shot}", "--window-size=1100,1500", "file://" + page)
    if rc == 0 and os.path.exists(shot):
        w, h, colours, inked = png_info(shot)
        check(f"{name}: screenshot 1100x1500, not blank", (w, h) == (1100, 1500) and colours > 20 and inked > 0.03,
              f"{w}x{h}, {colours} colours, {inked:.1%} inked")
    else:
        check(f"{name}: screenshot", False, f"exit {rc}")
    pdf = os.path.join(tmp, name + ".pdf")
    rc, _, _ = chromium(tmp, f"--print-to-pdf={pdf}", "--no-pdf-header-footer", "file://" + page)
    pages = len(re.findall(rb"/Type\s*/Page\b", open(pdf, "rb").read())) if os.path.exists(pdf) else 0
    check(f"{name}: prints to a PDF of several pages", rc == 0 and pages >= 3, f"exit {rc}, {pages} pages")
    return shot


def synthetic_100(tmp):
    """A 100-class linear model on random 28x28 images and a labelled set for it (mostly its own FP32 predictions)."""
    rng = np.random.default_rng(7)
    w = rng.normal(0, 0.05, (784, 100)).astype(np.float32)
    b = rng.normal(0, 0.1, 100).astype(np.float32)
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 28, 28])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 100])
    nodes = [helper.make_node("Flatten", ["input"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "w", "b"], ["logits"], name="fc")]
    g = helper.make_graph(nodes, "synthetic100", [x], [y],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    helper.set_model_props(m, {"ptq.preprocess": "scale=0.00392156862745098"})
    onnx.save(m, os.path.join(tmp, "s100.onnx"))
    images = rng.integers(0, 256, (3000, 28, 28), dtype=np.uint8)
    labels = np.argmax(images.reshape(-1, 784).astype(np.float32) / 255 @ w + b, axis=1).astype(np.int64)
    noisy = rng.random(len(labels)) < 0.2
    labels[noisy] = rng.integers(0, 100, noisy.sum())
    words = ["tench", "goldfish", "great white shark of the deep", "hen", "ostrich"]
    with h5py.File(os.path.join(tmp, "s100.h5"), "w") as f:
        f["images"] = images
        f["labels"] = labels
        f.attrs["class_names"] = [f"n{i:03d} {words[i % 5]}" for i in range(100)]


def main():
    if not CHROMIUM:
        print("skipped: no chromium (apt-get install chromium)")
        return 77
    if not have_demo() or not os.path.exists(f"{FM}/train-images-idx3-ubyte.gz"):
        print("skipped: demo model or Fashion-MNIST missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="ptq-browser-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731

    # console errors are caught: an SVG attribute Chromium cannot read (a NaN written as a length)
    open(J("broken.html"), "w").write("<!DOCTYPE html><html><body><svg width=\"9\" height=\"9\">"
                                      "<rect width=\"nan\" height=\"4\"/></svg></body></html>")
    rc, _, console = chromium(tmp, "--dump-dom", "file://" + J("broken.html"))
    check("a page with a broken SVG attribute gives a console message (the check can fail)", rc == 0 and console,
          f"exit {rc}")

    # the demo model's hard case through `ptq run`, with a budget: every chart
    subprocess.run([sys.executable, os.path.join(SRC, "scripts", "make_hard_case.py"), "--model", MODEL, "--out",
                    J("hard.onnx"), "--blocks", "layers.1", "--alpha", "100"], check=True, capture_output=True)
    images, labels = fmnist_test(1000)
    with h5py.File(J("val.h5"), "w") as f:
        f["images"] = images
        f["labels"] = labels
        f.attrs["class_names"] = FASHION
    with h5py.File(J("cal.h5"), "w") as f:
        f["images"] = fmnist_test(512, split="train")[0]
    rc, so, err = ptq("run", "--model", J("hard.onnx"), "--calib-data", J("cal.h5"), "--data", J("val.h5"), "--out",
                      J("run"), "--calib-samples", "256", "--samples", "500", "--budget", "0.5")
    check("ptq run on the hard case with --budget", rc in (0, 11) and "report.html" in so, err.strip()[-300:])
    page = J("run", "report", "report.html")
    if os.path.exists(page):
        shot = render(tmp, "demo", page, {"bars": 2, "heatmap": 3, "sbars": 2, "trace": 1, "hist": 8}, 10)
        if shot and os.environ.get("PTQ_DOCS_SCREENSHOT"):
            shutil.copy(shot, os.environ["PTQ_DOCS_SCREENSHOT"])
    if os.path.exists(J("run", "sens.html")):
        render(tmp, "sensitivity", J("run", "sens.html"), {"sbars": 2, "hist": 8}, 10)

    # 100 classes: readable heatmaps
    synthetic_100(tmp)
    steps = [("calibrate", "--model", J("s100.onnx"), "--data", J("s100.h5"), "--samples", "512", "--out",
              J("s100-calib.h5")),
             ("plan", J("s100-calib.h5"), "--model", J("s100.onnx"), "--out", J("s100-plan.json")),
             ("validate", "--model", J("s100.onnx"), "--plan", J("s100-plan.json"), "--data", J("s100.h5"),
              "--calib", J("s100-calib.h5"), "--report", J("s100"))]
    for args in steps:
        rc, _, err = ptq(*args)
        check(f"100 classes: {args[0]}", rc == 0, err.strip()[-300:])
    if os.path.exists(J("s100", "report.html")):
        render(tmp, "classes100", J("s100", "report.html"), {"bars": 2, "heatmap": 3}, 100)
    if not os.environ.get("PTQ_KEEP_TMP"):
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("browser_report_test")


if __name__ == "__main__":
    sys.exit(main())
