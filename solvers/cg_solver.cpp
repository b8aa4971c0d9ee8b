#include "krysp/solvers/cg_solver.hpp"

#include <chrono>
#include <optional>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/zero_fill.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/executor.hpp"
#include "krysp/solvers/problem_scale.hpp"
#include "krysp/sparse/symmetry.hpp"

namespace krysp {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

/// Everything one backend keeps between solves.
struct CgSolver::Impl {
  CsrMatrix<double> A;  ///< the caller's, or its copy times 2^−a_exp
  int a_exp = 0;        ///< problem_scale.hpp: A's entries far from 1 were rescaled by 2^−a_exp
  SolveOptions options;
  double setup_seconds = 0;
  std::shared_ptr<const MatrixOperator<double>> op;  ///< A on the backend (on the GPU with its SpMV plan)
  std::unique_ptr<Preconditioner<double>> M;
  std::unique_ptr<HostCgOps<double>> host_ops;  ///< the ops of the backend in use; the other is null
  std::unique_ptr<CudaCgOps<double>> dev_ops;
  DeviceArray<double> db, dx;  ///< CUDA: the solver's own b and x
  std::uint64_t precond_version = 0;  // A.values_version() the preconditioner was set up from
  int precond_setups = 0;

  bool cuda() const { return options.backend == Backend::Cuda; }
  /// Sets the preconditioner up again when A's values changed in place since it was (derived
  /// data is stale then).
  void refresh_preconditioner() {
    if (A.values_version() == precond_version) return;
    const auto t0 = Clock::now();
    set_up_preconditioner();
    setup_seconds = since(t0);
  }
  /// The report fields every solve fills the same way.
  void describe(SolveReport& rep) const {
    rep.backend = to_string(options.backend);
    rep.preconditioner = M ? M->summary() : "none";
    rep.setup_seconds = setup_seconds;
  }

  void set_up_preconditioner() {
    precond_version = A.values_version();
    ++precond_setups;
    // A preconditioner that can redo only its numbers for new values of the same structure
    // (AMG: aggregates and product patterns kept) does so; the ops keep pointing at it.
    if (M && (host_ops || dev_ops) && precond_setups > 1 && M->matches(A) && M->update_values(A)) return;
    if (cuda()) set_up(CudaExecutor{}, dev_ops);
    else set_up(HostExecutor{}, host_ops);
  }
  /// M and the ops on one backend (A's operator made already).
  template <class Exec>
  void set_up(const Exec& ex, std::unique_ptr<typename Exec::CgOps>& ops) {
    ops.reset();
    M = ex.preconditioner(*op, options.precond);
    ops = std::make_unique<typename Exec::CgOps>(*op, M.get());
  }
};

CgSolver::CgSolver(const CsrMatrix<double>& A, const SolveOptions& options) : impl_(std::make_unique<Impl>()) {
  const auto t0 = Clock::now();
  KRYSP_REQUIRE(A.rows() == A.cols(), "CgSolver: matrix is ", A.rows(), "x", A.cols(), ", not square");
  KRYSP_REQUIRE(A.rows() > 0, "CG: the matrix is empty (0 x 0): nothing to solve");
  if (options.check_symmetry) {
    const std::string why = symmetry_violation_cached(A, "A");
    KRYSP_REQUIRE(why.empty(), "CG: ", why, " (CG needs a symmetric positive definite matrix)");
  }
  impl_->a_exp = matrix_scale_exponent(A);
  impl_->A = impl_->a_exp != 0 ? scaled_matrix(A, impl_->a_exp) : A;
  impl_->options = options;
  impl_->options.backend = resolve_backend(options.backend);
  if (impl_->cuda()) {
    impl_->op = CudaExecutor{options.plan, {}, true}.matrix(impl_->A);  // the SpMV plan, now
    impl_->db = DeviceArray<double>(std::size_t(A.rows()));
    impl_->dx = DeviceArray<double>(std::size_t(A.rows()));
  } else {
    impl_->op = HostExecutor{}.matrix(impl_->A);
  }
  impl_->set_up_preconditioner();
  if (impl_->cuda()) cuda_synchronize();
  impl_->setup_seconds = since(t0);
}

CgSolver::~CgSolver() = default;
CgSolver::CgSolver(CgSolver&&) noexcept = default;
CgSolver& CgSolver::operator=(CgSolver&&) noexcept = default;

const SolveOptions& CgSolver::options() const { return impl_->options; }
const SpmvPlan<double>* CgSolver::plan() const { return impl_->op->spmv_plan(); }
const CsrMatrix<double>& CgSolver::matrix() const { return impl_->A; }
int CgSolver::preconditioner_setups() const { return impl_->precond_setups; }

void CgSolver::update_values(const std::vector<double>& values) {
  const auto t0 = Clock::now();
  if (impl_->a_exp != 0) {  // the rescaled copy: new values on the same scale
    std::vector<double> scaled = values;
    scale_by_power_of_two(scaled, -impl_->a_exp);
    impl_->A.set_values(scaled);
  } else {
    impl_->A.set_values(values);  // the device mirror follows; the plan's structure is unchanged
  }
  impl_->set_up_preconditioner();
  impl_->setup_seconds = since(t0);
}

namespace {
/// The ‖b‖ that CgSolver::solve_device trusts from bᵀb on the device (2^∓400): outside, its squares
/// may have left double's range (and b = 0 itself), so the solve goes through solve() instead.
constexpr double kSolveDeviceMinNorm = 0x1p-400, kSolveDeviceMaxNorm = 0x1p400;

/// InputError unless p is device (or managed) memory of the current device.
void require_device_vector(const void* p, const char* what) {
  KRYSP_REQUIRE(p != nullptr, "solve_device: ", what, " is a null pointer");
  require_device_memory(p, detail::concat("solve_device: ", what));
}
}  // namespace

SolveReport CgSolver::solve_device(const double* d_b, double* d_x, index_t n, bool zero_x0) {
  Impl& s = *impl_;
  KRYSP_REQUIRE(n == s.A.rows(), "solve_device: vectors of ", n, " entries, matrix has ", s.A.rows(), " rows");
  require_device_vector(d_b, "b");
  require_device_vector(d_x, "x");
  const std::size_t bytes = std::size_t(n) * sizeof(double);
  auto through_host = [&] {  // solve() on host copies, which rescales b where it lies far from 1
    std::vector<double> b(static_cast<std::size_t>(n)), x;
    detail::copy_to_host(b.data(), d_b, bytes);
    if (!zero_x0) {
      x.resize(std::size_t(n));
      detail::copy_to_host(x.data(), d_x, bytes);
    }
    SolveReport rep = solve(b, x);
    detail::copy_to_device(d_x, x.data(), bytes);
    return rep;
  };
  if (s.options.backend != Backend::Cuda || s.a_exp != 0) return through_host();  // the host backend, or a rescaled A
  s.refresh_preconditioner();
  detail::copy_device_to_device(s.db.data(), d_b, bytes);  // the solver's own buffers: b and x may alias
  if (zero_x0) s.dx.zero();
  else detail::copy_device_to_device(s.dx.data(), d_x, bytes);
  SolveReport rep;
  static_cast<SolveResult&>(rep) = cg(*s.dev_ops, s.db, s.dx, s.options.cg);
  // ‖b‖ from bᵀb: 0 for a b whose squares underflow, inf where they overflow. b is not read on the
  // host otherwise; here d_x still holds x0, so the solve is done again through the host, rescaled.
  if (!(rep.b_norm >= kSolveDeviceMinNorm && rep.b_norm <= kSolveDeviceMaxNorm)) return through_host();
  detail::copy_device_to_device(d_x, s.dx.data(), bytes);
  cuda_synchronize();
  rep.device = cuda_device_name();
  rep.spmv_kernel = s.op->spmv_plan()->config().to_string();
  s.describe(rep);
  return rep;
}

SolveReport CgSolver::solve(const std::vector<double>& b, std::vector<double>& x) {
  Impl& s = *impl_;
  const std::size_t n = std::size_t(s.A.rows());
  KRYSP_REQUIRE(b.size() == n, "solve: b has ", b.size(), " entries, matrix has ", n, " rows");
  const bool zero_x0 = x.empty();  // no initial guess: x0 = 0, zeroed on the device rather than uploaded
  KRYSP_REQUIRE(zero_x0 || x.size() == n, "solve: x0 has ", x.size(), " entries, matrix has ", n, " rows");
  const int b_exp = scale_exponent(b.data(), n);
  if (s.a_exp == 0 && b_exp == 0) return solve_as_given(b, x, s.options.cg);
  // A·2^−a_exp · x' = b·2^−b_exp: x' = x·2^(a_exp − b_exp), residuals 2^−b_exp times the user's.
  std::vector<double> bs = b;
  scale_by_power_of_two(bs, -b_exp);
  scale_by_power_of_two(x, s.a_exp - b_exp);
  CgOptions cg = s.options.cg;
  cg.atol = std::ldexp(cg.atol, -b_exp);
  SolveReport rep = solve_as_given(bs, x, cg);
  const bool fits = survives_scaling(x, b_exp - s.a_exp);
  scale_by_power_of_two(x, b_exp - s.a_exp);
  unscale_result(rep, b_exp, fits);
  return rep;
}

SolveReport CgSolver::solve_as_given(const std::vector<double>& b, std::vector<double>& x,
                                     const CgOptions& cg_options) {
  Impl& s = *impl_;
  const std::size_t n = std::size_t(s.A.rows());
  const bool zero_x0 = x.empty();
  // The GPU path sizes a zero x while the device iterates (base/zero_fill.hpp); the host's now.
  std::optional<ZeroFill> sized;
  if (zero_x0 && s.options.backend == Backend::Cuda) sized.emplace(x, n);
  else if (zero_x0) x.assign(n, 0.0);
  s.refresh_preconditioner();
  SolveReport rep;
  if (s.options.backend == Backend::Cuda) {
    s.db.upload(b.data(), n);
    if (zero_x0) s.dx.zero();
    else s.dx.upload(x.data(), n);
    static_cast<SolveResult&>(rep) = cg(*s.dev_ops, s.db, s.dx, cg_options);
    if (sized) sized->wait();
    s.dx.download(x.data(), n);
    rep.device = cuda_device_name();
    rep.spmv_kernel = s.op->spmv_plan()->config().to_string();
  } else {
    auto vb = s.host_ops->vector(), vx = s.host_ops->vector();
    std::copy(b.begin(), b.end(), vb.data());
    std::copy(x.begin(), x.end(), vx.data());
    static_cast<SolveResult&>(rep) = cg(*s.host_ops, vb, vx, cg_options);
    std::copy(vx.data(), vx.data() + n, x.begin());
    rep.device = "host";
    rep.spmv_kernel = "host-reference";
  }
  if (rep.status == SolveStatus::Stagnated) rep.residual_floor = residual_rounding_floor(s.A, x.data(), rep.b_norm);
  s.describe(rep);
  return rep;
}

}  // namespace krysp
