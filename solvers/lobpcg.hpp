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
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/base/phase_profile.hpp"
#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/lobpcg_result.hpp"
#include "krysp/solvers/lobpcg_small.hpp"
#include "krysp/solvers/small_dense.hpp"

namespace krysp {

/// Starting vectors and constraints (host, ROW-major n × cols), and lower bounds of ‖A‖₂, ‖B‖₂
/// (the eigensolve driver passes max |a_ii| and max b_ii).
struct LobpcgStart {
  const double* x0 = nullptr;
  index_t x0_cols = 0;
  const double* constraints = nullptr;
  index_t constraint_cols = 0;
  double a_norm_floor = 0;
  double b_norm_floor = 1;
  PhaseProfile* profile = nullptr;  ///< non-null: time phases and operations (base/phase_profile.hpp)
  /// The run solves for θ of σI − A while the user asked for λ = σ − θ of A (the spectral flip):
  /// the Relative test is then taken relative to |σ − θ|.
  bool flipped = false;
  double flip_sigma = 0;
  /// Not NaN: stop (EigResult::stopped_beyond) as soon as the first Ritz value is below it (smallest)
  /// or above it (largest): the check for missed eigenvalues needs no more.
  double stop_beyond = std::numeric_limits<double>::quiet_NaN();
};

namespace lobpcg_detail {
/// Whether Ops has the optional gram_pair (two Gram matrices of different blocks, one wait).
template <class Ops, class = void>
struct has_gram_pair : std::false_type {};
template <class Ops>
struct has_gram_pair<Ops, std::void_t<decltype(std::declval<Ops&>().gram_pair(
                              std::declval<const double*>(), index_t(), index_t(), std::declval<const double*>(),
                              index_t(), index_t(), std::declval<double*>(), std::declval<const double*>(), index_t(),
                              index_t(), std::declval<const double*>(), index_t(), index_t(),
                              std::declval<double*>()))>> : std::true_type {};

/// The backend's operations, each timed as an "op:" phase of `p` (nothing when p is null).
template <class Ops>
struct ProfiledOps {
  Ops& o;
  PhaseProfile* p;
  index_t size() const { return o.size(); }
  bool generalized() const { return o.generalized(); }
  bool has_preconditioner() const { return o.has_preconditioner(); }
  auto block(std::size_t count) const { return o.block(count); }
#define KRYSP_PROFILED_OP(fn, label)                  \
  template <class... Args>                             \
  void fn(Args&&... args) {                            \
    auto s = phase(p, label);                          \
    o.fn(std::forward<Args>(args)...);                 \
  }
  KRYSP_PROFILED_OP(upload, "op: upload")
  KRYSP_PROFILED_OP(download, "op: download")
  KRYSP_PROFILED_OP(gram, "op: gram (X^T Y, to host)")
  KRYSP_PROFILED_OP(gram2, "op: gram2 (two X^T Y, to host)")
  KRYSP_PROFILED_OP(combine, "op: combine (X C, C from host)")
  KRYSP_PROFILED_OP(copy, "op: copy")
  KRYSP_PROFILED_OP(apply_a, "op: spmm A")
  KRYSP_PROFILED_OP(apply_b, "op: spmm B")
  KRYSP_PROFILED_OP(precondition, "op: preconditioner")
  KRYSP_PROFILED_OP(residuals, "op: residuals + norms (to host)")
  KRYSP_PROFILED_OP(fill_random, "op: fill random")
#undef KRYSP_PROFILED_OP
  /// C1 = X1ᵀ·Y1 and C2 = X2ᵀ·Y2 with one wait where the backend has gram_pair, else two grams.
  void gram_pair(const double* X1, index_t ldx1, index_t bx1, const double* Y1, index_t ldy1, index_t by1, double* C1,
                 const double* X2, index_t ldx2, index_t bx2, const double* Y2, index_t ldy2, index_t by2,
                 double* C2) {
    auto s = phase(p, "op: gram pair (two X^T Y, to host)");
    if constexpr (has_gram_pair<Ops>::value) {
      o.gram_pair(X1, ldx1, bx1, Y1, ldy1, by1, C1, X2, ldx2, bx2, Y2, ldy2, by2, C2);
    } else {
      o.gram(X1, ldx1, bx1, Y1, ldy1, by1, C1);
      o.gram(X2, ldx2, bx2, Y2, ldy2, by2, C2);
    }
  }
};
}  // namespace lobpcg_detail

/// Checks k, the block size, tol and the shapes against n; InputError naming the numbers.
/// Returns the block size to use.
inline index_t lobpcg_block_size(const LobpcgOptions& o, index_t n, index_t x0_cols, index_t constraint_cols) {
  KRYSP_REQUIRE(o.k >= 1, "LOBPCG: k = ", o.k, " eigenpairs requested; k must be at least 1");
  KRYSP_REQUIRE(std::isfinite(o.tol) && o.tol > 0, "LOBPCG: tol = ", o.tol, " must be a positive number");
  KRYSP_REQUIRE(constraint_cols >= 0 && x0_cols >= 0, "LOBPCG: negative column counts");
  const index_t b = o.block_size > 0 ? o.block_size : default_block_size(o.k, n, constraint_cols);
  KRYSP_REQUIRE(b >= o.k, "LOBPCG: block size ", b, " is smaller than k = ", o.k);
  KRYSP_REQUIRE(b <= kMaxBlockSize, "LOBPCG: block size ", b, " exceeds the maximum ", kMaxBlockSize);
  KRYSP_REQUIRE(3 * std::int64_t(b) + constraint_cols <= n, "LOBPCG: block size ", b, " is too large for n = ", n,
                ": the basis [X W P] needs 3*b", constraint_cols > 0 ? " + constraints" : "", " = ",
                3 * std::int64_t(b) + constraint_cols, " <= n columns (k = ", o.k, ", constraints = ", constraint_cols,
                "); use a smaller k or block size, or a dense eigensolver for so small a matrix");
  KRYSP_REQUIRE(x0_cols <= b, "LOBPCG: x0 has ", x0_cols, " columns, more than the block size ", b);
  return b;
}

/// Runs LOBPCG over `ops` (the backend operations listed in the file comment) from the start `st`.
/// Non-convergence and breakdown are statuses in the result.
template <class Ops>
EigResult lobpcg(Ops& backend_ops, const LobpcgOptions& opt, const LobpcgStart& st) {
  using namespace lobpcg_detail;
  PhaseProfile* const prof = st.profile;
  ProfiledOps<Ops> ops{backend_ops, prof};
  using Clock = std::chrono::steady_clock;
  const index_t n = ops.size();
  const index_t k = opt.k, cin = st.constraint_cols;
  const index_t b = lobpcg_block_size(opt, n, st.x0_cols, cin);
  const bool gen = ops.generalized(), largest = opt.which == EigWhich::Largest;
  const index_t max_iters = opt.max_iters > 0 ? opt.max_iters : default_max_iters(n);
  const SmallTolerances& tols = opt.basis;

  EigResult res;
  res.k = k;
  res.n = n;
  res.block_size = b;

  // ---- storage ----------------------------------------------------------------------------
  const index_t oX = b + (b & 1);            // X at [oX, oX+b), W right-aligned ending at oX
  const index_t L = (oX + 2 * b + 1) / 2 * 2;  // P at [oX+b, oX+b+p); ld of the basis blocks
  const std::size_t nn = std::size_t(n);
  const index_t wsc = std::max(b, cin);      // scratch width (W, X0, and the constraint block)
  std::optional<PhaseProfile::Scope> storage_phase;
  storage_phase.emplace(prof, "lobpcg: allocate blocks");
  typename Ops::Block S0 = ops.block(nn * L), S1 = ops.block(nn * L), AS0 = ops.block(nn * L),
                      AS1 = ops.block(nn * L), T0 = ops.block(nn * wsc), T1 = ops.block(nn * wsc);
  typename Ops::Block BS0, BS1, BT0, BT1, Yb, BYb;
  if (gen) {
    BS0 = ops.block(nn * L);
    BS1 = ops.block(nn * L);
    BT0 = ops.block(nn * wsc);
    BT1 = ops.block(nn * wsc);
  }
  storage_phase.reset();
  double* Sb[2] = {S0.data(), S1.data()};
  double* ASb[2] = {AS0.data(), AS1.data()};
  double* BSb[2] = {gen ? BS0.data() : S0.data(), gen ? BS1.data() : S1.data()};  // B·S = S when B = I
  double* Tb[2] = {T0.data(), T1.data()};
  double* BTb[2] = {gen ? BT0.data() : T0.data(), gen ? BT1.data() : T1.data()};
  int cur = 0;  // which copy of S holds the current basis
  auto X = [&] { return Sb[cur] + oX; };
  auto AX = [&] { return ASb[cur] + oX; };
  auto BX = [&] { return BSb[cur] + oX; };

  index_t c = 0, ldy = std::max<index_t>(cin, 1);  // constraint rank, and the ld of Y
  index_t p = 0;                                   // columns of P
  // [X P]ᵀ·A·[X P] and [X P]ᵀ·B·[X P] ((b+p) × (b+p)): carried by the small coefficients from one
  // Rayleigh–Ritz step to the next, so that only the W rows of the Gram matrices need tall products.
  std::vector<double> GXA, GXB;
  std::vector<double> lambda(b, 0.0), rr(b), xx(b), bxx(b), rel(b);
  double anorm = std::max(0.0, st.a_norm_floor), bnorm = gen ? std::max(1e-300, st.b_norm_floor) : 1.0;

  // ---- building blocks ----------------------------------------------------------------------
  // V −= Q·((B·Q)ᵀ·V), and B·V −= B·Q·(same) when BV is tracked. With Q B-orthonormal, column j
  // loses a component of B-norm² Σ_i C_ij², added to removed[j] when given.
  auto project = [&](double* V, index_t ldv, index_t a, double* BV, const double* Q, const double* BQ, index_t ldq,
                     index_t q, double* removed) {
    if (a == 0 || q == 0) return;
    std::vector<double> C(std::size_t(q) * a);
    ops.gram(BQ, ldq, q, V, ldv, a, C.data());
    ops.combine(Q, ldq, q, C.data(), -1.0, 1.0, V, ldv, a);
    if (BV) ops.combine(BQ, ldq, q, C.data(), -1.0, 1.0, BV, ldv, a);
    if (removed)
      for (index_t j = 0; j < a; ++j)
        for (index_t i = 0; i < q; ++i) removed[j] += C[cm(i, j, q)] * C[cm(i, j, q)];
  };
  // One classical Gram–Schmidt pass off the constraints Y and the first q columns of [X P].
  auto project_out = [&](double* V, index_t ldv, index_t a, double* BV, index_t q, double* removed) {
    if (c > 0) project(V, ldv, a, BV, Yb.data(), gen ? BYb.data() : Yb.data(), ldy, c, removed);
    if (q > 0) project(V, ldv, a, BV, X(), BX(), L, q, removed);
  };
  bool saw_indefinite = false;
  // B-orthonormalizes the a columns of V = buf[v] (ld `ld`; with B·V in bbuf[v] when B ≠ I),
  // after projecting them off Y and the first q columns of [X P]. The result (rank columns) is
  // written where dest(rank) says (its B-image is NOT written: the caller recomputes it).
  // Returns rank, or −1 when non-finite values appeared.
  //
  // Projection is classical Gram–Schmidt, repeated when needed ("twice is enough", Kahan and
  // Parlett): a column that kept less than half its B-norm² after the first pass may carry
  // rounding errors of relative size ε·‖before‖/‖after‖ along Y and [X P]; it is projected again.
  // The B-norms before projection are ‖after‖² + Σ C² (Pythagoras), so this costs nothing.
  //
  // Without constraints, the first pass takes C = (B·Q)ᵀ·V and Vᵀ·B·V in one wait (gram_pair) and
  // the Gram matrix after the projection as Vᵀ·B·V − CᵀC (Q = [X P] B-orthonormal), saving a
  // wait per call. That is accurate to a few ε relative where each column kept at least half its
  // B-norm² (the "again" test below, which otherwise falls back to projecting again and a fresh
  // Gram matrix); it only ever steers a first Cholesky QR pass that is followed by another one
  // from a fresh Gram matrix; an ill-conditioned or rank-deficient verdict is re-taken from a fresh one.
  //
  // `one_pass` (the new directions W of an iteration, which Rayleigh–Ritz takes exactly as they
  // are): a Cholesky QR pass on a well-conditioned block (scaled Gram condition ≤ 1e6, so the
  // result is B-orthonormal to ~ε·1e6) is the last one, without a Gram matrix to confirm it.
  auto ortho = [&](double* const* buf, double* const* bbuf, int v, index_t ld, index_t a, index_t q, auto dest,
                   bool one_pass = false) -> index_t {
    bool need_project = true;
    for (int pass = 0;; ++pass) {
      double* V = buf[v];
      double* BV = gen ? bbuf[v] : nullptr;
      std::vector<double> removed(a, 0.0), G(std::size_t(a) * a);
      bool derived = false;  // G = Vᵀ·B·V − CᵀC, not a fresh product
      if (need_project && c == 0 && q > 0) {
        std::vector<double> C(std::size_t(q) * a);
        ops.gram_pair(BX(), L, q, V, ld, a, C.data(), V, ld, a, gen ? BV : V, ld, a, G.data());
        ops.combine(X(), L, q, C.data(), -1.0, 1.0, V, ld, a);
        if (BV) ops.combine(BX(), L, q, C.data(), -1.0, 1.0, BV, ld, a);
        const std::vector<double> CC = dense::at_b(q, a, a, C, C);
        for (std::size_t e = 0; e < G.size(); ++e) G[e] -= CC[e];
        for (index_t j = 0; j < a; ++j)
          for (index_t i = 0; i < q; ++i) removed[j] += C[cm(i, j, q)] * C[cm(i, j, q)];
        derived = true;
      } else {
        if (need_project) project_out(V, ld, a, BV, q, removed.data());
        ops.gram(V, ld, a, gen ? BV : V, ld, a, G.data());
      }
      double scale = 0;  // the largest B-norm² a column had before projection
      if (need_project && (c > 0 || q > 0)) {
        bool again = false;
        for (index_t j = 0; j < a; ++j) {
          const double after = G[cm(j, j, a)], before = after + removed[j];
          scale = std::max(scale, before);
          again |= !(after >= 0.5 * before);  // also when NaN
        }
        if (again) {
          project_out(V, ld, a, BV, q, nullptr);
          ops.gram(V, ld, a, gen ? BV : V, ld, a, G.data());
          derived = false;
        }
      }
      auto coefficients = [&] {
        auto ph = phase(prof, "host: ortho coefficients (LAPACK)");
        return ortho_coefficients(a, G, tols, scale);
      };
      OrthoCoefficients oc = coefficients();
      if (derived && (!oc.finite || oc.used_svqb || oc.rank < a || oc.cond > 1e8)) {
        ops.gram(V, ld, a, gen ? BV : V, ld, a, G.data());  // decide that from a fresh Gram matrix
        oc = coefficients();
        derived = false;
      }
      if (!oc.finite) return -1;
      if (gen && oc.indefinite) saw_indefinite = true;
      if (oc.used_svqb) ++res.svqb_passes;
      res.dropped_directions += a - oc.rank;
      if (oc.rank == 0) return 0;
      // A pass whose input was already within 1e-2 of orthonormal leaves it orthonormal to
      // working precision (Cholesky QR's error is ε·cond², cond ≤ 1.03 here).
      const bool enough = one_pass && !oc.used_svqb && oc.rank == a && oc.cond <= 1e6;
      if ((oc.deviation <= 1e-2 && !derived) || enough || pass == 3) {
        const auto [W, ldw] = dest(oc.rank);
        ops.combine(V, ld, a, oc.K.data(), 1.0, 0.0, W, ldw, oc.rank);
        return oc.rank;
      }
      ops.combine(V, ld, a, oc.K.data(), 1.0, 0.0, buf[1 - v], ld, oc.rank);
      if (gen) ops.combine(BV, ld, a, oc.K.data(), 1.0, 0.0, bbuf[1 - v], ld, oc.rank);
      // An ill-conditioned pass magnifies what was left of V along [X P] and Y: project again.
      need_project = oc.cond > 1e8 || oc.rank < a;
      v = 1 - v;
      a = oc.rank;
    }
  };
  // Rayleigh–Ritz on X alone from fresh A·X, B·X (X projected off Y first): X, AX, BX, λ
  // consistent again. False when X has lost rank (B not SPD) or values are not finite.
  bool nonfinite = false;
  bool gx_stale = false;  // GXA, GXB are not known: the next Rayleigh–Ritz step takes them from tall products
  auto refresh_x = [&]() -> bool {
    auto ph = phase(prof, "lobpcg: refresh X (spmm + rayleigh-ritz on X)");
    if (c > 0) project(X(), L, b, nullptr, Yb.data(), gen ? BYb.data() : Yb.data(), ldy, c, nullptr);
    ops.apply_a(b, X(), L, AX(), L);
    if (gen) ops.apply_b(b, X(), L, BX(), L);
    std::vector<double> GA(std::size_t(b) * b), GB(std::size_t(b) * b);
    ops.gram2(X(), L, b, AX(), L, BX(), L, b, GA.data(), GB.data());
    const RitzStep rs = [&] {
      auto ph2 = phase(prof, "host: rayleigh-ritz (LAPACK)");
      return rayleigh_ritz(b, GA, GB, largest, b, true, tols);
    }();
    if (!rs.ok) {
      for (double e : GA) nonfinite |= !std::isfinite(e);
      for (double e : GB) nonfinite |= !std::isfinite(e);
      saw_indefinite |= gen && rs.indefinite;
      return false;
    }
    // X ← X·C, AX ← AX·C, BX ← BX·C into the other copy of the blocks (P copied along when
    // there is one), which then becomes the current one: no copy back.
    const int nxt = 1 - cur;
    for (int blk = 0; blk < (gen ? 3 : 2); ++blk) {
      double* const* buf = blk == 0 ? Sb : blk == 1 ? ASb : BSb;
      ops.combine(buf[cur] + oX, L, b, rs.C.data(), 1.0, 0.0, buf[nxt] + oX, L, b);
      if (p > 0) ops.copy(p, buf[cur] + oX + b, L, buf[nxt] + oX + b, L);
    }
    cur = nxt;
    std::copy(rs.theta.begin(), rs.theta.begin() + b, lambda.begin());
    // The [X P] blocks of the next Rayleigh–Ritz step come from fresh products: that step takes
    // the whole [W X P] Gram matrices by tall products (the same single wait), and a run that
    // ends here never needs them.
    gx_stale = true;
    ++res.refreshes;
    return true;
  };
  auto fail = [&](EigStatus s) {
    res.status = s;
    return res;
  };

  // ---- constraints: Y ← B-orthonormal basis of the given columns, B·Y -------------------------
  if (cin > 0) {
    auto ph = phase(prof, "lobpcg init: constraints");
    Yb = ops.block(nn * ldy);
    if (gen) BYb = ops.block(nn * ldy);
    ops.upload(st.constraints, Tb[0], nn * cin);
    if (gen) ops.apply_b(cin, Tb[0], cin, BTb[0], cin);
    const index_t r = ortho(Tb, BTb, 0, cin, cin, 0,
                            [&](index_t) { return std::pair<double*, index_t>(Yb.data(), ldy); });
    if (r < 0) return fail(EigStatus::NonFinite);
    if (saw_indefinite) return fail(EigStatus::NotPositiveDefinite);
    c = r;
    if (gen && c > 0) ops.apply_b(c, Yb.data(), ldy, BYb.data(), ldy);
  }
  res.constraints = c;

  // ---- starting block: x0 columns, then random; B-orthonormal, off Y; refilled if rank-deficient
  {
    auto ph = phase(prof, "lobpcg init: starting block + refresh");
    const index_t g = st.x0_cols;
    // A random block (no x0, no constraints, B = I) is well conditioned (scaled Gram condition
    // ≈ ((1 + √(b/n)) / (1 − √(b/n)))² ≤ 14 for n ≥ 3b): Rayleigh–Ritz on it (refresh_x, dsygvd
    // on its Gram matrices) B-orthonormalises it as well, with the same Ritz pairs as an
    // orthonormalised copy of the same span would give, and without Cholesky QR's two waits.
    // Should that fail, the general path below starts again.
    bool started = false;
    if (g == 0 && c == 0 && !gen) {
      ops.fill_random(b, X(), L, opt.seed, 0);
      started = refresh_x();
      if (!started && nonfinite) return fail(EigStatus::NonFinite);
    }
    if (!started) {
      if (g > 0) {
        ops.upload(st.x0, Tb[1], nn * g);
        ops.copy(g, Tb[1], g, Tb[0], b);
      }
      if (g < b) ops.fill_random(b - g, Tb[0] + g, b, opt.seed, g);
      index_t have = 0;
      for (int attempt = 0; have < b && attempt < 6; ++attempt) {
        const index_t want = b - have;
        if (attempt > 0) ops.fill_random(want, Tb[0], b, opt.seed + 7919 * attempt, b + have);
        if (gen) ops.apply_b(want, Tb[0], b, BTb[0], b);
        const index_t r = ortho(Tb, BTb, 0, b, want, have,
                                [&](index_t) { return std::pair<double*, index_t>(X() + have, L); });
        if (r < 0) return fail(EigStatus::NonFinite);
        if (saw_indefinite) return fail(EigStatus::NotPositiveDefinite);
        if (gen && r > 0) ops.apply_b(r, X() + have, L, BX() + have, L);  // B·X for the next projection
        have += r;
      }
      if (have < b) return fail(EigStatus::NotPositiveDefinite);
      if (!refresh_x()) return fail(nonfinite ? EigStatus::NonFinite : EigStatus::NotPositiveDefinite);
    }
    res.refreshes = 0;
  }

  // ---- iteration --------------------------------------------------------------------------
  const auto t0 = Clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::vector<index_t> dest_all(b), active;
  for (index_t j = 0; j < b; ++j) dest_all[j] = j;
  // R = A·X − B·X·Λ into T0 (ld b) with rr_j = ‖r_j‖², xx_j = ‖x_j‖². With constraints the pairs
  // solve the problem restricted to the B-complement of Y, where A·x − λ·B·x = B·Y·μ (a Lagrange
  // term) need not vanish: the residual is r̃ = (I − B·Y·Yᵀ)·r, zero exactly when r ∈ span(B·Y).
  auto evaluate_residuals = [&] {
    ops.residuals(b, AX(), L, BX(), L, X(), L, lambda.data(), dest_all.data(), Tb[0], b, rr.data(), xx.data());
    if (gen && opt.convergence == EigConvergence::Relative) {  // ‖B·x_j‖² for the relative test
      std::vector<double> G(std::size_t(b) * b);
      ops.gram(BX(), L, b, BX(), L, b, G.data());
      for (index_t j = 0; j < b; ++j) bxx[j] = G[cm(j, j, b)];
    } else {
      bxx = xx;
    }
    if (c == 0) return;
    std::vector<double> C(std::size_t(c) * b), G(std::size_t(b) * b);
    ops.gram(Yb.data(), ldy, c, Tb[0], b, b, C.data());
    ops.combine(gen ? BYb.data() : Yb.data(), ldy, c, C.data(), -1.0, 1.0, Tb[0], b, b);
    ops.gram(Tb[0], b, b, Tb[0], b, b, G.data());
    for (index_t j = 0; j < b; ++j) rr[j] = G[cm(j, j, b)];
  };
  // The convergence measure of pair j (LobpcgOptions::convergence, lobpcg_result.hpp): ≤ tol when converged.
  auto measure = [&](index_t j) {
    const double lam = st.flipped ? st.flip_sigma - lambda[j] : lambda[j];
    double scale = 1.0;  // Absolute
    if (opt.convergence == EigConvergence::Norm) scale = (anorm + std::abs(lambda[j]) * bnorm) * std::sqrt(xx[j]);
    if (opt.convergence == EigConvergence::Relative) scale = std::abs(lam) * std::sqrt(bxx[j]);
    return scale > 0 ? std::sqrt(rr[j]) / scale : (rr[j] > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  };
  double best_res = std::numeric_limits<double>::infinity();  // the worst wanted residual's last halving
  index_t best_it = 0;
  bool fresh = true;        // A·X, B·X were computed by SpMM for the current X
  bool recheck = false;     // this residual evaluation follows a refresh in the same iteration
  index_t it = 0;
  res.status = EigStatus::MaxIterations;
  std::optional<PhaseProfile::Scope> check_phase;
  for (;;) {
    auto iteration_phase = phase(prof, "iteration (loop pass, total)");
    check_phase.emplace(prof, "iter: residuals + convergence check");
    evaluate_residuals();  // R of all b Ritz pairs in T0 (ld b), rr, xx
    bool finite = true;
    for (index_t j = 0; j < b; ++j) {
      finite &= std::isfinite(rr[j]) && std::isfinite(xx[j]) && std::isfinite(lambda[j]) && xx[j] > 0;
      if (!finite) break;
      anorm = std::max(anorm, std::abs(lambda[j]) / xx[j]);  // |x_jᵀAx_j|/‖x_j‖² with x_jᵀBx_j = 1
      if (gen) bnorm = std::max(bnorm, 1.0 / xx[j]);
    }
    if (!finite) {
      res.status = EigStatus::NonFinite;
      break;
    }
    index_t nconv = 0;
    double maxres = 0;
    for (index_t j = 0; j < b; ++j) {
      rel[j] = measure(j);
      if (j < k) {
        nconv += rel[j] <= opt.tol;
        maxres = std::max(maxres, rel[j]);
      }
    }
    if (recheck && res.history_rows > 0) {
      res.history.resize(res.history.size() - k);
      --res.history_rows;
    }
    res.history.insert(res.history.end(), rel.begin(), rel.begin() + k);
    ++res.history_rows;
    recheck = false;
    if (opt.progress) opt.progress({it, nconv, k, maxres, seconds()});
    check_phase.reset();
    if (!std::isnan(st.stop_beyond) && (largest ? lambda[0] > st.stop_beyond : lambda[0] < st.stop_beyond)) {
      res.stopped_beyond = true;
      break;
    }
    if (nconv == k) {
      if (fresh) {
        res.status = EigStatus::Converged;
        break;
      }
      if (!refresh_x()) {
        res.status = nonfinite ? EigStatus::NonFinite : EigStatus::NotPositiveDefinite;
        break;
      }
      fresh = recheck = true;
      continue;
    }
    // Stagnation: the worst wanted residual has not halved for max(kStagnationWindow, i)
    // iterations since iteration i (typically the rounding floor ε·‖A‖/|λ| is above tol).
    if (maxres < 0.5 * best_res) {
      best_res = maxres;
      best_it = it;
    } else if (it - best_it > std::max(kStagnationWindow, best_it)) {
      res.status = EigStatus::Stagnated;
      break;
    }
    if (it >= max_iters) break;

    // ---- W = M⁻¹·R for the active pairs, B-orthonormal, off Y and [X P] -----------------
    std::optional<PhaseProfile::Scope> step_phase;
    step_phase.emplace(prof, "iter: W = M^-1 R, orthonormalised");
    active.clear();
    for (index_t j = 0; j < b; ++j)
      if (rel[j] > opt.tol) active.push_back(j);
    const index_t a = index_t(active.size());
    int v = 0;
    if (a < b) {  // gather the active residuals: T1 = T0·E_J
      std::vector<double> E(std::size_t(b) * a, 0.0);
      for (index_t i = 0; i < a; ++i) E[cm(active[i], i, b)] = 1.0;
      ops.combine(Tb[0], b, b, E.data(), 1.0, 0.0, Tb[1], b, a);
      v = 1;
    }
    if (ops.has_preconditioner()) {
      ops.precondition(a, Tb[v], b, Tb[1 - v], b);
      v = 1 - v;
    }
    if (gen) ops.apply_b(a, Tb[v], b, BTb[v], b);
    const index_t aw = ortho(
        Tb, BTb, v, b, a, b + p, [&](index_t r) { return std::pair<double*, index_t>(Sb[cur] + oX - r, L); }, true);
    if (aw < 0) {
      res.status = EigStatus::NonFinite;
      break;
    }
    if (saw_indefinite) {
      res.status = EigStatus::NotPositiveDefinite;
      break;
    }
    if (aw == 0) {  // every new direction lies in span[X P] already: no progress is possible
      res.status = EigStatus::Stagnated;
      break;
    }
    step_phase.emplace(prof, "iter: spmm on W");
    const index_t oW = oX - aw;
    double* const S = Sb[cur] + oW;
    double* const AS = ASb[cur] + oW;
    double* const BS = BSb[cur] + oW;
    ops.apply_a(aw, S, L, AS, L);
    if (gen) ops.apply_b(aw, S, L, BS, L);

    // ---- Rayleigh–Ritz on [W X P] -------------------------------------------------------
    // GA = SᵀAS, GB = SᵀBS: the W rows by tall products (Wᵀ·[AW AX AP], Wᵀ·[BW BX BP]), the
    // [X P] block from the previous step (GXA, GXB). Nothing assumes W orthonormal or B-orthogonal
    // to [X P]: what the products say is what Rayleigh–Ritz uses.
    step_phase.emplace(prof, "iter: rayleigh-ritz [W X P]");
    const index_t q = b + p;
    index_t m = aw + q;
    std::vector<double> GA(std::size_t(m) * m), GB(std::size_t(m) * m);
    if (gx_stale) {  // after a refresh: all of SᵀAS, SᵀBS by tall products, in one wait as usual
      ops.gram2(S, L, m, AS, L, BS, L, m, GA.data(), GB.data());
      dense::symmetrize(m, GA);
      dense::symmetrize(m, GB);
    } else {
      std::vector<double> RA(std::size_t(aw) * m), RB(std::size_t(aw) * m);
      ops.gram2(S, L, aw, AS, L, BS, L, m, RA.data(), RB.data());
      for (index_t j = 0; j < q; ++j)
        for (index_t i = 0; i < q; ++i) {
          GA[cm(aw + i, aw + j, m)] = GXA[cm(i, j, q)];
          GB[cm(aw + i, aw + j, m)] = GXB[cm(i, j, q)];
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
    host_phase.emplace(prof, "host: rayleigh-ritz (LAPACK)");
    RitzStep rs = rayleigh_ritz(m, GA, GB, largest, b, p == 0, tols);
    if (!rs.ok && rs.ill_conditioned && p > 0) {  // restart: drop P (the trailing p columns)
      ++res.p_restarts;
      const index_t m2 = aw + b;
      std::vector<double> GA2(std::size_t(m2) * m2), GB2(std::size_t(m2) * m2);
      for (index_t j = 0; j < m2; ++j)
        for (index_t i = 0; i < m2; ++i) {
          GA2[cm(i, j, m2)] = GA[cm(i, j, m)];
          GB2[cm(i, j, m2)] = GB[cm(i, j, m)];
        }
      m = m2;
      p = 0;
      GA.swap(GA2);
      GB.swap(GB2);
      rs = rayleigh_ritz(m, GA, GB, largest, b, true, tols);
    }
    host_phase.reset();
    if (!rs.ok) {
      bool nf = false;
      for (double e : GA) nf |= !std::isfinite(e);
      for (double e : GB) nf |= !std::isfinite(e);
      res.status = nf ? EigStatus::NonFinite : EigStatus::NotPositiveDefinite;
      break;
    }
    if (gen && rs.indefinite) {
      res.status = EigStatus::NotPositiveDefinite;
      break;
    }
    res.reduced_rr += rs.reduced;
    if (!gen)  // Ritz values of an orthonormal basis are Rayleigh quotients: |θ| ≤ ‖A‖₂
      for (double t : rs.theta) anorm = std::max(anorm, std::abs(t));

    // ---- P_new = S·C₂·orth(C₂ᵀ·GB·E), E = non-X parts of the active pairs' coefficients ----
    step_phase.emplace(prof, "iter: basis update (P, combines)");
    host_phase.emplace(prof, "host: P coefficients, [X P] grams");
    const index_t r = rs.rank, extra = r - b;
    index_t pn = 0;
    std::vector<double> coef(rs.C.begin(), rs.C.begin() + std::size_t(m) * b);  // [C₁ | Z], m × (b + pn)
    if (extra > 0) {
      std::vector<double> E(std::size_t(m) * a, 0.0);
      for (index_t i = 0; i < a; ++i)
        for (index_t row = 0; row < m; ++row)
          if (row < aw || row >= aw + b) E[cm(row, i, m)] = rs.C[cm(row, active[i], m)];
      const std::vector<double> C2(rs.C.begin() + std::size_t(m) * b, rs.C.end());
      const std::vector<double> F = dense::at_b(m, extra, a, C2, dense::a_b(m, m, a, GB, E));
      const std::vector<double> Q = orth_columns(extra, a, F, pn, tols);
      if (pn > 0) {
        const std::vector<double> Z = dense::a_b(m, extra, pn, C2, Q);
        coef.insert(coef.end(), Z.begin(), Z.end());
      }
    }
    host_phase.reset();
    const int nxt = 1 - cur;
    ops.combine(S, L, m, coef.data(), 1.0, 0.0, Sb[nxt] + oX, L, b + pn);
    ops.combine(AS, L, m, coef.data(), 1.0, 0.0, ASb[nxt] + oX, L, b + pn);
    if (gen) ops.combine(BS, L, m, coef.data(), 1.0, 0.0, BSb[nxt] + oX, L, b + pn);
    GXA = dense::at_b(m, b + pn, b + pn, coef, dense::a_b(m, m, b + pn, GA, coef));  // [C₁ Z]ᵀ·GA·[C₁ Z]
    GXB = dense::at_b(m, b + pn, b + pn, coef, dense::a_b(m, m, b + pn, GB, coef));
    dense::symmetrize(b + pn, GXA);
    dense::symmetrize(b + pn, GXB);
    cur = nxt;
    p = pn;
    gx_stale = false;
    std::copy(rs.theta.begin(), rs.theta.begin() + b, lambda.begin());
    fresh = false;
    ++it;
  }
  check_phase.reset();
  res.iterations = it;
  auto final_phase = phase(prof, "lobpcg: final check + eigenvector download");

  // ---- results from fresh products --------------------------------------------------------
  if (res.status != EigStatus::NonFinite && res.status != EigStatus::NotPositiveDefinite && !fresh) {
    if (refresh_x()) {
      evaluate_residuals();
      bool all = true;
      for (index_t j = 0; j < b; ++j) {
        rel[j] = measure(j);
        if (j < k) all &= rel[j] <= opt.tol;
      }
      if (all && (res.status == EigStatus::MaxIterations || res.status == EigStatus::Stagnated))
        res.status = EigStatus::Converged;
      if (!all && res.status == EigStatus::Converged) res.status = EigStatus::MaxIterations;
    }
  }
  res.seconds = seconds();
  res.convergence = opt.convergence;
  res.a_norm_estimate = anorm;
  res.b_norm_estimate = bnorm;
  res.eigenvalues.assign(lambda.begin(), lambda.begin() + k);
  res.residual_norms.resize(k);
  res.relative_residuals.assign(rel.begin(), rel.begin() + k);
  for (index_t j = 0; j < k; ++j) res.residual_norms[j] = std::sqrt(rr[j]);
  ops.copy(k, X(), L, Tb[0], k);
  res.eigenvectors.resize(nn * k);
  ops.download(Tb[0], res.eigenvectors.data(), nn * k);
  return res;
}

}  // namespace krysp
