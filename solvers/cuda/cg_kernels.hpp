#pragma once
/// \file cg_kernels.hpp
/// Launchers of CG's fused vector kernels (internal, CUDA-free). `scalars` is the device slot
/// array of CgSlots; `ws` a reduction workspace sized by reduce_grid().
#include "krysp/base/types.hpp"

namespace krysp::detail {

struct ReduceWorkspaceRef {
  double* partials = nullptr;
  unsigned int* ticket = nullptr;
  int grid = 1;  ///< blocks of every reduction launch (fixed: keeps sums reproducible)
};
/// Number of blocks a reduction over the current device uses.
int reduce_grid();

/// scalars[out] = a·b
template <class T>
void launch_dot(index_t n, const T* a, const T* b, double* scalars, int out, ReduceWorkspaceRef ws);
/// scalars[rz] = rᵀz, scalars[rr] = rᵀr, where z = inv_diag∘r is computed and stored when
/// inv_diag is given, z is read when z_is_input (a preconditioner applied it), and z = r otherwise.
template <class T>
void launch_precondition(index_t n, const T* inv_diag, const T* r, T* z, bool z_is_input, double* scalars, int rz,
                         int rr, ReduceWorkspaceRef ws);
/// p = z + (ρ_k/ρ_{k−1})·p, or p = z when first; nothing once the flag is set
template <class T>
void launch_direction(index_t n, const T* z, T* p, const double* scalars, int rz_k, int rz_prev, bool first,
                      int flag);
/// α = ρ_k/pᵀAp (flags a breakdown instead when pᵀAp ≤ 0, ρ_k ≤ 0 or either is not finite);
/// x += α·p; r −= α·q; z = inv_diag∘r (if given, else z = r); scalars[rz_next] = rᵀz, scalars[rr_next] = rᵀr;
/// flags kCgConverged when rᵀr ≤ scalars[tol2] (tol2 < 0: no test here; launch_cg_converged once
/// rᵀr is summed over the ranks). Does nothing once the flag is set.
template <class T>
void launch_cg_update(index_t n, double* scalars, int rz_k, int pq, int flag, int flag_iter, int tol2,
                      index_t iteration, const T* p, const T* q, T* x, T* r, const T* inv_diag, T* z,
                      int rz_next, int rr_next, ReduceWorkspaceRef ws);
/// Flags kCgConverged (at iteration + 1) when the flag is still kCgOk and scalars[rr] ≤ scalars[tol2].
void launch_cg_converged(double* scalars, int rr, int tol2, int flag, int flag_iter, index_t iteration);
/// dst = src
template <class T>
void launch_copy(index_t n, const T* src, T* dst);
/// r = b − r (the residual after r = A·x, for operators without a scaled apply)
template <class T>
void launch_subtract_from(index_t n, const T* b, T* r);

}  // namespace krysp::detail
