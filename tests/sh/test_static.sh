#!/usr/bin/env bash
# tests/sh/test_static.sh: the KJIT_LLVM_STATIC=ON build (for shipping and
# for the GPU machine) links LLVM statically and passes the Lua tests.
# Builds build-static/, checks kjit.so needs no libLLVM at run time, then
# runs a few test files with it. Writes "P F 0" to
# build/test-results/test_static.txt like the other tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

passed=0 failed=0
check() {  # check <name> <command...>
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; fi
}

build() {
  cmake -S . -B build-static -DKJIT_LLVM_STATIC=ON -DKJIT_TESTS=OFF \
        -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build build-static -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
}
no_libllvm() { ! grep -qi 'libLLVM' <<<"$(ldd build-static/kjit.so)"; }
lua_test() { lua5.4 tests/lua/harness.lua build-static "tests/lua/$1.lua" >/dev/null; }

check "static build" build
check "kjit.so does not need libLLVM" no_libllvm
for t in test_buffer test_jit_api test_jit_diff_loops test_jit_errors test_cuda_kernels test_cache; do
  check "$t with the static build" lua_test "$t"
done

echo "test_static: $passed passed, $failed failed"
mkdir -p build/test-results
echo "$passed $failed 0" > build/test-results/test_static.txt
((failed == 0))
