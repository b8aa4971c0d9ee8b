#include "krysp/solvers/cuda/cuda_eig_ops.hpp"

#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/solvers/cuda/device_operator.hpp"
#include "krysp/solvers/cuda/eig_kernels.hpp"
#include "krysp/solvers/lobpcg_result.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

static_assert(detail::kEigMaxColumns == kMaxLobpcgBlock,
              "the residual kernel must take every block size LOBPCG allows");

namespace {
std::shared_ptr<const LinearOperator<double>> device_operator(const CsrMatrix<double>* A, const SpmmPlanOptions& spmm) {
  // LOBPCG applies no SpMV: the operator's SpMV plan is left to first use (never).
  if (!A) return nullptr;
  return std::make_shared<MatrixOperator<double>>(MatrixOperator<double>::device(*A, nullptr, spmm));
}
}  // namespace

CudaEigOps::CudaEigOps(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const Preconditioner<double>* M,
                       index_t max_cols, const SpmmPlanOptions& spmm)
    : CudaEigOps(device_operator(&A, spmm), device_operator(B, spmm), M, max_cols, Communicator(), spmm, 0) {
  KRYSP_REQUIRE(!M || M->matches(A) || (B && M->matches(*B)),
                "CudaEigOps: the preconditioner was set up for another matrix");
}

CudaEigOps::CudaEigOps(const LinearOperator<double>& A, const LinearOperator<double>* B,
                       const Preconditioner<double>* M, index_t max_cols, const Communicator& comm,
                       const SpmmPlanOptions& spmm, std::int64_t first_row)
    : CudaEigOps(detail::borrowed(A), B ? detail::borrowed(*B) : nullptr, M, max_cols, comm, spmm, first_row) {}

CudaEigOps::CudaEigOps(std::shared_ptr<const LinearOperator<double>> A, std::shared_ptr<const LinearOperator<double>> B,
                       const Preconditioner<double>* M, index_t max_cols, const Communicator& comm,
                       const SpmmPlanOptions& spmm, std::int64_t first_row)
    : A_(std::move(A)), B_(std::move(B)), fused_a_(detail::fused_passes(*A_)),
      fused_b_(B_ ? detail::fused_passes(*B_) : nullptr), M_(M), comm_(comm), first_row_(first_row),
      spmm_(spmm), blk_(max_cols) {
  detail::require_device_operator("CudaEigOps", *A_, comm_, true);
  global_rows_ = comm_.sum(std::int64_t(A_->rows()));
  KRYSP_REQUIRE(!M || M->space() == MemorySpace::Device, "CudaEigOps: a ", to_string(M->space()),
                " preconditioner given to the GPU backend");
  KRYSP_REQUIRE(!M || M->rows() == A_->rows(), "CudaEigOps: the preconditioner has order ", M->rows(), ", A ",
                A_->rows());
  KRYSP_REQUIRE(!B_ || (B_->rows() == A_->rows() && B_->cols() == A_->cols()), "CudaEigOps: B is ", B_->rows(), "x",
                B_->cols(), ", A is ", A_->rows(), "x", A_->cols());
  KRYSP_REQUIRE(!B_ || B_->space() == MemorySpace::Device, "CudaEigOps: a ", to_string(B_->space()),
                " B given to the GPU backend");
  const index_t widest = std::min<index_t>(max_cols, kMaxLobpcgBlock);
  grid_ = detail::eig_residual_grid(A_->rows(), widest);  // the most blocks any b ≤ widest uses
  partials_ = DeviceArray<double>(std::size_t(grid_) * 2 * widest);
  sums_ = DeviceArray<double>(2 * std::size_t(widest) + 1);  // + the residual kernel's ticket (zero at rest)
  sums_.zero();
}

CudaEigOps::~CudaEigOps() = default;

void CudaEigOps::upload(const double* host, double* dst, std::size_t count) const {
  if (count > 0) detail::copy_to_device(dst, host, count * sizeof(double));
}

void CudaEigOps::download(const double* src, double* host, std::size_t count) const {
  if (count > 0) detail::copy_to_host(host, src, count * sizeof(double));
}

const SpmmPlan<double>& CudaEigOps::plan(std::map<index_t, SpmmPlan<double>>& cache, const CsrMatrix<double>& M,
                                         index_t N) {
  auto it = cache.find(N);
  if (it == cache.end()) it = cache.emplace(N, SpmmPlan<double>(M, N, spmm_)).first;
  return it->second;
}

void CudaEigOps::apply(const LinearOperator<double>& Op, const FusedOperator<double>* fused,
                       std::map<index_t, SpmmPlan<double>>& plans, index_t N, const double* X, index_t ldx, double* Y,
                       index_t ldy) {
  if (N <= 0) return;
  if (!fused) return Op.apply_block(N, X, ldx, Y, ldy);
  // One plan per width, whatever the leading dimensions (LOBPCG's blocks have several): as the
  // ops made them before the operator layer, so the kernels and their tuning stay the same.
  plan(plans, fused->csr(), N).apply(fused->csr(), 1.0, X, ldx, 0.0, Y, ldy);
  ++fused_passes_;
}

void CudaEigOps::apply_a(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) {
  apply(*A_, fused_a_, plans_a_, N, X, ldx, Y, ldy);
}

void CudaEigOps::apply_b(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) {
  KRYSP_REQUIRE(B_ != nullptr, "CudaEigOps::apply_b: the problem is not generalized");
  apply(*B_, fused_b_, plans_b_, N, X, ldx, Y, ldy);
}

void CudaEigOps::precondition(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) {
  if (N == 0) return;
  if (M_)
    M_->apply_block(N, R, ldr, Z, ldz);
  else
    blk_.copy(size(), N, R, ldr, Z, ldz);
}

void CudaEigOps::residuals(index_t b, const double* AX, index_t ldax, const double* BX, index_t ldbx,
                           const double* X, index_t ldx, const double* lambda, const index_t* dest, double* R,
                           index_t ldr, double* rr, double* xx) {
  KRYSP_REQUIRE(2 * std::size_t(b) < sums_.size(), "CudaEigOps::residuals: b = ", b, " exceeds the workspace");
  const int grid = detail::eig_residual_grid(size(), b);
  unsigned* ticket = reinterpret_cast<unsigned*>(sums_.data() + (sums_.size() - 1));
  detail::launch_eig_residuals(size(), b, AX, ldax, BX, ldbx, X, ldx, lambda, dest, R, ldr, partials_.data(), ticket,
                               grid, sums_.data());
  std::vector<double> s(2 * std::size_t(b));
  sums_.download(s.data(), s.size());  // synchronises
  reduced(s.data(), s.size());
  std::copy(s.begin(), s.begin() + b, rr);
  std::copy(s.begin() + b, s.end(), xx);
}

void CudaEigOps::warm_up_block_products(index_t N) {
  // CUDA loads a kernel on its first launch (lazy module loading): the first Gram matrices and
  // combinations of a process took tens of milliseconds and fell into the first iterations.
  // Running the shapes of a block of N here moves that into the setup.
  if (N < 1 || size() == 0) return;
  const index_t L = 3 * N;
  Block S(std::size_t(size()) * L), T(std::size_t(size()) * L);
  S.zero();
  std::vector<double> G1(std::size_t(L) * L), G2(G1.size()), C(G1.size(), 0.0);
  // Through blk_, not the ops' gram(): dummy products are not summed over the ranks.
  for (index_t m : {N, 2 * N, L}) {
    blk_.gram2(size(), S.data(), L, m, S.data(), L, S.data(), L, m, G1.data(), G2.data());
    blk_.gram(size(), S.data(), L, m, S.data(), L, N, G1.data());
    blk_.combine(size(), S.data(), L, m, C.data(), 1.0, 0.0, T.data(), L, N);
    blk_.combine(size(), S.data(), L, m, C.data(), -1.0, 1.0, T.data(), L, N);
  }
  blk_.gram_pair(size(), S.data(), L, N, S.data(), L, N, G1.data(), S.data(), L, 1, S.data(), L, 1, G2.data());
}

void CudaEigOps::fill_random(index_t cols, double* X, index_t ldx, std::uint64_t seed, index_t first_col) {
  detail::launch_fill_random(size(), cols, X, ldx, seed, first_row_, first_col);
}

std::string CudaEigOps::spmm_kernel(index_t N) const {
  if (!fused_a_) return "operator";
  auto it = plans_a_.find(N);
  return it == plans_a_.end() ? std::string() : it->second.config().to_string();
}

}  // namespace krysp
