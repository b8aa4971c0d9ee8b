#include "krysp/precond/block_jacobi.hpp"

#include <cmath>
#include <cstdint>

#include "krysp/base/error.hpp"
#include "krysp/precond/node_pattern.hpp"

namespace krysp {

using detail::node_agrees;

bool block_size_qualifies(index_t n, int b, std::int64_t agreeing_nodes) {
  if (b < 2 || n % b != 0) return false;
  const index_t nodes = n / b;
  return agreeing_nodes >= std::int64_t(std::ceil(kBlockPatternShare * double(nodes)));
}

template <class T>
double node_pattern_fraction(const CsrMatrix<T>& A, int b) {
  const index_t n = A.rows();
  if (b < 1 || n == 0 || n % b != 0) return 0;
  const index_t nodes = n / b;
  index_t agree = 0;
  for (index_t k = 0; k < nodes; ++k) agree += node_agrees(A.row_ptr().data(), A.col_idx().data(), k, b);
  return double(agree) / double(nodes);
}

template <class T>
int detect_block_size(const CsrMatrix<T>& A) {
  const index_t n = A.rows();
  if (A.rows() != A.cols()) return 1;
  const index_t* rp = A.row_ptr().data();
  const index_t* ci = A.col_idx().data();
  for (int b = kMaxBlockSize; b >= 2; --b) {
    if (n % b != 0) continue;
    const index_t nodes = n / b;
    const auto need = std::int64_t(std::ceil(kBlockPatternShare * double(nodes)));  // agreeing nodes needed
    std::int64_t agree = 0, disagree = 0;
    for (index_t k = 0; k < nodes && agree < need && disagree <= nodes - need; ++k)
      (node_agrees(rp, ci, k, b) ? agree : disagree) += 1;
    if (block_size_qualifies(n, b, agree)) return b;  // stopped early only once the verdict was certain
  }
  return 1;
}

template <class T>
int resolve_block_size(const CsrMatrix<T>& A, int requested) {
  return resolve_block_size(A, requested, &detect_block_size<T>);
}

template <class T>
int resolve_block_size(const CsrMatrix<T>& A, int requested, int (*detect)(const CsrMatrix<T>&)) {
  // Block Jacobi's diagonal blocks and AMG's nodes both come from here: the messages name neither.
  KRYSP_REQUIRE(A.rows() == A.cols(), "block size: matrix is ", A.rows(), "x", A.cols(), ", not square");
  if (requested == 0) return detect(A);
  KRYSP_REQUIRE(requested >= 1 && requested <= kMaxBlockSize, "block size ", requested,
                " is out of range (0 = detect, or 1 to ", kMaxBlockSize, ")");
  KRYSP_REQUIRE(A.rows() % requested == 0, "block size ", requested, " does not divide n = ", A.rows(),
                " (block Jacobi's diagonal blocks, or AMG's nodes of that many unknowns, must tile the matrix)");
  return requested;
}

template <class T>
void extract_diagonal_block(const CsrMatrix<T>& A, int b, index_t k, T* block) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  const index_t c0 = k * b;
  for (int t = 0; t < b * b; ++t) block[t] = T(0);
  for (int i = 0; i < b; ++i)
    for (index_t p = rp(c0 + i); p < rp(c0 + i + 1); ++p) {
      const index_t c = ci(p) - c0;
      if (c >= 0 && c < b) block[i * b + c] = va(p);
    }
}

void throw_block_not_spd(index_t k, int b, int pivot_index, double pivot) {
  const std::int64_t first = std::int64_t(k) * b + 1, row = first + pivot_index - 1;
  const char* what = !std::isfinite(pivot) ? "not finite"
                     : pivot < 0           ? "negative: the block is indefinite"
                                           : "zero to rounding: the block is singular";
  if (b == 1)
    KRYSP_THROW(InputError, "block Jacobi: diagonal block ", k + 1, " (row ", first, ") is not positive definite: A(",
                first, ",", first, ") = ", pivot, " (", what, "); block Jacobi needs SPD diagonal blocks (1-based)");
  KRYSP_THROW(InputError, "block Jacobi: diagonal block ", k + 1, " (rows ", first, "..", first + b - 1,
              ") is not positive definite: Cholesky pivot ", pivot_index, " (row ", row, ") = ", pivot, " (", what,
              "); block Jacobi needs SPD diagonal blocks (1-based; block size ", b, ")");
}

template <class T>
HostBlockJacobi<T>::HostBlockJacobi(const CsrMatrix<T>& A, int block_size)
    : Preconditioner<T>(A.rows(), MemorySpace::Host), fingerprint_(A.fingerprint()), n_(A.rows()),
      b_(resolve_block_size(A, block_size)) {
  const index_t nodes = n_ / b_;
  inv_.resize(std::size_t(n_) * b_);
  T a[kMaxBlockSize * kMaxBlockSize];
  for (index_t k = 0; k < nodes; ++k) {
    extract_diagonal_block(A, b_, k, a);
    T pivot = 0;
    const int bad = detail::invert_spd_block(b_, a, inv_.data() + std::size_t(k) * b_ * b_, &pivot);
    if (bad) throw_block_not_spd(k, b_, bad, double(pivot));
  }
}

template <class T>
void HostBlockJacobi<T>::apply(const T* r, T* z) const {
  apply_block(1, r, 1, z, 1);
}

template <class T>
void HostBlockJacobi<T>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "block Jacobi: apply_block with N = ", N, ", ldr = ", ldr,
                ", ldz = ", ldz);
  const int b = b_;
  for (index_t k = 0; k < n_ / b; ++k) {
    const T* inv = inv_.data() + std::size_t(k) * b * b;
    for (int i = 0; i < b; ++i) {
      const std::size_t g = std::size_t(k) * b + i;
      for (index_t c = 0; c < N; ++c) {
        T s = 0;
        for (int j = 0; j < b; ++j) s += inv[i * b + j] * R[(std::size_t(k) * b + j) * ldr + c];
        Z[g * ldz + c] = s;
      }
    }
  }
}

template double node_pattern_fraction(const CsrMatrix<double>&, int);
template double node_pattern_fraction(const CsrMatrix<float>&, int);
template int detect_block_size(const CsrMatrix<double>&);
template int detect_block_size(const CsrMatrix<float>&);
template int resolve_block_size(const CsrMatrix<double>&, int);
template int resolve_block_size(const CsrMatrix<float>&, int);
template int resolve_block_size(const CsrMatrix<double>&, int, int (*)(const CsrMatrix<double>&));
template int resolve_block_size(const CsrMatrix<float>&, int, int (*)(const CsrMatrix<float>&));
template void extract_diagonal_block(const CsrMatrix<double>&, int, index_t, double*);
template void extract_diagonal_block(const CsrMatrix<float>&, int, index_t, float*);
template class HostBlockJacobi<double>;
template class HostBlockJacobi<float>;

}  // namespace krysp
