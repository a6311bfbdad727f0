/*
** host/chunkpolicy.h: main chunks left to the interpreter (chunkpolicy.c
** says when and why).
*/
#ifndef KJIT_HOST_CHUNKPOLICY_H
#define KJIT_HOST_CHUNKPOLICY_H
#include "lua.h"

/* Should the Lua function at idx, a main chunk whose hot loops call only
** functions that run interpreted anyway, run interpreted rather than
** compile? (Counted in kcp_chunks_interpreted when yes.) */
int kcp_runs_interpreted(lua_State *L, int idx);

/* Main chunks this process left to the interpreter (kjit.testing.callees'
** sixth value). */
extern long kcp_chunks_interpreted;

/* kjit.testing.interp_chunks([on]): whether the rule applies (default
** true; KJIT_INTERP_CHUNKS=0 in the environment: false); returns the old
** setting. Objects that asked already keep their answer. */
int kcp_l_interp_chunks(lua_State *L);
#endif
