// The MpiSession of a krysp built without MPI (cli/mpi/mpi_session.cpp is the MPI one).
#include "krysp/cli/mpi_session.hpp"

#ifndef KRYSP_CLI_MPI
namespace krysp::cli {
MpiSession::MpiSession(int&, char**&) {}
MpiSession::~MpiSession() = default;
const Communicator* distributed_world() { return nullptr; }
}  // namespace krysp::cli
#endif
