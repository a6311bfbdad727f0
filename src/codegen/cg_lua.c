/*
** cg_lua.c: Lua values (T_LUA) in the code generator: frames of stack
** slots, and every operation on a Lua value as a call of a run-time
** helper (runtime/luavalue.c, whose head says how values are anchored and
** why the helpers may longjmp).
**
** A T_LUA CgVal's v is an i32: the absolute Lua stack index of the slot
** holding the value. A specialization that has values of Lua type opens a
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
**   - three scratch slots at the end, where numbers, booleans and
**     constant strings are boxed for one API call.
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
#include <string.h>
#include "codegen/cg.h"
#include "runtime/luavalue.h"
#include "lua.h"

#define NSCRATCH 3

/* ---- Which specializations use Lua values ----------------------------------- */

int cg_lua_spec_uses(const KtySpec *sp) {
  for (int i = 0; i < sp->nargs; i++) if (sp->args[i].kind == T_LUA) return 1;
  for (int b = 0; b < sp->ir->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = sp->ir->blocks[b];
    for (int i = 0; i < blk->nphis; i++) if (sp->types[blk->phis[i]->id].kind == T_LUA) return 1;
    for (int i = 0; i < blk->ninsns; i++) if (sp->types[blk->insns[i]->id].kind == T_LUA) return 1;
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
    LLVMPositionBuilderAtEnd(b, G->allocas);
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

/* ---- Frames -------------------------------------------------------------------- */

void cg_lua_begin(CG *G, KtySpec *sp) {
  KirFunc *f = sp->ir;
  G->lslot = NULL;
  G->luaL = NULL;
  G->lbase = NULL;
  G->nlslots = 0;
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
      if (c) {   /* a compiled callee's results of Lua type land here */
        int any = 0;
        for (int r = 0; r < c->nret; r++) any |= c->rets[r].kind == T_LUA;
        if (any) { G->lslot[v->id] = n; n += c->nret; }
        continue;
      }
      if (v->op == KIR_PARAM || v->op == KIR_RESULT) continue;
      if (sp->types[v->id].kind == T_LUA) G->lslot[v->id] = n++;
    }
  }
  G->nlslots = n + NSCRATCH;
  /* L from the dispatcher's KErr (a field the generators do not mirror) */
  LLVMValueRef e8 = LLVMBuildPointerCast(G->B, G->err, G->i8p, "");
  LLVMValueRef off = cg_i64(G, (int64_t)offsetof(KErr, L));
  LLVMValueRef lp = LLVMBuildInBoundsGEP2(G->B, G->i8, e8, &off, 1, "");
  lp = LLVMBuildPointerCast(G->B, lp, LLVMPointerType(G->i8p, 0), "");
  G->luaL = LLVMBuildLoad2(G->B, G->i8p, lp, "L");
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, cg_i32(G, G->nlslots) };
  G->lbase = call(G, "kjit_lv_open", G->i32, ps, as, 2);
  G->lslotv = cg_zalloc(G, sizeof(LLVMValueRef) * (size_t)G->nlslots);
}

void cg_lua_end(CG *G) {
  if (G->lbase == NULL) return;
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, G->lbase };
  call(G, "kjit_lv_close", NULL, ps, as, 2);
}

LLVMValueRef cg_lua_slot(CG *G, const KirInsn *v) {
  if (G->lslot == NULL || G->lslot[v->id] < 0)
    cg_error(G, v, "internal error: a Lua value without a stack slot");
  return slot_at(G, G->lslot[v->id]);
}

LLVMValueRef cg_lua_result_slot(CG *G, const KirInsn *call_insn, int r) {
  if (G->lslot == NULL || G->lslot[call_insn->id] < 0)
    cg_error(G, call_insn, "internal error: a call's Lua results without stack slots");
  return slot_at(G, G->lslot[call_insn->id] + r);
}

static LLVMValueRef scratch(CG *G, int i) { return slot_at(G, G->nlslots - NSCRATCH + i); }

/* ---- Boxing --------------------------------------------------------------------- */

static void box_number(CG *G, CgVal x, LLVMValueRef dst);

static void setv(CG *G, const char *name, LLVMTypeRef ty, LLVMValueRef v, LLVMValueRef dst) {
  LLVMTypeRef ps[3] = { G->i8p, G->i32, ty };
  LLVMValueRef as[3] = { G->luaL, dst, v };
  call(G, name, NULL, ps, as, ty ? 3 : 2);
}

static void box_concrete(CG *G, CgVal x, LLVMValueRef dst) {
  switch (x.t.kind) {
  case T_INT: setv(G, "kjit_lv_setint", G->i64, x.v, dst); break;
  case T_F64: setv(G, "kjit_lv_setnum", G->f64, x.v, dst); break;
  case T_F32: setv(G, "kjit_lv_setnum", G->f64, LLVMBuildFPExt(G->B, x.v, G->f64, ""), dst); break;
  default: box_number(G, x, dst); break;
  }
}

/* A T_NUMBER: its integer or its float side, by the tag. */
static void box_number(CG *G, CgVal x, LLVMValueRef dst) {
  LLVMBasicBlockRef fb = cg_bb(G, "boxf"), ib = cg_bb(G, "boxi"), done = cg_bb(G, "boxed");
  LLVMBuildCondBr(G->B, x.isf, fb, ib);
  LLVMPositionBuilderAtEnd(G->B, fb);
  box_concrete(G, cg_number_side(G, x, 1), dst);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, ib);
  box_concrete(G, cg_number_side(G, x, 0), dst);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
}

void cg_lua_box(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at) {
  switch (x.t.kind) {
  case T_LUA: {
    LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
    LLVMValueRef as[3] = { G->luaL, x.v, dst };
    call(G, "kjit_lv_copy", NULL, ps, as, 3);
    break;
  }
  case T_NIL: case T_UNKNOWN: setv(G, "kjit_lv_setnil", NULL, NULL, dst); break;
  case T_BOOL:
    setv(G, "kjit_lv_setbool", G->i32, LLVMBuildZExt(G->B, x.v, G->i32, ""), dst);
    break;
  case T_INT: case T_F64: case T_F32: box_concrete(G, x, dst); break;
  case T_NUMBER: box_number(G, x, dst); break;
  case T_MAYBE: {   /* a number, or nil/false */
    LLVMBasicBlockRef nb = cg_bb(G, "boxn"), fb = cg_bb(G, "boxfalsy"), done = cg_bb(G, "boxed");
    LLVMBuildCondBr(G->B, x.flag, nb, fb);
    LLVMPositionBuilderAtEnd(G->B, nb);
    Type nt = TY(x.t.sub);
    nt.fsub = x.t.fsub;
    CgVal n = cg_mk(nt, x.v);
    n.isf = x.isf;
    box_concrete(G, n, dst);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, fb);
    if (x.t.dtype) setv(G, "kjit_lv_setnil", NULL, NULL, dst);
    else setv(G, "kjit_lv_setbool", G->i32, cg_i32(G, 0), dst);
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, done);
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

/* The slot holding x: its own for a Lua value, else scratch slot i. */
static LLVMValueRef operand(CG *G, CgVal x, int i, const KirInsn *at) {
  if (x.t.kind == T_LUA) return x.v;
  LLVMValueRef s = scratch(G, i);
  cg_lua_box(G, x, s, at);
  return s;
}

/* ---- Errors -------------------------------------------------------------------------- */

/* if (rc != KLV_OK) raise: the cold path calls raise(G, rc) then ends. */
typedef void (*RaiseFn)(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud);

static void check_rc(CG *G, const KirInsn *v, LLVMValueRef rc, RaiseFn raise, void *ud) {
  LLVMBasicBlockRef bad = cg_bb(G, "lvfail"), ok = cg_bb(G, "lvok");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rc, cg_i32(G, KLV_OK), ""), ok, bad));
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

static void keyerror(CG *G, const KirInsn *v, int nan) {
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i8p, G->i32 };
  LLVMValueRef as[4] = { G->luaL, cg_i32(G, nan), G->chunkname, cg_i32(G, v->line) };
  call(G, "kjit_lv_keyerror", NULL, ps, as, 4);
}

/* " value" and Lua's description of operand argi of v. */
static const char *value_info(CG *G, const KirInsn *v, int argi, char *buf, size_t n) {
  char info[128];
  cg_varinfo(G, v, argi, info, sizeof info);
  snprintf(buf, n, " value%s", info);
  return buf;
}

typedef struct IndexErr { LLVMValueRef obj, key; int objarg; } IndexErr;

static void raise_index(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  IndexErr *e = ud;
  char post[160];
  LLVMBasicBlockRef bad = cg_bb(G, "badobj"), other = cg_bb(G, "badkey");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rc, cg_i32(G, KLV_BADA), ""), bad, other);
  LLVMPositionBuilderAtEnd(G->B, bad);
  typeerror(G, v, e->obj, "attempt to index a ", value_info(G, v, e->objarg, post, sizeof post));
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, other);   /* t[nil] = v, t[0/0] = v */
  LLVMBasicBlockRef knil = cg_bb(G, "keynil"), knan = cg_bb(G, "keynan");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rc, cg_i32(G, KLV_KEYNIL), ""), knil, knan);
  LLVMPositionBuilderAtEnd(G->B, knil);
  keyerror(G, v, 0);
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, knan);
  keyerror(G, v, 1);
}

/* ---- Tables ----------------------------------------------------------------------------- */

/* A field name the helpers can take as a C string (no NUL inside). */
static int cname(const KirInsn *v) { return strlen(v->k.str.s) == v->k.str.len; }

CgVal cg_lua_index(CG *G, const KirInsn *v) {
  CgVal o = cg_val(G, v->args[0]);
  LLVMValueRef dst = cg_lua_slot(G, v), rc;
  IndexErr e = { o.v, NULL, 0 };
  if (v->op == KIR_GETFIELD && cname(v)) {
    LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i8p, G->i32 };
    LLVMValueRef as[4] = { G->luaL, o.v, text(G, v->k.str.s), dst };
    rc = call(G, "kjit_lv_getfield", G->i32, ps, as, 4);
  } else {
    LLVMValueRef k;
    if (v->op == KIR_GETFIELD) {
      k = scratch(G, 0);
      LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i8p, G->i64 };
      LLVMValueRef as[4] = { G->luaL, k, cstr(G, v->k.str.s, v->k.str.len), cg_i64(G, (int64_t)v->k.str.len) };
      call(G, "kjit_lv_setstr", NULL, ps, as, 4);
    } else {
      k = operand(G, cg_val(G, v->args[1]), 0, v);
    }
    LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, G->i32 };
    LLVMValueRef as[4] = { G->luaL, o.v, k, dst };
    rc = call(G, "kjit_lv_gettable", G->i32, ps, as, 4);
  }
  check_rc(G, v, rc, raise_index, &e);
  Type t = TY(T_LUA);
  return cg_mk(t, dst);
}

void cg_lua_store(CG *G, const KirInsn *v) {
  CgVal o = cg_val(G, v->args[0]);
  LLVMValueRef rc;
  IndexErr e = { o.v, NULL, 0 };
  if (v->op == KIR_SETFIELD) {
    LLVMValueRef val = operand(G, cg_val(G, v->args[1]), 1, v);
    if (cname(v)) {
      LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i8p, G->i32 };
      LLVMValueRef as[4] = { G->luaL, o.v, text(G, v->k.str.s), val };
      rc = call(G, "kjit_lv_setfield", G->i32, ps, as, 4);
    } else {
      LLVMValueRef k = scratch(G, 0);
      LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i8p, G->i64 };
      LLVMValueRef as[4] = { G->luaL, k, cstr(G, v->k.str.s, v->k.str.len), cg_i64(G, (int64_t)v->k.str.len) };
      call(G, "kjit_lv_setstr", NULL, ps, as, 4);
      LLVMTypeRef ps2[4] = { G->i8p, G->i32, G->i32, G->i32 };
      LLVMValueRef as2[4] = { G->luaL, o.v, k, val };
      rc = call(G, "kjit_lv_settable", G->i32, ps2, as2, 4);
    }
  } else {   /* SETINDEX */
    LLVMValueRef k = operand(G, cg_val(G, v->args[1]), 0, v);
    LLVMValueRef val = operand(G, cg_val(G, v->args[2]), 1, v);
    LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, G->i32 };
    LLVMValueRef as[4] = { G->luaL, o.v, k, val };
    rc = call(G, "kjit_lv_settable", G->i32, ps, as, 4);
  }
  check_rc(G, v, rc, raise_index, &e);
}

CgVal cg_lua_newtable(CG *G, const KirInsn *v) {
  LLVMValueRef dst = cg_lua_slot(G, v);
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, G->i32 };
  LLVMValueRef as[4] = { G->luaL, dst, cg_i32(G, 0), cg_i32(G, 0) };
  call(G, "kjit_lv_newtable", NULL, ps, as, 4);
  Type t = TY(T_LUA);
  t.sub = KTY_LUA_TABLE;
  return cg_mk(t, dst);
}

void cg_lua_setlist(CG *G, const KirInsn *v) {
  CgVal o = cg_val(G, v->args[0]);
  for (int i = 1; i < v->nargs; i++) {
    LLVMValueRef val = operand(G, cg_val(G, v->args[i]), 0, v);
    LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i64, G->i32 };
    LLVMValueRef as[4] = { G->luaL, o.v, cg_i64(G, (int64_t)v->aux + i), val };
    call(G, "kjit_lv_rawseti", NULL, ps, as, 4);
  }
}

static void raise_len(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  (void)rc;
  char post[160];
  typeerror(G, v, *(LLVMValueRef *)ud, "attempt to get length of a ", value_info(G, v, 0, post, sizeof post));
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

typedef struct ArithErr { LLVMValueRef a, b; int bitwise; } ArithErr;

static void raise_arith(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  ArithErr *e = ud;
  static const int codes[] = { KLV_BADA, KLV_BADB, KLV_NOINTA, KLV_NOINTB, KLV_IDIV0 };
  LLVMBasicBlockRef next = NULL;
  for (int c = 0; c < 5; c++) {
    LLVMBasicBlockRef here = cg_bb(G, "arerr");
    next = cg_bb(G, "arnext");
    LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rc, cg_i32(G, codes[c]), ""), here, next);
    LLVMPositionBuilderAtEnd(G->B, here);
    char post[200], info[128];
    int argi = (codes[c] & 0xF) == 2 ? 1 : 0;
    if (codes[c] == KLV_BADA || codes[c] == KLV_BADB) {
      typeerror(G, v, argi ? e->b : e->a,
                e->bitwise ? "attempt to perform bitwise operation on a " : "attempt to perform arithmetic on a ",
                value_info(G, v, argi, post, sizeof post));
    } else if (codes[c] == KLV_IDIV0) {
      raise_msg(G, v, "attempt to divide by zero");
    } else {
      cg_varinfo(G, v, argi, info, sizeof info);
      snprintf(post, sizeof post, "number%s has no integer representation", info);
      raise_msg(G, v, post);
    }
    LLVMBuildUnreachable(G->B);
    LLVMPositionBuilderAtEnd(G->B, next);
  }
  raise_msg(G, v, "attempt to perform 'n%0'");
}

CgVal cg_lua_arith(CG *G, const KirInsn *v) {
  int unary = v->op == KIR_UNM || v->op == KIR_BNOT;
  LLVMValueRef a = operand(G, cg_val(G, v->args[0]), 0, v);
  LLVMValueRef b = unary ? a : operand(G, cg_val(G, v->args[1]), 1, v);
  LLVMValueRef dst = cg_lua_slot(G, v);
  LLVMTypeRef ps[5] = { G->i8p, G->i32, G->i32, G->i32, G->i32 };
  LLVMValueRef as[5] = { G->luaL, cg_i32(G, lua_op(v->op)), a, b, dst };
  LLVMValueRef rc = call(G, "kjit_lv_arith", G->i32, ps, as, 5);
  int op = lua_op(v->op);
  ArithErr e = { a, b, op >= LUA_OPBAND && op != LUA_OPUNM };
  check_rc(G, v, rc, raise_arith, &e);
  return cg_mk(TY(T_LUA), dst);
}

CgVal cg_lua_len(CG *G, const KirInsn *v) {
  CgVal o = cg_val(G, v->args[0]);
  LLVMValueRef dst = cg_lua_slot(G, v);
  LLVMTypeRef ps[3] = { G->i8p, G->i32, G->i32 };
  LLVMValueRef as[3] = { G->luaL, o.v, dst };
  LLVMValueRef rc = call(G, "kjit_lv_len", G->i32, ps, as, 3);
  check_rc(G, v, rc, raise_len, &o.v);
  return cg_mk(TY(T_LUA), dst);
}

static void raise_cmp(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  (void)rc;
  LLVMValueRef *ab = ud;
  LLVMTypeRef ps[5] = { G->i8p, G->i32, G->i32, G->i8p, G->i32 };
  LLVMValueRef as[5] = { G->luaL, ab[0], ab[1], G->chunkname, cg_i32(G, v->line) };
  call(G, "kjit_lv_cmperror", NULL, ps, as, 5);
}

CgVal cg_lua_compare(CG *G, const KirInsn *v) {
  LLVMValueRef ab[2];
  ab[0] = operand(G, cg_val(G, v->args[0]), 0, v);
  ab[1] = operand(G, cg_val(G, v->args[1]), 1, v);
  int op = v->op == KIR_EQ ? LUA_OPEQ : v->op == KIR_LT ? LUA_OPLT : LUA_OPLE;
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, G->i32 };
  LLVMValueRef as[4] = { G->luaL, cg_i32(G, op), ab[0], ab[1] };
  LLVMValueRef r = call(G, "kjit_lv_compare", G->i32, ps, as, 4);
  if (op != LUA_OPEQ) {
    LLVMValueRef bad = LLVMBuildICmp(G->B, LLVMIntEQ, r, cg_i32(G, KLV_CMP), "");
    check_rc(G, v, LLVMBuildZExt(G->B, bad, G->i32, ""), raise_cmp, ab);
  }
  return cg_mk(TY(T_BOOL), LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i32(G, 0), ""));
}

LLVMValueRef cg_lua_truthy(CG *G, CgVal x) {
  LLVMTypeRef ps[2] = { G->i8p, G->i32 };
  LLVMValueRef as[2] = { G->luaL, x.v };
  LLVMValueRef r = call(G, "kjit_lv_truthy", G->i32, ps, as, 2);
  return LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i32(G, 0), "");
}

/* ---- Lua values where numbers are needed ----------------------------------------------------- */

typedef struct NumErr { LLVMValueRef slot; const char *pre, *post; } NumErr;

static void raise_num(CG *G, const KirInsn *v, LLVMValueRef rc, void *ud) {
  (void)rc;
  NumErr *e = ud;
  typeerror(G, v, e->slot, e->pre, e->post);
}

/* x (a Lua value, operand argi of use) as a number (T_NUMBER, float side
** f64), strings converted as luaL_checknumber does; anything else raises
** the error Lua raises for that use (a math function's argument, a for
** loop's bound). */
CgVal cg_lua_tonumber(CG *G, CgVal x, const KirInsn *use, int argi) {
  LLVMValueRef out = cg_alloca(G, G->i64, "lvnum");
  LLVMTypeRef ps[4] = { G->i8p, G->i32, G->i32, LLVMPointerType(G->i64, 0) };
  LLVMValueRef as[4] = { G->luaL, x.v, cg_i32(G, 1), out };
  LLVMValueRef r = call(G, "kjit_lv_tonum", G->i32, ps, as, 4);
  char pre[160];
  NumErr e = { x.v, pre, ")" };
  if (use->op == KIR_FORPREP) {
    static const char *const what[3] = { "initial value", "limit", "step" };
    snprintf(pre, sizeof pre, "bad 'for' %s (number expected, got ", what[argi]);
  } else {
    const char *name = "?";
    if (use->op == KIR_CALL && G->sp->types[use->args[0]->id].kind == T_BUILTIN) {
      name = kir_builtin_name(G->sp->types[use->args[0]->id].ref);
      const char *dot = strrchr(name, '.');
      if (dot) name = dot + 1;
    }
    snprintf(pre, sizeof pre, "bad argument #%d to '%s' (number expected, got ", argi, name);
  }
  LLVMValueRef bad = LLVMBuildICmp(G->B, LLVMIntSLT, r, cg_i32(G, 0), "");
  check_rc(G, use, LLVMBuildZExt(G->B, bad, G->i32, ""), raise_num, &e);
  Type t = TY(T_NUMBER);
  t.fsub = T_F64;
  CgVal n = cg_mk(t, LLVMBuildLoad2(G->B, G->i64, out, ""));
  n.isf = LLVMBuildICmp(G->B, LLVMIntEQ, r, cg_i32(G, 1), "");
  return n;
}

/* ---- Phis, calls and returns ----------------------------------------------------------------- */

/* Has `to` Lua phis (in the function being emitted)? */
int cg_lua_has_phis(CG *G, const KirBlock *to) {
  if (G->lslot == NULL) return 0;
  for (int j = 0; j < to->nphis; j++)
    if (G->sp->types[to->phis[j]->id].kind == T_LUA && G->sp->consts[to->phis[j]->id].kind == T_UNKNOWN)
      return 1;
  return 0;
}

/* The edge from -> to, emitted in the current block (its own: add_edge):
** every Lua phi of `to` gets its incoming value boxed or copied into its
** slot; phis reading other phis of `to` read their old values (saved in
** the spares first). */
void cg_lua_edge(CG *G, KirBlock *from, KirBlock *to) {
  if (G->lslot == NULL) return;
  KtySpec *sp = G->sp;
  int i;
  for (i = 0; i < to->npreds; i++) if (to->preds[i] == from) break;
  if (i == to->npreds) cg_error(G, NULL, "internal error: edge without predecessor");
  for (int pass = 0; pass < 2; pass++)
    for (int j = 0; j < to->nphis; j++) {
      KirInsn *p = to->phis[j];
      if (sp->types[p->id].kind != T_LUA || G->lslot[p->id] < 0) continue;
      KirInsn *a = p->args[i];
      if (cg_never_produced(G, a)) continue;
      int cyc = a->op == KIR_PHI && a->block == to && a != p;
      if (pass == 0) {   /* the old value of a phi of `to`, to the spare */
        if (cyc) cg_lua_box(G, cg_val(G, a), slot_at(G, G->lslot[p->id] + 1), p);
        continue;
      }
      if (a == p) continue;   /* the value stays */
      CgVal x;
      if (cyc) {
        Type lt = TY(T_LUA);
        x = cg_mk(lt, slot_at(G, G->lslot[p->id] + 1));
      } else {
        x = cg_val(G, a);
      }
      if (x.t.kind == T_MAYBE && kty_edge_truth(a, to, i) == 0) x = cg_mk(TY(T_NIL), NULL);
      cg_lua_box(G, x, slot_at(G, G->lslot[p->id]), p);
    }
}

/* The value of Lua phi p in its block: its slot. */
CgVal cg_lua_phi(CG *G, const KirInsn *p) {
  return cg_mk(G->sp->types[p->id], slot_at(G, G->lslot[p->id]));
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
  for (int i = 0; i < v->nargs; i++) if (sp->types[v->args[i]->id].kind == T_LUA) return 1;
  if (v->op == KIR_CALL && sp->callees[v->id] && cg_lua_spec_uses_deep(S, sp->callees[v->id]))
    return 1;
  return 0;
}
