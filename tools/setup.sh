#!/usr/bin/env bash
# tools/setup.sh: install what kjit needs (Debian 12) and build it.
#
#   bash tools/setup.sh          # packages, then build/ (RelWithDebInfo)
#   bash tools/setup.sh --asan   # also build-asan/ (ASan + UBSan)
#   bash tools/setup.sh --target kjit_module   # only that target of build/
#                                # (demo/run.sh: the Lua module, no tests)
#
# Idempotent: packages already installed are left alone (apt-get is not run
# at all when nothing is missing) and the builds are incremental. Installing
# packages needs root, or sudo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

asan=0
target=() target_next=0
for a in "$@"; do
  if ((target_next)); then target=(--target "$a"); target_next=0; continue; fi
  case "$a" in
    --asan) asan=1 ;;
    --target) target_next=1; continue ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(lua5.4 liblua5.4-dev llvm-14-dev clang-14 cmake pkg-config luarocks
          luajit build-essential)
packages+=(valgrind libclang-rt-14-dev)   # tests/sh/test_valgrind.sh, libFuzzer (tests/fuzz)
packages+=(lua5.3)   # tests/sh/test_wrong_lua.sh: kjit refuses to load into Lua 5.3
packages+=(libopenblas-dev)   # kjit.blas (src/libs/blas_host.c; optional at build time)
packages+=(zip unzip)   # tests/sh/test_luarocks.sh: luarocks pack and installing a .src.rock
packages+=(openmpi-bin libopenmpi-dev)   # kjit.mpi (src/mpi/) and its tests under mpirun
packages+=(libfftw3-dev)   # kjit.fft (src/libs/fft_host.c; optional, found by cmake/fftw.cmake)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup.sh: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "setup.sh: missing packages (${missing[*]}) and not root, no sudo" >&2
    exit 1
  fi
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" </dev/null
fi

# A build directory configured from another checkout (copied or moved tree)
# makes CMake refuse to run: start that one afresh.
fresh_if_moved() {
  local dir=$1 cache=$1/CMakeCache.txt home
  [[ -f "$cache" ]] || return 0
  home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")
  if [[ "$home" != "$(pwd -P)" && "$home" != "$PWD" ]]; then
    echo "setup.sh: $dir was configured for $home; reconfiguring"
    rm -rf "$dir"
  fi
}

jobs=$(nproc 2>/dev/null || echo 2)
build() {  # build <dir> [cmake args...]
  local dir=$1; shift
  fresh_if_moved "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  cmake --build "$dir" -j"$jobs" "${target[@]}"
}

build build
if ((asan)); then
  build build-asan -DKJIT_SANITIZE=ON
fi
