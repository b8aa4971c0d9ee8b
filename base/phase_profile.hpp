#pragma once
/// \file phase_profile.hpp
/// Opt-in wall-clock profile of a solver's phases (CUDA-free). A null PhaseProfile* disables it:
/// phase(nullptr, ...) is one pointer test, so call sites cost nothing when profiling is off.
/// When on, the owner's `sync` hook (e.g. cuda_synchronize) runs at the start and end of every
/// phase, so asynchronous device work is charged to the phase that launched it; and the
/// `transfers` hook (e.g. the count of synchronising device→host copies) is read at both ends,
/// so each phase also reports how many such copies it made. Phases nest (an outer phase includes
/// its inner ones); a phase is identified by its name.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace krysp {

/// Totals per named phase, in order of first use.
class PhaseProfile {
 public:
  /// One phase's totals.
  struct Entry {
    const char* name;
    double seconds = 0;
    std::uint64_t calls = 0, transfers = 0;
  };
  /// sync: run around every phase (may be empty); transfers: a running count of device→host
  /// copies (may be empty: 0).
  PhaseProfile(std::function<void()> sync, std::function<std::uint64_t()> transfers)
      : sync_(std::move(sync)), transfers_(std::move(transfers)) {}

  /// Times one phase from construction to destruction (no-op for a null profile).
  class Scope {
   public:
    /// Starts timing `name` (syncs first); nothing when p is null.
    Scope(PhaseProfile* p, const char* name) : p_(p), name_(name) {
      if (!p_) return;
      p_->sync();
      t0_ = p_->transfer_count();
      start_ = std::chrono::steady_clock::now();
    }
    ~Scope() {
      if (!p_) return;
      p_->sync();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      p_->add(name_, s, p_->transfer_count() - t0_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseProfile* p_;
    const char* name_;
    std::uint64_t t0_ = 0;
    std::chrono::steady_clock::time_point start_{};
  };

  /// Adds one call of `name` taking `seconds` and making `transfers` device→host copies.
  void add(const char* name, double seconds, std::uint64_t transfers) {
    Entry* e = nullptr;
    for (Entry& x : entries_)
      if (std::strcmp(x.name, name) == 0) e = &x;
    if (!e) e = &entries_.emplace_back(Entry{name});
    e->seconds += seconds;
    ++e->calls;
    e->transfers += transfers;
  }
  /// The totals so far.
  const std::vector<Entry>& entries() const { return entries_; }

  /// The table, phases in order of first use: total ms, calls, ms per call, device→host copies.
  void print(std::FILE* out, const std::string& title) const {
    std::fprintf(out, "%s (device synchronised around every phase; phases nest)\n", title.c_str());
    std::fprintf(out, "  %-34s %10s %8s %10s %8s %8s\n", "phase", "total ms", "calls", "ms/call", "d2h", "d2h/call");
    for (const Entry& e : entries_)
      std::fprintf(out, "  %-34s %10.3f %8llu %10.4f %8llu %8.2f\n", e.name, 1e3 * e.seconds,
                   (unsigned long long)e.calls, 1e3 * e.seconds / double(e.calls), (unsigned long long)e.transfers,
                   double(e.transfers) / double(e.calls));
  }

 private:
  void sync() {
    if (sync_) sync_();
  }
  std::uint64_t transfer_count() const { return transfers_ ? transfers_() : 0; }
  std::function<void()> sync_;
  std::function<std::uint64_t()> transfers_;
  std::vector<Entry> entries_;
};

/// The scope of one phase: `auto s = phase(profile, "name");`
inline PhaseProfile::Scope phase(PhaseProfile* p, const char* name) { return PhaseProfile::Scope(p, name); }

}  // namespace krysp
