#pragma once
/// \file amg_auto_stats.hpp
/// What AMG's kAmgAuto rule reads of a device CSR matrix (amg::off_diagonal_signs,
/// amg::isolated_nodes with on_device): internal launchers, CUDA-free header.
#include <cstdint>

#include "krysp/base/types.hpp"

namespace krysp::detail {
/// Counts the nonzero entries off the diagonal and the positive ones among them, in one pass over
/// the device arrays (integer atomics: the same counts as a host pass, every run). Synchronises
/// (downloads the two counters). DeviceError on a failed launch or copy.
template <class T>
void count_off_diagonal_signs(index_t rows, const index_t* d_row_ptr, const index_t* d_col_idx, const T* d_values,
                              std::int64_t* off_diagonal, std::int64_t* positive);
/// The rows (one unknown a node) without a strong neighbour at θ, by amg::strength_graph's test
/// for b = 1 entry by entry in double (the GPU set-up's: the same count as the host's). Two
/// passes over the arrays and n doubles of work space; synchronises.
template <class T>
std::int64_t count_isolated_rows(index_t rows, const index_t* d_row_ptr, const index_t* d_col_idx, const T* d_values,
                                 double theta);
/// 1ᵀA1 (every entry) and 1ᵀD1 (the diagonal) in double: block partials of a grid fixed by the
/// row count, added on the host in block order, so the same bits every run (amg::constant_quotient).
/// Synchronises (downloads the partials). DeviceError on a failed launch or copy.
template <class T>
void sum_entries_and_diagonal(index_t rows, const index_t* d_row_ptr, const index_t* d_col_idx, const T* d_values,
                              double* all, double* diagonal);
}  // namespace krysp::detail
