#!/usr/bin/env bash
# tests/sh/test_configure.sh: what CMake's configure step promises a new
# user (issue 26, item 2).
#
#   test_configure.sh <build-dir> <results-file>
#
#  - Configuring again rebuilds nothing: the generated header every file
#    includes (kjit_lua_weak.h) keeps its bytes and its time when the Lua
#    include directory is spelled "/usr/include/lua5.4/" one time and
#    "/usr/include/lua5.4" the next, and LUA_INCLUDE_DIR is cached without
#    the trailing slash.
#  - No LLVM, or an llvm-config of another version, stops the configure
#    with a message naming LLVM 14 and the package to install.
# Configures only (no build), in scratch directories, without the tests and
# examples. Writes "P F 0" to the results file like the other tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=$1 results=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

# the Lua headers the build uses, spelled without a trailing slash
luainc=$(sed -n 's/^LUA_INCLUDE_DIR:PATH=//p' "$build/CMakeCache.txt")
luainc=${luainc%/}
said() {  # said <log> <text>: the log has the text, CMake's line wrapping undone
  tr '\n' ' ' <"$1" | tr -s ' ' | grep -qF "$2"
}
configure() {  # configure <dir> <cmake args...>
  local dir=$1; shift
  cmake -S . -B "$dir" -DKJIT_TESTS=OFF -DKJIT_EXAMPLES=OFF "$@" >"$dir.log" 2>&1
}

stable_headers() {
  local d=$tmp/stable h before after
  configure "$d" -DLUA_INCLUDE_DIR="$luainc/" || { cat "$d.log"; return 1; }
  h=$d/kjit_lua_weak.h
  [[ -f $h ]] || { echo "  no $h"; return 1; }
  grep -q "^LUA_INCLUDE_DIR:PATH=$luainc\$" "$d/CMakeCache.txt" ||
    { echo "  cached: $(grep '^LUA_INCLUDE_DIR' "$d/CMakeCache.txt")"; return 1; }
  before=$(stat -c '%Y %s' "$h"; md5sum <"$h")
  sleep 1.1   # a rewrite would show in the time
  configure "$d" -DLUA_INCLUDE_DIR="$luainc" || { cat "$d.log"; return 1; }
  after=$(stat -c '%Y %s' "$h"; md5sum <"$h")
  [[ "$before" == "$after" ]] || { echo "  $h changed: $before / $after"; return 1; }
  ! grep -q "$luainc" "$h" || { echo "  $h names the directory"; return 1; }
}

# The plain route (pkg-config finds the headers), configured twice.
stable_default() {
  local d=$tmp/plain h before after
  configure "$d" || { cat "$d.log"; return 1; }
  h=$d/kjit_lua_weak.h
  before=$(stat -c '%Y %s' "$h"; md5sum <"$h")
  sleep 1.1
  configure "$d" || { cat "$d.log"; return 1; }
  after=$(stat -c '%Y %s' "$h"; md5sum <"$h")
  [[ "$before" == "$after" ]] || { echo "  $h changed"; return 1; }
  ! grep -q '^LUA_INCLUDE_DIR:PATH=.*/$' "$d/CMakeCache.txt" ||
    { echo "  cached with a trailing slash"; return 1; }
}

# An llvm-config that is not 14 is refused, with the package to install.
other_llvm() {
  local fake=$tmp/llvm-config-fake d=$tmp/other
  printf '#!/bin/sh\necho 15.0.7\n' >"$fake"
  chmod +x "$fake"
  if configure "$d" -DLLVM_CONFIG="$fake"; then echo "  accepted LLVM 15"; return 1; fi
  said "$d.log" "kjit needs LLVM 14, but $fake reports '15.0.7'" &&
    said "$d.log" "sudo apt-get install llvm-14-dev," || { cat "$d.log"; return 1; }
}

no_llvm() {
  local d=$tmp/none
  if configure "$d" -DLLVM_CONFIG="$tmp/nowhere/llvm-config"; then
    echo "  configured without LLVM"; return 1
  fi
  said "$d.log" "kjit needs LLVM 14" && said "$d.log" "sudo apt-get install llvm-14-dev," ||
    { cat "$d.log"; return 1; }
}

check "a second configure (another spelling of the Lua directory) rewrites no header" stable_headers
check "two plain configures rewrite no header" stable_default
check "an llvm-config of another version is refused, naming llvm-14-dev" other_llvm
check "a missing llvm-config is refused, naming llvm-14-dev" no_llvm

echo "$passed $failed 0" >"$results"
echo "test_configure: $passed passed, $failed failed"
((failed == 0))
