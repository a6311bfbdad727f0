/*
** test_loadbuffer.c: a C host (a game) that loads its scripts from memory
** with luaL_loadbuffer under a chunk name naming no file on disk
** ("@assets/game.lua", as an archive or a pack file would), then compiles
** the scripts' functions: kjit.jit from the script itself, kjit_compile
** and kjit_call from C (include/kjit.h). Also a binary chunk made with
** lua_dump (stripped and not) loaded back with luaL_loadbufferx, the same
** chunk name loaded twice with different code (a reload from memory), and
** "=game" / "@/dev/zero" chunk names. Issue 14, item 7.
**
** Every check is differential: the compiled result (values, subtypes,
** array contents, run-time error message with its "file:line:") must equal
** what the interpreter gives for the same call.
**
** kjit compiles the function's own bytecode, so no file the chunk name
** names is ever read (none exists here).
**
** Usage: test_loadbuffer [results-file]   (writes "passed failed 0\n" there)
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"


#include "check.h"

/* The game's script, as it would come out of an asset archive. The line
** numbers in the comments are those of the chunk (messages name them). */
static const char game_lua[] =
  "local kjit = require 'kjit'\n"                                   /* 1 */
  "local M = {}\n"                                                  /* 2 */
  "-- moves particles; returns how many left [0, w]\n"              /* 3 */
  "function M.step(x, v, n, dt, w)\n"                               /* 4 */
  "  local out = 0\n"                                               /* 5 */
  "  for i = 1, n do\n"                                             /* 6 */
  "    x[i] = x[i] + v[i] * dt\n"                                   /* 7 */
  "    if x[i] < 0 or x[i] > w then out = out + 1 end\n"            /* 8 */
  "  end\n"                                                         /* 9 */
  "  return out\n"                                                  /* 10 */
  "end\n"                                                           /* 11 */
  "function M.score(a, b)\n"                                        /* 12 */
  "  local s = a * 3 + b // 2\n"                                    /* 13 */
  "  return s, s / 4\n"                                             /* 14 */
  "end\n"                                                           /* 15 */
  "function M.nilarith(a)\n"                                        /* 16 */
  "  local t = a > 100 and a or nil\n"                              /* 17 */
  "  return a +\n"                                                  /* 18 */
  "    t\n"                                                         /* 19 */
  "end\n"                                                           /* 20 */
  "function M.check(a)\n"                                           /* 21 */
  "  assert(a < 10, 'too fast')\n"                                  /* 22 */
  "  return a\n"                                                    /* 23 */
  "end\n"                                                           /* 24 */
  "M.jstep = kjit.jit(M.step)\n"                                    /* 25 */
  "M.jscore = kjit.jit(M.score)\n"                                  /* 26 */
  "M.jnilarith = kjit.jit(M.nilarith)\n"                            /* 27 */
  "M.jcheck = kjit.jit(M.check)\n"                                  /* 28 */
  "return M\n";                                                     /* 29 */

/* the same lines, other code: a reload of the asset from memory */
static const char game_v2_lua[] =
  "local kjit = require 'kjit'\n"
  "local M = {}\n"
  "--\n"
  "function M.step(x, v, n, dt, w)\n"
  "  local out = 100\n"
  "  for i = 1, n do\n"
  "    x[i] = x[i] - v[i] * dt * 2\n"
  "    if x[i] < 0 or x[i] > w then out = out - 1 end\n"
  "  end\n"
  "  return out\n"
  "end\n"
  "function M.score(a, b)\n"
  "  local s = a * 5 - b // 3\n"
  "  return s, s / 8\n"
  "end\n"
  "function M.nilarith(a)\n"
  "  local t = a > 100 and a or nil\n"
  "  return a - t\n"
  "end\n"
  "function M.check(a) assert(a < 5, 'too fast') return a end\n"
  "M.jstep = kjit.jit(M.step)\n"
  "M.jscore = kjit.jit(M.score)\n"
  "M.jnilarith = kjit.jit(M.nilarith)\n"
  "M.jcheck = kjit.jit(M.check)\n"
  "return M\n";

static lua_State *newstate(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  return L;
}

/* Loads a chunk from memory and runs it: leaves its one result (the
** module table) on the stack. Returns the status. */
static int load_run(lua_State *L, const char *buf, size_t len, const char *name,
                    const char *mode) {
  int st = luaL_loadbufferx(L, buf, len, name, mode);
  if (st == LUA_OK) st = lua_pcall(L, 0, 1, 0);
  if (st != LUA_OK) {
    printf("  chunk %s: %s\n", name, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return st;
}

/* ---- arguments and results --------------------------------------------- */

#define NPART 6
static const double X0[NPART] = { 0.5, 9.75, 3.0, -0.25, 5.5, 9.9 };
static const double V0[NPART] = { 1.0, 1.5, -4.0, 0.5, 0.0, 0.25 };

/* One argument of a call: a number, or an f64 array (copied for each run
** so that both runs start from the same data). */
typedef struct Arg {
  int isarr;
  kjit_value v;             /* a number */
  const double *data;       /* an array of NPART elements */
} Arg;

static Arg num_i(int64_t i) { Arg a = { 0, kjit_int(i), NULL }; return a; }
static Arg num_f(double f) { Arg a = { 0, kjit_float(f), NULL }; return a; }
static Arg arr(const double *d) { Arg a; memset(&a, 0, sizeof a); a.isarr = 1; a.data = d; return a; }

/* What one run gives: status, results (as text with their subtypes: an
** integer 3 and a float 3.0 differ), the message, the arrays after it. */
typedef struct Outcome {
  int status;
  char text[512];
  double arrays[4][NPART];
} Outcome;

static void describe_value(lua_State *L, int idx, char *buf, size_t n) {
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) snprintf(buf, n, "%lld", (long long)lua_tointeger(L, idx));
    else snprintf(buf, n, "%.17g/f", lua_tonumber(L, idx));
    break;
  case LUA_TBOOLEAN: snprintf(buf, n, "%s", lua_toboolean(L, idx) ? "true" : "false"); break;
  case LUA_TNIL: snprintf(buf, n, "nil"); break;
  default: snprintf(buf, n, "<%s>", luaL_typename(L, idx)); break;
  }
}

static void describe_kv(const kjit_value *v, char *buf, size_t n) {
  switch (v->type) {
  case KJIT_TINT: snprintf(buf, n, "%lld", (long long)v->v.i); break;
  case KJIT_TFLOAT: snprintf(buf, n, "%.17g/f", v->v.f); break;
  case KJIT_TBOOL: snprintf(buf, n, "%s", v->v.b ? "true" : "false"); break;
  case KJIT_TNIL: snprintf(buf, n, "nil"); break;
  default: snprintf(buf, n, "<array>"); break;
  }
}

static void append(char *dst, size_t n, const char *s) {
  size_t l = strlen(dst);
  if (l + 1 < n) snprintf(dst + l, n - l, "%s%s", l ? "|" : "", s);
}

/* Calls module field `field` (a Lua function or a kjit.jit object) from
** Lua with args: arrays are kjit arrays borrowing out->arrays. */
static void lua_run(lua_State *L, int mod, const char *field, const Arg *args, int nargs,
                    int nres, Outcome *out) {
  memset(out, 0, sizeof *out);
  int top = lua_gettop(L);
  lua_getfield(L, mod, field);
  int na = 0;
  for (int i = 0; i < nargs; i++) {
    if (args[i].isarr) {
      memcpy(out->arrays[na], args[i].data, sizeof out->arrays[na]);
      int64_t shape[1] = { NPART };
      if (kjit_pusharray(L, out->arrays[na], KJIT_F64, 1, shape, NULL, NULL, NULL) != KJIT_OK) {
        printf("  kjit_pusharray: %s\n", lua_tostring(L, -1));
        lua_pushnil(L);
      }
      na++;
    } else if (args[i].v.type == KJIT_TINT) {
      lua_pushinteger(L, args[i].v.v.i);
    } else {
      lua_pushnumber(L, args[i].v.v.f);
    }
  }
  out->status = lua_pcall(L, nargs, nres, 0);
  if (out->status != LUA_OK) {
    snprintf(out->text, sizeof out->text, "error: %s", lua_tostring(L, -1));
  } else {
    for (int i = 0; i < nres; i++) {
      char b[64];
      describe_value(L, top + 1 + i, b, sizeof b);
      append(out->text, sizeof out->text, b);
    }
  }
  lua_settop(L, top);
}

/* Calls fn (kjit_compile's) with kjit_call: arrays are host memory. */
static void c_run(lua_State *L, const kjit_fn *fn, const Arg *args, int nargs, int nres,
                  Outcome *out) {
  memset(out, 0, sizeof *out);
  kjit_value kv[8];
  kjit_array ka[4];
  int na = 0;
  for (int i = 0; i < nargs; i++) {
    if (args[i].isarr) {
      memcpy(out->arrays[na], args[i].data, sizeof out->arrays[na]);
      kjit_array a = { out->arrays[na], KJIT_F64, 1, { NPART, 1, 1, 1 }, NULL };
      ka[na] = a;
      kv[i] = kjit_arr(&ka[na]);
      na++;
    } else {
      kv[i] = args[i].v;
    }
  }
  kjit_value res[8];
  int top = lua_gettop(L);
  out->status = kjit_call(L, fn, kv, nargs, res, nres);
  if (out->status != KJIT_OK) {
    snprintf(out->text, sizeof out->text, "error: %s", lua_tostring(L, -1));
  } else {
    for (int i = 0; i < nres; i++) {
      char b[64];
      describe_kv(&res[i], b, sizeof b);
      append(out->text, sizeof out->text, b);
    }
  }
  lua_settop(L, top);
}

/* interpreted and compiled outcomes: same status, text, arrays (bitwise) */
static int same(const Outcome *a, const Outcome *b) {
  return (a->status == LUA_OK) == (b->status == LUA_OK) && strcmp(a->text, b->text) == 0 &&
         memcmp(a->arrays, b->arrays, sizeof a->arrays) == 0;
}

/* expect: the interpreted outcome exactly, or an error message starting
** with it ("error: file:line: text") */
static int expected(const char *text, const char *expect) {
  if (strstr(expect, "error:") == expect) return strncmp(text, expect, strlen(expect)) == 0;
  return strcmp(text, expect) == 0;
}

/* M[field] interpreted vs M[jfield] (kjit.jit, made by the script) */
static void diff_jit(lua_State *L, int mod, const char *field, const char *jfield,
                     const Arg *args, int nargs, int nres, const char *expect) {
  Outcome i, c;
  lua_run(L, mod, field, args, nargs, nres, &i);
  lua_run(L, mod, jfield, args, nargs, nres, &c);
  CHECK(same(&i, &c), "%s: interpreted '%s', kjit.jit '%s'", field, i.text, c.text);
  if (expect) CHECK(expected(i.text, expect), "%s: '%s', expected '%s'", field, i.text, expect);
}

/* M[field] interpreted vs kjit_compile(M[field], sig) + kjit_call */
static void diff_capi(lua_State *L, int mod, const char *field, const char *sig,
                      const Arg *args, int nargs, int nres, const char *expect) {
  Outcome i, c;
  lua_run(L, mod, field, args, nargs, nres, &i);
  int top = lua_gettop(L);
  lua_getfield(L, mod, field);
  kjit_fn *fn = NULL;
  int st = kjit_compile(L, -1, sig, &fn);
  CHECK(st == KJIT_OK && fn != NULL, "kjit_compile %s '%s': %s", field, sig,
        st == KJIT_OK ? "" : lua_tostring(L, -1));
  if (st == KJIT_OK) {
    /* the object owning the code stays on the stack during the call */
    c_run(L, fn, args, nargs, nres, &c);
    CHECK(same(&i, &c), "%s: interpreted '%s', kjit_call '%s'", field, i.text, c.text);
    CHECK((i.status == LUA_OK) == (c.status == KJIT_OK), "%s: status %d vs %d", field,
          i.status, c.status);
  }
  if (expect) CHECK(expected(i.text, expect), "%s: '%s', expected '%s'", field, i.text, expect);
  lua_settop(L, top);
}

/* Runs the checks on a loaded game module (at the top of the stack).
** chunk: how messages name it ("assets/game.lua", "?" when stripped);
** v2: the other version's code. */
static void check_game(lua_State *L, const char *chunk, int v2, int has_lines) {
  int M = lua_gettop(L);
  Arg step[5] = { arr(X0), arr(V0), num_i(NPART), num_f(0.5), num_f(10.0) };
  Arg score_i[2] = { num_i(7), num_i(9) }, score_f[2] = { num_f(2.5), num_i(-3) };
  Arg big[1] = { num_i(20) }, small[1] = { num_f(1.5) }, one[1] = { num_i(1) };
  char want[128];

  diff_jit(L, M, "step", "jstep", step, 5, 1, v2 ? "98" : "2");
  diff_jit(L, M, "score", "jscore", score_i, 2, 2, NULL);
  diff_jit(L, M, "score", "jscore", score_f, 2, 2, NULL);
  diff_jit(L, M, "check", "jcheck", small, 1, 1, "1.5/f");
  /* run-time errors: the interpreter's message, file:line included */
  if (has_lines) snprintf(want, sizeof want, "error: %s:%d: attempt to perform arithmetic on a nil value",
                          chunk, 18);
  else snprintf(want, sizeof want, "error: %s:-1: attempt to perform arithmetic on a nil value", chunk);
  diff_jit(L, M, "nilarith", "jnilarith", one, 1, 1, want);
  if (has_lines) snprintf(want, sizeof want, "error: %s:%d: too fast", chunk, v2 ? 20 : 22);
  else snprintf(want, sizeof want, "error: too fast");
  diff_jit(L, M, "check", "jcheck", big, 1, 1, want);

  /* the C API */
  diff_capi(L, M, "step", "i64(f64[:], f64[:], i64, f64, f64)", step, 5, 1, NULL);
  diff_capi(L, M, "score", "(i64, i64)", score_i, 2, 2, NULL);
  diff_capi(L, M, "score", "(f64, i64)", score_f, 2, 2, NULL);
  diff_capi(L, M, "check", "f64(f64)", small, 1, 1, NULL);
  diff_capi(L, M, "check", "i64(i64)", big, 1, 1, want);
  if (has_lines) snprintf(want, sizeof want, "error: %s:%d: attempt to perform arithmetic", chunk, 18);
  else snprintf(want, sizeof want, "error: %s:-1: attempt to perform arithmetic", chunk);
  diff_capi(L, M, "nilarith", "(i64)", one, 1, 1, want);
}

/* lua_Writer into a growing buffer */
typedef struct Buf { char *p; size_t n, cap; } Buf;
static int buf_write(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  Buf *b = ud;
  if (b->n + sz > b->cap) {
    size_t cap = (b->n + sz) * 2;
    char *q = realloc(b->p, cap);
    if (q == NULL) return 1;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, sz);
  b->n += sz;
  return 0;
}

static void test_from_memory(void) {
  CHECK(access("assets/game.lua", F_OK) != 0, "no file assets/game.lua (the test needs none)");
  lua_State *L = newstate();
  CHECK(load_run(L, game_lua, sizeof game_lua - 1, "@assets/game.lua", "t") == LUA_OK,
        "luaL_loadbuffer '@assets/game.lua'");
  if (lua_istable(L, -1)) check_game(L, "assets/game.lua", 0, 1);
  lua_settop(L, 0);

  /* the same asset reloaded with other code under the same name: each
  ** module's functions compile to their own code */
  CHECK(load_run(L, game_lua, sizeof game_lua - 1, "@assets/game.lua", "t") == LUA_OK, "v1");
  CHECK(load_run(L, game_v2_lua, sizeof game_v2_lua - 1, "@assets/game.lua", "t") == LUA_OK, "v2");
  if (lua_istable(L, 1) && lua_istable(L, 2)) {
    check_game(L, "assets/game.lua", 1, 1);   /* v2 on top */
    lua_pop(L, 1);
    check_game(L, "assets/game.lua", 0, 1);   /* v1 again */
  }
  lua_settop(L, 0);

  /* other chunk names: "=game" (a name, no file), "@/dev/zero" (a device:
  ** reading it would never end), "game" (a name only) */
  static const struct { const char *name, *shown; } names[] = {
    { "=game", "game" }, { "@/dev/zero", "/dev/zero" }, { "game", "[string \"game\"]" } };
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    CHECK(load_run(L, game_lua, sizeof game_lua - 1, names[k].name, "t") == LUA_OK, "%s",
          names[k].name);
    if (lua_istable(L, -1)) check_game(L, names[k].shown, 0, 1);
    lua_settop(L, 0);
  }
  lua_close(L);
}

/* A binary chunk, as a host shipping precompiled scripts has: lua_dump
** of the loaded chunk into memory, loaded back with luaL_loadbufferx in
** mode "b"; stripped, its messages carry no lines (the interpreter's
** "?:-1:", or none for errors raised through luaL_error). */
static void test_binary(int strip) {
  lua_State *L = newstate();
  CHECK(luaL_loadbuffer(L, game_lua, sizeof game_lua - 1, "@assets/game.lua") == LUA_OK,
        "load source");
  Buf b = { NULL, 0, 0 };
  CHECK(lua_dump(L, buf_write, &b, strip) == 0 && b.n > 0, "lua_dump");
  lua_settop(L, 0);
  CHECK(load_run(L, b.p, b.n, "=binary", "b") == LUA_OK, "luaL_loadbufferx binary, strip %d", strip);
  /* a stripped chunk keeps no source name: "?" */
  if (lua_istable(L, -1)) check_game(L, strip ? "?" : "assets/game.lua", 0, !strip);
  free(b.p);
  lua_close(L);
}

int main(int argc, char **argv) {
  test_from_memory();
  test_binary(0);
  test_binary(1);
  printf("test_loadbuffer: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}
