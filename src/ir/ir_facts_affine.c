/*
** ir_facts_affine.c: general affine keys for bounds-check hoisting
** (ir_facts.h 2.): an array key that is +v or -v, v a loop's control
** variable, plus a sum of loop-invariant integers in any order and
** association:
**
**     a[j + s + 1]   z[i - j + 1]   x[n - j]   x[(i - 1) * n + j]
**
** Lua's integer + and - wrap, and they are a ring modulo 2^64: whatever
** the association, the key equals +-v + W modulo 2^64, W the wrapped sum of
** the invariant terms, which the code generator computes once before the
** loop (cg_version.c). Its range test adds +-lo and +-hi to W in 128 bits;
** when both ends lie in [1, n], so does +-v + W for every v between them,
** exactly, which is then the key the body computes (no wrap occurred).
** Only ADD, SUB and UNM typed integer are looked through (a float anywhere
** makes the key a float: not hoisted), with exactly one occurrence of v; a
** term is an integer expression that kfa_nest_invariant accepts in the
** loop the test goes before (a constant, a value defined outside it, or
** + - * and unary minus of such, which never raise).
*/
#include <string.h>
#include "ir/ir_facts.h"
#include "ir/ir_facts_int.h"

#define WALK_DEPTH 16     /* ADD/SUB/UNM nodes between the key and a leaf */

typedef struct Lin {
  const KtySpec *sp;
  const KirInsn *v;       /* the control variable */
  const KirLoop *inv;     /* the terms are invariant in it */
  int vsign;              /* 0: v not met yet */
  int nterms;
  KirInsn *terms[KFA_MAXTERMS];
  uint8_t tneg[KFA_MAXTERMS];
} Lin;

static int is_int(const KtySpec *sp, const KirInsn *x) { return sp->types[x->id].kind == T_INT; }

/* x, counted with sign (+1/-1), into L; 0 when x is not of the form. */
static int walk(Lin *L, KirInsn *x, int sign, int depth) {
  if (x == L->v) {
    if (L->vsign) return 0;   /* v twice: 2v or v - v, not ours */
    L->vsign = sign;
    return 1;
  }
  if (!is_int(L->sp, x)) return 0;
  if (kfa_nest_invariant(L->sp, L->inv, x)) {
    if (L->nterms == KFA_MAXTERMS) return 0;
    L->terms[L->nterms] = x;
    L->tneg[L->nterms++] = sign < 0;
    return 1;
  }
  if (depth == 0) return 0;
  if ((x->op == KIR_ADD || x->op == KIR_SUB) && x->nargs == 2)
    return walk(L, x->args[0], sign, depth - 1) &&
           walk(L, x->args[1], x->op == KIR_SUB ? -sign : sign, depth - 1);
  if (x->op == KIR_UNM && x->nargs == 1) return walk(L, x->args[0], -sign, depth - 1);
  return 0;
}

int kfa_linear_(KfaCtx *C, const KirLoop *l, const KirLoop *inv, KirInsn *key, KfaCheck *h) {
  Lin L;
  memset(&L, 0, sizeof L);
  L.sp = C->sp; L.v = l->var; L.inv = inv;
  if (l->var == NULL || !is_int(C->sp, key) || !walk(&L, key, 1, WALK_DEPTH)) return 0;
  if (L.vsign == 0) {
    /* no v: an invariant key, recomputed before the loop as a whole (the
    ** walk found it, or a term of it, invariant) */
    if (!kfa_nest_invariant(C->sp, inv, key)) return 0;
    h->affine = 0;
    return 1;
  }
  h->affine = 1;
  h->vloop = (KirLoop *)l;
  h->off = NULL;
  h->negoff = 0;
  h->offconst = 0;
  h->negv = L.vsign < 0;
  h->nterms = L.nterms;
  if (L.nterms) {
    h->terms = kfa_alloc_(C, (size_t)L.nterms * sizeof *h->terms);
    h->tneg = kfa_alloc_(C, (size_t)L.nterms);
    memcpy(h->terms, L.terms, (size_t)L.nterms * sizeof *h->terms);
    memcpy(h->tneg, L.tneg, (size_t)L.nterms);
  }
  return 1;
}

/* ---- Nest checks in several variables ----------------------------------- */

/* The key of a nest check as a sum of invariant terms (in o) and products
** (KfaVarTerm): `(i - 1) * n + j - 1` is n * (i - 1) + j - 1 with i and j
** variables of loops of the nest. */
typedef struct NLin {
  KfaCtx *C;
  const KirLoop *o;
  KirLoop *const *ms; int nms;
  Lin out;                /* the invariant terms (out.v unused) */
  int nv;
  KfaVarTerm vt[KFA_MAXTERMS];
} NLin;

static KirLoop *var_loop(const NLin *N, const KirInsn *x) {
  for (int i = 0; i < N->nms; i++)
    if (N->ms[i]->var == x) return N->ms[i];
  return NULL;
}

/* x, a factor scaled by `scale` (NULL: 1) and counted with sign: +-v + terms
** for the variable v of one of N's loops. */
static int add_product(NLin *N, KirInsn *x, KirInsn *scale, int sign) {
  if (N->nv == KFA_MAXTERMS) return 0;
  for (int i = 0; i < N->nms; i++) {
    Lin L;
    memset(&L, 0, sizeof L);
    L.sp = N->C->sp; L.v = N->ms[i]->var; L.inv = N->o;
    if (!walk(&L, x, 1, WALK_DEPTH) || L.vsign == 0) continue;
    KfaVarTerm *t = &N->vt[N->nv++];
    t->loop = N->ms[i];
    t->vneg = L.vsign < 0;
    t->neg = sign < 0;
    t->scale = scale;
    t->nterms = L.nterms;
    if (L.nterms) {
      t->terms = kfa_alloc_(N->C, (size_t)L.nterms * sizeof *t->terms);
      t->tneg = kfa_alloc_(N->C, (size_t)L.nterms);
      memcpy(t->terms, L.terms, (size_t)L.nterms * sizeof *t->terms);
      memcpy(t->tneg, L.tneg, (size_t)L.nterms);
    }
    return 1;
  }
  return 0;
}

static int nwalk(NLin *N, KirInsn *x, int sign, int depth) {
  const KtySpec *sp = N->C->sp;
  if (var_loop(N, x)) return add_product(N, x, NULL, sign);
  if (!is_int(sp, x)) return 0;
  if (kfa_nest_invariant(sp, N->o, x)) {
    if (N->out.nterms == KFA_MAXTERMS) return 0;
    N->out.terms[N->out.nterms] = x;
    N->out.tneg[N->out.nterms++] = sign < 0;
    return 1;
  }
  if (depth == 0) return 0;
  if ((x->op == KIR_ADD || x->op == KIR_SUB) && x->nargs == 2)
    return nwalk(N, x->args[0], sign, depth - 1) &&
           nwalk(N, x->args[1], x->op == KIR_SUB ? -sign : sign, depth - 1);
  if (x->op == KIR_UNM && x->nargs == 1) return nwalk(N, x->args[0], -sign, depth - 1);
  if (x->op == KIR_MUL && x->nargs == 2) {
    KirInsn *a = x->args[0], *b = x->args[1];
    if (!is_int(sp, a) || !is_int(sp, b)) return 0;
    if (kfa_nest_invariant(sp, N->o, a)) return add_product(N, b, a, sign);
    if (kfa_nest_invariant(sp, N->o, b)) return add_product(N, a, b, sign);
  }
  return 0;
}

int kfa_nest_linear_(KfaCtx *C, const KirLoop *o, KirLoop *const *ms, int nloops, KirInsn *key,
                     KfaCheck *h) {
  NLin N;
  memset(&N, 0, sizeof N);
  N.C = C; N.o = o; N.ms = ms; N.nms = nloops;
  N.out.sp = C->sp;
  if (nloops == 0 || !is_int(C->sp, key) || !nwalk(&N, key, 1, WALK_DEPTH) || N.nv == 0) return 0;
  h->affine = 0;
  h->vloop = NULL;
  h->nterms = N.out.nterms;
  if (N.out.nterms) {
    h->terms = kfa_alloc_(C, (size_t)N.out.nterms * sizeof *h->terms);
    h->tneg = kfa_alloc_(C, (size_t)N.out.nterms);
    memcpy(h->terms, N.out.terms, (size_t)N.out.nterms * sizeof *h->terms);
    memcpy(h->tneg, N.out.tneg, (size_t)N.out.nterms);
  }
  h->nvterms = N.nv;
  h->vterms = kfa_alloc_(C, (size_t)N.nv * sizeof *h->vterms);
  memcpy(h->vterms, N.vt, (size_t)N.nv * sizeof *h->vterms);
  return 1;
}
