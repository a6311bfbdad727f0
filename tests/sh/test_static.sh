#!/usr/bin/env bash
# tests/sh/test_static.sh: the KJIT_LLVM_STATIC=ON build (for shipping and
# for the GPU machine) links LLVM statically and passes the Lua tests.
# Builds build-static/, checks that kjit.so needs no libLLVM at run time and
# holds no LLVM (on x86-64 Linux it is in kjit_llvm.so, which exports
# only the LLVM functions kjit calls), runs a few test files with it
# (test_cache's: require maps no LLVM, a cache hit neither), and installs
# it (tests/sh/test_install.sh: the module, and C hosts whose libkjit.so
# finds kjit_llvm.so beside the module, also in a moved tree). Writes "P F
# 0" to build/test-results/test_static.txt like the other tests.
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
# x86-64 Linux: LLVM is in its own module, loaded on the first compile
has_backend() { [[ -f build-static/kjit_llvm.so ]]; }
# kjit.so holds none of LLVM (a few MB, not tens), kjit_llvm.so exports
# nothing but LLVM functions and its version
kjit_so_light() { (( $(stat -c %s build-static/kjit.so) < 20000000 )); }
backend_exports() {
  local other
  other=$(nm -D --defined-only build-static/kjit_llvm.so | awk '{print $3}' |
          grep -v -e '^LLVM' -e '^kjit_llvm_backend_version$')
  [[ -z "$other" ]] || { echo "  exports: $(head -5 <<<"$other")"; return 1; }
  nm -D --defined-only build-static/kjit_llvm.so | grep -q ' LLVMOrcCreateLLJIT$'
}
# (test_cache.lua: require "kjit" maps no LLVM, a cache hit neither)
lua_test() {
  local env=()
  has_backend && env=(KJIT_TEST_LLVM_DLOPEN=1)
  env "${env[@]}" lua5.4 tests/lua/harness.lua build-static "tests/lua/$1.lua" >/dev/null
}
installs() {
  bash tests/sh/test_install.sh build-static build-static/test-results/sh.test_install.txt
}

check "static build" build
check "kjit.so does not need libLLVM" no_libllvm
if has_backend; then
  check "kjit.so holds no LLVM" kjit_so_light
  check "kjit_llvm.so exports only LLVM's functions" backend_exports
fi
for t in test_buffer test_jit_api test_jit_diff_loops test_jit_errors test_cuda_kernels test_cache; do
  check "$t with the static build" lua_test "$t"
done
check "the static build installs (Lua and C hosts)" installs

echo "test_static: $passed passed, $failed failed"
mkdir -p build/test-results
echo "$passed $failed 0" > build/test-results/test_static.txt
((failed == 0))
