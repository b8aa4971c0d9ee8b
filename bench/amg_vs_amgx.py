#!/usr/bin/env python3
"""krysp's AMG-CG (bench_amg --json) beside NVIDIA AmgX's PCG + aggregation AMG on the same matrices.

usage: bench/amg_vs_amgx.py KRYSP.json AMGX.log [--json OUT] [--config PCG_AGGREGATION_JACOBI]

KRYSP.json: bench_amg's output (CG to rtol 1e-8, b = ones, x0 = 0; true residual recomputed).
AMGX.log: the output of ../shared/peers/amgx/build_and_run.sh run DIR/*.mtx on the matrices bench_amg
wrote with --write-mtx DIR, in the same device call (AmgX at rtol 1e-8 relative to the initial
residual, x0 = 0, b = ones; "-r 2": set-up and solve twice, the second run is taken). AmgX's
residual is the one it monitors ("Total Reduction in Residual"); krysp's is b - A*x recomputed.

Prints a markdown table; --json writes the pairs with the device and date of the krysp file.
"""
import argparse
import json
import re

p = argparse.ArgumentParser()
p.add_argument("krysp")
p.add_argument("amgx")
p.add_argument("--json")
p.add_argument("--config", default="PCG_AGGREGATION_JACOBI")
a = p.parse_args()

kr = json.load(open(a.krysp))


def amgx_runs(path, config):
    """{matrix name: [runs]} for one configuration; a run: iterations, reduction, setup, solve, converged."""
    out, cur = {}, None
    for line in open(path):
        m = re.match(r"== amgx (\S+?)(?:\.general)?\.mtx (\S+)", line)
        if m:
            cur = out.setdefault(m.group(1), []) if m.group(2) == config else None
            if cur is not None:
                cur.append({"converged": True})
            continue
        if cur is None or not cur:
            continue
        r = cur[-1]
        if "Total Iterations" in line:
            if "iterations" in r:  # the next repetition of the same file
                cur.append({"converged": True})
                r = cur[-1]
            r["iterations"] = int(line.split(":")[1])
        elif "Total Reduction in Residual" in line:
            r["reduction"] = float(line.split(":")[1])
        elif re.search(r"\bsetup:", line):
            r["setup_s"] = float(re.search(r"setup:\s*([0-9.eE+-]+)", line).group(1))
        elif re.search(r"\bsolve:", line):
            r["solve_s"] = float(re.search(r"solve:\s*([0-9.eE+-]+)", line).group(1))
        elif "Did Not Converge" in line or "Diverged" in line or "Failed" in line:
            r["converged"] = False
    return out


amgx = amgx_runs(a.amgx, a.config)
rows = []


def f(v, fmt):
    return fmt % v if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"


print("| matrix | n | Jacobi-CG its | Chebyshev-CG its / total s | AMG-CG its / set-up s / total s "
      "| true relres | AMG its ÷ Jacobi's | vs Chebyshev | AmgX its / set-up s / total s | AmgX reduction | vs AmgX |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for prob in kr["matrices"]:
    runs = {r["label"]: r for r in prob["runs"]}
    k, jac, che = runs.get("amg"), runs.get("jacobi"), runs.get("chebyshev")
    if k is None:
        continue
    ax = amgx.get(prob["matrix"], [])
    x = ax[-1] if ax else None
    conv = lambda r: r is not None and r.get("status") == "converged"
    kt = k.get("total_s") if conv(k) else None
    xt = (x.get("setup_s", 0) + x.get("solve_s", 0)) if x and x.get("converged") and "solve_s" in x else None
    vs_amgx = xt / kt if kt and xt else None
    vs_cheb = che["total_s"] / kt if kt and conv(che) else None
    it_ratio = k["iterations"] / jac["iterations"] if conv(k) and conv(jac) else None
    rows.append({"matrix": prob["matrix"], "n": prob["n"], "krysp": runs, "amgx": x, "amg_over_jacobi_iterations": it_ratio,
                 "speedup_vs_chebyshev": vs_cheb, "speedup_vs_amgx": vs_amgx})
    st = lambda r: "" if conv(r) else " (%s)" % (r or {}).get("status", "not run")
    print("| %s | %d | %s%s | %s / %s%s | %s / %s / %s%s | %s | %s | %s | %s | %s | %s |" % (
        prob["matrix"], prob["n"], f(jac and jac.get("iterations"), "%d"), st(jac),
        f(che and che.get("iterations"), "%d"), f(che and che.get("total_s"), "%.3f"), st(che),
        f(k.get("iterations"), "%d"), f(k.get("setup_s"), "%.3f"), f(k.get("total_s"), "%.3f"), st(k),
        f(k.get("true_relres"), "%.1e"), f(it_ratio, "%.3f"), f(vs_cheb, "%.2f×"),
        ("%s / %s / %s%s" % (f(x.get("iterations"), "%d"), f(x.get("setup_s"), "%.3f"), f(xt, "%.3f"),
                             "" if x.get("converged") else " (not converged)")) if x else "not run",
        f(x and x.get("reduction"), "%.1e"), f(vs_amgx, "%.2f×")))
if a.json:
    json.dump({"benchmark": "amg_vs_amgx", "device": kr.get("device"), "date": kr.get("date"),
               "amgx_config": a.config, "rows": rows}, open(a.json, "w"), indent=1)
