// Singular coarsest matrices on the GPU: the inverse of amg::cholesky's factor with a pinned
// pivot (l_jj = ∞) on both of AmgCoarseSolver's paths against the host's substitutions, and
// AMG-CG set up on the GPU on consistent Neumann problems (the GPU set-up's two levels on the
// 30 × 30 one broke down before pinning) and a floating elastic body, with true residuals and
// errors (up to A's null space) recomputed here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_kernels.hpp"
#include "krysp/precond/cuda/small_cholesky.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond/precond_test_util.hpp"

using namespace krysp;

TEST_CASE("AMG GPU: the inverse of a factor with a pinned pivot, both paths, against the host") {
  const index_t limit = detail::small_dense_max_rows();
  detail::AmgCoarseSolver solver;
  for (const index_t n : {index_t(7), index_t(60), limit, index_t(300)}) {
    CAPTURE(n);
    const std::size_t N = std::size_t(n);
    const std::vector<double> A = test::singular_gram(n, 17u + unsigned(n), std::vector<double>(N, 1.0));
    std::vector<double> L = A;
    double pivot = 0;
    index_t pinned = 0;
    REQUIRE(amg::cholesky(n, L, &pivot, &pinned) == -1);
    REQUIRE(pinned == 1);
    DeviceArray<double> LX(N * N);
    LX.upload(L.data(), L.size());
    solver.invert(n, LX.data());
    std::vector<double> X(N * N);
    LX.download(X.data(), X.size());
    // Column j of the host's X = the substitutions on e_j; the pinned row and column exactly 0.
    double err = 0, xmax = 0;
    bool zero = true, finite = true;
    std::vector<double> e(N, 0.0);
    for (std::size_t j = 0; j < N; ++j) {
      e.assign(N, 0.0);
      e[j] = 1;
      const std::vector<double> xj = test::pinned_solve(n, L, e);
      for (std::size_t i = 0; i < N; ++i) {
        err = std::max(err, std::abs(X[i * N + j] - xj[i]));
        xmax = std::max(xmax, std::abs(xj[i]));
        finite = finite && std::isfinite(X[i * N + j]);
        if (i == N - 1 || j == N - 1) zero = zero && X[i * N + j] == 0.0;
      }
    }
    CHECK(finite);
    CHECK(zero);
    CHECK(err <= 1e-9 * xmax);
  }
}

TEST_CASE("AMG GPU: consistent Neumann problems set up on the GPU converge, the zero pivot pinned") {
  test::check_neumann_amg(Backend::Cuda);
}

TEST_CASE("AMG GPU: a floating elastic body set up on the GPU, its rigid-body modes' pivots pinned") {
  std::vector<double> xyz;
  const CsrMatrix<double> A = elasticity_3d(6, 6, 6, 0.3, &xyz, false);
  test::check_floating_body_amg(A, xyz, amg::rigid_body_modes(xyz, 3, A.rows()), Backend::Cuda);
}

TEST_CASE("AMG GPU: LOBPCG with AMG on a singular Neumann problem: the zero eigenvalue and the next, analytic") {
  test::check_neumann_smallest_pairs(Backend::Cuda);
}
