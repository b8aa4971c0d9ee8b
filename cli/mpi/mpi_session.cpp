// The MpiSession of a krysp built with MPI: MPI_Init only under an MPI launcher.
#include <mpi.h>

#include <cstdlib>
#include <memory>

#include "krysp/cli/mpi_session.hpp"

namespace krysp::cli {

namespace {
bool started = false;
std::unique_ptr<Communicator> world;

// An MPI launcher's environment: OpenMPI (OMPI_COMM_WORLD_SIZE), MPICH/Hydra and Intel MPI
// (PMI_SIZE), PMIx-based launchers (PMIX_RANK).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}
}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised || !launched_by_mpi()) return;
  MPI_Init(&argc, &argv);
  started = true;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) world = std::make_unique<Communicator>(Communicator::world());
}

MpiSession::~MpiSession() {
  if (!started) return;
  world.reset();  // frees its duplicated communicator before MPI ends
  MPI_Finalize();
}

const Communicator* distributed_world() { return world.get(); }

}  // namespace krysp::cli
