#!/usr/bin/env bash
# tests/sh/test_valgrind.sh: the host examples (C programs embedding Lua
# and kjit) under valgrind memcheck: no invalid read/write, no use of
# uninitialised memory, no definitely lost block.
#   valgrind --leak-check=full --errors-for-leak-kinds=definite
#            --error-exitcode=1 --suppressions=tests/sh/valgrind.supp
# The commands are the example.* tests registered with CTest in
# KJIT_VALGRIND_BUILD (default build/, not instrumented: valgrind and ASan
# do not mix), so each example runs with its own arguments; every
# host-examples/*.c must have such a test.
# Then tests/lua/test_jit_regress.lua runs under valgrind with lua5.4 and
# KJIT_VALGRIND_BUILD/kjit.so (the Lua module path).
# Writes "P F S" to build/test-results/test_valgrind.txt; skips (S=1) when
# valgrind is not installed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bdir=${KJIT_VALGRIND_BUILD:-build}
supp=$PWD/tests/sh/valgrind.supp
rdir=${KJIT_RESULTS_DIR:-build/test-results}
results=$rdir/test_valgrind.txt
mkdir -p "$rdir"

if ! command -v valgrind >/dev/null 2>&1; then
  echo "SKIP test_valgrind: valgrind is not installed (tools/setup.sh installs it)"
  echo "0 0 1" > "$results"
  exit 0
fi

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

memcheck_in() {  # memcheck_in <dir> <exe> [args...]
  local dir=$1; shift
  (cd "$dir" && memcheck "$@")
}
memcheck() {  # memcheck <exe> [args...]
  local log
  log=$(mktemp)
  valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 \
    --suppressions="$supp" --num-callers=30 "$@" </dev/null >"$log" 2>&1
  local rc=$?
  grep -E 'ERROR SUMMARY|definitely lost' "$log" | sed 's/^==[0-9]*== /  /'
  ((rc == 0)) || tail -n 60 "$log"
  rm -f "$log"
  return "$rc"
}

n=0
declare -A seen=()
while IFS= read -r line; do
  case "$line" in
    *": Test command: "*)
      eval "cmd=(${line#*: Test command: })"   # ctest quotes each argument
      ;;
    *"Working Directory: "*)
      wd=${line#*Working Directory: }
      ;;
    *"Test #"*": example."*)
      name=${line##*example.}
      seen[$name]=1
      check "valgrind memcheck $name" memcheck_in "$wd" "${cmd[@]}"
      n=$((n + 1))
      ;;
  esac
done < <(ctest --test-dir "$bdir" -N -V -R '^example\.' 2>/dev/null)
for src in host-examples/*.c; do
  [[ -e "$src" ]] || continue
  name=$(basename "$src" .c)
  [[ -n "${seen[$name]:-}" ]] || check "$name has a ctest example.$name in $bdir" false
done
check "at least one host example ran" test "$n" -gt 0

# The Lua module path too (dlopen of kjit.so, compiles, compile and
# run-time errors): one short test file under the stock lua5.4.
check "valgrind memcheck lua5.4 test_jit_regress.lua" \
  memcheck lua5.4 tests/lua/harness.lua "$bdir" tests/lua/test_jit_regress.lua

echo "test_valgrind: $passed passed, $failed failed"
echo "$passed $failed 0" > "$results"
((failed == 0))
