// AMG's kAmgAuto rule on the GPU (amg::resolve_auto with on_device, precond/cuda/amg_auto_stats.cu):
// the device counts of off-diagonal signs and isolated rows equal the host's, on host-built and
// device-borrowed matrices, in double and float, without downloading a borrowed matrix's values;
// and DeviceAmg picks and reports what HostAmg picks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "gpu/borrowed.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

std::vector<std::pair<std::string, CsrMatrix<double>>> problems() {
  return {{"laplacian_3d 10", laplacian_3d(10, 10, 10)},
          {"diffusion_3d 10", diffusion_3d(10, 1, 1, 0.01, 1e4)},
          {"bcsstk06", test::load("bcsstk06")},
          {"bcsstm12", test::load("bcsstm12")},
          {"elasticity_3d 4", elasticity_3d(4, 4, 4, 0.3)}};
}
}  // namespace

TEST_CASE("AMG auto rule: the device counts equal the host's (double, float, device-borrowed)") {
  for (const auto& [name, A] : problems()) {
    CAPTURE(name);
    const amg::SignCount h = amg::off_diagonal_signs(A);
    test::Borrowed<double> B(A);
    const std::uint64_t copies = device_to_host_copies();
    const amg::SignCount d = amg::off_diagonal_signs(B.M, true);
    CHECK(device_to_host_copies() - copies == 1);  // the two counters, not the values
    CHECK(d.off_diagonal == h.off_diagonal);
    CHECK(d.positive == h.positive);
    test::Borrowed<float> F(A);
    const CsrMatrix<float> Fh = CsrMatrix<float>::from_arrays(
        A.rows(), A.cols(), std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
        std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()),
        std::vector<float>(A.values().data(), A.values().data() + A.nnz()));
    CHECK(amg::off_diagonal_signs(F.M, true).positive == amg::off_diagonal_signs(Fh).positive);
    for (double theta : {0.0, 0.08, 0.25, 0.5}) {
      CAPTURE(theta);
      const std::int64_t hi = amg::isolated_nodes(A, 1, theta);
      CHECK(amg::isolated_nodes(B.M, 1, theta, true) == hi);
      CHECK(amg::isolated_nodes(F.M, 1, theta, true) == amg::isolated_nodes(Fh, 1, theta));
    }
  }
}

TEST_CASE("AMG auto rule: DeviceAmg chooses and reports as HostAmg does") {
  for (const auto& [name, A] : problems()) {
    CAPTURE(name);
    const HostAmg<double> H(A, amg::vcycle_on_device(AmgOptions{}));
    test::Borrowed<double> B(A);  // counted on the device, separately from A's memo
    SpmvPlan<double> plan(B.M);
    const DeviceAmg<double> D(B.M, plan, AmgOptions{});
    const AmgAutoChoice& h = H.info().auto_choice;
    const AmgAutoChoice& d = D.info().auto_choice;
    CHECK(d.structural == h.structural);
    CHECK(d.strong_theta == h.strong_theta);
    CHECK(d.positive_fraction == h.positive_fraction);
    CHECK(d.isolated_fraction == h.isolated_fraction);
    CHECK(D.info().levels[0].theta == H.info().levels[0].theta);
    CHECK(D.info().levels.size() == H.info().levels.size());
    const std::string hs = H.summary(), ds = D.summary();
    const std::size_t a = hs.find("theta "), e = hs.find(", b ");
    REQUIRE(a != std::string::npos);
    REQUIRE(e != std::string::npos);
    CHECK(ds.find(hs.substr(a, e - a)) != std::string::npos);  // "theta 0.25 (auto: ...), chebyshev 3 (auto)"
  }
}
