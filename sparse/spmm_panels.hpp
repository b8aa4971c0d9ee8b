#pragma once
/// \file spmm_panels.hpp
/// Column panels for SpMM (plain host code, testable without a GPU). When X (cols × N) is larger
/// than the L2 cache and the columns of the rows are scattered (a power-law graph), every
/// nonzero gathers its row of X from DRAM, 32 bytes at random, and SpMM runs several times
/// slower than the matrix stream alone (a power-law graph of 3 M rows at N = 2: 2.8x an SpMV,
/// whose x fits in L2). Split into P panels of equal column ranges, each panel's rows of X fit in
/// L2: the panels are applied one after another (Y = αA₀X + βY, then Y = αA_pX + Y), paying every
/// row's cost P times instead (its offsets, its pass over Y, and the kernel's per-row work, which
/// dominates on the panels' short rows). On that graph (bench_spmm --panel-sweep) N = 2 took 0.76x
/// the time in 2 panels, and N = 4 and 8 gained nothing with any panel count, so the model below
/// splits only N = 2 there (docs/tuning.md, "Column panels", has the measurements).
///
/// The split costs device memory: a copy of the structure and values (nnz·(8 + sizeof(T)) bytes)
/// and P row offset arrays; the plan's rule splits only where that takes at most a quarter of the
/// free device memory.
///
/// The split keeps A's entries in their order within each row (columns are increasing, so a
/// row's entries of one panel are contiguous): panel p is a CSR matrix of its own (absolute
/// column indices), stored after panel p − 1, with the position in A of every entry (`source`),
/// through which the plan gathers the values from A on the device whenever they change.
#include <cstdint>
#include <vector>

#include "krysp/sparse/csr_view.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmm_config.hpp"

namespace krysp {

/// The panel rule's parameters (choose_spmm_panels's traffic model), as data; the defaults are the
/// values fitted on a power-law graph. Retune from bench_spmm --panel-sweep (docs/tuning.md,
/// "Column panels").
struct SpmmPanelParams {
  /// Share of the L2 cache one panel's rows of X may take (the rest holds the streamed matrix and
  /// Y): with X about the size of L2, 2 panels were fastest, 3 as fast, 4 slower.
  double l2_share = 1.0 / 2.0;
  /// Cost of a byte gathered at random from DRAM (32-byte sectors that miss L2), in bytes streamed
  /// (fitted unsplit at N = 2 and 4).
  double random_byte_cost = 4.75;
  /// A row's cost in one pass, in bytes streamed, besides its offsets and its values of Y: the
  /// kernel's per-row work (fitted split: N = 2 in 2 panels, N = 4 in 4).
  double row_bytes = 180.0;
  /// A gather counts as scattered when its column lies farther from the row's diagonal position
  /// than this share of the columns one panel holds (stencils and bands stay well inside; a
  /// power-law graph's uniform columns mostly do not).
  double local_share = 1.0 / 16.0;
  /// Panels are used when their modelled traffic is below this fraction of the unsplit one.
  double min_gain = 0.8;
  /// Rows sampled (evenly spaced) to measure how scattered the columns are.
  index_t sample_rows = 8192;
};

/// Fraction of A's nonzeros (rows sampled evenly, about `sample_rows`) whose column lies more than
/// `window` columns from the row's diagonal position i·cols/rows: the gathers that a cache of
/// 2·window rows of X around the diagonal would miss.
double spmm_far_fraction(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols, double window,
                         index_t sample_rows = SpmmPanelParams{}.sample_rows);

/// The rule: panels for Y = A·X with N columns of value_bytes each on a device with l2_bytes of
/// L2 cache (0 for none), from a traffic model (field names: SpmmPanelParams): matrix + P · rows ·
/// (offsets + Y read and written + row_bytes) + X, plus, unsplit (P = 1), the scattered gathers
/// that miss L2 at random_byte_cost each.
int choose_spmm_panels(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols, index_t N,
                       int value_bytes, std::int64_t l2_bytes, const SpmmPanelParams& p = SpmmPanelParams{});

/// Row statistics of the first of `panels` column panels (what the rule picks the panels' kernel
/// from), without splitting.
RowStats spmm_first_panel_stats(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols,
                                int panels);

/// A's structure split into column panels (see the file comment).
struct SpmmPanelSplit {
  int panels = 1;
  index_t width = 0;                 ///< columns per panel (the last may have fewer)
  std::vector<index_t> start;        ///< panels + 1 entries: panel p's entries are [start[p], start[p + 1])
  std::vector<index_t> row_ptr;      ///< panels × (rows + 1): panel p's offsets, relative to start[p]
  std::vector<index_t> col_idx;      ///< nnz: absolute column indices, panel after panel
  std::vector<index_t> source;       ///< nnz: the position of each entry in A
  /// Offset of panel p's row offsets in row_ptr (p · (rows + 1)).
  std::size_t row_ptr_offset(int p) const { return std::size_t(p) * (row_ptr.size() / std::size_t(panels)); }
};
/// Splits A's structure (columns increasing within each row) into `panels` panels of equal
/// column ranges (InputError unless 1 <= panels <= cols or cols = 0).
SpmmPanelSplit spmm_panel_split(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols,
                                int panels);

}  // namespace krysp
