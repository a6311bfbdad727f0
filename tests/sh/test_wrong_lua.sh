#!/usr/bin/env bash
# tests/sh/test_wrong_lua.sh: Lua 5.1, 5.3 and LuaJIT (those installed)
# loading kjit.so fail at `require "kjit"` with kjit's own message
# ("kjit needs Lua 5.4"), not with a dynamic-linker error, and Lua 5.4
# still loads it; CMake refuses the headers of another Lua.
#
#   test_wrong_lua.sh <dir of kjit.so> <results file>
#
# Writes "P F S" to the results file (ctest registers it as sh.test_wrong_lua).
set -uo pipefail
dir=$1 results=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

passed=0 failed=0 skipped=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

refused() {  # refused <interpreter>
  local out
  if out=$(LUA_CPATH="$dir/?.so" "$1" -e 'require "kjit"' 2>&1); then
    echo "  $1 loaded kjit"; return 1
  fi
  grep -q 'kjit needs Lua 5.4' <<<"$out" || { echo "  $1 says: $out"; return 1; }
}

accepted() {
  LUA_CPATH="$dir/?.so" lua5.4 -e 'assert(require("kjit").zeros(2).size == 2)'
}

# Configuring against the headers of another Lua stops with kjit's message
# (before anything is built; the cache is thrown away).
cmake_refuses() {
  local tmp rc
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/kjit-wronglua.XXXXXX")
  echo '#define LUA_VERSION_NUM	503' > "$tmp/lua.h"
  cmake -S "$src" -B "$tmp/build" -DLUA_INCLUDE_DIR="$tmp" >"$tmp/log" 2>&1
  rc=$?
  if ((rc == 0)) || ! grep -q "kjit needs Lua 5.4: $tmp/lua.h has LUA_VERSION_NUM" "$tmp/log"; then
    tail -5 "$tmp/log"; rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp"
}

check "lua5.4 requires kjit" accepted

# A host with Lua linked in statically and none of its API exported (no
# -Wl,-E): dlopen of kjit.so fails with the linker's message, and nothing
# calls a NULL Lua function (the Lua API references are weak but for a
# few, CMakeLists.txt).
no_lua_exported() {
  local tmp out
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/kjit-nolua.XXXXXX")
  cat > "$tmp/host.c" <<'EOC'
#include <stdio.h>
#include <dlfcn.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  (void)argc;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) { printf("dlopen failed: %s\n", dlerror()); lua_close(L); return 0; }
  lua_CFunction f = (lua_CFunction)dlsym(h, "luaopen_kjit");
  lua_pushcfunction(L, f);
  printf("loaded: status %d\n", lua_pcall(L, 0, 1, 0));
  lua_close(L);
  return 0;
}
EOC
  local lib
  lib=$(pkg-config --variable=libdir lua5.4 2>/dev/null)/liblua5.4.a
  if [[ ! -f "$lib" ]]; then echo "  (no static liblua5.4.a: skipped)"; rm -rf "$tmp"; return 0; fi
  cc -o "$tmp/host" "$tmp/host.c" $(pkg-config --cflags lua5.4) "$lib" -lm -ldl || { rm -rf "$tmp"; return 1; }
  out=$("$tmp/host" "$dir/kjit.so" 2>&1)
  local rc=$?
  rm -rf "$tmp"
  ((rc == 0)) && grep -q 'dlopen failed: .*undefined symbol: lua_' <<<"$out" || { echo "  rc $rc: $out"; return 1; }
}
check "a host that exports no Lua API: dlopen fails, no crash" no_lua_exported
check "cmake -DLUA_INCLUDE_DIR=<Lua 5.3 headers> is refused" cmake_refuses
for other in lua5.1 lua5.3 luajit; do
  if command -v "$other" >/dev/null; then
    check "$other: require \"kjit\" fails with \"kjit needs Lua 5.4\"" refused "$other"
  else
    skipped=$((skipped + 1)); echo "SKIP $other is not installed"
  fi
done

mkdir -p "$(dirname "$results")"
echo "$passed $failed $skipped" > "$results"
echo "test_wrong_lua: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
