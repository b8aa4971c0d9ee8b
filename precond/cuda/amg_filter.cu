// The filtered matrix of the AMG prolongator smoothing on the GPU (amg_filter.hpp).
#include "krysp/precond/cuda/amg_filter.hpp"

#include "krysp/base/cuda/check.cuh"

namespace krysp::detail {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(index_t n) { return unsigned((std::int64_t(n) + kThreads - 1) / kThreads); }

// amg::filter_entries's test for entry v of row i (di, dj: the diagonal values of rows i and j):
// strong, |v| ≥ θ·sqrt(|a_ii|·|a_jj|), or strong from row i's side, |v| ≥ θ·|a_ii|; the node
// magnitudes as strength_graph forms them, sqrt(a²).
__device__ __forceinline__ bool kept(double v, double di, double dj, double theta) {
  const double mi = sqrt(__dmul_rn(di, di)), mj = sqrt(__dmul_rn(dj, dj));
  const double acc = __dmul_rn(v, v), m = sqrt(acc);
  return acc > 0 && (m >= __dmul_rn(theta, sqrt(__dmul_rn(mi, mj))) || m >= __dmul_rn(theta, mi));
}

__global__ void k_filter_count(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                               double theta, const std::uint8_t* given, std::uint8_t* keep, index_t* count) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  index_t c = 0;
  for (index_t k = rp[i]; k < rp[i + 1]; ++k) {
    bool on = ci[k] == i;
    if (given) {
      on = on || given[k] != 0;
    } else {
      on = on || kept(va[k], diag[i], diag[ci[k]], theta);
      keep[k] = on ? 1 : 0;
    }
    c += on ? 1 : 0;
  }
  count[i] = c;
}

__global__ void k_filter_fill(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                              const std::uint8_t* keep, const double* b, const index_t* f_rp, index_t* f_ci,
                              double* f_va, double* dinv_f) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double aii = diag[i], bi = b[i];
  double lump = 0;
  for (index_t k = rp[i]; k < rp[i + 1]; ++k)
    if (ci[k] != i && keep[k] == 0) lump = __dadd_rn(lump, __ddiv_rn(__dmul_rn(va[k], b[ci[k]]), bi));
  double d = __dadd_rn(aii, lump);
  if (!(d > 0 && isfinite(d))) d = aii;  // lumping would make it indefinite: keep a_ii (as the host)
  index_t p = f_rp[i];
  for (index_t k = rp[i]; k < rp[i + 1]; ++k)
    if (keep[k] != 0 || ci[k] == i) {
      f_ci[p] = ci[k];
      f_va[p] = ci[k] == i ? d : va[k];
      ++p;
    }
  dinv_f[i] = 1.0 / d;
}

}  // namespace

void amg_filter_count(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                      double theta, const std::uint8_t* given, std::uint8_t* keep, index_t* count) {
  if (n == 0) return;
  k_filter_count<<<blocks_for(n), kThreads>>>(n, rp, ci, va, diag, theta, given, keep, count);
  KRYSP_CUDA_CHECK_LAUNCH("k_filter_count");
}

void amg_filter_fill(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                     const std::uint8_t* keep, const double* b, const index_t* f_rp, index_t* f_ci, double* f_va,
                     double* dinv_f) {
  if (n == 0) return;
  k_filter_fill<<<blocks_for(n), kThreads>>>(n, rp, ci, va, diag, keep, b, f_rp, f_ci, f_va, dinv_f);
  KRYSP_CUDA_CHECK_LAUNCH("k_filter_fill");
}

}  // namespace krysp::detail
