// The sparse pieces of the AMG set-up (amg.hpp): CSR transpose, SpGEMM and sum, strength of
// connection, aggregation, the tentative prolongator, and a dense Cholesky for the coarsest level.
#include <algorithm>
#include <cmath>
#include <limits>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/amg_mis2_rules.hpp"
#include "krysp/precond/spd_block.hpp"
#include "krysp/solvers/small_dense.hpp"

namespace krysp::amg {

template <class T>
Csr<double> to_csr(const CsrMatrix<T>& A) {
  Csr<double> C;
  C.rows = A.rows();
  C.cols = A.cols();
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  C.row_ptr.assign(rp.data(), rp.data() + A.rows() + 1);
  C.col_idx.assign(ci.data(), ci.data() + A.nnz());
  C.values.resize(std::size_t(A.nnz()));
  for (index_t k = 0; k < A.nnz(); ++k) C.values[std::size_t(k)] = double(va(k));
  return C;
}

Csr<double> transpose(const Csr<double>& A) {
  Csr<double> T;
  T.rows = A.cols;
  T.cols = A.rows;
  T.row_ptr.assign(std::size_t(A.cols) + 1, 0);
  for (index_t j : A.col_idx) ++T.row_ptr[std::size_t(j) + 1];
  for (index_t j = 0; j < A.cols; ++j) T.row_ptr[std::size_t(j) + 1] += T.row_ptr[std::size_t(j)];
  T.col_idx.resize(A.col_idx.size());
  T.values.resize(A.values.size());
  std::vector<index_t> next(T.row_ptr.begin(), T.row_ptr.end() - 1);
  for (index_t i = 0; i < A.rows; ++i)  // rows in order: each row of Aᵀ gets its columns sorted
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k) {
      const index_t p = next[std::size_t(A.col_idx[std::size_t(k)])]++;
      T.col_idx[std::size_t(p)] = i;
      T.values[std::size_t(p)] = A.values[std::size_t(k)];
    }
  return T;
}

Csr<double> multiply(const Csr<double>& A, const Csr<double>& B) {
  KRYSP_REQUIRE(A.cols == B.rows, "AMG: sparse product of ", A.rows, "x", A.cols, " and ", B.rows, "x", B.cols);
  Csr<double> C;
  C.rows = A.rows;
  C.cols = B.cols;
  C.row_ptr.assign(std::size_t(A.rows) + 1, 0);
  std::vector<index_t> mark(std::size_t(B.cols), -1), cols;
  std::vector<double> acc(std::size_t(B.cols), 0.0);
  for (index_t i = 0; i < A.rows; ++i) {
    cols.clear();
    for (index_t p = A.row_ptr[std::size_t(i)]; p < A.row_ptr[std::size_t(i) + 1]; ++p) {
      const index_t k = A.col_idx[std::size_t(p)];
      const double a = A.values[std::size_t(p)];
      for (index_t q = B.row_ptr[std::size_t(k)]; q < B.row_ptr[std::size_t(k) + 1]; ++q) {
        const index_t j = B.col_idx[std::size_t(q)];
        if (mark[std::size_t(j)] != i) {
          mark[std::size_t(j)] = i;
          cols.push_back(j);
          acc[std::size_t(j)] = a * B.values[std::size_t(q)];
        } else {
          acc[std::size_t(j)] += a * B.values[std::size_t(q)];
        }
      }
    }
    std::sort(cols.begin(), cols.end());
    KRYSP_REQUIRE(std::int64_t(C.col_idx.size()) + std::int64_t(cols.size()) <= kMaxNnz,
                  "AMG: a sparse product has more than ", kMaxNnz, " nonzeros (index_t is 32-bit)");
    for (index_t j : cols) {
      C.col_idx.push_back(j);
      C.values.push_back(acc[std::size_t(j)]);
    }
    C.row_ptr[std::size_t(i) + 1] = index_t(C.col_idx.size());
  }
  return C;
}

bool multiply_numeric(const Csr<double>& A, const Csr<double>& B, Csr<double>& C) {
  if (A.cols != B.rows || C.rows != A.rows || C.cols != B.cols) return false;
  std::vector<index_t> mark(std::size_t(B.cols), -1);
  std::vector<double> acc(std::size_t(B.cols), 0.0);
  for (index_t i = 0; i < A.rows; ++i) {
    const index_t c0 = C.row_ptr[std::size_t(i)], c1 = C.row_ptr[std::size_t(i) + 1];
    for (index_t p = c0; p < c1; ++p) mark[std::size_t(C.col_idx[std::size_t(p)])] = i;
    // The same order of additions as multiply(): a first product lands on 0 exactly, so the values
    // are bit for bit those of multiply() on the same inputs.
    for (index_t p = A.row_ptr[std::size_t(i)]; p < A.row_ptr[std::size_t(i) + 1]; ++p) {
      const index_t k = A.col_idx[std::size_t(p)];
      const double a = A.values[std::size_t(p)];
      for (index_t q = B.row_ptr[std::size_t(k)]; q < B.row_ptr[std::size_t(k) + 1]; ++q) {
        const index_t j = B.col_idx[std::size_t(q)];
        if (mark[std::size_t(j)] != i) return false;  // a product outside C's pattern
        acc[std::size_t(j)] += a * B.values[std::size_t(q)];
      }
    }
    for (index_t p = c0; p < c1; ++p) {
      double& v = acc[std::size_t(C.col_idx[std::size_t(p)])];
      C.values[std::size_t(p)] = v;
      v = 0;
    }
  }
  return true;
}

Csr<double> add(double alpha, const Csr<double>& A, double beta, const Csr<double>& B) {
  KRYSP_REQUIRE(A.rows == B.rows && A.cols == B.cols, "AMG: sum of ", A.rows, "x", A.cols, " and ", B.rows, "x",
                B.cols);
  Csr<double> C;
  C.rows = A.rows;
  C.cols = A.cols;
  C.row_ptr.assign(std::size_t(A.rows) + 1, 0);
  for (index_t i = 0; i < A.rows; ++i) {
    index_t p = A.row_ptr[std::size_t(i)], q = B.row_ptr[std::size_t(i)];
    const index_t pe = A.row_ptr[std::size_t(i) + 1], qe = B.row_ptr[std::size_t(i) + 1];
    while (p < pe || q < qe) {
      const index_t ja = p < pe ? A.col_idx[std::size_t(p)] : std::numeric_limits<index_t>::max();
      const index_t jb = q < qe ? B.col_idx[std::size_t(q)] : std::numeric_limits<index_t>::max();
      double v = 0;
      const index_t j = std::min(ja, jb);
      if (ja == j) v += alpha * A.values[std::size_t(p++)];
      if (jb == j) v += beta * B.values[std::size_t(q++)];
      C.col_idx.push_back(j);
      C.values.push_back(v);
    }
    C.row_ptr[std::size_t(i) + 1] = index_t(C.col_idx.size());
  }
  return C;
}

Graph strength_graph(const Csr<double>& A, int b, double theta) {
  KRYSP_REQUIRE(b >= 1 && A.rows % b == 0, "AMG: block size ", b, " does not divide ", A.rows, " rows");
  const index_t nodes = A.rows / b;
  // Node-level magnitudes: |a_ij| for b = 1, the Frobenius norm of the b×b block for b > 1.
  std::vector<double> diag(std::size_t(nodes), 0.0);
  for (index_t i = 0; i < A.rows; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k)
      if (A.col_idx[std::size_t(k)] / b == i / b) diag[std::size_t(i / b)] += A.values[std::size_t(k)] * A.values[std::size_t(k)];
  for (double& d : diag) d = std::sqrt(d);
  Graph G;
  G.nodes = nodes;
  G.row_ptr.assign(std::size_t(nodes) + 1, 0);
  std::vector<index_t> mark(std::size_t(nodes), -1), cols;
  std::vector<double> acc(std::size_t(nodes), 0.0);
  for (index_t I = 0; I < nodes; ++I) {
    cols.clear();
    for (index_t i = I * b; i < (I + 1) * b; ++i)
      for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k) {
        const index_t J = A.col_idx[std::size_t(k)] / b;
        if (J == I) continue;
        const double v = A.values[std::size_t(k)];
        if (mark[std::size_t(J)] != I) {
          mark[std::size_t(J)] = I;
          cols.push_back(J);
          acc[std::size_t(J)] = v * v;
        } else {
          acc[std::size_t(J)] += v * v;
        }
      }
    std::sort(cols.begin(), cols.end());
    for (index_t J : cols)
      if (std::sqrt(acc[std::size_t(J)]) >= theta * std::sqrt(diag[std::size_t(I)] * diag[std::size_t(J)]) &&
          acc[std::size_t(J)] > 0)
        G.col_idx.push_back(J);
    G.row_ptr[std::size_t(I) + 1] = index_t(G.col_idx.size());
  }
  return G;
}

std::vector<std::uint8_t> filter_entries(const Csr<double>& A, double theta) {
  // |a_ii| as strength_graph forms it for b = 1 (sqrt of the square), so that its test is repeated
  // exactly; the GPU set-up rounds the same way.
  std::vector<double> d(std::size_t(A.rows), 0.0);
  for (index_t i = 0; i < A.rows; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k)
      if (A.col_idx[std::size_t(k)] == i) {
        const double v = A.values[std::size_t(k)];
        d[std::size_t(i)] = std::sqrt(v * v);
      }
  std::vector<std::uint8_t> keep(A.col_idx.size(), 0);
  for (index_t i = 0; i < A.rows; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k) {
      const index_t j = A.col_idx[std::size_t(k)];
      const double acc = A.values[std::size_t(k)] * A.values[std::size_t(k)], m = std::sqrt(acc);
      keep[std::size_t(k)] = j == i || (acc > 0 && (m >= theta * std::sqrt(d[std::size_t(i)] * d[std::size_t(j)]) ||
                                                    m >= theta * d[std::size_t(i)]));
    }
  return keep;
}

Csr<double> filtered_matrix(const Csr<double>& A, const std::vector<std::uint8_t>& keep, const std::vector<double>& b,
                            index_t* dropped) {
  KRYSP_REQUIRE(keep.size() == A.col_idx.size() && b.size() == std::size_t(A.rows) && A.rows == A.cols,
                "AMG: filtered matrix of a ", A.rows, "x", A.cols, " matrix with ", A.nnz(), " entries from ",
                keep.size(), " flags and ", b.size(), " near-nullspace values");
  Csr<double> F;
  F.rows = A.rows;
  F.cols = A.cols;
  F.row_ptr.assign(std::size_t(A.rows) + 1, 0);
  index_t left_out = 0;
  for (index_t i = 0; i < A.rows; ++i) {
    const index_t begin = A.row_ptr[std::size_t(i)], end = A.row_ptr[std::size_t(i) + 1];
    double aii = 0, lump = 0;
    for (index_t k = begin; k < end; ++k) {
      const index_t j = A.col_idx[std::size_t(k)];
      if (j == i) {
        aii = A.values[std::size_t(k)];
      } else if (!keep[std::size_t(k)]) {
        lump += A.values[std::size_t(k)] * b[std::size_t(j)] / b[std::size_t(i)];
        ++left_out;
      }
    }
    double d = aii + lump;
    if (!(d > 0 && std::isfinite(d))) d = aii;  // lumping would make it indefinite: keep a_ii
    for (index_t k = begin; k < end; ++k)
      if (keep[std::size_t(k)] || A.col_idx[std::size_t(k)] == i) {
        const index_t j = A.col_idx[std::size_t(k)];
        F.col_idx.push_back(j);
        F.values.push_back(j == i ? d : A.values[std::size_t(k)]);
      }
    F.row_ptr[std::size_t(i) + 1] = F.nnz();
  }
  if (dropped) *dropped = left_out;
  return F;
}

Aggregation aggregate(const Graph& G) {
  const index_t n = G.nodes;
  constexpr index_t kFree = -1, kIsolated = -2;
  Aggregation a;
  std::vector<index_t> agg(std::size_t(n), kFree);
  auto nbrs = [&](index_t i) {
    return std::pair(G.col_idx.data() + G.row_ptr[std::size_t(i)], G.col_idx.data() + G.row_ptr[std::size_t(i) + 1]);
  };
  // Pass 1: roots whose strong neighbours are all free.
  for (index_t i = 0; i < n; ++i) {
    if (agg[std::size_t(i)] != kFree) continue;
    const auto [b, e] = nbrs(i);
    if (b == e) {
      agg[std::size_t(i)] = kIsolated;
      ++a.isolated;
      continue;
    }
    if (std::any_of(b, e, [&](index_t j) { return agg[std::size_t(j)] != kFree; })) continue;
    agg[std::size_t(i)] = a.count;
    for (const index_t* j = b; j != e; ++j) agg[std::size_t(*j)] = a.count;
    ++a.count;
  }
  a.roots = a.count;
  // Pass 2: leftovers join the aggregate of their first strong neighbour aggregated by pass 1
  // (the snapshot keeps pass-2 nodes from pulling further nodes in).
  const std::vector<index_t> pass1 = agg;
  for (index_t i = 0; i < n; ++i) {
    if (agg[std::size_t(i)] != kFree) continue;
    const auto [b, e] = nbrs(i);
    for (const index_t* j = b; j != e; ++j)
      if (pass1[std::size_t(*j)] >= 0) {
        agg[std::size_t(i)] = pass1[std::size_t(*j)];
        ++a.attached;
        break;
      }
  }
  // Pass 3: new aggregates from what is left (a node and its free strong neighbours).
  for (index_t i = 0; i < n; ++i) {
    if (agg[std::size_t(i)] != kFree) continue;
    agg[std::size_t(i)] = a.count;
    const auto [b, e] = nbrs(i);
    for (const index_t* j = b; j != e; ++j)
      if (agg[std::size_t(*j)] == kFree) agg[std::size_t(*j)] = a.count;
    ++a.count;
  }
  for (index_t& g : agg)
    if (g == kIsolated) g = -1;
  a.of_node = std::move(agg);
  return a;
}

Aggregation aggregate_mis2(const Graph& G) {
  namespace r = mis2;
  const index_t n = G.nodes;
  const index_t* rp = G.row_ptr.data();
  const index_t* ci = G.col_idx.data();
  const std::size_t N = std::size_t(n);
  Aggregation a;
  // Rounds of the maximal independent set at distance 2, each a synchronous update (every node
  // reads the previous round's keys): what the GPU runs, one thread a node.
  std::vector<std::uint64_t> keys(N), k1(N), k2(N);
  index_t undecided = 0;
  for (index_t i = 0; i < n; ++i) {
    const bool isolated = rp[i] == rp[i + 1];
    keys[std::size_t(i)] = r::key(isolated ? r::kOut : r::kUndecided, i);
    a.isolated += isolated ? 1 : 0;
    undecided += isolated ? 0 : 1;
  }
  while (undecided > 0) {
    for (index_t i = 0; i < n; ++i) k1[std::size_t(i)] = r::max_over_row(rp, ci, i, keys.data());
    for (index_t i = 0; i < n; ++i) k2[std::size_t(i)] = r::max_over_row(rp, ci, i, k1.data());
    undecided = 0;
    for (index_t i = 0; i < n; ++i) {
      keys[std::size_t(i)] = r::decide(keys[std::size_t(i)], k2[std::size_t(i)], i);
      undecided += r::state_of(keys[std::size_t(i)]) == r::kUndecided ? 1 : 0;
    }
  }
  // Roots number the aggregates in node order; their neighbours join the first root in column
  // order, then nodes two steps away the first neighbour that joined.
  std::vector<index_t> agg1(N, -1);
  for (index_t i = 0; i < n; ++i)
    if (r::state_of(keys[std::size_t(i)]) == r::kRoot) agg1[std::size_t(i)] = a.count++;
  a.roots = a.count;
  for (index_t i = 0; i < n; ++i)
    if (r::state_of(keys[std::size_t(i)]) != r::kRoot && rp[i] < rp[i + 1])
      agg1[std::size_t(i)] = r::join_root(rp, ci, i, keys.data(), agg1.data());
  std::vector<index_t> agg = agg1;
  for (index_t i = 0; i < n; ++i)
    if (agg1[std::size_t(i)] < 0 && rp[i] < rp[i + 1]) {
      agg[std::size_t(i)] = r::join_neighbour(rp, ci, i, agg1.data());
      a.attached += agg[std::size_t(i)] >= 0 ? 1 : 0;
    }
  // A node farther from every root (possible only where the graph is not symmetric) makes an
  // aggregate of its own, in node order.
  for (index_t i = 0; i < n; ++i)
    if (agg[std::size_t(i)] < 0 && rp[i] < rp[i + 1]) agg[std::size_t(i)] = a.count++;
  a.of_node = std::move(agg);
  return a;
}

Tentative tentative_prolongator(const Aggregation& agg, int b, int K, const std::vector<double>& B) {
  const index_t nodes = index_t(agg.of_node.size()), n = nodes * b;
  KRYSP_REQUIRE(K >= 1 && K <= 6 * b, "AMG: near-nullspace of ", K, " vectors for block size ", b);
  KRYSP_REQUIRE(B.size() == std::size_t(n) * std::size_t(K), "AMG: near-nullspace has ", B.size(),
                " entries, expected ", n, "x", K);
  // The nodes of each aggregate, in node order (counting sort).
  std::vector<index_t> start(std::size_t(agg.count) + 1, 0), members(static_cast<std::size_t>(nodes));
  for (index_t g : agg.of_node)
    if (g >= 0) ++start[std::size_t(g) + 1];
  for (index_t g = 0; g < agg.count; ++g) start[std::size_t(g) + 1] += start[std::size_t(g)];
  {
    std::vector<index_t> next(start.begin(), start.end() - 1);
    for (index_t I = 0; I < nodes; ++I)
      if (agg.of_node[std::size_t(I)] >= 0) members[std::size_t(next[std::size_t(agg.of_node[std::size_t(I)])]++)] = I;
  }
  Tentative t;
  t.coarse_B.assign(std::size_t(agg.count) * K * K, 0.0);
  std::vector<double> Qrows(std::size_t(n) * K, 0.0);  // row i of P_tent's block (K values)
  std::vector<double> Q, R;
  for (index_t g = 0; g < agg.count; ++g) {
    const index_t first = start[std::size_t(g)], count = start[std::size_t(g) + 1] - first;
    const index_t m = count * b;  // rows of the aggregate (fewer than K: columns beyond m are zero)
    auto row_of = [&](index_t r) { return members[std::size_t(first + r / b)] * b + r % b; };
    Q.assign(std::size_t(m) * K, 0.0);  // column-major m × K
    R.assign(std::size_t(K) * K, 0.0);
    for (int k = 0; k < K; ++k) {
      double* q = Q.data() + std::size_t(k) * m;
      double norm0 = 0;
      for (index_t r = 0; r < m; ++r) {
        q[r] = B[std::size_t(row_of(r)) * K + k];
        norm0 += q[r] * q[r];
      }
      norm0 = std::sqrt(norm0);
      for (int pass = 0; pass < 2; ++pass)  // Gram-Schmidt twice: orthogonal to rounding
        for (int c = 0; c < k; ++c) {
          const double* qc = Q.data() + std::size_t(c) * m;
          double h = 0;
          for (index_t r = 0; r < m; ++r) h += qc[r] * q[r];
          R[std::size_t(c) * K + k] += h;
          for (index_t r = 0; r < m; ++r) q[r] -= h * qc[r];
        }
      double norm = 0;
      for (index_t r = 0; r < m; ++r) norm += q[r] * q[r];
      norm = std::sqrt(norm);
      if (norm > 1e-10 * norm0 && norm > 0) {
        R[std::size_t(k) * K + k] = norm;
        for (index_t r = 0; r < m; ++r) q[r] /= norm;
        continue;
      }
      // B's column k is dependent on the earlier ones here: complete Q with the unit vector that
      // keeps the most of its norm after orthogonalisation (R's diagonal entry stays 0).
      index_t best = 0;
      double best_norm = -1;
      for (index_t e = 0; e < m; ++e) {
        double s = 1;
        for (int c = 0; c < k; ++c) s -= Q[std::size_t(c) * m + e] * Q[std::size_t(c) * m + e];
        if (s > best_norm + 1e-12) best_norm = s, best = e;
      }
      std::fill(q, q + m, 0.0);
      if (!(best_norm > 1e-8)) continue;  // no unit vector left: the aggregate holds fewer than K
      q[best] = 1;
      for (int pass = 0; pass < 2; ++pass)
        for (int c = 0; c < k; ++c) {
          const double* qc = Q.data() + std::size_t(c) * m;
          double h = 0;
          for (index_t r = 0; r < m; ++r) h += qc[r] * q[r];
          for (index_t r = 0; r < m; ++r) q[r] -= h * qc[r];
        }
      norm = 0;
      for (index_t r = 0; r < m; ++r) norm += q[r] * q[r];
      norm = std::sqrt(norm);
      for (index_t r = 0; r < m; ++r) q[r] /= norm;
    }
    for (index_t r = 0; r < m; ++r)
      for (int k = 0; k < K; ++k) Qrows[std::size_t(row_of(r)) * K + k] = Q[std::size_t(k) * m + r];
    for (int i = 0; i < K; ++i)
      for (int k = 0; k < K; ++k) t.coarse_B[(std::size_t(g) * K + i) * K + k] = R[std::size_t(i) * K + k];
  }
  Csr<double>& P = t.P;
  P.rows = n;
  P.cols = agg.count * K;
  P.row_ptr.assign(std::size_t(n) + 1, 0);
  for (index_t i = 0; i < n; ++i) {
    const index_t g = agg.of_node[std::size_t(i / b)];
    if (g >= 0)
      for (int k = 0; k < K; ++k) {
        const double v = Qrows[std::size_t(i) * K + k];
        if (v == 0) continue;  // unit-vector near-nullspaces give exact zeros: keep P sparse
        P.col_idx.push_back(g * K + k);
        P.values.push_back(v);
      }
    P.row_ptr[std::size_t(i) + 1] = P.nnz();
  }
  return t;
}

int coordinate_unknowns(const std::vector<double>& coordinates, int dim, index_t n) {
  KRYSP_REQUIRE(dim == 2 || dim == 3, "AMG: rigid-body modes need 2 or 3 coordinates per node, not ", dim);
  const std::size_t nodes = coordinates.size() / std::size_t(dim);
  const int rotating = dim == 3 ? 6 : 3;  // the translations, then a rotation per axis (one in 2-D)
  if (nodes > 0 && nodes * std::size_t(dim) == std::size_t(n)) return dim;
  if (nodes > 0 && nodes * std::size_t(rotating) == std::size_t(n)) return rotating;
  KRYSP_THROW(InputError, "AMG: ", nodes, " nodes of ", dim, " coordinates give ", nodes * std::size_t(dim),
              " unknowns (", nodes * std::size_t(rotating), " with rotations), but the matrix has ", n, " rows");
}

std::vector<double> rigid_body_modes(const std::vector<double>& coordinates, int dim, index_t n) {
  const int u = coordinate_unknowns(coordinates, dim, n);  // unknowns a node: dim, or dim + rotations
  const std::size_t nodes = coordinates.size() / std::size_t(dim);
  double centre[3] = {0, 0, 0};
  for (std::size_t p = 0; p < nodes; ++p)
    for (int d = 0; d < dim; ++d) centre[d] += coordinates[p * dim + std::size_t(d)] / double(nodes);
  const int K = dim == 3 ? 6 : 3;
  std::vector<double> B(std::size_t(n) * K, 0.0);
  for (std::size_t p = 0; p < nodes; ++p) {
    const double x = coordinates[p * dim] - centre[0], y = coordinates[p * dim + 1] - centre[1],
                 z = dim == 3 ? coordinates[p * dim + 2] - centre[2] : 0.0;
    auto at = [&](int c, int k) -> double& { return B[(p * std::size_t(u) + std::size_t(c)) * K + std::size_t(k)]; };
    for (int c = 0; c < dim; ++c) at(c, c) = 1;  // translations
    if (dim == 2) {
      at(0, 2) = -y, at(1, 2) = x;  // rotation in the plane
    } else {
      at(1, 3) = -z, at(2, 3) = y;  // about x
      at(0, 4) = z, at(2, 4) = -x;  // about y
      at(0, 5) = -y, at(1, 5) = x;  // about z
    }
    for (int c = dim; c < u; ++c) at(c, c) = 1;  // a rigid rotation turns every node's own rotation alike
  }
  return B;
}

int near_nullspace_size(const AmgOptions& o, int b) {
  if (!o.near_nullspace.empty()) return o.near_nullspace_vectors;
  if (!o.coordinates.empty()) return o.coordinate_dim == 3 ? 6 : 3;
  return b;
}

std::vector<double> explicit_near_nullspace(const AmgOptions& o, index_t n) {
  if (!o.coordinates.empty()) return rigid_body_modes(o.coordinates, o.coordinate_dim, n);
  if (o.near_nullspace.empty()) return {};
  const std::size_t K = std::size_t(o.near_nullspace_vectors);
  KRYSP_REQUIRE(o.near_nullspace.size() == std::size_t(n) * K, "AMG: amg.near_nullspace holds ",
                o.near_nullspace.size() / K, " rows of ", K, " vectors, but the matrix has ", n, " rows");
  return o.near_nullspace;
}

Csr<double> unit_diagonal_on_empty_rows(const Csr<double>& A) {
  Csr<double> C;
  C.rows = A.rows;
  C.cols = A.cols;
  C.row_ptr.assign(std::size_t(A.rows) + 1, 0);
  for (index_t i = 0; i < A.rows; ++i) {
    const index_t begin = A.row_ptr[std::size_t(i)], end = A.row_ptr[std::size_t(i) + 1];
    bool empty = true;
    for (index_t k = begin; k < end; ++k) empty = empty && A.values[std::size_t(k)] == 0;
    if (empty) {
      C.col_idx.push_back(i);
      C.values.push_back(1.0);
    } else {
      C.col_idx.insert(C.col_idx.end(), A.col_idx.begin() + begin, A.col_idx.begin() + end);
      C.values.insert(C.values.end(), A.values.begin() + begin, A.values.begin() + end);
    }
    C.row_ptr[std::size_t(i) + 1] = C.nnz();
  }
  return C;
}

int lanczos_min_steps(bool warm, double theta, double old_lambda) {
  return warm && old_lambda > 0 && std::abs(theta - old_lambda) <= kAmgWarmLanczosTrust * old_lambda
             ? kAmgWarmLanczosMinSteps
             : kLanczosMinSteps;
}

std::vector<double> largest_ritz_coefficients(const std::vector<double>& alpha, const std::vector<double>& beta, int m) {
  if (m < 1 || m > kAmgLanczosRecordSteps || std::size_t(m) > alpha.size() || std::size_t(m) > beta.size() + 1) return {};
  const std::size_t M = std::size_t(m);
  std::vector<double> T(M * M, 0.0), w, V;
  for (std::size_t j = 0; j < M; ++j) {
    T[j * M + j] = alpha[j];
    if (j + 1 < M) T[j * M + j + 1] = T[(j + 1) * M + j] = beta[j];
  }
  if (!dense::sym_eig(index_t(m), T, w, V)) return {};
  return std::vector<double>(V.begin() + std::ptrdiff_t((M - 1) * M), V.end());  // ascending: the last column
}

index_t cholesky(index_t n, std::vector<double>& a, double* pivot, index_t* pinned) {
  const std::size_t N = std::size_t(n);
  if (pinned) *pinned = 0;
  double amax = 0;
  for (std::size_t j = 0; j < N; ++j) amax = std::max(amax, std::abs(a[j * N + j]));
  for (std::size_t j = 0; j < N; ++j) {
    double* lj = a.data() + j * N;
    const double ajj = lj[j];
    double d = ajj;
    for (std::size_t k = 0; k < j; ++k) d -= lj[k] * lj[k];
    const double zero = pivot_zero_level(ajj, n, amax);
    if (!std::isfinite(d) || d < -zero) {
      *pivot = d;
      return index_t(j);
    }
    if (d <= zero) {  // pinned: unknown j decoupled, its solves give 0
      std::fill(lj, lj + j, 0.0);
      lj[j] = std::numeric_limits<double>::infinity();
      for (std::size_t i = j + 1; i < N; ++i) a[i * N + j] = 0.0;
      if (pinned) ++*pinned;
      continue;
    }
    d = std::sqrt(d);
    lj[j] = d;
    // Column j below the diagonal, four rows at a time: four independent chains of subtractions
    // where one row at a time waits on each (a coarse level of 174 rows took 0.8 ms). Each row's
    // sum still takes its terms in k order: the same bits.
    std::size_t i = j + 1;
    for (; i + 4 <= N; i += 4) {
      double* l0 = a.data() + i * N;
      double *l1 = l0 + N, *l2 = l1 + N, *l3 = l2 + N;
      double s0 = l0[j], s1 = l1[j], s2 = l2[j], s3 = l3[j];
      for (std::size_t k = 0; k < j; ++k) {
        const double x = lj[k];
        s0 -= l0[k] * x;
        s1 -= l1[k] * x;
        s2 -= l2[k] * x;
        s3 -= l3[k] * x;
      }
      l0[j] = s0 / d;
      l1[j] = s1 / d;
      l2[j] = s2 / d;
      l3[j] = s3 / d;
    }
    for (; i < N; ++i) {
      double* li = a.data() + i * N;
      double s = li[j];
      for (std::size_t k = 0; k < j; ++k) s -= li[k] * lj[k];
      li[j] = s / d;
    }
  }
  return -1;
}

std::vector<double> coarse_cholesky(std::size_t level, const Csr<double>& A, index_t* pinned) {
  const index_t n = A.rows;
  std::vector<double> dense(std::size_t(n) * std::size_t(n), 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k)
      dense[std::size_t(i) * std::size_t(n) + std::size_t(A.col_idx[std::size_t(k)])] = A.values[std::size_t(k)];
  double pivot = 0;
  const index_t bad = cholesky(n, dense, &pivot, pinned);
  if (bad >= 0)
    KRYSP_THROW(InputError, "AMG: the coarse matrix of level ", level, " (", n,
                " rows, level 0 = A) is not positive semidefinite: Cholesky pivot ", bad + 1, " = ", pivot,
                pivot < 0 ? " (negative: indefinite)" : " (not finite)", "; A is not symmetric positive definite");
  return dense;
}

bool node_block_smoothing(const AmgOptions& o, int b, index_t n) {
  return o.block_smoother && o.smoother == AmgSmoother::Chebyshev && b >= 2 && b <= kMaxBlockSize && n % b == 0;
}

bool node_block_inverses(std::size_t level, const Csr<double>& A, int b, std::vector<double>& inv,
                         std::vector<double>& linv) {
  KRYSP_REQUIRE(b >= 2 && b <= kMaxBlockSize && A.rows % b == 0, "AMG: node blocks of ", b, " unknowns on ",
                A.rows, " rows");
  const std::size_t bb = std::size_t(b) * std::size_t(b);
  inv.assign(std::size_t(A.rows) * std::size_t(b), 0.0);
  linv.assign(inv.size(), 0.0);
  double a[kMaxBlockSize * kMaxBlockSize], w[kMaxBlockSize * kMaxBlockSize];
  bool coupled = false;
  for (index_t I = 0; I < A.rows / b; ++I) {
    std::fill(a, a + bb, 0.0);
    for (int r = 0; r < b; ++r) {
      const index_t i = I * b + r;
      for (index_t k = A.row_ptr[std::size_t(i)]; k < A.row_ptr[std::size_t(i) + 1]; ++k) {
        const index_t j = A.col_idx[std::size_t(k)];
        if (j / b == I) a[std::size_t(r * b + j % b)] = A.values[std::size_t(k)];
      }
    }
    for (int r = 0; r < b && !coupled; ++r)
      for (int c = 0; c < b; ++c)
        if (c != r && std::abs(a[r * b + c]) > kAmgNodeCoupling * std::sqrt(std::abs(a[r * b + r] * a[c * b + c])))
          coupled = true;
    double pivot = 0;
    const int bad = detail::invert_spd_block(b, a, w, &pivot);
    if (bad != 0)
      KRYSP_THROW(InputError, "AMG: the ", b, "x", b, " diagonal block of node ", I + 1, " (unknowns ", I * b + 1,
                  "..", I * b + b, ") of the level-", level, " matrix (level 0 = A) is not positive definite: pivot ",
                  bad, " = ", pivot, "; A is not symmetric positive definite");
    double* out = inv.data() + std::size_t(I) * bb;
    double* lo = linv.data() + std::size_t(I) * bb;
    for (std::size_t q = 0; q < bb; ++q) out[q] = w[q];
    for (int r = 0; r < b; ++r)
      for (int c = 0; c <= r; ++c) lo[r * b + c] = a[r * b + c];  // L⁻¹, left in a's lower triangle
  }
  return coupled;
}

template Csr<double> to_csr(const CsrMatrix<double>&);
template Csr<double> to_csr(const CsrMatrix<float>&);

}  // namespace krysp::amg
