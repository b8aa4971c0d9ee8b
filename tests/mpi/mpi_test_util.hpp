#pragma once
// Helpers of the distributed suites: the world communicator, deterministic vectors (the same on
// every rank), and a global matrix's rows cut as a simulation code would hand them over.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/sparse/csr.hpp"
#include "test_util.hpp"  // load() (read on every rank), true_relative_residual()

namespace krysp::test {

/// MPI_COMM_WORLD as a krysp communicator (made once: duplicating is collective).
inline const Communicator& world() {
  static const Communicator comm = Communicator::world();
  return comm;
}

/// Entry i of a fixed vector, the same on every rank and run (seed picks the vector).
inline double fixed_entry(std::int64_t i, int seed = 1) { return std::sin(0.7 * double(i + 1) * seed + seed) + 0.1; }

/// n entries of fixed_entry.
inline std::vector<double> fixed_vector(std::int64_t n, int seed = 1) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = fixed_entry(i, seed);
  return v;
}

/// Entries [first, last) of v.
inline std::vector<double> slice(const std::vector<double>& v, std::int64_t first, std::int64_t last) {
  return std::vector<double>(v.begin() + first, v.begin() + last);
}

/// Rows [first, last) of A as a simulation code holds them: local row offsets, global columns.
struct LocalRows {
  std::vector<index_t> row_ptr{0};
  std::vector<std::int64_t> cols;
  std::vector<double> values;
};
inline LocalRows rows_of(const CsrMatrix<double>& A, std::int64_t first, std::int64_t last) {
  LocalRows r;
  const auto v = A.host_view();
  for (std::int64_t i = first; i < last; ++i) {
    for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k) {
      r.cols.push_back(v.col_idx[k]);
      r.values.push_back(v.values[k]);
    }
    r.row_ptr.push_back(index_t(r.cols.size()));
  }
  return r;
}

/// A partition of the rows: rank p owns [starts[p], starts[p+1]).
struct Partition {
  std::string name;
  std::vector<std::int64_t> starts;
};

/// Partitions of n rows over P ranks with ranks that own nothing or little, cut at multiples of
/// `unit` rows (n a multiple of it): on one rank the whole; else rank 0 empty, the last rank
/// empty, and a rank of one unit: rank 0 on 2 ranks, rank 1 between empty ranks 0 and 2 on 4 or
/// more (on 3, rank 0 empty, rank 1 one unit). The others share the rest evenly.
inline std::vector<Partition> partitions_with_empty_ranks(int P, std::int64_t n, std::int64_t unit = 1) {
  const std::int64_t units = n / unit;
  // ranks [p0, p1) share units [u0, units) evenly; the ranks before p0 are already placed
  auto fill = [&](std::vector<std::int64_t>& s, int p0, int p1, std::int64_t u0) {
    for (int p = p0; p <= p1; ++p) s[p] = unit * (u0 + (units - u0) * (p - p0) / std::max(1, p1 - p0));
  };
  if (P == 1) return {{"one rank", {0, n}}};
  std::vector<Partition> out;
  std::vector<std::int64_t> s(P + 1, 0);
  fill(s, 1, P, 0);
  out.push_back({"rank 0 empty", s});
  fill(s, 0, P - 1, 0);
  s[P] = n;
  out.push_back({"the last rank empty", s});
  s.assign(P + 1, 0);
  if (P == 2) {
    s = {0, unit, n};
    out.push_back({"one unit on rank 0", s});
  } else if (P == 3) {
    s = {0, 0, unit, n};
    out.push_back({"rank 0 empty, one unit on rank 1", s});
  } else {
    s[2] = s[3] = unit;  // ranks 0 and 2 empty, rank 1 one unit
    fill(s, 3, P, 1);
    out.push_back({"ranks 0 and 2 empty, one unit on rank 1", s});
  }
  return out;
}

/// ‖a − b‖ / ‖b‖.
inline double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    s += b[i] * b[i];
  }
  return std::sqrt(d) / std::sqrt(s);
}

/// The global n × k eigenvector block (row-major) from each rank's rows.
inline std::vector<double> gather_rows(const Communicator& comm, const std::vector<double>& local, std::int64_t n,
                                       std::int64_t first, index_t k) {
  std::vector<double> g(static_cast<std::size_t>(n) * static_cast<std::size_t>(k), 0.0);
  std::copy(local.begin(), local.end(), g.begin() + first * k);
  comm.sum(g.data(), g.size());  // each entry is nonzero on its owner only: the sum is exact
  return g;
}

/// ‖b − A·x‖/‖b‖ over all ranks, from the global matrix and this rank's rows of x (from row
/// `first`) gathered: not from the solver.
inline double global_true_residual(const Communicator& comm, const CsrMatrix<double>& A, const std::vector<double>& b,
                                   const std::vector<double>& x_local, std::int64_t first) {
  return true_relative_residual(A, b, gather_rows(comm, x_local, std::int64_t(b.size()), first, 1));
}

/// max_j ‖A·x_j − λ_j·B·x_j‖ / (|λ_j|·‖B·x_j‖) from the global matrices (no solver code).
inline double worst_relative_residual(const CsrMatrix<double>& A, const CsrMatrix<double>* B,
                                      const std::vector<double>& X, const std::vector<double>& lambda) {
  const std::size_t n = static_cast<std::size_t>(A.rows()), k = lambda.size();
  double worst = 0;
  for (std::size_t j = 0; j < k; ++j) {
    std::vector<double> x(n), ax(n), bx(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = X[i * k + j];
    A.multiply_host(x.data(), ax.data());
    if (B)
      B->multiply_host(x.data(), bx.data());
    else
      bx = x;
    double r = 0, b = 0;
    for (std::size_t i = 0; i < n; ++i) {
      r += (ax[i] - lambda[j] * bx[i]) * (ax[i] - lambda[j] * bx[i]);
      b += bx[i] * bx[i];
    }
    worst = std::max(worst, std::sqrt(r) / (std::abs(lambda[j]) * std::sqrt(b)));
  }
  return worst;
}

}  // namespace krysp::test
