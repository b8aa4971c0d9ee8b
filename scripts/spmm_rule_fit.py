#!/usr/bin/env python3
"""Checks the SpMM rule's cost model for latency-bound matrices against measured candidates.

usage: scripts/spmm_rule_fit.py RUN.json [RUN2.json ...] [--matrices DIR] [--wave-cost 96]

RUN.json: bench_spmm --json output with tuning (its candidate tables: every candidate timed over
back-to-back calls, kernel version >= 6). The row statistics come from the Matrix Market files
in DIR (default .deps/matrices, where scripts/gpu_check.sh finds them).

For every small matrix and N > 4 it takes the CSC configuration the cost model of
sparse/spmm_select.hpp (kSmallCscMinN) picks -- KS sub-warps per row and columns per lane
minimising ceil(longest / KS) * per_lane + wave_cost * rows * S * KS * tiles / (132 * 2048) --
and prints, per N, the geometric mean of (its candidate time / the fastest candidate) next to the
same for the rule's pick in that run. Where the rule chose a merge-path kernel (long rows), and
where the model's pick was not timed, the rule's time counts for the model too.
"""
import argparse
import json
import math
import os
import sys

WAVE = 132 * 2048


def row_stats(path):
    """(rows, longest row) of a Matrix Market file, symmetric ones expanded."""
    with open(path) as f:
        header = f.readline().lower()
        sym = 'symmetric' in header or 'hermitian' in header
        line = f.readline()
        while line.startswith('%') or not line.strip():
            line = f.readline()
        rows = int(line.split()[0])
        count = [0] * rows
        for line in f:
            p = line.split()
            if len(p) < 2:
                continue
            i, j = int(p[0]) - 1, int(p[1]) - 1
            count[i] += 1
            if sym and i != j:
                count[j] += 1
    return rows, max(count) if count else 0


def pick(rows, longest, N, wave_cost, max_slice=64):
    S = 2
    while S < N and S < 32:
        S *= 2
    best = None
    for per_lane in ((1, 2) if N > S else (1,)):
        tiles = math.ceil(N / (S * per_lane))
        for ks in ((1, 2, 4, 8) if per_lane == 1 else (1,)):
            if ks > 1 and longest / ks > max_slice:
                continue
            cost = math.ceil(longest / ks) * per_lane + wave_cost * rows * S * ks * tiles / WAVE
            if best is None or cost < best[0]:
                best = (cost, 'csc-row/s%d/c%d' % (S, per_lane) + ('/w%d' % ks if ks > 1 else ''))
    return best[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('runs', nargs='+')
    ap.add_argument('--matrices', default='.deps/matrices')
    ap.add_argument("--wave-cost", type=float, default=96)
    a = ap.parse_args()
    stats = {}
    for run in a.runs:
        d = json.load(open(run))
        print('%s: %s, kernel version %s' % (run, d.get('device', '?'), d.get('kernel_version', '?')))
        by_n = {}
        for r in d['results']:
            if r['generated'] or r['N'] <= 4 or not r.get('candidates'):
                continue
            path = os.path.join(a.matrices, r['name'] + '.mtx')
            if not os.path.exists(path):
                continue
            if r['name'] not in stats:
                stats[r['name']] = row_stats(path)
            rows, longest = stats[r['name']]
            if rows * 32 > 4 * WAVE:  # not latency-bound (kLatencyBoundWaves)
                continue
            cands = {c['config']: c['ms'] for c in r['candidates']}
            best = min(cands.values())
            rule = cands.get(r['rule'], r['rule_ms'])
            nnz_balanced = '-nnz/' in r['rule']  # the rule's merge-path picks stay
            model = rule if nnz_balanced else cands.get(pick(rows, longest, r['N'], a.wave_cost), rule)
            by_n.setdefault(r['N'], []).append((rule / best, model / best))
        for N in sorted(by_n):
            v = by_n[N]
            g = lambda k: math.exp(sum(math.log(x[k]) for x in v) / len(v))
            print('  N = %2d: %3d cases, rule %.3fx the fastest candidate, cost model %.3fx' % (N, len(v), g(0), g(1)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
