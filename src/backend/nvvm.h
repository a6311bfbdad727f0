/*
** nvvm.h: LLVM bitcode to PTX. libNVVM (loaded with dlopen, libdevice
** added lazily) is the main path; LLVM's own NVPTX backend is the
** fallback when libNVVM is absent.
*/
#ifndef KJIT_NVVM_H
#define KJIT_NVVM_H
#include <stddef.h>
#include <llvm-c/Core.h>

/* Sets the NVPTX triple, data layout and !nvvmir.version on M (debug:
** the module will carry debug info, whose version libNVVM wants too). */
void kn_prepare_module(LLVMModuleRef M, int debug);

/* Which compiler kn_compile will use: "libNVVM" or "LLVM NVPTX"; *why
** says why libNVVM is not used (NULL when it is). */
const char *kn_backend(const char **why);

/* Compiles M (typed-pointer LLVM 14 IR built by src/codegen/, no passes run)
** for compute capability cc (e.g. 90) to PTX. kernel names the kernel
** (kept external by the fallback). fma: allow contraction to fused
** multiply-add. Returns malloc'd PTX, or NULL with *err (malloc'd) set.
** M is not consumed. flags: KN_* below (libNVVM's options; the fallback
** honours KN_OPT0 only). */
enum { KN_OPT0 = 1, KN_FASTMATH = 2, KN_LINEINFO = 4 };
char *kn_compile(LLVMModuleRef M, const char *kernel, int cc, int fma, int flags, char **err);

/* Adds !{kernel, !"key", i32 value} to M's !nvvm.annotations (key:
** "maxntidx" for a launch bound, "maxnreg" for a register limit). */
void kn_annotate(LLVMModuleRef M, const char *kernel, const char *key, int value);

/* Identifies the PTX compiler for cache keys: the libNVVM version and the
** libdevice size, or the LLVM version (static storage). */
const char *kn_identity(void);

/* Where libdevice and ptxas are (for tests and messages), or NULL. */
const char *kn_libdevice_path(void);

#endif
