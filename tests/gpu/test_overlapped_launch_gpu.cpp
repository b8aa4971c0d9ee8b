// Overlapped launches (base/overlapped_launch.hpp): the negative control of the late writer
// (tests/gpu/late_writer.hpp) that the SpMV and SpMM tests use.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/overlapped_launch.hpp"
#include "gpu/late_writer.hpp"

using namespace krysp;

TEST_CASE("Overlapped launch: a kernel that does not wait reads what the late writer has not yet written") {
  // The negative control of late_input.hpp: the harness can catch a missing wait.
  if (!test::device_overlaps_launches()) return;  // no overlapped launches before compute capability 9.0
  const bool setting = overlapped_launch();
  set_overlapped_launch(true);
  const std::size_t n = 4096;
  const std::vector<double> ones(n, 1.0);
  DeviceArray<double> src(n), late(n), out(n);
  src.upload(ones.data(), n);
  // Both kernels once first: a kernel's first launch loads it (lazy loading), and that waits for
  // the device to go idle, late writer included.
  test::late_copy(src.data(), late.data(), n, 0);
  test::copy_without_waiting(src.data(), out.data(), n);
  REQUIRE(cudaMemset(late.data(), 0xff, n * sizeof(double)) == cudaSuccess);  // NaN
  cuda_synchronize();
  test::late_copy(src.data(), late.data(), n, 2000);
  test::copy_without_waiting(late.data(), out.data(), n);
  cuda_synchronize();
  std::vector<double> got(n);
  out.download(got.data(), n);
  set_overlapped_launch(setting);
  CHECK(std::count_if(got.begin(), got.end(), [](double v) { return v != v; }) > 0);
}
