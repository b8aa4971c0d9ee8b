#include "krysp/cli/amg_args.hpp"

#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"

namespace krysp::cli {

const std::set<std::string>& amg_option_names() {
  static const std::set<std::string> names{"amg-theta",    "amg-max-levels", "amg-coarse-size", "amg-smoother",
                                           "amg-degree",   "amg-ratio",      "amg-sweeps",      "amg-omega",
                                           "amg-block-size", "amg-aggregation", "amg-filter",    "coordinates",
                                           "near-nullspace", "amg-adaptive",   "amg-block-smoother",
                                           "amg-dense-coarse"};
  return names;
}

const char* amg_option_help() {
  return "  AMG (--precond amg; docs/amg.md):\n"
         "  --amg-theta T        strength threshold on level 0, halved per level; auto: 0.25 when\n"
         "                       over 10% of A's off-diagonal entries are positive (unless 0.25\n"
         "                       leaves most nodes without a strong neighbour), else 0.08\n"
         "                       (default auto)\n"
         "  --amg-max-levels L   levels at most, A included                       (default 10)\n"
         "  --amg-coarse-size C  stop coarsening at C rows; the coarsest is factored (default 200)\n"
         "  --amg-dense-coarse R below level 0, a level of at most R rows is the coarsest too\n"
         "                       (factored) where two levels more would follow it; 0: off; auto:\n"
         "                       1200 where the V-cycle runs on the GPU (a dense solve costs less\n"
         "                       there than more levels' launches), off on the host (default auto)\n"
         "  --amg-smoother S     chebyshev | l1-jacobi                            (default chebyshev)\n"
         "  --amg-aggregation A  mis2 | greedy; greedy sets up on the host only   (default mis2)\n"
         "  --amg-degree D       Chebyshev smoother degree; auto: 3 when over 10% of A's\n"
         "                       off-diagonal entries are positive, else 2        (default auto)\n"
         "  --amg-ratio R        Chebyshev smoother interval lmax/R .. lmax; auto: 30 when over\n"
         "                       10% of A's off-diagonal entries are positive, else 10 (default auto)\n"
         "  --amg-sweeps S       smoothing sweeps before and after the coarse grid (default 1)\n"
         "  --amg-omega W        prolongator smoothing weight times rho(D^-1 A); 0: plain aggregation\n"
         "                       (default 1.5)\n"
         "  --amg-filter F       auto | on | off: smooth the prolongator with A's strong entries only\n"
         "                       (weak ones lumped into the diagonal); auto: on when at most 10% of\n"
         "                       A's off-diagonal entries are positive and b is 1 (default auto)\n"
         "  --amg-block-size B   unknowns per node (near-nullspace: their unit vectors); 0 detects\n"
         "                       them, and pads nodes with removed unknowns to the common size\n"
         "                       where the rows show it (default 0)\n"
         "  --amg-block-smoother on | off: on levels of b > 1 unknowns a node, the Chebyshev\n"
         "                       smoother in D_b^-1 A (b x b node blocks) instead of D^-1 A\n"
         "                       (default on)\n"
         "  --coordinates X.mtx  node coordinates, nodes x 2 or 3 (dense Matrix Market), unknowns\n"
         "                       node-major (the displacements, then any rotations: 6 a node in\n"
         "                       3-D shells, 3 in 2-D frames): the near-nullspace becomes the\n"
         "                       rigid-body modes\n"
         "  --amg-adaptive N     V-cycles that adapt the near-nullspace to the errors the first\n"
         "                       hierarchy reduces slowest, then set it up again: they replace the\n"
         "                       constant where it is near the top of D^-1 A's spectrum, else they\n"
         "                       augment the b unit vectors of a node (the constant for b = 1) with\n"
         "                       as many more (8 at most); auto: 30 replacing, 10 augmenting on\n"
         "                       structural matrices (kept where the first hierarchy reduced them\n"
         "                       slowly), else 0                                   (default auto)\n"
         "  --near-nullspace V.mtx\n"
         "                       the near-nullspace given, n x K (dense Matrix Market, K <= 8):\n"
         "                       what A maps to almost zero, e.g. a shell's rigid-body modes\n";
}

namespace {
/// A dense Matrix Market block (column-major) as rows of its columns (row-major).
std::vector<double> row_major(const io::DenseBlock<double>& c) {
  std::vector<double> out(std::size_t(c.rows) * std::size_t(c.cols));
  for (index_t i = 0; i < c.rows; ++i)
    for (index_t j = 0; j < c.cols; ++j) out[std::size_t(i) * c.cols + j] = c.values[std::size_t(j) * c.rows + i];
  return out;
}
}  // namespace

AmgOptions read_amg_options(const Args& args) {
  AmgOptions a;
  // "auto" (the default) leaves kAmgAuto: the set-up chooses from A's signs (amg::resolve_auto).
  if (args.get("amg-theta", "auto") != "auto") a.theta = args.get_double("amg-theta", a.theta);
  a.max_levels = int(args.get_int("amg-max-levels", a.max_levels, -1000000, 1000000));
  a.coarse_size = index_t(args.get_int("amg-coarse-size", a.coarse_size, -1000000000, 1000000000));
  if (args.get("amg-dense-coarse", "auto") != "auto")
    a.dense_coarse_rows = index_t(args.get_int("amg-dense-coarse", a.dense_coarse_rows, -1000000000, 1000000000));
  const std::string s = args.get("amg-smoother", to_string(a.smoother));
  if (s == "chebyshev") a.smoother = AmgSmoother::Chebyshev;
  else if (s == "l1-jacobi") a.smoother = AmgSmoother::L1Jacobi;
  else KRYSP_THROW(InputError, "unknown --amg-smoother '", s, "' (expected chebyshev or l1-jacobi)");
  const std::string g = args.get("amg-aggregation", to_string(a.aggregation));
  if (g == "greedy") a.aggregation = AmgAggregation::Greedy;
  else if (g == "mis2") a.aggregation = AmgAggregation::Mis2;
  else KRYSP_THROW(InputError, "unknown --amg-aggregation '", g, "' (expected mis2 or greedy)");
  const std::string f = args.get("amg-filter", to_string(a.filter));
  if (f == "auto") a.filter = AmgFilter::Auto;
  else if (f == "on") a.filter = AmgFilter::On;
  else if (f == "off") a.filter = AmgFilter::Off;
  else KRYSP_THROW(InputError, "unknown --amg-filter '", f, "' (expected auto, on or off)");
  if (args.get("amg-degree", "auto") != "auto")
    a.smoother_degree = int(args.get_int("amg-degree", a.smoother_degree, -1000000, 1000000));
  if (args.get("amg-ratio", "auto") != "auto") a.smoother_ratio = args.get_double("amg-ratio", a.smoother_ratio);
  a.sweeps = int(args.get_int("amg-sweeps", a.sweeps, -1000000, 1000000));
  a.prolongation_weight = args.get_double("amg-omega", a.prolongation_weight);
  a.block_size = int(args.get_int("amg-block-size", a.block_size, -1000000, 1000000));
  const std::string bs = args.get("amg-block-smoother", "on");
  if (bs == "on") a.block_smoother = true;
  else if (bs == "off") a.block_smoother = false;
  else KRYSP_THROW(InputError, "unknown --amg-block-smoother '", bs, "' (expected on or off)");
  if (args.get("amg-adaptive", "auto") != "auto")
    a.adaptive_cycles = int(args.get_int("amg-adaptive", a.adaptive_cycles, -1000000, 1000000));
  if (args.has("coordinates")) {
    const std::string path = args.get("coordinates", "");
    const io::DenseBlock<double> c = io::read_dense_matrix_market<double>(path);
    KRYSP_REQUIRE(c.cols == 2 || c.cols == 3, path, ": coordinates are ", c.rows, "x", c.cols,
                  "; expected one row per node with 2 or 3 columns");
    a.coordinate_dim = int(c.cols);
    a.coordinates = row_major(c);  // one row a node
  }
  if (args.has("near-nullspace")) {
    const std::string path = args.get("near-nullspace", "");
    const io::DenseBlock<double> v = io::read_dense_matrix_market<double>(path);
    KRYSP_REQUIRE(v.cols >= 1 && v.cols <= kAmgMaxNearNullspace, path, ": ", v.rows, "x", v.cols,
                  "; expected one row per unknown and 1 to ", kAmgMaxNearNullspace, " columns");
    a.near_nullspace_vectors = int(v.cols);
    a.near_nullspace = row_major(v);  // one row an unknown
  }
  return a;
}

}  // namespace krysp::cli
