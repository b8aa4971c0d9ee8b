#include "krysp/sparse/spmv_partition.hpp"

#include <algorithm>

#include "krysp/base/error.hpp"

namespace krysp::detail {

NnzGeometry nnz_geometry(index_t nnz, int nnz_per_lane, int warps_per_block) {
  KRYSP_REQUIRE(nnz >= 0 && nnz_per_lane > 0 && nnz_per_lane <= 64 && warps_per_block > 0 && warps_per_block <= 32,
                "nnz_geometry: bad arguments nnz=", nnz, " nnz_per_lane=", nnz_per_lane,
                " warps_per_block=", warps_per_block);
  NnzGeometry g;
  g.nnz_per_lane = nnz_per_lane;
  g.warps_per_block = warps_per_block;
  g.tile = 32 * nnz_per_lane;
  g.num_tiles = index_t((std::int64_t(nnz) + g.tile - 1) / g.tile);
  g.num_blocks = (g.num_tiles + warps_per_block - 1) / warps_per_block;
  return g;
}

namespace {
/// upper_bound(row_ptr[0..rows], pos) − 1: the row holding nonzero pos (0 <= pos < nnz).
index_t row_of(const index_t* row_ptr, index_t rows, std::int64_t pos) {
  const index_t* it = std::upper_bound(row_ptr, row_ptr + std::int64_t(rows) + 1, pos,
                                       [](std::int64_t p, index_t v) { return p < v; });
  return index_t(it - row_ptr) - 1;
}
}  // namespace

std::vector<index_t> nnz_partition_host(const index_t* row_ptr, index_t rows, index_t nnz, const NnzGeometry& g) {
  std::vector<index_t> part(std::size_t(g.num_tiles) + 1);
  for (index_t w = 0; w <= g.num_tiles; ++w) {
    if (w == 0)
      part[w] = 0;
    else if (w == g.num_tiles)
      part[w] = rows;
    else
      part[w] = row_of(row_ptr, rows, std::int64_t(w) * g.tile);
  }
  (void)nnz;
  return part;
}

std::vector<index_t> block_carry_rows_host(const index_t* row_ptr, index_t rows, index_t nnz, const NnzGeometry& g) {
  std::vector<index_t> carry(std::size_t(g.num_blocks), -1);
  for (index_t b = 0; b < g.num_blocks; ++b) {
    const std::int64_t end_tile = std::min<std::int64_t>(std::int64_t(b + 1) * g.warps_per_block, g.num_tiles);
    if (end_tile == g.num_tiles) continue;  // the last block: every row ends by nnz
    const std::int64_t e = end_tile * g.tile;  // < nnz
    const index_t r = row_of(row_ptr, rows, e);
    if (row_ptr[r] < e) carry[b] = r;
  }
  (void)nnz;
  return carry;
}

std::vector<CarryRun> carry_runs(const std::vector<index_t>& c) {
  std::vector<CarryRun> runs;
  for (std::size_t b = 0; b < c.size(); ++b) {
    if (c[b] < 0) continue;
    if (!runs.empty() && runs.back().row == c[b] && std::size_t(runs.back().first + runs.back().count) == b) {
      ++runs.back().count;
    } else {
      KRYSP_REQUIRE(runs.empty() || runs.back().row < c[b], "carry_runs: carry rows decrease at block ", b);
      runs.push_back({c[b], index_t(b), 1});
    }
  }
  return runs;
}

std::vector<index_t> carry_in_counts(const std::vector<CarryRun>& runs, index_t num_blocks) {
  std::vector<index_t> c(std::size_t(num_blocks), 0);
  for (const CarryRun& r : runs) {
    const std::int64_t writer = std::int64_t(r.first) + r.count;
    KRYSP_REQUIRE(writer < num_blocks, "carry_in_counts: run of row ", r.row, " has no writer block");
    c[std::size_t(writer)] = r.count;
  }
  return c;
}

}  // namespace krysp::detail
