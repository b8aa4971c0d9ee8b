// The adapted near-nullspace on the GPU (DeviceAmg with the GPU set-up): on S·L·S (a 3-D
// Laplacian with checkerboard signs, test::signed_laplacian) the device adapts as the host does:
// the constant's quotient from the device pass equals the host's, the adapted vector the host's
// to rounding, PCG converges in the host's iterations with the true residual recomputed on the
// host, the same bits from set-up to set-up, and a numeric re-set-up keeps the vector.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("AMG GPU: the near-nullspace adapted on the device as on the host (signed Laplacian)") {
  const CsrMatrix<double> A = test::signed_laplacian(32);
  const SpmvPlan<double> plan(A);
  const DeviceAmg<double> M(A, plan, AmgOptions{});
  const HostAmg<double> H(A, amg::vcycle_on_device(AmgOptions{}));
  REQUIRE(M.set_up_on_gpu());
  MESSAGE(M.summary());
  const AmgAutoChoice& d = M.info().auto_choice;
  const AmgAutoChoice& h = H.info().auto_choice;
  CHECK(d.adapted_cycles == kAmgAdaptiveCycles);
  CHECK(h.adapted_cycles == kAmgAdaptiveCycles);
  // Over the level-0 λ estimates, each a Lanczos run settled to 1e-2.
  CHECK(std::abs(d.constant_quotient - h.constant_quotient) <= 1e-2 * h.constant_quotient);
  CHECK(M.info().adaptive_seconds > 0);
  CHECK(M.summary().find("near-nullspace from 30 V-cycles (auto") != std::string::npos);

  // The adapted vectors: the host's cycles and the device's, each scaled to max 1, to rounding.
  const std::vector<double>& vd = M.options().near_nullspace;
  const std::vector<double>& vh = H.options().near_nullspace;
  REQUIRE(vd.size() == std::size_t(A.rows()));
  REQUIRE(vh.size() == vd.size());
  double diff = 0;
  for (std::size_t i = 0; i < vd.size(); ++i) diff = std::max(diff, std::abs(vd[i] - vh[i]));
  MESSAGE("adapted vectors, device against host: max difference ", diff);
  CHECK(diff <= 1e-6);

  const auto [its_d, res_d, summary_d] = test::amg_pcg(A, AmgOptions{}, Backend::Cuda);
  const auto [its_h, res_h, summary_h] = test::amg_pcg(A, AmgOptions{}, Backend::Host);
  CHECK(summary_d.find("near-nullspace from 30 V-cycles (auto") != std::string::npos);
  CHECK(summary_h.find("near-nullspace from 30 V-cycles (auto") != std::string::npos);
  MESSAGE("PCG iterations: device ", its_d, ", host ", its_h);
  CHECK(res_d <= 1e-8);
  CHECK(res_h <= 1e-8);
  CHECK(std::abs(double(its_d) - double(its_h)) <= 2);

  // Deterministic: a second set-up, the same bits.
  const DeviceAmg<double> M2(A, plan, AmgOptions{});
  CHECK(M2.options().near_nullspace == vd);
  CHECK(test::applied_to_cosine(M2) == test::applied_to_cosine(M));
}

TEST_CASE("AMG GPU: a numeric re-set-up keeps the adapted vector; the device quotient is the host's") {
  const CsrMatrix<double> A = test::signed_laplacian(16);
  const SpmvPlan<double> plan(A);
  DeviceAmg<double> M(A, plan, AmgOptions{});
  REQUIRE(M.info().auto_choice.adapted_cycles > 0);
  const std::vector<double> v = M.options().near_nullspace;
  const CsrMatrix<double> A3 = test::scaled(A, 3.0);
  REQUIRE(M.update_values(A3));
  CHECK(M.info().resetups == 1);
  CHECK(M.options().near_nullspace == v);
  CHECK(M.summary().find("near-nullspace from 30 V-cycles") != std::string::npos);

  // 1ᵀA1/1ᵀD1 from the device pass and from the host's (fresh copies: the memo is per matrix).
  for (index_t m : {5, 16, 33}) {
    CAPTURE(m);
    const CsrMatrix<double> S = test::signed_laplacian(m);
    const CsrMatrix<double> S2 = test::signed_laplacian(m);
    const double qd = amg::constant_quotient(S, true), qh = amg::constant_quotient(S2, false);
    CHECK(std::abs(qd - qh) <= 1e-12 * std::abs(qh));
    CHECK(qh > 1.5);
  }
}
