/*
** dtype.c: the dtype objects kjit.i8, kjit.u8, ... kjit.f64 and kjit.bool.
**
** Each is one interned full userdata (no payload) with a metatable of its
** own, so that:
**   - it names a dtype wherever a dtype name string is accepted: the
**     metatable's KIR_DTYPE_FIELD holds the dtype, which kir_dtype_of reads
**     (kb_checkdtype, kjit.struct, the cuda constructors, and the typer for
**     compiled code: ir_type.c's const_dtype);
**   - calling it casts as numba's casts do, exactly as cuda.float32,
**     cuda.uint8 ... (kernel_intrin.c's kki_cast; compiled code calls the
**     same built-in, registered here, so it compiles as cuda.float32(x));
**   - tostring gives the name ("f32"), and so do __name (Lua's messages
**     read "attempt to index a f32 value") and '..' ("x" .. kjit.f32).
** The name strings stay the dtype's value elsewhere: a.dtype and
** kjit.dtypes are strings, so kjit.f32 ~= "f32" but
** tostring(kjit.f32) == a.dtype for an f32 array a.
**
** kjit.bool is not callable (a Lua error, interpreted and compiled): Lua
** says every number is true where numba says 0 is false, and either
** answer would surprise half of its readers; x ~= 0 and not not x say
** which one is meant.
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "common/karray.h"
#include "host/buffer.h"
#include "host/dtype.h"
#include "host/kernel_intrin.h"
#include "ir/ir_builtins.h"

/* The casts' rows follow the dtypes' order (KIR_DTYPE_CAST; bool and f16,
** after them in kjit.h, have rows of their own). */
_Static_assert(B_CUDA_FLOAT64 - B_CUDA_INT8 == KJIT_F64 - KJIT_I8 && KJIT_I8 == 0,
               "the cast rows of ir_builtins.h follow karray.h's dtypes");

/* The dtype of self (the first argument of a metamethod). */
static int self_dtype(lua_State *L, int idx) {
  int d = kir_dtype_of(L, idx);
  return d < 0 ? (int)KJIT_F64 : d;   /* only ever called on a dtype object */
}

/* Lua's name of the value's type in messages, __name first (luaL_typeerror). */
static const char *typename_of(lua_State *L, int idx) {
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) return lua_tostring(L, -1);
  if (lua_type(L, idx) == LUA_TLIGHTUSERDATA) return "light userdata";
  return luaL_typename(L, idx);
}

/* kjit.f32(x): the cast; the error names the object as it is called. */
static int dt_call(lua_State *L) {
  int d = self_dtype(L, 1);
  const char *name = kjit_dtype_name((kjit_dtype)d);
  if (d == (int)KJIT_BOOL)
    return kb_where_error(L, KIR_BOOL_NOT_CALLABLE);
  if (!lua_isnumber(L, 2))
    return kb_where_error(L, "bad argument #1 to '%s' (number expected, got %s)", name,
                          lua_isnone(L, 2) ? "no value" : typename_of(L, 2));
  kki_cast(L, KIR_DTYPE_CAST(d), 2);
  return 1;
}

static int dt_tostring(lua_State *L) {
  lua_pushstring(L, kjit_dtype_name((kjit_dtype)self_dtype(L, 1)));
  return 1;
}

/* a .. b where one of them is a dtype object: its name, the other as Lua
** concatenates it (strings and numbers; anything else is Lua's error). */
static int dt_concat(lua_State *L) {
  for (int i = 1; i <= 2; i++) {
    int d = kir_dtype_of(L, i);
    if (d >= 0) lua_pushstring(L, kjit_dtype_name((kjit_dtype)d));
    else if (lua_type(L, i) == LUA_TSTRING || lua_type(L, i) == LUA_TNUMBER) lua_pushvalue(L, i);
    else return kb_where_error(L, "attempt to concatenate a %s value", typename_of(L, i));
  }
  lua_concat(L, 2);
  return 1;
}

void kdt_open(lua_State *L, int kjit_idx) {
  kjit_idx = lua_absindex(L, kjit_idx);
  for (int d = 0; d < KJIT_NDTYPES; d++) {
    const char *name = kjit_dtype_name((kjit_dtype)d);
    lua_newuserdatauv(L, 0, 0);
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, d);
    lua_setfield(L, -2, KIR_DTYPE_FIELD);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, dt_call);
    lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, dt_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, dt_concat);
    lua_setfield(L, -2, "__concat");
    lua_pushboolean(L, 0);   /* getmetatable(kjit.f32) is false: not to be changed */
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    kir_builtin_register(L, -1, KIR_DTYPE_CAST(d));
    lua_setfield(L, kjit_idx, name);
  }
}
