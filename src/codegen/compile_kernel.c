/*
** compile_kernel.c: the bytecode pipeline for cuda.jit kernels, behind the
** switch KJIT_PIPELINE=bytecode: the kernel function's bytecode -> SSA IR
** -> types in kernel mode (KtySession.kernel: the kjit.cuda built-ins, f32
** arithmetic as CUDA C) -> LLVM IR for the NVPTX or simulator target
** (kcg_emit_kernel). kernel.c's compile_kernel calls it in place of the
** source-text front end and codegen.c, and keeps the rest (libNVVM, the
** disk cache, ORC for the simulator).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include "lua.h"
#include "codegen/kcg.h"

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

int kcg_compile_kernel(Session *S, int fidx, int nargs, const Type *args,
                       LLVMContextRef C, LLVMModuleRef M, const char *entry_name,
                       const KcgTarget *t, KcgKernel *out) {
  lua_State *L = S->L;
  fidx = lua_absindex(L, fidx);
  memset(out, 0, sizeof *out);
  KtySession T;
  kty_open(&T, L, &S->arena);
  T.kernel = 1;
  KtySpec *root = kty_spec(&T, fidx, nargs, args);
  if (root == NULL) {
    snprintf(S->errmsg, sizeof S->errmsg, "%s", T.err);
    kty_close(&T);
    return -1;
  }
  if (root->nret > 0) {
    snprintf(S->errmsg, sizeof S->errmsg,
             "%s:%d: a kernel cannot return values (write the results into an array)",
             root->chunkname ? root->chunkname : "?", root->ir->proto->linedefined);
    kty_close(&T);
    return -1;
  }
  jmp_buf jb;
  T.jb = &jb;
  if (setjmp(jb)) {
    snprintf(S->errmsg, sizeof S->errmsg, "%s", T.err);
    kty_close(&T);
    return -1;
  }
  KcgKernelInfo info;
  memset(&info, 0, sizeof info);
  kcg_emit_kernel(&T, C, M, root, entry_name, t, S->boundscheck, S->fastmath, &info);
  out->nargs = root->nargs;
  memcpy(out->args, root->args, sizeof(Type) * (size_t)root->nargs);
  out->uses_sync = info.uses_sync;
  out->types = kcg_types_text(&T, 1);
  snprintf(out->chunkname, sizeof out->chunkname, "%s", root->chunkname ? root->chunkname : "?");
  if (info.nmsgs > 0) {
    out->msgs = calloc((size_t)info.nmsgs, sizeof *out->msgs);
    if (out->msgs) {
      out->nmsgs = info.nmsgs;
      for (int i = 0; i < info.nmsgs; i++) out->msgs[i] = dup(info.msgs[i]);
    }
  }
  kty_close(&T);
  return 0;
}
