// The distributed suites' main: MPI around doctest. Every rank runs every test (the tests are
// collective); ranks other than 0 print only failures, so a failure on any rank is seen and the
// run's exit code (mpirun's: non-zero if any rank's is) fails it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  doctest::Context context(argc, argv);
  if (rank != 0) context.setOption("minimal", true);
  const int failed = context.run();
  MPI_Finalize();
  return failed;
}
