/*
** host/options.c: the option tables of kjit's APIs and their one reader
** (options.h). The tables are the documentation of what each API takes:
** a new option is one line here.
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "options.h"

static const char *const targets_ufunc[] = { "cpu", "parallel", "cuda", NULL };
static const char *const targets_reduce[] = { "cpu", "parallel", NULL };
static const char *const inline_choices[] = { "never", "always", NULL };

#define OPT_BOOL(n, d) { n, KOPT_BOOL, d, 0, 1, NULL }
#define OPT_LEVEL { "opt", KOPT_INT, 3, 0, 3, NULL }

static const KOpt jit_opts[] = {      /* order: KO_JIT_* */
  OPT_BOOL("boundscheck", 1), OPT_BOOL("fastmath", 0), OPT_LEVEL, OPT_BOOL("cache", 0),
  OPT_BOOL("parallel", 0), OPT_BOOL("tiered", 1), { NULL, 0, 0, 0, 0, NULL } };
static const KOpt cuda_opts[] = {     /* order: KO_CUDA_* */
  OPT_BOOL("boundscheck", 1), OPT_BOOL("fastmath", 0), OPT_BOOL("fma", 1), OPT_LEVEL,
  OPT_BOOL("cache", 0),
  /* numba-cuda's: device functions, debug info, register and block limits
  ** (0: none; launch_bounds and maxThreadsPerBlock are one limit) */
  OPT_BOOL("device", 0), OPT_BOOL("lineinfo", 0), OPT_BOOL("debug", 0),
  { "max_registers", KOPT_INT, 0, 0, 255, NULL }, { "launch_bounds", KOPT_INT, 0, 0, 1024, NULL },
  { "maxThreadsPerBlock", KOPT_INT, 0, 0, 1024, NULL },
  /* numba-cuda's inlining requests (inline = True | False | "always" |
  ** "never", forceinline): taken so that its kernels port unchanged, with
  ** no effect: a device function is a Lua function compiled into each
  ** kernel that calls it, and LLVM/libNVVM decide its inlining */
  { "inline", KOPT_CHOICE, 0, 1, 0, inline_choices }, OPT_BOOL("forceinline", 0),
  { NULL, 0, 0, 0, 0, NULL } };
static const KOpt ufunc_opts[] = {
  { "target", KOPT_CHOICE, 0, 0, 0, targets_ufunc }, OPT_BOOL("fastmath", 0),
  OPT_BOOL("boundscheck", 1), OPT_BOOL("cache", 0), { NULL, 0, 0, 0, 0, NULL } };
static const KOpt reduce_opts[] = {
  { "target", KOPT_CHOICE, 0, 0, 0, targets_reduce }, OPT_BOOL("fastmath", 0),
  OPT_BOOL("boundscheck", 1), OPT_BOOL("cache", 0), OPT_LEVEL, { NULL, 0, 0, 0, 0, NULL } };
static const KOpt cuda_reduce_opts[] = {
  OPT_BOOL("fastmath", 0), OPT_BOOL("fma", 1), OPT_BOOL("cache", 0), OPT_LEVEL,
  { NULL, 0, 0, 0, 0, NULL } };

const KOptApi kopt_jit = { "kjit.jit", "jit", 2, KOPT_STYLE_PREFIX, jit_opts };
const KOptApi kopt_cuda_jit = { "cuda.jit", "jit", 2, KOPT_STYLE_ARG, cuda_opts };
const KOptApi kopt_vectorize = { "kjit.vectorize", "vectorize", 3, KOPT_STYLE_PREFIX, ufunc_opts };
const KOptApi kopt_guvectorize = { "kjit.guvectorize", "guvectorize", 4, KOPT_STYLE_PREFIX, ufunc_opts };
const KOptApi kopt_reduce = { "kjit.reduce", "kjit.reduce", 2, KOPT_STYLE_PREFIX, reduce_opts };
const KOptApi kopt_cuda_reduce = { "kjit.cuda.reduce", "kjit.cuda.reduce", 2, KOPT_STYLE_PREFIX,
                                   cuda_reduce_opts };

/* Pushes a description of the value at idx without calling metamethods:
** a string or number as itself, else "table: 0x...". */
static const char *push_desc(lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: return lua_pushstring(L, lua_tostring(L, idx));
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) return lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, idx));
    return lua_pushfstring(L, "%f", (LUAI_UACNUMBER)lua_tonumber(L, idx));
  case LUA_TBOOLEAN: return lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false");
  default: return lua_pushfstring(L, "%s: %p", luaL_typename(L, idx), lua_topointer(L, idx));
  }
}

/* "a, b, c" or "\"a\", \"b\" or \"c\"" */
static const char *push_list(lua_State *L, const char *const *names, size_t stride, int quoted) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int n = 0;
  while (*(const char *const *)((const char *)names + n * stride)) n++;
  for (int i = 0; i < n; i++) {
    const char *s = *(const char *const *)((const char *)names + i * stride);
    if (i) luaL_addstring(&b, quoted && i == n - 1 ? " or " : ", ");
    if (quoted) luaL_addchar(&b, '"');
    luaL_addstring(&b, s);
    if (quoted) luaL_addchar(&b, '"');
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* Pushes the message for a bad value (at vidx) of option o. */
static void push_bad_value(lua_State *L, const KOptApi *a, const KOpt *o, int vidx) {
  const char *got = luaL_typename(L, vidx);
  if (o->kind == KOPT_CHOICE) {
    const char *v = push_desc(L, vidx);
    const char *list = push_list(L, o->choices, sizeof *o->choices, 1);
    lua_pushfstring(L, "%s: unknown %s '%s' (%s must be %s%s)", a->api, o->name, v, o->name,
                    o->lo ? "a boolean, " : "", list);
    lua_insert(L, -3);
    lua_pop(L, 2);
    return;
  }
  if (o->kind == KOPT_INT && lua_type(L, vidx) == LUA_TNUMBER) got = push_desc(L, vidx);
  else lua_pushnil(L);
  if (a->style == KOPT_STYLE_ARG) {
    if (o->kind == KOPT_BOOL)
      lua_pushfstring(L, "bad option '%s' to '%s' (boolean expected, got %s)", o->name, a->api, got);
    else
      lua_pushfstring(L, "bad option '%s' to '%s' (an integer from %d to %d expected, got %s)",
                      o->name, a->api, o->lo, o->hi, got);
  } else {
    if (o->kind == KOPT_BOOL)
      lua_pushfstring(L, "%s: option '%s' must be a boolean, got %s", a->api, o->name, got);
    else
      lua_pushfstring(L, "%s: option '%s' must be an integer from %d to %d, got %s", a->api,
                      o->name, o->lo, o->hi, got);
  }
  lua_remove(L, -2);
}

/* The value at vidx for option o into *v; 0, or -1 with the message pushed. */
static int read_value(lua_State *L, const KOptApi *a, const KOpt *o, int vidx, int *v) {
  switch (o->kind) {
  case KOPT_BOOL:
    if (!lua_isboolean(L, vidx)) break;
    *v = lua_toboolean(L, vidx);
    return 0;
  case KOPT_INT:
    if (!lua_isinteger(L, vidx)) break;
    {
      lua_Integer x = lua_tointeger(L, vidx);
      if (x < o->lo || x > o->hi) break;
      *v = (int)x;
    }
    return 0;
  case KOPT_CHOICE:
    if (o->lo && lua_isboolean(L, vidx)) { *v = lua_toboolean(L, vidx); return 0; }
    if (lua_type(L, vidx) != LUA_TSTRING) break;
    for (int i = 0; o->choices[i]; i++)
      if (strcmp(o->choices[i], lua_tostring(L, vidx)) == 0) { *v = i; return 0; }
    break;
  }
  push_bad_value(L, a, o, vidx);
  return -1;
}

void kopt_defaults(const KOptApi *a, int *values) {
  for (int i = 0; a->opts[i].name; i++) values[i] = a->opts[i].def;
}

int kopt_check(lua_State *L, int idx, const KOptApi *a, int *values) {
  int n = 0;
  for (; a->opts[n].name; n++) values[n] = a->opts[n].def;
  if (lua_isnoneornil(L, idx)) return 0;
  if (!lua_istable(L, idx)) {
    lua_pushfstring(L, "bad argument #%d to '%s' (options table expected, got %s)", a->argn,
                    a->fname, luaL_typename(L, idx));
    return -1;
  }
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int k = -1;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; i < n && k < 0; i++)
        if (strcmp(a->opts[i].name, lua_tostring(L, -2)) == 0) k = i;
    if (k < 0) {
      const char *key = push_desc(L, -2);
      const char *known = push_list(L, &a->opts[0].name, sizeof a->opts[0], 0);
      if (a->style == KOPT_STYLE_ARG)
        lua_pushfstring(L, "unknown option '%s' to '%s' (known: %s)", key, a->api, known);
      else
        lua_pushfstring(L, "%s: unknown option '%s' (known: %s)", a->api, key, known);
      lua_insert(L, -5);   /* below key, value, the key's and the list's texts */
      lua_pop(L, 4);
      return -1;
    }
    if (read_value(L, a, &a->opts[k], lua_gettop(L), &values[k]) != 0) {
      lua_insert(L, -3);
      lua_pop(L, 2);
      return -1;
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* Called from the API's C function: the error names its caller's
** file:line, as luaL_error would. */
void kopt_read(lua_State *L, int idx, const KOptApi *a, int *values) {
  if (kopt_check(L, idx, a, values) == 0) return;
  luaL_where(L, 1);
  lua_insert(L, -2);
  lua_concat(L, 2);
  lua_error(L);
}

/* options(api, opts) -> table | nil, message */
static int l_options(lua_State *L) {
  static const KOptApi *const apis[] = {
    &kopt_vectorize, &kopt_guvectorize, &kopt_reduce, &kopt_cuda_reduce, &kopt_jit, &kopt_cuda_jit };
  const char *name = luaL_checkstring(L, 1);
  const KOptApi *a = NULL;
  for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++)
    if (strcmp(apis[i]->api, name) == 0) a = apis[i];
  if (a == NULL) return luaL_error(L, "kjit: no options table for '%s'", name);
  int v[KOPT_MAX];
  lua_settop(L, 2);
  if (kopt_check(L, 2, a, v) != 0) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  lua_createtable(L, 0, KOPT_MAX);
  for (int i = 0; a->opts[i].name; i++) {
    const KOpt *o = &a->opts[i];
    if (o->kind == KOPT_BOOL) lua_pushboolean(L, v[i]);
    else if (o->kind == KOPT_INT) lua_pushinteger(L, v[i]);
    else lua_pushstring(L, o->choices[v[i]]);
    lua_setfield(L, -2, o->name);
  }
  return 1;
}

void kopt_push_lua(lua_State *L, int table_idx) {
  table_idx = lua_absindex(L, table_idx);
  lua_pushcfunction(L, l_options);
  lua_setfield(L, table_idx, "options");
}
