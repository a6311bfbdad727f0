/*
** runtime/luayield.c: a function value that compiled code calls and that
** yields, located (issue 29 item 6, refuse3).
**
** Compiled code calls a function value with lua_call from its C frames
** (runtime/luacall.c), so the call cannot yield: there is no Lua frame to
** come back to, only native frames that a yield would unwind. Inside a
** coroutine, a yield in such a callee therefore fails with the VM's
** "attempt to yield across a C-call boundary", raised from inside
** coroutine.yield with no position at all. Interpreted, the same yield
** succeeds; that cannot be had (supporting it would need compiled frames
** that can be suspended), so the error stays, but it now names the user's
** line of the call, and says what to do instead.
**
** Design decisions:
**   - Only where a yield could succeed interpreted: lua_isyieldable(L) is
**     true only inside a coroutine, outside any non-yieldable C call.
**     There the call runs under lua_pcall (no message handler) and any
**     error is raised again as it is, except the VM's yield error, whose
**     message gets the call's position and the advice. Everywhere else
**     (the main thread: most programs) it is the plain lua_call, at no
**     cost. (The price inside coroutines: an error a callee raises is
**     raised again from compiled code's frame, so an xpcall handler around
**     it sees the stack from there; its value is the same.)
**   - The position is the trampoline's (ir_type.c trampoline: its call
**     stands on the call's line of the caller's chunk): its highest active
**     line and its chunk name, read only when the error happens.
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "runtime/luacall.h"

static const char YIELD_MSG[] = "attempt to yield across a C-call boundary";

/* "chunk:line: " of the trampoline at registry reference tramp, pushed. */
static void push_where(lua_State *L, int32_t tramp) {
  lua_Debug ar;
  int line = 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, tramp);
  if (lua_type(L, -1) != LUA_TFUNCTION || !lua_getinfo(L, ">SL", &ar)) {
    lua_settop(L, lua_gettop(L) - 1);
    lua_pushliteral(L, "");
    return;
  }
  lua_pushnil(L);   /* the active lines (a set): the call's is the highest */
  while (lua_next(L, -2)) {
    if (lua_isinteger(L, -2) && lua_tointeger(L, -2) > line) line = (int)lua_tointeger(L, -2);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_pushfstring(L, "%s:%d: ", ar.short_src, line);
}

void kjit_lc_callk(lua_State *L, int nargs, int nresults, int32_t tramp) {
  if (!lua_isyieldable(L)) {
    lua_call(L, nargs, nresults);
    return;
  }
  if (lua_pcall(L, nargs, nresults, 0) == LUA_OK) return;
  if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), YIELD_MSG) == 0) {
    push_where(L, tramp);
    lua_pushfstring(L, "%s (a function that compiled code calls cannot yield: yield in an "
                       "interpreted function, between calls of the compiled one)", YIELD_MSG);
    lua_concat(L, 2);
  }
  lua_error(L);
}
