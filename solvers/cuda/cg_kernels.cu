// CG's vector kernels: each fuses what one CG line needs, so vectors cross memory as few times as
// possible, and reads its scalars from device slots (no host round trip per iteration).
#include <cmath>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/cuda/cg_kernels.hpp"
#include "krysp/base/cuda/grid_reduce.cuh"

namespace krysp::detail {

namespace {
constexpr int kBlock = kReduceBlock;

__device__ __forceinline__ std::int64_t thread_index() { return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ std::int64_t grid_stride() { return std::int64_t(gridDim.x) * blockDim.x; }
ReduceWorkspace as_ws(ReduceWorkspaceRef w) { return {w.partials, w.ticket}; }
unsigned blocks_for(index_t n) { return unsigned(std::max<std::int64_t>(1, (std::int64_t(n) + kBlock - 1) / kBlock)); }
}  // namespace

int reduce_grid() {
  int dev = 0, sms = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms * (2048 / kBlock);  // one full wave of resident blocks
}

template <class T>
__global__ void __launch_bounds__(kBlock) dot_kernel(index_t n, const T* __restrict__ a, const T* __restrict__ b,
                                                     double* scalars, SlotList<1> out, ReduceWorkspace ws) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  double v[1] = {0.0};
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) v[0] += double(a[i]) * double(b[i]);
  grid_sum<1>(v, ws, scalars, out);
}

template <class T>
void launch_dot(index_t n, const T* a, const T* b, double* scalars, int out, ReduceWorkspaceRef ws) {
  launch_overlapped("dot_kernel", dot_kernel<T>, std::min<unsigned>(blocks_for(n), ws.grid), kBlock, cudaStream_t{},
                    n, a, b, scalars, SlotList<1>{{out}}, as_ws(ws));
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    precondition_kernel(index_t n, const T* __restrict__ inv_diag, const T* __restrict__ r, T* __restrict__ z,
                        bool z_is_input, double* scalars, SlotList<2> out, ReduceWorkspace ws) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  double v[2] = {0.0, 0.0};
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) {
    const T ri = r[i];
    const T zi = inv_diag ? inv_diag[i] * ri : z_is_input ? z[i] : ri;
    if (inv_diag) z[i] = zi;
    v[0] += double(ri) * double(zi);
    v[1] += double(ri) * double(ri);
  }
  grid_sum<2>(v, ws, scalars, out);
}

template <class T>
void launch_precondition(index_t n, const T* inv_diag, const T* r, T* z, bool z_is_input, double* scalars, int rz,
                         int rr, ReduceWorkspaceRef ws) {
  launch_overlapped("precondition_kernel", precondition_kernel<T>, std::min<unsigned>(blocks_for(n), ws.grid), kBlock,
                    cudaStream_t{}, n, inv_diag, r, z, z_is_input, scalars, SlotList<2>{{rz, rr}}, as_ws(ws));
}

template <class T>
__global__ void __launch_bounds__(kBlock) direction_kernel(index_t n, const T* __restrict__ z, T* __restrict__ p,
                                                           const double* scalars, int rz_k, int rz_prev, bool first,
                                                           int flag) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  if (scalars[flag] != kCgOk) return;
  const T beta = first ? T(0) : T(scalars[rz_k] / scalars[rz_prev]);
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) p[i] = first ? z[i] : z[i] + beta * p[i];
}

template <class T>
void launch_direction(index_t n, const T* z, T* p, const double* scalars, int rz_k, int rz_prev, bool first,
                      int flag) {
  launch_overlapped("direction_kernel", direction_kernel<T>, blocks_for(n), kBlock, cudaStream_t{}, n, z, p, scalars,
                    rz_k, rz_prev, first, flag);
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    cg_update_kernel(index_t n, double* scalars, int rz_k, int pq, int flag, int flag_iter, int tol2, index_t iteration,
                     const T* __restrict__ p, const T* __restrict__ q, T* __restrict__ x, T* __restrict__ r,
                     const T* __restrict__ inv_diag, T* __restrict__ z, SlotList<2> out, ReduceWorkspace ws) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  if (scalars[flag] != kCgOk) return;  // frozen by an earlier launch: the whole grid leaves
  const int verdict = cg_step_verdict(scalars[rz_k], scalars[pq]);
  const T alpha = verdict == kCgOk ? T(scalars[rz_k] / scalars[pq]) : T(0);
  double v[2] = {0.0, 0.0};
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) {
    T ri = r[i];
    if (verdict == kCgOk) {
      x[i] += alpha * p[i];
      ri -= alpha * q[i];
      r[i] = ri;
    }
    const T zi = inv_diag ? inv_diag[i] * ri : ri;
    if (inv_diag) z[i] = zi;
    v[0] += double(ri) * double(zi);
    v[1] += double(ri) * double(ri);
  }
  // Every block computed the same verdict from the same two scalars; one thread records it. The
  // last block (in grid_sum) flags convergence, so later launches of the chunk do nothing.
  if (verdict != kCgOk && thread_index() == 0) {
    scalars[flag] = verdict;
    scalars[flag_iter] = iteration;
  }
  if (grid_sum<2>(v, ws, scalars, out) && verdict == kCgOk && tol2 >= 0 && scalars[out.at[1]] <= scalars[tol2]) {
    scalars[flag] = kCgConverged;
    scalars[flag_iter] = iteration + 1;
  }
}

template <class T>
void launch_cg_update(index_t n, double* scalars, int rz_k, int pq, int flag, int flag_iter, int tol2, index_t iteration,
                      const T* p, const T* q, T* x, T* r, const T* inv_diag, T* z, int rz_next, int rr_next,
                      ReduceWorkspaceRef ws) {
  launch_overlapped("cg_update_kernel", cg_update_kernel<T>, std::min<unsigned>(blocks_for(n), ws.grid), kBlock,
                    cudaStream_t{}, n, scalars, rz_k, pq, flag, flag_iter, tol2, iteration, p, q, x, r, inv_diag, z,
                    SlotList<2>{{rz_next, rr_next}}, as_ws(ws));
}

__global__ void cg_converged_kernel(double* scalars, int rr, int tol2, int flag, int flag_iter, index_t iteration) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  if (scalars[flag] == kCgOk && scalars[rr] <= scalars[tol2]) {
    scalars[flag] = kCgConverged;
    scalars[flag_iter] = iteration + 1;
  }
}

void launch_cg_converged(double* scalars, int rr, int tol2, int flag, int flag_iter, index_t iteration) {
  launch_overlapped("cg_converged_kernel", cg_converged_kernel, 1, 1, cudaStream_t{}, scalars, rr, tol2, flag,
                    flag_iter, iteration);
}

template <class T>
__global__ void copy_kernel(index_t n, const T* __restrict__ src, T* __restrict__ dst) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) dst[i] = src[i];
}

template <class T>
void launch_copy(index_t n, const T* src, T* dst) {
  if (n == 0) return;
  launch_overlapped("copy_kernel", copy_kernel<T>, blocks_for(n), kBlock, cudaStream_t{}, n, src, dst);
}

template <class T>
__global__ void subtract_from_kernel(index_t n, const T* __restrict__ b, T* __restrict__ r) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) r[i] = b[i] - r[i];
}

template <class T>
void launch_subtract_from(index_t n, const T* b, T* r) {
  if (n == 0) return;
  launch_overlapped("subtract_from_kernel", subtract_from_kernel<T>, blocks_for(n), kBlock, cudaStream_t{}, n, b, r);
}

#define KRYSP_INSTANTIATE_CG_KERNELS(T)                                                                          \
  template void launch_dot<T>(index_t, const T*, const T*, double*, int, ReduceWorkspaceRef);                    \
  template void launch_precondition<T>(index_t, const T*, const T*, T*, bool, double*, int, int, ReduceWorkspaceRef); \
  template void launch_direction<T>(index_t, const T*, T*, const double*, int, int, bool, int);                 \
  template void launch_cg_update<T>(index_t, double*, int, int, int, int, int, index_t, const T*, const T*, T*, T*,   \
                                    const T*, T*, int, int, ReduceWorkspaceRef);                                 \
  template void launch_copy<T>(index_t, const T*, T*);                                                        \
  template void launch_subtract_from<T>(index_t, const T*, T*);
KRYSP_INSTANTIATE_CG_KERNELS(double)
KRYSP_INSTANTIATE_CG_KERNELS(float)

}  // namespace krysp::detail
