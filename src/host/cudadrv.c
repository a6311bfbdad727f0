/*
** cudadrv.c: the CUDA Driver API, loaded with dlopen, and the host side of
** kjit.cuda: device arrays, streams, events, device selection, simulator.
**
**   cuda.jit kernel (kernel.c) --nvvm.c--> PTX
**     --> here: kcu_module_load, kcu_get_function, kcu_launch
**   cuda.to_device / device_array / copy_to_host / stream / event: here
**
** Loading. libcuda.so.1 (or $KJIT_LIBCUDA) is opened once per process
** (pthread_once) and never linked: kjit builds and runs without CUDA. No
** CUDA header is used either; the few types, enum values and the versioned
** entry-point names of CUDA 13 (cuMemAlloc_v2, ...) are declared below.
**
** Contexts. A device's primary context is retained on first use, as the
** CUDA runtime does, and made current on the calling thread when it is not
** (cuCtxGetCurrent is a thread-local read in the driver: cheap, and right
** even if the host application switched contexts behind our back).
**
** Several GPUs. The current device (cuda.select_device, cuda.use_device)
** is per OS thread, as cudaSetDevice's: a thread starts on device 0, and a
** host running one lua_State per GPU on its own thread sets each thread's
** device once. Primary contexts, peer access and the deferred frees are
** per device and process-wide. An array belongs to the device it was made
** on: it is used with that device current, except that a kernel may take
** an array of a device the current one has peer access to
** (cuda.enable_peer_access), and d:copy_to_device(src) copies between any
** two devices (cuMemcpyPeer).
**
** Device memory. A device array owns one cuMemAlloc block. Its __gc does
** not call cuMemFree, which stalls until the device is idle and could run
** at any Lua allocation: it queues the block on its device's deferred list
** (as Numba does). The list is released, after cuCtxSynchronize, at
** cuda.synchronize(), when it holds more than DEFER_MAXBLOCKS blocks or a
** fifth of the device memory (checked at the next allocation), when an
** allocation fails (then a full Lua GC and a retry), and when the Lua state
** closes. So a block is never freed while a kernel may still use it.
**
** Closing (cuda.close(), kcu_close), numba-cuda's semantics. For each
** device with a context: synchronize, free the deferred blocks, run the
** close hooks (other files' releases: hostmem.c's page-locked and managed
** arrays, blas_cuda.c's handle of this thread), bump the device's
** generation, forget the context and cuDevicePrimaryCtxRelease it (the
** driver destroys it when no other code in the process retains it; Reset
** would destroy it under a host's CUDA C code too). Every object records
** the generation it was made in (arrays, streams, events, kernel modules,
** cuFFT plans, cuRAND generators): one of an older generation is dead, so
** using it is a located Lua error, caches (modules, plans, handles) make it
** again, and no finalizer passes its handle to the driver. The next call
** retains a fresh context. Generations, not a registry of live objects:
** nothing to walk at close, no lock on the allocation path. The cost: the
** blocks of arrays still alive at the close are left to the context's
** destruction (if another user keeps the context alive, they stay
** allocated until it goes).
**
** Simulator (kcu_sim_mode() != 0). Device arrays keep their elements in
** the userdata (host memory, 64-byte aligned, counted by Lua's GC), copies
** are memcpy, synchronize is a no-op, streams are plain objects and events
** record a monotonic timestamp. No driver is needed; arrays, streams and
** events remember the mode they were made in and refuse the other one.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "host/cudadrv.h"
#include "host/record.h"

/* ------------------------------------------------------------------ */
/* the driver API, declared here (values from CUDA 13's cuda.h)        */
/* ------------------------------------------------------------------ */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUevent;

enum {
  CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2, CUDA_ERROR_NOT_READY = 600
};
enum {   /* CUdevice_attribute */
  ATTR_MAX_THREADS_PER_BLOCK = 1, ATTR_MULTIPROCESSOR_COUNT = 16, ATTR_COOPERATIVE_LAUNCH = 95,
  ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76
};
enum {   /* CUjit_option */
  JIT_ERROR_LOG_BUFFER = 5, JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
};

/* X(field, symbol, older symbol or NULL, required, parameters). The
** symbols are the ones cuda.h's macros expand to (cuMemAlloc is
** cuMemAlloc_v2); the older name covers drivers before that version. */
#define CU_API(X) \
  X(Init, "cuInit", NULL, 1, (unsigned flags)) \
  X(DriverGetVersion, "cuDriverGetVersion", NULL, 1, (int *v)) \
  X(DeviceGetCount, "cuDeviceGetCount", NULL, 1, (int *n)) \
  X(DeviceGet, "cuDeviceGet", NULL, 1, (CUdevice *d, int ordinal)) \
  X(DeviceGetName, "cuDeviceGetName", NULL, 1, (char *s, int len, CUdevice d)) \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", NULL, 1, \
    (int *v, int attr, CUdevice d)) \
  X(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL, 1, (size_t *n, CUdevice d)) \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, 1, \
    (CUcontext *c, CUdevice d)) \
  X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease", 0, \
    (CUdevice d)) \
  X(CtxGetCurrent, "cuCtxGetCurrent", NULL, 1, (CUcontext *c)) \
  X(CtxSetCurrent, "cuCtxSetCurrent", NULL, 1, (CUcontext c)) \
  X(CtxSynchronize, "cuCtxSynchronize", NULL, 1, (void)) \
  X(MemGetInfo, "cuMemGetInfo_v2", NULL, 1, (size_t *free, size_t *total)) \
  X(MemAlloc, "cuMemAlloc_v2", NULL, 1, (KCuDevPtr *p, size_t n)) \
  X(MemFree, "cuMemFree_v2", NULL, 1, (KCuDevPtr p)) \
  X(MemsetD8, "cuMemsetD8_v2", NULL, 1, (KCuDevPtr p, unsigned char v, size_t n)) \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, 1, \
    (KCuDevPtr dst, const void *src, size_t n)) \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, 1, (void *dst, KCuDevPtr src, size_t n)) \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL, 1, \
    (KCuDevPtr dst, const void *src, size_t n, KCuStream s)) \
  X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL, 1, \
    (void *dst, KCuDevPtr src, size_t n, KCuStream s)) \
  X(StreamCreate, "cuStreamCreate", NULL, 1, (KCuStream *s, unsigned flags)) \
  X(StreamDestroy, "cuStreamDestroy_v2", NULL, 1, (KCuStream s)) \
  X(StreamSynchronize, "cuStreamSynchronize", NULL, 1, (KCuStream s)) \
  X(EventCreate, "cuEventCreate", NULL, 1, (CUevent *e, unsigned flags)) \
  X(EventRecord, "cuEventRecord", NULL, 1, (CUevent e, KCuStream s)) \
  X(EventQuery, "cuEventQuery", NULL, 1, (CUevent e)) \
  X(EventSynchronize, "cuEventSynchronize", NULL, 1, (CUevent e)) \
  X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", 1, \
    (float *ms, CUevent start, CUevent end)) \
  X(EventDestroy, "cuEventDestroy_v2", NULL, 1, (CUevent e)) \
  X(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL, 1, \
    (KCuModule *m, const void *image, unsigned n, int *opts, void **vals)) \
  X(ModuleUnload, "cuModuleUnload", NULL, 1, (KCuModule m)) \
  X(ModuleGetFunction, "cuModuleGetFunction", NULL, 1, \
    (KCuFunction *f, KCuModule m, const char *name)) \
  X(LaunchKernel, "cuLaunchKernel", NULL, 1, \
    (KCuFunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
     unsigned by, unsigned bz, unsigned shared, KCuStream s, void **params, \
     void **extra)) \
  X(GetErrorName, "cuGetErrorName", NULL, 0, (CUresult e, const char **s)) \
  X(GetErrorString, "cuGetErrorString", NULL, 0, (CUresult e, const char **s)) \
  X(MemcpyDtoD, "cuMemcpyDtoD_v2", NULL, 0, (KCuDevPtr dst, KCuDevPtr src, size_t n)) \
  X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL, 0, \
    (KCuDevPtr dst, KCuDevPtr src, size_t n, KCuStream s)) \
  X(ProfilerStart, "cuProfilerStart", NULL, 0, (void)) \
  X(ProfilerStop, "cuProfilerStop", NULL, 0, (void)) \
  X(MemHostAlloc, "cuMemHostAlloc", NULL, 0, (void **p, size_t n, unsigned flags)) \
  X(MemFreeHost, "cuMemFreeHost", NULL, 0, (void *p)) \
  X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", NULL, 0, \
    (KCuDevPtr *d, void *p, unsigned flags)) \
  X(MemAllocManaged, "cuMemAllocManaged", NULL, 0, (KCuDevPtr *d, size_t n, unsigned flags)) \
  X(MemHostRegister, "cuMemHostRegister_v2", NULL, 0, (void *p, size_t n, unsigned flags)) \
  X(MemHostUnregister, "cuMemHostUnregister", NULL, 0, (void *p)) \
  X(DeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL, 0, (int *can, CUdevice d, CUdevice peer)) \
  X(CtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL, 0, (CUcontext peer, unsigned flags)) \
  X(MemcpyPeer, "cuMemcpyPeer", NULL, 0, \
    (KCuDevPtr dst, CUcontext dctx, KCuDevPtr src, CUcontext sctx, size_t n)) \
  X(MemcpyPeerAsync, "cuMemcpyPeerAsync", NULL, 0, \
    (KCuDevPtr dst, CUcontext dctx, KCuDevPtr src, CUcontext sctx, size_t n, KCuStream s)) \
  X(LinkCreate, "cuLinkCreate_v2", "cuLinkCreate", 0, \
    (unsigned n, int *opts, void **vals, void **state)) \
  X(LinkAddData, "cuLinkAddData_v2", "cuLinkAddData", 0, \
    (void *state, int type, void *data, size_t size, const char *name, unsigned n, \
     int *opts, void **vals)) \
  X(LinkComplete, "cuLinkComplete", NULL, 0, (void *state, void **cubin, size_t *size)) \
  X(LinkDestroy, "cuLinkDestroy", NULL, 0, (void *state)) \
  X(LaunchCooperativeKernel, "cuLaunchCooperativeKernel", NULL, 0, \
    (KCuFunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
     unsigned by, unsigned bz, unsigned shared, KCuStream s, void **params)) \
  X(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", \
    NULL, 0, (int *nblocks, KCuFunction f, int block_size, size_t shared))

#define X_FIELD(f, sym, old, req, params) CUresult (*f) params;
struct CuApi { CU_API(X_FIELD) };
#undef X_FIELD
static struct CuApi cu;

#define X_SYM(f, sym, old, req, params) { sym, old, req, offsetof(struct CuApi, f) },
static const struct { const char *sym, *old; int required; size_t off; }
    cu_syms[] = { CU_API(X_SYM) };
#undef X_SYM

/* Names and texts for when the driver cannot tell (not loaded, a stub). */
static const struct { CUresult code; const char *name, *text; } cu_errors[] = {
  {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
  {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
  {35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
   "CUDA driver version is insufficient for CUDA runtime version"},
  {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
  {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
  {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
  {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
  {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
  {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {600, "CUDA_ERROR_NOT_READY", "device not ready"},
  {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
  {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
  {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
  {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
  {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
  {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
   "too many blocks in cooperative launch"},
  {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
  {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* ------------------------------------------------------------------ */
/* process-wide state                                                  */
/* ------------------------------------------------------------------ */

#define KCU_MAXDEV       64
#define DEFER_MAXBLOCKS  64        /* deferred frees before a flush */
#define SIM_ALIGN        64

typedef struct Deferred { KCuDevPtr p; size_t bytes; } Deferred;
typedef struct DeferList { Deferred *v; size_t n, cap, bytes; } DeferList;

static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static pthread_once_t sim_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t drv_mu = PTHREAD_MUTEX_INITIALIZER;  /* ctx[], defer[] */

/* Written once by load_driver (under drv_once), read-only afterwards. */
static struct {
  void *lib;
  int loaded;          /* the library opened and has every entry point */
  int ok;              /* ...and cuInit succeeded and a device exists */
  int ndev, version;
  char why[300];       /* reason when !ok */
} drv;

/* Primary contexts retained; written once under drv_mu, after dev_mem and
** dev_cc (release), so a reader that sees the context sees those too. */
static _Atomic(CUcontext) dev_ctx[KCU_MAXDEV];
static size_t dev_mem[KCU_MAXDEV];          /* total memory, 0 if unknown */
static int dev_cc[KCU_MAXDEV];              /* major*10+minor */
static DeferList deferred[KCU_MAXDEV];

/* cuda.select_device / use_device: this OS thread's device, as
** cudaSetDevice's (a new thread starts on device 0) */
static __thread int cur_dev;
/* peer[a][b]: device a's context may use b's memory (enable_peer_access);
** written under drv_mu, read without it (a stale 0 only refuses) */
static _Atomic(unsigned char) peer_on[KCU_MAXDEV][KCU_MAXDEV];
static void (*sync_hook)(lua_State *L, int complete);     /* kcu_set_sync_hook */
static atomic_int sim_mode;
/* cuda.close(): each device's context generation, bumped when kjit lets
** go of the device's primary context (kcu_close); [KCU_MAXDEV] is the
** simulator's. Objects remember the generation they were made in. */
static _Atomic(unsigned) dev_gen[KCU_MAXDEV + 1];
static _Atomic(unsigned) close_count;     /* kcu_close_count */
/* kcu_on_close: what other files release before a context goes */
#define MAX_CLOSE_HOOKS 8
static void (*close_hooks[MAX_CLOSE_HOOKS])(int dev);
static int nclose_hooks;

/* ------------------------------------------------------------------ */
/* errors                                                              */
/* ------------------------------------------------------------------ */

/* "NAME: text" for a driver result, asking the driver first. */
static void errtext(CUresult r, char *buf, size_t n) {
  const char *name = NULL, *text = NULL;
  size_t k;
  if (cu.GetErrorName && cu.GetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (cu.GetErrorString && cu.GetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
  for (k = 0; k < sizeof cu_errors / sizeof cu_errors[0]; k++)
    if (cu_errors[k].code == r) {
      if (!name) name = cu_errors[k].name;
      if (!text) text = cu_errors[k].text;
    }
  if (name && text) snprintf(buf, n, "%s: %s", name, text);
  else if (name) snprintf(buf, n, "%s (error %d)", name, r);
  else snprintf(buf, n, "CUDA error %d", r);
}

/* Raises "kjit.cuda: what: NAME: text[extra]" at the caller's Lua line. */
static int cuerror(lua_State *L, CUresult r, const char *what, const char *extra) {
  char msg[256];
  errtext(r, msg, sizeof msg);
  return luaL_error(L, "kjit.cuda: %s: %s%s", what, msg, extra ? extra : "");
}

#define CHECK(L, call, what) \
  do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) cuerror(L, r_, what, NULL); } while (0)

/* ------------------------------------------------------------------ */
/* loading                                                             */
/* ------------------------------------------------------------------ */

static void load_driver(void) {
  const char *env = getenv("KJIT_LIBCUDA");
  const char *path = (env && *env) ? env : "libcuda.so.1";
  size_t k;
  CUresult r;
  int n = 0;
  drv.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (drv.lib == NULL) {
    if (env && *env) {
      const char *e = dlerror();
      snprintf(drv.why, sizeof drv.why, "KJIT_LIBCUDA=%s could not be loaded: %s",
               path, e ? e : "unknown error");
    } else {
      snprintf(drv.why, sizeof drv.why, "libcuda.so.1 not found");
    }
    return;
  }
  for (k = 0; k < sizeof cu_syms / sizeof cu_syms[0]; k++) {
    void *p = dlsym(drv.lib, cu_syms[k].sym);
    if (p == NULL && cu_syms[k].old) p = dlsym(drv.lib, cu_syms[k].old);
    if (p == NULL && cu_syms[k].required) {
      snprintf(drv.why, sizeof drv.why, "%s has no %s (driver too old?)",
               path, cu_syms[k].sym);
      memset(&cu, 0, sizeof cu);
      dlclose(drv.lib);
      drv.lib = NULL;
      return;
    }
    /* POSIX guarantees function pointers round-trip through void *. */
    memcpy((char *)&cu + cu_syms[k].off, &p, sizeof p);
  }
  drv.loaded = 1;
  if ((r = cu.Init(0)) != CUDA_SUCCESS ||
      (r = cu.DeviceGetCount(&n)) != CUDA_SUCCESS) {
    errtext(r, drv.why, sizeof drv.why);
    return;
  }
  if (n <= 0) {
    errtext(100, drv.why, sizeof drv.why);   /* CUDA_ERROR_NO_DEVICE */
    return;
  }
  if (cu.DriverGetVersion(&drv.version) != CUDA_SUCCESS) drv.version = 0;
  drv.ndev = n < KCU_MAXDEV ? n : KCU_MAXDEV;
  drv.ok = 1;
}

int kcu_available(const char **why) {
  pthread_once(&drv_once, load_driver);
  if (!drv.ok && why) *why = drv.why;
  return drv.ok;
}

/* KJIT_CUDASIM=1|true|yes|on -> 1, =interpret -> 2, unset/0/false/no/off -> 0. */
static void load_sim(void) {
  const char *e = getenv("KJIT_CUDASIM");
  int m = 0;
  if (e && *e) {
    if (strcmp(e, "interpret") == 0) m = 2;
    else if (strcmp(e, "0") != 0 && strcmp(e, "false") != 0 &&
             strcmp(e, "no") != 0 && strcmp(e, "off") != 0) m = 1;
  }
  /* KJIT_DISABLE_JIT: kernels run interpreted too (as kjit.jit functions) */
  e = getenv("KJIT_DISABLE_JIT");
  if (e && *e && strcmp(e, "0") != 0) m = 2;
  atomic_store(&sim_mode, m);
}

int kcu_sim_mode(void) {
  pthread_once(&sim_once, load_sim);
  return atomic_load_explicit(&sim_mode, memory_order_relaxed);
}

void kcu_set_sim_mode(int mode) {
  pthread_once(&sim_once, load_sim);
  atomic_store(&sim_mode, mode);
}

int kcu_device(void) {
  return kcu_sim_mode() ? 0 : cur_dev;
}

/* Raises the "no driver" error with the reason and the way out. */
static int nodriver(lua_State *L) {
  if (!drv.loaded)
    return luaL_error(L, "kjit.cuda: no CUDA driver (%s); set KJIT_CUDASIM=1 "
                      "or call cuda.simulate(true) to run on the CPU", drv.why);
  return luaL_error(L, "kjit.cuda: CUDA is not usable (%s); set KJIT_CUDASIM=1 "
                    "or call cuda.simulate(true) to run on the CPU", drv.why);
}

static CUresult retain(int dev, CUcontext *out);

/* Retains dev's primary context if needed and makes it current here. */
static CUresult make_current(int dev) {
  CUcontext c = atomic_load_explicit(&dev_ctx[dev], memory_order_acquire), now = NULL;
  CUresult r = CUDA_SUCCESS;
  if (c == NULL) r = retain(dev, &c);   /* first use of dev */
  if (r != CUDA_SUCCESS) return r;
  if (cu.CtxGetCurrent(&now) != CUDA_SUCCESS || now != c) r = cu.CtxSetCurrent(c);
  return r;
}

/* Retains dev's primary context (once) and reads its properties. */
static CUresult retain(int dev, CUcontext *out) {
  CUcontext c;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&drv_mu);
  c = atomic_load(&dev_ctx[dev]);
  if (c == NULL) {
    CUdevice d;
    int major = 0, minor = 0;
    size_t mem = 0;
    r = cu.DeviceGet(&d, dev);
    if (r == CUDA_SUCCESS) r = cu.DevicePrimaryCtxRetain(&c, d);
    if (r == CUDA_SUCCESS) {
      if (cu.DeviceTotalMem(&mem, d) == CUDA_SUCCESS) dev_mem[dev] = mem;
      if (cu.DeviceGetAttribute(&major, ATTR_CC_MAJOR, d) == CUDA_SUCCESS &&
          cu.DeviceGetAttribute(&minor, ATTR_CC_MINOR, d) == CUDA_SUCCESS)
        dev_cc[dev] = major * 10 + minor;
      atomic_store_explicit(&dev_ctx[dev], c, memory_order_release);
    }
  }
  pthread_mutex_unlock(&drv_mu);
  *out = c;
  return r;
}

void kcu_ensure(lua_State *L) {
  CUresult r;
  int dev;
  if (!kcu_available(NULL)) nodriver(L);
  dev = cur_dev;
  if ((r = make_current(dev)) != CUDA_SUCCESS) {
    char extra[64];
    snprintf(extra, sizeof extra, " (device %d)", dev);
    cuerror(L, r, "cannot use the device's primary context", extra);
  }
}

int kcu_compute_capability(lua_State *L) {
  if (kcu_sim_mode()) return 90;
  kcu_ensure(L);
  return dev_cc[kcu_device()];
}

unsigned kcu_gen(int sim, int dev) {
  if (sim) dev = KCU_MAXDEV;
  else if (dev < 0 || dev >= KCU_MAXDEV) return 0;
  return atomic_load_explicit(&dev_gen[dev], memory_order_acquire);
}

unsigned kcu_close_count(void) { return atomic_load(&close_count); }

void kcu_on_close(void (*fn)(int dev)) {
  pthread_mutex_lock(&drv_mu);
  int known = 0;
  for (int i = 0; i < nclose_hooks; i++) known |= close_hooks[i] == fn;
  if (!known && nclose_hooks < MAX_CLOSE_HOOKS) close_hooks[nclose_hooks++] = fn;
  pthread_mutex_unlock(&drv_mu);
}

static CUresult flush_deferred(int dev, int synced);

/* The order matters: the queued frees and the hooks' releases need the
** context; the generation moves before the release, so that nothing made
** in the old context is used or freed after it. Errors are ignored: a
** context that failed (a kernel's illegal address) is released all the
** same, which is how a program recovers from a sticky CUDA error. */
int kcu_close(lua_State *L) {
  (void)L;
  if (kcu_sim_mode()) {
    atomic_fetch_add(&dev_gen[KCU_MAXDEV], 1);
    return 0;
  }
  if (!kcu_available(NULL)) return 0;
  int released = 0;
  for (int dev = 0; dev < drv.ndev; dev++) {
    CUcontext c = atomic_load(&dev_ctx[dev]);
    if (c == NULL) continue;
    if (cu.CtxSetCurrent(c) == CUDA_SUCCESS) {
      cu.CtxSynchronize();
      flush_deferred(dev, 1);
      void (*hooks[MAX_CLOSE_HOOKS])(int);
      pthread_mutex_lock(&drv_mu);
      int nh = nclose_hooks;
      memcpy(hooks, close_hooks, sizeof hooks);
      pthread_mutex_unlock(&drv_mu);
      for (int i = 0; i < nh; i++) hooks[i](dev);
      cu.CtxSetCurrent(NULL);
    }
    pthread_mutex_lock(&drv_mu);
    atomic_fetch_add(&dev_gen[dev], 1);
    atomic_store(&dev_ctx[dev], NULL);
    for (int k = 0; k < KCU_MAXDEV; k++) {
      atomic_store(&peer_on[dev][k], 0);
      atomic_store(&peer_on[k][dev], 0);
    }
    free(deferred[dev].v);
    memset(&deferred[dev], 0, sizeof deferred[dev]);
    pthread_mutex_unlock(&drv_mu);
    CUdevice d;
    if (cu.DevicePrimaryCtxRelease && cu.DeviceGet(&d, dev) == CUDA_SUCCESS)
      cu.DevicePrimaryCtxRelease(d);
    released++;
  }
  if (released) atomic_fetch_add(&close_count, 1);
  return released;
}

/* ------------------------------------------------------------------ */
/* memory, with deferred frees                                         */
/* ------------------------------------------------------------------ */

/* Releases dev's deferred blocks: synchronizes dev's context (unless the
** caller just did), then cuMemFree each. Returns the synchronize result;
** the blocks are freed either way (after a failed synchronize the context
** is unusable and the driver reclaims them). The context current on this
** thread before is current again after (a block of another device than the
** thread's is freed in its own context). */
static CUresult flush_deferred(int dev, int synced) {
  DeferList l;
  CUresult r = CUDA_SUCCESS;
  size_t k;
  pthread_mutex_lock(&drv_mu);
  l = deferred[dev];
  memset(&deferred[dev], 0, sizeof l);
  pthread_mutex_unlock(&drv_mu);
  if (l.n > 0) {
    CUcontext before = NULL;
    if (cu.CtxGetCurrent(&before) != CUDA_SUCCESS) before = NULL;
    r = make_current(dev);
    if (r == CUDA_SUCCESS && !synced) r = cu.CtxSynchronize();
    for (k = 0; k < l.n; k++) cu.MemFree(l.v[k].p);
    if (before != NULL && before != atomic_load(&dev_ctx[dev])) cu.CtxSetCurrent(before);
  }
  free(l.v);
  return r;
}

/* Queues a block for a later free (the __gc path: no driver call, unless
** the queue cannot grow; then it is freed now, after a synchronize). */
static void defer_free(int dev, KCuDevPtr p, size_t bytes) {
  DeferList *l = &deferred[dev];
  int now = 0;
  if (p == 0) return;
  pthread_mutex_lock(&drv_mu);
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    Deferred *v = (Deferred *)realloc(l->v, cap * sizeof *v);
    if (v) { l->v = v; l->cap = cap; }
  }
  if (l->n < l->cap) {
    l->v[l->n].p = p;
    l->v[l->n].bytes = bytes;
    l->n++;
    l->bytes += bytes;
  } else {
    now = 1;
  }
  pthread_mutex_unlock(&drv_mu);
  if (now) {
    CUcontext before = NULL;
    if (cu.CtxGetCurrent(&before) != CUDA_SUCCESS) before = NULL;
    if (make_current(dev) == CUDA_SUCCESS) {
      cu.CtxSynchronize();
      cu.MemFree(p);
    }
    if (before != NULL) cu.CtxSetCurrent(before);
  }
}

/* Whether dev's queue is due for a flush. */
static int defer_full(int dev) {
  int full;
  pthread_mutex_lock(&drv_mu);
  full = deferred[dev].n > DEFER_MAXBLOCKS ||
         (dev_mem[dev] > 0 && deferred[dev].bytes > dev_mem[dev] / 5);
  pthread_mutex_unlock(&drv_mu);
  return full;
}

KCuDevPtr kcu_alloc(lua_State *L, size_t bytes) {
  KCuDevPtr p = 0;
  CUresult r;
  int dev;
  kcu_ensure(L);
  dev = kcu_device();
  if (bytes == 0) return 0;
  if (defer_full(dev) && (r = flush_deferred(dev, 0)) != CUDA_SUCCESS)
    cuerror(L, r, "cuCtxSynchronize", NULL);
  r = cu.MemAlloc(&p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    /* Dead arrays may hold the memory: release the queue, then collect
    ** what Lua has not finalized yet and release again. */
    flush_deferred(dev, 0);
    r = cu.MemAlloc(&p, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      lua_gc(L, LUA_GCCOLLECT);
      flush_deferred(dev, 0);
      r = cu.MemAlloc(&p, bytes);
    }
  }
  if (r != CUDA_SUCCESS) {
    char extra[96];
    snprintf(extra, sizeof extra, " (allocating %zu bytes on device %d)", bytes, dev);
    cuerror(L, r, "cuMemAlloc", extra);
  }
  return p;
}

void kcu_free_on(int device, KCuDevPtr p) {
  if (p && kcu_available(NULL) && device >= 0 && device < drv.ndev)
    defer_free(device, p, 0);
}

void kcu_free_now(KCuDevPtr p) {
  if (p && kcu_available(NULL)) cu.MemFree(p);
}

void kcu_free(KCuDevPtr p) {
  kcu_free_on(cur_dev, p);
}

void kcu_memcpy_htod(lua_State *L, KCuDevPtr dst, const void *src, size_t n,
                     KCuStream s) {
  if (n == 0) return;
  if (s) CHECK(L, cu.MemcpyHtoDAsync(dst, src, n, s), "cuMemcpyHtoDAsync");
  else CHECK(L, cu.MemcpyHtoD(dst, src, n), "cuMemcpyHtoD");
}

void kcu_memcpy_dtoh(lua_State *L, void *dst, KCuDevPtr src, size_t n,
                     KCuStream s) {
  if (n == 0) return;
  if (s) CHECK(L, cu.MemcpyDtoHAsync(dst, src, n, s), "cuMemcpyDtoHAsync");
  else CHECK(L, cu.MemcpyDtoH(dst, src, n), "cuMemcpyDtoH");
}

/* Between the memory of two devices' contexts (cuMemcpyPeer), from any
** current device; s (a stream of the current device) or synchronous. */
static void memcpy_peer(lua_State *L, KCuDevPtr dst, int ddev, KCuDevPtr src, int sdev, size_t n,
                        KCuStream s) {
  CUcontext dc, sc;
  CUresult r;
  if (n == 0) return;
  if (cu.MemcpyPeer == NULL || cu.MemcpyPeerAsync == NULL)
    luaL_error(L, "kjit.cuda: the CUDA driver has no cuMemcpyPeer");
  if ((r = retain(ddev, &dc)) != CUDA_SUCCESS || (r = retain(sdev, &sc)) != CUDA_SUCCESS)
    cuerror(L, r, "cuDevicePrimaryCtxRetain", NULL);
  if (s) CHECK(L, cu.MemcpyPeerAsync(dst, dc, src, sc, n, s), "cuMemcpyPeerAsync");
  else CHECK(L, cu.MemcpyPeer(dst, dc, src, sc, n), "cuMemcpyPeer");
}

void kcu_memcpy_dtod(lua_State *L, KCuDevPtr dst, KCuDevPtr src, size_t n, KCuStream s) {
  if (n == 0) return;
  if (cu.MemcpyDtoD == NULL || cu.MemcpyDtoDAsync == NULL)
    luaL_error(L, "kjit.cuda: the CUDA driver has no cuMemcpyDtoD");
  if (s) CHECK(L, cu.MemcpyDtoDAsync(dst, src, n, s), "cuMemcpyDtoDAsync");
  else CHECK(L, cu.MemcpyDtoD(dst, src, n), "cuMemcpyDtoD");
}

/* Host memory the driver manages (host/hostmem.c). */
static void need(lua_State *L, const void *fn, const char *name) {
  if (fn == NULL) luaL_error(L, "kjit.cuda: the CUDA driver has no %s", name);
}

void *kcu_host_alloc(lua_State *L, size_t n, unsigned flags) {
  void *p = NULL;
  kcu_ensure(L);
  need(L, (const void *)cu.MemHostAlloc, "cuMemHostAlloc");
  CHECK(L, cu.MemHostAlloc(&p, n ? n : 1, flags), "cuMemHostAlloc");
  return p;
}

void kcu_host_free(void *p) {
  if (p && cu.MemFreeHost) cu.MemFreeHost(p);
}

KCuDevPtr kcu_host_devptr(lua_State *L, void *p) {
  KCuDevPtr d = 0;
  need(L, (const void *)cu.MemHostGetDevicePointer, "cuMemHostGetDevicePointer");
  CHECK(L, cu.MemHostGetDevicePointer(&d, p, 0), "cuMemHostGetDevicePointer");
  return d;
}

KCuDevPtr kcu_alloc_managed(lua_State *L, size_t n) {
  KCuDevPtr d = 0;
  kcu_ensure(L);
  need(L, (const void *)cu.MemAllocManaged, "cuMemAllocManaged");
  CHECK(L, cu.MemAllocManaged(&d, n ? n : 1, 1 /* CU_MEM_ATTACH_GLOBAL */), "cuMemAllocManaged");
  return d;
}

void kcu_host_register(lua_State *L, void *p, size_t n) {
  kcu_ensure(L);
  need(L, (const void *)cu.MemHostRegister, "cuMemHostRegister");
  CHECK(L, cu.MemHostRegister(p, n, 0), "cuMemHostRegister");
}

void kcu_host_unregister(void *p) {
  if (p && cu.MemHostUnregister) cu.MemHostUnregister(p);
}

void kcu_profile(lua_State *L, int start) {
  if (kcu_sim_mode()) return;
  kcu_ensure(L);
  CUresult (*f)(void) = start ? cu.ProfilerStart : cu.ProfilerStop;
  if (f) CHECK(L, f(), start ? "cuProfilerStart" : "cuProfilerStop");
}

void kcu_set_sync_hook(void (*hook)(lua_State *L, int complete)) {
  /* every luaopen_kjit sets it (same value), maybe from several threads */
  __atomic_store_n(&sync_hook, hook, __ATOMIC_RELEASE);
}

/* complete: every launch so far has finished (not only one stream's). */
static void synced(lua_State *L, int complete) {
  void (*hook)(lua_State *, int) = __atomic_load_n(&sync_hook, __ATOMIC_ACQUIRE);
  if (hook) hook(L, complete);
}

void kcu_sync(lua_State *L, KCuStream s) {
  if (!kcu_sim_mode()) {
    kcu_ensure(L);
    if (s) {
      CHECK(L, cu.StreamSynchronize(s), "cuStreamSynchronize");
    } else {
      CHECK(L, cu.CtxSynchronize(), "cuCtxSynchronize");
      flush_deferred(kcu_device(), 1);
    }
  }
  synced(L, s == NULL);
}

/* ------------------------------------------------------------------ */
/* modules and launches                                                */
/* ------------------------------------------------------------------ */

KCuModule kcu_module_load(lua_State *L, const char *ptx) {
  char log[8192];
  int opts[2] = { JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
  void *vals[2] = { log, (void *)(uintptr_t)sizeof log };
  KCuModule m = NULL;
  CUresult r;
  kcu_ensure(L);
  log[0] = '\0';
  r = cu.ModuleLoadDataEx(&m, ptx, 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    char extra[sizeof log + 16];
    log[sizeof log - 1] = '\0';
    extra[0] = '\0';
    if (log[0]) snprintf(extra, sizeof extra, "\n%s", log);
    cuerror(L, r, "cuModuleLoadDataEx", extra);
  }
  return m;
}

/* The kernel's PTX and the link files' (host/kernel.c) through the
** driver's linker (cuLinkCreate ... cuLinkComplete), then loaded from the
** image it made (which lives in the link state until cuLinkDestroy). */
KCuModule kcu_module_link(lua_State *L, const char *ptx, int n, const KCuLinkInput *in) {
  char log[8192], extra[sizeof log + 300];
  int opts[2] = { JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
  void *vals[2] = { log, (void *)(uintptr_t)sizeof log };
  void *st = NULL, *image = NULL;
  size_t size = 0;
  KCuModule m = NULL;
  const char *what = "cuLinkCreate";
  kcu_ensure(L);
  if (cu.LinkCreate == NULL || cu.LinkAddData == NULL || cu.LinkComplete == NULL ||
      cu.LinkDestroy == NULL)
    luaL_error(L, "kjit.cuda: this CUDA driver has no linker (cuLinkCreate): cannot link the "
               "kernel's link files");
  log[0] = '\0';
  CUresult r = cu.LinkCreate(2, opts, vals, &st);
  for (int i = -1; r == CUDA_SUCCESS && i < n; i++) {
    what = i < 0 ? "cuLinkAddData (the kernel)" : in[i].name;
    if (i < 0)
      r = cu.LinkAddData(st, KCU_LINK_PTX, (void *)ptx, strlen(ptx) + 1, "kjit_kernel.ptx", 0,
                         NULL, NULL);
    else
      r = cu.LinkAddData(st, in[i].type, in[i].data, in[i].size, in[i].name, 0, NULL, NULL);
  }
  if (r == CUDA_SUCCESS) { what = "cuLinkComplete"; r = cu.LinkComplete(st, &image, &size); }
  if (r == CUDA_SUCCESS) {
    what = "cuModuleLoadDataEx";
    r = cu.ModuleLoadDataEx(&m, image, 0, NULL, NULL);
  }
  if (st) cu.LinkDestroy(st);
  if (r != CUDA_SUCCESS) {
    char w[300];
    log[sizeof log - 1] = '\0';
    extra[0] = '\0';
    if (log[0]) snprintf(extra, sizeof extra, "\n%s", log);
    if (strncmp(what, "cu", 2) == 0) snprintf(w, sizeof w, "%s", what);
    else snprintf(w, sizeof w, "cuLinkAddData ('%.250s')", what);
    cuerror(L, r, w, extra);
  }
  return m;
}

void kcu_module_unload(KCuModule m) {
  if (m) {
    pthread_once(&drv_once, load_driver);
    if (drv.loaded) cu.ModuleUnload(m);
  }
}

void kcu_module_unload_on(int dev, KCuModule m) {
  if (m == NULL) return;
  pthread_once(&drv_once, load_driver);
  if (!drv.loaded) return;
  /* cuModuleUnload works in the module's context: make it current here
  ** for the call, then give the thread its context back */
  CUcontext before = NULL, c = dev >= 0 && dev < KCU_MAXDEV ? atomic_load(&dev_ctx[dev]) : NULL;
  if (cu.CtxGetCurrent(&before) != CUDA_SUCCESS) before = NULL;
  if (c && c != before) cu.CtxSetCurrent(c);
  cu.ModuleUnload(m);
  if (c && c != before && before) cu.CtxSetCurrent(before);
}

KCuFunction kcu_get_function(lua_State *L, KCuModule m, const char *name) {
  KCuFunction f = NULL;
  CUresult r = cu.ModuleGetFunction(&f, m, name);
  if (r != CUDA_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "cuModuleGetFunction('%.100s')", name);
    cuerror(L, r, what, NULL);
  }
  return f;
}

void kcu_launch(lua_State *L, KCuFunction f, const unsigned grid[3],
                const unsigned block[3], unsigned shared_bytes, KCuStream s,
                void **params) {
  CUresult r = cu.LaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1],
                               block[2], shared_bytes, s, params, NULL);
  if (r != CUDA_SUCCESS) {
    char extra[160];
    snprintf(extra, sizeof extra, " (grid {%u, %u, %u}, block {%u, %u, %u}, "
             "%u shared bytes)", grid[0], grid[1], grid[2], block[0], block[1],
             block[2], shared_bytes);
    cuerror(L, r, "cuLaunchKernel", extra);
  }
}

/* A launch of a kernel that syncs the grid (cuda.cg): every block must be
** resident at once, so the driver's cooperative launch runs it (and gives
** it the grid workspace its barrier lives in, target_nvptx.c). The
** co-residency limit, the blocks per SM the occupancy calculator allows
** for this kernel, block size and shared memory times the SMs, is checked
** first, so that a grid too large fails with the numbers rather than the
** driver's CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE. */
void kcu_launch_cooperative(lua_State *L, KCuFunction f, const unsigned grid[3],
                            const unsigned block[3], unsigned shared_bytes, KCuStream s,
                            void **params) {
  if (cu.LaunchCooperativeKernel == NULL || cu.OccupancyMaxActiveBlocksPerMultiprocessor == NULL)
    luaL_error(L, "kjit.cuda: this CUDA driver has no cooperative launch "
               "(cuLaunchCooperativeKernel), which a kernel that syncs the grid (cuda.cg) needs");
  CUdevice d;
  int coop = 0, sms = 0, per_sm = 0;
  CHECK(L, cu.DeviceGet(&d, kcu_device()), "cuDeviceGet");
  CHECK(L, cu.DeviceGetAttribute(&coop, ATTR_COOPERATIVE_LAUNCH, d), "cuDeviceGetAttribute");
  if (!coop)
    luaL_error(L, "kjit.cuda: device %d cannot launch cooperatively, which a kernel that syncs "
               "the grid (cuda.cg) needs", kcu_device());
  CHECK(L, cu.DeviceGetAttribute(&sms, ATTR_MULTIPROCESSOR_COUNT, d), "cuDeviceGetAttribute");
  int threads = (int)(block[0] * block[1] * block[2]);
  CHECK(L, cu.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, shared_bytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2], most = (uint64_t)per_sm * (uint64_t)sms;
  if (blocks > most)
    luaL_error(L, "kernel launch: a kernel that syncs the grid (cuda.cg) needs all its blocks on "
               "the GPU at once: %I blocks of %d threads, but at most %I fit (%d per SM x %d SMs; "
               "k:max_cooperative_grid_blocks(%d) tells)", (lua_Integer)blocks, threads,
               (lua_Integer)most, per_sm, sms, threads);
  CUresult r = cu.LaunchCooperativeKernel(f, grid[0], grid[1], grid[2], block[0], block[1],
                                          block[2], shared_bytes, s, params);
  if (r != CUDA_SUCCESS) {
    char extra[160];
    snprintf(extra, sizeof extra, " (grid {%u, %u, %u}, block {%u, %u, %u}, "
             "%u shared bytes)", grid[0], grid[1], grid[2], block[0], block[1],
             block[2], shared_bytes);
    cuerror(L, r, "cuLaunchCooperativeKernel", extra);
  }
}

/* The most blocks of `threads` threads (and shared_bytes of dynamic
** shared memory) a cooperative launch of f may have on the current device. */
long long kcu_max_cooperative_blocks(lua_State *L, KCuFunction f, int threads, unsigned shared_bytes) {
  if (cu.OccupancyMaxActiveBlocksPerMultiprocessor == NULL)
    luaL_error(L, "kjit.cuda: this CUDA driver has no cuOccupancyMaxActiveBlocksPerMultiprocessor");
  CUdevice d;
  int sms = 0, per_sm = 0;
  CHECK(L, cu.DeviceGet(&d, kcu_device()), "cuDeviceGet");
  CHECK(L, cu.DeviceGetAttribute(&sms, ATTR_MULTIPROCESSOR_COUNT, d), "cuDeviceGetAttribute");
  CHECK(L, cu.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, shared_bytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return (long long)per_sm * sms;
}

/* ------------------------------------------------------------------ */
/* device arrays                                                       */
/* ------------------------------------------------------------------ */

#define KCU_STREAM  "kjit.cuda.stream"
#define KCU_EVENT   "kjit.cuda.event"
#define KCU_CLOSER  "kjit.cuda.closer"
#define MAXBYTES    ((int64_t)1 << 48)     /* as kjit arrays */

typedef struct KStream {
  KCuStream h;                   /* NULL: the default stream */
  int device, sim, released;
  unsigned gen;                  /* kcu_gen when made */
  int borrowed;                  /* default_stream/external_stream: not ours to destroy */
} KStream;
typedef struct KEvent {
  CUevent h; int device, sim;
  int recorded; double t_ms;   /* simulator: time of the last record */
  int released;                /* __gc ran (the handle is destroyed) */
  unsigned gen;                /* kcu_gen when made */
} KEvent;

/* "device array", "stream" or "event": for messages. */
static int wrongmode(lua_State *L, const char *what, int sim, int arg) {
  char pre[32] = "";
  if (arg > 0) snprintf(pre, sizeof pre, "argument #%d: ", arg);
  if (sim)
    return luaL_error(L, "kjit.cuda: %sthis %s was made in simulator mode and "
                      "cannot be used with the simulator off", pre, what);
  return luaL_error(L, "kjit.cuda: %sthis %s lives on a GPU and cannot be used "
                    "in simulator mode", pre, what);
}

/* Raises unless an object made in mode `sim` on `device` is usable now. */
static void check_usable(lua_State *L, const char *what, int sim, int device,
                         int arg) {
  int now = kcu_sim_mode() != 0;
  if (sim != now) wrongmode(L, what, sim, arg);
  if (!sim && device != cur_dev) {
    char pre[32] = "";
    if (arg > 0) snprintf(pre, sizeof pre, "argument #%d: ", arg);
    luaL_error(L, "kjit.cuda: %sthis %s is on device %d but the current device "
               "is %d (cuda.use_device(%d) or cuda.select_device(%d) selects it)", pre, what,
               device, cur_dev, device, device);
  }
}

/* Raises for an object made before cuda.close(). */
static void check_gen(lua_State *L, const char *what, int sim, int device, unsigned gen, int arg) {
  if (!kcu_stale(sim, device, gen)) return;
  char pre[32] = "";
  if (arg > 0) snprintf(pre, sizeof pre, "argument #%d: ", arg);
  luaL_error(L, "kjit.cuda: %sthis %s was made before cuda.close(), which released it with the "
             "device's context: make it again", pre, what);
}

/* A device array's memory went with its context (foreign memory is not
** kjit's: it is left to its owner). */
static void check_devgen(lua_State *L, const KDevArray *d, int arg) {
  if (!d->foreign) check_gen(L, "device array", d->sim, d->device, d->gen, arg);
}

void kcu_check_usable(lua_State *L, const KDevArray *d, int arg) {
  if (d->released || (d->owner && d->owner->released)) kb_released_error(L);
  check_devgen(L, d, arg);
  check_usable(L, "device array", d->sim, d->device, arg);
}

void kcu_check_live(lua_State *L, const KDevArray *d, int arg) {
  if (d->released || (d->owner && d->owner->released)) kb_released_error(L);
  check_devgen(L, d, arg);
  if (d->sim != (kcu_sim_mode() != 0)) wrongmode(L, "device array", d->sim, arg);
}

int kcu_peer_enabled(int dev, int peer) {
  if (dev == peer) return 1;
  if (dev < 0 || peer < 0 || dev >= KCU_MAXDEV || peer >= KCU_MAXDEV) return 0;
  return atomic_load_explicit(&peer_on[dev][peer], memory_order_acquire) != 0;
}

void kcu_check_usable_kernel(lua_State *L, const KDevArray *d, int arg) {
  if (d->released || (d->owner && d->owner->released)) kb_released_error(L);
  check_devgen(L, d, arg);
  if (d->sim != (kcu_sim_mode() != 0)) wrongmode(L, "device array", d->sim, arg);
  if (d->sim || d->device == cur_dev || kcu_peer_enabled(cur_dev, d->device)) return;
  luaL_error(L, "kjit.cuda: argument #%d: this device array is on device %d but the kernel "
             "runs on device %d, which has no peer access to it (copy it with "
             "d:copy_to_device(src), or call cuda.enable_peer_access(%d) with device %d "
             "current)", arg, d->device, cur_dev, d->device, cur_dev);
}

KDevArray *kcu_test_devarray(lua_State *L, int idx) {
  return (KDevArray *)luaL_testudata(L, idx, KCU_DEVARRAY);
}

KDevArray *kcu_check_devarray(lua_State *L, int idx) {
  KDevArray *d = kcu_test_devarray(L, idx);
  if (d == NULL) luaL_typeerror(L, idx, "device array");
  kcu_check_usable(L, d, idx);
  return d;
}

static void pushmeta_devarray(lua_State *L);

/* Validates a shape like kjit arrays do and returns the element count. */
static int64_t checkshape(lua_State *L, kjit_dtype t, int ndim,
                          const int64_t *shape) {
  int64_t n = 1, limit;
  int k, zero = 0;
  if (kjit_dtype_size(t) == 0) luaL_error(L, "kjit.cuda: invalid dtype %d", (int)t);
  if (ndim < 1 || ndim > KJIT_MAXDIMS)
    luaL_error(L, "kjit.cuda: device arrays have 1 to %d dimensions, got %d",
               KJIT_MAXDIMS, ndim);
  limit = MAXBYTES / (int64_t)kjit_dtype_size(t);
  for (k = 0; k < ndim; k++) {
    if (shape[k] < 0)
      luaL_error(L, "kjit.cuda: negative dimension %I in shape", (lua_Integer)shape[k]);
    if (shape[k] == 0) { zero = 1; continue; }
    if (n > limit / shape[k]) luaL_error(L, "kjit.cuda: array too large (over 2^48 bytes)");
    n *= shape[k];
  }
  return zero ? 0 : n;
}

/* Pushes a device array; zero-filled if zero, else uninitialised. */
static KDevArray *pushdev(lua_State *L, kjit_dtype t, int ndim,
                          const int64_t *shape, int zero) {
  int64_t size = checkshape(L, t, ndim, shape);
  size_t bytes = (size_t)size * kjit_dtype_size(t);
  int sim = kcu_sim_mode() != 0, k;
  KDevArray *d;
  if (!sim) kcu_ensure(L);
  d = (KDevArray *)lua_newuserdatauv(L, sizeof *d + (sim ? bytes + SIM_ALIGN - 1 : 0), 0);
  memset(d, 0, sizeof *d);
  for (k = 0; k < KJIT_MAXDIMS; k++) d->shape[k] = k < ndim ? shape[k] : 1;
  d->size = size;
  d->ndim = ndim;
  d->dtype = t;
  d->device = kcu_device();
  d->sim = sim;
  d->gen = kcu_gen(sim, d->device);
  d->bytes = bytes;
  pushmeta_devarray(L);
  lua_setmetatable(L, -2);   /* from here on __gc owns d->ptr */
  if (sim) {
    uintptr_t a = ((uintptr_t)(d + 1) + SIM_ALIGN - 1) & ~(uintptr_t)(SIM_ALIGN - 1);
    d->ptr = (KCuDevPtr)a;
    if (zero && bytes) memset((void *)a, 0, bytes);
  } else if (bytes) {
    d->ptr = kcu_alloc(L, bytes);
    if (zero) CHECK(L, cu.MemsetD8(d->ptr, 0, bytes), "cuMemsetD8");
  }
  return d;
}

KDevArray *kcu_push_devarray(lua_State *L, kjit_dtype t, int ndim,
                             const int64_t *shape) {
  return pushdev(L, t, ndim, shape, 1);
}

KDevArray *kcu_push_devwrap(lua_State *L, KCuDevPtr ptr, kjit_dtype t, int ndim,
                            const int64_t *shape) {
  int64_t size = checkshape(L, t, ndim, shape);
  int sim = kcu_sim_mode() != 0;
  if (!sim) kcu_ensure(L);
  KDevArray *d = (KDevArray *)lua_newuserdatauv(L, sizeof *d, 1);
  memset(d, 0, sizeof *d);
  for (int k = 0; k < KJIT_MAXDIMS; k++) d->shape[k] = k < ndim ? shape[k] : 1;
  d->size = size;
  d->ndim = ndim;
  d->dtype = t;
  d->device = kcu_device();
  d->sim = sim;
  d->bytes = (size_t)size * kjit_dtype_size(t);
  d->ptr = size ? ptr : 0;
  d->foreign = 1;
  d->gen = kcu_gen(sim, d->device);
  pushmeta_devarray(L);
  lua_setmetatable(L, -2);
  return d;
}

/* Records (kjit.struct): a device array of bytes, retyped as records of
** layout r (the bytes, the memory and its __gc stay the byte array's). */
static KDevArray *pushdev_rec(lua_State *L, const KRecord *r, int ndim, const int64_t *shape,
                              int zero) {
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] < 0) luaL_error(L, "kjit.cuda: negative dimension %I in shape", (lua_Integer)shape[k]);
    if (shape[k] > 0 && n > (MAXBYTES / r->size) / shape[k])
      luaL_error(L, "kjit.cuda: array too large (over 2^48 bytes)");
    n *= shape[k];
  }
  if (ndim < 1 || ndim > KJIT_MAXDIMS)
    luaL_error(L, "kjit.cuda: device arrays have 1 to %d dimensions, got %d", KJIT_MAXDIMS, ndim);
  int64_t bytes[1] = { n * r->size };
  KDevArray *d = pushdev(L, KJIT_U8, 1, bytes, zero);
  for (int k = 0; k < KJIT_MAXDIMS; k++) d->shape[k] = k < ndim ? shape[k] : 1;
  d->ndim = ndim;
  d->size = n;
  d->dtype = KJIT_RECORD;
  d->record = r;
  return d;
}

KDevArray *kcu_push_devrecords(lua_State *L, const KRecord *r, int ndim, const int64_t *shape) {
  return pushdev_rec(L, r, ndim, shape, 1);
}

size_t kcu_elem_size(const KDevArray *d) {
  return d->record ? (size_t)d->record->size : kjit_dtype_size(d->dtype);
}

KDevArray *kcu_push_devview(lua_State *L, int base, size_t off, int ndim, const int64_t *shape) {
  base = lua_absindex(L, base);
  KDevArray *b = kcu_test_devarray(L, base);
  if (b == NULL) luaL_typeerror(L, base, "device array");
  kcu_check_live(L, b, base);   /* a view of any device's array: no memory touched */
  KDevArray *d = (KDevArray *)lua_newuserdatauv(L, sizeof *d, 1);
  memset(d, 0, sizeof *d);
  int64_t n = 1;
  for (int k = 0; k < KJIT_MAXDIMS; k++) {
    d->shape[k] = k < ndim ? shape[k] : 1;
    if (k < ndim) n *= shape[k];
  }
  d->ndim = ndim;
  d->size = n;
  d->dtype = b->dtype;
  d->record = b->record;
  d->device = b->device;
  d->sim = b->sim;
  d->bytes = (size_t)n * kcu_elem_size(b);
  d->ptr = b->ptr ? b->ptr + off : 0;
  d->owner = b->owner ? b->owner : b;
  d->gen = b->gen;
  d->foreign = b->foreign;
  if (b->owner) lua_getiuservalue(L, base, 1);   /* the owner itself */
  else lua_pushvalue(L, base);
  lua_setiuservalue(L, -2, 1);                    /* keeps the memory alive */
  pushmeta_devarray(L);
  lua_setmetatable(L, -2);
  return d;
}

void kcu_dev_read(lua_State *L, const KDevArray *d, size_t off, void *dst, size_t n) {
  if (d->sim) memcpy(dst, (const char *)(uintptr_t)d->ptr + off, n);
  else kcu_memcpy_dtoh(L, dst, d->ptr + off, n, NULL);
  synced(L, 1);   /* a copy on the legacy default stream waits for all */
}

void kcu_dev_write(lua_State *L, const KDevArray *d, size_t off, const void *src, size_t n,
                   KCuStream s) {
  if (d->sim) memcpy((char *)(uintptr_t)d->ptr + off, src, n);
  else kcu_memcpy_htod(L, d->ptr + off, src, n, s);
}

/* Host to device and back, in the array's mode. */
static void copy_in(lua_State *L, KDevArray *d, const void *src, KCuStream s) {
  if (d->sim) { if (d->bytes) memcpy((void *)(uintptr_t)d->ptr, src, d->bytes); }
  else kcu_memcpy_htod(L, d->ptr, src, d->bytes, s);
}

static void copy_out(lua_State *L, void *dst, const KDevArray *d, KCuStream s) {
  if (d->sim) { if (d->bytes) memcpy(dst, (const void *)(uintptr_t)d->ptr, d->bytes); }
  else kcu_memcpy_dtoh(L, dst, d->ptr, d->bytes, s);
}

/* Appends "{3, 4}" to B. */
static void addshape(luaL_Buffer *B, int ndim, const int64_t *shape) {
  char buf[32];
  int k;
  luaL_addchar(B, '{');
  for (k = 0; k < ndim; k++) {
    snprintf(buf, sizeof buf, k ? ", %lld" : "%lld", (long long)shape[k]);
    luaL_addstring(B, buf);
  }
  luaL_addchar(B, '}');
}

/* Raises unless host buffer b matches d in dtype and shape. */
static void check_same(lua_State *L, const KDevArray *d, const KBuffer *b, int arg) {
  int k, same = b->ndim == d->ndim;
  luaL_Buffer B;
  if (b->dtype != d->dtype || b->record != d->record)
    luaL_argerror(L, arg, lua_pushfstring(L, "dtype mismatch: device array is %s, "
                  "host array is %s", d->record ? "records" : kjit_dtype_name(d->dtype),
                  b->record ? (d->record ? "records of another layout" : "records")
                            : kjit_dtype_name(b->dtype)));
  for (k = 0; same && k < d->ndim; k++) same = b->shape[k] == d->shape[k];
  if (same) return;
  luaL_buffinit(L, &B);
  luaL_addstring(&B, "shape mismatch: device array ");
  addshape(&B, d->ndim, d->shape);
  luaL_addstring(&B, ", host array ");
  addshape(&B, b->ndim, b->shape);
  luaL_pushresult(&B);
  luaL_argerror(L, arg, lua_tostring(L, -1));
}

/* cuda.to_device(buf [, stream]) */
static int c_to_device(lua_State *L) {
  KBuffer *b = krec_test_array(L, 1);   /* records, or a numeric array */
  if (b && b->ndim == 0) luaL_argerror(L, 1, "a record (pass the array of records)");
  if (b == NULL) b = kb_check(L, 1);
  KCuStream s = kcu_check_stream(L, 2);
  if (b->record) {
    KDevArray *d = pushdev_rec(L, b->record, b->ndim, b->shape, 0);
    copy_in(L, d, b->data, s);
    return 1;
  }
  KDevArray *d = pushdev(L, b->dtype, b->ndim, b->shape, 0);
  copy_in(L, d, b->data, s);
  return 1;
}

/* cuda.device_array(shape [, dtype]) */
static int c_device_array(lua_State *L) {
  int64_t shape[KJIT_MAXDIMS];
  int ndim = kb_checkshape(L, 1, shape);
  const KRecord *r = krec_test(L, 2);
  if (r) { pushdev_rec(L, r, ndim, shape, 1); return 1; }   /* records */
  kjit_dtype t = kb_checkdtype(L, 2, KJIT_F64);
  pushdev(L, t, ndim, shape, 1);
  return 1;
}

/* cuda.device_array_like(buf or device array) */
static int c_device_array_like(lua_State *L) {
  KBuffer *b = kb_test(L, 1);
  KDevArray *d = b ? NULL : kcu_test_devarray(L, 1);
  KBuffer *r = b || d ? NULL : krec_test_array(L, 1);
  if (r && r->ndim > 0) { pushdev_rec(L, r->record, r->ndim, r->shape, 1); return 1; }
  if (d && d->record) { pushdev_rec(L, d->record, d->ndim, d->shape, 1); return 1; }
  if (b) pushdev(L, b->dtype, b->ndim, b->shape, 1);
  else if (d) pushdev(L, d->dtype, d->ndim, d->shape, 1);
  else luaL_typeerror(L, 1, "kjit.array or device array");
  return 1;
}

/* cuda.is_device_array(v) */
static int c_is_device_array(lua_State *L) {
  lua_pushboolean(L, kcu_test_devarray(L, 1) != NULL);
  return 1;
}

/* The receiver of a method, usable now. */
static KDevArray *checkself(lua_State *L) {
  KDevArray *d = (KDevArray *)luaL_checkudata(L, 1, KCU_DEVARRAY);
  kcu_check_usable(L, d, 0);
  return d;
}

/* d:copy_to_host([buf [, stream]]): a new host array, or fills buf. */
static int d_copy_to_host(lua_State *L) {
  KDevArray *d = checkself(L);
  KBuffer *b;
  KCuStream s = kcu_check_stream(L, 3);
  if (lua_isnoneornil(L, 2)) {
    b = d->record ? krec_push_new(L, d->record, d->ndim, d->shape)
                  : kb_push_new(L, d->dtype, d->ndim, d->shape, 0);
  } else {
    b = krec_test_array(L, 2);   /* records */
    if (b == NULL) b = kb_check(L, 2);
    check_same(L, d, b, 2);
    lua_pushvalue(L, 2);
  }
  copy_out(L, b->data, d, s);
  if (s == NULL) synced(L, 1);   /* a copy on the legacy default stream waits for all */
  return 1;
}

/* d:copy_to_device(buf [, stream]): overwrites d with buf. */
static int d_copy_to_device(lua_State *L) {
  KDevArray *d = checkself(L);
  KDevArray *src = kcu_test_devarray(L, 2);
  if (src) {   /* device to device, as numba-cuda's copy_to_device(devary) */
    KCuStream s = kcu_check_stream(L, 3);
    int same = src->ndim == d->ndim && src->dtype == d->dtype && src->record == d->record;
    for (int k = 0; same && k < d->ndim; k++) same = src->shape[k] == d->shape[k];
    if (!same) luaL_argerror(L, 2, "a device array of the same dtype and shape expected");
    if (d->sim) {
      kcu_check_usable(L, src, 2);
      if (d->bytes) memmove((void *)(uintptr_t)d->ptr, (void *)(uintptr_t)src->ptr, d->bytes);
    } else if (src->device != d->device) {   /* across devices: cuMemcpyPeer */
      if (src->released || (src->owner && src->owner->released)) kb_released_error(L);
      if (src->sim) wrongmode(L, "device array", 1, 2);
      memcpy_peer(L, d->ptr, d->device, src->ptr, src->device, d->bytes, s);
    } else {
      kcu_check_usable(L, src, 2);
      kcu_memcpy_dtod(L, d->ptr, src->ptr, d->bytes, s);
    }
    lua_settop(L, 1);
    return 1;
  }
  KBuffer *b = krec_test_array(L, 2);   /* records */
  if (b == NULL) b = kb_check(L, 2);
  KCuStream s = kcu_check_stream(L, 3);
  check_same(L, d, b, 2);
  copy_in(L, d, b->data, s);
  lua_settop(L, 1);
  return 1;
}

enum { F_SHAPE = 1, F_DTYPE, F_NDIM, F_SIZE, F_DEVICE, F_NBYTES };
static const char *const dev_fields[] = {
  "shape", "dtype", "ndim", "size", "device", "nbytes", NULL
};

/* The receiver of a metamethod (only Lua calls these, with a devarray). */
static KDevArray *selfdev(lua_State *L) {
  return (KDevArray *)luaL_checkudata(L, 1, KCU_DEVARRAY);
}

/* __index: methods and fields; elements live on the device. */
static int d_index(lua_State *L) {
  KDevArray *d = selfdev(L);
  if (lua_type(L, 2) != LUA_TSTRING) return kcu_devarray_index(L, d);
  lua_pushvalue(L, 2);
  switch (lua_rawget(L, lua_upvalueindex(1))) {
    case LUA_TFUNCTION: return 1;
    case LUA_TNUMBER: break;
    default:
      return luaL_error(L, "kjit.cuda: device array has no field '%s'",
                        lua_tostring(L, 2));
  }
  switch ((int)lua_tointeger(L, -1)) {
    case F_SHAPE: kb_push_shape(L, d->ndim, d->shape); return 1;
    case F_DTYPE:
      if (d->record) krec_push_struct(L, d->record);   /* records: the layout */
      else lua_pushstring(L, kjit_dtype_name(d->dtype));
      return 1;
    case F_NDIM: lua_pushinteger(L, d->ndim); return 1;
    case F_SIZE: lua_pushinteger(L, (lua_Integer)d->size); return 1;
    case F_DEVICE: lua_pushinteger(L, d->device); return 1;
    default: lua_pushinteger(L, (lua_Integer)d->bytes); return 1;
  }
}

static int d_newindex(lua_State *L) {
  KDevArray *d = selfdev(L);
  if (lua_type(L, 2) != LUA_TSTRING) return kcu_devarray_newindex(L, d);
  return luaL_error(L, "kjit.cuda: cannot assign to field '%s' of a device array",
                    lua_tostring(L, 2));
}

static int d_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)selfdev(L)->shape[0]);
  return 1;
}

/* "kjit.devarray(f32, {3, 4}) on device 0" */
static int d_tostring(lua_State *L) {
  KDevArray *d = selfdev(L);
  luaL_Buffer B;
  char buf[48];
  luaL_buffinit(L, &B);
  luaL_addstring(&B, KCU_DEVARRAY "(");
  luaL_addstring(&B, d->record ? "records" : kjit_dtype_name(d->dtype));
  luaL_addstring(&B, ", ");
  addshape(&B, d->ndim, d->shape);
  if (d->sim) snprintf(buf, sizeof buf, ") in the simulator");
  else snprintf(buf, sizeof buf, ") on device %d", d->device);
  luaL_addstring(&B, buf);
  luaL_pushresult(&B);
  return 1;
}

/* A finalizer may resurrect the array (another object's __gc keeps it):
** every later use checks d->released (kcu_check_usable) and raises. */
static int d_gc(lua_State *L) {
  KDevArray *d = selfdev(L);
  d->released = 1;
  /* after cuda.close() the memory went with the context */
  if (!d->sim && d->ptr && !d->owner && !d->foreign && !kcu_stale(0, d->device, d->gen))
    defer_free(d->device, d->ptr, d->bytes);
  if (!d->sim) d->ptr = 0;   /* simulator memory is the userdata's own */
  return 0;
}

static const luaL_Reg dev_methods[] = {
  {"copy_to_host", d_copy_to_host}, {"copy_to_device", d_copy_to_device},
  {NULL, NULL}
};

static void pushmeta_devarray(lua_State *L) {
  int k;
  if (luaL_getmetatable(L, KCU_DEVARRAY) != LUA_TNIL) return;
  lua_pop(L, 1);
  kb_newmeta(L, KCU_DEVARRAY);   /* registered once complete (out of memory midway) */
  lua_newtable(L);
  luaL_setfuncs(L, dev_methods, 0);
  luaL_setfuncs(L, kcu_devarray_methods, 0);   /* devarray.c: views */
  luaL_setfuncs(L, kcu_interop_methods, 0);    /* interop.c: raw pointers */
  for (k = 0; dev_fields[k]; k++) {
    lua_pushinteger(L, k + F_SHAPE);
    lua_setfield(L, -2, dev_fields[k]);
  }
  /* ipairs's iterator (ipairs({}) returns it): d[#d + 1] is nil for it */
  if (lua_getglobal(L, "ipairs") == LUA_TFUNCTION) {
    lua_newtable(L);
    lua_call(L, 1, 1);
  } else {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
  lua_pushcclosure(L, d_index, 2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, d_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, d_len);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, d_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, d_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, KCU_DEVARRAY);
  lua_setfield(L, -2, "__metatable");
  kb_regmeta(L, KCU_DEVARRAY);
}

/* ------------------------------------------------------------------ */
/* streams and events                                                  */
/* ------------------------------------------------------------------ */

/* Creates the metatable `name` with methods as __index (if new). */
static void pushmeta(lua_State *L, const char *name, const luaL_Reg *methods,
                     lua_CFunction gc, lua_CFunction tostr) {
  if (luaL_getmetatable(L, name) != LUA_TNIL) return;
  lua_pop(L, 1);
  kb_newmeta(L, name);   /* registered once complete */
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, tostr);
  lua_setfield(L, -2, "__tostring");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__metatable");
  kb_regmeta(L, name);
}

/* Streams and events used after their __gc (resurrected by another
** object's finalizer): the driver handle is destroyed. */
static int finalized(lua_State *L, const char *what) {
  return luaL_error(L, "kjit.cuda: %s used after it was finalized", what);
}

static KStream *checkstream(lua_State *L, int idx) {
  KStream *s = (KStream *)luaL_checkudata(L, idx, KCU_STREAM);
  if (s->released) finalized(L, "stream");
  check_usable(L, "stream", s->sim, s->device, 0);
  if (!s->borrowed) check_gen(L, "stream", s->sim, s->device, s->gen, 0);
  return s;
}

KCuStream kcu_check_stream(lua_State *L, int idx) {
  KStream *s;
  if (lua_isnoneornil(L, idx)) return NULL;
  if (lua_type(L, idx) == LUA_TNUMBER && lua_tonumber(L, idx) == 0) return NULL;
  s = (KStream *)luaL_testudata(L, idx, KCU_STREAM);
  if (s == NULL) {
    luaL_typeerror(L, idx, "kjit.cuda stream");
    return NULL;
  }
  if (s->released) finalized(L, "stream");
  check_usable(L, "stream", s->sim, s->device, 0);
  if (!s->borrowed) check_gen(L, "stream", s->sim, s->device, s->gen, 0);
  return s->sim ? (KCuStream)s : s->h;
}

static int s_synchronize(lua_State *L) {
  KStream *s = checkstream(L, 1);
  if (!s->sim) CHECK(L, cu.StreamSynchronize(s->h), "cuStreamSynchronize");
  synced(L, 0);
  return 0;
}

static int s_gc(lua_State *L) {
  KStream *s = (KStream *)luaL_checkudata(L, 1, KCU_STREAM);
  /* cuStreamDestroy returns at once; the driver releases the stream when
  ** its queued work is done. */
  if (!s->sim && s->h && !s->borrowed && !kcu_stale(0, s->device, s->gen)) cu.StreamDestroy(s->h);
  s->h = NULL;
  s->released = 1;
  return 0;
}

static int s_tostring(lua_State *L) {
  KStream *s = (KStream *)luaL_checkudata(L, 1, KCU_STREAM);
  if (s->sim) lua_pushfstring(L, KCU_STREAM " %p in the simulator", (void *)s);
  else lua_pushfstring(L, KCU_STREAM " %p on device %d", s->h, s->device);
  return 1;
}

/* s:handle(): the CUstream as an integer (0: the default stream), for
** CUDA C code in the same process or cuda.external_stream */
static int s_handle(lua_State *L) {
  KStream *s = checkstream(L, 1);
  lua_pushinteger(L, s->sim ? (lua_Integer)(uintptr_t)s : (lua_Integer)(uintptr_t)s->h);
  return 1;
}

static const luaL_Reg stream_methods[] = {
  {"synchronize", s_synchronize}, {"handle", s_handle}, {NULL, NULL}
};

/* cuda.stream() */
static int c_stream(lua_State *L) {
  int sim = kcu_sim_mode() != 0;
  KStream *s;
  if (!sim) kcu_ensure(L);
  s = (KStream *)lua_newuserdatauv(L, sizeof *s, 0);
  s->h = NULL;
  s->device = kcu_device();
  s->sim = sim;
  s->gen = kcu_gen(sim, s->device);
  s->released = 0;
  s->borrowed = 0;
  pushmeta(L, KCU_STREAM, stream_methods, s_gc, s_tostring);
  lua_setmetatable(L, -2);
  if (!sim) CHECK(L, cu.StreamCreate(&s->h, 0), "cuStreamCreate");
  return 1;
}

/* A stream object over handle h (NULL: the default stream), not destroyed
** by its __gc. */
static int push_borrowed_stream(lua_State *L, KCuStream h) {
  int sim = kcu_sim_mode() != 0;
  if (!sim) kcu_ensure(L);
  KStream *s = (KStream *)lua_newuserdatauv(L, sizeof *s, 0);
  s->h = sim ? NULL : h;
  s->device = kcu_device();
  s->sim = sim;
  s->gen = kcu_gen(sim, s->device);
  s->released = 0;
  s->borrowed = 1;
  pushmeta(L, KCU_STREAM, stream_methods, s_gc, s_tostring);
  lua_setmetatable(L, -2);
  return 1;
}

/* cuda.default_stream(): the legacy default stream (numba-cuda's) */
static int c_default_stream(lua_State *L) { return push_borrowed_stream(L, NULL); }

/* cuda.external_stream(ptr): a CUstream made by other code (an integer
** handle, e.g. from CUDA C or a C host), used as a kjit stream and never
** destroyed by kjit. */
static int c_external_stream(lua_State *L) {
  lua_Integer h = luaL_checkinteger(L, 1);
  if (h == 0) luaL_argerror(L, 1, "a non-null CUstream handle expected (cuda.default_stream() is the default one)");
  return push_borrowed_stream(L, (KCuStream)(uintptr_t)h);
}

/* arg: the argument number for messages, 0 for the receiver. */
static KEvent *checkevent(lua_State *L, int idx, int arg) {
  KEvent *e = (KEvent *)luaL_checkudata(L, idx, KCU_EVENT);
  if (e->released) finalized(L, "event");
  check_usable(L, "event", e->sim, e->device, arg);
  check_gen(L, "event", e->sim, e->device, e->gen, arg);
  return e;
}

/* e:record([stream]) */
static int e_record(lua_State *L) {
  KEvent *e = checkevent(L, 1, 0);
  KCuStream s = kcu_check_stream(L, 2);
  if (e->sim) e->t_ms = k_now_ms();
  else CHECK(L, cu.EventRecord(e->h, s), "cuEventRecord");
  e->recorded = 1;
  lua_settop(L, 1);
  return 1;
}

static int e_synchronize(lua_State *L) {
  KEvent *e = checkevent(L, 1, 0);
  if (!e->sim) CHECK(L, cu.EventSynchronize(e->h), "cuEventSynchronize");
  synced(L, 0);
  return 0;
}

/* e:query(): true when the work before the record is done. */
static int e_query(lua_State *L) {
  KEvent *e = checkevent(L, 1, 0);
  CUresult r = CUDA_SUCCESS;
  if (!e->sim) {
    r = cu.EventQuery(e->h);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) cuerror(L, r, "cuEventQuery", NULL);
  }
  lua_pushboolean(L, r == CUDA_SUCCESS);
  return 1;
}

/* cuda.event_elapsed_time(e1, e2) and e1:elapsed_time(e2): milliseconds. */
static int c_event_elapsed_time(lua_State *L) {
  KEvent *a = checkevent(L, 1, 1), *b = checkevent(L, 2, 2);
  float ms = 0;
  if (!a->recorded || !b->recorded)
    return luaL_error(L, "kjit.cuda: event_elapsed_time: event #%d was never "
                      "recorded (call e:record() first)", a->recorded ? 2 : 1);
  if (a->sim) {
    lua_pushnumber(L, (lua_Number)(b->t_ms - a->t_ms));
    return 1;
  }
  CHECK(L, cu.EventElapsedTime(&ms, a->h, b->h), "cuEventElapsedTime");
  lua_pushnumber(L, (lua_Number)ms);
  return 1;
}

static int e_gc(lua_State *L) {
  KEvent *e = (KEvent *)luaL_checkudata(L, 1, KCU_EVENT);
  if (!e->sim && e->h && !kcu_stale(0, e->device, e->gen)) cu.EventDestroy(e->h);
  e->h = NULL;
  e->released = 1;
  return 0;
}

static int e_tostring(lua_State *L) {
  KEvent *e = (KEvent *)luaL_checkudata(L, 1, KCU_EVENT);
  if (e->sim) lua_pushfstring(L, KCU_EVENT " %p in the simulator", (void *)e);
  else lua_pushfstring(L, KCU_EVENT " %p on device %d", e->h, e->device);
  return 1;
}

static const luaL_Reg event_methods[] = {
  {"record", e_record}, {"synchronize", e_synchronize}, {"query", e_query},
  {"elapsed_time", c_event_elapsed_time}, {NULL, NULL}
};

/* cuda.event() */
static int c_event(lua_State *L) {
  int sim = kcu_sim_mode() != 0;
  KEvent *e;
  if (!sim) kcu_ensure(L);
  e = (KEvent *)lua_newuserdatauv(L, sizeof *e, 0);
  memset(e, 0, sizeof *e);
  e->device = kcu_device();
  e->sim = sim;
  e->gen = kcu_gen(sim, e->device);
  pushmeta(L, KCU_EVENT, event_methods, e_gc, e_tostring);
  lua_setmetatable(L, -2);
  if (!sim) CHECK(L, cu.EventCreate(&e->h, 0), "cuEventCreate");
  return 1;
}

/* ------------------------------------------------------------------ */
/* devices                                                             */
/* ------------------------------------------------------------------ */

/* cuda.is_available(): true, or false and the reason. */
static int c_is_available(lua_State *L) {
  const char *why = NULL;
  if (kcu_available(&why)) { lua_pushboolean(L, 1); return 1; }
  lua_pushboolean(L, 0);
  lua_pushstring(L, why);
  return 2;
}

/* Pushes {id=, name=, compute_capability={major, minor}, multiprocessors=,
** total_memory=} for device i (the simulator's one if sim). */
static void pushdevice(lua_State *L, int i, int sim) {
  char name[256] = "kjit CUDA simulator";
  int major = 9, minor = 0, sms = 1;
  size_t mem = 0;
  if (!sim) {
    CUdevice d;
    CHECK(L, cu.DeviceGet(&d, i), "cuDeviceGet");
    CHECK(L, cu.DeviceGetName(name, (int)sizeof name - 1, d), "cuDeviceGetName");
    name[sizeof name - 1] = '\0';
    CHECK(L, cu.DeviceGetAttribute(&major, ATTR_CC_MAJOR, d), "cuDeviceGetAttribute");
    CHECK(L, cu.DeviceGetAttribute(&minor, ATTR_CC_MINOR, d), "cuDeviceGetAttribute");
    CHECK(L, cu.DeviceGetAttribute(&sms, ATTR_MULTIPROCESSOR_COUNT, d),
          "cuDeviceGetAttribute");
    CHECK(L, cu.DeviceTotalMem(&mem, d), "cuDeviceTotalMem");
  }
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, i);
  lua_setfield(L, -2, "id");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_createtable(L, 2, 0);
  lua_pushinteger(L, major);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, minor);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, "compute_capability");
  lua_pushinteger(L, sms);
  lua_setfield(L, -2, "multiprocessors");
  lua_pushinteger(L, (lua_Integer)mem);
  lua_setfield(L, -2, "total_memory");
  lua_pushboolean(L, sim);
  lua_setfield(L, -2, "simulator");
}

/* cuda.devices(): a list of device tables (empty without a driver). */
static int c_devices(lua_State *L) {
  int sim = kcu_sim_mode() != 0, n = sim ? 1 : (kcu_available(NULL) ? drv.ndev : 0), i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; i++) {
    pushdevice(L, i, sim);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* cuda.detect(): prints the devices; returns true and the text, or false
** and the reason. */
static int c_detect(lua_State *L) {
  int sim = kcu_sim_mode() != 0, n, i;
  luaL_Buffer B;
  char line[400];
  const char *why = NULL;
  if (!sim && !kcu_available(&why)) {
    snprintf(line, sizeof line, "kjit.cuda: no CUDA devices (%s)\n", why);
    fputs(line, stdout);
    fflush(stdout);
    lua_pushboolean(L, 0);
    lua_pushstring(L, why);
    return 2;
  }
  n = sim ? 1 : drv.ndev;
  luaL_buffinit(L, &B);
  if (sim)
    snprintf(line, sizeof line, "kjit.cuda: simulator mode (%s): 1 simulated device\n",
             kcu_sim_mode() == 2 ? "interpreted" : "compiled");
  else
    snprintf(line, sizeof line, "kjit.cuda: %d CUDA device%s, driver %d.%d\n", n,
             n == 1 ? "" : "s", drv.version / 1000, drv.version % 1000 / 10);
  luaL_addstring(&B, line);
  for (i = 0; i < n; i++) {
    lua_Integer major, minor, sms, mem;
    pushdevice(L, i, sim);
    lua_getfield(L, -1, "compute_capability");
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    major = lua_tointeger(L, -2);
    minor = lua_tointeger(L, -1);
    lua_pop(L, 3);
    lua_getfield(L, -1, "multiprocessors");
    lua_getfield(L, -2, "total_memory");
    lua_getfield(L, -3, "name");
    sms = lua_tointeger(L, -3);
    mem = lua_tointeger(L, -2);
    if (sim)
      snprintf(line, sizeof line, "  id 0  %s  (runs kernels on the CPU)\n",
               lua_tostring(L, -1));
    else
      snprintf(line, sizeof line, "  id %d  %s  compute capability %d.%d  %d SMs  "
               "%.1f GiB%s\n", i, lua_tostring(L, -1), (int)major, (int)minor,
               (int)sms, (double)mem / (1 << 30),
               i == cur_dev ? "  (current)" : "");
    lua_pop(L, 4);
    luaL_addstring(&B, line);
  }
  luaL_pushresult(&B);
  fputs(lua_tostring(L, -1), stdout);
  fflush(stdout);
  lua_pushboolean(L, 1);
  lua_insert(L, -2);
  return 2;
}

/* Makes device i this thread's current device; raises naming `what`
** when i is out of range or its context cannot be made current. */
static void set_device(lua_State *L, lua_Integer i, const char *what) {
  CUresult r;
  if (kcu_sim_mode()) {
    if (i != 0)
      luaL_error(L, "kjit.cuda: %s: device %I out of range (the simulator has one device, 0)",
                 what, i);
    return;
  }
  if (!kcu_available(NULL)) nodriver(L);
  if (i < 0 || i >= drv.ndev)
    luaL_error(L, "kjit.cuda: %s: device %I out of range (%d CUDA device%s: 0 to %d)", what, i,
               drv.ndev, drv.ndev == 1 ? "" : "s", drv.ndev - 1);
  if ((r = make_current((int)i)) != CUDA_SUCCESS) cuerror(L, r, what, NULL);
  cur_dev = (int)i;
}

/* cuda.select_device(i): 0-based; this thread's device from now on;
** returns the previously selected device. */
static int c_select_device(lua_State *L) {
  lua_Integer i = luaL_checkinteger(L, 1);
  int prev = kcu_device();
  set_device(L, i, "select_device");
  lua_pushinteger(L, prev);
  return 1;
}

/* cuda.use_device(i): selects device i until the returned scope closes
** (local _ <close> = cuda.use_device(1)), then the device current before
** is current again: at the end of the block, on a return, a break or an
** error. The scope remembers the thread's previous device; closing it on
** another thread than the one that opened it selects that device there. */
#define KCU_DEVSCOPE "kjit.cuda.device_scope"
typedef struct DevScope { int prev, dev, closed; } DevScope;

static int scope_close(lua_State *L) {
  DevScope *sc = (DevScope *)luaL_checkudata(L, 1, KCU_DEVSCOPE);
  if (sc->closed) return 0;
  sc->closed = 1;
  /* a failure to make the old context current shows at the next call
  ** (kcu_ensure); a __close that raised would hide the block's error */
  if (!kcu_sim_mode() && kcu_available(NULL)) make_current(sc->prev);
  cur_dev = sc->prev;
  return 0;
}

static int scope_tostring(lua_State *L) {
  DevScope *sc = (DevScope *)luaL_checkudata(L, 1, KCU_DEVSCOPE);
  lua_pushfstring(L, KCU_DEVSCOPE ": device %d%s (then %d)", sc->dev,
                  sc->closed ? ", closed" : "", sc->prev);
  return 1;
}

static int c_use_device(lua_State *L) {
  lua_Integer i = luaL_checkinteger(L, 1);
  int prev = kcu_device();
  set_device(L, i, "use_device");
  DevScope *sc = (DevScope *)lua_newuserdatauv(L, sizeof *sc, 0);
  sc->prev = prev;
  sc->dev = (int)i;
  sc->closed = 0;
  if (luaL_newmetatable(L, KCU_DEVSCOPE)) {
    lua_pushcfunction(L, scope_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, scope_close);
    lua_setfield(L, -2, "close");      /* sc:close() without <close> */
    lua_pushvalue(L, -1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, scope_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  return 1;
}

/* cuda.current_device(): this thread's device id */
static int c_current_device(lua_State *L) {
  lua_pushinteger(L, kcu_device());
  return 1;
}

/* cuda.get_current_device(): numba-cuda's: the current device's table
** (as cuda.devices() lists it: id, name, compute_capability ...) */
static int c_get_current_device(lua_State *L) {
  int sim = kcu_sim_mode() != 0;
  if (!sim) kcu_ensure(L);
  pushdevice(L, kcu_device(), sim);
  return 1;
}

static lua_Integer check_ordinal(lua_State *L, int arg, const char *what) {
  lua_Integer i = luaL_checkinteger(L, arg);
  int n = kcu_sim_mode() ? 1 : drv.ndev;
  if (i < 0 || i >= n)
    luaL_error(L, "kjit.cuda: %s: device %I out of range (%d device%s: 0 to %d)", what, i, n,
               n == 1 ? "" : "s", n - 1);
  return i;
}

/* cuda.can_access_peer(i, j): whether device i can use device j's memory
** (cuDeviceCanAccessPeer); a device can use its own (true for i == j). */
static int c_can_access_peer(lua_State *L) {
  if (!kcu_sim_mode() && !kcu_available(NULL)) nodriver(L);
  lua_Integer i = check_ordinal(L, 1, "can_access_peer");
  lua_Integer j = check_ordinal(L, 2, "can_access_peer");
  int can = 0;
  if (i == j) can = 1;
  else if (cu.DeviceCanAccessPeer) {
    CUdevice a, b;
    CHECK(L, cu.DeviceGet(&a, (int)i), "cuDeviceGet");
    CHECK(L, cu.DeviceGet(&b, (int)j), "cuDeviceGet");
    CHECK(L, cu.DeviceCanAccessPeer(&can, a, b), "cuDeviceCanAccessPeer");
  }
  lua_pushboolean(L, can != 0);
  return 1;
}

/* cuda.enable_peer_access(j): the current device's kernels may then take
** arrays of device j (cuCtxEnablePeerAccess; enabling it twice is no
** error). Process-wide, as the contexts are; one direction only. */
static int c_enable_peer_access(lua_State *L) {
  if (!kcu_sim_mode() && !kcu_available(NULL)) nodriver(L);
  lua_Integer j = check_ordinal(L, 1, "enable_peer_access");
  int i = kcu_device();
  if (kcu_sim_mode() || j == i) return 0;
  kcu_ensure(L);
  if (cu.CtxEnablePeerAccess == NULL)
    return luaL_error(L, "kjit.cuda: the CUDA driver has no cuCtxEnablePeerAccess");
  CUcontext pc;
  CUresult r = retain((int)j, &pc);
  if (r != CUDA_SUCCESS) cuerror(L, r, "cuDevicePrimaryCtxRetain", NULL);
  make_current(i);
  r = cu.CtxEnablePeerAccess(pc, 0);
  if (r != CUDA_SUCCESS && r != 704 /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */) {
    char extra[64];
    snprintf(extra, sizeof extra, " (device %d to device %d)", i, (int)j);
    cuerror(L, r, "cuCtxEnablePeerAccess", extra);
  }
  pthread_mutex_lock(&drv_mu);
  atomic_store_explicit(&peer_on[i][j], 1, memory_order_release);
  pthread_mutex_unlock(&drv_mu);
  return 0;
}

/* cuda.synchronize() */
static int c_synchronize(lua_State *L) {
  kcu_sync(L, NULL);
  return 0;
}

/* cuda.close(): numba-cuda's. The launches' errors are read first (as
** cuda.synchronize() reads them) and raised after the close, which
** happens either way: a program recovers from a sticky CUDA error (an
** illegal address) by closing. Without a GPU (and not simulating) it does
** nothing. */
static int c_close(lua_State *L) {
  if (!kcu_sim_mode() && !kcu_available(NULL)) return 0;
  luaL_where(L, 1);                       /* the caller's line, for driver errors */
  lua_pushcfunction(L, c_synchronize);
  int rc = lua_pcall(L, 0, 0, 0);
  kcu_close(L);
  if (rc != LUA_OK) {
    if (lua_type(L, -1) == LUA_TSTRING && strncmp(lua_tostring(L, -1), "kjit.cuda:", 10) == 0)
      lua_concat(L, 2);                   /* where .. message */
    return lua_error(L);
  }
  return 0;
}

/* cuda.mem_info(): free and total bytes of the current device. */
static int c_mem_info(lua_State *L) {
  size_t fr = 0, total = 0;
  if (kcu_sim_mode())
    return luaL_error(L, "kjit.cuda: mem_info is not available in simulator mode");
  kcu_ensure(L);
  CHECK(L, cu.MemGetInfo(&fr, &total), "cuMemGetInfo");
  lua_pushinteger(L, (lua_Integer)fr);
  lua_pushinteger(L, (lua_Integer)total);
  return 2;
}

/* The mode as Lua sees it: false, true or "interpret". */
static void pushmode(lua_State *L, int m) {
  if (m == 2) lua_pushliteral(L, "interpret");
  else lua_pushboolean(L, m);
}

/* cuda.simulate(true | false | "interpret"): returns the previous mode. */
static int c_simulate(lua_State *L) {
  int prev = kcu_sim_mode(), m;
  if (lua_type(L, 1) == LUA_TBOOLEAN) {
    m = lua_toboolean(L, 1);
  } else if (lua_type(L, 1) == LUA_TSTRING && strcmp(lua_tostring(L, 1), "interpret") == 0) {
    m = 2;
  } else {
    return luaL_argerror(L, 1, "expected true, false or \"interpret\"");
  }
  kcu_set_sim_mode(m);
  pushmode(L, prev);
  return 1;
}

/* cuda.simulating(): false, true or "interpret". */
static int c_simulating(lua_State *L) {
  pushmode(L, kcu_sim_mode());
  return 1;
}

/* The state closes: release every deferred block (errors are moot now). */
static int closer_gc(lua_State *L) {
  int i;
  (void)L;
  if (!kcu_available(NULL)) return 0;
  for (i = 0; i < drv.ndev; i++) flush_deferred(i, 0);
  return 0;
}

static const luaL_Reg functions[] = {
  {"is_available", c_is_available}, {"detect", c_detect},
  {"devices", c_devices}, {"select_device", c_select_device},
  {"current_device", c_current_device}, {"to_device", c_to_device},
  {"device_array", c_device_array}, {"device_array_like", c_device_array_like},
  {"is_device_array", c_is_device_array}, {"synchronize", c_synchronize},
  {"stream", c_stream}, {"event", c_event},
  {"event_elapsed_time", c_event_elapsed_time}, {"mem_info", c_mem_info},
  {"simulate", c_simulate}, {"simulating", c_simulating},
  {"default_stream", c_default_stream}, {"external_stream", c_external_stream},
  {"list_devices", c_devices}, {"use_device", c_use_device},
  {"get_current_device", c_get_current_device}, {"can_access_peer", c_can_access_peer},
  {"enable_peer_access", c_enable_peer_access}, {"close", c_close}, {NULL, NULL}
};

void kcu_open(lua_State *L) {
  luaL_setfuncs(L, functions, 0);
  kcu_open_extra(L);
  pushmeta_devarray(L);
  lua_pop(L, 1);
  /* One finalized sentinel per state: it is created before any device
  ** array, so Lua finalizes it after them when the state closes. */
  if (lua_getfield(L, LUA_REGISTRYINDEX, KCU_CLOSER) == LUA_TNIL) {
    lua_newuserdatauv(L, 1, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, closer_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, KCU_CLOSER);
  }
  lua_pop(L, 1);
}
