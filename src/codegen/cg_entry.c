/*
** cg_entry.c: the entry wrapper the dispatcher calls (KEntry, compile.h):
**     int32_t entry(int64_t *args, int64_t *rets, KErr *err)
** It unpacks the argument slots (i64, f64 bits, 0/1, KBuffer*), calls the
** root specialization and writes its results, every slot a full i64 or
** f64 (f32 widened, booleans 0/1):
**   T_INT, T_F64, T_F32, T_BOOL: rets[r];
**   T_NUMBER: rets[r] the integer or the f64 bits, rets[KJIT_MAXRETS + r]
**     0 for an integer, 1 for a float;
**   T_MAYBE: rets[KJIT_MAXRETS + r] 0 when false/nil, else 1 (a number of
**     kind sub); for sub T_NUMBER 1 is an integer and 2 a float;
**   T_BUF: rets[r] the element pointer, the extents from
**     rets[KJIT_RETDIMS + r * KJIT_MAXDIMS] on;
**   T_NIL: nothing.
*/
#include <stddef.h>
#include "codegen/cg.h"
#include "common/karray.h"

/* A number (concrete or T_NUMBER) widened to its slot, and its float tag. */
static LLVMValueRef slot_bits(CG *G, CgVal x, LLVMValueRef *isf) {
  *isf = NULL;
  switch (x.t.kind) {
  case T_INT: return x.v;
  case T_F64: return LLVMBuildBitCast(G->B, x.v, G->i64, "");
  case T_F32: return LLVMBuildBitCast(G->B, LLVMBuildFPExt(G->B, x.v, G->f64, ""), G->i64, "");
  case T_BOOL: return LLVMBuildZExt(G->B, x.v, G->i64, "");
  case T_NUMBER: {
    *isf = x.isf;
    if (x.t.fsub != T_F32) return x.v;
    CgVal f = cg_number_side(G, x, 1);
    LLVMValueRef fb = LLVMBuildBitCast(G->B, LLVMBuildFPExt(G->B, f.v, G->f64, ""), G->i64, "");
    return LLVMBuildSelect(G->B, x.isf, fb, x.v, "");
  }
  default: return cg_i64(G, 0);
  }
}

void cg_emit_entry(CG *G, KtySpec *sp, const char *name) {
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  LLVMTypeRef ps[3] = { i64p, i64p, G->errp };
  LLVMTypeRef fty = LLVMFunctionType(G->i32, ps, 3, 0);
  LLVMValueRef fn = LLVMAddFunction(G->M, name, fty);
  G->fn = fn;
  /* the allocas stay in the entry block (cg_alloca), which the inline
  ** paths below (cg_lua_table_at, cg_lua_open_at) end */
  G->allocas = cg_bb(G, "entry");
  LLVMPositionBuilderAtEnd(G->B, G->allocas);
  LLVMValueRef args = LLVMGetParam(fn, 0), rets = LLVMGetParam(fn, 1);
  LLVMValueRef av[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 3 * KJIT_MAXRETS + 1];
  int n = 0;
  LLVMValueRef luaL = NULL;   /* KErr.L, where Lua values come or go */
  int needL = 0;
  for (int i = 0; i < sp->nargs; i++) needL |= sp->args[i].kind == T_LUA;
  for (int r = 0; r < sp->nret; r++) needL |= sp->rets[r].kind == T_LUA;
  if (needL) {
    LLVMValueRef e8 = LLVMBuildPointerCast(G->B, LLVMGetParam(fn, 2), G->i8p, "");
    LLVMValueRef off = cg_i64(G, (int64_t)offsetof(KErr, L));
    LLVMValueRef lp = LLVMBuildInBoundsGEP2(G->B, G->i8, e8, &off, 1, "");
    lp = LLVMBuildPointerCast(G->B, lp, LLVMPointerType(G->i8p, 0), "");
    luaL = LLVMBuildLoad2(G->B, G->i8p, lp, "L");
  }
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    LLVMValueRef idx = cg_i64(G, i);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(G->B, G->i64, args, &idx, 1, "");
    switch (t.kind) {
    case T_INT: av[n++] = LLVMBuildLoad2(G->B, G->i64, slot, ""); break;
    case T_F64: av[n++] = LLVMBuildBitCast(G->B, LLVMBuildLoad2(G->B, G->i64, slot, ""), G->f64, ""); break;
    case T_F32:   /* kernels (simulator): f64 bits, narrowed as the launch does */
      av[n++] = LLVMBuildFPTrunc(G->B, LLVMBuildBitCast(G->B, LLVMBuildLoad2(G->B, G->i64, slot, ""),
                                                        G->f64, ""), G->f32, "");
      break;
    case T_BOOL:
      av[n++] = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildLoad2(G->B, G->i64, slot, ""), cg_i64(G, 0), "");
      break;
    case T_BUF: {
      /* the slot holds a KBuffer*: data at offsetof(data), extents at offsetof(shape) */
      LLVMValueRef raw = LLVMBuildLoad2(G->B, G->i64, slot, "");
      LLVMValueRef kb = LLVMBuildIntToPtr(G->B, raw, i64p, "");
      LLVMValueRef di = cg_i64(G, offsetof(KBuffer, data) / 8);
      LLVMValueRef data = LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, kb, &di, 1, ""), "");
      av[n++] = LLVMBuildIntToPtr(G->B, data, cg_bufptr_ty(G, t), "");
      for (int d = 0; d < t.ndim; d++) {
        LLVMValueRef si = cg_i64(G, offsetof(KBuffer, shape) / 8 + d);
        av[n++] = LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, kb, &si, 1, ""), "");
      }
      break;
    }
    case T_NIL: case T_FUNC: break;
    case T_BUILTIN:   /* a dtype object (jit.c SIG_DTYPE): a constant of the specialization */
      if (t.dtype != 1) cg_error(G, NULL, "internal error: a built-in argument from the caller");
      break;
    case T_LUA: {   /* the slot holds the argument's stack index (jit.c): a table */
      LLVMValueRef si = LLVMBuildTrunc(G->B, LLVMBuildLoad2(G->B, G->i64, slot, ""), G->i32, "");
      av[n++] = si;
      av[n++] = LLVMConstInt(G->i8, 0, 0);
      av[n++] = cg_lua_table_at(G, luaL, si);   /* its address: a hint */
      break;
    }
    default: {
      char tb[32];
      cg_error(G, NULL, "cannot take a %s argument from the caller", kty_name(t, tb, sizeof tb));
    }
    }
  }
  /* the results land in allocas, one per part, then in the slots */
  LLVMValueRef rp[KJIT_MAXRETS][3 + KJIT_MAXDIMS];
  LLVMTypeRef rty[KJIT_MAXRETS][3 + KJIT_MAXDIMS];
  int pure = cg_is_pure(G, sp);   /* its result comes back in a register */
  /* results of Lua type: slots reserved above the dispatcher's arguments,
  ** which the callee fills and the dispatcher pushes (cg_lua.c) */
  LLVMValueRef lbase = NULL;
  int nlua = 0;
  for (int r = 0; r < sp->nret; r++) nlua += sp->rets[r].kind == T_LUA;
  if (nlua) {
    lbase = cg_lua_open_at(G, luaL, nlua);
  }
  int luar = 0;
  for (int r = 0; r < sp->nret; r++) {
    Type t = sp->rets[r];
    int np = 0;
    switch (t.kind) {
    case T_INT: case T_F64: case T_F32: case T_BOOL: rty[r][np++] = cg_llty(G, t); break;
    case T_NUMBER: rty[r][np++] = G->i64; rty[r][np++] = G->i1; break;
    case T_MAYBE:
      rty[r][np++] = cg_llty(G, t);
      if (t.sub == T_NUMBER) rty[r][np++] = G->i1;
      rty[r][np++] = G->i1;
      break;
    case T_BUF: np = cg_parts(G, t, rty[r]); break;   /* pointer, extents */
    case T_NIL: case T_UNKNOWN: break;   /* unknown: never produced */
    case T_LUA: rty[r][np++] = G->i32; rty[r][np++] = G->i8; rty[r][np++] = G->i64; break;
    default: {
      char tb[32];
      cg_error(G, NULL, "cannot return a %s value", kty_name(t, tb, sizeof tb));
    }
    }
    for (int k = 0; k < np; k++) {
      rp[r][k] = cg_alloca(G, rty[r][k], "ret");
      if (!pure) av[n++] = rp[r][k];
    }
    if (t.kind == T_LUA)
      LLVMBuildStore(G->B, LLVMBuildAdd(G->B, lbase, cg_i32(G, luar++), ""), rp[r][0]);
  }
  LLVMValueRef cntp = NULL;   /* returns of different lengths: how many (KJIT_RETCOUNT) */
  if (sp->dyncount && !pure) av[n++] = cntp = cg_alloca(G, G->i32, "nres");
  if (G->target->poll && !cg_poll_in_err(G, sp)) {   /* the poll countdown of this call
                                    ** (cg_func.c; else the dispatcher's, in err) */
    LLVMValueRef ctr = cg_alloca(G, G->i64, "pollctr");
    LLVMBuildStore(G->B, cg_i64(G, 65536), ctr);
    av[n++] = ctr;
  }
  av[n++] = LLVMGetParam(fn, 2);
  LLVMValueRef kindp = NULL;   /* &err->kind */
  if (pure) {
    av[n++] = cg_i32(G, 0);   /* depth */
    /* no failure yet: the dispatcher's kerr_begin says so too, but stored
    ** here LLVM sees that kind is still 0 after a callee that never sets
    ** it, and drops the test; the entry then stores this 0 and nothing
    ** else into err (backend/cpu.c kc_entry_noraise: it cannot fail) */
    kindp = LLVMBuildStructGEP2(G->B, G->errty, LLVMGetParam(fn, 2), 0, "");
    LLVMBuildStore(G->B, cg_i32(G, 0), kindp);
  }
  CgFunc *cf = &G->funcs[sp->index];
  LLVMValueRef st = LLVMBuildCall2(G->B, cf->fnty, cf->fn, av, (unsigned)n, "");
  if (pure) {   /* the value in registers, a failure in err->kind */
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    int np = cg_pure_ret_parts(G, sp->rets[0], st, pv);
    for (int k = 0; k < np; k++) LLVMBuildStore(G->B, pv[k], rp[0][k]);
    LLVMValueRef k = LLVMBuildLoad2(G->B, G->i32, kindp, "");
    st = LLVMBuildZExt(G->B, LLVMBuildICmp(G->B, LLVMIntNE, k, cg_i32(G, 0), ""), G->i32, "");
  }
  LLVMBasicBlockRef ok = cg_bb(G, "ok"), fail = cg_bb(G, "fail");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""), ok, fail);
  LLVMPositionBuilderAtEnd(G->B, fail);
  LLVMBuildRet(G->B, st);
  LLVMPositionBuilderAtEnd(G->B, ok);
  if (cntp) {
    LLVMValueRef ci = cg_i64(G, KJIT_RETCOUNT);
    LLVMBuildStore(G->B, LLVMBuildSExt(G->B, LLVMBuildLoad2(G->B, G->i32, cntp, ""), G->i64, ""),
                   LLVMBuildInBoundsGEP2(G->B, G->i64, rets, &ci, 1, ""));
  }
  for (int r = 0; r < sp->nret; r++) {
    Type t = sp->rets[r];
    if (t.kind == T_NIL || t.kind == T_UNKNOWN) continue;
    LLVMValueRef idx = cg_i64(G, r), fidx = cg_i64(G, KJIT_MAXRETS + r);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(G->B, G->i64, rets, &idx, 1, "");
    if (t.kind == T_BUF) {   /* the pointer, then the extents (compile.h) */
      LLVMValueRef p = LLVMBuildLoad2(G->B, rty[r][0], rp[r][0], "");
      LLVMBuildStore(G->B, LLVMBuildPtrToInt(G->B, p, G->i64, ""), slot);
      for (int d = 0; d < t.ndim; d++) {
        LLVMValueRef di = cg_i64(G, KJIT_RETDIMS + r * KJIT_MAXDIMS + d);
        LLVMBuildStore(G->B, LLVMBuildLoad2(G->B, G->i64, rp[r][1 + d], ""),
                       LLVMBuildInBoundsGEP2(G->B, G->i64, rets, &di, 1, ""));
      }
      continue;
    }
    LLVMValueRef fslot = LLVMBuildInBoundsGEP2(G->B, G->i64, rets, &fidx, 1, "");
    LLVMValueRef v0 = LLVMBuildLoad2(G->B, rty[r][0], rp[r][0], "");
    if (t.kind == T_LUA) {   /* a number (tag 1, 2) or the stack index of the result (jit.c) */
      LLVMValueRef tag = LLVMBuildZExt(G->B, LLVMBuildLoad2(G->B, G->i8, rp[r][1], ""), G->i64, "");
      LLVMValueRef bits = LLVMBuildLoad2(G->B, G->i64, rp[r][2], "");
      LLVMValueRef isslot = LLVMBuildICmp(G->B, LLVMIntEQ, tag, cg_i64(G, 0), "");
      LLVMBuildStore(G->B, LLVMBuildSelect(G->B, isslot, LLVMBuildSExt(G->B, v0, G->i64, ""), bits, ""), slot);
      LLVMBuildStore(G->B, tag, fslot);
      continue;
    }
    CgVal x = cg_mk(t, v0);
    LLVMValueRef isf, flag = NULL;
    if (t.kind == T_NUMBER) x.isf = LLVMBuildLoad2(G->B, G->i1, rp[r][1], "");
    if (t.kind == T_MAYBE) {
      Type nt = TY(t.sub);
      nt.fsub = t.fsub;
      x.t = nt;
      if (t.sub == T_NUMBER) {
        x.isf = LLVMBuildLoad2(G->B, G->i1, rp[r][1], "");
        flag = LLVMBuildLoad2(G->B, G->i1, rp[r][2], "");
      } else {
        flag = LLVMBuildLoad2(G->B, G->i1, rp[r][1], "");
      }
    }
    LLVMBuildStore(G->B, slot_bits(G, x, &isf), slot);
    if (t.kind == T_NUMBER) LLVMBuildStore(G->B, LLVMBuildZExt(G->B, isf, G->i64, ""), fslot);
    if (flag) {
      LLVMValueRef tag = LLVMBuildZExt(G->B, flag, G->i64, "");
      if (isf) tag = LLVMBuildAdd(G->B, tag, LLVMBuildZExt(G->B, LLVMBuildAnd(G->B, flag, isf, ""), G->i64, ""), "");
      LLVMBuildStore(G->B, tag, fslot);
    }
  }
  LLVMBuildRet(G->B, cg_i32(G, 0));
}
