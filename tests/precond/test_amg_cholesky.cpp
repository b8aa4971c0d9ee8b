// amg::cholesky, the coarsest level's dense factorisation (both set-ups): L·Lᵀ reproduces A, the
// factor has the bits of the plain one-row-at-a-time loop (the rows are interleaved four at a
// time, each row's sum in the same order), a matrix that is not positive semidefinite returns
// the first bad pivot, and a singular one has its zero pivot pinned (a generalized inverse).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "krysp/precond/amg.hpp"
#include "precond_test_util.hpp"

using namespace krysp;

namespace {

/// B·Bᵀ + n·I for a random n × n B (row-major): SPD and well conditioned.
std::vector<double> random_spd(index_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const std::size_t N = std::size_t(n);
  std::vector<double> B(N * N), A(N * N, 0.0);
  for (double& e : B) e = u(rng);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      for (std::size_t k = 0; k < N; ++k) A[i * N + j] += B[i * N + k] * B[j * N + k];
      if (i == j) A[i * N + j] += double(n);
    }
  return A;
}

/// The factorisation one row at a time (the loop amg::cholesky interleaves): the bitwise reference.
index_t one_row_at_a_time(index_t n, std::vector<double>& a, double* pivot) {
  const std::size_t N = std::size_t(n);
  for (std::size_t j = 0; j < N; ++j) {
    double* lj = a.data() + j * N;
    const double ajj = lj[j];
    double d = ajj;
    for (std::size_t k = 0; k < j; ++k) d -= lj[k] * lj[k];
    if (!(d > 16 * std::numeric_limits<double>::epsilon() * std::abs(ajj)) || !std::isfinite(d)) {
      *pivot = d;
      return index_t(j);
    }
    d = std::sqrt(d);
    lj[j] = d;
    for (std::size_t i = j + 1; i < N; ++i) {
      double* li = a.data() + i * N;
      double s = li[j];
      for (std::size_t k = 0; k < j; ++k) s -= li[k] * lj[k];
      li[j] = s / d;
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("AMG coarse Cholesky: L*L^T = A, the bits of one row at a time, the first bad pivot") {
  for (index_t n : {1, 2, 3, 4, 5, 7, 8, 9, 13, 50, 174}) {
    CAPTURE(n);
    const std::vector<double> A = random_spd(n, 7u + unsigned(n));
    std::vector<double> L = A, R = A;
    double p = 0, q = 0;
    REQUIRE(amg::cholesky(n, L, &p) == -1);
    REQUIRE(one_row_at_a_time(n, R, &q) == -1);
    const std::size_t N = std::size_t(n);
    bool same = true;
    double err = 0, scale = 0;
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        same = same && L[i * N + j] == R[i * N + j];
        double s = 0;
        for (std::size_t k = 0; k <= j; ++k) s += L[i * N + k] * L[j * N + k];
        err = std::max(err, std::abs(s - A[i * N + j]));
        scale = std::max(scale, std::abs(A[i * N + j]));
      }
    CHECK(same);
    CHECK(err <= 1e-13 * scale);
  }
  // Not positive definite: a_55 lowered until the sixth pivot is negative.
  std::vector<double> A = random_spd(12, 99);
  std::vector<double> F = A;
  double p = 0;
  REQUIRE(amg::cholesky(12, F, &p) == -1);
  const double d5 = F[5 * 12 + 5] * F[5 * 12 + 5];  // the sixth pivot before its square root
  A[5 * 12 + 5] -= 1.5 * d5;
  F = A;
  CHECK(amg::cholesky(12, F, &p) == 5);
  CHECK(p < 0);
  // Not finite: refused.
  F = random_spd(12, 99);
  F[3 * 12 + 3] = std::numeric_limits<double>::infinity();
  CHECK(amg::cholesky(12, F, &p) == 3);
}


TEST_CASE("AMG coarse Cholesky pins a pivot zero to rounding: X·A·X = X, A·X·b = b on A's range") {
  // Uniform scale, and D·A·D with d_i = 1e6 on the first half: the entries span twelve decades,
  // the matrix-wide level n·ε·max a_ii is above the second half's legitimate pivots (a Gram
  // matrix's last pivots are small), and only the singular one may be pinned.
  for (const bool scaled : {false, true}) {
    for (const index_t n : {index_t(6), index_t(40), index_t(120), index_t(300)}) {
      CAPTURE(scaled);
      CAPTURE(n);
      const std::size_t N = std::size_t(n);
      std::vector<double> d(N, 1.0);
      if (scaled)
        for (std::size_t i = 0; i < N; ++i) d[i] = i < N / 2 ? 1e6 : 1.0;
      const std::vector<double> A = test::singular_gram(n, 3u + unsigned(n), d);
      std::vector<double> L = A;
      double p = 0;
      index_t pinned = -1;
      REQUIRE(amg::cholesky(n, L, &p, &pinned) == -1);
      CHECK(pinned == 1);
      CHECK(std::isinf(L[(N - 1) * N + N - 1]));  // the last pivot: the null vector is dense
      // b = A·x in A's range: A·(X·b) = b. And X·A·X = X column by column (X·e_j).
      std::mt19937_64 rng(5);
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<double> x(N), b(N, 0.0);
      for (double& e : x) e = u(rng);
      for (std::size_t i = 0; i < N; ++i)
        for (std::size_t k = 0; k < N; ++k) b[i] += A[i * N + k] * x[k];
      const std::vector<double> y = test::pinned_solve(n, L, b);
      CHECK(y[N - 1] == 0.0);
      double res = 0, bn = 0;
      for (std::size_t i = 0; i < N; ++i) {
        double s = 0;
        for (std::size_t k = 0; k < N; ++k) s += A[i * N + k] * y[k];
        res = std::max(res, std::abs(s - b[i]) / d[i]);
        bn = std::max(bn, std::abs(b[i]) / d[i]);
      }
      CHECK(res <= 1e-9 * bn);
      std::vector<double> e(N, 0.0), ax(N);
      double gap = 0, xmax = 0;
      for (std::size_t j = 0; j < N; ++j) {
        e.assign(N, 0.0);
        e[j] = 1;
        const std::vector<double> xj = test::pinned_solve(n, L, e);
        for (std::size_t i = 0; i < N; ++i) {
          ax[i] = 0;
          for (std::size_t k = 0; k < N; ++k) ax[i] += A[i * N + k] * xj[k];
        }
        const std::vector<double> xax = test::pinned_solve(n, L, ax);
        for (std::size_t i = 0; i < N; ++i) {
          gap = std::max(gap, std::abs(xax[i] - xj[i]) * d[i] * d[j]);
          xmax = std::max(xmax, std::abs(xj[i]) * d[i] * d[j]);
        }
      }
      CHECK(gap <= 1e-9 * xmax);
    }
  }
  // A small pivot that is not rounding is kept: diag(1, 1e-13) is SPD to full accuracy.
  std::vector<double> D = {1.0, 0.0, 0.0, 1e-13};
  double p = 0;
  index_t pinned = -1;
  CHECK(amg::cholesky(2, D, &p, &pinned) == -1);
  CHECK(pinned == 0);
  CHECK(D[3] == std::sqrt(1e-13));
  // A negative pivot beyond rounding is refused: A is indefinite.
  std::vector<double> I = {1.0, 0.0, 0.0, -1e-6};
  CHECK(amg::cholesky(2, I, &p, &pinned) == 1);
  CHECK(p == -1e-6);
}
