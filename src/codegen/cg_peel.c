/*
** cg_peel.c: which loops the code generator peels, and why; and which
** loops LLVM should not unroll (cg_loop_hints, at the end).
**
**     local s = 0
**     for i = 1, n do s = s + x[i] end      -- x: f64[:]
**
** The typer gives s at the loop header the type "number" (T_NUMBER): an
** integer on entry, a float on every back edge. Compiled as typed, every
** iteration would test the tag, which also keeps LLVM from vectorizing.
** Instead the first iteration is emitted apart, with s the integer it is
** on entry; its back edge enters the loop proper, where s is only ever a
** float: a plain double phi. Where the loop exits, the exit phis still
** join the entry value (an integer, when the loop never runs) and the
** floats, as Lua has them.
**
** A loop is peeled when: it is innermost, entered from one block (not in
** another loop: see peelable), small
** (PEEL_MAXINSNS), a header phi is a number whose entry value is an
** integer while its back-edge values are all floats of one kind. A value
** made inside the loop and used after it goes through a stack slot (see
** used_outside).
*/
#include <string.h>
#include <llvm-c/DebugInfo.h>   /* LLVMTemporaryMDNode */
#include "codegen/cg.h"

#define PEEL_MAXINSNS 400

static int candidate_phis(CG *G, KirLoop *L, int mark) {
  KtySpec *sp = G->sp;
  KirBlock *h = L->header;
  int n = 0;
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *p = h->phis[i];
    if (sp->types[p->id].kind != T_NUMBER || sp->consts[p->id].kind != T_UNKNOWN) continue;
    int entry_int = 0, kind = 0, ok = 1;
    for (int j = 0; j < p->nargs && ok; j++) {
      Type t = sp->types[p->args[j]->id];
      if (!kir_inloop(L, h->preds[j])) { entry_int = t.kind == T_INT; continue; }
      if (t.kind != T_F64 && t.kind != T_F32) { ok = 0; break; }
      if (kind && kind != t.kind) ok = 0;
      kind = t.kind;
    }
    if (!ok || !entry_int || !kind) continue;
    if (mark) G->phity[p->id] = TY(kind);
    n++;
  }
  return n;
}

/* Is v used outside L, other than by the phis of edges leaving L? With
** two copies of L, such a use needs the copy that ran: v is kept in a
** stack slot that both copies write and the use reads (mem2reg makes the
** phis). */
static int used_outside(KirLoop *L, const KirInsn *v) {
  for (int u = 0; u < v->nusers; u++) {
    KirInsn *w = v->users[u];
    if (kir_inloop(L, w->block)) continue;
    if (w->op != KIR_PHI) return 1;
    for (int a = 0; a < w->nargs; a++)
      if (w->args[a] == v && !kir_inloop(L, w->block->preds[a])) return 1;
  }
  return 0;
}

/* The values of L used outside it (used_outside): each given a stack slot
** (make), or only whether there is one. */
static int outside_values(CG *G, KirLoop *L, int make) {
  KtySpec *sp = G->sp;
  int n = 0;
  for (int b = 0; b < L->nblocks; b++) {
    KirBlock *blk = L->blocks[b];
    for (int j = 0; j < blk->nphis + blk->ninsns; j++) {
      KirInsn *v = j < blk->nphis ? blk->phis[j] : blk->insns[j - blk->nphis];
      Type t = sp->types[v->id];
      if (t.kind == T_UNKNOWN || sp->consts[v->id].kind != T_UNKNOWN || !used_outside(L, v)) continue;
      if (!make) return 1;
      cg_make_spill(G, v, t);
      n++;
    }
  }
  return n;
}

void cg_peel_spills(CG *G, KirLoop *L) { outside_values(G, L, 1); }
int cg_peel_used_outside(CG *G, KirLoop *L) { return outside_values(G, L, 0); }

static int peelable(CG *G, KirLoop *L) {
  KtySpec *sp = G->sp;
  KirBlock *h = L->header;
  /* a kjit.prange loop keeps its own lowering (cg_prange.c), and so does
  ** every loop outlined with it */
  if (!sp->live[h->id] || L->entry == NULL || L->kind == KIR_LOOP_FORIN || cg_prange_owns(G, h))
    return 0;
  if (cg_lua_loop_uses(G, L)) return 0;   /* Lua values: slots, no peeling */
  int outside = 0, size = 0;
  for (int i = 0; i < h->npreds; i++) outside += !kir_inloop(L, h->preds[i]);
  if (outside != 1) return 0;
  /* The peeled header has no phis: it takes its entry values as the entry
  ** block left them, so that block must be emitted once. A block that
  ** leaves another loop (`while k < n do ... end` straight into `while k
  ** > 0 do ... end`, a repeat's test into a goto label) may be emitted in
  ** two copies, that loop peeled or versioned, each with its own values. */
  if (L->entry->loop != L->parent) return 0;
  for (int b = 0; b < L->nblocks; b++) {
    if (L->blocks[b]->loop != L) return 0;   /* innermost only */
    size += L->blocks[b]->ninsns + L->blocks[b]->nphis;
  }
  if (size > PEEL_MAXINSNS) return 0;
  return candidate_phis(G, L, 0) > 0;
}

void cg_peel_plan(CG *G) {
  KirFunc *f = G->sp->ir;
  if (f->irreducible) return;
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *L = f->loops[l];
    if (!peelable(G, L)) continue;
    if (G->peel_at == NULL) {
      G->peel_at = cg_zalloc(G, sizeof(KirLoop *) * (size_t)f->nblocks);
      G->pbbs = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
      G->pphis = cg_zalloc(G, sizeof *G->pphis * (size_t)f->ninsns);
    }
    candidate_phis(G, L, 1);
    cg_peel_spills(G, L);
    G->peel_at[L->header->id] = L;
    for (int b = 0; b < L->nblocks; b++)
      if (G->sp->live[L->blocks[b]->id])
        G->pbbs[L->blocks[b]->id] = cg_bb(G, "peel");
  }
}

/* ---- Runtime unrolling --------------------------------------------------------
** LLVM unrolls a loop of unknown trip count (a remainder loop first)
** while the copies fit the core's loop buffer; on a body this big
** the loop's own compare and branch are a small part of an iteration, and
** where the trip count is small (nbody's `for j = i + 1, nb`, 0..4
** iterations) the remainder loop and the dispatch around it cost more than
** unrolling saves: nbody ran 20% slower than with a plain loop. */
#define UNROLL_MAXINSNS 32

void cg_loop_hints(CG *G, KirLoop *L, LLVMValueRef latch_br) {
  if (L == NULL || latch_br == NULL || G->S->kernel) return;
  int n = 0;
  for (int b = 0; b < L->nblocks; b++) {
    KirBlock *blk = L->blocks[b];
    if (!G->sp->live[blk->id]) continue;
    for (int i = 0; i < blk->ninsns; i++) n += !KIR_ISCONST(blk->insns[i]->op);
  }
  if (n <= UNROLL_MAXINSNS) return;
  LLVMMetadataRef self = LLVMTemporaryMDNode(G->C, NULL, 0);
  static const char key[] = "llvm.loop.unroll.runtime.disable";
  LLVMMetadataRef hint = LLVMMDStringInContext2(G->C, key, sizeof key - 1);
  LLVMMetadataRef hintn = LLVMMDNodeInContext2(G->C, &hint, 1);
  LLVMMetadataRef ops[2] = { self, hintn };
  LLVMMetadataRef id = LLVMMDNodeInContext2(G->C, ops, 2);
  LLVMMetadataReplaceAllUsesWith(self, id);
  LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(G->C, "llvm.loop", 9), LLVMMetadataAsValue(G->C, id));
}
