// GPU test driver: exits 77 (ctest's "skipped") when there is no CUDA device; prints the seed of
// the random inputs (test_util.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "krysp/base/device_memory.hpp"
#include "test_util.hpp"

int main(int argc, char** argv) {
  if (!krysp::cuda_device_available()) {
    std::printf("no CUDA device: GPU tests skipped\n");
    return 77;
  }
  std::printf("GPU tests on %s; random inputs: KRYSP_TEST_SEED=%llu\n", krysp::cuda_device_name().c_str(),
              static_cast<unsigned long long>(krysp::test::test_seed()));
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
