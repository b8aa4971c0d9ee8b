#pragma once
/// \file spmv_launch.hpp
/// Host-callable entry points of the SpMV kernels and of their one-time setup (internal; no CUDA
/// types, so that spmv_plan.cpp and the tests can include it).
#include <cstddef>
#include <cstdint>

#include "krysp/base/stream.hpp"
#include "krysp/sparse/csr_view.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmv_partition.hpp"
#include "krysp/sparse/spmv_config.hpp"

namespace krysp::detail {

/// Device data a plan precomputes for its kernel (empty for the row-balanced kernels).
struct SpmvWorkspaceView {
  NnzGeometry geometry;                ///< nonzero-balanced: tiles and blocks
  const index_t* partition = nullptr;  ///< num_tiles + 1 entries: first row of each tile (spmv_partition.hpp)
  /// How rows split between blocks get the other blocks' partial sums (spmv_partition.hpp):
  /// None: no row crosses a block; LookBack: in the same launch (the block writing the row waits
  /// for the others' flags); FixUp: a second small kernel adds them after the main one.
  enum class Carry { None, LookBack, FixUp } carry = Carry::None;
  void* block_carry = nullptr;         ///< T[num_blocks]: partial sum a block leaves for a later block
  unsigned* flags = nullptr;           ///< [num_blocks]: == the launch's epoch once block_carry[b] is published
  const index_t* carry_in = nullptr;   ///< [num_blocks]: carry_in_counts() (spmv_partition.hpp)
  /// Look-back: the launches' epoch count (high half) and the block indices handed out in start
  /// order (low half, 0 at rest); 0 at first. Advanced on the device, so a graph can replay it.
  unsigned long long* ticket = nullptr;
};

/// Optional epilogue of a square SpMV: *out = Σᵢ x[i]·y[i] over the final y, summed in double in
/// a fixed order (per-block partials, then the last block adds them up): CG's pᵀAp without a
/// second pass over p and q.
struct SpmvDot {
  double* out = nullptr;       ///< device scalar; null: no dot
  double* partials = nullptr;  ///< spmv_dot_partials(config, rows, nnz) doubles
  unsigned* ticket = nullptr;  ///< one counter, zero at rest
};
/// How many partials the fused dot of `config` needs on a rows × rows matrix with nnz entries.
std::size_t spmv_dot_partials(const SpmvConfig& config, index_t rows, index_t nnz);

/// The operands of one SpMV, y = alpha·A·x + beta·y, and its workspace and fused dot (one struct
/// rather than eight positional arguments through every launcher, as SpmmArgs for SpMM).
template <class T>
struct SpmvArgs {
  CsrView<T> A;          ///< a device view
  SpmvWorkspaceView ws;  ///< the configuration's partition and carries (empty for the row kernels)
  T alpha = T(1);
  const T* x = nullptr;  ///< A.cols entries
  T beta = T(0);
  T* y = nullptr;  ///< A.rows entries
  SpmvDot dot;     ///< the fused xᵀy when dot.out is set
  DeviceStream stream;  ///< where the kernels run (default: the default stream)
};

/// y = alpha·A·x + beta·y with the configured kernel, on args.stream (asynchronous), and the
/// fused xᵀy when args.dot.out is set. Every launch is checked.
template <class T>
void spmv_device(const SpmvConfig& config, const SpmvArgs<T>& args);

/// Row statistics of a device row_ptr (one reduction kernel with integer atomics, then a copy to
/// the host: synchronous). Bitwise equal to row_stats() on the same matrix.
RowStats row_stats_device(const index_t* row_ptr, index_t rows, index_t nnz);
/// The same in two halves: the kernel accumulates into kRowStatsBytes of zeroed device memory
/// (asynchronous); row_stats_from() finishes from a host copy of those bytes.
inline constexpr std::size_t kRowStatsBytes = 16;
void row_stats_async(const index_t* row_ptr, index_t rows, void* accumulator);
RowStats row_stats_from(index_t rows, index_t nnz, const void* accumulator_copy);

/// Fills part[0..g.num_tiles] and carry_in[0..g.num_blocks) (spmv_partition.hpp) from a device
/// row_ptr, one binary search per tile and block, and sets *any_carry (device) to 1 when some
/// carry_in is non-zero (it is not cleared first). Asynchronous.
void nnz_partition_device(const index_t* row_ptr, index_t rows, index_t nnz, const NnzGeometry& g, index_t* part,
                          index_t* carry_in, unsigned* any_carry);

/// Loads the kernels of `config` now (CUDA loads kernels lazily, at their first launch), so that
/// timing them does not time the loading.
template <class T>
void spmv_preload(const SpmvConfig& config);

/// A device buffer of at least `bytes` bytes for timing runs, shared by every plan made on the
/// current device in this process (grown when needed, never freed: cudaMalloc and cudaFree cost
/// more than the whole profiling of a small matrix). Its content is scratch: plans made on several
/// host threads at once may overwrite each other's random vectors, which only costs nothing.
void* tuning_scratch(std::size_t bytes);

/// Fills n device values with uniform random numbers in [−1, 1) from `seed` (asynchronous).
template <class T>
void fill_random_device(T* p, std::size_t n, std::uint64_t seed);

}  // namespace krysp::detail
