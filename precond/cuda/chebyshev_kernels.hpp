#pragma once
/// \file chebyshev_kernels.hpp
/// Launchers of the Chebyshev preconditioner's fused vector kernels and of the Lanczos helpers
/// that estimate λmax on the GPU (internal; CUDA-free header). Blocks are n × N row-major with
/// their own leading dimensions; N = 1 with ld = 1 is a vector. T: the solver's precision;
/// S: the polynomial's; O: the output's (S for intermediate iterates, T for the result).
#include <cstdint>

#include "base/host_device.hpp"
#include "base/types.hpp"

namespace krysp::detail {

/// Entry i of the Lanczos start vector, uniform in [−1, 1): a fixed hash of i (splitmix64), the
/// same on host and device, so both backends estimate λmax from the same vector.
KRYSP_HD inline double lanczos_start_entry(std::int64_t i) {
  std::uint64_t z = std::uint64_t(i) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/// X = c0·diag(dinv)·R
template <class T, class S, class O>
void cheb_first(index_t n, index_t N, S c0, const S* dinv, const T* R, index_t ldr, O* X, index_t ldx);

/// Y = X + c1·(X − Xp) + c2·diag(dinv)·(R − W), with Xp = 0 when null. Y may be Xp (same ld):
/// each entry is read before it is written. No other aliasing.
template <class T, class S, class O>
void cheb_step(index_t n, index_t N, S c1, S c2, const S* dinv, const T* R, index_t ldr, const S* W, index_t ldw,
               const S* X, index_t ldx, const S* Xp, index_t ldp, O* Y, index_t ldy);

/// Blocks of the Lanczos reductions for n entries (≤ 1024; partials arrays hold this many).
int lanczos_grid(index_t n);
/// v_i = lanczos_start_entry(i); partials[b] = block b's share of vᵀv (grid = lanczos_grid(n)).
template <class T>
void lanczos_start(index_t n, T* v, double* partials);
// The scalars below are single doubles in DEVICE memory, so that Lanczos steps can be queued
// without the host waiting for each reduction.
/// v = a·v with a = 1/√d (root) or 1/d, d = *d.
template <class T>
void lanczos_scale(index_t n, const double* d, bool root, T* v);
/// *out = Σ partials (lanczos_grid(n) of them, summed in block order by one thread, like
/// std::accumulate on the host), or its square root when root.
void lanczos_finish(index_t n, const double* partials, bool root, double* out);
/// w = s∘w − β·vprev, β = *beta; partials of wᵀv
template <class T>
void lanczos_alpha(index_t n, const T* s, T* w, const double* beta, const T* vprev, const T* v, double* partials);
/// w −= α·v, α = *alpha; partials of wᵀw
template <class T>
void lanczos_beta(index_t n, const double* alpha, const T* v, T* w, double* partials);

}  // namespace krysp::detail
