/* bench/c/models.c: C models of the code kjit generates, to find where the
 * time goes in the kernels where kjit trails C (not part of the suite).
 *
 *   clang-14 -O3 -march=native -o /tmp/models bench/c/models.c -lm && /tmp/models
 *
 * fib: kjit's calling convention for compiled Lua-to-Lua calls is an i32
 * status return, results through pointers to the caller's stack slots, a
 * C-stack check before each call (err->stack_limit against the address of a
 * slot), and a status test after each call. fib_kjit reproduces it (and
 * kjit's time); fib_plain is the C kernel. fib_pure keeps one stack check,
 * in the prologue, returns the value in a register and drops the status
 * test after calls: a failing callee flags err->code and returns 0, and
 * every later call returns at once (the prologue tests err->code too), so
 * LLVM's tail-recursion elimination applies (fib(n - 2) becomes a loop with
 * an accumulator) as it does for C.
 *
 * histogram: math.floor(float) converts with a check that the value is
 * not NaN and in [-2^63, 2^63) (three compares, each an early loop exit),
 * and counts[b] has a data-dependent bounds check; hist_kjit reproduces
 * both, hist_onecmp tests |floor(x)| < 2^63 only (NaN fails it too).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct { int code; uintptr_t stack_limit; } KErr;

__attribute__((noinline)) static long fib_plain(long n) {
  if (n < 2) return n;
  return fib_plain(n - 1) + fib_plain(n - 2);
}

__attribute__((noinline)) static int fib_kjit(long n, long *out, KErr *e) {
  if (n < 2) { *out = n; return 0; }
  long r1, r2;
  if ((uintptr_t)&r1 <= e->stack_limit) { e->code = 10; return 1; }
  if (fib_kjit(n - 1, &r1, e)) return 1;
  if ((uintptr_t)&r2 <= e->stack_limit) { e->code = 10; return 1; }
  if (fib_kjit(n - 2, &r2, e)) return 1;
  *out = r1 + r2;
  return 0;
}

__attribute__((noinline)) static long fib_pure(long n, KErr *e) {
  if (n < 2) return n;
  if (__builtin_expect((uintptr_t)__builtin_frame_address(0) <= e->stack_limit || e->code != 0, 0)) {
    e->code = 10;
    return 0;
  }
  return fib_pure(n - 1, e) + fib_pure(n - 2, e);
}

__attribute__((noinline)) static int hist_plain(long n, const double *x, long nbins, int64_t *c) {
  for (long i = 0; i < n; i++) {
    long b = (long)floor(x[i] * nbins) + 1;
    if (b > nbins) b = nbins;
    c[b - 1]++;
  }
  return 0;
}

__attribute__((noinline)) static int hist_kjit(long n, const double *x, long nbins, int64_t *c, long len) {
  for (long i = 0; i < n; i++) {
    double f = floor(x[i] * nbins);
    if (!(f == f && f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return 1;
    long b = (long)f + 1;
    if (b > nbins) b = nbins;
    if ((unsigned long)(b - 1) >= (unsigned long)len) return 2;
    c[b - 1]++;
  }
  return 0;
}

__attribute__((noinline)) static int hist_onecmp(long n, const double *x, long nbins, int64_t *c, long len) {
  for (long i = 0; i < n; i++) {
    double f = floor(x[i] * nbins);
    if (__builtin_expect(!(fabs(f) < 9223372036854775808.0), 0)) return 1;
    long b = (long)f + 1;
    if (b > nbins) b = nbins;
    if (__builtin_expect((unsigned long)(b - 1) >= (unsigned long)len, 0)) return 2;
    c[b - 1]++;
  }
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
#define MEDIAN_MS(label, stmt)                                   \
  do {                                                           \
    double t_[7];                                                \
    for (int r_ = 0; r_ < 7; r_++) {                             \
      double t0_ = now();                                        \
      stmt;                                                      \
      t_[r_] = now() - t0_;                                      \
    }                                                            \
    qsort(t_, 7, sizeof t_[0], cmp);                             \
    printf("  %-34s %7.2f ms\n", label, t_[3] * 1e3);            \
  } while (0)

static volatile long N = 32, NH = 1L << 24, NB = 256;   /* opaque to the optimizer */

int main(void) {
  KErr e = { 0, 4096 };
  long r = 0;
  printf("fib(%ld)\n", N);
  MEDIAN_MS("C", r = fib_plain(N));
  MEDIAN_MS("kjit's convention", (void)fib_kjit(N, &r, &e));
  MEDIAN_MS("one check, value in a register", r = fib_pure(N, &e));
  printf("  (fib = %ld)\n", r);

  long n = NH, nb = NB;
  double *x = malloc(n * sizeof *x);
  int64_t *c = calloc(nb, sizeof *c);
  if (!x || !c) return 1;
  for (long i = 1; i <= n; i++) x[i - 1] = fmod(i * 0.618033988749895, 1.0);
  printf("histogram, n = 2^24, 256 bins\n");
  MEDIAN_MS("C", hist_plain(n, x, nb, c));
  MEDIAN_MS("kjit's checks", (void)hist_kjit(n, x, nb, c, nb));
  MEDIAN_MS("one compare for floor()", (void)hist_onecmp(n, x, nb, c, nb));
  free(x);
  free(c);
  return 0;
}
