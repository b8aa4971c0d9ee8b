// The AMG set-up on the GPU for a near-nullspace of K > 1 vectors (precond/cuda/amg_block_setup.hpp
// and its use in amg_device_setup.cu): b > 1 unknowns per node with unit vectors, and rigid-body
// modes from node coordinates. The pieces against the host's functions, bitwise: the strength
// graph on nodes (amg::strength_graph), the tentative prolongator and coarse near-nullspace
// (amg::tentative_prolongator, with aggregates smaller than K and dependent near-nullspace
// columns), S·P_tent's values (amg.cpp's S, amg::multiply) and the unit diagonal on empty coarse
// rows. Then whole hierarchies against HostAmg (MIS-2), level by level: the aggregates exactly, P,
// R and A_l to 1e-12, ω, λ, D⁻¹, the coarse factor; on bcsstk06 (b = 3, b = 6, 2-D coordinates:
// b = 2, K = 3), elasticity_3d with unit vectors and with rigid-body modes, a thin plate whose level
// 0 is aggregated again at a smaller θ (amg::retry_aggregation), and elasticity with a
// one-node aggregate (fewer unknowns than K: zero columns, unit diagonals), and near-nullspace
// vectors given (K = 1 vanishing on part of a Laplacian; b = 3 with K = 4). A numeric re-set-up
// after a value change equals a fresh set-up bitwise; DeviceAmg applies the host's V-cycle; PCG
// with it converges on elasticity (true residual recomputed on the host).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_block_setup.hpp"
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "gpu/amg_setup_checks.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

using test::host_copy;
using test::host_factor;
using test::max_abs;
using test::max_diff;
using test::same;
using test::to_device;
using test::to_host;

/// A's structure with the values v.
CsrMatrix<double> with_values(const CsrMatrix<double>& A, const std::vector<double>& v) {
  return CsrMatrix<double>::from_arrays(
      A.rows(), A.cols(), std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
      std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), v);
}

struct Problem {
  std::string name;
  CsrMatrix<double> A;
  AmgOptions o;  ///< resolved (no kAmgAuto left): host and GPU get the same numbers
  bool small_aggregate = false;  ///< an aggregate with fewer unknowns than K (unit diagonals)
};

AmgOptions base_options() {
  AmgOptions o;
  o.aggregation = AmgAggregation::Mis2;
  o.coarse_size = 30;  // several levels even on these small problems: the coarse levels' K×K blocks
  o.adaptive_cycles = 0;  // the set-up itself (the augmenting cycles: test_amg_augment_gpu.cpp)
  o.dense_coarse_rows = 0;  // those levels on the device too (test_amg_dense_coarse_gpu.cpp)
  return o;
}

/// Elasticity with rigid-body modes plus two nodes p, q of their own (coupled to nothing else):
/// A_pq strong, A_qp tiny (the values are not symmetric; the pattern is). q has no strong
/// neighbour and is left out; p's only strong neighbour is q, so p is a root whose aggregate is p
/// alone: 3 unknowns for K = 6 modes, three zero columns of P_tent, three empty coarse rows that
/// get a unit diagonal.
Problem elasticity_with_lone_node() {
  std::vector<double> xyz;
  const CsrMatrix<double> E = elasticity_3d(5, 4, 4, 0.3, &xyz);
  const index_t n = E.rows();
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < n; ++i)
    for (index_t k = E.row_ptr()(i); k < E.row_ptr()(i + 1); ++k) {
      I.push_back(i);
      J.push_back(E.col_idx()(k));
      V.push_back(E.values()(k));
    }
  double scale = 0;
  for (index_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(E.values()(E.row_ptr()(i))));
  const index_t p = n, q = n + 3;
  for (int c = 0; c < 3; ++c) {
    for (int d = 0; d < 3; ++d) {  // diagonal blocks: SPD
      const double v = c == d ? 2.0 * scale : 0.1 * scale;
      I.push_back(p + c), J.push_back(p + d), V.push_back(v);
      I.push_back(q + c), J.push_back(q + d), V.push_back(v);
    }
    I.push_back(p + c), J.push_back(q + c), V.push_back(0.8 * scale);   // strong from p
    I.push_back(q + c), J.push_back(p + c), V.push_back(1e-6 * scale);  // weak from q
  }
  Problem P;
  P.name = "elasticity_3d 5x4x4 + a lone node, rigid-body modes";
  P.A = CsrMatrix<double>::from_triplets(n + 6, n + 6, I, J, V);
  xyz.insert(xyz.end(), {20.0, 1.0, 2.0, 20.5, 1.0, 2.0});
  P.o = base_options();
  P.o.coordinates = xyz;
  P.o.coordinate_dim = 3;
  P.o = amg::resolve_auto(P.A, P.o);
  P.small_aggregate = true;
  return P;
}

std::vector<Problem> problems() {
  std::vector<Problem> out;
  const auto K = test::load("bcsstk06");
  for (int b : {3, 6}) {
    Problem P{"bcsstk06 b " + std::to_string(b), K, base_options()};
    P.o.block_size = b;
    P.o = amg::resolve_auto(P.A, P.o);
    out.push_back(P);
  }
  {
    // 2-D coordinates on bcsstk06's 210 nodes of 2 unknowns: not its kernel, but a K = 3 > b = 2
    // near-nullspace the set-ups must treat alike.
    Problem P{"bcsstk06 2-D coordinates (b 2, K 3)", K, base_options()};
    std::vector<double> xy;
    for (index_t p = 0; p < K.rows() / 2; ++p) xy.insert(xy.end(), {std::cos(0.1 * p) * p, std::sin(0.1 * p) * p});
    P.o.coordinates = xy;
    P.o.coordinate_dim = 2;
    P.o = amg::resolve_auto(P.A, P.o);
    out.push_back(P);
  }
  std::vector<double> xyz;
  const auto E = elasticity_3d(8, 7, 7, 0.3, &xyz);
  {
    Problem P{"elasticity_3d 8x7x7 unit vectors (b 3)", E, base_options()};
    P.o.block_size = 3;
    P.o = amg::resolve_auto(P.A, P.o);
    out.push_back(P);
  }
  {
    Problem P{"elasticity_3d 8x7x7 rigid-body modes (b 3, K 6)", E, base_options()};
    P.o.coordinates = xyz;
    P.o.coordinate_dim = 3;
    P.o = amg::resolve_auto(P.A, P.o);
    out.push_back(P);
  }
  out.push_back(elasticity_with_lone_node());
  {
    // A thin shell: six unknowns a node (rotations after displacements), their rigid-body modes
    // from the coordinates (b 6, K 6).
    std::vector<double> sxyz;
    Problem P{"shell_cylinder 10x8, t 1e-3, rigid-body modes with rotations (b 6, K 6)",
              shell_cylinder(10, 8, 1e-3, 0.3, &sxyz), base_options()};
    P.o.coordinates = sxyz;
    P.o.coordinate_dim = 3;
    P.o = amg::resolve_auto(P.A, P.o);
    out.push_back(P);
  }
  {
    // A thin plate with rigid-body modes, θ left auto: level 0 coarsens by less than 3x at the
    // structural 0.25 and is aggregated again at 0.08 (amg::retry_aggregation), by both set-ups.
    std::vector<double> pxyz;
    Problem P{"elasticity_3d 20x20x1 thin plate, rigid-body modes, theta auto (retried)",
              elasticity_3d(20, 20, 1, 0.3, &pxyz), base_options()};
    P.o.coordinates = pxyz;
    P.o.coordinate_dim = 3;
    out.push_back(P);
    Problem U{"elasticity_3d 20x20x1 thin plate, unit vectors (b 3), theta auto (retried)", P.A, base_options()};
    U.o.block_size = 3;
    out.push_back(U);
  }
  {
    // One vector given (AmgOptions::near_nullspace), zero on the last third of a Laplacian's
    // unknowns: K = 1 takes the per-aggregate QR too, which completes a vanishing column with a
    // unit vector as the host's does (a norm of zero would divide by zero).
    const auto L = laplacian_3d(12, 12, 12);
    Problem P{"laplacian_3d 12^3, one given vector, zero on a third (b 1, K 1)", L, base_options()};
    P.o.near_nullspace.resize(std::size_t(L.rows()));
    for (index_t i = 0; i < L.rows(); ++i)
      P.o.near_nullspace[std::size_t(i)] = 3 * i < 2 * L.rows() ? 1.0 + 0.5 * std::sin(0.01 * double(i)) : 0.0;
    P.o.near_nullspace_vectors = 1;
    P.o = amg::resolve_auto(P.A, P.o);
    out.push_back(P);
  }
  {
    // bcsstk06's three unit vectors a node and a smooth fourth vector, given (b 3, K 4).
    Problem P{"bcsstk06, four given vectors (b 3, K 4)", K, base_options()};
    P.o.block_size = 3;
    const index_t n = K.rows();
    P.o.near_nullspace.assign(std::size_t(n) * 4, 0.0);
    for (index_t i = 0; i < n; ++i) {
      P.o.near_nullspace[std::size_t(i) * 4 + std::size_t(i % 3)] = 1.0;
      P.o.near_nullspace[std::size_t(i) * 4 + 3] = std::cos(0.05 * double(i / 3)) * double(1 + i % 3);
    }
    P.o.near_nullspace_vectors = 4;
    P.o = amg::resolve_auto(P.A, P.o);
    out.push_back(P);
  }
  return out;
}

/// Does some coarse matrix of H hold a row that is a lone unit diagonal? (an empty row made so)
// Whether P's b×K blocks are full: every block that holds an entry holds all b·K (counted here).
bool full_blocks(const amg::Csr<double>& P, int b, int K) {
  std::set<std::pair<index_t, index_t>> blocks;
  for (index_t i = 0; i < P.rows; ++i)
    for (index_t k = P.row_ptr[i]; k < P.row_ptr[i + 1]; ++k) blocks.insert({i / b, P.col_idx[k] / K});
  return std::size_t(P.nnz()) == blocks.size() * std::size_t(b) * std::size_t(K);
}

bool has_unit_diagonal_row(const HostAmg<double>& H) {
  const auto data = H.level_data();
  for (std::size_t l = 0; l + 1 < data.size(); ++l) {
    const amg::Csr<double>& P = *data[l].P;
    std::vector<int> used(std::size_t(P.cols), 0);
    for (index_t j : P.col_idx) used[std::size_t(j)] = 1;
    if (std::find(used.begin(), used.end(), 0) != used.end()) return true;  // an empty column of P
  }
  return false;
}

/// Random aggregation of `nodes` nodes: some left out, aggregates of 1 to 5 nodes, interleaved.
amg::Aggregation random_aggregation(index_t nodes, std::mt19937_64& rng) {
  amg::Aggregation a;
  a.of_node.assign(std::size_t(nodes), -1);
  std::vector<index_t> order(static_cast<std::size_t>(nodes));
  for (index_t i = 0; i < nodes; ++i) order[std::size_t(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::uniform_int_distribution<int> size(1, 5), out(0, 9);
  std::size_t p = 0;
  while (p < order.size()) {
    if (out(rng) == 0) {  // left out
      ++p;
      continue;
    }
    const int s = size(rng);
    for (int k = 0; k < s && p < order.size(); ++k) a.of_node[std::size_t(order[p++])] = a.count;
    ++a.count;
  }
  return a;
}

}  // namespace

TEST_CASE("AMG block set-up pieces: the strength graph on nodes equals amg::strength_graph exactly") {
  std::vector<double> xyz;
  const auto E = elasticity_3d(6, 5, 5, 0.3, &xyz);
  const auto K = test::load("bcsstk06");
  struct Case {
    std::string name;
    const CsrMatrix<double>* A;
    int b;
  };
  for (const Case& c : {Case{"bcsstk06", &K, 2}, Case{"bcsstk06", &K, 3}, Case{"bcsstk06", &K, 6},
                        Case{"elasticity_3d", &E, 3}}) {
    for (double theta : {0.0, 0.02, 0.08, 0.25, 0.5}) {
      CAPTURE(c.name);
      CAPTURE(c.b);
      CAPTURE(theta);
      const amg::Csr<double> H = amg::to_csr(*c.A);
      const amg::Graph G = amg::strength_graph(H, c.b, theta);
      auto rp = to_device(H.row_ptr);
      auto ci = to_device(H.col_idx);
      auto va = to_device(H.values);
      DeviceArray<index_t> grp, gci;
      const index_t edges = detail::block_strength_graph(H.rows, c.b, rp.data(), ci.data(), va.data(), theta, grp, gci);
      CHECK(edges == index_t(G.col_idx.size()));
      CHECK(to_host(grp, std::size_t(G.nodes) + 1) == G.row_ptr);
      CHECK(to_host(gci, std::size_t(edges)) == G.col_idx);
    }
  }
  // A block size that does not divide the rows: the host's InputError.
  const amg::Csr<double> H = amg::to_csr(K);
  auto rp = to_device(H.row_ptr);
  auto ci = to_device(H.col_idx);
  auto va = to_device(H.values);
  DeviceArray<index_t> grp, gci;
  CHECK_THROWS_AS(detail::block_strength_graph(H.rows, 8, rp.data(), ci.data(), va.data(), 0.1, grp, gci), InputError);
}

TEST_CASE("AMG block set-up pieces: P_tent and the coarse near-nullspace equal amg::tentative_prolongator bitwise") {
  std::mt19937_64 rng(26);
  std::uniform_real_distribution<double> u(-1, 1);
  struct Shape {
    int b, K;
    bool dependent;  // B with a repeated column and a zero column
  };
  for (const Shape& s : {Shape{1, 1, false}, Shape{2, 2, false}, Shape{3, 3, false}, Shape{2, 3, false},
                         Shape{3, 6, false}, Shape{3, 6, true}, Shape{6, 6, false}, Shape{8, 8, true},
                         Shape{1, 4, false}, Shape{2, 5, true}}) {
    CAPTURE(s.b);
    CAPTURE(s.K);
    CAPTURE(s.dependent);
    const index_t nodes = 301, n = nodes * s.b;
    const amg::Aggregation agg = random_aggregation(nodes, rng);
    std::vector<double> B(std::size_t(n) * s.K);
    for (double& e : B) e = u(rng);
    if (s.dependent)
      for (index_t i = 0; i < n; ++i) {
        B[std::size_t(i) * s.K + 1] = B[std::size_t(i) * s.K];  // column 1 = column 0
        B[std::size_t(i) * s.K + std::size_t(s.K - 1)] = 0;      // the last column zero
      }
    const amg::Tentative t = amg::tentative_prolongator(agg, s.b, s.K, B);
    auto dagg = to_device(agg.of_node);
    auto dB = to_device(B);
    const detail::BlockTentative g =
        detail::block_tentative_prolongator(nodes, s.b, s.K, agg.count, dagg.data(), dB.data());
    REQUIRE(g.rows == t.P.rows);
    REQUIRE(g.cols == t.P.cols);
    REQUIRE(g.nnz == t.P.nnz());
    CHECK(to_host(g.rp, std::size_t(n) + 1) == t.P.row_ptr);
    CHECK(to_host(g.ci, std::size_t(g.nnz)) == t.P.col_idx);
    CHECK(to_host(g.va, std::size_t(g.nnz)) == t.P.values);  // bitwise
    CHECK(to_host(g.coarse_b, t.coarse_B.size()) == t.coarse_B);
  }
  // The host test's example: 3 nodes of 2 unknowns, 3 modes; aggregate 1 is node 2 alone (2 rows
  // for 3 modes: a zero column).
  amg::Aggregation agg;
  agg.count = 2;
  agg.of_node = {0, 0, 1};
  const std::vector<double> B = amg::rigid_body_modes({0, 0, 1, 0, 0, 1}, 2, 6);
  const amg::Tentative t = amg::tentative_prolongator(agg, 2, 3, B);
  auto dagg = to_device(agg.of_node);
  auto dB = to_device(B);
  const detail::BlockTentative g = detail::block_tentative_prolongator(3, 2, 3, 2, dagg.data(), dB.data());
  REQUIRE(g.nnz == t.P.nnz());
  CHECK(to_host(g.rp, 7) == t.P.row_ptr);
  CHECK(to_host(g.ci, std::size_t(g.nnz)) == t.P.col_idx);
  CHECK(to_host(g.va, std::size_t(g.nnz)) == t.P.values);
  CHECK(to_host(g.coarse_b, t.coarse_B.size()) == t.coarse_B);
  bool col5 = false;
  for (index_t j : t.P.col_idx) col5 = col5 || j == 5;
  CHECK_FALSE(col5);  // aggregate 1's third mode: no entries
  CHECK_THROWS_AS(detail::block_tentative_prolongator(3, 2, 9, 2, dagg.data(), dB.data()), InputError);
}

TEST_CASE("AMG block set-up pieces: S*P_tent's values and the unit diagonal equal the host's bitwise") {
  std::vector<double> xyz;
  const auto E = elasticity_3d(5, 5, 4, 0.3, &xyz);
  const amg::Csr<double> A = amg::to_csr(E);
  const index_t n = A.rows, nodes = n / 3;
  // An aggregation by node blocks of 4 (the last smaller), rigid-body modes: P_tent with 6
  // columns an aggregate.
  amg::Aggregation agg;
  for (index_t I = 0; I < nodes; ++I) agg.of_node.push_back(I % 9 == 4 ? -1 : I / 4);
  for (index_t& g : agg.of_node)
    if (g >= 0) agg.count = std::max(agg.count, g + 1);
  {  // renumber consecutively (every aggregate non-empty)
    std::vector<index_t> map(std::size_t(agg.count), -1);
    index_t c = 0;
    for (index_t& g : agg.of_node)
      if (g >= 0) g = map[std::size_t(g)] >= 0 ? map[std::size_t(g)] : (map[std::size_t(g)] = c++);
    agg.count = c;
  }
  const amg::Tentative t = amg::tentative_prolongator(agg, 3, 6, amg::rigid_body_modes(xyz, 3, n));
  std::vector<double> dinv(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k)
      if (A.col_idx[std::size_t(k)] == i) dinv[std::size_t(i)] = 1.0 / A.values[std::size_t(k)];
  const double omega = 4.0 / 3.0 / 1.9;
  amg::Csr<double> S = A;  // amg.cpp's S = I − ω·D⁻¹A, then P = S·P_tent
  for (index_t i = 0; i < n; ++i)
    for (index_t k = S.row_ptr[std::size_t(i)]; k < S.row_ptr[std::size_t(i) + 1]; ++k) {
      double& v = S.values[std::size_t(k)];
      v = (S.col_idx[std::size_t(k)] == i ? 1.0 : 0.0) - omega * dinv[std::size_t(i)] * v;
    }
  const amg::Csr<double> P = amg::multiply(S, t.P);
  auto arp = to_device(A.row_ptr);
  auto aci = to_device(A.col_idx);
  auto ava = to_device(A.values);
  auto ddinv = to_device(dinv);
  auto trp = to_device(t.P.row_ptr);
  auto tci = to_device(t.P.col_idx);
  auto tva = to_device(t.P.values);
  auto prp = to_device(P.row_ptr);
  auto pci = to_device(P.col_idx);
  DeviceArray<double> pva(std::max<std::size_t>(P.values.size(), 1));
  detail::block_prolongator_values(n, arp.data(), aci.data(), ava.data(), A.nnz(), ddinv.data(), omega, t.P.nnz(),
                                   trp.data(), tci.data(), tva.data(), prp.data(), pci.data(), P.nnz(), pva.data());
  std::vector<double> got = to_host(pva, P.values.size());
  CHECK(got.size() == P.values.size());
  bool equal = true;
  for (std::size_t k = 0; k < got.size(); ++k) equal = equal && got[k] == P.values[k];
  CHECK(equal);  // bitwise (±0 compare equal)

  // The unit diagonal: the host test's example, and a coarse-like matrix with zero rows.
  amg::Csr<double> U;
  U.rows = U.cols = 5;
  U.row_ptr = {0, 2, 2, 4, 6, 7};
  U.col_idx = {0, 2, 0, 2, 1, 3, 4};
  U.values = {4, 1, 1, 5, 0, 0, 3};  // row 1 empty, row 3 all zeros
  for (const amg::Csr<double>& M : {U, A}) {
    const amg::Csr<double> F = amg::unit_diagonal_on_empty_rows(M);
    auto rp = to_device(M.row_ptr);
    auto ci = to_device(M.col_idx);
    auto va = to_device(M.values);
    detail::UnitDiagonal ud;
    const bool changed = detail::unit_diagonal_on_empty_rows(M.rows, M.nnz(), rp.data(), ci.data(), va.data(), ud);
    CHECK(changed == (F.row_ptr != M.row_ptr || F.col_idx != M.col_idx));
    if (!changed) continue;
    CHECK(to_host(ud.rp, std::size_t(M.rows) + 1) == F.row_ptr);
    CHECK(to_host(ud.ci, std::size_t(ud.nnz)) == F.col_idx);
    CHECK(to_host(ud.va, std::size_t(ud.nnz)) == F.values);
    DeviceArray<double> again(std::size_t(std::max<index_t>(ud.nnz, 1)));
    detail::unit_diagonal_gather(ud.nnz, ud.map.data(), va.data(), again.data());
    CHECK(to_host(again, std::size_t(ud.nnz)) == F.values);
  }
}

TEST_CASE("AMG GPU set-up, b > 1 and rigid-body modes: the host's hierarchy (aggregates exactly, levels to 1e-12)") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    const HostAmg<double> H(p.A, p.o);
    const auto G = detail::gpu_amg_setup(p.A, p.o, true);
    CHECK(H.level_data().size() >= 3);  // level 1 on: K×K blocks, the QR of the coarse near-nullspace
    if (p.small_aggregate) CHECK(has_unit_diagonal_row(H));
    test::check_matches_host(G, H);
    CHECK(G.info.auto_choice.theta_retries == H.info().auto_choice.theta_retries);
    if (p.name.find("retried") != std::string::npos) CHECK(G.info.auto_choice.theta_retries == 1);

    // Two GPU set-ups: bitwise equal.
    const auto G2 = detail::gpu_amg_setup(p.A, p.o, true);
    REQUIRE(G2.levels.size() == G.levels.size());
    for (std::size_t l = 0; l < G.levels.size(); ++l) {
      CAPTURE(l);
      CHECK(G.levels[l].aggregates == G2.levels[l].aggregates);
      if (l > 0) CHECK(same(host_copy(G.levels[l].A), host_copy(G2.levels[l].A)));
      if (l + 1 < G.levels.size()) {
        CHECK(same(host_copy(G.levels[l].P), host_copy(G2.levels[l].P)));
        CHECK(same(host_copy(G.levels[l].R), host_copy(G2.levels[l].R)));
      }
    }
    CHECK(host_factor(G) == host_factor(G2));
    MESSAGE(p.name, ": ", G.levels.size(), " levels, GPU set-up ", G.info.setup_seconds, " s, host ",
            H.info().setup_seconds, " s");
  }
}

TEST_CASE("AMG GPU set-up, b > 1 and rigid-body modes: a numeric re-set-up equals a fresh set-up bitwise") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    const auto G = detail::gpu_amg_setup(p.A, p.o, true);
    // 2·A: exactly the same strength graphs (a power of two), so the same aggregates; the
    // re-set-up through G's plan against a fresh set-up of 2·A.
    std::vector<double> v(p.A.values().data(), p.A.values().data() + p.A.nnz());
    for (double& e : v) e *= 2.0;
    const CsrMatrix<double> A2 = with_values(p.A, v);
    // Lanczos from the fixed start vector (warm_lanczos false), as the fresh set-up's: the
    // numeric path alone is compared, bitwise.
    const auto R = detail::gpu_amg_setup(A2, p.o, false, G.plan, true, false);
    const auto F = detail::gpu_amg_setup(A2, p.o, true);
    REQUIRE(R.levels.size() == F.levels.size());
    for (std::size_t l = 0; l < F.levels.size(); ++l) {
      CAPTURE(l);
      CHECK(G.levels[l].aggregates == F.levels[l].aggregates);
      CHECK(R.info.levels[l].lambda_estimate == F.info.levels[l].lambda_estimate);
      CHECK(R.info.levels[l].omega == F.info.levels[l].omega);
      CHECK(R.info.levels[l].aggregates == F.info.levels[l].aggregates);
      CHECK(R.info.levels[l].block_size == F.info.levels[l].block_size);
      const std::size_t nl = std::size_t(F.levels[l].n);
      CHECK(to_host(R.levels[l].dinv, nl) == to_host(F.levels[l].dinv, nl));
      CHECK(R.info.levels[l].block_lambda_estimate == F.info.levels[l].block_lambda_estimate);
      REQUIRE(R.levels[l].block == F.levels[l].block);
      const std::size_t nb = nl * std::size_t(F.levels[l].block);
      if (F.levels[l].block > 1) CHECK(to_host(R.levels[l].binv, nb) == to_host(F.levels[l].binv, nb));
      if (l > 0) CHECK(same(host_copy(R.levels[l].A), host_copy(F.levels[l].A)));
      if (l + 1 < F.levels.size()) {
        CHECK(same(host_copy(R.levels[l].P), host_copy(F.levels[l].P)));
        CHECK(same(host_copy(R.levels[l].R), host_copy(F.levels[l].R)));
      }
    }
    CHECK(host_factor(R) == host_factor(F));
    CHECK(R.info.stop_reason == F.info.stop_reason);

    // Through DeviceAmg: update_values to new values (D·A·D) against the host's numeric
    // re-set-up (its Lanczos may start warm: λ then agrees to the settling tolerance, so the
    // V-cycles to a few per cent), and the same update twice gives the same bits.
    const SpmvPlan<double> plan(p.A);
    DeviceAmg<double> dev(p.A, plan, p.o);
    REQUIRE(dev.set_up_on_gpu());
    const index_t n = p.A.rows();
    const auto r = test::random_vector(std::size_t(n));
    auto dr = to_device(r);
    DeviceArray<double> dz(static_cast<std::size_t>(n));
    std::vector<double> w = v;
    for (index_t i = 0; i < n; ++i)
      for (index_t k = p.A.row_ptr()(i); k < p.A.row_ptr()(i + 1); ++k)
        w[std::size_t(k)] = p.A.values()(k) * (1 + 0.3 * std::sin(0.7 * i)) *
                            (1 + 0.3 * std::sin(0.7 * p.A.col_idx()(k)));
    const CsrMatrix<double> A3 = with_values(p.A, w);
    HostAmg<double> host(p.A, p.o);
    CHECK(dev.update_values(A3));
    CHECK(host.update_values(A3));
    CHECK(dev.info().resetups == 1);
    std::vector<double> zh(static_cast<std::size_t>(n));
    host.apply(r.data(), zh.data());
    dev.apply(dr.data(), dz.data());
    const auto zd = to_host(dz, std::size_t(n));
    const double d = max_diff(zd, zh), m = max_abs(zh);
    CHECK(d <= 5e-2 * m);
    MESSAGE(p.name, ": update_values against the host's numeric re-set-up: ", d / m);
    CHECK(dev.update_values(p.A));
    CHECK(dev.update_values(A3));
    dev.apply(dr.data(), dz.data());
    CHECK(to_host(dz, std::size_t(n)) == zd);
    CHECK(dev.info().resetups == 3);
  }
}

TEST_CASE("AMG GPU set-up, b > 1 and K > 1: the products in blocks give the scalar products' bits") {
  // Every level's A, P, R and the coarse factor with the products in dense blocks (forced: Auto
  // leaves levels this small scalar) and by spgemm_numeric;
  // a re-set-up through the blocked plan against a fresh scalar set-up. Where P's blocks are full,
  // R·(A·P)'s structure comes from the blocks (expanded); elsewhere from the symbolic products.
  struct Restore {
    ~Restore() { detail::set_block_products(detail::BlockProducts::Auto); }
  } restore;
  int blocked_problems = 0, expanded = 0, mapped = 0;
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    AmgOptions po = p.o;
    po.profile_setup = true;
    detail::set_block_products(detail::BlockProducts::Always);
    const auto G = detail::gpu_amg_setup(p.A, po, true);
    detail::set_block_products(detail::BlockProducts::Never);
    const auto S = detail::gpu_amg_setup(p.A, p.o, true);
    std::vector<double> v(p.A.values().data(), p.A.values().data() + p.A.nnz());
    for (double& e : v) e *= 2.0;
    const CsrMatrix<double> A2 = with_values(p.A, v);
    const auto F = detail::gpu_amg_setup(A2, p.o, true);
    detail::set_block_products(detail::BlockProducts::Always);
    const auto R = detail::gpu_amg_setup(A2, po, false, G.plan, true, false);
    // Where the blocks ran: levels with b > 1 and K > 1 (all but the coarsest, when level 0 has).
    int blocked = 0, scalar = 0;
    for (const auto& ph : G.info.setup_phases) {
      blocked += ph.name == "A*P and R*(AP) in blocks: numeric";
      scalar += ph.name == "SpGEMM R*(AP): numeric";
      expanded += ph.name == "blocks: patterns of R, A*P, R*(AP), whose expansion is R*(AP)'s";
      mapped += ph.name == "blocks: patterns of R, A*P, R*(AP)";
    }
    const int K = amg::near_nullspace_size(p.o, G.info.levels[0].block_size);
    const bool expect = G.info.levels[0].block_size > 1 && K > 1;
    CHECK(blocked == (expect ? int(G.levels.size()) - 1 : 0));
    CHECK(blocked + scalar == int(G.levels.size()) - 1);
    blocked_problems += blocked > 0;
    int resetup_blocked = 0;
    for (const auto& ph : R.info.setup_phases) resetup_blocked += ph.name == "A*P and R*(AP) in blocks: numeric";
    CHECK(resetup_blocked == blocked);
    REQUIRE(G.levels.size() == S.levels.size());
    REQUIRE(R.levels.size() == F.levels.size());
    for (std::size_t l = 0; l < G.levels.size(); ++l) {
      CAPTURE(l);
      if (l > 0) {
        CHECK(same(host_copy(G.levels[l].A), host_copy(S.levels[l].A)));
        CHECK(same(host_copy(R.levels[l].A), host_copy(F.levels[l].A)));
      }
      if (l + 1 < G.levels.size()) {
        CHECK(same(host_copy(G.levels[l].P), host_copy(S.levels[l].P)));
        CHECK(same(host_copy(G.levels[l].R), host_copy(S.levels[l].R)));
        CHECK(same(host_copy(R.levels[l].P), host_copy(F.levels[l].P)));
      }
    }
    CHECK(host_factor(G) == host_factor(S));
    CHECK(host_factor(R) == host_factor(F));
  }
  CHECK(blocked_problems >= 8);
  MESSAGE("levels with R*(AP)'s structure expanded from the blocks: ", expanded, "; from the symbolic products: ",
          mapped);
  CHECK(expanded > 0);
}

TEST_CASE("AMG GPU set-up, b > 1 and K > 1: Auto takes the blocks by its rule, with the same bits") {
  // Under Auto a level takes its products in blocks where P's blocks are full and A·P has
  // kBlockExpansionMinTerms terms or a finer level took them, or where P's blocks have holes and
  // the scalar products would have kBlockProductMinTerms: checked level by level against counts
  // made here (P's blocks, A·P by the host's product). Elasticity 24³ and a 30 × 30 shell with
  // rigid-body modes take them (the shell's last level through the finer one); the bits are
  // those of the scalar products.
  struct Restore {
    ~Restore() { detail::set_block_products(detail::BlockProducts::Auto); }
  } restore;
  auto blocked_levels = [](const AmgInfo& info) {
    std::vector<int> levels;
    for (const auto& ph : info.setup_phases)
      if (ph.name == "A*P and R*(AP) in blocks: numeric") levels.push_back(ph.level);
    return levels;
  };
  std::vector<Problem> cases;
  {
    std::vector<double> xyz;
    Problem E{"elasticity_3d 24x24x24, rigid-body modes", elasticity_3d(24, 24, 24, 0.3, &xyz), base_options()};
    E.o.coordinates = xyz;
    E.o.coordinate_dim = 3;
    E.o.coarse_size = 200;
    E.o = amg::resolve_auto(E.A, E.o);
    cases.push_back(E);
    std::vector<double> sxyz;
    Problem S{"shell_cylinder 30x30, t 1e-3, rigid-body modes", shell_cylinder(30, 30, 1e-3, 0.3, &sxyz),
              base_options()};
    S.o.coordinates = sxyz;
    S.o.coordinate_dim = 3;
    S.o = amg::resolve_auto(S.A, S.o);
    cases.push_back(S);
  }
  const std::size_t large = cases.size();
  for (const Problem& p : problems()) cases.push_back(p);
  int full_levels = 0, holed_levels = 0, by_finer = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Problem& p = cases[c];
    CAPTURE(p.name);
    AmgOptions q = p.o;
    q.profile_setup = true;
    detail::set_block_products(detail::BlockProducts::Auto);
    const auto H = detail::gpu_amg_setup(p.A, q, true);
    const std::vector<int> in_blocks = blocked_levels(H.info);
    bool finer = false;
    for (std::size_t l = 0; l + 1 < H.levels.size(); ++l) {
      CAPTURE(l);
      const amg::Csr<double> A = l == 0 ? host_copy(p.A) : host_copy(H.levels[l].A), P = host_copy(H.levels[l].P);
      const int b = H.info.levels[l].block_size, K = H.info.levels[l + 1].block_size;
      const bool eligible = b >= 2 && K >= 2 && b <= 8 && K <= 8;
      const bool full = eligible && full_blocks(P, b, K);
      const double n = double(A.rows), ap_terms = double(A.nnz()) * double(P.nnz()) / n;
      bool expect = false;
      if (full) {
        expect = ap_terms >= detail::kBlockExpansionMinTerms || finer;
        by_finer += ap_terms < detail::kBlockExpansionMinTerms && finer;
      } else if (eligible) {
        const double ap_nnz = double(amg::multiply(A, P).nnz());
        expect = (double(A.nnz()) + ap_nnz) * double(P.nnz()) / n >= detail::kBlockProductMinTerms;
      }
      CHECK((std::find(in_blocks.begin(), in_blocks.end(), int(l)) != in_blocks.end()) == expect);
      finer = finer || expect;
      full_levels += full;
      holed_levels += eligible && !full;
    }
    if (c < large) {
      CHECK(!in_blocks.empty());
      detail::set_block_products(detail::BlockProducts::Never);
      const auto S = detail::gpu_amg_setup(p.A, p.o, true);
      REQUIRE(S.levels.size() == H.levels.size());
      for (std::size_t l = 1; l < H.levels.size(); ++l)
        CHECK(same(host_copy(H.levels[l].A), host_copy(S.levels[l].A)));
      CHECK(host_factor(H) == host_factor(S));
    }
  }
  MESSAGE("levels with b, K > 1: ", full_levels, " with P's blocks full, ", holed_levels, " with holes; ", by_finer,
          " in blocks below the terms through a finer level");
  CHECK(full_levels > 0);
  CHECK(holed_levels > 0);
  CHECK(by_finer > 0);
}

TEST_CASE("AMG GPU set-up, b > 1 and rigid-body modes: DeviceAmg applies the host's V-cycle; PCG converges") {
  for (const Problem& p : problems()) {
    CAPTURE(p.name);
    const SpmvPlan<double> plan(p.A);
    const DeviceAmg<double> dev(p.A, plan, p.o);
    CHECK(dev.set_up_on_gpu());
    const std::string sum = dev.summary();
    CAPTURE(sum);
    CHECK(sum.find("set up on the GPU") != std::string::npos);
    CHECK(sum.find(", b " + std::to_string(dev.info().levels[0].block_size) + ",") != std::string::npos);
    const HostAmg<double> host(p.A, p.o);
    const index_t n = p.A.rows();
    const auto r = test::random_vector(std::size_t(n));
    std::vector<double> zh(static_cast<std::size_t>(n));
    host.apply(r.data(), zh.data());
    auto dr = to_device(r);
    DeviceArray<double> dz(static_cast<std::size_t>(n));
    dev.apply(dr.data(), dz.data());
    const auto zd = to_host(dz, std::size_t(n));
    const double d = max_diff(zd, zh), m = max_abs(zh);
    CHECK(d <= 1e-10 * m);
  }
  // PCG on elasticity with the GPU-set-up AMG: unit vectors and rigid-body modes.
  std::vector<double> xyz;
  const auto E = elasticity_3d(12, 12, 12, 0.3, &xyz);
  const index_t n = E.rows();
  std::vector<double> b(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) b[std::size_t(i)] = 1 + 0.5 * std::sin(0.37 * i);
  for (bool rigid : {false, true}) {
    CAPTURE(rigid);
    SolveOptions o;
    o.precond.kind = PrecondKind::Amg;
    o.precond.amg.aggregation = AmgAggregation::Mis2;
    if (rigid) {
      o.precond.amg.coordinates = xyz;
      o.precond.amg.coordinate_dim = 3;
    } else {
      o.precond.amg.block_size = 3;
    }
    o.cg.rtol = 1e-8;
    o.cg.max_iters = 1000;
    o.backend = Backend::Host;
    std::vector<double> xh, xd;
    const auto host = solve(E, b, xh, o);
    o.backend = Backend::Cuda;
    const auto dev = solve(E, b, xd, o);
    REQUIRE(dev.status == SolveStatus::Converged);
    CHECK(test::true_relative_residual(E, b, xd) <= 1e-8);
    CHECK(std::abs(dev.iterations - host.iterations) <= std::max<index_t>(2, host.iterations / 20));
    CHECK(dev.preconditioner.find("set up on the GPU") != std::string::npos);
    MESSAGE("elasticity_3d 12^3 ", rigid ? "rigid-body modes" : "unit vectors", ": ", dev.iterations,
            " iterations on the GPU (host ", host.iterations, "); ", dev.preconditioner);
  }
}

TEST_CASE("AMG GPU set-up, b > 1: fp32 levels from the double set-up; greedy stays on the host") {
  std::vector<double> xyz;
  const auto E = elasticity_3d(6, 5, 5, 0.3, &xyz);
  AmgOptions o = base_options();
  o.coordinates = xyz;
  o.coordinate_dim = 3;
  o = amg::resolve_auto(E, o);
  std::vector<float> vf(E.values().data(), E.values().data() + E.nnz());
  const auto Ef = CsrMatrix<float>::from_arrays(
      E.rows(), E.cols(), std::vector<index_t>(E.row_ptr().data(), E.row_ptr().data() + E.rows() + 1),
      std::vector<index_t>(E.col_idx().data(), E.col_idx().data() + E.nnz()), vf);
  const SpmvPlan<float> planf(Ef);
  const DeviceAmg<float> devf(Ef, planf, o);
  CHECK(devf.set_up_on_gpu());
  const HostAmg<float> hostf(Ef, o);
  REQUIRE(devf.info().levels.size() == hostf.info().levels.size());
  const index_t n = E.rows();
  const auto r = test::random_vector<float>(std::size_t(n));
  std::vector<float> zh(static_cast<std::size_t>(n));
  hostf.apply(r.data(), zh.data());
  auto dr = to_device(r);
  DeviceArray<float> dz(static_cast<std::size_t>(n));
  devf.apply(dr.data(), dz.data());
  const auto zd = to_host(dz, std::size_t(n));
  const double d = max_diff(zd, zh), m = max_abs(zh);
  CHECK(d <= 1e-4 * m);

  AmgOptions g = o;
  g.aggregation = AmgAggregation::Greedy;
  const SpmvPlan<double> plan(E);
  CHECK_FALSE(DeviceAmg<double>(E, plan, g).set_up_on_gpu());
  // amg.filter on with b > 1: the host's InputError from the GPU set-up too.
  AmgOptions f = o;
  f.filter = AmgFilter::On;
  CHECK_THROWS_AS(detail::gpu_amg_setup(E, f), InputError);
  CHECK_THROWS_AS(HostAmg<double>(E, f), InputError);
}
