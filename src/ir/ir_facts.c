/*
** ir_facts.c: loop and function facts on the typed IR (see ir_facts.h):
** numeric for loops and their hoistable bounds checks, rectangular nests,
** narrow while counters, peelable number phis, purity. The kjit.prange
** analysis and the notes are in ir_facts_prange.c.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "ir/ir_facts.h"
#include "ir/ir_facts_int.h"

void *kfa_alloc_(KfaCtx *C, size_t n) {
  void *p = ka_alloc(C->A, n ? n : 1);
  if (p == NULL) longjmp(C->jb, 1);
  return p;
}

int kfa_inloop_(const KirLoop *l, const KirInsn *v) { return kir_inloop(l, v->block); }

/* v is an integer known at compile time (a literal or a typer constant) */
int kfa_intconst_(const KtySpec *sp, const KirInsn *v, lua_Integer *k) {
  if (v->op == KIR_INT) { *k = v->k.i; return 1; }
  if (sp->consts[v->id].kind == T_INT) { *k = sp->consts[v->id].v.i; return 1; }
  return 0;
}

/* An integer whose value cannot change inside l (the old invariant_int:
** a literal, a constant, or a value computed before the loop). */
static int invariant_int(const KtySpec *sp, const KirLoop *l, const KirInsn *v) {
  lua_Integer k;
  if (sp->types[v->id].kind != T_INT) return 0;
  return kfa_intconst_(sp, v, &k) || !kfa_inloop_(l, v);
}

static int isfornum_int(const KtySpec *sp, const KirLoop *l) {
  return l->kind == KIR_LOOP_FORNUM && l->var && l->prep && l->prep->nargs == 3 &&
         sp->types[l->var->id].kind == T_INT;
}

/* ---- Numeric for loops ------------------------------------------------ */

static void fornum_facts(KfaCtx *C, KfaLoop *fl) {
  KtySpec *sp = C->sp;
  KirLoop *l = fl->loop;
  KirInsn *p = l->prep;
  fl->isint = isfornum_int(sp, l);
  if (p && p->nargs == 3) { fl->init = p->args[0]; fl->limit = p->args[1]; fl->step = p->args[2]; }
  if (fl->step) {
    lua_Integer k;
    const KtyConst *kc = &sp->consts[fl->step->id];
    if (kfa_intconst_(sp, fl->step, &k)) {
      fl->stepk = k;
      fl->stepsign = k > 0 ? 1 : k < 0 ? -1 : 0;
    } else if (fl->step->op == KIR_FLT || kc->kind == T_F64) {
      double f = fl->step->op == KIR_FLT ? fl->step->k.f : kc->v.f;
      fl->stepsign = f > 0 ? 1 : f < 0 ? -1 : 0;
    }
  }
  fl->innermost = 1;
  for (int i = 0; i < C->f->nloops; i++) {
    KirLoop *m = C->f->loops[i];
    if (m != l && m->kind == KIR_LOOP_FORNUM && kir_inloop(l, m->header)) fl->innermost = 0;
  }
  /* leaves other than the forloop's exit edge */
  for (int i = 0; i < l->nblocks; i++) {
    KirBlock *b = l->blocks[i];
    for (int s = 0; s < b->nsucc; s++) {
      if (kir_inloop(l, b->succ[s])) continue;
      int normal = b->term && b->term->op == KIR_FORLOOP && s == 1 && b->succ[0] == l->header;
      if (!normal) fl->exits++;
    }
  }
  /* a narrow counter: every value of [lo, hi] fits int32 */
  fl->narrow = KFA_NARROW_NEVER;
  if (fl->isint) {
    lua_Integer a, b;
    fl->narrow = KFA_NARROW_TEST;
    if (fl->stepsign && kfa_intconst_(sp, fl->init, &a) && kfa_intconst_(sp, fl->limit, &b)) {
      /* constants: the range is [a, last] (or empty); last lies between
      ** a and b, so a and b in int32 (or an empty loop) decide it */
      int empty = fl->stepsign > 0 ? a > b : a < b;
      int fits = a >= INT32_MIN && a <= INT32_MAX && b >= INT32_MIN && b <= INT32_MAX;
      fl->narrow = empty || fits ? KFA_NARROW_ALWAYS : KFA_NARROW_TEST;
    }
  }
}

/* A kjit.prange loop whose control variable is an integer: its range
** facts (ir_facts.h 1. and 2.) are its call's operands a, b [, c] as
** init, limit and step (no c: step NULL, the constant 1), so that a nest
** test computes its range as a numeric for's. */
static int prange_int(const KtySpec *sp, const KirLoop *l) {
  if (!kfa_is_prange_(sp, l) || l->var == NULL || sp->types[l->var->id].kind != T_INT) return 0;
  KirInsn *call = l->prep->args[0];
  if (call->nargs < 3 || call->nargs > 4) return 0;
  for (int a = 1; a < call->nargs; a++)
    if (sp->types[call->args[a]->id].kind != T_INT) return 0;
  return 1;
}

static void prange_range_facts(KfaCtx *C, KfaLoop *fl) {
  KirInsn *call = fl->loop->prep->args[0];
  lua_Integer k = 1;
  fl->isint = 1;
  fl->init = call->args[1];
  fl->limit = call->args[2];
  fl->step = call->nargs > 3 ? call->args[3] : NULL;
  if (fl->step == NULL || kfa_intconst_(C->sp, fl->step, &k)) {
    fl->stepk = k;
    fl->stepsign = k > 0 ? 1 : k < 0 ? -1 : 0;
  }
}

/* An integer loop whose range a test before it can compute from three
** operands: an integer numeric for, or such a prange loop. */
static int range_loop(const KtySpec *sp, const KirLoop *l) {
  return isfornum_int(sp, l) || prange_int(sp, l);
}

/* Operand a (0 init, 1 limit, 2 step) of range_loop l; NULL: a prange
** loop's missing step (1). */
static KirInsn *range_operand(const KirLoop *l, int a) {
  if (l->kind == KIR_LOOP_FORNUM) return l->prep->args[a];
  KirInsn *call = l->prep->args[0];
  return a + 1 < call->nargs ? call->args[a + 1] : NULL;
}

/* ---- Bounds checks ---------------------------------------------------- */

static void add_unchecked(KfaCtx *C, KfaLoop *fl, KirInsn *v, int dim, const char *why) {
  if (fl->nunchecked >= KFA_MAXHOIST) return;
  if (fl->unchecked == NULL) fl->unchecked = kfa_alloc_(C, KFA_MAXHOIST * sizeof *fl->unchecked);
  fl->unchecked[fl->nunchecked++] = (KfaUnchecked){ v, dim, why };
}

static void add_check(KfaCtx *C, KfaCheck **list, int *n, KfaCheck h) {
  if (*n >= KFA_MAXHOIST) return;
  if (*list == NULL) *list = kfa_alloc_(C, KFA_MAXHOIST * sizeof **list);
  (*list)[(*n)++] = h;
}

/* key as v + off, off + v, v - off of l's control variable with off
** invariant in inv (the loop the test goes before); fills h. */
int kfa_affine_(const KtySpec *sp, const KirLoop *l, const KirLoop *inv, KirInsn *key,
                     KfaCheck *h) {
  KirInsn *v = l->var;
  if (v == NULL) return 0;
  h->vloop = (KirLoop *)l;
  if (key == v) { h->affine = 1; return 1; }
  if ((key->op == KIR_ADD || key->op == KIR_SUB) && key->nargs == 2) {
    KirInsn *a = key->args[0], *b = key->args[1], *off = NULL;
    if (a == v && invariant_int(sp, inv, b)) off = b;
    else if (key->op == KIR_ADD && b == v && invariant_int(sp, inv, a)) off = a;
    if (off) {
      h->affine = 1;
      h->off = off;
      h->negoff = key->op == KIR_SUB;
      h->offconst = kfa_intconst_(sp, off, &h->offk);
      return 1;
    }
  }
  h->vloop = NULL;
  return 0;
}

/* The array root of an access: walks index chains while inside l. */
static KirInsn *array_root(const KirLoop *l, KirInsn *obj, int *depth) {
  *depth = 0;
  while (obj->op == KIR_INDEX && kfa_inloop_(l, obj)) { (*depth)++; obj = obj->args[0]; }
  return obj;
}

/* One INDEX/SETINDEX inside loop l (old consider_index). */
static void consider(KfaCtx *C, KfaLoop *fl, KirInsn *v) {
  KtySpec *sp = C->sp;
  KirLoop *l = fl->loop;
  KirInsn *obj = v->args[0], *key = v->args[1];
  if (sp->types[obj->id].kind != T_BUF) return;   /* not an array access */
  int depth;
  KirInsn *base = array_root(l, obj, &depth);
  Type bt = sp->types[base->id];
  if (kfa_inloop_(l, base) || bt.kind != T_BUF || depth >= bt.ndim) {
    add_unchecked(C, fl, v, depth, "the array varies in the loop");
    return;
  }
  if (sp->types[key->id].kind != T_INT) { add_unchecked(C, fl, v, depth, "the key is not an integer"); return; }
  KfaCheck h;
  memset(&h, 0, sizeof h);
  h.insn = v; h.base = base; h.dim = depth; h.key = key;
  if (kfa_affine_(sp, l, l, key, &h) || invariant_int(sp, l, key) || kfa_linear_(C, l, l, key, &h))
    add_check(C, &fl->checks, &fl->nchecks, h);
  else add_unchecked(C, fl, v, depth, "the key is not the loop variable plus an invariant");
}

static void collect_checks(KfaCtx *C, KfaLoop *fl) {
  KirLoop *l = fl->loop;
  for (int i = 0; i < l->nblocks; i++) {
    KirBlock *b = l->blocks[i];
    if (!C->sp->live[b->id]) continue;   /* never runs */
    for (int j = 0; j < b->ninsns; j++) {
      KirInsn *v = b->insns[j];
      if ((v->op == KIR_INDEX && v->nargs == 2) || (v->op == KIR_SETINDEX && v->nargs == 3))
        consider(C, fl, v);
    }
  }
}

/* ---- Rectangular nests -------------------------------------------------- */

/* A loop operand the nest's test can compute before o: a constant, a value
** defined outside o, #x, x.shape[k] (k constant) or x.size of an array
** defined outside o, or integer + - *
** and unary minus of such (`n - 1`,
** evaluated again at each entry of the inner loop; integers wrap, no
** error): kfa_nest_invariant. */
static int invariant_expr(const KtySpec *sp, const KirLoop *o, const KirInsn *v, int depth) {
  lua_Integer k;
  if (kfa_intconst_(sp, v, &k) || !kfa_inloop_(o, v)) return 1;
  if (depth == 0 || sp->types[v->id].kind != T_INT) return 0;
  if ((v->op == KIR_ADD || v->op == KIR_SUB || v->op == KIR_MUL) && v->nargs == 2)
    return sp->types[v->args[0]->id].kind == T_INT && sp->types[v->args[1]->id].kind == T_INT &&
           invariant_expr(sp, o, v->args[0], depth - 1) && invariant_expr(sp, o, v->args[1], depth - 1);
  if (v->op == KIR_UNM && v->nargs == 1)
    return sp->types[v->args[0]->id].kind == T_INT && invariant_expr(sp, o, v->args[0], depth - 1);
  /* #x of an array from outside o: its first extent, which cannot raise */
  if (v->op == KIR_LEN && v->nargs == 1)
    return sp->types[v->args[0]->id].kind == T_BUF && !kfa_inloop_(o, v->args[0]);
  /* x.shape[k] (k a constant: typed T_INT, so 1 <= k <= ndim) and x.size
  ** of an array from outside o: extents, which cannot raise either (the
  ** bound of a loop in a prange body, `for j = 1, a.shape[2]`) */
  return kfa_shape_read(sp, o, v) != 0;
}

/* kfa_shape_read (ir_facts.h) */
int kfa_shape_read(const KtySpec *sp, const KirLoop *o, const KirInsn *v) {
  lua_Integer k;
  if (sp->types[v->id].kind != T_INT) return 0;
  if (v->op == KIR_INDEX && v->nargs == 2) {
    const KirInsn *f = v->args[0];
    if (sp->types[f->id].kind != T_SHAPE || f->op != KIR_GETFIELD || f->nargs != 1) return 0;
    const KirInsn *x = f->args[0];
    if (sp->types[x->id].kind != T_BUF || kfa_inloop_(o, x) || !kfa_intconst_(sp, v->args[1], &k) ||
        k < 1 || k > sp->types[x->id].ndim)
      return 0;
    return (int)k;
  }
  if (v->op == KIR_GETFIELD && v->nargs == 1 && strcmp(v->k.str.s, "size") == 0) {
    const KirInsn *x = v->args[0];
    Type xt = sp->types[x->id];
    if (xt.kind != T_BUF || (xt.dtype == KJIT_RECORD && xt.ndim == 0) || kfa_inloop_(o, x)) return 0;
    return -1;
  }
  return 0;
}

int kfa_nest_invariant(const KtySpec *sp, const KirLoop *o, const KirInsn *v) {
  return invariant_expr(sp, o, v, KFA_NEST_EXPRDEPTH);
}

static int invariant_in(const KtySpec *sp, const KirLoop *o, const KirInsn *v) {
  return kfa_nest_invariant(sp, o, v);
}

/* The outermost O around l such that every loop from l up to O (O
** excluded) is an integer for whose operands are defined outside O. */
static KirLoop *nest_of(KfaCtx *C, KirLoop *l) {
  KtySpec *sp = C->sp;
  KirLoop *o = l;
  for (KirLoop *cand = l->parent; cand && isfornum_int(sp, cand); cand = cand->parent) {
    int ok = 1;
    for (KirLoop *m = l; m != cand && ok; m = m->parent)
      for (int a = 0; a < 3; a++) ok &= invariant_in(sp, cand, m->prep->args[a]);
    if (!ok) break;
    o = cand;
  }
  return o;
}

/* m's nest reaches o (m inside o): every loop from m up to o (o excluded)
** has its operands invariant in o. */
static int spans(KfaCtx *C, KirLoop *m, KirLoop *o) {
  KirLoop *n = C->F->loops[m->id].nest;
  return m == o || n == o || (n != m && kir_inloop(n, o->header) && n != o);
}

/* o is a kjit.prange loop whose control variable is an integer, parallel
** (its worker tests the nest checks at each call) or serial and not
** inside a parallel one (a test before it, as a nest's: ir_facts.h 2.). */
static int prange_head(KfaCtx *C, const KirLoop *o) {
  const KfaPrange *P = C->F->loops[o->id].prange;
  if (P == NULL || !prange_int(C->sp, o)) return 0;
  if (P->parallel) return 1;
  for (KirLoop *m = o->parent; m; m = m->parent)   /* (a parallel body's: its worker's) */
    if (C->F->loops[m->id].prange && C->F->loops[m->id].prange->parallel) return 0;
  return 1;
}

/* kfa_head_operand (ir_facts.h 2.) */
int kfa_head_operand(const KtySpec *sp, const KirLoop *o, const KirInsn *x, int *vneg,
                     KirInsn **off, int *offneg) {
  KirInsn *v = o->var;
  *vneg = 0; *off = NULL; *offneg = 0;
  if (v == NULL || sp->types[x->id].kind != T_INT) return 0;
  if (x == v) return 1;
  if ((x->op != KIR_ADD && x->op != KIR_SUB) || x->nargs != 2) return 0;
  KirInsn *a = x->args[0], *b = x->args[1];
  if (a == v && kfa_nest_invariant(sp, o, b)) {
    *off = b; *offneg = x->op == KIR_SUB;
    return 1;
  }
  if (b == v && kfa_nest_invariant(sp, o, a)) {
    *off = a; *vneg = x->op == KIR_SUB;
    return 1;
  }
  return 0;
}

/* Does loop k's range vary with prange head o's variable (its init or
** limit kfa_head_operand, the rest invariant in o)? -1: neither (k's
** range cannot be computed before o). */
static int head_dependent(KfaCtx *C, const KirLoop *k, const KirLoop *o) {
  int dep = 0, vneg, offneg;
  KirInsn *off;
  for (int a = 0; a < 3; a++) {
    KirInsn *x = range_operand(k, a);
    if (x == NULL || invariant_in(C->sp, o, x)) continue;
    if (a == 2 || o->kind == KIR_LOOP_FORNUM || !kfa_head_operand(C->sp, o, x, &vneg, &off, &offneg))
      return -1;
    dep = 1;
  }
  return dep;
}

/* Loop m (o itself, or inside it) is a loop of nest o whose range the test
** before o computes: an integer for whose nest reaches o (spans), every
** loop from m up to a prange head o integer fors with operands invariant
** in o (nest_of stops below a prange loop, which is no for), or the
** prange head itself (its range: the worker's chunk). */
static int nest_loop(KfaCtx *C, KirLoop *m, KirLoop *o) {
  if (m == o && o->kind != KIR_LOOP_FORNUM) return prange_head(C, o);
  if (o->kind == KIR_LOOP_FORNUM) return isfornum_int(C->sp, m) && spans(C, m, o);
  /* a prange head: every loop from m up to o a numeric for or a (serial)
  ** prange loop whose range the test computes: operands invariant in o,
  ** or (a triangular loop, `for j = 1, i`) init and limit o's variable
  ** plus or minus an invariant, its range then taken over o's (the
  ** union of the ranges it has for each i: ir_facts.h 2.) */
  for (KirLoop *k = m; k != o; k = k->parent)
    if (k == NULL || !range_loop(C->sp, k) || head_dependent(C, k, o) < 0) return 0;
  return 1;
}

/* A loop of prange head o's nest whose range varies with o's variable. */
static int triangular(KfaCtx *C, const KirLoop *m, const KirLoop *o) {
  return m != o && o->kind != KIR_LOOP_FORNUM && head_dependent(C, m, o) > 0;
}

/* The checks one test before nest head o proves (every access inside o). */
static void nest_checks(KfaCtx *C, KfaLoop *fo) {
  KtySpec *sp = C->sp;
  KirLoop *o = fo->loop;
  for (int i = 0; i < o->nblocks; i++) {
    KirBlock *b = o->blocks[i];
    if (!sp->live[b->id]) continue;
    for (int j = 0; j < b->ninsns; j++) {
      KirInsn *v = b->insns[j];
      if (!((v->op == KIR_INDEX && v->nargs == 2) || (v->op == KIR_SETINDEX && v->nargs == 3)))
        continue;
      KirInsn *obj = v->args[0], *key = v->args[1];
      if (sp->types[obj->id].kind != T_BUF || sp->types[key->id].kind != T_INT) continue;
      int depth;
      KirInsn *base = array_root(o, obj, &depth);
      Type bt = sp->types[base->id];
      if (kfa_inloop_(o, base) || bt.kind != T_BUF || depth >= bt.ndim) continue;
      KfaCheck h;
      memset(&h, 0, sizeof h);
      h.insn = v; h.base = base; h.dim = depth; h.key = key;
      int ok = invariant_int(sp, o, key);
      /* affine in the variable of a loop of the nest containing v */
      for (KirLoop *m = b->loop; m && !ok && kir_inloop(o, m->header); m = m->parent)
        if (nest_loop(C, m, o)) ok = kfa_affine_(sp, m, o, key, &h);
      for (KirLoop *m = b->loop; m && !ok && kir_inloop(o, m->header); m = m->parent)
        if (nest_loop(C, m, o)) ok = kfa_linear_(C, m, o, key, &h);   /* the general form (ir_facts_affine.c) */
      if (!ok) {   /* several variables, scaled: `(i - 1) * n + j` */
        KirLoop *ms[KFA_MAXTERMS];
        int nms = 0;
        for (KirLoop *m = b->loop; m && kir_inloop(o, m->header) && nms < KFA_MAXTERMS; m = m->parent)
          if (nest_loop(C, m, o)) ms[nms++] = m;
        ok = kfa_nest_linear_(C, o, ms, nms, key, &h);
        /* a triangular loop's variable with another in one key: their
        ** ranges are not independent (`i - j` for j <= i is never below
        ** 0, the ranges' ends say lo - hi), the test would fail for
        ** every chunk and send its whole body to the checked copy: such
        ** an access stays checked */
        for (int t = 0; ok && h.nvterms > 1 && t < h.nvterms; t++)
          if (triangular(C, h.vterms[t].loop, o)) ok = 0;
      }
      if (ok) add_check(C, &fo->nestchecks, &fo->nnestchecks, h);
    }
  }
}

/* ---- Narrow while counters ---------------------------------------------- */

/* The values of counter k in l: k itself, phis of l's own blocks joining
** them, and exactly one `x + 1` (x one of them) outside inner loops.
** Returns 0 when something else assigns it. */
static int counter_web(KfaCtx *C, KirLoop *l, KirInsn *k, KirInsn *v, uint8_t *seen, KirInsn **step) {
  lua_Integer one;
  if (v == k) return 1;
  if (seen[v->id]) return 1;
  if (!kfa_inloop_(l, v)) return 0;
  seen[v->id] = 1;
  if (v->op == KIR_PHI) {
    for (int i = 0; i < v->nargs; i++)
      if (!counter_web(C, l, k, v->args[i], seen, step)) return 0;
    return 1;
  }
  if (v->op == KIR_ADD && v->nargs == 2 && v->block->loop == l) {
    KirInsn *a = v->args[0], *b = v->args[1];
    if (kfa_intconst_(C->sp, a, &one) && one == 1 && !(kfa_intconst_(C->sp, b, &one) && one == 1)) {
      KirInsn *t = a; a = b; b = t;
    }
    if (!(kfa_intconst_(C->sp, b, &one) && one == 1 && b->op == KIR_INT)) return 0;
    if (*step && *step != v) return 0;   /* a second step */
    *step = v;
    return counter_web(C, l, k, a, seen, step);
  }
  return 0;
}

static KirInsn *entry_value(KirLoop *l, KirInsn *phi) {
  KirInsn *e = NULL;
  for (int p = 0; p < l->header->npreds; p++)
    if (!kir_inloop(l, l->header->preds[p])) {
      if (e && e != phi->args[p]) return NULL;
      e = phi->args[p];
    }
  return e;
}

/* k < e, k <= e in a test with an exit on its false side (the old
** narrow_find: the `and` operands at the top of the condition). */
static KfaNarrow *narrow_test(KfaCtx *C, KirLoop *l, KirInsn *cmp) {
  KtySpec *sp = C->sp;
  if ((cmp->op != KIR_LT && cmp->op != KIR_LE) || cmp->nargs != 2) return NULL;
  KirInsn *k = cmp->args[0], *e = cmp->args[1];
  if (k->op != KIR_PHI || k->block != l->header || sp->types[k->id].kind != T_INT) return NULL;
  if (sp->types[e->id].kind != T_INT) return NULL;
  lua_Integer ek = 0;
  int econst = kfa_intconst_(sp, e, &ek);
  if (econst) {
    if (ek < INT32_MIN || ek > (lua_Integer)INT32_MAX - 1) return NULL;
  } else {
    if (kfa_inloop_(l, e)) return NULL;   /* changes in the loop */
    for (KirLoop *m = l->parent; m; m = m->parent)
      if (m->kind == KIR_LOOP_FORNUM && m->var == e) return NULL;   /* a for variable */
  }
  uint8_t *seen = kfa_alloc_(C, (size_t)C->f->ninsns);
  KirInsn *step = NULL;
  for (int p = 0; p < l->header->npreds; p++) {
    if (!kir_inloop(l, l->header->preds[p])) continue;
    if (!counter_web(C, l, k, k->args[p], seen, &step)) return NULL;
  }
  KirInsn *kin = entry_value(l, k);
  if (step == NULL || kin == NULL) return NULL;
  KfaNarrow *n = kfa_alloc_(C, sizeof *n);
  *n = (KfaNarrow){ k, cmp, e, econst, ek, step, kin };
  return n;
}

static void while_facts(KfaCtx *C, KfaLoop *fl) {
  KirLoop *l = fl->loop;
  KirBlock *b = l->header;
  for (int guard = 0; b && guard < 64; guard++) {
    KirInsn *t = b->term;
    if (t == NULL || t->op != KIR_BR || b->nsucc != 2 || t->nargs < 1) return;
    int in0 = kir_inloop(l, b->succ[0]), in1 = kir_inloop(l, b->succ[1]);
    if (!in0 || in1) return;   /* the false side must leave the loop */
    KirInsn *c = t->args[0];
    if (c->block == b && (fl->narrowk = narrow_test(C, l, c)) != NULL) return;
    b = b->succ[0];            /* the next `and` operand, tested only from here */
    if (b->npreds != 1 || b == l->header) return;
  }
}

/* ---- Peelable number phis ----------------------------------------------- */

static void peel_facts(KfaCtx *C, KfaLoop *fl) {
  KtySpec *sp = C->sp;
  KirLoop *l = fl->loop;
  KirBlock *h = l->header;
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *phi = h->phis[i];
    if (sp->types[phi->id].kind != T_NUMBER) continue;
    int nback = 0, ok = 1;
    for (int p = 0; p < h->npreds && p < phi->nargs; p++) {
      if (!kir_inloop(l, h->preds[p])) continue;
      uint8_t k = sp->types[phi->args[p]->id].kind;
      nback++;
      ok &= k == T_F64 || k == T_F32;
    }
    if (!ok || nback == 0) continue;
    if (fl->peel == NULL) fl->peel = kfa_alloc_(C, (size_t)h->nphis * sizeof *fl->peel);
    fl->peel[fl->npeel++] = phi;
    C->F->peel[phi->id] = 1;
  }
}

/* ---- The analysis ------------------------------------------------------- */

KfaFacts *kfa_analyze(Arena *A, KtySpec *sp, int parallel) {
  KfaCtx C;
  memset(&C, 0, sizeof C);
  C.A = A; C.sp = sp; C.f = sp->ir; C.parallel = parallel;
  if (setjmp(C.jb)) return NULL;
  KirFunc *f = sp->ir;
  KfaFacts *F = C.F = kfa_alloc_(&C, sizeof *F);
  F->sp = sp;
  F->nloops = f->nloops;
  F->loops = kfa_alloc_(&C, (size_t)f->nloops * sizeof *F->loops);
  F->hoisted = kfa_alloc_(&C, (size_t)f->ninsns * sizeof *F->hoisted);
  F->peel = kfa_alloc_(&C, (size_t)f->ninsns);
  for (int i = 0; i < f->nloops; i++) {
    KfaLoop *fl = &F->loops[i];
    fl->loop = f->loops[i];
    fl->nest = fl->loop;
    if (!sp->live[fl->loop->header->id]) continue;   /* never runs */
    switch (fl->loop->kind) {
    case KIR_LOOP_FORNUM:
      fornum_facts(&C, fl);
      if (fl->isint) {
        collect_checks(&C, fl);
        fl->nest = nest_of(&C, fl->loop);
      }
      break;
    case KIR_LOOP_FORIN:
      if (prange_int(sp, fl->loop)) prange_range_facts(&C, fl);
      break;
    case KIR_LOOP_WHILE:   /* the old rule read while conditions only */
      while_facts(&C, fl);
      break;
    default: break;
    }
    peel_facts(&C, fl);
  }
  /* nest heads: loops that some inner loop's nest reaches (the one it
  ** names, or one on the way: the sub-nest of jacobi's sweeps, whose
  ** arrays change between sweeps) */
  for (int i = 0; i < f->nloops; i++) {
    KfaLoop *fl = &F->loops[i];
    int head = 0;
    for (int j = 0; j < f->nloops; j++) {
      KirLoop *l = f->loops[j];
      head |= j != i && F->loops[j].nest != l && kir_inloop(fl->loop, l->header) &&
              spans(&C, l, fl->loop);
    }
    if (head) nest_checks(&C, fl);
  }
  /* outer loops first, so the innermost proving loop stays */
  for (int i = 0; i < f->nloops; i++)
    for (int c = 0; c < F->loops[i].nchecks; c++) F->hoisted[F->loops[i].checks[c].insn->id] = &F->loops[i];
  kfa_prange_facts_(&C);
  /* prange loops: what one test at each call of the worker proves (its
  ** chunk's range of i, the inner loops' ranges), or for a serial one
  ** one test before it */
  for (int i = 0; i < f->nloops; i++)
    if (sp->live[f->loops[i]->header->id] && prange_head(&C, f->loops[i])) nest_checks(&C, &F->loops[i]);
  return F;
}

/* ---- Purity --------------------------------------------------------------- */

/* Whether sp can be pure given the current marks (one pass of the old
** pure_block over the live instructions). */
static int pure_spec(KtySession *S, KtySpec *sp, const uint8_t *pure) {
  KirFunc *f = sp->ir;
  if (f->nloops || f->irreducible) return 0;
  for (int j = 0; j < f->nblocks; j++) {
    KirBlock *b = f->blocks[j];
    if (!sp->live[b->id]) continue;
    for (int i = 0; i < b->ninsns; i++) {
      KirInsn *v = b->insns[i];
      switch (v->op) {
      case KIR_SETFIELD: case KIR_SETINDEX: case KIR_SETUPVAL: case KIR_SETLIST: case KIR_TBC:
      case KIR_NEWCELL: case KIR_SETCELL: case KIR_GETCELL:
      case KIR_NEWTABLE: case KIR_CLOSURE: case KIR_VARARG: case KIR_CONCAT:
        return 0;
      case KIR_CALL: {
        Type ft = sp->types[v->args[0]->id];
        if (ft.kind == T_BUILTIN) {
          if (ft.ref == B_ERROR || B_IS_CUDA(ft.ref) || ft.ref == B_KJIT_PRANGE ||
              B_IS_ARRAY(ft.ref))   /* allocation, stores: not pure */
            return 0;
          if (B_NEEDS_L(ft.ref)) return 0;   /* calls into Lua (runtime_lib.c) */
          if (ft.ref == B_ASSERT && v->nargs >= 3 && sp->consts[v->args[2]->id].kind != T_STR)
            return 0;
        } else {
          KtySpec *c = sp->callees[v->id];
          if (c == NULL) return 0;
          int k = -1;
          for (int s = 0; s < S->nspecs; s++) if (S->specs[s] == c) k = s;
          if (k < 0 || !pure[k]) return 0;
        }
        break;
      }
      default: break;
      }
    }
  }
  return 1;
}

void kfa_mark_pure(KtySession *S, int cpu, int (*fits)(KtySession *S, const KtySpec *sp),
                   uint8_t *pure) {
  for (int i = 0; i < S->nspecs; i++) {
    KtySpec *sp = S->specs[i];
    uint8_t k = sp->nret == 1 ? sp->rets[0].kind : T_UNKNOWN;
    /* a number too: the old typer made it a float; its tagged pair fits
    ** two registers */
    pure[i] = cpu && (k == T_INT || k == T_F64 || k == T_F32 || k == T_BOOL || k == T_NUMBER);
    /* the generator's own limits go into the seed, not after the
    ** fixpoint: then no pure caller is left calling one it took out */
    if (pure[i] && fits && !fits(S, sp)) pure[i] = 0;
  }
  for (int changed = 1; changed; ) {
    changed = 0;
    for (int i = 0; i < S->nspecs; i++)
      if (pure[i] && !pure_spec(S, S->specs[i], pure)) { pure[i] = 0; changed = 1; }
  }
}

/* ---- Printing (tests) ------------------------------------------------------ */

static void put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  char tmp[1200];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof tmp) n = (int)sizeof tmp - 1;
  if (*len + (size_t)n + 1 > *cap) {
    size_t nc = (*len + (size_t)n + 1) * 2;
    char *nb = realloc(*buf, nc);
    if (nb == NULL) return;
    *buf = nb; *cap = nc;
  }
  memcpy(*buf + *len, tmp, (size_t)n + 1);
  *len += (size_t)n;
}

static const char *const kind_name[] = { "fornum", "forin", "while", "repeat", "loop" };

/* A general affine key (ir_facts_affine.c): "-loop 1 var + %4 - 1". */
static void print_linear(const KfaFacts *F, const KfaCheck *h, char *key, size_t size) {
  int n = snprintf(key, size, "%sloop %d var", h->negv ? "-" : "", h->vloop->id);
  for (int t = 0; t < h->nterms && n > 0 && (size_t)n < size; t++) {
    lua_Integer k;
    char sign = h->tneg[t] ? '-' : '+';
    if (kfa_intconst_(F->sp, h->terms[t], &k)) n += snprintf(key + n, size - (size_t)n, " %c %lld", sign, (long long)k);
    else n += snprintf(key + n, size - (size_t)n, " %c %%%d", sign, h->terms[t]->id);
  }
}

/* "%3 * (loop 0 var + -1) + loop 1 var - 1" */
static void print_nest_linear(const KfaFacts *F, const KfaCheck *h, char *key, size_t size) {
  size_t n = 0;
  key[0] = 0;
  for (int i = 0; i < h->nvterms && n < size; i++) {
    const KfaVarTerm *t = &h->vterms[i];
    KfaCheck one;
    memset(&one, 0, sizeof one);
    one.affine = 1; one.vloop = t->loop; one.negv = t->vneg;
    one.terms = t->terms; one.tneg = t->tneg; one.nterms = t->nterms;
    char inner[160];
    print_linear(F, &one, inner, sizeof inner);
    const char *sign = i == 0 ? (t->neg ? "-" : "") : (t->neg ? " - " : " + ");
    int k = t->scale ? snprintf(key + n, size - n, "%s%%%d * (%s)", sign, t->scale->id, inner)
                     : snprintf(key + n, size - n, "%s%s", sign, inner);
    if (k < 0) return;
    n += (size_t)k;
  }
  for (int i = 0; i < h->nterms && n < size; i++) {
    lua_Integer c;
    char sign = h->tneg[i] ? '-' : '+';
    int k = kfa_intconst_(F->sp, h->terms[i], &c)
                ? snprintf(key + n, size - n, " %c %lld", sign, (long long)c)
                : snprintf(key + n, size - n, " %c %%%d", sign, h->terms[i]->id);
    if (k < 0) return;
    n += (size_t)k;
  }
}

static void print_check(const KfaFacts *F, const KfaCheck *h, const char *what, char **buf, size_t *len,
                        size_t *cap) {
  char key[400];
  if (h->nvterms) print_nest_linear(F, h, key, sizeof key);
  else if (h->affine && (h->negv || h->nterms)) print_linear(F, h, key, sizeof key);
  else if (!h->affine) snprintf(key, sizeof key, "%%%d (invariant)", h->key->id);
  else if (h->off == NULL) snprintf(key, sizeof key, "loop %d var", h->vloop->id);
  else if (h->offconst)
    snprintf(key, sizeof key, "loop %d var %c %lld", h->vloop->id, h->negoff ? '-' : '+', (long long)h->offk);
  else snprintf(key, sizeof key, "loop %d var %c %%%d", h->vloop->id, h->negoff ? '-' : '+', h->off->id);
  put(buf, len, cap, "  %s %%%d %s dim %d of %%%d: %s\n", what, h->insn->id, kir_opname[h->insn->op],
      h->dim, h->base->id, key);
}

void kfa_print(const KfaFacts *F, char **buf, size_t *len, size_t *cap) {
  static const char *const narrow[] = { "never", "test", "always" };
  static const char *const ids[] = { "0", "1", "the value", "maxinteger", "mininteger" };
  for (int i = 0; i < F->nloops; i++) {
    const KfaLoop *fl = &F->loops[i];
    const KirLoop *l = fl->loop;
    put(buf, len, cap, "loop %d %s line %d", l->id, kind_name[l->kind], l->line);
    if (l->kind == KIR_LOOP_FORNUM) {
      put(buf, len, cap, ": %s, step %s", fl->isint ? "integer" : "float",
          fl->stepsign > 0 ? "+" : fl->stepsign < 0 ? "-" : "sign unknown");
      if (fl->innermost) put(buf, len, cap, ", innermost");
      if (fl->exits) put(buf, len, cap, ", %d early exit%s", fl->exits, fl->exits > 1 ? "s" : "");
      put(buf, len, cap, ", narrow %s", narrow[fl->narrow]);
      if (fl->nest != l) put(buf, len, cap, ", nest loop %d", fl->nest->id);
    }
    put(buf, len, cap, "\n");
    for (int c = 0; c < fl->nchecks; c++) print_check(F, &fl->checks[c], "hoist", buf, len, cap);
    for (int c = 0; c < fl->nunchecked; c++)
      put(buf, len, cap, "  checked %%%d %s dim %d: %s\n", fl->unchecked[c].insn->id,
          kir_opname[fl->unchecked[c].insn->op], fl->unchecked[c].dim, fl->unchecked[c].why);
    for (int c = 0; c < fl->nnestchecks; c++) print_check(F, &fl->nestchecks[c], "nest", buf, len, cap);
    if (fl->narrowk) {
      const KfaNarrow *n = fl->narrowk;
      char b[40];
      if (n->boundconst) snprintf(b, sizeof b, "%lld", (long long)n->boundk);
      else snprintf(b, sizeof b, "%%%d", n->bound->id);
      put(buf, len, cap, "  narrow counter %%%d %s %s, step %%%d, test %%%d%s%s in int32\n", n->k->id,
          n->cmp->op == KIR_LT ? "<" : "<=", b, n->step->id, n->kentry->id,
          n->boundconst ? "" : " and ", n->boundconst ? "" : b);
    }
    for (int c = 0; c < fl->npeel; c++) put(buf, len, cap, "  peel %%%d\n", fl->peel[c]->id);
    if (fl->prange) {
      const KfaPrange *P = fl->prange;
      put(buf, len, cap, "  prange %%%d: %s%s\n", P->call->id, P->parallel ? "parallel" : "sequential",
          P->nested ? " (nested)" : "");
      if (P->errmsg) put(buf, len, cap, "  error %d: %s\n", P->errline, P->errmsg);
      for (int r = 0; r < P->nreds; r++) {
        const KfaRedVar *rv = &P->reds[r];
        put(buf, len, cap, "  reduction %s %%%d: %s, identity %s, ops", rv->name, rv->phi->id,
            kfa_red_name(rv->red), ids[rv->id]);
        for (int o = 0; o < rv->nops; o++) put(buf, len, cap, " %%%d", rv->ops[o]->id);
        if (rv->number) put(buf, len, cap, ", %s", rv->number == 2 ? "number entry" : "number");
        put(buf, len, cap, "\n");
      }
      for (int w = 0; w < P->nwrites; w++)
        put(buf, len, cap, "  write %%%d: %s\n", P->writes[w]->id,
            P->disjoint[w] ? "disjoint rows" : "not provably disjoint");
      if (P->nshared) {
        put(buf, len, cap, "  shared");
        for (int s = 0; s < P->nshared; s++) put(buf, len, cap, " %s", P->shared[s]->name);
        put(buf, len, cap, "\n");
      }
    }
    if (fl->note) put(buf, len, cap, "  note: %s\n", fl->note);
  }
}
