/*
** ir_verify.c: checks that a KirFunc is well formed SSA. kir_build runs it
** on every function it builds (a builder bug on a chunk no Lua compiler
** writes is then a refusal, not code using a value before it is made);
** the tests and the fuzz target run it too; later passes may run it after
** they rewrite the IR.
**
** Blocks: numbered by position, a terminator each with as many successors
** as it needs, predecessor and successor lists that agree, phis with one
** operand per predecessor, dominators that reach the entry. Values: ids
** dense and unique, every operand an instruction of this function whose
** block dominates the use (for a phi operand: dominates the corresponding
** predecessor; in the same block: comes before it), use lists that match
** the operands. Linear in the size of the function (a huge one is
** checked at every compile): dominance by ranges of the dominator tree's
** preorder, use lists by counts.
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
  int *uses;      /* by id: operands naming it */
  int *listed;    /* by id: scratch, times listed in one use list */
  int *pre, *size;   /* by block id: dominator tree preorder (-1: not
                        reached from the entry) and subtree size */
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

static int isblock(const KirFunc *f, const KirBlock *b) {
  return b && b->id >= 0 && b->id < f->nblocks && f->blocks[b->id] == b;
}

/* Numbers the dominator tree (idom links) in preorder from the entry;
** scratch: 3 * nblocks + 1 ints. */
static void domtree(V *v, int *scratch) {
  const KirFunc *f = v->f;
  int n = f->nblocks;
  int *start = scratch, *kids = scratch + n + 1, *stack = kids + n;
  for (int j = 0; j <= n; j++) start[j] = 0;
  for (int j = 1; j < n; j++) start[f->blocks[j]->idom->id + 1]++;
  for (int j = 0; j < n; j++) start[j + 1] += start[j];
  for (int j = 1; j < n; j++) kids[start[f->blocks[j]->idom->id]++] = j;
  for (int j = n; j > 0; j--) start[j] = start[j - 1];   /* back to starts */
  start[0] = 0;
  for (int j = 0; j < n; j++) v->pre[j] = -1;
  int top = 0, next = 0;
  stack[top++] = 0;
  while (top > 0) {   /* preorder; a subtree's size once its last is numbered */
    int b = stack[--top];
    v->pre[b] = next++;
    for (int k = start[b]; k < start[b + 1]; k++) stack[top++] = kids[k];
  }
  /* sizes: children come after their parent in preorder */
  int *byorder = stack;
  for (int j = 0; j < n; j++) { v->size[j] = 1; if (v->pre[j] >= 0) byorder[v->pre[j]] = j; }
  for (int r = next - 1; r > 0; r--) {
    int b = byorder[r];
    v->size[f->blocks[b]->idom->id] += v->size[b];
  }
  for (int j = 0; j < n; j++)
    if (v->pre[j] < 0) bad(v, "b%d: its dominators do not reach the entry", j);
}

/* Does the definition d dominate the use in block b at position at? */
static int dominates(V *v, const KirInsn *d, const KirBlock *b, int at) {
  if (d->block == b) return v->pos[d->id] < at;
  int a = d->block->id;
  return v->pre[b->id] >= v->pre[a] && v->pre[b->id] < v->pre[a] + v->size[a];
}

static int known(V *v, const KirInsn *d) {
  const KirFunc *f = v->f;
  return d && d->fwd == NULL && d->id >= 0 && d->id < f->ninsns && isblock(f, d->block) &&
         v->pos[d->id] >= 0;
}

static void operands(V *v, const KirInsn *u, int at) {
  const KirBlock *b = u->block;
  for (int i = 0; i < u->nargs; i++) {
    const KirInsn *d = u->args[i];
    if (!known(v, d)) { bad(v, "%%%d: operand %d is not a value of this function", u->id, i); return; }
    int ok = u->op == KIR_PHI ? dominates(v, d, b->preds[i], 1 << 30)
                              : dominates(v, d, b, at);
    if (!ok) bad(v, "%%%d: operand %%%d does not dominate its use", u->id, d->id);
    v->uses[d->id]++;
  }
}

/* d's use list against the operands: as many entries as operands name d
** (counted by operands()), each naming an instruction that uses d as
** many times as it is listed. */
static void users(V *v, const KirInsn *d) {
  if (d->nusers != v->uses[d->id]) {
    bad(v, "%%%d: %d users listed, %d operands use it", d->id, d->nusers, v->uses[d->id]);
    return;
  }
  for (int k = 0; k < d->nusers; k++) {
    const KirInsn *u = d->users[k];
    if (!known(v, u)) { bad(v, "%%%d: a user is not an instruction of this function", d->id); return; }
    v->listed[u->id]++;
  }
  for (int k = 0; k < d->nusers; k++) {   /* each user once, its count back to 0 */
    const KirInsn *u = d->users[k];
    if (v->listed[u->id] == 0) continue;
    int n = 0;
    for (int i = 0; i < u->nargs; i++) n += u->args[i] == d;
    if (n != v->listed[u->id]) bad(v, "%%%d: not in the users of %%%d", u->id, d->id);
    v->listed[u->id] = 0;
  }
}

int kir_verify(const KirFunc *f, char *err, size_t errsz) {
  V v = { f, err, errsz, NULL, NULL, NULL, NULL, NULL, 1 };
  if (errsz) err[0] = '\0';
  size_t ni = (size_t)f->ninsns + 1, nb = (size_t)f->nblocks + 1;
  int *mem = malloc((3 * ni + 5 * nb + 1) * sizeof *mem);
  if (mem == NULL) { snprintf(err, errsz, "not enough memory"); return 0; }
  v.pos = mem;
  v.uses = mem + ni;
  v.listed = v.uses + ni;
  v.pre = v.listed + ni;
  v.size = v.pre + nb;
  int *scratch = v.size + nb;
  for (int i = 0; i < f->ninsns; i++) v.pos[i] = -1, v.uses[i] = v.listed[i] = 0;
  if (f->nblocks <= 0) bad(&v, "no blocks");
  /* positions, ids, block shape */
  for (int j = 0; j < f->nblocks && v.ok; j++) {
    const KirBlock *b = f->blocks[j];
    if (b->id != j) bad(&v, "b%d is at position %d", b->id, j);
    if (j == 0 && b->npreds) bad(&v, "the entry has predecessors");
    if (j > 0 && (b->npreds == 0 || !isblock(f, b->idom))) bad(&v, "b%d: unreachable", j);
    if (b->term == NULL) { bad(&v, "b%d: no terminator", j); break; }
    if (!KIR_ISTERM(b->term->op)) bad(&v, "b%d: ends with %s", j, kir_opname[b->term->op]);
    if (nsucc_of(b->term->op) != b->nsucc) bad(&v, "b%d: %d successors", j, b->nsucc);
    for (int s = 0; s < b->nsucc; s++) {
      const KirBlock *t = b->succ[s];
      if (!isblock(f, t)) { bad(&v, "b%d: a successor is not a block", j); break; }
      int n = 0;
      for (int p = 0; p < t->npreds; p++) n += t->preds[p] == b;
      int m = 0;
      for (int q = 0; q < b->nsucc; q++) m += b->succ[q] == t;
      if (n != m) bad(&v, "b%d -> b%d: %d edges, listed %d times", j, t->id, m, n);
    }
    for (int p = 0; p < b->npreds; p++)
      if (!isblock(f, b->preds[p])) bad(&v, "b%d: a predecessor is not a block", j);
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
  if (v.ok) domtree(&v, scratch);
  /* operands */
  for (int j = 0; j < f->nblocks && v.ok; j++) {
    const KirBlock *b = f->blocks[j];
    int at = 0;
    for (int x = 0; x < b->nphis; x++) operands(&v, b->phis[x], at++);
    for (int x = 0; x < b->ninsns; x++) operands(&v, b->insns[x], at++);
    operands(&v, b->term, at);
  }
  /* use lists */
  for (int j = 0; j < f->nblocks && v.ok; j++) {
    const KirBlock *b = f->blocks[j];
    for (int x = 0; x < b->nphis && v.ok; x++) users(&v, b->phis[x]);
    for (int x = 0; x < b->ninsns && v.ok; x++) users(&v, b->insns[x]);
    if (v.ok) users(&v, b->term);
  }
  free(mem);
  return v.ok;
}
