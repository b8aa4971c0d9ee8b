#include "krysp/precond/chebyshev.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <type_traits>

#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/precond/jacobi.hpp"
#include "krysp/sparse/host/spmm_reference.hpp"

namespace krysp {

namespace {
constexpr double kLanczosTol = kLanczosSettleTol;  ///< |θ_j − θ_{j−2}| ≤ tol·θ_j: settled
constexpr double kLanczosBreakdown = 1e-12;  ///< β ≤ this·θ: invariant subspace, θ exact
}  // namespace

ChebyshevCoefficients chebyshev_coefficients(double lambda_min, double lambda_max, int degree) {
  const double theta = 0.5 * (lambda_max + lambda_min), delta = 0.5 * (lambda_max - lambda_min);
  const double sigma = theta / delta;
  ChebyshevCoefficients c;
  c.lambda_min = lambda_min;
  c.lambda_max = lambda_max;
  c.c0 = 1.0 / theta;
  double rho = 1.0 / sigma;
  for (int k = 1; k < degree; ++k) {
    const double rho_next = 1.0 / (2.0 * sigma - rho);
    c.c1.push_back(rho_next * rho);
    c.c2.push_back(2.0 * rho_next / delta);
    rho = rho_next;
  }
  return c;
}

double tridiagonal_max_eigenvalue(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t m = a.size();
  if (m == 0) return 0;
  double lo = a[0], hi = a[0];  // Gershgorin interval of the tridiagonal matrix
  for (std::size_t i = 0; i < m; ++i) {
    const double r = (i > 0 ? std::abs(b[i - 1]) : 0.0) + (i + 1 < m ? std::abs(b[i]) : 0.0);
    lo = std::min(lo, a[i] - r);
    hi = std::max(hi, a[i] + r);
  }
  if (!std::isfinite(lo) || !std::isfinite(hi)) return std::nan("");
  // Sturm count: the number of negative pivots of T − x·I (LDLᵀ) is the number of eigenvalues < x.
  auto below = [&](double x) {
    std::size_t count = 0;
    double q = 1;
    for (std::size_t i = 0; i < m; ++i) {
      q = a[i] - x - (i > 0 ? b[i - 1] * b[i - 1] / q : 0.0);
      if (q == 0) q = -1e-300;  // x is an eigenvalue: perturb consistently
      if (q < 0) ++count;
    }
    return count;
  };
  for (int it = 0; it < 200 && hi - lo > 4e-16 * std::max(std::abs(lo), std::abs(hi)); ++it) {
    const double mid = 0.5 * (lo + hi);
    if (below(mid) == m)
      hi = mid;  // every eigenvalue is below mid
    else
      lo = mid;
  }
  return hi;
}

LanczosResult lanczos_largest(LanczosOperator& op, index_t n, int max_steps, double enough, double settle_tol) {
  LanczosResult res;
  if (n <= 0 || max_steps <= 0) return res;
  std::vector<double> a, b, thetas;
  std::vector<double> alphas(static_cast<std::size_t>(max_steps)), betas(static_cast<std::size_t>(max_steps));
  op.start();
  const int batch = std::max(1, op.batch());
  int run = 0;  // steps the operator has run (alphas/betas hold them)
  for (int j = 0; j < max_steps; ++j) {
    if (j == run) {
      // The first batch: first_batch() steps (at least the fewest a settling test may stop at).
      const int want = j == 0 && batch > 1 ? std::max(batch, op.first_batch()) : batch;
      const int count = std::min(want, max_steps - j);
      op.steps(count, alphas.data() + j, betas.data() + j);
      run += count;
    }
    const double alpha = alphas[std::size_t(j)], beta = betas[std::size_t(j)];
    a.push_back(alpha);
    const double theta = tridiagonal_max_eigenvalue(a, b);
    thetas.push_back(theta);
    res.theta = theta;
    res.steps = j + 1;
    res.change = j >= 2 ? std::abs(theta - thetas[j - 2]) / std::abs(theta) : 1.0;
    if (!std::isfinite(alpha) || !std::isfinite(beta) || !std::isfinite(theta)) {
      res.theta = std::nan("");
      return res;
    }
    // β = 0: the Krylov space is invariant (or all of R^n), so θ is an eigenvalue, the largest
    // one the start vector reaches.
    if (beta <= kLanczosBreakdown * std::abs(theta) || j + 1 >= n) {
      res.converged = true;
      return res;
    }
    if (j + 1 >= op.min_steps(theta) && res.change <= settle_tol) {
      res.converged = true;
      return res;
    }
    // θ_j never decreases with j (the Ritz values of T_j interlace those of T_{j+1}): once it
    // reaches `enough`, later steps cannot change what the caller does with it.
    if (theta >= enough) {
      res.converged = true;
      return res;
    }
    b.push_back(beta);
  }
  return res;
}

int choose_chebyshev_step(const SpmvConfig& config, const RowStats& s) {
  switch (config.algorithm) {
    case SpmvAlgorithm::RowSubwarp: return config.subwarp;
    case SpmvAlgorithm::RowSequential: return 0;
    case SpmvAlgorithm::NnzSequential:
    case SpmvAlgorithm::NnzSegmented: return s.max_len <= kChebyshevStreamMaxRow ? 0 : -1;
  }
  return -1;
}

template <class T>
std::vector<T> chebyshev_scaling(const CsrMatrix<T>& A, double* gershgorin) {
  KRYSP_REQUIRE(A.rows() == A.cols(), "Chebyshev: matrix is ", A.rows(), "x", A.cols(), ", not square");
  std::vector<T> inv(static_cast<std::size_t>(A.rows()));
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  double g = 0;
  for (index_t i = 0; i < A.rows(); ++i) {
    double d = 0, sum = 0;
    for (index_t k = rp(i); k < rp(i + 1); ++k) {
      if (ci(k) == i) d = double(va(k));
      sum += std::abs(double(va(k)));
    }
    if (!(std::isfinite(d) && d > 0)) throw_bad_diagonal("Chebyshev", kChebyshevNeeds, i, d);
    inv[i] = T(1.0 / d);
    g = std::max(g, sum / d);  // NaN in a row makes sum NaN; max() keeps g then: checked below
    if (!std::isfinite(sum)) g = sum;
  }
  *gershgorin = g;
  return inv;
}

ChebyshevInfo chebyshev_interval(const PrecondOptions& o, double gershgorin, LanczosOperator& op, index_t n) {
  ChebyshevInfo info;
  info.degree = o.cheb_degree;
  info.ratio = o.cheb_ratio;
  info.gershgorin = gershgorin;
  if (o.cheb_lambda_max > 0) {
    info.lambda_max = o.cheb_lambda_max;
  } else if (n == 0) {
    info.lambda_max = 1;
  } else {
    // λmax = min(boost·θ, Gershgorin): once boost·θ reaches the bound, λmax is the bound.
    const double enough = std::isfinite(gershgorin) && gershgorin > 0 ? gershgorin / o.cheb_boost
                                                                       : std::numeric_limits<double>::infinity();
    const LanczosResult l = lanczos_largest(op, n, o.cheb_eig_steps, enough);
    info.lambda_estimate = l.theta;
    info.lanczos_steps = l.steps;
    KRYSP_REQUIRE(std::isfinite(l.theta), "Chebyshev: the estimate of lambda_max(D^-1 A) is ", l.theta,
                  " (not finite) after ", l.steps, " Lanczos steps: A has entries that are NaN or Inf");
    KRYSP_REQUIRE(l.theta > 0, "Chebyshev: the estimate of lambda_max(D^-1 A) is ", l.theta, " (not positive) after ",
                  l.steps, " Lanczos steps: A is not symmetric positive definite");
    if (!l.converged)
      KRYSP_THROW(Error, "Chebyshev: the estimate of lambda_max(D^-1 A) did not converge: ", l.theta, " after ",
                  l.steps, " Lanczos steps, still changing by ", l.change,
                  " (relative, over two steps; needs <= ", kLanczosTol,
                  "); allow more steps (cheb_eig_steps) or give lambda_max");
    info.lambda_max = o.cheb_boost * l.theta;
    if (std::isfinite(gershgorin) && gershgorin >= l.theta) info.lambda_max = std::min(info.lambda_max, gershgorin);
  }
  KRYSP_REQUIRE(std::isfinite(gershgorin), "Chebyshev: the Gershgorin bound of D^-1 A is ", gershgorin,
                ": A has entries that are NaN or Inf");
  info.lambda_min = info.lambda_max / o.cheb_ratio;
  return info;
}

namespace {
/// Lanczos on S = D^{-1/2}·A·D^{-1/2} on the host, in T with double dots (like the GPU), over any
/// product y = A·x of this process's rows: the one-rank CSR product, or a distributed one whose
/// dot products `sum` reduces over the ranks (null: one rank). The start vector's entry i is
/// lanczos_start_entry(first_row + i): the same global vector whatever the partition.
template <class T>
class HostLanczos final : public LanczosOperator {
 public:
  using Multiply = std::function<void(const T*, T*)>;
  HostLanczos(Multiply multiply, const std::vector<T>& dinv, std::int64_t first_row = 0,
              std::function<void(double*, std::size_t)> sum = nullptr)
      : multiply_(std::move(multiply)), sum_(std::move(sum)), first_row_(first_row), n_(dinv.size()) {
    s_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) s_[i] = T(std::sqrt(double(dinv[i])));
    v_.assign(n_, T(0));
    vp_.assign(n_, T(0));
    w_.assign(n_, T(0));
    u_.assign(n_, T(0));
  }
  void start() override {
    double ss = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      v_[i] = T(detail::lanczos_start_entry(first_row_ + std::int64_t(i)));
      ss += double(v_[i]) * double(v_[i]);
    }
    ss = reduce(ss);
    const T scale = T(1.0 / std::sqrt(ss));
    for (auto& e : v_) e *= scale;
    std::fill(vp_.begin(), vp_.end(), T(0));
    step_ = 0;
    beta_ = 0;
  }
  void steps(int count, double* alpha, double* beta) override {
    for (int t = 0; t < count; ++t, ++step_) {
      if (step_ > 0) advance(beta_);
      alpha[t] = multiply(beta_);
      beta_ = orthogonalise(alpha[t]);
      beta[t] = beta_;
    }
  }

 private:
  double reduce(double v) const {
    if (sum_) sum_(&v, 1);
    return v;
  }
  // w = S·v − β·v_prev; returns wᵀv.
  double multiply(double beta) {
    for (std::size_t i = 0; i < n_; ++i) u_[i] = s_[i] * v_[i];
    multiply_(u_.data(), w_.data());
    const T b = T(beta);
    double sum = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      w_[i] = s_[i] * w_[i] - b * vp_[i];
      sum += double(w_[i]) * double(v_[i]);
    }
    return reduce(sum);
  }
  // w −= α·v; returns ‖w‖.
  double orthogonalise(double alpha) {
    const T a = T(alpha);
    double sum = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      w_[i] -= a * v_[i];
      sum += double(w_[i]) * double(w_[i]);
    }
    return std::sqrt(reduce(sum));
  }
  // v_prev = v; v = w/β.
  void advance(double beta) {
    const T scale = T(1.0 / beta);
    for (std::size_t i = 0; i < n_; ++i) {
      vp_[i] = v_[i];
      v_[i] = w_[i] * scale;
    }
  }

  Multiply multiply_;
  std::function<void(double*, std::size_t)> sum_;
  std::int64_t first_row_;
  std::size_t n_;
  std::vector<T> s_, v_, vp_, w_, u_;
  int step_ = 0;       // the next step's index
  double beta_ = 0;    // β of the last step (0 before the first)
};

/// The polynomial of the file comment on n = dinv.size() rows and N columns (row-major blocks),
/// with mult(N, X, Y): Y = A·X on those rows (N columns, leading dimension N). Shared by the
/// one-rank Chebyshev and the distributed one (whose mult exchanges halos: every rank calls it
/// the same number of times, even one without rows).
template <class T, class S, class Mult>
void chebyshev_polynomial(const ChebyshevCoefficients& coef, int d, const std::vector<S>& dinv, index_t N, const T* R,
                          index_t ldr, T* Z, index_t ldz, std::vector<S>& u_, std::vector<S>& v_, std::vector<S>& w_,
                          Mult&& mult) {
  const std::size_t n = dinv.size();
  const S c0 = S(coef.c0);
  if (d == 1) {
    for (std::size_t i = 0; i < n; ++i)
      for (index_t c = 0; c < N; ++c) Z[i * ldz + c] = T(c0 * dinv[i] * S(R[i * ldr + c]));
    return;
  }
  const std::size_t size = n * std::size_t(N);
  if (u_.size() < size) {
    u_.resize(size);
    v_.resize(size);
    w_.resize(size);
  }
  for (std::size_t i = 0; i < n; ++i)
    for (index_t c = 0; c < N; ++c) u_[i * N + c] = c0 * dinv[i] * S(R[i * ldr + c]);
  S* cur = u_.data();
  S* prev = nullptr;
  S* spare = v_.data();
  for (int k = 1; k < d; ++k) {
    mult(N, cur, w_.data());
    const S c1 = S(coef.c1[k - 1]), c2 = S(coef.c2[k - 1]);
    const bool last = k == d - 1;
    S* out = prev ? prev : spare;
    for (std::size_t i = 0; i < n; ++i)
      for (index_t c = 0; c < N; ++c) {
        const std::size_t t = i * N + c;
        const S x = cur[t], xp = prev ? prev[t] : S(0);
        const S y = x + c1 * (x - xp) + c2 * (dinv[i] * (S(R[i * ldr + c]) - w_[t]));
        if (last)
          Z[i * ldz + c] = T(y);
        else
          out[t] = y;
      }
    if (!last) {
      prev = cur;
      cur = out;
    }
  }
}

}  // namespace

template <class T, class S>
HostChebyshev<T, S>::HostChebyshev(const CsrMatrix<T>& A, const PrecondOptions& o)
    : Preconditioner<T>(A.rows(), MemorySpace::Host), fingerprint_(A.fingerprint()) {
  validate(o);
  double gershgorin = 0;
  const std::vector<T> dinv = chebyshev_scaling(A, &gershgorin);
  HostLanczos<T> lanczos([&A](const T* x, T* y) { A.multiply_host(x, y); }, dinv);
  info_ = chebyshev_interval(o, gershgorin, lanczos, A.rows());
  coef_ = chebyshev_coefficients(info_.lambda_min, info_.lambda_max, info_.degree);
  dinv_.assign(dinv.begin(), dinv.end());
  As_ = with_value_type<S>(A);
}

template <class T, class S>
void HostChebyshev<T, S>::apply(const T* r, T* z) const {
  apply_block(1, r, 1, z, 1);
}

template <class T, class S>
void HostChebyshev<T, S>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "Chebyshev: apply_block with N = ", N, ", ldr = ", ldr,
                ", ldz = ", ldz);
  if (N == 0 || dinv_.empty()) return;
  chebyshev_polynomial(coef_, info_.degree, dinv_, N, R, ldr, Z, ldz, u_, v_, w_,
                       [this](index_t w, const S* x, S* y) {
                         if (w == 1)
                           As_.multiply_host(x, y);
                         else
                           spmm_host(As_, w, S(1), x, w, S(0), y, w);
                       });
}

DistChebyshev::DistChebyshev(const DistCsrMatrix& A, const PrecondOptions& o)
    : Preconditioner<double>(A.rows(), MemorySpace::Host), A_(A) {
  const Communicator& comm = A.comm();
  const std::int64_t first = A.first_row();
  // D⁻¹ of this rank's rows (the diagonal is in the local block) and their Gershgorin sums over
  // both blocks; a bad diagonal anywhere is the same InputError on every rank.
  double g = 0;
  comm.collective([&] {
    validate(o);
    const auto L = A.local_block().host_view(), O = A.off_block().host_view();
    dinv_.assign(std::size_t(A.rows()), 0.0);
    for (index_t i = 0; i < A.rows(); ++i) {
      double d = 0, sum = 0;
      for (index_t k = L.row_ptr[i]; k < L.row_ptr[i + 1]; ++k) {
        if (L.col_idx[k] == i) d = L.values[k];
        sum += std::abs(L.values[k]);
      }
      for (index_t k = O.row_ptr[i]; k < O.row_ptr[i + 1]; ++k) sum += std::abs(O.values[k]);
      if (!(std::isfinite(d) && d > 0))
        KRYSP_THROW(InputError, "Chebyshev: diagonal entry ", d, " in row ", first + i + 1, ": ", kChebyshevNeeds);
      dinv_[std::size_t(i)] = 1.0 / d;
      g = std::max(g, sum / d);
      if (!std::isfinite(sum)) g = sum;
    }
  });
  // The global bound: max over ranks (NaN on any rank stays NaN, checked by chebyshev_interval).
  const auto all = comm.allgather(g);
  double gershgorin = 0;
  for (double v : all) {
    if (!std::isfinite(v)) {
      gershgorin = v;
      break;
    }
    gershgorin = std::max(gershgorin, v);
  }
  HostLanczos<double> lanczos([&A](const double* x, double* y) { A.apply(x, y); }, dinv_, first,
                              [&comm](double* v, std::size_t c) { comm.sum(v, c); });
  // Every rank sees the same α, β (summed in rank order), so every rank decides the same.
  const index_t n = index_t(std::min<std::int64_t>(A.global_rows(), kMaxIndex));
  info_ = chebyshev_interval(o, gershgorin, lanczos, n);
  coef_ = chebyshev_coefficients(info_.lambda_min, info_.lambda_max, info_.degree);
}

void DistChebyshev::apply(const double* r, double* z) const {
  apply_block(1, r, 1, z, 1);
}

void DistChebyshev::apply_block(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "Chebyshev: apply_block with N = ", N, ", ldr = ", ldr,
                ", ldz = ", ldz);
  if (N == 0) return;  // N is the same on every rank; a rank without rows still exchanges halos
  chebyshev_polynomial(coef_, info_.degree, dinv_, N, R, ldr, Z, ldz, u_, v_, w_,
                       [this](index_t w, const double* x, double* y) {
                         if (w == 1)
                           A_.apply(x, y);
                         else
                           A_.apply_block(w, x, w, y, w);
                       });
}

template std::vector<double> chebyshev_scaling(const CsrMatrix<double>&, double*);
template std::vector<float> chebyshev_scaling(const CsrMatrix<float>&, double*);
template class HostChebyshev<double, double>;
template class HostChebyshev<double, float>;
template class HostChebyshev<float, float>;

}  // namespace krysp
