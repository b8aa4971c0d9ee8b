// Experiment (not built by CMake): could the augmented hierarchy's set-aside be foreseen before
// the adapting cycles? Per matrix, on the host with the GPU V-cycle's options, the first
// hierarchy (adaptive 0) and the default auto rule; est = 1 + (K/b)^2 (C1 - 1) is the augmented
// operator complexity were its aggregates the first's (bench/results/amg_augment_precheck_host_*).
// Build: g++ -std=c++17 -O2 -fopenmp -I build/include -I/usr/include/trilinos amg_augment_precheck.cpp \
//   -L build -lkrysp -ltrilinos_kokkoscore -Wl,-rpath,$PWD/build
#include <cstdio>
#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/amg.hpp"
using namespace krysp;
int main(int argc, char** argv) {
  std::printf("matrix b K C1 cap est final kept discarded levels1 levels\n");
  for (int a = 1; a < argc; ++a) {
    const auto A = io::read_matrix_market<double>(argv[a]);
    try {
      AmgOptions o0 = amg::vcycle_on_device(AmgOptions{});
      o0.adaptive_cycles = 0;
      HostAmg<double> H0(A, o0);
      HostAmg<double> H(A, amg::vcycle_on_device(AmgOptions{}));
      const auto& c = H.info().auto_choice;
      const int b = H0.info().levels[0].block_size;
      const int K = c.adapt_vectors;
      const double C1 = H0.info().operator_complexity;
      const double est = K > 0 ? 1 + double(K) * K / (double(b) * b) * (C1 - 1) : 0;
      std::printf("%s %d %d %.3f %.3f %.3f %.3f %d %d %zu %zu\n", argv[a], b, K, C1, 2.5 * C1, est,
                  H.info().operator_complexity, c.adapted_cycles, c.adapt_discarded_cycles, H0.info().levels.size(),
                  H.info().levels.size());
    } catch (const std::exception& e) {
      std::printf("%s error %s\n", argv[a], e.what());
    }
  }
}
