#pragma once
/// \file device_transport.hpp
/// The device side of a Communicator (internal, CUDA- and NCCL-free): halo exchanges of device
/// buffers and deterministic sums of device values, ordered with the work of the default stream.
/// Two transports (docs/distributed.md):
///  - "nccl" (base/nccl/, built with KRYSP_WITH_NCCL): ncclSend/ncclRecv in a group for halos and
///    ncclAllGather for sums, on a stream of their own, tied to the default stream by events, so
///    that the host never waits for a halo;
///  - "mpi-staged" (base/cuda/): device buffers copied through pinned host memory and sent by the
///    Communicator's host backend (MPI).
/// Both sum in rank order over every rank's partials, as Communicator::sum does: the same ranks
/// and input give bitwise the same result, whichever transport carries it.
/// KRYSP_COMM=nccl|mpi forces one (nccl where it was not built, or where two ranks share a GPU,
/// is an InputError); by default NCCL when built and every rank has a GPU of its own, MPI-staged
/// otherwise.
#include <cstddef>
#include <memory>
#include <vector>

#include "krysp/base/comm_backend.hpp"

namespace krysp {
class Communicator;
namespace detail {

/// Environment variable choosing the device transport: "nccl", "mpi" (MPI staged through pinned
/// host memory) or unset/"auto".
inline constexpr const char* kCommEnv = "KRYSP_COMM";

/// A device transport (see the file comment). One exchange at a time: start, then finish.
class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;
  /// "nccl", "mpi-staged" or "serial".
  virtual const char* kind() const = 0;
  /// Starts a halo exchange of device buffers (CommMessage::data: device pointers of the current
  /// GPU). The sends' contents are written by work already queued on the default stream; the
  /// exchange begins after that work, and the call returns without waiting for it, so that work
  /// queued next on the default stream (the local product) overlaps the exchange. Collective
  /// between the peers.
  virtual void start_exchange(const std::vector<CommMessage>& sends, const std::vector<CommMessage>& recvs) = 0;
  /// Ends the exchange started last: work queued afterwards on the default stream sees the
  /// received data, and the send buffers may be overwritten by it. The host may return before the
  /// data has arrived (NCCL) or after (MPI-staged).
  virtual void finish_exchange() = 0;
  /// values[i] (count doubles in device memory) = Σ over ranks in rank order, ordered on the
  /// default stream (after the work that wrote them, before the work queued next). Collective.
  virtual void sum(double* values, std::size_t count) = 0;
};

/// The transport for comm on the current GPU, chosen as the file comment says. Collective (NCCL
/// makes its communicator here): every rank calls it at the same point, with its GPU current.
std::unique_ptr<DeviceTransport> make_device_transport(const Communicator& comm);
/// MPI staged through pinned host memory (or, on one rank, a transport with nothing to send).
std::unique_ptr<DeviceTransport> make_staged_transport(const Communicator& comm);
/// NCCL's (base/nccl/; only in builds with KRYSP_WITH_NCCL).
std::unique_ptr<DeviceTransport> make_nccl_transport(const Communicator& comm);
/// True when krysp was built with NCCL (KRYSP_WITH_NCCL).
bool nccl_built();

/// Makes GPU (local rank) mod (device count) current and returns it, the local rank taken from
/// the launcher's environment (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID,
/// PMIX_LOCAL_RANK... in that order), else `fallback` (e.g. the world rank: right on one host).
/// One rank per GPU that way. DeviceError without a device.
int use_local_gpu(int fallback);

/// values[i] = Σ_r gathered[r·count + i] for r = 0..ranks−1, in rank order, on `stream` (a
/// cudaStream_t; nullptr: the default stream). Device pointers; base/cuda/rank_order_sum.cu.
void rank_order_sum_device(const double* gathered, int ranks, std::size_t count, double* values, void* stream);

}  // namespace detail
}  // namespace krysp
