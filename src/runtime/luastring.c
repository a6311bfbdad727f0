/*
** runtime/luastring.c: run-time helpers for Lua values that are not about
** tables: conversions of a value in a slot where compiled code needs a
** native value (a bool array's element). Same rules as luavalue.c (its
** head says how values are anchored and why helpers may longjmp): slots
** are absolute stack indices of the compiled frame, L is KErr.L.
*/
#include "runtime/luastring.h"
#include "backend/cpu.h"

/* The boolean in slot: 0 or 1; -1 when it holds another type (compiled
** code raises buffer.c's "boolean expected, got <type>"). */
int32_t kjit_ls_tobool(lua_State *L, int32_t slot) {
  if (lua_type(L, slot) != LUA_TBOOLEAN) return -1;
  return lua_toboolean(L, slot);
}

void kjit_ls_register(void) {
#define REG(f) kc_register_symbol(#f, (void *)f)
  REG(kjit_ls_tobool);
#undef REG
}
