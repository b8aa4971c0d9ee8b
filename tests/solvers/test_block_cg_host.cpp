#include "block_cg_checks.hpp"

using namespace krysp;

TEST_CASE("Block CG host: s = 1..16 converge, match single CG, no more iterations") {
  test::check_block_cg_converges(Backend::Host);
}
TEST_CASE("Block CG host: rank-1 block, zero column") { test::check_block_cg_rank_deficient(Backend::Host); }
TEST_CASE("Block CG host: columns converging at different rates") {
  test::check_block_cg_different_rates(Backend::Host);
}
TEST_CASE("Block CG host: X takes its last step at every exit") { test::check_block_cg_exits(Backend::Host); }
TEST_CASE("Block CG host: a non-SPD matrix is reported") { test::check_block_cg_not_spd(Backend::Host); }
TEST_CASE("Block CG host: bad sizes are InputErrors") {
  const auto A = test::load("bcsstk01");
  std::vector<double> B(10), X;
  CHECK_THROWS_AS(solve_block(A, B, 2, X, test::block_options(Backend::Host)), InputError);
  std::vector<double> B2(A.rows() * 65);
  CHECK_THROWS_AS(solve_block(A, B2, 65, X, test::block_options(Backend::Host)), InputError);
  std::vector<double> B3(std::size_t(A.rows()) * 2, 1.0);
  auto o = test::block_options(Backend::Host);
  o.block_group = -1;
  CHECK_THROWS_WITH_AS(solve_block(A, B3, 2, X, o), doctest::Contains("block_group = -1"), InputError);
}
