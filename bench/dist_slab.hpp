#pragma once
// The distributed benchmarks' problem: a 3-D 7-point Laplacian that each rank assembles as its own
// slab of z-planes, with global column ids (no global matrix anywhere), as a simulation code would.
#include <cstdint>
#include <utility>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/sparse/dist_csr.hpp"

namespace krysp::bench {

/// Rows of planes [z0, z1) of the nx × ny × nz 7-point Laplacian (6 on the diagonal), global ids.
inline DistCsrMatrix laplacian_slab(const Communicator& comm, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                    std::int64_t z0, std::int64_t z1) {
  const std::int64_t plane = nx * ny, m = plane * (z1 - z0);
  std::vector<index_t> row_ptr;
  row_ptr.reserve(static_cast<std::size_t>(m) + 1);
  row_ptr.push_back(0);
  std::vector<std::int64_t> cols;
  std::vector<double> vals;
  cols.reserve(static_cast<std::size_t>(m) * 7);
  vals.reserve(static_cast<std::size_t>(m) * 7);
  for (std::int64_t z = z0; z < z1; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x) {
        const std::int64_t g = z * plane + y * nx + x;
        auto add = [&](std::int64_t c, double v) {
          cols.push_back(c);
          vals.push_back(v);
        };
        if (z > 0) add(g - plane, -1);
        if (y > 0) add(g - nx, -1);
        if (x > 0) add(g - 1, -1);
        add(g, 6);
        if (x + 1 < nx) add(g + 1, -1);
        if (y + 1 < ny) add(g + nx, -1);
        if (z + 1 < nz) add(g + plane, -1);
        row_ptr.push_back(index_t(cols.size()));
      }
  return DistCsrMatrix::from_local_rows(comm, plane * nz, row_ptr, cols, vals, false);
}

/// This rank's planes [z0, z1) of nz planes split evenly over the ranks.
inline std::pair<std::int64_t, std::int64_t> slab_planes(const Communicator& comm, std::int64_t nz) {
  const std::int64_t P = comm.size(), r = comm.rank();
  return {nz * r / P, nz * (r + 1) / P};
}

}  // namespace krysp::bench
