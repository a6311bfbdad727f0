/*
** target.h: what the bytecode code generator asks of its target, as one
** table of hooks. Only target_*.c files know which target they describe;
** everything else in src/codegen/ reads this table.
**
** Targets now: the CPU (target_cpu.c, kjit.jit through ORC). Planned:
** NVPTX (target_nvptx.c: libdevice math, global address space for array
** data, thread and block registers, no C runtime) and the simulator
** (target_sim.c: CPU code with the simulator's thread state).
*/
#ifndef KJIT_CG_TARGET_H
#define KJIT_CG_TARGET_H

#include <stddef.h>
#include <llvm-c/Core.h>

typedef struct KcgTarget {
  const char *name;              /* "cpu", "nvptx", "sim" */
  /* Writes the name of the routine computing math function `base` ("sin",
  ** "atan2", "floor", "pow", ...) in f32 or f64 into buf and returns 1; or
  ** returns 0 to use LLVM's intrinsic (or the C library). May be NULL. */
  int (*math_name)(const char *base, int is_f32, char *buf, size_t n);
  unsigned data_addrspace;       /* address space of array data pointers */
  /* Emits special register `group` (0 threadIdx, 1 blockIdx, 2 blockDim,
  ** 3 gridDim), axis 0..2, as an i64 at the builder. NULL: none (CPU). */
  LLVMValueRef (*special_reg)(LLVMModuleRef M, LLVMBuilderRef B, int group, int axis);
  int has_fneg;                  /* fneg instruction (LLVM 7 NVVM IR: no) */
  int has_runtime;               /* kjit_rt_* C helpers can be called */
  int string_globals;            /* constant strings (error messages) in
                                    the generic address space */
  int stack_checks;              /* calls compare the stack pointer with
                                    err->stack_limit */
  int poll;                      /* loops and calls poll kjit_rt_poll
                                    (interrupts); 0 until the runtime side
                                    registers the symbol */
} KcgTarget;

extern const KcgTarget kcg_target_cpu;

#endif
