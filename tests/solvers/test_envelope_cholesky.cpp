// The envelope Cholesky solver of the eigen-refinement: RCM is a permutation that shrinks the
// envelope, and solves are checked by their backward error, from b − A·y recomputed here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "krysp/solvers/envelope_cholesky.hpp"
#include "krysp/sparse/generators.hpp"
#include "../test_util.hpp"

namespace {
using namespace krysp;

/// P·A·Pᵀ for the permutation new = perm[old].
CsrMatrix<double> permuted(const CsrMatrix<double>& A, const std::vector<index_t>& perm) {
  std::vector<index_t> I, J;
  std::vector<double> V;
  const auto& va = A.values();
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k) {
      I.push_back(perm[i]);
      J.push_back(perm[A.col_idx()(k)]);
      V.push_back(va(k));
    }
  return CsrMatrix<double>::from_triplets(A.rows(), A.cols(), I, J, V);
}

std::vector<index_t> shuffled(index_t n, std::uint64_t seed) {
  std::vector<index_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 g(seed);
  std::shuffle(p.begin(), p.end(), g);
  return p;
}

/// The normwise backward error of a block solve: max over columns of
/// ‖f_j − A·y_j‖ / (‖A‖_F·‖y_j‖ + ‖f_j‖) for row-major blocks (ld ld, N columns). A backward-stable
/// solver keeps it at a small multiple of ε whatever the condition of A.
double backward_error(const CsrMatrix<double>& A, index_t N, index_t ld, const std::vector<double>& F,
                      const std::vector<double>& Y) {
  const index_t n = A.rows();
  double fro = 0;
  for (index_t k = 0; k < A.nnz(); ++k) fro += A.values()(k) * A.values()(k);
  fro = std::sqrt(fro);
  double worst = 0;
  for (index_t c = 0; c < N; ++c) {
    std::vector<double> y(static_cast<std::size_t>(n)), f(static_cast<std::size_t>(n)), ay(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) {
      y[i] = Y[std::size_t(i) * ld + c];
      f[i] = F[std::size_t(i) * ld + c];
    }
    A.multiply_host(y.data(), ay.data());
    for (index_t i = 0; i < n; ++i) ay[i] = f[i] - ay[i];
    worst = std::max(worst, test::norm2(ay) / (fro * test::norm2(y) + test::norm2(f)));
  }
  return worst;
}

bool is_permutation(const std::vector<index_t>& p, index_t n) {
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  if (index_t(p.size()) != n) return false;
  for (index_t v : p) {
    if (v < 0 || v >= n || seen[v]) return false;
    seen[v] = 1;
  }
  return true;
}
}  // namespace

TEST_CASE("RCM is a permutation and shrinks the envelope of a shuffled 2-D Laplacian") {
  const auto L = laplacian_2d(30, 30);
  const auto A = permuted(L, shuffled(L.rows(), 11));
  const auto order = reverse_cuthill_mckee(A);
  CHECK(is_permutation(order, A.rows()));
  // The natural ordering's envelope holds about 31 entries a row; a shuffled one about n/3.
  const EnvelopeCholesky::Cost c = EnvelopeCholesky::cost(A);
  CAPTURE(c.entries);
  CHECK(c.entries <= 40 * A.rows());
  CHECK(c.flops > 0);
  // Disconnected pieces (two Laplacians side by side) and a single row.
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t b = 0; b < 2; ++b)
    for (index_t i = 0; i < L.rows(); ++i)
      for (index_t k = L.row_ptr()(i); k < L.row_ptr()(i + 1); ++k) {
        I.push_back(b * L.rows() + i);
        J.push_back(b * L.rows() + L.col_idx()(k));
        V.push_back(L.values()(k));
      }
  const auto two = CsrMatrix<double>::from_triplets(2 * L.rows(), 2 * L.rows(), I, J, V);
  CHECK(is_permutation(reverse_cuthill_mckee(two), two.rows()));
  const auto one = CsrMatrix<double>::from_triplets(1, 1, {0}, {0}, {4.0});
  CHECK(reverse_cuthill_mckee(one) == std::vector<index_t>{0});
}

TEST_CASE("envelope Cholesky solves blocks to a backward-stable residual") {
  struct Case {
    CsrMatrix<double> A;
  };
  const auto L = laplacian_2d(30, 30);
  std::vector<Case> cases;
  cases.push_back({permuted(L, shuffled(L.rows(), 5))});
  cases.push_back({test::load("bcsstk06")});
  cases.push_back({scaled_symmetric(test::load("bcsstk06"), 6.0, 3)});  // rows scaled over 6 decades
  cases.push_back({test::load("bcsstk20")});                           // κ ≈ 4e12
  cases.push_back({CsrMatrix<double>::from_triplets(1, 1, {0}, {0}, {2.5})});
  for (const auto& c : cases) {
    CAPTURE(c.A.rows());
    const auto f = EnvelopeCholesky::factor(c.A);
    REQUIRE(f.has_value());
    CHECK(f->rows() == c.A.rows());
    CHECK(f->entries() == EnvelopeCholesky::cost(c.A).entries);
    const index_t N = 3, ld = 5, n = c.A.rows();
    std::vector<double> F = test::random_vector(std::size_t(n) * ld), Y(std::size_t(n) * ld, -7.0);
    f->solve(N, F.data(), ld, Y.data(), ld);
    CHECK(backward_error(c.A, N, ld, F, Y) <= 1e-14);
    for (index_t i = 0; i < n; ++i)  // columns beyond N are not written
      for (index_t j = N; j < ld; ++j) CHECK(Y[std::size_t(i) * ld + j] == -7.0);
    std::vector<double> same = F;  // in place
    f->solve(N, same.data(), ld, same.data(), ld);
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < N; ++j) CHECK(same[std::size_t(i) * ld + j] == Y[std::size_t(i) * ld + j]);
  }
}

TEST_CASE("envelope Cholesky refuses a matrix that is not positive definite") {
  // Tridiagonal (2, 1, 2): eigenvalues 1 + 4cos(jπ/(n+1)) reach below zero.
  std::vector<index_t> I, J;
  std::vector<double> V;
  const index_t n = 20;
  for (index_t i = 0; i < n; ++i) {
    I.push_back(i), J.push_back(i), V.push_back(1.0);
    if (i + 1 < n) {
      I.push_back(i), J.push_back(i + 1), V.push_back(2.0);
      I.push_back(i + 1), J.push_back(i), V.push_back(2.0);
    }
  }
  CHECK_FALSE(EnvelopeCholesky::factor(CsrMatrix<double>::from_triplets(n, n, I, J, V)).has_value());
}
