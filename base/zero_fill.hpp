#pragma once
/// \file zero_fill.hpp
/// Sizing a result vector to n zeros while the device works. A zero initial guess is never
/// uploaded, so the host vector that receives the solution is only needed at the final download;
/// filling it (page faults and a memset: ~12 ms per 32 MB) can overlap the iterations.
#include <cstddef>
#include <future>
#include <vector>

namespace krysp {

/// v.assign(n, 0.0), on another thread when n is at least kMinAsync entries (starting a thread
/// costs ~50 µs), else at once. wait() (or the destructor) before v is touched.
class ZeroFill {
 public:
  static constexpr std::size_t kMinAsync = std::size_t(1) << 20;
  /// Starts v.assign(n, 0.0) (on another thread from kMinAsync entries on); v must outlive this.
  ZeroFill(std::vector<double>& v, std::size_t n) {
    if (n >= kMinAsync) done_ = std::async(std::launch::async, [&v, n] { v.assign(n, 0.0); });
    else v.assign(n, 0.0);
  }
  ZeroFill(const ZeroFill&) = delete;
  ZeroFill& operator=(const ZeroFill&) = delete;
  ~ZeroFill() { wait(); }
  /// Returns once v holds its n zeros (rethrows std::bad_alloc from the other thread).
  void wait() {
    if (done_.valid()) done_.get();
  }

 private:
  std::future<void> done_;
};

}  // namespace krysp
