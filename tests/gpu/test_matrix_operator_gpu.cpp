// A CSR matrix as a LinearOperator on the GPU: apply and apply_block (several widths and leading
// dimensions, plans made on first use) against the host operator.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/matrix_operator.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("MatrixOperator on the GPU matches the host operator") {
  const auto A = test::load("bcsstk06");
  const index_t n = A.rows();
  const auto host = MatrixOperator<double>::host(A);
  const auto dev = MatrixOperator<double>::device(A);
  CHECK(dev.space() == MemorySpace::Device);
  for (const auto& [N, ld] : std::vector<std::pair<index_t, index_t>>{{1, 1}, {2, 2}, {3, 4}, {8, 8}, {5, 16}}) {
    CAPTURE(N);
    CAPTURE(ld);
    const auto X = test::random_vector(std::size_t(n) * ld);
    std::vector<double> Yh(X.size(), 0.0), Yd(X.size(), 0.0);
    host.apply_block(N, X.data(), ld, Yh.data(), ld);
    DeviceArray<double> dX(X.size()), dY(X.size());
    dX.upload(X.data(), X.size());
    dY.zero();
    dev.apply_block(N, dX.data(), ld, dY.data(), ld);
    dev.apply_block(N, dX.data(), ld, dY.data(), ld);  // the plan, now kept, again
    dY.download(Yd.data(), Yd.size());
    double err = 0, scale = 0;
    for (std::size_t k = 0; k < Yh.size(); ++k) {
      err = std::max(err, std::abs(Yh[k] - Yd[k]));
      scale = std::max(scale, std::abs(Yh[k]));
    }
    CHECK(err <= 1e-12 * scale);
  }
  const auto x = test::random_vector(std::size_t(n));
  std::vector<double> yh(x.size()), yd(x.size());
  host.apply(x.data(), yh.data());
  DeviceArray<double> dx(x.size()), dy(x.size());
  dx.upload(x.data(), x.size());
  dev.apply(dx.data(), dy.data());
  dy.download(yd.data(), yd.size());
  // Entry by entry against the row's scale (|A|·|x|)_i, which bounds the rounding of any order
  // of the sum: bcsstk06's rows cancel to |y_i| far below it, and the GPU plan's kernel (chosen
  // by timing) may sum in another order than the host.
  for (std::size_t i = 0; i < x.size(); ++i) {
    double row = 0;
    for (index_t k = A.row_ptr()[i]; k < A.row_ptr()[i + 1]; ++k)
      row += std::abs(A.values()[std::size_t(k)] * x[std::size_t(A.col_idx()[std::size_t(k)])]);
    CHECK(std::abs(yh[i] - yd[i]) <= 1e-13 * row);
  }
}
