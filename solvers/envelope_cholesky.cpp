#include "krysp/solvers/envelope_cholesky.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "krysp/base/error.hpp"

namespace krysp {

namespace {

/// Off-diagonal neighbours of each row (A's pattern, assumed symmetric).
struct Graph {
  std::vector<index_t> ptr, adj;
  index_t degree(index_t v) const { return ptr[v + 1] - ptr[v]; }
};

Graph graph_of(const CsrMatrix<double>& A) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const index_t n = A.rows();
  Graph g;
  g.ptr.assign(std::size_t(n) + 1, 0);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = rp(i); k < rp(i + 1); ++k)
      if (ci(k) != i) ++g.ptr[std::size_t(i) + 1];
  for (index_t i = 0; i < n; ++i) g.ptr[std::size_t(i) + 1] += g.ptr[i];
  g.adj.resize(std::size_t(g.ptr[n]));
  for (index_t i = 0, at = 0; i < n; ++i)
    for (index_t k = rp(i); k < rp(i + 1); ++k)
      if (ci(k) != i) g.adj[std::size_t(at++)] = ci(k);
  return g;
}

/// Breadth-first levels from `root` within the unvisited part (mark == 0). Returns the nodes in
/// visiting order (neighbours by degree, then index) and the level count; marks are restored.
std::vector<index_t> bfs(const Graph& g, index_t root, std::vector<char>& mark, index_t& levels,
                         std::vector<index_t>* last_level) {
  std::vector<index_t> order{root}, nb;
  mark[root] = 1;
  levels = 0;
  std::size_t begin = 0;
  while (begin < order.size()) {
    const std::size_t end = order.size();
    ++levels;
    if (last_level) last_level->assign(order.begin() + std::ptrdiff_t(begin), order.end());
    for (std::size_t q = begin; q < end; ++q) {
      const index_t v = order[q];
      nb.clear();
      for (index_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k)
        if (!mark[g.adj[k]]) {
          mark[g.adj[k]] = 1;
          nb.push_back(g.adj[k]);
        }
      std::sort(nb.begin(), nb.end(), [&](index_t a, index_t b) {
        return g.degree(a) != g.degree(b) ? g.degree(a) < g.degree(b) : a < b;
      });
      order.insert(order.end(), nb.begin(), nb.end());
    }
    begin = end;
  }
  for (index_t v : order) mark[v] = 0;
  return order;
}

}  // namespace

std::vector<index_t> reverse_cuthill_mckee(const CsrMatrix<double>& A) {
  const Graph g = graph_of(A);
  const index_t n = A.rows();
  std::vector<char> mark(std::size_t(n), 0), done(std::size_t(n), 0);
  std::vector<index_t> vertices(static_cast<std::size_t>(n));
  std::iota(vertices.begin(), vertices.end(), 0);
  std::stable_sort(vertices.begin(), vertices.end(), [&](index_t a, index_t b) { return g.degree(a) < g.degree(b); });
  std::vector<index_t> order;
  order.reserve(std::size_t(n));
  for (index_t start : vertices) {
    if (done[start]) continue;
    // A pseudo-peripheral root (George & Liu): move to a least-degree node of the last level while
    // that lengthens the level structure.
    index_t root = start, levels = 0;
    std::vector<index_t> last;
    bfs(g, root, mark, levels, &last);
    for (int rounds = 0; rounds < 8; ++rounds) {
      index_t cand = last.front();
      for (index_t v : last)
        if (g.degree(v) < g.degree(cand) || (g.degree(v) == g.degree(cand) && v < cand)) cand = v;
      index_t l2 = 0;
      std::vector<index_t> last2;
      bfs(g, cand, mark, l2, &last2);
      if (l2 <= levels) break;
      root = cand;
      levels = l2;
      last.swap(last2);
    }
    const std::vector<index_t> comp = bfs(g, root, mark, levels, nullptr);
    for (index_t v : comp) done[v] = 1;
    order.insert(order.end(), comp.begin(), comp.end());
  }
  std::reverse(order.begin(), order.end());
  return order;
}

namespace {
/// first[i]: the least column (new numbering) of row i's lower part under `order`.
std::vector<index_t> envelope_first(const CsrMatrix<double>& A, const std::vector<index_t>& order,
                                    std::vector<index_t>& inverse) {
  const index_t n = A.rows();
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  inverse.assign(std::size_t(n), 0);
  for (index_t i = 0; i < n; ++i) inverse[order[i]] = i;
  std::vector<index_t> first(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    index_t f = i;
    const index_t old = order[i];
    for (index_t k = rp(old); k < rp(old + 1); ++k) f = std::min(f, inverse[ci(k)]);
    first[i] = f;
  }
  return first;
}
}  // namespace

EnvelopeCholesky::Cost EnvelopeCholesky::cost(const CsrMatrix<double>& A) {
  std::vector<index_t> inverse;
  Cost c;
  c.order = reverse_cuthill_mckee(A);
  c.first = envelope_first(A, c.order, inverse);
  for (index_t i = 0; i < A.rows(); ++i) {
    const double len = double(i - c.first[i]) + 1;
    c.entries += std::int64_t(len);
    c.flops += 0.5 * len * len;
  }
  return c;
}

std::optional<EnvelopeCholesky> EnvelopeCholesky::factor(const CsrMatrix<double>& A, const Cost& c) {
  EnvelopeCholesky f;
  const index_t n = A.rows();
  f.n_ = n;
  KRYSP_REQUIRE(c.order.size() == std::size_t(n) && c.first.size() == std::size_t(n), "envelope Cholesky: a cost of ",
                c.order.size(), " rows for a matrix of ", n);
  f.order_ = c.order;
  f.first_ = c.first;
  std::vector<index_t> inverse(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) inverse[f.order_[i]] = i;
  f.start_.assign(std::size_t(n) + 1, 0);
  for (index_t i = 0; i < n; ++i) f.start_[std::size_t(i) + 1] = f.start_[i] + (i - f.first_[i] + 1);
  f.val_.assign(std::size_t(f.start_[n]), 0.0);
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  auto at = [&](index_t i, index_t j) -> double& { return f.val_[std::size_t(f.start_[i] + (j - f.first_[i]))]; };
  for (index_t i = 0; i < n; ++i) {
    const index_t old = f.order_[i];
    for (index_t k = rp(old); k < rp(old + 1); ++k) {
      const index_t j = inverse[ci(k)];
      if (j <= i) at(i, j) += va(k);  // duplicates sum, as in the CSR's own products
    }
  }
  // Row-oriented (Jennings): L(i,j) = (a_ij − Σ_k L(i,k)·L(j,k)) / L(j,j) over the common envelope.
  for (index_t i = 0; i < n; ++i) {
    const index_t fi = f.first_[i];
    double* Li = &at(i, fi);
    for (index_t j = fi; j < i; ++j) {
      const index_t lo = std::max(fi, f.first_[j]);
      const double* Lj = &at(j, f.first_[j]);
      double s = Li[j - fi];
      for (index_t k = lo; k < j; ++k) s -= Li[k - fi] * Lj[k - f.first_[j]];
      Li[j - fi] = s / Lj[j - f.first_[j]];
    }
    double d = Li[i - fi];
    for (index_t k = fi; k < i; ++k) d -= Li[k - fi] * Li[k - fi];
    if (!(d > 0) || !std::isfinite(d)) return std::nullopt;
    Li[i - fi] = std::sqrt(d);
  }
  return f;
}

void EnvelopeCholesky::solve(index_t N, const double* F, index_t ldf, double* Y, index_t ldy) const {
  const index_t n = n_;
  std::vector<double> z(std::size_t(n) * N);  // the permuted block, row-major ld N
  for (index_t i = 0; i < n; ++i)
    std::copy(F + std::size_t(order_[i]) * ldf, F + std::size_t(order_[i]) * ldf + N, z.begin() + std::size_t(i) * N);
  // L·w = z (rows in order)
  for (index_t i = 0; i < n; ++i) {
    const index_t fi = first_[i];
    const double* Li = &val_[std::size_t(start_[i])];
    double* zi = &z[std::size_t(i) * N];
    for (index_t k = fi; k < i; ++k) {
      const double l = Li[k - fi];
      const double* zk = &z[std::size_t(k) * N];
      for (index_t c = 0; c < N; ++c) zi[c] -= l * zk[c];
    }
    const double d = Li[i - fi];
    for (index_t c = 0; c < N; ++c) zi[c] /= d;
  }
  // Lᵀ·y = w (rows in reverse: row i's entries scatter into the rows above it)
  for (index_t i = n - 1; i >= 0; --i) {
    const index_t fi = first_[i];
    const double* Li = &val_[std::size_t(start_[i])];
    double* zi = &z[std::size_t(i) * N];
    const double d = Li[i - fi];
    for (index_t c = 0; c < N; ++c) zi[c] /= d;
    for (index_t k = fi; k < i; ++k) {
      const double l = Li[k - fi];
      double* zk = &z[std::size_t(k) * N];
      for (index_t c = 0; c < N; ++c) zk[c] -= l * zi[c];
    }
  }
  for (index_t i = 0; i < n; ++i)
    std::copy(z.begin() + std::size_t(i) * N, z.begin() + std::size_t(i + 1) * N, Y + std::size_t(order_[i]) * ldy);
}

}  // namespace krysp
