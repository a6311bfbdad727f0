#!/usr/bin/env bash
# tests/sh/test_luarocks.sh: kjit installs, loads and uninstalls with LuaRocks.
#
# `luarocks lint` passes on the rockspec. Builds the rock from this checkout
# (luarocks make, offline, no build.luarocks/ left from before) into a
# throw-away tree, requires it from lua5.4 (never `lua`: LuaRocks makes that
# Lua 5.1), removes it, and checks it is gone. Then `luarocks pack` makes a
# source rock of the working tree (the rockspec with its source pointed at
# a local archive of the tree: the real one names the public repository)
# and `luarocks install` builds it into another tree with every network
# access refused, and lua5.4 requires it. Writes "P F 0" to
# build/test-results/test_luarocks.txt like the other tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"; return 1
  fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kjit-rocks.XXXXXX")
cleanup() { rm -rf "$tmp" "$root/build.luarocks"; }
trap cleanup EXIT

rocks=(luarocks --lua-version 5.4 --tree "$tmp")
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}

# Lua snippet run with the tree's paths (only the tree's: a kjit installed
# elsewhere on the system must not make the test pass).
only_tree() { tr ';' '\n' | grep -F "$tmp/" | paste -sd ';'; }
lua_in_tree() {
  local cpath path
  cpath=$("${rocks[@]}" path --lr-cpath | only_tree) || return 1
  path=$("${rocks[@]}" path --lr-path | only_tree) || return 1
  LUA_CPATH_5_4="$cpath" LUA_PATH_5_4="$path;;" lua5.4 -e "$1"
}

# LuaRocks' LUA_INCDIR is what CMake compiles with: the headers of
# lua5.4, copied to a directory nothing else knows, are the ones used.
incdir=$tmp/lua-headers
installed() {
  rm -rf "$root/build.luarocks"   # LuaRocks' own build dir: always start clean
  mkdir -p "$incdir" && cp "$(pkg-config --variable=includedir lua5.4)"/lua5.4/*.h "$incdir/" || return 1
  # --deps-mode=none and no network use: `make` builds the sources here.
  "${rocks[@]}" make --deps-mode=none rockspec/kjit-scm-1.rockspec LUA_INCDIR="$incdir" </dev/null |
    tee "$tmp/make.log" || return 1
  grep -qF -- "-I$incdir" "$root/build.luarocks/CMakeFiles/kjit_objs.dir/flags.make" ||
    { echo "  kjit was not compiled with LUA_INCDIR=$incdir"; return 1; }
}

loads() {
  lua_in_tree '
    local kjit = require "kjit"
    local z = kjit.zeros(3)
    assert(z.size == 3 and #z == 3, "kjit.zeros(3) does not have size 3")
    assert(package.searchpath("kjit", package.cpath):find(os.getenv("TREE"), 1, true),
           "kjit was not loaded from the LuaRocks tree")
    print("loaded " .. package.searchpath("kjit", package.cpath))'
}

removed() {
  "${rocks[@]}" remove kjit </dev/null || return 1
  if [[ -n $(find "$tmp" -name 'kjit*.so') ]]; then
    echo "kjit.so is still in the tree after remove"; return 1
  fi
  lua_in_tree 'assert(not pcall(require, "kjit"), "require \"kjit\" still works")'
}

linted() { "${rocks[@]}" lint rockspec/kjit-scm-1.rockspec </dev/null; }

# pack: an archive of the working tree (tracked and new files, as git sees
# them), a copy of the rockspec whose source is that archive.
packed() {
  mkdir -p "$tmp/pack" &&
  git ls-files -z --cached --others --exclude-standard |
    tar --null -T - --transform 's,^,kjit/,' -czf "$tmp/pack/kjit-scm.tar.gz" || return 1
  sed -e "s|^   url = .*|   url = \"file://$tmp/pack/kjit-scm.tar.gz\", dir = \"kjit\",|" \
    rockspec/kjit-scm-1.rockspec > "$tmp/pack/kjit-scm-1.rockspec" || return 1
  (cd "$tmp/pack" && luarocks --lua-version 5.4 pack kjit-scm-1.rockspec </dev/null) || return 1
  # the listing first: `unzip -l | grep -q` under pipefail fails whenever
  # grep exits before unzip has written everything (SIGPIPE)
  local listing
  listing=$(unzip -l "$tmp/pack/kjit-scm-1.src.rock") || return 1
  grep -q 'kjit-scm.tar.gz' <<<"$listing" && grep -q 'kjit-scm-1.rockspec' <<<"$listing"
}

# install the source rock offline: proxies that refuse, no rocks server
offline_install() {
  rm -f "$tmp/pack/kjit-scm.tar.gz"   # only what the .src.rock holds
  http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
    luarocks --lua-version 5.4 --tree "$tmp/tree2" --only-server="file://$tmp/noserver" \
    install --deps-mode=none "$tmp/pack/kjit-scm-1.src.rock" </dev/null || return 1
  LUA_CPATH_5_4="$tmp/tree2/lib/lua/5.4/?.so" lua5.4 -e '
    local kjit = require "kjit"
    assert(kjit.zeros(3).size == 3)
    print("loaded " .. package.searchpath("kjit", package.cpath))'
}

export TREE=$tmp
check "luarocks lint" linted
if check "luarocks make (with LuaRocks' LUA_INCDIR)" installed; then
  check "require kjit from the tree" loads
  check "luarocks remove" removed
else
  failed=$((failed + 2)); echo "FAIL (skipped the load and remove checks)"
fi
check "luarocks pack (a source rock)" packed
if [[ -f "$tmp/pack/kjit-scm-1.src.rock" ]]; then
  check "the source rock installs offline and loads" offline_install
else
  failed=$((failed + 1)); echo "FAIL (no source rock to install)"
fi

mkdir -p build/test-results
echo "$passed $failed 0" > build/test-results/test_luarocks.txt
echo "test_luarocks: $passed passed, $failed failed"
((failed == 0))
