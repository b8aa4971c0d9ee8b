#include "krysp/solvers/host/host_eig_ops.hpp"

#include <algorithm>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/solvers/eig_random.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

namespace {
std::shared_ptr<const LinearOperator<double>> not_owned(const LinearOperator<double>* op) {
  return op ? std::shared_ptr<const LinearOperator<double>>(std::shared_ptr<void>(), op) : nullptr;
}
std::shared_ptr<const LinearOperator<double>> host_operator(const CsrMatrix<double>* A) {
  return A ? std::make_shared<MatrixOperator<double>>(MatrixOperator<double>::host(*A)) : nullptr;
}
}  // namespace

HostEigOps::HostEigOps(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const Preconditioner<double>* M)
    : A_(host_operator(&A)), B_(host_operator(B)), M_(M), global_rows_(A.rows()) {
  KRYSP_REQUIRE(!M || M->space() == MemorySpace::Host, "HostEigOps: a ", to_string(M->space()),
                " preconditioner given to the host backend");
}

HostEigOps::HostEigOps(const LinearOperator<double>& A, const LinearOperator<double>* B,
                       const Preconditioner<double>* M, const Communicator& comm, std::int64_t first_row)
    : A_(not_owned(&A)),
      B_(not_owned(B)),
      M_(M),
      comm_(comm),
      first_row_(first_row),
      global_rows_(comm.sum(std::int64_t(A.rows()))) {
  KRYSP_REQUIRE(A.space() == MemorySpace::Host && (!B || B->space() == MemorySpace::Host),
                "HostEigOps: a device operator given to the host backend");
  KRYSP_REQUIRE(!B || (B->rows() == A.rows() && B->cols() == A.cols()), "HostEigOps: B is ", B->rows(), "x",
                B->cols(), ", A ", A.rows(), "x", A.cols());
  KRYSP_REQUIRE(!M || M->space() == MemorySpace::Host, "HostEigOps: a ", to_string(M->space()),
                " preconditioner given to the host backend");
}

void HostEigOps::gram(const double* X, index_t ldx, index_t bx, const double* Y, index_t ldy, index_t by,
                      double* C) const {
  // C(:, j) += y_kj · x_k for every row k: the inner loop runs over contiguous x_k and C(:, j),
  // four rows at a time (four multiply-adds per load and store of C).
  std::fill(C, C + std::size_t(bx) * by, 0.0);
  const index_t n = size(), n4 = n - n % 4;
  for (index_t k = 0; k < n4; k += 4) {
    const double* x0 = X + std::size_t(k) * ldx;
    const double *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
    const double* y0 = Y + std::size_t(k) * ldy;
    const double *y1 = y0 + ldy, *y2 = y1 + ldy, *y3 = y2 + ldy;
    for (index_t j = 0; j < by; ++j) {
      const double a0 = y0[j], a1 = y1[j], a2 = y2[j], a3 = y3[j];
      double* c = C + std::size_t(j) * bx;
      for (index_t i = 0; i < bx; ++i) c[i] += x0[i] * a0 + x1[i] * a1 + x2[i] * a2 + x3[i] * a3;
    }
  }
  for (index_t k = n4; k < n; ++k) {
    const double* x = X + std::size_t(k) * ldx;
    const double* y = Y + std::size_t(k) * ldy;
    for (index_t j = 0; j < by; ++j) {
      const double yj = y[j];
      double* c = C + std::size_t(j) * bx;
      for (index_t i = 0; i < bx; ++i) c[i] += x[i] * yj;
    }
  }
  comm_.sum(C, std::size_t(bx) * by);
}

void HostEigOps::combine(const double* X, index_t ldx, index_t bx, const double* C, double alpha, double beta,
                         double* Y, index_t ldy, index_t by) const {
  // Row k of Y is alpha·Σ_i x_ki·C(i, :) + beta·y_k: with C transposed to row-major, each term is
  // a contiguous axpy over the by columns (no floating-point reduction for the compiler to keep).
  std::vector<double> Ct(std::size_t(bx) * by), acc(by);
  for (index_t i = 0; i < bx; ++i)
    for (index_t j = 0; j < by; ++j) Ct[std::size_t(i) * by + j] = alpha * C[cm(i, j, bx)];
  for (index_t k = 0; k < size(); ++k) {
    const double* x = X + std::size_t(k) * ldx;
    double* y = Y + std::size_t(k) * ldy;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (index_t i = 0; i < bx; ++i) {
      const double xi = x[i];
      const double* ct = Ct.data() + std::size_t(i) * by;
      for (index_t j = 0; j < by; ++j) acc[j] += xi * ct[j];
    }
    if (beta == 0)
      for (index_t j = 0; j < by; ++j) y[j] = acc[j];
    else
      for (index_t j = 0; j < by; ++j) y[j] = acc[j] + beta * y[j];
  }
}

void HostEigOps::apply_a(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const {
  if (N > 0) A_->apply_block(N, X, ldx, Y, ldy);
}

void HostEigOps::apply_b(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const {
  KRYSP_REQUIRE(B_ != nullptr, "HostEigOps::apply_b: the problem is not generalized");
  if (N > 0) B_->apply_block(N, X, ldx, Y, ldy);
}

void HostEigOps::precondition(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) const {
  if (N == 0) return;
  if (M_)
    M_->apply_block(N, R, ldr, Z, ldz);
  else
    blk_.copy(size(), N, R, ldr, Z, ldz);
}

void HostEigOps::residuals(index_t b, const double* AX, index_t ldax, const double* BX, index_t ldbx,
                           const double* X, index_t ldx, const double* lambda, const index_t* dest, double* R,
                           index_t ldr, double* rr, double* xx) const {
  std::fill(rr, rr + b, 0.0);
  std::fill(xx, xx + b, 0.0);
  for (index_t i = 0; i < size(); ++i) {
    const double* ax = AX + std::size_t(i) * ldax;
    const double* bx = BX + std::size_t(i) * ldbx;
    const double* x = X + std::size_t(i) * ldx;
    double* r = R + std::size_t(i) * ldr;
    for (index_t j = 0; j < b; ++j) {
      const double e = ax[j] - lambda[j] * bx[j];  // r_j = A·x_j − λ_j·B·x_j
      rr[j] += e * e;
      xx[j] += x[j] * x[j];
      if (dest[j] >= 0) r[dest[j]] = e;
    }
  }
  if (comm_.size() > 1) {  // one message for both norms
    std::vector<double> both(rr, rr + b);
    both.insert(both.end(), xx, xx + b);
    comm_.sum(both.data(), both.size());
    std::copy(both.begin(), both.begin() + b, rr);
    std::copy(both.begin() + b, both.end(), xx);
  }
}

void HostEigOps::fill_random(index_t cols, double* X, index_t ldx, std::uint64_t seed, index_t first_col) const {
  for (index_t i = 0; i < size(); ++i)
    for (index_t j = 0; j < cols; ++j) X[std::size_t(i) * ldx + j] = random_block_entry(seed, first_row_ + i, first_col + j);
}

}  // namespace krysp
