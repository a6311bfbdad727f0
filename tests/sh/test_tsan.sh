#!/usr/bin/env bash
# tests/sh/test_tsan.sh: the threaded host tests under ThreadSanitizer.
# Builds build-tsan/ (the library objects and tests/c/test_threads.c,
# test_callval_handoff.c and test_callsite_race.c only, compiled with
# -fsanitize=thread) and runs test_threads: several lua_States compiling,
# calling and collecting at the same time in different pthreads, plus the
# parallel thread pool; test_callval_handoff: one state used by two
# threads in turn; and test_callsite_race: one call site's native cache
# used by two threads (a state each), its owner refilling it between its
# calls while the other calls and tries to fill. Any data race TSan sees
# in kjit's own code is a failure (halt_on_error). LLVM and liblua are not instrumented: races
# inside them are not seen, their locks are (pthread interceptors); those
# libNVVM makes are ignored (tests/sh/tsan.supp).
#
#   bash tests/sh/test_tsan.sh           # writes build/test-results/test_tsan.txt
#
# Writes "P F S" like the other tests; skips (S=1) when the compiler cannot
# link a -fsanitize=thread program.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${KJIT_TSAN_DIR:-build-tsan}
rdir=${KJIT_RESULTS_DIR:-build/test-results}
results=$rdir/test_tsan.txt
jobs=${KJIT_TSAN_JOBS:-2}
mkdir -p "$rdir" "$out"

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

# Can this compiler build a TSan program at all (libtsan installed)?
probe=$out/probe.c
echo 'int main(void) { return 0; }' > "$probe"
if ! cc -fsanitize=thread "$probe" -o "$out/probe" 2>/dev/null; then
  echo "SKIP test_tsan: cc cannot link -fsanitize=thread (libtsan missing)"
  echo "0 0 1" > "$results"
  exit 0
fi

flags="-fsanitize=thread -g -O1 -fno-omit-frame-pointer"
blog=$out/build.log
{
  cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKJIT_SANITIZE=OFF \
        -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
        -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread &&
  nice -n 10 cmake --build "$out" -j "$jobs" --target test_threads test_callval_handoff test_callsite_race
} >"$blog" 2>&1
rc=$?
check "build test_threads, test_callval_handoff and test_callsite_race with -fsanitize=thread" test "$rc" -eq 0
if ((rc != 0)); then
  tail -n 30 "$blog"
  echo "$passed $failed 0" > "$results"
  exit 1
fi

# halt_on_error: the first race fails the run; second_deadlock_stack for
# lock-order reports. The test's own results go to a file of its own.
# tsan.supp: libNVVM's own locking, which TSan cannot see (the file says why).
# test_callval_handoff: one state used by two threads in turn.
# test_callsite_race: one call site used by two threads (a state each).
for t in test_threads test_callval_handoff test_callsite_race; do
  log=$out/$t.log
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 suppressions=$PWD/tests/sh/tsan.supp ${TSAN_OPTIONS:-}" \
    "$out/$t" "$out/$t.txt" >"$log" 2>&1
  rc=$?
  before=$failed
  check "$t passes" test "$rc" -eq 0
  check "$t: no ThreadSanitizer report" bash -c "! grep -q 'WARNING: ThreadSanitizer' '$log'"
  if ((failed > before)); then sed -n '1,80p' "$log"; fi
done
echo "test_tsan: $passed passed, $failed failed"
echo "$passed $failed 0" > "$results"
((failed == 0))
