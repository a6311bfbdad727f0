/*
** runtime/luastring.h: helpers for Lua values other than table access
** (runtime/luastring.c).
*/
#ifndef KJIT_RUNTIME_LUASTRING_H
#define KJIT_RUNTIME_LUASTRING_H
#include <stdint.h>
#include "lua.h"

int32_t kjit_ls_tobool(lua_State *L, int32_t slot);
int32_t kjit_ls_arraykey(lua_State *L, int32_t slot, int32_t store, const char *chunk,
                         int32_t line, int64_t *out);
int32_t kjit_ls_concatok(lua_State *L, int32_t slot);
int32_t kjit_ls_concatok2(lua_State *L, int32_t slot, int32_t p);
int32_t kjit_ls_strnum(lua_State *L, int32_t slot);
int32_t kjit_ls_hasconcat(lua_State *L, int32_t slot);
int32_t kjit_ls_arith(lua_State *L, int32_t op, int32_t a, int32_t b, int32_t dst, int64_t *out,
                      const char *chunk, int32_t line);
/* Registers the helpers' names for the JIT linker (once per process). */
void kjit_ls_register(void);

#endif
