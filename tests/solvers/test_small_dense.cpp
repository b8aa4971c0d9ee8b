// LAPACK-backed small dense helpers and the host block operations.
#include <doctest/doctest.h>

#include <cmath>

#include "krysp/solvers/host/host_block_ops.hpp"
#include "krysp/solvers/small_dense.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("SmallDense: Cholesky of an SPD matrix reproduces it; an indefinite one is reported") {
  const index_t n = 5;
  const auto G = test::random_vector(n * n);
  auto A = dense::at_b(n, n, n, G, G);  // GᵀG + n·I is SPD
  for (index_t i = 0; i < n; ++i) A[cm(i, i, n)] += n;
  auto R = A;
  REQUIRE(dense::cholesky_upper(n, R));
  const auto RtR = dense::at_b(n, n, n, R, R);
  for (std::size_t k = 0; k < A.size(); ++k) CHECK(RtR[k] == doctest::Approx(A[k]).epsilon(1e-12));
  std::vector<double> indef = {1.0, 0.0, 0.0, -1.0};
  CHECK_FALSE(dense::cholesky_upper(2, indef));
}

TEST_CASE("SmallDense: symmetric and generalized eigenproblems") {
  const index_t n = 4;
  std::vector<double> A = {2, -1, 0, 0, -1, 2, -1, 0, 0, -1, 2, -1, 0, 0, -1, 2}, w, V;
  REQUIRE(dense::sym_eig(n, A, w, V));
  for (index_t k = 0; k < n; ++k)  // eigenvalues of the 1-D Laplacian: 2 − 2cos(kπ/(n+1))
    CHECK(w[k] == doctest::Approx(2 - 2 * std::cos((k + 1) * M_PI / (n + 1))).epsilon(1e-12));
  std::vector<double> B(n * n, 0.0);
  for (index_t i = 0; i < n; ++i) B[cm(i, i, n)] = 2.0;
  REQUIRE(dense::sym_gen_eig(n, A, B, w, V));
  CHECK(w[0] == doctest::Approx((2 - 2 * std::cos(M_PI / (n + 1))) / 2).epsilon(1e-12));
  const auto VtBV = dense::at_b(n, n, n, V, dense::a_b(n, n, n, B, V));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) CHECK(VtBV[cm(i, j, n)] == doctest::Approx(i == j ? 1.0 : 0.0).epsilon(1e-12));
}

TEST_CASE("HostBlockOps: gram and combine against a direct computation, with ld > b") {
  const index_t n = 37, bx = 3, by = 5, ldx = 4, ldy = 7;
  const auto X = test::random_vector(n * ldx), Y0 = test::random_vector(n * ldy), C = test::random_vector(bx * by);
  HostBlockOps<double> ops;
  std::vector<double> G(bx * by);
  ops.gram(n, X.data(), ldx, bx, Y0.data(), ldy, by, G.data());
  for (index_t i = 0; i < bx; ++i)
    for (index_t j = 0; j < by; ++j) {
      double s = 0;
      for (index_t k = 0; k < n; ++k) s += X[k * ldx + i] * Y0[k * ldy + j];
      CHECK(G[cm(i, j, bx)] == doctest::Approx(s).epsilon(1e-13));
    }
  auto Y = Y0;
  ops.combine(n, X.data(), ldx, bx, C.data(), 0.5, -2.0, Y.data(), ldy, by);
  for (index_t k = 0; k < n; ++k)
    for (index_t j = 0; j < by; ++j) {
      double s = 0;
      for (index_t i = 0; i < bx; ++i) s += X[k * ldx + i] * C[cm(i, j, bx)];
      CHECK(Y[k * ldy + j] == doctest::Approx(0.5 * s - 2.0 * Y0[k * ldy + j]).epsilon(1e-13));
    }
}
