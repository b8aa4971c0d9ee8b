// Experiment (not built by CMake): the augmenting cycles at a higher smoother degree than the
// hierarchy's. Host, the GPU V-cycle's options, b = A·1, PCG to 1e-8: the default (cycles and
// hierarchy at the auto degree), then for D in 4, 6, 8 a first hierarchy at degree D runs the
// auto rule's cycles and decides, and the vectors it keeps (if any) go to a hierarchy at the auto
// degree as given near-nullspace vectors. Prints iterations (negative: not converged) and the
// decisions. Build: g++ -std=c++17 -O2 -fopenmp -I build/include -I/usr/include/trilinos \
//   amg_cycle_degree.cpp -L build -lkrysp -ltrilinos_kokkoscore -Wl,-rpath,$PWD/build
#include <cstdio>
#include <string>

#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/solvers/solve.hpp"
using namespace krysp;

static int pcg(const CsrMatrix<double>& A, const AmgOptions& o, const std::vector<double>& b) {
  SolveOptions so;
  so.backend = Backend::Host;
  so.precond.kind = PrecondKind::Amg;
  so.precond.amg = o;
  so.cg.max_iters = 5000;
  std::vector<double> x;
  const auto r = solve(A, b, x, so);
  return r.converged() ? int(r.iterations) : -int(r.iterations);
}

int main(int argc, char** argv) {
  std::printf("matrix,default_iterations,default_kept");
  for (int D : {4, 6, 8}) std::printf(",d%d_kept,d%d_iterations", D, D);
  std::printf("\n");
  for (int a = 1; a < argc; ++a) {
    std::string name = argv[a];
    name = name.substr(name.find_last_of('/') + 1);
    try {
      const auto A = io::read_matrix_market<double>(argv[a]);
      std::vector<double> ones(std::size_t(A.rows()), 1.0), b(std::size_t(A.rows()));
      A.multiply_host(ones.data(), b.data());
      const AmgOptions base = amg::vcycle_on_device(AmgOptions{});
      const HostAmg<double> H0(A, base);
      std::printf("%s,%d,%d", name.c_str(), pcg(A, base, b), H0.options().near_nullspace_vectors);
      for (int D : {4, 6, 8}) {
        AmgOptions od = base;
        od.smoother_degree = D;
        const HostAmg<double> H(A, od);
        const AmgOptions& ad = H.options();
        AmgOptions o = base;
        if (ad.near_nullspace_vectors > 0) {
          o.near_nullspace = ad.near_nullspace;
          o.near_nullspace_vectors = ad.near_nullspace_vectors;
        } else {
          o.adaptive_cycles = 0;  // set aside, or none ran: the first hierarchy at the auto degree
        }
        std::printf(",%d,%d", ad.near_nullspace_vectors, pcg(A, o, b));
      }
      std::printf("\n");
    } catch (const std::exception& e) {
      std::printf("%s,error: %s\n", name.c_str(), e.what());
    }
    std::fflush(stdout);
  }
}
