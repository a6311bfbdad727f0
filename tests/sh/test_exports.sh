#!/usr/bin/env bash
# tests/sh/test_exports.sh: libkjit.so (for embedding) and kjit.so (the Lua
# module) export the public C API and nothing else.
#
#   test_exports.sh <results-file> <library>...
#
# For each library, `nm -D --defined-only` must list only kjit_* names,
# luaopen_kjit, and the section markers every GNU ld output defines
# (__bss_start, _edata, _end; not code); and every function declared
# KJIT_API in include/kjit.h must be there. Writes "P F 0" to the results
# file like the other tests (ctest registers it as sh.test_exports).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
results=$1; shift

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

# The API as the header declares it: "KJIT_API <type> [*]name(".
api=$(grep -E '^KJIT_API' include/kjit.h | sed -E 's/^[^(]*[ *]([A-Za-z_][A-Za-z0-9_]*)\(.*/\1/' | sort -u)
check "kjit.h declares the API (luaopen_kjit, kjit_call, ...)" \
  bash -c "grep -qx luaopen_kjit <<<'$api' && grep -qx kjit_call <<<'$api'"

only_public() {  # only_public <lib>: no other defined dynamic symbol
  local extra
  extra=$(nm -D --defined-only "$1" | awk '{print $NF}' |
          grep -Ev '^(kjit_[A-Za-z0-9_]+|luaopen_kjit|__bss_start|_edata|_end)$')
  if [[ -n $extra ]]; then echo "  $1 also exports:"; sed 's/^/    /' <<<"$extra" | head -20; return 1; fi
}
has_api() {  # has_api <lib>: every declared function is exported
  local syms missing
  syms=$(nm -D --defined-only "$1" | awk '$2 == "T" {print $NF}' | sort -u)
  missing=$(comm -23 <(echo "$api") <(echo "$syms"))
  if [[ -n $missing ]]; then echo "  $1 lacks:"; sed 's/^/    /' <<<"$missing"; return 1; fi
}

for lib in "$@"; do
  check "$(basename "$lib") exists" test -f "$lib"
  check "$(basename "$lib") exports only kjit_* and luaopen_kjit" only_public "$lib"
  check "$(basename "$lib") exports every KJIT_API function" has_api "$lib"
done

echo "test_exports: $passed passed, $failed failed"
mkdir -p "$(dirname "$results")"
echo "$passed $failed 0" > "$results"
((failed == 0))
