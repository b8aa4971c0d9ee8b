// The cache of freed device blocks (base/device_memory.hpp): a freed block comes back for the
// next allocation of its size class, large blocks are never cached, the cache stays within its
// bound and a full cache still takes small blocks, reused memory sees the work queued before it,
// and release_device_cache() empties it.
// With KRYSP_DEVICE_CACHE=0 (compute-sanitizer runs) nothing may be cached at all.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "krysp/base/device_memory.hpp"

using namespace krysp;

namespace {
bool cache_off() {
  const char* v = std::getenv(kDeviceCacheEnv);
  return v && std::strcmp(v, "0") == 0;
}
}  // namespace

TEST_CASE("Device cache: freed blocks are reused by size class, bounded, and released") {
  release_device_cache();
  REQUIRE(device_bytes_cached() == 0);
  const std::size_t held0 = device_bytes_allocated();
  const void* first = nullptr;
  {
    DeviceArray<double> a(1000);
    first = a.data();
    CHECK(device_bytes_allocated() == held0 + 8000);
  }
  CHECK(device_bytes_allocated() == held0);
  if (cache_off()) {
    CHECK(device_bytes_cached() == 0);
    return;
  }
  CHECK(device_bytes_cached() >= 8000);
  CHECK(device_bytes_cached() <= 10000);  // its size class: at most 25% more than asked
  {
    DeviceArray<double> b(1001);  // 8,008 bytes: the same size class, so the same block
    CHECK(b.data() == first);
    CHECK(device_bytes_cached() == 0);
    CHECK(device_bytes_allocated() == held0 + 8008);
    // the reused block holds what is written to it now, not what was there before
    std::vector<double> h(1001);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = double(i) + 0.5;
    b.upload(h.data(), h.size());
    b.zero();
    std::vector<double> back(1001, 1.0);
    b.download(back.data(), back.size());
    bool zero = true;
    for (double v : back) zero = zero && v == 0.0;
    CHECK(zero);
  }
  {  // a block larger than kDeviceCacheMaxBlock goes back to the driver
    DeviceArray<char> big(kDeviceCacheMaxBlock + 1);
  }
  CHECK(device_bytes_cached() < kDeviceCacheMaxBlock);
  {  // more freed than the bound: the cache keeps at most kDeviceCacheMaxBytes
    std::vector<DeviceArray<char>> many;
    for (std::size_t i = 0; i < 2 * kDeviceCacheMaxBytes / kDeviceCacheMaxBlock + 2; ++i)
      many.emplace_back(kDeviceCacheMaxBlock);
  }
  CHECK(device_bytes_cached() <= kDeviceCacheMaxBytes);
  CHECK(device_bytes_cached() >= kDeviceCacheMaxBytes - kDeviceCacheMaxBlock);
  {  // a full cache still takes a small block (giving back a large one): small solves after a
     // large problem keep reusing their blocks
    const void* small = nullptr;
    {
      DeviceArray<double> a(100);
      small = a.data();
    }
    DeviceArray<double> b(100);
    CHECK(b.data() == small);
    CHECK(device_bytes_cached() <= kDeviceCacheMaxBytes);
  }
  release_device_cache();
  CHECK(device_bytes_cached() == 0);
  CHECK(device_bytes_allocated() == held0);
}
