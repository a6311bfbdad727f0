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
*/
#include "codegen/cg.h"

void cg_select(CG *G, const KirInsn *v) {
  int op = G->sp->varop[v->id];
  if (op == KTY_SELECT_COUNT) return;   /* a constant (the typer's) */
  CgVal *list = cg_zalloc(G, sizeof(CgVal) * (KJIT_MAXARGS + KJIT_MAXRETS));
  int m = cg_operands(G, v, 2, list, KJIT_MAXARGS + KJIT_MAXRETS);
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
    if (cs && cs->dyncount && G->ncount[c->id]) {
      int fixed = v->nargs - 1;
      cnt = LLVMBuildAdd(G->B, cg_i32(G, fixed), G->ncount[c->id], "");
    }
  }
  LLVMBuildStore(G->B, cnt, G->retcount);
}
