#pragma once
/// \file error.hpp
/// Exceptions thrown by krysp. Every message names where the problem is (a source location, or the
/// input file and line) and the value that was wrong. Non-convergence and numerical breakdown are
/// *not* exceptions: solvers report them as a status.
#include <sstream>
#include <stdexcept>
#include <string>

namespace krysp {

/// Base class of every krysp exception.
class Error : public std::runtime_error {
 public:
  /// Takes the full message ("file:line: what").
  using std::runtime_error::runtime_error;
};

/// Bad input or misuse: a malformed file, sizes that do not match, an invalid option.
/// The command line maps it to exit code 2.
class InputError : public Error {
 public:
  /// Takes the full message ("file:line: what").
  using Error::Error;
};

/// A failed CUDA runtime or library call (including out-of-memory).
class DeviceError : public Error {
 public:
  /// Takes the full message ("file:line: what").
  using Error::Error;
};

namespace detail {
/// Streams all arguments into one string.
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail
}  // namespace krysp

/// Throws `Kind` with "file:line: message", the message built by streaming the arguments.
#define KRYSP_THROW(Kind, ...) \
  throw Kind(::krysp::detail::concat(__FILE__, ":", __LINE__, ": ", __VA_ARGS__))

/// Throws krysp::InputError unless `cond` holds.
#define KRYSP_REQUIRE(cond, ...)                              \
  do {                                                        \
    if (!(cond)) KRYSP_THROW(::krysp::InputError, __VA_ARGS__); \
  } while (0)
