/*
** lkjit.c: the Lua module. require "kjit" runs luaopen_kjit, which builds
** the module table from each stage's registration function:
**
**   Lua function --debug.getinfo--> source text
**     -> lex.c/parse.c (AST) -> resolve.c -> types.c -> codegen.c (LLVM IR)
**     -> cpu.c (O3 + ORC LLJIT) -> jit.c (dispatcher, call path)
**   buffer.c: typed buffers, shared by all of the above.
*/
#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "buffer.h"
#include "jit.h"
#include "kernel.h"
#include "cudadrv.h"
#include "lua_modules.h"
#include "parallel.h"

#ifndef KJIT_VERSION
#define KJIT_VERSION "0.0.0"
#endif
#ifndef KJIT_LLVM_VERSION
#define KJIT_LLVM_VERSION "unknown"
#endif

KJIT_API int luaopen_kjit(lua_State *L) {
  luaL_checkversion(L);
  lua_newtable(L);
  kb_open(L);
  kd_open(L);
  kp_open(L);
  lua_newtable(L); kcu_open(L); kk_open(L); lua_setfield(L, -2, "cuda");
  lua_pushliteral(L, KJIT_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushliteral(L, KJIT_LLVM_VERSION);
  lua_setfield(L, -2, "llvm_version");
  /* the Lua-written parts add their functions to the table */
  for (const KLuaModule *m = kjit_lua_modules; m->name; m++) {
    char chunkname[64];
    snprintf(chunkname, sizeof chunkname, "=%s", m->name);
    if (luaL_loadbuffer(L, m->source, m->len, chunkname) != LUA_OK) return lua_error(L);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 0);
  }
  return 1;
}
