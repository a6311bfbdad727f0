#!/usr/bin/env bash
# bench/gpu/run_gpu.sh: the whole GPU suite and the GPU benchmarks, in one
# call, on the GPU machine (see shared/device/README.md).
#
# Here (Debian 12):   bash tools/gpu_pack.sh
# Then the device tool's run, carry [".gpu"], command:
#   . .gpu/env.sh && bash bench/gpu/run_gpu.sh
#
# 1. the GPU tests (tests/lua/test_cuda_*.lua, test_reduce.lua, test_array_gpu.lua,
#    and the library tests test_random/test_fft/test_blas/test_records_cuda,
#    whose mock-driver parts skip here) against the packed kjit.so;
# 2. bench/gpu/bench_gpu.lua (kjit), bench/gpu/peers.cu (nvcc -O3
#    -arch=sm_90) and bench/gpu/peers_numba.py (numba-cuda), same sizes;
# 3. a table of kjit against both peers, printed last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kdir=${KJIT_GPU_DIR:-/tmp/gpu/build-gpu}
out=$(mktemp -d)
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 |
         awk -F', ' '{ print $1 " (driver " $2 ")" }')
echo "== device"; echo "$device"
echo "== GPU tests"
fail=0
for t in tests/lua/test_cuda_*.lua tests/lua/test_reduce.lua tests/lua/test_array_gpu.lua \
         tests/lua/test_random.lua tests/lua/test_fft.lua tests/lua/test_blas.lua tests/lua/test_records_cuda.lua; do
  b=$(basename "$t" .lua)
  lua5.4 tests/lua/harness.lua "$kdir" "$t" "$out/$b.txt" > "$out/$b.log" 2>&1 || fail=1
  grep -E "^(FAIL|SKIP)|passed" "$out/$b.log"
done
echo "== benchmarks"
LUA_CPATH="$kdir/?.so;${LUA_CPATH:-;;}" lua5.4 bench/gpu/bench_gpu.lua > "$out/kjit.tsv" 2>&1 || cat "$out/kjit.tsv"
if command -v nvcc >/dev/null; then
  nvcc -O3 -arch=sm_90 -o "$out/peers" bench/gpu/peers.cu && "$out/peers" > "$out/cuda.tsv" 2>&1
else echo "# nvcc not found" > "$out/cuda.tsv"; fi
python3 bench/gpu/peers_numba.py > "$out/numba.tsv" 2>&1 || echo "# numba-cuda failed: $(tail -1 "$out/numba.tsv")" >> "$out/numba.tsv"
echo "== table (kjit | CUDA C | numba-cuda | kjit/CUDA C)"
awk -F'\t' '
  FILENAME ~ /kjit/ && NF == 3 { k[$1] = $2; u[$1] = $3; order[++n] = $1 }
  FILENAME ~ /cuda/ && NF == 3 { c[$1] = $2; if (!($1 in u)) { u[$1] = $3; order[++n] = $1 } }
  FILENAME ~ /numba/ && NF == 3 { m[$1] = $2 }
  END { for (i = 1; i <= n; i++) { x = order[i];
          r = (x in k && x in c && c[x] > 0) ? sprintf("%.2fx", k[x] / c[x]) : "-";
          printf "%-28s %10s %10s %10s  %-5s %s\n", x, (x in k ? k[x] : "-"), (x in c ? c[x] : "-"), (x in m ? m[x] : "-"), u[x], r } }
' "$out/kjit.tsv" "$out/cuda.tsv" "$out/numba.tsv"
echo "== reductions: GB/s read, and % of the device copy bandwidth (CUDA C cudaMemcpy D2D, bytes read + written)"
awk -F'\t' '
  FILENAME ~ /cuda/ && $1 == "copy_bandwidth" { cb = $2 * 1000 }
  $1 ~ /^reduce_/ && NF == 3 {
    s = FILENAME ~ /kjit/ ? 1 : FILENAME ~ /cuda/ ? 2 : 3
    v[$1, s] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
  END { printf "%-22s %-18s %-18s %-18s\n", "", "kjit", "CUDA C", "numba-cuda"
        for (i = 1; i <= n; i++) { x = order[i]; line = sprintf("%-22s", x)
          for (s = 1; s <= 3; s++) {
            c = ((x, s) in v) ? sprintf("%.0f GB/s", v[x, s]) : "-"
            if (((x, s) in v) && cb > 0) c = c sprintf(" (%.0f%%)", 100 * v[x, s] / cb)
            line = line sprintf(" %-18s", c) }
          print line } }
' "$out/kjit.tsv" "$out/cuda.tsv" "$out/numba.tsv"
grep -h "^#" "$out"/*.tsv
# JSON and SVG chart (bench/results/gpu-latest.* in the repository)
lua5.4 bench/gpu/report.lua "$out/kjit.tsv" "$out/cuda.tsv" "$out/numba.tsv" \
  "${device:-unknown GPU}" "$out/gpu-latest.json" "$out/gpu-latest.svg"
# the device tool brings back a few files from $OUT: the results, and every
# test log in one file (for the failures' tracebacks)
if [ -n "${OUT:-}" ]; then
  cp "$out"/*.tsv "$out"/gpu-latest.* "$OUT"/ 2>/dev/null
  cat "$out"/*.log > "$OUT/tests.log" 2>/dev/null
fi
exit $fail
