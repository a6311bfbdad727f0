/*
** cpu.h: the CPU backend. Takes an LLVM module built by the code
** generator, verifies it, optimizes it for the host CPU with the new pass
** manager, and hands it to one process-wide ORC LLJIT, which emits native
** code for the host (AVX2/AVX-512 where present). Each compiled module
** lives under its own ResourceTracker, so it can be freed on its own.
**
** Threads: every function here may be called from any thread. Compiles
** are serialized through one process-wide mutex; building IR in a
** context from kc_new_context needs no lock (one context per compile).
** Errors never abort: they come back as malloc'd text.
**
** Symbol names: modules the LLVM JIT loads (several entry points, an
** object kjit's own loader refuses, KJIT_GDB) share its main JITDylib, so
** each externally visible function name must be unique across live modules
** (kc_unique_id helps); a clash is a compile error, not a crash. A module
** with one entry point is loaded by objload.c, which keeps no names.
*/
#ifndef KJIT_CPU_H
#define KJIT_CPU_H
#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>

/* One compiled module living in the JIT. */
typedef struct KCpuCode KCpuCode;

/* A module kept by a first-tier compile for its full-tier one
   (kc_tier_up): the unoptimized module and its context. */
typedef struct KCpuSaved KCpuSaved;

typedef struct KCpuOptions {
  int opt;      /* LLVM optimization level 0..3 (clamped) */
  int want_ir;  /* fill *ir_out with the optimized IR */
  int want_asm; /* fill *asm_out with the host assembly */
  /* Non-NULL: compile the cheap first tier where it pays (opt >= 2, no
     text wanted, a module with loops that is not Lua-value code: see
     cpu.c's kc_tier1_pays) and keep the unoptimized module in *tier1 for
     kc_tier_up; *tier1 is NULL when the code is full tier already. */
  KCpuSaved **tier1;
} KCpuOptions;

/* A new thread-safe context for building one module. The code generator
   calls LLVMOrcThreadSafeContextGetContext on it. A diagnostic handler is
   installed so LLVM errors in this context become messages, not exit(). */
LLVMOrcThreadSafeContextRef kc_new_context(void);

/* Disposes of a context that was never passed to kc_compile. */
void kc_dispose_context(LLVMOrcThreadSafeContextRef ctx);

/* Sets the host triple and data layout on M (call before building IR that
   depends on them). Returns 0, or -1 with *err set (malloc'd). */
int kc_prepare_module(LLVMModuleRef M, char **err);

/* Registers a C function or data address that generated code may reference
   by name (e.g. "kjit_rt_pow"); process-wide, may be called at any time.
   Returns 0, or -1 when the name is already registered with another
   address (the first address stays). */
int kc_register_symbol(const char *name, void *addr);
/* A resolver that kjit's object loader (objload.c) asks first, for names
** whose address depends on the load (host/export.c: record layouts of
** exported code): NULL from it falls through to the registered symbols. */
void kc_set_name_hook(void *(*hook)(const char *name));
/* The hook's address for name (NULL: no hook, or a name it does not give).
** The LLVM JIT does not ask the hook: cache.c binds such names in an
** object before the JIT loads it (elf_bind_hooked). */
void *kc_hooked_name(const char *name);

/* Verifies M (error text returned, never aborts), optimizes it for the host
   CPU (new pass manager; at opt 3 LLVM's O3 pipeline without non-trivial
   loop unswitching, or a short pipeline when M is small and has no loops
   or calls; loop and SLP vectorization on), optionally renders the
   optimized IR (*ir_out) and host assembly (*asm_out), generates the code
   (the JIT's target settings), adds it to the JIT under its own
   ResourceTracker and looks up names[0..n) into addrs. names[0] is the
   entry point (the only function that may call others for the short
   pipeline). Takes ownership of M and ctx in all cases. On
   failure returns NULL and sets *err to a malloc'd message (the backend's
   own text). ir_out/asm_out/err may be NULL; returned strings are
   malloc'd (free()). */
KCpuCode *kc_compile(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M,
                     const KCpuOptions *o, const char *const *names, int n,
                     void **addrs, char **ir_out, char **asm_out, char **err);

/* kc_compile without IR or assembly text, generating the code as an object
   file (the JIT's own target settings), which is added to the JIT and
   also returned in *obj (malloc'd, *objlen bytes) for kc_load_object in
   this or another process (the disk cache). */
KCpuCode *kc_compile_obj(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M,
                         int opt, const char *const *names, int n,
                         void **addrs, void **obj, size_t *objlen,
                         char **err);

/* Adds object code from kc_compile_obj (copied) to the JIT under its own
   ResourceTracker and looks names[0..n) up into addrs. Its undefined
   symbols resolve as for kc_compile (registered symbols, then the
   process); its global names must not clash with live modules. Returns
   NULL with *err set when the object cannot be loaded or linked. */
KCpuCode *kc_load_object(const void *obj, size_t len, const char *const *names,
                         int n, void **addrs, char **err);

/* Loads object code from kc_compile_obj with kjit's own loader
   (objload.h), without LLVM: the entry `entry` into *addr, undefined
   names resolved as by the JIT. Returns NULL with *err set when the loader
   refuses the object (then kc_load_object can still load it). */
KCpuCode *kc_load_object_native(const void *obj, size_t len, const char *entry,
                                void **addr, char **err);

/* The full-tier compile (at the level the first tier was asked for) of a
   module a first-tier kc_compile kept (consumed, whatever the result):
   its entry point renamed names[0] (n = 1; a new unique name), its
   address in addrs[0]. The first-tier code stays valid until kc_free. */
KCpuCode *kc_tier_up(KCpuSaved *s, const char *const *names, int n, void **addrs,
                     char **err);

/* Frees a kept module (NULL: no-op). */
void kc_saved_free(KCpuSaved *s);

/* Removes the code from the JIT (ResourceTracker remove) and frees it.
   NULL is a no-op. No pointer obtained from c may be used afterwards. */
void kc_free(KCpuCode *c);

/* Whether p lies in the memory of live code that kjit's own loader
   (objload.c) mapped, whose range kc_free tells the hook before it unmaps
   it (hook(lo, len); one hook per process, runtime/luacall.c's: the native
   call sites inside, emptied). Code the LLVM JIT loaded has no range. */
int kc_in_mapped_code(const void *p);
void kc_set_free_hook(void (*hook)(void *lo, size_t len));

/* Whether c's entry (one compiled by kc_compile, kc_compile_obj or
** kc_tier_up with n == 1) cannot fail: it never raises, polls, calls
** compiled code or touches a Lua value, and returns 0 (cpu.c,
** kc_entry_noraise): 1, or 2 when it does not use its args and rets
** either (it may be given NULL for them). 0 when it may fail, and for
** NULL. Code loaded from bytes has 0 unless told (the disk cache and
** kjit.load store the fact with the object: cache.c). */
int kc_code_noraise(const KCpuCode *c);
void kc_code_set_noraise(KCpuCode *c, int noraise);

/* How many modules each IR pass list has optimized in this process
** (cpu.c kc_optimize and the first tier), in the order of KCPipe: a fact
** for tests (kjit.testing.pipelines), which list a compile ran. */
typedef enum { KC_PIPE_O3, KC_PIPE_LUA, KC_PIPE_SIMPLE, KC_PIPE_OTHER, KC_PIPE_TIER1, KC_NPIPES } KCPipe;
void kc_pipeline_counts(long counts[KC_NPIPES]);

/* Host description for messages and cache keys, e.g.
   "x86_64-pc-linux-gnu znver4 +avx2,+avx512f,...,-xop" (static storage). */
const char *kc_host_description(void);

/* Parses textual LLVM IR (a small library of helpers) in M's context and
   links it into M. Returns 0, or -1 with *err set (malloc'd). */
int kc_link_ir(LLVMModuleRef M, const char *ir_text, char **err);

/* A process-wide counter for making function names unique (1, 2, ...). */
unsigned long kc_unique_id(void);

/* Disposes of the JIT (for leak checkers at exit). Refuses and returns -1
   while any KCpuCode the JIT loaded is alive (objload.c's code needs no
   JIT); a later compile makes a new JIT. */
int kc_shutdown(void);

/* Milliseconds the first LLJIT creation took (0 before it happened). */
double kc_jit_init_ms(void);

/* Fast-math helpers for kc_link_ir: LLVM 14's C API cannot put fast-math
   flags on instructions, so the code generator calls these instead; they
   are internal and alwaysinline, so after inlining the flags remain on the
   plain instructions. Names: kjit_f{add,sub,mul,div,rem}_fast_{f32,f64},
   each taking (T a, T b) and returning T. */
#define KC_FASTMATH_IR                                                         \
  "define internal float @kjit_fadd_fast_f32(float %a, float %b) "            \
  "alwaysinline {\n  %r = fadd fast float %a, %b\n  ret float %r\n}\n"         \
  "define internal float @kjit_fsub_fast_f32(float %a, float %b) "            \
  "alwaysinline {\n  %r = fsub fast float %a, %b\n  ret float %r\n}\n"         \
  "define internal float @kjit_fmul_fast_f32(float %a, float %b) "            \
  "alwaysinline {\n  %r = fmul fast float %a, %b\n  ret float %r\n}\n"         \
  "define internal float @kjit_fdiv_fast_f32(float %a, float %b) "            \
  "alwaysinline {\n  %r = fdiv fast float %a, %b\n  ret float %r\n}\n"         \
  "define internal float @kjit_frem_fast_f32(float %a, float %b) "            \
  "alwaysinline {\n  %r = frem fast float %a, %b\n  ret float %r\n}\n"         \
  "define internal double @kjit_fadd_fast_f64(double %a, double %b) "         \
  "alwaysinline {\n  %r = fadd fast double %a, %b\n  ret double %r\n}\n"       \
  "define internal double @kjit_fsub_fast_f64(double %a, double %b) "         \
  "alwaysinline {\n  %r = fsub fast double %a, %b\n  ret double %r\n}\n"       \
  "define internal double @kjit_fmul_fast_f64(double %a, double %b) "         \
  "alwaysinline {\n  %r = fmul fast double %a, %b\n  ret double %r\n}\n"       \
  "define internal double @kjit_fdiv_fast_f64(double %a, double %b) "         \
  "alwaysinline {\n  %r = fdiv fast double %a, %b\n  ret double %r\n}\n"       \
  "define internal double @kjit_frem_fast_f64(double %a, double %b) "         \
  "alwaysinline {\n  %r = frem fast double %a, %b\n  ret double %r\n}\n"

#endif
