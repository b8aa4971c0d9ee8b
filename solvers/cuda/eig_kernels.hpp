#pragma once
/// \file eig_kernels.hpp
/// Launchers of LOBPCG's fused kernels (internal, CUDA-free; no Kokkos either, so the .cu can
/// include it).
#include <cstdint>

#include "krysp/base/types.hpp"

namespace krysp::detail {

/// Widest block the residual kernel handles (the per-column λ and destinations travel as kernel
/// parameters); equals kMaxLobpcgBlock (lobpcg_result.hpp).
inline constexpr int kEigMaxColumns = 256;

/// Blocks of the residual kernel for n rows and b columns (fixed per (n, b): sums are reproducible).
int eig_residual_grid(index_t n, index_t b);
/// r_j = AX_j − λ_j·BX_j for j < b (BX == X allowed: read once); R(:, dest[j]) = r_j when
/// dest[j] ≥ 0; sums[j] = ‖r_j‖², sums[b + j] = ‖X_j‖² (device, 2b entries). `partials` holds
/// grid·2b doubles. lambda and dest are HOST arrays of b entries (passed by value to the kernel).
/// One launch: the last block to finish (an atomic `ticket`, zero at rest and left at zero) sums
/// the partials in block order.
void launch_eig_residuals(index_t n, index_t b, const double* AX, index_t ldax, const double* BX, index_t ldbx,
                          const double* X, index_t ldx, const double* lambda, const index_t* dest, double* R,
                          index_t ldr, double* partials, unsigned* ticket, int grid, double* sums);
/// X(i, j) = random_block_entry(seed, first_row + i, first_col + j) for j < cols
/// (solvers/eig_random.hpp; first_row: the global row of this rank's first, so that the start is
/// the same block however the rows are split).
void launch_fill_random(index_t n, index_t cols, double* X, index_t ldx, std::uint64_t seed, std::int64_t first_row,
                        index_t first_col);

}  // namespace krysp::detail
