/*
** fuzz_bytecode.c: libFuzzer target for the bytecode front end and the IR
** builder. An input is a binary chunk (as lua_dump writes); it is decoded
** (src/frontend/bytecode.c) and, when it decodes, the IR of every
** prototype is built, verified (kir_verify: an invalid one aborts) and
** printed (src/ir/). Refusals are fine; crashes and
** sanitizer reports are bugs; invalid IR (kir_build's own check refusing
** with KIR_INVALID's words, or kir_verify failing here) is reported (the
** function's lines, the verifier's message) and aborts. Needs no Lua library
** (only its headers). tests/fuzz/build.sh builds it as
** build-fuzz/fuzz_bytecode (its list of sources is there); then
**
**   build-fuzz/fuzz_bytecode -max_total_time=60 build-fuzz/bytecode-corpus \
**     tests/c/bytecode_fixtures
**   build-fuzz/fuzz_bytecode crash-...        (replays one input)
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frontend/bytecode.h"
#include "ir/ir.h"

static void build(Arena *A, const KbcProto *p, int depth) {
  char err[256];
  KirFunc *f = kir_build(A, p, err, sizeof err);
  if (f) {
    char *s = NULL;
    size_t n = 0, cap = 0;
    kir_print(f, &s, &n, &cap);
    if (!kir_verify(f, err, sizeof err)) {   /* a builder bug: say where */
      fprintf(stderr, "fuzz_bytecode: invalid IR of the function of lines %d-%d "
              "(depth %d): %s\n%s\n", p->linedefined, p->lastlinedefined, depth,
              err, s ? s : "");
      abort();
    }
    free(s);
  }
  else if (strstr(err, KIR_INVALID)) {   /* kir_build's own check failed */
    fprintf(stderr, "fuzz_bytecode: the function of lines %d-%d (depth %d) refused: %s\n",
            p->linedefined, p->lastlinedefined, depth, err);
    abort();
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
