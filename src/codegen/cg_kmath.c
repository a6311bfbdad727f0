/*
** cg_kmath.c: numba-cuda's casts (cuda.int32(x) ...), kjit.math.* (the
** math numba-cuda has beyond Lua's) and math.modf, for every target (the
** math routines through cg_math: libdevice on the GPU, the C library on
** the CPU and in the simulator).
**
** Casts, as numba's compiled casts: an integer wraps to the width of the
** type (cuda.uint8(300) is 44, cuda.int32(2^31) is -2^31); a float is
** truncated toward zero into the 64-bit range first (saturating, NaN
** gives 0: what the GPU's cvt.rzi does, and a defined answer on the CPU,
** whose conversion instruction has none), then wrapped. cuda.float32 and
** cuda.float64 round to nearest. host/kernel_intrin.c is the same in C.
*/
#include <stdio.h>
#include "codegen/cg.h"
#include "ir/ir_builtins.h"

static int builtin_id(CG *G, const KirInsn *v) { return G->sp->types[v->args[0]->id].ref; }

/* x (f64) truncated toward zero, saturated to [-2^63, 2^63 - 1], NaN 0. */
static LLVMValueRef sat_fptosi(CG *G, LLVMValueRef x) {
  LLVMValueRef i = LLVMBuildFPToSI(G->B, x, G->i64, "");
  LLVMValueRef hi = LLVMBuildFCmp(G->B, LLVMRealOGE, x, cg_f64(G, 9223372036854775808.0), "");
  LLVMValueRef lo = LLVMBuildFCmp(G->B, LLVMRealOLT, x, cg_f64(G, -9223372036854775808.0), "");
  LLVMValueRef nan = LLVMBuildFCmp(G->B, LLVMRealUNO, x, x, "");
  i = LLVMBuildSelect(G->B, lo, cg_i64(G, INT64_MIN), i, "");
  i = LLVMBuildSelect(G->B, hi, cg_i64(G, INT64_MAX), i, "");
  return LLVMBuildSelect(G->B, nan, cg_i64(G, 0), i, "");
}

static CgVal cast(CG *G, int id, CgVal x) {
  if (id == B_CUDA_FLOAT32 || id == B_CUDA_FLOAT64) {
    int k = id == B_CUDA_FLOAT32 ? T_F32 : T_F64;
    LLVMTypeRef ty = k == T_F32 ? G->f32 : G->f64;
    if (x.t.kind == T_INT) return cg_mk(TY(k), LLVMBuildSIToFP(G->B, x.v, ty, ""));
    return cg_mk(TY(k), cg_num_to(G, x, k));
  }
  LLVMValueRef i = x.t.kind == T_INT ? x.v : sat_fptosi(G, cg_num_to(G, x, T_F64));
  LLVMTypeRef w = NULL;
  int sign = 1;
  switch (id) {
  case B_CUDA_INT8: w = G->i8; break;
  case B_CUDA_UINT8: w = G->i8; sign = 0; break;
  case B_CUDA_INT16: w = G->i16; break;
  case B_CUDA_UINT16: w = G->i16; sign = 0; break;
  case B_CUDA_INT32: w = G->i32; break;
  case B_CUDA_UINT32: w = G->i32; sign = 0; break;
  default: break;   /* int64, uint64: the 64 bits as they are */
  }
  if (w) {
    LLVMValueRef t = LLVMBuildTrunc(G->B, i, w, "");
    i = sign ? LLVMBuildSExt(G->B, t, G->i64, "") : LLVMBuildZExt(G->B, t, G->i64, "");
  }
  return cg_mk(TY(T_INT), i);
}

/* math.modf, as lmathlib.c: an integer is its own integral part (and 0.0);
** a float: trunc(x), as an integer where it fits (Lua 5.4 pushes it so),
** and x - trunc(x) in x's kind, 0.0 where they are equal (inf). */
static CgVal modf2(CG *G, const KirInsn *v, CgVal x, Type rt) {
  CgVal *r = ka_alloc(G->S->A, sizeof(CgVal) * 2);
  if (r == NULL) cg_error(G, v, "not enough memory");
  if (x.t.kind == T_INT) {
    r[0] = x;
    r[1] = cg_mk(TY(T_F64), cg_f64(G, 0.0));
  } else {
    (void)rt;
    int k = x.t.kind == T_F32 ? T_F32 : T_F64;
    LLVMTypeRef ty = k == T_F32 ? G->f32 : G->f64;
    LLVMValueRef f = cg_num_to(G, x, k);
    LLVMValueRef ip = cg_math(G, "trunc", ty, &f, 1);
    LLVMValueRef same = LLVMBuildFCmp(G->B, LLVMRealOEQ, f, ip, "");
    LLVMValueRef frac = LLVMBuildSelect(G->B, same, LLVMConstReal(ty, 0.0), LLVMBuildFSub(G->B, f, ip, ""), "");
    r[0] = cg_float_to_number(G, k == T_F32 ? LLVMBuildFPExt(G->B, ip, G->f64, "") : ip);
    r[1] = cg_mk(TY(k), frac);
  }
  G->results[v->id] = r;
  G->nresults[v->id] = 2;
  return r[0];
}

static CgVal kmath_concrete(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  int id = builtin_id(G, v);
  if (id >= B_CUDA_INT8 && id <= B_CUDA_FLOAT64) return cast(G, id, a[0]);
  if (id == B_CUDA_FLOAT16 || B_IS_FP16(id)) return cg_half_op(G, v, id, a, n);   /* cg_half.c */
  if (id == B_MATH_MODF) return modf2(G, v, a[0], rt);
  if (id == B_KMATH_ISNAN || id == B_KMATH_ISINF || id == B_KMATH_ISFINITE) {
    if (a[0].t.kind == T_INT) return cg_mk(TY(T_BOOL), cg_i1(G, id == B_KMATH_ISFINITE));
    LLVMValueRef x = a[0].v;
    LLVMTypeRef ty = LLVMTypeOf(x);
    if (id == B_KMATH_ISNAN) return cg_mk(TY(T_BOOL), LLVMBuildFCmp(G->B, LLVMRealUNO, x, x, ""));
    LLVMValueRef ax = cg_math(G, "fabs", ty, &x, 1);
    LLVMValueRef inf = LLVMConstReal(ty, 1.0 / 0.0);
    return cg_mk(TY(T_BOOL), LLVMBuildFCmp(G->B, id == B_KMATH_ISINF ? LLVMRealOEQ : LLVMRealOLT,
                                           ax, inf, ""));
  }
  int k = rt.kind == T_F32 ? T_F32 : T_F64;
  LLVMTypeRef ty = k == T_F32 ? G->f32 : G->f64;
  LLVMValueRef x[3];
  for (int i = 0; i < n && i < 3; i++) x[i] = cg_num_to(G, a[i], k);
  const char *base;
  switch (id) {
  case B_KMATH_FMA: {
    /* three operands: cg_math takes two; the target's routine or C's fma */
    char name[48];
    LLVMTypeRef pt[3] = { ty, ty, ty };
    if (!(G->target->math_name && G->target->math_name("fma", k == T_F32, name, sizeof name)))
      snprintf(name, sizeof name, "%s", k == T_F32 ? "fmaf" : "fma");
    return cg_mk(TY(k), cg_ccall(G, name, ty, pt, x, 3));
  }
  case B_KMATH_CBRT: base = "cbrt"; break;
  case B_KMATH_ERF: base = "erf"; break;
  case B_KMATH_ERFC: base = "erfc"; break;
  case B_KMATH_TANH: base = "tanh"; break;
  case B_KMATH_SINH: base = "sinh"; break;
  case B_KMATH_COSH: base = "cosh"; break;
  case B_KMATH_HYPOT: base = "hypot"; break;
  case B_KMATH_LOG2: base = "log2"; break;
  case B_KMATH_LOG10: base = "log10"; break;
  case B_KMATH_LOG1P: base = "log1p"; break;
  case B_KMATH_EXPM1: base = "expm1"; break;
  case B_KMATH_GAMMA: base = "tgamma"; break;
  case B_KMATH_LGAMMA: base = "lgamma"; break;
  case B_KMATH_ASINH: base = "asinh"; break;
  case B_KMATH_ACOSH: base = "acosh"; break;
  case B_KMATH_ATANH: base = "atanh"; break;
  case B_KMATH_REMAINDER: base = "remainder"; break;
  case B_KMATH_COPYSIGN: base = "copysign"; break;
  case B_KMATH_TRUNC: base = "trunc"; break;
  default: cg_error(G, v, "'%s' is not supported in compiled code", kir_builtin_name(id));
  }
  return cg_mk(TY(k), cg_math(G, base, ty, x, (unsigned)n));
}

CgVal cg_kmath(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  (void)id;
  Type rt = G->sp->types[v->id];
  return cg_split(G, v, a, n, rt, kmath_concrete);
}
