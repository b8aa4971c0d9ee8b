#pragma once
/// \file distributed_io.hpp
/// What `mpirun -np P krysp solve/eigs` needs around a distributed solve: the ranks' rows of a
/// block gathered on rank 0 (which prints and writes the HDF5 file), and a file's block cut to a
/// rank's rows.
#include <cstdint>
#include <vector>

#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/dist_csr.hpp"

namespace krysp::cli {

/// On rank 0: the global n × cols block from every rank's m_p × cols rows (column-major, or
/// row-major when row_major). Empty on the other ranks. Collective.
inline std::vector<double> gather_to_root(const DistCsrMatrix& A, const std::vector<double>& local, index_t cols,
                                          bool row_major) {
  const Communicator& comm = A.comm();
  std::vector<std::vector<double>> to(static_cast<std::size_t>(comm.size()));
  to[0] = local;
  const auto from = comm.all_to_all(to);
  if (comm.rank() != 0) return {};
  const auto& starts = A.row_starts();
  const std::size_t n = static_cast<std::size_t>(A.global_rows()), c = static_cast<std::size_t>(cols);
  std::vector<double> out(n * c);
  for (std::size_t p = 0; p < from.size(); ++p) {
    const std::size_t first = static_cast<std::size_t>(starts[p]), m = static_cast<std::size_t>(starts[p + 1]) - first;
    for (std::size_t j = 0; j < c; ++j)
      for (std::size_t i = 0; i < m; ++i) {
        const double v = row_major ? from[p][i * c + j] : from[p][j * m + i];
        if (row_major)
          out[(first + i) * c + j] = v;
        else
          out[j * n + first + i] = v;
      }
  }
  return out;
}

/// This rank's rows of a global n × cols column-major block (column-major m × cols).
inline std::vector<double> rows_of_block(const DistCsrMatrix& A, const std::vector<double>& global, index_t cols) {
  const std::size_t n = static_cast<std::size_t>(A.global_rows()), m = static_cast<std::size_t>(A.rows());
  const std::size_t first = static_cast<std::size_t>(A.first_row());
  std::vector<double> out(m * static_cast<std::size_t>(cols));
  for (std::size_t j = 0; j < static_cast<std::size_t>(cols); ++j)
    for (std::size_t i = 0; i < m; ++i) out[j * m + i] = global[j * n + first + i];
  return out;
}

/// The rows a rank's range must start at a multiple of: an explicit block size of block Jacobi or
/// of AMG's nodes, whose blocks must not straddle ranks (1: any row).
inline index_t partition_align(const PrecondOptions& p) {
  const int b = p.kind == PrecondKind::BlockJacobi ? p.block_size : p.kind == PrecondKind::Amg ? p.amg.block_size : 0;
  return b > 1 ? index_t(b) : 1;
}

}  // namespace krysp::cli
