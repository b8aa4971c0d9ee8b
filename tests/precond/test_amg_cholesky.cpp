// amg::cholesky, the coarsest level's dense factorisation (both set-ups): L·Lᵀ reproduces A, the
// factor has the bits of the plain one-row-at-a-time loop (the rows are interleaved four at a
// time, each row's sum in the same order), and a matrix that is not positive definite returns
// the first bad pivot.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "krysp/precond/amg.hpp"

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
  // Semidefinite (a repeated row and column): zero to rounding is refused too.
  std::vector<double> S = random_spd(6, 5);
  for (std::size_t j = 0; j < 6; ++j) S[5 * 6 + j] = S[4 * 6 + j];
  for (std::size_t i = 0; i < 6; ++i) S[i * 6 + 5] = S[i * 6 + 4];
  CHECK(amg::cholesky(6, S, &p) == 5);
}
