// MIS-2 aggregation (amg::aggregate_mis2, the GPU set-up's aggregation run on the host): every
// node with a strong neighbour is aggregated, the aggregates are connected and contain exactly
// one root, the result is deterministic, and the host hierarchy built on it converges PCG with
// iterations close to the greedy aggregation's.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/amg_mis2_rules.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

// Each aggregate's nodes form a connected subgraph of G (breadth-first search inside it).
bool aggregates_connected(const amg::Graph& G, const amg::Aggregation& a) {
  std::vector<std::vector<index_t>> members(static_cast<std::size_t>(a.count));
  for (index_t i = 0; i < G.nodes; ++i)
    if (a.of_node[std::size_t(i)] >= 0) members[std::size_t(a.of_node[std::size_t(i)])].push_back(i);
  std::vector<char> seen(static_cast<std::size_t>(G.nodes), 0);
  for (const auto& m : members) {
    if (m.empty()) return false;
    std::vector<index_t> queue{m[0]};
    seen[std::size_t(m[0])] = 1;
    std::size_t reached = 1;
    for (std::size_t q = 0; q < queue.size(); ++q) {
      const index_t i = queue[q];
      for (index_t p = G.row_ptr[std::size_t(i)]; p < G.row_ptr[std::size_t(i) + 1]; ++p) {
        const index_t j = G.col_idx[std::size_t(p)];
        if (!seen[std::size_t(j)] && a.of_node[std::size_t(j)] == a.of_node[std::size_t(i)]) {
          seen[std::size_t(j)] = 1;
          queue.push_back(j);
          ++reached;
        }
      }
    }
    if (reached != m.size()) return false;
  }
  return true;
}

// The MIS-2 properties: nodes left out exactly those without strong neighbours, one root per
// aggregate, aggregates connected and not empty.
void check_mis2(const amg::Graph& G, const amg::Aggregation& a) {
  const index_t n = G.nodes;
  REQUIRE(a.of_node.size() == std::size_t(n));
  index_t isolated = 0;
  for (index_t i = 0; i < n; ++i) {
    const bool none = G.row_ptr[std::size_t(i)] == G.row_ptr[std::size_t(i) + 1];
    isolated += none ? 1 : 0;
    CHECK((a.of_node[std::size_t(i)] < 0) == none);
    CHECK(a.of_node[std::size_t(i)] < a.count);
  }
  CHECK(a.isolated == isolated);
  CHECK(a.roots == a.count);  // symmetric graphs: no node is farther than two steps from a root
  CHECK(aggregates_connected(G, a));
  // Every aggregate holds a node (distance-2 independence is checked on the roots below).
  std::vector<index_t> size(static_cast<std::size_t>(a.count), 0);
  for (index_t g : a.of_node)
    if (g >= 0) ++size[std::size_t(g)];
  for (index_t s : size) CHECK(s >= 1);
}

PrecondOptions amg_pc(AmgAggregation agg, int b = 0) {
  PrecondOptions o = test::precond(PrecondKind::Amg);
  o.amg.aggregation = agg;
  o.amg.block_size = b;
  return o;
}

struct Run {
  index_t iterations = 0;
  double true_residual = 0, setup = 0;
  std::string summary;
};

Run pcg(const CsrMatrix<double>& A, const PrecondOptions& pc) {
  std::vector<double> b(A.rows()), x;
  for (index_t i = 0; i < A.rows(); ++i) b[i] = 1.0 + 0.5 * std::sin(0.37 * i);
  SolveOptions o;
  o.backend = Backend::Host;
  o.precond = pc;
  o.cg.rtol = 1e-8;
  const SolveReport rep = solve(A, b, x, o);
  CHECK(rep.status == SolveStatus::Converged);
  Run r;
  r.iterations = rep.iterations;
  r.true_residual = test::true_relative_residual(A, b, x);
  r.setup = rep.setup_seconds;
  r.summary = rep.preconditioner;
  CHECK(r.true_residual <= 1e-8);
  return r;
}

}  // namespace

TEST_CASE("AMG MIS-2 rules: keys order state, then priority, then index") {
  using namespace amg::mis2;
  CHECK(key(kRoot, 0) > key(kUndecided, 12345));
  CHECK(key(kUndecided, 0) > key(kOut, 99));
  CHECK(state_of(key(kRoot, 77)) == kRoot);
  CHECK(state_of(key(kOut, 77)) == kOut);
  CHECK((key(kUndecided, 5) & 0x7fffffffULL) == 5ULL);
  // The hash is fixed: these values are what the GPU kernels compute too.
  CHECK(priority(0) == priority(0));
  CHECK(priority(1) != priority(2));
  CHECK(priority(1) <= 0x7fffffffU);
}

TEST_CASE("AMG MIS-2 aggregation: properties on Laplacians, diffusion and bcsstk06") {
  struct Case {
    const char* name;
    CsrMatrix<double> A;
    int b;
    double theta;
  };
  std::vector<Case> cases;
  cases.push_back({"laplacian_2d 12x12", laplacian_2d(12, 12), 1, 0.08});
  cases.push_back({"laplacian_3d 16^3", laplacian_3d(16, 16, 16), 1, 0.08});
  cases.push_back({"diffusion_3d 12", diffusion_3d(12, 1, 1, 0.01, 1e4), 1, 0.08});
  cases.push_back({"bcsstk06 b 1", test::load("bcsstk06"), 1, 0.08});
  cases.push_back({"bcsstk06 b 3", test::load("bcsstk06"), 3, 0.08});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const auto A = amg::to_csr(c.A);
    const amg::Graph G = amg::strength_graph(A, c.b, c.theta);
    const amg::Aggregation a = amg::aggregate_mis2(G);
    check_mis2(G, a);
    CHECK(a.count > 0);
    CHECK(a.count * 3 <= G.nodes);  // aggregates of several nodes: the level shrinks
    // Deterministic: the same graph gives the same aggregates.
    const amg::Aggregation again = amg::aggregate_mis2(G);
    CHECK(again.of_node == a.of_node);
    CHECK(again.count == a.count);
    const amg::Aggregation greedy = amg::aggregate(G);
    std::printf("  %-20s nodes %6d  mis2 %5d aggregates (%d two steps out)  greedy %5d\n", c.name, int(G.nodes),
                int(a.count), int(a.attached), int(greedy.count));
  }
  // No strong connections: every node isolated, no aggregate.
  const amg::Graph none = amg::strength_graph(amg::to_csr(laplacian_2d(12, 12)), 1, 0.3);
  const amg::Aggregation a0 = amg::aggregate_mis2(none);
  CHECK(a0.count == 0);
  CHECK(a0.isolated == 144);
  for (index_t g : a0.of_node) CHECK(g == -1);
  // An empty graph.
  const amg::Aggregation empty = amg::aggregate_mis2(amg::Graph{});
  CHECK(empty.count == 0);
}

TEST_CASE("AMG MIS-2 aggregation: roots are more than two steps apart (distance-2 independent)") {
  const auto A = amg::to_csr(laplacian_3d(10, 10, 10));
  const amg::Graph G = amg::strength_graph(A, 1, 0.08);
  const amg::Aggregation a = amg::aggregate_mis2(G);
  // Recover the roots from the rules: run them again and read the states.
  const index_t n = G.nodes;
  using namespace amg::mis2;
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(n)), k1(keys), k2(keys);
  for (index_t i = 0; i < n; ++i) keys[std::size_t(i)] = key(kUndecided, i);
  for (int round = 0; round < 1000; ++round) {
    bool any = false;
    for (index_t i = 0; i < n; ++i) k1[std::size_t(i)] = max_over_row(G.row_ptr.data(), G.col_idx.data(), i, keys.data());
    for (index_t i = 0; i < n; ++i) k2[std::size_t(i)] = max_over_row(G.row_ptr.data(), G.col_idx.data(), i, k1.data());
    for (index_t i = 0; i < n; ++i) {
      keys[std::size_t(i)] = decide(keys[std::size_t(i)], k2[std::size_t(i)], i);
      any = any || state_of(keys[std::size_t(i)]) == kUndecided;
    }
    if (!any) break;
  }
  std::vector<index_t> roots;
  for (index_t i = 0; i < n; ++i)
    if (state_of(keys[std::size_t(i)]) == kRoot) roots.push_back(i);
  CHECK(index_t(roots.size()) == a.count);
  // Each root is in its own aggregate, numbered in node order.
  for (std::size_t g = 0; g < roots.size(); ++g) CHECK(a.of_node[std::size_t(roots[g])] == index_t(g));
  // Distance > 2 between roots: no root within two steps of another.
  for (index_t r : roots) {
    for (index_t p = G.row_ptr[std::size_t(r)]; p < G.row_ptr[std::size_t(r) + 1]; ++p) {
      const index_t j = G.col_idx[std::size_t(p)];
      CHECK(state_of(keys[std::size_t(j)]) != kRoot);
      for (index_t q = G.row_ptr[std::size_t(j)]; q < G.row_ptr[std::size_t(j) + 1]; ++q) {
        const index_t k = G.col_idx[std::size_t(q)];
        if (k != r) CHECK(state_of(keys[std::size_t(k)]) != kRoot);
      }
    }
  }
}

TEST_CASE("AMG MIS-2 hierarchy: PCG converges with iterations close to greedy's (true residuals checked)") {
  struct Case {
    const char* name;
    CsrMatrix<double> A;
    int b;
  };
  std::vector<Case> cases;
  cases.push_back({"laplacian_3d 32^3", laplacian_3d(32, 32, 32), 0});
  cases.push_back({"diffusion_3d(24,1,1,.01,1e4)", diffusion_3d(24, 1, 1, 0.01, 1e4), 0});
  cases.push_back({"bcsstk06 (b 3)", test::load("bcsstk06"), 3});
  cases.push_back({"bcsstk06 (b 1)", test::load("bcsstk06"), 1});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Run g = pcg(c.A, amg_pc(AmgAggregation::Greedy, c.b));
    const Run m = pcg(c.A, amg_pc(AmgAggregation::Mis2, c.b));
    std::printf("  %-30s greedy %4d it (set-up %.3f s)  mis2 %4d it (set-up %.3f s)\n    %s\n    %s\n", c.name,
                int(g.iterations), g.setup, int(m.iterations), m.setup, g.summary.c_str(), m.summary.c_str());
    CHECK(double(m.iterations) <= 1.5 * double(g.iterations) + 2);
  }
  // mis2 is the default.
  CHECK(AmgOptions{}.aggregation == AmgAggregation::Mis2);
}

TEST_CASE("AMG MIS-2 hierarchy: deterministic, and the numeric re-set-up keeps its aggregates") {
  const CsrMatrix<double> A = diffusion_3d(12, 1, 1, 0.01, 1e4);
  const AmgOptions o = amg_pc(AmgAggregation::Mis2).amg;
  const HostAmg<double> M1(A, o), M2(A, o);
  REQUIRE(M1.levels().size() == M2.levels().size());
  for (std::size_t l = 0; l < M1.levels().size(); ++l) {
    CHECK(M1.levels()[l].rows == M2.levels()[l].rows);
    CHECK(M1.levels()[l].nnz == M2.levels()[l].nnz);
  }
  std::vector<double> r(A.rows()), z1(A.rows()), z2(A.rows());
  for (index_t i = 0; i < A.rows(); ++i) r[std::size_t(i)] = std::cos(0.1 * i);
  M1.apply(r.data(), z1.data());
  M2.apply(r.data(), z2.data());
  CHECK(z1 == z2);
  // Scaled values: the numeric path (same aggregates) equals a fresh set-up up to the λ estimates
  // (the re-set-up's Lanczos starts warm), and the same calls give the same bits.
  std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
  for (double& e : v) e *= 3.0;
  CsrMatrix<double> A3 = CsrMatrix<double>::from_arrays(
      A.rows(), A.cols(), std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
      std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), v);
  HostAmg<double> M3(A, o);
  M3.update_values(A3);
  CHECK(M3.info().resetups == 1);
  const HostAmg<double> M4(A3, o);
  std::vector<double> z3(A.rows()), z4(A.rows());
  M3.apply(r.data(), z3.data());
  M4.apply(r.data(), z4.data());
  double d = 0, m = 0;
  for (std::size_t i = 0; i < z3.size(); ++i) d = std::max(d, std::abs(z3[i] - z4[i])), m = std::max(m, std::abs(z4[i]));
  CHECK(d <= 1e-2 * m);
  HostAmg<double> M5(A, o);
  M5.update_values(A3);
  std::vector<double> z5(A.rows());
  M5.apply(r.data(), z5.data());
  CHECK(z5 == z3);
  CHECK(M1.summary() == M2.summary());
  CHECK(describe(amg_pc(AmgAggregation::Greedy)).find("greedy") != std::string::npos);
  CHECK(std::string(to_string(AmgAggregation::Mis2)) == "mis2");
  CHECK(std::string(to_string(AmgAggregation::Greedy)) == "greedy");
  PrecondOptions bad = amg_pc(AmgAggregation::Mis2);
  bad.amg.aggregation = AmgAggregation(7);
  CHECK_THROWS_AS(validate(bad), InputError);
}
