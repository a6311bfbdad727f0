/*
** jit.h: the dispatcher. kjit.jit(fn [, opts]) objects, their
** specialization cache, and the fast call path.
*/
#ifndef KJIT_JIT_H
#define KJIT_JIT_H
#include "lua.h"

/* Registers kjit.jit and friends into the module table at the top. */
void kd_open(lua_State *L);

#endif
