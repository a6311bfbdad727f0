/*
** session.c: see session.h.
*/
#include <string.h>
#include <stdlib.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "backend/cpu.h"
#include "host/session.h"

#define SESSION_METATABLE "kjit.session"

void ks_release_session(lua_State *L, SessionBox *sb) {
  (void)L;   /* nothing of the session lives in the registry */
  if (!sb->live) return;
  sb->live = 0;
  if (sb->result && sb->free_result) sb->free_result(sb->result);
  sb->result = NULL;
  if (sb->M) { LLVMDisposeModule(sb->M); sb->M = NULL; }
  if (sb->ctx) { kc_dispose_context(sb->ctx); sb->ctx = NULL; }
  if (sb->C) { LLVMContextDispose(sb->C); sb->C = NULL; }
  ka_free(&sb->S.arena);
}

static int session_gc(lua_State *L) {
  ks_release_session(L, luaL_checkudata(L, 1, SESSION_METATABLE));
  return 0;
}

SessionBox *ks_push_session(lua_State *L, int boundscheck, int fastmath, int opt) {
  SessionBox *sb = lua_newuserdatauv(L, sizeof *sb, 0);
  memset(sb, 0, sizeof *sb);
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
  return sb;
}

void *ks_session_result(lua_State *L, SessionBox *sb, size_t size, void (*free_result)(void *)) {
  void *r = calloc(1, size);
  if (r == NULL) { ks_release_session(L, sb); luaL_error(L, "not enough memory"); }
  sb->result = r;
  sb->free_result = free_result;
  return r;
}
