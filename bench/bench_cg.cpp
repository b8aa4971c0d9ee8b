// CG time per iteration: krysp's CUDA CG against a textbook PCG built from cuSPARSE SpMV (CSR
// ALG1, preprocessed) and cuBLAS, and against the memory-traffic floor at the copy bandwidth
// measured in the same run. Also measures what checking convergence every k iterations saves.
//
// usage: bench_cg [--quick] [--iters N] [--json out.json] [A.mtx ...]
//   Without files: the generated 3-D Laplacian only (160^3 = 4.1 M rows; 64^3 with --quick).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "krysp/bench/bench_util.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/jacobi.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"

using namespace krysp;
using bench::median;

#define CK(call)                                                                          \
  do {                                                                                    \
    auto e_ = (call);                                                                     \
    if (e_ != 0) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, int(e_)); \
      std::exit(3);                                                                       \
    }                                                                                     \
  } while (0)

namespace {

/// Device copy bandwidth in GB/s, counting bytes read plus bytes written (median of 20).
double copy_bandwidth() {
  const std::size_t bytes = std::size_t(1) << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {
    CK(cudaEventRecord(e0));
    CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  CK(cudaFree(a));
  CK(cudaFree(b));
  return 2.0 * bytes / (median(ms) * 1e-3) / 1e9;
}

/// Textbook Jacobi-PCG: cuSPARSE SpMV ALG1 (preprocessed) + cuBLAS, scalars on the host.
/// Returns ms per iteration over `iters` iterations (median of 3 runs).
double textbook_cg_ms(const CsrMatrix<double>& A, const std::vector<double>& b, const std::vector<double>& inv,
                      int iters) {
  const int n = A.rows();
  const CsrView<double> d = A.device_view();
  cusparseHandle_t sp;
  cublasHandle_t bl;
  CK(cusparseCreate(&sp));
  CK(cublasCreate(&bl));
  DeviceArray<double> x(n), r(n), z(n), p(n), q(n), dinv(n), db(n);
  dinv.upload(inv.data(), n);
  db.upload(b.data(), n);
  cusparseSpMatDescr_t mat;
  cusparseDnVecDescr_t vp, vq;
  CK(cusparseCreateCsr(&mat, n, n, A.nnz(), const_cast<index_t*>(d.row_ptr), const_cast<index_t*>(d.col_idx),
                       const_cast<double*>(d.values), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                       CUDA_R_64F));
  CK(cusparseCreateDnVec(&vp, n, p.data(), CUDA_R_64F));
  CK(cusparseCreateDnVec(&vq, n, q.data(), CUDA_R_64F));
  const double one = 1, zero = 0;
  size_t buf_bytes = 0;
  CK(cusparseSpMV_bufferSize(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vp, &zero, vq, CUDA_R_64F,
                             CUSPARSE_SPMV_CSR_ALG1, &buf_bytes));
  DeviceArray<char> buf(std::max<size_t>(buf_bytes, 1));
  CK(cusparseSpMV_preprocess(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vp, &zero, vq, CUDA_R_64F,
                             CUSPARSE_SPMV_CSR_ALG1, buf.data()));
  std::vector<double> times;
  for (int run = 0; run < 3; ++run) {
    x.zero();
    r.copy_from(db);  // r = b − A·0
    CK(cublasDdgmm(bl, CUBLAS_SIDE_LEFT, n, 1, r.data(), n, dinv.data(), 1, z.data(), n));  // z = D⁻¹ r
    double rz = 0;
    CK(cublasDdot(bl, n, r.data(), 1, z.data(), 1, &rz));
    p.copy_from(z);
    CK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < iters; ++k) {
      CK(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vp, &zero, vq, CUDA_R_64F,
                      CUSPARSE_SPMV_CSR_ALG1, buf.data()));                       // q = A p
      double pq = 0;
      CK(cublasDdot(bl, n, p.data(), 1, q.data(), 1, &pq));                       // p'q (syncs)
      const double alpha = rz / pq, malpha = -alpha;
      CK(cublasDaxpy(bl, n, &alpha, p.data(), 1, x.data(), 1));                  // x += αp
      CK(cublasDaxpy(bl, n, &malpha, q.data(), 1, r.data(), 1));                 // r −= αq
      CK(cublasDdgmm(bl, CUBLAS_SIDE_LEFT, n, 1, r.data(), n, dinv.data(), 1, z.data(), n));  // z = D⁻¹r
      double rz_new = 0, rr = 0;
      CK(cublasDdot(bl, n, r.data(), 1, z.data(), 1, &rz_new));
      CK(cublasDdot(bl, n, r.data(), 1, r.data(), 1, &rr));                      // ‖r‖ for the stop test
      const double beta = rz_new / rz;
      rz = rz_new;
      CK(cublasDscal(bl, n, &beta, p.data(), 1));                                // p = z + βp
      CK(cublasDaxpy(bl, n, &one, z.data(), 1, p.data(), 1));
    }
    CK(cudaDeviceSynchronize());
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters);
  }
  cusparseDestroySpMat(mat);
  cusparseDestroyDnVec(vp);
  cusparseDestroyDnVec(vq);
  cusparseDestroy(sp);
  cublasDestroy(bl);
  return median(times);
}

struct Row {
  std::string name;
  index_t n, nnz;
  std::string kernel;
  double krysp_ms[4];  // check_every = 1, 4, 16, 64
  double textbook_ms;
  double floor_ms;
};
const int kChecks[4] = {1, 4, 16, 64};

Row measure(const std::string& name, const CsrMatrix<double>& A, int iters, double bw_gbs) {
  Row row{name, A.rows(), A.nnz(), "", {}, 0, 0};
  std::vector<double> b(A.rows());
  {
    std::vector<double> xr(A.rows());
    for (index_t i = 0; i < A.rows(); ++i) xr[i] = 1.0 + 0.5 * std::sin(0.37 * i);  // not all ones: no trivial data
    A.multiply_host(xr.data(), b.data());
  }
  const auto inv = jacobi_inverse_diagonal(A);
  for (int c = 0; c < 4; ++c) {
    SolveOptions o;
    o.backend = Backend::Cuda;
    o.cg.rtol = 0;  // run exactly `iters` iterations
    o.cg.max_iters = iters;
    o.cg.check_every = kChecks[c];
    std::vector<double> t;
    for (int run = 0; run < 3; ++run) {
      std::vector<double> x;
      const auto rep = solve(A, b, x, o);
      t.push_back(1e3 * rep.seconds / std::max(1, rep.iterations));
      row.kernel = rep.spmv_kernel;
    }
    row.krysp_ms[c] = median(t);
  }
  row.textbook_ms = textbook_cg_ms(A, b, inv, iters);
  // Floor: the matrix once (values, column indices, row offsets), and per iteration the vectors
  // a PCG step cannot avoid: p read by SpMV, q written and read, x and r read and written, p read
  // and written by the direction update, the Jacobi diagonal read once.
  const double n = A.rows();
  const double bytes = 12.0 * A.nnz() + 4.0 * (n + 1) + 8.0 * n * (1 + 2 + 2 + 2 + 2 + 1);
  row.floor_ms = bytes / (bw_gbs * 1e9) * 1e3;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  if (!cuda_device_available()) {
    std::printf("bench_cg: no CUDA device, nothing to measure\n");
    return 0;
  }
  bool quick = false;
  int iters = 300;
  std::string json;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else files.push_back(argv[i]);
  }
  const std::string device = cuda_device_name();
  const double bw = copy_bandwidth();
  std::printf("device %s, copy bandwidth %.0f GB/s (read+write)\n", device.c_str(), bw);
  std::vector<Row> rows;
  const index_t g = quick ? 64 : 160;
  rows.push_back(measure("laplace3d_" + std::to_string(g) + "^3", laplacian_3d(g, g, g), iters, bw));
  for (const auto& f : files) {
    const auto A = io::read_matrix_market<double>(f);
    rows.push_back(measure(f.substr(f.find_last_of('/') + 1), A, iters, bw));
  }

  std::printf("\n%-22s %9s %10s %-14s %9s %9s %9s %9s %9s %9s %8s %8s\n", "matrix", "n", "nnz", "spmv", "k=1 ms",
              "k=4 ms", "k=16 ms", "k=64 ms", "textbook", "floor", "vs-text", "vs-floor");
  for (const auto& r : rows)
    std::printf("%-22s %9d %10d %-14s %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %7.2fx %7.2fx\n", r.name.c_str(), r.n,
                r.nnz, r.kernel.c_str(), r.krysp_ms[0], r.krysp_ms[1], r.krysp_ms[2], r.krysp_ms[3], r.textbook_ms,
                r.floor_ms, r.textbook_ms / r.krysp_ms[2], r.krysp_ms[2] / r.floor_ms);
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) {
      std::perror(json.c_str());
      return 2;
    }
    const std::string date = bench::utc_now();
    std::fprintf(f, "{\n  \"benchmark\": \"bench_cg\",\n  \"device\": \"%s\",\n  \"date\": \"%s\",\n", device.c_str(), date.c_str());
    std::fprintf(f, "  \"copy_bandwidth_gbs\": %.1f,\n  \"iterations\": %d,\n  \"precond\": \"jacobi\",\n  \"rows\": [\n",
                 bw, iters);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      std::fprintf(f,
                   "    {\"matrix\": \"%s\", \"n\": %d, \"nnz\": %d, \"spmv_kernel\": \"%s\", \"krysp_ms_per_iter\": "
                   "{\"check_every_1\": %.6f, \"check_every_4\": %.6f, \"check_every_16\": %.6f, "
                   "\"check_every_64\": %.6f}, \"textbook_cusparse_cublas_ms_per_iter\": %.6f, \"floor_ms_per_iter\": "
                   "%.6f, \"speedup_vs_textbook\": %.3f, \"ratio_to_floor\": %.3f}%s\n",
                   r.name.c_str(), r.n, r.nnz, r.kernel.c_str(), r.krysp_ms[0], r.krysp_ms[1], r.krysp_ms[2],
                   r.krysp_ms[3], r.textbook_ms, r.floor_ms, r.textbook_ms / r.krysp_ms[2], r.krysp_ms[2] / r.floor_ms,
                   i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
  }
  return 0;
}
