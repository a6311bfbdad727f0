/*
** cg_lua.c: Lua values (T_LUA) in the code generator: frames of stack
** slots, and every operation on a Lua value as a call of a run-time
** helper (runtime/luavalue.c, whose head says how values are anchored and
** why the helpers may longjmp).
**
** A T_LUA CgVal is { v: i32, the absolute Lua stack index of its slot;
** flag: i8 tag; dims[0]: i64 bits } (cg.h). A number read from a table
** stays in registers: tag 1 (an integer in bits) or 2 (a float's bits),
** and its slot is then not written (stale); tag 0: the value is in the
** slot. Arithmetic and comparisons on numbers run inline (cg_num.c's own
** rules, the interpreter's); anything else calls the helpers with slots
** (a number boxed into a scratch slot first). A specialization that has values of Lua type opens a
** frame on entry (cg_lua_begin): L is loaded from err (KErr.L, set by
** every dispatcher), base = kjit_lv_open(L, nslots). Slots, by IR value:
**   - a parameter: the caller's slot (never written here);
**   - an operation giving a Lua value (index, getfield, arithmetic on a
**     Lua value, a constructor): a slot of its own, overwritten each time
**     the operation runs (a loop reuses it, as the VM reuses a register);
**   - a phi: a slot of its own plus a spare; each edge into its block
**     boxes or copies the incoming value into it (the spare breaks cycles
**     among the phis of one block: `a, b = b, a`);
**   - a call of a compiled function giving Lua values: one slot per
**     result, which the callee fills before it closes its own frame (the
**     caller passes the slot index in the result pointer);
**   - five scratch slots at the end, where numbers, booleans and
**     constant strings are boxed for one API call (a call of a function
**     value boxes up to four arguments in them: cg_callvalue.c put_args).
** A call's result slots are cleared after the results' last use in their
** block (plan_kills: the collector then frees what the interpreter frees).
** The frame is closed when the function returns normally; on an error
** return the dispatcher raises, which discards the whole stack above its
** own frame.
**
** Errors kjit can foresee (indexing a nil, arithmetic on a table without
** __add, ordering a table and a number, a non-number where a math
** function wants one) come back from the helpers as a code; the cold path
** raises Lua's message with this line and Lua's description of the
** operand (cg_varinfo: "(field 'x')", "(local 't')").
*/
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/cg.h"
#include "ir/ir_varinfo.h"
#include "codegen/kcg.h"
#include "runtime/luavalue.h"
#include "host/lua_stack.h"
#include "lua.h"

#define NSCRATCH 5
/* slots: larger frames are opened by a call. A function without loops
** opens its frame at each of its many calls, and a call of kjit_lv_open
** costs more than the stores (array3d's method and iterator, 1.7M calls
** each, 24 and 20 slots: 85 and 54 instructions a call, 7% of the run);
** one with loops opens it once for all of them, and the stores cost
** compile (SciMark SOR and FFT: 2-3% more instructions with 32) */
#define INLINE_FRAME_MAX 16
#define INLINE_FRAME_MAX_NOLOOPS 32

/* ---- Which specializations use Lua values ----------------------------------- */

/* Is v an `==` of two kjit arrays or frozen tables that the typer left to
** run time (ir_type.c t_compare_ident)? Both are boxed (the arrays'
** userdata) and compared by cg_lua_compare as Lua compares them. */
int cg_lua_eq_ident(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_EQ || sp->consts[v->id].kind != T_UNKNOWN) return 0;
  Type a = sp->types[v->args[0]->id], b = sp->types[v->args[1]->id];
  if (a.kind != b.kind) return 0;
  /* (two records, p[i] == p[j], compare their fields: cg_compare) */
  return a.kind == T_TABLE || (a.kind == T_BUF && a.ndim >= 1 && b.ndim >= 1);
}

/* How many of the first upto arguments of call v to compiled callee c are
** frozen tables (T_TABLE) that c takes as Lua values (ir_type.c t_call):
** each is boxed into a slot of the call's own, after its results' slots. */
static int boxed_args(const KtySpec *sp, const KirInsn *v, const KtySpec *c, int upto) {
  int n = 0;
  for (int i = 0; i < upto && i < c->nparams && i + 1 < v->nargs; i++)
    n += c->args[i].kind == T_LUA && sp->types[v->args[i + 1]->id].kind == T_TABLE;
  return n;
}
static int has_lua_rets(const KtySpec *c) {
  for (int r = 0; r < c->nret; r++) if (c->rets[r].kind == T_LUA) return 1;
  return 0;
}

int cg_lua_spec_uses(const KtySpec *sp) {
  for (int i = 0; i < sp->nargs; i++) if (sp->args[i].kind == T_LUA) return 1;
  for (int r = 0; r < sp->nret; r++) if (sp->rets[r].kind == T_LUA) return 1;   /* a boxed result */
  for (int b = 0; b < sp->ir->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = sp->ir->blocks[b];
    for (int i = 0; i < blk->nphis; i++) if (sp->types[blk->phis[i]->id].kind == T_LUA) return 1;
    for (int i = 0; i < blk->ninsns; i++) {
      const KirInsn *v = blk->insns[i];
      if (sp->types[v->id].kind == T_LUA) return 1;
      if (v->op == KIR_SETUPVAL) return 1;   /* written through (cg_callvalue.c) */
      if (cg_lua_eq_ident(sp, v)) return 1;   /* a == b of arrays: scratch slots */
      if (v->op == KIR_SETFIELD && sp->liveref && sp->liveref[v->args[0]->id]) return 1;   /* a global */
      /* a callee's results of Lua type land in slots of this frame, also
      ** where no value of this function shows their type (return f(x)) */
      const KtySpec *c = v->op == KIR_CALL ? sp->callees[v->id] : NULL;
      for (int r = 0; c && r < c->nret; r++) if (c->rets[r].kind == T_LUA) return 1;
      if (c && boxed_args(sp, v, c, c->nparams)) return 1;   /* a frozen table passed on */
    }
  }
  return 0;
}

/* ---- Helpers' calls ---------------------------------------------------------- */

static LLVMValueRef call(CG *G, const char *name, LLVMTypeRef ret, LLVMTypeRef *ptys,
                         LLVMValueRef *args, unsigned n) {
  return cg_ccall(G, name, ret ? ret : LLVMVoidTypeInContext(G->C), ptys, args, n);
}

/* Slot k's stack index, computed once in the entry block (after
** kjit_lv_open), so that it dominates every use. */
static LLVMValueRef slot_at(CG *G, int k) {
  if (k < 0 || k >= G->nlslots) cg_error(G, NULL, "internal error: Lua slot %d of %d", k, G->nlslots);
  if (G->lslotv[k] == NULL) {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(G->C);
    LLVMPositionBuilderAtEnd(b, G->lentry ? G->lentry : G->allocas);
    G->lslotv[k] = LLVMBuildAdd(b, G->lbase, cg_i32(G, k), "slot");
    LLVMDisposeBuilder(b);
  }
  return G->lslotv[k];
}

/* A constant C string (len bytes and a NUL) for the helpers. */
static LLVMValueRef cstr(CG *G, const char *s, size_t len) {
  LLVMValueRef init = LLVMConstStringInContext(G->C, s, (unsigned)len, 0);
  LLVMValueRef g = LLVMAddGlobal(G->M, LLVMTypeOf(init), "kcg.lstr");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  return LLVMBuildPointerCast(G->B, g, G->i8p, "");
}

static LLVMValueRef text(CG *G, const char *s) { return cstr(G, s, strlen(s)); }

static LLVMValueRef lt_on(CG *G);
static LLVMValueRef slot_here(CG *G, int k);

/* ---- Where inline paths pay ------------------------------------------------------ */

/* The inline paths (a frame opened and closed by stores: open_inline,
** cg_lua_end; a table access's probe of the table's layout: inline_get,
** inline_set) make a run faster and a compile longer: each is a few
** blocks more for LLVM's passes, instruction selection and register
** allocation. They pay only where they run many times. Code that runs once
** a compile gets the calls of the helpers instead, the same helpers the
** inline paths fall back to (so the same behaviour, as with
** KJIT_NO_INLINE_TABLES): a program's main chunk outside its loops and the
** functions only it calls from there (bench/programs/partialsums.lua's
** main chunk and its `pr`: 37M instructions of compile for code that ran
** once).
**
** A specialization is hot (G->lhot) when it may run many times:
**  - a root that is not a main chunk (a function called from Lua, maybe
**    in a loop);
**  - one that no call of this module calls (compiled code calls the
**    specializations of a module only by its direct calls: cg_func.c's
**    calls of G->funcs; function literals called through values run
**    other compiles' code);
**  - one in a cycle of calls (recursion);
**  - one called from inside a loop, or from anywhere in a hot one.
** The rest is cold: a main chunk compiled as a root (kjit.jit(loadfile(p)),
** run once a call), and what only cold code calls outside its loops. In
** cold code, accesses inside loops stay inline; the others and the frame
** call the helpers. A cold function without loops is also marked optnone
** (cg_lua_begin): LLVM's fast instruction selection and none of its
** machine passes, as for the first tier, for code that runs once
** (partialsums: its nine specializations of `pr`; with the helpers'
** calls, 574.6M -> 503.4M instructions for the whole run, its compile
** 217.8M -> 146.7M). So is a cold function whose every innermost loop
** calls a compiled function that loops or recurses, or calls through a
** value (work_in_callees): binary-trees' main chunk, whose loops build and
** check trees through its two recursive functions, was 60% of the
** program's code generation (compile 244M -> 173M instructions, the run's
** own unchanged); a main chunk whose loops call methods (vectors, perlin,
** array3d, ray) saves more time in its compile than its run loses. A main
** chunk called many times through kjit.jit gets the same answers, a
** little slower. */

/* Does c reach `to` through calls (seen: a byte a specialization)? */
static int reaches(KtySession *S, const KtySpec *c, const KtySpec *to, uint8_t *seen) {
  if (c->index < 0 || c->index >= S->nspecs || seen[c->index]) return 0;
  seen[c->index] = 1;
  KirFunc *f = c->ir;
  for (int b = 0; b < f->nblocks; b++) {
    if (!c->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      const KtySpec *d = c->callees ? c->callees[blk->insns[i]->id] : NULL;
      if (d && (d == to || reaches(S, d, to, seen))) return 1;
    }
  }
  return 0;
}

static void hot_plan(CG *G) {
  KtySession *S = G->S;
  int n = S->nspecs;
  uint8_t *hot = cg_zalloc(G, (size_t)n + 1), *called = cg_zalloc(G, (size_t)n + 1);
  uint8_t *seen = cg_zalloc(G, (size_t)n + 1);
  for (int i = 0; i < n; i++) {   /* who is called here at all */
    KtySpec *s = S->specs[i];
    if (!s->used || s->callees == NULL) continue;
    for (int b = 0; b < s->ir->nblocks; b++) {
      if (!s->live[b]) continue;
      KirBlock *blk = s->ir->blocks[b];
      for (int k = 0; k < blk->ninsns; k++) {
        const KtySpec *c = s->callees[blk->insns[k]->id];
        if (c && c->index >= 0 && c->index < n) called[c->index] = 1;
      }
    }
  }
  for (int i = 0; i < n; i++) {
    KtySpec *s = S->specs[i];
    const KbcProto *p = s->ir->proto;
    int mainchunk = p && p->linedefined == 0 && p->lastlinedefined == 0;
    memset(seen, 0, (size_t)n + 1);
    hot[i] = (s->root && !mainchunk) || (!s->root && !called[i]) ||
             reaches(S, s, s, seen);
  }
  for (int changed = 1; changed;) {   /* callees of hot code and of loops */
    changed = 0;
    for (int i = 0; i < n; i++) {
      KtySpec *s = S->specs[i];
      if (!s->used || s->callees == NULL) continue;
      for (int b = 0; b < s->ir->nblocks; b++) {
        if (!s->live[b]) continue;
        KirBlock *blk = s->ir->blocks[b];
        if (!hot[i] && blk->loop == NULL) continue;
        for (int k = 0; k < blk->ninsns; k++) {
          const KtySpec *c = s->callees[blk->insns[k]->id];
          if (c && c->index >= 0 && c->index < n && !hot[c->index]) hot[c->index] = changed = 1;
        }
      }
    }
  }
  G->lhot = hot;
}

/* Is the work of sp's loops done in callees: does every innermost loop
** (one holding no other) make a direct call of a compiled function that
** loops or recurses, or a call through a value (a method, a function
** value, a generic for's iterator)? Then the loops' own code matters
** little next to the callees', and a cold sp gets LLVM's fast code
** generation (cg_lua_begin). A call through a value counts since
** 2026-11-28: it goes through the Lua API, some 700 to 1,700 instructions
** a call, and the compile it saves pays in time even where the run's
** count grows (bench/programs/array3d.lua's main loop, 1.7M iterations,
** ran 113M instructions longer compiled optnone for 33M less compile, but
** no slower: 0.231 -> 0.227 s, medians of 11 interleaved runs; vectors
** 0.288 -> 0.266 s, perlin 0.250 -> 0.244, ray 0.736 -> 0.730: the code
** generator's instructions take longer each than the run's). */
static int work_in_callees(CG *G, const KtySpec *sp) {
  const KirFunc *f = sp->ir;
  KtySession *S = G->S;
  uint8_t *seen = cg_zalloc(G, (size_t)S->nspecs + 1);
  for (int l = 0; l < f->nloops; l++) {
    const KirLoop *lp = f->loops[l];
    int inner = 1, heavy = 0;
    for (int m = 0; m < f->nloops && inner; m++) inner = f->loops[m]->parent != lp;
    if (!inner) continue;
    for (int b = 0; b < lp->nblocks && !heavy; b++) {
      const KirBlock *blk = lp->blocks[b];
      if (!sp->live[blk->id]) continue;
      for (int i = 0; i < blk->ninsns && !heavy; i++) {
        if (kty_calls_value(sp, blk->insns[i])) { heavy = 1; break; }   /* a method, a value */
        const KtySpec *c = blk->insns[i]->op == KIR_CALL ? sp->callees[blk->insns[i]->id] : NULL;
        if (c == NULL) continue;
        memset(seen, 0, (size_t)S->nspecs + 1);
        heavy = c->ir->nloops > 0 || reaches(S, c, c, seen);
      }
    }
    if (!heavy) return 0;
  }
  return 1;
}

/* Is the function being emitted hot (see above)? */
static int spec_hot(CG *G) {
  if (G->lhot == NULL) hot_plan(G);
  return G->sp->index < 0 || G->sp->index >= G->S->nspecs || G->lhot[G->sp->index];
}

/* Does v run often enough for its inline path: in a hot function, or in a loop? */
static int hot_at(CG *G, const KirInsn *v) {
  return (v->block && v->block->loop) || spec_hot(G);
}
int cg_lua_hot_at(CG *G, const KirInsn *v) { return hot_at(G, v); }

/* ---- Frames -------------------------------------------------------------------- */

/* The stack layout for inline frames (host/lua_stack.h), NULL where the
** probe disagreed or with KJIT_NO_INLINE_TABLES (measuring: the C paths
** only). (Kernels and parallel bodies never have frames: no L there.) */
static const KlsFrameLayout *frame_layout(CG *G) {
  (void)G;
  if (getenv("KJIT_NO_INLINE_TABLES")) return NULL;
  return kls_frame_layout();
}

/* kls_on (host/lua_stack.h): the frame layout agreed with the running Lua,
** so compiled code may open frames and write its slots itself. */
static LLVMValueRef kls_on_g(CG *G) {
  LLVMValueRef g = LLVMGetNamedGlobal(G->M, "kls_on");
  if (g == NULL) g = LLVMAddGlobal(G->M, G->i32, "kls_on");
  return g;
}

static LLVMValueRef ld(CG *G, LLVMValueRef base, int off, LLVMTypeRef ty) {
  LLVMValueRef o = cg_i64(G, off);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, G->i8, base, &o, 1, "");
  return LLVMBuildLoad2(G->B, ty, LLVMBuildPointerCast(G->B, p, LLVMPointerType(ty, 0), ""), "");
}

/* At the builder's block (a join): the phi of a from block ab and b from
** block bb (a fast path and its helper's slow path, most often). */
static LLVMValueRef phi2(CG *G, LLVMTypeRef t, const char *name, LLVMValueRef a,
                         LLVMBasicBlockRef ab, LLVMValueRef b, LLVMBasicBlockRef bb) {
  LLVMValueRef phi = LLVMBuildPhi(G->B, t, name);
  LLVMValueRef vs[2] = { a, b };
  LLVMBasicBlockRef bs[2] = { ab, bb };
  LLVMAddIncoming(phi, vs, bs, 2);
  return phi;
}

/* The frame opened inline, as host/lua_stack.h kls_open does (the top
** moved up over n slots set to nil, where the C function's reserved stack
** has room for them and LUA_MINSTACK more), else by kjit_lv_open (no room,
** or kls_on off where this code runs); the frame's first index. A
** compiled call costs the interpreter's kind of work then: a few stores,
** no call into the Lua API. L: the Lua state (G->luaL, or an entry
** wrapper's own). The builder is left in the block where the entry code
** goes on. */
static LLVMValueRef open_inline(CG *G, LLVMValueRef L, const KlsFrameLayout *y, int n) {
  LLVMBasicBlockRef chk = cg_bb(G, "lopen"), fast = cg_bb(G, "lopenfast"),
                    slow = cg_bb(G, "lopenslow"), join = cg_bb(G, "lopened");
  LLVMValueRef on = LLVMBuildLoad2(G->B, G->i32, kls_on_g(G), "");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntNE, on, cg_i32(G, 0), ""), chk, slow));
  LLVMPositionBuilderAtEnd(G->B, chk);
  LLVMValueRef top = ld(G, L, y->state_top, G->i8p);
  LLVMValueRef ci = ld(G, L, y->state_ci, G->i8p);
  LLVMValueRef citop = ld(G, ci, y->ci_top, G->i8p);
  LLVMValueRef room = LLVMBuildSub(G->B, LLVMBuildPtrToInt(G->B, citop, G->i64, ""),
                                   LLVMBuildPtrToInt(G->B, top, G->i64, ""), "");
  LLVMValueRef need = cg_i64(G, (int64_t)(n + y->minstack) * y->slot_size);
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSGE, room, need, ""), fast, slow));
  LLVMPositionBuilderAtEnd(G->B, fast);
  /* the n slots set to nil (tag 0, KLS_NIL) whole, value and tag: a
  ** memset the code generator makes a few wide stores (array3d's method,
  ** 24 slots: 12 stores a call, not 24) */
  LLVMBuildMemSet(G->B, top, LLVMConstInt(G->i8, KLS_NIL, 0), cg_i64(G, (int64_t)n * y->slot_size), 8);
  LLVMValueRef o = cg_i64(G, (int64_t)n * y->slot_size);
  LLVMValueRef ntop = LLVMBuildInBoundsGEP2(G->B, G->i8, top, &o, 1, "");
  o = cg_i64(G, y->state_top);
  LLVMValueRef tp = LLVMBuildInBoundsGEP2(G->B, G->i8, L, &o, 1, "");
  LLVMBuildStore(G->B, ntop, LLVMBuildPointerCast(G->B, tp, LLVMPointerType(G->i8p, 0), ""));
  LLVMValueRef func = ld(G, ci, y->ci_func, G->i8p);
  LLVMValueRef d = LLVMBuildSub(G->B, LLVMBuildPtrToInt(G->B, top, G->i64, ""),
                                LLVMBuildPtrToInt(G->B, func, G->i64, ""), "");
  LLVMValueRef ffirst = LLVMBuildTrunc(G->B, LLVMBuildExactSDiv(G->B, d, cg_i64(G, y->slot_size), ""),
                                       G->i32, "");
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, slow);
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { L, cg_i32(G, n) };
  LLVMValueRef sfirst = call(G, "kjit_lv_open", G->i32, ps, as, 2);
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, join);
  return phi2(G, G->i32, "lbase", ffirst, fast, sfirst, slow);
}

/* An entry wrapper's frame of n slots (cg_entry.c: the slots of its
** results of Lua type), opened as a function's own: inline where the
** probe agreed and the root is hot (spec_hot: not a main chunk's entry),
** else by kjit_lv_open. A native call of a generic for's
** iterator (array3d's, 1.7M calls) opened it by the helper, 54
** instructions a call. */
LLVMValueRef cg_lua_open_at(CG *G, LLVMValueRef L, int n) {
  const KlsFrameLayout *y = frame_layout(G);
  if (y != NULL && spec_hot(G)) return open_inline(G, L, y, n);   /* (G->sp: the root) */
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { L, cg_i32(G, n) };
  return call(G, "kjit_lv_open", G->i32, ps, as, 2);
}

/* The address of the table in slot k (0 for anything else), as
** kjit_lv_ptr gives it (runtime/luavalue.c): read in place where kls_on
** holds when this runs (L->ci->func[k], as host/lua_stack.h finds it),
** else by the helper (also in a cold root's entry, as open_at). For an
** entry wrapper's table arguments (cg_entry.c:
** their addresses are the callee's hints), which a native call of a
** method makes at each call. */
LLVMValueRef cg_lua_table_at(CG *G, LLVMValueRef L, LLVMValueRef k) {
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { L, k };
  const KlsFrameLayout *y = frame_layout(G);
  if (y == NULL || !spec_hot(G)) return call(G, "kjit_lv_ptr", G->i64, ps, as, 2);
  LLVMBasicBlockRef fast = cg_bb(G, "tabat"), slow = cg_bb(G, "tabatslow"),
                    join = cg_bb(G, "tabatdone");
  LLVMValueRef on = LLVMBuildLoad2(G->B, G->i32, kls_on_g(G), "");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntNE, on, cg_i32(G, 0), ""), fast, slow));
  LLVMPositionBuilderAtEnd(G->B, fast);
  LLVMValueRef func = ld(G, ld(G, L, y->state_ci, G->i8p), y->ci_func, G->i8p);
  LLVMValueRef o = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, k, G->i64, ""), cg_i64(G, y->slot_size), "");
  LLVMValueRef sv = LLVMBuildInBoundsGEP2(G->B, G->i8, func, &o, 1, "");
  LLVMValueRef ist = LLVMBuildICmp(G->B, LLVMIntEQ, ld(G, sv, y->slot_tt, G->i8),
                                   LLVMConstInt(G->i8, KLS_TABLE, 0), "");
  LLVMValueRef fa = LLVMBuildSelect(G->B, ist, ld(G, sv, 0, G->i64), cg_i64(G, 0), "");
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, slow);
  LLVMValueRef sa = call(G, "kjit_lv_ptr", G->i64, ps, as, 2);
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, join);
  return phi2(G, G->i64, "tab", fa, fast, sa, slow);
}

/* ---- Dead call results --------------------------------------------------------- */

/* Slots are not shared (cg_lua_begin): an operation's slot holds its last
** value until the operation runs again or the frame closes, and the
** collector marks every slot below the top. A tree built by a call in a
** program's main chunk and used once (binary-trees' stretch tree, 2^17
** tables) would stay reachable for the whole run: the interpreter's
** collections at OP_NEWTABLE set the top just above the register written,
** so its dead registers are never marked. Kept alive, such garbage makes
** every collection cycle see more live memory, so cycles come rarer
** (setpause: the next threshold is twice the live estimate) and the heap
** grows: binary-trees 15 ran 281 cycles against the interpreter's 877,
** with 3x the heap, and malloc and free slowed on the larger heap.
**
** So the slots of a call's results are cleared (set to nil) right after
** their last use, when every use is an instruction of the call's own
** block (not a phi of a successor, not the terminator: a returned value
** is copied out and the frame closes anyway), unless the block returns
** with no call after that use. Only calls: a call costs far
** more than the clearing, and what a callee builds is what gets large; an
** operation in a loop overwrites its own slot each iteration. Clearing a
** slot is never needed for correctness, so where anything could still read
** the slot (a value whose CgVal names the same slot: cg_lua_kill_after
** checks) it is left alone. */
/* A call (or vararg) using the results and giving all of its own (-> all)
** may itself be emitted only where those are used: h(table.unpack(t, 1, t.n)) makes the unpack
** call at h's (its results counted when it runs: cg_vararg.c), and t must
** still be there then. So the uses of such a user count as uses too, in
** the same block (else nothing is cleared: 0). */
static int late_uses(const KirBlock *blk, const KirInsn *x, const int *pos, int *last, int depth) {
  if ((x->op != KIR_CALL && x->op != KIR_VARARG) || x->aux >= 0) return 1;   /* (all results only) */
  if (depth > 8) return 0;
  for (int u = 0; u < x->nusers; u++) {
    const KirInsn *y = x->users[u];
    if (y->block != blk || y->op == KIR_PHI || y == blk->term) return 0;
    if (pos[y->id] > *last) *last = pos[y->id];
    if (!late_uses(blk, y, pos, last, depth + 1)) return 0;
  }
  return 1;
}

static void plan_kills(CG *G, KtySpec *sp) {
  KirFunc *f = sp->ir;
  G->lkillhead = G->lkillnext = NULL;
  G->lkilln = NULL;
  if (getenv("KJIT_NO_SLOT_KILLS")) return;   /* (measuring: slots kept as before) */
  int *pos = NULL;
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      KirInsn *c = blk->insns[i];
      if (c->op != KIR_CALL || G->lslot[c->id] < 0) continue;
      int nk;
      KtySpec *callee = sp->callees[c->id];
      if (callee) nk = callee->nret;
      else {
        int toret = kty_callvalue_toret(sp, c), toc = kty_callvalue_tocallee(sp, c);
        if (toc > toret) toret = toc;
        nk = kty_calls_value(sp, c) && (c->aux > 1 || toret > 1) ? (toret > c->aux ? toret : c->aux) : 1;
      }
      if (pos == NULL) {
        pos = cg_zalloc(G, sizeof(int) * (size_t)f->ninsns);
        for (int bb = 0; bb < f->nblocks; bb++)
          for (int k = 0; k < f->blocks[bb]->ninsns; k++) pos[f->blocks[bb]->insns[k]->id] = k;
      }
      int last = i, ok = 1;
      for (int u = 0; u < c->nusers && ok; u++) {
        const KirInsn *w = c->users[u];
        int fam = w->op == KIR_RESULT && w->args[0] == c;
        for (int v = 0; v < (fam ? w->nusers : 1) && ok; v++) {
          const KirInsn *x = fam ? w->users[v] : w;
          if (x->block != blk || x->op == KIR_PHI || x == blk->term) ok = 0;
          else if (pos[x->id] > last) last = pos[x->id];
          if (ok) ok = late_uses(blk, x, pos, &last, 0);
        }
        if (fam && pos[w->id] > last) last = pos[w->id];
      }
      if (!ok) continue;
      /* a block that returns without another call first: the frame closes
      ** before anything much can run (pr(fmt, x)'s io.write(string.format
      ** (...)) in partialsums), so the clearing would only cost code */
      if (blk->term && blk->term->op == KIR_RET) {
        int later = 0;
        for (int k = last + 1; k < blk->ninsns && !later; k++) later = blk->insns[k]->op == KIR_CALL;
        if (!later) continue;
      }
      if (G->lkillhead == NULL) {
        G->lkillhead = cg_zalloc(G, sizeof(KirInsn *) * (size_t)f->ninsns);
        G->lkillnext = cg_zalloc(G, sizeof(KirInsn *) * (size_t)f->ninsns);
        G->lkilln = cg_zalloc(G, sizeof(int) * (size_t)f->ninsns);
      }
      const KirInsn *at = blk->insns[last];
      G->lkillnext[c->id] = G->lkillhead[at->id];
      G->lkillhead[at->id] = c;
      G->lkilln[c->id] = nk;
    }
  }
}

/* Does a use of the call's results (x, in its block) hold one of their
** slots as its own value (a value passed through)? Then the slot stays. */
static int aliases(CG *G, const KirInsn *x, const KirInsn *c) {
  CgVal w = G->vals[x->id];
  if (w.t.kind != T_LUA || w.v == NULL) return 0;
  if (G->vals[c->id].t.kind == T_LUA && G->vals[c->id].v == w.v) return 1;
  for (int u = 0; u < c->nusers; u++) {
    const KirInsn *r = c->users[u];
    if (r->op == KIR_RESULT && r->args[0] == c && G->vals[r->id].t.kind == T_LUA &&
        G->vals[r->id].v == w.v)
      return 1;
  }
  return 0;
}

/* The call's result r as compiled code holds it (NULL: not known here). */
static const CgVal *result_val(CG *G, const KirInsn *c, int r) {
  if (r == 0) return &G->vals[c->id];
  for (int u = 0; u < c->nusers; u++) {
    const KirInsn *w = c->users[u];
    if (w->op == KIR_RESULT && w->args[0] == c && w->aux == r) return &G->vals[w->id];
  }
  return NULL;
}

void cg_lua_kill_after(CG *G, const KirInsn *u) {
  if (G->lkillhead == NULL || G->lbase == NULL) return;
  for (const KirInsn *c = G->lkillhead[u->id]; c; c = G->lkillnext[c->id]) {
    if (G->spill && G->spill[c->id][0]) continue;   /* (read after a peeled loop) */
    int keep = 0;
    for (int k = 0; k < c->nusers && !keep; k++) {
      const KirInsn *w = c->users[k];
      if (w->op == KIR_RESULT && w->args[0] == c) {
        if (G->spill && G->spill[w->id][0]) keep = 1;
        for (int j = 0; j < w->nusers && !keep; j++) keep = aliases(G, w->users[j], c);
      } else {
        keep = aliases(G, w, c);
      }
    }
    if (keep) continue;
    int first = G->lslot[c->id], n = G->lkilln[c->id];
    const KlsFrameLayout *y = frame_layout(G);
    if (y == NULL) {
      LLVMTypeRef ps[2] = { G->i8p, G->i32 };
      for (int k = 0; k < n; k++) {
        LLVMValueRef as[2] = { G->luaL, slot_here(G, first + k) };
        call(G, "kjit_lv_setnil", NULL, ps, as, 2);
      }
      continue;
    }
    /* the tags stored in place (host/lua_stack.h: a stack slot needs no
    ** barrier), where kls_on holds when this runs and the result is in its
    ** slot (tag 0: a number, a boolean or nil stays in registers, the slot
    ** unwritten: ItemCheck's result); else left as they are */
    for (int k = 0; k < n; k++) {
      const CgVal *x = result_val(G, c, k);
      LLVMValueRef tag = x && x->t.kind == T_LUA ? x->flag : NULL;
      if (tag && LLVMIsAConstantInt(tag) && LLVMConstIntGetZExtValue(tag) != 0) continue;
      LLVMBasicBlockRef kill = cg_bb(G, "lkill"), done = cg_bb(G, "lkilled");
      LLVMValueRef on = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildLoad2(G->B, G->i32, kls_on_g(G), ""),
                                      cg_i32(G, 0), "");
      if (tag) on = LLVMBuildAnd(G->B, on, LLVMBuildICmp(G->B, LLVMIntEQ, tag,
                                                          LLVMConstInt(LLVMTypeOf(tag), 0, 0), ""), "");
      LLVMBuildCondBr(G->B, on, kill, done);
      LLVMPositionBuilderAtEnd(G->B, kill);
      LLVMValueRef ci = ld(G, G->luaL, y->state_ci, G->i8p);
      LLVMValueRef func = ld(G, ci, y->ci_func, G->i8p);
      LLVMValueRef o = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, slot_here(G, first + k), G->i64, ""),
                                    cg_i64(G, y->slot_size), "");
      o = LLVMBuildAdd(G->B, o, cg_i64(G, y->slot_tt), "");
      LLVMBuildStore(G->B, LLVMConstInt(G->i8, 0, 0), LLVMBuildInBoundsGEP2(G->B, G->i8, func, &o, 1, ""));
      LLVMBuildBr(G->B, done);
      LLVMPositionBuilderAtEnd(G->B, done);
    }
  }
}

void cg_lua_begin(CG *G, KtySpec *sp) {
  KirFunc *f = sp->ir;
  G->lkillhead = G->lkillnext = NULL;
  G->lkilln = NULL;
  G->lentry = NULL;
  G->nlive = 0;
  G->lslot = NULL;
  G->luaL = NULL;
  G->lbase = NULL;
  G->lton = NULL;
  G->nhints = 0;
  G->nlslots = 0;
  G->nlviews = 0;
  G->lviewof = NULL;
  G->chainof = NULL;
  G->chains = NULL;
  G->chainflt = NULL;
  if (!cg_lua_spec_uses(sp)) return;
  G->lslot = cg_zalloc(G, sizeof(int) * (size_t)f->ninsns);
  int n = 0;
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->nphis; i++) {
      KirInsn *p = blk->phis[i];
      G->lslot[p->id] = -1;
      if (sp->types[p->id].kind == T_LUA) { G->lslot[p->id] = n; n += 2; }
    }
    for (int i = 0; i < blk->ninsns; i++) {
      KirInsn *v = blk->insns[i];
      G->lslot[v->id] = -1;
      KtySpec *c = v->op == KIR_CALL ? sp->callees[v->id] : NULL;
      if (c) {   /* a compiled callee's results of Lua type land here, then
                    its frozen tables' boxes (cg_lua_arg_slot) */
        int any = has_lua_rets(c), nb = boxed_args(sp, v, c, c->nparams);
        if (any || nb) { G->lslot[v->id] = n; n += (any ? c->nret : 0) + nb; }
        continue;
      }
      if (v->op == KIR_PARAM || v->op == KIR_RESULT) continue;
      int toret = kty_callvalue_toret(sp, v);   /* `return t.f(x)`: up to this many */
      int toc = kty_callvalue_tocallee(sp, v);   /* g(t.f(x)): g's parameters */
      if (toc > toret) toret = toc;
      if (kty_calls_value(sp, v) && (v->aux > 1 || toret > 1)) {
        G->lslot[v->id] = n;   /* lua_call's results (cg_callvalue.c) */
        n += toret > v->aux ? toret : v->aux;
        continue;
      }
      if (sp->types[v->id].kind == T_LUA) G->lslot[v->id] = n++;
    }
  }
  G->nlslots = n + NSCRATCH;
  plan_kills(G, sp);
  cg_chain_plan(G, sp);   /* arithmetic checked once per chain (cg_chain.c) */
  /* L from the dispatcher's KErr (a field the generators do not mirror) */
  LLVMValueRef e8 = LLVMBuildPointerCast(G->B, G->err, G->i8p, "");
  LLVMValueRef off = cg_i64(G, (int64_t)offsetof(KErr, L));
  LLVMValueRef lp = LLVMBuildInBoundsGEP2(G->B, G->i8, e8, &off, 1, "");
  lp = LLVMBuildPointerCast(G->B, lp, LLVMPointerType(G->i8p, 0), "");
  G->luaL = LLVMBuildLoad2(G->B, G->i8p, lp, "L");
  const KlsFrameLayout *y = frame_layout(G);
  /* inline for small frames only (a recursive function's: binary-trees'
  ** have 7 and 12 slots): a program's main chunk, with dozens, runs once,
  ** and its stores and blocks would cost more to compile than they save */
  if (!spec_hot(G) && (f->nloops == 0 || work_in_callees(G, sp))) {
    /* a function that runs once, without loops or with loops whose work
    ** is in the callees (work_in_callees): LLVM's fast path for it (fast
    ** instruction selection, no machine optimizations), as for the first
    ** tier (backend/cpu.c); optnone needs noinline */
    unsigned ni = LLVMGetEnumAttributeKindForName("noinline", 8);
    unsigned on = LLVMGetEnumAttributeKindForName("optnone", 7);
    LLVMAddAttributeAtIndex(G->fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(G->C, ni, 0));
    LLVMAddAttributeAtIndex(G->fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(G->C, on, 0));
  }
  if (y && G->nlslots <= (f->nloops == 0 ? INLINE_FRAME_MAX_NOLOOPS : INLINE_FRAME_MAX) &&
      spec_hot(G)) {
    G->lbase = open_inline(G, G->luaL, y, G->nlslots);
    G->lentry = LLVMGetInsertBlock(G->B);
  } else {
    LLVMTypeRef ps[2] = { G->i8p, G->i32 };
    LLVMValueRef as[2] = { G->luaL, cg_i32(G, G->nlslots) };
    G->lbase = call(G, "kjit_lv_open", G->i32, ps, as, 2);
  }
  /* kjit_lt_on once per call: it only ever goes from 0 to 1 (luatable.c's
  ** probe, at most once per process), and a call that saw 0 just takes
  ** the helpers throughout */
  G->lton = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildLoad2(G->B, G->i32, lt_on(G), "lton"),
                          cg_i32(G, 0), "");
  G->lslotv = cg_zalloc(G, sizeof(LLVMValueRef) * (size_t)G->nlslots);
  cg_lview_begin(G, sp);   /* (after the frame's calls: cg_luaview.c) */
}

static LLVMValueRef slot_ptr(CG *G, const KlsFrameLayout *y, LLVMValueRef k);

/* The shape of an operation done inline where kls_on holds when it runs
** (host/lua_stack.h: the frame layout agreed with the running Lua), else
** by its helper: kls_split branches (the helper's side cold) and leaves
** the builder in the inline block; kls_join, after the inline code, emits
** the helper's call and leaves the builder where both paths meet. */
typedef struct KlsSplit { LLVMBasicBlockRef slow, join; } KlsSplit;

static KlsSplit kls_split(CG *G, const char *fast_name, const char *slow_name, const char *join_name) {
  LLVMBasicBlockRef fast = cg_bb(G, fast_name);
  KlsSplit k = { cg_bb(G, slow_name), cg_bb(G, join_name) };
  LLVMValueRef on = LLVMBuildLoad2(G->B, G->i32, kls_on_g(G), "");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntNE, on, cg_i32(G, 0), ""), fast, k.slow));
  LLVMPositionBuilderAtEnd(G->B, fast);
  return k;
}

static void kls_join(CG *G, KlsSplit k, const char *helper, LLVMTypeRef *ps, LLVMValueRef *as, unsigned n) {
  LLVMBuildBr(G->B, k.join);
  LLVMPositionBuilderAtEnd(G->B, k.slow);
  call(G, helper, NULL, ps, as, n);
  LLVMBuildBr(G->B, k.join);
  LLVMPositionBuilderAtEnd(G->B, k.join);
}

/* The frame closed: inline as kls_close (the top moved back to the frame's
** first slot) where kls_on holds when this runs, else kjit_lv_close. */
void cg_lua_end(CG *G) {
  if (G->lbase == NULL) return;
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, G->lbase };
  const KlsFrameLayout *y = frame_layout(G);
  if (y == NULL || G->lentry == NULL) {   /* (opened by kjit_lv_open) */
    call(G, "kjit_lv_close", NULL, ps, as, 2);
    return;
  }
  KlsSplit k = kls_split(G, "lclose", "lcloseslow", "lclosed");
  LLVMValueRef ntop = slot_ptr(G, y, G->lbase);
  LLVMValueRef o = cg_i64(G, y->state_top);
  LLVMValueRef tp = LLVMBuildInBoundsGEP2(G->B, G->i8, G->luaL, &o, 1, "");
  LLVMBuildStore(G->B, ntop, LLVMBuildPointerCast(G->B, tp, LLVMPointerType(G->i8p, 0), ""));
  kls_join(G, k, "kjit_lv_close", ps, as, 2);
}

/* Slot k's stack index computed where it is used (base + k), for the
** slots of operations and the scratch slots: an index computed once in
** the entry block is a value live across the whole function, and LLVM's
** register allocator's liveness work grows with such values times the
** blocks they cross (most of a table-heavy function's compile). Phis'
** slots (cg_lua_edge, cg_lua_phi) keep slot_at's. */
static LLVMValueRef slot_here(CG *G, int k) {
  if (k < 0 || k >= G->nlslots) cg_error(G, NULL, "internal error: Lua slot %d of %d", k, G->nlslots);
  return LLVMBuildAdd(G->B, G->lbase, cg_i32(G, k), "slot");
}

LLVMValueRef cg_lua_slot(CG *G, const KirInsn *v) {
  if (G->lslot == NULL || G->lslot[v->id] < 0)
    cg_error(G, v, "internal error: a Lua value without a stack slot");
  return slot_here(G, G->lslot[v->id]);
}

/* The slot where call v boxes its argument i (0-based; a frozen table its
** compiled callee takes as a Lua value): after the results' slots. */
LLVMValueRef cg_lua_arg_slot(CG *G, const KirInsn *v, int i) {
  const KtySpec *c = G->sp->callees[v->id];
  if (G->lslot == NULL || G->lslot[v->id] < 0 || c == NULL)
    cg_error(G, v, "internal error: a boxed argument without its stack slot");
  return slot_here(G, G->lslot[v->id] + (has_lua_rets(c) ? c->nret : 0) + boxed_args(G->sp, v, c, i));
}

LLVMValueRef cg_lua_result_slot(CG *G, const KirInsn *call_insn, int r) {
  if (G->lslot == NULL || G->lslot[call_insn->id] < 0)
    cg_error(G, call_insn, "internal error: a call's Lua results without stack slots");
  return slot_here(G, G->lslot[call_insn->id] + r);
}

static LLVMValueRef scratch(CG *G, int i) { return slot_here(G, G->nlslots - NSCRATCH + i); }

/* ---- Values ------------------------------------------------------------------------ */

static CgVal mk(Type t, LLVMValueRef slot, LLVMValueRef tag, LLVMValueRef bits) {
  if (t.kind != T_LUA) t = TY(T_LUA);
  CgVal x = cg_mk(t, slot);
  x.flag = tag;
  x.dims[0] = bits;
  return x;
}

static LLVMValueRef i8c(CG *G, int v) { return LLVMConstInt(G->i8, (unsigned long long)v, 0); }

/* A Lua value known to be in its slot (a table): tag 0 at compile time. */
static int inslot(CgVal x) {
  return x.t.kind == T_LUA && (x.t.sub == KTY_LUA_TABLE ||
                               (x.flag && LLVMIsAConstantInt(x.flag) && LLVMConstIntGetZExtValue(x.flag) == 0));
}

static LLVMValueRef isnum_tag(CG *G, CgVal x) {
  if (inslot(x)) return cg_i1(G, 0);
  return LLVMBuildICmp(G->B, LLVMIntNE, x.flag, i8c(G, 0), "");
}

/* The T_NUMBER of a Lua value whose tag says number. */
static CgVal numof(CG *G, CgVal x) {
  Type t = TY(T_NUMBER);
  t.fsub = T_F64;
  CgVal n = cg_mk(t, x.dims[0]);
  n.isf = LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_FLT), "");
  return n;
}

/* (tag, bits) of a number of any kind. */
static void numtag(CG *G, CgVal x, LLVMValueRef *tag, LLVMValueRef *bits) {
  switch (x.t.kind) {
  case T_INT: *tag = i8c(G, KLV_INT); *bits = x.v; return;
  case T_F64: *tag = i8c(G, KLV_FLT); *bits = LLVMBuildBitCast(G->B, x.v, G->i64, ""); return;
  case T_F32:
    *tag = i8c(G, KLV_FLT);
    *bits = LLVMBuildBitCast(G->B, LLVMBuildFPExt(G->B, x.v, G->f64, ""), G->i64, "");
    return;
  default: {   /* T_NUMBER */
    CgVal f = cg_number_side(G, x, 1);
    LLVMValueRef fd = f.t.kind == T_F32 ? LLVMBuildFPExt(G->B, f.v, G->f64, "") : f.v;
    *bits = LLVMBuildSelect(G->B, x.isf, LLVMBuildBitCast(G->B, fd, G->i64, ""), x.v, "");
    *tag = LLVMBuildSelect(G->B, x.isf, i8c(G, KLV_FLT), i8c(G, KLV_INT), "");
    return;
  }
  }
}

static int isnumkind(int k) { return k == T_INT || k == T_F64 || k == T_F32 || k == T_NUMBER; }

/* ---- Boxing --------------------------------------------------------------------- */

static void setv(CG *G, const char *name, LLVMTypeRef ty, LLVMValueRef v, LLVMValueRef dst) {
  LLVMTypeRef ps[3] = { G->i8p, G->i32, ty };
  LLVMValueRef as[3] = { G->luaL, dst, v };
  call(G, name, NULL, ps, as, ty ? 3 : 2);
}

/* Writes the number (tag 1 or 2, bits) into slot dst: one call. */
static void box_tagged(CG *G, LLVMValueRef tag, LLVMValueRef bits, LLVMValueRef dst) {
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, G->i64 };
  LLVMValueRef as[4] = { G->luaL, dst, LLVMBuildZExt(G->B, tag, G->i32, ""), bits };
  call(G, "kjit_lv_settagged", NULL, ps, as, 4);
}

/* Slot k's address (i8*) in the running C function's stack, as
** host/lua_stack.h finds it (L->ci->func + k; valid while kls_on), read
** at each use: a helper's call may have moved the stack. */
static LLVMValueRef slot_ptr(CG *G, const KlsFrameLayout *y, LLVMValueRef k) {
  LLVMValueRef func = ld(G, ld(G, G->luaL, y->state_ci, G->i8p), y->ci_func, G->i8p);
  LLVMValueRef o = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, k, G->i64, ""), cg_i64(G, y->slot_size), "");
  return LLVMBuildInBoundsGEP2(G->B, G->i8, func, &o, 1, "");
}

/* lua_copy between two slots: kjit_lv_copy, or with inl (a function's
** Lua result copied into its caller's slot: binary-trees' BottomUpTree,
** 2.6M calls of the helper, 19 instructions each) in hot code inline
** where kls_on holds (the value and its tag, as kls_copy does; a stack
** slot needs no GC barrier). Elsewhere (phis, boxed arguments) the three
** blocks of the inline path cost the compile more than they save. */
static void copy_slot_as(CG *G, LLVMValueRef from, LLVMValueRef to, int inl) {
  if (from == to) return;
  LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
  LLVMValueRef as[3] = { G->luaL, from, to };
  const KlsFrameLayout *y = frame_layout(G);
  if (!inl || y == NULL || !spec_hot(G)) {
    call(G, "kjit_lv_copy", NULL, ps, as, 3);
    return;
  }
  KlsSplit k = kls_split(G, "lcopy", "lcopyslow", "lcopied");
  LLVMValueRef f = slot_ptr(G, y, from), t = slot_ptr(G, y, to);
  LLVMBuildStore(G->B, ld(G, f, 0, G->i64), LLVMBuildPointerCast(G->B, t, LLVMPointerType(G->i64, 0), ""));
  LLVMValueRef o = cg_i64(G, y->slot_tt);
  LLVMBuildStore(G->B, ld(G, f, y->slot_tt, G->i8), LLVMBuildInBoundsGEP2(G->B, G->i8, t, &o, 1, ""));
  kls_join(G, k, "kjit_lv_copy", ps, as, 3);
}
static void copy_slot(CG *G, LLVMValueRef from, LLVMValueRef to) { copy_slot_as(G, from, to, 0); }

/* x (any boxable value) written into slot dst. */
void cg_lua_box(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at) {
  switch (x.t.kind) {
  case T_LUA: {
    if (inslot(x)) { copy_slot(G, x.v, dst); break; }
    LLVMBasicBlockRef sb = cg_bb(G, "boxslot"), nb = cg_bb(G, "boxnum"), done = cg_bb(G, "boxdone");
    LLVMBuildCondBr(G->B, isnum_tag(G, x), nb, sb);
    LLVMPositionBuilderAtEnd(G->B, sb);
    copy_slot(G, x.v, dst);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, nb);
    box_tagged(G, x.flag, x.dims[0], dst);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, done);
    break;
  }
  case T_NIL: case T_UNKNOWN: setv(G, "kjit_lv_setnil", NULL, NULL, dst); break;
  case T_FUNC: case T_BUILTIN: case T_TABLE: cg_fn_boxconst(G, x, dst, at); break;   /* cg_callvalue.c */
  case T_BOOL:
    setv(G, "kjit_lv_setbool", G->i32, LLVMBuildZExt(G->B, x.v, G->i32, ""), dst);
    break;
  case T_INT: case T_F64: case T_F32: case T_NUMBER: {
    LLVMValueRef tag, bits;
    numtag(G, x, &tag, &bits);
    box_tagged(G, tag, bits, dst);
    break;
  }
  case T_MAYBE: {   /* a number, or nil/false */
    LLVMBasicBlockRef nb = cg_bb(G, "boxn"), fb = cg_bb(G, "boxfalsy"), done = cg_bb(G, "boxed");
    LLVMBuildCondBr(G->B, x.flag, nb, fb);
    LLVMPositionBuilderAtEnd(G->B, nb);
    Type nt = TY(x.t.sub);
    nt.fsub = x.t.fsub;
    CgVal n = cg_mk(nt, x.v);
    n.isf = x.isf;
    cg_lua_box(G, n, dst, at);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, fb);
    if (x.t.dtype) setv(G, "kjit_lv_setnil", NULL, NULL, dst);
    else setv(G, "kjit_lv_setbool", G->i32, cg_i32(G, 0), dst);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, done);
    break;
  }
  case T_BUF: {   /* a kjit array: its userdata, a view, or its block adopted (luaarray.c) */
    LLVMTypeRef sty = LLVMArrayType(G->i64, KJIT_MAXDIMS);
    LLVMValueRef shp = cg_alloca(G, sty, "boxshape");
    for (int d = 0; d < x.t.ndim; d++) {
      LLVMValueRef ix[2] = { cg_i64(G, 0), cg_i64(G, d) };
      LLVMBuildStore(G->B, x.dims[d], LLVMBuildGEP2(G->B, sty, shp, ix, 2, ""));
    }
    /* (isf: 1 on a view made here, cg_array.c index_buffer and cg_alloc.c) */
    int view = x.isf && LLVMIsAConstantInt(x.isf) && LLVMConstIntGetZExtValue(x.isf) == 1;
    LLVMTypeRef ps[7] = { G->i8p, G->i32, G->i8p, G->i32, G->i32, LLVMPointerType(G->i64, 0),
                          G->i32 };
    LLVMValueRef as[7] = { G->luaL, dst, LLVMBuildPointerCast(G->B, x.v, G->i8p, ""),
                           /* (records: the layout's id above, as alloc.h encodes it) */
                           cg_i32(G, x.t.dtype == KJIT_RECORD ? (int)KJIT_RECORD | x.t.ref << 8
                                                               : x.t.dtype),
                           cg_i32(G, x.t.ndim),
                           LLVMBuildPointerCast(G->B, shp, LLVMPointerType(G->i64, 0), ""),
                           cg_i32(G, view) };
    call(G, "kjit_la_box", NULL, ps, as, 7);
    break;
  }
  case T_STR:
    if (x.k && x.k->kind == T_STR) {
      LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i8p, G->i64 };
      LLVMValueRef as[4] = { G->luaL, dst, cstr(G, x.k->str, x.k->len), cg_i64(G, (int64_t)x.k->len) };
      call(G, "kjit_lv_setstr", NULL, ps, as, 4);
      break;
    }
    /* FALLTHROUGH */
  default: {
    char tb[32];
    cg_error(G, at, "internal error: cannot make a Lua value of a %s", kty_name(x.t, tb, sizeof tb));
  }
  }
}

/* The slot holding x: its own for a Lua value in its slot, else scratch
** slot i with x boxed there. */
static LLVMValueRef operand(CG *G, CgVal x, int i, const KirInsn *at) {
  if (x.t.kind == T_LUA && inslot(x)) return x.v;
  LLVMValueRef s = scratch(G, i);
  if (x.t.kind != T_LUA) { cg_lua_box(G, x, s, at); return s; }
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), nb = cg_bb(G, "opnum"), done = cg_bb(G, "opdone");
  LLVMBuildCondBr(G->B, isnum_tag(G, x), nb, done);
  LLVMPositionBuilderAtEnd(G->B, nb);
  box_tagged(G, x.flag, x.dims[0], s);
  LLVMBasicBlockRef nend = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  return phi2(G, G->i32, "", x.v, here, s, nend);
}

/* x as (tag i32, bits, slot) for the store helpers: numbers in registers,
** anything else in a slot (boxed into scratch i). */
static void triple(CG *G, CgVal x, int i, const KirInsn *at, LLVMValueRef *tag, LLVMValueRef *bits,
                   LLVMValueRef *slot) {
  if (x.t.kind == T_LUA) {
    *tag = inslot(x) ? cg_i32(G, 0) : LLVMBuildZExt(G->B, x.flag, G->i32, "");
    *bits = inslot(x) ? cg_i64(G, 0) : x.dims[0];
    *slot = x.v;
    return;
  }
  if (isnumkind(x.t.kind)) {
    LLVMValueRef t8;
    numtag(G, x, &t8, bits);
    *tag = LLVMBuildZExt(G->B, t8, G->i32, "");
    *slot = cg_i32(G, 0);
    return;
  }
  *tag = cg_i32(G, 0);
  *bits = cg_i64(G, 0);
  *slot = scratch(G, i);
  cg_lua_box(G, x, *slot, at);
}

/* ---- Errors -------------------------------------------------------------------------- */

/* if (rc is an error code) raise: the cold path calls raise(G, rc) then ends. */
typedef void (*RaiseFn)(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud);

static void check_rc(CG *G, const KirInsn *v, LLVMValueRef rc, RaiseFn raise, void *ud) {
  LLVMBasicBlockRef bad = cg_bb(G, "lvfail"), ok = cg_bb(G, "lvok");
  LLVMValueRef good = LLVMBuildICmp(G->B, LLVMIntULT, rc, cg_i32(G, 0x10), "");
  cg_cold_false(G, LLVMBuildCondBr(G->B, good, ok, bad));
  LLVMPositionBuilderAtEnd(G->B, bad);
  raise(G, v, rc, ud);
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, ok);
}

/* Raises pre .. the type of the value in slot .. post at v's line. */
static void typeerror(CG *G, const KirInsn *v, LLVMValueRef slot, const char *pre, const char *post) {
  LLVMTypeRef ps[6] = { G->i8p, G->i32, G->i8p, G->i8p, G->i8p, G->i32 };
  LLVMValueRef as[6] = { G->luaL, slot, text(G, pre), text(G, post), G->chunkname, cg_i32(G, v->line) };
  call(G, "kjit_lv_typeerror", NULL, ps, as, 6);
}

static void raise_msg(CG *G, const KirInsn *v, const char *msg) {
  LLVMTypeRef ps[4] = { G->i8p, G->i8p, G->i8p, G->i32 };
  LLVMValueRef as[4] = { G->luaL, text(G, msg), G->chunkname, cg_i32(G, v->line) };
  call(G, "kjit_lv_raise", NULL, ps, as, 4);
}

/* " value" and Lua's description of operand argi of v. */
static const char *value_info(CG *G, const KirInsn *v, int argi) {
  return cg_strf(G, v, " value%s", cg_varinfo(G, v, argi));
}

typedef struct IndexErr { LLVMValueRef obj; } IndexErr;

/* The cold path of a read or a write: one call (luavalue.c
** kjit_lv_indexerror) raises "attempt to index a ... value" or the key's
** error, whichever rc says. */
static void raise_index(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  IndexErr *e = ud;
  const char *info = cg_varinfo(G, v, 0);
  LLVMTypeRef ps[6] = { G->i8p, G->i32, G->i32, G->i8p, G->i8p, G->i32 };
  LLVMValueRef as[6] = { G->luaL, rc, e->obj, text(G, info), G->chunkname, cg_i32(G, v->line) };
  call(G, "kjit_lv_indexerror", NULL, ps, as, 6);
}

/* ---- Tables ----------------------------------------------------------------------------- */

/* A field name the helpers can take as a C string (no NUL inside). */
static int cname(const KirInsn *v) { return strlen(v->k.str.s) == v->k.str.len; }

static LLVMValueRef outp(CG *G) { return cg_alloca(G, G->i64, "lvout"); }

/* The result of a helper that returned rc (a tag) and *out. */
static CgVal got(CG *G, Type t, LLVMValueRef dst, LLVMValueRef rc, LLVMValueRef out) {
  return mk(t, dst, LLVMBuildTrunc(G->B, rc, G->i8, ""), LLVMBuildLoad2(G->B, G->i64, out, ""));
}

/* The key of a string field as a slot (scratch 0), for a name with a NUL. */
static LLVMValueRef strkey(CG *G, const KirInsn *v) {
  LLVMValueRef k = scratch(G, 0);
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i8p, G->i64 };
  LLVMValueRef as[4] = { G->luaL, k, cstr(G, v->k.str.s, v->k.str.len), cg_i64(G, (int64_t)v->k.str.len) };
  call(G, "kjit_lv_setstr", NULL, ps, as, 4);
  return k;
}

/* kjit_lt_on (luatable.c): the fast paths agreed with the running Lua. */
static LLVMValueRef lt_on(CG *G) {
  LLVMValueRef g = LLVMGetNamedGlobal(G->M, "kjit_lt_on");
  if (g == NULL) g = LLVMAddGlobal(G->M, G->i32, "kjit_lt_on");
  return g;
}

/* kjit_lt_none (luatable.c): the table every inline check misses in. */
static LLVMValueRef lt_none(CG *G) {
  LLVMValueRef g = LLVMGetNamedGlobal(G->M, "kjit_lt_none");
  if (g == NULL) {
    g = LLVMAddGlobal(G->M, G->i8, "kjit_lt_none");
    LLVMSetGlobalConstant(g, 1);
  }
  return LLVMConstPtrToInt(g, G->i64);
}

/* The address of the table x holds, when compiled code knows it (its bits
** while its tag is 0 and they are not 0: a read's result, an argument, a
** constructor), else kjit_lt_none's: the fast paths' hint (luatable.c),
** also where the layout is off (kjit_lt_on, read once per call). The
** inline checks then need no branch for "no table": they miss in
** kjit_lt_none by themselves. Selects only; for one value the same ones
** each time, which LLVM's CSE keeps once. */
static LLVMValueRef hint_at_def(CG *G, LLVMValueRef b, LLVMValueRef tag);

static LLVMValueRef hint(CG *G, CgVal x) {
  LLVMValueRef none = lt_none(G);
  if (x.t.kind != T_LUA || x.dims[0] == NULL) return LLVMBuildIntToPtr(G->B, none, G->i8p, "");
  LLVMValueRef b = x.dims[0];
  LLVMValueRef h = hint_at_def(G, b, inslot(x) ? NULL : x.flag);
  if (h) return h;
  LLVMValueRef no = LLVMBuildICmp(G->B, LLVMIntEQ, b, cg_i64(G, 0), "");   /* not a table */
  if (!inslot(x)) no = LLVMBuildOr(G->B, no, isnum_tag(G, x), "");
  LLVMValueRef on = G->lton ? G->lton
                            : LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildLoad2(G->B, G->i32, lt_on(G), ""),
                                            cg_i32(G, 0), "");
  no = LLVMBuildOr(G->B, no, LLVMBuildNot(G->B, on, ""), "");
  return LLVMBuildIntToPtr(G->B, LLVMBuildSelect(G->B, no, none, b, ""), G->i8p, "");
}

/* Where value v is made, for hint_at_def: its block when an instruction of
** the function's body (not of its entry code), else NULL (an argument, a
** constant, the entry code's: known at the end of the entry code). *ok: 0
** for a value of another function. */
static LLVMBasicBlockRef made_in(CG *G, LLVMValueRef v, int *ok) {
  *ok = 1;
  if (LLVMIsAArgument(v)) { *ok = LLVMGetParamParent(v) == G->fn; return NULL; }
  if (!LLVMIsAInstruction(v)) return NULL;
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(v);
  *ok = LLVMGetBasicBlockParent(bb) == G->fn;
  return bb == G->allocas || bb == G->lentry ? NULL : bb;
}

/* Whether instruction a comes before instruction b of the same block. */
static int before(LLVMValueRef a, LLVMValueRef b) {
  for (LLVMValueRef i = LLVMGetNextInstruction(a); i; i = LLVMGetNextInstruction(i))
    if (i == b) return 1;
  return 0;
}

/* The hint of a value x holding address b and tag (NULL: a table in its
** slot) (an argument's, a frozen table's, a constructor's, a read's),
** computed once, right after b and tag are made, and kept: the code
** generator's Lua-value pipeline has no loop-invariant code motion
** (backend/cpu.c kc_pipeline_lua), so a hint made at each access was made
** again at each iteration of a loop over a table made before it (SciMark
** sparse's inner loop: a load, two tests and two selects for each of its
** three tables). b and tag dominate every use of the hint, and kjit_lt_on's
** read (G->lton, in the entry code) dominates them. NULL: made at the
** access, as before (b and tag made in different blocks, the memo full,
** no lton). */
#define MAXHINTS ((int)(sizeof ((CG *)0)->hints[0] / sizeof (LLVMValueRef)))
static LLVMValueRef hint_at_def(CG *G, LLVMValueRef b, LLVMValueRef tag) {
  LLVMBasicBlockRef entry = G->lentry ? G->lentry : G->allocas;
  if (G->lton == NULL || entry == NULL || LLVMGetBasicBlockParent(entry) != G->fn) return NULL;
  for (int i = 0; i < G->nhints; i++)
    if (G->hints[0][i] == b && G->hints[1][i] == tag) return G->hints[2][i];
  if (G->nhints == MAXHINTS) return NULL;
  int okb, okt = 1;
  LLVMBasicBlockRef bb = made_in(G, b, &okb), tb = tag ? made_in(G, tag, &okt) : NULL;
  if (!okb || !okt || (bb && tb && bb != tb)) return NULL;
  /* after the later of b and tag (and after the block's phis), or at the
  ** end of the entry code, which is open until the function's blocks are
  ** all emitted */
  LLVMValueRef last = bb && tb ? (before(b, tag) ? tag : b) : bb ? b : tb ? tag : NULL;
  LLVMBuilderRef B = LLVMCreateBuilderInContext(G->C);
  if (last) {
    LLVMValueRef at = LLVMGetNextInstruction(last);
    while (at && LLVMIsAPHINode(at)) at = LLVMGetNextInstruction(at);
    if (at) LLVMPositionBuilderBefore(B, at);
    else LLVMPositionBuilderAtEnd(B, LLVMGetInstructionParent(last));
  } else {
    LLVMPositionBuilderAtEnd(B, entry);
  }
  LLVMValueRef no = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntEQ, b, cg_i64(G, 0), ""),
                                LLVMBuildNot(B, G->lton, ""), "");
  if (tag) no = LLVMBuildOr(B, no, LLVMBuildICmp(B, LLVMIntNE, tag, i8c(G, 0), ""), "");
  LLVMValueRef h = LLVMBuildIntToPtr(B, LLVMBuildSelect(B, no, lt_none(G), b, ""), G->i8p, "hint");
  LLVMDisposeBuilder(B);
  G->hints[0][G->nhints] = b;
  G->hints[1][G->nhints] = tag;
  G->hints[2][G->nhints++] = h;
  return h;
}

/* ---- Sites ---------------------------------------------------------------------------- */

/* luavalue.h's KlvSite: { ks, kn, name, info, chunk, line, mn, cn, ixs }. */
static LLVMTypeRef site_type(CG *G) {
  LLVMTypeRef f[9] = { G->i8p, G->i64, G->i8p, G->i8p, G->i8p, G->i32, G->i64, G->i64, G->i8p };
  return LLVMStructTypeInContext(G->C, f, 9, 0);
}

/* A site of its own for access v (a private global: the inline path's
** caches, written by the helpers, and what its errors say); name: its
** field name, or NULL for t[i]. */
static LLVMValueRef mksite(CG *G, const KirInsn *v, const char *name) {
  const char *info = cg_varinfo(G, v, 0);
  LLVMValueRef init[9] = { LLVMConstNull(G->i8p), cg_i64(G, 0),
                           name ? text(G, name) : LLVMConstNull(G->i8p), text(G, info),
                           G->chunkname, cg_i32(G, v->line), cg_i64(G, 0), cg_i64(G, 0),
                           LLVMConstNull(G->i8p) };
  LLVMValueRef g = LLVMAddGlobal(G->M, site_type(G), "kcg.site");
  LLVMSetInitializer(g, LLVMConstStructInContext(G->C, init, 9, 0));
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return g;
}

static LLVMValueRef site_field(CG *G, LLVMValueRef site, unsigned i) {
  return LLVMBuildStructGEP2(G->B, site_type(G), site, i, "");
}

/* The indexed value of an access as the site helpers take it: (otag,
** obits) when it is a number (the helper boxes it into t, then scratch
** slot 2), else its slot t and otag 0. A Lua value's test is a select, no
** block. */
static void objof(CG *G, CgVal ox, const KirInsn *v, LLVMValueRef *otag, LLVMValueRef *obits,
                  LLVMValueRef *t) {
  if (ox.t.kind == T_LUA && !inslot(ox)) {
    *otag = LLVMBuildZExt(G->B, ox.flag, G->i32, "");
    *obits = ox.dims[0] ? ox.dims[0] : cg_i64(G, 0);
    *t = LLVMBuildSelect(G->B, isnum_tag(G, ox), scratch(G, 2), ox.v, "");
    return;
  }
  *otag = cg_i32(G, 0);
  *obits = cg_i64(G, 0);
  *t = operand(G, ox, 2, v);
}

/* ---- Inline paths over the table layout (numbers only: luatable.c) -------------------- */

static const KltLayout *layout(CG *G) {
  static __thread const KltLayout *lay;
  static __thread lua_State *for_L;
  if (for_L != G->S->L) { lay = kjit_lt_layout(G->S->L); for_L = G->S->L; }
  if (getenv("KJIT_NO_INLINE_TABLES")) return NULL;   /* (measuring: the C paths only) */
  return lay;
}

static LLVMValueRef at(CG *G, LLVMValueRef base, int off, LLVMTypeRef ty) {
  LLVMValueRef o = cg_i64(G, off);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, G->i8, base, &o, 1, "");
  return LLVMBuildLoad2(G->B, ty, LLVMBuildPointerCast(G->B, p, LLVMPointerType(ty, 0), ""), "");
}

static void put(CG *G, LLVMValueRef base, int off, LLVMValueRef v) {
  LLVMValueRef o = cg_i64(G, off);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, G->i8, base, &o, 1, "");
  LLVMBuildStore(G->B, v, LLVMBuildPointerCast(G->B, p, LLVMPointerType(LLVMTypeOf(v), 0), ""));
}

/* Where the inline check looks (i8*: a node or an element of the array
** part), and for an index the branch to miss when it is past alimit.
** No table to look into (no hint, or kjit_lt_on says the layout is off:
** code from the disk cache in another Lua) needs no check of its own:
** h is then kjit_lt_none, where every check misses. *hit (i1): what is
** left to test where it is (a field's node holding the site's name); the
** caller then branches once, to its inline read or write or its helper's
** call.
**
** A field is looked for in the node where this site found it last time
** (the site's kn, kept by kjit_lt_findfield: objects made alike put a key
** in the same node), its index masked by the node array's size, holding
** the site's name (ks: NULL before its first C call, 1 for a long name,
** neither ever a node's key): one branch per field access. An index is
** looked for below alimit.
**
** Only the hit is inline: everything else (the key elsewhere in the
** table, absent, a table without a hint, the layout off) is one call to
** the site's helper (kjit_lv_sgetfield and the like), which finds the
** key, remembers its node for next time, does what Lua does and raises
** the access's errors itself, so an access has no error block of its own.
** Branches, not selects, for the checks: a select chain (tried) puts each
** load behind the compare before it, where a predicted branch lets them
** run ahead (fannkuch's run 14% slower, nbody's 6%), and it compiled no
** faster. */
static LLVMValueRef probe(CG *G, const KltLayout *y, LLVMValueRef h, LLVMValueRef site,
                          LLVMValueRef key, LLVMValueRef *hit, LLVMBasicBlockRef miss,
                          LLVMValueRef *keytt) {
  /* (h is never NULL: hint gives kjit_lt_none for "no table", where the
  ** checks below miss) */
  if (key == NULL) {
    /* the remembered node's index masked by the node array's size (a
    ** power of two, at least one node: Lua's dummynode, kjit_lt_none's):
    ** a node of this table whatever the site remembers, so no branch; a
    ** node that does not hold the name misses below */
    LLVMValueRef s = LLVMBuildLoad2(G->B, G->i8p, site_field(G, site, 0), "");
    LLVMValueRef kn = LLVMBuildLoad2(G->B, G->i64, site_field(G, site, 1), "");
    LLVMValueRef lsz = LLVMBuildZExt(G->B, at(G, h, y->t_lsizenode, G->i8), G->i64, "");
    LLVMValueRef mask = LLVMBuildSub(G->B, LLVMBuildShl(G->B, cg_i64(G, 1), lsz, ""), cg_i64(G, 1), "");
    LLVMValueRef off = LLVMBuildMul(G->B, LLVMBuildAnd(G->B, kn, mask, ""), cg_i64(G, y->node_size), "");
    LLVMValueRef nodes = at(G, h, y->t_node, G->i8p);
    LLVMValueRef tv = LLVMBuildInBoundsGEP2(G->B, G->i8, nodes, &off, 1, "");
    LLVMValueRef ktt = at(G, tv, y->node_key_tt, G->i8);
    LLVMValueRef kv = at(G, tv, y->node_key_val, G->i8p);
    LLVMValueRef kok = LLVMBuildICmp(G->B, LLVMIntEQ, ktt, LLVMConstInt(G->i8, (unsigned)y->tag_shrkey, 0), "");
    *hit = LLVMBuildICmp(G->B, LLVMIntEQ, kv, s, "");
    if (keytt) *keytt = kok;   /* (the caller tests it: cg_lua_field_readable) */
    else *hit = LLVMBuildAnd(G->B, kok, *hit, "");
    return tv;
  }
  LLVMBasicBlockRef fb = cg_bb(G, "ltfound");
  LLVMValueRef k = LLVMBuildSub(G->B, key, cg_i64(G, 1), "");
  LLVMValueRef lim = LLVMBuildZExt(G->B, at(G, h, y->t_alimit, G->i32), G->i64, "");
  LLVMValueRef arr = at(G, h, y->t_array, G->i8p);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntULT, k, lim, ""), fb, miss);
  LLVMPositionBuilderAtEnd(G->B, fb);
  LLVMValueRef o = LLVMBuildMul(G->B, k, cg_i64(G, y->tv_size), "");
  *hit = cg_i1(G, 1);
  return LLVMBuildInBoundsGEP2(G->B, G->i8, arr, &o, 1, "");
}

/* The type tag of a node's or an element's value. */
static LLVMValueRef ttof(CG *G, const KltLayout *y, LLVMValueRef tv, int isnode) {
  return at(G, tv, isnode ? y->node_tt : y->tv_tt, G->i8);
}

/* The C helper of an access (luavalue.c), called where its inline path
** misses: the name, the parameters' types and the arguments. */
typedef struct Full { const char *name; LLVMTypeRef *ps; LLVMValueRef *as; unsigned n; } Full;

/* The miss block's call of f (the builder's block must already branch to
** miss and to join), then join's phi: r (from block rb, the inline path)
** or the helper's result. */
static LLVMValueRef miss_call(CG *G, LLVMBasicBlockRef miss, const Full *f, LLVMValueRef r,
                              LLVMBasicBlockRef rb, LLVMBasicBlockRef join) {
  LLVMPositionBuilderAtEnd(G->B, miss);
  LLVMValueRef rc = call(G, f->name, G->i32, f->ps, f->as, f->n);
  LLVMBasicBlockRef mend = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, join);
  return phi2(G, G->i32, "", r, rb, rc, mend);
}

/* Whether v reads a method to call (`o:m(x)`: OP_SELF). */
static int method_of_self(CG *G, const KirInsn *v) {
  const KbcProto *p = G->sp->ir->proto;
  return v->pc >= 0 && v->pc < p->ncode && KBC_OP(p->code[v->pc]) == KBC_SELF;
}

/* An index past alimit of a read only tested (the builder in block past,
** where probe's check sent it): nil, with no metamethod to run, when the
** key is in neither part of the table (luatable.c absent_int's
** reasoning): no metatable, no hash part (lastfree NULL: Lua's isdummy),
** and alimit the array part's real size (a power of 2 or 0: luaH_realasize
** gives alimit then); kjit_lt_none, the hint of what is not a table, has
** a lastfree. binary-trees' `if tree[2]` on a leaf `{item}`. Where that
** holds, a block ending open for the caller to branch to its join, the
** read being (KLV_BOOL, bits 0): false; else the branch to miss. Returns
** that block. */
static LLVMBasicBlockRef absent_inline(CG *G, const KltLayout *y, LLVMValueRef h, LLVMBasicBlockRef past,
                                       LLVMBasicBlockRef miss) {
  LLVMPositionBuilderAtEnd(G->B, past);
  LLVMValueRef lim = at(G, h, y->t_alimit, G->i32);
  LLVMValueRef pow2 = LLVMBuildICmp(G->B, LLVMIntEQ, LLVMBuildAnd(G->B, lim, LLVMBuildSub(G->B, lim, cg_i32(G, 1), ""), ""),
                                    cg_i32(G, 0), "");
  LLVMValueRef nohash = LLVMBuildICmp(G->B, LLVMIntEQ, at(G, h, y->t_lastfree, G->i8p), LLVMConstNull(G->i8p), "");
  LLVMValueRef nomt = LLVMBuildICmp(G->B, LLVMIntEQ, at(G, h, y->t_metatable, G->i8p), LLVMConstNull(G->i8p), "");
  LLVMValueRef ok = LLVMBuildAnd(G->B, LLVMBuildAnd(G->B, pow2, nohash, ""), nomt, "");
  LLVMBasicBlockRef nb = cg_bb(G, "ltabsent");
  LLVMBuildCondBr(G->B, ok, nb, miss);
  LLVMPositionBuilderAtEnd(G->B, nb);
  return nb;
}

/* An inline read of a number: the tag (1, 2; *bits the value's bits), or
** where it misses, what the site's helper f gives (its bits left in out;
** site: a field's, with key NULL; or key, an integer index). A present
** value that is not a number (a table: ps[i], self.pos; a string, a
** boolean) takes the helper too, which anchors it in its slot. The hit's
** bits reach the join as a phi, not through out: no store and reload on
** the inline path. */
static LLVMValueRef inline_get(CG *G, const KirInsn *v, LLVMValueRef h, LLVMValueRef site,
                               LLVMValueRef key, LLVMValueRef out, const Full *f, LLVMValueRef *bits,
                               LLVMValueRef tdst, const CgLView *V, int truth) {
  const KltLayout *y = layout(G);
  if (y == NULL || !hot_at(G, v)) {   /* (or code that runs once: see "Where inline paths pay") */
    LLVMValueRef rc = call(G, f->name, G->i32, f->ps, f->as, f->n);
    *bits = LLVMBuildLoad2(G->B, G->i64, out, "");
    return rc;
  }
  LLVMValueRef hit;
  LLVMBasicBlockRef miss = cg_bb(G, "ltmiss"), join = NULL, mhit = NULL;
  LLVMValueRef mtag = NULL, mbits = NULL;   /* (a method's, through its class) */
  /* an index past the array part: nil read inline where no other part
  ** can hold it (absent_inline), for a read only tested (`if tree[2]` on
  ** a leaf); for the others the blocks cost the compile more (SciMark
  ** LU's a[k]: 1% more instructions for its whole run) */
  LLVMBasicBlockRef past = key && truth && !tdst ? cg_bb(G, "ltpast") : NULL;
  LLVMValueRef tv = probe(G, y, h, site, key, &hit, past ? past : miss, NULL);
  LLVMValueRef tt = ttof(G, y, tv, key == NULL);
  LLVMValueRef isi = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, (unsigned)y->tag_int, 0), "");
  LLVMValueRef isf = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, (unsigned)y->tag_flt, 0), "");
  LLVMValueRef hb = at(G, tv, 0, G->i64);
  LLVMValueRef tag = LLVMBuildSelect(G->B, isi, cg_i32(G, KLV_INT), cg_i32(G, KLV_FLT), "");
  LLVMValueRef good = LLVMBuildAnd(G->B, hit, LLVMBuildOr(G->B, isi, isf, ""), "");
  /* a present value never consults __index */
  LLVMValueRef nonnil = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildAnd(G->B, tt, LLVMConstInt(G->i8, 0x0F, 0), ""),
                                      LLVMConstInt(G->i8, 0, 0), "");
  if (truth && !tdst) {
    /* a read only tested (`if p[i] then`, `if tree[2] then`: truth_only):
    ** any value found, as (KLV_BOOL, its truth); only cg_lua_truthy sees
    ** these tags */
    LLVMValueRef isfalse = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, (unsigned)y->tag_false, 0), "");
    /* (nor does an empty one of a table without a metatable) */
    LLVMValueRef settled = LLVMBuildOr(G->B, nonnil, LLVMBuildICmp(G->B, LLVMIntEQ, at(G, h, y->t_metatable, G->i8p),
                                                                  LLVMConstNull(G->i8p), ""), "");
    tag = cg_i32(G, KLV_BOOL);
    good = LLVMBuildAnd(G->B, hit, settled, "");
    hb = LLVMBuildZExt(G->B, LLVMBuildAnd(G->B, nonnil, LLVMBuildNot(G->B, isfalse, ""), ""), G->i64, "");
  }
  if (tdst) {
    /* a site whose value is indexed next (ps[i] in ps[i].x, self.pos) or
    ** goes on as a Lua value (passed, returned, a list item: flows_on): the
    ** value found is copied into the slot tdst inline, as luatable.c
    ** copy_to_slot copies it (the slot at L->ci->func + tdst:
    ** host/lua_stack.h, while kls_on; a stack slot needs no GC barrier),
    ** a table's address being the hint (a kjit array's userdata, a
    ** method's function, a string: no hint, bits 0); a number is copied
    ** too (the slot is this value's own), which saves a branch, and stays
    ** in registers. */
    LLVMValueRef ks = LLVMBuildLoad2(G->B, G->i32, kls_on_g(G), "");
    LLVMValueRef istab = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, (unsigned)y->tag_table, 0), "");
    LLVMValueRef isnum = LLVMBuildOr(G->B, isi, isf, "");
    /* (an empty one takes the helper: testing the metatable here, in
    ** nbody's inner loop `local bj = bodies[j]`, made its run 1.35 times
    ** longer in fewer instructions: a load behind the loop's stores) */
    good = LLVMBuildAnd(G->B, LLVMBuildAnd(G->B, hit, nonnil, ""),
                        LLVMBuildICmp(G->B, LLVMIntNE, ks, cg_i32(G, 0), ""), "");
    tag = LLVMBuildSelect(G->B, isnum, tag, cg_i32(G, KLV_INSLOT), "");
    LLVMValueRef nohint = LLVMBuildNot(G->B, LLVMBuildOr(G->B, isnum, istab, ""), "");
    LLVMBasicBlockRef cb = cg_bb(G, "ltcopy");
    if (method_of_self(G, v)) {
      /* `o:m(x)` with no m of o's own at the site's node: the method
      ** through o's class (luatable.c kjit_lt_smethod: the short path, no
      ** wrapper, its miss the site's helper), before the helper. (Read
      ** inline, the class method took 10% fewer instructions a call than
      ** this call does, but the extra blocks in every method call's loop
      ** cost LLVM 16M instructions more to compile `s = s + p:dot(q)`.) */
      LLVMBasicBlockRef mb = cg_bb(G, "lmethod");
      join = cg_bb(G, "ltjoin");
      LLVMBuildCondBr(G->B, good, cb, mb);
      LLVMPositionBuilderAtEnd(G->B, mb);
      LLVMTypeRef ps[5] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i8p, G->i32,
                            LLVMPointerType(G->i64, 0) };
      LLVMValueRef as[5] = { G->luaL, site, h, tdst, out };
      mtag = call(G, "kjit_lt_smethod", G->i32, ps, as, 5);
      mhit = cg_bb(G, "lmethodhit");
      LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSGE, mtag, cg_i32(G, 0), ""), mhit, miss);
      LLVMPositionBuilderAtEnd(G->B, mhit);
      mbits = LLVMBuildLoad2(G->B, G->i64, out, "");
      LLVMBuildBr(G->B, join);
    } else LLVMBuildCondBr(G->B, good, cb, miss);
    LLVMPositionBuilderAtEnd(G->B, cb);
    LLVMValueRef ci = at(G, G->luaL, y->s_ci, G->i8p);
    LLVMValueRef fn = at(G, ci, y->ci_func, G->i8p);
    LLVMValueRef o = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, tdst, G->i64, ""), cg_i64(G, y->sv_size), "");
    LLVMValueRef sv = LLVMBuildInBoundsGEP2(G->B, G->i8, fn, &o, 1, "");
    put(G, sv, 0, hb);
    put(G, sv, y->tv_tt, tt);
    hb = LLVMBuildSelect(G->B, nohint, cg_i64(G, 0), hb, "");
    good = cg_i1(G, 1);
  }
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), pastb = NULL;
  LLVMValueRef pasttag = cg_i32(G, KLV_BOOL);   /* (false: bits 0) */
  if (past) {
    pastb = absent_inline(G, y, h, past, miss);
    LLVMPositionBuilderAtEnd(G->B, here);
  }
  if (join == NULL) join = cg_bb(G, "ltjoin");
  if (tdst) LLVMBuildBr(G->B, join);
  else LLVMBuildCondBr(G->B, good, join, miss);
  /* a kjit array's view: its element, before the helper */
  LLVMBasicBlockRef ab = NULL;
  LLVMValueRef atag = NULL, abits = NULL;
  CgLView vw;
  if (V && key) {
    LLVMBasicBlockRef hmiss = cg_bb(G, "ltmissh");
    ab = cg_bb(G, "lvaget");
    LLVMPositionBuilderAtEnd(G->B, miss);
    cg_lview_at(G, V, &vw, hmiss);
    V = &vw;
    LLVMValueRef k = LLVMBuildSub(G->B, key, cg_i64(G, 1), "");
    LLVMValueRef ok = LLVMBuildAnd(G->B, LLVMBuildICmp(G->B, LLVMIntNE, V->akind, cg_i32(G, 0), ""),
                                   LLVMBuildICmp(G->B, LLVMIntULT, k, V->alen, ""), "");
    LLVMBuildCondBr(G->B, ok, ab, hmiss);
    LLVMPositionBuilderAtEnd(G->B, ab);
    LLVMValueRef ep = LLVMBuildInBoundsGEP2(G->B, G->i64,
                                            LLVMBuildPointerCast(G->B, V->adata, LLVMPointerType(G->i64, 0), ""),
                                            &k, 1, "");
    abits = LLVMBuildLoad2(G->B, G->i64, ep, "");
    atag = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, V->akind, cg_i32(G, 1), ""),
                           cg_i32(G, KLV_FLT), cg_i32(G, KLV_INT), "");
    LLVMBuildBr(G->B, join);
    miss = hmiss;
  }
  if (pastb) {
    LLVMPositionBuilderAtEnd(G->B, pastb);
    LLVMBuildBr(G->B, join);
  }
  LLVMValueRef rc = miss_call(G, miss, f, tag, here, join);
  if (ab) LLVMAddIncoming(rc, &atag, &ab, 1);
  if (mhit) LLVMAddIncoming(rc, &mtag, &mhit, 1);
  if (pastb) LLVMAddIncoming(rc, &pasttag, &pastb, 1);
  /* (miss_call left the builder at the start of join, after its phi) */
  LLVMBasicBlockRef mend = LLVMGetIncomingBlock(rc, 1);
  LLVMPositionBuilderBefore(G->B, LLVMGetBasicBlockTerminator(mend));
  LLVMValueRef mb = LLVMBuildLoad2(G->B, G->i64, out, "");
  LLVMPositionBuilderAtEnd(G->B, join);
  *bits = LLVMBuildPhi(G->B, G->i64, "");
  LLVMValueRef vs[2] = { hb, mb };
  LLVMBasicBlockRef bs[2] = { here, mend };
  LLVMAddIncoming(*bits, vs, bs, 2);
  if (ab) LLVMAddIncoming(*bits, &abits, &ab, 1);
  if (mhit) LLVMAddIncoming(*bits, &mbits, &mhit, 1);
  if (pastb) {
    LLVMValueRef zero = cg_i64(G, 0);
    LLVMAddIncoming(*bits, &zero, &pastb, 1);
  }
  return rc;
}

/* An inline write of a number or a boolean (vtag 1, 2, 3; luatable.c
** writenum says why it is exact) over a present non-nil value, or an empty
** element of the array part of a table without a metatable: KLV_OK when
** done; where it misses, what the site's helper f gives. */
static LLVMValueRef inline_set(CG *G, const KirInsn *v, LLVMValueRef h, LLVMValueRef site,
                               LLVMValueRef key, LLVMValueRef vtag, LLVMValueRef vbits, const Full *f,
                               const CgLView *V) {
  const KltLayout *y = layout(G);
  if (y == NULL || !hot_at(G, v)) return call(G, f->name, G->i32, f->ps, f->as, f->n);
  LLVMValueRef hit;
  LLVMBasicBlockRef miss = cg_bb(G, "ltmiss");
  LLVMValueRef tv = probe(G, y, h, site, key, &hit, miss, NULL);
  LLVMValueRef tt = ttof(G, y, tv, key == NULL);
  LLVMValueRef nonnil = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildAnd(G->B, tt, LLVMConstInt(G->i8, 0x0F, 0), ""),
                                      LLVMConstInt(G->i8, 0, 0), "");
  if (key) {   /* an empty element: fine without a metatable */
    LLVMValueRef mt = at(G, h, y->t_metatable, G->i8p);
    nonnil = LLVMBuildOr(G->B, nonnil, LLVMBuildICmp(G->B, LLVMIntEQ, mt, LLVMConstNull(G->i8p), ""), "");
  }
  LLVMValueRef good = LLVMBuildAnd(G->B, LLVMBuildAnd(G->B, hit, nonnil, ""),
                                   LLVMBuildICmp(G->B, LLVMIntNE, vtag, cg_i32(G, 0), ""), "");
  LLVMBasicBlockRef wr = cg_bb(G, "ltwrite"), join = cg_bb(G, "ltjoin");
  LLVMBuildCondBr(G->B, good, wr, miss);
  LLVMPositionBuilderAtEnd(G->B, wr);
  put(G, tv, 0, vbits);
  LLVMValueRef isb = LLVMBuildICmp(G->B, LLVMIntEQ, vtag, cg_i32(G, KLV_BOOL), "");
  LLVMValueRef btt = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntNE, vbits, cg_i64(G, 0), ""),
                                     LLVMConstInt(G->i8, (unsigned)y->tag_true, 0),
                                     LLVMConstInt(G->i8, (unsigned)y->tag_false, 0), "");
  LLVMValueRef ntt = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, vtag, cg_i32(G, KLV_INT), ""),
                                     LLVMConstInt(G->i8, (unsigned)y->tag_int, 0),
                                     LLVMConstInt(G->i8, (unsigned)y->tag_flt, 0), "");
  put(G, tv, key ? y->tv_tt : y->node_tt, LLVMBuildSelect(G->B, isb, btt, ntt, ""));
  LLVMBuildBr(G->B, join);
  /* a kjit array's view: a number stored as its __newindex stores it (an
  ** integer into f64 converted; into i64 only an integer), before the
  ** helper (floats into i64, booleans, errors) */
  LLVMBasicBlockRef ab = NULL;
  CgLView vw;
  if (V && key) {
    LLVMBasicBlockRef hmiss = cg_bb(G, "ltmissh");
    ab = cg_bb(G, "lvaset");
    LLVMPositionBuilderAtEnd(G->B, miss);
    cg_lview_at(G, V, &vw, hmiss);
    V = &vw;
    LLVMValueRef k = LLVMBuildSub(G->B, key, cg_i64(G, 1), "");
    LLVMValueRef vi = LLVMBuildICmp(G->B, LLVMIntEQ, vtag, cg_i32(G, KLV_INT), "");
    LLVMValueRef vf = LLVMBuildICmp(G->B, LLVMIntEQ, vtag, cg_i32(G, KLV_FLT), "");
    LLVMValueRef f64 = LLVMBuildICmp(G->B, LLVMIntEQ, V->akind, cg_i32(G, 1), "");
    LLVMValueRef i64 = LLVMBuildICmp(G->B, LLVMIntEQ, V->akind, cg_i32(G, 2), "");
    LLVMValueRef ok = LLVMBuildOr(G->B, LLVMBuildAnd(G->B, f64, LLVMBuildOr(G->B, vi, vf, ""), ""),
                                  LLVMBuildAnd(G->B, i64, vi, ""), "");
    ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntULT, k, V->alen, ""), "");
    LLVMBuildCondBr(G->B, ok, ab, hmiss);
    LLVMPositionBuilderAtEnd(G->B, ab);
    LLVMValueRef asf = LLVMBuildBitCast(G->B, LLVMBuildSIToFP(G->B, vbits, G->f64, ""), G->i64, "");
    LLVMValueRef w = LLVMBuildSelect(G->B, LLVMBuildAnd(G->B, f64, vi, ""), asf, vbits, "");
    LLVMValueRef ep = LLVMBuildInBoundsGEP2(G->B, G->i64,
                                            LLVMBuildPointerCast(G->B, V->adata, LLVMPointerType(G->i64, 0), ""),
                                            &k, 1, "");
    LLVMBuildStore(G->B, w, ep);
    LLVMBuildBr(G->B, join);
    miss = hmiss;
  }
  LLVMValueRef rc = miss_call(G, miss, f, cg_i32(G, KLV_OK), wr, join);
  if (ab) {
    LLVMValueRef okv = cg_i32(G, KLV_OK);
    LLVMAddIncoming(rc, &okv, &ab, 1);
  }
  return rc;
}

/* A key that is an integer at run time though not typed so (a number read
** from a table, q[q1]; a T_NUMBER): *isint (i1) says when, and the
** integer's bits are returned; NULL for a key that never is. A float key
** with an integral value is that integer here too, as Lua normalizes it
** (ltable.c luaH_get: luaV_flttointns with F2Ieq; luaH_newkey the same):
** SciMark's FFT computes `j` with `k = k / 2`, and every v[j + 1] took
** the helper (594,000 calls, 28% of the run's instructions). Only the
** inline hit uses the integer; a miss gives the helper the key as it is
** (a metamethod sees the float, as interpreted). */
static LLVMValueRef float_key(CG *G, LLVMValueRef isflt, LLVMValueRef ibits, CgVal k);

/* The integer a float key f equals where it could index an array part
** (1 to 2^32: alimit is 32 bits), else 0, which every inline path misses
** (NaN fails the ordered compares). Cheaper than cg_float_to_int_exact's
** full range: no floor, no 64-bit limits to keep in registers. */
static LLVMValueRef array_key(CG *G, LLVMValueRef f) {
  LLVMValueRef in = LLVMBuildAnd(G->B, LLVMBuildFCmp(G->B, LLVMRealOGE, f, cg_f64(G, 1.0), ""),
                                 LLVMBuildFCmp(G->B, LLVMRealOLE, f, cg_f64(G, 4294967296.0), ""), "");
  LLVMValueRef i = LLVMBuildFPToSI(G->B, LLVMBuildSelect(G->B, in, f, cg_f64(G, 0.0), ""), G->i64, "");
  LLVMValueRef exact = LLVMBuildFCmp(G->B, LLVMRealOEQ, LLVMBuildSIToFP(G->B, i, G->f64, ""), f, "");
  return LLVMBuildSelect(G->B, exact, i, cg_i64(G, 0), "");
}
static LLVMValueRef dyn_intkey(CG *G, CgVal k, LLVMValueRef *isint) {
  if (k.t.kind == T_LUA && !inslot(k) && k.dims[0]) {
    LLVMValueRef isf = LLVMBuildICmp(G->B, LLVMIntEQ, k.flag, i8c(G, KLV_FLT), "");
    *isint = LLVMBuildOr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, k.flag, i8c(G, KLV_INT), ""), isf, "");
    return float_key(G, isf, k.dims[0], k);
  }
  if (k.t.kind == T_NUMBER && k.isf) {
    *isint = cg_i1(G, 1);
    return float_key(G, k.isf, k.v, k);
  }
  if (k.t.kind == T_F64 && k.v) {
    *isint = cg_i1(G, 1);
    return array_key(G, k.v);
  }
  return NULL;
}

/* The key's integer where isflt is false (ibits), else its float's integer
** when exact and 0 (a key every inline path misses) when not; the float
** side in a block of its own, so that an integer key pays one branch (the
** T_NUMBER loop counter of SciMark's sparse `for i = row[r], row[r + 1] - 1`
** paid 45 instructions an iteration computing both sides). */
static LLVMValueRef float_key(CG *G, LLVMValueRef isflt, LLVMValueRef ibits, CgVal k) {
  LLVMValueRef f;
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), fb = cg_bb(G, "keyflt"), join = cg_bb(G, "keyint");
  LLVMBuildCondBr(G->B, isflt, fb, join);
  LLVMPositionBuilderAtEnd(G->B, fb);
  if (k.t.kind == T_LUA) f = LLVMBuildBitCast(G->B, k.dims[0], G->f64, "");
  else f = cg_num_to(G, cg_number_side(G, k, 1), T_F64);
  LLVMValueRef fi = array_key(G, f);
  LLVMBasicBlockRef fend = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, join);
  return phi2(G, G->i64, "", ibits, here, fi, fend);
}

/* Whether the value v reads is indexed in turn (bj.x after bj =
** bodies[j]; self.pos.x): then expected to be a table, which its inline
** read copies into its slot (inline_get). */
static int indexed_next(const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if ((u->op == KIR_GETFIELD || u->op == KIR_INDEX || u->op == KIR_SETFIELD || u->op == KIR_SETINDEX ||
         u->op == KIR_CALL) &&   /* (or called: a method, `o:set(x)`, copied inline too) */
        u->nargs > 0 && u->args[0] == v)
      return 1;
  }
  return 0;
}

/* Whether the value v reads goes on as a Lua value: passed to a call,
** returned, a constructor's item (ItemCheck(tree[2]) in binary-trees):
** then its inline read copies whatever it finds into its slot
** (inline_get), where the helper would. Arithmetic, comparisons and tests
** want numbers, which stay in registers; a phi's input and a stored value
** (`local m = t[i] or 0`, `a[i] = b[i]`: numbers, mostly, in numeric
** code) keep the smaller path, whose compile costs less. */
static int flows_on(const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) {
    switch (v->users[i]->op) {
    case KIR_CALL: case KIR_RET: case KIR_SETLIST:
      return 1;
    default: break;
    }
  }
  return 0;
}

/* The view an access of ox may use where the inline path of tables
** misses (cg_luaview.c), or NULL. */
static const CgLView *view_of(CG *G, const KirInsn *v, CgVal ox, LLVMValueRef h, CgLView *V) {
  (void)h;
  if ((V->y = layout(G)) == NULL || G->nlviews == 0 || ox.t.kind != T_LUA) return NULL;
  V->slot = ox.v;
  V->tag = inslot(ox) ? NULL : ox.flag;
  return cg_lview_find(G, v->args[0], V) ? V : NULL;
}

/* Whether the value v reads is only tested for truth (`if p[i] then`,
** `not p[i]`): its inline read may then give the value's truth alone
** (inline_get: tag KLV_BOOL, whatever the value), which no other use of a
** read's value expects. */
static int truth_only(const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (!((u->op == KIR_BR || u->op == KIR_NOT) && u->args[0] == v)) return 0;
  }
  return v->nusers > 0;
}

/* t[i] read with an integer key: inline, then the site's helper (which
** raises the access's errors). */
static LLVMValueRef geti_rc(CG *G, const KirInsn *v, CgVal ox, LLVMValueRef h, LLVMValueRef key,
                            LLVMValueRef dst, LLVMValueRef out, LLVMValueRef *bits) {
  /* (the inline path does what luatable.c's kjit_lt_fgeti would) */
  LLVMValueRef site = mksite(G, v, NULL), otag, obits, t;
  objof(G, ox, v, &otag, &obits, &t);
  LLVMTypeRef ps[9] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i64, G->i32, G->i8p,
                        G->i64, G->i32, LLVMPointerType(G->i64, 0) };
  LLVMValueRef as[9] = { G->luaL, site, otag, obits, t, h, key, dst, out };
  Full f = { "kjit_lv_sgeti", ps, as, 9 };
  CgLView vw;
  const CgLView *V = view_of(G, v, ox, h, &vw);
  return inline_get(G, v, h, site, key, out, &f, bits, indexed_next(v) || flows_on(v) ? dst : NULL, V, truth_only(v));
}

/* t[k] read with a key of any type (its own check of the result). */
static LLVMValueRef gettable_rc(CG *G, const KirInsn *v, CgVal ox, LLVMValueRef k, LLVMValueRef dst,
                                LLVMValueRef out) {
  LLVMValueRef obj = operand(G, ox, 2, v);
  LLVMValueRef site = mksite(G, v, NULL);   /* (its position: luavalue.c dead_end) */
  LLVMTypeRef ps[6] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i32, G->i32,
                        LLVMPointerType(G->i64, 0) };
  LLVMValueRef as[6] = { G->luaL, site, obj, k, dst, out };
  LLVMValueRef rc = call(G, "kjit_lv_gettable_at", G->i32, ps, as, 6);
  IndexErr e = { obj };
  check_rc(G, v, rc, raise_index, &e);
  return rc;
}

/* The table registered at ref (a live table: ir_type.c t_live, or the
** environment of assigned globals), read once per call of the function,
** in its entry block (after the frame opens), into slot k (-1: a slot of
** its own, after the frame's): the reference names one table for as long
** as the code lives, so every read of it gives the same table, and the
** registry keeps it alive (the slot holds it too). Reads of one table
** share the read (its identity looked up here, at compile time). Read at
** each use, the reference cost a call per access: SciMark FFT's
** `for i = 1, n * 2 do v[i] = v[i] * norm end` over an upvalue it writes,
** 1.2 million calls of kjit_lv_getref, 190M instructions. */
static CgVal live_table(CG *G, int ref, int k) {
  Type t = TY(T_LUA);
  t.sub = KTY_LUA_TABLE;
  lua_State *L = G->S->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  const void *id = lua_topointer(L, -1);
  lua_pop(L, 1);
  LLVMBasicBlockRef entry = G->lentry ? G->lentry : G->allocas;
  int here_fn = entry && LLVMGetBasicBlockParent(entry) == LLVMGetBasicBlockParent(LLVMGetInsertBlock(G->B));
  for (int i = 0; here_fn && i < G->nlive; i++)
    if (G->live[i].id == id) return mk(t, G->live[i].slot, i8c(G, 0), G->live[i].h);
  if (k < 0 || G->nlive == CG_MAXLIVE || !here_fn) {   /* (no slot of its own, or another function: read here) */
    LLVMValueRef dst = k < 0 ? scratch(G, 2) : slot_here(G, k);
    LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
    LLVMValueRef as[3] = { G->luaL, cg_i32(G, ref), dst };
    return mk(t, dst, i8c(G, 0), call(G, "kjit_lv_getref", G->i64, ps, as, 3));
  }
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  LLVMPositionBuilderAtEnd(G->B, entry);
  LLVMValueRef dst = slot_at(G, k);
  LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
  LLVMValueRef as[3] = { G->luaL, cg_i32(G, ref), dst };
  LLVMValueRef h = call(G, "kjit_lv_getref", G->i64, ps, as, 3);
  LLVMPositionBuilderAtEnd(G->B, here);
  G->live[G->nlive].id = id;
  G->live[G->nlive].slot = dst;
  G->live[G->nlive].h = h;
  G->nlive++;
  return mk(t, dst, i8c(G, 0), h);
}

/* The object of access v: its value, or for a global that compiled code
** assigns (ir_type.c t_setglobal) the real environment table, through its
** registry reference, in scratch slot 2 (the object's: operand, objof). */
static CgVal access_obj(CG *G, const KirInsn *v) {
  CgVal ox = cg_val(G, v->args[0]);
  if (ox.t.kind != T_TABLE || G->sp->liveref == NULL || G->sp->liveref[v->args[0]->id] == 0) return ox;
  return live_table(G, G->sp->liveref[v->args[0]->id], -1);
}

CgVal cg_lua_index(CG *G, const KirInsn *v) {
  CgVal ox = access_obj(G, v);
  LLVMValueRef h = hint(G, ox);
  LLVMValueRef dst = cg_lua_slot(G, v), rc, out = outp(G), bits = NULL;
  LLVMValueRef isint = NULL, ikey = NULL;
  if (v->op == KIR_GETFIELD && cname(v)) {
    LLVMValueRef site = mksite(G, v, v->k.str.s), otag, obits, t;
    objof(G, ox, v, &otag, &obits, &t);
    LLVMTypeRef ps[8] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i64, G->i32, G->i8p,
                          G->i32, LLVMPointerType(G->i64, 0) };
    LLVMValueRef as[8] = { G->luaL, site, otag, obits, t, h, dst, out };
    Full f = { "kjit_lv_sgetfield", ps, as, 8 };
    rc = inline_get(G, v, h, site, NULL, out, &f, &bits, indexed_next(v) || flows_on(v) ? dst : NULL, NULL, truth_only(v));
  } else if (v->op == KIR_INDEX && G->sp->types[v->args[1]->id].kind == T_INT) {
    rc = geti_rc(G, v, ox, h, cg_val(G, v->args[1]).v, dst, out, &bits);
  } else if (v->op == KIR_INDEX && (ikey = dyn_intkey(G, cg_val(G, v->args[1]), &isint))) {
    /* an integer at run time: the inline integer path (a key that is not
    ** one is 0 there, which misses); the miss, whatever the key, is one
    ** call (luavalue.c kjit_lv_sgetk): no block of its own for the key's
    ** kind, nor an error block */
    LLVMValueRef site = mksite(G, v, NULL), otag, obits, t, ktag, kbits, kslot;
    objof(G, ox, v, &otag, &obits, &t);
    triple(G, cg_val(G, v->args[1]), 0, v, &ktag, &kbits, &kslot);
    LLVMTypeRef ps[11] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i64, G->i32, G->i8p,
                           G->i32, G->i64, G->i32, G->i32, LLVMPointerType(G->i64, 0) };
    LLVMValueRef as[11] = { G->luaL, site, otag, obits, t, h, ktag, kbits, kslot, dst, out };
    Full f = { "kjit_lv_sgetk", ps, as, 11 };
    LLVMValueRef pk = LLVMBuildSelect(G->B, isint, ikey, cg_i64(G, 0), "");
    CgLView vw;
    const CgLView *V = view_of(G, v, ox, h, &vw);
    rc = inline_get(G, v, h, site, pk, out, &f, &bits, indexed_next(v) || flows_on(v) ? dst : NULL, V, truth_only(v));
  } else {
    LLVMValueRef k = v->op == KIR_GETFIELD ? strkey(G, v) : operand(G, cg_val(G, v->args[1]), 0, v);
    rc = gettable_rc(G, v, ox, k, dst, out);
  }
  if (bits == NULL) return got(G, TY(T_LUA), dst, rc, out);
  return mk(TY(T_LUA), dst, LLVMBuildTrunc(G->B, rc, G->i8, ""), bits);
}

/* A write into a table made in the same block (a constructor's fields,
** `local t = {}; t.x = 1`): the key is absent (or was just written by
** the same code), the inline path would miss, so the site's helper is
** called directly: fewer blocks to compile in code that often runs once
** (a program's set-up). */
static int fresh(const KirInsn *v) {
  return v->args[0]->op == KIR_NEWTABLE && v->args[0]->block == v->block;
}

/* Is v (t.k = x) one of the constructor's own writes: t made by a
** NEWTABLE earlier in v's block and not used since but as the table
** written into (no call, no store elsewhere, no setmetatable can have
** reached it)? Then t has no metatable and the write is raw
** (kjit_lv_ctorfield). */
static int in_ctor(const KirInsn *v) {
  const KirInsn *t = v->args[0];
  if (!fresh(v)) return 0;
  const KirBlock *b = v->block;
  int i = 0;
  while (i < b->ninsns && b->insns[i] != t) i++;
  for (i++; i < b->ninsns && b->insns[i] != v; i++) {
    const KirInsn *u = b->insns[i];
    for (int j = 0; j < u->nargs; j++)
      if (u->args[j] == t && !(j == 0 && (u->op == KIR_SETFIELD || u->op == KIR_SETINDEX ||
                                          u->op == KIR_SETLIST)))
        return 0;
  }
  return i < b->ninsns;
}

/* t[i] = (tag, bits, val) with an integer key: inline, then the site's
** helper. */
static LLVMValueRef seti_rc(CG *G, const KirInsn *v, CgVal ox, LLVMValueRef h, LLVMValueRef key,
                            LLVMValueRef tag, LLVMValueRef bits, LLVMValueRef val) {
  LLVMValueRef site = mksite(G, v, NULL), otag, obits, t;
  objof(G, ox, v, &otag, &obits, &t);
  LLVMTypeRef ps[10] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i64, G->i32, G->i8p,
                         G->i64, G->i32, G->i64, G->i32 };
  LLVMValueRef as[10] = { G->luaL, site, otag, obits, t, h, key, tag, bits, val };
  Full f = { "kjit_lv_sseti", ps, as, 10 };
  if (fresh(v)) return call(G, f.name, G->i32, ps, as, 10);
  CgLView vw;
  const CgLView *V = view_of(G, v, ox, h, &vw);
  return inline_set(G, v, h, site, key, tag, bits, &f, V);
}

/* t[k] = v with a key of any type (its own check). */
static void settable_rc(CG *G, const KirInsn *v, CgVal ox, LLVMValueRef k, LLVMValueRef tag,
                        LLVMValueRef bits, LLVMValueRef val) {
  LLVMValueRef obj = operand(G, ox, 2, v);
  LLVMValueRef site = mksite(G, v, NULL);
  LLVMTypeRef ps[7] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i32, G->i32, G->i64,
                        G->i32 };
  LLVMValueRef as[7] = { G->luaL, site, obj, k, tag, bits, val };
  LLVMValueRef rc = call(G, "kjit_lv_settable_at", G->i32, ps, as, 7);
  /* (stores return KLV_OK or an error code: the same test) */
  LLVMValueRef bad = LLVMBuildICmp(G->B, LLVMIntNE, rc, cg_i32(G, KLV_OK), "");
  IndexErr e = { obj };
  check_rc(G, v, LLVMBuildSelect(G->B, bad, rc, cg_i32(G, 0), ""), raise_index, &e);
}

/* A stored value as (tag, bits, slot): triple's, except that a boolean
** travels in registers (KLV_BOOL), for the inline writes. */
static void stored(CG *G, CgVal x, const KirInsn *at, LLVMValueRef *tag, LLVMValueRef *bits,
                   LLVMValueRef *slot) {
  if (x.t.kind == T_BOOL && x.v && LLVMTypeOf(x.v) == G->i1) {
    *tag = cg_i32(G, KLV_BOOL);
    *bits = LLVMBuildZExt(G->B, x.v, G->i64, "");
    *slot = cg_i32(G, 0);
    return;
  }
  triple(G, x, 1, at, tag, bits, slot);
}

void cg_lua_store(CG *G, const KirInsn *v) {
  CgVal ox = access_obj(G, v);
  LLVMValueRef h = hint(G, ox);
  LLVMValueRef tag, bits, val;
  if (v->op == KIR_SETFIELD) {
    stored(G, cg_val(G, v->args[1]), v, &tag, &bits, &val);
    if (cname(v) && in_ctor(v)) {
      LLVMValueRef ks = LLVMAddGlobal(G->M, G->i8p, "kcg.ctorkey");   /* the key's string, cached */
      LLVMSetInitializer(ks, LLVMConstNull(G->i8p));
      LLVMSetLinkage(ks, LLVMPrivateLinkage);
      LLVMTypeRef ps[8] = { G->i8p, G->i32, G->i8p, G->i8p, LLVMPointerType(G->i8p, 0), G->i32, G->i64, G->i32 };
      LLVMValueRef as[8] = { G->luaL, ox.v, h, text(G, v->k.str.s), ks, tag, bits, val };
      call(G, "kjit_lv_ctorfield", NULL, ps, as, 8);
      return;
    }
    if (cname(v)) {
      LLVMValueRef site = mksite(G, v, v->k.str.s), otag, obits, t;
      objof(G, ox, v, &otag, &obits, &t);
      LLVMTypeRef ps[9] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i64, G->i32, G->i8p,
                            G->i32, G->i64, G->i32 };
      LLVMValueRef as[9] = { G->luaL, site, otag, obits, t, h, tag, bits, val };
      Full f = { "kjit_lv_ssetfield", ps, as, 9 };
      if (fresh(v)) call(G, f.name, G->i32, ps, as, 9);
      else inline_set(G, v, h, site, NULL, tag, bits, &f, NULL);
    } else {
      settable_rc(G, v, ox, strkey(G, v), tag, bits, val);
    }
    return;
  }
  /* SETINDEX */
  stored(G, cg_val(G, v->args[2]), v, &tag, &bits, &val);
  LLVMValueRef isint = NULL, ikey = NULL;
  if (G->sp->types[v->args[1]->id].kind == T_INT) {
    seti_rc(G, v, ox, h, cg_val(G, v->args[1]).v, tag, bits, val);
  } else if ((ikey = dyn_intkey(G, cg_val(G, v->args[1]), &isint))) {
    /* as cg_lua_index's: the inline integer path, one call for the rest */
    LLVMValueRef site = mksite(G, v, NULL), otag, obits, t, ktag, kbits, kslot;
    objof(G, ox, v, &otag, &obits, &t);
    triple(G, cg_val(G, v->args[1]), 0, v, &ktag, &kbits, &kslot);
    LLVMTypeRef ps[12] = { G->i8p, LLVMPointerType(site_type(G), 0), G->i32, G->i64, G->i32, G->i8p,
                           G->i32, G->i64, G->i32, G->i32, G->i64, G->i32 };
    LLVMValueRef as[12] = { G->luaL, site, otag, obits, t, h, ktag, kbits, kslot, tag, bits, val };
    Full f = { "kjit_lv_ssetk", ps, as, 12 };
    LLVMValueRef pk = LLVMBuildSelect(G->B, isint, ikey, cg_i64(G, 0), "");
    if (fresh(v)) call(G, f.name, G->i32, ps, as, 12);
    else {
      CgLView vw;
      const CgLView *V = view_of(G, v, ox, h, &vw);
      inline_set(G, v, h, site, pk, tag, bits, &f, V);
    }
  } else {
    settable_rc(G, v, ox, operand(G, cg_val(G, v->args[1]), 0, v), tag, bits, val);
  }
}

CgVal cg_lua_newtable(CG *G, const KirInsn *v) {
  LLVMValueRef dst = cg_lua_slot(G, v);
  /* a constructor whose list's length is known only when it runs: made
  ** at its SETLIST (cg_lua_setlist), nothing here */
  for (int i = 0; i < v->nusers; i++)
    if (kty_ctor_deferred(G->sp, v->users[i])) {
      Type t = TY(T_LUA);
      t.sub = KTY_LUA_TABLE;
      return mk(t, dst, i8c(G, 0), cg_i64(G, 0));
    }
  /* the sizes the VM gives it (`#` finds its border by them: {a, nil, c}
  ** has length 3), its array part grown to what its list part stores
  ** ({...}: luaV_execute's SETLIST resizes to the last index) */
  int narr = v->aux, nrec = (int)v->k.i;
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op != KIR_SETLIST || u->args[0] != v || kty_ctor_grows(G->sp, u)) continue;
    int last = u->aux + kty_noperands(G->sp, u, 1);
    if (last > narr) narr = last;
  }
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, G->i32 };
  LLVMValueRef as[4] = { G->luaL, dst, cg_i32(G, narr), cg_i32(G, nrec) };
  LLVMValueRef h = call(G, "kjit_lv_newtable", G->i64, ps, as, 4);
  Type t = TY(T_LUA);
  t.sub = KTY_LUA_TABLE;
  return mk(t, dst, i8c(G, 0), h);
}

/* setmetatable(t, mt) (ir_type.c t_lib): one helper call (runtime
** luavalue.c kjit_lv_setmt), which does the library's work where t is a
** table and mt a table or nil, and calls the library's function from the
** call's trampoline otherwise (its errors); the value, t, lands in v's slot. */
CgVal cg_lua_setmetatable(CG *G, const KirInsn *v, CgVal *a) {
  LLVMValueRef dst = cg_lua_slot(G, v), tt, tb, ts, mt, mb, ms;
  triple(G, a[0], 0, v, &tt, &tb, &ts);
  triple(G, a[1], 1, v, &mt, &mb, &ms);
  LLVMTypeRef ps[9] = { G->i8p, G->i32, G->i64, G->i32, G->i32, G->i64, G->i32, G->i32, G->i8p };
  LLVMValueRef as[9] = { G->luaL, tt, tb, ts, mt, mb, ms, dst, cg_lib_callsite(G, v, B_SETMETATABLE) };
  LLVMValueRef h = call(G, "kjit_lv_setmt", G->i64, ps, as, 9);
  Type t = TY(T_LUA);
  t.sub = KTY_LUA_TABLE;
  return mk(t, dst, i8c(G, 0), h);
}

/* A table upvalue or global the function writes into (ir_type.c t_live):
** the real table, through its registry reference. */
CgVal cg_lua_live(CG *G, const KirInsn *v) { return live_table(G, G->sp->liveref[v->id], G->lslot[v->id]); }

/* The constructor's items stored at base + 1 ... base + n of the table
** in slot dst, those past the fixed ones only while the open tail's count
** cnt reaches them (the rest were not given). */
static void store_ctor_items(CG *G, const KirInsn *v, const CgVal *items, int n, int fixed,
                             LLVMValueRef cnt, LLVMValueRef dst, int64_t base) {
  for (int i = 1; i <= n; i++) {
    LLVMBasicBlockRef next = NULL;
    if (i > fixed) {   /* given only when g gave it */
      LLVMBasicBlockRef put = cg_bb(G, "ctorput");
      next = cg_bb(G, "ctornext");
      LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSLE, cg_i32(G, i), cnt, ""), put, next);
      LLVMPositionBuilderAtEnd(G->B, put);
    }
    LLVMValueRef tag, bits, val;
    triple(G, items[i - 1], 0, v, &tag, &bits, &val);
    LLVMTypeRef rps[6] = { G->i8p, G->i32, G->i64, G->i32, G->i64, G->i32 };
    LLVMValueRef ras[6] = { G->luaL, dst, cg_i64(G, base + i), tag, bits, val };
    call(G, "kjit_lv_rawseti", NULL, rps, ras, 6);
    if (next) { LLVMBuildBr(G->B, next); LLVMPositionBuilderAtEnd(G->B, next); }
  }
}

/* {a, g(x)} with g's count known when it runs (kty_ctor_deferred): the
** table made here with the array part the VM's SETLIST gives it (the
** items before and all g gave: luaV_execute resizes to the last index),
** and each item stored, those past g's count not (the table is the
** constructor's value from here on). */
static void setlist_deferred(CG *G, const KirInsn *v) {
  const KirInsn *t = v->args[0];
  LLVMValueRef dst = cg_lua_slot(G, t), h;
  Type tt = TY(T_LUA);
  tt.sub = KTY_LUA_TABLE;
  if (kty_ctor_deferred(G->sp, v) == 2) {   /* a function value's: runtime/luacall.c */
    h = cg_fn_ctor_spread(G, v, dst);
    G->vals[t->id] = mk(tt, dst, i8c(G, 0), h);
    return;
  }
  CgVal items[KTY_CTOR_MAX];
  int n = cg_operands(G, v, 1, items, KTY_CTOR_MAX);
  int fixed = v->nargs - 2;
  LLVMValueRef cnt = cg_open_count(G, v, n);
  LLVMValueRef narr = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntSGT, cnt, cg_i32(G, t->aux), ""),
                                      cnt, cg_i32(G, t->aux), "");
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, G->i32 };
  LLVMValueRef as[4] = { G->luaL, dst, narr, cg_i32(G, (int)t->k.i) };
  h = call(G, "kjit_lv_newtable", G->i64, ps, as, 4);
  store_ctor_items(G, v, items, n, fixed, cnt, dst, 0);
  G->vals[t->id] = mk(tt, dst, i8c(G, 0), h);
}

/* {x = 1, g(x)}, {x = 1, t.f()}, a list past 50 items ending so
** (kty_ctor_grows): the table made at its NEWTABLE with the VM's sizes
** holds its fields; here its array part grows to the last index as the
** VM's SETLIST grows it (runtime kjit_lv_ctor_grow: a new table with the
** same entries, in this slot from here on), and the items are stored
** from v->aux + 1 on, those past g's count not. */
static void setlist_grow(CG *G, const KirInsn *v) {
  const KirInsn *t = v->args[0];
  LLVMValueRef dst = cg_lua_slot(G, t), h;
  Type tt = TY(T_LUA);
  tt.sub = KTY_LUA_TABLE;
  if (kty_ctor_grows(G->sp, v) == 2) {   /* a function value's: runtime/luacall.c */
    h = cg_fn_ctor_spread(G, v, dst);
    G->vals[t->id] = mk(tt, dst, i8c(G, 0), h);
    return;
  }
  CgVal items[KTY_CTOR_MAX];
  int n = cg_operands(G, v, 1, items, KTY_CTOR_MAX);
  int fixed = v->nargs - 2;
  LLVMValueRef cnt = cg_open_count(G, v, n);
  LLVMValueRef last = LLVMBuildAdd(G->B, cnt, cg_i32(G, v->aux), "");
  LLVMTypeRef ps[5] = { G->i8p, G->i32, G->i32, G->i32, G->i32 };
  LLVMValueRef as[5] = { G->luaL, dst, last, cg_i32(G, t->aux), cg_i32(G, (int)t->k.i) };
  h = call(G, "kjit_lv_ctor_grow", G->i64, ps, as, 5);
  store_ctor_items(G, v, items, n, fixed, cnt, dst, v->aux);
  G->vals[t->id] = mk(tt, dst, i8c(G, 0), h);
}

/* The list written inline into the fresh table's array part, in hot code,
** as luatable.c kjit_lt_setlist writes it (its conditions tested here:
** kls_on for the items' slots, room in the array part, which the
** constructor sized, no metatable, a white table, whose GC barrier is a
** no-op; the hint is kjit_lt_none, alimit 0, where the layout is off).
** binary-trees' `{item, left, right}`: 89 instructions in the helper
** against a dozen here. The builder is left where the helper's call goes
** (the checks failed); the returned block is where both paths meet, NULL
** when nothing was emitted. */
static LLVMBasicBlockRef setlist_inline(CG *G, const KirInsn *v, CgVal o, const CgVal *items, int n) {
  const KltLayout *y = layout(G);
  const KlsFrameLayout *fy = frame_layout(G);
  if (y == NULL || fy == NULL || !hot_at(G, v) || v->aux < 0) return NULL;
  LLVMValueRef h = hint(G, o);
  LLVMValueRef on = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildLoad2(G->B, G->i32, kls_on_g(G), ""), cg_i32(G, 0), "");
  LLVMValueRef lim = LLVMBuildZExt(G->B, at(G, h, y->t_alimit, G->i32), G->i64, "");
  LLVMValueRef room = LLVMBuildICmp(G->B, LLVMIntULE, cg_i64(G, (int64_t)v->aux + n), lim, "");
  LLVMValueRef nomt = LLVMBuildICmp(G->B, LLVMIntEQ, at(G, h, y->t_metatable, G->i8p), LLVMConstNull(G->i8p), "");
  LLVMValueRef white = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildAnd(G->B, at(G, h, y->t_marked, G->i8),
                                                                  LLVMConstInt(G->i8, (unsigned)y->white_bits, 0), ""),
                                     LLVMConstInt(G->i8, 0, 0), "");
  LLVMValueRef ok = LLVMBuildAnd(G->B, LLVMBuildAnd(G->B, on, room, ""), LLVMBuildAnd(G->B, nomt, white, ""), "");
  LLVMBasicBlockRef fast = cg_bb(G, "ctorlist"), slow = cg_bb(G, "ctorlistslow"), done = cg_bb(G, "ctorlisted");
  cg_cold_false(G, LLVMBuildCondBr(G->B, ok, fast, slow));
  LLVMPositionBuilderAtEnd(G->B, fast);
  LLVMValueRef arr = at(G, h, y->t_array, G->i8p);
  LLVMValueRef ti = LLVMConstInt(G->i8, (unsigned)y->tag_int, 0), tf = LLVMConstInt(G->i8, (unsigned)y->tag_flt, 0);
  for (int i = 0; i < n; i++) {
    LLVMValueRef bits = NULL, tt;
    CgVal x = items[i];
    if (x.t.kind == T_NIL) {
      tt = LLVMConstInt(G->i8, 0, 0);
    } else if (x.t.kind == T_BOOL) {
      tt = LLVMBuildSelect(G->B, x.v, LLVMConstInt(G->i8, (unsigned)y->tag_true, 0),
                           LLVMConstInt(G->i8, (unsigned)y->tag_false, 0), "");
    } else if (x.t.kind == T_LUA) {
      /* in its slot (tag 0), or a number in registers (tag 1, 2) */
      LLVMValueRef sv = slot_ptr(G, fy, x.v);
      bits = ld(G, sv, 0, G->i64);
      tt = ld(G, sv, fy->slot_tt, G->i8);
      if (!inslot(x)) {   /* (and the tags KLV_BOOL, KLV_NIL, as kjit_lt_setlist takes them; a
                           ** tested read's never comes here: truth_only keeps it out of lists) */
        LLVMValueRef num = LLVMBuildICmp(G->B, LLVMIntNE, x.flag, i8c(G, 0), "");
        LLVMValueRef isb = LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_BOOL), "");
        LLVMValueRef btt = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntNE, x.dims[0], cg_i64(G, 0), ""),
                                           LLVMConstInt(G->i8, (unsigned)y->tag_true, 0),
                                           LLVMConstInt(G->i8, (unsigned)y->tag_false, 0), "");
        LLVMValueRef ntt = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_INT), ""), ti,
                                           LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_FLT), ""),
                                                           tf, LLVMBuildSelect(G->B, isb, btt, LLVMConstInt(G->i8, 0, 0), ""), ""), "");
        bits = LLVMBuildSelect(G->B, num, x.dims[0], bits, "");
        tt = LLVMBuildSelect(G->B, num, ntt, tt, "");
      }
    } else {   /* a number (isnumkind: setlist_batch) */
      LLVMValueRef t8;
      numtag(G, x, &t8, &bits);
      tt = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, t8, i8c(G, KLV_INT), ""), ti, tf, "");
    }
    int64_t off = ((int64_t)v->aux + i) * y->tv_size;
    if (bits) put(G, arr, (int)off, bits);
    put(G, arr, (int)off + y->tv_tt, tt);
  }
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, slow);
  return done;
}

/* The whole list in one call (kjit_lv_setlist, which writes the fresh
** table's array part directly: runtime/luatable.c kjit_lt_setlist), the
** items as KlvItem records in an array of this frame, when every item
** travels without a scratch slot (numbers, Lua values, booleans in
** registers, nil): `{item, left, right}`. 0: store them one by one. */
static int setlist_batch(CG *G, const KirInsn *v, CgVal o, const CgVal *items, int n) {
  if (n < 1) return 0;
  for (int i = 0; i < n; i++) {
    int k = items[i].t.kind;
    if (!(k == T_LUA || isnumkind(k) || k == T_NIL ||
          (k == T_BOOL && items[i].v && LLVMTypeOf(items[i].v) == G->i1)))
      return 0;
  }
  LLVMBasicBlockRef done = setlist_inline(G, v, o, items, n);
  LLVMTypeRef fs[3] = { G->i32, G->i32, G->i64 };   /* KlvItem */
  LLVMTypeRef ity = LLVMStructTypeInContext(G->C, fs, 3, 0);
  LLVMValueRef arr = cg_alloca(G, LLVMArrayType(ity, (unsigned)n), "ctoritems");
  for (int i = 0; i < n; i++) {
    LLVMValueRef tag, bits, val;
    if (items[i].t.kind == T_NIL) {
      tag = cg_i32(G, KLV_NIL); bits = cg_i64(G, 0); val = cg_i32(G, 0);
    } else {
      stored(G, items[i], v, &tag, &bits, &val);   /* (no scratch slot for these kinds) */
    }
    LLVMValueRef f[3] = { tag, val, bits };
    for (int j = 0; j < 3; j++) {
      LLVMValueRef idx[3] = { cg_i32(G, 0), cg_i32(G, i), cg_i32(G, j) };
      LLVMBuildStore(G->B, f[j], LLVMBuildInBoundsGEP2(G->B, LLVMArrayType(ity, (unsigned)n), arr, idx, 3, ""));
    }
  }
  LLVMTypeRef ps[6] = { G->i8p, G->i32, G->i8p, G->i64, G->i32, G->i8p };
  LLVMValueRef as[6] = { G->luaL, o.v, hint(G, o), cg_i64(G, v->aux), cg_i32(G, n),
                         LLVMBuildPointerCast(G->B, arr, G->i8p, "") };
  call(G, "kjit_lv_setlist", NULL, ps, as, 6);
  if (done) {
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, done);
  }
  return 1;
}

void cg_lua_setlist(CG *G, const KirInsn *v) {
  if (kty_ctor_deferred(G->sp, v)) { setlist_deferred(G, v); return; }
  if (kty_ctor_grows(G->sp, v)) { setlist_grow(G, v); return; }
  CgVal o = cg_val(G, v->args[0]);
  /* the items, an open last one ({...}, {f()}) expanded: as many as the
  ** typer knows there are */
  CgVal items[KTY_CTOR_MAX];
  int n = cg_operands(G, v, 1, items, KTY_CTOR_MAX);
  if (setlist_batch(G, v, o, items, n)) return;
  for (int i = 1; i <= n; i++) {
    LLVMValueRef tag, bits, val;
    triple(G, items[i - 1], 0, v, &tag, &bits, &val);
    LLVMTypeRef ps[6] = { G->i8p, G->i32, G->i64, G->i32, G->i64, G->i32 };
    LLVMValueRef as[6] = { G->luaL, o.v, cg_i64(G, (int64_t)v->aux + i), tag, bits, val };
    call(G, "kjit_lv_rawseti", NULL, ps, as, 6);
  }
}

static void raise_len(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  (void)rc;
  typeerror(G, v, *(LLVMValueRef *)ud, "attempt to get length of a ", value_info(G, v, 0));
}

CgVal cg_lua_len(CG *G, const KirInsn *v) {
  LLVMValueRef obj = operand(G, cg_val(G, v->args[0]), 2, v);
  LLVMValueRef dst = cg_lua_slot(G, v), out = outp(G);
  LLVMTypeRef ps[5] = { G->i8p, G->i32, G->i32, LLVMPointerType(G->i64, 0), G->i8p };
  LLVMValueRef as[5] = { G->luaL, obj, dst, out, cg_lib_site(G, v, "#") };   /* for __len */
  LLVMValueRef rc = call(G, "kjit_lv_len", G->i32, ps, as, 5);
  check_rc(G, v, rc, raise_len, &obj);
  return got(G, TY(T_LUA), dst, rc, out);
}

/* ---- Arithmetic and comparisons ------------------------------------------------------------ */

static int lua_op(int kop) {
  switch (kop) {
  case KIR_ADD: return LUA_OPADD; case KIR_SUB: return LUA_OPSUB;
  case KIR_MUL: return LUA_OPMUL; case KIR_MOD: return LUA_OPMOD;
  case KIR_POW: return LUA_OPPOW; case KIR_DIV: return LUA_OPDIV;
  case KIR_IDIV: return LUA_OPIDIV; case KIR_BAND: return LUA_OPBAND;
  case KIR_BOR: return LUA_OPBOR; case KIR_BXOR: return LUA_OPBXOR;
  case KIR_SHL: return LUA_OPSHL; case KIR_SHR: return LUA_OPSHR;
  case KIR_UNM: return LUA_OPUNM; case KIR_BNOT: return LUA_OPBNOT;
  default: return -1;
  }
}

/* Can x take the inline number path (when its tag says so)? */
static int numcapable(CgVal x) {
  return isnumkind(x.t.kind) || (x.t.kind == T_LUA && !inslot(x));
}

/* x is a number now (i1). */
static LLVMValueRef isnumber(CG *G, CgVal x) {
  return x.t.kind == T_LUA ? isnum_tag(G, x) : cg_i1(G, 1);
}

static CgVal asnum(CG *G, CgVal x) { return x.t.kind == T_LUA ? numof(G, x) : x; }

/* x as (is an integer: i1, its i64, its value as a double) for flat_arith;
** 0 for a kind it does not take. */
static int flat_operand(CG *G, CgVal x, LLVMValueRef *isint, LLVMValueRef *iv, LLVMValueRef *fv) {
  switch (x.t.kind) {
  case T_INT:
    *isint = cg_i1(G, 1); *iv = x.v; *fv = LLVMBuildSIToFP(G->B, x.v, G->f64, "");
    return 1;
  case T_F64:
    *isint = cg_i1(G, 0); *iv = cg_i64(G, 0); *fv = x.v;
    return 1;
  case T_NUMBER:
    if (x.t.fsub && x.t.fsub != T_F64) return 0;
    *isint = LLVMBuildNot(G->B, x.isf, "");
    *iv = x.v;
    *fv = LLVMBuildSelect(G->B, x.isf, LLVMBuildBitCast(G->B, x.v, G->f64, ""),
                          LLVMBuildSIToFP(G->B, x.v, G->f64, ""), "");
    return 1;
  default: return 0;
  }
}

/* a + b, a - b, a * b and a / b on two numbers either of which may be an
** integer or a float at run time (values read from tables), without
** branches: both the integer result (wrapping, as Lua's) and the float
** result (each operand converted as luaV's tonumber does, an exact
** sitofp) are computed, and the operands' kinds pick one. cg_split's
** four-way branch per operation made the bulk of nbody's code: 9 blocks
** per operation, 1 now. / is a float either way. Not with fastmath
** (cg_num.c's flags on float operations stay its own). Returns 0 when it
** does not apply. */
static int flat_arith(CG *G, const KirInsn *v, CgVal *a, LLVMValueRef *tag, LLVMValueRef *bits) {
  int op = v->op;
  if (G->fastmath || (op != KIR_ADD && op != KIR_SUB && op != KIR_MUL && op != KIR_DIV)) return 0;
  if (a[0].t.kind != T_NUMBER && a[1].t.kind != T_NUMBER) return 0;
  LLVMValueRef ii[2], iv[2], fv[2];
  for (int i = 0; i < 2; i++)
    if (!flat_operand(G, a[i], &ii[i], &iv[i], &fv[i])) return 0;
  LLVMValueRef fr, ir = NULL;
  switch (op) {
  case KIR_ADD: fr = LLVMBuildFAdd(G->B, fv[0], fv[1], ""); ir = LLVMBuildAdd(G->B, iv[0], iv[1], ""); break;
  case KIR_SUB: fr = LLVMBuildFSub(G->B, fv[0], fv[1], ""); ir = LLVMBuildSub(G->B, iv[0], iv[1], ""); break;
  case KIR_MUL: fr = LLVMBuildFMul(G->B, fv[0], fv[1], ""); ir = LLVMBuildMul(G->B, iv[0], iv[1], ""); break;
  default: fr = LLVMBuildFDiv(G->B, fv[0], fv[1], ""); break;
  }
  LLVMValueRef fb = LLVMBuildBitCast(G->B, fr, G->i64, "");
  if (ir == NULL) {
    *tag = i8c(G, KLV_FLT);
    *bits = fb;
    return 1;
  }
  LLVMValueRef both = LLVMBuildAnd(G->B, ii[0], ii[1], "");
  *tag = LLVMBuildSelect(G->B, both, i8c(G, KLV_INT), i8c(G, KLV_FLT), "");
  *bits = LLVMBuildSelect(G->B, both, ir, fb, "");
  return 1;
}

/* The slow paths of arithmetic and comparisons on values that may be
** numbers (lua_arith, metamethods) are weighted cold: numeric code over
** tables meets numbers there, and the weights put the calls out of the
** loop's straight line and their spills where they run. */
CgVal cg_lua_arith(CG *G, const KirInsn *v) {
  int unary = v->op == KIR_UNM || v->op == KIR_BNOT;
  int n = unary ? 1 : 2;
  CgVal x[2];
  for (int i = 0; i < n; i++) x[i] = cg_val(G, v->args[i]);
  LLVMValueRef dst = cg_lua_slot(G, v);
  int fast = numcapable(x[0]) && (unary || numcapable(x[1]));
  LLVMBasicBlockRef fb = NULL, sb = cg_bb(G, "arslow"), done = cg_bb(G, "ardone");
  LLVMValueRef ftag = NULL, fbits = NULL;
  CgVal a[2];
  if (fast && !unary) {
    /* + - * / without a block of their own: flat_arith's result computed
    ** before the test (on anything but numbers it is meaningless and
    ** unused: these operations never trap), the test then picks it or
    ** the slow path's. One block fewer per operation of table code. */
    for (int i = 0; i < n; i++) a[i] = asnum(G, x[i]);
    if (flat_arith(G, v, a, &ftag, &fbits)) {
      LLVMValueRef both = LLVMBuildAnd(G->B, isnumber(G, x[0]), isnumber(G, x[1]), "");
      fb = LLVMGetInsertBlock(G->B);
      cg_cold_false(G, LLVMBuildCondBr(G->B, both, done, sb));   /* (cold: above) */
      fast = 2;
    }
  }
  if (fast == 2) {
    /* (done above) */
  } else if (fast) {   /* numbers: inline, as cg_num.c computes them */
    fb = cg_bb(G, "arfast");
    LLVMValueRef both = isnumber(G, x[0]);
    if (!unary) both = LLVMBuildAnd(G->B, both, isnumber(G, x[1]), "");
    cg_cold_false(G, LLVMBuildCondBr(G->B, both, fb, sb));
    LLVMPositionBuilderAtEnd(G->B, fb);
    for (int i = 0; i < n; i++) a[i] = asnum(G, x[i]);
    if (unary || !flat_arith(G, v, a, &ftag, &fbits)) {
      Type rt = TY(T_NUMBER);
      rt.fsub = T_F64;
      CgVal r = cg_arith_on(G, v, a, rt);
      numtag(G, r, &ftag, &fbits);
    }
    fb = LLVMGetInsertBlock(G->B);
    LLVMBuildBr(G->B, done);
  } else {
    LLVMBuildBr(G->B, sb);
  }
  LLVMPositionBuilderAtEnd(G->B, sb);   /* anything else: lua_arith, metamethods */
  /* one call (luavalue.c kjit_lv_sarith) boxes, runs and raises */
  /* the metamethod's event and order where lcode.c's form differs from
  ** the IR's (`x - 1`, `1 + x`: ir_build.c kir_arith_mm) */
  int event = v->op, flip = 0;
  lua_Integer imm = 0;
  CgVal y[2] = { x[0], unary ? x[0] : x[1] };
  if (!unary && kir_arith_mm(G->sp->ir->proto, v, &event, &flip, &imm) && event != v->op)
    y[1] = cg_mk(TY(T_INT), cg_i64(G, (int64_t)imm));
  LLVMValueRef ta, ba, sa, tb, bb, sb2;
  triple(G, y[flip], flip, v, &ta, &ba, &sa);
  if (unary) { tb = ta; bb = ba; sb2 = sa; }
  else triple(G, y[!flip], !flip, v, &tb, &bb, &sb2);
  LLVMValueRef out = outp(G);
  const char *ia = cg_varinfo(G, v, flip), *ib = unary ? "" : cg_varinfo(G, v, !flip);
  /* the operation's constants in one record (luavalue.h KlvArith) */
  LLVMTypeRef sf[5] = { G->i32, G->i32, G->i8p, G->i8p, G->i8p };
  LLVMValueRef si[5] = { cg_i32(G, lua_op(event)), cg_i32(G, v->line), G->chunkname, text(G, ia), text(G, ib) };
  LLVMValueRef site = LLVMAddGlobal(G->M, LLVMStructTypeInContext(G->C, sf, 5, 0), "kcg.arith");
  LLVMSetInitializer(site, LLVMConstStructInContext(G->C, si, 5, 0));
  LLVMSetLinkage(site, LLVMPrivateLinkage);
  LLVMSetGlobalConstant(site, 1);
  LLVMTypeRef ps[10] = { G->i8p, LLVMTypeOf(site), G->i32, G->i64, G->i32, G->i32, G->i64, G->i32,
                         G->i32, LLVMPointerType(G->i64, 0) };
  LLVMValueRef as[10] = { G->luaL, site, ta, ba, sa, tb, bb, sb2, dst, out };
  LLVMValueRef rc = call(G, "kjit_lv_sarith", G->i32, ps, as, 10);
  LLVMValueRef stag = LLVMBuildTrunc(G->B, rc, G->i8, ""), sbits = LLVMBuildLoad2(G->B, G->i64, out, "");
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  if (!fast) return mk(TY(T_LUA), dst, stag, sbits);
  LLVMValueRef tp = LLVMBuildPhi(G->B, G->i8, ""), bp = LLVMBuildPhi(G->B, G->i64, "");
  LLVMValueRef tv[2] = { ftag, stag }, bv[2] = { fbits, sbits };
  LLVMBasicBlockRef from[2] = { fb, send };
  LLVMAddIncoming(tp, tv, from, 2);
  LLVMAddIncoming(bp, bv, from, 2);
  return mk(TY(T_LUA), dst, tp, bp);
}

/* x == nil for a Lua value x (i1): no metamethod takes part (__eq only
** compares two tables or two userdata), so x's tag decides, and a value in
** its slot is tested there (kjit_lv_isnil), where kjit_lv_comparex pushed
** both and asked lua_compare: the end test of every generic for's turn. */
static CgVal eq_nil(CG *G, CgVal x) {
  if (x.t.sub == KTY_LUA_TABLE) return cg_mk(TY(T_BOOL), cg_i1(G, 0));
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, x.v };
  if (inslot(x))
    return cg_mk(TY(T_BOOL), LLVMBuildICmp(G->B, LLVMIntNE, call(G, "kjit_lv_isnil", G->i32, ps, as, 2),
                                           cg_i32(G, 0), ""));
  /* a tag: a number or a read only tested (KLV_BOOL, KLV_NIL: inline_get's truth) */
  LLVMValueRef tagnil = LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_NIL), "");
  LLVMValueRef tagged = LLVMBuildICmp(G->B, LLVMIntNE, x.flag, i8c(G, 0), "");
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), sb = cg_bb(G, "nilslot"), done = cg_bb(G, "nildone");
  LLVMBuildCondBr(G->B, tagged, done, sb);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMValueRef r = LLVMBuildICmp(G->B, LLVMIntNE, call(G, "kjit_lv_isnil", G->i32, ps, as, 2), cg_i32(G, 0), "");
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef phi = LLVMBuildPhi(G->B, G->i1, "");
  LLVMValueRef vs[2] = { tagnil, r };
  LLVMBasicBlockRef from[2] = { here, send };
  LLVMAddIncoming(phi, vs, from, 2);
  return cg_mk(TY(T_BOOL), phi);
}

CgVal cg_lua_compare(CG *G, const KirInsn *v) {
  CgVal x[2] = { cg_val(G, v->args[0]), cg_val(G, v->args[1]) };
  if (v->op == KIR_EQ) {
    for (int i = 0; i < 2; i++)
      if (x[i].t.kind == T_LUA && x[1 - i].t.kind == T_NIL) return eq_nil(G, x[i]);
  }
  int fast = numcapable(x[0]) && numcapable(x[1]);
  LLVMBasicBlockRef fb = NULL, sb = cg_bb(G, "cmpslow"), done = cg_bb(G, "cmpdone");
  LLVMValueRef fr = NULL;
  if (fast) {
    fb = cg_bb(G, "cmpfast");
    cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildAnd(G->B, isnumber(G, x[0]), isnumber(G, x[1]), ""), fb, sb));
    LLVMPositionBuilderAtEnd(G->B, fb);
    fr = cg_compare_on(G, v, asnum(G, x[0]), asnum(G, x[1]));
    fb = LLVMGetInsertBlock(G->B);
    LLVMBuildBr(G->B, done);
  } else {
    LLVMBuildBr(G->B, sb);
  }
  LLVMPositionBuilderAtEnd(G->B, sb);   /* one call: luavalue.c kjit_lv_comparex */
  LLVMValueRef ta, ba, sa, tb, bb, sb2;
  triple(G, x[0], 0, v, &ta, &ba, &sa);
  triple(G, x[1], 1, v, &tb, &bb, &sb2);
  int op = v->op == KIR_EQ ? LUA_OPEQ : v->op == KIR_LT ? LUA_OPLT : LUA_OPLE;
  LLVMTypeRef ps[11] = { G->i8p, G->i32, G->i32, G->i64, G->i32, G->i32, G->i64, G->i32, G->i8p,
                         G->i32, G->i8p };
  LLVMValueRef as[11] = { G->luaL, cg_i32(G, op), ta, ba, sa, tb, bb, sb2, G->chunkname,
                          cg_i32(G, v->line),   /* (a C metamethod is called from there) */
                          cg_lib_site(G, v, op == LUA_OPEQ ? "op:==" : op == LUA_OPLT ? "op:<" : "op:<=") };
  LLVMValueRef r = call(G, "kjit_lv_comparex", G->i32, ps, as, 11);
  LLVMValueRef sr = LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i32(G, 0), "");
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  if (!fast) return cg_mk(TY(T_BOOL), sr);
  LLVMValueRef phi = LLVMBuildPhi(G->B, G->i1, "");
  LLVMValueRef vs[2] = { fr, sr };
  LLVMBasicBlockRef from[2] = { fb, send };
  LLVMAddIncoming(phi, vs, from, 2);
  return cg_mk(TY(T_BOOL), phi);
}

LLVMValueRef cg_lua_truthy(CG *G, CgVal x) {
  if (x.t.sub == KTY_LUA_TABLE) return cg_i1(G, 1);
  /* a number, or a table whose address compiled code holds (bits while
  ** the tag is 0: hint's rule), is true without a call (`if t[2] then`) */
  LLVMValueRef isn = isnum_tag(G, x), val = cg_i1(G, 1);
  if (x.dims[0] && !inslot(x)) {
    /* (a read only tested: also KLV_BOOL with 0 or 1 in bits, KLV_NIL;
    ** inline_get's truth) */
    LLVMValueRef nz = LLVMBuildICmp(G->B, LLVMIntNE, x.dims[0], cg_i64(G, 0), "");
    isn = LLVMBuildOr(G->B, isn, nz, "");
    LLVMValueRef isb = LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_BOOL), "");
    LLVMValueRef isnil = LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_NIL), "");
    val = LLVMBuildSelect(G->B, isb, nz, LLVMBuildNot(G->B, isnil, ""), "");
  } else if (x.dims[0]) {
    isn = LLVMBuildICmp(G->B, LLVMIntNE, x.dims[0], cg_i64(G, 0), "");
  }
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), sb = cg_bb(G, "truthslot"), done = cg_bb(G, "truthdone");
  LLVMBuildCondBr(G->B, isn, done, sb);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, x.v };
  LLVMValueRef r = LLVMBuildICmp(G->B, LLVMIntNE, call(G, "kjit_lv_truthy", G->i32, ps, as, 2), cg_i32(G, 0), "");
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef phi = LLVMBuildPhi(G->B, G->i1, "");
  LLVMValueRef vs[2] = { val, r };
  LLVMBasicBlockRef from[2] = { here, send };
  LLVMAddIncoming(phi, vs, from, 2);
  return phi;
}

/* ---- Lua values where numbers are needed ----------------------------------------------------- */

typedef struct NumErr { LLVMValueRef slot; const char *pre, *post; } NumErr;

static void raise_num(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  (void)rc;
  NumErr *e = ud;
  typeerror(G, v, e->slot, e->pre, e->post);
}

/* x (a Lua value, operand argi of use) as a number (T_NUMBER, float side
** f64): a number as it is; a string converted as luaL_checknumber does;
** anything else raises the error Lua raises for that use (a math
** function's argument, a for loop's bound). */
static CgVal tonumber(CG *G, CgVal x, const KirInsn *use, int strings, const char *pre,
                      const char *post);

/* "bad argument #argi to 'name' (number expected, got ": a math
** function's call use (cg_chain.c's sqrt too). */
const char *cg_lua_tonumber_pre(CG *G, const KirInsn *use, int argi) {
  const char *name = cg_argerror_name(G, use, kty_call_name(G->sp, use, G->sp->types[use->args[0]->id].ref));
  return cg_strf(G, use, "bad argument #%d to '%s' (number expected, got ", argi, name);
}

CgVal cg_lua_tonumber(CG *G, CgVal x, const KirInsn *use, int argi) {
  const char *pre;
  if (use->op == KIR_FORPREP) {
    static const char *const what[3] = { "initial value", "limit", "step" };
    pre = cg_strf(G, use, "bad 'for' %s (number expected, got ", what[argi]);
  } else {
    if (use->op == KIR_CALL && G->sp->types[use->args[0]->id].kind == T_BUILTIN && argi == 2 &&
        (G->sp->types[use->args[0]->id].ref == B_ARR_FILL ||
         G->sp->types[use->args[0]->id].ref == B_KJIT_FULL))
      /* a fill value: buffer.c's storeval is strict (no strings) and names no argument */
      return tonumber(G, x, use, 0, "number expected, got ", "");
    if (use->op == KIR_CALL && G->sp->types[use->args[0]->id].kind == T_BUILTIN)   /* kjit.f32: 'f32' */
      pre = cg_lua_tonumber_pre(G, use, argi);
    else
      pre = cg_strf(G, use, "bad argument #%d to '%s' (number expected, got ", argi, "?");
  }
  return tonumber(G, x, use, 1, pre, ")");
}

/* x (a Lua value) stored into a kjit array's element or a record field of
** a number dtype: a number as it is, anything else (strings included: the
** array's __newindex is strict, buffer.c storeval) raises its words. */
CgVal cg_lua_store_number(CG *G, CgVal x, const KirInsn *use) {
  return tonumber(G, x, use, 0, "number expected, got ", "");
}

/* x (a Lua value) stored into a bool array's element or field: a boolean
** as 0/1 (i1), anything else raises buffer.c's KB_BOOL_EXPECTED words. */
LLVMValueRef cg_lua_store_bool(CG *G, CgVal x, const KirInsn *use) {
  LLVMValueRef isn = isnum_tag(G, x);
  LLVMBasicBlockRef nb = cg_bb(G, "tobnum"), sb = cg_bb(G, "tobslot");
  LLVMBuildCondBr(G->B, isn, nb, sb);
  LLVMPositionBuilderAtEnd(G->B, nb);
  raise_msg(G, use, "boolean expected, got number");
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, x.v };
  LLVMValueRef r = call(G, "kjit_ls_tobool", G->i32, ps, as, 2);
  NumErr e = { x.v, "boolean expected, got ", "" };
  LLVMValueRef bad = LLVMBuildICmp(G->B, LLVMIntSLT, r, cg_i32(G, 0), "");
  check_rc(G, use, LLVMBuildSelect(G->B, bad, cg_i32(G, 0x10), cg_i32(G, 0), ""), raise_num, &e);
  return LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i32(G, 0), "");
}

/* k (a Lua value) as a kjit array's index (a[t.i]): a number (T_NUMBER,
** checked then as any index); anything else raises the array's words
** (runtime/luastring.c kjit_ls_arraykey). */
CgVal cg_lua_array_key(CG *G, CgVal k, const KirInsn *use, int store) {
  LLVMValueRef isn = isnum_tag(G, k);
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), sb = cg_bb(G, "keyslot"), done = cg_bb(G, "keydone");
  LLVMBuildCondBr(G->B, isn, done, sb);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMValueRef out = outp(G);
  LLVMTypeRef ps[6] = { G->i8p, G->i32, G->i32, G->i8p, G->i32, LLVMPointerType(G->i64, 0) };
  LLVMValueRef as[6] = { G->luaL, k.v, cg_i32(G, store), G->chunkname, cg_i32(G, use->line), out };
  LLVMValueRef r = call(G, "kjit_ls_arraykey", G->i32, ps, as, 6);
  LLVMValueRef stag = LLVMBuildTrunc(G->B, r, G->i8, "");
  LLVMValueRef sbits = LLVMBuildLoad2(G->B, G->i64, out, "");
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef tp = LLVMBuildPhi(G->B, G->i8, ""), bp = LLVMBuildPhi(G->B, G->i64, "");
  LLVMValueRef tv[2] = { inslot(k) ? i8c(G, 0) : k.flag, stag };
  LLVMValueRef bv[2] = { inslot(k) ? cg_i64(G, 0) : k.dims[0], sbits };
  LLVMBasicBlockRef from[2] = { here, send };
  LLVMAddIncoming(tp, tv, from, 2);
  LLVMAddIncoming(bp, bv, from, 2);
  return numof(G, mk(TY(T_LUA), k.v, tp, bp));
}

/* The Lua value just written into v's own slot (a library call's
** result: cg_lib.c). */
CgVal cg_lua_inslot(CG *G, const KirInsn *v) {
  return mk(TY(T_LUA), cg_lua_slot(G, v), i8c(G, 0), cg_i64(G, 0));
}

/* x (a Lua value) as a recipe's value (cg_lib.c): *op KRL_SLOT and the
** slot, or a number kept in registers (tag 1: KRL_INT, 2: KRL_FLT) and
** its bits. */
void cg_lua_recipe_value(CG *G, CgVal x, int64_t kslot, int64_t kint, int64_t kflt,
                         LLVMValueRef *op, LLVMValueRef *word) {
  LLVMValueRef slot = LLVMBuildSExt(G->B, x.v, G->i64, "");
  if (inslot(x)) { *op = cg_i64(G, kslot); *word = slot; return; }
  LLVMValueRef num = isnum_tag(G, x);
  LLVMValueRef isf = LLVMBuildICmp(G->B, LLVMIntEQ, x.flag, i8c(G, KLV_FLT), "");
  *op = LLVMBuildSelect(G->B, num, LLVMBuildSelect(G->B, isf, cg_i64(G, kflt), cg_i64(G, kint), ""),
                        cg_i64(G, kslot), "");
  *word = LLVMBuildSelect(G->B, num, x.dims[0], slot, "");
}

/* Before `..` runs on the Lua value x (operand argi of v): anything but a
** string, a number or a value with a __concat metamethod raises Lua's
** "attempt to concatenate a <type> value (local 'x')" at v's line, as the
** VM words it (lua_concat, called from C, would give neither). */
void cg_lua_concat_check(CG *G, CgVal x, const KirInsn *v, int argi) {
  cg_lua_concat_check2(G, x, NULL, v, argi);
}

/* The same, for an operand of the last pair (a .. b), whose partner may
** hold the __concat metamethod that Lua calls (luaT_tryconcatTM tries the
** first operand's, then the second's): no error then. */
void cg_lua_concat_check2(CG *G, CgVal x, const CgVal *partner, const KirInsn *v, int argi) {
  LLVMBasicBlockRef sb = cg_bb(G, "catslot"), done = cg_bb(G, "catok");
  LLVMBuildCondBr(G->B, isnum_tag(G, x), done, sb);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMValueRef pslot = cg_i32(G, 0);   /* 0: no partner that may have __concat */
  if (partner && partner->t.kind == T_LUA)
    pslot = LLVMBuildSelect(G->B, isnum_tag(G, *partner), cg_i32(G, 0), partner->v, "");
  LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
  LLVMValueRef as[3] = { G->luaL, x.v, pslot };
  LLVMValueRef r = call(G, "kjit_ls_concatok2", G->i32, ps, as, 3);
  NumErr e = { x.v, "attempt to concatenate a ", value_info(G, v, argi) };
  check_rc(G, v, LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, r, cg_i32(G, 0), ""),
                                 cg_i32(G, 0x10), cg_i32(G, 0), ""), raise_num, &e);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
}

/* x is a number, or helper (kjit_ls_strnum, kjit_ls_concatok) accepts it;
** else "attempt to concatenate a <type> value" at v's line, naming no
** variable. */
static void concat_dtype_check(CG *G, CgVal x, const KirInsn *v, const char *helper) {
  LLVMBasicBlockRef sb = cg_bb(G, "catdt"), done = cg_bb(G, "catdtok");
  LLVMBuildCondBr(G->B, isnum_tag(G, x), done, sb);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, x.v };
  LLVMValueRef r = call(G, helper, G->i32, ps, as, 2);
  NumErr e = { x.v, "attempt to concatenate a ", " value" };
  check_rc(G, v, LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, r, cg_i32(G, 0), ""),
                                 cg_i32(G, 0x10), cg_i32(G, 0), ""), raise_num, &e);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
}

/* Before `..` runs on the Lua value x beside a dtype object in the last
** pair of v: the object's __concat (host/dtype.c dt_concat) runs first and
** takes only a string or a number, else raises "attempt to concatenate a
** <type> value", naming no variable (ir_type.c t_concat). */
void cg_lua_concat_dtype(CG *G, CgVal x, const KirInsn *v) {
  concat_dtype_check(G, x, v, "kjit_ls_strnum");
}

/* `x .. kjit.f32` at the end of a chain, x a Lua value (refuse3): Lua
** tries x's own __concat first, then the dtype object's (host/dtype.c
** dt_concat, which takes strings and numbers). So x may be a string, a
** number, or have a __concat (cg_lib_concat then passes the object itself
** to lua_concat, which calls x's metamethod with it); anything else raises
** dt_concat's error, at v's line, naming no variable. */
void cg_lua_concat_dtype_left(CG *G, CgVal x, const KirInsn *v) {
  concat_dtype_check(G, x, v, "kjit_ls_concatok");
}

/* Before `..` runs on operand argi of v, a nil (isnil) or a boolean, in
** the last pair beside the Lua value partner: Lua calls the partner's
** __concat (luaT_tryconcatTM) if it has one, else raises "attempt to
** concatenate a nil value" naming this operand (luaG_concaterror: the
** partner, a string or a number, is never the one named, and a partner
** that is neither was checked first, cg_lib_concat's order). */
void cg_lua_concat_nilpair(CG *G, int isnil, CgVal partner, const KirInsn *v, int argi) {
  if (partner.t.kind != T_LUA) cg_error(G, v, "internal error: a nil concatenated beside no Lua value");
  LLVMBasicBlockRef sb = cg_bb(G, "catpslot"), bad = cg_bb(G, "catbad"), done = cg_bb(G, "catok");
  LLVMBuildCondBr(G->B, isnum_tag(G, partner), bad, sb);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, partner.v };
  LLVMValueRef r = call(G, "kjit_ls_hasconcat", G->i32, ps, as, 2);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i32(G, 0), ""), done, bad);
  LLVMPositionBuilderAtEnd(G->B, bad);
  const char *msg = cg_strf(G, v, "attempt to concatenate a %s value%s", isnil ? "nil" : "boolean",
                            cg_varinfo(G, v, argi));
  cg_raise(G, KE_TYPEERR, v->line, cg_i64(G, 0), NULL, NULL, msg);
  LLVMPositionBuilderAtEnd(G->B, done);
}

/* x as a number, else raises pre <Lua's type name of x> post at use's
** line; strings converted (luaL_checknumber) when `strings`. */
static CgVal tonumber(CG *G, CgVal x, const KirInsn *use, int strings, const char *pre,
                      const char *post) {
  LLVMValueRef isn = isnum_tag(G, x);
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), sb = cg_bb(G, "tonumslot"), done = cg_bb(G, "tonumdone");
  LLVMBuildCondBr(G->B, isn, done, sb);
  LLVMPositionBuilderAtEnd(G->B, sb);
  LLVMValueRef out = outp(G);
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, LLVMPointerType(G->i64, 0) };
  LLVMValueRef as[4] = { G->luaL, x.v, cg_i32(G, strings), out };
  LLVMValueRef r = call(G, "kjit_lv_tonum", G->i32, ps, as, 4);
  NumErr e = { x.v, pre, post };
  LLVMValueRef bad = LLVMBuildICmp(G->B, LLVMIntSLT, r, cg_i32(G, 0), "");
  check_rc(G, use, LLVMBuildSelect(G->B, bad, cg_i32(G, 0x10), cg_i32(G, 0), ""), raise_num, &e);
  LLVMValueRef stag = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, r, cg_i32(G, 1), ""),
                                      i8c(G, KLV_FLT), i8c(G, KLV_INT), "");
  LLVMValueRef sbits = LLVMBuildLoad2(G->B, G->i64, out, "");
  LLVMBasicBlockRef send = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef tp = LLVMBuildPhi(G->B, G->i8, ""), bp = LLVMBuildPhi(G->B, G->i64, "");
  LLVMValueRef tv[2] = { inslot(x) ? i8c(G, 0) : x.flag, stag };
  LLVMValueRef bv[2] = { inslot(x) ? cg_i64(G, 0) : x.dims[0], sbits };
  LLVMBasicBlockRef from[2] = { here, send };
  LLVMAddIncoming(tp, tv, from, 2);
  LLVMAddIncoming(bp, bv, from, 2);
  return numof(G, mk(TY(T_LUA), x.v, tp, bp));
}

/* ---- Phis, calls and returns ----------------------------------------------------------------- */

/* x (any boxable value) as a Lua value whose slot is dst: numbers stay in
** registers, anything else is written to dst. */
static CgVal to_lua(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at) {
  int ret = at && at->op == KIR_RET;   /* (a result: copied inline, copy_slot_as) */
  if (x.t.kind == T_LUA) {
    if (inslot(x)) { copy_slot_as(G, x.v, dst, ret); return mk(x.t, dst, i8c(G, 0), x.dims[0] ? x.dims[0] : cg_i64(G, 0)); }
    LLVMBasicBlockRef sb = cg_bb(G, "tlslot"), done = cg_bb(G, "tldone");
    LLVMBuildCondBr(G->B, isnum_tag(G, x), done, sb);
    LLVMPositionBuilderAtEnd(G->B, sb);
    copy_slot_as(G, x.v, dst, ret);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, done);
    return mk(x.t, dst, x.flag, x.dims[0]);
  }
  if (isnumkind(x.t.kind)) {
    LLVMValueRef tag, bits;
    numtag(G, x, &tag, &bits);
    return mk(TY(T_LUA), dst, tag, bits);
  }
  cg_lua_box(G, x, dst, at);
  if (x.t.kind == T_TABLE) {   /* a frozen table passed on: its address, the hint */
    LLVMTypeRef ps[2] = { G->i8p, G->i32 };
    LLVMValueRef as[2] = { G->luaL, dst };
    Type t = TY(T_LUA);
    t.sub = KTY_LUA_TABLE;
    return mk(t, dst, i8c(G, 0), call(G, "kjit_lv_ptr", G->i64, ps, as, 2));
  }
  return mk(TY(T_LUA), dst, i8c(G, 0), cg_i64(G, 0));
}

CgVal cg_lua_to(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at) { return to_lua(G, x, dst, at); }

/* Has `to` Lua phis (in the function being emitted)? */
int cg_lua_has_phis(CG *G, const KirBlock *to) {
  if (G->lslot == NULL) return 0;
  for (int j = 0; j < to->nphis; j++)
    if (G->sp->types[to->phis[j]->id].kind == T_LUA && G->sp->consts[to->phis[j]->id].kind == T_UNKNOWN)
      return 1;
  return 0;
}

/* The edge from -> to, emitted in the current block (its own: add_edge):
** every Lua phi of `to` gets its incoming value: a number as its tag and
** bits (the LLVM phis in table), anything else written into the phi's
** slot; phis reading other phis of `to` read their old values (the slot
** saved in the spare first). */
void cg_lua_edge(CG *G, KirBlock *from, KirBlock *to, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  if (G->lslot == NULL) return;
  KtySpec *sp = G->sp;
  int i;
  for (i = 0; i < to->npreds; i++) if (to->preds[i] == from) break;
  if (i == to->npreds) cg_error(G, NULL, "internal error: edge without predecessor");
  CgVal in[to->nphis + 1], saved[to->nphis + 1];
  for (int j = 0; j < to->nphis; j++) {   /* old values of phis read by phis */
    KirInsn *p = to->phis[j], *a = p->args[i];
    if (sp->types[p->id].kind != T_LUA || G->lslot[p->id] < 0 || cg_never_produced(G, a)) continue;
    if (a->op == KIR_PHI && a->block == to && a != p)
      saved[j] = to_lua(G, cg_val(G, a), slot_at(G, G->lslot[p->id] + 1), p);
  }
  for (int j = 0; j < to->nphis; j++) {
    KirInsn *p = to->phis[j], *a = p->args[i];
    in[j].v = NULL;
    if (sp->types[p->id].kind != T_LUA || G->lslot[p->id] < 0) continue;
    LLVMValueRef dst = slot_at(G, G->lslot[p->id]);
    if (cg_never_produced(G, a)) {
      in[j] = mk(TY(T_LUA), dst, LLVMGetUndef(G->i8), LLVMGetUndef(G->i64));
      continue;
    }
    CgVal x = (a->op == KIR_PHI && a->block == to && a != p) ? saved[j] : cg_val(G, a);
    if (x.t.kind == T_MAYBE && kty_edge_truth(a, to, i) == 0) x = cg_mk(TY(T_NIL), NULL);
    in[j] = a == p ? x : to_lua(G, x, dst, p);
  }
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  for (int j = 0; j < to->nphis; j++) {
    KirInsn *p = to->phis[j];
    if (in[j].v == NULL) continue;
    LLVMValueRef tag = inslot(in[j]) ? i8c(G, 0) : in[j].flag;
    LLVMValueRef bits = in[j].dims[0] ? in[j].dims[0] : cg_i64(G, 0);
    LLVMValueRef slot = slot_at(G, G->lslot[p->id]);
    LLVMAddIncoming(table[p->id][0], &slot, &here, 1);
    LLVMAddIncoming(table[p->id][1], &tag, &here, 1);
    LLVMAddIncoming(table[p->id][2], &bits, &here, 1);
  }
}

/* The value of Lua phi p in its block: its slot, and its phis' tag and bits. */
CgVal cg_lua_phi(CG *G, const KirInsn *p, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  return mk(G->sp->types[p->id], slot_at(G, G->lslot[p->id]), table[p->id][1], table[p->id][2]);
}

/* The LLVM phis of Lua phi p (tag, bits) at the builder's block. */
void cg_lua_make_phi(CG *G, const KirInsn *p, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  /* the slot's phi only ever carries the phi's own slot: the generic code
  ** that passes phis part by part (chunk heads, loop versions) then works */
  table[p->id][0] = LLVMBuildPhi(G->B, G->i32, "slot");
  table[p->id][1] = LLVMBuildPhi(G->B, G->i8, "tag");
  table[p->id][2] = LLVMBuildPhi(G->B, G->i64, "bits");
}

int cg_lua_loop_uses(CG *G, const KirLoop *L) {
  KtySpec *sp = G->sp;
  for (int b = 0; b < L->nblocks; b++) {
    KirBlock *blk = L->blocks[b];
    for (int i = 0; i < blk->nphis; i++) if (cg_lua_insn_uses(G->S, sp, blk->phis[i])) return 1;
    for (int i = 0; i < blk->ninsns; i++) if (cg_lua_insn_uses(G->S, sp, blk->insns[i])) return 1;
  }
  return 0;
}

/* sp or a specialization it calls holds Lua values (needs L). */
static int uses_deep(const KtySpec *sp, uint8_t *seen) {
  if (seen[sp->index]) return 0;
  seen[sp->index] = 1;
  if (cg_lua_spec_uses(sp)) return 1;
  KirFunc *f = sp->ir;
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      KirInsn *v = blk->insns[i];
      KtySpec *c = v->op == KIR_CALL ? sp->callees[v->id] : NULL;
      if (c && uses_deep(c, seen)) return 1;
    }
  }
  return 0;
}

int cg_lua_spec_uses_deep(KtySession *S, const KtySpec *sp) {
  uint8_t seen[S->nspecs + 1];
  memset(seen, 0, sizeof seen);
  return uses_deep(sp, seen);
}

/* Does v hold, take or need Lua values (a callee that does included)? */
int cg_lua_insn_uses(KtySession *S, const KtySpec *sp, const KirInsn *v) {
  if (sp->types[v->id].kind == T_LUA) return 1;
  if (v->op == KIR_SETUPVAL) return 1;   /* an upvalue written through */
  if (cg_lua_eq_ident(sp, v)) return 1;   /* arrays compared: their userdata */
  if (v->op == KIR_SETFIELD && sp->liveref && sp->liveref[v->args[0]->id]) return 1;   /* a global */
  for (int i = 0; i < v->nargs; i++) if (sp->types[v->args[i]->id].kind == T_LUA) return 1;
  if (v->op == KIR_CALL && sp->callees[v->id] && cg_lua_spec_uses_deep(S, sp->callees[v->id]))
    return 1;
  return 0;
}

int kcg_uses_lua(KtySession *S, KtySpec *root) { return cg_lua_spec_uses_deep(S, root); }

/* For cg_callvalue.c: x as a (tag, bits, slot) triple (scratch i when it
** must be boxed), and the slot holding x (boxed into scratch i). */
void cg_lua_triple(CG *G, CgVal x, int i, const KirInsn *at, LLVMValueRef *tag, LLVMValueRef *bits,
                   LLVMValueRef *slot) {
  triple(G, x, i, at, tag, bits, slot);
}

LLVMValueRef cg_lua_operand(CG *G, CgVal x, int i, const KirInsn *at) { return operand(G, x, i, at); }

/* For cg_chain.c: the pieces of cg_lua_arith a chain of operations shares. */
int cg_lua_opcode(int kop) { return lua_op(kop); }
LLVMValueRef cg_lua_text(CG *G, const char *s) { return text(G, s); }
int cg_lua_numcapable(CgVal x) { return numcapable(x); }
CgVal cg_lua_asnum(CG *G, CgVal x) { return asnum(G, x); }
int cg_lua_flat_arith(CG *G, const KirInsn *v, CgVal *a, LLVMValueRef *tag, LLVMValueRef *bits) {
  return flat_arith(G, v, a, tag, bits);
}
CgVal cg_lua_mk(CG *G, LLVMValueRef slot, LLVMValueRef tag, LLVMValueRef bits) {
  (void)G;
  return mk(TY(T_LUA), slot, tag, bits);
}

/* For cg_chain.c: a read or write of a field by its constant name on a
** Lua value, inline in a chain (its check before the chain, its load or
** store at its place in it; the chain's one call does the rest). Where
** cg_lua_index and cg_lua_store would take their inline paths: a table
** access of code that runs often, the layout known; not a read whose
** value is indexed next (copied into its slot: inline_get), not a write
** into a table made in the same block (fresh), nor a global's. */
int cg_lua_field_inline(CG *G, const KirInsn *v) {
  const KtySpec *sp = G->sp;
  int field = v->op == KIR_GETFIELD || v->op == KIR_SETFIELD;
  int index = v->op == KIR_INDEX || v->op == KIR_SETINDEX;
  if (!field && !index) return 0;
  if ((field && !cname(v)) || layout(G) == NULL || !hot_at(G, v)) return 0;
  if (sp->types[v->args[0]->id].kind != T_LUA) return 0;
  Type kt = index ? sp->types[v->args[1]->id] : TY(T_INT);
  if (kt.kind != T_INT && kt.kind != T_LUA && !(kt.kind == T_NUMBER && (kt.fsub == 0 || kt.fsub == T_F64)))
    return 0;   /* t[i], i an integer (a Lua value or a number: when it is one) */
  if ((v->op == KIR_GETFIELD || v->op == KIR_INDEX) && indexed_next(v)) return 0;
  if (v->op == KIR_INDEX && truth_only(v)) return 0;
  if ((v->op == KIR_SETFIELD || v->op == KIR_SETINDEX) && fresh(v)) return 0;
  return 1;
}

/* The site of access v (its helper's cache, name, line, description). */
LLVMValueRef cg_lua_field_site(CG *G, const KirInsn *v) {
  int field = v->op == KIR_GETFIELD || v->op == KIR_SETFIELD;
  return mksite(G, v, field ? v->k.str.s : NULL);
}

/* The check of access v on ox (a field by its name; an element of the
** array part by an integer key): its node or element (f->tv), and whether
** it is the one (*hit: for a field, its node holds the name's pointer,
** the key's tag left to cg_lua_field_readable and _writable; for an
** element, the key below alimit). A field's value tag there now is
** f->tt; an element's is loaded by cg_lua_field_tag, which the caller
** emits where *hit holds (past the array part there is no element to
** look at). */
void cg_lua_field_probe(CG *G, const KirInsn *v, CgVal ox, CgLField *f, LLVMValueRef *hit) {
  const KltLayout *y = layout(G);
  int field = v->op == KIR_GETFIELD || v->op == KIR_SETFIELD;
  f->site = cg_lua_field_site(G, v);
  f->h = hint(G, ox);
  f->isnode = field;
  if (field) {
    f->tv = probe(G, y, f->h, f->site, NULL, hit, NULL, &f->keytt);
  } else {
    CgVal kx = cg_val(G, v->args[1]);   /* (a Lua value: its bits, an integer when the chain's check holds) */
    LLVMValueRef key = kx.t.kind == T_LUA ? (kx.dims[0] ? kx.dims[0] : cg_i64(G, 0)) : kx.v;
    /* a number of either kind: a float with an integral value is that
    ** integer, as Lua normalizes it, else 0, which misses (FFT's v[j + 1],
    ** j made a float by k / 2: the chain's slow call every time otherwise) */
    if (kx.t.kind == T_NUMBER && kx.isf) key = float_key(G, kx.isf, kx.v, kx);
    LLVMValueRef k = LLVMBuildSub(G->B, key, cg_i64(G, 1), "");
    LLVMValueRef lim = LLVMBuildZExt(G->B, at(G, f->h, y->t_alimit, G->i32), G->i64, "");
    LLVMValueRef arr = at(G, f->h, y->t_array, G->i8p);
    *hit = LLVMBuildICmp(G->B, LLVMIntULT, k, lim, "");
    LLVMValueRef o = LLVMBuildMul(G->B, k, cg_i64(G, y->tv_size), "");
    LLVMValueRef el = LLVMBuildGEP2(G->B, G->i8, arr, &o, 1, "");
    f->keytt = NULL;
    f->tv = f->at = el;
    f->tt = NULL;   /* (cg_lua_field_tag, behind the bounds check) */
    return;
  }
  f->at = f->tv;
  f->tt = ttof(G, y, f->tv, field);
}

/* Loads the value's tag of element access f (where its probe's hit holds). */
void cg_lua_field_tag(CG *G, CgLField *f) {
  if (f->tt == NULL) f->tt = ttof(G, layout(G), f->at, f->isnode);
}

/* Whether tag tt (a node's or an element's) is a number of kind `want`
** (KLV_FLT, KLV_INT, or 0: either). */
LLVMValueRef cg_lua_field_isnum(CG *G, LLVMValueRef tt, int want) {
  const KltLayout *y = layout(G);
  LLVMValueRef f = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, (unsigned)y->tag_flt, 0), "");
  LLVMValueRef i = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, (unsigned)y->tag_int, 0), "");
  return want == KLV_FLT ? f : want == KLV_INT ? i : LLVMBuildOr(G->B, f, i, "");
}

/* Whether a read there finds a number of kind want (KLV_FLT, KLV_INT, or
** 0: either) where the probe looked: for a field, the node's key a short
** string too (the probe's hit compared its pointer). (Tried: the two tags,
** adjacent bytes of a node, as one 16-bit compare where a kind is wanted:
** nbody 1670.9M -> 1611.9M instructions but its run 4-6% slower in time,
** 9 interleaved rounds: not kept.) */
LLVMValueRef cg_lua_field_readable(CG *G, const CgLField *f, int want) {
  LLVMValueRef ok = cg_lua_field_isnum(G, f->tt, want);
  return f->keytt ? LLVMBuildAnd(G->B, f->keytt, ok, "") : ok;
}

/* Whether a write there runs no __newindex and moves nothing (inline_set's
** test): a value is there, or an empty element of the array part of a
** table without a metatable. */
LLVMValueRef cg_lua_field_writable(CG *G, const CgLField *f) {
  const KltLayout *y = layout(G);
  LLVMValueRef ok = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildAnd(G->B, f->tt, LLVMConstInt(G->i8, 0x0F, 0), ""),
                                  LLVMConstInt(G->i8, 0, 0), "");
  if (f->keytt) ok = LLVMBuildAnd(G->B, f->keytt, ok, "");
  if (!f->isnode) {
    LLVMValueRef mt = at(G, f->h, y->t_metatable, G->i8p);
    ok = LLVMBuildOr(G->B, ok, LLVMBuildICmp(G->B, LLVMIntEQ, mt, LLVMConstNull(G->i8p), ""), "");
  }
  return ok;
}

/* The number there now, as (KLV tag i8, bits). */
void cg_lua_field_read(CG *G, const CgLField *f, LLVMValueRef *tag, LLVMValueRef *bits) {
  const KltLayout *y = layout(G);
  LLVMValueRef tt = ttof(G, y, f->at, f->isnode);
  *tag = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, (unsigned)y->tag_int, 0), ""),
                         i8c(G, KLV_INT), i8c(G, KLV_FLT), "");
  *bits = at(G, f->at, 0, G->i64);
}

/* The number (KLV tag i8: an integer or a float; bits) written there (no
** barrier: a number is not collectable). tag NULL: the value there is a
** number of the same kind already (cg_chain.c kept_kind), its bits only. */
void cg_lua_field_write(CG *G, const CgLField *f, LLVMValueRef tag, LLVMValueRef bits) {
  const KltLayout *y = layout(G);
  put(G, f->at, 0, bits);
  if (tag == NULL) return;
  put(G, f->at, f->isnode ? y->node_tt : y->tv_tt,
      LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, tag, i8c(G, KLV_INT), ""),
                      LLVMConstInt(G->i8, (unsigned)y->tag_int, 0),
                      LLVMConstInt(G->i8, (unsigned)y->tag_flt, 0), ""));
}

/* The accessed value as the site helpers take it (objof), and its hint. */
void cg_lua_objof(CG *G, CgVal ox, const KirInsn *v, LLVMValueRef *otag, LLVMValueRef *obits,
                  LLVMValueRef *t) {
  objof(G, ox, v, otag, obits, t);
}

/* (tag i8, bits) of a native number. */
void cg_lua_numtag(CG *G, CgVal x, LLVMValueRef *tag, LLVMValueRef *bits) { numtag(G, x, tag, bits); }

/* Whether access v of ox has a kjit array's view (cg_luaview.c), which
** only its own inline path uses: then it stays out of chains. */
int cg_lua_has_view(CG *G, const KirInsn *v, CgVal ox) {
  CgLView vw;
  return (v->op == KIR_INDEX || v->op == KIR_SETINDEX) && view_of(G, v, ox, NULL, &vw) != NULL;
}
