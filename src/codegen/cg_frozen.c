/*
** cg_frozen.c: P[k] of a frozen table P (an upvalue or global read when
** the function compiled) with a computed integer key: its numbers become a
** constant array in the module, and the read is a load, nil outside
** 1..#P (the typer's number-or-nil: ir_type.c's t_frozen_index). The
** table's contents enter the disk cache's key (host/cache_key.c).
*/
#include <string.h>
#include "codegen/cg.h"

CgVal cg_frozen_index(CG *G, const KirInsn *v) {
  Type t = G->sp->types[v->id], o = G->sp->types[v->args[0]->id];
  int64_t n, *vals;
  uint8_t *isf;
  const char *why;
  if (!kty_frozen_array(G->S, o.ref, &n, &vals, &isf, &why))
    cg_error(G, v, "internal error: the frozen table changed (%s)", why);
  int flt = t.sub == T_F64;
  LLVMTypeRef ety = flt ? G->f64 : G->i64;
  int64_t m = n > 0 ? n : 1;   /* a dummy element for the empty table */
  LLVMValueRef *ev = ka_alloc(G->S->A, sizeof *ev * (size_t)m);
  LLVMValueRef *fv = ka_alloc(G->S->A, sizeof *fv * (size_t)m);
  if (ev == NULL || fv == NULL) cg_error(G, v, "not enough memory");
  for (int64_t i = 0; i < m; i++) {
    int64_t w = i < n ? vals[i] : 0;
    if (flt) { double d; memcpy(&d, &w, sizeof d); ev[i] = LLVMConstReal(G->f64, d); }
    else ev[i] = cg_i64(G, w);
    fv[i] = LLVMConstInt(G->i8, i < n ? isf[i] : 0, 0);
  }
  LLVMTypeRef aty = LLVMArrayType(ety, (unsigned)m);
  LLVMValueRef arr = LLVMAddGlobal(G->M, aty, "kcg.frozen");
  LLVMSetInitializer(arr, LLVMConstArray(ety, ev, (unsigned)m));
  LLVMSetGlobalConstant(arr, 1);
  LLVMSetLinkage(arr, LLVMPrivateLinkage);
  CgVal k = cg_val(G, v->args[1]);
  LLVMValueRef km1 = LLVMBuildSub(G->B, k.v, cg_i64(G, 1), "");
  LLVMValueRef in = LLVMBuildICmp(G->B, LLVMIntULT, km1, cg_i64(G, n), "");
  LLVMValueRef idx[2] = { cg_i64(G, 0), LLVMBuildSelect(G->B, in, km1, cg_i64(G, 0), "") };
  CgVal r = cg_mk(t, LLVMBuildLoad2(G->B, ety, LLVMBuildGEP2(G->B, aty, arr, idx, 2, ""), ""));
  r.flag = in;
  if (t.sub == T_NUMBER) {
    LLVMTypeRef fty = LLVMArrayType(G->i8, (unsigned)m);
    LLVMValueRef farr = LLVMAddGlobal(G->M, fty, "kcg.frozenf");
    LLVMSetInitializer(farr, LLVMConstArray(G->i8, fv, (unsigned)m));
    LLVMSetGlobalConstant(farr, 1);
    LLVMSetLinkage(farr, LLVMPrivateLinkage);
    LLVMValueRef f = LLVMBuildLoad2(G->B, G->i8, LLVMBuildGEP2(G->B, fty, farr, idx, 2, ""), "");
    r.isf = LLVMBuildICmp(G->B, LLVMIntNE, f, LLVMConstInt(G->i8, 0, 0), "");
  }
  return r;
}
