#pragma once
/// \file inner_solve.hpp
/// An inner-solve preconditioner for LOBPCG: Z ≈ A⁻¹·R by a few PCG iterations on A·z = r per
/// column, from z = 0, preconditioned by the backend's own M (Jacobi, Chebyshev, ...). Written
/// once over LOBPCG's backend operations (lobpcg.hpp), so it runs on every backend.
///
/// Why: the smallest eigenpairs of an ill-conditioned A converge at a rate set by how well M⁻¹
/// approximates A⁻¹ on the low end of the spectrum. A fixed polynomial (Chebyshev) barely touches
/// it; m CG steps, which adapt to the spectrum, do. The result depends on R (CG is not linear in
/// its right-hand side), which LOBPCG tolerates: it only needs a direction that points at the
/// wanted eigenvectors (Knyazev 2001, §5).
///
/// Each step costs one SpMM, one application of M and two Gram matrices read back to the host
/// (their diagonals are the per-column dot products). A column whose step would break down
/// (pᵀAp ≤ 0, rᵀz ≤ 0, not finite) stops moving: the result is still the last good iterate.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/lobpcg_profiled_ops.hpp"

namespace krysp {

/// LOBPCG's operations of `Ops` with precondition() replaced by PCG steps on A.
template <class Ops>
class InnerSolveOps {
 public:
  using Block = typename Ops::Block;  ///< the blocks of Ops
  /// Wraps `ops` (which must outlive this); at most `iters` >= 1 PCG steps per application, fewer
  /// once every column's rᵀM⁻¹r has fallen by rtol².
  InnerSolveOps(Ops& ops, int iters, double rtol = 0) : o_(ops), iters_(iters), rtol2_(rtol * rtol) {
    KRYSP_REQUIRE(iters >= 1, "inner solve: ", iters, " iterations; at least 1 is needed");
  }

  index_t size() const { return o_.size(); }  ///< as Ops
  /// The problem's order over all ranks (Ops::global_size() where the ops are distributed).
  std::int64_t global_size() const { return lobpcg_detail::global_order(o_); }
  bool generalized() const { return o_.generalized(); }  ///< as Ops
  bool has_preconditioner() const { return true; }  ///< always: the inner solve
  Block block(std::size_t count) const { return o_.block(count); }  ///< as Ops
  template <class... A> void upload(A&&... a) { o_.upload(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void download(A&&... a) { o_.download(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void gram(A&&... a) { o_.gram(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void gram2(A&&... a) { o_.gram2(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void combine(A&&... a) { o_.combine(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void copy(A&&... a) { o_.copy(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void apply_a(A&&... a) { o_.apply_a(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void apply_b(A&&... a) { o_.apply_b(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void residuals(A&&... a) { o_.residuals(std::forward<A>(a)...); }  ///< as Ops
  template <class... A> void fill_random(A&&... a) { o_.fill_random(std::forward<A>(a)...); }  ///< as Ops

  /// Whether some step met pᵀA·p ≤ 0 for a direction p ≠ 0: A is not positive definite, so the
  /// inner CG (and a preconditioner built for an SPD A) cannot approximate A⁻¹.
  bool met_nonpositive_curvature() const { return nonpositive_curvature_; }

  /// Z = PCG_m(A, R): up to `iters` steps of PCG with the backend's M on each column, from zero.
  void precondition(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) {
    if (N == 0) return;
    reserve(N);
    double *r = r_.data(), *w = w_.data(), *p = p_.data(), *q = q_.data();
    std::vector<double> G(std::size_t(N) * N), D(std::size_t(N) * N, 0.0), rho(N), alpha(N);
    std::vector<char> live(N, 1);
    auto diagonal = [&](const std::vector<double>& c) {  // D = diag(c)
      for (index_t j = 0; j < N; ++j) D[cm(j, j, N)] = c[j];
    };
    auto finite_positive = [](double v) { return std::isfinite(v) && v > 0; };
    o_.copy(N, R, ldr, r, N);        // r = R
    o_.precondition(N, r, N, w, N);  // w = M⁻¹·r
    o_.gram(r, N, N, w, N, N, G.data());
    for (index_t j = 0; j < N; ++j) {
      rho[j] = G[cm(j, j, N)];                       // ρ_j = r_jᵀw_j
      live[j] = finite_positive(rho[j]);
    }
    const std::vector<double> rho0 = rho;
    o_.copy(N, w, N, p, N);  // p = w
    for (int it = 0; it < iters_; ++it) {
      o_.apply_a(N, p, N, q, N);            // q = A·p
      o_.gram(p, N, N, q, N, N, G.data());  // diag: p_jᵀA·p_j
      for (index_t j = 0; j < N; ++j) {
        const double pq = G[cm(j, j, N)];
        if (live[j] && std::isfinite(pq) && pq <= 0) nonpositive_curvature_ = true;
        live[j] = live[j] && finite_positive(pq);
        alpha[j] = live[j] ? rho[j] / pq : 0.0;
      }
      diagonal(alpha);
      o_.combine(p, N, N, D.data(), 1.0, it == 0 ? 0.0 : 1.0, Z, ldz, N);  // z += α·p (z = α·p first)
      if (it + 1 == iters_) break;
      o_.combine(q, N, N, D.data(), -1.0, 1.0, r, N, N);  // r −= α·q
      o_.precondition(N, r, N, w, N);                     // w = M⁻¹·r
      o_.gram(r, N, N, w, N, N, G.data());
      std::vector<double> beta(N, 0.0);
      for (index_t j = 0; j < N; ++j) {
        const double next = G[cm(j, j, N)];
        live[j] = live[j] && finite_positive(next);
        if (live[j]) beta[j] = next / rho[j];
        rho[j] = next;
      }
      diagonal(beta);
      o_.combine(p, N, N, D.data(), 1.0, 1.0, w, N, N);  // w = w + β·p: the next p
      std::swap(p, w);
      bool all_done = true;  // every column's rᵀM⁻¹r fell by rtol² (or it stopped moving)
      for (index_t j = 0; j < N; ++j) all_done = all_done && (!live[j] || rho[j] <= rtol2_ * rho0[j]);
      if (all_done) break;
    }
  }

 private:
  void reserve(index_t N) {
    const std::size_t need = std::size_t(size()) * N;
    if (width_ >= N) return;
    r_ = o_.block(need);
    w_ = o_.block(need);
    p_ = o_.block(need);
    q_ = o_.block(need);
    width_ = N;
  }
  Ops& o_;
  int iters_;
  double rtol2_;
  Block r_, w_, p_, q_;
  index_t width_ = 0;
  bool nonpositive_curvature_ = false;
};

}  // namespace krysp
