/*
** mock_libcuda.c: a fake CUDA driver over host memory, for kjit's tests.
** Built as libmockcuda.so; tests load it with KJIT_LIBCUDA=<path> so the
** driver path of src/host/cudadrv.c runs without a GPU. It implements only the
** entry points kjit uses, and is stricter than the real driver where that
** catches bugs: copies must stay inside one live allocation of the current
** context's device, handles are checked, new allocations are filled with
** 0xA5 (so a missing memset shows).
**
** Environment:
**   MOCK_CUDA_DEVICES=n      devices (default 2; 0: cuDeviceGetCount says 0)
**   MOCK_CUDA_MEM=bytes      memory per device (default 256 MiB)
**   MOCK_CUDA_FAIL=a,b=code  entry points that fail; code defaults to a
**                            plausible one (cuMemAlloc_v2: out of memory)
**   MOCK_CUDA_REPORT=path    at exit, write "key=value" counters there
**                            (live_allocs, bad_frees, bad_copies, ...)
**   MOCK_CUDA_LOG=path       one line per call of the entry points that run
**                            in a context: "name dev=D thread=T" (D: the
**                            device of the context current on the calling
**                            thread, -1 for none; T: the thread, numbered
**                            from 1 in the order threads first log)
**   MOCK_CUDA_PEER=0         cuDeviceCanAccessPeer says no (default: yes)
** Multi-GPU: each device has its own primary context; the current context
** is per thread (as the driver's); a module, stream, event or allocation
** belongs to the device of the context it was made in, and a launch of a
** module's function in another device's context fails (bad_handles).
** cuCtxEnablePeerAccess records peer pairs; cuMemcpyPeer checks each range
** in its own context's device.
** Modules accept any text; one containing "MOCK_PTX_ERROR" (or an injected
** failure) fails with CUDA_ERROR_INVALID_PTX and a JIT error log; cuModuleGetFunction fails for the
** name "missing". cuLaunchKernel checks its arguments and runs nothing.
** The linker (cuLinkCreate_v2 ... cuLinkComplete) takes PTX inputs and
** checks what a real link would: every function one input declares .extern
** (other than the CUDA runtime's vprintf/malloc/free) must be defined
** (.visible .func) by another, else "Undefined reference" in the error log;
** its image is the first input's text, which cuModuleLoadDataEx accepts.
** Binary inputs (CUjitInputType cubin 0, fatbin 2, object 3, library 4)
** must start with their format's magic bytes (else CUDA_ERROR_INVALID_IMAGE,
** counted in bad_link_inputs); the mock cannot read what they define, so a
** link with one skips the undefined-reference check. link_binary_inputs
** counts them, link_types the types seen (bit i: type i).
** MOCK_CUDA_REPORT also counts links and their inputs (links, link_inputs);
** MOCK_CUDA_LINK_DUMP=dir writes the inputs of each link there (link<i>.ptx).
** cuLaunchCooperativeKernel checks like cuLaunchKernel, after the co-residency
** limit (MOCK_CUDA_OCCUPANCY=n: n blocks per SM, whatever their size).
** cuDevicePrimaryCtxRelease_v2 destroys the device's context when its
** retain count reaches 0, as the driver does: its allocations are freed
** (ctx_freed counts them; a later cuMemFree of one is a bad free), its
** streams, events and modules die (a later use or destroy of one counts in
** dead_handles and bad_handles), and a thread still calling in it fails
** (dead_ctx_calls). ctx_destroys counts the destructions.
*/
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef uint64_t CUdeviceptr;

enum {
  OK = 0, E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_NOT_INITIALIZED = 3,
  E_NO_DEVICE = 100, E_INVALID_DEVICE = 101, E_INVALID_CONTEXT = 201,
  E_INVALID_PTX = 218, E_INVALID_HANDLE = 400, E_NOT_FOUND = 500,
  E_UNKNOWN = 999
};

#define MAXDEV 8
#define MAGIC_STREAM 0x5354524dU
#define MAGIC_EVENT  0x4556454eU
#define MAGIC_MODULE 0x4d4f4455U

typedef struct Ctx { int dev; } Ctx;
typedef struct Alloc { CUdeviceptr p; size_t n; int dev; void *mem; } Alloc;
typedef struct Stream { unsigned magic; int dev; unsigned gen; } Stream;
typedef struct Event { unsigned magic; int dev; int recorded; double t; unsigned gen; } Event;
typedef struct Module { unsigned magic; int dev; int nparams; unsigned gen; } Module;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int inited, ndev = 2;
static size_t devmem = (size_t)256 << 20, used[MAXDEV];
static Ctx ctxs[MAXDEV];
static int retained[MAXDEV];
/* a context's generation: bumped when it is destroyed; each stream, event
** and module remembers its own (dev_live: per device, for the counters) */
static unsigned ctxgen[MAXDEV];
static long dev_streams[MAXDEV], dev_events[MAXDEV], dev_modules[MAXDEV], dev_registered[MAXDEV];
static __thread Ctx *current;
static Alloc *allocs;
static size_t nalloc, capalloc;
static const char *failspec;
static struct {
  long allocs, frees, bad_frees, bad_copies, bad_handles, live_streams,
       live_events, live_modules, syncs, launches, memsets, registered,
       module_loads, peer_copies, peer_enables, links, link_inputs, live_links,
       coop_launches, coop_blocks, ctx_destroys, ctx_freed, dead_handles, dead_ctx_calls,
       ctx_releases, link_binary_inputs, bad_link_inputs, link_types;
} st;
static int peer_on[MAXDEV][MAXDEV];
static FILE *logf;
static int nthreads_logged;
static __thread int thread_no;

/* MOCK_CUDA_LOG: "name dev=D thread=T" */
static void logcall(const char *name) {
  if (!logf) return;
  pthread_mutex_lock(&mu);
  if (thread_no == 0) thread_no = ++nthreads_logged;
  fprintf(logf, "%s dev=%d thread=%d\n", name, current ? current->dev : -1, thread_no);
  fflush(logf);
  pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------------ */

static void report(void) {
  const char *path = getenv("MOCK_CUDA_REPORT");
  size_t bytes = 0, k;
  FILE *f;
  if (!path || !*path || !(f = fopen(path, "w"))) return;
  for (k = 0; k < nalloc; k++) bytes += allocs[k].n;
  fprintf(f, "live_allocs=%zu\nlive_bytes=%zu\nallocs=%ld\nfrees=%ld\n"
          "bad_frees=%ld\nbad_copies=%ld\nbad_handles=%ld\nlive_streams=%ld\n"
          "live_events=%ld\nlive_modules=%ld\nsyncs=%ld\nlaunches=%ld\n"
          "memsets=%ld\nregistered=%ld\nmodule_loads=%ld\npeer_copies=%ld\npeer_enables=%ld\n"
          "links=%ld\nlink_inputs=%ld\nlive_links=%ld\ncoop_launches=%ld\ncoop_blocks=%ld\n"
          "ctx_destroys=%ld\nctx_freed=%ld\ndead_handles=%ld\ndead_ctx_calls=%ld\n"
          "ctx_releases=%ld\nlink_binary_inputs=%ld\nbad_link_inputs=%ld\nlink_types=%ld\n",
          nalloc, bytes, st.allocs, st.frees, st.bad_frees,
          st.bad_copies, st.bad_handles, st.live_streams, st.live_events,
          st.live_modules, st.syncs, st.launches, st.memsets, st.registered,
          st.module_loads, st.peer_copies, st.peer_enables, st.links, st.link_inputs,
          st.live_links, st.coop_launches, st.coop_blocks, st.ctx_destroys, st.ctx_freed,
          st.dead_handles, st.dead_ctx_calls, st.ctx_releases, st.link_binary_inputs,
          st.bad_link_inputs, st.link_types);
  fclose(f);
}

static void setup(void) {
  const char *e;
  int k;
  if ((e = getenv("MOCK_CUDA_DEVICES")) && *e) ndev = atoi(e);
  if (ndev > MAXDEV) ndev = MAXDEV;
  if (ndev < 0) ndev = 0;
  if ((e = getenv("MOCK_CUDA_MEM")) && *e) devmem = (size_t)strtoull(e, NULL, 0);
  failspec = getenv("MOCK_CUDA_FAIL");
  if ((e = getenv("MOCK_CUDA_LOG")) && *e) logf = fopen(e, "w");
  for (k = 0; k < MAXDEV; k++) ctxs[k].dev = k;
  atexit(report);
}

/* The injected failure for entry point name, or 0. */
static CUresult fail(const char *name, CUresult dflt) {
  const char *p;
  size_t n = strlen(name);
  pthread_once(&once, setup);
  for (p = failspec; p && *p; ) {
    const char *end = p + strcspn(p, ",");
    if ((size_t)(end - p) >= n && strncmp(p, name, n) == 0 &&
        (p[n] == ',' || p[n] == '\0' || p[n] == '='))
      return p[n] == '=' ? atoi(p + n + 1) : dflt;
    p = *end ? end + 1 : end;
  }
  return 0;
}

#define ENTER(name, dflt) \
  do { CUresult f_ = fail(name, dflt); logcall(name); if (f_) return f_; \
       if (!inited) return E_NOT_INITIALIZED; } while (0)
#define E_CONTEXT_IS_DESTROYED 709
#define NEED_CTX() do { if (!current) return E_INVALID_CONTEXT; \
    if (!retained[current->dev]) { st.dead_ctx_calls++; return E_CONTEXT_IS_DESTROYED; } } while (0)
/* a stream, event or module of a destroyed context */
#define DEAD(x) ((x)->gen != ctxgen[(x)->dev])
#define CHECK_LIVE(x) do { if (DEAD(x)) { st.dead_handles++; st.bad_handles++; \
    return E_CONTEXT_IS_DESTROYED; } } while (0)

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The allocation holding [p, p+n) on the current device, or NULL. */
static Alloc *find(CUdeviceptr p, size_t n) {
  size_t k;
  for (k = 0; k < nalloc; k++)
    if (p >= allocs[k].p && n <= allocs[k].n && p - allocs[k].p <= allocs[k].n - n)
      return current && allocs[k].dev == current->dev ? &allocs[k] : NULL;
  return NULL;
}

static int stream_ok(void *s) {
  Stream *x = (Stream *)s;
  if (s && x->magic == MAGIC_STREAM && DEAD(x)) st.dead_handles++;
  return s == NULL || (x->magic == MAGIC_STREAM && current && x->dev == current->dev && !DEAD(x));
}

/* ------------------------------------------------------------------ */
/* initialization and devices                                          */
/* ------------------------------------------------------------------ */

API CUresult cuInit(unsigned flags) {
  CUresult f = fail("cuInit", E_NO_DEVICE);
  if (f) return f;
  if (flags != 0) return E_INVALID_VALUE;
  inited = 1;
  return OK;
}

API CUresult cuDriverGetVersion(int *v) {
  ENTER("cuDriverGetVersion", E_UNKNOWN);
  *v = 13000;
  return OK;
}

API CUresult cuDeviceGetCount(int *n) {
  ENTER("cuDeviceGetCount", E_UNKNOWN);
  *n = ndev;
  return OK;
}

API CUresult cuDeviceGet(int *d, int ordinal) {
  ENTER("cuDeviceGet", E_INVALID_DEVICE);
  if (ordinal < 0 || ordinal >= ndev) return E_INVALID_DEVICE;
  *d = ordinal;
  return OK;
}

API CUresult cuDeviceGetName(char *s, int len, int d) {
  ENTER("cuDeviceGetName", E_UNKNOWN);
  if (d < 0 || d >= ndev) return E_INVALID_DEVICE;
  snprintf(s, (size_t)len, "Mock GPU %d", d);
  return OK;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  ENTER("cuDeviceGetAttribute", E_INVALID_VALUE);
  if (d < 0 || d >= ndev) return E_INVALID_DEVICE;
  switch (attr) {
    case 75: *v = 9; break;      /* compute capability 9.0 */
    case 76: *v = 0; break;
    case 16: *v = 132; break;    /* SMs */
    case 1: *v = 1024; break;    /* threads per block */
    case 10: *v = 32; break;     /* warp size */
    case 95: *v = 1; break;      /* cooperative launch */
    default: *v = 0; break;
  }
  return OK;
}

API CUresult cuDeviceTotalMem_v2(size_t *n, int d) {
  ENTER("cuDeviceTotalMem_v2", E_UNKNOWN);
  if (d < 0 || d >= ndev) return E_INVALID_DEVICE;
  *n = devmem;
  return OK;
}

API CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  ENTER("cuDevicePrimaryCtxRetain", E_UNKNOWN);
  if (d < 0 || d >= ndev) return E_INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  retained[d]++;
  pthread_mutex_unlock(&mu);
  *c = &ctxs[d];
  return OK;
}

/* The driver's rule: the context lives while anyone retains it. */
API CUresult cuDevicePrimaryCtxRelease_v2(int d) {
  size_t k;
  ENTER("cuDevicePrimaryCtxRelease_v2", E_UNKNOWN);
  if (d < 0 || d >= ndev) return E_INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  st.ctx_releases++;
  if (retained[d] <= 0) { pthread_mutex_unlock(&mu); return E_INVALID_CONTEXT; }
  if (--retained[d] == 0) {   /* destroyed: everything made in it goes */
    for (k = 0; k < nalloc; )
      if (allocs[k].dev == d) {
        used[d] -= allocs[k].n;
        free(allocs[k].mem);
        allocs[k] = allocs[--nalloc];
        st.ctx_freed++;
      } else {
        k++;
      }
    ctxgen[d]++;
    st.live_streams -= dev_streams[d]; dev_streams[d] = 0;
    st.live_events -= dev_events[d]; dev_events[d] = 0;
    st.live_modules -= dev_modules[d]; dev_modules[d] = 0;
    st.registered -= dev_registered[d]; dev_registered[d] = 0;
    st.ctx_destroys++;
  }
  pthread_mutex_unlock(&mu);
  return OK;
}

API CUresult cuCtxGetCurrent(void **c) {
  ENTER("cuCtxGetCurrent", E_UNKNOWN);
  *c = current;
  return OK;
}

API CUresult cuCtxSetCurrent(void *c) {
  Ctx *x = (Ctx *)c;
  ENTER("cuCtxSetCurrent", E_INVALID_CONTEXT);
  if (x != NULL && (x < ctxs || x >= ctxs + ndev || !retained[x->dev]))
    return E_INVALID_CONTEXT;
  current = x;
  return OK;
}

API CUresult cuCtxSynchronize(void) {
  ENTER("cuCtxSynchronize", E_UNKNOWN);
  NEED_CTX();
  st.syncs++;
  return OK;
}

/* ------------------------------------------------------------------ */
/* memory                                                              */
/* ------------------------------------------------------------------ */

API CUresult cuMemGetInfo_v2(size_t *fr, size_t *total) {
  ENTER("cuMemGetInfo_v2", E_UNKNOWN);
  NEED_CTX();
  pthread_mutex_lock(&mu);
  *fr = devmem - used[current->dev];
  *total = devmem;
  pthread_mutex_unlock(&mu);
  return OK;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *mem;
  ENTER("cuMemAlloc_v2", E_OUT_OF_MEMORY);
  NEED_CTX();
  if (n == 0) return E_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  if (n > devmem - used[current->dev]) {
    pthread_mutex_unlock(&mu);
    return E_OUT_OF_MEMORY;
  }
  if (nalloc == capalloc) {
    size_t cap = capalloc ? 2 * capalloc : 64;
    Alloc *a = (Alloc *)realloc(allocs, cap * sizeof *a);
    if (!a) { pthread_mutex_unlock(&mu); return E_OUT_OF_MEMORY; }
    allocs = a;
    capalloc = cap;
  }
  mem = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!mem) { pthread_mutex_unlock(&mu); return E_OUT_OF_MEMORY; }
  memset(mem, 0xA5, n);
  allocs[nalloc].p = (CUdeviceptr)(uintptr_t)mem;
  allocs[nalloc].n = n;
  allocs[nalloc].dev = current->dev;
  allocs[nalloc].mem = mem;
  nalloc++;
  used[current->dev] += n;
  st.allocs++;
  *p = (CUdeviceptr)(uintptr_t)mem;
  pthread_mutex_unlock(&mu);
  return OK;
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
  size_t k;
  ENTER("cuMemFree_v2", E_INVALID_VALUE);
  NEED_CTX();
  pthread_mutex_lock(&mu);
  for (k = 0; k < nalloc; k++)
    if (allocs[k].p == p) {
      used[allocs[k].dev] -= allocs[k].n;
      free(allocs[k].mem);
      allocs[k] = allocs[--nalloc];
      st.frees++;
      pthread_mutex_unlock(&mu);
      return OK;
    }
  st.bad_frees++;
  pthread_mutex_unlock(&mu);
  return E_INVALID_VALUE;
}

API CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
  Alloc *a;
  ENTER("cuMemsetD8_v2", E_INVALID_VALUE);
  NEED_CTX();
  pthread_mutex_lock(&mu);
  a = find(p, n);
  if (a) { memset((void *)(uintptr_t)p, v, n); st.memsets++; }
  else st.bad_copies++;
  pthread_mutex_unlock(&mu);
  return a ? OK : E_INVALID_VALUE;
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, void *s) {
  Alloc *a;
  NEED_CTX();
  if (!stream_ok(s)) { st.bad_handles++; return E_INVALID_HANDLE; }
  pthread_mutex_lock(&mu);
  a = find(dst, n);
  if (a) memcpy((void *)(uintptr_t)dst, src, n);
  else st.bad_copies++;
  pthread_mutex_unlock(&mu);
  return a ? OK : E_INVALID_VALUE;
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, void *s) {
  Alloc *a;
  NEED_CTX();
  if (!stream_ok(s)) { st.bad_handles++; return E_INVALID_HANDLE; }
  pthread_mutex_lock(&mu);
  a = find(src, n);
  if (a) memcpy(dst, (const void *)(uintptr_t)src, n);
  else st.bad_copies++;
  pthread_mutex_unlock(&mu);
  return a ? OK : E_INVALID_VALUE;
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  ENTER("cuMemcpyHtoD_v2", E_INVALID_VALUE);
  return htod(dst, src, n, NULL);
}

API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  ENTER("cuMemcpyDtoH_v2", E_INVALID_VALUE);
  return dtoh(dst, src, n, NULL);
}

/* Host memory the driver manages: the mock's host and device memory are
** one, so page-locked, mapped and managed blocks are ordinary allocations
** (counted and checked for leaks as device memory is); a mapped block's
** device address is its host address. */
API CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  CUdeviceptr d;
  CUresult r;
  ENTER("cuMemHostAlloc", E_OUT_OF_MEMORY);
  if (flags & ~0x7u) return E_INVALID_VALUE;
  r = cuMemAlloc_v2(&d, n);
  if (r == OK) *p = (void *)(uintptr_t)d;
  return r;
}

API CUresult cuMemFreeHost(void *p) {
  ENTER("cuMemFreeHost", E_INVALID_VALUE);
  return cuMemFree_v2((CUdeviceptr)(uintptr_t)p);
}

API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
  Alloc *a;
  ENTER("cuMemHostGetDevicePointer_v2", E_INVALID_VALUE);
  NEED_CTX();
  if (flags != 0) return E_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  a = find((CUdeviceptr)(uintptr_t)p, 1);
  pthread_mutex_unlock(&mu);
  if (!a) return E_INVALID_VALUE;
  *d = (CUdeviceptr)(uintptr_t)p;
  return OK;
}

API CUresult cuMemAllocManaged(CUdeviceptr *d, size_t n, unsigned flags) {
  ENTER("cuMemAllocManaged", E_OUT_OF_MEMORY);
  if (flags != 1 && flags != 2) return E_INVALID_VALUE;
  return cuMemAlloc_v2(d, n);
}

API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
  ENTER("cuMemHostRegister_v2", E_INVALID_VALUE);
  NEED_CTX();
  if (p == NULL || n == 0 || flags != 0) return E_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  st.registered++;
  dev_registered[current->dev]++;
  pthread_mutex_unlock(&mu);
  return OK;
}

API CUresult cuMemHostUnregister(void *p) {
  ENTER("cuMemHostUnregister", E_INVALID_VALUE);
  NEED_CTX();
  if (p == NULL) return E_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  st.registered--;
  dev_registered[current->dev]--;
  pthread_mutex_unlock(&mu);
  return OK;
}

/* device to device (d:copy_to_device, kjit.cuda.fft's resizing,
** kjit.cuda.random's odd counts): both ranges inside allocations of the
** current device */
static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
  Alloc *a, *b;
  NEED_CTX();
  if (!stream_ok(s)) { st.bad_handles++; return E_INVALID_HANDLE; }
  pthread_mutex_lock(&mu);
  a = find(dst, n);
  b = find(src, n);
  if (a && b) memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  else st.bad_copies++;
  pthread_mutex_unlock(&mu);
  return a && b ? OK : E_INVALID_VALUE;
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  ENTER("cuMemcpyDtoD_v2", E_INVALID_VALUE);
  return dtod(dst, src, n, NULL);
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
  ENTER("cuMemcpyDtoDAsync_v2", E_INVALID_VALUE);
  return dtod(dst, src, n, s);
}

API CUresult cuProfilerStart(void) {
  ENTER("cuProfilerStart", E_INVALID_VALUE);
  NEED_CTX();
  return OK;
}

API CUresult cuProfilerStop(void) {
  ENTER("cuProfilerStop", E_INVALID_VALUE);
  NEED_CTX();
  return OK;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
  ENTER("cuMemcpyHtoDAsync_v2", E_INVALID_VALUE);
  return htod(dst, src, n, s);
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
  ENTER("cuMemcpyDtoHAsync_v2", E_INVALID_VALUE);
  return dtoh(dst, src, n, s);
}

/* peers: every pair of distinct devices may (MOCK_CUDA_PEER=0: none) */
API CUresult cuDeviceCanAccessPeer(int *can, int d, int peer) {
  const char *e = getenv("MOCK_CUDA_PEER");
  ENTER("cuDeviceCanAccessPeer", E_INVALID_DEVICE);
  if (d < 0 || d >= ndev || peer < 0 || peer >= ndev) return E_INVALID_DEVICE;
  *can = d != peer && !(e && strcmp(e, "0") == 0);
  return OK;
}

API CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags) {
  Ctx *x = (Ctx *)peer;
  const char *e = getenv("MOCK_CUDA_PEER");
  ENTER("cuCtxEnablePeerAccess", E_INVALID_VALUE);
  NEED_CTX();
  if (flags != 0) return E_INVALID_VALUE;
  if (x == NULL || x < ctxs || x >= ctxs + ndev || !retained[x->dev]) return E_INVALID_CONTEXT;
  if (x == current || (e && strcmp(e, "0") == 0)) return 217;   /* PEER_ACCESS_UNSUPPORTED */
  pthread_mutex_lock(&mu);
  int was = peer_on[current->dev][x->dev];
  peer_on[current->dev][x->dev] = 1;
  if (!was) st.peer_enables++;
  pthread_mutex_unlock(&mu);
  return was ? 704 : OK;   /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */
}

/* The allocation holding [p, p+n) on device dev (any thread's context). */
static Alloc *find_on(int dev, CUdeviceptr p, size_t n) {
  for (size_t k = 0; k < nalloc; k++)
    if (p >= allocs[k].p && n <= allocs[k].n && p - allocs[k].p <= allocs[k].n - n)
      return allocs[k].dev == dev ? &allocs[k] : NULL;
  return NULL;
}

/* Each range must lie in an allocation of its own context's device; the
** stream (if any) is one of the current context's. */
static CUresult peer_copy(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n,
                          void *s) {
  Ctx *dc = (Ctx *)dctx, *sc = (Ctx *)sctx;
  NEED_CTX();
  if (!dc || !sc || dc < ctxs || dc >= ctxs + ndev || sc < ctxs || sc >= ctxs + ndev)
    return E_INVALID_CONTEXT;
  if (!stream_ok(s)) { st.bad_handles++; return E_INVALID_HANDLE; }
  pthread_mutex_lock(&mu);
  Alloc *a = find_on(dc->dev, dst, n), *b = find_on(sc->dev, src, n);
  if (a && b) { memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n); st.peer_copies++; }
  else st.bad_copies++;
  pthread_mutex_unlock(&mu);
  return a && b ? OK : E_INVALID_VALUE;
}

API CUresult cuMemcpyPeer(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n) {
  ENTER("cuMemcpyPeer", E_INVALID_VALUE);
  return peer_copy(dst, dctx, src, sctx, n, NULL);
}

API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n,
                               void *s) {
  ENTER("cuMemcpyPeerAsync", E_INVALID_VALUE);
  return peer_copy(dst, dctx, src, sctx, n, s);
}

typedef struct {   /* CUDA_MEMCPY2D */
  size_t srcXInBytes, srcY; int srcMemoryType; const void *srcHost;
  CUdeviceptr srcDevice; void *srcArray; size_t srcPitch;
  size_t dstXInBytes, dstY; int dstMemoryType; void *dstHost;
  CUdeviceptr dstDevice; void *dstArray; size_t dstPitch;
  size_t WidthInBytes, Height;
} Copy2D;

/* Device to device only (memory type 2), as kjit uses it. */
API CUresult cuMemcpy2DAsync_v2(const Copy2D *c, void *s) {
  ENTER("cuMemcpy2DAsync_v2", E_INVALID_VALUE);
  NEED_CTX();
  if (!stream_ok(s)) { st.bad_handles++; return E_INVALID_HANDLE; }
  if (c->srcMemoryType != 2 || c->dstMemoryType != 2 || c->WidthInBytes > c->srcPitch ||
      c->WidthInBytes > c->dstPitch)
    return E_INVALID_VALUE;
  if (c->Height == 0 || c->WidthInBytes == 0) return OK;
  CUdeviceptr src = c->srcDevice + c->srcY * c->srcPitch + c->srcXInBytes;
  CUdeviceptr dst = c->dstDevice + c->dstY * c->dstPitch + c->dstXInBytes;
  size_t sspan = (c->Height - 1) * c->srcPitch + c->WidthInBytes;
  size_t dspan = (c->Height - 1) * c->dstPitch + c->WidthInBytes;
  pthread_mutex_lock(&mu);
  int ok = find(src, sspan) && find(dst, dspan);
  if (ok)
    for (size_t r = 0; r < c->Height; r++)
      memmove((void *)(uintptr_t)(dst + r * c->dstPitch),
              (const void *)(uintptr_t)(src + r * c->srcPitch), c->WidthInBytes);
  else st.bad_copies++;
  pthread_mutex_unlock(&mu);
  return ok ? OK : E_INVALID_VALUE;
}

/* ------------------------------------------------------------------ */
/* streams and events                                                  */
/* ------------------------------------------------------------------ */

API CUresult cuStreamCreate(void **s, unsigned flags) {
  Stream *x;
  ENTER("cuStreamCreate", E_OUT_OF_MEMORY);
  NEED_CTX();
  (void)flags;
  if (!(x = (Stream *)malloc(sizeof *x))) return E_OUT_OF_MEMORY;
  x->magic = MAGIC_STREAM;
  x->dev = current->dev;
  x->gen = ctxgen[x->dev];
  st.live_streams++;
  dev_streams[x->dev]++;
  *s = x;
  return OK;
}

API CUresult cuStreamDestroy_v2(void *s) {
  Stream *x = (Stream *)s;
  ENTER("cuStreamDestroy_v2", E_INVALID_HANDLE);
  if (!x || x->magic != MAGIC_STREAM) { st.bad_handles++; return E_INVALID_HANDLE; }
  CHECK_LIVE(x);
  x->magic = 0;
  st.live_streams--;
  dev_streams[x->dev]--;
  free(x);
  return OK;
}

API CUresult cuStreamSynchronize(void *s) {
  ENTER("cuStreamSynchronize", E_UNKNOWN);
  if (s && ((Stream *)s)->magic != MAGIC_STREAM) { st.bad_handles++; return E_INVALID_HANDLE; }
  if (s) CHECK_LIVE((Stream *)s);
  st.syncs++;
  return OK;
}

API CUresult cuEventCreate(void **e, unsigned flags) {
  Event *x;
  ENTER("cuEventCreate", E_OUT_OF_MEMORY);
  NEED_CTX();
  (void)flags;
  if (!(x = (Event *)calloc(1, sizeof *x))) return E_OUT_OF_MEMORY;
  x->magic = MAGIC_EVENT;
  x->dev = current->dev;
  x->gen = ctxgen[x->dev];
  st.live_events++;
  dev_events[x->dev]++;
  *e = x;
  return OK;
}

static int event_ok(void *e) {
  if (e && ((Event *)e)->magic == MAGIC_EVENT && DEAD((Event *)e)) {
    st.dead_handles++;
    return 0;
  }
  return e && ((Event *)e)->magic == MAGIC_EVENT;
}

API CUresult cuEventRecord(void *e, void *s) {
  ENTER("cuEventRecord", E_INVALID_HANDLE);
  NEED_CTX();
  if (!event_ok(e) || !stream_ok(s) || ((Event *)e)->dev != current->dev) {
    st.bad_handles++;
    return E_INVALID_HANDLE;
  }
  ((Event *)e)->recorded = 1;
  ((Event *)e)->t = now_ms();
  return OK;
}

API CUresult cuEventQuery(void *e) {
  ENTER("cuEventQuery", E_INVALID_HANDLE);
  if (!event_ok(e)) { st.bad_handles++; return E_INVALID_HANDLE; }
  return OK;
}

API CUresult cuEventSynchronize(void *e) {
  ENTER("cuEventSynchronize", E_INVALID_HANDLE);
  if (!event_ok(e)) { st.bad_handles++; return E_INVALID_HANDLE; }
  st.syncs++;
  return OK;
}

/* Only the _v2 name: kjit must ask for the versioned symbol first. */
API CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  ENTER("cuEventElapsedTime_v2", E_INVALID_HANDLE);
  if (!event_ok(a) || !event_ok(b)) { st.bad_handles++; return E_INVALID_HANDLE; }
  if (!((Event *)a)->recorded || !((Event *)b)->recorded) return E_INVALID_HANDLE;
  *ms = (float)(((Event *)b)->t - ((Event *)a)->t);
  return OK;
}

API CUresult cuEventDestroy_v2(void *e) {
  ENTER("cuEventDestroy_v2", E_INVALID_HANDLE);
  if (!event_ok(e)) { st.bad_handles++; return E_INVALID_HANDLE; }
  ((Event *)e)->magic = 0;
  st.live_events--;
  dev_events[((Event *)e)->dev]--;
  free(e);
  return OK;
}

/* ------------------------------------------------------------------ */
/* modules and launches                                                */
/* ------------------------------------------------------------------ */

API CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n,
                                int *opts, void **vals) {
  Module *x;
  unsigned k;
  CUresult r = fail("cuModuleLoadDataEx", E_INVALID_PTX);
  logcall("cuModuleLoadDataEx");
  if (!r && !inited) return E_NOT_INITIALIZED;
  NEED_CTX();
  if (!image) return E_INVALID_VALUE;
  if (r || strstr((const char *)image, "MOCK_PTX_ERROR")) {
    /* as the driver does: the JIT's messages go to the error log buffer */
    char *log = NULL;
    size_t size = 0;
    for (k = 0; k < n; k++) {
      if (opts[k] == 5) log = (char *)vals[k];
      if (opts[k] == 6) size = (size_t)(uintptr_t)vals[k];
    }
    if (log && size) snprintf(log, size, "ptxas application ptx input, line 1; "
                              "error   : mock syntax error");
    return r ? r : E_INVALID_PTX;
  }
  if (!(x = (Module *)malloc(sizeof *x))) return E_OUT_OF_MEMORY;
  x->magic = MAGIC_MODULE;
  x->dev = current->dev;
  x->gen = ctxgen[x->dev];
  dev_modules[x->dev]++;
  st.module_loads++;
  /* the kernel's parameters, counted in its PTX (see cuLaunchKernel) */
  x->nparams = 0;
  for (const char *p = image; (p = strstr(p, ".param ")) != NULL; p++) x->nparams++;
  st.live_modules++;
  *m = x;
  return OK;
}

API CUresult cuModuleUnload(void *m) {
  ENTER("cuModuleUnload", E_INVALID_HANDLE);
  if (!m || ((Module *)m)->magic != MAGIC_MODULE) { st.bad_handles++; return E_INVALID_HANDLE; }
  CHECK_LIVE((Module *)m);
  ((Module *)m)->magic = 0;
  st.live_modules--;
  dev_modules[((Module *)m)->dev]--;
  free(m);
  return OK;
}

/* A function handle is its module (enough to check launches). */
API CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  ENTER("cuModuleGetFunction", E_NOT_FOUND);
  if (!m || ((Module *)m)->magic != MAGIC_MODULE) { st.bad_handles++; return E_INVALID_HANDLE; }
  CHECK_LIVE((Module *)m);
  if (strcmp(name, "missing") == 0) return E_NOT_FOUND;
  *f = m;
  return OK;
}

/* Blocks of `threads` threads one SM holds at once: MOCK_CUDA_OCCUPANCY
** when set, else 2048 threads per SM, at most 32 blocks. */
static int occupancy(int threads) {
  const char *e = getenv("MOCK_CUDA_OCCUPANCY");
  if (e && *e) return atoi(e);
  int n = threads > 0 ? 2048 / threads : 0;
  return n > 32 ? 32 : n;
}

API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int threads,
                                                         size_t shared) {
  ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor", E_INVALID_VALUE);
  NEED_CTX();
  if (!f || ((Module *)f)->magic != MAGIC_MODULE) { st.bad_handles++; return E_INVALID_HANDLE; }
  if (!n || threads < 1 || threads > 1024 || shared > 48 * 1024) return E_INVALID_VALUE;
  *n = occupancy(threads);
  return OK;
}

static CUresult launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared, void *s, void **params);

API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, void *s, void **params, void **extra) {
  ENTER("cuLaunchKernel", E_UNKNOWN);
  NEED_CTX();
  (void)extra;
  CUresult r = launch(f, gx, gy, gz, bx, by, bz, shared, s, params);
  if (r == OK) st.launches++;
  return r;
}

/* A cooperative launch: as the driver, refused with
** CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE past the co-residency limit (the
** occupancy above times the 132 SMs). */
API CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz,
                                       unsigned shared, void *s, void **params) {
  ENTER("cuLaunchCooperativeKernel", E_UNKNOWN);
  NEED_CTX();
  uint64_t blocks = (uint64_t)gx * gy * gz;
  if (blocks > (uint64_t)occupancy((int)(bx * by * bz)) * 132) return 720;
  CUresult r = launch(f, gx, gy, gz, bx, by, bz, shared, s, params);
  if (r == OK) { st.coop_launches++; st.coop_blocks += (long)blocks; }
  return r;
}

static CUresult launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared, void *s, void **params) {
  if (!f || ((Module *)f)->magic != MAGIC_MODULE || !stream_ok(s)) {
    st.bad_handles++;
    return E_INVALID_HANDLE;
  }
  CHECK_LIVE((Module *)f);
  if (((Module *)f)->dev != current->dev) {   /* a function of another context */
    st.bad_handles++;
    return E_INVALID_CONTEXT;
  }
  if (!gx || !gy || !gz || !bx || !by || !bz ||
      (uint64_t)bx * by * bz > 1024 || shared > 48 * 1024)
    return E_INVALID_VALUE;
  /* MOCK_CUDA_ERRREC="w1,w2,...": play a kjit kernel that failed: write
  ** word 0 = 1 and the given words 1.. into its error record, the
  ** next-to-last parameter (a device pointer, here a host address) */
  const char *rec = getenv("MOCK_CUDA_ERRREC");
  int np = ((Module *)f)->nparams;
  if (rec && params && np >= 2) {
    uint64_t dst;
    memcpy(&dst, params[np - 2], sizeof dst);
    int64_t *w = (int64_t *)(uintptr_t)dst;
    w[0] = 1;
    for (int i = 1; i < 16 && *rec; i++) {
      char *end;
      w[i] = strtoll(rec, &end, 10);
      rec = *end == ',' ? end + 1 : end;
    }
  }
  return OK;
}

/* ------------------------------------------------------------------ */
/* the linker                                                          */
/* ------------------------------------------------------------------ */

#define MAGIC_LINK 0x4c494e4bU
typedef struct Link {
  unsigned magic;
  char *log; size_t logsize;
  char *texts[16]; char names[16][64]; int n;
  int binary;             /* a binary input was added */
} Link;

static void link_log(Link *l, const char *fmt, const char *a, const char *b) {
  if (l->log && l->logsize) snprintf(l->log, l->logsize, fmt, a, b);
}

API CUresult cuLinkCreate_v2(unsigned n, int *opts, void **vals, void **state) {
  ENTER("cuLinkCreate_v2", E_OUT_OF_MEMORY);
  NEED_CTX();
  Link *l = (Link *)calloc(1, sizeof *l);
  if (!l) return E_OUT_OF_MEMORY;
  l->magic = MAGIC_LINK;
  for (unsigned k = 0; k < n; k++) {
    if (opts[k] == 5) l->log = (char *)vals[k];
    if (opts[k] == 6) l->logsize = (size_t)(uintptr_t)vals[k];
  }
  st.live_links++;
  *state = l;
  return OK;
}

API CUresult cuLinkAddData_v2(void *state, int type, void *data, size_t size, const char *name,
                              unsigned n, int *opts, void **vals) {
  Link *l = (Link *)state;
  (void)n; (void)opts; (void)vals;
  ENTER("cuLinkAddData_v2", E_INVALID_PTX);
  if (!l || l->magic != MAGIC_LINK) { st.bad_handles++; return E_INVALID_HANDLE; }
  if (type == 0 || type == 2 || type == 3 || type == 4) {   /* cubin, fatbin, object, library */
    static const char *const magic[5] = { "\x7f" "ELF", NULL, "\x50\xed\x55\xba", "\x7f" "ELF",
                                          "!<arch>\n" };
    size_t m = strlen(magic[type]);
    if (!data || size < m || memcmp(data, magic[type], m) != 0 || l->n == 16) {
      st.bad_link_inputs++;
      return 200;   /* CUDA_ERROR_INVALID_IMAGE */
    }
    l->texts[l->n] = strdup("");
    snprintf(l->names[l->n], sizeof l->names[0], "%s", name ? name : "?");
    l->n++;
    l->binary = 1;
    st.link_inputs++;
    st.link_binary_inputs++;
    st.link_types |= 1L << type;
    return OK;
  }
  if (type != 1 || !data || size == 0 || ((char *)data)[size - 1] != 0 || l->n == 16)
    return E_INVALID_VALUE;   /* PTX, NUL-terminated, counted */
  st.link_types |= 1L << type;
  if (strstr((const char *)data, "MOCK_PTX_ERROR") || !strstr((const char *)data, ".version")) {
    link_log(l, "ptxas application ptx input, line 1; error   : mock syntax error in '%s'%s",
             name ? name : "?", "");
    return E_INVALID_PTX;
  }
  l->texts[l->n] = strdup((const char *)data);
  snprintf(l->names[l->n], sizeof l->names[0], "%s", name ? name : "?");
  l->n++;
  st.link_inputs++;
  return OK;
}

/* Is function name (k bytes) defined (.visible .func or .func with a body)
** by one of the inputs? */
static int link_defined(Link *l, const char *name, size_t k) {
  for (int i = 0; i < l->n; i++)
    for (const char *p = l->texts[i]; (p = strstr(p, ".func")) != NULL; p += 5) {
      const char *q = p;
      while (q > l->texts[i] && q[-1] != '\n') q--;
      if (strncmp(q, ".extern", 7) == 0) continue;
      const char *r = p + 5;
      while (*r == ' ') r++;
      if (*r == '(') { r = strchr(r, ')'); if (!r) break; r++; while (*r == ' ') r++; }
      if (strncmp(r, name, k) == 0 && (r[k] == '(' || r[k] == ' ' || r[k] == '\n')) return 1;
    }
  return 0;
}

API CUresult cuLinkComplete(void *state, void **cubin, size_t *size) {
  Link *l = (Link *)state;
  ENTER("cuLinkComplete", E_INVALID_PTX);
  if (!l || l->magic != MAGIC_LINK) { st.bad_handles++; return E_INVALID_HANDLE; }
  if (l->n == 0) return E_INVALID_VALUE;
  for (int i = 0; i < l->n && !l->binary; i++)
    for (const char *p = l->texts[i]; (p = strstr(p, ".extern .func")) != NULL; ) {
      p += 13;
      while (*p == ' ') p++;
      if (*p == '(') { p = strchr(p, ')'); if (!p) break; p++; while (*p == ' ') p++; }
      size_t k = strcspn(p, "( \n;");
      char nm[128];
      snprintf(nm, sizeof nm, "%.*s", (int)(k < 127 ? k : 127), p);
      if (strcmp(nm, "vprintf") && strcmp(nm, "malloc") && strcmp(nm, "free") &&
          !link_defined(l, p, k)) {
        link_log(l, "error   : Undefined reference to '%s' in '%s'", nm, l->names[i]);
        return 200;   /* CUDA_ERROR_INVALID_IMAGE */
      }
    }
  st.links++;
  /* MOCK_CUDA_LINK_DUMP=dir: the inputs of the last link, as dir/link<i>.ptx,
  ** for a test to hand them to the real ptxas and nvlink */
  const char *dump = getenv("MOCK_CUDA_LINK_DUMP");
  for (int i = 0; dump && *dump && i < l->n; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/link%d.ptx", dump, i);
    FILE *f = fopen(path, "w");
    if (f) { fputs(l->texts[i], f); fclose(f); }
  }
  *cubin = l->texts[0];
  *size = strlen(l->texts[0]) + 1;
  return OK;
}

API CUresult cuLinkDestroy(void *state) {
  Link *l = (Link *)state;
  if (!l || l->magic != MAGIC_LINK) { st.bad_handles++; return E_INVALID_HANDLE; }
  for (int i = 0; i < l->n; i++) free(l->texts[i]);
  l->magic = 0;
  free(l);
  st.live_links--;
  return OK;
}

/* ------------------------------------------------------------------ */
/* error names                                                         */
/* ------------------------------------------------------------------ */

static const struct { CUresult code; const char *name, *text; } names[] = {
  {OK, "CUDA_SUCCESS", "no error"},
  {E_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {E_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {E_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {E_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {E_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {E_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {E_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
  {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
  {E_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
  {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
  {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
  {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
  {E_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult lookup(CUresult e, const char **s, int text) {
  size_t k;
  for (k = 0; k < sizeof names / sizeof names[0]; k++)
    if (names[k].code == e) {
      *s = text ? names[k].text : names[k].name;
      return OK;
    }
  *s = NULL;
  return E_INVALID_VALUE;
}

API CUresult cuGetErrorName(CUresult e, const char **s) { return lookup(e, s, 0); }
API CUresult cuGetErrorString(CUresult e, const char **s) { return lookup(e, s, 1); }

/* ------------------------------------------------------------------ */
/* for tests/c/mock_libcublas.c, which finds these with dlsym: it checks  */
/* that kjit calls cuBLAS with the right context current and with        */
/* device memory and streams of that context's device                   */
/* ------------------------------------------------------------------ */

/* The device of the context current on this thread, -1 if none. */
API int mock_cuda_current_device(void) { return current ? current->dev : -1; }
/* The context generation of device d (bumped when its context is destroyed). */
API unsigned mock_cuda_ctx_gen(int d) { return d >= 0 && d < MAXDEV ? ctxgen[d] : 0u; }

/* 1 if [p, p+n) lies inside one live allocation of the current device. */
API int mock_cuda_valid_range(CUdeviceptr p, size_t n) {
  int ok;
  pthread_mutex_lock(&mu);
  ok = n == 0 || find(p, n) != NULL;
  pthread_mutex_unlock(&mu);
  return ok;
}

/* 1 if s is NULL (the default stream) or a live stream of the current device. */
API int mock_cuda_stream_ok(void *s) { return stream_ok(s); }
