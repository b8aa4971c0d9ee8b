#include "krysp/solvers/distributed_solve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/device_dist_chebyshev.hpp"
#include "krysp/solvers/distributed_checks.hpp"
#include "krysp/solvers/block_cg.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/cuda/cuda_block_cg_ops.hpp"
#include "krysp/solvers/cuda/cuda_cg_ops.hpp"
#include "krysp/solvers/host/host_block_cg_ops.hpp"
#include "krysp/solvers/host/host_cg_ops.hpp"
#include "krysp/sparse/dist_csr_device.hpp"

namespace krysp {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What every distributed solve refuses up front, agreed over the ranks.
void check_request(const DistCsrMatrix& A, const SolveOptions& o, const char* who) {
  A.comm().collective([&] {
    detail::check_distributed_backend(o.backend, who);
    KRYSP_REQUIRE(A.global_rows() > 0, who, ": the matrix is empty (0 x 0): nothing to solve");
    detail::check_distributed_precond(o.precond, who);
    validate(o.precond);
  });
}

// Entries of v (this rank's rows × cols, column-major) must be finite: a NaN on one rank would
// otherwise surface as a breakdown far from its cause.
void check_finite(const DistCsrMatrix& A, const std::vector<double>& v, const char* what) {
  A.comm().collective([&] {
    const std::size_t m = static_cast<std::size_t>(A.rows());
    for (std::size_t k = 0; k < v.size(); ++k)
      KRYSP_REQUIRE(std::isfinite(v[k]), what, " entry (", A.first_row() + std::int64_t(k % m) + 1, ",",
                    k / m + 1, ") = ", v[k], " is not finite");
  });
}

// The preconditioner of this rank's diagonal block, or Chebyshev on the whole distributed A (its
// set-up is collective and agrees its own failures); a failure on any rank is agreed.
std::unique_ptr<Preconditioner<double>> local_preconditioner(const DistCsrMatrix& A, const SolveOptions& o) {
  if (o.precond.kind == PrecondKind::Chebyshev) return std::make_unique<DistChebyshev>(A, o.precond);
  std::unique_ptr<Preconditioner<double>> M;
  A.comm().collective([&] { M = make_host_preconditioner(A.local_block(), o.precond); });
  return M;
}

// The GPU side of a solve: A on this rank's GPU (the current device: one rank per GPU), the
// preconditioner of its diagonal block there (Jacobi and block Jacobi need no plan of A's), or
// Chebyshev on the whole distributed A (its set-up is collective and agrees its own failures).
struct DeviceSide {
  explicit DeviceSide(const DistCsrMatrix& A, const SolveOptions& o) : op(A) {
    if (o.precond.kind == PrecondKind::Chebyshev) {
      M = std::make_unique<DeviceDistChebyshev>(op, o.precond);
      return;
    }
    A.comm().collective([&] { M = make_device_preconditioner(A.local_block(), op.local_plan(), o.precond); });
  }
  std::string kernel(const DistCsrMatrix& A) const {
    return (op.local_plan().valid() ? op.local_plan().config().to_string() : std::string("no local entries")) + ", " +
           std::to_string(A.comm().size()) + " ranks" + (A.comm().size() > 1 ? ", " + op.transport() : std::string());
  }
  DeviceDistCsr op;
  std::unique_ptr<Preconditioner<double>> M;
};

std::string precond_name(const SolveOptions& o, const Preconditioner<double>* M) {
  return o.precond.kind == PrecondKind::Amg && M ? detail::distributed_amg_name(*M) : to_string(o.precond.kind);
}

// cg() and block_cg() default the iteration cap from ops.size(), which is this rank's rows here:
// set it from the global order, so that every rank stops at the same iteration.
CgOptions global_cap(CgOptions cg, std::int64_t n) {
  if (cg.max_iters <= 0) cg.max_iters = index_t(std::min<std::int64_t>(kMaxIndex, std::max<std::int64_t>(1000, 10 * n)));
  return cg;
}
}  // namespace

SolveReport solve_distributed(const DistCsrMatrix& A, const std::vector<double>& b, std::vector<double>& x,
                              const SolveOptions& o) {
  const auto t0 = Clock::now();
  check_request(A, o, "CG");
  const std::size_t m = static_cast<std::size_t>(A.rows());
  A.comm().collective([&] {
    KRYSP_REQUIRE(b.size() == m, "solve_distributed: b has ", b.size(), " entries, this rank has ", m, " rows");
    KRYSP_REQUIRE(x.empty() || x.size() == m, "solve_distributed: x0 has ", x.size(), " entries, this rank has ", m,
                  " rows");
  });
  check_finite(A, b, "b");
  check_finite(A, x, "x0");
  // problem_scale.hpp: far from 1, solved exactly as A·2^−a_exp, b·2^−b_exp, as one process does.
  const int a_exp = detail::distributed_scale_exponent(A), b_exp = detail::distributed_scale_exponent(A.comm(), b);
  if (a_exp != 0 || b_exp != 0) {
    std::vector<double> bs = b;
    scale_by_power_of_two(bs, -b_exp);
    scale_by_power_of_two(x, a_exp - b_exp);
    SolveOptions os = o;
    os.cg.atol = std::ldexp(o.cg.atol, -b_exp);
    SolveReport rep = solve_distributed(a_exp != 0 ? A.scaled(-a_exp) : A, bs, x, os);
    const bool fits = detail::survives_scaling_everywhere(A.comm(), x, b_exp - a_exp);
    scale_by_power_of_two(x, b_exp - a_exp);
    unscale_result(rep, b_exp, fits);
    return rep;
  }
  if (x.empty()) x.assign(m, 0.0);
  if (o.backend == Backend::Cuda) {
    const DeviceSide dev(A, o);
    std::unique_ptr<CudaCgOps<double>> ops;
    A.comm().collective([&] { ops = std::make_unique<CudaCgOps<double>>(dev.op, dev.M.get(), A.comm()); });
    auto vb = ops->vector(), vx = ops->vector();
    if (m > 0) {
      vb.upload(b.data(), m);
      vx.upload(x.data(), m);
    }
    SolveReport rep;
    rep.setup_seconds = since(t0);
    static_cast<SolveResult&>(rep) = cg(*ops, vb, vx, global_cap(o.cg, A.global_rows()));
    if (m > 0) vx.download(x.data(), m);
    rep.preconditioner = precond_name(o, dev.M.get());
    rep.backend = "cuda";
    rep.device = cuda_device_name();
    rep.spmv_kernel = dev.kernel(A);
    return rep;
  }
  const auto M = local_preconditioner(A, o);
  HostCgOps<double> ops(A, M.get(), A.comm());
  auto vb = ops.vector(), vx = ops.vector();
  std::copy(b.begin(), b.end(), vb.data());
  std::copy(x.begin(), x.end(), vx.data());
  SolveReport rep;
  rep.setup_seconds = since(t0);
  static_cast<SolveResult&>(rep) = cg(ops, vb, vx, global_cap(o.cg, A.global_rows()));
  std::copy(vx.data(), vx.data() + m, x.begin());
  rep.preconditioner = precond_name(o, M.get());
  rep.backend = "host";
  rep.device = "host";
  rep.spmv_kernel = "host-reference, " + std::to_string(A.comm().size()) + " ranks";
  return rep;
}

BlockSolveReport solve_block_distributed(const DistCsrMatrix& A, const std::vector<double>& B, index_t s,
                                         std::vector<double>& X, const SolveOptions& o) {
  const auto t0 = Clock::now();
  check_request(A, o, "block CG");
  const std::size_t m = static_cast<std::size_t>(A.rows()), ms = m * static_cast<std::size_t>(std::max(s, 0));
  A.comm().collective([&] {
    KRYSP_REQUIRE(s >= 1 && s <= 64, "solve_block_distributed: ", s, " right-hand sides (1 to 64 supported)");
    KRYSP_REQUIRE(o.block_group == 0, "solve_block_distributed: block_group = ", o.block_group,
                  " (groups are not distributed yet: 0 solves all columns at once)");
    KRYSP_REQUIRE(B.size() == ms, "solve_block_distributed: B has ", B.size(), " entries, expected rows*s = ", m, "*", s);
    KRYSP_REQUIRE(X.empty() || X.size() == ms, "solve_block_distributed: X0 has ", X.size(),
                  " entries, expected rows*s = ", m, "*", s);
  });
  check_finite(A, B, "B");
  check_finite(A, X, "X0");
  // As solve_block(): each column its own power of two, agreed over the ranks.
  const int a_exp = detail::distributed_scale_exponent(A);
  std::vector<int> e(static_cast<std::size_t>(s), 0);
  for (std::size_t j = 0; j < e.size(); ++j) {
    const double mj = A.comm().max(max_abs(B.data() + j * m, m));
    e[j] = scale_exponent(&mj, 1);
  }
  if (a_exp != 0 || std::any_of(e.begin(), e.end(), [](int x) { return x != 0; })) {
    std::vector<double> Bs = B;
    for (std::size_t j = 0; j < e.size(); ++j) {
      scale_columns(Bs, m, j, -e[j]);
      scale_columns(X, m, j, a_exp - e[j]);
    }
    SolveOptions os = o;
    os.cg.atol = std::ldexp(o.cg.atol, -*std::max_element(e.begin(), e.end()));  // the strictest column's
    BlockSolveReport rep = solve_block_distributed(a_exp != 0 ? A.scaled(-a_exp) : A, Bs, s, X, os);
    for (std::size_t j = 0; j < rep.columns.size(); ++j) {
      const bool fits = A.comm().max(survives_scaling(X.data() + j * m, m, e[j] - a_exp) ? 0.0 : 1.0) == 0;
      scale_columns(X, m, j, e[j] - a_exp);
      unscale_result(rep.columns[j], e[j], fits);
    }
    return rep;
  }
  if (X.empty()) X.assign(ms, 0.0);
  if (o.backend == Backend::Cuda) {
    const DeviceSide dev(A, o);
    std::unique_ptr<CudaBlockCgOps<double>> ops;
    A.comm().collective([&] { ops = std::make_unique<CudaBlockCgOps<double>>(dev.op, s, dev.M.get(), A.comm()); });
    std::vector<double> rb(ms), rx(ms);  // column-major (the API's) to row-major (the ops')
    for (std::size_t j = 0; j < std::size_t(s); ++j)
      for (std::size_t i = 0; i < m; ++i) {
        rb[i * s + j] = B[j * m + i];
        rx[i * s + j] = X[j * m + i];
      }
    auto vb = ops->block(), vx = ops->block();
    if (ms > 0) {
      vb.upload(rb.data(), ms);
      vx.upload(rx.data(), ms);
    }
    BlockSolveReport rep;
    rep.setup_seconds = since(t0);
    static_cast<BlockSolveResult&>(rep) = block_cg(*ops, vb, vx, global_cap(o.cg, A.global_rows()));
    if (ms > 0) vx.download(rx.data(), ms);
    for (std::size_t j = 0; j < std::size_t(s); ++j)
      for (std::size_t i = 0; i < m; ++i) X[j * m + i] = rx[i * s + j];
    rep.preconditioner = precond_name(o, dev.M.get());
    rep.backend = "cuda";
    rep.device = cuda_device_name();
    rep.spmm_kernel = dev.kernel(A);
    return rep;
  }
  const auto M = local_preconditioner(A, o);
  HostBlockCgOps<double> ops(A, s, M.get(), A.comm());
  auto vb = ops.block(), vx = ops.block();
  for (std::size_t j = 0; j < std::size_t(s); ++j)  // column-major (the API's) to row-major (the ops')
    for (std::size_t i = 0; i < m; ++i) {
      vb(i * s + j) = B[j * m + i];
      vx(i * s + j) = X[j * m + i];
    }
  BlockSolveReport rep;
  rep.setup_seconds = since(t0);
  static_cast<BlockSolveResult&>(rep) = block_cg(ops, vb, vx, global_cap(o.cg, A.global_rows()));
  for (std::size_t j = 0; j < std::size_t(s); ++j)
    for (std::size_t i = 0; i < m; ++i) X[j * m + i] = vx(i * s + j);
  rep.preconditioner = precond_name(o, M.get());
  rep.backend = "host";
  rep.device = "host";
  rep.spmm_kernel = "host-reference, " + std::to_string(A.comm().size()) + " ranks";
  return rep;
}

}  // namespace krysp
