// SpMM policy as data. The launchers' own choices (SpmmLaunchParams in SpmmConfig::launch): with
// the default parameters they are exactly those of the constants the launchers had before, on
// every shape below; other values change them; the tuning cache and the configuration's name
// carry them, and a cache line without them reads as the defaults. The panel rule
// (SpmmPanelParams): the defaults give the former constants' picks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "krysp/sparse/cuda/spmm_common.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmm_panels.hpp"
#include "krysp/sparse/spmm_select.hpp"
#include "sparse_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;
using namespace krysp::detail;

namespace {

// The launchers' former constants and formulas (sparse/cuda/spmm_common.hpp, spmm_csc.cu), kept
// here as the reference the data must reproduce.
namespace old {
constexpr double kEarlyMaxWaves = 0.5;
constexpr int kCscRowRounds = 4;
constexpr double kCscRoundsMinWaves = 8;
constexpr double kCscBatchMaxWaves = 1;

bool early_launch(std::int64_t blocks, bool early, const DevicePolicy& d) {
  return early && blocks * kSpmmBlock <= std::int64_t(kEarlyMaxWaves * double(d.resident_threads()));
}
int row_rounds(index_t rows, int log2s, const DevicePolicy& d) {
  return (std::int64_t(rows) << log2s) >= std::int64_t(kCscRoundsMinWaves * double(d.resident_threads()))
             ? kCscRowRounds
             : 1;
}
bool batched(bool nnz_balanced, int log2s, int log2k, index_t rows, index_t nnz, index_t units, index_t pieces,
             const DevicePolicy& d) {
  const std::int64_t threads = nnz_balanced ? std::int64_t(units) * 32 : (std::int64_t(rows) << log2s) << log2k;
  const bool long_rows = std::int64_t(nnz) >= (std::int64_t(rows) << log2s);
  return log2s >= 3 && (log2k > 0 || nnz_balanced || pieces > 0 || long_rows ||
                        threads < std::int64_t(kCscBatchMaxWaves * double(d.resident_threads())));
}

// choose_spmm_panels with its former constants
int panels(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols, index_t N, int value_bytes,
           std::int64_t l2_bytes) {
  const double budget = 0.5 * double(l2_bytes);
  const double row_bytes = double(N) * value_bytes, x_bytes = double(cols) * row_bytes;
  if (budget <= 0 || rows == 0 || x_bytes <= budget) return 0;
  const int P = int(std::ceil(x_bytes / budget));
  if (P > kMaxSpmmPanels || P > cols) return 0;
  const double nnz = double(row_ptr[rows]);
  const double window = (1.0 / 16.0) * budget / row_bytes;
  const index_t step = std::max<index_t>(1, rows / 8192);
  std::int64_t far_n = 0, seen = 0;
  for (index_t i = 0; i < rows; i += step) {
    const double diag = double(i) * double(cols) / double(rows);
    for (index_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) far_n += std::abs(double(col_idx[k]) - diag) > window;
    seen += row_ptr[i + 1] - row_ptr[i];
  }
  const double far = seen > 0 ? double(far_n) / double(seen) : 0.0;
  const double sector = 32.0 * std::ceil(row_bytes / 32.0);
  const double miss = 1.0 - budget / x_bytes;
  const double matrix = nnz * (4.0 + value_bytes), per_row = 4.0 + 2.0 * row_bytes + 180.0;
  const double unsplit = matrix + double(rows) * per_row + x_bytes + 4.75 * nnz * far * sector * miss;
  const double split = matrix + double(rows) * P * per_row + x_bytes;
  return split < 0.8 * unsplit ? P : 0;
}
}  // namespace old

const DevicePolicy kDevices[] = {test::kH100Policy, {78, 2048, std::int64_t(40) << 20},
                                 {16, 1536, std::int64_t(4) << 20}, {1, 1024, 0}};

/// Row counts around every threshold of every device above, and the usual sizes.
std::vector<index_t> shape_rows() {
  std::vector<index_t> rows = {0, 1, 2, 7, 100, 1000, 6336, 10000, 100000, 1000000, 10000000};
  for (const DevicePolicy& d : kDevices)
    for (double waves : {0.5, 1.0, 8.0})
      for (int log2s = 0; log2s <= 5; ++log2s) {
        const std::int64_t edge = std::int64_t(waves * double(d.resident_threads())) >> log2s;
        for (std::int64_t r : {edge - 1, edge, edge + 1})
          if (r >= 0 && r < kMaxIndex) rows.push_back(index_t(r));
      }
  return rows;
}

}  // namespace

TEST_CASE("SpMM launch choices: the default parameters make the former constants' choices") {
  const SpmmLaunchParams lp{};
  const std::vector<index_t> rows = shape_rows();
  std::int64_t checked = 0;
  for (const DevicePolicy& d : kDevices) {
    for (index_t r : rows) {
      for (int log2s = 1; log2s <= 5; ++log2s) {
        CHECK(spmm_csc_row_rounds(r, log2s, d, lp) == old::row_rounds(r, log2s, d));
        CHECK(spmm_csc_row_rounds(r, log2s, d) == old::row_rounds(r, log2s, d));
        for (int log2k = 0; log2k <= 3; ++log2k)
          for (std::int64_t per_row : {0, 1, 3, 8, 32, 200})
            for (bool nnz_balanced : {false, true})
              for (index_t pieces : {0, 3}) {
                const std::int64_t nnz64 = std::min<std::int64_t>(std::int64_t(r) * per_row, kMaxIndex);
                const index_t nnz = index_t(nnz64);
                const index_t units = index_t((std::int64_t(r) + nnz + 255) / 256);
                const SpmmCscShape shape{nnz_balanced, log2s, log2k, r, nnz, units, pieces};
                CHECK(spmm_csc_batched(shape, d, lp) ==
                      old::batched(nnz_balanced, log2s, log2k, r, nnz, units, pieces, d));
                ++checked;
              }
      }
      // blocks of an early launch: the threads of the row kernel's grid
      for (std::int64_t blocks : {std::int64_t(r), std::int64_t(r) / 8, std::int64_t(r) / kSpmmBlock})
        for (bool early : {false, true})
          CHECK(spmm_early_launch(blocks, early, d, lp) == old::early_launch(blocks, early, d));
    }
  }
  CHECK(checked > 100000);
}

TEST_CASE("SpMM launch choices: other parameters change them") {
  const DevicePolicy d = test::kH100Policy;
  const index_t big = 10000000, small = 1000;
  SpmmLaunchParams lp;
  lp.csc_row_rounds = 2;
  CHECK(spmm_csc_row_rounds(big, 3, d, lp) == 2);
  CHECK(spmm_csc_row_rounds(small, 3, d, lp) == 1);
  lp.csc_rounds_min_waves = 0;
  CHECK(spmm_csc_row_rounds(small, 3, d, lp) == 2);
  SpmmLaunchParams never;
  never.early_max_waves = 0;
  CHECK(spmm_early_launch(1, true, d));
  CHECK_FALSE(spmm_early_launch(1, true, d, never));
  // short rows in a large launch: the plain walk by default, the batch with a larger threshold
  const SpmmCscShape shape{false, 3, 0, big, big, 0, 0};
  CHECK_FALSE(spmm_csc_batched(shape, d));
  SpmmLaunchParams wide;
  wide.csc_batch_max_waves = 1000;
  CHECK(spmm_csc_batched(shape, d, wide));
  SpmmLaunchParams narrow;
  narrow.csc_batch_min_subwarp = 4;
  CHECK_FALSE(spmm_csc_batched({false, 2, 0, small, small, 0, 0}, d));
  CHECK(spmm_csc_batched({false, 2, 0, small, small, 0, 0}, d, narrow));
}

TEST_CASE("SpMM launch parameters in the configuration: name, validity, tuning cache") {
  SpmmConfig c = test::cfg(SpmmAlgorithm::CscRow, 16, 0, 1);
  const std::string plain = c.to_string();
  CHECK(plain.find("/e") == std::string::npos);
  CHECK(plain.find("/r") == std::string::npos);
  SpmmConfig o = c;
  o.launch.early_max_waves = 0.25;
  o.launch.csc_row_rounds = 2;
  o.launch.csc_batch_min_subwarp = 16;
  CHECK(o != c);
  CHECK(o.to_string() == plain + "/e0.25/r2@8/b1@16");
  CHECK(is_valid(o));
  for (auto bad : {+[](SpmmLaunchParams& l) { l.early_max_waves = -1; },
                   +[](SpmmLaunchParams& l) { l.csc_rounds_min_waves = 1e300; },
                   +[](SpmmLaunchParams& l) { l.csc_row_rounds = 0; },
                   +[](SpmmLaunchParams& l) { l.csc_batch_min_subwarp = 0; }}) {
    SpmmConfig b = c;
    bad(b.launch);
    CHECK_FALSE(is_valid(b));
  }

  SpmmTuneEntry e;
  e.key.fingerprint = test::load("bcsstk01").fingerprint();
  e.key.precision = "double";
  e.key.gpu = "test GPU";
  e.key.n = 16;
  e.config = c;
  e.ms = 0.5;
  std::string why;
  // default thresholds: no fields written (earlier versions read the line), read back as defaults
  const std::string line = detail::format_spmm_tune_line(e);
  CHECK(line.find("early_max_waves") == std::string::npos);
  CHECK(line.find("csc_") == std::string::npos);
  const auto back = detail::parse_spmm_tune_line(line, &why);
  REQUIRE(back);
  CHECK(back->config == c);
  CHECK(back->config.launch == SpmmLaunchParams{});
  // other thresholds: written and read back exactly
  e.config = o;
  e.config.launch.csc_rounds_min_waves = 1.0 / 3.0;
  e.config.launch.csc_batch_max_waves = 2.5;
  const std::string line2 = detail::format_spmm_tune_line(e);
  const auto back2 = detail::parse_spmm_tune_line(line2, &why);
  REQUIRE(back2);
  CHECK(back2->config == e.config);
  CHECK(back2->config.launch.csc_rounds_min_waves == 1.0 / 3.0);
  // a bad value makes the line corrupt
  std::string broken = line2;
  broken.replace(broken.find("early_max_waves=0.25"), 20, "early_max_waves=x");
  CHECK_FALSE(detail::parse_spmm_tune_line(broken, &why));
  CHECK(why.find("early_max_waves") != std::string::npos);
}

TEST_CASE("SpMM panel rule: the default parameters make the former constants' picks") {
  const std::vector<CsrMatrix<double>> mats = {random_power_law(40000, 40.0, 300, 9), random_banded(40000, 8, 50, 9),
                                               random_power_law(20000, 3.0, 2000, 4), laplacian_2d(150, 150)};
  int split = 0, checked = 0;
  for (const auto& A : mats)
    for (index_t N : {1, 2, 3, 4, 8, 16, 64})
      for (int vb : {4, 8})
        for (std::int64_t l2 : {std::int64_t(0), std::int64_t(64) << 10, std::int64_t(256) << 10,
                                std::int64_t(2) << 20, std::int64_t(50) << 20}) {
          const auto* rp = A.row_ptr().data();
          const auto* ci = A.col_idx().data();
          const int want = old::panels(rp, ci, A.rows(), A.cols(), N, vb, l2);
          CHECK(choose_spmm_panels(rp, ci, A.rows(), A.cols(), N, vb, l2) == want);
          CHECK(choose_spmm_panels(rp, ci, A.rows(), A.cols(), N, vb, l2, SpmmRuleParams{}.panel) == want);
          split += want > 1;
          ++checked;
        }
  CHECK(checked == 4 * 7 * 2 * 5);
  CHECK(split > 0);  // the comparison covers splits, not only "no split"
  // the parameters are data: a larger L2 share (fewer, larger panels) or no gain required changes picks
  const auto A = random_power_law(40000, 40.0, 300, 9);
  const auto* rp = A.row_ptr().data();
  const auto* ci = A.col_idx().data();
  const std::int64_t l2 = std::int64_t(256) << 10;
  SpmmPanelParams wide;
  wide.l2_share = 1.0;
  const int p0 = choose_spmm_panels(rp, ci, A.rows(), A.cols(), 2, 8, l2);
  const int p1 = choose_spmm_panels(rp, ci, A.rows(), A.cols(), 2, 8, l2, wide);
  CHECK((p1 == 0 || p0 == 0 || p1 < p0));
  SpmmPanelParams never;
  never.min_gain = 0;
  for (std::int64_t c : {std::int64_t(64) << 10, std::int64_t(256) << 10})
    CHECK(choose_spmm_panels(rp, ci, A.rows(), A.cols(), 2, 8, c, never) == 0);
}

TEST_CASE("SpMM tuning candidates: launch variants only on request, valid and distinct") {
  const DevicePolicy d = test::kH100Policy;
  for (const auto& A : {laplacian_2d(300, 300), random_power_law(20000, 8.0, 400, 3), random_banded(5000, 8, 50, 2)}) {
    const RowStats s = A.row_stats();
    for (index_t N : {2, 8, 16, 32}) {
      const auto plain = spmm_candidates(d, s, N, 8);
      for (const SpmmConfig& c : plain) CHECK(c.launch == SpmmLaunchParams{});
      SpmmRuleParams p;
      p.tune_launch = true;
      const auto more = spmm_candidates(d, s, N, 8, p);
      REQUIRE(more.size() >= plain.size());
      // the same candidates first, then the rule's pick with other thresholds
      for (std::size_t i = 0; i < plain.size(); ++i) CHECK(more[i] == plain[i]);
      CHECK(more.size() > plain.size());
      for (std::size_t i = plain.size(); i < more.size(); ++i) {
        CHECK(is_valid(more[i]));
        CHECK(more[i].launch != SpmmLaunchParams{});
        SpmmConfig geometry = more[i];
        geometry.launch = {};
        CHECK(geometry == plain.front());
        for (std::size_t j = 0; j < i; ++j) CHECK(more[j] != more[i]);
      }
    }
  }
}
