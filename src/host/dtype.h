/*
** dtype.h: the dtype objects kjit.f32 ... (dtype.c): dtype names that
** are callable casts.
*/
#ifndef KJIT_DTYPE_H
#define KJIT_DTYPE_H
#include "lua.h"

/* Sets kjit.i8 ... kjit.bool in the table at kjit_idx. */
void kdt_open(lua_State *L, int kjit_idx);

#endif
