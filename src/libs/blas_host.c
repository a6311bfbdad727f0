/*
** blas_host.c: kbl_call on host memory with OpenBLAS (blas.h).
**
** Found at build time and optional: CMake looks for OpenBLAS's cblas.h and
** library (Debian: libopenblas-dev) and defines KJIT_HAVE_OPENBLAS and
** KJIT_OPENBLAS_LIB (the library it found). Without them every call says
** what to install. With them, kjit is still not linked to OpenBLAS: the
** library is opened at the first BLAS call (KJIT_OPENBLAS, else the soname
** libopenblas.so.0, else the file found at build time: libfind.h). Why: OpenBLAS
** starts its thread pool when it is loaded, and a kjit that never calls
** BLAS (most programs, the test suite's sanitizer and fork tests) should not
** pay for, or see, those threads. cblas.h gives the prototypes, so the
** pointers are typed by the header itself (__typeof__).
**
** Row-major is cblas's CblasRowMajor: the kbl_call goes through unchanged.
** geam is not in cblas: a plain loop (it is memory-bound; OpenBLAS's own
** omatcopy/geadd are loops too). Dimensions are ints in cblas (LP64
** OpenBLAS): larger ones are refused with a message.
*/
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libs/blas.h"

const char *const kbl_op_names[] = { "gemm", "gemv", "dot", "axpy", "scal", "nrm2",
                                     "asum", "iamax", "geam", "trsm" };

/* C = alpha op(A) + beta op(B) in row-major, the same in both precisions. */
#define GEAM_LOOP(T)                                                            \
  do {                                                                          \
    const T *A_ = (const T *)(uintptr_t)c->a, *B_ = (const T *)(uintptr_t)c->b; \
    T *C_ = (T *)(uintptr_t)c->c;                                               \
    T al = (T)c->alpha, be = (T)c->beta;                                        \
    for (int64_t i = 0; i < c->m; i++)                                          \
      for (int64_t j = 0; j < c->n; j++) {                                      \
        T x = c->ta ? A_[j * c->lda + i] : A_[i * c->lda + j];                  \
        T s = al * x;                                                           \
        if (be != 0) s += be * (c->tb ? B_[j * c->ldb + i] : B_[i * c->ldb + j]); \
        C_[i * c->ldc + j] = s;                                                 \
      }                                                                         \
  } while (0)

static void geam(kbl_call *c) {
  if (c->dt == KJIT_F32) GEAM_LOOP(float);
  else GEAM_LOOP(double);
}

#ifndef KJIT_HAVE_OPENBLAS

int kbl_host_run(kbl_call *c, char *err, size_t errsize) {
  if (c->op == KBL_GEAM) { geam(c); return 0; }
  snprintf(err, errsize, "kjit was built without OpenBLAS (install libopenblas-dev, "
                         "e.g. apt-get install libopenblas-dev, and rebuild kjit)");
  return -1;
}

const char *kbl_host_backend(const char **detail, char *err, size_t errsize) {
  if (detail) *detail = NULL;
  kbl_host_run(&(kbl_call){ .op = KBL_GEMM }, err, errsize);
  return NULL;
}

#else
#include <cblas.h>
#include "libs/libfind.h"

#define OB_API(X) \
  X(sgemm, cblas_sgemm) X(dgemm, cblas_dgemm) X(sgemv, cblas_sgemv) X(dgemv, cblas_dgemv) \
  X(sdot, cblas_sdot) X(ddot, cblas_ddot) X(saxpy, cblas_saxpy) X(daxpy, cblas_daxpy)     \
  X(sscal, cblas_sscal) X(dscal, cblas_dscal) X(snrm2, cblas_snrm2) X(dnrm2, cblas_dnrm2) \
  X(sasum, cblas_sasum) X(dasum, cblas_dasum) X(isamax, cblas_isamax)                      \
  X(idamax, cblas_idamax) X(strsm, cblas_strsm) X(dtrsm, cblas_dtrsm)

static struct {
  pthread_once_t once;
  void *lib;
  char why[512];
  char version[64];
  const char *config;
#define OB_FIELD(f, sym) __typeof__(&sym) f;
  OB_API(OB_FIELD)
#undef OB_FIELD
} ob = { PTHREAD_ONCE_INIT };

static void load_openblas(void) {
  static const char *const sonames[] = { "libopenblas.so.0", NULL };
  static const kl_spec spec = { "OpenBLAS", "KJIT_OPENBLAS", sonames, NULL, KJIT_OPENBLAS_LIB,
                                "install it (e.g. apt-get install libopenblas0)" };
  ob.lib = kl_open(&spec, NULL, 0, ob.why, sizeof ob.why);
  if (ob.lib == NULL) return;
#define OB_SYM(f, sym)                                                             \
  if ((ob.f = (__typeof__(&sym))dlsym(ob.lib, #sym)) == NULL) {                    \
    snprintf(ob.why, sizeof ob.why, "the OpenBLAS library loaded has no %s", #sym); \
    dlclose(ob.lib);                                                               \
    ob.lib = NULL;                                                                 \
    return;                                                                        \
  }
  OB_API(OB_SYM)
#undef OB_SYM
  /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64": the version
  ** is the second word */
  const char *(*config)(void) = (const char *(*)(void))dlsym(ob.lib, "openblas_get_config");
  ob.config = config ? config() : NULL;
  const char *v = ob.config && strncmp(ob.config, "OpenBLAS ", 9) == 0 ? ob.config + 9 : "";
  snprintf(ob.version, sizeof ob.version, "OpenBLAS%s%.*s", *v ? " " : "", (int)strcspn(v, " "), v);
}

static int loaded(char *err, size_t errsize) {
  pthread_once(&ob.once, load_openblas);
  if (ob.lib == NULL) snprintf(err, errsize, "%s", ob.why);
  return ob.lib != NULL;
}

const char *kbl_host_backend(const char **detail, char *err, size_t errsize) {
  if (!loaded(err, errsize)) return NULL;
  if (detail) *detail = ob.config;
  return ob.version;
}

static int too_big(const kbl_call *c, char *err, size_t errsize) {
  const int64_t v[] = { c->m, c->n, c->k, c->lda, c->ldb, c->ldc };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i] > INT_MAX) {
      snprintf(err, errsize, "a dimension of %lld is more than OpenBLAS takes (%d)",
               (long long)v[i], INT_MAX);
      return 1;
    }
  return 0;
}

#define MAX1(x) ((int)((x) > 1 ? (x) : 1))   /* cblas wants leading dimensions >= 1 */
#define TR(t) ((t) ? CblasTrans : CblasNoTrans)

int kbl_host_run(kbl_call *c, char *err, size_t errsize) {
  if (c->op == KBL_GEAM) { geam(c); return 0; }
  if (!loaded(err, errsize) || too_big(c, err, errsize)) return -1;
  int f32 = c->dt == KJIT_F32;
  void *A = (void *)(uintptr_t)c->a, *B = (void *)(uintptr_t)c->b, *C = (void *)(uintptr_t)c->c;
  int m = (int)c->m, n = (int)c->n, k = (int)c->k;
  switch (c->op) {
  case KBL_GEMM: {
    if (m == 0 || n == 0) return 0;
    size_t es = f32 ? 4 : 8;
    for (int64_t i = 0; i < c->batch; i++) {
      char *a = (char *)A + (size_t)(i * c->sa) * es, *b = (char *)B + (size_t)(i * c->sb) * es;
      char *cc = (char *)C + (size_t)(i * c->sc) * es;
      if (f32)
        ob.sgemm(CblasRowMajor, TR(c->ta), TR(c->tb), m, n, k, (float)c->alpha, (float *)a,
                 MAX1(c->lda), (float *)b, MAX1(c->ldb), (float)c->beta, (float *)cc, MAX1(c->ldc));
      else
        ob.dgemm(CblasRowMajor, TR(c->ta), TR(c->tb), m, n, k, c->alpha, (double *)a,
                 MAX1(c->lda), (double *)b, MAX1(c->ldb), c->beta, (double *)cc, MAX1(c->ldc));
    }
    return 0;
  }
  case KBL_GEMV: {
    /* x is a, y is c here: a = A, b = x, c = y */
    if (m == 0 || n == 0) {
      /* BLAS does nothing then; y = beta y is still the definition (an empty
      ** product): do it here so every backend agrees */
      int64_t ny = c->ta ? c->n : c->m;
      if (f32) for (int64_t i = 0; i < ny; i++) ((float *)C)[i] = c->beta == 0 ? 0 : (float)c->beta * ((float *)C)[i];
      else for (int64_t i = 0; i < ny; i++) ((double *)C)[i] = c->beta == 0 ? 0 : c->beta * ((double *)C)[i];
      return 0;
    }
    if (f32) ob.sgemv(CblasRowMajor, TR(c->ta), m, n, (float)c->alpha, A, MAX1(c->lda), B, 1,
                      (float)c->beta, C, 1);
    else ob.dgemv(CblasRowMajor, TR(c->ta), m, n, c->alpha, A, MAX1(c->lda), B, 1, c->beta, C, 1);
    return 0;
  }
  case KBL_DOT: c->result = f32 ? ob.sdot(n, A, 1, B, 1) : ob.ddot(n, A, 1, B, 1); return 0;
  case KBL_AXPY:
    if (f32) ob.saxpy(n, (float)c->alpha, A, 1, B, 1);
    else ob.daxpy(n, c->alpha, A, 1, B, 1);
    return 0;
  case KBL_SCAL:
    if (f32) ob.sscal(n, (float)c->alpha, A, 1);
    else ob.dscal(n, c->alpha, A, 1);
    return 0;
  case KBL_NRM2: c->result = f32 ? ob.snrm2(n, A, 1) : ob.dnrm2(n, A, 1); return 0;
  case KBL_ASUM: c->result = f32 ? ob.sasum(n, A, 1) : ob.dasum(n, A, 1); return 0;
  case KBL_IAMAX:
    c->iresult = n == 0 ? 0 : (int64_t)(f32 ? ob.isamax(n, A, 1) : ob.idamax(n, A, 1)) + 1;
    return 0;
  case KBL_TRSM:
    if (m == 0 || n == 0) return 0;
    if (f32)
      ob.strsm(CblasRowMajor, CblasLeft, c->lower ? CblasLower : CblasUpper, TR(c->ta),
               c->unit ? CblasUnit : CblasNonUnit, m, n, (float)c->alpha, A, MAX1(c->lda), B, MAX1(c->ldb));
    else
      ob.dtrsm(CblasRowMajor, CblasLeft, c->lower ? CblasLower : CblasUpper, TR(c->ta),
               c->unit ? CblasUnit : CblasNonUnit, m, n, c->alpha, A, MAX1(c->lda), B, MAX1(c->ldb));
    return 0;
  default: break;
  }
  snprintf(err, errsize, "unknown BLAS operation");
  return -1;
}
#endif
