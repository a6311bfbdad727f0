/*
** rand_host.c: kjit's Philox4x32-10 (rand_host.h says which numbers it
** gives and why they are cuRAND's where they are).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "libs/rand_host.h"

#define SUBSEQ 65536u   /* cuRAND's host and device philox generators: blocks per round */

static void philox(const uint32_t ctr[4], uint32_t k0, uint32_t k1, uint32_t out[4]) {
  uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
  for (int r = 0; r < 10; r++) {
    if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    uint64_t p0 = (uint64_t)0xD2511F53u * x0, p1 = (uint64_t)0xCD9E8D57u * x2;
    uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0, y2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
    x0 = y0; x1 = (uint32_t)p1; x2 = y2; x3 = (uint32_t)p0;
  }
  out[0] = x0; out[1] = x1; out[2] = x2; out[3] = x3;
}

/* The next n values of the stream. */
static void stream(KPhilox *g, uint32_t *out, size_t n) {
  uint32_t w[4];
  uint64_t e = g->pos, end = g->pos + n, have = UINT64_MAX;
  for (size_t i = 0; e < end; e++, i++) {
    uint64_t b = e >> 2;
    if (b != have) {
      uint64_t r = b / SUBSEQ;
      uint32_t ctr[4] = { (uint32_t)r, (uint32_t)(r >> 32), (uint32_t)(b % SUBSEQ), 0 };
      philox(ctr, (uint32_t)g->seed, (uint32_t)(g->seed >> 32), w);
      have = b;
    }
    out[i] = w[e & 3];
  }
  g->pos = end;
}

void kphilox_bits(KPhilox *g, uint32_t *out, size_t n) { stream(g, out, n); }

#define CHUNK 1024   /* values drawn at a time for the transforms below */

static float u32f(uint32_t x) { return x * 2.3283064e-10f + (2.3283064e-10f / 2.0f); }
static double u64d(uint32_t x, uint32_t y) {   /* cuRAND's _curand_uniform_double_hq */
  uint64_t z = (uint64_t)x ^ ((uint64_t)y << 21);
  return (double)z * 0x1p-53 + 0x1p-54;
}

void kphilox_uniform(KPhilox *g, void *out, size_t n, int dbl) {
  uint32_t v[CHUNK];
  for (size_t i = 0; i < n;) {
    size_t m = n - i < CHUNK / 2 ? n - i : CHUNK / 2;
    stream(g, v, dbl ? 2 * m : m);
    for (size_t k = 0; k < m; k++, i++) {
      if (dbl) ((double *)out)[i] = u64d(v[2 * k], v[2 * k + 1]);
      else ((float *)out)[i] = u32f(v[k]);
    }
  }
}

/* cuRAND's _curand_box_muller, in float: the pair (x, y) gives sin, cos. */
static void box_muller_f32(uint32_t x, uint32_t y, float *a, float *b) {
  float u = u32f(x);
  float w = y * (2.3283064e-10f * 6.2831855f) + (2.3283064e-10f * 6.2831855f) / 2.0f;
  float s = sqrtf(-2.0f * logf(u));
  *a = sinf(w) * s;
  *b = cosf(w) * s;
}

void kphilox_normal(KPhilox *g, void *out, size_t n, int dbl, double mean, double std) {
  uint32_t v[CHUNK];
  if (!dbl) {
    /* As cuRAND: normal e of the stream is the sine (e even) or cosine (e
    ** odd) of the pair (e & ~1, e | 1), so a request starting at an odd
    ** position begins with a cosine; the count is rounded up to even. */
    uint64_t pos = g->pos, end = pos + n + (n & 1);
    for (size_t i = 0; i < n;) {
      uint64_t e = pos + i, start = e & ~(uint64_t)1;
      size_t m = n - i < CHUNK - 2 ? n - i : CHUNK - 2;
      size_t count = (size_t)(((e + m + 1) & ~(uint64_t)1) - start);
      g->pos = start;
      stream(g, v, count);
      for (size_t k = 0; k < count && i < n; k += 2) {
        float z[2];
        box_muller_f32(v[k], v[k + 1], &z[0], &z[1]);
        for (int h = 0; h < 2 && i < n; h++)
          if (start + k + h >= e) ((float *)out)[i++] = (float)mean + (float)std * z[h];
      }
    }
    g->pos = end;
    return;
  }
  for (size_t i = 0; i < n;) {   /* kjit's own: pairs of f64 uniforms */
    size_t pairs = (n - i + 1) / 2;
    if (pairs > CHUNK / 4) pairs = CHUNK / 4;
    stream(g, v, 4 * pairs);
    for (size_t k = 0; k < pairs; k++) {
      double u = u64d(v[4 * k], v[4 * k + 1]), w = u64d(v[4 * k + 2], v[4 * k + 3]);
      double s = sqrt(-2.0 * log(u));
      ((double *)out)[i++] = mean + std * (sin(2 * M_PI * w) * s);
      if (i < n) ((double *)out)[i++] = mean + std * (cos(2 * M_PI * w) * s);
    }
  }
}

void kphilox_lognormal(KPhilox *g, void *out, size_t n, int dbl, double mean, double std) {
  kphilox_normal(g, out, n, dbl, mean, std);
  for (size_t i = 0; i < n; i++) {
    if (dbl) ((double *)out)[i] = exp(((double *)out)[i]);
    else ((float *)out)[i] = expf(((float *)out)[i]);
  }
}

static double next_u(KPhilox *g) {
  uint32_t v[2];
  stream(g, v, 2);
  return u64d(v[0], v[1]);
}

/* NumPy's algorithms: multiplication of uniforms below 10, Hormann's PTRS
** (transformed rejection with squeeze) from 10 on. */
static uint32_t poisson1(KPhilox *g, double lam) {
  if (lam <= 0) return 0;
  if (lam < 10) {
    double enlam = exp(-lam), prod = 1.0;
    uint32_t x = 0;
    for (;;) {
      prod *= next_u(g);
      if (prod > enlam) x++;
      else return x;
    }
  }
  double slam = sqrt(lam), loglam = log(lam);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double U = next_u(g) - 0.5, V = next_u(g), us = 0.5 - fabs(U);
    double k = floor((2 * a / us + b) * U + lam + 0.43);
    if (us >= 0.07 && V <= vr) return (uint32_t)k;
    if (k < 0 || (us < 0.013 && V > us)) continue;
    if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1))
      return k > 4294967295.0 ? UINT32_MAX : (uint32_t)k;
  }
}

void kphilox_poisson(KPhilox *g, uint32_t *out, size_t n, double lambda) {
  for (size_t i = 0; i < n; i++) out[i] = poisson1(g, lambda);
}
