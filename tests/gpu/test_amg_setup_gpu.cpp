// The AMG set-up on the GPU (precond/cuda/amg_device_setup.hpp) against the host set-up with the
// same (MIS-2) aggregation: the aggregates equal exactly, the level matrices, P and R to 1e-12,
// the coarse factor to 1e-10; two GPU set-ups bitwise equal; DeviceAmg built on it applies the
// host's V-cycle to 1e-10; PCG with it converges (true residual recomputed on the host); the
// summary says where it was set up; update_values against a fresh set-up (bitwise) and the
// host's numeric re-set-up; greedy keeps the host set-up (b > 1: test_amg_block_setup_gpu.cpp);
// fp32. Also the trusted borrow
// of the set-up's matrices: the device structure hash against the host's computation of it, and
// the host structure downloaded only when a host use asks for it. spgemm_symbolic (the products'
// structures, P's included) against the host's structural product exactly, rows on the merge and
// on the bitmap mixed, spgemm_numeric (their values) against the host's product, bitwise for any
// launch shape (rows on the lanes and on a block each), and P = S·P_tent's values bitwise in A's
// row order, with rows of A longer than the kernels' buffers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/block_jacobi.hpp"
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/amg_filter.hpp"
#include "krysp/precond/cuda/amg_galerkin.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/csr_trusted.hpp"
#include "krysp/sparse/cuda/structure_hash.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "gpu/amg_setup_checks.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

struct Problem {
  std::string name;
  CsrMatrix<double> A;
};

std::vector<Problem> problems() {
  std::vector<Problem> p;
  p.push_back({"laplacian_3d 24", laplacian_3d(24, 24, 24)});
  p.push_back({"diffusion_3d 20", diffusion_3d(20, 1, 1, 0.01, 1e4)});
  p.push_back({"bcsstk06 b 1", test::load("bcsstk06")});
  // Random media: the filtered matrix's one-sided test and weighted lumping both act here.
  p.push_back({"media 16", diffusion_3d_random(16, 100, 1, 1, 1e4, 0.2, 1)});
  return p;
}

AmgOptions mis2(AmgSmoother s = AmgSmoother::Chebyshev) {
  AmgOptions o;
  o.aggregation = AmgAggregation::Mis2;
  o.block_size = 1;
  o.smoother = s;
  o.adaptive_cycles = 0;  // the set-up itself (the adapting cycles: test_amg_a*_gpu.cpp)
  o.dense_coarse_rows = 0;  // as the host's default (the device's: test_amg_dense_coarse_gpu.cpp)
  return o;
}

/// The values of D·A·D, d_i = 1 + amp·sin(0.7·i): new values of A's structure that move every
/// level's spectrum (at amp 0.3 the strength graph too).
std::vector<double> dad_values(const CsrMatrix<double>& A, double amp) {
  std::vector<double> w(A.values().data(), A.values().data() + A.nnz());
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k)
      w[std::size_t(k)] *= (1 + amp * std::sin(0.7 * i)) * (1 + amp * std::sin(0.7 * A.col_idx()(k)));
  return w;
}

/// A's structure with the values w.
CsrMatrix<double> with_values(const CsrMatrix<double>& A, const std::vector<double>& w) {
  return CsrMatrix<double>::from_arrays(
      A.rows(), A.cols(), std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
      std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), w);
}

using test::compare;
using test::host_aggregates;
using test::host_copy;
using test::host_factor;
using test::max_abs;
using test::max_diff;
using test::same;
using test::DeviceCsr;
using test::to_device;

}  // namespace

TEST_CASE("AMG GPU set-up: aggregates equal the host's MIS-2 exactly, levels to 1e-12") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    const AmgOptions o = mis2();
    const HostAmg<double> H(p.A, o);
    const auto G = detail::gpu_amg_setup(p.A, o, true);
    test::check_matches_host(G, H);
    MESSAGE(p.name, ": GPU set-up ", G.info.setup_seconds, " s, host ", H.info().setup_seconds, " s, ",
            G.levels.size(), " levels");
  }
}

TEST_CASE("AMG GPU set-up: two set-ups are bitwise equal") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    const auto G1 = detail::gpu_amg_setup(p.A, mis2(), true);
    const auto G2 = detail::gpu_amg_setup(p.A, mis2(), true);
    REQUIRE(G1.levels.size() == G2.levels.size());
    for (std::size_t l = 0; l < G1.levels.size(); ++l) {
      CAPTURE(l);
      const auto& a = G1.levels[l];
      const auto& b = G2.levels[l];
      CHECK(a.aggregates == b.aggregates);
      CHECK(G1.info.levels[l].lambda_estimate == G2.info.levels[l].lambda_estimate);
      CHECK(G1.info.levels[l].gershgorin == G2.info.levels[l].gershgorin);
      auto same = [](const amg::Csr<double>& x, const amg::Csr<double>& y) {
        return x.row_ptr == y.row_ptr && x.col_idx == y.col_idx && x.values == y.values;
      };
      if (l > 0) CHECK(same(host_copy(a.A), host_copy(b.A)));
      if (l + 1 < G1.levels.size()) {
        CHECK(same(host_copy(a.P), host_copy(b.P)));
        CHECK(same(host_copy(a.R), host_copy(b.R)));
      }
    }
    CHECK(host_factor(G1) == host_factor(G2));
  }
}

TEST_CASE("AMG GPU set-up: profile_setup times the phases, changes nothing; trusted matrices are valid CSR") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    AmgOptions po = mis2();
    po.profile_setup = true;
    const auto G1 = detail::gpu_amg_setup(p.A, mis2(), true);
    const auto G2 = detail::gpu_amg_setup(p.A, po, true);
    CHECK(G1.info.setup_phases.empty());
    REQUIRE(!G2.info.setup_phases.empty());
    double sum = 0;
    bool mis2_rounds = false;
    int symbolic = 0;
    for (const auto& ph : G2.info.setup_phases) {
      CHECK(ph.seconds >= 0);
      CHECK(ph.count >= 1);
      CHECK(ph.level >= -1);
      CHECK(ph.level < int(G2.levels.size()));
      sum += ph.seconds;
      mis2_rounds = mis2_rounds || ph.name == "MIS-2 rounds";
      for (const char* product : {"P = S*P_tent", "SpGEMM A*P", "SpGEMM R*(AP)"})
        symbolic += ph.name == std::string(product) + ": symbolic count" ||
                    ph.name == std::string(product) + ": symbolic fill";
    }
    CHECK(mis2_rounds);
    CHECK(symbolic == 6 * int(G2.levels.size() - 1));  // each product's two passes, every level but the coarsest
    CHECK(sum <= G2.info.setup_seconds * 1.001 + 1e-6);
    REQUIRE(G1.levels.size() == G2.levels.size());
    auto same = [](const amg::Csr<double>& x, const amg::Csr<double>& y) {
      return x.row_ptr == y.row_ptr && x.col_idx == y.col_idx && x.values == y.values;
    };
    // The borrowed matrices skipped the row-by-row checks: the full checks on a host copy pass,
    // and the device fingerprint is the host's computation of the same hash (never equal to the
    // checked path's FNV fingerprint).
    auto valid = [](const CsrMatrix<double>& M) {
      const StructureFingerprint f = M.fingerprint();  // before any host use
      const auto C = host_copy(M);
      const auto H = CsrMatrix<double>::from_arrays(C.rows, C.cols, C.row_ptr, C.col_idx, C.values);
      return f.kind == StructureHashKind::Device && H.fingerprint() != f && H.nnz() == f.nnz &&
             f.hash == detail::structure_hash_host(C.rows, C.cols, H.nnz(), C.row_ptr.data(), C.col_idx.data()) &&
             M.fingerprint() == f;
    };
    for (std::size_t l = 0; l < G1.levels.size(); ++l) {
      CAPTURE(l);
      CHECK(G1.levels[l].aggregates == G2.levels[l].aggregates);
      CHECK(G1.info.levels[l].lambda_estimate == G2.info.levels[l].lambda_estimate);
      if (l > 0) {
        CHECK(same(host_copy(G1.levels[l].A), host_copy(G2.levels[l].A)));
        CHECK(valid(G2.levels[l].A));
      }
      if (l + 1 < G1.levels.size()) {
        CHECK(same(host_copy(G1.levels[l].P), host_copy(G2.levels[l].P)));
        CHECK(same(host_copy(G1.levels[l].R), host_copy(G2.levels[l].R)));
        CHECK(valid(G2.levels[l].P));
        CHECK(valid(G2.levels[l].R));
      }
    }
    CHECK(host_factor(G1) == host_factor(G2));
    // DeviceAmg adds its adoption's phases; none without the flag.
    SpmvPlan<double> plan(p.A);
    DeviceAmg<double> M1(p.A, plan, mis2()), M2(p.A, plan, po);
    CHECK(M1.info().setup_phases.empty());
    bool adopt = false;
    for (const auto& ph : M2.info().setup_phases) adopt = adopt || ph.name.rfind("adopt:", 0) == 0;
    CHECK(adopt);
  }
}

TEST_CASE("AMG GPU set-up: DeviceAmg on it applies the host's MIS-2 V-cycle to 1e-10") {
  for (AmgSmoother s : {AmgSmoother::Chebyshev, AmgSmoother::L1Jacobi}) {
    for (const Problem& p : problems()) {
      CAPTURE(p.name);
      CAPTURE(to_string(s));
      const AmgOptions o = mis2(s);
      const SpmvPlan<double> plan(p.A);
      const DeviceAmg<double> dev(p.A, plan, o);
      CHECK(dev.set_up_on_gpu());
      CHECK(dev.summary().find("set up on the GPU") != std::string::npos);
      CHECK_THROWS_AS(dev.host(), InputError);
      const HostAmg<double> host(p.A, o);
      const index_t n = p.A.rows();
      const auto r = test::random_vector<double>(std::size_t(n));
      std::vector<double> zh(static_cast<std::size_t>(n)), zd(static_cast<std::size_t>(n));
      host.apply(r.data(), zh.data());
      auto dr = to_device(r);
      DeviceArray<double> dz(static_cast<std::size_t>(n));
      dev.apply(dr.data(), dz.data());
      dz.download(zd.data(), zd.size());
      const double d = max_diff(zd, zh), m = max_abs(zh);
      CHECK(d <= 1e-10 * m);
      // Bitwise determinism through DeviceAmg: a second object, the same result.
      const DeviceAmg<double> dev2(p.A, plan, o);
      DeviceArray<double> dz2(static_cast<std::size_t>(n));
      dev2.apply(dr.data(), dz2.data());
      std::vector<double> zd2(zd.size());
      dz2.download(zd2.data(), zd2.size());
      CHECK(zd2 == zd);
      MESSAGE(p.name, " ", to_string(s), ": ", dev.summary());
    }
  }
}

TEST_CASE("AMG GPU set-up: PCG through solve() converges (true residual on the host)") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    const index_t n = p.A.rows();
    std::vector<double> b(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) b[std::size_t(i)] = 1 + 0.5 * std::sin(0.37 * i);
    SolveOptions o;
    o.precond.kind = PrecondKind::Amg;
    o.precond.amg = mis2();
    o.cg.rtol = 1e-8;
    o.cg.max_iters = 2000;
    o.backend = Backend::Host;
    std::vector<double> xh, xd;
    const auto host = solve(p.A, b, xh, o);
    o.backend = Backend::Cuda;
    const auto dev = solve(p.A, b, xd, o);
    REQUIRE(dev.status == SolveStatus::Converged);
    CHECK(test::true_relative_residual(p.A, b, xd) <= 1e-8);
    CHECK(std::abs(dev.iterations - host.iterations) <= std::max<index_t>(2, host.iterations / 20));
    CHECK(dev.preconditioner.find("set up on the GPU") != std::string::npos);
    MESSAGE(p.name, ": ", dev.iterations, " iterations on the GPU (host ", host.iterations, "); ",
            dev.preconditioner);
  }
}

TEST_CASE("AMG GPU set-up: update_values (numeric, aggregates kept); greedy stays on the host, b = 3 not; fp32") {
  const auto A = diffusion_3d(16, 1, 1, 0.01, 1e4);
  const SpmvPlan<double> plan(A);
  DeviceAmg<double> dev(A, plan, mis2());
  REQUIRE(dev.set_up_on_gpu());
  std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
  for (double& e : v) e *= 2.0;
  const auto A2 = CsrMatrix<double>::from_arrays(
      A.rows(), A.cols(), std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
      std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), v);
  CHECK(dev.update_values(A2));
  CHECK(dev.info().resetups == 1);
  CHECK(dev.info().resetup_seconds > 0);
  // After the update: a second object through the same calls gives the same bits; the fresh
  // GPU set-up of A2 agrees to the λ estimates' settling (the update's Lanczos starts warm).
  const SpmvPlan<double> plan2(A2);
  const DeviceAmg<double> fresh(A2, plan2, mis2());
  DeviceAmg<double> again(A, plan, mis2());
  CHECK(again.update_values(A2));
  const auto r = test::random_vector<double>(std::size_t(A.rows()));
  auto dr = to_device(r);
  DeviceArray<double> z1(r.size()), z2(r.size()), z3(r.size());
  dev.apply(dr.data(), z1.data());
  fresh.apply(dr.data(), z2.data());
  again.apply(dr.data(), z3.data());
  std::vector<double> h1(r.size()), h2(r.size()), h3(r.size());
  z1.download(h1.data(), h1.size());
  z2.download(h2.data(), h2.size());
  z3.download(h3.data(), h3.size());
  CHECK(h1 == h3);
  {
    const double d = max_diff(h1, h2), m = max_abs(h2);
    CHECK(d <= 1e-2 * m);
  }

  // Values that change the strength graph (D·A·D): the numeric re-set-up keeps the aggregates,
  // as the host's does; both agree to 1e-10.
  const auto A3 = with_values(A, dad_values(A, 0.3));
  HostAmg<double> host(A, mis2());
  host.update_values(A3);
  dev.update_values(A3);
  CHECK(dev.info().resetups == 2);
  {
    std::vector<double> zh(r.size()), zd(r.size());
    host.apply(r.data(), zh.data());
    DeviceArray<double> dz(r.size());
    dev.apply(dr.data(), dz.data());
    dz.download(zd.data(), zd.size());
    const double d = max_diff(zd, zh), m = max_abs(zh);
    CHECK(d <= 1e-10 * m);
    MESSAGE("numeric re-set-up on the GPU: ", dev.info().resetup_seconds, " s (full ", dev.info().setup_seconds, " s)");
  }

  AmgOptions g = mis2();
  g.aggregation = AmgAggregation::Greedy;
  CHECK_FALSE(DeviceAmg<double>(A, plan, g).set_up_on_gpu());
  const auto K = test::load("bcsstk06");
  const SpmvPlan<double> planK(K);
  AmgOptions b3 = mis2();
  b3.block_size = 3;
  CHECK(DeviceAmg<double>(K, planK, b3).set_up_on_gpu());  // test_amg_block_setup_gpu.cpp compares it
  CHECK(DeviceAmg<double>(K, planK, AmgOptions{}).set_up_on_gpu());

  // fp32: the set-up computes in double; the V-cycle's values in float agree with the host's.
  std::vector<float> vf(A.values().data(), A.values().data() + A.nnz());
  const auto Af = CsrMatrix<float>::from_arrays(
      A.rows(), A.cols(), std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
      std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), vf);
  const SpmvPlan<float> planf(Af);
  const DeviceAmg<float> devf(Af, planf, mis2());
  CHECK(devf.set_up_on_gpu());
  const HostAmg<float> hostf(Af, mis2());
  std::vector<float> rf(r.begin(), r.end()), zh(rf.size()), zd(rf.size());
  hostf.apply(rf.data(), zh.data());
  auto drf = to_device(rf);
  DeviceArray<float> dzf(rf.size());
  devf.apply(drf.data(), dzf.data());
  dzf.download(zd.data(), zd.size());
  const double d = max_diff(zd, zh), m = max_abs(zh);
  CHECK(d <= 1e-4 * m);
}

namespace {
/// A random CSR structure: rows of 0..max_len distinct sorted columns.
void random_structure(index_t rows, index_t cols, int max_len, std::mt19937_64& rng, std::vector<index_t>& rp,
                      std::vector<index_t>& ci) {
  rp.assign(1, 0);
  ci.clear();
  std::uniform_int_distribution<int> len(0, max_len);
  std::uniform_int_distribution<index_t> col(0, cols - 1);
  for (index_t i = 0; i < rows; ++i) {
    std::vector<index_t> r;
    for (int k = len(rng); k > 0; --k) r.push_back(col(rng));
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    ci.insert(ci.end(), r.begin(), r.end());
    rp.push_back(index_t(ci.size()));
  }
}
}  // namespace

TEST_CASE("structure hash: the device pass equals the host's computation on random structures") {
  std::mt19937_64 rng(2026);
  const index_t sizes[][3] = {{0, 1, 0}, {1, 1, 1}, {17, 9, 4}, {1000, 1000, 12}, {300000, 5000, 30}};
  for (const auto& sz : sizes) {
    CAPTURE(sz[0]);
    std::vector<index_t> rp, ci;
    random_structure(sz[0], sz[1], int(sz[2]), rng, rp, ci);
    const index_t nnz = index_t(ci.size());
    auto drp = to_device(rp);
    DeviceArray<index_t> dci(std::max<std::size_t>(ci.size(), 1));
    if (nnz > 0) dci.upload(ci.data(), ci.size());
    const auto d = detail::structure_hash_device(sz[0], sz[1], nnz, drp.data(), dci.data());
    CHECK(d.hash == detail::structure_hash_host(sz[0], sz[1], nnz, rp.data(), ci.data()));
    CHECK(d.first_offset == 0);
    CHECK(d.last_offset == nnz);
    CHECK(detail::structure_hash_device(sz[0], sz[1], nnz, drp.data(), dci.data()).hash == d.hash);  // deterministic
    if (nnz > 1) {  // one column moved: another hash
      ci[std::size_t(nnz) / 2] = (ci[std::size_t(nnz) / 2] + 1) % sz[1];
      dci.upload(ci.data(), ci.size());
      CHECK(detail::structure_hash_device(sz[0], sz[1], nnz, drp.data(), dci.data()).hash != d.hash);
    }
  }
}

TEST_CASE("trusted borrow: no structure download until a host use asks; then the right arrays") {
  const auto A = diffusion_3d(12, 1, 1, 0.01, 1e4);
  const std::vector<index_t> rp(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1);
  const std::vector<index_t> ci(A.col_idx().data(), A.col_idx().data() + A.nnz());
  const std::vector<double> va(A.values().data(), A.values().data() + A.nnz());
  auto drp = to_device(rp);
  auto dci = to_device(ci);
  auto dva = to_device(va);
  const std::uint64_t before = device_to_host_copies();
  const auto M = detail::CsrTrustedBorrow::from_device_pointers(A.rows(), A.cols(), A.nnz(), drp.data(), dci.data(),
                                                                dva.data());
  CHECK(device_to_host_copies() - before == 1);  // the 16-byte hash summary only
  CHECK(M.nnz() == A.nnz());
  CHECK(M.fingerprint().kind == StructureHashKind::Device);
  CHECK(M.fingerprint() != A.fingerprint());
  CHECK(M.fingerprint().hash == detail::structure_hash_host(A.rows(), A.cols(), A.nnz(), rp.data(), ci.data()));
  const RowStats s = M.row_stats();  // on the device, bitwise the host's
  const RowStats h = A.row_stats();
  CHECK(s.mean == h.mean);
  CHECK(s.stddev == h.stddev);
  CHECK(s.max_len == h.max_len);
  CHECK(s.empty_rows == h.empty_rows);
  const SpmvPlan<double> plan(M);  // plans take it without a host structure
  CHECK(plan.matches(M));
  const auto copy = M;  // copies share the lazy structure
  const CsrView<double> v = copy.host_view();  // the first host use: downloaded now
  CHECK(std::vector<index_t>(v.row_ptr, v.row_ptr + A.rows() + 1) == rp);
  CHECK(std::vector<index_t>(v.col_idx, v.col_idx + A.nnz()) == ci);
  CHECK(std::vector<double>(v.values, v.values + A.nnz()) == va);
  CHECK(M.row_ptr().data() == v.row_ptr);  // one download, seen by every copy
  CHECK(M.col_idx().data() == v.col_idx);
  const auto x = test::random_vector<double>(std::size_t(A.cols()));
  std::vector<double> y1(std::size_t(A.rows())), y2(y1.size());
  A.multiply_host(x.data(), y1.data());
  M.multiply_host(x.data(), y2.data());
  CHECK(y1 == y2);
  CHECK(M.fingerprint() == copy.fingerprint());
}

TEST_CASE("trusted borrow: with_structure_of a lazy matrix, and a lazy matrix's row_stats after download") {
  const auto A = laplacian_3d(9, 7, 5);
  const std::vector<index_t> rp(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1);
  const std::vector<index_t> ci(A.col_idx().data(), A.col_idx().data() + A.nnz());
  const std::vector<double> va(A.values().data(), A.values().data() + A.nnz());
  const std::vector<float> vf(va.begin(), va.end());
  auto drp = to_device(rp);
  auto dci = to_device(ci);
  auto dva = to_device(va);
  auto dvf = to_device(vf);
  const auto M = detail::CsrTrustedBorrow::from_device_pointers(A.rows(), A.cols(), A.nnz(), drp.data(), dci.data(),
                                                                dva.data());
  const auto F = CsrMatrix<float>::with_structure_of(M, dvf.data());
  CHECK(F.fingerprint() == CsrMatrix<float>::with_structure_of(M, dvf.data()).fingerprint());
  CHECK(std::vector<index_t>(F.col_idx().data(), F.col_idx().data() + F.nnz()) == ci);
  CHECK(std::vector<index_t>(F.row_ptr().data(), F.row_ptr().data() + F.rows() + 1) == rp);
  CHECK(std::vector<float>(F.values().data(), F.values().data() + F.nnz()) == vf);
  (void)M.row_ptr();  // downloaded: row_stats() from the host arrays, the same numbers
  CHECK(M.row_stats().stddev == A.row_stats().stddev);
}

TEST_CASE("AMG GPU set-up: a numeric re-set-up gathers R and the coarse matrices, bitwise a fresh set-up's") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    AmgOptions po = mis2();
    po.profile_setup = true;
    const auto G = detail::gpu_amg_setup(p.A, mis2(), true);
    // 2·A: the same strength graphs (exact scaling), so a fresh set-up makes the kept aggregates.
    std::vector<double> v(p.A.values().data(), p.A.values().data() + p.A.nnz());
    for (double& e : v) e *= 2.0;
    const auto A2 = CsrMatrix<double>::from_arrays(
        p.A.rows(), p.A.cols(), std::vector<index_t>(p.A.row_ptr().data(), p.A.row_ptr().data() + p.A.rows() + 1),
        std::vector<index_t>(p.A.col_idx().data(), p.A.col_idx().data() + p.A.nnz()), v);
    const auto F = detail::gpu_amg_setup(A2, mis2());
    // The Lanczos runs from the fixed start vector (warm_lanczos false), as the fresh set-up's:
    // the numeric path alone is compared, bitwise. The warm start has its own case below.
    const auto R = detail::gpu_amg_setup(A2, po, false, G.plan, true, false);        // with matrices
    const auto V = detail::gpu_amg_setup(A2, mis2(), false, G.plan, false, false);  // values only (DeviceAmg's)
    REQUIRE(F.levels.size() == R.levels.size());
    REQUIRE(F.levels.size() == V.levels.size());
    auto same = [](const amg::Csr<double>& x, const amg::Csr<double>& y) {
      return x.row_ptr == y.row_ptr && x.col_idx == y.col_idx && x.values == y.values;
    };
    auto values = [](const detail::DeviceCsrArrays<double>& a) {
      std::vector<double> h(static_cast<std::size_t>(a.nnz));
      if (a.nnz > 0) a.values.download(h.data(), h.size());
      return h;
    };
    for (std::size_t l = 0; l < F.levels.size(); ++l) {
      CAPTURE(l);
      CHECK(F.info.levels[l].lambda_estimate == R.info.levels[l].lambda_estimate);
      if (l > 0) {
        CHECK(same(host_copy(F.levels[l].A), host_copy(R.levels[l].A)));
        CHECK(values(F.levels[l].a) == values(V.levels[l].a));
        CHECK(R.levels[l].A.fingerprint() == F.levels[l].A.fingerprint());
      }
      if (l + 1 < F.levels.size()) {
        CHECK(same(host_copy(F.levels[l].P), host_copy(R.levels[l].P)));
        CHECK(same(host_copy(F.levels[l].R), host_copy(R.levels[l].R)));
        CHECK(values(F.levels[l].p) == values(V.levels[l].p));
        CHECK(values(F.levels[l].r) == values(V.levels[l].r));
      }
    }
    CHECK(host_factor(F) == host_factor(R));
    CHECK(host_factor(F) == host_factor(V));
    // The gathers ran (not the sorts) on every level with a coarser one, and the products'
    // numeric phase alone (P, A·P, R·(A·P); no symbolic count or fill of the products, no
    // structure of P).
    int gathers = 0, sorts = 0, numeric = 0, symbolic = 0;
    for (const auto& ph : R.info.setup_phases) {
      gathers += ph.name == "R = P^T (kept permutation)" || ph.name == "symmetrise (kept maps)";
      sorts += ph.name == "transpose R = P^T" || ph.name == "transpose (RAP)^T";
      const bool num = ph.name.size() >= 9 && ph.name.compare(ph.name.size() - 9, 9, ": numeric") == 0;
      numeric += num;
      symbolic += !num && (ph.name.rfind("SpGEMM", 0) == 0 || ph.name.rfind("P = S*P_tent", 0) == 0);
    }
    CHECK(gathers == 2 * int(F.levels.size() - 1));
    CHECK(sorts == 0);
    CHECK(numeric == 3 * int(F.levels.size() - 1));
    CHECK(symbolic == 0);
    // The plan's aggregates and patterns belong to its options and structure: other ones are
    // refused, not reused.
    AmgOptions other = mis2();
    other.theta = 0.37;  // not a θ the auto rule picks
    CHECK_THROWS_WITH_AS(detail::gpu_amg_setup(A2, other, false, G.plan),
                         doctest::Contains("was given the plan of a set-up for"), InputError);
    AmgOptions coarser = mis2();
    coarser.coarse_size = 1000;
    CHECK_THROWS_AS(detail::gpu_amg_setup(A2, coarser, false, G.plan), InputError);
    const auto B = laplacian_3d(7, 6, 5);
    CHECK_THROWS_AS(detail::gpu_amg_setup(B, mis2(), false, G.plan), InputError);
  }
}

TEST_CASE("AMG GPU set-up: a re-set-up's warm Lanczos: fewer steps, λ to its settling, same bits each time") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    const auto G = detail::gpu_amg_setup(p.A, mis2());
    // New values that move every level's spectrum: D·A·D with D = 1 + 0.3 sin.
    const std::vector<double> w = dad_values(p.A, 0.3);
    const auto A3 = with_values(p.A, w);
    const auto cold = detail::gpu_amg_setup(A3, mis2(), false, G.plan, true, false);
    const auto warm = detail::gpu_amg_setup(A3, mis2(), false, G.plan);
    const auto warm2 = detail::gpu_amg_setup(A3, mis2(), false, G.plan);
    REQUIRE(cold.levels.size() == warm.levels.size());
    int cold_steps = 0, warm_steps = 0;
    for (std::size_t l = 0; l < warm.levels.size(); ++l) {
      CAPTURE(l);
      const auto& c = cold.info.levels[l];
      const auto& h = warm.info.levels[l];
      // Each estimate is a Ritz value, so below λmax; both settled to kAmgLanczosSettleTol.
      CHECK(std::abs(h.lambda_estimate - c.lambda_estimate) <= 2 * kAmgLanczosSettleTol * c.lambda_estimate);
      CHECK(h.lambda_estimate <= c.gershgorin * (1 + 1e-12));
      CHECK(h.lambda_estimate == warm2.info.levels[l].lambda_estimate);
      cold_steps += c.lanczos_steps;
      warm_steps += h.lanczos_steps;
      if (l > 0) CHECK(host_copy(warm.levels[l].A).values == host_copy(warm2.levels[l].A).values);
    }
    CHECK(host_factor(warm) == host_factor(warm2));
    MESSAGE(p.name, ": Lanczos steps over the levels, cold ", cold_steps, ", warm ", warm_steps);
    CHECK(warm_steps < cold_steps);
    // The warm hierarchy preconditions as well: PCG iterations within one of the cold one's.
    std::vector<double> b(static_cast<std::size_t>(A3.rows()));
    for (index_t i = 0; i < A3.rows(); ++i) b[std::size_t(i)] = 1 + 0.5 * std::sin(0.37 * i);
    SolveOptions o;
    o.precond.kind = PrecondKind::Amg;
    o.precond.amg = mis2();
    o.cg.rtol = 1e-8;
    o.backend = Backend::Cuda;
    CgSolver solver(A3, o);
    std::vector<double> x1, x2;
    const auto r1 = solver.solve(b, x1);
    solver.update_values(w);  // the same values: a warm numeric re-set-up
    const auto r2 = solver.solve(b, x2);
    REQUIRE(r1.converged());
    REQUIRE(r2.converged());
    CHECK(r2.preconditioner.find("numeric re-set-up") != std::string::npos);
    CHECK(std::abs(r1.iterations - r2.iterations) <= 1);
    CHECK(test::true_relative_residual(A3, b, x2) <= 1e-8);
  }
}

TEST_CASE("AMG GPU set-up: a level whose Lanczos ran past the recorded steps still starts warm") {
  // Level 1 of the 128³ Laplacian takes more Lanczos steps than the full set-up records
  // (kAmgLanczosRecordSteps): its Ritz vector comes from the first ones, and the re-set-up there
  // settles in fewer steps than the full run, to the settling tolerance of a cold one.
  const auto A = laplacian_3d(128, 128, 128);
  const auto G = detail::gpu_amg_setup(A, mis2());
  std::size_t long_level = 0;
  for (std::size_t l = 0; l < G.info.levels.size() && long_level == 0; ++l)
    if (G.info.levels[l].lanczos_steps > kAmgLanczosRecordSteps) long_level = l;
  REQUIRE(long_level > 0);  // the case this test is for (level 0 of a Laplacian settles sooner)
  const auto A2 = with_values(A, dad_values(A, 0.05));
  const auto cold = detail::gpu_amg_setup(A2, mis2(), false, G.plan, true, false);
  const auto warm = detail::gpu_amg_setup(A2, mis2(), false, G.plan);
  REQUIRE(warm.info.levels.size() == cold.info.levels.size());
  const auto& c = cold.info.levels[long_level];
  const auto& h = warm.info.levels[long_level];
  MESSAGE("level ", long_level, ": full set-up ", G.info.levels[long_level].lanczos_steps, " Lanczos steps, cold re-set-up ",
          c.lanczos_steps, ", warm ", h.lanczos_steps);
  CHECK(c.lanczos_steps > kAmgLanczosRecordSteps);
  CHECK(h.lanczos_steps < c.lanczos_steps / 2);
  CHECK(std::abs(h.lambda_estimate - c.lambda_estimate) <= 2 * kAmgLanczosSettleTol * c.lambda_estimate);
}

namespace {
/// A random CSR matrix on the host: rows of 0..max_len distinct sorted columns, values in [-1, 1).
amg::Csr<double> random_csr(index_t rows, index_t cols, int max_len, std::mt19937_64& rng) {
  amg::Csr<double> M;
  M.rows = rows;
  M.cols = cols;
  random_structure(rows, cols, max_len, rng, M.row_ptr, M.col_idx);
  std::uniform_real_distribution<double> v(-1, 1);
  for (std::size_t k = 0; k < M.col_idx.size(); ++k) M.values.push_back(v(rng));
  return M;
}

/// M with some rows replaced by `len` distinct sorted columns (every `every`-th row from `first`).
amg::Csr<double> with_long_rows(const amg::Csr<double>& M, index_t every, index_t first, index_t len,
                                std::mt19937_64& rng) {
  amg::Csr<double> L;
  L.rows = M.rows;
  L.cols = M.cols;
  L.row_ptr.assign(1, 0);
  std::vector<index_t> all(static_cast<std::size_t>(M.cols));
  for (index_t j = 0; j < M.cols; ++j) all[std::size_t(j)] = j;
  for (index_t i = 0; i < M.rows; ++i) {
    const index_t b = M.row_ptr[std::size_t(i)], e = M.row_ptr[std::size_t(i) + 1];
    if (i % every == first) {
      std::shuffle(all.begin(), all.end(), rng);
      std::vector<index_t> r(all.begin(), all.begin() + std::min<index_t>(len, M.cols));
      std::sort(r.begin(), r.end());
      for (index_t j : r) L.col_idx.push_back(j), L.values.push_back(0.5);
    } else {
      L.col_idx.insert(L.col_idx.end(), M.col_idx.begin() + b, M.col_idx.begin() + e);
      L.values.insert(L.values.end(), M.values.begin() + b, M.values.begin() + e);
    }
    L.row_ptr.push_back(L.nnz());
  }
  return L;
}

/// `len` distinct random columns in [lo, hi), sorted.
std::vector<index_t> sample_columns(index_t lo, index_t hi, index_t len, std::mt19937_64& rng) {
  std::vector<index_t> r;
  len = std::min(len, hi - lo);
  if (4 * len > hi - lo) {  // dense: a shuffle of all
    for (index_t j = lo; j < hi; ++j) r.push_back(j);
    std::shuffle(r.begin(), r.end(), rng);
    r.resize(std::size_t(len));
  } else {  // sparse: draw until there are len
    std::uniform_int_distribution<index_t> col(lo, hi - 1);
    while (index_t(r.size()) < len) {
      r.push_back(col(rng));
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
    }
  }
  std::sort(r.begin(), r.end());
  return r;
}

/// A rows × cols matrix whose row i is row(i) (sorted distinct columns), values in [-1, 1).
template <class Row>
amg::Csr<double> csr_of_rows(index_t rows, index_t cols, Row row, std::mt19937_64& rng) {
  amg::Csr<double> M;
  M.rows = rows;
  M.cols = cols;
  M.row_ptr.assign(1, 0);
  std::uniform_real_distribution<double> v(-1, 1);
  for (index_t i = 0; i < rows; ++i) {
    for (index_t j : row(i)) M.col_idx.push_back(j), M.values.push_back(v(rng));
    M.row_ptr.push_back(M.nnz());
  }
  return M;
}

/// Rows of 0-4 entries, every 997th and the 24 from row 5000 of 300. With 600,000 rows, more than
/// the long-row kernels' grid (8 blocks of 256 a multiprocessor at most) tests in one pass on up
/// to 292 multiprocessors, so those kernels deal the rows in runs of 8.
amg::Csr<double> many_rows(index_t rows, index_t cols, std::mt19937_64& rng) {
  std::uniform_int_distribution<index_t> len(0, 4);
  return csr_of_rows(
      rows, cols,
      [&](index_t i) {
        const bool long_row = i % 997 == 0 || (i >= 5000 && i < 5024);
        return sample_columns(0, cols, long_row ? 300 : len(rng), rng);
      },
      rng);
}

/// Each entry (i, J) of M as K entries (i, K·J .. K·J + K − 1), values in [-1, 1): the runs of
/// consecutive columns a prolongator with K near-nullspace vectors has.
amg::Csr<double> runs_of(const amg::Csr<double>& M, index_t K, std::mt19937_64& rng) {
  return csr_of_rows(
      M.rows, M.cols * K,
      [&](index_t i) {
        std::vector<index_t> r;
        for (index_t p = M.row_ptr[std::size_t(i)]; p < M.row_ptr[std::size_t(i) + 1]; ++p)
          for (index_t m = 0; m < K; ++m) r.push_back(K * M.col_idx[std::size_t(p)] + m);
        return r;
      },
      rng);
}

/// The rows of M with more than `above` entries.
index_t rows_longer(const amg::Csr<double>& M, index_t above) {
  index_t n = 0;
  for (index_t i = 0; i < M.rows; ++i) n += M.row_ptr[std::size_t(i) + 1] - M.row_ptr[std::size_t(i)] > above;
  return n;
}

/// spgemm_numeric(A, B) into C's structure with `lanes`, downloaded; *missing: its flag.
std::vector<double> numeric_product(const amg::Csr<double>& A, const amg::Csr<double>& B, const amg::Csr<double>& C,
                                    int lanes, int* missing) {
  const DeviceCsr a(A), b(B), c(C);
  DeviceArray<double> out(std::max<std::size_t>(C.values.size(), 1));
  DeviceArray<int> flag(1);
  flag.zero();
  detail::spgemm_numeric(C.rows, a.rp.data(), a.ci.data(), a.va.data(), B.rows, B.nnz(), b.rp.data(), b.ci.data(),
                         b.va.data(), c.rp.data(), c.ci.data(), C.nnz(), out.data(), lanes, flag.data());
  std::vector<double> h(C.values.size());
  if (!h.empty()) out.download(h.data(), h.size());
  flag.download(missing, 1);
  return h;
}
}  // namespace

TEST_CASE("AMG GPU set-up: spgemm_numeric equals the host product to rounding, bitwise for any lanes") {
  std::mt19937_64 rng(20261126);
  struct Case {
    std::string name;
    amg::Csr<double> A, B;
    bool mixed = false;  // rows of C on the lanes and on a block each, at every lanes
  };
  std::vector<Case> cases;
  // Short rows (the lanes' shared slots), and rows of C longer than 8 slots a lane and than 64
  // (a block each, C's row in shared memory).
  cases.push_back({"short rows", random_csr(500, 400, 8, rng), random_csr(400, 300, 6, rng)});
  cases.push_back({"shorter rows", random_csr(2000, 1500, 4, rng), random_csr(1500, 800, 3, rng)});
  cases.push_back({"long rows of C", random_csr(60, 300, 40, rng), random_csr(300, 900, 60, rng)});
  cases.push_back({"one empty row", random_csr(1, 5, 0, rng), random_csr(5, 5, 3, rng)});
  // Rows of C of 0 to ~180 entries (on the lanes or a block, by the lanes' slots) and every 10th
  // of ~3500, past the block's 2048 shared slots (summed in global memory).
  cases.push_back({"mixed, rows past the block's slots",
                   with_long_rows(random_csr(400, 1000, 6, rng), 10, 3, 200, rng), random_csr(1000, 5000, 60, rng),
                   true});
  // Rows of C of ~300 entries with ~30 terms a sum (the block's barrier between A's entries
  // keeps their order), every 5th row short (3 entries of A).
  cases.push_back({"many terms a sum", with_long_rows(random_csr(80, 600, 1000, rng), 5, 2, 3, rng),
                   random_csr(600, 300, 60, rng), true});
  // 600,000 rows, a few of C's ~600 entries (the block kernel's rows dealt in runs).
  cases.push_back({"many rows", many_rows(600000, 2000, rng), random_csr(2000, 1000, 6, rng), true});
  // B's rows in runs of 6 and of 36 consecutive columns, as a prolongator with rigid-body modes
  // has them.
  cases.push_back({"runs of 6 columns", random_csr(3000, 1200, 8, rng),
                   runs_of(random_csr(1200, 300, 3, rng), 6, rng)});
  cases.push_back({"runs of 36 columns", random_csr(2000, 900, 4, rng),
                   runs_of(runs_of(random_csr(900, 40, 2, rng), 6, rng), 6, rng)});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const amg::Csr<double>& A = c.A;
    const amg::Csr<double>& B = c.B;
    const amg::Csr<double> C = amg::multiply(A, B);
    if (c.mixed)
      for (int lanes : {0, 1, 2, 4, 8, 16, 32}) {
        CAPTURE(lanes);
        const index_t above = detail::spgemm_numeric_block_above(C.rows, B.rows, B.nnz(), C.nnz(), lanes);
        const index_t block = rows_longer(C, above);
        CHECK(block > 0);
        // Both kernels, unless the lanes' groups are fewer than the multiprocessors: then every
        // row past 16 entries takes a block.
        CHECK((block < C.rows || above == 16));
      }
    // A bound of the rounding of each entry: Σ|a_ik·b_kj| times a few ulps a term.
    std::vector<double> bound(C.values.size(), 0.0);
    for (index_t i = 0; i < A.rows; ++i)
      for (index_t p = A.row_ptr[std::size_t(i)]; p < A.row_ptr[std::size_t(i) + 1]; ++p) {
        const index_t r = A.col_idx[std::size_t(p)];
        for (index_t q = B.row_ptr[std::size_t(r)]; q < B.row_ptr[std::size_t(r) + 1]; ++q) {
          const auto b = C.col_idx.begin() + C.row_ptr[std::size_t(i)], e = C.col_idx.begin() + C.row_ptr[std::size_t(i) + 1];
          const auto at = std::lower_bound(b, e, B.col_idx[std::size_t(q)]);
          REQUIRE(at != e);
          bound[std::size_t(at - C.col_idx.begin())] += std::abs(A.values[std::size_t(p)] * B.values[std::size_t(q)]);
        }
      }
    int missing = -1;
    const std::vector<double> first = numeric_product(A, B, C, 0, &missing);
    CHECK(missing == 0);
    REQUIRE(first.size() == C.values.size());
    std::size_t bad = 0;
    for (std::size_t p = 0; p < first.size(); ++p)
      bad += std::abs(first[p] - C.values[p]) > 1e-13 * bound[p] + 1e-300;  // at most ~100 terms a sum
    CHECK(bad == 0);
    for (int lanes : {0, 1, 2, 4, 8, 16, 32}) {
      CAPTURE(lanes);
      CHECK(numeric_product(A, B, C, lanes, &missing) == first);  // bitwise: run to run, any lanes
      CHECK(missing == 0);
    }
    // A structure missing a column of the product is flagged: the first of the longest row (a
    // block's, where the case has long rows).
    if (C.nnz() > 0) {
      std::size_t r = 0;
      for (std::size_t i = 1; i < std::size_t(C.rows); ++i)
        if (C.row_ptr[i + 1] - C.row_ptr[i] > C.row_ptr[r + 1] - C.row_ptr[r]) r = i;
      amg::Csr<double> D = C;
      D.col_idx.erase(D.col_idx.begin() + D.row_ptr[r]);
      D.values.erase(D.values.begin() + D.row_ptr[r]);
      for (std::size_t i = r + 1; i < D.row_ptr.size(); ++i) D.row_ptr[i] -= 1;
      for (int lanes : {0, 1, 32}) {
        CAPTURE(lanes);
        numeric_product(A, B, D, lanes, &missing);
        CHECK(missing == 1);
      }
    }
  }
  // A superset structure: the extra positions are zero, the rest unchanged.
  const amg::Csr<double> A = random_csr(300, 200, 6, rng), B = random_csr(200, 100, 5, rng);
  const amg::Csr<double> C = amg::multiply(A, B);
  amg::Csr<double> W;
  W.rows = C.rows;
  W.cols = C.cols;
  W.row_ptr.assign(1, 0);
  for (index_t i = 0; i < C.rows; ++i) {
    for (index_t j = 0; j < C.cols; ++j) W.col_idx.push_back(j), W.values.push_back(0.0);
    W.row_ptr.push_back(index_t(W.col_idx.size()));
  }
  int missing = -1;
  const std::vector<double> wide = numeric_product(A, B, W, 0, &missing), exact = numeric_product(A, B, C, 0, &missing);
  CHECK(missing == 0);
  std::size_t wrong = 0;
  for (index_t i = 0; i < C.rows; ++i) {
    std::size_t q = std::size_t(C.row_ptr[std::size_t(i)]);
    for (index_t j = 0; j < C.cols; ++j) {
      const double w = wide[std::size_t(i) * std::size_t(C.cols) + std::size_t(j)];
      if (q < std::size_t(C.row_ptr[std::size_t(i) + 1]) && C.col_idx[q] == j)
        wrong += w != exact[q++];
      else
        wrong += w != 0.0;
    }
  }
  CHECK(wrong == 0);
}

namespace {
/// spgemm_symbolic_count, a host scan and spgemm_symbolic_fill with `lanes`: C's row offsets and
/// columns, downloaded.
std::pair<std::vector<index_t>, std::vector<index_t>> symbolic_product(const amg::Csr<double>& A,
                                                                       const amg::Csr<double>& B, int lanes) {
  const DeviceCsr a(A), b(B);
  DeviceArray<index_t> counts(std::max<std::size_t>(std::size_t(A.rows), 1));
  detail::spgemm_symbolic_count(A.rows, a.rp.data(), a.ci.data(), A.nnz(), b.rp.data(), b.ci.data(), B.cols,
                                counts.data(), lanes);
  std::vector<index_t> c(static_cast<std::size_t>(A.rows)), rp(1, 0);
  if (!c.empty()) counts.download(c.data(), c.size());
  for (index_t x : c) rp.push_back(rp.back() + x);
  const auto drp = to_device(rp);
  DeviceArray<index_t> dci(std::max<std::size_t>(std::size_t(rp.back()), 1));
  detail::spgemm_symbolic_fill(A.rows, a.rp.data(), a.ci.data(), A.nnz(), b.rp.data(), b.ci.data(), B.cols,
                               drp.data(), dci.data(), lanes);
  std::vector<index_t> ci(static_cast<std::size_t>(rp.back()));
  if (!ci.empty()) dci.download(ci.data(), ci.size());
  return {rp, ci};
}

}  // namespace

namespace {
/// The lanes a row prolongator_values takes (amg_galerkin.cu: A's mean row rounded up to a power
/// of two, at most 32) and the entries of A's row its shared buffer holds (8 a lane; a longer row
/// is read in chunks of that many).
int prolongator_lanes(index_t rows, index_t nnz) {
  const double mean = rows > 0 ? double(nnz) / double(rows) : 1.0;
  int w = 1;
  while (w < 32 && double(w) < mean) w *= 2;
  return w;
}
index_t prolongator_buffer(const amg::Csr<double>& A) { return 8 * prolongator_lanes(A.rows, A.nnz()); }
/// The rows of A the symbolic product's register cursors hold (amg_galerkin.cu: lanes half the
/// mean row, rounded up to a power of two, at most 32; 4 cursors a lane, 8 with 32 lanes); the
/// entries past them take the binary-search path.
index_t symbolic_cursors(const amg::Csr<double>& A) {
  const double half = A.rows > 0 ? 0.5 * double(A.nnz()) / double(A.rows) : 1.0;
  int w = 1;
  while (w < 32 && double(w) < half) w *= 2;
  return index_t(w == 32 ? 8 : 4) * w;
}
index_t longest_row(const amg::Csr<double>& M) {
  index_t m = 0;
  for (index_t i = 0; i < M.rows; ++i) m = std::max(m, M.row_ptr[std::size_t(i) + 1] - M.row_ptr[std::size_t(i)]);
  return m;
}
}  // namespace

TEST_CASE("AMG GPU set-up: P = S*P_tent, structure by the symbolic product and values, equals the host's") {
  std::mt19937_64 rng(7);
  struct Shape {
    index_t n;
    int max_len;                   // random rows of 0..max_len entries (plus the diagonal)
    std::vector<index_t> long_len;  // lengths given in turn to every `every`-th row from row 7
    index_t every;
  };
  // Rows shorter than the values kernel's buffer (8 entries a lane), and longer ones, read in
  // chunks: a few rows of 700-1200 entries among rows of about 4 (8 lanes, 64 entries a chunk,
  // up to 19 chunks); rows at and around chunk boundaries with 32 lanes (256, 257, 512, 768,
  // 769). The 400-row case has rows of up to about 220 entries at 32 lanes (one chunk).
  const std::vector<Shape> shapes = {{1, 12, {}, 0},
                                     {50, 12, {}, 0},
                                     {3000, 12, {}, 0},
                                     {400, 300, {}, 0},
                                     {3000, 6, {300}, 500},
                                     {3000, 6, {700, 900, 1200}, 300},
                                     {2000, 40, {256, 257, 512, 700, 768, 769, 1100}, 97}};
  for (const Shape& shape : shapes) {
    const index_t n = shape.n;  // plain variables: lambdas below capture them
    const bool long_rows = !shape.long_len.empty();
    CAPTURE(n);
    CAPTURE(shape.max_len);
    // P_tent: aggregates of about 4 nodes, a fifth of the nodes left out (an empty row).
    const index_t nc = std::max<index_t>(1, n / 4);
    std::uniform_int_distribution<index_t> pick(0, nc - 1);
    std::uniform_real_distribution<double> u(0.1, 1.0), u01(0.0, 1.0);
    amg::Csr<double> T;
    T.rows = n;
    T.cols = nc;
    T.row_ptr.assign(1, 0);
    std::vector<double> dinv(static_cast<std::size_t>(n));
    std::vector<index_t> left_out;  // the nodes without a P_tent entry
    for (index_t i = 0; i < n; ++i) {
      if (u01(rng) >= 0.2)
        T.col_idx.push_back(pick(rng)), T.values.push_back(u(rng));
      else
        left_out.push_back(i);
      T.row_ptr.push_back(T.nnz());
      dinv[std::size_t(i)] = u(rng);
    }
    // A: random rows plus the diagonal. With long rows: every `every`-th row from row 7 gets the
    // next of long_len distinct columns (its diagonal among them), and the first left-out node
    // not among those rows gets exactly the left-out nodes: a long row of A whose P row is empty.
    amg::Csr<double> A = random_csr(n, n, shape.max_len, rng);
    index_t empty_row = -1;
    if (long_rows) {
      for (index_t i : left_out)
        if (i % shape.every != 7 % shape.every) {
          empty_row = i;
          break;
        }
      REQUIRE(empty_row >= 0);
      amg::Csr<double> L;
      L.rows = L.cols = n;
      L.row_ptr.assign(1, 0);
      std::uniform_real_distribution<double> v(-1, 1);
      std::vector<index_t> others;
      std::size_t next = 0;
      for (index_t i = 0; i < n; ++i) {
        const index_t b = A.row_ptr[std::size_t(i)], e = A.row_ptr[std::size_t(i) + 1];
        std::vector<index_t> cols;
        if (i % shape.every == 7 % shape.every) {
          const index_t len = shape.long_len[next++ % shape.long_len.size()];
          others.clear();
          for (index_t j = 0; j < n; ++j)
            if (j != i) others.push_back(j);
          std::shuffle(others.begin(), others.end(), rng);
          cols.assign(others.begin(), others.begin() + (len - 1));
          cols.push_back(i);
          std::sort(cols.begin(), cols.end());
        } else if (i == empty_row) {
          cols = left_out;
        }
        if (cols.empty()) {
          L.col_idx.insert(L.col_idx.end(), A.col_idx.begin() + b, A.col_idx.begin() + e);
          L.values.insert(L.values.end(), A.values.begin() + b, A.values.begin() + e);
        } else {
          for (index_t j : cols) L.col_idx.push_back(j), L.values.push_back(v(rng));
        }
        L.row_ptr.push_back(L.nnz());
      }
      A = L;
    }
    for (index_t i = 0; i < n; ++i) {  // add the diagonal where missing, keeping rows sorted
      auto b = A.col_idx.begin() + A.row_ptr[std::size_t(i)], e = A.col_idx.begin() + A.row_ptr[std::size_t(i) + 1];
      auto at = std::lower_bound(b, e, i);
      if (at != e && *at == i) continue;
      const std::size_t pos = std::size_t(at - A.col_idx.begin());
      A.col_idx.insert(A.col_idx.begin() + std::ptrdiff_t(pos), i);
      A.values.insert(A.values.begin() + std::ptrdiff_t(pos), 4.0);
      for (std::size_t r = std::size_t(i) + 1; r < A.row_ptr.size(); ++r) ++A.row_ptr[r];
    }
    const double omega = 0.73;
    amg::Csr<double> S = A;
    for (index_t i = 0; i < n; ++i)
      for (index_t k = S.row_ptr[std::size_t(i)]; k < S.row_ptr[std::size_t(i) + 1]; ++k) {
        double& v = S.values[std::size_t(k)];
        v = (S.col_idx[std::size_t(k)] == i ? 1.0 : 0.0) - omega * dinv[std::size_t(i)] * v;
      }
    const amg::Csr<double> ref = amg::multiply(S, T);
    if (long_rows) {
      // The cases reach the paths they are for: rows of A past the values kernel's buffer (two
      // chunks and more) and past the symbolic product's cursors (the bitmap's rows, at lanes 0),
      // P rows longer than the lanes (several positions a lane), and a long row of A whose P row
      // is empty (a bitmap with no bit set).
      CAPTURE(prolongator_buffer(A));
      CHECK(longest_row(A) > 2 * prolongator_buffer(A));
      CHECK(longest_row(A) > symbolic_cursors(A));
      CHECK(longest_row(ref) > 32);
      const index_t e_len = A.row_ptr[std::size_t(empty_row) + 1] - A.row_ptr[std::size_t(empty_row)];
      CHECK(e_len > prolongator_buffer(A));
      CHECK(e_len > detail::spgemm_symbolic_bitmap_above(A.rows, A.nnz(), T.cols));
      CHECK(ref.row_ptr[std::size_t(empty_row) + 1] == ref.row_ptr[std::size_t(empty_row)]);
    }

    // The structure: the symbolic product of A's pattern and P_tent (what the set-up calls, lanes
    // 0), exactly the host's, for every lane count.
    for (int lanes : {0, 1, 2, 4, 8, 16, 32}) {
      CAPTURE(lanes);
      const auto [rp, ci] = symbolic_product(A, T, lanes);
      CHECK(rp == ref.row_ptr);
      CHECK(ci == ref.col_idx);
    }
    // The values into it.
    const DeviceCsr a(A), t(T), p(ref);
    const auto ddinv = to_device(dinv);
    auto values = [&] {
      DeviceArray<double> dva(std::max<std::size_t>(ref.values.size(), 1));
      detail::prolongator_values(n, a.rp.data(), a.ci.data(), a.va.data(), ddinv.data(), omega, t.rp.data(),
                                 t.ci.data(), t.va.data(), p.rp.data(), p.ci.data(), dva.data(), A.nnz());
      std::vector<double> h(ref.values.size());
      if (!h.empty()) dva.download(h.data(), h.size());
      return h;
    };
    const std::vector<double> v1 = values(), v2 = values();
    CHECK(v1 == v2);  // bitwise run to run
    double d = 0, m = 0;
    for (std::size_t k = 0; k < v1.size(); ++k)
      d = std::max(d, std::abs(v1[k] - ref.values[k])), m = std::max(m, std::abs(ref.values[k]));
    CHECK(d <= 1e-14 * std::max(m, 1.0));
    // Bitwise the general numeric product on S: each sum in A's row order, the one-lane-a-row
    // order, whatever the row's length.
    int missing = -1;
    CHECK(numeric_product(S, T, ref, 0, &missing) == v1);
    CHECK(missing == 0);
  }
}


namespace {
/// P = (I − ω·D⁻¹A)·P_tent recomputed on the host from a level's A, D⁻¹, ω, aggregates and
/// near-nullspace b, in the GPU set-up's operations: ‖b‖ of each aggregate summed in node order,
/// t_i = b_i/‖b‖, then each P(i, J) summed over A's row i in order from 0 (the one-lane-a-row
/// order). *next_b: the aggregates' norms (the next level's near-nullspace).
amg::Csr<double> prolongator_reference(const amg::Csr<double>& A, const std::vector<index_t>& agg,
                                       const std::vector<double>& b, const std::vector<double>& dinv, double omega,
                                       index_t nc, std::vector<double>* next_b) {
  const index_t n = A.rows;
  std::vector<double> ss(static_cast<std::size_t>(nc), 0.0), t(static_cast<std::size_t>(n), 0.0);
  for (index_t i = 0; i < n; ++i)
    if (agg[std::size_t(i)] >= 0) ss[std::size_t(agg[std::size_t(i)])] += b[std::size_t(i)] * b[std::size_t(i)];
  for (double& x : ss) x = std::sqrt(x);
  for (index_t i = 0; i < n; ++i)
    if (agg[std::size_t(i)] >= 0) t[std::size_t(i)] = b[std::size_t(i)] / ss[std::size_t(agg[std::size_t(i)])];
  amg::Csr<double> P;
  P.rows = n;
  P.cols = nc;
  std::vector<double> sum(static_cast<std::size_t>(nc), 0.0);
  for (index_t i = 0; i < n; ++i) {
    std::vector<index_t> cols;
    const double od = omega * dinv[std::size_t(i)];
    for (index_t e = A.row_ptr[std::size_t(i)]; e < A.row_ptr[std::size_t(i) + 1]; ++e) {
      const index_t k = A.col_idx[std::size_t(e)], J = agg[std::size_t(k)];
      if (J < 0) continue;
      if (std::find(cols.begin(), cols.end(), J) == cols.end()) cols.push_back(J), sum[std::size_t(J)] = 0.0;
      const double s = (k == i ? 1.0 : 0.0) - od * A.values[std::size_t(e)];
      sum[std::size_t(J)] += s * t[std::size_t(k)];
    }
    std::sort(cols.begin(), cols.end());
    for (index_t J : cols) P.col_idx.push_back(J), P.values.push_back(sum[std::size_t(J)]);
    P.row_ptr.push_back(P.nnz());
  }
  *next_b = std::move(ss);
  return P;
}
}  // namespace

TEST_CASE("AMG GPU set-up: rows past the kernels' buffers (jump diffusion 40^3): P exact, re-set-up bitwise") {
  // Its coarse levels have rows longer than the prolongator's buffer and the symbolic product's
  // register cursors (level 2: rows of ~300 entries at 32 lanes, 256 of either) when P is smoothed
  // with A itself; the filtered matrix keeps them short, and the reference below smooths with A.
  const CsrMatrix<double> A = diffusion_3d(40, 1, 1, 0.01, 1e4);
  AmgOptions o = mis2();
  o.filter = AmgFilter::Off;
  const HostAmg<double> H(A, o);
  const auto G = detail::gpu_amg_setup(A, o, true);
  const auto hd = H.level_data();
  REQUIRE(G.levels.size() == hd.size());
  const auto hagg = host_aggregates(H);
  std::vector<double> b(static_cast<std::size_t>(A.rows()), 1.0);  // the near-nullspace of level 0
  bool past_buffer = false, past_cursors = false;
  for (std::size_t l = 0; l + 1 < G.levels.size(); ++l) {
    CAPTURE(l);
    const auto& g = G.levels[l];
    const amg::Csr<double> Al = host_copy(g.A);  // level 0: the caller's A
    past_buffer = past_buffer || longest_row(Al) > prolongator_buffer(Al);
    past_cursors = past_cursors || longest_row(Al) > symbolic_cursors(Al);
    REQUIRE(g.aggregates == hagg[l]);
    std::vector<double> dinv(static_cast<std::size_t>(g.n));
    g.dinv.download(dinv.data(), dinv.size());  // D⁻¹ in double (Chebyshev), as the set-up used it
    std::vector<double> next;
    const amg::Csr<double> ref =
        prolongator_reference(Al, g.aggregates, b, dinv, G.info.levels[l].omega, G.info.levels[l].aggregates, &next);
    b = std::move(next);
    const amg::Csr<double> P = host_copy(g.P);
    CHECK(P.row_ptr == ref.row_ptr);  // the symbolic product's structure, exactly
    CHECK(P.col_idx == ref.col_idx);
    CHECK(P.values == ref.values);  // bitwise: the one-lane-a-row order, long rows included
    // The host set-up's P: the same structure; values to rounding (its λ estimate, so ω, agrees
    // to about 1e-10).
    CHECK(compare(P, *hd[l].P) <= 1e-10);
  }
  CHECK(past_buffer);
  CHECK(past_cursors);
  // A numeric re-set-up (2·A: the same aggregates) fills what a fresh set-up of 2·A fills.
  std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
  for (double& e : v) e *= 2.0;
  const auto A2 = CsrMatrix<double>::from_arrays(
      A.rows(), A.cols(), std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
      std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), v);
  const auto F = detail::gpu_amg_setup(A2, o);  // the options G's plan was made with (filter off)
  const auto R = detail::gpu_amg_setup(A2, o, false, G.plan, true, false);  // cold Lanczos: bitwise F
  REQUIRE(F.levels.size() == R.levels.size());
  auto same = [](const amg::Csr<double>& x, const amg::Csr<double>& y) {
    return x.row_ptr == y.row_ptr && x.col_idx == y.col_idx && x.values == y.values;
  };
  for (std::size_t l = 0; l < F.levels.size(); ++l) {
    CAPTURE(l);
    if (l > 0) CHECK(same(host_copy(F.levels[l].A), host_copy(R.levels[l].A)));
    if (l + 1 < F.levels.size()) {
      CHECK(same(host_copy(F.levels[l].P), host_copy(R.levels[l].P)));
      CHECK(same(host_copy(F.levels[l].R), host_copy(R.levels[l].R)));
    }
  }
  CHECK(host_factor(F) == host_factor(R));
}

TEST_CASE("AMG GPU set-up: spgemm_symbolic equals the host's structural product exactly, for any lanes") {
  std::mt19937_64 rng(26);
  // Which kernels the case's rows take at every lanes: no check, both the merge and the bitmap,
  // the merge alone (C's columns past the bitmap's bound).
  enum class Paths { any, both, merge };
  struct Case {
    std::string name;
    amg::Csr<double> A, B;
    Paths paths = Paths::any;
  };
  std::vector<Case> cases;
  // Short rows with empty ones (lengths 0..max), the set-up's shapes; few columns in B: most
  // products collide on a column.
  cases.push_back({"short rows", random_csr(500, 400, 8, rng), random_csr(400, 300, 6, rng)});
  cases.push_back({"collisions", random_csr(800, 600, 12, rng), random_csr(600, 9, 4, rng)});
  cases.push_back({"long B rows", random_csr(300, 200, 5, rng), random_csr(200, 900, 60, rng)});
  // Rows of A longer than the register cursors hold at any lanes (256 with 32): the bitmap's rows
  // (B's 500 columns fit it); every 40th row has 700 entries against a mean of about 4.
  {
    const amg::Csr<double> A = with_long_rows(random_csr(400, 1000, 6, rng), 40, 3, 700, rng);
    cases.push_back({"long A rows", A, random_csr(1000, 500, 5, rng)});
  }
  // A's columns in any order (the kernels do not need A sorted).
  {
    amg::Csr<double> A = random_csr(300, 250, 10, rng);
    for (index_t i = 0; i < A.rows; ++i)
      std::shuffle(A.col_idx.begin() + A.row_ptr[std::size_t(i)], A.col_idx.begin() + A.row_ptr[std::size_t(i) + 1],
                   rng);
    cases.push_back({"unsorted A rows", A, random_csr(250, 250, 7, rng)});
  }
  // The bitmap (rows of A past the cursors and past 64 entries, when C's columns fit): rows of
  // 0-8 entries (the merge), 100-200 (the bitmap at 16 lanes or fewer, the merge's registers at
  // 32) and 300-700 (the bitmap at any lanes), every 50th row empty; B's rows of up to 12 among
  // 400 columns, so the long rows' products fill most words.
  auto mixed_rows = [&](index_t rows, index_t cols) {
    std::uniform_int_distribution<index_t> shortl(0, 8), medium(100, 200), longl(300, 700);
    return csr_of_rows(
        rows, cols,
        [&](index_t i) {
          if (i % 50 == 49) return std::vector<index_t>{};
          const index_t len = i % 3 == 0 ? shortl(rng) : i % 3 == 1 ? medium(rng) : longl(rng);
          return sample_columns(0, cols, len, rng);
        },
        rng);
  };
  cases.push_back({"mixed paths", mixed_rows(600, 800), random_csr(800, 400, 12, rng), Paths::both});
  // Rows whose products are empty: half of B's rows are, and every other long row of A has its
  // columns among them only.
  {
    const amg::Csr<double> B = csr_of_rows(
        800, 300, [&](index_t k) { return k < 400 ? std::vector<index_t>{} : sample_columns(0, 300, 1 + k % 6, rng); },
        rng);
    std::uniform_int_distribution<index_t> shortl(0, 8), longl(200, 390);
    const amg::Csr<double> A = csr_of_rows(
        300, 800,
        [&](index_t i) {
          if (i % 3 == 0) return sample_columns(0, 800, shortl(rng), rng);
          return sample_columns(0, i % 3 == 1 ? 400 : 800, longl(rng), rng);  // 1: an empty product
        },
        rng);
    cases.push_back({"long rows with empty products", A, B, Paths::both});
  }
  // C with few columns: 1 (a bitmap of one word), 31, 32 and 33 (a word's edges); B's rows of up
  // to 20 entries (full rows at 1 column).
  for (index_t nc : {1, 31, 32, 33})
    cases.push_back({"columns " + std::to_string(nc), mixed_rows(400, 500), random_csr(500, nc, 20, rng), Paths::both});
  // One row, long: the bitmap alone at any lanes.
  cases.push_back({"one long row",
                   csr_of_rows(1, 2000, [&](index_t) { return sample_columns(0, 2000, 1500, rng); }, rng),
                   random_csr(2000, 300, 6, rng), Paths::any});
  // C's columns at the bitmap's bound (262,144: 8192 words) and one past it (the merge alone,
  // binary searches for the long rows' entries past the cursors: rows of A and B kept shorter
  // there, as at one lane every step searches for each of ~90 entries). B's rows: random
  // columns over the whole range, every 5th a run of 80 consecutive columns (whole words and
  // their edges), row 1 the first and last columns and both sides of a word's edge.
  for (index_t nc : {index_t(262144), index_t(262145)}) {
    const bool fits = nc == 262144;
    std::uniform_int_distribution<index_t> shortb(0, fits ? 40 : 10), start(0, nc - 80), shorta(0, 8),
        longa(fits ? 300 : 65, fits ? 900 : 100);
    const amg::Csr<double> B = csr_of_rows(
        3000, nc,
        [&](index_t k) {
          if (k == 1) return std::vector<index_t>{0, 31, 32, 63, 64, nc - 33, nc - 32, nc - 1};
          if (k % 5 == 0) {
            std::vector<index_t> r;
            for (index_t j = start(rng), e = j + 80; j < e; ++j) r.push_back(j);
            return r;
          }
          return sample_columns(0, nc, shortb(rng), rng);
        },
        rng);
    const amg::Csr<double> A = csr_of_rows(
        60, 3000,
        [&](index_t i) {
          std::vector<index_t> r = sample_columns(0, 3000, i % 4 == 0 ? shorta(rng) : longa(rng), rng);
          if (i % 4 == 1 && !std::binary_search(r.begin(), r.end(), index_t(1)))  // B's row 1 in some
            r.insert(std::lower_bound(r.begin(), r.end(), index_t(1)), index_t(1));
          return r;
        },
        rng);
    cases.push_back({"columns " + std::to_string(nc), A, B, fits ? Paths::both : Paths::merge});
  }
  // 600,000 rows, a few long (the bitmap's rows dealt in runs).
  cases.push_back({"many rows", many_rows(600000, 2000, rng), random_csr(2000, 1000, 6, rng), Paths::both});
  cases.push_back({"one row", random_csr(1, 5, 4, rng), random_csr(5, 7, 3, rng)});
  cases.push_back({"no rows", random_csr(0, 5, 4, rng), random_csr(5, 7, 3, rng)});
  cases.push_back({"A without entries", random_csr(7, 4, 0, rng), random_csr(4, 6, 3, rng)});
  cases.push_back({"B without entries", random_csr(7, 4, 3, rng), random_csr(4, 6, 0, rng)});
  // A structural entry whose value sums to zero (1·1 + 1·(−1)) stays.
  {
    amg::Csr<double> A, B;
    A.rows = 1;
    A.cols = 2;
    A.row_ptr = {0, 2};
    A.col_idx = {0, 1};
    A.values = {1.0, 1.0};
    B.rows = 2;
    B.cols = 1;
    B.row_ptr = {0, 1, 2};
    B.col_idx = {0, 0};
    B.values = {1.0, -1.0};
    cases.push_back({"cancelling entry", A, B});
  }
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const amg::Csr<double> ref = amg::multiply(c.A, c.B);
    if (c.name == "cancelling entry") REQUIRE(ref.nnz() == 1);
    for (int lanes : {0, 1, 2, 4, 8, 16, 32}) {
      CAPTURE(lanes);
      const index_t above = detail::spgemm_symbolic_bitmap_above(c.A.rows, c.A.nnz(), c.B.cols, lanes);
      const index_t bitmap = rows_longer(c.A, above);
      if (c.paths == Paths::both) {
        CHECK(bitmap > 0);
        CHECK(bitmap < c.A.rows);
      }
      if (c.paths == Paths::merge) CHECK(bitmap == 0);
      const auto [rp, ci] = symbolic_product(c.A, c.B, lanes);
      CHECK(rp == ref.row_ptr);
      CHECK(ci == ref.col_idx);
    }
  }
  // The set-up's chain: R·(A·P) with R = Pᵀ and A·P from the symbolic product itself.
  {
    const amg::Csr<double> A = random_csr(2000, 2000, 9, rng), P = random_csr(2000, 300, 3, rng);
    const amg::Csr<double> AP = amg::multiply(A, P), R = amg::transpose(P);
    const auto [ap_rp, ap_ci] = symbolic_product(A, P, 0);
    REQUIRE(ap_rp == AP.row_ptr);
    REQUIRE(ap_ci == AP.col_idx);
    const auto [rap_rp, rap_ci] = symbolic_product(R, AP, 0);
    const amg::Csr<double> RAP = amg::multiply(R, AP);
    CHECK(rap_rp == RAP.row_ptr);
    CHECK(rap_ci == RAP.col_idx);
  }
  // The chain with rows of R past the cursors (R = Pᵀ of ~300 entries a row: the bitmap).
  {
    const amg::Csr<double> A = random_csr(6000, 6000, 9, rng), P = random_csr(6000, 40, 4, rng);
    const amg::Csr<double> AP = amg::multiply(A, P), R = amg::transpose(P), RAP = amg::multiply(R, AP);
    for (int lanes : {0, 1, 32}) {
      CAPTURE(lanes);
      CHECK(rows_longer(R, detail::spgemm_symbolic_bitmap_above(R.rows, R.nnz(), AP.cols, lanes)) > 0);
      const auto [rap_rp, rap_ci] = symbolic_product(R, AP, lanes);
      CHECK(rap_rp == RAP.row_ptr);
      CHECK(rap_ci == RAP.col_idx);
    }
  }
  // Lanes other than a power of two up to 32 (or 0) are refused.
  const amg::Csr<double> A = random_csr(4, 4, 2, rng);
  const DeviceCsr a(A);
  DeviceArray<index_t> counts(4);
  CHECK_THROWS_AS(detail::spgemm_symbolic_count(A.rows, a.rp.data(), a.ci.data(), A.nnz(), a.rp.data(), a.ci.data(),
                                                A.cols, counts.data(), 3),
                  InputError);
  CHECK_THROWS_AS(detail::spgemm_symbolic_bitmap_above(A.rows, A.nnz(), A.cols, 3), InputError);
}

namespace {
/// The lanes a row the set-up's row kernels take (amg_device_setup.cu's row_lanes: half the mean
/// row, rounded up to a power of two, at most 32).
int setup_row_lanes(index_t rows, index_t nnz) {  // fold_lanes in amg_device_setup.cu
  if (rows > 0 && nnz < 16 * std::int64_t(rows)) return 1;
  const double half = rows > 0 ? 0.5 * double(nnz) / double(rows) : 1.0;
  int w = 1;
  while (w < 32 && double(w) < half) w *= 2;
  return w;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

/// A matrix for the filtered matrix's kernels: each row its diagonal, at a random place among its
/// off-diagonals; most rows 0-12 entries, every 5th 20-100 (chunks of 32 lanes and their edges),
/// rows 31-34 entries around 32. Off-diagonals −10^(−4u) (u uniform in [0, 1): strong and weak at
/// θ of a few percent), a tenth positive, one in 20 zero (kept by neither test); the diagonal
/// 0.5-1.5 times the row's Σ|a_ij|. Every 13th row: a_ii = 1e-3 and 100 off-diagonals of
/// −1.5e-5, weak by both tests at θ ≥ 0.02, whose lumping (b_j/b_i about 1.6 on average) makes
/// a_ii + Σ negative: A_F keeps a_ii.
amg::Csr<double> filter_matrix(index_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<index_t> shortl(0, 12), longl(20, 100);
  std::uniform_real_distribution<double> u(0, 1);
  amg::Csr<double> M = csr_of_rows(
      n, n,
      [&](index_t i) {
        index_t len = i % 13 == 6 ? 100 : i % 5 == 0 ? longl(rng) : i % 7 == 1 ? 31 + i % 4 : shortl(rng);
        std::vector<index_t> r = sample_columns(0, n, len, rng);
        r.erase(std::remove(r.begin(), r.end(), i), r.end());
        r.insert(std::lower_bound(r.begin(), r.end(), i), i);
        return r;
      },
      rng);
  for (index_t i = 0; i < n; ++i) {
    const bool tiny = i % 13 == 6;
    double sum = 0;
    index_t diag = -1;
    for (index_t k = M.row_ptr[std::size_t(i)]; k < M.row_ptr[std::size_t(i) + 1]; ++k) {
      double& v = M.values[std::size_t(k)];
      if (M.col_idx[std::size_t(k)] == i) {
        diag = k;
        continue;
      }
      const double r = u(rng);
      v = tiny ? -1.5e-5 : r < 0.05 ? 0.0 : (r < 0.15 ? 1.0 : -1.0) * std::pow(10.0, -4.0 * u(rng));
      sum += std::abs(v);
    }
    M.values[std::size_t(diag)] = tiny ? 1e-3 : sum > 0 ? (0.5 + u(rng)) * sum : 1.0;
  }
  return M;
}
}  // namespace

TEST_CASE("AMG GPU set-up: the filtered matrix's kernels equal filter_entries and filtered_matrix bitwise, any lanes") {
  std::mt19937_64 rng(41);
  const index_t n = 1237;  // not a multiple of any block's rows: the last groups lie past n
  const amg::Csr<double> A = filter_matrix(n, rng);
  REQUIRE(longest_row(A) > 64);
  std::uniform_real_distribution<double> ub(0.25, 4.0);
  std::vector<double> b(static_cast<std::size_t>(n)), diag(static_cast<std::size_t>(n), 0.0);
  for (double& x : b) x = ub(rng);  // a coarse level's near-nullspace (the aggregates' norms)
  for (index_t i = 0; i < n; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k)
      if (A.col_idx[std::size_t(k)] == i) diag[std::size_t(i)] = A.values[std::size_t(k)];
  const DeviceCsr a(A);
  const auto ddiag = to_device(diag), db = to_device(b);
  for (double theta : {0.02, 0.08, 0.25}) {
    CAPTURE(theta);
    const std::vector<std::uint8_t> keep = amg::filter_entries(A, theta);
    index_t dropped = 0;
    const amg::Csr<double> F = amg::filtered_matrix(A, keep, b, &dropped);
    CHECK(dropped > 0);
    CHECK(dropped < A.nnz() - n);
    // 1/(A_F)_ii, and the rows where lumping would have made the diagonal indefinite (a_ii kept).
    std::vector<double> dinv(static_cast<std::size_t>(n));
    index_t kept_aii = 0;
    for (index_t i = 0; i < n; ++i)
      for (index_t k = F.row_ptr[std::size_t(i)]; k < F.row_ptr[std::size_t(i) + 1]; ++k)
        if (F.col_idx[std::size_t(k)] == i) {
          dinv[std::size_t(i)] = 1.0 / F.values[std::size_t(k)];
          kept_aii += i % 13 == 6 && F.values[std::size_t(k)] == diag[std::size_t(i)];
        }
    CHECK(kept_aii > 0);
    const auto dkeep_given = to_device(keep);
    for (int lanes : {1, 2, 4, 8, 16, 32}) {
      CAPTURE(lanes);
      DeviceArray<std::uint8_t> dkeep(std::size_t(A.nnz()));
      DeviceArray<index_t> dcount(static_cast<std::size_t>(n)), dcount_given(static_cast<std::size_t>(n));
      detail::amg_filter_count(n, a.rp.data(), a.ci.data(), a.va.data(), ddiag.data(), theta, nullptr, dkeep.data(),
                               dcount.data(), lanes);
      // A re-set-up's: the kept flags given, none written.
      detail::amg_filter_count(n, a.rp.data(), a.ci.data(), a.va.data(), ddiag.data(), theta, dkeep_given.data(),
                               nullptr, dcount_given.data(), lanes);
      std::vector<std::uint8_t> hkeep(keep.size());
      dkeep.download(hkeep.data(), hkeep.size());
      CHECK(hkeep == keep);
      std::vector<index_t> count(static_cast<std::size_t>(n)), count_given(count.size()), rp{0};
      dcount.download(count.data(), count.size());
      dcount_given.download(count_given.data(), count_given.size());
      CHECK(count_given == count);
      for (index_t c : count) rp.push_back(rp.back() + c);
      REQUIRE(rp == F.row_ptr);
      const auto drp = to_device(rp);
      DeviceArray<index_t> fci(std::size_t(F.nnz()));
      DeviceArray<double> fva(std::size_t(F.nnz())), fdinv(static_cast<std::size_t>(n));
      detail::amg_filter_fill(n, a.rp.data(), a.ci.data(), a.va.data(), ddiag.data(), dkeep.data(), db.data(),
                              drp.data(), fci.data(), fva.data(), fdinv.data(), lanes);
      std::vector<index_t> ci(F.col_idx.size());
      std::vector<double> va(F.values.size()), di(dinv.size());
      fci.download(ci.data(), ci.size());
      fva.download(va.data(), va.size());
      fdinv.download(di.data(), di.size());
      CHECK(ci == F.col_idx);
      CHECK(same_bits(va, F.values));  // the lumped diagonals: Σ in the row's order
      CHECK(same_bits(di, dinv));
    }
  }
  DeviceArray<index_t> dcount(static_cast<std::size_t>(n));
  CHECK_THROWS_AS(detail::amg_filter_count(n, a.rp.data(), a.ci.data(), a.va.data(), ddiag.data(), 0.08, nullptr,
                                           nullptr, dcount.data(), 3),
                  InputError);
}

TEST_CASE("AMG GPU set-up: the row kernels at 1 to 32 lanes, rows past 32 filtered: bitwise from each level's A") {
  // Each level's D⁻¹, D_l1⁻¹ and Gershgorin bound (Σ|a_ij| in the row's order), its strength graph
  // (through the aggregates) and its filtered matrix (through P = (I − ω·D_F⁻¹A_F)·P_tent) as the
  // host's functions give them on the GPU's own level matrix, bitwise. Laplacian 40³'s level 2
  // (mean row 46, rows up to 88) and media 32's level 3 (mean 40, rows up to 71) take 32 lanes,
  // filtered; levels of mean 16-30 take 8 or 16, shorter rows one lane (fold_lanes). The filter
  // kernels at every lane count have their own case above.
  struct Case {
    std::string name;
    CsrMatrix<double> A;
  };
  std::vector<Case> cases;
  cases.push_back({"laplacian_3d 40", laplacian_3d(40, 40, 40)});
  cases.push_back({"media 32", diffusion_3d_random(32, 100, 1, 1, 1e4, 0.2, 1)});
  cases.push_back({"laplacian_1d 3000", laplacian_1d(3000)});
  int filtered_lanes = 0, lanes_seen = 0;  // bit sets of the lanes met
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const auto G = detail::gpu_amg_setup(c.A, mis2(), true);
    const auto G1 = detail::gpu_amg_setup(c.A, mis2(AmgSmoother::L1Jacobi), true);  // D_l1⁻¹
    REQUIRE(G1.levels.size() == G.levels.size());
    std::vector<double> b(static_cast<std::size_t>(c.A.rows()), 1.0);  // the near-nullspace of level 0
    for (std::size_t l = 0; l < G.levels.size(); ++l) {
      CAPTURE(l);
      const auto& g = G.levels[l];
      const auto& gi = G.info.levels[l];
      const amg::Csr<double> Al = host_copy(g.A);  // level 0: the caller's A
      const index_t n = Al.rows;
      const int lanes = setup_row_lanes(n, Al.nnz());
      CAPTURE(lanes);
      lanes_seen |= lanes;
      // D⁻¹ (Chebyshev's), D_l1⁻¹ (L1 Jacobi's, from that set-up's level) and the bound.
      auto diagonals = [](const amg::Csr<double>& M, std::vector<double>& dinv, std::vector<double>& dl1) {
        dinv.assign(std::size_t(M.rows), 0.0);
        dl1.assign(std::size_t(M.rows), 0.0);
        double gershgorin = 0;
        for (index_t i = 0; i < M.rows; ++i) {
          double d = 0, sum = 0;
          for (index_t k = M.row_ptr[std::size_t(i)]; k < M.row_ptr[std::size_t(i) + 1]; ++k) {
            if (M.col_idx[std::size_t(k)] == i) d = M.values[std::size_t(k)];
            sum += std::abs(M.values[std::size_t(k)]);
          }
          dinv[std::size_t(i)] = 1.0 / d;
          dl1[std::size_t(i)] = 1.0 / sum;
          gershgorin = std::max(gershgorin, sum / d);
        }
        return gershgorin;
      };
      std::vector<double> dinv, dl1, unused, gd(static_cast<std::size_t>(n)), gl1(gd.size());
      CHECK(gi.gershgorin == diagonals(Al, dinv, unused));
      const amg::Csr<double> A1 = host_copy(G1.levels[l].A);
      REQUIRE(A1.rows == n);
      CHECK(G1.info.levels[l].gershgorin == diagonals(A1, unused, dl1));
      g.dinv.download(gd.data(), gd.size());
      G1.levels[l].dinv.download(gl1.data(), gl1.size());
      CHECK(same_bits(gd, dinv));
      CHECK(same_bits(gl1, dl1));
      if (l + 1 == G.levels.size()) break;
      // The strength graph: the aggregates of the host's graph of this matrix, exactly.
      CHECK(g.aggregates == amg::aggregate_mis2(amg::strength_graph(Al, 1, gi.theta)).of_node);
      // The filtered matrix: its dropped entries, and P smoothed with it, bitwise.
      const std::vector<std::uint8_t> keep = amg::filter_entries(Al, gi.theta);
      index_t dropped = 0;
      const amg::Csr<double> F = amg::filtered_matrix(Al, keep, b, &dropped);
      CHECK(gi.filtered == dropped);
      std::vector<double> dinv_f(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i)
        for (index_t k = F.row_ptr[std::size_t(i)]; k < F.row_ptr[std::size_t(i) + 1]; ++k)
          if (F.col_idx[std::size_t(k)] == i) dinv_f[std::size_t(i)] = 1.0 / F.values[std::size_t(k)];
      std::vector<double> next;
      const amg::Csr<double> ref = prolongator_reference(F, g.aggregates, b, dinv_f, gi.omega, gi.aggregates, &next);
      b = std::move(next);
      const amg::Csr<double> P = host_copy(g.P);
      CHECK(P.row_ptr == ref.row_ptr);
      CHECK(P.col_idx == ref.col_idx);
      CHECK(same_bits(P.values, ref.values));
      if (dropped > 0 && longest_row(Al) > 32) filtered_lanes |= lanes;
    }
  }
  CHECK((lanes_seen & 1) != 0);   // short rows: one thread a row
  CHECK((lanes_seen & 32) != 0);
  CHECK((filtered_lanes & 32) != 0);  // rows past one chunk of 32 with entries dropped and lumped
}
