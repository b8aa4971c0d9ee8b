#pragma once
/// \file block_jacobi_kernels.hpp
/// Launchers of block Jacobi's kernels (internal; CUDA-free header).
#include "krysp/base/types.hpp"
#include "krysp/sparse/csr_view.hpp"

namespace krysp::detail {

/// *count += the number of nodes k < n/b whose b rows share one node-level pattern
/// (detail::node_agrees; A's device row offsets and column indices), one thread per node.
/// Asynchronous; integer sums, so the count is exact.
void block_pattern_count(const index_t* row_ptr, const index_t* col_idx, index_t n, int b, unsigned long long* count);
/// Inverts the n/b diagonal b×b blocks of A (device view) into inv (n·b entries: block k's
/// row-major inverse at inv + k·b²), one thread per block (spd_block.hpp). *first_bad must hold
/// n/b on entry; on exit it is the smallest index of a block that is not SPD (n/b if none).
template <class T>
void block_jacobi_factor(CsrView<T> A, int b, T* inv, int* first_bad);
/// Factors block k alone again and writes its failing pivot's 1-based index (0 if none) and value.
template <class T>
void block_jacobi_report(CsrView<T> A, int b, index_t k, int* pivot_index, T* pivot_value);
/// Z = blockdiag(inv)·R for n × N row-major blocks (one kernel; one thread per entry of Z).
template <class T>
void block_jacobi_apply(index_t n, int b, index_t N, const T* inv, const T* R, index_t ldr, T* Z, index_t ldz);

}  // namespace krysp::detail
