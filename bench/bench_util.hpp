#pragma once
// What the benchmark programs share: medians and geometric means of samples, JSON string
// escaping, matrix names from paths, and the UTC time stamp written into every result file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace krysp::bench {

/// The upper median (v[n/2] of the sorted samples); 0 for no samples.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// exp(mean(log v)); 0 for no values.
inline double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

/// s as the inside of a JSON string: quotes and backslashes escaped, control characters as \u00XX.
inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}

/// The current UTC time as 2026-11-22T09:30:00Z, for the "date" of every result file.
inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// The file name of a path without its ".mtx" ending.
inline std::string matrix_name(const std::string& path) {
  const auto s = path.find_last_of('/');
  std::string b = s == std::string::npos ? path : path.substr(s + 1);
  if (b.size() > 4 && b.compare(b.size() - 4, 4, ".mtx") == 0) b.resize(b.size() - 4);
  return b;
}

}  // namespace krysp::bench
