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
