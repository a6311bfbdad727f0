#!/usr/bin/env bash
# bench/poll_cost.sh: what interrupt polls cost, in instructions (valgrind),
# polls on against KJIT_BENCH_NOPOLL=1 (compiled without polls), kernel by
# kernel: the CPU kernels of bench/kernels.lua (through bench/run_lua.lua)
# and bench/parallel.lua's on one thread (bench/poll_cost_par.lua). Each
# figure is the difference between two runs of different call counts
# divided by the extra calls, so start-up, compiling and filling the inputs
# cancel out. Instruction counts, unlike times, do not move with the load
# of a shared machine; they do not see cache misses or a stall on a long
# dependency chain, so a time comparison (interleaved runs) belongs beside
# them.
#   bash bench/poll_cost.sh [kjit.so dir (default build)] [kernel...]
# (kernel names: only those kernels, the parallel ones as parallel-NAME,
# e.g. `bash bench/poll_cost.sh build jacobi parallel-matmul`; none: all)
# Prints one line a kernel: instructions a call with polls and without
# (the two runs of each side by side, as two processes),
# and their ratio; then the geometric mean of the parallel kernels'
# ratios. Needs valgrind. Takes several minutes (valgrind runs code about
# 20-50 times slower; an hour under a load of 10 on two cores).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-build}
shift || true
only=" $* "   # the kernels to run (all when empty)
wanted() { [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]; }
# (in the environment, not through `env`: valgrind would count env itself,
# which execs lua5.4 untraced)
export LUA_CPATH="$dir/?.so;;"
# full tier only (host/jit.c "Tiered compiles"): a tiered function starts
# at the first tier (optnone code) and tiers up after 1000 units of work, a
# poll counting 250, so with polls off a kernel ran its first-tier code for
# far more of the calls than with them on (dot and prefix_sum read 0.84-0.89
# of polls off), and the 61 calls' count held the tier-up's compile
export KJIT_TIER=0
command -v valgrind >/dev/null || { echo "poll_cost.sh: needs valgrind" >&2; exit 2; }

count() {   # count on|off command...: the instructions valgrind counts
  # (cachegrind without its cache simulation: the same count as callgrind's,
  # about twice as fast)
  local env=()
  if [ "$1" = off ]; then env=(KJIT_BENCH_NOPOLL=1); fi
  shift
  env "${env[@]}" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
per_call() {   # per_call on|off lo hi command-with-CALLS...: instructions a call
  # (the two runs at once: Lua seeds its string hashes with time(NULL), and
  # the compile's count follows the seed, by some 1M instructions, so runs
  # started in different seconds differ by that much; bench jacobi, 180k
  # instructions a call, read 1.04 to 1.17 of polls off for the same code.
  # Started together, both runs read the same second nearly always.)
  local m=$1 lo=$2 hi=$3; shift 3
  local ta tb
  ta=$(mktemp) tb=$(mktemp)
  count "$m" "${@//CALLS/$lo}" > "$ta" &
  count "$m" "${@//CALLS/$hi}" > "$tb" &
  wait
  echo $(( ($(cat "$tb") - $(cat "$ta")) / (hi - lo) ))
  rm -f "$ta" "$tb"
}
report() {   # report name on off
  awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%-22s %14d %14d %8.3f\n", n, a, b, a / b }'
}

printf "%-22s %14s %14s %8s\n" "kernel" "polls on" "polls off" "on/off"
both() {   # both lo hi command...: "on off", the two measured side by side
  local t
  t=$(mktemp)
  sleep "$(printf "0.%09d" $(( 999999999 - 10#$(date +%N) )))"   # all four runs from a second's start
  per_call off "$@" > "$t" &
  local on
  on=$(per_call on "$@")
  wait
  echo "$on $(cat "$t")"
  rm -f "$t"
}
# the CPU kernels, sizes that valgrind runs in seconds (one timed call
# against 61: a whole process's count moves by some 100k instructions
# from run to run, LLVM's and Lua's hashing of addresses, so the calls
# between the two runs must outweigh that; with one against 11 the same
# code read 1.28M to 1.39M instructions a call, too noisy for 2%)
while read -r name params; do
  wanted "$name" || continue
  read -r on off < <(both 1 61 lua5.4 bench/run_lua.lua kjit "$name" CALLS $params)
  report "$name" "$on" "$off"
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
# bench/parallel.lua's kernels on one thread (two calls against 42)
logsum=0 nk=0
while read -r name size; do
  wanted "parallel-$name" || continue
  read -r on off < <(both 2 42 lua5.4 bench/poll_cost_par.lua "$name" "$size" CALLS "$dir")
  report "parallel $name" "$on" "$off"
  logsum=$(awk -v s="$logsum" -v a="$on" -v b="$off" 'BEGIN { print s + log(a / b) }')
  nk=$((nk + 1))
done <<'KERNELS'
saxpy 1000000
dot 1000000
mandelbrot 128
matmul 128
vectorize 1000000
reduce 1000000
KERNELS
if [ "$nk" -gt 0 ]; then
  awk -v s="$logsum" -v n="$nk" 'BEGIN { printf "parallel geomean on/off %.3f\n", exp(s / n) }'
fi
