#pragma once
/// \file dist_csr.hpp
/// A row-partitioned CSR matrix over the ranks of a Communicator (docs/distributed.md). Rank p
/// owns the contiguous global rows [row_starts[p], row_starts[p+1]) of an n × n matrix; global ids
/// are 64-bit, local indices 32-bit (index_t). Its rows are split into
///  - the local block: the columns this rank owns, as local ids (a CsrMatrix, m × m), and
///  - the off-rank block: the other columns, numbered by halo slot (m × h); halo slot k holds
///    x[halo_columns()[k]], the slots sorted by global id, hence grouped by owner rank.
/// The halo plan says, per neighbour rank, which local entries of x go to it and which halo slots
/// it fills. apply() posts the halo receives and sends, multiplies the local block while they fly,
/// waits, then adds the off-rank block: the exchange overlaps the local product.
///
/// As a LinearOperator its vectors are this rank's m entries of x and y (rows() = cols() = m), so
/// the solvers' ops use it like a matrix; their dot products reduce over the communicator.
/// Making one is collective, and so is every apply; bad input on any rank is an InputError on
/// every rank (Communicator::agree), never a hang.
#include <cstdint>
#include <string>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// One neighbour of the halo plan: what this rank sends it and where its entries land.
struct HaloNeighbour {
  int rank = 0;                   ///< the neighbour
  std::vector<index_t> send_rows;  ///< local entries of x it needs, in its halo-slot order
  index_t recv_begin = 0;         ///< its entries fill halo slots [recv_begin, recv_end)
  index_t recv_end = 0;           ///< (empty when it needs ours but we need none of its)
};

/// A distributed CSR matrix on the host (see the file comment).
class DistCsrMatrix final : public LinearOperator<double> {
 public:
  /// From a simulation code's own partition (collective): this rank's rows, consecutive in rank
  /// order (rank 0 first), as CSR with global column ids: row_ptr (local rows + 1 offsets), cols
  /// and values (row_ptr.back() entries each). Columns may come in any order within a row; a
  /// duplicate, a column outside [0, global_cols), a non-finite value, global_cols differing from
  /// the global row count (not square) or between ranks, or (with check_symmetry) an entry whose
  /// mirror differs by more than 1e-12·max|A| is an InputError on every rank, naming the rank and
  /// the global row and column (1-based, as sparse/symmetry.hpp does).
  static DistCsrMatrix from_local_rows(const Communicator& comm, std::int64_t global_cols,
                                       const std::vector<index_t>& row_ptr, const std::vector<std::int64_t>& cols,
                                       const std::vector<double>& values, bool check_symmetry = true);
  /// Rank `root` holds the whole of A (the other ranks pass any matrix, e.g. an empty one) and
  /// sends every rank its rows (collective): rows [row_starts[p], row_starts[p+1]) to rank p, or,
  /// with row_starts empty, balanced_row_starts(A, size). row_starts matter on root only.
  static DistCsrMatrix scatter(const Communicator& comm, const CsrMatrix<double>& A, int root = 0,
                               const std::vector<std::int64_t>& row_starts = {}, bool check_symmetry = true);
  /// Rank 0 reads the Matrix Market file (io/matrix_market.hpp) and scatters it with a partition
  /// that balances nonzeros (collective; a missing or malformed file is an InputError on all ranks),
  /// its ranges starting at multiples of `align` (balanced_row_starts).
  static DistCsrMatrix read_matrix_market(const Communicator& comm, const std::string& path,
                                          bool check_symmetry = true, index_t align = 1);
  /// parts + 1 row offsets splitting A's rows into `parts` consecutive ranges of about equal
  /// nonzeros (part k starts at the first row with ≥ k·nnz/parts entries before it): ranges may be
  /// empty when parts exceeds the rows. With align > 1 dividing the rows, each start is rounded
  /// down to a multiple of it, so that nodes of `align` unknowns (block Jacobi's blocks, AMG's
  /// nodes) stay on one rank.
  static std::vector<std::int64_t> balanced_row_starts(const CsrMatrix<double>& A, int parts, index_t align = 1);

  /// m, this rank's rows (entries of its part of x and y).
  index_t rows() const override { return local_.rows(); }
  /// m, as rows(): the operator maps this rank's part of x to its part of y.
  index_t cols() const override { return local_.rows(); }
  /// Host memory.
  MemorySpace space() const override { return MemorySpace::Host; }
  /// y = A·x on this rank's rows (collective: exchanges x's halo). Not thread-safe (one halo buffer).
  void apply(const double* x, double* y) const override;
  /// Y = A·X for N columns of row-major blocks (collective, as apply()).
  void apply_block(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const override;

  /// The ranks it lives on.
  const Communicator& comm() const { return comm_; }
  /// n, the global order.
  std::int64_t global_rows() const { return row_starts_.back(); }
  /// Stored entries on all ranks.
  std::int64_t global_nnz() const { return global_nnz_; }
  /// This rank's first global row.
  std::int64_t first_row() const { return row_starts_[static_cast<std::size_t>(comm_.rank())]; }
  /// size() + 1 offsets: rank p owns global rows [row_starts()[p], row_starts()[p+1]).
  const std::vector<std::int64_t>& row_starts() const { return row_starts_; }
  /// The local block (m × m, local column ids).
  const CsrMatrix<double>& local_block() const { return local_; }
  /// The off-rank block (m × halo slots).
  const CsrMatrix<double>& off_block() const { return off_; }
  /// The global column of each halo slot, ascending.
  const std::vector<std::int64_t>& halo_columns() const { return halo_columns_; }
  /// The halo plan: one entry per neighbour rank, ascending ranks.
  const std::vector<HaloNeighbour>& neighbours() const { return neighbours_; }
  /// A copy with every value times 2^e (exact short of the subnormal range; not collective): the
  /// distributed solvers' rescaling of problems far from 1 (solvers/problem_scale.hpp).
  DistCsrMatrix scaled(int e) const;

 private:
  DistCsrMatrix() = default;
  void exchange_and_multiply(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const;
  void check_symmetric() const;
  Communicator comm_;
  std::vector<std::int64_t> row_starts_;
  std::int64_t global_nnz_ = 0;
  CsrMatrix<double> local_, off_;
  std::vector<std::int64_t> halo_columns_;
  std::vector<HaloNeighbour> neighbours_;
  mutable std::vector<double> send_buffer_, halo_buffer_;
};

}  // namespace krysp
