#!/usr/bin/env bash
# The distributed GPU path on one host with 2 GPUs (docs/distributed.md): builds krysp with NCCL
# (found in the Python environment's nvidia/nccl package when NCCL_ROOT is not set), runs the
# distributed suites on 1 and 2 ranks (both device transports), the command line with
# --backend cuda (Jacobi and Chebyshev; also on matrices that leave a rank without rows), and bench_dist_cg for strong and weak scaling (its
# textbook CG and, --library, solve_distributed with and without Chebyshev); logs and JSON go
# to $OUT (or ./dist-gpu-out). Needs .deps/kokkos (scripts/fetch_kokkos.sh) when the machine has no Kokkos.
#   scripts/dist_gpu_check.sh [test] [cli] [bench] [bench-quick] [scale]   (default: test cli bench)
#   BENCH_N_STRONG (384) and BENCH_N_WEAK (256) set the grids; BENCH_ITERS (100) the iterations.
#   scale: bench_dist_scale (the library's CG and LOBPCG) on SCALE_RANKS ranks (default "1 2"),
#   SCALE_N_CG (464: 99.9 M rows) and SCALE_N_EIG (292: 24.9 M rows, what LOBPCG k = 8 fits on one
#   GPU); when the last of SCALE_RANKS is 4 or more, also LOBPCG on the CG grid and bench_dist_cg's
#   halo and reduction shares there.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-dist-gpu-out}
mkdir -p "$out"
steps=${*:-test cli bench}
kokkos=$PWD/.deps/kokkos/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$kokkos:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0  # NVLink multicast off (see docs/distributed.md)
nccl_root=${NCCL_ROOT:-$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null)}
mpi=(mpirun --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
summary=()
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
t0=$(date +%s)
if ! cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
     -DCMAKE_PREFIX_PATH="$kokkos/cmake" ${nccl_root:+-DNCCL_ROOT="$nccl_root"} >"$out/configure.log" 2>&1; then
  tail -30 "$out/configure.log"; exit 1
fi
grep -E "krysp: NCCL" "$out/configure.log" || note "configured WITHOUT NCCL (only the MPI-staged transport)"
if ! cmake --build build-gpu -j16 -- -k 0 >"$out/build.log" 2>&1; then
  grep -E "error" "$out/build.log" | head -20
  note "BUILD FAILED in part (see above); running what was built"
else
  note "build ok in $(( $(date +%s) - t0 )) s"
fi

run() {  # run NAME COMMAND...: output to $out/NAME.log, one summary line; STEP_TIMEOUT (300 s) stops a hang
  local name=$1; shift
  timeout "${STEP_TIMEOUT:-300}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -5 "$out/$name.log"
  note "$name: exit $rc"
}

for step in $steps; do
  case $step in
    test)
      for np in 1 2; do
        run "mpi_tests_np$np" "${mpi[@]}" -np $np build-gpu/tests/krysp_mpi_tests
      done
      # more ranks than GPUs: auto takes MPI staged (NCCL refuses two ranks on one GPU)
      run mpi_tests_np4 "${mpi[@]}" -np 4 build-gpu/tests/krysp_mpi_tests -tc="dist_device*,*GPUs*"
      ;;
    cli)
      for comm in auto mpi; do
        run "cli_solve_$comm" env KRYSP_COMM=$comm "${mpi[@]}" -x KRYSP_COMM -np 2 build-gpu/krysp solve \
          tests/data/bcsstk06.mtx --backend cuda --rtol 1e-10 --out "$out/cli_solve_$comm.h5"
        run "cli_block_$comm" env KRYSP_COMM=$comm "${mpi[@]}" -x KRYSP_COMM -np 2 build-gpu/krysp solve \
          tests/data/bcsstk06.mtx --backend cuda --nrhs 4 --rtol 1e-9
        run "cli_eigs_$comm" env KRYSP_COMM=$comm "${mpi[@]}" -x KRYSP_COMM -np 2 build-gpu/krysp eigs \
          tests/data/bcsstk06.mtx -k 4 --backend cuda --tol 1e-8
        # Chebyshev on the GPUs (DeviceDistChebyshev): CG, block CG, LOBPCG with the inner PCG solve
        run "cli_solve_cheb_$comm" env KRYSP_COMM=$comm "${mpi[@]}" -x KRYSP_COMM -np 2 build-gpu/krysp solve \
          tests/data/bcsstk06.mtx --backend cuda --precond chebyshev --rtol 1e-10
        run "cli_block_cheb_$comm" env KRYSP_COMM=$comm "${mpi[@]}" -x KRYSP_COMM -np 2 build-gpu/krysp solve \
          tests/data/bcsstk06.mtx --backend cuda --precond chebyshev --nrhs 4 --rtol 1e-9
        run "cli_eigs_cheb_$comm" env KRYSP_COMM=$comm "${mpi[@]}" -x KRYSP_COMM -np 2 build-gpu/krysp eigs \
          tests/data/bcsstk06.mtx -k 4 --backend cuda --precond chebyshev --inner-iters 8 --tol 1e-8
      done
      # Ranks without rows: read_matrix_market leaves rank 1 of 2 empty on a one-row matrix (both
      # transports) and the last of 4 on a three-row one (two ranks a GPU: MPI staged)
      printf '%%%%MatrixMarket matrix coordinate real symmetric\n1 1 1\n1 1 4\n' >"$out/one_row.mtx"
      printf '%%%%MatrixMarket matrix coordinate real symmetric\n3 3 5\n1 1 2\n2 1 -1\n2 2 2\n3 2 -1\n3 3 2\n' \
        >"$out/three_rows.mtx"
      for comm in auto mpi; do
        for pc in jacobi chebyshev; do
          run "cli_empty_rank_${pc}_$comm" env KRYSP_COMM=$comm "${mpi[@]}" -x KRYSP_COMM -np 2 build-gpu/krysp solve \
            "$out/one_row.mtx" --backend cuda --precond $pc --rtol 1e-10
        done
      done
      for pc in jacobi chebyshev block-jacobi; do
        run "cli_empty_rank_np4_$pc" "${mpi[@]}" -np 4 build-gpu/krysp solve "$out/three_rows.mtx" --backend cuda \
          --precond $pc --rtol 1e-10
        run "cli_empty_rank_np4_block_$pc" "${mpi[@]}" -np 4 build-gpu/krysp solve "$out/three_rows.mtx" \
          --backend cuda --precond $pc --nrhs 2 --rtol 1e-10
      done
      run cli_empty_rank_np4_eigs "${mpi[@]}" -np 4 build-gpu/krysp eigs "$out/three_rows.mtx" -k 1 --backend cuda
      ;;
    bench|bench-quick)
      ns=${BENCH_N_STRONG:-384} nw=${BENCH_N_WEAK:-256} it=${BENCH_ITERS:-100}
      [ "$step" = bench-quick ] && ns=128 nw=96 it=50
      day=$(date -u +%F)
      # --library: also the library's CG (solve_distributed), without a preconditioner and with
      # Chebyshev, on the same slabs (JSON "library")
      for np in 1 2; do
        run "dist_cg_strong_np$np" "${mpi[@]}" -np $np build-gpu/bench/bench_dist_cg --mode strong --n "$ns" \
          --iters "$it" --library --json "$out/dist_cg_strong_np${np}_$day.json"
        run "dist_cg_weak_np$np" "${mpi[@]}" -np $np build-gpu/bench/bench_dist_cg --mode weak --n "$nw" \
          --iters "$it" --library --json "$out/dist_cg_weak_np${np}_$day.json"
      done
      run dist_cg_strong_np2_staged env KRYSP_COMM=mpi "${mpi[@]}" -x KRYSP_COMM -np 2 \
        build-gpu/bench/bench_dist_cg --mode strong --n "$ns" --iters "$it" --library \
        --json "$out/dist_cg_strong_np2_staged_$day.json"
      ;;
    scale)  # issue 29: the library's CG (100 M rows) and LOBPCG k = 8 on SCALE_RANKS GPUs
      nc=${SCALE_N_CG:-464} ne=${SCALE_N_EIG:-292} ranks=${SCALE_RANKS:-1 2}
      day=$(date -u +%F)
      for np in $ranks; do
        run "dist_scale_cg_np$np" "${mpi[@]}" -np $np build-gpu/bench/bench_dist_scale --what cg --n "$nc" \
          --json "$out/dist_scale_cg_np${np}_$day.json"
        run "dist_scale_lobpcg_np$np" "${mpi[@]}" -np $np build-gpu/bench/bench_dist_scale --what lobpcg \
          --n "$ne" --json "$out/dist_scale_lobpcg_np${np}_$day.json"
      done
      # With 4 ranks: LOBPCG on the CG grid too (100 M rows need 4 GPUs' memory), and the share of
      # an iteration spent waiting for halos and reductions (bench_dist_cg's textbook CG, same grid).
      np=${ranks##* }
      if [ "$np" -ge 4 ]; then
        run "dist_scale_lobpcg_big_np$np" "${mpi[@]}" -np $np build-gpu/bench/bench_dist_scale --what lobpcg \
          --n "$nc" --json "$out/dist_scale_lobpcg_big_np${np}_$day.json"
        run "dist_cg_strong_big_np$np" "${mpi[@]}" -np $np build-gpu/bench/bench_dist_cg --mode strong --n "$nc" \
          --iters 100 --json "$out/dist_cg_strong_big_np${np}_$day.json"
      fi
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
