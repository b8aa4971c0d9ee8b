#pragma once
/// \file krysp.hpp
/// krysp's public API in one include: `#include <krysp/krysp.hpp>`. CUDA-free (Kokkos host views
/// only). Matrices (CsrMatrix, generators, Matrix Market and HDF5 files), the solvers (solve,
/// solve_block, CgSolver, eigensolve), their options and reports (preconditioners included), the
/// exceptions, the device controls (memory cache, streams, overlapped launches, SpMV/SpMM plans),
/// the operator interface (LinearOperator, MatrixOperator, Preconditioner), and the distributed
/// solvers (Communicator, DistCsrMatrix, solve_distributed,
/// eigensolve_distributed: docs/distributed.md). docs/guide.md
/// walks through them; docs/architecture.md says how they fit.
#include "krysp/base/communicator.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/base/overlapped_launch.hpp"
#include "krysp/base/stream.hpp"
#include "krysp/base/types.hpp"
#include "krysp/io/hdf5_result.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/distributed_eigensolve.hpp"
#include "krysp/solvers/distributed_solve.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/dist_csr.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/matrix_operator.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmv_plan.hpp"
