// Not enough GPU memory: a clear DeviceError naming the bytes needed and free, nothing leaked on
// the error path, the device still usable afterwards, and on the command line exit code 3 with no
// output file (nor temporary file) left behind. Provoked for real (an allocation larger than the
// GPU) and through the KRYSP_DEVICE_MEMORY_LIMIT test hook (base/device_memory.hpp), which makes a
// whole solve run out of memory part-way through its setup.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/io/hdf5_result.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace krysp;

namespace {
/// Sets KRYSP_DEVICE_MEMORY_LIMIT while alive.
struct MemoryLimit {
  explicit MemoryLimit(std::size_t bytes) { ::setenv(kDeviceMemoryLimitEnv, std::to_string(bytes).c_str(), 1); }
  ~MemoryLimit() { ::unsetenv(kDeviceMemoryLimitEnv); }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "(no DeviceError)";
}

/// Runs a shell command; returns its exit code and puts stdout+stderr in *out.
int run(const std::string& cmd, std::string* out) {
  const fs::path log = fs::temp_directory_path() / ("krysp_oom_" + std::to_string(::getpid()) + ".log");
  const int status = std::system((cmd + " >" + log.string() + " 2>&1").c_str());
  std::ifstream in(log);
  *out = {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  fs::remove(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST_CASE("OOM GPU: an allocation larger than the GPU is a DeviceError naming bytes needed and free") {
  std::size_t free_b = 0, total_b = 0;
  cuda_memory_info(free_b, total_b);
  const std::size_t held0 = device_bytes_allocated();
  CAPTURE(free_b);
  const std::size_t want = total_b + (std::size_t(1) << 30);
  const std::string msg = message_of([&] { DeviceArray<char> too_big(want); });
  CHECK(msg.find("cannot allocate " + std::to_string(want) + " bytes of device memory") != std::string::npos);
  CHECK(msg.find("bytes free of " + std::to_string(total_b)) != std::string::npos);
  CHECK(device_bytes_allocated() == held0);
  // The failure is not sticky: the device still works.
  const auto A = test::load("bcsstk01");
  std::vector<double> b(A.rows(), 1.0), x;
  SolveOptions o;
  o.backend = Backend::Cuda;
  CHECK(solve(A, b, x, o).converged());
}

TEST_CASE("OOM GPU: CG, block CG and LOBPCG running out of memory part-way throw and leak nothing") {
  const auto A = laplacian_2d(300, 300);  // 90,000 rows: the matrix alone is ~5 MB on the device
  const auto b = test::random_vector(A.rows());
  {  // warm-up without a limit: process-wide buffers (the SpMV plan's statistics accumulator) are
     // made once and kept; they must not count as a leak below
    SolveOptions o;
    o.backend = Backend::Cuda;
    std::vector<double> x;
    REQUIRE(solve(A, b, x, o).converged());
  }
  const auto A2 = laplacian_2d(300, 300);  // no device copy yet: the upload itself runs out part-way
  const std::size_t held0 = device_bytes_allocated();
  for (std::size_t limit : {std::size_t(1000), std::size_t(400000), std::size_t(3000000)}) {
    CAPTURE(limit);
    MemoryLimit guard(limit);
    SolveOptions o;
    o.backend = Backend::Cuda;
    std::vector<double> x;
    const std::string msg = message_of([&] { solve(A2, b, x, o); });
    CHECK(msg.find("bytes of device memory") != std::string::npos);
    CHECK(msg.find("KRYSP_DEVICE_MEMORY_LIMIT") != std::string::npos);
    CHECK(device_bytes_allocated() == held0);
    std::vector<double> B(std::size_t(A2.rows()) * 4, 1.0), X;
    CHECK(message_of([&] { solve_block(A2, B, 4, X, o); }).find("bytes of device memory") != std::string::npos);
    CHECK(device_bytes_allocated() == held0);
    EigOptions eo;
    eo.backend = Backend::Cuda;
    eo.lobpcg.k = 4;
    CHECK(message_of([&] { eigensolve(A2, nullptr, eo); }).find("bytes of device memory") != std::string::npos);
    CHECK(device_bytes_allocated() == held0);
  }
}

TEST_CASE("OOM GPU: krysp solve out of device memory exits 3, names the bytes, leaves no output file") {
  const fs::path dir = fs::temp_directory_path() / ("krysp_oom_cli_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::string out = (dir / "result.h5").string();
  const std::string cli = KRYSP_CLI_PATH;
  const std::string mtx = std::string(KRYSP_TEST_DATA) + "/bcsstk06.mtx";
  std::string log;
  int code = run(std::string(kDeviceMemoryLimitEnv) + "=4096 " + cli + " solve " + mtx + " --backend cuda --out " + out,
                 &log);
  CAPTURE(log);
  CHECK(code == 3);
  CHECK(log.find("cannot allocate") != std::string::npos);
  CHECK(log.find("bytes free of") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(fs::is_empty(dir));  // no temporary file either

  // An older result is left as it was.
  io::write_hdf5(out, {{"/x", {1}, {42.0}}}, {});
  code = run(std::string(kDeviceMemoryLimitEnv) + "=4096 " + cli + " solve " + mtx + " --backend cuda --out " + out,
             &log);
  CHECK(code == 3);
  CHECK(io::read_hdf5_dataset(out, "/x").data == std::vector<double>{42.0});
  // eigs too
  code = run(std::string(kDeviceMemoryLimitEnv) + "=4096 " + cli + " eigs " + mtx + " -k 2 --backend cuda --out " +
                 (dir / "eigs.h5").string(),
             &log);
  CHECK(code == 3);
  CHECK_FALSE(fs::exists(dir / "eigs.h5"));
  // Without the limit the same command succeeds and writes the file.
  code = run(cli + " solve " + mtx + " --backend cuda --quiet --out " + out, &log);
  CHECK(code == 0);
  CHECK(io::read_hdf5_dataset(out, "/x").data.size() == 420);
  fs::remove_all(dir);
}
