// libFuzzer target: the Matrix Market reader (io/matrix_market.hpp), as a sparse matrix in double
// or float or as a dense block (one of the three per input, chosen by its length, so that each
// execution costs one parse). Any input must either parse into a matrix that satisfies the CSR
// invariants (checked by the constructor) or throw krysp::InputError; anything else (another
// exception, a crash, a sanitizer report, a hang) is a bug. Limits are lowered so that a tiny
// file cannot make the parser allocate gigabytes legitimately (a 2^31-row empty matrix is valid).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"

namespace {
constexpr krysp::io::detail::MmLimits kLimits{1 << 16, 1 << 16};

template <class F>
void expect_parse_or_input_error(F&& parse) {
  try {
    parse();
  } catch (const krysp::InputError&) {
    // the expected way to refuse bad input
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using krysp::io::detail::parse_dense_matrix_market_limited;
  using krysp::io::detail::parse_matrix_market_limited;
  switch (size % 3) {
    case 0:
      expect_parse_or_input_error([&] {
        krysp::io::MmInfo info;
        const auto A = parse_matrix_market_limited<double>(text, "fuzz.mtx", kLimits, &info);
        if (A.rows() != info.rows || A.cols() != info.cols) std::abort();
      });
      break;
    case 1:
      expect_parse_or_input_error([&] { parse_matrix_market_limited<float>(text, "fuzz.mtx", kLimits); });
      break;
    default:
      expect_parse_or_input_error([&] {
        const auto d = parse_dense_matrix_market_limited<double>(text, "fuzz.mtx", kLimits);
        if (d.values.size() != std::size_t(d.rows) * std::size_t(d.cols)) std::abort();
      });
  }
  return 0;
}
