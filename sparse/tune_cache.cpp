#include "krysp/sparse/tune_cache.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "krysp/sparse/tune_file.hpp"

namespace krysp {

namespace {

const char* const kFileName = "spmv_tune.txt";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

void warn(const std::string& msg) { std::fprintf(stderr, "krysp: warning: tuning cache: %s\n", msg.c_str()); }

bool same_key(const TuneKey& a, const TuneKey& b) {
  return a.fingerprint == b.fingerprint && a.precision == b.precision && a.kernel_version == b.kernel_version &&
         detail::sanitize_tune_field(a.gpu) == detail::sanitize_tune_field(b.gpu);
}

/// Valid, current-version entries of the file, in file order; warns about the others.
std::vector<TuneEntry> read_entries(const std::string& file) {
  std::vector<std::string> warnings;
  auto out = detail::parse_tune_text(detail::read_tune_file(file), file, &warnings);
  for (const std::string& w : warnings) warn(w);
  return out;
}

}  // namespace

std::string default_tune_cache_dir() {
  if (auto d = env("KRYSP_CACHE_DIR"); !d.empty()) return d;
  if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/krysp";
  if (auto d = env("HOME"); !d.empty()) return d + "/.cache/krysp";
  return "";
}

namespace detail {

std::vector<TuneEntry> parse_tune_text(std::string_view text, const std::string& name,
                                       std::vector<std::string>* warnings) {
  std::vector<TuneEntry> out;
  for_each_tune_line(text, name, warnings, [&](const std::string& line, std::size_t number, std::string* why) {
    auto e = parse_tune_line(line, why);
    if (!e) return false;
    if (e->key.kernel_version != kSpmvKernelVersion) {
      if (warnings)
        warnings->push_back(name + ":" + std::to_string(number) + ": ignoring stale entry (kernel version " +
                            std::to_string(e->key.kernel_version) + ", current " + std::to_string(kSpmvKernelVersion) +
                            ")");
      return true;
    }
    out.push_back(*e);
    return true;
  });
  return out;
}

std::string format_tune_line(const TuneEntry& e) {
  std::ostringstream os;
  os << format_tune_key_head({e.key.kernel_version, e.key.precision, e.key.fingerprint, e.key.gpu})
     << "\talgorithm=" << static_cast<int>(e.config.algorithm) << "\tsubwarp=" << e.config.subwarp
     << "\tnnz_per_thread=" << e.config.nnz_per_thread << "\tblock_warps=" << e.config.block_warps
     << format_tune_tail(e.ms, e.key.gpu);
  return os.str();
}

std::optional<TuneEntry> parse_tune_line(const std::string& line, std::string* why) {
  auto fail = [&](const std::string& m) -> std::optional<TuneEntry> {
    if (why) *why = m;
    return std::nullopt;
  };
  static const std::vector<const char*> kFields = {"version",   "precision", "rows",           "cols",
                                                   "nnz",       "hash",      "algorithm",      "subwarp",
                                                   "nnz_per_thread", "block_warps", "ms", "gpu"};
  auto f = split_tune_fields(line, kFields, why);
  if (!f) return std::nullopt;
  TuneKeyFields k;
  if (!parse_tune_key_head(*f, &k, why)) return std::nullopt;
  TuneEntry e;
  e.key.kernel_version = k.kernel_version;
  e.key.precision = k.precision;
  e.key.fingerprint = k.fingerprint;
  long long v = 0;
  auto& m = *f;
  if (!parse_tune_int(m["algorithm"], 0, kSpmvAlgorithmCount - 1, &v)) return fail("bad algorithm '" + m["algorithm"] + "'");
  e.config.algorithm = static_cast<SpmvAlgorithm>(v);
  if (!parse_tune_int(m["subwarp"], 0, 64, &v)) return fail("bad subwarp '" + m["subwarp"] + "'");
  e.config.subwarp = int(v);
  if (!parse_tune_int(m["nnz_per_thread"], 0, 64, &v)) return fail("bad nnz_per_thread '" + m["nnz_per_thread"] + "'");
  e.config.nnz_per_thread = int(v);
  if (!parse_tune_int(m["block_warps"], 0, 64, &v)) return fail("bad block_warps '" + m["block_warps"] + "'");
  e.config.block_warps = int(v);
  std::string bad;
  if (!is_valid(e.config, &bad)) return fail("invalid configuration: " + bad);
  if (!parse_tune_tail(m, &e.ms, &e.key.gpu, why)) return std::nullopt;
  return e;
}

}  // namespace detail

TuneCache::TuneCache(const std::string& dir) {
  const std::string d = dir.empty() ? default_tune_cache_dir() : dir;
  if (!d.empty()) file_ = d + "/" + kFileName;
}

std::optional<TuneEntry> TuneCache::lookup(const TuneKey& key) const {
  if (!enabled()) return std::nullopt;
  std::optional<TuneEntry> found;
  for (const TuneEntry& e : read_entries(file_))
    if (same_key(e.key, key)) found = e;  // the last one wins (store() keeps one per key anyway)
  return found;
}

bool TuneCache::store(const TuneEntry& entry) const {
  if (!enabled()) return false;
  std::string text = "# krysp SpMV tuning cache: one entry per line, tab-separated name=value fields.\n"
                     "# Safe to delete; see sparse/tune_cache.hpp.\n";
  for (const TuneEntry& e : read_entries(file_))
    if (!same_key(e.key, entry.key)) text += detail::format_tune_line(e) + "\n";
  text += detail::format_tune_line(entry) + "\n";
  return detail::write_tune_file(file_, text, warn);
}

}  // namespace krysp
