// Block CG's operations on the GPU against the host reference ops, on fresh random blocks:
// the Gram matrices (one and two at a time), the block combinations Y = alpha·X·C + beta·Y at
// every pair of widths the solver uses, the preconditioner (none, Jacobi, block Jacobi) on the
// first w columns, the residual and zero_columns, for widths 1 to 64 and n below, at and above
// one chunk of rows. Also: columns beyond the width unchanged bit for bit, and the products
// bitwise equal from run to run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "gpu/device_vectors.hpp"
#include "krysp/base/error.hpp"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"
#include "krysp/solvers/cuda/cuda_block_cg_ops.hpp"
#include "krysp/solvers/host/host_block_cg_ops.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_plan.hpp"
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

/// The entries (i, j) of an n × s row-major block for j < k.
std::vector<double> columns_of(const std::vector<double>& blk, index_t n, index_t s, index_t k) {
  std::vector<double> v;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < k; ++j) v.push_back(blk[std::size_t(i) * s + j]);
  return v;
}

/// The entries (i, j) of an n × s row-major block for j in [from, s).
std::vector<double> columns_from(const std::vector<double>& blk, index_t n, index_t s, index_t from) {
  std::vector<double> v;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = from; j < s; ++j) v.push_back(blk[std::size_t(i) * s + j]);
  return v;
}

/// Block CG's operations as block_cg() calls them, on both backends from the same random blocks,
/// at block width s and search width w ≤ s (w2 ≤ w after a rank drop).
template <class HostM, class DevM>
void compare_ops(const CsrMatrix<double>& A, index_t s, index_t w, index_t w2, const HostM* hM, const DevM* dM,
                 const char* label) {
  const std::string name = label;
  CAPTURE(name);
  CAPTURE(s);
  CAPTURE(w);
  CAPTURE(w2);
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
  auto hP = hblock(), hQ = hblock(), hX = hblock(), hY = hblock();
  auto dP = dblock(hP), dQ = dblock(hQ), dX = dblock(hX), dY = dblock(hY);
  const double pq = cross_scale(hP.data(), hQ.data(), n, s);

  // Gram matrices, one and two at a time; bitwise reproducible
  check_close(dev.gram(dP, w, dQ, w), host.gram(hP, w, hQ, w), double(n), "gram PᵀQ", pq);
  check_close(dev.gram(dP, w, dQ, s), host.gram(hP, w, hQ, s), double(n), "gram PᵀQ (w × s)", pq);
  const auto [d1, d2] = dev.gram2(dP, w, dQ, dP);
  const auto [h1, h2] = host.gram2(hP, w, hQ, hP);
  check_close(d1, h1, double(n), "gram2 PᵀQ", pq);
  check_close(d2, h2, double(n), "gram2 PᵀP");
  const auto [e1, e2] = dev.gram2(dP, w, dQ, dP);
  CHECK(std::memcmp(d1.data(), e1.data(), d1.size() * sizeof(double)) == 0);
  CHECK(std::memcmp(d2.data(), e2.data(), d2.size() * sizeof(double)) == 0);
  for (index_t i = 0; i < w; ++i)  // PᵀP exactly symmetric
    for (index_t j = 0; j < i; ++j) CHECK(d2[cm(i, j, w)] == d2[cm(j, i, w)]);

  // Y = alpha·X·C + beta·Y at the widths the solver combines: (w → w), (w → w2), (s → w), (w → s)
  const std::vector<std::pair<index_t, index_t>> shapes{{w, w}, {w, w2}, {s, w}, {w, s}};
  for (const auto& [bx, by] : shapes) {
    for (const auto& [alpha, beta] : std::vector<std::pair<double, double>>{{1.0, 0.0}, {-1.0, 1.0}, {0.5, 2.0}}) {
      CAPTURE(bx);
      CAPTURE(by);
      CAPTURE(alpha);
      CAPTURE(beta);
      const auto C = test::random_vector(std::size_t(bx) * by);
      const auto Y0 = hvec(hY);
      dY.upload(Y0.data(), ns);
      host.combine(hX, bx, C, alpha, beta, hY, by);
      dev.combine(dX, bx, C, alpha, beta, dY, by);
      const auto Y1 = test::download(dY);
      check_close(Y1, hvec(hY), double(bx), "combine", 3.0);
      CHECK(columns_from(Y1, n, s, by) == columns_from(Y0, n, s, by));  // bitwise: beyond by untouched
    }
  }
  CHECK_THROWS_AS(dev.combine(dX, w, test::random_vector(std::size_t(w) * w), 1.0, 0.0, dX, w), InputError);
  CHECK_THROWS_AS(dev.combine(dX, w, test::random_vector(std::size_t(w) * w + 1), 1.0, 0.0, dY, w), InputError);

  // Z = M⁻¹·R on the first w columns; the others untouched
  {
    const auto Z0 = hvec(hY);
    dY.upload(Z0.data(), ns);
    host.precondition(hP, w, hY);
    dev.precondition(dP, w, dY);
    const auto Z1 = test::download(dY);
    check_close(Z1, hvec(hY), 8.0, "Z = M⁻¹·R", 1.0);
    CHECK(columns_from(Z1, n, s, w) == columns_from(Z0, n, s, w));
  }

  // the row-wise steps: W = Q·Cq − AP·ξ with Z = M⁻¹·W and {WᵀZ, WᵀW}; then X += P·Cx and
  // P = Z·Cw + P·Tt. Z itself is the backend's own (a diagonal M may be applied on the fly), so it
  // is checked through the products and the rotation. Columns of X with zero coefficients stay as
  // they were, bit for bit.
  {
    const index_t wq = std::min<index_t>(s, w + 1);  // the previous width (the block may have narrowed)
    const auto xi = test::random_vector(std::size_t(w) * w), Cq = test::random_vector(std::size_t(wq) * w);
    auto hZ = host.block();
    auto dZ = dev.block();
    dY.upload(hY.data(), ns);
    const auto [hwz, hww] = host.step(hQ, w, xi, hY, wq, Cq, hZ);
    const auto [dwz, dww] = dev.step(dQ, w, xi, dY, wq, Cq, dZ);
    check_close(columns_of(test::download(dY), n, s, w), columns_of(hvec(hY), n, s, w), double(w + wq), "step W", 2.0);
    check_close(dwz, hwz, double(n), "step WᵀZ", cross_scale(hY.data(), hZ.data(), n, s));
    check_close(dww, hww, double(n), "step WᵀW");
    for (index_t i = 0; i < w; ++i)  // WᵀW symmetric up to rounding
      for (index_t j = 0; j < i; ++j) CHECK(std::abs(dww[cm(i, j, w)] - dww[cm(j, i, w)]) <= 1e-12 * std::abs(dww[0]));

    auto Cx = test::random_vector(std::size_t(w) * s);
    for (index_t i = 0; i < w; ++i) Cx[cm(i, s - 1, w)] = 0.0;  // the last column does not move
    const auto Cw = test::random_vector(std::size_t(w) * w2), Tt = test::random_vector(std::size_t(w) * w2);
    dP.upload(hP.data(), ns);
    dX.upload(hX.data(), ns);
    const auto X0 = hvec(hX);
    host.rotate(hY, hZ, hP, hX, w, w2, Cw, Tt, Cx);
    dev.rotate(dY, dZ, dP, dX, w, w2, Cw, Tt, Cx);
    const auto X1 = test::download(dX);
    check_close(X1, hvec(hX), double(w), "rotate X", 1.0);
    for (index_t i = 0; i < n; ++i) CHECK(X1[std::size_t(i) * s + s - 1] == X0[std::size_t(i) * s + s - 1]);
    check_close(columns_of(test::download(dP), n, s, w2), columns_of(hvec(hP), n, s, w2), double(2 * w), "rotate P",
                16.0);
    // w2 = 0 (the block lost every direction): X's step only, from the new P's first w2 columns
    const index_t w3 = std::max<index_t>(w2, 1);
    const auto Cx3 = test::random_vector(std::size_t(w3) * s);
    host.rotate(hY, hZ, hP, hX, w3, 0, {}, {}, Cx3);
    dev.rotate(dY, dZ, dP, dX, w3, 0, {}, {}, Cx3);
    check_close(test::download(dX), hvec(hX), double(w + w3), "rotate X (w2 = 0)", 4.0);
    CHECK_THROWS_AS(dev.rotate(dY, dZ, dP, dX, w, w2, Cw, std::vector<double>(std::size_t(w) * w2 + 1), Cx),
                    InputError);
    CHECK_THROWS_AS(dev.step(dQ, w, std::vector<double>(std::size_t(w) * w + 1), dY, wq, Cq, dZ), InputError);
    hP = hblock();  // fresh operands for what follows (columns beyond the widths are the backends' own)
    hY = hblock();
    dP.upload(hP.data(), ns);
    dY.upload(hY.data(), ns);
  }

  // Q = A·P with PᵀQ, and the residual B − A·X
  {
    const auto hg = host.spmm_gram(hP, w, hQ);
    const auto dg = dev.spmm_gram(dP, w, dQ);
    check_close(dg, hg, double(n), "spmm_gram PᵀAP", cross_scale(hP.data(), hQ.data(), n, s));
    host.residual(hY, hX, hP);
    dev.residual(dY, dX, dP);
    check_close(test::download(dP), hvec(hP), 16.0, "R = B − A·X", 8.0);
  }

  // zero_columns
  std::vector<char> zero(s, 0);
  zero[s / 2] = 1;
  const auto X3 = test::download(dX);
  dev.zero_columns(dX, zero);
  const auto x = test::download(dX);
  for (index_t i = 0; i < n; i += 7) {
    CHECK(x[std::size_t(i) * s + s / 2] == 0.0);
    if (s > 1) CHECK(x[std::size_t(i) * s] == X3[std::size_t(i) * s]);
  }
}

/// compare_ops for the search widths the solver meets: the full block, one narrower, one column.
template <class HostM, class DevM>
void compare(const CsrMatrix<double>& A, index_t s, const HostM* hM, const DevM* dM, const char* label) {
  compare_ops(A, s, s, s, hM, dM, label);
  compare_ops(A, s, s, std::max<index_t>(1, s - 1), hM, dM, label);
  if (s > 1) compare_ops(A, s, std::max<index_t>(1, s / 2), 1, hM, dM, label);
}

}  // namespace

TEST_CASE("Block CG operations: GPU matches the host reference") {
  for (index_t grid : {3, 40, 300}) {  // n = 9, 1600, 90000: below, around and far above one chunk
    const auto A = laplacian_2d(grid, grid);
    SpmvPlan<double> plan(A);
    for (index_t s : {1, 2, 3, 5, 8, 12, 16, 33, 64}) {
      if (grid == 300 && s > 16) continue;  // keep the suite quick
      compare<Preconditioner<double>, Preconditioner<double>>(A, s, nullptr, nullptr, "none");
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

TEST_CASE("Block CG operations: narrow widths 1 to 8 with every search width and n around one warp of rows") {
  for (index_t rows : {29, 32, 35}) {
    const auto A = laplacian_2d(rows, 1);
    PrecondOptions jac;
    jac.kind = PrecondKind::Jacobi;
    SpmvPlan<double> plan(A);
    const auto hj = make_host_preconditioner(A, jac);
    const auto dj = make_device_preconditioner(A, plan, jac);
    for (index_t s = 1; s <= 8; ++s)
      for (index_t w = 1; w <= s; ++w) compare_ops(A, s, w, std::max<index_t>(1, w - 1), hj.get(), dj.get(), "jacobi");
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
      const auto row = test::download(drow), back = test::download(dback);
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
          const auto dq = test::download(dQ);
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
