#!/usr/bin/env python3
"""Before/after table of the benchmarks from JSON files of two builds run in one device call.

usage: bench/before_after.py --before DIR --after DIR [--json OUT] [--label-before X] [--label-after Y]

Each DIR holds what one build's benchmarks wrote: spmv.json, spmm.json, cg.json, block_cg.json and
lobpcg*.json (several LOBPCG files: each case's median over them). Prints one markdown row per
measured quantity: before, after, after/before. Nothing is averaged across different quantities.
"""
import argparse
import glob
import json
import os
import statistics

p = argparse.ArgumentParser()
p.add_argument("--before", required=True)
p.add_argument("--after", required=True)
p.add_argument("--json")
p.add_argument("--label-before", default="before")
p.add_argument("--label-after", default="after")
a = p.parse_args()


def load(d, pattern):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(d, pattern)))]


def quantities(d):
    q = {}  # (benchmark, case, unit) -> [values]
    for r in load(d, "spmv*.json"):
        for m in r["matrices"]:
            q.setdefault(("SpMV", m["name"], "ms"), []).append(m["rule_ms"])
    for r in load(d, "spmm*.json"):
        for m in r["results"]:
            q.setdefault(("SpMM", "%s N=%d" % (m["name"], m["N"]), "ms"), []).append(m["rule_ms"])
    for r in load(d, "cg*.json"):
        for m in r["rows"]:
            for every, ms in m["krysp_ms_per_iter"].items():  # convergence checked every k iterations
                q.setdefault(("CG", "%s %s" % (m["matrix"], every.replace("_", " ")), "ms/iteration"),
                             []).append(ms)
    for r in load(d, "block_cg*.json"):
        for m in r["rows"]:
            q.setdefault(("block CG", "%s s=%d %s" % (m["matrix"], m["s"], m["precond"]), "s"), []).append(
                m["block_seconds"])
    for r in load(d, "lobpcg*.json"):
        for m in r["rows"]:
            if m["matrix"].startswith("warmup"):
                continue
            q.setdefault(("LOBPCG", "%s %s" % (m["matrix"], m["which"]), "ms/iteration"), []).append(
                m["ms_per_iteration"])
    return q


b, af = quantities(a.before), quantities(a.after)
rows = []
print("| benchmark | case | unit | %s | %s | %s/%s |" % (a.label_before, a.label_after, a.label_after, a.label_before))
print("|---|---|---|---|---|---|")
for key in b:
    if key not in af:
        continue
    vb, va = statistics.median(b[key]), statistics.median(af[key])
    rows.append({"benchmark": key[0], "case": key[1], "unit": key[2], "before": vb, "after": va,
                 "runs_before": len(b[key]), "runs_after": len(af[key]), "ratio": va / vb})
    print("| %s | %s | %s | %.4g (%d) | %.4g (%d) | %.3f |" % (key[0], key[1], key[2], vb, len(b[key]), va,
                                                          len(af[key]), va / vb))
if a.json:
    dev = next((r.get("device") for r in load(a.after, "*.json") if r.get("device")), None)
    date = next((r.get("date") for r in load(a.after, "*.json") if r.get("date")), None)
    json.dump({"benchmark": "before_after", "device": dev, "date": date, "before": a.label_before,
               "after": a.label_after, "rows": rows}, open(a.json, "w"), indent=1)
