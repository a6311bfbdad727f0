/*
** kcg.h: the bytecode code generator's public entry points.
**
** kcg_emit emits the specializations a typer session uses (src/ir/) into
** an LLVM module, with an entry wrapper of the KEntry ABI (compile.h), or
** a kernel entry. The whole bytecode pipeline (front end, IR, types, these
** entry points) is driven by host/driver.c.
*/
#ifndef KJIT_KCG_H
#define KJIT_KCG_H

#include <llvm-c/Core.h>
#include "common/compile.h"
#include "ir/ir_type.h"
#include "codegen/target.h"

/* Emits every used specialization of S into M and an entry named
** entry_name for root. Compile errors longjmp through S->jb with the
** located message in S->err. *has_calls: a compiled call was emitted (the
** dispatcher then sets err->stack_limit). */
/* Does root (or a function it calls) hold Lua values (tables: cg_lua.c)?
** Such code calls the Lua API and may raise Lua errors (longjmp). */
int kcg_uses_lua(KtySession *S, KtySpec *root);

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

/* What a kernel's emit gives besides the module. */
typedef struct KcgKernelInfo {
  const char **msgs; int nmsgs;   /* error texts by number (targets
                                     without string globals; in S's arena) */
  int uses_sync;                  /* KI_USES_* bits (cuda_intrin.h) */
} KcgKernelInfo;

/* kcg_emit for a cuda.jit kernel (t: kcg_target_nvptx or kcg_target_sim):
** the entry is the target's (a device kernel, or KEntry). */
void kcg_emit_kernel(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
                     const char *entry_name, const KcgTarget *t, int boundscheck,
                     int fastmath, KcgKernelInfo *info);

#endif
