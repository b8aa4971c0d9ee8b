// Matrices on device memory the caller owns (CsrMatrix::from_device_pointers): no device copy,
// the same answers as the host-built matrix through every solver, value updates through the
// caller's array, and refusal of invalid structures and of pointers that are not device memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
/// CSR arrays in device memory, as a simulation code would hold them.
struct CallerArrays {
  DeviceArray<index_t> row_ptr, col_idx;
  DeviceArray<double> values;
  explicit CallerArrays(const CsrMatrix<double>& A)
      : row_ptr(A.row_ptr().extent(0)), col_idx(std::size_t(A.nnz())), values(std::size_t(A.nnz())) {
    row_ptr.upload(A.row_ptr().data(), row_ptr.size());
    col_idx.upload(A.col_idx().data(), col_idx.size());
    values.upload(A.values().data(), values.size());
  }
  CsrMatrix<double> wrap(const CsrMatrix<double>& A) {
    return CsrMatrix<double>::from_device_pointers(A.rows(), A.cols(), A.nnz(), row_ptr.data(), col_idx.data(),
                                                   values.data());
  }
};

/// CSR arrays given as std::vectors, uploaded as they are (possibly invalid).
struct RawArrays {
  DeviceArray<index_t> row_ptr, col_idx;
  DeviceArray<double> values;
  RawArrays(const std::vector<index_t>& rp, const std::vector<index_t>& ci)
      : row_ptr(rp.size()), col_idx(ci.size()), values(ci.size()) {
    row_ptr.upload(rp.data(), rp.size());
    col_idx.upload(ci.data(), ci.size());
    const std::vector<double> v(ci.size(), 1.0);
    values.upload(v.data(), v.size());
  }
};

/// The message of the InputError `f` throws ("" when it throws none).
template <class F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}
double max_abs(const std::vector<double>& a) {
  double d = 0;
  for (double v : a) d = std::max(d, std::abs(v));
  return d;
}
}  // namespace

TEST_CASE("Device matrix GPU: no device copy; views, fingerprint and host snapshot match the host-built matrix") {
  const auto A = test::load("bcsstk06");
  CallerArrays arr(A);
  const auto D = arr.wrap(A);
  CHECK(D.is_device_borrowed());
  CHECK_FALSE(A.is_device_borrowed());
  CHECK(D.has_device_copy());
  const CsrView<double> dv = D.device_view();
  CHECK(dv.row_ptr == arr.row_ptr.data());  // the caller's memory itself
  CHECK(dv.col_idx == arr.col_idx.data());
  CHECK(dv.values == arr.values.data());
  CHECK(dv.rows == A.rows());
  CHECK(dv.nnz == A.nnz());
  CHECK(D.fingerprint() == A.fingerprint());
  for (index_t k = 0; k < A.nnz(); ++k) REQUIRE(D.values()(k) == A.values()(k));  // downloaded snapshot
  const auto x = test::random_vector(std::size_t(A.cols()));
  std::vector<double> ya(std::size_t(A.rows())), yd(ya.size());
  A.multiply_host(x.data(), ya.data());
  D.multiply_host(x.data(), yd.data());
  CHECK(ya == yd);
  const auto copy = D;  // copies share the caller's arrays too
  CHECK(copy.device_view().values == arr.values.data());
}

TEST_CASE("Device matrix GPU: CG gives the host-built matrix's solution on every path") {
  for (const char* name : {"bcsstk06", "1138_bus", "gr_30_30"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    CallerArrays arr(A);
    const auto D = arr.wrap(A);
    const auto b = test::random_vector(std::size_t(A.rows()));
    for (PrecondKind pk : {PrecondKind::None, PrecondKind::Jacobi, PrecondKind::Chebyshev}) {
      CAPTURE(to_string(pk));
      SolveOptions o;
      o.backend = Backend::Cuda;
      o.precond.kind = pk;
      o.cg.max_iters = 20000;
      std::vector<double> xa, xd;
      const auto ra = solve(A, b, xa, o);
      const auto rd = solve(D, b, xd, o);
      REQUIRE(ra.converged());
      REQUIRE(rd.converged());
      CHECK(rd.iterations == ra.iterations);  // same plan, same values, deterministic reductions
      CHECK(max_abs_diff(xa, xd) <= 1e-12 * max_abs(xa));
      CHECK(test::true_relative_residual(A, b, xd) <= 1e-7);
    }
    // The host backend works on the downloaded snapshot (documented), same answer as the host matrix.
    SolveOptions h;
    h.backend = Backend::Host;
    h.cg.max_iters = 20000;
    std::vector<double> xh, xdh;
    const auto rh = solve(A, b, xh, h);
    const auto rdh = solve(D, b, xdh, h);
    REQUIRE(rdh.converged());
    CHECK(rdh.iterations == rh.iterations);
    CHECK(xdh == xh);
    CHECK(D.device_view().values == arr.values.data());  // still no copy after all of it
  }
}

TEST_CASE("Device matrix GPU: block CG and LOBPCG give the host-built matrix's answers") {
  const auto A = laplacian_2d(24, 20);
  CallerArrays arr(A);
  const auto D = arr.wrap(A);
  const index_t s = 3;
  const auto B = test::random_vector(std::size_t(A.rows()) * s);
  SolveOptions o;
  o.backend = Backend::Cuda;
  std::vector<double> Xa, Xd;
  const auto ra = solve_block(A, B, s, Xa, o);
  const auto rd = solve_block(D, B, s, Xd, o);
  REQUIRE(ra.converged());
  REQUIRE(rd.converged());
  CHECK(max_abs_diff(Xa, Xd) <= 1e-12 * max_abs(Xa));

  EigOptions e;
  e.backend = Backend::Cuda;
  e.lobpcg.k = 4;
  e.lobpcg.tol = 1e-8;
  e.lobpcg.convergence = EigConvergence::Norm;  // as written: this case compares two memory layouts
  const auto ea = eigensolve(A, nullptr, e);
  const auto ed = eigensolve(D, nullptr, e);
  REQUIRE(ea.converged());
  REQUIRE(ed.converged());
  for (index_t i = 0; i < 4; ++i) CHECK(ed.eigenvalues[i] == doctest::Approx(ea.eigenvalues[i]).epsilon(1e-10));
  // Generalized problem with B on caller memory too.
  const auto K = test::load("bcsstk07"), M = test::load("bcsstm07");
  CallerArrays ak(K), am(M);
  const auto Kd = ak.wrap(K), Md = am.wrap(M);
  e.lobpcg.k = 3;
  e.lobpcg.tol = 1e-6;
  e.lobpcg.max_iters = 5000;
  e.precond.kind = PrecondKind::Chebyshev;  // set up from the host snapshot of K's values
  const auto ga = eigensolve(K, &M, e);
  const auto gd = eigensolve(Kd, &Md, e);
  REQUIRE(ga.converged());
  CHECK(gd.status == ga.status);
  CHECK(gd.iterations == ga.iterations);
  for (std::size_t i = 0; i < ga.eigenvalues.size(); ++i)
    CHECK(gd.eigenvalues[i] == doctest::Approx(ga.eigenvalues[i]).epsilon(1e-8));
}

TEST_CASE("Device matrix GPU: values written into the caller's array + notify are seen by the next solve") {
  const auto A = test::load("bcsstk06");
  CallerArrays arr(A);
  auto D = arr.wrap(A);
  SolveOptions o;
  o.backend = Backend::Cuda;
  o.precond.kind = PrecondKind::Jacobi;
  const auto plans_before = SpmvPlan<double>::plans_created();
  CgSolver solver(D, o);
  const auto b = test::random_vector(std::size_t(A.rows()));
  std::vector<double> x1;
  REQUIRE(solver.solve(b, x1).converged());
  CHECK(solver.preconditioner_setups() == 1);

  // The caller scales its values on the device (here: an upload into its own array), then says so.
  std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
  for (index_t i = 0; i < A.rows(); ++i)  // 3·A plus a non-uniform diagonal shift: Jacobi must follow
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k)
      v[k] = 3 * v[k] + (A.col_idx()(k) == i ? 1e3 * (1 + i % 7) : 0.0);
  const auto version = D.values_version();
  arr.values.upload(v.data(), v.size());
  D.notify_values_changed();
  CHECK(D.values_version() == version + 1);
  CHECK(D.values()(0) == v[0]);  // the host snapshot was refreshed
  std::vector<double> x2;
  const auto r2 = solver.solve(b, x2);
  REQUIRE(r2.converged());
  CHECK(solver.preconditioner_setups() == 2);       // the Jacobi diagonal was rebuilt...
  CHECK(SpmvPlan<double>::plans_created() - plans_before == 1);  // ...the plan was not
  CHECK(solver.plan()->matches(D));
  const auto A2 = CsrMatrix<double>::from_arrays(A.rows(), A.cols(),
                                                 std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
                                                 std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), v);
  CHECK(test::true_relative_residual(A2, b, x2) <= 1e-7);
  // The same solve with a fresh solver on the new values: identical (the preconditioner is current).
  std::vector<double> x3;
  const auto r3 = CgSolver(A2, o).solve(b, x3);
  CHECK(r3.iterations == r2.iterations);
  CHECK(max_abs_diff(x2, x3) <= 1e-12 * max_abs(x3));

  // set_values writes into the caller's array.
  std::vector<double> w(v.size());
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = 2 * v[k];
  solver.update_values(w);
  std::vector<double> back(w.size());
  arr.values.download(back.data(), back.size());
  CHECK(back == w);
  CHECK(solver.preconditioner_setups() == 3);
  std::vector<double> x4;
  REQUIRE(solver.solve(b, x4).converged());
  CHECK(solver.preconditioner_setups() == 3);  // no change since: no new setup
  for (std::size_t i = 0; i < x4.size(); i += 41) CHECK(x4[i] == doctest::Approx(x2[i] / 2).epsilon(1e-6));
}

TEST_CASE("Device matrix GPU: plans made on caller memory survive value updates and refuse other structures") {
  const auto A = test::load("bcsstk06");
  CallerArrays arr(A);
  auto D = arr.wrap(A);
  const SpmvPlan<double> plan(D);
  const SpmmPlan<double> mplan(D, 4);
  const auto spmv_before = SpmvPlan<double>::plans_created();
  const auto spmm_before = SpmmPlan<double>::plans_created();
  const std::size_t n = std::size_t(A.rows());
  const auto x = test::random_vector(n * 4);
  DeviceArray<double> dx(n * 4), dy(n * 4);
  dx.upload(x.data(), x.size());
  std::vector<double> y(n * 4), ref(n * 4), col(n), out(n);

  std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::cos(double(k)) * v[k];
  arr.values.upload(v.data(), v.size());
  D.notify_values_changed();
  CHECK(plan.matches(D));
  CHECK(mplan.matches(D, 4));
  plan.apply(D, 1.0, dx.data(), 0.0, dy.data());
  dy.download(y.data(), n);
  D.multiply_host(x.data(), ref.data());  // host snapshot of the new values
  // other summation order than the host: compare against the scale of y
  CHECK(max_abs_diff(std::vector<double>(y.begin(), y.begin() + n), std::vector<double>(ref.begin(), ref.begin() + n)) <=
        1e-10 * max_abs(ref));
  mplan.apply(D, 1.0, dx.data(), 4, 0.0, dy.data(), 4);
  dy.download(y.data(), y.size());
  for (index_t j = 0; j < 4; ++j) {
    for (std::size_t i = 0; i < n; ++i) col[i] = x[i * 4 + j];
    D.multiply_host(col.data(), out.data());
    double err = 0;
    for (std::size_t i = 0; i < n; ++i) err = std::max(err, std::abs(y[i * 4 + j] - out[i]));
    CHECK(err <= 1e-10 * max_abs(out));
  }
  CHECK(SpmvPlan<double>::plans_created() == spmv_before);
  CHECK(SpmmPlan<double>::plans_created() == spmm_before);
  // A host-built matrix of the same structure is accepted by the plan; another structure is not.
  CHECK(plan.matches(A));
  CHECK(mplan.matches(A, 4));
  const auto lap = laplacian_2d(20, 21);  // n = 420, surely another structure
  CHECK_FALSE(plan.matches(lap));
  CHECK_THROWS_AS(plan.apply(lap, 1.0, dx.data(), 0.0, dy.data()), InputError);
  CHECK_THROWS_AS(mplan.apply(lap, 1.0, dx.data(), 4, 0.0, dy.data(), 4), InputError);
}

TEST_CASE("Device matrix GPU: invalid structures are refused with the row and value named") {
  // 3 × 3, valid: row_ptr {0, 2, 3, 5}, col_idx {0, 2, 1, 0, 2}
  auto make = [](const std::vector<index_t>& rp, const std::vector<index_t>& ci, index_t rows = 3, index_t cols = 3) {
    RawArrays r(rp, ci);
    return input_error([&] {
      (void)CsrMatrix<double>::from_device_pointers(rows, cols, index_t(ci.size()), r.row_ptr.data(), r.col_idx.data(),
                                                    r.values.data());
    });
  };
  CHECK(make({0, 2, 3, 5}, {0, 2, 1, 0, 2}).empty());  // the valid one is accepted
  const std::string decreasing = make({0, 3, 2, 5}, {0, 1, 2, 0, 2});
  CHECK(decreasing.find("from_device_pointers") != std::string::npos);
  CHECK(decreasing.find("decreases at row 1") != std::string::npos);
  CHECK(make({0, 2, 3, 5}, {0, 3, 1, 0, 2}).find("column index 3 in row 0") != std::string::npos);
  CHECK(make({0, 2, 3, 5}, {2, 0, 1, 0, 2}).find("not strictly increasing") != std::string::npos);
  CHECK(make({0, 2, 2, 4}, {0, 2, 0, 2}).empty());  // an empty row is fine
  CHECK(make({1, 2, 3, 5}, {0, 2, 1, 0, 2}).find("row_ptr[0] = 1") != std::string::npos);
  CHECK(make({0, 2, 3, 4}, {0, 2, 1, 0, 2}).find("row_ptr[rows] = 4") != std::string::npos);
  CHECK(make({0, 2, 3, 5}, {0, 2, 1, 0, 2}, 3, 2).find("outside [0, 2)") != std::string::npos);
  CHECK(make({0, 2, 3, 5}, {0, 2, 1, 0, 2}, -1, 3).find("negative dimensions") != std::string::npos);
}

TEST_CASE("Device matrix GPU: null and host pointers are refused") {
  const auto A = laplacian_2d(4, 4);
  CallerArrays arr(A);
  const index_t n = A.rows(), nnz = A.nnz();
  std::vector<index_t> hrp(A.row_ptr().data(), A.row_ptr().data() + n + 1);
  std::vector<index_t> hci(A.col_idx().data(), A.col_idx().data() + nnz);
  std::vector<double> hva(A.values().data(), A.values().data() + nnz);
  auto wrap = [&](const index_t* rp, const index_t* ci, double* va) {
    return input_error([&] { (void)CsrMatrix<double>::from_device_pointers(n, n, nnz, rp, ci, va); });
  };
  CHECK(wrap(arr.row_ptr.data(), arr.col_idx.data(), arr.values.data()).empty());
  CHECK(wrap(nullptr, arr.col_idx.data(), arr.values.data()).find("d_row_ptr is null") != std::string::npos);
  CHECK(wrap(arr.row_ptr.data(), nullptr, arr.values.data()).find("d_col_idx is null") != std::string::npos);
  CHECK(wrap(arr.row_ptr.data(), arr.col_idx.data(), nullptr).find("d_values is null") != std::string::npos);
  const std::string host_rp = wrap(hrp.data(), arr.col_idx.data(), arr.values.data());
  CHECK(host_rp.find("d_row_ptr") != std::string::npos);
  CHECK(host_rp.find("not device memory") != std::string::npos);
  CHECK(wrap(arr.row_ptr.data(), hci.data(), arr.values.data()).find("d_col_idx") != std::string::npos);
  CHECK(wrap(arr.row_ptr.data(), arr.col_idx.data(), hva.data()).find("d_values") != std::string::npos);
  CHECK(memory_kind(hva.data()) == MemoryKind::Unregistered);
  int dev = -1;
  CHECK(memory_kind(arr.values.data(), &dev) == MemoryKind::Device);
  CHECK(dev == cuda_current_device());
}

TEST_CASE("Device matrix GPU: set_values_device on host-built and device-pointer matrices") {
  const auto A0 = test::load("bcsstk06");
  std::vector<double> w(A0.values().data(), A0.values().data() + A0.nnz());
  for (auto& e : w) e *= 4;
  DeviceArray<double> dw(w.size());
  dw.upload(w.data(), w.size());

  // Host-built: the device mirror and the host arrays both take the new values; the plan stays.
  auto A = test::load("bcsstk06");
  SolveOptions o;
  o.backend = Backend::Cuda;
  CgSolver solver(A, o);
  const auto b = test::random_vector(std::size_t(A.rows()));
  std::vector<double> x1, x2;
  REQUIRE(solver.solve(b, x1).converged());
  A.set_values_device(dw.data());
  for (index_t k = 0; k < A.nnz(); ++k) REQUIRE(A.values()(k) == w[k]);
  std::vector<double> back(w.size());
  detail::copy_to_host(back.data(), A.device_view().values, back.size() * sizeof(double));
  CHECK(back == w);
  REQUIRE(solver.solve(b, x2).converged());
  CHECK(solver.preconditioner_setups() == 2);
  for (std::size_t i = 0; i < x2.size(); i += 41) CHECK(x2[i] == doctest::Approx(x1[i] / 4).epsilon(1e-6));

  // Device-pointer matrix: copied into the caller's array; the host snapshot follows.
  CallerArrays arr(A0);
  auto D = arr.wrap(A0);
  D.set_values_device(dw.data());
  arr.values.download(back.data(), back.size());
  CHECK(back == w);
  CHECK(D.values()(0) == w[0]);
  const auto version = D.values_version();
  D.set_values_device(arr.values.data());  // its own array: only declares the change
  CHECK(D.values_version() == version + 1);
  CHECK(input_error([&] { D.set_values_device(w.data()); }).find("d_src") != std::string::npos);  // host memory
}
