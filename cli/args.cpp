#include "krysp/cli/args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "krysp/base/error.hpp"

namespace krysp::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& valued,
           const std::set<std::string>& flags) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a.compare(0, 2, "--") != 0) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      KRYSP_REQUIRE(valued.count(name), "option --", name, " takes no value");
    } else if (valued.count(name)) {
      KRYSP_REQUIRE(i + 1 < argv.size(), "option --", name, " needs a value");
      value = argv[++i];
    } else {
      KRYSP_REQUIRE(flags.count(name), "unknown option '", a, "' (see --help)");
    }
    values_[name] = value;
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

double Args::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string s = get(name, "");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  KRYSP_REQUIRE(!s.empty() && *end == '\0' && errno == 0 && std::isfinite(v) && v >= 0, "option --", name,
                " expects a non-negative number, got '", s, "'");
  return v;
}

long long Args::get_int(const std::string& name, long long fallback, long long min, long long max) const {
  if (!has(name)) return fallback;
  const std::string s = get(name, "");
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  KRYSP_REQUIRE(!s.empty() && *end == '\0' && errno == 0 && v >= min && v <= max, "option --", name,
                " expects an integer in [", min, ", ", max, "], got '", s, "'");
  return v;
}

}  // namespace krysp::cli
