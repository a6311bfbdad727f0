/*
** ir_loop.c: dominators and loops of a built KirFunc.
**
** Dominators by Cooper, Harvey and Kennedy ("A Simple, Fast Dominance
** Algorithm"): blocks are in reverse postorder, so one pass usually
** settles them. An edge to a block that dominates its source is a back
** edge; the natural loop of a header is the header and every block that
** reaches one of its back edges without passing the header. Headers
** dominate the headers of the loops inside them, so in reverse postorder
** outer loops come first and each block ends up with its innermost loop.
*/
#include <string.h>
#include "ir/ir.h"

int kir_loops(Arena *A, KirFunc *f);

static KirBlock *intersect(KirBlock *a, KirBlock *b) {
  while (a != b) {
    while (a->id > b->id) a = a->idom;
    while (b->id > a->id) b = b->idom;
  }
  return a;
}

static void dominators(KirFunc *f) {
  KirBlock *entry = f->blocks[0];
  entry->idom = entry;   /* itself while computing */
  int changed = 1;
  while (changed) {
    changed = 0;
    for (int j = 1; j < f->nblocks; j++) {
      KirBlock *b = f->blocks[j], *d = NULL;
      for (int p = 0; p < b->npreds; p++) {
        KirBlock *q = b->preds[p];
        if (q->idom == NULL) continue;   /* not processed yet */
        d = d ? intersect(q, d) : q;
      }
      if (d != b->idom) { b->idom = d; changed = 1; }
    }
  }
  entry->idom = NULL;
}

int kir_dominates(const KirBlock *a, const KirBlock *b) {
  while (b && b != a) b = b->idom;
  return b == a;
}

int kir_inloop(const KirLoop *l, const KirBlock *b) {
  for (const KirLoop *m = b->loop; m; m = m->parent)
    if (m == l) return 1;
  return 0;
}

/* Arena arrays of known size; NULL (no memory) leaves the loop out. */
static void *alloc(Arena *A, size_t n) { return ka_alloc(A, n ? n : 1); }

static void classify(KirLoop *l, const uint8_t *in) {
  for (int i = 0; i < l->nlatches; i++) {
    KirInsn *t = l->latches[i]->term;
    if (t && t->op == KIR_FORLOOP && t->block->succ[0] == l->header) {
      l->kind = KIR_LOOP_FORNUM;
      l->prep = t->args[1];
      KirInsn *v = t->args[0];
      l->var = (v->op == KIR_PHI && v->block == l->header) ? v : NULL;
      l->line = l->prep->line;
      return;
    }
  }
  for (int i = 0; i < l->header->ninsns; i++) {
    KirInsn *v = l->header->insns[i];
    if (v->op == KIR_CALL && (v->flags & KIR_F_TFOR)) {
      l->kind = KIR_LOOP_FORIN;
      l->prep = l->var = v;
      l->line = v->line;
      return;
    }
  }
  /* repeat: a latch tests the exit (the header too when the body is one
  ** block); while: the header does */
  KirInsn *t = l->header->term;
  l->kind = KIR_LOOP_LOOP;
  for (int i = 0; i < l->nlatches; i++) {
    KirBlock *b = l->latches[i];
    if (b->term && b->term->op == KIR_BR && (!in[b->succ[0]->id] || !in[b->succ[1]->id]))
      l->kind = KIR_LOOP_REPEAT;
  }
  if (l->kind == KIR_LOOP_LOOP && t && t->op == KIR_BR &&
      (!in[t->block->succ[0]->id] || !in[t->block->succ[1]->id]))
    l->kind = KIR_LOOP_WHILE;
  l->line = -1;
  for (int i = 0; i < l->nblocks && l->line < 0; i++) {   /* first known line */
    KirBlock *b = l->blocks[i];
    if (b->nphis) l->line = b->phis[0]->line;
    else if (b->ninsns) l->line = b->insns[0]->line;
    else if (b->term) l->line = b->term->line;
  }
}

/* Returns 0 when out of memory. */
int kir_loops(Arena *A, KirFunc *f) {
  int n = f->nblocks;
  dominators(f);
  uint8_t *in = alloc(A, (size_t)n);
  KirBlock **work = alloc(A, (size_t)n * sizeof *work);
  KirLoop **loops = alloc(A, (size_t)n * sizeof *loops);
  if (!in || !work || !loops) return 0;
  int nloops = 0;
  for (int h = 0; h < n; h++) {
    KirBlock *hb = f->blocks[h];
    int nlatch = 0;
    for (int p = 0; p < hb->npreds; p++) {
      KirBlock *q = hb->preds[p];
      if (kir_dominates(hb, q)) nlatch++;
      else if (q->id >= hb->id) f->irreducible = 1;   /* retreating, no header */
    }
    if (nlatch == 0) continue;
    KirLoop *l = alloc(A, sizeof *l);
    if (l == NULL) return 0;
    l->header = hb;
    l->latches = alloc(A, (size_t)nlatch * sizeof *l->latches);
    if (l->latches == NULL) return 0;
    /* the body: backwards from the latches up to the header */
    memset(in, 0, (size_t)n);
    in[h] = 1;
    int top = 0, count = 1;
    for (int p = 0; p < hb->npreds; p++) {
      KirBlock *q = hb->preds[p];
      if (!kir_dominates(hb, q)) continue;
      int dup = 0;
      for (int i = 0; i < l->nlatches; i++) dup |= l->latches[i] == q;
      if (!dup) l->latches[l->nlatches++] = q;
      if (!in[q->id]) { in[q->id] = 1; count++; work[top++] = q; }
    }
    while (top > 0) {
      KirBlock *b = work[--top];
      for (int p = 0; p < b->npreds; p++) {
        KirBlock *q = b->preds[p];
        if (!in[q->id]) { in[q->id] = 1; count++; work[top++] = q; }
      }
    }
    l->blocks = alloc(A, (size_t)count * sizeof *l->blocks);
    if (l->blocks == NULL) return 0;
    int nexits = 0;
    for (int j = 0; j < n; j++) {
      if (!in[j]) continue;
      l->blocks[l->nblocks++] = f->blocks[j];
      for (int s = 0; s < f->blocks[j]->nsucc; s++) nexits += !in[f->blocks[j]->succ[s]->id];
    }
    l->exits = alloc(A, (size_t)nexits * sizeof *l->exits);
    if (l->exits == NULL) return 0;
    for (int j = 0; j < l->nblocks; j++) {
      KirBlock *b = l->blocks[j];
      for (int s = 0; s < b->nsucc; s++) {
        KirBlock *e = b->succ[s];
        int dup = in[e->id];
        for (int i = 0; i < l->nexits && !dup; i++) dup = l->exits[i] == e;
        if (!dup) l->exits[l->nexits++] = e;
      }
    }
    for (int p = 0; p < hb->npreds; p++) {
      KirBlock *q = hb->preds[p];
      if (in[q->id]) continue;
      l->entry = l->entry == NULL ? q : l->entry;
      if (l->entry != q) { l->entry = NULL; break; }
    }
    /* nesting: outer loops were made first and marked their blocks */
    l->parent = hb->loop;
    l->depth = l->parent ? l->parent->depth + 1 : 1;
    for (int j = 0; j < l->nblocks; j++) l->blocks[j]->loop = l;
    classify(l, in);
    l->id = nloops;
    loops[nloops++] = l;
  }
  f->loops = loops;
  f->nloops = nloops;
  return 1;
}
