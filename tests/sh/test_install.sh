#!/usr/bin/env bash
# tests/sh/test_install.sh: kjit installs like a library, for Lua and for C.
#
#   test_install.sh <build dir> <results file>
#
# `cmake --install` of the build into a scratch prefix, then: the tree holds
# exactly the module, libkjit.so (with its SONAME and links), kjit.h, kjit.pc
# and the CMake package; the default install directory of the module is on
# lua5.4's package.cpath; lua5.4 requires the installed module; a C host
# (host-examples/hello_embed.c) builds against the installed kjit with
# pkg-config and with find_package(kjit), and runs (pkg-config reports the
# version; find_package of the next minor version refuses this one); the
# same after moving the install tree elsewhere (relocatable). Writes
# "P F 0" to the results file like the other tests (ctest registers it as
# sh.test_install).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
build=$(cd "$1" && pwd) results=$2

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kjit-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cc=${CC:-cc}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
major_minor=${version%.*}

installed() { cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; return 1; }; }

# The exact listing ("-> target" for links); the targets file of the CMake
# package is named after the build type.
listing() {
  local want got extra=()
  # kjit.mpi, where an MPI was found (cmake/kjit_mpi.cmake): its scripts,
  # and the module where it was built (a build of some targets only, as
  # tests/sh/test_other_lua.sh makes, installs no mpi.so)
  grep -q "kjit-mpirun" "$build/cmake_install.cmake" 2>/dev/null &&
    extra=("bin/kjit-mpirun" "share/lua/5.4/kjit/mpi/run.lua")
  [[ -f "$build/kjit/mpi.so" ]] && extra+=("lib/lua/5.4/kjit/mpi.so")
  # the static build's LLVM (KJIT_LLVM_BACKEND), beside the module; the
  # installed libkjit.so finds it there (the moved-tree hosts below)
  [[ -f "$build/kjit_llvm.so" ]] && extra+=("lib/lua/5.4/kjit_llvm.so")
  want=$(printf '%s\n' "${extra[@]}" \
    "include/kjit.h" \
    "include/kjit_ext.h" \
    "lib/cmake/kjit/kjitConfig.cmake" \
    "lib/cmake/kjit/kjitConfigVersion.cmake" \
    "lib/cmake/kjit/kjitTargets-BUILD.cmake" \
    "lib/cmake/kjit/kjitTargets.cmake" \
    "lib/libkjit.so -> libkjit.so.$major_minor" \
    "lib/libkjit.so.$major_minor -> libkjit.so.$version" \
    "lib/libkjit.so.$version" \
    "lib/lua/5.4/kjit.so" \
    "lib/pkgconfig/kjit.pc" | sort)
  got=$(cd "$prefix" && { find . -type f -printf '%P\n'; find . -type l -printf '%P -> %l\n'; } |
        sed -E 's/kjitTargets-[a-z]+\.cmake/kjitTargets-BUILD.cmake/' | sort)
  if [[ "$want" != "$got" ]]; then
    echo "  expected:"; sed 's/^/    /' <<<"$want"; echo "  installed:"; sed 's/^/    /' <<<"$got"
    return 1
  fi
}

soname() {
  local s
  s=$(readelf -d "$prefix/lib/libkjit.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ "$s" == "libkjit.so.$major_minor" ]] || { echo "  SONAME is '$s'"; return 1; }
}

# libkjit.so depends on the shared Lua it was built with (DT_NEEDED), and
# on none when that Lua is a static liblua.a (the program holds it).
lua_needed() {
  local lib needed
  lib=$(sed -n 's/^LUA_LIBRARY:[A-Z]*=//p' "$build/CMakeCache.txt")
  needed=$(readelf -d "$prefix/lib/libkjit.so.$version" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if [[ "$lib" == *.a ]]; then
    if grep -q '^liblua' <<<"$needed"; then echo "  needs $(grep '^liblua' <<<"$needed")"; return 1; fi
  else
    local soname
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    grep -qx "$soname" <<<"$needed" || { echo "  NEEDED lacks $soname:"; echo "$needed"; return 1; }
  fi
}

# With the default prefix, the module lands on lua5.4's own search path.
default_on_cpath() {
  local p dir
  p=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
  dir=$(sed -n 's/^KJIT_INSTALL_CMODDIR:STRING=//p' "$build/CMakeCache.txt")
  lua5.4 -e "assert(package.cpath:find('$p/$dir/?.so', 1, true),
             '$p/$dir/?.so is not on package.cpath: ' .. package.cpath)"
}

lua_requires() {  # lua_requires <prefix> (from a file: kjit compiles from source)
  cat > "$tmp/req.lua" <<'EOF'
local kjit = require "kjit"
local f = kjit.jit(function(x) local s = 0 for i = 1, #x do s = s + x[i] end return s end)
assert(f(kjit.arange(10)) == 45, "wrong sum")
assert(package.searchpath("kjit", package.cpath):find(arg[1], 1, true), "not loaded from the prefix")
EOF
  LUA_CPATH="$1/lib/lua/5.4/?.so" lua5.4 "$tmp/req.lua" "$1"
}

# C host through pkg-config, run from the source tree (the script path).
host_pkgconfig() {  # host_pkgconfig <prefix> <exe>
  local pc=$1/lib/pkgconfig cflags libs libdir
  cflags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags kjit) || return 1
  libs=$(PKG_CONFIG_PATH=$pc pkg-config --libs kjit) || return 1
  libdir=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir kjit) || return 1
  # shellcheck disable=SC2086
  "$cc" -std=c11 $cflags host-examples/hello_embed.c -o "$2" $libs -Wl,-rpath,"$libdir" || return 1
  # a host that uses libm itself links with the same line (Libs has -lm)
  # shellcheck disable=SC2086
  "$cc" -std=c11 $cflags host-examples/image_filter.c -o "$2-filter" $libs -Wl,-rpath,"$libdir" ||
    return 1
  "$2" host-examples/hello_embed.lua
}

# C host through find_package(kjit) (a project of its own).
host_cmake() {  # host_cmake <prefix> <dir>
  mkdir -p "$2"
  cat > "$2/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(kjit_host C)
find_package(kjit $major_minor REQUIRED)
add_executable(hello_embed "$root/host-examples/hello_embed.c")
target_link_libraries(hello_embed PRIVATE kjit::kjit)
# uses libm: kjit::kjit brings it
add_executable(image_filter "$root/host-examples/image_filter.c")
target_link_libraries(image_filter PRIVATE kjit::kjit)
EOF
  cmake -S "$2" -B "$2/build" -DCMAKE_PREFIX_PATH="$1" >"$2/log" 2>&1 &&
    cmake --build "$2/build" >>"$2/log" 2>&1 || { cat "$2/log"; return 1; }
  "$2/build/hello_embed" host-examples/hello_embed.lua
}

pc_version() {
  local v
  v=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --modversion kjit) || return 1
  [[ "$v" == "$version" ]] || { echo "  pkg-config says $v"; return 1; }
}

# find_package(kjit <next minor>) must refuse this kjit (SameMinorVersion).
refuses_other_minor() {
  local d=$tmp/minor next
  next=${version%%.*}.$(( $(cut -d. -f2 <<<"$version") + 1 ))
  mkdir -p "$d"
  printf 'cmake_minimum_required(VERSION 3.18)\nproject(p C)\nfind_package(kjit %s REQUIRED)\n' "$next" > "$d/CMakeLists.txt"
  if cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$prefix" >"$d/log" 2>&1; then
    echo "  find_package(kjit $next) accepted kjit $version"; return 1
  fi
  grep -q 'kjitConfig.cmake, version: '"$version" "$d/log" || { tail -5 "$d/log"; return 1; }
}

# The static build's kjit_llvm.so is installed stripped (CMakeLists.txt
# KJIT_STRIP_LLVM_MODULE, on unless the build turned it off), the build
# tree's copy keeps its symbols; lua_requires below compiles with it.
llvm_stripped() {
  local cache want=ON
  cache=$(sed -n 's/^KJIT_STRIP_LLVM_MODULE:BOOL=//p' "$build/CMakeCache.txt")
  [[ -n $cache ]] && want=$cache
  [[ -f "$build/kjit_llvm.so" && $want == ON ]] || return 0
  [[ $(readelf -S "$build/kjit_llvm.so") == *.symtab* ]] || { echo "  the build tree's copy has no symbols"; return 1; }
  if [[ $(readelf -S "$prefix/lib/lua/5.4/kjit_llvm.so") == *.symtab* ]]; then
    echo "  the installed kjit_llvm.so has a symbol table"; return 1
  fi
  # (read whole first: grep -q leaving early fails the pipe under pipefail)
  local syms
  syms=$(readelf -W --dyn-syms "$prefix/lib/lua/5.4/kjit_llvm.so")
  grep -q ' LLVMContextCreate$' <<<"$syms" ||
    { echo "  the installed kjit_llvm.so lost its exports (LLVMContextCreate)"; return 1; }
}

check "cmake --install --prefix" installed
check "install tree listing" listing
check "the static build's kjit_llvm.so installed stripped" llvm_stripped
check "libkjit.so SONAME libkjit.so.$major_minor" soname
check "libkjit.so needs the shared Lua it was built with (or none for liblua.a)" lua_needed
check "default module directory is on lua5.4's package.cpath" default_on_cpath
check "lua5.4 requires the installed module" lua_requires "$prefix"
check "C host built with pkg-config --cflags --libs kjit" host_pkgconfig "$prefix" "$tmp/host_pc"
check "C host built with find_package(kjit) / kjit::kjit" host_cmake "$prefix" "$tmp/host_cmake"
check "pkg-config --modversion kjit is $version" pc_version
check "find_package(kjit <next minor>) refuses it" refuses_other_minor
mv "$prefix" "$tmp/moved"
check "moved tree: lua5.4 requires the module" lua_requires "$tmp/moved"
check "moved tree: pkg-config host" host_pkgconfig "$tmp/moved" "$tmp/host_pc2"
check "moved tree: find_package host" host_cmake "$tmp/moved" "$tmp/host_cmake2"

mkdir -p "$(dirname "$results")"
echo "$passed $failed 0" > "$results"
echo "test_install: $passed passed, $failed failed"
((failed == 0))
