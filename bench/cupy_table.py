#!/usr/bin/env python3
"""Prints the markdown table of docs/eigensolver.md from a bench/lobpcg_vs_cupy.py JSON file.

usage: bench/cupy_table.py RESULT.json [--ref tests/data/eig_reference.tsv]

The column eps*lmax/l8 (from the LAPACK reference) says how far dense LAPACK itself can be trusted
on the k-th smallest eigenvalue: its absolute error is about eps*lmax.
"""
import argparse
import json

p = argparse.ArgumentParser()
p.add_argument("json")
p.add_argument("--ref", default="tests/data/eig_reference.tsv")
a = p.parse_args()

ref = {}
for line in open(a.ref):
    if line.startswith("#") or line.startswith("name\t"):
        continue
    name, n, _, which, values = line.rstrip("\n").split("\t")
    ref[(name, which)] = [float(v) for v in values.split(",")]

records = json.load(open(a.json))
head, cases = records[0], records[1:]
print("| matrix | n | ε·λmax/λ₈ | krysp | iterations | time (s) | max eigenvalue error "
      "| CuPy | iterations | time (s) | max eigenvalue error | speed-up |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for c in cases:
    k = c["k"]
    lmax = ref[(c["name"], "largest")][0]
    lk = ref[(c["name"], "smallest")][k - 1]
    kr, cu = c["krysp"], c["cupy"]
    speed = "%.2f×" % c["speedup"] if c.get("speedup") else "-"
    print("| %s | %d | %.0e | %s | %d | %.3f | %.1e | %s | %d | %.3f | %.1e | %s |" % (
        c["name"], c["n"], 2.220446049250313e-16 * lmax / lk, kr["status"], kr["iterations"], kr["time"],
        kr["err"], cu["status"], cu["iterations"], cu["time"], cu["err"], speed))
s = head["summary"]
print()
print("Summary (from the file's header): %d cases; converged: krysp %d, CuPy %d; speed-up over the %d "
      "cases where both converged within 10·tol of LAPACK: geometric mean %.2f×, least %.2f×." % (
          s["cases"], s["krysp_converged"], s["cupy_converged"], s["speedup_cases"], s["speedup_geomean"],
          s["speedup_min"]))
