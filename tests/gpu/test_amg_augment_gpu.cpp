// The augmented near-nullspace with the GPU set-up (DeviceAmg, test_amg_augment.cpp for the host):
// the device's cycles keep or drop the vectors as the host's do, with the same factor to
// rounding; the kept vectors span what the host's span; PCG takes about the host's iterations
// with the true residual recomputed on the host; a second set-up gives the same bits; the
// complexity guard gives the first hierarchy back as it was, re-set-up included.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "amg_setup_checks.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

/// Largest distance of a device vector from the span of the host's, relative to its norm
/// (test::error_modulo of e = d against x* = d): the cycles' bases may differ by rounding, the
/// spaces should not.
double span_gap(const std::vector<double>& D, const std::vector<double>& H, std::size_t n, int K) {
  double gap = 0;
  for (int c = 0; c < K; ++c) {
    std::vector<double> d(n), twice(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = D[i * K + c], twice[i] = 2 * d[i];
    gap = std::max(gap, test::error_modulo(twice, d, H, K));
  }
  return gap;
}

/// A test problem and what it stands for.
struct NamedMatrix {
  std::string name;
  CsrMatrix<double> A;
};

}  // namespace

TEST_CASE("AMG GPU: the augmented near-nullspace as on the host (plate b 3, bcsstk06, bcsstm12)") {
  struct Case {
    std::string name;
    CsrMatrix<double> A;
    bool kept;
  };
  std::vector<Case> cases;
  cases.push_back({"plate 20 x 20 x 1", elasticity_3d(20, 20, 1, 0.3), true});
  cases.push_back({"bcsstk06", test::load("bcsstk06"), true});
  cases.push_back({"bcsstm12", test::load("bcsstm12"), false});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const SpmvPlan<double> plan(c.A);
    const DeviceAmg<double> M(c.A, plan, AmgOptions{});
    const HostAmg<double> H(c.A, amg::vcycle_on_device(AmgOptions{}));
    REQUIRE(M.set_up_on_gpu());
    MESSAGE(c.name, ": ", M.summary());
    const AmgAutoChoice& d = M.info().auto_choice;
    const AmgAutoChoice& h = H.info().auto_choice;
    CHECK(d.adapt_vectors == h.adapt_vectors);
    CHECK(d.adapted_cycles == (c.kept ? kAmgAugmentCycles : 0));
    CHECK(h.adapted_cycles == d.adapted_cycles);
    CHECK(d.adapt_discarded_cycles == h.adapt_discarded_cycles);
    // Over hierarchies whose λ estimates settle to 1e-2 each: the factors agree to that.
    CHECK(std::abs(d.adapt_factor - h.adapt_factor) <= 2e-2);
    const int K = d.adapt_vectors;
    if (c.kept) {
      REQUIRE(M.options().near_nullspace.size() == std::size_t(c.A.rows()) * std::size_t(K));
      const double gap = span_gap(M.options().near_nullspace, H.options().near_nullspace, std::size_t(c.A.rows()), K);
      MESSAGE(c.name, ": device vectors off the host's span by ", gap);
      CHECK(gap <= 0.05);
    } else {
      CHECK(M.options().near_nullspace.empty());
    }
    const auto [its_d, res_d, summary_d] = test::amg_pcg(c.A, AmgOptions{}, Backend::Cuda);
    const auto [its_h, res_h, summary_h] = test::amg_pcg(c.A, AmgOptions{}, Backend::Host);
    MESSAGE(c.name, ": PCG iterations device ", its_d, ", host ", its_h);
    CHECK(res_d <= 1e-8);
    CHECK(res_h <= 1e-8);
    CHECK(std::abs(double(its_d) - double(its_h)) <= 0.1 * double(its_h) + 2);

    const DeviceAmg<double> M2(c.A, plan, AmgOptions{});  // the same bits from set-up to set-up
    CHECK(M2.options().near_nullspace == M.options().near_nullspace);
    CHECK(test::applied_to_cosine(M2) == test::applied_to_cosine(M));
  }
}

TEST_CASE("AMG GPU: a numeric re-set-up keeps the augmented vectors (plate, values doubled)") {
  const CsrMatrix<double> A = elasticity_3d(20, 20, 1, 0.3);
  const SpmvPlan<double> plan(A);
  DeviceAmg<double> M(A, plan, AmgOptions{});
  REQUIRE(M.info().auto_choice.adapted_cycles == kAmgAugmentCycles);
  const std::vector<double> before = M.options().near_nullspace;
  const std::vector<double> z1 = test::applied_to_cosine(M);
  REQUIRE(M.update_values(test::scaled(A, 2.0)));
  CHECK(M.info().resetups == 1);
  CHECK(M.options().near_nullspace == before);
  CHECK(M.summary().find("near-nullspace of 6 vectors from 10 V-cycles") != std::string::npos);
  // 2·A's V-cycle is A's halved (the same hierarchy, scaled; the warm Lanczos settles to 1e-2).
  const std::vector<double> z2 = test::applied_to_cosine(M);
  double err = 0, ref = 0;
  for (std::size_t i = 0; i < z1.size(); ++i) {
    err = std::max(err, std::abs(2.0 * z2[i] - z1[i]));
    ref = std::max(ref, std::abs(z1[i]));
  }
  CHECK(err <= 5e-2 * ref);
}

TEST_CASE("AMG GPU: an augmented hierarchy set aside gives the first back as it was (bcsstk08, plate)") {
  struct Case {
    std::string name;
    CsrMatrix<double> A;
    double theta;
  };
  // Both reasons amg::augmented_worse has. bcsstk08: the second hierarchy's operator complexity
  // is over 4 times the first's. The plate at a given θ 0.25 (no retry): its second one, six
  // coarse unknowns an aggregate, stalls at level 0 where the first did not.
  std::vector<Case> cases;
  cases.push_back({"bcsstk08", test::load("bcsstk08"), double(kAmgAuto)});
  cases.push_back({"plate 20 x 20 x 1, theta 0.25", elasticity_3d(20, 20, 1, 0.3), 0.25});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const SpmvPlan<double> plan(c.A);
    AmgOptions o, without;
    o.theta = without.theta = c.theta;
    without.adaptive_cycles = 0;
    DeviceAmg<double> M(c.A, plan, o);
    const DeviceAmg<double> M0(c.A, plan, without);
    REQUIRE(M.set_up_on_gpu());
    MESSAGE(c.name, ": ", M.summary());
    CHECK(M.info().auto_choice.adapted_cycles == 0);
    CHECK(M.info().auto_choice.adapt_discarded_cycles == kAmgAugmentCycles);
    CHECK(M.info().auto_choice.theta_retries == M0.info().auto_choice.theta_retries);
    CHECK(M.options().near_nullspace.empty());
    CHECK(M.info().operator_complexity == M0.info().operator_complexity);
    CHECK(test::applied_to_cosine(M) == test::applied_to_cosine(M0));
    // The hierarchy taken back keeps its plan: a numeric re-set-up runs on it, as on the first.
    REQUIRE(M.update_values(test::scaled(c.A, 2.0)));
    CHECK(M.info().resetups == 1);
    CHECK(M.info().operator_complexity == M0.info().operator_complexity);
    const std::vector<double> z1 = test::applied_to_cosine(M0), z2 = test::applied_to_cosine(M);
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < z1.size(); ++i) {
      err = std::max(err, std::abs(2.0 * z2[i] - z1[i]));
      ref = std::max(ref, std::abs(z1[i]));
    }
    CHECK(err <= 5e-2 * ref);
    // And PCG with the default options converges by the residual recomputed on the host.
    const test::AmgSolved solved = test::amg_pcg(c.A, o, Backend::Cuda);
    CAPTURE(solved.preconditioner);
    CHECK(solved.true_residual <= 1e-8);
  }
}

TEST_CASE("AMG GPU: the set-up stops at max_complexity exactly where the full one passes it") {
  // The cap DeviceAmg puts on the augmented set-up: below the complexity after level k's matrix,
  // the set-up returns capped with levels 0 .. k − 1; at the full hierarchy's complexity it is not
  // capped and gives the same bits as a set-up without a cap.
  std::vector<NamedMatrix> cases;
  cases.push_back({"Laplacian 24^3", laplacian_3d(24, 24, 24)});
  cases.push_back({"elasticity 12^3 (b 3)", elasticity_3d(12, 12, 12, 0.3)});
  for (const NamedMatrix& c : cases) {
    CAPTURE(c.name);
    AmgOptions o;
    o.coarse_size = 20;
    const auto full = detail::gpu_amg_setup(c.A, o);
    CHECK_FALSE(full.capped);
    const std::size_t levels = full.info.levels.size();
    REQUIRE(levels >= 3);
    const auto at_full = detail::gpu_amg_setup(c.A, o, false, nullptr, true, true, nullptr, nullptr,
                                               full.info.operator_complexity);
    CHECK_FALSE(at_full.capped);
    REQUIRE(at_full.levels.size() == levels);
    CHECK(at_full.info.operator_complexity == full.info.operator_complexity);
    for (std::size_t l = 1; l < levels; ++l) CHECK(test::same(test::host_copy(at_full.levels[l].A),
                                                             test::host_copy(full.levels[l].A)));
    CHECK(test::host_factor(at_full) == test::host_factor(full));
    double nnz = double(full.info.levels[0].nnz);
    for (std::size_t k = 1; k < levels; ++k) {
      CAPTURE(k);
      nnz += double(full.info.levels[k].nnz);
      const double below = std::nextafter(nnz / double(full.info.levels[0].nnz), 0.0);
      const auto capped = detail::gpu_amg_setup(c.A, o, false, nullptr, true, true, nullptr, nullptr, below);
      CHECK(capped.capped);
      CHECK(capped.levels.size() == k);
    }
  }
}

TEST_CASE("AMG GPU: the augmented set-up seeded with the first's level 0 is bitwise the one without") {
  // DeviceAmg's second set-up takes level 0's Lanczos runs and aggregations from the first (they
  // do not depend on the near-nullspace). Seeded or not, the hierarchy must be the same bits, and
  // so must a numeric re-set-up from its plan (the Ritz vectors it starts from came from the seed).
  std::vector<NamedMatrix> cases;
  cases.push_back({"bcsstk06 (b 1, K 2; the second retries theta)", test::load("bcsstk06")});
  cases.push_back({"plate 20 x 20 x 1 (b 3, K 6, node blocks)", elasticity_3d(20, 20, 1, 0.3)});
  cases.push_back({"bcsstm12 (b 3, K 6)", test::load("bcsstm12")});
  for (const NamedMatrix& c : cases) {
    CAPTURE(c.name);
    const AmgOptions o;
    const auto seed = detail::make_level0_seed();
    const auto first = detail::gpu_amg_setup(c.A, o, true, nullptr, true, true, nullptr, nullptr,
                                             std::numeric_limits<double>::infinity(), seed.get());
    CHECK(detail::level0_seed_uses(*seed) == 0);
    // The second set-up's options as DeviceAmg adopts them: b unit vectors and b more.
    const int b = first.info.levels[0].block_size;
    amg::AdaptivePlan plan;
    plan.vectors = 2 * b;
    plan.augment = true;
    AmgOptions o2 = o;
    REQUIRE(amg::adopt_adapted_vectors(amg::adaptive_start_block(c.A.rows(), b, plan), plan.vectors, o2));
    const auto seeded = detail::gpu_amg_setup(c.A, o2, true, nullptr, true, true, nullptr, nullptr,
                                              std::numeric_limits<double>::infinity(), seed.get());
    const auto plain = detail::gpu_amg_setup(c.A, o2, true);
    CHECK(detail::level0_seed_uses(*seed) >= 2);  // the Lanczos run and an aggregation at least
    MESSAGE(c.name, ": ", detail::level0_seed_uses(*seed), " pieces from the seed, ",
            plain.info.auto_choice.theta_retries, " theta retries");
    CHECK(seeded.info.auto_choice.theta_retries == plain.info.auto_choice.theta_retries);
    REQUIRE(seeded.levels.size() == plain.levels.size());
    for (std::size_t l = 0; l < plain.levels.size(); ++l) {
      CAPTURE(l);
      const auto &s = seeded.levels[l], &p = plain.levels[l];
      const AmgLevelInfo &si = seeded.info.levels[l], &pi = plain.info.levels[l];
      CHECK(si.lambda_estimate == pi.lambda_estimate);
      CHECK(si.lanczos_steps == pi.lanczos_steps);
      CHECK(si.isolated == pi.isolated);
      CHECK(s.aggregates == p.aggregates);
      CHECK(s.coef.c0 == p.coef.c0);
      CHECK(s.coef.c1 == p.coef.c1);
      CHECK(s.coef.c2 == p.coef.c2);
      CHECK(s.block == p.block);
      CHECK(test::to_host(s.binv, s.binv.size()) == test::to_host(p.binv, p.binv.size()));
      CHECK(test::to_host(s.dinv, s.dinv.size()) == test::to_host(p.dinv, p.dinv.size()));
      if (l > 0) CHECK(test::same(test::host_copy(s.A), test::host_copy(p.A)));
      if (l + 1 < plain.levels.size()) {
        CHECK(test::same(test::host_copy(s.P), test::host_copy(p.P)));
        CHECK(test::same(test::host_copy(s.R), test::host_copy(p.R)));
      }
    }
    CHECK(test::host_factor(seeded) == test::host_factor(plain));
    const CsrMatrix<double> A2 = test::scaled(c.A, 2.0);
    const auto re_seeded = detail::gpu_amg_setup(A2, o2, false, seeded.plan, true, true);
    const auto re_plain = detail::gpu_amg_setup(A2, o2, false, plain.plan, true, true);
    REQUIRE(re_seeded.levels.size() == re_plain.levels.size());
    for (std::size_t l = 0; l < re_plain.levels.size(); ++l) {
      CAPTURE(l);
      CHECK(re_seeded.info.levels[l].lambda_estimate == re_plain.info.levels[l].lambda_estimate);
      if (l > 0) CHECK(test::same(test::host_copy(re_seeded.levels[l].A), test::host_copy(re_plain.levels[l].A)));
    }
    CHECK(test::host_factor(re_seeded) == test::host_factor(re_plain));
  }
}

TEST_CASE("AMG GPU: degree 6 where the first hierarchy stays slow, as on the host (bcsstk19, bcsstk20)") {
  for (const char* name : {"bcsstk19", "bcsstk20"}) {
    CAPTURE(std::string(name));
    const CsrMatrix<double> A = test::load(name);
    const SpmvPlan<double> plan(A);
    const DeviceAmg<double> M(A, plan, AmgOptions{});
    const HostAmg<double> H(A, amg::vcycle_on_device(AmgOptions{}));
    REQUIRE(M.set_up_on_gpu());
    MESSAGE(std::string(name), ": ", M.summary());
    CHECK(M.info().auto_choice.slow_cycles == kAmgSlowCycles);
    CHECK(H.info().auto_choice.slow_cycles == kAmgSlowCycles);
    CHECK(M.options().smoother_degree == kAmgSlowDegree);
    CHECK(M.summary().find("then 5 at degree 6") != std::string::npos);
    // From b = A·1: at most 0.15 times Jacobi-CG's iterations, the true residual recomputed here.
    const auto [amg, jacobi] = test::amg_and_jacobi_iterations(A, Backend::Cuda);
    MESSAGE(std::string(name), ": PCG iterations ", amg, " with AMG on the GPU, ", jacobi, " with Jacobi");
    CHECK(double(amg) <= 0.15 * double(jacobi));
  }
}
