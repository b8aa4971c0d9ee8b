// The threaded memcpy behind the staged host<->device copies (base/cuda/parallel_copy.hpp): every
// byte arrives and none around the destination is touched, for sizes around the part boundaries,
// unaligned pointers, any part count, and several callers sharing the pool at once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "krysp/base/cuda/parallel_copy.hpp"

using namespace krysp::detail;

namespace {
std::vector<unsigned char> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<unsigned char> v(n);
  std::uint64_t x = seed;
  for (std::size_t i = 0; i < n; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::memcpy(v.data() + i, &x, std::min<std::size_t>(8, n - i));
  }
  return v;
}

/// Copies `bytes` from src + so to dst + dof, dst being filled with 0xAB first: the copy must match
/// and every byte of dst before and after it must still be 0xAB.
bool copies_exactly(const unsigned char* src, std::vector<unsigned char>& dst, std::size_t bytes, std::size_t so,
                    std::size_t dof, int parts) {
  std::fill(dst.begin(), dst.end(), 0xAB);
  parallel_memcpy(dst.data() + dof, src + so, bytes, parts);
  if (std::memcmp(dst.data() + dof, src + so, bytes) != 0) return false;
  const auto untouched = [](unsigned char c) { return c == 0xAB; };
  return std::all_of(dst.begin(), dst.begin() + std::ptrdiff_t(dof), untouched) &&
         std::all_of(dst.begin() + std::ptrdiff_t(dof + bytes), dst.end(), untouched);
}
constexpr std::size_t kGuard = 4096 + 7;
}  // namespace

TEST_CASE("parallel_memcpy: every size around the part boundaries, any part count, unaligned") {
  constexpr std::size_t M = kParallelCopyMinPart;
  for (std::size_t bytes : {std::size_t(0), std::size_t(1), M - 1, M, 2 * M - 1, 2 * M, 2 * M + 1, 3 * M + 4095,
                            4 * M + 5, std::size_t(16) << 20, (std::size_t(16) << 20) + 3, 9 * M + 4097}) {
    const auto src = pattern(bytes + 3, bytes);
    std::vector<unsigned char> dst(bytes + 5 + kGuard);
    for (int parts : {0, 1, 2, 3, 4, 7, 1000}) {
      for (std::size_t off : {std::size_t(0), std::size_t(3)}) {
        CAPTURE(bytes);
        CAPTURE(parts);
        CAPTURE(off);
        CHECK(copies_exactly(src.data(), dst, bytes, off, off ? 5 : 0, parts));
      }
    }
  }
}

TEST_CASE("parallel_memcpy: several callers at once share the pool") {
  constexpr int kCallers = 4;
  std::vector<char> ok(kCallers, 0);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&ok, t] {
      bool all = true;
      const std::size_t most = (std::size_t(5 + t) << 20) + 5 * 4097;
      const auto src = pattern(most + std::size_t(t), std::uint64_t(t));
      std::vector<unsigned char> dst(most + 5 + kGuard);
      for (int r = 0; r < 6; ++r)
        all = copies_exactly(src.data(), dst, most - std::size_t(5 - r) * 4097, std::size_t(t), std::size_t(r), 4) && all;
      ok[std::size_t(t)] = all;
    });
  for (auto& c : callers) c.join();
  for (int t = 0; t < kCallers; ++t) {
    CAPTURE(t);
    CHECK(ok[std::size_t(t)]);
  }
}

TEST_CASE("copy_threads: between 1 and 64, the same every time") {
  const int n = copy_threads();
  CHECK(n >= 1);
  CHECK(n <= 64);
  CHECK(copy_threads() == n);
}
