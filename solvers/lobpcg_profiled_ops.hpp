#pragma once
/// \file lobpcg_profiled_ops.hpp
/// LOBPCG's backend operations (the contract in lobpcg.hpp) with each call timed as an "op:"
/// phase of a PhaseProfile, and the optional gram_pair supplied where a backend lacks it.
#include <cstdint>
#include <type_traits>
#include <utility>

#include "krysp/base/phase_profile.hpp"
#include "krysp/base/types.hpp"

namespace krysp::lobpcg_detail {

/// Whether Ops has the optional gram_pair (two Gram matrices of different blocks, one wait).
template <class Ops, class = void>
struct has_gram_pair : std::false_type {};
template <class Ops>
struct has_gram_pair<Ops, std::void_t<decltype(std::declval<Ops&>().gram_pair(
                              std::declval<const double*>(), index_t(), index_t(), std::declval<const double*>(),
                              index_t(), index_t(), std::declval<double*>(), std::declval<const double*>(), index_t(),
                              index_t(), std::declval<const double*>(), index_t(), index_t(),
                              std::declval<double*>()))>> : std::true_type {};

/// Whether Ops has the optional global_size() (the problem's order over all ranks).
template <class Ops, class = void>
struct has_global_size : std::false_type {};
template <class Ops>
struct has_global_size<Ops, std::void_t<decltype(std::declval<const Ops&>().global_size())>> : std::true_type {};

/// The order of the problem: ops.global_size() where the backend has it (a distributed one,
/// whose size() is one rank's rows), else ops.size().
template <class Ops>
std::int64_t global_order(const Ops& ops) {
  if constexpr (has_global_size<Ops>::value)
    return std::int64_t(ops.global_size());
  else
    return std::int64_t(ops.size());
}

/// The backend's operations, each timed as an "op:" phase of `p` (nothing when p is null).
template <class Ops>
struct ProfiledOps {
  Ops& o;
  PhaseProfile* p;
  index_t size() const { return o.size(); }
  /// The problem's order over all ranks (global_order of the backend).
  std::int64_t global_size() const { return global_order(o); }
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

}  // namespace krysp::lobpcg_detail
