#!/usr/bin/env bash
# tools/build_lua.sh: build a Lua 5.4 from its sources, as Lua's own
# makefile does on Linux (static liblua.a, an interpreter that exports the
# Lua API to the C modules it loads), and install it under PREFIX:
#
#   bash tools/build_lua.sh PREFIX [SOURCE]
#
#   PREFIX/bin/lua, PREFIX/lib/liblua.a,
#   PREFIX/include/{lua.h,luaconf.h,lualib.h,lauxlib.h}
#
# SOURCE is a directory or a .tar.gz holding Lua's .c files (flat, or in
# src/ as in Lua's releases). Without it, the Lua 5.4 that the source
# package of lupa (PyPI) bundles is used: it is downloaded once with
# `pip download` into ${KJIT_CACHE:-~/.cache/kjit} and checked against its
# published sha256. Exit status 3: it could not be downloaded. Then, to build kjit
# against that Lua (tests/sh/test_other_lua.sh does):
#
#   cmake -S . -B build-lua -DLUA_INCLUDE_DIR=PREFIX/include \
#         -DLUA_LIBRARY=PREFIX/lib/liblua.a -DLUA_EXECUTABLE=PREFIX/bin/lua
set -euo pipefail
prefix=${1:?usage: build_lua.sh PREFIX [SOURCE]}
src=${2:-}
lupa=lupa==2.8   # bundles Lua 5.4.8
# PyPI's files never change: a download must be exactly this one
lupa_sha256=d8022641b9ec8ecf2c5ecbe9f47e5a70e0b87c4b5ae921b92cb02a638e0acd08
cache=${KJIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kjit}
cc=${CC:-cc}
jobs=${JOBS:-2}

work=$(mktemp -d "${TMPDIR:-/tmp}/kjit-lua.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [[ -z "$src" ]]; then
  mkdir -p "$cache"
  src=$(ls "$cache"/lupa-2.8.tar.gz 2>/dev/null || true)
  if [[ -z "$src" ]]; then
    echo "build_lua.sh: downloading the $lupa source package (PyPI) into $cache"
    if ! python3 -m pip download --quiet --no-binary :all: --no-deps -d "$cache" "$lupa" >&2; then
      echo "build_lua.sh: cannot download $lupa (no PyPI?); give a Lua source as SOURCE" >&2
      exit 3
    fi
    src=$cache/lupa-2.8.tar.gz
  fi
  if [[ "$(sha256sum "$src" | cut -d' ' -f1)" != "$lupa_sha256" ]]; then
    echo "build_lua.sh: $src is not the $lupa published on PyPI (sha256 differs); removed" >&2
    rm -f "$src"
    exit 1
  fi
fi
if [[ -f "$src" ]]; then
  tar -xzf "$src" -C "$work"
  # lupa keeps Lua 5.4 in third-party/lua54; a Lua release in lua-5.4.x/src
  dir=$(dirname "$(find "$work" -path '*lua54/lapi.c' -o -path '*lua-5.4*/src/lapi.c' | head -1)")
else
  dir=$src
  [[ -f "$dir/lapi.c" ]] || dir=$src/src
fi
[[ -f "$dir/lapi.c" && -f "$dir/lua.h" ]] || { echo "build_lua.sh: no Lua sources in $src" >&2; exit 1; }
grep -q '#define LUA_VERSION_NUM[[:space:]]*504' "$dir/lua.h" ||
  { echo "build_lua.sh: $dir/lua.h is not Lua 5.4" >&2; exit 1; }

# Lua's makefile, target linux: -DLUA_COMPAT_5_3 -DLUA_USE_LINUX, and the
# interpreter linked with -Wl,-E so that C modules see the Lua API.
cflags=(-std=gnu99 -O2 -Wall -DLUA_COMPAT_5_3 -DLUA_USE_LINUX)
mkdir -p "$work/obj"
core=()
for f in "$dir"/l*.c; do
  case $(basename "$f") in lua.c|luac.c|ltests.c|onelua.c) continue ;; esac
  core+=("$f")
done
printf '%s\n' "${core[@]}" "$dir/lua.c" |
  xargs -P "$jobs" -I{} sh -c '"$0" "$@" -c "{}" -o "'"$work"'/obj/$(basename "{}" .c).o"' "$cc" "${cflags[@]}"
mkdir -p "$prefix/bin" "$prefix/lib" "$prefix/include"
rm -f "$prefix/lib/liblua.a"
objs=()
for f in "${core[@]}"; do objs+=("$work/obj/$(basename "$f" .c).o"); done
ar rcs "$prefix/lib/liblua.a" "${objs[@]}"
"$cc" -o "$prefix/bin/lua" "$work/obj/lua.o" "$prefix/lib/liblua.a" -Wl,-E -ldl -lm
cp "$dir"/lua.h "$dir"/luaconf.h "$dir"/lualib.h "$dir"/lauxlib.h "$prefix/include/"
echo "build_lua.sh: $("$prefix/bin/lua" -v 2>&1) in $prefix"
