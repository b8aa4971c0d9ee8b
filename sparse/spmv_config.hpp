#pragma once
/// \file spmv_config.hpp
/// The SpMV kernel configuration: which algorithm, with which launch parameters. Kept apart from
/// spmv_plan.hpp (which includes Kokkos through csr.hpp) so that CUDA sources can include it.
#include <string>

namespace krysp {

/// The SpMV design space (Huang et al.): row- or nonzero-balanced work, times sequential or
/// warp-parallel reduction.
enum class SpmvAlgorithm : int {
  RowSequential = 0,  ///< one thread per row
  RowSubwarp = 1,     ///< a sub-warp of 2..32 lanes per row, shuffle reduction
  NnzSequential = 2,  ///< each thread a fixed run of nonzeros, row boundaries from the plan's partition
  NnzSegmented = 3,   ///< each warp a fixed run of nonzeros, segmented warp-shuffle scan (VSR)
};
/// Number of SpmvAlgorithm values.
inline constexpr int kSpmvAlgorithmCount = 4;
/// "row-sequential", "row-subwarp", "nnz-sequential" or "nnz-segmented".
const char* to_string(SpmvAlgorithm a);
/// True for the two nonzero-balanced algorithms (they need the plan's partition).
inline bool is_nnz_balanced(SpmvAlgorithm a) {
  return a == SpmvAlgorithm::NnzSequential || a == SpmvAlgorithm::NnzSegmented;
}

/// Version of the kernels, their partition and the candidate set. Bump it whenever one of them
/// changes: tuning-cache entries written under another version are ignored. 3: overlapped launches.
inline constexpr int kSpmvKernelVersion = 3;

/// Launch parameters that go with the algorithm (tuning kept as data, not in kernels).
struct SpmvConfig {
  SpmvAlgorithm algorithm = SpmvAlgorithm::RowSubwarp;
  int subwarp = 32;        ///< RowSubwarp: lanes per row, a power of two in [2, 32]
  int nnz_per_thread = 0;  ///< Nnz*: nonzeros per thread, 4, 8 or 16 (0 for the row kernels)
  int block_warps = 4;     ///< Nnz*: warps (tiles) per block, 4 or 8 (4 for the row kernels)
  /// A compact name with the parameters, e.g. "row-subwarp/w8" or "nnz-segmented/k8/b8".
  std::string to_string() const;
  /// Every field equal.
  bool operator==(const SpmvConfig& o) const {
    return algorithm == o.algorithm && subwarp == o.subwarp && nnz_per_thread == o.nnz_per_thread &&
           block_warps == o.block_warps;
  }
  /// Some field differs.
  bool operator!=(const SpmvConfig& o) const { return !(*this == o); }
};

/// Is `c` a configuration the kernels accept? (algorithm in range; subwarp a power of two in
/// [2, 32]; nnz_per_thread 4, 8 or 16 and block_warps 4 or 8 for the nonzero-balanced kernels,
/// nnz_per_thread 0 and block_warps 4 for the others.)
/// When not, and `why` is given, *why says what is wrong.
bool is_valid(const SpmvConfig& c, std::string* why = nullptr);

}  // namespace krysp
