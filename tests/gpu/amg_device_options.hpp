#pragma once
// The options a DeviceAmg sets up with: a host hierarchy that is to match a default DeviceAmg's
// takes them (AmgOptions::dense_coarse_rows at kAmgAuto is off on the host, larger on the GPU).
#include "krysp/precond/preconditioner.hpp"

namespace krysp::test {

/// `o` with dense_coarse_rows resolved as DeviceAmg resolves it.
inline AmgOptions as_on_device(AmgOptions o) {
  if (o.dense_coarse_rows == kAmgAuto) o.dense_coarse_rows = kAmgDeviceDenseCoarseRows;
  return o;
}

}  // namespace krysp::test
