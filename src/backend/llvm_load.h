/*
** llvm_load.h: libLLVM loaded on the first compile, not with kjit.
**
** Loading libLLVM-14.so (about 12 ms of CPU: relocating it, faulting in
** its pages and running its static constructors) is most of what
** `require "kjit"` cost, paid by every process, also by one whose every
** function comes from the disk cache (cache.c loads that code without LLVM, objload.c). So, in the
** default build on x86-64 (KJIT_LLVM_DLOPEN), kjit.so and libkjit.so do
** not link libLLVM: every LLVM C API function they call is a small stub
** of their own (generated at build time by tools/llvm_stubs.lua from the
** objects' undefined "LLVM*" names) that jumps through a table; the first
** call of any stub loads libLLVM with dlopen, fills the table and goes on,
** like a lazily bound PLT. Nothing in the code generator or the backend
** knows: they call the LLVM C API as before.
**
** Why stubs and not a second shared object holding the LLVM half of kjit:
** the code generator, the typer and the host are interleaved (a compile
** goes back and forth between them), so a split needs a wide function
** table in both directions and a new file to install and find; the stubs
** need neither, and the installed layout is unchanged.
**
** The static build (KJIT_LLVM_STATIC) on x86-64 Linux uses the same stubs
** to load kjit's own LLVM module instead, kjit_llvm.so: LLVM's static
** libraries linked down to what kjit calls (CMakeLists.txt), which loads
** in about a fifth of libLLVM-14.so's time (llvm_load.c says where it is
** looked for). On other CPUs libLLVM (shared or static) is linked as
** usual and kjit_llvm_load only reports success: LLVM is then in the
** binary (its static constructors run when kjit.so loads), but no target
** is initialized and no JIT made before the first compile.
*/
#ifndef KJIT_LLVM_LOAD_H
#define KJIT_LLVM_LOAD_H

/* Loads libLLVM if it is not loaded yet (once per process; thread-safe).
   Returns 0, or -1 with *err (if err) set to a static message. Calling
   an LLVM function loads it as well, but aborts the process if that fails,
   so the compile paths call this first to report a Lua error instead. */
int kjit_llvm_load(const char **err);

/* 1 once libLLVM is loaded (always 1 when it is linked). */
int kjit_llvm_loaded(void);

#endif
