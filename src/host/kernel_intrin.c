/*
** kernel_intrin.c: numba-cuda's casts, kjit.math.* and the intrinsics as
** Lua functions (see kernel_intrin.h); the compiled side is
** codegen/cg_kmath.c and codegen/cg_cuda_intrin.c, which these match.
*/
#include <math.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "host/buffer.h"
#include "host/kernel_intrin.h"
#include "ir/ir_builtins.h"
#include "ir/ir_fold.h"
#include "common/cuda_intrin.h"
#include "runtime/cudasim.h"
#include "common/khalf.h"

__thread KIBlock *kki_cur;

static KIBlock *need_kernel(lua_State *L, int id) {
  if (kki_cur == NULL)
    luaL_error(L, "%s can only be called inside a kernel (launch it with k[{grid, block}](...))",
               kir_builtin_name(id));
  return kki_cur;
}

static int upid(lua_State *L) { return (int)lua_tointeger(L, lua_upvalueindex(1)); }

/* ---- Casts and math (anywhere) ------------------------------------------------------ */

void kki_cast(lua_State *L, int id, int idx) {
  int isint = lua_isinteger(L, idx);
  if (id == B_CUDA_FLOAT32) {
    lua_pushnumber(L, isint ? (lua_Number)(float)lua_tointeger(L, idx) : (lua_Number)(float)lua_tonumber(L, idx));
    return;
  }
  if (id == B_CUDA_FLOAT16) {   /* one rounding from the double: numpy.float16(x) */
    lua_pushnumber(L, kh_round(isint ? (lua_Number)lua_tointeger(L, idx) : lua_tonumber(L, idx)));
    return;
  }
  if (id == B_CUDA_FLOAT64) {
    lua_pushnumber(L, isint ? (lua_Number)lua_tointeger(L, idx) : lua_tonumber(L, idx));
    return;
  }
  lua_Integer i = isint ? lua_tointeger(L, idx) : kty_sat_trunc(lua_tonumber(L, idx));
  i = kty_cast_int(id, i);
  lua_pushinteger(L, i);
}

static int l_cast(lua_State *L) {
  luaL_checknumber(L, 1);
  kki_cast(L, upid(L), 1);
  return 1;
}

/* cuda.fp16.*: as cg_half.c (each argument rounded to half, the result
** rounded once; double arithmetic on halves rounds as the f16 hardware:
** common/khalf.h). */
float exp10f(float);   /* a GNU extension (glibc, musl): the C library compiled code calls */
static int l_fp16(lua_State *L) {
  int id = upid(L);
  int n = id == B_FP16_HFMA ? 3 : (id == B_FP16_HNEG || id == B_FP16_HABS || id == B_FP16_HSQRT ||
                                   (id >= B_FP16_HEXP && id <= B_FP16_HTRUNC)) ? 1 : 2;
  double x[3];
  uint16_t h[3];
  for (int i = 0; i < n; i++) { h[i] = kh_from_double(luaL_checknumber(L, i + 1)); x[i] = kh_to_double(h[i]); }
  double r;
  switch (id) {
  case B_FP16_HADD: r = x[0] + x[1]; break;
  case B_FP16_HSUB: r = x[0] - x[1]; break;
  case B_FP16_HMUL: r = x[0] * x[1]; break;
  case B_FP16_HDIV: r = x[0] / x[1]; break;
  case B_FP16_HSQRT: r = sqrt(x[0]); break;
  case B_FP16_HFMA: r = x[0] * x[1] + x[2]; break;   /* exact below overflow */
  case B_FP16_HEXP: r = expf((float)x[0]); break;
  case B_FP16_HLOG: r = logf((float)x[0]); break;
  case B_FP16_HSIN: r = sinf((float)x[0]); break;
  case B_FP16_HCOS: r = cosf((float)x[0]); break;
  case B_FP16_HEXP2: r = exp2f((float)x[0]); break;
  case B_FP16_HEXP10: r = exp10f((float)x[0]); break;
  case B_FP16_HLOG2: r = log2f((float)x[0]); break;
  case B_FP16_HLOG10: r = log10f((float)x[0]); break;
  case B_FP16_HRCP: r = 1.0f / (float)x[0]; break;
  case B_FP16_HRSQRT: r = 1.0f / sqrtf((float)x[0]); break;
  case B_FP16_HCEIL: r = ceil(x[0]); break;
  case B_FP16_HFLOOR: r = floor(x[0]); break;
  case B_FP16_HRINT: r = nearbyint(x[0]); break;   /* ties to even */
  case B_FP16_HTRUNC: r = trunc(x[0]); break;
  case B_FP16_HNEG: lua_pushnumber(L, kh_to_double(h[0] ^ 0x8000)); return 1;
  case B_FP16_HABS: lua_pushnumber(L, kh_to_double(h[0] & 0x7fff)); return 1;
  case B_FP16_HMAX: case B_FP16_HMIN: {
    int max = id == B_FP16_HMAX;
    uint16_t b;
    if (x[0] != x[0] && x[1] != x[1]) b = 0x7fff;
    else if (x[0] == x[1]) b = max ? h[0] & h[1] : h[0] | h[1];   /* +0 > -0 */
    else b = (max ? x[0] > x[1] : x[0] < x[1]) || x[1] != x[1] ? h[0] : h[1];
    lua_pushnumber(L, kh_to_double(b));
    return 1;
  }
  case B_FP16_HEQ: lua_pushboolean(L, x[0] == x[1]); return 1;
  case B_FP16_HNE: lua_pushboolean(L, x[0] < x[1] || x[0] > x[1]); return 1;   /* ordered */
  case B_FP16_HGT: lua_pushboolean(L, x[0] > x[1]); return 1;
  case B_FP16_HGE: lua_pushboolean(L, x[0] >= x[1]); return 1;
  case B_FP16_HLT: lua_pushboolean(L, x[0] < x[1]); return 1;
  case B_FP16_HLE: lua_pushboolean(L, x[0] <= x[1]); return 1;
  default: return luaL_error(L, "%s: unknown", kir_builtin_name(id));
  }
  lua_pushnumber(L, kh_round(r));
  return 1;
}

static int l_math(lua_State *L) {
  int id = upid(L);
  lua_Number x = luaL_checknumber(L, 1), r;
  switch (id) {
  case B_KMATH_ISNAN: lua_pushboolean(L, isnan(x)); return 1;
  case B_KMATH_ISINF: lua_pushboolean(L, isinf(x)); return 1;
  case B_KMATH_ISFINITE: lua_pushboolean(L, isfinite(x)); return 1;
  case B_KMATH_FMA: r = fma(x, luaL_checknumber(L, 2), luaL_checknumber(L, 3)); break;
  case B_KMATH_HYPOT: r = hypot(x, luaL_checknumber(L, 2)); break;
  case B_KMATH_COPYSIGN: r = copysign(x, luaL_checknumber(L, 2)); break;
  case B_KMATH_CBRT: r = cbrt(x); break;
  case B_KMATH_ERF: r = erf(x); break;
  case B_KMATH_ERFC: r = erfc(x); break;
  case B_KMATH_TANH: r = tanh(x); break;
  case B_KMATH_SINH: r = sinh(x); break;
  case B_KMATH_COSH: r = cosh(x); break;
  case B_KMATH_LOG2: r = log2(x); break;
  case B_KMATH_LOG10: r = log10(x); break;
  case B_KMATH_LOG1P: r = log1p(x); break;
  case B_KMATH_EXPM1: r = expm1(x); break;
  case B_KMATH_GAMMA: r = tgamma(x); break;
  case B_KMATH_LGAMMA: r = lgamma(x); break;
  case B_KMATH_ASINH: r = asinh(x); break;
  case B_KMATH_ACOSH: r = acosh(x); break;
  case B_KMATH_ATANH: r = atanh(x); break;
  case B_KMATH_REMAINDER: r = remainder(x, luaL_checknumber(L, 2)); break;
  default: r = trunc(x); break;
  }
  lua_pushnumber(L, r);
  return 1;
}

/* ---- Lane, warp and block intrinsics (kernels) --------------------------------------- */

static int truth(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER)
    return lua_isinteger(L, idx) ? lua_tointeger(L, idx) != 0 : lua_tonumber(L, idx) != 0;
  return lua_toboolean(L, idx);
}

/* The result of a meeting, after the scheduler resumed the thread. */
static int meet_done(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  KIThread *t = &kki_cur->th[kki_cur->cur];
  int id = (int)ctx;
  switch (id) {
  case B_CUDA_SYNCWARP: return 0;
  case B_CUDA_SHFL_SYNC: case B_CUDA_SHFL_UP_SYNC: case B_CUDA_SHFL_DOWN_SYNC: case B_CUDA_SHFL_XOR_SYNC:
    if (t->isfloat) { double d; memcpy(&d, &t->res, 8); lua_pushnumber(L, d); }
    else lua_pushinteger(L, t->res);
    return 1;
  case B_CUDA_ALL_SYNC: case B_CUDA_ANY_SYNC: case B_CUDA_EQ_SYNC:
  case B_CUDA_SYNCTHREADS_AND: case B_CUDA_SYNCTHREADS_OR:
    lua_pushboolean(L, t->res != 0);
    return 1;
  case B_CUDA_MATCH_ALL_SYNC:
    lua_pushinteger(L, t->res);
    lua_pushboolean(L, t->res != 0);
    return 2;
  default:
    lua_pushinteger(L, t->res);
    return 1;
  }
}

/* Yields the running thread to the scheduler at op. */
static int meet(lua_State *L, int id, int op, uint32_t mask, int64_t val, int isfloat, int32_t b) {
  KIBlock *k = need_kernel(L, id);
  if (!lua_isyieldable(L))
    return luaL_error(L, "%s cannot be called here (inside a metamethod or C call)", kir_builtin_name(id));
  KIThread *t = &k->th[k->cur];
  t->op = op; t->mask = mask; t->val = val; t->isfloat = isfloat; t->b = b; t->res = 0;
  return lua_yieldk(L, 0, (lua_KContext)id, meet_done);
}

static uint32_t checkmask(lua_State *L, int idx) { return (uint32_t)luaL_checkinteger(L, idx); }

/* A shuffled or matched value: its bits and subtype. */
static int64_t valbits(lua_State *L, int idx, int *isfloat) {
  luaL_checknumber(L, idx);
  *isfloat = !lua_isinteger(L, idx);
  if (!*isfloat) return lua_tointeger(L, idx);
  double d = lua_tonumber(L, idx);
  int64_t r;
  memcpy(&r, &d, 8);
  return r;
}

static int l_intrin(lua_State *L) {
  int id = upid(L);
  KIBlock *k = need_kernel(L, id);
  unsigned lane = (unsigned)(k->cur % 32);
  int isf = 0;
  switch (id) {
  case B_CUDA_LANEID: lua_pushinteger(L, lane); return 1;
  case B_CUDA_LANEMASK_LT: lua_pushinteger(L, (lua_Integer)((1u << lane) - 1u)); return 1;
  case B_CUDA_ACTIVEMASK: return meet(L, id, KI_ACTIVEMASK, 0xffffffffu, 0, 0, 0);
  case B_CUDA_SYNCWARP:
    return meet(L, id, KI_SYNCWARP, lua_isnoneornil(L, 1) ? 0xffffffffu : checkmask(L, 1), 0, 0, 0);
  case B_CUDA_SHFL_SYNC: case B_CUDA_SHFL_UP_SYNC: case B_CUDA_SHFL_DOWN_SYNC: case B_CUDA_SHFL_XOR_SYNC: {
    uint32_t m = checkmask(L, 1);
    int64_t v = valbits(L, 2, &isf);
    lua_Integer b = luaL_checkinteger(L, 3);
    return meet(L, id, KI_SHFL_IDX + (id - B_CUDA_SHFL_SYNC), m, v, isf, (int32_t)b);
  }
  case B_CUDA_ALL_SYNC: case B_CUDA_ANY_SYNC: case B_CUDA_EQ_SYNC: case B_CUDA_BALLOT_SYNC:
    return meet(L, id, KI_VOTE_ALL + (id - B_CUDA_ALL_SYNC), checkmask(L, 1), truth(L, 2), 0, 0);
  case B_CUDA_MATCH_ANY_SYNC: case B_CUDA_MATCH_ALL_SYNC: {
    uint32_t m = checkmask(L, 1);
    int64_t v = valbits(L, 2, &isf);
    return meet(L, id, id == B_CUDA_MATCH_ANY_SYNC ? KI_MATCH_ANY : KI_MATCH_ALL, m, v, isf, 0);
  }
  case B_CUDA_SYNCTHREADS_COUNT: case B_CUDA_SYNCTHREADS_AND: case B_CUDA_SYNCTHREADS_OR:
    return meet(L, id, KI_BAR_POPC + (id - B_CUDA_SYNCTHREADS_COUNT), 0, truth(L, 1), 0, 0);
  case B_CUDA_THREADFENCE_BLOCK: case B_CUDA_THREADFENCE_SYSTEM: return 0;
  case B_CUDA_NANOSLEEP: luaL_checkinteger(L, 1); return 0;
  case B_CUDA_POPC: lua_pushinteger(L, __builtin_popcountll((unsigned long long)luaL_checkinteger(L, 1))); return 1;
  case B_CUDA_CLZ: {
    unsigned long long x = (unsigned long long)luaL_checkinteger(L, 1);
    lua_pushinteger(L, x ? __builtin_clzll(x) : 64);
    return 1;
  }
  case B_CUDA_FFS: lua_pushinteger(L, __builtin_ffsll((long long)luaL_checkinteger(L, 1))); return 1;
  case B_CUDA_BREV: {
    uint64_t x = (uint64_t)luaL_checkinteger(L, 1), r = 0;
    for (int i = 0; i < 64; i++) { r = (r << 1) | (x & 1u); x >>= 1; }
    lua_pushinteger(L, (lua_Integer)r);
    return 1;
  }
  case B_CUDA_CONST_ARRAY_LIKE:   /* interpreted: the array itself (read it, never write) */
    kb_check(L, 1);
    lua_settop(L, 1);
    return 1;
  case B_CUDA_SELP:
    luaL_checkany(L, 3);
    lua_pushvalue(L, truth(L, 1) ? 2 : 3);
    return 1;
  default: break;
  }
  return luaL_error(L, "internal error: intrinsic %d", id);
}

/* ---- The atomics numba-cuda adds (the launcher runs one coroutine at a
** time, so a read-modify-write is atomic) ------------------------------------------------ */

static int l_atomic(lua_State *L) {
  int id = upid(L);
  need_kernel(L, id);
  KBuffer *b = kb_check(L, 1);
  if (b->ndim != 1) return luaL_argerror(L, 1, "1-D array expected");
  int cas = id == B_CUDA_ATOMIC_COMPARE_AND_SWAP;
  lua_Integer i = cas ? 1 : luaL_checkinteger(L, 2);
  if (i < 1 || i > b->shape[0]) return kb_bounds_error(L, i, b->shape[0]);
  int64_t k = i - 1;
  kjit_dtype d = b->dtype;
  size_t es = kjit_dtype_size(d);
  char *p = b->data + k * (int64_t)es;
  int isf = d == KJIT_F32 || d == KJIT_F64, uns = d == KJIT_U32 || d == KJIT_U64;
  int ok = id == B_CUDA_ATOMIC_INC || id == B_CUDA_ATOMIC_DEC ? uns
         : (d == KJIT_I32 || d == KJIT_U32 || d == KJIT_I64 || d == KJIT_U64 ||
            (isf && (id == B_CUDA_ATOMIC_NANMAX || id == B_CUDA_ATOMIC_NANMIN)));
  if (!ok) return luaL_error(L, "%s: not supported on %s arrays", kir_builtin_name(id), kjit_dtype_name(d));
  kb_push_element(L, b, k);   /* the old value: the result */
  if (isf) {
    double old = d == KJIT_F32 ? *(float *)p : *(double *)p;
    double x = luaL_checknumber(L, 3);
    if (d == KJIT_F32) x = (float)x;
    int max = id == B_CUDA_ATOMIC_NANMAX;
    double r = ((max ? x > old : x < old) || isnan(old)) ? x : old;
    if (d == KJIT_F32) *(float *)p = (float)r; else *(double *)p = r;
    return 1;
  }
  /* integers, compared and computed in the element's width */
  uint64_t old = 0, x = (uint64_t)luaL_checkinteger(L, cas ? 2 : 3), nv = 0;
  memcpy(&old, p, es);
  uint64_t wm = es == 4 ? 0xffffffffu : ~(uint64_t)0;
  x &= wm;
  int64_t so = es == 4 ? (int64_t)(int32_t)old : (int64_t)old, sx = es == 4 ? (int64_t)(int32_t)x : (int64_t)x;
  switch (id) {
  case B_CUDA_ATOMIC_AND: nv = old & x; break;
  case B_CUDA_ATOMIC_OR: nv = old | x; break;
  case B_CUDA_ATOMIC_XOR: nv = old ^ x; break;
  case B_CUDA_ATOMIC_INC: nv = old >= x ? 0 : old + 1; break;
  case B_CUDA_ATOMIC_DEC: nv = old == 0 || old > x ? x : old - 1; break;
  case B_CUDA_ATOMIC_NANMAX: nv = uns ? (x > old ? x : old) : (uint64_t)(sx > so ? sx : so); break;
  case B_CUDA_ATOMIC_NANMIN: nv = uns ? (x < old ? x : old) : (uint64_t)(sx < so ? sx : so); break;
  default:   /* compare_and_swap */
    nv = old == x ? (uint64_t)luaL_checkinteger(L, 3) : old;
    break;
  }
  nv &= wm;
  memcpy(p, &nv, es);
  return 1;
}

/* ---- The scheduler's side ---------------------------------------------------------------- */

size_t kki_resolve(KIBlock *b, char *state) {
  size_t released = 0;
  for (size_t w0 = 0; w0 < b->n; w0 += 32) {
    uint32_t here = 0, absent = 0, ready = 0;
    int64_t vals[32];
    memset(vals, 0, sizeof vals);
    for (unsigned i = 0; i < 32; i++) {
      size_t t = w0 + i;
      if (t >= b->n || state[t] == KKI_DONE || state[t] == KKI_BAR || state[t] == KKI_GRID)
        absent |= 1u << i;
      else if (state[t] == KKI_WARP) { here |= 1u << i; vals[i] = b->th[t].val; }
    }
    if (here == 0) continue;
    for (unsigned i = 0; i < 32; i++)
      if ((here >> i & 1u) && ((b->th[w0 + i].mask & ~absent) & ~here) == 0) ready |= 1u << i;
    for (unsigned i = 0; i < 32; i++)
      if (ready >> i & 1u) {
        KIThread *t = &b->th[w0 + i];
        t->res = ksim_warp_op(t->op, i, (t->mask & here) | (1u << i), vals, t->b);
      }
    for (unsigned i = 0; i < 32; i++)
      if (ready >> i & 1u) { state[w0 + i] = KKI_RUN; released++; }
  }
  return released;
}

void kki_release(KIBlock *b, char *state) {
  int64_t count = 0, arrived = 0;
  for (size_t t = 0; t < b->n; t++)
    if (state[t] == KKI_BAR && KI_IS_BAR(b->th[t].op)) { count += b->th[t].val != 0; arrived++; }
  for (size_t t = 0; t < b->n; t++) {
    if (state[t] != KKI_BAR) continue;
    KIThread *th = &b->th[t];
    th->res = th->op == KI_BAR_POPC ? count : th->op == KI_BAR_AND ? count == arrived : count > 0;
    state[t] = KKI_RUN;
  }
}

/* ---- Registration ------------------------------------------------------------------------- */

/* Sets t[name] (t at idx) to the closure of f over id, registered with
** the typers; name: the part of the built-in's name after its last dot. */
static void reg(lua_State *L, int idx, lua_CFunction f, int id) {
  const char *full = kir_builtin_name(id), *dot = strrchr(full, '.');
  lua_pushinteger(L, id);
  lua_pushcclosure(L, f, 1);
  kir_builtin_register(L, -1, id);
  lua_setfield(L, idx, dot ? dot + 1 : full);
}

void kki_open(lua_State *L, int cuda_idx, int math_idx) {
  cuda_idx = lua_absindex(L, cuda_idx);
  math_idx = lua_absindex(L, math_idx);
  for (int id = B_CUDA_INT8; id <= B_CUDA_FLOAT64; id++) reg(L, cuda_idx, l_cast, id);
  reg(L, cuda_idx, l_cast, B_CUDA_FLOAT16);
  lua_newtable(L);   /* cuda.fp16: numba-cuda's half-precision functions */
  for (int id = B_FP16_HADD; id <= B_FP16_HLE; id++) reg(L, lua_gettop(L), l_fp16, id);
  lua_setfield(L, cuda_idx, "fp16");
  for (int id = B_KMATH_FMA; id <= B_KMATH_ISFINITE; id++) {
    reg(L, math_idx, l_math, id);
    /* the same function in kjit.cuda (numba-cuda's cuda.fma, cuda.cbrt; its
    ** math.erf ... are kjit.math.erf, or cuda.erf) */
    const char *full = kir_builtin_name(id), *dot = strrchr(full, '.');
    lua_getfield(L, math_idx, dot + 1);
    lua_setfield(L, cuda_idx, dot + 1);
  }
  lua_getfield(L, cuda_idx, "atomic");
  int at = lua_gettop(L);
  for (int id = B_CUDA_LANEID; id < B__COUNT; id++) {
    if (B_IS_CG(id)) continue;   /* cuda.cg: kernel.c (it reads the launch's grid) */
    if (id == B_CUDA_CONST_ARRAY_LIKE) {   /* in cuda.const */
      lua_newtable(L);
      reg(L, lua_gettop(L), l_intrin, id);
      lua_setfield(L, cuda_idx, "const");
      continue;
    }
    if (id >= B_CUDA_ATOMIC_AND && id <= B_CUDA_ATOMIC_COMPARE_AND_SWAP) reg(L, at, l_atomic, id);
    else reg(L, cuda_idx, l_intrin, id);
  }
  lua_pop(L, 1);
  lua_pushinteger(L, 32);
  lua_setfield(L, cuda_idx, "warpsize");
}
