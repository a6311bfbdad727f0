/*
** rand_cuda.h: cuRAND's host API, loaded with dlopen on first use
** (libs/libfind.h: KJIT_CURAND, the loader path, CUDA_HOME, /usr/local/cuda,
** pip's nvidia wheels). The same calls serve the device generators of
** kjit.cuda.random (curandCreateGenerator) and the host generators of
** kjit.random and of the simulator (curandCreateGeneratorHost, which needs
** no GPU and gives the device generator's numbers).
**
** Functions return cuRAND's status (0: success) and set *call to the name
** of the cuRAND function that failed; rand_lua.c raises the Lua error.
*/
#ifndef KJIT_RAND_CUDA_H
#define KJIT_RAND_CUDA_H

#include <stddef.h>
#include <stdint.h>

enum { KR_PHILOX, KR_XORWOW, KR_MRG32K3A, KR_SOBOL32 };   /* generator kinds */
enum { KR_BITS, KR_UNIFORM, KR_NORMAL, KR_LOGNORMAL, KR_POISSON };   /* draws */

int kcurand_available(const char **why);
/* "cuRAND 10.4.0 (libcurand.so.10)" or the reason it is missing */
const char *kcurand_backend(void);
const char *kcurand_status_name(int status);

/* host: curandCreateGeneratorHost; else on the current device (the caller
** made its context current). seed is ignored for sobol32, dims for the
** others. */
int kcurand_create(void **g, int kind, int host, uint64_t seed, uint64_t offset,
                   unsigned dims, const char **call);
int kcurand_set_stream(void *g, void *stream, const char **call);
/* out: n values (u32 for KR_BITS and KR_POISSON, else f32 or f64 as dbl);
** a, b: mean and std (normal, lognormal), a: lambda (poisson). */
int kcurand_generate(void *g, int draw, void *out, size_t n, int dbl, double a, double b,
                     const char **call);
void kcurand_destroy(void *g);

#endif
