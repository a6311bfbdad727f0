/*
** test_export_capi.c: kjit_export and kjit_load (include/kjit.h), used as
** a host program would: a function exported from one lua_State, loaded in
** another and called with kjit_call (results equal to the interpreted
** function's there, a run-time error with the original file:line), and
** bytes refused: damaged, truncated, NULL, a kernel's, code that cannot
** be exported. (Loading in another process: tests/lua/test_export.lua.)
**
** Usage: test_export_capi [results-file]   (writes "passed failed 0\n")
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

#include "check.h"

static lua_State *newstate(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  return L;
}

/* The top is a message containing want; pops it. */
static int msg_has(lua_State *L, const char *want) {
  const char *m = lua_tostring(L, -1);
  int ok = m != NULL && strstr(m, want) != NULL;
  if (!ok) printf("  message: %s\n  wanted: %s\n", m ? m : "(not a string)", want);
  lua_pop(L, 1);
  return ok;
}

static const char *SRC =
    "return function(a, k)\n"
    "  local s = 0.0\n"
    "  for i = 1, k do s = s + a[i] * i end\n"   /* line 3: a[k] out of bounds */
    "  return s, k * 2\n"
    "end\n";

int main(int argc, char **argv) {
  lua_State *A = newstate(), *B = newstate();
  /* export from A */
  CHECK(luaL_loadbuffer(A, SRC, strlen(SRC), "=weights.lua") == LUA_OK &&
        lua_pcall(A, 0, 1, 0) == LUA_OK, "load the source");
  int fidx = lua_gettop(A);
  CHECK(kjit_export(A, fidx, "(f64[:], i64)") == KJIT_OK, "kjit_export: %s", lua_tostring(A, -1));
  size_t len = 0;
  const char *p = lua_tolstring(A, -1, &len);
  char *bytes = malloc(len);
  memcpy(bytes, p, len);
  lua_pop(A, 1);
  CHECK(kjit_export(A, fidx, "(f64[:], nope)") == KJIT_ERRCOMPILE &&
        msg_has(A, "nope"), "a bad signature");
  CHECK(kjit_export(A, fidx, NULL) == KJIT_ERRARG && msg_has(A, "signature is NULL"), "NULL sig");
  lua_pushinteger(A, 3);
  CHECK(kjit_export(A, -1, "(i64)") == KJIT_ERRARG && msg_has(A, "expected a Lua function"),
        "not a function");
  lua_pop(A, 1);
  const char *live = "T = {n = 0}; return function(x) T.n = T.n + x; return T.n end";
  CHECK(luaL_dostring(A, live) == LUA_OK, "live");
  CHECK(kjit_export(A, -1, "(i64)") == KJIT_ERRCOMPILE &&
        msg_has(A, "uses a table upvalue or global that compiled code writes into"), "process-bound code refused");
  lua_pop(A, 1);

  /* load into B and call */
  kjit_fn *fn = NULL;
  CHECK(kjit_load(B, bytes, len, &fn) == KJIT_OK && fn != NULL, "kjit_load: %s",
        lua_tostring(B, -1));
  if (fn) {
    CHECK(kjit_nargs(fn) == 2 && kjit_nresults(fn) == 2, "arity %d %d", kjit_nargs(fn),
          kjit_nresults(fn));
    double data[5] = { 1.5, -2, 3.25, 4, 0.5 };
    kjit_array arr = { data, KJIT_F64, 1, { 5 }, NULL };
    kjit_value args[2] = { kjit_arr(&arr), kjit_int(5) }, res[2];
    CHECK(kjit_call(B, fn, args, 2, res, 2) == KJIT_OK, "call: %s", lua_tostring(B, -1));
    /* the interpreted function in A, same arguments */
    CHECK(kjit_pusharray(A, data, KJIT_F64, 1, arr.shape, NULL, NULL, NULL) == KJIT_OK, "push");
    lua_pushvalue(A, fidx);
    lua_insert(A, -2);
    lua_pushinteger(A, 5);
    CHECK(lua_pcall(A, 2, 2, 0) == LUA_OK, "interpreted");
    CHECK(res[0].type == KJIT_TFLOAT && res[0].v.f == lua_tonumber(A, -2) && lua_isnumber(A, -2) &&
          !lua_isinteger(A, -2), "first result %g vs %g", res[0].v.f, lua_tonumber(A, -2));
    CHECK(res[1].type == KJIT_TINT && res[1].v.i == lua_tointeger(A, -1) && lua_isinteger(A, -1),
          "second result");
    lua_pop(A, 2);
    args[1] = kjit_int(6);
    CHECK(kjit_call(B, fn, args, 2, res, 2) == KJIT_ERRRUN &&
          msg_has(B, "weights.lua:3: index 6 out of bounds [1, 5]"), "run-time error's line");
    lua_pop(B, 1);   /* the owner object */
  }

  /* refused bytes */
  kjit_fn *bad = NULL;
  bytes[len / 2] ^= 0x20;
  CHECK(kjit_load(B, bytes, len, &bad) == KJIT_ERRARG && bad == NULL &&
        msg_has(B, "checksum mismatch"), "damaged");
  bytes[len / 2] ^= 0x20;
  CHECK(kjit_load(B, bytes, len - 3, &bad) == KJIT_ERRARG && msg_has(B, "truncated"), "truncated");
  CHECK(kjit_load(B, "nothing", 7, &bad) == KJIT_ERRARG && msg_has(B, "not code exported"),
        "not exported code");
  CHECK(kjit_load(B, NULL, 0, &bad) == KJIT_ERRARG && msg_has(B, "bytes is NULL"), "NULL");
  CHECK(kjit_load(B, bytes, len, NULL) == KJIT_ERRARG && msg_has(B, "out is NULL"), "NULL out");
  /* a kernel's bytes (the simulator's) */
  const char *kern =
      "local cuda = require('kjit').cuda; cuda.simulate(true)\n"
      "local k = cuda.jit(function(x) local i = cuda.grid(1); if i <= #x then x[i] = 1 end end)\n"
      "local b = k:export('void(f64[:])'); cuda.simulate(false); return b";
  CHECK(luaL_dostring(A, kern) == LUA_OK, "kernel export: %s", lua_tostring(A, -1));
  size_t kl;
  const char *kb = lua_tolstring(A, -1, &kl);
  CHECK(kjit_load(B, kb, kl, &bad) == KJIT_ERRARG && msg_has(B, "hold a kernel"), "a kernel");
  lua_pop(A, 1);
  CHECK(lua_gettop(B) == 0, "B's stack is balanced (%d)", lua_gettop(B));

  free(bytes);
  lua_close(A);
  lua_close(B);
  printf("test_export_capi: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}
