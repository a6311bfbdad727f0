/*
** cg_fuse.c: one branch for `while a and b` (and `if a and b`) where b is
** pure and cheap, on targets that ask for it (KcgTarget.fuse_tests).
**
** Lua's `and` reaches the IR as two tests, one per bytecode jump: block b
** tests a and goes on to block s, which computes and tests the second
** condition; both leave to the same block x. On a GPU each branch costs:
** mandelbrot's `while k < maxit and zx * zx + zy * zy <= 4.0` ran 10%
** slower with two branches per iteration than with one (H200), and LLVM
** speculates at most one instruction to merge them itself. When s only
** computes values that cannot raise (float arithmetic, integer + - *,
** comparisons of numbers, constants), evaluating it even when a is false
** changes nothing Lua can observe, so the generator emits s's
** instructions in b and branches once on both tests (cg_func.c, emit_term).
*/
#include "codegen/cg.h"

/* Can v run when the interpreter would not have run it: no error, no
** effect, a plain number or boolean? */
static int speculatable(const CG *G, const KirInsn *v) {
  const KtySpec *sp = G->sp;
  Type t = sp->types[v->id];
  if (sp->raises[v->id].msg) return 0;                 /* always raises */
  if (sp->consts[v->id].kind != T_UNKNOWN) return 1;   /* a constant: no code */
  for (int i = 0; i < v->nargs; i++) {
    int k = sp->types[v->args[i]->id].kind;
    if (k != T_INT && k != T_F64 && k != T_F32 && k != T_BOOL) return 0;
  }
  switch (v->op) {
  case KIR_INT: case KIR_FLT: case KIR_TRUE: case KIR_FALSE: return 1;
  case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_UNM:
    return t.kind == T_INT || t.kind == T_F64 || t.kind == T_F32;
  case KIR_DIV:
    return t.kind == T_F64 || t.kind == T_F32;
  case KIR_LT: case KIR_LE: case KIR_EQ: {
    for (int i = 0; i < v->nargs; i++)
      if (sp->types[v->args[i]->id].kind == T_BOOL && v->op != KIR_EQ) return 0;
    return t.kind == T_BOOL;
  }
  case KIR_NOT: return t.kind == T_BOOL;
  default: return 0;
  }
}

/* The block to emit into b and test with b's own test, or NULL. */
KirBlock *cg_fuse_next(const CG *G, const KirBlock *b) {
  const KtySpec *sp = G->sp;
  if (!G->target->fuse_tests || b->term == NULL || b->term->op != KIR_BR) return NULL;
  if (b->nsucc != 2 || b->succ[0] == b->succ[1] || sp->edges[b->id] != 3) return NULL;
  for (int si = 0; si < 2; si++) {
    KirBlock *s = b->succ[si], *x = b->succ[1 - si];
    if (s == b || s->npreds != 1 || s->nphis != 0 || !sp->live[s->id]) continue;
    if (s->loop != b->loop || (s->loop && s->loop->header == s)) continue;
    const KirInsn *t = s->term;
    if (t == NULL || t->op != KIR_BR || s->nsucc != 2 || sp->edges[s->id] != 3) continue;
    if (s->succ[0] == s->succ[1] || (s->succ[0] != x && s->succ[1] != x)) continue;
    if (s->succ[0] == s || s->succ[1] == s) continue;
    if (sp->types[t->args[0]->id].kind != T_BOOL) continue;
    int ok = s->ninsns <= 8;   /* cheap: a few operations */
    for (int i = 0; i < s->ninsns && ok; i++) ok = speculatable(G, s->insns[i]);
    /* x's phis see the same value from b and from s */
    int ib = -1, is = -1;
    for (int i = 0; i < x->npreds; i++) {
      if (x->preds[i] == b) ib = i;
      if (x->preds[i] == s) is = i;
    }
    if (ib < 0 || is < 0) ok = 0;
    for (int j = 0; j < x->nphis && ok; j++) ok = x->phis[j]->args[ib] == x->phis[j]->args[is];
    if (ok) return s;
  }
  return NULL;
}
