/*
** fft_cuda.c: kjit.cuda.fft on the GPU, through cuFFT loaded with dlopen.
**
** A KFftDesc becomes one or more cuFFT "advanced layout" plans
** (cufftMakePlanMany64), because cuFFT has one batch dimension where FFTW
** has several (fft_host.c):
**   - the transformed axes are split into runs of consecutive axes (fftn
**     over {1, 3} is two runs); each run is one plan, the first reads the
**     input, the others work in place on the output (c2c is separable);
**   - for a run, the axes after it (T elements) are the batch: stride T,
**     distance 1; the axes before it (L) are a loop over pointer offsets,
**     or folded into the batch when T is 1 (distance: the run's size).
** Real transforms (rfft, irfft, rfftn, irfftn): the real transform along
** the last axis is one plan, the other axes c2c runs (kcufft_make).
**
** Scaling (norm) is a two-line PTX kernel, loaded once per device; resizing
** (the n and s options, irfft's copy of its input that c2r may overwrite)
** uses cuMemcpy2DAsync from the driver kjit already loaded (cudadrv.c).
** cuFFT runs on the primary context kjit makes current (kcu_ensure), with the
** kjit stream given.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lauxlib.h"
#include "libs/fft_cuda.h"
#include "libs/libfind.h"

typedef int cufftHandle, cufftResult;
enum { CUFFT_R2C = 0x2a, CUFFT_C2R = 0x2c, CUFFT_C2C = 0x29,
       CUFFT_D2Z = 0x6a, CUFFT_Z2D = 0x6c, CUFFT_Z2Z = 0x69 };
enum { CUFFT_FORWARD = -1, CUFFT_INVERSE = 1 };

#define FFT_API(X) \
  X(Create, "cufftCreate", (cufftHandle *p)) \
  X(MakePlanMany64, "cufftMakePlanMany64", (cufftHandle p, int rank, long long *n, \
    long long *inembed, long long istride, long long idist, long long *onembed, \
    long long ostride, long long odist, int type, long long batch, size_t *work)) \
  X(SetStream, "cufftSetStream", (cufftHandle p, void *stream)) \
  X(ExecC2C, "cufftExecC2C", (cufftHandle p, void *in, void *out, int dir)) \
  X(ExecZ2Z, "cufftExecZ2Z", (cufftHandle p, void *in, void *out, int dir)) \
  X(ExecR2C, "cufftExecR2C", (cufftHandle p, void *in, void *out)) \
  X(ExecD2Z, "cufftExecD2Z", (cufftHandle p, void *in, void *out)) \
  X(ExecC2R, "cufftExecC2R", (cufftHandle p, void *in, void *out)) \
  X(ExecZ2D, "cufftExecZ2D", (cufftHandle p, void *in, void *out)) \
  X(Destroy, "cufftDestroy", (cufftHandle p)) \
  X(GetVersion, "cufftGetVersion", (int *v))

#define X_FIELD(f, sym, params) cufftResult (*f) params;
static struct { FFT_API(X_FIELD) } cf;
#undef X_FIELD

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[600], backend[600];

/* cuMemcpy2DAsync_v2, from the driver cudadrv.c opened */
typedef struct {
  size_t srcXInBytes, srcY; int srcMemoryType; const void *srcHost;
  KCuDevPtr srcDevice; void *srcArray; size_t srcPitch;
  size_t dstXInBytes, dstY; int dstMemoryType; void *dstHost;
  KCuDevPtr dstDevice; void *dstArray; size_t dstPitch;
  size_t WidthInBytes, Height;
} CopyDesc;
static int (*memcpy2d)(const CopyDesc *c, KCuStream s);

static void load(void) {
  static const char *const names[] = { "libcufft.so.12", "libcufft.so.11", "libcufft.so", NULL };
  static const kl_spec spec = { "cuFFT", "KJIT_CUFFT", names, NULL, NULL, NULL };
  char path[400];
  void *h = kl_open(&spec, path, sizeof path, why, sizeof why);
  if (h == NULL) return;
#define X_SYM(f, sym, params) \
  if ((*(void **)&cf.f = dlsym(h, sym)) == NULL) { \
    snprintf(why, sizeof why, "%s has no %s (cuFFT too old?)", path, sym); \
    return; \
  }
  FFT_API(X_SYM)
#undef X_SYM
  int v = 0;
  cf.GetVersion(&v);
  snprintf(backend, sizeof backend, "cuFFT %d.%d.%d (%s)", v / 1000, v / 100 % 10, v % 100, path);
  loaded = 1;
}

/* The driver's cuMemcpy2DAsync_v2, once cudadrv.c has loaded the driver
** (RTLD_NOLOAD: the same library, never a second one). */
static void find_memcpy2d(void) {
  if (memcpy2d) return;
  const char *drvpath = getenv("KJIT_LIBCUDA");
  void *d = dlopen(drvpath && *drvpath ? drvpath : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (d) {
    *(void **)&memcpy2d = dlsym(d, "cuMemcpy2DAsync_v2");
    dlclose(d);   /* drops the reference NOLOAD added; cudadrv.c keeps its own */
  }
}

int kcufft_available(const char **w) {
  pthread_once(&once, load);
  if (!loaded && w) *w = why;
  return loaded;
}

const char *kcufft_backend(void) {
  pthread_once(&once, load);
  return loaded ? backend : why;
}

static const char *status_name(cufftResult r) {
  static const char *const names[] = {
    "CUFFT_SUCCESS", "CUFFT_INVALID_PLAN", "CUFFT_ALLOC_FAILED", "CUFFT_INVALID_TYPE",
    "CUFFT_INVALID_VALUE", "CUFFT_INTERNAL_ERROR", "CUFFT_EXEC_FAILED", "CUFFT_SETUP_FAILED",
    "CUFFT_INVALID_SIZE", "CUFFT_UNALIGNED_DATA", "CUFFT_INCOMPLETE_PARAMETER_LIST",
    "CUFFT_INVALID_DEVICE", "CUFFT_PARSE_ERROR", "CUFFT_NO_WORKSPACE", "CUFFT_NOT_IMPLEMENTED",
    "CUFFT_LICENSE_ERROR", "CUFFT_NOT_SUPPORTED" };
  return r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : "unknown cuFFT status";
}

static void check(lua_State *L, cufftResult r, const char *what, const char *call) {
  if (r != 0) luaL_error(L, "%s: %s: %s (%d)", what, call, status_name(r), r);
}

static void need(lua_State *L, const char *what) {
  if (!kcufft_available(NULL)) luaL_error(L, "%s: cuFFT is not available: %s", what, why);
}

/* Which buffers a sub-plan reads and writes. */
enum { IN_OUT, OUT_OUT, IN_IN };

typedef struct Sub {
  cufftHandle h;
  int type, dir;             /* CUFFT_* type; CUFFT_FORWARD or _INVERSE (c2c) */
  int64_t loops;             /* executions, at these byte steps */
  int64_t in_step, out_step;
  int mode;                  /* IN_OUT, OUT_OUT or IN_IN */
} Sub;

struct KCufft {
  KFftDesc d;
  int nsub;
  Sub sub[4];
};

void kcufft_destroy(KCufft *p) {
  if (p == NULL) return;
  for (int k = 0; k < p->nsub; k++) cf.Destroy(p->sub[k].h);
  free(p);
}

/* Adds the plan of axes a0..a1 (consecutive) to p: the source side has
** shape in[], the destination out[] (elements of ies and oes bytes). */
static void add_sub(lua_State *L, KCufft *p, int a0, int a1, const int64_t *in,
                    const int64_t *out, size_t ies, size_t oes, int type, int dir, int mode,
                    const char *what) {
  const KFftDesc *d = &p->d;
  long long n[3], inembed[3], onembed[3], L0 = 1, T = 1, isz = 1, osz = 1;
  int rank = a1 - a0 + 1;
  for (int k = 0; k < a0; k++) L0 *= in[k];
  for (int k = a1 + 1; k < d->rank; k++) T *= in[k];
  for (int k = a0; k <= a1; k++) {
    n[k - a0] = d->n[k];
    inembed[k - a0] = in[k];
    onembed[k - a0] = out[k];
    isz *= in[k];
    osz *= out[k];
  }
  Sub *s = &p->sub[p->nsub];
  long long batch, idist, odist;
  if (T == 1) { batch = L0; idist = isz; odist = osz; s->loops = 1; }
  else { batch = T; idist = odist = 1; s->loops = L0; }
  s->in_step = (int64_t)(isz * T * (long long)ies);
  s->out_step = (int64_t)(osz * T * (long long)oes);
  s->type = type;
  s->dir = dir;
  s->mode = mode;
  size_t work = 0;
  cufftResult r = cf.Create(&s->h);
  if (r != 0) { kcufft_destroy(p); check(L, r, what, "cufftCreate"); }
  p->nsub++;
  r = cf.MakePlanMany64(s->h, rank, n, inembed, T, idist, onembed, T, odist, type, batch, &work);
  if (r != 0) { kcufft_destroy(p); check(L, r, what, "cufftMakePlanMany64"); }
}

/* The runs of consecutive axes among d->axes[from..to), each one plan. */
static void add_runs(lua_State *L, KCufft *p, int from, int to, const int64_t *shape, size_t es,
                     int type, int dir, int mode, const char *what) {
  const KFftDesc *d = &p->d;
  for (int a = from; a < to;) {
    int a0 = d->axes[a], a1 = a0;
    while (a + 1 < to && d->axes[a + 1] == a1 + 1) { a++; a1++; }
    a++;
    add_sub(L, p, a0, a1, shape, shape, es, es, type, dir, mode, what);
    mode = mode == IN_OUT ? OUT_OUT : mode;   /* the runs after the first: in place */
  }
}

/* c2c: one plan per run of consecutive axes, the first in -> out, the
** others in place on out. r2c (rfft, rfftn): the real transform over the
** run of consecutive axes that ends with the last transformed axis, one
** multi-axis plan in -> out (rank up to 3: cuFFT's own 3-D r2c of a
** 256^3 cube took a third of the time of a rank-1 r2c followed by a strided
** 2-D c2c pass, measured on an H100), then the other axes as c2c forward
** runs in place on out. c2r: the other axes first, c2c inverse in place on
** in (always kjit's scratch copy: fft_lua.c), then the real transform
** along the last axis alone, in -> out. (Kept rank 1 on purpose: NumPy's
** irfftn is the inverse c2c over the other axes and then irfft on the last,
** which fixes its result for input that is not Hermitian-symmetric; a
** multi-axis c2r plan leaves that input's result to cuFFT.) */
KCufft *kcufft_make(lua_State *L, const KFftDesc *d, const char *what) {
  int64_t in[3], out[3];
  size_t es = d->dbl ? 8 : 4;
  need(L, what);
  kfft_sides(d, in, out);
  int c2c = d->dbl ? CUFFT_Z2Z : CUFFT_C2C;
  KCufft *p = calloc(1, sizeof *p);
  if (p == NULL) luaL_error(L, "%s: not enough memory", what);
  p->d = *d;
  int last = d->axes[d->naxes - 1];
  if (d->kind == KFFT_R2C) {
    int run = 1;   /* the transformed axes just before `last`, consecutive */
    while (run < 3 && run < d->naxes && d->axes[d->naxes - 1 - run] == last - run) run++;
    add_sub(L, p, last - run + 1, last, in, out, es, 2 * es, d->dbl ? CUFFT_D2Z : CUFFT_R2C, 0,
            IN_OUT, what);
    add_runs(L, p, 0, d->naxes - run, out, 2 * es, c2c, CUFFT_FORWARD, OUT_OUT, what);
  } else if (d->kind == KFFT_C2R) {
    add_runs(L, p, 0, d->naxes - 1, in, 2 * es, c2c, CUFFT_INVERSE, IN_IN, what);
    add_sub(L, p, last, last, in, out, 2 * es, es, d->dbl ? CUFFT_Z2D : CUFFT_C2R, 0, IN_OUT,
            what);
  } else {
    add_runs(L, p, 0, d->naxes, in, 2 * es, c2c,
             d->kind == KFFT_INV ? CUFFT_INVERSE : CUFFT_FORWARD, IN_OUT, what);
  }
  return p;
}

void kcufft_exec(lua_State *L, KCufft *p, KCuDevPtr in, KCuDevPtr out, KCuStream st,
                 const char *what) {
  for (int k = 0; k < p->nsub; k++) {
    Sub *s = &p->sub[k];
    check(L, cf.SetStream(s->h, st), what, "cufftSetStream");
    KCuDevPtr src = s->mode == OUT_OUT ? out : in, dst = s->mode == IN_IN ? in : out;
    int64_t step_in = s->mode == OUT_OUT ? s->out_step : s->in_step;
    int64_t step_out = s->mode == IN_IN ? s->in_step : s->out_step;
    for (int64_t i = 0; i < s->loops; i++) {
      void *a = (void *)(uintptr_t)(src + (KCuDevPtr)(i * step_in));
      void *b = (void *)(uintptr_t)(dst + (KCuDevPtr)(i * step_out));
      cufftResult r;
      const char *call;
      switch (s->type) {
        case CUFFT_R2C: call = "cufftExecR2C"; r = cf.ExecR2C(s->h, a, b); break;
        case CUFFT_D2Z: call = "cufftExecD2Z"; r = cf.ExecD2Z(s->h, a, b); break;
        case CUFFT_C2R: call = "cufftExecC2R"; r = cf.ExecC2R(s->h, a, b); break;
        case CUFFT_Z2D: call = "cufftExecZ2D"; r = cf.ExecZ2D(s->h, a, b); break;
        case CUFFT_C2C: call = "cufftExecC2C"; r = cf.ExecC2C(s->h, a, b, s->dir); break;
        default: call = "cufftExecZ2Z"; r = cf.ExecZ2Z(s->h, a, b, s->dir); break;
      }
      check(L, r, what, call);
    }
  }
}

/* ---- scaling: a grid-stride loop, x[i] *= s ------------------------------ */

static const char scale_ptx[] =
  ".version 7.0\n.target sm_%d\n.address_size 64\n"
  ".visible .entry kjit_fft_scale(.param .u64 p, .param .u64 n, .param .%s s)\n{\n"
  "  .reg .pred %%p<2>;\n  .reg .b32 %%r<5>;\n  .reg .b64 %%rd<9>;\n  .reg .%s %%f<3>;\n"
  "  ld.param.u64 %%rd1, [p];\n  ld.param.u64 %%rd2, [n];\n  ld.param.%s %%f1, [s];\n"
  "  cvta.to.global.u64 %%rd1, %%rd1;\n"
  "  mov.u32 %%r1, %%ctaid.x;\n  mov.u32 %%r2, %%ntid.x;\n  mov.u32 %%r3, %%tid.x;\n"
  "  mov.u32 %%r4, %%nctaid.x;\n"
  "  mul.wide.u32 %%rd3, %%r1, %%r2;\n  cvt.u64.u32 %%rd4, %%r3;\n  add.u64 %%rd3, %%rd3, %%rd4;\n"
  "  mul.wide.u32 %%rd5, %%r4, %%r2;\n"
  "LOOP:\n  setp.ge.u64 %%p1, %%rd3, %%rd2;\n  @%%p1 bra DONE;\n"
  "  shl.b64 %%rd6, %%rd3, %d;\n  add.u64 %%rd7, %%rd1, %%rd6;\n"
  "  ld.global.%s %%f2, [%%rd7];\n  mul.%s %%f2, %%f2, %%f1;\n  st.global.%s [%%rd7], %%f2;\n"
  "  add.u64 %%rd3, %%rd3, %%rd5;\n  bra LOOP;\nDONE:\n  ret;\n}\n";

#define MAXDEV 64
static pthread_mutex_t scale_mu = PTHREAD_MUTEX_INITIALIZER;
static KCuFunction scale_fn[MAXDEV][2];
static unsigned scale_gen[MAXDEV][2];   /* kcu_gen when loaded: cuda.close() drops them */

void kcufft_scale(lua_State *L, KCuDevPtr x, int64_t count, int dbl, double s, KCuStream st,
                  const char *what) {
  (void)what;
  if (count == 0 || s == 1.0) return;
  int dev = kcu_device() % MAXDEV;
  pthread_mutex_lock(&scale_mu);
  KCuFunction f = kcu_stale(0, dev, scale_gen[dev][dbl]) ? NULL : scale_fn[dev][dbl];
  pthread_mutex_unlock(&scale_mu);
  if (f == NULL) {
    char ptx[2048];
    int cc = kcu_compute_capability(L);
    const char *t = dbl ? "f64" : "f32";
    snprintf(ptx, sizeof ptx, scale_ptx, cc > 80 ? 80 : cc, t, t, t, dbl ? 3 : 2, t, t, t);
    KCuModule m = kcu_module_load(L, ptx);   /* kept for the process */
    f = kcu_get_function(L, m, "kjit_fft_scale");
    pthread_mutex_lock(&scale_mu);
    scale_fn[dev][dbl] = f;
    scale_gen[dev][dbl] = kcu_gen(0, dev);
    pthread_mutex_unlock(&scale_mu);
  }
  uint64_t n = (uint64_t)count;
  float sf = (float)s;
  void *params[3] = { &x, &n, dbl ? (void *)&s : (void *)&sf };
  unsigned block[3] = { 256, 1, 1 }, grid[3] = { 1, 1, 1 };
  uint64_t blocks = (n + 255) / 256;
  grid[0] = (unsigned)(blocks > 65535 ? 65535 : blocks);
  kcu_launch(L, f, grid, block, 0, st, params);
}

/* ---- resizing --------------------------------------------------------------- */

static void copy2d(lua_State *L, KCuDevPtr dst, size_t dpitch, KCuDevPtr src, size_t spitch,
                   size_t width, size_t height, KCuStream st, const char *what) {
  CopyDesc c;
  if (width == 0 || height == 0) return;
  find_memcpy2d();
  if (memcpy2d == NULL)
    luaL_error(L, "%s: the CUDA driver has no cuMemcpy2DAsync_v2 (needed by the n and s "
               "options and by irfft)", what);
  memset(&c, 0, sizeof c);
  c.srcMemoryType = c.dstMemoryType = 2;   /* CU_MEMORYTYPE_DEVICE */
  c.srcDevice = src; c.srcPitch = spitch;
  c.dstDevice = dst; c.dstPitch = dpitch;
  c.WidthInBytes = width; c.Height = height;
  int r = memcpy2d(&c, st);
  if (r != 0) luaL_error(L, "%s: cuMemcpy2DAsync: CUDA error %d", what, r);
}

void kcufft_resize(lua_State *L, KCuDevPtr dst, const int64_t *dst_shape, KCuDevPtr src,
                   const int64_t *src_shape, int ndim, size_t esize, KCuStream st,
                   const char *what) {
  int64_t cur[KJIT_MAXDIMS];
  int last = -1;
  need(L, what);
  for (int k = 0; k < ndim; k++) {
    cur[k] = src_shape[k];
    if (src_shape[k] != dst_shape[k]) last = k;
  }
  if (last < 0) {   /* the same shape: one plain copy */
    size_t bytes = esize;
    for (int k = 0; k < ndim; k++) bytes *= (size_t)src_shape[k];
    copy2d(L, dst, bytes, src, bytes, bytes, 1, st, what);
    return;
  }
  for (int k = 0; k <= last; k++) {
    if (cur[k] == dst_shape[k]) continue;
    int64_t outer = 1, inner = 1;
    for (int j = 0; j < k; j++) outer *= cur[j];
    for (int j = k + 1; j < ndim; j++) inner *= cur[j];
    KCuDevPtr to = dst;
    int64_t next[KJIT_MAXDIMS];
    memcpy(next, cur, sizeof next);
    next[k] = dst_shape[k];
    if (k != last) {   /* a zeroed scratch array of the intermediate shape */
      int64_t bytes = (int64_t)esize;
      for (int j = 0; j < ndim; j++) bytes *= next[j];
      KDevArray *t = kcu_push_devarray(L, KJIT_U8, 1, &bytes);   /* stays on the stack */
      to = t->ptr;
    }
    int64_t m = cur[k] < dst_shape[k] ? cur[k] : dst_shape[k];
    copy2d(L, to, (size_t)(next[k] * inner) * esize, src, (size_t)(cur[k] * inner) * esize,
           (size_t)(m * inner) * esize, (size_t)outer, st, what);
    src = to;
    memcpy(cur, next, sizeof cur);
  }
}
