/*
** lmpi_stage.c: host memory for staging device arrays through an MPI that
** cannot take device pointers (not CUDA-aware, or the simulator).
**
** Design decisions:
** - Page-locked memory (kjit's extension API v2, host_alloc: cuMemHostAlloc,
**   portable) in the driver path: copies between the device and page-locked
**   memory go at the bus's full speed and need no bounce buffer in the
**   driver. In the simulator, or when the driver refuses (out of page-locked
**   memory), ordinary memory is used and counted as such (mpi._staging()).
** - Page-locked memory is slow to get (the driver maps it for the device),
**   so buffers are reused: a call takes one from a small pool of free
**   buffers (the smallest that fits), and gives it back when it returns
**   (lm_release_stack, run by every entry point of kjit.mpi) or, for
**   isend/irecv, when its request completes. A buffer lost to an error
**   comes back through its userdata's __gc.
** - The pool holds at most POOL_MAX buffers; more are freed. Sizes are
**   rounded up to powers of two (at least 4 KiB) so that calls of nearby
**   sizes share buffers. It is emptied when the Lua state closes.
** - kjit.cuda.close() frees page-locked memory with the contexts: a block
**   made before one (the extension API's close_count moved) is forgotten,
**   never reused or freed.
*/
#include <stdlib.h>
#include <string.h>
#include "lmpi.h"

#define LM_STAGE "kjit.mpi.stage"
#define POOL_MAX 8

typedef struct Block { void *p; size_t cap; int pinned; unsigned gen; } Block;

static unsigned close_count(void) { return lm_api->close_count ? lm_api->close_count() : 0; }
/* page-locked memory a cuda.close() took */
static int gone(const Block *b) { return b->pinned && b->gen != close_count(); }
static Block pool[POOL_MAX];
static int npool, closing;
static int pin_refused;   /* the driver gave no page-locked memory: reuse ordinary */
static struct { long pinned_allocs, pageable_allocs, reuses, frees; } counts;

static void block_free(Block *b) {
  if (b->p == NULL) return;
  if (gone(b)) { b->p = NULL; return; }
  if (b->pinned) lm_api->host_free(b->p);
  else free(b->p);
  b->p = NULL;
  counts.frees++;
}

/* Gives the block of s back to the pool (or frees it); s is then empty. */
static void give_back(LStage *s) {
  Block b = { s->p, s->cap, s->pinned, s->gen };
  s->p = NULL;
  s->held = 0;
  if (b.p == NULL) return;
  if (closing || npool == POOL_MAX) {
    /* full: keep the larger ones */
    int small = -1;
    for (int i = 0; i < npool && !closing; i++)
      if (pool[i].cap < b.cap && (small < 0 || pool[i].cap < pool[small].cap)) small = i;
    if (small < 0) { block_free(&b); return; }
    Block out = pool[small];
    pool[small] = b;
    block_free(&out);
    return;
  }
  pool[npool++] = b;
}

static int stage_gc(lua_State *L) {
  give_back(luaL_checkudata(L, 1, LM_STAGE));
  return 0;
}

LStage *lm_stage(lua_State *L, size_t n, int device) {
  LStage *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  if (luaL_newmetatable(L, LM_STAGE)) {
    lua_pushcfunction(L, stage_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  int best = -1;
  for (int i = 0; i < npool; )   /* drop what a cuda.close() took */
    if (gone(&pool[i])) pool[i] = pool[--npool];
    else i++;
  for (int i = 0; i < npool; i++)
    if (pool[i].cap >= n && (pool[i].pinned || !device || pin_refused) &&
        (best < 0 || pool[i].cap < pool[best].cap)) best = i;
  if (best >= 0) {
    s->p = pool[best].p;
    s->cap = pool[best].cap;
    s->pinned = pool[best].pinned;
    s->gen = pool[best].gen;
    pool[best] = pool[--npool];
    counts.reuses++;
    return s;
  }
  size_t cap = 4096;
  while (cap < n) cap *= 2;
  void *p = NULL;
  s->gen = close_count();
  if (device && lm_api->version >= 2) p = lm_api->host_alloc(L, cap);
  if (p != NULL) {
    s->pinned = 1;
    counts.pinned_allocs++;
  } else {
    if (device) pin_refused = 1;
    p = malloc(cap);
    if (p == NULL) luaL_error(L, "kjit.mpi: not enough memory to stage a device array");
    counts.pageable_allocs++;
  }
  s->p = p;
  s->cap = cap;
  return s;
}

void lm_stage_release(LStage *s) { give_back(s); }

void lm_release_stack(lua_State *L, int from, int to) {
  for (int i = from; i <= to; i++) {
    LStage *s = luaL_testudata(L, i, LM_STAGE);
    if (s && !s->held) give_back(s);
  }
}

void lm_stage_close(void) {
  closing = 1;
  for (int i = 0; i < npool; i++) block_free(&pool[i]);
  npool = 0;
}

/* mpi._staging(): the counters, for tests and for the curious. */
int lm_staging_stats(lua_State *L) {
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, counts.pinned_allocs);
  lua_setfield(L, -2, "pinned_allocs");
  lua_pushinteger(L, counts.pageable_allocs);
  lua_setfield(L, -2, "pageable_allocs");
  lua_pushinteger(L, counts.reuses);
  lua_setfield(L, -2, "reuses");
  lua_pushinteger(L, counts.frees);
  lua_setfield(L, -2, "frees");
  lua_pushinteger(L, npool);
  lua_setfield(L, -2, "pooled");
  return 1;
}
