/*
** cg_closure.c: function literals made and called by compiled code (the
** design: src/ir/ir_closure.c).
**
** A literal is a compile-time value (T_CLOSURE). Its specializations take
** its upvalues as parameters after their own. When it captures values
** with run-time parts (numbers, booleans, arrays; T_CLOSURE's sub), its
** run-time value is the address of an "environment": a stack slot of its
** maker's frame holding those values, in upvalue order (the literal itself
** and what has no run-time parts left out), written once where it is made.
** That is safe because a literal never outlives its maker's call (the
** typer refuses returning or storing one) and the locals it captures keep
** one value (ir_closure.c). A call where the literal was made passes the
** captured values themselves; any other call loads them from the
** environment of the value it calls.
*/
#include "codegen/cg.h"
#include <string.h>
#include "runtime/luacall.h"

/* The layout of literal di's environment: its part types (returns their
** count) and, for each upvalue, its first part's index (-1 if none). */
static int env_layout(CG *G, int di, const Type *caps, LLVMTypeRef *tys, int *first) {
  const KtyClosure *D = &G->S->clos[di];
  int n = 0;
  for (int u = 0; u < D->ir->proto->nup; u++) {
    first[u] = -1;
    if (kty_clos_self(G->S, di, u)) continue;
    LLVMTypeRef pt[3 + KJIT_MAXDIMS];
    int np = cg_parts(G, caps[u], pt);
    if (np == 0) continue;
    first[u] = n;
    for (int k = 0; k < np; k++) tys[n++] = pt[k];
  }
  return n;
}

/* The value literal di captures as upvalue u, read where it was made
** (G->sp is its maker). */
static CgVal made_value(CG *G, const KirInsn *at, int di, int u) {
  const KtyClosure *D = &G->S->clos[di];
  const KbcProto *cp = D->ir->proto;
  int k = 0;
  for (int j = 0; j < u; j++) k += cp->up[j].instack != 0;
  if (cp->up[u].instack) return cg_val(G, D->site->args[k]);
  if (G->upvals == NULL) cg_error(G, at, "internal error: an upvalue of a function literal");
  return G->upvals[cp->up[u].idx];   /* the maker's own upvalue, passed on */
}

void cg_closure_make(CG *G, KirInsn *v) {
  Type t = G->sp->types[v->id];
  if (!t.sub) return;   /* nothing at run time */
  int di = t.ref;
  Type caps[KJIT_MAXARGS];
  int first[KJIT_MAXARGS];
  LLVMTypeRef tys[KJIT_MAXARGS * (3 + KJIT_MAXDIMS)];
  if (kty_clos_captures(G->S, di, caps) < 0) cg_error(G, v, "internal error: a literal's upvalues");
  int n = env_layout(G, di, caps, tys, first);
  LLVMTypeRef st = LLVMStructTypeInContext(G->C, tys, (unsigned)n, 0);
  LLVMValueRef env = cg_alloca(G, st, "env");
  for (int u = 0; u < G->S->clos[di].ir->proto->nup; u++) {
    if (first[u] < 0) continue;
    CgVal x = made_value(G, v, di, u);
    x.t = caps[u];
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    int np = cg_pack(x, pv);
    for (int k = 0; k < np; k++)
      LLVMBuildStore(G->B, pv[k], LLVMBuildStructGEP2(G->B, st, env, (unsigned)(first[u] + k), ""));
  }
  G->vals[v->id] = cg_mk(t, LLVMBuildBitCast(G->B, env, G->i8p, ""));
}

CgVal cg_clos_upval(CG *G, const KirInsn *v, const KtySpec *callee, int u) {
  int di = callee->clos - 1;
  const KtyClosure *D = &G->S->clos[di];
  Type t = callee->args[callee->nparams + u];
  LLVMTypeRef pt[3 + KJIT_MAXDIMS];
  if (cg_parts(G, t, pt) == 0) return cg_mk(t, NULL);   /* nothing at run time */
  CgVal fn = cg_val(G, v->args[0]);
  if (kty_clos_self(G->S, di, u)) { fn.t = t; return fn; }   /* the literal itself */
  /* in the maker, from the captured values themselves; inside a prange
  ** body's function they are out of scope: from the environment, as
  ** elsewhere */
  if (G->sp == D->parent && !G->prbody) return made_value(G, v, di, u);
  /* elsewhere: from the environment of the value called */
  Type caps[KJIT_MAXARGS];
  int first[KJIT_MAXARGS];
  LLVMTypeRef tys[KJIT_MAXARGS * (3 + KJIT_MAXDIMS)];
  if (kty_clos_captures(G->S, di, caps) < 0) cg_error(G, v, "internal error: a literal's upvalues");
  int n = env_layout(G, di, caps, tys, first);
  if (fn.v == NULL || first[u] < 0) cg_error(G, v, "internal error: a literal's environment");
  LLVMTypeRef st = LLVMStructTypeInContext(G->C, tys, (unsigned)n, 0);
  LLVMValueRef env = LLVMBuildBitCast(G->B, fn.v, LLVMPointerType(st, 0), "");
  LLVMValueRef pv[3 + KJIT_MAXDIMS];
  int np = cg_parts(G, t, pt);
  for (int k = 0; k < np; k++)
    pv[k] = LLVMBuildLoad2(G->B, pt[k], LLVMBuildStructGEP2(G->B, st, env, (unsigned)(first[u] + k), ""), "");
  return cg_unpack(t, pv);
}

/* ---- Literals that escape: real Lua closures (ir/ir_escape.c) ------------- */

/* x as a (tag, bits, slot) triple for a helper that pushes it at once
** (scratch slot 0 where it must be boxed). */
static void triple(CG *G, CgVal x, const KirInsn *at, LLVMValueRef *tag, LLVMValueRef *bits,
                   LLVMValueRef *slot) {
  *slot = cg_i32(G, 0);
  if (x.t.kind == T_BOOL) {
    *tag = cg_i32(G, KLC_BOOL);
    *bits = LLVMBuildZExt(G->B, x.v, G->i64, "");
  } else if (x.t.kind == T_NIL || x.t.kind == T_UNKNOWN) {
    *tag = cg_i32(G, KLC_NIL);
    *bits = cg_i64(G, 0);
  } else {
    cg_lua_triple(G, x, 0, at, tag, bits, slot);
  }
}

void cg_closure_box(CG *G, KirInsn *v) {
  KtySpec *sp = G->sp;
  const KbcProto *cp = sp->ir->proto->p[v->aux];
  if (sp->upvref[v->id] == 0) cg_error(G, v, "internal error: a closure without its maker");
  LLVMValueRef dst = cg_lua_slot(G, v);
  LLVMTypeRef bp[2] = { G->i8p, G->i32 };
  LLVMValueRef ba[2] = { G->luaL, cg_i32(G, sp->upvref[v->id]) };
  cg_ccall(G, "kjit_lc_mkbegin", LLVMVoidTypeInContext(G->C), bp, ba, 2);
  char how[256];
  for (int u = 0, k = 0; u < cp->nup; u++) {
    const KbcUpval *up = &cp->up[u];
    int h = kty_box_how(G->S, sp, v, u);
    how[u] = (char)h;
    CgVal x = cg_mk(TY(T_NIL), NULL);
    if (up->instack) {
      const KirInsn *a = v->args[k++];
      if (h == 0 || h == 0xfe) x = cg_val(G, a);   /* (0xfe: its cell) */
    } else if (h == 0 || h == 0xfe) {
      if (G->upvals == NULL) cg_error(G, v, "internal error: an upvalue of a function literal");
      x = G->upvals[up->idx];
    }
    if (up->instack && x.t.kind == T_BUF && kty_capture_argarray(sp, v->args[k - 1])) {
      /* an argument array: its own userdata (ir_type.c kty_capture_argarray) */
      LLVMTypeRef ap[3] = { G->i8p, G->i32, G->i64 };
      LLVMValueRef aa[3] = { G->luaL, cg_i32(G, v->args[k - 1]->aux),
                             LLVMBuildPtrToInt(G->B, x.v, G->i64, "") };
      cg_ccall(G, "kjit_lc_mkpush_arg", LLVMVoidTypeInContext(G->C), ap, aa, 3);
      continue;
    }
    LLVMValueRef tag, bits, slot;
    triple(G, x, v, &tag, &bits, &slot);   /* pushed at once: one scratch slot */
    LLVMTypeRef pp[4] = { G->i8p, G->i32, G->i64, G->i32 };
    LLVMValueRef pa[4] = { G->luaL, tag, bits, slot };
    cg_ccall(G, "kjit_lc_mkpush", LLVMVoidTypeInContext(G->C), pp, pa, 4);
  }
  LLVMValueRef hv = LLVMBuildGlobalStringPtr(G->B, "", "");
  if (cp->nup > 0) {
    LLVMValueRef init = LLVMConstStringInContext(G->C, how, (unsigned)cp->nup, 1);
    LLVMValueRef g = LLVMAddGlobal(G->M, LLVMTypeOf(init), "kcg.how");
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    hv = LLVMBuildPointerCast(G->B, g, G->i8p, "");
  }
  LLVMTypeRef ep[5] = { G->i8p, G->i32, G->i8p, G->i32, G->i32 };
  LLVMValueRef ea[5] = { G->luaL, cg_i32(G, cp->nup), hv, cg_i32(G, sp->upvidx[v->id]), dst };
  cg_ccall(G, "kjit_lc_mkend", LLVMVoidTypeInContext(G->C), ep, ea, 5);
  CgVal r = cg_mk(TY(T_LUA), dst);
  r.flag = LLVMConstInt(G->i8, 0, 0);
  r.dims[0] = cg_i64(G, 0);
  G->vals[v->id] = r;
}

/* ---- Locals shared with literals and assigned afterwards: cells ----------
** (ir/ir_closure.c; runtime/luacell.c). A cell is a Lua value in its own
** slot; what is read from it a Lua value, like a read from a table. */

void cg_cell(CG *G, KirInsn *v) {
  LLVMTypeRef vt = LLVMVoidTypeInContext(G->C);
  LLVMValueRef tag, bits, slot;
  if (v->op == KIR_NEWCELL) {
    LLVMValueRef dst = cg_lua_slot(G, v);
    triple(G, cg_val(G, v->args[0]), v, &tag, &bits, &slot);
    LLVMTypeRef ps[5] = { G->i8p, G->i32, G->i64, G->i32, G->i32 };
    LLVMValueRef as[5] = { G->luaL, tag, bits, slot, dst };
    cg_ccall(G, "kjit_lc_newcell", vt, ps, as, 5);
    CgVal r = cg_mk(TY(T_LUA), dst);
    r.flag = LLVMConstInt(G->i8, 0, 0);
    r.dims[0] = cg_i64(G, 0);
    G->vals[v->id] = r;
    return;
  }
  LLVMValueRef cell = cg_lua_operand(G, cg_val(G, v->args[0]), 1, v);
  if (v->op == KIR_GETCELL) {
    LLVMValueRef dst = cg_lua_slot(G, v), out = cg_alloca(G, G->i64, "cellout");
    LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, LLVMPointerType(G->i64, 0) };
    LLVMValueRef as[4] = { G->luaL, cell, dst, out };
    LLVMValueRef rc = cg_ccall(G, "kjit_lc_getcell", G->i32, ps, as, 4);
    CgVal r = cg_mk(TY(T_LUA), dst);
    r.flag = LLVMBuildTrunc(G->B, rc, G->i8, "");
    r.dims[0] = LLVMBuildLoad2(G->B, G->i64, out, "");
    G->vals[v->id] = r;
    return;
  }
  triple(G, cg_val(G, v->args[1]), v, &tag, &bits, &slot);
  LLVMTypeRef ps[5] = { G->i8p, G->i32, G->i32, G->i64, G->i32 };
  LLVMValueRef as[5] = { G->luaL, cell, tag, bits, slot };
  cg_ccall(G, "kjit_lc_setcell", vt, ps, as, 5);
}
