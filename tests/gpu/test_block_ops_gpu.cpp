// cuBLAS tall-block operations against the host twins, on fresh random blocks with ld > b.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "krysp/solvers/cuda/cuda_block_ops.hpp"
#include "krysp/solvers/host/host_block_ops.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("CudaBlockOps: gram, combine and copy match the host") {
  for (index_t b : {1, 2, 5, 16}) {
    CAPTURE(b);
    const index_t n = 10007, ldx = b + 1, ldy = b + 3;
    const auto X = test::random_vector(std::size_t(n) * ldx), Y = test::random_vector(std::size_t(n) * ldy);
    const auto C = test::random_vector(std::size_t(b) * b);
    DeviceArray<double> dX(X.size()), dY(Y.size());
    dX.upload(X.data(), X.size());
    dY.upload(Y.data(), Y.size());
    HostBlockOps<double> host;
    CudaBlockOps<double> dev(16);
    std::vector<double> gh(b * b), gd(b * b);
    host.gram(n, X.data(), ldx, b, Y.data(), ldy, b, gh.data());
    dev.gram(n, dX.data(), ldx, b, dY.data(), ldy, b, gd.data());
    for (std::size_t k = 0; k < gh.size(); ++k) CHECK(std::abs(gd[k] - gh[k]) <= 1e-12 * n);
    auto Yh = Y;
    host.combine(n, X.data(), ldx, b, C.data(), 1.5, -0.5, Yh.data(), ldy, b);
    dev.combine(n, dX.data(), ldx, b, C.data(), 1.5, -0.5, dY.data(), ldy, b);
    std::vector<double> Yd(Y.size());
    dY.download(Yd.data(), Yd.size());
    double err = 0;
    for (index_t k = 0; k < n; ++k)
      for (index_t j = 0; j < b; ++j) err = std::max(err, std::abs(Yd[k * ldy + j] - Yh[k * ldy + j]));
    CHECK(err <= 1e-13 * b);
    // padding columns beyond b are untouched
    for (index_t k = 0; k < n; k += 97) CHECK(Yd[k * ldy + b] == Y[k * ldy + b]);
    DeviceArray<double> dZ(std::size_t(n) * b);
    dev.copy(n, b, dX.data(), ldx, dZ.data(), b);
    std::vector<double> Z(std::size_t(n) * b);
    dZ.download(Z.data(), Z.size());
    for (index_t k = 0; k < n; k += 13)
      for (index_t j = 0; j < b; ++j) CHECK(Z[k * b + j] == X[k * ldx + j]);
  }
}

// combine() stages its coefficients asynchronously through a ring: many combines in a row with
// no gram() in between (the ring fills and wraps) and the host array overwritten right after each
// call must still give what the host computes, and gram2() what two gram()s give.
TEST_CASE("CudaBlockOps: back-to-back combines through the coefficient ring, and gram2") {
  const index_t n = 4099, b = 6, ld = b;
  const auto X = test::random_vector(std::size_t(n) * ld), Y0 = test::random_vector(std::size_t(n) * ld);
  DeviceArray<double> dX(X.size()), dY(Y0.size());
  dX.upload(X.data(), X.size());
  dY.upload(Y0.data(), Y0.size());
  HostBlockOps<double> host;
  CudaBlockOps<double> dev(b);
  auto Yh = Y0;
  std::vector<double> C(std::size_t(b) * b);
  for (int rep = 0; rep < 40; ++rep) {  // 40 combines > the ring's 16 slots
    for (std::size_t k = 0; k < C.size(); ++k) C[k] = 0.01 * double((rep * 7 + int(k) * 3) % 11) - 0.05;
    host.combine(n, X.data(), ld, b, C.data(), 1.0, 0.9, Yh.data(), ld, b);
    dev.combine(n, dX.data(), ld, b, C.data(), 1.0, 0.9, dY.data(), ld, b);
    std::fill(C.begin(), C.end(), std::nan(""));  // the device must not read the host array later
  }
  std::vector<double> Yd(Y0.size());
  dY.download(Yd.data(), Yd.size());
  double err = 0;
  for (std::size_t k = 0; k < Yd.size(); ++k) err = std::max(err, std::abs(Yd[k] - Yh[k]));
  CHECK(err <= 1e-12);
  std::vector<double> g1(b * b), g2(b * b), h1(b * b), h2(b * b);
  dev.gram2(n, dX.data(), ld, b, dX.data(), ld, dY.data(), ld, b, g1.data(), g2.data());
  dev.gram(n, dX.data(), ld, b, dX.data(), ld, b, h1.data());
  dev.gram(n, dX.data(), ld, b, dY.data(), ld, b, h2.data());
  for (std::size_t k = 0; k < g1.size(); ++k) {
    CHECK(std::abs(g1[k] - h1[k]) <= 1e-12 * n);
    CHECK(std::abs(g2[k] - h2[k]) <= 1e-12 * n);
  }
}
