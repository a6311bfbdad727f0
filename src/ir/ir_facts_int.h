/*
** ir_facts_int.h: what ir_facts.c and ir_facts_prange.c share (internal).
*/
#ifndef KJIT_IR_FACTS_INT_H
#define KJIT_IR_FACTS_INT_H

#include <setjmp.h>
#include "ir/ir_facts.h"

typedef struct KfaCtx {
  Arena *A;
  KtySpec *sp;
  KirFunc *f;
  KfaFacts *F;
  int parallel;
  jmp_buf jb;             /* out of memory */
} KfaCtx;

/* Zeroed arena memory; longjmps out of kfa_analyze when there is none. */
void *kfa_alloc_(KfaCtx *C, size_t n);
int kfa_inloop_(const KirLoop *l, const KirInsn *v);
int kfa_intconst_(const KtySpec *sp, const KirInsn *v, lua_Integer *k);
/* Is key l's control variable plus or minus an integer invariant in inv?
** (fills h's affine fields) */
int kfa_affine_(const KtySpec *sp, const KirLoop *l, const KirLoop *inv, KirInsn *key, KfaCheck *h);
/* Is key +v or -v (v: l's control variable) plus a sum of integers
** invariant in inv, in any association (ir_facts.h 2.)? Fills h's affine
** and general fields. Tried where kfa_affine_ fails. */
int kfa_linear_(KfaCtx *C, const KirLoop *l, const KirLoop *inv, KirInsn *key, KfaCheck *h);
/* Is key, in a nest check before o, a sum of integers invariant in o and
** of (optionally scaled by such an integer) +v or -v plus invariants, v
** the control variable of one of the nloops loops ms (ir_facts.h 2.)?
** Fills h->terms and h->vterms (affine 0). */
int kfa_nest_linear_(KfaCtx *C, const KirLoop *o, KirLoop *const *ms, int nloops, KirInsn *key,
                     KfaCheck *h);
/* Is l a `for i in kjit.prange(a, b [, c])` loop (ir_facts_prange.c)? */
int kfa_is_prange_(const KtySpec *sp, const KirLoop *l);
/* The prange facts and every loop's note (ir_facts_prange.c). */
void kfa_prange_facts_(KfaCtx *C);

#endif
