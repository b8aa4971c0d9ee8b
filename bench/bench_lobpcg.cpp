// LOBPCG on the GPU: k = 8 smallest and largest eigenpairs at tol 1e-6 of generated Laplacians
// (2-D 1024^2 = 1,048,576 rows, 3-D 100^3 = 1,000,000 rows) and of given Matrix Market files:
// wall time, iterations, converged. bench/cupy_lobpcg.py runs CuPy's lobpcg on the same matrices.
//
// usage: bench_lobpcg [--quick] [--k 8] [--tol 1e-6] [--max-iters 10000] [--reps 1]
//                     [--precond auto|none|jacobi|chebyshev|amg] [--backend cuda|host] [--json out.json] [--profile]
//                     [A.mtx ...]
//   --quick: 2-D 256^2 and 3-D 40^3 instead. --no-generated: only the given files.
//   --profile: each measured solve prints its phase profile to stderr (EigOptions::profile; the
//   device is synchronised around every phase, so the times of profiled runs are inflated).
//   precond auto = what `krysp eigs --precond auto` does (choose_auto_preconditioner): for the
//   smallest, 8 inner PCG steps over Chebyshev; for the largest none, or from kSpectralFlipMinRows
//   rows Chebyshev on σI − A. The others apply that preconditioner directly (no inner solve).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "krysp/bench/bench_util.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/sparse/generators.hpp"

using namespace krysp;
using bench::json_escape;
using bench::median;

namespace {

struct Row {
  std::string matrix, which, precond, status, spmm;
  index_t n = 0, nnz = 0, k = 0, block = 0, iterations = 0;
  bool converged = false;
  double setup_s = 0, solve_s = 0, total_s = 0, ms_per_iter = 0, max_relres = 0;
  index_t p_restarts = 0, svqb = 0, dropped = 0;
  std::vector<double> eigenvalues;
};

Row measure(const std::string& name, const CsrMatrix<double>& A, EigWhich which, const std::string& precond,
            index_t k, double tol, index_t max_iters, int reps, Backend backend, bool profile = false) {
  EigOptions o;
  o.backend = backend;
  o.lobpcg.k = k;
  o.lobpcg.which = which;
  o.lobpcg.tol = tol;
  o.lobpcg.max_iters = max_iters;
  // auto: what `krysp eigs --precond auto` does (choose_auto_preconditioner: the inner PCG solve
  // over Chebyshev for the smallest pairs; none, or Chebyshev on σI − A, for the largest).
  if (precond == "auto") choose_auto_preconditioner(o, A, nullptr);
  else o.precond.kind = parse_precond(precond);
  o.profile = profile;
  o.check_symmetry = false;  // known symmetric (generated, or SuiteSparse symmetric files); CuPy checks nothing either
  Row row;
  row.matrix = name;
  row.which = to_string(which);
  row.n = A.rows();
  row.nnz = A.nnz();
  row.k = k;
  std::vector<double> setup, solve;
  for (int r = 0; r < reps; ++r) {
    const EigReport rep = eigensolve(A, nullptr, o);
    setup.push_back(rep.setup_seconds);
    solve.push_back(rep.solve_seconds);
    row.iterations = rep.iterations;
    row.converged = rep.converged();
    row.status = to_string(rep.status);
    row.block = rep.block_size;
    row.spmm = rep.spmm_kernel;
    row.ms_per_iter = rep.iterations > 0 ? 1e3 * rep.seconds / rep.iterations : 0;
    row.max_relres = rep.relative_residuals.empty()
                         ? 0
                         : *std::max_element(rep.relative_residuals.begin(), rep.relative_residuals.end());
    row.p_restarts = rep.p_restarts;
    row.svqb = rep.svqb_passes;
    row.dropped = rep.dropped_directions;
    row.eigenvalues = rep.eigenvalues;
    row.precond = rep.preconditioner;  // what was used (after any fallback)
  }
  row.setup_s = median(setup);
  row.solve_s = median(solve);
  row.total_s = row.setup_s + row.solve_s;
  std::printf("%-22s %-8s %-9s n=%9d b=%3d  %-15s it=%6d  total %8.3f s (setup %.3f, %.3f ms/it)  relres %.2e  "
              "[restarts %d, svqb %d, dropped %d]\n",
              row.matrix.c_str(), row.which.c_str(), row.precond.c_str(), row.n, row.block, row.status.c_str(),
              row.iterations, row.total_s, row.setup_s, row.ms_per_iter, row.max_relres, row.p_restarts, row.svqb,
              row.dropped);
  std::fflush(stdout);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, generated = true, profile = false;
  index_t k = 8, max_iters = 10000;
  int reps = 1;
  double tol = 1e-6;
  std::string json, precond = "auto", backend_name = "cuda";
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_lobpcg: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") quick = true;
    else if (a == "--no-generated") generated = false;
    else if (a == "--profile") profile = true;
    else if (a == "--k") k = index_t(std::atoi(next().c_str()));
    else if (a == "--tol") tol = std::atof(next().c_str());
    else if (a == "--max-iters") max_iters = index_t(std::atoi(next().c_str()));
    else if (a == "--reps") reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--precond") precond = next();
    else if (a == "--backend") backend_name = next();
    else if (a == "--json") json = next();
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "bench_lobpcg: unknown option %s\n", a.c_str());
      return 2;
    } else files.push_back(a);
  }
  const Backend backend = parse_backend(backend_name);
  if (backend != Backend::Host && !cuda_device_available()) {
    std::printf("bench_lobpcg: no CUDA device, nothing to measure (--backend host to run on the CPU)\n");
    return 0;
  }
  const std::string device = backend == Backend::Host ? "host" : cuda_device_name();
  std::printf("device %s, k = %d, tol %g, max iterations %d, precond %s\n", device.c_str(), k, tol, max_iters,
              precond.c_str());
  // Warm-up: CUDA context, cuBLAS handle, kernel modules — one-time costs no run should carry.
  measure("warmup_lap2d_32^2", laplacian_2d(32, 32), EigWhich::Smallest, "none", 4, 1e-4, 50, 1, backend);

  std::vector<Row> rows;
  auto run_both = [&](const std::string& name, const CsrMatrix<double>& A) {
    for (EigWhich w : {EigWhich::Smallest, EigWhich::Largest})
      try {
        rows.push_back(measure(name, A, w, precond, k, tol, max_iters, reps, backend, profile));
      } catch (const Error& e) {
        std::printf("%-22s %-8s error: %s\n", name.c_str(), to_string(w), e.what());
      }
  };
  if (generated) {
    const index_t g2 = quick ? 256 : 1024, g3 = quick ? 40 : 100;
    run_both("laplace2d_" + std::to_string(g2) + "^2", laplacian_2d(g2, g2));
    run_both("laplace3d_" + std::to_string(g3) + "^3", laplacian_3d(g3, g3, g3));
  }
  for (const auto& f : files) {
    try {
      const auto A = io::read_matrix_market<double>(f);
      run_both(f.substr(f.find_last_of('/') + 1), A);
    } catch (const Error& e) {
      std::printf("%s: %s\n", f.c_str(), e.what());
    }
  }

  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) {
      std::perror(json.c_str());
      return 2;
    }
    const std::string date = bench::utc_now();
    std::fprintf(f,
                 "{\n  \"benchmark\": \"bench_lobpcg\",\n  \"solver\": \"krysp\",\n  \"device\": \"%s\",\n  \"date\": "
                 "\"%s\",\n  \"k\": %d,\n  \"tol\": %g,\n  \"tol_semantics\": \"relative: |Ax-lx| <= tol*(|A|_est + "
                 "|l|)*|x|\",\n  \"max_iters\": %d,\n  \"rows\": [\n",
                 json_escape(device).c_str(), date.c_str(), k, tol, max_iters);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::fprintf(f,
                   "    {\"matrix\": \"%s\", \"n\": %d, \"nnz\": %d, \"which\": \"%s\", \"precond\": \"%s\", \"k\": %d, "
                   "\"block_size\": %d, \"status\": \"%s\", \"converged\": %s, \"iterations\": %d, \"seconds\": %.6f, "
                   "\"setup_seconds\": %.6f, \"solve_seconds\": %.6f, \"ms_per_iteration\": %.6f, "
                   "\"max_relative_residual\": %.3e, \"p_restarts\": %d, \"svqb_passes\": %d, "
                   "\"dropped_directions\": %d, \"spmm_kernel\": \"%s\", \"eigenvalues\": [",
                   json_escape(r.matrix).c_str(), r.n, r.nnz, r.which.c_str(), r.precond.c_str(), r.k, r.block,
                   r.status.c_str(), r.converged ? "true" : "false", r.iterations, r.total_s, r.setup_s, r.solve_s,
                   r.ms_per_iter, r.max_relres, r.p_restarts, r.svqb, r.dropped, json_escape(r.spmm).c_str());
      for (std::size_t j = 0; j < r.eigenvalues.size(); ++j)
        std::fprintf(f, "%s%.17g", j ? ", " : "", r.eigenvalues[j]);
      std::fprintf(f, "]}%s\n", i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
    std::printf("wrote %s\n", json.c_str());
  }
  return 0;
}
