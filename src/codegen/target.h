/*
** target.h: what the bytecode code generator asks of its target, as one
** table of hooks. Only target_*.c files know which target they describe;
** everything else in src/codegen/ reads this table.
**
** Targets: the CPU (target_cpu.c, kjit.jit through ORC); cuda.jit kernels
** for libNVVM (target_nvptx.c: libdevice math, PTX special registers,
** shared memory, no C runtime, no string globals, the device kernel
** entry) and for the simulator (target_sim.c: CPU code calling cudasim.c
** for the thread state, the KEntry wrapper).
*/
#ifndef KJIT_CG_TARGET_H
#define KJIT_CG_TARGET_H

#include <stddef.h>
#include <llvm-c/Core.h>
#include "common/cuda_intrin.h"   /* the intrin hook's ops, KI_* */

struct CG;

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
                                    (interrupts, runtime_poll.c): CPU and
                                    simulated code; never a GPU kernel */
  int pure_calls;                /* pure specializations (kfa_mark_pure) get
                                    the plain-value calling convention */
  /* 1: the target compiles cuda.jit kernels: the typer's kernel rules
  ** (KtySession.kernel: the kjit.cuda built-ins, f32 arithmetic as CUDA
  ** C), no results, the kernel's KcgKernelInfo (host/driver.c) */
  int kernel;
  /* ---- cuda.jit kernels (NULL / 0 on the CPU target) ---- */
  /* 1: the entry is a device kernel `void name(params..., i64* errrec,
  ** i64 dynshared)` (compile.h, cg_kernel.c); 0: the KEntry wrapper. */
  int kernel_entry;
  void (*barrier)(struct CG *G);          /* cuda.syncthreads() */
  void (*fence)(struct CG *G);            /* cuda.threadfence() */
  /* cuda.shared.array(n, dtype): a generic element pointer to n elements
  ** of ety (esize bytes each) shared by the block, for allocation site
  ** `site`; n == 0: the launch's dynamic shared memory, its element count
  ** in *len. */
  LLVMValueRef (*shared_array)(struct CG *G, LLVMTypeRef ety, long long n, long long esize,
                               long long site, LLVMValueRef *len);
  /* atomic float add at p, returning the old value; NULL: atomicrmw fadd */
  LLVMValueRef (*atomic_fadd)(struct CG *G, LLVMValueRef p, LLVMValueRef v);
  unsigned global_addrspace;     /* the fallback of deferred reads from a
                                    kernel's array parameters (cg_defer.c)
                                    lives here: global memory, so that the
                                    reads stay global loads */
  unsigned const_addrspace;      /* a kernel's constant arrays (cg_frozen.c):
                                    4, the GPU's constant memory; 0 elsewhere */
  int zero_by_store;             /* zero local arrays with a store of a null
                                    aggregate, not llvm.memset (whose
                                    attributes LLVM 7 NVVM cannot read) */
  /* LLVM IR text defining kjit_rt_cmp_int_float and kjit_rt_forlimit,
  ** for targets without the C runtime (linked by the caller when the
  ** module calls them), or NULL */
  const char *runtime_ir;
  int version_novec;             /* the checked copy of a versioned loop
                                    (cg_version.c) is marked not to
                                    vectorize (LLVM 7 NVVM: no such hint) */
  int fuse_tests;                /* `while a and b` with a pure, cheap b: one
                                    branch on both tests (cg_fuse.c) */
  /* numba-cuda's lane, warp and block intrinsics (op: KI_* below) on a
  ** 32-bit mask and lane b (i32 values) and a value v (i64; is64: all 64
  ** bits matter, else the low 32): the result as an i64 (cg_cuda_intrin.c
  ** says what each op means). NULL: none (the CPU). */
  LLVMValueRef (*intrin)(struct CG *G, int op, LLVMValueRef mask, LLVMValueRef v,
                         LLVMValueRef b, int is64);
  /* print(...) in a kernel: n items, kinds[i] KP_* (cg_print.c), vals[i]
  ** an i64, a double or an i1, strs[i] the constant text (KP_STR). Prints
  ** them as Lua's print does (tabs between, a newline). NULL: none. */
  void (*print)(struct CG *G, int n, const int *kinds, LLVMValueRef *vals, const char *const *strs);
} KcgTarget;

enum { KP_INT, KP_NUM, KP_BOOL, KP_STR };


extern const KcgTarget kcg_target_cpu;
extern const KcgTarget kcg_target_nvptx;   /* target_nvptx.c: libNVVM kernels */
extern const KcgTarget kcg_target_sim;     /* target_sim.c: simulated kernels */

#endif
