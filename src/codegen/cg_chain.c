/*
** cg_chain.c: table code checked once per chain of operations instead of
** once per operation.
**
** cg_lua.c gives each operation on a Lua value its own check and cold
** call: a `+ - * /` its number test and kjit_lv_sarith (ten arguments), a
** field read or write its inline probe and kjit_lv_sgetfield or
** kjit_lv_ssetfield. nbody's `advance` had 28 arithmetic and 23 field
** calls, and LLVM's machine passes, linear in code volume, were most of
** its compile. Here the operations that follow one another in a block (a
** chain: `bj.vx = bj.vx + dx * bm` and its neighbours; also `t[i]` by an
** integer key and the comparisons of numbers) are emitted
** together at the last one:
**   - one check of everything the chain assumes: every Lua value it uses
**     as a number is one (a float in the float form), every field it
**     reads holds a number where its site looks (cg_lua.c
**     cg_lua_field_probe), every field it writes holds a value there (so
**     the write runs no __newindex and moves nothing); the elements' keys
**     below alimit are one branch before it (their tags are read behind
**     it), and an access to a place an earlier one checked has no check
**     of its own (same_place);
**   - the chain natively in the program's order: loads and stores in the
**     tables' nodes, arithmetic in registers;
**   - where the check fails, one cold call (luavalue.c kjit_lv_chain) that
**     does the whole chain operation by operation, in the program's order,
**     through the helpers each operation has alone (metamethods, string
**     coercion, the sites' caches, errors with each operation's line and
**     operands' descriptions);
**   - a join of the values the chain gives.
** Nothing runs before the check, so the call starts from the state the
** chain began with.
**
** The arithmetic: + - * / % // ^ and unary minus (cg_num.c's, on the
** chain's native operands: `%` and `//` floored, an integer one by zero
** raising in the fast path, located, after what the chain did before it,
** as the interpreter raises). Three native forms:
**   - float (the chain's values meet floats: a float operand, a `/` or a
**     `^` among the arithmetic connected to them, and no counter-like
**     `x + 1` or bitwise operation): the check asks every number to be a
**     float, and each operation is one float instruction; an integer (a
**     field that held 0 before it held 0.5) takes the call, which computes
**     what Lua computes. Except a loose operand (float_forced): a Lua
**     number from before the chain (a leaf: the chain's own reads stay
**     strict, number_checks says why) used only by operations whose
**     result is a float whatever it
**     holds (a `/`, a `^`, or the other operand a native float or such an
**     operation's result: spectral-norm's `a + x[j] * A(i, j)` over
**     integers on its first pass, the sum starting at 0) is checked to be
**     a number, and an integer there is converted as Lua converts it. A
**     write in a float chain writes a float (a value of the chain's, a
**     checked float, a native float), so a read after it in the same
**     chain still finds one (a loose value is not written: it is strict);
**   - integer (the values meet integer constants in `+ - % //` and
**     `==`, `n + 1`, `x == 1`, and no float, no `/` or `^`): the check
**     asks for integers, operations are i64 (wrapping as Lua's do),
**     comparisons icmp (fannkuch's permutations);
**   - flat (anything else): the check asks for numbers, and each
**     operation computes both the integer and the float result and picks
**     one by the operands' kinds (cg_lua.c cg_lua_flat_arith, as alone;
**     `% // ^` and unary minus branch on the kinds, cg_num.c cg_split).
**     A flat chain that computes (and writes no native integer) has the
**     float form too, tested first (dual): evidence is often absent where
**     tables hold floats (scimark-lu's `vi[k] - eij * vj[k]`: 1.494G ->
**     1.213G instructions for LU 30), and the flat version still takes
**     integers without the call.
** Comparisons (== < <= of numbers, their result a boolean) end chains
** often: a loop's test, an `if`. In a chain they are checked with it and
** their call is kjit_lv_comparex's (metamethods, strings, errors).
**
** Also members: math.sqrt of a Lua value, and float arithmetic on such
** native results (issqrt, native_member: nbody's `sqrt(d2)` and `dt / (mag
** * mag * mag)`, so that its inner loop is one chain).
** What may stand between two operations of a chain: only instructions that
** cannot raise, run Lua code or read a Lua value (constants, a frozen
** constant's read, arithmetic on native numbers from before the chain). So
** doing the chain at the last
** operation's place changes no order a program could see. A field's table
** and an element's key are values from before the chain: `a.b.c` and
** `vx[col[i]]` end a chain at the access that uses its read, and that
** access begins the next chain, the read then a leaf of it. No operand is
** a call's Lua result (cg_lua.c clears those slots after their last use). Values stay anchored as in cg_lua.c:
** each operation giving a Lua value has its own slot, where the helpers
** leave a result that is not a number; the leaves are in their own slots
** or registers.
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
  int form;              /* KLV_FLT: the float form, KLV_INT: the integer form,
                            0: flat (see the head) */
} CgChain;

/* ---- Planning --------------------------------------------------------------------- */

static int isnative(Type t) {
  return t.kind == T_INT || t.kind == T_F64 || (t.kind == T_NUMBER && (t.fsub == 0 || t.fsub == T_F64));
}

static int is_lua(const KtySpec *sp, const KirInsn *a) { return sp->types[a->id].kind == T_LUA; }

/* Not a call's Lua results (their slots are cleared after their last use:
** cg_lua.c plan_kills, which would run before the chain). */
static int callres(const KtySpec *sp, const KirInsn *a) {
  return is_lua(sp, a) && (a->op == KIR_CALL || a->op == KIR_RESULT || a->op == KIR_VARARG);
}

/* The arithmetic a chain computes: Lua's + - * / % // ^ and unary minus
** (bitwise operations stay alone: they convert floats with exact values
** and raise on the others). */
static int isarith(const KirInsn *v) {
  switch (v->op) {
  case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_MOD: case KIR_IDIV: case KIR_POW:
    return v->nargs == 2;
  case KIR_UNM: return v->nargs == 1;
  default: return 0;
  }
}

static int iscmp(const KirInsn *v) { return (v->op == KIR_EQ || v->op == KIR_LT || v->op == KIR_LE) && v->nargs == 2; }

/* math.sqrt of a Lua value, the function a frozen constant (programs/
** nbody's `sqrt(dx*dx + dy*dy + dz*dz)`, `math.sqrt(d2)`): a member of the
** chain that computes its argument, so that the chain goes on past it
** (`dt / (mag * mag * mag)`, then the velocities) instead of ending there
** and the next chain testing again each value this one gave. Its result
** is a native float; its argument is converted as luaL_checknumber does
** (an integer, a string), else the chain's call raises sqrt's "bad
** argument" (luavalue.c KLV_CHAIN_SQRT). */
static int issqrt(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_CALL || v->nargs != 2 || v->aux != 1) return 0;
  const KirInsn *fn = v->args[0];
  return sp->types[fn->id].kind == T_BUILTIN && sp->types[fn->id].ref == B_MATH_SQRT &&
         sp->consts[fn->id].kind != T_UNKNOWN;
}

/* A member whose result is a native float (sqrt's, and float arithmetic on
** such results: `mag * mag * mag`), not a Lua value. */
static int isnativemember(const KtySpec *sp, const KirInsn *v) {
  return issqrt(sp, v) || (isarith(v) && v->nargs == 2 && sp->types[v->id].kind == T_F64);
}

/* The operands of an operation of a chain (arithmetic, a comparison): a
** Lua value at least one of them, the others Lua values or native numbers,
** none a call's Lua result. */
static int lua_operands(const KtySpec *sp, const KirInsn *v) {
  int lua = 0;
  for (int i = 0; i < v->nargs; i++) {
    const KirInsn *a = v->args[i];
    if (callres(sp, a)) return 0;
    if (is_lua(sp, a)) lua = 1;
    else if (!isnative(sp->types[a->id])) return 0;
  }
  return lua;
}

/* Can v be an arithmetic operation of a chain (giving a Lua value, its
** own slot for what the slow call leaves there)? */
static int chainable(CG *G, const KtySpec *sp, const KirInsn *v) {
  if (!isarith(v) || !is_lua(sp, v) || sp->consts[v->id].kind != T_UNKNOWN || sp->raises[v->id].msg) return 0;
  if (G->fastmath || G->lslot[v->id] < 0) return 0;
  if ((sp->liveref && sp->liveref[v->id]) || (sp->upvref && sp->upvref[v->id])) return 0;
  return lua_operands(sp, v);
}

/* Can v be a comparison of a chain? == < <= giving a boolean (the chain's
** call compares as kjit_lv_comparex does). */
static int cmp_member(const KtySpec *sp, const KirInsn *v) {
  if (!iscmp(v) || sp->types[v->id].kind != T_BOOL) return 0;
  if (sp->consts[v->id].kind != T_UNKNOWN || sp->raises[v->id].msg || cg_lua_eq_ident(sp, v)) return 0;
  return lua_operands(sp, v);
}

/* Can v be a field access of a chain (its table a value from before the
** chain: a leaf)? cg_lua.c cg_lua_field_inline says which accesses. */
static int in_run(const KirInsn *const *run, int nrun, const KirInsn *a) {
  for (int k = 0; k < nrun; k++) if (run[k] == a) return 1;
  return 0;
}

static int isread(const KirInsn *v) { return v->op == KIR_GETFIELD || v->op == KIR_INDEX; }
static int iswrite(const KirInsn *v) { return v->op == KIR_SETFIELD || v->op == KIR_SETINDEX; }
/* The value an access writes (SETFIELD t.k = x; SETINDEX t[i] = x). */
static const KirInsn *written(const KirInsn *v) { return v->args[v->op == KIR_SETINDEX ? 2 : 1]; }

static int field_member(CG *G, const KtySpec *sp, const KirInsn *v, const KirInsn *const *run, int nrun) {
  if (!isread(v) && !iswrite(v)) return 0;
  if (sp->raises[v->id].msg || !cg_lua_field_inline(G, v)) return 0;
  if ((sp->liveref && sp->liveref[v->id]) || (sp->upvref && sp->upvref[v->id])) return 0;
  const KirInsn *o = v->args[0];
  if (callres(sp, o) || in_run(run, nrun, o)) return 0;
  if ((v->op == KIR_INDEX || v->op == KIR_SETINDEX) && (callres(sp, v->args[1]) || in_run(run, nrun, v->args[1])))
    return 0;   /* (a key from before the chain) */
  if (sp->liveref && sp->liveref[o->id]) return 0;
  if (isread(v))
    return is_lua(sp, v) && sp->consts[v->id].kind == T_UNKNOWN && G->lslot[v->id] >= 0;
  const KirInsn *x = written(v);   /* a number, or a Lua value */
  return is_lua(sp, x) ? !callres(sp, x) : isnative(sp->types[x->id]);
}

/* May v stand between two operations of a chain (the head says why)? */
static int quiet(const KtySpec *sp, const KirInsn *v) {
  if (sp->raises[v->id].msg) return 0;
  switch (v->op) {
  case KIR_NIL: case KIR_TRUE: case KIR_FALSE: case KIR_INT: case KIR_FLT: case KIR_STR:
    return 1;
  case KIR_GETUPVAL: case KIR_GETFIELD: {
    /* a frozen constant (`local sqrt = math.sqrt` read in the loop, `math`
    ** and its `sqrt`): cg_func.c emit_insn emits nothing for it (programs/
    ** nbody's `sqrt(dx*dx + ...)` split its chain from `bix - bj.x` at the
    ** upvalue's read) */
    Type t = sp->types[v->id];
    if (t.kind == T_LUA || t.kind == T_BUF || t.kind == T_SHAPE || t.kind == T_UNKNOWN) return 0;
    if ((sp->upvref && sp->upvref[v->id]) || (sp->liveref && sp->liveref[v->id])) return 0;
    return sp->consts[v->id].kind != T_UNKNOWN;
  }
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
  if (iscmp(v) && v->nargs == 2) {   /* compared values: of one kind, a float's */
    /* (an integer constant is evidence in == and ~= only, `q1 ~= 1` of
    ** fannkuch's permutations: an order with one, `p.x < 0 or p.x > 100`
    ** over float positions, is how Lua is written; taken as integer
    ** evidence it sent bench/tables/vectors.lua's every test to the slow
    ** call, 0.46 -> 0.38 of the interpreter's speed) */
    const KirInsn *a = v->args[0], *b = v->args[1];
    if (is_lua(sp, a) && is_lua(sp, b)) join(up, ev, a->id, b->id);
    for (int i = 0; i < 2; i++) {
      const KirInsn *x = v->args[i], *o = v->args[1 - i];
      Type t = sp->types[o->id];
      if (!is_lua(sp, x) || is_lua(sp, o)) continue;
      if (t.kind == T_F64 || t.kind == T_F32) ev[root(up, x->id)] |= EV_FLOAT;
      else if (t.kind == T_INT && sp->consts[o->id].kind != T_UNKNOWN && v->op == KIR_EQ)
        ev[root(up, x->id)] |= EV_INT;
    }
    return;
  }
  if (!is_lua(sp, v)) return;
  if (v->op == KIR_PHI) {
    for (int i = 0; i < v->nargs; i++) if (is_lua(sp, v->args[i])) join(up, ev, v->id, v->args[i]->id);
    return;
  }
  if (!KIR_ISARITH(v->op) && v->op != KIR_UNM) return;
  /* a / or ^ gives a float whatever it is given: its result only */
  if (v->op == KIR_DIV || v->op == KIR_POW) { ev[root(up, v->id)] |= EV_FLOAT; return; }
  /* + - * % // and unary minus give an integer of integers, else a float */
  int mix = v->op == KIR_ADD || v->op == KIR_SUB || v->op == KIR_MUL || v->op == KIR_UNM ||
            v->op == KIR_MOD || v->op == KIR_IDIV;
  for (int i = 0; i < v->nargs; i++) {
    const KirInsn *a = v->args[i];
    Type t = sp->types[a->id];
    if (is_lua(sp, a)) {
      if (mix) join(up, ev, v->id, a->id);
    } else if (t.kind == T_F64 || t.kind == T_F32) {
      ev[root(up, v->id)] |= EV_FLOAT;
    } else if (t.kind == T_INT && sp->consts[a->id].kind != T_UNKNOWN && v->op != KIR_MUL) {
      ev[root(up, v->id)] |= EV_INT;   /* n + 1: a counter; i % 2, n // 2 */
    }
  }
  if (!mix) ev[root(up, v->id)] |= EV_INT;   /* bitwise */
}

/* Can v be math.sqrt of a Lua value in a chain (issqrt)? */
static int sqrt_member(const KtySpec *sp, const KirInsn *v) {
  if (!issqrt(sp, v) || sp->types[v->id].kind != T_F64 || sp->raises[v->id].msg) return 0;
  if (sp->consts[v->id].kind != T_UNKNOWN || (sp->varop && sp->varop[v->id])) return 0;
  /* (not a call of a value: ir_type.c kty_calls_value, emitted apart) */
  if ((sp->upvref && sp->upvref[v->id]) || (sp->liveref && sp->liveref[v->id]) || kty_calls_value(sp, v)) return 0;
  const KirInsn *x = v->args[1];
  return is_lua(sp, x) && !callres(sp, x);
}

/* Does v use a native result of the run (a sqrt's, or arithmetic on one)? */
static int uses_native(const KtySpec *sp, const KirInsn *v, const KirInsn *const *run, int nrun) {
  for (int i = 0; i < v->nargs; i++)
    if (isnativemember(sp, v->args[i]) && in_run(run, nrun, v->args[i])) return 1;
  return 0;
}

/* Can v be float arithmetic on the run's native results (`mag * mag *
** mag`, `dt / ...`: + - * /, both operands native floats, one of them
** the run's)? It computes in the chain: the chain is emitted at its last
** operation, after the instructions standing between (quiet), which
** therefore use no value of the chain's (one that does ends the run).
** (Unary minus of a native is cg_num.c's, emitted where it stands.) */
static int native_member(const KtySpec *sp, const KirInsn *v, const KirInsn *const *run, int nrun) {
  if (!isarith(v) || v->nargs != 2 || v->op == KIR_MOD || v->op == KIR_IDIV || v->op == KIR_POW) return 0;
  if (sp->types[v->id].kind != T_F64 || sp->raises[v->id].msg || sp->consts[v->id].kind != T_UNKNOWN) return 0;
  for (int i = 0; i < v->nargs; i++)
    if (sp->types[v->args[i]->id].kind != T_F64) return 0;
  return uses_native(sp, v, run, nrun);
}

/* Can v join the run (run[0 .. nrun - 1]) of a chain? */
static int member(CG *G, const KtySpec *sp, const KirInsn *v, const KirInsn *const *run, int nrun) {
  return chainable(G, sp, v) || cmp_member(sp, v) || field_member(G, sp, v, run, nrun) ||
         sqrt_member(sp, v) || native_member(sp, v, run, nrun);
}

/* The form of a chain of run's operations: the float form where all its
** values are floats by the evidence (a value written: the chain's, a
** checked float, a native float), the integer form where all are integers
** (native operands too; no `/` or `^`), else flat (0). *compute: it has
** arithmetic or a comparison. */
static int chain_form(const KtySpec *sp, int *up, const uint8_t *ev, const KirInsn *const *run, int nrun,
                      int *compute) {
  int floaty = 1, inty = 1;
  *compute = 0;
  for (int k = 0; k < nrun; k++) {
    const KirInsn *m = run[k];
    *compute |= isarith(m) || iscmp(m);
    inty &= m->op != KIR_DIV && m->op != KIR_POW;
    *compute |= issqrt(sp, m);
    const KirInsn *xs[2] = { iswrite(m) ? written(m) : m, NULL };
    if (isarith(m) || iscmp(m)) { xs[0] = m->args[0]; xs[1] = m->nargs == 2 ? m->args[1] : NULL; }
    if (issqrt(sp, m)) { xs[0] = m->args[1]; inty = 0; }
    for (int i = 0; i < 2 && xs[i]; i++) {
      const KirInsn *x = xs[i];
      if (is_lua(sp, x)) {
        floaty &= ev[root(up, x->id)] == EV_FLOAT;
        inty &= ev[root(up, x->id)] == EV_INT;
      } else {
        floaty &= !iswrite(m) || sp->types[x->id].kind == T_F64;
        inty &= sp->types[x->id].kind == T_INT;
      }
    }
    if (is_lua(sp, m)) {
      floaty &= ev[root(up, m->id)] == EV_FLOAT;
      inty &= ev[root(up, m->id)] == EV_INT;
    }
  }
  return floaty ? KLV_FLT : inty ? KLV_INT : 0;
}

/* The Lua values whose tag is the float's wherever the chains' fast paths
** ran: the values a float chain gives (its arithmetic's results, its
** reads that go on past it: native_body gives them the form's constant
** tag), and the phis all of whose incoming values are such values or
** native floats (nbody's `bivx`, carried across the inner loop), found
** optimistically around loops. A later float chain checks such a leaf as
** a float (strict) even where Lua would convert an integer there (loose):
** it is one where the earlier chain's fast path ran, and the loose form's
** conversion is 5-6 instructions at each use in the fast path (nbody's
** `mag = dt / (d2 * sqrt(d2))` and `bivx - dx * bm`: eight loose
** leaves). Where the earlier chain took its call and left an integer, the
** later one takes its call too, which computes what Lua computes. A sum
** that starts at an integer constant (spectral-norm's `a = 0`) is a phi
** with an integer input: not such a value, it stays loose. */
static uint8_t *floaty_values(CG *G, const KtySpec *sp, const CgChain *chains, int nchains) {
  KirFunc *f = sp->ir;
  uint8_t *flt = cg_zalloc(G, (size_t)f->ninsns);
  int any = 0;
  for (int ch = 0; ch < nchains; ch++) {
    if (chains[ch].form != KLV_FLT) continue;
    for (int k = 0; k < chains[ch].nops; k++) {
      const KirInsn *v = chains[ch].ops[k];
      if (is_lua(sp, v) && (isarith(v) || isread(v))) flt[v->id] = 1, any = 1;
    }
  }
  if (!any) return NULL;
  /* phis: assumed such, then dropped while one has another input */
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    for (int i = 0; i < f->blocks[b]->nphis; i++)
      if (is_lua(sp, f->blocks[b]->phis[i])) flt[f->blocks[b]->phis[i]->id] = 2;
  }
  for (int changed = 1; changed;) {
    changed = 0;
    for (int b = 0; b < f->nblocks; b++) {
      if (!sp->live[b]) continue;
      KirBlock *blk = f->blocks[b];
      for (int i = 0; i < blk->nphis; i++) {
        const KirInsn *p = blk->phis[i];
        if (flt[p->id] != 2) continue;
        for (int a = 0; a < p->nargs; a++) {
          const KirInsn *x = p->args[a];
          if (is_lua(sp, x) ? flt[x->id] == 0 : sp->types[x->id].kind != T_F64) {
            flt[p->id] = 0;
            changed = 1;
            break;
          }
        }
      }
    }
  }
  return flt;
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
      if (v && member(G, sp, v, run, nrun)) {
        run[nrun++] = v;
        continue;
      }
      if (v && quiet(sp, v) && !uses_native(sp, v, run, nrun)) continue;
      if (nrun == 0) continue;
      int compute, form = chain_form(sp, up, ev, run, nrun, &compute);
      if (nrun >= 2 || (form && compute)) {
        CgChain *c = &chains[nchains++];
        c->ops = cg_zalloc(G, sizeof(KirInsn *) * (size_t)nrun);
        memcpy(c->ops, run, sizeof(KirInsn *) * (size_t)nrun);
        c->nops = nrun;
        c->form = form;
        for (int k = 0; k < nrun; k++) chainof[run[k]->id] = nchains;
      }
      nrun = 0;
      /* what ended the run may begin the next (`vx[col[i]]` after
      ** `col[i]`, a field of a field read: the earlier chain's values are
      ** there when it runs) */
      if (v && member(G, sp, v, run, 0)) run[nrun++] = v;
    }
  }
  if (nchains == 0) return;
  G->chainof = chainof;
  G->chains = chains;
  G->chainflt = floaty_values(G, sp, chains, nchains);
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

/* Operation v of a chain on native operands a (doubles in the float form,
** integers in the integer form, T_NUMBER or native numbers in the flat
** form), as cg_num.c computes it: (tag, bits) of its result. In the
** integer form a `%` or `//` by zero raises here, located, as Lua does
** (what the chain did before it is done, as interpreted). */
static void native_arith(CG *G, const CgChain *c, const KirInsn *v, CgVal *a, LLVMValueRef *tag,
                         LLVMValueRef *bits) {
  if (c->form == 0 && v->nargs == 2 && cg_lua_flat_arith(G, v, a, tag, bits)) return;
  Type rt = TY(c->form == KLV_FLT ? T_F64 : c->form == KLV_INT ? T_INT : T_NUMBER);
  if (c->form == 0) rt.fsub = T_F64;
  cg_lua_numtag(G, cg_arith_on(G, v, a, rt), tag, bits);
}

/* Lua bits as a double: a float's, or an integer's converted (exactly as
** Lua converts it) where isint. */
static LLVMValueRef bits_double(CG *G, LLVMValueRef bits, LLVMValueRef isint) {
  LLVMValueRef f = LLVMBuildBitCast(G->B, bits, G->f64, "");
  if (isint == NULL) return f;
  /* (named: test_chains.lua finds the conversion in the fast path) */
  return LLVMBuildSelect(G->B, isint, LLVMBuildSIToFP(G->B, bits, G->f64, "chint"), f, "");
}

static LLVMValueRef is_int(CG *G, LLVMValueRef tag) {
  return LLVMBuildICmp(G->B, LLVMIntEQ, tag, LLVMConstInt(G->i8, KLV_INT, 0), "");
}

/* Which operations of a float chain give a float whatever kind of number
** their Lua operands hold (forced[k]): a `/` or `^`, or one with an
** operand certainly a float (a native float, a forced operation's result).
** An operand of such an operation needs no float check: Lua converts an
** integer there to the float the chain converts it to. (Not the other
** operand being a checked float: which of two Lua values then needs the
** check would be a choice.) */
static void float_forced(CG *G, const CgChain *c, int (*ref)[3], const CgVal *leaf, uint8_t *forced) {
  for (int k = 0; k < c->nops; k++) {
    const KirInsn *v = c->ops[k];
    forced[k] = 0;
    if (c->form != KLV_FLT) continue;
    /* (a sqrt's and native arithmetic's results: floats whatever they are
    ** given; a sqrt's argument converted as Lua converts it) */
    if (isnativemember(G->sp, v)) { forced[k] = 1; continue; }
    if (!isarith(v) || v->nargs != 2) continue;
    forced[k] = v->op == KIR_DIV || v->op == KIR_POW;
    for (int i = 0; i < 2; i++) {
      int r = ref[k][i];
      forced[k] |= r < 0 ? forced[-1 - r] : leaf[r].t.kind == T_F64;
    }
  }
}

/* The chain's operations as kjit_lv_chain reads them (luavalue.h
** KlvChainOp), one constant array. */
static LLVMValueRef template(CG *G, const CgChain *c, int (*ref)[3], const int *event, const uint8_t *flip,
                             const CgLField *f) {
  LLVMTypeRef af[5] = { G->i32, G->i32, G->i8p, G->i8p, G->i8p };
  LLVMTypeRef aty = LLVMStructTypeInContext(G->C, af, 5, 0);
  LLVMTypeRef of[6] = { aty, G->i32, G->i32, G->i32, G->i32, G->i8p };
  LLVMTypeRef oty = LLVMStructTypeInContext(G->C, of, 6, 0);
  LLVMValueRef items[c->nops];
  for (int k = 0; k < c->nops; k++) {
    const KirInsn *v = c->ops[k];
    const char *ia = "", *ib = "";
    int op = v->op == KIR_GETFIELD ? KLV_CHAIN_GET : v->op == KIR_SETFIELD ? KLV_CHAIN_SET
           : v->op == KIR_INDEX ? KLV_CHAIN_GETI : v->op == KIR_SETINDEX ? KLV_CHAIN_SETI
           : v->op == KIR_EQ ? KLV_CHAIN_EQ : v->op == KIR_LT ? KLV_CHAIN_LT : v->op == KIR_LE ? KLV_CHAIN_LE
           : v->op == KIR_CALL ? KLV_CHAIN_SQRT : cg_lua_opcode(event[k]);
    if (isarith(v)) {
      ia = cg_varinfo(G, v, flip[k]);
      if (v->nargs == 2) ib = cg_varinfo(G, v, !flip[k]);
    }
    if (v->op == KIR_CALL) {   /* sqrt's argument error, as cg_lua_tonumber words it */
      ia = cg_lua_tonumber_pre(G, v, 1);
      ib = ")";
    }
    LLVMValueRef ai[5] = { cg_i32(G, op), cg_i32(G, v->line), G->chunkname,
                           cg_lua_text(G, ia), cg_lua_text(G, ib) };
    int access = isread(v) || iswrite(v);
    LLVMValueRef site = access ? LLVMConstPointerCast(f[k].site, G->i8p) : LLVMConstNull(G->i8p);
    LLVMValueRef oi[6] = { LLVMConstStructInContext(G->C, ai, 5, 0), cg_i32(G, ref[k][0]),
                           cg_i32(G, ref[k][1]), cg_i32(G, ref[k][2]), cg_i32(G, iscmp(v) || isnativemember(G->sp, v) ? -1 : G->lslot[v->id]), site };
    items[k] = LLVMConstStructInContext(G->C, oi, 6, 0);
  }
  LLVMValueRef init = LLVMConstArray(oty, items, (unsigned)c->nops);
  LLVMValueRef g = LLVMAddGlobal(G->M, LLVMTypeOf(init), "kcg.chain");
  LLVMSetInitializer(g, init);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetGlobalConstant(g, 1);
  return LLVMBuildPointerCast(G->B, g, G->i8p, "");
}

/* How many operands member v has (a table, a key, a value written; a
** sqrt's argument), and operand i (a sqrt's after the function). */
static int operand_count(const KirInsn *v) {
  return v->op == KIR_GETFIELD || v->op == KIR_UNM || v->op == KIR_CALL ? 1 : v->op == KIR_SETINDEX ? 3 : 2;
}
static const KirInsn *operand(const KirInsn *v, int i) { return v->args[v->op == KIR_CALL ? 1 + i : i]; }

static void emit_alone(CG *G, const CgChain *c) {
  for (int k = 0; k < c->nops; k++) {
    const KirInsn *v = c->ops[k];
    if (isread(v)) G->vals[v->id] = cg_lua_index(G, v);
    else if (iswrite(v)) cg_lua_store(G, v);
    else if (iscmp(v)) G->vals[v->id] = cg_lua_compare(G, v);
    else if (v->op == KIR_CALL) cg_func_call(G, v);   /* (a sqrt) */
    else if (isnativemember(G->sp, v)) G->vals[v->id] = cg_arith(G, v);
    else G->vals[v->id] = cg_lua_arith(G, v);
  }
}

/* A chain being emitted: its operands (ref: >= 0 a leaf, < 0 the result
** of operation -1 - ref), its leaves and how the chain uses them, its
** accesses' probes. */
typedef struct ChainEmit {
  const CgChain *c;
  int n, nleaves;
  int (*ref)[3];
  CgVal *leaf;
  const KirInsn *const *leafv;   /* (NULL: a constant of the slow call's) */
  const uint8_t *numuse, *intuse;
  CgLField *f;
  const int *owner;   /* by access: the earlier access whose check covers it
                         (same_place), or -1 */
} ChainEmit;

/* The number checks of the chain's native code in form `form` (the
** checks all forms share are the caller's): every Lua number it uses is
** one (a float in the float form, unless loose: strict[] and rstrict[],
** set here). */
static LLVMValueRef number_checks(CG *G, const ChainEmit *e, int form, uint8_t *strict, uint8_t *rstrict) {
  const CgChain *c = e->c;
  CgChain cf = *c;
  cf.form = form;
  uint8_t forced[e->n];
  /* which Lua numbers the float form checks as floats (strict): those a
  ** comparison or a write uses, or an operation that is not forced */
  float_forced(G, &cf, e->ref, e->leaf, forced);
  /* (a value an earlier float chain gave: strict, floaty_values says why) */
  for (int l = 0; l < e->nleaves; l++)
    strict[l] = G->chainflt && e->leafv[l] && G->chainflt[e->leafv[l]->id] != 0;
  /* a read whose value goes on past the chain stays strict: its tag is
  ** then the form's constant, and the checks of the chains that use it
  ** fold away (bench/tables/nbody.lua's bi.x, read once, used in the
  ** inner loop) */
  for (int k = 0; k < e->n; k++) {
    const KirInsn *v = c->ops[k];
    rstrict[k] = 0;
    for (int u = 0; u < v->nusers && isread(v); u++) rstrict[k] |= position(c, v->users[u]) < 0;
  }
  for (int k = 0; k < e->n; k++) {
    const KirInsn *v = c->ops[k];
    int numeric = isarith(v) || iscmp(v) || v->op == KIR_CALL;
    for (int i = 0; i < operand_count(v); i++) {
      int r = e->ref[k][i];
      if (!(numeric || (iswrite(v) && i == operand_count(v) - 1))) continue;
      /* (a read of the chain's own stays strict: loose reads cost
      ** bench/tables/nbody.lua's compiled loop 93.1M -> 104.4M
      ** instructions, their conversions in the fast path where the values
      ** are floats; loose leaves alone 97.7M) */
      int loose = (isarith(v) || v->op == KIR_CALL) && forced[k];
      if (r < 0) rstrict[-1 - r] = 1;
      else strict[r] |= !loose;
    }
  }
  LLVMValueRef ok = cg_i1(G, 1);
  for (int l = 0; l < e->nleaves; l++) {
    if (!e->numuse[l] || e->leaf[l].t.kind != T_LUA) continue;
    int want = form == KLV_FLT && !strict[l] ? 0 : form;
    LLVMValueRef flag = e->leaf[l].flag;
    LLVMValueRef t = want ? LLVMBuildICmp(G->B, LLVMIntEQ, flag, LLVMConstInt(G->i8, (unsigned)want, 0), "")
                          : LLVMBuildICmp(G->B, LLVMIntNE, flag, LLVMConstInt(G->i8, 0, 0), "");
    ok = LLVMBuildAnd(G->B, ok, t, "");
  }
  for (int k = 0; k < e->n; k++) {
    if (!isread(c->ops[k])) continue;
    int want = form == KLV_FLT && !rstrict[k] ? 0 : form;
    ok = LLVMBuildAnd(G->B, ok, cg_lua_field_readable(G, &e->f[k], want), "");
  }
  return ok;
}

/* Whether write k of the chain's native version in form `form` (the
** float or the integer form) finds a number of the form's kind where it
** writes, so that only its bits need writing: an earlier access to the
** same place (same_place) checked a number of that kind there (a read
** checked strictly: every read in the integer form, one in the float form
** where rstrict) or wrote one (every value such a version writes is of
** its kind), and nothing between moves the key. nbody's `bj.vx = bj.vx +
** dx * bm`, SOR's and LU's `v[x] = ... v[x]`: one byte store less each. */
static int kept_kind(const ChainEmit *e, int form, const uint8_t *rstrict, int k) {
  int r = e->owner[k];
  if (form == 0 || r < 0) return 0;
  return iswrite(e->c->ops[r]) || form == KLV_INT || rstrict[r];
}

/* The chain natively in form `form`, in the program's order, where its
** checks hold: each operation's (tag, bits) and, for a comparison, its
** i1 in fval (in the float form also each number's double). */
static void native_body(CG *G, const ChainEmit *e, int form, const uint8_t *strict, const uint8_t *rstrict,
                        LLVMValueRef *ftag, LLVMValueRef *fbits, LLVMValueRef *fval) {
  CgChain cf = *e->c;
  cf.form = form;
  const CgChain *c = &cf;
  const CgVal *leaf = e->leaf;
  for (int k = 0; k < e->n; k++) {
    const KirInsn *v = c->ops[k];
    ftag[k] = fbits[k] = fval[k] = NULL;
    if (isread(v)) {
      cg_lua_field_read(G, &e->f[k], &ftag[k], &fbits[k]);
      int loose = form == KLV_FLT && !rstrict[k];
      if (form && !loose) ftag[k] = LLVMConstInt(G->i8, (unsigned)form, 0);
      if (form == KLV_FLT) fval[k] = bits_double(G, fbits[k], loose ? is_int(G, ftag[k]) : NULL);
      continue;
    }
    if (iswrite(v)) {
      int r = e->ref[k][v->op == KIR_SETINDEX ? 2 : 1];
      LLVMValueRef t, b;
      if (r < 0) { t = ftag[-1 - r]; b = fbits[-1 - r]; }
      else if (leaf[r].t.kind == T_LUA) { t = leaf[r].flag; b = leaf[r].dims[0]; }
      else cg_lua_numtag(G, leaf[r], &t, &b);
      cg_lua_field_write(G, &e->f[k], kept_kind(e, form, rstrict, k) ? NULL : t, b);
      continue;
    }
    if (isnativemember(G->sp, v)) {   /* a sqrt, or float arithmetic on native floats */
      CgVal x[2];
      for (int i = 0; i < operand_count(v); i++) {
        int r = e->ref[k][i];
        LLVMValueRef d;
        if (r >= 0 && leaf[r].t.kind != T_LUA) d = as_double(G, leaf[r]);
        else if (r < 0 && isnativemember(G->sp, c->ops[-1 - r])) d = fval[-1 - r];
        else {   /* a sqrt's Lua argument, a number (checked): its double */
          LLVMValueRef t = r < 0 ? ftag[-1 - r] : leaf[r].flag, b = r < 0 ? fbits[-1 - r] : leaf[r].dims[0];
          if (form == KLV_FLT) d = r < 0 ? fval[-1 - r] : bits_double(G, b, strict[r] ? NULL : is_int(G, t));
          else if (form == KLV_INT) d = LLVMBuildSIToFP(G->B, b, G->f64, "");
          else d = as_double(G, cg_lua_asnum(G, cg_lua_mk(G, r < 0 ? cg_lua_slot(G, c->ops[-1 - r]) : leaf[r].v, t, b)));
        }
        x[i] = cg_mk(TY(T_F64), d);
      }
      fval[k] = v->op == KIR_CALL ? cg_math(G, "sqrt", G->f64, &x[0].v, 1) : cg_arith_on(G, v, x, TY(T_F64)).v;
      ftag[k] = LLVMConstInt(G->i8, KLV_FLT, 0);
      fbits[k] = LLVMBuildBitCast(G->B, fval[k], G->i64, "");
      continue;
    }
    /* the operands as numbers of the chain's form */
    CgVal a[2];
    for (int i = 0; i < v->nargs; i++) {
      int r = e->ref[k][i];
      if (r < 0 && isnativemember(G->sp, c->ops[-1 - r])) {   /* a native float of the chain's */
        a[i] = cg_mk(TY(T_F64), fval[-1 - r]);
        continue;
      }
      if (r >= 0 && leaf[r].t.kind != T_LUA) {   /* a native number */
        a[i] = form == KLV_FLT && isarith(v) ? cg_mk(TY(T_F64), as_double(G, leaf[r])) : leaf[r];
        continue;
      }
      LLVMValueRef t = r < 0 ? ftag[-1 - r] : leaf[r].flag, b = r < 0 ? fbits[-1 - r] : leaf[r].dims[0];
      if (form == KLV_FLT)
        a[i] = cg_mk(TY(T_F64), r < 0 ? fval[-1 - r] : bits_double(G, b, strict[r] ? NULL : is_int(G, t)));
      else if (form == KLV_INT) a[i] = cg_mk(TY(T_INT), b);
      else a[i] = cg_lua_asnum(G, cg_lua_mk(G, r < 0 ? cg_lua_slot(G, c->ops[-1 - r]) : leaf[r].v, t, b));
    }
    if (iscmp(v)) {
      fval[k] = cg_compare_on(G, v, a[0], a[1]);
      continue;
    }
    native_arith(G, c, v, a, &ftag[k], &fbits[k]);
    if (form == KLV_FLT) fval[k] = LLVMBuildBitCast(G->B, fbits[k], G->f64, "");
  }
}

/* Whether a flat chain also gets a float version behind its own check
** (the values met no evidence either way: scimark-lu's
** `vi[k] - eij * vj[k]`, whose tables hold floats): it computes, and
** every native value it writes is a float (a float version's later reads
** find floats where it wrote). */
static int dual(const CG *G, const CgChain *c) {
  if (c->form != 0) return 0;
  int compute = 0;
  for (int k = 0; k < c->nops; k++) {
    const KirInsn *v = c->ops[k];
    compute |= isarith(v);
    if (iswrite(v) && !is_lua(G->sp, written(v)) && G->sp->types[written(v)->id].kind != T_F64) return 0;
  }
  return compute;
}

/* The earlier access of the chain to the same place as access k (the same
** table, the same constant name or the same key value), or -1. Its check
** covers k's: where it holds, the key is in the node (or the element
** below alimit) it looked at, holding a number (a read's check) or a
** value (a write's), and nothing the chain does in between moves a key
** (its writes only overwrite values that are there), so k reads or writes
** there too. nbody's `bj.vx = bj.vx + dx * bm`: one probe for the read and
** the write; SOR's `v[x] = ... v[x]`: one bounds check. */
static int same_place(const CgChain *c, int (*ref)[3], int k) {
  const KirInsn *v = c->ops[k];
  int field = v->op == KIR_GETFIELD || v->op == KIR_SETFIELD;
  for (int r = 0; r < k; r++) {
    const KirInsn *u = c->ops[r];
    if (!(isread(u) || iswrite(u)) || ref[r][0] != ref[k][0] || ref[r][0] < 0) continue;
    if (field != (u->op == KIR_GETFIELD || u->op == KIR_SETFIELD)) continue;
    if (field ? u->k.str.len == v->k.str.len && memcmp(u->k.str.s, v->k.str.s, v->k.str.len) == 0
              : ref[r][1] == ref[k][1] && ref[r][1] >= 0)
      return r;
  }
  return -1;
}

static void emit_chain(CG *G, const CgChain *c) {
  int n = c->nops, nleaves = 0;
  int ref[n][3];
  const KirInsn *leafv[4 * n];   /* (up to 3 operands each, and a constant of the slow call's) */
  CgVal leaf[4 * n];
  uint8_t numuse[4 * n], objuse[4 * n], intuse[4 * n];
  LLVMValueRef lhint[4 * n];
  for (int k = 0; k < n; k++) {
    ref[k][1] = ref[k][2] = 0;
    for (int i = 0; i < operand_count(c->ops[k]); i++) {
      const KirInsn *a = operand(c->ops[k], i);
      int j = position(c, a);
      if (j >= 0 && j < k) { ref[k][i] = -1 - j; continue; }
      int l;
      for (l = 0; l < nleaves && leafv[l] != a; l++) {}
      if (l == nleaves) {
        leafv[nleaves] = a;
        leaf[nleaves] = cg_val(G, a);
        numuse[nleaves] = objuse[nleaves] = intuse[nleaves] = 0;
        lhint[nleaves++] = NULL;
      }
      ref[k][i] = l;
      int access = isread(c->ops[k]) || iswrite(c->ops[k]), keyed = c->ops[k]->op == KIR_INDEX || c->ops[k]->op == KIR_SETINDEX;
      if (i == 0 && access) objuse[l] = 1;
      else if (i == 1 && keyed) intuse[l] = leaf[l].t.kind == T_LUA || leaf[l].t.kind == T_NUMBER;   /* (a key: an integer) */
      else numuse[l] = 1;
    }
    if (operand_count(c->ops[k]) == 1 && !isread(c->ops[k])) ref[k][1] = ref[k][0];   /* (unary: the call reads two) */
  }
  /* the slow call's operands and events: Lua's where lcode.c's form
  ** differs from the IR's (`x - 1` is the IR's x + -1, `1 + x` its x + 1:
  ** ir_build.c kir_arith_mm; a metamethod sees __sub(x, 1), __add(1, x)),
  ** as cg_lua_arith's call has them */
  int sref[n][3], event[n];
  uint8_t flip[n];
  for (int k = 0; k < n; k++) {
    const KirInsn *v = c->ops[k];
    int fl = 0;
    lua_Integer imm = 0;
    memcpy(sref[k], ref[k], sizeof ref[k]);
    event[k] = v->op;
    if (isarith(v) && v->nargs == 2 && kir_arith_mm(G->sp->ir->proto, v, &event[k], &fl, &imm)) {
      if (event[k] != v->op) {   /* the constant as Lua's instruction has it */
        leafv[nleaves] = NULL;
        leaf[nleaves] = cg_mk(TY(T_INT), cg_i64(G, (int64_t)imm));
        numuse[nleaves] = objuse[nleaves] = intuse[nleaves] = 0;
        lhint[nleaves] = NULL;
        sref[k][1] = nleaves++;
      }
      if (fl) { int t = sref[k][0]; sref[k][0] = sref[k][1]; sref[k][1] = t; }
    }
    flip[k] = (uint8_t)fl;
  }
  /* a number operand known not to be one (a table in its slot): each
  ** operation alone, as cg_lua.c does it */
  for (int l = 0; l < nleaves; l++)
    if ((numuse[l] || intuse[l]) && (leaf[l].t.kind == T_LUA ? !cg_lua_numcapable(leaf[l]) : !isnative(leaf[l].t))) {
      emit_alone(G, c);
      return;
    }
  for (int k = 0; k < n; k++)
    if ((isread(c->ops[k]) || iswrite(c->ops[k])) &&   /* (its table: a leaf) */
        cg_lua_has_view(G, c->ops[k], leaf[ref[k][0]])) {   /* (a kjit array's view) */
      emit_alone(G, c);
      return;
    }
  /* the checks every version shares: keys integers, each field where its
  ** site looks, for a write a value there (no __newindex, nothing moves) */
  CgLField f[n];
  int owner[n];
  ChainEmit e = { c, n, nleaves, ref, leaf, leafv, numuse, intuse, f, owner };
  LLVMValueRef ok = cg_i1(G, 1), inb = cg_i1(G, 1);
  LLVMBasicBlockRef slow = cg_bb(G, "chslow"), done = cg_bb(G, "chdone");
  for (int l = 0; l < nleaves; l++)
    if (intuse[l] && leaf[l].t.kind == T_LUA)   /* (a number's, either kind: the probe's miss
                                                  ** covers a float that is not an integer) */
      ok = LLVMBuildAnd(G->B, ok, is_int(G, leaf[l].flag), "");
  uint8_t shared[n];
  int nelems = 0;
  for (int k = 0; k < n; k++) {
    const KirInsn *v = c->ops[k];
    shared[k] = 0;
    owner[k] = -1;
    if (!isread(v) && !iswrite(v)) continue;
    int r = same_place(c, ref, k);
    owner[k] = r;
    if (r >= 0) {   /* checked there (see same_place); its own site for the call */
      LLVMValueRef site = cg_lua_field_site(G, v);
      f[k] = f[r];
      f[k].site = site;
      shared[k] = 1;
      continue;
    }
    LLVMValueRef hit;
    cg_lua_field_probe(G, v, leaf[ref[k][0]], &f[k], &hit);
    if (lhint[ref[k][0]] == NULL) lhint[ref[k][0]] = f[k].h;
    if (f[k].isnode) ok = LLVMBuildAnd(G->B, ok, hit, "");
    else inb = LLVMBuildAnd(G->B, inb, hit, ""), nelems++;
  }
  /* elements: their keys below alimit first (one branch), then their tags
  ** where they are (SOR's five elements cost five selects of a stand-in nil
  ** before, each compare made twice) */
  if (nelems) {
    LLVMBasicBlockRef in = cg_bb(G, "chinb");
    cg_cold_false(G, LLVMBuildCondBr(G->B, inb, in, slow));
    LLVMPositionBuilderAtEnd(G->B, in);
  }
  for (int k = 0; k < n; k++) {
    const KirInsn *v = c->ops[k];
    if (!isread(v) && !iswrite(v)) continue;
    cg_lua_field_tag(G, &f[k]);
    if (iswrite(v) && !shared[k]) ok = LLVMBuildAnd(G->B, ok, cg_lua_field_writable(G, &f[k]), "");
  }
  /* the versions: the chain's form; a flat chain also the float form,
  ** tested first (dual) */
  int forms[2] = { c->form, 0 }, nv = 1;
  if (dual(G, c)) { forms[0] = KLV_FLT; nv = 2; }
  uint8_t strict[nv][4 * n], rstrict[nv][n];
  LLVMValueRef checks[2];
  for (int w = 0; w < nv; w++)
    checks[w] = LLVMBuildAnd(G->B, ok, number_checks(G, &e, forms[w], strict[w], rstrict[w]), "");
  LLVMBasicBlockRef fend[2];
  LLVMValueRef ftag[2][n], fbits[2][n], fval[2][n];
  for (int w = 0; w < nv; w++) {
    LLVMBasicBlockRef fast = cg_bb(G, "chfast"), next = w + 1 < nv ? cg_bb(G, "chnext") : slow;
    LLVMValueRef br = LLVMBuildCondBr(G->B, checks[w], fast, next);
    if (w + 1 == nv) cg_cold_false(G, br);
    LLVMPositionBuilderAtEnd(G->B, fast);
    native_body(G, &e, forms[w], strict[w], rstrict[w], ftag[w], fbits[w], fval[w]);
    fend[w] = LLVMGetInsertBlock(G->B);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, next);
  }
  /* the cold path: the leaves as (tag, bits, slot, hint), one call */
  LLVMValueRef leaves = cg_alloca(G, LLVMArrayType(G->i64, (unsigned)(4 * nleaves)), "chleaves");
  LLVMValueRef outs = cg_alloca(G, LLVMArrayType(G->i64, (unsigned)(2 * n)), "chouts");
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  LLVMValueRef lp = LLVMBuildPointerCast(G->B, leaves, i64p, ""), op = LLVMBuildPointerCast(G->B, outs, i64p, "");
  for (int l = 0; l < nleaves; l++) {
    LLVMValueRef t[4];
    if (objuse[l]) cg_lua_objof(G, leaf[l], c->ops[0], &t[0], &t[1], &t[2]);
    else cg_lua_triple(G, leaf[l], 0, c->ops[0], &t[0], &t[1], &t[2]);
    t[0] = LLVMBuildZExt(G->B, t[0], G->i64, "");
    t[2] = LLVMBuildSExt(G->B, t[2], G->i64, "");
    t[3] = lhint[l] ? LLVMBuildPtrToInt(G->B, lhint[l], G->i64, "") : cg_i64(G, 0);
    for (int j = 0; j < 4; j++) {
      LLVMValueRef ix = cg_i64(G, 4 * l + j);
      LLVMBuildStore(G->B, t[j], LLVMBuildInBoundsGEP2(G->B, G->i64, lp, &ix, 1, ""));
    }
  }
  LLVMTypeRef ps[6] = { G->i8p, G->i8p, G->i32, G->i32, i64p, i64p };
  LLVMValueRef as[6] = { G->luaL, template(G, c, sref, event, flip, f), cg_i32(G, n), G->lbase, lp, op };
  cg_ccall(G, "kjit_lv_chain", G->i32, ps, as, 6);
  LLVMValueRef stag[n], sbits[n];
  for (int k = 0; k < n; k++) {
    LLVMValueRef it = cg_i64(G, 2 * k), ib = cg_i64(G, 2 * k + 1);
    stag[k] = LLVMBuildTrunc(G->B, LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, op, &it, 1, ""), ""),
                             G->i8, "");
    sbits[k] = LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, op, &ib, 1, ""), "");
    if (iscmp(c->ops[k])) stag[k] = LLVMBuildICmp(G->B, LLVMIntNE, stag[k], LLVMConstInt(G->i8, 0, 0), "");
    if (isnativemember(G->sp, c->ops[k])) sbits[k] = LLVMBuildBitCast(G->B, sbits[k], G->f64, "");   /* (a float) */
  }
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  /* the join: each version's values and the call's */
  LLVMBasicBlockRef from[3] = { send, fend[0], nv > 1 ? fend[1] : NULL };
  LLVMValueRef tps[n], bps[n];
  for (int k = 0; k < n; k++) {   /* (the phis first: cg_lua_slot may emit) */
    if (iswrite(c->ops[k])) continue;
    if (isnativemember(G->sp, c->ops[k])) {   /* a native float */
      LLVMValueRef dp = LLVMBuildPhi(G->B, G->f64, "");
      LLVMValueRef dv[3] = { sbits[k], fval[0][k], nv > 1 ? fval[1][k] : NULL };
      LLVMAddIncoming(dp, dv, from, (unsigned)(1 + nv));
      tps[k] = dp;
      continue;
    }
    if (iscmp(c->ops[k])) {
      LLVMValueRef cp = LLVMBuildPhi(G->B, G->i1, "");
      LLVMValueRef cv[3] = { stag[k], fval[0][k], nv > 1 ? fval[1][k] : NULL };   /* (the comparison's 0 or 1) */
      LLVMAddIncoming(cp, cv, from, (unsigned)(1 + nv));
      tps[k] = cp;
      continue;
    }
    LLVMValueRef tp = LLVMBuildPhi(G->B, G->i8, ""), bp = LLVMBuildPhi(G->B, G->i64, "");
    LLVMValueRef tv[3] = { stag[k], ftag[0][k], nv > 1 ? ftag[1][k] : NULL };
    LLVMValueRef bv[3] = { sbits[k], fbits[0][k], nv > 1 ? fbits[1][k] : NULL };
    LLVMAddIncoming(tp, tv, from, (unsigned)(1 + nv));
    LLVMAddIncoming(bp, bv, from, (unsigned)(1 + nv));
    tps[k] = tp;
    bps[k] = bp;
  }
  for (int k = 0; k < n; k++)
    if (isnativemember(G->sp, c->ops[k])) G->vals[c->ops[k]->id] = cg_mk(TY(T_F64), tps[k]);
    else if (iscmp(c->ops[k])) G->vals[c->ops[k]->id] = cg_mk(TY(T_BOOL), tps[k]);
    else if (!iswrite(c->ops[k]))
      G->vals[c->ops[k]->id] = cg_lua_mk(G, cg_lua_slot(G, c->ops[k]), tps[k], bps[k]);
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
