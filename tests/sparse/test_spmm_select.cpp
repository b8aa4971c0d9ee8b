// SpMM on the host: the rule's properties (valid, complete picks; the documented regimes; the
// parameters' directions; distance to the tuned pick on recorded runs), configuration completion
// and validation, the tuning candidates and cache, the merge-path partition, the host reference
// spmm_host, and a lane-exact host emulation of the five device kernels (same index functions as
// the kernels, sparse/cuda/spmm_common.hpp) against a long-double reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmm_common.hpp"
#include "krysp/sparse/cuda/spmm_launch.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/host/spmm_reference.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmm_panels.hpp"
#include "krysp/sparse/spmm_select.hpp"
#include "sparse/recorded_bench.hpp"
#include "sparse_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;
using namespace krysp::detail;

namespace doctest {
template <>
struct StringMaker<krysp::SpmmConfig> {
  static String convert(const krysp::SpmmConfig& c) { return c.to_string().c_str(); }
};
}  // namespace doctest

namespace {

using test::cfg;
using test::with_long;
using test::with_split;
/// The rules' device: an H100's wave and L2 (the constants were measured there).
constexpr DevicePolicy kH100 = test::kH100Policy;

template <class T>
RowStats stats_of(const CsrMatrix<T>& A) {
  return row_stats(A.host_view());
}

/// Row statistics made up for a rule test.
RowStats made_up_stats(index_t rows, index_t nnz, double mean, double stddev, index_t max_len) {
  RowStats s;
  s.rows = rows;
  s.nnz = nnz;
  s.mean = mean;
  s.stddev = stddev;
  s.max_len = max_len;
  return s;
}

// ---- host emulation of the device kernels -----------------------------------------------------
//
// Mirrors sparse/cuda/spmm_kernels.cuh lane by lane: same loops, same index functions, the
// shuffles replaced by reads of the partner lane's registers. It also checks that every column
// of a row segment is written exactly once and that no column >= N of X is read.

template <class T>
struct Emu {
  const CsrView<T> A;
  index_t N;
  SpmmConfig c;
  const T* X;
  index_t ldx;
  std::int64_t coverage_errors = 0;
  std::int64_t out_of_bounds_reads = 0;
  std::int64_t misaligned_pairs = 0;  // paired CSC lanes: a pair not aligned to two, or half past N
  std::vector<T> acc, next;  // S·M partial sums of the lanes (lane-major)
  std::vector<int> written;  // per column: stores in the current chunk

  T load_x(const T* row, index_t col) {
    if (col < 0 || col >= N) ++out_of_bounds_reads;
    return row[col];
  }

  // One segment, VDL layout; put(col, sum) receives each column's total.
  template <class Put>
  void vdl_segment(index_t b, index_t e, Put put) {
    constexpr int VW = kSpmmVecWidth<T>;
    const int S = c.subwarp, Q = c.col_lanes, NV = c.per_lane, M = NV * VW;
    const int log2q = spmm_log2(Q), log2p = spmm_log2(S) - log2q, P = 1 << log2p;
    const int h = vdl_halving_steps(spmm_log2(M), log2p);
    const index_t chunk = index_t(Q) * NV * VW;
    written.assign(std::size_t(N), 0);
    for (index_t j0 = 0; j0 < N; j0 += chunk) {
      acc.assign(std::size_t(S) * M, T(0));
      auto A_ = [&](int lane, int t) -> T& { return acc[std::size_t(lane) * M + t]; };
      for (int lane = 0; lane < S; ++lane) {
        const int q = lane & (Q - 1), p = lane >> log2q;
        if (vdl_valid(N, vdl_slot_col(j0, q, 0, Q, VW), VW) <= 0) continue;  // no column: sums stay 0
        for (std::int64_t k = std::int64_t(b) + p; k < e; k += P) {
          const index_t cc = A.col_idx[k];
          const T a = A.values[k];
          const T* xr = X + std::int64_t(cc) * ldx;
          for (int v = 0; v < NV; ++v) {
            const index_t col = vdl_slot_col(j0, q, v, Q, VW);
            const int m = vdl_valid(N, col, VW);
            if (m <= 0) continue;
            for (int t = 0; t < VW; ++t) {
              const T x = t < m ? load_x(xr, col + t) : T(0);
              A_(lane, v * VW + t) += a * x;
            }
          }
        }
      }
      // reduce-scatter: `next` gets what each lane holds after the shuffle step
      for (int s = 0; (1 << s) < M; ++s) {
        if (s >= h) continue;
        const int half = M >> (s + 1);
        next = acc;
        for (int lane = 0; lane < S; ++lane) {
          const int p = lane >> log2q;
          const int partner = lane ^ ((1 << s) << log2q);
          const int pp = partner >> log2q;
          const bool upper = (p >> s) & 1, partner_upper = (pp >> s) & 1;
          for (int t = 0; t < half; ++t) {
            const T send = partner_upper ? A_(partner, t) : A_(partner, t + half);
            const T keep = upper ? A_(lane, t + half) : A_(lane, t);
            next[std::size_t(lane) * M + t] = keep + send;
          }
        }
        acc.swap(next);
      }
      for (int s = h; s < log2p; ++s) {
        next = acc;
        for (int lane = 0; lane < S; ++lane)
          next[std::size_t(lane) * M] = A_(lane, 0) + A_(lane ^ ((1 << s) << log2q), 0);
        acc.swap(next);
      }
      // store
      for (int lane = 0; lane < S; ++lane) {
        const int q = lane & (Q - 1), p = lane >> log2q;
        if ((p >> h) != 0) continue;
        const int live = M >> h, off = vdl_scatter_offset(p, h, M);
        for (int t = 0; t < live; ++t) {
          const int i = off + t;
          const index_t col = vdl_slot_col(j0, q, i / VW, Q, VW) + i % VW;
          if (col < N) {
            ++written[std::size_t(col)];
            put(col, A_(lane, t));
          }
        }
      }
    }
    for (index_t j = 0; j < N; ++j)
      if (written[std::size_t(j)] != 1) ++coverage_errors;
  }

  template <class Put>
  void csc_segment(index_t b, index_t e, Put put) {
    const int S = c.subwarp, NC = c.per_lane;
    const index_t chunk = index_t(S) * NC;
    // X from the host tests is vector-aligned; with ldx a multiple of the vector width, as the plan
    // finds it (SpmmPlan::vector_aligned)
    const bool paired = csc_paired(NC, ldx % kSpmmVecWidth<T> == 0, N);
    written.assign(std::size_t(N), 0);
    for (index_t j0 = 0; j0 < N; j0 += chunk) {
      for (int lane = 0; lane < S; ++lane)
        for (int cc = 0; cc < NC; ++cc) {
          const index_t col = csc_col(j0, lane, cc, S, paired);
          // a paired lane loads its two columns from an entry aligned to two: even column and ldx
          if (paired && cc == 0 && (col % 2 != 0 || ldx % 2 != 0)) ++misaligned_pairs;
          if (paired && (col < N) != (csc_col(j0, lane, 1 - cc, S, paired) < N)) ++misaligned_pairs;
          if (col >= N) continue;
          // ksplit: each slice summed on its own, the slices' sums added in slice order
          const int KS = c.split_count();
          T total = 0;
          for (int q = 0; q < KS; ++q) {
            index_t sb = b, se = e;
            csc_slice(b, e, q, KS, &sb, &se);
            T acc = 0;
            for (std::int64_t kk = sb; kk < se; kk += S) {
              const int cnt = se - kk < S ? int(se - kk) : S;
              for (int t = 0; t < cnt; ++t) {
                const T a = A.values[kk + t];
                acc += a * load_x(X + std::int64_t(A.col_idx[kk + t]) * ldx, col);
              }
            }
            total = q == 0 ? acc : total + acc;
          }
          ++written[std::size_t(col)];
          put(col, total);
        }
    }
    for (index_t j = 0; j < N; ++j)
      if (written[std::size_t(j)] != 1) ++coverage_errors;
  }

  template <class Put>
  void segment(index_t b, index_t e, Put put) {
    if (is_vdl(c.algorithm))
      vdl_segment(b, e, put);
    else
      csc_segment(b, e, put);
  }
};

template <class T>
void axpby(T* y, T alpha, T s, T beta) {
  *y = beta == T(0) ? alpha * s : alpha * s + beta * *y;
}

/// One unit of the SeqNnz kernel (spmm_seq.cu), lane by lane: the same slices, walk, segmented
/// scan (shuffles replaced by reads of the partner lane's registers) and destinations.
/// put_y(row, col, sum) stores into Y; carries are raw.
template <class T, class PutY>
void emulate_seq_unit(Emu<T>& emu, index_t u, index_t U, index_t i0, index_t k0, index_t i1, index_t k1, T* carries,
                      PutY put_y) {
  const auto& A = emu.A;
  const index_t N = emu.N;
  const std::int64_t L = (std::int64_t(i1) - i0) + (std::int64_t(k1) - k0);
  MergeCoord s[32];
  index_t er[32], ek[32], rs0[32];
  bool deferred[32];
  int seg[32];
  for (int l = 0; l < 32; ++l) s[l] = seq_unit_search(seq_lane_diag(l, L), A.row_ptr, i0, k0, i1, k1);
  for (int l = 0; l < 32; ++l) {
    er[l] = l < 31 ? s[l + 1].row : i1;
    ek[l] = l < 31 ? s[l + 1].nnz : k1;
    rs0[l] = A.row_ptr[s[l].row];
    deferred[l] = s[l].row < er[l] && rs0[l] < s[l].nnz;
    const bool head = l == 0 || s[l].row != er[l];
    seg[l] = head ? l : seg[l - 1];
    // the slices tile the unit's path: L items in all, lane l the ones from its diagonal
    if (std::int64_t(er[l]) - s[l].row + ek[l] - s[l].nnz != seq_lane_diag(l + 1, L) - seq_lane_diag(l, L))
      ++emu.coverage_errors;
  }
  const int W = seq_width(N);
  for (index_t j0 = 0; j0 < N; j0 += W) {
    const int m = N - j0 < W ? int(N - j0) : W;
    std::vector<T> acc(std::size_t(32) * W, T(0)), head(acc), next;
    auto at = [&](std::vector<T>& v, int l, int t) -> T& { return v[std::size_t(l) * W + t]; };
    auto add_nonzero = [&](int l, index_t k) {
      const T a = A.values[k];
      const T* xr = emu.X + std::int64_t(A.col_idx[k]) * emu.ldx;
      for (int t = 0; t < W; ++t) at(acc, l, t) += a * (t < m ? emu.load_x(xr, j0 + t) : T(0));
    };
    for (int l = 0; l < 32; ++l) {
      index_t k = s[l].nnz;
      for (index_t i = s[l].row; i < er[l]; ++i) {
        for (; k < A.row_ptr[i + 1]; ++k) add_nonzero(l, k);
        if (i == s[l].row && deferred[l]) {
          for (int t = 0; t < W; ++t) at(head, l, t) = at(acc, l, t);
        } else {
          if (spmm_unit_dest(i, i0, k0, i1, A.row_ptr[i]) != SpmmDest::Direct) ++emu.coverage_errors;
          for (int t = 0; t < m; ++t) put_y(i, j0 + t, at(acc, l, t));
        }
        for (int t = 0; t < W; ++t) at(acc, l, t) = T(0);
      }
      for (; k < ek[l]; ++k) add_nonzero(l, k);
    }
    for (int off = 1; off < 32; off *= 2) {
      next = acc;
      for (int l = 0; l < 32; ++l)
        if (l - off >= seg[l])
          for (int t = 0; t < W; ++t) at(next, l, t) = at(acc, l - off, t) + at(acc, l, t);
      acc.swap(next);
    }
    for (int l = 0; l < 32; ++l) {
      if (!deferred[l]) continue;
      if (l > 0)
        for (int t = 0; t < W; ++t) at(head, l, t) = at(acc, l - 1, t) + at(head, l, t);
      const SpmmDest d = spmm_unit_dest(s[l].row, i0, k0, i1, rs0[l]);
      if (d == SpmmDest::Tail) ++emu.coverage_errors;
      for (int t = 0; t < m; ++t) {
        if (d == SpmmDest::Direct)
          put_y(s[l].row, j0 + t, at(head, l, t));
        else
          carries[spmm_carry_offset(d, u, U, N) + j0 + t] = at(head, l, t);
      }
    }
    if (i1 < A.rows)
      for (int t = 0; t < m; ++t) carries[spmm_carry_offset(SpmmDest::Tail, u, U, N) + j0 + t] = at(acc, 31, t);
  }
}

/// Y = alpha·A·X + beta·Y the way the device would compute it with configuration c.
template <class T>
Emu<T> emulate(const CsrMatrix<T>& M, index_t N, const SpmmConfig& c, T alpha, const T* X, index_t ldx, T beta, T* Y,
               index_t ldy) {
  Emu<T> emu{M.host_view(), N, c, X, ldx};
  const auto& A = emu.A;
  // every entry of Y (columns < N) is stored exactly once, directly or by the fix-up
  std::vector<int> stores(std::size_t(A.rows) * N, 0);
  auto put_y = [&](index_t r, index_t j, T s) {
    ++stores[std::size_t(r) * N + j];
    axpby(Y + std::int64_t(r) * ldy + j, alpha, s, beta);
  };
  auto check_stores = [&] {
    for (int n : stores)
      if (n != 1) ++emu.coverage_errors;
  };
  if (!is_nnz_balanced(c.algorithm)) {
    for (index_t r = 0; r < A.rows; ++r)
      emu.segment(A.row_ptr[r], A.row_ptr[r + 1], [&](index_t j, T s) { put_y(r, j, s); });
    check_stores();
    return emu;
  }
  const SpmmPartition part = spmm_partition_host(A.row_ptr, A.rows, A.nnz, c.items_per_warp);
  const index_t U = part.units;
  // NaN-filled carries: a fix-up read of a slot nobody wrote poisons the result.
  std::vector<T> carries(std::size_t(2) * U * N, std::numeric_limits<T>::quiet_NaN());
  for (index_t u = 0; u < U; ++u) {
    const index_t i0 = part.unit_row[u], k0 = part.unit_nnz[u], i1 = part.unit_row[u + 1], k1 = part.unit_nnz[u + 1];
    if (c.algorithm == SpmmAlgorithm::SeqNnz) {
      emulate_seq_unit(emu, u, U, i0, k0, i1, k1, carries.data(), put_y);
      continue;
    }
    const std::int64_t last = i1 < A.rows ? i1 : A.rows - 1;
    for (std::int64_t r = i0; r <= last; ++r) {
      const index_t rs = A.row_ptr[r], re = A.row_ptr[r + 1];
      const index_t b = rs > k0 ? rs : k0, e = re < k1 ? re : k1;
      if (b > e) ++emu.coverage_errors;
      const SpmmDest d = spmm_unit_dest(index_t(r), i0, k0, i1, rs);
      if (d == SpmmDest::Direct) {
        emu.segment(b, e, [&](index_t j, T s) { put_y(index_t(r), j, s); });
      } else {
        T* dst = carries.data() + spmm_carry_offset(d, u, U, N);
        emu.segment(b, e, [&](index_t j, T s) { dst[j] = s; });
      }
    }
  }
  for (index_t w = 0; w < part.num_splits(); ++w) {
    const index_t row = part.splits[3 * w], us = part.splits[3 * w + 1], ue = part.splits[3 * w + 2];
    for (index_t j = 0; j < N; ++j) {
      T s = 0;
      for (index_t u = us; u < ue; ++u) s += carries[spmm_carry_offset(SpmmDest::Tail, u, U, N) + j];
      s += carries[spmm_carry_offset(SpmmDest::Head, ue, U, N) + j];
      put_y(row, j, s);
    }
  }
  check_stores();
  return emu;
}

/// Configurations to emulate for N columns: every algorithm at several sub-warps, column lanes,
/// vectors per lane and unit sizes (small units stress the split rows).
std::vector<SpmmConfig> emulation_configs(index_t N, int value_bytes, const RowStats& s) {
  std::vector<SpmmConfig> out;
  auto add = [&](SpmmConfig c) {
    c = complete_spmm_config(c, N, value_bytes, s);
    if (is_valid(c) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  add(choose_spmm_rule(kH100, s, N, value_bytes));
  for (SpmmAlgorithm a : {SpmmAlgorithm::VdlRow, SpmmAlgorithm::VdlNnz}) {
    const int k = is_nnz_balanced(a) ? 8 : 0;
    add(cfg(a, 0, 0, 0, k));
    for (int S : {2, 8, 32})
      for (int Q : {1, 2, 4, 32})
        for (int V : {1, 2})
          if (Q <= S) add(cfg(a, S, Q, V, k));
  }
  add(cfg(SpmmAlgorithm::VdlNnz, 4, 1, 2, 37));
  for (int S : {2, 8, 32})  // four vectors a lane: the lean kernel, where N fits
    if (spmm_runs_at(cfg(SpmmAlgorithm::VdlRow, S, 1, 4), N, value_bytes)) add(cfg(SpmmAlgorithm::VdlRow, S, 1, 4));
  for (SpmmAlgorithm a : {SpmmAlgorithm::CscRow, SpmmAlgorithm::CscNnz}) {
    const int k = is_nnz_balanced(a) ? 5 : 0;
    add(cfg(a, 0, 0, 0, k));
    for (int S : {2, 4, 16, 32})
      for (int C : {1, 2}) add(cfg(a, S, 0, C, k));
  }
  add(cfg(SpmmAlgorithm::CscNnz, 8, 0, 1, 256));
  // CscRow with sub-warps sharing a row (empty slices when a row is shorter than ksplit)
  for (int S : {2, 16, 32})
    for (int KS : {2, 4, 8}) {
      SpmmConfig c = cfg(SpmmAlgorithm::CscRow, S, 0, S == 16 ? 2 : 1);
      c.ksplit = KS;
      add(c);
    }
  // SeqNnz: units smaller than the warp (empty lanes), odd sizes, several items per lane
  for (int k : {0, 4, 5, 37, 256, 1000}) add(cfg(SpmmAlgorithm::SeqNnz, 0, 0, 0, k));
  return out;
}

/// One random problem (X, Y0, α, β) for A and N, its expected result computed once, then every
/// configuration emulated on it.
template <class T>
void emulate_and_check(const std::string& name, const CsrMatrix<T>& A, index_t N, const std::vector<SpmmConfig>& cs,
                       index_t ldx, index_t ldy, bool beta_zero) {
  const T alpha = T(test::random_scalar());
  const T beta = beta_zero ? T(0) : T(test::random_scalar());
  const auto X = test::random_block<T>(A.cols(), N, ldx, std::numeric_limits<T>::quiet_NaN());
  auto Y0 = test::random_block<T>(A.rows(), N, ldy, T(-777.25));
  if (beta_zero)
    for (index_t i = 0; i < A.rows(); ++i)
      for (index_t j = 0; j < N; ++j) Y0[std::size_t(i) * ldy + j] = std::numeric_limits<T>::quiet_NaN();
  const test::SpmmExpected<T> expected(A, N, alpha, X, ldx, beta, Y0, ldy);
  for (const SpmmConfig& c : cs) {
    auto Y = Y0;
    const Emu<T> emu = emulate(A, N, c, alpha, X.data(), ldx, beta, Y.data(), ldy);
    const std::string what = name + " N=" + std::to_string(N) + " " + c.to_string() + " ldx=" +
                             std::to_string(ldx) + " ldy=" + std::to_string(ldy) + (beta_zero ? " beta=0" : "");
    INFO(what);
    CHECK(emu.coverage_errors == 0);
    CHECK(emu.out_of_bounds_reads == 0);
    CHECK(emu.misaligned_pairs == 0);
    expected.check(Y, what);
  }
}

}  // namespace

// ---- rule ---------------------------------------------------------------------------------------
//
// The rule's picks are checked for properties, not pinned: every pick is a valid, complete
// configuration the kernels run at its N; the kernel family follows the regime the docs state
// (docs/tuning.md, "The selection rule"); each SpmmRuleParams field moves the pick in its
// documented direction; and on the recorded benchmark runs the pick is within a stated factor of
// the fastest tuning candidate. A retune changes SpmmRuleParams' defaults, not these tests.

namespace {

/// The rule's test matrices: generated ones of several sizes and structures, the bundled
/// tests/data matrices, the adversarial ones and a few made-up statistics (edge cases).
const std::vector<std::pair<std::string, RowStats>>& rule_matrices() {
  static const auto all = [] {
    std::vector<std::pair<std::string, RowStats>> out;
    for (index_t n : {8, 32, 100, 300}) out.push_back({"lap2d-" + std::to_string(n), stats_of(laplacian_2d(n, n))});
    for (index_t n : {5, 16, 40}) out.push_back({"lap3d-" + std::to_string(n), stats_of(laplacian_3d(n, n, n))});
    out.push_back({"powerlaw-3000", stats_of(random_power_law(3000, 8.0, 1000, 3))});
    out.push_back({"powerlaw-40000", stats_of(random_power_law(40000, 8.0, 20000, 1))});
    out.push_back({"banded-1000", stats_of(random_banded(1000, 9, 100, 2))});
    out.push_back({"banded-100000", stats_of(random_banded(100000, 27, 200, 4))});
    out.push_back({"few-long-rows", stats_of(test::few_long_rows())});
    for (const auto& m : test::adversarial_matrices(false)) out.push_back({m.name, stats_of(m.A)});
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(KRYSP_TEST_DATA))
      if (e.path().extension() == ".mtx") files.push_back(e.path().stem().string());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) out.push_back({f, stats_of(test::load(f))});
    out.push_back({"empty", RowStats{}});
    out.push_back({"uniform-4096", made_up_stats(100000, 100000 * 4096, 4096, 0, 4096)});
    out.push_back({"large-skewed", made_up_stats(1000000, 8000000, 8, 16, 64)});
    out.push_back({"large-3d-like", made_up_stats(4000000, 28000000, 7, 0.3, 7)});
    return out;
  }();
  return all;
}

/// The devices of the rule tests: an H100 (the defaults were tuned there), a GPU of 78
/// multiprocessors, and a small one.
const DevicePolicy kRuleDevices[] = {kH100, {78, 2048, std::int64_t(40) << 20}, {16, 1536, std::int64_t(4) << 20}};

/// N from 1 to 64 (all of them: the rule's bounds are in N).
std::vector<index_t> all_n() {
  std::vector<index_t> out;
  for (index_t N = 1; N <= 64; ++N) out.push_back(N);
  return out;
}

int vec_width_of(int value_bytes) { return value_bytes == 4 ? 4 : 2; }

/// The documented facts about a pick c = choose_spmm_rule(device, s, N, value_bytes, p) (and the
/// uncut pick u); each failure names the fact.
void check_rule_properties(const DevicePolicy& device, const RowStats& s, index_t N, int vb, const SpmmRuleParams& p) {
  const SpmmConfig c = choose_spmm_rule(device, s, N, vb, p);
  const SpmmConfig u = spmm_uncut_rule(device, s, N, vb, p);
  const bool lb = spmm_latency_bound(device, s, p);
  const bool empty = s.rows == 0 || s.nnz == 0;
  INFO("pick ", c.to_string(), " uncut ", u.to_string(), lb ? " (latency-bound)" : "");
  for (const SpmmConfig& x : {c, u}) {
    std::string why;
    CHECK_MESSAGE(is_valid(x, &why), why);                         // a configuration the kernels accept
    CHECK(spmm_runs_at(x, N, vb));                                 // ... at this N
    CHECK(complete_spmm_config(x, N, vb, s, p) == x);              // complete: nothing left to derive
    CHECK(x.panels == 0);                                          // panels are choose_spmm_panels'
    CHECK((x.algorithm != SpmmAlgorithm::CscNnz || N > p.vdl_max_n));  // CSC only above vdl_max_n
    CHECK((x.algorithm != SpmmAlgorithm::CscRow || N > p.vdl_max_n));
    CHECK((x.algorithm != SpmmAlgorithm::VdlNnz || N <= p.vdl_max_n));  // VDL: up to vdl_max_n, or the
    if (x.algorithm == SpmmAlgorithm::VdlRow && N > p.vdl_max_n) {     // lean kernel on a latency-bound
      CHECK(lb);                                                        // matrix where N fits it
      CHECK(spmm_lean_vdl_vectors(N, vb) > 0);
    }
    if (lb && x.algorithm == SpmmAlgorithm::VdlRow)  // latency-bound VDL: all columns in one chunk
      CHECK(N <= index_t(x.col_lanes) * x.per_lane * vec_width_of(vb));
    if (x.algorithm == SpmmAlgorithm::SeqNnz) CHECK(N <= (lb ? p.tune_seq_max_n : p.seq_max_n));
    if (x.split_count() > 1) {  // rows shared by sub-warps: latency-bound, slices of split_max_slice
      CHECK(lb);
      CHECK(N >= p.small_csc_min_n());
      CHECK(double(s.max_len) / x.split_count() <= p.split_max_slice);
    }
    if (empty) CHECK_FALSE(is_nnz_balanced(x.algorithm));  // nothing to balance
  }
  CHECK(u.long_row == 0);
  if (c.long_row > 0) {  // long rows cut: latency-bound, at the threshold, only rows long enough
    CHECK(lb);
    CHECK(c.long_row == spmm_long_row_threshold(device, s, p));
    CHECK(double(s.max_len) >= p.long_row_rule_min_cut * double(c.long_row));
    CHECK(c.split_count() == 1);
  } else {
    CHECK(c == u);
  }
  if (!empty && !is_nnz_balanced(u.algorithm)) CHECK_FALSE(spmm_long_row(device, s, u, p));  // row kernels: no
  if (!lb && !empty) {                                                                       // row too long
    if (s.cv() > p.nnz_balance_min_cv) CHECK(is_nnz_balanced(c.algorithm));  // skewed: balanced by nonzeros
    if (!is_nnz_balanced(c.algorithm)) {
      CHECK(is_vdl(c.algorithm) == (N <= p.vdl_max_n));  // VDL up to vdl_max_n, CSC above
      // CSC: half the lanes with two columns each exactly for even N in [half_lanes_min_n, half_lanes_max_n]
      const bool half = N % 2 == 0 && N >= p.half_lanes_min_n && N <= p.half_lanes_max_n;
      if (!is_vdl(c.algorithm))
        CHECK((c.per_lane == 2 && 2 * c.subwarp == spmm_pow2_at_least(double(N), 2, 32)) == half);
    }
  }
}

}  // namespace

TEST_CASE("SpMM rule: every pick is a valid, complete configuration that runs, on every matrix, N and device") {
  const SpmmRuleParams p;
  for (const auto& [name, s] : rule_matrices())
    for (const DevicePolicy& device : kRuleDevices)
      for (int vb : {8, 4})
        for (index_t N : all_n()) {
          INFO(name, " ", s.to_string(), " SMs=", device.multiprocessors, " bytes=", vb, " N=", N);
          check_rule_properties(device, s, N, vb, p);
        }
}

TEST_CASE("SpMM rule: deterministic; the default parameters are the defaulted argument; candidates start with it") {
  for (const auto& [name, s] : rule_matrices())
    for (int vb : {8, 4})
      for (index_t N : {1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64}) {
        INFO(name, " bytes=", vb, " N=", N);
        const SpmmConfig c = choose_spmm_rule(kH100, s, N, vb);
        CHECK(choose_spmm_rule(kH100, s, N, vb) == c);
        CHECK(choose_spmm_rule(kH100, s, N, vb, SpmmRuleParams{}) == c);
        const auto cands = spmm_candidates(kH100, s, N, vb);
        REQUIRE_FALSE(cands.empty());
        CHECK(cands.front() == c);
      }
}

TEST_CASE("SpMM rule: each parameter moves the pick in its documented direction") {
  const SpmmRuleParams d;  // the defaults
  const RowStats lap = stats_of(laplacian_3d(40, 40, 40));  // 64000 rows of 7: fills an H100
  REQUIRE_FALSE(spmm_latency_bound(kH100, lap, d));
  SUBCASE("vdl_max_n: VDL up to it, CSC above") {
    for (int vmax : {1, 2, 4, 8, 16}) {
      SpmmRuleParams p;
      p.vdl_max_n = vmax;
      for (index_t N : all_n()) {
        INFO("vdl_max_n=", vmax, " N=", N);
        CHECK(is_vdl(choose_spmm_rule(kH100, lap, N, 8, p).algorithm) == (N <= vmax));
        check_rule_properties(kH100, lap, N, 8, p);
      }
    }
  }
  SUBCASE("half_lanes_min_n / half_lanes_max_n: the range of N with two columns a lane") {
    SpmmRuleParams base;  // stated here, so that a retune of the defaults does not move the test
    base.vdl_max_n = 4;   // CSC from N = 5
    base.half_lanes_min_n = 16;
    base.half_lanes_max_n = 32;
    SpmmRuleParams p = base;
    p.half_lanes_min_n = 8;
    p.half_lanes_max_n = 64;
    CHECK(choose_spmm_rule(kH100, lap, 16, 8, base).per_lane == 2);
    CHECK(choose_spmm_rule(kH100, lap, 8, 8, base).per_lane == 1);
    CHECK(choose_spmm_rule(kH100, lap, 8, 8, p).per_lane == 2);
    p.half_lanes_min_n = 65;  // none
    for (index_t N = 5; N <= 32; ++N) CHECK(choose_spmm_rule(kH100, lap, N, 8, p).per_lane == 1);
  }
  SUBCASE("latency_bound_waves: the size below which a matrix is latency-bound") {
    const RowStats small = stats_of(laplacian_2d(32, 32));
    REQUIRE(spmm_latency_bound(kH100, small, d));
    SpmmRuleParams p;
    p.latency_bound_waves = 0;  // nothing is latency-bound: the large-matrix rule
    CHECK_FALSE(spmm_latency_bound(kH100, small, p));
    CHECK(spmm_long_row_threshold(kH100, stats_of(test::few_long_rows()), p) == 0);
    for (index_t N : {2, 8, 16}) {
      CHECK(is_vdl(choose_spmm_rule(kH100, small, N, 8, p).algorithm) == (N <= p.vdl_max_n));
      check_rule_properties(kH100, small, N, 8, p);
    }
    p.latency_bound_waves = 1e6;  // everything is
    CHECK(spmm_latency_bound(kH100, lap, p));
    CHECK(choose_spmm_rule(kH100, lap, 8, 8, p).algorithm == SpmmAlgorithm::VdlRow);  // the lean kernel at N = 8
  }
  SUBCASE("nnz_balance_min_cv: skewed rows balanced by nonzeros above it") {
    const RowStats skewed = made_up_stats(1000000, 8000000, 8, 16, 64);  // cv 2, no long row
    REQUIRE(skewed.cv() > d.nnz_balance_min_cv);
    SpmmRuleParams p;
    p.nnz_balance_min_cv = 1e9;
    for (index_t N : {1, 2, 4, 8, 16, 64}) {
      INFO("N=", N);
      CHECK(is_nnz_balanced(choose_spmm_rule(kH100, skewed, N, 8, d).algorithm));
      CHECK_FALSE(is_nnz_balanced(choose_spmm_rule(kH100, skewed, N, 8, p).algorithm));
    }
    p.nnz_balance_min_cv = 0;  // any variation at all: the Laplacian's boundary rows
    REQUIRE(lap.cv() > 0);
    CHECK(is_nnz_balanced(choose_spmm_rule(kH100, lap, 2, 8, p).algorithm));
    CHECK_FALSE(is_nnz_balanced(choose_spmm_rule(kH100, lap, 2, 8, d).algorithm));
  }
  SUBCASE("seq_max_n: SeqNnz for skewed large matrices up to it") {
    const RowStats skewed = made_up_stats(1000000, 8000000, 8, 16, 64);
    SpmmRuleParams p;
    for (int smax : {0, 2, 4, 8}) {
      p.seq_max_n = smax;
      for (index_t N : {1, 2, 3, 4, 5, 8, 9})
        CHECK((choose_spmm_rule(kH100, skewed, N, 8, p).algorithm == SpmmAlgorithm::SeqNnz) == (N <= smax));
    }
  }
  SUBCASE("long_row_factor: a longer row still fits the row kernel when it is larger") {
    RowStats s = made_up_stats(100000, index_t(100000) * 4096, 4096, 0, 4096);
    s.max_len = 200000;  // past 4 × the average work per resident sub-warp
    REQUIRE(is_nnz_balanced(choose_spmm_rule(kH100, s, 2, 8, d).algorithm));
    SpmmRuleParams p;
    p.long_row_factor = 100;
    CHECK_FALSE(is_nnz_balanced(choose_spmm_rule(kH100, s, 2, 8, p).algorithm));
  }
  SUBCASE("long_row_rule_min_cut, long_row_min: when and where long rows are cut") {
    const RowStats s = stats_of(test::few_long_rows());
    REQUIRE(choose_spmm_rule(kH100, s, 2, 8, d).long_row > 0);
    SpmmRuleParams p;
    p.long_row_rule_min_cut = 1e9;  // never long enough
    for (index_t N : {1, 2, 8, 16, 64}) CHECK(choose_spmm_rule(kH100, s, N, 8, p).long_row == 0);
    p = d;
    p.long_row_min = 100;  // a higher threshold
    CHECK(choose_spmm_rule(kH100, s, 2, 8, p).long_row == 100);
    CHECK(choose_spmm_rule(kH100, s, 2, 8, d).long_row < 100);
  }
  SUBCASE("split_max_slice, split_wave_cost: rows shared by sub-warps") {
    SpmmRuleParams none;
    none.split_max_slice = 0;  // no slice short enough: never split
    SpmmRuleParams cheap;
    cheap.split_wave_cost = 0;  // threads cost nothing: split as far as slices allow
    int splits = 0;
    for (const auto& [name, s] : rule_matrices())
      for (index_t N : {5, 8, 16, 32, 64}) {
        INFO(name, " N=", N);
        CHECK(choose_spmm_rule(kH100, s, N, 8, none).split_count() == 1);
        splits += choose_spmm_rule(kH100, s, N, 8, d).split_count() > 1;
        if (spmm_latency_bound(kH100, s, d) && s.nnz > 0)
          CHECK(spmm_split_rule(kH100, s, N, cheap) >= spmm_split_rule(kH100, s, N, d));
      }
    CHECK(splits > 0);  // the defaults do split some of them
  }
  SUBCASE("vdl_wide_waves, vdl_subwarp_wave_cost: the latency-bound VDL sub-warp") {
    const RowStats s = stats_of(test::load("Trefethen_2000"));  // 2000 rows: 32 lanes a row
    REQUIRE(spmm_small_vdl_subwarp(kH100, s, 2, 8, 0, d) == 32);
    SpmmRuleParams p;
    p.vdl_wide_waves = 0;
    p.vdl_subwarp_wave_cost = 1e6;  // threads dear: the narrowest sub-warp
    CHECK(spmm_small_vdl_subwarp(kH100, s, 2, 8, 0, p) == 2);
    CHECK(choose_spmm_rule(kH100, s, 2, 8, p).subwarp == 2);
    p.vdl_subwarp_wave_cost = 0;  // threads free: the widest
    CHECK(spmm_small_vdl_subwarp(kH100, s, 2, 8, 0, p) == 32);
  }
  SUBCASE("vdl_nnz_per_lane, vdl_vectors_per_lane: the VDL geometry") {
    SpmmRuleParams p;
    p.vdl_nnz_per_lane = 8;  // more nonzeros a lane: fewer lanes a row
    CHECK(choose_spmm_rule(kH100, lap, 2, 8, p).subwarp < choose_spmm_rule(kH100, lap, 2, 8, d).subwarp);
    p = d;
    p.vdl_vectors_per_lane = 1;
    CHECK(choose_spmm_rule(kH100, lap, 4, 8, p).per_lane == 1);
    CHECK(choose_spmm_rule(kH100, lap, 4, 8, d).per_lane == 2);
  }
  SUBCASE("items_per_warp, items_per_warp_small, small_items: merge-path units") {
    const RowStats big = made_up_stats(1000000, 8000000, 8, 16, 64);
    const RowStats small = made_up_stats(10000, 80000, 8, 16, 64);
    SpmmRuleParams p;
    p.items_per_warp = 512;
    p.items_per_warp_small = 32;
    CHECK(choose_spmm_rule(kH100, big, 16, 8, p).items_per_warp == 512);
    CHECK(complete_spmm_config(cfg(SpmmAlgorithm::CscNnz), 16, 8, small, p).items_per_warp == 32);
    p.small_items = 0;  // nothing is small
    CHECK(complete_spmm_config(cfg(SpmmAlgorithm::CscNnz), 16, 8, small, p).items_per_warp == 512);
  }
  SUBCASE("tune_max_row_trips, tune_seq_max_n, tune_vdl_max_n: what tuning times") {
    const RowStats s = stats_of(test::load("bcsstk06"));
    SpmmRuleParams p;
    p.tune_max_row_trips = 0;  // every row-balanced candidate is too slow to time
    const auto cands = spmm_candidates(kH100, s, 8, 8, p);
    REQUIRE(cands.size() > 1);
    for (std::size_t i = 1; i < cands.size(); ++i) CHECK(is_nnz_balanced(cands[i].algorithm));
    p = d;
    p.tune_seq_max_n = 1;
    for (const auto& c : spmm_candidates(kH100, s, 2, 8, p)) CHECK(c.algorithm != SpmmAlgorithm::SeqNnz);
    p = d;
    p.tune_vdl_max_n = 0;
    const auto v = spmm_candidates(kH100, lap, 16, 8, p);
    for (std::size_t i = 1; i < v.size(); ++i) CHECK_FALSE(is_vdl(v[i].algorithm));
  }
}

TEST_CASE("SpMM rule: within a stated factor of the fastest tuning candidate on the recorded runs") {
  // bench_spmm's final runs (fp64; an H100 and an H200, both 132 multiprocessors) timed every
  // tuning candidate of every (matrix, N). On the matrices bundled in tests/data (126 cases a run)
  // the rule's pick must be among the timed candidates in at least 90% of the cases (a retune that
  // picks others needs a new run), and where it is, within 1.6× of the fastest on each and 10% in
  // geometric mean (the defaults: all found, at most 1.46×, 1.04× in geometric mean).
  std::map<std::string, RowStats> bundled;
  for (const auto& [name, s] : rule_matrices()) bundled[name] = s;
  for (const char* run : {"spmm_h100_2026-11-26_final.json", "spmm_h200_2026-11-26_final.json"}) {
    const test::Json j = test::recorded_bench(run);
    REQUIRE(j["precision"].string == "double");
    int cases = 0, found = 0;
    double log_sum = 0, worst = 0;
    for (const test::Json& r : j["results"].array) {
      const auto it = bundled.find(r["name"].string);
      if (r["generated"].number != 0 || it == bundled.end()) continue;
      const index_t N = index_t(r["N"].number);
      const std::string pick = choose_spmm_rule(kH100, it->second, N, 8).to_string();
      double best = 0, mine = 0;
      for (const test::Json& c : r["candidates"].array) {
        const double ms = c["ms"].number;
        if (best == 0 || ms < best) best = ms;
        if (c["config"].string == pick) mine = ms;
      }
      ++cases;
      if (mine == 0) continue;  // not timed in that run
      ++found;
      INFO(std::string(run), " ", r["name"].string, " N=", N, " pick ", pick);
      CHECK(mine / best <= 1.6);
      log_sum += std::log(mine / best);
      worst = std::max(worst, mine / best);
    }
    INFO(std::string(run), ": ", found, " of ", cases, " cases timed, worst ", worst);
    CHECK(cases >= 100);
    CHECK(found >= 0.9 * cases);
    REQUIRE(found > 0);
    CHECK(std::exp(log_sum / found) <= 1.10);
  }
}

TEST_CASE("SpMM rule: a few long rows among short ones are cut at every N") {
  const RowStats s = stats_of(test::few_long_rows());  // the matrix of the GPU test of long rows
  const index_t t = spmm_long_row_threshold(kH100, s);
  REQUIRE(t > 0);
  for (index_t N : {1, 2, 4, 8, 16, 33, 64})
    for (int vb : {4, 8}) {
      INFO("N = " << N << ", " << vb << " bytes");
      const SpmmConfig c = choose_spmm_rule(kH100, s, N, vb);
      CHECK(c.long_row == t);
      CHECK(spmm_runs_at(c, N, vb));
    }
}

TEST_CASE("SpMM config: completion keeps given fields and derives the rest") {
  RowStats s;
  s.rows = 100;
  s.nnz = 700;
  s.mean = 7;
  s.max_len = 7;
  // N = 16 doubles: 8 vectors, 2 per lane, 4 column lanes, 4 nonzero lanes (7 / 2.5) → S = 16
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::VdlRow), 16, 8, s) == cfg(SpmmAlgorithm::VdlRow, 16, 4, 2));
  // sub-warp forced to 2: column lanes capped at 2 (the rest in chunks)
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::VdlRow, 2), 16, 8, s) == cfg(SpmmAlgorithm::VdlRow, 2, 2, 2));
  // one vector per lane → 8 column lanes
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::VdlRow, 0, 0, 1), 16, 8, s) == cfg(SpmmAlgorithm::VdlRow, 32, 8, 1));
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::VdlRow, 0, 0, 2), 64, 8, s) == cfg(SpmmAlgorithm::VdlRow, 32, 16, 2));
  // column lanes given → vectors per lane derived
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::VdlRow, 16, 8), 16, 8, s) == cfg(SpmmAlgorithm::VdlRow, 16, 8, 1));
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::VdlNnz), 2, 8, s) ==
        cfg(SpmmAlgorithm::VdlNnz, 4, 1, 1, SpmmRuleParams{}.items_per_warp_small));
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::CscRow), 3, 8, s) == cfg(SpmmAlgorithm::CscRow, 4, 0, 1));
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::CscRow, 8), 64, 8, s) == cfg(SpmmAlgorithm::CscRow, 8, 0, 2));
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::CscNnz, 0, 0, 0, 99), 1, 8, s) ==
        cfg(SpmmAlgorithm::CscNnz, 2, 0, 1, 99));
}

TEST_CASE("SpMM config: validation") {
  std::string why;
  CHECK(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 1, 1)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 6, 1, 1), &why));
  CHECK(why.find("subwarp") != std::string::npos);
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 64, 1, 1)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 16, 1), &why));
  CHECK(why.find("col_lanes") != std::string::npos);
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 3, 1)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 1, 3)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 1, 1, 256)));  // row kernel with a unit size
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlNnz, 8, 1, 1, 0)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::CscRow, 8, 1, 1)));  // CSC has no column lanes
  CHECK(is_valid(cfg(SpmmAlgorithm::CscNnz, 32, 0, 2, 4)));
  CHECK_FALSE(is_valid(cfg(static_cast<SpmmAlgorithm>(7), 8, 1, 1)));
  CHECK(cfg(SpmmAlgorithm::VdlNnz, 8, 2, 1, 256).to_string() == "vdl-nnz/s8/q2/v1/k256");
  CHECK(cfg(SpmmAlgorithm::CscRow, 32, 0, 2).to_string() == "csc-row/s32/c2");
  SpmmConfig p = cfg(SpmmAlgorithm::VdlNnz, 4, 1, 1, 256);
  p.panels = 3;
  CHECK(is_valid(p));
  CHECK(p.to_string() == "vdl-nnz/s4/q1/v1/k256/p3");
  p.panels = 1;  // one panel is no split
  CHECK(p == cfg(SpmmAlgorithm::VdlNnz, 4, 1, 1, 256));
  p.panels = kMaxSpmmPanels + 1;
  CHECK_FALSE(is_valid(p, &why));
  CHECK(why.find("panels") != std::string::npos);
  p.panels = -1;
  CHECK_FALSE(is_valid(p));
  SpmmConfig k = cfg(SpmmAlgorithm::CscRow, 32, 0, 1);
  k.ksplit = 8;
  CHECK(is_valid(k));
  CHECK(k.to_string() == "csc-row/s32/c1/w8");
  k.ksplit = 1;  // one slice is no split
  CHECK(k == cfg(SpmmAlgorithm::CscRow, 32, 0, 1));
  for (int bad : {3, 16, -1}) {
    k.ksplit = bad;
    CHECK_FALSE(is_valid(k, &why));
    CHECK(why.find("ksplit") != std::string::npos);
  }
  k.ksplit = 2;
  k.algorithm = SpmmAlgorithm::CscNnz;  // only the row kernel splits rows
  k.items_per_warp = 64;
  CHECK_FALSE(is_valid(k, &why));
  CHECK(why.find("csc-row") != std::string::npos);
}

TEST_CASE("SpMM four vectors a lane: vdl-row with one column lane only, where N fits, candidates at N = 5..8") {
  std::string why;
  CHECK(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 1, 4)));
  CHECK(cfg(SpmmAlgorithm::VdlRow, 8, 1, 4).to_string() == "vdl-row/s8/q1/v4");
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 2, 4), &why));
  CHECK(why.find("one column lane") != std::string::npos);
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlNnz, 8, 1, 4, 64), &why));
  CHECK(why.find("vdl-row") != std::string::npos);
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::CscRow, 8, 0, 4)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::VdlRow, 8, 1, 3), &why));
  CHECK(why.find("1, 2 or 4") != std::string::npos);
  // the lean kernel only: N <= 4 vectors of 2 doubles / 4 floats
  CHECK(spmm_runs_at(cfg(SpmmAlgorithm::VdlRow, 8, 1, 4), 8, 8));
  CHECK_FALSE(spmm_runs_at(cfg(SpmmAlgorithm::VdlRow, 8, 1, 4), 9, 8));
  CHECK(spmm_runs_at(cfg(SpmmAlgorithm::VdlRow, 8, 1, 4), 16, 4));
  CHECK_FALSE(spmm_runs_at(cfg(SpmmAlgorithm::VdlRow, 8, 1, 4), 17, 4));
  CHECK(spmm_runs_at(with_long(cfg(SpmmAlgorithm::VdlRow, 8, 1, 4), 9), 8, 8));
  CHECK(spmm_lean_vdl_vectors(1, 8) == 1);
  CHECK(spmm_lean_vdl_vectors(3, 8) == 2);
  CHECK(spmm_lean_vdl_vectors(5, 8) == 4);
  CHECK(spmm_lean_vdl_vectors(8, 8) == 4);
  CHECK(spmm_lean_vdl_vectors(9, 8) == 0);
  CHECK(spmm_lean_vdl_vectors(9, 4) == 4);
  CHECK(spmm_lean_vdl_vectors(17, 4) == 0);
  // tuning times them where the derived layout needs column lanes (fp64 N = 5..8), with long rows
  // cut too, and every candidate can run
  const auto A = test::load("rajat19");
  const RowStats s = stats_of(A);
  for (index_t N : {2, 4, 5, 8, 9, 16}) {
    INFO("N = " << N);
    const auto cands = spmm_candidates(kH100, s, N, 8);
    const auto v4 = std::count_if(cands.begin(), cands.end(), [](const SpmmConfig& c) { return c.per_lane == 4; });
    const auto v4_long = std::count_if(cands.begin(), cands.end(),
                                       [](const SpmmConfig& c) { return c.per_lane == 4 && c.long_row > 0; });
    CHECK((v4 > 0) == (N >= 5 && N <= 8));
    CHECK((v4_long > 0) == (N >= 5 && N <= 8));
    for (const SpmmConfig& c : cands) CHECK(spmm_runs_at(c, N, 8));
  }
}

TEST_CASE("SpMM long rows: validation, support, threshold and candidates") {
  std::string why;
  CHECK(is_valid(with_long(cfg(SpmmAlgorithm::CscRow, 32, 0, 2), 36)));
  CHECK(is_valid(with_long(cfg(SpmmAlgorithm::VdlRow, 8, 1, 1), 36)));
  CHECK(with_long(cfg(SpmmAlgorithm::CscRow, 32, 0, 2), 36).to_string() == "csc-row/s32/c2/l36");
  CHECK(with_long(cfg(SpmmAlgorithm::CscRow, 32, 0, 2), 36) != cfg(SpmmAlgorithm::CscRow, 32, 0, 2));
  CHECK_FALSE(is_valid(with_long(cfg(SpmmAlgorithm::CscNnz, 32, 0, 2, 64), 36), &why));
  CHECK(why.find("long_row") != std::string::npos);
  CHECK_FALSE(is_valid(with_long(cfg(SpmmAlgorithm::SeqNnz, 32, 0, 1, 64), 36)));
  CHECK_FALSE(is_valid(with_long(with_split(cfg(SpmmAlgorithm::CscRow, 32, 0, 1), 4), 36), &why));
  CHECK(why.find("ksplit") != std::string::npos);
  CHECK_FALSE(is_valid(with_long(cfg(SpmmAlgorithm::CscRow, 32, 0, 1), -1)));
  // VDL cuts rows only with the lean kernel: one column lane, N <= vectors a lane · VW
  CHECK(spmm_runs_at(with_long(cfg(SpmmAlgorithm::VdlRow, 8, 1, 1), 9), 2, 8));
  CHECK_FALSE(spmm_runs_at(with_long(cfg(SpmmAlgorithm::VdlRow, 8, 1, 1), 9), 3, 8));
  CHECK(spmm_runs_at(with_long(cfg(SpmmAlgorithm::VdlRow, 8, 1, 1), 9), 4, 4));  // one float4
  CHECK_FALSE(spmm_runs_at(with_long(cfg(SpmmAlgorithm::VdlRow, 8, 2, 2), 9), 8, 8));
  CHECK(spmm_runs_at(cfg(SpmmAlgorithm::VdlRow, 8, 2, 2), 8, 8));  // no cut
  // CSC: one chunk a block (the column tiles cover N)
  CHECK(spmm_runs_at(with_long(cfg(SpmmAlgorithm::CscRow, 2, 0, 1), 9), 2 * 65535, 8));
  CHECK_FALSE(spmm_runs_at(with_long(cfg(SpmmAlgorithm::CscRow, 2, 0, 1), 9), 2 * 65535 + 1, 8));
  // threshold: latency-bound matrices with a row longer than max(32, 4 × mean)
  RowStats s = made_up_stats(1000, 9000, 9, 40, 1500);
  CHECK(spmm_long_row_threshold(kH100, s) == 36);
  s.max_len = 36;
  CHECK(spmm_long_row_threshold(kH100, s) == 0);
  s = made_up_stats(1000, 3000, 3, 1, 33);
  CHECK(spmm_long_row_threshold(kH100, s) == 32);
  s = made_up_stats(4000000, 28000000, 7, 40, 1500);  // fills the GPU: not cut
  CHECK(spmm_long_row_threshold(kH100, s) == 0);
  // candidates: with a threshold, long-row variants of the VDL (lean) and CSC row kernels, all
  // runnable at that N; without, none
  for (const auto& m : test::adversarial_matrices(false)) {
    const RowStats ms = stats_of(m.A);
    for (index_t N : {1, 2, 3, 4, 8, 16, 17, 64})
      for (int vb : {4, 8}) {
        INFO(m.name, " N=", N, " bytes=", vb);
        int cuts = 0;
        for (const SpmmConfig& c : spmm_candidates(kH100, ms, N, vb)) {
          if (c.long_row == 0) continue;
          ++cuts;
          CHECK(c.long_row == spmm_long_row_threshold(kH100, ms));
          CHECK(spmm_runs_at(c, N, vb));
        }
        CHECK((cuts > 0) == (spmm_long_row_threshold(kH100, ms) > 0));
      }
  }
}

TEST_CASE("SpMM long rows: pieces cover each long row once, in order, none longer than a piece") {
  auto mats = test::adversarial_matrices(false);
  mats.push_back({"rajat19", test::load("rajat19")});
  for (const auto& m : mats)
    for (index_t long_min : {0, 3, 16, 100})
      for (index_t piece : {1, 7, 64, 512}) {
        const auto v = m.A.host_view();
        INFO(m.name, " long_min=", long_min, " piece=", piece);
        const std::vector<index_t> p = spmm_long_pieces_host(v.row_ptr, v.rows, long_min, piece);
        REQUIRE(p.size() % 5 == 0);
        const index_t n = index_t(p.size() / 5);
        index_t q = 0;
        for (index_t r = 0; r < v.rows; ++r) {
          const index_t len = v.row_ptr[r + 1] - v.row_ptr[r];
          if (len <= long_min) continue;
          const index_t count = (len + piece - 1) / piece;
          index_t at = v.row_ptr[r];
          for (index_t k = 0; k < count; ++k, ++q) {
            REQUIRE(q < n);
            const index_t* e = p.data() + 5 * q;
            CHECK(e[0] == r);
            CHECK(e[1] == at);
            CHECK(e[2] >= e[1]);
            CHECK(e[2] - e[1] <= piece);
            CHECK(e[3] == q - k);
            CHECK(e[4] == count);
            at = e[2];
          }
          CHECK(at == v.row_ptr[r + 1]);
        }
        CHECK(q == n);
      }
  CHECK_THROWS_AS(spmm_long_pieces_host(nullptr, 0, 0, 0), InputError);
}

TEST_CASE("SpMM candidates: rule first, all valid, no duplicates") {
  for (const auto& m : test::adversarial_matrices(false)) {
    const RowStats s = stats_of(m.A);
    for (index_t N : {1, 2, 4, 8, 16, 17, 64})
      for (int vb : {4, 8}) {
        const auto cands = spmm_candidates(kH100, s, N, vb);
        INFO(m.name, " N=", N);
        REQUIRE(!cands.empty());
        CHECK(cands[0] == choose_spmm_rule(kH100, s, N, vb));
        for (std::size_t i = 0; i < cands.size(); ++i) {
          CHECK(is_valid(cands[i]));
          for (std::size_t j = 0; j < i; ++j) CHECK(cands[i] != cands[j]);
        }
        bool csc = false;
        for (const auto& c : cands) csc = csc || !is_vdl(c.algorithm);
        CHECK(csc);
      }
  }
}

// ---- merge-path partition ---------------------------------------------------------------------

TEST_CASE("SpMM partition: merge-path invariants and split rows") {
  auto mats = test::adversarial_matrices(false);
  mats.push_back({"bcsstk01", test::load("bcsstk01")});
  for (const auto& m : mats)
    for (index_t K : {4, 5, 8, 37, 64, 256, 100000}) {
      const auto v = m.A.host_view();
      const SpmmPartition p = spmm_partition_host(v.row_ptr, v.rows, v.nnz, K);
      INFO(m.name, " K=", K);
      const std::int64_t total = std::int64_t(v.rows) + v.nnz;
      CHECK(p.units == (total + K - 1) / K);
      REQUIRE(p.unit_row.size() == std::size_t(p.units) + 1);
      CHECK(p.unit_row[0] == 0);
      CHECK(p.unit_nnz[0] == 0);
      CHECK(p.unit_row[p.units] == v.rows);
      CHECK(p.unit_nnz[p.units] == v.nnz);
      std::vector<int> ends(std::size_t(v.rows), 0);  // units consuming each row's end
      for (index_t u = 0; u <= p.units; ++u) {
        const index_t i = p.unit_row[u], k = p.unit_nnz[u];
        CHECK(std::int64_t(i) + k == std::min<std::int64_t>(std::int64_t(u) * K, total));
        CHECK(v.row_ptr[i] <= k);
        if (i < v.rows) CHECK(k <= v.row_ptr[i + 1]);
        if (u > 0) {
          CHECK(p.unit_row[u - 1] <= i);
          CHECK(p.unit_nnz[u - 1] <= k);
          for (index_t r = p.unit_row[u - 1]; r < i; ++r) ++ends[std::size_t(r)];
        }
      }
      for (index_t r = 0; r < v.rows; ++r) CHECK(ends[std::size_t(r)] == 1);
      // split rows: exactly the rows with nonzeros in more than one unit
      std::vector<int> units_touching(std::size_t(v.rows), 0);
      for (index_t u = 0; u < p.units; ++u)
        for (index_t r = p.unit_row[u]; r <= std::min<index_t>(p.unit_row[u + 1], v.rows - 1); ++r) {
          const index_t b = std::max(v.row_ptr[r], p.unit_nnz[u]), e = std::min(v.row_ptr[r + 1], p.unit_nnz[u + 1]);
          if (b < e) ++units_touching[std::size_t(r)];
        }
      std::vector<int> split(std::size_t(v.rows), 0);
      for (index_t w = 0; w < p.num_splits(); ++w) {
        const index_t row = p.splits[3 * w], us = p.splits[3 * w + 1], ue = p.splits[3 * w + 2];
        ++split[std::size_t(row)];
        CHECK(us < ue);
        CHECK(p.unit_row[us + 1] == row);
        CHECK((us == 0 || p.unit_row[us] < row));  // u_s is the first unit on the row
        CHECK(p.unit_row[ue] == row);
        CHECK(p.unit_row[ue + 1] > row);
      }
      for (index_t r = 0; r < v.rows; ++r) {
        CHECK(split[std::size_t(r)] <= 1);
        if (units_touching[std::size_t(r)] > 1) CHECK(split[std::size_t(r)] == 1);
      }
    }
}

TEST_CASE("SpMM partition: merge_path_search on a hand-made example") {
  // rows: [2 entries] [empty] [1 entry] → row_ptr 0 2 2 3; path: nz0 nz1 end0 end1 nz2 end2
  const std::vector<index_t> rp = {0, 2, 2, 3};
  const MergeCoord expect[] = {{0, 0}, {0, 1}, {0, 2}, {1, 2}, {2, 2}, {2, 3}, {3, 3}};
  for (int d = 0; d <= 6; ++d) {
    const MergeCoord c = merge_path_search(d, rp.data(), 3, 3);
    CHECK(c.row == expect[d].row);
    CHECK(c.nnz == expect[d].nnz);
  }
}

TEST_CASE("SpMM seq-nnz: configuration, candidates and the unit-bounded merge-path search") {
  const RowStats s = stats_of(random_power_law(1500, 8.0, 1000, 14));
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::SeqNnz), 2, 8, s) ==
        cfg(SpmmAlgorithm::SeqNnz, 32, 0, 1, SpmmRuleParams{}.items_per_warp_small));
  CHECK(complete_spmm_config(cfg(SpmmAlgorithm::SeqNnz, 0, 0, 0, 37), 70, 4, s) ==
        cfg(SpmmAlgorithm::SeqNnz, 32, 0, 1, 37));
  CHECK(is_valid(cfg(SpmmAlgorithm::SeqNnz, 32, 0, 1, 4)));
  std::string why;
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::SeqNnz, 16, 0, 1, 256), &why));
  CHECK(why.find("subwarp") != std::string::npos);
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::SeqNnz, 32, 1, 1, 256)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::SeqNnz, 32, 0, 2, 256)));
  CHECK_FALSE(is_valid(cfg(SpmmAlgorithm::SeqNnz, 32, 0, 1, 0)));
  CHECK(cfg(SpmmAlgorithm::SeqNnz, 32, 0, 1, 256).to_string() == "seq-nnz/k256");
  CHECK(std::string(to_string(SpmmAlgorithm::SeqNnz)) == "seq-nnz");
  CHECK(is_nnz_balanced(SpmmAlgorithm::SeqNnz));
  CHECK_FALSE(is_vdl(SpmmAlgorithm::SeqNnz));
  for (index_t N : {1, 2, 3, 8, 9, 16}) {
    const SpmmRuleParams p;
    bool seq = false;
    for (const auto& c : spmm_candidates(kH100, s, N)) seq = seq || c.algorithm == SpmmAlgorithm::SeqNnz;
    CHECK(seq == (N <= p.tune_seq_max_n));
    CHECK((choose_spmm_rule(kH100, s, N).algorithm == SpmmAlgorithm::SeqNnz) ==
          (s.cv() > p.nnz_balance_min_cv && !spmm_latency_bound(kH100, s) && N <= p.seq_max_n));
  }
  {  // a tuning-cache line with the new algorithm reads back
    SpmmTuneEntry e;
    e.key.fingerprint = test::load("bcsstk01").fingerprint();
    e.key.precision = "float";
    e.key.gpu = "NVIDIA H200";
    e.key.n = 4;
    e.config = cfg(SpmmAlgorithm::SeqNnz, 32, 0, 1, 256);
    e.ms = 0.5;
    const auto back = detail::parse_spmm_tune_line(detail::format_spmm_tune_line(e), &why);
    REQUIRE(back);
    CHECK(back->config == e.config);
    CHECK(back->key.kernel_version == kSpmmKernelVersion);
  }
  CHECK(seq_width(1) == 1);
  CHECK(seq_width(2) == 2);
  CHECK(seq_width(3) == 4);
  CHECK(seq_width(5) == 8);
  CHECK(seq_width(70) == 8);
  // the bounded search finds the global path point on every diagonal of every unit
  auto mats = test::adversarial_matrices(false);
  for (const auto& m : mats)
    for (index_t K : {4, 37, 256}) {
      const auto v = m.A.host_view();
      const SpmmPartition p = spmm_partition_host(v.row_ptr, v.rows, v.nnz, K);
      INFO(m.name, " K=", K);
      for (index_t u = 0; u < p.units; ++u) {
        const index_t i0 = p.unit_row[u], k0 = p.unit_nnz[u], i1 = p.unit_row[u + 1], k1 = p.unit_nnz[u + 1];
        const std::int64_t L = std::int64_t(i1) - i0 + k1 - k0;
        CHECK(seq_lane_diag(0, L) == 0);
        CHECK(seq_lane_diag(32, L) == L);
        for (std::int64_t d = 0; d <= L; ++d) {
          const MergeCoord a = seq_unit_search(d, v.row_ptr, i0, k0, i1, k1);
          const MergeCoord b = merge_path_search(std::int64_t(i0) + k0 + d, v.row_ptr, v.rows, v.nnz);
          REQUIRE(a.row == b.row);
          REQUIRE(a.nnz == b.nnz);
        }
      }
    }
}

TEST_CASE("SpMM layout: the VDL reduce-scatter offsets cover every sum once") {
  for (int M : {2, 4, 8})
    for (int log2p = 0; log2p <= 5; ++log2p) {
      const int P = 1 << log2p, h = vdl_halving_steps(spmm_log2(M), log2p), live = M >> h;
      std::vector<int> seen(std::size_t(M), 0);
      for (int p = 0; p < P; ++p)
        if ((p >> h) == 0)
          for (int t = 0; t < live; ++t) ++seen[std::size_t(vdl_scatter_offset(p, h, M) + t)];
      for (int i = 0; i < M; ++i) CHECK(seen[std::size_t(i)] == 1);
    }
}

TEST_CASE("SpMM layout: paired CSC columns only with two columns a lane, aligned X and even N") {
  CHECK(csc_paired(2, true, 16));
  CHECK_FALSE(csc_paired(2, true, 17));  // the last lane would have one column in range
  CHECK_FALSE(csc_paired(2, false, 16));
  CHECK_FALSE(csc_paired(1, true, 16));
  // lane 3 of a 16-lane sub-warp, chunk at 32: columns 38 and 39 paired, 35 and 51 otherwise
  CHECK(csc_col(32, 3, 0, 16, true) == 38);
  CHECK(csc_col(32, 3, 1, 16, true) == 39);
  CHECK(csc_col(32, 3, 0, 16) == 35);
  CHECK(csc_col(32, 3, 1, 16) == 51);
}

// ---- emulation of the device kernels --------------------------------------------------------------

TEST_CASE("SpMM emulation fp64: every variant, many N, leading dimensions, beta = 0 with NaN Y") {
  auto mats = test::adversarial_matrices(false);
  mats.push_back({"bcsstk01", test::load("bcsstk01")});
  mats.push_back({"gr_30_30", test::load("gr_30_30")});
  for (const auto& m : mats) {
    const RowStats s = stats_of(m.A);
    for (index_t N : {1, 2, 3, 4, 5, 8, 16, 17, 32, 64, 70}) {
      const auto cs = emulation_configs(N, 8, s);
      emulate_and_check(m.name, m.A, N, cs, N, N, false);
      if (N == 3 || N == 17) emulate_and_check(m.name, m.A, N, cs, N + 1, N + 3, true);
    }
  }
}

TEST_CASE("SpMM emulation fp32: every variant, several N") {
  for (const auto& m : test::adversarial_matrices(false)) {
    const auto A = test::convert<float>(m.A);
    const RowStats s = stats_of(A);
    for (index_t N : {1, 2, 3, 4, 5, 6, 7, 9, 16, 33}) {
      const auto cs = emulation_configs(N, 4, s);
      emulate_and_check(m.name, A, N, cs, N, N, false);
      if (N == 6) emulate_and_check(m.name, A, N, cs, N + 2, N + 1, true);
    }
  }
}

TEST_CASE("SpMM emulation seq-nnz: N = 1..10, padded leading dimensions, beta = 0, fp64 and fp32") {
  auto mats = test::adversarial_matrices(false);
  mats.push_back({"Erdos971", test::load("Erdos971")});
  for (const auto& m : mats) {
    const RowStats s = stats_of(m.A);
    const auto A32 = test::convert<float>(m.A);
    for (index_t N = 1; N <= 10; ++N) {
      std::vector<SpmmConfig> cs;
      for (int k : {0, 4, 7, 37, 64, 300}) {
        const SpmmConfig c = complete_spmm_config(cfg(SpmmAlgorithm::SeqNnz, 0, 0, 0, k), N, 8, s);
        REQUIRE(is_valid(c));
        cs.push_back(c);
      }
      emulate_and_check(m.name, m.A, N, cs, N, N, false);
      emulate_and_check(m.name, m.A, N, cs, N + 3, N + 1, true);
      emulate_and_check(m.name, A32, N, cs, N + (N % 4 ? 4 - N % 4 : 0), N + 2, N % 2 == 0);
    }
  }
}

// ---- host reference -------------------------------------------------------------------------------

TEST_CASE("SpMM host reference: fp64 and fp32 against long double, padding and beta = 0") {
  auto mats = test::adversarial_matrices(true);
  mats.push_back({"bcsstk06", test::load("bcsstk06")});
  mats.push_back({"Erdos971", test::load("Erdos971")});
  for (const auto& m : mats)
    for (index_t N : {1, 2, 5, 16, 17}) {
      for (bool beta_zero : {false, true}) {
        const index_t ldx = N + (N % 2), ldy = N + 2;
        {
          const double alpha = test::random_scalar(), beta = beta_zero ? 0.0 : test::random_scalar();
          const auto X = test::random_block<double>(m.A.cols(), N, ldx, std::nan(""));
          auto Y0 = test::random_block<double>(m.A.rows(), N, ldy, -3.5);
          if (beta_zero)
            for (index_t i = 0; i < m.A.rows(); ++i)
              for (index_t j = 0; j < N; ++j) Y0[std::size_t(i) * ldy + j] = std::nan("");
          auto Y = Y0;
          spmm_host(m.A, N, alpha, X.data(), ldx, beta, Y.data(), ldy);
          test::check_spmm(m.A, N, alpha, X, ldx, beta, Y0, Y, ldy, m.name + " host fp64");
        }
        {
          const auto A = test::convert<float>(m.A);
          const float alpha = float(test::random_scalar()), beta = beta_zero ? 0.0f : float(test::random_scalar());
          const auto X = test::random_block<float>(A.cols(), N, ldx, std::nanf(""));
          auto Y0 = test::random_block<float>(A.rows(), N, ldy, -3.5f);
          auto Y = Y0;
          spmm_host(A, N, alpha, X.data(), ldx, beta, Y.data(), ldy);
          test::check_spmm(A, N, alpha, X, ldx, beta, Y0, Y, ldy, m.name + " host fp32");
        }
      }
    }
}

TEST_CASE("SpMM host reference: bad sizes are InputError") {
  const auto A = test::load("bcsstk01");
  std::vector<double> X(std::size_t(A.cols()) * 4, 1.0), Y(std::size_t(A.rows()) * 4, 0.0);
  CHECK_THROWS_AS(spmm_host(A, 4, 1.0, X.data(), 3, 0.0, Y.data(), 4), InputError);
  CHECK_THROWS_AS(spmm_host(A, 4, 1.0, X.data(), 4, 0.0, Y.data(), 2), InputError);
  CHECK_THROWS_AS(spmm_host(A, 0, 1.0, X.data(), 4, 0.0, Y.data(), 4), InputError);
}

// ---- tuning cache -----------------------------------------------------------------------------------

TEST_CASE("SpMM tuning cache: line round trip, corrupt lines, key includes N") {
  SpmmTuneEntry e;
  e.key.fingerprint = test::load("bcsstk01").fingerprint();
  e.key.precision = "double";
  e.key.gpu = "NVIDIA H100 80GB HBM3";
  e.key.n = 8;
  e.key.x_vec = true;
  e.config = cfg(SpmmAlgorithm::VdlNnz, 16, 2, 2, 256);
  e.ms = 0.125;
  const std::string line = detail::format_spmm_tune_line(e);
  std::string why;
  const auto back = detail::parse_spmm_tune_line(line, &why);
  REQUIRE(back);
  CHECK(back->config == e.config);
  CHECK(back->key.n == 8);
  CHECK(back->key.fingerprint == e.key.fingerprint);
  CHECK(back->ms == doctest::Approx(0.125));
  CHECK_FALSE(detail::parse_spmm_tune_line(line + "\textra=1", &why));
  std::string broken = line;
  broken.replace(broken.find("subwarp=16"), 10, "subwarp=12");
  CHECK_FALSE(detail::parse_spmm_tune_line(broken, &why));
  CHECK(why.find("invalid configuration") != std::string::npos);
  CHECK_FALSE(detail::parse_spmm_tune_line("version=1\tprecision=double", &why));
  {  // panels round trip; a line without the field (kernel version 1) reads as no split
    SpmmTuneEntry ep = e;
    ep.config.panels = 5;
    const auto bp = detail::parse_spmm_tune_line(detail::format_spmm_tune_line(ep), &why);
    REQUIRE(bp);
    CHECK(bp->config.panels == 5);
    std::string old = line;
    old.erase(old.find("\tpanels="), std::string("\tpanels=1").size());
    const auto bo = detail::parse_spmm_tune_line(old, &why);
    REQUIRE(bo);
    CHECK(bo->config.panel_count() == 1);
  }
  // Fields added with later kernel versions: a round trip, a line without the field (an older
  // version's) reads as the default (e's), a bad value is refused.
  auto later_field = [&](const SpmmConfig& c, const std::string& field, const std::string& absent,
                         const std::string& value, const std::string& bad_value) {
    INFO(field);
    SpmmTuneEntry ec = e;
    ec.config = c;
    const std::string text = detail::format_spmm_tune_line(ec);
    const auto back = detail::parse_spmm_tune_line(text, &why);
    REQUIRE(back);
    CHECK(back->config == c);
    std::string old = line;
    old.erase(old.find("\t" + field + "="), ("\t" + field + "=" + absent).size());
    const auto bo = detail::parse_spmm_tune_line(old, &why);
    REQUIRE(bo);
    CHECK(bo->config == e.config);
    std::string bad = text;
    bad.replace(bad.find(field + "=" + value), (field + "=" + value).size(), field + "=" + bad_value);
    CHECK_FALSE(detail::parse_spmm_tune_line(bad, &why));
  };
  later_field(with_long(cfg(SpmmAlgorithm::CscRow, 16, 0, 2), 36), "long_row", "0", "36", "-1");  // version 14
  later_field(with_split(cfg(SpmmAlgorithm::CscRow, 32, 0, 1), 4), "ksplit", "1", "4", "3");      // version 4

  const auto dir = std::filesystem::temp_directory_path() /
                   ("krysp_spmm_cache_test_" + std::to_string(std::random_device{}()));
  std::filesystem::remove_all(dir);
  {
    SpmmTuneCache cache(dir.string());
    REQUIRE(cache.enabled());
    CHECK_FALSE(cache.lookup(e.key));
    CHECK(cache.store(e));
    auto got = cache.lookup(e.key);
    REQUIRE(got);
    CHECK(got->config == e.config);
    SpmmTuneKey other = e.key;
    other.n = 16;  // another N: a miss
    CHECK_FALSE(cache.lookup(other));
    SpmmTuneEntry e16 = e;
    e16.key = other;
    e16.config = cfg(SpmmAlgorithm::CscRow, 16, 0, 1);
    CHECK(cache.store(e16));
    CHECK(cache.lookup(e.key)->config == e.config);
    CHECK(cache.lookup(other)->config == e16.config);
    // a corrupt line is skipped, the others still read
    {
      std::ofstream f(cache.file(), std::ios::app);
      f << "garbage line\n";
    }
    CHECK(cache.lookup(other)->config == e16.config);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("SpMM column panels: the split keeps every entry, in order, in its panel") {
  const auto A = random_power_law(3000, 9.0, 400, 5);
  for (const int P : {1, 2, 3, 7, 64}) {
    CAPTURE(P);
    const auto s = spmm_panel_split(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), P);
    REQUIRE(s.start.size() == std::size_t(P) + 1);
    CHECK(s.start.back() == A.nnz());
    CHECK(s.width == (A.cols() + P - 1) / P);
    std::vector<char> seen(std::size_t(A.nnz()), 0);
    const std::size_t stride = std::size_t(A.rows()) + 1;
    for (int p = 0; p < P; ++p) {
      const index_t* rp = s.row_ptr.data() + std::size_t(p) * stride;
      CHECK(rp[0] == 0);
      CHECK(rp[A.rows()] == s.start[std::size_t(p) + 1] - s.start[std::size_t(p)]);
      for (index_t i = 0; i < A.rows(); ++i) {
        REQUIRE(rp[i] <= rp[i + 1]);
        for (index_t k = rp[i]; k < rp[i + 1]; ++k) {
          const std::size_t at = std::size_t(s.start[std::size_t(p)] + k);
          const index_t src = s.source[at];
          REQUIRE(src >= A.row_ptr()[i]);
          REQUIRE(src < A.row_ptr()[i + 1]);  // an entry of the same row
          CHECK(s.col_idx[at] == A.col_idx()[src]);
          CHECK(s.col_idx[at] / s.width == p);  // in its panel
          if (k > rp[i]) CHECK(s.source[at - 1] < src);  // in A's order
          seen[std::size_t(src)] += 1;
        }
      }
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == A.nnz());  // every entry exactly once
    const RowStats first = spmm_first_panel_stats(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), P);
    const RowStats split0 = row_stats(CsrView<double>{A.rows(), A.cols(), s.start[1], s.row_ptr.data(),
                                                      s.col_idx.data(), nullptr});
    CHECK(first.nnz == split0.nnz);
    CHECK(first.max_len == split0.max_len);
    CHECK(first.stddev == split0.stddev);
  }
  CHECK_THROWS_AS(spmm_panel_split(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), 0), InputError);
  CHECK_THROWS_AS(spmm_panel_split(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), A.cols() + 1),
                  InputError);
}

TEST_CASE("SpMM column panels: the rule splits scattered columns whose X outgrows L2, nothing else") {
  const std::int64_t l2 = 256 * 1024;  // a small cache, so that small matrices exercise the rule
  const auto scattered = random_power_law(40000, 40.0, 300, 9);  // long rows: the gathers dominate
  const auto banded = random_banded(40000, 8, 50, 9);
  auto panels = [&](const CsrMatrix<double>& A, index_t N, std::int64_t cache) {
    return choose_spmm_panels(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), N, 8, cache);
  };
  CHECK(spmm_far_fraction(scattered.row_ptr().data(), scattered.col_idx().data(), scattered.rows(),
                          scattered.cols(), 1000) > 0.9);
  CHECK(spmm_far_fraction(banded.row_ptr().data(), banded.col_idx().data(), banded.rows(), banded.cols(), 1000) ==
        0.0);
  // X = 40000·2·8 bytes = 640 KB against a budget of 128 KB: 5 panels
  CHECK(panels(scattered, 2, l2) == 5);
  CHECK(panels(random_power_law(40000, 8.0, 300, 9), 2, l2) == 0);  // short rows: 5 passes cost more
  CHECK(panels(scattered, 2, std::int64_t(64) << 20) == 0);  // X fits: no split
  CHECK(panels(banded, 2, l2) == 0);                         // gathers near the diagonal: cached anyway
  CHECK(panels(scattered, 64, l2) == 0);                     // more panels than the limit
  CHECK(panels(scattered, 2, 0) == 0);
}


TEST_CASE("SpMM rules: the wave comes from the device policy; a smaller GPU is latency-bound at fewer rows") {
  // 132 multiprocessors of 2048 threads: the constant the rules and launch thresholds had before
  // they took the device's policy as data
  CHECK(kH100.resident_threads() == std::int64_t(132) * 2048);
  CHECK(spmm_early_max_threads(kH100) == std::int64_t(132) * 2048 / 2);
  CHECK(spmm_csc_rounds_min_threads(kH100) == 8 * std::int64_t(132) * 2048);
  CHECK(spmm_csc_batch_max_threads(kH100) == std::int64_t(132) * 2048);
  CHECK(spmm_early_launch(132 * 2048 / 2 / kSpmmBlock, true, kH100));
  CHECK_FALSE(spmm_early_launch(132 * 2048 / 2 / kSpmmBlock + 1, true, kH100));
  CHECK_FALSE(spmm_early_launch(1, false, kH100));
  // A GPU of half the size: latency-bound up to half the rows, the same rule otherwise.
  const DevicePolicy half = {66, 2048, kH100.l2_bytes};
  const index_t edge = index_t(SpmmRuleParams{}.latency_bound_waves * double(kH100.resident_threads()) / 32);
  const RowStats s = made_up_stats(edge, edge * 5, 5.0, 0.5, 7);
  CHECK(spmm_latency_bound(kH100, s));
  CHECK_FALSE(spmm_latency_bound(half, s));
  CHECK(spmm_latency_bound(half, made_up_stats(edge / 2, edge / 2 * 5, 5.0, 0.5, 7)));
  CHECK(spmm_early_max_threads(half) == spmm_early_max_threads(kH100) / 2);
  // 6336 rows of 5: 32 lanes a row within vdl_wide_waves of the H100; beyond them on the
  // half-size GPU, where the cost model takes fewer lanes a row
  const RowStats v = made_up_stats(6336, 6336 * 5, 5.0, 0.5, 7);
  REQUIRE(double(v.rows) * 32 <= SpmmRuleParams{}.vdl_wide_waves * double(kH100.resident_threads()));
  CHECK(choose_spmm_rule(kH100, v, 2).subwarp == 32);
  CHECK(choose_spmm_rule(half, v, 2).subwarp < 32);
}
