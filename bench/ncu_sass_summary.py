#!/usr/bin/env python3
"""Summary of one kernel's SASS from Nsight Compute's source page: the
opcodes by instructions executed and by warp-stall samples, and the hottest
instructions with their main stall reasons. Reads the CSV of
    ncu --import REPORT.ncu-rep --page source --csv --print-source sass > FILE.csv
(a report taken with --set full) and prints Markdown:
    python3 bench/ncu_sass_summary.py FILE.csv [--top 20] [--per OPCODE]
--per OPCODE: the counts are also given per executed instruction of that
opcode (e.g. ATOMS: per value binned in shared memory).
"""
import argparse
import collections
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source):
    words = source.split()
    if not words:
        return ""
    word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--per", help="opcode whose executed count the others are divided by")
    a = ap.parse_args()
    rows = list(csv.reader(open(a.csv, newline="")))
    at = next((i for i, r in enumerate(rows) if "Address" in r and "Source" in r), None)
    if at is None:
        sys.exit(f"ncu_sass_summary: {a.csv}: no header with Address and Source (not ncu's source page?)")
    head, data = rows[at], [r for r in rows[at + 1:] if len(r) == len(rows[at])]
    col = {h: i for i, h in enumerate(head)}
    need = ("Source", "Instructions Executed", "Warp Stall Sampling (All Samples)")
    missing = [h for h in need if h not in col]
    if missing:
        sys.exit(f"ncu_sass_summary: {a.csv}: no column {', '.join(missing)}")
    stall_cols = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
    executed, sampled = collections.Counter(), collections.Counter()
    for r in data:
        op = opcode(r[col["Source"]])
        executed[op] += number(r[col["Instructions Executed"]])
        sampled[op] += number(r[col["Warp Stall Sampling (All Samples)"]])
    total_e, total_s = sum(executed.values()), sum(sampled.values())
    per = executed.get(a.per, 0.0) if a.per else 0.0
    title = rows[0][1] if rows and len(rows[0]) > 1 else a.csv
    print(f"### `{title}`: {total_e:,.0f} warp instructions executed, {total_s:,.0f} stall samples\n")
    print("| opcode | executed | share | samples | share |" + (f" per {a.per} |" if per else ""))
    print("|---|---|---|---|---|" + ("---|" if per else ""))
    for op, n in executed.most_common(a.top):
        line = f"| {op} | {n:,.0f} | {100 * n / total_e:.1f}% | {sampled[op]:,.0f} | {100 * sampled[op] / max(total_s, 1):.1f}% |"
        print(line + (f" {n / per:.2f} |" if per else ""))
    print("\n| instruction | executed | samples | main stalls |\n|---|---|---|---|")
    hot = sorted(data, key=lambda r: -number(r[col["Warp Stall Sampling (All Samples)"]]))[:a.top]
    for r in hot:
        stalls = sorted(((number(r[col[h]]), h[6:]) for h in stall_cols), reverse=True)[:2]
        why = ", ".join(f"{name} {n:.0f}" for n, name in stalls if n > 0)
        print(f"| `{r[col['Source']].strip()[:60]}` | {number(r[col['Instructions Executed']]):,.0f} | "
              f"{number(r[col['Warp Stall Sampling (All Samples)']]):,.0f} | {why} |")


if __name__ == "__main__":
    main()
