// Preconditioners as linear operators: one interface for both backends, whose memory space the
// solvers check. Host side (the GPU flavours are exercised by tests/gpu/test_precond_gpu.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/host/host_block_cg_ops.hpp"
#include "krysp/solvers/host/host_cg_ops.hpp"
#include "krysp/solvers/host/host_eig_ops.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
/// A preconditioner that claims to live on the device: the host ops must refuse it.
class DeviceClaim final : public Preconditioner<double> {
 public:
  explicit DeviceClaim(const CsrMatrix<double>& A) : Preconditioner<double>(A.rows(), MemorySpace::Device), fp_(A.fingerprint()) {}
  PrecondKind kind() const override { return PrecondKind::Jacobi; }
  void apply(const double*, double*) const override {}
  void apply_block(index_t, const double*, index_t, double*, index_t) const override {}
  bool matches(const CsrMatrix<double>& A) const override { return A.fingerprint() == fp_; }

 private:
  StructureFingerprint fp_;
};
}  // namespace

TEST_CASE("Preconditioners are linear operators: size, space and apply through the base interface") {
  const auto A = test::load("bcsstk06");
  const index_t n = A.rows();
  const auto x = test::random_vector(std::size_t(n));
  for (PrecondKind k : {PrecondKind::Jacobi, PrecondKind::BlockJacobi, PrecondKind::Chebyshev}) {
    CAPTURE(to_string(k));
    PrecondOptions o;
    o.kind = k;
    const std::unique_ptr<Preconditioner<double>> M = make_host_preconditioner(A, o);
    REQUIRE(M);
    const LinearOperator<double>& op = *M;
    CHECK(op.rows() == n);
    CHECK(op.cols() == n);
    CHECK(op.space() == MemorySpace::Host);
    std::vector<double> y(x.size()), yb(x.size());
    op.apply(x.data(), y.data());
    op.apply_block(1, x.data(), 1, yb.data(), 1);  // a one-column block is the vector
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      diff = std::max(diff, std::abs(y[i] - yb[i]));
      scale = std::max(scale, std::abs(y[i]));
    }
    CHECK(scale > 0);
    CHECK(diff <= 1e-14 * scale);
    if (k == PrecondKind::Jacobi) {  // M⁻¹ = D⁻¹: checked entry by entry against A's diagonal
      for (index_t i = 0; i < n; i += 37) {
        double d = 0;
        for (index_t p = A.row_ptr()(i); p < A.row_ptr()(i + 1); ++p)
          if (A.col_idx()(p) == i) d = A.values()(p);
        CHECK(y[std::size_t(i)] == doctest::Approx(x[std::size_t(i)] / d).epsilon(1e-15));
      }
    }
  }
}

TEST_CASE("Host ops refuse a preconditioner whose vectors live on the device") {
  const auto A = laplacian_2d(8, 8);
  const DeviceClaim M(A);
  CHECK_THROWS_WITH_AS(HostCgOps<double>(A, &M), doctest::Contains("device preconditioner given to the host"),
                       InputError);
  CHECK_THROWS_WITH_AS(HostBlockCgOps<double>(A, 4, &M), doctest::Contains("device preconditioner"), InputError);
  CHECK_THROWS_WITH_AS(HostEigOps(A, nullptr, &M), doctest::Contains("device preconditioner"), InputError);
  CHECK(to_string(MemorySpace::Host) == std::string("host"));
}
