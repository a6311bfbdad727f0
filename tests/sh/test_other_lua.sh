#!/usr/bin/env bash
# tests/sh/test_other_lua.sh: kjit builds and works with a Lua 5.4 that is
# not Debian's.
#
# 1. tools/build_lua.sh builds Lua 5.4.8 from the sources of the lupa
#    source package (downloaded once from PyPI into ~/.cache/kjit, or
#    KJIT_LUA_SRC: a Lua source directory or tarball) the way Lua's
#    makefile does: static liblua.a, an interpreter exporting the Lua API.
# 2. kjit is configured against it (-DLUA_INCLUDE_DIR, -DLUA_LIBRARY,
#    -DLUA_EXECUTABLE) in a scratch build directory, built (-j2; no tests,
#    Release), and must have compiled with that lua.h, not Debian's.
# 3. That interpreter requires kjit and runs a few test files (buffers, the
#    jit API, the call path with its direct stack reads, every example of
#    the README and docs/); the C host example, linked
#    with the static liblua.a (and no shared Lua), runs; tests/sh/test_install.sh
#    on that build (C hosts linking the static Lua through kjit.pc and
#    kjit::kjit).
# Writes "P F S" to build/test-results/test_other_lua.txt like the others.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD

passed=0 failed=0 skipped=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kjit-otherlua.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lua=$tmp/lua
build=$tmp/build
jobs=${KJIT_JOBS:-2}

built_lua() {
  bash tools/build_lua.sh "$lua" ${KJIT_LUA_SRC:+"$KJIT_LUA_SRC"} >"$tmp/lua.log" 2>&1 ||
    { tail -20 "$tmp/lua.log"; return 1; }
  tail -1 "$tmp/lua.log"
  "$lua/bin/lua" -e 'assert(_VERSION == "Lua 5.4")'
}

built_kjit() {
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKJIT_TESTS=OFF \
        -DLUA_INCLUDE_DIR="$lua/include" -DLUA_LIBRARY="$lua/lib/liblua.a" \
        -DLUA_EXECUTABLE="$lua/bin/lua" >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$build" -j"$jobs" --target kjit_module hello_embed >>"$tmp/cmake.log" 2>&1 ||
    { tail -30 "$tmp/cmake.log"; return 1; }
}

# Given only the headers, CMake finds liblua.a and lua next to them.
found_next_to_headers() {
  local d=$tmp/probe
  cmake -S . -B "$d" -DKJIT_TESTS=OFF -DLUA_INCLUDE_DIR="$lua/include" >"$d.log" 2>&1 ||
    { tail -5 "$d.log"; return 1; }
  grep -qx "LUA_LIBRARY:FILEPATH=$lua/lib/liblua.a" "$d/CMakeCache.txt" &&
    grep -qx "LUA_EXECUTABLE:FILEPATH=$lua/bin/lua" "$d/CMakeCache.txt" ||
    { grep '^LUA_' "$d/CMakeCache.txt"; return 1; }
}

# The objects were compiled with the built Lua's headers only.
its_headers() {
  local flags
  flags=$(cat "$build"/CMakeFiles/kjit_objs.dir/flags.make)
  grep -qF -- "$lua/include" <<<"$flags" || { echo "  $lua/include not in the flags"; return 1; }
  if grep -q 'lua5\.4' <<<"$flags"; then echo "  Debian's Lua headers in the flags"; return 1; fi
}

requires() {  # from a file: kjit compiles from the source
  cat > "$tmp/req.lua" <<'EOF'
local kjit = require "kjit"
local f = kjit.jit(function(x) local s = 0.0 for i = 1, #x do s = s + x[i] * x[i] end return s end)
assert(f(kjit.arange(1, 1001, "f64")) == 333833500.0)
print("  " .. _VERSION .. " (" .. arg[-1] .. "): kjit " .. kjit.version)
EOF
  LUA_CPATH="$build/?.so" "$lua/bin/lua" "$tmp/req.lua"
}

test_file() {  # test_file <name>: a tests/lua file run by the built Lua
  "$lua/bin/lua" tests/lua/harness.lua "$build" "tests/lua/test_$1.lua" "$tmp/$1.txt" >"$tmp/$1.log" 2>&1 ||
    { tail -20 "$tmp/$1.log"; return 1; }
  tail -1 "$tmp/$1.log"
}

# the host holds the one Lua core, the static one: no liblua*.so anywhere
host() {
  if grep -q 'liblua' <<<"$(ldd "$build/hello_embed")"; then
    echo "  hello_embed needs a shared Lua:"; ldd "$build/hello_embed" | grep liblua; return 1
  fi
  "$build/hello_embed" host-examples/hello_embed.lua
}

start=$SECONDS
# no Lua sources to be had (no PyPI, no KJIT_LUA_SRC): a visible skip
if [[ -z "${KJIT_LUA_SRC:-}" ]] && ! ls "${KJIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kjit}"/lupa-2.8.tar.gz >/dev/null 2>&1 &&
   ! python3 -m pip download --quiet --no-binary :all: --no-deps \
       -d "${KJIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kjit}" lupa==2.8 >/dev/null 2>&1; then
  echo "SKIP test_other_lua: the Lua sources (lupa 2.8 from PyPI) cannot be downloaded; set KJIT_LUA_SRC"
  mkdir -p build/test-results
  echo "0 0 1" > build/test-results/test_other_lua.txt
  exit 0
fi
check "build Lua 5.4 from source (tools/build_lua.sh)" built_lua
if ((failed == 0)); then
  check "configure and build kjit against it" built_kjit
fi
if ((failed == 0)); then
  check "compiled with that Lua's headers" its_headers
  check "-DLUA_INCLUDE_DIR alone: liblua.a and lua found next to it" found_next_to_headers
  check "that Lua requires kjit and runs a jit function" requires
  for t in buffer jit_api call_path readme; do check "tests/lua/test_$t.lua with that Lua" test_file "$t"; done
  check "C host linked with the static liblua.a" host
  check "installed, C hosts built with pkg-config and find_package (test_install.sh)" \
    bash tests/sh/test_install.sh "$build" "$tmp/install.txt"
else
  failed=$((failed + 8)); echo "FAIL (the 8 checks that need the build did not run)"
fi
echo "test_other_lua: $((SECONDS - start)) s"

mkdir -p build/test-results
echo "$passed $failed $skipped" > build/test-results/test_other_lua.txt
echo "test_other_lua: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
