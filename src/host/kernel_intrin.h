/*
** kernel_intrin.h: numba-cuda's casts, math and intrinsics as Lua
** functions (kjit.cuda.*, kjit.math.*): the interpreted simulator's side
** (the kernel runs as Lua, one coroutine per thread: kernel.c), and plain
** functions outside kernels where they mean something there (casts, math).
**
** Warp collectives and block barriers with a predicate yield their
** coroutine; kernel.c's scheduler calls kki_resolve and kki_release to
** complete them (the meeting rules of runtime/cudasim.h).
*/
#ifndef KJIT_KERNEL_INTRIN_H
#define KJIT_KERNEL_INTRIN_H
#include <stddef.h>
#include <stdint.h>
#include "lua.h"

/* Pushes cast id (B_CUDA_INT8 ... B_CUDA_FLOAT64) of the number at idx
** (checked by the caller): numba's wrapping casts, as cg_kmath.c. */
void kki_cast(lua_State *L, int id, int idx);

/* One thread of the interpreted block: what it waits at. */
typedef struct KIThread {
  int op;              /* KI_* (a warp op, or a barrier with predicate); -1: plain syncthreads */
  uint32_t mask;
  int32_t b;
  int isfloat;         /* the value's subtype */
  int64_t val, res;    /* the value's bits, the result */
} KIThread;

typedef struct KIBlock {
  KIThread *th;
  size_t n;            /* threads in the block */
  size_t cur;          /* the running thread's linear index */
} KIBlock;

/* The block of the running interpreted kernel (kernel.c sets it), or NULL. */
extern __thread KIBlock *kki_cur;

/* Thread states of kernel.c's scheduler. */
enum { KKI_RUN, KKI_BAR, KKI_DONE, KKI_WARP, KKI_GRID };

/* Completes the warp meetings that can be (lanes KKI_WARP -> KKI_RUN);
** returns how many lanes it released. */
size_t kki_resolve(KIBlock *b, char *state);

/* Every live thread is at a barrier: computes the results of the
** predicate barriers and sets every KKI_BAR lane to KKI_RUN. */
void kki_release(KIBlock *b, char *state);

/* Puts the functions into the kjit.cuda table at cuda_idx and the
** kjit.math table at math_idx, registered with the typers. */
void kki_open(lua_State *L, int cuda_idx, int math_idx);

#endif
