/*
** codegen.h: LLVM IR generation for the specializations of a session.
*/
#ifndef KJIT_CODEGEN_H
#define KJIT_CODEGEN_H

#include <llvm-c/Core.h>
#include "compile.h"
#include "runtime_err.h"

/* Calling convention of the entry point the dispatcher calls:
**   int32_t entry(int64_t *args, int64_t *rets, KErr *err)
** args[i]: i64 value, f64 bits, 0/1 for booleans, or a KBuffer* for arrays;
** rets[i]: i64 value, f64 bits (f32 results widened) or 0/1; for results
** that may be false/nil, rets[KJIT_MAXRETS + i] is 1 when it holds a number.
** The bytecode pipeline (src/codegen/cg_entry.c) adds T_NUMBER results
** (integer or float, Lua's subtype kept): rets[i] the integer or the f64
** bits, rets[KJIT_MAXRETS + i] 0 for an integer, 1 for a float; and for a
** false/nil-or-number (T_MAYBE of sub T_NUMBER) rets[KJIT_MAXRETS + i] is
** 0 (false/nil), 1 (an integer) or 2 (a float).
** rets must have room for 2 * KJIT_MAXRETS slots.
** Returns 0 on success, nonzero with *err filled on a run-time error. */
typedef int32_t (*KEntry)(int64_t *args, int64_t *rets, KErr *err);

/* Target hooks: what differs between the CPU and GPU code generators.
** The CPU target leaves them empty; the NVVM target names libdevice
** routines (__nv_sinf) and puts array data in the global address space. */
/* KT_CPU: kjit.jit code. KT_NVPTX: kernels for libNVVM (LLVM 7-era IR: no
** fneg, no globals in the generic address space, no run-time library).
** KT_SIM: kernels for the CPU simulator (cudasim.c provides the thread
** state); otherwise compiled like KT_CPU. */
enum { KT_CPU, KT_NVPTX, KT_SIM };

typedef struct KTarget {
  const char *name;            /* "cpu", "nvptx", "sim" */
  /* Writes the name of the routine computing math function `base` ("sin",
  ** "atan2", "floor", "pow", ...) in f32 or f64 into buf and returns 1; or
  ** returns 0 to use LLVM's intrinsic (or the C library). May be NULL. */
  int (*math_name)(const char *base, int is_f32, char *buf, size_t n);
  unsigned data_addrspace;     /* address space of array data pointers */
  int kind;                    /* KT_CPU, KT_NVPTX, KT_SIM */
} KTarget;

/* Emits every specialization of the session into M (in context C) and an
** entry wrapper named entry_name for spec `root`. Compile errors longjmp
** through ks_error. */
void kg_emit(Session *S, LLVMContextRef C, LLVMModuleRef M, KSpec *root,
             const char *entry_name, const KTarget *target);

/* Kernels (cuda.jit). For KT_SIM the entry is the usual KEntry above. For
** KT_NVPTX it is a `void name(params...)` kernel whose parameters are,
** for each argument of root in order: i64 (integer), double, float, i8
** (boolean, 0/1), or an element pointer followed by one i64 extent per
** dimension (array); then `i64* errrec` (KJIT_KERR_WORDS words of device
** memory, zero = no error) and `i64 dynshared` (dynamic shared bytes).
** The first failing thread fills errrec: runtime_err.h KErrWord. */
void kg_emit_kernel(Session *S, LLVMContextRef C, LLVMModuleRef M, KSpec *root,
                    const char *name, const KTarget *target);

/* LLVM IR (text) of the run-time helpers for KT_NVPTX modules, which have no
** C runtime to call: kjit_rt_cmp_int_float and kjit_rt_forlimit, written
** with libdevice's __nv_floor/__nv_ceil. Link with kc_link_ir. */
extern const char kg_nvptx_runtime_ir[];

#endif
