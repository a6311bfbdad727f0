/*
** test_interrupt.c: stopping runaway compiled code (issue 15 item 7).
**
** Unit level (always): kjit_rt_poll driven directly, with the context the
** dispatchers set (runtime_poll.h): kjit_interrupt from this thread, from
** another thread and from a signal handler; requests for the main state
** seen from a coroutine; kjit_interrupt_clear; a full request table; count
** hooks that raise (their value comes back intact) and that return (the
** poll goes on); line hooks (not called); job stop flags and their chain;
** worker threads never touching Lua; the "interrupted" message.
**
** End to end (compiled code polls: the code generator emits kjit_rt_poll;
** a probe checks that first): an endless compiled loop stopped by a watchdog thread calling
** kjit_interrupt and by one calling lua_sethook; a permanent count hook
** that must not change results; a kjit.prange loop; simulated kernels
** (threads in turn, and OS threads with syncthreads). The latency from
** request to error is printed, never asserted (no timed assertions).
**
** Usage: test_interrupt [results-file]   (writes "passed failed skipped")
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"
#include "runtime/runtime.h"
#include "runtime/runtime_poll.h"

static int nskip;   /* nothing skips (the results file has the column) */

#include "check.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* ---- Unit level ----------------------------------------------------------------- */

static lua_State *target;   /* of the other threads and the signal handlers */

static int poll_once(lua_State *L, KErr *e) {
  memset(e, 0, sizeof *e);
  krt_poll_begin(L, e);
  return kjit_rt_poll(e);
}

static int pushmsg_p(lua_State *L) {
  krt_push_error(L, (const KErr *)lua_touserdata(L, 1));
  return 1;
}

/* The message the dispatcher would raise for e (as a string, "" if not one). */
static const char *msg_of(lua_State *L, KErr *e, char *buf, size_t n) {
  lua_pushcfunction(L, pushmsg_p);
  lua_pushlightuserdata(L, e);
  buf[0] = '\0';
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING)
    snprintf(buf, n, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  return buf;
}

static void unit_interrupt(lua_State *L) {
  KErr e;
  char buf[256];
  memset(&e, 0, sizeof e);
  CHECK(kjit_rt_poll(&e) == 0, "no Lua thread: the poll goes on");
  CHECK(poll_once(L, &e) == 0, "nothing asked: the poll goes on");
  CHECK(e.poll_left == KRT_POLL_INTERVAL && e.L == L, "the dispatcher sets the countdown and L");
  CHECK(kjit_interrupt(L) == KJIT_OK, "kjit_interrupt");
  CHECK(poll_once(L, &e) == 1 && e.kind == KE_INTERRUPT, "an interrupt stops the poll");
  CHECK(strcmp(msg_of(L, &e, buf, sizeof buf), "interrupted") == 0,
        "message 'interrupted', got '%s'", buf);
  CHECK(poll_once(L, &e) == 0, "the request was taken: the next poll goes on");
  CHECK(kjit_interrupt(L) == KJIT_OK && kjit_interrupt(L) == KJIT_OK, "asked twice");
  CHECK(poll_once(L, &e) == 1 && poll_once(L, &e) == 0, "asked twice: stops once");
  kjit_interrupt(L);
  kjit_interrupt_clear(L);
  CHECK(poll_once(L, &e) == 0, "kjit_interrupt_clear drops a request");
  CHECK(kjit_interrupt(NULL) == KJIT_ERRARG, "kjit_interrupt(NULL)");

  /* the main state's request stops a coroutine; a coroutine's request
  ** stops that coroutine only */
  lua_State *co = lua_newthread(L);
  kjit_interrupt(L);
  CHECK(poll_once(co, &e) == 1 && e.kind == KE_INTERRUPT, "main state's request, coroutine polls");
  kjit_interrupt(co);
  CHECK(poll_once(L, &e) == 0, "coroutine's request, main polls: goes on");
  CHECK(poll_once(co, &e) == 1, "coroutine's request, coroutine polls: stops");
  lua_pop(L, 1);

  /* another state's request is not ours */
  lua_State *other = luaL_newstate();
  kjit_interrupt(other);
  CHECK(poll_once(L, &e) == 0, "another state's request: goes on");
  CHECK(poll_once(other, &e) == 1, "another state's request: that state stops");
  lua_close(other);

  /* the request table is bounded: never a lock, never an allocation */
  static char fake[70];
  int ok = 0, full = 0;
  for (int i = 0; i < 70; i++) {
    if (kjit_interrupt((lua_State *)&fake[i]) == KJIT_OK) ok++;
    else full++;
  }
  CHECK(ok == 64 && full == 6, "64 pending requests at most (%d taken, %d refused)", ok, full);
  CHECK(poll_once(L, &e) == 0, "others' requests do not stop us");
  for (int i = 0; i < 70; i++) kjit_interrupt_clear((lua_State *)&fake[i]);
  CHECK(kjit_interrupt(L) == KJIT_OK && poll_once(L, &e) == 1, "room again after clearing");
}

/* A worker thread: no Lua thread in its context, a request pending. */
static void *worker_poll(void *arg) {
  KErr *e = arg;
  KStop s;
  atomic_init(&s.flag, 0);
  s.up = NULL;
  KPollCtx c = krt_poll_job(NULL, &s);
  krt_poll_begin(target, e);   /* even with L in the KErr: the job's context wins */
  int r1 = kjit_rt_poll(e);
  atomic_store(&s.flag, 1);
  int r2 = kjit_rt_poll(e);
  krt_poll_job_end(c);
  return (void *)(intptr_t)(r1 == 0 && r2 == 1 && e->kind == KE_STOPPED);
}

static void unit_stop(lua_State *L) {
  KErr e;
  memset(&e, 0, sizeof e);
  KStop outer, inner;
  atomic_init(&outer.flag, 0);
  outer.up = NULL;
  atomic_init(&inner.flag, 0);
  inner.up = &outer;
  KPollCtx c = krt_poll_job(L, &inner);
  CHECK(kjit_rt_poll(&e) == 0, "flags clear: goes on");
  kjit_interrupt(L);
  CHECK(kjit_rt_poll(&e) == 1 && e.kind == KE_INTERRUPT, "inside a job on the Lua thread: "
        "the job's L is polled (the KErr's L is not set)");
  atomic_store(&outer.flag, 1);
  CHECK(kjit_rt_poll(&e) == 1 && e.kind == KE_STOPPED, "an enclosing job's flag stops a nested job");
  krt_poll_job_end(c);
  CHECK(poll_once(L, &e) == 0, "the flag belongs to the job: gone after krt_poll_job_end");

  target = L;
  kjit_interrupt(L);
  pthread_t t;
  void *res = NULL;
  pthread_create(&t, NULL, worker_poll, &e);
  pthread_join(t, &res);
  CHECK(res == (void *)1, "a worker's poll ignores Lua and reads its job's flag");
  CHECK(poll_once(L, &e) == 1, "the request waited for the Lua thread's poll");
}

/* kjit_interrupt from another thread while this one polls. */
static void *asker(void *arg) {
  (void)arg;
  usleep(20000);
  kjit_interrupt(target);
  return NULL;
}

/* kjit_interrupt from a signal handler. */
static volatile sig_atomic_t handled;
static void on_signal(int sig) {
  (void)sig;
  kjit_interrupt(target);   /* async-signal-safe */
  handled = 1;
}

static void unit_async(lua_State *L) {
  KErr e;
  target = L;
  pthread_t t;
  pthread_create(&t, NULL, asker, NULL);
  int stopped = 0;
  double t0 = now_ms();
  /* polls until stopped; bounded (60 s) so that a bug fails, never hangs */
  while (!stopped && now_ms() - t0 < 60000) stopped = poll_once(L, &e);
  pthread_join(t, NULL);
  CHECK(stopped && e.kind == KE_INTERRUPT, "kjit_interrupt from another thread");

  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, &old);
  raise(SIGUSR1);
  CHECK(handled && poll_once(L, &e) == 1 && e.kind == KE_INTERRUPT,
        "kjit_interrupt from a signal handler");
  /* and a signal that lands while another thread polls: the handler runs
  ** on whichever thread the kernel picks */
  handled = 0;
  struct itimerval it = { { 0, 0 }, { 0, 20000 } };
  sa.sa_handler = on_signal;
  struct sigaction oldalrm;
  sigaction(SIGALRM, &sa, &oldalrm);
  setitimer(ITIMER_REAL, &it, NULL);
  stopped = 0;
  t0 = now_ms();
  while (!stopped && now_ms() - t0 < 60000) stopped = poll_once(L, &e);
  CHECK(stopped && handled, "kjit_interrupt from a timer's signal handler");
  sigaction(SIGALRM, &oldalrm, NULL);
  alarm(300);   /* the timer replaced main's hang guard: set it again */
  sigaction(SIGUSR1, &old, NULL);
}

/* ---- Hooks ------------------------------------------------------------------------ */

static int hook_calls;
static int hook_event;
static int hook_ar_ok;

static void raising_hook(lua_State *L, lua_Debug *ar) {
  hook_calls++;
  hook_event = ar->event;
  hook_ar_ok = lua_getinfo(L, "Sl", ar) != 0;   /* ar must be a valid record */
  lua_sethook(L, NULL, 0, 0);
  lua_newtable(L);   /* a table error value: must come back as it is */
  lua_pushinteger(L, 42);
  lua_setfield(L, -2, "code");
  lua_error(L);
}

static void counting_hook(lua_State *L, lua_Debug *ar) {
  (void)L;
  hook_calls++;
  hook_event = ar->event;
}

static void unit_hooks(lua_State *L) {
  KErr e;
  int top = lua_gettop(L);
  hook_calls = 0;
  lua_sethook(L, raising_hook, LUA_MASKCOUNT, 1000);
  CHECK(poll_once(L, &e) == 1 && e.kind == KE_LUAERR, "a raising count hook stops the poll");
  CHECK(hook_calls == 1 && hook_event == LUA_HOOKCOUNT && hook_ar_ok,
        "the hook ran once, event count, valid lua_Debug (%d, %d, %d)", hook_calls, hook_event,
        hook_ar_ok);
  CHECK(lua_gettop(L) == top, "the poll leaves the stack as it was");
  lua_pushcfunction(L, pushmsg_p);
  lua_pushlightuserdata(L, &e);
  CHECK(lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1), "the hook's error value comes back");
  lua_getfield(L, -1, "code");
  CHECK(lua_tointeger(L, -1) == 42, "the same table");
  lua_settop(L, top);
  CHECK(lua_gethook(L) == NULL && poll_once(L, &e) == 0, "the hook removed itself: goes on");

  /* a permanent hook that returns: called at every poll, never stops */
  hook_calls = 0;
  lua_sethook(L, counting_hook, LUA_MASKCOUNT, 1 << 30);
  int stops = 0;
  for (int i = 0; i < 100; i++) stops += poll_once(L, &e);
  CHECK(stops == 0 && hook_calls == 100, "a returning hook: 100 polls, %d stops, %d calls",
        stops, hook_calls);
  /* line and call hooks are not called by compiled code */
  hook_calls = 0;
  lua_sethook(L, counting_hook, LUA_MASKLINE | LUA_MASKCALL, 0);
  CHECK(poll_once(L, &e) == 0 && hook_calls == 0, "a line hook is not called");
  lua_sethook(L, NULL, 0, 0);

  /* an interrupt while a hook is set: the interrupt wins, the hook waits */
  hook_calls = 0;
  lua_sethook(L, counting_hook, LUA_MASKCOUNT, 1);
  kjit_interrupt(L);
  CHECK(poll_once(L, &e) == 1 && e.kind == KE_INTERRUPT && hook_calls == 0, "interrupt before hook");
  lua_sethook(L, NULL, 0, 0);

  /* a worker thread never calls the hook */
  lua_sethook(L, raising_hook, LUA_MASKCOUNT, 1);
  hook_calls = 0;
  KStop s;
  atomic_init(&s.flag, 0);
  s.up = NULL;
  KPollCtx c = krt_poll_job(NULL, &s);
  krt_poll_begin(L, &e);
  CHECK(kjit_rt_poll(&e) == 0 && hook_calls == 0, "a worker: the hook is not called");
  krt_poll_job_end(c);
  lua_sethook(L, NULL, 0, 0);
  krt_err_discard(L, &e);
}

/* ---- End to end: compiled code that polls ------------------------------------------- */

static const char *e2e_script =
  "local kjit = require 'kjit'\n"
  "local M = {}\n"
  "function M.sum(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end\n"
  "function M.forever(n) local s = 0 while s >= 0 do s = (s + n) % 1000 end return s end\n"
  "M.jsum, M.jforever = kjit.jit(M.sum), kjit.jit(M.forever)\n"
  "local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end\n"
  "M.jfib = kjit.jit(fib)   -- fib(90): recursion without loops, never ends\n"
  "M.pforever = kjit.jit(function(a, n)\n"
  "  for i in kjit.prange(1, n) do\n"
  "    local s = 0\n"
  "    while s >= 0 do s = (s + i) % 1000 end\n"
  "    a[1] = s\n"
  "  end\n"
  "end, { parallel = true })\n"
  "function M.kernel_seq(a)\n"
  "  local s = 0\n"
  "  while s >= 0 do s = (s + 1) % 1000 end\n"
  "  a[1] = s\n"
  "end\n"
  "function M.kernel_sync(a)\n"
  "  local s = 0\n"
  "  kjit.cuda.syncthreads()\n"
  "  while s >= 0 do s = (s + 1) % 1000 end\n"
  "  a[1] = s\n"
  "end\n"
  "return M\n";

static int load_module(lua_State *L) {
  if (luaL_loadstring(L, e2e_script) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    printf("FAIL loading the script: %s\n", lua_tostring(L, -1));
    nfail++;
    return 0;
  }
  lua_setglobal(L, "M");
  return 1;
}

/* Runs code (Lua source) under lua_pcall; returns the status, message in buf. */
static int run(lua_State *L, const char *code, char *buf, size_t n) {
  int st = luaL_loadstring(L, code);
  if (st == LUA_OK) st = lua_pcall(L, 0, 0, 0);
  buf[0] = '\0';
  if (st != LUA_OK) {
    snprintf(buf, n, "%s", lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(not a string)");
    lua_pop(L, 1);
  }
  return st;
}

/* Does compiled code poll? An interrupt asked before a 2^22-iteration
** compiled loop stops it only if the loop polls. */
static int polls_emitted(lua_State *L) {
  char buf[256];
  run(L, "M.jsum(10)", buf, sizeof buf);   /* compiled first */
  kjit_interrupt(L);
  int st = run(L, "M.jsum(1 << 22)", buf, sizeof buf);
  kjit_interrupt_clear(L);
  return st != LUA_OK && strstr(buf, "interrupted") != NULL;
}

typedef struct Watchdog {
  lua_State *L;
  int delay_ms;
  int use_hook;
  double asked;   /* now_ms() of the request */
} Watchdog;

static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "stopped by the watchdog's hook");
}

static void *watchdog(void *arg) {
  Watchdog *w = arg;
  usleep((useconds_t)w->delay_ms * 1000);
  w->asked = now_ms();
  if (w->use_hook) lua_sethook(w->L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE |
                               LUA_MASKCOUNT, 1);   /* as lua.c on Ctrl-C */
  else kjit_interrupt(w->L);
  return NULL;
}

/* Runs code that never ends on its own; a watchdog stops it. */
static void stopped_by(lua_State *L, const char *what, const char *code, int use_hook,
                       const char *want) {
  char buf[512];
  Watchdog w = { L, 50, use_hook, 0 };
  pthread_t t;
  pthread_create(&t, NULL, watchdog, &w);
  int st = run(L, code, buf, sizeof buf);
  double got = now_ms();
  pthread_join(t, NULL);
  lua_sethook(L, NULL, 0, 0);
  kjit_interrupt_clear(L);
  CHECK(st == LUA_ERRRUN && strstr(buf, want) != NULL, "%s: status %d, '%s'", what, st, buf);
  printf("latency %-44s %8.3f ms (request to error)\n", what, got - w.asked);
}

static void end_to_end(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 1);   /* and the global kjit */
  lua_pop(L, 1);
  if (!load_module(L)) { lua_close(L); return; }
  int polls = polls_emitted(L);
  CHECK(polls, "compiled code polls: kjit_interrupt stops a compiled loop of 2^22 iterations");
  if (!polls) { lua_close(L); return; }
  stopped_by(L, "kjit_interrupt, compiled loop", "M.jforever(1)", 0, "interrupted");
  stopped_by(L, "lua_sethook (lua.c Ctrl-C), compiled loop", "M.jforever(1)", 1,
             "stopped by the watchdog's hook");
  stopped_by(L, "kjit_interrupt, compiled recursion", "M.jfib(90)", 0, "interrupted");
  stopped_by(L, "lua_sethook, compiled recursion", "M.jfib(90)", 1,
             "stopped by the watchdog's hook");
  stopped_by(L, "kjit_interrupt, kjit.prange loop",
             "M.pforever(kjit.zeros(1, 'i64'), 1 << 40)", 0, "interrupted");
  stopped_by(L, "lua_sethook, kjit.prange loop",
             "M.pforever(kjit.zeros(1, 'i64'), 1 << 40)", 1, "stopped by the watchdog's hook");
  stopped_by(L, "kjit_interrupt, simulated kernel (threads in turn)",
             "kjit.cuda.jit(M.kernel_seq)[{4, 8}](kjit.zeros(1, 'i64'))", 0, "interrupted");
  stopped_by(L, "kjit_interrupt, simulated kernel (OS threads)",
             "kjit.cuda.jit(M.kernel_sync)[{4, 8}](kjit.zeros(1, 'i64'))", 0, "interrupted");
  stopped_by(L, "lua_sethook, simulated kernel (OS threads)",
             "kjit.cuda.jit(M.kernel_sync)[{4, 8}](kjit.zeros(1, 'i64'))", 1,
             "stopped by the watchdog's hook");

  /* a permanent count hook returns: results as the interpreter's */
  char buf[256];
  hook_calls = 0;
  lua_sethook(L, counting_hook, LUA_MASKCOUNT, 100000);
  int st = run(L, "local n = 1 << 23\n"
                  "assert(M.jsum(n) == M.sum(n), 'compiled and interpreted sums differ')",
               buf, sizeof buf);
  lua_sethook(L, NULL, 0, 0);
  CHECK(st == LUA_OK, "permanent count hook: the compiled loop ends, same result ('%s')", buf);
  CHECK(hook_calls > 0, "permanent count hook: called (%d times)", hook_calls);
  /* still usable after all that */
  st = run(L, "assert(M.jsum(1000) == M.sum(1000))", buf, sizeof buf);
  CHECK(st == LUA_OK, "calls after the stops: '%s'", buf);
  lua_close(L);
}

int main(int argc, char **argv) {
  setenv("KJIT_CUDASIM", "1", 1);
  alarm(300);   /* a hang guard: a test that never stops dies, it does not hang */
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  unit_interrupt(L);
  unit_stop(L);
  unit_async(L);
  unit_hooks(L);
  lua_close(L);
  end_to_end();
  printf("test_interrupt: %d passed, %d failed, %d skipped\n", npass, nfail, nskip);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d %d\n", npass, nfail, nskip); fclose(f); }
  }
  return nfail != 0;
}
