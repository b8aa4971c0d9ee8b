#pragma once
// Host vectors to and from DeviceArray, for the GPU tests.
#include <vector>

#include "krysp/base/device_memory.hpp"

namespace krysp::test {

/// A device copy of v.
inline DeviceArray<double> uploaded(const std::vector<double>& v) {
  DeviceArray<double> d(v.size());
  d.upload(v.data(), v.size());
  return d;
}

/// A host copy of d.
inline std::vector<double> download(const DeviceArray<double>& d) {
  std::vector<double> v(d.size());
  d.download(v.data(), v.size());
  return v;
}

}  // namespace krysp::test
