/*
** blas_cuda.c: kbl_call on device memory with cuBLAS (blas.h).
**
** Loading: libcublas.so.13 (or .so.12) is opened at the first call through
** libs/libfind.c (KJIT_CUBLAS, the loader path, CUDA_HOME, /usr/local/cuda,
** pip's nvidia-* wheels); no cuBLAS header or library is needed to build.
** The few entry points are declared here: the 64-bit-index API (the *_64
** functions, cuBLAS 12 and later), so no dimension needs an int.
**
** Handles: one per (OS thread, device), made at first use (cublasCreate
** makes the handle for the context current on the thread: the caller has
** made the device's primary context current, cudadrv.c's kcu_ensure), and
** destroyed when the thread exits. The stream is set on the handle at
** every call (cublasSetStream is a store), so work is queued on the
** caller's kjit stream and the handle can be shared by every stream.
**
** Row-major: a row-major matrix is its transpose in column-major, so each
** call is the column-major one on the transposes, written out per
** operation below (gemm: C^T = op(B)^T op(A)^T, i.e. A and B swap places,
** m and n too; trsm from the left becomes trsm from the right with the
** triangle flipped).
**
** Results of dot, nrm2, asum, iamax come back to host memory (the default
** pointer mode): cuBLAS waits for them, so those calls return a number.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/cudadrv.h"
#include "libs/blas.h"
#include "libs/libfind.h"

typedef int st_t;          /* cublasStatus_t */
typedef void *hnd_t;       /* cublasHandle_t */
typedef const void *cp;    /* const float * or const double *, host or device */
typedef void *vp;

enum { OP_N = 0, OP_T = 1, FILL_LOWER = 0, FILL_UPPER = 1, DIAG_NON_UNIT = 0, DIAG_UNIT = 1,
       SIDE_LEFT = 0, SIDE_RIGHT = 1 };

typedef st_t (*gemm_t)(hnd_t, int, int, int64_t, int64_t, int64_t, cp, cp, int64_t, cp, int64_t,
                       cp, vp, int64_t);
typedef st_t (*gemm_sb_t)(hnd_t, int, int, int64_t, int64_t, int64_t, cp, cp, int64_t, long long,
                          cp, int64_t, long long, cp, vp, int64_t, long long, int64_t);
typedef st_t (*gemv_t)(hnd_t, int, int64_t, int64_t, cp, cp, int64_t, cp, int64_t, cp, vp, int64_t);
typedef st_t (*dot_t)(hnd_t, int64_t, cp, int64_t, cp, int64_t, vp);
typedef st_t (*axpy_t)(hnd_t, int64_t, cp, cp, int64_t, vp, int64_t);
typedef st_t (*scal_t)(hnd_t, int64_t, cp, vp, int64_t);
typedef st_t (*red_t)(hnd_t, int64_t, cp, int64_t, vp);              /* nrm2, asum */
typedef st_t (*iamax_t)(hnd_t, int64_t, cp, int64_t, int64_t *);
typedef st_t (*geam_t)(hnd_t, int, int, int64_t, int64_t, cp, cp, int64_t, cp, cp, int64_t, vp,
                       int64_t);
typedef st_t (*trsm_t)(hnd_t, int, int, int, int, int64_t, int64_t, cp, cp, int64_t, vp, int64_t);

/* X(field, type, single-precision symbol, double-precision symbol) */
#define CB_API(X)                                                            \
  X(gemm, gemm_t, "cublasSgemm_v2_64", "cublasDgemm_v2_64")                  \
  X(gemm_sb, gemm_sb_t, "cublasSgemmStridedBatched_64", "cublasDgemmStridedBatched_64") \
  X(gemv, gemv_t, "cublasSgemv_v2_64", "cublasDgemv_v2_64")                  \
  X(dot, dot_t, "cublasSdot_v2_64", "cublasDdot_v2_64")                      \
  X(axpy, axpy_t, "cublasSaxpy_v2_64", "cublasDaxpy_v2_64")                  \
  X(scal, scal_t, "cublasSscal_v2_64", "cublasDscal_v2_64")                  \
  X(nrm2, red_t, "cublasSnrm2_v2_64", "cublasDnrm2_v2_64")                   \
  X(asum, red_t, "cublasSasum_v2_64", "cublasDasum_v2_64")                   \
  X(iamax, iamax_t, "cublasIsamax_v2_64", "cublasIdamax_v2_64")              \
  X(geam, geam_t, "cublasSgeam_64", "cublasDgeam_64")                        \
  X(trsm, trsm_t, "cublasStrsm_v2_64", "cublasDtrsm_v2_64")

static struct {
  pthread_once_t once;
  pthread_key_t key;
  void *lib;
  char why[512];
  char version[64];
  st_t (*create)(hnd_t *);
  st_t (*destroy)(hnd_t);
  st_t (*set_stream)(hnd_t, void *);
  const char *(*status_name)(st_t);
  const char *(*status_string)(st_t);
#define CB_FIELD(f, t, s, d) t f[2]; const char *f##_name[2];
  CB_API(CB_FIELD)
#undef CB_FIELD
} cb = { PTHREAD_ONCE_INIT };

/* this thread's handles, by device (cudadrv.c's KCU_MAXDEV) */
#define MAXDEV 64
typedef struct { hnd_t h[MAXDEV]; unsigned gen[MAXDEV]; } handles_t;

static void destroy_handles(void *p) {
  handles_t *t = p;
  for (int i = 0; i < MAXDEV; i++)
    if (t->h[i] && !kcu_stale(0, i, t->gen[i])) cb.destroy(t->h[i]);
  free(t);
}

/* cuda.close() (kcu_on_close): the closing thread's handle goes before its
** context; other threads' handles are forgotten by handle_for (their
** context is gone: nothing left to destroy them in). */
static void close_handle(int dev) {
  handles_t *t = pthread_getspecific(cb.key);
  if (t && dev < MAXDEV && t->h[dev] && !kcu_stale(0, dev, t->gen[dev])) cb.destroy(t->h[dev]);
  if (t && dev < MAXDEV) t->h[dev] = NULL;
}

static void load_cublas(void) {
  static const char *const sonames[] = { "libcublas.so.13", "libcublas.so.12", NULL };
  static const kl_spec spec = { "cuBLAS", "KJIT_CUBLAS", sonames, NULL, NULL, NULL };
  char path[512];
  cb.lib = kl_open(&spec, path, sizeof path, cb.why, sizeof cb.why);
  if (cb.lib == NULL) return;
  const char *missing = NULL;
#define SYM(dst, name) if ((*(void **)&(dst) = dlsym(cb.lib, name)) == NULL && !missing) missing = name;
  SYM(cb.create, "cublasCreate_v2");
  SYM(cb.destroy, "cublasDestroy_v2");
  SYM(cb.set_stream, "cublasSetStream_v2");
#define CB_SYM(f, t, s, d) SYM(cb.f[0], s) SYM(cb.f[1], d) cb.f##_name[0] = s; cb.f##_name[1] = d;
  CB_API(CB_SYM)
#undef CB_SYM
#undef SYM
  if (missing) {
    snprintf(cb.why, sizeof cb.why, "%.300s has no %.100s (cuBLAS 12 or later is needed)", path, missing);
    dlclose(cb.lib);
    cb.lib = NULL;
    return;
  }
  *(void **)&cb.status_name = dlsym(cb.lib, "cublasGetStatusName");
  *(void **)&cb.status_string = dlsym(cb.lib, "cublasGetStatusString");
  int v[3] = { 0, 0, 0 };
  st_t (*prop)(int, int *);
  *(void **)&prop = dlsym(cb.lib, "cublasGetProperty");
  for (int i = 0; prop && i < 3; i++) prop(i, &v[i]);   /* MAJOR, MINOR, PATCH_LEVEL */
  snprintf(cb.version, sizeof cb.version, "cuBLAS %d.%d.%d", v[0], v[1], v[2]);
  if (pthread_key_create(&cb.key, destroy_handles) != 0) {
    snprintf(cb.why, sizeof cb.why, "cannot make a thread-local key for cuBLAS handles");
    cb.lib = NULL;
  }
}

static int loaded(char *err, size_t errsize) {
  pthread_once(&cb.once, load_cublas);
  if (cb.lib == NULL) snprintf(err, errsize, "%s", cb.why);
  return cb.lib != NULL;
}

const char *kbl_cuda_backend(char *err, size_t errsize) {
  return loaded(err, errsize) ? cb.version : NULL;
}

/* "CUBLAS_STATUS_NOT_INITIALIZED (the library was not initialized)" */
static void status_text(st_t s, char *buf, size_t n) {
  static const struct { int s; const char *name; } known[] = {
    { 1, "CUBLAS_STATUS_NOT_INITIALIZED" }, { 3, "CUBLAS_STATUS_ALLOC_FAILED" },
    { 7, "CUBLAS_STATUS_INVALID_VALUE" }, { 8, "CUBLAS_STATUS_ARCH_MISMATCH" },
    { 11, "CUBLAS_STATUS_MAPPING_ERROR" }, { 13, "CUBLAS_STATUS_EXECUTION_FAILED" },
    { 14, "CUBLAS_STATUS_INTERNAL_ERROR" }, { 15, "CUBLAS_STATUS_NOT_SUPPORTED" },
    { 16, "CUBLAS_STATUS_LICENSE_ERROR" } };
  const char *name = cb.status_name ? cb.status_name(s) : NULL;
  for (size_t i = 0; name == NULL && i < sizeof known / sizeof known[0]; i++)
    if (known[i].s == s) name = known[i].name;
  const char *text = cb.status_string ? cb.status_string(s) : NULL;
  if (name == NULL) snprintf(buf, n, "cuBLAS status %d", s);
  else if (text && *text && strcmp(text, name) != 0) snprintf(buf, n, "%s (%s)", name, text);
  else snprintf(buf, n, "%s", name);
}

static int fail(const char *fn, st_t s, char *err, size_t errsize) {
  char t[256];
  status_text(s, t, sizeof t);
  snprintf(err, errsize, "%s: %s", fn, t);
  return -1;
}

static hnd_t handle_for(int device, char *err, size_t errsize) {
  if (device < 0 || device >= MAXDEV) {
    snprintf(err, errsize, "device %d is beyond the %d kjit supports", device, MAXDEV);
    return NULL;
  }
  handles_t *t = pthread_getspecific(cb.key);
  if (t == NULL) {
    if ((t = calloc(1, sizeof *t)) == NULL || pthread_setspecific(cb.key, t) != 0) {
      free(t);
      snprintf(err, errsize, "out of memory (cuBLAS handles)");
      return NULL;
    }
  }
  if (t->h[device] && kcu_stale(0, device, t->gen[device])) t->h[device] = NULL;
  if (t->h[device] == NULL) {
    kcu_on_close(close_handle);
    t->gen[device] = kcu_gen(0, device);
    st_t s = cb.create(&t->h[device]);
    if (s != 0) { t->h[device] = NULL; fail("cublasCreate_v2", s, err, errsize); return NULL; }
  }
  return t->h[device];
}

#define P(x) ((void *)(uintptr_t)(x))
#define CALL(f, ...)                                                   \
  do {                                                                 \
    st_t s_ = cb.f[d](h, __VA_ARGS__);                                 \
    if (s_ != 0) return fail(cb.f##_name[d], s_, err, errsize);        \
  } while (0)

int kbl_cuda_run(int device, kbl_call *c, char *err, size_t errsize) {
  if (!loaded(err, errsize)) return -1;
  hnd_t h = handle_for(device, err, errsize);
  if (h == NULL) return -1;
  st_t s = cb.set_stream(h, c->stream);
  if (s != 0) return fail("cublasSetStream_v2", s, err, errsize);
  int d = c->dt == KJIT_F64;   /* 0: S, 1: D */
  float af = (float)c->alpha, bf = (float)c->beta, rf = 0;
  double ad = c->alpha, bd = c->beta, rd = 0;
  const void *al = d ? (const void *)&ad : (const void *)&af;
  const void *be = d ? (const void *)&bd : (const void *)&bf;
  void *res = d ? (void *)&rd : (void *)&rf;
  /* leading dimensions must be >= 1 even for empty matrices */
#define LD(x) ((x) > 1 ? (x) : 1)
  switch (c->op) {
  case KBL_GEMM:
    if (c->m == 0 || c->n == 0 || c->batch == 0) return 0;
    if (c->batch == 1)
      CALL(gemm, c->tb ? OP_T : OP_N, c->ta ? OP_T : OP_N, c->n, c->m, c->k, al, P(c->b),
           LD(c->ldb), P(c->a), LD(c->lda), be, P(c->c), LD(c->ldc));
    else
      CALL(gemm_sb, c->tb ? OP_T : OP_N, c->ta ? OP_T : OP_N, c->n, c->m, c->k, al, P(c->b),
           LD(c->ldb), (long long)c->sb, P(c->a), LD(c->lda), (long long)c->sa, be, P(c->c),
           LD(c->ldc), (long long)c->sc, c->batch);
    return 0;
  case KBL_GEMV:
    /* the row-major m x n A is a column-major n x m matrix: flip the transpose */
    CALL(gemv, c->ta ? OP_N : OP_T, c->n, c->m, al, P(c->a), LD(c->lda), P(c->b), 1, be, P(c->c), 1);
    return 0;
  case KBL_DOT: CALL(dot, c->n, P(c->a), 1, P(c->b), 1, res); break;
  case KBL_AXPY: CALL(axpy, c->n, al, P(c->a), 1, P(c->b), 1); return 0;
  case KBL_SCAL: CALL(scal, c->n, al, P(c->a), 1); return 0;
  case KBL_NRM2: CALL(nrm2, c->n, P(c->a), 1, res); break;
  case KBL_ASUM: CALL(asum, c->n, P(c->a), 1, res); break;
  case KBL_IAMAX: {
    int64_t r = 0;
    CALL(iamax, c->n, P(c->a), 1, &r);   /* 1-based already, 0 for n == 0 */
    c->iresult = r;
    return 0;
  }
  case KBL_GEAM:
    if (c->m == 0 || c->n == 0) return 0;
    CALL(geam, c->ta ? OP_T : OP_N, c->tb ? OP_T : OP_N, c->n, c->m, al, P(c->a), LD(c->lda), be,
         P(c->b), LD(c->ldb), P(c->c), LD(c->ldc));
    return 0;
  case KBL_TRSM:
    if (c->m == 0 || c->n == 0) return 0;
    CALL(trsm, SIDE_RIGHT, c->lower ? FILL_UPPER : FILL_LOWER, c->ta ? OP_T : OP_N,
         c->unit ? DIAG_UNIT : DIAG_NON_UNIT, c->n, c->m, al, P(c->a), LD(c->lda), P(c->b), LD(c->ldb));
    return 0;
  default:
    snprintf(err, errsize, "unknown BLAS operation");
    return -1;
  }
  c->result = d ? rd : (double)rf;
  return 0;
}
