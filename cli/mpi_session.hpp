#pragma once
/// \file mpi_session.hpp
/// `mpirun -np P krysp solve/eigs ...` (docs/distributed.md): MPI is started only when an MPI
/// launcher started the process (its environment says so), so that a plain `krysp ...` runs as it
/// always did, without MPI.
#include "krysp/base/communicator.hpp"

namespace krysp::cli {

/// Starts MPI when the process was started by mpirun/mpiexec (OpenMPI, MPICH, PMIx environment)
/// and krysp was built with MPI; finalises it at the end of its life. Otherwise does nothing.
class MpiSession {
 public:
  /// See the class comment.
  MpiSession(int& argc, char**& argv);
  /// MPI_Finalize when this session started MPI.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

/// The world communicator when MPI runs with more than one rank (the distributed paths of solve
/// and eigs), else null (the one-process paths, as without mpirun).
const Communicator* distributed_world();

/// True on every rank but 0 of a distributed run: such a rank prints nothing and writes no file.
inline bool silent_rank() {
  const Communicator* w = distributed_world();
  return w && w->rank() != 0;
}

}  // namespace krysp::cli
