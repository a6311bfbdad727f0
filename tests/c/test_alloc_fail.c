/*
** test_alloc_fail.c: allocation failure through Lua's allocator.
**
** A lua_State made with lua_newstate and an allocator that fails on
** demand runs a script that opens kjit (require), builds arrays, compiles
** and calls kjit.jit functions (callees, 2-D arrays, run-time and compile
** errors caught by pcall, f:inspect, f.signatures) under lua_pcall. For
** every N in a sample, a fresh state fails
**   - only the Nth allocation (a transient failure), and
**   - every allocation from the Nth on (memory exhausted),
** and then:
**   - the process must not crash (ASan/UBSan in build-asan check more);
**   - the script's status must be LUA_OK, LUA_ERRMEM, or an error whose
**     message is "not enough memory" (kjit raises that text itself when
**     a Lua API call it needs cannot allocate);
**   - with allocation enabled again, the same state must run the script
**     to completion with the right result, and after lua_close every byte
**     the allocator handed out must have come back.
** Scope: only memory that goes through Lua's allocator (lua_State, tables,
** strings, userdata: every kjit array, jit object, compile session and
** error message). kjit's own malloc (specialization records, arenas,
** text) and LLVM's allocations (IR, machine code) do not go through it
** and are not failed here; the ASan build's leak checker and
** tests/sh/test_valgrind.sh watch those for leaks.
**
** The sample: N = 1..EARLY_RUNS (setup code), then every k-th N from an
** offset drawn from a seed, k chosen so that each mode makes about
** SAMPLE_RUNS runs. The seed is printed; KJIT_ALLOC_FAIL_SEED=<seed>
** repeats a run, and KJIT_ALLOC_FAIL_FULL=1 sweeps every N (minutes).
**
** Usage: test_alloc_fail [results-file]   (writes "passed failed 0\n")
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "kjit.h"


/* a sampled sweep: runs per mode (the full one makes about 2,300 in all) */
enum { SAMPLE_RUNS = 150, EARLY_RUNS = 8 };

#include "check.h"

typedef struct {
  long count;        /* allocations (new blocks and growths) so far */
  long fail_at;      /* 0: never fail */
  int persistent;    /* fail every allocation from fail_at on */
  long failed;       /* allocations refused */
  size_t inuse;      /* bytes handed out and not yet freed */
} Alloc;

static void *test_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  Alloc *a = ud;
  if (ptr == NULL) osize = 0;   /* osize is then a type tag */
  if (nsize == 0) {
    free(ptr);
    a->inuse -= osize;
    return NULL;
  }
  if (nsize > osize) {          /* shrinking never fails (Lua relies on it) */
    /* a cap instead of asking malloc for terabytes (which ASan turns
    ** into an abort): kjit.zeros(1 << 44) gets "not enough memory" */
    if (nsize > ((size_t)1 << 36)) return NULL;
    a->count++;
    if (a->fail_at > 0 && (a->count == a->fail_at ||
                           (a->persistent && a->count > a->fail_at))) {
      a->failed++;
      return NULL;
    }
  }
  void *p = realloc(ptr, nsize);
  if (p != NULL) a->inuse = a->inuse - osize + nsize;
  return p;
}

/* The script: a chunk loaded with its own text as chunk name, so that
** kjit can read the functions' source (as load(src) does). */
static const char SCRIPT[] =
  "local kjit = require 'kjit'\n"
  "local a = kjit.arange(1, 65)\n"
  "local x = kjit.linspace(0, 1, 33)\n"
  "local g = kjit.zeros({6, 5}, 'f32')\n"
  "local t = kjit.array({{1, 2}, {3, 4}}, 'i32')\n"
  "local function sq(v) return v * v end\n"
  "local O = { opt = 0 }   -- LLVM time is not what this tests\n"
  "local dot = kjit.jit(function(p, q)\n"
  "  local s = 0.0\n"
  "  for i = 1, #p do s = s + p[i] * sq(q[i]) end\n"
  "  return s\n"
  "end, O)\n"
  "local fill = kjit.jit(function(m, c)\n"
  "  for i = 1, #m do for j = 1, #m[1] do m[i][j] = i * j + c end end\n"
  "end, O)\n"
  "local idx = kjit.jit(function(v, i) return v[i] end, O)\n"
  "local bad = kjit.jit(function(v) return coroutine.isyieldable() end, O)\n"
  "local r = dot(a, a) + dot(x, x)\n"
  "fill(g, 0.5)\n"
  "r = r + g[6][5] + idx(t[2], 1) + idx(a, 64)\n"
  "local function expect(phrase, f, ...)\n"
  "  local ok, e = pcall(f, ...)\n"
  "  if ok then error('no error') end\n"
  "  if not tostring(e):find(phrase, 1, true) then error(e, 0) end\n"
  "end\n"
  "expect('out of bounds', idx, a, 65)\n"
  "expect('isyieldable', bad, 1)\n"
  "expect('not enough memory', kjit.zeros, 1 << 44)\n"
  "local text = dot:inspect('types')\n"
  "r = r + #dot.signatures + (text:find('local s: f64', 1, true) and 1 or 0)\n"
  "local s = tostring(g) .. #a:totable() .. #g:copy():reshape(30):slice(2, 9)\n"
  "return r + #s\n";

static int open_kjit(lua_State *L) {
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_kjit);
  lua_setfield(L, -2, "kjit");
  return 0;
}

/* Runs the script in L; returns the lua_pcall status, result in *r or the
** message in msg. */
static int run_script(lua_State *L, double *r, char *msg, size_t msgsize) {
  int st = luaL_loadbufferx(L, SCRIPT, sizeof SCRIPT - 1, SCRIPT, "t");
  if (st == LUA_OK) st = lua_pcall(L, 0, 1, 0);
  if (st == LUA_OK) *r = lua_tonumber(L, -1);
  else snprintf(msg, msgsize, "%s", lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(no message)");
  lua_settop(L, 0);
  return st;
}

typedef struct {
  long runs, ok, errmem, errrun_mem, unexpected, recovered, leaked, setup_failed;
  long max_failed;
  char first_unexpected[512];
  char first_unrecovered[512];
} Tally;

/* One state: set up with allocation enabled, run the script with the
** failure armed, then again without. */
static void one(long fail_at, int persistent, double want, Tally *t) {
  Alloc al = { 0, 0, 0, 0, 0 };
  lua_State *L = lua_newstate(test_alloc, &al);
  if (L == NULL) { t->setup_failed++; return; }
  lua_pushcfunction(L, open_kjit);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) { t->setup_failed++; lua_close(L); return; }
  al.count = 0;
  al.fail_at = fail_at;
  al.persistent = persistent;
  double r = 0;
  char msg[512] = "";
  int st = run_script(L, &r, msg, sizeof msg);
  if (al.failed > t->max_failed) t->max_failed = al.failed;
  al.fail_at = 0;
  t->runs++;
  if (st == LUA_OK) {
    t->ok++;
    if (r != want && t->first_unexpected[0] == '\0')
      snprintf(t->first_unexpected, sizeof t->first_unexpected,
               "N=%ld%s: wrong result %.17g (want %.17g)", fail_at, persistent ? "+" : "", r, want);
    if (r != want) t->unexpected++;
  } else if (st == LUA_ERRMEM) {
    t->errmem++;
  } else if (strstr(msg, "not enough memory") != NULL) {
    t->errrun_mem++;
  } else {
    t->unexpected++;
    if (t->first_unexpected[0] == '\0')
      snprintf(t->first_unexpected, sizeof t->first_unexpected, "N=%ld%s: status %d: %s",
               fail_at, persistent ? "+" : "", st, msg);
  }
  /* allocation works again: the state must be fully usable */
  lua_gc(L, LUA_GCCOLLECT, 0);
  r = 0;
  msg[0] = '\0';
  st = run_script(L, &r, msg, sizeof msg);
  if (st == LUA_OK && r == want) t->recovered++;
  else if (t->first_unrecovered[0] == '\0')
    snprintf(t->first_unrecovered, sizeof t->first_unrecovered,
             "N=%ld%s: after recovery: status %d, result %.17g: %s",
             fail_at, persistent ? "+" : "", st, r, msg);
  lua_close(L);
  if (al.inuse != 0) t->leaked++;
}

int main(int argc, char **argv) {
  /* a reference run: the result and how many allocations the script makes */
  Alloc al = { 0, 0, 0, 0, 0 };
  lua_State *L = lua_newstate(test_alloc, &al);
  CHECK(L != NULL, "lua_newstate");
  if (L == NULL) return 1;
  lua_pushcfunction(L, open_kjit);
  CHECK(lua_pcall(L, 0, 0, 0) == LUA_OK, "open libraries");
  al.count = 0;
  double want = 0;
  char msg[512] = "";
  int st = run_script(L, &want, msg, sizeof msg);
  long total = al.count;
  CHECK(st == LUA_OK, "reference run: %s", msg);
  lua_close(L);
  CHECK(al.inuse == 0, "reference run: %zu bytes not freed by lua_close", al.inuse);
  printf("reference run: result %.17g, %ld allocations through the Lua allocator\n", want, total);
  if (st != LUA_OK) goto done;

  const char *full_env = getenv("KJIT_ALLOC_FAIL_FULL");
  int full = full_env != NULL && strcmp(full_env, "1") == 0;
  const char *seed_env = getenv("KJIT_ALLOC_FAIL_SEED");
  unsigned long seed = seed_env != NULL ? strtoul(seed_env, NULL, 10)
                                        : ((unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16)) % 1000000UL;
  if (full)
    printf("full sweep (KJIT_ALLOC_FAIL_FULL=1)\n");
  else
    printf("sampled sweep, seed %lu (KJIT_ALLOC_FAIL_SEED=%lu repeats it; "
           "KJIT_ALLOC_FAIL_FULL=1 fails every N)\n", seed, seed);
  for (int persistent = 0; persistent <= 1; persistent++) {
    Tally t;
    memset(&t, 0, sizeof t);
    if (full) {
      /* every N for exhaustion; every 4th N for single failures, which
      ** Lua's emergency collection absorbs (a stride past 1500 either way,
      ** so that a script grown bigger still ends: each run compiles four
      ** functions twice) */
      long stride = persistent ? 1 : 4;
      for (long n = 1; n <= total + 1; n += stride) {
        one(n, persistent, want, &t);
        if (n >= 1500 && total / 400 > stride) stride = total / 400;
      }
    } else {
      long k = total / SAMPLE_RUNS > 1 ? total / SAMPLE_RUNS : 1;
      long first = EARLY_RUNS + 1 + (long)((seed + 7919UL * (unsigned long)persistent) % (unsigned long)k);
      for (long n = 1; n <= EARLY_RUNS && n <= total + 1; n++) one(n, persistent, want, &t);
      for (long n = first; n <= total + 1; n += k) one(n, persistent, want, &t);
      printf("fail %s: N = 1..%d, then every %ld-th N from %ld\n",
             persistent ? "from the Nth on" : "only the Nth", EARLY_RUNS, k, first);
    }
    const char *mode = persistent ? "from the Nth on" : "only the Nth";
    printf("fail %s: %ld runs: %ld completed, %ld LUA_ERRMEM, %ld 'not enough memory' errors, "
           "%ld unexpected; %ld recovered; at most %ld allocations refused in a run\n",
           mode, t.runs, t.ok, t.errmem, t.errrun_mem, t.unexpected, t.recovered, t.max_failed);
    CHECK(t.setup_failed == 0, "%s: %ld states could not be set up", mode, t.setup_failed);
    CHECK(t.unexpected == 0, "%s: %ld unexpected outcomes, first: %s", mode, t.unexpected,
          t.first_unexpected);
    CHECK(t.recovered == t.runs, "%s: %ld of %ld states unusable afterwards, first: %s", mode,
          t.runs - t.recovered, t.runs, t.first_unrecovered);
    CHECK(t.leaked == 0, "%s: %ld states did not free every byte at lua_close", mode, t.leaked);
    /* a single failure is usually absorbed: Lua collects garbage and
    ** retries the allocation (emergency GC); exhaustion is not */
    if (persistent)
      CHECK(t.errmem + t.errrun_mem > t.runs / 2, "%s: most runs hit the failure (%ld of %ld)",
            mode, t.errmem + t.errrun_mem, t.runs);
  }

done:
  printf("test_alloc_fail: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) {
      fprintf(f, "%d %d 0\n", npass, nfail);
      fclose(f);
    }
  }
  return nfail == 0 ? 0 : 1;
}
