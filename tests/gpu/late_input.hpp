#pragma once
// Checks that a product launched overlapped (base/overlapped_launch.hpp) waits for the kernel
// before it: its input, or its Y under beta, is written late by that kernel (late_writer.hpp).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/overlapped_launch.hpp"
#include "gpu/late_writer.hpp"

namespace krysp::test {

inline constexpr int kLateUs = 100;  // far longer than a launch: a reader that did not wait sees NaN

/// `mul(in, beta, out)` enqueues out = A·in + beta·out on the default stream. Each product runs
/// right after late_copy wrote its `in` (beta = 0), then its `out` (beta = 0.5), over NaN; both
/// must equal, bitwise, the product of operands uploaded beforehand.
template <class Mul>
void check_waits_for_writer(const Mul& mul, const std::vector<double>& X, const std::vector<double>& Y0,
                            const std::string& what) {
  INFO(what);
  const bool setting = overlapped_launch();
  set_overlapped_launch(true);
  DeviceArray<double> x(X.size()), late_x(X.size()), y0(Y0.size()), y(Y0.size());
  x.upload(X.data(), X.size());
  y0.upload(Y0.data(), Y0.size());
  auto result = [&] {
    cuda_synchronize();
    std::vector<double> out(Y0.size());
    y.download(out.data(), out.size());
    return out;
  };
  auto poison = [&](double* p, std::size_t n) { REQUIRE(cudaMemset(p, 0xff, n * sizeof(double)) == cudaSuccess); };
  // references, operands in place before the product; these launches also load the product's
  // kernels (a kernel's first launch waits for the device to go idle, which would hide a race)
  y.upload(Y0.data(), Y0.size());
  mul(x.data(), 0.0, y.data());
  const auto ref_in = result();
  y.upload(Y0.data(), Y0.size());
  mul(x.data(), 0.5, y.data());
  const auto ref_beta = result();
  // the same products, each right after the late writer of one operand
  poison(late_x.data(), X.size());
  y.upload(Y0.data(), Y0.size());
  cuda_synchronize();
  late_copy(x.data(), late_x.data(), X.size(), kLateUs);
  mul(late_x.data(), 0.0, y.data());
  const auto got_in = result();
  CHECK(std::memcmp(ref_in.data(), got_in.data(), got_in.size() * sizeof(double)) == 0);
  poison(y.data(), Y0.size());
  cuda_synchronize();
  late_copy(y0.data(), y.data(), Y0.size(), kLateUs);
  mul(x.data(), 0.5, y.data());
  const auto got_beta = result();
  CHECK(std::memcmp(ref_beta.data(), got_beta.data(), got_beta.size() * sizeof(double)) == 0);
  set_overlapped_launch(setting);
}

}  // namespace krysp::test
