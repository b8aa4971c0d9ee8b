#include "block_cg_checks.hpp"

using namespace krysp;

TEST_CASE("Block CG GPU: s = 1..16 converge, match single CG, no more iterations") {
  test::check_block_cg_converges(Backend::Cuda);
}
TEST_CASE("Block CG GPU: rank-1 block, zero column") { test::check_block_cg_rank_deficient(Backend::Cuda); }
TEST_CASE("Block CG GPU: columns converging at different rates") {
  test::check_block_cg_different_rates(Backend::Cuda);
}
TEST_CASE("Block CG GPU: a non-SPD matrix is reported") { test::check_block_cg_not_spd(Backend::Cuda); }
