/*
** cg_pollfree.c: a loop nest run without polls where it fits one poll period
**
**     for i = 2, n - 1 do                  -- P
**       for j = 2, n - 1 do B[i][j] = ... end   -- C
**     end
**
** Each entry of a strip-mined inner loop C (cg_func.c) sets up a chunk
** (its length, a charge, the row's integers made opaque: chunk_locals),
** and an inner loop charged whole at a fit test (cg_fit_version, a
** prange body's single-chunk copy) tests and charges at each entry: jacobi
** paid that at each row (1.11 of polls off in instructions), n-body's j
** loop at each i (1.077), the parallel matmul body at each k (1.084).
** Where what the whole of P charges is known before P, P gets a second
** copy, entered when that fits a poll period, charged it all at once
** there, with no poll and no chunk anywhere inside: the nest as compiled
** without polls. Else the code as before (P's own blocks).
**   - P: an integer for loop entered from its forprep, not peeled, not
**     strip-mined itself (cg_pollcover.c's weighed loops keep theirs),
**     not in a versioned nest (it may be the nest's head: then its test
**     comes after the nest's, cg_version.c emit_nest, and the copy has the
**     nest's checks off, as its fast copy does), with no Lua values and no
**     call that charges (a recursion: cg_charged_call);
**   - P's loops: at most FREE_MAXCHILD, all children of P, innermost,
**     integer for loops entered from their forprep, not peeled, with a
**     constant step, whose init and limit are integers either invariant
**     in P (computed again before P: cg_version_nest_val) or P's control
**     variable plus a constant (n-body's `for j = i + 1, nb`: the count is
**     monotone in i, so its most is at one end of P's range, taken
**     where that sum does not wrap over the range);
**   - the test, before P (P's forprep has run: P runs at least once):
**     (P's iterations) * (1 + the sum over C of C's most iterations + 1)
**     at most KCG_POLL_PERIOD, each term below a period first (no
**     overflow). That bounds what P charges as compiled with polls (one
**     an iteration, each run of C its iterations and one), so the copy
**     polls no less often than the code it replaces: once a period.
**   - a deep nest: a loop of P with integer bounds invariant in P around
**     innermost loops of its own of the forms above (in its variable):
**     n-body's i loop around its j loop, in the time-step loop P. Its run
**     charges at most (its iterations) * (1 + its loops' most), a period
**     at most. P's copy is then entered when one iteration's most, W,
**     fits a period, and charges W at each iteration (P may run long:
**     n-body's 2000 steps of 37 units each do not fit one period); a
**     shallow nest's copy is charged whole (no charge in its rows).
**     Measured (bench/poll_cost.sh, instructions a call, polls on / off):
**     jacobi 1.131 -> 1.010-1.035, n-body 1.075 -> 0.858 (the copy
**     counts fewer instructions than the code without polls; times the
**     same), the parallel matmul body 1.084 -> 1.016.
** Not copied: a nest with a versioned nest inside (its copies are planned
** for its own blocks), around a loop cg_pollcover.c charges (matmul's j
** loop: its code is kept), one with a while loop or a generic for.
** Inner loops versioned for their bounds checks (cg_version.c) are
** versioned in the copy too (their own tables: CgTabs, as a nest's
** checked copy has), so the copy vectorizes as the code without polls.
** In a kjit.prange body (cg_prange.c) the copy is made in the worker.
*/
#include <stdint.h>
#include <string.h>
#include "codegen/cg.h"
#include "ir/ir_facts.h"

#define FREE_MAXCHILD 4
#define FREE_MAXINSNS 1500   /* a larger nest is not copied (compile time) */

struct CgFree {
  KirLoop *P;
  LLVMBasicBlockRef sel;                     /* the test */
  LLVMValueRef (*sphis)[3 + KJIT_MAXDIMS];   /* P's header phis there */
  int each;                                  /* 1: the copy charges each iteration w */
  LLVMValueRef w;
  CgTabs tabs;                               /* the copy's */
};

void cg_pollfree_swap(CG *G) { cg_tabs_swap(G, &G->freecopy->tabs); }

void cg_pollfree_header(CG *G, const KirBlock *blk) {
  struct CgFree *Fr = G->freecopy;
  if (Fr == NULL || !Fr->each || G->freeloop != Fr->P || blk != Fr->P->header) return;
  G->pollfree = 0;   /* (its iteration's most, computed at the test) */
  cg_poll_charge(G, Fr->w);
  G->pollfree = 1;
}

static int innermost(const KirLoop *L) {
  for (int b = 0; b < L->nblocks; b++)
    if (L->blocks[b]->loop != L) return 0;
  return 1;
}

/* An integer for loop entered from its forprep alone, not peeled. */
static int plain_for(CG *G, const KirLoop *L) {
  const KtySpec *sp = G->sp;
  const KirBlock *h = L->header;
  return L->kind == KIR_LOOP_FORNUM && L->prep != NULL && L->var != NULL && sp->live[h->id] &&
         sp->types[L->prep->id].kind == T_INT && !(G->peel_at && G->peel_at[h->id]) &&
         L->prep->block->succ[0] == h && L->entry == L->prep->block;
}

/* Operand x of a forprep in loop V (P or a child of P): 1, invariant in
** P; 2, V's variable plus the constant *c; 0, neither. */
static int operand_form(CG *G, const KirLoop *P, const KirLoop *V, const KirInsn *x, lua_Integer *c) {
  const KtySpec *sp = G->sp;
  if (sp->types[x->id].kind != T_INT) return 0;
  if (kfa_nest_invariant((KtySpec *)sp, P, x)) return 1;
  *c = 0;
  if (x == V->var) return 2;
  if (x->op != KIR_ADD || x->nargs != 2) return 0;
  for (int a = 0; a < 2; a++)
    if (x->args[a] == V->var && sp->consts[x->args[1 - a]->id].kind == T_INT) {
      *c = sp->consts[x->args[1 - a]->id].v.i;
      return 2;
    }
  return 0;
}

/* C, a loop of V: an innermost integer for loop with a constant step,
** its init and limit of operand_form (max: 2, V's variable allowed). */
static int bounded_for(CG *G, const KirLoop *P, const KirLoop *V, const KirLoop *C, int max) {
  const KtySpec *sp = G->sp;
  if (C->parent != V || !plain_for(G, C) || cg_lua_loop_uses(G, C)) return 0;
  const KirInsn *st = C->prep->args[2];
  if (sp->consts[st->id].kind != T_INT || sp->consts[st->id].v.i == 0) return 0;
  lua_Integer c;
  int a = operand_form(G, P, V, C->prep->args[0], &c), b = operand_form(G, P, V, C->prep->args[1], &c);
  return a && b && a <= max && b <= max;
}

/* C, a loop of P: innermost (bounds in P's variable allowed), or a loop
** whose bounds are invariant in P around innermost loops of its own
** (n-body's i loop around its j loop, in the time-step loop). */
static int child_ok(CG *G, const KirLoop *P, const KirLoop *C) {
  if (innermost(C)) return bounded_for(G, P, P, C, 2);
  if (!bounded_for(G, P, P, C, 1) || (G->strip_at && G->strip_at[C->header->id]))
    return 0;   /* (a loop charged for its loops' chunks keeps that: cg_pollcover.c) */
  KirFunc *f = G->sp->ir;
  int n = 0;
  for (int l = 0; l < f->nloops; l++) {
    const KirLoop *D = f->loops[l];
    if (D == C || !kir_inloop(C, D->header)) continue;
    if (!innermost(D) || !bounded_for(G, P, C, D, 2) || ++n > FREE_MAXCHILD) return 0;
  }
  return 1;
}

static int candidate(CG *G, KirLoop *P) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirBlock *h = P->header;
  if (!plain_for(G, P) || innermost(P) || (G->strip_at && G->strip_at[h->id]) ||
      cg_lua_loop_uses(G, P))
    return 0;
  for (KirLoop *a = P->parent; a; a = a->parent)
    if ((G->nest_at && G->nest_at[a->header->id]) || (G->free_at && G->free_at[a->header->id]))
      return 0;   /* (in a nest's checked copy too; one copy a nest) */
  int size = 0;
  for (int b = 0; b < P->nblocks; b++) {
    KirBlock *blk = P->blocks[b];
    size += blk->ninsns + blk->nphis;
    for (int i = 0; i < blk->ninsns; i++)
      if (blk->insns[i]->op == KIR_CALL && cg_charged_call(G, blk->insns[i])) return 0;
  }
  if (size > FREE_MAXINSNS) return 0;
  int n = 0;
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *C = f->loops[l];
    if (C != P && kir_inloop(P, C->header) && G->nest_at && G->nest_at[C->header->id])
      return 0;   /* (a nest inside: its copies are planned for its own blocks) */
    if (C->parent != P) continue;
    if (!child_ok(G, P, C) || ++n > FREE_MAXCHILD) return 0;
  }
  return n > 0;
}

void cg_pollfree_plan(CG *G) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  if (G->pollctr == NULL || G->S->kernel || f->irreducible) return;
  for (int l = 0; l < f->nloops; l++) {   /* (outer loops first) */
    KirLoop *P = f->loops[l];
    if (!candidate(G, P)) continue;
    if (G->free_at == NULL) G->free_at = cg_zalloc(G, sizeof(struct CgFree *) * (size_t)f->nblocks);
    struct CgFree *Fr = cg_zalloc(G, sizeof *Fr);
    Fr->P = P;
    for (int c = 0; c < f->nloops; c++)   /* (a deep nest: see the top) */
      Fr->each |= f->loops[c]->parent == P && !innermost(f->loops[c]);
    G->free_at[P->header->id] = Fr;
    if (!cg_prange_owns(G, P->header)) cg_pollfree_begin(G, P);   /* (else in its worker) */
  }
}

void cg_pollfree_begin(CG *G, KirLoop *P) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  struct CgFree *Fr = G->free_at[P->header->id];
  CgTabs *t = &Fr->tabs;
  memset(t, 0, sizeof *t);
  Fr->sel = cg_bb(G, "freesel");
  Fr->sphis = cg_zalloc(G, sizeof *Fr->sphis * (size_t)f->ninsns);
  cg_make_phis_at(G, P->header, Fr->sel, Fr->sphis);
  t->bbs = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
  t->phis = cg_zalloc(G, sizeof *t->phis * (size_t)f->ninsns);
  for (int b = 0; b < P->nblocks; b++)
    if (sp->live[P->blocks[b]->id]) t->bbs[P->blocks[b]->id] = cg_bb(G, "free");
  /* the inner loops versioned here are versioned in the copy too */
  KirLoop **ver = G->ver_at;
  G->freecopy = Fr;
  cg_pollfree_swap(G);
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *C = f->loops[l];
    if (C != P && kir_inloop(P, C->header) && ver && ver[C->header->id] == C)
      cg_version_plan_copy(G, C);
  }
  cg_pollfree_swap(G);
  G->freecopy = NULL;
  cg_peel_spills(G, P);   /* values used after P: both copies write them */
}

LLVMBasicBlockRef cg_pollfree_entry(CG *G, KirBlock *h, LLVMValueRef (**table)[3 + KJIT_MAXDIMS]) {
  struct CgFree *Fr = G->free_at ? G->free_at[h->id] : NULL;
  if (Fr == NULL || Fr->sel == NULL || G->freeloop || G->nestloop || G->versioning) return NULL;
  *table = Fr->sphis;
  return Fr->sel;
}

/* Operand x of child C's forprep before P, P's variable at v; where that
** is v + c, *ok also asks that v + c not wrap over P's range [lo, hi]
** (a constant c: at hi for c > 0, at lo for c < 0). */
static LLVMValueRef operand_at(CG *G, KirLoop *P, KirLoop *V, const KirInsn *x, LLVMValueRef v,
                               LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef *ok) {
  lua_Integer c;
  if (operand_form(G, P, V, x, &c) == 1) return cg_version_nest_val(G, P, x).v;
  LLVMValueRef fits = c > 0 ? LLVMBuildICmp(G->B, LLVMIntSLE, hi, cg_i64(G, INT64_MAX - c), "")
                    : c < 0 ? LLVMBuildICmp(G->B, LLVMIntSGE, lo, cg_i64(G, INT64_MIN - c), "")
                            : cg_i1(G, 1);
  *ok = LLVMBuildAnd(G->B, *ok, fits, "");
  return LLVMBuildAdd(G->B, v, cg_i64(G, (int64_t)c), "");
}

static LLVMValueRef nest_charge(CG *G, KirLoop *P, KirLoop *V, LLVMValueRef count, LLVMValueRef lo,
                                LLVMValueRef hi, LLVMValueRef *ok);
static LLVMValueRef run_charge(CG *G, KirLoop *P, KirLoop *V, KirLoop *C, LLVMValueRef lo, LLVMValueRef hi,
                               LLVMValueRef *ok);

/* What an iteration of V charges at most: one, and a run of each of its
** loops, V's variable over [lo, hi]. */
static LLVMValueRef per_iteration(CG *G, KirLoop *P, KirLoop *V, LLVMValueRef lo, LLVMValueRef hi,
                                  LLVMValueRef *ok) {
  KirFunc *f = G->sp->ir;
  LLVMValueRef w = cg_i64(G, 1);
  for (int l = 0; l < f->nloops; l++)
    if (f->loops[l]->parent == V) w = LLVMBuildAdd(G->B, w, run_charge(G, P, V, f->loops[l], lo, hi, ok), "");
  return w;
}

/* What one run of C (a loop of V) charges at most (0 where it runs
** none) while V's variable runs over [lo, hi]; *ok false where that is a
** period or more (the result is then 0). C's count is monotone in V's
** variable (in init, down for a positive step; in limit, up; both:
** constant), so it is taken at the end of the range where it is most. */
static LLVMValueRef run_charge(CG *G, KirLoop *P, KirLoop *V, KirLoop *C, LLVMValueRef lo, LLVMValueRef hi,
                               LLVMValueRef *ok) {
  const KtySpec *sp = G->sp;
  KirInsn *const *a = C->prep->args;
  lua_Integer c;
  int up = sp->consts[a[2]->id].v.i > 0;
  int vinit = operand_form(G, P, V, a[0], &c) == 2, vlimit = operand_form(G, P, V, a[1], &c) == 2;
  LLVMValueRef v = vinit && !vlimit ? (up ? lo : hi) : (up ? hi : lo);
  LLVMValueRef init = operand_at(G, P, V, a[0], v, lo, hi, ok);
  LLVMValueRef limit = operand_at(G, P, V, a[1], v, lo, hi, ok);
  LLVMValueRef skip, step = cg_version_nest_val(G, P, a[2]).v;
  LLVMValueRef count = cg_int_count(G, init, cg_mk(TY(T_INT), limit), step, &skip);
  LLVMValueRef small = LLVMBuildICmp(G->B, LLVMIntULE, count, cg_i64(G, KCG_POLL_PERIOD - 1), "");
  *ok = LLVMBuildAnd(G->B, *ok, LLVMBuildOr(G->B, skip, small, ""), "");
  LLVMValueRef zero = LLVMBuildOr(G->B, skip, LLVMBuildNot(G->B, small, ""), "");
  if (!innermost(C)) {   /* a loop around loops: its bounds invariant (child_ok) */
    LLVMValueRef last = LLVMBuildAdd(G->B, init, LLVMBuildMul(G->B, count, step, ""), "");
    LLVMValueRef in = cg_i1(G, 1);
    LLVMValueRef all = nest_charge(G, P, C, count, up ? init : last, up ? last : init, &in);
    *ok = LLVMBuildAnd(G->B, *ok, LLVMBuildOr(G->B, skip, in, ""), "");
    return LLVMBuildSelect(G->B, LLVMBuildOr(G->B, zero, LLVMBuildNot(G->B, in, ""), ""), cg_i64(G, 0), all, "");
  }
  return LLVMBuildSelect(G->B, zero, cg_i64(G, 0), LLVMBuildAdd(G->B, count, cg_i64(G, 1), ""), "");
}

/* What the whole of loop V charges at most, run count + 1 times (count
** at most a period - 1, else *ok false) with its variable over [lo, hi]:
** (count + 1) * (1 + its loops' runs), at most a period (else *ok false
** and the result 0): no overflow (the factors each below 2^17 or so). */
static LLVMValueRef nest_charge(CG *G, KirLoop *P, KirLoop *V, LLVMValueRef count, LLVMValueRef lo,
                                LLVMValueRef hi, LLVMValueRef *ok) {
  *ok = LLVMBuildAnd(G->B, *ok, LLVMBuildICmp(G->B, LLVMIntULE, count, cg_i64(G, KCG_POLL_PERIOD - 1), ""), "");
  LLVMValueRef w = per_iteration(G, P, V, lo, hi, ok);
  LLVMValueRef total = LLVMBuildMul(G->B, LLVMBuildAdd(G->B, count, cg_i64(G, 1), ""), w, "");
  LLVMValueRef fits = LLVMBuildICmp(G->B, LLVMIntULE, total, cg_i64(G, KCG_POLL_PERIOD), "");
  *ok = LLVMBuildAnd(G->B, *ok, fits, "");
  return LLVMBuildSelect(G->B, *ok, total, cg_i64(G, 0), "");
}

void cg_pollfree_emit(CG *G, KirLoop *P) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirBlock *h = P->header;
  struct CgFree *Fr = G->free_at[h->id];
  /* the copy's phis first: edges reach blocks before they are emitted */
  G->freecopy = Fr;
  cg_pollfree_swap(G);
  for (int b = 0; b < P->nblocks; b++) {
    KirBlock *blk = P->blocks[b];
    if (!sp->live[blk->id]) continue;
    cg_make_phis_at(G, blk, G->bbs[blk->id], G->phis);
    if (G->ver_at && G->ver_at[blk->id]) cg_make_phis_at(G, blk, G->vselbb[blk->id], G->vsphis);
  }
  cg_pollfree_swap(G);
  G->freecopy = NULL;
  /* the test: P's iterations (its forprep's count + 1) times the most
  ** an iteration charges */
  LLVMPositionBuilderAtEnd(G->B, Fr->sel);
  cg_before_loop(G, P);
  CgFor *F = &G->fors[P->prep->id];
  LLVMValueRef count = LLVMBuildLoad2(G->B, G->i64, F->rem, "");
  LLVMValueRef first = G->vals[P->prep->id].v;
  LLVMValueRef last = LLVMBuildAdd(G->B, first, LLVMBuildMul(G->B, count, F->step, ""), "");
  LLVMValueRef lo = first, hi = last;   /* P's range */
  const KirInsn *st = P->prep->args[2];
  if (sp->consts[st->id].kind == T_INT && sp->consts[st->id].v.i < 0) {
    lo = last;
    hi = first;
  } else if (sp->consts[st->id].kind != T_INT) {
    LLVMValueRef up = LLVMBuildICmp(G->B, LLVMIntSGT, F->step, cg_i64(G, 0), "");
    lo = LLVMBuildSelect(G->B, up, first, last, "");
    hi = LLVMBuildSelect(G->B, up, last, first, "");
  }
  LLVMValueRef ok = cg_i1(G, 1), total;
  if (Fr->each) {   /* each iteration charged (see deep) */
    Fr->w = per_iteration(G, P, P, lo, hi, &ok);
    ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntULE, Fr->w, cg_i64(G, KCG_POLL_PERIOD), ""), "");
    total = NULL;
  } else {
    total = nest_charge(G, P, P, count, lo, hi, &ok);
  }
  LLVMBasicBlockRef charge = cg_bb(G, "freecharge");
  LLVMBuildCondBr(G->B, ok, charge, G->bbs[h->id]);
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  for (int i = 0; i < h->nphis; i++) {   /* the header's phis, from the test's */
    KirInsn *p = h->phis[i];
    Type t = cg_phi_type(G, p);
    if (t.kind == T_UNKNOWN || sp->consts[p->id].kind != T_UNKNOWN) continue;
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int n = cg_parts(G, t, tys);
    for (int k = 0; k < n; k++) LLVMAddIncoming(G->phis[p->id][k], &Fr->sphis[p->id][k], &here, 1);
  }
  LLVMPositionBuilderAtEnd(G->B, charge);
  if (total) cg_poll_charge(G, total);
  LLVMBuildBr(G->B, Fr->tabs.bbs[h->id]);
  here = LLVMGetInsertBlock(G->B);
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *p = h->phis[i];
    Type t = cg_phi_type(G, p);
    if (t.kind == T_UNKNOWN || sp->consts[p->id].kind != T_UNKNOWN) continue;
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int n = cg_parts(G, t, tys);
    for (int k = 0; k < n; k++) LLVMAddIncoming(Fr->tabs.phis[p->id][k], &Fr->sphis[p->id][k], &here, 1);
  }
  /* the copy: P's blocks at its tables, nothing charged */
  G->freecopy = Fr;
  G->freeloop = P;
  G->pollfree = 1;
  cg_pollfree_swap(G);
  for (int b = 0; b < f->nblocks; b++) {
    KirBlock *blk = f->blocks[b];
    if (!sp->live[b] || !kir_inloop(P, blk)) continue;
    if (G->ver_at && G->ver_at[b]) cg_version_emit(G, G->ver_at[b]);
    cg_use_phis(G, blk, G->phis);
    cg_emit_block_at(G, blk, G->bbs[b]);
  }
  cg_pollfree_swap(G);
  G->pollfree = 0;
  G->freeloop = NULL;
  G->freecopy = NULL;
}
