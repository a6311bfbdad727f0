/*
** fft_cuda.h: KFftDesc (fft_host.h) executed with cuFFT on device arrays.
** libcufft is opened on first use (libs/libfind.h: KJIT_CUFFT, the loader
** path, CUDA_HOME, /usr/local/cuda, pip's nvidia wheels). Every function
** raises a Lua error naming `what` (the user's call) and the cuFFT or driver
** status; a missing library is such an error too.
*/
#ifndef KJIT_FFT_CUDA_H
#define KJIT_FFT_CUDA_H

#include "lua.h"
#include "host/cudadrv.h"
#include "libs/fft_host.h"

typedef struct KCufft KCufft;   /* the cuFFT plans of one KFftDesc on one device */

/* 1 if libcufft loaded (it needs no GPU to load); else 0 and *why. */
int kcufft_available(const char **why);
/* "cuFFT 12.0.0 (libcufft.so.12)" or the reason it is missing. */
const char *kcufft_backend(void);

/* Plans d on the current device (the caller did kcu_ensure). */
KCufft *kcufft_make(lua_State *L, const KFftDesc *d, const char *what);
/* in -> out (device pointers of the current device) on stream s. in may be
** overwritten by a c2r transform. */
void kcufft_exec(lua_State *L, KCufft *p, KCuDevPtr in, KCuDevPtr out, KCuStream s,
                 const char *what);
void kcufft_destroy(KCufft *p);   /* never raises */

/* x[0..count) *= s on the device (a small PTX kernel), on stream st. */
void kcufft_scale(lua_State *L, KCuDevPtr x, int64_t count, int dbl, double s, KCuStream st,
                  const char *what);
/* Copies the overlap of a C-contiguous array of shape src_shape at src into
** one of shape dst_shape at dst (already zeroed), ndim dims of esize-byte
** elements, on stream st (cuMemcpy2DAsync, one per changed axis through
** scratch arrays pushed on the Lua stack). */
void kcufft_resize(lua_State *L, KCuDevPtr dst, const int64_t *dst_shape, KCuDevPtr src,
                   const int64_t *src_shape, int ndim, size_t esize, KCuStream st,
                   const char *what);

#endif
