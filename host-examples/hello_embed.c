/*
** hello_embed.c: the smallest C program that embeds Lua with kjit.
**
** It opens kjit in its own lua_State, runs a script that returns a
** kjit.jit function, lends it a C array without copying (kjit_pusharray),
** calls it like any Lua function, then compiles it for a signature and
** calls the native code directly from C (kjit_compile, kjit_call). Errors
** come back as status codes with a message on the stack, as in Lua.
**
**   build/hello_embed host-examples/hello_embed.lua
*/
#include <stdio.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

static int fail(lua_State *L) {
  fprintf(stderr, "hello_embed: %s\n", lua_tostring(L, -1));
  lua_close(L);
  return 1;
}

int main(int argc, char **argv) {
  const char *script = argc > 1 ? argv[1] : "host-examples/hello_embed.lua";
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);   /* require "kjit" works */
  lua_pop(L, 1);
  if (luaL_dofile(L, script) != LUA_OK) return fail(L);   /* the jit function */

  double x[1000];                               /* the host's own data */
  for (int i = 0; i < 1000; i++) x[i] = i + 1;
  int64_t n = 1000;

  /* 1. Through Lua: f(x), x a kjit array over the C array (no copy). */
  lua_pushvalue(L, -1);
  if (kjit_pusharray(L, x, KJIT_F64, 1, &n, NULL, NULL, NULL) != KJIT_OK) return fail(L);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return fail(L);
  double via_lua = lua_tonumber(L, -1);
  lua_pop(L, 1);

  /* 2. Straight from C: compile for a signature, call the native code. */
  kjit_fn *f;
  if (kjit_compile(L, -1, "f64(f64[:])", &f) != KJIT_OK) return fail(L);
  kjit_array a = { x, KJIT_F64, 1, { 1000 }, NULL };   /* NULL: no record layout */
  kjit_value arg = kjit_arr(&a), result;
  if (kjit_call(L, f, &arg, 1, &result, 1) != KJIT_OK) return fail(L);

  printf("sum of squares of 1..1000 = %.0f (Lua call), %.0f (kjit_call)\n",
         via_lua, result.v.f);
  int ok = via_lua == 333833500.0 && result.v.f == 333833500.0;
  lua_close(L);
  return ok ? 0 : 1;
}
