/*
** target_cpu.c: the CPU target (kjit.jit code run through ORC): LLVM's
** intrinsics or the C library for math, flat address space, the kjit_rt_*
** helpers of runtime.c, stack checks at compiled calls.
*/
#include "codegen/target.h"

const KcgTarget kcg_target_cpu = {
  "cpu",
  NULL,      /* math: intrinsics, else libm */
  0,         /* data address space */
  NULL,      /* no special registers */
  1,         /* fneg */
  1,         /* runtime helpers */
  1,         /* string globals */
  1,         /* stack checks */
  1,         /* polls kjit_rt_poll (runtime_poll.c) */
  0, NULL, NULL, NULL, NULL, 0, 0, NULL,   /* no kernels */
  1,         /* the checked copies of versioned loops do not vectorize */
};
