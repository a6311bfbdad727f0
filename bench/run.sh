#!/usr/bin/env bash
# bench/run.sh: the kjit CPU benchmark suite, in one command.
#
#   bash bench/run.sh [--runs N] [--only saxpy,fib] [--no-venv] [--kjit DIR]
#
# 1. builds kjit into build-bench/ (incremental; tools/setup.sh installs the
#    packages if lua5.4, clang-14, luajit... are missing); --kjit DIR uses
#    the kjit.so already built in DIR instead (another build, a checkout
#    of another revision) and builds nothing;
# 2. compiles bench/c/kernels.c with clang-14 -O3 -march=native twice:
#    -ffp-contract=off (C without FMA contraction, rounding every * and +
#    as Lua does and kjit keeps: the fair peer, the one the targets use)
#    and -ffp-contract=on (clang's default: a*b+c fused into one rounding,
#    faster where FMA helps, not what Lua computes); and with gcc -O3
#    -march=native (whose default, -ffp-contract=fast, fuses too);
# 3. makes bench/.venv with `pip install numba numpy` (once; if that fails,
#    or with --no-venv, the Numba column is skipped and the reason printed);
# 4. runs bench/bench.lua: every kernel of bench/kernels.lua with kjit, C,
#    Numba, LuaJIT (FFI arrays) and the Lua 5.4 interpreter, each in its own
#    process; median of N runs (default 7) after a warm-up; prints the machine,
#    times, ratios against each peer and the project's speed targets,
#    call and compile overheads; writes bench/results/latest.json and
#    bench/results/latest.svg.
# Takes a few minutes. Timings are noisy on a loaded machine: run it alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build="build-bench"
kjit_dir=
venv=1
args=()
while (($#)); do
  case "$1" in
    --no-venv) venv=0 ;;
    --kjit) kjit_dir=${2:?--kjit needs a directory}; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1") ;;
  esac
  shift
done

have() { command -v "$1" >/dev/null 2>&1; }
if ! have lua5.4 || ! have clang-14 || ! have cmake || ! have llvm-config-14; then
  echo "run.sh: missing tools; running tools/setup.sh to install them"
  bash tools/setup.sh
fi

if [[ -z $kjit_dir ]]; then
  echo "run.sh: building kjit in $build/"
  kjit_dir=$build
  log=$build/bench-build.log
  mkdir -p "$build"
  if ! { [[ -f $build/CMakeCache.txt ]] ||
         cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKJIT_TESTS=OFF; } >"$log" 2>&1 ||
     ! cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target kjit_module >>"$log" 2>&1; then
    tail -n 30 "$log"
    echo "run.sh: building kjit failed (log: $log)"
    exit 1
  fi
fi
[[ -f $kjit_dir/kjit.so ]] || { echo "run.sh: no kjit.so in $kjit_dir"; exit 1; }

echo "run.sh: compiling the C kernels"
mkdir -p "$build/bench-c"
cc_one() {  # cc_one <compiler> <output name> [flags...]
  local cc=$1 out=$build/bench-c/$2; shift 2
  if ! have "$cc"; then echo "run.sh: $cc not found; its column is skipped"; rm -f "$out"; return 0; fi
  if [[ ! -x $out || bench/c/kernels.c -nt $out ]]; then
    "$cc" -O3 -march=native "$@" -o "$out" bench/c/kernels.c -lm
  fi
}
cc_one clang-14 kernels-clang-fma -ffp-contract=on
cc_one gcc kernels-gcc
cc_one clang-14 kernels-clang-nofma -ffp-contract=off

if ((venv)); then
  if [[ ! -x bench/.venv/bin/python ]] || ! bench/.venv/bin/python -c 'import numba' 2>/dev/null; then
    echo "run.sh: creating bench/.venv (pip install numba numpy)"
    if ! { python3 -m venv bench/.venv && bench/.venv/bin/pip install -q numba numpy; } >/tmp/kjit-bench-pip.$$.log 2>&1; then
      reason="pip install numba numpy failed: $(tail -n 1 /tmp/kjit-bench-pip.$$.log)"
      echo "run.sh: $reason (Numba column skipped)"
      export BENCH_NUMBA_SKIP="$reason"
    fi
    rm -f /tmp/kjit-bench-pip.$$.log
  fi
else
  export BENCH_NUMBA_SKIP="--no-venv given"
  # bench.lua looks for bench/.venv itself: hide it for this run
  export BENCH_NO_NUMBA=1
fi

exec lua5.4 bench/bench.lua --build "$build" --kjit "$kjit_dir" "${args[@]}"
