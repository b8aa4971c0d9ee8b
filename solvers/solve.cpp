#include "krysp/solvers/solve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/zero_fill.hpp"
#include "krysp/solvers/block_cg.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"
#include "krysp/solvers/executor.hpp"
#include "krysp/solvers/problem_scale.hpp"
#include "krysp/sparse/symmetry.hpp"

namespace krysp {

const char* to_string(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Cuda: return "cuda";
    case Backend::Host: return "host";
  }
  return "unknown";
}

Backend parse_backend(const std::string& name) {
  if (name == "auto") return Backend::Auto;
  if (name == "cuda") return Backend::Cuda;
  if (name == "host") return Backend::Host;
  KRYSP_THROW(InputError, "unknown backend '", name, "' (expected auto, cuda or host)");
}

Backend resolve_backend(Backend requested) {
  const bool gpu = cuda_device_available();
  if (requested == Backend::Cuda && !gpu)
    KRYSP_THROW(DeviceError, "--backend cuda was requested but no CUDA device is available");
  if (requested == Backend::Auto) return gpu ? Backend::Cuda : Backend::Host;
  return requested;
}

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Column-major n × s (the API's layout) to and from row-major (the SpMM kernels' layout).
std::vector<double> to_row_major(const std::vector<double>& cmaj, index_t n, index_t s) {
  std::vector<double> r(cmaj.size());
  for (index_t j = 0; j < s; ++j)
    for (index_t i = 0; i < n; ++i) r[std::size_t(i) * s + j] = cmaj[std::size_t(j) * n + i];
  return r;
}
void to_col_major(const double* rmaj, index_t n, index_t s, std::vector<double>& cmaj) {
  for (index_t j = 0; j < s; ++j)
    for (index_t i = 0; i < n; ++i) cmaj[std::size_t(j) * n + i] = rmaj[std::size_t(i) * s + j];
}

// The caller's column-major blocks in and out of the ops' row-major ones: on the host by loops,
// on the GPU transposed on the device (a zero X0 costs no transfer: ops.block() is zero already).
void load_blocks(const std::vector<double>& B, const std::vector<double>& X, bool, index_t n, index_t s,
                 HostBlockCgOps<double>::Block& vb, HostBlockCgOps<double>::Block& vx) {
  const auto b = to_row_major(B, n, s), x = to_row_major(X, n, s);
  std::copy(b.begin(), b.end(), vb.data());
  std::copy(x.begin(), x.end(), vx.data());
}
void load_blocks(const std::vector<double>& B, const std::vector<double>& X, bool zero_x0, index_t n, index_t s,
                 CudaBlockCgOps<double>::Block& vb, CudaBlockCgOps<double>::Block& vx) {
  DeviceArray<double> cmaj(B.size());
  cmaj.upload(B.data(), B.size());
  detail::transpose(cmaj.data(), s, n, vb.data());
  if (!zero_x0) {
    cmaj.upload(X.data(), X.size());
    detail::transpose(cmaj.data(), s, n, vx.data());
  }
}
void store_block(const HostBlockCgOps<double>::Block& vx, index_t n, index_t s, std::vector<double>& X) {
  to_col_major(vx.data(), n, s, X);
}
void store_block(const CudaBlockCgOps<double>::Block& vx, index_t n, index_t s, std::vector<double>& X) {
  DeviceArray<double> cmaj(X.size());
  detail::transpose(vx.data(), n, s, cmaj.data());
  cmaj.download(X.data(), X.size());
}
std::string spmm_kernel(HostBlockCgOps<double>&) { return "host-reference"; }
std::string spmm_kernel(CudaBlockCgOps<double>& ops) { return ops.spmm_kernel(); }

/// Block CG on one backend. A zero X0 on the GPU is not uploaded, and X is sized while the
/// device iterates (base/zero_fill.hpp); on the host solve_block() sized it already.
template <class Exec>
BlockSolveReport run_block(const Exec& ex, const CsrMatrix<double>& A, const std::vector<double>& B, index_t s,
                           std::vector<double>& X, bool zero_x0, const SolveOptions& o, Clock::time_point t0) {
  const auto Aop = ex.matrix(A);
  const auto M = ex.preconditioner(*Aop, o.precond);
  typename Exec::BlockCgOps ops(*Aop, s, M.get());
  auto vb = ops.block(), vx = ops.block();
  load_blocks(B, X, zero_x0, A.rows(), s, vb, vx);
  std::optional<ZeroFill> sized;
  if (zero_x0 && Exec::backend == Backend::Cuda) sized.emplace(X, B.size());
  BlockSolveReport rep;
  ex.synchronize();
  rep.setup_seconds = since(t0);
  static_cast<BlockSolveResult&>(rep) = block_cg(ops, vb, vx, o.cg);
  rep.preconditioner = M ? M->summary() : "none";
  if (sized) sized->wait();
  store_block(vx, A.rows(), s, X);
  for (index_t j = 0; j < s; ++j) {
    ColumnResult& c = rep.columns[std::size_t(j)];
    if (c.status == SolveStatus::Stagnated)
      c.residual_floor = residual_rounding_floor(A, X.data() + std::size_t(j) * std::size_t(A.rows()), c.b_norm);
  }
  rep.backend = to_string(Exec::backend);
  rep.device = ex.device();
  rep.spmm_kernel = spmm_kernel(ops);
  return rep;
}
}  // namespace

namespace {
/// s columns as consecutive block CG solves of at most o.block_group columns (SolveOptions):
/// B and X are column-major, so a group is a contiguous slice. Per-column results are kept;
/// iterations is the largest of the groups', times add up.
BlockSolveReport solve_block_groups(const CsrMatrix<double>& A, const std::vector<double>& B, index_t s,
                                    std::vector<double>& X, bool zero_x0, const SolveOptions& o) {
  const std::size_t n = std::size_t(A.rows());
  BlockSolveReport all;
  for (index_t j0 = 0; j0 < s; j0 += o.block_group) {
    const index_t w = std::min(o.block_group, s - j0);
    const auto first = std::ptrdiff_t(std::size_t(j0) * n), last = std::ptrdiff_t(std::size_t(j0 + w) * n);
    const std::vector<double> Bg(B.begin() + first, B.begin() + last);
    std::vector<double> Xg;  // empty: a zero initial guess, not uploaded
    if (!zero_x0) Xg.assign(X.begin() + first, X.begin() + last);
    BlockSolveReport g = solve_block(A, Bg, w, Xg, o);
    std::copy(Xg.begin(), Xg.end(), X.begin() + first);
    if (j0 == 0) {
      static_cast<BlockSolveReport&>(all) = g;
      continue;
    }
    all.columns.insert(all.columns.end(), g.columns.begin(), g.columns.end());
    all.iterations = std::max(all.iterations, g.iterations);
    all.seconds += g.seconds;
    all.setup_seconds += g.setup_seconds;
    if (all.spmm_kernel.find(g.spmm_kernel) == std::string::npos) all.spmm_kernel += "," + g.spmm_kernel;
  }
  return all;
}
}  // namespace

BlockSolveReport solve_block(const CsrMatrix<double>& A, const std::vector<double>& B, index_t s,
                             std::vector<double>& X, const SolveOptions& o) {
  const auto t0 = Clock::now();
  KRYSP_REQUIRE(A.rows() == A.cols(), "solve_block: matrix is ", A.rows(), "x", A.cols(), ", not square");
  KRYSP_REQUIRE(A.rows() > 0, "block CG: the matrix is empty (0 x 0): nothing to solve");
  KRYSP_REQUIRE(s >= 1 && s <= 64, "solve_block: ", s, " right-hand sides (1 to 64 supported)");
  if (o.check_symmetry) {
    const std::string why = symmetry_violation_cached(A, "A");
    KRYSP_REQUIRE(why.empty(), "block CG: ", why, " (CG needs a symmetric positive definite matrix)");
  }
  const std::size_t ns = std::size_t(A.rows()) * s;
  KRYSP_REQUIRE(B.size() == ns, "solve_block: B has ", B.size(), " entries, expected n*s = ", A.rows(), "*", s);
  const bool zero_x0 = X.empty();
  KRYSP_REQUIRE(zero_x0 || X.size() == ns, "solve_block: X0 has ", X.size(), " entries, expected n*s = ", A.rows(),
                "*", s);
  KRYSP_REQUIRE(o.block_group >= 0, "solve_block: block_group = ", o.block_group, " (0 or a positive width)");
  // problem_scale.hpp: solved exactly as A·2^−a_exp and column j of B times 2^−e_j. Each column
  // has its own exponent: one for columns 1e200 apart flushed the small one to zero (x = 0,
  // "converged").
  const std::size_t n = std::size_t(A.rows());
  const int a_exp = matrix_scale_exponent(A);
  std::vector<int> e(static_cast<std::size_t>(s), 0);
  for (std::size_t j = 0; j < e.size(); ++j) e[j] = scale_exponent(B.data() + j * n, n);
  if (a_exp != 0 || std::any_of(e.begin(), e.end(), [](int x) { return x != 0; })) {
    std::vector<double> Bs = B;
    if (!zero_x0)
      for (std::size_t j = 0; j < e.size(); ++j) scale_columns(X, n, j, a_exp - e[j]);
    for (std::size_t j = 0; j < e.size(); ++j) scale_columns(Bs, n, j, -e[j]);
    SolveOptions os = o;
    os.cg.atol = std::ldexp(o.cg.atol, -*std::max_element(e.begin(), e.end()));  // the strictest column's
    BlockSolveReport rep = solve_block(a_exp != 0 ? scaled_matrix(A, a_exp) : A, Bs, s, X, os);
    for (std::size_t j = 0; j < rep.columns.size(); ++j) {
      const bool fits = survives_scaling(X.data() + j * n, n, e[j] - a_exp);
      scale_columns(X, n, j, e[j] - a_exp);
      unscale_result(rep.columns[j], e[j], fits);
    }
    return rep;
  }
  const Backend backend = resolve_backend(o.backend);
  const bool grouped = o.block_group > 0 && s > o.block_group;
  // The GPU path sizes a zero X itself, while the device iterates; the others need it now.
  if (zero_x0 && (backend != Backend::Cuda || grouped)) X.assign(ns, 0.0);
  if (grouped) return solve_block_groups(A, B, s, X, zero_x0, o);
  if (backend == Backend::Cuda) return run_block(CudaExecutor{o.plan, {}, true}, A, B, s, X, zero_x0, o, t0);
  return run_block(HostExecutor{}, A, B, s, X, zero_x0, o, t0);
}

double residual_rounding_floor(const CsrMatrix<double>& A, const double* x, double b_norm) {
  if (!(b_norm > 0)) return 0;
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  double sum = 0;
  for (index_t i = 0; i < A.rows(); ++i) {
    double ax = 0;  // (|A|·|x|)_i
    for (index_t k = rp(i); k < rp(i + 1); ++k) ax += std::abs(va(k)) * std::abs(x[std::size_t(ci(k))]);
    sum += ax * ax;
  }
  return std::numeric_limits<double>::epsilon() * std::sqrt(sum) / b_norm;
}

SolveReport solve(const CsrMatrix<double>& A, const std::vector<double>& b, std::vector<double>& x,
                  const SolveOptions& o) {
  CgSolver solver(A, o);
  return solver.solve(b, x);
}

SolveReport solve_device(const CsrMatrix<double>& A, const double* d_b, double* d_x, index_t n,
                         const SolveOptions& o, bool zero_x0) {
  CgSolver solver(A, o);
  return solver.solve_device(d_b, d_x, n, zero_x0);
}

}  // namespace krysp
