#!/usr/bin/env bash
# tests/fuzz/build.sh: builds the libFuzzer targets tests/fuzz/fuzz_compile.c
# and tests/fuzz/fuzz_bytecode.c into build-fuzz/ (or $KJIT_FUZZ_DIR/).
#
# Every src/*.c and src/*/*.c file is compiled with clang-14 and
# -fsanitize=fuzzer-no-link,address,undefined (coverage-guided and checked),
# the target with -fsanitize=fuzzer,address,undefined; LLVM 14 and Lua 5.4
# are the system's shared libraries (not instrumented). Incremental: an
# object is rebuilt only when its source or a header is newer.
# Exit status 3 (and a message) when clang-14 has no libFuzzer.
# KJIT_FUZZ_SRC=dir builds the kjit sources of dir/src and dir/include
# instead of the checkout's (e.g. a snapshot, for a long run while the tree
# is being edited); use another KJIT_FUZZ_DIR with it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${KJIT_FUZZ_DIR:-build-fuzz}
srcroot=${KJIT_FUZZ_SRC:-.}
cc=${KJIT_FUZZ_CC:-clang-14}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "build.sh: $cc not found" >&2; exit 3
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
  echo "build.sh: $cc cannot build a libFuzzer target:" >&2; cat "$probe/err" >&2; exit 3
fi

llvm_config=$(command -v llvm-config-14 || command -v llvm-config)
llvm_inc=$($llvm_config --includedir)
llvm_lib=$($llvm_config --libdir)
llvm_libs=$($llvm_config --link-shared --libs)
llvm_ver=$($llvm_config --version)
lua_cflags=$(pkg-config --cflags lua5.4)
lua_libs=$(pkg-config --libs lua5.4)

san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
cflags=(-std=c11 -O1 -g -Wall -Wextra -D_GNU_SOURCE -DKJIT_VERSION=\"fuzz\"
        -DKJIT_LLVM_VERSION=\"$llvm_ver\" -I"$srcroot/include" -I"$srcroot/src" -I"$out" $lua_cflags -isystem "$llvm_inc")
mkdir -p "$out/obj"
# this build's identity, as CMake makes it (cmake/build_hash.cmake; export.c)
cmake -DSRC="$(cd "$srcroot" && pwd)" -DOUT="$out/kjit_build_hash.h" -DCONFIG=fuzz \
  -P cmake/build_hash.cmake
objs=()
# the Lua-written modules, compiled in as strings (as CMake does)
shopt -s nullglob
lua5.4 tools/embed_lua.lua "$out/lua_modules.c" "$srcroot"/lua/kjit/*.lua
shopt -u nullglob
for s in "$srcroot"/src/*.c "$srcroot"/src/*/*.c "$out/lua_modules.c"; do
  [[ -f "$s" ]] || continue
  [[ "$s" == "$srcroot"/src/mpi/* ]] && continue   # kjit.mpi: a module of its own (MPI's flags)
  rel=${s#"$srcroot"/}; rel=${rel#"$out"/}
  o=$out/obj/$(printf '%s' "${rel%.c}" | tr '/' '_').o
  objs+=("$o")
  if [[ ! -f "$o" || "$s" -nt "$o" ]] || [[ -n $(find "$srcroot/src" "$srcroot/include" -name '*.h' -newer "$o" 2>/dev/null) ]]; then
    "$cc" "${cflags[@]}" "${san[@]}" -fsanitize=fuzzer-no-link -c "$s" -o "$o"
  fi
done
"$cc" "${cflags[@]}" "${san[@]}" -fsanitize=fuzzer tests/fuzz/fuzz_compile.c "${objs[@]}" \
  -o "$out/fuzz_compile" -L"$llvm_lib" $llvm_libs $lua_libs -lm -ldl -lpthread \
  -Wl,-rpath,"$llvm_lib"
# the bytecode front end and IR builder alone (needs no Lua library): an
# explicit list, since the IR's later passes (the typer, the loop facts,
# the built-in registry) freeze Lua values and call Lua
irsrc=()
for s in ir_build.c ir_closure.c ir_escape.c ir_loop.c ir_print.c ir_verify.c; do irsrc+=("$srcroot/src/ir/$s"); done
"$cc" "${cflags[@]}" "${san[@]}" -fsanitize=fuzzer tests/fuzz/fuzz_bytecode.c \
  "$srcroot"/src/frontend/bytecode.c "${irsrc[@]}" "$srcroot"/src/common/arena.c \
  -o "$out/fuzz_bytecode"
echo "build.sh: built $out/fuzz_compile and $out/fuzz_bytecode"
