#include "sparse/tune_cache.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "io/atomic_file.hpp"

namespace krysp {

namespace {

const char* const kFileName = "spmv_tune.txt";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

void warn(const std::string& msg) { std::fprintf(stderr, "krysp: warning: tuning cache: %s\n", msg.c_str()); }

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
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    h = h * 16 + std::uint64_t(d);
  }
  *out = h;
  return true;
}

bool same_key(const TuneKey& a, const TuneKey& b) {
  return a.fingerprint == b.fingerprint && a.precision == b.precision && sanitize(a.gpu) == sanitize(b.gpu) &&
         a.kernel_version == b.kernel_version;
}

/// Valid, current-version entries of the file, in file order; warns about the others.
std::vector<TuneEntry> read_entries(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> warnings;
  auto out = detail::parse_tune_text(text.str(), file, &warnings);
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
  std::size_t number = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t nl = text.find('\n', pos);
    std::string line(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = name + ":" + std::to_string(number) + ": ";
    std::string why;
    auto e = parse_tune_line(line, &why);
    if (!e) {
      if (warnings) warnings->push_back(where + "ignoring corrupt entry (" + why + ")");
      continue;
    }
    if (e->key.kernel_version != kSpmvKernelVersion) {
      if (warnings)
        warnings->push_back(where + "ignoring stale entry (kernel version " + std::to_string(e->key.kernel_version) +
                            ", current " + std::to_string(kSpmvKernelVersion) + ")");
      continue;
    }
    out.push_back(*e);
  }
  return out;
}

std::string format_tune_line(const TuneEntry& e) {
  char hash[32], ms[64];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(e.key.fingerprint.hash));
  std::snprintf(ms, sizeof ms, "%.6g", e.ms);
  std::ostringstream os;
  os << "version=" << e.key.kernel_version << "\tprecision=" << e.key.precision
     << "\trows=" << e.key.fingerprint.rows << "\tcols=" << e.key.fingerprint.cols
     << "\tnnz=" << e.key.fingerprint.nnz << "\thash=" << hash
     << "\talgorithm=" << static_cast<int>(e.config.algorithm) << "\tsubwarp=" << e.config.subwarp
     << "\tnnz_per_thread=" << e.config.nnz_per_thread << "\tblock_warps=" << e.config.block_warps << "\tms=" << ms
     << "\tgpu=" << sanitize(e.key.gpu);
  return os.str();
}

std::optional<TuneEntry> parse_tune_line(const std::string& line, std::string* why) {
  auto fail = [&](const std::string& m) -> std::optional<TuneEntry> {
    if (why) *why = m;
    return std::nullopt;
  };
  static const char* const kFields[] = {"version",   "precision", "rows",           "cols",        "nnz", "hash",
                                        "algorithm", "subwarp",   "nnz_per_thread", "block_warps", "ms",  "gpu"};
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

  TuneEntry e;
  long long v = 0;
  if (!parse_int(f["version"], 1, 1000000, &v)) return fail("bad version '" + f["version"] + "'");
  e.key.kernel_version = int(v);
  if (f["precision"] != "double" && f["precision"] != "float")
    return fail("bad precision '" + f["precision"] + "'");
  e.key.precision = f["precision"];
  if (!parse_int(f["rows"], 0, kMaxIndex, &v)) return fail("bad rows '" + f["rows"] + "'");
  e.key.fingerprint.rows = index_t(v);
  if (!parse_int(f["cols"], 0, kMaxIndex, &v)) return fail("bad cols '" + f["cols"] + "'");
  e.key.fingerprint.cols = index_t(v);
  if (!parse_int(f["nnz"], 0, kMaxNnz, &v)) return fail("bad nnz '" + f["nnz"] + "'");
  e.key.fingerprint.nnz = index_t(v);
  if (!parse_hash(f["hash"], &e.key.fingerprint.hash)) return fail("bad hash '" + f["hash"] + "'");
  if (!parse_int(f["algorithm"], 0, kSpmvAlgorithmCount - 1, &v)) return fail("bad algorithm '" + f["algorithm"] + "'");
  e.config.algorithm = static_cast<SpmvAlgorithm>(v);
  if (!parse_int(f["subwarp"], 0, 64, &v)) return fail("bad subwarp '" + f["subwarp"] + "'");
  e.config.subwarp = int(v);
  if (!parse_int(f["nnz_per_thread"], 0, 64, &v)) return fail("bad nnz_per_thread '" + f["nnz_per_thread"] + "'");
  e.config.nnz_per_thread = int(v);
  if (!parse_int(f["block_warps"], 0, 64, &v)) return fail("bad block_warps '" + f["block_warps"] + "'");
  e.config.block_warps = int(v);
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
  namespace fs = std::filesystem;
  const fs::path path(file_);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) {
    warn("cannot create folder '" + path.parent_path().string() + "': " + ec.message());
    return false;
  }
  std::vector<TuneEntry> entries = read_entries(file_);
  std::string text = "# krysp SpMV tuning cache: one entry per line, tab-separated name=value fields.\n"
                     "# Safe to delete; see sparse/tune_cache.hpp.\n";
  for (const TuneEntry& e : entries)
    if (!same_key(e.key, entry.key)) text += detail::format_tune_line(e) + "\n";
  text += detail::format_tune_line(entry) + "\n";

  try {  // atomic: a temporary file in the same folder, renamed over the old one (io/atomic_file.hpp)
    io::AtomicOutput out(file_);
    std::FILE* f = std::fopen(out.temp_path().c_str(), "wb");
    if (!f) {
      warn("cannot write '" + out.temp_path() + "': " + std::strerror(errno));
      return false;
    }
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
      warn("cannot write '" + out.temp_path() + "': " + std::strerror(errno));
      return false;
    }
    out.commit();
  } catch (const std::exception& ex) {
    warn(ex.what());
    return false;
  }
  return true;
}

}  // namespace krysp
