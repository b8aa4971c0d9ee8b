// The distributed matrix on the GPUs: the device product and block product against the global
// host product, and device sums against the host ones, on each device transport built (MPI
// staged always, NCCL when krysp has it). Rank r uses GPU r mod the device count. Without a GPU
// on every rank the cases pass without checking anything (CI has none).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "krysp/sparse/dist_csr.hpp"
#include "krysp/sparse/dist_csr_device.hpp"
#include "krysp/sparse/generators.hpp"
#include "mpi/mpi_device_util.hpp"

using namespace krysp;
using namespace krysp::test;

namespace {
bool close(const CsrMatrix<double>& A, const std::vector<double>& x, std::int64_t i, double y, double ax) {
  const auto v = A.host_view();
  double scale = 0;
  for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k) scale += std::abs(v.values[k] * x[v.col_idx[k]]);
  return std::abs(y - ax) <= 1e-13 * scale;
}

// y = A·x and Y = A·X (N columns, padded rows) on the GPUs against the global host product.
void check_device_product(const DistCsrMatrix& D, const CsrMatrix<double>& A) {
  const DeviceDistCsr G(D);
  const std::int64_t n = A.rows(), first = D.first_row(), m = D.rows();
  const auto x = fixed_vector(n);
  std::vector<double> ax(static_cast<std::size_t>(n));
  A.multiply_host(x.data(), ax.data());
  const auto xl = slice(x, first, first + m);
  DeviceArray<double> dx(static_cast<std::size_t>(m)), dy(static_cast<std::size_t>(m));
  if (m > 0) dx.upload(xl.data(), xl.size());
  for (int rep = 0; rep < 2; ++rep) {  // twice: the buffers and plans are reused
    G.apply(dx.data(), dy.data());
    std::vector<double> yl(static_cast<std::size_t>(m));
    if (m > 0) dy.download(yl.data(), yl.size());
    for (std::int64_t i = 0; i < m; ++i) CHECK(close(A, x, first + i, yl[i], ax[first + i]));
  }
  for (const index_t N : {index_t(1), index_t(3), index_t(8)}) {
    CAPTURE(N);
    const index_t ld = N + 1;  // the padding is neither read nor written
    std::vector<double> X(static_cast<std::size_t>(m * ld), 7.0), Y(static_cast<std::size_t>(m * ld), -5.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (index_t j = 0; j < N; ++j) X[i * ld + j] = fixed_entry(first + i, j + 1);
    DeviceArray<double> dX(X.size()), dY(Y.size());
    if (m > 0) {
      dX.upload(X.data(), X.size());
      dY.upload(Y.data(), Y.size());
    }
    G.apply_block(N, dX.data(), ld, dY.data(), ld);
    if (m > 0) dY.download(Y.data(), Y.size());
    for (index_t j = 0; j < N; ++j) {
      const auto xj = fixed_vector(n, j + 1);
      A.multiply_host(xj.data(), ax.data());
      for (std::int64_t i = 0; i < m; ++i) CHECK(close(A, xj, first + i, Y[i * ld + j], ax[first + i]));
    }
    for (std::int64_t i = 0; i < m; ++i) CHECK(Y[i * ld + N] == -5.0);
  }
}
}  // namespace

TEST_CASE("dist_device: the device product matches the global one, on each transport") {
  if (!gpus_everywhere()) return;
  const auto L = laplacian_3d(9, 8, 7);
  const auto gr = load("gr_30_30");
  for (const auto& t : device_transports()) {
    CAPTURE(t);
    const Communicator comm = communicator_on(t);
    if (comm.size() > 1) CHECK(comm.device_kind() == (t == "nccl" ? "nccl" : "mpi-staged"));
    for (const std::string name : {"bcsstk06", "1138_bus"}) {
      CAPTURE(name);
      check_device_product(DistCsrMatrix::read_matrix_market(comm, std::string(KRYSP_TEST_DATA) + "/" + name + ".mtx"),
                           load(name));
    }
    check_device_product(DistCsrMatrix::scatter(comm, comm.rank() == 0 ? L : CsrMatrix<double>()), L);
    // Rank 0 empty, the rest balanced: a rank with no rows still takes part in every exchange.
    std::vector<std::int64_t> starts{0};
    for (int p = 1; p <= comm.size(); ++p) starts.push_back(p == 1 && comm.size() > 1 ? 0 : gr.rows() * p / comm.size());
    starts.back() = gr.rows();
    check_device_product(DistCsrMatrix::scatter(comm, comm.rank() == 0 ? gr : CsrMatrix<double>(), 0, starts), gr);
  }
}

TEST_CASE("dist_device: device sums are bitwise the host sums, on each transport") {
  if (!gpus_everywhere()) return;
  for (const auto& t : device_transports()) {
    CAPTURE(t);
    const Communicator comm = communicator_on(t);
    for (const std::size_t count : {std::size_t(1), std::size_t(7), std::size_t(300)}) {
      CAPTURE(count);
      std::vector<double> host(count);
      for (std::size_t i = 0; i < count; ++i) host[i] = fixed_entry(std::int64_t(i) * 31 + comm.rank(), 3) * 1e3;
      DeviceArray<double> dev(count);
      dev.upload(host.data(), count);
      comm.sum_device(dev.data(), count);
      comm.sum(host.data(), count);
      std::vector<double> got(count);
      dev.download(got.data(), count);
      for (std::size_t i = 0; i < count; ++i) CHECK(got[i] == host[i]);
    }
  }
}

TEST_CASE("dist_device: a distributed dot product on the GPUs equals the one-rank host answer") {
  if (!gpus_everywhere()) return;
  const auto L = laplacian_3d(10, 9, 8);
  for (const auto& t : device_transports()) {
    CAPTURE(t);
    const Communicator comm = communicator_on(t);
    const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? L : CsrMatrix<double>());
    const DeviceDistCsr G(D);
    const std::int64_t n = L.rows(), first = D.first_row(), m = D.rows();
    const auto x = fixed_vector(n);
    std::vector<double> ax(static_cast<std::size_t>(n));
    L.multiply_host(x.data(), ax.data());
    double xax = 0;  // one rank's answer, on the host
    for (std::int64_t i = 0; i < n; ++i) xax += x[i] * ax[i];
    const auto xl = slice(x, first, first + m);
    DeviceArray<double> dx(static_cast<std::size_t>(m)), dy(static_cast<std::size_t>(m)), dot(1);
    if (m > 0) dx.upload(xl.data(), xl.size());
    G.apply(dx.data(), dy.data());
    std::vector<double> yl(static_cast<std::size_t>(m));
    if (m > 0) dy.download(yl.data(), yl.size());
    double part = 0;
    for (std::int64_t i = 0; i < m; ++i) part += xl[i] * yl[i];
    dot.upload(&part, 1);
    comm.sum_device(dot.data(), 1);
    double got = 0;
    dot.download(&got, 1);
    CHECK(std::abs(got - xax) <= 1e-12 * std::abs(xax));
    CHECK(got == comm.sum(part));
  }
}
