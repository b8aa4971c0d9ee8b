#pragma once
/// \file amg_filter.hpp
/// The filtered matrix of the AMG prolongator smoothing on the GPU (b = 1): the device side of
/// amg::filter_entries and amg::filtered_matrix (amg.hpp), each test and sum rounded as the host
/// rounds it (separate multiply, divide and add, the lumping in A's row order), so the GPU
/// set-up's A_F is the host's bitwise on the same values. A group of `lanes` threads a row (1, 2,
/// 4, 8, 16 or 32; the set-up passes its row_lanes(n, nnz), from A's mean row), reading the row's
/// entries a chunk of `lanes` at a time; the results do not depend on it (the lumping adds its
/// terms one at a time in the row's order, the kept entries are written in the row's order).
/// InputError for other lanes. CUDA-free header; internal (device pointers, the default stream,
/// asynchronous).
#include <cstdint>

#include "krysp/sparse/csr.hpp"

namespace krysp::detail {

/// A's entries the filtered matrix keeps at threshold θ (n rows; diag: the n diagonal values):
/// with `given` null, keep[k] by amg::filter_entries's test (a full set-up); else `given` is read
/// instead (a numeric re-set-up keeps the full set-up's) and keep may be null. count[i] = row i's
/// kept entries.
void amg_filter_count(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                      double theta, const std::uint8_t* given, std::uint8_t* keep, index_t* count, int lanes);

/// A_F as amg::filtered_matrix builds it, into the offsets f_rp (count's exclusive scan, n + 1):
/// the kept entries in A's order, the diagonal a_ii + Σ_dropped (a_ij·b_j)/b_i (a_ii where that is
/// not positive and finite) with b the level's near-nullspace (n values); dinv_f[i] = 1/(A_F)_ii.
/// f_ci null: the columns are not written (a re-set-up's kept structure has them).
void amg_filter_fill(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                     const std::uint8_t* keep, const double* b, const index_t* f_rp, index_t* f_ci, double* f_va,
                     double* dinv_f, int lanes);

}  // namespace krysp::detail
