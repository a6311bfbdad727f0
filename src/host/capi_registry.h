/*
** capi_registry.h: puts the extension C API (include/kjit_ext.h) in the
** Lua registry; called by luaopen_kjit.
*/
#ifndef KJIT_CAPI_REGISTRY_H
#define KJIT_CAPI_REGISTRY_H
#include "lua.h"
void kext_open(lua_State *L);
#endif
