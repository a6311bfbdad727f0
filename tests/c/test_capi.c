/*
** test_capi.c: every function of include/kjit.h, used as a host program
** would (through the public header and lua_State only), and misused:
** bad dtypes, NULL pointers, too many dimensions, negative extents,
** non-contiguous strides, wrong argument counts and types, run-time errors
** inside compiled code (message with file:line), compile errors, and the
** release callback called exactly once (after GC, after lua_close).
**
** Usage: test_capi [results-file]   (writes "passed failed 0\n" there)
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp under -std=c11 */
#endif
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"


#include "check.h"

static char tmpdir[64];

/* A state with the standard libraries and kjit (require "kjit" works). */
static lua_State *newstate(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  return L;
}

/* Writes text to tmpdir/name and runs it; leaves its one result on the
** stack. Scripts live in files so that messages carry "name:line". */
static int run_file(lua_State *L, const char *name, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs(text, f);
  fclose(f);
  int st = luaL_loadfile(L, path);
  if (st == LUA_OK) st = lua_pcall(L, 0, 1, 0);
  if (st != LUA_OK) printf("script %s: %s\n", name, lua_tostring(L, -1));
  return st;
}

/* Runs a Lua snippet (the array or value to test as global `a`); returns
** its boolean result. */
static int lua_true(lua_State *L, const char *code) {
  if (luaL_dostring(L, code) != LUA_OK) {
    printf("  lua error: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  int r = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return r;
}

/* The top is a message containing want; pops it. */
static int msg_has(lua_State *L, const char *want) {
  const char *m = lua_tostring(L, -1);
  int ok = m != NULL && strstr(m, want) != NULL;
  if (!ok) printf("  message: %s\n  wanted: %s\n", m ? m : "(not a string)", want);
  lua_pop(L, 1);
  return ok;
}

/* ---- release counting ---------------------------------------------------- */

typedef struct Counter { int calls; void *last; } Counter;

static void count_release(void *ud, void *data) {
  Counter *c = ud;
  c->calls++;
  c->last = data;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_dtypes(void) {
  CHECK(kjit_dtype_size(KJIT_I8) == 1 && kjit_dtype_size(KJIT_U16) == 2 &&
        kjit_dtype_size(KJIT_F32) == 4 && kjit_dtype_size(KJIT_F64) == 8, "sizes");
  CHECK(strcmp(kjit_dtype_name(KJIT_U32), "u32") == 0, "name u32");
  CHECK(kjit_dtype_size(KJIT_NDTYPES) == 0 && kjit_dtype_name(KJIT_NDTYPES) == NULL, "invalid");
  CHECK(kjit_dtype_size((kjit_dtype)-1) == 0 && kjit_dtype_name((kjit_dtype)-1) == NULL,
        "negative dtype");
}

static void test_pusharray(void) {
  lua_State *L = newstate();
  double x[6] = { 1, 2, 3, 4, 5, 6 };
  int64_t shape[2] = { 2, 3 };
  int top = lua_gettop(L);
  CHECK(kjit_pusharray(L, x, KJIT_F64, 2, shape, NULL, NULL, NULL) == KJIT_OK, "push 2x3");
  CHECK(lua_gettop(L) == top + 1, "one value pushed");
  lua_setglobal(L, "a");
  CHECK(lua_true(L, "return #a == 2 and a.shape[2] == 3 and a.dtype == 'f64' "
                    "and a.ndim == 2 and a.size == 6 and a[2][1] == 4"), "seen from Lua");
  CHECK(lua_true(L, "for i = 1, 2 do for j = 1, 3 do a[i][j] = a[i][j] * 10 end end "
                    "return true"), "written from Lua");
  CHECK(x[0] == 10 && x[5] == 60, "no copy: the host sees Lua's writes (%g %g)", x[0], x[5]);
  x[1] = -7;
  CHECK(lua_true(L, "return a[1][2] == -7"), "no copy: Lua sees the host's writes");
  CHECK(lua_true(L, "return not pcall(function() return a[3] end)"), "bounds still checked");

  /* explicit strides that are the C-contiguous ones are accepted */
  int64_t good[2] = { 24, 8 };
  CHECK(kjit_pusharray(L, x, KJIT_F64, 2, shape, good, NULL, NULL) == KJIT_OK, "contiguous strides");
  lua_pop(L, 1);
  /* strides of extent-1 dimensions do not matter */
  int64_t shape1[3] = { 1, 6, 1 }, odd[3] = { 12345, 8, -3 };
  CHECK(kjit_pusharray(L, x, KJIT_F64, 3, shape1, odd, NULL, NULL) == KJIT_OK,
        "strides of extent-1 dims ignored");
  lua_pop(L, 1);
  /* an empty array may have a NULL pointer */
  int64_t zero[1] = { 0 };
  CHECK(kjit_pusharray(L, NULL, KJIT_F32, 1, zero, NULL, NULL, NULL) == KJIT_OK, "empty NULL");
  lua_setglobal(L, "e");
  CHECK(lua_true(L, "return #e == 0 and e.size == 0"), "empty array");

  /* misuse: each returns KJIT_ERRARG, pushes one message, never releases */
  Counter c = { 0, NULL };
  int64_t s4[1] = { 4 }, s5[5] = { 1, 1, 1, 1, 2 }, neg[2] = { 2, -3 };
  int64_t transposed[2] = { 8, 16 };  /* a 2x3 array stored column-major */
  int64_t backwards[1] = { -8 };
  struct { const char *what; int st; const char *msg; } cases[] = {
    { "dtype", kjit_pusharray(L, x, KJIT_NDTYPES, 1, s4, NULL, count_release, &c), "invalid dtype" },
    { "dtype -1", kjit_pusharray(L, x, (kjit_dtype)-1, 1, s4, NULL, count_release, &c), "invalid dtype" },
    { "NULL data", kjit_pusharray(L, NULL, KJIT_F64, 1, s4, NULL, count_release, &c), "data is NULL" },
    { "ndim 0", kjit_pusharray(L, x, KJIT_F64, 0, s4, NULL, count_release, &c), "1 to 4 dimensions, got 0" },
    { "ndim 5", kjit_pusharray(L, x, KJIT_F64, 5, s5, NULL, count_release, &c), "1 to 4 dimensions, got 5" },
    { "NULL shape", kjit_pusharray(L, x, KJIT_F64, 1, NULL, NULL, count_release, &c), "shape is NULL" },
    { "negative", kjit_pusharray(L, x, KJIT_F64, 2, neg, NULL, count_release, &c), "negative extent -3 in dimension 2" },
    { "strides", kjit_pusharray(L, x, KJIT_F64, 2, shape, transposed, count_release, &c), "strides (8, 16) are not C-contiguous" },
    { "neg stride", kjit_pusharray(L, x, KJIT_F64, 1, s4, backwards, count_release, &c), "expected (8)" },
    { "misaligned", kjit_pusharray(L, (char *)x + 1, KJIT_F64, 1, s4, NULL, count_release, &c), "not aligned" },
    { "huge", kjit_pusharray(L, x, KJIT_F64, 4, (int64_t[4]){ 1 << 20, 1 << 20, 1 << 20, 1 << 20 },
                             NULL, count_release, &c), "too large" },
  };
  int n = (int)(sizeof cases / sizeof cases[0]);
  CHECK(lua_gettop(L) == top + n, "one message per failure (%d for %d)", lua_gettop(L) - top, n);
  for (int i = n - 1; i >= 0; i--) {
    CHECK(cases[i].st == KJIT_ERRARG, "%s: status %d", cases[i].what, cases[i].st);
    CHECK(lua_type(L, -1) == LUA_TSTRING && msg_has(L, cases[i].msg), "%s: message", cases[i].what);
  }
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(c.calls == 0, "release never called for refused arrays (%d)", c.calls);
  lua_close(L);
  CHECK(c.calls == 0, "nor at close (%d)", c.calls);
}

static void test_release(void) {
  lua_State *L = newstate();
  float *p = malloc(16 * sizeof *p);
  int64_t n16[1] = { 16 };
  Counter c = { 0, NULL };
  CHECK(kjit_pusharray(L, p, KJIT_F32, 1, n16, NULL, count_release, &c) == KJIT_OK, "push");
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(c.calls == 0, "not released while on the stack");
  lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(c.calls == 1 && c.last == p, "released exactly once after GC (%d)", c.calls);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(c.calls == 1, "and never again (%d)", c.calls);

  /* a view keeps the borrowed memory alive */
  Counter c2 = { 0, NULL };
  CHECK(kjit_pusharray(L, p, KJIT_F32, 1, n16, NULL, count_release, &c2) == KJIT_OK, "push 2");
  lua_setglobal(L, "a");
  CHECK(lua_true(L, "v = a:slice(3, 5):reshape({3}); a = nil; return #v == 3"), "view");
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(c2.calls == 0, "a view keeps it alive (%d)", c2.calls);
  CHECK(lua_true(L, "v[1] = 2.5; return true"), "write through the view");
  CHECK(p[2] == 2.5f, "view writes reach host memory");
  CHECK(lua_true(L, "v = nil; return true"), "drop view");
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(c2.calls == 1, "released once the view is gone (%d)", c2.calls);

  /* still referenced at lua_close: released by the close, once */
  Counter c3 = { 0, NULL };
  CHECK(kjit_pusharray(L, p, KJIT_F32, 1, n16, NULL, count_release, &c3) == KJIT_OK, "push 3");
  lua_setglobal(L, "keep");
  lua_close(L);
  CHECK(c3.calls == 1 && c3.last == p, "released once at lua_close (%d)", c3.calls);
  free(p);
}

static void test_toarray(void) {
  lua_State *L = newstate();
  int top = lua_gettop(L);
  kjit_array a;
  CHECK(lua_true(L, "local kjit = require 'kjit'; z = kjit.zeros({2, 3, 4}, 'i32'); "
                    "z[2][3][4] = 7; return true"), "make");
  lua_getglobal(L, "z");
  CHECK(kjit_toarray(L, -1, &a) == KJIT_OK, "toarray");
  CHECK(a.dtype == KJIT_I32 && a.ndim == 3 && a.shape[0] == 2 && a.shape[1] == 3 &&
        a.shape[2] == 4 && a.shape[3] == 1, "dtype/shape");
  CHECK(a.data != NULL && ((int32_t *)a.data)[23] == 7, "data");
  CHECK(lua_gettop(L) == top + 1, "pushes nothing");
  lua_pop(L, 1);
  /* a view: its own data pointer and shape */
  CHECK(luaL_dostring(L, "return z[2]") == LUA_OK, "row view");
  CHECK(kjit_toarray(L, -1, &a) == KJIT_OK && a.ndim == 2 && a.shape[0] == 3 &&
        a.shape[1] == 4 && ((int32_t *)a.data)[11] == 7, "view fields");
  lua_pop(L, 1);
  /* borrowed: the host's pointer comes back */
  uint8_t bytes[10];
  int64_t n10[1] = { 10 };
  kjit_pusharray(L, bytes, KJIT_U8, 1, n10, NULL, NULL, NULL);
  CHECK(kjit_toarray(L, -1, &a) == KJIT_OK && a.data == bytes && a.dtype == KJIT_U8 &&
        a.shape[0] == 10, "borrowed");
  CHECK(kjit_toarray(L, -1, NULL) == KJIT_ERRARG, "NULL out");
  lua_pop(L, 1);
  /* not arrays */
  lua_pushnumber(L, 1.5);
  lua_newtable(L);
  lua_newuserdatauv(L, 64, 0);
  (void)luaL_dostring(L, "return io.stdout");
  lua_pushnil(L);
  int t2 = lua_gettop(L);
  for (int i = 0; i < 5; i++)
    CHECK(kjit_toarray(L, t2 - i, &a) == KJIT_ERRARG, "not an array (%d)", i);
  CHECK(kjit_toarray(L, t2 + 3, &a) == KJIT_ERRARG, "empty slot");
  CHECK(lua_gettop(L) == t2, "stack unchanged by failures");
  lua_close(L);
}

/* Compile and call: the happy paths. */
static const char *script_ok =
  "local kjit = require 'kjit'\n"
  "local M = {}\n"
  "function M.dot(x, y)\n"                                  /* 3 */
  "  local s = 0.0\n"
  "  for i = 1, #x do s = s + x[i] * y[i] end\n"
  "  return s\n"
  "end\n"
  "function M.scale(a, k)\n"                                /* 8 */
  "  for i = 1, #a do for j = 1, #a[1] do a[i][j] = a[i][j] * k end end\n"
  "end\n"
  "function M.multi(n, x, b)\n"                             /* 11 */
  "  return n * 2, x / 2, not b\n"
  "end\n"
  "function M.get(a, i)\n"                                  /* 14 */
  "  return a[i]\n"
  "end\n"
  "function M.div(a, b) return a // b end\n"                /* 17 */
  "function M.fail(x) if x > 1 then error('too big') end return x end\n" /* 18 */
  "local function sq(v) return v * v end\n"
  "function M.sumsq(a) local s = 0 for i = 1, #a do s = s + sq(a[i]) end return s end\n"
  "function M.fsum(a) local s = a[1] for i = 2, #a do s = s + a[i] end return s end\n"
  "function M.maybe(x) return x > 0 and x or nil end\n"
  "M.jdot = kjit.jit(M.dot, { boundscheck = false })\n"
  "M.noargs = function() return 42 end\n"
  "return M\n";

static void test_compile_call(void) {
  lua_State *L = newstate();
  CHECK(run_file(L, "capi_ok.lua", script_ok) == LUA_OK, "script");
  int M = lua_gettop(L);
  kjit_fn *dot, *scale, *multi, *get, *dv, *fl, *sumsq, *fsum, *maybe, *jdot, *noargs;
  lua_getfield(L, M, "dot");
  CHECK(kjit_compile(L, -1, "f64(f64[:], f64[:])", &dot) == KJIT_OK && dot, "compile dot");
  int dotobj = luaL_ref(L, LUA_REGISTRYINDEX);  /* keeps the code alive */
  lua_pop(L, 1);
  CHECK(kjit_nargs(dot) == 2 && kjit_nresults(dot) == 1, "dot arity");
  double x[5] = { 1, 2, 3, 4, 5 }, y[5] = { 2, 2, 2, 2, 2 };
  kjit_array ax = { x, KJIT_F64, 1, { 5, 1, 1, 1 }, NULL }, ay = { y, KJIT_F64, 1, { 5, 1, 1, 1 }, NULL };
  kjit_value args[2] = { kjit_arr(&ax), kjit_arr(&ay) }, r[3];
  int top = lua_gettop(L);
  CHECK(kjit_call(L, dot, args, 2, r, 1) == KJIT_OK && r[0].type == KJIT_TFLOAT &&
        r[0].v.f == 30.0, "dot = 30 (%g)", r[0].v.f);
  CHECK(lua_gettop(L) == top, "a call pushes nothing");
  /* more result slots than results: nil-filled */
  r[1].type = KJIT_TINT;
  CHECK(kjit_call(L, dot, args, 2, r, 2) == KJIT_OK && r[1].type == KJIT_TNIL, "adjusted");
  CHECK(kjit_call(L, dot, args, 2, NULL, 0) == KJIT_OK, "results dropped");

  /* a 2-D array of host memory, written in place */
  float m[2][3] = { { 1, 2, 3 }, { 4, 5, 6 } };
  kjit_array am = { m, KJIT_F32, 2, { 2, 3, 1, 1 }, NULL };
  lua_getfield(L, M, "scale");
  CHECK(kjit_compile(L, -1, "void(f32[:,:], f64)", &scale) == KJIT_OK, "compile scale");
  CHECK(kjit_nresults(scale) == 0, "void");
  kjit_value sargs[2] = { kjit_arr(&am), kjit_float(0.5) };
  CHECK(kjit_call(L, scale, sargs, 2, NULL, 0) == KJIT_OK, "scale");
  CHECK(m[0][0] == 0.5f && m[1][2] == 3.0f, "scaled in place (%g %g)", m[0][0], m[1][2]);

  /* several results of several types */
  lua_getfield(L, M, "multi");
  CHECK(kjit_compile(L, -1, "(i64, f64, bool)", &multi) == KJIT_OK, "compile multi");
  kjit_value margs[3] = { kjit_int(21), kjit_float(3.0), kjit_bool(0) };
  CHECK(kjit_call(L, multi, margs, 3, r, 3) == KJIT_OK, "multi");
  CHECK(r[0].type == KJIT_TINT && r[0].v.i == 42, "i64 result");
  CHECK(r[1].type == KJIT_TFLOAT && r[1].v.f == 1.5, "f64 result");
  CHECK(r[2].type == KJIT_TBOOL && r[2].v.b == 1, "bool result");
  CHECK(kjit_call(L, multi, margs, 3, r, 1) == KJIT_OK && r[0].v.i == 42, "fewer results");

  /* results whose kind or count differs between returns (an integer or a
  ** float; a vararg function's `return ...` or one value): the call says
  ** which, as a Lua call of the function would (a float read as the
  ** integer's bits, or a stale second result, before) */
  {
    kjit_fn *vr = NULL;
    CHECK(luaL_loadstring(L, "return function(x, ...) if x > 5 then return ... end return x end")
          == LUA_OK, "load vr");
    lua_call(L, 0, 1);
    CHECK(kjit_compile(L, -1, "(i64, f64, i64)", &vr) == KJIT_OK, "compile vr");
    kjit_value vargs[3] = { kjit_int(2), kjit_float(3.5), kjit_int(4) };
    CHECK(kjit_call(L, vr, vargs, 3, r, 3) == KJIT_OK, "vr small");
    CHECK(r[0].type == KJIT_TINT && r[0].v.i == 2, "vr: the integer x (type %d)", r[0].type);
    CHECK(r[1].type == KJIT_TNIL && r[2].type == KJIT_TNIL, "vr: one result only");
    vargs[0] = kjit_int(9);
    CHECK(kjit_call(L, vr, vargs, 3, r, 3) == KJIT_OK, "vr big");
    CHECK(r[0].type == KJIT_TFLOAT && r[0].v.f == 3.5, "vr: the float vararg (type %d)", r[0].type);
    CHECK(r[1].type == KJIT_TINT && r[1].v.i == 4, "vr: the second vararg");
    CHECK(r[2].type == KJIT_TNIL, "vr: two results");
    lua_pop(L, 2);   /* the function and vr's owner */
    kjit_fn *nr = NULL;   /* an integer or a float, one result */
    CHECK(luaL_loadstring(L, "return function(x) if x > 1 then return 1 end return 2.5 end")
          == LUA_OK, "load nr");
    lua_call(L, 0, 1);
    CHECK(kjit_compile(L, -1, "(i64)", &nr) == KJIT_OK, "compile nr");
    CHECK(kjit_call(L, nr, vargs, 1, r, 1) == KJIT_OK && r[0].type == KJIT_TINT && r[0].v.i == 1,
          "nr: the integer (type %d)", r[0].type);
    vargs[0] = kjit_int(0);
    CHECK(kjit_call(L, nr, vargs, 1, r, 1) == KJIT_OK && r[0].type == KJIT_TFLOAT && r[0].v.f == 2.5,
          "nr: the float");
    lua_pop(L, 2);
  }

  /* integer arrays, integer results */
  int16_t h[4] = { -5, 7, 300, -32768 };
  kjit_array ah = { h, KJIT_I16, 1, { 4, 1, 1, 1 }, NULL };
  lua_getfield(L, M, "get");
  CHECK(kjit_compile(L, -1, "i64(i16[:], i64)", &get) == KJIT_OK, "compile get");
  kjit_value gargs[2] = { kjit_arr(&ah), kjit_int(4) };
  CHECK(kjit_call(L, get, gargs, 2, r, 1) == KJIT_OK && r[0].type == KJIT_TINT &&
        r[0].v.i == -32768, "i16 element");

  /* f32 results come back widened */
  lua_getfield(L, M, "fsum");
  CHECK(kjit_compile(L, -1, "f32(f32[:,:])", &fsum) == KJIT_ERRCOMPILE, "2-D sum is a compile error");
  CHECK(msg_has(L, "capi_ok.lua:21:"), "located at the source line");
  float fv[3] = { 0.1f, 0.2f, 0.3f };
  kjit_array af = { fv, KJIT_F32, 1, { 3, 1, 1, 1 }, NULL };
  CHECK(kjit_compile(L, -1, "f32(f32[:])", &fsum) == KJIT_OK, "compile fsum");
  kjit_value fargs[1] = { kjit_arr(&af) };
  CHECK(kjit_call(L, fsum, fargs, 1, r, 1) == KJIT_OK && r[0].type == KJIT_TFLOAT &&
        r[0].v.f == (double)((0.1f + 0.2f) + 0.3f), "f32 result (%.9g)", r[0].v.f);

  /* false-or-number results */
  lua_getfield(L, M, "maybe");
  CHECK(kjit_compile(L, -1, "(f64)", &maybe) == KJIT_OK, "compile maybe");
  kjit_value mv = kjit_float(-1);
  CHECK(kjit_call(L, maybe, &mv, 1, r, 1) == KJIT_OK && r[0].type == KJIT_TNIL, "nil result");
  mv = kjit_float(2);
  CHECK(kjit_call(L, maybe, &mv, 1, r, 1) == KJIT_OK && r[0].type == KJIT_TFLOAT &&
        r[0].v.f == 2, "number result");

  /* compiled code calling another Lua function */
  lua_getfield(L, M, "sumsq");
  int64_t iv[3] = { 1, 2, 3 };
  kjit_array ai = { iv, KJIT_I64, 1, { 3, 1, 1, 1 }, NULL };
  CHECK(kjit_compile(L, -1, "i64(i64[:])", &sumsq) == KJIT_OK, "compile sumsq");
  kjit_value iargs[1] = { kjit_arr(&ai) };
  CHECK(kjit_call(L, sumsq, iargs, 1, r, 1) == KJIT_OK && r[0].v.i == 14, "callee");

  /* a kjit.jit object: its options are used; scripts cannot drop the code */
  lua_getfield(L, M, "jdot");
  CHECK(kjit_compile(L, -1, "f64(f64[:], f64[:])", &jdot) == KJIT_OK, "compile jit object");
  lua_getfield(L, M, "jdot");
  lua_setglobal(L, "jdot");
  CHECK(lua_true(L, "local kjit = require 'kjit'; local a = kjit.arange(1, 6, 'f64'); "
                    "jdot:compile('f64(f64[:], f64[:])'); return #jdot:inspect('llvm') > 0 "
                    "and jdot(a, a) == 55"), "the jit object keeps working from Lua");
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(kjit_call(L, jdot, args, 2, r, 1) == KJIT_OK && r[0].v.f == 30.0, "still valid");

  /* no arguments at all; the signature's "()" */
  lua_getfield(L, M, "noargs");
  CHECK(kjit_compile(L, -1, "i64()", &noargs) == KJIT_OK, "compile noargs");
  CHECK(kjit_call(L, noargs, NULL, 0, r, 1) == KJIT_OK && r[0].v.i == 42, "call noargs");

  /* run-time errors: status, message with file:line, then business as usual */
  top = lua_gettop(L);
  gargs[1] = kjit_int(5);
  CHECK(kjit_call(L, get, gargs, 2, r, 1) == KJIT_ERRRUN, "bounds error");
  CHECK(lua_gettop(L) == top + 1, "one message");
  CHECK(msg_has(L, "capi_ok.lua:15: index 5 out of bounds [1, 4]"), "bounds message");
  gargs[1] = kjit_int(2);
  CHECK(kjit_call(L, get, gargs, 2, r, 1) == KJIT_OK && r[0].v.i == 7, "fine afterwards");
  lua_getfield(L, M, "div");
  CHECK(kjit_compile(L, -1, "i64(i64, i64)", &dv) == KJIT_OK, "compile div");
  kjit_value d0[2] = { kjit_int(7), kjit_int(0) };
  CHECK(kjit_call(L, dv, d0, 2, r, 1) == KJIT_ERRRUN && msg_has(L, "capi_ok.lua:17: attempt to divide by zero"),
        "division by zero");
  lua_getfield(L, M, "fail");
  CHECK(kjit_compile(L, -1, "f64(f64)", &fl) == KJIT_OK, "compile fail");
  kjit_value big = kjit_float(3);
  CHECK(kjit_call(L, fl, &big, 1, r, 1) == KJIT_ERRRUN && msg_has(L, "capi_ok.lua:18: too big"),
        "error() message");
  CHECK(lua_gettop(L) == top + 4, "stack balanced (%d)", lua_gettop(L) - top);

  /* misuse of kjit_call: KJIT_ERRARG, one message, nothing run */
  kjit_value bad[3];
  kjit_array wrongdt = { x, KJIT_F32, 1, { 5, 1, 1, 1 }, NULL };
  kjit_array wrongnd = { x, KJIT_F64, 2, { 5, 1, 1, 1 }, NULL };
  kjit_array negshape = { x, KJIT_F64, 1, { -1, 1, 1, 1 }, NULL };
  kjit_array nulldata = { NULL, KJIT_F64, 1, { 5, 1, 1, 1 }, NULL };
  kjit_array emptynull = { NULL, KJIT_F64, 1, { 0, 1, 1, 1 }, NULL };
  kjit_array misal = { (char *)x + 4, KJIT_F64, 1, { 2, 1, 1, 1 }, NULL };
  top = lua_gettop(L);
  CHECK(kjit_call(L, dot, args, 1, r, 1) == KJIT_ERRARG &&
        msg_has(L, "1 argument given, the signature (f64[:], f64[:]) takes 2"), "too few");
  bad[0] = args[0]; bad[1] = args[1]; bad[2] = kjit_int(1);
  CHECK(kjit_call(L, dot, bad, 3, r, 1) == KJIT_ERRARG && msg_has(L, "3 arguments given"), "too many");
  bad[1] = kjit_float(1);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_ERRARG &&
        msg_has(L, "argument #2 is f64, expected f64[:]"), "scalar for array");
  bad[1] = kjit_arr(&wrongdt);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_ERRARG &&
        msg_has(L, "argument #2 is f32[:], expected f64[:]"), "wrong dtype");
  bad[1] = kjit_arr(&wrongnd);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_ERRARG &&
        msg_has(L, "argument #2 is f64[:,:], expected f64[:]"), "wrong ndim");
  bad[1] = kjit_arr(NULL);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_ERRARG && msg_has(L, "a NULL array"), "NULL array");
  bad[1] = kjit_arr(&negshape);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_ERRARG && msg_has(L, "negative extent"), "negative shape");
  bad[1] = kjit_arr(&nulldata);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_ERRARG && msg_has(L, "data is NULL"), "NULL data");
  bad[1] = kjit_arr(&misal);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_ERRARG && msg_has(L, "not aligned"), "misaligned");
  CHECK(kjit_call(L, dot, args, 2, NULL, 1) == KJIT_ERRARG && msg_has(L, "bad results"), "NULL results");
  CHECK(kjit_call(L, dot, NULL, 2, r, 1) == KJIT_ERRARG && msg_has(L, "args is NULL"), "NULL args");
  CHECK(kjit_call(L, NULL, args, 2, r, 1) == KJIT_ERRARG && msg_has(L, "fn is NULL"), "NULL fn");
  kjit_value ints[2] = { kjit_int(1), kjit_float(2) };
  CHECK(kjit_call(L, dv, ints, 2, r, 1) == KJIT_ERRARG &&
        msg_has(L, "argument #2 is f64, expected i64"), "no implicit float to int");
  ints[1].type = (kjit_type)99;
  CHECK(kjit_call(L, dv, ints, 2, r, 1) == KJIT_ERRARG && msg_has(L, "invalid kjit_value"),
        "invalid value type");
  CHECK(lua_gettop(L) == top, "every message popped");
  /* an empty array with a NULL pointer is a valid argument */
  bad[0] = kjit_arr(&emptynull); bad[1] = kjit_arr(&emptynull);
  CHECK(kjit_call(L, dot, bad, 2, r, 1) == KJIT_OK && r[0].v.f == 0.0, "empty arrays");

  /* the handle outlives a full GC while its object is referenced */
  lua_settop(L, M);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(kjit_call(L, dot, args, 2, r, 1) == KJIT_OK && r[0].v.f == 30.0, "after GC");
  luaL_unref(L, LUA_REGISTRYINDEX, dotobj);
  lua_close(L);
}

static void test_compile_errors(void) {
  lua_State *L = newstate();
  CHECK(run_file(L, "capi_bad.lua",
                 "local M = {}\n"
                 "function M.tab(x)\n"
                 "  local co = coroutine.isyieldable()\n" /* 3: refused (the interpreter's stack) */
                 "  return x\n"
                 "end\n"
                 "function M.usetab(x)\n"
                 "  local t = {}\n"                   /* tables: not through the C API */
                 "  return x\n"
                 "end\n"
                 "function M.id(x) return x end\n"
                 "return M\n") == LUA_OK, "script");
  int M = lua_gettop(L);
  kjit_fn *fn = (kjit_fn *)&fn;   /* must be reset to NULL on failure */
  int top = lua_gettop(L);
  lua_getfield(L, M, "tab");
  CHECK(kjit_compile(L, -1, "f64(f64)", &fn) == KJIT_ERRCOMPILE && fn == NULL, "table");
  CHECK(msg_has(L, "capi_bad.lua:3:"), "compile error with file:line");
  lua_pop(L, 1);
  lua_getfield(L, M, "usetab");
  CHECK(kjit_compile(L, -1, "f64(f64)", &fn) == KJIT_ERRCOMPILE && fn == NULL &&
        msg_has(L, "this function uses Lua values at run time (tables, function literals it makes"),
        "a function using tables is refused by the C API");
  CHECK(kjit_compile(L, -1, "f64(f99[:])", &fn) == KJIT_ERRCOMPILE && msg_has(L, "bad signature"),
        "bad type in signature");
  CHECK(kjit_compile(L, -1, "f64 f64", &fn) == KJIT_ERRCOMPILE && msg_has(L, "bad signature"),
        "no parentheses");
  lua_pop(L, 1);
  lua_getfield(L, M, "id");
  CHECK(kjit_compile(L, -1, "i64(f64)", &fn) == KJIT_ERRCOMPILE && msg_has(L, "declares result i64"),
        "declared result type checked");
  CHECK(kjit_compile(L, -1, "f64(f64[:,:,:,:,:])", &fn) == KJIT_ERRCOMPILE &&
        msg_has(L, "bad signature"), "5 dims");
  lua_pop(L, 1);
  CHECK(kjit_compile(L, -1, NULL, &fn) == KJIT_ERRARG && msg_has(L, "signature is NULL"), "NULL sig");
  CHECK(kjit_compile(L, M, "f64(f64)", NULL) == KJIT_ERRARG && msg_has(L, "out is NULL"), "NULL out");
  lua_pushinteger(L, 3);
  CHECK(kjit_compile(L, -1, "f64(f64)", &fn) == KJIT_ERRARG && fn == NULL &&
        msg_has(L, "got number"), "a number");
  lua_pop(L, 1);
  lua_pushcfunction(L, luaopen_kjit);
  CHECK(kjit_compile(L, -1, "f64(f64)", &fn) == KJIT_ERRARG && msg_has(L, "got a C function"),
        "a C function");
  lua_pop(L, 1);
  CHECK(kjit_compile(L, top + 5, "f64(f64)", &fn) == KJIT_ERRARG && msg_has(L, "no value"),
        "empty slot");
  CHECK(lua_gettop(L) == top, "balanced");
  lua_close(L);

  /* a state that never required kjit can still compile and push arrays */
  L = luaL_newstate();
  luaL_openlibs(L);
  CHECK(luaL_dostring(L, "return function(a) local s = 0 for i = 1, #a do s = s + a[i] end "
                         "return s end") == LUA_OK, "chunk");
  CHECK(kjit_compile(L, -1, "i64(i32[:])", &fn) == KJIT_OK, "compile without require");
  int32_t v[3] = { 4, 5, 6 };
  int64_t n3[1] = { 3 };
  CHECK(kjit_pusharray(L, v, KJIT_I32, 1, n3, NULL, NULL, NULL) == KJIT_OK, "push without require");
  kjit_array a;
  CHECK(kjit_toarray(L, -1, &a) == KJIT_OK, "toarray");
  kjit_value arg = kjit_arr(&a), r;
  CHECK(kjit_call(L, fn, &arg, 1, &r, 1) == KJIT_OK && r.v.i == 15, "call (%lld)", (long long)r.v.i);
  /* and the compiled Lua function accepts the pushed array through Lua too */
  lua_pushvalue(L, 1);
  lua_pushvalue(L, -2);
  CHECK(lua_pcall(L, 1, 1, 0) == LUA_OK && lua_tointeger(L, -1) == 15, "interpreted");
  lua_close(L);
}

/* Compiled code works on many host arrays; compile handles can be
** dropped and collected; memory stays bounded. */
static void test_many(void) {
  lua_State *L = newstate();
  CHECK(luaL_dostring(L, "return function(a, k) for i = 1, #a do a[i] = a[i] + k end end")
        == LUA_OK, "chunk");
  int f = lua_gettop(L);
  double buf[100];
  for (int i = 0; i < 100; i++) buf[i] = i;
  int ok = 1;
  for (int round = 0; round < 20; round++) {
    kjit_fn *fn;
    if (kjit_compile(L, f, "void(f64[:], i64)", &fn) != KJIT_OK) { ok = 0; lua_pop(L, 1); break; }
    kjit_array a = { buf, KJIT_F64, 1, { 100, 1, 1, 1 }, NULL };
    kjit_value args[2] = { kjit_arr(&a), kjit_int(1) };
    for (int k = 0; k < 50; k++) ok &= kjit_call(L, fn, args, 2, NULL, 0) == KJIT_OK;
    lua_pop(L, 1);                         /* drop the handle's owner */
    lua_gc(L, LUA_GCCOLLECT, 0);
  }
  CHECK(ok, "20 compiles, 1000 calls");
  CHECK(buf[0] == 1000 && buf[99] == 1099, "every call ran (%g %g)", buf[0], buf[99]);
  lua_close(L);
}

/* A host that opens only the base, math, string and table libraries (no
** debug, no io, no package) and removes load: kjit still opens, its
** Lua-written parts work, and they hand the debug library to nobody. */
static void test_minimal_state(void) {
  lua_State *L = luaL_newstate();
  luaL_requiref(L, "_G", luaopen_base, 1);
  luaL_requiref(L, "math", luaopen_math, 1);
  luaL_requiref(L, "string", luaopen_string, 1);
  luaL_requiref(L, "table", luaopen_table, 1);
  lua_settop(L, 0);
  lua_pushcfunction(L, luaopen_kjit);
  int st = lua_pcall(L, 0, 1, 0);
  CHECK(st == LUA_OK, "luaopen_kjit without debug: %s", st ? lua_tostring(L, -1) : "");
  if (st != LUA_OK) { lua_close(L); return; }
  lua_setglobal(L, "kjit");
  lua_pushnil(L);
  lua_setglobal(L, "load");
  CHECK(lua_true(L, "local f = kjit.vectorize(function(x, y) return x * y + 1 end, 'f64(f64, f64)') "
                    "local r = f(kjit.arange(4, 'f64'), 2) "
                    "return r[1] == 1 and r[4] == 7"), "vectorize in a minimal state");
  CHECK(lua_true(L, "local s = kjit.reduce(function(a, b) return a + b end) "
                    "return s(kjit.arange(1, 101)) == 5050"), "reduce in a minimal state");
  CHECK(lua_true(L, "return debug == nil and load == nil"), "no debug library leaked");
  lua_close(L);

  /* only the base library: kjit brings its own (the string metatable it
  ** then sets is documented in src/host/lkjit.c), and no string table leaks */
  L = luaL_newstate();
  luaL_requiref(L, "_G", luaopen_base, 1);
  lua_settop(L, 0);
  lua_pushcfunction(L, luaopen_kjit);
  st = lua_pcall(L, 0, 1, 0);
  CHECK(st == LUA_OK, "luaopen_kjit with the base library only: %s", st ? lua_tostring(L, -1) : "");
  if (st == LUA_OK) {
    /* a Lua-written part's first use from C (lua_parts.c loads it on use) */
    CHECK(lua_getfield(L, -1, "guvectorize") == LUA_TFUNCTION, "kjit.guvectorize read from C");
    lua_pop(L, 1);
    lua_setglobal(L, "kjit");
    CHECK(lua_true(L, "return string == nil and debug == nil"), "no library leaked into the globals");
    CHECK(lua_true(L, "local s = kjit.reduce(function(a, b) return a + b end) "
                      "return s(kjit.arange(1, 11)) == 55"), "reduce with the base library only");
  }
  lua_close(L);
}

/* A borrowed array kept alive past its release by another object's
** finalizer (resurrection, no debug library): the host frees the memory in
** release; every later use from Lua, compiled code or C is refused. */
static void free_release(void *ud, void *data) {
  Counter *c = ud;
  c->calls++;
  c->last = data;
  free(data);
}

static void test_resurrected(void) {
  lua_State *L = newstate();
  int64_t n8[1] = { 8 };
  double *p = malloc(8 * sizeof *p);
  for (int i = 0; i < 8; i++) p[i] = i + 1;
  Counter c = { 0, NULL };
  CHECK(kjit_pusharray(L, p, KJIT_F64, 1, n8, NULL, free_release, &c) == KJIT_OK, "push");
  lua_setglobal(L, "a");
  CHECK(lua_true(L,
    "kjit = require 'kjit' "
    "sum = kjit.jit(function(x) local s = 0 for i = 1, #x do s = s + x[i] end return s end) "
    "assert(sum(a) == 36) "
    "sumn = sum:native('(f64[:])') assert(sumn(a) == 36) "
    "local function setup() "
    "  local keep = { a, a:slice(2, 5), a:reshape({2, 4}) } "
    "  setmetatable({}, { __gc = function() saved = keep end }) "
    "end "
    "setup() a = nil return true"), "setup");
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(c.calls == 1 && c.last == p, "released once (%d)", c.calls);
  CHECK(lua_true(L, "return saved ~= nil"), "resurrected");
  static const char *const uses[] = {
    "return saved[1][1]", "saved[1][1] = 5", "return saved[2][1]", "saved[2][2] = 1",
    "return saved[3][2][1]", "return sum(saved[1])", "return sum(saved[2])",
    "return sumn(saved[1])", "return sumn(saved[2])",
    "return saved[1]:fill(0)", "return saved[1]:copy()", "return saved[1]:totable()",
    "return tostring(saved[2])", "return saved[1]:slice(1, 2)", "return saved[3]:reshape(8)",
    "return kjit.array(saved[1])", "return #saved[1]", "return saved[1].shape",
  };
  for (size_t i = 0; i < sizeof uses / sizeof uses[0]; i++) {
    char code[256];
    snprintf(code, sizeof code, "local ok, e = pcall(function() %s end) "
             "return not ok and tostring(e):find('array used after its memory was released', 1, true) ~= nil",
             uses[i]);
    CHECK(lua_true(L, code), "%s: refused", uses[i]);
  }
  CHECK(lua_true(L, "return kjit.isarray(saved[1])"), "still an array for isarray");
  kjit_array out;
  lua_getglobal(L, "saved");
  lua_rawgeti(L, -1, 2);
  CHECK(kjit_toarray(L, -1, &out) == KJIT_ERRARG, "kjit_toarray refuses it");
  lua_pop(L, 2);
  lua_close(L);
  CHECK(c.calls == 1, "never released again (%d)", c.calls);

  /* a kjit_compile handle a script kept past its owner's __gc: the code is
  ** freed, kjit_call refuses it */
  L = newstate();
  CHECK(luaL_dostring(L, "return function(x) return x * 2 end") == LUA_OK, "chunk");
  kjit_fn *fn = NULL;
  CHECK(kjit_compile(L, -1, "f64(f64)", &fn) == KJIT_OK, "compile");
  kjit_value arg = kjit_float(21), r;
  CHECK(kjit_call(L, fn, &arg, 1, &r, 1) == KJIT_OK && r.v.f == 42, "call");
  lua_setglobal(L, "h");
  lua_pop(L, 1);
  CHECK(lua_true(L, "local function setup() local k = { h } "
                    "setmetatable({}, { __gc = function() saved = k end }) end "
                    "setup() h = nil return true"), "setup handle");
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(lua_true(L, "return saved ~= nil"), "handle resurrected");
  int top = lua_gettop(L);
  CHECK(kjit_call(L, fn, &arg, 1, &r, 1) == KJIT_ERRARG && msg_has(L, "used after it was finalized"),
        "kjit_call refuses a handle whose code was freed");
  CHECK(lua_gettop(L) == top, "balanced");
  lua_close(L);
}

/* kjit_* failures leave a string, whatever the script raised. */
static void test_error_objects(void) {
  lua_State *L = newstate();
  static const struct { const char *raise, *want; } cases[] = {
    { "error({})", "(error object is a table value)" },
    { "error(nil)", "(error object is a nil value)" },
    { "error(setmetatable({}, { __tostring = function() return 'my error' end }))", "my error" },
    { "error(setmetatable({}, { __tostring = function() error({}) end }))",
      "(error object is a table value)" },
    { "error(42)", "42" },
    { "error(true)", "(error object is a boolean value)" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char code[512];
    /* a global read at compile time runs the environment's __index */
    snprintf(code, sizeof code,
             "local env = setmetatable({}, { __index = function(_, k) %s end }) "
             "return load('return function(x) return x + boom end', nil, 't', env)()",
             cases[i].raise);
    int top = lua_gettop(L);
    CHECK(luaL_dostring(L, code) == LUA_OK, "chunk %zu", i);
    kjit_fn *fn = NULL;
    int st = kjit_compile(L, -1, "f64(f64)", &fn);
    CHECK(st != KJIT_OK && fn == NULL, "%s: fails (%d)", cases[i].raise, st);
    CHECK(lua_gettop(L) == top + 2, "%s: one message", cases[i].raise);
    CHECK(lua_type(L, -1) == LUA_TSTRING, "%s: a string (%s)", cases[i].raise,
          luaL_typename(L, -1));
    if (lua_type(L, -1) == LUA_TSTRING)
      CHECK(msg_has(L, cases[i].want), "%s: message", cases[i].raise);
    lua_settop(L, top);
  }
  lua_close(L);
}

/* ---- Fibers: Lua run on stacks the host allocates -------------------------- */

typedef struct Fiber {
  ucontext_t ctx, back;
  char *mem;                  /* guard page, then the stack */
  size_t size;                /* usable stack bytes */
  int declare;                /* kjit_set_stack_limit on the fiber */
  lua_State *L;
  const char *code;           /* run on the fiber; returns a boolean */
  int ok;
  char msg[256];
} Fiber;

static Fiber *cur_fiber;

static void fiber_main(void) {
  Fiber *f = cur_fiber;
  if (f->declare) kjit_set_stack_limit(f->mem + 4096, f->size);
  if (luaL_dostring(f->L, f->code) != LUA_OK) {
    snprintf(f->msg, sizeof f->msg, "%s", lua_tostring(f->L, -1));
    f->ok = 0;
  } else {
    f->ok = lua_toboolean(f->L, -1);
    snprintf(f->msg, sizeof f->msg, "%s", lua_tostring(f->L, -2) ? lua_tostring(f->L, -2) : "");
  }
  lua_settop(f->L, 0);
  if (f->declare) kjit_set_stack_limit(NULL, 0);
}

/* Runs code on a fresh mmap'd stack of size bytes with a PROT_NONE page
** below it: an overflow is a segmentation fault, not silent corruption. */
static int run_on_fiber(lua_State *L, size_t size, int declare, const char *code,
                        char *msg, size_t msgsz) {
  Fiber f;
  memset(&f, 0, sizeof f);
  f.size = size;
  f.declare = declare;
  f.L = L;
  f.code = code;
  f.mem = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (f.mem == MAP_FAILED) return 0;
  mprotect(f.mem, 4096, PROT_NONE);
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.mem + 4096;
  f.ctx.uc_stack.ss_size = size;
  f.ctx.uc_link = &f.back;
  makecontext(&f.ctx, fiber_main, 0);
  cur_fiber = &f;
  swapcontext(&f.back, &f.ctx);
  munmap(f.mem, size + 4096);
  snprintf(msg, msgsz, "%s", f.msg);
  return f.ok;
}

static const char *fiber_setup =
  "kjit = require 'kjit' "
  /* not pure (it writes an array after the call): real calls, which LLVM
  ** cannot turn into a loop, each checking the stack */
  "local function rec(a, n) if n == 0 then return 0 end "
  "  local r = rec(a, n - 1) a[1] = a[1] + r return r + 1 end "
  "A = kjit.zeros(1) R = kjit.jit(rec) "
  "P = kjit.jit(function(a) local s = 0 for i in kjit.prange(1, #a) do s = s + a[i] end "
  "  return s end, { parallel = true }) "
  "return R(A, 10) == 10 and P(kjit.arange(1, 11)) == 55";
static const char *fiber_deep =
  "local ok, e = pcall(R, A, 100000000) "
  "return e, not ok and tostring(e):find('stack overflow', 1, true) ~= nil";
static const char *fiber_prange =
  "local s = P(kjit.arange(1, 100001)) return tostring(s), s == 5000050000";
static const char *fiber_some =
  "local ok, e = pcall(R, A, 2000) return tostring(e), ok and e == 2000";

static void *undeclared_thread(void *arg) {
  lua_State *L = arg;
  char msg[256];
  /* the first compiled call of this thread runs on the fiber */
  int ok = run_on_fiber(L, 512 << 10, 0, fiber_deep, msg, sizeof msg);
  CHECK(ok, "undeclared 512 KiB fiber: stack overflow error (%s)", msg);
  ok = run_on_fiber(L, 512 << 10, 0, fiber_some, msg, sizeof msg);
  CHECK(ok || strstr(msg, "stack overflow"), "undeclared fiber: a result or an error (%s)", msg);
  return NULL;
}

static void test_fibers(void) {
  lua_State *L = newstate();
  char msg[256];
  CHECK(lua_true(L, fiber_setup), "compiled on the main stack");
  CHECK(kjit_set_stack_limit(NULL, 0) == KJIT_OK, "clear");
  CHECK(kjit_set_stack_limit(msg, 0) == KJIT_ERRARG, "size 0");
  CHECK(kjit_set_stack_limit((void *)(uintptr_t)-4096, 8192) == KJIT_ERRARG, "wraps");
  /* declared stacks: the full depth they allow, then an error */
  int ok = run_on_fiber(L, 1 << 20, 1, fiber_some, msg, sizeof msg);
  CHECK(ok, "declared 1 MiB fiber runs 2000 compiled calls deep (%s)", msg);
  ok = run_on_fiber(L, 1 << 20, 1, fiber_deep, msg, sizeof msg);
  CHECK(ok, "declared 1 MiB fiber: stack overflow error (%s)", msg);
  ok = run_on_fiber(L, 128 << 10, 1, fiber_deep, msg, sizeof msg);
  CHECK(ok, "declared 128 KiB fiber: stack overflow error (%s)", msg);
  ok = run_on_fiber(L, 128 << 10, 1, fiber_prange, msg, sizeof msg);
  CHECK(ok, "declared 128 KiB fiber: a parallel loop (%s)", msg);
  /* a declaration is only used on its own stack: back on the main stack */
  CHECK(lua_true(L, "return R(A, 5000) == 5000"), "main stack unaffected");
  /* undeclared: from a thread whose first compiled call is on the fiber */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, undeclared_thread, L) == 0, "thread");
  pthread_join(t, NULL);
  lua_close(L);
}

/* The bool dtype: one byte per element, Lua booleans in scripts; host
** bytes that are nonzero read as true; compiled code takes bool arrays
** (signature bool[:]) and refuses a u8 array for one. */
static const char *script_bool =
  "local M = {}\n"
  "function M.flip(a, out)\n"                               /* 2 */
  "  local c = 0\n"
  "  for i = 1, #a do\n"
  "    if a[i] then c = c + 1 end\n"
  "    out[i] = not a[i]\n"
  "  end\n"
  "  return c, a[1]\n"
  "end\n"
  "function M.bad(a) a[1] = 1 end\n"                        /* 10 */
  "return M\n";

static void test_bool(void) {
  CHECK(kjit_dtype_size(KJIT_BOOL) == 1 && strcmp(kjit_dtype_name(KJIT_BOOL), "bool") == 0,
        "bool dtype: size 1, named bool");
  lua_State *L = newstate();
  uint8_t flags[4] = { 1, 0, 2, 0 };
  int64_t n4[1] = { 4 };
  CHECK(kjit_pusharray(L, flags, KJIT_BOOL, 1, n4, NULL, NULL, NULL) == KJIT_OK, "push bool");
  lua_setglobal(L, "a");
  CHECK(lua_true(L, "return a.dtype == 'bool' and a[1] == true and a[2] == false "
                    "and a[3] == true and math.type(a[1]) == nil"), "read as booleans");
  CHECK(lua_true(L, "a[2] = true; a[3] = false; return true"), "stores");
  CHECK(flags[1] == 1 && flags[2] == 0, "stored as 1 and 0 (%d %d)", flags[1], flags[2]);
  CHECK(lua_true(L, "local ok, e = pcall(function() a[1] = 1 end) "
                    "return not ok and e:find('boolean expected, got number', 1, true) ~= nil"),
        "a number is refused");
  kjit_array arr;
  CHECK(lua_true(L, "z = require('kjit').zeros({2, 2}, 'bool'); z[2][1] = true; return true"), "zeros");
  lua_getglobal(L, "z");
  CHECK(kjit_toarray(L, -1, &arr) == KJIT_OK && arr.dtype == KJIT_BOOL && arr.ndim == 2 &&
        ((uint8_t *)arr.data)[2] == 1 && ((uint8_t *)arr.data)[0] == 0, "toarray reports bool");
  lua_pop(L, 1);

  CHECK(run_file(L, "capi_bool.lua", script_bool) == LUA_OK, "script");
  int M = lua_gettop(L);
  kjit_fn *flip, *bad;
  lua_getfield(L, M, "flip");
  CHECK(kjit_compile(L, -1, "(bool[:], bool[:])", &flip) == KJIT_OK, "compile flip");
  int flipobj = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  uint8_t in[5] = { 1, 0, 0, 3, 1 }, out[5] = { 7, 7, 7, 7, 7 };
  kjit_array ain = { in, KJIT_BOOL, 1, { 5, 1, 1, 1 }, NULL }, aout = { out, KJIT_BOOL, 1, { 5, 1, 1, 1 }, NULL };
  kjit_value args[2] = { kjit_arr(&ain), kjit_arr(&aout) }, r[2];
  CHECK(kjit_call(L, flip, args, 2, r, 2) == KJIT_OK && r[0].type == KJIT_TINT && r[0].v.i == 3 &&
        r[1].type == KJIT_TBOOL && r[1].v.b == 1, "flip: 3 trues, a[1] true");
  CHECK(out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 0 && out[4] == 0,
        "flip wrote 0/1 (%d %d %d %d %d)", out[0], out[1], out[2], out[3], out[4]);
  /* a u8 array is not a bool array */
  kjit_array au8 = { in, KJIT_U8, 1, { 5, 1, 1, 1 }, NULL };
  kjit_value uargs[2] = { kjit_arr(&au8), kjit_arr(&aout) };
  CHECK(kjit_call(L, flip, uargs, 2, r, 2) == KJIT_ERRARG && msg_has(L, "bool"), "u8 refused");
  /* the store error of compiled code, with the script's line */
  lua_getfield(L, M, "bad");
  CHECK(kjit_compile(L, -1, "void(bool[:])", &bad) == KJIT_OK, "compile bad");
  int badobj = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  kjit_value bargs[1] = { kjit_arr(&ain) };
  CHECK(kjit_call(L, bad, bargs, 1, NULL, 0) == KJIT_ERRRUN &&
        msg_has(L, "capi_bool.lua:10: boolean expected, got number"), "store error");
  luaL_unref(L, LUA_REGISTRYINDEX, flipobj);
  luaL_unref(L, LUA_REGISTRYINDEX, badobj);
  lua_close(L);
}

/* f16: the ABI's values kept (KJIT_F16 after KJIT_BOOL), 2-byte IEEE
** halves from the host, a compiled function over them. */
static void test_f16(void) {
  CHECK(KJIT_BOOL == 10 && KJIT_F16 == 11 && KJIT_NDTYPES == 12, "the enum's values");
  CHECK(kjit_dtype_size(KJIT_F16) == 2 && strcmp(kjit_dtype_name(KJIT_F16), "f16") == 0,
        "f16 dtype: size 2, named f16");
  lua_State *L = newstate();
  uint16_t h[3] = { 0x3c00, 0xc000, 0x7bff };   /* 1.0, -2.0, 65504 */
  int64_t n3[1] = { 3 };
  CHECK(kjit_pusharray(L, h, KJIT_F16, 1, n3, NULL, NULL, NULL) == KJIT_OK, "push f16");
  lua_setglobal(L, "a");
  CHECK(lua_true(L, "return a.dtype == 'f16' and a[1] == 1.0 and a[2] == -2.0 and a[3] == 65504 "
                    "and math.type(a[1]) == 'float'"), "read as floats");
  CHECK(lua_true(L, "a[1] = 0.1; a[2] = 1e9; return true"), "stores");
  CHECK(h[0] == 0x2e66 && h[1] == 0x7c00, "rounded to half (%04x %04x)", h[0], h[1]);
  CHECK(lua_true(L, "local f = require('kjit').jit(function(x) x[3] = x[3] / 3 end) f(a) return true"),
        "compiled store");
  CHECK(h[2] == 0x7555, "65504 / 3 rounded (%04x)", h[2]);
  kjit_array arr;
  lua_getglobal(L, "a");
  CHECK(kjit_toarray(L, -1, &arr) == KJIT_OK && arr.dtype == KJIT_F16 && arr.data == (void *)h,
        "toarray reports f16");
  lua_pop(L, 1);
  lua_close(L);
}

int main(int argc, char **argv) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/kjit-capi-XXXXXX");
  if (mkdtemp(tmpdir) == NULL) { perror("mkdtemp"); return 1; }
  test_dtypes();
  test_pusharray();
  test_release();
  test_toarray();
  test_compile_call();
  test_compile_errors();
  test_many();
  test_minimal_state();
  test_resurrected();
  test_error_objects();
  test_fibers();
  test_bool();
  test_f16();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("could not remove %s\n", tmpdir);
  printf("test_capi: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}
