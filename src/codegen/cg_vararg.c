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
