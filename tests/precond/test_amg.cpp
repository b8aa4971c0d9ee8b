// Smoothed-aggregation AMG on the host (precond/amg.hpp): the sparse set-up pieces against dense
// references, M⁻¹ symmetric positive definite, PCG iterations against Jacobi-CG on 3-D problems
// and a SuiteSparse matrix (each solve checked by its true residual), determinism, the
// hierarchy's sizes and complexities, and the errors for bad input.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/block_jacobi.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

PrecondOptions amg_options(int b = 0) {
  PrecondOptions o = test::precond(PrecondKind::Amg);
  o.amg.block_size = b;
  return o;
}

// Dense copy (row-major) of a Csr<double>.
std::vector<double> dense(const amg::Csr<double>& A) {
  std::vector<double> D(std::size_t(A.rows) * std::size_t(A.cols), 0.0);
  for (index_t i = 0; i < A.rows; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k)
      D[std::size_t(i) * A.cols + std::size_t(A.col_idx[std::size_t(k)])] += A.values[std::size_t(k)];
  return D;
}

// Columns strictly increasing in every row, row_ptr consistent.
bool sorted_csr(const amg::Csr<double>& A) {
  if (A.row_ptr.size() != std::size_t(A.rows) + 1 || A.row_ptr[0] != 0) return false;
  if (A.row_ptr.back() != A.nnz() || A.values.size() != A.col_idx.size()) return false;
  for (index_t i = 0; i < A.rows; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k) {
      const index_t j = A.col_idx[std::size_t(k)];
      if (j < 0 || j >= A.cols) return false;
      if (k > A.row_ptr[std::size_t(i)] && A.col_idx[std::size_t(k) - 1] >= j) return false;
    }
  return true;
}

amg::Csr<double> random_sparse(index_t rows, index_t cols, double density, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1), v(-1, 1);
  amg::Csr<double> A;
  A.rows = rows;
  A.cols = cols;
  A.row_ptr.assign(std::size_t(rows) + 1, 0);
  for (index_t i = 0; i < rows; ++i) {
    for (index_t j = 0; j < cols; ++j)
      if (u(rng) < density) A.col_idx.push_back(j), A.values.push_back(v(rng));
    A.row_ptr[std::size_t(i) + 1] = A.nnz();
  }
  return A;
}

// A PCG solve through solve() on the host with `pc`, rtol 1e-8: the report and the true residual
// recomputed here.
struct Solved {
  index_t iterations = 0;
  bool converged = false;
  double true_residual = 0;
  double seconds = 0, setup_seconds = 0;
};
Solved pcg(const CsrMatrix<double>& A, const PrecondOptions& pc) {
  std::vector<double> b(A.rows()), x;
  for (index_t i = 0; i < A.rows(); ++i) b[i] = 1.0 + 0.5 * std::sin(0.37 * i);
  SolveOptions o;
  o.backend = Backend::Host;
  o.precond = pc;
  o.cg.rtol = 1e-8;
  const SolveReport rep = solve(A, b, x, o);
  Solved s;
  s.iterations = rep.iterations;
  s.converged = rep.status == SolveStatus::Converged;
  s.true_residual = test::true_relative_residual(A, b, x);
  s.seconds = rep.seconds;
  s.setup_seconds = rep.setup_seconds;
  CHECK(rep.preconditioner.rfind(to_string(pc.kind), 0) == 0);  // the kind (a summary may follow)
  return s;
}

void print_hierarchy(const char* name, const HostAmg<double>& M) {
  std::printf("  %s: %s, set-up %.3f s\n", name, M.summary().c_str(), M.info().setup_seconds);
}

}  // namespace

TEST_CASE("AMG set-up: transpose, SpGEMM and sum against dense products") {
  for (unsigned seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    const auto A = random_sparse(37, 23, 0.15, seed), B = random_sparse(23, 41, 0.2, seed + 10);
    const auto C = amg::multiply(A, B);
    REQUIRE(sorted_csr(C));
    const auto dA = dense(A), dB = dense(B), dC = dense(C);
    double err = 0;
    for (index_t i = 0; i < 37; ++i)
      for (index_t j = 0; j < 41; ++j) {
        double s = 0;
        for (index_t k = 0; k < 23; ++k) s += dA[std::size_t(i) * 23 + k] * dB[std::size_t(k) * 41 + j];
        err = std::max(err, std::abs(s - dC[std::size_t(i) * 41 + j]));
      }
    CHECK(err <= 1e-14);
    const auto T = amg::transpose(A);
    REQUIRE(sorted_csr(T));
    CHECK(T.rows == 23);
    CHECK(T.cols == 37);
    const auto dT = dense(T);
    for (index_t i = 0; i < 37; ++i)
      for (index_t j = 0; j < 23; ++j) CHECK(dT[std::size_t(j) * 37 + i] == dA[std::size_t(i) * 23 + j]);
    const auto A2 = random_sparse(37, 23, 0.3, seed + 20);
    const auto S = amg::add(2.0, A, -0.5, A2);
    REQUIRE(sorted_csr(S));
    const auto dS = dense(S), dA2 = dense(A2);
    for (std::size_t k = 0; k < dS.size(); ++k) CHECK(dS[k] == 2.0 * dA[k] - 0.5 * dA2[k]);
  }
  // Empty rows and an empty product.
  amg::Csr<double> Z;
  Z.rows = 3;
  Z.cols = 4;
  Z.row_ptr.assign(4, 0);
  const auto ZB = amg::multiply(Z, random_sparse(4, 5, 0.5, 9));
  CHECK(ZB.rows == 3);
  CHECK(ZB.nnz() == 0);
  CHECK(sorted_csr(ZB));
}

TEST_CASE("AMG set-up: strength, aggregation and the tentative prolongator") {
  // 2-D Laplacian 12x12: every off-diagonal entry is strong (1 >= 0.08·4), every node aggregated.
  const auto A = amg::to_csr(laplacian_2d(12, 12));
  const amg::Graph G = amg::strength_graph(A, 1, 0.08);
  CHECK(G.nodes == 144);
  CHECK(G.col_idx.size() == std::size_t(A.nnz() - 144));  // all but the diagonal
  const amg::Aggregation agg = amg::aggregate(G);
  CHECK(agg.isolated == 0);
  CHECK(agg.count > 0);
  CHECK(agg.roots > 0);
  CHECK(agg.count >= agg.roots);
  for (index_t g : agg.of_node) CHECK((g >= 0 && g < agg.count));
  // Pass-1 roots take whole neighbourhoods (5 nodes inside the grid), so aggregates are several
  // nodes large: far fewer aggregates than nodes.
  CHECK(agg.count * 3 <= 144);
  // A threshold above every ratio: no strong connections, every node isolated.
  const amg::Graph none = amg::strength_graph(A, 1, 0.3);
  CHECK(none.col_idx.empty());
  const amg::Aggregation agg0 = amg::aggregate(none);
  CHECK(agg0.count == 0);
  CHECK(agg0.isolated == 144);

  // P_tent has orthonormal columns (PᵀP = I), and P_tent·R reproduces B.
  for (int b : {1, 3}) {
    CAPTURE(b);
    const auto K = test::kron_laplacian_block(8, 9, b);  // 72 nodes of b unknowns
    const auto Ak = amg::to_csr(K);
    const amg::Aggregation ag = amg::aggregate(amg::strength_graph(Ak, b, 0.08));
    REQUIRE(ag.count > 0);
    std::vector<double> B(std::size_t(K.rows()) * b, 0.0);
    for (index_t i = 0; i < K.rows(); ++i) B[std::size_t(i) * b + std::size_t(i % b)] = 1.0;
    // A second-level-like near-nullspace too: mix the columns so they are dense and not orthogonal.
    std::vector<double> Bmix = B;
    for (index_t i = 0; i < K.rows(); ++i)
      for (int k = 0; k < b; ++k) Bmix[std::size_t(i) * b + k] += 0.3 * std::sin(double(i + 7 * k));
    for (const auto* Bp : {&B, &Bmix}) {
      const amg::Tentative t = amg::tentative_prolongator(ag, b, b, *Bp);
      REQUIRE(sorted_csr(t.P));
      CHECK(t.P.cols == ag.count * b);
      const auto PtP = dense(amg::multiply(amg::transpose(t.P), t.P));
      double err = 0;
      for (index_t i = 0; i < t.P.cols; ++i)
        for (index_t j = 0; j < t.P.cols; ++j) err = std::max(err, std::abs(PtP[std::size_t(i) * t.P.cols + j] - (i == j)));
      CHECK(err <= 1e-13);
      // P_tent · coarse_B = B
      const auto dP = dense(t.P);
      double rerr = 0;
      for (index_t i = 0; i < K.rows(); ++i)
        for (int k = 0; k < b; ++k) {
          double s = 0;
          for (index_t c = 0; c < t.P.cols; ++c) s += dP[std::size_t(i) * t.P.cols + c] * t.coarse_B[std::size_t(c) * b + k];
          rerr = std::max(rerr, std::abs(s - (*Bp)[std::size_t(i) * b + k]));
        }
      CHECK(rerr <= 1e-13);
    }
  }
}

TEST_CASE("AMG: the hierarchy's level sizes strictly decrease and its complexities are reported") {
  struct Case {
    std::string name;
    CsrMatrix<double> A;
    int b;
  };
  for (const Case& c : {Case{"laplacian_3d 32^3", laplacian_3d(32, 32, 32), 0},
                        Case{"diffusion_3d 24", diffusion_3d(24, 1, 1, 0.01, 1e4), 0},
                        Case{"bcsstk06", test::load("bcsstk06"), 3}}) {
    CAPTURE(c.name);
    const HostAmg<double> M(c.A, amg_options(c.b).amg);
    print_hierarchy(c.name.c_str(), M);
    const auto& L = M.levels();
    REQUIRE(L.size() >= 2);
    CHECK(L[0].rows == c.A.rows());
    CHECK(L[0].nnz == c.A.nnz());
    double nnz = 0, rows = 0;
    for (std::size_t l = 0; l < L.size(); ++l) {
      CAPTURE(l);
      if (l > 0) CHECK(L[l].rows < L[l - 1].rows);
      if (l + 1 < L.size()) CHECK(double(L[l].rows) >= 1.2 * double(L[l + 1].rows));
      nnz += double(L[l].nnz);
      rows += double(L[l].rows);
    }
    CHECK(L.back().rows <= 200);
    CHECK(M.info().coarse_direct);
    CHECK_FALSE(M.info().stalled);
    CHECK(M.info().operator_complexity == doctest::Approx(nnz / double(c.A.nnz())).epsilon(1e-12));
    CHECK(M.info().grid_complexity == doctest::Approx(rows / double(c.A.rows())).epsilon(1e-12));
    CHECK(M.info().operator_complexity > 1.0);
    CHECK(M.info().operator_complexity < 3.0);
    CHECK(M.summary().find("operator complexity") != std::string::npos);
    CHECK(M.summary().find("grid complexity") != std::string::npos);
  }
}

TEST_CASE("AMG: M^-1 is symmetric and positive definite") {
  struct Case {
    std::string name;
    CsrMatrix<double> A;
    PrecondOptions o;
  };
  std::vector<Case> cases;
  auto with = [](int b, AmgSmoother s, int degree, int sweeps, index_t coarse) {
    PrecondOptions o = amg_options(b);
    o.amg.smoother = s;
    o.amg.smoother_degree = degree;
    o.amg.sweeps = sweeps;
    o.amg.coarse_size = coarse;
    return o;
  };
  cases.push_back({"laplacian_3d 12^3", laplacian_3d(12, 12, 12), with(0, AmgSmoother::Chebyshev, 2, 1, 20)});
  cases.push_back({"laplacian_3d 12^3 l1", laplacian_3d(12, 12, 12), with(0, AmgSmoother::L1Jacobi, 2, 2, 20)});
  cases.push_back({"diffusion_3d 12", diffusion_3d(12, 1, 1, 0.01, 1e4), with(0, AmgSmoother::Chebyshev, 3, 1, 20)});
  cases.push_back({"bcsstk06 b 3", test::load("bcsstk06"), with(3, AmgSmoother::Chebyshev, 2, 1, 30)});
  cases.push_back({"bcsstk01 b 6", test::load("bcsstk01"), with(0, AmgSmoother::Chebyshev, 2, 1, 12)});
  cases.push_back({"1138_bus", test::load("1138_bus"), with(0, AmgSmoother::Chebyshev, 4, 1, 50)});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const HostAmg<double> M(c.A, c.o.amg);
    REQUIRE(M.levels().size() >= 2);
    const test::ApplyFn f = [&](const double* r, double* z) { M.apply(r, z); };
    test::check_symmetric_positive_random(c.A.rows(), f, 1e-12);
    if (c.A.rows() <= 500) {  // and densely
      const auto D = test::dense_operator(c.A.rows(), f);
      CHECK(test::asymmetry(D, c.A.rows()) <= 1e-12);
      CHECK(test::positive_definite(D, c.A.rows()));
    }
  }
}

TEST_CASE("AMG: PCG iterations against Jacobi-CG on 3-D problems and bcsstk06 (true residuals checked)") {
  struct Run {
    index_t jacobi = 0, amg = 0;
  };
  auto run = [](const char* name, const CsrMatrix<double>& A, const PrecondOptions& pc) {
    const Solved j = pcg(A, test::precond(PrecondKind::Jacobi));
    const auto t0 = std::chrono::steady_clock::now();
    const HostAmg<double> M(A, pc.amg);
    const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Solved a = pcg(A, pc);
    std::printf("  %-26s n %7d  jacobi-cg %5d it  amg-cg %4d it (%.2fx)  true relres %.1e / %.1e  "
                "amg set-up %.3f s, solve %.3f s\n    %s\n",
                name, int(A.rows()), int(j.iterations), int(a.iterations), double(a.iterations) / double(j.iterations),
                j.true_residual, a.true_residual, setup, a.seconds, M.summary().c_str());
    CHECK(j.converged);
    CHECK(a.converged);
    CHECK(j.true_residual <= 1e-8);
    CHECK(a.true_residual <= 1e-8);
    return Run{j.iterations, a.iterations};
  };
  const Run l16 = run("laplacian_3d 16^3", laplacian_3d(16, 16, 16), amg_options());
  const Run l32 = run("laplacian_3d 32^3", laplacian_3d(32, 32, 32), amg_options());
  CHECK(double(l32.amg) <= 1.3 * double(l16.amg));  // nearly independent of the mesh size
  CHECK(double(l32.amg) <= 0.2 * double(l32.jacobi));
  const Run dif = run("diffusion_3d(24,1,1,.01,1e4)", diffusion_3d(24, 1, 1, 0.01, 1e4), amg_options());
  CHECK(double(dif.amg) <= 0.15 * double(dif.jacobi));
  const auto K = test::load("bcsstk06");
  CHECK(detect_block_size(K) == 1);  // no node pattern to detect: b = 3 (x, y, z) given
  const Run k3 = run("bcsstk06 (b 3)", K, amg_options(3));
  CHECK(k3.amg < k3.jacobi);
  const Run k1 = run("bcsstk06 (b 1)", K, amg_options(1));
  (void)k1;
  PrecondOptions l1 = amg_options();
  l1.amg.smoother = AmgSmoother::L1Jacobi;
  const Run l32l1 = run("laplacian_3d 32^3 l1-jacobi", laplacian_3d(32, 32, 32), l1);
  CHECK(double(l32l1.amg) <= 0.5 * double(l32l1.jacobi));
}

TEST_CASE("AMG: two set-ups give bitwise equal results of apply and apply_block") {
  AmgOptions l1 = amg_options(3).amg;
  l1.smoother = AmgSmoother::L1Jacobi;
  for (const auto& [name, A, o] :
       {std::tuple{std::string("diffusion_3d 16"), diffusion_3d(16, 1, 1, 0.01, 1e4), amg_options(0).amg},
        std::tuple{std::string("bcsstk06 (node blocks)"), test::load("bcsstk06"), amg_options(3).amg},
        std::tuple{std::string("bcsstk06 l1-jacobi"), test::load("bcsstk06"), l1}}) {
    CAPTURE(name);
    const HostAmg<double> M1(A, o), M2(A, o);
    CHECK((M1.info().levels[0].smoother_block > 1) == (name == "bcsstk06 (node blocks)"));
    REQUIRE(M1.levels().size() == M2.levels().size());
    for (std::size_t l = 0; l < M1.levels().size(); ++l) {
      CHECK(M1.levels()[l].rows == M2.levels()[l].rows);
      CHECK(M1.levels()[l].nnz == M2.levels()[l].nnz);
      CHECK(M1.levels()[l].omega == M2.levels()[l].omega);
    }
    const auto r = test::random_vector(std::size_t(A.rows()));
    std::vector<double> z1(r.size()), z2(r.size()), z3(r.size());
    M1.apply(r.data(), z1.data());
    M2.apply(r.data(), z2.data());
    M1.apply(r.data(), z3.data());  // and applying again
    CHECK(std::memcmp(z1.data(), z2.data(), z1.size() * sizeof(double)) == 0);
    CHECK(std::memcmp(z1.data(), z3.data(), z1.size() * sizeof(double)) == 0);
    // apply_block: each column the bits of apply; the padding untouched. 17 and 20 columns
    // cross the V-cycle's chunk of 16 columns a row pass; packed and padded blocks.
    for (const auto& [N, ldr, ldz] : {std::tuple<index_t, index_t, index_t>{3, 4, 5}, {17, 17, 17}, {20, 21, 23}}) {
      CAPTURE(N);
      const test::BlockColumns b =
          test::apply_block_columns<double>(M2, M1, N, test::random_vector(std::size_t(A.rows()) * ldr), ldr, ldz);
      CHECK(b.same);
      CHECK(b.padding);
    }
    M2.apply(r.data(), z2.data());  // one column again after the wide blocks
    CHECK(std::memcmp(z1.data(), z2.data(), z1.size() * sizeof(double)) == 0);
  }
}

TEST_CASE("AMG: float hierarchy agrees with double") {
  const auto A = laplacian_3d(12, 12, 12);
  std::vector<float> vf(A.values().data(), A.values().data() + A.nnz());
  const CsrMatrix<float> Af(A.rows(), A.cols(), A.row_ptr(), A.col_idx(),
                            [&] {
                              CsrMatrix<float>::ValueView v("v", std::size_t(A.nnz()));
                              for (index_t k = 0; k < A.nnz(); ++k) v(k) = vf[std::size_t(k)];
                              return v;
                            }());
  PrecondOptions o = amg_options();
  o.amg.coarse_size = 20;
  const HostAmg<double> Md(A, o.amg);
  const HostAmg<float> Mf(Af, o.amg);
  REQUIRE(Md.levels().size() == Mf.levels().size());
  const auto r = test::random_vector(std::size_t(A.rows()));
  std::vector<float> rf(r.begin(), r.end()), zf(r.size());
  std::vector<double> zd(r.size());
  Md.apply(r.data(), zd.data());
  Mf.apply(rf.data(), zf.data());
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < r.size(); ++i) err = std::max(err, std::abs(zf[i] - zd[i])), scale = std::max(scale, std::abs(zd[i]));
  CHECK(err <= 1e-4 * scale);
  // The float V-cycle on a block: each column the bits of a single float apply.
  const index_t N = 18;
  std::vector<float> R(std::size_t(A.rows()) * N);
  for (std::size_t q = 0; q < R.size(); ++q) R[q] = float(r[q % r.size()]) * float(1 + q % 5);
  CHECK(test::apply_block_columns<float>(Mf, Mf, N, R, N, N).same);
}

TEST_CASE("AMG: where coarsening stalls or levels run out, it stops there and says so") {
  // A diagonal matrix has no strong connections: no aggregates, coarsening stalls at once.
  const index_t n = 500;
  std::vector<index_t> I(n);
  std::vector<double> V(n);
  for (index_t i = 0; i < n; ++i) I[i] = i, V[i] = 1.0 + i % 7;
  const auto D = CsrMatrix<double>::from_triplets(n, n, I, I, V);
  const HostAmg<double> M(D, amg_options().amg);
  CHECK(M.info().stalled);
  CHECK(M.levels().size() == 1);
  CHECK(M.info().coarse_direct);  // 500 rows: factored densely
  CHECK(M.info().stop_reason.find("stalled at level 0") != std::string::npos);
  CHECK(M.summary().find("stalled") != std::string::npos);
  std::vector<double> r(n), z(n);
  for (index_t i = 0; i < n; ++i) r[i] = std::sin(double(i));
  M.apply(r.data(), z.data());
  for (index_t i = 0; i < n; ++i) CHECK(z[i] == doctest::Approx(r[i] / V[i]).epsilon(1e-13));
  // max_levels = 1 on a large matrix: the only level is smoothed, not factored; still SPD.
  const auto A = laplacian_3d(14, 14, 14);  // 2744 rows > kAmgMaxDenseRows
  PrecondOptions o = amg_options();
  o.amg.max_levels = 1;
  const HostAmg<double> S(A, o.amg);
  CHECK(S.levels().size() == 1);
  CHECK_FALSE(S.info().coarse_direct);
  CHECK(S.info().stop_reason.find("max_levels") != std::string::npos);
  CHECK(S.summary().find("by smoothing") != std::string::npos);
  test::check_symmetric_positive_random(A.rows(), [&](const double* x, double* y) { S.apply(x, y); }, 1e-12, 3);
  // max_levels = 2: two levels, the coarse one factored.
  o.amg.max_levels = 2;
  const HostAmg<double> T2(A, o.amg);
  CHECK(T2.levels().size() == 2);
  CHECK(T2.info().coarse_direct);
  CHECK(pcg(A, o).converged);
}

TEST_CASE("AMG: bad input is an InputError naming the option or the level") {
  const auto A = test::load("bcsstk06");
  auto bad = [&](auto&& change, const char* text) {
    CAPTURE(text);
    PrecondOptions o = amg_options(3);
    change(o.amg);
    CHECK_THROWS_WITH_AS(validate(o), doctest::Contains(text), InputError);
    CHECK_THROWS_WITH_AS(make_host_preconditioner(A, o), doctest::Contains(text), InputError);
    CHECK_THROWS_WITH_AS(HostAmg<double>(A, o.amg), doctest::Contains(text), InputError);
  };
  bad([](AmgOptions& a) { a.theta = -0.1; }, "amg.theta = -0.1");
  bad([](AmgOptions& a) { a.theta = std::nan(""); }, "amg.theta = nan");
  bad([](AmgOptions& a) { a.max_levels = 0; }, "amg.max_levels = 0");
  bad([](AmgOptions& a) { a.coarse_size = 0; }, "amg.coarse_size = 0");
  bad([](AmgOptions& a) { a.coarse_size = 5000; }, "amg.coarse_size = 5000");
  bad([](AmgOptions& a) { a.smoother = AmgSmoother(7); }, "amg.smoother = 7");
  bad([](AmgOptions& a) { a.smoother_degree = 0; }, "amg.smoother_degree = 0");
  bad([](AmgOptions& a) { a.smoother_degree = -2; }, "amg.smoother_degree = -2");
  bad([](AmgOptions& a) { a.theta = -1.5; }, "amg.theta = -1.5");
  bad([](AmgOptions& a) { a.smoother_ratio = 1; }, "amg.smoother_ratio = 1");
  bad([](AmgOptions& a) { a.sweeps = 0; }, "amg.sweeps = 0");
  bad([](AmgOptions& a) { a.block_size = 9; }, "amg.block_size = 9");
  bad([](AmgOptions& a) { a.prolongation_weight = 2; }, "amg.prolongation_weight = 2");
  bad([](AmgOptions& a) { a.filter = AmgFilter(7); }, "amg.filter = 7");
  // A block size that does not divide n (420 rows).
  PrecondOptions o = amg_options(8);
  CHECK_THROWS_WITH_AS(make_host_preconditioner(A, o), doctest::Contains("block size 8 does not divide n = 420"), InputError);

  // Not SPD, found on the coarsest level: a 2x2 indefinite matrix is its own coarsest level.
  const auto I2 = CsrMatrix<double>::from_triplets(2, 2, {0, 0, 1, 1}, {0, 1, 0, 1}, {1.0, 2.0, 2.0, 1.0});
  CHECK_THROWS_WITH_AS(HostAmg<double>(I2, AmgOptions{}),
                       doctest::Contains("coarse matrix of level 0 (2 rows, level 0 = A) is not positive semidefinite: "
                                         "Cholesky pivot 2 = -3 (negative: indefinite)"),
                       InputError);
  // An indefinite 1-D operator tridiag(-1.5, 2, -1.5) (positive diagonal, negative smooth modes):
  // the Galerkin coarse matrix is not positive definite.
  const auto T = test::tridiagonal(400, 2.0, -1.5);
  PrecondOptions to = amg_options();
  to.amg.coarse_size = 20;
  CHECK_THROWS_WITH_AS(make_host_preconditioner(T, to), doctest::Contains("coarse matrix"), InputError);
  CHECK_THROWS_WITH_AS(make_host_preconditioner(T, to), doctest::Contains("A is not symmetric positive definite"),
                       InputError);
  // A zero diagonal entry on level 0.
  const auto Z = CsrMatrix<double>::from_triplets(2, 2, {0, 1}, {0, 0}, {1.0, 1.0});
  CHECK_THROWS_WITH_AS(HostAmg<double>(Z, AmgOptions{}), doctest::Contains("AMG: diagonal entry A(2,2)"), InputError);
  // The GPU factory makes DeviceAmg, which needs A's SpMV plan (checked before any device call).
  CHECK_THROWS_WITH_AS(make_device_preconditioner(A, SpmvPlan<double>{}, amg_options(3)),
                       doctest::Contains("AMG: the SpMV plan was not made for this matrix"), InputError);
}

namespace {
// θ and the degree as the rule picks them, and what it says.
struct Auto {
  AmgOptions o;
  AmgAutoChoice c;
};
Auto resolved(const CsrMatrix<double>& A, const AmgOptions& o = {}) {
  Auto r;
  r.o = amg::resolve_auto(A, o, &r.c);
  return r;
}
}  // namespace

TEST_CASE("AMG: theta and the smoother degree chosen from the sign pattern (kAmgAuto)") {
  CHECK(AmgOptions{}.theta == kAmgAuto);
  CHECK(AmgOptions{}.smoother_degree == kAmgAuto);
  SUBCASE("M-matrices keep 0.08 and degree 2") {
    for (const auto& A : {laplacian_3d(12, 12, 12), diffusion_3d(12, 1, 1, 0.01, 1e4), test::load("gr_30_30")}) {
      CHECK(amg::off_diagonal_signs(A).positive == 0);
      CHECK(amg::off_diagonal_signs(A).off_diagonal > 0);
      const Auto r = resolved(A);
      CHECK(r.o.theta == kAmgThetaMMatrix);
      CHECK(r.o.smoother_degree == kAmgDegreeMMatrix);
      CHECK_FALSE(r.c.structural);
      CHECK(r.c.positive_fraction == 0);
      CHECK(r.c.isolated_fraction == -1);  // not counted
      const HostAmg<double> M(A, AmgOptions{});
      CHECK(M.options().theta == 0.08);
      CHECK(M.options().smoother_degree == 2);
      CHECK(M.info().levels[0].theta == 0.08);
      CHECK(M.summary().find("theta 0.08 (auto: 0% positive off-diagonals), chebyshev 2 (auto), filter on (auto), "
                             "b") != std::string::npos);
    }
  }
  SUBCASE("bcsstk06 (over half its off-diagonals positive) takes 0.25 and degree 3") {
    const auto A = test::load("bcsstk06");
    const amg::SignCount s = amg::off_diagonal_signs(A);
    CHECK(s.off_diagonal == 7440);
    CHECK(s.positive == 3986);  // 54%
    const Auto r = resolved(A);
    CHECK(r.c.structural);
    CHECK(r.c.strong_theta);
    CHECK(r.o.theta == kAmgThetaStructural);
    CHECK(r.o.smoother_degree == kAmgDegreeStructural);
    // The isolated count is strength_graph's at 0.25 (b = 1: no node pattern detected).
    const amg::Graph G = amg::strength_graph(amg::to_csr(A), 1, 0.25);
    index_t iso = 0;
    for (index_t I = 0; I < G.nodes; ++I) iso += G.row_ptr[std::size_t(I) + 1] == G.row_ptr[std::size_t(I)];
    CHECK(amg::isolated_nodes(A, 1, 0.25) == iso);
    CHECK(r.c.isolated_fraction == doctest::Approx(double(iso) / 420));
    CHECK(r.c.isolated_fraction <= kAmgStructuralMaxIsolated);
    AmgOptions first;  // the first hierarchy: augmenting its near-nullspace retries θ (test_amg_augment.cpp)
    first.adaptive_cycles = 0;
    const HostAmg<double> M(A, first);
    CHECK(M.info().levels[0].theta == 0.25);
    CHECK(M.info().auto_choice.structural);
    CHECK(M.summary().find("theta 0.25 (auto: 54% positive off-diagonals), chebyshev 3 (auto)") !=
          std::string::npos);
    // Explicit options win, field by field; nothing is counted when neither field is auto.
    AmgOptions t;
    t.theta = 0.08;
    Auto x = resolved(A, t);
    CHECK(x.o.theta == 0.08);
    CHECK(x.o.smoother_degree == 3);
    CHECK_FALSE(x.c.theta);
    CHECK(x.c.degree);
    CHECK(x.c.isolated_fraction == -1);
    AmgOptions d;
    d.smoother_degree = 2;
    x = resolved(A, d);
    CHECK(x.o.theta == 0.25);
    CHECK(x.o.smoother_degree == 2);
    t.adaptive_cycles = 0;
    AmgOptions both = t;
    both.smoother_degree = 5;
    both.smoother_ratio = 10;
    both.filter = AmgFilter::Off;
    x = resolved(A, both);
    CHECK(x.o.theta == 0.08);
    CHECK(x.o.smoother_degree == 5);
    CHECK(x.c.positive_fraction == -1);
    const HostAmg<double> E(A, both);
    CHECK(E.info().levels[0].theta == 0.08);
    CHECK(E.summary().find("theta 0.08, chebyshev 5, filter off, b") != std::string::npos);  // no "auto"
    const HostAmg<double> Ea(A, [&] { AmgOptions a = both; a.adaptive_cycles = kAmgAuto; return a; }());
    CHECK(Ea.summary().find("theta 0.08, chebyshev 5, filter off, near-nullspace of 2 vectors from 10 V-cycles "
                            "(auto: structural") != std::string::npos);
    const HostAmg<double> D(A, t);
    CHECK(D.summary().find("theta 0.08, chebyshev 3 (auto: 54% positive off-diagonals), ratio 30 (auto), b") !=
          std::string::npos);
    AmgOptions l1;
    l1.smoother = AmgSmoother::L1Jacobi;
    x = resolved(A, l1);
    CHECK(x.c.theta);
    CHECK_FALSE(x.c.degree);  // the degree is not used
    CHECK(x.o.theta == 0.25);
  }
  SUBCASE("hexahedral elasticity: degree 3, but 0.25 would isolate every node, so 0.08") {
    std::vector<double> xyz;
    const auto A = elasticity_3d(6, 6, 6, 0.3, &xyz);
    const Auto r = resolved(A);
    CHECK(r.c.structural);
    CHECK(r.c.positive_fraction > 0.3);
    CHECK(r.c.isolated_fraction == 1.0);
    CHECK_FALSE(r.c.strong_theta);
    CHECK(r.o.theta == kAmgThetaMMatrix);
    CHECK(r.o.smoother_degree == kAmgDegreeStructural);
    AmgOptions c;
    c.coordinates = xyz;
    c.coordinate_dim = 3;
    const HostAmg<double> M(A, c);
    CHECK(M.info().levels.size() >= 2);  // it coarsens
    CAPTURE(M.summary());
    CHECK(M.summary().find("theta 0.08 (auto: ") != std::string::npos);
    CHECK(M.summary().find("% positive off-diagonals; theta 0.25 would isolate 100% of the nodes), "
                           "chebyshev 3 (auto)") != std::string::npos);
  }
  SUBCASE("the counts are memoised per values version") {
    auto A = test::load("bcsstk06");
    const amg::SignCount s = amg::off_diagonal_signs(A);
    std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
    const auto& rp = A.row_ptr();
    const auto& ci = A.col_idx();
    for (index_t i = 0; i < A.rows(); ++i)
      for (index_t k = rp(i); k < rp(i + 1); ++k)
        if (ci(k) != i) v[std::size_t(k)] = -std::abs(v[std::size_t(k)]);
    A.set_values(v);
    CHECK(amg::off_diagonal_signs(A).positive == 0);
    CHECK(amg::off_diagonal_signs(A).off_diagonal == s.off_diagonal);
    CHECK_FALSE(resolved(A).c.structural);
  }
}

TEST_CASE("AMG: the auto defaults take fewer PCG iterations on structural matrices (true residuals checked)") {
  // Before: 0.08 and degree 2 for every matrix. rtol 1e-8, b_i = 1 + 0.5 sin(0.37 i).
  PrecondOptions before = amg_options();
  before.amg.theta = 0.08;
  before.amg.smoother_degree = 2;
  for (const char* name : {"bcsstk06", "bcsstm12"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const Solved b = pcg(A, before), a = pcg(A, amg_options());
    std::printf("  %-10s theta 0.08, degree 2: %4d it; auto: %4d it (true relres %.1e)\n", name, int(b.iterations),
                int(a.iterations), a.true_residual);
    CHECK(a.converged);
    CHECK(a.true_residual <= 1e-8);
    CHECK(double(a.iterations) <= 0.8 * double(b.iterations));  // measured: 127 -> 52, 167 -> 123
  }
  // On an M-matrix the auto defaults are the old ones: the same iterations.
  const auto L = laplacian_3d(16, 16, 16);
  CHECK(pcg(L, before).iterations == pcg(L, amg_options()).iterations);
}

TEST_CASE("AMG: names, options and the factory") {
  CHECK(parse_precond("amg") == PrecondKind::Amg);
  CHECK(std::string(to_string(PrecondKind::Amg)) == "amg");
  CHECK(std::string(to_string(AmgSmoother::L1Jacobi)) == "l1-jacobi");
  CHECK(describe(amg_options()) == "amg(theta auto, chebyshev auto, sweeps 1, coarse 200, b auto)");
  PrecondOptions o = amg_options(3);
  o.amg.smoother = AmgSmoother::L1Jacobi;
  o.amg.max_levels = 4;
  CHECK(describe(o) == "amg(theta auto, l1-jacobi, sweeps 1, coarse 200, b 3, levels 4)");
  PrecondOptions e = amg_options();
  e.amg.theta = 0.08;
  e.amg.smoother_degree = 2;
  CHECK(describe(e) == "amg(theta 0.08, chebyshev 2, sweeps 1, coarse 200, b auto)");
  e.amg.filter = AmgFilter::Off;
  CHECK(describe(e) == "amg(theta 0.08, chebyshev 2, sweeps 1, coarse 200, b auto, filter off)");
  CHECK(std::string(to_string(AmgFilter::Auto)) == "auto");
  const auto A = test::load("bcsstk06");
  const auto M = make_host_preconditioner(A, amg_options(3));
  REQUIRE(M);
  CHECK(M->kind() == PrecondKind::Amg);
  CHECK(M->space() == MemorySpace::Host);
  CHECK(M->inverse_diagonal() == nullptr);
  CHECK(M->matches(A));
  CHECK_FALSE(M->matches(test::load("bcsstk01")));
  CHECK(M->summary().rfind("amg(", 0) == 0);
  CHECK(M->summary().find("b 3") != std::string::npos);
  const auto J = make_host_preconditioner(A, test::precond(PrecondKind::Jacobi));
  CHECK(J->summary() == "jacobi");
}

TEST_CASE("krysp solve --precond amg --backend host: end to end") {
  const std::string cli = KRYSP_CLI_PATH;
  if (!std::ifstream(cli).good()) {
    MESSAGE("krysp program not built (", cli, "): skipped");
    return;
  }
  const std::string data = KRYSP_TEST_DATA;
  const std::string log = (std::filesystem::temp_directory_path() / "krysp_amg_cli_test.log").string();
  auto run = [&](const std::string& a) {
    const int rc = std::system((cli + " solve " + a + " > " + log + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  auto output = [&] {  // what the last run printed
    std::ifstream in(log);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  CHECK(run(data + "/bcsstk06.mtx --precond amg --backend host") == 0);
  const std::string text = output();
  CAPTURE(text);
  CHECK(text.find("amg(") != std::string::npos);
  CHECK(text.find("converged") != std::string::npos);
  CHECK(run(data + "/bcsstk06.mtx --precond amg --backend host --nrhs 3") == 0);  // block CG
  CHECK(run(data + "/bcsstk06.mtx --precond amg --backend host --amg-filter on") == 0);
  {
    const std::string t1 = output();
    CAPTURE(t1);
    CHECK(t1.find("filter on, b 1") != std::string::npos);
  }
  CHECK(run(data + "/bcsstk06.mtx --precond amg --backend host --amg-filter maybe") == 2);
  // bcsstm12 (b 3 detected, coupled node blocks): the node-block smoother by default, points when off.
  CHECK(run(data + "/bcsstm12.mtx --precond amg --backend host") == 0);
  {
    const std::string t3 = output();
    CAPTURE(t3);
    CHECK(t3.find("ratio 30 (auto), near-nullspace kept (3 V-cycles on 6 vectors") != std::string::npos);
    CHECK(t3.find("), smoother on 3x3 node blocks") != std::string::npos);
  }
  CHECK(run(data + "/bcsstm12.mtx --precond amg --backend host --amg-block-smoother off --amg-ratio 10") == 0);
  {
    const std::string t4 = output();
    CAPTURE(t4);
    CHECK(t4.find("point smoother") != std::string::npos);
    CHECK(t4.find("node blocks") == std::string::npos);
  }
  CHECK(run(data + "/bcsstm12.mtx --precond amg --backend host --amg-block-smoother maybe") == 2);
  // A matrix and its nodes' coordinates (nodes × 3, row-major) as `krysp solve` reads them.
  const auto dir = std::filesystem::temp_directory_path();
  auto write_problem = [&](const std::string& name, const CsrMatrix<double>& A, const std::vector<double>& xyz) {
    io::write_matrix_market((dir / (name + ".mtx")).string(), A);
    const index_t nodes = index_t(xyz.size() / 3);
    std::vector<double> colmajor(xyz.size());
    for (index_t i = 0; i < nodes; ++i)
      for (index_t d = 0; d < 3; ++d) colmajor[std::size_t(d) * nodes + i] = xyz[std::size_t(i) * 3 + d];
    io::write_dense_matrix_market((dir / (name + "_xyz.mtx")).string(), nodes, 3, colmajor.data());
  };
  // Elasticity with its node coordinates: the hierarchy takes six rigid-body modes a node.
  std::vector<double> xyz;
  const auto E = elasticity_3d(4, 4, 4, 0.3, &xyz);
  write_problem("krysp_amg_elasticity", E, xyz);
  const index_t nodes = E.rows() / 3;
  const std::string mtx = (dir / "krysp_amg_elasticity.mtx").string();
  const std::string crd = (dir / "krysp_amg_elasticity_xyz.mtx").string();
  CHECK(run(mtx + " --precond amg --backend host --coordinates " + crd) == 0);
  {
    const std::string t2 = output();
    CAPTURE(t2);
    CHECK(t2.find("b 3") != std::string::npos);
    CHECK(t2.find("rows " + std::to_string(E.rows()) + "/") != std::string::npos);
  }
  CHECK(run(mtx + " --precond amg --backend host --coordinates " + data + "/bcsstk06.mtx") == 2);  // not nodes × 3
  // A shell: six unknowns a node, three coordinates. The elasticity matrix's coordinates fit it
  // neither with 3 unknowns a node nor with 6.
  std::vector<double> sxyz;
  const auto S = shell_cylinder(4, 3, 1e-2, 0.3, &sxyz);
  write_problem("krysp_amg_shell", S, sxyz);
  const std::string shell = (dir / "krysp_amg_shell.mtx").string(), scrd = (dir / "krysp_amg_shell_xyz.mtx").string();
  CHECK(run(shell + " --precond amg --backend host --coordinates " + scrd) == 0);
  {
    const std::string t5 = output();
    CAPTURE(t5);
    CHECK(t5.find("rigid-body modes, ") != std::string::npos);
    CHECK(t5.find(", b 6, ") != std::string::npos);
  }
  CHECK(run(shell + " --precond amg --backend host --coordinates " + crd) == 2);
  {
    const std::string t6 = output();
    CAPTURE(t6);
    CHECK(t6.find("give " + std::to_string(3 * nodes) + " unknowns (" + std::to_string(6 * nodes) +
                  " with rotations), but the matrix has " + std::to_string(S.rows())) != std::string::npos);
  }
  std::remove(shell.c_str());
  std::remove(scrd.c_str());
  std::remove(mtx.c_str());
  std::remove(crd.c_str());
  std::remove(log.c_str());
}

TEST_CASE("AMG: rigid-body modes are in the kernel of the elasticity operator's interior rows") {
  std::vector<double> xyz;
  const auto A = elasticity_3d(4, 3, 3, 0.3, &xyz);
  const index_t n = A.rows(), nx = 4;
  REQUIRE(xyz.size() == std::size_t(n));  // 3 coordinates and 3 unknowns per node
  const std::vector<double> B = amg::rigid_body_modes(xyz, 3, n);
  double scale = 0;
  for (index_t k = 0; k < A.nnz(); ++k) scale = std::max(scale, std::abs(A.values()(k)));
  for (int mode = 0; mode < 6; ++mode) {
    CAPTURE(mode);
    std::vector<double> v(static_cast<std::size_t>(n)), Av(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) v[i] = B[std::size_t(i) * 6 + std::size_t(mode)];
    A.multiply_host(v.data(), Av.data());
    double interior = 0, next_to_clamp = 0;
    for (index_t i = 0; i < n; ++i) {
      const index_t node = i / 3, x = node % nx + 1;  // x = 1 touches the clamped face x = 0
      double& worst = x >= 2 ? interior : next_to_clamp;
      worst = std::max(worst, std::abs(Av[i]));
    }
    CHECK(interior <= 1e-11 * scale);  // a rigid motion has no strain
    CHECK(next_to_clamp > 1e-3 * scale);    // the clamp resists it
  }
  CHECK_THROWS_AS(amg::rigid_body_modes(xyz, 3, n + 3), InputError);
  CHECK_THROWS_AS(amg::rigid_body_modes(xyz, 4, n), InputError);
}

TEST_CASE("AMG set-up: K > b near-nullspace vectors, zero columns for small aggregates") {
  // 3 nodes of 2 unknowns, 3 modes: aggregate 0 holds nodes 0 and 1 (4 rows), aggregate 1 node 2
  // alone (2 rows, fewer than 3 modes: its third column is zero).
  amg::Aggregation agg;
  agg.count = 2;
  agg.of_node = {0, 0, 1};
  const std::vector<double> xy{0, 0, 1, 0, 0, 1};
  const std::vector<double> B = amg::rigid_body_modes(xy, 2, 6);
  const amg::Tentative t = amg::tentative_prolongator(agg, 2, 3, B);
  REQUIRE(t.P.rows == 6);
  REQUIRE(t.P.cols == 6);
  const std::vector<double> P = dense(t.P);  // row-major 6 × 6
  for (index_t a = 0; a < 6; ++a)
    for (index_t c = 0; c < 6; ++c) {
      double dot = 0;
      for (index_t r = 0; r < 6; ++r) dot += P[std::size_t(r) * 6 + a] * P[std::size_t(r) * 6 + c];
      const bool zero_column = a == 5 || c == 5;  // aggregate 1's third mode
      CHECK(std::abs(dot - (a == c && !zero_column ? 1.0 : 0.0)) <= 1e-14);
    }
  // The coarse matrix's empty rows get a unit diagonal and nothing else.
  amg::Csr<double> E;
  E.rows = E.cols = 3;
  E.row_ptr = {0, 2, 2, 4};
  E.col_idx = {0, 2, 0, 2};
  E.values = {4, 1, 1, 5};
  const amg::Csr<double> F = amg::unit_diagonal_on_empty_rows(E);
  CHECK(F.row_ptr == std::vector<index_t>{0, 2, 3, 5});
  CHECK(F.col_idx == std::vector<index_t>{0, 2, 1, 0, 2});
  CHECK(F.values == std::vector<double>{4, 1, 1, 1, 5});
}

TEST_CASE("AMG: rigid-body modes from coordinates on 3-D elasticity (true residuals checked)") {
  PrecondOptions unit = amg_options(3), rigid = amg_options(0);
  unit.amg.adaptive_cycles = 0;  // the unit vectors as they are (augmented: test_amg_augment.cpp)
  index_t last = 0;
  for (index_t m : {8, 16}) {
    CAPTURE(m);
    std::vector<double> xyz;
    const auto A = elasticity_3d(m, m, m, 0.3, &xyz);
    rigid.amg.coordinates = xyz;
    rigid.amg.coordinate_dim = 3;
    const Solved j = pcg(A, test::precond(PrecondKind::Jacobi));
    const Solved u = pcg(A, unit);
    const Solved r = pcg(A, rigid);
    const HostAmg<double> M(A, rigid.amg);
    std::printf("  elasticity_3d %2d^3 n %6d: jacobi %4d it, amg unit vectors %3d it, rigid-body modes %3d it\n"
                "    %s\n",
                int(m), int(A.rows()), int(j.iterations), int(u.iterations), int(r.iterations), M.summary().c_str());
    CHECK(u.converged);
    CHECK(r.converged);
    CHECK(r.true_residual <= 1e-8);
    CHECK(u.true_residual <= 1e-8);
    // The modes the unit vectors miss; measured 12/18 at 8³ and 13/24 at 16³ with the node-block
    // smoother (the point smoother's unit vectors took more).
    CHECK(double(r.iterations) <= 0.7 * double(u.iterations));
    CHECK(M.levels()[1].rows % 6 == 0);                         // six coarse unknowns an aggregate
    CHECK(M.levels()[1].block_size == 6);
    if (last > 0) CHECK(double(r.iterations) <= 1.3 * double(last));  // nearly mesh-independent
    last = r.iterations;
    const test::ApplyFn f = [&](const double* x, double* z) { M.apply(x, z); };
    test::check_symmetric_positive_random(A.rows(), f, 1e-12);
  }
  // Bad coordinates: an InputError naming what is wrong.
  std::vector<double> xyz;
  const auto A = elasticity_3d(3, 3, 3, 0.3, &xyz);
  AmgOptions o;
  o.coordinates = xyz;
  o.coordinate_dim = 4;
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("coordinate_dim = 4"), InputError);
  o.coordinate_dim = 3;
  o.coordinates.pop_back();
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("not a positive multiple of 3"), InputError);
  o.coordinates = xyz;
  o.coordinates.resize(o.coordinates.size() - 3);
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("the matrix has"), InputError);
  o.coordinates = xyz;
  o.coordinates[4] = std::nan("");
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("coordinate 2 of node 2"), InputError);
  o.coordinates = xyz;
  o.block_size = 2;
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("3 unknowns per node"), InputError);
}

TEST_CASE("AMG: a values change redoes only the numbers (aggregates and patterns kept)") {
  const auto A1 = diffusion_3d(16, 1, 1, 0.01, 1e4), A2 = diffusion_3d(16, 1, 1, 0.01, 1e2);
  REQUIRE(A1.fingerprint() == A2.fingerprint());  // same structure, other values
  const AmgOptions o = amg_options().amg;
  HostAmg<double> M(A1, o);
  CHECK(M.levels()[0].filtered > 0);  // the filter (auto) is on: a re-set-up reuses its kept entries
  const index_t n = A1.rows();
  const std::vector<double> r = test::random_vector(static_cast<std::size_t>(n));
  std::vector<double> z0(static_cast<std::size_t>(n)), z1(static_cast<std::size_t>(n));
  M.apply(r.data(), z0.data());
  // The numeric phase on the same values gives the full set-up's hierarchy, up to the λ
  // estimates: its Lanczos starts from the set-up's Ritz vectors and settles in fewer steps.
  const std::vector<AmgLevelInfo> before = M.levels();
  CHECK(M.update_values(A1));
  M.apply(r.data(), z1.data());
  double d = 0, m = 0;
  for (std::size_t i = 0; i < z0.size(); ++i) d = std::max(d, std::abs(z1[i] - z0[i])), m = std::max(m, std::abs(z0[i]));
  CHECK(d <= 1e-2 * m);
  int cold_steps = 0, warm_steps = 0;
  for (std::size_t l = 0; l < before.size(); ++l) {
    CAPTURE(l);
    const double lc = before[l].lambda_estimate, lw = M.levels()[l].lambda_estimate;
    CHECK(std::abs(lw - lc) <= 2 * kAmgLanczosSettleTol * lc);
    cold_steps += before[l].lanczos_steps;
    warm_steps += M.levels()[l].lanczos_steps;
  }
  CHECK(warm_steps < cold_steps);
  {  // the same calls give the same bits
    HostAmg<double> M2(A1, o);
    CHECK(M2.update_values(A1));
    std::vector<double> z2(static_cast<std::size_t>(n));
    M2.apply(r.data(), z2.data());
    CHECK(std::memcmp(z1.data(), z2.data(), z1.size() * sizeof(double)) == 0);
  }
  CHECK(M.info().resetups == 1);
  CHECK(M.info().resetup_seconds > 0);
  CHECK(M.summary().find("numeric re-set-up") != std::string::npos);
  // New values: the kept aggregates still make a good SPD preconditioner for them.
  CHECK(M.update_values(A2));
  CHECK(M.info().resetups == 2);
  const test::ApplyFn f = [&](const double* x, double* y) { M.apply(x, y); };
  test::check_symmetric_positive_random(n, f, 1e-12);
  const HostAmg<double> fresh(A2, o);
  REQUIRE(M.levels().size() == fresh.levels().size());
  std::vector<double> b(static_cast<std::size_t>(n), 1.0), x;
  SolveOptions so;
  so.backend = Backend::Host;
  so.precond = amg_options();
  so.cg.rtol = 1e-8;
  CgSolver solver(A1, so);
  const SolveReport first = solver.solve(b, x);
  solver.update_values(std::vector<double>(A2.values().data(), A2.values().data() + A2.nnz()));
  x.clear();
  const SolveReport second = solver.solve(b, x);
  CAPTURE(second.preconditioner);
  CHECK(second.converged());
  CHECK(test::true_relative_residual(A2, b, x) <= 1e-8);
  CHECK(second.preconditioner.find("numeric re-set-up") != std::string::npos);
  const Solved again = pcg(A2, so.precond);  // a full set-up on the new values
  CHECK(double(second.iterations) <= 1.5 * double(again.iterations));
  std::printf("  re-set-up after a values change (jump 1e4 -> 1e2), diffusion_3d 16: %d iterations (full set-up: "
              "%d); %s\n",
              int(second.iterations), int(again.iterations), second.preconditioner.c_str());
  (void)first;
  // Another structure is refused.
  CHECK_THROWS_WITH_AS(M.update_values(laplacian_2d(64, 64)), doctest::Contains("structure"), InputError);
  // The re-set-up's cost against the full set-up's (printed: a benchmark, not a test).
  for (const auto& P : {laplacian_3d(32, 32, 32), diffusion_3d(24, 1, 1, 0.01, 1e4)}) {
    HostAmg<double> H(P, o);
    H.update_values(P);
    std::printf("  n %6d: full set-up %.3f s, numeric re-set-up %.3f s (%.0f%%)\n", int(P.rows()),
                H.info().setup_seconds, H.info().resetup_seconds, 100 * H.info().resetup_seconds / H.info().setup_seconds);
  }
}

TEST_CASE("AMG: the filtered matrix of the prolongator smoothing") {
  SUBCASE("kept entries, lumping that keeps A_F·b = A·b, a diagonal that would not be positive") {
    // Row 0-2: an anisotropic chain (0.01 is weak both ways); rows 3-4: a soft node (diagonal 1)
    // next to a stiff one (1e4): their coupling is weak by |a_ij| >= θ·sqrt(a_ii·a_jj) but most of
    // row 3, so row 3 keeps it and row 4 drops it.
    const std::vector<index_t> I = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4};
    const std::vector<index_t> J = {0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 3, 4};
    const std::vector<double> V = {4, -1, -0.01, -1, 4, -1, -0.01, -1, 4, 1, -0.5, -0.5, 1e4};
    const amg::Csr<double> A = amg::to_csr(CsrMatrix<double>::from_triplets(5, 5, I, J, V));
    const std::vector<std::uint8_t> keep = amg::filter_entries(A, 0.08);
    CHECK(keep == std::vector<std::uint8_t>{1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1});
    const std::vector<double> b = {1.0, 2.0, 0.5, 1.0, 3.0};
    index_t dropped = 0;
    const amg::Csr<double> F = amg::filtered_matrix(A, keep, b, &dropped);
    CHECK(dropped == 3);
    CHECK(F.nnz() == A.nnz() - 3);
    CHECK(sorted_csr(F));
    const std::vector<double> a = dense(A), f = dense(F);
    for (index_t i = 0; i < 5; ++i) {
      double ab = 0, fb = 0;
      for (index_t j = 0; j < 5; ++j) {
        ab += a[std::size_t(i) * 5 + j] * b[std::size_t(j)];
        fb += f[std::size_t(i) * 5 + j] * b[std::size_t(j)];
      }
      CHECK(fb == doctest::Approx(ab).epsilon(1e-14));
    }
    CHECK(f[0] == doctest::Approx(4 - 0.01 * 0.5));  // a_00 + a_02·b_2/b_0
    CHECK(f[4 * 5 + 4] == doctest::Approx(1e4 - 0.5 / 3));
    // A weak entry weighted by a large b_j would make the diagonal negative: a_ii stays.
    const std::vector<double> big = {1.0, 2.0, 1000.0, 1.0, 3.0};
    const amg::Csr<double> G = amg::filtered_matrix(A, keep, big);
    CHECK(dense(G)[0] == 4.0);
    CHECK(dense(G)[2 * 5 + 2] == doctest::Approx(4 - 0.01 * 1.0 / 1000));
  }
  SUBCASE("random media: the coarse stencils stay narrow, the iterations do not grow") {
    // A fifth of the cells 1e4 stiffer, x-coupling 100x: unfiltered, P spreads along the weak y
    // and z couplings and the coarse levels fill in (docs/amg.md, "The filtered matrix").
    const auto A = diffusion_3d_random(24, 100, 1, 1, 1e4, 0.2, 1);
    PrecondOptions on = amg_options(), off = amg_options();
    off.amg.filter = AmgFilter::Off;
    const HostAmg<double> Mon(A, on.amg), Moff(A, off.amg);
    print_hierarchy("filter on ", Mon);
    print_hierarchy("filter off", Moff);
    CHECK(Mon.options().filter == AmgFilter::On);
    CHECK(Mon.levels()[0].filtered > 0);
    CHECK(Moff.levels()[0].filtered == 0);
    CHECK(Mon.info().operator_complexity <= 2.5);
    CHECK(Moff.info().operator_complexity >= 5);
    const Solved a = pcg(A, on), b = pcg(A, off);
    std::printf("  random media 24^3: filter on %d it, off %d it\n", int(a.iterations), int(b.iterations));
    CHECK(a.converged);
    CHECK(a.true_residual <= 1e-8);
    CHECK(a.iterations <= b.iterations + 2);
  }
  SUBCASE("a Laplacian keeps every entry on level 0: the same first coarse level") {
    const auto A = laplacian_3d(16, 16, 16);
    AmgOptions off;
    off.filter = AmgFilter::Off;
    const HostAmg<double> Mon(A, AmgOptions{}), Moff(A, off);
    CHECK(Mon.levels()[0].filtered == 0);
    CHECK(Mon.levels()[1].nnz == Moff.levels()[1].nnz);
    const auto don = Mon.level_data(), doff = Moff.level_data();
    const amg::Csr<double>& P1 = *don[0].P;
    const amg::Csr<double>& P2 = *doff[0].P;
    CHECK(P1.col_idx == P2.col_idx);
    CHECK(P1.values == P2.values);  // bitwise: A_F = A, no lumping
  }
  SUBCASE("auto: on for M-matrix-like A with one unknown per node; on needs b = 1") {
    const auto L = laplacian_3d(12, 12, 12);
    const Auto r = resolved(L);
    CHECK(r.c.filter);
    CHECK(r.o.filter == AmgFilter::On);
    const Auto s = resolved(test::load("bcsstk06"));
    CHECK(s.o.filter == AmgFilter::Off);  // structural
    AmgOptions b2;
    b2.block_size = 2;
    const Auto t = resolved(L, b2);
    CHECK(t.o.filter == AmgFilter::Off);
    CHECK(t.c.filter_block_size == 2);
    const HostAmg<double> M(L, b2);
    CHECK(M.summary().find("filter off (auto: b 2)") != std::string::npos);
    b2.filter = AmgFilter::On;
    CHECK_THROWS_WITH_AS(HostAmg<double>(L, b2), doctest::Contains("amg.filter on needs one unknown per node"),
                         InputError);
    AmgOptions explicit_off;
    explicit_off.filter = AmgFilter::Off;
    CHECK(resolved(L, explicit_off).o.filter == AmgFilter::Off);
    CHECK_FALSE(resolved(L, explicit_off).c.filter);
  }
}
