/*
** ir_verify.c: checks that a KirFunc is well formed SSA. The tests run it
** on every function they build, corrupted chunks included; later passes
** may run it after they rewrite the IR.
**
** Blocks: numbered by position, a terminator each with as many successors
** as it needs, predecessor and successor lists that agree, phis with one
** operand per predecessor. Values: ids dense and unique, every operand an
** instruction of this function whose block dominates the use (for a phi
** operand: dominates the corresponding predecessor; in the same block:
** comes before it), use lists that match the operands.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

typedef struct V {
  const KirFunc *f;
  char *err; size_t errsz;
  int *pos;       /* by id: position in its block (phis first), -1 unseen */
  int ok;
} V;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void bad(V *v, const char *fmt, ...) {
  if (!v->ok) return;   /* the first problem only */
  v->ok = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->err, v->errsz, fmt, ap);
  va_end(ap);
}

static int nsucc_of(int op) {
  switch (op) {
  case KIR_JMP: return 1;
  case KIR_BR: case KIR_FORPREP: case KIR_FORLOOP: return 2;
  default: return 0;
  }
}

/* Does the definition d dominate the use in block b at position at? */
static int dominates(V *v, const KirInsn *d, const KirBlock *b, int at) {
  if (d->block == b) return v->pos[d->id] < at;
  for (const KirBlock *x = b->idom; x; x = x->idom)
    if (x == d->block) return 1;
  return 0;
}

static int known(V *v, const KirInsn *d) {
  const KirFunc *f = v->f;
  return d && d->fwd == NULL && d->id >= 0 && d->id < f->ninsns && d->block &&
         d->block->id >= 0 && d->block->id < f->nblocks &&
         f->blocks[d->block->id] == d->block && v->pos[d->id] >= 0;
}

static void operands(V *v, const KirInsn *u, int at) {
  const KirBlock *b = u->block;
  for (int i = 0; i < u->nargs; i++) {
    const KirInsn *d = u->args[i];
    if (!known(v, d)) { bad(v, "%%%d: operand %d is not a value of this function", u->id, i); return; }
    int ok = u->op == KIR_PHI ? dominates(v, d, b->preds[i], 1 << 30)
                              : dominates(v, d, b, at);
    if (!ok) bad(v, "%%%d: operand %%%d does not dominate its use", u->id, d->id);
    int listed = 0;
    for (int k = 0; k < d->nusers && !listed; k++) listed = d->users[k] == u;
    if (!listed) bad(v, "%%%d: not in the users of %%%d", u->id, d->id);
  }
}

int kir_verify(const KirFunc *f, char *err, size_t errsz) {
  V v = { f, err, errsz, NULL, 1 };
  if (errsz) err[0] = '\0';
  v.pos = malloc(((size_t)f->ninsns + 1) * sizeof *v.pos);
  if (v.pos == NULL) { snprintf(err, errsz, "not enough memory"); return 0; }
  for (int i = 0; i < f->ninsns; i++) v.pos[i] = -1;
  /* positions, ids, block shape */
  for (int j = 0; j < f->nblocks && v.ok; j++) {
    const KirBlock *b = f->blocks[j];
    if (b->id != j) bad(&v, "b%d is at position %d", b->id, j);
    if (j == 0 && b->npreds) bad(&v, "the entry has predecessors");
    if (j > 0 && (b->npreds == 0 || b->idom == NULL)) bad(&v, "b%d: unreachable", j);
    if (b->term == NULL) { bad(&v, "b%d: no terminator", j); break; }
    if (!KIR_ISTERM(b->term->op)) bad(&v, "b%d: ends with %s", j, kir_opname[b->term->op]);
    if (nsucc_of(b->term->op) != b->nsucc) bad(&v, "b%d: %d successors", j, b->nsucc);
    for (int s = 0; s < b->nsucc; s++) {
      const KirBlock *t = b->succ[s];
      int n = 0;
      for (int p = 0; p < t->npreds; p++) n += t->preds[p] == b;
      int m = 0;
      for (int q = 0; q < b->nsucc; q++) m += b->succ[q] == t;
      if (n != m) bad(&v, "b%d -> b%d: %d edges, listed %d times", j, t->id, m, n);
    }
    int at = 0;
    for (int x = 0; x <= b->nphis + b->ninsns; x++, at++) {
      const KirInsn *u = x < b->nphis ? b->phis[x]
                       : x < b->nphis + b->ninsns ? b->insns[x - b->nphis] : b->term;
      if (u->id < 0 || u->id >= f->ninsns || v.pos[u->id] >= 0) {
        bad(&v, "b%d: id %d out of range or twice", j, u->id);
        break;
      }
      if (u->block != b) bad(&v, "%%%d: in b%d, says b%d", u->id, j, u->block->id);
      if ((u->op == KIR_PHI) != (x < b->nphis)) bad(&v, "%%%d: a phi out of place", u->id);
      if (KIR_ISTERM(u->op) && u != b->term) bad(&v, "%%%d: a terminator inside b%d", u->id, j);
      if (u->op == KIR_PHI && u->nargs != b->npreds)
        bad(&v, "%%%d: %d operands, %d predecessors", u->id, u->nargs, b->npreds);
      v.pos[u->id] = at;
    }
  }
  for (int i = 0; i < f->ninsns && v.ok; i++)
    if (v.pos[i] < 0) bad(&v, "id %d is in no block", i);
  /* operands */
  for (int j = 0; j < f->nblocks && v.ok; j++) {
    const KirBlock *b = f->blocks[j];
    int at = 0;
    for (int x = 0; x < b->nphis; x++) operands(&v, b->phis[x], at++);
    for (int x = 0; x < b->ninsns; x++) operands(&v, b->insns[x], at++);
    operands(&v, b->term, at);
  }
  free(v.pos);
  return v.ok;
}
