/*
** lua_modules.h: the Lua-written parts of kjit (the .lua files of lua/kjit), compiled
** into the library as strings by tools/embed_lua.lua. Each is run on the
** first use of a name it provides (src/host/lua_parts.c), with the module
** table as its argument; it adds its functions to kjit's tables
** (kjit.vectorize, kjit.cuda.reduce ...).
*/
#ifndef KJIT_LUA_MODULES_H
#define KJIT_LUA_MODULES_H

#include <stddef.h>

typedef struct KLuaModule {
  const char *name;      /* "kjit/ufunc.lua": the chunk name in messages */
  const char *provides;  /* the names it adds, space-separated, from its
                            "-- provides:" lines: "kjit.vectorize kjit.guvectorize" */
  const char *source;
  size_t len;
  const char *bytecode;  /* the precompiled chunk, or NULL (tools/embed_lua.lua) */
  size_t bclen;
} KLuaModule;

/* Ends with a { NULL } entry. Defined in the generated lua_modules.c. */
extern const KLuaModule kjit_lua_modules[];

#endif
