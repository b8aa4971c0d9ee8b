// AMG on nodes padded to equal size (amg_padding.hpp, PaddedPreconditioner) on the GPU: the shell
// with a supported edge (1,079 rows, nodes of six and of five), set up and applied on the device,
// against the host's padded preconditioner: the same hierarchy summary, applies to rounding, a
// block applied as its columns, PCG converged in about the host's iterations (true residuals
// recomputed on the host), and a numeric update. LOBPCG's smallest pairs against LAPACK: the trust
// cases (trust_checks.hpp, trust_padded_shell).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/amg_padding.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

std::vector<double> device_apply(const Preconditioner<double>& M, const std::vector<double>& r, index_t N) {
  const std::size_t size = r.size();
  DeviceArray<double> dr(size), dz(size);
  dr.upload(r.data(), size);
  if (N == 1)
    M.apply(dr.data(), dz.data());
  else
    M.apply_block(N, dr.data(), N, dz.data(), N);
  std::vector<double> z(size);
  dz.download(z.data(), size);
  return z;
}

}  // namespace

TEST_CASE("AMG GPU on padded nodes: the host's preconditioner, a block as its columns, PCG, an update") {
  const auto S = test::constrained_shell(13);
  const index_t n = S.rows();
  PrecondOptions o;
  o.kind = PrecondKind::Amg;
  PrecondOptions oh = o;
  oh.amg = amg::vcycle_on_device(o.amg);  // the device default's hierarchy
  const auto H = make_host_preconditioner(S, oh);
  const auto D = make_device_preconditioner(S, SpmvPlan<double>(S), o);
  REQUIRE(H != nullptr);
  REQUIRE(D != nullptr);
  CAPTURE(D->summary());
  CHECK(D->space() == MemorySpace::Device);
  CHECK(D->summary().find("on nodes padded to 6 unknowns (13 short nodes, 13 unit rows)") != std::string::npos);
  CHECK(D->summary().find("b 6") != std::string::npos);

  const std::vector<double> r = test::random_vector(std::size_t(n));
  std::vector<double> zh(static_cast<std::size_t>(n));
  H->apply(r.data(), zh.data());
  const std::vector<double> zd = device_apply(*D, r, 1);
  CHECK(test::rel_diff(zd, zh) <= 1e-8);  // two hierarchies set up apart, equal up to rounding

  const index_t N = 3;
  std::vector<double> R(std::size_t(n) * N);
  for (index_t i = 0; i < n; ++i)
    for (index_t c = 0; c < N; ++c) R[std::size_t(i) * N + std::size_t(c)] = r[std::size_t(i)] * double(c + 1);
  const std::vector<double> Z = device_apply(*D, R, N);
  std::vector<double> column(static_cast<std::size_t>(n));
  for (index_t c = 0; c < N; ++c) {
    for (index_t i = 0; i < n; ++i) column[std::size_t(i)] = Z[std::size_t(i) * N + std::size_t(c)] / double(c + 1);
    CHECK(test::rel_diff(column, zd) <= 1e-10);  // SpMM against SpMV: other sums (3.8e-12 measured on an H100)
  }

  const test::AmgSolved host = test::amg_pcg(S, amg::vcycle_on_device(AmgOptions{}), Backend::Host);
  const test::AmgSolved dev = test::amg_pcg(S, AmgOptions{}, Backend::Cuda);
  MESSAGE("padded shell: host ", host.iterations, " iterations, GPU ", dev.iterations, " (", dev.preconditioner, ")");
  CHECK(dev.true_residual <= 1e-8);
  CHECK(std::abs(double(dev.iterations - host.iterations)) <= 0.05 * double(host.iterations) + 2);
  CHECK(dev.preconditioner.find("on nodes padded to 6") != std::string::npos);

  std::vector<double> v(S.values().data(), S.values().data() + S.nnz());
  for (double& e : v) e *= 1.5;
  const auto S2 = CsrMatrix<double>::from_arrays(
      n, n, std::vector<index_t>(S.row_ptr().data(), S.row_ptr().data() + n + 1),
      std::vector<index_t>(S.col_idx().data(), S.col_idx().data() + S.nnz()), v);
  CHECK(D->update_values(S2));
  CHECK(H->update_values(S2));
  H->apply(r.data(), zh.data());
  CHECK(test::rel_diff(device_apply(*D, r, 1), zh) <= 1e-8);
}
