#!/usr/bin/env python3
"""Checks the SpMM rule's cost models for latency-bound matrices against measured candidates.

usage: scripts/spmm_rule_fit.py RUN.json [RUN2.json ...] [--matrices DIR] [--wave-cost 96]
                                [--two-column-chain 1.5] [--vdl] [--vdl-wide-waves 0.75]
                                [--vdl-wave-cost 10]

RUN.json: bench_spmm --json output with tuning (its candidate tables: every candidate timed over
back-to-back calls, kernel version >= 6). The row statistics come from the Matrix Market files
in DIR (default .deps/matrices, where scripts/gpu_check.sh finds them).

Default: for every small matrix and N > 4 it takes the CSC configuration the cost model of
sparse/spmm_select.hpp (SpmmRuleParams::small_csc_min_n, spmm_small_csc_rule) picks -- KS sub-warps per row with
one column a lane, or two columns a lane with S lanes above S columns or S / 2 lanes from S = 16,
minimising ceil(longest / KS) * (two_column_chain if two columns) + wave_cost * rows * lanes * KS
* tiles / (132 * 2048) -- and prints, per N, the geometric mean of (its candidate time / the
fastest candidate) next to the same for the rule's pick in that run.

--vdl: the same for N <= 4 and the VDL row sub-warp of spmm_small_vdl_subwarp: 32 lanes while
rows * 32 <= vdl_wide_waves waves, else the S minimising ceil(longest / S) + vdl_wave_cost *
rows * S / (132 * 2048) (one column lane: N <= 4 in fp64).

Where the rule chose a merge-path kernel or cut long rows (long_row), and where the model's pick
was not timed, the rule's time counts for the model too; the count of untimed picks is printed.
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


def pick(rows, longest, N, wave_cost, two_column_chain, max_slice=64):
    S = 2
    while S < N and S < 32:
        S *= 2
    opts = []
    for ks in (1, 2, 4, 8):
        if ks > 1 and longest / ks > max_slice:
            continue
        cost = math.ceil(longest / ks) + wave_cost * rows * S * ks * math.ceil(N / S) / WAVE
        opts.append((cost, 'csc-row/s%d/c1' % S + ('/w%d' % ks if ks > 1 else '')))
    if N > S or S >= 16:
        lanes = S if N > S else S // 2
        cost = longest * two_column_chain + wave_cost * rows * lanes * math.ceil(N / (2 * lanes)) / WAVE
        opts.append((cost, 'csc-row/s%d/c2' % lanes))
    return min(opts, key=lambda o: o[0])[1]  # the first of equal costs, as the C++ rule


def pick_vdl(rows, longest, rule, wide_waves, wave_cost):
    if rows * 32 <= wide_waves * WAVE:
        S = 32
    else:
        S = min((math.ceil(longest / s) + wave_cost * rows * s / WAVE, s) for s in (2, 4, 8, 16, 32))[1]
    return 'vdl-row/s%d/' % S + '/'.join(rule.split('/')[2:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('runs', nargs='+')
    ap.add_argument('--matrices', default='.deps/matrices')
    ap.add_argument('--wave-cost', type=float, default=96)
    ap.add_argument('--two-column-chain', type=float, default=1.5)
    ap.add_argument('--vdl', action='store_true')
    ap.add_argument('--vdl-wide-waves', type=float, default=0.75)
    ap.add_argument('--vdl-wave-cost', type=float, default=10)
    a = ap.parse_args()
    stats = {}
    for run in a.runs:
        d = json.load(open(run))
        print('%s: %s, kernel version %s' % (run, d.get('device', '?'), d.get('kernel_version', '?')))
        by_n, untimed = {}, 0
        for r in d['results']:
            if r['generated'] or (r['N'] > 4) == a.vdl or not r.get('candidates'):
                continue
            path = os.path.join(a.matrices, r['name'] + '.mtx')
            if not os.path.exists(path):
                continue
            if r['name'] not in stats:
                stats[r['name']] = row_stats(path)
            rows, longest = stats[r['name']]
            if rows * 32 > 4 * WAVE:  # not latency-bound (SpmmRuleParams::latency_bound_waves)
                continue
            if a.vdl and not r['rule'].startswith('vdl-row'):
                continue
            cands = {c['config']: c['ms'] for c in r['candidates']}
            best = min(cands.values())
            rule = cands.get(r['rule'], r['rule_ms'])
            if '-nnz/' in r['rule'] or '/l' in r['rule']:  # the rule's merge-path and long-row picks stay
                model = rule
            else:
                mine = (pick_vdl(rows, longest, r['rule'], a.vdl_wide_waves, a.vdl_wave_cost) if a.vdl else
                        pick(rows, longest, r['N'], a.wave_cost, a.two_column_chain))
                untimed += mine not in cands
                model = cands.get(mine, rule)
            by_n.setdefault(r['N'], []).append((rule / best, model / best))
        for N in sorted(by_n):
            v = by_n[N]
            g = lambda k: math.exp(sum(math.log(x[k]) for x in v) / len(v))
            print('  N = %2d: %3d cases, rule %.3fx the fastest candidate, cost model %.3fx' % (N, len(v), g(0), g(1)))
        print('  model picks not timed (the rule\'s time counted): %d' % untimed)
    return 0


if __name__ == '__main__':
    sys.exit(main())
