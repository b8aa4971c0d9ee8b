#!/usr/bin/env python3
"""Dense-LAPACK reference eigenvalues for the SPD matrices of the shared SuiteSparse set.

What: for every row of ../shared/matrices/MANIFEST.tsv with spd_per_suitesparse == "yes"
and rows <= --max-rows (default 20000), the 12 smallest and the 12 largest eigenvalues
(all of them when n < 24), written to tests/data/eig_reference.tsv for the C++ tests.

How: scipy.io.mmread (symmetric storage is expanded, pattern entries become 1.0), dense
float64 array, symmetry check (max|A-A^T| / max|A| < 1e-14, else reported and skipped),
then scipy.linalg.eigh(..., eigvals_only=True, subset_by_index=..., driver='evr'), i.e.
LAPACK dsyevr. Penalty rows (diagonal > 1e10 x all other entries; only aft01) are first
deflated exactly via the Schur complement, since dsyevr's absolute error eps*||A|| = 0.2 would
otherwise swamp aft01's small eigenvalues (giving a spurious -0.0576). For n <= 5000 the values are cross-checked against numpy.linalg.eigvalsh
(dsyevd, all eigenvalues); the max difference relative to max|lambda| is printed, not stored.

Output format: '#' comment lines, then the header `name n sha256 which values` (tab
separated), one line per (matrix, which), which in {smallest, largest}; values are
comma-separated repr() floats (shortest round-trip form, i.e. exact), smallest ascending,
largest descending. The file is written atomically; entries of matrices not recomputed in
this run are kept if their sha256 still matches the manifest.

Rerun (Debian: apt-get install python3-numpy python3-scipy):
    nice -n 19 python3 scripts/eig_reference.py                 # everything <= 20000 rows
    nice -n 19 python3 scripts/eig_reference.py --only bodyy6   # recompute a subset, merge
With Debian's reference BLAS, bodyy6 (n=19366, 3 GB dense) takes ~30+ min; an optimized
LAPACK is ~4x faster, e.g. without installing it system-wide:
    apt-get download libopenblas0-pthread && dpkg-deb -x libopenblas0-pthread_*.deb /tmp/ob
    LD_LIBRARY_PATH=/tmp/ob/usr/lib/x86_64-linux-gnu/openblas-pthread python3 scripts/...
"""
import argparse, csv, datetime, os, sys, tempfile, time
from pathlib import Path
import numpy as np, scipy, scipy.io, scipy.linalg, scipy.sparse

ROOT = Path(__file__).resolve().parents[1]
K = 12

def lapack_lib():
    """Name of the LAPACK shared library actually mapped into this process."""
    try:
        libs = {l.split()[-1] for l in open('/proc/self/maps') if 'lapack' in l or 'openblas' in l}
        return ', '.join(sorted(libs)) or 'unknown'
    except OSError:
        return 'unknown'

def asym(A, bs=2048):
    """max|A-A^T| / max|A|, blockwise to avoid a second n x n temporary."""
    m, amax = 0.0, np.abs(A).max()
    for i in range(0, A.shape[0], bs):
        m = max(m, np.abs(A[i:i+bs, :] - A[:, i:i+bs].T).max())
    return m / amax if amax else 0.0

def compute(path, n):
    A = scipy.sparse.coo_matrix(scipy.io.mmread(str(path)), dtype=np.float64)
    off = A.row != A.col
    M = np.abs(A.data[off]).max() if off.any() else 0.0  # max |off-diagonal entry|
    A = A.toarray(order='F')
    assert A.shape == (n, n), A.shape
    r = asym(A)
    if not r < 1e-14:
        return None, f'not symmetric: max|A-A^T|/max|A| = {r:.3e}', ''
    # Penalty rows (diagonal > 1e10 x every other |entry|, e.g. aft01's 1e15 Dirichlet row):
    # dsyevr's absolute error eps*||A|| would swamp the small eigenvalues, so deflate them.
    # eig(A) = eig(A_bb) U eig(S), S = A_kk - A_kb A_bb^-1 A_bk the Schur complement, up to
    # corrections ~|A_kb|^2 * lambda / d^2 that are far below rounding.
    d = np.abs(np.diag(A))
    big = np.where(d > 1e10 * max(M, d[d <= 1e10 * M].max(initial=0.0)))[0]
    note, extra = '', np.empty(0)
    if big.size:
        keep = np.setdiff1d(np.arange(n), big)
        Abb, Akb = A[np.ix_(big, big)], A[np.ix_(keep, big)]
        extra = np.linalg.eigvalsh(Abb)
        A = np.asfortranarray(A[np.ix_(keep, keep)] - Akb @ np.linalg.solve(Abb, Akb.T))
        note = (f'penalty row(s) {",".join(map(str, big + 1))} (1-based; diag {d[big].min():.1e}) '
                f'deflated by Schur complement')
    m, k = A.shape[0], min(K, n)
    km = min(k, m)
    check = None
    if n <= 5000:
        ref = np.linalg.eigvalsh(A)  # dsyevd, all eigenvalues
        check = np.concatenate([ref[:km], ref[m - km:]])
    lo = scipy.linalg.eigh(A, eigvals_only=True, subset_by_index=[0, km - 1], driver='evr')
    hi = scipy.linalg.eigh(A, eigvals_only=True, subset_by_index=[m - km, m - 1], driver='evr',
                           overwrite_a=True)
    msg = f'asym {r:.1e}'
    if check is not None:
        dd = np.abs(np.concatenate([lo, hi]) - check).max() / np.abs(check).max()
        msg += f', max rel diff evr vs eigvalsh (dsyevd) = {dd:.2e}'
    msg += f', eps*max|l|/lmin = {np.finfo(float).eps * max(abs(lo[0]), abs(hi[-1])) / abs(lo[0]):.1e}'
    lo = np.sort(np.concatenate([lo, extra]))[:k]
    hi = np.sort(np.concatenate([hi, extra]))[::-1][:k]
    if note:
        msg += '; ' + note
    return (lo, hi), msg, note

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--only', help='comma-separated matrix names to (re)compute')
    ap.add_argument('--max-rows', type=int, default=20000)
    ap.add_argument('--matrices', default=str(ROOT.parent / 'shared' / 'matrices'))
    ap.add_argument('--out', default=str(ROOT / 'tests' / 'data' / 'eig_reference.tsv'))
    a = ap.parse_args()
    mdir, out = Path(a.matrices), Path(a.out)
    with open(mdir / 'MANIFEST.tsv', newline='') as f:
        rows = [r for r in csv.DictReader(f, delimiter='\t')
                if r['spd_per_suitesparse'] == 'yes' and int(r['rows']) <= a.max_rows]
    sha = {r['name']: r['sha256'] for r in rows}
    only = set(a.only.split(',')) if a.only else None
    if only and only - set(sha):
        sys.exit(f'not SPD / too large / unknown: {sorted(only - set(sha))}')

    lines, notes = {}, {}  # keep still-valid entries (and their '# note' lines) of an existing file
    if out.exists():
        for l in out.read_text().splitlines():
            p = l.split('\t')
            if l.startswith('# note '):
                nm, _, txt = l[7:].partition(': ')
                notes[nm] = txt
            if l.startswith('#') or p[0] == 'name' or len(p) != 5:
                continue
            if sha.get(p[0]) == p[2]:
                lines[(p[0], p[3])] = l

    t0 = time.time()
    for r in rows:
        name, n = r['name'], int(r['rows'])
        if only and name not in only:
            continue
        t = time.time()
        res, msg, note = compute(mdir / f'{name}.mtx', n)
        notes.pop(name, None)
        if note:
            notes[name] = note
        if res is None:
            print(f'SKIP {name}: {msg}', flush=True)
            lines.pop((name, 'smallest'), None); lines.pop((name, 'largest'), None)
            continue
        for which, v in zip(('smallest', 'largest'), res):
            lines[(name, which)] = '\t'.join(
                [name, str(n), r['sha256'], which, ','.join(repr(float(x)) for x in v)])
        lo, hi = res
        print(f'{name:16s} n={n:6d} lmin={lo[0]:.6e} l8={lo[min(7, len(lo)-1)]:.6e} '
              f'lmax={hi[0]:.6e} cond={hi[0]/lo[0]:.3e} {msg} [{time.time()-t:.1f}s]', flush=True)
        if lo[0] <= 0:
            print(f'WARNING {name}: lambda_min = {lo[0]!r} <= 0 (not positive definite)', flush=True)

    hdr = [f'# generated by scripts/eig_reference.py on {datetime.datetime.now().isoformat(timespec="seconds")}',
           f'# numpy {np.__version__}, scipy {scipy.__version__}; LAPACK dsyevr via '
           f'scipy.linalg.eigh(driver="evr", subset_by_index); library: {lapack_lib()}',
           '# source = ../shared/matrices (SuiteSparse), MANIFEST.tsv rows with spd_per_suitesparse=yes',
           f'# {K} smallest (ascending) and {K} largest (descending) eigenvalues, repr() floats',
           '# accuracy: dsyevr absolute error ~ eps*max|lambda|, i.e. relative ~ eps*cond for lambda_min',
           *[f'# note {nm}: {notes[nm]}' for nm in sha if nm in notes and (nm, 'smallest') in lines],
           'name\tn\tsha256\twhich\tvalues']
    body = [lines[(r['name'], w)] for r in rows for w in ('smallest', 'largest')
            if (r['name'], w) in lines]
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix='.eig_reference.', suffix='.tmp')
    with os.fdopen(fd, 'w') as f:
        f.write('\n'.join(hdr + body) + '\n')
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    print(f'wrote {out} ({len(body)} lines), total {time.time()-t0:.1f}s')

if __name__ == '__main__':
    main()
