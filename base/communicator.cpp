#include "krysp/base/communicator.hpp"

#include <algorithm>
#include <cstring>

#include "krysp/base/comm_backend.hpp"
#include "krysp/base/device_transport.hpp"
#include "krysp/base/error.hpp"

namespace krysp {

namespace detail {
/// The device transport of a communicator and its copies; empty until the first device call.
struct DeviceTransportSlot {
  std::unique_ptr<DeviceTransport> transport;
};
}  // namespace detail

namespace {
/// One rank: collectives copy, exchanges have no peer to talk to.
class SerialBackend final : public detail::CommBackend {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* kind() const override { return "serial"; }
  void allgather(const void* in, std::size_t bytes, void* out) const override {
    if (bytes) std::memmove(out, in, bytes);
  }
  void broadcast(void*, std::size_t, int root) const override {
    KRYSP_REQUIRE(root == 0, "broadcast from rank ", root, " on a serial communicator");
  }
  void all_to_all(const std::vector<std::vector<char>>& out, std::vector<std::vector<char>>& in) const override {
    KRYSP_REQUIRE(out.size() == 1, "all_to_all: ", out.size(), " messages for 1 rank");
    in = out;
  }
  std::unique_ptr<detail::PendingExchange> start_exchange(const std::vector<detail::CommMessage>& sends,
                                                          const std::vector<detail::CommMessage>& recvs) const override {
    KRYSP_REQUIRE(sends.empty() && recvs.empty(), "a serial communicator has no neighbours to exchange with");
    struct Done final : detail::PendingExchange {
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
};

std::shared_ptr<const detail::CommBackend> serial_backend() {
  static const auto serial = std::make_shared<const SerialBackend>();
  return serial;
}
}  // namespace

Communicator::Communicator() : impl_(serial_backend()), device_(std::make_shared<detail::DeviceTransportSlot>()) {}

Communicator::Communicator(std::shared_ptr<const detail::CommBackend> backend)
    : impl_(std::move(backend)), device_(std::make_shared<detail::DeviceTransportSlot>()) {
  KRYSP_REQUIRE(impl_ != nullptr, "Communicator: null backend");
}

bool Communicator::mpi_built() {
#ifdef KRYSP_WITH_MPI
  return true;
#else
  return false;
#endif
}

Communicator Communicator::world() {
#ifdef KRYSP_WITH_MPI
  return Communicator(detail::mpi_world_backend());
#else
  return Communicator();
#endif
}

Communicator Communicator::from_fortran_handle([[maybe_unused]] int fortran_comm) {
#ifdef KRYSP_WITH_MPI
  return Communicator(detail::mpi_backend_from_fortran(fortran_comm));
#else
  KRYSP_THROW(InputError, "Communicator::from_fortran_handle: krysp was built without MPI (KRYSP_WITH_MPI)");
#endif
}

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
std::string Communicator::kind() const { return impl_->kind(); }

void Communicator::allgather_bytes(const void* in, std::size_t bytes, void* out) const {
  impl_->allgather(in, bytes, out);
}

void Communicator::all_to_all_bytes(const std::vector<std::vector<char>>& out,
                                    std::vector<std::vector<char>>& in) const {
  KRYSP_REQUIRE(out.size() == static_cast<std::size_t>(size()), "all_to_all: ", out.size(), " messages for ", size(),
                " ranks");
  impl_->all_to_all(out, in);
}

void Communicator::sum(double* values, std::size_t count) const {
  const int P = size();
  if (P == 1 || count == 0) return;  // one rank: the partials are the sums, bit for bit
  std::vector<double> all(count * static_cast<std::size_t>(P));
  impl_->allgather(values, count * sizeof(double), all.data());
  // Rank order, the same loop on every rank: MPI_Allreduce may add in any order (and does
  // differently for different message sizes), so its result could differ between runs.
  for (std::size_t i = 0; i < count; ++i) {
    double s = all[i];
    for (int r = 1; r < P; ++r) s += all[static_cast<std::size_t>(r) * count + i];
    values[i] = s;
  }
}

detail::DeviceTransport& Communicator::device_transport() const {
  if (!device_->transport) device_->transport = detail::make_device_transport(*this);
  return *device_->transport;
}

std::string Communicator::device_kind() const { return device_transport().kind(); }

void Communicator::sum_device(double* values, std::size_t count) const {
  if (size() == 1 || count == 0) return;  // as sum(): one rank's partials are the sums
  device_transport().sum(values, count);
}

double Communicator::sum(double v) const {
  sum(&v, 1);
  return v;
}

std::int64_t Communicator::sum(std::int64_t v) const {
  std::int64_t s = 0;
  for (std::int64_t x : allgather(v)) s += x;
  return s;
}

double Communicator::max(double v) const {
  const auto all = allgather(v);
  return *std::max_element(all.begin(), all.end());
}

void Communicator::broadcast(void* data, std::size_t bytes, int root) const {
  KRYSP_REQUIRE(root >= 0 && root < size(), "broadcast from rank ", root, " of ", size());
  if (size() > 1 && bytes > 0) impl_->broadcast(data, bytes, root);
}

void Communicator::agree(bool ok, const std::string& message) const {
  if (size() == 1) {
    if (!ok) throw InputError(message);
    return;
  }
  const auto oks = allgather<char>(ok ? 1 : 0);
  int first = -1, failed = 0;
  for (int r = 0; r < size(); ++r)
    if (!oks[static_cast<std::size_t>(r)]) {
      if (first < 0) first = r;
      ++failed;
    }
  if (first < 0) return;
  std::uint64_t length = rank() == first ? message.size() : 0;
  broadcast(&length, sizeof length, first);
  std::string text = rank() == first ? message : std::string(length, ' ');
  broadcast(text.data(), length, first);
  if (failed > 1) text += detail::concat(" (and on ", failed - 1, " other rank", failed > 2 ? "s" : "", ")");
  throw InputError(detail::concat("rank ", first, ": ", text));
}

}  // namespace krysp
