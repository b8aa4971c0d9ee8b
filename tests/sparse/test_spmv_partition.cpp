// The nonzero partition and carry scheme of the nonzero-balanced SpMV kernels, checked on the host:
// the partition against a brute-force definition, and a scalar model of the kernels' tile/block/
// fix-up decomposition (same index arithmetic as sparse/cuda/spmv_nnz.cu, without the shuffles)
// against a plain row-by-row product. The model also checks that every row is written exactly once
// and that the block carries the kernel would produce are the ones the plan's runs expect.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_partition.hpp"
#include "sparse_test_util.hpp"

using namespace krysp;
using namespace krysp::detail;
using krysp::test::with_row_lengths;

namespace {

/// Scalar model of spmv_nnz_kernel (see spmv_nnz.cu): blocks in index order; each block publishes
/// its carry, and the block that writes a row begun in earlier blocks adds their carries (look-back).
void model_spmv(const CsrMatrix<double>& A, int k, int nw, double alpha, const std::vector<double>& x, double beta,
                std::vector<double>& y) {
  const index_t rows = A.rows(), nnz = A.nnz();
  const index_t* rp = A.row_ptr().data();
  const index_t* ci = A.col_idx().data();
  const double* va = A.values().data();
  const NnzGeometry g = nnz_geometry(nnz, k, nw);
  if (nnz == 0) {
    for (auto& v : y) v = beta == 0 ? 0.0 : beta * v;
    return;
  }
  const std::vector<index_t> part = nnz_partition_host(rp, rows, nnz, g);
  const std::vector<index_t> bcr = block_carry_rows_host(rp, rows, nnz, g);
  const std::vector<index_t> carry_in = carry_in_counts(carry_runs(bcr), g.num_blocks);
  std::vector<double> block_carry(std::size_t(g.num_blocks), std::nan(""));
  std::vector<int> writes(std::size_t(rows), 0);
  const index_t TILE = g.tile;
  for (index_t b = 0; b < g.num_blocks; ++b) {
    std::vector<index_t> s_crow(static_cast<std::size_t>(nw));
    std::vector<double> s_cval(static_cast<std::size_t>(nw));
    std::vector<std::vector<double>> scan(static_cast<std::size_t>(nw), std::vector<double>(static_cast<std::size_t>(TILE)));
    for (int w = 0; w < nw; ++w) {
      const index_t t = b * nw + w;
      s_crow[w] = -1;
      s_cval[w] = 0;
      if (t >= g.num_tiles) continue;
      const index_t r0 = part[t], r1 = part[t + 1], s = t * TILE;
      const int len = int(std::min<std::int64_t>(TILE, nnz - s));
      std::vector<bool> head(std::size_t(TILE), false);
      for (index_t r = r0 + 1; r <= r1; ++r) {
        const index_t p = rp[r] - s;
        REQUIRE(p >= 0);  // rows after part[t] start at or after the tile
        REQUIRE(p <= TILE);
        if (p > 0 && p < TILE) head[p] = true;
      }
      for (int p = 0; p < TILE; ++p) {
        const double prod = p < len ? va[s + p] * x[ci[s + p]] : 0.0;
        scan[w][p] = (p == 0 || head[p]) ? prod : scan[w][p - 1] + prod;
      }
      const bool open = r1 < rows && rp[r1] < s + len;
      s_crow[w] = open ? r1 : -1;
      s_cval[w] = open ? scan[w][len - 1] : 0.0;
    }
    // Publish this block's carry.
    const index_t left = g.num_tiles - b * nw;
    const int last = int(std::min<index_t>(left, nw)) - 1;
    CHECK(s_crow[last] == bcr[b]);  // the kernel's block carry is the one the plan expects
    if (s_crow[last] >= 0) {
      double total = s_cval[last];
      for (int j = last - 1; j >= 0 && s_crow[j] == s_crow[last]; --j) total += s_cval[j];
      block_carry[b] = total;
    }
    // Look-back: the carries of the blocks before this one that hold pieces of its first row.
    double carry = 0;
    for (index_t i = 0; i < carry_in[b]; ++i) {
      const index_t p = b - carry_in[b] + i;
      REQUIRE(p >= 0);
      REQUIRE(!std::isnan(block_carry[p]));  // published before (lower block index)
      carry += block_carry[p];
    }
    const index_t block_start = b * nw * TILE;
    bool used = false;
    for (int w = 0; w < nw; ++w) {
      const index_t t = b * nw + w;
      if (t >= g.num_tiles) continue;
      const index_t r0 = part[t], r1 = part[t + 1], s = t * TILE;
      for (index_t r = r0; r < r1; ++r) {
        const index_t rb = rp[r], re = rp[r + 1];
        double sum = 0;
        if (re > rb) {
          REQUIRE(re - 1 - s >= 0);
          REQUIRE(re - 1 - s < TILE);
          sum = scan[w][re - 1 - s];
        }
        if (rb < s) {
          CHECK(r == r0);
          for (int j = w - 1; j >= 0 && s_crow[j] == r; --j) sum += s_cval[j];
          if (rb < block_start) {
            CHECK(carry_in[b] > 0);
            sum += carry;
            used = true;
          }
        }
        y[r] = beta == 0 ? alpha * sum : alpha * sum + beta * y[r];
        ++writes[r];
      }
    }
    CHECK(used == (carry_in[b] > 0));  // a block with carries to add writes the row they belong to
  }
  for (index_t r = 0; r < rows; ++r) REQUIRE_MESSAGE(writes[r] == 1, "row ", r, " written ", writes[r], " times");
}

void check_model(const CsrMatrix<double>& A, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(std::size_t(A.cols())), y0(std::size_t(A.rows()));
  for (auto& v : x) v = u(rng);
  for (auto& v : y0) v = u(rng);
  const double alpha = 1.25, beta = -0.5;
  // Reference: plain row sums.
  std::vector<double> ref(y0.size()), absr(y0.size());
  for (index_t i = 0; i < A.rows(); ++i) {
    double s = 0, a = 0;
    for (index_t p = A.row_ptr()(i); p < A.row_ptr()(i + 1); ++p) {
      s += A.values()(p) * x[A.col_idx()(p)];
      a += std::abs(A.values()(p) * x[A.col_idx()(p)]);
    }
    ref[i] = alpha * s + beta * y0[i];
    absr[i] = std::abs(alpha) * a + std::abs(beta * y0[i]);
  }
  for (int k : {4, 8, 16})
    for (int nw : {4, 8}) {
    CAPTURE(k);
    CAPTURE(nw);
    std::vector<double> y = y0;
    model_spmv(A, k, nw, alpha, x, beta, y);
    for (index_t i = 0; i < A.rows(); ++i) {
      CAPTURE(i);
      REQUIRE(std::abs(y[i] - ref[i]) <= 1e-13 * absr[i] + 1e-300);
    }
    std::vector<double> nan_y(y0.size(), std::nan(""));
    model_spmv(A, k, nw, alpha, x, 0.0, nan_y);
    for (index_t i = 0; i < A.rows(); ++i) REQUIRE(std::abs(nan_y[i] - (ref[i] - beta * y0[i])) <= 1e-13 * absr[i] + 1e-300);
  }
}

}  // namespace

TEST_CASE("nnz_geometry") {
  auto g = nnz_geometry(0, 8);
  CHECK(g.tile == 256);
  CHECK(g.num_tiles == 0);
  CHECK(g.num_blocks == 0);
  g = nnz_geometry(257, 8);
  CHECK(g.num_tiles == 2);
  CHECK(g.num_blocks == 1);
  g = nnz_geometry(256 * 4 * 3 + 1, 8);
  CHECK(g.num_tiles == 13);
  CHECK(g.num_blocks == 4);
  g = nnz_geometry(256 * 4 * 3 + 1, 8, 8);
  CHECK(g.warps_per_block == 8);
  CHECK(g.num_blocks == 2);
  CHECK_THROWS_AS(nnz_geometry(10, 0), InputError);
}

TEST_CASE("nnz partition matches its definition") {
  const CsrMatrix<double> A = with_row_lengths({0, 0, 3, 0, 200, 1, 0, 0, 600, 2, 0, 127, 129, 0}, 700, 1);
  for (int k : {4, 8, 16})
    for (int nw : {4, 8}) {
    const NnzGeometry g = nnz_geometry(A.nnz(), k, nw);
    const auto part = nnz_partition_host(A.row_ptr().data(), A.rows(), A.nnz(), g);
    REQUIRE(part.size() == std::size_t(g.num_tiles) + 1);
    CHECK(part.front() == 0);
    CHECK(part.back() == A.rows());
    for (index_t t = 1; t < g.num_tiles; ++t) {
      const index_t pos = t * g.tile, r = part[t];
      CHECK(A.row_ptr()(r) <= pos);  // row r holds nonzero pos
      CHECK(A.row_ptr()(r + 1) > pos);
    }
    const auto bcr = block_carry_rows_host(A.row_ptr().data(), A.rows(), A.nnz(), g);
    for (index_t b = 0; b < g.num_blocks; ++b) {
      const std::int64_t end = std::min<std::int64_t>(std::int64_t(b + 1) * nw * g.tile, A.nnz());
      // brute force: the row holding nonzero end-1 continues past end
      index_t expect = -1;
      if (end < A.nnz())
        for (index_t r = 0; r < A.rows(); ++r)
          if (A.row_ptr()(r) < end && A.row_ptr()(r + 1) > end) expect = r;
      CHECK(bcr[b] == expect);
    }
  }
}

TEST_CASE("carry_runs groups consecutive blocks of one row") {
  const auto runs = carry_runs({-1, 3, 3, 3, -1, 7, 9, 9, -1});
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].row == 3);
  CHECK(runs[0].first == 1);
  CHECK(runs[0].count == 3);
  CHECK(runs[1].row == 7);
  CHECK(runs[1].first == 5);
  CHECK(runs[1].count == 1);
  CHECK(runs[2].row == 9);
  CHECK(runs[2].first == 6);
  CHECK(runs[2].count == 2);
  CHECK(carry_runs({}).empty());
  CHECK(carry_runs({-1, -1}).empty());
  const auto in = carry_in_counts(runs, 9);
  CHECK(in == std::vector<index_t>{0, 0, 0, 0, 3, 0, 1, 0, 2});
  CHECK_THROWS_AS(carry_in_counts(carry_runs({-1, 4}), 2), InputError);
}

TEST_CASE("model of the nonzero-balanced kernels: structured cases") {
  SUBCASE("nnz = 0") { check_model(with_row_lengths({0, 0, 0}, 5, 2), 2); }
  SUBCASE("1 x 1") { check_model(with_row_lengths({1}, 1, 3), 3); }
  SUBCASE("leading, trailing and runs of empty rows") {
    std::vector<index_t> lens(3000, 0);
    for (std::size_t i = 5; i + 5 < lens.size(); i += 97) lens[i] = index_t(1 + i % 13);
    check_model(with_row_lengths(lens, 400, 4), 4);
  }
  SUBCASE("one dense row of 100k entries") {
    std::vector<index_t> lens(301, 2);
    lens[150] = 100000;
    lens[0] = 0;
    check_model(with_row_lengths(lens, 100000, 5), 5);
    check_model(with_row_lengths({100000}, 100000, 6), 6);
  }
  SUBCASE("rows longer than a block, back to back") {
    check_model(with_row_lengths({3, 2100, 4999, 0, 700, 1, 2048, 2049, 0, 5}, 5000, 7), 7);
  }
  SUBCASE("rows aligned with tiles (no carries)") {
    check_model(with_row_lengths(std::vector<index_t>(100, 128), 300, 8), 8);
    check_model(with_row_lengths(std::vector<index_t>(100, 512), 600, 9), 9);
  }
  SUBCASE("generated") {
    check_model(laplacian_2d(37, 41), 10);
    check_model(random_power_law(3000, 6, 2500, 11), 11);
    check_model(random_banded(4000, 9, 40, 12), 12);
  }
}

TEST_CASE("model of the nonzero-balanced kernels: random row lengths") {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 30; ++trial) {
    CAPTURE(trial);
    const index_t rows = index_t(1 + rng() % 400), cols = index_t(1 + rng() % 1500);
    std::vector<index_t> lens(static_cast<std::size_t>(rows));
    for (auto& l : lens) {
      const int kind = int(rng() % 10);
      l = kind < 3 ? 0 : kind < 8 ? index_t(rng() % 9) : index_t(rng() % (cols + 1));
      l = std::min(l, cols);
    }
    check_model(with_row_lengths(lens, cols, 1000 + trial), 2000 + trial);
  }
}
