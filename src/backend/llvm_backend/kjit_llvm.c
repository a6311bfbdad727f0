/*
** kjit_llvm.c: the one function of kjit's own in its LLVM backend module.
**
** In the static build (KJIT_LLVM_STATIC on x86-64 Linux) LLVM is not in
** kjit.so: it is in kjit_llvm.so, linked from LLVM's static libraries
** with only the LLVM C API functions kjit's objects call exported (and
** what they need kept: CMakeLists.txt, tools/llvm_stubs.lua), and loaded
** on the first compile by src/backend/llvm_load.c. This file is the
** module's only source of its own (it is not in src/backend/*.c, so not
** in kjit): the LLVM release the module holds, which the loader checks
** against the headers kjit was compiled with.
*/
__attribute__((visibility("default"))) const char *kjit_llvm_backend_version(void);
const char *kjit_llvm_backend_version(void) { return KJIT_LLVM_VERSION; }
