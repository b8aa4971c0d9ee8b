#include "krysp/sparse/symmetry.hpp"

#include <algorithm>
#include <cmath>

#include "krysp/base/error.hpp"

namespace krysp {

std::string symmetry_violation(const CsrMatrix<double>& A, const char* name) {
  if (A.rows() != A.cols()) return detail::concat(name, " is ", A.rows(), "x", A.cols(), ", not square");
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  double amax = 0;
  for (index_t k = 0; k < A.nnz(); ++k) amax = std::max(amax, std::abs(va(k)));
  const double slack = 1e-12 * amax;
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = rp(i); k < rp(i + 1); ++k) {
      const index_t j = ci(k);
      if (j <= i) continue;  // each off-diagonal pair once, from its upper entry...
      const index_t* first = &ci(rp(j));
      const index_t* last = first + (rp(j + 1) - rp(j));
      const index_t* at = std::lower_bound(first, last, i);
      const double aji = (at != last && *at == i) ? va(rp(j) + index_t(at - first)) : 0.0;
      if (std::abs(va(k) - aji) > slack)
        return detail::concat(name, " is not symmetric: ", name, "(", i + 1, ",", j + 1, ") = ", va(k), " but ", name,
                              "(", j + 1, ",", i + 1, ") = ", aji);
    }
  for (index_t i = 0; i < A.rows(); ++i)  // ... and lower entries whose mirror is absent
    for (index_t k = rp(i); k < rp(i + 1); ++k) {
      const index_t j = ci(k);
      if (j >= i || std::abs(va(k)) <= slack) continue;
      const index_t* first = &ci(rp(j));
      const index_t* last = first + (rp(j + 1) - rp(j));
      const index_t* at = std::lower_bound(first, last, i);
      if (at == last || *at != i)
        return detail::concat(name, " is not symmetric: ", name, "(", i + 1, ",", j + 1, ") = ", va(k), " but ", name,
                              "(", j + 1, ",", i + 1, ") is not stored");
    }
  return {};
}

std::string symmetry_violation_cached(const CsrMatrix<double>& A, const char* name) {
  return A.memo(std::string("symmetry_violation:") + name, [&] { return symmetry_violation(A, name); });
}

}  // namespace krysp
