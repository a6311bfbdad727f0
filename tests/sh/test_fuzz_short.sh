#!/usr/bin/env bash
# tests/sh/test_fuzz_short.sh: a short libFuzzer session on the kjit
# pipeline (tests/fuzz/fuzz_compile.c) plus a replay of every saved crash
# input. Builds build-fuzz/ with tests/fuzz/build.sh (clang-14,
# -fsanitize=fuzzer,address,undefined), then:
#   1. replays tests/fuzz/regress/* (inputs that once crashed; one check
#      each: must run without a crash or a sanitizer report);
#   2. fuzzes for KJIT_FUZZ_RUNS (default 20000) executions starting from
#      tests/fuzz/corpus/ (fork mode, one job; timeouts, i.e. inputs that
#      loop forever in compiled code, and out-of-memory are not failures;
#      crashes, sanitizer reports and leaks are). A count, not a time, so
#      that a busy machine changes how long this takes, not what it covers
#      (about 80 s on the 2-core development machine). Fork mode stops at
#      the end of the job that reaches the count, so a few more run. The
#      seed is random and printed; KJIT_FUZZ_SEED=<seed> repeats the
#      parent's choices (the jobs' own timing still varies).
#   3. replays every chunk of tests/c/bytecode_fixtures/ (release chunks
#      and regress-*.luac, inputs of fuzz_bytecode that once failed) on
#      the bytecode front end (tests/fuzz/fuzz_bytecode.c), one check each;
#   4. fuzzes the bytecode front end for KJIT_FUZZ_BYTECODE_RUNS (default
#      200000) executions from those chunks (a few seconds), same seed.
# A failed fuzz run prints its seed, the failing input's path, the command
# that replays it and the input itself in base64 (a CI log is enough to
# replay it: `base64 -d > crash.bin`).
# Writes "P F S" to build/test-results/test_fuzz_short.txt. Skips (S=1)
# when clang-14 cannot build a libFuzzer target.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=${KJIT_FUZZ_RUNS:-20000}
seed=${KJIT_FUZZ_SEED:-$((RANDOM * 32768 + RANDOM + 1))}
out=${KJIT_FUZZ_DIR:-build-fuzz}
rdir=${KJIT_RESULTS_DIR:-build/test-results}
results=$rdir/test_fuzz_short.txt
mkdir -p "$rdir"

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

mkdir -p "$out"
blog=$out/build.log
nice -n 10 bash tests/fuzz/build.sh >"$blog" 2>&1
rc=$?
if ((rc == 3)); then
  echo "SKIP test_fuzz_short: $(tail -n 3 "$blog" | tr '\n' ' ')"
  echo "0 0 1" > "$results"
  exit 0
fi
check "build the fuzz target" test "$rc" -eq 0
if ((rc != 0)); then
  tail -n 30 "$blog"
  echo "$passed $failed 0" > "$results"
  exit 1
fi

# inputs <target> <files...>: what a failure needs to be replayed: each
# file's path, the replay command and (up to 64 KB) its bytes in base64
inputs() {
  local target=$1 f; shift
  for f in "$@"; do
    echo "failing input: $f ($(wc -c <"$f") bytes); replay: $out/$target $f"
    if (($(wc -c <"$f") <= 65536)); then
      echo "--- base64 of $(basename "$f") (base64 -d > $(basename "$f"))"
      base64 -w 76 "$f"
      echo "--- end of $(basename "$f")"
    fi
  done
}

export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
replay() {
  "$out/fuzz_compile" -timeout=20 -rss_limit_mb=4096 "$1" >"$out/replay.log" 2>&1 ||
    { tail -n 40 "$out/replay.log"; return 1; }
}
for f in tests/fuzz/regress/*; do
  [[ -f "$f" ]] || continue
  check "replay $(basename "$f")" replay "$f"
done

fuzz() {
  local work rc
  work=$(mktemp -d)
  rm -f "$out"/short-*
  # Fork mode, one job: an input that loops forever in compiled code (it
  # cannot be interrupted) is a timeout that ends only the child, and
  # timeouts are not bugs; a crash, a sanitizer report or a leak stops the
  # run with a non-zero status and leaves $out/short-crash-* (or leak-*).
  # The checked-in corpus is only read; new inputs go to a scratch dir.
  "$out/fuzz_compile" -fork=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -runs="$runs" -seed="$seed" -timeout=20 -rss_limit_mb=4096 \
    -max_len=16384 -dict=tests/fuzz/lua.dict -artifact_prefix="$out/short-" \
    "$work" tests/fuzz/corpus >"$out/fuzz_short.log" 2>&1
  rc=$?
  rm -rf "$work"
  grep -E '^#[0-9]+: cov' "$out/fuzz_short.log" | tail -n 1
  local bad
  bad=$(find "$out" -maxdepth 1 \( -name 'short-crash-*' -o -name 'short-leak-*' \) | head -n 5)
  # 70 is libFuzzer's timeout exit code: fork mode can still end with it
  # (a child looping in compiled code when the run ends), and
  # timeouts are not bugs (see above)
  if { ((rc != 0)) && ((rc != 70)); } || [[ -n "$bad" ]]; then
    grep -B 5 -A 40 -m 1 -E 'ERROR|runtime error|SUMMARY' "$out/fuzz_short.log"
    echo "fuzz_compile failed: exit status $rc, seed $seed (KJIT_FUZZ_SEED=$seed repeats it)"
    echo "crash inputs: ${bad:-none saved}"
    # shellcheck disable=SC2086
    [[ -n "$bad" ]] && inputs fuzz_compile $bad
    return 1
  fi
}
echo "fuzzing $runs executions, seed $seed (KJIT_FUZZ_SEED=$seed repeats it)"
check "fuzz $runs executions from tests/fuzz/corpus" fuzz

# The bytecode front end and IR builder (tests/fuzz/fuzz_bytecode.c) on
# binary chunks, from the fixtures of tests/c/test_bytecode.c (regression
# inputs among them): each replayed, then fuzzed from. No child
# processes, so a hang is a failure too.
replay_bytecode() {
  "$out/fuzz_bytecode" -timeout=20 -rss_limit_mb=2048 "$1" >"$out/replay_bc.log" 2>&1 ||
    { tail -n 60 "$out/replay_bc.log"; return 1; }
}
for f in tests/c/bytecode_fixtures/*.luac; do
  [[ -f "$f" ]] || continue
  check "replay bytecode $(basename "$f")" replay_bytecode "$f"
done

bc_runs=${KJIT_FUZZ_BYTECODE_RUNS:-200000}
fuzz_bytecode() {
  local work rc bad
  work=$(mktemp -d)
  rm -f "$out"/short-bc-*
  "$out/fuzz_bytecode" -runs="$bc_runs" -seed="$seed" -timeout=20 -rss_limit_mb=2048 \
    -artifact_prefix="$out/short-bc-" "$work" tests/c/bytecode_fixtures >"$out/fuzz_bytecode.log" 2>&1
  rc=$?
  rm -rf "$work"
  grep -E '^Done [0-9]+ runs' "$out/fuzz_bytecode.log"
  if ((rc != 0)); then
    # the harness's own report of invalid IR (the function, the verifier's
    # message, the IR), else the sanitizer's or libFuzzer's
    grep -A 60 -m 1 '^fuzz_bytecode: ' "$out/fuzz_bytecode.log" ||
      grep -B 5 -A 40 -m 1 -E 'ERROR|runtime error|SUMMARY|deadly' "$out/fuzz_bytecode.log"
    bad=$(find "$out" -maxdepth 1 -name 'short-bc-*' | head -n 5)
    echo "fuzz_bytecode failed: exit status $rc, seed $seed (KJIT_FUZZ_SEED=$seed repeats it)"
    echo "failing inputs: ${bad:-none saved}"
    # shellcheck disable=SC2086
    [[ -n "$bad" ]] && inputs fuzz_bytecode $bad
    return 1
  fi
}
echo "fuzzing the bytecode front end $bc_runs executions, seed $seed"
check "fuzz_bytecode $bc_runs executions from tests/c/bytecode_fixtures" fuzz_bytecode

echo "test_fuzz_short: $passed passed, $failed failed"
echo "$passed $failed 0" > "$results"
((failed == 0))
