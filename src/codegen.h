/*
** codegen.h: LLVM IR generation for the specializations of a session.
*/
#ifndef KJIT_CODEGEN_H
#define KJIT_CODEGEN_H

#include <llvm-c/Core.h>
#include "compile.h"

/* Calling convention of the entry point the dispatcher calls:
**   int32_t entry(int64_t *args, int64_t *rets, KErr *err)
** args[i]: i64 value, f64 bits, 0/1 for booleans, or a KBuffer* for arrays;
** rets[i]: i64 value, f64 bits (f32 results widened) or 0/1; for results
** that may be false/nil, rets[KJIT_MAXRETS + i] is 1 when it holds a number.
** rets must have room for 2 * KJIT_MAXRETS slots.
** Returns 0 on success, nonzero with *err filled on a run-time error. */
typedef int32_t (*KEntry)(int64_t *args, int64_t *rets, KErr *err);

/* Target hooks: what differs between the CPU and GPU code generators.
** The CPU target leaves them empty; the NVVM target names libdevice
** routines (__nv_sinf) and puts array data in the global address space. */
typedef struct KTarget {
  const char *name;            /* "cpu", "nvptx" */
  /* Writes the name of the routine computing math function `base` ("sin",
  ** "atan2", "floor", "pow", ...) in f32 or f64 into buf and returns 1; or
  ** returns 0 to use LLVM's intrinsic (or the C library). May be NULL. */
  int (*math_name)(const char *base, int is_f32, char *buf, size_t n);
  unsigned data_addrspace;     /* address space of array data pointers */
} KTarget;

/* Emits every specialization of the session into M (in context C) and an
** entry wrapper named entry_name for spec `root`. Compile errors longjmp
** through ks_error. */
void kg_emit(Session *S, LLVMContextRef C, LLVMModuleRef M, KSpec *root,
             const char *entry_name, const KTarget *target);

#endif
