// HostAmg: the hierarchy's set-up (strength, aggregation, prolongators, Galerkin products; the
// sparse pieces are in amg_setup.cpp, the automatic choices in amg_auto.cpp) and the V-cycle.
#include "krysp/precond/amg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <type_traits>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg_adaptive.hpp"
#include "krysp/precond/block_jacobi.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/precond/jacobi.hpp"

namespace krysp {

namespace {

constexpr double kStallRatio = 1.2;      ///< a level must shrink by at least this factor

/// Lanczos on S = D^{-1/2}·A·D^{-1/2} (the spectrum of D⁻¹A) for a level in double. A full set-up
/// records the first kAmgLanczosRecordSteps vectors (in float) and forms the largest Ritz vector
/// (ritz_vector); a numeric re-set-up starts from it (`warm`) and may settle after
/// kAmgWarmLanczosMinSteps steps: the GPU set-up's GpuLevelLanczos, operation for operation.
class LevelLanczos final : public LanczosOperator {
 public:
  LevelLanczos(const amg::Csr<double>& A, const std::vector<double>& dinv, const std::vector<float>* warm = nullptr,
               double old_lambda = 0, bool record = false)
      : A_(A), n_(std::size_t(A.rows)), warm_(warm && warm->size() == std::size_t(A.rows) ? warm : nullptr),
        old_lambda_(old_lambda), record_(record) {
    s_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) s_[i] = std::sqrt(dinv[i]);
    init();
  }
  /// The block smoother's operator L⁻¹·A·L⁻ᵀ (similar to D_b⁻¹A), L⁻¹ the node blocks' factors'
  /// inverses (amg::node_block_inverses' linv); warm, old_lambda and record as above.
  LevelLanczos(const amg::Csr<double>& A, const std::vector<double>& linv, int b, const std::vector<float>* warm,
               double old_lambda, bool record)
      : A_(A), n_(std::size_t(A.rows)), warm_(warm && warm->size() == std::size_t(A.rows) ? warm : nullptr),
        old_lambda_(old_lambda), record_(record), linv_(&linv), b_(b) {
    init();
  }
  void init() {
    v_.assign(n_, 0);
    vp_.assign(n_, 0);
    w_.assign(n_, 0);
    u_.assign(n_, 0);
    y_.assign(n_, 0);
  }
  /// out = L⁻¹·in node by node, or L⁻ᵀ·in with `transposed` (L⁻¹ lower triangular).
  void node_blocks(const double* in, double* out, bool transposed) const {
    const std::size_t b = std::size_t(b_), bb = b * b;
    for (std::size_t I = 0; I < n_ / b; ++I) {
      const double* m = linv_->data() + I * bb;
      const double* x = in + I * b;
      for (std::size_t r = 0; r < b; ++r) {
        double s = 0;
        if (transposed)
          for (std::size_t c = r; c < b; ++c) s += m[c * b + r] * x[c];
        else
          for (std::size_t c = 0; c <= r; ++c) s += m[r * b + c] * x[c];
        out[I * b + r] = s;
      }
    }
  }
  void start() override {
    double ss = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      v_[i] = warm_ ? double((*warm_)[i]) : detail::lanczos_start_entry(std::int64_t(i));
      ss += v_[i] * v_[i];
    }
    for (double& e : v_) e /= std::sqrt(ss);
    std::fill(vp_.begin(), vp_.end(), 0.0);
    step_ = 0;
    beta_ = 0;
    basis_.clear();
    alpha_.clear();
    betas_.clear();
  }
  void steps(int count, double* alpha, double* beta) override {
    for (int t = 0; t < count; ++t, ++step_) {
      if (step_ > 0)
        for (std::size_t i = 0; i < n_; ++i) {
          vp_[i] = v_[i];
          v_[i] = w_[i] / beta_;
        }
      if (record_ && step_ < kAmgLanczosRecordSteps)
        for (std::size_t i = 0; i < n_; ++i) basis_.push_back(float(v_[i]));
      // w = S·A·Sᵀ·v − β·v_prev: S = L⁻¹ (node blocks) or D^{-1/2} (s_): u = Sᵀ·v, y = A·u.
      if (linv_) {
        node_blocks(v_.data(), u_.data(), true);
      } else {
        for (std::size_t i = 0; i < n_; ++i) u_[i] = s_[i] * v_[i];
      }
      for (std::size_t i = 0; i < n_; ++i) {
        double y = 0;
        for (index_t k = A_.row_ptr[i]; k < A_.row_ptr[i + 1]; ++k)
          y += A_.values[std::size_t(k)] * u_[std::size_t(A_.col_idx[std::size_t(k)])];
        y_[i] = y;
      }
      if (linv_) node_blocks(y_.data(), w_.data(), false);
      double a = 0;
      for (std::size_t i = 0; i < n_; ++i) {
        w_[i] = (linv_ ? w_[i] : s_[i] * y_[i]) - beta_ * vp_[i];
        a += w_[i] * v_[i];
      }
      double b = 0;
      for (std::size_t i = 0; i < n_; ++i) {
        w_[i] -= a * v_[i];
        b += w_[i] * w_[i];
      }
      alpha[t] = a;
      beta[t] = beta_ = std::sqrt(b);
      alpha_.push_back(a);
      betas_.push_back(beta_);
    }
  }
  int min_steps(double theta) const override { return amg::lanczos_min_steps(warm_ != nullptr, theta, old_lambda_); }

  /// The largest Ritz vector of the first m steps (float), or empty when not recorded.
  std::vector<float> ritz_vector(int m) const {
    const std::vector<double> c = amg::largest_ritz_coefficients(alpha_, betas_, m);
    if (c.empty() || basis_.size() < std::size_t(m) * n_) return {};
    std::vector<float> out(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      double sum = 0;
      for (int j = 0; j < m; ++j) sum += c[std::size_t(j)] * double(basis_[std::size_t(j) * n_ + i]);
      out[i] = float(sum);
    }
    return out;
  }

 private:
  const amg::Csr<double>& A_;
  std::size_t n_;
  const std::vector<float>* warm_;
  double old_lambda_;
  bool record_;
  std::vector<double> s_, v_, vp_, w_, u_, y_;
  const std::vector<double>* linv_ = nullptr;  // node blocks' L⁻¹ (block smoother), else D^{-1/2} in s_
  int b_ = 1;
  std::vector<float> basis_;
  std::vector<double> alpha_, betas_;
  int step_ = 0;
  double beta_ = 0;
};

template <class T>
amg::Csr<T> convert(amg::Csr<double>&& A) {
  if constexpr (std::is_same_v<T, double>) {
    return std::move(A);
  } else {
    amg::Csr<T> C;
    C.rows = A.rows;
    C.cols = A.cols;
    C.row_ptr = std::move(A.row_ptr);
    C.col_idx = std::move(A.col_idx);
    C.values.assign(A.values.begin(), A.values.end());
    return C;
  }
}

/// dst = src converted to T, into dst's existing storage where it has the room.
template <class T>
void copy_into(amg::Csr<T>& dst, const amg::Csr<double>& src) {
  dst.rows = src.rows;
  dst.cols = src.cols;
  dst.row_ptr.assign(src.row_ptr.begin(), src.row_ptr.end());
  dst.col_idx.assign(src.col_idx.begin(), src.col_idx.end());
  dst.values.assign(src.values.begin(), src.values.end());
}

}  // namespace

template <class T>
HostAmg<T>::HostAmg(const CsrMatrix<T>& A, const AmgOptions& o)
    : Preconditioner<T>(A.rows(), MemorySpace::Host), fingerprint_(A.fingerprint()), opt_(o) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    PrecondOptions po;
    po.kind = PrecondKind::Amg;
    po.amg = o;
    validate(po);
  }
  KRYSP_REQUIRE(A.rows() == A.cols(), "AMG: matrix is ", A.rows(), "x", A.cols(), ", not square");
  opt_ = amg::resolve_auto(A, o, &auto_choice_);  // once: update_values keeps the choice
  set_up(A, false);
  const amg::AdaptivePlan plan = amg::adaptive_plan(A, opt_, info_.levels[0].block_size,
                                                    info_.levels[0].lambda_estimate, info_.levels.size(), auto_choice_);
  info_.auto_choice = auto_choice_;
  if (plan.cycles > 0) adapt(A, plan, t0);
  info_.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {
/// amg::run_adaptive_cycles' operations on the host: X and R column-major (n × K).
template <class T>
struct HostAdaptOps {
  const CsrMatrix<T>& A;
  const HostAmg<T>& M;
  index_t n;
  int K;
  std::vector<T> X, R, rb, zb;
  T* col(std::vector<T>& V, int c) { return V.data() + std::size_t(c) * std::size_t(n); }
  void residual() {
    for (int c = 0; c < K; ++c) {
      A.multiply_host(col(X, c), col(R, c));
      for (index_t i = 0; i < n; ++i) col(R, c)[i] = -col(R, c)[i];
    }
  }
  std::vector<double> gram() {
    std::vector<double> G(std::size_t(K) * std::size_t(K));
    for (int a = 0; a < K; ++a)
      for (int b = 0; b < K; ++b) {
        double s = 0;
        for (index_t i = 0; i < n; ++i) s -= double(col(X, a)[i]) * double(col(R, b)[i]);
        G[std::size_t(b) * K + std::size_t(a)] = s;
      }
    return G;
  }
  void transform(const std::vector<double>& C) {
    for (std::vector<T>* V : {&X, &R})
      for (index_t i = 0; i < n; ++i) {
        double row[kAmgMaxNearNullspace];
        for (int a = 0; a < K; ++a) row[a] = double(col(*V, a)[i]);
        for (int b = 0; b < K; ++b) {
          double v = 0;
          for (int a = 0; a < K; ++a) v += row[a] * C[std::size_t(b) * K + std::size_t(a)];
          col(*V, b)[i] = T(v);
        }
      }
  }
  void correct() {  // the V-cycle on the K columns at once (row-major through rb, zb)
    for (index_t i = 0; i < n; ++i)
      for (int c = 0; c < K; ++c) rb[std::size_t(i) * K + std::size_t(c)] = col(R, c)[i];
    M.apply_block(K, rb.data(), K, zb.data(), K);
    for (index_t i = 0; i < n; ++i)
      for (int c = 0; c < K; ++c) col(X, c)[i] += zb[std::size_t(i) * K + std::size_t(c)];
  }
  std::vector<T> row_major() {
    std::vector<T> out(X.size());
    for (index_t i = 0; i < n; ++i)
      for (int c = 0; c < K; ++c) out[std::size_t(i) * K + std::size_t(c)] = col(X, c)[i];
    return out;
  }
};
}  // namespace

template <class T>
void HostAmg<T>::adapt(const CsrMatrix<T>& A, const amg::AdaptivePlan& plan,
                       std::chrono::steady_clock::time_point t0) {
  const index_t n = A.rows();
  const int K = plan.vectors;
  const std::vector<double> start = amg::adaptive_start_block(n, info_.levels[0].block_size, plan);
  HostAdaptOps<T> ops{A, *this, n, K, std::vector<T>(start.size()), std::vector<T>(start.size()),
                      std::vector<T>(start.size()), std::vector<T>(start.size())};
  for (index_t i = 0; i < n; ++i)  // row-major start, column-major X
    for (int c = 0; c < K; ++c) ops.col(ops.X, c)[i] = T(start[std::size_t(i) * K + std::size_t(c)]);
  const amg::AdaptOutcome out = amg::run_adaptive_cycles(ops, plan);
  auto_choice_.adapt_vectors = K;
  auto_choice_.adapt_factor = out.factor;
  // Where the first hierarchy is slow, its smoothers go to kAmgSlowDegree for a few more cycles,
  // and the second hierarchy is set up at that degree; a first hierarchy that comes back does so
  // at its own degree.
  std::vector<ChebyshevCoefficients> first_coef;
  const int first_degree = opt_.smoother_degree;
  if (amg::slow_augmenting(plan, out.keep, auto_choice_, info_.levels[0].block_size, out.factor, opt_)) {
    for (Level& L : levels_) {
      first_coef.push_back(L.coef);
      L.coef = amg::at_degree(L.coef, kAmgSlowDegree);
    }
    opt_.smoother_degree = kAmgSlowDegree;
    amg::AdaptivePlan more = plan;
    more.cycles = kAmgSlowCycles;
    more.conditional = false;
    auto_choice_.slow_cycles = amg::run_adaptive_cycles(ops, more).cycles;
  }
  AmgOptions adapted = opt_;
  const auto restore_degree = [&] {
    for (std::size_t l = 0; l < first_coef.size(); ++l) levels_[l].coef = first_coef[l];
    opt_.smoother_degree = first_degree;
    auto_choice_.slow_cycles = 0;
  };
  if (!out.keep || !amg::adopt_adapted_vectors(ops.row_major(), K, adapted)) {
    restore_degree();
    auto_choice_.adapt_discarded_cycles = out.cycles;
    info_.auto_choice = auto_choice_;
    return;
  }
  const AmgOptions first = opt_;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  opt_ = adapted;
  auto_choice_.adapted_cycles = out.cycles;
  // The first hierarchy is set aside whole (host memory holds both), so that it comes back as it
  // was, without a third set-up, where the second one is worse.
  std::vector<Level> first_levels = std::move(levels_);
  std::vector<Plan> first_plans = std::move(plans_);
  std::vector<double> first_chol = std::move(chol_), first_chol_work = std::move(chol_work_);
  const AmgInfo first_info = info_;
  const std::string first_stop_reason = before_stop_reason_;
  // The auto rule's set-up stops where its complexity passes the cap augmented_worse sets, which
  // it could then only exceed: bcsstk08's nearly dense level 1 needs no level 2 to be set aside.
  const double cap = plan.conditional ? kAmgAugmentMaxComplexityGrowth * first_info.operator_complexity
                                      : std::numeric_limits<double>::infinity();
  if (!set_up(A, false, cap) ||
      (plan.conditional && amg::augmented_worse(first_info.operator_complexity, first_info.stalled, info_))) {
    opt_ = first;
    levels_ = std::move(first_levels);
    plans_ = std::move(first_plans);
    chol_ = std::move(first_chol);
    chol_work_ = std::move(first_chol_work);
    restore_degree();
    before_stop_reason_ = first_stop_reason;
    before_stalled_ = first_info.stalled;
    auto_choice_.theta_retries = first_info.auto_choice.theta_retries;
    auto_choice_.adapted_cycles = 0;
    auto_choice_.adapt_discarded_cycles = out.cycles;
    info_ = first_info;
    info_.auto_choice = auto_choice_;
    return;
  }
  info_.adaptive_seconds = seconds;
}

template <class T>
bool HostAmg<T>::update_values(const CsrMatrix<T>& A) {
  KRYSP_REQUIRE(matches(A), "AMG: update_values needs the structure the hierarchy was set up for (",
                A.fingerprint().to_string(), " is not ", fingerprint_.to_string(), ")");
  const auto t0 = std::chrono::steady_clock::now();
  const AmgInfo before = info_;
  if (set_up(A, true)) {
    info_.setup_seconds = before.setup_seconds;
    info_.resetups = before.resetups + 1;
    info_.resetup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return true;
  }
  set_up(A, false);  // a coarse pattern changed: aggregate again
  info_.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

template <class T>
bool HostAmg<T>::set_up(const CsrMatrix<T>& A, bool reuse, double max_complexity) {
  const AmgOptions& o = opt_;
  // A numeric re-set-up refills the levels' vectors in place: fresh allocations (and their page
  // faults) cost as much as the arithmetic there.
  std::vector<Level> old;
  if (reuse) old = std::move(levels_);
  levels_.clear();
  chol_.clear();
  const double setup_seconds = info_.setup_seconds, resetup_seconds = info_.resetup_seconds;
  const double adaptive_seconds = info_.adaptive_seconds;
  const int resetups = info_.resetups;
  info_ = AmgInfo{};
  if (!reuse) auto_choice_.theta_retries = 0;  // counted again by the aggregation below
  info_.auto_choice = auto_choice_;
  info_.setup_seconds = setup_seconds;
  info_.adaptive_seconds = adaptive_seconds;
  info_.resetup_seconds = resetup_seconds;
  info_.resetups = resetups;
  if (!reuse) plans_.clear();
  const int b = amg::node_block_size(A, o);
  rp0_ = A.row_ptr();
  ci0_ = A.col_idx();
  va0_ = A.values();

  amg::Csr<double> Al = amg::to_csr(A);
  // The near-nullspace, K vectors: constant (b = 1), the unit vectors of each node's unknowns, the
  // rigid-body modes from the coordinates (centred, so the rotations are not dominated by the
  // translations far from the origin), or the vectors given.
  const int K = amg::near_nullspace_size(o, b);
  KRYSP_REQUIRE(o.filter != AmgFilter::On || K == 1, "AMG: amg.filter on needs one unknown per node and no "
                "coordinates (its lumping keeps a single near-nullspace vector); here b = ", b,
                o.coordinates.empty() ? "" : " with coordinates");
  std::vector<double> B = amg::explicit_near_nullspace(o, A.rows());
  if (B.empty()) {
    B.assign(std::size_t(A.rows()) * b, 0.0);
    for (index_t i = 0; i < A.rows(); ++i) B[std::size_t(i) * b + std::size_t(i % b)] = 1.0;
  }
  int bl = b;  // unknowns per node on the current level: b on A, K on the coarse levels

  for (std::size_t l = 0;; ++l) {
    const index_t n = Al.rows;
    const index_t above = l > 0 ? info_.levels[l - 1].rows : 0;
    // D⁻¹ and the Gershgorin bound of D⁻¹A; the diagonal must be positive on every level.
    std::vector<double> dinv(static_cast<std::size_t>(n)), dl1(static_cast<std::size_t>(n));
    double gershgorin = 0;
    for (index_t i = 0; i < n; ++i) {
      double d = 0, sum = 0;
      for (index_t k = Al.row_ptr[std::size_t(i)]; k < Al.row_ptr[std::size_t(i) + 1]; ++k) {
        if (Al.col_idx[std::size_t(k)] == i) d = Al.values[std::size_t(k)];
        sum += std::abs(Al.values[std::size_t(k)]);
      }
      if (!(std::isfinite(d) && d > 0)) {
        if (l == 0) throw_bad_diagonal("AMG", "AMG needs a positive diagonal", i, d);
        KRYSP_THROW(InputError, "AMG: diagonal entry ", i + 1, " of the level-", l, " coarse matrix is ", d,
                    " (not positive): A is not symmetric positive definite");
      }
      KRYSP_REQUIRE(std::isfinite(sum), "AMG: row ", i + 1, " of the level-", l, " matrix has entries that are NaN or Inf");
      dinv[std::size_t(i)] = 1.0 / d;
      dl1[std::size_t(i)] = 1.0 / sum;
      gershgorin = std::max(gershgorin, sum / d);
    }
    AmgLevelInfo li;
    li.rows = n;
    li.nnz = Al.nnz();
    li.block_size = bl;
    li.gershgorin = gershgorin;
    // A coarsest level that is factored needs no λ (no smoother, no prolongator): known here when
    // the coarse size or the level limit ends the hierarchy (a stall is found later, and runs it).
    const bool direct_last =
        n <= kAmgMaxDenseRows && (reuse ? l < plans_.size() && !plans_[l].next
                                        : amg::coarsest_by_size(o, l, n, above) || int(l) + 1 >= o.max_levels);
    LanczosResult lr;
    std::vector<float> ritz;
    if (!direct_last) {
      // A numeric re-set-up starts from the full set-up's Ritz vector (LevelLanczos).
      const bool warm = reuse && l < plans_.size();
      LevelLanczos lanczos(Al, dinv, warm ? &plans_[l].ritz : nullptr, warm ? plans_[l].ritz_lambda : 0.0, !reuse);
      lr = lanczos_largest(lanczos, n, kAmgLanczosMaxSteps, std::numeric_limits<double>::infinity(),
                           kAmgLanczosSettleTol);
      if (!reuse) ritz = lanczos.ritz_vector(std::min(lr.steps, kAmgLanczosRecordSteps));
    }
    li.lanczos_steps = lr.steps;
    KRYSP_REQUIRE(direct_last || (std::isfinite(lr.theta) && (n == 0 || lr.theta > 0)), "AMG: the estimate of lambda_max(D^-1 A) on level ",
                  l, " is ", lr.theta, ": A is not symmetric positive definite or has NaN/Inf entries");
    li.lambda_estimate = lr.theta;
    const double rho = std::min(lr.theta, gershgorin);  // ρ(D⁻¹A) for the prolongator weight

    // Does the hierarchy end here?
    bool last = false;
    if (!reuse) plans_.emplace_back();
    Plan& plan = plans_[l];
    if (!reuse) {
      plan.ritz = std::move(ritz);
      plan.ritz_lambda = lr.theta;
    }
    amg::Tentative& tent = plan.tent;
    if (reuse) {
      last = !plan.next;
      if (!last) li.aggregates = plan.tent.P.cols / K;
      li.isolated = plan.isolated;
      li.theta = last ? 0 : plan.theta;
      info_.stop_reason = before_stop_reason_;
      info_.stalled = before_stalled_;
    } else if (amg::coarsest_by_size(o, l, n, above)) {
      last = true;
      info_.stop_reason = amg::coarsest_by_size_reason(o, l, n, above);
    } else if (int(l) + 1 >= o.max_levels) {
      last = true;
      info_.stop_reason = detail::concat("max_levels (", o.max_levels, ") reached at ", n, " rows");
    } else {
      li.theta = o.theta * std::pow(kAmgThetaDecay, double(l));
      auto aggregate = [&] {
        const amg::Graph G = amg::strength_graph(Al, bl, li.theta);
        return o.aggregation == AmgAggregation::Mis2 ? amg::aggregate_mis2(G) : amg::aggregate(G);
      };
      amg::Aggregation agg = aggregate();
      if (amg::retry_aggregation(auto_choice_, n, agg.count * K)) {
        li.theta *= kAmgThetaRetry;
        ++auto_choice_.theta_retries;
        agg = aggregate();
      }
      plan.theta = li.theta;
      const index_t nc = agg.count * K;
      li.isolated = plan.isolated = agg.isolated;
      if (nc == 0 || double(n) < kStallRatio * double(nc)) {
        last = true;
        info_.stalled = true;
        info_.stop_reason = detail::concat("coarsening stalled at level ", l, ": ", n, " rows would become ", nc,
                                           " (shrinking by less than ", kStallRatio, "x)");
      } else {
        li.aggregates = agg.count;
        tent = amg::tentative_prolongator(agg, bl, K, B);
        if (o.filter == AmgFilter::On && o.prolongation_weight > 0) {
          plan.keep = amg::filter_entries(Al, li.theta);
          if (std::all_of(plan.keep.begin(), plan.keep.end(), [](std::uint8_t k) { return k != 0; }))
            plan.keep.clear();  // A_F = A
        }
      }
    }
    plan.next = !last;

    Level L = reuse && l < old.size() ? std::move(old[l]) : Level{};
    L.n = n;
    if (o.smoother == AmgSmoother::Chebyshev) {
      const double lmax = lr.converged ? std::min(kAmgLambdaBoost * lr.theta, gershgorin) : gershgorin;
      L.coef = chebyshev_coefficients(lmax / o.smoother_ratio, lmax, o.smoother_degree);
      L.dinv.assign(dinv.begin(), dinv.end());
    } else {
      L.dinv.assign(dl1.begin(), dl1.end());
    }
    L.block = 1;
    L.binv.clear();
    L.g.clear();
    std::vector<double> binv, linv;
    if ((!last || n > kAmgMaxDenseRows) && amg::node_block_smoothing(o, bl, n) &&
        amg::node_block_inverses(l, Al, bl, binv, linv)) {
      // Chebyshev in D_b⁻¹A on [λmax/ratio, λmax] of D_b⁻¹A: its own Lanczos (L⁻¹·A·L⁻ᵀ). Point
      // smoothing where it does not settle, or where the blocks are diagonal.
      const bool warm = reuse && !plan.block_ritz.empty();  // as the point Lanczos above
      LevelLanczos block_lanczos(Al, linv, bl, warm ? &plan.block_ritz : nullptr, warm ? plan.block_ritz_lambda : 0.0,
                                 !reuse);
      const LanczosResult br = lanczos_largest(block_lanczos, n, kAmgLanczosMaxSteps,
                                               std::numeric_limits<double>::infinity(), kAmgLanczosSettleTol);
      if (!reuse) {
        plan.block_ritz = block_lanczos.ritz_vector(std::min(br.steps, kAmgLanczosRecordSteps));
        plan.block_ritz_lambda = br.theta;
      }
      if (amg::node_block_interval(br, o, bl, li, L.coef)) {
        L.block = bl;
        L.binv.assign(binv.begin(), binv.end());
        L.g.assign(std::size_t(n), T(0));
      }
    }
    for (auto* v : {&L.r, &L.e, &L.u, &L.v, &L.w}) v->assign(std::size_t(n), T(0));
    if (l > 0) {  // level 0's right-hand side and solution are apply()'s r and z
      L.x.assign(std::size_t(n), T(0));
      L.b.assign(std::size_t(n), T(0));
    }

    amg::Csr<double> Ac;
    if (!last) {
      if (o.prolongation_weight > 0) {
        // S = I − ω·D⁻¹A, then P = S·P_tent.
        li.omega = o.prolongation_weight / rho;
        amg::Csr<double>& S = plan.S;  // A's (or A_F's) pattern, kept for a re-set-up
        const std::vector<double>* ds = &dinv;
        std::vector<double> dinv_f;
        if (!plan.keep.empty()) {  // S = I − ω·D_F⁻¹A_F, ω from ρ(D⁻¹A) as without the filter
          S = amg::filtered_matrix(Al, plan.keep, B, &li.filtered);
          dinv_f.resize(std::size_t(n));
          for (index_t i = 0; i < n; ++i)
            for (index_t k = S.row_ptr[std::size_t(i)]; k < S.row_ptr[std::size_t(i) + 1]; ++k)
              if (S.col_idx[std::size_t(k)] == i) dinv_f[std::size_t(i)] = 1.0 / S.values[std::size_t(k)];
          ds = &dinv_f;
        } else if (!reuse) {
          S = Al;
        } else {
          S.values.assign(Al.values.begin(), Al.values.end());
        }
        for (index_t i = 0; i < n; ++i)
          for (index_t k = S.row_ptr[std::size_t(i)]; k < S.row_ptr[std::size_t(i) + 1]; ++k) {
            double& v = S.values[std::size_t(k)];
            v = (S.col_idx[std::size_t(k)] == i ? 1.0 : 0.0) - li.omega * (*ds)[std::size_t(i)] * v;
          }
        if (!reuse) plan.P = amg::multiply(S, tent.P);
        else if (!amg::multiply_numeric(S, tent.P, plan.P)) return false;
      } else {
        plan.P = tent.P;
      }
      const amg::Csr<double>& P = plan.P;
      amg::Csr<double> R = amg::transpose(P);
      if (!reuse) {
        plan.AP = amg::multiply(Al, P);
        plan.Ac = amg::multiply(R, plan.AP);
      } else if (!amg::multiply_numeric(Al, P, plan.AP) || !amg::multiply_numeric(R, plan.AP, plan.Ac)) {
        return false;
      }
      Ac = amg::add(0.5, plan.Ac, 0.5, amg::transpose(plan.Ac));  // symmetric to rounding: now exactly
      Ac = amg::unit_diagonal_on_empty_rows(Ac);  // coarse unknowns an aggregate was too small for
      if (reuse && (Ac.row_ptr != plan.coarse.row_ptr || Ac.col_idx != plan.coarse.col_idx)) return false;
      if (!reuse) {  // the coarse pattern, to check a reuse against (values are not needed)
        plan.coarse.rows = Ac.rows;
        plan.coarse.cols = Ac.cols;
        plan.coarse.row_ptr = Ac.row_ptr;
        plan.coarse.col_idx = Ac.col_idx;
      }
      copy_into(L.P, P);
      copy_into(L.R, R);
    } else if (n <= kAmgMaxDenseRows) {
      chol_ = amg::coarse_cholesky(l, Al, &info_.coarse_pinned);  // dense Cholesky of the coarsest level
      chol_work_.assign(std::size_t(n), 0.0);
      info_.coarse_direct = true;
    } else {
      info_.coarse_direct = false;
    }
    if (l == 0) {
      L.rp = rp0_.data();
      L.ci = ci0_.data();
      L.va = va0_.data();
    } else {
      L.own = convert<T>(std::move(Al));
      L.rp = L.own.row_ptr.data();
      L.ci = L.own.col_idx.data();
      L.va = L.own.values.data();
    }
    levels_.push_back(std::move(L));
    info_.levels.push_back(li);
    if (last) break;
    if (!reuse && amg::complexity_with_next(info_.levels, Ac.nnz()) > max_complexity) return false;
    Al = std::move(Ac);
    B = tent.coarse_B;  // a re-set-up's filter lumps with it too
    bl = K;
  }
  // Moving a Level moves its vectors' buffers, so the pointers stay right; set them again from the
  // stored levels all the same, so that nothing depends on it.
  for (std::size_t l = 1; l < levels_.size(); ++l) {
    Level& L = levels_[l];
    L.rp = L.own.row_ptr.data();
    L.ci = L.own.col_idx.data();
    L.va = L.own.values.data();
  }
  double rows = 0;
  for (const auto& li : info_.levels) rows += double(li.rows);
  info_.operator_complexity = amg::complexity_with_next(info_.levels, 0);
  info_.grid_complexity = info_.levels[0].rows > 0 ? rows / double(info_.levels[0].rows) : 1.0;
  before_stop_reason_ = info_.stop_reason;
  before_stalled_ = info_.stalled;
  info_.auto_choice.theta_retries = auto_choice_.theta_retries;
  return true;
}

template <class T>
std::string HostAmg<T>::summary() const {
  std::ostringstream s;
  s << "amg(" << info_.levels.size() << " level" << (info_.levels.size() == 1 ? "" : "s") << ", rows ";
  for (std::size_t l = 0; l < info_.levels.size(); ++l) s << (l ? "/" : "") << info_.levels[l].rows;
  char buf[96];
  std::snprintf(buf, sizeof buf, ", operator complexity %.2f, grid complexity %.2f", info_.operator_complexity,
                info_.grid_complexity);
  s << buf << ", " << amg::describe_choice(opt_, auto_choice_) << amg::describe_block_smoother(info_);
  s << ", b " << info_.levels[0].block_size << ", coarsest " << info_.levels.back().rows << " rows by "
    << amg::describe_coarse_solve(info_);
  if (info_.stalled) s << "; " << info_.stop_reason;
  if (info_.resetups > 0) {
    std::snprintf(buf, sizeof buf, "; numeric re-set-up %.3g s, full set-up %.3g s", info_.resetup_seconds,
                  info_.setup_seconds);
    s << buf;
  }
  s << ")";
  return s.str();
}

template <class T>
std::vector<AmgLevelData<T>> HostAmg<T>::level_data() const {
  std::vector<AmgLevelData<T>> out;
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const Level& L = levels_[l];
    AmgLevelData<T> d;
    d.n = L.n;
    d.row_ptr = L.rp;
    d.col_idx = L.ci;
    d.values = L.va;
    d.nnz = L.rp ? L.rp[L.n] : 0;
    if (l + 1 < levels_.size()) {
      d.P = &L.P;
      d.R = &L.R;
    }
    d.dinv = &L.dinv;
    d.coef = &L.coef;
    d.smoother_block = L.block;
    if (L.block > 1) d.binv = &L.binv;
    out.push_back(d);
  }
  return out;
}

namespace {
/// Columns one pass over a matrix row serves (the sums stay on the stack).
constexpr index_t kHostAmgColumns = 16;

/// out(i, c0, nc, s) for every row i of M·X (N columns of X, row-major, leading dimension N) and
/// each chunk of columns c0 .. c0 + nc − 1: s[c] = Σ_k va[k]·x[ci[k]·N + c0 + c] over row i's
/// entries in order, so that column c gets the single-vector product's bits.
template <class T, class Out>
void for_row_sums(index_t rows, const index_t* rp, const index_t* ci, const T* va, index_t N, const T* x, Out out) {
  if (N == 1) {  // apply()'s path, as lean as a plain SpMV
    for (index_t i = 0; i < rows; ++i) {
      T t = 0;
      for (index_t k = rp[i]; k < rp[i + 1]; ++k) t += va[k] * x[ci[k]];
      out(i, index_t(0), index_t(1), &t);
    }
    return;
  }
  T s[kHostAmgColumns];
  for (index_t c0 = 0; c0 < N; c0 += kHostAmgColumns) {
    const index_t nc = std::min(kHostAmgColumns, N - c0);
    for (index_t i = 0; i < rows; ++i) {
      for (index_t c = 0; c < nc; ++c) s[c] = 0;
      for (index_t k = rp[i]; k < rp[i + 1]; ++k) {
        const T v = va[k];
        const T* xr = x + std::size_t(ci[k]) * std::size_t(N) + std::size_t(c0);
        for (index_t c = 0; c < nc; ++c) s[c] += v * xr[c];
      }
      out(i, c0, nc, s);
    }
  }
}

/// Entry (i, c) of a row-major block of N columns.
inline std::size_t at(index_t i, index_t N, index_t c) { return std::size_t(i) * std::size_t(N) + std::size_t(c); }
}  // namespace

template <class T>
void HostAmg<T>::multiply(const Level& L, index_t N, const T* x, T* y) const {
  for_row_sums(L.n, L.rp, L.ci, L.va, N, x, [&](index_t i, index_t c0, index_t nc, const T* s) {
    for (index_t c = 0; c < nc; ++c) y[at(i, N, c0 + c)] = s[c];
  });
}

template <class T>
void HostAmg<T>::residual(const Level& L, index_t N, const T* b, const T* x, T* r) const {
  for_row_sums(L.n, L.rp, L.ci, L.va, N, x, [&](index_t i, index_t c0, index_t nc, const T* s) {
    for (index_t c = 0; c < nc; ++c) r[at(i, N, c0 + c)] = b[at(i, N, c0 + c)] - s[c];
  });
}

template <class T>
void HostAmg<T>::node_solve(const Level& L, index_t N, const T* r, T* z) const {
  const index_t b = L.block;
  for (index_t I = 0; I < L.n / b; ++I) {
    const T* m = L.binv.data() + std::size_t(I) * std::size_t(b * b);
    for (index_t i = 0; i < b; ++i)
      for (index_t c = 0; c < N; ++c) {
        T s = 0;
        for (index_t j = 0; j < b; ++j) s += m[i * b + j] * r[at(I * b + j, N, c)];
        z[at(I * b + i, N, c)] = s;
      }
  }
}

template <class T>
void HostAmg<T>::smooth_correction(const Level& L, index_t N, const T* r, T* e) const {
  const std::size_t n = std::size_t(L.n), nN = n * std::size_t(N);
  const T* dinv = L.dinv.data();
  // body(q, d) for every entry q of the block, d its row's D⁻¹.
  auto entries = [&](auto body) {
    if (N == 1)
      for (std::size_t i = 0; i < n; ++i) body(i, dinv[i]);
    else
      for (std::size_t i = 0, q = 0; i < n; ++i)
        for (index_t c = 0; c < N; ++c, ++q) body(q, dinv[i]);
  };
  if (opt_.smoother == AmgSmoother::L1Jacobi) {
    entries([&](std::size_t q, T d) { e[q] = d * r[q]; });
    return;
  }
  // Chebyshev from a zero guess (as HostChebyshev): x_1 = c0·D⁻¹r,
  // x_{k+1} = x_k + c1·(x_k − x_{k−1}) + c2·D⁻¹(r − A·x_k); the last iterate goes to e. With node
  // blocks, D_b⁻¹ replaces D⁻¹: g = D_b⁻¹·(r − A·x_k) first.
  const bool blocks = L.block > 1;
  const int d = opt_.smoother_degree;
  const T c0 = T(L.coef.c0);
  T* cur = d == 1 ? e : L.u.data();
  T* g = L.g.data();
  if (blocks) {
    node_solve(L, N, r, g);
    for (std::size_t q = 0; q < nN; ++q) cur[q] = c0 * g[q];
  } else {
    entries([&](std::size_t q, T di) { cur[q] = c0 * di * r[q]; });
  }
  if (d == 1) return;
  T* spare = L.v.data();
  T* prev = nullptr;
  T* w = L.w.data();
  for (int k = 1; k < d; ++k) {
    multiply(L, N, cur, w);
    if (blocks) {
      for (std::size_t q = 0; q < nN; ++q) w[q] = r[q] - w[q];
      node_solve(L, N, w, g);
    }
    const T c1 = T(L.coef.c1[std::size_t(k - 1)]), c2 = T(L.coef.c2[std::size_t(k - 1)]);
    T* out = k == d - 1 ? e : (prev ? prev : spare);
    entries([&](std::size_t q, T di) {
      const T x = cur[q], xp = prev ? prev[q] : T(0);
      out[q] = x + c1 * (x - xp) + c2 * (blocks ? g[q] : di * (r[q] - w[q]));
    });
    prev = cur;
    cur = out;
  }
}

template <class T>
void HostAmg<T>::sweep(const Level& L, index_t N, const T* b, T* x) const {
  residual(L, N, b, x, L.r.data());
  smooth_correction(L, N, L.r.data(), L.e.data());
  for (std::size_t q = 0; q < std::size_t(L.n) * std::size_t(N); ++q) x[q] += L.e[q];
}

template <class T>
void HostAmg<T>::coarse_solve(const Level& L, index_t N, const T* b, T* x) const {
  const std::size_t n = std::size_t(L.n);
  if (!info_.coarse_direct) {  // smoothed: two sweeps from zero (symmetric, SPD; see amg.hpp)
    smooth_correction(L, N, b, x);
    sweep(L, N, b, x);
    return;
  }
  double* y = chol_work_.data();
  const double* Lf = chol_.data();
  for (index_t c = 0; c < N; ++c) {
    for (std::size_t i = 0; i < n; ++i) {  // L·y = b
      double s = double(b[at(index_t(i), N, c)]);
      const double* li = Lf + i * n;
      for (std::size_t k = 0; k < i; ++k) s -= li[k] * y[k];
      y[i] = s / li[i];
    }
    for (std::size_t i = n; i-- > 0;) {  // Lᵀ·x = y
      y[i] /= Lf[i * n + i];
      const double yi = y[i];
      const double* li = Lf + i * n;
      for (std::size_t k = 0; k < i; ++k) y[k] -= li[k] * yi;
    }
    for (std::size_t i = 0; i < n; ++i) x[at(index_t(i), N, c)] = T(y[i]);
  }
}

template <class T>
void HostAmg<T>::vcycle(std::size_t l, index_t N, const T* b, T* x) const {
  const Level& L = levels_[l];
  if (l + 1 == levels_.size()) {
    coarse_solve(L, N, b, x);
    return;
  }
  const Level& C = levels_[l + 1];
  // Pre-smoothing from x = 0: the first sweep is S·b.
  smooth_correction(L, N, b, x);
  for (int s = 1; s < opt_.sweeps; ++s) sweep(L, N, b, x);
  // Restrict the residual, recurse, prolong.
  residual(L, N, b, x, L.r.data());
  const auto& R = L.R;
  T* bc = C.b.data();
  for_row_sums(R.rows, R.row_ptr.data(), R.col_idx.data(), R.values.data(), N, L.r.data(),
               [&](index_t i, index_t c0, index_t nc, const T* s) {
                 for (index_t c = 0; c < nc; ++c) bc[at(i, N, c0 + c)] = s[c];
               });
  T* xc = C.x.data();
  vcycle(l + 1, N, bc, xc);
  const auto& P = L.P;
  for_row_sums(P.rows, P.row_ptr.data(), P.col_idx.data(), P.values.data(), N, xc,
               [&](index_t i, index_t c0, index_t nc, const T* s) {
                 for (index_t c = 0; c < nc; ++c) x[at(i, N, c0 + c)] += s[c];
               });
  // Post-smoothing: the same sweeps, so that M⁻¹ is symmetric.
  for (int s = 0; s < opt_.sweeps; ++s) sweep(L, N, b, x);
}

template <class T>
void HostAmg<T>::reserve_columns(index_t N) const {
  // Every level's arrays grow together, so level 0's residual tells the width they hold.
  if (levels_.empty() || levels_[0].r.size() >= std::size_t(levels_[0].n) * std::size_t(N)) return;
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const Level& L = levels_[l];
    const std::size_t size = std::size_t(L.n) * std::size_t(N);
    for (auto* v : {&L.r, &L.e, &L.u, &L.v, &L.w}) v->resize(size);
    if (L.block > 1) L.g.resize(size);
    if (l > 0) {
      L.x.resize(size);
      L.b.resize(size);
    }
  }
}

template <class T>
void HostAmg<T>::apply(const T* r, T* z) const {
  if (levels_.empty() || levels_[0].n == 0) return;
  vcycle(0, 1, r, z);
}

template <class T>
void HostAmg<T>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "AMG: apply_block with N = ", N, ", ldr = ", ldr, ", ldz = ", ldz);
  const index_t n = this->rows();
  if (N == 0 || n == 0 || levels_.empty()) return;
  reserve_columns(N);
  // The V-cycle on all N columns at once (packed, leading dimension N): one pass over each
  // matrix row serves every column, and each column gets the bits a single apply() gives it.
  const bool packed = ldr == N && ldz == N;
  const T* r = R;
  T* z = Z;
  if (!packed) {
    block_r_.resize(std::size_t(n) * std::size_t(N));
    block_z_.resize(std::size_t(n) * std::size_t(N));
    for (index_t i = 0; i < n; ++i)
      for (index_t c = 0; c < N; ++c) block_r_[at(i, N, c)] = R[at(i, ldr, c)];
    r = block_r_.data();
    z = block_z_.data();
  }
  vcycle(0, N, r, z);
  if (!packed)
    for (index_t i = 0; i < n; ++i)
      for (index_t c = 0; c < N; ++c) Z[at(i, ldz, c)] = block_z_[at(i, N, c)];
}

template class HostAmg<double>;
template class HostAmg<float>;

}  // namespace krysp
