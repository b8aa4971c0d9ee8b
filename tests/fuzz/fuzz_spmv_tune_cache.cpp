// libFuzzer target: the SpMV tuning-cache reader (sparse/tune_cache.hpp). Any text must parse
// without throwing; every entry it accepts must have a valid configuration and read back the same
// after formatting (the cache rewrites accepted entries on every store).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "krysp/sparse/tune_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  for (const krysp::TuneEntry& e : krysp::detail::parse_tune_text(text, "fuzz.txt", &warnings)) {
    if (!krysp::is_valid(e.config)) std::abort();
    const std::string line = krysp::detail::format_tune_line(e);
    std::string why;
    const auto again = krysp::detail::parse_tune_line(line, &why);
    if (!again || again->config != e.config || again->key.fingerprint != e.key.fingerprint ||
        again->key.precision != e.key.precision || again->key.kernel_version != e.key.kernel_version)
      std::abort();
    if (krysp::detail::format_tune_line(*again) != line) std::abort();
  }
  return 0;
}
