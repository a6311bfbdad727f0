/*
** runtime/luacell.h: cells for locals shared with function literals and
** assigned afterwards (luacell.c).
*/
#ifndef KJIT_RUNTIME_LUACELL_H
#define KJIT_RUNTIME_LUACELL_H
#include <stdint.h>
#include "lua.h"

/* A new cell holding the value (tag, bits, slot: luavalue.h) into slot dst. */
void kjit_lc_newcell(lua_State *L, int32_t tag, int64_t bits, int32_t slot, int32_t dst);
/* The variable of the cell in slot cell, as a read's result (kjit_lv_take). */
int32_t kjit_lc_getcell(lua_State *L, int32_t cell, int32_t dst, int64_t *out);
void kjit_lc_setcell(lua_State *L, int32_t cell, int32_t tag, int64_t bits, int32_t slot);
void kjit_lc_cell_register(void);
#endif
