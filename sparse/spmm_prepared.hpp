#pragma once
/// \file spmm_prepared.hpp
/// The data an SpMM plan prepares for its configuration (internal): the workspace of a
/// nonzero-balanced kernel or of long rows cut into pieces, and a column-panel split. Shared by the
/// plan (sparse/spmm_plan.cpp) and the chooser that times candidates (sparse/spmm_choose.cpp). No
/// CUDA headers: device arrays and the host-callable launchers only.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/stream.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/cuda/spmm_common.hpp"
#include "krysp/sparse/cuda/spmm_launch.hpp"
#include "krysp/sparse/early_loads.hpp"
#include "krysp/sparse/spmm_config.hpp"
#include "krysp/sparse/spmm_panels.hpp"

namespace krysp::detail {

/// The device data of one configuration (SpmmWorkspaceView with the arrays it points into).
template <class T>
struct SpmmWorkspace {
  DeviceArray<index_t> unit_row, unit_nnz, splits, pieces;
  DeviceArray<T> carries, piece_sums;
  DeviceArray<unsigned> tickets;
  SpmmWorkspaceView view;
};

/// The long-row pieces of a row kernel with long_row (spmm_long_pieces_host), their sums and
/// tickets (zeroed here; each call leaves them zero).
template <class T>
void add_spmm_long_pieces(SpmmWorkspace<T>& w, const SpmmConfig& c, const index_t* row_ptr, index_t rows, index_t N) {
  const bool vdl = is_vdl(c.algorithm);
  const std::vector<index_t> p =
      spmm_long_pieces_host(row_ptr, rows, c.long_row, spmm_long_piece_nnz(vdl, c.subwarp));
  if (p.empty()) return;
  const index_t pieces = index_t(p.size() / 5);
  const index_t chunk = spmm_chunk_columns(vdl, c.subwarp, c.col_lanes, c.per_lane, kSpmmVecWidth<T>);
  const std::size_t tickets = std::size_t(pieces) * std::size_t(spmm_column_tiles(N, chunk));
  w.pieces = DeviceArray<index_t>(p.size());
  w.pieces.upload(p.data(), p.size());
  w.piece_sums = DeviceArray<T>(std::size_t(pieces) * std::size_t(N));
  w.tickets = DeviceArray<unsigned>(tickets);
  w.tickets.zero();
  w.view.long_min = c.long_row;
  w.view.num_pieces = pieces;
  w.view.pieces = w.pieces.data();
  w.view.tickets = w.tickets.data();
  w.view.piece_sums = w.piece_sums.data();
}

/// Partition and carries of a nonzero-balanced configuration, or the long-row pieces of a row
/// kernel (empty for the other row kernels), for the CSR structure with host offsets row_ptr.
template <class T>
std::unique_ptr<SpmmWorkspace<T>> make_spmm_workspace(const SpmmConfig& c, const index_t* row_ptr, index_t rows,
                                                      index_t nnz, index_t N) {
  auto w = std::make_unique<SpmmWorkspace<T>>();
  if (c.long_row > 0) add_spmm_long_pieces(*w, c, row_ptr, rows, N);
  if (!is_nnz_balanced(c.algorithm)) return w;
  const auto p = spmm_partition_host(row_ptr, rows, nnz, c.items_per_warp);
  w->unit_row = DeviceArray<index_t>(p.unit_row.size());
  w->unit_row.upload(p.unit_row.data(), p.unit_row.size());
  w->unit_nnz = DeviceArray<index_t>(p.unit_nnz.size());
  w->unit_nnz.upload(p.unit_nnz.data(), p.unit_nnz.size());
  if (!p.splits.empty()) {
    w->splits = DeviceArray<index_t>(p.splits.size());
    w->splits.upload(p.splits.data(), p.splits.size());
  }
  w->carries = DeviceArray<T>(std::size_t(2) * std::size_t(p.units) * std::size_t(N));
  w->view.units = p.units;
  w->view.unit_row = w->unit_row.data();
  w->view.unit_nnz = w->unit_nnz.data();
  w->view.num_splits = p.num_splits();
  w->view.splits = w->splits.data();
  w->view.carries = w->carries.data();
  return w;
}

template <class T>
std::unique_ptr<SpmmWorkspace<T>> make_spmm_workspace(const SpmmConfig& c, const CsrMatrix<T>& A, index_t N) {
  return make_spmm_workspace<T>(c, A.row_ptr().data(), A.rows(), A.nnz(), N);
}

/// A column split of the matrix on the device (spmm_panels.hpp): each panel a CSR view into the
/// split's arrays, with the workspace of the panels' kernel. The values are gathered from the
/// matrix, again whenever apply() sees other values (another array or a values change), and
/// before every product where krysp does not track the values (spmm_panels_gather).
template <class T>
struct SpmmPanels {
  SpmmPanelSplit split;  // host side: offsets for the workspaces, statistics of panel 0
  DeviceArray<index_t> row_ptr, col_idx, source;
  DeviceArray<T> values;
  std::uint64_t gathered_stamp = 0;  // A.values_stamp() of the values gathered (0: none yet)
  std::vector<CsrView<T>> views;
  std::vector<std::unique_ptr<SpmmWorkspace<T>>> ws;

  SpmmPanels(const CsrMatrix<T>& A, int P)
      : split(spmm_panel_split(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), P)) {
    row_ptr = DeviceArray<index_t>(split.row_ptr.size());
    row_ptr.upload(split.row_ptr.data(), split.row_ptr.size());
    col_idx = DeviceArray<index_t>(std::max<std::size_t>(1, split.col_idx.size()));
    col_idx.upload(split.col_idx.data(), split.col_idx.size());
    source = DeviceArray<index_t>(std::max<std::size_t>(1, split.source.size()));
    source.upload(split.source.data(), split.source.size());
    values = DeviceArray<T>(std::max<std::size_t>(1, split.source.size()));
    for (int p = 0; p < P; ++p) {
      const index_t b = split.start[std::size_t(p)], e = split.start[std::size_t(p) + 1];
      views.push_back({A.rows(), A.cols(), e - b, row_ptr.data() + split.row_ptr_offset(p), col_idx.data() + b,
                       values.data() + b});
    }
  }
  /// Panel p's structure with host offsets (values null): for row statistics and partitions.
  CsrView<T> host_view(int p) const {
    const index_t b = split.start[std::size_t(p)];
    return {views[std::size_t(p)].rows, views[std::size_t(p)].cols, views[std::size_t(p)].nnz,
            split.row_ptr.data() + split.row_ptr_offset(p), split.col_idx.data() + b, nullptr};
  }
  /// The panels' workspaces for configuration c (one kernel for all panels).
  void set_config(const SpmmConfig& c, index_t N) {
    ws.clear();
    for (int p = 0; p < split.panels; ++p) {
      const CsrView<T> h = host_view(p);
      ws.push_back(make_spmm_workspace<T>(c, h.row_ptr, h.rows, h.nnz, N));
    }
  }
  /// Gathers the values from A's device arrays unless they are tracked (`tracked`:
  /// A.values_tracked()) and those gathered last (`stamp`: A.values_stamp()); true when it did (the
  /// gather kernel writes the panels' values).
  bool refresh(const CsrMatrix<T>& A, std::uint64_t stamp, bool tracked, DeviceStream stream = {}) {
    if (!spmm_panels_gather(tracked, stamp == gathered_stamp)) return false;
    spmm_gather_values(A.device_view().values, source.data(), index_t(split.source.size()), values.data(),
                               stream);
    gathered_stamp = stamp;
    return true;
  }
  /// Y = alpha·A·X + beta·Y, panel after panel (the first scales Y by beta, the others add to it);
  /// `a` without its matrix and workspace (each panel's own).
  void apply(const SpmmConfig& c, SpmmArgs<T> a, DeviceStream stream) const {
    const T beta = a.beta;
    for (std::size_t p = 0; p < views.size(); ++p) {
      a.A = views[p];
      a.ws = ws[p]->view;
      a.beta = p == 0 ? beta : T(1);
      spmm_device(c, a, stream);
    }
  }
};

/// The prepared data of a plan: a workspace (unsplit) or a panel split with its workspaces.
template <class T>
struct SpmmPrepared {
  std::unique_ptr<SpmmWorkspace<T>> workspace;  ///< config.panels <= 1
  std::unique_ptr<SpmmPanels<T>> panels;        ///< config.panels > 1
};

/// Prepares configuration `c` for A and N columns: its workspace, or its panel split (`made`, a
/// split the chooser already made, when it has c's panel count; a new one otherwise) holding A's
/// values and the panels' workspaces.
template <class T>
SpmmPrepared<T> prepare_spmm(const CsrMatrix<T>& A, index_t N, const SpmmConfig& c,
                             std::unique_ptr<SpmmPanels<T>> made = nullptr) {
  SpmmPrepared<T> out;
  if (c.panel_count() > 1) {
    if (!made || made->split.panels != c.panels) made = std::make_unique<SpmmPanels<T>>(A, c.panels);
    made->refresh(A, A.values_stamp(), true);  // now, unless this split holds these values already
    made->set_config(c, N);
    out.panels = std::move(made);
  } else {
    out.workspace = make_spmm_workspace(c, A, N);
  }
  return out;
}

}  // namespace krysp::detail
