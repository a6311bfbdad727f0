/*
** cg_half.c: f16 (IEEE binary16) in compiled code, every target: the
** element conversions of f16 arrays (cg_array.c) and numba-cuda's
** cuda.fp16.* and cuda.float16(x) (called from cg_kmath.c).
**
** Representation. An f16 element is stored as its 16 bits (i16: the
** array's element type, cg_dtype_llty) and read as the interpreter reads
** it, a Lua float (f64, exact: ir_type.c's elem_of); a value of
** cuda.float16 or cuda.fp16.* is an f64 holding a half. Conversions are
** LLVM's fpext / fptrunc on `half`: the GPU's cvt.f64.f16 / cvt.rn.f16.f64;
** on x86 F16C's vcvtph2ps, or the libcalls __extendhfsf2 / __gnu_h2f_ieee /
** __truncsfhf2 ..., which runtime/halfrt.c registers with our own C code
** (common/khalf.h) so the JIT never depends on the compiler runtime. A
** store rounds once from the double (not through an f32): numpy's
** float16(x), buffer.c's kh_from_double; on the CPU in inline integer
** code (f64_to_half_bits), as x86 has no instruction for it.
**
** cuda.fp16.*: each argument rounded to half, the operation on halves,
** the result rounded to half once. add, sub, mul and the comparisons are
** LLVM `half` instructions: add.rn.f16 ... on the GPU (sm_53+; kjit's
** least is sm_75), promoted to f32 by LLVM on the CPU, which gives the
** same bits (khalf.h: rounding twice is innocuous at 24 bits). div and
** sqrt are done in f32 explicitly everywhere (correctly rounded; the GPU
** has no f16 divide), fma in f64 on the CPU (exact: khalf.h) and fma.rn.f16
** on the GPU. exp, log, sin, cos: the f32 routine (libdevice's on the
** GPU, the C library's on the CPU) rounded to half, and so exp2, exp10,
** log2, log10 (rcp and rsqrt: IEEE f32 division and square root, the
** same everywhere; ceil, floor, rint, trunc: exact); the two f32 results
** may differ in their last bit, which rounding to half hides except next
** to a half-way point. neg and abs flip or clear the sign bit (NaN too).
** hmax / hmin follow CUDA's __hmax / __hmin: a NaN operand gives the
** other, two NaNs the canonical NaN 0x7fff, and +0 > -0.
*/
#include <string.h>
#include "codegen/cg.h"
#include "ir/ir_builtins.h"

static LLVMTypeRef half_ty(CG *G) { return LLVMHalfTypeInContext(G->C); }

LLVMValueRef cg_half_to_f64(CG *G, LLVMValueRef bits) {
  LLVMValueRef h = LLVMBuildBitCast(G->B, bits, half_ty(G), "");
  return LLVMBuildFPExt(G->B, h, G->f64, "");
}

static int on_gpu(CG *G) { return strcmp(G->target->name, "nvptx") == 0; }

/* d rounded to half in integer and f64 operations, without a branch or a
** call, so that loops of stores vectorize (x86 has no f64 -> f16
** instruction, and LLVM 14 calls __truncdfhf2 per element: 10x slower
** than an f32 store). common/khalf.h's kh_from_double, as a select of:
** NaN (quieted, payload's top bits), +-inf past 65520, the normal halves
** (the exponent rebiased, the dropped 42 bits rounded to nearest even:
** a carry into the exponent is right), and below 2^-14 the subnormals:
** |d| * 2^24 rounded to an integer by adding 2^52 (exact scaling; the
** addition rounds to nearest even). */
static LLVMValueRef f64_to_half_bits(CG *G, LLVMValueRef d) {
  LLVMBuilderRef B = G->B;
  LLVMTypeRef i64 = G->i64;
#define K(v) LLVMConstInt(i64, (unsigned long long)(v), 0)
  LLVMValueRef u = LLVMBuildBitCast(B, d, i64, "");
  LLVMValueRef sign = LLVMBuildAnd(B, LLVMBuildLShr(B, u, K(48), ""), K(0x8000), "");
  LLVMValueRef a = LLVMBuildAnd(B, u, K(0x7fffffffffffffffULL), "");
  LLVMValueRef q = LLVMBuildLShr(B, a, K(42), "");
  LLVMValueRef rem = LLVMBuildAnd(B, a, K((1ULL << 42) - 1), "");
  LLVMValueRef above = LLVMBuildICmp(B, LLVMIntUGT, rem, K(1ULL << 41), "");
  LLVMValueRef tie = LLVMBuildICmp(B, LLVMIntEQ, rem, K(1ULL << 41), "");
  LLVMValueRef odd = LLVMBuildTrunc(B, q, G->i1, "");
  LLVMValueRef up = LLVMBuildOr(B, above, LLVMBuildAnd(B, tie, odd, ""), "");
  LLVMValueRef normal = LLVMBuildSub(B, LLVMBuildAdd(B, q, LLVMBuildZExt(B, up, i64, ""), ""),
                                     K(1008ULL << 10), "");   /* 1023 - 15 */
  LLVMValueRef ad = LLVMBuildBitCast(B, a, G->f64, "");
  LLVMValueRef t = LLVMBuildFAdd(B, LLVMBuildFMul(B, ad, cg_f64(G, 0x1p24), ""), cg_f64(G, 0x1p52), "");
  LLVMValueRef sub = LLVMBuildAnd(B, LLVMBuildBitCast(B, t, i64, ""), K(0x7ff), "");
  LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, a, K(0x3f10000000000000ULL), ""),
                                   sub, normal, "");   /* below 2^-14 */
  r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGE, a, K(0x40effe0000000000ULL), ""),
                      K(0x7c00), r, "");               /* 65520 and past: inf */
  LLVMValueRef nan = LLVMBuildOr(B, K(0x7e00), LLVMBuildAnd(B, q, K(0x3ff), ""), "");
  r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, a, K(0x7ff0000000000000ULL), ""), nan, r, "");
  return LLVMBuildTrunc(B, LLVMBuildOr(B, r, sign, ""), G->i16, "");
#undef K
}

LLVMValueRef cg_f64_to_half(CG *G, LLVMValueRef d) {
  if (!on_gpu(G)) return f64_to_half_bits(G, d);
  LLVMValueRef h = LLVMBuildFPTrunc(G->B, d, half_ty(G), "");   /* cvt.rn.f16.f64 */
  return LLVMBuildBitCast(G->B, h, G->i16, "");
}

/* A number (concrete: int, f32, f64) rounded once to a half. */
static LLVMValueRef to_half(CG *G, CgVal x) {
  LLVMValueRef f;
  if (x.t.kind == T_INT) f = LLVMBuildSIToFP(G->B, x.v, G->f64, "");   /* exact below 2^53 */
  else if (x.t.kind == T_F32) return LLVMBuildFPTrunc(G->B, x.v, half_ty(G), "");
  else f = cg_num_to(G, x, T_F64);
  return LLVMBuildBitCast(G->B, cg_f64_to_half(G, f), half_ty(G), "");
}

static CgVal from_half(CG *G, LLVMValueRef h) {
  return cg_mk(TY(T_F64), LLVMBuildFPExt(G->B, h, G->f64, ""));
}

static LLVMValueRef hbits(CG *G, LLVMValueRef h) { return LLVMBuildBitCast(G->B, h, G->i16, ""); }
static LLVMValueRef hval(CG *G, LLVMValueRef b) { return LLVMBuildBitCast(G->B, b, half_ty(G), ""); }

/* f(x) in f32, rounded to half; base NULL: x / y; "rcp": 1 / x; "rsqrt":
** 1 / sqrt(x), two IEEE f32 operations (not the GPU's approximate rsqrt),
** so every target gives the same f32. */
static LLVMValueRef via_f32(CG *G, const char *base, LLVMValueRef *h, unsigned n) {
  LLVMValueRef f[2];
  for (unsigned i = 0; i < n; i++) f[i] = LLVMBuildFPExt(G->B, h[i], G->f32, "");
  LLVMValueRef r, one = LLVMConstReal(G->f32, 1.0);
  if (base == NULL) r = LLVMBuildFDiv(G->B, f[0], f[1], "");
  else if (strcmp(base, "rcp") == 0) r = LLVMBuildFDiv(G->B, one, f[0], "");
  else if (strcmp(base, "rsqrt") == 0)
    r = LLVMBuildFDiv(G->B, one, cg_math(G, "sqrt", G->f32, f, 1), "");
  else r = cg_math(G, base, G->f32, f, n);
  return LLVMBuildFPTrunc(G->B, r, half_ty(G), "");
}

/* hmax (max = 1) / hmin of halves a, b: CUDA's __hmax / __hmin. */
static LLVMValueRef hminmax(CG *G, LLVMValueRef a, LLVMValueRef b, int max) {
  LLVMBuilderRef B = G->B;
  LLVMValueRef ab = hbits(G, a), bb = hbits(G, b);
  LLVMValueRef anan = LLVMBuildFCmp(B, LLVMRealUNO, a, a, "");
  LLVMValueRef bnan = LLVMBuildFCmp(B, LLVMRealUNO, b, b, "");
  LLVMValueRef pick_a = LLVMBuildFCmp(B, max ? LLVMRealOGT : LLVMRealOLT, a, b, "");
  pick_a = LLVMBuildOr(B, pick_a, bnan, "");
  LLVMValueRef r = LLVMBuildSelect(B, pick_a, ab, bb, "");
  /* equal (both zeros of either sign, or the same value): +0 wins max */
  LLVMValueRef eq = LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "");
  LLVMValueRef z = max ? LLVMBuildAnd(B, ab, bb, "") : LLVMBuildOr(B, ab, bb, "");
  r = LLVMBuildSelect(B, eq, z, r, "");
  LLVMValueRef both = LLVMBuildAnd(B, anan, bnan, "");
  r = LLVMBuildSelect(B, both, LLVMConstInt(G->i16, 0x7fff, 0), r, "");
  return hval(G, r);
}

CgVal cg_half_op(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  LLVMBuilderRef B = G->B;
  LLVMValueRef h[3];
  for (int i = 0; i < n && i < 3; i++) h[i] = to_half(G, a[i]);
  switch (id) {
  case B_CUDA_FLOAT16: return from_half(G, h[0]);
  case B_FP16_HADD: return from_half(G, LLVMBuildFAdd(B, h[0], h[1], ""));
  case B_FP16_HSUB: return from_half(G, LLVMBuildFSub(B, h[0], h[1], ""));
  case B_FP16_HMUL: return from_half(G, LLVMBuildFMul(B, h[0], h[1], ""));
  case B_FP16_HDIV: return from_half(G, via_f32(G, NULL, h, 2));
  case B_FP16_HSQRT: return from_half(G, via_f32(G, "sqrt", h, 1));
  case B_FP16_HEXP: return from_half(G, via_f32(G, "exp", h, 1));
  case B_FP16_HLOG: return from_half(G, via_f32(G, "log", h, 1));
  case B_FP16_HSIN: return from_half(G, via_f32(G, "sin", h, 1));
  case B_FP16_HCOS: return from_half(G, via_f32(G, "cos", h, 1));
  case B_FP16_HEXP2: return from_half(G, via_f32(G, "exp2", h, 1));
  case B_FP16_HEXP10: return from_half(G, via_f32(G, "exp10", h, 1));
  case B_FP16_HLOG2: return from_half(G, via_f32(G, "log2", h, 1));
  case B_FP16_HLOG10: return from_half(G, via_f32(G, "log10", h, 1));
  case B_FP16_HRCP: return from_half(G, via_f32(G, "rcp", h, 1));
  case B_FP16_HRSQRT: return from_half(G, via_f32(G, "rsqrt", h, 1));
  /* exact on halves: in f32 (the C library's or libdevice's) */
  case B_FP16_HCEIL: return from_half(G, via_f32(G, "ceil", h, 1));
  case B_FP16_HFLOOR: return from_half(G, via_f32(G, "floor", h, 1));
  case B_FP16_HRINT: return from_half(G, via_f32(G, "rint", h, 1));
  case B_FP16_HTRUNC: return from_half(G, via_f32(G, "trunc", h, 1));
  case B_FP16_HNEG:
    return from_half(G, hval(G, LLVMBuildXor(B, hbits(G, h[0]), LLVMConstInt(G->i16, 0x8000, 0), "")));
  case B_FP16_HABS:
    return from_half(G, hval(G, LLVMBuildAnd(B, hbits(G, h[0]), LLVMConstInt(G->i16, 0x7fff, 0), "")));
  case B_FP16_HFMA:
    if (on_gpu(G)) return from_half(G, cg_intrinsic(G, "llvm.fma", half_ty(G), h, 3));
    else {   /* the product is exact in f64, and so is the sum below overflow (khalf.h) */
      LLVMValueRef d[3];
      for (int i = 0; i < 3; i++) d[i] = LLVMBuildFPExt(B, h[i], G->f64, "");
      LLVMValueRef r = LLVMBuildFAdd(B, LLVMBuildFMul(B, d[0], d[1], ""), d[2], "");
      return from_half(G, LLVMBuildFPTrunc(B, r, half_ty(G), ""));
    }
  case B_FP16_HMAX: return from_half(G, hminmax(G, h[0], h[1], 1));
  case B_FP16_HMIN: return from_half(G, hminmax(G, h[0], h[1], 0));
  case B_FP16_HEQ: case B_FP16_HNE: case B_FP16_HGT: case B_FP16_HGE: case B_FP16_HLT:
  case B_FP16_HLE: {
    /* ordered: a NaN gives false (CUDA's __heq ... __hne) */
    static const LLVMRealPredicate pr[] = { LLVMRealOEQ, LLVMRealONE, LLVMRealOGT, LLVMRealOGE,
                                            LLVMRealOLT, LLVMRealOLE };
    return cg_mk(TY(T_BOOL), LLVMBuildFCmp(B, pr[id - B_FP16_HEQ], h[0], h[1], ""));
  }
  default: break;
  }
  cg_error(G, v, "'%s' is not supported in compiled code", kir_builtin_name(id));
  return cg_mk(TY(T_NIL), NULL);
}
