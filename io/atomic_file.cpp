#include "krysp/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "krysp/base/error.hpp"

namespace krysp::io {
namespace {

/// Distinguishes temporary files of several AtomicOutputs alive in one process.
std::atomic<unsigned long> g_temp_counter{0};

/// The directory holding `path` ("." for a bare file name).
std::string directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

/// Creates a fresh, empty temporary file next to `final_path` and returns its name. O_EXCL makes
/// sure we never adopt someone else's file (e.g. a stale one left by a killed process whose pid
/// has been reused).
std::string create_temp_file(const std::string& final_path) {
  const std::string stem = final_path + ".tmp." + std::to_string(::getpid()) + ".";
  for (int attempt = 0;; ++attempt) {
    std::string candidate = stem + std::to_string(g_temp_counter.fetch_add(1));
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return candidate;
    }
    const int err = errno;
    if (err != EEXIST || attempt >= 100) {
      KRYSP_THROW(InputError, "cannot write '", final_path, "': ", std::strerror(err));
    }
  }
}

/// fsync(2) on a path; returns 0 or the errno of the failing call.
int fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::fsync(fd) == 0 ? 0 : errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

}  // namespace

AtomicOutput::AtomicOutput(std::string final_path) : final_path_(std::move(final_path)) {
  KRYSP_REQUIRE(!final_path_.empty(), "cannot write '': empty output path");
  // Checked here, not at commit(), so that the caller learns before doing any work.
  struct stat st {};
  if (::stat(final_path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    KRYSP_THROW(InputError, "cannot write '", final_path_, "': ", std::strerror(EISDIR));
  }
  // Creating the temporary file is the real test of "directory exists and is writable": access(2)
  // would say yes to root on a read-only mount and knows nothing about quotas or ACLs.
  temp_path_ = create_temp_file(final_path_);
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) ::unlink(temp_path_.c_str());  // Best effort: a destructor must not throw.
}

void AtomicOutput::commit() {
  if (committed_) {
    KRYSP_THROW(Error, "AtomicOutput: '", final_path_, "' has already been committed");
  }
  // Without the fsync a crash shortly after rename could leave the new name pointing at a file
  // whose data never reached the disk (zero length on ext4/xfs).
  if (const int err = fsync_path(temp_path_, O_RDONLY); err != 0) {
    KRYSP_THROW(Error, "cannot write '", final_path_, "': fsync of '", temp_path_,
                "' failed: ", std::strerror(err));
  }
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    const int err = errno;
    KRYSP_THROW(Error, "cannot write '", final_path_, "': rename from '", temp_path_,
                "' failed: ", std::strerror(err));
  }
  committed_ = true;
  // Makes the rename itself durable. Some file systems refuse fsync on a directory; the file is
  // already in place by now, so a failure here is not worth an exception.
  (void)fsync_path(directory_of(final_path_), O_RDONLY | O_DIRECTORY);
}

}  // namespace krysp::io
