// Host <-> device copies: large ones go through pinned staging buffers in chunks, the host side of
// each chunk copied by several threads (base/cuda/device_memory.cu, base/cuda/parallel_copy.hpp).
// Every byte must arrive, at every size around the chunk boundaries and past the number of buffers,
// and a copy must see the work queued before it (a kernel's output, a memset).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "krysp/base/device_memory.hpp"

using namespace krysp;

namespace {
std::vector<std::uint64_t> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint64_t> v(n);
  std::uint64_t x = seed;
  for (auto& e : v) e = x = x * 6364136223846793005ull + 1442695040888963407ull;
  return v;
}
}  // namespace

// kStageChunk and kStageBuffers of device_memory.cu (16 MiB, 4 buffers)
constexpr std::size_t kChunkWords = (std::size_t(16) << 20) / 8, kBuffers = 4;

TEST_CASE("Device copies: every size around the staging chunks arrives bitwise, both ways") {
  constexpr std::size_t kMinWords = (std::size_t(1) << 20) / 8;
  // past kBuffers chunks every buffer is reused, in both directions
  for (std::size_t n : {std::size_t(0), std::size_t(1), kMinWords - 1, kMinWords, kChunkWords - 1, kChunkWords,
                        kChunkWords + 1, 2 * kChunkWords, 5 * kChunkWords / 2 + 3, kBuffers * kChunkWords,
                        kBuffers * kChunkWords + 1, (2 * kBuffers + 1) * kChunkWords + 5}) {
    CAPTURE(n);
    const auto h = pattern(n, n + 1);
    DeviceArray<std::uint64_t> d(n);
    d.upload(h.data(), n);
    std::vector<std::uint64_t> back(n, 0);
    d.download(back.data(), n);
    CHECK(back == h);
    // a copy ordered after device work: zero the array, then the download must see zeros
    d.zero();
    d.download(back.data(), n);
    bool all_zero = true;
    for (auto e : back) all_zero = all_zero && e == 0;
    CHECK(all_zero);
  }
}

TEST_CASE("Device copies: consecutive large uploads into one array keep the last, at an offset too") {
  const std::size_t n = (kBuffers + 1) * kChunkWords + 17;
  const auto a = pattern(n, 7), b = pattern(n, 8);
  DeviceArray<std::uint64_t> d(n + 5);
  d.upload(a.data(), n);
  d.upload(b.data(), n);
  std::vector<std::uint64_t> back(n);
  d.download(back.data(), n);
  CHECK(back == b);
  detail::copy_to_device(d.data() + 5, a.data(), n * sizeof(std::uint64_t));  // unaligned to the chunks
  std::vector<std::uint64_t> back5(n + 5);
  d.download(back5.data(), n + 5);
  CHECK(std::memcmp(back5.data(), b.data(), 5 * sizeof(std::uint64_t)) == 0);
  CHECK(std::memcmp(back5.data() + 5, a.data(), n * sizeof(std::uint64_t)) == 0);
}
