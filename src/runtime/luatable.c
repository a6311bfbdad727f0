/*
** runtime/luatable.c: fast paths for compiled code's table reads and writes
** over Lua 5.4's own table layout (STUB: every call takes the API path).
*/
#include "runtime/luavalue.h"

int kjit_lt_geti(lua_State *L, int32_t t, int64_t i, int64_t *out, int32_t *tag) {
  (void)L; (void)t; (void)i; (void)out; (void)tag; return 0;
}
int kjit_lt_getfield(lua_State *L, int32_t t, const char *k, int64_t *out, int32_t *tag) {
  (void)L; (void)t; (void)k; (void)out; (void)tag; return 0;
}
int kjit_lt_seti(lua_State *L, int32_t t, int64_t i, int32_t vtag, int64_t vbits) {
  (void)L; (void)t; (void)i; (void)vtag; (void)vbits; return 0;
}
int kjit_lt_setfield(lua_State *L, int32_t t, const char *k, int32_t vtag, int64_t vbits) {
  (void)L; (void)t; (void)k; (void)vtag; (void)vbits; return 0;
}
int kjit_lt_enabled(void) { return 0; }
