// The last step of a device sum over ranks (base/device_transport.hpp): every rank's partials,
// gathered, added in rank order, so that the result is bitwise that of Communicator::sum.
#include <cuda_runtime.h>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_transport.hpp"

namespace krysp::detail {

namespace {
__global__ void rank_order_sum_kernel(const double* gathered, int ranks, std::size_t count, double* values) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  double s = gathered[i];
  // Plain adds in the host loop's order: no FMA can form, so the bits match the host's.
  for (int r = 1; r < ranks; ++r) s = __dadd_rn(s, gathered[std::size_t(r) * count + i]);
  values[i] = s;
}
}  // namespace

void rank_order_sum_device(const double* gathered, int ranks, std::size_t count, double* values, void* stream) {
  if (count == 0) return;
  constexpr unsigned kBlock = 128;
  const unsigned blocks = unsigned((count + kBlock - 1) / kBlock);
  rank_order_sum_kernel<<<blocks, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(gathered, ranks, count, values);
  KRYSP_CUDA_CHECK_LAUNCH("rank_order_sum_kernel");
}

}  // namespace krysp::detail
