// The rule-based SpMV choice and the tuning candidates: specific statistics, specific choices.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_select.hpp"

using namespace krysp;

namespace {
RowStats stats(index_t rows, double mean, double stddev, index_t max_len, index_t empty = 0) {
  RowStats s;
  s.rows = rows;
  s.nnz = index_t(std::llround(rows * mean));
  s.mean = mean;
  s.stddev = stddev;
  s.max_len = max_len;
  s.empty_rows = empty;
  return s;
}
SpmvConfig cfg(SpmvAlgorithm a, int w, int k, int b = 4) {
  SpmvConfig c;
  c.algorithm = a;
  c.subwarp = w;
  c.nnz_per_thread = k;
  c.block_warps = b;
  return c;
}
}  // namespace

TEST_CASE("subwarp_for_mean") {
  CHECK(subwarp_for_mean(0) == 2);
  CHECK(subwarp_for_mean(1) == 2);
  CHECK(subwarp_for_mean(2) == 2);
  CHECK(subwarp_for_mean(2.1) == 4);
  CHECK(subwarp_for_mean(7) == 8);
  CHECK(subwarp_for_mean(16) == 16);
  CHECK(subwarp_for_mean(17) == 32);
  CHECK(subwarp_for_mean(5000) == 32);
}

TEST_CASE("rule: specific matrices, specific kernels") {
  using A = SpmvAlgorithm;
  SUBCASE("empty matrix and nnz = 0") {
    CHECK(choose_spmv_rule(RowStats{}) == cfg(A::RowSequential, 32, 0));
    CHECK(choose_spmv_rule(stats(100, 0, 0, 0, 100)) == cfg(A::RowSequential, 32, 0));
  }
  SUBCASE("large (bandwidth-bound): nonzero-balanced, per-thread runs of 8") {
    CHECK(choose_spmv_rule(stats(4'096'000, 6.96, 0.2, 7)) == cfg(A::NnzSequential, 32, 8));   // 3-D Laplacian
    CHECK(choose_spmv_rule(stats(4'194'304, 5.0, 0.1, 5)) == cfg(A::NnzSequential, 32, 8));    // 2-D Laplacian
    CHECK(choose_spmv_rule(stats(3'000'000, 8, 40, 100'000)) == cfg(A::NnzSequential, 32, 8)); // power law
    CHECK(choose_spmv_rule(stats(1'500'000, 16, 9, 31)) == cfg(A::NnzSequential, 32, 8));      // banded
  }
  SUBCASE("small 3-D Laplacian: 7 per row -> sub-warp of 8") {
    CHECK(choose_spmv_rule(stats(64'000, 6.85, 0.4, 7)) == cfg(A::RowSubwarp, 8, 0));
  }
  SUBCASE("stiffness matrix: ~30 per row -> full warp") {
    CHECK(choose_spmv_rule(stats(20'000, 30, 8, 60)) == cfg(A::RowSubwarp, 32, 0));
  }
  SUBCASE("very short rows -> one thread per row") {
    CHECK(choose_spmv_rule(stats(100'000, 1.0, 0.0, 1)) == cfg(A::RowSequential, 32, 0));
    CHECK(choose_spmv_rule(stats(100'000, 2.2, 0.8, 5)) == cfg(A::RowSequential, 32, 0));
  }
  SUBCASE("a long row widens the sub-warp (rajat19: mean 4.7, max 338)") {
    CHECK(choose_spmv_rule(stats(1'157, 4.67, 11.3, 338)) == cfg(A::RowSubwarp, 32, 0));
    // pubmed: mean 4.5, max 171: 8 lanes would need 21 trips, 16 lanes 11.
    CHECK(choose_spmv_rule(stats(19'717, 4.5, 7.4, 171)) == cfg(A::RowSubwarp, 16, 0));
    // short rows with a longer one: thread per row becomes a sub-warp of 2 ... 4
    CHECK(choose_spmv_rule(stats(100'000, 1.5, 1, 40)) == cfg(A::RowSubwarp, 4, 0));
  }
  SUBCASE("a very long row in a small matrix -> nonzero-balanced (hangGlider_2: max 1463)") {
    CHECK(choose_spmv_rule(stats(1'647, 8.96, 36, 1463)) == cfg(A::NnzSequential, 32, 8));
    CHECK(choose_spmv_rule(stats(100'000, 1.5, 4, 2'000)) == cfg(A::NnzSequential, 32, 8));
  }
  SUBCASE("thresholds are the named constants") {
    const SpmvRuleParams p{};
    CHECK(choose_spmv_rule(stats(100'000, p.subwarp_min_mean - 0.01, 0, 3)).algorithm == A::RowSequential);
    CHECK(choose_spmv_rule(stats(100'000, p.subwarp_min_mean + 0.01, 0, 3)).algorithm == A::RowSubwarp);
    // mean 10: 16 lanes, widened to 32 only when the longest row needs more than p.max_row_trips trips
    const index_t at = index_t(p.max_row_trips * 16);
    CHECK(choose_spmv_rule(stats(10'000, 10, 1, at)) == cfg(A::RowSubwarp, 16, 0));
    CHECK(choose_spmv_rule(stats(10'000, 10, 1, at + 1)) == cfg(A::RowSubwarp, 32, 0));
    const index_t warp_at = index_t(p.max_row_trips_warp * 32);
    CHECK(choose_spmv_rule(stats(10'000, 10, 1, warp_at)) == cfg(A::RowSubwarp, 32, 0));
    CHECK(is_nnz_balanced(choose_spmv_rule(stats(10'000, 10, 1, warp_at + 1)).algorithm));
    RowStats below = stats(100'000, 7, 0.5, 8), at_large = below;
    below.nnz = index_t(p.large_nnz) - 1;
    at_large.nnz = index_t(p.large_nnz);
    CHECK(choose_spmv_rule(below) == cfg(A::RowSubwarp, 8, 0));
    CHECK(choose_spmv_rule(at_large) == cfg(A::NnzSequential, 32, p.nnz_per_lane_large));
  }
  SUBCASE("rule on generated matrices") {
    const CsrMatrix<double> lap = laplacian_3d(20, 20, 20);
    CHECK(choose_spmv_rule(row_stats(lap.host_view())) == cfg(A::RowSubwarp, 8, 0));
    std::vector<index_t> rp{0}, ci;
    std::vector<double> va;
    for (index_t i = 0; i < 2000; ++i) {
      const index_t len = i == 1000 ? 1500 : 5;
      for (index_t j = 0; j < len; ++j) {
        ci.push_back(j);
        va.push_back(1.0);
      }
      rp.push_back(index_t(ci.size()));
    }
    const auto one_long = CsrMatrix<double>::from_arrays(2000, 1500, rp, ci, va);
    CHECK(choose_spmv_rule(row_stats(one_long.host_view())) == cfg(A::NnzSequential, 32, 8));
  }
}

TEST_CASE("rule picks are always valid") {
  for (double mean : {0.0, 0.5, 1.0, 2.4, 3.0, 7.0, 31.0, 100.0, 5000.0})
    for (double cv : {0.0, 0.5, 2.0, 20.0})
      for (index_t mx : {0, 1, 10, 1000, 1'000'000}) {
        const SpmvConfig c = choose_spmv_rule(stats(100'000, mean, cv * mean, mx));
        std::string why;
        CHECK_MESSAGE(is_valid(c, &why), c.to_string(), ": ", why);
      }
}

TEST_CASE("tuning candidates") {
  using A = SpmvAlgorithm;
  auto has = [](const std::vector<SpmvConfig>& c, const SpmvConfig& x) { return std::count(c.begin(), c.end(), x); };
  SUBCASE("small even matrix: rule first, neighbours of its sub-warp, two nonzero-balanced") {
    const RowStats s = stats(100'000, 7, 0.5, 8);
    const auto c = spmv_candidates(s);
    REQUIRE(!c.empty());
    CHECK(c.front() == choose_spmv_rule(s));
    for (const auto& x : {cfg(A::RowSequential, 32, 0), cfg(A::RowSubwarp, 4, 0), cfg(A::RowSubwarp, 8, 0),
                          cfg(A::RowSubwarp, 16, 0), cfg(A::NnzSequential, 32, 8), cfg(A::NnzSegmented, 32, 4)})
      CHECK_MESSAGE(has(c, x) == 1, x.to_string());
    CHECK(c.size() == 6);
  }
  SUBCASE("large matrix: the nonzero-balanced family and one row kernel") {
    const RowStats s = stats(4'000'000, 7, 0.5, 8);
    const auto c = spmv_candidates(s);
    CHECK(c.front() == cfg(A::NnzSequential, 32, 8));
    for (const auto& x : {cfg(A::NnzSequential, 32, 4), cfg(A::NnzSequential, 32, 16), cfg(A::NnzSegmented, 32, 4),
                          cfg(A::NnzSegmented, 32, 8), cfg(A::NnzSequential, 32, 8, 8), cfg(A::NnzSegmented, 32, 8, 8),
                          cfg(A::RowSubwarp, 8, 0)})
      CHECK_MESSAGE(has(c, x) == 1, x.to_string());
    CHECK(c.size() == 8);
  }
  SUBCASE("every nonzero-balanced candidate uses a tile shape the plan partitions up front") {
    for (index_t rows : {1000, 100'000, 4'000'000})
      for (const auto& x : spmv_candidates(stats(rows, 7, 20, 5000)))
        if (is_nnz_balanced(x.algorithm)) {
          const bool known = (x.block_warps == 4 && (x.nnz_per_thread == 4 || x.nnz_per_thread == 8 ||
                                                     x.nnz_per_thread == 16)) ||
                             (x.block_warps == 8 && x.nnz_per_thread == 8);
          CHECK_MESSAGE(known, x.to_string());
        }
  }
  SUBCASE("a huge row keeps row-balanced kernels out of the timing") {
    for (index_t rows : {100'000, 4'000'000}) {
      const auto c = spmv_candidates(stats(rows, 7, 100, 1'000'000));
      for (const auto& x : c) CHECK(is_nnz_balanced(x.algorithm));
    }
  }
  SUBCASE("long rows: no thread-per-row candidate") {
    const auto c = spmv_candidates(stats(10'000, 60, 5, 80));
    CHECK(std::count_if(c.begin(), c.end(), [](const SpmvConfig& x) { return x.algorithm == A::RowSequential; }) == 0);
    CHECK(has(c, cfg(A::RowSubwarp, 32, 0)) == 1);
    CHECK(has(c, cfg(A::RowSubwarp, 16, 0)) == 1);
  }
  SUBCASE("all valid, no duplicates") {
    for (double mean : {0.0, 1.0, 3.0, 50.0})
      for (index_t rows : {1000, 10'000'000}) {
        const auto c = spmv_candidates(stats(rows, mean, mean, index_t(mean * 3)));
        for (const auto& x : c) {
          CHECK(is_valid(x));
          CHECK(has(c, x) == 1);
        }
      }
  }
}

TEST_CASE("config validation and names") {
  using A = SpmvAlgorithm;
  CHECK(is_valid(cfg(A::RowSubwarp, 2, 0)));
  CHECK(is_valid(cfg(A::RowSubwarp, 32, 0)));
  CHECK_FALSE(is_valid(cfg(A::RowSubwarp, 3, 0)));
  CHECK_FALSE(is_valid(cfg(A::RowSubwarp, 64, 0)));
  CHECK_FALSE(is_valid(cfg(A::RowSubwarp, 1, 0)));
  CHECK_FALSE(is_valid(cfg(A::RowSubwarp, 8, 4)));
  CHECK(is_valid(cfg(A::NnzSegmented, 32, 16)));
  CHECK_FALSE(is_valid(cfg(A::NnzSegmented, 32, 0)));
  CHECK_FALSE(is_valid(cfg(A::NnzSequential, 32, 12)));
  CHECK_FALSE(is_valid(cfg(static_cast<A>(4), 32, 0)));
  CHECK(is_valid(cfg(A::NnzSequential, 32, 8, 8)));
  CHECK_FALSE(is_valid(cfg(A::NnzSequential, 32, 8, 6)));
  CHECK_FALSE(is_valid(cfg(A::RowSubwarp, 8, 0, 8)));
  CHECK(cfg(A::NnzSequential, 32, 8, 8).to_string() == "nnz-sequential/k8/b8");
  CHECK_FALSE(is_valid(cfg(static_cast<A>(-1), 32, 0)));
  std::string why;
  CHECK_FALSE(is_valid(cfg(A::RowSubwarp, 6, 0), &why));
  CHECK(why.find("subwarp 6") != std::string::npos);
  CHECK(cfg(A::RowSubwarp, 8, 0).to_string() == "row-subwarp/w8");
  CHECK(cfg(A::NnzSegmented, 32, 8).to_string() == "nnz-segmented/k8");
  CHECK(cfg(A::RowSequential, 32, 0).to_string() == "row-sequential");
}
