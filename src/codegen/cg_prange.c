/*
** cg_prange.c: `for i in kjit.prange(a, b [, step])` in the bytecode code
** generator, serial or on the thread pool (parallel.c), and the
** f:inspect("parallel") notes.
**
** In the IR (ir.h, ir_type.h) the loop is
**     pre:    %p = call kjit.prange(a, b [, c]) -> 4   (results 1, 2: state, control)
**     header: %c = phi [result 2 of %p, pre], [%i, latch] ...
**             %i = call %p(state, %c) tfor               (i, the control variable)
**             br (eq %i, nil), exit, body
** The typer makes a, b, c integers. The call %p computes the iteration
** count as a numeric for does (cg_int_count) and keeps the loop's state in
** three stack slots (mem2reg makes them registers): the next i, the
** iterations left after it, and whether it runs. The tfor call reads i and
** advances the state; the header's test is "it does not run".
**
** Parallel (the jit option parallel = true, and ir_facts says the loop may:
** KfaPrange.parallel): the loop's blocks are emitted into a worker
**     i32 worker(void **env, i64 kbegin, i64 kend, i64 chunk, KErr *err)
** that runs iterations kbegin..kend-1 (i = first + k*step), as the old
** generator did (the earlier source-text generator). The environment holds
** pointers to stack slots of the enclosing frame (which waits in
** kjit_rt_parallel_for, so they outlive the loop): [0] first, [1] step,
** then every part of every value defined outside the loop that the loop
** reads (the worker loads them once), then per reduction and part an
** array of KJIT_PRANGE_MAXCHUNKS partial results. A reduction's header phi
** starts chunk 0 from the variable's value and the other chunks from the
** identity KfaRedVar.id gives; the enclosing frame combines the partials
** in chunk order, so results do not depend on timing. A reduction typed
** T_NUMBER keeps tagged partials (an integer identity, or a float one when
** the variable is a number only by its entry value: KfaRedVar.number 2).
** In the enclosing function the header block becomes the call of
** kjit_rt_parallel_for and the combination; the header phis of the
** reductions then stand for the combined values on the exit edge.
**
** Bounds checks: with them on and nest checks to test (ir_facts.h 2.),
** the worker is made twice. The first keeps every check; the second
** (the one the pool calls) tests at entry, for its chunk of i and the
** inner loops' whole ranges, every check the nest test proves
** (cg_version_worker_test), runs its body without them, and calls the
** first (not inlined) for the chunk when the test fails: that one raises
** at the exact iteration. Inner loops whose bounds are i plus or minus an
** invariant (triangles) are tested over the chunk's whole range of i. A
** serial prange loop without inner loops is versioned as a nest
** (cg_version.c): one test before it; its checked copy runs unchunked
** (chunked()).
**
** The worker reports into a KErr of its own frame (LLVM can then keep
** err's fields in registers) and copies it to the runtime's on a failing
** return; the runtime raises the lowest failing chunk's error.
**
** Interrupt polls (cg_func.c, runtime_poll.c). A prange loop, serial or
** in its worker, runs in chunks of at most KCG_POLL_PERIOD iterations,
** each charged to the poll countdown whole at its start (a chunk head
** before the header), as strip-mined numeric loops are: the loop proper
** then counts down the chunk's iterations only (one exit, nothing else
** added), so LLVM vectorizes it as it would without polls. Charged every
** iteration instead, it did not: saxpy and dot ran 2x slower on one
** thread than with polls off. The worker sets up the strip-mined inner
** loops of its body (cg_strip_begin) in its own function. A header's
** test then leaves to the chunk's end: the next chunk, or the exit.
*/
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <stdint.h>
#include "codegen/cg.h"
#include "codegen/kcg.h"
#include "ir/ir_facts.h"
#include "common/krecord.h"

#define MAXRED 16      /* reductions per loop (as the old KJIT_PRANGE_MAXRED) */
#define MAXPARTS (3 + KJIT_MAXDIMS)

/* One prange loop's state, keyed by its kjit.prange call. */
typedef struct PLoop {
  LLVMValueRef init, step, count, skip;   /* at the call: first i, step, iterations - 1, none */
  LLVMValueRef pi, prem, pmore;           /* slots: next i, iterations left after it, it runs */
  LLVMValueRef more;                      /* the header's tfor: this iteration runs */
  LLVMBasicBlockRef done;                 /* emitting its worker: where the loop exits */
  /* chunked (polls): pcnt, iterations left in this chunk (a slot); pmore
  ** then says whether a chunk follows, prem what remains after this one */
  LLVMValueRef pcnt;
  LLVMBasicBlockRef chead;                /* the chunk head (before the header) */
  CgVal arr;                              /* ipairs(a): a (arr.v NULL for prange) */
  LLVMValueRef safe;                      /* ipairs: an element to read past the end */
} PLoop;

typedef struct CgPrange {
  KfaFacts *F;
  PLoop **loops;        /* by the kjit.prange call's id */
  KfaLoop **outl;       /* by block id: the parallel loop it belongs to */
  int inworker;
  int nworkers;         /* names */
} CgPrange;

static void *zalloc(CG *G, size_t n) {
  void *p = ka_alloc(G->S->A, n ? n : 1);
  if (p == NULL) cg_error(G, NULL, "not enough memory");
  memset(p, 0, n ? n : 1);
  return p;
}

/* ---- Facts, errors and notes ------------------------------------------------ */

static void add_note(CG *G, const char *note) {
  KcgParallel *par = G->par;
  if (par == NULL || par->notes == NULL || par->nnotes == NULL) return;
  char line[1100];
  int n = snprintf(line, sizeof line, "%s\n", note);
  if (n <= 0 || n >= (int)sizeof line) return;
  /* identical lines once (a line is found only whole: at the start or
  ** after a newline) */
  for (const char *s = par->notes; (s = strstr(s, line)) != NULL; s++)
    if (s == par->notes || s[-1] == '\n') return;
  if (*par->nnotes + n >= par->notescap) return;
  memcpy(par->notes + *par->nnotes, line, (size_t)n + 1);
  *par->nnotes += n;
}

/* The first instruction (in bytecode order) of loop l that needs the Lua
** state, described in the user's words into what (refuse3: the refusal
** says which use and what to write instead). */
static const KirInsn *first_lua_use(CG *G, const KirLoop *l, char *what, size_t n) {
  KtySpec *sp = G->sp;
  const KirInsn *at = NULL;
  for (int b = 0; b < l->nblocks; b++) {
    KirBlock *blk = l->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      const KirInsn *v = blk->insns[i];
      if (cg_lua_insn_uses(G->S, sp, v) && (at == NULL || v->pc < at->pc)) at = v;
    }
  }
  snprintf(what, n, "a table, or a value read from one");
  if (at == NULL) return NULL;
  int obj = at->nargs > 0 && sp->types[at->args[0]->id].kind == T_LUA;
  switch (at->op) {
  case KIR_GETFIELD:
    if (obj) snprintf(what, n, "reading field '%s' of a table", at->k.str.s ? at->k.str.s : "?");
    else snprintf(what, n, "reading field '%s'", at->k.str.s ? at->k.str.s : "?");
    break;
  case KIR_INDEX: snprintf(what, n, "indexing a table"); break;
  case KIR_SETFIELD:
    if (sp->liveref && sp->liveref[at->args[0]->id])
      snprintf(what, n, "assigning global '%s'", at->k.str.s ? at->k.str.s : "?");
    else snprintf(what, n, "writing field '%s' of a table", at->k.str.s ? at->k.str.s : "?");
    break;
  case KIR_SETINDEX: case KIR_SETLIST: snprintf(what, n, "writing into a table"); break;
  case KIR_SETUPVAL: case KIR_GETUPVAL: {
    const KbcProto *p = sp->ir->proto;
    const char *up = p && at->aux >= 0 && at->aux < p->nup && p->up[at->aux].name
                     ? p->up[at->aux].name : "?";
    snprintf(what, n, at->op == KIR_SETUPVAL ? "assigning upvalue '%s'"
                      : "reading upvalue '%s' (a function assigns it: read live)", up);
    break;
  }
  case KIR_NEWTABLE: snprintf(what, n, "making a table"); break;
  case KIR_LEN: snprintf(what, n, "the length of a table ('#')"); break;
  case KIR_EQ:
    snprintf(what, n, cg_lua_eq_ident(sp, at) ? "comparing two arrays ('==')" : "comparing a Lua value");
    break;
  case KIR_CALL:
    if (obj) snprintf(what, n, "calling a function value");
    else snprintf(what, n, "calling a function that uses tables, Lua values or upvalues it assigns");
    break;
  default:
    if (KIR_ISARITH(at->op)) snprintf(what, n, "arithmetic on a value read from a table");
    break;
  }
  return at;
}

void cg_prange_begin(CG *G, KtySpec *sp) {
  int parallel = G->par && G->par->parallel;
  CgPrange *P = zalloc(G, sizeof *P);
  G->pr = P;
  P->F = kfa_analyze(G->S->A, sp, parallel);
  if (P->F == NULL) cg_error(G, NULL, "not enough memory");
  P->loops = zalloc(G, sizeof(PLoop *) * (size_t)sp->ir->ninsns);
  P->outl = zalloc(G, sizeof(KfaLoop *) * (size_t)sp->ir->nblocks);
  for (int i = 0; i < P->F->nloops; i++) {
    KfaLoop *fl = &P->F->loops[i];
    KfaPrange *FP = fl->prange;
    if (fl->note) add_note(G, fl->note);
    if (FP == NULL) continue;
    if (FP->errmsg && parallel && !FP->nested) {
      snprintf(G->S->err, sizeof G->S->err, "%s:%d: %s", sp->chunkname ? sp->chunkname : "?",
               FP->errline, FP->errmsg);
      longjmp(*G->S->jb, 1);
    }
    /* a serial prange carrying a Lua value (a table, a value read from one)
    ** from one iteration to the next: a plain loop, as prange is without
    ** parallel (no hoisted checks, no versioned copies) */
    int carries_lua = 0;
    for (int i = 0; i < fl->loop->header->nphis; i++)
      carries_lua |= sp->types[fl->loop->header->phis[i]->id].kind == T_LUA;
    if (carries_lua && !FP->parallel) { fl->prange = NULL; continue; }
    for (int i = 0; i < fl->loop->header->nphis; i++)
      if (sp->types[fl->loop->header->phis[i]->id].kind == T_LUA) {
        snprintf(G->S->err, sizeof G->S->err, "%s:%d: a kjit.prange loop cannot carry a table "
                 "value or a value read from a table from one iteration to the next (%s): use "
                 "a plain for loop", sp->chunkname ? sp->chunkname : "?", fl->loop->line,
                 fl->loop->header->phis[i]->name ? fl->loop->header->phis[i]->name : "a local");
        longjmp(*G->S->jb, 1);
      }
    if (FP->parallel) cg_vararg_prange_check(G, fl->loop);   /* cg_vararg.c */
    if (FP->parallel && cg_lua_loop_uses(G, fl->loop)) {   /* workers never touch L */
      char what[160];
      const KirInsn *at = first_lua_use(G, fl->loop, what, sizeof what);
      snprintf(G->S->err, sizeof G->S->err, "%s:%d: %s cannot run inside a parallel kjit.prange "
               "loop (line %d): its iterations run on other threads, which cannot use Lua "
               "values. Hoist it out of the loop (read what the loop needs into a local or a "
               "kjit array before it, `local x = t.x`; call the function before or after it), "
               "or make it a plain for loop (or compile without parallel = true)",
               sp->chunkname ? sp->chunkname : "?", at && at->line > 0 ? at->line : fl->loop->line,
               what, fl->loop->line);
      longjmp(*G->S->jb, 1);
    }
    if (FP->parallel)
      for (int b = 0; b < fl->loop->nblocks; b++) P->outl[fl->loop->blocks[b]->id] = fl;
  }
}

KfaFacts *cg_prange_facts(CG *G) { return G->pr ? G->pr->F : NULL; }

/* ---- Chunks (polls) ---------------------------------------------------------------- */

/* The chunk head of prange loop pl with header h (at pl->chead; its phis
** for h's in G->ophis): takes the next chunk from what remains, charges
** it, enters the header. */
static void chunk_head(CG *G, PLoop *pl, KirBlock *h) {
  LLVMBasicBlockRef at = LLVMGetInsertBlock(G->B);
  LLVMPositionBuilderAtEnd(G->B, pl->chead);
  LLVMValueRef rem = LLVMBuildLoad2(G->B, G->i64, pl->prem, "");
  LLVMValueRef go = LLVMBuildLoad2(G->B, G->i1, pl->pmore, "");
  LLVMValueRef big = LLVMBuildICmp(G->B, LLVMIntUGT, rem, cg_i64(G, KCG_POLL_PERIOD - 1), "");
  /* frozen: a plain value to SCEV (see cg_func.c's emit_chunk_head) */
  LLVMValueRef take = LLVMBuildFreeze(
      G->B, LLVMBuildSelect(G->B, big, cg_i64(G, KCG_POLL_PERIOD - 1), rem, ""), "");
  LLVMValueRef n = LLVMBuildSelect(G->B, go, LLVMBuildAdd(G->B, take, cg_i64(G, 1), ""),
                                   cg_i64(G, 0), "");
  LLVMBuildStore(G->B, n, pl->pcnt);
  LLVMBuildStore(G->B, LLVMBuildAnd(G->B, go, big, ""), pl->pmore);
  LLVMBuildStore(G->B, LLVMBuildSub(G->B, rem, cg_i64(G, KCG_POLL_PERIOD), ""), pl->prem);
  cg_poll_charge(G, n);
  LLVMValueRef (*tab)[MAXPARTS];
  LLVMBasicBlockRef hb = cg_edge_target(G, h, h, &tab);   /* (a back edge's target) */
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *p = h->phis[i];
    Type t = cg_phi_type(G, p);
    if (t.kind == T_UNKNOWN || G->sp->consts[p->id].kind != T_UNKNOWN) continue;
    LLVMTypeRef tys[MAXPARTS];
    int np = cg_parts(G, t, tys);
    for (int k = 0; k < np; k++) LLVMAddIncoming(tab[p->id][k], &G->ophis[p->id][k], &here, 1);
  }
  LLVMBuildBr(G->B, hb);
  LLVMPositionBuilderAtEnd(G->B, at);
}

/* Chunks for pl (loop l): the counter, the chunk head and its phis. */
static void chunks_begin(CG *G, PLoop *pl, KirLoop *l) {
  KirBlock *h = l->header;
  cg_strip_tables(G);
  G->strip_at[h->id] = l;   /* edges from outside enter the chunk head; no
                               charge at the header (cg_func.c) */
  pl->pcnt = cg_alloca(G, G->i64, "pcnt");
  pl->chead = G->chunkbb[h->id] = cg_bb(G, "pchunk");
  LLVMBasicBlockRef at = LLVMGetInsertBlock(G->B);
  cg_make_phis_at(G, h, pl->chead, G->ophis);
  LLVMPositionBuilderAtEnd(G->B, at);
  chunk_head(G, pl, h);
}

/* The end of a chunk (the header's test failed), from here: h's phis to
** the chunk head when a chunk follows, else to exit. */
static void chunk_end(CG *G, PLoop *pl, KirBlock *h, LLVMBasicBlockRef exit) {
  /* the failed test's tfor moved i on: back to the next chunk's first */
  LLVMValueRef i = LLVMBuildLoad2(G->B, G->i64, pl->pi, "");
  LLVMBuildStore(G->B, LLVMBuildSub(G->B, i, pl->step, ""), pl->pi);
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *p = h->phis[i];
    Type t = cg_phi_type(G, p);
    if (t.kind == T_UNKNOWN || G->sp->consts[p->id].kind != T_UNKNOWN) continue;
    LLVMValueRef pv[MAXPARTS];
    int n = cg_pack(cg_val(G, p), pv);
    for (int k = 0; k < n; k++) LLVMAddIncoming(G->ophis[p->id][k], &pv[k], &here, 1);
  }
  LLVMBuildCondBr(G->B, LLVMBuildLoad2(G->B, G->i1, pl->pmore, ""), pl->chead, exit);
}

/* A serial prange loop runs in chunks where its function polls and both
** of its header's edges run (else it stays as it was, charged at its
** header every iteration). */
static void serial_chunks(CG *G, KirInsn *call, PLoop *pl) {
  if (G->pollctr == NULL) return;
  for (int i = 0; i < G->pr->F->nloops; i++) {
    KfaLoop *fl = &G->pr->F->loops[i];
    if (fl->prange == NULL || fl->prange->call != call) continue;
    if (fl->prange->parallel) return;   /* its worker's (emit_worker) */
    KirBlock *h = fl->loop->header;
    if ((G->sp->edges[h->id] & 3) == 3 && h->succ[0] != h->succ[1]) chunks_begin(G, pl, fl->loop);
    return;
  }
}

/* ---- The serial loop ------------------------------------------------------------ */

void cg_prange_setup(CG *G, KirInsn *v) {
  CgVal a[3];
  int n = cg_operands(G, v, 1, a, 3);
  PLoop *ip = NULL;
  if (G->sp->types[v->args[0]->id].ref == B_IPAIRS) {
    /* for i, x in ipairs(a): i from 1 to #a (buffer.c ends ipairs there) */
    if (n < 1 || a[0].t.kind != T_BUF) cg_error(G, v, "internal error: ipairs of a non-array");
    ip = zalloc(G, sizeof *ip);
    ip->arr = a[0];
    if (a[0].t.ndim == 1 && a[0].t.dtype != KJIT_RECORD) {
      ip->safe = cg_alloca(G, cg_dtype_llty(G, a[0].t.dtype), "ipairsend");
      LLVMBuildStore(G->B, LLVMConstNull(cg_dtype_llty(G, a[0].t.dtype)), ip->safe);
    }
    a[1] = cg_mk(TY(T_INT), a[0].dims[0]);
    a[0] = cg_mk(TY(T_INT), cg_i64(G, 1));
    n = 2;
  }
  if (n < 2) cg_error(G, v, "internal error: kjit.prange without its limit");
  for (int i = 0; i < n; i++)
    if (a[i].t.kind != T_INT) cg_error(G, v, "internal error: kjit.prange of a non-integer");
  PLoop *pl = ip ? ip : zalloc(G, sizeof *pl);
  G->pr->loops[v->id] = pl;
  pl->init = a[0].v;
  pl->step = n > 2 ? a[2].v : cg_i64(G, 1);
  if (!(LLVMIsAConstantInt(pl->step) && LLVMConstIntGetSExtValue(pl->step) != 0))
    cg_check(G, LLVMBuildICmp(G->B, LLVMIntNE, pl->step, cg_i64(G, 0), ""), KE_FORSTEP0, v->line,
             NULL, NULL, NULL, NULL);
  pl->count = cg_int_count(G, pl->init, a[1], pl->step, &pl->skip);
  pl->pi = cg_alloca(G, G->i64, "pi");
  pl->prem = cg_alloca(G, G->i64, "prem");
  pl->pmore = cg_alloca(G, G->i1, "pmore");
  LLVMBuildStore(G->B, pl->init, pl->pi);
  LLVMBuildStore(G->B, pl->count, pl->prem);
  LLVMBuildStore(G->B, LLVMBuildNot(G->B, pl->skip, ""), pl->pmore);
  serial_chunks(G, v, pl);
  /* the call's results: the iterator, the state, the first control value */
  CgVal *r = zalloc(G, sizeof(CgVal) * 4);
  r[0] = cg_mk(G->sp->types[v->id], NULL);
  r[1] = cg_mk(TY(T_INT), cg_i64(G, 0));
  r[2] = cg_mk(TY(T_INT), pl->init);
  r[3] = cg_mk(TY(T_NIL), NULL);
  G->results[v->id] = r;
  G->nresults[v->id] = 4;
  G->vals[v->id] = r[0];
}

/* Is pl's loop (header b) chunked here: not in the checked copy of a
** serial loop versioned whole (cg_version.c's nests: that copy polls
** every iteration, its state the slots as cg_prange_setup left them). */
static int chunked(CG *G, PLoop *pl, const KirBlock *b) {
  return pl->chead && !(G->nestloop && G->nestloop == b->loop);
}

void cg_prange_tfor(CG *G, KirInsn *v) {
  PLoop *pl = G->pr->loops[v->args[0]->id];
  if (pl == NULL) cg_error(G, v, "internal error: a kjit.prange loop without its call");
  if (chunked(G, pl, v->block)) {   /* chunked: the chunk's count alone decides */
    LLVMValueRef i = LLVMBuildLoad2(G->B, G->i64, pl->pi, "i");
    LLVMValueRef k = LLVMBuildLoad2(G->B, G->i64, pl->pcnt, "");
    pl->more = LLVMBuildICmp(G->B, LLVMIntNE, k, cg_i64(G, 0), "");
    LLVMBuildStore(G->B, LLVMBuildSub(G->B, k, cg_i64(G, 1), ""), pl->pcnt);
    LLVMBuildStore(G->B, LLVMBuildAdd(G->B, i, pl->step, ""), pl->pi);
    G->vals[v->id] = cg_mk(TY(T_INT), i);
    return;
  }
  LLVMValueRef i = LLVMBuildLoad2(G->B, G->i64, pl->pi, "i");
  LLVMValueRef rem = LLVMBuildLoad2(G->B, G->i64, pl->prem, "");
  pl->more = LLVMBuildLoad2(G->B, G->i1, pl->pmore, "");
  LLVMBuildStore(G->B, LLVMBuildICmp(G->B, LLVMIntNE, rem, cg_i64(G, 0), ""), pl->pmore);
  LLVMBuildStore(G->B, LLVMBuildSub(G->B, rem, cg_i64(G, 1), ""), pl->prem);
  LLVMBuildStore(G->B, LLVMBuildAdd(G->B, i, pl->step, ""), pl->pi);
  G->vals[v->id] = cg_mk(TY(T_INT), i);
  if (pl->arr.v) {   /* ipairs: x = a[i] (a row view, or the element) */
    CgVal o = pl->arr, x = o;
    LLVMValueRef off = LLVMBuildSub(G->B, i, cg_i64(G, 1), "");
    LLVMTypeRef ety = cg_dtype_llty(G, o.t.dtype);
    for (int d = 1; d < o.t.ndim; d++) off = LLVMBuildMul(G->B, off, o.dims[d], "");
    if (o.t.dtype == KJIT_RECORD)   /* records: bytes; x is a record view, read by its fields only */
      off = LLVMBuildMul(G->B, off, cg_i64(G, krec_byid(o.t.ref)->size), "");
    LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, ety, o.v, &off, 1, "");
    if (o.t.ndim > 1 || o.t.dtype == KJIT_RECORD) {
      x.t.ndim--;
      x.v = p;
      for (int d = 0; d + 1 < o.t.ndim; d++) x.dims[d] = o.dims[d + 1];
      x.dims[o.t.ndim - 1] = NULL;
    } else {   /* the test that ends the loop reads nothing past the end */
      p = LLVMBuildSelect(G->B, pl->more, p, pl->safe, "");
      x = cg_load_elem(G, o.t.dtype, p);
    }
    CgVal *r = zalloc(G, sizeof(CgVal) * 2);
    r[0] = G->vals[v->id];
    r[1] = x;
    G->results[v->id] = r;
    G->nresults[v->id] = 2;
  }
}

int cg_prange_br(CG *G, KirBlock *b, KirInsn *v) {
  KirInsn *c = v->args[0];
  /* the header's `br (eq %i, nil)` after its tfor call %i */
  if (c->op != KIR_EQ || c->args[0]->op != KIR_CALL || !(c->args[0]->flags & KIR_F_TFOR) ||
      c->args[1]->op != KIR_NIL || c->args[0]->block != b)
    return 0;
  PLoop *pl = G->pr->loops[c->args[0]->args[0]->id];
  if (pl == NULL || pl->more == NULL) return 0;
  if (chunked(G, pl, b)) {   /* the body, or the end of this chunk (polls) */
    LLVMBasicBlockRef body = cg_add_edge(G, b, b->succ[1]), end = cg_bb(G, "pchunkend");
    LLVMBuildCondBr(G->B, pl->more, body, end);
    LLVMPositionBuilderAtEnd(G->B, end);
    chunk_end(G, pl, b, pl->done ? pl->done : cg_add_edge(G, b, b->succ[0]));
  } else if (pl->done) {   /* in its worker: the body, or the end of the chunk */
    cg_add_edge(G, b, b->succ[1]);
    LLVMBuildCondBr(G->B, pl->more, G->bbs[b->succ[1]->id], pl->done);
  } else {
    cg_branch(G, b, LLVMBuildNot(G->B, pl->more, ""));   /* succ[0]: the exit */
  }
  return 1;
}

/* ---- Reductions ------------------------------------------------------------------- */

static KfaRedVar *red_of(KfaPrange *FP, const KirInsn *phi) {
  for (int i = 0; i < FP->nreds; i++) if (FP->reds[i].phi == phi) return &FP->reds[i];
  return NULL;
}

/* What a chunk other than the first starts reduction r (of type t) from. */
static CgVal red_identity(CG *G, const KfaRedVar *r, Type t) {
  int isint = t.kind == T_INT || (t.kind == T_NUMBER && r->number != 2);
  if (isint) {
    int64_t k = r->id == KFA_ID_ONE ? 1 : r->id == KFA_ID_MAXVAL ? INT64_MAX
              : r->id == KFA_ID_MINVAL ? INT64_MIN : 0;
    return cg_convert(G, cg_mk(TY(T_INT), cg_i64(G, k)), t, 0);
  }
  double f = r->id == KFA_ID_ONE ? 1.0 : r->id == KFA_ID_MAXVAL ? HUGE_VAL
           : r->id == KFA_ID_MINVAL ? -HUGE_VAL : -0.0;
  if (t.kind == T_F32) return cg_mk(t, LLVMConstReal(G->f32, f));
  return cg_convert(G, cg_mk(TY(T_F64), cg_f64(G, f)), t, 0);
}

static LLVMValueRef less(CG *G, Type t, CgVal a, CgVal b) {
  if (t.kind == T_INT) return LLVMBuildICmp(G->B, LLVMIntSLT, a.v, b.v, "");
  if (t.kind != T_NUMBER) return LLVMBuildFCmp(G->B, LLVMRealOLT, a.v, b.v, "");
  /* numbers: integers exactly, else as doubles (exact below 2^53) */
  LLVMValueRef ii = LLVMBuildICmp(G->B, LLVMIntSLT, a.v, b.v, "");
  LLVMValueRef ff = LLVMBuildFCmp(G->B, LLVMRealOLT, cg_tofloat(G, a, T_F64), cg_tofloat(G, b, T_F64), "");
  return LLVMBuildSelect(G->B, LLVMBuildOr(G->B, a.isf, b.isf, ""), ff, ii, "");
}

static CgVal pick(CG *G, LLVMValueRef c, CgVal x, CgVal y) {
  LLVMValueRef px[MAXPARTS], py[MAXPARTS];
  int n = cg_pack(x, px);
  cg_pack(y, py);
  for (int k = 0; k < n; k++) px[k] = LLVMBuildSelect(G->B, c, px[k], py[k], "");
  return cg_unpack(x.t, px);
}

/* acc op x: the partial result x of a later chunk combined into acc, the
** result of the earlier ones, with the tie and NaN rules of the statement
** (math.min(s, e) keeps s unless e < s; math.min(e, s) keeps s only if
** s < e). */
static CgVal red_combine(CG *G, KfaRed red, Type t, CgVal acc, CgVal x) {
  switch (red) {
  case KFA_RED_ADD: case KFA_RED_MUL: {
    int add = red == KFA_RED_ADD;
    if (t.kind == T_INT)
      return cg_mk(t, add ? LLVMBuildAdd(G->B, acc.v, x.v, "") : LLVMBuildMul(G->B, acc.v, x.v, ""));
    if (t.kind != T_NUMBER)
      return cg_mk(t, add ? LLVMBuildFAdd(G->B, acc.v, x.v, "") : LLVMBuildFMul(G->B, acc.v, x.v, ""));
    int fk = t.fsub == T_F32 ? T_F32 : T_F64;
    LLVMValueRef fa = cg_tofloat(G, acc, fk), fx = cg_tofloat(G, x, fk);
    CgVal ri = cg_convert(G, cg_mk(TY(T_INT), add ? LLVMBuildAdd(G->B, acc.v, x.v, "")
                                                  : LLVMBuildMul(G->B, acc.v, x.v, "")), t, 0);
    CgVal rf = cg_convert(G, cg_mk(TY(fk), add ? LLVMBuildFAdd(G->B, fa, fx, "")
                                               : LLVMBuildFMul(G->B, fa, fx, "")), t, 0);
    return pick(G, LLVMBuildOr(G->B, acc.isf, x.isf, ""), rf, ri);
  }
  case KFA_RED_MIN: return pick(G, less(G, t, x, acc), x, acc);
  case KFA_RED_MAX: return pick(G, less(G, t, acc, x), x, acc);
  case KFA_RED_MIN_EF: return pick(G, less(G, t, acc, x), acc, x);
  default: return pick(G, less(G, t, x, acc), acc, x);   /* KFA_RED_MAX_EF */
  }
}

/* ---- The worker -------------------------------------------------------------------- */

/* Values defined outside loop l that its blocks read (run-time values:
** constants are emitted where they are used). */
static int outside_values(CG *G, KirLoop *l, KirInsn ***out) {
  KtySpec *sp = G->sp;
  int n = 0, cap = 16;
  KirInsn **vs = zalloc(G, sizeof *vs * (size_t)cap);
  uint8_t *seen = zalloc(G, (size_t)sp->ir->ninsns);
  for (int bi = 0; bi < l->nblocks; bi++) {
    KirBlock *b = l->blocks[bi];
    if (!sp->live[b->id]) continue;
    int total = b->nphis + b->ninsns + (b->term ? 1 : 0);
    for (int j = 0; j < total; j++) {
      KirInsn *v = j < b->nphis ? b->phis[j] : j < b->nphis + b->ninsns ? b->insns[j - b->nphis] : b->term;
      for (int k = 0; k < v->nargs; k++) {
        KirInsn *a = v->args[k];
        if (seen[a->id] || kir_inloop(l, a->block)) continue;
        seen[a->id] = 1;
        Type t = sp->types[a->id];
        LLVMTypeRef tys[MAXPARTS];
        if (t.kind == T_UNKNOWN || cg_parts(G, t, tys) == 0) continue;
        if (sp->consts[a->id].kind != T_UNKNOWN && t.kind != T_BUF && t.kind != T_SHAPE) continue;
        if (n == cap) {
          KirInsn **nv = zalloc(G, sizeof *nv * (size_t)cap * 2);
          memcpy(nv, vs, sizeof *vs * (size_t)n);
          vs = nv;
          cap *= 2;
        }
        vs[n++] = a;
      }
    }
  }
  *out = vs;
  return n;
}

static LLVMValueRef env_ptr(CG *G, LLVMValueRef env, int k, LLVMTypeRef ty) {
  LLVMValueRef idx = cg_i64(G, k);
  LLVMValueRef p = LLVMBuildLoad2(G->B, G->i8p, LLVMBuildInBoundsGEP2(G->B, G->i8p, env, &idx, 1, ""), "");
  return LLVMBuildBitCast(G->B, p, LLVMPointerType(ty, 0), "");
}

/* The worker; checked: NULL, or the worker with every check (made first),
** which this one calls when its test at entry fails (the fast worker: the
** checks that test proves are off in its body). */
static LLVMValueRef emit_worker(CG *G, KfaLoop *fl, KirInsn **outs, int nouts, PLoop *pl,
                                LLVMValueRef checked) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirLoop *l = fl->loop;
  KfaPrange *FP = fl->prange;
  KirBlock *h = l->header;
  /* the enclosing function's state, restored at the end */
  LLVMValueRef fn0 = G->fn, err0 = G->err, pollctr0 = G->pollctr, depth0 = G->depth;
  LLVMBasicBlockRef allocas0 = G->allocas, at0 = LLVMGetInsertBlock(G->B);
  LLVMValueRef (*spill0)[3 + KJIT_MAXDIMS] = G->spill;   /* (the enclosing
      function's slots: a value from outside comes through the environment) */
  KirBlock *curblock0 = G->curblock;
  G->spill = NULL;
  size_t nv = sizeof(CgVal) * (size_t)f->ninsns, np = sizeof *G->phis * (size_t)f->ninsns;
  size_t nb = sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks;
  CgVal *vals0 = zalloc(G, nv);
  void *phis0 = zalloc(G, np);
  LLVMBasicBlockRef *bbs0 = zalloc(G, nb);
  memcpy(vals0, G->vals, nv);
  memcpy(phis0, G->phis, np);
  memcpy(bbs0, G->bbs, nb);
  PLoop pl0 = *pl;

  LLVMTypeRef envp = LLVMPointerType(G->i8p, 0);
  LLVMTypeRef ps[5] = { envp, G->i64, G->i64, G->i64, G->errp };
  LLVMTypeRef fty = LLVMFunctionType(G->i32, ps, 5, 0);
  char name[64];
  /* named by a per-compile count: the same source gives the same module
  ** (and disk-cache key) in every process */
  snprintf(name, sizeof name, "kcg_spec%d_prange%d", sp->index, G->pr->nworkers++);
  LLVMValueRef fn = LLVMAddFunction(G->M, name, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned nattr = LLVMGetAttributeCountAtIndex(fn0, LLVMAttributeFunctionIndex);
  if (nattr > 0) {   /* the same float semantics as the enclosing function */
    LLVMAttributeRef *attrs = zalloc(G, nattr * sizeof *attrs);
    LLVMGetAttributesAtIndex(fn0, LLVMAttributeFunctionIndex, attrs);
    for (unsigned i = 0; i < nattr; i++) LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, attrs[i]);
  }
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(fn, 5, LLVMCreateEnumAttribute(G->C, noalias, 0));
  G->fn = fn;
  int prbody0 = G->prbody;
  G->prbody = 1;
  G->allocas = cg_bb(G, "entry");
  LLVMBasicBlockRef start = cg_bb(G, "start");
  LLVMPositionBuilderAtEnd(G->B, start);
  LLVMValueRef perr = LLVMGetParam(fn, 4);
  G->err = cg_alloca(G, G->errty, "lerr");
  /* a countdown of its own (the enclosing function's is a parameter of
  ** that function), and a fresh call depth for pure callees */
  if (pollctr0) {
    G->pollctr = cg_alloca(G, G->i64, "pollctr");
    LLVMBuildStore(G->B, cg_i64(G, KCG_POLL_PERIOD), G->pollctr);
    /* polls fill the runtime's record: a pointer to the frame's own
    ** passed to kjit_rt_poll kept every field of it in memory (two loads
    ** an iteration in kjit.vectorize's loop: 1.6x the time without polls) */
    G->pollerr = perr;
  }
  if (depth0) G->depth = cg_i32(G, 0);
  LLVMBuildStore(G->B, LLVMConstNull(G->errty), G->err);
  LLVMBuildStore(G->B, LLVMBuildLoad2(G->B, G->i64, LLVMBuildStructGEP2(G->B, G->errty, perr, 7, ""), ""),
                 LLVMBuildStructGEP2(G->B, G->errty, G->err, 7, ""));
  LLVMValueRef env = LLVMGetParam(fn, 0), chunk = LLVMGetParam(fn, 3);
  LLVMValueRef kb = LLVMGetParam(fn, 1), ke = LLVMGetParam(fn, 2);
  int k = 0;
  LLVMValueRef first = LLVMBuildLoad2(G->B, G->i64, env_ptr(G, env, k++, G->i64), "first");
  LLVMValueRef step = LLVMBuildLoad2(G->B, G->i64, env_ptr(G, env, k++, G->i64), "step");
  /* a constant step stays a constant (unit stride: contiguous accesses) */
  if (LLVMIsAConstantInt(pl0.step)) step = pl0.step;
  for (int i = 0; i < nouts; i++) {
    Type t = sp->types[outs[i]->id];
    LLVMTypeRef tys[MAXPARTS];
    LLVMValueRef pv[MAXPARTS];
    int n = cg_parts(G, t, tys);
    for (int j = 0; j < n; j++)
      pv[j] = LLVMBuildLoad2(G->B, tys[j], env_ptr(G, env, k++, tys[j]), outs[i]->name ? outs[i]->name : "");
    CgVal x = cg_unpack(t, pv);
    x.k = G->vals[outs[i]->id].k;
    G->vals[outs[i]->id] = x;
  }
  /* iterations kbegin..kend-1 (a chunk is never empty): i = first + k*step,
  ** wrapping arithmetic being exact for every i of the loop */
  pl->step = step;
  pl->pi = cg_alloca(G, G->i64, "pi");
  pl->prem = cg_alloca(G, G->i64, "prem");
  pl->pmore = cg_alloca(G, G->i1, "pmore");
  pl->done = cg_bb(G, "pdone");
  LLVMBuildStore(G->B, LLVMBuildAdd(G->B, first, LLVMBuildMul(G->B, kb, step, ""), ""), pl->pi);
  LLVMBuildStore(G->B, LLVMBuildSub(G->B, LLVMBuildSub(G->B, ke, kb, ""), cg_i64(G, 1), ""), pl->prem);
  LLVMBuildStore(G->B, cg_i1(G, 1), pl->pmore);
  for (int bi = 0; bi < l->nblocks; bi++) {
    KirBlock *b = l->blocks[bi];
    if (!sp->live[b->id]) continue;
    char nm[16];
    snprintf(nm, sizeof nm, "b%d", b->id);
    G->bbs[b->id] = cg_bb(G, nm);
  }
  for (int bi = 0; bi < l->nblocks; bi++)
    if (sp->live[l->blocks[bi]->id]) cg_make_phis(G, l->blocks[bi]);
  /* polls: the body's strip-mined loops (planned in the enclosing
  ** function, set up here), and the loop's own chunks */
  KirLoop *hstrip = NULL;
  LLVMBasicBlockRef hchunk = NULL;
  if (G->pollctr) {
    cg_strip_tables(G);
    hstrip = G->strip_at[h->id];
    hchunk = G->chunkbb[h->id];
    for (int bi = 1; bi < l->nblocks; bi++) {
      KirBlock *b = l->blocks[bi];
      if (!sp->live[b->id] || G->strip_at[b->id] == NULL) continue;
      cg_strip_begin(G, G->strip_at[b->id]);
      cg_make_phis_at(G, b, G->chunkbb[b->id], G->ophis);
      if (G->fit_at && G->fit_at[b->id]) cg_fit_begin(G, G->fit_at[b->id]);
    }
    for (int bi = 1; bi < l->nblocks && G->free_at; bi++)   /* (cg_pollfree.c) */
      if (sp->live[l->blocks[bi]->id] && G->free_at[l->blocks[bi]->id])
        cg_pollfree_begin(G, l->blocks[bi]->loop);
    chunks_begin(G, pl, l);
  }
  LLVMPositionBuilderAtEnd(G->B, start);   /* make_phis moved it */
  /* bounds checks hoisted (cg_version.c): one test for this call's chunk
  ** of i and the inner loops' ranges; when it fails, the checked worker
  ** runs the chunk (its result and error are this call's) */
  uint8_t *nestoff0 = G->nestoff;
  LLVMBasicBlockRef tocheck = NULL;
  if (checked) {
    LLVMTypeRef i128 = LLVMInt128TypeInContext(G->C);
    LLVMValueRef i0 = LLVMBuildAdd(G->B, first, LLVMBuildMul(G->B, kb, step, ""), "");
    LLVMValueRef kl = LLVMBuildSub(G->B, ke, cg_i64(G, 1), "");
    LLVMValueRef il = LLVMBuildAdd(G->B, first, LLVMBuildMul(G->B, kl, step, ""), "");
    LLVMValueRef up = LLVMBuildICmp(G->B, LLVMIntSGT, step, cg_i64(G, 0), "");
    LLVMValueRef lo = LLVMBuildSExt(G->B, LLVMBuildSelect(G->B, up, i0, il, ""), i128, "");
    LLVMValueRef hi = LLVMBuildSExt(G->B, LLVMBuildSelect(G->B, up, il, i0, ""), i128, "");
    uint8_t *off;
    LLVMValueRef ok = cg_version_worker_test(G, l, lo, hi, &off);
    if (ok) {
      LLVMBasicBlockRef fast = cg_bb(G, "pfast");
      tocheck = cg_bb(G, "pchecked");
      LLVMBuildCondBr(G->B, ok, fast, tocheck);
      LLVMPositionBuilderAtEnd(G->B, tocheck);
      LLVMValueRef av[5] = { env, kb, ke, chunk, perr };
      LLVMValueRef r = LLVMBuildCall2(G->B, fty, checked, av, 5, "");
      LLVMSetTailCall(r, 1);
      LLVMBuildRet(G->B, r);
      LLVMPositionBuilderAtEnd(G->B, fast);
      G->nestoff = off;
    }
  }
  /* the header's phis enter from here: the reductions from the variable's
  ** value (chunk 0) or their identity */
  LLVMValueRef is0 = LLVMBuildICmp(G->B, LLVMIntEQ, chunk, cg_i64(G, 0), "");
  for (int j = 0; j < h->nphis; j++) {
    KirInsn *p = h->phis[j];
    Type t = sp->types[p->id];
    if (t.kind == T_UNKNOWN || sp->consts[p->id].kind != T_UNKNOWN) continue;
    LLVMTypeRef tys[MAXPARTS];
    int n = cg_parts(G, t, tys);
    if (n == 0) continue;
    int pi;
    for (pi = 0; pi < h->npreds; pi++) if (!kir_inloop(l, h->preds[pi])) break;
    LLVMValueRef vs[MAXPARTS];
    KirInsn *a = pi < h->npreds ? p->args[pi] : NULL;
    if (a == NULL || sp->types[a->id].kind == T_UNKNOWN) {
      for (int q = 0; q < n; q++) vs[q] = LLVMGetUndef(tys[q]);
    } else {
      CgVal x = cg_convert(G, cg_val(G, a), t, p->line >= 0 ? p->line : a->line);
      KfaRedVar *r = red_of(FP, p);
      if (r && r->id != KFA_ID_VALUE) x = pick(G, is0, x, red_identity(G, r, t));
      cg_pack(x, vs);
    }
    LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
    LLVMValueRef (*tab)[MAXPARTS] = pl->chead ? G->ophis : G->phis;
    for (int q = 0; q < n; q++) LLVMAddIncoming(tab[p->id][q], &vs[q], &here, 1);
  }
  LLVMBuildBr(G->B, pl->chead ? pl->chead : G->bbs[h->id]);
  G->pr->inworker = 1;
  for (int bi = 0; bi < l->nblocks; bi++) {
    KirBlock *b = l->blocks[bi];
    if (!sp->live[b->id]) continue;
    if (bi > 0 && G->fit_at && G->fit_at[b->id]) cg_fit_emit(G, G->fit_at[b->id]);
    if (bi > 0 && G->free_at && G->free_at[b->id]) cg_pollfree_emit(G, b->loop);
    if (bi > 0 && G->strip_at && G->strip_at[b->id]) cg_emit_chunk_head(G, G->strip_at[b->id]);
    cg_emit_block(G, b);
  }
  G->pr->inworker = 0;
  if (G->pollctr) {   /* the enclosing function's entries again */
    G->strip_at[h->id] = hstrip;
    G->chunkbb[h->id] = hchunk;
  }
  /* the end of the chunk: its partial results */
  LLVMPositionBuilderAtEnd(G->B, pl->done);
  for (int r = 0; r < FP->nreds; r++) {
    Type t = sp->types[FP->reds[r].phi->id];
    LLVMTypeRef tys[MAXPARTS];
    LLVMValueRef pv[MAXPARTS];
    int n = cg_parts(G, t, tys);
    cg_pack(cg_val(G, FP->reds[r].phi), pv);
    for (int q = 0; q < n; q++) {
      LLVMValueRef arr = env_ptr(G, env, k++, tys[q]);
      LLVMBuildStore(G->B, pv[q], LLVMBuildInBoundsGEP2(G->B, tys[q], arr, &chunk, 1, ""));
    }
  }
  LLVMBuildRet(G->B, cg_i32(G, 0));
  G->nestoff = nestoff0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    if (bb == G->allocas || bb == tocheck) continue;   /* (the checked worker filled perr) */
    LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
    if (term == NULL) {
      LLVMPositionBuilderAtEnd(G->B, bb);
      LLVMBuildUnreachable(G->B);
    } else if (LLVMGetInstructionOpcode(term) == LLVMRet && LLVMGetNumOperands(term) == 1 &&
               !(LLVMIsAConstantInt(LLVMGetOperand(term, 0)) &&
                 LLVMConstIntGetZExtValue(LLVMGetOperand(term, 0)) == 0)) {
      /* every return but success's (a constant 0) is a failure, raised
      ** here or passed on from a callee: the error goes to the runtime */
      LLVMPositionBuilderBefore(G->B, term);
      LLVMBuildStore(G->B, LLVMBuildLoad2(G->B, G->errty, G->err, ""), perr);
    }
  }
  LLVMPositionBuilderAtEnd(G->B, G->allocas);
  LLVMBuildBr(G->B, start);

  G->fn = fn0; G->err = err0; G->allocas = allocas0; G->pollctr = pollctr0; G->depth = depth0;
  G->prbody = prbody0;
  G->spill = spill0;
  G->curblock = curblock0;
  G->pollerr = NULL;
  memcpy(G->vals, vals0, nv);
  memcpy(G->phis, phis0, np);
  memcpy(G->bbs, bbs0, nb);
  *pl = pl0;
  LLVMPositionBuilderAtEnd(G->B, at0);
  return fn;
}

/* The header of a parallel loop in the enclosing function: run the
** chunks, combine the partials, leave by the exit edge. */
static void emit_parallel(CG *G, KfaLoop *fl) {
  KtySpec *sp = G->sp;
  KirLoop *l = fl->loop;
  KfaPrange *FP = fl->prange;
  KirBlock *h = l->header;
  PLoop *pl = G->pr->loops[FP->call->id];
  if (pl == NULL) cg_error(G, FP->call, "internal error: a kjit.prange loop without its call");
  if (FP->nreds > MAXRED)
    cg_error(G, FP->call, "too many reductions in one kjit.prange loop (at most %d)", MAXRED);
  LLVMPositionBuilderAtEnd(G->B, G->bbs[h->id]);
  cg_before_loop(G, l);
  KirInsn **outs;
  int nouts = outside_values(G, l, &outs);
  /* the environment: first, step, the outside values, the partials */
  int cap = 2 + nouts * MAXPARTS + FP->nreds * MAXPARTS, nenv = 0;
  LLVMValueRef *entries = zalloc(G, sizeof *entries * (size_t)cap);
  LLVMBasicBlockRef run = cg_bb(G, "prun"), join = cg_bb(G, "pjoin");
  LLVMBasicBlockRef skipfrom = LLVMGetInsertBlock(G->B);
  LLVMBuildCondBr(G->B, pl->skip, join, run);
  LLVMPositionBuilderAtEnd(G->B, run);
  LLVMValueRef af = cg_alloca(G, G->i64, "pfirst"), as = cg_alloca(G, G->i64, "pstep");
  LLVMBuildStore(G->B, pl->init, af);
  LLVMBuildStore(G->B, pl->step, as);
  entries[nenv++] = af;
  entries[nenv++] = as;
  for (int i = 0; i < nouts; i++) {
    Type t = sp->types[outs[i]->id];
    LLVMTypeRef tys[MAXPARTS];
    LLVMValueRef pv[MAXPARTS];
    int n = cg_parts(G, t, tys);
    cg_pack(cg_val(G, outs[i]), pv);
    for (int j = 0; j < n; j++) {
      LLVMValueRef slot = cg_alloca(G, tys[j], "penv");
      LLVMBuildStore(G->B, pv[j], slot);
      entries[nenv++] = slot;
    }
  }
  LLVMValueRef parts[MAXRED][MAXPARTS];
  LLVMTypeRef ptys[MAXRED][MAXPARTS];
  int nparts[MAXRED];
  for (int r = 0; r < FP->nreds; r++) {
    Type t = sp->types[FP->reds[r].phi->id];
    nparts[r] = cg_parts(G, t, ptys[r]);
    for (int q = 0; q < nparts[r]; q++) {
      parts[r][q] = cg_alloca(G, LLVMArrayType(ptys[r][q], KJIT_PRANGE_MAXCHUNKS), "partials");
      entries[nenv++] = parts[r][q];
    }
  }
  LLVMValueRef envarr = cg_alloca(G, LLVMArrayType(G->i8p, (unsigned)nenv), "penv");
  LLVMValueRef env = LLVMBuildBitCast(G->B, envarr, LLVMPointerType(G->i8p, 0), "");
  for (int q = 0; q < nenv; q++) {
    LLVMValueRef idx = cg_i64(G, q);
    LLVMBuildStore(G->B, LLVMBuildBitCast(G->B, entries[q], G->i8p, ""),
                   LLVMBuildInBoundsGEP2(G->B, G->i8p, env, &idx, 1, ""));
  }
  LLVMValueRef worker = emit_worker(G, fl, outs, nouts, pl, NULL);
  if (G->boundscheck && fl->nnestchecks) {   /* the fast worker, calling that one */
    /* not inlined there: the fast body alone is what LLVM optimizes in
    ** it; and optimized for size, as the checked copy of a versioned loop
    ** is not vectorized (cg_version.c): it runs only for the chunks whose
    ** test fails (the one holding i = 1 of a body guarded by `if i > 1`),
    ** and the compile costs about a third less */
    static const char *const attrs[] = { "noinline", "optsize" };
    for (int a = 0; a < 2; a++) {
      unsigned kind = LLVMGetEnumAttributeKindForName(attrs[a], strlen(attrs[a]));
      LLVMAddAttributeAtIndex(worker, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(G->C, kind, 0));
    }
    worker = emit_worker(G, fl, outs, nouts, pl, worker);
  }
  LLVMValueRef anch = cg_alloca(G, G->i64, "nchunks");
  LLVMTypeRef pt[5] = { G->i8p, LLVMPointerType(G->i8p, 0), G->i64, G->errp, LLVMPointerType(G->i64, 0) };
  LLVMValueRef av[5] = { LLVMBuildBitCast(G->B, worker, G->i8p, ""), env, pl->count, G->err, anch };
  LLVMValueRef st = cg_ccall(G, "kjit_rt_parallel_for", G->i32, pt, av, 5);
  LLVMBasicBlockRef fail = cg_bb(G, "pfail"), ok = cg_bb(G, "pok");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""), ok, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  cg_fail_ret(G);
  LLVMPositionBuilderAtEnd(G->B, ok);
  /* combine the partials in chunk order: p[0] op p[1] op ... */
  CgVal fin[MAXRED];
  if (FP->nreds > 0) {
    LLVMValueRef nch = LLVMBuildLoad2(G->B, G->i64, anch, "");
    CgVal acc0[MAXRED];
    for (int r = 0; r < FP->nreds; r++) {
      LLVMValueRef pv[MAXPARTS];
      for (int q = 0; q < nparts[r]; q++)
        pv[q] = LLVMBuildLoad2(G->B, ptys[r][q], LLVMBuildBitCast(G->B, parts[r][q], LLVMPointerType(ptys[r][q], 0), ""), "");
      acc0[r] = cg_unpack(sp->types[FP->reds[r].phi->id], pv);
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(G->B), body = cg_bb(G, "pcomb"), end = cg_bb(G, "pcombend");
    LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSGT, nch, cg_i64(G, 1), ""), body, end);
    LLVMPositionBuilderAtEnd(G->B, body);
    LLVMValueRef c = LLVMBuildPhi(G->B, G->i64, "c");
    LLVMValueRef accp[MAXRED][MAXPARTS];
    CgVal next[MAXRED];
    for (int r = 0; r < FP->nreds; r++)   /* the phis first */
      for (int q = 0; q < nparts[r]; q++) accp[r][q] = LLVMBuildPhi(G->B, ptys[r][q], "acc");
    for (int r = 0; r < FP->nreds; r++) {
      Type t = sp->types[FP->reds[r].phi->id];
      LLVMValueRef pv[MAXPARTS], xv[MAXPARTS];
      for (int q = 0; q < nparts[r]; q++) {
        pv[q] = accp[r][q];
        LLVMValueRef arr = LLVMBuildBitCast(G->B, parts[r][q], LLVMPointerType(ptys[r][q], 0), "");
        xv[q] = LLVMBuildLoad2(G->B, ptys[r][q], LLVMBuildInBoundsGEP2(G->B, ptys[r][q], arr, &c, 1, ""), "");
      }
      next[r] = red_combine(G, FP->reds[r].red, t, cg_unpack(t, pv), cg_unpack(t, xv));
    }
    LLVMValueRef c2 = LLVMBuildAdd(G->B, c, cg_i64(G, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(G->B);
    LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSLT, c2, nch, ""), body, end);
    LLVMValueRef one = cg_i64(G, 1);
    LLVMAddIncoming(c, &one, &pre, 1);
    LLVMAddIncoming(c, &c2, &latch, 1);
    LLVMPositionBuilderAtEnd(G->B, end);
    for (int r = 0; r < FP->nreds; r++) {
      LLVMValueRef a0[MAXPARTS], nx[MAXPARTS], fv[MAXPARTS];
      cg_pack(acc0[r], a0);
      cg_pack(next[r], nx);
      for (int q = 0; q < nparts[r]; q++) {
        LLVMAddIncoming(accp[r][q], &a0[q], &pre, 1);
        LLVMAddIncoming(accp[r][q], &nx[q], &latch, 1);
        fv[q] = LLVMBuildPhi(G->B, ptys[r][q], "red");
        LLVMAddIncoming(fv[q], &a0[q], &pre, 1);
        LLVMAddIncoming(fv[q], &nx[q], &latch, 1);
      }
      fin[r] = cg_unpack(sp->types[FP->reds[r].phi->id], fv);
    }
  }
  LLVMBasicBlockRef runend = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, join);
  /* after the loop the reductions' header phis are the combined values
  ** (or the entry values when the loop runs no iteration) */
  LLVMPositionBuilderAtEnd(G->B, join);
  for (int r = 0; r < FP->nreds; r++) {
    KirInsn *p = FP->reds[r].phi;
    LLVMValueRef ev[MAXPARTS], cv[MAXPARTS], jv[MAXPARTS];
    cg_pack(cg_val(G, p), ev);
    cg_pack(fin[r], cv);
    for (int q = 0; q < nparts[r]; q++) {
      jv[q] = LLVMBuildPhi(G->B, ptys[r][q], p->name ? p->name : "");
      LLVMAddIncoming(jv[q], &ev[q], &skipfrom, 1);
      LLVMAddIncoming(jv[q], &cv[q], &runend, 1);
    }
    CgVal x = cg_unpack(sp->types[p->id], jv);
    x.k = G->vals[p->id].k;
    G->vals[p->id] = x;
  }
  /* the header's exit edge (succ[0] of its test) */
  KirBlock *exit = h->succ[0];
  cg_add_edge(G, h, exit);
  LLVMBuildBr(G->B, G->bbs[exit->id]);
  /* the body's blocks of this function: never entered, nor emitted */
  for (int bi = 0; bi < l->nblocks; bi++) {
    KirBlock *b = l->blocks[bi];
    if (b != h && sp->live[b->id] && G->bbs[b->id]) {
      LLVMDeleteBasicBlock(G->bbs[b->id]);
      G->bbs[b->id] = NULL;
    }
  }
}

int cg_prange_owns(CG *G, const KirBlock *b) {
  return G->pr != NULL && G->pr->outl != NULL && G->pr->outl[b->id] != NULL;
}

int cg_prange_block(CG *G, KirBlock *b) {
  CgPrange *P = G->pr;
  if (P == NULL || P->inworker) return 0;
  KfaLoop *fl = P->outl[b->id];
  if (fl == NULL) return 0;
  if (b == fl->loop->header) emit_parallel(G, fl);
  return 1;
}
