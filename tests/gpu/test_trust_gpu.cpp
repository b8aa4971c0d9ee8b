// The trust suite (tests/trust_checks.hpp) on the CUDA backend.
#include <doctest/doctest.h>

#include "trust_checks.hpp"

KRYSP_TRUST_CASES("Trust GPU: ", krysp::Backend::Cuda)
