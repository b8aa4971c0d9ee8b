// krysp: the command-line program.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/cli/commands.hpp"
#include "krysp/cli/mpi_session.hpp"

namespace {
const char* const kUsage =
    "krysp " KRYSP_VERSION " - GPU Krylov solvers on adaptive sparse kernels\n"
    "\n"
    "usage: krysp <command> [options]\n"
    "       krysp --help | --version\n"
    "\n"
    "commands:\n"
    "  solve A.mtx   solve A x = b with preconditioned CG (krysp solve --help)\n"
    "  tune A.mtx    time every SpMV kernel on A, print the table, cache the choice (krysp tune --help)\n"
    "  bench A.mtx   krysp SpMV against cuSPARSE on A (krysp bench --help)\n"
    "  eigs A.mtx    k extreme eigenpairs by LOBPCG, optionally A x = l B x (krysp eigs --help)\n"
    "\n"
    "exit codes: 0 converged/ok, 1 not converged, 2 bad input or usage, 3 device or runtime error\n";
}

namespace {
int run(const std::vector<std::string>& all);
}

int main(int argc, char** argv) {
  // Under mpirun (and only then) MPI runs; with more than one rank, solve and eigs take their
  // distributed paths, rank 0 prints and writes, the others stay silent (errors are agreed on
  // every rank, so printing them once loses nothing).
  krysp::cli::MpiSession mpi(argc, argv);
  if (krysp::cli::silent_rank()) {
    if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) {
      // a failure leaves the stream as it was: the rank may print, nothing worse
    }
  }
  return run(std::vector<std::string>(argv, argv + argc));
}

namespace {
int run(const std::vector<std::string>& all) {
  using namespace krysp::cli;
  std::vector<std::string> args(all.begin() + 1, all.end());
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return kExitBadInput;
  }
  const std::string cmd = args.front();
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    std::printf("krysp %s\n", KRYSP_VERSION);
    return kExitOk;
  }
  args.erase(args.begin());
  try {
    if (cmd == "solve") return solve_command(args);
    if (cmd == "tune") return tune_command(args);
    if (cmd == "bench") return bench_command(args);
    if (cmd == "eigs") return eigs_command(args);
    std::fprintf(stderr, "krysp: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
    return kExitBadInput;
  } catch (const krysp::InputError& e) {
    std::fprintf(stderr, "krysp: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const krysp::DeviceError& e) {
    std::fprintf(stderr, "krysp: device error: %s\n", e.what());
    return kExitDeviceError;
  } catch (const krysp::Error& e) {
    std::fprintf(stderr, "krysp: error: %s\n", e.what());
    return kExitDeviceError;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "krysp: error: out of host memory\n");
    return kExitDeviceError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "krysp: error: %s\n", e.what());
    return kExitBadInput;
  }
}
}  // namespace
