#pragma once
// Helpers shared by the SpMV and SpMM tests (host and GPU): matrices with given row lengths, value
// conversion, a long-double SpMM reference with its error bound, a checker, adversarial matrices,
// and block generation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "krysp/base/device_policy.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmm_config.hpp"
#include "test_util.hpp"

namespace krysp::test {

/// The device policy the SpMM rules' constants were measured on (an H100 SXM: 132 multiprocessors
/// of 2048 resident threads, 50 MiB of L2), for host tests of the rules, which run without a GPU.
/// Library code takes device_policy() instead.
inline constexpr DevicePolicy kH100Policy = {132, 2048, std::int64_t(50) << 20};

/// An SpMM configuration with the given fields; zero ones are derived (complete_spmm_config).
inline SpmmConfig cfg(SpmmAlgorithm a, int subwarp = 0, int col_lanes = 0, int per_lane = 0, int items_per_warp = 0) {
  SpmmConfig c;
  c.algorithm = a;
  c.subwarp = subwarp;
  c.col_lanes = col_lanes;
  c.per_lane = per_lane;
  c.items_per_warp = items_per_warp;
  return c;
}

/// `c` with rows shared by `ksplit` sub-warps (CscRow).
inline SpmmConfig with_split(SpmmConfig c, int ksplit) {
  c.ksplit = ksplit;
  return c;
}

/// `c` with the rows of more than `long_row` nonzeros cut into pieces (CscRow, lean VdlRow).
inline SpmmConfig with_long(SpmmConfig c, int long_row) {
  c.long_row = long_row;
  return c;
}

/// The same matrix with values converted to T.
template <class T>
CsrMatrix<T> convert(const CsrMatrix<double>& A) {
  if constexpr (std::is_same_v<T, double>) return A;  // copies share storage
  const auto v = A.host_view();
  std::vector<index_t> rp(v.row_ptr, v.row_ptr + v.rows + 1), ci(v.col_idx, v.col_idx + v.nnz);
  std::vector<T> va(std::size_t(v.nnz));
  for (index_t k = 0; k < v.nnz; ++k) va[std::size_t(k)] = T(v.values[k]);
  return CsrMatrix<T>::from_arrays(v.rows, v.cols, rp, ci, va);
}

/// Random matrix with the given row lengths (columns uniform, values in [-1, 1)).
inline CsrMatrix<double> with_row_lengths(index_t cols, const std::vector<index_t>& lens, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::vector<index_t> rp(1, 0), ci;
  std::vector<double> va;
  std::vector<index_t> all(static_cast<std::size_t>(cols));
  for (index_t j = 0; j < cols; ++j) all[std::size_t(j)] = j;
  for (index_t len : lens) {
    std::vector<index_t> row;
    if (len * 4 >= cols) {
      // dense-ish: a random subset of exactly len columns
      std::shuffle(all.begin(), all.end(), rng);
      row.assign(all.begin(), all.begin() + len);
    } else {
      std::uniform_int_distribution<index_t> col(0, cols - 1);
      while (index_t(row.size()) < len) {
        const index_t c = col(rng);
        if (std::find(row.begin(), row.end(), c) == row.end()) row.push_back(c);
      }
    }
    std::sort(row.begin(), row.end());
    for (index_t c : row) {
      ci.push_back(c);
      va.push_back(val(rng));
    }
    rp.push_back(index_t(ci.size()));
  }
  return CsrMatrix<double>::from_arrays(index_t(lens.size()), cols, rp, ci, va);
}
/// The same, lengths first (the SpMV tests' order).
inline CsrMatrix<double> with_row_lengths(const std::vector<index_t>& lens, index_t cols, std::uint64_t seed) {
  return with_row_lengths(cols, lens, seed);
}

/// 3000 short rows (3..12) with a few far longer (5000, 1500, 300, and 40 every 97 rows): the
/// SpMM rule cuts the long ones into pieces (spmm_long_row_threshold).
inline CsrMatrix<double> few_long_rows() {
  std::vector<index_t> lens;
  for (int i = 0; i < 3000; ++i) lens.push_back(3 + i % 10);
  lens[17] = 5000;
  lens[1234] = 1500;
  lens[2999] = 300;
  for (int i = 100; i < 3000; i += 97) lens[std::size_t(i)] = 40;
  return with_row_lengths(6000, lens, 31);
}

struct NamedMatrix {
  std::string name;
  CsrMatrix<double> A;
};

/// Adversarial structures: empty rows, nnz = 0, n = 1, one dense row of 100k entries among short
/// rows, rows longer than a unit's share, a power-law matrix.
inline std::vector<NamedMatrix> adversarial_matrices(bool big = true) {
  std::vector<NamedMatrix> out;
  out.push_back({"1x1", CsrMatrix<double>::from_arrays(1, 1, {0, 1}, {0}, {-1.75})});
  out.push_back({"1x1-empty", CsrMatrix<double>::from_arrays(1, 1, {0, 0}, {}, {})});
  out.push_back({"nnz0-50x30", CsrMatrix<double>::from_arrays(50, 30, std::vector<index_t>(51, 0), {}, {})});
  {
    // empty rows everywhere: leading, trailing, runs of them, between long rows
    std::vector<index_t> lens;
    for (int i = 0; i < 7; ++i) lens.push_back(0);
    for (int i = 0; i < 300; ++i) lens.push_back(i % 5 == 0 ? 0 : (i % 7 == 0 ? 70 : i % 4));
    for (int i = 0; i < 40; ++i) lens.push_back(0);
    lens.push_back(513);
    for (int i = 0; i < 9; ++i) lens.push_back(0);
    out.push_back({"empty-rows", with_row_lengths(600, lens, 11)});
  }
  {
    // rows longer than a unit (items_per_warp up to 256) and than 32·sub-warp trips
    std::vector<index_t> lens;
    for (int i = 0; i < 60; ++i) lens.push_back(i % 3 == 0 ? (big ? 1500 + 37 * i : 300 + 7 * i) : 3 + i % 11);
    out.push_back({"long-rows", with_row_lengths(4000, lens, 12)});
  }
  if (big) {
    // one dense row of 100k entries among short rows
    const index_t cols = 100000;
    std::vector<index_t> lens(2000);
    for (std::size_t i = 0; i < lens.size(); ++i) lens[i] = index_t(1 + i % 9);
    lens[777] = cols;
    out.push_back({"dense-row-100k", with_row_lengths(cols, lens, 13)});
  }
  out.push_back({"power-law", random_power_law(big ? 30000 : 1500, 8.0, big ? 20000 : 1000, 14)});
  out.push_back({"banded", random_banded(big ? 5000 : 800, 9, 60, 15)});
  out.push_back({"laplace3d", big ? laplacian_3d(12, 11, 10) : laplacian_3d(8, 7, 6)});
  return out;
}

/// A row-major block of `rows` rows of ld entries: the first N of each row random in [-1, 1)
/// (never zero), the padding filled with `pad`.
template <class T>
std::vector<T> random_block(index_t rows, index_t N, index_t ld, T pad) {
  std::vector<T> b(std::size_t(rows) * std::size_t(ld), pad);
  const auto v = random_vector<double>(std::size_t(rows) * std::size_t(N), -1.0, 1.0);
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < N; ++j) {
      double x = v[std::size_t(i) * N + j];
      if (x == 0) x = 0.5;
      b[std::size_t(i) * ld + j] = T(x);
    }
  return b;
}

/// c(len) = 2·ceil(log2(len + 1)) + 8: the error-bound factor for a row of len entries.
///
/// Why: the kernels sum a row's len products in an order of depth D (longest chain of additions
/// a product goes through): per-lane sequential runs, a log2(P) shuffle tree, the unit carries
/// summed by the fix-up. For any order, |computed - exact| <= γ_D · Σ|terms| with γ_D ≈ D·u
/// (Higham, Accuracy and Stability, §4.2), but that worst case needs every rounding error to have
/// the same sign. With zero-mean random X (and α, β ≠ 0, 1) the rounding errors behave like a
/// random walk whose partial sums stay far below Σ|terms|, so the observed error is O(1)·u·Σ|terms|
/// for sequential sums and bounded by log2 of the tree depth for the shuffle trees; 2·log2 covers
/// the tree part deterministically, +8 the sequential parts and the α scaling. The final
/// alpha·s + beta·y adds at most 2 roundings of |beta·y|: hence + 2·eps·|β y| (and eps·|α s|,
/// covered by the +8). The reference is computed in long double, whose error is negligible.
inline double spmm_c(index_t len) { return 2.0 * std::ceil(std::log2(double(len) + 1.0)) + 8.0; }

/// The expected result of Y = alpha·A·X + beta·Y0 (long double) with its per-entry error bound
/// (see spmm_c); computed once, then used to check any number of results.
template <class T>
struct SpmmExpected {
  index_t rows = 0, N = 0, ldy = 0;
  std::vector<long double> ref, tol;  // rows·N
  std::vector<T> Y0;                  // rows·ldy, for the padding check

  SpmmExpected(const CsrMatrix<T>& A, index_t N_, T alpha, const std::vector<T>& X, index_t ldx, T beta,
               const std::vector<T>& Y0_, index_t ldy_)
      : rows(A.rows()), N(N_), ldy(ldy_), Y0(Y0_) {
    const auto v = A.host_view();
    const long double eps = std::numeric_limits<T>::epsilon();
    ref.assign(std::size_t(rows) * N, 0.0L);
    tol.assign(std::size_t(rows) * N, 0.0L);
    std::vector<long double> s(static_cast<std::size_t>(N)), abs(static_cast<std::size_t>(N));
    for (index_t i = 0; i < rows; ++i) {
      const index_t b = v.row_ptr[i], e = v.row_ptr[i + 1];
      const long double c = spmm_c(e - b);
      std::fill(s.begin(), s.end(), 0.0L);
      std::fill(abs.begin(), abs.end(), 0.0L);
      for (index_t k = b; k < e; ++k) {
        const long double a = v.values[k];
        const T* x = X.data() + std::size_t(v.col_idx[k]) * ldx;
        for (index_t j = 0; j < N; ++j) {
          const long double p = a * (long double)x[j];
          s[std::size_t(j)] += p;
          abs[std::size_t(j)] += std::fabs((long double)alpha * p);
        }
      }
      for (index_t j = 0; j < N; ++j) {
        const std::size_t at = std::size_t(i) * N + j;
        const long double by = beta == T(0) ? 0.0L : (long double)beta * (long double)Y0[std::size_t(i) * ldy + j];
        ref[at] = (long double)alpha * s[std::size_t(j)] + by;
        tol[at] = c * eps * abs[std::size_t(j)] + 2 * eps * std::fabs(by);
      }
    }
  }

  /// Every entry within its bound, padding columns [N, ldy) bitwise unchanged; reports the first
  /// failures.
  void check(const std::vector<T>& Y, const std::string& what) const {
    std::int64_t bad = 0;
    std::string first;
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < ldy; ++j) {
        const std::size_t at = std::size_t(i) * ldy + j;
        if (j >= N) {
          if (std::memcmp(&Y[at], &Y0[at], sizeof(T)) != 0 && bad++ < 5)
            first += " padding Y(" + std::to_string(i) + "," + std::to_string(j) + ") changed;";
          continue;
        }
        const std::size_t r = std::size_t(i) * N + j;
        const long double got = Y[at];
        if (!(std::fabs(got - ref[r]) <= tol[r]) && bad++ < 5)
          first += " Y(" + std::to_string(i) + "," + std::to_string(j) + ")=" + std::to_string(double(got)) +
                   " ref=" + std::to_string(double(ref[r])) + " tol=" + std::to_string(double(tol[r])) + ";";
      }
    INFO(what, " failures: ", bad, first);
    CHECK(bad == 0);
  }
};

/// One-shot form of SpmmExpected.
template <class T>
void check_spmm(const CsrMatrix<T>& A, index_t N, T alpha, const std::vector<T>& X, index_t ldx, T beta,
                const std::vector<T>& Y0, const std::vector<T>& Y, index_t ldy, const std::string& what) {
  SpmmExpected<T>(A, N, alpha, X, ldx, beta, Y0, ldy).check(Y, what);
}

/// Random α, β away from 0 and ±1.
inline double random_scalar() {
  const double s = random_vector<double>(1, 0.3, 0.9)[0];
  return random_vector<double>(1)[0] < 0 ? -1.3 * s : 1.7 * s;
}

}  // namespace krysp::test
