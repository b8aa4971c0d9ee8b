// AmgOptions::adaptive_cycles: the near-nullspace adapted by V-cycles where the constant is a
// poor one. The hard case made for it: S·L·S, a 3-D Laplacian L with the signs of a checkerboard
// S = diag(±1), whose off-diagonal entries are all positive and whose near-nullspace is the
// checkerboard: the constant is its top mode, the worst possible near-nullspace. Adapted, AMG
// takes about the iterations it takes on L; with the constant, many more. The rule leaves
// M-matrices and bcsstk06 (the shared set's next highest quotient) alone; the result is the same
// bit for bit from set-up to set-up; true residuals are recomputed here; bad input is an
// InputError.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("AMG: the near-nullspace adapted where the constant is the top mode (signed Laplacian)") {
  const index_t m = 32;
  const CsrMatrix<double> A = test::signed_laplacian(m), L = laplacian_3d(m, m, m);
  const HostAmg<double> M(A, AmgOptions{});
  const AmgAutoChoice& c = M.info().auto_choice;
  MESSAGE("signed Laplacian 32^3: ", M.summary());
  CHECK(c.adaptive);
  CHECK(c.constant_quotient >= kAmgAdaptiveQuotient);
  CHECK(c.adapted_cycles == kAmgAdaptiveCycles);
  CHECK(M.summary().find("near-nullspace from 30 V-cycles (auto") != std::string::npos);
  CHECK(M.info().adaptive_seconds > 0);
  CHECK(M.info().adaptive_seconds < M.info().setup_seconds);
  const test::ApplyFn f = [&](const double* x, double* z) { M.apply(x, z); };
  test::check_symmetric_positive_random(A.rows(), f, 1e-12);

  AmgOptions off;
  off.adaptive_cycles = 0;
  const auto [its, res, summary] = test::amg_pcg(A, AmgOptions{});
  const auto [its_off, res_off, summary_off] = test::amg_pcg(A, off);
  const auto [its_l, res_l, summary_l] = test::amg_pcg(L, AmgOptions{});
  MESSAGE("PCG iterations: adapted ", its, ", the constant ", its_off, ", AMG on L itself ", its_l);
  CHECK(res <= 1e-8);
  CHECK(res_off <= 1e-8);
  CHECK(res_l <= 1e-8);
  CHECK(double(its) <= 1.5 * double(its_l) + 2);
  CHECK(double(its) <= 0.6 * double(its_off));

  // The same bits from set-up to set-up (the start vector is a fixed hash, the cycles in order).
  const HostAmg<double> M2(A, AmgOptions{});
  CHECK(test::applied_to_cosine(M) == test::applied_to_cosine(M2));
}

TEST_CASE("AMG: the replacing rule leaves M-matrices, bcsstk06 and an asked-for filter alone; explicit cycles adapt") {
  {
    const HostAmg<double> M(laplacian_3d(12, 12, 12), AmgOptions{});
    CHECK(M.info().auto_choice.adapted_cycles == 0);
    CHECK(M.info().auto_choice.constant_quotient < 0.1);
    CHECK(M.summary().find("near-nullspace") == std::string::npos);
  }
  const auto K = test::load("bcsstk06");
  const HostAmg<double> M(K, AmgOptions{});
  const AmgAutoChoice& c = M.info().auto_choice;
  MESSAGE("bcsstk06: 1'A1/1'D1 is ", c.constant_quotient, " of the lambda_max estimate");
  CHECK(M.info().levels[0].block_size == 1);
  CHECK(c.constant_quotient > 0.5);
  CHECK(c.constant_quotient < kAmgAdaptiveQuotient);
  // Not replaced; as a structural matrix its constant is augmented instead (test_amg_augment.cpp).
  CHECK(c.adapt_vectors == 2);
  CHECK(M.summary().find("near-nullspace from") == std::string::npos);
  {
    // A filter asked for stays on: the rule does not adapt (the adapted vector would turn it off).
    AmgOptions filtered;
    filtered.filter = AmgFilter::On;
    const HostAmg<double> Fi(test::signed_laplacian(12), filtered);
    CHECK(Fi.info().auto_choice.adapted_cycles == 0);
    CHECK(Fi.options().filter == AmgFilter::On);
  }
  AmgOptions forced;
  forced.adaptive_cycles = 10;
  const HostAmg<double> F(K, forced);
  CHECK(F.info().auto_choice.adapted_cycles == 10);
  CHECK(!F.info().auto_choice.adaptive);
  CHECK(F.summary().find("near-nullspace of 2 vectors from 10 V-cycles,") != std::string::npos);
  const auto [its, res, summary] = test::amg_pcg(K, forced);
  CHECK(res <= 1e-8);
  MESSAGE("bcsstk06 with 10 adaptive V-cycles: ", its, " PCG iterations");
}

TEST_CASE("AMG: a numeric re-set-up keeps the adapted vector") {
  const CsrMatrix<double> A = test::signed_laplacian(12);
  HostAmg<double> M(A, AmgOptions{});
  REQUIRE(M.info().auto_choice.adapted_cycles > 0);
  const std::vector<double> before = M.options().near_nullspace;
  const CsrMatrix<double> A3 = test::scaled(A, 3.0);
  REQUIRE(M.update_values(A3));
  CHECK(M.info().resetups == 1);
  CHECK(M.options().near_nullspace == before);
  CHECK(M.summary().find("near-nullspace from 30 V-cycles") != std::string::npos);
  // 3·A's V-cycle is A's divided by 3 (the same hierarchy, scaled).
  const std::vector<double> z3 = test::applied_to_cosine(M);
  const HostAmg<double> M1(A, AmgOptions{});
  const std::vector<double> z1 = test::applied_to_cosine(M1);
  double err = 0, ref = 0;
  for (std::size_t i = 0; i < z1.size(); ++i) {
    err = std::max(err, std::abs(3.0 * z3[i] - z1[i]));
    ref = std::max(ref, std::abs(z1[i]));
  }
  CHECK(err <= 5e-2 * ref);  // the warm Lanczos settles to 1e-2, as the cold one does
}

TEST_CASE("AMG: bad adaptive cycles are an InputError naming what is wrong") {
  const auto K = test::load("bcsstk06");
  AmgOptions o;
  o.adaptive_cycles = -2;
  CHECK_THROWS_WITH_AS(HostAmg<double>(K, o), doctest::Contains("adaptive_cycles = -2 is out of range"), InputError);
  o.adaptive_cycles = 1001;
  CHECK_THROWS_WITH_AS(HostAmg<double>(K, o), doctest::Contains("out of range"), InputError);
  o.adaptive_cycles = 5;
  o.filter = AmgFilter::On;
  CHECK_THROWS_WITH_AS(HostAmg<double>(K, o), doctest::Contains("filter on"), InputError);
  o.filter = AmgFilter::Auto;
  o.near_nullspace.assign(std::size_t(K.rows()), 1.0);
  o.near_nullspace_vectors = 1;
  CHECK_THROWS_WITH_AS(HostAmg<double>(K, o), doctest::Contains("does not take amg.coordinates or amg.near_nullspace"),
                       InputError);
}
