#include "sparse/spmm_select.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.hpp"
#include "io/atomic_file.hpp"
#include "sparse/tune_cache.hpp"

namespace krysp {

const char* to_string(SpmmAlgorithm a) {
  switch (a) {
    case SpmmAlgorithm::VdlRow: return "vdl-row";
    case SpmmAlgorithm::VdlNnz: return "vdl-nnz";
    case SpmmAlgorithm::CscRow: return "csc-row";
    case SpmmAlgorithm::CscNnz: return "csc-nnz";
  }
  return "unknown";
}

std::string SpmmConfig::to_string() const {
  std::ostringstream os;
  os << krysp::to_string(algorithm) << "/s" << subwarp;
  if (is_vdl(algorithm)) os << "/q" << col_lanes << "/v" << per_lane;
  else os << "/c" << per_lane;
  if (is_nnz_balanced(algorithm)) os << "/k" << items_per_warp;
  return os.str();
}

int spmm_pow2_at_least(double v, int lo, int hi) {
  int w = lo;
  while (w < hi && w < v) w *= 2;
  return w;
}

namespace {

index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }
int vec_width(int value_bytes) { return value_bytes == 4 ? 4 : 2; }
bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

SpmmConfig complete_spmm_config(SpmmConfig c, index_t N, int value_bytes, const RowStats& s) {
  using namespace spmm_rule;
  N = std::max<index_t>(N, 1);
  if (is_vdl(c.algorithm)) {
    const index_t nvec = ceil_div(N, vec_width(value_bytes));
    if (c.per_lane == 0)
      c.per_lane = c.col_lanes > 0 ? int(std::min<index_t>(2, ceil_div(nvec, c.col_lanes)))
                                   : int(std::min<index_t>(kVdlVectorsPerLane, nvec));
    if (c.col_lanes == 0 && c.per_lane > 0) {
      int q = spmm_pow2_at_least(double(ceil_div(nvec, c.per_lane)), 1, 32);
      if (c.subwarp > 0) q = std::min(q, c.subwarp);
      c.col_lanes = q;
    }
    if (c.subwarp == 0) {
      const int p = spmm_pow2_at_least(s.mean / kVdlNnzPerLane, 1, 32);
      c.subwarp = std::min(32, std::max(2, std::max(c.col_lanes, 1) * p));
    }
  } else {
    if (c.subwarp == 0) c.subwarp = spmm_pow2_at_least(double(N), 2, 32);
    if (c.per_lane == 0) c.per_lane = N > c.subwarp ? 2 : 1;
  }
  if (is_nnz_balanced(c.algorithm) && c.items_per_warp == 0)
    c.items_per_warp = double(s.rows) + double(s.nnz) < kSmallItems ? kItemsPerWarpSmall : kItemsPerWarp;
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
  if (is_vdl(c.algorithm)) {
    if (!pow2(c.col_lanes) || c.col_lanes > c.subwarp)
      return fail("col_lanes " + std::to_string(c.col_lanes) + " is not a power of two <= subwarp " +
                  std::to_string(c.subwarp));
  } else if (c.col_lanes != 0) {
    return fail("col_lanes must be 0 for the CSC kernels, not " + std::to_string(c.col_lanes));
  }
  if (c.per_lane != 1 && c.per_lane != 2) return fail("per_lane " + std::to_string(c.per_lane) + " is not 1 or 2");
  if (is_nnz_balanced(c.algorithm)) {
    if (c.items_per_warp < 4 || c.items_per_warp > 65536)
      return fail("items_per_warp " + std::to_string(c.items_per_warp) + " is not in [4, 65536]");
  } else if (c.items_per_warp != 0) {
    return fail("items_per_warp must be 0 for the row-balanced kernels, not " + std::to_string(c.items_per_warp));
  }
  return true;
}

namespace {
double trips(const SpmmConfig& c, double len) {
  const double t = is_vdl(c.algorithm) ? len / (c.subwarp / c.col_lanes) : len / spmm_rule::kCscPairsPerTrip;
  return std::max(1.0, t);
}
}  // namespace

double spmm_max_row_trips(const RowStats& s, const SpmmConfig& c) { return trips(c, double(s.max_len)); }

double spmm_mean_trips_per_slot(const RowStats& s, const SpmmConfig& c) {
  const double slots = spmm_rule::kResidentThreads / c.subwarp;
  return double(s.rows) * trips(c, s.mean) / slots;
}

bool spmm_long_row(const RowStats& s, const SpmmConfig& c) {
  using namespace spmm_rule;
  return spmm_max_row_trips(s, c) > kLongRowFactor * std::max(kMinLongRowTrips, spmm_mean_trips_per_slot(s, c));
}

bool spmm_latency_bound(const RowStats& s) {
  using namespace spmm_rule;
  return double(s.rows) * 32 <= kLatencyBoundWaves * kResidentThreads;
}

SpmmConfig choose_spmm_rule(const RowStats& s, index_t N, int value_bytes) {
  using namespace spmm_rule;
  SpmmConfig c;
  if (s.rows == 0 || s.nnz == 0) {
    c.algorithm = N <= kVdlMaxN ? SpmmAlgorithm::VdlRow : SpmmAlgorithm::CscRow;
    return complete_spmm_config(c, N, value_bytes, s);
  }
  const bool small = spmm_latency_bound(s);
  const bool vdl = N <= kVdlMaxN || (small && N < kSmallCscMinN);
  c.algorithm = vdl ? SpmmAlgorithm::VdlRow : SpmmAlgorithm::CscRow;
  if (small) {
    c.subwarp = 32;
    if (vdl && N >= kSmallOneVectorMinN) c.per_lane = 1;
  }
  c = complete_spmm_config(c, N, value_bytes, s);
  if ((!small && s.cv() > kNnzBalanceMinCv) || spmm_long_row(s, c)) {
    c = SpmmConfig();
    c.algorithm = N <= kVdlMaxN ? SpmmAlgorithm::VdlNnz : SpmmAlgorithm::CscNnz;
    c = complete_spmm_config(c, N, value_bytes, s);
  }
  return c;
}

std::vector<SpmmConfig> spmm_candidates(const RowStats& s, index_t N, int value_bytes) {
  using namespace spmm_rule;
  std::vector<SpmmConfig> out;
  auto add = [&](SpmmConfig c) {
    c = complete_spmm_config(c, N, value_bytes, s);
    if (!is_valid(c)) return;
    if (!is_nnz_balanced(c.algorithm) && spmm_max_row_trips(s, c) > kTuneMaxRowTrips) return;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  out.push_back(choose_spmm_rule(s, N, value_bytes));
  auto make = [](SpmmAlgorithm a, int subwarp = 0, int per_lane = 0) {
    SpmmConfig c;
    c.algorithm = a;
    c.subwarp = subwarp;
    c.per_lane = per_lane;
    return c;
  };
  if (N <= kTuneVdlMaxN) {
    const SpmmConfig base = complete_spmm_config(make(SpmmAlgorithm::VdlRow), N, value_bytes, s);
    for (int w : {base.subwarp / 2, base.subwarp, base.subwarp * 2, 32})
      if (w >= 2 && w <= 32) add(make(SpmmAlgorithm::VdlRow, w));
    add(make(SpmmAlgorithm::VdlRow, base.subwarp, 1));
    add(make(SpmmAlgorithm::VdlNnz));
  }
  add(make(SpmmAlgorithm::CscRow));
  add(make(SpmmAlgorithm::CscRow, 32));
  add(make(SpmmAlgorithm::CscNnz));
  return out;
}

// ---- tuning cache ---------------------------------------------------------------------------------

namespace {

const char* const kSpmmCacheFile = "spmm_tune.txt";

std::string sanitize(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

void warn(const std::string& msg) { std::fprintf(stderr, "krysp: warning: SpMM tuning cache: %s\n", msg.c_str()); }

bool parse_int(const std::string& s, long long lo, long long hi, long long* out) {
  if (s.empty() || s.size() > 20) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!(std::isdigit(static_cast<unsigned char>(s[i])) || (i == 0 && s[i] == '-'))) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_hash(const std::string& s, std::uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  std::uint64_t h = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    h = h * 16 + std::uint64_t(d);
  }
  *out = h;
  return true;
}

bool same_key(const SpmmTuneKey& a, const SpmmTuneKey& b) {
  return a.fingerprint == b.fingerprint && a.precision == b.precision && sanitize(a.gpu) == sanitize(b.gpu) &&
         a.n == b.n && a.x_vec == b.x_vec && a.kernel_version == b.kernel_version;
}

/// Valid, current-version entries of the file, in file order; warns about corrupt lines.
std::vector<SpmmTuneEntry> read_entries(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> warnings;
  auto out = detail::parse_spmm_tune_text(text.str(), file, &warnings);
  for (const std::string& w : warnings) warn(w);
  return out;
}

}  // namespace

namespace detail {

std::vector<SpmmTuneEntry> parse_spmm_tune_text(std::string_view text, const std::string& name,
                                                std::vector<std::string>* warnings) {
  std::vector<SpmmTuneEntry> out;
  std::size_t number = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t nl = text.find('\n', pos);
    std::string line(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::string why;
    auto e = parse_spmm_tune_line(line, &why);
    if (!e) {
      if (warnings)
        warnings->push_back(name + ":" + std::to_string(number) + ": ignoring corrupt entry (" + why + ")");
      continue;
    }
    if (e->key.kernel_version != kSpmmKernelVersion) continue;  // stale: ignored (and dropped on the next store)
    out.push_back(*e);
  }
  return out;
}

std::string format_spmm_tune_line(const SpmmTuneEntry& e) {
  char hash[32], ms[64];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(e.key.fingerprint.hash));
  std::snprintf(ms, sizeof ms, "%.6g", e.ms);
  std::ostringstream os;
  os << "version=" << e.key.kernel_version << "\tprecision=" << e.key.precision
     << "\trows=" << e.key.fingerprint.rows << "\tcols=" << e.key.fingerprint.cols
     << "\tnnz=" << e.key.fingerprint.nnz << "\thash=" << hash << "\tn=" << e.key.n
     << "\txvec=" << (e.key.x_vec ? 1 : 0) << "\talgorithm=" << static_cast<int>(e.config.algorithm)
     << "\tsubwarp=" << e.config.subwarp << "\tcol_lanes=" << e.config.col_lanes
     << "\tper_lane=" << e.config.per_lane << "\titems_per_warp=" << e.config.items_per_warp << "\tms=" << ms
     << "\tgpu=" << sanitize(e.key.gpu);
  return os.str();
}

std::optional<SpmmTuneEntry> parse_spmm_tune_line(const std::string& line, std::string* why) {
  auto fail = [&](const std::string& m) -> std::optional<SpmmTuneEntry> {
    if (why) *why = m;
    return std::nullopt;
  };
  static const char* const kFields[] = {"version",  "precision", "rows",      "cols",     "nnz",
                                        "hash",     "n",         "xvec",      "algorithm", "subwarp",
                                        "col_lanes", "per_lane", "items_per_warp", "ms",   "gpu"};
  std::map<std::string, std::string> f;
  std::size_t pos = 0;
  while (pos <= line.size()) {
    const std::size_t tab = line.find('\t', pos);
    const std::string field = line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos);
    const std::size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0) return fail("field '" + field + "' is not name=value");
    const std::string name = field.substr(0, eq);
    bool known = false;
    for (const char* k : kFields) known = known || name == k;
    if (!known) return fail("unknown field '" + name + "'");
    if (f.count(name)) return fail("field '" + name + "' appears twice");
    f[name] = field.substr(eq + 1);
    if (tab == std::string::npos) break;
    pos = tab + 1;
  }
  for (const char* k : kFields)
    if (!f.count(k)) return fail(std::string("missing field '") + k + "'");

  SpmmTuneEntry e;
  long long v = 0;
  if (!parse_int(f["version"], 1, 1000000, &v)) return fail("bad version '" + f["version"] + "'");
  e.key.kernel_version = int(v);
  if (f["precision"] != "double" && f["precision"] != "float") return fail("bad precision '" + f["precision"] + "'");
  e.key.precision = f["precision"];
  if (!parse_int(f["rows"], 0, kMaxIndex, &v)) return fail("bad rows '" + f["rows"] + "'");
  e.key.fingerprint.rows = index_t(v);
  if (!parse_int(f["cols"], 0, kMaxIndex, &v)) return fail("bad cols '" + f["cols"] + "'");
  e.key.fingerprint.cols = index_t(v);
  if (!parse_int(f["nnz"], 0, kMaxNnz, &v)) return fail("bad nnz '" + f["nnz"] + "'");
  e.key.fingerprint.nnz = index_t(v);
  if (!parse_hash(f["hash"], &e.key.fingerprint.hash)) return fail("bad hash '" + f["hash"] + "'");
  if (!parse_int(f["n"], 1, kMaxIndex, &v)) return fail("bad n '" + f["n"] + "'");
  e.key.n = index_t(v);
  if (!parse_int(f["xvec"], 0, 1, &v)) return fail("bad xvec '" + f["xvec"] + "'");
  e.key.x_vec = v != 0;
  if (!parse_int(f["algorithm"], 0, kSpmmAlgorithmCount - 1, &v))
    return fail("bad algorithm '" + f["algorithm"] + "'");
  e.config.algorithm = static_cast<SpmmAlgorithm>(v);
  if (!parse_int(f["subwarp"], 0, 64, &v)) return fail("bad subwarp '" + f["subwarp"] + "'");
  e.config.subwarp = int(v);
  if (!parse_int(f["col_lanes"], 0, 64, &v)) return fail("bad col_lanes '" + f["col_lanes"] + "'");
  e.config.col_lanes = int(v);
  if (!parse_int(f["per_lane"], 0, 64, &v)) return fail("bad per_lane '" + f["per_lane"] + "'");
  e.config.per_lane = int(v);
  if (!parse_int(f["items_per_warp"], 0, 1 << 20, &v)) return fail("bad items_per_warp '" + f["items_per_warp"] + "'");
  e.config.items_per_warp = int(v);
  std::string bad;
  if (!is_valid(e.config, &bad)) return fail("invalid configuration: " + bad);
  {
    const std::string& s = f["ms"];
    errno = 0;
    char* end = nullptr;
    const double ms = s.empty() ? -1 : std::strtod(s.c_str(), &end);
    if (s.empty() || errno != 0 || *end != '\0' || !std::isfinite(ms) || ms < 0) return fail("bad ms '" + s + "'");
    e.ms = ms;
  }
  if (f["gpu"].empty()) return fail("empty gpu name");
  e.key.gpu = f["gpu"];
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
  namespace fs = std::filesystem;
  const fs::path path(file_);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) {
    warn("cannot create folder '" + path.parent_path().string() + "': " + ec.message());
    return false;
  }
  std::string text =
      "# krysp SpMM tuning cache: one entry per line, tab-separated name=value fields.\n"
      "# Safe to delete; see sparse/spmm_select.hpp.\n";
  for (const SpmmTuneEntry& e : read_entries(file_))
    if (!same_key(e.key, entry.key)) text += detail::format_spmm_tune_line(e) + "\n";
  text += detail::format_spmm_tune_line(entry) + "\n";
  try {
    io::AtomicOutput out(file_);
    {
      std::ofstream os(out.temp_path(), std::ios::binary);
      os << text;
      os.close();
      if (!os) {
        warn("cannot write '" + out.temp_path() + "'");
        return false;
      }
    }
    out.commit();
  } catch (const std::exception& ex) {
    warn(ex.what());
    return false;
  }
  return true;
}

}  // namespace krysp
