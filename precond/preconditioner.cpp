#include "krysp/precond/preconditioner.hpp"

#include <cmath>
#include <sstream>
#include <type_traits>
#include <utility>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/block_jacobi.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/precond/cuda/device_block_jacobi.hpp"
#include "krysp/precond/cuda/device_chebyshev.hpp"
#include "krysp/precond/cuda/device_jacobi.hpp"
#include "krysp/precond/jacobi.hpp"
#include "krysp/precond/padded_preconditioner.hpp"

namespace krysp {

const char* to_string(PrecondKind k) {
  switch (k) {
    case PrecondKind::None: return "none";
    case PrecondKind::Jacobi: return "jacobi";
    case PrecondKind::Chebyshev: return "chebyshev";
    case PrecondKind::BlockJacobi: return "block-jacobi";
    case PrecondKind::Amg: return "amg";
  }
  return "unknown";
}

const char* to_string(AmgSmoother s) {
  switch (s) {
    case AmgSmoother::Chebyshev: return "chebyshev";
    case AmgSmoother::L1Jacobi: return "l1-jacobi";
  }
  return "unknown";
}

const char* to_string(AmgAggregation a) {
  switch (a) {
    case AmgAggregation::Greedy: return "greedy";
    case AmgAggregation::Mis2: return "mis2";
  }
  return "unknown";
}

const char* to_string(AmgFilter f) {
  switch (f) {
    case AmgFilter::Auto: return "auto";
    case AmgFilter::On: return "on";
    case AmgFilter::Off: return "off";
  }
  return "unknown";
}

PrecondKind parse_precond(const std::string& name) {
  if (name == "none") return PrecondKind::None;
  if (name == "jacobi") return PrecondKind::Jacobi;
  if (name == "chebyshev") return PrecondKind::Chebyshev;
  if (name == "block-jacobi") return PrecondKind::BlockJacobi;
  if (name == "amg") return PrecondKind::Amg;
  // The list keeps its older wording first (scripts and tests match it), amg after it.
  KRYSP_THROW(InputError, "unknown preconditioner '", name,
              "' (expected none, jacobi, chebyshev, block-jacobi or amg)");
}

void validate(const PrecondOptions& o) {
  if (o.kind == PrecondKind::Chebyshev) {
    KRYSP_REQUIRE(o.cheb_degree >= 1 && o.cheb_degree <= 32, "Chebyshev: degree ", o.cheb_degree,
                  " is out of range (1 to 32)");
    KRYSP_REQUIRE(std::isfinite(o.cheb_ratio) && o.cheb_ratio > 1, "Chebyshev: eigenvalue ratio ", o.cheb_ratio,
                  " must be a finite number > 1 (lambda_min = lambda_max / ratio)");
    KRYSP_REQUIRE(std::isfinite(o.cheb_boost) && o.cheb_boost >= 1, "Chebyshev: boost factor ", o.cheb_boost,
                  " must be a finite number >= 1");
    KRYSP_REQUIRE(o.cheb_eig_steps >= 1 && o.cheb_eig_steps <= 1000, "Chebyshev: eigenvalue steps ",
                  o.cheb_eig_steps, " is out of range (1 to 1000)");
    KRYSP_REQUIRE(std::isfinite(o.cheb_lambda_max) && o.cheb_lambda_max >= 0, "Chebyshev: lambda_max ",
                  o.cheb_lambda_max, " must be finite and > 0 (or 0 to estimate it)");
  }
  if (o.kind == PrecondKind::BlockJacobi)
    KRYSP_REQUIRE(o.block_size >= 0 && o.block_size <= kMaxBlockSize, "block Jacobi: block size ", o.block_size,
                  " is out of range (0 = detect, or 1 to ", kMaxBlockSize, ")");
  if (o.kind == PrecondKind::Amg) {
    const AmgOptions& a = o.amg;
    KRYSP_REQUIRE(a.theta == kAmgAuto || (std::isfinite(a.theta) && a.theta >= 0 && a.theta <= 1),
                  "AMG: strength threshold amg.theta = ", a.theta, " is out of range (0 to 1, or ", kAmgAuto,
                  ": auto)");
    KRYSP_REQUIRE(a.max_levels >= 1 && a.max_levels <= 50, "AMG: amg.max_levels = ", a.max_levels,
                  " is out of range (1 to 50)");
    KRYSP_REQUIRE(a.coarse_size >= 1 && a.coarse_size <= kAmgMaxDenseRows, "AMG: amg.coarse_size = ", a.coarse_size,
                  " is out of range (1 to ", kAmgMaxDenseRows, " rows, the largest coarse matrix factored densely)");
    const index_t dense = a.dense_coarse_rows;
    KRYSP_REQUIRE(dense == kAmgAuto || (dense >= 0 && dense <= kAmgMaxDenseRows),
                  "AMG: amg.dense_coarse_rows = ", dense, " is out of range (0 to ",
                  kAmgMaxDenseRows, " rows, 0: off; or ", kAmgAuto, ": auto)");
    KRYSP_REQUIRE(a.smoother == AmgSmoother::Chebyshev || a.smoother == AmgSmoother::L1Jacobi,
                  "AMG: amg.smoother = ", int(a.smoother), " is not a smoother (chebyshev or l1-jacobi)");
    KRYSP_REQUIRE(a.aggregation == AmgAggregation::Greedy || a.aggregation == AmgAggregation::Mis2,
                  "AMG: amg.aggregation = ", int(a.aggregation), " is not an aggregation (mis2 or greedy)");
    KRYSP_REQUIRE(a.filter == AmgFilter::Auto || a.filter == AmgFilter::On || a.filter == AmgFilter::Off,
                  "AMG: amg.filter = ", int(a.filter), " is not a filter choice (auto, on or off)");
    KRYSP_REQUIRE(a.smoother_degree == kAmgAuto || (a.smoother_degree >= 1 && a.smoother_degree <= 16),
                  "AMG: amg.smoother_degree = ", a.smoother_degree, " is out of range (1 to 16, or ", kAmgAuto,
                  ": auto)");
    KRYSP_REQUIRE(a.smoother_ratio == kAmgAuto || (std::isfinite(a.smoother_ratio) && a.smoother_ratio > 1),
                  "AMG: amg.smoother_ratio = ", a.smoother_ratio,
                  " must be a finite number > 1 (lambda_min = lambda_max / ratio), or ", kAmgAuto, " (auto)");
    KRYSP_REQUIRE(a.sweeps >= 1 && a.sweeps <= 10, "AMG: amg.sweeps = ", a.sweeps, " is out of range (1 to 10)");
    KRYSP_REQUIRE(a.block_size >= 0 && a.block_size <= kMaxBlockSize, "AMG: amg.block_size = ", a.block_size,
                  " is out of range (0 = detect, or 1 to ", kMaxBlockSize, ")");
    if (!a.coordinates.empty() || a.coordinate_dim != 0) {
      KRYSP_REQUIRE(a.coordinate_dim == 2 || a.coordinate_dim == 3, "AMG: amg.coordinate_dim = ", a.coordinate_dim,
                    " (coordinates need 2 or 3 per node)");
      KRYSP_REQUIRE(!a.coordinates.empty() && a.coordinates.size() % std::size_t(a.coordinate_dim) == 0,
                    "AMG: amg.coordinates has ", a.coordinates.size(), " entries, not a positive multiple of ",
                    a.coordinate_dim);
      for (std::size_t i = 0; i < a.coordinates.size(); ++i)
        KRYSP_REQUIRE(std::isfinite(a.coordinates[i]), "AMG: coordinate ", i % a.coordinate_dim + 1, " of node ",
                      i / a.coordinate_dim + 1, " is ", a.coordinates[i]);
      const int rotating = a.coordinate_dim == 3 ? 6 : 3;  // with a rotation unknown per axis
      KRYSP_REQUIRE(a.block_size == 0 || a.block_size == a.coordinate_dim || a.block_size == rotating,
                    "AMG: amg.block_size = ", a.block_size, " but ", a.coordinate_dim, " coordinates a node give ",
                    a.coordinate_dim, " unknowns per node, or ", rotating, " with rotations");
    }
    if (!a.near_nullspace.empty() || a.near_nullspace_vectors != 0) {
      const int K = a.near_nullspace_vectors;
      KRYSP_REQUIRE(K >= 1 && K <= kAmgMaxNearNullspace, "AMG: amg.near_nullspace_vectors = ", K,
                    " is out of range (1 to ", kAmgMaxNearNullspace, ")");
      KRYSP_REQUIRE(!a.near_nullspace.empty() && a.near_nullspace.size() % std::size_t(K) == 0,
                    "AMG: amg.near_nullspace has ", a.near_nullspace.size(),
                    " entries, not a positive multiple of ", K);
      for (std::size_t i = 0; i < a.near_nullspace.size(); ++i)
        KRYSP_REQUIRE(std::isfinite(a.near_nullspace[i]), "AMG: entry ", i / std::size_t(K) + 1,
                      " of near-nullspace vector ", i % std::size_t(K) + 1, " is ", a.near_nullspace[i]);
      KRYSP_REQUIRE(a.coordinates.empty(), "AMG: amg.near_nullspace and amg.coordinates both give the "
                    "near-nullspace; give one");
      KRYSP_REQUIRE(a.filter != AmgFilter::On, "AMG: amg.filter on lumps with the default near-nullspace; "
                    "it does not take amg.near_nullspace");
    }
    KRYSP_REQUIRE(a.adaptive_cycles == kAmgAuto || (a.adaptive_cycles >= 0 && a.adaptive_cycles <= 1000),
                  "AMG: amg.adaptive_cycles = ", a.adaptive_cycles, " is out of range (0 to 1000, or ", kAmgAuto,
                  ": auto)");
    KRYSP_REQUIRE(a.adaptive_cycles <= 0 || (a.coordinates.empty() && a.near_nullspace.empty()),
                  "AMG: amg.adaptive_cycles = ", a.adaptive_cycles, " adapts the default near-nullspace; ",
                  "it does not take amg.coordinates or amg.near_nullspace");
    KRYSP_REQUIRE(a.adaptive_cycles <= 0 || a.filter != AmgFilter::On, "AMG: amg.adaptive_cycles = ",
                  a.adaptive_cycles, " adapts the near-nullspace, which the filter's lumping does not take ",
                  "(filter on)");
    KRYSP_REQUIRE(std::isfinite(a.prolongation_weight) && a.prolongation_weight >= 0 && a.prolongation_weight < 2,
                  "AMG: amg.prolongation_weight = ", a.prolongation_weight,
                  " is out of range (0 to 2, 2 excluded; 0: unsmoothed aggregation)");
  }
}

std::string describe(const PrecondOptions& o) {
  std::ostringstream s;
  s << to_string(o.kind);
  if (o.kind == PrecondKind::Chebyshev) {
    s << "(degree " << o.cheb_degree << ", ratio " << o.cheb_ratio;
    if (o.cheb_lambda_max > 0) s << ", lambda_max " << o.cheb_lambda_max;
    if (o.cheb_single) s << ", fp32";
    if (!o.cheb_fused) s << ", unfused";
    s << ")";
  } else if (o.kind == PrecondKind::BlockJacobi) {
    if (o.block_size > 0)
      s << "(b " << o.block_size << ")";
    else
      s << "(auto)";
  } else if (o.kind == PrecondKind::Amg) {
    const AmgOptions& a = o.amg;
    s << "(theta ";
    if (a.theta == kAmgAuto)
      s << "auto";
    else
      s << a.theta;
    s << ", " << to_string(a.smoother);
    if (a.smoother == AmgSmoother::Chebyshev) {
      if (a.smoother_degree == kAmgAuto)
        s << " auto";
      else
        s << " " << a.smoother_degree;
    }
    s << ", sweeps " << a.sweeps << ", coarse " << a.coarse_size;
    if (a.dense_coarse_rows != kAmgAuto) s << ", dense coarse " << a.dense_coarse_rows;
    s << ", b ";
    if (a.block_size > 0)
      s << a.block_size;
    else
      s << "auto";
    if (a.smoother == AmgSmoother::Chebyshev && a.smoother_ratio != kAmgAuto) s << ", ratio " << a.smoother_ratio;
    if (a.max_levels != AmgOptions{}.max_levels) s << ", levels " << a.max_levels;
    if (a.prolongation_weight != AmgOptions{}.prolongation_weight) s << ", weight " << a.prolongation_weight;
    if (a.aggregation != AmgOptions{}.aggregation) s << ", " << to_string(a.aggregation);
    if (a.filter != AmgOptions{}.filter) s << ", filter " << to_string(a.filter);
    if (!a.block_smoother) s << ", point smoother";
    if (!a.coordinates.empty()) s << ", rigid-body modes";
    if (!a.near_nullspace.empty()) s << ", near-nullspace " << a.near_nullspace_vectors << " given";
    if (a.adaptive_cycles != kAmgAuto) s << ", adaptive " << a.adaptive_cycles;
    s << ")";
  }
  return s.str();
}

namespace {

// AMG on nodes of unequal size (amg_padding.hpp): where no block size was given, none was found
// and no near-nullspace was given, the nodes that A's structure shows; else no padding (b = 1).
template <class T>
amg::NodePadding amg_node_padding(const CsrMatrix<T>& A, const PrecondOptions& o) {
  const AmgOptions& a = o.amg;
  if (a.block_size != 0 || !a.coordinates.empty() || !a.near_nullspace.empty()) return {};
  if (amg::detected_block_size(A) != 1) return {};
  return amg::node_padding(A);
}

}  // namespace

template <class T>
std::unique_ptr<Preconditioner<T>> make_host_preconditioner(const CsrMatrix<T>& A, const PrecondOptions& o) {
  validate(o);
  switch (o.kind) {
    case PrecondKind::None: return nullptr;
    case PrecondKind::Jacobi: return std::make_unique<HostJacobi<T>>(A);
    case PrecondKind::Chebyshev:
      if constexpr (std::is_same_v<T, double>)
        if (o.cheb_single) return std::make_unique<HostChebyshev<double, float>>(A, o);
      return std::make_unique<HostChebyshev<T, T>>(A, o);
    case PrecondKind::BlockJacobi: return std::make_unique<HostBlockJacobi<T>>(A, o.block_size);
    case PrecondKind::Amg: {
      amg::NodePadding padding = amg_node_padding(A, o);
      if (padding.b > 1) return std::make_unique<PaddedPreconditioner<T>>(A, std::move(padding), o, MemorySpace::Host);
      return std::make_unique<HostAmg<T>>(A, o.amg);
    }
  }
  KRYSP_THROW(InputError, "preconditioner ", int(o.kind), " is not available on the host");
}

template <class T>
std::unique_ptr<Preconditioner<T>> make_device_preconditioner(const CsrMatrix<T>& A, const SpmvPlan<T>& plan,
                                                                    const PrecondOptions& o) {
  validate(o);
  switch (o.kind) {
    case PrecondKind::None: return nullptr;
    case PrecondKind::Jacobi: return std::make_unique<DeviceJacobi<T>>(A);
    case PrecondKind::Chebyshev:
      if constexpr (std::is_same_v<T, double>)
        if (o.cheb_single) return std::make_unique<DeviceChebyshev<double, float>>(A, plan, o);
      return std::make_unique<DeviceChebyshev<T, T>>(A, plan, o);
    case PrecondKind::BlockJacobi: return std::make_unique<DeviceBlockJacobi<T>>(A, o.block_size);
    case PrecondKind::Amg: {
      amg::NodePadding padding = amg_node_padding(A, o);
      if (padding.b > 1)
        return std::make_unique<PaddedPreconditioner<T>>(A, std::move(padding), o, MemorySpace::Device);
      return std::make_unique<DeviceAmg<T>>(A, plan, o.amg);
    }
  }
  KRYSP_THROW(InputError, "preconditioner ", int(o.kind), " is not available on the GPU");
}

template std::unique_ptr<Preconditioner<double>> make_host_preconditioner(const CsrMatrix<double>&,
                                                                             const PrecondOptions&);
template std::unique_ptr<Preconditioner<float>> make_host_preconditioner(const CsrMatrix<float>&,
                                                                            const PrecondOptions&);
template std::unique_ptr<Preconditioner<double>> make_device_preconditioner(const CsrMatrix<double>&,
                                                                                 const SpmvPlan<double>&,
                                                                                 const PrecondOptions&);
template std::unique_ptr<Preconditioner<float>> make_device_preconditioner(const CsrMatrix<float>&,
                                                                                const SpmvPlan<float>&,
                                                                                const PrecondOptions&);

}  // namespace krysp
