#pragma once
/// \file structure_hash.hpp
/// The structure hash of CSR arrays krysp built on the device itself (internal; CUDA-free, so
/// csr.cpp and the tests include it). The FNV-1a hash of csr.cpp needs the arrays on the host, in
/// order; this one is a sum over the entries of a 64-bit mix of (array, position, value), so the
/// device adds the terms in any order (integer atomics: exact, hence deterministic) and the host
/// computes the same number (structure_hash_host, for tests). Fingerprints made with it carry
/// StructureHashKind::Device, so they never equal an FNV fingerprint.
#include <cstdint>

#include "krysp/base/host_device.hpp"
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// splitmix64's finaliser: a bijection of 64-bit words with full avalanche.
KRYSP_HD inline std::uint64_t structure_mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/// One entry's term: `array` 0 for row_ptr, 1 for col_idx; position (< 2^31) and value are
/// packed into one word, and each array has its own key, so that equal (position, value) pairs
/// of the two arrays give different terms.
KRYSP_HD inline std::uint64_t structure_term(int array, std::int64_t position, index_t value) {
  const std::uint64_t key = array == 0 ? 0x9e3779b97f4a7c15ull : 0xc2b2ae3d27d4eb4full;
  return structure_mix(((std::uint64_t(position) << 32) | std::uint32_t(value)) ^ key);
}

/// The hash from the sum of the terms and the sizes (mixed in, as the sum alone is linear).
KRYSP_HD inline std::uint64_t structure_hash_finish(index_t rows, index_t cols, index_t nnz, std::uint64_t sum) {
  std::uint64_t h = structure_mix(sum ^ 0x27d4eb2f165667c5ull);
  h = structure_mix(h ^ (std::uint64_t(std::uint32_t(rows)) << 32 | std::uint32_t(cols)));
  return structure_mix(h ^ std::uint64_t(std::uint32_t(nnz)));
}

/// The hash of host CSR arrays (row_ptr: rows + 1 entries, col_idx: nnz), as the device computes it.
std::uint64_t structure_hash_host(index_t rows, index_t cols, index_t nnz, const index_t* row_ptr,
                                  const index_t* col_idx);

/// What the device pass gives: the hash, and the first and last row offsets (which the trusted
/// borrow checks against 0 and nnz without another copy).
struct DeviceStructureSummary {
  std::uint64_t hash = 0;
  index_t first_offset = 0;  ///< row_ptr[0]
  index_t last_offset = 0;   ///< row_ptr[rows]
};

/// The hash of device CSR arrays (current device), one pass and one 16-byte download.
/// DeviceError when the device fails.
DeviceStructureSummary structure_hash_device(index_t rows, index_t cols, index_t nnz, const index_t* d_row_ptr,
                                             const index_t* d_col_idx);

}  // namespace krysp::detail
