// SpMV kernels on the device against a host reference, in fp64 and fp32: every configuration
// (forced through SpmvPlanOptions), on the bundled SuiteSparse matrices and on the hard cases
// (empty rows, nnz = 0, n = 1, a dense row of 100k entries, rows longer than a block's share,
// rows aligned with tiles, power-law and banded matrices). Random x and y (never zeros), alpha and
// beta not 0 or 1, and beta = 0 with y full of NaN. Also: bitwise determinism, the plan's
// fingerprint check, value updates, tuning and its cache, and the device partition and statistics
// against their host references.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_partition.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "krysp/sparse/spmv_select.hpp"
#include "gpu/late_input.hpp"
#include "sparse_test_util.hpp"

using namespace krysp;
using test::convert;
using test::with_row_lengths;

namespace {

std::vector<SpmvConfig> all_configs() {
  std::vector<SpmvConfig> out;
  out.push_back({SpmvAlgorithm::RowSequential, 32, 0});
  for (int w : {2, 4, 8, 16, 32}) out.push_back({SpmvAlgorithm::RowSubwarp, w, 0});
  for (int b : {4, 8}) {
    for (int k : {4, 8, 16}) out.push_back({SpmvAlgorithm::NnzSequential, 32, k, b});
    for (int k : {4, 8, 16}) out.push_back({SpmvAlgorithm::NnzSegmented, 32, k, b});
  }
  return out;
}

struct Case {
  std::string name;
  CsrMatrix<double> A;
};

std::vector<Case> hard_cases() {
  std::vector<Case> cs;
  {
    std::vector<index_t> lens(3000, 0);  // leading, trailing and long runs of empty rows
    for (std::size_t i = 7; i + 9 < lens.size(); i += 61) lens[i] = index_t(1 + i % 17);
    for (std::size_t i = 1000; i < 1040; ++i) lens[i] = 3;
    cs.push_back({"empty rows", with_row_lengths(lens, 700, 1)});
  }
  cs.push_back({"nnz = 0", with_row_lengths(std::vector<index_t>(37, 0), 11, 2)});
  cs.push_back({"1 x 1", CsrMatrix<double>::from_arrays(1, 1, {0, 1}, {0}, {2.5})});
  cs.push_back({"1 x 1 empty", with_row_lengths({0}, 1, 3)});
  cs.push_back({"one dense row 1 x 100000", with_row_lengths({100000}, 100000, 4)});
  {
    std::vector<index_t> lens(2001);
    std::mt19937_64 rng(5);
    for (auto& l : lens) l = index_t(rng() % 6);
    lens[1000] = 100000;
    cs.push_back({"dense row of 100k among short rows", with_row_lengths(lens, 100000, 6)});
  }
  // A block's share of nonzeros is warps_per_block * 32 * k (at most 4096): rows far longer,
  // back to back, and around the exact multiples.
  cs.push_back({"rows longer than a block",
                with_row_lengths({3, 2100, 4999, 0, 700, 1, 2048, 2049, 0, 5, 4096, 4095, 12000, 8192, 8193, 2}, 12000,
                                 7)});
  cs.push_back({"rows aligned with tiles", with_row_lengths(std::vector<index_t>(300, 128), 400, 8)});
  cs.push_back({"rows aligned with blocks", with_row_lengths(std::vector<index_t>(40, 4096), 4096, 9)});
  cs.push_back({"power law", random_power_law(20000, 8, 5000, 10)});
  cs.push_back({"power law, short rows", random_power_law(30000, 2, 3000, 11)});
  cs.push_back({"banded", random_banded(30000, 6, 50, 12)});
  cs.push_back({"laplacian 2d", laplacian_2d(61, 70)});
  cs.push_back({"laplacian 3d", laplacian_3d(17, 19, 23)});
  cs.push_back({"wide rectangular", with_row_lengths(std::vector<index_t>(50, 37), 90000, 13)});
  return cs;
}

std::vector<std::string> data_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(KRYSP_TEST_DATA))
    if (e.path().extension() == ".mtx") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(n);
  for (auto& e : v) {
    double d = u(rng);
    if (d == 0) d = 0.5;  // never zeros
    e = T(d);
  }
  return v;
}

/// Checks y (device result) against a reference computed in long double from the same T inputs.
///
/// Tolerance per row i of length n_i:
///   |y_i − ref_i| <= c(n_i)·u·(Σ_k |alpha·a_ik·x_k| + |beta·y0_i|) + tiny,
///   c(n) = 4·ceil(log2(n + 1)) + 8,  u = eps(T)/2 (unit roundoff).
/// Why: each product is rounded once, alpha·s and beta·y and their sum once each (the "+8" covers
/// these few roundings, with room). The row sum itself is formed as short sequential runs joined by
/// shuffle trees and carries; with random-sign x (as here) its accumulated rounding behaves like a
/// random walk whose size relative to Σ|terms| stays far below log2(n)·u (the partial sums are
/// small next to Σ|terms|), so 4·log2(n) has ample margin. The worst-case bound (n−1)·u·Σ|terms|
/// would hold for any order but is far too loose to notice a lost or doubled entry in a long row;
/// this one notices one whenever its term exceeds c·u·Σ|terms| (every entry of the short rows, and
/// typical entries of the 100k-entry rows). `tiny` absorbs underflow.
template <class T>
void check_result(const CsrMatrix<T>& A, T alpha, const std::vector<T>& x, T beta, const std::vector<T>& y0,
                  const std::vector<T>& y, const std::string& what) {
  const double u = double(std::numeric_limits<T>::epsilon()) / 2;
  const double tiny = double(std::numeric_limits<T>::min()) * 16;
  for (index_t i = 0; i < A.rows(); ++i) {
    long double s = 0, mag = 0;
    const index_t b = A.row_ptr()(i), e = A.row_ptr()(i + 1);
    for (index_t k = b; k < e; ++k) {
      const long double t = (long double)A.values()(k) * (long double)x[A.col_idx()(k)];
      s += t;
      mag += std::fabs((long double)alpha * t);
    }
    const long double by = beta == T(0) ? 0.0L : (long double)beta * (long double)y0[i];
    const long double ref = (long double)alpha * s + by;
    mag += std::fabs(by);
    const int n = e - b;
    const double c = 4.0 * std::ceil(std::log2(double(n) + 1.0)) + 8.0;
    const double tol = c * u * double(mag) + tiny;
    const double err = std::fabs(double((long double)y[i] - ref));
    if (!(err <= tol)) {  // also catches NaN
      FAIL_CHECK(what, ": row ", i, " (length ", n, "): got ", double(y[i]), ", expected ", double(ref), ", error ",
                 err, " > tolerance ", tol);
      return;  // one message per matrix and kernel is enough
    }
  }
}

/// The fused y = A·x, xᵀy (apply_dot): y as apply() gives it (y starts as NaN: never read), the dot
/// against Σ x_i·y_i of that very y in long double, bitwise equal over two runs; refused when A is
/// not square.
///
/// Tolerance: c(n)·u·Σ|x_i·y_i| + tiny with u the unit roundoff of double (the dot is summed in
/// double whatever T is; products of two T values are exact in double for T = float), c(n) =
/// 4·ceil(log2(n + 1)) + 8, the same random-walk argument as check_result's. A row left out of
/// the sum, or counted twice, shows up as an error of |x_i·y_i|, far above it.
template <class T>
void check_fused_dot(const SpmvPlan<T>& plan, const CsrMatrix<T>& A, const DeviceArray<T>& dx, const std::vector<T>& x,
                     const std::string& what) {
  DeviceArray<double> d(2);
  DeviceArray<T> dy(std::max<std::size_t>(std::size_t(A.rows()), 1));
  if (A.rows() != A.cols()) {
    CHECK_THROWS_AS(plan.apply_dot(A, dx.data(), dy.data(), d.data()), InputError);
    return;
  }
  const std::size_t n = std::size_t(A.rows());
  const std::vector<T> nan_y(n, std::numeric_limits<T>::quiet_NaN());
  dy.upload(nan_y.data(), n);
  plan.apply_dot(A, dx.data(), dy.data(), d.data());
  std::vector<T> y(n);
  dy.download(y.data(), n);
  check_result(A, T(1), x, T(0), nan_y, y, what + " apply_dot");
  plan.apply_dot(A, dx.data(), dy.data(), d.data() + 1);
  double got[2] = {0, 0};
  d.download(got, 2);
  long double ref = 0, mag = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ref += (long double)x[i] * (long double)y[i];
    mag += std::fabs((long double)x[i] * (long double)y[i]);
  }
  const double u = std::numeric_limits<double>::epsilon() / 2;
  const double tol = (4.0 * std::ceil(std::log2(double(n) + 1.0)) + 8.0) * u * double(mag) + 1e-300;
  CHECK_MESSAGE(std::fabs(double((long double)got[0] - ref)) <= tol, what, ": fused dot ", got[0], ", expected ",
                double(ref), " (tolerance ", tol, ")");
  CHECK_MESSAGE(std::memcmp(&got[0], &got[1], sizeof(double)) == 0, what, ": two fused dots differ");
}

/// One kernel on one matrix: alpha/beta generic, then beta = 0 with NaN in y, then determinism.
template <class T>
void run_config(const CsrMatrix<T>& A, const SpmvConfig& c, const std::string& name, std::uint64_t seed,
                SpmvPlanOptions::Carry carry = SpmvPlanOptions::Carry::Auto) {
  const std::string what = name + " [" + c.to_string() + (std::is_same_v<T, double> ? ", double" : ", float") +
                           (carry == SpmvPlanOptions::Carry::FixUp ? ", fix-up]" : "]");
  SpmvPlanOptions opt;
  opt.force = true;
  opt.forced = c;
  opt.carry = carry;
  const SpmvPlan<T> plan(A, opt);
  REQUIRE(plan.config() == c);
  CHECK(plan.selection().source == SpmvSelection::Source::Forced);
  const std::size_t n = std::size_t(A.rows()), m = std::size_t(A.cols());
  const std::vector<T> x = random_vector<T>(m, seed), y0 = random_vector<T>(n, seed + 1);
  DeviceArray<T> dx(std::max<std::size_t>(m, 1)), dy(std::max<std::size_t>(n, 1));
  dx.upload(x.data(), m);
  std::vector<T> y(n), y2(n);

  const T alpha = T(1.375), beta = T(-0.6875);
  dy.upload(y0.data(), n);
  plan.apply(A, alpha, dx.data(), beta, dy.data());
  dy.download(y.data(), n);
  check_result(A, alpha, x, beta, y0, y, what + " alpha=1.375 beta=-0.6875");

  // Deterministic: the same inputs give bitwise the same output.
  dy.upload(y0.data(), n);
  plan.apply(A, alpha, dx.data(), beta, dy.data());
  dy.download(y2.data(), n);
  CHECK_MESSAGE(std::memcmp(y.data(), y2.data(), n * sizeof(T)) == 0, what, ": two runs differ");

  // beta = 0 never reads y: NaN in y must not show up.
  const std::vector<T> nan_y(n, std::numeric_limits<T>::quiet_NaN());
  dy.upload(nan_y.data(), n);
  plan.apply(A, T(-2.25), dx.data(), T(0), dy.data());
  dy.download(y.data(), n);
  check_result(A, T(-2.25), x, T(0), nan_y, y, what + " beta=0, y=NaN");

  check_fused_dot(plan, A, dx, x, what);
}

template <class T>
void run_all_configs(const CsrMatrix<double>& A64, const std::string& name, std::uint64_t seed) {
  const CsrMatrix<T> A = convert<T>(A64);
  A.device_view();
  for (const SpmvConfig& c : all_configs()) {
    run_config(A, c, name, seed);
    if (is_nnz_balanced(c.algorithm)) run_config(A, c, name, seed, SpmvPlanOptions::Carry::FixUp);
  }
}

}  // namespace

TEST_CASE("SpMV: every kernel on the bundled SuiteSparse matrices, fp64 and fp32") {
  const auto files = data_files();
  REQUIRE(!files.empty());
  std::uint64_t seed = 100;
  for (const std::string& f : files) {
    CAPTURE(f);
    const CsrMatrix<double> A = io::read_matrix_market<double>(f);
    run_all_configs<double>(A, f, seed);
    run_all_configs<float>(A, f, seed + 50);
    seed += 7;
  }
}

TEST_CASE("SpMV: every kernel on the hard cases, fp64 and fp32") {
  std::uint64_t seed = 500;
  for (const Case& c : hard_cases()) {
    CAPTURE(c.name);
    run_all_configs<double>(c.A, c.name, seed);
    run_all_configs<float>(c.A, c.name, seed + 50);
    seed += 7;
  }
}

TEST_CASE("SpMV: rule and tuned plans are correct too") {
  for (const Case& c : hard_cases()) {
    CAPTURE(c.name);
    const SpmvPlan<double> rule(c.A);
    CHECK(rule.config() == choose_spmv_rule(row_stats(c.A.host_view())));
    CHECK(rule.selection().source == SpmvSelection::Source::Rule);
    const std::size_t n = std::size_t(c.A.rows()), m = std::size_t(c.A.cols());
    const auto x = random_vector<double>(m, 7), y0 = random_vector<double>(n, 8);
    DeviceArray<double> dx(std::max<std::size_t>(m, 1)), dy(std::max<std::size_t>(n, 1));
    dx.upload(x.data(), m);
    dy.upload(y0.data(), n);
    rule.apply(c.A, 0.5, dx.data(), 1.5, dy.data());
    std::vector<double> y(n);
    dy.download(y.data(), n);
    check_result(c.A, 0.5, x, 1.5, y0, y, c.name + " [rule]");
  }
}

TEST_CASE("SpMV plan: device statistics and partition equal the host references") {
  for (const Case& c : hard_cases()) {
    CAPTURE(c.name);
    const CsrView<double> d = c.A.device_view();
    const RowStats hs = row_stats(c.A.host_view());
    const RowStats ds = detail::row_stats_device(d.row_ptr, d.rows, d.nnz);
    CHECK(hs.rows == ds.rows);
    CHECK(hs.nnz == ds.nnz);
    CHECK(hs.max_len == ds.max_len);
    CHECK(hs.empty_rows == ds.empty_rows);
    CHECK(hs.mean == ds.mean);  // bitwise: both from the same exact integer sums
    CHECK(hs.stddev == ds.stddev);
    for (int k : {4, 8, 16})
      for (int nw : {4, 8}) {
      const detail::NnzGeometry g = detail::nnz_geometry(c.A.nnz(), k, nw);
      if (g.num_tiles == 0) continue;
      DeviceArray<index_t> part(std::size_t(g.num_tiles) + 1), cin(std::size_t(g.num_blocks));
      DeviceArray<unsigned> any(1);
      any.zero();
      detail::nnz_partition_device(d.row_ptr, d.rows, d.nnz, g, part.data(), cin.data(), any.data());
      std::vector<index_t> hp(part.size()), hc(cin.size());
      unsigned hany = 7;
      part.download(hp.data(), hp.size());
      cin.download(hc.data(), hc.size());
      any.download(&hany, 1);
      CHECK(hp == detail::nnz_partition_host(c.A.row_ptr().data(), c.A.rows(), c.A.nnz(), g));
      const auto runs =
          detail::carry_runs(detail::block_carry_rows_host(c.A.row_ptr().data(), c.A.rows(), c.A.nnz(), g));
      CHECK(hc == detail::carry_in_counts(runs, g.num_blocks));
      CHECK(hany == (runs.empty() ? 0u : 1u));
    }
  }
}

TEST_CASE("SpMV plan: carries only when a row crosses a block; look-back on small, fix-up on large") {
  SpmvPlanOptions opt;
  opt.force = true;
  opt.forced = {SpmvAlgorithm::NnzSegmented, 32, 4};  // block share 4·32·4 = 512 nonzeros
  const auto aligned = with_row_lengths(std::vector<index_t>(100, 128), 300, 1);
  CHECK(std::string(SpmvPlan<double>(aligned, opt).carry_mode()) == "none");
  const auto split = with_row_lengths({100, 1000, 100}, 1000, 2);
  CHECK(std::string(SpmvPlan<double>(split, opt).carry_mode()) == "look-back");
  opt.carry = SpmvPlanOptions::Carry::FixUp;
  CHECK(std::string(SpmvPlan<double>(split, opt).carry_mode()) == "fix-up");
  opt.carry = SpmvPlanOptions::Carry::Auto;
  const auto big = random_banded(200000, 6, 20, 3);  // > kLookBackMaxNnz nonzeros
  REQUIRE(big.nnz() >= SpmvRuleParams{}.look_back_max_nnz);
  CHECK(std::string(SpmvPlan<double>(big, opt).carry_mode()) == "fix-up");
  opt.forced = {SpmvAlgorithm::RowSubwarp, 8, 0};
  CHECK(std::string(SpmvPlan<double>(split, opt).carry_mode()) == "none");
}

TEST_CASE("SpMV: many applies in a row stay correct and bitwise equal (look-back epochs, ticket reset)") {
  const CsrMatrix<double> A = with_row_lengths({3, 2100, 4999, 0, 700, 1, 2048, 2049, 0, 5, 4096, 12000, 2}, 12000, 21);
  for (int k : {4, 16})
    for (auto carry : {SpmvPlanOptions::Carry::LookBack, SpmvPlanOptions::Carry::FixUp}) {
    SpmvPlanOptions opt;
    opt.force = true;
    opt.forced = {SpmvAlgorithm::NnzSegmented, 32, k, k == 4 ? 8 : 4};
    opt.carry = carry;
    const SpmvPlan<double> plan(A, opt);
    REQUIRE(std::string(plan.carry_mode()) != "none");
    const std::size_t n = std::size_t(A.rows());
    const auto x = random_vector<double>(12000, 31), y0 = random_vector<double>(n, 32);
    DeviceArray<double> dx(12000), dy(n);
    dx.upload(x.data(), 12000);
    std::vector<double> first(n), y(n);
    for (int rep = 0; rep < 50; ++rep) {
      dy.upload(y0.data(), n);
      plan.apply(A, 0.75, dx.data(), -1.25, dy.data());
      dy.download(y.data(), n);
      if (rep == 0) {
        first = y;
        check_result(A, 0.75, x, -1.25, y0, y, "repeated applies");
      } else {
        REQUIRE(std::memcmp(first.data(), y.data(), n * sizeof(double)) == 0);
      }
    }
    // Back to back without a host round trip: y = A x, 20 times, same result every time.
    for (int rep = 0; rep < 20; ++rep) plan.apply(A, 1.0, dx.data(), 0.0, dy.data());
    dy.download(y.data(), n);
    std::vector<double> ref(n);
    dy.upload(y0.data(), n);
    plan.apply(A, 1.0, dx.data(), 0.0, dy.data());
    dy.download(ref.data(), n);
    CHECK(std::memcmp(ref.data(), y.data(), n * sizeof(double)) == 0);
  }
}

TEST_CASE("SpMV: a captured apply replays right with either carry (the epoch advances on the device)") {
  // Rows across blocks everywhere (look-back blocks wait for earlier ones' carries): each replay
  // must wait for this replay's carries, not take a stale flag from the capture or the last replay.
  const CsrMatrix<double> A = with_row_lengths({3, 2100, 4999, 0, 700, 1, 2048, 2049, 0, 5, 4096, 12000, 2}, 12000, 21);
  const std::size_t n = std::size_t(A.rows());
  for (auto carry : {SpmvPlanOptions::Carry::LookBack, SpmvPlanOptions::Carry::FixUp}) {
    SpmvPlanOptions opt;
    opt.force = true;
    opt.forced = {SpmvAlgorithm::NnzSegmented, 32, 4, 8};
    opt.carry = carry;
    const SpmvPlan<double> plan(A, opt);
    CAPTURE(std::string(plan.carry_mode()));
    REQUIRE(std::string(plan.carry_mode()) != "none");
    DeviceArray<double> dx(12000), dy(n);
    const CapturedCalls graph([&](DeviceStream s) { plan.apply(A, 1.0, dx.data(), 0.0, dy.data(), s); }, 1);
    REQUIRE(graph.ok());
    std::vector<double> y(n), eager(n);
    const std::vector<double> y0(n, 0.0);
    for (int rep = 0; rep < 12; ++rep) {  // new x each time: a stale carry would be last time's
      const auto x = random_vector<double>(12000, 100 + unsigned(rep));
      dx.upload(x.data(), 12000);
      graph.launch();
      dy.download(y.data(), n);
      check_result(A, 1.0, x, 0.0, y0, y, "replay");
      plan.apply(A, 1.0, dx.data(), 0.0, dy.data());  // eager launches in between: same bits
      dy.download(eager.data(), n);
      REQUIRE(std::memcmp(eager.data(), y.data(), n * sizeof(double)) == 0);
    }
  }
}

TEST_CASE("SpMV plan: refuses another matrix, null or overlapping vectors; survives value updates") {
  CsrMatrix<double> A = random_banded(5000, 5, 20, 1);
  const CsrMatrix<double> B = random_banded(5000, 5, 20, 2);  // same size, other structure
  for (const SpmvConfig& c : all_configs()) {
    CAPTURE(c.to_string());
    SpmvPlanOptions opt;
    opt.force = true;
    opt.forced = c;
    const SpmvPlan<double> plan(A, opt);
    CHECK(plan.matches(A));
    CHECK_FALSE(plan.matches(B));
    DeviceArray<double> x(5000), y(5000);
    x.zero();
    CHECK_THROWS_AS(plan.apply(B, 1.0, x.data(), 0.0, y.data()), InputError);
    CHECK_THROWS_AS(plan.apply(A, 1.0, x.data(), 0.0, x.data()), InputError);  // y would overwrite x
    CHECK_THROWS_AS(plan.apply(A, 1.0, x.data(), 0.0, nullptr), InputError);
  }
  SpmvPlanOptions opt;
  opt.force = true;
  opt.forced = {SpmvAlgorithm::NnzSegmented, 32, 8};
  const SpmvPlan<double> plan(A, opt);
  std::vector<double> v(std::size_t(A.nnz()));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::cos(double(k));
  A.set_values(v);
  CHECK(plan.matches(A));
  const auto x = random_vector<double>(5000, 3), y0 = random_vector<double>(5000, 4);
  DeviceArray<double> dx(5000), dy(5000);
  dx.upload(x.data(), 5000);
  dy.upload(y0.data(), 5000);
  plan.apply(A, 2.0, dx.data(), -1.0, dy.data());
  std::vector<double> y(5000);
  dy.download(y.data(), 5000);
  check_result(A, 2.0, x, -1.0, y0, y, "after set_values");
}

TEST_CASE("SpMV plan: invalid forced configurations are refused") {
  const CsrMatrix<double> A = laplacian_2d(10, 10);
  SpmvPlanOptions opt;
  opt.force = true;
  opt.forced = {SpmvAlgorithm::RowSubwarp, 6, 0};
  CHECK_THROWS_AS(SpmvPlan<double>(A, opt), InputError);
  opt.forced = {SpmvAlgorithm::NnzSegmented, 32, 5};
  CHECK_THROWS_AS(SpmvPlan<double>(A, opt), InputError);
  opt.forced = {static_cast<SpmvAlgorithm>(7), 32, 0};
  CHECK_THROWS_AS(SpmvPlan<double>(A, opt), InputError);
}

TEST_CASE("SpMV plan: tuning times every candidate, keeps the fastest and caches it") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("krysp_gpu_tune_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  const CsrMatrix<double> A = random_power_law(50000, 8, 5000, 3);
  SpmvPlanOptions opt;
  opt.select = SpmvPlanOptions::Select::Tune;
  opt.cache_dir = dir;
  const SpmvPlan<double> tuned(A, opt);
  const SpmvSelection& sel = tuned.selection();
  CHECK(sel.source == SpmvSelection::Source::Tuned);
  REQUIRE(sel.candidates.size() == spmv_candidates(tuned.stats()).size());
  double best = sel.candidates[0].ms;
  for (const auto& c : sel.candidates) {
    CHECK(c.ms > 0);
    best = std::min(best, c.ms);
  }
  CHECK(sel.chosen_ms == best);
  CHECK(sel.tuning_seconds > 0);
  CHECK(sel.rule == choose_spmv_rule(tuned.stats()));
  // Second plan: from the cache, same choice, no profiling.
  const SpmvPlan<double> again(A, opt);
  CHECK(again.selection().source == SpmvSelection::Source::Cache);
  CHECK(again.config() == tuned.config());
  CHECK(again.selection().candidates.empty());
  // float is a different key
  const CsrMatrix<float> Af = convert<float>(A);
  CHECK(SpmvPlan<float>(Af, opt).selection().source == SpmvSelection::Source::Tuned);
  // The cached plan computes correctly.
  const auto x = random_vector<double>(50000, 5), y0 = random_vector<double>(50000, 6);
  DeviceArray<double> dx(50000), dy(50000);
  dx.upload(x.data(), 50000);
  dy.upload(y0.data(), 50000);
  again.apply(A, -0.75, dx.data(), 0.25, dy.data());
  std::vector<double> y(50000);
  dy.download(y.data(), 50000);
  check_result(A, -0.75, x, 0.25, y0, y, "tuned plan");
  std::filesystem::remove_all(dir);
}

TEST_CASE("SpMV: overlapped launches wait for the kernel before them, every kernel, both carry modes") {
  // x, then y under beta, written late by the kernel just before the product (late_input.hpp).
  const CsrMatrix<double> A = random_power_law(20000, 12.0, 3000, 9);
  const auto x = random_vector<double>(std::size_t(A.cols()), 41), y0 = random_vector<double>(std::size_t(A.rows()), 42);
  for (const SpmvConfig& c : all_configs())
    for (auto carry : {SpmvPlanOptions::Carry::LookBack, SpmvPlanOptions::Carry::FixUp}) {
      SpmvPlanOptions opt;
      opt.force = true;
      opt.forced = c;
      opt.carry = carry;
      const SpmvPlan<double> plan(A, opt);
      test::check_waits_for_writer(
          [&](const double* in, double beta, double* out) { plan.apply(A, 1.0, in, beta, out); }, x, y0,
          c.to_string() + " carry " + plan.carry_mode());
    }
}
