#pragma once
/// \file device_amg.hpp
/// Smoothed-aggregation AMG on the GPU (the method, and why M⁻¹ is SPD: amg.hpp).
///
/// Set-up on the GPU (amg_device_setup.hpp) with the mis2 aggregation (the default), for any
/// block size and for rigid-body modes: the hierarchy is built there and adopted as is
/// (set_up_on_gpu()); update_values then redoes its numbers on the GPU (aggregates and tentative
/// prolongators kept, as on the host; the SpGEMMs run again, the transposes and the
/// symmetrisation become gathers). With the greedy aggregation the host
/// set-up (a HostAmg, kept: it owns the hierarchy and does the numeric re-set-up), then one
/// upload. Each level's A_l becomes a CsrMatrix with its device mirror and
/// its own SpMV plan (the adaptive kernels; level 0 is the caller's A with the caller's plan),
/// P_l and R_l = P_lᵀ likewise (R stored explicitly, so restriction is an SpMV, not a transposed
/// product with atomics); D⁻¹ (or D_l1⁻¹) per level; the coarsest matrix's inverse, formed once
/// from the Cholesky factor (the GPU set-up's, or the host's) by cuBLAS (AmgCoarseSolver::invert)
/// and applied as one dense product (two triangular solves are 15-40 µs of dependent steps on a
/// coarsest level of 30-200 rows; the product 2-3 µs). When the level above the coarsest has at most
/// kAmgDenseCorrectionRows rows, its whole coarse correction P·A_c⁻¹·R is formed too (one n_l²
/// dense matrix in double, exactly symmetric, AmgCoarseSolver::correction) and applied as one
/// product: x += M·r replaces the restriction, the coarse solve and the prolongation, three
/// dependent launches of a latency-bound cycle. apply_block makes an SpMM plan per block width
/// and matrix on first use (as DeviceChebyshev).
///
/// A V-cycle is tens of small kernels, so on small levels the host's launches, not the GPU,
/// set its pace. The second apply with the same vectors (a solver's fixed r and z; for a block,
/// the same N and leading dimensions) captures the V-cycle into a CUDA graph, and later ones
/// replay it: one launch on the default stream, the same kernels with the same arguments, so
/// the same bits. A value update, a wider block or level 0's matrix arrays moving drop the
/// graphs; at most kMaxGraphs are kept.
///
/// The V-cycle is HostAmg's, step for step: the same smoother sweeps in the same order (the
/// Chebyshev recurrence in D⁻¹A through the Chebyshev preconditioner's kernels — for vectors its
/// fused step, which computes A_l·x_k inside the update, where the level's rows suit it — or
/// l1-Jacobi), restriction, recursion, prolongation. A sweep x += S(b − A·x) on vectors runs the
/// same recurrence on x itself (x_k − x_0 is the recurrence from zero on b − A·x_0), one fused
/// kernel a step, without the residual, correction and add. So M⁻¹ is the host's to rounding
/// (the device sums in another order). Deterministic: every kernel has a fixed summation order
/// and cuBLAS runs without atomics.
///
/// update_values(A): the host's numeric re-set-up (aggregates and patterns kept), then only the
/// values go up again (set_values on each level matrix: the plans stay). When the host falls back
/// to a full set-up (a coarse pattern changed), the hierarchy is uploaded anew.
///
/// Device memory (device_bytes(), in summary()): the level matrices from level 1 on, P_l, R_l,
/// the smoother's D⁻¹, seven work vectors a level (five on level 0), the coarse inverse (n_c²
/// doubles) and the dense coarse correction (n_l² doubles, where formed), the plans' own
/// workspaces (measured: krysp's live device bytes before and after the upload), plus the work
/// blocks of apply_block (seven n_l × ⌈N⌉₄ blocks a level for the widest N seen). A's own device
/// mirror is not counted (the solver holds it anyway). Before the upload the bytes needed are
/// checked against the GPU's free memory: DeviceError naming both when they do not fit. Not
/// thread-safe (work arrays and plans, as DeviceChebyshev).
/// CUDA-free header.
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/stream.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

class CapturedCalls;

namespace detail {
class AmgCoarseSolver;
template <class T>
struct GpuAmgHierarchy;
struct GpuLevel0Seed;
}

/// Smoothed-aggregation AMG with the V-cycle on the GPU (see the file comment).
template <class T>
class DeviceAmg final : public Preconditioner<T> {
 public:
  /// `plan` must be A's SpMV plan (InputError otherwise); it is kept for level 0. InputError as
  /// for HostAmg (options, diagonal, a coarse matrix that is not positive definite); DeviceError
  /// when the hierarchy does not fit in the GPU's free memory (naming the bytes).
  DeviceAmg(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const AmgOptions& o);
  ~DeviceAmg() override;
  DeviceAmg(const DeviceAmg&) = delete;
  DeviceAmg& operator=(const DeviceAmg&) = delete;
  PrecondKind kind() const override { return PrecondKind::Amg; }
  /// z = one V-cycle applied to r (device vectors).
  void apply(const T* r, T* z) const override;
  /// The V-cycle on an n × N row-major device block (ldr, ldz ≥ N), all columns at once (SpMM).
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }
  /// The host's numeric re-set-up, then the new values uploaded into the same device structure
  /// (plans kept); set up on the GPU: the GPU's numeric re-set-up. Returns true.
  bool update_values(const CsrMatrix<T>& A) override;
  /// The host's summary, plus where it was set up and the device bytes the hierarchy holds.
  std::string summary() const override;
  /// The hierarchy's levels, complexities, stop reason and set-up times (host or GPU set-up).
  const AmgInfo& info() const;
  /// The host hierarchy this object was uploaded from (InputError when set up on the GPU).
  const HostAmg<T>& host() const;
  /// True when the hierarchy was built on the GPU (amg_device_setup.hpp), not uploaded.
  bool set_up_on_gpu() const { return gpu_ != nullptr; }
  /// The options it was set up with: kAmgAuto fields resolved, an adapted near-nullspace in place.
  const AmgOptions& options() const { return host_ ? host_->options() : opt_; }
  /// Device bytes the hierarchy holds now (see the file comment).
  std::size_t device_bytes() const { return upload_bytes_ + block_bytes_; }
  /// Wall time of the last upload (full, or values only after update_values), seconds.
  double upload_seconds() const { return upload_seconds_; }
  /// How many captured V-cycle graphs are held now (see the file comment).
  std::size_t graphs() const;

 private:
  struct Mat {
    CsrMatrix<T> A;
    SpmvPlan<T> plan;
    mutable std::map<index_t, SpmmPlan<T>> spmm;  ///< one per block width N > 1 seen
  };
  /// Work arrays of one V-cycle pass: x and b (levels ≥ 1), r, e, u, v, w; leading dimension ld.
  struct Work {
    T *x = nullptr, *b = nullptr, *r = nullptr, *e = nullptr, *u = nullptr, *v = nullptr, *w = nullptr;
    index_t ld = 1;
  };
  struct Level {
    index_t n = 0;
    Mat A, P, R;  ///< P, R: not made on the coarsest level
    DeviceArray<T> dinv;
    ChebyshevCoefficients coef;
    int smoother_block = 1;  ///< the smoother's node block: > 1 runs the recurrence in D_b⁻¹A
    int mean_row = 1;        ///< A_l's entries a row, rounded up (the node step's lanes a row)
    DeviceArray<T> binv;     ///< D_b's inverse blocks (smoother_block > 1), n × smoother_block
    /// The vector path's Chebyshev step: −1 the SpMV plan then the vector kernel, else the fused
    /// kernel's width (choose_chebyshev_step: A_l·x_k computed inside the step, never stored).
    int step = -1;
    mutable DeviceArray<T> vec;    ///< the vector path's work: 7 n-vectors (5 on level 0)
    mutable DeviceArray<T> block;  ///< apply_block's work: 7 n × block_ld_ blocks (5 on level 0)
  };

  /// Which apply a graph replays: the vectors' device pointers, N and leading dimensions.
  struct GraphKey {
    const T* r = nullptr;
    T* z = nullptr;
    index_t N = 1, ldr = 1, ldz = 1;
    bool operator<(const GraphKey& o) const {
      return std::tie(r, z, N, ldr, ldz) < std::tie(o.r, o.z, o.N, o.ldr, o.ldz);
    }
  };
  struct GraphEntry {
    int calls = 0;                          ///< applies seen with this key before its capture
    bool failed = false;                    ///< the capture failed: run as is from now on
    std::unique_ptr<CapturedCalls> graph;   ///< the captured V-cycle
  };
  static constexpr std::size_t kMaxGraphs = 8;

  void upload(const CsrMatrix<T>& A);
  void adopt(const CsrMatrix<T>& A);  // levels_ from gpu_
  void keep_choice();                 // gpu_'s info takes auto_choice_, with its set-up's θ retries
  void upload_values(const CsrMatrix<T>& A);
  std::size_t bytes_needed() const;
  Work work(std::size_t l, T* base, index_t ld) const;
  void mul(const Mat& M, index_t N, T alpha, const T* x, index_t ldx, T beta, T* y, index_t ldy,
           DeviceStream s) const;
  /// y = x + c1·(x − xp) + c2·D⁻¹(r − A_l·x) on vectors in one kernel, D_b⁻¹ with node blocks.
  void fused_step(const Level& L, const CsrView<T>& dA, T c1, T c2, const T* r, index_t ldr, const T* x, const T* xp,
                  T* y, index_t ldy, DeviceStream s) const;
  /// W.r = b − A_l·x: on vectors in one kernel where the level has a fused step, else a copy and a product.
  void residual(const Level& L, const Work& W, index_t N, const T* b, index_t ldb, const T* x, index_t ldx,
                DeviceStream s) const;
  /// The host level's node-block smoother (d.smoother_block, d.binv) into L.
  static void upload_blocks(Level& L, const AmgLevelData<T>& d);
  void smooth_correction(const Level& L, const Work& W, index_t N, const T* r, index_t ldr, T* e, index_t lde,
                         DeviceStream s) const;
  void sweep(const Level& L, const Work& W, index_t N, const T* b, index_t ldb, T* x, index_t ldx,
             DeviceStream s) const;
  /// "V-cycle on the GPU", naming the level whose coarse correction is one dense product.
  std::string vcycle_note() const;
  /// The coarsest level's inverse from the host's Cholesky factor (empty: a smoothed level), and
  /// the dense coarse correction of the level above it where that is small enough.
  void set_coarse(const std::vector<double>& factor);
  /// The same from the GPU set-up's factor, inverted in place (coarse_inv_ takes its memory).
  void set_coarse(DeviceArray<double>&& factor);
  /// The two steps of set_coarse once coarse_inv_ holds the factor.
  void invert_coarse();
  /// coarse_, made on first use.
  detail::AmgCoarseSolver& coarse_solver();
  /// Frees what the V-cycle holds on the device (levels, their work arrays and blocks, the coarse
  /// inverse and correction) and the graphs that point into it.
  void drop_levels();
  /// The adapting V-cycles on the GPU hierarchy (amg_adaptive.hpp), then the GPU set-up again
  /// with what they left where the plan keeps it; t0: the constructor's start. A conditional
  /// plan holds the first hierarchy meanwhile (two on the device for a while), and takes it back
  /// where the second is worse (amg::augmented_worse) or does not fit. `seed`: level 0's work the
  /// first set-up recorded, which the second takes instead of running it again.
  void adapt(const CsrMatrix<T>& A, const amg::AdaptivePlan& plan, std::chrono::steady_clock::time_point t0,
             detail::GpuLevel0Seed* seed);
  void coarse_solve(std::size_t l, const Work& W, index_t N, const T* b, index_t ldb, T* x, index_t ldx,
                    DeviceStream s) const;
  void vcycle(std::size_t l, const std::vector<Work>& W, index_t N, const T* b, index_t ldb, T* x, index_t ldx,
              DeviceStream s) const;
  /// The V-cycle z = M⁻¹r, from a graph where one is (or can now be) captured for `key`.
  void run_vcycle(const GraphKey& key, const std::vector<Work>& W, index_t N, const T* r, index_t ldr, T* z,
                  index_t ldz) const;

  std::unique_ptr<HostAmg<T>> host_;                 ///< the host set-up (null when built on the GPU)
  std::unique_ptr<detail::GpuAmgHierarchy<T>> gpu_;  ///< the GPU set-up's hierarchy (null: host)
  AmgOptions opt_;             ///< kAmgAuto resolved (amg::resolve_auto)
  AmgAutoChoice auto_choice_;  ///< how, for info() and summary()
  StructureFingerprint fingerprint_;
  SpmvPlan<T> plan0_;
  std::vector<Level> levels_;
  DeviceArray<double> coarse_inv_;  ///< the coarsest matrix's inverse, n_c × n_c (empty: smoothed)
  /// P·A_c⁻¹·R of the level above the coarsest, n_l × n_l (empty: that level is larger than
  /// kAmgDenseCorrectionRows, or the coarsest is smoothed): its whole coarse correction.
  DeviceArray<double> correction_;
  std::unique_ptr<detail::AmgCoarseSolver> coarse_;  ///< its handles, kept for every (re-)set-up
  mutable index_t block_ld_ = 0;  ///< the block work arrays' leading dimension (0: none yet)
  std::size_t upload_bytes_ = 0;
  mutable std::size_t block_bytes_ = 0;
  double upload_seconds_ = 0;
  mutable std::map<GraphKey, GraphEntry> graphs_;
  mutable CsrView<T> graph_a0_;  ///< level 0's device arrays when the graphs were captured
};

extern template class DeviceAmg<double>;
extern template class DeviceAmg<float>;

}  // namespace krysp
