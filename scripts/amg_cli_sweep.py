#!/usr/bin/env python3
"""Runs `krysp solve M.mtx --precond amg` on every SPD matrix of a MANIFEST.tsv (or on the matrices
named) and writes one CSV row each: exit code, iterations, true relative residual. With --against,
compares each row with an earlier sweep's (exit code, iterations and residual as printed) and exits
1 on a difference: a change meant to keep every decision is checked that way (docs/amg.md).

  scripts/amg_cli_sweep.py --krysp build/krysp --matrices ../shared/matrices --out sweep.csv \\
      [--backend host] [--against old.csv] [-- extra krysp options]

b = A·1 (krysp solve's default), so the printed error is checked too: a run that exits 0 with a
true residual above its rtol is reported, whatever --against says.
"""
import argparse
import csv
import os
import re
import subprocess
import sys


def spd_matrices(folder):
    """Names of the matrices MANIFEST.tsv marks SPD, in its order."""
    with open(os.path.join(folder, "MANIFEST.tsv")) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [r["name"] for r in rows if r.get("spd_per_suitesparse") == "yes"]


def run(krysp, path, backend, extra, rtol):
    cmd = [krysp, "solve", path, "--precond", "amg", "--backend", backend, "--rtol", str(rtol)] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    text = p.stdout + p.stderr
    its = re.search(r"(?:converged|stopped|not converged)\D*?(\d+) iterations", text)
    res = re.search(r"true relative residual \|b-Ax\|/\|b\| = ([0-9.eE+-]+)", text)
    return {"exit": str(p.returncode), "iterations": its.group(1) if its else "",
            "true_relres": res.group(1) if res else ""}


def load(path, backend):
    """An earlier sweep's rows by matrix (those of `backend` where it has a backend column)."""
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#") and not line.startswith('"#')]
    return {r["matrix"]: r for r in csv.DictReader(lines) if r.get("backend", backend) == backend}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--krysp", default="build/krysp")
    ap.add_argument("--matrices", default="../shared/matrices", help="folder with MANIFEST.tsv")
    ap.add_argument("--names", default="", help="comma-separated names instead of every SPD matrix")
    ap.add_argument("--backend", default="host")
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--out", required=True)
    ap.add_argument("--against", default="", help="an earlier sweep's CSV to compare with")
    ap.add_argument("extra", nargs="*", help="more krysp solve options (after --)")
    a = ap.parse_args()
    names = a.names.split(",") if a.names else spd_matrices(a.matrices)
    rows, above = [], []
    for name in names:
        r = run(a.krysp, os.path.join(a.matrices, name + ".mtx"), a.backend, a.extra, a.rtol)
        r["matrix"] = name
        rows.append(r)
        if r["exit"] == "0" and r["true_relres"] and float(r["true_relres"]) > a.rtol:
            above.append(name)
        print(f"{name}: exit {r['exit']}, {r['iterations'] or '-'} iterations, true residual {r['true_relres'] or '-'}",
              flush=True)
    with open(a.out, "w", newline="") as f:
        f.write(f"# krysp solve M.mtx --precond amg --backend {a.backend} --rtol {a.rtol} "
                f"{' '.join(a.extra)} (b = A*1), scripts/amg_cli_sweep.py\n")
        w = csv.DictWriter(f, fieldnames=["matrix", "exit", "iterations", "true_relres"])
        w.writeheader()
        w.writerows(rows)
    status = 0
    if above:
        print("exit 0 above rtol:", ", ".join(above))
        status = 1
    if a.against:
        old = load(a.against, a.backend)
        differ = [r["matrix"] for r in rows if r["matrix"] not in old or
                  any(old[r["matrix"]].get(k) != r[k] for k in ("exit", "iterations", "true_relres"))]
        print(f"against {a.against}: {len(rows) - len(differ)} of {len(rows)} the same"
              + (", differ: " + ", ".join(differ) if differ else ""))
        status = status or (1 if differ else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
