// The GPU ops over the operator layer: CG, block CG and LOBPCG on CUDA with A given as a device
// MatrixOperator (its fused passes taken: counted, not timed) and as a plain LinearOperator that
// hides them (apply and separate reductions). Both are checked against the host backend: true
// residuals recomputed on the host, eigenvalues against the host run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "krysp/base/comm_backend.hpp"
#include "krysp/base/communicator.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/device_jacobi.hpp"
#include "krysp/precond/jacobi.hpp"
#include "krysp/solvers/block_cg.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/cuda/cuda_block_cg_ops.hpp"
#include "krysp/solvers/cuda/cuda_cg_ops.hpp"
#include "krysp/solvers/cuda/cuda_eig_ops.hpp"
#include "krysp/solvers/eig_random.hpp"
#include "krysp/solvers/host/host_block_cg_ops.hpp"
#include "krysp/solvers/host/host_cg_ops.hpp"
#include "krysp/solvers/host/host_eig_ops.hpp"
#include "krysp/solvers/lobpcg.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/matrix_operator.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
/// A device operator that offers apply() and apply_block() only, as a matrix-free or distributed
/// operator would: the ops must take their unfused paths.
class PlainOperator final : public LinearOperator<double> {
 public:
  explicit PlainOperator(const LinearOperator<double>& inner) : inner_(inner) {}
  index_t rows() const override { return inner_.rows(); }
  index_t cols() const override { return inner_.cols(); }
  MemorySpace space() const override { return inner_.space(); }
  void apply(const double* x, double* y) const override { inner_.apply(x, y); }
  void apply_block(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const override {
    inner_.apply_block(N, X, ldx, Y, ldy);
  }

 private:
  const LinearOperator<double>& inner_;
};

/// ‖b − A·x‖ / ‖b‖ on the host.
double true_relative_residual(const CsrMatrix<double>& A, const std::vector<double>& b, const std::vector<double>& x) {
  std::vector<double> ax(b.size());
  A.multiply_host(x.data(), ax.data());
  double rr = 0, bb = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    rr += (b[i] - ax[i]) * (b[i] - ax[i]);
    bb += b[i] * b[i];
  }
  return std::sqrt(rr / bb);
}

/// CG on the GPU through `ops`: x, and the result.
std::vector<double> cuda_cg(CudaCgOps<double>& ops, const std::vector<double>& b, const CgOptions& o,
                            SolveResult& r) {
  auto vb = ops.vector(), vx = ops.vector();
  vb.upload(b.data(), b.size());
  r = cg(ops, vb, vx, o);
  std::vector<double> x(b.size());
  vx.download(x.data(), x.size());
  return x;
}

/// Rank 0 of two, for constructors only: no collective but the sum of row counts is reached.
class TwoRanks final : public detail::CommBackend {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* kind() const override { return "test"; }
  /// Both ranks hold this rank's value (enough for a sum of row counts).
  void allgather(const void* in, std::size_t bytes, void* out) const override {
    std::memcpy(out, in, bytes);
    std::memcpy(static_cast<char*>(out) + bytes, in, bytes);
  }
  void broadcast(void*, std::size_t, int) const override { KRYSP_THROW(Error, "not reached"); }
  void all_to_all(const std::vector<std::vector<char>>&, std::vector<std::vector<char>>&) const override {
    KRYSP_THROW(Error, "not reached");
  }
  std::unique_ptr<detail::PendingExchange> start_exchange(const std::vector<detail::CommMessage>&,
                                                          const std::vector<detail::CommMessage>&) const override {
    KRYSP_THROW(Error, "not reached");
  }
};

double max_abs_diagonal(const CsrMatrix<double>& A) {
  double m = 0;
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k)
      if (A.col_idx()(k) == i) m = std::max(m, std::abs(A.values()(k)));
  return m;
}
}  // namespace

TEST_CASE("Operator layer GPU: CG fused (MatrixOperator) and unfused (plain operator) match the host") {
  const auto A = test::load("bcsstk06");
  const index_t n = A.rows();
  const auto b = test::random_vector(std::size_t(n));
  const HostJacobi<double> hj(A);
  const DeviceJacobi<double> dj(A);
  const auto dev = MatrixOperator<double>::device(A);
  const PlainOperator plain(dev);
  CgOptions o;
  o.rtol = 1e-10;

  HostCgOps<double> host(A, &hj);
  auto hb = host.vector(), hx = host.vector();
  std::copy(b.begin(), b.end(), hb.data());
  const SolveResult rh = cg(host, hb, hx, o);
  REQUIRE(rh.status == SolveStatus::Converged);

  CudaCgOps<double> fused(dev, &dj);
  CudaCgOps<double> unfused(plain, &dj);
  CHECK(fused.fused());
  CHECK_FALSE(unfused.fused());
  SolveResult rf, ru;
  const auto xf = cuda_cg(fused, b, o, rf);
  const auto xu = cuda_cg(unfused, b, o, ru);
  REQUIRE(rf.status == SolveStatus::Converged);
  REQUIRE(ru.status == SolveStatus::Converged);
  // Every q = A·p ran with its dot in one pass (plus the residual at the start and at checks).
  CHECK(fused.fused_passes() >= rf.iterations);
  CHECK(unfused.fused_passes() == 0);
  // The same algorithm up to the order of a few sums: iteration counts within a few.
  CHECK(std::abs(rf.iterations - rh.iterations) <= std::max<index_t>(3, rh.iterations / 10));
  CHECK(std::abs(ru.iterations - rh.iterations) <= std::max<index_t>(3, rh.iterations / 10));
  CHECK(true_relative_residual(A, b, xf) <= 1e-9);
  CHECK(true_relative_residual(A, b, xu) <= 1e-9);
  double diff = 0, scale = 0;
  for (index_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(xf[std::size_t(i)] - xu[std::size_t(i)]));
    scale = std::max(scale, std::abs(hx(i)));
  }
  CHECK(diff <= 1e-6 * scale);
}

TEST_CASE("Operator layer GPU: CG without M and with a general M on a plain operator") {
  const auto A = laplacian_2d(60, 50);
  const auto b = test::random_vector(std::size_t(A.rows()));
  const auto dev = MatrixOperator<double>::device(A);
  const PlainOperator plain(dev);
  PrecondOptions po;
  po.kind = PrecondKind::Chebyshev;
  const auto cheb = make_device_preconditioner(A, *dev.spmv_plan(), po);
  CgOptions o;
  o.rtol = 1e-9;
  const std::vector<const Preconditioner<double>*> preconditioners{nullptr, cheb.get()};
  for (const Preconditioner<double>* M : preconditioners) {
    CAPTURE(M ? M->summary() : std::string("none"));
    CudaCgOps<double> fused(dev, M), unfused(plain, M);
    SolveResult rf, ru;
    const auto xf = cuda_cg(fused, b, o, rf);
    const auto xu = cuda_cg(unfused, b, o, ru);
    CHECK(rf.status == SolveStatus::Converged);
    CHECK(ru.status == SolveStatus::Converged);
    CHECK(std::abs(rf.iterations - ru.iterations) <= 3);
    CHECK(true_relative_residual(A, b, xf) <= 1e-8);
    CHECK(true_relative_residual(A, b, xu) <= 1e-8);
    CHECK(unfused.fused_passes() == 0);
  }
}

TEST_CASE("Operator layer GPU: block CG fused and unfused match the host") {
  const auto A = laplacian_2d(40, 40);
  const index_t n = A.rows(), s = 4;
  const auto B = test::random_vector(std::size_t(n) * s);  // row-major n × s
  const HostJacobi<double> hj(A);
  const DeviceJacobi<double> dj(A);
  const auto dev = MatrixOperator<double>::device(A);
  const PlainOperator plain(dev);
  CgOptions o;
  o.rtol = 1e-9;

  HostBlockCgOps<double> host(A, s, &hj);
  auto hb = host.block(), hx = host.block();
  std::copy(B.begin(), B.end(), hb.data());
  const BlockSolveResult rh = block_cg(host, hb, hx, o);

  auto run = [&](CudaBlockCgOps<double>& ops, BlockSolveResult& r) {
    auto vb = ops.block(), vx = ops.block();
    vb.upload(B.data(), B.size());
    r = block_cg(ops, vb, vx, o);
    std::vector<double> X(B.size());
    vx.download(X.data(), X.size());
    return X;
  };
  CudaBlockCgOps<double> fused(dev, s, &dj), unfused(plain, s, &dj);
  CHECK(fused.fused());
  CHECK_FALSE(unfused.fused());
  CHECK(unfused.spmm_kernel() == "operator");
  CHECK_THROWS_AS(unfused.plan(s), InputError);
  BlockSolveResult rf, ru;
  const auto Xf = run(fused, rf);
  const auto Xu = run(unfused, ru);
  // The fused SpMM + Gram kernel runs wherever its rule picks it (short regular rows).
  const bool rule_fuses = spmm_gram_rule(fused.plan(s).stats(), fused.plan(s).config(), s, s).has_value();
  CHECK((fused.fused_passes() > 0) == rule_fuses);
  CHECK(unfused.fused_passes() == 0);
  CHECK(std::abs(rf.iterations - rh.iterations) <= 2);
  CHECK(std::abs(ru.iterations - rh.iterations) <= 2);
  for (index_t j = 0; j < s; ++j) {
    CAPTURE(j);
    std::vector<double> bj(static_cast<std::size_t>(n)), xf(bj.size()), xu(bj.size());
    for (index_t i = 0; i < n; ++i) {
      const std::size_t k = std::size_t(i) * s + j;
      bj[std::size_t(i)] = B[k];
      xf[std::size_t(i)] = Xf[k];
      xu[std::size_t(i)] = Xu[k];
    }
    CHECK(rf.columns[std::size_t(j)].converged());
    CHECK(ru.columns[std::size_t(j)].converged());
    CHECK(true_relative_residual(A, bj, xf) <= 1e-8);
    CHECK(true_relative_residual(A, bj, xu) <= 1e-8);
  }
}

TEST_CASE("Operator layer GPU: LOBPCG fused and unfused match the host") {
  // A 2-D Laplacian on a non-square grid (simple eigenvalues), where Jacobi-preconditioned LOBPCG
  // converges to the relative test: bcsstk06 with Jacobi stagnates on the host itself.
  const auto A = laplacian_2d(20, 23);
  const index_t n = A.rows();
  LobpcgOptions o;
  o.k = 4;
  o.tol = 1e-8;
  o.convergence = EigConvergence::Relative;
  o.max_iters = 3000;
  const index_t b = lobpcg_block_size(o, n, 0, 0);
  LobpcgStart st;
  st.a_norm_floor = max_abs_diagonal(A);
  const HostJacobi<double> hj(A);
  const DeviceJacobi<double> dj(A);

  HostEigOps host(A, nullptr, &hj);
  const EigResult rh = lobpcg(host, o, st);
  REQUIRE(rh.status == EigStatus::Converged);

  const auto dev = MatrixOperator<double>::device(A, nullptr);
  const PlainOperator plain(dev);
  CudaEigOps fused(dev, nullptr, &dj, 3 * b), unfused(plain, nullptr, &dj, 3 * b);
  CHECK(fused.fused());
  CHECK_FALSE(unfused.fused());
  const EigResult rf = lobpcg(fused, o, st);
  const EigResult ru = lobpcg(unfused, o, st);
  CHECK(rf.status == EigStatus::Converged);
  CHECK(ru.status == EigStatus::Converged);
  CHECK(fused.fused_passes() > 0);
  CHECK(unfused.fused_passes() == 0);
  CHECK(unfused.spmm_kernel(b) == "operator");
  REQUIRE(rf.eigenvalues.size() == rh.eigenvalues.size());
  REQUIRE(ru.eigenvalues.size() == rh.eigenvalues.size());
  for (std::size_t j = 0; j < rh.eigenvalues.size(); ++j) {
    CAPTURE(j);
    CHECK(rf.eigenvalues[j] == doctest::Approx(rh.eigenvalues[j]).epsilon(1e-6));
    CHECK(ru.eigenvalues[j] == doctest::Approx(rh.eigenvalues[j]).epsilon(1e-6));
  }
}

TEST_CASE("Operator layer GPU: the ops refuse a host operator with a clear error") {
  const auto A = laplacian_2d(10, 10);
  const auto host = MatrixOperator<double>::host(A);
  CHECK_THROWS_WITH_AS(CudaCgOps<double>(host, nullptr), doctest::Contains("host operator given to the GPU backend"),
                       InputError);
  CHECK_THROWS_WITH_AS(CudaBlockCgOps<double>(host, 2, nullptr),
                       doctest::Contains("host operator given to the GPU backend"), InputError);
  CHECK_THROWS_WITH_AS(CudaEigOps(host, nullptr, nullptr, 6), doctest::Contains("host operator given to the GPU backend"),
                       InputError);
}

TEST_CASE("Operator layer GPU: the ops take a communicator of several ranks") {
  // Whole distributed solves on the GPU: tests/mpi/test_dist_device*.cpp under mpirun.
  const auto A = laplacian_2d(10, 10);
  const auto dev = MatrixOperator<double>::device(A);
  const Communicator two(std::make_shared<const TwoRanks>());
  CHECK_NOTHROW(CudaCgOps<double>(dev, nullptr, two));
  CHECK_NOTHROW(CudaBlockCgOps<double>(dev, 2, nullptr, two));
  CudaEigOps eig(dev, nullptr, nullptr, 6, two, {}, 100);
  CHECK(eig.global_size() == 2 * A.rows());
  // The random start is by global row: this rank's rows start at 100.
  const index_t n = A.rows(), cols = 3;
  DeviceArray<double> X(static_cast<std::size_t>(n) * cols);
  eig.fill_random(cols, X.data(), cols, 7, 1);
  std::vector<double> h(X.size());
  X.download(h.data(), h.size());
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < cols; ++j) CHECK(h[std::size_t(i) * cols + j] == random_block_entry(7, 100 + i, 1 + j));
  CudaEigOps one(dev, nullptr, nullptr, 6);
  CHECK(one.global_size() == A.rows());
}

TEST_CASE("Operator layer GPU: a device MatrixOperator's fused passes agree with apply") {
  const auto A = laplacian_2d(30, 20);
  const std::size_t n = static_cast<std::size_t>(A.rows());
  const auto op = MatrixOperator<double>::device(A, nullptr);  // SpMV plan on first use
  const FusedOperator<double>& F = op;
  const auto x = test::random_vector(n), b = test::random_vector(n);
  DeviceArray<double> dx(n), dy(n), dr(n), ddot(1);
  ddot.zero();
  dx.upload(x.data(), n);
  op.apply(dx.data(), dy.data());
  CHECK(op.spmv_plan() != nullptr);
  std::vector<double> ax(n), y(n), r(n);
  dy.download(ax.data(), n);
  F.apply_dot(dx.data(), dy.data(), ddot.data());
  double dot = 0, want = 0;
  ddot.download(&dot, 1);
  dy.download(y.data(), n);
  for (std::size_t i = 0; i < n; ++i) want += x[i] * ax[i];
  CHECK(dot == doctest::Approx(want).epsilon(1e-12));
  for (std::size_t i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(ax[i]).epsilon(1e-14));
  dr.upload(b.data(), n);
  F.apply_scaled(-1.0, dx.data(), 1.0, dr.data());
  dr.download(r.data(), n);
  for (std::size_t i = 0; i < n; ++i) CHECK(r[i] == doctest::Approx(b[i] - ax[i]).epsilon(1e-12));
  // The plan of one width and leading dimensions is made once and kept.
  CHECK(&F.spmm_plan(4, 4, 4) == &F.spmm_plan(4, 4, 4));
  const auto other = laplacian_2d(5, 5);
  CHECK_THROWS_AS(MatrixOperator<double>::device(A, std::make_shared<const SpmvPlan<double>>(other)), InputError);
}
