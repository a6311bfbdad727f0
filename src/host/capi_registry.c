/*
** capi_registry.c: the C API for extension modules (include/kjit_ext.h).
**
** luaopen_kjit stores the address of one static kjit_ext_api struct in the
** registry (KJIT_EXT_REGISTRY_KEY). Extensions such as kjit.mpi are built
** apart from kjit (with an MPI compiler wrapper) and find it there instead
** of by symbol lookup: kjit's symbols stay hidden, one kjit.so loaded by
** any path serves them, and the struct's version says what it offers.
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit_ext.h"
#include "host/buffer.h"
#include "host/cudadrv.h"
#include "host/jit.h"
#include "host/record.h"
#include "host/capi_registry.h"
#include "common/krecord.h"

#ifndef KJIT_VERSION
#define KJIT_VERSION "0.0.0"
#endif

static void fill(kjit_ext_buffer *out, void *data, kjit_dtype t, int ndim,
                 const int64_t *shape, int64_t size, size_t itemsize) {
  memset(out, 0, sizeof *out);
  out->data = data;
  out->dtype = t;
  out->ndim = ndim;
  out->size = size;
  out->itemsize = itemsize;
  out->nbytes = (size_t)size * itemsize;
  int64_t st = (int64_t)itemsize;
  for (int k = KJIT_MAXDIMS - 1; k >= 0; k--) {
    out->shape[k] = k < ndim ? shape[k] : 1;
    out->strides[k] = st;
    st *= out->shape[k];
  }
  out->device = -1;
}

static int ext_toarray(lua_State *L, int idx, kjit_ext_buffer *out) {
  KBuffer *b = kb_test(L, idx);   /* raises for released borrowed memory */
  if (b == NULL) b = krec_test_array(L, idx);   /* arrays of records (record.c) */
  if (b == NULL) return 0;
  size_t isz = b->record ? (size_t)b->record->size : (size_t)kb_dtype_bytes(b->dtype);
  if (b->ndim == 0) {   /* one record, a[i] of a 1-D array: an array of one */
    int64_t one = 1;
    fill(out, b->data, b->dtype, 1, &one, 1, isz);
  } else {
    fill(out, b->data, b->dtype, b->ndim, b->shape, b->size, isz);
  }
  return 1;
}

static int ext_todevarray(lua_State *L, int idx, kjit_ext_buffer *out) {
  KDevArray *d = kcu_test_devarray(L, idx);
  if (d == NULL) return 0;
  kcu_check_usable(L, d, 0);
  size_t isz = d->size ? d->bytes / (size_t)d->size
                       : d->record ? (size_t)d->record->size : (size_t)kb_dtype_bytes(d->dtype);
  fill(out, (void *)(uintptr_t)d->ptr, d->dtype, d->ndim, d->shape, d->size, isz);
  out->device = d->device;
  out->sim = d->sim;
  return 1;
}

static void ext_dev_to_host(lua_State *L, void *dst, const kjit_ext_buffer *d, void *stream) {
  if (d->nbytes == 0) return;
  if (d->sim) memcpy(dst, d->data, d->nbytes);
  else kcu_memcpy_dtoh(L, dst, (KCuDevPtr)(uintptr_t)d->data, d->nbytes, stream);
}

static void ext_host_to_dev(lua_State *L, const kjit_ext_buffer *d, const void *src, void *stream) {
  if (d->nbytes == 0) return;
  if (d->sim) memcpy(d->data, src, d->nbytes);
  else kcu_memcpy_htod(L, (KCuDevPtr)(uintptr_t)d->data, src, d->nbytes, stream);
}

static void *ext_tostream(lua_State *L, int idx) { return kcu_check_stream(L, idx); }

static void ext_synchronize(lua_State *L, void *stream) {
  if (kcu_sim_mode()) return;   /* the simulator runs launches to completion */
  kcu_sync(L, stream);
}

static int ext_keep(lua_State *L, int idx) {
  lua_pushvalue(L, idx);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

static void ext_unkeep(lua_State *L, int ref) { luaL_unref(L, LUA_REGISTRYINDEX, ref); }

/* host_alloc: kcu_host_alloc raises (no driver, out of memory); here the
** caller wants NULL instead, so it runs protected. */
static int host_alloc_p(lua_State *L) {
  size_t *n = lua_touserdata(L, 1);
  void **out = lua_touserdata(L, 2);
  *out = kcu_host_alloc(L, *n, 1 /* CU_MEMHOSTALLOC_PORTABLE */);
  return 0;
}

static void *ext_host_alloc(lua_State *L, size_t n) {
  void *p = NULL;
  if (kcu_sim_mode() || !kcu_available(NULL)) return NULL;
  lua_pushcfunction(L, host_alloc_p);
  lua_pushlightuserdata(L, &n);
  lua_pushlightuserdata(L, &p);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    lua_pop(L, 1);
    return NULL;
  }
  return p;
}

static int ext_cuda_driver(void) { return !kcu_sim_mode() && kcu_available(NULL); }

static const kjit_ext_api api = {
  KJIT_EXT_VERSION, sizeof(kjit_ext_api), KJIT_VERSION,
  ext_toarray, ext_todevarray, ext_dev_to_host, ext_host_to_dev, ext_tostream,
  ext_synchronize, ext_keep, ext_unkeep, kd_cache_load_only,
  ext_host_alloc, kcu_host_free, ext_cuda_driver,
  kcu_close_count,
};

void kext_open(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&api);
  lua_setfield(L, LUA_REGISTRYINDEX, KJIT_EXT_REGISTRY_KEY);
}
