/*
** lkjit.c: the Lua module. require "kjit" runs luaopen_kjit, which builds
** the module table from each stage's registration function:
**
**   Lua function --lua_dump--> bytecode (frontend/) -> SSA IR (ir/)
**     -> types (ir/ir_type.c) -> LLVM IR (codegen/), driven by
**     host/driver.c -> cpu.c (O3 + ORC LLJIT) -> jit.c (dispatcher, call path)
**   buffer.c: typed buffers, shared by all of the above.
*/
#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "kjit.h"
#include "host/buffer.h"
#include "host/record.h"
#include "host/jit.h"
#include "host/kernel.h"
#include "host/cudadrv.h"
#include "host/lua_modules.h"
#include "host/sysinfo.h"
#include "libs/lblas.h"
#include "host/capi_registry.h"
#include "runtime/parallel.h"
#include "host/options.h"
#include "host/signature.h"
#include "backend/llvm_load.h"
#include "common/clock.h"
#include "libs/libs.h"

#ifndef KJIT_VERSION
#define KJIT_VERSION "0.0.0"
#endif
#ifndef KJIT_LLVM_VERSION
#define KJIT_LLVM_VERSION "unknown"
#endif

/* std.load(text [, chunkname]): load() for text chunks, for the Lua parts,
** whatever the host did with the global load. */
static int private_load(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, text);
  if (luaL_loadbufferx(L, text, len, name, "t") != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

/* Weak: a host whose Lua was built without the standard libraries still
** loads kjit (the Lua parts then use whatever the host opened). */
#pragma weak luaopen_debug
#pragma weak luaopen_table
#pragma weak luaopen_math
#pragma weak luaopen_string

/* Pushes the table of libraries the Lua parts use, their own copies: a
** host may leave debug (or others) out of its scripts' reach, and the Lua
** parts must neither fail without them nor hand them out. luaopen_debug,
** luaopen_table and luaopen_math only build a table. luaopen_string also
** sets the string metatable (the Lua parts call string methods), so the
** host's own string library is used when it has one; a host without one
** gets strings with methods (string.* itself stays out of its globals). */
static void push_private_libs(lua_State *L) {
  static const struct { const char *name; lua_CFunction open; } libs[] = {
    { LUA_DBLIBNAME, luaopen_debug }, { LUA_TABLIBNAME, luaopen_table },
    { LUA_MATHLIBNAME, luaopen_math }, { LUA_STRLIBNAME, luaopen_string },
  };
  lua_createtable(L, 0, 8);
  int t = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    int is_string = libs[i].open == luaopen_string;
    lua_getfield(L, t + 1, libs[i].name);            /* the host's, if opened */
    if (lua_istable(L, -1) && is_string) { lua_setfield(L, t, libs[i].name); continue; }
    lua_pop(L, 1);
    if (libs[i].open == NULL) {                       /* not linked in: the host's or none */
      lua_getfield(L, t + 1, libs[i].name);
      lua_setfield(L, t, libs[i].name);
      continue;
    }
    lua_pushcfunction(L, libs[i].open);
    lua_call(L, 0, 1);
    lua_setfield(L, t, libs[i].name);
  }
  lua_pop(L, 1);   /* package.loaded */
  lua_pushcfunction(L, private_load);
  lua_setfield(L, t, "load");
  ksig_push_lua(L, t);   /* std.signature, std.layout: the one signature grammar */
  kopt_push_lua(L, t);   /* std.options: the one option parser */
}

/* Loaded into Lua 5.1, 5.3 or LuaJIT, the Lua API functions new in 5.4 are
** NULL (CMakeLists.txt makes every Lua API reference weak): refuse with
** a message instead of crashing. lua_pushstring and lua_error have the same
** ABI in every Lua since 5.1, so the message reaches the user's require. */
#pragma weak lua_newuserdatauv
static int not_lua54(lua_State *L) {
  void *(*volatile newud)(lua_State *, size_t, int) = lua_newuserdatauv;
  if (newud) return 0;
  lua_pushstring(L, "kjit needs Lua 5.4: this kjit.so was loaded by another Lua "
                    "(5.1, 5.2, 5.3 or LuaJIT); run your script with lua5.4");
  return 1;
}

/* kjit.load_llvm(): loads the LLVM library now rather than on the first
** compile (backend/llvm_load.h); returns the milliseconds that took, 0
** when it was loaded already (or is linked into kjit). A program may call
** it where a pause does not matter (a loading screen), so that its first
** compile is only the compile. */
static int l_load_llvm(lua_State *L) {
  double t0 = k_now_ms();
  int was = kjit_llvm_loaded();
  const char *err = NULL;
  if (kjit_llvm_load(&err) != 0) return luaL_error(L, "kjit: %s", err);
  lua_pushnumber(L, was ? 0.0 : k_now_ms() - t0);
  return 1;
}

KJIT_API int luaopen_kjit(lua_State *L) {
  if (not_lua54(L)) return lua_error(L);
  luaL_checkversion(L);
  lua_newtable(L);
  kb_open(L);
  krec_open(L);
  kd_open(L);
  kp_open(L);
  lua_newtable(L); kcu_open(L); kk_open(L); lua_setfield(L, -2, "cuda");
  kbl_open(L);   /* kjit.blas, kjit.cuda.blas */
  klib_fft_open(L);    /* kjit.fft, kjit.cuda.fft */
  klib_rand_open(L);   /* kjit.random, kjit.cuda.random */
  lua_pushliteral(L, KJIT_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushliteral(L, KJIT_LLVM_VERSION);
  lua_setfield(L, -2, "llvm_version");
  lua_pushcfunction(L, l_load_llvm);
  lua_setfield(L, -2, "load_llvm");
  ksys_open(L);
  kext_open(L);   /* the C API of extension modules (kjit_ext.h) */
  /* the Lua-written parts add their functions to the table */
  int kidx = lua_gettop(L);
  push_private_libs(L);
  for (const KLuaModule *m = kjit_lua_modules; m->name; m++) {
    char chunkname[64];
    snprintf(chunkname, sizeof chunkname, "=%s", m->name);
    /* the precompiled chunk if this Lua takes it (same format), else the source */
    if (m->bytecode == NULL ||
        luaL_loadbufferx(L, m->bytecode, m->bclen, chunkname, "b") != LUA_OK) {
      if (m->bytecode) lua_pop(L, 1);
      if (luaL_loadbuffer(L, m->source, m->len, chunkname) != LUA_OK) return lua_error(L);
    }
    lua_pushvalue(L, kidx);
    lua_pushvalue(L, kidx + 1);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK)
      return luaL_error(L, "kjit: cannot load its part %s (kjit needs Lua's base library): %s",
                        m->name, lua_tostring(L, -1));
  }
  lua_settop(L, kidx);
  return 1;
}
