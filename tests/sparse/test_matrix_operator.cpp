// A CSR matrix as a LinearOperator on the host: apply and apply_block against the matrix's own
// host product, computed entry by entry here. (The device flavour: tests/gpu/test_matrix_operator_gpu.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/matrix_operator.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("MatrixOperator on the host: y = A·x and Y = A·X, checked entry by entry") {
  const auto A = test::load("bcsstk06");
  const index_t n = A.rows();
  const auto op = MatrixOperator<double>::host(A);
  const LinearOperator<double>& L = op;
  CHECK(L.rows() == n);
  CHECK(L.cols() == n);
  CHECK(L.space() == MemorySpace::Host);
  const index_t N = 3, ld = 5;
  const auto X = test::random_vector(std::size_t(n) * ld);
  const std::size_t rows = static_cast<std::size_t>(n);
  std::vector<double> Y(rows * ld, 7.0), y(rows), x0(rows);
  for (index_t i = 0; i < n; ++i) x0[std::size_t(i)] = X[std::size_t(i) * ld];
  L.apply(x0.data(), y.data());
  L.apply_block(N, X.data(), ld, Y.data(), ld);
  for (index_t i = 0; i < n; ++i) {
    for (index_t j = 0; j < N; ++j) {
      double want = 0, mag = 0;  // row i of A times column j of X, here
      for (index_t p = A.row_ptr()(i); p < A.row_ptr()(i + 1); ++p) {
        want += A.values()(p) * X[std::size_t(A.col_idx()(p)) * ld + j];
        mag += std::abs(A.values()(p) * X[std::size_t(A.col_idx()(p)) * ld + j]);
      }
      CHECK(std::abs(Y[std::size_t(i) * ld + j] - want) <= 1e-14 * mag + 1e-300);
      if (j == 0) CHECK(std::abs(y[std::size_t(i)] - want) <= 1e-14 * mag + 1e-300);
    }
    CHECK(Y[std::size_t(i) * ld + N] == 7.0);  // beyond the N columns: untouched
  }
  CHECK_THROWS_AS(L.apply_block(N, X.data(), N - 1, Y.data(), ld), InputError);
}

TEST_CASE("MatrixOperator on the host: the fused passes agree with apply") {
  const auto A = laplacian_2d(12, 9);
  const std::size_t n = static_cast<std::size_t>(A.rows());
  const auto op = MatrixOperator<double>::host(A);
  const FusedOperator<double>& F = op;
  const auto x = test::random_vector(n), b = test::random_vector(n);
  std::vector<double> ax(n), y(n);
  op.apply(x.data(), ax.data());
  double dot = 0, want = 0;
  F.apply_dot(x.data(), y.data(), &dot);
  for (std::size_t i = 0; i < n; ++i) want += x[i] * ax[i];
  CHECK(y == ax);
  CHECK(dot == doctest::Approx(want).epsilon(1e-14));
  std::vector<double> r = b;
  F.apply_scaled(-1.0, x.data(), 1.0, r.data());  // r = b − A·x
  for (std::size_t i = 0; i < n; ++i) CHECK(r[i] == doctest::Approx(b[i] - ax[i]).epsilon(1e-14));
  const index_t N = 2;
  const auto X = test::random_vector(n * N);
  std::vector<double> AX(n * N), R = test::random_vector(n * N);
  const std::vector<double> R0 = R;
  op.apply_block(N, X.data(), N, AX.data(), N);
  F.apply_block_scaled(N, 2.0, X.data(), N, -1.0, R.data(), N);
  for (std::size_t k = 0; k < n * N; ++k) CHECK(R[k] == doctest::Approx(2.0 * AX[k] - R0[k]).epsilon(1e-14));
  CHECK(&F.csr() == &op.matrix());
  CHECK(op.spmv_plan() == nullptr);
  CHECK_THROWS_AS(F.spmm_plan(N, N, N), InputError);
}
