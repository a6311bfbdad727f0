/*
** ir_type_cuda.h: the typing rules of numba-cuda's intrinsics in kernels
** (the INTRIN rows of ir_builtins.h), apart from ir_type.c.
*/
#ifndef KJIT_IR_TYPE_CUDA_H
#define KJIT_IR_TYPE_CUDA_H
#include <stddef.h>
#include "common/compile.h"
#include "ir/ir_type.h"

/* The result type of a call of intrinsic id with the n arguments args
** (none T_UNKNOWN; kargs their constants); or a T_UNKNOWN type with the
** reason in err. */
Type kty_cuda_intrin(int id, const Type *args, const KtyConst *kargs, int n, char *err,
                     size_t errlen);

#endif
