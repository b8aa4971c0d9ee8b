#include "krysp/sparse/spmm_select.hpp"
// The measurements behind the rules below are in docs/tuning.md.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmm_common.hpp"
#include "krysp/sparse/tune_cache.hpp"
#include "krysp/sparse/tune_file.hpp"

namespace krysp {

const char* to_string(SpmmAlgorithm a) {
  switch (a) {
    case SpmmAlgorithm::VdlRow: return "vdl-row";
    case SpmmAlgorithm::VdlNnz: return "vdl-nnz";
    case SpmmAlgorithm::CscRow: return "csc-row";
    case SpmmAlgorithm::CscNnz: return "csc-nnz";
    case SpmmAlgorithm::SeqNnz: return "seq-nnz";
  }
  return "unknown";
}

std::string SpmmConfig::to_string() const {
  std::ostringstream os;
  os << krysp::to_string(algorithm);
  if (algorithm != SpmmAlgorithm::SeqNnz) os << "/s" << subwarp;  // SeqNnz: always the whole warp
  if (is_vdl(algorithm)) os << "/q" << col_lanes << "/v" << per_lane;
  else if (algorithm != SpmmAlgorithm::SeqNnz) os << "/c" << per_lane;
  if (is_nnz_balanced(algorithm)) os << "/k" << items_per_warp;
  if (split_count() > 1) os << "/w" << ksplit;
  if (long_row > 0) os << "/l" << long_row;
  if (panel_count() > 1) os << "/p" << panels;
  const SpmmLaunchParams d{};
  if (launch.early_max_waves != d.early_max_waves) os << "/e" << launch.early_max_waves;
  if (launch.csc_row_rounds != d.csc_row_rounds || launch.csc_rounds_min_waves != d.csc_rounds_min_waves)
    os << "/r" << launch.csc_row_rounds << "@" << launch.csc_rounds_min_waves;
  if (launch.csc_batch_max_waves != d.csc_batch_max_waves || launch.csc_batch_min_subwarp != d.csc_batch_min_subwarp)
    os << "/b" << launch.csc_batch_max_waves << "@" << launch.csc_batch_min_subwarp;
  return os.str();
}

int spmm_pow2_at_least(double v, int lo, int hi) {
  int w = lo;
  while (w < hi && w < v) w *= 2;
  return w;
}

namespace {

index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }
/// The CSC sub-warp for N columns: the power of two >= N in [2, 32] (a lane per column).
int csc_subwarp(index_t N) { return spmm_pow2_at_least(double(N), 2, 32); }
int vec_width(int value_bytes) { return value_bytes == 4 ? 4 : 2; }
bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }
/// Largest launch threshold in waves accepted (far beyond any launch; keeps the products finite).
constexpr double kMaxLaunchWaves = 1e6;
/// One wave of `device`: the threads the rules' wave constants are counted in.
double resident_threads(const DevicePolicy& device) { return double(device.resident_threads()); }

}  // namespace

SpmmConfig complete_spmm_config(SpmmConfig c, index_t N, int value_bytes, const RowStats& s, const SpmmRuleParams& p) {
  N = std::max<index_t>(N, 1);
  if (c.algorithm == SpmmAlgorithm::SeqNnz) {  // one warp per unit, a lane walks all columns
    if (c.subwarp == 0) c.subwarp = 32;
    if (c.per_lane == 0) c.per_lane = 1;
  } else if (is_vdl(c.algorithm)) {
    const index_t nvec = ceil_div(N, vec_width(value_bytes));
    if (c.per_lane == 0)
      c.per_lane = c.col_lanes > 0 ? int(std::min<index_t>(2, ceil_div(nvec, c.col_lanes)))
                                   : int(std::min<index_t>(p.vdl_vectors_per_lane, nvec));
    if (c.col_lanes == 0 && c.per_lane > 0) {
      int q = spmm_pow2_at_least(double(ceil_div(nvec, c.per_lane)), 1, 32);
      if (c.subwarp > 0) q = std::min(q, c.subwarp);
      c.col_lanes = q;
    }
    if (c.subwarp == 0) {
      const int lanes = spmm_pow2_at_least(s.mean / p.vdl_nnz_per_lane, 1, 32);  // nonzero lanes P
      c.subwarp = std::min(32, std::max(2, std::max(c.col_lanes, 1) * lanes));
    }
  } else {
    if (c.subwarp == 0) c.subwarp = csc_subwarp(N);
    if (c.per_lane == 0) c.per_lane = N > c.subwarp ? 2 : 1;
  }
  if (is_nnz_balanced(c.algorithm) && c.items_per_warp == 0)
    c.items_per_warp = double(s.rows) + double(s.nnz) < p.small_items ? p.items_per_warp_small : p.items_per_warp;
  return c;
}

bool is_valid(const SpmmConfig& c, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  const int a = static_cast<int>(c.algorithm);
  if (a < 0 || a >= kSpmmAlgorithmCount) return fail("algorithm " + std::to_string(a) + " does not exist");
  if (!pow2(c.subwarp) || c.subwarp < 2 || c.subwarp > 32)
    return fail("subwarp " + std::to_string(c.subwarp) + " is not 2, 4, 8, 16 or 32");
  if (c.algorithm == SpmmAlgorithm::SeqNnz) {
    if (c.subwarp != 32) return fail("subwarp must be 32 for seq-nnz, not " + std::to_string(c.subwarp));
    if (c.col_lanes != 0) return fail("col_lanes must be 0 for seq-nnz, not " + std::to_string(c.col_lanes));
    if (c.per_lane != 1) return fail("per_lane must be 1 for seq-nnz, not " + std::to_string(c.per_lane));
  } else if (is_vdl(c.algorithm)) {
    if (!pow2(c.col_lanes) || c.col_lanes > c.subwarp)
      return fail("col_lanes " + std::to_string(c.col_lanes) + " is not a power of two <= subwarp " +
                  std::to_string(c.subwarp));
  } else if (c.col_lanes != 0) {
    return fail("col_lanes must be 0 for the CSC kernels, not " + std::to_string(c.col_lanes));
  }
  if (c.per_lane == 4 && c.algorithm != SpmmAlgorithm::VdlRow)
    return fail("per_lane 4 is only for vdl-row, not " + std::string(krysp::to_string(c.algorithm)));
  if (c.per_lane == 4 && c.col_lanes != 1)
    return fail("per_lane 4 needs one column lane, not " + std::to_string(c.col_lanes));
  if (c.per_lane != 1 && c.per_lane != 2 && c.per_lane != 4)
    return fail("per_lane " + std::to_string(c.per_lane) + " is not 1, 2 or 4");
  if (is_nnz_balanced(c.algorithm)) {
    if (c.items_per_warp < 4 || c.items_per_warp > 65536)
      return fail("items_per_warp " + std::to_string(c.items_per_warp) + " is not in [4, 65536]");
  } else if (c.items_per_warp != 0) {
    return fail("items_per_warp must be 0 for the row-balanced kernels, not " + std::to_string(c.items_per_warp));
  }
  if (c.ksplit < 0 || c.ksplit > 8 || (c.ksplit > 1 && !pow2(c.ksplit)))
    return fail("ksplit " + std::to_string(c.ksplit) + " is not 0, 1, 2, 4 or 8");
  if (c.split_count() > 1 && c.algorithm != SpmmAlgorithm::CscRow)
    return fail("ksplit " + std::to_string(c.ksplit) + " is only for csc-row, not " + krysp::to_string(c.algorithm));
  if (c.long_row < 0) return fail("long_row " + std::to_string(c.long_row) + " is negative");
  if (c.long_row > 0 && c.algorithm != SpmmAlgorithm::CscRow && c.algorithm != SpmmAlgorithm::VdlRow)
    return fail("long_row is only for csc-row and vdl-row, not " + std::string(krysp::to_string(c.algorithm)));
  if (c.long_row > 0 && c.split_count() > 1)
    return fail("long_row and ksplit " + std::to_string(c.ksplit) + " do not go together");
  if (c.panels < 0 || c.panels > kMaxSpmmPanels)
    return fail("panels " + std::to_string(c.panels) + " is not in [0, " + std::to_string(kMaxSpmmPanels) + "]");
  const SpmmLaunchParams& l = c.launch;
  // finite, non-negative waves (a NaN compares false everywhere); rounds and sub-warps the kernels have
  if (!(l.early_max_waves >= 0 && l.early_max_waves <= kMaxLaunchWaves) ||
      !(l.csc_rounds_min_waves >= 0 && l.csc_rounds_min_waves <= kMaxLaunchWaves) ||
      !(l.csc_batch_max_waves >= 0 && l.csc_batch_max_waves <= kMaxLaunchWaves))
    return fail("launch thresholds in waves must be in [0, " + std::to_string(int(kMaxLaunchWaves)) + "]");
  if (l.csc_row_rounds < 1 || l.csc_row_rounds > 64)
    return fail("csc_row_rounds " + std::to_string(l.csc_row_rounds) + " is not in [1, 64]");
  if (l.csc_batch_min_subwarp < 1 || l.csc_batch_min_subwarp > 64)
    return fail("csc_batch_min_subwarp " + std::to_string(l.csc_batch_min_subwarp) + " is not in [1, 64]");
  return true;
}

index_t spmm_long_row_threshold(const DevicePolicy& device, const RowStats& s, const SpmmRuleParams& p) {
  if (!spmm_latency_bound(device, s, p)) return 0;
  const index_t t = std::max<index_t>(p.long_row_min, index_t(std::ceil(p.long_row_mean_factor * s.mean)));
  return s.max_len > t ? t : 0;
}

bool spmm_runs_at(const SpmmConfig& c, index_t N, int value_bytes) {
  const bool lean = c.col_lanes == 1 && N <= index_t(c.per_lane) * vec_width(value_bytes);
  if (c.per_lane == 4 && !lean) return false;
  if (c.long_row == 0) return true;
  if (c.algorithm == SpmmAlgorithm::CscRow)  // one chunk a block: the tickets count per column tile
    return ceil_div(N, detail::spmm_chunk_columns(false, c.subwarp, 0, c.per_lane, 0)) <= detail::kSpmmMaxTiles;
  return lean;
}

namespace {
double trips(const SpmmConfig& c, double len, const SpmmRuleParams& p) {
  const double t = is_vdl(c.algorithm) ? len / (c.subwarp / c.col_lanes)
                                       : len / c.split_count() / p.csc_pairs_per_trip;
  return std::max(1.0, t);
}
}  // namespace

double spmm_max_row_trips(const RowStats& s, const SpmmConfig& c, const SpmmRuleParams& p) {
  return trips(c, double(s.max_len), p);
}

double spmm_mean_trips_per_slot(const DevicePolicy& device, const RowStats& s, const SpmmConfig& c,
                                const SpmmRuleParams& p) {
  const double slots = resident_threads(device) / (c.subwarp * c.split_count());
  return double(s.rows) * trips(c, s.mean, p) / slots;
}

bool spmm_long_row(const DevicePolicy& device, const RowStats& s, const SpmmConfig& c, const SpmmRuleParams& p) {
  return spmm_max_row_trips(s, c, p) >
         p.long_row_factor * std::max(p.min_long_row_trips, spmm_mean_trips_per_slot(device, s, c, p));
}

bool spmm_latency_bound(const DevicePolicy& device, const RowStats& s, const SpmmRuleParams& p) {
  return double(s.rows) * 32 <= p.latency_bound_waves * resident_threads(device);
}

namespace {
/// The cost model of SpmmRuleParams::split_wave_cost: CscRow with `lanes` lanes and `per_lane` columns a lane, rows
/// shared by KS sub-warps.
double small_csc_cost(const DevicePolicy& device, const RowStats& s, index_t N, int lanes, int per_lane, int ks,
                      const SpmmRuleParams& p) {
  const double tiles = std::ceil(double(N) / (double(lanes) * per_lane));
  const double chain = std::ceil(double(s.max_len) / ks) * (per_lane == 2 ? p.csc_two_column_chain : 1.0);
  return chain + p.split_wave_cost * double(s.rows) * lanes * ks * tiles / resident_threads(device);
}
}  // namespace

int spmm_split_rule(const DevicePolicy& device, const RowStats& s, index_t N, const SpmmRuleParams& p) {
  const int S = csc_subwarp(N);
  int best = 1;
  double best_cost = 0;
  for (int ks = 1; ks <= 8; ks *= 2) {
    if (ks > 1 && double(s.max_len) / ks > p.split_max_slice) continue;
    const double cost = small_csc_cost(device, s, N, S, 1, ks, p);
    if (ks == 1 || cost < best_cost) best = ks, best_cost = cost;
  }
  return best;
}

SpmmConfig spmm_small_csc_rule(const DevicePolicy& device, const RowStats& s, index_t N, const SpmmRuleParams& p) {
  const int S = csc_subwarp(N), ks = spmm_split_rule(device, s, N, p);
  SpmmConfig c;
  c.algorithm = SpmmAlgorithm::CscRow;
  c.subwarp = S;
  c.per_lane = 1;
  c.ksplit = ks > 1 ? ks : 0;
  const int lanes2 = N > S ? S : S / 2;  // two columns a lane: one tile
  if ((N > S || S >= 16) && small_csc_cost(device, s, N, lanes2, 2, 1, p) < small_csc_cost(device, s, N, S, 1, ks, p)) {
    c.subwarp = lanes2;
    c.per_lane = 2;
    c.ksplit = 0;
  }
  return c;
}

int spmm_lean_vdl_vectors(index_t N, int value_bytes) {
  const index_t nvec = ceil_div(std::max<index_t>(N, 1), vec_width(value_bytes));
  return nvec > 4 ? 0 : spmm_pow2_at_least(double(nvec), 1, 4);
}

int spmm_small_vdl_subwarp(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes, int per_lane,
                           const SpmmRuleParams& p) {
  const double resident = resident_threads(device);
  if (double(s.rows) * 32 <= p.vdl_wide_waves * resident) return 32;
  SpmmConfig c;
  c.algorithm = SpmmAlgorithm::VdlRow;
  c.per_lane = per_lane;
  const int Q = complete_spmm_config(c, N, value_bytes, s, p).col_lanes;
  int best = 32;
  double best_cost = 0;
  for (int S = std::max(2, Q); S <= 32; S *= 2) {
    const double cost =
        std::ceil(double(s.max_len) / (S / Q)) + p.vdl_subwarp_wave_cost * double(s.rows) * S / resident;
    if (S == std::max(2, Q) || cost < best_cost) best = S, best_cost = cost;
  }
  return best;
}

namespace {
/// The lean VDL kernel for a latency-bound matrix (not complete), with the sub-warp of
/// spmm_small_vdl_subwarp: with `column_lanes`, a vector a lane on pow2 >= N / VW column lanes
/// where the mean row is at most p.vdl_column_lanes_max_mean; otherwise all columns a lane (the layout
/// that cuts long rows); nullopt where N is too wide for it (spmm_lean_vdl_vectors).
std::optional<SpmmConfig> small_lean_vdl(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes,
                                         bool column_lanes, const SpmmRuleParams& p) {
  const int vectors = spmm_lean_vdl_vectors(N, value_bytes);
  if (vectors == 0) return std::nullopt;
  const bool lanes = column_lanes && vectors > 1 && s.mean <= p.vdl_column_lanes_max_mean;
  SpmmConfig c;
  c.algorithm = SpmmAlgorithm::VdlRow;
  c.per_lane = lanes ? 1 : vectors;
  c.col_lanes = lanes ? vectors : 1;
  c.subwarp = spmm_small_vdl_subwarp(device, s, N, value_bytes, c.per_lane, p);
  return c;
}

/// The statistics the rule goes by for the rows left when those longer than t are cut: s with the
/// longest row t long.
RowStats rows_up_to(const RowStats& s, index_t t) {
  RowStats cut = s;
  cut.max_len = t;
  return cut;
}

/// The rule's pick for the rows up to t long (as if the longest were t long; unsplit: ksplit is not
/// for rows that short), with the longer ones cut (long_row = t); nullopt when that pick cannot cut
/// rows.
std::optional<SpmmConfig> rule_with_cut(const DevicePolicy& device, const RowStats& s, index_t t, index_t N,
                                        int value_bytes, const SpmmRuleParams& p) {
  const RowStats cut = rows_up_to(s, t);
  // one column lane: the layout that cuts rows
  const auto lean = small_lean_vdl(device, cut, N, value_bytes, false, p);
  SpmmConfig c =
      lean ? complete_spmm_config(*lean, N, value_bytes, cut, p) : spmm_uncut_rule(device, cut, N, value_bytes, p);
  c.ksplit = 0;
  c.long_row = int(t);
  if (!is_valid(c) || !spmm_runs_at(c, N, value_bytes)) return std::nullopt;
  return c;
}
}  // namespace

SpmmConfig choose_spmm_rule(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes,
                            const SpmmRuleParams& p) {
  if (const index_t t = spmm_long_row_threshold(device, s, p);
      t > 0 && s.max_len >= p.long_row_rule_min_cut * double(t))
    if (const auto c = rule_with_cut(device, s, t, N, value_bytes, p)) return *c;
  return spmm_uncut_rule(device, s, N, value_bytes, p);
}

SpmmConfig spmm_uncut_rule(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes,
                           const SpmmRuleParams& p) {
  SpmmConfig c;
  if (s.rows == 0 || s.nnz == 0) {
    c.algorithm = N <= p.vdl_max_n ? SpmmAlgorithm::VdlRow : SpmmAlgorithm::CscRow;
    return complete_spmm_config(c, N, value_bytes, s, p);
  }
  const bool small = spmm_latency_bound(device, s, p);
  int ks = 1;
  if (const auto lean = small ? small_lean_vdl(device, s, N, value_bytes, true, p) : std::nullopt) {
    c = *lean;
  } else if (small && N >= p.small_csc_min_n()) {  // long rows shared by sub-warps, or two columns a lane
    c = spmm_small_csc_rule(device, s, N, p);
    ks = c.split_count();
  } else {
    c.algorithm = N <= p.vdl_max_n ? SpmmAlgorithm::VdlRow : SpmmAlgorithm::CscRow;
    if (N >= p.half_lanes_min_n && N <= p.half_lanes_max_n && N % 2 == 0) {  // not latency-bound (small_lean_vdl above)
      c.subwarp = csc_subwarp(N) / 2;
      c.per_lane = 2;
    }
  }
  c = complete_spmm_config(c, N, value_bytes, s, p);
  const bool small_seq = small && N <= p.tune_seq_max_n &&
                         (N > p.vdl_max_n ? s.max_len >= p.small_seq_min_max_row
                                       : s.max_len >= p.small_seq_narrow_min_max_row && s.mean <= p.seq_max_mean_row);
  const bool small_stream = small && N > p.tune_seq_max_n && ks == 1 && s.max_len >= p.small_stream_min_max_row &&
                            s.mean < p.small_stream_max_mean &&
                            double(s.rows) * 32 > p.small_stream_min_waves * resident_threads(device);
  if ((!small && s.cv() > p.nnz_balance_min_cv) || spmm_long_row(device, s, c, p) || small_seq || small_stream) {
    c = SpmmConfig();
    c.algorithm = small_seq || (!small && N <= p.seq_max_n && s.mean <= p.seq_max_mean_row) ? SpmmAlgorithm::SeqNnz
                  : N <= p.vdl_max_n                                                     ? SpmmAlgorithm::VdlNnz
                                                                                      : SpmmAlgorithm::CscNnz;
    // CscNnz keeps the derived columns a lane (two above S) on latency-bound matrices too: since
    // pairs are loaded together two are faster than one (docs/tuning.md, "CscNnz columns a lane").
    c = complete_spmm_config(c, N, value_bytes, s, p);
  }
  return c;
}

std::vector<SpmmConfig> spmm_candidates(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes,
                                        const SpmmRuleParams& p) {
  std::vector<SpmmConfig> out;
  // c completed for the rows of `rows` (s, or those left when long rows are cut), if it can run
  auto add_for = [&](SpmmConfig c, const RowStats& rows) {
    c = complete_spmm_config(c, N, value_bytes, rows, p);
    if (!is_valid(c) || !spmm_runs_at(c, N, value_bytes)) return;
    if (!is_nnz_balanced(c.algorithm) && spmm_max_row_trips(rows, c, p) > p.tune_max_row_trips) return;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  auto add = [&](const SpmmConfig& c) { add_for(c, s); };
  out.push_back(choose_spmm_rule(device, s, N, value_bytes, p));
  auto make = [](SpmmAlgorithm a, int subwarp = 0, int per_lane = 0) {
    SpmmConfig c;
    c.algorithm = a;
    c.subwarp = subwarp;
    c.per_lane = per_lane;
    return c;
  };
  if (N <= p.tune_vdl_max_n) {
    const SpmmConfig base = complete_spmm_config(make(SpmmAlgorithm::VdlRow), N, value_bytes, s, p);
    for (int w : {base.subwarp / 2, base.subwarp, base.subwarp * 2, 32})
      if (w >= 2 && w <= 32) add(make(SpmmAlgorithm::VdlRow, w));
    for (int w : {base.subwarp / 2, base.subwarp, base.subwarp * 2, 32})  // one vector a lane: more column lanes
      if (w >= 2 && w <= 32) add(make(SpmmAlgorithm::VdlRow, w, 1));
    add(make(SpmmAlgorithm::VdlNnz));
  }
  // the lean VDL kernel with four vectors a lane, where the derived layout needs column lanes
  const bool lean4 = spmm_lean_vdl_vectors(N, value_bytes) == 4;
  if (lean4) {
    const SpmmConfig base = complete_spmm_config(make(SpmmAlgorithm::VdlRow, 0, 4), N, value_bytes, s, p);
    for (int w : {base.subwarp / 2, base.subwarp, base.subwarp * 2, 32})
      if (w >= 2 && w <= 32) add(make(SpmmAlgorithm::VdlRow, w, 4));
  }
  add(make(SpmmAlgorithm::CscRow));
  add(make(SpmmAlgorithm::CscRow, 32));
  // one column per lane (more column tiles) and rows shared by 2..8 sub-warps: shorter chains
  // where the launch is latency-bound
  const bool small = spmm_latency_bound(device, s, p);
  if (small) {
    const SpmmConfig base = complete_spmm_config(make(SpmmAlgorithm::CscRow), N, value_bytes, s, p);
    add(make(SpmmAlgorithm::CscRow, base.subwarp, 1));
    for (int w : {2, 4, 8})
      if (s.max_len >= 2 * w) {
        SpmmConfig c = make(SpmmAlgorithm::CscRow, base.subwarp, 1);
        c.ksplit = w;
        add(c);
      }
  }
  {  // half the lanes with two columns each: a pair's shared-memory reads and address serve two
     // columns; not from S = 8, where it never won (docs/tuning.md, "Half the CSC lanes")
    const SpmmConfig base = complete_spmm_config(make(SpmmAlgorithm::CscRow), N, value_bytes, s, p);
    if (base.subwarp >= 16) add(make(SpmmAlgorithm::CscRow, base.subwarp / 2, 2));
  }
  add(make(SpmmAlgorithm::CscNnz));
  if (small) add(make(SpmmAlgorithm::CscNnz, 0, 1));  // one column per lane: more tiles
  if (N <= p.tune_seq_max_n) add(make(SpmmAlgorithm::SeqNnz));
  if (const index_t t = spmm_long_row_threshold(device, s, p); t > 0) {  // long rows cut into pieces
    const RowStats cut = rows_up_to(s, t);                    // the row kernels' geometry for the rows left
    auto add_long = [&](SpmmConfig c) {
      c.long_row = int(t);
      add_for(c, cut);
    };
    if (const auto c = rule_with_cut(device, s, t, N, value_bytes, p)) add_long(*c);
    if (N <= p.tune_vdl_max_n) {
      add_long(make(SpmmAlgorithm::VdlRow));
      add_long(make(SpmmAlgorithm::VdlRow, 32));
    }
    if (lean4) {
      add_long(make(SpmmAlgorithm::VdlRow, 0, 4));
      add_long(make(SpmmAlgorithm::VdlRow, 32, 4));
    }
    const SpmmConfig base = complete_spmm_config(make(SpmmAlgorithm::CscRow), N, value_bytes, cut, p);
    add_long(base);
    add_long(make(SpmmAlgorithm::CscRow, base.subwarp, 1));
    if (base.subwarp >= 16) add_long(make(SpmmAlgorithm::CscRow, base.subwarp / 2, 2));
  }
  if (p.tune_launch) {  // the rule's pick with the launchers' other choices (opt-in)
    const SpmmConfig rule = out.front();
    const bool csc = !is_vdl(rule.algorithm) && rule.algorithm != SpmmAlgorithm::SeqNnz;
    const bool row = !is_nnz_balanced(rule.algorithm);
    std::vector<SpmmLaunchParams> variants;
    SpmmLaunchParams l;
    if (row) {
      l = {};
      l.early_max_waves = 0;  // never early
      variants.push_back(l);
      l.early_max_waves = 1e6;  // early at any size
      variants.push_back(l);
    }
    if (csc && row) {
      l = {};
      l.csc_row_rounds = 1;  // no row rounds
      variants.push_back(l);
      l.csc_row_rounds = SpmmLaunchParams{}.csc_row_rounds;
      l.csc_rounds_min_waves = 0;  // row rounds at any size
      variants.push_back(l);
    }
    if (csc) {
      l = {};
      l.csc_batch_min_subwarp = 64;  // never the batched walk
      variants.push_back(l);
      l = {};
      l.csc_batch_max_waves = 1e6;  // the batched walk at any size (sub-warps of 8 lanes up)
      variants.push_back(l);
    }
    for (const SpmmLaunchParams& v : variants) {
      SpmmConfig c = rule;
      c.launch = v;
      if (is_valid(c) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

// ---- tuning cache ---------------------------------------------------------------------------------

namespace {

const char* const kSpmmCacheFile = "spmm_tune.txt";

void warn(const std::string& msg) { std::fprintf(stderr, "krysp: warning: SpMM tuning cache: %s\n", msg.c_str()); }

bool same_key(const SpmmTuneKey& a, const SpmmTuneKey& b) {
  return a.fingerprint == b.fingerprint && a.precision == b.precision && a.n == b.n && a.x_vec == b.x_vec &&
         a.kernel_version == b.kernel_version && detail::sanitize_tune_field(a.gpu) == detail::sanitize_tune_field(b.gpu);
}

/// Valid, current-version entries of the file, in file order; warns about corrupt lines.
std::vector<SpmmTuneEntry> read_entries(const std::string& file) {
  std::vector<std::string> warnings;
  auto out = detail::parse_spmm_tune_text(detail::read_tune_file(file), file, &warnings);
  for (const std::string& w : warnings) warn(w);
  return out;
}

}  // namespace

namespace detail {

std::vector<SpmmTuneEntry> parse_spmm_tune_text(std::string_view text, const std::string& name,
                                                std::vector<std::string>* warnings) {
  std::vector<SpmmTuneEntry> out;
  for_each_tune_line(text, name, warnings, [&](const std::string& line, std::size_t, std::string* why) {
    auto e = parse_spmm_tune_line(line, why);
    if (!e) return false;
    if (e->key.kernel_version == kSpmmKernelVersion) out.push_back(*e);  // stale: ignored, dropped on the next store
    return true;
  });
  return out;
}

std::string format_spmm_tune_line(const SpmmTuneEntry& e) {
  std::ostringstream os;
  os << format_tune_key_head({e.key.kernel_version, e.key.precision, e.key.fingerprint, e.key.gpu}) << "\tn=" << e.key.n
     << "\txvec=" << (e.key.x_vec ? 1 : 0) << "\talgorithm=" << static_cast<int>(e.config.algorithm)
     << "\tsubwarp=" << e.config.subwarp << "\tcol_lanes=" << e.config.col_lanes << "\tper_lane=" << e.config.per_lane
     << "\titems_per_warp=" << e.config.items_per_warp << "\tksplit=" << e.config.split_count()
     << "\tpanels=" << e.config.panel_count() << "\tlong_row=" << e.config.long_row;
  // Launch thresholds only where they are not the defaults: lines of default ones stay readable by
  // earlier versions, which reject unknown fields.
  const SpmmLaunchParams& l = e.config.launch;
  const SpmmLaunchParams d{};
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", v);
    return std::string(b);
  };
  if (l.early_max_waves != d.early_max_waves) os << "\tearly_max_waves=" << num(l.early_max_waves);
  if (l.csc_row_rounds != d.csc_row_rounds) os << "\tcsc_row_rounds=" << l.csc_row_rounds;
  if (l.csc_rounds_min_waves != d.csc_rounds_min_waves) os << "\tcsc_rounds_min_waves=" << num(l.csc_rounds_min_waves);
  if (l.csc_batch_max_waves != d.csc_batch_max_waves) os << "\tcsc_batch_max_waves=" << num(l.csc_batch_max_waves);
  if (l.csc_batch_min_subwarp != d.csc_batch_min_subwarp) os << "\tcsc_batch_min_subwarp=" << l.csc_batch_min_subwarp;
  os << format_tune_tail(e.ms, e.key.gpu);
  return os.str();
}

std::optional<SpmmTuneEntry> parse_spmm_tune_line(const std::string& line, std::string* why) {
  auto fail = [&](const std::string& m) -> std::optional<SpmmTuneEntry> {
    if (why) *why = m;
    return std::nullopt;
  };
  static const std::vector<const char*> kFields = {"version",  "precision", "rows",      "cols",     "nnz",
                                                   "hash",     "n",         "xvec",      "algorithm", "subwarp",
                                                   "col_lanes", "per_lane", "items_per_warp", "ms",   "gpu"};
  // lines of version 1 have no panels, of versions up to 3 no ksplit
  // launch thresholds only where not the defaults (a missing one takes the default)
  auto f = split_tune_fields(line, kFields, why,
                             {"panels", "ksplit", "long_row", "early_max_waves", "csc_row_rounds",
                              "csc_rounds_min_waves", "csc_batch_max_waves", "csc_batch_min_subwarp"});
  if (!f) return std::nullopt;
  TuneKeyFields k;
  if (!parse_tune_key_head(*f, &k, why)) return std::nullopt;
  SpmmTuneEntry e;
  e.key.kernel_version = k.kernel_version;
  e.key.precision = k.precision;
  e.key.fingerprint = k.fingerprint;
  long long v = 0;
  auto& m = *f;
  if (!parse_tune_int(m["n"], 1, kMaxIndex, &v)) return fail("bad n '" + m["n"] + "'");
  e.key.n = index_t(v);
  if (!parse_tune_int(m["xvec"], 0, 1, &v)) return fail("bad xvec '" + m["xvec"] + "'");
  e.key.x_vec = v != 0;
  if (!parse_tune_int(m["algorithm"], 0, kSpmmAlgorithmCount - 1, &v)) return fail("bad algorithm '" + m["algorithm"] + "'");
  e.config.algorithm = static_cast<SpmmAlgorithm>(v);
  if (!parse_tune_int(m["subwarp"], 0, 64, &v)) return fail("bad subwarp '" + m["subwarp"] + "'");
  e.config.subwarp = int(v);
  if (!parse_tune_int(m["col_lanes"], 0, 64, &v)) return fail("bad col_lanes '" + m["col_lanes"] + "'");
  e.config.col_lanes = int(v);
  if (!parse_tune_int(m["per_lane"], 0, 64, &v)) return fail("bad per_lane '" + m["per_lane"] + "'");
  e.config.per_lane = int(v);
  if (!parse_tune_int(m["items_per_warp"], 0, 1 << 20, &v))
    return fail("bad items_per_warp '" + m["items_per_warp"] + "'");
  e.config.items_per_warp = int(v);
  if (m.count("ksplit")) {
    if (!parse_tune_int(m["ksplit"], 0, 8, &v)) return fail("bad ksplit '" + m["ksplit"] + "'");
    e.config.ksplit = int(v);
  }
  if (m.count("long_row")) {
    if (!parse_tune_int(m["long_row"], 0, kMaxIndex, &v)) return fail("bad long_row '" + m["long_row"] + "'");
    e.config.long_row = int(v);
  }
  if (m.count("panels")) {
    if (!parse_tune_int(m["panels"], 0, kMaxSpmmPanels, &v)) return fail("bad panels '" + m["panels"] + "'");
    e.config.panels = int(v);
  }
  auto waves = [&](const char* name, double* out) {
    if (!m.count(name)) return true;
    const std::string& t = m[name];
    char* end = nullptr;
    const double w = t.empty() ? -1.0 : std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !(w >= 0 && w <= kMaxLaunchWaves)) return false;
    *out = w;
    return true;
  };
  SpmmLaunchParams& l = e.config.launch;
  if (!waves("early_max_waves", &l.early_max_waves)) return fail("bad early_max_waves '" + m["early_max_waves"] + "'");
  if (!waves("csc_rounds_min_waves", &l.csc_rounds_min_waves))
    return fail("bad csc_rounds_min_waves '" + m["csc_rounds_min_waves"] + "'");
  if (!waves("csc_batch_max_waves", &l.csc_batch_max_waves))
    return fail("bad csc_batch_max_waves '" + m["csc_batch_max_waves"] + "'");
  if (m.count("csc_row_rounds")) {
    if (!parse_tune_int(m["csc_row_rounds"], 1, 64, &v))
      return fail("bad csc_row_rounds '" + m["csc_row_rounds"] + "'");
    l.csc_row_rounds = int(v);
  }
  if (m.count("csc_batch_min_subwarp")) {
    if (!parse_tune_int(m["csc_batch_min_subwarp"], 1, 64, &v))
      return fail("bad csc_batch_min_subwarp '" + m["csc_batch_min_subwarp"] + "'");
    l.csc_batch_min_subwarp = int(v);
  }
  std::string bad;
  if (!is_valid(e.config, &bad)) return fail("invalid configuration: " + bad);
  if (!parse_tune_tail(m, &e.ms, &e.key.gpu, why)) return std::nullopt;
  return e;
}

}  // namespace detail

SpmmTuneCache::SpmmTuneCache(const std::string& dir) {
  const std::string d = dir.empty() ? default_tune_cache_dir() : dir;
  if (!d.empty()) file_ = d + "/" + kSpmmCacheFile;
}

std::optional<SpmmTuneEntry> SpmmTuneCache::lookup(const SpmmTuneKey& key) const {
  if (!enabled()) return std::nullopt;
  std::optional<SpmmTuneEntry> found;
  for (const SpmmTuneEntry& e : read_entries(file_))
    if (same_key(e.key, key)) found = e;
  return found;
}

bool SpmmTuneCache::store(const SpmmTuneEntry& entry) const {
  if (!enabled()) return false;
  std::string text =
      "# krysp SpMM tuning cache: one entry per line, tab-separated name=value fields.\n"
      "# Safe to delete; see sparse/spmm_select.hpp.\n";
  for (const SpmmTuneEntry& e : read_entries(file_))
    if (!same_key(e.key, entry.key)) text += detail::format_spmm_tune_line(e) + "\n";
  text += detail::format_spmm_tune_line(entry) + "\n";
  return detail::write_tune_file(file_, text, warn);
}

}  // namespace krysp
