/*
** interop.c: kjit.cuda next to CUDA C code in the same process.
**
**   f = cuda.declare_device(name, signature [, {sim = fn}])
**       an external device function (common/cuda_extern.h: numba-cuda's
**       calling convention), called from cuda.jit kernels given
**       link = {"file.cu" | "file.ptx"} (host/kernel.c links them)
**   d:device_ptr()              the device address of d's first element
**   d:cuda_array_interface()    numba's __cuda_array_interface__ (v3) as a table
**   cuda.from_device_ptr(ptr, shape, dtype [, {owner = obj}])
**   cuda.from_cuda_array_interface(cai [, {owner = obj}])
**       a device array over memory kjit did not allocate and never frees
**   kjit_device_array_ptr, kjit_push_device_array_wrap (include/kjit.h)
**       the same from C
**
** Decisions:
**  - Declared functions and the simulator. The simulator runs kernels as
**    CPU code and cannot run PTX, so a declaration may carry `sim`, a plain
**    Lua function doing what the device code does. Wherever the code does
**    not run on the GPU (the simulators, kjit.jit, the interpreter) a call
**    runs `sim`, compiled like any function a kernel calls; without one the
**    call raises there when it runs (compiled as interpreted: the same
**    message at the same line, and code that never makes the call never
**    fails), saying how to give one.
**  - Foreign pointers in the simulator: simulator "device" memory is host
**    memory, so a simulator device pointer is a host address; from Lua,
**    cuda.from_device_ptr accepts one only inside a simulator device array
**    given as its owner (an arbitrary address could crash the host, which
**    no script may do). On the GPU any address is accepted: a bad one is a
**    CUDA error (an illegal address), not a crash of the host. The C API is
**    the trusted host's: it wraps any address in both modes.
*/
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "common/cuda_extern.h"
#include "host/buffer.h"
#include "ir/ir_builtins.h"
#include "host/cudadrv.h"
#include "host/signature.h"

/* ---- cuda.declare_device -------------------------------------------------------------- */

static int valid_symbol(const char *s) {
  if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_' || *s == '$')) return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '$'))
      return 0;
  return 1;
}

/* numba-cuda's CPointer(float32) reads as float32[:] (a pointer to the
** first element of an array). */
static void rewrite_cpointer(const char *in, char *out, size_t n) {
  size_t o = 0;
  while (*in && o + 1 < n) {
    if (strncmp(in, "CPointer(", 9) == 0) {
      const char *close = strchr(in + 9, ')');
      if (close && o + (size_t)(close - in) + 4 < n) {
        size_t len = (size_t)(close - (in + 9));
        memcpy(out + o, in + 9, len);
        o += len;
        memcpy(out + o, "[:]", 3);
        o += 3;
        in = close + 1;
        continue;
      }
    }
    out[o++] = *in++;
  }
  out[o] = 0;
}

static int extern_dtype(const KSigItem *it) {
  return it->dtype >= 0 && it->dtype != KJIT_BOOL && it->dtype != KJIT_F16 &&
         it->dtype < KJIT_NDTYPES ? it->dtype : -1;
}

/* cuda.declare_device(name, signature [, {sim = fn}]) */
static int l_declare_device(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *sig = luaL_checkstring(L, 2);
  if (!valid_symbol(name) || strlen(name) >= KEXT_NAMELEN)
    return luaL_error(L, "cuda.declare_device: bad function name '%s' (the device function's "
                      "symbol: letters, digits and '_', as declared extern \"C\")", name);
  if (strncmp(name, "kjit_", 5) == 0 || strncmp(name, "__nv_", 5) == 0)
    return luaL_error(L, "cuda.declare_device: the name '%s' is reserved (kjit's own and "
                      "libdevice's functions start with kjit_ and __nv_)", name);
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      if (lua_type(L, -2) != LUA_TSTRING || strcmp(lua_tostring(L, -2), "sim") != 0)
        return luaL_error(L, "cuda.declare_device: unknown option '%s' (known: sim)",
                          lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?");
      if (!lua_isfunction(L, -1) || lua_iscfunction(L, -1))
        return luaL_error(L, "cuda.declare_device: option 'sim' must be a Lua function, got %s",
                          luaL_typename(L, -1));
      lua_pop(L, 1);
    }
  }
  char text[512], err[256];
  rewrite_cpointer(sig, text, sizeof text);
  KSig s;
  if (ksig_parse(text, KSIG_JIT, &s, err, sizeof err) != 0)
    return luaL_error(L, "cuda.declare_device: bad signature '%s': %s", sig, err);
  if (!s.has_ret)
    return luaL_error(L, "cuda.declare_device: bad signature '%s': the result type comes first, "
                      "as in 'float32(float32, float32)' ('void(...)' for none)", sig);
  KExtern *e = lua_newuserdatauv(L, sizeof *e, 1);
  memset(e, 0, sizeof *e);
  snprintf(e->name, sizeof e->name, "%s", name);
  snprintf(e->sig, sizeof e->sig, "%s", sig);
  if (strcmp(s.ret.name, "void") == 0 || strcmp(s.ret.name, "none") == 0) e->ret = -1;
  else if (s.ret.ndim == 0 && (e->ret = extern_dtype(&s.ret)) >= 0) {}
  else
    return luaL_error(L, "cuda.declare_device: bad signature '%s': the result must be a number "
                      "type (int32, float32, ...) or void, not '%s%s'", sig, s.ret.name,
                      s.ret.ndim ? "[...]" : "");
  e->nargs = s.nargs;
  for (int i = 0; i < s.nargs; i++) {
    int d = extern_dtype(&s.args[i]);
    if (d < 0)
      return luaL_error(L, "cuda.declare_device: bad signature '%s': argument #%d: '%s' is not "
                        "a number type (int8 ... uint64, float32, float64, or an array of "
                        "them for a pointer)", sig, i + 1, s.args[i].name);
    e->args[i] = (int8_t)d;
    e->ptr[i] = s.args[i].ndim > 0;
  }
  luaL_setmetatable(L, KEXT_MT);
  if (!lua_isnoneornil(L, 3)) {
    lua_getfield(L, 3, "sim");
    lua_setiuservalue(L, -2, 1);
  }
  return 1;
}

/* Called outside a GPU kernel (the interpreter, an interpreted simulated
** kernel): its sim implementation. */
static int extern_call(lua_State *L) {
  KExtern *e = luaL_checkudata(L, 1, KEXT_MT);
  if (lua_getiuservalue(L, 1, 1) != LUA_TFUNCTION)
    return luaL_error(L, "external device function '%s' (cuda.declare_device) runs only in "
                      "kernels compiled for the GPU; give the declaration a Lua "
                      "implementation to run it in the simulator and on the CPU: "
                      "cuda.declare_device(name, signature, {sim = function(...) ... end})",
                      e->name);
  lua_replace(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

static int extern_tostring(lua_State *L) {
  KExtern *e = luaL_checkudata(L, 1, KEXT_MT);
  lua_pushfstring(L, "cuda.declare_device('%s', '%s')", e->name, e->sig);
  return 1;
}

/* f.name, f.signature, f.sim */
static int extern_index(lua_State *L) {
  KExtern *e = luaL_checkudata(L, 1, KEXT_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "name") == 0) lua_pushstring(L, e->name);
  else if (strcmp(k, "signature") == 0) lua_pushstring(L, e->sig);
  else if (strcmp(k, "sim") == 0) lua_getiuservalue(L, 1, 1);
  else lua_pushnil(L);
  return 1;
}

/* ---- raw pointers ------------------------------------------------------------------------ */

static int d_device_ptr(lua_State *L) {
  KDevArray *d = kcu_check_devarray(L, 1);
  lua_pushinteger(L, (lua_Integer)d->ptr);
  return 1;
}

/* NumPy's typestr of a dtype ("<f4"); records: "|V<size>". */
static void push_typestr(lua_State *L, const KDevArray *d) {
  if (d->record) { lua_pushfstring(L, "|V%d", (int)kcu_elem_size(d)); return; }
  static const char kind[] = { 'i', 'u', 'i', 'u', 'i', 'u', 'i', 'u', 'f', 'f', 'b', 'f' };
  size_t sz = kjit_dtype_size(d->dtype);
  lua_pushfstring(L, "%c%c%d", sz == 1 ? '|' : '<', kind[d->dtype], (int)sz);
}

/* d:cuda_array_interface() -> {shape = {...}, typestr = "<f4", data = {ptr, false},
** strides = nil (C order), version = 3} */
static int d_cai(lua_State *L) {
  KDevArray *d = kcu_check_devarray(L, 1);
  lua_createtable(L, 0, 4);
  kb_push_shape(L, d->ndim, d->shape);
  lua_setfield(L, -2, "shape");
  push_typestr(L, d);
  lua_setfield(L, -2, "typestr");
  lua_createtable(L, 2, 0);
  lua_pushinteger(L, (lua_Integer)d->ptr);
  lua_rawseti(L, -2, 1);
  lua_pushboolean(L, 0);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, "data");
  lua_pushinteger(L, 3);
  lua_setfield(L, -2, "version");
  return 1;
}

/* The dtype at idx: "f32", an alias such as "float32", or a typestr "<f4". */
static kjit_dtype check_dtype(lua_State *L, int idx) {
  int d = kir_dtype_of(L, idx);   /* kjit.f32 ... (host/dtype.c) */
  if (d >= 0) return (kjit_dtype)d;
  const char *s = luaL_checkstring(L, idx);
  const char *canon = ksig_dtype_name(s);
  if (canon) s = canon;
  if ((s[0] == '<' || s[0] == '|' || s[0] == '=' || s[0] == '>') && s[1] && s[2]) {
    static const char *const ts[] = { "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8",
                                      "b1", "f2" };   /* kjit.h's order */
    for (int t = 0; t < KJIT_NDTYPES && s[0] != '>'; t++)   /* not big-endian */
      if (strcmp(s + 1, ts[t]) == 0) return (kjit_dtype)t;
    luaL_error(L, "kjit.cuda: unsupported typestr '%s' (little-endian integers, floats, bool)", s);
  }
  lua_pushstring(L, s);
  lua_replace(L, idx);
  return kb_checkdtype(L, idx, KJIT_F64);
}

/* Wraps ptr with the shape at shape_idx and dtype t; opts at opts_idx
** ({owner = obj}, may be none). */
static int wrap(lua_State *L, lua_Integer ptr, int shape_idx, kjit_dtype t, int opts_idx) {
  int64_t shape[KJIT_MAXDIMS];
  int ndim = kb_checkshape(L, shape_idx, shape);
  int owner = 0;
  if (!lua_isnoneornil(L, opts_idx)) {
    luaL_checktype(L, opts_idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, opts_idx)) {
      if (lua_type(L, -2) != LUA_TSTRING || strcmp(lua_tostring(L, -2), "owner") != 0)
        return luaL_error(L, "kjit.cuda: unknown option '%s' (known: owner)",
                          lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?");
      lua_pop(L, 1);
    }
    lua_getfield(L, opts_idx, "owner");
    owner = lua_gettop(L);
  }
  if (ptr < 0) return luaL_error(L, "kjit.cuda: negative device pointer");
  if (ptr == 0) {   /* NULL: only for an empty array */
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    if (n != 0) return luaL_error(L, "kjit.cuda: null device pointer for a non-empty array");
  }
  KDevArray *d = kcu_push_devwrap(L, (KCuDevPtr)ptr, t, ndim, shape);
  if (d->sim && d->bytes > 0) {   /* a host address: only inside its owner's memory */
    KDevArray *o = owner ? kcu_test_devarray(L, owner) : NULL;
    if (o) kcu_check_usable(L, o, 0);
    if (o == NULL || !o->sim || (KCuDevPtr)ptr < o->ptr || (KCuDevPtr)ptr - o->ptr > o->bytes ||
        d->bytes > o->bytes - ((KCuDevPtr)ptr - o->ptr))
      return luaL_error(L, "kjit.cuda: in the simulator a device pointer is a host address: "
                        "wrap one only inside the device array it comes from, given as "
                        "{owner = d} (%s)", o ? "this one lies outside it" : "no owner given");
  }
  if (ptr % (lua_Integer)kjit_dtype_size(t) != 0)
    return luaL_error(L, "kjit.cuda: device pointer 0x%p is not aligned to its %d-byte elements",
                      (void *)(uintptr_t)ptr, (int)kjit_dtype_size(t));
  if (owner) {
    lua_pushvalue(L, owner);
    lua_setiuservalue(L, -2, 1);
  }
  return 1;
}

/* cuda.from_device_ptr(ptr, shape, dtype [, {owner = obj}]) */
static int l_from_device_ptr(lua_State *L) {
  lua_Integer p = luaL_checkinteger(L, 1);
  kjit_dtype t = check_dtype(L, 3);
  return wrap(L, p, 2, t, 4);
}

/* cuda.from_cuda_array_interface(cai [, {owner = obj}]) */
static int l_from_cai(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_getfield(L, 1, "data") != LUA_TTABLE)
    return luaL_error(L, "kjit.cuda: cuda array interface: 'data' must be {ptr, readonly}");
  lua_rawgeti(L, -1, 1);
  int ok;
  lua_Integer p = lua_tointegerx(L, -1, &ok);
  if (!ok) return luaL_error(L, "kjit.cuda: cuda array interface: data[1] must be an integer");
  lua_pop(L, 2);
  lua_getfield(L, 1, "shape");     /* 3 */
  lua_getfield(L, 1, "typestr");   /* 4 */
  if (!lua_isstring(L, 4)) return luaL_error(L, "kjit.cuda: cuda array interface: no typestr");
  kjit_dtype t = check_dtype(L, 4);
  if (lua_getfield(L, 1, "strides") != LUA_TNIL) {   /* 5: only C order */
    int64_t shape[KJIT_MAXDIMS];
    int nd = kb_checkshape(L, 3, shape);
    int64_t want = (int64_t)kjit_dtype_size(t);
    for (int k = nd - 1; k >= 0; k--) {
      lua_geti(L, 5, k + 1);
      int64_t s = lua_tointeger(L, -1);
      lua_pop(L, 1);
      if (shape[k] > 1 && s != want)
        return luaL_error(L, "kjit.cuda: cuda array interface: strides are not C-contiguous "
                          "(kjit device arrays are; copy the array first)");
      want *= shape[k];
    }
  }
  lua_pop(L, 1);
  lua_pushvalue(L, 2);   /* 5: the options */
  return wrap(L, p, 3, t, 5);
}

const luaL_Reg kcu_interop_methods[] = {
  {"device_ptr", d_device_ptr}, {"cuda_array_interface", d_cai}, {NULL, NULL}
};

void kcu_open_interop(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"declare_device", l_declare_device}, {"from_device_ptr", l_from_device_ptr},
    {"from_cuda_array_interface", l_from_cai}, {NULL, NULL}
  };
  luaL_setfuncs(L, fns, 0);
  if (luaL_newmetatable(L, KEXT_MT)) {
    lua_pushcfunction(L, extern_call); lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, extern_tostring); lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, extern_index); lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "kjit.cuda.extern"); lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
}

/* ---- the C API --------------------------------------------------------------------------- */

KJIT_API int kjit_device_array_ptr(lua_State *L, int idx, uint64_t *ptr, size_t *bytes) {
  KDevArray *d = kcu_test_devarray(L, idx);
  if (d == NULL || ptr == NULL || d->released || (d->owner && d->owner->released))
    return KJIT_ERRARG;
  /* made before cuda.close(): its memory went with the context */
  if (!d->foreign && kcu_stale(d->sim, d->device, d->gen)) return KJIT_ERRARG;
  *ptr = d->ptr;
  if (bytes) *bytes = d->bytes;
  return KJIT_OK;
}

typedef struct WrapArgs {
  uint64_t ptr; kjit_dtype dtype; int ndim; const int64_t *shape;
} WrapArgs;

static int wrap_protected(lua_State *L) {
  WrapArgs *a = lua_touserdata(L, 1);
  kcu_push_devwrap(L, a->ptr, a->dtype, a->ndim, a->shape);
  return 1;
}

KJIT_API int kjit_push_device_array_wrap(lua_State *L, uint64_t ptr, kjit_dtype dtype, int ndim,
                                         const int64_t *shape) {
  if (shape == NULL || ndim < 1 || ndim > KJIT_MAXDIMS || kjit_dtype_size(dtype) == 0) {
    lua_pushstring(L, "kjit_push_device_array_wrap: bad dtype, ndim or shape");
    return KJIT_ERRARG;
  }
  int empty = 0;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] < 0) {
      lua_pushstring(L, "kjit_push_device_array_wrap: negative extent");
      return KJIT_ERRARG;
    }
    empty |= shape[k] == 0;
  }
  if (ptr == 0 && !empty) {
    lua_pushstring(L, "kjit_push_device_array_wrap: null pointer for a non-empty array");
    return KJIT_ERRARG;
  }
  WrapArgs a = { ptr, dtype, ndim, shape };
  lua_pushcfunction(L, wrap_protected);
  lua_pushlightuserdata(L, &a);
  int rc = lua_pcall(L, 1, 1, 0);
  return rc == LUA_OK ? KJIT_OK : rc == LUA_ERRMEM ? KJIT_ERRMEM : KJIT_ERRARG;
}
