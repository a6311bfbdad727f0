/*
** runtime_poll.c: stopping runaway compiled code (kjit_rt_poll,
** kjit_interrupt), issue 15 item 7.
**
** Compiled code never calls Lua on its own, so a Lua hook set while it
** runs (lua.c's Ctrl-C, a watchdog's lua_sethook) or a host's request to
** stop would wait for the compiled call to end. Instead compiled code
** calls kjit_rt_poll every KRT_POLL_INTERVAL loop back edges or function
** entries (and between strip-mined chunks of counted loops); a nonzero
** result means "fail-return now, err is filled", like any run-time error.
**
** Where the poll finds its context. Every dispatcher (jit.c, capi.c,
** kernel.c) writes the Lua thread into its KErr (err->L; a store on the
** call path, where a thread-local write cost 5 ns of a 20 ns call), and
** compiled code passes that KErr to the poll. Parallel jobs (parallel.c,
** cudasim.c) run compiled code on several OS threads with KErrs of their
** own, and generated code may hand kjit_rt_parallel_for a copy of its KErr
** holding only the fields the generator mirrors: so inside a job the
** context is thread-local instead, set by the job around its chunks: the
** Lua thread (NULL on worker threads, whose polls never touch Lua) and the
** job's stop flag, chained to the flags of enclosing jobs.
**
** kjit_interrupt(L): a fixed table of KRT_SLOTS lock-free atomic words,
** each 0 or the lua_State a stop was asked for. Asking claims a free word
** with one compare-and-swap (async-signal-safe: no lock, no allocation,
** no Lua call; callable from any thread or a signal handler); a poll on
** the Lua thread takes every word equal to its running thread or to that
** thread's main state (compare-and-swap back to 0) and then fails with
** KE_INTERRUPT: "interrupted". A counter of words in use lets polls skip
** the scan when nothing is asked. A request stays pending until a poll of
** that state takes it or kjit_interrupt_clear drops it (the host calls it
** before running the next script, as it would reset a hook).
**
** Hooks. When the running thread has a count hook (lua_gethookmask(L) &
** LUA_MASKCOUNT: what lua.c's Ctrl-C and instruction-count watchdogs
** set), the poll calls the host's hook in place, on the Lua thread, with
** event LUA_HOOKCOUNT and a lua_Debug from lua_getstack (the function that
** called into compiled code, or the poll's own frame), as Lua would after
** some instructions. Reasons, against "return to the interpreter and run
** the hook there": a compiled function cannot be resumed half-way (its
** side effects are done, its locals are in registers), and a hook that
** returns normally (profilers, sandboxes with a permanent count hook) must
** not abort it; here it simply continues. Line, call and return hooks are
** not called (compiled code has no lines or calls Lua can see; a coverage
** tool called with "count" could fail): a host that stops scripts with
** such a hook adds LUA_MASKCOUNT, or calls kjit_interrupt.
** The hook runs under lua_pcall: its error is kept (registry reference,
** KE_LUAERR) and compiled code fail-returns to the dispatcher, which raises
** the same value. So no Lua error ever unwinds through compiled frames,
** which is safe for a Lua built as C (longjmp: compiled frames own
** nothing) and necessary for one built as C++ (a C++ exception could not
** unwind JIT frames that have no unwind tables: std::terminate). The price:
** luaL_error's position inside the hook names a C function, so lua.c's
** "interrupted!" comes without "file:line:". A hook that yields fails with
** "attempt to yield across a C-call boundary" (compiled code cannot be
** suspended). While a hook called from a poll runs, polls on that thread
** do not call hooks again (Lua clears allowhook the same way).
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "runtime/runtime_poll.h"
#include "runtime/alloc.h"

#define KRT_SLOTS 64

#if ATOMIC_POINTER_LOCK_FREE != 2 || ATOMIC_INT_LOCK_FREE != 2
#error "kjit_interrupt needs lock-free atomic pointers and ints (async-signal safety)"
#endif

static _Atomic(lua_State *) slots[KRT_SLOTS];
static atomic_int nslots;   /* words in use (may lag a claim by an instant) */

/* Inside a job only (read by polls, never on the call path). The default
** TLS model: initial-exec made dlopen of kjit.so fail ("cannot allocate
** memory in static TLS block"). */
static _Thread_local lua_State *tls_L;
static _Thread_local const KStop *tls_stop;
static _Thread_local int tls_in_hook;

/* ---- Job context ------------------------------------------------------------ */

KPollCtx krt_poll_job(lua_State *L, const KStop *s) {
  KPollCtx old = { tls_L, tls_stop };
  tls_L = L;
  tls_stop = s;
  return old;
}

void krt_poll_job_end(KPollCtx saved) {
  tls_L = saved.L;
  tls_stop = saved.stop;
}

KPollCtx krt_poll_here(void) {
  KPollCtx c = { tls_L, tls_stop };
  return c;
}

lua_State *krt_poll_lua(const KErr *err) {
  return tls_stop != NULL ? tls_L : err->L;
}

/* ---- kjit_interrupt ------------------------------------------------------- */

int krt_interrupt(lua_State *L) {
  if (L == NULL) return -1;
  for (int i = 0; i < KRT_SLOTS; i++)
    if (atomic_load(&slots[i]) == L) return 0;   /* already asked */
  for (int i = 0; i < KRT_SLOTS; i++) {
    lua_State *expect = NULL;
    if (atomic_compare_exchange_strong(&slots[i], &expect, L)) {
      atomic_fetch_add(&nslots, 1);
      return 0;
    }
  }
  return -1;   /* KRT_SLOTS states asked at once and none polled yet */
}

/* Takes every request for a or b; returns how many there were. */
static int take(lua_State *a, lua_State *b) {
  int n = 0;
  for (int i = 0; i < KRT_SLOTS; i++) {
    lua_State *v = atomic_load_explicit(&slots[i], memory_order_relaxed);
    if (v == NULL || (v != a && v != b)) continue;
    if (atomic_compare_exchange_strong(&slots[i], &v, NULL)) {
      atomic_fetch_sub(&nslots, 1);
      n++;
    }
  }
  return n;
}

void krt_interrupt_clear(lua_State *L) {
  if (L != NULL) take(L, L);
}

/* A request for the running thread L or for its main state. */
static int take_interrupt(lua_State *L) {
  lua_State *main = L;
  if (lua_checkstack(L, 1)) {   /* never raises; no room: L only */
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    main = lua_tothread(L, -1);
    lua_pop(L, 1);
  }
  return take(L, main) > 0;
}

/* ---- Hooks ------------------------------------------------------------------ */

static int hook_p(lua_State *L) {
  lua_Hook h = lua_gethook(L);
  if (h == NULL || !(lua_gethookmask(L) & LUA_MASKCOUNT)) return 0;
  lua_Debug ar;
  memset(&ar, 0, sizeof ar);
  if (!lua_getstack(L, 1, &ar)) lua_getstack(L, 0, &ar);
  ar.event = LUA_HOOKCOUNT;
  h(L, &ar);
  return 0;
}

/* Keeps the error value (argument 1): a registry reference. */
static int keep_p(lua_State *L) {
  lua_settop(L, 1);
  lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
  return 1;
}

void krt_set_err(KErr *err, int kind) {
  err->kind = kind;
  err->line = 0;
  err->msg = NULL;
  err->chunk = NULL;
  err->a = err->b = err->c = 0;
}

static int32_t call_hook(lua_State *L, KErr *err) {
  if (!lua_checkstack(L, 4)) return 0;   /* no room: the next poll tries again */
  int top = lua_gettop(L);
  tls_in_hook = 1;
  KAllocList *al = kal_current();   /* a jit call in the hook that failed may not put it back */
  lua_pushcfunction(L, hook_p);   /* a light C function: allocates nothing */
  int st = lua_pcall(L, 0, 0, 0);
  kal_leave(al);
  tls_in_hook = 0;
  if (st == LUA_OK) return 0;     /* the hook returned: compiled code goes on */
  krt_keep_error(L, err);
  lua_settop(L, top);
  return 1;
}

/* ---- The poll ----------------------------------------------------------------- */

void krt_keep_error(lua_State *L, KErr *err) {
  lua_pushcfunction(L, keep_p);
  lua_insert(L, -2);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
    krt_set_err(err, KE_LUAERR);
    err->a = lua_tointeger(L, -1);
  } else {
    krt_set_err(err, KE_USER_NOPOS);
    err->msg = "not enough memory";
  }
  lua_pop(L, 1);
}

_Thread_local uint64_t krt_npolls;

int32_t kjit_rt_poll(KErr *err) {
  krt_npolls++;
  const KStop *stop = tls_stop;
  for (const KStop *s = stop; s != NULL; s = s->up)
    if (atomic_load_explicit(&s->flag, memory_order_relaxed)) {
      krt_set_err(err, KE_STOPPED);
      return 1;
    }
  lua_State *L = stop != NULL ? tls_L : err->L;
  if (L == NULL) return 0;   /* a worker thread: Lua is not ours to touch */
  if (atomic_load_explicit(&nslots, memory_order_relaxed) != 0 && take_interrupt(L)) {
    krt_set_err(err, KE_INTERRUPT);
    return 1;
  }
  if (!tls_in_hook && (lua_gethookmask(L) & LUA_MASKCOUNT) && lua_gethook(L) != NULL)
    return call_hook(L, err);
  return 0;
}

/* ---- Error records ----------------------------------------------------------- */

void krt_err_discard(lua_State *L, KErr *e) {
  if (e->kind == KE_LUAERR) luaL_unref(L, LUA_REGISTRYINDEX, (int)e->a);
  e->kind = KE_NONE;
}

void krt_err_copy(KErr *dst, const KErr *src) {
  dst->kind = src->kind;
  dst->line = src->line;
  dst->a = src->a;
  dst->b = src->b;
  dst->c = src->c;
  dst->msg = src->msg;
  dst->chunk = src->chunk;
  dst->stack_limit = src->stack_limit;
  dst->f = src->f;
}
