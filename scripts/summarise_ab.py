#!/usr/bin/env python3
"""Summarises scripts/bench_amg_ab.sh's rounds: every run of both builds, and per problem and
preconditioner the medians over the rounds of set-up, solve and total time, with each other
preconditioner's median total over AMG's in the same build (e.g. chebyshev_over_amg). Prints a
table, writes JSON.

  scripts/summarise_ab.py DIR ROUNDS OLD_NAME NEW_NAME OUT.json

DIR holds s_old_rN.json and s_dev_rN.json (bench_amg --json) for N = 1 .. ROUNDS.
"""
import json
import os
import statistics
import sys


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    src, rounds, old, new, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    meta, problems = None, {}
    for tag, name in (("old", old), ("dev", new)):
        for r in range(1, rounds + 1):
            with open(os.path.join(src, f"s_{tag}_r{r}.json")) as f:
                run = json.load(f)
            meta = meta or {k: run.get(k) for k in ("device", "date", "rtol", "rhs", "x0", "reps", "setup_reps")}
            for m in run["matrices"]:
                p = problems.setdefault(m["matrix"].split("/")[-1].removesuffix(".mtx"),
                                        {"n": m["n"], "nnz": m["nnz"], "runs": []})
                for x in m["runs"]:
                    row = {k: x[k] for k in x if k != "label"}
                    row.update({"build": name, "round": r, "kind": x["label"].split(" ")[0]})
                    p["runs"].append(row)
    for name_, p in problems.items():
        med = {}
        for build in (old, new):
            for label in dict.fromkeys(x["kind"] for x in p["runs"]):
                xs = [x for x in p["runs"] if x["build"] == build and x["kind"] == label and "total_s" in x]
                if xs:
                    med.setdefault(build, {})[label] = {
                        k: statistics.median(x[k] for x in xs) for k in ("setup_s", "solve_s", "total_s")}
                    med[build][label]["iterations"] = sorted({x["iterations"] for x in xs})
            per = med.get(build, {})
            for label in [k for k in per if k != "amg"]:
                if "amg" in per:
                    per[label + "_over_amg"] = per[label]["total_s"] / per["amg"]["total_s"]
        p["medians_over_rounds"] = med
    summary = dict(meta or {})
    summary.update({"benchmark": "scripts/bench_amg_ab.sh: bench_amg of two builds run alternately in one call",
                    "builds": {"old": old, "new": new}, "rounds": rounds, "problems": problems})
    with open(out, "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{'problem':<22} {'precond':<12} {'build':<10} {'setup ms':>9} {'total ms':>9}  iterations")
    for name_, p in problems.items():
        for build, per in p["medians_over_rounds"].items():
            for label, v in per.items():
                if not isinstance(v, dict):
                    print(f"{name_:<22} {label:<12} {build:<10} {v:9.2f}")
                    continue
                print(f"{name_:<22} {label:<12} {build:<10} {v['setup_s'] * 1e3:9.2f} {v['total_s'] * 1e3:9.2f}  "
                      f"{v['iterations']}")
    print("wrote", out)


if __name__ == "__main__":
    main()
