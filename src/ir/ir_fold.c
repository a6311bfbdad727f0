/*
** ir_fold.c: constant folding for the typer (ir_type.c), computed as Lua
** 5.4 computes: arithmetic as lvm.c (integer wrap, floor division and
** modulo, bitwise operators on integral floats) and the math built-ins as
** lmathlib.c. Each returns 0 where Lua would raise (1//0, math.fmod(1, 0),
** 1.5|0), so the operation is left to run and raise at its own line.
** tests/lua/test_fold_table.lua compares every fold here, and the run-time
** code for the same operation, with the interpreter on a table of edge
** values.
*/
#include "ir/ir_fold.h"
#include <math.h>
#include <string.h>
#include "ir/ir.h"
#include "common/khalf.h"

int kty_float_to_int(lua_Number f, lua_Integer *out) {
  if (floor(f) != f || !(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return 0;
  *out = (lua_Integer)f;
  return 1;
}

static lua_Integer shiftl(lua_Integer x, lua_Integer y) {
  if (y < 0) return y <= -64 ? 0 : (lua_Integer)((lua_Unsigned)x >> (lua_Unsigned)-y);
  return y >= 64 ? 0 : (lua_Integer)((lua_Unsigned)x << y);
}

/* Folds a op b into r; 0 when it raises (1//0, 1%0, 1.5|0) or a is not
** a number constant. */
int kty_fold_arith(int op, KtyConst a, KtyConst b, KtyConst *r) {
  if ((a.kind != T_INT && a.kind != T_F64) || (b.kind != T_INT && b.kind != T_F64)) return 0;
  memset(r, 0, sizeof *r);
  if (op >= KIR_BAND && op <= KIR_SHR) {   /* bitwise */
    lua_Integer x, y;
    if (a.kind == T_INT) x = a.v.i; else if (!kty_float_to_int(a.v.f, &x)) return 0;
    if (b.kind == T_INT) y = b.v.i; else if (!kty_float_to_int(b.v.f, &y)) return 0;
    r->kind = T_INT;
    switch (op) {
    case KIR_BAND: r->v.i = x & y; break;
    case KIR_BOR: r->v.i = x | y; break;
    case KIR_BXOR: r->v.i = x ^ y; break;
    case KIR_SHL: r->v.i = shiftl(x, y); break;
    default: r->v.i = shiftl(x, (lua_Integer)(0u - (lua_Unsigned)y)); break;
    }
    return 1;
  }
  if (a.kind == T_INT && b.kind == T_INT && op != KIR_DIV && op != KIR_POW) {
    lua_Unsigned x = (lua_Unsigned)a.v.i, y = (lua_Unsigned)b.v.i;
    lua_Integer m = a.v.i, n = b.v.i;
    r->kind = T_INT;
    switch (op) {
    case KIR_ADD: r->v.i = (lua_Integer)(x + y); break;
    case KIR_SUB: r->v.i = (lua_Integer)(x - y); break;
    case KIR_MUL: r->v.i = (lua_Integer)(x * y); break;
    case KIR_IDIV:
      if (n == 0) return 0;
      if (n == -1) { r->v.i = (lua_Integer)(0u - x); break; }
      r->v.i = m / n;
      if ((m ^ n) < 0 && m % n != 0) r->v.i -= 1;
      break;
    default:   /* MOD */
      if (n == 0) return 0;
      if (n == -1) { r->v.i = 0; break; }
      r->v.i = m % n;
      if (r->v.i != 0 && (r->v.i ^ n) < 0) r->v.i += n;
      break;
    }
    return 1;
  }
  lua_Number x = a.kind == T_INT ? (lua_Number)a.v.i : a.v.f;
  lua_Number y = b.kind == T_INT ? (lua_Number)b.v.i : b.v.f;
  r->kind = T_F64;
  switch (op) {
  case KIR_ADD: r->v.f = x + y; break;
  case KIR_SUB: r->v.f = x - y; break;
  case KIR_MUL: r->v.f = x * y; break;
  case KIR_DIV: r->v.f = x / y; break;
  case KIR_POW: r->v.f = y == 2 ? x * x : pow(x, y); break;
  case KIR_IDIV: r->v.f = floor(x / y); break;
  default: {   /* MOD: luai_nummod */
    lua_Number m = fmod(x, y);
    if ((m > 0) ? y < 0 : (m < 0 && y > 0)) m += y;
    r->v.f = m;
    break;
  }
  }
  return 1;
}

/* a < b for two number constants, exactly as lvm.c's LTnum: an integer
** and a float are compared by value, not by converting the integer to a
** float (2^53 + 1 > 2.0^53); NaN is unordered. */
static int num_lt(KtyConst a, KtyConst b) {
  if (a.kind == T_INT && b.kind == T_INT) return a.v.i < b.v.i;
  if (a.kind == T_F64 && b.kind == T_F64) return a.v.f < b.v.f;
  if (a.kind == T_INT) {   /* LTintfloat: i < f <=> i < ceil(f) */
    lua_Integer i = a.v.i, fi;
    lua_Number f = b.v.f;
    if (i >= -(1LL << 53) && i <= (1LL << 53)) return (lua_Number)i < f;
    if (kty_float_to_int(ceil(f), &fi)) return i < fi;
    return f > 0;   /* f is beyond the integers (or NaN: false) */
  }
  lua_Number f = a.v.f;   /* LTfloatint: f < i <=> floor(f) < i */
  lua_Integer i = b.v.i, fi;
  if (i >= -(1LL << 53) && i <= (1LL << 53)) return f < (lua_Number)i;
  if (kty_float_to_int(floor(f), &fi)) return fi < i;
  return f < 0;
}

/* A float truncated toward zero into [-2^63, 2^63 - 1], NaN 0: how every
** integer cast takes a float (cg_kmath.c computes the same in code). */
lua_Integer kty_sat_trunc(lua_Number x) {
  if (x != x) return 0;
  if (x >= 0x1p63) return LUA_MAXINTEGER;
  if (x < -0x1p63) return LUA_MININTEGER;
  return (lua_Integer)x;
}

/* The integer cast id of i: wrapped to its width (int64 and uint64 keep
** the 64 bits). */
lua_Integer kty_cast_int(int id, lua_Integer i) {
  uint64_t u = (uint64_t)i;
  switch (id) {
  case B_CUDA_INT8: return (int8_t)(uint8_t)u;
  case B_CUDA_UINT8: return (uint8_t)u;
  case B_CUDA_INT16: return (int16_t)(uint16_t)u;
  case B_CUDA_UINT16: return (uint16_t)u;
  case B_CUDA_INT32: return (int32_t)(uint32_t)u;
  case B_CUDA_UINT32: return (uint32_t)u;
  default: return i;
  }
}

/* cuda.int32(x) ... of a float x, as host/kernel_intrin.c's kki_cast
** computes it for a float (and cg_kmath.c's cast); float32 rounds (an f64
** constant of the f32 value). */
void kty_fold_cast(int id, lua_Number x, KtyConst *r) {
  memset(r, 0, sizeof *r);
  if (id == B_CUDA_FLOAT32 || id == B_CUDA_FLOAT64 || id == B_CUDA_FLOAT16) {
    r->kind = T_F64;   /* float16: one rounding from the double (numpy.float16) */
    r->v.f = id == B_CUDA_FLOAT32 ? (lua_Number)(float)x : id == B_CUDA_FLOAT16 ? kh_round(x) : x;
    return;
  }
  r->kind = T_INT;
  r->v.i = kty_cast_int(id, kty_sat_trunc(x));
}

/* A built-in of constants, computed as Lua's lmathlib.c does: 0 when it
** raises (math.fmod(1, 0)) or is not folded. */
int kty_fold_builtin(KtyRule rule, int id, const KtyConst *a, int n, KtyConst *r) {
  for (int i = 0; i < n; i++)
    if (a[i].kind != T_INT && a[i].kind != T_F64) return 0;
  if (n == 0) return 0;
#define FLT(c) ((c).kind == T_INT ? (lua_Number)(c).v.i : (c).v.f)
  memset(r, 0, sizeof *r);
  switch (rule) {
  case KTY_R_ROUND: {
    if (a[0].kind == T_INT) { *r = a[0]; return 1; }
    lua_Number f = id == B_MATH_FLOOR ? floor(a[0].v.f) : ceil(a[0].v.f);
    lua_Integer i;
    if (kty_float_to_int(f, &i)) { r->kind = T_INT; r->v.i = i; }
    else { r->kind = T_F64; r->v.f = f; }
    return 1;
  }
  case KTY_R_SAME:   /* math.abs */
    *r = a[0];
    if (a[0].kind == T_INT) { if (a[0].v.i < 0) r->v.i = (lua_Integer)(0u - (lua_Unsigned)a[0].v.i); }
    else r->v.f = fabs(a[0].v.f);
    return 1;
  case KTY_R_JOIN: {   /* math.max, math.min: the first extreme, its subtype */
    int best = 0;
    for (int i = 1; i < n; i++) {
      if (id == B_MATH_MAX ? num_lt(a[best], a[i]) : num_lt(a[i], a[best])) best = i;
    }
    *r = a[best];
    return 1;
  }
  case KTY_R_TOINTEGER: {
    lua_Integer i;
    if (a[0].kind == T_INT) *r = a[0];
    else if (kty_float_to_int(a[0].v.f, &i)) { r->kind = T_INT; r->v.i = i; }
    else r->kind = T_NIL;
    return 1;
  }
  case KTY_R_FMOD:
    if (a[0].kind == T_INT && a[1].kind == T_INT) {
      lua_Integer d = a[1].v.i;
      if (d == 0) return 0;
      r->kind = T_INT;
      r->v.i = d == -1 ? 0 : a[0].v.i % d;   /* C's remainder, as lmathlib */
      return 1;
    }
    r->kind = T_F64;
    r->v.f = fmod(FLT(a[0]), FLT(a[1]));
    return 1;
  case KTY_R_FLOAT: {
    lua_Number x = FLT(a[0]);
    r->kind = T_F64;
    switch (id) {
    case B_MATH_SQRT: r->v.f = sqrt(x); break;
    case B_MATH_SIN: r->v.f = sin(x); break;
    case B_MATH_COS: r->v.f = cos(x); break;
    case B_MATH_TAN: r->v.f = tan(x); break;
    case B_MATH_ASIN: r->v.f = asin(x); break;
    case B_MATH_ACOS: r->v.f = acos(x); break;
    case B_MATH_EXP: r->v.f = exp(x); break;
    case B_MATH_ATAN: r->v.f = atan2(x, n >= 2 ? FLT(a[1]) : 1.0); break;
    default: {   /* math.log */
      if (n < 2) { r->v.f = log(x); break; }
      lua_Number b = FLT(a[1]);
      r->v.f = b == 2.0 ? log2(x) : b == 10.0 ? log10(x) : log(x) / log(b);
      break;
    }
    }
    return 1;
  }
  default: return 0;
  }
#undef FLT
}
