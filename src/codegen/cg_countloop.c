/*
** cg_countloop.c: interrupt polls of while loops counted by an integer
**
**     while k < maxit and x * x + y * y <= 4.0 do ... k = k + 1 end
**
** A loop that is not strip-mined charges the poll countdown one at each
** iteration (cg_func.c, emit_block): a subtraction and a branch, two
** instructions in mandelbrot's 13-instruction escape loop, which as a
** kjit.prange body counted 1.15x the instructions of polls off. Such a
** loop counts its iterations itself when
**   - its header ends in `k < e` (false: leaving the loop; the first test
**     of the condition, so every iteration makes it),
**   - k is an integer phi of the header that every back edge brings back
**     as the same `k + 1` (one step an iteration, never wrapping: k < e),
**   - e is an integer the loop does not change,
**   - the header computes nothing else (constants),
** from a header visit with k, at most e - k iterations follow. So it runs
** in chunks whose end is a value of k: its chunk head (a block of its own
** before the header, as strip-mined loops have) sets kstop = k + min(e -
** k, KCG_COUNT_CHUNK) and charges those iterations whole; the header then
** tests `k < kstop` instead of `k < e` (the loop's own compare: nothing is
** added to an iteration). Where that fails and k < e still holds, the
** chunk was whole: the next one is charged (the poll runs when the
** countdown runs out) and the header's test runs again.
**
** A chunk is charged before it runs, so a loop that leaves early (an
** escape after 3 of 200 iterations) has paid for iterations it did not
** make: polls come sooner, never later. KCG_COUNT_CHUNK bounds what one
** entry can overpay (1024: a loop entered again and again that leaves
** after one iteration polls once every 64 entries; a poll without a hook
** is about 60 instructions with its spills, one an entry, where charging
** each iteration cost two), and a long run passes the chunk's end test
** once every 1024 iterations (a few instructions). Mandelbrot's 200
** iterations a pixel fit one chunk. The loop's values leave its latch at
** a chunk's end, so LLVM's scheduler no longer orders that latch for the
** register allocator; backend/latch_order.c does (a register copy an
** iteration of the escape loop otherwise).
**
** Not for kernels (their while loops may be narrowed to i32 copies,
** cg_version.c), peeled loops, or loops holding Lua values.
*/
#include "codegen/cg.h"

#define KCG_COUNT_CHUNK 1024

/* s is `k + 1` (either order), an integer */
static int is_step(const KtySpec *sp, const KirInsn *s, const KirInsn *k) {
  if (s->op != KIR_ADD || s->nargs != 2 || sp->types[s->id].kind != T_INT ||
      sp->consts[s->id].kind != T_UNKNOWN)
    return 0;
  const KirInsn *o = s->args[0] == k ? s->args[1] : s->args[1] == k ? s->args[0] : NULL;
  return o && sp->consts[o->id].kind == T_INT && sp->consts[o->id].v.i == 1;
}

KirInsn *cg_count_var(CG *G, const KirLoop *L) {
  const KtySpec *sp = G->sp;
  const KirBlock *h = L->header;
  if (L->kind == KIR_LOOP_FORNUM || L->kind == KIR_LOOP_FORIN || G->S->kernel) return NULL;
  if (!sp->live[h->id] || sp->edges[h->id] != 3 || h->nsucc != 2) return NULL;
  const KirInsn *t = h->term;
  if (t == NULL || t->op != KIR_BR || t->nargs < 1) return NULL;
  if (!kir_inloop(L, h->succ[0]) || kir_inloop(L, h->succ[1])) return NULL;
  KirInsn *c = t->args[0];
  if (c->op != KIR_LT || c->nargs != 2 || c->block != h || sp->types[c->id].kind != T_BOOL ||
      sp->consts[c->id].kind != T_UNKNOWN)
    return NULL;
  KirInsn *k = c->args[0], *e = c->args[1];
  if (k->op != KIR_PHI || k->block != h || sp->types[k->id].kind != T_INT ||
      sp->consts[k->id].kind != T_UNKNOWN)
    return NULL;
  if (sp->types[e->id].kind != T_INT ||
      (sp->consts[e->id].kind == T_UNKNOWN && kir_inloop(L, e->block)))
    return NULL;
  for (int i = 0; i < h->ninsns; i++)   /* run again after a chunk (cg_count_br) */
    if (h->insns[i] != c && !KIR_ISCONST(h->insns[i]->op)) return NULL;
  int back = 0;
  for (int p = 0; p < h->npreds; p++) {
    if (!kir_inloop(L, h->preds[p])) continue;
    if (!is_step(sp, k->args[p], k)) return NULL;
    back++;
  }
  return back > 0 ? k : NULL;
}

/* min(e - k, KCG_COUNT_CHUNK), k < e (e - k exact as unsigned) */
static LLVMValueRef chunk_len(CG *G, LLVMValueRef k, LLVMValueRef e) {
  LLVMValueRef n = LLVMBuildSub(G->B, e, k, "");
  LLVMValueRef big = LLVMBuildICmp(G->B, LLVMIntUGT, n, cg_i64(G, KCG_COUNT_CHUNK), "");
  return LLVMBuildSelect(G->B, big, cg_i64(G, KCG_COUNT_CHUNK), n, "");
}

/* The chunk head of counted loop L (at G->chunkbb, its phis' entry values
** in G->ophis): the first chunk's end, its iterations charged. */
void cg_count_head(CG *G, KirLoop *L) {
  KirInsn *k = cg_count_var(G, L);
  KirBlock *h = L->header;
  LLVMPositionBuilderAtEnd(G->B, G->chunkbb[h->id]);
  LLVMValueRef k0 = G->ophis[k->id][0];
  LLVMValueRef e = cg_val(G, h->term->args[0]->args[1]).v;
  LLVMValueRef runs = LLVMBuildICmp(G->B, LLVMIntSLT, k0, e, "");
  LLVMValueRef take = LLVMBuildSelect(G->B, runs, chunk_len(G, k0, e), cg_i64(G, 0), "");
  LLVMBuildStore(G->B, LLVMBuildAdd(G->B, k0, take, ""), G->chunk[k->id]);
  if (!cg_poll_covered(G, L))   /* (else the loop around charged it: cg_pollcover.c) */
    cg_poll_charge(G, LLVMBuildAdd(G->B, take, cg_i64(G, 1), ""));   /* (the header's last test too) */
}

/* What the chunk head charges an entry with counter k0 and bound e (the
** first chunk, and the header's last test); k0 NULL: the most it can. */
LLVMValueRef cg_count_first_charge(CG *G, LLVMValueRef k0, LLVMValueRef e) {
  if (k0 == NULL) return cg_i64(G, KCG_COUNT_CHUNK + 1);
  LLVMValueRef runs = LLVMBuildICmp(G->B, LLVMIntSLT, k0, e, "");
  LLVMValueRef take = LLVMBuildSelect(G->B, runs, chunk_len(G, k0, e), cg_i64(G, 0), "");
  return LLVMBuildAdd(G->B, take, cg_i64(G, 1), "");
}

/* The header's test of counted loop L, when b is its header and the loop
** runs in chunks here (as emit_block decides: not in a copy without
** chunks). Where the chunk ends and k < e, the next chunk is charged and
** the header runs again with the same values (its instructions are
** constants and the test: see cg_count_var). So the chunk head runs only
** at the loop's entry, where its chunk's length is invariant when k's and
** e's entry values are (mandelbrot's 0 and maxit: taken out of the pixel
** loops), and the body keeps the header as its one entry (an edge from
** the chunk's end straight into the body had LLVM compute the next
** chunk's length in every iteration). Returns 0 when b is not such a
** header. */
int cg_count_br(CG *G, KirBlock *b) {
  KirLoop *L = b->loop;
  if (G->strip_at == NULL || G->strip_at[b->id] == NULL || L == NULL || L->header != b ||
      G->versioning)
    return 0;
  KirInsn *k = cg_count_var(G, L);
  if (k == NULL) return 0;
  KirInsn *c = b->term->args[0];
  LLVMValueRef kv = cg_val(G, k).v, e = cg_val(G, c->args[1]).v;
  LLVMValueRef kstop = LLVMBuildLoad2(G->B, G->i64, G->chunk[k->id], "kstop");
  LLVMBasicBlockRef stop = cg_bb(G, "countend"), more = cg_bb(G, "nextcount");
  LLVMValueRef inchunk = LLVMBuildICmp(G->B, LLVMIntSLT, kv, kstop, "");
  LLVMBuildCondBr(G->B, inchunk, cg_add_edge(G, b, b->succ[0]), stop);
  LLVMPositionBuilderAtEnd(G->B, stop);   /* k < e: the next chunk, else the exit */
  LLVMBuildCondBr(G->B, cg_truthy(G, cg_val(G, c)), more, cg_add_edge(G, b, b->succ[1]));
  LLVMPositionBuilderAtEnd(G->B, more);
  LLVMValueRef take = chunk_len(G, kv, e);
  LLVMBuildStore(G->B, LLVMBuildAdd(G->B, kv, take, ""), G->chunk[k->id]);
  cg_poll_charge(G, take);
  cg_reenter_header(G, b);
  return 1;
}

/* Does every iteration of loop P enter a counted loop that runs in chunks
** here (its entry block dominates each of P's latches)? Its chunk head
** then charges at least one for that iteration, and P's own charge at its
** header is left out (mandelbrot's pixel loops: two instructions a pixel). */
int cg_count_covers(CG *G, const KirLoop *P) {
  if (G->strip_at == NULL || G->versioning || P->nlatches == 0) return 0;
  KirFunc *f = G->sp->ir;
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *L = f->loops[l];
    if (L->parent != P || G->strip_at[L->header->id] != L || L->entry == NULL ||
        L->entry->loop != P || cg_count_var(G, L) == NULL)
      continue;
    int all = 1;
    for (int i = 0; i < P->nlatches && all; i++) all = kir_dominates(L->entry, P->latches[i]);
    if (all) return 1;
  }
  return 0;
}
