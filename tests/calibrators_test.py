#!/usr/bin/env python3
"""An independent numpy oracle for the calibrators' searches (calib/kl.c,
calib/mse.c): ModelOpt's _compute_amax_entropy written from its description
(REFERENCE.md; digitize/linspace/Counter, scipy's entropy re-derived), its
FP8 variant (ptq/calibrator.h), and the mse search, on seeded random
histograms of many shapes and lengths; the C choices come from
`test_calibrators --kl FILE`. Entropy must agree bin for bin on every case.
Run by ctest (label oracle) with PTQ_BUILD_DIR set."""
import math
import os
import subprocess
import sys
import tempfile
from collections import Counter

try:
    import numpy as np
except ImportError as e:  # the venv from scripts/setup.sh has it
    print(f"skipped: {e}")
    sys.exit(77)

BUILD = os.environ.get("PTQ_BUILD_DIR", "build")
TOOL = os.path.join(BUILD, "tests", "test_calibrators")
START = 128  # ModelOpt's start_bin; 1 << (8 - 1) levels for INT8
FORMATS = ("int8", "fp8-e4m3", "fp8-e5m2")


# ---- FP8, from the bit layout (not from the C code) ------------------------
def fp8_values(fmt):
    """Every non-negative finite value of the format, indexed by its code."""
    man, bias, max_code = (3, 7, 0x7E) if fmt == "fp8-e4m3" else (2, 15, 0x7B)
    vals = []
    for code in range(max_code + 1):
        e, m = code >> man, code & ((1 << man) - 1)
        vals.append(m * 2.0 ** (1 - bias - man) if e == 0 else (2 ** man + m) * 2.0 ** (e - bias - man))
    return np.array(vals)


FP8 = {f: fp8_values(f) for f in FORMATS[1:]}


def fp8_code(v, fmt):
    """Saturating round-to-nearest-even code of non-negative v (array)."""
    vals = FP8[fmt]
    hi = np.clip(np.searchsorted(vals, v, side="left"), 1, len(vals) - 1)
    lo = hi - 1
    mid = (vals[lo] + vals[hi]) / 2  # exact: FP8 values have few bits
    code = np.where(v < mid, lo, np.where(v > mid, hi, np.where(lo % 2 == 0, lo, hi)))
    return np.where(v >= vals[-1], len(vals) - 1, code)


def levels(i, fmt):
    """The level of each of the first i bins for candidate i."""
    if fmt == "int8":
        return np.digitize(range(i), np.linspace(0, i, num=START + 1)) - 1
    fmax = vals_max(fmt)
    return fp8_code((np.arange(i) + 0.5) * fmax / i, fmt)


def vals_max(fmt):
    return float(FP8[fmt][-1])


# ---- scipy.stats.entropy(pk, qk), re-derived ----------------------------------
def rel_entr(x, y, exact):
    out = np.full(x.shape, np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = (x > 0) & (y > 0)
        out[(x == 0) & (y >= 0)] = 0.0
        if exact:  # libm's log, as scipy's rel_entr calls it
            out[pos] = [a * math.log(a / b) for a, b in zip(x[pos].tolist(), y[pos].tolist())]
        else:
            out[pos] = x[pos] * np.log(x[pos] / y[pos])
    out[np.isnan(x) | np.isnan(y)] = np.nan
    return out


def entropy(pk, qk, exact):
    with np.errstate(invalid="ignore", divide="ignore"):
        pk = 1.0 * pk / np.sum(pk)
        qk = 1.0 * qk / np.sum(qk)
    return np.sum(rel_entr(pk, qk, exact))


# ---- ModelOpt's loop, literally ----------------------------------------------
def kl_literal(hist, fmt):
    bins = np.array(hist, dtype=np.int64)
    if len(bins) < START:
        return len(bins)
    bins[0] = bins[1]
    divergences = []
    for i in range(START, len(bins) + 1):
        new_density_counts = np.zeros(256, dtype=np.float64)
        digitized_space = np.array(levels(i, fmt))
        digitized_space[bins[:i] == 0] = -1
        for idx, digitized in enumerate(digitized_space):
            if digitized != -1:
                new_density_counts[digitized] += bins[idx]
        counter = Counter(digitized_space)
        for key, val in counter.items():
            if key != -1:
                new_density_counts[key] = new_density_counts[key] / val
        new_density = np.zeros(i, dtype=np.float64)
        for idx, digitized in enumerate(digitized_space):
            if digitized != -1:
                new_density[idx] = new_density_counts[digitized]
        reference_density = np.array(bins[:i])
        reference_density[-1] += np.sum(bins[i:])
        divergences.append(entropy(reference_density, new_density, exact=True))
    # no count below i: Q is all zero and ModelOpt's normalisation gives 0/0 = NaN, which
    # argmin would pick; REFERENCE.md's rule (P > 0 where Q = 0) makes it infinity and lose
    divergences = np.nan_to_num(np.array(divergences), nan=np.inf)
    return START + len(divergences) - 1 - int(np.argmin(divergences[::-1]))


# ---- the same, vectorised per candidate ----------------------------------------
def kl_candidate(bins, i, fmt, exact):
    lv = levels(i, fmt)
    nz = bins[:i] != 0
    sums = np.bincount(lv[nz], weights=bins[:i][nz].astype(np.float64), minlength=256)
    cnts = np.bincount(lv[nz], minlength=256)
    q = np.zeros(i)
    q[nz] = (sums[lv[nz]] / cnts[lv[nz]])
    p = bins[:i].copy()
    p[-1] += bins[i:].sum()
    return entropy(p, q, exact)


def kl_fast(hist, fmt):
    bins = np.array(hist, dtype=np.int64)
    if len(bins) < START:
        return len(bins)
    bins[0] = bins[1]
    div = np.nan_to_num(np.array([kl_candidate(bins, i, fmt, exact=False) for i in range(START, len(bins) + 1)]),
                        nan=np.inf)  # Q all zero: infinity, as in kl_literal
    # numpy's log may differ from libm's in the last bit: recompute, with libm,
    # every candidate near the minimum before choosing
    finite = div[np.isfinite(div)]
    if len(finite):
        lo = finite.min()
        for c in np.nonzero(np.isfinite(div) & (div <= lo + 1e-9 * abs(lo) + 1e-13))[0]:
            div[c] = kl_candidate(bins, START + int(c), fmt, exact=True)
    return START + len(div) - 1 - int(np.argmin(div[::-1]))


# ---- mse ----------------------------------------------------------------------
def mse_errors(hist, fmt):
    """Squared error of every candidate i = 1..n (bin centres, count-weighted)."""
    n = len(hist)
    nz = np.nonzero(hist)[0]
    c = nz + 0.5
    w = np.asarray(hist, dtype=np.float64)[nz]
    errs = np.empty(n)
    for i in range(1, n + 1):
        if fmt == "int8":
            s = i / 127.0
            q = np.minimum(np.rint(c / s), 127.0) * s
        else:
            fmax = vals_max(fmt)
            q = FP8[fmt][fp8_code(c * (fmax / i), fmt)] * (i / fmax)
        errs[i - 1] = np.sum(w * (q - c) ** 2)
    return errs


# ---- histograms -----------------------------------------------------------------
def make_hist(rng, shape, n, total):
    x = (np.arange(n) + 0.5) / n
    if shape == "exponential":
        lam = np.exp(-x * rng.uniform(3, 30))
    elif shape == "gaussian":
        lam = np.exp(-0.5 * (x / rng.uniform(0.05, 0.5)) ** 2)
    elif shape == "pareto":
        lam = (1 + x * rng.uniform(5, 200)) ** -rng.uniform(1.5, 4)
    elif shape == "uniform":
        lam = np.ones(n)
    elif shape == "bimodal":
        lam = np.exp(-0.5 * ((x - 0.2) / 0.05) ** 2) + 0.3 * np.exp(-0.5 * ((x - 0.7) / 0.1) ** 2)
    elif shape == "spikes":
        lam = np.full(n, 1e-4)
        lam[rng.integers(0, n, rng.integers(1, 12))] = rng.uniform(0.2, 1.0)
    elif shape == "sparse":
        lam = np.where(rng.random(n) < rng.uniform(0.02, 0.3), 1.0, 0.0)
    else:
        raise ValueError(shape)
    lam = lam / lam.sum() * total
    h = rng.poisson(lam).astype(np.int64)
    if rng.random() < 0.4:  # zeros in the middle
        a = int(rng.integers(0, n))
        h[a:a + int(rng.integers(1, max(2, n // 4)))] = 0
    if rng.random() < 0.3:  # a long thin tail of single counts
        h[n // 2:] = (rng.random(n - n // 2) < 0.01).astype(np.int64)
    if rng.random() < 0.2:  # the near-zero spike ModelOpt hides
        h[0] += int(total // 3)
    h[-1] = max(h[-1], 1)  # the histogram ends at its last non-empty bin
    return h


def cases():
    rng = np.random.default_rng(20261129)
    shapes = ["exponential", "gaussian", "pareto", "uniform", "bimodal", "spikes", "sparse"]
    lengths = [128, 129, 130, 191, 255, 256, 257, 300, 511, 700, 1025, 1500, 2049, 3000, 4096, 4133]
    out = []
    for k, n in enumerate(lengths):
        for s in range(3):
            shape = shapes[(3 * k + s) % len(shapes)]
            total = int(10 ** rng.uniform(2, 9))
            out.append((f"{shape}/{n}/{total}", make_hist(rng, shape, n, total)))
    # every bin below 1200 empty: those candidates have Q all zero and must lose
    h = np.zeros(1400, dtype=np.int64)
    h[1200:] = rng.integers(1, 100, 200)
    out.append(("empty-start/1400", h))
    # a single spike, and two adjacent spikes at the top
    h = np.zeros(2048, dtype=np.int64)
    h[300] = 1000
    h[-1] = 1
    out.append(("spike/2048", h))
    h = np.zeros(1024, dtype=np.int64)
    h[-2:] = [5, 7]
    out.append(("top-pair/1024", h))
    return out


def run_tool(hists):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for h in hists:
            f.write(f"{len(h)} " + " ".join(str(int(c)) for c in h) + "\n")
        path = f.name
    try:
        p = subprocess.run([TOOL, "--kl", path], capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(path)
    if p.returncode != 0:
        raise RuntimeError(f"{TOOL} --kl failed ({p.returncode}): {p.stderr}")
    return [list(map(int, line.split())) for line in p.stdout.splitlines()]


def main():
    if not os.path.exists(TOOL):
        print(f"FAIL: {TOOL} missing (build the test_calibrators target)")
        return 1
    failures = []

    # the INT8 level of bin j is floor(128 j / i): the linspace edges are exact
    bad = [i for i in range(START, 8193)
           if not np.array_equal(np.digitize(range(i), np.linspace(0, i, num=START + 1)) - 1,
                                 (np.arange(i) * START) // i)]
    print(f"{'ok  ' if not bad else 'FAIL'} digitize(range(i), linspace(0, i, 129)) - 1 == floor(128 j / i)"
          f" for i = 128..8192 ({len(bad)} differ)")
    if bad:
        failures.append("digitize")

    # ptq_calib_np_sum adds like np.sum, bit for bit (blocks of 8192, pairwise within)
    rng = np.random.default_rng(7)
    arrays = []
    for n in list(range(0, 40)) + [127, 128, 129, 136, 255, 256, 1000, 4095, 4096, 8191, 8192, 8193, 9000, 16384,
                                   16385, 24576, 30000, 50000, 100000]:
        a = rng.standard_normal(n) * np.exp(rng.normal(0, 3, n))  # wide range: orders of adding differ
        a[rng.random(n) < 0.3] = 0.0
        arrays.append(a)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for a in arrays:
            f.write(f"{len(a)} " + " ".join(float(v).hex() for v in a) + "\n")
        path = f.name
    try:
        p = subprocess.run([TOOL, "--sum", path], capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(path)
    sums = [float.fromhex(t) for t in p.stdout.split()]
    n_sum_ok = sum(1 for a, s in zip(arrays, sums) if s == float(np.sum(a)))
    ok = p.returncode == 0 and len(sums) == len(arrays) and n_sum_ok == len(arrays)
    print(f"{'ok  ' if ok else 'FAIL'} np.sum emulation: {n_sum_ok}/{len(arrays)} sums bit-identical")
    if not ok:
        failures.append("np_sum")

    all_cases = cases()
    got = run_tool([h for _, h in all_cases])
    if len(got) != len(all_cases):
        print(f"FAIL: the tool answered {len(got)} of {len(all_cases)} histograms")
        return 1

    n_kl = n_kl_ok = 0
    n_mse = n_mse_exact = n_mse_ok = 0
    for (name, h), row in zip(all_cases, got):
        for f, fmt in enumerate(FORMATS):
            want = kl_fast(h, fmt)
            n_kl += 1
            if row[f] == want:
                n_kl_ok += 1
            else:
                failures.append(f"kl {fmt} {name}")
                print(f"FAIL kl {fmt} {name}: C chose {row[f]}, numpy {want}")
            errs = mse_errors(h, fmt)
            best = int(np.nonzero(errs == errs.min())[0][-1]) + 1
            n_mse += 1
            n_mse_exact += row[3 + f] == best
            # C adds in bin order, numpy pairwise: a near-tie may go either way
            if errs[row[3 + f] - 1] <= errs.min() * (1 + 1e-12):
                n_mse_ok += 1
            else:
                failures.append(f"mse {fmt} {name}")
                print(f"FAIL mse {fmt} {name}: C chose {row[3 + f]} (error {errs[row[3 + f] - 1]!r}), "
                      f"numpy {best} (error {errs.min()!r})")
    print(f"{'ok  ' if n_kl_ok == n_kl else 'FAIL'} entropy: {n_kl_ok}/{n_kl} chosen bins equal "
          f"({len(all_cases)} histograms x {len(FORMATS)} formats)")
    print(f"{'ok  ' if n_mse_ok == n_mse else 'FAIL'} mse: {n_mse_ok}/{n_mse} at the least error "
          f"({n_mse_exact} the very same bin)")

    # ModelOpt's loop written out literally agrees with the vectorised oracle and C
    small = [(name, h) for name, h in all_cases if len(h) <= 300]
    n_lit = n_lit_ok = 0
    for (name, h) in small:
        row = got[[n for n, _ in all_cases].index(name)]
        for f, fmt in enumerate(FORMATS):
            lit = kl_literal(h, fmt)
            n_lit += 1
            if lit == row[f] == kl_fast(h, fmt):
                n_lit_ok += 1
            else:
                failures.append(f"literal {fmt} {name}")
                print(f"FAIL literal {fmt} {name}: literal {lit}, C {row[f]}")
    print(f"{'ok  ' if n_lit_ok == n_lit else 'FAIL'} literal ModelOpt loop: {n_lit_ok}/{n_lit} equal")

    if failures:
        print(f"{len(failures)} failed: {', '.join(failures[:10])}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
