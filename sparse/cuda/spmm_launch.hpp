#pragma once
/// \file spmm_launch.hpp
/// Host-callable entry points of the SpMM kernels and the host side of their setup (internal; no
/// CUDA types, so that spmm_plan.cpp and the tests can include it).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "krysp/base/device_policy.hpp"
#include "krysp/base/stream.hpp"
#include "krysp/sparse/csr_view.hpp"
#include "krysp/sparse/spmm_config.hpp"

namespace krysp::detail {

/// Merge-path partition of a matrix into units of K items (rows + nonzeros), see spmm_common.hpp.
struct SpmmPartition {
  index_t items_per_unit = 0;
  index_t units = 0;              ///< ceil((rows + nnz) / K); 0 for an empty matrix
  std::vector<index_t> unit_row;  ///< units + 1 entries: i of each cut (unit_row[units] = rows)
  std::vector<index_t> unit_nnz;  ///< units + 1 entries: k of each cut (unit_nnz[units] = nnz)
  std::vector<index_t> splits;    ///< 3 per split row: row, first unit u_s, last unit u_e
  index_t num_splits() const { return index_t(splits.size() / 3); }
};
/// Builds the partition from host CSR arrays. O(units · log rows). K >= 1.
SpmmPartition spmm_partition_host(const index_t* row_ptr, index_t rows, index_t nnz, index_t K);

/// Long-row pieces of a row kernel with SpmmConfig::long_row (spmm_common.hpp): every row of more
/// than long_min nonzeros cut into ceil(len / piece_nnz) contiguous pieces of ceil(len / pieces)
/// nonzeros (the last shorter), in row order; 5 entries a piece: row, first nonzero, end, the
/// row's first piece and its number of pieces. O(rows).
std::vector<index_t> spmm_long_pieces_host(const index_t* row_ptr, index_t rows, index_t long_min, index_t piece_nnz);

/// Device data of a nonzero-balanced configuration, or of a row kernel's long rows (empty
/// otherwise).
struct SpmmWorkspaceView {
  index_t units = 0;
  const index_t* unit_row = nullptr;  ///< units + 1
  const index_t* unit_nnz = nullptr;  ///< units + 1
  index_t num_splits = 0;
  const index_t* splits = nullptr;  ///< 3·num_splits
  void* carries = nullptr;          ///< T[2·units·N]: head slots, then tail slots
  // Row kernels with long rows (num_pieces > 0):
  index_t long_min = 0;  ///< rows of more nonzeros are cut into pieces
  index_t num_pieces = 0;
  const index_t* pieces = nullptr;  ///< 5·num_pieces (spmm_long_pieces_host)
  /// num_pieces·tiles counters (column tile t of the row whose first piece is f: f·tiles + t), zero
  /// between calls: the blocks of the row done so far; the last one resets it
  unsigned* tickets = nullptr;
  void* piece_sums = nullptr;  ///< T[num_pieces·N]: each piece's sums
};

/// The operands of one SpMM, Y = alpha·A·X + beta·Y, and what the launch depends on besides the
/// configuration (one struct rather than a dozen positional arguments through every launcher).
template <class T>
struct SpmmArgs {
  CsrView<T> A;  ///< a device view
  index_t N = 0;
  SpmmWorkspaceView ws;  ///< the configuration's partition or long-row pieces (empty otherwise)
  T alpha = T(1);
  const T* X = nullptr;  ///< A.cols rows of ldx entries, row-major
  index_t ldx = 0;
  T beta = T(0);
  T* Y = nullptr;  ///< A.rows rows of ldy entries, row-major
  index_t ldy = 0;
  /// X is 16-byte aligned and ldx a multiple of the vector width (VDL vector loads allowed).
  bool x_vec = false;
  /// A's arrays were last written before the kernel ahead on the stream began (no kernel that may
  /// still be running writes them), so the kernels may load them before waiting for that kernel
  /// (base/overlapped_launch.hpp; the lean VDL row kernels and the CSC row kernel of small launches
  /// do).
  bool early = false;
  /// The policy of the current device (device_policy()), whose wave scales the launch thresholds
  /// (SpmmConfig::launch, spmm_common.hpp).
  DevicePolicy device;
};

/// Y = alpha·A·X + beta·Y with the configured kernel (config complete and valid, see
/// complete_spmm_config), on `stream` (asynchronous).
template <class T>
void spmm_device(const SpmmConfig& config, const SpmmArgs<T>& args, DeviceStream stream = {});

/// dst[k] = src[source[k]] for k < n, on `stream` (asynchronous): a panel split's values gathered
/// from the matrix (spmm_panels.hpp).
template <class T>
void spmm_gather_values(const T* src, const index_t* source, index_t n, T* dst, DeviceStream stream = {});

/// Fills n device values with uniform random numbers in [0.5, 1.5) from `seed` (asynchronous;
/// tuning input, never zero).
template <class T>
void spmm_fill_device(T* p, std::size_t n, std::uint64_t seed);

}  // namespace krysp::detail
