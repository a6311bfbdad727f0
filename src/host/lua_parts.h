/*
** host/lua_parts.h: the Lua-written parts of kjit (the .lua files of lua/kjit), run on
** first use (lua_parts.c).
*/
#ifndef KJIT_LUA_PARTS_H
#define KJIT_LUA_PARTS_H
#include "lua.h"

/* Makes the names the parts provide loadable from the module table on the
** top of the stack (and the tables under it: kjit.cuda, kjit.cuda.random),
** and adds lua_parts to require "kjit.testing". Runs no part. */
void kpart_open(lua_State *L);

#endif
