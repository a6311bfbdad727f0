/*
** lmpi_pack.c: Lua values as MPI messages (bytes). nil, booleans,
** integers (int64, exact), floats (the double's bits), strings, and tables
** of these (any keys of those types, nested up to LM_DEPTH; a cycle is an
** error). kjit arrays are never packed: they travel as themselves.
**
**   "KLV1" then one value:  'n' | 't' | 'f' | 'i' int64 | 'd' double
**                          | 's' u64 length, bytes | 'T' u64 pairs, key value ...
** (host byte order: every rank of a job runs on the same kind of machine.)
*/
#include <stdlib.h>
#include <string.h>
#include "lmpi.h"

#define LM_PACK "kjit.mpi.pack"
#define LM_DEPTH 64

static int pack_gc(lua_State *L) {
  LPack *b = lua_touserdata(L, 1);
  free(b->p);
  b->p = NULL;
  return 0;
}

LPack *lm_pack_new(lua_State *L) {
  LPack *b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  if (luaL_newmetatable(L, LM_PACK)) {
    lua_pushcfunction(L, pack_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return b;
}

static void put(lua_State *L, LPack *b, const void *p, size_t n) {
  if (b->cap - b->n < n) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->n < n) cap *= 2;
    char *q = realloc(b->p, cap);
    if (q == NULL) luaL_error(L, "kjit.mpi: not enough memory");
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

static void put_value(lua_State *L, int idx, LPack *b, int depth, const char *fname, int argn) {
  char tag;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: tag = 'n'; put(L, b, &tag, 1); return;
  case LUA_TBOOLEAN: tag = lua_toboolean(L, idx) ? 't' : 'f'; put(L, b, &tag, 1); return;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      int64_t v = (int64_t)lua_tointeger(L, idx);
      tag = 'i'; put(L, b, &tag, 1); put(L, b, &v, 8);
    } else {
      double v = (double)lua_tonumber(L, idx);
      tag = 'd'; put(L, b, &tag, 1); put(L, b, &v, 8);
    }
    return;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    uint64_t n64 = n;
    tag = 's'; put(L, b, &tag, 1); put(L, b, &n64, 8); put(L, b, s, n);
    return;
  }
  case LUA_TTABLE: {
    if (depth >= LM_DEPTH)
      luaL_error(L, "%s: table nested more than %d deep (or a cycle) in argument #%d", fname,
                 LM_DEPTH, argn);
    luaL_checkstack(L, 4, "kjit.mpi");
    idx = lua_absindex(L, idx);
    uint64_t count = 0;
    tag = 'T';
    put(L, b, &tag, 1);
    size_t at = b->n;
    put(L, b, &count, 8);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      put_value(L, -2, b, depth + 1, fname, argn);
      put_value(L, -1, b, depth + 1, fname, argn);
      lua_pop(L, 1);
      count++;
    }
    memcpy(b->p + at, &count, 8);
    return;
  }
  default:
    if (lm_isarray(L, idx))
      luaL_error(L, "%s: a kjit array inside a Lua value (argument #%d): send the array "
                 "itself", fname, argn);
    luaL_error(L, "bad argument #%d to '%s' (kjit array, number, string, boolean or table "
               "expected, got %s)", argn, fname, luaL_typename(L, idx));
  }
}

void lm_pack(lua_State *L, int idx, LPack *b, const char *fname, int argn) {
  idx = lua_absindex(L, idx);
  if (lua_isnil(L, idx))
    luaL_error(L, "bad argument #%d to '%s' (kjit array, number, string, boolean or table "
               "expected, got nil)", argn, fname);
  put(L, b, "KLV1", 4);
  put_value(L, idx, b, 0, fname, argn);
}

typedef struct Rd { const char *p, *end; const char *fname; } Rd;

static void bad(lua_State *L, Rd *r) {
  luaL_error(L, "%s: the message is not a Lua value from kjit.mpi (an array's data "
             "received as a Lua value? receive arrays into an array)", r->fname);
}

static void get(lua_State *L, Rd *r, void *dst, size_t n) {
  if ((size_t)(r->end - r->p) < n) bad(L, r);
  memcpy(dst, r->p, n);
  r->p += n;
}

static void get_value(lua_State *L, Rd *r, int depth) {
  char tag;
  get(L, r, &tag, 1);
  luaL_checkstack(L, 3, "kjit.mpi");
  switch (tag) {
  case 'n': lua_pushnil(L); return;
  case 't': lua_pushboolean(L, 1); return;
  case 'f': lua_pushboolean(L, 0); return;
  case 'i': { int64_t v; get(L, r, &v, 8); lua_pushinteger(L, (lua_Integer)v); return; }
  case 'd': { double v; get(L, r, &v, 8); lua_pushnumber(L, (lua_Number)v); return; }
  case 's': {
    uint64_t n;
    get(L, r, &n, 8);
    if ((uint64_t)(r->end - r->p) < n) bad(L, r);
    lua_pushlstring(L, r->p, (size_t)n);
    r->p += n;
    return;
  }
  case 'T': {
    uint64_t n;
    get(L, r, &n, 8);
    if (depth >= LM_DEPTH || n > (uint64_t)(r->end - r->p)) bad(L, r);
    lua_createtable(L, 0, (int)(n < 1024 ? n : 1024));
    for (uint64_t i = 0; i < n; i++) {
      get_value(L, r, depth + 1);
      get_value(L, r, depth + 1);
      if (lua_isnil(L, -2)) bad(L, r);
      lua_rawset(L, -3);
    }
    return;
  }
  default: bad(L, r);
  }
}

void lm_unpack(lua_State *L, const char *p, size_t n, const char *fname) {
  Rd r = { p, p + n, fname };
  if (n < 4 || memcmp(p, "KLV1", 4) != 0) bad(L, &r);
  r.p += 4;
  get_value(L, &r, 0);
  if (r.p != r.end) bad(L, &r);
}
