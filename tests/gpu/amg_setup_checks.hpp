#pragma once
// Helpers of the GPU AMG set-up suites (test_amg_setup_gpu.cpp, test_amg_block_setup_gpu.cpp):
// arrays to and from the device, a set-up's matrices on the host, and their comparison with the
// host set-up's (its MIS-2 aggregates included), level by level (check_matches_host).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp::test {

/// h in device memory (one entry at least, so that an empty h still gives a pointer).
template <class T>
DeviceArray<T> to_device(const std::vector<T>& h) {
  DeviceArray<T> d(std::max<std::size_t>(h.size(), 1));
  if (!h.empty()) d.upload(h.data(), h.size());
  return d;
}

/// d's first n entries on the host.
template <class T>
std::vector<T> to_host(const DeviceArray<T>& d, std::size_t n) {
  std::vector<T> h(n);
  if (n > 0) d.download(h.data(), n);
  return h;
}

/// A GPU set-up's coarse Cholesky factor on the host (empty: a smoothed coarsest level).
template <class T>
std::vector<double> host_factor(const detail::GpuAmgHierarchy<T>& G) {
  return to_host(G.coarse_factor, G.coarse_factor.size());
}

/// A matrix's arrays (host or device-borrowed) on the host.
template <class T>
amg::Csr<double> host_copy(const CsrMatrix<T>& M) {
  amg::Csr<double> C;
  C.rows = M.rows();
  C.cols = M.cols();
  C.row_ptr.assign(M.row_ptr().data(), M.row_ptr().data() + M.rows() + 1);
  C.col_idx.assign(M.col_idx().data(), M.col_idx().data() + M.nnz());
  const auto& v = M.values();
  C.values.assign(v.data(), v.data() + M.nnz());
  return C;
}

/// A host set-up's level matrix as a Csr.
template <class T>
amg::Csr<double> host_copy(const AmgLevelData<T>& d) {
  amg::Csr<double> C;
  C.rows = C.cols = d.n;
  C.row_ptr.assign(d.row_ptr, d.row_ptr + d.n + 1);
  C.col_idx.assign(d.col_idx, d.col_idx + d.nnz);
  C.values.assign(d.values, d.values + d.nnz);
  return C;
}

/// max |a_i − b_i| and max |a_i|: the distance of two results and its scale.
template <class T>
double max_diff(const std::vector<T>& a, const std::vector<T>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d;
}
template <class T>
double max_abs(const std::vector<T>& a) {
  double m = 0;
  for (const T& x : a) m = std::max(m, double(std::abs(x)));
  return m;
}

/// Same pattern exactly, and max |a − b| / max |b| of the values.
inline double compare(const amg::Csr<double>& a, const amg::Csr<double>& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  REQUIRE(a.row_ptr == b.row_ptr);
  REQUIRE(a.col_idx == b.col_idx);
  double d = 0, s = 0;
  for (std::size_t k = 0; k < a.values.size(); ++k) {
    d = std::max(d, std::abs(a.values[k] - b.values[k]));
    s = std::max(s, std::abs(b.values[k]));
  }
  return s > 0 ? d / s : d;
}

/// Same pattern and the same values, bitwise.
inline bool same(const amg::Csr<double>& x, const amg::Csr<double>& y) {
  return x.rows == y.rows && x.cols == y.cols && x.row_ptr == y.row_ptr && x.col_idx == y.col_idx &&
         x.values == y.values;
}

/// The host's MIS-2 aggregates of every level but the coarsest, from its level matrices: what
/// HostAmg ran (the strength graph on nodes of the level's block size at the θ_l it used, θ at
/// kAmgAuto resolved, then amg::aggregate_mis2).
inline std::vector<std::vector<index_t>> host_aggregates(const HostAmg<double>& H) {
  std::vector<std::vector<index_t>> out;
  const auto data = H.level_data();
  for (std::size_t l = 0; l + 1 < data.size(); ++l) {
    const AmgLevelInfo& li = H.info().levels[l];
    const amg::Graph G = amg::strength_graph(host_copy(data[l]), li.block_size, li.theta);
    out.push_back(amg::aggregate_mis2(G).of_node);
  }
  return out;
}

/// The GPU set-up G (gpu_amg_setup with keep_aggregates) equals the host set-up H of the same A
/// and options: as many levels, and on each the size, block size, aggregate and isolated counts,
/// filtered entries and θ exactly, the Gershgorin bound, λ, ω and c0 to rounding; the aggregates
/// exactly, P, R and A_l to 1e-12, D⁻¹ to 1e-14 on level 0 and 1e-12 below; then the stop
/// reason, the coarse solve, the operator complexity and the coarse factor (to 1e-10; and L·Lᵀ is
/// the host's coarsest matrix to 1e-12).
inline void check_matches_host(const detail::GpuAmgHierarchy<double>& G, const HostAmg<double>& H) {
  const auto hd = H.level_data();
  REQUIRE(G.levels.size() == hd.size());
  REQUIRE(G.info.levels.size() == H.info().levels.size());
  const auto hagg = host_aggregates(H);
  for (std::size_t l = 0; l < hd.size(); ++l) {
    CAPTURE(l);
    const auto& g = G.levels[l];
    const auto& hi = H.info().levels[l];
    const auto& gi = G.info.levels[l];
    CHECK(g.n == hd[l].n);
    CHECK(gi.rows == hi.rows);
    CHECK(gi.nnz == hi.nnz);
    CHECK(gi.block_size == hi.block_size);
    CHECK(gi.aggregates == hi.aggregates);
    CHECK(gi.isolated == hi.isolated);
    CHECK(gi.filtered == hi.filtered);
    CHECK(gi.theta == hi.theta);
    CHECK(gi.gershgorin == doctest::Approx(hi.gershgorin).epsilon(1e-13));
    // The coarsest level may have fewer rows than Lanczos steps: past the exhausted Krylov space
    // the two runs follow their rounding, so its estimate is only close.
    const double tol = l + 1 < hd.size() ? 1e-10 : 1e-6;
    CHECK(gi.lambda_estimate == doctest::Approx(hi.lambda_estimate).epsilon(tol));
    CHECK(gi.omega == doctest::Approx(hi.omega).epsilon(1e-10));
    if (l + 1 < hd.size()) {
      CHECK(g.aggregates == hagg[l]);  // exactly
      CHECK(compare(host_copy(g.P), *hd[l].P) <= 1e-12);
      CHECK(compare(host_copy(g.R), *hd[l].R) <= 1e-12);
    }
    if (l > 0) CHECK(compare(host_copy(g.A), host_copy(hd[l])) <= 1e-12);
    const std::vector<double> dinv = to_host(g.dinv, std::size_t(g.n));
    double dd = 0;
    for (std::size_t i = 0; i < dinv.size(); ++i)
      dd = std::max(dd, std::abs(dinv[i] - (*hd[l].dinv)[i]) / std::abs((*hd[l].dinv)[i]));
    // Level 0's diagonal is A's; a coarse diagonal is a Galerkin sum taken in another order, and
    // across jumps of 1e4 its terms cancel to a small entry (random media: 3e-13 entrywise).
    CHECK(dd <= (l == 0 ? 1e-14 : 1e-12));
    CHECK(g.coef.c0 == doctest::Approx(hd[l].coef->c0).epsilon(l + 1 < hd.size() ? 1e-9 : 1e-5));
    // The node-block smoother: the same levels, λ(D_b⁻¹A) to rounding, the inverse blocks to
    // 1e-12 of their largest entry on level 0 (A's own blocks) and 1e-10 below (Galerkin blocks).
    CHECK(gi.smoother_block == hi.smoother_block);
    CHECK(g.block == hd[l].smoother_block);
    CHECK(gi.block_lanczos_steps == hi.block_lanczos_steps);
    if (hi.smoother_block > 1) {
      CHECK(gi.block_lambda_estimate == doctest::Approx(hi.block_lambda_estimate).epsilon(1e-10));
      REQUIRE(hd[l].binv != nullptr);
      const std::vector<double> binv = to_host(g.binv, hd[l].binv->size());
      double bd = 0, bs = 0;
      for (std::size_t k = 0; k < binv.size(); ++k) {
        bd = std::max(bd, std::abs(binv[k] - (*hd[l].binv)[k]));
        bs = std::max(bs, std::abs((*hd[l].binv)[k]));
      }
      CHECK(bd <= (l == 0 ? 1e-12 : 1e-10) * bs);
    }
  }
  CHECK(G.info.stop_reason == H.info().stop_reason);
  CHECK(G.info.coarse_direct == H.info().coarse_direct);
  CHECK(G.info.operator_complexity == doctest::Approx(H.info().operator_complexity).epsilon(1e-14));
  const std::vector<double> factor = host_factor(G);
  REQUIRE(factor.size() == H.coarse_factor().size());
  double cd = 0, cs = 0;
  for (std::size_t k = 0; k < factor.size(); ++k) {
    cd = std::max(cd, std::abs(factor[k] - H.coarse_factor()[k]));
    cs = std::max(cs, std::abs(H.coarse_factor()[k]));
  }
  CHECK(cd <= 1e-10 * cs);
  // And L·Lᵀ (the GPU's factor, its lower triangle) is the host's coarsest matrix to rounding.
  const auto& c = hd.back();
  const std::size_t n = std::size_t(c.n);
  if (factor.empty() || n == 0) return;
  std::vector<double> Ac(n * n, 0.0);
  double amax = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (index_t k = c.row_ptr[i]; k < c.row_ptr[i + 1]; ++k) {
      Ac[i * n + std::size_t(c.col_idx[k])] = c.values[k];
      amax = std::max(amax, std::abs(c.values[k]));
    }
  double backward = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      double s = 0;
      for (std::size_t k = 0; k <= j; ++k) s += factor[i * n + k] * factor[j * n + k];
      backward = std::max(backward, std::abs(s - Ac[i * n + j]));
    }
  CHECK(backward <= 1e-12 * amax);
}

/// A host CSR's arrays on the device (an empty matrix gets one placeholder entry).
struct DeviceCsr {
  DeviceArray<index_t> rp, ci;
  DeviceArray<double> va;
  explicit DeviceCsr(const amg::Csr<double>& M)
      : rp(to_device(M.row_ptr)), ci(to_device(M.col_idx.empty() ? std::vector<index_t>{0} : M.col_idx)),
        va(to_device(M.values.empty() ? std::vector<double>{0} : M.values)) {}
};

}  // namespace krysp::test
