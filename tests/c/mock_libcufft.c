/*
** mock_libcufft.c: a fake cuFFT for kjit's tests (libmockcufft.so, loaded
** with KJIT_CUFFT=<path> next to the fake driver, mock_libcuda.c, whose
** device pointers are host addresses). It implements the entry points
** src/libs/fft_cuda.c uses, with a direct DFT over cufftMakePlanMany64's
** advanced layout (n, inembed/istride/idist, onembed/ostride/odist, batch),
** so a wrong layout from kjit gives wrong numbers. c2r: rank 1 only.
**
** Environment: MOCK_CUFFT_FAIL=exec makes every cufftExec* return
** CUFFT_EXEC_FAILED (6).
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define MAXPLANS 256
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

enum { R2C = 0x2a, C2R = 0x2c, C2C = 0x29, D2Z = 0x6a, Z2D = 0x6c, Z2Z = 0x69 };

typedef struct Plan {
  int used, made, type, rank;
  long long n[3], inembed[3], onembed[3], istride, idist, ostride, odist, batch;
  void *stream;
} Plan;
static Plan plans[MAXPLANS];

static int failing(void) {
  const char *e = getenv("MOCK_CUFFT_FAIL");
  return e && strcmp(e, "exec") == 0;
}

API int cufftGetVersion(int *v) { *v = 99999; return 0; }

API int cufftCreate(int *h) {
  for (int k = 1; k < MAXPLANS; k++)
    if (!plans[k].used) { memset(&plans[k], 0, sizeof plans[k]); plans[k].used = 1; *h = k; return 0; }
  return 2;   /* CUFFT_ALLOC_FAILED */
}

static Plan *get(int h) { return h > 0 && h < MAXPLANS && plans[h].used ? &plans[h] : NULL; }

API int cufftMakePlanMany64(int h, int rank, long long *n, long long *inembed, long long istride,
                            long long idist, long long *onembed, long long ostride, long long odist,
                            int type, long long batch, size_t *work) {
  Plan *p = get(h);
  if (p == NULL) return 1;
  if (rank < 1 || rank > 3 || batch < 1 || istride < 1 || ostride < 1) return 4;
  p->type = type; p->rank = rank;
  for (int k = 0; k < rank; k++) {
    if (n[k] < 1) return 8;   /* CUFFT_INVALID_SIZE */
    p->n[k] = n[k];
    p->inembed[k] = inembed ? inembed[k] : n[k];
    p->onembed[k] = onembed ? onembed[k] : n[k];
  }
  p->istride = istride; p->idist = idist; p->ostride = ostride; p->odist = odist; p->batch = batch;
  p->made = 1;
  if (work) *work = 0;
  return 0;
}

API int cufftSetStream(int h, void *s) {
  Plan *p = get(h);
  if (p == NULL) return 1;
  p->stream = s;
  return 0;
}

API int cufftDestroy(int h) {
  Plan *p = get(h);
  if (p == NULL) return 1;
  p->used = 0;
  return 0;
}

/* element offset of multi-index x in an embedding */
static long long off(const Plan *p, const long long *emb, const long long *x) {
  long long o = 0;
  for (int k = 0; k < p->rank; k++) o = o * emb[k] + x[k];
  return o;
}

static double ld(const void *a, long long i, int dbl) {
  return dbl ? ((const double *)a)[i] : ((const float *)a)[i];
}
static void st(void *a, long long i, int dbl, double v) {
  if (dbl) ((double *)a)[i] = v; else ((float *)a)[i] = (float)v;
}

/* cin/cout: complex input/output; real transforms along the last of rank dims */
static int exec(int h, const void *in, void *out, int dir, int cin, int cout, int dbl) {
  Plan *p = get(h);
  if (p == NULL || !p->made) return 1;
  if (failing()) return 6;
  long long ilen[3] = { 1, 1, 1 }, olen[3] = { 1, 1, 1 }, total_in = 1, total_out = 1;
  for (int k = 0; k < p->rank; k++) { ilen[k] = olen[k] = p->n[k]; }
  if (!cout) { if (p->rank != 1) return 14; }
  if (cin && !cout) ilen[p->rank - 1] = p->n[p->rank - 1] / 2 + 1;
  if (!cin && cout) olen[p->rank - 1] = p->n[p->rank - 1] / 2 + 1;
  for (int k = 0; k < p->rank; k++) { total_in *= ilen[k]; total_out *= olen[k]; }
  /* a copy of the input (in-place plans) */
  size_t es = dbl ? 8 : 4, ibytes = 0;
  long long maxi = (p->batch - 1) * p->idist + (off(p, p->inembed, (long long[]){ ilen[0] - 1,
                    p->rank > 1 ? ilen[1] - 1 : 0, p->rank > 2 ? ilen[2] - 1 : 0 })) * p->istride;
  ibytes = (size_t)(maxi + 1) * es * (cin ? 2 : 1);
  void *src = malloc(ibytes);
  double *res = malloc(sizeof(double) * 2 * (size_t)total_out);
  if (!src || !res) { free(src); free(res); return 2; }
  memcpy(src, in, ibytes);
  for (long long b = 0; b < p->batch; b++) {
    for (long long o = 0; o < total_out; o++) {
      long long xo[3] = { 0, 0, 0 }, r = o;
      for (int k = p->rank - 1; k >= 0; k--) { xo[k] = r % olen[k]; r /= olen[k]; }
      double re = 0, im = 0;
      if (cin && !cout) {   /* c2r, rank 1: the Hermitian extension */
        long long nn = p->n[0];
        for (long long k = 0; k < nn; k++) {
          long long kk = k < ilen[0] ? k : nn - k;
          double sgn = k < ilen[0] ? 1 : -1;
          long long xi[3] = { kk, 0, 0 };
          long long e = b * p->idist + off(p, p->inembed, xi) * p->istride;
          double a = ld(src, 2 * e, dbl), c = sgn * ld(src, 2 * e + 1, dbl);
          if (k == 0 || (nn % 2 == 0 && k == nn / 2)) c = 0;
          double ang = 2 * M_PI * (double)((k * xo[0]) % nn) / (double)nn;
          re += a * cos(ang) - c * sin(ang);
        }
      } else {
        for (long long i = 0; i < total_in; i++) {
          long long xi[3] = { 0, 0, 0 }, q = i;
          for (int k = p->rank - 1; k >= 0; k--) { xi[k] = q % ilen[k]; q /= ilen[k]; }
          long long e = b * p->idist + off(p, p->inembed, xi) * p->istride;
          double a = cin ? ld(src, 2 * e, dbl) : ld(src, e, dbl);
          double c = cin ? ld(src, 2 * e + 1, dbl) : 0;
          double ph = 0;
          for (int k = 0; k < p->rank; k++)
            ph += (double)((xi[k] * xo[k]) % p->n[k]) / (double)p->n[k];
          double ang = dir * 2 * M_PI * ph;
          re += a * cos(ang) - c * sin(ang);
          im += a * sin(ang) + c * cos(ang);
        }
      }
      res[2 * o] = re; res[2 * o + 1] = im;
    }
    for (long long o = 0; o < total_out; o++) {
      long long xo[3] = { 0, 0, 0 }, r = o;
      for (int k = p->rank - 1; k >= 0; k--) { xo[k] = r % olen[k]; r /= olen[k]; }
      long long e = b * p->odist + off(p, p->onembed, xo) * p->ostride;
      if (cout) { st(out, 2 * e, dbl, res[2 * o]); st(out, 2 * e + 1, dbl, res[2 * o + 1]); }
      else st(out, e, dbl, res[2 * o]);
    }
  }
  free(src);
  free(res);
  return 0;
}

static int is(int h, int t) { Plan *p = get(h); return p && p->type == t; }

API int cufftExecC2C(int h, void *in, void *out, int dir) {
  return is(h, C2C) ? exec(h, in, out, dir, 1, 1, 0) : 3;
}
API int cufftExecZ2Z(int h, void *in, void *out, int dir) {
  return is(h, Z2Z) ? exec(h, in, out, dir, 1, 1, 1) : 3;
}
API int cufftExecR2C(int h, void *in, void *out) { return is(h, R2C) ? exec(h, in, out, -1, 0, 1, 0) : 3; }
API int cufftExecD2Z(int h, void *in, void *out) { return is(h, D2Z) ? exec(h, in, out, -1, 0, 1, 1) : 3; }
API int cufftExecC2R(int h, void *in, void *out) { return is(h, C2R) ? exec(h, in, out, 1, 1, 0, 0) : 3; }
API int cufftExecZ2D(int h, void *in, void *out) { return is(h, Z2D) ? exec(h, in, out, 1, 1, 0, 1) : 3; }
