/*
** cpu.c: the CPU backend (see cpu.h).
**
** One ORC LLJIT per process, created on the first compile. Its target
** machine comes from JITTargetMachineBuilder::detectHost, so the code it
** emits uses every feature of the host CPU. The main JITDylib resolves
** names from (1) symbols registered with kc_register_symbol (absolute
** symbols) and (2) the process itself (libm, libc) through a dynamic
** library search generator.
**
** A compile runs under one mutex: verify (returning the verifier's text),
** optimize with the new pass manager (at opt 3 a tailored copy of LLVM's O3
** pipeline, kc_pipeline_o3; a short one for small modules without loops or
** calls, kc_pipeline_simple; "default<On>" otherwise; always with a target
** machine for the host CPU name and features so that the cost models see
** AVX2 or AVX-512), optionally print IR and assembly, generate the object
** code with that same target machine, add it under a fresh ResourceTracker
** and look the entry points up. kc_free removes the tracker, which frees
** the code memory.
**
** Never abort: LLVM's default diagnostic handler calls exit() on errors,
** so every context we touch gets a handler that records error text into a
** thread-local buffer; ORC session errors are recorded the same way. Fatal
** errors inside LLVM (report_fatal_error) cannot be recovered from through
** the C API; we do not install a fatal error handler because it is
** process-wide and would replace one installed by a host that also uses
** LLVM (e.g. a graphics driver).
*/
#include "cpu.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct KCpuCode {
  LLVMOrcResourceTrackerRef rt;
  unsigned long gen; /* JIT generation the tracker belongs to */
};

/* --- process-wide state ------------------------------------------------ */

static pthread_mutex_t kc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t kc_host_once = PTHREAD_ONCE_INIT;

/* Host facts, written once by kc_host_init. */
static int kc_host_ok;
static char kc_host_err[512];
static char *kc_triple, *kc_cpu, *kc_features, *kc_layout, *kc_desc;
static LLVMTargetMachineRef kc_tm; /* host TM for passes and asm (locked; kc_get_tm) */
static LLVMTargetRef kc_target;

/* The JIT (guarded by kc_lock). */
static LLVMOrcLLJITRef kc_jit;
static unsigned long kc_jit_gen;
static double kc_init_time_ms;
static long kc_live;
static unsigned kc_frees;

/* Registered symbols (guarded by kc_lock). */
typedef struct KcSym {
  char *name;
  void *addr;
} KcSym;
static KcSym *kc_syms;
static int kc_nsyms, kc_capsyms;

static unsigned long kc_counter;

/* Error text collected from diagnostics and the ORC session reporter. */
static _Thread_local char kc_diag[4096];

/* --- small helpers ---------------------------------------------------- */

/* Wall clock in milliseconds. */
static double kc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* malloc'd copy of s (NULL stays NULL on allocation failure). */
static char *kc_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

/* Sets *err (if err) to a malloc'd formatted message. */
static void kc_seterr(char **err, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = malloc(n > 0 ? (size_t)n + 1 : 1);
  if (s) {
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  *err = s;
}

/* Appends text to the thread's diagnostic buffer (truncating). */
static void kc_diag_add(const char *s) {
  size_t len = strlen(kc_diag);
  if (len + 3 >= sizeof kc_diag) return;
  if (len) {
    memcpy(kc_diag + len, "; ", 2);
    len += 2;
  }
  snprintf(kc_diag + len, sizeof kc_diag - len, "%s", s);
}

/* Consumes e, returning its message as a malloc'd string. */
static char *kc_errmsg(LLVMErrorRef e) {
  char *m = LLVMGetErrorMessage(e);
  char *r = kc_strdup(m ? m : "unknown LLVM error");
  LLVMDisposeErrorMessage(m);
  return r;
}

/* Context diagnostic handler: records errors instead of exit(). */
static void kc_diag_handler(LLVMDiagnosticInfoRef di, void *ud) {
  (void)ud;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError) return;
  char *d = LLVMGetDiagInfoDescription(di);
  kc_diag_add(d ? d : "LLVM error");
  LLVMDisposeMessage(d);
}

/* ORC session error reporter: records the error text. */
static void kc_session_error(void *ud, LLVMErrorRef e) {
  (void)ud;
  char *m = kc_errmsg(e);
  kc_diag_add(m ? m : "JIT session error");
  free(m);
}

/* --- host detection ---------------------------------------------------- */

/* Initializes the native target and records the host triple, CPU, features
   and data layout, and the host target machine (once per process). */
static void kc_host_init(void) {
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter() ||
      LLVMInitializeNativeAsmParser()) {
    snprintf(kc_host_err, sizeof kc_host_err,
             "LLVM has no native target for this host");
    return;
  }
  /* The host's CPU name and features (for messages, cache keys and
  ** kc_get_tm). The default triple is the process triple for a native
  ** LLVM build such as Debian's. */
  char *t = LLVMGetDefaultTargetTriple();
  char *nt = LLVMNormalizeTargetTriple(t);
  kc_triple = kc_strdup(nt);
  LLVMDisposeMessage(nt);
  LLVMDisposeMessage(t);
  char *c = LLVMGetHostCPUName(), *f = LLVMGetHostCPUFeatures();
  kc_cpu = kc_strdup(c);
  kc_features = kc_strdup(f);
  LLVMDisposeMessage(c);
  LLVMDisposeMessage(f);

  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(kc_triple, &target, &msg)) {
    snprintf(kc_host_err, sizeof kc_host_err, "no target for %s: %s",
             kc_triple, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return;
  }
  kc_target = target;
  /* the target machine (kc_get_tm) and the data layout (from the JIT, in
  ** kc_prepare_module) come later, when first needed: a process whose
  ** first call is a disk-cache hit never creates kc_tm */

  size_t n = strlen(kc_triple) + strlen(kc_cpu) + strlen(kc_features) + 3;
  kc_desc = malloc(n);
  if (kc_desc) snprintf(kc_desc, n, "%s %s %s", kc_triple, kc_cpu, kc_features);
  kc_host_ok = kc_triple && kc_cpu && kc_features && kc_desc;
  if (!kc_host_ok) snprintf(kc_host_err, sizeof kc_host_err, "out of memory");
}

/* Runs host detection once; returns 0 or -1 with *err set. */
static int kc_host(char **err) {
  pthread_once(&kc_host_once, kc_host_init);
  if (!kc_host_ok) {
    kc_seterr(err, "kjit cpu backend: %s", kc_host_err);
    return -1;
  }
  return 0;
}

const char *kc_host_description(void) {
  if (kc_host(NULL)) return "unknown-host";
  return kc_desc;
}

/* --- the JIT ------------------------------------------------------------ */

/* compiler-rt/libgcc helpers that LLVM's code generator may call (powi);
   they need not be exported by any shared object, so register them. */
extern double __powidf2(double, int);
extern float __powisf2(float, int);

/* Defines registered symbols [from, to) in the main JITDylib. Locked. */
static int kc_define_syms(int from, int to, char **err) {
  if (to <= from) return 0;
  LLVMJITCSymbolMapPair *pairs = calloc((size_t)(to - from), sizeof *pairs);
  if (!pairs) {
    kc_seterr(err, "out of memory");
    return -1;
  }
  for (int i = from; i < to; i++) {
    LLVMJITCSymbolMapPair *p = &pairs[i - from];
    p->Name = LLVMOrcLLJITMangleAndIntern(kc_jit, kc_syms[i].name);
    p->Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)kc_syms[i].addr;
    p->Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported;
    p->Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu =
      LLVMOrcAbsoluteSymbols(pairs, (size_t)(to - from));
  free(pairs);
  LLVMErrorRef e =
      LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(kc_jit), mu);
  if (e) {
    LLVMOrcDisposeMaterializationUnit(mu);
    char *m = kc_errmsg(e);
    kc_seterr(err, "cannot define runtime symbols: %s", m);
    free(m);
    return -1;
  }
  return 0;
}

/* Appends a symbol to the registry. Locked. */
static int kc_sym_add(const char *name, void *addr) {
  for (int i = 0; i < kc_nsyms; i++)
    if (strcmp(kc_syms[i].name, name) == 0)
      return kc_syms[i].addr == addr ? 0 : -1;
  if (kc_nsyms == kc_capsyms) {
    int cap = kc_capsyms ? 2 * kc_capsyms : 32;
    KcSym *s = realloc(kc_syms, (size_t)cap * sizeof *s);
    if (!s) return -1;
    kc_syms = s;
    kc_capsyms = cap;
  }
  char *nm = kc_strdup(name);
  if (!nm) return -1;
  kc_syms[kc_nsyms].name = nm;
  kc_syms[kc_nsyms].addr = addr;
  kc_nsyms++;
  return 1;
}

/* Creates the LLJIT if there is none. Locked. Returns 0 or -1. */
static int kc_ensure_jit(char **err) {
  if (kc_jit) return 0;
  double t0 = kc_now_ms();
  kc_sym_add("__powidf2", (void *)__powidf2);
  kc_sym_add("__powisf2", (void *)__powisf2);

  /* (measured: letting the JIT detect the host again costs less than
  ** building its target machine from kc_host_init's strings) */
  LLVMErrorRef e = NULL;
  if (kc_host(err)) return -1;
  LLVMOrcJITTargetMachineBuilderRef jtmb;
  e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) goto fail;
  LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, jtmb);
  e = LLVMOrcCreateLLJIT(&kc_jit, b); /* consumes b */
  if (e) {
    kc_jit = NULL;
    goto fail;
  }
  LLVMOrcExecutionSessionSetErrorReporter(
      LLVMOrcLLJITGetExecutionSession(kc_jit), kc_session_error, NULL);
  LLVMOrcDefinitionGeneratorRef gen;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
      &gen, LLVMOrcLLJITGetGlobalPrefix(kc_jit), NULL, NULL);
  if (e) goto fail;
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(kc_jit), gen);
  if (kc_define_syms(0, kc_nsyms, err)) {
    LLVMErrorRef d = LLVMOrcDisposeLLJIT(kc_jit);
    if (d) LLVMConsumeError(d);
    kc_jit = NULL;
    return -1;
  }
  kc_jit_gen++;
  if (kc_init_time_ms == 0) kc_init_time_ms = kc_now_ms() - t0;
  return 0;
fail:;
  char *m = kc_errmsg(e);
  kc_seterr(err, "cannot create the LLVM JIT: %s", m);
  free(m);
  if (kc_jit) {
    LLVMErrorRef d = LLVMOrcDisposeLLJIT(kc_jit);
    if (d) LLVMConsumeError(d);
    kc_jit = NULL;
  }
  return -1;
}

int kc_register_symbol(const char *name, void *addr) {
  if (!name || !*name) return -1;
  pthread_mutex_lock(&kc_lock);
  int r = kc_sym_add(name, addr);
  if (r == 1 && kc_jit && kc_define_syms(kc_nsyms - 1, kc_nsyms, NULL)) {
    free(kc_syms[--kc_nsyms].name); /* e.g. a live module defines it */
    r = -1;
  }
  pthread_mutex_unlock(&kc_lock);
  return r < 0 ? -1 : 0;
}

double kc_jit_init_ms(void) {
  pthread_mutex_lock(&kc_lock);
  double t = kc_init_time_ms;
  pthread_mutex_unlock(&kc_lock);
  return t;
}

unsigned long kc_unique_id(void) {
  return __atomic_add_fetch(&kc_counter, 1, __ATOMIC_RELAXED);
}

int kc_shutdown(void) {
  pthread_mutex_lock(&kc_lock);
  int r = 0;
  if (kc_live > 0) {
    r = -1;
  } else if (kc_jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(kc_jit);
    if (e) {
      char *m = kc_errmsg(e);
      fprintf(stderr, "kjit: disposing of the JIT: %s\n", m ? m : "?");
      free(m);
      r = -1;
    }
    kc_jit = NULL;
  }
  pthread_mutex_unlock(&kc_lock);
  return r;
}

/* --- modules ------------------------------------------------------------ */

LLVMOrcThreadSafeContextRef kc_new_context(void) {
  LLVMOrcThreadSafeContextRef ctx = LLVMOrcCreateNewThreadSafeContext();
  if (ctx)
    LLVMContextSetDiagnosticHandler(LLVMOrcThreadSafeContextGetContext(ctx),
                                    kc_diag_handler, NULL);
  return ctx;
}

void kc_dispose_context(LLVMOrcThreadSafeContextRef ctx) {
  if (ctx) LLVMOrcDisposeThreadSafeContext(ctx);
}

int kc_prepare_module(LLVMModuleRef M, char **err) {
  if (!M) {
    kc_seterr(err, "kc_prepare_module: no module");
    return -1;
  }
  if (kc_host(err)) return -1;
  pthread_mutex_lock(&kc_lock);
  if (!kc_layout) {
    /* the JIT's own data layout (its target machine made it) */
    if (kc_ensure_jit(err)) { pthread_mutex_unlock(&kc_lock); return -1; }
    kc_layout = kc_strdup(LLVMOrcLLJITGetDataLayoutStr(kc_jit));
    if (!kc_layout) {
      pthread_mutex_unlock(&kc_lock);
      kc_seterr(err, "out of memory");
      return -1;
    }
  }
  pthread_mutex_unlock(&kc_lock);
  LLVMSetTarget(M, kc_triple);
  LLVMSetDataLayout(M, kc_layout);
  return 0;
}

int kc_link_ir(LLVMModuleRef M, const char *ir_text, char **err) {
  if (!M || !ir_text) {
    kc_seterr(err, "kc_link_ir: no module or no IR text");
    return -1;
  }
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMContextSetDiagnosticHandler(C, kc_diag_handler, NULL);
  kc_diag[0] = 0;
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(
      ir_text, strlen(ir_text), "kjit-ir");
  LLVMModuleRef src = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(C, buf, &src, &msg)) { /* consumes buf */
    kc_seterr(err, "cannot parse IR: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  /* Same target as M, so the linker has nothing to warn about. */
  LLVMSetTarget(src, LLVMGetTarget(M));
  LLVMSetDataLayout(src, LLVMGetDataLayoutStr(M));
  /* The linker drops unreferenced internal functions and never binds M's
     declarations to them: link them as external, then make them internal
     again in M. Helpers M already defines (a second link) are skipped. */
  int n = 0, cap = 0, r = 0;
  char **names = NULL;
  LLVMValueRef F = LLVMGetFirstFunction(src);
  while (F) {
    LLVMValueRef next = LLVMGetNextFunction(F);
    if (!LLVMIsDeclaration(F) && LLVMGetLinkage(F) == LLVMInternalLinkage) {
      size_t len;
      const char *nm = LLVMGetValueName2(F, &len);
      LLVMValueRef D = LLVMGetNamedFunction(M, nm);
      if (D && !LLVMIsDeclaration(D) && !LLVMGetFirstUse(F)) {
        LLVMDeleteFunction(F);
      } else {
        if (n == cap) {
          cap = cap ? 2 * cap : 16;
          char **nn = realloc(names, (size_t)cap * sizeof *nn);
          if (!nn) {
            r = -1;
            break;
          }
          names = nn;
        }
        if (!(names[n] = kc_strdup(nm))) {
          r = -1;
          break;
        }
        n++;
        LLVMSetLinkage(F, LLVMExternalLinkage);
      }
    }
    F = next;
  }
  if (r) {
    kc_seterr(err, "out of memory");
    LLVMDisposeModule(src);
  } else if (LLVMLinkModules2(M, src)) { /* consumes src */
    kc_seterr(err, "cannot link IR: %s", kc_diag[0] ? kc_diag : "?");
    r = -1;
  } else {
    for (int i = 0; i < n; i++) {
      LLVMValueRef D = LLVMGetNamedFunction(M, names[i]);
      if (D) LLVMSetLinkage(D, LLVMInternalLinkage);
    }
  }
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  return r;
}

/* The host target machine, created on first use. Same settings as the
** JIT's own (default codegen level, JIT code model), so printed assembly is
** what runs. Locked. Returns NULL with *err set on failure. */
static LLVMTargetMachineRef kc_get_tm(char **err) {
  if (!kc_tm)
    kc_tm = LLVMCreateTargetMachine(kc_target, kc_triple, kc_cpu, kc_features,
                                    LLVMCodeGenLevelDefault, LLVMRelocDefault,
                                    LLVMCodeModelJITDefault);
  if (!kc_tm) kc_seterr(err, "cannot create a target machine for %s", kc_triple);
  return kc_tm;
}

/* Renders M's assembly for the host into a malloc'd string. Locked. */
static char *kc_emit_asm(LLVMModuleRef M, char **err) {
  if (!kc_get_tm(err)) return NULL;
  LLVMModuleRef clone = LLVMCloneModule(M);
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL, *r = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(kc_tm, clone, LLVMAssemblyFile,
                                          &msg, &buf)) {
    kc_seterr(err, "cannot emit assembly: %s", msg ? msg : "?");
  } else {
    size_t n = LLVMGetBufferSize(buf);
    r = malloc(n + 1);
    if (r) {
      memcpy(r, LLVMGetBufferStart(buf), n);
      r[n] = 0;
    } else {
      kc_seterr(err, "out of memory");
    }
    LLVMDisposeMemoryBuffer(buf);
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeModule(clone);
  return r;
}

/* The pass pipeline of opt = 3: LLVM 14's "default<O3>" (as printed by
** `opt -passes='default<O3>' -print-pipeline-passes`) with three changes:
**  - simple-loop-unswitch without non-trivial unswitching (as at O2): it
**    cloned the checked copies of versioned loops once per loop-invariant
**    bounds test (a 2-D stencil: 3 clones, each vectorized), which cost
**    more compile time than all the other loop passes; kjit's own loop
**    versioning already takes the invariant tests out of the fast copy;
**  - no coroutine or OpenMP passes (kjit emits neither);
**  - no verifier (kc_compile_impl verifies before).
** Everything else (inliner, loop and SLP vectorizers with interleaving,
** loop-unroll<O3>, argpromotion, aggressive-instcombine) is as at O3. */
#define KC_SCFG "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;"
#define KC_SCFG_LOOPS "switch-range-to-icmp;no-switch-to-lookup;keep-loops;"
static const char kc_pipeline_o3[] =
  "annotation2metadata,forceattrs,inferattrs,"
  "function<eager-inv>(lower-expect,"
  KC_SCFG "no-switch-range-to-icmp;no-switch-to-lookup;keep-loops;"
  "no-hoist-common-insts;no-sink-common-insts>,"
  "sroa,early-cse<>,callsite-splitting),ipsccp,called-value-propagation,"
  "globalopt,function(mem2reg),deadargelim,"
  "function<eager-inv>(instcombine,"
  KC_SCFG KC_SCFG_LOOPS "no-hoist-common-insts;no-sink-common-insts>),"
  "require<globals-aa>,function(invalidate<aa>),require<profile-summary>,"
  "cgscc(devirt<4>(inline<only-mandatory>,inline,function-attrs,"
  "argpromotion,function<eager-inv>(sroa,early-cse<memssa>,"
  "speculative-execution,jump-threading,correlated-propagation,"
  KC_SCFG KC_SCFG_LOOPS "no-hoist-common-insts;no-sink-common-insts>,"
  "instcombine,aggressive-instcombine,libcalls-shrinkwrap,tailcallelim,"
  KC_SCFG KC_SCFG_LOOPS "no-hoist-common-insts;no-sink-common-insts>,"
  "reassociate,require<opt-remark-emit>,loop-mssa(loop-instsimplify,"
  "loop-simplifycfg,licm,loop-rotate,licm,"
  "simple-loop-unswitch<no-nontrivial;trivial>),"
  KC_SCFG KC_SCFG_LOOPS "no-hoist-common-insts;no-sink-common-insts>,"
  "instcombine,loop(loop-idiom,indvars,loop-deletion,loop-unroll-full),"
  "sroa,mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce,instcombine,"
  "jump-threading,correlated-propagation,adce,memcpyopt,dse,"
  "loop-mssa(licm),"
  KC_SCFG KC_SCFG_LOOPS "hoist-common-insts;sink-common-insts>,"
  "instcombine))),globalopt,globaldce,elim-avail-extern,"
  "rpo-function-attrs,require<globals-aa>,function<eager-inv>(float2int,"
  "lower-constant-intrinsics,loop(loop-rotate,loop-deletion),"
  "loop-distribute,inject-tli-mappings,"
  "loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only;>,"
  "loop-load-elim,instcombine,"
  "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;"
  "switch-to-lookup;no-keep-loops;hoist-common-insts;sink-common-insts>,"
  "slp-vectorizer,vector-combine,instcombine,loop-unroll<O3>,"
  "transform-warning,instcombine,require<opt-remark-emit>,"
  "loop-mssa(licm),alignment-from-assumptions,loop-sink,instsimplify,"
  "div-rem-pairs,"
  KC_SCFG KC_SCFG_LOOPS "no-hoist-common-insts;no-sink-common-insts>),"
  "cg-profile,globaldce,constmerge,rel-lookup-table-converter,"
  "function(annotation-remarks)";

/* The pipeline for a small module without loops or calls (kc_is_simple)
** at opt >= 2: the inliner (the entry wrapper calls the specialization)
** and the scalar clean-ups of O3's function simplification. On such code
** it gives the same instructions as O3 (checked on scalar, float, math,
** branchy and multi-result functions; O3's SLP may pair two multiplies)
** at 1.2M fewer instructions, a quarter of O3 there (most of O3's cost on a
** small function is building and running its ~90 passes and analyses). */
static const char kc_pipeline_simple[] =
  "cgscc(inline,function(sroa,early-cse<memssa>,jump-threading,"
  "correlated-propagation,simplifycfg,instcombine,gvn,sccp,instcombine,dse,"
  "adce,simplifycfg,instcombine)),globaldce";

#define KC_SIMPLE_MAXBLOCKS 64
#define KC_SIMPLE_MAXINSTS 1000

/* True when M is small, no function in it has a loop (a cycle in its CFG),
** and the only calls to functions defined in M are from entry (the wrapper
** calling the specialization) or to alwaysinline helpers: nothing that
** loops or recurses (fib), where O3's loop and call optimizations pay. */
static int kc_is_simple(LLVMModuleRef M, const char *entry) {
  unsigned ai = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  int ninsts = 0;
  for (LLVMValueRef F = LLVMGetFirstFunction(M); F; F = LLVMGetNextFunction(F)) {
    if (LLVMIsDeclaration(F)) continue;
    unsigned nb = LLVMCountBasicBlocks(F);
    if (nb > KC_SIMPLE_MAXBLOCKS) return 0;
    LLVMBasicBlockRef bbs[KC_SIMPLE_MAXBLOCKS];
    LLVMGetBasicBlocks(F, bbs);
    size_t len;
    const char *fname = LLVMGetValueName2(F, &len);
    int is_entry = entry && strcmp(fname, entry) == 0;
    for (unsigned b = 0; b < nb; b++)
      for (LLVMValueRef I = LLVMGetFirstInstruction(bbs[b]); I; I = LLVMGetNextInstruction(I)) {
        if (++ninsts > KC_SIMPLE_MAXINSTS) return 0;
        if (LLVMGetInstructionOpcode(I) != LLVMCall) continue;
        LLVMValueRef callee = LLVMGetCalledValue(I);
        if (!LLVMIsAFunction(callee)) return 0;  /* through a pointer */
        if (LLVMIsDeclaration(callee)) continue;  /* C runtime, intrinsics */
        if (LLVMGetEnumAttributeAtIndex(callee, LLVMAttributeFunctionIndex, ai)) continue;
        if (!is_entry || callee == F) return 0;
      }
    /* a cycle: depth-first search, a successor on the stack is a back edge */
    unsigned char state[KC_SIMPLE_MAXBLOCKS] = {0}; /* 0 new, 1 on stack, 2 done */
    unsigned stack[KC_SIMPLE_MAXBLOCKS], next[KC_SIMPLE_MAXBLOCKS];
    int sp = 0;
    stack[0] = 0; next[0] = 0; state[0] = 1; sp = 1;
    while (sp > 0) {
      unsigned b = stack[sp - 1];
      LLVMValueRef term = LLVMGetBasicBlockTerminator(bbs[b]);
      unsigned ns = term ? LLVMGetNumSuccessors(term) : 0;
      if (next[sp - 1] >= ns) {
        state[b] = 2;
        sp--;
        continue;
      }
      LLVMBasicBlockRef succ = LLVMGetSuccessor(term, next[sp - 1]++);
      unsigned t = 0;
      while (t < nb && bbs[t] != succ) t++;
      if (t == nb) return 0;
      if (state[t] == 1) return 0;
      if (state[t] == 0) {
        state[t] = 1;
        stack[sp] = t;
        next[sp] = 0;
        sp++;
      }
    }
  }
  return 1;
}

/* Optimizes M for the host at level opt (entry: the entry point's name,
** for kc_is_simple). Locked. Returns 0 or -1. */
static int kc_optimize(LLVMModuleRef M, int opt, const char *entry, char **err) {
  if (!kc_get_tm(err)) return -1;
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", opt);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
  const char *p = pipeline;
  if (opt >= 2 && kc_is_simple(M, entry)) p = kc_pipeline_simple;
  else if (opt == 3) p = kc_pipeline_o3;
  LLVMErrorRef e = LLVMRunPasses(M, p, kc_tm, po);
  if (e && p != pipeline) {
    /* not parsed, so nothing ran: an LLVM whose pass names differ */
    LLVMConsumeError(e);
    e = LLVMRunPasses(M, pipeline, kc_tm, po);
  }
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *m = kc_errmsg(e);
    kc_seterr(err, "LLVM optimizer: %s", m ? m : "?");
    free(m);
    return -1;
  }
  return 0;
}

/* Removes and releases a tracker. Locked. */
static void kc_drop_tracker(LLVMOrcResourceTrackerRef rt) {
  LLVMErrorRef e = LLVMOrcResourceTrackerRemove(rt);
  if (e) {
    char *m = kc_errmsg(e);
    fprintf(stderr, "kjit: removing JIT code: %s\n", m ? m : "?");
    free(m);
  }
  LLVMOrcReleaseResourceTracker(rt);
  /* Names of removed code stay in the string pool until cleared. */
  if (++kc_frees % 32 == 0)
    LLVMOrcSymbolStringPoolClearDeadEntries(
        LLVMOrcExecutionSessionGetSymbolStringPool(
            LLVMOrcLLJITGetExecutionSession(kc_jit)));
}

/* Looks names[0..n) up into addrs after code was added under rt, and wraps
   rt into a KCpuCode. Locked. Returns NULL with *err set on failure (the
   caller drops rt). */
static KCpuCode *kc_lookup_all(LLVMOrcResourceTrackerRef rt,
                               const char *const *names, int n, void **addrs,
                               char **err) {
  for (int i = 0; i < n; i++) {
    LLVMOrcExecutorAddress a = 0;
    LLVMErrorRef e = LLVMOrcLLJITLookup(kc_jit, &a, names[i]);
    if (e) {
      char *m = kc_errmsg(e);
      if (kc_diag[0])
        kc_seterr(err, "JIT: %s (%s)", kc_diag, m ? m : "?");
      else
        kc_seterr(err, "JIT: %s", m ? m : "?");
      free(m);
      return NULL;
    }
    if (addrs) addrs[i] = (void *)(uintptr_t)a;
  }
  if (kc_diag[0]) {
    kc_seterr(err, "JIT: %s", kc_diag);
    return NULL;
  }
  KCpuCode *code = malloc(sizeof *code);
  if (!code) {
    kc_seterr(err, "out of memory");
    return NULL;
  }
  code->rt = rt;
  code->gen = kc_jit_gen;
  kc_live++;
  return code;
}

/* kc_compile; with obj non-NULL the module is turned into an object file
   by kc_tm (the JIT's own settings), which is both added to the JIT and
   returned (malloc'd) in *obj, *objlen. */
static KCpuCode *kc_compile_impl(LLVMOrcThreadSafeContextRef ctx,
                                 LLVMModuleRef M, const KCpuOptions *o,
                                 const char *const *names, int n,
                                 void **addrs, char **ir_out, char **asm_out,
                                 void **obj, size_t *objlen, char **err) {
  if (obj) *obj = NULL;
  if (objlen) *objlen = 0;
  if (ir_out) *ir_out = NULL;
  if (asm_out) *asm_out = NULL;
  if (err) *err = NULL;
  if (!ctx || !M) {
    kc_seterr(err, "kc_compile: no %s", ctx ? "module" : "context");
    if (M) LLVMDisposeModule(M);
    if (ctx) LLVMOrcDisposeThreadSafeContext(ctx);
    return NULL;
  }
  KCpuOptions dflt = {3, 0, 0};
  if (!o) o = &dflt;
  int opt = o->opt < 0 ? 0 : o->opt > 3 ? 3 : o->opt;
  KCpuCode *code = NULL;
  LLVMOrcResourceTrackerRef rt = NULL;
  char *ir = NULL, *as = NULL;

  if (kc_host(err)) goto fail_module;
  pthread_mutex_lock(&kc_lock);
  kc_diag[0] = 0;
  LLVMContextSetDiagnosticHandler(LLVMGetModuleContext(M), kc_diag_handler,
                                  NULL);
  if (kc_ensure_jit(err)) goto fail_locked;

  char *msg = NULL;
  if (LLVMVerifyModule(M, LLVMReturnStatusAction, &msg)) {
    kc_seterr(err, "invalid LLVM module: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    goto fail_locked;
  }
  LLVMDisposeMessage(msg);
  /* The JIT refuses modules whose layout differs from its own. */
  const char *jdl = LLVMOrcLLJITGetDataLayoutStr(kc_jit);
  if (strcmp(LLVMGetDataLayoutStr(M), jdl) != 0) LLVMSetDataLayout(M, jdl);
  if (!*LLVMGetTarget(M)) LLVMSetTarget(M, LLVMOrcLLJITGetTripleString(kc_jit));

  if (kc_optimize(M, opt, n > 0 ? names[0] : NULL, err)) goto fail_locked;
  if (kc_diag[0]) {
    kc_seterr(err, "LLVM optimizer: %s", kc_diag);
    goto fail_locked;
  }
  if (o->want_ir && ir_out) {
    char *s = LLVMPrintModuleToString(M);
    ir = kc_strdup(s ? s : "");
    LLVMDisposeMessage(s);
  }
  if (o->want_asm && asm_out) {
    as = kc_emit_asm(M, err);
    if (!as) goto fail_locked;
    if (kc_diag[0]) {
      kc_seterr(err, "LLVM code generator: %s", kc_diag);
      goto fail_locked;
    }
  }

  rt = LLVMOrcJITDylibCreateResourceTracker(
      LLVMOrcLLJITGetMainJITDylib(kc_jit));
  LLVMErrorRef e;
  {
    /* The code is generated here with kc_tm and added as an object file
       (also the bytes the disk cache saves), rather than handing M to the
       JIT's IR layer, whose own target machine has the same settings but
       would build its subtarget for the host again on the first compile
       (2.1M instructions, 15% of a small function's compile). */
    LLVMMemoryBufferRef buf = NULL;
    msg = NULL;
    if (!kc_get_tm(err)) goto fail_locked;
    if (LLVMTargetMachineEmitToMemoryBuffer(kc_tm, M, LLVMObjectFile, &msg,
                                            &buf)) {
      kc_seterr(err, "LLVM code generator: %s", msg ? msg : "?");
      LLVMDisposeMessage(msg);
      goto fail_locked;
    }
    if (kc_diag[0]) {
      LLVMDisposeMemoryBuffer(buf);
      kc_seterr(err, "LLVM code generator: %s", kc_diag);
      goto fail_locked;
    }
    if (obj) {
      size_t len = LLVMGetBufferSize(buf);
      if (!(*obj = malloc(len ? len : 1))) {
        LLVMDisposeMemoryBuffer(buf);
        kc_seterr(err, "out of memory");
        goto fail_locked;
      }
      memcpy(*obj, LLVMGetBufferStart(buf), len);
      *objlen = len;
    }
    e = LLVMOrcLLJITAddObjectFileWithRT(kc_jit, rt, buf); /* consumes buf */
  }
  if (e) {
    char *m = kc_errmsg(e);
    kc_seterr(err, "JIT: %s", m ? m : "?");
    free(m);
    goto fail_locked;
  }
  code = kc_lookup_all(rt, names, n, addrs, err);
  if (!code) goto fail_locked;
  pthread_mutex_unlock(&kc_lock);
  if (ir_out) *ir_out = ir; else free(ir);
  if (asm_out) *asm_out = as; else free(as);
  if (M) LLVMDisposeModule(M);
  if (ctx) LLVMOrcDisposeThreadSafeContext(ctx);
  return code;

fail_locked:
  if (rt) kc_drop_tracker(rt);
  pthread_mutex_unlock(&kc_lock);
fail_module:
  free(ir);
  free(as);
  if (obj) {
    free(*obj);
    *obj = NULL;
    *objlen = 0;
  }
  if (M) LLVMDisposeModule(M);
  if (ctx) LLVMOrcDisposeThreadSafeContext(ctx);
  return NULL;
}

KCpuCode *kc_compile(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M,
                     const KCpuOptions *o, const char *const *names, int n,
                     void **addrs, char **ir_out, char **asm_out, char **err) {
  return kc_compile_impl(ctx, M, o, names, n, addrs, ir_out, asm_out, NULL,
                         NULL, err);
}

KCpuCode *kc_compile_obj(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M,
                         int opt, const char *const *names, int n,
                         void **addrs, void **obj, size_t *objlen,
                         char **err) {
  KCpuOptions o = {opt, 0, 0};
  if (!obj || !objlen) {
    kc_seterr(err, "kc_compile_obj: no output for the object code");
    if (M) LLVMDisposeModule(M);
    if (ctx) LLVMOrcDisposeThreadSafeContext(ctx);
    return NULL;
  }
  return kc_compile_impl(ctx, M, &o, names, n, addrs, NULL, NULL, obj, objlen,
                         err);
}

KCpuCode *kc_load_object(const void *obj, size_t len, const char *const *names,
                         int n, void **addrs, char **err) {
  if (err) *err = NULL;
  if (!obj || !len) {
    kc_seterr(err, "kc_load_object: no object code");
    return NULL;
  }
  if (kc_host(err)) return NULL;
  pthread_mutex_lock(&kc_lock);
  kc_diag[0] = 0;
  KCpuCode *code = NULL;
  LLVMOrcResourceTrackerRef rt = NULL;
  if (kc_ensure_jit(err)) goto done;
  /* A copy: the JIT keeps the buffer while the code lives. */
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, "kjit-object");
  if (!buf) {
    kc_seterr(err, "out of memory");
    goto done;
  }
  rt = LLVMOrcJITDylibCreateResourceTracker(
      LLVMOrcLLJITGetMainJITDylib(kc_jit));
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(kc_jit, rt, buf);
  if (e) {
    char *m = kc_errmsg(e);
    kc_seterr(err, "JIT: %s", m ? m : "?");
    free(m);
    goto done;
  }
  code = kc_lookup_all(rt, names, n, addrs, err);
done:
  if (!code && rt) kc_drop_tracker(rt);
  pthread_mutex_unlock(&kc_lock);
  return code;
}

void kc_free(KCpuCode *c) {
  if (!c) return;
  pthread_mutex_lock(&kc_lock);
  if (kc_jit && c->gen == kc_jit_gen) kc_drop_tracker(c->rt);
  kc_live--;
  pthread_mutex_unlock(&kc_lock);
  free(c);
}
