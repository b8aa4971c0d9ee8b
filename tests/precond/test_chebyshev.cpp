// Chebyshev preconditioning on the host: the recurrence against the closed-form polynomial, λmax by
// Lanczos against exact spectra, symmetry and positive definiteness of M⁻¹, fewer CG iterations
// than Jacobi on SuiteSparse SPD matrices, fp32 polynomials, and every failure path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/precond/jacobi.hpp"
#include "precond/precond_test_util.hpp"
#include "krysp/solvers/host/host_cg_ops.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
constexpr double kPi = 3.14159265358979323846;
PrecondOptions cheb(int degree = kDefaultChebyshevDegree) {
  PrecondOptions o = test::precond(PrecondKind::Chebyshev);
  o.cheb_degree = degree;
  return o;
}
// T_d(x) for any real x
double chebyshev_t(int d, double x) {
  if (std::abs(x) <= 1) return std::cos(d * std::acos(x));
  const double v = std::cosh(d * std::acosh(std::abs(x)));
  return x < 0 && d % 2 ? -v : v;
}
}  // namespace

TEST_CASE("Chebyshev host: the recurrence applies p(D^-1 A) D^-1 with the closed-form polynomial") {
  // 1-D Laplacian: D = 2I, eigenvectors sin(pi k i/(n+1)) with eigenvalues mu_k = 1 - cos(pi k/(n+1))
  // of D^-1 A. M^-1 v = p(mu) v / 2 with mu p(mu) = 1 - T_d((theta - mu)/delta) / T_d(sigma).
  const index_t n = 40;
  const auto A = test::laplacian_1d(n);
  for (int d : {1, 2, 3, 4, 7}) {
    CAPTURE(d);
    PrecondOptions o = cheb(d);
    o.cheb_lambda_max = 2.0;
    o.cheb_ratio = 25;
    const HostChebyshev<double> M(A, o);
    CHECK(M.info().lambda_max == 2.0);
    CHECK(M.info().lambda_min == doctest::Approx(2.0 / 25));
    CHECK(M.info().lanczos_steps == 0);
    const double lmin = 2.0 / 25, lmax = 2.0, theta = (lmax + lmin) / 2, delta = (lmax - lmin) / 2;
    for (int k : {1, 2, 10, 20, 39, 40}) {
      CAPTURE(k);
      std::vector<double> v(n), z(n);
      for (index_t i = 0; i < n; ++i) v[i] = std::sin(kPi * k * (i + 1) / (n + 1));
      M.apply(v.data(), z.data());
      const double mu = 1 - std::cos(kPi * k / (n + 1));
      const double p = (1 - chebyshev_t(d, (theta - mu) / delta) / chebyshev_t(d, theta / delta)) / mu;
      for (index_t i = 0; i < n; ++i) CHECK(z[i] == doctest::Approx(p * v[i] / 2).epsilon(1e-10).scale(1.0));
    }
  }
}

TEST_CASE("Chebyshev host: lambda_max by Lanczos on a 3-D Laplacian against the exact spectrum") {
  const index_t nx = 12, ny = 10, nz = 8;
  const auto A = laplacian_3d(nx, ny, nz);
  // D^-1 A = I - adjacency/6: largest eigenvalue 1 + (cos(pi/(nx+1)) + cos(pi/(ny+1)) + cos(pi/(nz+1)))/3
  const double exact = 1 + (std::cos(kPi / (nx + 1)) + std::cos(kPi / (ny + 1)) + std::cos(kPi / (nz + 1))) / 3;
  const HostChebyshev<double> M(A, cheb());
  const auto& info = M.info();
  CHECK(info.lambda_estimate <= exact * (1 + 1e-12));  // a Ritz value never exceeds lambda_max
  CHECK(info.lanczos_steps >= 1);
  CHECK(info.lanczos_steps <= kDefaultChebyshevEigSteps);
  CHECK(info.gershgorin == doctest::Approx(2.0));
  // Lanczos stops once boost·θ reaches the Gershgorin bound (2 here), which is then λmax
  CHECK(kDefaultChebyshevBoost * info.lambda_estimate >= 2.0);
  CHECK(info.lambda_max == 2.0);
  CHECK(info.lambda_max >= exact);  // the interval covers the spectrum: M stays SPD
  CHECK(info.lambda_max == doctest::Approx(std::min(kDefaultChebyshevBoost * info.lambda_estimate, 2.0)));
  CHECK(info.lambda_min == doctest::Approx(info.lambda_max / kDefaultChebyshevRatio));
}

TEST_CASE("Chebyshev host: the estimate is the same from run to run and close to the exact one on SuiteSparse") {
  for (const std::string name : {"bcsstk06", "lund_a", "1138_bus"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const HostChebyshev<double> M1(A, cheb()), M2(A, cheb());
    CHECK(M1.info().lambda_estimate == M2.info().lambda_estimate);  // fixed start vector
    // A longer run gives the reference: the default stopping rule is within 1% of it.
    PrecondOptions o = cheb();
    o.cheb_eig_steps = 200;
    const HostChebyshev<double> ref(A, o);
    CHECK(M1.info().lambda_estimate >= 0.99 * ref.info().lambda_estimate);
    CHECK(M1.info().lambda_estimate <= ref.info().lambda_estimate * (1 + 1e-12));
  }
}

TEST_CASE("Chebyshev host: M^-1 is symmetric and positive definite (dense check and random vectors)") {
  for (const std::string name : {"bcsstk01", "lund_a", "bcsstk06", "494_bus"}) {
    const auto A = test::load(name);
    for (int d : {2, 3, 4, 7}) {
      CAPTURE(name);
      CAPTURE(d);
      const HostChebyshev<double> M(A, cheb(d));
      const test::ApplyFn f = [&](const double* r, double* z) { M.apply(r, z); };
      const auto D = test::dense_operator(A.rows(), f);
      CHECK(test::asymmetry(D, A.rows()) <= 1e-12);
      CHECK(test::positive_definite(D, A.rows()));
      test::check_symmetric_positive_random(A.rows(), f, 1e-12);
    }
  }
}

TEST_CASE("Chebyshev host: an interval below the top of the spectrum breaks positivity for even degrees") {
  // Why lambda_max is boosted: for lambda > lambda_max, T_d((theta-lambda)/delta) grows, and for even
  // d the polynomial turns negative. Odd degrees stay positive (T_d < 0 there).
  const auto A = test::load("bcsstk06");
  const HostChebyshev<double> ref(A, cheb());
  for (int d : {2, 3, 4}) {
    CAPTURE(d);
    PrecondOptions o = cheb(d);
    o.cheb_lambda_max = 0.4 * ref.info().lambda_estimate;
    const HostChebyshev<double> M(A, o);
    const auto D = test::dense_operator(A.rows(), [&](const double* r, double* z) { M.apply(r, z); });
    CHECK(test::asymmetry(D, A.rows()) <= 1e-12);
    CHECK(test::positive_definite(D, A.rows()) == (d % 2 == 1));
  }
}

TEST_CASE("Chebyshev host: fewer CG iterations than Jacobi on SuiteSparse SPD matrices") {
  // Host study (degree 4, ratio 30): 2.5-3.5x fewer iterations on each of these.
  for (const std::string name : {"bcsstk06", "1138_bus", "gr_30_30", "bcsstm12", "bcsstk05"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const index_t jac = test::cg_iterations(A, test::precond(PrecondKind::Jacobi));
    const index_t ch = test::cg_iterations(A, cheb());
    INFO(name, ": jacobi ", jac, " chebyshev(4) ", ch);
    CHECK(ch <= 0.6 * jac);
    // A higher degree cuts iterations further.
    CHECK(test::cg_iterations(A, cheb(8)) < ch);
  }
}

TEST_CASE("Chebyshev host: CG through solve() reaches rtol 1e-8 on every bundled SPD matrix (true residual)") {
  auto names = test::spd_matrices();
  names.push_back("bcsstm12");
  for (const auto& name : names)
    for (bool single : {false, true}) {  // fp64 and fp32 polynomials
      CAPTURE(name);
      CAPTURE(single);
      const auto A = test::load(name);
      const auto b = test::random_vector(A.rows(), 0.5, 1.5);
      std::vector<double> x;
      SolveOptions o;
      o.backend = Backend::Host;
      o.precond = cheb();
      o.precond.cheb_single = single;
      const auto rep = solve(A, b, x, o);
      CHECK(rep.status == SolveStatus::Converged);
      CHECK(rep.preconditioner == "chebyshev");
      CHECK(rep.true_relative_residual <= 1e-7);
      CHECK(test::true_relative_residual(A, b, x) == doctest::Approx(rep.true_relative_residual).epsilon(1e-3));
    }
}

TEST_CASE("Chebyshev host: an fp32 polynomial inside the fp64 solve") {
  for (const std::string name : {"gr_30_30", "bcsstk06", "1138_bus"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    PrecondOptions o = cheb();
    o.cheb_single = true;
    const HostChebyshev<double, float> Ms(A, o);
    const HostChebyshev<double> Md(A, cheb());
    CHECK(Ms.info().lambda_max == Md.info().lambda_max);  // estimated in fp64 either way
    // Same operator to fp32 rounding.
    const auto r = test::random_vector(A.rows());
    std::vector<double> zs(A.rows()), zd(A.rows());
    Ms.apply(r.data(), zs.data());
    Md.apply(r.data(), zd.data());
    double err = 0, scale = 0;
    for (index_t i = 0; i < A.rows(); ++i) err = std::max(err, std::abs(zs[i] - zd[i])), scale = std::max(scale, std::abs(zd[i]));
    CHECK(err <= 1e-4 * scale);
    test::check_symmetric_positive_random(A.rows(), [&](const double* x, double* z) { Ms.apply(x, z); }, 1e-5);
    // Converges through solve() to rtol 1e-8 (CG in fp64).
    const index_t its = test::cg_iterations(A, o);
    CHECK(its <= 1.3 * test::cg_iterations(A, cheb()));
  }
}

TEST_CASE("Chebyshev host: fp32 matrices") {
  const auto A = test::load("bcsstk06");
  const auto Af = with_value_type<float>(A);
  CHECK(Af.fingerprint() == A.fingerprint());
  const HostChebyshev<float> Mf(Af, cheb());
  const HostChebyshev<double> Md(A, cheb());
  CHECK(Mf.info().lambda_estimate == doctest::Approx(Md.info().lambda_estimate).epsilon(1e-3));
  const auto r = test::random_vector(A.rows());
  std::vector<float> rf(r.begin(), r.end()), zf(A.rows());
  std::vector<double> zd(A.rows());
  Mf.apply(rf.data(), zf.data());
  Md.apply(r.data(), zd.data());
  double err = 0, scale = 0;
  for (index_t i = 0; i < A.rows(); ++i) err = std::max(err, std::abs(zf[i] - zd[i])), scale = std::max(scale, std::abs(zd[i]));
  CHECK(err <= 1e-3 * scale);
}

TEST_CASE("Chebyshev host: apply_block equals apply column by column; padding is untouched") {
  const auto A = test::load("bcsstk05");
  const index_t n = A.rows();
  for (bool single : {false, true}) {
    PrecondOptions o = cheb(3);
    o.cheb_single = single;
    const auto M = make_host_preconditioner(A, o);
    for (index_t N : {1, 3, 8}) {
      CAPTURE(N);
      const index_t ldr = N + 2, ldz = N + 3;
      const auto R = test::random_vector(std::size_t(n) * ldr);
      std::vector<double> Z(std::size_t(n) * ldz, -7.0), r(n), z(n);
      M->apply_block(N, R.data(), ldr, Z.data(), ldz);
      for (index_t c = 0; c < N; ++c) {
        for (index_t i = 0; i < n; ++i) r[i] = R[std::size_t(i) * ldr + c];
        M->apply(r.data(), z.data());
        for (index_t i = 0; i < n; ++i) CHECK(Z[std::size_t(i) * ldz + c] == doctest::Approx(z[i]).epsilon(1e-12));
      }
      for (index_t i = 0; i < n; ++i)
        for (index_t c = N; c < ldz; ++c) CHECK(Z[std::size_t(i) * ldz + c] == -7.0);
    }
  }
}

TEST_CASE("Chebyshev host: failures are clear errors") {
  SUBCASE("NaN in the matrix: the lambda_max estimate is not finite") {
    const auto A = CsrMatrix<double>::from_triplets(3, 3, {0, 1, 2, 0, 2}, {0, 1, 2, 2, 0},
                                                    {2.0, 2.0, 2.0, std::nan(""), std::nan("")});
    CHECK_THROWS_WITH_AS(HostChebyshev<double>(A, cheb()),
                         doctest::Contains("estimate of lambda_max(D^-1 A) is nan (not finite)"), InputError);
  }
  SUBCASE("Inf in the matrix") {
    const auto A = CsrMatrix<double>::from_triplets(2, 2, {0, 1, 0, 1}, {0, 1, 1, 0},
                                                    {2.0, 2.0, HUGE_VAL, HUGE_VAL});
    CHECK_THROWS_WITH_AS(HostChebyshev<double>(A, cheb()), doctest::Contains("not finite"), InputError);
  }
  SUBCASE("an estimate that does not converge in the allowed steps") {
    const auto A = test::load("bcsstk06");
    PrecondOptions o = cheb();
    o.cheb_eig_steps = 3;
    CHECK_THROWS_WITH_AS(HostChebyshev<double>(A, o), doctest::Contains("did not converge"), Error);
  }
  SUBCASE("a zero or negative diagonal entry") {
    const auto Z = CsrMatrix<double>::from_triplets(2, 2, {0, 1}, {0, 0}, {1.0, 1.0});  // A(2,2) missing
    CHECK_THROWS_WITH_AS(HostChebyshev<double>(Z, cheb()), doctest::Contains("A(2,2)"), InputError);
    const auto N = CsrMatrix<double>::from_triplets(2, 2, {0, 1}, {0, 1}, {1.0, -3.0});
    CHECK_THROWS_WITH_AS(HostChebyshev<double>(N, cheb()), doctest::Contains("is negative"), InputError);
  }
  SUBCASE("bad options") {
    const auto A = test::load("bcsstk01");
    PrecondOptions o = cheb(0);
    CHECK_THROWS_WITH_AS(make_host_preconditioner(A, o), doctest::Contains("degree 0"), InputError);
    o = cheb();
    o.cheb_ratio = 1;
    CHECK_THROWS_WITH_AS(make_host_preconditioner(A, o), doctest::Contains("ratio 1"), InputError);
    o = cheb();
    o.cheb_boost = 0.5;
    CHECK_THROWS_WITH_AS(make_host_preconditioner(A, o), doctest::Contains("boost factor 0.5"), InputError);
    o = cheb();
    o.cheb_lambda_max = -1;
    CHECK_THROWS_WITH_AS(make_host_preconditioner(A, o), doctest::Contains("lambda_max -1"), InputError);
  }
}

namespace {
// Lanczos on diag(d) (dense vectors, same start vector as the backends), asked for `batch` steps
// at a time: batching is how the GPU saves synchronisations, so it must not change the result.
class DiagonalLanczos final : public LanczosOperator {
 public:
  DiagonalLanczos(std::vector<double> d, int batch, int first = 0) : d_(std::move(d)), batch_(batch), first_(first) {}
  void start() override {
    const std::size_t n = d_.size();
    v_.assign(n, 0);
    vp_.assign(n, 0);
    w_.assign(n, 0);
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i) ss += (v_[i] = detail::lanczos_start_entry(std::int64_t(i))) * v_[i];
    for (auto& e : v_) e /= std::sqrt(ss);
    step_ = 0;
    beta_ = 0;
  }
  void steps(int count, double* alpha, double* beta) override {
    ++calls;
    asked += count;
    for (int t = 0; t < count; ++t, ++step_) {
      if (step_ > 0)
        for (std::size_t i = 0; i < d_.size(); ++i) {
          vp_[i] = v_[i];
          v_[i] = w_[i] / beta_;
        }
      double a = 0, b = 0;
      for (std::size_t i = 0; i < d_.size(); ++i) {
        w_[i] = d_[i] * v_[i] - beta_ * vp_[i];
        a += w_[i] * v_[i];
      }
      for (std::size_t i = 0; i < d_.size(); ++i) b += (w_[i] -= a * v_[i]) * w_[i];
      alpha[t] = a;
      beta[t] = beta_ = std::sqrt(b);
    }
  }
  int batch() const override { return batch_; }
  int first_batch() const override { return first_ > 0 ? first_ : batch_; }
  int calls = 0, asked = 0;

 private:
  std::vector<double> d_, v_, vp_, w_;
  int batch_, first_, step_ = 0;
  double beta_ = 0;
};
}  // namespace

TEST_CASE("Chebyshev host: Lanczos asked for steps in batches stops where and as one step at a time does") {
  std::vector<double> spread(500), clustered(300), tiny = {1.0, 3.0, 2.0};
  for (std::size_t i = 0; i < spread.size(); ++i) spread[i] = 1.0 + double(i * i % 997);
  for (std::size_t i = 0; i < clustered.size(); ++i) clustered[i] = i < 290 ? 1.0 + 1e-3 * double(i) : 5.0 - 0.01 * double(i - 290);
  for (const auto& d : {spread, clustered, tiny}) {
    CAPTURE(d.size());
    for (int max_steps : {3, 9, 40}) {
      CAPTURE(max_steps);
      DiagonalLanczos one(d, 1);
      const LanczosResult ref = lanczos_largest(one, index_t(d.size()), max_steps);
      CHECK(one.calls == ref.steps);  // one step per call: exactly the steps used
      for (int batch : {2, 4, 7, 8}) {
        for (int first : {0, 16}) {  // 16: a first batch longer than the others (the GPU's on small matrices)
          CAPTURE(batch);
          CAPTURE(first);
          DiagonalLanczos op(d, batch, first);
          const LanczosResult r = lanczos_largest(op, index_t(d.size()), max_steps);
          CHECK(r.theta == ref.theta);  // bitwise: the same steps, the same stopping decision
          CHECK(r.steps == ref.steps);
          CHECK(r.change == ref.change);
          CHECK(r.converged == ref.converged);
          CHECK(op.asked <= max_steps);  // never past the allowed steps
          CHECK(op.asked <= std::max(r.steps + std::max(batch, 8) - 1, first));  // at most one batch past the stop
        }
      }
    }
  }
}

TEST_CASE("Chebyshev host: Lanczos stops early at 'enough', and only there; uncapped it settles near lambda_max") {
  std::vector<double> d(400);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = 1.0 + 2.0 * std::sin(0.01 * double(i * i % 389)) + 2.0;
  const double top = *std::max_element(d.begin(), d.end());
  DiagonalLanczos free_op(d, 1);
  const LanczosResult full = lanczos_largest(free_op, index_t(d.size()), 60);
  REQUIRE(full.converged);
  CHECK(full.theta <= top * (1 + 1e-12));
  CHECK(full.theta >= 0.98 * top);
  CHECK(full.steps > 8);
  for (double frac : {0.5, 0.9, 0.97}) {
    CAPTURE(frac);
    DiagonalLanczos op(d, 1);
    const LanczosResult r = lanczos_largest(op, index_t(d.size()), 60, frac * top);
    CHECK(r.converged);
    CHECK(r.theta >= frac * top);   // stopped because it got there ...
    CHECK(r.steps <= full.steps);   // ... no later than settling would have
    DiagonalLanczos one_less(d, 1);
    if (r.steps > 1) {  // ... and not before: one step fewer is still below
      const LanczosResult before = lanczos_largest(one_less, index_t(d.size()), r.steps - 1, frac * top);
      CHECK(before.theta < frac * top);
    }
  }
}

TEST_CASE("Chebyshev host: set up for one matrix, refused for another") {
  const auto A = test::load("bcsstk01"), B = test::load("bcsstk02");
  const HostChebyshev<double> M(A, cheb());
  CHECK(M.matches(A));
  CHECK_FALSE(M.matches(B));
  CHECK_THROWS_WITH_AS(HostCgOps<double>(B, &M), doctest::Contains("set up for another matrix"), InputError);
  // Same structure, new values: still matches (plans and preconditioners are keyed by structure).
  auto A2 = test::load("bcsstk01");
  CHECK(M.matches(A2));
}

TEST_CASE("Preconditioner names and options") {
  CHECK(parse_precond("none") == PrecondKind::None);
  CHECK(parse_precond("jacobi") == PrecondKind::Jacobi);
  CHECK(parse_precond("chebyshev") == PrecondKind::Chebyshev);
  CHECK(parse_precond("block-jacobi") == PrecondKind::BlockJacobi);
  for (auto k : {PrecondKind::None, PrecondKind::Jacobi, PrecondKind::Chebyshev, PrecondKind::BlockJacobi})
    CHECK(parse_precond(to_string(k)) == k);
  CHECK_THROWS_WITH_AS(parse_precond("ilu"),
                       doctest::Contains("unknown preconditioner 'ilu' (expected none, jacobi, chebyshev, block-jacobi or amg)"),
                       InputError);
  CHECK(describe(cheb()) == "chebyshev(degree " + std::to_string(kDefaultChebyshevDegree) + ", ratio 30)");
  PrecondOptions bj = test::precond(PrecondKind::BlockJacobi);
  CHECK(describe(bj) == "block-jacobi(auto)");
  bj.block_size = 3;
  CHECK(describe(bj) == "block-jacobi(b 3)");
  bj.block_size = 9;
  CHECK_THROWS_WITH_AS(validate(bj), doctest::Contains("block size 9"), InputError);
  const auto A = test::load("bcsstk01");
  const auto M = make_host_preconditioner(A, cheb());
  REQUIRE(M);
  CHECK(M->kind() == PrecondKind::Chebyshev);
  CHECK(M->inverse_diagonal() == nullptr);
}
