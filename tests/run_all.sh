#!/usr/bin/env bash
# tests/run_all.sh: the kjit test suite.
#
#   bash tests/run_all.sh --quick   # everyday: build/ and its whole test
#                                   # corpus (ctest, in parallel)
#   bash tests/run_all.sh           # everything, as CI runs it
#
# Stages, each timed (the times are printed before the summary and kept in
# build/stage-times.txt):
#   1. tools/setup.sh [--asan]: install what is missing, build build/ (and,
#      in the full run, build-asan/: ASan + UBSan); builds are incremental;
#   2. ctest in build/ (--quick stops after this one);
#   3. ctest in build-asan/;
#   4. tests/sh/test_static.sh (the other LLVM build than build/'s, a few tests on
#      it), tests/sh/test_luarocks.sh (lint, make, require, remove, pack and
#      install offline with LuaRocks), tests/sh/test_other_lua.sh (Lua
#      5.4.8 built from source, kjit built and tested against it),
#      tests/sh/test_bench_peers.sh (the benchmark's C and
#      LuaJIT peers compute what the Lua kernels compute),
#      tests/sh/test_fuzz_short.sh (libFuzzer: the regression inputs, then a
#      fixed number of executions), tests/sh/test_tsan.sh (the threaded
#      host test under ThreadSanitizer) and tests/sh/test_valgrind.sh
#      (memcheck on the host examples);
#   5. sum the "P F S" counts every test file writes to
#      build*/test-results/*.txt and print, as the very last line,
#        tests: <P> passed, <F> failed, <S> skipped
#
# No stage has a time budget: a slow or busy machine makes the run longer,
# never red. Time limits only catch hangs: each ctest test has one
# (TIMEOUT in tests/tests.cmake, else KJIT_TEST_TIMEOUT, default 1200 s),
# and each tests/sh script has KJIT_HANG_LIMIT (default 3600 s).
#
# Exits non-zero if a build, a ctest run or a script failed, or if any test
# failed. A ctest test that fails without recording a failure (a crash, a
# sanitizer report, a timeout) counts as one failed test.
# Environment: KJIT_CTEST_JOBS (parallel tests, default nproc),
# KJIT_TEST_TIMEOUT, KJIT_HANG_LIMIT (above).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_all.sh: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

jobs=${KJIT_CTEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
test_timeout=${KJIT_TEST_TIMEOUT:-1200}
hang_limit=${KJIT_HANG_LIMIT:-3600}
if ((quick)); then builds=(build); else builds=(build build-asan); fi
status=0
extra_failed=0

banner() { printf '\n=== %s ===\n' "$*"; }

# Stage times: stage_begin NAME ... stage_end; printed with the summary.
stage_names=() stage_secs=()
run_began=$SECONDS
stage_begin() { stage_name=$1; stage_t0=$SECONDS; banner "$1"; }
stage_end() { stage_names+=("$stage_name"); stage_secs+=($((SECONDS - stage_t0))); }

if ((quick)); then setup_args=(); else setup_args=(--asan); fi
stage_begin "setup and build (tools/setup.sh${setup_args[*]:+ ${setup_args[*]}})"
if ! bash tools/setup.sh "${setup_args[@]}" </dev/null; then
  echo "run_all.sh: setup or build failed; no tests were run"
  echo "tests: 0 passed, 1 failed, 0 skipped"
  exit 1
fi
stage_end

# Stale results from earlier runs must not count.
for b in "${builds[@]}"; do
  rm -f "$b"/test-results/*.txt "$b"/Testing/Temporary/LastTestsFailed*.log
  mkdir -p "$b/test-results"
done

for b in "${builds[@]}"; do
  stage_begin "ctest --test-dir $b"
  # the hang guard is per test (tests.cmake sets longer ones where needed);
  # the timeout(1) around ctest only stops a ctest that itself hangs
  timeout --kill-after=30 "$hang_limit" \
    ctest --test-dir "$b" --output-on-failure -j"$jobs" --timeout "$test_timeout" </dev/null
  rc=$?
  if ((rc != 0)); then
    status=1
    ((rc == 124 || rc == 137)) && echo "run_all.sh: ctest in $b hung: stopped after ${hang_limit}s"
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
  stage_end
done

# run_script NAME: runs tests/sh/NAME.sh; a failure that wrote no counts to
# build/test-results/NAME.txt counts as one failed test.
run_script() {
  stage_begin "tests/sh/$1.sh"
  rm -f "build/test-results/$1.txt"
  timeout --kill-after=30 "$hang_limit" bash "tests/sh/$1.sh" </dev/null
  local rc=$?
  if ((rc != 0)); then
    status=1
    ((rc == 124 || rc == 137)) && echo "run_all.sh: tests/sh/$1.sh hung: stopped after ${hang_limit}s"
    [[ -s "build/test-results/$1.txt" ]] || extra_failed=$((extra_failed + 1))
  fi
  stage_end
}
if ((!quick)); then
  run_script test_static
  run_script test_luarocks
  run_script test_other_lua
  run_script test_bench_peers
  run_script test_fuzz_short
  run_script test_tsan
  run_script test_valgrind
fi

banner "summary"
{
  for i in "${!stage_names[@]}"; do
    printf '  %5d s  %s\n' "${stage_secs[$i]}" "${stage_names[$i]}"
  done
  printf '  %5d s  total\n' $((SECONDS - run_began))
} | tee build/stage-times.txt
result_files=()
for b in "${builds[@]}"; do
  for f in "$b"/test-results/*.txt; do [[ -e "$f" ]] && result_files+=("$f"); done
done
read -r P F S < <(cat /dev/null "${result_files[@]}" |
  awk '{p += $1; f += $2; s += $3} END {printf "%d %d %d\n", p, f, s}')
F=$((F + extra_failed))
for f in "${result_files[@]}"; do
  printf '  %-11s %-28s %s\n' "${f%%/*}" "$(basename "$f" .txt)" "$(cat "$f")"
done
((F > 0)) && status=1
if ((status != 0)) && ((F == 0)); then
  echo "run_all.sh: a step failed (see above) although no test recorded a failure"
fi
echo "tests: $P passed, $F failed, $S skipped"
exit "$status"
