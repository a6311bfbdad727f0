/*
** cg_builtin.c: the built-ins of src/ir/ir_builtins.h on the CPU: math.*,
** error, assert. Numeric built-ins run on concrete arguments (cg_split
** gives each side of a T_NUMBER its own code); results follow Lua 5.4
** (math.floor of a float is an integer when it fits, else the float).
*/
#include <stdio.h>
#include <string.h>
#include "codegen/cg.h"
#include "ir/ir_builtins.h"
#include "ir/ir_varinfo.h"

static int builtin_id(CG *G, const KirInsn *v) { return G->sp->types[v->args[0]->id].ref; }

/* The float kind a FLOAT-rule built-in computes in. */
static int fkind(Type rt) { return rt.kind == T_F32 ? T_F32 : T_F64; }

/* A float (f64) as Lua's math.floor gives it: an integer when it fits
** (T_NUMBER's integer side), else the float. */
CgVal cg_float_to_number(CG *G, LLVMValueRef f) {
  /* f converts exactly iff it lies in [-2^63, 2^63); else Lua keeps the
  ** float. A branch (the integer side likely), not selects: each side gives
  ** a constant tag, so LLVM's jump threading can run the code that uses the
  ** result on the integer side without testing the tag again (histogram's
  ** `b = math.floor(x[i] * nbins) + 1; if b > nbins ...; counts[b]`). */
  LLVMValueRef fits = LLVMBuildFCmp(G->B, LLVMRealOLT, cg_math(G, "fabs", G->f64, &f, 1),
                                    cg_f64(G, 9223372036854775808.0), "");
  LLVMBasicBlockRef bi = cg_bb(G, "roundint"), bf = cg_bb(G, "roundbig"), join = cg_bb(G, "rounded");
  LLVMBasicBlockRef edge = cg_bb(G, "roundedge");
  cg_cold_false(G, LLVMBuildCondBr(G->B, fits, bi, edge));
  LLVMPositionBuilderAtEnd(G->B, edge);   /* -2^63 fits too; NaN does not */
  LLVMValueRef minint = LLVMBuildFCmp(G->B, LLVMRealOEQ, f, cg_f64(G, -9223372036854775808.0), "");
  LLVMBuildCondBr(G->B, minint, bi, bf);
  LLVMPositionBuilderAtEnd(G->B, bi);
  LLVMValueRef i = LLVMBuildFPToSI(G->B, f, G->i64, "");
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, bf);
  LLVMValueRef bits = LLVMBuildBitCast(G->B, f, G->i64, "");
  LLVMBuildBr(G->B, join);
  LLVMPositionBuilderAtEnd(G->B, join);
  Type nt = TY(T_NUMBER);
  nt.fsub = T_F64;
  LLVMBasicBlockRef from[2] = { bi, bf };
  LLVMValueRef vs[2] = { i, bits }, tags[2] = { cg_i1(G, 0), cg_i1(G, 1) };
  CgVal r = cg_mk(nt, LLVMBuildPhi(G->B, G->i64, ""));
  LLVMAddIncoming(r.v, vs, from, 2);
  r.isf = LLVMBuildPhi(G->B, G->i1, "");
  LLVMAddIncoming(r.isf, tags, from, 2);
  return r;
}

static CgVal round_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n; (void)rt;
  if (a[0].t.kind == T_INT) return a[0];
  int isfloor = builtin_id(G, v) == B_MATH_FLOOR;
  LLVMValueRef x = cg_num_to(G, a[0], T_F64);
  return cg_float_to_number(G, cg_math(G, isfloor ? "floor" : "ceil", G->f64, &x, 1));
}

static CgVal float_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  int id = builtin_id(G, v), k = fkind(rt);
  LLVMTypeRef ty = k == T_F32 ? G->f32 : G->f64;
  LLVMValueRef x = cg_num_to(G, a[0], k);
  Type t = TY(k);
  switch (id) {
  case B_MATH_SQRT: return cg_mk(t, cg_math(G, "sqrt", ty, &x, 1));
  case B_MATH_SIN: return cg_mk(t, cg_math(G, "sin", ty, &x, 1));
  case B_MATH_COS: return cg_mk(t, cg_math(G, "cos", ty, &x, 1));
  case B_MATH_TAN: return cg_mk(t, cg_math(G, "tan", ty, &x, 1));
  case B_MATH_ASIN: return cg_mk(t, cg_math(G, "asin", ty, &x, 1));
  case B_MATH_ACOS: return cg_mk(t, cg_math(G, "acos", ty, &x, 1));
  case B_MATH_EXP: return cg_mk(t, cg_math(G, "exp", ty, &x, 1));
  /* lmathlib.c: x * (180 / pi), x * (pi / 180), the constant folded in C */
  case B_MATH_DEG: return cg_mk(t, LLVMBuildFMul(G->B, x, LLVMConstReal(ty, 180.0 / 3.141592653589793238462643383279502884), ""));
  case B_MATH_RAD: return cg_mk(t, LLVMBuildFMul(G->B, x, LLVMConstReal(ty, 3.141592653589793238462643383279502884 / 180.0), ""));
  case B_MATH_ATAN: {
    LLVMValueRef av[2] = { x, n >= 2 ? cg_num_to(G, a[1], k) : LLVMConstReal(ty, 1.0) };
    return cg_mk(t, cg_math(G, "atan2", ty, av, 2));
  }
  default: {   /* log */
    LLVMValueRef lx = cg_math(G, "log", ty, &x, 1);
    if (n < 2) return cg_mk(t, lx);
    LLVMValueRef b = cg_num_to(G, a[1], k);
    LLVMValueRef l2 = cg_math(G, "log2", ty, &x, 1);
    LLVMValueRef l10 = cg_math(G, "log10", ty, &x, 1);
    LLVMValueRef lb = cg_math(G, "log", ty, &b, 1);
    LLVMValueRef q = LLVMBuildFDiv(G->B, lx, lb, "");
    LLVMValueRef is2 = LLVMBuildFCmp(G->B, LLVMRealOEQ, b, LLVMConstReal(ty, 2.0), "");
    LLVMValueRef is10 = LLVMBuildFCmp(G->B, LLVMRealOEQ, b, LLVMConstReal(ty, 10.0), "");
    return cg_mk(t, LLVMBuildSelect(G->B, is2, l2, LLVMBuildSelect(G->B, is10, l10, q, ""), ""));
  }
  }
}

static CgVal abs_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)v; (void)n; (void)rt;
  if (a[0].t.kind == T_INT) {
    LLVMValueRef neg = LLVMBuildICmp(G->B, LLVMIntSLT, a[0].v, cg_i64(G, 0), "");
    return cg_mk(a[0].t, LLVMBuildSelect(G->B, neg, LLVMBuildSub(G->B, cg_i64(G, 0), a[0].v, ""), a[0].v, ""));
  }
  return cg_mk(a[0].t, cg_math(G, "fabs", LLVMTypeOf(a[0].v), &a[0].v, 1));
}

/* The name "bad argument #n to 'name'" gives the built-in call v calls
** (ir_varinfo.c: 'fmod', or 'f' for a local f = math.fmod), kept as long
** as the module's messages. */
static const char *argerror_name(CG *G, const KirInsn *v) {
  return cg_argerror_name(G, v, kty_call_name(G->sp, v, builtin_id(G, v)));
}

static CgVal fmod_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n; (void)rt;
  if (a[0].t.kind == T_INT && a[1].t.kind == T_INT) {
    LLVMValueRef d = a[1].v;
    cg_check(G, LLVMBuildICmp(G->B, LLVMIntNE, d, cg_i64(G, 0), ""), KE_FMOD0, v->line, NULL,
             NULL, NULL, argerror_name(G, v));
    LLVMValueRef neg1 = LLVMBuildICmp(G->B, LLVMIntEQ, d, cg_i64(G, -1), "");
    LLVMValueRef sd = LLVMBuildSelect(G->B, neg1, cg_i64(G, 1), d, "");
    return cg_mk(TY(T_INT), LLVMBuildSRem(G->B, a[0].v, sd, ""));
  }
  int k = rt.kind == T_F32 ? T_F32 : T_F64;
  return cg_mk(TY(k), LLVMBuildFRem(G->B, cg_num_to(G, a[0], k), cg_num_to(G, a[1], k), ""));
}

/* One step of math.max/min: keeps the first of equal values, as Lua. */
static CgVal minmax_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n;
  int ismax = builtin_id(G, v) == B_MATH_MAX;
  LLVMValueRef c = ismax ? cg_cmp_num(G, CG_LT, a[0], a[1]) : cg_cmp_num(G, CG_LT, a[1], a[0]);
  CgVal x = cg_convert(G, a[0], rt, v->line), y = cg_convert(G, a[1], rt, v->line);
  CgVal r = cg_mk(rt, LLVMBuildSelect(G->B, c, y.v, x.v, ""));
  if (rt.kind == T_NUMBER) r.isf = LLVMBuildSelect(G->B, c, y.isf, x.isf, "");
  return r;
}

static CgVal tointeger_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)v; (void)n;
  if (a[0].t.kind == T_INT) return a[0];
  CgVal r = cg_mk(rt, NULL);
  LLVMValueRef ok;
  r.v = cg_float_to_int_exact(G, cg_num_to(G, a[0], T_F64), &ok);
  r.flag = ok;
  return r;
}

/* "attempt to compare t1 with t2" (luaG_ordererror), raised from C: no
** position. */
static void compare_check(CG *G, LLVMValueRef ok, int line, const char *t1, const char *t2) {
  char *msg = ka_alloc(G->S->A, 64);
  if (msg == NULL) cg_error(G, NULL, "not enough memory");
  if (strcmp(t1, t2) == 0) snprintf(msg, 64, "attempt to compare two %s values", t1);
  else snprintf(msg, 64, "attempt to compare %s with %s", t1, t2);
  cg_check(G, ok, KE_TYPEERR, line, cg_i64(G, 1), NULL, NULL, msg);
}

/* math.max/min of numbers that may be nil (false): lmathlib.c compares the
** extreme so far with each next argument (max: extreme < next, min:
** next < extreme) by lua_compare, whose order error names both operands'
** types; the extreme is a number once the first comparison passed. */
static void minmax_maybe_checks(CG *G, int id, CgVal *a, int n, int line) {
  int max = id == B_MATH_MAX;
  for (int i = 0; i < n; i++) {
    if (a[i].t.kind != T_MAYBE) continue;
    const char *ti = a[i].t.dtype ? "nil" : "boolean";
    if (i == 0) {   /* compared with the second argument first */
      if (a[1].t.kind == T_MAYBE) {
        const char *t1 = a[1].t.dtype ? "nil" : "boolean";
        compare_check(G, LLVMBuildOr(G->B, a[0].flag, a[1].flag, ""), line,
                      max ? ti : t1, max ? t1 : ti);
      }
      compare_check(G, a[0].flag, line, max ? ti : "number", max ? "number" : ti);
    } else {
      compare_check(G, a[i].flag, line, max ? "number" : ti, max ? ti : "number");
    }
  }
}

/* Integer argument argn of the library function call v calls: "bad
** argument #n to 'ult' (number has no integer representation)", the
** function named as the call names it (ir_varinfo.c). */
static LLVMValueRef to_int_arg(CG *G, const KirInsn *v, CgVal x, int argn) {
  if (x.t.kind == T_INT) return x.v;
  LLVMValueRef ok;
  LLVMValueRef i = cg_float_to_int_exact(G, cg_num_to(G, x, T_F64), &ok);
  cg_check(G, ok, KE_ARGNOINT, v->line, cg_i64(G, argn), NULL, NULL, argerror_name(G, v));
  return i;
}

static CgVal ult_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n; (void)rt;
  LLVMValueRef x = to_int_arg(G, v, a[0], 1);
  LLVMValueRef y = to_int_arg(G, v, a[1], 2);
  return cg_mk(TY(T_BOOL), LLVMBuildICmp(G->B, LLVMIntULT, x, y, ""));
}

/* math.ult's first argument as an integer (its own check, see cg_builtin). */
static CgVal ult_first_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n; (void)rt;
  return cg_mk(TY(T_INT), to_int_arg(G, v, a[0], 1));
}

/* math.modf(x) of an integer-or-float (lmathlib.c; a concrete number goes
** to cg_kmath.c's modf2): an integer is its own integral part, with
** 0.0; a float x gives ip = x < 0 ? ceil(x) : floor(x), an integer where
** it fits (as math.floor), and x == ip ? 0.0 : x - ip. Two results. */
static CgVal math_modf(CG *G, const KirInsn *v, CgVal x) {
  Type rt = G->sp->types[v->id];
  CgVal r[2];
  LLVMValueRef zero = cg_f64(G, 0.0);
  if (x.t.kind == T_INT) {
    r[0] = x;
    r[1] = cg_mk(TY(T_F64), zero);
  } else {
    LLVMValueRef f = x.t.kind == T_NUMBER ? cg_num_to(G, cg_number_side(G, x, 1), T_F64)
                                          : cg_num_to(G, x, T_F64);
    LLVMValueRef fl = cg_math(G, "floor", G->f64, &f, 1), ce = cg_math(G, "ceil", G->f64, &f, 1);
    LLVMValueRef neg = LLVMBuildFCmp(G->B, LLVMRealOLT, f, zero, "");
    LLVMValueRef ip = LLVMBuildSelect(G->B, neg, ce, fl, "");
    LLVMValueRef fits = LLVMBuildOr(G->B,
        LLVMBuildFCmp(G->B, LLVMRealOLT, cg_math(G, "fabs", G->f64, &ip, 1),
                      cg_f64(G, 9223372036854775808.0), ""),
        LLVMBuildFCmp(G->B, LLVMRealOEQ, ip, cg_f64(G, -9223372036854775808.0), ""), "");
    LLVMValueRef safe = LLVMBuildSelect(G->B, fits, ip, zero, "");
    LLVMValueRef iv = LLVMBuildFPToSI(G->B, safe, G->i64, "");
    LLVMValueRef bits = LLVMBuildBitCast(G->B, ip, G->i64, "");
    LLVMValueRef frac = LLVMBuildSelect(G->B, LLVMBuildFCmp(G->B, LLVMRealOEQ, f, ip, ""), zero,
                                        LLVMBuildFSub(G->B, f, ip, ""), "");
    Type nt = TY(T_NUMBER);
    nt.fsub = T_F64;
    r[0] = cg_mk(nt, LLVMBuildSelect(G->B, fits, iv, bits, ""));
    r[0].isf = LLVMBuildNot(G->B, fits, "");
    r[1] = cg_mk(TY(T_F64), frac);
    if (x.t.kind == T_NUMBER) {   /* its integer side: itself and 0.0 */
      CgVal i = cg_number_side(G, x, 0);
      r[0].v = LLVMBuildSelect(G->B, x.isf, r[0].v, i.v, "");
      r[0].isf = LLVMBuildAnd(G->B, x.isf, r[0].isf, "");
      r[1].v = LLVMBuildSelect(G->B, x.isf, frac, zero, "");
    }
  }
  r[0] = cg_convert(G, r[0], rt, v->line);
  G->results[v->id] = ka_alloc(G->S->A, sizeof(CgVal) * 2);
  if (G->results[v->id] == NULL) cg_error(G, v, "not enough memory");
  G->results[v->id][0] = r[0];
  G->results[v->id][1] = r[1];
  G->nresults[v->id] = 2;
  return r[0];
}

/* The use cg_unwrap names argument i of the call v by: v where the
** argument is one of v's operands, none for a value of an open call's
** results (`math.atan(g(x))`: no operand to name), except a Lua value,
** which is always checked to be a number (cg_lua_tonumber needs the call
** for its "bad argument #i to 'atan'"). */
static const KirInsn *arg_use(const KirInsn *v, const CgVal *a, int i) {
  return i + 1 < v->nargs || a[i].t.kind == T_LUA ? v : NULL;
}

/* assert's results past the first: its other arguments (luaB_assert
** returns them all; the typer's result_of); the first is set by the caller. */
static void assert_results(CG *G, const KirInsn *v, const CgVal *a, int n) {
  if (n < 2) return;
  G->results[v->id] = ka_alloc(G->S->A, sizeof(CgVal) * (size_t)n);
  if (G->results[v->id] == NULL) cg_error(G, v, "not enough memory");
  for (int i = 1; i < n; i++) G->results[v->id][i] = a[i];
  G->results[v->id][0] = a[0];
  G->nresults[v->id] = n;
}

CgVal cg_builtin(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  if (B_IS_CUDA(id)) return cg_cuda(G, v, id, a, n);   /* kernels: cg_cuda.c */
  if (B_IS_ARRAY(id)) return cg_array_builtin(G, v, id, a, n);   /* cg_alloc.c */
  Type rt = G->sp->types[v->id];
  int line = v->line;
  if (id == B_PRINT && G->target->print) return cg_print(G, v, a, n);   /* kernels: cg_print.c */
  if (id == B_SETMETATABLE) return cg_lua_setmetatable(G, v, a);   /* cg_lua.c */
  if (B_NEEDS_L(id)) return cg_lib_call(G, v, id, a, n);   /* cg_lib.c */
  if ((id == B_TYPE || id == B_TONUMBER) && rt.kind == T_LUA)   /* of a Lua value: called */
    return cg_lib_call(G, v, id, a, n);
  if (id == B_TONUMBER && a[0].t.kind == T_MAYBE) {   /* of a number-or-nil (-false): */
    CgVal r = a[0];                                   /* the number, else nil */
    r.t = rt;
    return r;
  }
  if (id == B_TONUMBER) return cg_convert(G, a[0], rt, line);   /* of a number: itself */
  if (id == B_ERROR) {
    int level = 1;
    if (n >= 2 && a[1].k && a[1].k->kind == T_INT) level = (int)a[1].k->v.i;
    if (n == 0 || cg_lib_message(G, &a[0])) {   /* built or known at run time */
      if (n == 0) a[0] = cg_mk(TY(T_NIL), NULL);
      cg_lib_error(G, v, a[0], level);
      return cg_mk(TY(T_NIL), NULL);
    }
    const char *msg = a[0].k && a[0].k->kind == T_STR ? a[0].k->str : "";
    /* field c: how many callers up the position is (error's level - 1) */
    cg_raise(G, level == 0 ? KE_USER_NOPOS : KE_USER, line, NULL, NULL,
             cg_i64(G, level > 1 ? level - 1 : 0), msg);
    return cg_mk(TY(T_NIL), NULL);
  }
  if (id == B_ASSERT) {
    assert_results(G, v, a, n);   /* (before the message is made a Lua value) */
    if (n >= 2 && cg_lib_message(G, &a[1])) {
      cg_lib_assert(G, v, a[0], a[1]);
    } else {
      LLVMValueRef ok = cg_truthy(G, a[0]);
      const char *msg = n >= 2 && a[1].k && a[1].k->kind == T_STR ? a[1].k->str : "assertion failed!";
      cg_check(G, ok, KE_ASSERT, line, NULL, NULL, NULL, msg);
    }
    CgVal r = cg_convert(G, a[0], rt, line);
    if (G->results[v->id]) G->results[v->id][0] = r;
    return r;
  }
  if (id == B_MATH_TYPE) {
    /* a constant, but for an integer-or-float: "is it an integer", an i1
    ** that cg_compare tests against the constant string */
    if (rt.kind == T_STR && rt.sub == T_NUMBER)   /* a peeled copy: a[0] may be concrete */
      return cg_mk(rt, a[0].t.kind == T_NUMBER ? LLVMBuildNot(G->B, a[0].isf, "")
                                               : cg_i1(G, a[0].t.kind == T_INT));
    return cg_mk(rt, NULL);
  }
  if (B_IS_CUDA(id) || id == B_KJIT_PRANGE)
    cg_error(G, v, "%s is not yet supported by the bytecode code generator",
             id == B_KJIT_PRANGE ? "kjit.prange" : "this kjit.cuda built-in");
  if ((id == B_MATH_MAX || id == B_MATH_MIN) && n == 1) return cg_convert(G, a[0], rt, line);
  if ((id == B_MATH_MAX || id == B_MATH_MIN) && n >= 2) minmax_maybe_checks(G, id, a, n, line);
  if (id == B_MATH_TOINTEGER && a[0].t.kind == T_MAYBE) {
    /* a number or nil (false): fail (nil) where it is not a number */
    Type nt = TY(a[0].t.sub);
    nt.fsub = a[0].t.fsub;
    CgVal x = cg_mk(nt, a[0].v);
    x.isf = a[0].isf;
    CgVal r = cg_split(G, v, &x, 1, rt, tointeger_concrete);
    r.flag = LLVMBuildAnd(G->B, r.flag, a[0].flag, "");
    return r;
  }
  if (id == B_MATH_ULT && n >= 2) {
    /* Lua converts argument 1 (luaL_checkinteger) before it looks at
    ** argument 2: a non-integral first argument is named even where the
    ** second is nil, so argument 1's check comes before argument 2's
    ** unwrap below */
    a[0] = cg_unwrap(G, a[0], line, arg_use(v, a, 0), 1);
    a[0] = cg_split(G, v, a, 1, TY(T_INT), ult_first_concrete);
  }
  if (id == B_MATH_FMOD && n >= 2 && __atomic_load_n(&kjit_fmod_checks_arg2_first, __ATOMIC_RELAXED))
    a[1] = cg_unwrap(G, a[1], line, arg_use(v, a, 1), 2);   /* named first, as this Lua does */
  if ((id == B_MATH_LOG || id == B_MATH_ATAN) && n >= 2 && a[1].t.kind == T_NIL)
    n = 1;   /* a nil base or x is none (the typer's optional_second) */
  for (int i = 0; i < n; i++) a[i] = cg_unwrap(G, a[i], line, arg_use(v, a, i), i + 1);
  switch (id) {
  case B_MATH_FLOOR: case B_MATH_CEIL: return cg_split(G, v, a, 1, rt, round_concrete);
  case B_MATH_ABS: return cg_split(G, v, a, 1, rt, abs_concrete);
  case B_MATH_SQRT: case B_MATH_SIN: case B_MATH_COS: case B_MATH_TAN: case B_MATH_ASIN:
  case B_MATH_ACOS: case B_MATH_EXP: case B_MATH_ATAN: case B_MATH_LOG: case B_MATH_DEG:
  case B_MATH_RAD:
    return cg_split(G, v, a, n < 2 ? n : 2, rt, float_concrete);
  case B_MATH_FMOD: return cg_split(G, v, a, 2, rt, fmod_concrete);
  case B_MATH_TOINTEGER: return cg_split(G, v, a, 1, rt, tointeger_concrete);
  case B_MATH_ULT: return cg_split(G, v, a, 2, rt, ult_concrete);
  case B_MATH_MODF:
    return a[0].t.kind == T_NUMBER ? math_modf(G, v, a[0]) : cg_kmath(G, v, id, a, n);
  case B_MATH_MAX: case B_MATH_MIN: {
    CgVal r = cg_convert(G, a[0], rt, line);
    for (int i = 1; i < n; i++) {
      CgVal p[2] = { r, a[i] };
      r = cg_split(G, v, p, 2, rt, minmax_concrete);
    }
    return r;
  }
  default:
    if (B_IS_KMATH(id)) return cg_kmath(G, v, id, a, n);   /* cg_kmath.c */
    cg_error(G, v, "'%s' is not supported in compiled code", kir_builtin_name(id));
  }
}
