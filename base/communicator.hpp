#pragma once
/// \file communicator.hpp
/// The ranks a distributed solve runs on (docs/distributed.md), behind an MPI-free interface: a
/// serial communicator (one rank) always, MPI's when krysp was built with it (KRYSP_WITH_MPI).
/// The transport is a backend (base/comm_backend.hpp); device buffers travel through a device
/// transport (base/device_transport.hpp: NCCL, or MPI staged through pinned host memory), made
/// at the first device call.
///
/// Reductions are deterministic: every rank gathers all ranks' partial sums and adds them in rank
/// order, so the same ranks and the same input give bitwise the same answer, on every rank (the
/// solvers branch on reduced scalars, so every rank must see the same bits). Failures are agreed:
/// agree() and collective() turn an error on any rank into the same InputError on every rank.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace krysp {

namespace detail {
class CommBackend;
class DeviceTransport;
struct DeviceTransportSlot;
}

/// A group of ranks (see the file comment). Cheap to copy: copies share one backend.
class Communicator {
 public:
  /// The serial communicator: one rank, reductions are no-ops.
  Communicator();
  /// MPI_COMM_WORLD (duplicated, so that krysp's messages never meet the caller's) when krysp was
  /// built with MPI; MPI must be initialised (InputError otherwise). Collective: every rank makes
  /// it at the same point (make it once and copy it). The serial one without MPI.
  static Communicator world();
  /// An MPI communicator given by its Fortran handle (MPI_Comm_c2f(comm) in the caller's code:
  /// an int, so that this header needs no <mpi.h>); duplicated like world(). Collective.
  /// InputError when krysp was built without MPI.
  static Communicator from_fortran_handle(int fortran_comm);
  /// True when krysp was built with MPI (KRYSP_WITH_MPI).
  static bool mpi_built();

  /// This rank, 0..size()−1.
  int rank() const;
  /// Number of ranks.
  int size() const;
  /// "serial" or "mpi".
  std::string kind() const;

  /// values[i] = Σ over ranks of values[i] (count entries), added in rank order on every rank:
  /// bitwise the same result everywhere, and from run to run. Collective.
  void sum(double* values, std::size_t count) const;
  /// Σ over ranks of v (as sum() above).
  double sum(double v) const;
  /// Σ over ranks of v (exact).
  std::int64_t sum(std::int64_t v) const;
  /// The largest v over the ranks.
  double max(double v) const;
  /// values[i] = Σ over ranks of values[i] for `count` doubles in device memory of the current
  /// GPU, added in rank order as sum() does (bitwise the same result as sum() of the same
  /// partials). The result stays on the device, ordered on the default stream after the work that
  /// wrote the partials. Carried by the device transport (NCCL, or MPI staged through pinned host
  /// memory; docs/distributed.md), made at the first device call with the GPU then current.
  /// Collective; a no-op on one rank.
  void sum_device(double* values, std::size_t count) const;
  /// The device transport's name: "nccl", "mpi-staged" or "serial". Makes it at the first call
  /// (collective then: every rank calls it at the same point, with its GPU current).
  std::string device_kind() const;
  /// Copies `bytes` bytes at data from rank `root` to every rank. Collective.
  void broadcast(void* data, std::size_t bytes, int root) const;
  /// Every rank's value, in rank order (trivially copyable T). Collective.
  template <class T>
  std::vector<T> allgather(const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>, "allgather: T must be trivially copyable");
    std::vector<T> all(static_cast<std::size_t>(size()));
    allgather_bytes(&value, sizeof(T), all.data());
    return all;
  }
  /// to_rank[r] goes to rank r; returns from_rank[r], what rank r sent here (trivially copyable T;
  /// to_rank has size() entries). Collective.
  template <class T>
  std::vector<std::vector<T>> all_to_all(const std::vector<std::vector<T>>& to_rank) const {
    static_assert(std::is_trivially_copyable_v<T>, "all_to_all: T must be trivially copyable");
    std::vector<std::vector<char>> out(to_rank.size()), in;
    for (std::size_t r = 0; r < to_rank.size(); ++r) {
      out[r].resize(to_rank[r].size() * sizeof(T));
      if (!out[r].empty()) std::memcpy(out[r].data(), to_rank[r].data(), out[r].size());
    }
    all_to_all_bytes(out, in);
    std::vector<std::vector<T>> from(in.size());
    for (std::size_t r = 0; r < in.size(); ++r) {
      from[r].resize(in[r].size() / sizeof(T));
      if (!in[r].empty()) std::memcpy(from[r].data(), in[r].data(), in[r].size());
    }
    return from;
  }

  /// Every rank learns whether any rank has ok = false; if one has, every rank throws the same
  /// InputError: "rank r: message" for the lowest failing rank r (plus how many others failed).
  /// Collective: bad input on one rank is an error on all, never a hang.
  void agree(bool ok, const std::string& message) const;
  /// Runs f() here, then agree()s: an exception on any rank (its what()) becomes the same
  /// InputError on every rank. Collective.
  template <class F>
  void collective(F&& f) const {
    bool ok = true;
    std::string error;
    try {
      f();
    } catch (const std::exception& e) {
      ok = false;
      error = e.what();
    }
    agree(ok, error);
  }

  /// The transport (internal: base/comm_backend.hpp).
  const detail::CommBackend& backend() const { return *impl_; }
  /// The device transport (internal: base/device_transport.hpp), made at the first call
  /// (collective then, as device_kind()). Copies of this communicator share it.
  detail::DeviceTransport& device_transport() const;
  /// Makes a communicator on a given transport (a backend of base/comm_backend.hpp).
  explicit Communicator(std::shared_ptr<const detail::CommBackend> backend);

 private:
  void allgather_bytes(const void* in, std::size_t bytes, void* out) const;
  void all_to_all_bytes(const std::vector<std::vector<char>>& out, std::vector<std::vector<char>>& in) const;
  std::shared_ptr<const detail::CommBackend> impl_;
  std::shared_ptr<detail::DeviceTransportSlot> device_;  // shared by copies, filled at first use
};

}  // namespace krysp
