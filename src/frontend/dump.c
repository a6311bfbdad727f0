/*
** dump.c: the binary chunk of a running Lua function, from lua_dump into
** memory. Nothing here looks at the chunk name: a function loaded with
** load(src, "@/dev/zero"), from a C host's buffer or in the REPL dumps the
** same way as one from a file.
*/
#include <stdio.h>
#include <string.h>
#include "frontend/bytecode.h"

typedef struct DumpBuf {
  Arena *A;
  char *p;
  size_t n, cap;
} DumpBuf;

/* lua_Writer: appends to the buffer, doubling it in the arena (the old
** copies stay in the arena until the compile ends: at most as much again). */
static int writer(lua_State *L, const void *data, size_t sz, void *ud) {
  DumpBuf *d = ud;
  (void)L;
  if (sz > d->cap - d->n) {
    size_t cap = d->cap ? d->cap : 1024;
    while (cap - d->n < sz) {
      if (cap > ((size_t)-1) / 2) return 1;
      cap *= 2;
    }
    char *np = ka_alloc(d->A, cap);
    if (np == NULL) return 1;
    if (d->n) memcpy(np, d->p, d->n);
    d->p = np;
    d->cap = cap;
  }
  memcpy(d->p + d->n, data, sz);
  d->n += sz;
  return 0;
}

const char *kbc_dump(lua_State *L, int idx, int strip, Arena *A, size_t *len,
                     char *err, size_t errsz) {
  *len = 0;
  if (lua_type(L, idx) != LUA_TFUNCTION) {
    snprintf(err, errsz, "cannot compile a %s (a Lua function expected)",
             lua_typename(L, lua_type(L, idx)));
    return NULL;
  }
  if (lua_iscfunction(L, idx)) {
    snprintf(err, errsz, "cannot compile a C function");
    return NULL;
  }
  DumpBuf d = { A, NULL, 0, 0 };
  lua_pushvalue(L, idx);
  /* lua_dump of a Lua function allocates nothing in Lua and calls only
  ** the writer: it cannot throw */
  int st = lua_dump(L, writer, &d, strip);
  lua_pop(L, 1);
  if (st != 0 || d.p == NULL) {
    snprintf(err, errsz, "not enough memory");
    return NULL;
  }
  *len = d.n;
  return d.p;
}

KbcChunk *kbc_load(lua_State *L, int idx, Arena *A, char *err, size_t errsz) {
  size_t len;
  const char *b = kbc_dump(L, idx, 0, A, &len, err, errsz);
  KbcChunk *c = b ? kbc_decode(A, b, len, err, errsz) : NULL;
  /* lua_dump writes the prototype's count of upvalues, but load() gives
  ** the closure of a chunk as many as the chunk's header says: a damaged
  ** chunk's may have fewer, and lua_getupvalue, which checks the
  ** prototype's count, would then read past the closure's (a crash where
  ** compiling reads upvalues). Such a function is refused. */
  if (c) {
    lua_Debug ar;
    lua_pushvalue(L, idx);
    lua_getinfo(L, ">u", &ar);   /* (cannot raise for 'u') */
    if (ar.nups != c->main->nup) {
      snprintf(err, errsz, "bad bytecode (the function has %d upvalues, its prototype %d)",
               (int)ar.nups, c->main->nup);
      return NULL;
    }
  }
  return c;
}
