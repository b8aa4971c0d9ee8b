// The MPI transport of Communicator (base/comm_backend.hpp): compiled only with KRYSP_WITH_MPI.
#define OMPI_SKIP_MPICXX 1  // the C API only: no deprecated C++ bindings (nor their warnings)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdint>

#include "krysp/base/comm_backend.hpp"
#include "krysp/base/error.hpp"

namespace krysp::detail {

namespace {
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  KRYSP_THROW(Error, what, " failed: ", std::string(text, static_cast<std::size_t>(length)));
}

int message_count(std::size_t bytes, const char* what) {
  KRYSP_REQUIRE(bytes <= static_cast<std::size_t>(INT_MAX), what, ": a message of ", bytes,
                " bytes exceeds MPI's int count (2 GiB)");
  return static_cast<int>(bytes);
}

constexpr int kTag = 2707;  // krysp's own duplicated communicator: no other traffic to tell apart

/// Waits for its requests; destroyed unwaited, it waits too (the buffers must outlive them).
class MpiExchange final : public PendingExchange {
 public:
  explicit MpiExchange(std::vector<MPI_Request> requests) : requests_(std::move(requests)) {}
  ~MpiExchange() override {
    if (!requests_.empty()) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }
  void wait() override {
    if (requests_.empty()) return;
    const int rc = MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    check(rc, "MPI_Waitall (halo exchange)");
  }

 private:
  std::vector<MPI_Request> requests_;
};

class MpiBackend final : public CommBackend {
 public:
  explicit MpiBackend(MPI_Comm parent) {
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    KRYSP_REQUIRE(initialised && !finalised, "Communicator: MPI is ", finalised ? "already finalised" : "not initialised",
                  " (call MPI_Init before making an MPI communicator)");
    check(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiBackend() override {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) MPI_Comm_free(&comm_);  // after MPI_Finalize there is nothing left to free
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* kind() const override { return "mpi"; }

  void allgather(const void* in, std::size_t bytes, void* out) const override {
    const int n = message_count(bytes, "allgather");
    check(MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_), "MPI_Allgather");
  }
  void broadcast(void* data, std::size_t bytes, int root) const override {
    check(MPI_Bcast(data, message_count(bytes, "broadcast"), MPI_BYTE, root, comm_), "MPI_Bcast");
  }
  void all_to_all(const std::vector<std::vector<char>>& out, std::vector<std::vector<char>>& in) const override {
    // Sizes first, then one message per non-empty pair: no int displacements to overflow when
    // rank 0 scatters a large matrix.
    std::vector<std::uint64_t> send_sizes(static_cast<std::size_t>(size_)), recv_sizes(send_sizes.size());
    for (int r = 0; r < size_; ++r) send_sizes[static_cast<std::size_t>(r)] = out[static_cast<std::size_t>(r)].size();
    check(MPI_Alltoall(send_sizes.data(), 1, MPI_UINT64_T, recv_sizes.data(), 1, MPI_UINT64_T, comm_), "MPI_Alltoall");
    in.assign(static_cast<std::size_t>(size_), {});
    std::vector<MPI_Request> requests;
    for (int r = 0; r < size_; ++r) {
      auto& buf = in[static_cast<std::size_t>(r)];
      buf.resize(recv_sizes[static_cast<std::size_t>(r)]);
      if (buf.empty()) continue;
      requests.emplace_back();
      check(MPI_Irecv(buf.data(), message_count(buf.size(), "all_to_all"), MPI_BYTE, r, kTag + 1, comm_,
                      &requests.back()), "MPI_Irecv");
    }
    for (int r = 0; r < size_; ++r) {
      const auto& buf = out[static_cast<std::size_t>(r)];
      if (buf.empty()) continue;
      requests.emplace_back();
      check(MPI_Isend(buf.data(), message_count(buf.size(), "all_to_all"), MPI_BYTE, r, kTag + 1, comm_,
                      &requests.back()), "MPI_Isend");
    }
    MpiExchange(std::move(requests)).wait();
  }
  std::unique_ptr<PendingExchange> start_exchange(const std::vector<CommMessage>& sends,
                                                  const std::vector<CommMessage>& recvs) const override {
    std::vector<MPI_Request> requests(recvs.size() + sends.size());
    std::size_t k = 0;
    for (const auto& m : recvs)
      check(MPI_Irecv(m.data, message_count(m.bytes, "halo"), MPI_BYTE, m.peer, kTag, comm_, &requests[k++]),
            "MPI_Irecv (halo)");
    for (const auto& m : sends)
      check(MPI_Isend(m.data, message_count(m.bytes, "halo"), MPI_BYTE, m.peer, kTag, comm_, &requests[k++]),
            "MPI_Isend (halo)");
    return std::make_unique<MpiExchange>(std::move(requests));
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};
}  // namespace

std::shared_ptr<const CommBackend> mpi_world_backend() { return std::make_shared<const MpiBackend>(MPI_COMM_WORLD); }

std::shared_ptr<const CommBackend> mpi_backend_from_fortran(int fortran_comm) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  KRYSP_REQUIRE(initialised, "Communicator: MPI is not initialised (call MPI_Init first)");
  const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_comm));
  KRYSP_REQUIRE(comm != MPI_COMM_NULL, "Communicator: Fortran handle ", fortran_comm, " is MPI_COMM_NULL");
  return std::make_shared<const MpiBackend>(comm);
}

}  // namespace krysp::detail
