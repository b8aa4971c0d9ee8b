#include "block_cg_checks.hpp"

#include <algorithm>
#include <cmath>

using namespace krysp;

TEST_CASE("Block CG GPU: s = 1..16 converge, match single CG, no more iterations") {
  test::check_block_cg_converges(Backend::Cuda);
}
TEST_CASE("Block CG GPU: rank-1 block, zero column") { test::check_block_cg_rank_deficient(Backend::Cuda); }
TEST_CASE("Block CG GPU: columns converging at different rates") {
  test::check_block_cg_different_rates(Backend::Cuda);
}
TEST_CASE("Block CG GPU: a non-SPD matrix is reported") { test::check_block_cg_not_spd(Backend::Cuda); }
TEST_CASE("Block CG GPU: X takes its last step at every exit") { test::check_block_cg_exits(Backend::Cuda); }
TEST_CASE("Block CG GPU: X after capped iterations and at convergence matches the host backend") {
  const auto A = laplacian_2d(30, 30);  // well conditioned: the two backends' rounding stays at ~1e-13
  const index_t n = A.rows();
  for (const index_t s : {1, 3, 5, 8, 12, 16}) {
    const auto B = test::random_vector(std::size_t(n) * s);
    for (const index_t cap : {1, 2, 5, 0}) {
      CAPTURE(s);
      CAPTURE(cap);
      std::vector<double> Xh, Xd;
      auto oh = test::block_options(Backend::Host), od = test::block_options(Backend::Cuda);
      oh.cg.max_iters = od.cg.max_iters = cap;
      const auto rh = solve_block(A, B, s, Xh, oh);
      const auto rd = solve_block(A, B, s, Xd, od);
      if (cap > 0) {
        CHECK(rh.iterations == cap);
        CHECK(rd.iterations == cap);
      }
      REQUIRE(Xh.size() == Xd.size());
      double diff = 0, scale = 0;
      for (std::size_t k = 0; k < Xh.size(); ++k) {
        diff = std::max(diff, std::abs(Xh[k] - Xd[k]));
        scale = std::max(scale, std::abs(Xh[k]));
      }
      // to convergence the counts may differ by one (a residual right at the tolerance): then the
      // two solutions are only both within the tolerance's reach of the exact one
      CHECK(diff <= (cap > 0 ? 1e-9 : rh.iterations == rd.iterations ? 1e-7 : 1e-5) * scale);
    }
  }
}
