#pragma once
// The vector kernels of bench_dist_cg (bench/dist_cg_kernels.cu), CUDA-free: a textbook CG's dot
// products and updates on one rank's rows, all on the default stream, scalars in device slots so
// that an iteration never waits for the host. Dot products are deterministic (a fixed grid for a
// given n, partials added in a fixed order).
#include <cstdint>

namespace krysp::bench {

/// Doubles of workspace the dot products need.
inline constexpr int kDotPartials = 1024;

/// *slot = aᵀb over n entries (partials: kDotPartials doubles of device workspace).
void dist_dot(const double* a, const double* b, std::int64_t n, double* partials, double* slot);
/// α = *rr / *pq; x += α·p, r −= α·q; *rr_new = rᵀr (this rank's part).
void dist_cg_update(std::int64_t n, const double* rr, const double* pq, const double* p, const double* q, double* x,
                    double* r, double* partials, double* rr_new);
/// p = r + (*rr_new / *rr)·p.
void dist_cg_direction(std::int64_t n, const double* rr_new, const double* rr, const double* r, double* p);
/// v = value on n entries.
void dist_fill(double* v, std::int64_t n, double value);

}  // namespace krysp::bench
