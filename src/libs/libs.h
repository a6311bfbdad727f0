/*
** libs.h: the vendor-library modules (src/libs). Each open function takes
** the kjit module table at the top of the stack, adds its table (kjit.fft,
** kjit.cuda.fft, ...) and leaves the stack as it found it. They add fields to
** tables that may exist already (luaL_getsubtable): kjit.cuda.random is
** shared with the in-kernel generator.
*/
#ifndef KJIT_LIBS_H
#define KJIT_LIBS_H

#include "lua.h"

void klib_fft_open(lua_State *L);    /* fft_lua.c: kjit.fft, kjit.cuda.fft */
void klib_rand_open(lua_State *L);   /* rand_lua.c: kjit.random, kjit.cuda.random */

#endif
