#!/usr/bin/env python3
"""The polynomials of the CPU's Erf (kernels/cpu/unary.c, erf_rows), printed as its C arrays.

ERF_SMALL: P(u), u = 2 x^2 - 1, interpolating erf(x) / x on 0 <= x < 1 (x^2 in [0, 1]);
ERF_BIG: Q(u), u = (x - 2.5) / 1.5, interpolating erfc(x) exp(x^2) on 1 <= x <= 4.
Each is the Chebyshev interpolant at degree + 1 Chebyshev nodes, computed in 50 digits (mpmath) and written in
the monomial basis of u, then rounded to double; the relative errors printed are those of the rounded
coefficients, on a grid. Run: python3 scripts/erf_coefficients.py (needs mpmath: python3-mpmath).
"""
import mpmath as mp

mp.mp.dps = 50


def chebyshev_monomial(f, lo, hi, degree):
    """Monomial coefficients in u = (x - c) / h of f's Chebyshev interpolant on [lo, hi]."""
    n = degree + 1
    c, h = (lo + hi) / 2, (hi - lo) / 2
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    values = [f(c + h * u) for u in nodes]
    cheb = [2 * sum(values[k] * mp.cos(j * mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)) / n
            for j in range(n)]
    cheb[0] /= 2
    basis = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]  # T_j in powers of u
    for j in range(2, n):
        t = [mp.mpf(0)] * (j + 1)
        for i, v in enumerate(basis[j - 1]):
            t[i + 1] += 2 * v
        for i, v in enumerate(basis[j - 2]):
            t[i] -= v
        basis.append(t)
    mono = [mp.mpf(0)] * n
    for j in range(n):
        for i, v in enumerate(basis[j]):
            mono[i] += cheb[j] * v
    return [float(v) for v in mono], c, h


def worst_relative(f, coeffs, to_u, lo, hi, points=2000):
    worst = mp.mpf(0)
    for i in range(points + 1):
        x = lo + (hi - lo) * mp.mpf(i) / points
        u = to_u(x)
        p = mp.mpf(0)
        for co in reversed(coeffs):
            p = p * u + co
        worst = max(worst, abs(p - f(x)) / abs(f(x)))
    return worst


def c_array(name, coeffs):
    out, line = f"static const double {name}[{len(coeffs)}] = {{\n", "   "
    for k, v in enumerate(coeffs):
        item = " " + repr(v) + ("," if k < len(coeffs) - 1 else "")
        if len(line) + len(item) > 116:
            out, line = out + line + "\n", "   "
        line += item
    return out + line + "\n};"


def main():
    small = lambda t: mp.erf(mp.sqrt(t)) / mp.sqrt(t) if t > 0 else 2 / mp.sqrt(mp.pi)  # in t = x^2
    big = lambda x: mp.erfc(x) * mp.exp(x * x)
    ps, _, _ = chebyshev_monomial(small, mp.mpf(0), mp.mpf(1), 8)
    pb, _, _ = chebyshev_monomial(big, mp.mpf(1), mp.mpf(4), 14)
    es = worst_relative(small, ps, lambda t: 2 * t - 1, mp.mpf(0), mp.mpf(1), 400)
    eb = worst_relative(big, pb, lambda x: (x - mp.mpf(2.5)) / mp.mpf(1.5), mp.mpf(1), mp.mpf(4), 400)
    print(f"/* relative errors: ERF_SMALL {mp.nstr(es, 2)}, ERF_BIG {mp.nstr(eb, 2)} */")
    print(c_array("ERF_SMALL", ps))
    print(c_array("ERF_BIG", pb))


if __name__ == "__main__":
    main()
