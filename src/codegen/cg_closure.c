/*
** cg_closure.c: function literals made and called by compiled code (the
** design: src/ir/ir_closure.c).
**
** A literal is a compile-time value (T_CLOSURE). Its specializations take
** its upvalues as parameters after their own. When it captures values
** with run-time parts (numbers, booleans, arrays; T_CLOSURE's sub), its
** run-time value is the address of an "environment": a stack slot of its
** maker's frame holding those values, in upvalue order (the literal itself
** and what has no run-time parts left out), written once where it is made.
** That is safe because a literal never outlives its maker's call (the
** typer refuses returning or storing one) and the locals it captures keep
** one value (ir_closure.c). A call where the literal was made passes the
** captured values themselves; any other call loads them from the
** environment of the value it calls.
*/
#include "codegen/cg.h"
#include <string.h>

/* The layout of literal di's environment: its part types (returns their
** count) and, for each upvalue, its first part's index (-1 if none). */
static int env_layout(CG *G, int di, const Type *caps, LLVMTypeRef *tys, int *first) {
  const KtyClosure *D = &G->S->clos[di];
  int n = 0;
  for (int u = 0; u < D->ir->proto->nup; u++) {
    first[u] = -1;
    if (kty_clos_self(G->S, di, u)) continue;
    LLVMTypeRef pt[3 + KJIT_MAXDIMS];
    int np = cg_parts(G, caps[u], pt);
    if (np == 0) continue;
    first[u] = n;
    for (int k = 0; k < np; k++) tys[n++] = pt[k];
  }
  return n;
}

/* The value literal di captures as upvalue u, read where it was made
** (G->sp is its maker). */
static CgVal made_value(CG *G, const KirInsn *at, int di, int u) {
  const KtyClosure *D = &G->S->clos[di];
  const KbcProto *cp = D->ir->proto;
  int k = 0;
  for (int j = 0; j < u; j++) k += cp->up[j].instack != 0;
  if (cp->up[u].instack) return cg_val(G, D->site->args[k]);
  if (G->upvals == NULL) cg_error(G, at, "internal error: an upvalue of a function literal");
  return G->upvals[cp->up[u].idx];   /* the maker's own upvalue, passed on */
}

void cg_closure_make(CG *G, KirInsn *v) {
  Type t = G->sp->types[v->id];
  if (!t.sub) return;   /* nothing at run time */
  int di = t.ref;
  Type caps[KJIT_MAXARGS];
  int first[KJIT_MAXARGS];
  LLVMTypeRef tys[KJIT_MAXARGS * (3 + KJIT_MAXDIMS)];
  if (kty_clos_captures(G->S, di, caps) < 0) cg_error(G, v, "internal error: a literal's upvalues");
  int n = env_layout(G, di, caps, tys, first);
  LLVMTypeRef st = LLVMStructTypeInContext(G->C, tys, (unsigned)n, 0);
  LLVMValueRef env = cg_alloca(G, st, "env");
  for (int u = 0; u < G->S->clos[di].ir->proto->nup; u++) {
    if (first[u] < 0) continue;
    CgVal x = made_value(G, v, di, u);
    x.t = caps[u];
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    int np = cg_pack(x, pv);
    for (int k = 0; k < np; k++)
      LLVMBuildStore(G->B, pv[k], LLVMBuildStructGEP2(G->B, st, env, (unsigned)(first[u] + k), ""));
  }
  G->vals[v->id] = cg_mk(t, LLVMBuildBitCast(G->B, env, G->i8p, ""));
}

CgVal cg_clos_upval(CG *G, const KirInsn *v, const KtySpec *callee, int u) {
  int di = callee->clos - 1;
  const KtyClosure *D = &G->S->clos[di];
  Type t = callee->args[callee->nparams + u];
  LLVMTypeRef pt[3 + KJIT_MAXDIMS];
  if (cg_parts(G, t, pt) == 0) return cg_mk(t, NULL);   /* nothing at run time */
  CgVal fn = cg_val(G, v->args[0]);
  if (kty_clos_self(G->S, di, u)) { fn.t = t; return fn; }   /* the literal itself */
  /* in the maker, from the captured values themselves; inside a prange
  ** body's function they are out of scope: from the environment, as
  ** elsewhere */
  if (G->sp == D->parent && !G->prbody) return made_value(G, v, di, u);
  /* elsewhere: from the environment of the value called */
  Type caps[KJIT_MAXARGS];
  int first[KJIT_MAXARGS];
  LLVMTypeRef tys[KJIT_MAXARGS * (3 + KJIT_MAXDIMS)];
  if (kty_clos_captures(G->S, di, caps) < 0) cg_error(G, v, "internal error: a literal's upvalues");
  int n = env_layout(G, di, caps, tys, first);
  if (fn.v == NULL || first[u] < 0) cg_error(G, v, "internal error: a literal's environment");
  LLVMTypeRef st = LLVMStructTypeInContext(G->C, tys, (unsigned)n, 0);
  LLVMValueRef env = LLVMBuildBitCast(G->B, fn.v, LLVMPointerType(st, 0), "");
  LLVMValueRef pv[3 + KJIT_MAXDIMS];
  int np = cg_parts(G, t, pt);
  for (int k = 0; k < np; k++)
    pv[k] = LLVMBuildLoad2(G->B, pt[k], LLVMBuildStructGEP2(G->B, st, env, (unsigned)(first[u] + k), ""), "");
  return cg_unpack(t, pv);
}
