/*
** parallel.c: the thread pool behind kjit.prange, and kjit.prange itself.
**
** In `kjit.jit(fn, {parallel = true})`, the code generator (cg_prange.c) outlines the body of a
** `for i in kjit.prange(a, b, step)` loop into a worker function
**     i32 worker(void **env, i64 kbegin, i64 kend, i64 chunk, KErr *err)
** that runs iterations kbegin..kend-1 (iteration k has i = a + k*step) and
** calls kjit_rt_parallel_for, which splits the iterations into chunks and
** runs them on the pool. The chunking depends only on the iteration count
** and the number of threads (kjit.set_num_threads), never on timing, so a
** reduction combines the same partial results in the same order on every
** run: results are reproducible for a given thread count.
**
** One parallel loop runs on the pool at a time. A loop that finds the pool
** busy (another Lua state's, or a prange inside a prange body) runs its
** chunks in the calling thread, in order: same chunks, same results, and no
** thread ever waits for another (no deadlock).
**
** Workers sleep on a condition variable between loops. Spinning before
** sleeping was tried and measured: on a 2-core VM shared with other jobs, a
** small loop called back to back went from 11 us to 80-120 us, because a
** spinning thread holds the core the thread it waits for needs. Hosts that
** embed kjit run threads of their own, so sleeping is the safe default.
**
** A failing chunk records its error in its own KErr and the others stop
** taking new chunks; the error of the lowest failing chunk is raised after
** the loop (iterations of other chunks may have run, as their writes show).
**
** Stopping (runtime_poll.c). The job's failure flag is also the stop flag
** the polls of compiled code read: chunks already running stop at their
** next poll (KE_STOPPED, never raised itself) instead of running to their
** end. Workers never touch Lua. The calling thread polls with its Lua
** thread, in its own chunks and, while it waits for the workers, every
** WAIT_POLL_MS: an interrupt or a hook's error sets the flag, the caller
** waits for every worker to stop, then raises it (before any chunk's
** error). A hook that returns lets the loop go on.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* sched_getcpu, pthread_setaffinity_np, CPU_SET */
#endif
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <dlfcn.h>
#include <time.h>
#include "common/clock.h"
#include "lua.h"
#include "lauxlib.h"
#include "runtime/parallel.h"
#include "runtime/alloc.h"
#include "ir/ir_builtins.h"
#include "runtime/runtime.h"
#include "runtime/runtime_poll.h"

/* Chunks per thread: more than one evens out iterations of unequal cost
** (a mandelbrot row near the set costs far more than one far from it),
** and threads of unequal speed: a worker that shares its core with another
** process runs at half speed, or wakes late, and the chunks are claimed
** one at a time, so the faster threads take more of them; the slower
** thread's last chunk is what the others wait for. With 4 per thread, two
** threads with one core busy gained nothing to 1.2x; with 16, the modelled
** gain is 1.4x of the 1.5x possible. */
#define CHUNKS_PER_THREAD 16
/* The waiting caller polls this often (the 10 ms latency target). */
#define WAIT_POLL_MS 1

typedef struct Job {
  KPrangeWorker worker;
  void **env;
  unsigned __int128 iters;     /* count + 1: up to 2^64 */
  int64_t nchunks;
  int max_workers;             /* pool threads that take part (set_num_threads) */
  atomic_llong next;           /* next chunk to claim */
  KStop stop;                  /* .flag: a chunk failed (or a stop was
                                  asked): take no more, polls fail */
  KErr *errs;                  /* by chunk */
  KAllocList *alloc;           /* the caller's allocation list (alloc.h) */
} Job;

static struct {
  pthread_once_t once;
  int size;                    /* threads a loop may use, the caller included */
  atomic_int active;           /* kjit.set_num_threads: 1..size */
  pthread_once_t started;      /* the worker threads exist */
  int nworkers;                /* threads created (size - 1, unless creation failed) */
  pthread_mutex_t busy;        /* held by the loop running on the pool */
  pthread_mutex_t m;
  pthread_cond_t wake, done;
  unsigned long generation;    /* bumped for every job */
  int open;                    /* the current job takes workers still */
  int inside;                  /* workers that joined it and are not done */
  Job *job;
  atomic_int forked;           /* in a fork()ed child the workers are gone */
  pthread_t threads[KJIT_MAX_THREADS];   /* the workers (place_workers) */
#if defined(__linux__)
  cpu_set_t allowed;           /* the cores the process may use, at start */
  int allowed_ok;
#endif
  int placed_for;              /* the core the workers were kept off (-1: none) */
} pool = { .placed_for = -1, .once = PTHREAD_ONCE_INIT, .started = PTHREAD_ONCE_INIT,
           .busy = PTHREAD_MUTEX_INITIALIZER, .m = PTHREAD_MUTEX_INITIALIZER,
           .wake = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

static void after_fork_child(void) { atomic_store(&pool.forked, 1); }

/* The pool's size: $KJIT_NUM_THREADS, else the number of online cores. */
static void size_once(void) {
  long n = 0;
  const char *e = getenv("KJIT_NUM_THREADS");
  if (e && *e) {
    char *end;
    n = strtol(e, &end, 10);
    if (*end != '\0') n = 0;   /* not a number: ignored */
  }
  if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  if (n > KJIT_MAX_THREADS) n = KJIT_MAX_THREADS;
  pool.size = (int)n;
  atomic_store(&pool.active, (int)n);
  pthread_atfork(NULL, NULL, after_fork_child);
}

int kp_pool_size(void) {
  pthread_once(&pool.once, size_once);
  return pool.size;
}

int kp_num_threads(void) {
  pthread_once(&pool.once, size_once);
  return atomic_load(&pool.active);
}

int kp_set_num_threads(int n) {
  pthread_once(&pool.once, size_once);
  if (n < 1 || n > pool.size) return -1;
  atomic_store(&pool.active, n);
  return 0;
}

/* Runs chunks of the job until none is left or one failed. L: the Lua
** thread when the caller runs them, NULL on a worker. */
static void run_chunks(Job *j, lua_State *L) {
  KPollCtx saved = krt_poll_job(L, &j->stop);
  KAllocList *saved_alloc = kal_enter(j->alloc);   /* prange bodies allocate there */
  for (;;) {
    if (atomic_load_explicit(&j->stop.flag, memory_order_relaxed)) break;
    int64_t c = atomic_fetch_add(&j->next, 1);
    if (c >= j->nchunks) break;
    unsigned __int128 lo = j->iters * (unsigned __int128)c / (uint64_t)j->nchunks;
    unsigned __int128 hi = j->iters * (unsigned __int128)(c + 1) / (uint64_t)j->nchunks;
    KErr *e = &j->errs[c];
    e->stack_limit = krt_stack_limit();   /* this thread's stack */
    krt_poll_begin(L, e);
    if (j->worker(j->env, (int64_t)(uint64_t)lo, (int64_t)(uint64_t)hi, c, e) != 0)
      atomic_store(&j->stop.flag, 1);
  }
  kal_leave(saved_alloc);
  krt_poll_job_end(saved);
}

/* The caller waits for the workers that joined (pool.m held), polling for
** an interrupt or a hook every WAIT_POLL_MS while none failed. The poll
** runs outside the mutex (a hook runs Lua). Returns 1 with *werr filled
** when the poll stopped the job. */
static int wait_workers(Job *j, lua_State *L, KErr *werr) {
  int stopped = 0;
  while (pool.inside > 0) {
    if (L == NULL && j->stop.up == NULL) {   /* nothing to poll for */
      pthread_cond_wait(&pool.done, &pool.m);
      continue;
    }
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += WAIT_POLL_MS * 1000000L;
    if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&pool.done, &pool.m, &t);
    if (pool.inside == 0 || stopped || atomic_load(&j->stop.flag)) continue;
    pthread_mutex_unlock(&pool.m);
    memset(werr, 0, sizeof *werr);
    krt_poll_begin(L, werr);
    if (kjit_rt_poll(werr) != 0) {
      stopped = 1;
      atomic_store(&j->stop.flag, 1);
    }
    pthread_mutex_lock(&pool.m);
  }
  return stopped;
}

/* A worker joins a job only while it is open: the caller closes it once
** every chunk has been claimed, and then waits only for the workers that
** joined. One that wakes later (its core busy with another process) finds
** the job closed, or the next one, and the caller never waits for it:
** a small loop would otherwise take as long as that worker's wake-up. */
static void *worker_main(void *arg) {
  int index = (int)(intptr_t)arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool.m);
  for (;;) {
    while (pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.m);
    seen = pool.generation;
    if (!pool.open || index >= pool.job->max_workers) continue;
    Job *j = pool.job;
    pool.inside++;
    pthread_mutex_unlock(&pool.m);
    run_chunks(j, NULL);
    pthread_mutex_lock(&pool.m);
    if (--pool.inside == 0 && !pool.open) pthread_cond_signal(&pool.done);
  }
  return NULL;
}

/* Creates the worker threads, with every signal blocked (the host's signal
** handlers keep running on its own threads) and a stack as large as a main
** thread's, for recursive compiled code. */
static void start_once(void) {
  /* The workers wait inside this library for the rest of the process, but
  ** lua_close() dlclose()s kjit.so (the Lua module): pin the library so it
  ** is never unmapped under them. */
  Dl_info self;
  if (dladdr((void *)start_once, &self) && self.dli_fname)
    (void)dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, (size_t)8 << 20);
#if defined(__linux__)
  pool.allowed_ok = sched_getaffinity(0, sizeof pool.allowed, &pool.allowed) == 0;
#endif
  for (int i = 0; i < pool.size - 1; i++) {
    if (pthread_create(&pool.threads[pool.nworkers], &attr, worker_main,
                       (void *)(intptr_t)pool.nworkers) != 0) break;
    pool.nworkers++;
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Keeps the workers off the caller's core (pool.busy held). Woken while
** every core is busy, a worker is placed on its waker's core by the
** scheduler, where it takes turns with the caller, which meanwhile claims
** every chunk: with one of two cores held by another process a parallel
** loop gained nothing (1.00x). Off that core it gets a share of another
** one. Done again only when the caller has moved to another core (a
** system call per worker); a failure changes nothing. Linux only. */
static void place_workers(void) {
#if defined(__linux__)
  if (!pool.allowed_ok || CPU_COUNT(&pool.allowed) < 2) return;
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu == pool.placed_for || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &pool.allowed)) return;
  cpu_set_t m = pool.allowed;
  CPU_CLR(cpu, &m);
  for (int i = 0; i < pool.nworkers; i++)
    (void)pthread_setaffinity_np(pool.threads[i], sizeof m, &m);
  pool.placed_for = cpu;
#endif
}

int32_t kjit_rt_parallel_for(KPrangeWorker worker, void **env, int64_t count,
                             KErr *err, int64_t *nchunks_out) {
  pthread_once(&pool.once, size_once);
  Job j;
  j.worker = worker;
  j.env = env;
  j.iters = (unsigned __int128)(uint64_t)count + 1;
  int threads = atomic_load(&pool.active);
  unsigned __int128 want = threads == 1 ? 1 : (unsigned __int128)threads * CHUNKS_PER_THREAD;
  if (want > KJIT_PRANGE_MAXCHUNKS) want = KJIT_PRANGE_MAXCHUNKS;
  j.nchunks = (int64_t)(j.iters < want ? j.iters : want);
  j.max_workers = threads - 1;
  atomic_init(&j.next, 0);
  atomic_init(&j.stop.flag, 0);
  /* err may be a generator's copy (inside a job): read L through the job */
  lua_State *L = krt_poll_lua(err);
  j.stop.up = krt_poll_here().stop;   /* an enclosing job's stop stops this one too */
  KErr errs[KJIT_PRANGE_MAXCHUNKS];
  memset(errs, 0, sizeof errs[0] * (size_t)j.nchunks);
  j.errs = errs;
  j.alloc = kal_current();

  int shared = 0;
  if (j.nchunks > 1 && !atomic_load(&pool.forked) && pthread_mutex_trylock(&pool.busy) == 0) {
    pthread_once(&pool.started, start_once);
    if (pool.nworkers > 0) {
      shared = 1;
      place_workers();
      pthread_mutex_lock(&pool.m);
      pool.job = &j;
      pool.open = 1;
      pool.inside = 0;
      pool.generation++;
      pthread_cond_broadcast(&pool.wake);
      pthread_mutex_unlock(&pool.m);
    } else {
      pthread_mutex_unlock(&pool.busy);
    }
  }
  run_chunks(&j, L);   /* the caller works too (alone when the pool is busy) */
  KErr werr;
  int stopped = 0;
  if (shared) {
    pthread_mutex_lock(&pool.m);
    pool.open = 0;   /* every chunk is claimed (or the job stopped): no one joins now */
    stopped = wait_workers(&j, L, &werr);
    pool.job = NULL;
    pthread_mutex_unlock(&pool.m);
    pthread_mutex_unlock(&pool.busy);
  }
  *nchunks_out = j.nchunks;
  if (!atomic_load(&j.stop.flag)) return 0;
  /* err may be a generator's copy of the leading fields only: never
  ** written as a whole struct. A stop (interrupt, hook error) outranks
  ** the chunks' errors: at most one chunk (the caller's) has one, as the
  ** first stop ends the polling. */
  uint64_t limit = err->stack_limit;   /* the caller's, not the worker's */
  const KErr *pick = stopped ? &werr : NULL;
  for (int64_t c = 0; pick == NULL && c < j.nchunks; c++)
    if (errs[c].kind == KE_INTERRUPT || errs[c].kind == KE_LUAERR) pick = &errs[c];
  for (int64_t c = 0; pick == NULL && c < j.nchunks; c++)
    if (errs[c].kind != KE_NONE && errs[c].kind != KE_STOPPED) pick = &errs[c];
  if (pick == NULL && j.stop.up != NULL) {
    for (int64_t c = 0; pick == NULL && c < j.nchunks; c++)
      if (errs[c].kind == KE_STOPPED) pick = &errs[c];   /* an enclosing job's stop */
  }
  if (pick != NULL) {
    krt_err_copy(err, pick);
    err->stack_limit = limit;
    return 1;
  }
  /* not reached: a failing chunk leaves its error (the generated code copies it
  ** out on every failing return); never raise an empty record */
  err->kind = KE_USER_NOPOS;
  err->msg = "kjit: a parallel loop failed without an error record (a kjit bug)";
  err->chunk = "kjit";
  return 1;
}

/* ---- kjit.prange for interpreted code ----------------------------------- */

/* Upvalues: next value, iterations left after this one (-1 = done), step. */
static int prange_iter(lua_State *L) {
  lua_Integer left = lua_tointeger(L, lua_upvalueindex(2));
  if (left == -1) return 0;   /* nil ends the generic for */
  lua_Integer v = lua_tointeger(L, lua_upvalueindex(1));
  lua_Integer step = lua_tointeger(L, lua_upvalueindex(3));
  /* left counts down as an unsigned number; -1 marks the end */
  lua_pushinteger(L, (lua_Integer)((lua_Unsigned)v + (lua_Unsigned)step));
  lua_replace(L, lua_upvalueindex(1));
  lua_pushinteger(L, left == 0 ? -1 : (lua_Integer)((lua_Unsigned)left - 1));
  lua_replace(L, lua_upvalueindex(2));
  lua_pushinteger(L, v);
  return 1;
}

static lua_Integer int_arg(lua_State *L, int i, const char *what) {
  if (!lua_isinteger(L, i))
    luaL_error(L, "kjit.prange: %s must be an integer (got %s)", what,
               lua_type(L, i) == LUA_TNUMBER ? "a float" : luaL_typename(L, i));
  return lua_tointeger(L, i);
}

/* kjit.prange(a, b [, step]): the values of `for i = a, b, step`, as an
** iterator for a generic for. Compiled with {parallel = true}, the loop's
** iterations run on the thread pool instead (src/codegen/cg_prange.c). */
static int kp_prange(lua_State *L) {
  lua_Integer a = int_arg(L, 1, "the start");
  lua_Integer b = int_arg(L, 2, "the limit");
  lua_Integer step = lua_isnoneornil(L, 3) ? 1 : int_arg(L, 3, "the step");
  if (step == 0) return luaL_error(L, "'for' step is zero");
  lua_Integer left;   /* iterations after the first, or -1 for none */
  if (step > 0 ? a > b : a < b) left = -1;
  else if (step > 0) left = (lua_Integer)(((lua_Unsigned)b - (lua_Unsigned)a) / (lua_Unsigned)step);
  else left = (lua_Integer)(((lua_Unsigned)a - (lua_Unsigned)b) /
                            ((lua_Unsigned)(-(step + 1)) + 1u));
  /* 2^64 iterations (a = minint, b = maxint, step 1) cannot be told from
  ** "none" in one word; nobody can run them anyway: cap at 2^64 - 1 */
  if (left == -1 && !(step > 0 ? a > b : a < b)) left = -2;
  lua_pushinteger(L, a);
  lua_pushinteger(L, left);
  lua_pushinteger(L, step);
  lua_pushcclosure(L, prange_iter, 3);
  return 1;
}

/* kjit.clock(): monotonic wall-clock seconds. os.clock() counts the CPU
** time of every thread of the process, which is what a parallel loop
** multiplies, so it cannot time one. */
static int l_clock(lua_State *L) {
  lua_pushnumber(L, k_now_ms() * 1e-3);
  return 1;
}

static int l_get_num_threads(lua_State *L) {
  lua_pushinteger(L, kp_num_threads());
  return 1;
}

static int l_set_num_threads(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n < 1 || n > kp_pool_size())
    return luaL_error(L, "kjit.set_num_threads: %d threads asked for, the pool has 1 to %d "
                      "(set KJIT_NUM_THREADS before the first parallel loop for more)",
                      (int)(n < -1000000 ? -1000000 : n > 1000000 ? 1000000 : n), kp_pool_size());
  kp_set_num_threads((int)n);
  return 0;
}

void kp_open(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"prange", kp_prange}, {"get_num_threads", l_get_num_threads},
    {"set_num_threads", l_set_num_threads}, {"clock", l_clock}, {NULL, NULL}
  };
  luaL_setfuncs(L, fns, 0);
  lua_getfield(L, -1, "prange");   /* for the typers to recognise */
  kir_builtin_register(L, -1, B_KJIT_PRANGE);
  lua_pop(L, 1);
}
