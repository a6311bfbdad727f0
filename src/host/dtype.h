/*
** dtype.h: the dtype objects kjit.f32 ... (dtype.c): dtype names that
** are callable casts.
*/
#ifndef KJIT_DTYPE_H
#define KJIT_DTYPE_H
#include "lua.h"

/* The error of kjit.bool(x), interpreted (dtype.c) and compiled (ir_type.c). */
#define KDT_BOOL_NOT_CALLABLE "kjit.bool is a dtype, not a cast (Lua counts every number " \
  "as true, numba 0 as false: write x ~= 0, or not not x)"

/* Sets kjit.i8 ... kjit.bool in the table at kjit_idx. */
void kdt_open(lua_State *L, int kjit_idx);

#endif
