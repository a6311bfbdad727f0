#!/bin/sh
# tests/c/bytecode_fixtures/make.sh: regenerates the binary chunks that
# tests/c/test_bytecode.c decodes, from release.lua:
#   release-5.4.8.luac, release-5.4.8-s.luac  Lua 5.4.8 (plain, stripped)
#   release-5.4.3.luac                        Lua 5.4.3
#   release-5.4.4-s.luac                      Debian's luac5.4 -s (5.4.4)
#   release-5.3.6.luac, release-5.5.1.luac    other versions, to be refused
# The other releases are built in a scratch directory from the Lua sources
# that lupa's source package carries:
#   pip download lupa==2.8 --no-binary :all: --no-deps && tar xzf lupa-2.8.tar.gz
#   pip download lupa==1.10 --no-binary :all: --no-deps && tar xzf lupa-1.10.tar.gz
#   LUPA=$PWD/lupa-2.8 LUPA_OLD=$PWD/lupa-1.10 sh tests/c/bytecode_fixtures/make.sh
# (lupa 2.8 carries Lua 5.3.6, 5.4.8 and 5.5.1; lupa 1.10 carries 5.4.3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${LUPA:?set LUPA to an unpacked lupa-2.8 source tree}"
: "${LUPA_OLD:?set LUPA_OLD to an unpacked lupa-1.10 source tree}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/dump.lua" <<'LUA'
local f = assert(loadfile(arg[1]))
local out = assert(io.open(arg[2], "wb"))
out:write(string.dump(f, arg[3] == "s"))
out:close()
LUA
for v in 53 54 55 543; do
  mkdir -p "$work/$v"
  dir=$LUPA/third-party/lua$v
  [ "$v" = 543 ] && dir=$LUPA_OLD/third-party/lua
  (cd "$dir" &&
   cc -O1 -w -DLUA_USE_POSIX -o "$work/$v/lua" \
      $(ls *.c | grep -v -e '^luac\.c$' -e '^onelua\.c$' -e '^ltests\.c$') -lm)
done
cd "$here"
"$work/54/lua" "$work/dump.lua" release.lua release-5.4.8.luac
"$work/54/lua" "$work/dump.lua" release.lua release-5.4.8-s.luac s
"$work/543/lua" "$work/dump.lua" release.lua release-5.4.3.luac
"$work/53/lua" "$work/dump.lua" release.lua release-5.3.6.luac
"$work/55/lua" "$work/dump.lua" release.lua release-5.5.1.luac
luac5.4 -s -o release-5.4.4-s.luac release.lua
"$work/54/lua" -v
"$work/543/lua" -v
"$work/53/lua" -v
"$work/55/lua" -v
luac5.4 -v
