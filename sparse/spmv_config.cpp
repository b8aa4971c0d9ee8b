// SpmvConfig helpers: plain host code without CUDA or Kokkos, so that the tuning-cache parser
// (tune_cache.cpp) can be built on its own (the fuzz targets in tests/fuzz do).
#include "krysp/sparse/spmv_config.hpp"

#include <sstream>

namespace krysp {

const char* to_string(SpmvAlgorithm a) {
  switch (a) {
    case SpmvAlgorithm::RowSequential: return "row-sequential";
    case SpmvAlgorithm::RowSubwarp: return "row-subwarp";
    case SpmvAlgorithm::NnzSequential: return "nnz-sequential";
    case SpmvAlgorithm::NnzSegmented: return "nnz-segmented";
  }
  return "unknown";
}

std::string SpmvConfig::to_string() const {
  std::ostringstream os;
  os << krysp::to_string(algorithm);
  if (algorithm == SpmvAlgorithm::RowSubwarp) os << "/w" << subwarp;
  if (nnz_per_thread > 0) os << "/k" << nnz_per_thread;
  if (block_warps != 4) os << "/b" << block_warps;
  return os.str();
}

bool is_valid(const SpmvConfig& c, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  const int a = static_cast<int>(c.algorithm);
  if (a < 0 || a >= kSpmvAlgorithmCount) return fail("algorithm " + std::to_string(a) + " is out of range");
  if (c.subwarp < 2 || c.subwarp > 32 || (c.subwarp & (c.subwarp - 1)) != 0)
    return fail("subwarp " + std::to_string(c.subwarp) + " is not a power of two in [2, 32]");
  if (is_nnz_balanced(c.algorithm)) {
    if (c.nnz_per_thread != 4 && c.nnz_per_thread != 8 && c.nnz_per_thread != 16)
      return fail("nnz_per_thread " + std::to_string(c.nnz_per_thread) + " is not 4, 8 or 16");
    if (c.block_warps != 4 && c.block_warps != 8)
      return fail("block_warps " + std::to_string(c.block_warps) + " is not 4 or 8");
  } else if (c.nnz_per_thread != 0) {
    return fail("nnz_per_thread " + std::to_string(c.nnz_per_thread) + " must be 0 for a row-balanced kernel");
  } else if (c.block_warps != 4) {
    return fail("block_warps " + std::to_string(c.block_warps) + " must be 4 for a row-balanced kernel");
  }
  return true;
}

}  // namespace krysp
