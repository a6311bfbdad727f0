/*
** runtime/luaarray.h: kjit arrays held natively by compiled code made Lua
** values (luaarray.c).
*/
#ifndef KJIT_RUNTIME_LUAARRAY_H
#define KJIT_RUNTIME_LUAARRAY_H
#include <stdint.h>
#include "lua.h"
#include "runtime/alloc.h"

/* Run time (compiled code): the array at data (dtype, ndim, shape) as a
** Lua value into slot dst: its userdata, a view of it, or its block of the
** call's allocation list adopted (and anchored until the call ends); view:
** the code made it a view (a:slice, m[i]), a userdata of its own. */
void kjit_la_box(lua_State *L, int32_t dst, const char *data, int32_t dtype, int32_t ndim,
                 const int64_t *shape, int32_t view);
/* The dispatcher (host/jit.c): pushes the table of userdata anchored for
** the call of list l (1), or pushes nothing (0); drops them. */
int kjit_la_push_anchors(lua_State *L, const KAllocList *l);
void kjit_la_drop(lua_State *L, const KAllocList *l);
/* Compile time (cg_frozen.c): pins the kjit array at idx for the process
** (a frozen upvalue or global compiled code uses in place). */
void kjit_la_pin(lua_State *L, int idx);
/* Pushes the pinned array at data (dtype, ndim, shape), or a new view of
** the pinned array holding it (always where view), and returns 1; else 0. */
int kjit_la_push_pinned(lua_State *L, const char *data, int32_t dtype, int32_t ndim,
                        const int64_t *shape, int32_t view);
void kjit_la_register(void);
#endif
