/*
** cg_num.c: numbers with Lua 5.4's semantics: constants, conversions
** between the kinds of values (cg.h), arithmetic (integer wrap, '//' and
** '%' floored, division by zero raising), comparisons (exact between
** integers and floats), and T_NUMBER values, whose integer-or-float tag
** is kept at run time: an operation on one runs each side by the ordinary
** rule (cg_split) and the results meet in phis.
*/
#include <stdio.h>
#include <string.h>
#include <math.h>
#include "codegen/cg.h"
#include "ir/ir_varinfo.h"

CgVal cg_mk(Type t, LLVMValueRef v) {
  CgVal r;
  memset(&r, 0, sizeof r);
  r.t = t;
  r.v = v;
  return r;
}

static int isfloatk(int k) { return k == T_F64 || k == T_F32; }
static int isnumk(int k) { return k == T_INT || isfloatk(k) || k == T_NUMBER; }

/* The number inside a T_MAYBE (its type). */
static Type numview(Type t) {
  Type r = TY(t.sub);
  r.fsub = t.fsub;
  return r;
}

/* ---- Constants and conversions ---------------------------------------------- */

static LLVMValueRef float_bits(CG *G, LLVMValueRef f) {
  if (LLVMTypeOf(f) == G->f32)
    return LLVMBuildZExt(G->B, LLVMBuildBitCast(G->B, f, G->i32, ""), G->i64, "");
  return LLVMBuildBitCast(G->B, f, G->i64, "");
}

static LLVMValueRef bits_float(CG *G, LLVMValueRef bits, int fsub) {
  if (fsub == T_F32)
    return LLVMBuildBitCast(G->B, LLVMBuildTrunc(G->B, bits, G->i32, ""), G->f32, "");
  return LLVMBuildBitCast(G->B, bits, G->f64, "");
}

CgVal cg_number_side(CG *G, CgVal n, int isfloat) {
  if (!isfloat) { Type t = TY(T_INT); t.weak = n.t.weak; return cg_mk(t, n.v); }
  int fsub = n.t.fsub ? n.t.fsub : T_F64;
  return cg_mk(TY(fsub), bits_float(G, n.v, fsub));
}

/* A concrete number (T_INT, T_F64, T_F32) as a T_NUMBER of float kind fsub. */
static CgVal to_number(CG *G, CgVal x, int fsub) {
  Type t = TY(T_NUMBER);
  t.fsub = (uint8_t)(fsub ? fsub : T_F64);
  CgVal r = cg_mk(t, NULL);
  if (x.t.kind == T_INT) { r.v = x.v; r.isf = cg_i1(G, 0); return r; }
  if (x.t.kind == T_NUMBER) {
    int from = x.t.fsub ? x.t.fsub : T_F64;
    if (from == t.fsub) { r.v = x.v; r.isf = x.isf; return r; }
    LLVMValueRef f = cg_num_to(G, cg_mk(TY(from), bits_float(G, x.v, from)), t.fsub);
    r.v = LLVMBuildSelect(G->B, x.isf, float_bits(G, f), x.v, "");
    r.isf = x.isf;
    return r;
  }
  r.v = float_bits(G, cg_num_to(G, x, t.fsub));
  r.isf = cg_i1(G, 1);
  return r;
}

CgVal cg_const(CG *G, Type t, const KtyConst *k) {
  CgVal r = cg_mk(t, NULL);
  r.k = k;
  int kk = k->kind;
  switch (t.kind) {
  case T_INT: r.v = cg_i64(G, kk == T_INT ? k->v.i : (int64_t)k->v.f); break;
  case T_F64: r.v = cg_f64(G, kk == T_INT ? (double)k->v.i : k->v.f); break;
  case T_F32: r.v = LLVMConstReal(G->f32, kk == T_INT ? (double)(float)(double)k->v.i : (double)(float)k->v.f); break;
  case T_BOOL: r.v = cg_i1(G, kk == T_BOOL && k->v.b); break;
  case T_NUMBER: case T_MAYBE: {
    Type nt = t.kind == T_MAYBE ? numview(t) : t;
    CgVal n;
    int num = kk == T_INT || kk == T_F64;
    if (num) {
      CgVal c = kk == T_INT ? cg_mk(TY(T_INT), cg_i64(G, k->v.i)) : cg_mk(TY(T_F64), cg_f64(G, k->v.f));
      n = cg_convert(G, c, nt, 0);
    } else {
      n = cg_mk(nt, LLVMConstNull(cg_llty(G, nt)));
      n.isf = cg_i1(G, 0);
    }
    if (t.kind == T_NUMBER) return n;
    r.v = n.v; r.isf = n.isf;
    r.flag = cg_i1(G, num);
    break;
  }
  default: break;
  }
  return r;
}

LLVMValueRef cg_num_to(CG *G, CgVal x, int to) {
  int from = x.t.kind;
  if (from == to) return x.v;
  if (from == T_NIL || x.v == NULL)
    return to == T_INT ? cg_i64(G, 0) : LLVMConstReal(to == T_F32 ? G->f32 : G->f64, 0);
  if (from == T_INT) {
    if (to == T_F64) return LLVMBuildSIToFP(G->B, x.v, G->f64, "");
    /* int -> Lua float -> f32, as the interpreter's value would round
    ** (kernels convert once, as CUDA C does, without an f64 step) */
    if (LLVMIsAConstantInt(x.v) || G->S->kernel) return LLVMBuildSIToFP(G->B, x.v, G->f32, "");
    return LLVMBuildFPTrunc(G->B, LLVMBuildSIToFP(G->B, x.v, G->f64, ""), G->f32, "");
  }
  if (from == T_F32 && to == T_F64) return LLVMBuildFPExt(G->B, x.v, G->f64, "");
  if (from == T_F64 && to == T_F32) return LLVMBuildFPTrunc(G->B, x.v, G->f32, "");
  if (from == T_NUMBER) {
    if (to == T_INT) return x.v;   /* only on an integer side */
    LLVMValueRef fi = cg_num_to(G, cg_number_side(G, x, 0), to);
    LLVMValueRef ff = cg_num_to(G, cg_number_side(G, x, 1), to);
    return LLVMBuildSelect(G->B, x.isf, ff, fi, "");
  }
  return x.v;
}

LLVMValueRef cg_tofloat(CG *G, CgVal x, int kind) { return cg_num_to(G, x, kind); }

CgVal cg_convert(CG *G, CgVal x, Type t, int line) {
  (void)line;
  int from = x.t.kind;
  if (t.kind == T_LUA && from == T_LUA) { x.t = t; return x; }   /* a slot (cg_lua.c) */
  switch (t.kind) {
  case T_INT: case T_F64: case T_F32: {
    if (from == T_MAYBE) { CgVal n = cg_mk(numview(x.t), x.v); n.isf = x.isf; x = n; }
    if (x.t.kind == t.kind) { x.t = t; return x; }
    return cg_mk(t, cg_num_to(G, x, t.kind));
  }
  case T_NUMBER: {
    if (from == T_MAYBE) { CgVal n = cg_mk(numview(x.t), x.v); n.isf = x.isf; x = n; }
    if (!isnumk(x.t.kind)) { CgVal r = cg_mk(t, cg_i64(G, 0)); r.isf = cg_i1(G, 0); return r; }
    CgVal r = to_number(G, x, t.fsub);
    r.t = t;
    return r;
  }
  case T_MAYBE: {
    Type nt = numview(t);
    CgVal r = cg_mk(t, NULL), n;
    if (from == T_MAYBE) {
      CgVal inner = cg_mk(numview(x.t), x.v);
      inner.isf = x.isf;
      n = cg_convert(G, inner, nt, line);
      r.flag = x.flag;
    } else if (isnumk(from)) {
      n = cg_convert(G, x, nt, line);
      r.flag = cg_i1(G, 1);
    } else {   /* false or nil */
      n = cg_mk(nt, LLVMConstNull(cg_llty(G, nt)));
      n.isf = cg_i1(G, 0);
      r.flag = cg_i1(G, 0);
    }
    r.v = n.v;
    r.isf = nt.kind == T_NUMBER ? n.isf : NULL;
    return r;
  }
  case T_BOOL:
    if (from == T_BOOL) { x.t = t; return x; }
    if (from == T_MAYBE) return cg_mk(t, x.flag);
    return cg_mk(t, cg_i1(G, from != T_NIL && from != T_UNKNOWN));
  case T_BUF:
    if (from != T_BUF) {   /* nil: a null array with zero extents */
      CgVal r = cg_mk(t, LLVMConstNull(cg_bufptr_ty(G, t)));
      for (int i = 0; i < t.ndim; i++) r.dims[i] = cg_i64(G, 0);
      return r;
    }
    x.t = t;
    return x;
  default:
    x.t = t;
    return x;
  }
}

LLVMValueRef cg_truthy(CG *G, CgVal x) {
  switch (x.t.kind) {
  case T_BOOL: return x.v;
  case T_MAYBE: return x.flag;
  case T_NIL: case T_UNKNOWN: return cg_i1(G, 0);
  case T_LUA: return cg_lua_truthy(G, x);
  default: return cg_i1(G, 1);
  }
}

/* Lua's message when operand argi of use, a number or nil (or false),
** is nil (false) as the operation runs: what the interpreter raises for
** that operation (lvm.c's luaG_opinterror, forprep's luaG_forerror,
** luaL_checknumber's luaL_argerror, a kjit array's __index and
** __newindex), in buf. */
static const char *maybe_message(CG *G, const KirInsn *use, int argi, const char *tname) {
  if (use && use->op == KIR_FORPREP) {
    static const char *const what[3] = { "initial value", "limit", "step" };
    return cg_strf(G, use, "bad 'for' %s (number expected, got %s)", what[argi], tname);
  }
  if (use && use->op == KIR_CALL && G->sp->types[use->args[0]->id].kind == T_BUILTIN) {
    /* a C function names itself as the call names it: math.sqrt -> 'sqrt' */
    int b = G->sp->types[use->args[0]->id].ref;
    if ((b == B_ARR_FILL || b == B_KJIT_FULL) && argi == 2)
      /* the fill value of a:fill(v) and kjit.full(shape, v): buffer.c's
      ** storeval raises without naming the argument */
      return cg_strf(G, use, "number expected, got %s", tname);
    /* kjit.u8(v): 'u8'; local f = math.abs; f(x): 'f' */
    return cg_strf(G, use, "bad argument #%d to '%s' (number expected, got %s)", argi,
                   cg_argerror_name(G, use, kty_call_name(G->sp, use, b)), tname);
  }
  if (use && (use->op == KIR_INDEX || use->op == KIR_SETINDEX || use->op == KIR_SETFIELD) &&
      G->sp->types[use->args[0]->id].kind == T_BUF) {   /* buffer.c's and record.c's __index, __newindex */
    if (argi == 2 || use->op == KIR_SETFIELD) return cg_strf(G, use, "number expected, got %s", tname);
    return cg_strf(G, use, "kjit.array cannot be indexed with a %s value (expected an integer "
                   "index or a field name)", tname);
  }
  return cg_strf(G, use, "attempt to perform %s on a %s value%s",
                 use && (use->op == KIR_BNOT || (use->op >= KIR_BAND && use->op <= KIR_SHR))
                 ? "bitwise operation" : "arithmetic", tname, cg_varinfo(G, use, argi));
}

/* x used as a number: a T_MAYBE raises Lua's error for use where it is nil
** (false) when it runs. */
CgVal cg_unwrap(CG *G, CgVal x, int line, const KirInsn *use, int argi) {
  if (x.t.kind == T_LUA && use) return cg_lua_tonumber(G, x, use, argi);   /* checked */
  if (x.t.kind != T_MAYBE) return x;
  const char *msg = maybe_message(G, use, argi, x.t.dtype ? "nil" : "boolean");
  cg_check(G, x.flag, KE_TYPEERR, line, cg_i64(G, 0), NULL, NULL, msg);
  CgVal r = cg_mk(numview(x.t), x.v);
  r.isf = x.isf;
  return r;
}

/* A float with an exact integer value in i64 range -> (ok, integer). */
LLVMValueRef cg_float_to_int_exact(CG *G, LLVMValueRef x, LLVMValueRef *ok) {
  if (LLVMTypeOf(x) == G->f32) x = LLVMBuildFPExt(G->B, x, G->f64, "");
  LLVMValueRef fl = cg_math(G, "floor", G->f64, &x, 1);
  LLVMValueRef integral = LLVMBuildFCmp(G->B, LLVMRealOEQ, fl, x, "");
  LLVMValueRef ge = LLVMBuildFCmp(G->B, LLVMRealOGE, x, cg_f64(G, -9223372036854775808.0), "");
  LLVMValueRef lt = LLVMBuildFCmp(G->B, LLVMRealOLT, x, cg_f64(G, 9223372036854775808.0), "");
  *ok = LLVMBuildAnd(G->B, integral, LLVMBuildAnd(G->B, ge, lt, ""), "");
  LLVMValueRef safe = LLVMBuildSelect(G->B, *ok, x, cg_f64(G, 0.0), "");
  return LLVMBuildFPToSI(G->B, safe, G->i64, "");
}

LLVMValueRef cg_to_int_checked(CG *G, CgVal x, int line, const KirInsn *use, int argi) {
  if (x.t.kind == T_INT) return x.v;
  if (LLVMIsAConstantFP(x.v)) {
    LLVMBool lost;
    double d = LLVMConstRealGetDouble(x.v, &lost);
    if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
      return cg_i64(G, (int64_t)d);
  }
  LLVMValueRef ok;
  LLVMValueRef i = cg_float_to_int_exact(G, x.v, &ok);
  const char *info = cg_varinfo(G, use, argi);
  cg_check(G, ok, KE_NOINT, line, NULL, NULL, NULL, info[0] ? info : NULL);
  return i;
}

/* ---- Splitting numbers --------------------------------------------------------- */

CgVal cg_split(CG *G, const KirInsn *v, CgVal *a, int n, Type rt, CgConcrete fn) {
  int i;
  for (i = 0; i < n; i++) if (a[i].t.kind == T_NUMBER) break;
  if (i == n) return cg_convert(G, fn(G, v, a, n, rt), rt, v->line);
  CgVal sides[2];
  LLVMBasicBlockRef ends[2];
  LLVMBasicBlockRef bi = cg_bb(G, "isint"), bf = cg_bb(G, "isfloat"), join = cg_bb(G, "numjoin");
  LLVMBuildCondBr(G->B, a[i].isf, bf, bi);
  CgVal b[KJIT_MAXARGS];
  for (int s = 0; s < 2; s++) {
    LLVMPositionBuilderAtEnd(G->B, s ? bf : bi);
    memcpy(b, a, sizeof(CgVal) * (size_t)n);
    b[i] = cg_number_side(G, a[i], s);
    sides[s] = cg_split(G, v, b, n, rt, fn);
    ends[s] = LLVMGetInsertBlock(G->B);
    LLVMBuildBr(G->B, join);
  }
  LLVMPositionBuilderAtEnd(G->B, join);
  CgVal r = cg_mk(rt, NULL);
  LLVMValueRef *slots[3] = { &r.v, &r.isf, &r.flag };
  LLVMValueRef *from0[3] = { &sides[0].v, &sides[0].isf, &sides[0].flag };
  LLVMValueRef *from1[3] = { &sides[1].v, &sides[1].isf, &sides[1].flag };
  for (int k = 0; k < 3; k++) {
    if (*from0[k] == NULL || *from1[k] == NULL) continue;
    LLVMValueRef phi = LLVMBuildPhi(G->B, LLVMTypeOf(*from0[k]), "");
    LLVMValueRef vs[2] = { *from0[k], *from1[k] };
    LLVMAddIncoming(phi, vs, ends, 2);
    *slots[k] = phi;
  }
  return r;
}

/* ---- Arithmetic -------------------------------------------------------------- */

/* kernels (KtySession.kernel): an integer operand of an f32 operation
** converts to f32, as in CUDA C (ir_type.c's rule) */
static __thread int kernel_rules;

static Type float_of(Type a, Type b) {
  int a32 = a.kind == T_F32, b32 = b.kind == T_F32;
  int ai = kernel_rules && a.kind == T_INT, bi = kernel_rules && b.kind == T_INT;
  Type r = TY(((a32 && (b32 || b.weak || bi)) || (b32 && (a32 || a.weak || ai))) ? T_F32 : T_F64);
  r.weak = a.weak && b.weak;
  return r;
}

static int isbitwise(int op) { return op >= KIR_BAND && op <= KIR_SHR; }

/* The type of Lua's arithmetic on two concrete numbers (ir_type.c's rule). */
static Type concrete_type(int op, Type a, Type b) {
  Type r = TY(T_INT);
  r.weak = a.weak && b.weak;
  if (isbitwise(op)) return r;
  if (op == KIR_DIV || op == KIR_POW) {
    if (a.kind == T_INT && b.kind == T_INT) { r.kind = T_F64; return r; }
    return float_of(a, b);
  }
  if (a.kind == T_INT && b.kind == T_INT) return r;
  return float_of(a, b);
}

/* Lua's integer floor division and modulo; b == 0 raises. */
static LLVMValueRef int_idivmod(CG *G, LLVMValueRef a, LLVMValueRef b, int ismod, int line) {
  int bconst = LLVMIsAConstantInt(b) != NULL;
  long long bc = bconst ? LLVMConstIntGetSExtValue(b) : 0;
  if (!bconst || bc == 0)
    cg_check(G, LLVMBuildICmp(G->B, LLVMIntNE, b, cg_i64(G, 0), ""), ismod ? KE_MOD0 : KE_IDIV0,
             line, NULL, NULL, NULL, NULL);
  /* b == -1 would overflow sdiv for minint: a // -1 is -a (wrapping), a % -1 is 0 */
  LLVMValueRef isneg1 = LLVMBuildICmp(G->B, LLVMIntEQ, b, cg_i64(G, -1), "");
  LLVMValueRef sb = bconst ? b : LLVMBuildSelect(G->B, isneg1, cg_i64(G, 1), b, "");
  if (bconst && bc == -1) sb = cg_i64(G, 1);
  LLVMValueRef r = LLVMBuildSRem(G->B, a, sb, "");
  LLVMValueRef adj = LLVMBuildAnd(G->B,
      LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i64(G, 0), ""),
      LLVMBuildICmp(G->B, LLVMIntSLT, LLVMBuildXor(G->B, r, b, ""), cg_i64(G, 0), ""), "");
  if (ismod) return LLVMBuildSelect(G->B, adj, LLVMBuildAdd(G->B, r, b, ""), r, "");
  LLVMValueRef q = LLVMBuildSDiv(G->B, a, sb, "");
  q = LLVMBuildSelect(G->B, adj, LLVMBuildSub(G->B, q, cg_i64(G, 1), ""), q, "");
  if (bconst && bc != -1) return q;
  return LLVMBuildSelect(G->B, isneg1, LLVMBuildSub(G->B, cg_i64(G, 0), a, ""), q, "");
}

/* Lua's float modulo: fmod, then adjusted toward b's sign. */
static LLVMValueRef float_mod(CG *G, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  LLVMValueRef zero = LLVMConstReal(ty, 0.0);
  LLVMValueRef m = LLVMBuildFRem(G->B, a, b, "");
  LLVMValueRef mpos = LLVMBuildFCmp(G->B, LLVMRealOGT, m, zero, "");
  LLVMValueRef bneg = LLVMBuildFCmp(G->B, LLVMRealOLT, b, zero, "");
  LLVMValueRef mneg = LLVMBuildFCmp(G->B, LLVMRealOLT, m, zero, "");
  LLVMValueRef bpos = LLVMBuildFCmp(G->B, LLVMRealOGT, b, zero, "");
  LLVMValueRef adj = LLVMBuildSelect(G->B, mpos, bneg, LLVMBuildAnd(G->B, mneg, bpos, ""), "");
  return LLVMBuildSelect(G->B, adj, LLVMBuildFAdd(G->B, m, b, ""), m, "");
}

/* Lua's shift left (a negative n shifts right; |n| >= 64 gives 0). */
static LLVMValueRef shift_left(CG *G, LLVMValueRef x, LLVMValueRef n) {
  LLVMValueRef amt = LLVMBuildAnd(G->B, n, cg_i64(G, 63), "");
  LLVMValueRef namt = LLVMBuildAnd(G->B, LLVMBuildSub(G->B, cg_i64(G, 0), n, ""), cg_i64(G, 63), "");
  LLVMValueRef l = LLVMBuildShl(G->B, x, amt, "");
  LLVMValueRef r = LLVMBuildLShr(G->B, x, namt, "");
  LLVMValueRef big = LLVMBuildICmp(G->B, LLVMIntSGE, n, cg_i64(G, 64), "");
  LLVMValueRef small = LLVMBuildICmp(G->B, LLVMIntSLE, n, cg_i64(G, -64), "");
  LLVMValueRef neg = LLVMBuildICmp(G->B, LLVMIntSLT, n, cg_i64(G, 0), "");
  LLVMValueRef v = LLVMBuildSelect(G->B, neg, r, l, "");
  return LLVMBuildSelect(G->B, LLVMBuildOr(G->B, big, small, ""), cg_i64(G, 0), v, "");
}

/* C's pow (powf), called so that LLVM cannot rewrite it: LLVM turns
** pow(2^n, x) into exp2(n * x), pow(x, 0.5) into sqrt and pow(x, -1) into
** 1 / x even without fast-math, and those differ from the C library's pow
** (which the interpreter calls) in the last bit. A call marked nobuiltin is
** left alone (no simplification, no constant folding); readnone (the errno
** it may set is never read) keeps it movable out of loops like the
** intrinsic. */
static LLVMValueRef libm_pow(CG *G, LLVMTypeRef ty, LLVMValueRef *args) {
  LLVMTypeRef p[2] = { ty, ty };
  LLVMValueRef c = cg_ccall(G, ty == G->f32 ? "powf" : "pow", ty, p, args, 2);
  static const char *const attrs[] = { "nobuiltin", "readnone", "nounwind", "willreturn" };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(G->C,
        LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i])), 0));
  return c;
}

/* Lua's a ^ b: a * a when b is 2 (as lvm.c's luai_numpow), else C's pow.
** With fastmath, LLVM's pow intrinsic, whose rewrites (exp2, sqrt,
** reciprocal) may differ in the last bit. A target with its own math
** routines (libdevice's __nv_pow) calls them; LLVM knows nothing of
** those names, so it rewrites none of them. */
static LLVMValueRef float_pow(CG *G, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  if (LLVMIsAConstantFP(b)) {
    LLVMBool lost;
    if (LLVMConstRealGetDouble(b, &lost) == 2.0) return LLVMBuildFMul(G->B, a, a, "");
  }
  LLVMValueRef args[2] = { a, b };
  char name[48];
  int own = G->target->math_name && G->target->math_name("pow", ty == G->f32, name, sizeof name);
  LLVMValueRef p = G->fastmath || own ? cg_math(G, "pow", ty, args, 2) : libm_pow(G, ty, args);
  LLVMValueRef two = LLVMBuildFCmp(G->B, LLVMRealOEQ, b, LLVMConstReal(ty, 2.0), "");
  return LLVMBuildSelect(G->B, two, LLVMBuildFMul(G->B, a, a, ""), p, "");
}

static CgVal arith_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n; (void)rt;
  int op = v->op, line = v->line;
  kernel_rules = G->S->kernel;
  Type t = concrete_type(op, a[0].t, a[1].t);
  if (isbitwise(op)) {
    LLVMValueRef x = cg_to_int_checked(G, a[0], line, v, 0);
    LLVMValueRef y = cg_to_int_checked(G, a[1], line, v, 1);
    LLVMValueRef r;
    switch (op) {
    case KIR_BAND: r = LLVMBuildAnd(G->B, x, y, ""); break;
    case KIR_BOR: r = LLVMBuildOr(G->B, x, y, ""); break;
    case KIR_BXOR: r = LLVMBuildXor(G->B, x, y, ""); break;
    case KIR_SHL: r = shift_left(G, x, y); break;
    default: r = shift_left(G, x, LLVMBuildSub(G->B, cg_i64(G, 0), y, "")); break;
    }
    return cg_mk(t, r);
  }
  if (t.kind == T_INT) {
    LLVMValueRef x = a[0].v, y = a[1].v, r;
    switch (op) {
    case KIR_ADD: r = LLVMBuildAdd(G->B, x, y, ""); break;
    case KIR_SUB: r = LLVMBuildSub(G->B, x, y, ""); break;
    case KIR_MUL: r = LLVMBuildMul(G->B, x, y, ""); break;
    case KIR_IDIV: r = int_idivmod(G, x, y, 0, line); break;
    default: r = int_idivmod(G, x, y, 1, line); break;
    }
    return cg_mk(t, r);
  }
  LLVMValueRef x = cg_num_to(G, a[0], t.kind), y = cg_num_to(G, a[1], t.kind), r;
  LLVMTypeRef ty = t.kind == T_F32 ? G->f32 : G->f64;
  if (G->fastmath && (op == KIR_ADD || op == KIR_SUB || op == KIR_MUL || op == KIR_DIV)) {
    /* fast-math: the linked helpers (fadd fast ...), inlined by -O */
    const char *nm = op == KIR_ADD ? "fadd" : op == KIR_SUB ? "fsub" : op == KIR_MUL ? "fmul" : "fdiv";
    char name[40];
    snprintf(name, sizeof name, "kjit_%s_fast_%s", nm, t.kind == T_F32 ? "f32" : "f64");
    LLVMValueRef fn = LLVMGetNamedFunction(G->M, name);
    if (fn) {
      LLVMTypeRef pt[2] = { ty, ty };
      LLVMValueRef av[2] = { x, y };
      return cg_mk(t, LLVMBuildCall2(G->B, LLVMFunctionType(ty, pt, 2, 0), fn, av, 2, ""));
    }
  }
  switch (op) {
  case KIR_ADD: r = LLVMBuildFAdd(G->B, x, y, ""); break;
  case KIR_SUB: r = LLVMBuildFSub(G->B, x, y, ""); break;
  case KIR_MUL: r = LLVMBuildFMul(G->B, x, y, ""); break;
  case KIR_DIV: r = LLVMBuildFDiv(G->B, x, y, ""); break;
  case KIR_POW: r = float_pow(G, x, y); break;
  case KIR_IDIV: {
    LLVMValueRef q = LLVMBuildFDiv(G->B, x, y, "");
    r = cg_math(G, "floor", ty, &q, 1);
    break;
  }
  default: r = float_mod(G, x, y); break;
  }
  return cg_mk(t, r);
}

CgVal cg_arith(CG *G, const KirInsn *v) {
  CgVal a[2];
  for (int i = 0; i < 2; i++) a[i] = cg_unwrap(G, cg_val(G, v->args[i]), v->line, v, i);
  return cg_split(G, v, a, 2, G->sp->types[v->id], arith_concrete);
}

static CgVal unary_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n; (void)rt;
  if (v->op == KIR_BNOT) {
    LLVMValueRef x = cg_to_int_checked(G, a[0], v->line, v, 0);
    return cg_mk(TY(T_INT), LLVMBuildXor(G->B, x, cg_i64(G, -1), ""));
  }
  if (a[0].t.kind == T_INT) return cg_mk(a[0].t, LLVMBuildSub(G->B, cg_i64(G, 0), a[0].v, ""));
  if (!G->target->has_fneg)
    return cg_mk(a[0].t, LLVMBuildFSub(G->B, LLVMConstReal(LLVMTypeOf(a[0].v), -0.0), a[0].v, ""));
  return cg_mk(a[0].t, LLVMBuildFNeg(G->B, a[0].v, ""));
}

CgVal cg_unary(CG *G, const KirInsn *v) {
  CgVal a = cg_val(G, v->args[0]);
  if (v->op == KIR_NOT) return cg_mk(TY(T_BOOL), LLVMBuildNot(G->B, cg_truthy(G, a), ""));
  a = cg_unwrap(G, a, v->line, v, 0);
  return cg_split(G, v, &a, 1, G->sp->types[v->id], unary_concrete);
}

/* ---- Comparisons ------------------------------------------------------------------ */

/* Exact comparison of an integer with a float, as Lua does it. */
static LLVMValueRef cmp_int_float(CG *G, int cmp, LLVMValueRef i, LLVMValueRef f, int ifirst) {
  if (LLVMTypeOf(f) == G->f32) f = LLVMBuildFPExt(G->B, f, G->f64, "");
  LLVMValueRef fi = LLVMBuildSIToFP(G->B, i, G->f64, "");
  LLVMRealPredicate pred = cmp == CG_EQ ? LLVMRealOEQ : cmp == CG_LT ? LLVMRealOLT : LLVMRealOLE;
  LLVMValueRef fast = ifirst ? LLVMBuildFCmp(G->B, pred, fi, f, "") : LLVMBuildFCmp(G->B, pred, f, fi, "");
  if (LLVMIsAConstantInt(i)) {
    long long c = LLVMConstIntGetSExtValue(i);
    if (c >= -(1LL << 53) && c <= (1LL << 53)) return fast;
  }
  /* integers beyond 2^53 are not exact as doubles: ask the runtime */
  LLVMValueRef fits = LLVMBuildICmp(G->B, LLVMIntULE,
      LLVMBuildAdd(G->B, i, cg_i64(G, 1LL << 53), ""), cg_i64(G, 1LL << 54), "");
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  LLVMBasicBlockRef slow = cg_bb(G, "cmpslow"), done = cg_bb(G, "cmpdone");
  LLVMBuildCondBr(G->B, fits, done, slow);
  LLVMPositionBuilderAtEnd(G->B, slow);
  int code = cmp == CG_EQ ? 4 : (ifirst ? 0 : 2) + (cmp == CG_LE);
  LLVMTypeRef pt[3] = { G->i32, G->i64, G->f64 };
  LLVMValueRef av[3] = { cg_i32(G, code), i, f };
  LLVMValueRef r = cg_ccall(G, "kjit_rt_cmp_int_float", G->i32, pt, av, 3);
  r = LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i32(G, 0), "");
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef phi = LLVMBuildPhi(G->B, G->i1, "");
  LLVMValueRef vals[2] = { fast, r };
  LLVMBasicBlockRef bbs[2] = { here, slow };
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

LLVMValueRef cg_cmp_num(CG *G, int cmp, CgVal a, CgVal b) {
  if (a.t.kind == T_INT && b.t.kind == T_INT) {
    LLVMIntPredicate p = cmp == CG_EQ ? LLVMIntEQ : cmp == CG_LT ? LLVMIntSLT : LLVMIntSLE;
    return LLVMBuildICmp(G->B, p, a.v, b.v, "");
  }
  if (a.t.kind == T_INT) return cmp_int_float(G, cmp, a.v, b.v, 1);
  if (b.t.kind == T_INT) return cmp_int_float(G, cmp, b.v, a.v, 0);
  int k = (a.t.kind == T_F32 && b.t.kind == T_F32) ? T_F32 : T_F64;
  /* an f32 against a float constant that f32 holds exactly: the same
  ** answer in f32 (widening is exact), without f64 instructions */
  if (k == T_F64 && (a.t.kind == T_F32 || b.t.kind == T_F32)) {
    LLVMValueRef c = a.t.kind == T_F32 ? b.v : a.v;
    LLVMBool lost;
    if (c && LLVMIsAConstantFP(c) && LLVMTypeOf(c) == G->f64) {
      double d = LLVMConstRealGetDouble(c, &lost);
      if ((double)(float)d == d || d != d) k = T_F32;
    }
  }
  LLVMValueRef x = cg_num_to(G, a, k), y = cg_num_to(G, b, k);
  LLVMRealPredicate p = cmp == CG_EQ ? LLVMRealOEQ : cmp == CG_LT ? LLVMRealOLT : LLVMRealOLE;
  return LLVMBuildFCmp(G->B, p, x, y, "");
}

static CgVal cmp_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n; (void)rt;
  int cmp = v->op == KIR_EQ ? CG_EQ : v->op == KIR_LT ? CG_LT : CG_LE;
  return cg_mk(TY(T_BOOL), cg_cmp_num(G, cmp, a[0], a[1]));
}

/* Ordering with an operand that may be nil or false: Lua's "attempt to
** compare number with nil" (operands in the instruction's order, as
** luaG_ordererror), then the numbers themselves. */
static void cmp_check(CG *G, CgVal *ab, int line) {
  LLVMValueRef ok = cg_i1(G, 1), code[2];
  for (int i = 0; i < 2; i++) {
    code[i] = cg_i64(G, KE_CMP_NUMBER);
    Type t = ab[i].t;
    /* always raises (the typer): nil, a boolean, or a constant string or
    ** known function ordered with a number-or-nil */
    int strfn = (t.kind == T_STR && t.sub != T_NUMBER) || t.kind == T_FUNC || t.kind == T_BUILTIN;
    if (t.kind == T_NIL || t.kind == T_BOOL || strfn) {
      code[i] = cg_i64(G, t.kind == T_NIL ? KE_CMP_NIL : t.kind == T_BOOL ? KE_CMP_BOOLEAN
                          : t.kind == T_STR ? KE_CMP_STRING : KE_CMP_FUNCTION);
      ok = cg_i1(G, 0);
      continue;
    }
    if (ab[i].t.kind != T_MAYBE) continue;
    ok = LLVMBuildAnd(G->B, ok, ab[i].flag, "");
    code[i] = LLVMBuildSelect(G->B, ab[i].flag, cg_i64(G, KE_CMP_NUMBER),
                              cg_i64(G, ab[i].t.dtype ? KE_CMP_NIL : KE_CMP_BOOLEAN), "");
    CgVal r = cg_mk(numview(ab[i].t), ab[i].v);
    r.isf = ab[i].isf;
    ab[i] = r;
  }
  cg_check(G, ok, KE_CMP, line, code[0], code[1], NULL, NULL);
}

static int strconst(const CgVal *x) { return x->k && x->k->kind == T_STR; }

CgVal cg_compare(CG *G, const KirInsn *v) {
  CgVal a = cg_val(G, v->args[0]), b = cg_val(G, v->args[1]);
  Type bt = TY(T_BOOL);
  if (v->op != KIR_EQ) {
    CgVal ab[2] = { a, b };
    cmp_check(G, ab, v->line);
    if (!isnumk(ab[0].t.kind) || !isnumk(ab[1].t.kind))   /* nil or a boolean: raised above */
      return cg_mk(bt, cg_i1(G, 0));
    return cg_split(G, v, ab, 2, bt, cmp_concrete);
  }
  if (a.t.kind == T_BUF && a.t.dtype == KJIT_RECORD) return cg_rec_eq(G, a, b);   /* the typer: records */
  int an = isnumk(a.t.kind), bn = isnumk(b.t.kind);
  if (an && bn) { CgVal ab[2] = { a, b }; return cg_split(G, v, ab, 2, bt, cmp_concrete); }
  if (a.t.kind == T_MAYBE && bn) { CgVal t = a; a = b; b = t; an = 1; bn = 0; }
  if (an && b.t.kind == T_MAYBE) {
    /* a number equals a maybe when the maybe holds an equal number */
    CgVal inner = cg_mk(numview(b.t), b.v);
    inner.isf = b.isf;
    CgVal ab[2] = { a, inner };
    CgVal eq = cg_split(G, v, ab, 2, bt, cmp_concrete);
    return cg_mk(bt, LLVMBuildAnd(G->B, b.flag, eq.v, ""));
  }
  if (a.t.kind == T_BOOL && b.t.kind == T_BOOL) return cg_mk(bt, LLVMBuildICmp(G->B, LLVMIntEQ, a.v, b.v, ""));
  if (a.t.kind == T_STR && a.t.sub == T_NUMBER) { CgVal t = a; a = b; b = t; }
  if (b.t.kind == T_STR && b.t.sub == T_NUMBER && strconst(&a)) {
    /* math.type(n) == "integer" / "float" (ir_type.c t_mathtype): b.v is
    ** "n is an integer" */
    if (a.k->len == 7 && memcmp(a.k->str, "integer", 7) == 0) return cg_mk(bt, b.v);
    if (a.k->len == 5 && memcmp(a.k->str, "float", 5) == 0)
      return cg_mk(bt, LLVMBuildNot(G->B, b.v, ""));
    return cg_mk(bt, cg_i1(G, 0));
  }
  if (strconst(&a) && strconst(&b))
    return cg_mk(bt, cg_i1(G, a.k->len == b.k->len && memcmp(a.k->str, b.k->str, a.k->len) == 0));
  if (a.t.kind == T_NIL && b.t.kind == T_NIL) return cg_mk(bt, cg_i1(G, 1));
  if (a.t.kind == T_MAYBE || b.t.kind == T_MAYBE) {
    if (b.t.kind == T_MAYBE && a.t.kind != T_MAYBE) { CgVal t = a; a = b; b = t; }
    /* a may be false/nil (dtype 1: nil); b is nil, a boolean or a maybe */
    LLVMValueRef isfalsy = LLVMBuildNot(G->B, a.flag, "");
    LLVMValueRef r;
    if (b.t.kind == T_NIL) r = a.t.dtype ? isfalsy : cg_i1(G, 0);
    else if (b.t.kind == T_BOOL)
      r = a.t.dtype ? cg_i1(G, 0) : LLVMBuildAnd(G->B, isfalsy, LLVMBuildNot(G->B, b.v, ""), "");
    else if (b.t.kind == T_MAYBE) {
      LLVMValueRef both_falsy = a.t.dtype == b.t.dtype
          ? LLVMBuildAnd(G->B, isfalsy, LLVMBuildNot(G->B, b.flag, ""), "") : cg_i1(G, 0);
      CgVal x = cg_mk(numview(a.t), a.v), y = cg_mk(numview(b.t), b.v);
      x.isf = a.isf; y.isf = b.isf;
      CgVal ab[2] = { x, y };
      CgVal eq = cg_split(G, v, ab, 2, bt, cmp_concrete);
      LLVMValueRef both_num = LLVMBuildAnd(G->B, LLVMBuildAnd(G->B, a.flag, b.flag, ""), eq.v, "");
      r = LLVMBuildOr(G->B, both_falsy, both_num, "");
    } else r = cg_i1(G, 0);
    return cg_mk(bt, r);
  }
  if (a.t.kind == T_FUNC && b.t.kind == T_FUNC) return cg_mk(bt, cg_i1(G, a.t.ref == b.t.ref));
  return cg_mk(bt, cg_i1(G, 0));   /* different types are never equal */
}

/* ---- For cg_lua.c: numbers read from tables ----------------------------------------- */

/* v's arithmetic (binary, or UNM/BNOT) on concrete or T_NUMBER operands a,
** as cg_arith computes it, the result converted to rt. */
CgVal cg_arith_on(CG *G, const KirInsn *v, CgVal *a, Type rt) {
  if (v->op == KIR_UNM || v->op == KIR_BNOT) return cg_split(G, v, a, 1, rt, unary_concrete);
  return cg_split(G, v, a, 2, rt, arith_concrete);
}

/* v's comparison (eq, lt, le) of two numbers. */
LLVMValueRef cg_compare_on(CG *G, const KirInsn *v, CgVal a, CgVal b) {
  CgVal ab[2] = { a, b };
  return cg_split(G, v, ab, 2, TY(T_BOOL), cmp_concrete).v;
}
