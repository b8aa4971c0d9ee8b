// AMG's automatic choices, shared by the host and GPU set-ups (amg.hpp): θ and the smoother
// degree from the sign pattern, the node block size, the node-block smoother's interval, the
// summary's words for them, and the adaptive plan (whether the near-nullspace is adapted or
// augmented, with how many vectors) and the adoption of what its cycles leave.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/amg_adaptive.hpp"
#include "krysp/precond/block_jacobi.hpp"
#include "krysp/precond/cuda/amg_auto_stats.hpp"

namespace krysp {

namespace amg {

namespace {
/// f(i, j, a_ij) for A's stored entries on the host, row by row, each row in order.
template <class T, class F>
void for_each_entry(const CsrMatrix<T>& A, F f) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = rp(i); k < rp(i + 1); ++k) f(i, ci(k), va(k));
}
}  // namespace

template <class T>
SignCount off_diagonal_signs(const CsrMatrix<T>& A, bool on_device) {
  const std::string m = A.memo("amg: off-diagonal signs", [&] {
    std::int64_t off = 0, pos = 0;
    if (on_device) {
      const CsrView<T> d = A.device_view();
      detail::count_off_diagonal_signs(A.rows(), d.row_ptr, d.col_idx, d.values, &off, &pos);
    } else {
      for_each_entry(A, [&](index_t i, index_t j, T v) {
        if (j != i && v != T(0)) {
          ++off;
          pos += v > T(0);
        }
      });
    }
    return detail::concat(off, " ", pos);
  });
  SignCount c;
  std::istringstream(m) >> c.off_diagonal >> c.positive;
  return c;
}

template <class T>
std::int64_t isolated_nodes(const CsrMatrix<T>& A, int b, double theta, bool on_device) {
  char tag[96];
  std::snprintf(tag, sizeof tag, "amg: isolated nodes, b %d, theta %.17g", b, theta);
  return std::stoll(A.memo(tag, [&] {
    std::int64_t isolated = 0;
    if (on_device && b == 1) {
      const CsrView<T> d = A.device_view();
      isolated = detail::count_isolated_rows(A.rows(), d.row_ptr, d.col_idx, d.values, theta);
    } else {
      const Graph G = strength_graph(to_csr(A), b, theta);
      for (index_t I = 0; I < G.nodes; ++I) isolated += G.row_ptr[std::size_t(I) + 1] == G.row_ptr[std::size_t(I)];
    }
    return std::to_string(isolated);
  }));
}

template <class T>
int detected_block_size(const CsrMatrix<T>& A) {
  // The detection reads A's structure only; DeviceAmg's choice of set-up asks too (same tag).
  return std::stoi(A.memo("amg: detected block size", [&] { return std::to_string(resolve_block_size(A, 0)); }));
}

template <class T>
int node_block_size(const CsrMatrix<T>& A, const AmgOptions& o) {
  if (!o.coordinates.empty()) {
    const int u = coordinate_unknowns(o.coordinates, o.coordinate_dim, A.rows());
    KRYSP_REQUIRE(o.block_size == 0 || o.block_size == u, "AMG: amg.block_size = ", o.block_size,
                  " but the coordinates give ", u, " unknowns per node");
    return u;
  }
  return o.block_size > 0 ? resolve_block_size(A, o.block_size) : detected_block_size(A);
}

template <class T>
AmgOptions resolve_auto(const CsrMatrix<T>& A, const AmgOptions& o, AmgAutoChoice* choice, bool on_device) {
  AmgAutoChoice c;
  AmgOptions r = o;
  c.theta = o.theta == kAmgAuto;
  c.degree = o.smoother_degree == kAmgAuto && o.smoother == AmgSmoother::Chebyshev;
  c.ratio = o.smoother_ratio == kAmgAuto && o.smoother == AmgSmoother::Chebyshev;
  c.filter = o.filter == AmgFilter::Auto;
  if (c.theta || c.degree || c.ratio || c.filter) {
    c.positive_fraction = off_diagonal_signs(A, on_device).positive_fraction();
    c.structural = c.positive_fraction > kAmgStructuralPositiveFraction;
    if (c.structural && c.theta) {
      // θ = 0.25 must still coarsen level 0 (b as the set-up resolves it: a structure pass).
      const int b = node_block_size(A, o);
      if (A.rows() > 0 && A.rows() % b == 0) {
        const index_t nodes = A.rows() / b;
        c.isolated_fraction = double(isolated_nodes(A, b, kAmgThetaStructural, on_device)) / double(nodes);
        c.strong_theta = c.isolated_fraction <= kAmgStructuralMaxIsolated;
      }
    }
  }
  if (c.theta) r.theta = c.strong_theta ? kAmgThetaStructural : kAmgThetaMMatrix;
  if (o.smoother_degree == kAmgAuto) r.smoother_degree = c.structural ? kAmgDegreeStructural : kAmgDegreeMMatrix;
  if (o.smoother_ratio == kAmgAuto) r.smoother_ratio = c.structural ? kAmgRatioStructural : kDefaultAmgChebyshevRatio;
  if (c.filter) {
    // The filter's lumping keeps the default near-nullspace vector: one unknown per node, no
    // coordinates, no vectors given or adapted.
    const int b = node_block_size(A, o);
    if (!c.structural && b > 1) c.filter_block_size = b;
    r.filter = !c.structural && b == 1 && o.near_nullspace.empty() && o.adaptive_cycles <= 0 ? AmgFilter::On
                                                                                          : AmgFilter::Off;
  }
  if (choice) *choice = c;
  return r;
}

bool node_block_interval(const LanczosResult& r, const AmgOptions& o, int b, AmgLevelInfo& li,
                         ChebyshevCoefficients& coef) {
  li.block_lambda_estimate = r.theta;
  li.block_lanczos_steps = r.steps;
  if (!(r.converged && std::isfinite(r.theta) && r.theta > 0)) return false;
  const double lmax = kAmgLambdaBoost * r.theta;
  coef = chebyshev_coefficients(lmax / o.smoother_ratio, lmax, o.smoother_degree);
  li.smoother_block = b;
  return true;
}

std::string coarsest_by_size_reason(const AmgOptions& o, std::size_t l, index_t n, index_t above) {
  if (n <= o.coarse_size) return detail::concat("coarse size reached (", n, " <= ", o.coarse_size, " rows)");
  return detail::concat("dense coarse solve below level 0 (", n, " <= ", o.dense_coarse_rows, " rows on level ", l,
                        ", about ", index_t(double(n) * double(n) / double(above)), " > ", o.coarse_size,
                        " rows next)");
}

std::string describe_block_smoother(const AmgInfo& info) {
  int levels = 0, b = 0;
  for (const auto& li : info.levels)
    if (li.smoother_block > 1) ++levels, b = std::max(b, li.smoother_block);
  if (levels == 0) return "";
  return detail::concat(", smoother on ", b, "x", b, " node blocks on ", levels, " of ", info.levels.size(), " levels");
}

std::string describe_coarse_solve(const AmgInfo& info) {
  if (!info.coarse_direct) return "smoothing";
  if (info.coarse_pinned == 0) return "cholesky";
  return detail::concat("cholesky with ", info.coarse_pinned, info.coarse_pinned == 1 ? " pivot" : " pivots",
                        " zero to rounding pinned");
}

std::string describe_choice(const AmgOptions& o, const AmgAutoChoice& c) {
  // The reason follows the first auto field; a second one says "(auto)".
  char why[160];
  const int len = std::snprintf(why, sizeof why, " (auto: %.0f%% positive off-diagonals", 100 * c.positive_fraction);
  if (c.isolated_fraction >= 0 && !c.strong_theta)
    std::snprintf(why + len, sizeof why - std::size_t(len), "; theta %g would isolate %.0f%% of the nodes",
                  kAmgThetaStructural, 100 * c.isolated_fraction);
  std::ostringstream s;
  s << "theta " << o.theta;
  if (c.theta) s << why << ")";
  if (c.theta_retries > 0)
    s << " (times " << kAmgThetaRetry << " on " << c.theta_retries << " level" << (c.theta_retries > 1 ? "s" : "")
      << " that coarsened by less than " << kAmgSlowCoarsening << "x)";
  s << ", " << to_string(o.smoother);
  if (o.smoother == AmgSmoother::Chebyshev) s << " " << o.smoother_degree;
  if (c.degree) s << (c.theta ? " (auto)" : std::string(why) + ")");
  // The interval's ratio where it is not the M-matrix default.
  if (o.smoother == AmgSmoother::Chebyshev && o.smoother_ratio != kDefaultAmgChebyshevRatio)
    s << ", ratio " << o.smoother_ratio << (c.ratio ? " (auto)" : "");
  // The filter is named when it is on, given, or off for b > 1 (not when the sign rule left it off).
  if (o.filter == AmgFilter::On || !c.filter || c.filter_block_size > 1) {
    s << ", filter " << to_string(o.filter);
    if (c.filter_block_size > 1) s << " (auto: b " << c.filter_block_size << ")";
    else if (c.filter) s << (c.theta || c.degree ? " (auto)" : std::string(why) + ")");
  }
  const bool replaced = c.constant_quotient >= kAmgAdaptiveQuotient;
  if (c.adapted_cycles > 0 && replaced) {
    s << ", near-nullspace from " << c.adapted_cycles << " V-cycles";
    if (c.adaptive) {
      std::snprintf(why, sizeof why, " (auto: 1'A1/1'D1 is %.2f of lambda_max)", c.constant_quotient);
      s << why;
    }
  } else if (c.adapted_cycles > 0) {
    s << ", near-nullspace of " << c.adapt_vectors << " vectors from " << c.adapted_cycles << " V-cycles";
    if (c.adaptive) {
      std::snprintf(why, sizeof why, " (auto: structural, and the first hierarchy left %.2f of one a cycle)",
                    c.adapt_factor);
      s << why;
    }
    if (c.slow_cycles > 0) s << ", then " << c.slow_cycles << " at degree " << kAmgSlowDegree;
  } else if (c.adapt_discarded_cycles > 0) {
    std::snprintf(why, sizeof why, ", near-nullspace kept (%d V-cycles on %d vectors: left %.2f a cycle)",
                  c.adapt_discarded_cycles, c.adapt_vectors, c.adapt_factor);
    s << why;
  } else if (!o.near_nullspace.empty()) {
    s << ", near-nullspace " << o.near_nullspace_vectors << " given";
  } else if (!o.coordinates.empty()) {
    s << ", rigid-body modes";
  }
  return s.str();
}

template <class T>
double constant_quotient(const CsrMatrix<T>& A, bool on_device) {
  return std::stod(A.memo("amg: constant quotient", [&] {
    double all = 0, diagonal = 0;  // 1ᵀA1 and 1ᵀD1
    if (on_device) {
      const CsrView<T> d = A.device_view();
      detail::sum_entries_and_diagonal(A.rows(), d.row_ptr, d.col_idx, d.values, &all, &diagonal);
    } else {
      for_each_entry(A, [&](index_t i, index_t j, T v) {
        all += double(v);
        if (j == i) diagonal += double(v);
      });
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", diagonal > 0 ? all / diagonal : 0.0);
    return std::string(buf);
  }));
}

template <class T>
AdaptivePlan adaptive_plan(const CsrMatrix<T>& A, const AmgOptions& o, int b, double lambda0, std::size_t levels,
                           AmgAutoChoice& c, bool on_device) {
  c.adaptive = o.adaptive_cycles == kAmgAuto;
  AdaptivePlan p;
  if (!may_adapt(o) || levels < 2 || !(lambda0 > 0)) return p;
  // The constant near the top of D⁻¹A's spectrum: the smoother's best-reduced mode, the worst
  // near-nullspace. Replaced (bodyy6).
  if (b == 1) {
    c.constant_quotient = constant_quotient(A, on_device) / lambda0;
    if (c.constant_quotient >= kAmgAdaptiveQuotient) {
      p.cycles = c.adaptive ? kAmgAdaptiveCycles : o.adaptive_cycles;
      return p;
    }
  }
  p.augment = true;
  p.vectors = std::min(2 * b, kAmgMaxNearNullspace);
  if (!c.adaptive) {
    p.cycles = o.adaptive_cycles;
    return p;
  }
  // Structural matrices: the unit vectors (or the constant) miss modes the smoother cannot reach,
  // such as rotations; M-matrix-like ones have theirs in the constant.
  if (off_diagonal_signs(A, on_device).positive_fraction() > kAmgStructuralPositiveFraction) {
    p.cycles = kAmgAugmentCycles;
    p.conditional = true;
  }
  return p;
}

std::vector<double> adaptive_start(index_t n, int column) {
  std::vector<double> x(static_cast<std::size_t>(n));
  const std::uint64_t shift = std::uint64_t(column) * 0x632be59bd9b4e019ull;
  for (index_t i = 0; i < n; ++i) {
    std::uint64_t z = std::uint64_t(i) + 0x9e3779b97f4a7c15ull + shift;  // splitmix64
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x[std::size_t(i)] = double(z >> 11) * 0x1.0p-52 - 1.0;  // [−1, 1)
  }
  return x;
}

std::vector<double> adaptive_start_block(index_t n, int b, const AdaptivePlan& plan) {
  const int K = plan.vectors, units = plan.augment ? std::min(b, K) : 0;
  std::vector<double> X(std::size_t(n) * std::size_t(K), 0.0);
  for (index_t i = 0; i < n; ++i)
    if (units > 0) X[std::size_t(i) * K + std::size_t(i % b)] = 1.0;  // b = 1: the constant
  for (int c = units; c < K; ++c) {
    const std::vector<double> r = adaptive_start(n, c - units);
    for (index_t i = 0; i < n; ++i) X[std::size_t(i) * K + c] = r[std::size_t(i)];
  }
  return X;
}

template <class T>
bool adopt_adapted_vectors(const std::vector<T>& X, int K, AmgOptions& o) {
  if (K <= 0 || X.empty()) return false;
  const std::size_t n = X.size() / std::size_t(K);
  std::vector<double> m(std::size_t(K), 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (int c = 0; c < K; ++c) {
      const double e = double(X[i * K + c]);
      if (!std::isfinite(e)) return false;
      m[std::size_t(c)] = std::max(m[std::size_t(c)], std::abs(e));
    }
  for (double mc : m)
    if (!(mc > 0)) return false;
  o.near_nullspace.resize(X.size());
  for (std::size_t i = 0; i < n; ++i)
    for (int c = 0; c < K; ++c) o.near_nullspace[i * K + c] = double(X[i * K + c]) / m[std::size_t(c)];
  o.near_nullspace_vectors = K;
  o.adaptive_cycles = 0;
  o.filter = AmgFilter::Off;
  return true;
}

template double constant_quotient(const CsrMatrix<double>&, bool);
template double constant_quotient(const CsrMatrix<float>&, bool);
template AdaptivePlan adaptive_plan(const CsrMatrix<double>&, const AmgOptions&, int, double, std::size_t,
                                    AmgAutoChoice&, bool);
template AdaptivePlan adaptive_plan(const CsrMatrix<float>&, const AmgOptions&, int, double, std::size_t,
                                    AmgAutoChoice&, bool);
template bool adopt_adapted_vectors(const std::vector<double>&, int, AmgOptions&);
template bool adopt_adapted_vectors(const std::vector<float>&, int, AmgOptions&);
template int detected_block_size(const CsrMatrix<double>&);
template int detected_block_size(const CsrMatrix<float>&);
template int node_block_size(const CsrMatrix<double>&, const AmgOptions&);
template int node_block_size(const CsrMatrix<float>&, const AmgOptions&);
template SignCount off_diagonal_signs(const CsrMatrix<double>&, bool);
template SignCount off_diagonal_signs(const CsrMatrix<float>&, bool);
template std::int64_t isolated_nodes(const CsrMatrix<double>&, int, double, bool);
template std::int64_t isolated_nodes(const CsrMatrix<float>&, int, double, bool);
template AmgOptions resolve_auto(const CsrMatrix<double>&, const AmgOptions&, AmgAutoChoice*, bool);
template AmgOptions resolve_auto(const CsrMatrix<float>&, const AmgOptions&, AmgAutoChoice*, bool);

}  // namespace amg

}  // namespace krysp
