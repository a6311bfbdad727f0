/*
** cudadrv.h: the CUDA Driver API loaded with dlopen, device arrays, streams,
** events, and the host side of kjit.cuda. No CUDA header or library is needed
** at build time: the few types and prototypes used are declared in cudadrv.c.
**
** Every function that takes a lua_State raises a Lua error located at the
** caller's Lua line ("file.lua:12: kjit.cuda: cuMemAlloc: CUDA_ERROR_...");
** none aborts. The driver state is process-wide (loaded once, pthread_once),
** and so is the simulator mode; the current device is per OS thread (as
** cudaSetDevice's: cuda.select_device, cuda.use_device).
*/
#ifndef KJIT_CUDADRV_H
#define KJIT_CUDADRV_H

#include <stddef.h>
#include <stdint.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"

typedef uint64_t KCuDevPtr;          /* CUdeviceptr */
typedef void *KCuStream, *KCuModule, *KCuFunction;

/* 1 if the driver loaded, cuInit succeeded and a device exists; *why (if not
** NULL) gets a static reason otherwise ("libcuda.so.1 not found",
** "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"). The reason
** is reported even in simulator mode: this is the real driver's state. */
int kcu_available(const char **why);

/* Simulator mode: 0 off, 1 compiled (CPU), 2 interpreted. Set by
** cuda.simulate(true|false|"interpret") or env KJIT_CUDASIM=1|interpret
** (read once, at first use). */
int kcu_sim_mode(void);
void kcu_set_sim_mode(int mode);

/* Ensures the driver is loaded and the current device's primary context is
** current on this thread; on failure raises a Lua error (message carries the
** driver's error name and text). Not needed in simulator mode. */
void kcu_ensure(lua_State *L);

/* This thread's current device ordinal (0-based; 0 in simulator mode). */
int kcu_device(void);
/* cuda.close() (kcu_close): a context generation per device (sim: the
** simulator's), bumped each time kjit releases the device's primary
** context. An object made in an older generation is dead: its handles went
** with the context, so using it is an error and its __gc calls nothing. */
unsigned kcu_gen(int sim, int dev);
static inline int kcu_stale(int sim, int dev, unsigned gen) { return gen != kcu_gen(sim, dev); }
/* Registers fn(dev), run by kcu_close with dev's context current, before
** the context is released (library handles, host memory blocks). */
void kcu_on_close(void (*fn)(int dev));
/* cuda.close(): waits for every device kjit uses, frees what kjit holds
** there, releases the primary contexts (cuDevicePrimaryCtxRelease: the
** driver destroys one when no other code in the process retains it) and
** bumps the generations; the next use retains a fresh context. In the
** simulator only the generation moves. Returns the contexts released. */
int kcu_close(lua_State *L);
/* How many times kcu_close released contexts (the driver's, not the
** simulator's): kjit's extension API gives it to extensions. */
unsigned kcu_close_count(void);

/* Compute capability of the current device as major*10+minor (e.g. 90);
** 90 in simulator mode. Raises like kcu_ensure. */
int kcu_compute_capability(lua_State *L);

/* Driver calls for the kernel launcher; each returns or raises a Lua error
** with `what` and the driver's error name/text. The caller must have called
** kcu_ensure (they use the context current on this thread). */
KCuModule kcu_module_load(lua_State *L, const char *ptx);  /* cuModuleLoadDataEx; JIT error log in the message */
void kcu_module_unload(KCuModule m);                       /* never raises */
void kcu_module_unload_on(int dev, KCuModule m);           /* in dev's context; never raises */
/* A link input: bytes of one of the driver linker's CUjitInputType kinds
** (KCU_LINK_PTX: text, size counts the terminating 0). */
enum { KCU_LINK_CUBIN = 0, KCU_LINK_PTX = 1, KCU_LINK_FATBIN = 2, KCU_LINK_OBJECT = 3,
       KCU_LINK_LIBRARY = 4 };
typedef struct KCuLinkInput { char *name; char *data; size_t size; int type; } KCuLinkInput;
/* The kernel's PTX linked with n more inputs (cuLinkAddData, each with its
** type; names for messages) by the driver's linker, loaded as one module;
** the linker's log in the error message. */
KCuModule kcu_module_link(lua_State *L, const char *ptx, int n, const KCuLinkInput *in);
KCuFunction kcu_get_function(lua_State *L, KCuModule m, const char *name);
void kcu_launch(lua_State *L, KCuFunction f, const unsigned grid[3],
                const unsigned block[3], unsigned shared_bytes, KCuStream s,
                void **params);
/* The same as a cooperative launch (cuLaunchCooperativeKernel), for a
** kernel that syncs the grid: raises a Lua error naming the limit when the
** grid has more blocks than the device can hold at once (the occupancy
** calculator's blocks per SM times the SMs). */
void kcu_launch_cooperative(lua_State *L, KCuFunction f, const unsigned grid[3],
                            const unsigned block[3], unsigned shared_bytes, KCuStream s,
                            void **params);
/* That limit: the most blocks of `threads` threads a cooperative launch
** of f may have on the current device. */
long long kcu_max_cooperative_blocks(lua_State *L, KCuFunction f, int threads,
                                     unsigned shared_bytes);
/* Allocates on the current device; 0 bytes gives 0. On out-of-memory it
** frees the deferred blocks, runs a full Lua GC and retries before raising
** "CUDA_ERROR_OUT_OF_MEMORY: out of memory (allocating N bytes on device d)".
** So it may run finalizers: what the caller needs must be reachable. */
KCuDevPtr kcu_alloc(lua_State *L, size_t bytes);
/* Deferred free (never raises): the block is queued for the current device
** and released with cuMemFree after that context is synchronized (at
** cuda.synchronize(), when the queue is large, or when an allocation fails). */
void kcu_free(KCuDevPtr p);
/* cuMemFree now, in the current context (cuda.close(), after a synchronize). */
void kcu_free_now(KCuDevPtr p);
/* The same for a block allocated on `device` (which may no longer be the
** current one: the block must go back to its own context). */
void kcu_free_on(int device, KCuDevPtr p);
/* s == NULL: synchronous copy (cuMemcpyHtoD/DtoH); else async on s. */
void kcu_memcpy_htod(lua_State *L, KCuDevPtr dst, const void *src, size_t n, KCuStream s);
void kcu_memcpy_dtoh(lua_State *L, void *dst, KCuDevPtr src, size_t n, KCuStream s);
/* NULL: whole context (cuCtxSynchronize), then the deferred frees run. */
void kcu_sync(lua_State *L, KCuStream s);

/* Device arrays: userdata "kjit.devarray". In simulator mode the memory is
** host memory inside the userdata (64-byte aligned) and ptr is its address. */
#define KCU_DEVARRAY "kjit.devarray"
typedef struct KDevArray {
  KCuDevPtr ptr;                  /* 0 for an empty array */
  int64_t shape[KJIT_MAXDIMS];    /* shape[k] for k >= ndim is 1 */
  int64_t size;                   /* elements */
  int ndim;
  kjit_dtype dtype;
  int device;                     /* ordinal it was allocated on */
  int sim;                        /* 1: ptr is host memory (simulator) */
  size_t bytes;                   /* size * element size */
  int released;                   /* __gc ran: the memory is gone (GPU) or
                                     must be treated so (simulator); a
                                     resurrected array is unusable */
  const struct kjit_record *record;  /* dtype KJIT_RECORD: the layout (size
                                     counts records); NULL otherwise */
  int foreign;                    /* cuda.from_device_ptr, kjit_push_device_array_wrap:
                                     memory kjit did not allocate and never
                                     frees (its owner, if any, is kept
                                     alive by the array's user value) */
  const struct KDevArray *owner;  /* a view (d[i], slice, reshape ...): the
                                     array whose memory this is (kept alive
                                     by the view's user value); NULL when
                                     the memory is this array's own */
  unsigned gen;                   /* kcu_gen when made: an older one means
                                     cuda.close() took its memory */
} KDevArray;

KDevArray *kcu_test_devarray(lua_State *L, int idx);   /* NULL if not one */
/* Pushes a zeroed device array of records of layout r (host/record.h). */
struct kjit_record;
KDevArray *kcu_push_devrecords(lua_State *L, const struct kjit_record *r, int ndim,
                               const int64_t *shape);
/* Raises unless d can be used now: not finalized ("array used after its
** memory was released"), created in the current mode (simulator or
** driver) and on the current device. arg > 0 names the argument. */
void kcu_check_usable(lua_State *L, const KDevArray *d, int arg);
/* As kcu_check_usable without the device: d is alive and of the current
** mode (views of another device's array: metadata only). */
void kcu_check_live(lua_State *L, const KDevArray *d, int arg);
/* As kcu_check_usable for a kernel's argument: d may also be on a device
** the current one has peer access to (cuda.enable_peer_access). */
void kcu_check_usable_kernel(lua_State *L, const KDevArray *d, int arg);
/* 1 when dev's context may use peer's memory (dev == peer, or enabled). */
int kcu_peer_enabled(int dev, int peer);
/* kcu_test_devarray + kcu_check_usable; argument error if not a devarray. */
KDevArray *kcu_check_devarray(lua_State *L, int idx);
/* Pushes a new zero-filled device array on the current device (simulator
** memory in simulator mode). Raises on a bad shape or out of memory. */
KDevArray *kcu_push_devarray(lua_State *L, kjit_dtype t, int ndim,
                             const int64_t *shape);

/* A device array over memory kjit did not allocate (a foreign device
** pointer; in simulator mode a host address), on the current device and
** mode, never freed by kjit; the userdata has one user value (the owner to
** keep alive). Raises on a bad shape. */
KDevArray *kcu_push_devwrap(lua_State *L, KCuDevPtr ptr, kjit_dtype t, int ndim,
                            const int64_t *shape);

/* Views and elements (host/devarray.c). A view is a device array over
** [off, off + its bytes) of the array at base (contiguous: rows, slices
** along the first dimension, reshapes). */
size_t kcu_elem_size(const KDevArray *d);
KDevArray *kcu_push_devview(lua_State *L, int base, size_t off, int ndim, const int64_t *shape);
/* n bytes at byte offset off, to or from the host; a read waits for the
** device as a copy on the default stream does (and raises kernel errors). */
void kcu_dev_read(lua_State *L, const KDevArray *d, size_t off, void *dst, size_t n);
void kcu_dev_write(lua_State *L, const KDevArray *d, size_t off, const void *src, size_t n,
                   KCuStream s);
void kcu_memcpy_dtod(lua_State *L, KCuDevPtr dst, KCuDevPtr src, size_t n, KCuStream s);
/* Host memory the driver manages (host/hostmem.c): page-locked
** (cuMemHostAlloc, flags as the driver's), its device address, managed
** memory (cuMemAllocManaged, attached globally; freed with kcu_free_on),
** registration of existing memory. The allocating ones raise; the others
** never do. */
void *kcu_host_alloc(lua_State *L, size_t n, unsigned flags);
void kcu_host_free(void *p);
KCuDevPtr kcu_host_devptr(lua_State *L, void *p);
KCuDevPtr kcu_alloc_managed(lua_State *L, size_t n);
void kcu_host_register(lua_State *L, void *p, size_t n);
void kcu_host_unregister(void *p);
/* 1 when [p, p + n) lies in a mapped or managed array of the current
** device (hostmem.c); *dev is its device address. Kernels then take the
** host array without copies. */
int kcu_host_mapped(const void *p, size_t n, KCuDevPtr *dev);
void kcu_open_hostmem(lua_State *L);

/* cuProfilerStart/Stop (nothing in the simulator or without them) */
void kcu_profile(lua_State *L, int start);
/* d[k] and d[k] = v for integer keys (the metamethods' non-string keys) */
int kcu_devarray_index(lua_State *L, KDevArray *d);
int kcu_devarray_newindex(lua_State *L, KDevArray *d);
extern const luaL_Reg kcu_devarray_methods[];
/* interop.c: d:device_ptr(), d:cuda_array_interface(); cuda.declare_device,
** cuda.from_device_ptr, cuda.from_cuda_array_interface (into the table at
** the top of the stack) */
extern const luaL_Reg kcu_interop_methods[];
void kcu_open_interop(lua_State *L);
/* host functions of kjit.cuda in devarray.c (streams, devices, profiling) */
void kcu_open_extra(lua_State *L);

/* nil/none/0 -> NULL (the default stream); else a kjit.cuda stream usable
** now (same mode, same device), whose handle is returned. In simulator mode
** a stream's handle is the address of its userdata (not NULL). */
KCuStream kcu_check_stream(lua_State *L, int idx);

/* Called (when set) after each host call that waits for the device:
** kcu_sync (cuda.synchronize), s:synchronize(), e:synchronize() and
** d:copy_to_host() without a stream, in both modes, so the kernel launcher
** can raise the errors kernels recorded on the device. complete is 1 when
** every launch so far has finished (cuda.synchronize(), a stream-less
** copy), 0 when only one stream or event was waited for. Set once, at open. */
void kcu_set_sync_hook(void (*hook)(lua_State *L, int complete));

/* Fills the table at the top of the stack (the kjit.cuda module table) with
** the host functions. */
void kcu_open(lua_State *L);

#endif
