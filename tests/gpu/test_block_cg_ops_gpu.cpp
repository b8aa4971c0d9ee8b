// Block CG's fused tall-skinny steps on the GPU against the host reference ops, on fresh random
// blocks: every output (X, R, the new direction block) and every small product, for widths 1 to
// 64, search widths a ≤ s and active subsets, n below, at and above one chunk of rows, without a
// preconditioner, with Jacobi (applied on the fly) and with block Jacobi (a Z block filled first).
// Also: the X step in the direction pass and update_x, columns with zero coefficients unchanged
// bit for bit, and the products bitwise equal from run to run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "solvers/cuda/block_cg_kernels.hpp"
#include "solvers/cuda/cuda_block_cg_ops.hpp"
#include "solvers/host/host_block_cg_ops.hpp"
#include "sparse/generators.hpp"
#include "sparse/spmv_plan.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

/// |got − want| ≤ 16·u·(terms + 8)·scale per entry, scale = max(max|want|, operands): each entry
/// is a sum of `terms` products (or one update) formed in double on both sides, in different
/// orders; the worst-case rounding of such a sum is (terms − 1)·u times the sum of magnitudes.
/// For the Gram matrices max|want| (their largest, diagonal, entries) bounds that sum up to a
/// small factor. The block updates (R, X, Pnext) are formed from operands of magnitude up to
/// `operands` (1: random blocks and coefficients in [−1, 1), Z = M⁻¹R no larger), and may cancel
/// to smaller values, so their bound is relative to the operands. A missing or doubled row
/// changes an entry by about max|want|/n, far above this for every n used here.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double terms, const char* what,
                 double operands = 0.0) {
  REQUIRE(got.size() == want.size());
  double scale = operands;
  for (double w : want) scale = std::max(scale, std::abs(w));
  const double tol = 16 * 1.1e-16 * (terms + 8) * scale;
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!(std::abs(got[k] - want[k]) <= tol)) {
      FAIL_CHECK(std::string(what), "[", k, "]: ", got[k], " vs host ", want[k], " (tolerance ", tol, ")");
      return;
    }
}

/// A bound on Σ_r |X(r, i)|·|Y(r, j)| for every i, j (Cauchy–Schwarz: the largest column norms of
/// X and Y, n × s row-major host blocks): the scale of a cross Gram matrix's rounding, whose
/// entries may cancel far below it (with s = 1 and n = 9, max|want| alone was 30x too small).
double cross_scale(const double* X, const double* Y, index_t n, index_t s) {
  double mx = 0, my = 0;
  for (index_t j = 0; j < s; ++j) {
    double sx = 0, sy = 0;
    for (index_t i = 0; i < n; ++i) {
      sx += X[std::size_t(i) * s + j] * X[std::size_t(i) * s + j];
      sy += Y[std::size_t(i) * s + j] * Y[std::size_t(i) * s + j];
    }
    mx = std::max(mx, sx);
    my = std::max(my, sy);
  }
  return std::sqrt(mx * my);
}

std::vector<double> download(const DeviceArray<double>& d) {
  std::vector<double> v(d.size());
  d.download(v.data(), v.size());
  return v;
}

/// The entries (i, j) of an n × s row-major block for j in `cols`.
std::vector<double> columns_of(const std::vector<double>& blk, index_t n, index_t s, const std::vector<index_t>& cols) {
  std::vector<double> v;
  for (index_t i = 0; i < n; ++i)
    for (index_t j : cols) v.push_back(blk[std::size_t(i) * s + j]);
  return v;
}

/// Block CG's fused steps as block_cg() calls them, on both backends from the same random blocks:
/// Pn (width a) and Qn, X, R; the update (R −= Qn·Ca), the direction (X += Pn·Ca, Pnext from the
/// `active` columns of Z), update_x, and the initial direction (a = 0, no X step). Ca is zero in
/// the columns not in `moving` (converged columns): X and R must not change there at all.
template <class HostM, class DevM>
void compare_steps(const CsrMatrix<double>& A, index_t s, index_t a, const std::vector<index_t>& moving,
                   const std::vector<index_t>& active, const HostM* hM, const DevM* dM, const char* label) {
  const std::string name = label;
  CAPTURE(name);
  CAPTURE(s);
  CAPTURE(a);
  CAPTURE(moving.size());
  CAPTURE(active.size());
  const index_t n = A.rows();
  CAPTURE(n);
  HostBlockCgOps<double> host(A, s, hM);
  CudaBlockCgOps<double> dev(A, s, dM);
  const std::size_t ns = std::size_t(n) * s;
  auto hblock = [&] {
    auto b = host.block();
    const auto v = test::random_vector(ns);
    std::copy(v.begin(), v.end(), b.data());
    return b;
  };
  auto dblock = [&](const HostBlockCgOps<double>::Block& h) {
    auto d = dev.block();
    d.upload(h.data(), ns);
    return d;
  };
  auto hvec = [&](const HostBlockCgOps<double>::Block& h) { return std::vector<double>(h.data(), h.data() + ns); };
  auto hP = hblock(), hQ = hblock(), hX = hblock(), hR = hblock(), hPn = host.block();
  auto dP = dblock(hP), dQ = dblock(hQ), dX = dblock(hX), dR = dblock(hR), dPn = dev.block();
  std::vector<index_t> still;  // the columns that do not move
  for (index_t j = 0; j < s; ++j)
    if (std::find(moving.begin(), moving.end(), j) == moving.end()) still.push_back(j);
  auto Ca = test::random_vector(std::size_t(a) * s);
  for (index_t j : still)
    for (index_t i = 0; i < a; ++i) Ca[cm(i, j, a)] = 0.0;
  const auto X0 = download(dX), R0 = download(dR);

  const double pq = cross_scale(hP.data(), hQ.data(), n, s);
  check_close(dev.gram(dP, a, dQ, a), host.gram(hP, a, hQ, a), double(n), "gram PnᵀQn", pq);
  check_close(dev.gram(dP, a, dQ, s), host.gram(hP, a, hQ, s), double(n), "gram PnᵀQ (a × s)", pq);

  // update: R −= Qn·Ca, Z, diag(RᵀR), QnᵀZ; X untouched
  host.precondition(hR);
  dev.precondition(dR);
  const auto hu = host.update(hQ, a, Ca, hR);
  const auto du = dev.update(dQ, a, Ca, dR);
  const auto R1 = download(dR);
  check_close(R1, hvec(hR), double(a), "R", 1.0);
  check_close(du.rr, hu.rr, double(n), "diag(RᵀR)");
  check_close(du.qz, hu.qz, double(n), "QnᵀZ");
  CHECK(download(dX) == X0);
  CHECK(columns_of(R1, n, s, still) == columns_of(R0, n, s, still));  // bitwise

  // direction with the X step: X += Pn·Ca, Pnext = Z[:, active] − Pn·Cb, grams
  const auto Cb = test::random_vector(std::size_t(a) * active.size());
  const auto hd = host.direction(hP, a, Ca, hX, Cb, active, hR, hPn);
  const auto dd = dev.direction(dP, a, Ca, dX, Cb, active, dR, dPn);
  const auto X1 = download(dX);
  check_close(X1, hvec(hX), double(a), "X (direction)", 1.0);
  CHECK(columns_of(X1, n, s, still) == columns_of(X0, n, s, still));  // bitwise
  CHECK(download(dR) == R1);                                          // R is only read
  std::vector<index_t> first(active.size());                          // Pnext: the first |active| columns
  for (std::size_t j = 0; j < first.size(); ++j) first[j] = index_t(j);
  check_close(columns_of(download(dPn), n, s, first), columns_of(hvec(hPn), n, s, first), double(a), "Pnext", 1.0);
  check_close(dd.h, hd.h, double(n), "PnextᵀPnext");
  check_close(dd.pr, hd.pr, double(n), "PnextᵀR", cross_scale(hPn.data(), hR.data(), n, s));
  for (std::size_t i = 0; i < active.size(); ++i)  // exactly symmetric
    for (std::size_t j = 0; j < i; ++j) CHECK(dd.h[i + j * active.size()] == dd.h[j + i * active.size()]);

  // the same direction again is bitwise the same (fixed grid and order); X moves again
  const auto dd2 = dev.direction(dP, a, Ca, dX, Cb, active, dR, dPn);
  CHECK(std::memcmp(dd.h.data(), dd2.h.data(), dd.h.size() * sizeof(double)) == 0);
  CHECK(std::memcmp(dd.pr.data(), dd2.pr.data(), dd.pr.size() * sizeof(double)) == 0);
  host.update_x(hP, a, Ca, hX);
  check_close(download(dX), hvec(hX), double(a), "X (direction, twice)", 1.0);

  // with the previous direction's X step as well (X += Pnext·Cp + Pn·Ca, Pnext read before it is
  // overwritten in the same pass); both sides start from the host's Pnext and X
  {
    const index_t ap = index_t(active.size());
    auto Cp = test::random_vector(std::size_t(ap) * s);
    for (index_t j : still)
      for (index_t i = 0; i < ap; ++i) Cp[cm(i, j, ap)] = 0.0;
    dPn.upload(hPn.data(), ns);
    dX.upload(hX.data(), ns);
    const auto Xb = hvec(hX);
    const auto hd3 = host.direction(hP, a, Ca, hX, Cb, active, hR, hPn, ap, Cp);
    const auto dd3 = dev.direction(dP, a, Ca, dX, Cb, active, dR, dPn, ap, Cp);
    const auto X4 = download(dX);
    check_close(X4, hvec(hX), double(a + ap), "X (two steps)", 1.0);
    CHECK(columns_of(X4, n, s, still) == columns_of(Xb, n, s, still));  // bitwise
    check_close(columns_of(download(dPn), n, s, first), columns_of(hvec(hPn), n, s, first), double(a),
                "Pnext (two X steps)", 1.0);
    check_close(dd3.h, hd3.h, double(n), "PnextᵀPnext (two X steps)");
    CHECK_THROWS_AS(dev.direction(dP, a, {}, dX, Cb, active, dR, dPn, ap, Cp), InputError);  // Cp without Ca
  }

  // update_x: the exit right after an update
  host.update_x(hP, a, Ca, hX);
  dev.update_x(dP, a, Ca, dX);
  const auto X3 = download(dX);
  check_close(X3, hvec(hX), double(a), "X (update_x)", 1.0);
  CHECK(columns_of(X3, n, s, still) == columns_of(X0, n, s, still));

  // the initial direction (no previous block, no X step) and bitwise reproducibility
  const auto d0 = dev.direction(dP, 0, {}, dX, {}, active, dR, dPn);
  const auto d1 = dev.direction(dP, 0, {}, dX, {}, active, dR, dPn);
  CHECK(download(dX) == X3);
  CHECK(std::memcmp(d0.h.data(), d1.h.data(), d0.h.size() * sizeof(double)) == 0);
  CHECK(std::memcmp(d0.pr.data(), d1.pr.data(), d0.pr.size() * sizeof(double)) == 0);
  const auto h0 = host.direction(hP, 0, {}, hX, {}, active, hR, hPn);
  check_close(columns_of(download(dPn), n, s, first), columns_of(hvec(hPn), n, s, first), 1.0, "initial Pnext", 1.0);
  check_close(d0.h, h0.h, double(n), "initial PnextᵀPnext");
  check_close(d0.pr, h0.pr, double(n), "initial PnextᵀR", cross_scale(hPn.data(), hR.data(), n, s));

  // the update's products alone are bitwise reproducible too
  auto dR2 = dblock(hR);
  const auto u1 = dev.update(dQ, a, std::vector<double>(std::size_t(a) * s, 0.0), dR2);
  const auto u2 = dev.update(dQ, a, std::vector<double>(std::size_t(a) * s, 0.0), dR2);
  CHECK(std::memcmp(u1.qz.data(), u2.qz.data(), u1.qz.size() * sizeof(double)) == 0);
  CHECK(std::memcmp(u1.rr.data(), u2.rr.data(), u1.rr.size() * sizeof(double)) == 0);

  // zero_columns
  std::vector<char> zero(s, 0);
  zero[s / 2] = 1;
  dev.zero_columns(dX, zero);
  const auto x = download(dX);
  for (index_t i = 0; i < n; i += 7) {
    CHECK(x[std::size_t(i) * s + s / 2] == 0.0);
    if (s > 1) CHECK(x[std::size_t(i) * s] == X3[std::size_t(i) * s]);
  }
}

/// compare_steps for several search widths a ≤ s and active subsets, as the solver meets them.
template <class HostM, class DevM>
void compare(const CsrMatrix<double>& A, index_t s, const HostM* hM, const DevM* dM, const char* label) {
  std::vector<index_t> all(s), odd, one{s / 2};
  for (index_t j = 0; j < s; ++j) all[j] = j;
  for (index_t j = s - 1; j >= 0; j -= 2) odd.push_back(j);  // every other column
  std::sort(odd.begin(), odd.end());
  // a = s, all columns moving and active: the first iterations
  compare_steps(A, s, s, all, all, hM, dM, label);
  // a narrower search block; every other column moving, then active (the others converged)
  compare_steps(A, s, std::max<index_t>(1, s - 1), odd, odd, hM, dM, label);
  // one column left; the columns that just converged still take their last X step
  if (s > 1) compare_steps(A, s, std::max<index_t>(1, s / 2), all, one, hM, dM, label);
}

}  // namespace

TEST_CASE("Block CG fused steps: GPU matches the host reference") {
  for (index_t grid : {3, 40, 300}) {  // n = 9, 1600, 90000: below, around and far above one chunk
    const auto A = laplacian_2d(grid, grid);
    SpmvPlan<double> plan(A);
    for (index_t s : {1, 2, 3, 5, 8, 12, 16, 33, 64}) {
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

TEST_CASE("Block CG fused steps: narrow widths 1 to 8 with every search width and n around one warp of rows") {
  // n = 29..35 rows around one warp's row groups, and every a ≤ s for s ≤ 8 (the shuffle kernels)
  for (index_t rows : {29, 32, 35}) {
    const auto A = laplacian_2d(rows, 1);
    PrecondOptions jac;
    jac.kind = PrecondKind::Jacobi;
    SpmvPlan<double> plan(A);
    const auto hj = make_host_preconditioner(A, jac);
    const auto dj = make_device_preconditioner(A, plan, jac);
    for (index_t s = 1; s <= 8; ++s)
      for (index_t a = 1; a <= s; ++a) {
        std::vector<index_t> all(s), last{s - 1};
        for (index_t j = 0; j < s; ++j) all[j] = j;
        compare_steps(A, s, a, all, all, hj.get(), dj.get(), "jacobi");
        compare_steps(A, s, a, last, last, hj.get(), dj.get(), "jacobi");
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

TEST_CASE("Block CG fused SpMM + Gram: every variant matches the host's SpMM and Gram matrix") {
  // A Laplacian (short regular rows), a power-law matrix (rows up to 300, several shared-memory
  // loads per row, rows empty or beyond the last tile) and two real ones; every width 1..8 with
  // ld = s and ld > w, all variants that serve it, and the choice the ops make by themselves.
  std::vector<std::pair<std::string, CsrMatrix<double>>> mats;
  mats.emplace_back("laplace2d_70", laplacian_2d(70, 70));
  mats.emplace_back("powerlaw_3001", random_power_law(3001, 12, 300, 7));
  mats.emplace_back("bcsstk06", test::load("bcsstk06"));
  mats.emplace_back("ca-GrQc", test::load("ca-GrQc"));
  for (const auto& [name, A] : mats) {
    CAPTURE(name);
    const index_t n = A.rows();
    double norm_inf = 0;  // Q's entries are sums of at most max_len products, each ≤ |a_ik| (|P| < 1)
    index_t max_len = 0;
    for (index_t i = 0; i < n; ++i) {
      double r = 0;
      for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k) r += std::abs(A.values()(k));
      norm_inf = std::max(norm_inf, r);
      max_len = std::max(max_len, A.row_ptr()(i + 1) - A.row_ptr()(i));
    }
    for (index_t s : {1, 2, 3, 4, 5, 7, 8}) {
      HostBlockCgOps<double> host(A, s, nullptr);
      CudaBlockCgOps<double> dev(A, s, nullptr);
      auto hP = host.block();
      const auto v = test::random_vector(std::size_t(n) * s);
      std::copy(v.begin(), v.end(), hP.data());
      auto dP = dev.block();
      dP.upload(hP.data(), v.size());
      for (index_t w = 1; w <= s; ++w) {
        CAPTURE(s);
        CAPTURE(w);
        auto hQ = host.block();
        const auto hg = host.spmm_gram(hP, w, hQ);
        const std::vector<double> hq(hQ.data(), hQ.data() + v.size());
        std::vector<CudaBlockCgOps<double>::SpmmGramChoice> choices{std::nullopt};
        for (const auto& var : detail::spmm_gram_variants(w, s)) choices.push_back(var);
        REQUIRE(choices.size() >= 2);  // every width up to 8 has a fused kernel
        for (const auto& c : choices) {
          CAPTURE(c ? c->lanes : 0);
          CAPTURE(c ? c->cols : 0);
          CAPTURE(c ? c->min_blocks : 0);
          CAPTURE(c ? c->prefetch : false);
          auto dQ = dev.block();
          const auto sentinel = std::vector<double>(v.size(), 1e300);  // columns ≥ w must stay untouched
          dQ.upload(sentinel.data(), v.size());
          dev.force_spmm_gram(w, c);
          const auto dg = dev.spmm_gram(dP, w, dQ);
          const auto dq = download(dQ);
          std::vector<double> dq_used, hq_used;
          for (index_t i = 0; i < n; ++i)
            for (index_t j = 0; j < s; ++j) {
              const std::size_t k = std::size_t(i) * s + j;
              if (j < w) {
                dq_used.push_back(dq[k]);
                hq_used.push_back(hq[k]);
              } else if (dq[k] != 1e300) {
                FAIL_CHECK("Q(", i, ", ", j, ") = ", dq[k], " written beyond width ", w);
              }
            }
          check_close(dq_used, hq_used, double(max_len), "Q = A·P", norm_inf);
          check_close(dg, hg, double(n), "PᵀQ", cross_scale(hP.data(), hQ.data(), n, s));
          const auto dg2 = dev.spmm_gram(dP, w, dQ);  // bitwise reproducible
          CHECK(std::memcmp(dg.data(), dg2.data(), dg.size() * sizeof(double)) == 0);
        }
      }
      CHECK_THROWS_AS(dev.force_spmm_gram(1, detail::SpmmGramVariant{8, 1}), InputError);
    }
  }
}
