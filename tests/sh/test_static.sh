#!/usr/bin/env bash
# tests/sh/test_static.sh: both ways of linking LLVM keep working. build/
# is one of them (the static build, KJIT_LLVM_STATIC=ON, where LLVM's
# static libraries are installed; else the shared libLLVM); this script
# builds the other one (build-shared/ or build-static/) and tests it:
#   - kjit.so needs no libLLVM when loaded (both builds load LLVM on the
#     first compile);
#   - where LLVM is in kjit_llvm.so (the static build on x86-64 Linux, in
#     build/ or here): kjit.so holds none of it, and the module exports
#     only the LLVM functions kjit calls;
#   - a few test files (test_cache's among them: require "kjit" maps no
#     LLVM, a cache hit neither);
#   - it installs (tests/sh/test_install.sh: the module, and C hosts whose
#     libkjit.so finds kjit_llvm.so beside the module, also in a moved
#     tree).
# tools/gpu_pack.sh packs the static build for the GPU machine. Writes
# "P F 0" to build/test-results/test_static.txt like the other tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

if [[ "$(sed -n 's/^KJIT_LLVM_STATIC:BOOL=//p' build/CMakeCache.txt 2>/dev/null)" == ON ]]; then
  other=build-shared static=OFF
else
  other=build-static static=ON
fi
echo "test_static: build/ has KJIT_LLVM_STATIC=$([[ $static == ON ]] && echo OFF || echo ON); testing $other/"

build() {
  cmake -S . -B "$other" -DKJIT_LLVM_STATIC=$static -DKJIT_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build "$other" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
}
no_libllvm() { ! grep -qi 'libLLVM' <<<"$(ldd "$other/kjit.so")"; }
# kjit.so holds none of LLVM (a few MB, not tens), kjit_llvm.so exports
# nothing but LLVM functions and its version
kjit_so_light() { (( $(stat -c %s "$1/kjit.so") < 20000000 )); }
backend_exports() {
  local other_names
  other_names=$(nm -D --defined-only "$1/kjit_llvm.so" | awk '{print $3}' |
                grep -v -e '^LLVM' -e '^kjit_llvm_backend_version$')
  [[ -z "$other_names" ]] || { echo "  exports: $(head -5 <<<"$other_names")"; return 1; }
  # (grep reads all of nm's output: with -q it could exit first, and nm's
  # SIGPIPE failed the pipeline under pipefail now and then)
  nm -D --defined-only "$1/kjit_llvm.so" | grep ' LLVMOrcCreateLLJIT$' >/dev/null
}
# (test_cache.lua: require "kjit" maps no LLVM, a cache hit neither)
lua_test() {
  local env=()
  if [[ -f "$other/kjit_llvm.so" ]] || grep -q '^KJIT_LLVM_DLOPEN:BOOL=ON' "$other/CMakeCache.txt"; then
    env=(KJIT_TEST_LLVM_DLOPEN=1)
  fi
  env "${env[@]}" lua5.4 tests/lua/harness.lua "$other" "tests/lua/$1.lua" >/dev/null
}
installs() {
  bash tests/sh/test_install.sh "$other" "$other/test-results/sh.test_install.txt"
}

check "$other build" build
check "kjit.so does not need libLLVM" no_libllvm
for d in build "$other"; do
  if [[ -f "$d/kjit_llvm.so" ]]; then
    check "$d/kjit.so holds no LLVM" kjit_so_light "$d"
    check "$d/kjit_llvm.so exports only LLVM's functions" backend_exports "$d"
  fi
done
for t in test_buffer test_jit_api test_jit_diff_loops test_jit_errors test_cuda_kernels test_cache; do
  check "$t with $other" lua_test "$t"
done
check "$other installs (Lua and C hosts)" installs

echo "test_static: $passed passed, $failed failed"
mkdir -p build/test-results
echo "$passed $failed 0" > build/test-results/test_static.txt
((failed == 0))
