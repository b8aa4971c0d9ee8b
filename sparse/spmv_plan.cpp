#include "krysp/sparse/spmv_plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <sstream>
#include <type_traits>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/overlap.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/spmv_partition.hpp"
#include "krysp/sparse/spmv_select.hpp"
#include "krysp/sparse/tune_cache.hpp"

namespace krysp {

const char* to_string(SpmvSelection::Source s) {
  switch (s) {
    case SpmvSelection::Source::Rule: return "rule";
    case SpmvSelection::Source::Forced: return "forced";
    case SpmvSelection::Source::Tuned: return "tuned";
    case SpmvSelection::Source::Cache: return "cache";
  }
  return "unknown";
}

namespace detail {
/// Device data of one nonzero-balanced tile size (pointers into an NnzSet's allocation).
template <class T>
struct NnzData {
  NnzGeometry geometry;
  index_t* partition = nullptr;  // num_tiles + 1
  T* block_carry = nullptr;      // num_blocks
  unsigned* flags = nullptr;     // num_blocks, zero
  index_t* carry_in = nullptr;   // num_blocks
  unsigned long long* ticket = nullptr;  // 1, zero
  bool any_carry = false;  // some row crosses a block boundary
  SpmvWorkspaceView::Carry carry = SpmvWorkspaceView::Carry::None;

  SpmvWorkspaceView view() const {
    SpmvWorkspaceView v;
    v.geometry = geometry;
    v.partition = partition;
    v.carry = carry;
    v.block_carry = block_carry;
    v.flags = flags;
    v.carry_in = carry_in;
    v.ticket = ticket;
    return v;
  }
};

/// Tile shape of a nonzero-balanced configuration: (nnz_per_thread, block_warps).
using NnzKey = std::pair<int, int>;
inline NnzKey nnz_key(const SpmvConfig& c) { return {c.nnz_per_thread, c.block_warps}; }

/// The partitions of one or more tile shapes in a single device allocation (plan creation is
/// dominated by allocations and round trips on small matrices): one cudaMalloc, one memset, one
/// partition kernel per shape, one small copy back (which shapes leave carries; with
/// `stats`, also the row statistics, computed by a kernel in the same pass).
template <class T>
struct NnzSet {
  DeviceArray<unsigned char> memory;
  std::map<NnzKey, NnzData<T>> by_key;
};

template <class T>
NnzSet<T> make_nnz_set(const CsrView<T>& dA, const std::vector<NnzKey>& keys, SpmvPlanOptions::Carry carry,
                       RowStats* stats = nullptr) {
  NnzSet<T> set;
  auto align = [](std::size_t n) { return (n + 15) / 16 * 16; };
  constexpr std::size_t kHeader = 128;  // row statistics (16 bytes), then one "carries" word per shape
  KRYSP_REQUIRE(keys.size() <= (kHeader - kRowStatsBytes) / 4, "make_nnz_set: too many tile shapes");
  std::size_t bytes = kHeader;
  std::vector<std::size_t> offset;
  for (const NnzKey& key : keys) {
    const NnzGeometry g = nnz_geometry(dA.nnz, key.first, key.second);
    offset.push_back(bytes);
    const std::size_t B = std::size_t(g.num_blocks), W = std::size_t(g.num_tiles);
    bytes += align(B * sizeof(T)) + align(B * 4) + align(B * 4) + 16 + align((W + 1) * 4);
  }
  set.memory = DeviceArray<unsigned char>(bytes);
  set.memory.zero();  // flags, tickets, statistics and header words start at 0
  unsigned char* base = set.memory.data();
  unsigned* any_word = reinterpret_cast<unsigned*>(base + kRowStatsBytes);
  if (stats) row_stats_async(dA.row_ptr, dA.rows, base);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    NnzData<T> d;
    d.geometry = nnz_geometry(dA.nnz, keys[i].first, keys[i].second);
    const std::size_t B = std::size_t(d.geometry.num_blocks);
    unsigned char* p = base + offset[i];
    d.block_carry = reinterpret_cast<T*>(p);
    p += align(B * sizeof(T));
    d.flags = reinterpret_cast<unsigned*>(p);
    p += align(B * 4);
    d.carry_in = reinterpret_cast<index_t*>(p);
    p += align(B * 4);
    d.ticket = reinterpret_cast<unsigned long long*>(p);  // 16-byte aligned
    p += 16;
    d.partition = reinterpret_cast<index_t*>(p);
    if (d.geometry.num_tiles > 0)
      nnz_partition_device(dA.row_ptr, dA.rows, dA.nnz, d.geometry, d.partition, d.carry_in, any_word + i);
    set.by_key.emplace(keys[i], std::move(d));
  }
  unsigned char header[kHeader] = {};
  detail::copy_to_host(header, base, kHeader);  // waits for the kernels
  if (stats) *stats = row_stats_from(dA.rows, dA.nnz, header);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    NnzData<T>& d = set.by_key.at(keys[i]);
    unsigned any = 0;
    std::memcpy(&any, header + kRowStatsBytes + 4 * i, 4);
    d.any_carry = any != 0;
    d.carry = !d.any_carry ? SpmvWorkspaceView::Carry::None
              : carry == SpmvPlanOptions::Carry::LookBack   ? SpmvWorkspaceView::Carry::LookBack
              : carry == SpmvPlanOptions::Carry::FixUp      ? SpmvWorkspaceView::Carry::FixUp
              : dA.nnz < SpmvRuleParams{}.look_back_max_nnz ? SpmvWorkspaceView::Carry::LookBack
                                                            : SpmvWorkspaceView::Carry::FixUp;
  }
  return set;
}

/// spmv_preload() once per configuration and precision in this process.
template <class T>
void preload_once(const SpmvConfig& c) {
  static std::mutex mu;
  static std::vector<SpmvConfig> done;
  std::lock_guard<std::mutex> lock(mu);
  if (std::find(done.begin(), done.end(), c) != done.end()) return;
  spmv_preload<T>(c);
  done.push_back(c);
}
}  // namespace detail

namespace {
std::atomic<std::uint64_t> g_plans_created{0};

/// y = A·x needs x (A.cols() entries) where A has entries, y (A.rows()), and no entry of both:
/// y written while x is read would give a wrong answer.
template <class T>
void check_vectors(const char* who, const CsrMatrix<T>& A, const T* x, const T* y) {
  KRYSP_REQUIRE(A.rows() == 0 || y != nullptr, who, ": y is null");
  KRYSP_REQUIRE(A.nnz() == 0 || x != nullptr, who, ": x is null");
  KRYSP_REQUIRE(A.nnz() == 0 || !ranges_overlap(x, A.cols(), y, A.rows()), who, ": x (", static_cast<const void*>(x),
                ", ", A.cols(), " entries) and y (", static_cast<const void*>(y), ", ", A.rows(),
                " entries) share entries: y would be written while x is read");
}

template <class T>
const char* precision_name() {
  return std::is_same_v<T, double> ? "double" : "float";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

template <class T>
struct SpmvPlan<T>::State {
  StructureFingerprint fingerprint;
  RowStats stats;
  SpmvConfig config;
  SpmvSelection selection;
  detail::NnzSet<T> nnz;  // empty for the row-balanced kernels
  detail::SpmvWorkspaceView workspace;
  // The fused dot's partials and ticket, made at the first apply_dot (most plans never need them).
  mutable std::once_flag dot_once;
  mutable DeviceArray<unsigned char> dot_memory;
  mutable detail::SpmvDot dot;
};

namespace {

/// The SpMV plan's choice, apart from its construction: the configuration for A (uploaded: dA),
/// how it was chosen, the row statistics, and the partitions tuning made (kept for the plan).
template <class T>
struct SpmvChoice {
  SpmvConfig config;
  SpmvSelection selection;
  RowStats stats;
  detail::NnzSet<T> nnz;     ///< Tune: the partitions of every timed tile shape (else empty)
  bool have_nnz_data = false;  ///< nnz holds the partitions of the candidates
};

/// Times the candidates on A (statistics and partitions made in one device pass); the fastest, and
/// the timed table, into c (tuning_seconds from t0). Stores the pick in the cache when
/// options.use_cache.
template <class T>
void tune_spmv(const CsrView<T>& dA, index_t nnz, const SpmvPlanOptions& options, TuneCache& cache,
               const TuneKey& key, std::chrono::steady_clock::time_point t0, SpmvChoice<T>& c) {
  SpmvSelection& sel = c.selection;
  // One pass on the device: statistics and the partitions of every tile shape a candidate may
  // use, then one copy back.
  // Only the tile shapes spmv_candidates() can use at this size (small: two; fewer launches).
  const std::vector<detail::NnzKey> keys =
      nnz >= SpmvRuleParams{}.large_nnz ? std::vector<detail::NnzKey>{{4, 4}, {8, 4}, {16, 4}, {8, 8}}
                                        : std::vector<detail::NnzKey>{{4, 4}, {8, 4}};
  c.nnz = detail::make_nnz_set(dA, keys, options.carry, &c.stats);
  c.have_nnz_data = true;  // kept whatever wins: a few bytes per tile
  const std::vector<SpmvConfig> cands = spmv_candidates(c.stats);
  for (const SpmvConfig& cand : cands) {
    detail::preload_once<T>(cand);  // no lazy kernel loading inside the timing
    KRYSP_REQUIRE(!is_nnz_balanced(cand.algorithm) || c.nnz.by_key.count(detail::nnz_key(cand)),
                  "SpmvPlan: no partition for candidate ", cand.to_string());
  }
  // Never time on zeros: random x and y (a scratch buffer shared by all plans).
  const std::size_t nx = std::size_t(std::max<index_t>(dA.cols, 1)), ny = std::size_t(std::max<index_t>(dA.rows, 1));
  T* const xy = static_cast<T*>(detail::tuning_scratch((nx + ny) * sizeof(T)));
  detail::fill_random_device(xy, nx + ny, 0x5eed0001ull);
  std::vector<std::function<void()>> runs;
  for (const SpmvConfig& cand : cands) {
    const detail::SpmvWorkspaceView ws =
        is_nnz_balanced(cand.algorithm) ? c.nnz.by_key.at(detail::nnz_key(cand)).view() : detail::SpmvWorkspaceView{};
    const detail::SpmvArgs<T> args{dA, ws, T(1), xy, T(0), xy + nx, {}, {}};
    runs.push_back([cand, args] { detail::spmv_device<T>(cand, args); });
  }
  // Round 1 times every candidate; at most kTuneFinalists within kTunePruneFactor of the
  // fastest get tune_reps - 1 more rounds (median), unless the fastest is at the launch floor
  // (SpmvRuleParams::tune_one_round_max_ms).
  const SpmvRuleParams rule_params{};  // the tuned defaults
  const std::vector<double> ms =
      time_device_interleaved_ms(runs, options.tune_warmup, options.tune_reps, rule_params.tune_prune_factor,
                                 rule_params.tune_finalists, rule_params.tune_one_round_max_ms);
  std::size_t best = 0;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    sel.candidates.push_back({cands[i], ms[i]});
    if (ms[i] < ms[best]) best = i;
  }
  c.config = cands[best];
  sel.chosen_ms = ms[best];
  sel.source = SpmvSelection::Source::Tuned;
  sel.tuning_seconds = seconds_since(t0);
  if (options.use_cache) cache.store(TuneEntry{key, c.config, sel.chosen_ms});
}

/// The configuration for A (device view dA): forced, from the cache or timed (Select::Tune), or the
/// rule; the rule's pick is recorded in every case.
template <class T>
SpmvChoice<T> choose_spmv(const CsrMatrix<T>& A, const CsrView<T>& dA, const SpmvPlanOptions& options) {
  SpmvChoice<T> c;
  SpmvSelection& sel = c.selection;
  bool have_stats = false;
  if (options.force) {
    std::string why;
    KRYSP_REQUIRE(is_valid(options.forced, &why), "SpmvPlan: the forced configuration is invalid: ", why);
    c.config = options.forced;
    sel.source = SpmvSelection::Source::Forced;
  } else if (options.select == SpmvPlanOptions::Select::Tune) {
    KRYSP_REQUIRE(options.tune_reps >= 1 && options.tune_warmup >= 0, "SpmvPlan: tune_reps must be >= 1 and "
                  "tune_warmup >= 0 (got ", options.tune_reps, ", ", options.tune_warmup, ")");
    const auto t0 = std::chrono::steady_clock::now();  // tuning_seconds counts the cache lookup
    TuneKey key{A.fingerprint(), precision_name<T>(), cached_device_name(), kSpmvKernelVersion};
    std::optional<TuneEntry> cached;
    TuneCache cache(options.cache_dir);
    if (options.use_cache) {
      sel.cache_file = cache.file();
      cached = cache.lookup(key);
    }
    if (cached) {
      c.config = cached->config;
      sel.chosen_ms = cached->ms;
      sel.source = SpmvSelection::Source::Cache;
    } else {
      tune_spmv(dA, A.nnz(), options, cache, key, t0, c);
      have_stats = true;
    }
  } else {
    sel.source = SpmvSelection::Source::Rule;
  }
  if (!have_stats) c.stats = detail::row_stats_device(dA.row_ptr, dA.rows, dA.nnz);
  sel.rule = choose_spmv_rule(c.stats);
  if (sel.source == SpmvSelection::Source::Rule) c.config = sel.rule;
  return c;
}

}  // namespace

template <class T>
SpmvPlan<T>::SpmvPlan(const CsrMatrix<T>& A, const SpmvPlanOptions& options) {
  auto s = std::make_shared<State>();
  s->fingerprint = A.fingerprint();
  const CsrView<T> dA = A.device_view();  // upload now, not inside the first iteration
  SpmvChoice<T> c = choose_spmv(A, dA, options);
  s->config = c.config;
  s->selection = std::move(c.selection);
  s->stats = c.stats;
  s->nnz = std::move(c.nnz);
  // The prepared data: the chosen kernel's partition (tuning's, or made now).
  if (is_nnz_balanced(s->config.algorithm)) {
    if (!c.have_nnz_data) s->nnz = detail::make_nnz_set(dA, {detail::nnz_key(s->config)}, options.carry);
    s->workspace = s->nnz.by_key.at(detail::nnz_key(s->config)).view();
  }
  state_ = std::move(s);
  ++g_plans_created;
}

template <class T>
template <class U>
SpmvPlan<T>::SpmvPlan(const CsrMatrix<T>& A, const SpmvPlan<U>& like) {
  KRYSP_REQUIRE(like.valid(), "SpmvPlan: the plan to copy from is empty (default-constructed)");
  KRYSP_REQUIRE(A.fingerprint() == like.fingerprint(), "SpmvPlan: the plan to copy from was made for matrix ",
                like.fingerprint().to_string(), " but was given ", A.fingerprint().to_string());
  auto s = std::make_shared<State>();
  s->fingerprint = A.fingerprint();
  s->stats = like.stats();
  s->config = like.config();
  s->selection = like.selection();
  const CsrView<T> dA = A.device_view();
  if (is_nnz_balanced(s->config.algorithm)) {
    s->nnz = detail::make_nnz_set(dA, {detail::nnz_key(s->config)}, SpmvPlanOptions::Carry::Auto);
    s->workspace = s->nnz.by_key.at(detail::nnz_key(s->config)).view();
  }
  state_ = std::move(s);
  ++g_plans_created;
}

template <class T>
void SpmvPlan<T>::apply(const CsrMatrix<T>& A, T alpha, const T* x, T beta, T* y, DeviceStream stream) const {
  KRYSP_REQUIRE(state_, "SpmvPlan::apply: the plan is empty (default-constructed)");
  KRYSP_REQUIRE(A.fingerprint() == state_->fingerprint, "SpmvPlan::apply: plan was made for matrix ",
                state_->fingerprint.to_string(), " but was given ", A.fingerprint().to_string());
  check_vectors("SpmvPlan::apply", A, x, y);
  detail::spmv_device(state_->config,
                      detail::SpmvArgs<T>{A.device_view(), state_->workspace, alpha, x, beta, y, {}, stream});
}

template <class T>
void SpmvPlan<T>::apply_dot(const CsrMatrix<T>& A, const T* x, T* y, double* dot_xy) const {
  KRYSP_REQUIRE(state_, "SpmvPlan::apply_dot: the plan is empty (default-constructed)");
  KRYSP_REQUIRE(A.fingerprint() == state_->fingerprint, "SpmvPlan::apply_dot: plan was made for matrix ",
                state_->fingerprint.to_string(), " but was given ", A.fingerprint().to_string());
  KRYSP_REQUIRE(A.rows() == A.cols(), "SpmvPlan::apply_dot: xᵀ(A·x) needs a square matrix, not ", A.rows(), "x",
                A.cols());
  KRYSP_REQUIRE(dot_xy != nullptr, "SpmvPlan::apply_dot: the dot's destination is null");
  check_vectors("SpmvPlan::apply_dot", A, x, y);
  const State& s = *state_;
  std::call_once(s.dot_once, [&] {
    const std::size_t partials = detail::spmv_dot_partials(s.config, A.rows(), A.nnz());
    s.dot_memory = DeviceArray<unsigned char>(partials * sizeof(double) + 16);
    s.dot_memory.zero();  // the ticket starts at 0
    s.dot.partials = reinterpret_cast<double*>(s.dot_memory.data() + 16);
    s.dot.ticket = reinterpret_cast<unsigned*>(s.dot_memory.data());
  });
  detail::SpmvDot dot = s.dot;
  dot.out = dot_xy;
  detail::spmv_device(s.config, detail::SpmvArgs<T>{A.device_view(), s.workspace, T(1), x, T(0), y, dot, {}});
}

template <class T>
const SpmvConfig& SpmvPlan<T>::config() const {
  KRYSP_REQUIRE(state_, "SpmvPlan: the plan is empty");
  return state_->config;
}
template <class T>
const RowStats& SpmvPlan<T>::stats() const {
  KRYSP_REQUIRE(state_, "SpmvPlan: the plan is empty");
  return state_->stats;
}
template <class T>
const StructureFingerprint& SpmvPlan<T>::fingerprint() const {
  KRYSP_REQUIRE(state_, "SpmvPlan: the plan is empty");
  return state_->fingerprint;
}
template <class T>
const SpmvSelection& SpmvPlan<T>::selection() const {
  KRYSP_REQUIRE(state_, "SpmvPlan: the plan is empty");
  return state_->selection;
}
template <class T>
const char* SpmvPlan<T>::carry_mode() const {
  KRYSP_REQUIRE(state_, "SpmvPlan: the plan is empty");
  switch (state_->workspace.carry) {
    case detail::SpmvWorkspaceView::Carry::None: return "none";
    case detail::SpmvWorkspaceView::Carry::LookBack: return "look-back";
    case detail::SpmvWorkspaceView::Carry::FixUp: return "fix-up";
  }
  return "unknown";
}
template <class T>
bool SpmvPlan<T>::matches(const CsrMatrix<T>& A) const {
  return state_ && A.fingerprint() == state_->fingerprint;
}
template <class T>
std::uint64_t SpmvPlan<T>::plans_created() {
  return g_plans_created.load();
}

template class SpmvPlan<double>;
template class SpmvPlan<float>;
template SpmvPlan<float>::SpmvPlan(const CsrMatrix<float>&, const SpmvPlan<double>&);
template SpmvPlan<double>::SpmvPlan(const CsrMatrix<double>&, const SpmvPlan<float>&);

}  // namespace krysp
