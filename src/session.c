/*
** session.c: see session.h.
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "buffer.h"
#include "cpu.h"
#include "session.h"

#define SESSION_METATABLE "kjit.session"

void ks_release_session(lua_State *L, SessionBox *sb) {
  if (!sb->live) return;
  sb->live = 0;
  if (sb->result && sb->free_result) sb->free_result(sb->result);
  sb->result = NULL;
  if (sb->S.builder) { LLVMDisposeBuilder(sb->S.builder); sb->S.builder = NULL; }
  if (sb->M) { LLVMDisposeModule(sb->M); sb->M = NULL; }
  if (sb->ctx) { kc_dispose_context(sb->ctx); sb->ctx = NULL; }
  if (sb->C) { LLVMContextDispose(sb->C); sb->C = NULL; }
  ka_free(&sb->S.arena);
  if (sb->S.values_ref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, sb->S.values_ref);
    sb->S.values_ref = LUA_NOREF;
  }
}

static int session_gc(lua_State *L) {
  ks_release_session(L, luaL_checkudata(L, 1, SESSION_METATABLE));
  return 0;
}

SessionBox *ks_push_session(lua_State *L, int boundscheck, int fastmath, int opt) {
  SessionBox *sb = lua_newuserdatauv(L, sizeof *sb, 0);
  memset(sb, 0, sizeof *sb);
  sb->S.values_ref = LUA_NOREF;
  ka_init(&sb->S.arena);
  sb->live = 1;
  if (kb_newmeta(L, SESSION_METATABLE)) {   /* registered once complete */
    lua_pushcfunction(L, session_gc);
    lua_setfield(L, -2, "__gc");
    kb_regmeta(L, SESSION_METATABLE);
  }
  lua_setmetatable(L, -2);
  Session *S = &sb->S;
  S->L = L;
  S->boundscheck = boundscheck;
  S->fastmath = fastmath;
  S->opt = opt;
  lua_newtable(L);
  S->values_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return sb;
}
