/*
** runtime/luacell.c: cells for the locals that compiled code shares with
** its function literals and assigns after the literal is made (issue 29
** item 2; ir/ir_closure.c says which locals and why).
**
** A cell is a Lua closure whose one upvalue is the variable, made by a
** small Lua function loaded once per state (`local v = ...; return
** function() return v end`): a fresh variable each time a cell is made,
** held in a slot of the compiled frame (the GC sees it there). Compiled
** code reads and writes the variable through lua_getupvalue /
** lua_setupvalue on the cell; a literal that becomes a real Lua closure
** has its upvalue joined to the cell's (luaclosure.c, lua_upvaluejoin), so
** the function, its compiled literals and its real closures share one
** variable, as the interpreter's upvalues do. What is read is a Lua value
** (luavalue.c's rule: a number comes back as tag and bits).
*/
#include "runtime/luacell.h"
#include "runtime/luavalue.h"
#include "lauxlib.h"
#include "backend/cpu.h"

static const char maker_key = 0;   /* registry key: its address */

void kjit_lc_newcell(lua_State *L, int32_t tag, int64_t bits, int32_t slot, int32_t dst) {
  luaL_checkstack(L, 4, "kjit: making a cell");
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &maker_key) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    static const char src[] = "local v = ... return function() return v end";
    if (luaL_loadbuffer(L, src, sizeof src - 1, "=kjit cell") != LUA_OK) lua_error(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &maker_key);
  }
  kjit_lv_push(L, tag, bits, slot);
  lua_call(L, 1, 1);
  lua_replace(L, dst);
}

int32_t kjit_lc_getcell(lua_State *L, int32_t cell, int32_t dst, int64_t *out) {
  luaL_checkstack(L, 2, "kjit: reading a cell");
  if (lua_getupvalue(L, cell, 1) == NULL) lua_pushnil(L);   /* (cannot happen) */
  return kjit_lv_take(L, dst, out);
}

void kjit_lc_setcell(lua_State *L, int32_t cell, int32_t tag, int64_t bits, int32_t slot) {
  luaL_checkstack(L, 2, "kjit: writing a cell");
  kjit_lv_push(L, tag, bits, slot);
  if (lua_setupvalue(L, cell, 1) == NULL) lua_pop(L, 1);
}

void kjit_lc_cell_register(void) {
  kc_register_symbol("kjit_lc_newcell", (void *)kjit_lc_newcell);
  kc_register_symbol("kjit_lc_getcell", (void *)kjit_lc_getcell);
  kc_register_symbol("kjit_lc_setcell", (void *)kjit_lc_setcell);
}
