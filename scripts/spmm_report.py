#!/usr/bin/env python3
"""Summary of a bench_spmm JSON file (bench/results/spmm_*.json), and optionally its change
against an earlier one.

  scripts/spmm_report.py RUN.json [--against EARLIER.json] [--worst K] [--graph]

Prints, for N <= 8 and N >= 16 and for the small and the large (generated, >= 20 M nonzeros)
matrices: the geometric-mean speedup of the rule's and the tuned kernel over the best cuSPARSE
algorithm, the cases below 0.85x and 0.5x, the slowest case, and how far the rule's pick is
from the fastest tuning candidate (candidate times come from the plan's tuning, a noisier
measurement than the final timing). Then the K slowest cases. With --against: the same
geometric means of the earlier run, the cases present in both whose speedup changed most, and
the change of the unchanged-kernel cases (those whose rule pick is the same in both runs), which
is the run-to-run noise of the machine rather than a change of the code.
With --graph: the times replayed from CUDA graphs (runs of kernel version >= 7) instead of those
of a stream of launches; graph times vary ~2% between runs, a stream of launches 5-10%.
"""
import argparse
import json
import math
import sys

# The fields a case's figures come from: a stream of launches, or replays from CUDA graphs.
FIELDS = {False: {"rule": "speedup_rule", "tuned": "speedup_tuned", "ms": "rule_ms", "cusparse": "best_cusparse",
                  "cusparse_ms": "best_cusparse_ms"},
          True: {"rule": "speedup_rule_graph", "tuned": "speedup_tuned_graph", "ms": "rule_graph_ms",
                 "cusparse": "best_cusparse_graph", "cusparse_ms": "best_cusparse_graph_ms"}}
F = FIELDS[False]


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def groups(results):
    """(label, predicate) for the four groups of the benchmark's summary."""
    out = []
    for nlabel, ns in (("N<=8", (2, 4, 8)), ("N>=16", (16, 32, 64))):
        for slabel, gen in (("small", False), ("large", True)):
            rows = [r for r in results if r["N"] in ns and bool(r["generated"]) == gen]
            out.append((f"{nlabel} {slabel}", rows))
    return out


def rule_over_best(r):
    """The rule's pick against the fastest candidate, both from the tuning's own timing."""
    cands = {c["config"]: c["ms"] for c in r.get("candidates", [])}
    if not cands or r["rule"] not in cands:
        return None
    return cands[r["rule"]] / min(cands.values())


def summary(results):
    print(f"{'group':<14} {'cases':>5} {'rule':>7} {'tuned':>7} {'<0.85':>6} {'<0.5':>5} {'slowest':>8} "
          f"{'rule/best cand.':>16}")
    for label, rows in groups(results):
        if not rows:
            continue
        sp = [r[F["rule"]] for r in rows]
        gaps = [g for g in (rule_over_best(r) for r in rows) if g]
        print(f"{label:<14} {len(rows):>5} {geomean(sp):>7.3f} {geomean([r[F['tuned']] for r in rows]):>7.3f} "
              f"{sum(s < 0.85 for s in sp):>6} {sum(s < 0.5 for s in sp):>5} {min(sp):>8.2f} "
              f"{geomean(gaps) if gaps else float('nan'):>16.3f}")


def case(r):
    return f"{r['name'][:18]:<18} N={r['N']:<3}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--against")
    ap.add_argument("--worst", type=int, default=10)
    ap.add_argument("--graph", action="store_true", help="times replayed from CUDA graphs")
    a = ap.parse_args()
    global F
    F = FIELDS[a.graph]
    try:
        d = json.load(open(a.run))
        results = d["results"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"spmm_report: cannot read {a.run}: {e}")
    if a.graph and any(F["rule"] not in r for r in results):
        sys.exit(f"spmm_report: {a.run} has no graph timings (bench_spmm of kernel version >= 7 has)")
    print(f"{a.run}: {d.get('device', '?')}, {d.get('date', '?')}, kernel version {d.get('kernel_version', '?')}, "
          f"copy {d.get('copy_bandwidth_gbs', 0):.0f} GB/s, {len(results)} cases")
    summary(results)
    print(f"\nslowest {a.worst} (rule{', graph replays' if a.graph else ''}):")
    for r in sorted(results, key=lambda r: r[F["rule"]])[: a.worst]:
        print(f"  {case(r)} {r['rule']:<24} {r[F['ms']] * 1e3:8.1f} us  cuSPARSE {r[F['cusparse']]:<9} "
              f"{r[F['cusparse_ms']] * 1e3:8.1f} us  {r[F['rule']]:.2f}x (tuned {r[F['tuned']]:.2f}x)")
    if not a.against:
        return
    try:
        old = {(r["name"], r["N"]): r for r in json.load(open(a.against))["results"]}
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"spmm_report: cannot read {a.against}: {e}")
    if a.graph and any(F["rule"] not in r for r in old.values()):
        sys.exit(f"spmm_report: {a.against} has no graph timings")
    print(f"\nagainst {a.against}:")
    summary(list(old.values()))
    both = [(r, old[(r["name"], r["N"])]) for r in results if (r["name"], r["N"]) in old]
    same = [r[F["ms"]] / o[F["ms"]] for r, o in both if r["rule"] == o["rule"]]
    theirs = [r[F["cusparse_ms"]] / o[F["cusparse_ms"]] for r, o in both
              if r[F["cusparse_ms"]] > 0 and o[F["cusparse_ms"]] > 0]
    print(f"\n{len(both)} cases in both; {len(same)} with the same rule pick, whose time changed by "
          f"{geomean(same):.3f}x on the geometric mean (run-to-run noise, or a change of that kernel's code); "
          f"cuSPARSE's best time changed by {geomean(theirs):.3f}x")
    moved = sorted(both, key=lambda p: p[0][F["rule"]] / p[1][F["rule"]])
    for title, part in (("lost most", moved[: a.worst]), ("gained most", moved[::-1][: a.worst])):
        print(f"{title}:")
        for r, o in part:
            print(f"  {case(r)} {o['rule']:<24} {o[F['rule']]:.2f}x -> {r['rule']:<24} {r[F['rule']]:.2f}x")


if __name__ == "__main__":
    main()
