/*
** kernel.h: cuda.jit kernels: compiling (PTX for the GPU, CPU code for the
** simulator), launching with bracket configs, the interpreted reference
** launcher, and the kjit.cuda built-ins kernels call.
*/
#ifndef KJIT_KERNEL_H
#define KJIT_KERNEL_H
#include "lua.h"

/* Adds cuda.jit, cuda.compile_ptx and the kernel built-ins to the
** kjit.cuda table at the top of the stack, and registers the built-ins'
** values for the typers (ir/ir_builtins.h). */
void kk_open(lua_State *L);

/* Raises the first error a kernel launched since the last check recorded
** on the device (bounds errors ...); called by every synchronizing call
** (cudadrv.c's sync hook). complete: all launches have finished, so the
** records read as clean are done with; else they stay pending (a kernel
** on another stream may still be running). */
void kk_check_errors(lua_State *L, int complete);

#endif
