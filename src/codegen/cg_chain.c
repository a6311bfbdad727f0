/*
** cg_chain.c: arithmetic on Lua values (numbers read from tables) checked
** once per chain of operations instead of once per operation.
**
** cg_lua.c's cg_lua_arith gives each `+ - * /` on a Lua value its own
** number test, a cold call of kjit_lv_sarith (ten arguments) and a join:
** nbody's `advance` has 28 of them, and LLVM's machine passes, linear in
** code volume, were most of its compile. Here the operations that follow
** one another in a block (a chain: `bivx - dx * bm` and its neighbours)
** are emitted together at the last one:
**   - one test of every Lua value the chain reads (its leaves);
**   - the chain computed natively, straight-line;
**   - where the test fails, one cold call (luavalue.c kjit_lv_chain) that
**     redoes the whole chain operation by operation through Lua's own
**     arithmetic (metamethods, string coercion, errors with each
**     operation's line and operands' descriptions);
**   - a join with the results of both.
** Two native forms:
**   - float (the chain's values meet floats: a float operand, a `/` or a
**     `^` among the arithmetic connected to them, and no counter-like
**     `x + 1` or bitwise operation): the test asks every leaf to be a
**     float, and each operation is one float instruction; an integer leaf
**     (a field that held 0 before it held 0.5) takes the call, which
**     computes what Lua computes;
**   - flat (anything else): the test asks for numbers, and each operation
**     computes both the integer and the float result and picks one by
**     the operands' kinds (cg_lua.c cg_lua_flat_arith, as before).
**
** What may stand between two operations of a chain: only instructions that
** cannot raise, run Lua code or read a Lua value (constants, arithmetic on
** native numbers: `mag * mag * mag`). So running the chain's operations
** (and their metamethods) at the last one's place changes no order a
** program could see. The operations' Lua values stay anchored as in
** cg_lua_arith: each operation has its own slot (cg_lua.c's frame), where
** the helper leaves a result that is not a number; the leaves are in
** their own slots or registers.
**
** KJIT_NO_CHAINS=1 emits every operation alone (as before: measuring).
*/
#include <stdlib.h>
#include <string.h>
#include "codegen/cg.h"
#include "runtime/luavalue.h"

typedef struct CgChain {
  const KirInsn **ops;   /* in block order; emitted at the last */
  int nops;
  int floaty;            /* the float form (see the head) */
} CgChain;

/* ---- Planning --------------------------------------------------------------------- */

static int isnative(Type t) {
  return t.kind == T_INT || t.kind == T_F64 || (t.kind == T_NUMBER && (t.fsub == 0 || t.fsub == T_F64));
}

static int is_lua(const KtySpec *sp, const KirInsn *a) { return sp->types[a->id].kind == T_LUA; }

/* Can v be an operation of a chain? A binary + - * / giving a Lua value,
** one operand at least a Lua value, the other a Lua value or a native
** number; not a call's Lua results (their slots are cleared after their
** last use: cg_lua.c plan_kills, which would run before the chain). */
static int chainable(CG *G, const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_ADD && v->op != KIR_SUB && v->op != KIR_MUL && v->op != KIR_DIV) return 0;
  if (!is_lua(sp, v) || sp->consts[v->id].kind != T_UNKNOWN || sp->raises[v->id].msg) return 0;
  if (G->fastmath || G->lslot[v->id] < 0 || v->nargs != 2) return 0;
  if ((sp->liveref && sp->liveref[v->id]) || (sp->upvref && sp->upvref[v->id])) return 0;
  int lua = 0;
  for (int i = 0; i < 2; i++) {
    const KirInsn *a = v->args[i];
    if (is_lua(sp, a)) {
      if (a->op == KIR_CALL || a->op == KIR_RESULT || a->op == KIR_VARARG) return 0;
      lua = 1;
    }
    else if (!isnative(sp->types[a->id])) return 0;
  }
  return lua;
}

/* May v stand between two operations of a chain (the head says why)? */
static int quiet(const KtySpec *sp, const KirInsn *v) {
  if (sp->raises[v->id].msg) return 0;
  switch (v->op) {
  case KIR_NIL: case KIR_TRUE: case KIR_FALSE: case KIR_INT: case KIR_FLT: case KIR_STR:
    return 1;
  case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_POW: case KIR_UNM:
    if (!isnative(sp->types[v->id]) && sp->types[v->id].kind != T_F32) return 0;
    for (int i = 0; i < v->nargs; i++) {
      Type t = sp->types[v->args[i]->id];
      if (!isnative(t) && t.kind != T_F32) return 0;
    }
    return 1;
  default: return 0;
  }
}

/* The float guess: union-find over the function's Lua values, joined by
** the arithmetic and phis that mix them; a set is floaty where a float
** meets it and no counter-like or bitwise operation does. */
enum { EV_FLOAT = 1, EV_INT = 2 };

static int root(int *up, int x) {
  while (up[x] != x) x = up[x] = up[up[x]];
  return x;
}

static void join(int *up, uint8_t *ev, int a, int b) {
  a = root(up, a);
  b = root(up, b);
  if (a == b) return;
  up[b] = a;
  ev[a] |= ev[b];
}

static void evidence(const KtySpec *sp, const KirInsn *v, int *up, uint8_t *ev) {
  if (!is_lua(sp, v)) return;
  if (v->op == KIR_PHI) {
    for (int i = 0; i < v->nargs; i++) if (is_lua(sp, v->args[i])) join(up, ev, v->id, v->args[i]->id);
    return;
  }
  if (!KIR_ISARITH(v->op)) return;
  /* a / or ^ gives a float whatever it is given: its result only */
  if (v->op == KIR_DIV || v->op == KIR_POW) { ev[root(up, v->id)] |= EV_FLOAT; return; }
  int mix = v->op == KIR_ADD || v->op == KIR_SUB || v->op == KIR_MUL || v->op == KIR_UNM;
  for (int i = 0; i < v->nargs; i++) {
    const KirInsn *a = v->args[i];
    Type t = sp->types[a->id];
    if (is_lua(sp, a)) {
      if (mix) join(up, ev, v->id, a->id);
    } else if (t.kind == T_F64 || t.kind == T_F32) {
      ev[root(up, v->id)] |= EV_FLOAT;
    } else if (t.kind == T_INT && sp->consts[a->id].kind != T_UNKNOWN &&
               (v->op == KIR_ADD || v->op == KIR_SUB)) {
      ev[root(up, v->id)] |= EV_INT;   /* n + 1: a counter */
    }
  }
  if (!mix && v->op != KIR_MOD) ev[root(up, v->id)] |= EV_INT;   /* // and bitwise */
}

void cg_chain_plan(CG *G, KtySpec *sp) {
  G->chainof = NULL;
  G->chains = NULL;
  if (G->lslot == NULL || getenv("KJIT_NO_CHAINS")) return;
  KirFunc *f = sp->ir;
  int n = f->ninsns;
  int *up = cg_zalloc(G, sizeof(int) * (size_t)n);
  uint8_t *ev = cg_zalloc(G, (size_t)n);
  for (int i = 0; i < n; i++) up[i] = i;
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->nphis; i++) evidence(sp, blk->phis[i], up, ev);
    for (int i = 0; i < blk->ninsns; i++) evidence(sp, blk->insns[i], up, ev);
  }
  CgChain *chains = cg_zalloc(G, sizeof(CgChain) * (size_t)n);
  int *chainof = cg_zalloc(G, sizeof(int) * (size_t)n);
  const KirInsn **run = cg_zalloc(G, sizeof(KirInsn *) * (size_t)n);
  int nchains = 0;
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    int nrun = 0;
    for (int i = 0; i <= blk->ninsns; i++) {
      const KirInsn *v = i < blk->ninsns ? blk->insns[i] : NULL;
      if (v && chainable(G, sp, v)) { run[nrun++] = v; continue; }
      if (v && quiet(sp, v)) continue;
      if (nrun == 0) continue;
      /* the run ends: a chain of all its operations, floaty where all are */
      int floaty = 1;
      for (int k = 0; k < nrun; k++) floaty &= ev[root(up, run[k]->id)] == EV_FLOAT;
      if (nrun >= 2 || floaty) {
        CgChain *c = &chains[nchains++];
        c->ops = cg_zalloc(G, sizeof(KirInsn *) * (size_t)nrun);
        memcpy(c->ops, run, sizeof(KirInsn *) * (size_t)nrun);
        c->nops = nrun;
        c->floaty = floaty;
        for (int k = 0; k < nrun; k++) chainof[run[k]->id] = nchains;
      }
      nrun = 0;
    }
  }
  if (nchains == 0) return;
  G->chainof = chainof;
  G->chains = chains;
}

/* ---- Emission ------------------------------------------------------------------------ */

static int position(const CgChain *c, const KirInsn *a) {
  for (int k = 0; k < c->nops; k++) if (c->ops[k] == a) return k;
  return -1;
}

/* A native operand's value as a double (Lua's int -> float conversion). */
static LLVMValueRef as_double(CG *G, CgVal x) {
  switch (x.t.kind) {
  case T_INT: return LLVMBuildSIToFP(G->B, x.v, G->f64, "");
  case T_F64: return x.v;
  default:   /* T_NUMBER: its float or its integer */
    return LLVMBuildSelect(G->B, x.isf, LLVMBuildBitCast(G->B, x.v, G->f64, ""),
                           LLVMBuildSIToFP(G->B, x.v, G->f64, ""), "");
  }
}

static LLVMValueRef float_op(CG *G, int op, LLVMValueRef a, LLVMValueRef b) {
  switch (op) {
  case KIR_ADD: return LLVMBuildFAdd(G->B, a, b, "");
  case KIR_SUB: return LLVMBuildFSub(G->B, a, b, "");
  case KIR_MUL: return LLVMBuildFMul(G->B, a, b, "");
  default: return LLVMBuildFDiv(G->B, a, b, "");
  }
}

/* The chain's operations as kjit_lv_chain reads them (luavalue.h
** KlvChainOp), one constant array. */
static LLVMValueRef template(CG *G, const CgChain *c, int (*ref)[2]) {
  LLVMTypeRef af[5] = { G->i32, G->i32, G->i8p, G->i8p, G->i8p };
  LLVMTypeRef aty = LLVMStructTypeInContext(G->C, af, 5, 0);
  LLVMTypeRef of[4] = { aty, G->i32, G->i32, G->i32 };
  LLVMTypeRef oty = LLVMStructTypeInContext(G->C, of, 4, 0);
  LLVMValueRef items[c->nops];
  for (int k = 0; k < c->nops; k++) {
    const KirInsn *v = c->ops[k];
    char ia[128], ib[128];
    cg_varinfo(G, v, 0, ia, sizeof ia);
    cg_varinfo(G, v, 1, ib, sizeof ib);
    LLVMValueRef ai[5] = { cg_i32(G, cg_lua_opcode(v->op)), cg_i32(G, v->line), G->chunkname,
                           cg_lua_text(G, ia), cg_lua_text(G, ib) };
    LLVMValueRef oi[4] = { LLVMConstStructInContext(G->C, ai, 5, 0), cg_i32(G, ref[k][0]),
                           cg_i32(G, ref[k][1]), cg_i32(G, G->lslot[v->id]) };
    items[k] = LLVMConstStructInContext(G->C, oi, 4, 0);
  }
  LLVMValueRef init = LLVMConstArray(oty, items, (unsigned)c->nops);
  LLVMValueRef g = LLVMAddGlobal(G->M, LLVMTypeOf(init), "kcg.chain");
  LLVMSetInitializer(g, init);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetGlobalConstant(g, 1);
  return LLVMBuildPointerCast(G->B, g, G->i8p, "");
}

static void emit_chain(CG *G, const CgChain *c) {
  int n = c->nops, nleaves = 0;
  int ref[n][2];
  const KirInsn *leafv[2 * n];
  CgVal leaf[2 * n];
  for (int k = 0; k < n; k++)
    for (int i = 0; i < 2; i++) {
      const KirInsn *a = c->ops[k]->args[i];
      int j = position(c, a);
      if (j >= 0 && j < k) { ref[k][i] = -1 - j; continue; }
      int l;
      for (l = 0; l < nleaves && leafv[l] != a; l++) {}
      if (l == nleaves) {
        leafv[nleaves] = a;
        leaf[nleaves++] = cg_val(G, a);
      }
      ref[k][i] = l;
    }
  /* a leaf known not to be a number (a table in its slot): each
  ** operation alone, as cg_lua_arith does it */
  for (int l = 0; l < nleaves; l++)
    if (leaf[l].t.kind == T_LUA ? !cg_lua_numcapable(leaf[l]) : !isnative(leaf[l].t)) {
      for (int k = 0; k < n; k++) G->vals[c->ops[k]->id] = cg_lua_arith(G, c->ops[k]);
      return;
    }
  /* the test of the leaves, and the native chain before it (straight-line
  ** code: on values that fail the test it is unused) */
  LLVMValueRef ok = cg_i1(G, 1);
  for (int l = 0; l < nleaves; l++) {
    if (leaf[l].t.kind != T_LUA) continue;
    LLVMValueRef t = c->floaty ? LLVMBuildICmp(G->B, LLVMIntEQ, leaf[l].flag, LLVMConstInt(G->i8, KLV_FLT, 0), "")
                               : LLVMBuildICmp(G->B, LLVMIntNE, leaf[l].flag, LLVMConstInt(G->i8, 0, 0), "");
    ok = LLVMBuildAnd(G->B, ok, t, "");
  }
  LLVMValueRef ftag[n], fbits[n], fval[n];
  for (int k = 0; k < n; k++) {
    const KirInsn *v = c->ops[k];
    if (c->floaty) {
      LLVMValueRef d[2];
      for (int i = 0; i < 2; i++) {
        int r = ref[k][i];
        if (r < 0) d[i] = fval[-1 - r];
        else if (leaf[r].t.kind == T_LUA) d[i] = LLVMBuildBitCast(G->B, leaf[r].dims[0], G->f64, "");
        else d[i] = as_double(G, leaf[r]);
      }
      fval[k] = float_op(G, v->op, d[0], d[1]);
      ftag[k] = LLVMConstInt(G->i8, KLV_FLT, 0);
      fbits[k] = LLVMBuildBitCast(G->B, fval[k], G->i64, "");
      continue;
    }
    CgVal a[2];
    for (int i = 0; i < 2; i++) {
      int r = ref[k][i];
      CgVal x = r < 0 ? cg_lua_mk(G, cg_lua_slot(G, c->ops[-1 - r]), ftag[-1 - r], fbits[-1 - r]) : leaf[r];
      a[i] = cg_lua_asnum(G, x);
    }
    if (!cg_lua_flat_arith(G, v, a, &ftag[k], &fbits[k]))
      cg_error(G, v, "internal error: a chain's operation without its flat form");
  }
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), slow = cg_bb(G, "chslow"), done = cg_bb(G, "chdone");
  cg_cold_false(G, LLVMBuildCondBr(G->B, ok, done, slow));
  /* the cold path: the leaves as (tag, bits, slot), one call */
  LLVMPositionBuilderAtEnd(G->B, slow);
  LLVMValueRef leaves = cg_alloca(G, LLVMArrayType(G->i64, (unsigned)(3 * nleaves)), "chleaves");
  LLVMValueRef outs = cg_alloca(G, LLVMArrayType(G->i64, (unsigned)(2 * n)), "chouts");
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  LLVMValueRef lp = LLVMBuildPointerCast(G->B, leaves, i64p, ""), op = LLVMBuildPointerCast(G->B, outs, i64p, "");
  for (int l = 0; l < nleaves; l++) {
    LLVMValueRef t[3];
    cg_lua_triple(G, leaf[l], 0, c->ops[0], &t[0], &t[1], &t[2]);
    t[0] = LLVMBuildZExt(G->B, t[0], G->i64, "");
    t[2] = LLVMBuildSExt(G->B, t[2], G->i64, "");
    for (int j = 0; j < 3; j++) {
      LLVMValueRef ix = cg_i64(G, 3 * l + j);
      LLVMBuildStore(G->B, t[j], LLVMBuildInBoundsGEP2(G->B, G->i64, lp, &ix, 1, ""));
    }
  }
  LLVMTypeRef ps[6] = { G->i8p, G->i8p, G->i32, G->i32, i64p, i64p };
  LLVMValueRef as[6] = { G->luaL, template(G, c, ref), cg_i32(G, n), G->lbase, lp, op };
  cg_ccall(G, "kjit_lv_chain", G->i32, ps, as, 6);
  LLVMValueRef stag[n], sbits[n];
  for (int k = 0; k < n; k++) {
    LLVMValueRef it = cg_i64(G, 2 * k), ib = cg_i64(G, 2 * k + 1);
    stag[k] = LLVMBuildTrunc(G->B, LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, op, &it, 1, ""), ""),
                             G->i8, "");
    sbits[k] = LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, op, &ib, 1, ""), "");
  }
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef tps[n], bps[n];
  for (int k = 0; k < n; k++) {   /* (the phis first: cg_lua_slot may emit) */
    LLVMValueRef tp = LLVMBuildPhi(G->B, G->i8, ""), bp = LLVMBuildPhi(G->B, G->i64, "");
    LLVMValueRef tv[2] = { ftag[k], stag[k] }, bv[2] = { fbits[k], sbits[k] };
    LLVMBasicBlockRef from[2] = { here, send };
    LLVMAddIncoming(tp, tv, from, 2);
    LLVMAddIncoming(bp, bv, from, 2);
    tps[k] = tp;
    bps[k] = bp;
  }
  for (int k = 0; k < n; k++) G->vals[c->ops[k]->id] = cg_lua_mk(G, cg_lua_slot(G, c->ops[k]), tps[k], bps[k]);
}

int cg_chain_take(CG *G, const KirInsn *v) {
  if (G->chainof == NULL || G->chainof[v->id] == 0) return 0;
  const CgChain *c = &((const CgChain *)G->chains)[G->chainof[v->id] - 1];
  if (G->notrun && G->notrun[v->id]) return 1;   /* (cg_chain_notrun) */
  if (v == c->ops[c->nops - 1]) emit_chain(G, c);
  return 1;
}

/* An operation of a chain that never runs (an operand raised before the
** chain began: nothing that raises stands inside one): none of the chain
** does. */
void cg_chain_notrun(CG *G, const KirInsn *v) {
  if (G->chainof == NULL || G->chainof[v->id] == 0) return;
  const CgChain *c = &((const CgChain *)G->chains)[G->chainof[v->id] - 1];
  for (int k = 0; k < c->nops && G->notrun; k++) G->notrun[c->ops[k]->id] = 1;
}
