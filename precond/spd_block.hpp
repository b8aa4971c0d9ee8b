#pragma once
/// \file spd_block.hpp
/// Inverse of a small dense SPD block by Cholesky, one definition for the host and the GPU (the
/// block Jacobi factor kernel runs it with one thread per block; the host twin runs the same
/// code, so both report the same pivot). CUDA-free and Kokkos-free: .cu files include it.
#include <math.h>

#include "krysp/base/host_device.hpp"

namespace krysp {

/// Largest diagonal block block Jacobi handles (b×b inverses are kept dense in registers/local memory).
inline constexpr int kMaxBlockSize = 8;

namespace detail {

KRYSP_HD inline double spd_sqrt(double x) { return ::sqrt(x); }
KRYSP_HD inline float spd_sqrt(float x) { return ::sqrtf(x); }
/// Relative pivot threshold: a pivot ≤ 16·ε·(its original diagonal entry) counts as zero, so an
/// exactly singular block is refused even when rounding leaves a tiny positive pivot.
KRYSP_HD inline double spd_pivot_tol(double) { return 16 * 2.220446049250313e-16; }
KRYSP_HD inline float spd_pivot_tol(float) { return 16 * 1.1920929e-7f; }

/// Inverts the b×b symmetric positive definite block `a` (row-major; only its lower triangle is
/// read; it is overwritten with workspace) into `inv` (b×b row-major, full and symmetric):
/// a = L·Lᵀ, L⁻¹ by forward substitution, inv = L⁻ᵀ·L⁻¹.
/// Returns 0 on success; otherwise the 1-based index j of the first pivot that is not positive
/// (≤ spd_pivot_tol·a(j,j), NaN or Inf), with the pivot a(j,j) − Σ L(j,k)² in *pivot.
template <class T>
KRYSP_HD int invert_spd_block(int b, T* a, T* inv, T* pivot) {
  // Cholesky, lower triangle in place.
  for (int j = 0; j < b; ++j) {
    const T d = a[j * b + j];
    T s = d;
    for (int k = 0; k < j; ++k) s -= a[j * b + k] * a[j * b + k];
    if (!(s - s == T(0)) || !(s > spd_pivot_tol(T()) * d)) {  // NaN/Inf, or not (clearly) positive
      *pivot = s;
      return j + 1;
    }
    const T l = spd_sqrt(s);
    a[j * b + j] = l;
    for (int i = j + 1; i < b; ++i) {
      T t = a[i * b + j];
      for (int k = 0; k < j; ++k) t -= a[i * b + k] * a[j * b + k];
      a[i * b + j] = t / l;
    }
  }
  // M = L⁻¹ (lower triangular) into inv's lower triangle, column by column:
  // M(j,j) = 1/L(j,j); M(i,j) = −(Σ_{k=j}^{i−1} L(i,k)·M(k,j)) / L(i,i) for i > j.
  for (int j = 0; j < b; ++j) {
    inv[j * b + j] = T(1) / a[j * b + j];
    for (int i = j + 1; i < b; ++i) {
      T t = 0;
      for (int k = j; k < i; ++k) t += a[i * b + k] * inv[k * b + j];
      inv[i * b + j] = -t / a[i * b + i];
    }
  }
  // Move M into a's lower triangle, then inv(i,j) = (MᵀM)(i,j) = Σ_{k ≥ max(i,j)} M(k,i)·M(k,j).
  for (int i = 0; i < b; ++i)
    for (int j = 0; j <= i; ++j) a[i * b + j] = inv[i * b + j];
  for (int i = 0; i < b; ++i)
    for (int j = 0; j <= i; ++j) {
      T t = 0;
      for (int k = i; k < b; ++k) t += a[k * b + i] * a[k * b + j];  // k ≥ i ≥ j
      inv[i * b + j] = t;
      inv[j * b + i] = t;
    }
  return 0;
}

}  // namespace detail
}  // namespace krysp
