/*
** bench/c/blas.c: the C side of bench/blas.lua: C = A B (row-major, n x n,
** f32 or f64) by a plain triple loop (i-k-j order, the cache-friendly one,
** which clang -O3 vectorizes) and by OpenBLAS's cblas_?gemm, on the same data
** as the Lua side (a[i] = (i * 7) % 11 - 5, b[i] = (i * 5) % 13 - 6,
** integer-valued: every method gives the exact same C).
**
**   blas N DTYPE RUNS [naive]  ->  "blas_ms=<median> naive_ms=<median> checksum=<sum of C>"
** (milliseconds per call, CPU time)
*/
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);   /* CPU time, as os.clock on the Lua side */
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define NAIVE(T)                                                   \
  static void naive_##T(int n, const T *a, const T *b, T *c) {     \
    memset(c, 0, sizeof(T) * (size_t)n * (size_t)n);               \
    for (int i = 0; i < n; i++)                                    \
      for (int k = 0; k < n; k++) {                                \
        T aik = a[i * n + k];                                      \
        for (int j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j]; \
      }                                                            \
  }
NAIVE(float)
NAIVE(double)

#define RUN(T, GEMM)                                                                       \
  do {                                                                                     \
    T *a = malloc(sizeof(T) * nn), *b = malloc(sizeof(T) * nn), *c = malloc(sizeof(T) * nn); \
    for (size_t i = 0; i < nn; i++) { a[i] = (T)((i * 7) % 11) - 5; b[i] = (T)((i * 5) % 13) - 6; } \
    GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);     \
    for (int r = 0; r < runs; r++) {                                                       \
      double t0 = now_ms();                                                                \
      for (int q = 0; q < reps; q++)                                                       \
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n); \
      tb[r] = (now_ms() - t0) / reps;                                                      \
    }                                                                                      \
    for (size_t i = 0; i < nn; i++) sum += c[i];                                           \
    if (with_naive) {                                                                      \
      naive_##T(n, a, b, c);                                                               \
      for (int r = 0; r < runs; r++) {                                                     \
        double t0 = now_ms();                                                              \
        for (int q = 0; q < reps; q++) naive_##T(n, a, b, c);                              \
        tn[r] = (now_ms() - t0) / reps;                                                    \
      }                                                                                    \
      double s2 = 0;                                                                       \
      for (size_t i = 0; i < nn; i++) s2 += c[i];                                          \
      if (s2 != sum) { fprintf(stderr, "naive and BLAS differ\n"); return 1; }            \
    }                                                                                      \
    free(a); free(b); free(c);                                                             \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: blas N f32|f64 RUNS [naive]\n"); return 2; }
  int n = atoi(argv[1]), runs = atoi(argv[3]), with_naive = argc > 4;
  int f32 = strcmp(argv[2], "f32") == 0;
  /* small sizes: each time is of a batch of calls (as on the Lua side), so
  ** the clock's cost and resolution do not count */
  double flop = (double)n * n * n;
  int reps = flop >= 2e7 ? 1 : (int)(2e7 / (flop > 0 ? flop : 1));
  size_t nn = (size_t)n * (size_t)n;
  double *tb = calloc((size_t)runs, sizeof *tb), *tn = calloc((size_t)runs, sizeof *tn), sum = 0;
  if (f32) RUN(float, cblas_sgemm);
  else RUN(double, cblas_dgemm);
  printf("blas_ms=%.6f naive_ms=%.6f checksum=%.17g\n", median(tb, runs),
         with_naive ? median(tn, runs) : -1.0, sum);
  return 0;
}
