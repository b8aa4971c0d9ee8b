// The CUDA CG backend against the host reference: each device operation on fresh random data,
// then whole solves on SuiteSparse SPD matrices, breakdown statuses, and bitwise reproducibility.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/device_jacobi.hpp"
#include "krysp/precond/jacobi.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/cuda/cuda_cg_ops.hpp"
#include "krysp/solvers/host/host_cg_ops.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
// Host and device copies of the same random vector.
struct Pair {
  HostCgOps<double>::Vector h;
  DeviceArray<double> d;
};
Pair random_pair(HostCgOps<double>& host, CudaCgOps<double>& dev, index_t n) {
  Pair p{host.vector(), dev.vector()};
  const auto v = test::random_vector(n);
  std::copy(v.begin(), v.end(), p.h.data());
  p.d.upload(v.data(), v.size());
  return p;
}
// max_i |dev_i − host_i| ≤ tol·max(1, max_i |host_i|)
void check_close(const Pair& p, index_t n, double tol) {
  std::vector<double> d(n);
  p.d.download(d.data(), d.size());
  double err = 0, scale = 1;
  for (index_t i = 0; i < n; ++i) {
    err = std::max(err, std::abs(d[i] - p.h(i)));
    scale = std::max(scale, std::abs(p.h(i)));
  }
  CHECK(err <= tol * scale);
}
std::vector<double> scalars(const CudaCgOps<double>& d, int count) {
  std::vector<double> s(count);
  d.read_scalars(s.data());
  return s;
}
std::vector<double> scalars(const HostCgOps<double>& h, int count) {
  std::vector<double> s(count);
  h.read_scalars(s.data());
  return s;
}
}  // namespace

TEST_CASE("CG ops GPU: every device operation matches the host backend on random data") {
  const auto A = test::load("bcsstk06");
  const index_t n = A.rows();
  SpmvPlan<double> plan(A);
  const HostJacobi<double> hj(A);
  const DeviceJacobi<double> dj(A);
  HostCgOps<double> host(A, &hj);
  CudaCgOps<double> dev(A, plan, &dj);
  const CgSlots s(4);
  host.reset_scalars(s.count());
  dev.reset_scalars(s.count());
  // Sums of n products: rounding grows like n·eps in the worst case.
  const double red_tol = 4.0 * n * 1.1e-16;

  auto a = random_pair(host, dev, n), b = random_pair(host, dev, n), r = random_pair(host, dev, n),
       z = random_pair(host, dev, n), p = random_pair(host, dev, n), q = random_pair(host, dev, n),
       x = random_pair(host, dev, n);

  host.dot(a.h, b.h, s.pq);
  dev.dot(a.d, b.d, s.pq);
  CHECK(scalars(dev, s.count())[s.pq] == doctest::Approx(scalars(host, s.count())[s.pq]).epsilon(red_tol));

  host.residual(b.h, x.h, r.h);
  dev.residual(b.d, x.d, r.d);
  check_close(r, n, 1e-13);

  host.spmv(p.h, q.h);
  dev.spmv(p.d, q.d);
  check_close(q, n, 1e-13);

  host.precondition(r.h, z.h, s.rz(0), s.rr(0));
  dev.precondition(r.d, z.d, s.rz(0), s.rr(0));
  check_close(z, n, 1e-15);
  auto hs = scalars(host, s.count()), ds = scalars(dev, s.count());
  CHECK(ds[s.rz(0)] == doctest::Approx(hs[s.rz(0)]).epsilon(red_tol));
  CHECK(ds[s.rr(0)] == doctest::Approx(hs[s.rr(0)]).epsilon(red_tol));

  // Make p'Ap positive so the step is taken: p = z, q = A·p.
  host.direction(z.h, p.h, s.rz(0), s.rz(3), true);
  dev.direction(z.d, p.d, s.rz(0), s.rz(3), true);
  check_close(p, n, 1e-12);
  host.spmv(p.h, q.h);
  dev.spmv(p.d, q.d);
  host.dot(p.h, q.h, s.pq);
  dev.dot(p.d, q.d, s.pq);
  host.update(s.rz(0), s.pq, p.h, q.h, x.h, r.h, z.h, s.rz(1), s.rr(1), 0);
  dev.update(s.rz(0), s.pq, p.d, q.d, x.d, r.d, z.d, s.rz(1), s.rr(1), 0);
  check_close(x, n, 1e-12);
  check_close(r, n, 1e-12);
  check_close(z, n, 1e-12);
  hs = scalars(host, s.count());
  ds = scalars(dev, s.count());
  CHECK(ds[CgSlots::flag] == kCgOk);
  CHECK(ds[s.rz(1)] == doctest::Approx(hs[s.rz(1)]).epsilon(1e-10));
  CHECK(ds[s.rr(1)] == doctest::Approx(hs[s.rr(1)]).epsilon(1e-10));

  host.direction(z.h, p.h, s.rz(1), s.rz(0), false);
  dev.direction(z.d, p.d, s.rz(1), s.rz(0), false);
  check_close(p, n, 1e-12);
}

TEST_CASE("CG GPU: matches the host backend on SuiteSparse SPD matrices") {
  for (const auto& name : test::spd_matrices()) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto b = test::random_vector(A.rows(), 0.5, 1.5);
    SolveOptions o;
    o.precond.kind = PrecondKind::Jacobi;
    o.backend = Backend::Host;
    std::vector<double> xh, xd;
    const auto host = solve(A, b, xh, o);
    o.backend = Backend::Cuda;
    o.cg.check_every = 7;  // an odd chunk: convergence falls inside a chunk
    const auto dev = solve(A, b, xd, o);
    CHECK(dev.backend == "cuda");
    CHECK(dev.status == SolveStatus::Converged);
    CHECK(dev.true_relative_residual <= 1e-7);
    CHECK(test::true_relative_residual(A, b, xd) <= 1e-7);
    // Different summation orders: the iteration counts may differ a little on ill-conditioned
    // problems, the answers agree to the accuracy both reached.
    CHECK(std::abs(dev.iterations - host.iterations) <= std::max(3, host.iterations / 10));
    CHECK(dev.residual_history.size() == std::size_t(dev.iterations) + 1);
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < xh.size(); ++i) {
      diff = std::max(diff, std::abs(xh[i] - xd[i]));
      scale = std::max(scale, std::abs(xh[i]));
    }
    CHECK(diff <= 1e-4 * scale);
  }
}

TEST_CASE("CG GPU: breakdown statuses match the host") {
  SolveOptions o;
  o.precond.kind = PrecondKind::None;
  o.backend = Backend::Cuda;
  const auto indef = CsrMatrix<double>::from_triplets(3, 3, {0, 1, 2}, {0, 1, 2}, {1.0, -1.0, 2.0});
  std::vector<double> b = {0.0, 1.0, 0.0}, x;
  CHECK(solve(indef, b, x, o).status == SolveStatus::NotSpd);
  for (double xi : x) CHECK(std::isfinite(xi));

  const auto nanA = CsrMatrix<double>::from_triplets(3, 3, {0, 1, 2, 0}, {0, 1, 2, 2}, {2.0, 2.0, 2.0, std::nan("")});
  std::vector<double> b3 = {1.0, 2.0, 3.0};
  x.clear();
  CHECK(solve(nanA, b3, x, o).status == SolveStatus::NonFinite);

  const auto I = CsrMatrix<double>::from_triplets(4, 4, {0, 1, 2, 3}, {0, 1, 2, 3}, {1.0, 1.0, 1.0, 1.0});
  std::vector<double> b4 = {1.0, 2.0, 3.0, 4.0};
  x.clear();
  o.cg.rtol = 0;
  const auto rep = solve(I, b4, x, o);
  CHECK(rep.converged());
  CHECK(x[3] == doctest::Approx(4.0));
}

TEST_CASE("CG GPU: bitwise identical solutions across runs (deterministic reductions)") {
  const auto A = test::load("bcsstk04");
  const auto b = test::random_vector(A.rows());
  SolveOptions o;
  o.backend = Backend::Cuda;
  std::vector<double> x1, x2;
  const auto r1 = solve(A, b, x1, o);
  const auto r2 = solve(A, b, x2, o);
  CHECK(r1.iterations == r2.iterations);
  CHECK(std::memcmp(x1.data(), x2.data(), x1.size() * sizeof(double)) == 0);
  CHECK(r1.residual_history == r2.residual_history);
}

TEST_CASE("CG GPU: a larger generated problem (3-D Laplacian 40^3) converges with the true residual") {
  const auto A = laplacian_3d(40, 40, 40);
  const auto b = test::random_vector(A.rows());
  SolveOptions o;
  o.backend = Backend::Cuda;
  std::vector<double> x;
  const auto rep = solve(A, b, x, o);
  CHECK(rep.converged());
  CHECK(test::true_relative_residual(A, b, x) <= 2e-8);
}

TEST_CASE("CG GPU: the check interval does not change the answer (converged iterate is frozen)") {
  const auto A = test::load("bcsstk05");
  const auto b = test::random_vector(A.rows());
  SolveOptions o;
  o.backend = Backend::Cuda;
  std::vector<double> x1, x16;
  o.cg.check_every = 1;
  const auto r1 = solve(A, b, x1, o);
  o.cg.check_every = 16;
  const auto r16 = solve(A, b, x16, o);
  REQUIRE(r1.converged());
  CHECK(r1.iterations == r16.iterations);
  CHECK(std::memcmp(x1.data(), x16.data(), x1.size() * sizeof(double)) == 0);
}

namespace {
// Jacobi that hides its diagonal: drives CG's general-preconditioner path (apply, then dots).
class OpaqueDeviceJacobi final : public Preconditioner<double> {
 public:
  explicit OpaqueDeviceJacobi(const CsrMatrix<double>& A)
      : Preconditioner<double>(A.rows(), MemorySpace::Device), inner_(A) {}
  PrecondKind kind() const override { return PrecondKind::Jacobi; }
  void apply(const double* r, double* z) const override { inner_.apply(r, z); }
  void apply_block(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) const override {
    inner_.apply_block(N, R, ldr, Z, ldz);
  }
  bool matches(const CsrMatrix<double>& A) const override { return inner_.matches(A); }

 private:
  DeviceJacobi<double> inner_;
};
}  // namespace

TEST_CASE("CG GPU: the general preconditioner path gives the fused Jacobi answer") {
  const auto A = test::load("bcsstk04");
  const auto b = test::random_vector(A.rows());
  SpmvPlan<double> plan(A);
  const DeviceJacobi<double> fused(A);
  const OpaqueDeviceJacobi general(A);
  CgOptions o;
  auto run = [&](const Preconditioner<double>& M, std::vector<double>& x, SolveResult& res) {
    CudaCgOps<double> ops(A, plan, &M);
    auto vb = ops.vector(), vx = ops.vector();
    vb.upload(b.data(), b.size());
    res = cg(ops, vb, vx, o);
    x.resize(b.size());
    vx.download(x.data(), x.size());
  };
  std::vector<double> x1, x2;
  SolveResult r1, r2;
  run(fused, x1, r1);
  run(general, x2, r2);
  REQUIRE(r1.converged());
  REQUIRE(r2.converged());
  CHECK(r1.iterations == r2.iterations);  // same arithmetic, same reduction order
  CHECK(test::true_relative_residual(A, b, x2) <= 1e-7);
}

TEST_CASE("CgSolver GPU: the plan is made once; value updates keep it; a new structure needs a new solver") {
  auto A = laplacian_3d(12, 12, 12);
  SolveOptions o;
  o.backend = Backend::Cuda;
  const auto before = SpmvPlan<double>::plans_created();
  CgSolver solver(A, o);
  const auto b = test::random_vector(A.rows());
  std::vector<double> x;
  for (int k = 0; k < 3; ++k) REQUIRE(solver.solve(b, x).converged());
  std::vector<double> vals(A.values().data(), A.values().data() + A.nnz());
  for (auto& v : vals) v *= 3;
  solver.update_values(vals);
  std::vector<double> y;
  REQUIRE(solver.solve(b, y).converged());
  CHECK(test::true_relative_residual(A, b, y) <= 1e-7);
  CHECK(SpmvPlan<double>::plans_created() - before == 1);
  const auto other = laplacian_3d(12, 12, 11);
  CHECK_FALSE(solver.plan()->matches(other));
  CHECK_THROWS_AS(solver.plan()->apply(other, 1.0, nullptr, 0.0, nullptr), InputError);
}
