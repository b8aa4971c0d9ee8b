#include "krysp/sparse/tune_file.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "krysp/base/types.hpp"
#include "krysp/io/atomic_file.hpp"

namespace krysp::detail {

namespace {
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
}  // namespace

std::optional<std::map<std::string, std::string>> split_tune_fields(const std::string& line,
                                                                    const std::vector<const char*>& fields,
                                                                    std::string* why,
                                                                    const std::vector<const char*>& optional) {
  auto fail = [&](const std::string& m) -> std::optional<std::map<std::string, std::string>> {
    if (why) *why = m;
    return std::nullopt;
  };
  std::map<std::string, std::string> f;
  std::size_t pos = 0;
  while (pos <= line.size()) {
    const std::size_t tab = line.find('\t', pos);
    const std::string field = line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos);
    const std::size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0) return fail("field '" + field + "' is not name=value");
    const std::string name = field.substr(0, eq);
    bool known = false;
    for (const char* k : fields) known = known || name == k;
    for (const char* k : optional) known = known || name == k;
    if (!known) return fail("unknown field '" + name + "'");
    if (f.count(name)) return fail("field '" + name + "' appears twice");
    f[name] = field.substr(eq + 1);
    if (tab == std::string::npos) break;
    pos = tab + 1;
  }
  for (const char* k : fields)
    if (!f.count(k)) return fail(std::string("missing field '") + k + "'");
  return f;
}

bool parse_tune_int(const std::string& s, long long lo, long long hi, long long* out) {
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

bool parse_tune_ms(const std::string& s, double* out) {
  errno = 0;
  char* end = nullptr;
  const double ms = s.empty() ? -1 : std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || *end != '\0' || !std::isfinite(ms) || ms < 0) return false;
  *out = ms;
  return true;
}

bool parse_tune_key_head(std::map<std::string, std::string>& f, TuneKeyFields* k, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  long long v = 0;
  if (!parse_tune_int(f["version"], 1, 1000000, &v)) return fail("bad version '" + f["version"] + "'");
  k->kernel_version = int(v);
  if (f["precision"] != "double" && f["precision"] != "float") return fail("bad precision '" + f["precision"] + "'");
  k->precision = f["precision"];
  if (!parse_tune_int(f["rows"], 0, kMaxIndex, &v)) return fail("bad rows '" + f["rows"] + "'");
  k->fingerprint.rows = index_t(v);
  if (!parse_tune_int(f["cols"], 0, kMaxIndex, &v)) return fail("bad cols '" + f["cols"] + "'");
  k->fingerprint.cols = index_t(v);
  if (!parse_tune_int(f["nnz"], 0, kMaxNnz, &v)) return fail("bad nnz '" + f["nnz"] + "'");
  k->fingerprint.nnz = index_t(v);
  if (!parse_hash(f["hash"], &k->fingerprint.hash)) return fail("bad hash '" + f["hash"] + "'");
  return true;
}

bool parse_tune_tail(std::map<std::string, std::string>& f, double* ms, std::string* gpu, std::string* why) {
  if (!parse_tune_ms(f["ms"], ms)) {
    if (why) *why = "bad ms '" + f["ms"] + "'";
    return false;
  }
  if (f["gpu"].empty()) {
    if (why) *why = "empty gpu name";
    return false;
  }
  *gpu = f["gpu"];
  return true;
}

std::string sanitize_tune_field(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string format_tune_key_head(const TuneKeyFields& k) {
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(k.fingerprint.hash));
  std::ostringstream os;
  os << "version=" << k.kernel_version << "\tprecision=" << k.precision << "\trows=" << k.fingerprint.rows
     << "\tcols=" << k.fingerprint.cols << "\tnnz=" << k.fingerprint.nnz << "\thash=" << hash;
  return os.str();
}

std::string format_tune_tail(double ms, const std::string& gpu) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", ms);
  return std::string("\tms=") + buf + "\tgpu=" + sanitize_tune_field(gpu);
}

void for_each_tune_line(std::string_view text, const std::string& name, std::vector<std::string>* warnings,
                        const std::function<bool(const std::string&, std::size_t, std::string*)>& parse) {
  std::size_t number = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t nl = text.find('\n', pos);
    std::string line(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::string why;
    if (!parse(line, number, &why) && warnings)
      warnings->push_back(name + ":" + std::to_string(number) + ": ignoring corrupt entry (" + why + ")");
  }
}

std::string read_tune_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_tune_file(const std::string& file, const std::string& text,
                     const std::function<void(const std::string&)>& warn) {
  namespace fs = std::filesystem;
  const fs::path path(file);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) {
    warn("cannot create folder '" + path.parent_path().string() + "': " + ec.message());
    return false;
  }
  try {  // atomic: a temporary file in the same folder, renamed over the old one (io/atomic_file.hpp)
    io::AtomicOutput out(file);
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

}  // namespace krysp::detail
