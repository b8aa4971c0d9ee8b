// The SpMM kernels against the long-double reference (tests/sparse_test_util.hpp): every variant
// forced, N in {1, 2, 3, 4, 5, 8, 16, 17, 32, 64}, fp64 and fp32, on the bundled SuiteSparse
// matrices and adversarial ones; leading dimensions larger than N (padding untouched), odd ld and
// misaligned X (scalar-load path), beta = 0 with Y full of NaN, bitwise determinism, plan
// refusals, the rule, the tuned mode with its cache, column panels (spmm_panels.hpp), apply()
// on a stream of the caller's and captured into a CUDA graph, overlapped launches, and early
// matrix loads (every variant's second apply(); values written late by a kernel before it: right
// without notify on a device-borrowed matrix by default, early only with promise_notify).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

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
#include "gpu/late_input.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmm_select.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "sparse_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

const index_t kNs[] = {1, 2, 3, 4, 5, 8, 16, 17, 32, 64};

using test::cfg;
using test::with_long;
using test::with_split;

/// The forced configurations: each algorithm with derived geometry, plus extremes (2 lanes,
/// 32 nonzero lanes, 32 column lanes, 2 vectors/columns per lane, rows shared by 2..8 sub-warps,
/// tiny and odd unit sizes that split rows across many units, CscNnz units staged in shared
/// memory and too large for it, long rows cut into pieces of one or many blocks; runs_at says
/// which run at a given N).
std::vector<SpmmConfig> forced_configs() {
  return {cfg(SpmmAlgorithm::VdlRow),
          cfg(SpmmAlgorithm::VdlRow, 2),
          cfg(SpmmAlgorithm::VdlRow, 32, 1, 1),
          cfg(SpmmAlgorithm::VdlRow, 32, 32, 2),
          cfg(SpmmAlgorithm::VdlRow, 16, 4, 2),  // lean with four column lanes up to N = 16 (fp64)
          cfg(SpmmAlgorithm::VdlRow, 8, 2, 1),   // lean with two column lanes up to N = 4 (fp64)
          cfg(SpmmAlgorithm::VdlRow, 4, 4, 1),   // four column lanes, one nonzero lane: no reduction
          cfg(SpmmAlgorithm::VdlRow, 8, 1, 4),   // four vectors a lane: N <= 8 (fp64), 16 (fp32)
          cfg(SpmmAlgorithm::VdlNnz),
          cfg(SpmmAlgorithm::VdlNnz, 8, 1, 2, 8),
          cfg(SpmmAlgorithm::VdlNnz, 32, 2, 1, 37),
          cfg(SpmmAlgorithm::CscRow),
          cfg(SpmmAlgorithm::CscRow, 2, 0, 1),
          cfg(SpmmAlgorithm::CscRow, 32, 0, 2),
          cfg(SpmmAlgorithm::CscRow, 8, 0, 2),  // half the lanes of N = 16, two columns each
          with_split(cfg(SpmmAlgorithm::CscRow, 32, 0, 1), 4),
          with_split(cfg(SpmmAlgorithm::CscRow, 16, 0, 2), 2),
          with_split(cfg(SpmmAlgorithm::CscRow, 2, 0, 1), 8),
          cfg(SpmmAlgorithm::CscNnz),
          cfg(SpmmAlgorithm::CscNnz, 4, 0, 2, 5),
          cfg(SpmmAlgorithm::CscNnz, 32, 0, 1, 100),
          cfg(SpmmAlgorithm::CscNnz, 16, 0, 1, 300),  // units too large to stage (kSpmmCscStaged)
          cfg(SpmmAlgorithm::SeqNnz),
          cfg(SpmmAlgorithm::SeqNnz, 0, 0, 0, 37),
          with_long(cfg(SpmmAlgorithm::CscRow), 16),
          with_long(cfg(SpmmAlgorithm::CscRow, 32, 0, 2), 5),
          with_long(cfg(SpmmAlgorithm::CscRow, 8, 0, 1), 40),
          with_long(cfg(SpmmAlgorithm::CscRow, 2, 0, 1), 3),   // 128 sub-warps a piece
          with_long(cfg(SpmmAlgorithm::VdlRow, 32, 1, 1), 8),  // N <= 2 (fp64), 4 (fp32)
          with_long(cfg(SpmmAlgorithm::VdlRow, 4, 1, 2), 20),  // N <= 4 (fp64), 8 (fp32)
          with_long(cfg(SpmmAlgorithm::VdlRow, 2, 1, 4), 6)};  // N <= 8 (fp64), 16 (fp32)
}

/// Can forced configuration c run at N on A? (Long-row cuts need the lean VDL kernel.)
template <class T>
bool runs_at(const SpmmConfig& c, const CsrMatrix<T>& A, index_t N) {
  const int bytes = int(sizeof(T));
  return spmm_runs_at(complete_spmm_config(c, N, bytes, A.row_stats()), N, bytes);
}

/// Runs plan.apply on device copies of X and Y0 (X placed x_off elements, Y y_off elements after
/// the start of their allocations, to make them misaligned) and returns Y.
template <class T>
std::vector<T> run(const SpmmPlan<T>& plan, const CsrMatrix<T>& A, T alpha, const std::vector<T>& X, index_t ldx,
                   T beta, const std::vector<T>& Y0, index_t ldy, std::size_t x_off = 0, std::size_t y_off = 0) {
  std::vector<T> hx(x_off + X.size() + 1, T(0)), hy(y_off + Y0.size() + 1, T(0));
  std::copy(X.begin(), X.end(), hx.begin() + std::ptrdiff_t(x_off));
  std::copy(Y0.begin(), Y0.end(), hy.begin() + std::ptrdiff_t(y_off));
  DeviceArray<T> dx(hx.size()), dy(hy.size());
  dx.upload(hx.data(), hx.size());
  dy.upload(hy.data(), hy.size());
  plan.apply(A, alpha, dx.data() + x_off, ldx, beta, dy.data() + y_off, ldy);
  cuda_synchronize();
  dy.download(hy.data(), hy.size());
  return std::vector<T>(hy.begin() + std::ptrdiff_t(y_off), hy.begin() + std::ptrdiff_t(y_off + Y0.size()));
}

/// One random problem for (A, N, ldx, ldy), checked for every forced configuration (split into
/// `panels` column panels when > 1). Each configuration runs twice: the second apply() loads the
/// matrix early (same values as the first), and both results must be right and bitwise equal.
template <class T>
void check_all_variants(const std::string& name, const CsrMatrix<T>& A, index_t N, index_t ldx, index_t ldy,
                        bool beta_zero, std::size_t x_off = 0, int panels = 0) {
  const T alpha = T(test::random_scalar());
  const T beta = beta_zero ? T(0) : T(test::random_scalar());
  const auto X = test::random_block<T>(A.cols(), N, ldx, std::numeric_limits<T>::quiet_NaN());
  auto Y0 = test::random_block<T>(A.rows(), N, ldy, T(-777.25));
  if (beta_zero)
    for (index_t i = 0; i < A.rows(); ++i)
      for (index_t j = 0; j < N; ++j) Y0[std::size_t(i) * ldy + j] = std::numeric_limits<T>::quiet_NaN();
  const test::SpmmExpected<T> expected(A, N, alpha, X, ldx, beta, Y0, ldy);
  for (const SpmmConfig& c : forced_configs()) {
    if (!runs_at(c, A, N)) continue;
    SpmmPlanOptions o;
    o.force = true;
    o.forced = c;
    o.forced.panels = panels;
    const SpmmPlan<T> plan(A, N, o);
    const std::string what = name + " " + (sizeof(T) == 8 ? "fp64" : "fp32") + " N=" + std::to_string(N) + " " +
                             plan.config().to_string() + " ldx=" + std::to_string(ldx) + " ldy=" +
                             std::to_string(ldy) + " xoff=" + std::to_string(x_off) + (beta_zero ? " beta=0" : "");
    INFO(what);
    const auto Y = run(plan, A, alpha, X, ldx, beta, Y0, ldy, x_off, x_off);
    expected.check(Y, what);
    const auto Y2 = run(plan, A, alpha, X, ldx, beta, Y0, ldy, x_off, x_off);
    CHECK(std::memcmp(Y.data(), Y2.data(), Y.size() * sizeof(T)) == 0);
  }
}

std::vector<std::string> suite_names() {
  return {"bcsstk01", "bcsstk02", "bcsstk03", "bcsstk04", "bcsstk05", "bcsstk06",      "bcsstk07",
          "bcsstm07", "494_bus",  "662_bus",  "1138_bus", "gr_30_30", "lund_a",        "Trefethen_2000",
          "Erdos971", "rajat19",  "ca-GrQc",  "GD06_theory"};
}

}  // namespace

TEST_CASE("SpMM GPU fp64: every variant on the SuiteSparse matrices, N = 1..64") {
  for (const auto& name : suite_names()) {
    const auto A = test::load(name);
    for (index_t N : kNs) check_all_variants<double>(name, A, N, N, N, false);
  }
}

TEST_CASE("SpMM GPU fp64: every variant on adversarial matrices") {
  for (const auto& m : test::adversarial_matrices(true))
    for (index_t N : kNs) check_all_variants<double>(m.name, m.A, N, N, N, false);
}

TEST_CASE("SpMM GPU fp64: leading dimensions > N, odd ld, misaligned X, beta = 0 with NaN Y") {
  std::vector<test::NamedMatrix> mats = {{"bcsstk06", test::load("bcsstk06")}, {"ca-GrQc", test::load("ca-GrQc")}};
  for (auto& m : test::adversarial_matrices(false)) mats.push_back(std::move(m));
  for (const auto& m : mats)
    for (index_t N : kNs) {
      // even ld > N: vector loads stay legal; padding columns must stay untouched
      check_all_variants<double>(m.name, m.A, N, N + 2 + N % 2, N + 4, false);
      // odd ldx (misaligned rows of X): the scalar-load path; beta = 0 never reads the NaN Y
      check_all_variants<double>(m.name, m.A, N, 2 * N + 1, N + 1, true);
      // X and Y pointers 8 bytes off a 16-byte boundary
      check_all_variants<double>(m.name, m.A, N, N, N, N % 2 == 0, 1);
    }
  CHECK_FALSE(SpmmPlan<double>::vector_aligned(reinterpret_cast<const double*>(std::uintptr_t(256)), 3));
  CHECK_FALSE(SpmmPlan<double>::vector_aligned(reinterpret_cast<const double*>(std::uintptr_t(264)), 4));
  CHECK(SpmmPlan<double>::vector_aligned(reinterpret_cast<const double*>(std::uintptr_t(256)), 4));
  CHECK_FALSE(SpmmPlan<float>::vector_aligned(reinterpret_cast<const float*>(std::uintptr_t(256)), 6));
  CHECK(SpmmPlan<float>::vector_aligned(reinterpret_cast<const float*>(std::uintptr_t(256)), 8));
}

TEST_CASE("SpMM GPU fp32: every variant, SuiteSparse and adversarial, aligned and not") {
  std::vector<test::NamedMatrix> mats;
  for (const auto& name : {"bcsstk06", "Trefethen_2000", "rajat19", "ca-GrQc", "GD06_theory"})
    mats.push_back({name, test::load(name)});
  for (auto& m : test::adversarial_matrices(true)) mats.push_back(std::move(m));
  for (const auto& m : mats) {
    const auto A = test::convert<float>(m.A);
    for (index_t N : kNs) {
      check_all_variants<float>(m.name, A, N, N, N, false);
      if (N <= 8 || N == 17) {
        check_all_variants<float>(m.name, A, N, N + 2, N + 3, true);  // ld not a multiple of 4
        check_all_variants<float>(m.name, A, N, N, N, false, 2);       // 8-byte aligned X
      }
    }
  }
}

TEST_CASE("SpMM GPU: deterministic, bitwise equal across runs for every variant") {
  const auto P = random_power_law(20000, 12.0, 8000, 21);  // rows split between many units
  for (index_t N : {2, 5, 16, 33}) check_all_variants<double>("power-law", P, N, N, N, false);
  const auto Pf = test::convert<float>(P);
  for (index_t N : {4, 7}) check_all_variants<float>("power-law", Pf, N, N, N, false);
}

TEST_CASE("SpMM GPU: plan refuses another matrix, another N, too small leading dimensions and X, Y sharing entries") {
  const auto A = test::load("bcsstk01");
  const auto B = test::load("bcsstk03");
  const SpmmPlan<double> plan(A, 4);
  CHECK(plan.matches(A, 4));
  CHECK_FALSE(plan.matches(A, 5));
  CHECK_FALSE(plan.matches(B, 4));
  CHECK(plan.n() == 4);
  DeviceArray<double> x(std::size_t(std::max(A.cols(), B.cols())) * 8);
  DeviceArray<double> y(std::size_t(std::max(A.rows(), B.rows())) * 8);
  x.zero();
  y.zero();
  CHECK_THROWS_AS(plan.apply(B, 1.0, x.data(), 4, 0.0, y.data(), 4), InputError);
  CHECK_THROWS_AS(plan.apply(A, 1.0, x.data(), 3, 0.0, y.data(), 4), InputError);
  CHECK_THROWS_AS(plan.apply(A, 1.0, x.data(), 4, 0.0, y.data(), 3), InputError);
  CHECK_NOTHROW(plan.apply(A, 1.0, x.data(), 8, 0.0, y.data(), 5));
  CHECK_THROWS_AS(plan.apply(A, 1.0, x.data(), 8, 0.0, x.data() + 2, 8), InputError);  // columns 2..5 of X's 0..3
  CHECK_NOTHROW(plan.apply(A, 1.0, x.data(), 8, 0.0, x.data() + 4, 8));  // columns 4..7: interleaved, disjoint
  cuda_synchronize();
  CHECK_THROWS_AS(SpmmPlan<double>(A, 0), InputError);
  SpmmPlanOptions bad;
  bad.force = true;
  bad.forced = cfg(SpmmAlgorithm::VdlRow, 12);
  CHECK_THROWS_AS(SpmmPlan<double>(A, 4, bad), InputError);
  bad.forced = with_long(cfg(SpmmAlgorithm::VdlRow, 32, 1, 1), 8);  // long rows need the lean VDL: N <= 2
  CHECK_THROWS_AS(SpmmPlan<double>(A, 4, bad), InputError);
  bad.forced = with_long(cfg(SpmmAlgorithm::CscNnz), 8);
  CHECK_THROWS_AS(SpmmPlan<double>(A, 4, bad), InputError);
  SpmmPlan<double> empty;
  CHECK_FALSE(empty.valid());
  CHECK_THROWS_AS(empty.apply(A, 1.0, x.data(), 4, 0.0, y.data(), 4), InputError);
  // the plan survives a value update that keeps the structure
  auto A2 = test::load("bcsstk01");
  std::vector<double> vals(std::size_t(A2.nnz()), 0.5);
  A2.set_values(vals);
  CHECK(plan.matches(A2, 4));
}

TEST_CASE("SpMM GPU: empty matrices") {
  const CsrMatrix<double> E;  // 0 × 0
  const SpmmPlan<double> pe(E, 3);
  CHECK_NOTHROW(pe.apply(E, 1.0, nullptr, 3, 0.0, nullptr, 3));
  // rows without nonzeros: Y = beta·Y (and 0 for beta = 0, even over NaN)
  const auto Z = CsrMatrix<double>::from_arrays(40, 7, std::vector<index_t>(41, 0), {}, {});
  for (const SpmmConfig& c : forced_configs()) {
    if (!runs_at(c, Z, 5)) continue;
    SpmmPlanOptions o;
    o.force = true;
    o.forced = c;
    const SpmmPlan<double> p(Z, 5, o);
    const auto X = test::random_block<double>(7, 5, 5, 0.0);
    std::vector<double> Y0(40 * 5, std::nan(""));
    auto Y = run(p, Z, 1.5, X, 5, 0.0, Y0, 5);
    for (double v : Y) CHECK(v == 0.0);
    Y0.assign(40 * 5, 2.0);
    Y = run(p, Z, 1.5, X, 5, -0.75, Y0, 5);
    for (double v : Y) CHECK(v == -1.5);
  }
}

TEST_CASE("SpMM GPU: the rule on the 3-D Laplacian, and large N in chunks") {
  const auto L = laplacian_3d(40, 40, 40);
  const SpmmPlan<double> p2(L, 2);
  CHECK(p2.config() == cfg(SpmmAlgorithm::VdlRow, 4, 1, 1));
  CHECK(p2.selection().source == SpmmSelection::Source::Rule);
  CHECK(p2.launches_per_apply() == 1);
  for (index_t N : {2, 8, 100}) {
    const SpmmPlan<double> p(L, N);
    const double alpha = test::random_scalar(), beta = test::random_scalar();
    const auto X = test::random_block<double>(L.cols(), N, N, 0.0);
    const auto Y0 = test::random_block<double>(L.rows(), N, N, 0.0);
    const auto Y = run(p, L, alpha, X, N, beta, Y0, N);
    test::check_spmm(L, N, alpha, X, N, beta, Y0, Y, N, "laplace3d N=" + std::to_string(N));
  }
}

TEST_CASE("SpMM GPU: long rows cut into pieces by the rule: one launch, right, bitwise equal call after call") {
  // The rule cuts the long rows (spmm_long_row_threshold); the pieces' tickets must be left at
  // zero by every call.
  const auto A = test::few_long_rows();
  for (index_t N : {1, 2, 4, 8, 16, 33, 64}) {
    const SpmmPlan<double> plan(A, N);
    const std::string what = "long rows N=" + std::to_string(N) + " " + plan.config().to_string();
    INFO(what);
    CHECK(plan.config().long_row == spmm_long_row_threshold(device_policy(), A.row_stats()));
    CHECK(plan.launches_per_apply() == 1);
    const double alpha = test::random_scalar(), beta = test::random_scalar();
    const auto X = test::random_block<double>(A.cols(), N, N, 0.0);
    const auto Y0 = test::random_block<double>(A.rows(), N, N, 0.0);
    const test::SpmmExpected<double> expected(A, N, alpha, X, N, beta, Y0, N);
    const auto Y = run(plan, A, alpha, X, N, beta, Y0, N);
    expected.check(Y, what);
    for (int call = 0; call < 3; ++call) {
      const auto Y2 = run(plan, A, alpha, X, N, beta, Y0, N);
      CHECK(std::memcmp(Y.data(), Y2.data(), Y.size() * sizeof(double)) == 0);
    }
  }
}

TEST_CASE("SpMM GPU: tuned plans time every candidate, keep the fastest, and use the cache") {
  const auto A = random_power_law(50000, 10.0, 5000, 5);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("krysp_spmm_gpu_cache_" + std::to_string(std::random_device{}()));
  std::filesystem::remove_all(dir);
  SpmmPlanOptions o;
  o.select = SpmmPlanOptions::Select::Tune;
  o.cache_dir = dir.string();
  for (index_t N : {2, 16}) {
    const SpmmPlan<double> tuned(A, N, o);
    const auto& sel = tuned.selection();
    CHECK(sel.source == SpmmSelection::Source::Tuned);
    REQUIRE(!sel.candidates.empty());
    CHECK(sel.tuning_seconds > 0);
    double best = sel.candidates[0].ms;
    for (const auto& c : sel.candidates) {
      CHECK(c.ms > 0);
      CHECK(is_valid(c.config));
      best = std::min(best, c.ms);
    }
    CHECK(sel.chosen_ms == best);
    const auto X = test::random_block<double>(A.cols(), N, N, 0.0);
    const auto Y0 = test::random_block<double>(A.rows(), N, N, 0.0);
    const auto Y = run(tuned, A, 0.75, X, N, -1.25, Y0, N);
    test::check_spmm(A, N, 0.75, X, N, -1.25, Y0, Y, N, "tuned " + tuned.config().to_string());
    // second plan: from the cache, same configuration
    const SpmmPlan<double> cached(A, N, o);
    CHECK(cached.selection().source == SpmmSelection::Source::Cache);
    CHECK(cached.config() == tuned.config());
  }
  // without the cache
  o.use_cache = false;
  const SpmmPlan<float> tf(test::convert<float>(A), 4, o);
  CHECK(tf.selection().source == SpmmSelection::Source::Tuned);
  std::filesystem::remove_all(dir);
}

TEST_CASE("SpMM GPU: column panels, every variant, against the reference; values gathered again after a change") {
  std::vector<test::NamedMatrix> mats = {{"ca-GrQc", test::load("ca-GrQc")}, {"rajat19", test::load("rajat19")},
                                         {"bcsstk06", test::load("bcsstk06")}};
  for (auto& m : test::adversarial_matrices(false)) mats.push_back(std::move(m));
  for (const auto& m : mats)
    for (const int P : {2, 3, 7})
      for (const index_t N : {1, 2, 3, 8, 17}) {
        if (P > m.A.cols()) continue;
        check_all_variants<double>(m.name, m.A, N, N, N, false, 0, P);
        check_all_variants<double>(m.name, m.A, N, N + 3, N + 1, true, 0, P);  // beta = 0, NaN in Y
        if (N == 3) check_all_variants<float>(m.name, test::convert<float>(m.A), N, N, N, false, 0, P);
      }
  // A panel plan copies the values: a change of A's values must reach the next apply()
  auto A = test::load("ca-GrQc");
  SpmmPlanOptions o;
  o.force = true;
  o.forced.algorithm = SpmmAlgorithm::VdlNnz;
  o.forced.panels = 4;
  const SpmmPlan<double> plan(A, 2, o);
  CHECK(plan.config().panels == 4);
  CHECK(plan.launches_per_apply() >= 4);
  const auto X = test::random_block<double>(A.cols(), 2, 2, 0.0);
  const std::vector<double> Y0(std::size_t(A.rows()) * 2, 0.0);
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
      for (auto& x : v) x = -3.0 * x + 0.5;
      A.set_values(v);
    }
    const test::SpmmExpected<double> expected(A, 2, 1.0, X, 2, 0.0, Y0, 2);
    expected.check(run(plan, A, 1.0, X, 2, 0.0, Y0, 2), "ca-GrQc panels=4 round " + std::to_string(round));
  }
  // more panels than columns: refused
  o.forced.panels = 5;
  const auto narrow = CsrMatrix<double>::from_arrays(2, 4, {0, 2, 3}, {0, 3, 1}, {1.0, 2.0, 3.0});
  CHECK_THROWS_AS(SpmmPlan<double>(narrow, 2, o), InputError);
}

TEST_CASE("SpMM GPU: apply() on a caller's stream and replayed from a CUDA graph, every variant, bitwise") {
  // Each forced configuration (and a panel split) computes Y = A·X three ways: on the default
  // stream, on a non-blocking stream, and from a graph captured on that stream (two calls, so the
  // fix-up and carries are replayed too). All three must be bitwise equal, and right.
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
  const DeviceStream stream{st};
  const std::vector<test::NamedMatrix> mats = {{"rajat19", test::load("rajat19")},
                                               {"power-law", random_power_law(5000, 10.0, 2000, 5)}};
  for (const auto& m : mats)
    for (const index_t N : {3, 8, 17})
      for (const int panels : {0, 3}) {
        const auto X = test::random_block<double>(m.A.cols(), N, N, 0.0);
        const std::vector<double> Y0(std::size_t(m.A.rows()) * N, std::numeric_limits<double>::quiet_NaN());
        const test::SpmmExpected<double> expected(m.A, N, 1.5, X, N, 0.0, Y0, N);
        DeviceArray<double> dx(X.size()), dy(Y0.size());
        dx.upload(X.data(), X.size());
        for (const SpmmConfig& c : forced_configs()) {
          if (!runs_at(c, m.A, N)) continue;
          SpmmPlanOptions o;
          o.force = true;
          o.forced = c;
          o.forced.panels = panels;
          const SpmmPlan<double> plan(m.A, N, o);
          const std::string what = m.name + " N=" + std::to_string(N) + " " + plan.config().to_string();
          INFO(what);
          auto result = [&](auto&& enqueue) {
            dy.upload(Y0.data(), Y0.size());  // NaN: beta = 0 must not read it
            cuda_synchronize();               // the copy is done before a non-blocking stream reads dy
            enqueue();
            cuda_synchronize();
            std::vector<double> y(Y0.size());
            dy.download(y.data(), y.size());
            return y;
          };
          const auto on_default = result([&] { plan.apply(m.A, 1.5, dx.data(), N, 0.0, dy.data(), N); });
          expected.check(on_default, what);
          const auto on_stream = result([&] {
            plan.apply(m.A, 1.5, dx.data(), N, 0.0, dy.data(), N, stream);
            REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
          });
          CHECK(std::memcmp(on_default.data(), on_stream.data(), on_default.size() * sizeof(double)) == 0);
          cudaGraph_t g = nullptr;
          cudaGraphExec_t ge = nullptr;
          REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
          for (int call = 0; call < 2; ++call) plan.apply(m.A, 1.5, dx.data(), N, 0.0, dy.data(), N, stream);
          REQUIRE(cudaStreamEndCapture(st, &g) == cudaSuccess);
          REQUIRE(cudaGraphInstantiate(&ge, g, 0) == cudaSuccess);
          const auto from_graph = result([&] {
            REQUIRE(cudaGraphLaunch(ge, st) == cudaSuccess);
            REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
          });
          CHECK(std::memcmp(on_default.data(), from_graph.data(), on_default.size() * sizeof(double)) == 0);
          REQUIRE(cudaGraphExecDestroy(ge) == cudaSuccess);
          REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
        }
      }
  REQUIRE(cudaStreamDestroy(st) == cudaSuccess);
}

TEST_CASE("SpMM GPU: overlapped launches wait for the kernel before them, every variant") {
  // X, then Y under beta, written late by the kernel just before the product (late_input.hpp).
  const auto A = random_power_law(20000, 12.0, 3000, 9);
  for (const index_t N : {4, 17}) {
    const auto X = test::random_block<double>(A.cols(), N, N, 0.0);
    const auto Y0 = test::random_block<double>(A.rows(), N, N, 0.0);
    for (const SpmmConfig& c : forced_configs()) {
      if (!runs_at(c, A, N)) continue;
      SpmmPlanOptions o;
      o.force = true;
      o.forced = c;
      const SpmmPlan<double> plan(A, N, o);
      test::check_waits_for_writer(
          [&](const double* in, double beta, double* out) { plan.apply(A, 1.0, in, N, beta, out, N); }, X, Y0,
          "power-law N=" + std::to_string(N) + " " + plan.config().to_string());
    }
  }
}

namespace {
/// bcsstk06 (rows of at most 28 nonzeros) on device arrays of the test's own, as a caller's
/// simulation code holds them, wrapped by from_device_pointers; `values` is the array the caller
/// writes in place.
struct BorrowedBcsstk06 {
  CsrMatrix<double> H = test::load("bcsstk06");
  std::size_t nnz = std::size_t(H.nnz());
  DeviceArray<index_t> rp{std::size_t(H.rows()) + 1}, ci{nnz};
  DeviceArray<double> values{nnz};
  CsrMatrix<double> D;
  BorrowedBcsstk06() {
    rp.upload(H.row_ptr().data(), rp.size());
    ci.upload(H.col_idx().data(), nnz);
    values.upload(H.values().data(), nnz);
    D = CsrMatrix<double>::from_device_pointers(H.rows(), H.cols(), H.nnz(), rp.data(), ci.data(), values.data());
  }
  /// A host-built matrix of H's structure with values v: the host recomputation's operand.
  CsrMatrix<double> host_with(const std::vector<double>& v) const {
    return CsrMatrix<double>::from_arrays(H.rows(), H.cols(),
                                          std::vector<index_t>(H.row_ptr().data(), H.row_ptr().data() + H.rows() + 1),
                                          std::vector<index_t>(H.col_idx().data(), H.col_idx().data() + nnz), v);
  }
};
/// Y = D·X by `plan` (ld = N), waited for and downloaded: the product a test compares.
std::vector<double> product(const SpmmPlan<double>& plan, const CsrMatrix<double>& D, const DeviceArray<double>& dx,
                            DeviceArray<double>& dy, index_t N) {
  plan.apply(D, 1.0, dx.data(), N, 0.0, dy.data(), N);
  cuda_synchronize();
  std::vector<double> y(dy.size());
  dy.download(y.data(), y.size());
  return y;
}
}  // namespace

TEST_CASE("SpMM GPU: a device-borrowed matrix changed in place without notify gives right products by default") {
  // The hazard of early loads (early_loads.hpp): the caller writes new values into its own array
  // and forgets notify_values_changed(). Without promise_notify the plans must not load early, and
  // a panel split must gather again: every product equals the host recomputation with the new
  // values. Written by a plain copy and by the late writer (a kernel still running when the
  // product is launched), for the kernels that load early, a panel split and the rule's pick.
  const bool setting = overlapped_launch();
  set_overlapped_launch(true);
  BorrowedBcsstk06 m;
  CsrMatrix<double>& D = m.D;
  CHECK(D.is_device_borrowed());
  CHECK_FALSE(D.values_tracked());  // the default: no promise
  CHECK(m.H.values_tracked());      // host-built: krysp owns the device mirror
  constexpr index_t N = 2;
  const auto X = test::random_block<double>(m.H.cols(), N, N, 0.0);
  const std::vector<double> Y0(std::size_t(m.H.rows()) * N, 0.0);
  DeviceArray<double> dx(X.size()), dy(Y0.size()), fresh(m.nnz);
  dx.upload(X.data(), X.size());
  std::vector<SpmmPlanOptions> plans(4);
  plans[1].force = plans[2].force = plans[3].force = true;
  plans[1].forced = cfg(SpmmAlgorithm::VdlRow, 32, 1, 1);  // the lean VDL row kernel: loads early when allowed
  plans[2].forced = cfg(SpmmAlgorithm::CscRow, 8, 0, 1);   // the CSC row kernel of small launches: likewise
  plans[3].forced = cfg(SpmmAlgorithm::VdlRow, 32, 1, 1);
  plans[3].forced.panels = 2;  // values copied into the panels
  int round = 0;
  for (const SpmmPlanOptions& o : plans) {
    const SpmmPlan<double> plan(D, N, o);
    INFO(plan.config().to_string());
    auto product = [&] { return ::product(plan, D, dx, dy, N); };
    auto values_for = [&](int r) {  // new values each round, never those of a round before
      std::vector<double> v(m.H.values().data(), m.H.values().data() + m.nnz);
      for (std::size_t k = 0; k < v.size(); ++k) v[k] = (1.0 + 0.25 * r) * v[k] + std::cos(double(k + r));
      return v;
    };
    // the values the plan has seen twice: the next product may load early if anything may
    auto v = values_for(round++);
    m.values.upload(v.data(), m.nnz);
    D.notify_values_changed();
    product();
    product();
    CHECK_FALSE(plan.may_load_early(D));
    // 1. new values copied in place, no notify
    v = values_for(round++);
    m.values.upload(v.data(), m.nnz);
    test::SpmmExpected<double>(m.host_with(v), N, 1.0, X, N, 0.0, Y0, N).check(product(), "copied, not notified");
    // 2. new values written late by a kernel still running when the product launches, no notify
    if (test::device_overlaps_launches()) {
      v = values_for(round++);
      fresh.upload(v.data(), m.nnz);
      REQUIRE(cudaMemset(m.values.data(), 0xff, m.nnz * sizeof(double)) == cudaSuccess);  // NaN until written
      cuda_synchronize();
      test::late_copy(fresh.data(), m.values.data(), m.nnz, test::kLateUs);
      test::SpmmExpected<double>(m.host_with(v), N, 1.0, X, N, 0.0, Y0, N)
          .check(product(), "written late, not notified");
    }
  }
  // The SpMV plan never loads early: the same holds for it.
  const SpmvPlan<double> spmv(D);
  const auto x = test::random_vector(std::size_t(m.H.cols()));
  DeviceArray<double> dxv(x.size()), dyv(std::size_t(m.H.rows()));
  dxv.upload(x.data(), x.size());
  const auto v = [&] {
    std::vector<double> w(m.H.values().data(), m.H.values().data() + m.nnz);
    for (auto& a : w) a = 0.5 - 2.0 * a;
    return w;
  }();
  spmv.apply(D, 1.0, dxv.data(), 0.0, dyv.data());
  m.values.upload(v.data(), m.nnz);  // not notified
  spmv.apply(D, 1.0, dxv.data(), 0.0, dyv.data());
  cuda_synchronize();
  std::vector<double> y(std::size_t(m.H.rows())), ref(y.size());
  dyv.download(y.data(), y.size());
  m.host_with(v).multiply_host(x.data(), ref.data());
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    err = std::max(err, std::abs(y[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  CHECK(err <= 1e-10 * scale);  // another summation order than the host's
  set_overlapped_launch(setting);
}

TEST_CASE("SpMM GPU: early loads of a device-borrowed matrix only with promise_notify, then a write needs notify") {
  // With the opt-in (CsrMatrix::promise_notify) the plan loads early from the second product with
  // the same values on the same stream. The late writer puts new values into the borrowed matrix's
  // own array right before the product: 1. notified, they are read after the writer finished;
  // 2. the negative control: not notified, the product loads them early and reads the NaN the
  // writer has not yet replaced (so the harness of the test above would catch early loads).
  if (!test::device_overlaps_launches()) return;  // no overlapped launches before compute capability 9.0
  const bool setting = overlapped_launch();
  set_overlapped_launch(true);
  BorrowedBcsstk06 m;
  CsrMatrix<double>& D = m.D;
  const CsrMatrix<double> copy = D;
  D.promise_notify();
  CHECK(copy.values_tracked());  // shared by copies
  DeviceArray<double> fresh(m.nnz);
  std::vector<double> old_values(m.H.values().data(), m.H.values().data() + m.nnz);
  for (double& v : old_values) v = 2.0 * v + 1.0;  // uploaded, and notified, for each kernel below
  fresh.upload(m.H.values().data(), m.nnz);
  constexpr index_t N = 2;
  const auto X = test::random_block<double>(m.H.cols(), N, N, 0.0);
  const std::vector<double> Y0(std::size_t(m.H.rows()) * N, 0.0);
  const test::SpmmExpected<double> expected(m.H, N, 1.0, X, N, 0.0, Y0, N);
  DeviceArray<double> dx(X.size()), dy(Y0.size());
  dx.upload(X.data(), X.size());
  // the kernels that load early: the lean VDL row kernel and the CSC row kernel of small launches
  for (const SpmmConfig& c : {cfg(SpmmAlgorithm::VdlRow, 32, 1, 1), cfg(SpmmAlgorithm::CscRow, 8, 0, 1)}) {
    SpmmPlanOptions o;
    o.force = true;
    o.forced = c;
    const SpmmPlan<double> plan(D, N, o);
    INFO(plan.config().to_string());
    auto product = [&] { return ::product(plan, D, dx, dy, N); };
    auto write_late = [&] {  // NaN in the values until the late writer copies `fresh` over them
      REQUIRE(cudaMemset(m.values.data(), 0xff, m.nnz * sizeof(double)) == cudaSuccess);
      cuda_synchronize();
      test::late_copy(fresh.data(), m.values.data(), m.nnz, test::kLateUs);
    };
    m.values.upload(old_values.data(), m.nnz);
    D.notify_values_changed();
    CHECK_FALSE(plan.may_load_early(D));  // values the plan has not seen
    product();
    CHECK(plan.may_load_early(D));
    CHECK_FALSE(plan.may_load_early(D, DeviceStream{reinterpret_cast<void*>(0x1)}));  // another stream
    product();  // the plan has now seen these values: the next product with them loads early
    // 1. new values written late, then notified: read after the writer finished
    write_late();
    D.notify_values_changed();
    CHECK_FALSE(plan.may_load_early(D));
    expected.check(product(), "bcsstk06 new values notified, " + plan.config().to_string());
    // 2. the negative control: written late without notify, the product loads them early and
    // reads the NaN the writer has not yet replaced
    write_late();
    CHECK(plan.may_load_early(D));
    const auto stale = product();
    CHECK(std::count_if(stale.begin(), stale.end(), [](double v) { return v != v; }) > 0);
    // the promise withdrawn: the same write is read right again
    D.promise_notify(false);
    CHECK_FALSE(plan.may_load_early(D));
    write_late();
    expected.check(product(), "bcsstk06 promise withdrawn, not notified, " + plan.config().to_string());
    D.promise_notify();
  }
  set_overlapped_launch(setting);
}

TEST_CASE("DevicePolicy: the current device's multiprocessors, resident threads and L2, queried once") {
  int dev = 0, sms = 0, per_sm = 0, l2 = 0;
  REQUIRE(cudaGetDevice(&dev) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) == cudaSuccess);
  const DevicePolicy p = device_policy();
  CHECK(p.multiprocessors == sms);
  CHECK(p.threads_per_multiprocessor == per_sm);
  CHECK(p.l2_bytes == l2);
  CHECK(p.resident_threads() == std::int64_t(sms) * per_sm);
  CHECK(device_policy() == p);  // cached
  // the rule a plan picks is the rule for this device's policy
  const auto A = test::load("bcsstk06");
  for (const index_t N : {2, 8, 32}) CHECK(SpmmPlan<double>(A, N).config() == choose_spmm_rule(p, A.row_stats(), N));
}

TEST_CASE("SpMM GPU: other launch thresholds (SpmmConfig::launch) give the defaults' results") {
  // The launchers' choices (early loads, CSC row rounds, the CSC batched walk) change how work is
  // scheduled and when A is loaded. The CSC kernels' rounds and batches also regroup the partial
  // sums of a row, so a variant agrees with the defaults to rounding, not bitwise; each plan is
  // still deterministic (bitwise the same from call to call).
  std::vector<SpmmLaunchParams> variants(6);
  variants[0].early_max_waves = 0;
  variants[1].early_max_waves = 1e6;
  variants[2].csc_row_rounds = 1;
  variants[3].csc_rounds_min_waves = 0;
  variants[4].csc_batch_min_subwarp = 64;
  variants[5].csc_batch_max_waves = 1e6;
  std::vector<std::pair<std::string, CsrMatrix<double>>> mats;
  for (const char* n : {"bcsstk06", "Erdos971", "GD06_theory"}) mats.emplace_back(n, test::load(n));
  mats.emplace_back("laplacian_2d(200)", laplacian_2d(200, 200));
  mats.emplace_back("power-law", random_power_law(20000, 12.0, 8000, 21));  // long rows, split rows
  for (const auto& [name, A] : mats) {
    for (index_t N : {2, 16, 33}) {
      const auto X = test::random_block<double>(A.cols(), N, N, 0.0);
      const auto Y0 = test::random_block<double>(A.rows(), N, N, 0.0);
      for (const SpmmConfig& c : forced_configs()) {
        if (c.algorithm == SpmmAlgorithm::SeqNnz) continue;  // no launch choice
        if (!runs_at(c, A, N)) continue;
        SpmmPlanOptions o;
        o.force = true;
        o.forced = c;
        const SpmmPlan<double> base(A, N, o);
        const auto want = run(base, A, 1.5, X, N, 0.5, Y0, N);
        for (const SpmmLaunchParams& l : variants) {
          o.forced.launch = l;
          const SpmmPlan<double> plan(A, N, o);
          INFO(name, " N=", N, " ", plan.config().to_string());
          CHECK(plan.config().launch == l);
          const auto first = run(plan, A, 1.5, X, N, 0.5, Y0, N);
          const auto again = run(plan, A, 1.5, X, N, 0.5, Y0, N);  // the second call may load early
          CHECK(std::memcmp(again.data(), first.data(), again.size() * sizeof(double)) == 0);
          double diff = 0, scale = 0;
          for (std::size_t i = 0; i < want.size(); ++i) {
            diff = std::max(diff, std::abs(first[i] - want[i]));
            scale = std::max(scale, std::abs(want[i]));
          }
          CHECK(diff <= 1e-11 * scale);  // rounding; a wrong kernel is off by O(scale)
        }
      }
    }
  }
}
