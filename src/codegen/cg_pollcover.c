/*
** cg_pollcover.c: a loop charged for its inner loops' first chunks
**
**     for x = 1, w do                      -- P
**       local zr, zi, n = 0.0, 0.0, 0
**       while n < maxiter and ... do ... n = n + 1 end   -- C
**       img[y][x] = n
**     end
**
** A strip-mined inner loop (cg_func.c) or a counted while loop
** (cg_countloop.c) charges the poll countdown at each entry, at its chunk
** head, for the first chunk it is about to run: a subtraction and a
** branch (with the countdown in memory, three instructions) at every
** pixel of Mandelbrot. When what that first chunk can charge is known
** before P, loop P is strip-mined itself and charges for it instead, once
** for a whole chunk of its own iterations:
**   - P is an integer for loop (entered from its forprep, not peeled, not
**     in a kjit.prange body, not in a kernel) whose loops are all
**     children C (at most KCG_COVER_MAX), innermost, run in chunks here,
**     each either a counted while loop, or an integer for loop that
**     stores to no array element, whose operands are integers
**     kfa_nest_invariant in P, with a constant step;
**   - at P's chunk head, W = 1 (P's own iteration) + the sum of what each
**     C's first chunk charges: min(count, KCG_POLL_PERIOD - 1) + 1 from
**     C's operands computed again there, 0 where C does not run; for a
**     counted loop the charge of cg_count_first_charge from its counter's
**     entry value and bound, when both are invariant in P, else its most
**     (KCG_COUNT_CHUNK + 1);
**   - P's chunks are max(1, KCG_POLL_PERIOD / W) iterations, each chunk
**     charged (its iterations) * W at its head; C's chunk head charges
**     nothing (cg_poll_covered), C's later chunks charge at C's latch
**     (strip-mined: strip_latch; counted: cg_count_br), as before.
** Measured (bench/poll_cost.sh, instructions a call against polls off):
** mandelbrot 1.021 -> 1.010, matmul's sums 0.984 either way. Not for a
** loop with other loops inside too: n-body's time-step loop, charged for
** its 5-iteration position loop beside the i/j nest, counted 1.409M
** instructions a call against 1.375M (LLVM's registers in the nest
** shuffled at each i). Not for inner loops that store: they have
** chunk-local copies (cg_func.c's chunk_locals), and bench jacobi's rows
** so charged counted 125 instructions a row against 124.
** Latency: an iteration of P does at most W charged units between two of
** P's chunk heads, plus what charges itself (C's later chunks, calls); a
** W above the period (a child of 65536 iterations) makes chunks of one
** iteration, whose work is at most KCG_COVER_MAX first chunks: at most
** that many periods between polls where each child polled at its own
** chunk head before. A chunk charges up to a period and the countdown
** polls below zero, so a long nest polls once every other chunk, as
** strip-mined loops do (Mandelbrot 800 x 600, 1000 iterations: 3900 polls
** against 7272, the longest gap 0.38 ms against 0.26 ms).
** The children's other copies (a checked copy of a versioned loop, a
** nest's checked copy) are not strip-mined and charge each iteration, as
** before: charged twice, never less.
*/
#include "codegen/cg.h"
#include "ir/ir_facts.h"

#define KCG_COVER_MAX 2

/* An innermost loop: every block of L is its own. */
static int innermost(const KirLoop *L) {
  for (int b = 0; b < L->nblocks; b++)
    if (L->blocks[b]->loop != L) return 0;
  return 1;
}

/* An integer operand invariant in P (computed again before P). */
static int int_invariant(const KtySpec *sp, const KirLoop *P, const KirInsn *x) {
  return sp->types[x->id].kind == T_INT && kfa_nest_invariant(sp, P, x);
}

/* The entry value of counted loop C's counter k (its phi's operand from
** outside C), or NULL where more than one edge enters. */
static KirInsn *count_entry(const KirLoop *C, const KirInsn *k) {
  const KirBlock *h = C->header;
  KirInsn *in = NULL;
  for (int p = 0; p < h->npreds; p++) {
    if (kir_inloop(C, h->preds[p])) continue;
    if (in != NULL) return NULL;
    in = k->args[p];
  }
  return in;
}

/* Does P charge for child C's first chunk (see the top)? */
static int coverable(CG *G, const KirLoop *P, const KirLoop *C) {
  const KtySpec *sp = G->sp;
  if (C->parent != P || G->strip_at == NULL || G->strip_at[C->header->id] != C ||
      G->chunkbb == NULL || G->chunkbb[C->header->id] == NULL || !innermost(C))
    return 0;
  if (cg_count_var(G, C)) return C->entry != NULL;
  if (C->kind != KIR_LOOP_FORNUM || C->prep == NULL || cg_loop_stores(C)) return 0;
  for (int a = 0; a < 3; a++)   /* init, limit, step */
    if (!int_invariant(sp, P, C->prep->args[a])) return 0;
  const KirInsn *st = C->prep->args[2];
  return sp->consts[st->id].kind == T_INT && sp->consts[st->id].v.i != 0;
}

/* How many children P has, all coverable (else -1). */
static int children(CG *G, const KirLoop *P) {
  KirFunc *f = G->sp->ir;
  int n = 0;
  for (int l = 0; l < f->nloops; l++) {
    if (f->loops[l]->parent != P) continue;
    if (!coverable(G, P, f->loops[l])) return -1;
    n++;
  }
  return n;
}

void cg_cover_plan(CG *G) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  G->weigh_at = NULL;
  if (G->pollctr == NULL || G->S->kernel || f->irreducible || G->strip_at == NULL) return;
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *P = f->loops[l];
    KirBlock *h = P->header;
    if (P->kind != KIR_LOOP_FORNUM || P->prep == NULL || !sp->live[h->id] ||
        sp->types[P->prep->id].kind != T_INT || (G->peel_at && G->peel_at[h->id]) ||
        P->prep->block->succ[0] != h || P->entry != P->prep->block || G->strip_at[h->id] ||
        cg_prange_owns(G, h) || cg_lua_loop_uses(G, P) || innermost(P))
      continue;
    int n = children(G, P);
    if (n <= 0 || n > KCG_COVER_MAX) continue;
    if (G->weigh_at == NULL) G->weigh_at = cg_zalloc(G, sizeof(KirLoop *) * (size_t)f->nblocks);
    G->weigh_at[h->id] = P;
    G->strip_at[h->id] = P;
    cg_strip_begin(G, P);
  }
}

/* In the code being emitted (not a copy where P runs unchunked). */
int cg_poll_weighed(CG *G, const KirLoop *P) {
  return P && G->weigh_at && G->strip_at && !G->versioning && G->weigh_at[P->header->id] == P &&
         G->strip_at[P->header->id] == P;
}

int cg_poll_covered(CG *G, const KirLoop *L) {
  return L->parent && cg_poll_weighed(G, L->parent) && coverable(G, L->parent, L);
}

/* What C's first chunk charges at most, computed before P. */
static LLVMValueRef first_charge(CG *G, KirLoop *P, KirLoop *C) {
  const KtySpec *sp = G->sp;
  KirInsn *k = cg_count_var(G, C);
  if (k) {
    KirInsn *k0 = count_entry(C, k), *e = C->header->term->args[0]->args[1];
    if (k0 == NULL || !int_invariant(sp, P, k0) || !int_invariant(sp, P, e))
      return cg_count_first_charge(G, NULL, NULL);
    return cg_count_first_charge(G, cg_version_nest_val(G, P, k0).v, cg_version_nest_val(G, P, e).v);
  }
  KirInsn *const *a = C->prep->args;
  LLVMValueRef skip;
  LLVMValueRef count = cg_int_count(G, cg_version_nest_val(G, P, a[0]).v, cg_version_nest_val(G, P, a[1]),
                                    cg_version_nest_val(G, P, a[2]).v, &skip);
  LLVMValueRef big = LLVMBuildICmp(G->B, LLVMIntUGT, count, cg_i64(G, KCG_POLL_PERIOD - 1), "");
  LLVMValueRef take = LLVMBuildSelect(G->B, big, cg_i64(G, KCG_POLL_PERIOD - 1), count, "");
  return LLVMBuildSelect(G->B, skip, cg_i64(G, 0), LLVMBuildAdd(G->B, take, cg_i64(G, 1), ""), "");
}

LLVMValueRef cg_cover_weight(CG *G, KirLoop *P) {
  KirFunc *f = G->sp->ir;
  LLVMValueRef w = cg_i64(G, 1);
  for (int l = 0; l < f->nloops; l++)
    if (coverable(G, P, f->loops[l])) w = LLVMBuildAdd(G->B, w, first_charge(G, P, f->loops[l]), "");
  return w;
}
