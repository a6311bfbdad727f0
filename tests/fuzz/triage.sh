#!/usr/bin/env bash
# tests/fuzz/triage.sh [artifact...]: replays fuzzing artifacts (default:
# build-fuzz/artifacts/*) with build-fuzz/fuzz_compile and sorts them:
#   CRASH        a sanitizer report or a crash: a bug, keep it in regress/
#   LOOP         a timeout whose stack is in JIT-compiled code (frames in
#                "<unknown module>"): the input loops in compiled code, not a bug
#   HANG         a timeout anywhere else (lexer, parser, type inference,
#                LLVM...): the compiler does not terminate, a bug
#   OK           runs cleanly now (fixed, or a timeout of a loaded machine)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${KJIT_FUZZ_DIR:-build-fuzz}
(($#)) || set -- "$out"/artifacts/*
for f in "$@"; do
  [[ -f "$f" ]] || continue
  log=$(timeout 120 "$out/fuzz_compile" -timeout=10 "$f" 2>&1)
  rc=$?
  if ((rc == 0)); then kind=OK
  elif grep -q 'ERROR: libFuzzer: timeout' <<<"$log"; then
    # the innermost frames below the signal handler
    frames=$(grep -E '^ +#[0-9]+ ' <<<"$log" | grep -v -E 'sanitizer|fuzzer::|libc\.so|/libm|e_pow|e_exp|e_log' | head -n 2)
    if grep -q '<unknown module>' <<<"$frames"; then kind=LOOP; else kind=HANG; fi
  else kind=CRASH
  fi
  printf '%-6s %s\n' "$kind" "$f"
done
