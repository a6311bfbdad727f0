/*
** cg_version.c: loop versioning (bounds-check hoisting) in the bytecode
** code generator.
**
**     for i = 1, n do y[i] = y[i] + a * x[i] end
**
** ir_facts.h (2.) lists the checks of an integer for loop that one range
** test before the loop proves (KfaLoop.checks; KfaFacts.hoisted by
** instruction). A versioned loop is emitted twice:
**   - the fast copy, at the loop's own blocks, where those checks are off
**     (cg_version_unchecked), so that LLVM vectorizes it;
**   - the checked copy, at blocks of its own, with every check (as
**     written), marked not to vectorize where the target says so (it only
**     runs when an access is out of range, or the test was conservative:
**     a loop that leaves early), which halves what LLVM optimizes.
** The loop's entry edge lands in a test block ("vsel", with the header's
** phis) that computes the range of the control variable from forprep's
** init, iteration count and step (the last value init + count * step in
** 64 bits, exact since the variable takes it; lo + offset in 128 bits,
** where it never overflows), tests every hoisted access, and enters one
** copy or the other. Both copies exit to the same blocks; a value of the
** loop used after it (not through an exit phi) goes through a stack slot
** both copies write (cg_peel.c's spills).
**
** What is versioned on its own: innermost integer for loops (every block
** of the loop is its own: no inner loop of any kind), on every target
** (NVPTX without the no-vectorize hint, which LLVM 7 NVVM does not know),
** entered from forprep alone, not outlined by kjit.prange, and not peeled
** (a peeled loop keeps its checks: the peeled iteration and the versions
** would need four copies).
**
** Nests (ir_facts.h 2., nestchecks): a rectangular nest's head O (inner
** loops' bounds invariant in O; no prange, generic-for or peeled loop
** inside; not inside another such nest) gets one test before it ("nestsel")
** proving every nest check over the whole range of its loop (computed
** from that loop's forprep operands, which O does not change; a loop that
** never runs proves its checks), where the loop's step is a constant and
** its limit can be read without raising (a check in several loops'
** variables, the row-major `x[(i - 1) * n + j]`, takes the least and
** greatest value of its sum over those loops' ranges: nest_linear_test;
** on the CPU only). The fast copy is O's own blocks,
** with those checks off; an inner loop there is still versioned on its
** own for the checks the nest test left (a run-time step, a key varying
** in O). The checked copy is all of O again, at blocks and phis of its own
** (struct CgNest's tables, swapped into G while it is emitted, the outer
** ones back for the edges that leave it). In kernels, inner loops are
** versioned (and strip-mined, in the simulator) there as they would be
** without the nest test, so that a test failing for one row (x[i - 1]
** behind `if i > 1`) costs what it cost before (the old generator
** versioned three levels deep in kernels, retesting at each entry). On
** the CPU the checked copy is the nest as written, scalar (no-vectorize
** hints, no strip-mining: polls each iteration), as a checked copy of a
** loop is: with inner versioning and vectorizing there too, the stencil of
** bench/compile_time.lua compiled in twice the time (510 ms against 270),
** for no gain on the fast path; where a guard fails the nest test, it
** mostly failed the inner loop's too (x[i][j - 1] behind `if j > 1`).
**
** A serial kjit.prange loop (compiled without parallel, not in a
** parallel body) without inner loops is such a nest head too (with
** them, its inner loops are versioned on their own: see nest_candidate):
** its range is its call's (ir_facts.h 2.), its test before the loop; where it runs in poll chunks (cg_prange.c), the fast
** copy enters its chunk head, and the checked copy runs unchunked
** (cg_prange.c's chunked(): polled every iteration, as a checked copy is).
** A triangular inner loop of a parallel prange body (`for j = 1, i`)
** takes its range over the chunk's whole range of i (triangle_range).
**
** Parallel kjit.prange bodies (cg_prange.c): no loop of a body is
** versioned here; the worker is made twice, the second one testing at
** entry the prange loop's nest checks for the chunk it was given
** (cg_version_worker_test: nest_test with the prange variable's range
** given) and running its body with those checks off, or calling the
** first, every check on, when the test fails.
**
** Narrow while counters (kernels; ir_facts.h 3., narrowk, the old
** emit_while's): a while loop with a counter k < e (k <= e) that it steps
** by one gets a test that k's entry value and e fit [INT32_MIN,
** INT32_MAX - 1]; then a copy where k is an i32 phi, its compare and step
** 32-bit (cg_version_narrow_insn), its other uses sign-extended. Nothing
** truncates into that phi (instcombine turned a phi of truncs back into an
** i64 phi: cg_version_i32 takes the i32 a sext extends), and k's stack slot
** (a use after the loop) is an i32 slot there, copied back at each exit
** edge (cg_func.c's add_edge lands such an edge in a block of its own), so
** that no sign extension runs in the loop: mandelbrot's PTX has 26
** registers (the old generator's 28).
*/
#include <stdint.h>
#include <stdlib.h>   /* getenv */
#include <string.h>
#include <llvm-c/DebugInfo.h>   /* LLVMTemporaryMDNode */
#include "codegen/cg.h"
#include "ir/ir_facts.h"

static int versionable(CG *G, const KfaFacts *F, KirLoop *L) {
  KtySpec *sp = G->sp;
  KirBlock *h = L->header;
  if (L->kind != KIR_LOOP_FORNUM || L->prep == NULL || L->var == NULL || !sp->live[h->id] ||
      cg_prange_owns(G, h) || sp->types[L->prep->id].kind != T_INT ||
      (G->peel_at && G->peel_at[h->id]) || L->prep->block->succ[0] != h || L->entry != L->prep->block)
    return 0;
  const KfaLoop *fl = &F->loops[L->id];
  if (!fl->isint || fl->nchecks == 0) return 0;
  for (int b = 0; b < L->nblocks; b++)
    if (L->blocks[b]->loop != L) return 0;   /* innermost only */
  int outside = 0;
  for (int i = 0; i < h->npreds; i++) outside += !kir_inloop(L, h->preds[i]);
  return outside == 1;
}

/* A while loop of a kernel with a narrow counter (ir_facts.h 3.): the
** loop is innermost (no copies inside), entered from one block. */
static int narrowable(CG *G, const KfaFacts *F, KirLoop *L) {
  KtySpec *sp = G->sp;
  KirBlock *h = L->header;
  if (!G->S->kernel || L->kind == KIR_LOOP_FORNUM || F->loops[L->id].narrowk == NULL ||
      !sp->live[h->id] || cg_prange_owns(G, h) || (G->peel_at && G->peel_at[h->id]) ||
      L->entry == NULL)
    return 0;
  for (int b = 0; b < L->nblocks; b++)
    if (L->blocks[b]->loop != L) return 0;   /* innermost only */
  int outside = 0;
  for (int i = 0; i < h->npreds; i++) outside += !kir_inloop(L, h->preds[i]);
  return outside == 1;
}

/* ---- Nests versioned as a whole ------------------------------------------ */

struct CgNest {
  KirLoop *O;
  KfaCheck *checks; int nchecks;   /* what its test proves (off in the fast copy) */
  CgTabs tabs;            /* the checked copy's tables (the outer ones while
                             the copy is emitted) */
};

#define SWAP(a, b) do { __typeof__(a) t_ = (a); (a) = (b); (b) = t_; } while (0)
void cg_tabs_swap(CG *G, CgTabs *t) {
  SWAP(G->bbs, t->bbs); SWAP(G->chunkbb, t->chunkbb); SWAP(G->vselbb, t->vselbb);
  SWAP(G->vbbs, t->vbbs); SWAP(G->phis, t->phis); SWAP(G->ophis, t->ophis);
  SWAP(G->vsphis, t->vsphis); SWAP(G->vphis, t->vphis); SWAP(G->ver_at, t->ver_at);
  SWAP(G->strip_at, t->strip_at); SWAP(G->chunk, t->chunk);
}
void cg_version_swap(CG *G) { cg_tabs_swap(G, &G->nestcopy->tabs); }

#define NEST_MAXINSNS 4000   /* a larger nest is not copied (compile time) */

/* Can loop m's range be computed before the nest (its forprep's operands
** are invariant there, ir_facts.h 2.): an integer loop with a constant
** step (no division by a zero step before its own check) and a limit the
** test can read without raising. */
static int range_known(CG *G, const KfaFacts *F, const KirLoop *m, const KirLoop *O) {
  const KfaLoop *fm = &F->loops[m->id];
  KtySpec *sp = G->sp;
  if (!fm->isint || fm->stepsign == 0 || fm->init == NULL) return 0;
  int lk = sp->types[fm->limit->id].kind;
  if (!(sp->types[fm->init->id].kind == T_INT && (fm->step == NULL || sp->types[fm->step->id].kind == T_INT) &&
        (lk == T_INT || lk == T_F64 || lk == T_F32)))
    return 0;
  if (O == NULL || m == O || (kfa_nest_invariant(sp, O, fm->init) && kfa_nest_invariant(sp, O, fm->limit)))
    return 1;
  /* a triangular loop of prange head O (ir_facts.h 2.): O's range is a
  ** worker's chunk, or known before O */
  const KfaPrange *P = F->loops[O->id].prange;
  return lk == T_INT && P && (P->parallel || range_known(G, F, O, NULL));
}

/* A nest check in several variables (KfaCheck.vterms) can be tested: the
** range of each loop is known (given: O's is, a worker's chunk), and the target is the CPU (the test
** multiplies in 128 bits, which the NVPTX back ends are not asked to do). */
static int vterms_known(CG *G, const KfaFacts *F, const KfaCheck *c, const KirLoop *O, int given) {
  if (G->S->kernel) return 0;
  for (int i = 0; i < c->nvterms; i++)
    if (!(given && c->vterms[i].loop == O) && !range_known(G, F, c->vterms[i].loop, O)) return 0;
  return 1;
}

/* A serial kjit.prange loop with nest checks (ir_facts.h 2.), entered
** from one block. */
static int serial_prange(CG *G, const KfaFacts *F, KirLoop *O) {
  const KfaLoop *fo = &F->loops[O->id];
  return fo->prange && !fo->prange->parallel && fo->isint && O->entry != NULL &&
         !cg_prange_owns(G, O->header);
}

/* O is versioned as a whole: an integer for loop with inner loops, entered
** as versionable() asks, or a serial prange loop without inner loops,
** whose nest checks exist, with no loop inside that has copies of
** its own kind (peeled, prange) or a generic for. */
static int nest_candidate(CG *G, const KfaFacts *F, KirLoop *O) {
  KtySpec *sp = G->sp;
  KirBlock *h = O->header;
  int pr = serial_prange(G, F, O);
  if (!sp->live[h->id] || F->loops[O->id].nnestchecks == 0 || (G->peel_at && G->peel_at[h->id]))
    return 0;
  if (!pr && (O->kind != KIR_LOOP_FORNUM || O->prep == NULL || O->var == NULL ||
              cg_prange_owns(G, h) || sp->types[O->prep->id].kind != T_INT ||
              O->prep->block->succ[0] != h || O->entry != O->prep->block))
    return 0;
  for (KirLoop *a = O->parent; a; a = a->parent)
    if (G->nest_at && G->nest_at[a->header->id]) return 0;   /* one level of nests */
  int inner = 0, size = 0;
  for (int b = 0; b < O->nblocks; b++) {
    KirBlock *blk = O->blocks[b];
    KirLoop *m = blk->loop;
    size += blk->ninsns + blk->nphis;
    if (m == O) continue;
    inner = 1;
    if (m->kind == KIR_LOOP_FORIN || cg_prange_owns(G, blk) || (G->peel_at && G->peel_at[m->header->id]))
      return 0;
  }
  int outside = 0;
  for (int i = 0; i < h->npreds; i++) outside += !kir_inloop(O, h->preds[i]);
  /* a serial prange loop with inner loops is left to them: each is
  ** versioned on its own at its entry, as before, and the loop's own
  ** checks (rows c[i]) run once an iteration. Versioned whole, a
  ** convolution's body (`for j = 1, m do acc = acc + a[i + j - 1] *
  ** z[m - j + 1] end`, m = 16) ran 1.10-1.15x its time without checks,
  ** against 0.98-1.02x so: the same inner loop, more spills around it */
  if (pr && inner) return 0;
  return (inner || pr) && outside == 1 && size <= NEST_MAXINSNS;
}

static void alloc_ver(CG *G) {
  KirFunc *f = G->sp->ir;
  if (G->ver_at) return;
  G->ver_at = cg_zalloc(G, sizeof(KirLoop *) * (size_t)f->nblocks);
  G->vselbb = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
  G->vbbs = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
  G->vsphis = cg_zalloc(G, sizeof *G->vsphis * (size_t)f->ninsns);
  G->vphis = cg_zalloc(G, sizeof *G->vphis * (size_t)f->ninsns);
}

/* L (a loop of the current tables) is versioned: its test and copy
** (their blocks' names: test, copy). */
static void plan_loop(CG *G, KirLoop *L, const char *test, const char *copy) {
  alloc_ver(G);
  G->ver_at[L->header->id] = L;
  G->vselbb[L->header->id] = cg_bb(G, test);
  for (int b = 0; b < L->nblocks; b++)
    if (G->sp->live[L->blocks[b]->id]) G->vbbs[L->blocks[b]->id] = cg_bb(G, copy);
  cg_peel_spills(G, L);
}

void cg_version_plan_copy(CG *G, KirLoop *L) { plan_loop(G, L, "vsel", "checked"); }

/* Does innermost loop L have a check that nothing proves yet? */
static int has_open_check(CG *G, const KfaFacts *F, KirLoop *L) {
  const KfaLoop *fl = &F->loops[L->id];
  for (int i = 0; i < fl->nchecks; i++)
    if (!(G->nestoff && G->nestloop == NULL && G->nestoff[fl->checks[i].insn->id])) return 1;
  return 0;
}

/* Nest O's checked copy: its blocks and the plan of its inner loops (each
** versioned as on its own). */
static void plan_nest_copy(CG *G, const KfaFacts *F, struct CgNest *N) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirLoop *O = N->O;
  CgTabs *t = &N->tabs;
  int inner = G->S->kernel;   /* the CPU: the copy as written (see the top) */
  t->bbs = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
  t->phis = cg_zalloc(G, sizeof *t->phis * (size_t)f->ninsns);
  t->strip_at = inner ? G->strip_at : NULL;
  t->chunk = inner ? G->chunk : NULL;
  if (t->strip_at) {
    t->chunkbb = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
    t->ophis = cg_zalloc(G, sizeof *t->ophis * (size_t)f->ninsns);
  }
  for (int b = 0; b < O->nblocks; b++) {
    KirBlock *blk = O->blocks[b];
    if (!sp->live[blk->id]) continue;
    t->bbs[blk->id] = cg_bb(G, "nchecked");
    if (t->strip_at && t->strip_at[blk->id]) t->chunkbb[blk->id] = cg_bb(G, "chunk");
  }
  if (!inner) return;
  G->nestcopy = N;
  G->nestloop = O;
  cg_tabs_swap(G, t);
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *L = f->loops[l];
    if (L != O && kir_inloop(O, L->header) &&
        ((G->boundscheck && versionable(G, F, L)) || narrowable(G, F, L)))
      plan_loop(G, L, "vsel", "checked");
  }
  cg_tabs_swap(G, t);
  G->nestloop = NULL;
  G->nestcopy = NULL;
}

static void plan_kind_splits(CG *G);

void cg_version_plan(CG *G) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  G->ver_at = NULL;
  G->kindsplit = NULL;
  G->kindint = NULL;
  G->versioning = NULL;
  G->narrowing = NULL;
  G->nest_at = NULL;
  G->nestcopy = NULL;
  G->nestloop = NULL;
  G->nestoff = NULL;
  const KfaFacts *F = cg_prange_facts(G);
  if (F == NULL || f->irreducible) return;
  /* nests first (outer loops first): what their tests prove is off in
  ** their fast copies, where an inner loop is versioned only for the rest */
  for (int l = 0; l < f->nloops && G->boundscheck; l++) {
    KirLoop *O = f->loops[l];
    if (!nest_candidate(G, F, O) || cg_lua_loop_uses(G, O)) continue;   /* (Lua values: cg_lua.c) */
    const KfaLoop *fo = &F->loops[O->id];
    struct CgNest *N = cg_zalloc(G, sizeof *N);
    N->O = O;
    N->checks = cg_zalloc(G, sizeof(KfaCheck) * (size_t)fo->nnestchecks);
    for (int i = 0; i < fo->nnestchecks; i++) {
      const KfaCheck *c = &fo->nestchecks[i];
      if (c->affine && !range_known(G, F, c->vloop, O)) continue;
      if (c->nvterms && !vterms_known(G, F, c, O, 0)) continue;
      N->checks[N->nchecks++] = *c;
    }
    if (N->nchecks == 0) continue;
    if (G->nest_at == NULL) {
      G->nest_at = cg_zalloc(G, sizeof(struct CgNest *) * (size_t)f->nblocks);
      G->nestoff = cg_zalloc(G, (size_t)f->ninsns);
    }
    G->nest_at[O->header->id] = N;
    for (int i = 0; i < N->nchecks; i++) G->nestoff[N->checks[i].insn->id] = 1;
    alloc_ver(G);
    G->ver_at[O->header->id] = O;
    G->vselbb[O->header->id] = cg_bb(G, "nestsel");
    cg_peel_spills(G, O);
  }
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *L = f->loops[l];
    if (cg_lua_loop_uses(G, L)) continue;   /* Lua values (cg_lua.c): one copy of the loop */
    if ((G->boundscheck && versionable(G, F, L) && has_open_check(G, F, L)) || narrowable(G, F, L))
      plan_loop(G, L, "vsel", "checked");
  }
  for (int l = 0; l < f->nloops && G->nest_at; l++)
    if (G->nest_at[f->loops[l]->header->id]) plan_nest_copy(G, F, G->nest_at[f->loops[l]->header->id]);
  plan_kind_splits(G);
}

int cg_version_unchecked(CG *G, const KirInsn *v) {
  /* a nest's fast copy (in its checked copy, nestloop is set) */
  if (G->nestoff && G->nestloop == NULL && G->nestoff[v->id]) return 1;
  if (G->ver_at == NULL || G->versioning != NULL) return 0;
  const KfaFacts *F = cg_prange_facts(G);
  const KfaLoop *fl = F->hoisted[v->id];
  /* (a kind split's loop is in ver_at through plan_loop too, but has no
  ** range test: its hoisted checks stay checked) */
  return fl && G->ver_at[fl->loop->header->id] == fl->loop &&
         !(G->kindsplit && G->kindsplit[fl->loop->header->id]);
}

static void emit_copy(CG *G, KirLoop *L, int novec);

static LLVMValueRef sext128(CG *G, LLVMValueRef x) {
  return LLVMBuildSExt(G->B, x, LLVMInt128TypeInContext(G->C), "");
}

static CgVal nest_val(CG *G, const KirLoop *O, const KirInsn *v);

/* The wrapped i64 sum of terms (each negated where tneg), computed before
** O, as i128. */
static LLVMValueRef terms_sum(CG *G, const KirLoop *O, KirInsn *const *terms, const uint8_t *tneg, int n) {
  LLVMValueRef w = cg_i64(G, 0);
  for (int t = 0; t < n; t++) {
    LLVMValueRef x = nest_val(G, O, terms[t]).v;
    w = tneg[t] ? LLVMBuildSub(G->B, w, x, "") : LLVMBuildAdd(G->B, w, x, "");
  }
  return sext128(G, w);
}

/* The least and greatest key (i128) of check c for its loop variable in
** [lo, hi] (i128), computed before loop O: v + off, off + v, v - off
** (kfa_affine_); +-v plus the wrapped i64 sum of the terms, as the body
** computes it (kfa_linear_: -v flips which end is least; exact in 128
** bits, so no key of the range wraps when both ends are in bounds); an
** invariant key, computed again before O where the body computes it. */
static void key_bounds(CG *G, const KirLoop *O, const KfaCheck *c, LLVMValueRef lo, LLVMValueRef hi,
                       LLVMValueRef *klo, LLVMValueRef *khi) {
  LLVMTypeRef i128 = LLVMInt128TypeInContext(G->C);
  if (!c->affine) {
    *klo = *khi = sext128(G, nest_val(G, O, c->key).v);
    return;
  }
  LLVMValueRef off;
  if (c->negv || c->nterms) {
    off = terms_sum(G, O, c->terms, c->tneg, c->nterms);
  } else {
    off = c->off == NULL ? LLVMConstInt(i128, 0, 0)
          : c->offconst ? LLVMConstInt(i128, (unsigned long long)c->offk, 1)
                        : sext128(G, cg_val(G, c->off).v);
    if (c->negoff) off = LLVMBuildSub(G->B, LLVMConstInt(i128, 0, 0), off, "");
  }
  if (c->negv) {
    *klo = LLVMBuildSub(G->B, off, hi, "");
    *khi = LLVMBuildSub(G->B, off, lo, "");
  } else {
    *klo = LLVMBuildAdd(G->B, lo, off, "");
    *khi = LLVMBuildAdd(G->B, hi, off, "");
  }
}

/* Every hoisted access of loop fl in bounds for its control variable in
** [lo, hi] (i128). */
static LLVMValueRef range_test(CG *G, const KfaLoop *fl, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMTypeRef i128 = LLVMInt128TypeInContext(G->C);
  LLVMValueRef all = cg_i1(G, 1), one = LLVMConstInt(i128, 1, 0);
  for (int i = 0; i < fl->nchecks; i++) {
    const KfaCheck *c = &fl->checks[i];
    if (G->nestoff && G->nestloop == NULL && G->nestoff[c->insn->id]) continue;   /* proven */
    CgVal b = cg_val(G, c->base);
    LLVMValueRef dim = sext128(G, b.dims[c->dim]), klo, khi;
    key_bounds(G, fl->loop, c, lo, hi, &klo, &khi);
    all = LLVMBuildAnd(G->B, all, LLVMBuildICmp(G->B, LLVMIntSGE, klo, one, ""), "");
    all = LLVMBuildAnd(G->B, all, LLVMBuildICmp(G->B, LLVMIntSLE, khi, dim, ""), "");
  }
  return all;
}

/* The phis of L's copy at G->vbbs (in G->vphis). */
static void copy_phis(CG *G, KirLoop *L) {
  for (int b = 0; b < L->nblocks; b++)
    if (G->sp->live[L->blocks[b]->id])
      cg_make_phis_at(G, L->blocks[b], G->vbbs[L->blocks[b]->id], G->vphis);
}

/* Adds vsel's phis as incoming values of the header phis in table, from
** the current block. */
static void pass_phis(CG *G, KirBlock *h, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *p = h->phis[i];
    Type t = cg_phi_type(G, p);
    if (t.kind == T_UNKNOWN || G->sp->consts[p->id].kind != T_UNKNOWN) continue;
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int n = cg_parts(G, t, tys);
    for (int k = 0; k < n; k++) LLVMAddIncoming(table[p->id][k], &G->vsphis[p->id][k], &here, 1);
  }
}

/* The back edge br of a checked copy: not to be vectorized (nor
** interleaved): llvm.loop metadata, a distinct node naming itself. */
static void no_vectorize(CG *G, LLVMValueRef br) {
  LLVMMetadataRef self = LLVMTemporaryMDNode(G->C, NULL, 0);
  static const char key[] = "llvm.loop.vectorize.enable";
  LLVMMetadataRef hint[2] = { LLVMMDStringInContext2(G->C, key, sizeof key - 1),
                              LLVMValueAsMetadata(cg_i1(G, 0)) };
  LLVMMetadataRef ops[2] = { self, LLVMMDNodeInContext2(G->C, hint, 2) };
  LLVMMetadataRef id = LLVMMDNodeInContext2(G->C, ops, 2);
  LLVMMetadataReplaceAllUsesWith(self, id);   /* frees the temporary */
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(G->C, "llvm.loop", 9), LLVMMetadataAsValue(G->C, id));
}

/* x (i64) in [INT32_MIN, INT32_MAX - 1] */
static LLVMValueRef fits_narrow(CG *G, LLVMValueRef x) {
  LLVMValueRef off = LLVMBuildSub(G->B, x, cg_i64(G, INT32_MIN), "");
  return LLVMBuildICmp(G->B, LLVMIntULE, off, cg_i64(G, (int64_t)UINT32_MAX - 1), "");
}

/* A while loop with a narrow counter k (kernels; see the top of the
** file): the test says whether k's entry value and the bound fit, the
** copy at G->vbbs has k in an i32 phi. */
static void emit_narrow(CG *G, KirLoop *L, const KfaNarrow *n) {
  KtySpec *sp = G->sp;
  KirBlock *h = L->header;
  copy_phis(G, L);
  /* k's phi in the narrow copy: i32 (add_edge_tab truncates what reaches it) */
  LLVMValueRef wide = G->vphis[n->k->id][0];
  LLVMPositionBuilderBefore(G->B, wide);
  G->vphis[n->k->id][0] = LLVMBuildPhi(G->B, G->i32, n->k->name ? n->k->name : "k32");
  LLVMInstructionEraseFromParent(wide);
  LLVMPositionBuilderAtEnd(G->B, G->vselbb[h->id]);
  cg_before_loop(G, L);
  LLVMValueRef kin = G->vsphis[n->k->id][0];
  LLVMValueRef ok = fits_narrow(G, kin);
  if (!n->boundconst) ok = LLVMBuildAnd(G->B, ok, fits_narrow(G, cg_val(G, n->bound).v), "");
  LLVMValueRef k32 = LLVMBuildTrunc(G->B, kin, G->i32, "");
  LLVMBuildCondBr(G->B, ok, G->vbbs[h->id], G->bbs[h->id]);
  pass_phis(G, h, G->phis);
  G->vsphis[n->k->id][0] = k32;   /* what the narrow phi takes */
  pass_phis(G, h, G->vphis);
  G->vsphis[n->k->id][0] = kin;
  /* the copy; k's stack slot (when used after the loop) is an i32 in it,
  ** copied back at each exit (cg_version_narrow_exit): no sign extension
  ** in the loop */
  KirFunc *f = sp->ir;
  LLVMValueRef slot = G->spill ? G->spill[n->k->id][0] : NULL;
  G->narrow_wide = slot;
  if (slot) G->spill[n->k->id][0] = cg_alloca(G, G->i32, "k32");
  G->versioning = L;
  G->narrowing = n;
  for (int b = 0; b < f->nblocks; b++) {
    KirBlock *blk = f->blocks[b];
    if (!sp->live[b] || !kir_inloop(L, blk)) continue;
    cg_use_phis(G, blk, G->vphis);
    if (blk == h) {   /* k's other uses see it sign-extended */
      LLVMPositionBuilderAtEnd(G->B, G->vbbs[b]);
      G->vals[n->k->id] = cg_mk(TY(T_INT), LLVMBuildSExt(G->B, G->vphis[n->k->id][0], G->i64, ""));
    }
    cg_emit_block_at(G, blk, G->vbbs[b]);
  }
  G->narrowing = NULL;
  G->versioning = NULL;
  if (slot) G->spill[n->k->id][0] = slot;
}

void cg_version_narrow_exit(CG *G) {
  const KfaNarrow *n = G->narrowing;
  LLVMValueRef *slot = G->spill ? &G->spill[n->k->id][0] : NULL;
  if (slot == NULL || *slot == NULL) return;
  LLVMBuildStore(G->B, LLVMBuildSExt(G->B, LLVMBuildLoad2(G->B, G->i32, *slot, ""), G->i64, ""),
                 G->narrow_wide);
}

/* x (an i64 that fits) in 32 bits: the i32 that x extends, else a trunc.
** No trunc reaches the i32 phi: instcombine turns a phi of truncs into a
** trunc of an i64 phi, the counter widened again. */
LLVMValueRef cg_version_i32(CG *G, LLVMValueRef x) {
  if (LLVMIsASExtInst(x) && LLVMTypeOf(LLVMGetOperand(x, 0)) == G->i32) return LLVMGetOperand(x, 0);
  return LLVMBuildTrunc(G->B, x, G->i32, "");
}

int cg_version_narrow_insn(CG *G, const KirInsn *v) {
  const KfaNarrow *n = G->narrowing;
  if (v == n->cmp) {   /* k < e, k <= e: in 32 bits (LLVM keeps sext < sext 64-bit) */
    LLVMValueRef k = cg_version_i32(G, cg_val(G, n->k).v);
    LLVMValueRef e = n->boundconst ? cg_i32(G, (int32_t)n->boundk)
                                   : cg_version_i32(G, cg_val(G, n->bound).v);
    G->vals[v->id] = cg_mk(TY(T_BOOL), LLVMBuildICmp(G->B, v->op == KIR_LT ? LLVMIntSLT : LLVMIntSLE,
                                                     k, e, ""));
    return 1;
  }
  if (v == n->step) {  /* x + 1, x a value of k that passed the test: no overflow */
    KirInsn *x = v->args[0]->op == KIR_INT && v->args[1]->op != KIR_INT ? v->args[1] : v->args[0];
    LLVMValueRef x32 = cg_version_i32(G, cg_val(G, x).v);
    LLVMValueRef r = LLVMBuildAdd(G->B, x32, cg_i32(G, 1), "");
    G->vals[v->id] = cg_mk(TY(T_INT), LLVMBuildSExt(G->B, r, G->i64, ""));
    return 1;
  }
  return 0;
}

/* The control variable's last value, init + count * step (count: the
** iterations - 1, unsigned): exact in 64-bit wrapping arithmetic, since
** the true value is one the variable takes. (In 128 bits, LLVM 7 NVVM
** keeps the multiplication and compares wide: ptxas gave a kernel's
** versioned loop 8 more registers.) */
static LLVMValueRef last_value(CG *G, LLVMValueRef init, LLVMValueRef count, LLVMValueRef step) {
  return LLVMBuildAdd(G->B, init, LLVMBuildMul(G->B, count, step, ""), "");
}

/* The range [lo, hi] (i128) of loop m's control variable and whether m
** runs at all, from its forprep's operands (see range_known). */
/* v, an operand of a loop of nest O (kfa_nest_invariant), before O: its
** value, or the integer expression computed again. */
static CgVal nest_val(CG *G, const KirLoop *O, const KirInsn *v) {
  if (!kir_inloop(O, v->block) || G->sp->consts[v->id].kind != T_UNKNOWN || v->op == KIR_INT)
    return cg_val(G, v);
  if (v->op == KIR_LEN) return cg_mk(TY(T_INT), cg_val(G, v->args[0]).dims[0]);   /* #x: cg_len */
  int sk = kfa_shape_read(G->sp, O, v);   /* x.shape[k], x.size: cg_index, cg_getfield */
  if (sk > 0) return cg_mk(TY(T_INT), cg_val(G, v->args[0]->args[0]).dims[sk - 1]);
  if (sk < 0) {
    CgVal x = cg_val(G, v->args[0]);
    LLVMValueRef s = x.dims[0];
    for (int d = 1; d < x.t.ndim; d++) s = LLVMBuildMul(G->B, s, x.dims[d], "");
    return cg_mk(TY(T_INT), s);
  }
  LLVMValueRef a = nest_val(G, O, v->args[0]).v, r;
  switch (v->op) {
  case KIR_ADD: r = LLVMBuildAdd(G->B, a, nest_val(G, O, v->args[1]).v, ""); break;
  case KIR_SUB: r = LLVMBuildSub(G->B, a, nest_val(G, O, v->args[1]).v, ""); break;
  case KIR_MUL: r = LLVMBuildMul(G->B, a, nest_val(G, O, v->args[1]).v, ""); break;
  default: r = LLVMBuildSub(G->B, cg_i64(G, 0), a, ""); break;   /* KIR_UNM */
  }
  return cg_mk(TY(T_INT), r);
}

/* nest_val, for cg_pollcover.c (the bounds of a loop charged by the loop
** around) */
CgVal cg_version_nest_val(CG *G, const KirLoop *O, const KirInsn *v) { return nest_val(G, O, v); }

/* The range of a loop's variable: [lo, hi] (i128) and whether it never runs. */
typedef struct NestRange { const KirLoop *m; LLVMValueRef lo, hi, skip; } NestRange;

/* The least and greatest value (i128) of operand x of a triangular loop
** of prange head O while O's variable runs over ro (kfa_head_operand;
** or x is invariant in O); *bad |= a value that wraps an i64 (the body's
** x is then not the exact one: no range). */
static void operand_range(CG *G, const KirLoop *O, const KirInsn *x, const NestRange *ro,
                          LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *bad) {
  LLVMTypeRef i128 = LLVMInt128TypeInContext(G->C);
  int vneg, offneg;
  KirInsn *off;
  if (kfa_nest_invariant(G->sp, O, x) || !kfa_head_operand(G->sp, O, x, &vneg, &off, &offneg)) {
    *lo = *hi = sext128(G, nest_val(G, O, x).v);
    return;
  }
  LLVMValueRef c = off ? sext128(G, nest_val(G, O, off).v) : LLVMConstInt(i128, 0, 0);
  if (vneg) {   /* off - v */
    *lo = LLVMBuildSub(G->B, c, ro->hi, "");
    *hi = LLVMBuildSub(G->B, c, ro->lo, "");
  } else if (offneg) {
    *lo = LLVMBuildSub(G->B, ro->lo, c, "");
    *hi = LLVMBuildSub(G->B, ro->hi, c, "");
  } else {
    *lo = LLVMBuildAdd(G->B, ro->lo, c, "");
    *hi = LLVMBuildAdd(G->B, ro->hi, c, "");
  }
  LLVMValueRef i64min = LLVMConstInt(i128, (unsigned long long)INT64_MIN, 1);
  LLVMValueRef i64max = LLVMConstInt(i128, (unsigned long long)INT64_MAX, 1);
  *bad = LLVMBuildOr(G->B, *bad, LLVMBuildICmp(G->B, LLVMIntSLT, *lo, i64min, ""), "");
  *bad = LLVMBuildOr(G->B, *bad, LLVMBuildICmp(G->B, LLVMIntSGT, *hi, i64max, ""), "");
}

/* The range of loop m, whose init or limit vary with prange head O's
** variable (ro: its range), over all of O's iterations: step > 0, from
** the least init to the greatest limit (a sound bound: each j lies
** between its own init and limit), none when that is empty (no i runs
** m); step < 0 likewise. A wrapping operand (or a limit past an i64)
** gives a range no check passes. */
static void triangle_range(CG *G, const KirLoop *O, const KfaLoop *fm, const NestRange *ro,
                           LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *skip) {
  LLVMTypeRef i128 = LLVMInt128TypeInContext(G->C);
  LLVMValueRef bad = cg_i1(G, 0), ilo, ihi, llo, lhi;
  operand_range(G, O, fm->init, ro, &ilo, &ihi, &bad);
  operand_range(G, O, fm->limit, ro, &llo, &lhi, &bad);
  LLVMValueRef sk;
  if (fm->stepsign > 0) {
    *lo = ilo; *hi = lhi;
    sk = LLVMBuildICmp(G->B, LLVMIntSGT, ilo, lhi, "");
  } else {
    *lo = llo; *hi = ihi;
    sk = LLVMBuildICmp(G->B, LLVMIntSLT, ihi, llo, "");
  }
  LLVMValueRef big = LLVMConstShl(LLVMConstInt(i128, 1, 0), LLVMConstInt(i128, 100, 0));
  *lo = LLVMBuildSelect(G->B, bad, LLVMConstNeg(big), *lo, "");
  *hi = LLVMBuildSelect(G->B, bad, big, *hi, "");
  sk = LLVMBuildAnd(G->B, sk, LLVMBuildNot(G->B, bad, ""), "");
  *skip = LLVMBuildOr(G->B, sk, ro->skip, "");   /* (O never runs: nothing does) */
}

static void loop_range(CG *G, const KirLoop *O, const KfaLoop *fm, LLVMValueRef *lo,
                       LLVMValueRef *hi, LLVMValueRef *skip) {
  LLVMValueRef init = nest_val(G, O, fm->init).v;
  LLVMValueRef step = fm->step ? nest_val(G, O, fm->step).v : cg_i64(G, 1);   /* (prange: 1) */
  LLVMValueRef count = cg_int_count(G, init, nest_val(G, O, fm->limit), step, skip);
  LLVMValueRef i = sext128(G, init);
  LLVMValueRef last = sext128(G, last_value(G, init, count, step));
  *lo = fm->stepsign > 0 ? i : last;
  *hi = fm->stepsign > 0 ? last : i;
}

/* The range of loop m's variable, computed before nest O once per test
** (rs: those computed so far). */
static NestRange *nest_range(CG *G, const KirLoop *O, const KirLoop *m, NestRange *rs, int *nrs) {
  for (int r = 0; r < *nrs; r++)
    if (rs[r].m == m) return &rs[r];
  const KfaLoop *fm = &cg_prange_facts(G)->loops[m->id];
  NestRange ro = { NULL, NULL, NULL, NULL };
  int tri = m != O && (!kfa_nest_invariant(G->sp, O, fm->init) || !kfa_nest_invariant(G->sp, O, fm->limit));
  if (tri) ro = *nest_range(G, O, O, rs, nrs);   /* (a copy: the slot may be reused) */
  NestRange *e = &rs[*nrs < 16 ? (*nrs)++ : 15];   /* past 16 loops: the last slot
                                                      computed again each time */
  e->m = m;
  if (tri) triangle_range(G, O, fm, &ro, &e->lo, &e->hi, &e->skip);
  else loop_range(G, O, fm, &e->lo, &e->hi, &e->skip);
  return e;
}

static LLVMValueRef smin128(CG *G, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntSLT, a, b, ""), a, b, "");
}
static LLVMValueRef smax128(CG *G, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntSGT, a, b, ""), a, b, "");
}

/* A nest check in several variables (KfaCheck.vterms: the key is, modulo
** 2^64, the exact sum of the invariant terms and of the products) in
** [1, dim] wherever it runs: the sum's least value is at least the sum of
** each product's least value over its loop's range, likewise the
** greatest, all exact in 128 bits. A product's factor +-v + terms lies
** within +-2^64; it is multiplied only when it fits an i64 (else the test
** fails), the product then within 2^126, and a product beyond +-2^100
** fails the test, so the sum of at most KFA_MAXTERMS of them cannot
** overflow. The access runs only when every loop of its products runs. */
static LLVMValueRef nest_linear_test(CG *G, struct CgNest *N, const KfaCheck *c, LLVMValueRef dim,
                                     NestRange *rs, int *nrs) {
  LLVMTypeRef i128 = LLVMInt128TypeInContext(G->C);
  LLVMValueRef ok = cg_i1(G, 1), skip = cg_i1(G, 0);
  LLVMValueRef kmin = terms_sum(G, N->O, c->terms, c->tneg, c->nterms), kmax = kmin;
  LLVMValueRef i64min = LLVMConstInt(i128, (unsigned long long)INT64_MIN, 1);
  LLVMValueRef i64max = LLVMConstInt(i128, (unsigned long long)INT64_MAX, 1);
  LLVMValueRef big = LLVMConstShl(LLVMConstInt(i128, 1, 0), LLVMConstInt(i128, 100, 0));
  LLVMValueRef nbig = LLVMConstNeg(big);
  for (int i = 0; i < c->nvterms; i++) {
    const KfaVarTerm *t = &c->vterms[i];
    NestRange *r = nest_range(G, N->O, t->loop, rs, nrs);
    skip = LLVMBuildOr(G->B, skip, r->skip, "");
    LLVMValueRef w = terms_sum(G, N->O, t->terms, t->tneg, t->nterms), lo, hi;
    if (t->vneg) {
      lo = LLVMBuildSub(G->B, w, r->hi, "");
      hi = LLVMBuildSub(G->B, w, r->lo, "");
    } else {
      lo = LLVMBuildAdd(G->B, r->lo, w, "");
      hi = LLVMBuildAdd(G->B, r->hi, w, "");
    }
    if (t->scale) {
      ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntSGE, lo, i64min, ""), "");
      ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntSLE, hi, i64max, ""), "");
      /* lo, hi cut to i64 where they do not fit: the test fails anyway,
      ** and the products stay within 2^126 */
      LLVMValueRef s = sext128(G, nest_val(G, N->O, t->scale).v);
      LLVMValueRef p = LLVMBuildMul(G->B, sext128(G, LLVMBuildTrunc(G->B, lo, G->i64, "")), s, "");
      LLVMValueRef q = LLVMBuildMul(G->B, sext128(G, LLVMBuildTrunc(G->B, hi, G->i64, "")), s, "");
      lo = smin128(G, p, q);
      hi = smax128(G, p, q);
      ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntSGE, lo, nbig, ""), "");
      ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntSLE, hi, big, ""), "");
    }
    if (t->neg) {
      LLVMValueRef nlo = LLVMBuildNeg(G->B, hi, "");
      hi = LLVMBuildNeg(G->B, lo, "");
      lo = nlo;
    }
    kmin = LLVMBuildAdd(G->B, kmin, lo, "");
    kmax = LLVMBuildAdd(G->B, kmax, hi, "");
  }
  ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntSGE, kmin, LLVMConstInt(i128, 1, 0), ""), "");
  ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntSLE, kmax, dim, ""), "");
  return LLVMBuildOr(G->B, ok, skip, "");
}

/* Every check of nest N in bounds: an access affine in the variable of
** loop M of the nest holds over M's whole range, unless M never runs.
** rs: the ranges known already (nrs of them; room for 16). */
static LLVMValueRef nest_test(CG *G, struct CgNest *N, NestRange *rs, int nrs) {
  LLVMTypeRef i128 = LLVMInt128TypeInContext(G->C);
  LLVMValueRef all = cg_i1(G, 1), one = LLVMConstInt(i128, 1, 0);
  for (int i = 0; i < N->nchecks; i++) {
    const KfaCheck *c = &N->checks[i];
    LLVMValueRef dim = sext128(G, cg_val(G, c->base).dims[c->dim]), klo, khi, skip = NULL;
    if (c->nvterms) {
      all = LLVMBuildAnd(G->B, all, nest_linear_test(G, N, c, dim, rs, &nrs), "");
      continue;
    }
    if (c->affine) {
      NestRange *r = nest_range(G, N->O, c->vloop, rs, &nrs);
      LLVMValueRef lo = r->lo, hi = r->hi, sk = r->skip;
      key_bounds(G, N->O, c, lo, hi, &klo, &khi);
      skip = sk;
    } else {
      key_bounds(G, N->O, c, NULL, NULL, &klo, &khi);
    }
    LLVMValueRef ok = LLVMBuildAnd(G->B, LLVMBuildICmp(G->B, LLVMIntSGE, klo, one, ""),
                                   LLVMBuildICmp(G->B, LLVMIntSLE, khi, dim, ""), "");
    if (skip) ok = LLVMBuildOr(G->B, ok, skip, "");
    all = LLVMBuildAnd(G->B, all, ok, "");
  }
  return all;
}

/* Nest N: its test, then its checked copy (O's blocks at the copy's
** tables: cg_func.c's block loop again, inner loops versioned and
** strip-mined as planned for the copy). Its fast copy is O's own blocks. */
static void emit_nest(CG *G, struct CgNest *N) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirLoop *O = N->O;
  KirBlock *h = O->header;
  /* the copy's phis first: edges reach blocks before they are emitted */
  G->nestcopy = N;
  cg_tabs_swap(G, &N->tabs);
  for (int b = 0; b < O->nblocks; b++) {
    KirBlock *blk = O->blocks[b];
    int id = blk->id;
    if (!sp->live[id]) continue;
    cg_make_phis_at(G, blk, G->bbs[id], G->phis);
    if (G->strip_at && G->strip_at[id]) cg_make_phis_at(G, blk, G->chunkbb[id], G->ophis);
    if (G->ver_at && G->ver_at[id]) cg_make_phis_at(G, blk, G->vselbb[id], G->vsphis);
  }
  cg_tabs_swap(G, &N->tabs);
  G->nestcopy = NULL;
  LLVMPositionBuilderAtEnd(G->B, G->vselbb[h->id]);
  cg_before_loop(G, O);
  NestRange rs[16];
  LLVMValueRef ok = nest_test(G, N, rs, 0);
  /* a serial prange loop that runs in chunks (cg_prange.c): the fast copy
  ** starts at its chunk head; the checked copy runs unchunked */
  int chunked = G->strip_at && G->strip_at[h->id] && G->chunkbb[h->id];
  LLVMValueRef (*ftab)[3 + KJIT_MAXDIMS] = chunked ? G->ophis : G->phis;
  LLVMBasicBlockRef fast = chunked ? G->chunkbb[h->id] : G->bbs[h->id];
  LLVMBasicBlockRef free = cg_pollfree_entry(G, h, &ftab);   /* (cg_pollfree.c: a test more) */
  LLVMBuildCondBr(G->B, ok, free ? free : fast, N->tabs.bbs[h->id]);
  pass_phis(G, h, ftab);
  pass_phis(G, h, N->tabs.phis);
  G->nestcopy = N;
  cg_tabs_swap(G, &N->tabs);
  G->nestloop = O;
  for (int b = 0; b < f->nblocks; b++) {
    KirBlock *blk = f->blocks[b];
    if (!sp->live[b] || !kir_inloop(O, blk)) continue;
    if (G->ver_at && G->ver_at[b]) cg_version_emit(G, G->ver_at[b]);
    if (G->strip_at && G->strip_at[b]) cg_emit_chunk_head(G, G->strip_at[b]);
    cg_use_phis(G, blk, G->phis);
    cg_emit_block_at(G, blk, G->bbs[b]);
    if (G->S->kernel || !G->target->version_novec) continue;
    for (int k = 0; k < blk->nsucc; k++)   /* the CPU: its loops stay scalar */
      if (blk->succ[k]->loop && blk->succ[k]->loop->header == blk->succ[k] &&
          kir_inloop(blk->succ[k]->loop, blk)) {
        LLVMValueRef br = LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(G->B));
        if (br && LLVMIsABranchInst(br)) no_vectorize(G, br);
        break;
      }
  }
  G->nestloop = NULL;
  cg_tabs_swap(G, &N->tabs);
  G->nestcopy = NULL;
}

/* The test at the start of a parallel kjit.prange worker (cg_prange.c):
** the nest checks of prange loop O (ir_facts.h 2.) in bounds while O's
** control variable runs over [lo, hi] (i128: the chunk of this call, never
** empty) and each inner loop over its whole range. *off: by instruction
** id, the checks the test proves (off in the worker's fast body), or NULL
** when there is none to test (then no test is made, the result is NULL). */
LLVMValueRef cg_version_worker_test(CG *G, KirLoop *O, LLVMValueRef lo, LLVMValueRef hi, uint8_t **off) {
  const KfaFacts *F = cg_prange_facts(G);
  const KfaLoop *fo = &F->loops[O->id];
  struct CgNest N;
  memset(&N, 0, sizeof N);
  N.O = O;
  *off = NULL;
  if (!G->boundscheck || fo->nnestchecks == 0) return NULL;
  N.checks = cg_zalloc(G, sizeof(KfaCheck) * (size_t)fo->nnestchecks);
  for (int i = 0; i < fo->nnestchecks; i++) {
    const KfaCheck *c = &fo->nestchecks[i];
    if (c->affine && c->vloop != O && !range_known(G, F, c->vloop, O)) continue;
    if (c->nvterms && !vterms_known(G, F, c, O, 1)) continue;
    N.checks[N.nchecks++] = *c;
  }
  if (N.nchecks == 0) return NULL;
  *off = cg_zalloc(G, (size_t)G->sp->ir->ninsns);
  for (int i = 0; i < N.nchecks; i++) (*off)[N.checks[i].insn->id] = 1;
  NestRange rs[16];
  rs[0] = (NestRange){ O, lo, hi, cg_i1(G, 0) };
  return nest_test(G, &N, rs, 1);
}

static void emit_kind_split(CG *G, KirLoop *L);

void cg_version_emit(CG *G, KirLoop *L) {
  KirBlock *h = L->header;
  if (G->kindsplit && G->kindsplit[h->id]) {
    emit_kind_split(G, L);
    return;
  }
  const KfaLoop *fl = &cg_prange_facts(G)->loops[L->id];
  if (G->nest_at && G->nest_at[h->id] && G->nestloop == NULL) {
    emit_nest(G, G->nest_at[h->id]);
    return;
  }
  if (L->kind != KIR_LOOP_FORNUM) {
    emit_narrow(G, L, fl->narrowk);
    return;
  }
  copy_phis(G, L);   /* (first: vsel's edge reaches them) */
  LLVMBasicBlockRef fast = G->bbs[h->id];
  CgFor *F = &G->fors[L->prep->id];
  /* the test: the control variable runs from init through last = init +
  ** count * step (count: forprep's iterations - 1, unsigned) */
  LLVMPositionBuilderAtEnd(G->B, G->vselbb[h->id]);
  cg_before_loop(G, L);
  LLVMValueRef init = sext128(G, G->vals[L->prep->id].v);
  LLVMValueRef count = LLVMBuildLoad2(G->B, G->i64, F->rem, "");
  LLVMValueRef last = sext128(G, last_value(G, G->vals[L->prep->id].v, count, F->step));
  LLVMValueRef lo, hi;
  if (fl->stepsign > 0) lo = init, hi = last;
  else if (fl->stepsign < 0) lo = last, hi = init;
  else {
    LLVMValueRef pos = LLVMBuildICmp(G->B, LLVMIntSGT, F->step, cg_i64(G, 0), "");
    lo = LLVMBuildSelect(G->B, pos, init, last, "");
    hi = LLVMBuildSelect(G->B, pos, last, init, "");
  }
  LLVMValueRef ok = range_test(G, fl, lo, hi);
  int strip = G->strip_at && G->strip_at[h->id];
  if (strip) fast = G->chunkbb[h->id];
  if (cg_fit_version(G, L)) {   /* a run of at most a poll period, charged here */
    LLVMValueRef fits = LLVMBuildICmp(G->B, LLVMIntULE, count, cg_i64(G, KCG_POLL_PERIOD - 1), "");
    LLVMBasicBlockRef charge = cg_bb(G, "fitcharge");
    LLVMBuildCondBr(G->B, LLVMBuildAnd(G->B, ok, fits, ""), charge, G->vbbs[h->id]);
    pass_phis(G, h, G->vphis);
    LLVMPositionBuilderAtEnd(G->B, charge);
    cg_poll_charge(G, LLVMBuildAdd(G->B, count, cg_i64(G, 1), ""));
    LLVMBuildBr(G->B, fast);
    pass_phis(G, h, G->phis);
    emit_copy(G, L, 1);
    return;
  }
  LLVMBuildCondBr(G->B, ok, fast, G->vbbs[h->id]);
  pass_phis(G, h, strip ? G->ophis : G->phis);
  pass_phis(G, h, G->vphis);
  emit_copy(G, L, 1);
}

/* The checked copy of L, at G->vbbs (novec: marked not to vectorize where
** the target says so). */
static void emit_copy(CG *G, KirLoop *L, int novec) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirBlock *h = L->header;
  G->versioning = L;
  for (int b = 0; b < f->nblocks; b++) {
    KirBlock *blk = f->blocks[b];
    if (!sp->live[b] || !kir_inloop(L, blk)) continue;
    cg_use_phis(G, blk, G->vphis);
    cg_emit_block_at(G, blk, G->vbbs[b]);
    if (!novec || !G->target->version_novec) continue;
    for (int s = 0; s < blk->nsucc; s++)
      if (blk->succ[s] == h) {
        LLVMValueRef br = LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(G->B));
        if (br && LLVMIsABranchInst(br)) no_vectorize(G, br);
        break;
      }
  }
  G->versioning = NULL;
}

/* ---- Loops of either kind: an integer copy and a float copy -----------------
** A numeric for loop whose initial value or step is a number of either
** kind (read from a table: SciMark sparse's `for i = row[r], row[r + 1] -
** 1`) is typed T_NUMBER: its control variable carries its kind, and each
** use of it branches on it (a key converted where it is a float, both the
** integer and the float step at forloop). Lua's forprep decides the
** loop's kind once, at entry (lvm.c forprep: an integer loop when the
** initial value and the step are integers), so the loop is emitted twice,
** and the test block (kindsel) after forprep enters one by its decision:
** the integer copy (at G->vbbs, emitted with G->kindint) or the float
** copy (the loop's own blocks). In each, forloop's kind is a constant
** (cg_func.c emit_forloop), so the control variable's float flag is one
** constant at both of its phi's edges, and LLVM's instcombine and
** simplifycfg fold away every branch on it and the other kind's code.
** Both copies use forprep's count, steps and limit, computed for both
** kinds already. (The typer does not type the loop T_INT with a check:
** its float case needs a compiled loop too.) Measured on SciMark sparse
** (6000 cycles): 5.333G -> 4.070G instructions with the hints of cg_lua.c,
** the compile of its kernel +47M of them.
** What is split: innermost loops (no copies of copies), on the CPU,
** entered from forprep alone, not outlined by kjit.prange, not in a
** nest's copies, whose values are used after them only through exit
** phis (Lua values have no spill slots: the copies' values cannot meet in
** a later block), and at most KIND_MAXINSNS instructions (the copy is
** compiled code too: table code's compile grows with it). */
#define KIND_MAXINSNS 96

static int kind_splittable(CG *G, KirLoop *L) {
  KtySpec *sp = G->sp;
  KirBlock *h = L->header;
  if (G->S->kernel || L->kind != KIR_LOOP_FORNUM || L->prep == NULL || L->var == NULL ||
      !sp->live[h->id] || cg_prange_owns(G, h) || sp->types[L->prep->id].kind != T_NUMBER ||
      cg_phi_type(G, L->var).kind != T_NUMBER || (G->peel_at && G->peel_at[h->id]) ||
      (G->strip_at && G->strip_at[h->id]) || (G->ver_at && G->ver_at[h->id]) ||
      L->prep->block->succ[0] != h || L->entry != L->prep->block)
    return 0;
  int size = 0;
  for (int b = 0; b < L->nblocks; b++) {
    if (L->blocks[b]->loop != L) return 0;   /* innermost only */
    size += L->blocks[b]->ninsns + L->blocks[b]->nphis;
  }
  if (size > KIND_MAXINSNS) return 0;
  int outside = 0;
  for (int i = 0; i < h->npreds; i++) outside += !kir_inloop(L, h->preds[i]);
  if (outside != 1) return 0;
  for (const KirLoop *O = L->parent; O && G->nest_at; O = O->parent)
    if (G->nest_at[O->header->id]) return 0;   /* (a nest's checked copy) */
  return !cg_peel_used_outside(G, L);
}

static void plan_kind_splits(CG *G) {
  KirFunc *f = G->sp->ir;
  if (f->irreducible || getenv("KJIT_NO_KIND_SPLIT")) return;
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *L = f->loops[l];
    if (!kind_splittable(G, L)) continue;
    if (G->kindsplit == NULL) G->kindsplit = cg_zalloc(G, (size_t)f->nblocks);
    G->kindsplit[L->header->id] = 1;
    plan_loop(G, L, "kindsel", "intcopy");   /* (no spills: kind_splittable) */
  }
}

static void emit_kind_split(CG *G, KirLoop *L) {
  KirBlock *h = L->header;
  copy_phis(G, L);
  LLVMPositionBuilderAtEnd(G->B, G->vselbb[h->id]);
  cg_before_loop(G, L);
  LLVMBuildCondBr(G->B, G->fors[L->prep->id].dyn, G->vbbs[h->id], G->bbs[h->id]);
  /* each copy enters with the control variable's float flag a constant */
  LLVMValueRef isf = G->vsphis[L->var->id][1];
  G->vsphis[L->var->id][1] = cg_i1(G, 1);
  pass_phis(G, h, G->phis);
  G->vsphis[L->var->id][1] = cg_i1(G, 0);
  pass_phis(G, h, G->vphis);
  G->vsphis[L->var->id][1] = isf;
  G->kindint = L->prep;
  emit_copy(G, L, 0);
  G->kindint = NULL;
}

/* ---- Single-chunk copies (interrupt polls) -----------------------------------
** A strip-mined loop (cg_func.c) runs in chunks of at most KCG_POLL_PERIOD
** iterations; each entry sets up a chunk, whose length is a value of the
** chunk loop, so LLVM computes the vector loop's trip count, its
** remainder and its alias tests at every entry. In a parallel body (a
** kjit.prange worker, where no loop is versioned for bounds checks) the
** inner loops are entered again and again (matmul's `for j = 1, p` once
** per k): there the set-up cost 7-10% of the body against polls off. Such
** a loop gets a second copy, entered when its iterations fit one chunk
** (its count at most KCG_POLL_PERIOD - 1), charged them all at its entry
** and run as written: its trip count is forprep's, invariant where the
** bounds are, and LLVM hoists the set-up out of the enclosing loops as it
** does without polls. A longer run takes the chunks. Outside parallel
** bodies the copy is not made: there it would be a third copy of a
** versioned loop (a 2-D stencil's compile: 37 -> 50 ms). */

/* L's test and copy, made in the function being emitted (the worker). */
void cg_fit_begin(CG *G, KirLoop *L) {
  KtySpec *sp = G->sp;
  KirBlock *h = L->header;
  alloc_ver(G);
  G->vselbb[h->id] = cg_bb(G, "fitsel");
  cg_make_phis_at(G, h, G->vselbb[h->id], G->vsphis);
  for (int b = 0; b < L->nblocks; b++)
    if (sp->live[L->blocks[b]->id]) G->vbbs[L->blocks[b]->id] = cg_bb(G, "onechunk");
  for (int b = 0; b < L->nblocks; b++)
    if (sp->live[L->blocks[b]->id])
      cg_make_phis_at(G, L->blocks[b], G->vbbs[L->blocks[b]->id], G->vphis);
  cg_peel_spills(G, L);   /* values used after L: both copies write them */
}

void cg_fit_emit(CG *G, KirLoop *L) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirBlock *h = L->header;
  CgFor *F = &G->fors[L->prep->id];
  LLVMPositionBuilderAtEnd(G->B, G->vselbb[h->id]);
  cg_before_loop(G, L);
  /* forprep's count (the iterations - 1, unsigned) */
  LLVMValueRef count = LLVMBuildLoad2(G->B, G->i64, F->rem, "");
  LLVMValueRef fits = LLVMBuildICmp(G->B, LLVMIntULE, count, cg_i64(G, KCG_POLL_PERIOD - 1), "");
  LLVMBasicBlockRef one = cg_bb(G, "fits");
  LLVMBuildCondBr(G->B, fits, one, G->chunkbb[h->id]);
  pass_phis(G, h, G->ophis);
  LLVMPositionBuilderAtEnd(G->B, one);
  cg_poll_charge(G, LLVMBuildAdd(G->B, count, cg_i64(G, 1), ""));
  LLVMBuildBr(G->B, G->vbbs[h->id]);
  pass_phis(G, h, G->vphis);
  G->versioning = L;
  G->plaincopy = 1;
  for (int b = 0; b < f->nblocks; b++) {
    KirBlock *blk = f->blocks[b];
    if (!sp->live[b] || !kir_inloop(L, blk)) continue;
    cg_use_phis(G, blk, G->vphis);
    cg_emit_block_at(G, blk, G->vbbs[b]);
  }
  G->plaincopy = 0;
  G->versioning = NULL;
}
