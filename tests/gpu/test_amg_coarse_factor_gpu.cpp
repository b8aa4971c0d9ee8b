// The coarsest level's factor and inverse on the GPU (AmgCoarseSolver: small_cholesky.cu in one
// block where the matrix fits its shared memory, cuSOLVER and cuBLAS above) against the host:
// L against amg::cholesky, the inverse against substitutions on the host's factor and by
// A·X − I, on random SPD matrices of 1 to 1,100 rows (both paths, the size limit on either side,
// and the sizes of the larger coarsest levels the GPU's dense_coarse_rows makes), well
// conditioned and scaled over three decades; the refused pivots at the host's rows; repeats
// bitwise equal.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_kernels.hpp"
#include "krysp/precond/cuda/small_cholesky.hpp"

using namespace krysp;

namespace {

struct Dense {
  index_t n = 0;
  std::vector<double> a;  // row-major, symmetric
  std::vector<double> d;  // the scaling: a = D·M·D, M well conditioned
};

// D·(B·Bᵀ/n + I)·D, B uniform in [−1, 1), D = 10^u with u uniform in [−decades, decades].
Dense random_spd(index_t n, unsigned seed, double decades) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const std::size_t N = std::size_t(n);
  std::vector<double> B(N * N);
  for (double& b : B) b = u(g);
  Dense A{n, std::vector<double>(N * N), std::vector<double>(N)};
  for (double& x : A.d) x = std::pow(10.0, decades * u(g));
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      double s = i == j ? 1.0 : 0.0;
      for (std::size_t k = 0; k < N; ++k) s += B[i * N + k] * B[j * N + k] / double(n);
      A.a[i * N + j] = A.a[j * N + i] = A.d[i] * s * A.d[j];
    }
  return A;
}

struct DeviceCsr {
  DeviceArray<index_t> rp, ci;
  DeviceArray<double> va;
};

// Every entry stored (the coarsest matrices are nearly dense).
DeviceCsr upload_csr(const Dense& A) {
  const std::size_t N = std::size_t(A.n);
  std::vector<index_t> rp(N + 1), ci(N * N);
  for (std::size_t i = 0; i <= N; ++i) rp[i] = index_t(i * N);
  for (std::size_t e = 0; e < N * N; ++e) ci[e] = index_t(e % N);
  DeviceCsr c{DeviceArray<index_t>(N + 1), DeviceArray<index_t>(std::max<std::size_t>(N * N, 1)),
              DeviceArray<double>(std::max<std::size_t>(N * N, 1))};
  c.rp.upload(rp.data(), rp.size());
  if (N > 0) {
    c.ci.upload(ci.data(), ci.size());
    c.va.upload(A.a.data(), A.a.size());
  }
  return c;
}

struct GpuResult {
  index_t refused = -1;
  std::vector<double> L, X;  // X empty when refused
};

GpuResult gpu_factor_invert(detail::AmgCoarseSolver& s, const Dense& A) {
  const std::size_t N = std::size_t(A.n);
  const DeviceCsr c = upload_csr(A);
  DeviceArray<double> LX(std::max<std::size_t>(N * N, 1));
  GpuResult r;
  r.refused = s.factor(A.n, c.rp.data(), c.ci.data(), c.va.data(), LX.data());
  r.L.resize(N * N);
  LX.download(r.L.data(), N * N);
  if (r.refused >= 0) return r;
  s.invert(A.n, LX.data());
  r.X.resize(N * N);
  LX.download(r.X.data(), N * N);
  return r;
}

// X = L⁻ᵀ·L⁻¹ on the host, column by column, from the host factor.
std::vector<double> host_inverse(index_t n, const std::vector<double>& L) {
  const std::size_t N = std::size_t(n);
  std::vector<double> X(N * N), y(N);
  for (std::size_t j = 0; j < N; ++j) {
    for (std::size_t i = 0; i < N; ++i) {
      double s = i == j ? 1.0 : 0.0;
      for (std::size_t k = 0; k < i; ++k) s -= L[i * N + k] * y[k];
      y[i] = s / L[i * N + i];
    }
    for (std::size_t i = N; i-- > 0;) {
      double s = y[i];
      for (std::size_t k = i + 1; k < N; ++k) s -= L[k * N + i] * X[k * N + j];
      X[i * N + j] = s / L[i * N + i];
    }
  }
  return X;
}

}  // namespace

TEST_CASE("AMG coarse factor and inverse on the GPU against the host, both paths") {
  const index_t limit = detail::small_dense_max_rows();
  MESSAGE("one block's shared memory holds the factor of up to ", limit, " rows");
  REQUIRE(limit >= 64);
  detail::AmgCoarseSolver solver;
  for (const double decades : {0.0, 1.5}) {
    for (const index_t n : {index_t(1), index_t(2), index_t(3), index_t(9), index_t(31), index_t(33), index_t(64),
                            index_t(120), index_t(174), limit, limit + 1, index_t(300), index_t(700),
                            index_t(1100)}) {
      CAPTURE(n);
      CAPTURE(decades);
      const std::size_t N = std::size_t(n);
      const Dense A = random_spd(n, 1000u + unsigned(n), decades);
      std::vector<double> Lh = A.a;
      double pivot = 0;
      REQUIRE(amg::cholesky(n, Lh, &pivot) == -1);
      const GpuResult g = gpu_factor_invert(solver, A);
      REQUIRE(g.refused == -1);
      // L = D·L_M: entries compared relative to their row's scale, L_M's entries are O(1).
      double lerr = 0;
      for (std::size_t i = 0; i < N; ++i)
        for (std::size_t j = 0; j <= i; ++j) lerr = std::max(lerr, std::abs(g.L[i * N + j] - Lh[i * N + j]) / A.d[i]);
      CHECK(lerr <= 1e-12);
      bool upper_kept = true;  // A's entries above the diagonal, untouched
      for (std::size_t i = 0; i < N; ++i)
        for (std::size_t j = i + 1; j < N; ++j) upper_kept = upper_kept && g.L[i * N + j] == A.a[i * N + j];
      CHECK(upper_kept);
      // X = D⁻¹·M⁻¹·D⁻¹: compared as d_i·X_ij·d_j (M⁻¹'s entries are O(1), κ(M) ≤ 10 or so).
      const std::vector<double> Xh = host_inverse(n, Lh);
      double xerr = 0, asym = 0, res = 0;
      for (std::size_t i = 0; i < N; ++i)
        for (std::size_t j = 0; j < N; ++j) {
          xerr = std::max(xerr, std::abs(g.X[i * N + j] - Xh[i * N + j]) * A.d[i] * A.d[j]);
          asym = std::max(asym, std::abs(g.X[i * N + j] - g.X[j * N + i]));
          // (D⁻¹·A·X·D)_ij − δ_ij = (M·M⁻¹)_ij − δ_ij
          double s = 0;
          for (std::size_t k = 0; k < N; ++k) s += A.a[i * N + k] * g.X[k * N + j];
          res = std::max(res, std::abs(s * A.d[j] / A.d[i] - (i == j ? 1.0 : 0.0)));
        }
      CHECK(xerr <= 1e-12);
      CHECK(asym == 0.0);
      CHECK(res <= 1e-12);
      // Deterministic: a second factor and inverse, bit for bit.
      const GpuResult again = gpu_factor_invert(solver, A);
      CHECK(again.L == g.L);
      CHECK(again.X == g.X);
    }
  }
}

TEST_CASE("AMG coarse factor on the GPU refuses the pivot amg::cholesky refuses, at the same row") {
  const index_t limit = detail::small_dense_max_rows();
  detail::AmgCoarseSolver solver;
  for (const index_t n : {index_t(40), limit, limit + 20, index_t(1100)}) {
    for (const index_t r : {index_t(0), n / 2, n - 1}) {
      for (const bool nan : {false, true}) {
        CAPTURE(n);
        CAPTURE(r);
        CAPTURE(nan);
        Dense A = random_spd(n, 7u + unsigned(r), 0.0);
        const std::size_t N = std::size_t(n), R = std::size_t(r);
        // Pivot r becomes −1 (its Schur complement's diagonal lowered by the pivot plus one),
        // or not finite.
        std::vector<double> Lh = A.a;
        double pivot = 0;
        REQUIRE(amg::cholesky(n, Lh, &pivot) == -1);
        const double dr = Lh[R * N + R] * Lh[R * N + R];
        A.a[R * N + R] = nan ? std::numeric_limits<double>::quiet_NaN() : A.a[R * N + R] - dr - 1.0;
        Lh = A.a;
        REQUIRE(amg::cholesky(n, Lh, &pivot) == r);
        const GpuResult g = gpu_factor_invert(solver, A);
        CHECK(g.refused == r);
      }
    }
  }
}
