#include "krysp/sparse/spmv_select.hpp"

#include <algorithm>

namespace krysp {

int subwarp_for_mean(double mean) {
  int w = 2;
  while (w < 32 && w < mean) w *= 2;
  return w;
}

namespace {
SpmvConfig row_sequential() {
  SpmvConfig c;
  c.algorithm = SpmvAlgorithm::RowSequential;
  c.subwarp = 32;
  c.nnz_per_thread = 0;
  return c;
}
SpmvConfig row_subwarp(int w) {
  SpmvConfig c;
  c.algorithm = SpmvAlgorithm::RowSubwarp;
  c.subwarp = w;
  c.nnz_per_thread = 0;
  return c;
}
SpmvConfig nnz(SpmvAlgorithm a, int k, int block_warps = 4) {
  SpmvConfig c;
  c.algorithm = a;
  c.subwarp = 32;
  c.nnz_per_thread = k;
  c.block_warps = block_warps;
  return c;
}
/// Loop trips of the longest row for a row kernel with `lanes` lanes per row.
double max_trips(const RowStats& s, int lanes) { return double(s.max_len) / lanes; }
}  // namespace

SpmvConfig choose_spmv_rule(const RowStats& s, const SpmvRuleParams& p) {
  if (s.rows == 0 || s.nnz == 0) return row_sequential();
  if (s.nnz >= p.large_nnz) return nnz(SpmvAlgorithm::NnzSequential, p.nnz_per_lane_large);
  int lanes = s.mean < p.subwarp_min_mean ? 1 : subwarp_for_mean(s.mean);
  while (lanes < 32 && max_trips(s, lanes) > p.max_row_trips) lanes = lanes == 1 ? 2 : 2 * lanes;
  if (max_trips(s, lanes) > p.max_row_trips_warp) return nnz(SpmvAlgorithm::NnzSequential, p.nnz_per_lane_small);
  return lanes == 1 ? row_sequential() : row_subwarp(lanes);
}

std::vector<SpmvConfig> spmv_candidates(const RowStats& s, const SpmvRuleParams& p) {
  std::vector<SpmvConfig> out;
  auto add = [&](const SpmvConfig& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  const SpmvConfig rule = choose_spmv_rule(s, p);
  add(rule);
  const double max_tune_trips = 4 * p.max_row_trips_warp;
  const int mean_w = subwarp_for_mean(s.mean);
  if (s.nnz >= p.large_nnz) {
    for (int k : {4, 8, 16}) add(nnz(SpmvAlgorithm::NnzSequential, k));
    for (int k : {4, 8}) add(nnz(SpmvAlgorithm::NnzSegmented, k));
    add(nnz(SpmvAlgorithm::NnzSequential, 8, 8));
    add(nnz(SpmvAlgorithm::NnzSegmented, 8, 8));
    if (max_trips(s, mean_w) <= max_tune_trips) add(row_subwarp(mean_w));
    return out;
  }
  if (s.mean <= p.tune_row_sequential_max_mean && max_trips(s, 1) <= max_tune_trips) add(row_sequential());
  const int w = rule.algorithm == SpmvAlgorithm::RowSubwarp ? rule.subwarp : mean_w;
  for (int v : {w / 2, w, w * 2})
    if (v >= 2 && v <= 32 && max_trips(s, v) <= max_tune_trips) add(row_subwarp(v));
  add(nnz(SpmvAlgorithm::NnzSequential, 8));
  add(nnz(SpmvAlgorithm::NnzSegmented, 4));
  return out;
}

}  // namespace krysp
