/*
** fft_host.h: one FFT as kjit.fft and kjit.cuda.fft see it (KFftDesc), and
** its execution on host memory with FFTW (fft_host.c). The Lua side
** (fft_lua.c) turns arrays and options into a KFftDesc; the same KFftDesc
** runs with FFTW on host arrays and simulator memory, and with cuFFT on
** device arrays (fft_cuda.c).
**
** Data are C-contiguous. A complex element is two reals (re, im) of the
** dtype: kjit stores complex arrays as real arrays whose last dimension is 2.
*/
#ifndef KJIT_FFT_HOST_H
#define KJIT_FFT_HOST_H

#include <stddef.h>
#include <stdint.h>

enum { KFFT_FWD, KFFT_INV, KFFT_R2C, KFFT_C2R };

typedef struct KFftDesc {
  int kind;          /* KFFT_* */
  int dbl;           /* 1: f64, 0: f32 */
  int rank;          /* dimensions of the data, in elements (complex
                        elements for c2c), 1..3 */
  int64_t n[3];      /* the data's shape: for c2c the complex shape; for
                        r2c and c2r the real shape (the complex side has
                        n[h]/2 + 1 there, h the last transformed axis) */
  int naxes;         /* transformed axes: 1..rank */
  int axes[3];       /* 0-based, increasing */
  int effort;        /* FFTW's planner: 0 FFTW_ESTIMATE, 1 FFTW_MEASURE,
                        2 FFTW_PATIENT (cuFFT ignores it) */
} KFftDesc;

/* The element shapes of the input and output of d (complex elements on a
** complex side), in[0..rank) and out[0..rank). */
void kfft_sides(const KFftDesc *d, int64_t in[3], int64_t out[3]);

/* 1 if FFTW was built in and loads (it is opened on first use: the first
** call of this or kfft_host_exec); else 0 and *why says what to install or
** why it did not load. */
int kfft_host_available(const char **why);

/* FFTW's version text ("fftw-3.3.10-sse2-avx"), NULL when unavailable. */
const char *kfft_host_version(void);

/* Runs d on host memory, out of place (in and out must not overlap), or in
** place for c2c (in == out). A c2r
** transform may overwrite its input. Plans are made once per transform,
** alignment and precision (with d->effort's planner flag; cached for the
** process; the planner runs under a lock, execution does not; FFTW_MEASURE
** and FFTW_PATIENT plan on scratch arrays, never on in and out). Returns 0,
** or -1 with a message in err. */
int kfft_host_exec(const KFftDesc *d, void *in, void *out, char *err, size_t errn);

/* x[0..count) *= s, reals of the precision dbl. */
void kfft_host_scale(void *x, int64_t count, int dbl, double s);

#endif
