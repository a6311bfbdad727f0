/*
** host/sysinfo.h: kjit.sysinfo, the system report (sysinfo.c).
*/
#ifndef KJIT_SYSINFO_H
#define KJIT_SYSINFO_H
#include "lua.h"

/* Adds sysinfo to the module table on the top of the stack. */
void ksys_open(lua_State *L);

#endif
