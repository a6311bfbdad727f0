#!/usr/bin/env bash
# bench/tier_cost.sh: what the first tier of a tiered compile costs a call
# (host/jit.c "Tiered compiles"), in instructions (valgrind), kernel by
# kernel of bench/kernels.lua (through bench/run_lua.lua): each kernel's
# code with KJIT_TIER=first (every compile the first tier, never tiered
# up: what a single long call runs) against KJIT_TIER=0 (full tier only).
# Each figure is the difference between two runs of different call counts
# divided by the extra calls, so start-up, the compiles and filling the
# inputs cancel out (as in bench/poll_cost.sh). Instruction counts do not
# see cache misses or the length of a dependency chain: the first tier's
# time ratio can differ (a vectorized loop's count falls with the width of
# its vectors, its time less where memory bounds it).
#   bash bench/tier_cost.sh [kjit.so dir (default build)] [kernel...]
# Prints one line a kernel: instructions a call at the first tier, at full
# tier, and first/full. Needs valgrind; takes many minutes (an hour under
# a load of 15 on two cores).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-build}
shift || true
only=" $* "
export LUA_CPATH="$dir/?.so;;"
command -v valgrind >/dev/null || { echo "tier_cost.sh: needs valgrind" >&2; exit 2; }

count() {   # count TIER command...: the instructions valgrind counts
  KJIT_TIER=$1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "${@:2}" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
per_call() {   # per_call TIER lo hi command-with-CALLS...: instructions a call
  local m=$1 lo=$2 hi=$3; shift 3
  local a b
  a=$(count "$m" "${@//CALLS/$lo}")
  b=$(count "$m" "${@//CALLS/$hi}")
  echo $(( (b - a) / (hi - lo) ))
}

printf "%-12s %14s %14s %10s\n" "kernel" "first tier" "full tier" "first/full"
while read -r name params; do
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then continue; fi
  t=$(mktemp)
  per_call first 1 11 lua5.4 bench/run_lua.lua kjit "$name" CALLS $params > "$t" &
  full=$(per_call 0 1 11 lua5.4 bench/run_lua.lua kjit "$name" CALLS $params)
  wait
  first=$(cat "$t")
  rm -f "$t"
  awk -v n="$name" -v a="$first" -v b="$full" \
    'BEGIN { printf "%-12s %14d %14d %10.3f\n", n, a, b, a / b }'
done <<'KERNELS'
saxpy 1000000
dot 1000000
mandelbrot 120 80 64
nbody 2000
matmul 64
jacobi 100 4
convolve 20000 64
histogram 1000000 256
prefix_sum 1000000
fib 20
KERNELS
