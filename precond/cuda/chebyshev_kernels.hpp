#pragma once
/// \file chebyshev_kernels.hpp
/// Launchers of the Chebyshev preconditioner's fused vector kernels and of the Lanczos helpers
/// that estimate λmax on the GPU (internal; CUDA-free header). Blocks are n × N row-major with
/// their own leading dimensions; N = 1 with ld = 1 is a vector. The V-cycle's kernels take a
/// stream (default: the default stream), so that a V-cycle can be captured into a graph; the
/// others run on the default stream. T: the solver's precision;
/// S: the polynomial's; O: the output's (S for intermediate iterates, T for the result).
#include <cstdint>

#include "krysp/base/host_device.hpp"
#include "krysp/base/stream.hpp"
#include "krysp/base/types.hpp"
#include "krysp/sparse/csr_view.hpp"

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
void cheb_first(index_t n, index_t N, S c0, const S* dinv, const T* R, index_t ldr, O* X, index_t ldx,
                DeviceStream stream = {});

/// Y = X + c1·(X − Xp) + c2·diag(dinv)·(R − W), with Xp = 0 when null. Y may be Xp (same ld):
/// each entry is read before it is written. No other aliasing.
template <class T, class S, class O>
void cheb_step(index_t n, index_t N, S c1, S c2, const S* dinv, const T* R, index_t ldr, const S* W, index_t ldw,
               const S* X, index_t ldx, const S* Xp, index_t ldp, O* Y, index_t ldy, DeviceStream stream = {});

/// The fused step (chebyshev_fused.cu): Y = X + c1·(X − Xp) + c2·diag(dinv)·(R − A·X) on vectors,
/// A·X computed row by row inside the kernel and never stored. `subwarp` 0: a warp per 32 rows
/// with one lane per row (CSR-stream, for short even rows); 2..32: that many lanes per row. R (the
/// residual, T or already converted to S) and Y have strides ldr, ldy; X, Xp, dinv are contiguous.
/// Y may be Xp (each row reads its Xp entry before writing its Y entry); Y must not be X, which
/// other rows gather from. Xp = null: x_{k−1} = 0. Deterministic (fixed summation order).
template <class R, class S, class O>
void cheb_fused_step(const CsrView<S>& A, int subwarp, S c1, S c2, const S* dinv, const R* Rv, index_t ldr,
                     const S* X, const S* Xp, O* Y, index_t ldy, DeviceStream stream = {});

/// The residual Y = B − A·X on vectors in one launch, with cheb_fused_step's row sums and kernel
/// (`subwarp` as there), where a copy of B and a product would take two. Y must not be X.
template <class T>
void fused_residual(const CsrView<T>& A, int subwarp, const T* B, const T* X, T* Y, DeviceStream stream = {});

/// X = c0·diag(dinv)·S(R) and Rs = S(R) in one pass: the residual converted once per apply, so
/// the steps read 4 bytes of it per row, not 8 (bitwise the values each step would convert).
template <class T, class S>
void cheb_first_split(index_t n, S c0, const S* dinv, const T* R, index_t ldr, S* X, S* Rs);

/// Blocks of the Lanczos reductions for n entries (≤ 1024; partials arrays hold this many).
int lanczos_grid(index_t n);
// The Lanczos steps read their scalars (α, β, ‖v‖) from device memory, where the previous
// launch left them, so a run of steps is queued without waiting for the host. Each reduction is
// one launch: one partial per block (double sums), then the last block to finish (an atomic
// `ticket`, zero at rest and back to zero after each launch) adds the partials in block order
// from 0.0, as std::accumulate on the host. `partials` holds lanczos_grid(n) doubles.
/// The last block of a launch can also do lanczos_advance's work itself (`s` not null: v /= the
/// total, u = s∘v over all n entries, one block's threads): worth it on small vectors, where the
/// launch it saves costs more than that tail (up to kLanczosAdvanceInBlockMax rows).
inline constexpr index_t kLanczosAdvanceInBlockMax = 16384;
/// v_i = lanczos_start_entry(i), *norm = ‖v‖; with s: then v /= ‖v‖ and u = s∘v (else v stays
/// unscaled: lanczos_advance with d = norm does it).
template <class T>
void lanczos_start_fused(index_t n, T* v, double* partials, unsigned* ticket, double* norm, const T* s = nullptr,
                         T* u = nullptr);
/// v = T(1.0 / *d)·v in place and u = s∘v: the next Lanczos vector and the SpMV's input.
template <class T>
void lanczos_advance(index_t n, const double* d, T* v, const T* s, T* u);
/// w = s∘w − T(*beta)·vprev (vprev null: the first step, β_{−1}·v_{−1} = 0), *alpha = wᵀv.
template <class T>
void lanczos_alpha_fused(index_t n, const T* s, T* w, const double* beta, const T* vprev, const T* v,
                         double* partials, unsigned* ticket, double* alpha);
/// w −= T(*alpha)·v, *beta = ‖w‖; with s: then w /= β and u = s∘w (the next step's
/// lanczos_advance, done).
template <class T>
void lanczos_beta_fused(index_t n, const double* alpha, const T* v, T* w, double* partials, unsigned* ticket,
                        double* beta, const T* s = nullptr, T* u = nullptr);


// The distributed Lanczos (device_dist_chebyshev.cpp) sums each reduction over the ranks between
// launches, so its launches leave this rank's sum of squares, not its root, for
// Communicator::sum_device; lanczos_root then takes the root of the total (on one rank bitwise
// the fused launches' sqrt of the same partials).
/// v_i = lanczos_start_entry(first + i), the start vector by global row; *sumsq = Σ v_i² here.
template <class T>
void lanczos_start_partial(index_t n, std::int64_t first, T* v, double* partials, unsigned* ticket, double* sumsq);
/// w −= T(*alpha)·v; *sumsq = Σ w_i² here.
template <class T>
void lanczos_beta_partial(index_t n, const double* alpha, const T* v, T* w, double* partials, unsigned* ticket,
                          double* sumsq);
/// *x = sqrt(*x), in device memory (one thread, on the default stream).
void lanczos_root(double* x);

}  // namespace krysp::detail
