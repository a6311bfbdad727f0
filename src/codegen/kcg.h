/*
** kcg.h: the bytecode code generator's public entry points.
**
** kcg_emit emits the specializations a typer session uses (src/ir/) into
** an LLVM module, with an entry wrapper of the KEntry ABI (codegen.h).
** kcg_compile_cpu is the whole bytecode pipeline for kjit.jit
** (KJIT_PIPELINE=bytecode): kbc_dump -> kbc_decode -> kir_build ->
** kty_spec -> kcg_emit.
*/
#ifndef KJIT_KCG_H
#define KJIT_KCG_H

#include <llvm-c/Core.h>
#include "compile.h"
#include "ir/ir_type.h"
#include "codegen/target.h"

/* Emits every used specialization of S into M and an entry named
** entry_name for root. Compile errors longjmp through S->jb with the
** located message in S->err. *has_calls: a compiled call was emitted (the
** dispatcher then sets err->stack_limit). */
void kcg_emit(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
              const char *entry_name, const KcgTarget *t, int boundscheck, int fastmath,
              int *has_calls);

/* kjit.prange on the CPU (cg_prange.c): parallel, the jit option (loops
** the facts allow run on the thread pool); notes, when not NULL, collects
** f:inspect("parallel")'s lines (identical lines once, each ending in a
** newline, as many as fit in notescap bytes, *nnotes the bytes used). */
typedef struct KcgParallel {
  int parallel;
  char *notes;
  int notescap;
  int *nnotes;
} KcgParallel;

/* kcg_emit with the prange option and notes (kcg_emit: parallel off, no
** notes). */
void kcg_emit_par(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
                  const char *entry_name, const KcgTarget *t, int boundscheck, int fastmath,
                  int *has_calls, KcgParallel *par);

/* KJIT_PIPELINE=bytecode in the environment (read at each compile). */
int kcg_bytecode_pipeline(void);

/* What the dispatcher keeps from a compile. */
typedef struct KcgCompiled {
  int nargs;                 /* parameters the entry reads */
  int nret;
  Type rets[KJIT_MAXRETS];
  int calls;                 /* makes compiled calls */
  char *types;               /* malloc'd text for f:inspect("types") */
  char chunkname[128];
} KcgCompiled;

/* Compiles the Lua function at stack index fidx for argument types
** args[0..nargs) (T_FUNC arguments: the function is at stack index
** argbase + i; argbase 0 refuses them) into M for the CPU, with the entry
** entry_name. Uses S's arena, options and L. Returns 0, or -1 with the
** message in S->errmsg. */
int kcg_compile_cpu(Session *S, int fidx, int nargs, const Type *args, int argbase,
                    LLVMContextRef C, LLVMModuleRef M, const char *entry_name,
                    KcgCompiled *out);

/* What a kernel's emit gives besides the module. */
typedef struct KcgKernelInfo {
  const char **msgs; int nmsgs;   /* error texts by number (targets
                                     without string globals; in S's arena) */
  int uses_sync;                  /* calls cuda.syncthreads */
} KcgKernelInfo;

/* kcg_emit for a cuda.jit kernel (t: kcg_target_nvptx or kcg_target_sim):
** the entry is the target's (a device kernel, or KEntry). */
void kcg_emit_kernel(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
                     const char *entry_name, const KcgTarget *t, int boundscheck,
                     int fastmath, KcgKernelInfo *info);

/* A compiled kernel (kcg_compile_kernel). */
typedef struct KcgKernel {
  int nargs;
  Type args[KJIT_MAXARGS];   /* the root's parameter types */
  char *types;               /* malloc'd text for k:inspect("types") */
  char chunkname[128];
  char **msgs; int nmsgs;    /* malloc'd error texts by number */
  int uses_sync;
} KcgKernel;

/* Compiles the kernel function at stack index fidx for argument types
** args[0..nargs) into M for target t (kernel typing rules), with the entry
** entry_name. Returns 0, or -1 with the located message in S->errmsg. */
int kcg_compile_kernel(Session *S, int fidx, int nargs, const Type *args,
                       LLVMContextRef C, LLVMModuleRef M, const char *entry_name,
                       const KcgTarget *t, KcgKernel *out);

/* f:inspect("types") text of a typer session (malloc'd); kernel: the
** root is named "kernel function", the others "device function" */
char *kcg_types_text(KtySession *T, int kernel);

#endif
