/*
** test_threads.c: several lua_States using kjit independently, in one
** thread and in different pthreads at the same time. Each state compiles
** its own functions (through kjit.jit in Lua and kjit_compile from C),
** calls them on its own buffers (kjit arrays made in Lua and host memory
** lent with kjit_pusharray), hits a run-time error, collects garbage and
** closes, while the others keep compiling, and runs a kjit.prange loop
** (the states compete for the thread pool): results are checked in every
** round. Compiled code is shared by the process (one LLJIT); nothing else
** is, so states need no locking of their own. Meant to run under ASan too.
**
** Usage: test_threads [results-file]   (writes "passed failed 0\n" there)
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_barrier_t under -std=c11 */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"
#include "check_threads.h"

#define NTHREADS 4
#define NROUNDS 5
#define N 1000


/* Each state's script freezes its own constant K into its compiled code,
** so states that shared code by mistake would compute wrong values. */
static const char *script_fmt =
  "local kjit = require 'kjit'\n"
  "local K = %d\n"
  "local M = {}\n"
  "function M.axpy(a, b, k)\n"
  "  for i = 1, #a do b[i] = a[i] * K + k end\n"
  "  return b[#b]\n"
  "end\n"
  "function M.get(a, i)\n"
  "  return a[i]\n"                                            /* line 9 */
  "end\n"
  "-- compiles a fresh jit object for a dtype and checks it from Lua\n"
  "function M.run(n, k, dtype)\n"
  "  local f = kjit.jit(M.axpy)\n"
  "  local a, b = kjit.arange(1, n + 1, dtype), kjit.zeros(n, 'f64')\n"
  "  local last = f(a, b, k)\n"
  "  for i = 1, n do if b[i] ~= i * K + k then return false, i end end\n"
  "  -- a parallel loop: the states of all threads compete for the pool\n"
  "  local ps = kjit.jit(M.psum, { parallel = true })(a)\n"
  "  if ps ~= K * n * (n + 1) // 2 then return false, 'psum ' .. ps end\n"
  "  -- more compile-time paths at once: a type error naming a built-in\n"
  "  -- (raised when the call runs, as Lua names it), and a kernel (cuda\n"
  "  -- built-ins) compiled to PTX\n"
  "  local ok, e = pcall(kjit.jit(M.bad), 1.5)\n"
  "  if ok or not tostring(e):find(\"bad argument #1 to 'floor'\", 1, true) then return false, 'bad: ' .. tostring(e) end\n"
  "  if kjit.cuda.ptx_backend() then\n"
  "    local ptx = kjit.cuda.compile_ptx(M.kern, 'void(f64[:])')\n"
  "    if not ptx:find('.entry', 1, true) then return false, 'ptx' end\n"
  "  end\n"
  "  -- and launched in the compiled simulator (KJIT_CUDASIM=1, set by main)\n"
  "  local out = kjit.zeros(64)\n"
  "  kjit.cuda.jit(M.kern)[{2, 32}](out)\n"
  "  if out[33] ~= 0 or out[64] ~= 31 then return false, 'kernel ' .. out[64] end\n"
  "  return last == n * K + k, last\n"
  "end\n"
  "function M.bad(x) return math.floor(x > 0) + math.sqrt(x) * K end\n"
  "function M.kern(x)\n"
  "  local i = kjit.cuda.grid(1)\n"
  "  if i <= #x then x[i] = math.sqrt(x[i]) * K + kjit.cuda.threadIdx.x end\n"
  "end\n"  "function M.psum(a)\n"
  "  local s = 0\n"
  "  for i in kjit.prange(1, #a) do s = s + math.tointeger(a[i]) * K end\n"
  "  return s\n"
  "end\n"
  "return M\n";

static lua_State *open_state(int K) {
  lua_State *L = kt_state();
  if (L == NULL) return NULL;
  char src[4096];
  snprintf(src, sizeof src, script_fmt, K);
  /* the chunk's source is its text, so that kjit can read it back */
  if (luaL_loadbuffer(L, src, strlen(src), src) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    printf("script: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return NULL;
  }
  return L;   /* the module is at index 1 */
}

/* One round of work in state L (module at 1) with constant K. */
static void work(lua_State *L, int K, int round, int tid) {
  static const char *const dtypes[] = { "f64", "i32", "f32", "i64", "u16" };
  const char *dt = dtypes[round % 5];
  int k = tid * 100 + round;

  /* compile and check from Lua, on Lua-made arrays */
  lua_getfield(L, 1, "run");
  lua_pushinteger(L, N);
  lua_pushinteger(L, k);
  lua_pushstring(L, dt);
  int st = lua_pcall(L, 3, 2, 0);
  CHECK(st == LUA_OK && lua_toboolean(L, -2), "thread %d round %d (%s): Lua run: %s", tid, round,
        dt, st == LUA_OK ? luaL_tolstring(L, -1, NULL) : lua_tostring(L, -1));
  lua_settop(L, 1);

  /* compile from C, call on host memory lent to Lua and on plain C arrays */
  int32_t *a = malloc(N * sizeof *a);
  double *b = malloc(N * sizeof *b);
  for (int i = 0; i < N; i++) { a[i] = i + 1; b[i] = -1; }
  kjit_fn *axpy, *get;
  lua_getfield(L, 1, "axpy");
  CHECK(kjit_compile(L, -1, "f64(i32[:], f64[:], i64)", &axpy) == KJIT_OK, "thread %d: compile: %s",
        tid, lua_tostring(L, -1));
  int64_t n = N;
  CHECK(kjit_pusharray(L, a, KJIT_I32, 1, &n, NULL, NULL, NULL) == KJIT_OK, "push");
  kjit_array aa, ab = { b, KJIT_F64, 1, { N, 1, 1, 1 }, NULL };
  CHECK(kjit_toarray(L, -1, &aa) == KJIT_OK && aa.data == a, "toarray");
  kjit_value args[3] = { kjit_arr(&aa), kjit_arr(&ab), kjit_int(k) }, r;
  CHECK(kjit_call(L, axpy, args, 3, &r, 1) == KJIT_OK && r.v.f == (double)N * K + k,
        "thread %d: kjit_call: %g", tid, r.v.f);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += b[i] != (double)(i + 1) * K + k;
  CHECK(bad == 0, "thread %d: %d wrong elements", tid, bad);

  /* a run-time error comes back to this thread, with its file:line */
  lua_getfield(L, 1, "get");
  CHECK(kjit_compile(L, -1, "f64(f64[:], i64)", &get) == KJIT_OK, "compile get");
  kjit_value gargs[2] = { kjit_arr(&ab), kjit_int(N + 1) };
  st = kjit_call(L, get, gargs, 2, &r, 1);
  CHECK(st == KJIT_ERRRUN && strstr(lua_tostring(L, -1), ":9: index 1001 out of bounds [1, 1000]"),
        "thread %d: bounds error: %s", tid, st == KJIT_ERRRUN ? lua_tostring(L, -1) : "(none)");
  lua_settop(L, 1);
  lua_gc(L, LUA_GCCOLLECT, 0);   /* frees the compiled code of this round */
  free(a);
  free(b);
}

static pthread_barrier_t start;

static void *thread_main(void *arg) {
  int tid = (int)(intptr_t)arg;
  int K = tid + 2;
  pthread_barrier_wait(&start);   /* all compile at once */
  lua_State *L = open_state(K);
  CHECK(L != NULL, "thread %d: state", tid);
  if (L == NULL) return NULL;
  for (int round = 0; round < NROUNDS; round++) work(L, K, round, tid);
  lua_close(L);
  return NULL;
}

/* Two states in one thread, interleaved; closing one leaves the other
** working, with its compiled code. */
static void two_states(void) {
  lua_State *L1 = open_state(7), *L2 = open_state(11);
  CHECK(L1 && L2, "two states");
  if (!L1 || !L2) return;
  kjit_fn *f1, *f2;
  lua_getfield(L1, 1, "axpy");
  lua_getfield(L2, 1, "axpy");
  CHECK(kjit_compile(L1, -1, "f64(f64[:], f64[:], i64)", &f1) == KJIT_OK, "compile in L1");
  CHECK(kjit_compile(L2, -1, "f64(f64[:], f64[:], i64)", &f2) == KJIT_OK, "compile in L2");
  /* the handles live as long as their owners: keep those in the registries
  ** (work() below resets the stacks) */
  luaL_ref(L1, LUA_REGISTRYINDEX);
  luaL_ref(L2, LUA_REGISTRYINDEX);
  double a[3] = { 1, 2, 3 }, b[3];
  kjit_array aa = { a, KJIT_F64, 1, { 3, 1, 1, 1 }, NULL }, ab = { b, KJIT_F64, 1, { 3, 1, 1, 1 }, NULL };
  kjit_value args[3] = { kjit_arr(&aa), kjit_arr(&ab), kjit_int(1) }, r;
  CHECK(kjit_call(L1, f1, args, 3, &r, 1) == KJIT_OK && r.v.f == 22, "L1: 3*7+1 (%g)", r.v.f);
  CHECK(kjit_call(L2, f2, args, 3, &r, 1) == KJIT_OK && r.v.f == 34, "L2: 3*11+1 (%g)", r.v.f);
  work(L1, 7, 0, 100);
  work(L2, 11, 1, 101);
  lua_close(L1);
  lua_gc(L2, LUA_GCCOLLECT, 0);
  CHECK(kjit_call(L2, f2, args, 3, &r, 1) == KJIT_OK && r.v.f == 34, "L2 after closing L1");
  work(L2, 11, 2, 101);
  lua_close(L2);
}

int main(int argc, char **argv) {
  /* kernels run in the compiled simulator (the mode is process-wide and
  ** read once: set before any state opens kjit) */
  setenv("KJIT_CUDASIM", "1", 1);
  /* the threads come first: the process's first compile (creating the
  ** LLJIT, registering runtime symbols) happens in all of them at once */
  pthread_barrier_init(&start, NULL, NTHREADS);
  if (kt_run_threads(NTHREADS, thread_main) != 0) return 1;   /* (the others wait at the barrier) */
  pthread_barrier_destroy(&start);
  two_states();
  return kt_finish("test_threads", argc, argv);
}
