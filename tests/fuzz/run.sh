#!/usr/bin/env bash
# tests/fuzz/run.sh [seconds] [extra libFuzzer flags...]: a long fuzzing
# session of build-fuzz/fuzz_compile (build it with tests/fuzz/build.sh).
#
# Fork mode with one job: a crash, timeout or out-of-memory ends only the
# child process; libFuzzer saves the input under build-fuzz/artifacts/ and
# goes on (-ignore_crashes/-ignore_timeouts/-ignore_ooms). Timeouts are not
# bugs here: compiled code cannot be interrupted, so an input that loops
# forever in compiled code runs until -timeout (15 s: generous, a loaded
# machine compiles slowly). Crashes and sanitizer reports are bugs:
# artifacts/crash-* (and leak-*), replay one with
#   build-fuzz/fuzz_compile build-fuzz/artifacts/crash-...
# New interesting inputs go to build-fuzz/corpus/ (tests/fuzz/corpus/ is
# read, never written). To stop early, kill the fuzzer's process group
# (kill -- -PGID): killing the parent alone leaves the running job behind.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs=${1:-3600}; shift || true
out=${KJIT_FUZZ_DIR:-build-fuzz}
mkdir -p "$out/corpus" "$out/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$out/fuzz_compile" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -timeout=15 -rss_limit_mb=4096 -max_len=16384 -dict=tests/fuzz/lua.dict \
  -max_total_time="$secs" -artifact_prefix="$out/artifacts/" "$@" \
  "$out/corpus" tests/fuzz/corpus
