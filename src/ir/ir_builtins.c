/*
** ir_builtins.c: the built-ins' names, and the registry table by which
** the typers recognise the Lua values of the host's built-ins.
*/
#include "lua.h"
#include "lauxlib.h"
#include "common/compile.h"
#include "ir/ir_builtins.h"

static const char *const names[B__COUNT] = {
#define KIR_NAME(id, name, lo, hi, rule) [B_##id] = name,
  KTY_BUILTINS(KIR_NAME)
#undef KIR_NAME
};

/* Which argument of math.fmod the running Lua names when neither is a
** number: lmathlib.c checks both (luaL_checknumber(L, 1), (L, 2)) as the
** arguments of one C call, whose evaluation order C leaves open (Debian's
** GCC-built lua5.4 names #2, a clang build #1). The host probes it when
** kjit is opened (host/driver.c); every state of a process shares one
** lmathlib, so one value serves them all. Not in the disk cache's key: a cached
** object used by a differently built Lua of the same version names the
** other argument in this one message. */
int kjit_fmod_checks_arg2_first;

const char *kir_builtin_name(int id) {
  if (id < 0 || id >= B__COUNT || names[id] == NULL) return "?";
  return names[id];
}

/* The registry key of the value -> id table. */
static const char builtins_key[] = "kjit.builtins";

void kir_builtin_register(lua_State *L, int idx, int id) {
  idx = lua_absindex(L, idx);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, builtins_key);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, id);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

int kir_builtin_of(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, LUA_REGISTRYINDEX, builtins_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    return -1;
  }
  lua_pushvalue(L, idx);
  int id = lua_rawget(L, -2) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : -1;
  lua_pop(L, 2);
  return id;
}

int kir_dtype_of(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return -1;
  lua_pushstring(L, KIR_DTYPE_FIELD);
  int d = lua_rawget(L, -2) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : -1;
  lua_pop(L, 2);
  return d;
}

int kir_dtype_or_cast_of(lua_State *L, int idx) {
  int d = kir_dtype_of(L, idx);
  if (d >= 0 || lua_type(L, idx) != LUA_TFUNCTION) return d;
  int id = kir_builtin_of(L, idx);
  return id >= B_CUDA_INT8 && id <= B_CUDA_FLOAT64 ? id - B_CUDA_INT8 : -1;
}
