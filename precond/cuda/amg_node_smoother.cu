// The node-block smoother's vector kernels (amg_kernels.hpp): HostAmg::smooth_correction's
// recurrence with D_b⁻¹ in place of D⁻¹. On blocks a thread an entry of the n × N block, reading
// its node's b entries of R − W (cached: the node's other threads read the same); on vectors
// with A·X summed inside, as the point smoother's fused step (chebyshev_fused.cu).
#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/precond/cuda/amg_kernels.hpp"
#include "krysp/precond/cuda/row_groups.cuh"

namespace krysp::detail {

namespace {
constexpr int kBlock = 256;

unsigned grid_for(std::int64_t total) {
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(1, (total + kBlock - 1) / kBlock), 1 << 16));
}

// g = (D_b⁻¹·(R − W))_{i,c}, the host's sum order (j = 0..b−1); W null: D_b⁻¹·R.
template <class T>
__device__ __forceinline__ T node_solve(int b, const T* __restrict__ binv, std::int64_t i, std::int64_t c,
                                        const T* __restrict__ R, index_t ldr, const T* __restrict__ W, index_t ldw) {
  const std::int64_t node = i / b, q = i - node * b;
  const T* m = binv + (node * b + q) * b;
  const std::int64_t first = node * b;
  T s = 0;
  for (int j = 0; j < b; ++j) {
    const T g = W ? R[(first + j) * ldr + c] - W[(first + j) * ldw + c] : R[(first + j) * ldr + c];
    s += m[j] * g;
  }
  return s;
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    amg_node_first_kernel(index_t n, index_t N, int b, T c0, const T* __restrict__ binv, const T* __restrict__ R,
                          index_t ldr, T* __restrict__ X, index_t ldx) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / N, c = t - i * N;
    X[i * ldx + c] = c0 * node_solve<T>(b, binv, i, c, R, ldr, nullptr, 0);
  }
}

// Y = X + c1·(X − Xp) + c2·D_b⁻¹(R − W). Xp may be Y (each entry read before it is written, by
// the same thread); X and W must not be Y (other rows of the node read them).
template <class T>
__global__ void __launch_bounds__(kBlock)
    amg_node_step_kernel(index_t n, index_t N, int b, T c1, T c2, const T* __restrict__ binv, const T* __restrict__ R,
                         index_t ldr, const T* __restrict__ W, index_t ldw, const T* __restrict__ X, index_t ldx,
                         const T* Xp, index_t ldxp, T* Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / N, c = t - i * N;
    const T x = X[i * ldx + c], xp = Xp ? Xp[i * ldxp + c] : T(0);
    Y[i * ldy + c] = x + c1 * (x - xp) + c2 * node_solve<T>(b, binv, i, c, R, ldr, W, ldw);
  }
}

// W lanes a row (from the mean row length, as the point smoother's sub-warps), whole nodes a
// block: each sub-warp sums its row of A·X (lane t takes entries t, t + W, ... in order, then a
// fixed butterfly) into shared memory, and after the barrier thread r of the block writes row r
// from its node's sums.
template <class T>
__global__ void __launch_bounds__(kBlock)
    amg_node_fused_kernel(CsrView<T> A, int b, int W, int nodes_per_block, T c1, T c2, const T* __restrict__ binv,
                          const T* __restrict__ R, index_t ldr, const T* __restrict__ X, const T* Xp, T* Y,
                          index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  __shared__ T ax[kBlock];
  const int rows = nodes_per_block * b;
  const std::int64_t first = std::int64_t(blockIdx.x) * rows;
  const int local = int(threadIdx.x) / W, t = int(threadIdx.x) % W;
  const std::int64_t row = first + local;
  T s = 0;
  if (local < rows && row < A.rows)
    for (index_t k = A.row_ptr[row] + t; k < A.row_ptr[row + 1]; k += W) s += A.values[k] * X[A.col_idx[k]];
  for (int off = W / 2; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off, W);
  if (t == 0 && local < rows) ax[local] = s;
  __syncthreads();
  const int r = int(threadIdx.x);
  const std::int64_t i = first + r;
  if (r >= rows || i >= A.rows) return;
  const int q = r % b, base = r - q;  // the node's first row in the block
  const T* m = binv + i * b;
  T g = 0;
  for (int j = 0; j < b; ++j) g += m[j] * (R[(first + base + j) * ldr] - ax[base + j]);
  const T x = X[i], xp = Xp ? Xp[i] : T(0);  // Xp read before Y is written: Y may be Xp
  Y[i * ldy] = x + c1 * (x - xp) + c2 * g;
}
}  // namespace

template <class T>
void amg_node_fused_step(const CsrView<T>& A, int mean_row, int b, T c1, T c2, const T* binv, const T* R, index_t ldr,
                         const T* X, const T* Xp, T* Y, index_t ldy, DeviceStream stream) {
  if (A.rows == 0) return;
  const int W = pow2_lanes(double(mean_row / 2), 2);  // the point smoother's sub-warps
  const int nodes_per_block = kBlock / W / b;  // ≥ 1: kBlock / 32 = 8 ≥ b
  const std::int64_t nodes = A.rows / b;
  const auto grid = unsigned((nodes + nodes_per_block - 1) / nodes_per_block);
  launch_overlapped("amg_node_fused_kernel", amg_node_fused_kernel<T>, grid, kBlock, cuda_stream(stream), A, b, W,
                    nodes_per_block, c1, c2, binv, R, ldr, X, Xp, Y, ldy);
}

template <class T>
void amg_node_first(index_t n, index_t N, int b, T c0, const T* binv, const T* R, index_t ldr, T* X, index_t ldx,
                    DeviceStream stream) {
  const std::int64_t total = std::int64_t(n) * N;
  if (total == 0) return;
  launch_overlapped("amg_node_first_kernel", amg_node_first_kernel<T>, grid_for(total), kBlock, cuda_stream(stream), n,
                    N, b, c0, binv, R, ldr, X, ldx);
}

template <class T>
void amg_node_step(index_t n, index_t N, int b, T c1, T c2, const T* binv, const T* R, index_t ldr, const T* W,
                   index_t ldw, const T* X, index_t ldx, const T* Xp, index_t ldxp, T* Y, index_t ldy,
                   DeviceStream stream) {
  const std::int64_t total = std::int64_t(n) * N;
  if (total == 0) return;
  launch_overlapped("amg_node_step_kernel", amg_node_step_kernel<T>, grid_for(total), kBlock, cuda_stream(stream), n,
                    N, b, c1, c2, binv, R, ldr, W, ldw, X, ldx, Xp, ldxp, Y, ldy);
}

#define KRYSP_INSTANTIATE_NODE(T)                                                                                  \
  template void amg_node_first<T>(index_t, index_t, int, T, const T*, const T*, index_t, T*, index_t, DeviceStream); \
  template void amg_node_step<T>(index_t, index_t, int, T, T, const T*, const T*, index_t, const T*, index_t,        \
                                 const T*, index_t, const T*, index_t, T*, index_t, DeviceStream);                  \
  template void amg_node_fused_step<T>(const CsrView<T>&, int, int, T, T, const T*, const T*, index_t, const T*,       \
                                       const T*, T*, index_t, DeviceStream);
KRYSP_INSTANTIATE_NODE(double)
KRYSP_INSTANTIATE_NODE(float)

}  // namespace krysp::detail
