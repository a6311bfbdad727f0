/*
** rand_host.h: kjit's own Philox4x32-10 generator (rand_host.c), used by
** kjit.random and by kjit.cuda.random in the simulator when cuRAND's library
** (libcurand) is not there, and by both when asked (backend = "kjit").
**
** Its 32-bit stream is cuRAND's CURAND_RNG_PSEUDO_PHILOX4_32_10 stream for
** the same seed and offset, value for value (checked against libcurand by
** tests/lua/test_random.lua): cuRAND's generator runs 65536 subsequences;
** value e of the stream is word e % 4 of Philox4x32-10 with key = the seed
** (low, high 32 bits) and counter = {r low, r high, s, 0}, where the 4-word
** block b = e / 4 has s = b % 65536 and r = b / 65536.
** From that stream: bits are the values; f32 uniforms are (v + 0.5) * 2^-32
** as cuRAND computes them (so the same floats); f32 normals are cuRAND's
** Box-Muller on consecutive pairs (the same up to the last bits of logf and
** sincosf). f64 uniforms, f64 normals and Poisson draws are kjit's own from
** the same stream (documented in docs/guide/fft-random.md): cuRAND orders
** its f64 output in a way that depends on the request, which is not
** reproduced.
*/
#ifndef KJIT_RAND_HOST_H
#define KJIT_RAND_HOST_H

#include <stddef.h>
#include <stdint.h>

typedef struct KPhilox {
  uint64_t seed;
  uint64_t pos;   /* 32-bit values of the stream used so far (offset included) */
} KPhilox;

void kphilox_bits(KPhilox *g, uint32_t *out, size_t n);
void kphilox_uniform(KPhilox *g, void *out, size_t n, int dbl);
/* consume 2 * ceil(n / 2) values (f32) or 4 * ceil(n / 2) (f64), as Box-Muller
** makes pairs */
void kphilox_normal(KPhilox *g, void *out, size_t n, int dbl, double mean, double std);
void kphilox_lognormal(KPhilox *g, void *out, size_t n, int dbl, double mean, double std);
void kphilox_poisson(KPhilox *g, uint32_t *out, size_t n, double lambda);

#endif
