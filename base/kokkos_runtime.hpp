#pragma once
/// \file kokkos_runtime.hpp
/// krysp keeps host arrays in Kokkos views (Serial backend). Kokkos must be initialised before a
/// view is made; ensure_kokkos() does that once, on first use, and finalises at process exit.
/// A program that initialises Kokkos itself is left alone.
namespace krysp {
/// Initialises Kokkos unless it already is (idempotent, thread-safe); every krysp entry point
/// that makes views calls it.
void ensure_kokkos();
}  // namespace krysp
