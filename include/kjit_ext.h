/*
** kjit_ext.h: the C API that Lua extension modules of kjit (kjit.mpi, ...)
** use to reach kjit's objects, without linking to kjit or looking up its
** symbols. An extension may be built with another compiler wrapper (an MPI
** mpicc) and loaded into any process that runs kjit.
**
** require "kjit" stores a pointer to one kjit_ext_api struct in the Lua
** registry under KJIT_EXT_REGISTRY_KEY (a light userdata). An extension
** requires "kjit" first, then reads it:
**
**   lua_getfield(L, LUA_REGISTRYINDEX, KJIT_EXT_REGISTRY_KEY);
**   const kjit_ext_api *api = lua_touserdata(L, -1);
**   if (api == NULL || api->version < 1 || api->size < sizeof *api) ...refuse...
**
** Versioning: fields are only ever appended; `version` grows by one with
** each addition, and `size` is sizeof the struct kjit was built with. An
** extension checks version (and size) before using a field newer than 1.
**
** Functions that take a lua_State may raise Lua errors (located at the
** calling Lua line), like any lua_CFunction: call them from one.
*/
#ifndef KJIT_EXT_H
#define KJIT_EXT_H

#include <stddef.h>
#include <stdint.h>
#include "kjit.h"

#define KJIT_EXT_REGISTRY_KEY "kjit.ext_api"
#define KJIT_EXT_VERSION 3

/* What an extension needs of an array, host or device. kjit arrays, their
** row views a[i] and slices a:slice(i, j) are always C-contiguous (kjit
** has no strided views): strides are the C-contiguous ones, given so that
** an extension never has to assume it. */
typedef struct kjit_ext_buffer {
  void *data;                     /* host arrays: the first element; device
                                     arrays: the device address (or, in the
                                     simulator, host memory) */
  kjit_dtype dtype;               /* KJIT_RECORD for arrays of records */
  int ndim;
  int64_t shape[KJIT_MAXDIMS];    /* shape[k] for k >= ndim is 1 */
  int64_t strides[KJIT_MAXDIMS];  /* in bytes, C-contiguous */
  int64_t size;                   /* elements */
  size_t itemsize;                /* bytes per element (a record's size) */
  size_t nbytes;                  /* size * itemsize */
  int device;                     /* -1: host array; else the device ordinal */
  int sim;                        /* device array of the simulator: data is
                                     host memory */
} kjit_ext_buffer;

typedef struct kjit_ext_api {
  int version;                    /* KJIT_EXT_VERSION of the kjit loaded */
  size_t size;                    /* sizeof(kjit_ext_api) in that kjit */
  const char *kjit_version;       /* "0.1.0" */

  /* ---- version 1 ---- */
  /* The host array (array, row view, slice, borrowed array) at idx into
  ** *out: returns 1, or 0 if the value is not a kjit array. Raises for an
  ** array whose borrowed memory was released. */
  int (*toarray)(lua_State *L, int idx, kjit_ext_buffer *out);
  /* The same for a kjit.cuda device array (simulator or driver): 1, or 0
  ** if not one. Raises if it cannot be used now (released, made in the
  ** other mode or on another device than the current one). */
  int (*todevarray)(lua_State *L, int idx, kjit_ext_buffer *out);
  /* Device <-> host copies of a whole device array described by d (from
  ** todevarray), on stream (NULL: the default stream, synchronous). */
  void (*dev_to_host)(lua_State *L, void *dst, const kjit_ext_buffer *d, void *stream);
  void (*host_to_dev)(lua_State *L, const kjit_ext_buffer *d, const void *src, void *stream);
  /* A kjit.cuda stream argument at idx (nil/none: NULL, the default
  ** stream); raises if it is something else. */
  void *(*tostream)(lua_State *L, int idx);
  /* Waits for a stream (NULL: the whole device). */
  void (*synchronize)(lua_State *L, void *stream);
  /* Keep-alive: a registry reference to the value at idx (any value), and
  ** its release. A buffer stays valid as long as its reference is held. */
  int (*keep)(lua_State *L, int idx);
  void (*unkeep)(lua_State *L, int ref);
  /* Disk cache, load only (process-wide; 1 on, 0 off): while on, a
  ** compile that does not find its code in the disk cache raises an error
  ** instead of compiling (used by kjit.mpi's compile_once). Returns the
  ** previous setting. */
  int (*cache_load_only)(int on);

  /* ---- version 2 ---- */
  /* Page-locked host memory of n bytes (cuMemHostAlloc, portable: usable
  ** with every device), for staging device arrays: copies from and to it
  ** go at the bus's full speed. NULL when there is none to give (the
  ** simulator, no driver, or the driver refused): the caller then uses
  ** ordinary memory. Never raises. */
  void *(*host_alloc)(lua_State *L, size_t n);
  void (*host_free)(void *p);   /* of host_alloc's memory; NULL is ignored */
  /* 1 when device arrays are the CUDA driver's (a driver with a device
  ** loaded, and the simulator off): loads the driver (cuInit) if needed. */
  int (*cuda_driver)(void);

  /* ---- version 3 ---- */
  /* A count bumped by every kjit.cuda.close() with the driver: it releases
  ** the devices' contexts, and with them host_alloc's memory and every
  ** device address, stream and library handle made before. An extension
  ** that keeps any of them notes the count when it makes one and, once the
  ** count has moved, forgets it (never frees it, never uses it). */
  unsigned (*close_count)(void);
} kjit_ext_api;

#endif
