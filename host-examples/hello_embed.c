/*
** hello_embed.c: the smallest C program that embeds Lua with kjit.
**
** It opens a lua_State, makes `require "kjit"` resolve to the linked-in
** library (luaL_requiref with luaopen_kjit), runs a Lua script that
** compiles a function with kjit.jit, and reads the result back with the
** plain Lua C API. Errors come back as lua_pcall status codes with a
** message, as everywhere in Lua.
**
**   build/hello_embed host-examples/hello_embed.lua
*/
#include <stdio.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

int main(int argc, char **argv) {
  const char *script = argc > 1 ? argv[1] : "host-examples/hello_embed.lua";
  lua_State *L = luaL_newstate();
  if (L == NULL) { fprintf(stderr, "cannot create a Lua state\n"); return 1; }
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);   /* package.loaded.kjit */
  lua_pop(L, 1);

  int status = luaL_loadfile(L, script);
  if (status == LUA_OK) status = lua_pcall(L, 0, 1, 0);
  if (status != LUA_OK) {
    fprintf(stderr, "hello_embed: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  /* the script returns a function: call it from C like any Lua function */
  lua_pushinteger(L, 1000);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "hello_embed: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  printf("sum of squares of 1..1000 = %.0f\n", lua_tonumber(L, -1));
  int ok = lua_tonumber(L, -1) == 333833500.0;
  lua_close(L);
  return ok ? 0 : 1;
}
