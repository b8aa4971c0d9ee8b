#pragma once
/// \file lobpcg.hpp
/// LOBPCG (Knyazev 2001) for the k extreme eigenpairs of A·x = λ·B·x (A symmetric, B SPD; B = I
/// for the standard problem), written once over a backend's operations (`Ops`, below).
///
/// Basis handling follows Hetmaniuk & Lehoucq (2006) and Duersch, Shao, Yang & Gu (2018):
///  - The Rayleigh–Ritz basis is S = [W | X | P] (b Ritz vectors X, a ≤ b new directions W,
///    p ≤ b conjugate directions P), kept B-orthonormal. Only W is orthonormalized explicitly:
///    W is B-projected off Y (constraints) and [X P] by classical Gram–Schmidt, repeated for the
///    columns that lost more than half their norm ("twice is enough"), then
///    orthonormalized by Cholesky QR, repeated until the Gram matrix it sees is within 1e-2 of I
///    (so typically twice: "CholQR2") — except that W stops after one pass whose scaled Gram
///    matrix had condition ≤ 1e6 (B-orthonormal to ~ε·1e6 then; Rayleigh–Ritz uses W's Gram
///    matrices as they are, so nothing depends on more). Without constraints the first pass
///    takes the projection coefficients and the Gram matrix in one wait, the latter as
///    VᵀBV − CᵀC (see ortho below). When the scaled Gram matrix has condition > 1e10, a
///    column is zero, or Cholesky fails, the pass uses SVQB instead and drops the directions
///    whose Gram eigenvalue is below 100·ε·a·θ_max (near-dependent); after an ill-conditioned
///    pass (cond > 1e8 or a drop) W is projected off [X P] again before the next pass.
///  - P is implicit (Duersch et al.): with C the GB-orthonormal Ritz coefficients of S, the first
///    b columns give X_new = S·C₁; for the active pairs J, the non-X components E of their Ritz
///    coefficients (the classical p_j) are projected onto the complement, F = C₂ᵀ·GB·E, and
///    P_new = S·C₂·orth(F). P_new is B-orthonormal and B-orthogonal to X_new by construction,
///    spans the classical conjugate directions of the active pairs, and costs no tall
///    orthogonalization. A·P, B·P follow by the same coefficients.
///  - Rayleigh–Ritz uses GA = SᵀAS and GB = SᵀBS, diagonally scaled, with dsygvd. Their W rows
///    are tall products (Wᵀ·A·S, Wᵀ·B·S) every step; their [X P] block is carried by the small
///    coefficients ([C₁ Z]ᵀ·GA·[C₁ Z]; after a refresh, the next step takes all of GA, GB from
///    tall products). Nothing assumes W orthonormal or B-orthogonal to [X P]: a slightly
///    non-orthonormal basis is still handled exactly. If the scaled GB has condition > 1e8 (or
///    dsygvd's Cholesky fails), P is dropped ("restart") and the step redone on [W X]; if that
///    is still ill-conditioned the basis is reduced by SVQB (dropping
///    dependent directions) and dsyevd solves the projected problem. A failed Cholesky never
///    ends the run; only a basis that cannot hold b B-orthonormal vectors does (B not SPD).
///  - Soft locking: a pair whose relative residual meets tol leaves W and P (it gets no new
///    direction) but stays in X and in every Rayleigh–Ritz step; it rejoins the active set if its
///    residual rises above tol again. Guard vectors (columns k..b−1) help the wanted ones converge
///    and are never required to converge.
///  - A·X and B·X are carried along by the same combinations as X (no SpMM for them). When all k
///    wanted pairs meet tol, A·X and B·X are recomputed by SpMM, X is projected off Y again and a
///    Rayleigh–Ritz step on X alone makes everything consistent; only if the pairs still meet tol
///    is the run converged. Reported residuals always come from such fresh products.
///
/// Convergence (per pair; LobpcgOptions::convergence, EigConvergence in lobpcg_result.hpp):
/// Relative (default) ‖A·x_i − λ_i·B·x_i‖₂ ≤ tol·|λ_i|·‖B·x_i‖₂; Absolute ‖r_i‖₂ ≤ tol; Norm
///     ‖A·x_i − λ_i·B·x_i‖₂ ≤ tol · (‖A‖ₑ + |λ_i|·‖B‖ₑ) · ‖x_i‖₂,
/// the normwise backward error of (λ_i, x_i) (Higham & Higham 1998) with the 2-norms replaced by
/// estimates that are lower bounds of them, so "converged" implies backward error ≤ tol:
///   ‖A‖ₑ = max( max_i |a_ii|, max_j |x_jᵀAx_j|/‖x_j‖² over every Ritz vector seen, and — for B = I —
///          max |θ| over every Rayleigh–Ritz value of the 3b-dimensional basis seen );
///   ‖B‖ₑ = 1 for B = I, else max( max_i b_ii, max_j 1/‖x_j‖² ) (x_jᵀBx_j = 1).
/// Both only grow during the run. The Norm test bounds λ's error by tol·‖A‖, so it accepts the
/// smallest pairs of an ill-conditioned A with no correct digit; Relative bounds it by tol·|λ|.
/// Relative and Norm are scale-invariant: multiplying A (or B) by a constant changes nothing.
/// Meeting any of them says a pair is an eigenpair, not that it is among the k extreme ones:
/// eigensolve() checks that separately (eigensolve.hpp).
///
/// Layout: S, A·S, B·S are n × L row-major blocks (ld L); X starts at column oX (even, so the
/// SpMM kernels can use vector loads on X), W ends at oX (it is right-aligned, a ≤ b columns),
/// P follows X: the basis [W X P] is contiguous, so each Gram matrix is one gram() and the new
/// [X P] one combine(). Two copies of each (ping-pong) because combine() must not write its input.
///
/// Ops (pointers to host or device memory; blocks row-major with a leading dimension):
///   using Block (owning, .data()); Block block(count); size(); generalized(); has_preconditioner();
///   optional: global_size()  the problem's order when size() is one rank's rows (distributed ops,
///        whose gram() and residuals() sum over the ranks); default size(). The block-size checks
///        (3b + constraints ≤ n) and the default iteration cap use it.
///   upload(host, dst, count); download(src, host, count);
///   gram(X, ldx, bx, Y, ldy, by, C)                 C (bx × by, host, column-major) = Xᵀ·Y
///   gram2(X, ldx, bx, Y1, ldy1, Y2, ldy2, by, C1, C2) C1 = Xᵀ·Y1, C2 = Xᵀ·Y2 (one wait on a GPU)
///   optional: gram_pair(X1, ldx1, bx1, Y1, ldy1, by1, C1, X2, ldx2, bx2, Y2, ldy2, by2, C2)
///        C1 = X1ᵀ·Y1, C2 = X2ᵀ·Y2 with one wait (else two gram() calls are made)
///   combine(X, ldx, bx, C, alpha, beta, Y, ldy, by) Y = alpha·X·C + beta·Y (Y must not alias X)
///   copy(cols, X, ldx, Y, ldy)                      Y = X
///   apply_a(N, X, ldx, Y, ldy), apply_b(...)        Y = A·X, Y = B·X (SpMM)
///   precondition(N, R, ldr, Z, ldz)                 Z = M⁻¹·R
///   residuals(b, AX, ldax, BX, ldbx, X, ldx, λ, dest, R, ldr, rr, xx)
///        r_j = AX_j − λ_j·BX_j; rr_j = ‖r_j‖², xx_j = ‖X_j‖² (host arrays of b);
///        column j of R is r_j's destination dest[j] (−1: not written). BX == X when B = I.
///   fill_random(cols, X, ldx, seed, first_col)      X(i, j) = random_block_entry(seed, i, first_col + j)
///
/// Code: the class lobpcg_detail::Lobpcg below holds a run's state (the blocks, λ, residual norms,
/// ‖A‖ₑ, ‖B‖ₑ, P's width, the [X P] Gram blocks) and has one method per step; lobpcg() runs it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "krysp/base/phase_profile.hpp"
#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/lobpcg_profiled_ops.hpp"
#include "krysp/solvers/lobpcg_result.hpp"
#include "krysp/solvers/lobpcg_small.hpp"
#include "krysp/solvers/lobpcg_start.hpp"
#include "krysp/solvers/small_dense.hpp"

namespace krysp {

namespace lobpcg_detail {

/// A pair whose measure is within this factor of its rounding floor counts as at the floor
/// (Lobpcg::far_above_floor): there only the residuals decide stagnation.
inline constexpr double kFloorMargin = 100;
/// The relative move of the wanted Ritz values' sum that counts as progress far above the floor
/// (Lobpcg::ritz_progress).
inline constexpr double kRitzProgress = 1e-3;

/// One LOBPCG run over `Ops` (the operations listed in the file comment): construct, then run()
/// once. The steps, in the order run() takes them:
///   allocate → constrain → start → repeat { evaluate_residuals, update_norm_estimates,
///   check_convergence (→ refresh_x when all pairs meet tol on carried products), stagnated,
///   expand, rayleigh_ritz_step, update_basis } → finish.
template <class Ops>
class Lobpcg {
 public:
  /// Checks the options against the problem (InputError, lobpcg_block_size); allocates nothing yet.
  Lobpcg(Ops& backend_ops, const LobpcgOptions& opt, const LobpcgStart& st);
  /// Runs LOBPCG to its end. Non-convergence and breakdown are statuses in the result.
  EigResult run();

 private:
  using Block = typename Ops::Block;
  using Clock = std::chrono::steady_clock;

  /// The pieces of one Rayleigh–Ritz step on [W X P] that the basis update needs.
  struct Projection {
    index_t m = 0;                 ///< columns of the basis (aw + b + p; P dropped by a restart)
    std::vector<double> GA, GB;    ///< SᵀAS, SᵀBS (m × m)
    RitzStep ritz;                 ///< the Ritz values and coefficients
  };
  /// What one convergence check found.
  struct Check {
    index_t converged = 0;   ///< wanted pairs meeting tol
    double worst = 0;        ///< the largest measure among the wanted pairs
  };

  // The steps (each documented at its definition below). Those returning bool or a width end
  // the run on false / 0, with res_.status saying why.
  void allocate();            // the blocks S, A·S, B·S (two copies each) and the scratch T, B·T
  bool constrain();           // Y ← B-orthonormal basis of the constraints, B·Y
  bool start();               // X ← x0 and random columns, B-orthonormal, off Y; refresh_x
  // V −= Q·(B·Q)ᵀ·V; one Gram–Schmidt pass off Y and [X P]; B-orthonormalize off Y and [X P]
  // (CholQR2, SVQB where ill-conditioned).
  void project(double* V, index_t ldv, index_t a, double* BV, const double* Q, const double* BQ, index_t ldq,
               index_t q, double* removed);
  void project_out(double* V, index_t ldv, index_t a, double* BV, index_t q, double* removed);
  template <class Dest>
  index_t ortho(double* const* buf, double* const* bbuf, int v, index_t ld, index_t a, index_t q, Dest dest,
                bool one_pass = false);
  OrthoCoefficients coefficients(index_t a, const std::vector<double>& G, double scale);  // timed
  bool refresh_x();           // fresh A·X, B·X and Rayleigh–Ritz on X alone
  void iterate();             // the loop, until converged, stagnated, out of iterations or broken down
  void evaluate_residuals();  // R, ‖r‖², ‖x‖², ‖B·x‖² of all b pairs
  bool update_norm_estimates();  // ‖A‖ₑ, ‖B‖ₑ from the current pairs; false if not finite
  double measure(index_t j) const;  // the convergence measure of pair j
  /// After ortho() returned r: true, with the status set, when it met non-finite values (r < 0)
  /// or a B-inner product that is not definite.
  bool ortho_failed(index_t r) {
    if (r < 0) res_.status = EigStatus::NonFinite;
    else if (saw_indefinite_) res_.status = EigStatus::NotPositiveDefinite;
    return r < 0 || saw_indefinite_;
  }
  Check check_convergence();  // measures, history, progress
  bool stagnated(const Check& check);  // no progress for max(kStagnationWindow, i) iterations
  bool far_above_floor() const;  // an unconverged wanted pair is far above its rounding floor
  bool ritz_progress();       // the wanted Ritz values moved clearly toward the wanted end
  index_t expand();           // W = M⁻¹·R of the active pairs, B-orthonormal, off Y and [X P]
  bool rayleigh_ritz_step(index_t aw, Projection& pr);  // on [W X P], dropping P when ill-conditioned
  void update_basis(index_t aw, const Projection& pr);  // [X P] ← S·[C₁ | C₂·orth(F)] (implicit P)
  void finish();              // results from fresh products

  double* X() const { return Sb_[cur_] + oX_; }
  double* AX() const { return ASb_[cur_] + oX_; }
  double* BX() const { return BSb_[cur_] + oX_; }
  double* Y() { return Y_.data(); }
  double* BY() { return gen_ ? BY_.data() : Y_.data(); }  ///< B·Y (Y itself when B = I)
  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  // ---- the problem ----
  PhaseProfile* const prof_;
  ProfiledOps<Ops> ops_;
  const LobpcgOptions& opt_;
  const LobpcgStart& st_;
  const index_t n_;            ///< rows of the blocks (this rank's rows when distributed)
  /// The problem's order: Ops::global_size() where the backend has it (distributed: all ranks'
  /// rows), else size(). The block size and the iteration cap are taken from it, so every rank
  /// of a distributed run makes the same choices.
  const std::int64_t ng_;
  const index_t k_, cin_;      ///< wanted pairs, constraint columns given
  const index_t b_;            ///< block size
  const bool gen_, largest_;   ///< B ≠ I; the largest pairs are wanted
  const index_t max_iters_;
  const SmallTolerances& tols_;

  // ---- storage (layout in the file comment) ----
  const index_t oX_;           ///< X at [oX, oX+b), W right-aligned ending at oX
  const index_t L_;            ///< P at [oX+b, oX+b+p); ld of the basis blocks
  const std::size_t nn_;
  const index_t wsc_;          ///< scratch width (W, X0, and the constraint block)
  Block S_[2], AS_[2], T_[2], BS_[2], BT_[2], Y_, BY_;  ///< two copies of S, A·S, B·S, scratch T, B·T
  double* Sb_[2] = {};
  double* ASb_[2] = {};
  double* BSb_[2] = {};        ///< = Sb_ when B = I
  double* Tb_[2] = {};
  double* BTb_[2] = {};        ///< = Tb_ when B = I
  int cur_ = 0;                ///< which copy of S holds the current basis

  // ---- the state of the run ----
  index_t c_ = 0;              ///< constraint rank
  const index_t ldy_;          ///< ld of Y
  index_t p_ = 0;              ///< columns of P
  /// [X P]ᵀ·A·[X P] and [X P]ᵀ·B·[X P] ((b+p) × (b+p)): carried by the small coefficients from one
  /// Rayleigh–Ritz step to the next, so that only the W rows of the Gram matrices need tall products.
  std::vector<double> GXA_, GXB_;
  /// GXA, GXB are not known: the next Rayleigh–Ritz step takes them from tall products.
  bool gx_stale_ = false;
  std::vector<double> lambda_, rr_, xx_, bxx_, rel_;  ///< λ, ‖r‖², ‖x‖², ‖B·x‖², convergence measures
  double anorm_, bnorm_;       ///< ‖A‖ₑ, ‖B‖ₑ (file comment)
  bool saw_indefinite_ = false;  ///< a B-Gram matrix was clearly indefinite
  bool nonfinite_ = false;       ///< refresh_x failed on non-finite values
  std::vector<index_t> dest_all_, active_;  ///< 0..b−1; the pairs not converged (they get W)
  // The stagnation clock (stagnated()): the last progress, and what each kind was measured from.
  double best_res_ = std::numeric_limits<double>::infinity();  ///< the worst wanted residual's last halving
  index_t best_conv_ = 0;      ///< the most wanted pairs that met tol at once
  double ritz_ref_ = std::numeric_limits<double>::quiet_NaN();  ///< Σ wanted Ritz values at their last progress
  index_t best_it_ = 0;        ///< the iteration of the last progress
  bool fresh_ = true;          ///< A·X, B·X were computed by SpMM for the current X
  bool recheck_ = false;       ///< this residual evaluation follows a refresh in the same iteration
  index_t it_ = 0;
  Clock::time_point t0_;       ///< the start of the iteration (setup excluded)
  EigResult res_;
};

template <class Ops>
Lobpcg<Ops>::Lobpcg(Ops& backend_ops, const LobpcgOptions& opt, const LobpcgStart& st)
    : prof_(st.profile),
      ops_{backend_ops, st.profile},
      opt_(opt),
      st_(st),
      n_(ops_.size()),
      ng_(global_order(backend_ops)),
      k_(opt.k),
      cin_(st.constraint_cols),
      b_(lobpcg_block_size(opt, ng_, st.x0_cols, cin_)),
      gen_(ops_.generalized()),
      largest_(opt.which == EigWhich::Largest),
      max_iters_(opt.max_iters > 0 ? opt.max_iters
                                   : default_max_iters(index_t(std::min<std::int64_t>(ng_, kMaxIndex)))),
      tols_(opt.basis),
      oX_(b_ + (b_ & 1)),
      L_((oX_ + 2 * b_ + 1) / 2 * 2),
      nn_(static_cast<std::size_t>(n_)),
      wsc_(std::max(b_, cin_)),
      ldy_(std::max<index_t>(cin_, 1)),
      lambda_(b_, 0.0),
      rr_(b_),
      xx_(b_),
      bxx_(b_),
      rel_(b_),
      anorm_(std::max(0.0, st.a_norm_floor)),
      bnorm_(gen_ ? std::max(1e-300, st.b_norm_floor) : 1.0) {
  res_.k = k_;
  res_.n = n_;
  res_.block_size = b_;
}

template <class Ops>
EigResult Lobpcg<Ops>::run() {
  allocate();
  if (!constrain() || !start()) return std::move(res_);
  iterate();
  finish();
  return std::move(res_);
}

// ---- setup ------------------------------------------------------------------------------------

/// The blocks S, A·S (B·S when B ≠ I) in two copies each, and the scratch T (B·T).
template <class Ops>
void Lobpcg<Ops>::allocate() {
  {
    auto ph = phase(prof_, "lobpcg: allocate blocks");
    S_[0] = ops_.block(nn_ * L_);
    S_[1] = ops_.block(nn_ * L_);
    AS_[0] = ops_.block(nn_ * L_);
    AS_[1] = ops_.block(nn_ * L_);
    T_[0] = ops_.block(nn_ * wsc_);
    T_[1] = ops_.block(nn_ * wsc_);
    if (gen_) {
      BS_[0] = ops_.block(nn_ * L_);
      BS_[1] = ops_.block(nn_ * L_);
      BT_[0] = ops_.block(nn_ * wsc_);
      BT_[1] = ops_.block(nn_ * wsc_);
    }
  }
  for (int i = 0; i < 2; ++i) {
    Sb_[i] = S_[i].data();
    ASb_[i] = AS_[i].data();
    BSb_[i] = gen_ ? BS_[i].data() : S_[i].data();  // B·S = S when B = I
    Tb_[i] = T_[i].data();
    BTb_[i] = gen_ ? BT_[i].data() : T_[i].data();
  }
}

/// Y ← a B-orthonormal basis of the given constraint columns, and B·Y. False when the run ends
/// here (res_.status says why).
template <class Ops>
bool Lobpcg<Ops>::constrain() {
  if (cin_ > 0) {
    auto ph = phase(prof_, "lobpcg init: constraints");
    Y_ = ops_.block(nn_ * ldy_);
    if (gen_) BY_ = ops_.block(nn_ * ldy_);
    ops_.upload(st_.constraints, Tb_[0], nn_ * cin_);
    if (gen_) ops_.apply_b(cin_, Tb_[0], cin_, BTb_[0], cin_);
    const index_t r = ortho(Tb_, BTb_, 0, cin_, cin_, 0,
                            [&](index_t) { return std::pair<double*, index_t>(Y(), ldy_); });
    if (ortho_failed(r)) return false;
    c_ = r;
    if (gen_ && c_ > 0) ops_.apply_b(c_, Y(), ldy_, BY_.data(), ldy_);
  }
  res_.constraints = c_;
  return true;
}

/// The starting block: the x0 columns, then random ones; B-orthonormal, off Y, refilled where it
/// is rank-deficient; then Rayleigh–Ritz on it (refresh_x). False when the run ends here.
template <class Ops>
bool Lobpcg<Ops>::start() {
  auto ph = phase(prof_, "lobpcg init: starting block + refresh");
  const index_t g = st_.x0_cols;
  // A random block (no x0, no constraints, B = I) is well conditioned (scaled Gram condition
  // ≈ ((1 + √(b/n)) / (1 − √(b/n)))² ≤ 14 for n ≥ 3b): Rayleigh–Ritz on it (refresh_x, dsygvd
  // on its Gram matrices) B-orthonormalises it as well, with the same Ritz pairs as an
  // orthonormalised copy of the same span would give, and without Cholesky QR's two waits.
  // Should that fail, the general path below starts again.
  bool started = false;
  if (g == 0 && c_ == 0 && !gen_) {
    ops_.fill_random(b_, X(), L_, opt_.seed, 0);
    started = refresh_x();
    if (!started && nonfinite_) {
      res_.status = EigStatus::NonFinite;
      return false;
    }
  }
  if (!started) {
    if (g > 0) {
      ops_.upload(st_.x0, Tb_[1], nn_ * g);
      ops_.copy(g, Tb_[1], g, Tb_[0], b_);
    }
    if (g < b_) ops_.fill_random(b_ - g, Tb_[0] + g, b_, opt_.seed, g);
    index_t have = 0;
    for (int attempt = 0; have < b_ && attempt < 6; ++attempt) {
      const index_t want = b_ - have;
      if (attempt > 0) ops_.fill_random(want, Tb_[0], b_, opt_.seed + 7919 * attempt, b_ + have);
      if (gen_) ops_.apply_b(want, Tb_[0], b_, BTb_[0], b_);
      const index_t r = ortho(Tb_, BTb_, 0, b_, want, have,
                              [&](index_t) { return std::pair<double*, index_t>(X() + have, L_); });
      if (ortho_failed(r)) return false;
      if (gen_ && r > 0) ops_.apply_b(r, X() + have, L_, BX() + have, L_);  // B·X for the next projection
      have += r;
    }
    if (have < b_) {
      res_.status = EigStatus::NotPositiveDefinite;
      return false;
    }
    if (!refresh_x()) {
      res_.status = nonfinite_ ? EigStatus::NonFinite : EigStatus::NotPositiveDefinite;
      return false;
    }
  }
  res_.refreshes = 0;
  return true;
}

// ---- orthogonalization ------------------------------------------------------------------------

/// V −= Q·((B·Q)ᵀ·V), and B·V −= B·Q·(same) when BV is tracked. With Q B-orthonormal, column j
/// loses a component of B-norm² Σ_i C_ij², added to removed[j] when given.
template <class Ops>
void Lobpcg<Ops>::project(double* V, index_t ldv, index_t a, double* BV, const double* Q, const double* BQ,
                          index_t ldq, index_t q, double* removed) {
  if (a == 0 || q == 0) return;
  std::vector<double> C(static_cast<std::size_t>(q) * a);
  ops_.gram(BQ, ldq, q, V, ldv, a, C.data());
  ops_.combine(Q, ldq, q, C.data(), -1.0, 1.0, V, ldv, a);
  if (BV) ops_.combine(BQ, ldq, q, C.data(), -1.0, 1.0, BV, ldv, a);
  if (removed)
    for (index_t j = 0; j < a; ++j)
      for (index_t i = 0; i < q; ++i) removed[j] += C[cm(i, j, q)] * C[cm(i, j, q)];
}

/// One classical Gram–Schmidt pass off the constraints Y and the first q columns of [X P].
template <class Ops>
void Lobpcg<Ops>::project_out(double* V, index_t ldv, index_t a, double* BV, index_t q, double* removed) {
  if (c_ > 0) project(V, ldv, a, BV, Y(), BY(), ldy_, c_, removed);
  if (q > 0) project(V, ldv, a, BV, X(), BX(), L_, q, removed);
}

/// B-orthonormalizes the a columns of V = buf[v] (ld `ld`; with B·V in bbuf[v] when B ≠ I),
/// after projecting them off Y and the first q columns of [X P]. The result (rank columns) is
/// written where dest(rank) says (its B-image is NOT written: the caller recomputes it).
/// Returns rank, or −1 when non-finite values appeared.
///
/// Projection is classical Gram–Schmidt, repeated when needed ("twice is enough", Kahan and
/// Parlett): a column that kept less than half its B-norm² after the first pass may carry
/// rounding errors of relative size ε·‖before‖/‖after‖ along Y and [X P]; it is projected again.
/// The B-norms before projection are ‖after‖² + Σ C² (Pythagoras), so this costs nothing.
///
/// Without constraints, the first pass takes C = (B·Q)ᵀ·V and Vᵀ·B·V in one wait (gram_pair) and
/// the Gram matrix after the projection as Vᵀ·B·V − CᵀC (Q = [X P] B-orthonormal), saving a
/// wait per call. That is accurate to a few ε relative where each column kept at least half its
/// B-norm² (the "again" test below, which otherwise falls back to projecting again and a fresh
/// Gram matrix); it only ever steers a first Cholesky QR pass that is followed by another one
/// from a fresh Gram matrix; an ill-conditioned or rank-deficient verdict is re-taken from a fresh one.
///
/// `one_pass` (the new directions W of an iteration, which Rayleigh–Ritz takes exactly as they
/// are): a Cholesky QR pass on a well-conditioned block (scaled Gram condition ≤ 1e6, so the
/// result is B-orthonormal to ~ε·1e6) is the last one, without a Gram matrix to confirm it.
template <class Ops>
template <class Dest>
index_t Lobpcg<Ops>::ortho(double* const* buf, double* const* bbuf, int v, index_t ld, index_t a, index_t q,
                           Dest dest, bool one_pass) {
  bool need_project = true;
  for (int pass = 0;; ++pass) {
    double* V = buf[v];
    double* BV = gen_ ? bbuf[v] : nullptr;
    std::vector<double> removed(a, 0.0), G(static_cast<std::size_t>(a) * a);
    bool derived = false;  // G = Vᵀ·B·V − CᵀC, not a fresh product
    if (need_project && c_ == 0 && q > 0) {
      std::vector<double> C(static_cast<std::size_t>(q) * a);
      ops_.gram_pair(BX(), L_, q, V, ld, a, C.data(), V, ld, a, gen_ ? BV : V, ld, a, G.data());
      ops_.combine(X(), L_, q, C.data(), -1.0, 1.0, V, ld, a);
      if (BV) ops_.combine(BX(), L_, q, C.data(), -1.0, 1.0, BV, ld, a);
      const std::vector<double> CC = dense::at_b(q, a, a, C, C);
      for (std::size_t e = 0; e < G.size(); ++e) G[e] -= CC[e];
      for (index_t j = 0; j < a; ++j)
        for (index_t i = 0; i < q; ++i) removed[j] += C[cm(i, j, q)] * C[cm(i, j, q)];
      derived = true;
    } else {
      if (need_project) project_out(V, ld, a, BV, q, removed.data());
      ops_.gram(V, ld, a, gen_ ? BV : V, ld, a, G.data());
    }
    double scale = 0;  // the largest B-norm² a column had before projection
    if (need_project && (c_ > 0 || q > 0)) {
      bool again = false;
      for (index_t j = 0; j < a; ++j) {
        const double after = G[cm(j, j, a)], before = after + removed[j];
        scale = std::max(scale, before);
        again |= !(after >= 0.5 * before);  // also when NaN
      }
      if (again) {
        project_out(V, ld, a, BV, q, nullptr);
        ops_.gram(V, ld, a, gen_ ? BV : V, ld, a, G.data());
        derived = false;
      }
    }
    OrthoCoefficients oc = coefficients(a, G, scale);
    if (derived && (!oc.finite || oc.used_svqb || oc.rank < a || oc.cond > 1e8)) {
      ops_.gram(V, ld, a, gen_ ? BV : V, ld, a, G.data());  // decide that from a fresh Gram matrix
      oc = coefficients(a, G, scale);
      derived = false;
    }
    if (!oc.finite) return -1;
    if (gen_ && oc.indefinite) saw_indefinite_ = true;
    if (oc.used_svqb) ++res_.svqb_passes;
    res_.dropped_directions += a - oc.rank;
    if (oc.rank == 0) return 0;
    // A pass whose input was already within 1e-2 of orthonormal leaves it orthonormal to
    // working precision (Cholesky QR's error is ε·cond², cond ≤ 1.03 here).
    const bool enough = one_pass && !oc.used_svqb && oc.rank == a && oc.cond <= 1e6;
    if ((oc.deviation <= 1e-2 && !derived) || enough || pass == 3) {
      const auto [W, ldw] = dest(oc.rank);
      ops_.combine(V, ld, a, oc.K.data(), 1.0, 0.0, W, ldw, oc.rank);
      return oc.rank;
    }
    ops_.combine(V, ld, a, oc.K.data(), 1.0, 0.0, buf[1 - v], ld, oc.rank);
    if (gen_) ops_.combine(BV, ld, a, oc.K.data(), 1.0, 0.0, bbuf[1 - v], ld, oc.rank);
    // An ill-conditioned pass magnifies what was left of V along [X P] and Y: project again.
    need_project = oc.cond > 1e8 || oc.rank < a;
    v = 1 - v;
    a = oc.rank;
  }
}

/// ortho_coefficients (lobpcg_small.hpp) of the Gram matrix G, timed as host work.
template <class Ops>
OrthoCoefficients Lobpcg<Ops>::coefficients(index_t a, const std::vector<double>& G, double scale) {
  auto ph = phase(prof_, "host: ortho coefficients (LAPACK)");
  return ortho_coefficients(a, G, tols_, scale);
}

/// Rayleigh–Ritz on X alone from fresh A·X, B·X (X projected off Y first): X, AX, BX, λ
/// consistent again. False when X has lost rank (B not SPD) or values are not finite.
template <class Ops>
bool Lobpcg<Ops>::refresh_x() {
  auto ph = phase(prof_, "lobpcg: refresh X (spmm + rayleigh-ritz on X)");
  if (c_ > 0) project(X(), L_, b_, nullptr, Y(), BY(), ldy_, c_, nullptr);
  ops_.apply_a(b_, X(), L_, AX(), L_);
  if (gen_) ops_.apply_b(b_, X(), L_, BX(), L_);
  std::vector<double> GA(static_cast<std::size_t>(b_) * b_), GB(static_cast<std::size_t>(b_) * b_);
  ops_.gram2(X(), L_, b_, AX(), L_, BX(), L_, b_, GA.data(), GB.data());
  const RitzStep rs = [&] {
    auto ph2 = phase(prof_, "host: rayleigh-ritz (LAPACK)");
    return rayleigh_ritz(b_, GA, GB, largest_, b_, true, tols_);
  }();
  if (!rs.ok) {
    for (double e : GA) nonfinite_ |= !std::isfinite(e);
    for (double e : GB) nonfinite_ |= !std::isfinite(e);
    saw_indefinite_ |= gen_ && rs.indefinite;
    return false;
  }
  // X ← X·C, AX ← AX·C, BX ← BX·C into the other copy of the blocks (P copied along when
  // there is one), which then becomes the current one: no copy back.
  const int nxt = 1 - cur_;
  for (int blk = 0; blk < (gen_ ? 3 : 2); ++blk) {
    double* const* buf = blk == 0 ? Sb_ : blk == 1 ? ASb_ : BSb_;
    ops_.combine(buf[cur_] + oX_, L_, b_, rs.C.data(), 1.0, 0.0, buf[nxt] + oX_, L_, b_);
    if (p_ > 0) ops_.copy(p_, buf[cur_] + oX_ + b_, L_, buf[nxt] + oX_ + b_, L_);
  }
  cur_ = nxt;
  std::copy(rs.theta.begin(), rs.theta.begin() + b_, lambda_.begin());
  // The [X P] blocks of the next Rayleigh–Ritz step come from fresh products: that step takes
  // the whole [W X P] Gram matrices by tall products (the same single wait), and a run that
  // ends here never needs them.
  gx_stale_ = true;
  ++res_.refreshes;
  return true;
}

// ---- one iteration ----------------------------------------------------------------------------

/// The loop: check the pairs; stop when converged (on fresh products), stagnated, out of
/// iterations or broken down; else one step on [W X P]. Ends with res_.status set.
template <class Ops>
void Lobpcg<Ops>::iterate() {
  t0_ = Clock::now();
  dest_all_.resize(b_);
  for (index_t j = 0; j < b_; ++j) dest_all_[j] = j;
  res_.status = EigStatus::MaxIterations;
  std::optional<PhaseProfile::Scope> check_phase;
  for (;;) {
    auto iteration_phase = phase(prof_, "iteration (loop pass, total)");
    check_phase.emplace(prof_, "iter: residuals + convergence check");
    evaluate_residuals();  // R of all b Ritz pairs in T0 (ld b), rr, xx
    if (!update_norm_estimates()) {
      res_.status = EigStatus::NonFinite;
      break;
    }
    const Check check = check_convergence();
    check_phase.reset();
    if (!std::isnan(st_.stop_beyond) && (largest_ ? lambda_[0] > st_.stop_beyond : lambda_[0] < st_.stop_beyond)) {
      res_.stopped_beyond = true;
      break;
    }
    if (check.converged == k_) {
      if (fresh_) {
        res_.status = EigStatus::Converged;
        break;
      }
      if (!refresh_x()) {
        res_.status = nonfinite_ ? EigStatus::NonFinite : EigStatus::NotPositiveDefinite;
        break;
      }
      fresh_ = recheck_ = true;
      continue;
    }
    if (stagnated(check)) {
      res_.status = EigStatus::Stagnated;
      break;
    }
    if (it_ >= max_iters_) break;

    std::optional<PhaseProfile::Scope> step_phase;
    step_phase.emplace(prof_, "iter: W = M^-1 R, orthonormalised");
    const index_t aw = expand();
    if (aw == 0) break;
    step_phase.emplace(prof_, "iter: spmm on W");
    const index_t oW = oX_ - aw;
    ops_.apply_a(aw, Sb_[cur_] + oW, L_, ASb_[cur_] + oW, L_);
    if (gen_) ops_.apply_b(aw, Sb_[cur_] + oW, L_, BSb_[cur_] + oW, L_);
    step_phase.emplace(prof_, "iter: rayleigh-ritz [W X P]");
    Projection pr;
    if (!rayleigh_ritz_step(aw, pr)) break;
    step_phase.emplace(prof_, "iter: basis update (P, combines)");
    update_basis(aw, pr);
  }
  check_phase.reset();
}

/// R = A·X − B·X·Λ into T0 (ld b) with rr_j = ‖r_j‖², xx_j = ‖x_j‖². With constraints the pairs
/// solve the problem restricted to the B-complement of Y, where A·x − λ·B·x = B·Y·μ (a Lagrange
/// term) need not vanish: the residual is r̃ = (I − B·Y·Yᵀ)·r, zero exactly when r ∈ span(B·Y).
template <class Ops>
void Lobpcg<Ops>::evaluate_residuals() {
  ops_.residuals(b_, AX(), L_, BX(), L_, X(), L_, lambda_.data(), dest_all_.data(), Tb_[0], b_, rr_.data(),
                 xx_.data());
  if (gen_ && opt_.convergence == EigConvergence::Relative) {  // ‖B·x_j‖² for the relative test
    std::vector<double> G(static_cast<std::size_t>(b_) * b_);
    ops_.gram(BX(), L_, b_, BX(), L_, b_, G.data());
    for (index_t j = 0; j < b_; ++j) bxx_[j] = G[cm(j, j, b_)];
  } else {
    bxx_ = xx_;
  }
  if (c_ == 0) return;
  std::vector<double> C(static_cast<std::size_t>(c_) * b_), G(static_cast<std::size_t>(b_) * b_);
  ops_.gram(Y(), ldy_, c_, Tb_[0], b_, b_, C.data());
  ops_.combine(BY(), ldy_, c_, C.data(), -1.0, 1.0, Tb_[0], b_, b_);
  ops_.gram(Tb_[0], b_, b_, Tb_[0], b_, b_, G.data());
  for (index_t j = 0; j < b_; ++j) rr_[j] = G[cm(j, j, b_)];
}

/// ‖A‖ₑ and ‖B‖ₑ grow by the Rayleigh quotients of the current pairs (x_jᵀBx_j = 1, so
/// |x_jᵀAx_j|/‖x_j‖² = |λ_j|/‖x_j‖² and 1/‖x_j‖² ≤ ‖B‖₂). False when a value is not finite.
template <class Ops>
bool Lobpcg<Ops>::update_norm_estimates() {
  bool finite = true;
  for (index_t j = 0; j < b_; ++j) {
    finite &= std::isfinite(rr_[j]) && std::isfinite(xx_[j]) && std::isfinite(lambda_[j]) && xx_[j] > 0;
    if (!finite) break;
    anorm_ = std::max(anorm_, std::abs(lambda_[j]) / xx_[j]);
    if (gen_) bnorm_ = std::max(bnorm_, 1.0 / xx_[j]);
  }
  return finite;
}

/// The convergence measure of pair j (LobpcgOptions::convergence, lobpcg_result.hpp): ≤ tol when converged.
template <class Ops>
double Lobpcg<Ops>::measure(index_t j) const {
  const double lam = st_.flipped ? st_.flip_sigma - lambda_[j] : lambda_[j];
  return convergence_measure(opt_.convergence, rr_[j], xx_[j], bxx_[j], lambda_[j], lam, anorm_, bnorm_);
}

/// The measures of all b pairs into rel_; the wanted ones' into the history (a check right after
/// a refresh replaces the iteration's row) and the progress callback.
template <class Ops>
typename Lobpcg<Ops>::Check Lobpcg<Ops>::check_convergence() {
  Check check;
  for (index_t j = 0; j < b_; ++j) {
    rel_[j] = measure(j);
    if (j < k_) {
      check.converged += rel_[j] <= opt_.tol;
      check.worst = std::max(check.worst, rel_[j]);
    }
  }
  if (recheck_ && res_.history_rows > 0) {
    res_.history.resize(res_.history.size() - k_);
    --res_.history_rows;
  }
  res_.history.insert(res_.history.end(), rel_.begin(), rel_.begin() + k_);
  ++res_.history_rows;
  recheck_ = false;
  if (opt_.progress) opt_.progress({it_, check.converged, k_, check.worst, seconds()});
  return check;
}

/// Stagnation: no progress for max(kStagnationWindow, i) iterations since the last, at iteration
/// i. Progress is the worst wanted residual halving; and, while some unconverged wanted pair is
/// far above its rounding floor, also more wanted pairs meeting tol than ever before, or the
/// wanted Ritz values moving toward the wanted end (ritz_progress). These keep slow but steady
/// runs going, whose relative residuals first rise (the Ritz values still falling toward tiny
/// eigenvalues) or plateau for hundreds of iterations (2-D Laplacian 1024², Chebyshev). At the
/// floor, pairs drift across tol and Ritz values move by noise, so only halving counts there, as
/// before: such runs (tol below about ε·‖A‖/|λ|) still end promptly. max_iters bounds every run.
template <class Ops>
bool Lobpcg<Ops>::stagnated(const Check& check) {
  bool progress = false;
  if (check.worst < 0.5 * best_res_) {
    best_res_ = check.worst;
    progress = true;
  }
  if (far_above_floor()) {
    if (check.converged > best_conv_) progress = true;
    if (ritz_progress()) progress = true;
  }
  best_conv_ = std::max(best_conv_, check.converged);
  if (progress) best_it_ = it_;
  return it_ - best_it_ > std::max(kStagnationWindow, best_it_);
}

/// True when some wanted pair above tol has a measure above kFloorMargin times its rounding floor:
/// the measure of a residual of norm ε·(‖A‖ₑ + |λ|·‖B‖ₑ)·‖x‖, what computing A·x − λ·B·x alone
/// errs by. (Runs that stagnated at the floor on the shared set stopped within 2x of it.)
template <class Ops>
bool Lobpcg<Ops>::far_above_floor() const {
  const double eps = std::numeric_limits<double>::epsilon();
  for (index_t j = 0; j < k_; ++j) {
    if (!(rel_[j] > opt_.tol)) continue;
    const double noise = eps * (anorm_ + std::abs(lambda_[j]) * bnorm_);
    const double lam = st_.flipped ? st_.flip_sigma - lambda_[j] : lambda_[j];
    const double floor =
        convergence_measure(opt_.convergence, noise * noise * xx_[j], xx_[j], bxx_[j], lambda_[j], lam, anorm_, bnorm_);
    if (rel_[j] > kFloorMargin * floor) return true;
  }
  return false;
}

/// True when Σ of the k wanted Ritz values moved toward the wanted end (down for the smallest) by
/// more than kRitzProgress of Σ|λ_j| and kFloorMargin times their rounding error since the last
/// time it did. Rayleigh–Ritz on a basis holding X never moves them away in exact arithmetic, so
/// this is progress even while the relative residuals rise.
template <class Ops>
bool Lobpcg<Ops>::ritz_progress() {
  double sum = 0, scale = 0;
  for (index_t j = 0; j < k_; ++j) {
    sum += lambda_[j];
    scale += std::abs(lambda_[j]);
  }
  if (std::isnan(ritz_ref_)) ritz_ref_ = sum;
  const double moved = largest_ ? sum - ritz_ref_ : ritz_ref_ - sum;
  const double noise = std::numeric_limits<double>::epsilon() * (double(k_) * anorm_ + scale * bnorm_);
  if (!(moved > std::max(kRitzProgress * scale, kFloorMargin * noise))) return false;
  ritz_ref_ = sum;
  return true;
}

/// W = M⁻¹·R for the active pairs (those above tol), B-orthonormal, off Y and [X P], written
/// right-aligned before X. Returns its width aw ≥ 1, or 0 when the run ends (res_.status says
/// why: W vanished into span[X P], a breakdown, or values not finite).
template <class Ops>
index_t Lobpcg<Ops>::expand() {
  active_.clear();
  for (index_t j = 0; j < b_; ++j)
    if (rel_[j] > opt_.tol) active_.push_back(j);
  const index_t a = index_t(active_.size());
  int v = 0;
  if (a < b_) {  // gather the active residuals: T1 = T0·E_J
    std::vector<double> E(static_cast<std::size_t>(b_) * a, 0.0);
    for (index_t i = 0; i < a; ++i) E[cm(active_[i], i, b_)] = 1.0;
    ops_.combine(Tb_[0], b_, b_, E.data(), 1.0, 0.0, Tb_[1], b_, a);
    v = 1;
  }
  if (ops_.has_preconditioner()) {
    ops_.precondition(a, Tb_[v], b_, Tb_[1 - v], b_);
    v = 1 - v;
  }
  if (gen_) ops_.apply_b(a, Tb_[v], b_, BTb_[v], b_);
  const index_t aw = ortho(
      Tb_, BTb_, v, b_, a, b_ + p_, [&](index_t r) { return std::pair<double*, index_t>(Sb_[cur_] + oX_ - r, L_); },
      true);
  if (ortho_failed(aw)) return 0;
  if (aw == 0) {  // every new direction lies in span[X P] already: no progress is possible
    res_.status = EigStatus::Stagnated;
    return 0;
  }
  return aw;
}

/// Rayleigh–Ritz on S = [W X P] (A·W, B·W computed). GA = SᵀAS, GB = SᵀBS: the W rows by tall
/// products (Wᵀ·[AW AX AP], Wᵀ·[BW BX BP]), the [X P] block from the previous step (GXA, GXB).
/// Nothing assumes W orthonormal or B-orthogonal to [X P]: what the products say is what
/// Rayleigh–Ritz uses. An ill-conditioned GB drops P (restart) and solves again on [W X]. False
/// when the run ends (res_.status says why).
template <class Ops>
bool Lobpcg<Ops>::rayleigh_ritz_step(index_t aw, Projection& pr) {
  const index_t oW = oX_ - aw;
  double* const S = Sb_[cur_] + oW;
  double* const AS = ASb_[cur_] + oW;
  double* const BS = BSb_[cur_] + oW;
  const index_t q = b_ + p_;
  index_t m = aw + q;
  std::vector<double> GA(static_cast<std::size_t>(m) * m), GB(static_cast<std::size_t>(m) * m);
  if (gx_stale_) {  // after a refresh: all of SᵀAS, SᵀBS by tall products, in one wait as usual
    ops_.gram2(S, L_, m, AS, L_, BS, L_, m, GA.data(), GB.data());
    dense::symmetrize(m, GA);
    dense::symmetrize(m, GB);
  } else {
    std::vector<double> RA(static_cast<std::size_t>(aw) * m), RB(static_cast<std::size_t>(aw) * m);
    ops_.gram2(S, L_, aw, AS, L_, BS, L_, m, RA.data(), RB.data());
    for (index_t j = 0; j < q; ++j)
      for (index_t i = 0; i < q; ++i) {
        GA[cm(aw + i, aw + j, m)] = GXA_[cm(i, j, q)];
        GB[cm(aw + i, aw + j, m)] = GXB_[cm(i, j, q)];
      }
    for (index_t j = 0; j < m; ++j)
      for (index_t i = 0; i < aw; ++i) {
        GA[cm(i, j, m)] = RA[cm(i, j, aw)];
        GB[cm(i, j, m)] = RB[cm(i, j, aw)];
        if (j >= aw) {
          GA[cm(j, i, m)] = RA[cm(i, j, aw)];
          GB[cm(j, i, m)] = RB[cm(i, j, aw)];
        }
      }
    dense::symmetrize(m, GA);
    dense::symmetrize(m, GB);
  }
  std::optional<PhaseProfile::Scope> host_phase;
  host_phase.emplace(prof_, "host: rayleigh-ritz (LAPACK)");
  RitzStep rs = rayleigh_ritz(m, GA, GB, largest_, b_, p_ == 0, tols_);
  if (!rs.ok && rs.ill_conditioned && p_ > 0) {  // restart: drop P (the trailing p columns)
    ++res_.p_restarts;
    const index_t m2 = aw + b_;
    std::vector<double> GA2(static_cast<std::size_t>(m2) * m2), GB2(static_cast<std::size_t>(m2) * m2);
    for (index_t j = 0; j < m2; ++j)
      for (index_t i = 0; i < m2; ++i) {
        GA2[cm(i, j, m2)] = GA[cm(i, j, m)];
        GB2[cm(i, j, m2)] = GB[cm(i, j, m)];
      }
    m = m2;
    p_ = 0;
    GA.swap(GA2);
    GB.swap(GB2);
    rs = rayleigh_ritz(m, GA, GB, largest_, b_, true, tols_);
  }
  host_phase.reset();
  if (!rs.ok) {
    bool nf = false;
    for (double e : GA) nf |= !std::isfinite(e);
    for (double e : GB) nf |= !std::isfinite(e);
    res_.status = nf ? EigStatus::NonFinite : EigStatus::NotPositiveDefinite;
    return false;
  }
  if (gen_ && rs.indefinite) {
    res_.status = EigStatus::NotPositiveDefinite;
    return false;
  }
  res_.reduced_rr += rs.reduced;
  if (!gen_)  // Ritz values of an orthonormal basis are Rayleigh quotients: |θ| ≤ ‖A‖₂
    for (double t : rs.theta) anorm_ = std::max(anorm_, std::abs(t));
  pr.m = m;
  pr.GA = std::move(GA);
  pr.GB = std::move(GB);
  pr.ritz = std::move(rs);
  return true;
}

/// The new [X P] from the Ritz coefficients, into the other copy of the blocks: X_new = S·C₁ and
/// P_new = S·C₂·orth(C₂ᵀ·GB·E), E the non-X parts of the active pairs' coefficients (implicit P,
/// file comment); A·[X P], B·[X P] by the same combinations; their Gram blocks GXA, GXB by the
/// small coefficients; λ ← the first b Ritz values.
template <class Ops>
void Lobpcg<Ops>::update_basis(index_t aw, const Projection& pr) {
  const index_t m = pr.m;
  const RitzStep& rs = pr.ritz;
  const index_t a = index_t(active_.size());
  const index_t oW = oX_ - aw;
  std::optional<PhaseProfile::Scope> host_phase;
  host_phase.emplace(prof_, "host: P coefficients, [X P] grams");
  const index_t r = rs.rank, extra = r - b_;
  index_t pn = 0;
  std::vector<double> coef(rs.C.begin(), rs.C.begin() + static_cast<std::size_t>(m) * b_);  // [C₁ | Z], m × (b + pn)
  if (extra > 0) {
    std::vector<double> E(static_cast<std::size_t>(m) * a, 0.0);
    for (index_t i = 0; i < a; ++i)
      for (index_t row = 0; row < m; ++row)
        if (row < aw || row >= aw + b_) E[cm(row, i, m)] = rs.C[cm(row, active_[i], m)];
    const std::vector<double> C2(rs.C.begin() + static_cast<std::size_t>(m) * b_, rs.C.end());
    const std::vector<double> F = dense::at_b(m, extra, a, C2, dense::a_b(m, m, a, pr.GB, E));
    const std::vector<double> Q = orth_columns(extra, a, F, pn, tols_);
    if (pn > 0) {
      const std::vector<double> Z = dense::a_b(m, extra, pn, C2, Q);
      coef.insert(coef.end(), Z.begin(), Z.end());
    }
  }
  host_phase.reset();
  const int nxt = 1 - cur_;
  ops_.combine(Sb_[cur_] + oW, L_, m, coef.data(), 1.0, 0.0, Sb_[nxt] + oX_, L_, b_ + pn);
  ops_.combine(ASb_[cur_] + oW, L_, m, coef.data(), 1.0, 0.0, ASb_[nxt] + oX_, L_, b_ + pn);
  if (gen_) ops_.combine(BSb_[cur_] + oW, L_, m, coef.data(), 1.0, 0.0, BSb_[nxt] + oX_, L_, b_ + pn);
  GXA_ = dense::at_b(m, b_ + pn, b_ + pn, coef, dense::a_b(m, m, b_ + pn, pr.GA, coef));  // [C₁ Z]ᵀ·GA·[C₁ Z]
  GXB_ = dense::at_b(m, b_ + pn, b_ + pn, coef, dense::a_b(m, m, b_ + pn, pr.GB, coef));
  dense::symmetrize(b_ + pn, GXA_);
  dense::symmetrize(b_ + pn, GXB_);
  cur_ = nxt;
  p_ = pn;
  gx_stale_ = false;
  std::copy(rs.theta.begin(), rs.theta.begin() + b_, lambda_.begin());
  fresh_ = false;
  ++it_;
}

// ---- results ----------------------------------------------------------------------------------

/// Results from fresh products: unless the loop ended on them, A·X, B·X are recomputed
/// (refresh_x) and the pairs measured again, which may turn a stagnated or max-iterations run
/// converged or a converged one not. Then the eigenpairs, residuals and estimates into res_.
template <class Ops>
void Lobpcg<Ops>::finish() {
  res_.iterations = it_;
  auto final_phase = phase(prof_, "lobpcg: final check + eigenvector download");
  if (res_.status != EigStatus::NonFinite && res_.status != EigStatus::NotPositiveDefinite && !fresh_) {
    if (refresh_x()) {
      evaluate_residuals();
      bool all = true;
      for (index_t j = 0; j < b_; ++j) {
        rel_[j] = measure(j);
        if (j < k_) all &= rel_[j] <= opt_.tol;
      }
      if (all && (res_.status == EigStatus::MaxIterations || res_.status == EigStatus::Stagnated))
        res_.status = EigStatus::Converged;
      if (!all && res_.status == EigStatus::Converged) res_.status = EigStatus::MaxIterations;
    }
  }
  res_.seconds = seconds();
  res_.convergence = opt_.convergence;
  res_.a_norm_estimate = anorm_;
  res_.b_norm_estimate = bnorm_;
  res_.eigenvalues.assign(lambda_.begin(), lambda_.begin() + k_);
  res_.residual_norms.resize(k_);
  res_.relative_residuals.assign(rel_.begin(), rel_.begin() + k_);
  for (index_t j = 0; j < k_; ++j) res_.residual_norms[j] = std::sqrt(rr_[j]);
  ops_.copy(k_, X(), L_, Tb_[0], k_);
  res_.eigenvectors.resize(nn_ * k_);
  ops_.download(Tb_[0], res_.eigenvectors.data(), nn_ * k_);
}

}  // namespace lobpcg_detail

/// Runs LOBPCG over `ops` (the backend operations listed in the file comment) from the start `st`.
/// Non-convergence and breakdown are statuses in the result.
template <class Ops>
EigResult lobpcg(Ops& ops, const LobpcgOptions& opt, const LobpcgStart& st) {
  return lobpcg_detail::Lobpcg<Ops>(ops, opt, st).run();
}

}  // namespace krysp
