// The device transports' factory and the MPI-staged transport (base/device_transport.hpp).
#include "krysp/base/device_transport.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "krysp/base/communicator.hpp"
#include "krysp/base/cuda/check.cuh"
#include "krysp/base/error.hpp"

namespace krysp::detail {

namespace {
/// Pinned host memory that grows, never shrinks: halos and sums reuse it every iteration.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  char* get(std::size_t bytes) {
    if (bytes > bytes_) {
      if (p_) KRYSP_CUDA_CHECK(cudaFreeHost(p_));
      p_ = nullptr;
      bytes_ = 0;
      KRYSP_CUDA_CHECK(cudaMallocHost(&p_, bytes));
      bytes_ = bytes;
    }
    return static_cast<char*>(p_);
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

/// MPI staged through pinned host memory. The send side is copied to pinned memory on a stream of
/// its own, after the default stream's work that packed it; the receives are posted at once; the
/// host sends and waits in finish_exchange(), after the caller queued its local product, which
/// therefore runs on the device during the transfer.
class StagedTransport final : public DeviceTransport {
 public:
  explicit StagedTransport(const Communicator& comm) : backend_(comm.backend()), ranks_(comm.size()) {
    if (ranks_ == 1) return;
    KRYSP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    KRYSP_CUDA_CHECK(cudaEventCreateWithFlags(&packed_, cudaEventDisableTiming));
  }
  ~StagedTransport() override {
    try {
      if (active_) finish_exchange();  // peers wait for our messages
    } catch (...) {
    }
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    if (packed_) cudaEventDestroy(packed_);
  }
  const char* kind() const override { return ranks_ == 1 ? "serial" : "mpi-staged"; }

  void start_exchange(const std::vector<CommMessage>& sends, const std::vector<CommMessage>& recvs) override {
    KRYSP_REQUIRE(!active_, "device halo exchange started twice without finish_exchange()");
    if (ranks_ == 1) {
      KRYSP_REQUIRE(sends.empty() && recvs.empty(), "a serial communicator has no neighbours to exchange with");
      return;
    }
    std::size_t send_bytes = 0, recv_bytes = 0;
    for (const auto& m : sends) send_bytes += m.bytes;
    for (const auto& m : recvs) recv_bytes += m.bytes;
    char* send_host = send_host_.get(send_bytes);
    char* recv_host = recv_host_.get(recv_bytes);
    host_sends_.clear();
    host_recvs_.clear();
    device_recvs_ = recvs;
    std::size_t at = 0;
    for (const auto& m : recvs) {
      host_recvs_.push_back({m.peer, recv_host + at, m.bytes});
      at += m.bytes;
    }
    recv_pending_ = backend_.start_exchange({}, host_recvs_);
    KRYSP_CUDA_CHECK(cudaEventRecord(packed_, 0));
    KRYSP_CUDA_CHECK(cudaStreamWaitEvent(stream_, packed_, 0));
    at = 0;
    for (const auto& m : sends) {
      KRYSP_CUDA_CHECK(cudaMemcpyAsync(send_host + at, m.data, m.bytes, cudaMemcpyDeviceToHost, stream_));
      host_sends_.push_back({m.peer, send_host + at, m.bytes});
      at += m.bytes;
    }
    active_ = true;
  }

  void finish_exchange() override {
    if (!active_) return;
    active_ = false;
    KRYSP_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the send side is in pinned memory
    auto send_pending = backend_.start_exchange(host_sends_, {});
    recv_pending_->wait();
    recv_pending_.reset();
    send_pending->wait();
    for (std::size_t k = 0; k < device_recvs_.size(); ++k)
      KRYSP_CUDA_CHECK(cudaMemcpyAsync(device_recvs_[k].data, host_recvs_[k].data, host_recvs_[k].bytes,
                                       cudaMemcpyHostToDevice, stream_));
    // Waiting here frees the pinned buffers for the next exchange, and the default stream's next
    // work, queued after this returns, finds the halo in place.
    KRYSP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void sum(double* values, std::size_t count) override {
    if (ranks_ == 1 || count == 0) return;
    const std::size_t bytes = count * sizeof(double);
    auto* mine = reinterpret_cast<double*>(sum_host_.get(bytes * (std::size_t(ranks_) + 1)));
    double* all = mine + count;
    KRYSP_CUDA_CHECK(cudaMemcpy(mine, values, bytes, cudaMemcpyDeviceToHost));  // after the partials' work
    backend_.allgather(mine, bytes, all);
    for (std::size_t i = 0; i < count; ++i) {  // Communicator::sum's loop: the same bits
      double s = all[i];
      for (int r = 1; r < ranks_; ++r) s += all[std::size_t(r) * count + i];
      mine[i] = s;
    }
    KRYSP_CUDA_CHECK(cudaMemcpy(values, mine, bytes, cudaMemcpyHostToDevice));
  }

 private:
  const CommBackend& backend_;  // owned by the Communicator that owns this transport
  int ranks_ = 1;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t packed_ = nullptr;
  PinnedBuffer send_host_, recv_host_, sum_host_;
  std::vector<CommMessage> host_sends_, host_recvs_, device_recvs_;
  std::unique_ptr<PendingExchange> recv_pending_;
  bool active_ = false;
};
}  // namespace

bool nccl_built() {
#ifdef KRYSP_WITH_NCCL
  return true;
#else
  return false;
#endif
}

int use_local_gpu(int fallback) {
  int local = fallback;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                           "SLURM_LOCALID", "PMIX_LOCAL_RANK", "PMI_LOCAL_RANK"})
    if (const char* v = std::getenv(name); v && *v) {
      local = std::atoi(v);
      break;
    }
  int count = 0;
  KRYSP_CUDA_CHECK(cudaGetDeviceCount(&count));
  KRYSP_REQUIRE(count > 0, "no CUDA device");
  const int device = (local < 0 ? 0 : local) % count;
  KRYSP_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

std::unique_ptr<DeviceTransport> make_staged_transport(const Communicator& comm) {
  return std::make_unique<StagedTransport>(comm);
}

namespace {
/// Which GPU a rank runs on: its host and the GPU's PCI bus id.
struct GpuIdentity {
  char host[128];
  char bus[32];
};

/// True when two ranks share a GPU: NCCL refuses that (one rank per GPU in a communicator).
bool ranks_share_a_gpu(const Communicator& comm) {
  GpuIdentity me{};
  comm.collective([&] {
    gethostname(me.host, sizeof me.host - 1);
    int device = 0;
    KRYSP_CUDA_CHECK(cudaGetDevice(&device));
    KRYSP_CUDA_CHECK(cudaDeviceGetPCIBusId(me.bus, int(sizeof me.bus), device));
  });
  const auto all = comm.allgather(me);
  for (std::size_t a = 0; a < all.size(); ++a)
    for (std::size_t b = a + 1; b < all.size(); ++b)
      if (std::strcmp(all[a].host, all[b].host) == 0 && std::strcmp(all[a].bus, all[b].bus) == 0) return true;
  return false;
}
}  // namespace

std::unique_ptr<DeviceTransport> make_device_transport(const Communicator& comm) {
  if (comm.size() == 1) return make_staged_transport(comm);  // nothing travels
  const bool shared = nccl_built() && ranks_share_a_gpu(comm);
  // Rank 0's environment decides for all: ranks taking different transports would hang.
  char choice = 0;  // 'n': NCCL, 'm': MPI staged
  comm.collective([&] {
    if (comm.rank() != 0) return;
    const char* env = std::getenv(kCommEnv);
    const std::string want = env ? env : "";
    KRYSP_REQUIRE(want.empty() || want == "auto" || want == "nccl" || want == "mpi", kCommEnv, "=", want,
                  ": expected nccl, mpi or auto");
    KRYSP_REQUIRE(want != "nccl" || nccl_built(), kCommEnv,
                  "=nccl but krysp was built without NCCL (KRYSP_WITH_NCCL; docs/distributed.md)");
    KRYSP_REQUIRE(want != "nccl" || !shared, kCommEnv,
                  "=nccl but two ranks share a GPU, which NCCL refuses (run one rank per GPU, or KRYSP_COMM=mpi)");
    // auto: NCCL when built and every rank has a GPU of its own, MPI staged otherwise.
    choice = (want == "mpi" || !nccl_built() || shared) ? 'm' : 'n';
  });
  comm.broadcast(&choice, 1, 0);
#ifdef KRYSP_WITH_NCCL
  if (choice == 'n') return make_nccl_transport(comm);
#endif
  return make_staged_transport(comm);
}

}  // namespace krysp::detail
