/*
** runtime/luaclosure.h: real Lua closures for function literals that
** escape compiled code (luaclosure.c).
*/
#ifndef KJIT_RUNTIME_LUACLOSURE_H
#define KJIT_RUNTIME_LUACLOSURE_H
#include <stddef.h>
#include <stdint.h>
#include "lua.h"

/* Compile time: the maker of the prototype reached from the function on
** top of L's stack by the child indices path[0..depth) (kept on the
** stack), as a registry reference; 0 with a message in err. */
int kjit_lc_maker(lua_State *L, const int *path, int depth, char *err, size_t errsz);

/* Run time (compiled code): push the maker, push each upvalue's value,
** then make the closure into slot dst. how[u]: 0 the value pushed, 0xff
** the closure itself (pushed nil), 0xfe a cell (pushed; the upvalue joined
** to the cell's variable: luacell.c), k > 0 upvalue k of the closure at
** registry reference root (pushed nil, then joined). */
void kjit_lc_mkbegin(lua_State *L, int32_t maker);
void kjit_lc_mkpush(lua_State *L, int32_t tag, int64_t bits, int32_t slot);
void kjit_lc_mkpush_arg(lua_State *L, int32_t i, int64_t data);
void kjit_lc_mkend(lua_State *L, int32_t nup, const char *how, int32_t root, int32_t dst);
void kjit_lc_closure_register(void);
#endif
