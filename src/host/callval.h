/*
** host/callval.h: Lua functions called through values from compiled code
** run compiled (callval.c says how).
*/
#ifndef KJIT_HOST_CALLVAL_H
#define KJIT_HOST_CALLVAL_H
/* Installs the hook of runtime/luacall.c (once per process; idempotent). */
void kcv_init(void);
/* kjit.testing.callees([mode]): "none", "loops" (the default) or "all":
** which Lua callees of function values compile; returns the old mode,
** how many callee specializations this process has made, how many native
** calls it has made, and how many field reads compiled code left to the
** helper (luavalue.c kjit_lv_sgetfield). */
#include "lua.h"
int kcv_l_callees(lua_State *L);
/* Registry references refs[0..n) of freed code are about to be released
** (host/jit.c release_refs): those that were trampolines forget their
** call sites' options and this thread's inline-cache entries, so that a
** reference made anew with the same number starts empty. */
void kcv_refs_freed(lua_State *L, const int *refs, int n);
#endif
