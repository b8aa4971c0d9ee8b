// The AMG set-up's Lanczos on small levels runs a batch of steps in one launch of one thread block
// (k_lz_block_steps) instead of 5-7 launches a step. Its α and β must be the launch-a-phase
// path's bits, for point (D^{-1/2}·A·D^{-1/2}) and node-block (L⁻¹·A·L⁻ᵀ) operators, for one to
// four rounds of rows a thread and for any batching; and both must agree with a plain host
// Lanczos (sequential sums) to rounding over the first steps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

struct Case {
  std::string name;
  CsrMatrix<double> A;
  int b;  // node blocks (1: points)
};

// Lanczos on S = D^{-1/2}·A·D^{-1/2} on the host, sums in row order, from the set-up's fixed
// start vector: the independent reference for b = 1.
void host_lanczos(const CsrMatrix<double>& A, int steps, std::vector<double>& alpha, std::vector<double>& beta) {
  const index_t n = A.rows();
  const std::size_t N = std::size_t(n);
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  std::vector<double> s(N), v(N), vp(N, 0.0), w(N);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = rp(i); k < rp(i + 1); ++k)
      if (ci(k) == i) s[std::size_t(i)] = 1.0 / std::sqrt(va(k));
  double norm = 0;
  for (std::size_t i = 0; i < N; ++i) {
    v[i] = detail::lanczos_start_entry(std::int64_t(i));
    norm += v[i] * v[i];
  }
  for (double& x : v) x /= std::sqrt(norm);
  alpha.assign(std::size_t(steps), 0.0);
  beta.assign(std::size_t(steps), 0.0);
  double b_prev = 0;
  for (std::size_t j = 0; j < std::size_t(steps); ++j) {
    double a = 0;
    for (index_t i = 0; i < n; ++i) {
      const std::size_t I = std::size_t(i);
      double y = 0;
      for (index_t k = rp(i); k < rp(i + 1); ++k) {
        const std::size_t c = std::size_t(ci(k));
        y += va(k) * s[c] * v[c];
      }
      w[I] = s[I] * y - b_prev * vp[I];
      a += w[I] * v[I];
    }
    double bb = 0;
    for (std::size_t i = 0; i < N; ++i) {
      w[i] -= a * v[i];
      bb += w[i] * w[i];
    }
    alpha[j] = a;
    beta[j] = b_prev = std::sqrt(bb);
    vp = v;
    for (std::size_t i = 0; i < N; ++i) v[i] = w[i] / b_prev;
  }
}

// A 2-D Laplacian plus weak couplings to the 40 rows that follow (rows of ~85 entries: more than
// two a lane at the SpMV's lanes), each balanced on the diagonal: still an M-matrix, SPD.
CsrMatrix<double> wide_rows(index_t nx, index_t ny) {
  const CsrMatrix<double> L = laplacian_2d(nx, ny);
  const index_t n = L.rows();
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < n; ++i)
    for (index_t k = L.row_ptr()(i); k < L.row_ptr()(i + 1); ++k) {
      I.push_back(i);
      J.push_back(L.col_idx()(k));
      V.push_back(L.values()(k));
    }
  for (index_t i = 0; i < n; ++i)
    for (index_t d = 2; d <= 41 && i + d < n; ++d) {  // summed with a neighbour's -1 where d = nx
      const double c = -1e-3 * double(1 + (i + d) % 7);
      I.insert(I.end(), {i, i + d, i, i + d});
      J.insert(J.end(), {i + d, i, i, i + d});
      V.insert(V.end(), {c, c, -c, -c});
    }
  return CsrMatrix<double>::from_triplets(n, n, I, J, V);
}

}  // namespace

TEST_CASE("AMG GPU: Lanczos batches in one block give the launch-a-phase path's bits") {
  std::vector<Case> cases;
  cases.push_back({"1-D Laplacian, 37 rows (one round, one launch block)", laplacian_1d(37), 1});
  cases.push_back({"2-D Laplacian 33 x 31 (1,023 rows)", laplacian_2d(33, 31), 1});
  cases.push_back({"2-D Laplacian 40 x 40 (1,600 rows: two rounds)", laplacian_2d(40, 40), 1});
  cases.push_back({"scaled 3-D Laplacian 16^3 (4,096 rows: four rounds)",
                   scaled_symmetric(laplacian_3d(16, 16, 16), 6.0, 11), 1});
  cases.push_back({"2-D Laplacian 25 x 24 with long rows (SpMV past two entries a lane)", wide_rows(25, 24), 1});
  cases.push_back({"bcsstm12 (1,473 rows)", test::load("bcsstm12"), 1});
  cases.push_back({"bcsstk06 on 3 x 3 node blocks", test::load("bcsstk06"), 3});
  cases.push_back({"elasticity 5 x 4 x 3 on 3 x 3 node blocks", elasticity_3d(5, 4, 3, 0.3), 3});
  cases.push_back({"bcsstm12 on 3 x 3 node blocks", test::load("bcsstm12"), 3});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    // The one-block path must be what runs: else both sides below would be the same launches.
    REQUIRE(detail::gpu_lanczos_one_block(c.A.rows(), c.A.nnz()));
    const int steps = 24;
    std::vector<double> a_ref, b_ref;
    detail::gpu_lanczos_trace(c.A, c.b, steps, 4, false, a_ref, b_ref);
    for (int batch : {1, 4, 8, 24}) {
      CAPTURE(batch);
      std::vector<double> a, b;
      detail::gpu_lanczos_trace(c.A, c.b, steps, batch, true, a, b);
      for (int j = 0; j < steps; ++j) {
        CAPTURE(j);
        REQUIRE(std::isfinite(a[std::size_t(j)]));
        REQUIRE(b[std::size_t(j)] > 0);
        CHECK(a[std::size_t(j)] == a_ref[std::size_t(j)]);  // bitwise (both finite)
        CHECK(b[std::size_t(j)] == b_ref[std::size_t(j)]);
      }
    }
    if (c.b == 1) {  // both against sequential host sums, while the basis is still orthogonal
      std::vector<double> a_host, b_host;
      host_lanczos(c.A, 8, a_host, b_host);
      double scale = 0;
      for (int j = 0; j < 8; ++j) scale = std::max(scale, std::abs(a_host[std::size_t(j)]) + b_host[std::size_t(j)]);
      for (int j = 0; j < 8; ++j) {
        CAPTURE(j);
        CHECK(std::abs(a_ref[std::size_t(j)] - a_host[std::size_t(j)]) <= 1e-11 * scale);
        CHECK(std::abs(b_ref[std::size_t(j)] - b_host[std::size_t(j)]) <= 1e-11 * scale);
      }
    }
  }
}

TEST_CASE("AMG GPU: levels past the one-block limits keep a launch a phase") {
  CHECK(detail::gpu_lanczos_one_block(4096, 65536));
  CHECK_FALSE(detail::gpu_lanczos_one_block(4097, 1000));
  CHECK_FALSE(detail::gpu_lanczos_one_block(4000, 65537));
}
