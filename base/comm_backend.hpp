#pragma once
/// \file comm_backend.hpp
/// The transport behind a Communicator (base/communicator.hpp): internal, not installed. The
/// serial one lives in base/communicator.cpp, MPI's in base/mpi/mpi_comm_backend.cpp. A device
/// transport (NCCL, or MPI staged through pinned host memory) implements the same calls, with
/// start_exchange() taking device pointers: the distributed matrix only posts and waits.
#include <cstddef>
#include <memory>
#include <vector>

namespace krysp {
class Communicator;
namespace detail {

/// One message of a halo exchange: `bytes` bytes to or from rank `peer`.
struct CommMessage {
  int peer;
  void* data;
  std::size_t bytes;
};

/// An exchange in flight: wait() returns once every message was sent and received. Destroying
/// one that was not waited for waits (buffers must not be freed under a pending message).
class PendingExchange {
 public:
  virtual ~PendingExchange() = default;
  /// Blocks until the exchange is complete.
  virtual void wait() = 0;
};

/// A transport: the collectives a Communicator builds on, and point-to-point halo exchanges.
class CommBackend {
 public:
  virtual ~CommBackend() = default;
  /// This rank.
  virtual int rank() const = 0;
  /// Number of ranks.
  virtual int size() const = 0;
  /// "serial", "mpi", ...
  virtual const char* kind() const = 0;
  /// out (size()·bytes bytes) = every rank's `bytes` bytes at in, in rank order.
  virtual void allgather(const void* in, std::size_t bytes, void* out) const = 0;
  /// Copies `bytes` bytes at data from rank root to all ranks.
  virtual void broadcast(void* data, std::size_t bytes, int root) const = 0;
  /// in[r] = what rank r put in its out[this rank] (out has size() entries).
  virtual void all_to_all(const std::vector<std::vector<char>>& out, std::vector<std::vector<char>>& in) const = 0;
  /// Posts the receives, then the sends; returns at once. Buffers stay untouched until wait().
  virtual std::unique_ptr<PendingExchange> start_exchange(const std::vector<CommMessage>& sends,
                                                          const std::vector<CommMessage>& recvs) const = 0;
};

/// MPI_COMM_WORLD's backend (base/mpi/; only in builds with MPI).
std::shared_ptr<const CommBackend> mpi_world_backend();
/// The backend of the MPI communicator with this Fortran handle (base/mpi/; only with MPI).
std::shared_ptr<const CommBackend> mpi_backend_from_fortran(int fortran_comm);

}  // namespace detail
}  // namespace krysp
