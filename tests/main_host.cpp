// Host test driver: prints the seed of the random inputs (test_util.hpp) before the run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "test_util.hpp"

int main(int argc, char** argv) {
  std::printf("random inputs: KRYSP_TEST_SEED=%llu\n", static_cast<unsigned long long>(krysp::test::test_seed()));
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
