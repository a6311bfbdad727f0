/*
** fuzz_bytecode.c: libFuzzer target for the bytecode front end and the IR
** builder. An input is a binary chunk (as lua_dump writes); it is decoded
** (src/frontend/bytecode.c) and, when it decodes, the IR of every
** prototype is built, verified (kir_verify: an invalid one aborts) and
** printed (src/ir/). Refusals are fine; crashes and
** sanitizer reports are bugs. Needs no Lua library (only its headers):
**
**   mkdir -p build-fuzz && clang-14 -g -O1 -fsanitize=fuzzer,address,undefined \
**     -Isrc $(pkg-config --cflags lua5.4) tests/fuzz/fuzz_bytecode.c \
**     src/frontend/bytecode.c src/ir/ir_build.c src/ir/ir_loop.c \
**     src/ir/ir_print.c src/ir/ir_verify.c src/common/arena.c -o build-fuzz/fuzz_bytecode
**   build-fuzz/fuzz_bytecode -max_total_time=60 build-fuzz/bytecode-corpus \
**     tests/c/bytecode_fixtures
*/
#include <stdint.h>
#include <stdlib.h>
#include "frontend/bytecode.h"
#include "ir/ir.h"

static void build(Arena *A, const KbcProto *p, int depth) {
  char err[256];
  KirFunc *f = kir_build(A, p, err, sizeof err);
  if (f) {
    if (!kir_verify(f, err, sizeof err)) abort();   /* a builder bug */
    char *s = NULL;
    size_t n = 0, cap = 0;
    kir_print(f, &s, &n, &cap);
    free(s);
  }
  for (int i = 0; i < p->np; i++) build(A, p->p[i], depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Arena A;
  char err[256];
  ka_init(&A);
  KbcChunk *c = kbc_decode(&A, (const char *)data, size, err, sizeof err);
  if (c) build(&A, c->main, 0);
  ka_free(&A);
  return 0;
}
