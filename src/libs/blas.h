/*
** blas.h: one BLAS call, described in kjit's terms (row-major, C-contiguous
** arrays), and the two libraries that run it: OpenBLAS on host memory
** (blas_host.c) and cuBLAS on device memory (blas_cuda.c). The Lua binding
** (lblas.c) checks the arguments, fills a kbl_call and hands it to one of
** them; each backend maps the row-major description to its library's
** convention (cblas takes row-major directly; cuBLAS is column-major: the
** usual transposition trick, written once in blas_cuda.c).
*/
#ifndef KJIT_BLAS_H
#define KJIT_BLAS_H

#include <stddef.h>
#include <stdint.h>
#include "kjit.h"

typedef enum kbl_op {
  KBL_GEMM,    /* C = alpha op(A) op(B) + beta C; batch > 1: strided batched */
  KBL_GEMV,    /* y = alpha op(A) x + beta y (A is m x n as stored) */
  KBL_DOT,     /* result = x . y */
  KBL_AXPY,    /* y = alpha x + y */
  KBL_SCAL,    /* x = alpha x */
  KBL_NRM2,    /* result = ||x||_2 */
  KBL_ASUM,    /* result = sum |x_i| */
  KBL_IAMAX,   /* iresult = 1-based index of the first max |x_i| (0 if n == 0) */
  KBL_GEAM,    /* C = alpha op(A) + beta op(B), C m x n */
  KBL_TRSM     /* op(A) X = alpha B from the left, A m x m triangular, X over B (m x n) */
} kbl_op;

extern const char *const kbl_op_names[];   /* "gemm", ... indexed by kbl_op */

typedef struct kbl_call {
  kbl_op op;
  kjit_dtype dt;            /* KJIT_F32 or KJIT_F64 */
  int ta, tb;               /* transpose A, B */
  int lower, unit;          /* trsm: A lower triangular; unit diagonal */
  int64_t m, n, k;          /* gemm: C m x n, inner k; gemv/geam/trsm: m x n; vectors: n */
  int64_t lda, ldb, ldc;    /* row-major leading dimensions (elements per row as stored) */
  int64_t batch;            /* gemm: 1, or the batch count */
  int64_t sa, sb, sc;       /* gemm batch strides in elements (0: the same matrix) */
  double alpha, beta;
  /* addresses: host pointers, or CUdeviceptr. gemm, geam: A, B, C; gemv: A, x, y;
  ** dot, axpy: x, y; scal, nrm2, asum, iamax: x; trsm: A, B (X is written over B) */
  uint64_t a, b, c;
  void *stream;             /* cuBLAS: the CUstream (NULL: default stream) */
  double result;            /* dot, nrm2, asum */
  int64_t iresult;          /* iamax */
} kbl_call;

/* Host: runs c on host memory with OpenBLAS (loaded at the first call).
** Returns 0, or -1 with a message in err ("OpenBLAS not found ..."). */
int kbl_host_run(kbl_call *c, char *err, size_t errsize);
/* "OpenBLAS 0.3.21" (and its configuration in *detail), or NULL with the
** reason in err when it cannot be loaded. */
const char *kbl_host_backend(const char **detail, char *err, size_t errsize);

/* Device: runs c with cuBLAS on the current device (the caller made its
** context current) on c->stream, through this thread's handle for that
** device. Returns 0, or -1 with err naming the cuBLAS function and its
** status ("cublasSgemm_v2_64: CUBLAS_STATUS_INVALID_VALUE (an unsupported
** value or parameter was passed to the function)") or why cuBLAS is
** missing. */
int kbl_cuda_run(int device, kbl_call *c, char *err, size_t errsize);
/* "cuBLAS 13.0.2", or NULL with the reason in err. */
const char *kbl_cuda_backend(char *err, size_t errsize);

#endif
