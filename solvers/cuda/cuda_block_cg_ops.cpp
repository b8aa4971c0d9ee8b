#include "krysp/solvers/cuda/cuda_block_cg_ops.hpp"

#include <algorithm>
#include <functional>

#include "krysp/base/error.hpp"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"
#include "krysp/solvers/cuda/device_operator.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

namespace {
/// Room for the largest output (gram2's: 2·s² values).
std::size_t out_size(index_t s) { return std::size_t(2 * s * s); }
}  // namespace

namespace {
template <class T>
std::shared_ptr<const LinearOperator<T>> device_operator(const CsrMatrix<T>& A, const Preconditioner<T>* M,
                                                         const SpmmPlanOptions& plan) {
  // The structure check needs the matrix, which the operator constructor does not see. Block CG
  // applies no SpMV: the operator's SpMV plan is left to first use (never).
  KRYSP_REQUIRE(!M || M->matches(A), "block CG: the preconditioner was set up for another matrix");
  return std::make_shared<MatrixOperator<T>>(MatrixOperator<T>::device(A, nullptr, plan));
}
}  // namespace

template <class T>
CudaBlockCgOps<T>::CudaBlockCgOps(const CsrMatrix<T>& A, index_t s, const Preconditioner<T>* M,
                                  const SpmmPlanOptions& plan_options)
    : CudaBlockCgOps(device_operator(A, M, plan_options), s, M, Communicator()) {}

template <class T>
CudaBlockCgOps<T>::CudaBlockCgOps(const LinearOperator<T>& A, index_t s, const Preconditioner<T>* M,
                                  const Communicator& comm)
    : CudaBlockCgOps(detail::borrowed(A), s, M, comm) {}

template <class T>
CudaBlockCgOps<T>::CudaBlockCgOps(std::shared_ptr<const LinearOperator<T>> A, index_t s, const Preconditioner<T>* M,
                                  const Communicator& comm)
    : A_(std::move(A)), fused_(detail::fused_passes(*A_)), s_(s), M_(M), comm_(comm),
      plan_options_(fused_ ? fused_->spmm_options() : SpmmPlanOptions{}), blk_(s),
      inv_diag_(M ? M->inverse_diagonal() : nullptr) {
  static_assert(std::is_same_v<T, double>, "block CG's tall-skinny kernels are fp64");
  detail::require_device_operator("block CG", *A_, comm_, true);
  KRYSP_REQUIRE(s >= 1 && s <= 64, "block CG: ", s, " right-hand sides (1 to 64 supported)");
  KRYSP_REQUIRE(!M || M->space() == MemorySpace::Device, "block CG: a ", to_string(M->space()),
                " preconditioner given to the GPU backend");
  KRYSP_REQUIRE(!M || M->rows() == A_->rows(), "block CG: the preconditioner was set up for another matrix (order ",
                M->rows(), ", not ", A_->rows(), ")");
  grid_ = detail::tall_grid(A_->rows(), s);
  partials_ = std::max(detail::tall_partials(grid_, s), detail::tall_spmm_gram_partials(s));
  work_ = DeviceArray<double>(partials_);
  out_ = MappedArray<double>(out_size(s));
  if (fused_) plan(s);
}

template <class T>
DeviceArray<T> CudaBlockCgOps<T>::block() const {
  DeviceArray<T> b(std::size_t(size()) * s_);
  b.zero();
  return b;
}

template <class T>
const SpmmPlan<T>& CudaBlockCgOps<T>::plan(index_t w) {
  KRYSP_REQUIRE(fused_ != nullptr, "block CG: the operator has no SpMM plans (it is not a device matrix)");
  return fused_->spmm_plan(w, s_, s_);  // ld = s: the plans apply() takes for these blocks
}

template <class T>
std::string CudaBlockCgOps<T>::spmm_kernel() {
  return fused_ ? plan(s_).config().to_string() : std::string("operator");
}

template <class T>
void CudaBlockCgOps<T>::reduced(std::vector<double>& values) const {
  if (comm_.size() > 1) comm_.sum(values.data(), values.size());
}

template <class T>
std::vector<double> CudaBlockCgOps<T>::read_out(std::size_t count) const {
  std::vector<double> v(count);
  detail::wait_for_mapped_results();  // the reductions wrote into out_ directly
  std::copy(out_.data(), out_.data() + count, v.begin());
  reduced(v);
  return v;
}

template <class T>
detail::TallWorkspace CudaBlockCgOps<T>::workspace() {
  return {work_.data(), out_.data(), grid_, partials_};
}

template <class T>
void CudaBlockCgOps<T>::zero_columns(Block& X, const std::vector<char>& zero) {
  for (index_t j = 0; j < s_; ++j)
    if (zero[j]) detail::zero_column(X.data(), size(), s_, j);
}

template <class T>
void CudaBlockCgOps<T>::spmm(const Block& P, index_t w, Block& Q) {
  A_->apply_block(w, P.data(), s_, Q.data(), s_);
}

template <class T>
void CudaBlockCgOps<T>::residual(const Block& B, const Block& X, Block& R) {
  if (fused_) {
    R.copy_from(B);
    fused_->apply_block_scaled(s_, T(-1), X.data(), s_, T(1), R.data(), s_);  // R = B − A·X in one pass
    return;
  }
  A_->apply_block(s_, X.data(), s_, R.data(), s_);
  std::vector<double> identity(std::size_t(s_) * s_, 0.0);
  for (index_t j = 0; j < s_; ++j) identity[cm(j, j, s_)] = 1.0;
  combine(B, s_, identity, 1.0, -1.0, R, s_);  // R = B·I − A·X
}

template <class T>
std::vector<double> CudaBlockCgOps<T>::gram(const Block& X, index_t bx, const Block& Y, index_t by) {
  detail::tall_gram(size(), s_, X.data(), bx, Y.data(), by, workspace());
  return read_out(std::size_t(bx) * by);
}

std::optional<detail::SpmmGramVariant> spmm_gram_rule(const RowStats& stats, const SpmmConfig& plan, index_t w,
                                                      index_t ld) {
  constexpr index_t kMaxRow = 64;  // longest row the fused kernel takes (it has no nonzero balancing)
  if (is_nnz_balanced(plan.algorithm) || stats.max_len > kMaxRow) return std::nullopt;
  const auto v = detail::spmm_gram_variants(w, ld);
  if (v.empty()) return std::nullopt;
  // A lane per column, the row bounds and pairs loaded ahead, registers capped for 4 blocks per
  // SM: the fastest of the variants measured (docs/tuning.md, "Fused SpMM and Gram"); capped for
  // 5 or 6 blocks, loading ahead spills.
  auto rank = [](const detail::SpmmGramVariant& x) {
    return (x.cols == 1 ? 4 : 0) + (x.prefetch ? 2 : 0) + (x.min_blocks == 4 ? 1 : 0);
  };
  const auto best = std::max_element(v.begin(), v.end(), [&](const auto& x, const auto& y) { return rank(x) < rank(y); });
  return *best;
}

template <class T>
typename CudaBlockCgOps<T>::SpmmGramChoice CudaBlockCgOps<T>::spmm_gram_choice(index_t w, const Block& P, Block& Q,
                                                                                 std::size_t out_offset) {
  if (auto it = spmm_gram_.find(w); it != spmm_gram_.end()) return it->second;
  if (!fused_) return spmm_gram_[w] = std::nullopt;  // no matrix to fuse with: the product, then the Gram kernel
  const auto& pl = plan(w);
  SpmmGramChoice c = spmm_gram_rule(pl.stats(), pl.config(), w, s_);
  if (plan_options_.select == SpmmPlanOptions::Select::Tune) {
    std::vector<SpmmGramChoice> cands{std::nullopt};
    for (const auto& v : detail::spmm_gram_variants(w, s_)) cands.push_back(v);
    std::vector<std::function<void()>> fns;
    for (const auto& cand : cands)
      fns.push_back([&, cand] { run_spmm_gram(cand, P, w, Q, out_offset); });
    const auto ms = time_device_interleaved_ms(fns, plan_options_.tune_warmup, plan_options_.tune_reps, 1.5, 3);
    c = cands[std::size_t(std::min_element(ms.begin(), ms.end()) - ms.begin())];
  }
  spmm_gram_[w] = c;
  return c;
}

template <class T>
void CudaBlockCgOps<T>::force_spmm_gram(index_t w, SpmmGramChoice choice) {
  if (choice) {
    KRYSP_REQUIRE(fused_ != nullptr, "block CG: a fused SpMM needs a device matrix, not a general operator");
    const auto v = detail::spmm_gram_variants(w, s_);
    KRYSP_REQUIRE(std::any_of(v.begin(), v.end(),
                              [&](const auto& x) { return x == *choice; }),
                  "block CG: fused SpMM variant ", choice->lanes, "x", choice->cols, " cannot serve width ", w,
                  " with ", s_, " columns");
  }
  spmm_gram_[w] = choice;
}

template <class T>
void CudaBlockCgOps<T>::run_spmm_gram(const SpmmGramChoice& c, const Block& P, index_t w, Block& Q,
                                      std::size_t out_offset) {
  auto ws = workspace();
  ws.out += out_offset;
  if (c) {
    detail::tall_spmm_gram(fused_->csr().device_view(), w, P.data(), s_, Q.data(), *c, ws);
  } else {
    spmm(P, w, Q);
    detail::tall_gram(size(), s_, P.data(), w, Q.data(), w, ws);
  }
}

template <class T>
std::vector<double> CudaBlockCgOps<T>::spmm_gram(const Block& P, index_t w, Block& Q) {
  const SpmmGramChoice c = spmm_gram_choice(w, P, Q);
  run_spmm_gram(c, P, w, Q);
  if (c) ++fused_passes_;
  return read_out(std::size_t(w) * w);
}

template <class T>
void CudaBlockCgOps<T>::precondition(const Block& R, index_t w, Block& Z) {
  if (M_) M_->apply_block(w, R.data(), s_, Z.data(), s_);
  else blk_.copy(size(), w, R.data(), s_, Z.data(), s_);
}

template <class T>
std::pair<std::vector<double>, std::vector<double>> CudaBlockCgOps<T>::gram2(const Block& X, index_t b,
                                                                              const Block& Y1, const Block& Y2) {
  const std::size_t bb = std::size_t(b) * b;
  auto ws = workspace();
  detail::tall_gram(size(), s_, X.data(), b, Y1.data(), b, ws);
  ws.out += bb;
  detail::tall_gram(size(), s_, X.data(), b, Y2.data(), b, ws);
  const auto out = read_out(2 * bb);
  return {std::vector<double>(out.begin(), out.begin() + bb), std::vector<double>(out.begin() + bb, out.end())};
}

template <class T>
void CudaBlockCgOps<T>::combine(const Block& X, index_t bx, const std::vector<double>& C, double alpha, double beta,
                                Block& Y, index_t by) {
  KRYSP_REQUIRE(C.size() == std::size_t(bx) * by, "block CG combine: ", C.size(), " coefficients for a ", bx, "x", by,
                " matrix");
  // Blocks of no rows (an empty rank) hold no storage, so their null pointers compare equal.
  KRYSP_REQUIRE(size() == 0 || X.data() != Y.data(), "block CG combine: Y aliases X");
  blk_.combine(size(), X.data(), s_, bx, C.data(), alpha, beta, Y.data(), s_, by);
}

template <class T>
detail::ZSource CudaBlockCgOps<T>::zsource() const {
  return !M_ ? detail::ZSource::Residual : inv_diag_ ? detail::ZSource::InverseDiagonal : detail::ZSource::Given;
}

template <class T>
std::pair<std::vector<double>, std::vector<double>> CudaBlockCgOps<T>::step(const Block& AP, index_t w,
                                                                             const std::vector<double>& xi, Block& Q,
                                                                             index_t wq, const std::vector<double>& Cq,
                                                                             Block& Z) {
  KRYSP_REQUIRE(xi.size() == std::size_t(w) * w && Cq.size() == std::size_t(wq) * w && wq <= s_,
                "block CG step: ", xi.size(), " and ", Cq.size(), " coefficients for width ", w, " from ", wq);
  using detail::ZSource;
  const ZSource zsrc = zsource();
  const auto ws = workspace();
  if (detail::tall_step_grams_fused(s_)) {
    if (zsrc == ZSource::Given) {  // W first (all rows), then Z = M⁻¹·W, then the products
      detail::tall_step(size(), s_, w, AP.data(), xi.data(), Q.data(), wq, Cq.data(), zsrc, nullptr, nullptr, true,
                        false, ws);
      precondition(Q, w, Z);
      detail::tall_step(size(), s_, w, nullptr, nullptr, Q.data(), w, nullptr, zsrc, nullptr, Z.data(), false, true,
                        ws);
    } else {
      detail::tall_step(size(), s_, w, AP.data(), xi.data(), Q.data(), wq, Cq.data(), zsrc, inv_diag_, nullptr, true,
                        true, ws);
    }
    const std::size_t ww = std::size_t(w) * w;
    const auto out = read_out(2 * ww);
    return {std::vector<double>(out.begin(), out.begin() + ww), std::vector<double>(out.begin() + ww, out.end())};
  }
  if (detail::tall_steps_fit(s_)) {
    detail::tall_step(size(), s_, w, AP.data(), xi.data(), Q.data(), wq, Cq.data(), zsrc, inv_diag_, Z.data(), true,
                      false, ws);
    if (zsrc == ZSource::Given) precondition(Q, w, Z);
  } else {
    if (spare_.size() == 0) spare_ = block();
    combine(Q, wq, Cq, 1.0, 0.0, spare_, w);
    combine(AP, w, xi, -1.0, 1.0, spare_, w);
    std::swap(Q, spare_);
    precondition(Q, w, Z);
  }
  return gram2(Q, w, Z, Q);
}

template <class T>
void CudaBlockCgOps<T>::rotate(const Block& Q, const Block& Z, Block& P, Block& X, index_t w, index_t w2,
                               const std::vector<double>& Cw, const std::vector<double>& Tt,
                               const std::vector<double>& Cx) {
  KRYSP_REQUIRE(Cw.size() == std::size_t(w) * w2 && Tt.size() == std::size_t(w) * w2 &&
                    Cx.size() == std::size_t(w) * s_ && w2 <= w,
                "block CG rotate: ", Cw.size(), ", ", Tt.size(), " and ", Cx.size(), " coefficients for ", w, " x ",
                w2);
  if (detail::tall_steps_fit(s_)) {
    // Z as step() left it: from W on the fly up to 8 columns (unless M filled it), filled beyond
    const detail::ZSource zsrc = detail::tall_step_grams_fused(s_) ? zsource() : detail::ZSource::Given;
    detail::tall_rotate(size(), s_, w, w2, Q.data(), zsrc, inv_diag_, Z.data(), P.data(), X.data(), Cw.data(),
                        Tt.data(), Cx.data(), workspace());
    return;
  }
  combine(P, w, Cx, 1.0, 1.0, X, s_);
  if (w2 == 0) return;
  if (spare_.size() == 0) spare_ = block();
  combine(P, w, Tt, 1.0, 0.0, spare_, w2);
  combine(Z, w, Cw, 1.0, 1.0, spare_, w2);
  std::swap(P, spare_);
}

template class CudaBlockCgOps<double>;

}  // namespace krysp
