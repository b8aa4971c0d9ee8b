// Load on the GPU: 1,000 consecutive solves through the library API (solve(), CgSolver,
// solve_block()) on small matrices of changing sizes. Every solve must converge, and afterwards
// the device memory krysp holds (device_bytes_allocated) must be back at its starting level
// exactly, and the driver's free memory (cudaMemGetInfo) within a small allowance of it: no leak.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
CsrMatrix<double> soak_matrix(int i) {
  const index_t s = index_t(3 + (i * 7) % 29);  // 3..31
  switch (i % 3) {
    case 0: return laplacian_2d(s, s + i % 5);
    case 1: return laplacian_3d(s / 3 + 1, s / 4 + 2, 3);
    default: return laplacian_2d(s * 4 + 1, 3);
  }
}

/// 1,000 unless KRYSP_SOAK_SOLVES says otherwise: scripts/compute_sanitizer.sh runs a shorter soak
/// under memcheck, where each solve is about a hundred times slower.
int soak_solves() {
  const char* env = std::getenv("KRYSP_SOAK_SOLVES");
  if (!env || !*env) return 1000;
  const int n = std::atoi(env);
  REQUIRE_MESSAGE(n >= 50, "KRYSP_SOAK_SOLVES=", env, ": expected a count of at least 50");
  return n;
}

/// Peak of device_bytes_allocated() seen from inside the solves (their progress callbacks).
std::size_t g_peak_held = 0;

SolveReport one_solve(int i, const CsrMatrix<double>& A, const std::vector<double>& b, std::vector<double>& x) {
  SolveOptions o;
  o.backend = Backend::Cuda;
  o.cg.progress = [](const SolveProgress&) { g_peak_held = std::max(g_peak_held, device_bytes_allocated()); };
  o.precond.kind = i % 5 == 0 ? PrecondKind::Chebyshev : i % 2 ? PrecondKind::Jacobi : PrecondKind::None;
  if (i % 4 == 3) {
    CgSolver solver(A, o);
    return solver.solve(b, x);
  }
  return solve(A, b, x, o);
}
}  // namespace

TEST_CASE("Soak GPU: 1,000 consecutive solves of changing sizes converge and leak no device memory") {
  {  // warm-up: one-time allocations (library handles, the process-wide SpMV accumulator)
    const auto A = soak_matrix(0);
    const auto b = test::random_vector(A.rows());
    std::vector<double> x;
    REQUIRE(one_solve(0, A, b, x).converged());
    std::vector<double> B = test::random_vector(std::size_t(A.rows()) * 2), X;
    SolveOptions o;
    o.backend = Backend::Cuda;
    REQUIRE(solve_block(A, B, 2, X, o).converged());
  }
  cuda_synchronize();
  release_device_cache();  // the driver's free memory is compared without krysp's cached blocks
  const std::size_t held0 = device_bytes_allocated();
  std::size_t free0 = 0, total = 0;
  cuda_memory_info(free0, total);

  const int solves = soak_solves();
  int converged = 0, bad_residual = 0;
  g_peak_held = 0;
  for (int i = 0; i < solves; ++i) {
    const auto A = soak_matrix(i);
    if (i % 50 == 49) {  // now and then a block solve (the SpMM path)
      std::vector<double> B = test::random_vector(std::size_t(A.rows()) * 3), X;
      SolveOptions o;
      o.backend = Backend::Cuda;
      const auto rep = solve_block(A, B, 3, X, o);
      converged += rep.converged();
      continue;
    }
    const auto b = test::random_vector(A.rows());
    std::vector<double> x;
    const auto rep = one_solve(i, A, b, x);
    converged += rep.converged();
    bad_residual += test::true_relative_residual(A, b, x) > 1e-7;
  }
  cuda_synchronize();
  CHECK(converged == solves);
  CHECK(bad_residual == 0);
  const std::size_t held1 = device_bytes_allocated();
  CHECK(device_bytes_cached() <= kDeviceCacheMaxBytes);
  release_device_cache();
  std::size_t free1 = 0;
  cuda_memory_info(free1, total);
  MESSAGE("device bytes held by krysp: ", held0, " before, ", held1, " after (peak ", g_peak_held,
          "); driver free bytes: ", free0, " before, ", free1, " after");
  CHECK(held1 == held0);
  CHECK(g_peak_held > held0);  // the counter does see the solves' allocations
  // The driver may keep a few pages cached; a leak of every solve's vectors would be far more.
  CHECK(free1 + (std::size_t(16) << 20) >= free0);
}
