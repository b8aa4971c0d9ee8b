// GPU test driver: exits 77 (ctest's "skipped") when there is no CUDA device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "krysp/base/device_memory.hpp"

int main(int argc, char** argv) {
  if (!krysp::cuda_device_available()) {
    std::printf("no CUDA device: GPU tests skipped\n");
    return 77;
  }
  std::printf("GPU tests on %s\n", krysp::cuda_device_name().c_str());
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
