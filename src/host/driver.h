/*
** host/driver.h: kjit's one compile driver, for kjit.jit, cuda.jit (NVPTX
** and simulated), and through them the array functions (lua/kjit/ufunc.lua,
** reduce.lua) and the C API:
**
**   the Lua function -> bytecode (src/frontend/: kbc_dump, kbc_decode)
**   -> SSA IR (src/ir/: kir_build) -> types (kty_spec, the target's
**   typing rules) -> LLVM IR for the target (src/codegen/: kcg_emit_*)
**
** The caller (jit.c's compile_spec, kernel.c's compile_kernel) owns the
** rest: the session, the LLVM module and its preparation, the backend
** (ORC, libNVVM), the disk cache, dispatch. The driver never asks which
** target it compiles for: it reads the target's hook table (target.h).
*/
#ifndef KJIT_HOST_DRIVER_H
#define KJIT_HOST_DRIVER_H

#include <llvm-c/Core.h>
#include "common/compile.h"
#include "codegen/target.h"
#include "ir/ir_type.h"

/* What to compile. Options come from the Session (boundscheck, fastmath,
** parallel and its notes buffer parnotes; opt and the disk cache are the
** backend's, the caller's business). */
typedef struct KdrvInput {
  int fidx;                  /* stack index of the Lua function */
  int nargs;
  const Type *args;          /* argument types args[0..nargs) */
  int argbase;               /* a T_FUNC argument is the function at stack
                                index argbase + i, a constant of this
                                specialization; 0: none given (a T_FUNC in
                                args is then an error) */
  const KcgTarget *target;   /* kcg_target_cpu, _nvptx or _sim */
  LLVMContextRef C;
  LLVMModuleRef M;           /* the caller's module, prepared */
  const char *entry_name;    /* the entry the code generator emits */
  /* Optional, called once typing is done and before any LLVM IR is made
  ** (kjit.jit's disk cache: a hit needs no code generator, nor LLVM):
  ** returns 1 when the code is already there (the code generator is then
  ** skipped: out->calls stays 0, S->parnotes as it was), 0 to go on (it
  ** may set *C and *M first: then C and M above may be NULL), or -1 with a
  ** message in T->err (raised as a compile error). */
  int (*typed)(void *ud, KtySession *T, LLVMContextRef *C, LLVMModuleRef *M);
  void *typed_ud;
  int owner;                 /* stack index of the jit object the code is
                                for (0: none, a kernel): the tables it reads
                                frozen are noted for it (ir_live.c) */
} KdrvInput;

/* What the callers keep from a compile. */
typedef struct KdrvOutput {
  int nargs;                 /* the root's parameters (the entry reads) */
  Type args[KJIT_MAXARGS];
  int nret;                  /* results (0 for kernels); one never */
  Type rets[KJIT_MAXRETS];   /* produced is nil */
  int calls;                 /* compiled calls were emitted (the dispatcher
                                sets err->stack_limit) */
  char *types;               /* malloc'd: inspect("types") */
  char chunkname[128];
  char **msgs; int nmsgs;    /* malloc'd error texts by number (targets
                                without string globals) */
  int uses_sync;             /* a kernel calling cuda.syncthreads */
  int allocates;             /* makes arrays (kjit.zeros ...: the dispatcher
                                gives the call an allocation list, jit.c) */
  uint8_t rview[KJIT_MAXRETS];   /* result r is, on every return, a view the
                                function made (a:slice, a:reshape, m[i]):
                                never the argument itself, even when it
                                covers all of it (jit.c) */
  int lua;                   /* holds Lua values (tables): calls the Lua API,
                                may raise Lua errors (kcg_uses_lua) */
  int dyncount;              /* returns give different numbers of values: how
                                many comes back in rets[KJIT_RETCOUNT] */
  int *refs; int nrefs;      /* malloc'd: the registry references the code
                                uses (ir_type.h kty_ref), to release with it;
                                none for kernels (no Lua state to use them) */
} KdrvOutput;

/* Compiles in->fidx into in->M. Compile errors are the user's located
** "chunk:line: message" in S->errmsg, raised through S->jb (the caller's
** setjmp turns them into Lua errors); nothing of *out is then allocated.
** Otherwise the caller owns out->types, out->msgs and out->refs. */
void kdrv_compile(Session *S, const KdrvInput *in, KdrvOutput *out);

/* f:inspect("ir") and ("bytecode"): the Lua function at fidx typed again
** for args (a T_FUNC argument i is the function at stack index argbase +
** i), without generating code: what = 0 gives kjit's SSA IR with a type
** per value (every function compiled in), 1 the Lua bytecode of those
** functions, one instruction a line with its source line. Pushes the text,
** or raises the compile error. kernel: type as a cuda.jit kernel. */
void kdrv_text(lua_State *L, int fidx, int nargs, const Type *args, int argbase, int kernel,
               int what);

#endif
