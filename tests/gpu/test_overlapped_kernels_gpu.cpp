// The vector kernels of the AMG V-cycle and of CG are launched overlapped (base/overlapped_launch.hpp).
// Each must wait for the kernel before it: here each one runs right after the late writer
// (late_writer.hpp) has filled one of its inputs over NaN, and must give the bits it gives with
// that input already in place. A kernel that read before its wait would see the NaN.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gpu/device_vectors.hpp"
#include "gpu/late_input.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/overlapped_launch.hpp"
#include "krysp/precond/cuda/amg_kernels.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/cuda/cg_kernels.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

// `reset` puts every array `launch` writes back to its start (host copies: synchronous);
// `launch(in)` enqueues the kernel reading `in`; `result` gathers what it wrote.
struct LateCase {
  std::string what;
  std::function<void()> reset;
  std::function<void(const double*)> launch;
  std::function<std::vector<double>()> result;
};

void check_waits(const LateCase& c, const std::vector<double>& input) {
  INFO(c.what);
  const bool setting = overlapped_launch();
  set_overlapped_launch(true);
  const DeviceArray<double> in = test::uploaded(input);
  DeviceArray<double> late(input.size());
  c.reset();
  c.launch(in.data());  // the reference; also loads the kernel (a first launch waits for an idle device)
  const std::vector<double> ref = c.result();
  c.reset();
  REQUIRE(cudaMemset(late.data(), 0xff, input.size() * sizeof(double)) == cudaSuccess);  // NaN
  cuda_synchronize();
  test::late_copy(in.data(), late.data(), input.size(), test::kLateUs);
  c.launch(late.data());
  const std::vector<double> got = c.result();
  set_overlapped_launch(setting);
  REQUIRE(got.size() == ref.size());
  CHECK(std::memcmp(ref.data(), got.data(), got.size() * sizeof(double)) == 0);
}

}  // namespace

TEST_CASE("Overlapped launch: the AMG smoother, residual and correction kernels wait for their inputs' writer") {
  if (!test::device_overlaps_launches()) return;  // no overlapped launches before compute capability 9.0
  const CsrMatrix<double> A = laplacian_3d(8, 8, 8);
  const index_t n = A.rows();
  const std::size_t nn = std::size_t(n);
  const int b = 2;  // node blocks of 2 rows: 512 = 256 nodes
  const CsrView<double> dA = A.device_view();
  const auto x = test::random_vector(nn), r = test::random_vector(nn), y0 = test::random_vector(nn);
  const auto dinv_h = test::random_vector(nn, 0.5, 1.0), binv_h = test::random_vector(nn * b, -0.2, 0.8);
  const DeviceArray<double> X = test::uploaded(x), R = test::uploaded(r);
  const DeviceArray<double> dinv = test::uploaded(dinv_h), binv = test::uploaded(binv_h);
  DeviceArray<double> Y(nn);
  auto reset_y = [&] { Y.upload(y0.data(), nn); };
  auto y = [&] {
    cuda_synchronize();  // the launch under test has finished
    return test::download(Y);
  };
  const double c0 = 0.7, c1 = 0.3, c2 = 0.9;
  std::vector<LateCase> cases;
  for (int step : {0, 4, 32}) {
    const std::string w = " (lanes " + std::to_string(step) + ")";
    cases.push_back({"fused residual, X late" + w, reset_y,
                     [&, step](const double* in) { detail::fused_residual<double>(dA, step, R.data(), in, Y.data()); },
                     y});
    cases.push_back({"fused residual, B late" + w, reset_y,
                     [&, step](const double* in) { detail::fused_residual<double>(dA, step, in, X.data(), Y.data()); },
                     y});
    cases.push_back({"fused Chebyshev step, X late" + w, reset_y, [&, step](const double* in) {
                       detail::cheb_fused_step<double, double, double>(dA, step, c1, c2, dinv.data(), R.data(), 1, in,
                                                                       nullptr, Y.data(), 1);
                     }, y});
  }
  cases.push_back({"Chebyshev first step, R late", reset_y, [&](const double* in) {
                     detail::cheb_first<double, double, double>(n, 1, c0, dinv.data(), in, 1, Y.data(), 1);
                   }, y});
  cases.push_back({"Chebyshev step, A·x late", reset_y, [&](const double* in) {
                     detail::cheb_step<double, double, double>(n, 1, c1, c2, dinv.data(), R.data(), 1, in, 1, X.data(),
                                                               1, nullptr, 1, Y.data(), 1);
                   }, y});
  cases.push_back({"node-block first step, R late", reset_y, [&](const double* in) {
                     detail::amg_node_first<double>(n, 1, b, c0, binv.data(), in, 1, Y.data(), 1);
                   }, y});
  cases.push_back({"node-block step, A·x late", reset_y, [&](const double* in) {
                     detail::amg_node_step<double>(n, 1, b, c1, c2, binv.data(), R.data(), 1, in, 1, X.data(), 1,
                                                   nullptr, 1, Y.data(), 1);
                   }, y});
  cases.push_back({"node-block fused step, X late", reset_y, [&](const double* in) {
                     detail::amg_node_fused_step<double>(dA, 7, b, c1, c2, binv.data(), R.data(), 1, in, nullptr,
                                                         Y.data(), 1);
                   }, y});
  const index_t m = 64;  // a dense correction of 64 rows
  const DeviceArray<double> D = test::uploaded(test::random_vector(std::size_t(m) * std::size_t(m)));
  for (bool add : {false, true})
    cases.push_back({std::string("dense correction, B late") + (add ? ", added" : ""), reset_y,
                     [&, add](const double* in) {
                       detail::amg_dense_apply<double>(m, D.data(), 1, in, 1, Y.data(), 1, add);
                     }, y});
  cases.push_back({"copy, X late", reset_y,
                   [&](const double* in) { detail::amg_copy<double, double>(n, 1, in, 1, Y.data(), 1); }, y});
  cases.push_back({"add, X late", reset_y,
                   [&](const double* in) { detail::amg_add<double>(n, 1, in, 1, Y.data(), 1); }, y});
  for (const LateCase& c : cases) check_waits(c, x);
}

TEST_CASE("Overlapped launch: CG's vector kernels wait for their inputs' writer") {
  if (!test::device_overlaps_launches()) return;
  const index_t n = 5000;
  const std::size_t nn = std::size_t(n);
  const auto v = test::random_vector(nn), w = test::random_vector(nn), d = test::random_vector(nn, 0.5, 1.0);
  const DeviceArray<double> V = test::uploaded(v), Dinv = test::uploaded(d);
  DeviceArray<double> Y(nn), Z(nn), Xs(nn), Rs(nn);
  const int grid = detail::reduce_grid();
  DeviceArray<double> partials(std::size_t(grid) * 2);
  DeviceArray<unsigned int> ticket(1);
  ticket.zero();
  const detail::ReduceWorkspaceRef ws{partials.data(), ticket.data(), grid};
  // slots: 0 flag, 1 flag_iter, 2 ρ_k, 3 ρ_{k−1}, 4 pᵀAp, 5 and 6 the sums written
  const std::vector<double> s0 = {kCgOk, 0, 2.5, 1.5, 3.0, 0, 0};
  DeviceArray<double> S(s0.size());
  auto reset = [&] {
    S.upload(s0.data(), s0.size());
    Y.upload(w.data(), nn);
    Z.upload(w.data(), nn);
    Xs.upload(v.data(), nn);
    Rs.upload(w.data(), nn);
  };
  auto all = [&] {
    cuda_synchronize();  // the launch under test has finished
    std::vector<double> out;
    for (const DeviceArray<double>* a : {&S, &Y, &Z, &Xs, &Rs}) {
      const auto h = test::download(*a);
      out.insert(out.end(), h.begin(), h.end());
    }
    return out;
  };
  const std::vector<LateCase> cases = {
      {"dot, a late", reset, [&](const double* in) { detail::launch_dot<double>(n, in, V.data(), S.data(), 5, ws); },
       all},
      {"preconditioned dots, r late", reset,
       [&](const double* in) {
         detail::launch_precondition<double>(n, Dinv.data(), in, Z.data(), false, S.data(), 5, 6, ws);
       },
       all},
      {"direction, z late", reset,
       [&](const double* in) { detail::launch_direction<double>(n, in, Y.data(), S.data(), 2, 3, false, 0); }, all},
      {"update, p late", reset,
       [&](const double* in) {
         detail::launch_cg_update<double>(n, S.data(), 2, 4, 0, 1, -1, 7, in, V.data(), Xs.data(), Rs.data(),
                                          Dinv.data(), Z.data(), 5, 6, ws);
       },
       all},
      {"copy, source late", reset, [&](const double* in) { detail::launch_copy<double>(n, in, Y.data()); }, all},
      {"subtract from, b late", reset,
       [&](const double* in) { detail::launch_subtract_from<double>(n, in, Y.data()); }, all},
  };
  for (const LateCase& c : cases) check_waits(c, v);
}
