#!/usr/bin/env bash
# bench/mpi_heat_scaling.sh [build dir] [repeats]: strong and weak scaling
# of examples/heat_mpi.lua at 1, 2 and 4 ranks.
#
# Each figure is the time loop only (start-up and compile excluded): the
# slowest rank's wall time (MPI_Wtime, after a barrier) and the largest
# CPU time of a rank (os.clock), which other processes on a shared
# machine do not add to. Each is given as the median of the repeats with
# their spread, min-max: a loop of ~40 ms (the old 200 steps) moved by
# 15% from run to run, so the steps are set for a loop of about a second
# on a quiet 2-core x86-64 VM (STEPS_STRONG, STEPS_WEAK override them).
#   strong: a 1024 x 1024 grid, split among the ranks
#   weak:   512 rows x 1024 columns per rank
#   weak, overlap: the same with the halo exchange overlapped (--overlap:
#           isend/irecv, the rows that need no halo computed meanwhile)
#   weak, apart: p separate 1-rank runs at once (no MPI between them):
#           what p copies of the loop get from the machine (shared caches,
#           memory bandwidth) with no exchange at all, the ceiling of weak
#           efficiency here
# Efficiency: strong t1 / (p * tp), weak t1 / tp.
#
# The ranks are not bound to cores and yield when idle (Open MPI's
# mpi_yield_when_idle): with more ranks than cores, or other work on the
# machine, Open MPI's busy polling otherwise takes the cores that the other
# ranks need to finish their step (on a loaded 2-core VM, 2 bound ranks
# spent 5 to 7 times the CPU of the loop in polling). BIND=1 binds each
# rank to a core where there are enough (Open MPI's default), for a quiet
# machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
reps=${2:-5}
strong_steps=${STEPS_STRONG:-2500}
weak_steps=${STEPS_WEAK:-5000}
export LUA_CPATH="$build/?.so;;" LUA_PATH="$build/?.lua;;"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
openmpi=0
mpirun --version 2>/dev/null | grep -q "Open MPI" && openmpi=1
mpiopts() {  # mpiopts <np>
  if ((!openmpi)); then return; fi
  if ((${BIND:-0} && $1 <= cores)); then echo "--bind-to core"
  else echo "--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"; fi
}
# stats: lines "wall cpu" in, "median min max" of each out
stats() {
  local in col
  in=$(cat)
  for col in 1 2; do
    cut -d' ' -f$col <<<"$in" | sort -g |
      awk '{a[NR]=$1} END {printf "%s %s %s ", a[int((NR+1)/2)], a[1], a[NR]}'
  done
  echo
}
loop_times() { sed -n 's/.*steps: \([0-9.]*\) s (slowest rank), cpu \([0-9.]*\) s.*/\1 \2/p'; }
run() {  # run <np> <args...>: stats of "wall cpu" over the repeats
  local np=$1; shift
  for ((i = 0; i < reps; i++)); do
    # shellcheck disable=SC2046
    mpirun $(mpiopts "$np") -np "$np" lua5.4 -l kjit.mpi.run examples/heat_mpi.lua "$@" | loop_times
  done | stats
}
apart() {  # apart <p> <args...>: p 1-rank runs at once; the slowest's wall, the largest CPU
  local p=$1; shift
  for ((i = 0; i < reps; i++)); do
    for ((k = 0; k < p; k++)); do
      lua5.4 -l kjit.mpi.run examples/heat_mpi.lua "$@" | loop_times &
    done | sort -g | tail -1   # (the largest wall; its CPU is near the largest)
    wait
  done | stats
}
echo "cores: $cores, load: $(cut -d' ' -f1-3 /proc/loadavg), $(mpirun --version | head -1)"
echo "steps: strong $strong_steps, weak $weak_steps; $reps repeats: median (min-max)"
printf "%-14s %5s %22s %5s %22s %5s\n" kind ranks "wall (s)" eff "cpu (s)" eff
row() {  # row <kind> <np> <p for efficiency> <ref stats> <stats>
  read -r w wlo whi c clo chi <<<"$5"
  read -r w1 _ _ c1 _ _ <<<"$4"
  local e ce
  e=$(awk -v a="$w1" -v b="$w" -v p="$3" 'BEGIN{printf "%.2f", a/(p*b)}')
  ce=$(awk -v a="$c1" -v b="$c" -v p="$3" 'BEGIN{printf "%.2f", a/(p*b)}')
  printf "%-14s %5d %22s %5s %22s %5s\n" "$1" "$2" "$w ($wlo-$whi)" "$e" "$c ($clo-$chi)" "$ce"
}
ref=""
for np in 1 2 4; do
  r=$(run "$np" 1024 1024 "$strong_steps"); [[ -z $ref ]] && ref=$r
  row strong "$np" "$np" "$ref" "$r"
done
ref=""
for np in 1 2 4; do
  r=$(run "$np" 512 1024 "$weak_steps" --weak); [[ -z $ref ]] && ref=$r
  row weak "$np" 1 "$ref" "$r"
done
for np in 2 4; do row "weak, overlap" "$np" 1 "$ref" "$(run "$np" 512 1024 "$weak_steps" --weak --overlap)"; done
for np in 2 4; do row "weak, apart" "$np" 1 "$ref" "$(apart "$np" 512 1024 "$weak_steps" --weak)"; done
