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
