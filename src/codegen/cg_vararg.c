/*
** cg_vararg.c: varargs and multiple values in compiled code (issue 29
** item 4), the generator's side of ir_type.c's "Varargs".
**
** A vararg function is specialized on how many values '...' holds and on
** their types: they are its last parameters (KTY_VARBASE), so `...` has
** no run-time representation of its own (cg_func.c's emit_spec gives the
** VARARG instruction those parameters as its results, as a call has).
** select(i, ...) with i '#' or a constant integer is done here: '#' is
** the typer's constant, select(i, ...) the list's values from the i-th on,
** passed on as they are (no boxing, no Lua API). Its "index out of range"
** error is the typer's (raises[]), raised at the call's line.
** `local x = select(i, ...)` with i known when it runs (the loop over
** '...') picks value i among the parameters (select_at).
*/
#include <setjmp.h>
#include <stdio.h>
#include "codegen/cg.h"

int cg_select_only(CG *G, const KirInsn *v) { return kty_select_only(G->sp, v); }

/* `local x = select(i, ...)` with i known when it runs: luaB_select's
** index (negative from the end, past the end nil, "index out of range"
** below 1), then value i of the list, converted to the typer's join of
** them all and nil (a switch over the list's values). */
static void select_at(CG *G, const KirInsn *v, CgVal *list, int m) {
  Type rt = G->sp->types[v->id];
  LLVMValueRef i = cg_convert(G, cg_val(G, v->args[1]), TY(T_INT), v->line).v;
  LLVMValueRef top = cg_i64(G, m + 1);
  LLVMValueRef neg = LLVMBuildICmp(G->B, LLVMIntSLT, i, cg_i64(G, 0), "");
  LLVMValueRef past = LLVMBuildICmp(G->B, LLVMIntSGT, i, top, "");
  LLVMValueRef n = LLVMBuildSelect(G->B, neg, LLVMBuildAdd(G->B, top, i, ""),
                                   LLVMBuildSelect(G->B, past, top, i, ""), "");
  cg_check(G, LLVMBuildICmp(G->B, LLVMIntSGE, n, cg_i64(G, 1), ""), KE_TYPEERR, v->line,
           cg_i64(G, 0), NULL, NULL, "bad argument #1 to 'select' (index out of range)");
  LLVMTypeRef tys[3 + KJIT_MAXDIMS];
  int np = cg_parts(G, rt, tys);
  LLVMValueRef at[3 + KJIT_MAXDIMS];
  for (int k = 0; k < np; k++) at[k] = cg_alloca(G, tys[k], "selv");
  LLVMBasicBlockRef done = cg_bb(G, "seldone"), none = cg_bb(G, "selnil");
  LLVMValueRef sw = LLVMBuildSwitch(G->B, n, none, (unsigned)m);
  for (int j = 0; j <= m; j++) {
    LLVMBasicBlockRef b = j < m ? cg_bb(G, "selcase") : none;
    if (j < m) LLVMAddCase(sw, cg_i64(G, j + 1), b);
    LLVMPositionBuilderAtEnd(G->B, b);
    CgVal x = cg_convert(G, j < m ? list[j] : cg_mk(TY(T_NIL), NULL), rt, v->line);
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    int nk = cg_pack(x, pv);
    for (int k = 0; k < nk && k < np; k++) LLVMBuildStore(G->B, pv[k], at[k]);
    LLVMBuildBr(G->B, done);
  }
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef pv[3 + KJIT_MAXDIMS];
  for (int k = 0; k < np; k++) pv[k] = LLVMBuildLoad2(G->B, tys[k], at[k], "");
  CgVal r = cg_unpack(rt, pv);
  G->results[v->id] = cg_zalloc(G, sizeof(CgVal));
  G->results[v->id][0] = G->vals[v->id] = r;
  G->nresults[v->id] = 1;
}

void cg_select(CG *G, const KirInsn *v) {
  int op = G->sp->varop[v->id];
  if (op == KTY_SELECT_COUNT && G->sp->consts[v->id].kind != T_UNKNOWN) return;   /* the typer's */
  CgVal *list = cg_zalloc(G, sizeof(CgVal) * (KJIT_MAXARGS + KJIT_MAXRETS));
  int m = cg_operands(G, v, 2, list, KJIT_MAXARGS + KJIT_MAXRETS);
  if (op == KTY_SELECT_COUNT) {   /* select('#', ..., f(x)) with f's count known when it runs */
    G->vals[v->id] = cg_mk(TY(T_INT), LLVMBuildSExt(G->B, cg_open_count(G, v, m), G->i64, ""));
    G->results[v->id] = cg_zalloc(G, sizeof(CgVal));
    G->results[v->id][0] = G->vals[v->id];
    G->nresults[v->id] = 1;
    return;
  }
  if (op == KTY_SELECT_AT) { select_at(G, v, list, m); return; }
  int s = op - KTY_SELECT_FROM;
  if (s > m) s = m;
  G->results[v->id] = list + s;
  G->nresults[v->id] = m - s;
  G->vals[v->id] = m - s > 0 ? list[s] : cg_mk(TY(T_NIL), NULL);
}

/* How many of the n operands of v (cg_operands') there are when it runs:
** n, less what an open call of a function whose returns differ in length
** did not give. */
LLVMValueRef cg_open_count(CG *G, const KirInsn *v, int n) {
  if (!(v->flags & KIR_F_OPEN)) return cg_i32(G, n);
  const KirInsn *c = v->args[v->nargs - 1];
  KtySpec *cs = c->op == KIR_CALL ? G->sp->callees[c->id] : NULL;
  if (!cs || !cs->dyncount || !G->ncount[c->id]) return cg_i32(G, n);
  return LLVMBuildAdd(G->B, cg_i32(G, n - cs->nret), G->ncount[c->id], "");
}

/* A function whose returns give different numbers of values (the typer's
** dyncount) says how many this return v gave (n of them, counting an open
** call's as the typer's most): the caller's count out-parameter. A return
** ending in a call of such a function passes on that call's count. */
void cg_store_retcount(CG *G, const KirInsn *v, int n) {
  LLVMValueRef cnt = cg_i32(G, n);
  if (v->flags & KIR_F_OPEN) {
    const KirInsn *c = v->args[v->nargs - 1];
    KtySpec *cs = c->op == KIR_CALL ? G->sp->callees[c->id] : NULL;
    if (((cs && cs->dyncount) || kty_callvalue_toret(G->sp, c)) && G->ncount[c->id]) {
      int fixed = v->nargs - 1;
      cnt = LLVMBuildAdd(G->B, cg_i32(G, fixed), G->ncount[c->id], "");
    }
  }
  LLVMBuildStore(G->B, cnt, G->retcount);
}

void cg_vararg_prange_check(CG *G, const KirLoop *l) {
  for (int bi = 0; bi < l->nblocks; bi++) {
    const KirBlock *b = l->blocks[bi];
    if (!G->sp->live[b->id]) continue;
    for (int i = 0; i < b->ninsns; i++) {
      const KirInsn *v = b->insns[i];
      int reads = v->op == KIR_VARARG;
      if (v->op == KIR_CALL && G->sp->varop[v->id]) {   /* select(k, ...) in the loop */
        const KirInsn *c = (v->flags & KIR_F_OPEN) ? v->args[v->nargs - 1] : NULL;
        reads = c && c->op == KIR_VARARG;
      }
      if (!reads) continue;
      snprintf(G->S->err, sizeof G->S->err, "%s:%d: a parallel kjit.prange loop cannot read "
               "'...' (its iterations run in a worker of their own): take the values into "
               "locals before the loop (`local a, b = ...`, `local n = select('#', ...)`)",
               G->sp->chunkname ? G->sp->chunkname : "?", v->line);
      longjmp(*G->S->jb, 1);
    }
  }
}
