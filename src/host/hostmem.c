/*
** hostmem.c: host arrays in memory the CUDA driver manages, as numba-cuda's
** (issue 25, item 8):
**   cuda.pinned_array(shape [, dtype])   page-locked (cuMemHostAlloc): copies
**                                        to and from the GPU go at full speed
**   cuda.mapped_array(shape [, dtype])   page-locked and mapped into the
**                                        device's address space: kernels read
**                                        and write it in place
**   cuda.managed_array(shape [, dtype])  unified memory (cuMemAllocManaged):
**                                        one address for host and device
**   cuda.pinned(a)                       page-locks a kjit array's memory
**                                        until the object returned is closed
**                                        (local p <close> = cuda.pinned(a))
** Each array is a kjit array (usable everywhere kjit arrays are) whose
** memory is borrowed from the driver and given back by its release
** function. Mapped and managed arrays are entered in a table of device
** addresses: a kernel launch that receives one passes its device address
** instead of copying it (kernel.c asks kcu_host_mapped) and waits for the
** kernel before returning, as launches with host arrays do.
**
** In the simulator every one of them is a plain kjit array (host memory is
** the simulated device's), and cuda.pinned does nothing.
**
** cuda.close() (cudadrv.c's kcu_close) runs close_blocks for each device:
** the memory of every live array of the device goes back to the driver
** before the context does (page-locked and managed memory belong to the
** context), and the arrays' guard flag is set, so that they, and their
** views, raise "array used after its memory was released" from then on,
** in Lua and in compiled code. Their later __gc frees nothing more.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "host/cudadrv.h"

enum { K_PINNED, K_MAPPED, K_MANAGED };

typedef struct HostBlock {
  void *host;
  size_t bytes;
  KCuDevPtr dev;          /* mapped/managed: the device address */
  int device, kind;
  int *released;          /* the array's guard flag (buffer.c) */
  int closed;             /* cuda.close() freed the memory already */
} HostBlock;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static HostBlock **blocks;  /* the live arrays (the blocks' owners: their release) */
static size_t nblocks, capblocks;

int kcu_host_mapped(const void *p, size_t n, KCuDevPtr *dev) {
  int found = 0, cur = kcu_device();
  uintptr_t a = (uintptr_t)p;
  pthread_mutex_lock(&mu);
  for (size_t k = 0; k < nblocks && !found; k++) {
    const HostBlock *h = blocks[k];
    uintptr_t b = (uintptr_t)h->host;
    if (h->kind != K_PINNED && h->device == cur && a >= b && n <= h->bytes && a - b <= h->bytes - n) {
      *dev = h->dev + (a - b);
      found = 1;
    }
  }
  pthread_mutex_unlock(&mu);
  return found;
}

static int add_block(HostBlock *hb) {
  int ok = 1;
  pthread_mutex_lock(&mu);
  if (nblocks == capblocks) {
    size_t nc = capblocks ? capblocks * 2 : 16;
    HostBlock **nb = realloc(blocks, nc * sizeof *nb);
    if (nb) { blocks = nb; capblocks = nc; } else ok = 0;
  }
  if (ok) blocks[nblocks++] = hb;
  pthread_mutex_unlock(&mu);
  return ok;
}

/* Drops hb's entry (if any). */
static void take_block(HostBlock *hb) {
  pthread_mutex_lock(&mu);
  for (size_t k = 0; k < nblocks; k++)
    if (blocks[k] == hb) {
      blocks[k] = blocks[--nblocks];
      break;
    }
  pthread_mutex_unlock(&mu);
}

/* The memory itself, in the driver; once. */
static void free_block(HostBlock *hb) {
  if (hb->closed) return;
  hb->closed = 1;
  if (hb->kind == K_MANAGED) kcu_free_on(hb->device, (KCuDevPtr)(uintptr_t)hb->host);
  else kcu_host_free(hb->host);
}

/* The release function of the arrays (ud: their HostBlock, malloc'd). */
static void release(void *ud, void *data) {
  HostBlock *hb = ud;
  (void)data;
  take_block(hb);
  free_block(hb);
  free(hb);
}

/* cuda.close() (kcu_on_close), with dev's context current: every live
** array of dev refuses access from now on and its memory goes back now. */
static void close_blocks(int dev) {
  pthread_mutex_lock(&mu);
  for (size_t k = 0; k < nblocks; ) {
    HostBlock *hb = blocks[k];
    if (hb->device != dev) { k++; continue; }
    if (hb->released) *hb->released = 1;
    hb->closed = 1;
    if (hb->kind == K_MANAGED) kcu_free_now((KCuDevPtr)(uintptr_t)hb->host);
    else kcu_host_free(hb->host);
    blocks[k] = blocks[--nblocks];
  }
  pthread_mutex_unlock(&mu);
}

/* shape and dtype at 1, 2; returns the byte size (checked as kjit arrays'). */
static size_t checkbytes(lua_State *L, int64_t *shape, int *ndim, kjit_dtype *t) {
  *ndim = kb_checkshape(L, 1, shape);
  *t = kb_checkdtype(L, 2, KJIT_F64);
  int64_t n = 1, es = (int64_t)kjit_dtype_size(*t);
  for (int k = 0; k < *ndim; k++) {
    if (shape[k] < 0) luaL_error(L, "negative dimension %I in shape", (lua_Integer)shape[k]);
    if (shape[k] > 0 && n > (((int64_t)1 << 48) / es) / shape[k])
      luaL_error(L, "array too large (over 2^48 bytes)");
    n *= shape[k];
  }
  return (size_t)(n * es);
}

static int push_host(lua_State *L, int kind) {
  int64_t shape[KJIT_MAXDIMS];
  int ndim;
  kjit_dtype t;
  size_t bytes = checkbytes(L, shape, &ndim, &t);
  if (kcu_sim_mode()) {   /* the simulated device reads host memory */
    kb_push_new(L, t, ndim, shape, 1);
    return 1;
  }
  HostBlock *hb = calloc(1, sizeof *hb);
  if (hb == NULL) return luaL_error(L, "not enough memory");
  hb->kind = kind;
  hb->bytes = bytes;
  hb->device = kcu_device();
  /* a driver error below leaks hb (and a mapped block whose device
  ** address the driver refuses): rare enough not to wrap in a pcall */
  if (kind == K_MANAGED) {
    KCuDevPtr d = kcu_alloc_managed(L, bytes);
    hb->host = (void *)(uintptr_t)d;
    hb->dev = d;
  } else {
    hb->host = kcu_host_alloc(L, bytes, kind == K_MAPPED ? 0x3u /* PORTABLE | DEVICEMAP */ : 0u);
    if (kind == K_MAPPED) hb->dev = kcu_host_devptr(L, hb->host);
  }
  memset(hb->host, 0, bytes ? bytes : 1);
  KBuffer *b = kb_push_borrowed(L, hb->host, t, ndim, shape, release, hb);
  hb->released = (int *)b->released;   /* the guard's flag (never NULL: release given) */
  if (!add_block(hb)) {
    /* the array's __gc will free it; it is only missing from the list */
    free_block(hb);
    *hb->released = 1;
    return luaL_error(L, "not enough memory");
  }
  kcu_on_close(close_blocks);
  return 1;
}

static int c_pinned_array(lua_State *L) { return push_host(L, K_PINNED); }
static int c_mapped_array(lua_State *L) { return push_host(L, K_MAPPED); }
static int c_managed_array(lua_State *L) { return push_host(L, K_MANAGED); }

/* cuda.pinned(a): a registration object; closing it (or its __gc)
** unregisters the memory. Its user value keeps a alive. */
#define KCU_PINNED "kjit.cuda.pinned"
typedef struct Pinned { void *p; int live, device; unsigned gen; } Pinned;

static int p_close(lua_State *L) {
  Pinned *g = (Pinned *)luaL_checkudata(L, 1, KCU_PINNED);
  /* after cuda.close() the registration went with the context */
  if (g->live && !kcu_stale(0, g->device, g->gen)) kcu_host_unregister(g->p);
  g->live = 0;
  return 0;
}

static int c_pinned(lua_State *L) {
  KBuffer *b = kb_check(L, 1);
  Pinned *g = (Pinned *)lua_newuserdatauv(L, sizeof *g, 1);
  g->p = b->data;
  g->live = 0;
  if (luaL_newmetatable(L, KCU_PINNED)) {
    lua_pushcfunction(L, p_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, p_close);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    lua_pushcfunction(L, p_close);
    lua_setfield(L, -2, "close");
    lua_setfield(L, -2, "__index");
  }
  lua_setmetatable(L, -2);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  size_t bytes = (size_t)b->size * kjit_dtype_size(b->dtype);
  if (!kcu_sim_mode() && bytes > 0) {
    kcu_host_register(L, b->data, bytes);
    g->device = kcu_device();
    g->gen = kcu_gen(0, g->device);
    g->live = 1;
  }
  return 1;
}

void kcu_open_hostmem(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"pinned_array", c_pinned_array}, {"mapped_array", c_mapped_array},
    {"managed_array", c_managed_array}, {"pinned", c_pinned}, {NULL, NULL}
  };
  luaL_setfuncs(L, fns, 0);
}
