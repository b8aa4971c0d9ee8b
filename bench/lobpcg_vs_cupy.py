#!/usr/bin/env python3
"""krysp LOBPCG against CuPy's cupyx.scipy.sparse.linalg.lobpcg under the same stopping test.

usage (from the repository root): bench/lobpcg_vs_cupy.py [--krysp build/krysp] [--ref tests/data/eig_reference.tsv]
    [--matrices ../shared/matrices] [--names a,b,c] [--which smallest|largest|both] [--k 8] [--tol 1e-6]
    [--maxiter 5000] [--reps 3] [--backend cuda|host] [--krysp-args "..."] [--json OUT]

Stopping test, both sides: |A x_j - l_j x_j|_2 <= tau for every returned pair, |x_j| = 1, with
tau = tol * min_j |l_j^ref| over the k wanted dense-LAPACK reference eigenvalues (--ref), which
implies |r_j| <= tol |l_j| for every pair. krysp gets `--conv abs --tol tau`, CuPy `tol=tau`.

krysp: `KRYSP eigs A.mtx -k K --which W --conv abs --tol tau --max-iters MAXITER --backend B` (its
default --precond auto; more options via --krysp-args). One untimed warm-up run (SpMM tuning cache,
GPU start-up), then --reps runs: time = median of `krysp: solve T s` (includes the missed-eigenvalue
check), the rest from the last run. Converged = exit code 0 (converged and verified).
CuPy (skipped with a note when it cannot be imported, e.g. --backend host on a machine without it):
CSR float64 on the GPU via cupy_lobpcg.read_mtx (SciPy's reader when present), X0 standard normal n x k (numpy seed 0), M = Chebyshev
degree 4 on D^-1 A (cupy_lobpcg.chebyshev_operator, built untimed) for smallest, none for largest.
One untimed warm-up call (maxiter=2), then --reps timed calls synchronised before and after; time =
median, iterations = len(residual history) - 1. Converged = the returned pairs' true residuals
|A x - l x|/|x|, recomputed on the GPU, all <= 1.01 tau and no "not reaching the requested
tolerance" warning. An exception is recorded as status "error: ...".

Error, both sides: max_j |l_j - l_j^ref| / |l_j^ref| (ascending for smallest, descending for
largest). Speed-up = cupy time / krysp time where both converged. --json OUT: a list, a header record
(date, device, commit, settings, summary: converged counts, geometric mean and minimum speed-up over
the cases where both converged with both errors <= 10 tol), then one record per case.
"""
import argparse
import datetime
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
RE_STATUS = re.compile(r"^krysp: (.+?) after (\d+) iterations? \(block size")
RE_ROW = re.compile(r"^\s*(\d+)\s+(%s)\s+(%s)\s+(%s)(\s+\(not converged\))?\s*$" % (NUM, NUM, NUM))
RE_SOLVE = re.compile(r"^krysp: solve (%s) s\b" % NUM)
RE_TEXT = re.compile(r"^krysp: (missed-eigenvalue check|basis repairs): (.*)$")
KNOWN = re.compile(r"^(krysp: (.+: \d+ x \d+, \d+ nonzeros|backend |LOBPCG, )|\s*iter\s+\d+|\s+i\s+eigenvalue)")


def read_ref(path):
    ref, names = {}, []
    with open(path) as fh:
        for line in fh:
            if line.startswith("#") or not line.strip() or line.startswith("name\t"):
                continue
            name, n, _sha, which, values = line.rstrip("\n").split("\t")
            ref[(name, which)] = (int(n), [float(v) for v in values.split(",")])
            if name not in names:
                names.append(name)
    return ref, names


def rel_err(vals, refv, k, which):
    if len(vals) < k:
        return float("nan")
    vals = sorted(vals, reverse=(which == "largest"))[:k]
    return max(abs(v - r) / abs(r) for v, r in zip(vals, refv[:k]))


def run_krysp_once(args, mtx, which, tau):
    cmd = [args.krysp, "eigs", mtx, "-k", str(args.k), "--which", which, "--conv", "abs",
           "--tol", "%.17g" % tau, "--max-iters", str(args.maxiter), "--backend", args.backend]
    cmd += shlex.split(args.krysp_args)
    for _ in range(60):  # the binary may be mid-rebuild: wait for it (5 minutes at most)
        try:
            if os.access(args.krysp, os.X_OK):
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode not in (126, 127):
                    break
        except OSError:
            pass
        time.sleep(5)
    else:
        return {"status": "error: cannot run %s" % args.krysp}
    r = {"rc": p.returncode, "status": None, "iterations": None, "time": None, "eigenvalues": [], "unparsed": []}
    for line in p.stdout.splitlines():
        if m := RE_STATUS.match(line):
            r["status"], r["iterations"] = m.group(1), int(m.group(2))
        elif m := RE_ROW.match(line):
            r["eigenvalues"].append(float(m.group(2)))
        elif m := RE_SOLVE.match(line):
            r["time"] = float(m.group(1))
        elif m := RE_TEXT.match(line):
            r["check" if m.group(1).startswith("missed") else "repairs"] = m.group(2)
        elif line.strip() and not KNOWN.match(line):
            r["unparsed"].append(line)
    if p.returncode not in (0, 1) or r["status"] is None:
        tail = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or [""])[-1]
        r["status"] = "error: rc %d: %s" % (p.returncode, tail)
    elif p.returncode == 1 and r["status"] == "converged":
        r["status"] = "unverified"
    return r


def run_krysp(args, mtx, which, tau):
    run_krysp_once(args, mtx, which, tau)  # warm-up: SpMM tuning cache, GPU start-up
    runs = [run_krysp_once(args, mtx, which, tau) for _ in range(args.reps)]
    r = runs[-1]
    times = [x["time"] for x in runs if x.get("time") is not None]
    r["time"] = float(np.median(times)) if times else None
    r["converged"] = r.get("rc") == 0
    return r


def run_cupy(gpu, A, which, k, tau, maxiter, reps):
    cp, lobpcg, M, largest = gpu["cp"], gpu["lobpcg"], None, which == "largest"
    X0 = cp.asarray(np.random.default_rng(0).standard_normal((A.shape[0], k)))
    r = {"status": None, "converged": False, "iterations": None, "time": None, "err": None, "max_residual": None,
         "eigenvalues": []}
    try:
        if which == "smallest":
            M = gpu["chebyshev_operator"](A, cp, gpu["splinalg"], 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                lobpcg(A, X0.copy(), M=M, tol=tau, maxiter=2, largest=largest)  # warm-up
            except Exception:
                pass
        times = []
        for _ in range(reps):
            with warnings.catch_warnings(record=True) as wl:
                warnings.simplefilter("always")
                cp.cuda.Device().synchronize()
                t0 = time.perf_counter()
                w, X, hist = lobpcg(A, X0.copy(), M=M, tol=tau, maxiter=maxiter, largest=largest,
                                    retResidualNormsHistory=True)
                cp.cuda.Device().synchronize()
                times.append(time.perf_counter() - t0)
        R = A @ X - X * w[None, :]
        res = cp.asnumpy(cp.linalg.norm(R, axis=0) / cp.linalg.norm(X, axis=0))
        warned = any("toleran" in str(x.message) or "not reach" in str(x.message) for x in wl)
        r["converged"] = bool(np.all(res <= 1.01 * tau)) and not warned
        r["status"] = "converged" if r["converged"] else ("not converged" + (" (warning)" if warned else ""))
        r["iterations"] = min(max(0, len(hist) - 1), maxiter)  # SciPy-style history may run 1-2 over
        r["time"] = float(np.median(times))
        r["eigenvalues"] = cp.asnumpy(w).tolist()
        r["max_residual"] = float(res.max())
    except Exception as e:
        r["status"], r["converged"] = "error: %s" % (str(e).splitlines() or [type(e).__name__])[0], False
    return r


def load_gpu():
    try:
        import cupy as cp
        import cupyx.scipy.sparse as csp
        import cupyx.scipy.sparse.linalg as splinalg
        sys.path.insert(0, HERE)
        from cupy_lobpcg import chebyshev_operator, read_mtx
        cp.cuda.runtime.getDeviceCount()
        return dict(cp=cp, csp=csp, splinalg=splinalg, lobpcg=splinalg.lobpcg, chebyshev_operator=chebyshev_operator,
                    read_mtx=read_mtx)
    except Exception as e:
        print("note: CuPy not available (%s: %s): the CuPy side is skipped" % (type(e).__name__, e))
        return None


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=HERE).stdout.strip().splitlines()[0]
    except Exception:
        return None


def fmt(x, spec):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--krysp", default="build/krysp")
    p.add_argument("--ref", default="tests/data/eig_reference.tsv")
    p.add_argument("--matrices", default="../shared/matrices")
    p.add_argument("--names", default=None)
    p.add_argument("--which", choices=["smallest", "largest", "both"], default="smallest")
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--tol", type=float, default=1e-6)
    p.add_argument("--maxiter", type=int, default=5000)
    p.add_argument("--reps", type=int, default=3, help="timed runs per side and case (median)")
    p.add_argument("--backend", default="cuda", help="krysp --backend (host: test without a GPU)")
    p.add_argument("--krysp-args", default="", help="extra krysp eigs options, e.g. '--precond chebyshev'")
    p.add_argument("--json")
    args = p.parse_args()
    ref, all_names = read_ref(args.ref)
    names = args.names.split(",") if args.names else all_names
    whiches = ["smallest", "largest"] if args.which == "both" else [args.which]
    gpu = load_gpu()
    row = "%-14s %8s %-8s %9s | %-13.13s %6s %9s %8s | %-13.13s %6s %9s %8s | %7s"
    hdr = row % ("name", "n", "which", "tau", "krysp", "iters", "time[s]", "err", "cupy", "iters", "time[s]", "err",
                 "speedup")
    print(hdr + "\n" + "-" * len(hdr))
    recs = []
    for name in names:
        mtx, A = os.path.join(args.matrices, name + ".mtx"), None
        for which in whiches:
            n, refv = ref.get((name, which), (0, []))
            if not os.path.exists(mtx) or args.k > len(refv):
                print("note: %s %s skipped: no %s or fewer than k reference values" % (name, which, mtx))
                continue
            k = args.k
            tau = args.tol * min(abs(v) for v in refv[:k])
            kr = run_krysp(args, mtx, which, tau)
            kr["err"] = rel_err(kr.get("eigenvalues", []), refv, k, which)
            for line in kr.get("unparsed", []):
                print("note: unparsed krysp line: %r" % line, file=sys.stderr)
            cu, c = None, {}
            if gpu is not None:
                if A is None:
                    nr, nc, r, c, v = gpu["read_mtx"](mtx)
                    cp = gpu["cp"]
                    A = gpu["csp"].coo_matrix((cp.asarray(v), (cp.asarray(r), cp.asarray(c))), shape=(nr, nc)).tocsr()
                    A.sum_duplicates()
                cu = c = run_cupy(gpu, A, which, k, tau, args.maxiter, args.reps)
                cu["err"] = rel_err(cu["eigenvalues"], refv, k, which)
            both = cu is not None and kr["converged"] and cu["converged"] and kr["time"] and cu["time"]
            speedup = cu["time"] / kr["time"] if both else None
            print(row % (name, n, which, "%.3g" % tau, kr["status"], fmt(kr.get("iterations"), "d"),
                         fmt(kr.get("time"), ".4f"), fmt(kr["err"], ".1e"), c.get("status", "skipped"),
                         fmt(c.get("iterations"), "d"), fmt(c.get("time"), ".4f"), fmt(c.get("err"), ".1e"),
                         fmt(speedup, ".2f")), flush=True)
            recs.append({"type": "case", "name": name, "n": n, "which": which, "k": k, "tau": tau,
                         "krysp": {key: kr.get(key) for key in ("status", "rc", "converged", "iterations", "time",
                                                                "err", "check", "repairs", "eigenvalues", "unparsed")},
                         "cupy": cu, "speedup": speedup})
    good = [r["speedup"] for r in recs if r["speedup"] is not None
            and r["krysp"]["err"] <= 10 * args.tol and r["cupy"]["err"] <= 10 * args.tol]
    summary = {"cases": len(recs), "krysp_converged": sum(bool(r["krysp"]["converged"]) for r in recs),
               "cupy_converged": sum(bool(r["cupy"] and r["cupy"]["converged"]) for r in recs),
               "speedup_cases": len(good),
               "speedup_geomean": float(np.exp(np.mean(np.log(good)))) if good else None,
               "speedup_min": min(good) if good else None}
    print("summary: %d cases; converged: krysp %d, cupy %d%s; speed-up over %d accurate common cases: "
          "geomean %s, min %s" % (summary["cases"], summary["krysp_converged"], summary["cupy_converged"],
                                  "" if gpu else " (skipped)", len(good), fmt(summary["speedup_geomean"], ".2f"),
                                  fmt(summary["speedup_min"], ".2f")))
    if args.json:
        header = {"type": "header", "benchmark": "lobpcg_vs_cupy",
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "device": sh(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]) or "host",
                  "backend": args.backend,
                  "krysp_commit": os.environ.get("KRYSP_COMMIT") or sh(["git", "rev-parse", "--short", "HEAD"]),
                  "cupy": gpu["cp"].__version__ if gpu else None, "tol": args.tol, "k": args.k,
                  "maxiter": args.maxiter, "reps": args.reps, "krysp_args": args.krysp_args, "summary": summary}
        with open(args.json, "w") as fh:
            json.dump([header] + recs, fh, indent=1)
        print("wrote", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
