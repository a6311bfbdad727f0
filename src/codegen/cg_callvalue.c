/*
** cg_callvalue.c: functions as values in compiled code (issue 29 item 2),
** the generator's side of runtime/luacall.c:
**   - a read of an upvalue compiled code assigns (the typer's
**     sp->upvref/upvidx, ir_type.c "Functions as values"): the real
**     upvalue, read at run time into the value's slot, a number kept in
**     registers as a read from a table is (cg_lua.c);
**   - an assignment to such an upvalue: written through to the closure;
**   - a call of a Lua value (a function read from a table or passed in,
**     a callable table): lua_call with the arguments as (tag, bits, slot)
**     triples, the results into the call's slots (cg_lua_begin gives the
**     call one slot per result), each a Lua value.
** A call of a value that is neither a function nor has __call raises
** Lua's "attempt to call a nil value (field 'f')" at the call's line.
*/
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "codegen/cg.h"
#include "runtime/luavalue.h"
#include "runtime/luacall.h"
#include "host/lua_stack.h"
#include "lauxlib.h"

/* A Lua value in slot dst, tag and bits from a helper (0: in the slot). */
static CgVal luaval(CG *G, LLVMValueRef dst, LLVMValueRef tag32, LLVMValueRef bits) {
  CgVal x = cg_mk(TY(T_LUA), dst);
  x.flag = LLVMBuildTrunc(G->B, tag32, G->i8, "");
  x.dims[0] = bits;
  return x;
}

/* ---- Upvalues compiled code assigns, read and written in place ----------------
** (runtime/luacall.c's head): a site in a loop or a hot function keeps
** the closure in a cache of its own (luacall.h KlcUpvCache), filled by the
** helper at its first run; while it holds this state's closure of this
** epoch (luacall.h: a seqlock over the epoch), a number
** is read or written through closure->upvals[n]->v (lua_stack.h's
** mirrors, which the helper's fill vouches for: it fills only where
** kls_upvalues_on agreed), anything else goes through the helper. */

/* A pointer to a ty at byte offset off of base. */
static LLVMValueRef at(CG *G, LLVMValueRef base, size_t off, LLVMTypeRef ty) {
  LLVMValueRef o = cg_i64(G, (int64_t)off);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, G->i8, base, &o, 1, "");
  return LLVMBuildPointerCast(G->B, p, LLVMPointerType(ty, 0), "");
}

/* A site's KlcUpvCache: a private global, zero at first (as an i8*). */
static LLVMValueRef upv_cache(CG *G) {
  LLVMTypeRef ty = LLVMArrayType(G->i8p, sizeof(KlcUpvCache) / sizeof(void *));
  LLVMValueRef g = LLVMAddGlobal(G->M, ty, "kcg.upv");
  LLVMSetInitializer(g, LLVMConstNull(ty));
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return LLVMBuildPointerCast(G->B, g, G->i8p, "");
}

/* An atomic load (ordering ord) of a ty at byte offset off of base. */
static LLVMValueRef atomic_ld(CG *G, LLVMValueRef base, size_t off, LLVMTypeRef ty,
                              LLVMAtomicOrdering ord, unsigned align) {
  LLVMValueRef x = LLVMBuildLoad2(G->B, ty, at(G, base, off, ty), "");
  LLVMSetOrdering(x, ord);
  LLVMSetAlignment(x, align);
  return x;
}

/* kjit_lc_epoch (runtime/luacall.c), read by upvalue caches. */
static LLVMValueRef lc_epoch(CG *G) {
  LLVMValueRef g = LLVMGetNamedGlobal(G->M, "kjit_lc_epoch");
  if (g == NULL) g = LLVMAddGlobal(G->M, G->i32, "kjit_lc_epoch");
  return g;
}

/* The value address (a KlsTValue's, as i8*) of upvalue n (1-based) of the
** closure cache c holds, where it holds one of this state filled in this
** epoch; else to miss. The cache's seqlock (luacall.h KlcUpvCache): its
** epoch read before and after reg and cl, both equal to kjit_lc_epoch.
** The builder is left where it holds. */
static LLVMValueRef upv_addr(CG *G, LLVMValueRef c, int n, LLVMBasicBlockRef miss) {
  LLVMValueRef e1 = atomic_ld(G, c, offsetof(KlcUpvCache, epoch), G->i32, LLVMAtomicOrderingAcquire, 4);
  LLVMValueRef now = LLVMBuildLoad2(G->B, G->i32, lc_epoch(G), "");
  LLVMSetOrdering(now, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(now, 4);
  LLVMValueRef reg = LLVMBuildLoad2(G->B, G->i8p, at(G, G->luaL, offsetof(KlsState, l_G), G->i8p), "");
  LLVMValueRef creg = atomic_ld(G, c, offsetof(KlcUpvCache, reg), G->i8p, LLVMAtomicOrderingMonotonic, 8);
  LLVMValueRef cl = atomic_ld(G, c, offsetof(KlcUpvCache, cl), G->i8p, LLVMAtomicOrderingMonotonic, 8);
  LLVMBuildFence(G->B, LLVMAtomicOrderingAcquire, 0, "");
  LLVMValueRef e2 = atomic_ld(G, c, offsetof(KlcUpvCache, epoch), G->i32, LLVMAtomicOrderingMonotonic, 4);
  LLVMValueRef ok = LLVMBuildAnd(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, e1, now, ""),
                                 LLVMBuildICmp(G->B, LLVMIntEQ, e2, e1, ""), "");
  ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntEQ, creg, reg, ""), "");
  LLVMBasicBlockRef hit = cg_bb(G, "upvhit");
  cg_cold_false(G, LLVMBuildCondBr(G->B, ok, hit, miss));
  LLVMPositionBuilderAtEnd(G->B, hit);
  LLVMValueRef uv = LLVMBuildLoad2(G->B, G->i8p,
      at(G, cl, offsetof(KlsLClosure, upvals) + sizeof(void *) * (size_t)(n - 1), G->i8p), "");
  return LLVMBuildLoad2(G->B, G->i8p, at(G, uv, offsetof(KlsUpVal, v), G->i8p), "");
}

/* Upvalue n of the closure at registry reference ref into slot dst (a
** number as its tag and bits), inline where its site is hot. */
static CgVal getupv(CG *G, const KirInsn *v, int32_t ref, int n, LLVMValueRef dst) {
  LLVMValueRef out = cg_alloca(G, G->i64, "upvout");
  LLVMTypeRef ps[6] = { G->i8p, G->i32, G->i32, G->i32, LLVMPointerType(G->i64, 0), G->i8p };
  LLVMValueRef as[6] = { G->luaL, cg_i32(G, ref), cg_i32(G, n), dst, out, LLVMConstNull(G->i8p) };
  if (!cg_lua_hot_at(G, v)) {
    LLVMValueRef rc = cg_ccall(G, "kjit_lc_getupv", G->i32, ps, as, 6);
    return luaval(G, dst, rc, LLVMBuildLoad2(G->B, G->i64, out, ""));
  }
  LLVMBasicBlockRef slow = cg_bb(G, "upvslow"), num = cg_bb(G, "upvnum"), join = cg_bb(G, "upvdone");
  as[5] = upv_cache(G);
  LLVMValueRef tv = upv_addr(G, as[5], n, slow);
  LLVMValueRef tt = LLVMBuildLoad2(G->B, G->i8, at(G, tv, offsetof(KlsTValue, tt_), G->i8), "");
  LLVMValueRef isint = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, KLS_INT, 0), "");
  LLVMValueRef isflt = LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, KLS_FLT, 0), "");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildOr(G->B, isint, isflt, ""), num, slow));
  LLVMPositionBuilderAtEnd(G->B, num);
  LLVMValueRef nbits = LLVMBuildLoad2(G->B, G->i64, at(G, tv, offsetof(KlsTValue, value_), G->i64), "");
  LLVMValueRef ntag = LLVMBuildSelect(G->B, isint, cg_i32(G, KLV_INT), cg_i32(G, KLV_FLT), "");
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, slow);
  LLVMValueRef rc = cg_ccall(G, "kjit_lc_getupv", G->i32, ps, as, 6);
  LLVMValueRef sbits = LLVMBuildLoad2(G->B, G->i64, out, "");
  LLVMBasicBlockRef slowend = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, join);
  LLVMValueRef tag = LLVMBuildPhi(G->B, G->i32, "upvtag"), bits = LLVMBuildPhi(G->B, G->i64, "upvbits");
  LLVMValueRef tags[2] = { ntag, rc }, bitss[2] = { nbits, sbits };
  LLVMBasicBlockRef from[2] = { num, slowend };
  LLVMAddIncoming(tag, tags, from, 2);
  LLVMAddIncoming(bits, bitss, from, 2);
  return luaval(G, dst, tag, bits);
}

/* Upvalue n of the closure at registry reference ref set to (tag, bits,
** slot); a number written in place where its site is hot (no barrier: a
** number is not collectable). */
static void setupv(CG *G, const KirInsn *v, int32_t ref, int n, LLVMValueRef tag, LLVMValueRef bits,
                   LLVMValueRef slot) {
  LLVMTypeRef ps[7] = { G->i8p, G->i32, G->i32, G->i32, G->i64, G->i32, G->i8p };
  LLVMValueRef as[7] = { G->luaL, cg_i32(G, ref), cg_i32(G, n), tag, bits, slot, LLVMConstNull(G->i8p) };
  if (!cg_lua_hot_at(G, v)) {
    cg_ccall(G, "kjit_lc_setupv", LLVMVoidTypeInContext(G->C), ps, as, 7);
    return;
  }
  LLVMBasicBlockRef look = cg_bb(G, "upvlook"), slow = cg_bb(G, "upvsetslow"), join = cg_bb(G, "upvset");
  as[6] = upv_cache(G);
  LLVMValueRef isint = LLVMBuildICmp(G->B, LLVMIntEQ, tag, cg_i32(G, KLV_INT), "");
  LLVMValueRef isnum = LLVMBuildOr(G->B, isint, LLVMBuildICmp(G->B, LLVMIntEQ, tag, cg_i32(G, KLV_FLT), ""), "");
  LLVMBuildCondBr(G->B, isnum, look, slow);
  LLVMPositionBuilderAtEnd(G->B, look);
  LLVMValueRef tv = upv_addr(G, as[6], n, slow);
  LLVMBuildStore(G->B, bits, at(G, tv, offsetof(KlsTValue, value_), G->i64));
  LLVMBuildStore(G->B, LLVMBuildSelect(G->B, isint, LLVMConstInt(G->i8, KLS_INT, 0),
                                       LLVMConstInt(G->i8, KLS_FLT, 0), ""),
                 at(G, tv, offsetof(KlsTValue, tt_), G->i8));
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, slow);
  cg_ccall(G, "kjit_lc_setupv", LLVMVoidTypeInContext(G->C), ps, as, 7);
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, join);
}

CgVal cg_fn_getupval(CG *G, const KirInsn *v) {
  LLVMValueRef dst = cg_lua_slot(G, v), out = cg_alloca(G, G->i64, "upvout");
  if (G->sp->upvidx[v->id] < 0) {   /* t[k] of a table known when compiling, at run time */
    LLVMValueRef tag, bits, slot;
    cg_lua_triple(G, cg_val(G, v->args[1]), 0, v, &tag, &bits, &slot);
    LLVMTypeRef ps[7] = { G->i8p, G->i32, G->i32, G->i64, G->i32, G->i32, LLVMPointerType(G->i64, 0) };
    LLVMValueRef as[7] = { G->luaL, cg_i32(G, G->sp->upvref[v->id]), tag, bits, slot, dst, out };
    LLVMValueRef rc = cg_ccall(G, "kjit_lc_refindex", G->i32, ps, as, 7);
    return luaval(G, dst, rc, LLVMBuildLoad2(G->B, G->i64, out, ""));
  }
  if (G->sp->upvidx[v->id] == 0) {   /* a C function known when compiling */
    LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
    LLVMValueRef as[3] = { G->luaL, cg_i32(G, G->sp->upvref[v->id]), dst };
    cg_ccall(G, "kjit_lv_getref", G->i64, ps, as, 3);
    return luaval(G, dst, cg_i32(G, 0), cg_i64(G, 0));
  }
  return getupv(G, v, G->sp->upvref[v->id], G->sp->upvidx[v->id], dst);
}

void cg_fn_setupval(CG *G, const KirInsn *v) {
  if (G->sp->upvref[v->id] == 0) cg_error(G, v, "internal error: an upvalue assigned without its closure");
  LLVMValueRef tag, bits, slot;
  cg_lua_triple(G, cg_val(G, v->args[0]), 0, v, &tag, &bits, &slot);
  setupv(G, v, G->sp->upvref[v->id], G->sp->upvidx[v->id], tag, bits, slot);
}

/* The address of element i of array alloca a (element type ety). */
static LLVMValueRef elem(CG *G, LLVMTypeRef aty, LLVMValueRef a, int i) {
  LLVMValueRef idx[2] = { cg_i32(G, 0), cg_i32(G, i) };
  return LLVMBuildInBoundsGEP2(G->B, aty, a, idx, 2, "");
}

#define TOO_MANY_BOXED "a call of a function value takes at most four arguments that are arrays, " \
  "strings, functions or tables known when compiling in compiled code: pass the rest in a table"

/* Call v's arguments as (tag, bits, slot) into the arrays at element
** `at` on; those that must be boxed use scratch slots from *scratch on.
** Returns how many, or -1 when the scratch slots do not suffice. */
static int put_args_to(CG *G, const KirInsn *v, CgVal *args, int n, LLVMTypeRef t32, LLVMTypeRef t64,
                       LLVMValueRef tags, LLVMValueRef bits, LLVMValueRef slots, int at,
                       int *scratch, LLVMValueRef (*out)[3]) {
  for (int i = 0; i < n; i++) {
    CgVal x = args[i];
    LLVMValueRef tg, bt, sl = cg_i32(G, 0);
    if (x.t.kind == T_BOOL) {
      tg = cg_i32(G, KLC_BOOL);
      bt = LLVMBuildZExt(G->B, x.v, G->i64, "");
    } else if (x.t.kind == T_NIL || x.t.kind == T_UNKNOWN) {
      tg = cg_i32(G, KLC_NIL);
      bt = cg_i64(G, 0);
    } else if (x.t.kind == T_MAYBE) {   /* a number where flag, else nil or false: no slot */
      Type nt = TY(x.t.sub);
      nt.fsub = x.t.fsub;
      CgVal nx = cg_mk(nt, x.v);
      nx.isf = x.isf;
      LLVMValueRef ntg, nbt;
      cg_lua_triple(G, nx, 0, v, &ntg, &nbt, &sl);
      tg = LLVMBuildSelect(G->B, x.flag, ntg, cg_i32(G, x.t.dtype ? KLC_NIL : KLC_BOOL), "");
      bt = LLVMBuildSelect(G->B, x.flag, nbt, cg_i64(G, 0), "");
      sl = cg_i32(G, 0);
    } else {
      /* boxed into a scratch slot of its own: anything but a number or a
      ** Lua value in its slot (an array, a string, a function, a frozen
      ** table ... : two arrays once shared scratch 0, and the callee got the
      ** second twice: refuse3); scratch 2 is left to callee_slot */
      int uses = x.t.kind != T_LUA && x.t.kind != T_INT && x.t.kind != T_F64 &&
                 x.t.kind != T_F32 && x.t.kind != T_NUMBER;
      if (uses && *scratch == 2) (*scratch)++;
      if (uses && *scratch >= 5) return -1;
      cg_lua_triple(G, x, uses ? (*scratch)++ : 0, v, &tg, &bt, &sl);
    }
    LLVMBuildStore(G->B, tg, elem(G, t32, tags, at + i));
    LLVMBuildStore(G->B, bt, elem(G, t64, bits, at + i));
    LLVMBuildStore(G->B, sl, elem(G, t32, slots, at + i));
    if (out) {
      out[i][0] = tg;
      out[i][1] = bt;
      out[i][2] = sl;
    }
  }
  return n;
}
static int put_args(CG *G, const KirInsn *v, CgVal *args, int n, LLVMTypeRef t32, LLVMTypeRef t64,
                    LLVMValueRef tags, LLVMValueRef bits, LLVMValueRef slots, int at, int *scratch) {
  return put_args_to(G, v, args, n, t32, t64, tags, bits, slots, at, scratch, NULL);
}

/* The slot of the function call v calls: its own, or (a function known
** here, boxed) the call's first result slot, free until the call returns. */
static LLVMValueRef callee_slot(CG *G, const KirInsn *v) {
  CgVal fx = cg_val(G, v->args[0]);
  if (fx.t.kind == T_LUA) return cg_lua_operand(G, fx, 2, v);
  LLVMValueRef dst = cg_lua_slot(G, v);
  cg_lua_box(G, fx, dst, v);
  return dst;
}

/* An open call of a Lua value whose values all go to another such call
** (`io.write(unpack(t))`, `write(char(unpack(buf, 1, p)))`): it runs with
** that call, its results passed on the Lua stack, as many as it gives. */
static int spread_from(const KtySpec *sp, const KirInsn *v);

static const KirInsn *spread_into(const KtySpec *sp, const KirInsn *v) {
  /* (one level: an open call that spreads from its own inner call runs
  ** itself, its one value checked) */
  if (v->aux >= 0 || v->nusers != 1 || spread_from(sp, v)) return NULL;
  const KirInsn *u = v->users[0];
  if (!(u->flags & KIR_F_OPEN) || u->args[u->nargs - 1] != v || !kty_calls_value(sp, u)) return NULL;
  return u;
}

static int spread_from(const KtySpec *sp, const KirInsn *v) {
  if (!(v->flags & KIR_F_OPEN)) return 0;
  const KirInsn *c = v->args[v->nargs - 1];
  if (c->op != KIR_CALL || !kty_calls_value(sp, c) || c->aux >= 0 || c->nusers != 1) return 0;
  return !spread_from(sp, c);   /* c runs with v unless it spreads itself */
}

/* Raises, at v's line, when rc says the call failed: not callable (Lua's
** message naming the value in fslot), or an open call that gave other
** than one value (kjit's). */
static void call_check(CG *G, const KirInsn *v, LLVMValueRef rc, LLVMValueRef fslot, int argi) {
  LLVMBasicBlockRef bad = cg_bb(G, "callbad"), ok = cg_bb(G, "callok"), nr = cg_bb(G, "callnres");
  LLVMBasicBlockRef bada = cg_bb(G, "callbada");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rc, cg_i32(G, KLV_OK), ""), ok, bad));
  LLVMPositionBuilderAtEnd(G->B, bad);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rc, cg_i32(G, KLV_BADA), ""), bada, nr);
  LLVMPositionBuilderAtEnd(G->B, nr);
  {
    char toomany[200];
    snprintf(toomany, sizeof toomany, "a function value called as `return f(...)` returned more "
             "than %d values, where compiled code passes on at most %d: take its results into "
             "locals (`local a, b = f(x)`)", kty_callvalue_toret(G->sp, v), kty_callvalue_toret(G->sp, v));
    LLVMTypeRef rps[4] = { G->i8p, G->i8p, G->i8p, G->i32 };
    LLVMValueRef ras[4] = { G->luaL, LLVMBuildGlobalStringPtr(G->B, kty_callvalue_toret(G->sp, v) ? toomany :
        "a function value called as the last argument of a call returned other than one value, "
        "where compiled code passes on exactly one: take its results into locals "
        "(`local r = f(x)`)", ""), G->chunkname, cg_i32(G, v->line) };
    cg_ccall(G, "kjit_lv_raise", LLVMVoidTypeInContext(G->C), rps, ras, 4);
    LLVMBuildUnreachable(G->B);
  }
  LLVMPositionBuilderAtEnd(G->B, bada);
  const char *post = cg_strf(G, v, " value%s", cg_varinfo(G, v, argi));
  LLVMTypeRef tps[6] = { G->i8p, G->i32, G->i8p, G->i8p, G->i8p, G->i32 };
  LLVMValueRef tas[6] = { G->luaL, fslot, LLVMBuildGlobalStringPtr(G->B, "attempt to call a ", ""),
                          LLVMBuildGlobalStringPtr(G->B, post, ""), G->chunkname, cg_i32(G, v->line) };
  cg_ccall(G, "kjit_lv_typeerror", LLVMVoidTypeInContext(G->C), tps, tas, 6);
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, ok);
}

/* A call site's native cache (runtime/callsite.h KlcSite): a private
** global, zero at first, which only the run time writes. */
static LLVMValueRef native_site(CG *G) {
  LLVMTypeRef ty = LLVMArrayType(G->i64, (sizeof(KlcSite) + 7) / 8);
  LLVMValueRef g = LLVMAddGlobal(G->M, ty, "kcg.nsite");
  LLVMSetInitializer(g, LLVMConstNull(ty));
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return LLVMBuildPointerCast(G->B, g, G->i8p, "");
}

/* ---- Native calls made by the caller's code ----------------------------------
** (runtime/luacall.c "Native calls", its native_call done inline.) A hot
** call site whose native cache says its callee may be called from here
** (callsite.h KlcFill.inl: no frozen upvalues to check, as many parameters
** as arguments, numbers as results) calls the callee's entry itself when
** the value in the callee's slot is the site's closure of this state and
** epoch and the arguments are of the site's kinds (a number's tag is its
** kind; a value in its slot a number or a table by the slot's type), with
** the C stack KLC_NATIVE_ROOM above the limit: what native_call would do,
** without the call into kjit_lc_call, which is the slow path here for
** everything else (it fills the site, checks guards, takes Lua results).
** An error the callee reports is raised as native_call raises it
** (kjit_lc_native_raise). The builder is left in the block that follows
** a successful native call, its results in (tags, bits); `slow` is where
** every miss goes. */
static LLVMValueRef site_ld(CG *G, LLVMValueRef site, size_t off, LLVMTypeRef ty) {
  return LLVMBuildLoad2(G->B, ty, at(G, site, off, ty), "");
}

static void native_inline(CG *G, LLVMValueRef site, LLVMValueRef fslot, int n, int nres,
                          LLVMValueRef (*arg)[3], LLVMValueRef *rtag, LLVMValueRef *rbits,
                          int32_t tramp, LLVMValueRef dst, LLVMBasicBlockRef slow) {
  LLVMBasicBlockRef chk = cg_bb(G, "ncchk"), call = cg_bb(G, "nccall"),
                    raise = cg_bb(G, "ncraise"), ok = cg_bb(G, "ncok");
  LLVMValueRef on_g = LLVMGetNamedGlobal(G->M, "kls_on");
  if (on_g == NULL) on_g = LLVMAddGlobal(G->M, G->i32, "kls_on");
  LLVMValueRef on = LLVMBuildLoad2(G->B, G->i32, on_g, "");
  LLVMSetOrdering(on, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(on, 4);
  /* this state the site's owner, the only one whose thread writes its
  ** fill, which is read only then (runtime/callsite.c) */
  LLVMValueRef reg = LLVMBuildLoad2(G->B, G->i8p, at(G, G->luaL, offsetof(KlsState, l_G), G->i8p), "");
  LLVMValueRef owner = atomic_ld(G, site, offsetof(KlcSite, owner), G->i8p, LLVMAtomicOrderingMonotonic, 8);
  LLVMValueRef go = LLVMBuildAnd(G->B, LLVMBuildICmp(G->B, LLVMIntNE, on, cg_i32(G, 0), ""),
                                 LLVMBuildICmp(G->B, LLVMIntEQ, owner, reg, ""), "");
  LLVMBuildCondBr(G->B, go, chk, slow);
  LLVMPositionBuilderAtEnd(G->B, chk);
  LLVMValueRef fn = site_ld(G, site, offsetof(KlcSite, fill.fn), G->i8p);
  LLVMValueRef inl = site_ld(G, site, offsetof(KlcSite, fill.inl), G->i32);
  /* the callee's slot: this state's closure of the site, of its epoch */
  LLVMValueRef ci = LLVMBuildLoad2(G->B, G->i8p, at(G, G->luaL, offsetof(KlsState, ci), G->i8p), "");
  LLVMValueRef func = LLVMBuildLoad2(G->B, G->i8p, at(G, ci, offsetof(KlsCallInfo, func), G->i8p), "");
  LLVMValueRef fo = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, fslot, G->i64, ""),
                                 cg_i64(G, (int64_t)sizeof(KlsStackValue)), "");
  LLVMValueRef fv = LLVMBuildInBoundsGEP2(G->B, G->i8, func, &fo, 1, "");
  LLVMValueRef ftt = LLVMBuildLoad2(G->B, G->i8, at(G, fv, offsetof(KlsTValue, tt_), G->i8), "");
  LLVMValueRef fgc = LLVMBuildLoad2(G->B, G->i8p, at(G, fv, offsetof(KlsTValue, value_), G->i8p), "");
  LLVMValueRef now = LLVMBuildLoad2(G->B, G->i32, lc_epoch(G), "");
  LLVMSetOrdering(now, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(now, 4);
  LLVMValueRef good = LLVMBuildICmp(G->B, LLVMIntEQ, ftt, LLVMConstInt(G->i8, KLS_LCL, 0), "");
  good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntNE, inl, cg_i32(G, 0), ""), "");
  good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntEQ, fgc, fn, ""), "");
  /* (the fill's state is its owner's: runtime/callsite.c) */
  good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntEQ, now,
                                                site_ld(G, site, offsetof(KlcSite, fill.epoch), G->i32), ""), "");
  good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntEQ, cg_i32(G, n),
                                                site_ld(G, site, offsetof(KlcSite, fill.nargs), G->i32), ""), "");
  good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntSLE, cg_i32(G, nres),
                                                site_ld(G, site, offsetof(KlcSite, fill.nret), G->i32), ""), "");
  /* the arguments: their kinds against the site's, their values into a */
  LLVMTypeRef aty = LLVMArrayType(G->i64, KJIT_MAXARGS + 1);
  LLVMValueRef a = cg_alloca(G, aty, "ncargs");
  for (int i = 0; i < n; i++) {
    LLVMValueRef tg = arg[i][0], bt = arg[i][1], sl = arg[i][2];
    LLVMValueRef so = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, sl, G->i64, ""),
                                   cg_i64(G, (int64_t)sizeof(KlsStackValue)), "");
    LLVMValueRef sv = LLVMBuildInBoundsGEP2(G->B, G->i8, func, &so, 1, "");
    LLVMValueRef stt = LLVMBuildLoad2(G->B, G->i8, at(G, sv, offsetof(KlsTValue, tt_), G->i8), "");
    LLVMValueRef sbits = LLVMBuildLoad2(G->B, G->i64, at(G, sv, offsetof(KlsTValue, value_), G->i64), "");
    LLVMValueRef isT = LLVMBuildICmp(G->B, LLVMIntEQ, stt, LLVMConstInt(G->i8, KLS_TABLE, 0), "");
    LLVMValueRef skind = LLVMBuildSelect(G->B, isT, cg_i32(G, KLC_KTABLE), cg_i32(G, 0), "");
    skind = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, stt, LLVMConstInt(G->i8, KLS_FLT, 0), ""),
                            cg_i32(G, KLC_KFLT), skind, "");
    skind = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, stt, LLVMConstInt(G->i8, KLS_INT, 0), ""),
                            cg_i32(G, KLC_KINT), skind, "");
    LLVMValueRef sval = LLVMBuildSelect(G->B, isT, LLVMBuildSExt(G->B, sl, G->i64, ""), sbits, "");
    LLVMValueRef inslot = LLVMBuildICmp(G->B, LLVMIntEQ, tg, cg_i32(G, KLV_INSLOT), "");
    LLVMValueRef kind = LLVMBuildSelect(G->B, inslot, skind, tg, "");
    LLVMValueRef want = LLVMBuildZExt(G->B, site_ld(G, site, offsetof(KlcSite, fill.kinds) + (size_t)i, G->i8),
                                      G->i32, "");
    good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntEQ, kind, want, ""), "");
    LLVMBuildStore(G->B, LLVMBuildSelect(G->B, inslot, sval, bt, ""), elem(G, aty, a, i));
  }
  /* the C stack: as native_call (err->stack_limit 0: not set yet, the slow
  ** path sets it) */
  LLVMValueRef zero = cg_i32(G, 0);
  LLVMTypeRef i8p = G->i8p;
  unsigned fid = LLVMLookupIntrinsicID("llvm.frameaddress", 17);
  LLVMValueRef fa = LLVMBuildCall2(G->B, LLVMIntrinsicGetType(G->C, fid, &i8p, 1),
                                   LLVMGetIntrinsicDeclaration(G->M, fid, &i8p, 1), &zero, 1, "");
  LLVMValueRef lim = LLVMBuildLoad2(G->B, G->i64, LLVMBuildStructGEP2(G->B, G->errty, G->err, 7, ""), "");
  good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntNE, lim, cg_i64(G, 0), ""), "");
  good = LLVMBuildAnd(G->B, good, LLVMBuildICmp(G->B, LLVMIntUGE, LLVMBuildPtrToInt(G->B, fa, G->i64, ""),
                                                LLVMBuildAdd(G->B, lim, cg_i64(G, (int64_t)KLC_NATIVE_ROOM), ""), ""), "");
  LLVMBuildCondBr(G->B, good, call, slow);
  LLVMPositionBuilderAtEnd(G->B, call);
  /* what is read after the call, read before it (a recursive call through
  ** this site may refill it) */
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  LLVMTypeRef eps[3] = { i64p, i64p, G->errp };
  LLVMTypeRef ety = LLVMFunctionType(G->i32, eps, 3, 0);
  LLVMValueRef entryp = site_ld(G, site, offsetof(KlcSite, fill.entryp), LLVMPointerType(LLVMPointerType(ety, 0), 0));
  LLVMValueRef entry = LLVMBuildLoad2(G->B, LLVMPointerType(ety, 0), entryp, "");
  LLVMValueRef rk[KJIT_MAXRETS];
  for (int r = 0; r < nres; r++)
    rk[r] = LLVMBuildZExt(G->B, site_ld(G, site, offsetof(KlcSite, fill.rets) + (size_t)r, G->i8), G->i32, "");
  LLVMValueRef cnt_g = LLVMGetNamedGlobal(G->M, "kjit_lc_native_calls");
  if (cnt_g == NULL) cnt_g = LLVMAddGlobal(G->M, G->i64, "kjit_lc_native_calls");
  LLVMBuildStore(G->B, LLVMBuildAdd(G->B, LLVMBuildLoad2(G->B, G->i64, cnt_g, ""), cg_i64(G, 1), ""), cnt_g);
  LLVMTypeRef rty = LLVMArrayType(G->i64, 2 * KJIT_MAXRETS);
  LLVMValueRef rets = cg_alloca(G, rty, "ncrets");
  /* the top as an index (the callee may move the stack): put back after
  ** the call, closing the slots the entry opened for Lua results */
  LLVMValueRef top = LLVMBuildLoad2(G->B, G->i8p, at(G, G->luaL, offsetof(KlsState, top), G->i8p), "");
  LLVMValueRef topoff = LLVMBuildSub(G->B, LLVMBuildPtrToInt(G->B, top, G->i64, ""),
                                     LLVMBuildPtrToInt(G->B, func, G->i64, ""), "");
  LLVMValueRef cargs[3] = { LLVMBuildPointerCast(G->B, a, i64p, ""), LLVMBuildPointerCast(G->B, rets, i64p, ""),
                            G->err };
  LLVMValueRef st = LLVMBuildCall2(G->B, ety, entry, cargs, 3, "");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""), ok, raise));
  LLVMPositionBuilderAtEnd(G->B, raise);
  LLVMTypeRef rps[3] = { G->i8p, G->errp, G->i32 };
  LLVMValueRef ras[3] = { G->luaL, G->err, cg_i32(G, tramp) };
  cg_ccall(G, "kjit_lc_native_raise", G->i32, rps, ras, 3);
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, ok);
  /* the results (KlcSite.inl), as native_call reads them: a number of its
  ** kind, or for KLC_RNUM of its tag; a Lua value (KLC_RLUA) a number by
  ** its tag (1, 2), else in the entry's slot, taken by the helper
  ** (cg_entry.c); a number or nil/false (KLC_RMAYBE + kind: a generic
  ** for's iterator) by its tag, 0 the nil or false written into its slot
  ** (not collectable: no barrier; the frame read again, the callee may
  ** have moved the stack) */
  for (int r = 0; r < nres; r++) {
    LLVMValueRef b = LLVMBuildLoad2(G->B, G->i64, elem(G, rty, rets, r), "");
    LLVMValueRef t = LLVMBuildLoad2(G->B, G->i64, elem(G, rty, rets, KJIT_MAXRETS + r), "");
    LLVMValueRef t32v = LLVMBuildTrunc(G->B, t, G->i32, "");
    LLVMValueRef tzero = LLVMBuildICmp(G->B, LLVMIntEQ, t, cg_i64(G, 0), "");
    LLVMValueRef numtag = LLVMBuildSelect(G->B, tzero, cg_i32(G, KLV_INT), cg_i32(G, KLV_FLT), "");
    LLVMValueRef islua = LLVMBuildICmp(G->B, LLVMIntEQ, rk[r], cg_i32(G, KLC_RLUA), "");
    LLVMValueRef maybe = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildAnd(G->B, rk[r], cg_i32(G, KLC_RMAYBE), ""),
                                       cg_i32(G, 0), "");
    LLVMValueRef sub = LLVMBuildAnd(G->B, rk[r], cg_i32(G, 7), "");
    LLVMValueRef mtag = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, sub, cg_i32(G, KLC_RNUM), ""),
        LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, t, cg_i64(G, 2), ""), cg_i32(G, KLV_FLT),
                        cg_i32(G, KLV_INT), ""), sub, "");
    LLVMValueRef tag = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rk[r], cg_i32(G, KLC_RNUM), ""),
                                       numtag, LLVMBuildSelect(G->B, islua, t32v,
                                       LLVMBuildSelect(G->B, maybe, mtag, rk[r], ""), ""), "");
    LLVMValueRef special = LLVMBuildAnd(G->B, LLVMBuildOr(G->B, islua, maybe, ""), tzero, "");
    LLVMBasicBlockRef spb = cg_bb(G, "ncspecial"), take = cg_bb(G, "nctake"), nilb = cg_bb(G, "ncnil"),
                      took = cg_bb(G, "nctook");
    LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
    cg_cold_false(G, LLVMBuildCondBr(G->B, special, spb, took));
    LLVMPositionBuilderAtEnd(G->B, spb);
    LLVMBuildCondBr(G->B, islua, take, nilb);
    LLVMPositionBuilderAtEnd(G->B, take);
    LLVMValueRef out = cg_alloca(G, G->i64, "nctaken");
    LLVMTypeRef tps[4] = { G->i8p, G->i32, G->i32, LLVMPointerType(G->i64, 0) };
    LLVMValueRef tas[4] = { G->luaL, LLVMBuildTrunc(G->B, b, G->i32, ""),
                            LLVMBuildAdd(G->B, dst, cg_i32(G, r), ""), out };
    LLVMValueRef ttag = cg_ccall(G, "kjit_lc_native_take", G->i32, tps, tas, 4);
    LLVMValueRef tbits = LLVMBuildLoad2(G->B, G->i64, out, "");
    LLVMBasicBlockRef takeend = LLVMGetInsertBlock(G->B);
    LLVMBuildBr(G->B, took);
    LLVMPositionBuilderAtEnd(G->B, nilb);
    {
      LLVMValueRef nci = LLVMBuildLoad2(G->B, G->i8p, at(G, G->luaL, offsetof(KlsState, ci), G->i8p), "");
      LLVMValueRef nfunc = LLVMBuildLoad2(G->B, G->i8p, at(G, nci, offsetof(KlsCallInfo, func), G->i8p), "");
      LLVMValueRef so = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, LLVMBuildAdd(G->B, dst, cg_i32(G, r), ""), G->i64, ""),
                                     cg_i64(G, (int64_t)sizeof(KlsStackValue)), "");
      LLVMValueRef sv = LLVMBuildInBoundsGEP2(G->B, G->i8, nfunc, &so, 1, "");
      LLVMValueRef isfalse = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildAnd(G->B, rk[r], cg_i32(G, KLC_RFALSE), ""),
                                           cg_i32(G, 0), "");
      LLVMBuildStore(G->B, LLVMBuildSelect(G->B, isfalse, LLVMConstInt(G->i8, KLS_FALSE, 0),
                                           LLVMConstInt(G->i8, KLS_NIL, 0), ""),
                     at(G, sv, offsetof(KlsTValue, tt_), G->i8));
    }
    LLVMBuildBr(G->B, took);
    LLVMPositionBuilderAtEnd(G->B, took);
    LLVMBasicBlockRef from[3] = { here, takeend, nilb };
    rtag[r] = LLVMBuildPhi(G->B, G->i32, "");
    LLVMValueRef tv[3] = { tag, ttag, cg_i32(G, KLV_INSLOT) };
    LLVMAddIncoming(rtag[r], tv, from, 3);
    rbits[r] = LLVMBuildPhi(G->B, G->i64, "");
    LLVMValueRef bv[3] = { b, tbits, b };
    LLVMAddIncoming(rbits[r], bv, from, 3);
  }
  /* (lua_settop: nothing to close there, as native_call's kls_close) */
  LLVMValueRef ci2 = LLVMBuildLoad2(G->B, G->i8p, at(G, G->luaL, offsetof(KlsState, ci), G->i8p), "");
  LLVMValueRef func2 = LLVMBuildLoad2(G->B, G->i8p, at(G, ci2, offsetof(KlsCallInfo, func), G->i8p), "");
  LLVMBuildStore(G->B, LLVMBuildInBoundsGEP2(G->B, G->i8, func2, &topoff, 1, ""),
                 LLVMBuildPointerCast(G->B, LLVMBuildInBoundsGEP2(G->B, G->i8, G->luaL,
                     (LLVMValueRef[]){ cg_i64(G, (int64_t)offsetof(KlsState, top)) }, 1, ""),
                     LLVMPointerType(G->i8p, 0), ""));
}
_Static_assert((int)KLC_RINT == (int)KLV_INT && (int)KLC_RFLT == (int)KLV_FLT,
               "a number result's kind is its tag (native_inline)");

/* Is the function being generated optnone (cg_lua.c: cold code that runs
** once, a main chunk whose loops' work is in its callees)? Its native
** calls stay the helper's: unoptimized, the inline path's checks and
** results cost about as much as the helper's (array3d's main chunk: 250
** instructions a point) and lengthen the compile. */
static int optnone(CG *G) {
  unsigned on = LLVMGetEnumAttributeKindForName("optnone", 7);
  return LLVMGetEnumAttributeAtIndex(G->fn, LLVMAttributeFunctionIndex, on) != NULL;
}

/* Does this compile make native calls inline? Only with KJIT_INLINE_CALLS=1
** (measured, not the default): a site's inline path saves about 85
** instructions a call (a compiled loop calling t.f(i, 2): 276 -> 190),
** but its IR (the checks, the arguments' kinds, results of every kind
** the site may come to hold) made LLVM's code generation much longer:
** perlin's five sites in Noise:noise2 and Noise:fbm, whose callees have
** frozen upvalues and so never take the path, 2.72G -> 2.93G
** instructions, all of it compile; ray's main chunk, one site of the
** interpreted ray_trace, 54M more. Never in optnone code (array3d's main
** chunk: unoptimized, the path cost as much as the helper's) nor in a
** main chunk (runs once). */
static int inline_calls(CG *G) {
  const char *e = getenv("KJIT_INLINE_CALLS");
  return e != NULL && e[0] == '1' && kls_frame_layout() != NULL && !optnone(G) && G->sp->ir->proto->linedefined != 0;
}

void cg_fn_call(CG *G, const KirInsn *v) {
  enum { N = 2 * KJIT_MAXARGS > KJIT_MAXRETS ? 2 * KJIT_MAXARGS : KJIT_MAXRETS };
  KtySpec *sp = G->sp;
  int nres = v->aux < 0 ? 1 : v->aux;   /* an open call passes on one value (checked) */
  /* ... except to a return, which passes on as many as it gave, up to
  ** toret (cg_vararg.c's count; luacall.c's finish puts it in bits[toret]) */
  int toret = kty_callvalue_toret(sp, v);
  if (toret) nres = toret;
  /* ... and to a compiled function without '...', as many as its
  ** parameters after the ones before (lua_call adjusts the count) */
  int toc = kty_callvalue_tocallee(sp, v);
  if (toc >= 0) nres = toc;
  LLVMValueRef dst = cg_lua_slot(G, v);
  CgVal *res = cg_zalloc(G, sizeof(CgVal) * (size_t)(nres > 0 ? nres : 1));
  if (spread_into(sp, v) ||
      (v->nusers == 1 && (kty_ctor_deferred(sp, v->users[0]) == 2 ||
                          kty_ctor_grows(sp, v->users[0]) == 2) &&
       v->users[0]->args[v->users[0]->nargs - 1] == v)) {   /* runs with its consumer */
    res[0] = luaval(G, dst, cg_i32(G, 0), cg_i64(G, 0));
    G->results[v->id] = res;
    G->nresults[v->id] = 1;
    G->vals[v->id] = res[0];
    return;
  }
  CgVal args[KJIT_MAXARGS], iargs[KJIT_MAXARGS];
  int n = cg_operands(G, v, 1, args, KJIT_MAXARGS);
  const KirInsn *in = spread_from(sp, v) ? v->args[v->nargs - 1] : NULL;
  if (in) n--;   /* not the inner call's first value: all of them, on the stack */
  LLVMTypeRef t32 = LLVMArrayType(G->i32, N), t64 = LLVMArrayType(G->i64, N);
  LLVMValueRef tags = cg_alloca(G, t32, "ctags"), bits = cg_alloca(G, t64, "cbits"),
               slots = cg_alloca(G, t32, "cslots");
  int scratch = 0, ni = 0;
  LLVMValueRef argv[KJIT_MAXARGS][3];   /* (tag, bits, slot) of each, as stored */
  if (put_args_to(G, v, args, n, t32, t64, tags, bits, slots, 0, &scratch, argv) < 0)
    cg_error(G, v, TOO_MANY_BOXED);
  LLVMValueRef fslot = callee_slot(G, v), ifslot = NULL;
  if (in) {
    ni = cg_operands(G, in, 1, iargs, KJIT_MAXARGS);
    if (put_args(G, in, iargs, ni, t32, t64, tags, bits, slots, n, &scratch) < 0)
      cg_error(G, v, TOO_MANY_BOXED);
    ifslot = callee_slot(G, in);
  }
  LLVMValueRef p32 = LLVMBuildPointerCast(G->B, tags, LLVMPointerType(G->i32, 0), "");
  LLVMValueRef p64 = LLVMBuildPointerCast(G->B, bits, LLVMPointerType(G->i64, 0), "");
  LLVMValueRef ps32 = LLVMBuildPointerCast(G->B, slots, LLVMPointerType(G->i32, 0), "");
  LLVMValueRef rtag[N] = { 0 }, rbits[N] = { 0 };   /* results known as values (native_inline) */
  if (sp->upvref[v->id] == 0 || (in && sp->upvref[in->id] == 0))
    cg_error(G, v, "internal error: a call without its trampoline");
  LLVMValueRef rc;
  if (in) {
    /* (the outer call's native cache: runtime/luacall.c kjit_lc_call_spread
    ** calls it as kjit_lc_call does, g's values its last arguments) */
    LLVMTypeRef ps[14] = { G->i8p, G->i32, G->i32, G->i32, G->i32, G->i32, G->i32,
                           LLVMPointerType(G->i32, 0), LLVMPointerType(G->i64, 0),
                           LLVMPointerType(G->i32, 0), G->i32, G->i32, G->i8p, G->errp };
    LLVMValueRef as[14] = { G->luaL, cg_i32(G, sp->upvref[v->id]), fslot, cg_i32(G, n),
                            cg_i32(G, sp->upvref[in->id]), ifslot, cg_i32(G, ni), p32, p64, ps32,
                            cg_i32(G, toret ? -1 - toret : v->aux < 0 ? -1 : nres), dst,
                            cg_lua_hot_at(G, v) ? native_site(G) : LLVMConstNull(G->i8p), G->err };
    rc = cg_ccall(G, "kjit_lc_call_spread", G->i32, ps, as, 14);
    /* the inner call not callable: its own message (KLC_INNER + code) */
    LLVMValueRef inner = LLVMBuildICmp(G->B, LLVMIntUGE, rc, cg_i32(G, KLC_INNER), "");
    LLVMBasicBlockRef ib = cg_bb(G, "innerbad"), ob = cg_bb(G, "innerok");
    cg_cold_false(G, LLVMBuildCondBr(G->B, inner, ib, ob));
    LLVMPositionBuilderAtEnd(G->B, ib);
    call_check(G, in, LLVMBuildSub(G->B, rc, cg_i32(G, KLC_INNER), ""), ifslot, 0);
    LLVMBuildUnreachable(G->B);
    LLVMPositionBuilderAtEnd(G->B, ob);
  } else {
    LLVMTypeRef ps[11] = { G->i8p, G->i32, G->i32, G->i32, LLVMPointerType(G->i32, 0),
                           LLVMPointerType(G->i64, 0), LLVMPointerType(G->i32, 0), G->i32, G->i32,
                           G->i8p, G->errp };
    int32_t cnres = toret ? -1 - toret : toc >= 0 ? KLC_ADJUST - toc : v->aux < 0 ? -1 : nres;
    /* (fewer when an open call's function gave fewer: cg_vararg.c) */
    LLVMValueRef as[11] = { G->luaL, cg_i32(G, sp->upvref[v->id]), fslot, cg_open_count(G, v, n),
                            p32, p64, ps32, cg_i32(G, cnres), dst, NULL, G->err };
    /* a generic for's iterator: runtime/luatfor.c (its trampoline raises
    ** what is not callable itself, with the interpreter's words) */
    int tfor = (v->flags & KIR_F_TFOR) != 0;
    /* a call with a fixed count of arguments has a native cache of its
    ** own (luacall.c "Native calls"; callsite.h KlcSite): one for exactly
    ** nres values, a generic for's iterator call, and one whose values go
    ** on (an open call's one value, a return's, a compiled callee's
    ** parameters: luacall.c native_open takes the callee's fixed count),
    ** where it runs often (cg_lua_hot_at: a main chunk's `print(f(n))`
    ** made recursive-fib's whole run 0.5% dearer, its compile) */
    as[9] = !(v->flags & KIR_F_OPEN) && (cnres >= 0 || (!tfor && cg_lua_hot_at(G, v)))
                ? native_site(G) : LLVMConstNull(G->i8p);
    /* a hot site makes its native calls itself (native_inline), the
    ** helper its slow path */
    LLVMBasicBlockRef slow = NULL, join = NULL, fast_end = NULL;
    LLVMValueRef ftag[KJIT_MAXRETS], fbits[KJIT_MAXRETS];
    if (cnres >= 0 && !(v->flags & KIR_F_OPEN) && n <= KJIT_MAXARGS &&
        nres <= KJIT_MAXRETS && cg_lua_hot_at(G, v) && inline_calls(G)) {
      slow = cg_bb(G, "ncslow");
      join = cg_bb(G, "ncdone");
      native_inline(G, as[9], fslot, n, nres, argv, ftag, fbits, sp->upvref[v->id], dst, slow);
      fast_end = LLVMGetInsertBlock(G->B);
      LLVMBuildBr(G->B, join);
      LLVMPositionBuilderAtEnd(G->B, slow);
    }
    rc = cg_ccall(G, tfor ? "kjit_lc_tforcall" : "kjit_lc_call", G->i32, ps, as, 11);
    if (slow) {   /* the results: the native call's values, or the helper's from tags, bits */
      LLVMValueRef stag[KJIT_MAXRETS], sbits[KJIT_MAXRETS];
      for (int r = 0; r < nres; r++) {
        stag[r] = LLVMBuildLoad2(G->B, G->i32, elem(G, t32, tags, r), "");
        sbits[r] = LLVMBuildLoad2(G->B, G->i64, elem(G, t64, bits, r), "");
      }
      LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(G->B);
      LLVMBuildBr(G->B, join);
      LLVMPositionBuilderAtEnd(G->B, join);
      LLVMBasicBlockRef from[2] = { fast_end, slow_end };
      LLVMValueRef phi = LLVMBuildPhi(G->B, G->i32, "ncrc");
      LLVMValueRef vals[2] = { cg_i32(G, KLV_OK), rc };
      LLVMAddIncoming(phi, vals, from, 2);
      rc = phi;
      for (int r = 0; r < nres; r++) {
        rtag[r] = LLVMBuildPhi(G->B, G->i32, "nctag");
        LLVMValueRef tv[2] = { ftag[r], stag[r] };
        LLVMAddIncoming(rtag[r], tv, from, 2);
        rbits[r] = LLVMBuildPhi(G->B, G->i64, "ncbits");
        LLVMValueRef bv[2] = { fbits[r], sbits[r] };
        LLVMAddIncoming(rbits[r], bv, from, 2);
      }
    }
    if (tfor) goto results;
  }
  call_check(G, v, rc, fslot, 0);
results:
  /* the results: slot dst + r, or a number in (tags[r], bits[r]) */
  for (int r = 0; r < nres; r++) {
    LLVMValueRef s = LLVMBuildAdd(G->B, dst, cg_i32(G, r), "");
    res[r] = luaval(G, s, rtag[r] ? rtag[r] : LLVMBuildLoad2(G->B, G->i32, elem(G, t32, tags, r), ""),
                    rbits[r] ? rbits[r] : LLVMBuildLoad2(G->B, G->i64, elem(G, t64, bits, r), ""));
  }
  if (nres == 0) res[0] = luaval(G, dst, cg_i32(G, 0), cg_i64(G, 0));
  if (toret)
    G->ncount[v->id] = LLVMBuildTrunc(G->B, LLVMBuildLoad2(G->B, G->i64, elem(G, t64, bits, toret), ""),
                                      G->i32, "");
  G->results[v->id] = res;
  G->nresults[v->id] = nres;
  G->vals[v->id] = res[0];
}

/* A function known when compiling, made a Lua value in slot dst (stored in
** a table, passed to a function value, compared with a Lua value): a Lua
** function through a registry reference made here (kept as long as the
** Lua state; host/cache_key.c keys such code to this process), a library
** built-in by its name, read when this runs as library calls are. A
** frozen table (an upvalue's or a global's, `setmetatable(o, Class)`) is
** made a value the same way, by reference: the table itself, whose
** fields compiled code still reads as the constants they were. */
void cg_fn_boxconst(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at) {
  if (x.t.kind == T_BUILTIN && x.k && kty_dtype_obj_name(x.k)) {
    /* a dtype object (kjit.f32): the module's field, read when it runs as
    ** a library function is (no registry reference: the code stays
    ** cacheable) */
    char name[32];
    snprintf(name, sizeof name, "kjit.%s", kty_dtype_obj_name(x.k));
    LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i8p };
    LLVMValueRef as[3] = { G->luaL, dst, LLVMBuildGlobalStringPtr(G->B, name, "") };
    cg_ccall(G, "kjit_lc_setbuiltin", LLVMVoidTypeInContext(G->C), ps, as, 3);
    return;
  }
  if (x.t.kind == T_BUILTIN) {
    const char *name = kty_builtin_valuename(x.t.ref);
    if (name == NULL) cg_error(G, at, "internal error: a kjit built-in as a Lua value");
    LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i8p };
    LLVMValueRef as[3] = { G->luaL, dst, LLVMBuildGlobalStringPtr(G->B, name, "") };
    cg_ccall(G, "kjit_lc_setbuiltin", LLVMVoidTypeInContext(G->C), ps, as, 3);
    return;
  }
  lua_State *L = G->S->L;
  if (x.t.ref <= 0) cg_error(G, at, "internal error: a function value without its reference");
  lua_rawgeti(L, LUA_REGISTRYINDEX, G->S->values_ref);
  lua_rawgeti(L, -1, x.t.ref);
  lua_remove(L, -2);
  if (lua_type(L, -1) != (x.t.kind == T_TABLE ? LUA_TTABLE : LUA_TFUNCTION)) {
    lua_pop(L, 1);
    cg_error(G, at, "internal error: a function or table constant of another type");
  }
  int ref = kty_ref(G->S);   /* (released with the code) */
  LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
  LLVMValueRef as[3] = { G->luaL, cg_i32(G, ref), dst };
  cg_ccall(G, "kjit_lv_getref", G->i64, ps, as, 3);
}

/* {a, b, f(x)} with f a function value (kty_ctor_deferred 2): f runs here
** with the constructor, all it gives on the Lua stack, and the table is
** made with the VM's sizes (runtime/luacall.c kjit_lc_ctor_spread) into
** slot dst. Returns the table's address. */
LLVMValueRef cg_fn_ctor_spread(CG *G, const KirInsn *v, LLVMValueRef dst) {
  enum { N = 2 * KJIT_MAXARGS > KJIT_MAXRETS ? 2 * KJIT_MAXARGS : KJIT_MAXRETS };
  const KirInsn *in = v->args[v->nargs - 1], *t = v->args[0];
  CgVal items[KJIT_MAXARGS + KJIT_MAXRETS], iargs[KJIT_MAXARGS];
  int n = cg_operands(G, v, 1, items, KJIT_MAXARGS + KJIT_MAXRETS) - 1;   /* not in's value */
  LLVMTypeRef t32 = LLVMArrayType(G->i32, N), t64 = LLVMArrayType(G->i64, N);
  LLVMValueRef tags = cg_alloca(G, t32, "ktags"), bits = cg_alloca(G, t64, "kbits"),
               slots = cg_alloca(G, t32, "kslots");
  int scratch = 0;
  if (n + KJIT_MAXARGS > N || put_args(G, v, items, n, t32, t64, tags, bits, slots, 0, &scratch) < 0)
    cg_error(G, v, "too many string items in a table constructor ending in a call");
  int ni = cg_operands(G, in, 1, iargs, KJIT_MAXARGS);
  if (put_args(G, in, iargs, ni, t32, t64, tags, bits, slots, n, &scratch) < 0)
    cg_error(G, in, "too many string arguments in a call of a function value");
  LLVMValueRef ifslot = callee_slot(G, in);
  if (G->sp->upvref[in->id] == 0) cg_error(G, v, "internal error: a call without its trampoline");
  LLVMValueRef out = cg_alloca(G, G->i64, "ctorh");
  LLVMTypeRef ps[13] = { G->i8p, G->i32, G->i32, G->i32, G->i32, LLVMPointerType(G->i32, 0),
                         LLVMPointerType(G->i64, 0), LLVMPointerType(G->i32, 0), G->i32, G->i32,
                         G->i32, LLVMPointerType(G->i64, 0), G->i32 };
  LLVMValueRef as[13] = { G->luaL, cg_i32(G, G->sp->upvref[in->id]), ifslot, cg_i32(G, n),
                          cg_i32(G, ni),
                          LLVMBuildPointerCast(G->B, tags, LLVMPointerType(G->i32, 0), ""),
                          LLVMBuildPointerCast(G->B, bits, LLVMPointerType(G->i64, 0), ""),
                          LLVMBuildPointerCast(G->B, slots, LLVMPointerType(G->i32, 0), ""),
                          cg_i32(G, t->aux), cg_i32(G, (int)t->k.i), dst, out,
                          cg_i32(G, v->aux) };
  /* a constructor with fields (kty_ctor_grows): its table exists, grown
  ** there; else made there */
  int grow = kty_ctor_grows(G->sp, v) != 0;
  LLVMValueRef rc = cg_ccall(G, grow ? "kjit_lc_ctor_spread_grow" : "kjit_lc_ctor_spread",
                             G->i32, ps, as, grow ? 13 : 12);
  call_check(G, in, rc, ifslot, 0);
  return LLVMBuildLoad2(G->B, G->i64, out, "");
}
