/*
** runtime_lib.c: compiled code calling the Lua library (kjit_rt_lib; the
** recipe format is in runtime_lib.h). Issue 29 items 3 and 5 for native
** values; the lead's value model, point 3.
**
** Design (decisions written down here):
**  - The real functions, looked up when the call runs. A library call is
**    made by a small Lua function, its "trampoline", that reads the
**    function from the current globals and calls it as the source spelled
**    it: `return function(...) return (math.random(...)) end`, or with a
**    local of the source's name for an alias (`local rnd = math.random`).
**    So output interleaves exactly with interpreted code (print and
**    io.write write through Lua's own stdout buffering), math.random draws
**    from the interpreter's own generator (a seeded sequence is the same
**    however compiled and interpreted draws interleave), a user's
**    redefinition of print is called as Lua would call it, and an error a
**    library function raises reads as interpreted: luaL_argerror names
**    the function as the calling instruction spells it ('random', 'rnd')
**    and luaL_where gives the caller's position, which is the user's
**    file:line because the trampoline is loaded under the user's chunk
**    name with its code on the user's line (line - 1 newlines first).
**    Trampolines are made once per call site and kept in a registry table
**    keyed by the site's constant string (checked on every hit: the
**    address of a freed compiled function's string can be reused).
**    Differences left: the function is read from the global table (the
**    registry's), where a chunk loaded with another _ENV (a sandbox) reads
**    its own; they differ only if the sandbox's print (math, io ...) is
**    not the global one when the call runs. And an alias kept in an upvalue (`local rnd =
**    math.random` outside the function) calls the global math.random of
**    the moment, where the interpreter calls the value frozen in the
**    upvalue; they differ only if the program replaces math.random.
**  - No Lua error unwinds through compiled frames: the whole recipe runs
**    under lua_pcall, and an error comes back as KE_LUAERR (the value,
**    kept in the registry, raised by the dispatcher as is), as the poll's
**    hooks do (runtime_poll.c). Compiled code fail-returns as for any
**    run-time error. This holds for a Lua built as C++ too.
**  - error(msg, level) with a string built here: a KE_USER record whose
**    message is copied into a per-thread buffer, so the level machinery of
**    compiled calls (cg_func.c: error("...", 2) positions at the caller)
**    applies unchanged; the buffer is read by krt_push_error before any
**    other compiled code of the thread can run. Any other error value
**    (numbers, nil, booleans; level 0) is KE_LUAERR: raised as is.
**  - Never on a thread without the Lua state: the typer refuses these
**    calls in kernels and kjit.prange bodies; err->L NULL fails cleanly.
*/
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "runtime/runtime_lib.h"
#include "runtime/runtime_poll.h"

static const char tramp_key = 'k';   /* registry: site string -> trampoline */

typedef struct Ctx {
  const int64_t *prog;
  int64_t *out;
  int raise;            /* 1: error() or assert() fired; the value is on top */
  int level;
  const char *chunk;
  int line;
  int nslot;            /* KRL_SLOT values pushed so far (run_p's arguments 2...) */
  int result;           /* 1: a KRL_K_SLOT result is on top, for slot `dst` */
  int dst;
} Ctx;

typedef struct DumpBuf { char *p; size_t n, cap; } DumpBuf;

static int dump_writer(lua_State *L, const void *b, size_t sz, void *ud) {
  (void)L;
  DumpBuf *d = ud;
  if (d->n + sz > d->cap) {
    size_t cap = (d->n + sz) * 2;
    char *np = realloc(d->p, cap);
    if (np == NULL) return 1;
    d->p = np;
    d->cap = cap;
  }
  memcpy(d->p + d->n, b, sz);
  d->n += sz;
  return 0;
}

/* Replaces the chunk on top by its copy without debug information: its
** errors then carry no position (luaL_where), as a stripped chunk's. */
static void strip(lua_State *L) {
  DumpBuf d = { NULL, 0, 0 };
  int bad = lua_dump(L, dump_writer, &d, 1) != 0;
  if (!bad) {
    bad = luaL_loadbufferx(L, d.p, d.n, "=?", "b") != LUA_OK;
    if (!bad) lua_replace(L, -2);
    else lua_pop(L, 1);
  }
  free(d.p);
}

/* The trampoline of a call site (pushed). site is "chunk\nline\npath\nname",
** name empty where the source spells the path itself (print, math.random);
** path ".." joins its two arguments, path "#" gives its argument's length,
** "[]" indexes, "[]=" assigns, "op:+" ... "op:u-" computes (a metamethod called from there, a Lua function on the user's line, is
** called as the VM calls it: luaL_where and its name in "bad argument"
** and "attempt to call" errors are the interpreter's). */
void krt_push_trampoline(lua_State *L, const char *site, int nres) {
  krt_push_trampoline_at(L, site, site, nres);
}

/* Pushes the trampoline cache (the registry's table), then the entry
** cached under key ({fn, site text}) if its text is the site's (same(text,
** site) says), replacing the cache: returns 1; else pops what it pushed
** but the cache: returns 0. */
static int cached_trampoline(lua_State *L, const void *key, int (*same)(const char *, const void *),
                             const void *site) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &tramp_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &tramp_key);
  }
  if (lua_rawgetp(L, -1, key) == LUA_TTABLE) {   /* {fn, site text} */
    lua_rawgeti(L, -1, 2);
    int hit = same(lua_tostring(L, -1), site);
    lua_pop(L, 1);
    if (hit) {
      lua_rawgeti(L, -1, 1);
      lua_replace(L, -3);
      lua_pop(L, 1);
      return 1;
    }
  }
  lua_pop(L, 1);
  return 0;
}

static int same_text(const char *text, const void *site) { return strcmp(text, site) == 0; }

/* An operator's site as its parts (krt_push_op_trampoline). */
typedef struct OpSite { const char *chunk; int32_t line; const char *path; } OpSite;

/* Is text "chunk\nline\npath\n" of site o (the chunk cut at LUA_IDSIZE, as
** krt_push_op_trampoline writes it)? */
static int same_op_site(const char *text, const void *site) {
  const OpSite *o = site;
  const char *chunk = o->chunk ? o->chunk : "?";
  size_t n = strnlen(chunk, LUA_IDSIZE);
  if (strncmp(text, chunk, n) != 0 || text[n] != '\n') return 0;
  char *end;
  long line = strtol(text + n + 1, &end, 10);
  if (line != o->line || *end != '\n') return 0;
  size_t p = strlen(o->path);
  return strncmp(end + 1, o->path, p) == 0 && end[1 + p] == '\n' && end[2 + p] == '\0';
}

void krt_push_op_trampoline(lua_State *L, const void *key, const char *chunk, int32_t line,
                            const char *path) {
  OpSite o = { chunk, line, path };
  if (cached_trampoline(L, key, same_op_site, &o)) return;
  lua_pop(L, 1);   /* the cache */
  char site[LUA_IDSIZE + 48];
  snprintf(site, sizeof site, "%.*s\n%d\n%s\n", LUA_IDSIZE, chunk ? chunk : "?", (int)line, path);
  krt_push_trampoline_at(L, key, site, 1);
}

/* The same, cached under key (a site's constant) where site is text made
** when it runs. */
void krt_push_trampoline_at(lua_State *L, const void *key, const char *site, int nres) {
  if (cached_trampoline(L, key, same_text, site)) return;
  const char *p1 = strchr(site, '\n'), *p2 = p1 ? strchr(p1 + 1, '\n') : NULL;
  const char *p3 = p2 ? strchr(p2 + 1, '\n') : NULL;
  if (p3 == NULL) luaL_error(L, "kjit: malformed library call site");
  int line = atoi(p1 + 1);
  const char *path = p2 + 1, *name = p3 + 1;
  int plen = (int)(p3 - path);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i < line && i < 1000000; i++) luaL_addchar(&b, '\n');
  int alias = name[0] != '\0';   /* spelled through a local of that name */
  if (plen == 2 && memcmp(path, "..", 2) == 0) {   /* a __concat's call (concat_steps) */
    luaL_addstring(&b, "return function(a, b) return a .. b end");
    alias = -1;
  } else if (plen == 1 && path[0] == '#') {   /* a __len's call (luavalue.c kjit_lv_len) */
    luaL_addstring(&b, "return function(t) return #t end");
    alias = -1;
  } else if (plen == 2 && memcmp(path, "[]", 2) == 0) {   /* an __index chain's (luavalue.c) */
    luaL_addstring(&b, "return function(t, k) return t[k] end");
    alias = -1;
  } else if (plen == 3 && memcmp(path, "[]=", 3) == 0) {   /* a __newindex chain's */
    luaL_addstring(&b, "return function(t, k, v) t[k] = v end");
    alias = -1;
  } else if (plen > 3 && memcmp(path, "op:", 3) == 0) {   /* arithmetic (luavalue.c arith_at) */
    int unary = path[3] == 'u';
    luaL_addstring(&b, unary ? "return function(a) return " : "return function(a, b) return a ");
    luaL_addlstring(&b, path + 3 + unary, (size_t)(plen - 3 - unary));
    luaL_addstring(&b, unary ? " a end" : " b end");
    alias = -1;
  } else if (name[0] == '[') {   /* read from a table by an integer or a computed key: so
                                    called, its errors name it 'integer index' or '?' */
    luaL_addstring(&b, "local __kjit_t, __kjit_k = { ");
    luaL_addlstring(&b, path, (size_t)plen);
    luaL_addstring(&b, " }, 1 return function(...) ");
    if (nres) luaL_addstring(&b, "return (");
    luaL_addstring(&b, name[1] == '1' ? "__kjit_t[1]" : "__kjit_t[__kjit_k]");
    luaL_addstring(&b, nres ? "(...)) end" : "(...) end");
    alias = -1;
  } else if (name[0] == ':') {   /* a method call on a string, s:sub(i, j): as spelled */
    luaL_addstring(&b, "return function(self, ...) ");
    if (nres) luaL_addstring(&b, "return (");
    luaL_addstring(&b, "self");
    luaL_addstring(&b, name);
    luaL_addstring(&b, nres ? "(...)) end" : "(...) end");
    alias = -1;
  }
  if (alias >= 0) luaL_addstring(&b, "return function(...) ");
  if (alias > 0) {   /* local NAME = path */
    luaL_addstring(&b, "local ");
    luaL_addstring(&b, name);
    luaL_addstring(&b, " = ");
    luaL_addlstring(&b, path, (size_t)plen);
    luaL_addstring(&b, " ");
  }
  if (alias >= 0) {
    if (nres) luaL_addstring(&b, "return (");
    if (alias) luaL_addstring(&b, name);
    else luaL_addlstring(&b, path, (size_t)plen);
    luaL_addstring(&b, nres ? "(...)) end" : "(...) end");
  }
  luaL_pushresult(&b);
  size_t len;
  const char *src = lua_tolstring(L, -1, &len);
  lua_pushliteral(L, "=");
  lua_pushlstring(L, site, (size_t)(p1 - site));
  lua_concat(L, 2);
  if (luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t") != LUA_OK) lua_error(L);
  if (line <= 0) strip(L);   /* a stripped chunk's call: no position, as interpreted */
  lua_call(L, 0, 1);                   /* the trampoline */
  lua_replace(L, -3);                  /* over the source */
  lua_pop(L, 1);                       /* the chunk name */
  lua_createtable(L, 2, 0);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, 1);
  lua_pushstring(L, site);
  lua_rawseti(L, -2, 2);
  lua_rawsetp(L, -3, key);             /* cache[key] = {fn, site} */
  lua_remove(L, -2);                   /* the cache */
}

/* Pushes the library's value at path ("kjit.f32", "print"): the loaded
** module's field, or the global (KRL_LIBVAL; luacall.c kjit_lc_setbuiltin
** the same into a slot). */
static void push_libval(lua_State *L, const char *path) {
  const char *dot = strchr(path, '.');
  if (dot == NULL) { lua_getglobal(L, path); return; }
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushlstring(L, path, (size_t)(dot - path));
  if (lua_rawget(L, -2) == LUA_TTABLE) lua_getfield(L, -1, dot + 1);
  else lua_pushnil(L);
  lua_replace(L, -3);
  lua_pop(L, 1);
}

/* Lua's type name of the value at idx in its errors (luaT_objtypename: a
** table's or full userdata's metatable __name string first). */
static const char *objtypename(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  if ((t == LUA_TTABLE || t == LUA_TUSERDATA) && luaL_getmetafield(L, idx, "__name") != LUA_TNIL) {
    const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);   /* (the metatable keeps the string) */
    if (name) return name;
  }
  return luaL_typename(L, idx);
}

static int has_concat(lua_State *L, int idx) {
  if (luaL_getmetafield(L, idx, "__concat") == LUA_TNIL) return 0;
  lua_pop(L, 1);
  return 1;
}

static int strnum(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  return t == LUA_TSTRING || t == LUA_TNUMBER;
}

/* KRL_CONCATN: the top n values joined as luaV_concat joins them: the last
** two first, with as many strings and numbers left of them as there are,
** in one lua_concat; a pair that is not two of those by lua_concat(L, 2),
** which calls an operand's __concat as the VM does; then leftwards. A
** pair neither of whose values is a string or a number or has __concat
** raises the VM's message (luaG_concaterror: the left operand unless it
** is a string or a number), naming that operand's register: a joined
** value sits in the register of its leftmost operand, as in the VM. site:
** "chunk\nline\n..\n" (push_trampoline). Fails
** only there, for memory, or in a __concat metamethod. Returns 1 with the
** message on top, else 0 with the result on top. */
static int concat_steps(lua_State *L, int n, const char *site, const char *names) {
  int total = n;
  while (total > 1) {
    int lok = strnum(L, -2), rok = strnum(L, -1);
    if (lok && rok) {
      int m = 2;
      while (m < total && strnum(L, -m - 1)) m++;
      lua_concat(L, m);
      total -= m - 1;
    } else if (has_concat(L, -2) || has_concat(L, -1)) {
      /* from a Lua function on the user's line, as the VM calls it: a
      ** metamethod that cannot be called, or a C function's error, is
      ** located there ("attempt to call a number value (metamethod
      ** 'concat')", "bad argument #1 to 'concat'") */
      krt_push_trampoline(L, site, 1);
      lua_insert(L, -3);
      lua_call(L, 2, 1);
      total--;
    } else {
      int bad = lok ? total - 1 : total - 2;
      const char *name = names;
      for (int i = 0; i < bad; i++) name += strlen(name) + 1;
      lua_pushfstring(L, "attempt to concatenate a %s value%s", objtypename(L, lok ? -1 : -2), name);
      return 1;
    }
  }
  return 0;
}

static int run_p(lua_State *L) {
  Ctx *c = lua_touserdata(L, 1);
  /* arguments 2...: the values of the recipe's KRL_SLOTs, in order (the
  ** compiled frame's slots are not addressable from this frame) */
  const int64_t *p = c->prog;
  for (;;) {
    int64_t w = *p++;
    int op = (int)(w & 0xff);
    luaL_checkstack(L, 8, NULL);   /* a value, or a call's trampoline and cache */
    switch (op) {
    case KRL_END: return 0;
    case KRL_NIL: lua_pushnil(L); break;
    case KRL_FALSE: lua_pushboolean(L, 0); break;
    case KRL_TRUE: lua_pushboolean(L, 1); break;
    case KRL_NIL1: lua_pushnil(L); p++; break;
    case KRL_FALSE1: lua_pushboolean(L, 0); p++; break;
    case KRL_INT: lua_pushinteger(L, (lua_Integer)*p++); break;
    case KRL_FLT: {
      double d;
      memcpy(&d, p++, sizeof d);
      lua_pushnumber(L, d);
      break;
    }
    case KRL_SLOT: lua_pushvalue(L, 2 + c->nslot++); p++; break;
    case KRL_LIBVAL: push_libval(L, (const char *)(intptr_t)*p++); break;
    case KRL_STR: {
      const char *s = (const char *)(intptr_t)p[0];
      lua_pushlstring(L, s, (size_t)p[1]);
      p += 2;
      break;
    }
    case KRL_CONCAT: lua_concat(L, (int)(w >> 8)); break;
    case KRL_CONCATN:
      if (concat_steps(L, (int)(w >> 8), (const char *)(intptr_t)p[2], (const char *)(intptr_t)p[3])) {
        c->chunk = (const char *)(intptr_t)p[0];
        c->line = (int)p[1];
        c->raise = 1;
        c->level = 1;
        return 1;   /* the message, raised as error(message) at chunk:line */
      }
      p += 4;
      break;
    case KRL_CALL: {
      int nargs = (int)((w >> 8) & 0xff), nres = (int)((w >> 16) & 0xff);
      const char *site = (const char *)(intptr_t)*p++;
      krt_push_trampoline(L, site, nres);
      lua_insert(L, -nargs - 1);
      lua_call(L, nargs, nres);
      break;
    }
    case KRL_ASSERT:   /* [cond, msg] */
      c->chunk = (const char *)(intptr_t)p[0];
      c->line = (int)p[1];
      p += 2;
      if (lua_toboolean(L, -2)) { lua_pop(L, 2); break; }
      c->raise = 1;
      c->level = 1;
      return 1;   /* the message */
    case KRL_ERROR:
      c->chunk = (const char *)(intptr_t)p[0];
      c->line = (int)p[1];
      c->raise = 1;
      c->level = (int)(w >> 8);
      return 1;   /* the value */
    case KRL_RESULT: {
      int kind = (int)(w >> 8), isnum = lua_type(L, -1) == LUA_TNUMBER;
      if (kind == KRL_K_SLOT) {   /* the value, returned; stored by kjit_rt_lib */
        c->result = 1;
        c->dst = (int)*p;
        return 1;
      }
      if (kind == KRL_K_INT && isnum && lua_isinteger(L, -1)) {
        c->out[0] = (int64_t)lua_tointeger(L, -1);
      } else if (kind == KRL_K_FLT && isnum && !lua_isinteger(L, -1)) {
        double d = lua_tonumber(L, -1);
        memcpy(&c->out[0], &d, sizeof d);
      } else {
        const char *site = (const char *)(intptr_t)*p;
        const char *path = site;
        for (int i = 0; i < 2 && path; i++) path = strchr(path, '\n') ? strchr(path, '\n') + 1 : NULL;
        const char *end = path ? strchr(path, '\n') : NULL;
        lua_pushlstring(L, end ? path : "?", end ? (size_t)(end - path) : 1);
        return luaL_error(L, "kjit: %s returned %s where compiled code expected %s (the "
                          "function was replaced after the code compiled?)", lua_tostring(L, -1),
                          isnum ? (lua_isinteger(L, -1) ? "an integer" : "a float")
                                : luaL_typename(L, -1),
                          kind == KRL_K_INT ? "an integer" : "a float");
      }
      p++;
      lua_pop(L, 1);
      break;
    }
    default: return luaL_error(L, "kjit: bad library call recipe (op %d)", op);
    }
  }
}

/* Messages of error() built here, until krt_push_error reads them. */
static _Thread_local char *msgbuf;
static _Thread_local size_t msgcap;

static const char *keep_message(const char *s, size_t n) {
  if (n + 1 > msgcap) {
    size_t cap = n + 1 < 256 ? 256 : n + 1;
    char *nb = realloc(msgbuf, cap);
    if (nb == NULL) return "not enough memory";
    msgbuf = nb;
    msgcap = cap;
  }
  memcpy(msgbuf, s, n);
  msgbuf[n] = '\0';
  return msgbuf;
}

/* The common case without a second protected call: a recipe of plain
** values (no strings: pushing them allocates nothing), one call, maybe its
** result, whose trampoline is made already. Returns -1 when it does not
** apply, else kjit_rt_lib's result. */
static int32_t fast_call(lua_State *L, KErr *err, const int64_t *prog, int64_t *out) {
  const int64_t *p = prog;
  int nvals = 0;
  for (;; nvals++) {
    int op = (int)(*p & 0xff);
    if (op == KRL_NIL || op == KRL_FALSE || op == KRL_TRUE) p += 1;
    else if (op == KRL_INT || op == KRL_FLT || op == KRL_NIL1 || op == KRL_FALSE1 ||
             op == KRL_SLOT) p += 2;
    else break;
  }
  if ((*p & 0xff) != KRL_CALL || (int)((*p >> 8) & 0xff) != nvals) return -1;
  int nres = (int)((*p >> 16) & 0xff);
  const char *site = (const char *)(intptr_t)p[1];
  const int64_t *after = p + 2;
  int kind = 0;
  int dst = 0;
  if ((*after & 0xff) == KRL_RESULT) { kind = (int)(*after >> 8); dst = (int)after[1]; after += 2; }
  if ((*after & 0xff) != KRL_END || (nres != 0) != (kind != 0)) return -1;
  if (!lua_checkstack(L, nvals + 8)) return -1;
  int top = lua_gettop(L);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &tramp_key) != LUA_TTABLE ||
      lua_rawgetp(L, -1, site) != LUA_TTABLE || lua_rawgeti(L, -1, 2) != LUA_TSTRING ||
      strcmp(lua_tostring(L, -1), site) != 0) {
    lua_settop(L, top);
    return -1;
  }
  lua_rawgeti(L, -2, 1);        /* the trampoline */
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  for (p = prog; nvals-- > 0; ) {
    int op = (int)(*p & 0xff);
    switch (op) {
    case KRL_NIL: lua_pushnil(L); p += 1; break;
    case KRL_FALSE: lua_pushboolean(L, 0); p += 1; break;
    case KRL_TRUE: lua_pushboolean(L, 1); p += 1; break;
    case KRL_NIL1: lua_pushnil(L); p += 2; break;
    case KRL_FALSE1: lua_pushboolean(L, 0); p += 2; break;
    case KRL_INT: lua_pushinteger(L, (lua_Integer)p[1]); p += 2; break;
    case KRL_SLOT: lua_pushvalue(L, (int)p[1]); p += 2; break;   /* this frame's slot */
    default: {
      double d;
      memcpy(&d, &p[1], sizeof d);
      lua_pushnumber(L, d);
      p += 2;
    }
    }
  }
  if (lua_pcall(L, lua_gettop(L) - top - 1, nres, 0) != LUA_OK) {
    krt_keep_error(L, err);
    lua_settop(L, top);
    return 1;
  }
  if (kind == KRL_K_SLOT) {
    lua_replace(L, dst);   /* a slot of the compiled frame, below top */
  } else if (kind) {
    int isnum = lua_type(L, -1) == LUA_TNUMBER, isint = isnum && lua_isinteger(L, -1);
    if (kind == KRL_K_INT && isint) out[0] = (int64_t)lua_tointeger(L, -1);
    else if (kind == KRL_K_FLT && isnum && !isint) {
      double d = lua_tonumber(L, -1);
      memcpy(&out[0], &d, sizeof d);
    } else {   /* (not called again: a second draw would be a difference) */
      lua_settop(L, top);
      krt_set_err(err, KE_USER_NOPOS);
      err->msg = "kjit: a library function called from compiled code returned another type "
                 "of value than compiled code expects (was it replaced after the code compiled?)";
      return 1;
    }
  }
  lua_settop(L, top);
  return 0;
}

/* a .. b .. c into a slot (cg_lib.c cg_lib_concat: values, KRL_CONCAT n
** or KRL_CONCATN n, a KRL_K_SLOT result) without a protected call:
** compiled code checked the Lua operands first (the VM's type errors,
** located), or concat_steps checks them here and its error comes back in
** *err, so lua_concat here fails only for memory or in a __concat
** metamethod, and such an error unwinds through compiled frames as
** luavalue.c's helpers' do (its head says why that is safe). Returns -1
** when the recipe is not one, else kjit_rt_lib's result. */
static int32_t fast_concat(lua_State *L, KErr *err, const int64_t *prog) {
  const int64_t *p = prog;
  int n = 0;
  for (;; n++) {
    int op = (int)(*p & 0xff);
    if (op == KRL_NIL || op == KRL_FALSE || op == KRL_TRUE) p += 1;
    else if (op == KRL_INT || op == KRL_FLT || op == KRL_NIL1 || op == KRL_FALSE1 ||
             op == KRL_SLOT) p += 2;
    else if (op == KRL_STR) p += 3;
    else break;
  }
  int steps = (*p & 0xff) == KRL_CONCATN;
  const int64_t *res = p + (steps ? 5 : 1);
  if (((*p & 0xff) != KRL_CONCAT && !steps) || (int)(*p >> 8) != n || n < 1 ||
      (res[0] & 0xff) != KRL_RESULT || (int)(res[0] >> 8) != KRL_K_SLOT || (res[2] & 0xff) != KRL_END)
    return -1;
  int dst = (int)res[1], top = lua_gettop(L);
  if (!lua_checkstack(L, n + 8)) return -1;
  for (p = prog; n-- > 0; ) {
    switch ((int)(*p & 0xff)) {
    case KRL_NIL: lua_pushnil(L); p += 1; break;
    case KRL_FALSE: lua_pushboolean(L, 0); p += 1; break;
    case KRL_TRUE: lua_pushboolean(L, 1); p += 1; break;
    case KRL_NIL1: lua_pushnil(L); p += 2; break;
    case KRL_FALSE1: lua_pushboolean(L, 0); p += 2; break;
    case KRL_INT: lua_pushinteger(L, (lua_Integer)p[1]); p += 2; break;
    case KRL_SLOT: lua_pushvalue(L, (int)p[1]); p += 2; break;
    case KRL_STR: lua_pushlstring(L, (const char *)(intptr_t)p[1], (size_t)p[2]); p += 3; break;
    default: {
      double d;
      memcpy(&d, &p[1], sizeof d);
      lua_pushnumber(L, d);
      p += 2;
    }
    }
  }
  if (!steps) {
    lua_concat(L, (int)((*p >> 8) & 0xffffff));
  } else if (concat_steps(L, (int)((*p >> 8) & 0xffffff), (const char *)(intptr_t)p[3],
                          (const char *)(intptr_t)p[4])) {
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    krt_set_err(err, KE_USER);   /* error(msg) at chunk:line (kjit_rt_lib's end) */
    err->msg = keep_message(msg, len);
    err->chunk = (const char *)(intptr_t)p[1];
    err->line = (int)p[2];
    err->c = 0;
    lua_settop(L, top);
    return 1;
  }
  lua_replace(L, dst);
  return 0;
}

/* The refusal of a library call in a kjit.prange job, at the position of
** the call (the recipe's first call, error or assert). */
static const char *in_job_message(const int64_t *p) {
  static const char what[] = "a function called in a kjit.prange loop calls the Lua library "
    "(print, io.write, math.random, ...), which parallel threads cannot: call it outside the "
    "loop, or compile without parallel = true";
  const char *chunk = NULL;
  size_t clen = 0;
  long line = 0;
  for (int guard = 0; guard < 100000 && chunk == NULL; guard++) {
    int op = (int)(*p & 0xff);
    if (op == KRL_END) break;
    if (op == KRL_CALL) {
      const char *site = (const char *)(intptr_t)p[1];
      const char *nl = strchr(site, '\n');
      if (nl) { chunk = site; clen = (size_t)(nl - site); line = atol(nl + 1); }
      break;
    }
    if (op == KRL_ERROR || op == KRL_ASSERT) {
      chunk = (const char *)(intptr_t)p[1];
      clen = chunk ? strlen(chunk) : 0;
      line = (long)p[2];
      break;
    }
    p += op == KRL_CONCATN ? 5 : op == KRL_STR ? 3 : op == KRL_INT || op == KRL_FLT || op == KRL_NIL1 ||
         op == KRL_FALSE1 || op == KRL_RESULT || op == KRL_SLOT || op == KRL_LIBVAL ? 2 : 1;
  }
  if (chunk == NULL || line <= 0) return what;
  char head[LUA_IDSIZE + 32];
  int n = snprintf(head, sizeof head, "%.*s:%ld: ", (int)(clen < LUA_IDSIZE ? clen : LUA_IDSIZE),
                   chunk, line);
  char *buf = malloc((size_t)n + sizeof what);
  if (buf == NULL) return what;
  memcpy(buf, head, (size_t)n);
  memcpy(buf + n, what, sizeof what);
  const char *m = keep_message(buf, strlen(buf));
  free(buf);
  return m;
}

int32_t kjit_rt_lib(KErr *err, const int64_t *prog, int64_t *out) {
  if (krt_poll_here().stop != NULL) {   /* a kjit.prange job: err may be a copy without L */
    krt_set_err(err, KE_USER_NOPOS);
    err->msg = in_job_message(prog);
    return 1;
  }
  lua_State *L = err->L;
  if (L == NULL) {
    krt_set_err(err, KE_USER_NOPOS);
    err->msg = "kjit: a Lua library call ran without its Lua state (a kjit bug)";
    return 1;
  }
  if (!lua_checkstack(L, 8)) {
    krt_set_err(err, KE_USER_NOPOS);
    err->msg = "stack overflow (no room on the Lua stack for a library call)";
    return 1;
  }
  int32_t fast = fast_call(L, err, prog, out);
  if (fast >= 0) return fast;
  int32_t cat = fast_concat(L, err, prog);
  if (cat >= 0) return cat;
  int top = lua_gettop(L);
  Ctx c;
  memset(&c, 0, sizeof c);
  c.prog = prog;
  c.out = out;
  lua_pushcfunction(L, run_p);
  lua_pushlightuserdata(L, &c);
  int nslots = 0;   /* the KRL_SLOTs' values, as run_p's arguments */
  for (const int64_t *q = prog; (*q & 0xff) != KRL_END; ) {
    int op = (int)(*q & 0xff);
    if (op == KRL_SLOT) {
      if (!lua_checkstack(L, 4)) {
        lua_settop(L, top);
        krt_set_err(err, KE_USER_NOPOS);
        err->msg = "stack overflow (no room on the Lua stack for a library call)";
        return 1;
      }
      lua_pushvalue(L, (int)q[1]);
      nslots++;
    }
    q += op == KRL_CONCATN ? 5
       : op == KRL_STR || op == KRL_ERROR || op == KRL_ASSERT ? 3
       : op == KRL_INT || op == KRL_FLT || op == KRL_NIL1 || op == KRL_FALSE1 ||
         op == KRL_RESULT || op == KRL_SLOT || op == KRL_CALL ? 2 : 1;
  }
  int st = lua_pcall(L, 1 + nslots, LUA_MULTRET, 0);
  if (st != LUA_OK) {
    krt_keep_error(L, err);
    lua_settop(L, top);
    return 1;
  }
  if (!c.raise) {
    if (c.result) lua_replace(L, c.dst);   /* the KRL_K_SLOT result */
    lua_settop(L, top);
    return 0;
  }
  /* error(v, level) / assert(false, v): v on top (lbaselib.c's luaB_error) */
  if (lua_type(L, -1) == LUA_TSTRING && c.level > 0) {
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    krt_set_err(err, KE_USER);
    err->msg = keep_message(s, n);
    err->line = c.line;
    err->chunk = c.chunk;
    err->c = c.level - 1;   /* how many callers up (cg_func.c moves it) */
  } else {
    krt_keep_error(L, err);
  }
  lua_settop(L, top);
  return 1;
}
