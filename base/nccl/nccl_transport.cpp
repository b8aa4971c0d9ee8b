// The NCCL transport of the device side of a Communicator (base/device_transport.hpp): compiled
// only with KRYSP_WITH_NCCL. Everything NCCL does runs on one stream of its own, in the order the
// host issues it, tied to the default stream by events both ways, so the host never waits for a
// halo or a sum.
#include <cuda_runtime.h>
#include <nccl.h>

#include "krysp/base/communicator.hpp"
#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/device_transport.hpp"
#include "krysp/base/error.hpp"

#define KRYSP_NCCL_CHECK(call)                                                                         \
  do {                                                                                                 \
    ncclResult_t krysp_nccl_ = (call);                                                                 \
    if (krysp_nccl_ != ncclSuccess)                                                                    \
      KRYSP_THROW(::krysp::DeviceError, #call " failed: ", ncclGetErrorString(krysp_nccl_),            \
                  " (NCCL_DEBUG=INFO says more; on NVLink-switch machines try NCCL_NVLS_ENABLE=0)"); \
  } while (0)

namespace krysp::detail {

namespace {
class NcclTransport final : public DeviceTransport {
 public:
  explicit NcclTransport(const Communicator& comm) : ranks_(comm.size()) {
    ncclUniqueId id{};
    comm.collective([&] {
      if (comm.rank() == 0) KRYSP_NCCL_CHECK(ncclGetUniqueId(&id));
    });
    comm.broadcast(&id, sizeof id, 0);  // through MPI, as NCCL's own examples do
    KRYSP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    KRYSP_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    KRYSP_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    KRYSP_NCCL_CHECK(ncclCommInitRank(&nccl_, comm.size(), id, comm.rank()));
    // NCCL connects on a communicator's first collective, which can take seconds: one sum now puts
    // that in the transport's making, not in whichever solve sums first (docs/distributed.md).
    DeviceArray<double> one(1);
    one.zero();
    sum(one.data(), 1);
    KRYSP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    KRYSP_CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~NcclTransport() override {
    if (stream_) cudaStreamSynchronize(stream_);
    if (nccl_) ncclCommDestroy(nccl_);
    if (ready_) cudaEventDestroy(ready_);
    if (done_) cudaEventDestroy(done_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  const char* kind() const override { return "nccl"; }

  void start_exchange(const std::vector<CommMessage>& sends, const std::vector<CommMessage>& recvs) override {
    after_default_stream();
    // One group: every neighbour's send and receive progress together (no ordering deadlock).
    KRYSP_NCCL_CHECK(ncclGroupStart());
    for (const auto& m : recvs) KRYSP_NCCL_CHECK(ncclRecv(m.data, m.bytes, ncclChar, m.peer, nccl_, stream_));
    for (const auto& m : sends) KRYSP_NCCL_CHECK(ncclSend(m.data, m.bytes, ncclChar, m.peer, nccl_, stream_));
    KRYSP_NCCL_CHECK(ncclGroupEnd());
  }

  void finish_exchange() override { default_stream_after(); }

  void sum(double* values, std::size_t count) override {
    if (count == 0) return;
    const std::size_t need = count * std::size_t(ranks_);
    if (gathered_.size() < need) {
      KRYSP_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old buffer may still be read
      gathered_ = DeviceArray<double>(need);
    }
    after_default_stream();
    // Allgather, not allreduce: NCCL's reduction order depends on its algorithm and the message
    // size; gathering and adding in rank order gives Communicator::sum's bits.
    KRYSP_NCCL_CHECK(ncclAllGather(values, gathered_.data(), count, ncclDouble, nccl_, stream_));
    default_stream_after();
    rank_order_sum_device(gathered_.data(), ranks_, count, values, nullptr);
  }

 private:
  void after_default_stream() {
    KRYSP_CUDA_CHECK(cudaEventRecord(ready_, 0));
    KRYSP_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
  }
  void default_stream_after() {
    KRYSP_CUDA_CHECK(cudaEventRecord(done_, stream_));
    KRYSP_CUDA_CHECK(cudaStreamWaitEvent(0, done_, 0));
  }
  int ranks_ = 1;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
  DeviceArray<double> gathered_;
};
}  // namespace

std::unique_ptr<DeviceTransport> make_nccl_transport(const Communicator& comm) {
  return std::make_unique<NcclTransport>(comm);
}

}  // namespace krysp::detail
