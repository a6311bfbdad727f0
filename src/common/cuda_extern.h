/*
** cuda_extern.h: an external device function declared with
** cuda.declare_device(name, signature [, {sim = fn}]) (host/interop.c),
** as the typer (ir/ir_type.c, T_EXTERN) and the code generator
** (codegen/cg_cuda.c) read it.
**
** The calling convention is numba-cuda's, so that its .cu and .ptx files
** link unchanged:
**     extern "C" __device__ int name(T *ret, args...);
** the result goes through the first parameter (a slot in local memory the
** caller gives); the int returned is a status the caller ignores (numba's
** Python-exception flag, always 0 from foreign code). A void function
** still gets the pointer (to an i32 slot nobody reads), as numba does.
** Scalars are passed by value in their C type (int32 as int, float32 as
** float ...); an array parameter ("float32[:]") is passed as a pointer to
** the array's first element (numba-cuda's CPointer(float32)).
**
** Where the code does not run on the GPU (the simulator, kjit.jit, the
** interpreter) the call runs the declaration's `sim` function instead: a
** plain Lua function, compiled like any function a kernel calls; without
** one, such a call raises a Lua error when it runs (compiled as
** interpreted), saying so.
*/
#ifndef KJIT_CUDA_EXTERN_H
#define KJIT_CUDA_EXTERN_H

#include <stdint.h>
#include "common/compile.h"

#define KEXT_MT "kjit.cuda.extern"
#define KEXT_NAMELEN 128

typedef struct KExtern {
  char name[KEXT_NAMELEN];       /* the symbol (extern "C": as written) */
  char sig[160];                 /* the signature as written, for messages */
  int ret;                       /* kjit_dtype of the result; -1: void */
  int nargs;
  int8_t args[KJIT_MAXARGS];     /* kjit_dtype of each parameter */
  uint8_t ptr[KJIT_MAXARGS];     /* 1: an array, passed as a pointer to its
                                    first element */
} KExtern;

#endif
