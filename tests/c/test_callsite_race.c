/*
** test_callsite_race.c: one call site's native cache (runtime/callsite.h
** KlcSite) used by two threads at once, each with a Lua state of its own,
** each calling through it and refilling it as host/callval.c fill_site
** does (runtime/callsite.c says how a reader sees one fill whole: only the
** site's owner writes it).
**
** A site lives in compiled code, which every thread running that code
** shares; luacall.c native_call reads it, then calls the entry it names,
** without a lock. Here reader A (state A, which fills the site first)
** calls its closure f1 with an integer through the site with kjit_lc_call
** (the reader compiled code calls) and refills the site itself every 64
** calls, in turn with
**   A1: f1, an integer argument, entry answering 1;
**   A2: another closure of A (f2: the callee redefined), a float argument
**       (the types changed), entry answering 11;
** while reader B (state B) calls its own closure with a float and, at
** each call, fills the site with
**   B:  its closure, a float argument, entry answering 2.
** The right answers are 1 (A) and 2 (B): the closures return them too
** when a miss runs them through the slow path. A reader that passed the
** check of one fill and called the entry of another answers 11 or 2 (A)
** or 1, 11 (B): the wrong callee. On the session's start (fill_site's
** plain copy over the site, from any state) reader A got B's entry: wrong
** answers, and ThreadSanitizer reports (tests/sh/test_tsan.sh runs this).
**
** Usage: test_callsite_race [results-file]   (writes "passed failed 0\n")
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime under -std=c11 */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"
#include "check_threads.h"
#include "host/lua_stack.h"
#include "runtime/luacall.h"
#include "runtime/luavalue.h"

/* the entries the fills name: the answer, and a count of this thread's
** native calls (so that a run where no call went native fails) */
static _Thread_local long native_hits;
static int32_t entry_a1(int64_t *a, int64_t *rets, KErr *err) {
  (void)a, (void)err;
  native_hits++;
  rets[0] = 1;
  return 0;
}
static int32_t entry_a2(int64_t *a, int64_t *rets, KErr *err) {
  (void)a, (void)err;
  native_hits++;
  rets[0] = 11;
  return 0;
}
static int32_t entry_b(int64_t *a, int64_t *rets, KErr *err) {
  (void)a, (void)err;
  native_hits++;
  rets[0] = 2;
  return 0;
}
static KEntry ea1 = entry_a1, ea2 = entry_a2, eb = entry_b;

static KlcSite site;   /* the shared site (zero: empty) */
static KlcFill fills[3];   /* A1, A2, B */
static int stop, ready;    /* (atomics) */

typedef struct Reader {
  lua_State *L;
  int tramp;         /* a registry reference to function(f, ...) return f(...) end */
  int32_t tag;       /* the argument: KLV_INT 5 or KLV_FLT 0.5 */
  int64_t bits;
  int64_t want;      /* the answer */
  int own[2];        /* the fills it makes (A: A1 and A2 in turn; B: B) */
  long calls, wrong, hits, filled;
  int64_t got;       /* a wrong answer seen */
} Reader;

/* A state with kjit, its closure (the chunk's value) in slot 1 and a
** second one in slot 2 (NULL chunk2: none), slot 3 for the result. */
static lua_State *reader_state(Reader *r, const char *chunk, const char *chunk2) {
  lua_State *L = kt_state();
  if (L == NULL) return NULL;
  (void)luaL_dostring(L, chunk);
  if (chunk2) (void)luaL_dostring(L, chunk2);
  else lua_pushnil(L);
  lua_pushnil(L);
  (void)luaL_dostring(L, "return function(f, ...) return f(...) end");
  r->tramp = luaL_ref(L, LUA_REGISTRYINDEX);
  r->L = L;
  return L;
}

/* A fill for closure at slot idx of L: one argument of kind kind, one
** integer result, entry *ep. */
static void make_fill(KlcFill *f, lua_State *L, int idx, int kind, KEntry *ep) {
  memset(f, 0, sizeof *f);
  f->fn = lua_topointer(L, idx);
  f->reg = ((const KlsState *)(void *)L)->l_G;
  f->epoch = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  f->nargs = f->nparams = f->nret = 1;
  f->kinds[0] = (uint8_t)kind;
  f->rets[0] = KLC_RINT;
  f->entryp = ep;
  f->inl = 1;
}

/* fill_site's write, from this reader's state: where the state owns the
** site (callsite.c), else nothing. */
static void refill(Reader *r, const KlcFill *f) {
  if (!kjit_lc_site_own(&site, f->reg)) return;
  site.fill = *f;
  r->filled++;
}

static void *reader(void *arg) {
  Reader *r = arg;
  KErr err;
  __atomic_add_fetch(&ready, 1, __ATOMIC_ACQ_REL);
  while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < 2) {}
  for (long k = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); k++) {
    if (k % 64 == 0 || r->own[0] == r->own[1]) refill(r, &fills[r->own[(k / 64) % 2]]);
    int32_t tags[1] = { r->tag }, slots[1] = { 0 };
    int64_t bits[1] = { r->bits };
    memset(&err, 0, sizeof err);
    int32_t rc = kjit_lc_call(r->L, r->tramp, 1, 1, tags, bits, slots, 1, 3, &site, &err);
    r->calls++;
    if (rc != KLV_OK || tags[0] != KLV_INT || bits[0] != r->want) {
      r->wrong++;
      r->got = rc != KLV_OK ? -1000 - rc : bits[0];
    }
  }
  r->hits = native_hits;
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  Reader ra = { .tag = KLV_INT, .bits = 5, .want = 1 };
  Reader rb = { .tag = KLV_FLT, .want = 2 };
  double half = 0.5;
  memcpy(&rb.bits, &half, sizeof half);
  lua_State *LA = reader_state(&ra, "return function(x) return 1 end",
                               "return function(x) return 11 end");
  lua_State *LB = reader_state(&rb, "return function(x) return 2 end", NULL);
  CHECK(LA && LB, "two Lua states with kjit");
  if (!LA || !LB) return kt_finish("test_callsite_race", argc, argv);
  if (!__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) {   /* (no native calls without them) */
    printf("SKIP test_callsite_race: the stack reads are off on this Lua\n");
    kt_result(argc, argv, 0, 0, 1);
    return 0;
  }
  make_fill(&fills[0], LA, 1, KLC_KINT, &ea1);
  make_fill(&fills[1], LA, 2, KLC_KFLT, &ea2);
  make_fill(&fills[2], LB, 1, KLC_KFLT, &eb);
  ra.own[0] = 0, ra.own[1] = 1;
  rb.own[0] = rb.own[1] = 2;
  site.linked = -1;   /* (never registered: the hook leaves the site to the readers) */
  refill(&ra, &fills[0]);   /* (A fills it first) */
  pthread_t ta, tb;
  pthread_create(&ta, NULL, reader, &ra);
  pthread_create(&tb, NULL, reader, &rb);
  double end = now_s() + 1.5;
  while (now_s() < end) {
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    nanosleep(&ts, NULL);
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  Reader *rs[2] = { &ra, &rb };
  for (int i = 0; i < 2; i++) {
    Reader *r = rs[i];
    printf("reader %c: %ld calls, %ld native, %ld fills, %ld wrong\n", "AB"[i], r->calls, r->hits,
           r->filled, r->wrong);
    CHECK(r->wrong == 0, "reader %c: %ld of %ld calls answered by another fill's entry (%lld, not %lld)",
          "AB"[i], r->wrong, r->calls, (long long)r->got, (long long)r->want);
  }
  CHECK(ra.hits > 0 && ra.filled > 2, "reader A: %ld native calls, %ld fills (the test tests nothing)",
        ra.hits, ra.filled);
  CHECK(rb.filled == 0 && rb.hits == 0, "reader B filled a site state A owns (%ld fills, %ld native)",
        rb.filled, rb.hits);
  lua_close(LA);
  lua_close(LB);
  return kt_finish("test_callsite_race", argc, argv);
}
