/*
** test_callval_handoff.c: one lua_State used by two threads in turn, and a
** call site's registry reference reused with other options
** (host/callval.c kcv_sites_gen).
**
** Compiled code calls a function value through a trampoline named by its
** registry reference; host/callval.c's inline cache (one per OS thread)
** keys its entries on that number, and the callee's specialization is
** compiled with the caller's options (boundscheck). Here:
**   1. thread A compiles a caller with boundscheck = false and calls
**      through its site: A's inline cache gets an entry for that site;
**   2. the main thread (B) drops that caller (its code freed, its
**      references released: kcv_refs_freed drops B's entries only) and
**      compiles a caller with kjit.jit's defaults (boundscheck on) whose
**      trampoline gets the same reference number (the registry's free list
**      arranged so that it does, and checked);
**   3. thread A calls through the new site: the callee must compile anew
**      with the new options, and an index past the array's end must raise
**      as the interpreter does. On the start, A's stale entry handed the
**      new site the boundscheck = false specialization (no compile).
** The threads take turns (a barrier between steps): a Lua state runs in one
** thread at a time.
**
** Usage: test_callval_handoff [results-file]   (writes "passed failed 0\n")
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

#define SITEOPTS "kjit.callval.siteopts" /* (ir/ir_type.h KTY_SITEOPTS_KEY) */

static lua_State *L;
static pthread_barrier_t turn;
static int arranged;   /* step 2 reused the reference (read by A after the barrier) */

/* Runs chunk in L: it returns true, or false and why (a CHECK named what). */
static int run(const char *what, const char *chunk) {
  int ok = luaL_loadstring(L, chunk) == LUA_OK && lua_pcall(L, 0, 2, 0) == LUA_OK;
  const char *why = lua_tostring(L, -1);
  ok = ok && lua_toboolean(L, -2);
  CHECK(ok, "%s: %s", what, why ? why : "(no message)");
  lua_pop(L, 2);
  return ok;
}

/* The registry's SITEOPTS table pushed (nil where there is none). */
static void push_siteopts(void) { lua_getfield(L, LUA_REGISTRYINDEX, SITEOPTS); }

/* The one call site whose options are recorded, or 0 (none, or several). */
static int only_site(void) {
  int site = 0, n = 0;
  push_siteopts();
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      site = (int)lua_tointeger(L, -2);
      n++;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return n == 1 ? site : 0;
}

/* Whether site's options are recorded. */
static int recorded(int site) {
  push_siteopts();
  int top = lua_gettop(L);
  int yes = lua_istable(L, -1) && lua_rawgeti(L, -1, site) != LUA_TNIL;
  lua_settop(L, top - 1);
  return yes;
}

/* Registry references taken (each holding true) until site comes; the
** others into stash. Whether it came. */
static int take_until(int site, int *stash, int *ns, int cap) {
  *ns = 0;
  while (*ns < cap) {
    lua_pushboolean(L, 1);
    int r = luaL_ref(L, LUA_REGISTRYINDEX);
    if (r == site) return 1;
    stash[(*ns)++] = r;
  }
  return 0;
}

static const char *setup =
  "local kjit = require 'kjit'\n"
  "local testing = require 'kjit.testing'\n"
  "testing.callees('all')   -- (the callee has no loop: compile it anyway)\n"
  "H = { get = function(a, i) return a[i] end, arr = kjit.arange(1, 5, 'f64') }\n"
  "BODY = function(t, a, i) if i > 0 then return t.get(a, i) end return 0 end\n"
  "OLD = kjit.jit(BODY, { boundscheck = false })\n"
  "local before = select(2, testing.callees())\n"
  "local r = OLD(H, H.arr, 2)\n"
  "local made = select(2, testing.callees()) - before\n"
  "return r == 2 and made == 1, 'first call: ' .. tostring(r) .. ', callees compiled ' .. made\n";

static const char *after =
  "local testing = require 'kjit.testing'\n"
  "local before = select(2, testing.callees())\n"
  "local r = NEW(H, H.arr, 2)\n"
  "local made = select(2, testing.callees()) - before\n"
  "if r ~= 2 or made ~= 1 then\n"
  "  return false, 'the new site: ' .. tostring(r) .. ', callees compiled ' .. made ..\n"
  "                ' (1: the callee compiles anew with the new options)'\n"
  "end\n"
  "-- past the end: boundscheck is on now, as the interpreter's error\n"
  "local ok1, e1 = pcall(BODY, H, H.arr, 9)\n"
  "local ok2, e2 = pcall(NEW, H, H.arr, 9)\n"
  "return not ok1 and not ok2 and tostring(e1) == tostring(e2),\n"
  "       'past the end: interpreted ' .. tostring(e1) .. ', compiled ' .. tostring(e2)\n";

/* Thread A: steps 1 and 3, the main thread's step 2 between them. */
static void *thread_a(void *arg) {
  (void)arg;
  int ok = run("thread A, first caller", setup);
  pthread_barrier_wait(&turn);   /* -> step 2 */
  pthread_barrier_wait(&turn);   /* <- step 2 done */
  if (ok && arranged) run("thread A, second caller", after);
  return NULL;
}

/* Step 2 (the main thread): the first caller dropped, the second compiled
** with its trampoline at the first one's registry reference. */
static void step2(void) {
  int site = only_site();
  CHECK(site > 0, "one call site's options recorded after the first caller");
  if (site <= 0) return;
  run("the first caller dropped", "OLD = nil; collectgarbage(); collectgarbage(); return true");
  CHECK(!recorded(site), "the first site's options forgotten with its code");
  /* The compile takes a few references before the trampoline's (kty_open's
  ** table of values, ...): site put k-th on the free list, k = 1, 2, ... */
  for (int k = 1; k <= 8 && !arranged; k++) {
    int stash[256], ns;
    if (!take_until(site, stash, &ns, 256) || ns < k - 1) break;
    luaL_unref(L, LUA_REGISTRYINDEX, site);
    for (int j = 0; j < k - 1; j++) luaL_unref(L, LUA_REGISTRYINDEX, stash[j]);
    /* compiled (a call that does not reach the site: B fills no entry) */
    run("the second caller compiled", "NEW = require('kjit').jit(BODY); return NEW(H, H.arr, 0) == 0");
    for (int j = k - 1; j < ns; j++) luaL_unref(L, LUA_REGISTRYINDEX, stash[j]);
    arranged = recorded(site);
    if (!arranged)
      run("a second caller dropped", "NEW = nil; collectgarbage(); collectgarbage(); return true");
  }
  CHECK(arranged, "the second caller's trampoline at the first one's registry reference");
}

int main(int argc, char **argv) {
  L = kt_state();
  CHECK(L != NULL, "a Lua state");
  if (L == NULL) return kt_finish("test_callval_handoff", argc, argv);
  pthread_barrier_init(&turn, NULL, 2);
  pthread_t a;
  if (pthread_create(&a, NULL, thread_a, NULL) != 0) {
    CHECK(0, "pthread_create");
    return kt_finish("test_callval_handoff", argc, argv);
  }
  pthread_barrier_wait(&turn);   /* step 1 done */
  step2();
  pthread_barrier_wait(&turn);
  pthread_join(a, NULL);
  pthread_barrier_destroy(&turn);
  lua_close(L);
  return kt_finish("test_callval_handoff", argc, argv);
}
