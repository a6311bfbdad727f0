#!/usr/bin/env bash
# bench/gpu/run_libs.sh: kjit.cuda.blas gemm and kjit.cuda.fft against the
# same cuBLAS and cuFFT called from CUDA C (bench/gpu/libs_peers.cu, built
# with nvcc when present) and against CuPy (bench/gpu/libs_cupy.py, when
# importable), on the GPU machine. Prints a table of milliseconds per call
# and the ratios kjit / CUDA C and kjit / CuPy (1.00: the same speed; above
# 1: kjit is slower).
#
# Here (Debian 12):   bash tools/gpu_pack.sh
# Then the device tool's run, carry [".gpu"], command:
#   . .gpu/env.sh && bash bench/gpu/run_libs.sh
# KJIT_GPU_DIR: the kjit build to load (default /tmp/gpu/build-gpu, as
# run_gpu.sh); LUA_CPATH is set from it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kdir=${KJIT_GPU_DIR:-/tmp/gpu/build-gpu}
out=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/^/# device: /'
LUA_CPATH="$kdir/?.so;${LUA_CPATH:-;;}" lua5.4 bench/gpu/libs.lua > "$out/kjit.tsv" 2>&1 || cat "$out/kjit.tsv"
if command -v nvcc >/dev/null; then
  if nvcc -O3 -o "$out/libs_peers" bench/gpu/libs_peers.cu -lcublas -lcufft 2> "$out/nvcc.log"; then
    "$out/libs_peers" > "$out/cuda.tsv" 2>&1 || echo "# the CUDA C peer failed: $(grep -v '^#' "$out/cuda.tsv" | tail -1)" >> "$out/cuda.tsv"
  else echo "# nvcc failed: $(head -3 "$out/nvcc.log")" > "$out/cuda.tsv"; fi
else echo "# nvcc not found: no CUDA C peer" > "$out/cuda.tsv"; fi
python3 bench/gpu/libs_cupy.py > "$out/cupy.tsv" 2>&1 || echo "# CuPy failed: $(tail -1 "$out/cupy.tsv")" >> "$out/cupy.tsv"
printf "%-30s %10s %10s %10s %9s %9s\n" "case (ms per call)" kjit "CUDA C" CuPy "kjit/C" "kjit/CuPy"
awk -F'\t' '
  FILENAME ~ /kjit/ && NF == 3 { k[$1] = $2; order[++n] = $1 }
  FILENAME ~ /cuda/ && NF == 3 { c[$1] = $2 }
  FILENAME ~ /cupy/ && NF == 3 { p[$1] = $2 }
  END { for (i = 1; i <= n; i++) { x = order[i]; base = x; sub(/_plan$/, "", base)
          rc = (base in c && c[base] > 0) ? sprintf("%.2f", k[x] / c[base]) : "-"
          rp = (base in p && p[base] > 0) ? sprintf("%.2f", k[x] / p[base]) : "-"
          printf "%-30s %10s %10s %10s %9s %9s\n", x, k[x], (base in c ? c[base] : "-"),
                 (base in p ? p[base] : "-"), rc, rp } }
' "$out/kjit.tsv" "$out/cuda.tsv" "$out/cupy.tsv"
grep -h "^#" "$out"/*.tsv
if [ -n "${OUT:-}" ]; then cp "$out"/*.tsv "$OUT"/ 2>/dev/null; fi
