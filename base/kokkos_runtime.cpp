#include "krysp/base/kokkos_runtime.hpp"

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <mutex>

namespace krysp {
void ensure_kokkos() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Kokkos::is_initialized()) return;
    Kokkos::InitArguments args;
    args.disable_warnings = true;
    Kokkos::initialize(args);
    std::atexit([] {
      if (Kokkos::is_initialized()) Kokkos::finalize();
    });
  });
}
}  // namespace krysp
