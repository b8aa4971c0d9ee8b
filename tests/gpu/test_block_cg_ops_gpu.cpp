// Block CG's fused tall-skinny steps on the GPU against the host reference ops, on fresh random
// blocks: every output (X, R, the new direction block) and every small product, for widths 1 to
// 64, n below, at and above one chunk of rows, without a preconditioner, with Jacobi (applied on
// the fly) and with block Jacobi (a Z block filled first). Also: the products are bitwise equal
// from run to run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "solvers/cuda/block_cg_kernels.hpp"
#include "solvers/cuda/cuda_block_cg_ops.hpp"
#include "solvers/host/host_block_cg_ops.hpp"
#include "sparse/generators.hpp"
#include "sparse/spmv_plan.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

/// |got − want| ≤ 16·u·(terms + 8)·max|want| per entry: each entry is a sum of `terms` products
/// (or one update) formed in double on both sides, in different orders; the worst-case rounding
/// of such a sum is (terms − 1)·u times the sum of magnitudes, which max|want| (the largest,
/// diagonal, entries of a Gram matrix) bounds up to a small factor. A missing or doubled row
/// changes an entry by about max|want|/n, far above this for every n used here.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double terms, const char* what) {
  REQUIRE(got.size() == want.size());
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  const double tol = 16 * 1.1e-16 * (terms + 8) * scale;
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!(std::abs(got[k] - want[k]) <= tol)) {
      FAIL_CHECK(what, "[", k, "]: ", got[k], " vs host ", want[k], " (tolerance ", tol, ")");
      return;
    }
}

std::vector<double> download(const DeviceArray<double>& d) {
  std::vector<double> v(d.size());
  d.download(v.data(), v.size());
  return v;
}

template <class HostM, class DevM>
void compare(const CsrMatrix<double>& A, index_t s, const HostM* hM, const DevM* dM, const char* label) {
  const std::string name = label;
  CAPTURE(name);
  CAPTURE(s);
  const index_t n = A.rows();
  CAPTURE(n);
  HostBlockCgOps<double> host(A, s, hM);
  CudaBlockCgOps<double> dev(A, s, dM);
  const std::size_t ns = std::size_t(n) * s;
  auto hblock = [&](std::uint64_t seed) {
    auto b = host.block();
    const auto v = test::random_vector(ns, seed);
    std::copy(v.begin(), v.end(), b.data());
    return b;
  };
  auto dblock = [&](const HostBlockCgOps<double>::Block& h) {
    auto d = dev.block();
    d.upload(h.data(), ns);
    return d;
  };
  auto hP = hblock(1), hQ = hblock(2), hX = hblock(3), hR = hblock(4), hPn = host.block();
  auto dP = dblock(hP), dQ = dblock(hQ), dX = dblock(hX), dR = dblock(hR), dPn = dev.block();
  const index_t a = std::max<index_t>(1, s - 1);  // a narrower search block than s
  const auto Ca = test::random_vector(std::size_t(a) * s, 5);

  check_close(dev.gram(dP, a, dQ, s), host.gram(hP, a, hQ, s), double(n), "gram");

  host.precondition(hR);
  dev.precondition(dR);
  const auto hu = host.update(hP, hQ, a, Ca, hX, hR);
  const auto du = dev.update(dP, dQ, a, Ca, dX, dR);
  check_close(download(dX), std::vector<double>(hX.data(), hX.data() + ns), double(a), "X");
  check_close(download(dR), std::vector<double>(hR.data(), hR.data() + ns), double(a), "R");
  check_close(du.rr, hu.rr, double(n), "diag(RᵀR)");
  check_close(du.qz, hu.qz, double(n), "QnᵀZ");

  std::vector<index_t> active;
  for (index_t j = s - 1; j >= 0; j -= 2) active.push_back(j);  // every other column, in a new order
  std::sort(active.begin(), active.end());
  const auto Cb = test::random_vector(std::size_t(a) * active.size(), 6);
  const auto hd = host.direction(hP, a, Cb, active, hR, hPn);
  const auto dd = dev.direction(dP, a, Cb, active, dR, dPn);
  const auto got = download(dPn);
  std::vector<double> got_used, want_used;  // only the first |active| columns are defined
  for (index_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < active.size(); ++j) {
      got_used.push_back(got[std::size_t(i) * s + j]);
      want_used.push_back(hPn(std::size_t(i) * s + j));
    }
  check_close(got_used, want_used, double(a), "Pnext");
  check_close(dd.h, hd.h, double(n), "PnextᵀPnext");
  check_close(dd.pr, hd.pr, double(n), "PnextᵀR");

  // The initial direction (no previous block) and bitwise reproducibility.
  const auto d0 = dev.direction(dP, 0, {}, active, dR, dPn);
  const auto d1 = dev.direction(dP, 0, {}, active, dR, dPn);
  CHECK(std::memcmp(d0.h.data(), d1.h.data(), d0.h.size() * sizeof(double)) == 0);
  CHECK(std::memcmp(d0.pr.data(), d1.pr.data(), d0.pr.size() * sizeof(double)) == 0);
  const auto h0 = host.direction(hP, 0, {}, active, hR, hPn);
  check_close(d0.h, h0.h, double(n), "initial PnextᵀPnext");

  // zero_columns
  std::vector<char> zero(s, 0);
  zero[s / 2] = 1;
  dev.zero_columns(dX, zero);
  const auto x = download(dX);
  for (index_t i = 0; i < n; i += 7) {
    CHECK(x[std::size_t(i) * s + s / 2] == 0.0);
    if (s > 1) CHECK(x[std::size_t(i) * s] == hX(std::size_t(i) * s));
  }
}

}  // namespace

TEST_CASE("Block CG fused steps: GPU matches the host reference") {
  for (index_t grid : {3, 40, 300}) {  // n = 9, 1600, 90000: below, around and far above one chunk
    const auto A = laplacian_2d(grid, grid);
    SpmvPlan<double> plan(A);
    for (index_t s : {1, 2, 3, 8, 16, 33, 64}) {
      if (grid == 300 && s > 16) continue;  // keep the suite quick
      compare<HostPreconditioner<double>, DevicePreconditioner<double>>(A, s, nullptr, nullptr, "none");
      PrecondOptions jac;
      jac.kind = PrecondKind::Jacobi;
      const auto hj = make_host_preconditioner(A, jac);
      const auto dj = make_device_preconditioner(A, plan, jac);
      compare(A, s, hj.get(), dj.get(), "jacobi");
      PrecondOptions bj;
      bj.kind = PrecondKind::BlockJacobi;
      bj.block_size = A.rows() % 2 == 0 ? 2 : 3;
      const auto hb = make_host_preconditioner(A, bj);
      const auto db = make_device_preconditioner(A, plan, bj);
      compare(A, s, hb.get(), db.get(), "block-jacobi");
    }
  }
}

TEST_CASE("Block transpose on the device: column-major blocks to row-major and back, exactly") {
  for (index_t n : {1, 31, 33, 1000, 70001})
    for (index_t s : {1, 3, 32, 64}) {
      CAPTURE(n);
      CAPTURE(s);
      const auto cmaj = test::random_vector(std::size_t(n) * s, std::uint64_t(n * 100 + s));
      DeviceArray<double> din(cmaj.size()), drow(cmaj.size()), dback(cmaj.size());
      din.upload(cmaj.data(), cmaj.size());
      detail::transpose(din.data(), s, n, drow.data());
      detail::transpose(drow.data(), n, s, dback.data());
      const auto row = download(drow), back = download(dback);
      bool same = true;
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < s; ++j) same = same && row[std::size_t(i) * s + j] == cmaj[std::size_t(j) * n + i];
      CHECK(same);
      CHECK(back == cmaj);
    }
}
