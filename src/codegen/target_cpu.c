/*
** target_cpu.c: the CPU target (kjit.jit code run through ORC): LLVM's
** intrinsics or the C library for math, flat address space, the kjit_rt_*
** helpers of runtime.c, stack checks at compiled calls, pure calls.
*/
#include "codegen/target.h"

const KcgTarget kcg_target_cpu = {
  .name = "cpu",
  .math_name = NULL,          /* intrinsics, else libm */
  .data_addrspace = 0,
  .special_reg = NULL,        /* no special registers */
  .has_fneg = 1,
  .has_runtime = 1,           /* runtime.c's helpers */
  .string_globals = 1,
  .stack_checks = 1,
  .poll = 1,                  /* kjit_rt_poll (runtime_poll.c) */
  .pure_calls = 1,
  .kernel = 0,                /* kjit.jit functions; the rest is for kernels */
  .version_novec = 1,         /* versioned loops' checked copies do not vectorize */
};
