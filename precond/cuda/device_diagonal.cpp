#include "krysp/precond/cuda/device_diagonal.hpp"

#include <algorithm>
#include <cstring>

#include "krysp/base/error.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/diagonal_kernels.hpp"
#include "krysp/precond/jacobi.hpp"

namespace krysp {

namespace {
/// Runs the pass and downloads its status (one synchronisation); on a bad row throws the host's
/// error, its value read from the device (one entry, located through the host structure, which
/// every matrix keeps: a device-borrowed one's values are not downloaded).
template <class T>
detail::DiagonalStatus run_pass(const CsrMatrix<T>& A, detail::DiagonalMode mode, T* inv, T* inv_sqrt,
                                const char* who, const char* needs) {
  const CsrView<T> dA = A.device_view();
  detail::DiagonalStatus st{A.rows(), 0, 0};
  DeviceArray<detail::DiagonalStatus> d_st(1);
  d_st.upload(&st, 1);
  detail::diagonal_pass(dA, mode, inv, inv_sqrt, d_st.data());
  d_st.download(&st, 1);  // synchronises: a fault of the pass surfaces here
  if (st.first_bad < A.rows()) {
    const index_t i = st.first_bad;
    const index_t* ci = A.col_idx().data();
    const index_t* b = ci + A.row_ptr()(i);
    const index_t* e = ci + A.row_ptr()(i + 1);
    const index_t* p = std::lower_bound(b, e, i);
    T d = 0;  // missing: reported as zero, as on the host
    if (p != e && *p == i) detail::copy_to_host(&d, dA.values + (p - ci), sizeof(T));
    throw_bad_diagonal(who, needs, i, double(d));
  }
  return st;
}
}  // namespace

template <class T>
DeviceArray<T> device_jacobi_inverse_diagonal(const CsrMatrix<T>& A) {
  KRYSP_REQUIRE(A.rows() == A.cols(), "Jacobi: matrix is ", A.rows(), "x", A.cols(), ", not square");
  DeviceArray<T> inv(std::size_t(A.rows()));
  run_pass<T>(A, detail::DiagonalMode::Jacobi, inv.data(), nullptr, "Jacobi", kJacobiNeeds);
  return inv;
}

template <class T>
DeviceChebyshevScaling<T> device_chebyshev_scaling(const CsrMatrix<T>& A, bool with_sqrt) {
  KRYSP_REQUIRE(A.rows() == A.cols(), "Chebyshev: matrix is ", A.rows(), "x", A.cols(), ", not square");
  DeviceChebyshevScaling<T> s;
  s.inv = DeviceArray<T>(std::size_t(A.rows()));
  if (with_sqrt) s.inv_sqrt = DeviceArray<T>(std::size_t(A.rows()));
  const detail::DiagonalStatus st =
      run_pass<T>(A, detail::DiagonalMode::Chebyshev, s.inv.data(), s.inv_sqrt.data(), "Chebyshev", kChebyshevNeeds);
  std::memcpy(&s.gershgorin, &st.gershgorin_bits, sizeof(double));
  return s;
}

template DeviceArray<double> device_jacobi_inverse_diagonal(const CsrMatrix<double>&);
template DeviceArray<float> device_jacobi_inverse_diagonal(const CsrMatrix<float>&);
template DeviceChebyshevScaling<double> device_chebyshev_scaling(const CsrMatrix<double>&, bool);
template DeviceChebyshevScaling<float> device_chebyshev_scaling(const CsrMatrix<float>&, bool);

}  // namespace krysp
