#pragma once
/// \file eig_random.hpp
/// The reproducible random starting block of the eigensolvers: entry (row, col) is a splitmix64
/// hash of (seed, row, col) mapped to [−1, 1). One definition for host and device, so every
/// backend starts from bitwise the same block.
#include <cstdint>

#include "krysp/base/host_device.hpp"

namespace krysp {

KRYSP_HD inline double random_block_entry(std::uint64_t seed, std::int64_t row, std::int64_t col) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (std::uint64_t(row) * 0x100000001B3ULL + std::uint64_t(col) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;  // 53 random bits → [−1, 1)
}

}  // namespace krysp
