// The process-wide overlapped-launch setting (base/overlapped_launch.hpp); no GPU needed. Whether
// kernels launched overlapped wait for the one before them: tests/gpu/late_input.hpp.
#include <doctest/doctest.h>

#include "krysp/base/overlapped_launch.hpp"

using namespace krysp;

TEST_CASE("Overlapped launch: the setting is process-wide and can be turned off and on") {
  const bool setting = overlapped_launch();
  set_overlapped_launch(false);
  CHECK_FALSE(overlapped_launch());
  set_overlapped_launch(true);
  CHECK(overlapped_launch());
  set_overlapped_launch(setting);
}
