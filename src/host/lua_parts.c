/*
** lua_parts.c: the Lua-written parts of kjit (the .lua files of lua/kjit, compiled in
** by tools/embed_lua.lua: lua_modules.h), run on first use.
**
** require "kjit" runs none of them. Each part declares the names it adds
** to kjit's tables (its "-- provides:" lines, KLuaModule.provides), and
** each table that gets such names (kjit, kjit.cuda, kjit.cuda.random) gets
** a metatable whose __index, on a name a part provides, runs that part and
** returns what it defined; the part's functions are then plain fields, so
** later reads never come here. A script pays for a part (loading it, and
** the collector walking its functions and tables at every cycle) only
** once it uses kjit.vectorize, kjit.reduce, cuda.gpus ...; a name no part
** provides reads nil at once, loading nothing.
**
** A part sees what it saw when it ran inside require "kjit":
**   - its globals (_ENV) are the base library's functions as they were
**     when kjit was opened (push_base_snapshot), so a script that later
**     removes `load` or replaces `error` does not change the parts;
**   - its own names read nil while it runs (it is marked run just before), as
**     they did then.
** std, kjit's own copies of the libraries the parts use, is made when the
** first part runs (push_private_libs).
**
** Anchoring: the parts' state table (the module table, the snapshot, std,
** which parts ran) is an upvalue of every __index closure, which the
** metatables of kjit's tables hold; package.loaded.kjit holds those.
*/
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "host/lua_parts.h"
#include "host/lua_modules.h"
#include "host/options.h"
#include "host/signature.h"

/* ---- std: the libraries the parts use ----------------------------------- */

/* std.load(text [, chunkname]): load() for text chunks, for the Lua parts,
** whatever the host did with the global load. */
static int private_load(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, text);
  if (luaL_loadbufferx(L, text, len, name, "t") != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

/* Weak: a host whose Lua was built without the standard libraries still
** loads kjit (the Lua parts then use whatever the host opened). */
#pragma weak luaopen_debug
#pragma weak luaopen_table
#pragma weak luaopen_math
#pragma weak luaopen_string

/* Pushes the table of libraries the Lua parts use, their own copies: a
** host may leave debug (or others) out of its scripts' reach, and the Lua
** parts must neither fail without them nor hand them out. luaopen_debug,
** luaopen_table and luaopen_math only build a table. luaopen_string also
** sets the string metatable (the Lua parts call string methods), so the
** host's own string library is used when it has one; a host without one
** gets strings with methods once a part runs (string.* itself stays out
** of its globals). */
static void push_private_libs(lua_State *L) {
  static const struct { const char *name; lua_CFunction open; } libs[] = {
    { LUA_DBLIBNAME, luaopen_debug }, { LUA_TABLIBNAME, luaopen_table },
    { LUA_MATHLIBNAME, luaopen_math }, { LUA_STRLIBNAME, luaopen_string },
  };
  lua_createtable(L, 0, 8);
  int t = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    int is_string = libs[i].open == luaopen_string;
    lua_getfield(L, t + 1, libs[i].name);            /* the host's, if opened */
    if (lua_istable(L, -1) && is_string) { lua_setfield(L, t, libs[i].name); continue; }
    lua_pop(L, 1);
    if (libs[i].open == NULL) {                       /* not linked in: the host's or none */
      lua_getfield(L, t + 1, libs[i].name);
      lua_setfield(L, t, libs[i].name);
      continue;
    }
    lua_pushcfunction(L, libs[i].open);
    lua_call(L, 0, 1);
    lua_setfield(L, t, libs[i].name);
  }
  lua_pop(L, 1);   /* package.loaded */
  lua_pushcfunction(L, private_load);
  lua_setfield(L, t, "load");
  ksig_push_lua(L, t);   /* std.signature, std.layout: the one signature grammar */
  kopt_push_lua(L, t);   /* std.options: the one option parser */
}

/* Pushes a table of the base library's names as the globals hold them now
** (raw: a strict-mode metatable on _G is not asked about absent ones): the
** parts' _ENV. */
static void push_base_snapshot(lua_State *L) {
  static const char *const names[] = {
    "assert", "collectgarbage", "dofile", "error", "getmetatable", "ipairs", "load",
    "loadfile", "next", "pairs", "pcall", "print", "rawequal", "rawget", "rawlen",
    "rawset", "require", "select", "setmetatable", "tonumber", "tostring", "type",
    "warn", "xpcall", "_VERSION", NULL };
  lua_createtable(L, 0, sizeof names / sizeof names[0] - 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  for (int i = 0; names[i]; i++) {
    lua_pushstring(L, names[i]);
    lua_rawget(L, -2);
    lua_setfield(L, -3, names[i]);
  }
  lua_pop(L, 1);
}

/* ---- Names ------------------------------------------------------------- */

/* The next word of a provides list at *p ("kjit.cuda.reduce"), its length
** in *len; NULL at the end. */
static const char *next_word(const char **p, size_t *len) {
  const char *s = *p;
  while (*s == ' ') s++;
  if (*s == '\0') return NULL;
  const char *e = s;
  while (*e && *e != ' ') e++;
  *len = (size_t)(e - s);
  *p = e;
  return s;
}

/* The length of the table part of a name: "kjit.cuda" of "kjit.cuda.reduce". */
static size_t owner_len(const char *w, size_t len) {
  while (len > 0 && w[len - 1] != '.') len--;
  return len ? len - 1 : 0;
}

/* Does the list name the field key of the table called owner? */
static int provides(const char *list, const char *owner, size_t olen, const char *key,
                    size_t klen) {
  const char *w;
  size_t len;
  while ((w = next_word(&list, &len)) != NULL)
    if (len == olen + 1 + klen && memcmp(w, owner, olen) == 0 && w[olen] == '.' &&
        memcmp(w + olen + 1, key, klen) == 0)
      return 1;
  return 0;
}

/* Pushes the value a dotted name ("kjit.cuda.random", its first len bytes)
** has, read raw from the module table at kidx ("kjit" itself); nil where a
** step is not a table. */
static void push_path(lua_State *L, int kidx, const char *path, size_t len) {
  lua_pushvalue(L, kidx);
  const char *p = memchr(path, '.', len), *end = path + len;
  while (p != NULL && p < end) {
    const char *s = p + 1, *e = memchr(s, '.', (size_t)(end - s));
    if (e == NULL) e = end;
    if (!lua_istable(L, -1)) { lua_pop(L, 1); lua_pushnil(L); return; }
    lua_pushlstring(L, s, (size_t)(e - s));
    lua_rawget(L, -2);
    lua_remove(L, -2);
    p = e < end ? e : NULL;
  }
}

/* ---- Running a part ------------------------------------------------------- */

/* Runs part i; state is the parts' state table. Raises where it fails,
** leaving the part to be run again at the next use. */
static void run_part(lua_State *L, int state, int i) {
  const KLuaModule *m = &kjit_lua_modules[i];
  int top = lua_gettop(L);
  char chunkname[64];
  snprintf(chunkname, sizeof chunkname, "=%s", m->name);
  /* the precompiled chunk if this Lua takes it (same format), else the source */
  if (m->bytecode == NULL ||
      luaL_loadbufferx(L, m->bytecode, m->bclen, chunkname, "b") != LUA_OK) {
    if (m->bytecode) lua_pop(L, 1);
    if (luaL_loadbufferx(L, m->source, m->len, chunkname, "t") != LUA_OK) goto fail;
  }
  lua_getfield(L, state, "env");
  lua_setupvalue(L, -2, 1);   /* a main chunk's one upvalue is its _ENV */
  lua_getfield(L, state, "kjit");
  if (lua_getfield(L, state, "std") == LUA_TNIL) {
    lua_pop(L, 1);
    push_private_libs(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, state, "std");
  }
  /* marked run before it runs, so that its own names read nil meanwhile
  ** (and only then: a memory error above leaves it to the next use) */
  lua_pushboolean(L, 1);
  lua_rawseti(L, state, i + 1);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    lua_pushfstring(L, "kjit: cannot load its part %s (kjit needs Lua's base library): %s",
                    m->name, lua_tostring(L, -1));
    goto fail;
  }
  /* what its provides lines promise is there (else a build-time mistake) */
  lua_getfield(L, state, "kjit");
  const char *list = m->provides, *w;
  size_t len;
  while ((w = next_word(&list, &len)) != NULL) {
    push_path(L, top + 1, w, len);
    if (lua_isnil(L, -1))
      luaL_error(L, "kjit: its part %s did not define %s, which it provides", m->name,
                 lua_pushlstring(L, w, len));
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return;
fail:
  lua_pushnil(L);
  lua_rawseti(L, state, i + 1);
  luaL_where(L, 1);   /* the user's line that first used the part */
  lua_insert(L, -2);
  lua_concat(L, 2);
  lua_error(L);
}

/* __index of a table parts add names to (upvalues: the parts' state, the
** table's dotted name): runs the part that provides the key, if any. */
static int part_index(lua_State *L) {
  size_t olen, klen;
  if (lua_type(L, 2) != LUA_TSTRING) return 0;
  const char *key = lua_tolstring(L, 2, &klen);
  const char *owner = lua_tolstring(L, lua_upvalueindex(2), &olen);
  for (int i = 0; kjit_lua_modules[i].name; i++) {
    if (!provides(kjit_lua_modules[i].provides, owner, olen, key, klen)) continue;
    if (lua_rawgeti(L, lua_upvalueindex(1), i + 1) != LUA_TNIL) return 0;   /* ran (or runs) */
    lua_pop(L, 1);
    run_part(L, lua_upvalueindex(1), i);
    lua_settop(L, 2);
    lua_rawget(L, 1);
    return 1;
  }
  return 0;
}

/* kjit.testing.lua_parts(): { [part name] = { ran = boolean, provides =
** { "kjit.vectorize", ... } } }. */
static int l_lua_parts(lua_State *L) {
  lua_newtable(L);
  for (int i = 0; kjit_lua_modules[i].name; i++) {
    const KLuaModule *m = &kjit_lua_modules[i];
    lua_createtable(L, 0, 2);
    lua_rawgeti(L, lua_upvalueindex(1), i + 1);
    lua_pushboolean(L, lua_toboolean(L, -1));
    lua_setfield(L, -3, "ran");
    lua_pop(L, 1);
    lua_newtable(L);
    const char *list = m->provides, *w;
    size_t len;
    for (int n = 1; (w = next_word(&list, &len)) != NULL; n++) {
      lua_pushlstring(L, w, len);
      lua_rawseti(L, -2, n);
    }
    lua_setfield(L, -2, "provides");
    lua_setfield(L, -2, m->name);
  }
  return 1;
}

/* Gives the table called owner (len bytes) the metatable that runs parts. */
static void make_loadable(lua_State *L, int kidx, int state, const char *owner, size_t len) {
  push_path(L, kidx, owner, len);
  if (!lua_istable(L, -1))
    luaL_error(L, "kjit: its parts provide names in %s, which is not a table",
               lua_pushlstring(L, owner, len));
  if (lua_getmetatable(L, -1)) {   /* done for another name of this table? */
    lua_getfield(L, -1, "__index");
    if (lua_tocfunction(L, -1) != part_index)
      luaL_error(L, "kjit: its parts provide names in %s, which has a metatable",
                 lua_pushlstring(L, owner, len));
    lua_pop(L, 3);
    return;
  }
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, state);
  lua_pushlstring(L, owner, len);
  lua_pushcclosure(L, part_index, 2);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
}

void kpart_open(lua_State *L) {
  int kidx = lua_gettop(L);
  lua_createtable(L, 0, 3);   /* the parts' state */
  int state = lua_gettop(L);
  lua_pushvalue(L, kidx);
  lua_setfield(L, state, "kjit");
  push_base_snapshot(L);
  lua_setfield(L, state, "env");
  for (int i = 0; kjit_lua_modules[i].name; i++) {
    const char *list = kjit_lua_modules[i].provides, *w;
    size_t len;
    while ((w = next_word(&list, &len)) != NULL)
      make_loadable(L, kidx, state, w, owner_len(w, len));
  }
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "kjit.testing") == LUA_TTABLE) {
    lua_pushvalue(L, state);
    lua_pushcclosure(L, l_lua_parts, 1);
    lua_setfield(L, -2, "lua_parts");
  }
  lua_settop(L, kidx);
}
