/*
** cudasim.c: runs KT_SIM kernels on the CPU (see cudasim.h).
**
** A block's threads. Kernels without barriers or warp collectives run
** their threads one after another on the launching thread. The others
** run each GPU thread as a fiber (fiber.h) on the launching thread: a
** thread that reaches cuda.syncthreads or a warp collective it must wait
** at switches to the block's scheduler (run_fibers), which resumes the
** threads whose wait is over, in thread order. No OS threads, no locks:
** 256 blocks of 256 threads with a few barriers take a fraction of a
** second where one OS thread per GPU thread took seconds (futex round
** trips and thread creation). Results do not depend on the schedule:
** barriers and warp meetings are resolved by the same rules (cudasim.h);
** the schedule is deterministic, which makes races in a kernel
** reproducible in the simulator (they are not on a GPU).
**
** Stopping (runtime_poll.c). Every thread runs on the Lua thread and polls
** with it: an interrupt or a hook's error fails that thread and sets the
** launch's stop flag; the other threads' polls then fail with it (a
** barrier counts threads that left as arrived), no later block starts,
** and the launch raises the stop's error.
*/
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/compile.h"
#include "backend/cpu.h"
#include "runtime/runtime.h"
#include "runtime/cudasim.h"
#include "common/cuda_intrin.h"
#include "runtime/runtime_poll.h"
#include "runtime/fiber.h"
#include "runtime/halfrt.h"

/* The launching thread polls between blocks after this many threads. */
#define BLOCK_POLL_THREADS 4096
/* A fiber's stack (reserved, committed as touched; the OS threads had as
** much) and the part of it kept for the C code between compiled code's
** stack checks (runtime helpers, libm, a Lua hook called by a poll). */
#define FIBER_STACK ((size_t)1 << 20)
#define FIBER_MARGIN ((size_t)256 << 10)

typedef struct SharedArr { int64_t site; char *mem; struct SharedArr *next; } SharedArr;

/* A warp's meeting point (cudasim.h). */
typedef struct SimWarp {
  uint32_t live;                 /* lanes still in the kernel */
  uint32_t atbar;                /* lanes waiting at cuda.syncthreads */
  uint32_t waiting, done;        /* lanes at a warp collective; results ready */
  int op[32];
  uint32_t mask[32];
  int32_t b[32];
  int64_t val[32], res[32];
} SimWarp;

/* A block running: its shared memory, barrier and warps. */
typedef struct SimBlock {
  unsigned bid[3];
  char *dynmem;                  /* this block's dynamic shared memory */
  SharedArr *shared;             /* this block's static shared arrays */
  int restart;                   /* a barrier was released: resume from thread 0 */
  int live, waiting;             /* barrier: threads not exited, threads waiting */
  unsigned long gen;
  SimWarp *warps;                /* this block's warps */
  int nwarps;
  int64_t rcount[2], rarrived[2];  /* syncthreads_count/and/or by barrier parity */
} SimBlock;

typedef struct Launch {
  KEntry entry;
  int64_t *args;
  unsigned grid[3], block[3];
  size_t dynbytes;
  KFiber sched;                  /* the launching context: the scheduler */
  KStop stop;                    /* polls of the kernel's threads fail */
  lua_State *L;                  /* the launching Lua thread, if any */
  int failed;                    /* a thread failed: first one recorded */
  KErr err;
  unsigned ftid[3], fbid[3];
  int oom;
  /* the grid barrier (cuda.cg.this_grid():sync()): every block runs at
  ** once; threads not exited, threads waiting, its generation */
  size_t glive, gwaiting;
  unsigned long ggen;
  SimBlock *blocks; size_t nblocks;  /* the blocks running */
  char *out; size_t outlen, outcap;  /* print's lines, for the launcher to write */
} Launch;

typedef struct SimThread {
  Launch *l;
  SimBlock *b;
  unsigned tid[3];
  unsigned lin;                  /* linear index in the block: warp lin / 32 */
  char *line; size_t len, cap;   /* print's line being made */
  int items;
  jmp_buf *oom;                  /* run_thread's: leaves the kernel when its
                                    shared memory cannot be allocated */
  KFiber fib;                    /* fibered blocks: the thread's fiber */
  int state;                     /* FS_* */
  unsigned long wgen;            /* FS_BAR: the barrier's gen */
  uint64_t stack_limit;          /* fibered: the fiber stack's own */
} SimThread;

enum { FS_NEW, FS_READY, FS_BAR, FS_WARP, FS_GRID, FS_DONE };

/* A waiting thread gives its OS thread back to the scheduler. */
static void yield_wait(SimThread *t, int state) {
  t->state = state;
  kfib_switch(&t->fib, &t->l->sched);
}

static __thread SimThread *cur;

int64_t kjit_sim_sreg(int32_t which);
void kjit_sim_syncthreads(void);
char *kjit_sim_shared(int64_t site, int64_t bytes);
char *kjit_sim_dynshared(int64_t *bytes);

int64_t kjit_sim_sreg(int32_t which) {
  SimThread *t = cur;
  int axis = which % 3;
  switch (which / 3) {
  case 0: return t->tid[axis];
  case 1: return t->b->bid[axis];
  case 2: return t->l->block[axis];
  default: return t->l->grid[axis];
  }
}

static void warp_resolve(SimWarp *w);

/* Every live thread reached the barrier: all pass it. No lane is at the
** barrier any more from here (a lane resumed late must not look absent to
** the warp meetings of the lanes resumed first). */
static void barrier_release(SimBlock *l) {
  l->waiting = 0;
  l->gen++;
  l->rcount[l->gen & 1] = l->rarrived[l->gen & 1] = 0;   /* the next barrier's */
  for (int i = 0; i < l->nwarps; i++) l->warps[i].atbar = 0;
  l->restart = 1;   /* the scheduler resumes the threads in order */
}

/* Waits until every live thread of the block has arrived; with a
** predicate (pred >= 0) counts the arrivals and the true ones into
** l->rcount/rarrived of this barrier's parity and returns the barrier's
** gen. A lane waiting here leaves its warp's meetings (cudasim.h). */
static unsigned long block_barrier(int pred) {
  SimBlock *l = cur->b;
  SimWarp *w = &l->warps[cur->lin / 32];
  uint32_t bit = 1u << (cur->lin % 32);
  unsigned long gen = l->gen;
  if (pred >= 0) { l->rcount[gen & 1] += pred; l->rarrived[gen & 1]++; }
  w->atbar |= bit;
  if (w->waiting) warp_resolve(w);
  SimThread *t = cur;
  if (++l->waiting >= l->live) {
    /* the last to arrive waits its turn too: the threads pass the barrier
    ** in thread order, as in the interpreted simulator (so the first
    ** failing thread after it is the same) */
    barrier_release(l);
    yield_wait(t, FS_READY);
  } else {
    t->wgen = gen;
    while (gen == l->gen) yield_wait(t, FS_BAR);
  }
  return gen;
}

void kjit_sim_syncthreads(void) { block_barrier(-1); }

/* Every live thread of the grid reached the grid barrier: all pass it
** (its lanes are back in their warps' meetings). */
static void grid_release(Launch *l) {
  l->gwaiting = 0;
  l->ggen++;
  for (size_t b = 0; b < l->nblocks; b++) {
    SimBlock *sb = &l->blocks[b];
    for (int i = 0; i < sb->nwarps; i++) sb->warps[i].atbar = 0;
  }
}

/* cuda.cg.this_grid():sync(): waits until every thread of the grid that
** has not exited has arrived (exited threads count as arrived, as at
** cuda.syncthreads). While it waits, a lane is absent from its warp's
** meetings, as at a block barrier. */
static void grid_barrier(void) {
  SimThread *t = cur;
  Launch *l = t->l;
  SimWarp *w = &t->b->warps[t->lin / 32];
  w->atbar |= 1u << (t->lin % 32);
  if (w->waiting) warp_resolve(w);
  unsigned long gen = l->ggen;
  if (++l->gwaiting >= l->glive) {
    grid_release(l);
    yield_wait(t, FS_READY);
  } else {
    t->wgen = gen;
    while (gen == l->ggen) yield_wait(t, FS_GRID);
  }
}

/* Resolves the lanes of w whose meeting is complete (cudasim.h). */
static void warp_resolve(SimWarp *w) {
  uint32_t here = w->waiting, absent = ~w->live | w->atbar, ready = 0;
  for (unsigned i = 0; i < 32; i++)
    if ((here >> i & 1u) && ((w->mask[i] & ~absent) & ~here) == 0) ready |= 1u << i;
  if (ready == 0) return;
  for (unsigned i = 0; i < 32; i++)
    if (ready >> i & 1u)
      w->res[i] = ksim_warp_op(w->op[i], i, (w->mask[i] & here) | (1u << i), w->val, w->b[i]);
  w->waiting &= ~ready;
  w->done |= ready;
}

/* The calling lane's part in a warp collective. */
static int64_t warp_meet(int op, uint32_t mask, int64_t v, int32_t b) {
  SimBlock *l = cur->b;
  SimWarp *w = &l->warps[cur->lin / 32];
  unsigned lane = cur->lin % 32;
  uint32_t bit = 1u << lane;
  w->op[lane] = op; w->mask[lane] = mask; w->val[lane] = v; w->b[lane] = b;
  w->waiting |= bit;
  warp_resolve(w);
  while (!(w->done & bit)) yield_wait(cur, FS_WARP);
  w->done &= ~bit;
  return w->res[lane];
}

/* Appends n bytes to a growing buffer; drops them without memory. */
static void grow_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t nc = (*cap ? *cap * 2 : 256) + n;
    char *nb = realloc(*buf, nc);
    if (nb == NULL) return;
    *buf = nb;
    *cap = nc;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = 0;
}

/* print(...) in a kernel: kind 0 an integer, 1 a float (bits), 2 a
** boolean, 3 a string, 4 the end of the line, which joins the launch's
** output (written by the launcher after the kernel, as the GPU's printf
** buffer is). Formats as Lua's print: %.14g, ".0" after an integral float. */
void kjit_sim_print(int32_t kind, int64_t bits, const char *s);
void kjit_sim_print(int32_t kind, int64_t bits, const char *s) {
  SimThread *t = cur;
  char nb[64];
  if (kind == 4) {
    grow_append(&t->line, &t->len, &t->cap, "\n", 1);
    Launch *l = t->l;
    if (t->line) grow_append(&l->out, &l->outlen, &l->outcap, t->line, t->len);
    t->len = 0;
    t->items = 0;
    return;
  }
  if (t->items++) grow_append(&t->line, &t->len, &t->cap, "\t", 1);
  switch (kind) {
  case 0: snprintf(nb, sizeof nb, "%lld", (long long)bits); s = nb; break;
  case 1: {
    double d;
    memcpy(&d, &bits, 8);
    snprintf(nb, sizeof nb, "%.14g", d);
    if (nb[strspn(nb, "-0123456789")] == 0) strcat(nb, ".0");
    s = nb;
    break;
  }
  case 2: s = bits ? "true" : "false"; break;
  default: break;
  }
  grow_append(&t->line, &t->len, &t->cap, s, strlen(s));
}

int64_t kjit_sim_intrin(int32_t op, int32_t mask, int64_t v, int32_t b);
int64_t kjit_sim_intrin(int32_t op, int32_t mask, int64_t v, int32_t b) {
  unsigned lane = cur->lin % 32;
  switch (op) {
  case KI_LANEID: return lane;
  case KI_LANEMASK_LT: return (int64_t)((1u << lane) - 1u);
  case KI_ACTIVEMASK: return warp_meet(op, 0xffffffffu, 0, 0);
  case KI_BAR_POPC: case KI_BAR_AND: case KI_BAR_OR: {
    SimBlock *l = cur->b;
    unsigned long gen = block_barrier(v != 0);
    /* read before the barrier after next can reset this parity: every
    ** thread must pass that one first */
    int64_t c = l->rcount[gen & 1], n = l->rarrived[gen & 1];
    return op == KI_BAR_POPC ? c : op == KI_BAR_AND ? c == n : c > 0;
  }
  case KI_FENCE_BLOCK: case KI_FENCE_SYSTEM: __atomic_thread_fence(__ATOMIC_SEQ_CST); return 0;
  case KI_NANOSLEEP: return 0;
  case KI_GRID_SYNC: grid_barrier(); return 0;
  default: return warp_meet(op, (uint32_t)mask, v, b);
  }
}

/* Thread idx left the kernel: it no longer counts at barriers and warp
** meetings. */
static void thread_exit(Launch *gl, SimBlock *l, size_t idx) {
  SimWarp *w = &l->warps[idx / 32];
  w->live &= ~(1u << (idx % 32));
  if (w->waiting) warp_resolve(w);
  l->live--;
  if (l->waiting > 0 && l->waiting >= l->live) barrier_release(l);
  gl->glive--;
  if (gl->gwaiting > 0 && gl->gwaiting >= gl->glive) grid_release(gl);
}

static char *zalloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n ? n : 1) != 0) return NULL;
  memset(p, 0, n ? n : 1);
  return p;
}

/* A block's static shared array (allocated by its first thread to ask).
** Out of memory, the calling thread leaves the kernel at once (longjmp to
** run_thread: compiled frames own nothing to release) and the launch
** fails with "not enough memory" after the block: no thread ever gets a
** pointer it may not use (a shared static scratch used to be returned,
** written by every failing thread at once, and NULL above its 64 KiB). */
char *kjit_sim_shared(int64_t site, int64_t bytes) {
  SimBlock *l = cur->b;
  SharedArr *a;
  for (a = l->shared; a; a = a->next)
    if (a->site == site) break;
  if (a == NULL && (a = calloc(1, sizeof *a)) != NULL) {
    a->site = site;
    a->mem = zalloc((size_t)bytes);
    if (a->mem == NULL) { free(a); a = NULL; }
    else { a->next = l->shared; l->shared = a; }
  }
  char *m = a ? a->mem : NULL;
  if (m == NULL) {
    cur->l->oom = 1;
    longjmp(*cur->oom, 1);
  }
  return m;
}

char *kjit_sim_dynshared(int64_t *bytes) {
  *bytes = (int64_t)cur->l->dynbytes;
  return cur->b->dynmem;
}

void ksim_register_symbols(void) {
  kc_register_symbol("kjit_sim_sreg", (void *)kjit_sim_sreg);
  kc_register_symbol("kjit_sim_syncthreads", (void *)kjit_sim_syncthreads);
  kc_register_symbol("kjit_sim_intrin", (void *)kjit_sim_intrin);
  kc_register_symbol("kjit_sim_print", (void *)kjit_sim_print);
  kc_register_symbol("kjit_sim_shared", (void *)kjit_sim_shared);
  kc_register_symbol("kjit_sim_dynshared", (void *)kjit_sim_dynshared);
  kc_register_symbol("kjit_rt_poll", (void *)kjit_rt_poll);
  kjit_half_register();   /* f16 conversions without F16C (halfrt.c) */
}

/* Runs thread t's kernel on the Lua thread L. job: set the poll context
** here (threads run one after another); fibered blocks set it once around
** the block (a fiber's switches would interleave the saves and restores). */
static void run_thread(SimThread *t, lua_State *L, int job) {
  Launch *l = t->l;
  jmp_buf jb;
  KPollCtx saved;
  SimThread *outer = cur;   /* a launch from a Lua hook a kernel's poll called */
  if (job) saved = krt_poll_job(L, &l->stop);
  cur = t;
  t->oom = &jb;
  if (setjmp(jb)) {   /* out of memory in kjit_sim_shared: l->oom set */
    cur = outer;
    if (job) krt_poll_job_end(saved);
    return;
  }
  KErr e;
  memset(&e, 0, sizeof e);
  e.stack_limit = job ? krt_stack_limit() : t->stack_limit;
  krt_poll_begin(L, &e);   /* inside the job, polls read the thread's context */
  int64_t rets[KJIT_RETSLOTS];
  if (l->entry(l->args, rets, &e) != 0) {
    int stop = e.kind == KE_INTERRUPT || e.kind == KE_LUAERR;
    if (!l->failed || (stop && l->err.kind != KE_INTERRUPT && l->err.kind != KE_LUAERR)) {
      /* the first failure; a stop outranks the errors of threads before */
      l->failed = 1;
      l->err = e;
      memcpy(l->ftid, t->tid, sizeof l->ftid);
      memcpy(l->fbid, t->b->bid, sizeof l->fbid);
    } else if (e.kind == KE_LUAERR) {
      krt_err_discard(L, &e);   /* a second stop, dropped */
    }
    if (stop) atomic_store(&l->stop.flag, 1);
  }
  cur = outer;
  if (job) krt_poll_job_end(saved);
}

/* A fibered thread's whole life: the kernel, then out of the block's
** barriers and meetings, then back to the scheduler for good. */
static void fiber_main(void *p) {
  SimThread *t = p;
  run_thread(t, t->l->L, 0);
  thread_exit(t->l, t->b, t->lin);
  t->state = FS_DONE;
  t->fib.dying = 1;
  kfib_switch(&t->fib, &t->l->sched);
}

/* One pass of the scheduler over a block's threads, in order, resuming
** each that can go on (not started, its barrier released, its warp
** meeting resolved); stops early when a block barrier was released (the
** next pass resumes the block from thread 0). Counts the threads that
** left into *left; returns how many it resumed. */
static size_t pass_block(Launch *l, SimBlock *b, SimThread *ts, size_t n, size_t *left) {
  SimThread *outer = cur;   /* (see run_thread) */
  size_t resumed = 0;
  b->restart = 0;
  for (size_t i = 0; i < n && !b->restart; i++) {
    SimThread *t = &ts[i];
    if (t->state == FS_DONE) continue;
    if (t->state == FS_BAR && t->wgen == b->gen) continue;
    if (t->state == FS_GRID && t->wgen == l->ggen) continue;
    if (t->state == FS_WARP && !(b->warps[t->lin / 32].done >> (t->lin % 32) & 1u)) continue;
    if (t->state == FS_NEW && atomic_load(&l->stop.flag)) {
      /* stopped: the threads not started never start (they count as left) */
      thread_exit(l, b, t->lin);
      t->state = FS_DONE;
      kfib_done(&t->fib);
      (*left)--;
      resumed++;
      continue;
    }
    t->state = FS_READY;
    cur = t;
    kfib_switch(&l->sched, &t->fib);
    cur = outer;
    resumed++;
    if (t->state == FS_DONE) {
      kfib_done(&t->fib);
      (*left)--;
    }
  }
  return resumed;
}

/* Runs the threads of nb blocks (n each, ts block after block) as fibers
** until every one has left the kernel: passes over the blocks in order.
** Returns -1 when no thread can go on: with one block the simulator's own
** fault (the rules of barriers and meetings always let some thread on),
** with a grid barrier a kernel whose threads wait at cuda.syncthreads
** while others of their block wait at the grid barrier. */
static int run_fibers(Launch *l, SimBlock *bs, size_t nb, SimThread *ts, size_t n, char *stacks) {
  for (size_t i = 0; i < nb * n; i++) {
    ts[i].state = FS_NEW;
    char *lo = kfib_stack_of(stacks, i, FIBER_STACK);
    ts[i].stack_limit = (uint64_t)(uintptr_t)lo + FIBER_MARGIN;
    kfib_start(&ts[i].fib, lo, FIBER_STACK, fiber_main, &ts[i]);
  }
  KPollCtx saved = krt_poll_job(l->L, &l->stop);
  size_t left = nb * n;
  int rc = 0;
  while (left > 0) {
    size_t resumed = 0;
    for (size_t b = 0; b < nb; b++) resumed += pass_block(l, &bs[b], ts + b * n, n, &left);
    if (resumed == 0) { rc = -1; break; }
  }
  krt_poll_job_end(saved);
  return rc;
}

/* Fiber stacks are kept per OS thread from launch to launch (mapping a
** block's stacks and their guard pages and faulting their pages in took
** about 2 ms per launch of 256 threads); freed when the thread exits. */
typedef struct StackCache { char *stacks; size_t n; int busy; } StackCache;
static pthread_key_t stack_key;
static pthread_once_t stack_once = PTHREAD_ONCE_INIT;

static void stack_cache_free(void *p) {
  StackCache *c = p;
  kfib_stacks_free(c->stacks, c->n, FIBER_STACK);
  free(c);
}

static void stack_key_make(void) { pthread_key_create(&stack_key, stack_cache_free); }

/* Stacks for at least n fibers, or NULL without memory; *own: they are
** the caller's to free (a launch made while the cached ones are in use,
** from a Lua hook a kernel's poll called), else release_stacks. */
static char *block_stacks(size_t n, int *own) {
  pthread_once(&stack_once, stack_key_make);
  StackCache *c = pthread_getspecific(stack_key);
  *own = 0;
  if (c && c->busy) { *own = 1; return kfib_stacks(n, FIBER_STACK); }
  if (c == NULL || c->n < n) {
    if (c == NULL && (c = calloc(1, sizeof *c)) == NULL) return NULL;
    kfib_stacks_free(c->stacks, c->n, FIBER_STACK);
    c->stacks = kfib_stacks(n, FIBER_STACK);
    c->n = c->stacks ? n : 0;
    pthread_setspecific(stack_key, c);
  }
  if (c->stacks) c->busy = 1;
  return c->stacks;
}

static void release_stacks(char *stacks, size_t n, int own) {
  if (stacks == NULL) return;
  if (own) { kfib_stacks_free(stacks, n, FIBER_STACK); return; }
  StackCache *c = pthread_getspecific(stack_key);
  if (c) c->busy = 0;
}

static void free_block(SimBlock *l) {
  while (l->shared) {
    SharedArr *n = l->shared->next;
    free(l->shared->mem);
    free(l->shared);
    l->shared = n;
  }
  free(l->dynmem);
  l->dynmem = NULL;
}

/* Sets up block b (bid) of a launch: zeroed dynamic shared memory, every
** thread live. Returns -1 without memory. */
static int start_block(Launch *l, SimBlock *b, const unsigned bid[3], size_t nthreads) {
  memcpy(b->bid, bid, sizeof b->bid);
  b->dynmem = zalloc(l->dynbytes);
  if (b->dynmem == NULL) return -1;
  b->live = (int)nthreads;
  b->waiting = 0;
  b->restart = 0;
  b->rcount[0] = b->rcount[1] = b->rarrived[0] = b->rarrived[1] = 0;
  for (int w = 0; w < b->nwarps; w++) {
    SimWarp *sw = &b->warps[w];
    sw->atbar = sw->waiting = sw->done = 0;
    size_t lanes = nthreads - (size_t)w * 32 < 32 ? nthreads - (size_t)w * 32 : 32;
    sw->live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
  }
  return 0;
}

/* Threads of a block, their linear index and ids (x fastest). */
static void init_threads(Launch *l, SimBlock *b, SimThread *ts, const unsigned block[3]) {
  size_t k = 0;
  for (unsigned z = 0; z < block[2]; z++)
    for (unsigned y = 0; y < block[1]; y++)
      for (unsigned x = 0; x < block[0]; x++, k++) {
        ts[k].l = l;
        ts[k].b = b;
        ts[k].tid[0] = x; ts[k].tid[1] = y; ts[k].tid[2] = z;
        ts[k].lin = (unsigned)k;
      }
}

/* A grid-synchronized kernel: every block at once (the grid barrier
** needs every thread of the grid), all blocks' threads fibers. */
static int run_grid(Launch *l, size_t nthreads, const char **why) {
  size_t nb = (size_t)l->grid[0] * l->grid[1] * l->grid[2];
  size_t total = nb * nthreads;
  int rc = 0, nw = (int)((nthreads + 31) / 32);
  SimThread *ts = calloc(total, sizeof *ts);
  SimWarp *warps = calloc(nb * (size_t)nw, sizeof *warps);
  l->blocks = calloc(nb, sizeof *l->blocks);
  char *stacks = kfib_stacks(total, FIBER_STACK);
  if (ts == NULL || warps == NULL || l->blocks == NULL || stacks == NULL) { rc = -1; goto done; }
  l->nblocks = nb;
  size_t i = 0;
  for (unsigned bz = 0; bz < l->grid[2]; bz++)
    for (unsigned by = 0; by < l->grid[1]; by++)
      for (unsigned bx = 0; bx < l->grid[0]; bx++, i++) {
        SimBlock *b = &l->blocks[i];
        unsigned bid[3] = { bx, by, bz };
        b->warps = warps + i * (size_t)nw;
        b->nwarps = nw;
        if (start_block(l, b, bid, nthreads) != 0) { rc = -1; goto done; }
        init_threads(l, b, ts + i * nthreads, l->block);
      }
  if (run_fibers(l, l->blocks, nb, ts, nthreads, stacks) != 0) {
    rc = -2;
    *why = "kernel deadlock: threads wait at cuda.syncthreads or a warp collective while others "
           "of their block wait at the grid barrier (cuda.cg.this_grid():sync())";
  }
done:
  if (l->oom) rc = -1;
  if (l->blocks)
    for (size_t b = 0; b < l->nblocks; b++) free_block(&l->blocks[b]);
  if (ts)
    for (size_t t = 0; t < total; t++) free(ts[t].line);
  free(ts);
  free(warps);
  free(l->blocks);
  l->blocks = NULL;
  if (stacks) kfib_stacks_free(stacks, total, FIBER_STACK);
  return rc;
}

int ksim_run(KEntry entry, int64_t *args, const unsigned grid[3], const unsigned block[3],
             size_t dynbytes, int threaded, KErr *err, unsigned tid[3], unsigned bid[3],
             char **printed) {
  Launch l;
  memset(&l, 0, sizeof l);
  l.entry = entry;
  l.args = args;
  memcpy(l.grid, grid, sizeof l.grid);
  memcpy(l.block, block, sizeof l.block);
  l.dynbytes = dynbytes;
  kfib_self(&l.sched);
  size_t since_poll = 0;
  atomic_init(&l.stop.flag, 0);
  l.stop.up = krt_poll_here().stop;
  l.L = krt_poll_lua(err);   /* the launching dispatcher's (kernel.c) */
  size_t nthreads = (size_t)block[0] * block[1] * block[2];
  l.glive = nthreads * grid[0] * grid[1] * grid[2];
  memset(err, 0, sizeof *err);
  krt_poll_begin(l.L, err);
  if (threaded & KI_USES_GRID) {
    if (l.glive > KSIM_GRID_MAX_THREADS) {
      err->msg = "a kernel that syncs the grid (cuda.cg) runs all its blocks at once, and the "
                 "simulator runs at most " KSIM_GRID_MAX_THREADS_S " threads at once";
      return -1;
    }
    const char *why = NULL;
    int rc = run_grid(&l, nthreads, &why);
    *printed = l.out;
    if (rc == -1) { err->msg = "not enough memory"; return -1; }
    if (rc == -2 && !l.failed) { err->msg = why; return -1; }
    if (l.failed) {
      *err = l.err;
      memcpy(tid, l.ftid, sizeof l.ftid);
      memcpy(bid, l.fbid, sizeof l.fbid);
      return 1;
    }
    return 0;
  }
  SimBlock blk;
  memset(&blk, 0, sizeof blk);
  l.blocks = &blk;
  l.nblocks = 1;
  SimThread *ts = calloc(nthreads, sizeof *ts);
  blk.nwarps = (int)((nthreads + 31) / 32);
  blk.warps = calloc((size_t)blk.nwarps, sizeof *blk.warps);
  int own_stacks = 0;
  char *stacks = threaded ? block_stacks(nthreads, &own_stacks) : NULL;
  int rc = 0, stuck = 0;
  if (ts == NULL || blk.warps == NULL || (threaded && stacks == NULL)) goto nomem;
  init_threads(&l, &blk, ts, block);
  for (unsigned bz = 0; bz < grid[2] && !l.failed && !l.oom && !stuck; bz++)
    for (unsigned by = 0; by < grid[1] && !l.failed && !l.oom && !stuck; by++)
      for (unsigned bx = 0; bx < grid[0] && !l.failed && !l.oom && !stuck; bx++) {
        /* between blocks too: threads without loops may never poll */
        since_poll += nthreads;
        if (l.L != NULL && since_poll >= BLOCK_POLL_THREADS &&
            (since_poll = 0, krt_poll_begin(l.L, &l.err), kjit_rt_poll(&l.err) != 0)) {
          l.failed = 1;
          memset(l.ftid, 0, sizeof l.ftid);
          l.fbid[0] = bx; l.fbid[1] = by; l.fbid[2] = bz;
          break;
        }
        unsigned b3[3] = { bx, by, bz };
        if (start_block(&l, &blk, b3, nthreads) != 0) goto nomem;
        if (!threaded) {
          for (size_t i = 0; i < nthreads && !atomic_load(&l.stop.flag); i++)
            run_thread(&ts[i], l.L, 1);
        } else if (run_fibers(&l, &blk, 1, ts, nthreads, stacks) != 0) {
          stuck = 1;
        }
        free_block(&blk);
        if (l.oom) break;
      }
  if (l.oom) goto nomem;
  if (stuck) {
    err->msg = "the simulator found every thread of a block waiting (an internal error)";
    rc = -1;
    goto done;
  }
  if (l.failed) {
    *err = l.err;
    memcpy(tid, l.ftid, sizeof l.ftid);
    memcpy(bid, l.fbid, sizeof l.fbid);
    rc = 1;
  }
  goto done;
nomem:
  free_block(&blk);
  err->msg = "not enough memory";
  rc = -1;
done:
  if (ts)
    for (size_t i = 0; i < nthreads; i++) free(ts[i].line);
  free(ts);
  release_stacks(stacks, nthreads, own_stacks);
  *printed = l.out;
  free(blk.warps);
  return rc;
}
