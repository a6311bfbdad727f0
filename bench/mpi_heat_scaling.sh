#!/usr/bin/env bash
# bench/mpi_heat_scaling.sh [build dir] [repeats]: strong and weak scaling
# of examples/heat_mpi.lua at 1, 2 and 4 ranks (oversubscribed when the
# machine has fewer cores). The figure is the time of the time loop on the
# slowest rank (MPI_Wtime, after a barrier; start-up and compile excluded),
# the median of the repeats; and the largest CPU time of a rank in that
# loop (os.clock), which other processes on a shared machine do not add to.
# Oversubscribed or loaded, Open MPI's busy polling steals the cores the
# other ranks need: the ranks are not bound to cores and yield when idle.
#   strong: a 1024 x 1024 grid, 200 steps, split among the ranks
#   weak:   512 rows x 1024 columns per rank, 200 steps
# Efficiency: strong t1 / (p * tp), weak t1 / tp.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
reps=${2:-3}
export LUA_CPATH="$build/?.so;;" LUA_PATH="$build/?.lua;;"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
opts=()
mpirun --version 2>/dev/null | grep -q "Open MPI" &&
  opts=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() {  # run <np> <args...>: "wall cpu", the medians
  local np=$1; shift
  local out
  out=$(for ((i = 0; i < reps; i++)); do
    mpirun "${opts[@]}" -np "$np" lua5.4 -l kjit.mpi.run examples/heat_mpi.lua "$@" |
      sed -n 's/.*steps: \([0-9.]*\) s (slowest rank), cpu \([0-9.]*\) s.*/\1 \2/p'
  done)
  echo "$(cut -d' ' -f1 <<<"$out" | median) $(cut -d' ' -f2 <<<"$out" | median)"
}
echo "cores: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg), $(mpirun --version | head -1)"
printf "%-6s %5s %9s %9s %9s %9s\n" kind ranks "wall (s)" "eff" "cpu (s)" "cpu eff"
for kind in strong weak; do
  t1="" c1=""
  for np in 1 2 4; do
    if [[ $kind == strong ]]; then r=$(run "$np" 1024 1024 200); else r=$(run "$np" 512 1024 200 --weak); fi
    t=${r% *} c=${r#* }
    [[ -z $t1 ]] && t1=$t c1=$c
    p=$np; [[ $kind == weak ]] && p=1
    e=$(awk -v a="$t1" -v b="$t" -v p="$p" 'BEGIN{printf "%.2f", a/(p*b)}')
    ce=$(awk -v a="$c1" -v b="$c" -v p="$p" 'BEGIN{printf "%.2f", a/(p*b)}')
    printf "%-6s %5d %9s %9s %9s %9s\n" "$kind" "$np" "$t" "$e" "$c" "$ce"
  done
done
