/*
** buffer.c: kjit typed buffers, the userdata behind kjit.array objects.
**
** Memory. An owned buffer is one full userdata: the KBuffer header, then
** padding up to a 64-byte boundary, then the elements. Lua's allocator
** owns it, so the GC frees it and counts its bytes when pacing itself.
** A view (a[i] on an n-D buffer, slice, reshape) is a small userdata that
** holds only a KBuffer whose data points into another buffer. A borrowed
** buffer points at host memory.
**
** Lifetime. Every buffer has one user value. anchor(x) is x's user value
** if it is not nil, else x itself: the owned base for memory inside a
** userdata, or a guard userdata for borrowed memory (its __gc calls the
** host's release function, once). A view's user value is the anchor of
** the buffer it was made from, so views of views never form chains.
**
** The kjit.array metatable itself has no __gc: an object with a finalizer
** lives one extra GC cycle and costs a call when collected, and a[i][j]
** creates a row view every time. Only the guards (one per borrowed
** buffer) are finalized.
**
** Store rules (shared with compiled code): integers wrap into narrow
** integer types like a C cast, done on the unsigned bit pattern; floats
** must have an exact integer value (in i64 range) to go into an integer
** type; f32 stores round to nearest; strings and booleans are rejected.
** A bool array (KJIT_BOOL) is the other way round: its elements read as
** Lua booleans (any nonzero byte is true), and it takes only booleans,
** stored as 0 or 1; anything else raises KB_BOOL_EXPECTED (karray.h),
** which compiled code raises with the same words (cg_array.c). Converting
** between bool and number arrays (copy to another dtype, kjit.array of an
** array) is a Lua read followed by a store, so it raises too.
*/
#define _DEFAULT_SOURCE   /* madvise, MADV_HUGEPAGE */
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <time.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

#include "lua.h"
#include "lauxlib.h"
#include "common/khalf.h"
#include "host/buffer.h"
#include "ir/ir_builtins.h"
#include "host/record.h"
#include "host/dtype.h"

/* The key of the buffers' tags (KBuffer.tag, kb_fast): random per
** process, set when the library is loaded, before any buffer exists, and
** never shown to Lua. A tag is the key xor the buffer's own address, so a
** userdata of another library holds a valid tag only by knowing the key:
** recognising a buffer by its tag is as safe as comparing metatables,
** at a third of the cost. */
uint64_t kb_tag_key;
int kb_viewable_made;

__attribute__((constructor)) static void init_tag_key(void) {
  uint64_t k = 0;
#if defined(__linux__)
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) k = 0;
#endif
  if (k == 0) {   /* no entropy source: the clock and the library's address */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    k = ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&kb_tag_key;
    k = (k ^ (k >> 31)) * 0x9e3779b97f4a7c15u;
  }
  kb_tag_key = k | 1;   /* never 0: a zero-filled block has no tag */
}

/* Raises an element-access error located at the Lua code doing the access
** (level 1: the caller of this metamethod or constructor), so messages read
** "file.lua:12: index 11 out of bounds [1, 10]", as compiled code reports. */
int kb_where_error(lua_State *L, const char *fmt, ...) {
  va_list ap;
  luaL_where(L, 1);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

#define KB_ALIGN      64
#define KB_MAXBYTES   ((int64_t)1 << 48)   /* larger requests: "array too large" */
#define KB_GUARD      "kjit.borrowed"
#define KB_EDGE       3                    /* tostring: items kept at each end */
#define KB_SUMMARIZE  10                   /* tostring: elide above this size */

/* Fields answered by __index besides the methods (ids in the methods table). */
enum { F_SHAPE = 1, F_DTYPE, F_NDIM, F_SIZE };

/* The host's release callback, owned by a guard userdata (see above). */
typedef struct KGuard {
  kb_release_fn release;
  void *ud;
  void *data;
  int released;            /* set by __gc, before release runs (KBuffer) */
} KGuard;

/* ------------------------------------------------------------------ */
/* dtype tables, generated from the single KJIT_DTYPES list            */
/* ------------------------------------------------------------------ */

#define X_NAME(E, n, ct, isf, iss) [E] = n,
static const char *const dt_names[KJIT_NDTYPES] = { KJIT_ALLDTYPES(X_NAME) };
#undef X_NAME

#define X_SIZE(E, n, ct, isf, iss) [E] = sizeof(ct),
static const unsigned char dt_sizes[KJIT_NDTYPES] = { KJIT_ALLDTYPES(X_SIZE) };
#undef X_SIZE

#define X_FLOAT(E, n, ct, isf, iss) [E] = isf,
static const unsigned char dt_float[KJIT_NDTYPES] = { KJIT_ALLDTYPES(X_FLOAT) };
#undef X_FLOAT

#define X_SIGNED(E, n, ct, isf, iss) [E] = iss,
static const unsigned char dt_signed[KJIT_NDTYPES] = { KJIT_ALLDTYPES(X_SIGNED) };
#undef X_SIGNED

/* ", i8, u8, ..." — skip the first two characters for the message. */
#define X_LIST(E, n, ct, isf, iss) ", " n
static const char dt_list[] = KJIT_ALLDTYPES(X_LIST);
#undef X_LIST

/* Out-of-range values must not index the tables: invalid is 0 / NULL. */
static int validdtype(kjit_dtype t) {
  return (unsigned)t < (unsigned)KJIT_NDTYPES;
}

/* Size in bytes of one element of t (public API). */
KJIT_API size_t kjit_dtype_size(kjit_dtype t) {
  return validdtype(t) ? dt_sizes[t] : 0;
}

/* Name of t such as "f32" (public API). */
KJIT_API const char *kjit_dtype_name(kjit_dtype t) {
  return validdtype(t) ? dt_names[t] : NULL;
}

/* 1 for f32/f64. */
int kb_dtype_isfloat(kjit_dtype t) {
  return validdtype(t) ? dt_float[t] : 0;
}

/* 1 for the signed integer types and the float types. */
int kb_dtype_issigned(kjit_dtype t) {
  return validdtype(t) ? dt_signed[t] : 0;
}

/* Parses a dtype: a dtype object (kjit.f32, dtype.c), a cast naming its
** dtype (cuda.float32, as numba's float32) or a name string; strict: only
** the exact names are accepted. */
kjit_dtype kb_checkdtype(lua_State *L, int idx, kjit_dtype def) {
  size_t len;
  const char *s;
  int t;
  if (lua_isnoneornil(L, idx)) return def;
  if ((t = kir_dtype_or_cast_of(L, idx)) >= 0) return (kjit_dtype)t;
  if (lua_type(L, idx) != LUA_TSTRING) {
    luaL_typeerror(L, idx, "dtype string");
    return def;
  }
  s = lua_tolstring(L, idx, &len);
  for (t = 0; t < KJIT_NDTYPES; t++)
    if (strlen(dt_names[t]) == len && memcmp(s, dt_names[t], len) == 0)
      return (kjit_dtype)t;
  luaL_argerror(L, idx, lua_pushfstring(L,
      "unknown dtype '%s' (expected one of %s)", s, dt_list + 2));
  return def;
}

/* ------------------------------------------------------------------ */
/* element loads and stores                                            */
/* ------------------------------------------------------------------ */

/* The type name for messages, using __name for userdata (as lauxlib). Only
** used on error paths: the name may stay pushed. */
static const char *tname(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING)
    return lua_tostring(L, -1);
  return luaL_typename(L, idx);
}

/* Float to integer only when exact and in range (Lua's F2Ieq). The range
** test comes first and is false for NaN, so the cast is never UB. */
static int num2int(lua_Number d, lua_Integer *out) {
  lua_Integer i;
  if (!(d >= -0x1p63 && d < 0x1p63)) return 0;
  i = (lua_Integer)d;
  if ((lua_Number)i != d) return 0;
  *out = i;
  return 1;
}

/* Writes the low bytes of u: the wrap of a C cast, without relying on
** implementation-defined signed conversions (unsigned aliasing is legal). */
static void storebits(void *p, uint64_t u, size_t size) {
  switch (size) {
    case 1: *(uint8_t *)p = (uint8_t)u; break;
    case 2: *(uint16_t *)p = (uint16_t)u; break;
    case 4: *(uint32_t *)p = (uint32_t)u; break;
    default: *(uint64_t *)p = u; break;
  }
}

/* Stores integer i at p: wraps for integer types, int->float for floats. */
static void setint(kjit_dtype t, void *p, lua_Integer i) {
  switch (t) {
#define X_SETI(E, n, ct, isf, iss) \
    case E: if (isf) *(ct *)p = (ct)i; \
            else storebits(p, (uint64_t)i, sizeof(ct)); \
            break;
    KJIT_DTYPES(X_SETI)
#undef X_SETI
    /* an integer is exact in the double for |i| <= 2^53; past it the
    ** half is inf anyway (65504 is the largest), so one rounding */
    case KJIT_F16: *(uint16_t *)p = kh_from_double((double)i); break;
    default: break;
  }
}

/* Stores float d at p. Integer types need an exact integer value. The
** double->float cast rounds to nearest (IEEE, C Annex F), inf included. */
static void setnum(lua_State *L, kjit_dtype t, void *p, lua_Number d) {
  lua_Integer i = 0;   /* luaL_error is not declared noreturn */
  if (t == KJIT_F64) { *(double *)p = (double)d; return; }
  if (t == KJIT_F32) { *(float *)p = (float)d; return; }
  if (t == KJIT_F16) { *(uint16_t *)p = kh_from_double(d); return; }
  if (!num2int(d, &i)) kb_where_error(L, "number has no integer representation");
  setint(t, p, i);
}

/* Stores the Lua value at idx into the element at p, with the store rules. */
static void storeval(lua_State *L, kjit_dtype t, void *p, int idx) {
  if (t == KJIT_BOOL) {
    if (lua_type(L, idx) != LUA_TBOOLEAN)
      luaL_error(L, KB_BOOL_EXPECTED, tname(L, idx));
    *(uint8_t *)p = (uint8_t)lua_toboolean(L, idx);
  } else if (lua_isinteger(L, idx))
    setint(t, p, lua_tointeger(L, idx));
  else if (lua_type(L, idx) == LUA_TNUMBER)   /* never a string: strict */
    setnum(L, t, p, lua_tonumber(L, idx));
  else
    luaL_error(L, "number expected, got %s", tname(L, idx));
}

/* Reads element k as an integer (returns 1, *i) or a float (0, *d). u64
** reads the bit pattern as i64, as Lua wraps. */
static int getval(const KBuffer *b, int64_t k, lua_Integer *i, lua_Number *d) {
  switch (b->dtype) {
#define X_GET(E, n, ct, isf, iss) \
    case E: \
      if (isf) { *d = (lua_Number)((const ct *)b->data)[k]; return 0; } \
      if (sizeof(ct) == 8) { *i = ((const int64_t *)b->data)[k]; return 1; } \
      *i = (lua_Integer)((const ct *)b->data)[k]; return 1;
    KJIT_DTYPES(X_GET)
#undef X_GET
    case KJIT_F16: *d = kh_to_double(((const uint16_t *)b->data)[k]); return 0;
    default: *i = 0; return 1;
  }
}

/* Pushes element k: Lua integers for integer types, floats for floats,
** booleans for bool. */
void kb_push_element(lua_State *L, const KBuffer *b, int64_t k) {
  lua_Integer i;
  lua_Number d;
  if (b->dtype == KJIT_BOOL) lua_pushboolean(L, ((const uint8_t *)b->data)[k] != 0);
  else if (getval(b, k, &i, &d)) lua_pushinteger(L, i);
  else lua_pushnumber(L, d);
}

/* Stores the Lua value at idx into element k. */
void kb_store_element(lua_State *L, KBuffer *b, int64_t k, int idx) {
  storeval(L, b->dtype, b->data + k * (int64_t)dt_sizes[b->dtype], idx);
}

/* Copies element sk of src into element dk of dst, converting the dtype
** with the store rules (as a Lua read followed by a store). */
static void convertelem(lua_State *L, KBuffer *dst, int64_t dk,
                        const KBuffer *src, int64_t sk) {
  size_t es = dt_sizes[dst->dtype];
  void *p = dst->data + dk * (int64_t)es;
  lua_Integer i;
  lua_Number d;
  if (dst->dtype == src->dtype)
    memcpy(p, src->data + sk * (int64_t)es, es);
  else if (dst->dtype == KJIT_BOOL)   /* a number read, a bool store */
    luaL_error(L, KB_BOOL_EXPECTED, "number");
  else if (src->dtype == KJIT_BOOL)
    luaL_error(L, "number expected, got boolean");
  else if (getval(src, sk, &i, &d))
    setint(dst->dtype, p, i);
  else
    setnum(L, dst->dtype, p, d);
}

/* ------------------------------------------------------------------ */
/* creation                                                            */
/* ------------------------------------------------------------------ */

/* Raises the bounds error shared by the interpreter and compiled code. */
int kb_bounds_error(lua_State *L, int64_t i, int64_t n) {
  return kb_where_error(L, "index %I out of bounds [1, %I]%s",
                    (lua_Integer)i, (lua_Integer)n, i == 0 ? KJIT_HINT_1BASED : "");
}

/* Validates a shape and returns its size. The product of the nonzero
** extents is bounded too, so every partial product (row strides) fits. */
static int64_t checksize(lua_State *L, kjit_dtype t, int ndim,
                         const int64_t *shape) {
  int64_t nz = 1, limit;
  int k, zero = 0;
  if (!validdtype(t)) luaL_error(L, "invalid dtype %d", (int)t);
  if (ndim < 1 || ndim > KJIT_MAXDIMS)
    luaL_error(L, "kjit arrays have 1 to %d dimensions, got %d",
               KJIT_MAXDIMS, ndim);
  limit = KB_MAXBYTES / dt_sizes[t];
  for (k = 0; k < ndim; k++) {
    int64_t d = shape[k];
    if (d < 0) luaL_error(L, "negative dimension %I in shape", (lua_Integer)d);
    if (d == 0) { zero = 1; continue; }
    if (nz > limit / d) luaL_error(L, "array too large (over 2^48 bytes)");
    nz *= d;
  }
  return zero ? 0 : nz;
}

/* Fills the header; extents past ndim are 1 (see KBuffer). */
static void initheader(KBuffer *b, char *data, kjit_dtype t, int ndim,
                       const int64_t *shape, int64_t size) {
  int k;
  b->data = data;
  for (k = 0; k < KJIT_MAXDIMS; k++) b->shape[k] = k < ndim ? shape[k] : 1;
  b->size = size;
  b->ndim = ndim;
  b->dtype = t;
  b->release = NULL;
  b->release_ud = NULL;
  b->released = NULL;
  b->tag = KB_TAG(b);
  b->record = NULL;   /* record arrays: host/record.c sets it */
  if ((t == KJIT_F64 || t == KJIT_I64) && !__atomic_load_n(&kb_viewable_made, __ATOMIC_RELAXED))
    __atomic_store_n(&kb_viewable_made, 1, __ATOMIC_RELAXED);
}

/* Pushes the kjit.array metatable, creating it on first use, so C hosts
** can push buffers before (or without) require "kjit". */
static void pushmeta(lua_State *L);

/* Makes the userdata of lightuserdata(1) bytes (kb_push_new, protected). */
static int newud_p(lua_State *L) {
  lua_newuserdatauv(L, *(const size_t *)lua_touserdata(L, 1), 1);
  return 1;
}

/* Arrays from this size on are allocated under a pcall, so that running
** out of memory says where and how much (Lua's bare "not enough memory"
** has neither); compiled code says the same (runtime/alloc.c). */
#define KB_PROTECTED ((size_t)1 << 20)

/* Pushes a new owned buffer; the elements follow the header, aligned. */
KBuffer *kb_push_new(lua_State *L, kjit_dtype t, int ndim,
                     const int64_t *shape, int zero) {
  int64_t size = checksize(L, t, ndim, shape);
  size_t bytes = (size_t)size * dt_sizes[t];
  size_t total = sizeof(KBuffer) + KB_ALIGN - 1 + bytes;
  KBuffer *b;
  if (bytes >= KB_PROTECTED) {
    lua_pushcfunction(L, newud_p);
    lua_pushlightuserdata(L, &total);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
      lua_pop(L, 1);
      kb_where_error(L, "not enough memory (a kjit array of %I bytes)", (lua_Integer)bytes);
    }
    b = (KBuffer *)lua_touserdata(L, -1);
  } else {
    b = (KBuffer *)lua_newuserdatauv(L, total, 1);
  }
  uintptr_t p = ((uintptr_t)(b + 1) + KB_ALIGN - 1) & ~(uintptr_t)(KB_ALIGN - 1);
  initheader(b, (char *)p, t, ndim, shape, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  /* Large arrays: ask for transparent huge pages on the 2 MiB-aligned part
  ** before the first touch, as NumPy does (with THP in "madvise" mode,
  ** the default of many distributions, nothing else gets them). Streaming
  ** kernels then spend less on TLB misses. Failure is harmless (memory not
  ** from an anonymous mapping, THP off): it stays a hint. */
  if (bytes >= ((size_t)4 << 20)) {
    uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = (p + huge - 1) & ~(huge - 1), hi = (p + bytes) & ~(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
  }
#endif
  if (zero) memset(b->data, 0, bytes);
  pushmeta(L);
  lua_setmetatable(L, -2);
  return b;
}

/* The guard's finalizer: hands borrowed memory back to the host, once. */
static int guard_gc(lua_State *L) {
  KGuard *g = (KGuard *)luaL_checkudata(L, 1, KB_GUARD);
  kb_release_fn fn = g->release;
  g->release = NULL;
  /* from here on every buffer and view over this memory refuses access,
  ** even one a finalizer resurrects (the guard outlives them all) */
  g->released = 1;
  if (fn) fn(g->ud, g->data);
  return 0;
}

/* Pushes a buffer over host memory. If this raises (bad shape, memory),
** release is never called: the host still owns data. */
KBuffer *kb_push_borrowed(lua_State *L, void *data, kjit_dtype t, int ndim,
                          const int64_t *shape, kb_release_fn release,
                          void *ud) {
  int64_t size = checksize(L, t, ndim, shape);
  KBuffer *b;
  if (data == NULL && size > 0) luaL_error(L, "borrowed array data is NULL");
  if ((uintptr_t)data % dt_sizes[t] != 0)
    luaL_error(L, "borrowed array data %p is not aligned to its %d-byte "
               "elements", data, (int)dt_sizes[t]);
  b = (KBuffer *)lua_newuserdatauv(L, sizeof(KBuffer), 1);
  initheader(b, (char *)data, t, ndim, shape, size);
  pushmeta(L);
  lua_setmetatable(L, -2);
  if (release != NULL) {
    KGuard *g = (KGuard *)lua_newuserdatauv(L, sizeof(KGuard), 0);
    g->release = NULL;   /* armed only once everything below succeeded */
    g->ud = ud;
    g->data = data;
    g->released = 0;
    if (kb_newmeta(L, KB_GUARD)) {
      lua_pushcfunction(L, guard_gc);
      lua_setfield(L, -2, "__gc");
      lua_pushliteral(L, KB_GUARD);
      lua_setfield(L, -2, "__metatable");
      kb_regmeta(L, KB_GUARD);
    }
    lua_setmetatable(L, -2);
    lua_setiuservalue(L, -2, 1);
    g->release = release;
    b->release = release;   /* informational: the guard makes the call */
    b->release_ud = ud;
    b->released = &g->released;
  }
  return b;
}

/* Pushes a view of src (the buffer at absolute index base), unchecked:
** the hot path of a[i][j]. */
static KBuffer *pushview(lua_State *L, int base, const KBuffer *src,
                         char *data, int ndim, const int64_t *shape) {
  KBuffer *v;
  int64_t size = 1;
  int k;
  for (k = 0; k < ndim; k++) size *= shape[k];
  v = (KBuffer *)lua_newuserdatauv(L, sizeof(KBuffer), 1);
  initheader(v, data, src->dtype, ndim, shape, size);
  v->released = src->released;   /* the same guard: the anchor set below */
  lua_getmetatable(L, base);      /* cheaper than the registry lookup */
  lua_setmetatable(L, -2);
  if (lua_getiuservalue(L, base, 1) == LUA_TNIL) {  /* base is the anchor */
    lua_pop(L, 1);
    lua_pushvalue(L, base);
  }
  lua_setiuservalue(L, -2, 1);
  return v;
}

/* Pushes a view of the buffer at base: same dtype, memory at data (inside
** base's memory), the given extents. Keeps base's memory alive. */
KBuffer *kb_push_view(lua_State *L, int base, char *data, int ndim,
                      const int64_t *shape) {
  const KBuffer *src;
  base = lua_absindex(L, base);
  src = kb_check(L, base);
  if (ndim < 1 || ndim > KJIT_MAXDIMS)
    luaL_error(L, "kjit arrays have 1 to %d dimensions, got %d",
               KJIT_MAXDIMS, ndim);
  return pushview(L, base, src, data, ndim, shape);
}

int kb_released_error(lua_State *L) {
  return luaL_error(L, "array used after its memory was released");
}

/* Returns the buffer at idx or NULL, released or not. */
KBuffer *kb_test_raw(lua_State *L, int idx) {
  return (KBuffer *)luaL_testudata(L, idx, KB_METATABLE);
}

/* Returns the buffer at idx or NULL. */
KBuffer *kb_test(lua_State *L, int idx) {
  KBuffer *b = (KBuffer *)luaL_testudata(L, idx, KB_METATABLE);
  if (b != NULL && kb_released(b)) kb_released_error(L);
  return b;
}

/* Returns the buffer at idx or raises an argument error. */
KBuffer *kb_check(lua_State *L, int idx) {
  KBuffer *b = (KBuffer *)luaL_checkudata(L, idx, KB_METATABLE);
  if (kb_released(b)) kb_released_error(L);
  return b;
}

/* ------------------------------------------------------------------ */
/* argument helpers (strict: no string->number coercion)               */
/* ------------------------------------------------------------------ */

/* A number argument, never a numeric string. */
static lua_Number checknum(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TNUMBER) luaL_typeerror(L, idx, "number");
  return lua_tonumber(L, idx);
}

/* An integer argument (a float with an exact integer value is fine). */
static lua_Integer checkint(lua_State *L, int idx) {
  int ok;
  lua_Integer i;
  if (lua_type(L, idx) != LUA_TNUMBER) luaL_typeerror(L, idx, "integer");
  i = lua_tointegerx(L, idx, &ok);
  if (!ok) luaL_argerror(L, idx, "number has no integer representation");
  return i;
}

/* One extent of a shape, value at the top of the stack. */
static int64_t getdim(lua_State *L, int arg, int k) {
  int ok;
  lua_Integer d;
  if (lua_type(L, -1) != LUA_TNUMBER)
    luaL_argerror(L, arg, lua_pushfstring(L,
        "shape dimension %d must be an integer, got %s", k, tname(L, -1)));
  d = lua_tointegerx(L, -1, &ok);
  if (!ok)
    luaL_argerror(L, arg, lua_pushfstring(L,
        "shape dimension %d is %f, not an integer", k, lua_tonumber(L, -1)));
  if (d < 0)
    luaL_argerror(L, arg, lua_pushfstring(L,
        "negative dimension %I in shape", d));
  return (int64_t)d;
}

/* Parses a shape argument: an integer or a table of 1 to 4 integers.
** Returns ndim; shape[ndim..] are set to 1. */
int kb_checkshape(lua_State *L, int idx, int64_t shape[KJIT_MAXDIMS]) {
  int ndim, k;
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_pushvalue(L, idx);
    shape[0] = getdim(L, idx, 1);
    lua_pop(L, 1);
    ndim = 1;
  } else if (lua_type(L, idx) == LUA_TTABLE) {
    lua_Unsigned n = lua_rawlen(L, idx);
    if (n == 0)
      luaL_argerror(L, idx, "shape table is empty (need 1 to 4 dimensions)");
    if (n > KJIT_MAXDIMS)
      luaL_argerror(L, idx, lua_pushfstring(L,
          "too many dimensions (%I; kjit arrays have at most %d)",
          (lua_Integer)n, KJIT_MAXDIMS));
    ndim = (int)n;
    for (k = 0; k < ndim; k++) {
      lua_rawgeti(L, idx, k + 1);
      shape[k] = getdim(L, idx, k + 1);
      lua_pop(L, 1);
    }
  } else {
    luaL_typeerror(L, idx, "shape (an integer or a table of integers)");
    return 0;
  }
  for (k = ndim; k < KJIT_MAXDIMS; k++) shape[k] = 1;
  return ndim;
}

/* ------------------------------------------------------------------ */
/* indexing: the hot path                                              */
/* ------------------------------------------------------------------ */

/* Elements in one step along dimension 0 (valid for every buffer since
** partial products of extents are bounded, see checksize). */
static int64_t rowsize(const KBuffer *b) {
  return b->shape[1] * b->shape[2] * b->shape[3];
}

/* Strides in elements: st[d] = product of the extents after d. */
static void strides(const KBuffer *b, int64_t st[KJIT_MAXDIMS]) {
  int k;
  st[KJIT_MAXDIMS - 1] = 1;
  for (k = KJIT_MAXDIMS - 2; k >= 0; k--) st[k] = st[k + 1] * b->shape[k + 1];
}

/* The receiver of a metamethod. Lua only calls these with a kjit.array
** (the metatable is hidden behind __metatable); comparing metatables here
** would cost a third of a[i], so only the debug library could pass a
** foreign userdata, and the size check still rejects light and small
** userdata. */
static KBuffer *self(lua_State *L) {
  KBuffer *b = (KBuffer *)lua_touserdata(L, 1);
  if (b == NULL || lua_rawlen(L, 1) < sizeof(KBuffer))
    luaL_typeerror(L, 1, KB_METATABLE);
  if (kb_released(b)) kb_released_error(L);
  return b;
}

/* A float index must have an integer value (a[2.0] is a[2], as in tables). */
static lua_Integer floatindex(lua_State *L, const KBuffer *b, int idx) {
  lua_Number d = lua_tonumber(L, idx);
  lua_Integer i;
  if (num2int(d, &i)) return i;
  if (d == floor(d))   /* integral but beyond i64: out of bounds anyway */
    kb_where_error(L, "index %f out of bounds [1, %I]", d, (lua_Integer)b->shape[0]);
  kb_where_error(L, "index %f is not an integer", d);
  return 0;
}

/* The index at 2 as an integer, or an error for other key types. */
static lua_Integer keyindex(lua_State *L, const KBuffer *b) {
  if (lua_type(L, 2) == LUA_TNUMBER) return floatindex(L, b, 2);
  luaL_error(L, "kjit.array cannot be indexed with a %s value (expected "
             "an integer index or a field name)", tname(L, 2));
  return 0;
}

/* Pushes a field (shape, dtype, ndim, size) or a method by name. */
static int getfield(lua_State *L, const KBuffer *b) {
  lua_pushvalue(L, 2);
  switch (lua_rawget(L, lua_upvalueindex(1))) {
    case LUA_TFUNCTION: return 1;
    case LUA_TNUMBER: break;
    default:
      return luaL_error(L, "kjit.array has no field '%s'", lua_tostring(L, 2));
  }
  switch ((int)lua_tointeger(L, -1)) {
    case F_SHAPE: kb_push_shape(L, b->ndim, b->shape); return 1;
    case F_DTYPE: lua_pushstring(L, dt_names[b->dtype]); return 1;
    case F_NDIM: lua_pushinteger(L, b->ndim); return 1;
    default: lua_pushinteger(L, (lua_Integer)b->size); return 1;
  }
}

/* a[#a + 1] read by ipairs's iterator (upvalue `up` of __index, from
** kb_push_ipairs_iter): ipairs(a) then ends after #a, as over a table; any
** other read there is out of bounds. Only on the error path: the reads in
** bounds pay nothing. */
int kb_from_ipairs(lua_State *L, int up) {
  lua_Debug ar;
  int same;
  if (lua_type(L, lua_upvalueindex(up)) != LUA_TFUNCTION || !lua_getstack(L, 1, &ar)) return 0;
  if (!lua_getinfo(L, "f", &ar)) return 0;
  same = lua_rawequal(L, -1, lua_upvalueindex(up));
  lua_pop(L, 1);
  return same;
}

/* Pushes ipairs's iterator (ipairs({}) returns it), for kb_from_ipairs;
** nil when the host has not opened the base library. */
void kb_push_ipairs_iter(lua_State *L) {
  if (lua_getglobal(L, "ipairs") == LUA_TFUNCTION) {
    lua_newtable(L);
    lua_call(L, 1, 1);
  } else {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
}

/* __index: a[i] (element, or an (n-1)-D row view) and a.field. */
static int m_index(lua_State *L) {
  KBuffer *b = self(L);
  lua_Integer i;
  if (lua_isinteger(L, 2)) i = lua_tointeger(L, 2);
  else if (lua_type(L, 2) == LUA_TSTRING) return getfield(L, b);
  else i = keyindex(L, b);
  if (i < 1 || i > b->shape[0]) {
    if (i == b->shape[0] + 1 && kb_from_ipairs(L, 2)) { lua_pushnil(L); return 1; }
    return kb_bounds_error(L, i, b->shape[0]);
  }
  if (b->ndim == 1) {
    kb_push_element(L, b, i - 1);
  } else {
    int64_t off = (i - 1) * rowsize(b) * (int64_t)dt_sizes[b->dtype];
    pushview(L, 1, b, b->data + off, b->ndim - 1, b->shape + 1);
  }
  return 1;
}

/* __newindex: a[i] = v on a 1-D buffer (or a row view). */
static int m_newindex(lua_State *L) {
  KBuffer *b = self(L);
  lua_Integer i;
  if (lua_isinteger(L, 2)) {
    i = lua_tointeger(L, 2);
  } else if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
      return luaL_error(L, "cannot assign to field '%s' of a kjit.array",
                        lua_tostring(L, 2));
    return luaL_error(L, "kjit.array has no field '%s'", lua_tostring(L, 2));
  } else {
    i = keyindex(L, b);
  }
  if (b->ndim > 1) {
    KBuffer *src = lua_type(L, 3) == LUA_TUSERDATA ? kb_test(L, 3) : NULL;
    int64_t rs = rowsize(b), k;
    int d;
    if (src == NULL)
      return luaL_error(L, "cannot assign a %s to a row of a %d-D kjit.array: "
                        "index all %d dimensions (a[i][j] = v), or assign a kjit.array "
                        "of the row's shape", tname(L, 3), b->ndim, b->ndim);
    /* m[i] = row: copies the elements (the shape checked), as compiled code */
    if (src->ndim != b->ndim - 1)
      return luaL_error(L, "cannot assign a %d-D kjit.array to a row of a %d-D kjit.array "
                        "(rows are %d-D)", src->ndim, b->ndim, b->ndim - 1);
    if (i < 1 || i > b->shape[0]) return kb_bounds_error(L, i, b->shape[0]);
    for (d = 0; d < src->ndim; d++)
      if (src->shape[d] != b->shape[d + 1])
        return luaL_error(L, "cannot assign a kjit.array of extent %I to a row of extent %I "
                          "(dimension %d)", (lua_Integer)src->shape[d],
                          (lua_Integer)b->shape[d + 1], d + 1);
    if (src->dtype == b->dtype) {
      memmove(b->data + (i - 1) * rs * (int64_t)dt_sizes[b->dtype], src->data,
              (size_t)rs * dt_sizes[b->dtype]);
    } else {
      for (k = 0; k < rs; k++) convertelem(L, b, (i - 1) * rs + k, src, k);
    }
    return 0;
  }
  if (i < 1 || i > b->shape[0]) return kb_bounds_error(L, i, b->shape[0]);
  storeval(L, b->dtype, b->data + (i - 1) * (int64_t)dt_sizes[b->dtype], 3);
  return 0;
}

/* __len: the length of the first dimension. */
static int m_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)self(L)->shape[0]);
  return 1;
}

/* ------------------------------------------------------------------ */
/* tostring                                                            */
/* ------------------------------------------------------------------ */

/* Formats a float as Lua does (%.14g, ".0" when it looks integral); f32
** gets 7 digits, which prints 0.1f as 0.1. */
static void fmtfloat(char *buf, size_t sz, int prec, double d) {
  snprintf(buf, sz, "%.*g", prec, d);
  if (buf[strspn(buf, "-0123456789")] == '\0') {
    size_t n = strlen(buf);
    if (n + 2 < sz) memcpy(buf + n, ".0", 3);
  }
}

/* Formats element k; u64 shows its unsigned value. */
static void fmtelem(char *buf, size_t sz, const KBuffer *b, int64_t k) {
  lua_Integer i;
  lua_Number d;
  if (b->dtype == KJIT_BOOL)
    snprintf(buf, sz, "%s", ((const uint8_t *)b->data)[k] ? "true" : "false");
  else if (b->dtype == KJIT_U64)
    snprintf(buf, sz, "%" PRIu64, ((const uint64_t *)b->data)[k]);
  else if (b->dtype == KJIT_F16) {   /* the shortest that reads back, as numpy prints */
    uint16_t h = ((const uint16_t *)b->data)[k];
    d = kh_to_double(h);
    /* at least the integer digits: 65504 prints so, not as 6.55e+04 */
    int prec = 1;
    for (double m = 10; prec < 5 && fabs(d) >= m; m *= 10) prec++;
    for (; prec <= 5; prec++) {
      fmtfloat(buf, sz, prec, d);
      if (d != d || kh_from_double(strtod(buf, NULL)) == h) break;
    }
  } else if (!getval(b, k, &i, &d))
    fmtfloat(buf, sz, b->dtype == KJIT_F32 ? 7 : 14, d);
  else
    snprintf(buf, sz, "%" PRId64, (int64_t)i);
}

/* Appends dimension d at element offset off, eliding the middle of long
** dimensions when summarizing (NumPy's rule, with 3 items at each end). */
static void addarray(luaL_Buffer *B, const KBuffer *b, int d, int64_t off,
                     const int64_t *st, int summarize) {
  int64_t n = b->shape[d], i;
  char buf[64];
  luaL_addchar(B, '[');
  for (i = 0; i < n; i++) {
    if (i > 0) luaL_addstring(B, ", ");
    if (summarize && n > 2 * KB_EDGE && i == KB_EDGE) {
      luaL_addstring(B, "...");
      i = n - KB_EDGE - 1;
      continue;
    }
    if (d + 1 >= b->ndim || d + 1 >= KJIT_MAXDIMS) {
      fmtelem(buf, sizeof buf, b, off + i);
      luaL_addstring(B, buf);
    } else {
      addarray(B, b, d + 1, off + i * st[d], st, summarize);
    }
  }
  luaL_addchar(B, ']');
}

/* __tostring: "kjit.array(f32, {3}) [1.0, 2.0, 3.0]". */
static int m_tostring(lua_State *L) {
  KBuffer *b = self(L);
  luaL_Buffer B;
  int64_t st[KJIT_MAXDIMS];
  char buf[32];
  int k;
  strides(b, st);
  luaL_buffinit(L, &B);
  luaL_addstring(&B, "kjit.array(");
  luaL_addstring(&B, dt_names[b->dtype]);
  luaL_addstring(&B, ", {");
  for (k = 0; k < b->ndim; k++) {
    snprintf(buf, sizeof buf, k ? ", %" PRId64 : "%" PRId64, b->shape[k]);
    luaL_addstring(&B, buf);
  }
  luaL_addstring(&B, "}) ");
  addarray(&B, b, 0, 0, st, b->size > KB_SUMMARIZE);
  luaL_pushresult(&B);
  return 1;
}

/* ------------------------------------------------------------------ */
/* methods                                                             */
/* ------------------------------------------------------------------ */

/* Nested tables for dimension d at element offset off. */
static void totable(lua_State *L, const KBuffer *b, int d, int64_t off,
                    const int64_t *st) {
  int64_t n = b->shape[d], i;
  luaL_checkstack(L, 3, "kjit.array totable");
  lua_createtable(L, n < 1 << 30 ? (int)n : 1 << 30, 0);
  for (i = 0; i < n; i++) {
    if (d + 1 >= b->ndim || d + 1 >= KJIT_MAXDIMS)   /* (helps -Warray-bounds) */
      kb_push_element(L, b, off + i);
    else totable(L, b, d + 1, off + i * st[d], st);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* a:totable(): a plain Lua table (nested for n-D). */
static int m_totable(lua_State *L) {
  KBuffer *b = kb_check(L, 1);
  int64_t st[KJIT_MAXDIMS];
  strides(b, st);
  totable(L, b, 0, 0, st);
  return 1;
}

/* Sets every element to the value at idx, converted once; the copy then
** doubles the filled prefix. Size 0 still validates the value. */
static void fillvalue(lua_State *L, KBuffer *b, int idx) {
  size_t es = dt_sizes[b->dtype], total = (size_t)b->size * es, done;
  double tmp[1];
  storeval(L, b->dtype, tmp, idx);
  if (total == 0) return;
  memcpy(b->data, tmp, es);
  for (done = es; done < total; done *= 2)
    memcpy(b->data + done, b->data, done < total - done ? done : total - done);
}

/* a:fill(v): returns a, so kjit.empty(n):fill(v) reads well. */
static int m_fill(lua_State *L) {
  KBuffer *b = kb_check(L, 1);
  fillvalue(L, b, 2);
  lua_settop(L, 1);
  return 1;
}

/* Pushes an owned copy of b (the buffer at idx) with dtype t. */
static KBuffer *pushcopy(lua_State *L, int idx, kjit_dtype t) {
  const KBuffer *src = kb_check(L, idx);
  KBuffer *dst = kb_push_new(L, t, src->ndim, src->shape, 0);
  int64_t k;
  if (t == src->dtype)
    memcpy(dst->data, src->data, (size_t)src->size * dt_sizes[t]);
  else
    for (k = 0; k < src->size; k++) convertelem(L, dst, k, src, k);
  return dst;
}

/* a:copy(): a new owned buffer, same dtype and shape. */
static int m_copy(lua_State *L) {
  pushcopy(L, 1, kb_check(L, 1)->dtype);
  return 1;
}

/* a:reshape(shape): a view with the same elements in a new shape. */
static int m_reshape(lua_State *L) {
  KBuffer *b = kb_check(L, 1);
  int64_t shape[KJIT_MAXDIMS];
  int ndim = kb_checkshape(L, 2, shape);
  int64_t size = checksize(L, b->dtype, ndim, shape);
  if (size != b->size)
    return luaL_error(L, "cannot reshape a kjit.array of size %I into a "
                      "shape of size %I", (lua_Integer)b->size,
                      (lua_Integer)size);
  pushview(L, 1, b, b->data, ndim, shape);
  return 1;
}

/* a:slice(first [, last]): rows first..last (inclusive) as a view. An
** empty slice (first == last + 1) is allowed, as with string.sub. */
static int m_slice(lua_State *L) {
  KBuffer *b = kb_check(L, 1);
  lua_Integer n = b->shape[0];
  lua_Integer first = checkint(L, 2);
  lua_Integer last = lua_isnoneornil(L, 3) ? n : checkint(L, 3);
  int64_t shape[KJIT_MAXDIMS];
  /* last + 1 would overflow for last == maxinteger (then first <= last + 1) */
  int backwards = last != LUA_MAXINTEGER && first > last + 1;
  if (first < 1 || last > n || backwards)
    return luaL_error(L, "slice %I..%I out of bounds [1, %I]%s", first, last,
                      n, backwards ? " (first > last + 1)" : "");
  memcpy(shape, b->shape, sizeof shape);
  shape[0] = last - first + 1;
  pushview(L, 1, b, b->data + (first - 1) * rowsize(b)
                          * (int64_t)dt_sizes[b->dtype], b->ndim, shape);
  return 1;
}

/* ------------------------------------------------------------------ */
/* constructors                                                        */
/* ------------------------------------------------------------------ */

/* kjit.zeros(shape [, dtype]) */
static int b_zeros(lua_State *L) {
  int64_t shape[KJIT_MAXDIMS];
  if (krec_test(L, 2)) return krec_construct(L, "zeros", 2);   /* records */
  int ndim = kb_checkshape(L, 1, shape);
  kb_push_new(L, kb_checkdtype(L, 2, KJIT_F64), ndim, shape, 1);
  return 1;
}

/* kjit.empty(shape [, dtype]): zeroed as well, so nothing reads garbage. */
static int b_empty(lua_State *L) {
  return b_zeros(L);
}

/* kjit.full(shape, value [, dtype]) */
static int b_full(lua_State *L) {
  int64_t shape[KJIT_MAXDIMS];
  if (krec_test(L, 3)) return krec_construct(L, "full", 3);   /* records */
  int ndim = kb_checkshape(L, 1, shape);
  if (lua_type(L, 2) == LUA_TNONE) luaL_typeerror(L, 2, "number");
  lua_settop(L, 3);   /* the new buffer goes above the arguments */
  kjit_dtype t = kb_checkdtype(L, 3, lua_isboolean(L, 2) ? KJIT_BOOL : KJIT_F64);
  fillvalue(L, kb_push_new(L, t, ndim, shape, 0), 2);
  return 1;
}

/* State of a copy from nested tables into a new buffer. */
typedef struct Filler {
  lua_State *L;
  KBuffer *b;
  int64_t st[KJIT_MAXDIMS];
  lua_Integer path[KJIT_MAXDIMS];   /* 1-based position, for messages */
} Filler;

/* Pushes "[i][j]" for the first d entries of the path. */
static const char *pushpath(Filler *f, int d) {
  luaL_Buffer B;
  char buf[32];
  int k;
  luaL_buffinit(f->L, &B);
  if (d == 0) luaL_addstring(&B, "the top level");
  for (k = 0; k < d; k++) {
    snprintf(buf, sizeof buf, "[%lld]", (long long)f->path[k]);
    luaL_addstring(&B, buf);
  }
  luaL_pushresult(&B);
  return lua_tostring(f->L, -1);
}

/* Copies the node at the top of the stack (depth d) to element offset off.
** Leaves are numbers; inner nodes are tables or kjit arrays of the
** right shape, anything else is a "ragged" or type error. */
static void fillnode(Filler *f, int d, int64_t off) {
  lua_State *L = f->L;
  KBuffer *b = f->b, *src;
  int top = lua_gettop(L), tt = lua_type(L, top);
  if (d >= b->ndim || d >= KJIT_MAXDIMS) {
    int leaf = b->dtype == KJIT_BOOL ? LUA_TBOOLEAN : LUA_TNUMBER;
    if (tt == leaf) {
      storeval(L, b->dtype, b->data + off * (int64_t)dt_sizes[b->dtype], top);
    } else if (tt == LUA_TTABLE || kb_test(L, top)) {
      luaL_error(L, "kjit.array: ragged nested table (%s at %s where a "
                 "%s was expected)", tname(L, top), pushpath(f, d), lua_typename(L, leaf));
    } else {
      luaL_error(L, "kjit.array: %s expected, got %s at %s",
                 lua_typename(L, leaf), tname(L, top), pushpath(f, d));
    }
    return;
  }
  if (tt == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, top), i;
    if (n != b->shape[d])
      luaL_error(L, "kjit.array: ragged nested table (%s has %I elements, "
                 "expected %I)", pushpath(f, d), n, (lua_Integer)b->shape[d]);
    luaL_checkstack(L, 2, "kjit.array");
    for (i = 1; i <= n; i++) {
      f->path[d] = i;
      lua_rawgeti(L, top, i);
      fillnode(f, d + 1, off + (i - 1) * f->st[d]);
      lua_pop(L, 1);
    }
  } else if ((src = kb_test(L, top)) != NULL) {
    int64_t k;
    int same = src->ndim == b->ndim - d;
    for (k = 0; same && k < src->ndim; k++) same = src->shape[k] == b->shape[d + k];
    if (!same)
      luaL_error(L, "kjit.array: ragged nested table (the kjit.array at %s "
                 "does not match the shape of its siblings)", pushpath(f, d));
    for (k = 0; k < src->size; k++) convertelem(L, b, off + k, src, k);
  } else {
    luaL_error(L, "kjit.array: ragged nested table (%s at %s where a table "
               "of length %I was expected)", tname(L, top), pushpath(f, d),
               (lua_Integer)b->shape[d]);
  }
}

/* The shape of a nested table, following first elements down; *leaf: the
** Lua type of the first leaf (LUA_TBOOLEAN for a bool array met on the
** way; LUA_TNONE for an empty table or a number array). */
static int tableshape(lua_State *L, int idx, int64_t *shape, int *leaf) {
  int nd = 0;
  const KBuffer *src;
  lua_pushvalue(L, idx);
  *leaf = LUA_TNONE;
  for (;;) {
    if (lua_type(L, -1) == LUA_TTABLE) {
      lua_Unsigned n = lua_rawlen(L, -1);
      if (nd == KJIT_MAXDIMS)
        luaL_error(L, "kjit.array: too many dimensions (tables nested more "
                   "than %d deep)", KJIT_MAXDIMS);
      shape[nd++] = (int64_t)n;
      if (n == 0) break;
      lua_rawgeti(L, -1, 1);
      lua_remove(L, -2);
    } else if ((src = kb_test(L, -1)) != NULL) {
      int k;
      if (nd + src->ndim > KJIT_MAXDIMS)
        luaL_error(L, "kjit.array: too many dimensions (%d; kjit arrays have "
                   "at most %d)", nd + src->ndim, KJIT_MAXDIMS);
      for (k = 0; k < src->ndim; k++) shape[nd++] = src->shape[k];
      if (src->dtype == KJIT_BOOL) *leaf = LUA_TBOOLEAN;   /* its elements */
      break;
    } else {
      *leaf = lua_type(L, -1);
      break;
    }
  }
  lua_pop(L, 1);
  return nd;
}

/* kjit.array(table | array [, dtype]): copies nested tables (or a kjit
** array) into a new buffer; dtype defaults to f64 (or the array's), and to
** bool for a table whose first element is a boolean (as NumPy infers). */
static int b_array(lua_State *L) {
  Filler f;
  int64_t shape[KJIT_MAXDIMS];
  int ndim, leaf;
  kjit_dtype t;
  if (krec_test(L, 2)) return krec_construct(L, "array", 2);   /* records */
  if (lua_isnoneornil(L, 2) && krec_test_array(L, 1)) {         /* a copy of records */
    lua_settop(L, 1);
    krec_push_struct(L, krec_test_array(L, 1)->record);
    return krec_construct(L, "array", 2);
  }
  const KBuffer *src = kb_test(L, 1);
  if (src != NULL) {
    pushcopy(L, 1, kb_checkdtype(L, 2, src->dtype));
    return 1;
  }
  if (lua_type(L, 1) != LUA_TTABLE)
    luaL_typeerror(L, 1, "table or kjit.array");
  t = kb_checkdtype(L, 2, KJIT_F64);   /* a dtype given is checked first */
  lua_settop(L, 2);
  ndim = tableshape(L, 1, shape, &leaf);
  if (lua_isnil(L, 2) && leaf == LUA_TBOOLEAN) t = KJIT_BOOL;
  f.L = L;
  f.b = kb_push_new(L, t, ndim, shape, 0);
  strides(f.b, f.st);
  lua_pushvalue(L, 1);
  fillnode(&f, 0, 0);
  lua_pop(L, 1);
  return 1;
}

/* kjit.arange([start,] stop [, step] [, dtype]): NumPy's values (stop
** exclusive, arange(n) is 0..n-1). i64 when all numbers are integers. */
static int b_arange(lua_State *L) {
  int top = lua_gettop(L), nnum = 0, allint = 1, k;
  lua_Number a[3];
  lua_Integer ia[3];
  KBuffer *b;
  kjit_dtype t;
  int64_t n, shape[1];
  for (k = 1; k <= top; k++)   /* records */
    if (krec_test(L, k)) return krec_construct(L, "arange", k);
  while (nnum < 3 && nnum < top && lua_type(L, nnum + 1) == LUA_TNUMBER) {
    allint &= lua_isinteger(L, nnum + 1);
    nnum++;
  }
  if (nnum == 0) checknum(L, 1);
  t = kb_checkdtype(L, nnum + 1, allint ? KJIT_I64 : KJIT_F64);
  if (t == KJIT_BOOL) luaL_argerror(L, nnum + 1, "bool is not a numeric dtype");
  if (top > nnum + 1) luaL_argerror(L, nnum + 2, "too many arguments");
  for (k = 0; k < nnum; k++) {
    ia[k] = allint ? lua_tointeger(L, k + 1) : 0;
    a[k] = lua_tonumber(L, k + 1);
  }
  if (nnum == 1) {               /* arange(stop) */
    ia[1] = ia[0]; a[1] = a[0];
    ia[0] = 0; a[0] = 0;
  }
  if (nnum < 3) { ia[2] = 1; a[2] = 1; }
  if (allint) {
    lua_Integer start = ia[0], stop = ia[1], step = ia[2];
    uint64_t span, ustep;
    if (step == 0) luaL_argerror(L, 3, "step must not be zero");
    if (step > 0 ? start >= stop : start <= stop) {
      n = 0;
    } else {   /* unsigned span: exact even for mininteger..maxinteger */
      span = step > 0 ? (uint64_t)stop - (uint64_t)start
                      : (uint64_t)start - (uint64_t)stop;
      ustep = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
      span = (span - 1) / ustep + 1;
      if (span > (uint64_t)KB_MAXBYTES) luaL_error(L, "array too large (over 2^48 bytes)");
      n = (int64_t)span;
    }
    shape[0] = n;
    b = kb_push_new(L, t, 1, shape, 0);
    {
      int64_t j;
      size_t es = dt_sizes[t];
      for (j = 0; j < n; j++)   /* start + j*step stays within [start, stop) */
        setint(t, b->data + j * (int64_t)es,
               (lua_Integer)((uint64_t)start + (uint64_t)j * (uint64_t)step));
    }
  } else {
    lua_Number start = a[0], stop = a[1], step = a[2], len;
    int64_t j;
    if (step == 0) luaL_argerror(L, 3, "step must not be zero");
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
      luaL_error(L, "arange: arguments must be finite");
    len = ceil((stop - start) / step);
    if (!(len > 0)) len = 0;
    if (len > (lua_Number)KB_MAXBYTES) luaL_error(L, "array too large (over 2^48 bytes)");
    n = (int64_t)len;
    shape[0] = n;
    b = kb_push_new(L, t, 1, shape, 0);
    for (j = 0; j < n; j++)
      setnum(L, t, b->data + j * (int64_t)dt_sizes[t],
             start + (lua_Number)j * step);
  }
  return 1;
}

/* kjit.linspace(a, b, n [, dtype]): n points from a to b inclusive; the
** last one is exactly b (as NumPy). */
static int b_linspace(lua_State *L) {
  if (krec_test(L, 4)) return krec_construct(L, "linspace", 4);   /* records */
  lua_Number a = checknum(L, 1), z = checknum(L, 2), step;
  lua_Integer n = checkint(L, 3), j;
  kjit_dtype t = kb_checkdtype(L, 4, KJIT_F64);
  int64_t shape[1];
  KBuffer *b;
  size_t es = dt_sizes[t];
  if (t == KJIT_BOOL) luaL_argerror(L, 4, "bool is not a numeric dtype");
  if (n < 0) luaL_argerror(L, 3, "number of points must not be negative");
  shape[0] = (int64_t)n;
  b = kb_push_new(L, t, 1, shape, 0);
  if (n == 0) return 1;
  step = n > 1 ? (z - a) / (lua_Number)(n - 1) : 0;
  for (j = 0; j < n; j++) {
    lua_Number v;
    if (j == n - 1 && n > 1) v = z;
    else if (isfinite(step)) v = a + (lua_Number)j * step;
    else {   /* z - a overflowed: interpolate without the difference */
      lua_Number s = (lua_Number)j / (lua_Number)(n - 1);
      v = a * (1 - s) + z * s;
    }
    setnum(L, t, b->data + j * (int64_t)es, v);
  }
  return 1;
}

/* kjit.isarray(v) */
static int b_isarray(lua_State *L) {
  lua_pushboolean(L, kb_test_raw(L, 1) != NULL ||
                     luaL_testudata(L, 1, KREC_ARRAY_MT) != NULL);   /* records */
  return 1;
}

/* ------------------------------------------------------------------ */
/* registration                                                        */
/* ------------------------------------------------------------------ */

static const luaL_Reg methods[] = {
  {"totable", m_totable}, {"fill", m_fill}, {"copy", m_copy},
  {"reshape", m_reshape}, {"slice", m_slice}, {NULL, NULL}
};

static const char *const fields[] = { "shape", "dtype", "ndim", "size", NULL };

/* __add, __sub, __mul, __div, __mod, __pow, __idiv, __unm (the event name
** is the upvalue): kjit arrays have no arithmetic operators, and these
** exist only to say so with a hint (compiled code raises the same text,
** ir_type.c). Everything else is what Lua does without them: when the
** array is the first operand and the second has a metamethod of its own,
** that one runs (Lua would have tried it next); otherwise the error names
** the first operand unless it is a number (or a string that converts),
** as luaG_opinterror does, but without the variable's name, which only
** the VM knows. */
static int m_arith(lua_State *L) {
  const char *event = lua_tostring(L, lua_upvalueindex(1));
  int arr1 = luaL_testudata(L, 1, KB_METATABLE) != NULL;
  int arr2 = luaL_testudata(L, 2, KB_METATABLE) != NULL;
  lua_settop(L, 2);
  if (arr1 && !arr2 && luaL_getmetafield(L, 2, event) != LUA_TNIL) {
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
  }
  int bad = 1;
  if (!arr1 && (lua_type(L, 1) == LUA_TNUMBER ||
                (lua_type(L, 1) == LUA_TSTRING && lua_stringtonumber(L, lua_tostring(L, 1)) != 0)))
    bad = 2;
  if ((bad == 1 ? arr1 : arr2))
    return kb_where_error(L, "attempt to perform arithmetic on a " KB_METATABLE " value"
                       KJIT_HINT_ARRAY_ARITH);
  const char *tn = luaL_typename(L, bad);
  if (luaL_getmetafield(L, bad, "__name") == LUA_TSTRING) tn = lua_tostring(L, -1);
  return kb_where_error(L, "attempt to perform arithmetic on a %s value", tn);
}

static const char *const arith_events[] = {
  "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__idiv", "__unm", NULL
};

/* luaL_newmetatable registers the table before the caller fills it: an
** allocation failure half way would leave a half-filled metatable (no
** __index, no __gc) in the registry for the life of the state. kb_newmeta
** pushes the registered metatable `name` and returns 0, or pushes a new,
** unregistered table (with __name) and returns 1: fill it, then register
** it with kb_regmeta. */
void kb_push_shape(lua_State *L, int ndim, const int64_t *shape) {
  lua_createtable(L, ndim, 0);
  for (int k = 0; k < ndim; k++) {
    lua_pushinteger(L, (lua_Integer)shape[k]);
    lua_rawseti(L, -2, k + 1);
  }
}

int kb_newmeta(lua_State *L, const char *name) {
  if (luaL_getmetatable(L, name) != LUA_TNIL) return 0;
  lua_pop(L, 1);
  lua_createtable(L, 0, 8);
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__name");
  return 1;
}

/* Registers the (complete) metatable on the top of the stack as `name`. */
void kb_regmeta(lua_State *L, const char *name) {
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, name);
}

static void pushmeta(lua_State *L) {
  int k;
  if (!kb_newmeta(L, KB_METATABLE)) return;         /* mt */
  lua_newtable(L);                                  /* mt names */
  luaL_setfuncs(L, methods, 0);
  for (k = 0; fields[k]; k++) {
    lua_pushinteger(L, k + F_SHAPE);
    lua_setfield(L, -2, fields[k]);
  }
  lua_pushvalue(L, -1);
  kb_push_ipairs_iter(L);
  lua_pushcclosure(L, m_index, 2);
  lua_setfield(L, -3, "__index");
  lua_pushcclosure(L, m_newindex, 1);               /* takes names */
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, m_len);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, m_tostring);
  lua_setfield(L, -2, "__tostring");
  for (k = 0; arith_events[k]; k++) {
    lua_pushstring(L, arith_events[k]);
    lua_pushcclosure(L, m_arith, 1);
    lua_setfield(L, -2, arith_events[k]);
  }
  /* getmetatable(a) gives this name, not the table: scripts cannot reach
  ** the metamethods or replace them. */
  lua_pushliteral(L, KB_METATABLE);
  lua_setfield(L, -2, "__metatable");
  kb_regmeta(L, KB_METATABLE);
}

static const luaL_Reg functions[] = {
  {"zeros", b_zeros}, {"empty", b_empty}, {"full", b_full},
  {"array", b_array}, {"arange", b_arange}, {"linspace", b_linspace},
  {"isarray", b_isarray}, {NULL, NULL}
};

/* Registers the constructors, kjit.dtypes and the dtype objects kjit.f32 etc. */
void kb_open(lua_State *L) {
  int t;
  pushmeta(L);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
  {   /* the constructors compiled code calls (for the typers to recognise) */
    static const struct { const char *name; int id; } ctors[] = {
      {"zeros", B_KJIT_ZEROS}, {"empty", B_KJIT_EMPTY}, {"full", B_KJIT_FULL},
      {"array", B_KJIT_ARRAY}, {"arange", B_KJIT_ARANGE}, {"linspace", B_KJIT_LINSPACE}
    };
    for (size_t i = 0; i < sizeof ctors / sizeof ctors[0]; i++) {
      lua_getfield(L, -1, ctors[i].name);
      kir_builtin_register(L, -1, ctors[i].id);
      lua_pop(L, 1);
    }
  }
  lua_createtable(L, KJIT_NDTYPES, 0);   /* kjit.dtypes: the names, strings */
  for (t = 0; t < KJIT_NDTYPES; t++) {
    lua_pushstring(L, dt_names[t]);
    lua_rawseti(L, -2, t + 1);
  }
  lua_setfield(L, -2, "dtypes");
  kdt_open(L, -1);   /* kjit.f32 ...: dtype objects (dtype.c) */
}
