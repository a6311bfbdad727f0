#!/usr/bin/env bash
# tests/run_all.sh: the whole kjit test suite, as CI runs it.
#
#   1. tools/setup.sh --asan: install what is missing, build build/ and
#      build-asan/ (ASan + UBSan);
#   2. ctest in build/, then the whole suite again in build-asan/;
#   3. tests/sh/test_static.sh (KJIT_LLVM_STATIC=ON build, a few tests on it),
#      tests/sh/test_luarocks.sh (install, require, remove with LuaRocks) and
#      tests/sh/test_bench_peers.sh (the benchmark's C and LuaJIT peers
#      compute what the Lua kernels compute), tests/sh/test_fuzz_short.sh
#      (libFuzzer: the regression inputs, then 75 s of fuzzing) and
#      tests/sh/test_valgrind.sh (memcheck on the host examples);
#   4. sum the "P F S" counts every test file writes to
#      build*/test-results/*.txt and print, as the very last line,
#        tests: <P> passed, <F> failed, <S> skipped
#
# Exits non-zero if the build, either ctest run or the LuaRocks test failed,
# or if any test failed. A ctest test that fails without recording a failure
# (a crash, a sanitizer report, a timeout) counts as one failed test.
# Environment: KJIT_CTEST_TIMEOUT (seconds for each ctest run, default 1080),
# KJIT_CTEST_JOBS (parallel tests, default nproc).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ctest_timeout=${KJIT_CTEST_TIMEOUT:-1080}
jobs=${KJIT_CTEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
builds=(build build-asan)
status=0
extra_failed=0

banner() { printf '\n=== %s ===\n' "$*"; }

banner "setup and build (tools/setup.sh --asan)"
if ! bash tools/setup.sh --asan </dev/null; then
  echo "run_all.sh: setup or build failed; no tests were run"
  echo "tests: 0 passed, 1 failed, 0 skipped"
  exit 1
fi

# Stale results from earlier runs must not count.
for b in "${builds[@]}"; do
  rm -f "$b"/test-results/*.txt "$b"/Testing/Temporary/LastTestsFailed*.log
  mkdir -p "$b/test-results"
done

for b in "${builds[@]}"; do
  banner "ctest --test-dir $b"
  timeout --kill-after=30 "$ctest_timeout" \
    ctest --test-dir "$b" --output-on-failure -j"$jobs" </dev/null
  rc=$?
  if ((rc != 0)); then
    status=1
    ((rc == 124 || rc == 137)) && echo "run_all.sh: ctest in $b stopped after ${ctest_timeout}s"
    # A failed test whose results file shows no failure crashed or was
    # killed after (or before) writing it: count it as one failure.
    log=$b/Testing/Temporary/LastTestsFailed.log
    if [[ -f "$log" ]]; then
      while IFS=: read -r _ name; do
        n=${name#lua.}; n=${n#c.}
        f=$b/test-results/$n.txt
        if [[ ! -s "$f" ]] || (($(awk '{print $2 + 0; exit}' "$f") == 0)); then
          echo "run_all.sh: $b: $name failed without recording a failed test"
          extra_failed=$((extra_failed + 1))
        fi
      done < "$log"
    elif ((rc == 124 || rc == 137)); then
      extra_failed=$((extra_failed + 1))
    fi
  fi
done

# run_script NAME LIMIT_S: runs tests/sh/NAME.sh; a failure that wrote no
# counts to build/test-results/NAME.txt counts as one failed test.
run_script() {
  banner "tests/sh/$1.sh"
  if ! timeout --kill-after=30 "$2" bash "tests/sh/$1.sh" </dev/null; then
    status=1
    [[ -s "build/test-results/$1.txt" ]] || extra_failed=$((extra_failed + 1))
  fi
}
run_script test_static 900
run_script test_luarocks 600
run_script test_bench_peers 600
run_script test_fuzz_short 900
run_script test_valgrind 1200

banner "summary"
read -r P F S < <(cat /dev/null build/test-results/*.txt build-asan/test-results/*.txt 2>/dev/null |
  awk '{p += $1; f += $2; s += $3} END {printf "%d %d %d\n", p, f, s}')
F=$((F + extra_failed))
for b in "${builds[@]}"; do
  for f in "$b"/test-results/*.txt; do
    [[ -e "$f" ]] && printf '  %-11s %-28s %s\n' "$b" "$(basename "$f" .txt)" "$(cat "$f")"
  done
done
((F > 0)) && status=1
if ((status != 0)) && ((F == 0)); then
  echo "run_all.sh: a step failed (see above) although no test recorded a failure"
fi
echo "tests: $P passed, $F failed, $S skipped"
exit "$status"
