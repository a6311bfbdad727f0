/*
** mock_libcurand.c: a fake cuRAND for kjit's tests (libmockcurand.so,
** loaded with KJIT_CURAND=<path> next to the fake driver, mock_libcuda.c,
** whose device pointers are host addresses). It implements the entry points
** src/libs/rand_cuda.c loads, so kjit.cuda.random.generator's device path
** (and its behaviour across cuda.close()) runs without a GPU.
**
** The numbers are not cuRAND's: number i of a generator's stream (its
** offset counts the 32-bit draws made) is a SplitMix64 hash of the kind,
** seed and position, the same for a host generator (curandCreateGeneratorHost)
** and a device one, as cuRAND promises for its own. So a test can compare a
** device fill with a host fill of the same seed and offset.
**
** Stricter than cuRAND where that catches bugs in kjit: every call on a
** device generator checks that the context current on the calling thread is
** the generator's device's and of the same generation (a generator made
** before cuda.close() belongs to a context the close destroyed), that its
** stream is a live one, and that the output lies inside one live allocation
** (through the mock driver's mock_cuda_* functions).
**
** Environment: MOCK_CURAND_REPORT=path: at exit, calls=, bad_handles=,
** bad_contexts=, bad_ranges=, bad_streams=, device_creates=,
** host_creates=, destroys=, live= (generators not destroyed).
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define MAGIC 0x43524e44U

enum { OK = 0, NOT_INITIALIZED = 101, ALLOCATION_FAILED = 102, TYPE_ERROR = 103,
       LENGTH_NOT_MULTIPLE = 105, LAUNCH_FAILURE = 201 };

typedef struct Gen {
  unsigned magic;
  int host, type, dev;
  unsigned gen;            /* the mock driver's context generation when made */
  uint64_t seed, pos;
  unsigned dims;
  void *stream;
} Gen;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int (*cur_dev)(void);
static int (*valid_range)(uint64_t, size_t);
static int (*stream_ok)(void *);
static unsigned (*ctx_gen)(int dev);
static struct { long calls, bad_handles, bad_contexts, bad_ranges, bad_streams, device_creates,
                host_creates, destroys, live; } st;

static void report(void) {
  const char *path = getenv("MOCK_CURAND_REPORT");
  FILE *f;
  if (!path || !*path || !(f = fopen(path, "w"))) return;
  fprintf(f, "calls=%ld\nbad_handles=%ld\nbad_contexts=%ld\nbad_ranges=%ld\nbad_streams=%ld\n"
          "device_creates=%ld\nhost_creates=%ld\ndestroys=%ld\nlive=%ld\ndriver_checks=%d\n",
          st.calls, st.bad_handles, st.bad_contexts, st.bad_ranges, st.bad_streams,
          st.device_creates, st.host_creates, st.destroys, st.live,
          cur_dev && valid_range && stream_ok && ctx_gen);
  fclose(f);
}

static void setup(void) {
  /* the mock driver kjit loaded (KJIT_LIBCUDA), already in the process */
  const char *e = getenv("KJIT_LIBCUDA");
  void *drv = e && *e ? dlopen(e, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (drv) {
    *(void **)&cur_dev = dlsym(drv, "mock_cuda_current_device");
    *(void **)&valid_range = dlsym(drv, "mock_cuda_valid_range");
    *(void **)&stream_ok = dlsym(drv, "mock_cuda_stream_ok");
    *(void **)&ctx_gen = dlsym(drv, "mock_cuda_ctx_gen");
  }
  atexit(report);
}

static void count(long *c) {
  pthread_mutex_lock(&mu);
  ++*c;
  pthread_mutex_unlock(&mu);
}

/* The checks every call on a generator makes; out/bytes: its output. */
static int enter(Gen *g, const void *out, size_t bytes) {
  pthread_once(&once, setup);
  count(&st.calls);
  if (g == NULL || g->magic != MAGIC) { count(&st.bad_handles); return NOT_INITIALIZED; }
  if (g->host) return OK;
  if ((cur_dev && cur_dev() != g->dev) || (ctx_gen && ctx_gen(g->dev) != g->gen)) {
    count(&st.bad_contexts);
    return LAUNCH_FAILURE;
  }
  if (stream_ok && !stream_ok(g->stream)) { count(&st.bad_streams); return LAUNCH_FAILURE; }
  if (out && bytes && valid_range && !valid_range((uint64_t)(uintptr_t)out, bytes)) {
    count(&st.bad_ranges);
    return LAUNCH_FAILURE;
  }
  return OK;
}

static int create(Gen **out, int type, int host) {
  pthread_once(&once, setup);
  if (type != 161 && type != 101 && type != 121 && type != 201) return TYPE_ERROR;
  if (!host && cur_dev && cur_dev() < 0) return NOT_INITIALIZED;   /* no current context */
  Gen *g = calloc(1, sizeof *g);
  if (g == NULL) return ALLOCATION_FAILED;
  g->magic = MAGIC;
  g->host = host;
  g->type = type;
  g->dev = host ? -1 : cur_dev ? cur_dev() : 0;
  g->gen = host || !ctx_gen ? 0 : ctx_gen(g->dev);
  g->dims = 1;
  *out = g;
  count(host ? &st.host_creates : &st.device_creates);
  count(&st.live);
  return OK;
}

API int curandCreateGenerator(Gen **g, int type) { return create(g, type, 0); }
API int curandCreateGeneratorHost(Gen **g, int type) { return create(g, type, 1); }

/* Destroying is allowed on a dead context's generator too (cuRAND would
** touch the dead context: kjit must not call it then, and the report's
** destroys and live show whether it did). */
API int curandDestroyGenerator(Gen *g) {
  pthread_once(&once, setup);
  if (g == NULL || g->magic != MAGIC) { count(&st.bad_handles); return NOT_INITIALIZED; }
  if (!g->host && ctx_gen && ctx_gen(g->dev) != g->gen) count(&st.bad_contexts);
  g->magic = 0;
  free(g);
  count(&st.destroys);
  pthread_mutex_lock(&mu);
  st.live--;
  pthread_mutex_unlock(&mu);
  return OK;
}

API int curandSetPseudoRandomGeneratorSeed(Gen *g, unsigned long long seed) {
  int r = enter(g, NULL, 0);
  if (r == OK) g->seed = seed;
  return r;
}

API int curandSetGeneratorOffset(Gen *g, unsigned long long offset) {
  int r = enter(g, NULL, 0);
  if (r == OK) g->pos = offset;
  return r;
}

API int curandSetQuasiRandomGeneratorDimensions(Gen *g, unsigned dims) {
  int r = enter(g, NULL, 0);
  if (r == OK) g->dims = dims;
  return r;
}

API int curandSetStream(Gen *g, void *stream) {
  pthread_once(&once, setup);
  if (g == NULL || g->magic != MAGIC) { count(&st.bad_handles); return NOT_INITIALIZED; }
  g->stream = stream;
  return enter(g, NULL, 0);
}

API int curandGetVersion(int *v) { *v = 99999; return OK; }

/* The next 32 bits of g's stream. */
static uint32_t next32(Gen *g) {
  uint64_t z = g->seed * 0x9E3779B97F4A7C15ULL + g->pos++ + ((uint64_t)g->type << 56);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* in (0, 1], as cuRAND's uniforms */
static double unit(Gen *g) { return ((double)next32(g) + 1.0) / 4294967296.0; }

API int curandGenerate(Gen *g, unsigned *out, size_t n) {
  int r = enter(g, out, n * sizeof *out);
  if (r) return r;
  for (size_t i = 0; i < n; i++) out[i] = next32(g);
  return OK;
}

API int curandGenerateUniform(Gen *g, float *out, size_t n) {
  int r = enter(g, out, n * sizeof *out);
  if (r) return r;
  for (size_t i = 0; i < n; i++) out[i] = (float)unit(g);
  return OK;
}

API int curandGenerateUniformDouble(Gen *g, double *out, size_t n) {
  int r = enter(g, out, n * sizeof *out);
  if (r) return r;
  for (size_t i = 0; i < n; i++) out[i] = unit(g);
  return OK;
}

/* Box-Muller pairs; cuRAND refuses an odd count for its pseudo-random kinds */
static int normals(Gen *g, void *out, size_t n, int dbl, double m, double s, int lognormal) {
  int r = enter(g, out, n * (dbl ? 8 : 4));
  if (r) return r;
  if (n % 2 && g->type != 201) return LENGTH_NOT_MULTIPLE;
  for (size_t i = 0; i < n; i += 2) {
    double u1 = unit(g), u2 = unit(g), rad = sqrt(-2.0 * log(u1));
    double z[2] = { rad * cos(6.283185307179586 * u2), rad * sin(6.283185307179586 * u2) };
    for (size_t k = 0; k < 2 && i + k < n; k++) {
      double x = m + s * z[k];
      if (lognormal) x = exp(x);
      if (dbl) ((double *)out)[i + k] = x;
      else ((float *)out)[i + k] = (float)x;
    }
  }
  return OK;
}

API int curandGenerateNormal(Gen *g, float *out, size_t n, float m, float s) {
  return normals(g, out, n, 0, m, s, 0);
}
API int curandGenerateNormalDouble(Gen *g, double *out, size_t n, double m, double s) {
  return normals(g, out, n, 1, m, s, 0);
}
API int curandGenerateLogNormal(Gen *g, float *out, size_t n, float m, float s) {
  return normals(g, out, n, 0, m, s, 1);
}
API int curandGenerateLogNormalDouble(Gen *g, double *out, size_t n, double m, double s) {
  return normals(g, out, n, 1, m, s, 1);
}

/* Knuth's method (lambda small in the tests) */
API int curandGeneratePoisson(Gen *g, unsigned *out, size_t n, double lambda) {
  int r = enter(g, out, n * sizeof *out);
  if (r) return r;
  for (size_t i = 0; i < n; i++) {
    double l = exp(-lambda), p = 1.0;
    unsigned k = 0;
    do { k++; p *= unit(g); } while (p > l && k < 10000);
    out[i] = k - 1;
  }
  return OK;
}
