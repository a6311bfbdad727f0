/*
** runtime/luatfor.h: a generic for's iterator call in compiled code
** (luatfor.c).
*/
#ifndef KJIT_RUNTIME_LUATFOR_H
#define KJIT_RUNTIME_LUATFOR_H
#include <stdint.h>
#include "lua.h"
#include "runtime/luacall.h"

int32_t kjit_lc_tforcall(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags,
                         int64_t *bits, int32_t *slots, int32_t nres, int32_t dst, KlcSite *nsite,
                         KErr *err);
void kjit_lc_tfor_register(void);
#endif
