// The AMG set-up's products in dense blocks (precond/cuda/amg_block_product.hpp) against
// spgemm_numeric (bitwise) and the host's amg::multiply (to rounding), on random node-structured
// matrices: full blocks, blocks with holes, empty strips, the compiled block shapes and others;
// the block patterns against a host computation (the product's pattern holds the product's
// blocks); R·(A·P)'s pattern as the block pattern expanded where P's blocks are full (block_expand);
// bad block sizes, patterns that miss blocks and maps without their blocks refused. Whole
// hierarchies with the block products on and off are compared in test_amg_block_setup_gpu.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_block_product.hpp"
#include "krysp/precond/cuda/amg_galerkin.hpp"
#include "gpu/amg_setup_checks.hpp"

using namespace krysp;

namespace {

using test::DeviceCsr;
using test::to_device;
using test::to_host;

/// A (strips·br) × (block_cols·bc) matrix: each strip has `per_strip` random block columns, and
/// each entry of those blocks is present with probability `fill` (values in [-1, 1)); every
/// `empty`-th strip has no entries.
amg::Csr<double> node_matrix(index_t strips, index_t block_cols, int br, int bc, int per_strip, double fill,
                             index_t empty, std::mt19937_64& rng) {
  amg::Csr<double> M;
  M.rows = strips * br;
  M.cols = block_cols * bc;
  M.row_ptr.assign(1, 0);
  std::uniform_int_distribution<index_t> col(0, block_cols - 1);
  std::uniform_real_distribution<double> u(0, 1), v(-1, 1);
  for (index_t I = 0; I < strips; ++I) {
    std::set<index_t> blocks;
    if (empty == 0 || I % empty != 0)
      while (index_t(blocks.size()) < std::min<index_t>(per_strip, block_cols)) blocks.insert(col(rng));
    for (int r = 0; r < br; ++r) {
      for (index_t J : blocks)
        for (int c = 0; c < bc; ++c)
          if (u(rng) < fill) M.col_idx.push_back(J * bc + c), M.values.push_back(v(rng));
      M.row_ptr.push_back(M.nnz());
    }
  }
  return M;
}

detail::BlockPattern pattern_of(const amg::Csr<double>& M, const DeviceCsr& d, int br, int bc) {
  return detail::block_pattern(M.rows, M.cols, M.nnz(), d.rp.data(), d.ci.data(), br, bc);
}

/// The block pattern computed on the host: each strip's distinct column blocks, sorted.
std::vector<std::vector<index_t>> host_pattern(const amg::Csr<double>& M, int br, int bc) {
  std::vector<std::vector<index_t>> out(std::size_t(M.rows / br));
  for (index_t i = 0; i < M.rows; ++i) {
    auto& s = out[std::size_t(i / br)];
    for (index_t p = M.row_ptr[std::size_t(i)]; p < M.row_ptr[std::size_t(i) + 1]; ++p)
      s.push_back(M.col_idx[std::size_t(p)] / bc);
  }
  for (auto& s : out) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  return out;
}

}  // namespace

TEST_CASE("AMG block products: A*B in dense blocks equals spgemm_numeric bitwise, the host product to rounding") {
  std::mt19937_64 rng(20261128);
  struct Case {
    int br, bk, bc;
    double fill;  // chance of each entry of a block
    index_t strips, mid, cols;
  };
  // The compiled shapes (3·3·6, 6·3·6, 6·6·6) and run-time ones; full blocks and blocks with holes.
  const std::vector<Case> cases = {{3, 3, 6, 1.0, 300, 250, 60},  {3, 3, 6, 0.5, 300, 250, 60},
                                   {6, 3, 6, 1.0, 80, 250, 70},   {6, 3, 6, 0.4, 80, 250, 70},
                                   {6, 6, 6, 0.7, 90, 90, 90},    {2, 2, 3, 0.6, 400, 400, 120},
                                   {8, 8, 8, 0.3, 40, 40, 40},    {1, 4, 2, 0.8, 200, 100, 50},
                                   {5, 7, 1, 0.5, 60, 70, 80}};
  for (const Case& c : cases) {
    CAPTURE(c.br);
    CAPTURE(c.bk);
    CAPTURE(c.bc);
    CAPTURE(c.fill);
    const amg::Csr<double> A = node_matrix(c.strips, c.mid, c.br, c.bk, 9, c.fill, 7, rng);
    const amg::Csr<double> B = node_matrix(c.mid, c.cols, c.bk, c.bc, 6, c.fill, 11, rng);
    const amg::Csr<double> C = amg::multiply(A, B);
    REQUIRE(C.nnz() > 0);
    const DeviceCsr a(A), b(B), cc(C);
    const detail::BlockPattern pa = pattern_of(A, a, c.br, c.bk), pb = pattern_of(B, b, c.bk, c.bc),
                               exact = pattern_of(C, cc, c.br, c.bc);
    // C's pattern as the set-up makes it: the product of the block patterns, with C's map.
    detail::BlockPattern pc = detail::block_product_pattern(pa, pb);
    detail::add_block_map(pc, C.rows, C.nnz(), cc.rp.data(), cc.ci.data());
    for (const detail::BlockPattern* t : {&pa, &pb, &exact, static_cast<const detail::BlockPattern*>(&pc)})
      REQUIRE(t->fits);
    // The patterns against the host's, strip by strip: A's, B's and C's exactly; the product's
    // holds C's, and equals it where the blocks are full.
    auto strips = [](const detail::BlockPattern& P) {
      const auto rp = to_host(P.rp, std::size_t(P.block_rows) + 1);
      const auto ci = to_host(P.ci, std::size_t(P.blocks));
      std::vector<std::vector<index_t>> out;
      for (index_t I = 0; I < P.block_rows; ++I)
        out.emplace_back(ci.begin() + rp[std::size_t(I)], ci.begin() + rp[std::size_t(I) + 1]);
      return out;
    };
    CHECK(strips(pa) == host_pattern(A, c.br, c.bk));
    CHECK(strips(pb) == host_pattern(B, c.bk, c.bc));
    const auto hc = host_pattern(C, c.br, c.bc);
    CHECK(strips(exact) == hc);
    const auto product = strips(pc);
    REQUIRE(product.size() == hc.size());
    bool holds = true;
    for (std::size_t I = 0; I < hc.size(); ++I)
      holds = holds && std::includes(product[I].begin(), product[I].end(), hc[I].begin(), hc[I].end());
    CHECK(holds);
    if (c.fill == 1.0) CHECK(product == hc);
    // The exact pattern of C misses blocks of the block product where blocks have holes: refused.
    if (exact.blocks < pc.blocks) CHECK_THROWS_AS(detail::block_pairs(pa, pb, exact), InputError);

    const detail::BlockPairs pairs = detail::block_pairs(pa, pb, pc);
    CHECK(pairs.pairs > 0);
    DeviceArray<double> da(std::max<std::size_t>(pa.values(), 1)), db(std::max<std::size_t>(pb.values(), 1)),
        dc(std::max<std::size_t>(pc.values(), 1)), got(C.values.size());
    detail::block_gather(pa, A.nnz(), a.va.data(), da.data());
    detail::block_gather(pb, B.nnz(), b.va.data(), db.data());
    detail::block_multiply(pairs, da.data(), db.data(), dc.data());
    detail::block_scatter(pc, C.nnz(), dc.data(), got.data());
    const std::vector<double> blocked = to_host(got, C.values.size());

    DeviceArray<double> ref(C.values.size());
    detail::spgemm_numeric(C.rows, a.rp.data(), a.ci.data(), a.va.data(), B.rows, B.nnz(), b.rp.data(), b.ci.data(),
                           b.va.data(), cc.rp.data(), cc.ci.data(), C.nnz(), ref.data());
    const std::vector<double> scalar = to_host(ref, C.values.size());
    CHECK(blocked == scalar);  // bitwise (a zero term never changes a sum)
    double worst = 0, scale = 0;
    for (std::size_t p = 0; p < blocked.size(); ++p) {
      worst = std::max(worst, std::abs(blocked[p] - C.values[p]));
      scale = std::max(scale, std::abs(C.values[p]));
    }
    CHECK(worst <= 1e-13 * scale);
    // A gather and a scatter through the map give the scalar values back.
    detail::block_gather(pc, C.nnz(), got.data(), dc.data());
    DeviceArray<double> back(C.values.size());
    detail::block_scatter(pc, C.nnz(), dc.data(), back.data());
    CHECK(to_host(back, C.values.size()) == blocked);
  }
}

TEST_CASE("AMG block products: with P's blocks full, R*(A*P)'s pattern is its block pattern expanded") {
  // R = Pᵀ, A with holes in its blocks (and empty strips), P's b×K blocks full: block_expand's
  // structure is the host product's exactly, and its map carries the blocked product's values
  // onto it (against the host's R·(A·P) to rounding). With holes in P the expansion still holds
  // the product's pattern (but need not equal it: the set-up then makes the symbolic products).
  std::mt19937_64 rng(20261128);
  struct Case {
    int b, K;
    double a_fill, p_fill;
    index_t nodes, aggregates;
  };
  const std::vector<Case> cases = {{3, 6, 0.6, 1.0, 300, 40}, {6, 6, 0.5, 1.0, 120, 25}, {2, 3, 1.0, 1.0, 200, 30},
                                   {3, 6, 0.6, 0.5, 300, 40}};
  for (const Case& c : cases) {
    CAPTURE(c.b);
    CAPTURE(c.K);
    CAPTURE(c.p_fill);
    const amg::Csr<double> A = node_matrix(c.nodes, c.nodes, c.b, c.b, 7, c.a_fill, 9, rng);
    const amg::Csr<double> P = node_matrix(c.nodes, c.aggregates, c.b, c.K, 3, c.p_fill, 0, rng);
    const amg::Csr<double> R = amg::transpose(P), RAP = amg::multiply(R, amg::multiply(A, P));
    const DeviceCsr a(A), p(P), r(R);
    const detail::BlockPattern pa = pattern_of(A, a, c.b, c.b), pp = pattern_of(P, p, c.b, c.K),
                               pr = pattern_of(R, r, c.K, c.b);
    const bool full = pp.values() == std::size_t(P.nnz());
    CHECK(full == (c.p_fill == 1.0));
    const detail::BlockPattern ap = detail::block_product_pattern(pa, pp);
    detail::BlockPattern rap = detail::block_product_pattern(pr, ap);
    DeviceArray<index_t> erp, eci;
    const index_t nnz = detail::block_expand(rap, erp, eci);
    REQUIRE(nnz == index_t(rap.values()));
    const auto hrp = to_host(erp, std::size_t(RAP.rows) + 1);
    const auto hci = to_host(eci, std::size_t(nnz));
    if (!full) {  // the expansion holds the product's pattern, row by row (perhaps more)
      for (index_t i = 0; i < RAP.rows; ++i)
        for (index_t k = RAP.row_ptr[std::size_t(i)]; k < RAP.row_ptr[std::size_t(i) + 1]; ++k)
          CHECK(std::binary_search(hci.begin() + hrp[std::size_t(i)], hci.begin() + hrp[std::size_t(i) + 1],
                                   RAP.col_idx[std::size_t(k)]));
      continue;
    }
    CHECK(hrp == RAP.row_ptr);
    CHECK(hci == RAP.col_idx);
    // The values through the pairs and the expansion's map, against the host's product.
    const detail::BlockPairs ap_pairs = detail::block_pairs(pa, pp, ap), rap_pairs = detail::block_pairs(pr, ap, rap);
    DeviceArray<double> da(std::max<std::size_t>(pa.values(), 1)), dp(std::max<std::size_t>(pp.values(), 1)),
        dr(std::max<std::size_t>(pr.values(), 1)), dap(std::max<std::size_t>(ap.values(), 1)),
        drap(std::max<std::size_t>(rap.values(), 1)), got(std::max<std::size_t>(std::size_t(nnz), 1));
    detail::block_gather(pa, A.nnz(), a.va.data(), da.data());
    detail::block_gather(pp, P.nnz(), p.va.data(), dp.data());
    detail::block_gather(pr, R.nnz(), r.va.data(), dr.data());
    detail::block_multiply(ap_pairs, da.data(), dp.data(), dap.data());
    detail::block_multiply(rap_pairs, dr.data(), dap.data(), drap.data());
    detail::block_scatter(rap, nnz, drap.data(), got.data());
    const std::vector<double> v = to_host(got, std::size_t(nnz));
    double worst = 0, scale = 0;
    for (std::size_t k = 0; k < v.size(); ++k) {
      worst = std::max(worst, std::abs(v[k] - RAP.values[k]));
      scale = std::max(scale, std::abs(RAP.values[k]));
    }
    CHECK(scale > 0);
    CHECK(worst <= 1e-12 * scale);
  }
}

TEST_CASE("AMG block products: block sizes that do not divide, or past the largest, are refused") {
  std::mt19937_64 rng(7);
  const amg::Csr<double> A = node_matrix(10, 10, 3, 3, 2, 1.0, 0, rng);
  const DeviceCsr a(A);
  CHECK_THROWS_AS(pattern_of(A, a, 4, 3), InputError);  // 30 rows in strips of 4
  CHECK_THROWS_AS(pattern_of(A, a, 3, 0), InputError);
  CHECK_THROWS_AS(pattern_of(A, a, 3, detail::kBlockProductMaxDim + 1), InputError);
  const detail::BlockPattern p3 = pattern_of(A, a, 3, 3), p1 = pattern_of(A, a, 1, 1);
  CHECK(p1.blocks == A.nnz());  // 1×1 blocks are the entries
  CHECK_THROWS_AS(detail::block_pairs(p3, p1, p3), InputError);  // 3×3 blocks against 1×1
  // No map is made where none is asked for.
  const detail::BlockPattern nomap =
      detail::block_pattern(A.rows, A.cols, A.nnz(), a.rp.data(), a.ci.data(), 3, 3, false);
  CHECK(nomap.map.size() == 0);
  CHECK(nomap.blocks == p3.blocks);
  // A map of entries whose blocks the pattern lacks: refused. A's pattern against a denser matrix.
  const amg::Csr<double> D = node_matrix(10, 10, 3, 3, 10, 1.0, 0, rng);
  const DeviceCsr d(D);
  detail::BlockPattern q = pattern_of(A, a, 3, 3);
  REQUIRE(q.blocks == 20);  // 2 of D's 10 blocks a strip
  CHECK_THROWS_AS(detail::add_block_map(q, D.rows, D.nnz(), d.rp.data(), d.ci.data()), InputError);
}
