// The device operator of a distributed matrix (sparse/dist_csr_device.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <vector>

#include "krysp/base/comm_backend.hpp"
#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/device_transport.hpp"
#include "krysp/sparse/dist_csr_device.hpp"

namespace krysp {

namespace {
// send[k·N + j] = X[rows[k]·ldx + j]: the entries the neighbours need, in their halo-slot order.
__global__ void pack_halo_kernel(const index_t* rows, std::int64_t count, index_t N, const double* X, index_t ldx,
                                 double* send) {
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= count * N) return;
  const std::int64_t k = t / N, j = t % N;
  send[t] = X[std::int64_t(rows[k]) * ldx + j];
}

// Y[rows[i]·ldy + j] += t[i·N + j]: the off-rank block's rows (compact) added into their places.
__global__ void scatter_add_kernel(const index_t* rows, std::int64_t count, index_t N, const double* t, double* Y,
                                   index_t ldy) {
  const std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= count * N) return;
  const std::int64_t i = k / N, j = k % N;
  Y[std::int64_t(rows[i]) * ldy + j] += t[k];
}
}  // namespace

struct DeviceDistCsr::State {
  // The off-rank block on its non-empty rows only: a slab's boundary is a small share of its
  // rows, and a kernel over all of them would read and write all of y for a few entries.
  CsrMatrix<double> off;
  DeviceArray<index_t> off_rows;      // the local row of each of off's rows
  mutable DeviceArray<double> off_y;  // off·halo, compact
  SpmmPlanOptions spmm_options;
  SpmvPlan<double> local_plan, off_plan;
  std::map<index_t, SpmmPlan<double>> local_spmm, off_spmm;  // by block width
  DeviceArray<index_t> send_rows;                            // all neighbours', concatenated
  std::vector<std::size_t> send_at;                          // per neighbour: first entry in send_rows
  std::size_t sent = 0;                                      // entries of send_rows
  mutable DeviceArray<double> send_buf, halo_buf;
  bool timing = false;
  std::vector<cudaEvent_t> events;  // pairs: local block done, halo in; reused after set_timing
  std::size_t used = 0;              // events recorded since set_timing
};

DeviceDistCsr::DeviceDistCsr(const DistCsrMatrix& A, const SpmvPlanOptions& spmv, const SpmmPlanOptions& spmm)
    : A_(A), s_(std::make_unique<State>()) {
  s_->spmm_options = spmm;
  // Plans and uploads may fail on one rank (out of memory): agreed, so that no rank is left
  // waiting in the transport's making below.
  A.comm().collective([&] {
    if (A.local_block().nnz() > 0) s_->local_plan = SpmvPlan<double>(A.local_block(), spmv);
    if (A.off_block().nnz() > 0) {
      const auto v = A.off_block().host_view();
      std::vector<index_t> rp{0}, ci, rows;
      std::vector<double> vals;
      for (index_t i = 0; i < v.rows; ++i) {
        if (v.row_ptr[i + 1] == v.row_ptr[i]) continue;
        rows.push_back(i);
        ci.insert(ci.end(), v.col_idx + v.row_ptr[i], v.col_idx + v.row_ptr[i + 1]);
        vals.insert(vals.end(), v.values + v.row_ptr[i], v.values + v.row_ptr[i + 1]);
        rp.push_back(index_t(ci.size()));
      }
      s_->off = CsrMatrix<double>::from_arrays(index_t(rows.size()), v.cols, rp, ci, vals);
      s_->off_rows = DeviceArray<index_t>(rows.size());
      s_->off_rows.upload(rows.data(), rows.size());
      s_->off_plan = SpmvPlan<double>(s_->off, spmv);
    }
    std::vector<index_t> rows;
    for (const auto& nb : A.neighbours()) {
      s_->send_at.push_back(rows.size());
      rows.insert(rows.end(), nb.send_rows.begin(), nb.send_rows.end());
    }
    s_->sent = rows.size();
    if (!rows.empty()) {
      s_->send_rows = DeviceArray<index_t>(rows.size());
      s_->send_rows.upload(rows.data(), rows.size());
    }
  });
  if (A.comm().size() > 1) A.comm().device_transport();  // collective: made here, not mid-product
  // NCCL connects two ranks on their first message: one product of zeros exchanges the halo now,
  // so that cost is set-up, not the first solve's (every neighbour takes part, as in a product).
  if (A.comm().size() > 1 && !A.neighbours().empty()) {
    DeviceArray<double> x(std::size_t(std::max<index_t>(rows(), 1))), y(std::size_t(std::max<index_t>(rows(), 1)));
    x.zero();
    product(1, x.data(), 1, y.data(), 1);
    KRYSP_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

DeviceDistCsr::~DeviceDistCsr() {
  for (cudaEvent_t e : s_->events) cudaEventDestroy(e);
}

std::string DeviceDistCsr::transport() const { return A_.comm().device_kind(); }

const SpmvPlan<double>& DeviceDistCsr::local_plan() const { return s_->local_plan; }

void DeviceDistCsr::set_timing(bool on) const {
  s_->timing = on;
  s_->used = 0;
}

double DeviceDistCsr::halo_wait_ms() const {
  double total = 0;
  for (std::size_t k = 0; k + 1 < s_->used; k += 2) {
    KRYSP_CUDA_CHECK(cudaEventSynchronize(s_->events[k + 1]));
    float ms = 0;
    KRYSP_CUDA_CHECK(cudaEventElapsedTime(&ms, s_->events[k], s_->events[k + 1]));
    total += ms;
  }
  return total;
}

std::int64_t DeviceDistCsr::timed_products() const { return std::int64_t(s_->used / 2); }

void DeviceDistCsr::product(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const {
  State& s = *s_;
  const auto& nbs = A_.neighbours();
  const std::size_t w = std::size_t(N);
  const index_t m = rows();
  const bool exchange = A_.comm().size() > 1 && !nbs.empty();
  detail::DeviceTransport* transport = exchange ? &A_.comm().device_transport() : nullptr;
  if (exchange) {
    if (s.send_buf.size() < s.sent * w) s.send_buf = DeviceArray<double>(s.sent * w);
    if (s.halo_buf.size() < A_.halo_columns().size() * w) s.halo_buf = DeviceArray<double>(A_.halo_columns().size() * w);
    if (s.sent > 0) {
      const std::int64_t total = std::int64_t(s.sent) * N;
      constexpr int kBlock = 256;
      pack_halo_kernel<<<unsigned((total + kBlock - 1) / kBlock), kBlock>>>(s.send_rows.data(), std::int64_t(s.sent), N,
                                                                            X, ldx, s.send_buf.data());
      KRYSP_CUDA_CHECK_LAUNCH("pack_halo_kernel");
    }
    std::vector<detail::CommMessage> sends, recvs;
    for (std::size_t q = 0; q < nbs.size(); ++q) {
      const auto& nb = nbs[q];
      if (!nb.send_rows.empty())
        sends.push_back({nb.rank, s.send_buf.data() + s.send_at[q] * w, nb.send_rows.size() * w * sizeof(double)});
      if (nb.recv_end > nb.recv_begin)
        recvs.push_back({nb.rank, s.halo_buf.data() + std::size_t(nb.recv_begin) * w,
                         std::size_t(nb.recv_end - nb.recv_begin) * w * sizeof(double)});
    }
    transport->start_exchange(sends, recvs);
  }
  // The local block while the halo travels.
  if (m > 0) {
    if (!s.local_plan.valid()) {
      KRYSP_CUDA_CHECK(cudaMemset2DAsync(Y, std::size_t(ldy) * sizeof(double), 0, w * sizeof(double), std::size_t(m)));
    } else if (N == 1 && ldx == 1 && ldy == 1) {
      s.local_plan.apply(A_.local_block(), 1.0, X, 0.0, Y);
    } else {
      auto it = s.local_spmm.find(N);
      if (it == s.local_spmm.end()) it = s.local_spmm.emplace(N, SpmmPlan<double>(A_.local_block(), N, s.spmm_options)).first;
      it->second.apply(A_.local_block(), 1.0, X, ldx, 0.0, Y, ldy);
    }
  }
  if (exchange) {
    const bool timed = s.timing;
    if (timed) {
      while (s.events.size() < s.used + 2) {
        s.events.emplace_back();
        KRYSP_CUDA_CHECK(cudaEventCreate(&s.events.back()));
      }
      KRYSP_CUDA_CHECK(cudaEventRecord(s.events[s.used], 0));
    }
    transport->finish_exchange();
    if (timed) {
      KRYSP_CUDA_CHECK(cudaEventRecord(s.events[s.used + 1], 0));
      s.used += 2;
    }
  }
  // Then the off-rank block adds the halo's share, on its rows only.
  if (s.off_plan.valid()) {
    const std::size_t b = std::size_t(s.off.rows());
    if (s.off_y.size() < b * w) s.off_y = DeviceArray<double>(b * w);
    if (N == 1) {
      s.off_plan.apply(s.off, 1.0, s.halo_buf.data(), 0.0, s.off_y.data());
    } else {
      auto it = s.off_spmm.find(N);
      if (it == s.off_spmm.end()) it = s.off_spmm.emplace(N, SpmmPlan<double>(s.off, N, s.spmm_options)).first;
      it->second.apply(s.off, 1.0, s.halo_buf.data(), N, 0.0, s.off_y.data(), N);
    }
    const std::int64_t total = std::int64_t(b) * N;
    constexpr int kBlock = 256;
    scatter_add_kernel<<<unsigned((total + kBlock - 1) / kBlock), kBlock>>>(s.off_rows.data(), std::int64_t(b), N,
                                                                           s.off_y.data(), Y, ldy);
    KRYSP_CUDA_CHECK_LAUNCH("scatter_add_kernel");
  }
}

void DeviceDistCsr::apply(const double* x, double* y) const {
  KRYSP_REQUIRE(rows() == 0 || (x && y), "DeviceDistCsr::apply: null vector");
  product(1, x, 1, y, 1);
}

void DeviceDistCsr::apply_block(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const {
  KRYSP_REQUIRE(N >= 1 && ldx >= N && ldy >= N && (rows() == 0 || (X && Y)), "DeviceDistCsr: block of ", N,
                " columns with ld ", ldx, " and ", ldy);
  product(N, X, ldx, Y, ldy);
}

}  // namespace krysp
