#pragma once
/// \file spmv_partition.hpp
/// The nonzero partition of the nonzero-balanced SpMV kernels (host side; no CUDA types).
///
/// The nonzeros are cut into tiles of `tile = 32·k` consecutive entries (k = nnz_per_thread),
/// one tile per warp, warps_per_block (4 or 8) tiles per block. For every tile w the plan stores, once,
///
///     part[w] = the row that holds nonzero w·tile   (part[0] = 0, part[num_tiles] = rows)
///
/// i.e. upper_bound(row_ptr, w·tile) − 1. Tile w then *writes* exactly the rows
/// [part[w], part[w+1]): each row is written by the tile holding its last nonzero (empty rows by
/// the tile where their position falls; leading empty rows by tile 0, trailing ones by the last
/// tile). The only row of a tile that may continue into the next tile is part[w+1]; its partial
/// sum is the tile's carry. Inside a block the carries of the warps are combined in shared memory
/// (in warp order); a row still open at the end of a block leaves one *block carry*. Block b has a
/// carry exactly when the row holding the block's end position e_b (< nnz) started before e_b;
/// consecutive blocks carrying the same row form a run, and the block right after a run (the one
/// holding the row's end) is its *writer*; carry_in[b] is the length of the run block b writes (0
/// for most blocks). The run's carries are added to the row in block order, either by the writer
/// in the same launch (look-back: blocks take their index from an atomic ticket, so every block a
/// writer waits for has started) or by a second small kernel (fix-up). No float atomics.
#include <cstdint>
#include <vector>

#include "krysp/base/types.hpp"

namespace krysp::detail {

/// Tile geometry of a nonzero-balanced configuration.
struct NnzGeometry {
  int nnz_per_lane = 0;     ///< k: nonzeros per lane and tile
  int warps_per_block = 4;  ///< tiles per block: 4 or 8
  index_t tile = 0;         ///< nonzeros per tile (warp): 32·k
  index_t num_tiles = 0;    ///< ceil(nnz / tile)
  index_t num_blocks = 0;   ///< ceil(num_tiles / warps_per_block)
};
NnzGeometry nnz_geometry(index_t nnz, int nnz_per_lane, int warps_per_block = 4);

/// Consecutive blocks whose carries all belong to one row, added to it by block first + count.
struct CarryRun {
  index_t row;
  index_t first;
  index_t count;
};

/// part[0..num_tiles] as defined above, computed on the host from host row_ptr (reference for
/// the device partition kernel, and for tests). O(num_tiles · log rows).
std::vector<index_t> nnz_partition_host(const index_t* row_ptr, index_t rows, index_t nnz, const NnzGeometry& g);
/// For every block, the row it carries into later blocks, or −1. Host reference.
std::vector<index_t> block_carry_rows_host(const index_t* row_ptr, index_t rows, index_t nnz, const NnzGeometry& g);
/// Groups block carry rows (−1 = none; the others non-decreasing) into runs, in block order.
std::vector<CarryRun> carry_runs(const std::vector<index_t>& block_carry_row);
/// carry_in[b]: how many blocks just before b carry the row that block b writes (the run's length),
/// else 0. Every run is followed by its writer block, so b = run.first + run.count < num_blocks.
std::vector<index_t> carry_in_counts(const std::vector<CarryRun>& runs, index_t num_blocks);

}  // namespace krysp::detail
