/*
** cg_kernel.c: the device kernel entry (targets with kernel_entry, see
** compile.h for the ABI):
**     void name(params..., i64* errrec, i64 dynshared)
** Parameters come by value from the launch: i64, double, float, i8 for a
** boolean (0/1), an array as its element pointer then one i64 extent per
** dimension. The entry keeps a KErr on the thread's stack (its
** stack_limit field holds the dynamic shared bytes, which shared_array
** hooks read), calls the root specialization and, when it failed, lets
** the first failing thread claim the error record (compare-and-swap of
** word KERR_W_CLAIMED) and fill it (runtime_err.h KErrWord). Messages
** travel as numbers there (cg_msg).
*/
#include <string.h>
#include "codegen/cg.h"
#include "common/arena.h"
#include "common/runtime_err.h"

/* A constant message for err->msg. Targets without string globals (NVVM:
** no globals in the generic address space, and the host could not read
** them) get its 1-based number in G->msgs instead. */
LLVMValueRef cg_msg(CG *G, const char *msg) {
  if (G->target->string_globals) return LLVMBuildGlobalStringPtr(G->B, msg, "kcg.msg");
  if (G->nmsgs == G->capmsgs) {
    int cap = G->capmsgs ? 2 * G->capmsgs : 8;
    const char **m = ka_alloc(G->S->A, sizeof *m * (size_t)cap);
    if (m == NULL) cg_error(G, NULL, "not enough memory");
    if (G->nmsgs) memcpy(m, G->msgs, sizeof *m * (size_t)G->nmsgs);
    G->msgs = m;
    G->capmsgs = cap;
  }
  G->msgs[G->nmsgs++] = msg;
  return LLVMConstIntToPtr(cg_i64(G, G->nmsgs), G->i8p);
}

void cg_emit_kernel_entry(CG *G, KtySpec *sp, const char *name) {
  LLVMTypeRef ps[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 2];
  int np = 0;
  char tb[32];
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    switch (t.kind) {
    case T_INT: case T_F64: case T_F32: ps[np++] = cg_llty(G, t); break;
    case T_BOOL: ps[np++] = G->i8; break;
    case T_BUF:
      ps[np++] = cg_bufptr_ty(G, t);
      for (int d = 0; d < t.ndim; d++) ps[np++] = G->i64;
      break;
    case T_NIL: break;
    default: cg_error(G, NULL, "a kernel cannot take a %s argument", kty_name(t, tb, sizeof tb));
    }
  }
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  ps[np++] = i64p;
  ps[np++] = G->i64;
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(G->C), ps, (unsigned)np, 0);
  LLVMValueRef fn = LLVMAddFunction(G->M, name, fty);
  G->fn = fn;
  {   /* lineinfo: the entry at the kernel's first line, so that the code
      ** inlined into it keeps its lines (cg_debug.c) */
    KirFunc *f = sp->ir;
    int line0 = f->nblocks > 0 && f->blocks[0]->ninsns > 0 ? f->blocks[0]->insns[0]->line : 0;
    cg_debug_function(G, sp, line0);
    cg_debug_line(G, line0);
  }
  LLVMPositionBuilderAtEnd(G->B, cg_bb(G, "entry"));
  LLVMValueRef av[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 1];
  unsigned n = 0, p = 0;
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    switch (t.kind) {
    case T_INT: case T_F64: case T_F32: av[n++] = LLVMGetParam(fn, p++); break;
    case T_BOOL:
      av[n++] = LLVMBuildICmp(G->B, LLVMIntNE, LLVMGetParam(fn, p++), LLVMConstInt(G->i8, 0, 0), "");
      break;
    case T_BUF:
      for (int d = 0; d <= t.ndim; d++) av[n++] = LLVMGetParam(fn, p++);
      break;
    default: break;
    }
  }
  LLVMValueRef rec = LLVMGetParam(fn, p++);
  LLVMValueRef dyn = LLVMGetParam(fn, p++);
  LLVMValueRef err = LLVMBuildAlloca(G->B, G->errty, "err");
  G->err = err;
  cg_store_err(G, KERR_F_STACK_LIMIT, dyn);
  cg_store_err(G, KERR_F_MSG, LLVMConstNull(G->i8p));
  cg_store_err(G, KERR_F_F, cg_f64(G, 0));
  av[n++] = err;
  CgFunc *cf = &G->funcs[sp->index];
  LLVMValueRef st = LLVMBuildCall2(G->B, cf->fnty, cf->fn, av, n, "");
  LLVMBasicBlockRef fail = cg_bb(G, "fail"), fill = cg_bb(G, "fill"), done = cg_bb(G, "done");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""), done, fail);
  /* the first failing thread claims the record */
  LLVMPositionBuilderAtEnd(G->B, fail);
  LLVMValueRef pair = LLVMBuildAtomicCmpXchg(G->B, rec, cg_i64(G, 0), cg_i64(G, 1),
                                             LLVMAtomicOrderingMonotonic,
                                             LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef prev = LLVMBuildExtractValue(G->B, pair, 0, "");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, prev, cg_i64(G, 0), ""), fill, done);
  LLVMPositionBuilderAtEnd(G->B, fill);
  LLVMValueRef w[KJIT_KERR_WORDS];
  memset(w, 0, sizeof w);
#define FIELD(i, ty) LLVMBuildLoad2(G->B, ty, LLVMBuildStructGEP2(G->B, G->errty, err, i, ""), "")
  w[KERR_W_KIND] = LLVMBuildSExt(G->B, FIELD(KERR_F_KIND, G->i32), G->i64, "");
  w[KERR_W_LINE] = LLVMBuildSExt(G->B, FIELD(KERR_F_LINE, G->i32), G->i64, "");
  w[KERR_W_A] = FIELD(KERR_F_A, G->i64);
  w[KERR_W_B] = FIELD(KERR_F_B, G->i64);
  w[KERR_W_C] = FIELD(KERR_F_C, G->i64);
  w[KERR_W_MSG] = LLVMBuildPtrToInt(G->B, FIELD(KERR_F_MSG, G->i8p), G->i64, "");
  w[KERR_W_FBITS] = LLVMBuildBitCast(G->B, FIELD(KERR_F_F, G->f64), G->i64, "");
#undef FIELD
  for (int a = 0; a < 3; a++) {
    w[KERR_W_TID + a] = G->target->special_reg(G->M, G->B, 0, a);
    w[KERR_W_BID + a] = G->target->special_reg(G->M, G->B, 1, a);
  }
  /* KERR_W_CLAIMED was set by the compare-and-swap above */
  for (int k = KERR_W_KIND; k < KERR_W_END; k++) {
    LLVMValueRef idx = cg_i64(G, k);
    LLVMBuildStore(G->B, w[k], LLVMBuildInBoundsGEP2(G->B, G->i64, rec, &idx, 1, ""));
  }
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMBuildRetVoid(G->B);
  /* !nvvm.annotations = !{!{void (...)* @name, !"kernel", i32 1}} */
  LLVMValueRef md[3] = { fn, LLVMMDStringInContext(G->C, "kernel", 6), cg_i32(G, 1) };
  LLVMAddNamedMetadataOperand(G->M, "nvvm.annotations", LLVMMDNodeInContext(G->C, md, 3));
}
