#pragma once
/// \file recycle_pool.hpp
/// A per-process pool of a few expensive per-device resources (library handles, pinned buffers)
/// given back by objects that are destroyed, for the next object on the same device to take: their
/// creation costs 0.2-1 ms, as much as a small solve or set-up. Internal; CUDA-free.
#include <cstddef>
#include <mutex>
#include <vector>

namespace krysp::detail {

/// Entry: what one object gives back (a struct of handles). One pool per Entry type, shared by the
/// whole process, at most Max entries; never destroyed (destructors may run at exit).
template <class Entry, std::size_t Max>
class RecyclePool {
 public:
  /// Moves the first entry for which `fits(entry)` holds into `out` and removes it; false when
  /// none does.
  template <class Fits>
  static bool take(Fits fits, Entry& out) {
    std::lock_guard<std::mutex> lock(mutex());
    auto& v = entries();
    for (auto it = v.begin(); it != v.end(); ++it)
      if (fits(*it)) {
        out = *it;
        v.erase(it);
        return true;
      }
    return false;
  }
  /// Keeps `e` for a later take(); false when the pool is full (the caller frees e's resources).
  static bool give(const Entry& e) {
    std::lock_guard<std::mutex> lock(mutex());
    if (entries().size() >= Max) return false;
    entries().push_back(e);
    return true;
  }

 private:
  static std::mutex& mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::vector<Entry>& entries() {
    static auto* v = new std::vector<Entry>;
    return *v;
  }
};

}  // namespace krysp::detail
