#!/usr/bin/env bash
# bench/gpu/ptx_report.sh [build-dir]: the PTX of every GPU benchmark kernel
# (bench/gpu/bench_gpu.lua, run small in the simulator) with, per kernel,
# its PTX instruction count and the registers ptxas -v gives it (sm_90).
# No GPU needed, only the CUDA toolkit's ptxas. Compare two code generators
# by running it before and after a change (diff the two outputs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build}
ptxas=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
[[ -x $ptxas ]] || { echo "ptx_report: no ptxas at $ptxas (set CUDA_HOME)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
KJIT_BENCH_SIM=1 KJIT_PTX_REPORT=$dir LUA_CPATH="$build/?.so;;" lua5.4 bench/gpu/bench_gpu.lua >/dev/null
printf '%-40s %6s %5s %s\n' kernel insns regs spills
for f in "$dir"/*.ptx; do
  # instructions: statement lines inside function bodies (not directives,
  # labels, braces or comments)
  insns=$(grep -cE '^[[:space:]]+(@%?[!a-z0-9_]+[[:space:]]+)?[a-z][a-z0-9_.]*([[:space:]].*)?;' "$f" || true)
  info=$("$ptxas" -v -arch=sm_90 "$f" -o /dev/null 2>&1)
  regs=$(grep -oE 'Used [0-9]+ registers' <<<"$info" | grep -oE '[0-9]+' | sort -n | tail -1)
  spills=$(grep -oE '[0-9]+ bytes spill stores' <<<"$info" | grep -oE '^[0-9]+' | sort -n | tail -1)
  printf '%-40s %6s %5s %s\n' "$(basename "$f" .ptx)" "$insns" "${regs:-?}" "${spills:-0}"
done
