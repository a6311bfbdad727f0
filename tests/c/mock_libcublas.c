/*
** mock_libcublas.c: a fake cuBLAS over the mock driver's memory (host
** memory: tests/c/mock_libcuda.c), for kjit's tests. Built as
** libmockcublas.so; tests/lua/test_blas.lua loads it with
** KJIT_CUBLAS=<path> (and KJIT_LIBCUDA=<libmockcuda.so>), so src/libs/
** blas_cuda.c runs without a GPU: its row-major to column-major mapping is
** checked by the results (each entry point below computes what cuBLAS
** defines, column-major, plainly) and by the log of the arguments.
**
** Stricter than cuBLAS where that catches bugs: every call checks its
** handle, that the context current on the calling thread is the handle's
** device's, that the stream is a live one of that device, and that every
** matrix and vector (rows, columns, leading dimension) lies inside one live
** allocation (through mock_cuda_* functions of the mock driver).
**
** Environment:
**   MOCK_CUBLAS_FAIL=a,b=code  entry points that fail (default status 13,
**                              CUBLAS_STATUS_EXECUTION_FAILED)
**   MOCK_CUBLAS_LOG=path       one line per call: name and arguments
**   MOCK_CUBLAS_REPORT=path    at exit: calls=, bad_handles=, bad_contexts=,
**                              bad_ranges=, bad_streams=, live_handles=,
**                              stream_calls= (calls on a non-default stream),
**                              driver_checks=1 (the mock driver's checks were found)
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef int st_t;
enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, EXECUTION_FAILED = 13 };
#define MAGIC 0x43424c53U

/* gen: the mock driver's context generation when made (a handle of a
** context cuda.close() destroyed is a bad context, used or destroyed) */
typedef struct Handle { unsigned magic; int dev; void *stream; unsigned gen; } Handle;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failspec;
static FILE *log_file;
static int (*cur_dev)(void);
static int (*valid_range)(uint64_t, size_t);
static int (*stream_ok)(void *);
static struct { long calls, bad_handles, bad_contexts, bad_ranges, bad_streams, live_handles,
                stream_calls, creates; } st;

static void report(void) {
  const char *path = getenv("MOCK_CUBLAS_REPORT");
  FILE *f;
  if (log_file) fclose(log_file);
  if (!path || !*path || !(f = fopen(path, "w"))) return;
  fprintf(f, "calls=%ld\nbad_handles=%ld\nbad_contexts=%ld\nbad_ranges=%ld\nbad_streams=%ld\n"
          "live_handles=%ld\nstream_calls=%ld\ndriver_checks=%d\n", st.calls, st.bad_handles, st.bad_contexts,
          st.bad_ranges, st.bad_streams, st.live_handles, st.stream_calls,
          cur_dev && valid_range && stream_ok);
  fclose(f);
}

static unsigned (*ctx_gen)(int dev);
#define GEN(dev) (ctx_gen ? ctx_gen(dev) : 0u)

static void setup(void) {
  const char *e = getenv("MOCK_CUBLAS_LOG");
  failspec = getenv("MOCK_CUBLAS_FAIL");
  if (e && *e) log_file = fopen(e, "w");
  /* the mock driver kjit loaded (KJIT_LIBCUDA), already in the process */
  e = getenv("KJIT_LIBCUDA");
  void *drv = e && *e ? dlopen(e, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (drv) {
    *(void **)&cur_dev = dlsym(drv, "mock_cuda_current_device");
    *(void **)&valid_range = dlsym(drv, "mock_cuda_valid_range");
    *(void **)&stream_ok = dlsym(drv, "mock_cuda_stream_ok");
    *(void **)&ctx_gen = dlsym(drv, "mock_cuda_ctx_gen");
  }
  atexit(report);
}

static st_t injected(const char *name) {
  size_t n = strlen(name);
  pthread_once(&once, setup);
  for (const char *p = failspec; p && *p;) {
    const char *end = p + strcspn(p, ",");
    if ((size_t)(end - p) >= n && strncmp(p, name, n) == 0 &&
        (p[n] == ',' || p[n] == '\0' || p[n] == '='))
      return p[n] == '=' ? atoi(p + n + 1) : EXECUTION_FAILED;
    p = *end ? end + 1 : end;
  }
  return OK;
}

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logline(const char *fmt, ...) {
  if (!log_file) return;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&mu);
  vfprintf(log_file, fmt, ap);
  fputc('\n', log_file);
  fflush(log_file);
  pthread_mutex_unlock(&mu);
  va_end(ap);
}

/* The checks every operation makes on its handle. */
static st_t enter(const char *name, Handle *h) {
  st_t f = injected(name);
  if (f) return f;
  pthread_mutex_lock(&mu);
  st.calls++;
  pthread_mutex_unlock(&mu);
  st_t r = OK;
  long *bad = NULL;
  if (h == NULL || h->magic != MAGIC) bad = &st.bad_handles, r = NOT_INITIALIZED;
  else if ((cur_dev && cur_dev() != h->dev) || h->gen != GEN(h->dev))
    bad = &st.bad_contexts, r = EXECUTION_FAILED;
  else if (stream_ok && !stream_ok(h->stream)) bad = &st.bad_streams, r = EXECUTION_FAILED;
  pthread_mutex_lock(&mu);
  if (bad) ++*bad;
  else if (h->stream) st.stream_calls++;
  pthread_mutex_unlock(&mu);
  return r;
}

/* A column-major rows x cols matrix with leading dimension ld (batch
** matrices stride apart) must lie inside one allocation. */
static int in_memory(const void *p, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                     int64_t stride, size_t es) {
  if (rows == 0 || cols == 0 || batch == 0) return 1;
  size_t n = ((size_t)(cols - 1) * (size_t)ld + (size_t)rows + (size_t)((batch - 1) * stride)) * es;
  if (valid_range && !valid_range((uint64_t)(uintptr_t)p, n)) {
    pthread_mutex_lock(&mu);
    st.bad_ranges++;
    pthread_mutex_unlock(&mu);
    return 0;
  }
  return 1;
}

#define MAX1(x) ((x) > 1 ? (x) : 1)

API st_t cublasCreate_v2(Handle **h) {
  st_t f = injected("cublasCreate_v2");
  if (f) return f;
  if (cur_dev && cur_dev() < 0) return NOT_INITIALIZED;   /* no current context */
  Handle *x = calloc(1, sizeof *x);
  if (!x) return 3;
  x->magic = MAGIC;
  x->dev = cur_dev ? cur_dev() : 0;
  x->gen = GEN(x->dev);
  *h = x;
  pthread_mutex_lock(&mu);
  st.live_handles++;
  st.creates++;
  pthread_mutex_unlock(&mu);
  logline("cublasCreate_v2 dev=%d", x->dev);
  return OK;
}

static st_t bad_handle(void) {
  pthread_mutex_lock(&mu);
  st.bad_handles++;
  pthread_mutex_unlock(&mu);
  return NOT_INITIALIZED;
}

API st_t cublasDestroy_v2(Handle *h) {
  if (h == NULL || h->magic != MAGIC) return bad_handle();
  if (h->gen != GEN(h->dev)) {   /* its context is gone */
    pthread_mutex_lock(&mu);
    st.bad_contexts++;
    pthread_mutex_unlock(&mu);
  }
  h->magic = 0;
  free(h);
  pthread_mutex_lock(&mu);
  st.live_handles--;
  pthread_mutex_unlock(&mu);
  return OK;
}

API st_t cublasSetStream_v2(Handle *h, void *s) {
  st_t f = injected("cublasSetStream_v2");
  if (f) return f;
  if (h == NULL || h->magic != MAGIC) return bad_handle();
  h->stream = s;
  return OK;
}

/* For tests/c/test_blas_threads.c (dlsym): the handles alive now, and the
** calls refused so far for a bad handle, context, stream or range. */
API long mock_cublas_live_handles(void) {
  pthread_mutex_lock(&mu);
  long n = st.live_handles;
  pthread_mutex_unlock(&mu);
  return n;
}
API long mock_cublas_bad_calls(void) {
  pthread_mutex_lock(&mu);
  long n = st.bad_handles + st.bad_contexts + st.bad_streams + st.bad_ranges;
  pthread_mutex_unlock(&mu);
  return n;
}
API long mock_cublas_creates(void) {
  pthread_mutex_lock(&mu);
  long n = st.creates;
  pthread_mutex_unlock(&mu);
  return n;
}

API st_t cublasGetProperty(int type, int *v) {
  static const int ver[3] = { 13, 1, 0 };
  if (type < 0 || type > 2) return INVALID_VALUE;
  *v = ver[type];
  return OK;
}

API const char *cublasGetStatusName(st_t s) {
  switch (s) {
  case 0: return "CUBLAS_STATUS_SUCCESS";
  case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7: return "CUBLAS_STATUS_INVALID_VALUE";
  case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
  default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

API const char *cublasGetStatusString(st_t s) {
  switch (s) {
  case 7: return "an unsupported value or parameter was passed to the function";
  case 13: return "the GPU program failed to execute";
  default: return cublasGetStatusName(s);
  }
}

/* element (i, j) of a column-major matrix, op applied */
#define AT(M, ld, t, i, j) ((t) ? (M)[(j) + (int64_t)(i) * (ld)] : (M)[(i) + (int64_t)(j) * (ld)])
#define STREAM(h) ((h)->stream ? "other" : "default")

/* The operations, once per precision: P is S or D, T float or double. */
#define OPS(P, p, T, ES)                                                                              \
  static st_t P##gemm_sb(const char *name, Handle *h, int ta, int tb, int64_t m, int64_t n,      \
                         int64_t k, const T *al, const T *A, int64_t lda, long long sa,           \
                         const T *B, int64_t ldb, long long sb, const T *be, T *C, int64_t ldc,   \
                         long long sc, int64_t batch) {                                           \
    st_t r = enter(name, h);                                                                     \
    if (r) return r;                                                                             \
    logline("%s %c %c m=%lld n=%lld k=%lld alpha=%g lda=%lld ldb=%lld beta=%g ldc=%lld "         \
            "strides=%lld,%lld,%lld batch=%lld stream=%s", name, ta ? 'T' : 'N', tb ? 'T' : 'N', \
            (long long)m, (long long)n, (long long)k, (double)*al, (long long)lda,                \
            (long long)ldb, (double)*be, (long long)ldc, sa, sb, sc, (long long)batch, STREAM(h)); \
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < MAX1(ta ? k : m) ||                        \
        ldb < MAX1(tb ? n : k) || ldc < MAX1(m))                                                 \
      return INVALID_VALUE;                                                                      \
    if (!in_memory(A, ta ? k : m, ta ? m : k, lda, batch, sa, ES) ||                             \
        !in_memory(B, tb ? n : k, tb ? k : n, ldb, batch, sb, ES) ||                             \
        !in_memory(C, m, n, ldc, batch, sc, ES))                                                 \
      return EXECUTION_FAILED;                                                                   \
    for (int64_t b = 0; b < batch; b++)                                                          \
      for (int64_t i = 0; i < m; i++)                                                            \
        for (int64_t j = 0; j < n; j++) {                                                        \
          double s = 0;                                                                          \
          for (int64_t l = 0; l < k; l++)                                                        \
            s += (double)AT(A + b * sa, lda, ta, i, l) * (double)AT(B + b * sb, ldb, tb, l, j);  \
          T *c = &C[b * sc + i + j * ldc];                                                       \
          *c = (T)(*al * s + (*be == 0 ? 0 : *be * *c));                                         \
        }                                                                                        \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublas##P##gemm_v2_64(Handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k,     \
                                 const T *al, const T *A, int64_t lda, const T *B, int64_t ldb,  \
                                 const T *be, T *C, int64_t ldc) {                               \
    return P##gemm_sb("cublas" #P "gemm_v2_64", h, ta, tb, m, n, k, al, A, lda, 0, B, ldb, 0, be, \
                      C, ldc, 0, 1);                                                             \
  }                                                                                              \
  API st_t cublas##P##gemmStridedBatched_64(Handle *h, int ta, int tb, int64_t m, int64_t n,     \
      int64_t k, const T *al, const T *A, int64_t lda, long long sa, const T *B, int64_t ldb,    \
      long long sb, const T *be, T *C, int64_t ldc, long long sc, int64_t batch) {               \
    return P##gemm_sb("cublas" #P "gemmStridedBatched_64", h, ta, tb, m, n, k, al, A, lda, sa, B, \
                      ldb, sb, be, C, ldc, sc, batch);                                           \
  }                                                                                              \
  API st_t cublas##P##gemv_v2_64(Handle *h, int t, int64_t m, int64_t n, const T *al,            \
                                 const T *A, int64_t lda, const T *x, int64_t incx, const T *be, \
                                 T *y, int64_t incy) {                                           \
    const char *name = "cublas" #P "gemv_v2_64";                                                 \
    st_t r = enter(name, h);                                                                     \
    if (r) return r;                                                                             \
    logline("%s %c m=%lld n=%lld alpha=%g lda=%lld beta=%g stream=%s", name, t ? 'T' : 'N',     \
            (long long)m, (long long)n, (double)*al, (long long)lda, (double)*be, STREAM(h));    \
    if (m < 0 || n < 0 || lda < MAX1(m) || incx != 1 || incy != 1) return INVALID_VALUE;         \
    int64_t ny = t ? n : m, nx = t ? m : n;                                                      \
    if (m == 0 || n == 0) return OK;   /* BLAS's quick return: y untouched */                    \
    if (!in_memory(A, m, n, lda, 1, 0, ES) || !in_memory(x, nx, 1, nx, 1, 0, ES) ||              \
        !in_memory(y, ny, 1, ny, 1, 0, ES))                                                      \
      return EXECUTION_FAILED;                                                                   \
    for (int64_t i = 0; i < ny; i++) {                                                           \
      double s = 0;                                                                              \
      for (int64_t l = 0; l < nx; l++) s += (double)AT(A, lda, t, i, l) * (double)x[l];          \
      y[i] = (T)(*al * s + (*be == 0 ? 0 : *be * y[i]));                                         \
    }                                                                                            \
    return OK;                                                                                   \
  }                                                                                              \
  /* vectors: dot, axpy, scal, nrm2, asum, iamax */                                              \
  static st_t P##vec(const char *name, Handle *h, int64_t n, const T *x, int64_t incx,           \
                     const T *y, int64_t incy) {                                                 \
    st_t r = enter(name, h);                                                                     \
    if (r) return r;                                                                             \
    logline("%s n=%lld stream=%s", name, (long long)n, STREAM(h));                              \
    if (n < 0 || incx != 1 || (y && incy != 1)) return INVALID_VALUE;                            \
    if (!in_memory(x, n, 1, n, 1, 0, ES) || (y && !in_memory(y, n, 1, n, 1, 0, ES)))             \
      return EXECUTION_FAILED;                                                                   \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublas##P##dot_v2_64(Handle *h, int64_t n, const T *x, int64_t incx, const T *y,      \
                                int64_t incy, T *res) {                                          \
    st_t r = P##vec("cublas" #P "dot_v2_64", h, n, x, incx, y, incy);                           \
    if (r) return r;                                                                             \
    double s = 0;                                                                                \
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)y[i];                           \
    *res = (T)s;                                                                                 \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublas##P##axpy_v2_64(Handle *h, int64_t n, const T *al, const T *x, int64_t incx,    \
                                 T *y, int64_t incy) {                                           \
    st_t r = P##vec("cublas" #P "axpy_v2_64", h, n, x, incx, y, incy);                          \
    if (r) return r;                                                                             \
    for (int64_t i = 0; i < n; i++) y[i] = *al * x[i] + y[i];                                   \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublas##P##scal_v2_64(Handle *h, int64_t n, const T *al, T *x, int64_t incx) {        \
    st_t r = P##vec("cublas" #P "scal_v2_64", h, n, x, incx, NULL, 1);                          \
    if (r) return r;                                                                             \
    for (int64_t i = 0; i < n; i++) x[i] = *al * x[i];                                          \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublas##P##nrm2_v2_64(Handle *h, int64_t n, const T *x, int64_t incx, T *res) {       \
    st_t r = P##vec("cublas" #P "nrm2_v2_64", h, n, x, incx, NULL, 1);                          \
    if (r) return r;                                                                             \
    double s = 0;                                                                                \
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];                           \
    *res = (T)sqrt(s);                                                                           \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublas##P##asum_v2_64(Handle *h, int64_t n, const T *x, int64_t incx, T *res) {       \
    st_t r = P##vec("cublas" #P "asum_v2_64", h, n, x, incx, NULL, 1);                          \
    if (r) return r;                                                                             \
    double s = 0;                                                                                \
    for (int64_t i = 0; i < n; i++) s += fabs((double)x[i]);                                    \
    *res = (T)s;                                                                                 \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublasI##p##amax_v2_64(Handle *h, int64_t n, const T *x, int64_t incx, int64_t *res) { \
    st_t r = P##vec("cublasI" #p "amax_v2_64", h, n, x, incx, NULL, 1);                        \
    if (r) return r;                                                                             \
    int64_t best = 0;                                                                            \
    for (int64_t i = 0; i < n; i++)                                                              \
      if (best == 0 || fabs((double)x[i]) > fabs((double)x[best - 1])) best = i + 1;            \
    *res = best;                                                                                 \
    return OK;                                                                                   \
  }                                                                                              \
  API st_t cublas##P##geam_64(Handle *h, int ta, int tb, int64_t m, int64_t n, const T *al,      \
                              const T *A, int64_t lda, const T *be, const T *B, int64_t ldb,     \
                              T *C, int64_t ldc) {                                               \
    const char *name = "cublas" #P "geam_64";                                                    \
    st_t r = enter(name, h);                                                                     \
    if (r) return r;                                                                             \
    logline("%s %c %c m=%lld n=%lld alpha=%g lda=%lld beta=%g ldb=%lld ldc=%lld stream=%s",     \
            name, ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m, (long long)n, (double)*al,       \
            (long long)lda, (double)*be, (long long)ldb, (long long)ldc, STREAM(h));             \
    if (m < 0 || n < 0 || lda < MAX1(ta ? n : m) || ldb < MAX1(tb ? n : m) || ldc < MAX1(m))     \
      return INVALID_VALUE;                                                                      \
    if ((C == A && (ta || lda != ldc)) || (C == B && (tb || ldb != ldc))) return INVALID_VALUE;  \
    if (!in_memory(A, ta ? n : m, ta ? m : n, lda, 1, 0, ES) ||                                  \
        !in_memory(B, tb ? n : m, tb ? m : n, ldb, 1, 0, ES) || !in_memory(C, m, n, ldc, 1, 0, ES)) \
      return EXECUTION_FAILED;                                                                   \
    for (int64_t j = 0; j < n; j++)                                                              \
      for (int64_t i = 0; i < m; i++) {                                                          \
        T s = *al * AT(A, lda, ta, i, j);                                                        \
        if (*be != 0) s += *be * AT(B, ldb, tb, i, j);                                           \
        C[i + j * ldc] = s;                                                                      \
      }                                                                                          \
    return OK;                                                                                   \
  }                                                                                              \
  /* side right only (all kjit uses): X op(A) = alpha B, A n x n */                              \
  API st_t cublas##P##trsm_v2_64(Handle *h, int side, int uplo, int t, int diag, int64_t m,      \
                                 int64_t n, const T *al, const T *A, int64_t lda, T *B,          \
                                 int64_t ldb) {                                                  \
    const char *name = "cublas" #P "trsm_v2_64";                                                 \
    st_t r = enter(name, h);                                                                     \
    if (r) return r;                                                                             \
    logline("%s side=%s uplo=%s %c diag=%s m=%lld n=%lld alpha=%g lda=%lld ldb=%lld stream=%s", \
            name, side ? "R" : "L", uplo ? "U" : "L", t ? 'T' : 'N', diag ? "U" : "N",           \
            (long long)m, (long long)n, (double)*al, (long long)lda, (long long)ldb, STREAM(h)); \
    if (m < 0 || n < 0 || lda < MAX1(side ? n : m) || ldb < MAX1(m)) return INVALID_VALUE;      \
    if (side != 1) return 15; /* NOT_SUPPORTED by the mock */                                    \
    if (!in_memory(A, n, n, lda, 1, 0, ES) || !in_memory(B, m, n, ldb, 1, 0, ES))                \
      return EXECUTION_FAILED;                                                                   \
    /* X M = alpha B with M = op(A), column by column: an upper M goes left to right */          \
    int up = (uplo == 1) != (t != 0);                                                            \
    for (int64_t i = 0; i < m; i++)                                                              \
      for (int64_t jj = 0; jj < n; jj++) {                                                       \
        int64_t j = up ? jj : n - 1 - jj;                                                        \
        double s = *al * B[i + j * ldb];                                                         \
        for (int64_t l = 0; l < n; l++)                                                          \
          if (up ? l < j : l > j) s -= (double)B[i + l * ldb] * (double)AT(A, lda, t, l, j);     \
        B[i + j * ldb] = (T)(diag ? s : s / AT(A, lda, t, j, j));                                \
      }                                                                                          \
    return OK;                                                                                   \
  }

OPS(S, s, float, 4)
OPS(D, d, double, 8)
