/*
** bench/c/fft.c: FFTW called from C, the peer of bench/fft.lua. For each
** case (the same as bench/fft.lua's) it plans once with FFTW_ESTIMATE (as
** kjit.fft does) and prints "name microseconds-per-transform", the median
** of 5 batches of at least 0.2 s of process CPU time (the machine may be
** busy) of fftw_execute into a preallocated output.
** With the argument "measure", plans with FFTW_MEASURE instead (kjit.fft's
** planner = "measure").
**   cc -O2 bench/c/fft.c -lfftw3 -lfftw3f -lm -o fft_c && ./fft_c [measure]
*/
#define _GNU_SOURCE
#include <fftw3.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);   /* CPU time: the machine may be shared */
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* As kjit's arrays (src/host/buffer.c): 64-byte aligned, and from 4 MiB on
** transparent huge pages asked for, so that memory is not the difference. */
static void *alloc(size_t bytes) {
  size_t al = bytes >= ((size_t)4 << 20) ? (size_t)2 << 20 : 64;
  void *p = aligned_alloc(al, (bytes + al - 1) / al * al);
  if (p && al > 64) (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct Case { const char *name; int kind, dbl, rank; int n[2]; } Case;
enum { C2C, R2C };

int main(int argc, char **argv) {
  unsigned flags = argc > 1 && strcmp(argv[1], "measure") == 0 ? FFTW_MEASURE : FFTW_ESTIMATE;
  static const Case cases[] = {
    { "fft f64 n=64", C2C, 1, 1, { 64 } }, { "fft f64 n=1024", C2C, 1, 1, { 1024 } },
    { "fft f64 n=65536", C2C, 1, 1, { 65536 } }, { "fft f64 n=1048576", C2C, 1, 1, { 1048576 } },
    { "fft f32 n=1024", C2C, 0, 1, { 1024 } }, { "fft f32 n=65536", C2C, 0, 1, { 65536 } },
    { "fft2 f64 512x512", C2C, 1, 2, { 512, 512 } }, { "rfft f64 n=1048576", R2C, 1, 1, { 1048576 } },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const Case *k = &cases[c];
    size_t n = (size_t)k->n[0] * (k->rank > 1 ? (size_t)k->n[1] : 1);
    size_t es = k->dbl ? 8 : 4;
    char *in = alloc(2 * n * es), *out = alloc(2 * n * es);
    void *p;
    if (k->dbl)
      p = k->kind == R2C ? (void *)fftw_plan_dft_r2c(k->rank, k->n, (double *)in, (fftw_complex *)out, flags)
                         : (void *)fftw_plan_dft(k->rank, k->n, (fftw_complex *)in, (fftw_complex *)out, FFTW_FORWARD, flags);
    else
      p = fftwf_plan_dft(k->rank, k->n, (fftwf_complex *)in, (fftwf_complex *)out, FFTW_FORWARD, flags);
    /* the signal, written after planning (FFTW_MEASURE overwrites the arrays) */
    for (size_t i = 0; i < 2 * n; i++) {
      double v = (double)((i * 7919) % 1000) / 1000.0;
      if (k->dbl) ((double *)in)[i] = v; else ((float *)in)[i] = (float)v;
    }
    double t[5];
    for (int b = 0; b < 5; b++) {
      long reps = 0;
      double t0 = now(), t1;
      do {
        if (k->dbl) fftw_execute(p); else fftwf_execute(p);
        reps++;
        t1 = now();
      } while (t1 - t0 < 0.2);
      t[b] = (t1 - t0) / reps * 1e6;
    }
    qsort(t, 5, sizeof t[0], cmp);
    printf("%s\t%.3f\n", k->name, t[2]);
    if (k->dbl) fftw_destroy_plan(p); else fftwf_destroy_plan(p);
    free(in);
    free(out);
  }
  return 0;
}
