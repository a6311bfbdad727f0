/*
** nvvm.c: PTX from the code generator's LLVM module.
**
** libNVVM (CUDA 13: NVVM 2.0, an LLVM 7 reader) takes typed-pointer
** bitcode written by LLVM 14 as long as no LLVM pass has run on it (passes
** add attributes LLVM 7 does not know), the module carries
** !nvvmir.version, and kernels are listed in !nvvm.annotations. libdevice
** is added with nvvmLazyAddModuleToProgram, so only the routines used are
** linked (about 10 ms instead of 27 ms). See shared/NOTES-gpu.md.
**
** Without libNVVM, LLVM's NVPTX backend compiles the same bitcode: parsed
** back first (LLVM's auto-upgrade turns NVVM-era intrinsics such as
** llvm.nvvm.atomic.load.add.f32 into today's IR), libdevice linked and
** internalized, O2, then sm_80/+ptx75 PTX (LLVM 14 cannot target sm_90;
** the driver JIT-compiles sm_80 PTX for newer GPUs).
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm/Config/llvm-config.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include "backend/nvvm.h"
#include "libs/libfind.h"

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"
#define NVPTX_LAYOUT "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"

static void nvvm_debug_version(int dbg[2]);

void kn_prepare_module(LLVMModuleRef M, int debug) {
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMSetTarget(M, NVPTX_TRIPLE);
  LLVMSetDataLayout(M, NVPTX_LAYOUT);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(C);
  /* with debug info, libNVVM wants its debug metadata version too (it
  ** says which; 3.1 for NVVM 2.0) */
  int dbg[2] = { 3, 1 };
  if (debug) nvvm_debug_version(dbg);
  LLVMValueRef v[4] = { LLVMConstInt(i32, 2, 0), LLVMConstInt(i32, 0, 0),
                        LLVMConstInt(i32, (unsigned)dbg[0], 0), LLVMConstInt(i32, (unsigned)dbg[1], 0) };
  LLVMAddNamedMetadataOperand(M, "nvvmir.version", LLVMMDNodeInContext(C, v, debug ? 4 : 2));
}

/* ---- libNVVM, loaded at run time ---------------------------------------------- */

typedef int (*nvvm_create_t)(void **);
typedef int (*nvvm_destroy_t)(void **);
typedef int (*nvvm_add_t)(void *, const char *, size_t, const char *);
typedef int (*nvvm_compile_t)(void *, int, const char **);
typedef int (*nvvm_size_t)(void *, size_t *);
typedef int (*nvvm_get_t)(void *, char *);
typedef const char *(*nvvm_errstr_t)(int);

static struct {
  pthread_once_t once;
  void *lib;
  const char *why;
  nvvm_create_t create;
  nvvm_destroy_t destroy;
  nvvm_add_t add, lazy_add;
  nvvm_compile_t compile;
  nvvm_size_t result_size, log_size;
  nvvm_get_t result, log;
  nvvm_errstr_t errstr;
  int (*ir_version)(int *, int *, int *, int *);
  char *libdevice;        /* contents of libdevice.10.bc */
  size_t libdevice_size;
  char libdevice_path[512];
  char identity[128];     /* kn_identity */
} nv = { PTHREAD_ONCE_INIT };

static void load_nvvm(void);

static void nvvm_debug_version(int dbg[2]) {
  pthread_once(&nv.once, load_nvvm);
  int ir[2];
  if (nv.ir_version) nv.ir_version(&ir[0], &ir[1], &dbg[0], &dbg[1]);
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len)) != NULL) {
      if (fread(buf, 1, (size_t)len, f) != (size_t)len) { free(buf); buf = NULL; }
      else *n = (size_t)len;
    }
  }
  fclose(f);
  return buf;
}

static void find_libdevice(void) {
  for (int i = 0; i < 2; i++) {
    const char *h = kl_cuda_home(i);
    if (h == NULL) continue;
    snprintf(nv.libdevice_path, sizeof nv.libdevice_path, "%s/nvvm/libdevice/libdevice.10.bc", h);
    nv.libdevice = read_file(nv.libdevice_path, &nv.libdevice_size);
    if (nv.libdevice) return;
  }
  nv.libdevice_path[0] = 0;
}

static void set_identity(void) {
  int maj = 0, mn = 0;
  typedef int (*ver_t)(int *, int *);
  ver_t ver = nv.lib ? (ver_t)dlsym(nv.lib, "nvvmVersion") : NULL;
  if (ver) ver(&maj, &mn);
  snprintf(nv.identity, sizeof nv.identity, "nvvm %d.%d libdevice %zu llvm %d", maj, mn,
           nv.libdevice_size, LLVM_VERSION_MAJOR);
}

static void load_nvvm_lib(void);

static void load_nvvm(void) {
  load_nvvm_lib();
  set_identity();
}

static void load_nvvm_lib(void) {
  find_libdevice();
  /* the loader path first, then the CUDA trees (the GPU machine keeps
  ** libNVVM in nvvm/lib64 only), then pip's wheels (libs/libfind.c) */
  static const char *const sonames[] = { "libnvvm.so.4", "libnvvm.so", NULL };
  static const char *const subdirs[] = { "nvvm/lib64", "lib64", "lib", NULL };
  static const kl_spec spec = { "libNVVM", "KJIT_LIBNVVM", sonames, subdirs, NULL, NULL };
  static char why[384];
  nv.lib = kl_open(&spec, NULL, 0, why, sizeof why);
  if (nv.lib == NULL) { nv.why = why; return; }
#define SYM(field, name) nv.field = (void *)dlsym(nv.lib, name)
  SYM(create, "nvvmCreateProgram");
  SYM(destroy, "nvvmDestroyProgram");
  SYM(add, "nvvmAddModuleToProgram");
  SYM(lazy_add, "nvvmLazyAddModuleToProgram");
  SYM(compile, "nvvmCompileProgram");
  SYM(result_size, "nvvmGetCompiledResultSize");
  SYM(result, "nvvmGetCompiledResult");
  SYM(log_size, "nvvmGetProgramLogSize");
  SYM(log, "nvvmGetProgramLog");
  SYM(errstr, "nvvmGetErrorString");
  SYM(ir_version, "nvvmIRVersion");
#undef SYM
  if (!nv.create || !nv.destroy || !nv.add || !nv.compile || !nv.result_size ||
      !nv.result || !nv.log_size || !nv.log) {
    nv.why = "libNVVM lacks the nvvm* entry points kjit needs";
    dlclose(nv.lib);
    nv.lib = NULL;
    return;
  }
  if (nv.libdevice == NULL) nv.why = "libdevice.10.bc not found under CUDA_HOME or /usr/local/cuda";
}

const char *kn_identity(void) {
  pthread_once(&nv.once, load_nvvm);
  return nv.identity;
}

const char *kn_libdevice_path(void) {
  pthread_once(&nv.once, load_nvvm);
  return nv.libdevice_path[0] ? nv.libdevice_path : NULL;
}

const char *kn_backend(const char **why) {
  pthread_once(&nv.once, load_nvvm);
  if (why) *why = nv.lib && nv.libdevice ? NULL : nv.why;
  return nv.lib && nv.libdevice ? "libNVVM" : "LLVM NVPTX";
}

static char *dupmsg(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char *r = malloc(n);
  if (r) snprintf(r, n, "%s%s", a, b);
  return r;
}

/* LLVM 7's text form of M: LLVM 14 writes an alignment operand on
** cmpxchg and atomicrmw, which LLVM 7 neither parses (text) nor reads
** (bitcode: "Invalid record"); in text it is a suffix we can drop.
** Unnamed parameters print as %0, which LLVM 7 refuses: they get names. */
static char *llvm7_text(LLVMModuleRef M) {
  for (LLVMValueRef F = LLVMGetFirstFunction(M); F; F = LLVMGetNextFunction(F)) {
    unsigned n = LLVMCountParams(F);
    for (unsigned i = 0; i < n; i++) {
      LLVMValueRef p = LLVMGetParam(F, i);
      size_t len;
      LLVMGetValueName2(p, &len);
      if (len == 0) {
        char nm[16];
        snprintf(nm, sizeof nm, "p%u", i);
        LLVMSetValueName2(p, nm, strlen(nm));
      }
    }
  }
  char *ir = LLVMPrintModuleToString(M);
  size_t n = strlen(ir);
  char *out = malloc(n + 1), *o = out;
  if (out == NULL) { LLVMDisposeMessage(ir); return NULL; }
  for (const char *line = ir; *line; ) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    memcpy(o, line, len);
    if (memmem(line, len, " cmpxchg ", 9) || memmem(line, len, " atomicrmw ", 11)) {
      char *al = memmem(o, len, ", align ", 8);
      if (al) len = (size_t)(al - o);
    }
    {   /* LLVM 9's immarg parameter attribute (llvm.ctlz's i1) */
      char *at;
      while ((at = memmem(o, len, " immarg", 7)) != NULL) {
        memmove(at, at + 7, len - (size_t)(at + 7 - o));
        len -= 7;
      }
    }
    if (len > 2 && line[0] == '!' && memmem(line, len, "distinct !DI", 12)) {
      /* debug info (lineinfo): LLVM 8's spFlags as LLVM 7's three fields,
      ** and fields LLVM 7 does not know dropped */
      static const struct { const char *from, *to; } edits[] = {
        { "spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized",
          "isLocal: true, isDefinition: true, isOptimized: true" },
        { "spFlags: DISPFlagDefinition | DISPFlagOptimized", "isLocal: false, isDefinition: true, isOptimized: true" },
        { ", nameTableKind: None", "" }, { ", sysroot: \"\"", "" }, { ", sdk: \"\"", "" },
        { ", retainedNodes: !{}", "" }, { NULL, NULL } };
      for (int k = 0; edits[k].from; k++) {
        size_t fl = strlen(edits[k].from), tl = strlen(edits[k].to);
        char *at = memmem(o, len, edits[k].from, fl);
        if (at == NULL || tl > fl) continue;
        memcpy(at, edits[k].to, tl);
        memmove(at + tl, at + fl, len - (size_t)(at + fl - o));
        len -= fl - tl;
      }
    }
    if (len > 11 && memcmp(line, "attributes ", 11) == 0) {
      /* attributes newer than LLVM 7 that LLVM 14 gives some intrinsics
      ** (llvm.nvvm.read.ptx.sreg.laneid): dropped, as words of the group */
      static const char *const newer[] = { " nofree", " nosync", " willreturn", " mustprogress", NULL };
      for (int k = 0; newer[k]; k++) {
        size_t wl = strlen(newer[k]);
        char *at;
        while ((at = memmem(o, len, newer[k], wl)) != NULL && (at[wl] == ' ' || at[wl] == '}')) {
          memmove(at, at + wl, len - (size_t)(at + wl - o));
          len -= wl;
        }
      }
    }
    o += len;
    if (end) *o++ = '\n';
    line = end ? end + 1 : line + len;
  }
  *o = 0;
  LLVMDisposeMessage(ir);
  return out;
}

static char *compile_nvvm(LLVMModuleRef M, int cc, int fma, int flags, char **err) {
  void *prog = NULL;
  char *ptx = NULL;
  char *text = llvm7_text(M);
  if (text == NULL) { *err = dupmsg("not enough memory", ""); return NULL; }
  int rc = nv.create(&prog);
  if (rc != 0) { free(text); *err = dupmsg("libNVVM: nvvmCreateProgram failed", ""); return NULL; }
  rc = nv.add(prog, text, strlen(text), "kjit");
  if (rc == 0 && nv.libdevice)
    rc = (nv.lazy_add ? nv.lazy_add : nv.add)(prog, nv.libdevice, nv.libdevice_size, "libdevice");
  char arch[32], fmaopt[16];
  snprintf(arch, sizeof arch, "-arch=compute_%d", cc);
  snprintf(fmaopt, sizeof fmaopt, "-fma=%d", fma ? 1 : 0);
  /* numba-cuda's fastmath: flush denormals, approximate division and
  ** square root; libNVVM's levels are 0 and 3 */
  const char *opts[8] = { arch, flags & KN_OPT0 ? "-opt=0" : "-opt=3", fmaopt };
  int nopts = 3;
  if (flags & KN_FASTMATH) {
    opts[nopts++] = "-ftz=1";
    opts[nopts++] = "-prec-div=0";
    opts[nopts++] = "-prec-sqrt=0";
  }
  if (flags & KN_LINEINFO) opts[nopts++] = "-generate-line-info";
  if (rc == 0) rc = nv.compile(prog, nopts, opts);
  if (rc != 0) {
    size_t n = 0;
    char *log = NULL;
    if (nv.log_size(prog, &n) == 0 && n > 1 && (log = malloc(n)) != NULL && nv.log(prog, log) != 0) {
      free(log);
      log = NULL;
    }
    char head[160];
    snprintf(head, sizeof head, "libNVVM (%s) failed: %s", arch,
             nv.errstr ? nv.errstr(rc) : "error");
    *err = dupmsg(head, log ? log : "");
    free(log);
  } else {
    size_t n = 0;
    if (nv.result_size(prog, &n) == 0 && (ptx = malloc(n + 1)) != NULL) {
      if (nv.result(prog, ptx) != 0) { free(ptx); ptx = NULL; }
      else ptx[n] = 0;
    }
    if (ptx == NULL) *err = dupmsg("libNVVM: cannot read the compiled PTX", "");
  }
  nv.destroy(&prog);
  free(text);
  return ptx;
}

/* ---- The fallback: LLVM's NVPTX backend ---------------------------------------- */

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
static void init_nvptx(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

static char *compile_llvm(LLVMMemoryBufferRef bc, const char *kernel, int cc, int fma, char **err) {
  pthread_once(&nvptx_once, init_nvptx);
  LLVMContextRef C = LLVMContextCreate();
  LLVMModuleRef M = NULL, D = NULL;
  char *ptx = NULL, *msg = NULL;
  LLVMTargetMachineRef tm = NULL;
  LLVMMemoryBufferRef copy = LLVMCreateMemoryBufferWithMemoryRangeCopy(
      LLVMGetBufferStart(bc), LLVMGetBufferSize(bc), "kjit");
  int bad = LLVMParseBitcodeInContext2(C, copy, &M);
  LLVMDisposeMemoryBuffer(copy);
  if (bad) { *err = dupmsg("NVPTX: cannot read the kernel bitcode", ""); goto out; }
  if (nv.libdevice) {
    LLVMMemoryBufferRef lb = LLVMCreateMemoryBufferWithMemoryRangeCopy(nv.libdevice, nv.libdevice_size, "libdevice");
    bad = LLVMParseBitcodeInContext2(C, lb, &D);
    LLVMDisposeMemoryBuffer(lb);
    if (bad) { *err = dupmsg("NVPTX: cannot read ", nv.libdevice_path); goto out; }
    LLVMSetTarget(D, NVPTX_TRIPLE);
    LLVMSetDataLayout(D, NVPTX_LAYOUT);
    if (LLVMLinkModules2(M, D)) { D = NULL; *err = dupmsg("NVPTX: cannot link libdevice", ""); goto out; }
    D = NULL;
  }
  /* everything but the kernel is internal, so O2 drops what is unused */
  for (LLVMValueRef F = LLVMGetFirstFunction(M); F; F = LLVMGetNextFunction(F)) {
    size_t n;
    const char *nm = LLVMGetValueName2(F, &n);
    if (!LLVMIsDeclaration(F) && strcmp(nm, kernel) != 0) LLVMSetLinkage(F, LLVMInternalLinkage);
  }
  for (LLVMValueRef G = LLVMGetFirstGlobal(M); G; G = LLVMGetNextGlobal(G))
    if (!LLVMIsDeclaration(G)) LLVMSetLinkage(G, LLVMInternalLinkage);
  /* libdevice asks __nvvm_reflect about denormals: keep them (-ftz=0) */
  LLVMTargetRef T;
  if (LLVMGetTargetFromTriple(NVPTX_TRIPLE, &T, &msg)) { *err = dupmsg("NVPTX: ", msg ? msg : "no target"); goto out; }
  char cpu[16];
  snprintf(cpu, sizeof cpu, "sm_%d", cc > 86 ? 80 : cc);
  tm = LLVMCreateTargetMachine(T, NVPTX_TRIPLE, cpu, "+ptx75", LLVMCodeGenLevelAggressive,
                               LLVMRelocDefault, LLVMCodeModelDefault);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  /* lcssa last: LLVM 14's loop strength reduction miscompiles exit tests
  ** on IR not in LCSSA form (see kc_optimize in cpu.c) */
  LLVMErrorRef e = LLVMRunPasses(M, "function(nvvm-reflect),default<O2>,function(lcssa)", tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *em = LLVMGetErrorMessage(e);
    *err = dupmsg("NVPTX passes: ", em);
    LLVMDisposeErrorMessage(em);
    goto out;
  }
  (void)fma;
  LLVMMemoryBufferRef out;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, M, LLVMAssemblyFile, &msg, &out)) {
    *err = dupmsg("NVPTX code generation: ", msg ? msg : "failed");
    goto out;
  }
  size_t n = LLVMGetBufferSize(out);
  ptx = malloc(n + 1);
  if (ptx) { memcpy(ptx, LLVMGetBufferStart(out), n); ptx[n] = 0; }
  LLVMDisposeMemoryBuffer(out);
out:
  if (msg) LLVMDisposeMessage(msg);
  if (tm) LLVMDisposeTargetMachine(tm);
  if (D) LLVMDisposeModule(D);
  if (M) LLVMDisposeModule(M);
  LLVMContextDispose(C);
  return ptx;
}

void kn_annotate(LLVMModuleRef M, const char *kernel, const char *key, int value) {
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMValueRef fn = LLVMGetNamedFunction(M, kernel);
  if (fn == NULL) return;
  LLVMValueRef md[3] = { fn, LLVMMDStringInContext(C, key, (unsigned)strlen(key)),
                         LLVMConstInt(LLVMInt32TypeInContext(C), (unsigned long long)value, 0) };
  LLVMAddNamedMetadataOperand(M, "nvvm.annotations", LLVMMDNodeInContext(C, md, 3));
}

char *kn_compile(LLVMModuleRef M, const char *kernel, int cc, int fma, int flags, char **err) {
  pthread_once(&nv.once, load_nvvm);
  *err = NULL;
  if (nv.lib && nv.libdevice && !getenv("KJIT_FORCE_NVPTX")) {
    char *ptx = compile_nvvm(M, cc, fma, flags, err);
    if (ptx == NULL && *err == NULL) *err = dupmsg("not enough memory", "");
    return ptx;
  }
  LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(M);
  if (bc == NULL) { *err = dupmsg("cannot write the kernel's bitcode", ""); return NULL; }
  char *ptx = compile_llvm(bc, kernel, cc, fma, err);   /* (always O2) */
  LLVMDisposeMemoryBuffer(bc);
  if (ptx == NULL && *err == NULL) *err = dupmsg("not enough memory", "");
  return ptx;
}
