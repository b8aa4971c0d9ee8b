// A memcpy split over a small pool of threads, for the staged host<->device copies.
#include "krysp/base/cuda/parallel_copy.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#include <sched.h>

#include "krysp/base/device_memory.hpp"

namespace krysp::detail {

int copy_threads() {
  static const int n = [] {
    if (const char* v = std::getenv(kCopyThreadsEnv); v && *v) {
      errno = 0;
      char* end = nullptr;
      const long x = std::strtol(v, &end, 10);
      if (errno == 0 && *end == '\0' && x >= 1 && x <= 64) return int(x);
    }
    // The CPUs this process may run on, not the machine's: an MPI rank bound to one core must not
    // queue parts for workers that can only run when it waits.
    int cpus = int(std::thread::hardware_concurrency());
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
    return std::clamp(cpus, 1, 4);
  }();
  return n;
}

namespace {
/// One part of a parallel_memcpy, in an array on its caller's stack (so that queueing allocates
/// nothing and cannot throw halfway); `pending` counts that call's queued parts not yet copied.
/// Both are guarded by the pool's mutex, and the caller returns only once `pending` is 0.
struct Part {
  char* dst;
  const char* src;
  std::size_t len;
  std::size_t* pending;
  Part* next;  // the next queued part
};
struct CopyPool {
  std::mutex mutex;
  std::condition_variable work;  // a part was queued
  std::condition_variable done;  // some call's last queued part was copied
  Part* queue = nullptr;         // queued parts of every call, as a stack
};

[[noreturn]] void work(CopyPool& pool) {
  std::unique_lock<std::mutex> lock(pool.mutex);
  for (;;) {
    pool.work.wait(lock, [&] { return pool.queue != nullptr; });
    const Part p = *pool.queue;
    pool.queue = p.next;
    lock.unlock();
    std::memcpy(p.dst, p.src, p.len);
    lock.lock();
    if (--*p.pending == 0) pool.done.notify_all();  // under the lock: the caller cannot have returned
  }
}

CopyPool& pool() {
  // Never destroyed and the workers never joined (they wait, detached, until the process ends):
  // copies may run during static destruction, as device_memory.cu's statics assume.
  static CopyPool* p = [] {
    auto* p = new CopyPool;
    for (int i = 1; i < copy_threads(); ++i) {
      try {
        std::thread(work, std::ref(*p)).detach();
      } catch (const std::system_error&) {
        break;  // fewer workers: callers copy the parts left over themselves
      }
    }
    return p;
  }();
  return *p;
}
}  // namespace

void parallel_memcpy(void* dst, const void* src, std::size_t bytes, int max_parts) {
  constexpr std::size_t kMaxParts = 64;
  std::size_t parts = std::min({std::size_t(std::max(max_parts, 1)), kMaxParts, bytes / kParallelCopyMinPart});
  if (parts <= 1) {
    if (bytes) std::memcpy(dst, src, bytes);
    return;
  }
  // equal parts rounded up to whole pages (so no two threads write one cache line); the last is shorter
  constexpr std::size_t kPage = 4096;
  const std::size_t step = ((bytes + parts - 1) / parts + kPage - 1) / kPage * kPage;
  parts = (bytes + step - 1) / step;
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  CopyPool& p = pool();
  Part queued[kMaxParts];
  std::size_t pending = parts - 1;  // the parts given to the pool: all but the first
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    for (std::size_t k = 1; k < parts; ++k) {
      queued[k] = {d + k * step, s + k * step, std::min(step, bytes - k * step), &pending, p.queue};
      p.queue = &queued[k];
    }
  }
  for (std::size_t k = 1; k < parts; ++k) p.work.notify_one();
  std::memcpy(d, s, step);
  std::unique_lock<std::mutex> lock(p.mutex);
  while (pending > 0) {
    // take back a part of ours that no worker has started, else wait for the workers to finish theirs
    Part** link = &p.queue;
    while (*link && (*link)->pending != &pending) link = &(*link)->next;
    if (!*link) {
      p.done.wait(lock);
      continue;
    }
    const Part q = **link;
    *link = q.next;
    lock.unlock();
    std::memcpy(q.dst, q.src, q.len);
    lock.lock();
    --pending;
  }
}

}  // namespace krysp::detail
