/*
** test_cpu.c: tests of the CPU backend (src/backend/cpu.c) on modules built
** directly with the LLVM C API: calls through JIT'd pointers, host
** vectorization, fast-math helpers, errors returned as text, runtime and
** libm symbols, IR and asm output, bounded memory over 1000 compile/free
** cycles, and concurrent compiles from two threads. Prints timings.
**
** Usage: test_cpu [results-file]   (writes "passed failed 0\n" there)
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, sysconf under -std=c11 */
#endif
#include "backend/cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Keep ASan's quarantine small so RSS reflects real growth (ASan builds). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=8"; }


#include "check.h"

/* Wall clock in milliseconds. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Resident set size in MB from /proc/self/statm. */
static double rss_mb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return (double)res * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

/* A fresh context and prepared module. */
static LLVMModuleRef new_module(LLVMOrcThreadSafeContextRef *ctx,
                                const char *name) {
  *ctx = kc_new_context();
  LLVMContextRef C = LLVMOrcThreadSafeContextGetContext(*ctx);
  LLVMModuleRef M = LLVMModuleCreateWithNameInContext(name, C);
  char *err = NULL;
  if (kc_prepare_module(M, &err)) {
    printf("kc_prepare_module: %s\n", err);
    free(err);
  }
  return M;
}

/* Builds i64 name(i64 a, i64 b) = a * k + b. */
static void build_add(LLVMModuleRef M, const char *name, long long k) {
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(C);
  LLVMTypeRef ps[2] = {i64, i64};
  LLVMTypeRef fty = LLVMFunctionType(i64, ps, 2, 0);
  LLVMValueRef f = LLVMAddFunction(M, name, fty);
  LLVMBuilderRef B = LLVMCreateBuilderInContext(C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, f, "entry"));
  LLVMValueRef m =
      LLVMBuildMul(B, LLVMGetParam(f, 0), LLVMConstInt(i64, (unsigned long long)k, 1), "m");
  LLVMBuildRet(B, LLVMBuildAdd(B, m, LLVMGetParam(f, 1), "r"));
  LLVMDisposeBuilder(B);
}

/* Compiles M with one entry point; returns its code (or NULL, printing). */
static KCpuCode *compile1(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M,
                          int opt, const char *name, void **addr, char **ir,
                          char **as) {
  KCpuOptions o = {opt, ir != NULL, as != NULL, NULL};
  char *err = NULL;
  const char *names[1] = {name};
  KCpuCode *c = kc_compile(ctx, M, &o, names, 1, addr, ir, as, &err);
  if (!c) {
    printf("compile of %s failed: %s\n", name, err ? err : "(no message)");
    free(err);
  }
  return c;
}

/* A loop "for i in [0, n): body(i)" in f; body returns the new acc value
   (or NULL for loops without accumulator), in context C. Returns the final
   acc. (This file calls only LLVM functions that kjit's objects call too:
   in the static build they come from kjit's LLVM backend module, which
   exports no others.) */
typedef LLVMValueRef (*BodyFn)(LLVMBuilderRef B, LLVMValueRef f,
                               LLVMValueRef i, LLVMValueRef acc, void *ud);
static LLVMValueRef build_loop(LLVMContextRef C, LLVMBuilderRef B, LLVMValueRef f,
                               LLVMValueRef n, LLVMTypeRef accty,
                               LLVMValueRef acc0, BodyFn body, void *ud) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(C);
  LLVMBasicBlockRef entry = LLVMGetInsertBlock(B);
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(C, f, "loop");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(C, f, "exit");
  LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, n, zero, "nz"), loop, exit);
  LLVMPositionBuilderAtEnd(B, loop);
  LLVMValueRef i = LLVMBuildPhi(B, i64, "i");
  LLVMValueRef acc = accty ? LLVMBuildPhi(B, accty, "acc") : NULL;
  LLVMValueRef acc1 = body(B, f, i, acc, ud);
  LLVMValueRef i1 = LLVMBuildAdd(B, i, LLVMConstInt(i64, 1, 0), "i1");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, i1, n, "c"), loop, exit);
  LLVMValueRef iv[2] = {zero, i1};
  LLVMBasicBlockRef ib[2] = {entry, latch};
  LLVMAddIncoming(i, iv, ib, 2);
  if (accty) {
    LLVMValueRef av[2] = {acc0, acc1};
    LLVMAddIncoming(acc, av, ib, 2);
  }
  LLVMPositionBuilderAtEnd(B, exit);
  if (!accty) return NULL;
  LLVMValueRef r = LLVMBuildPhi(B, accty, "r");
  LLVMValueRef rv[2] = {acc0, acc1};
  LLVMAddIncoming(r, rv, ib, 2);
  return r;
}

/* saxpy body: out[i] = a * x[i] + y[i] (params a, x, y, out, n). */
static LLVMValueRef saxpy_body(LLVMBuilderRef B, LLVMValueRef f,
                               LLVMValueRef i, LLVMValueRef acc, void *ud) {
  (void)acc;
  (void)ud;
  LLVMTypeRef fl = LLVMTypeOf(LLVMGetParam(f, 0));
  LLVMValueRef px = LLVMBuildGEP2(B, fl, LLVMGetParam(f, 1), &i, 1, "px");
  LLVMValueRef py = LLVMBuildGEP2(B, fl, LLVMGetParam(f, 2), &i, 1, "py");
  LLVMValueRef po = LLVMBuildGEP2(B, fl, LLVMGetParam(f, 3), &i, 1, "po");
  LLVMValueRef ax = LLVMBuildFMul(B, LLVMGetParam(f, 0),
                                  LLVMBuildLoad2(B, fl, px, "x"), "ax");
  LLVMBuildStore(B, LLVMBuildFAdd(B, ax, LLVMBuildLoad2(B, fl, py, "y"), "s"),
                 po);
  return NULL;
}

/* Builds void name(float a, float *x, float *y, float *out, i64 n). */
static void build_saxpy(LLVMModuleRef M, const char *name) {
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMTypeRef fl = LLVMFloatTypeInContext(C), i64 = LLVMInt64TypeInContext(C);
  LLVMTypeRef pf = LLVMPointerType(fl, 0);
  LLVMTypeRef ps[5] = {fl, pf, pf, pf, i64};
  LLVMValueRef f =
      LLVMAddFunction(M, name, LLVMFunctionType(LLVMVoidTypeInContext(C), ps, 5, 0));
  LLVMBuilderRef B = LLVMCreateBuilderInContext(C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, f, "entry"));
  build_loop(C, B, f, LLVMGetParam(f, 4), NULL, NULL, saxpy_body, NULL);
  LLVMBuildRetVoid(B);
  LLVMDisposeBuilder(B);
}

/* sum body: acc + x[i], through kjit_fadd_fast_f64 when ud is non-NULL. */
static LLVMValueRef sum_body(LLVMBuilderRef B, LLVMValueRef f, LLVMValueRef i,
                             LLVMValueRef acc, void *ud) {
  LLVMTypeRef d = LLVMTypeOf(acc);
  LLVMValueRef px = LLVMBuildGEP2(B, d, LLVMGetParam(f, 0), &i, 1, "px");
  LLVMValueRef x = LLVMBuildLoad2(B, d, px, "x");
  if (!ud) return LLVMBuildFAdd(B, acc, x, "s");
  LLVMValueRef fadd = ud, args[2] = {acc, x};
  return LLVMBuildCall2(B, LLVMGlobalGetValueType(fadd), fadd, args, 2, "s");
}

/* Builds double name(double *x, i64 n) summing x (fast-math if fast). */
static int build_sum(LLVMModuleRef M, const char *name, int fast) {
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMValueRef fadd = NULL;
  if (fast) {
    char *err = NULL;
    if (kc_link_ir(M, KC_FASTMATH_IR, &err)) {
      printf("kc_link_ir: %s\n", err);
      free(err);
      return -1;
    }
    fadd = LLVMGetNamedFunction(M, "kjit_fadd_fast_f64");
    if (!fadd) return -1;
  }
  LLVMTypeRef d = LLVMDoubleTypeInContext(C), i64 = LLVMInt64TypeInContext(C);
  LLVMTypeRef ps[2] = {LLVMPointerType(d, 0), i64};
  LLVMValueRef f = LLVMAddFunction(M, name, LLVMFunctionType(d, ps, 2, 0));
  LLVMBuilderRef B = LLVMCreateBuilderInContext(C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, f, "entry"));
  LLVMValueRef r = build_loop(C, B, f, LLVMGetParam(f, 1), d, LLVMConstReal(d, 0.0),
                              sum_body, fadd);
  LLVMBuildRet(B, r);
  LLVMDisposeBuilder(B);
  return 0;
}

/* Builds double name(double x) = callee(x) + 1 with callee external. */
static void build_call(LLVMModuleRef M, const char *name, const char *callee) {
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMTypeRef d = LLVMDoubleTypeInContext(C);
  LLVMTypeRef fty = LLVMFunctionType(d, &d, 1, 0);
  LLVMValueRef g = LLVMAddFunction(M, callee, fty);
  LLVMValueRef f = LLVMAddFunction(M, name, fty);
  LLVMBuilderRef B = LLVMCreateBuilderInContext(C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, f, "entry"));
  LLVMValueRef x = LLVMGetParam(f, 0);
  LLVMValueRef r = LLVMBuildCall2(B, fty, g, &x, 1, "r");
  LLVMBuildRet(B, LLVMBuildFAdd(B, r, LLVMConstReal(d, 1.0), "r1"));
  LLVMDisposeBuilder(B);
}

/* A runtime function that JIT code calls by name. */
static double rt_triple(double x) { return 3.0 * x; }

/* Counts occurrences of needle in s. */
static int count(const char *s, const char *needle) {
  int k = 0;
  for (const char *p = s; s && (p = strstr(p, needle)); p += strlen(needle)) k++;
  return k;
}

/* --- tests ------------------------------------------------------------- */

/* The first compile ever (JIT creation included) and a warm one. */
static void test_first_compile(void) {
  double t0 = now_ms();
  LLVMOrcThreadSafeContextRef ctx;
  LLVMModuleRef M = new_module(&ctx, "first");
  build_add(M, "kc_first_add", 1);
  void *p = NULL;
  KCpuCode *c = compile1(ctx, M, 3, "kc_first_add", &p, NULL, NULL);
  double t1 = now_ms();
  CHECK(c && p, "first compile");
  if (c && p) {
    long long (*f)(long long, long long) = (long long (*)(long long, long long))p;
    CHECK(f(40, 2) == 42, "add(40,2) = %lld", f(40, 2));
    CHECK(f(-5, 5) == 0, "add(-5,5)");
  }
  double t2 = now_ms();
  LLVMModuleRef M2 = new_module(&ctx, "second");
  build_add(M2, "kc_second_add", 7);
  void *p2 = NULL;
  KCpuCode *c2 = compile1(ctx, M2, 3, "kc_second_add", &p2, NULL, NULL);
  double t3 = now_ms();
  CHECK(c2 && p2 && ((long long (*)(long long, long long))p2)(6, 1) == 43,
        "second add");
  printf("first compile (LLVM init + JIT creation + compile): %.2f ms "
         "(JIT creation %.2f ms)\n",
         t1 - t0, kc_jit_init_ms());
  printf("second compile of a small function: %.2f ms\n", t3 - t2);
  /* Printed only: speeds are the benchmarks' to judge (bench/run.sh), not
     a test's, which a loaded or sanitized machine would fail. */
  kc_free(c);
  kc_free(c2);
}

static void test_host(void) {
  const char *h = kc_host_description();
  printf("host: %.160s%s\n", h, strlen(h) > 160 ? "..." : "");
  CHECK(strstr(h, "x86_64") || strstr(h, "aarch64") || strlen(h) > 10,
        "host description: %s", h);
}

/* saxpy over f32: vectorized with packed mul/add, no FMA contraction. */
static void test_saxpy(void) {
  LLVMOrcThreadSafeContextRef ctx;
  LLVMModuleRef M = new_module(&ctx, "saxpy");
  build_saxpy(M, "kc_saxpy");
  void *p = NULL;
  char *ir = NULL, *as = NULL;
  double t0 = now_ms();
  KCpuCode *c = compile1(ctx, M, 3, "kc_saxpy", &p, &ir, &as);
  printf("saxpy compile (O3, with IR and asm): %.2f ms\n", now_ms() - t0);
  CHECK(c && p, "saxpy compiles");
  if (!c) return;
  CHECK(ir && strstr(ir, "define") && strstr(ir, "kc_saxpy"), "IR output");
  CHECK(ir && (strstr(ir, "<8 x float>") || strstr(ir, "<16 x float>") ||
                  strstr(ir, "<4 x float>")),
        "IR has float vectors");
  int packed_mul = count(as, "vmulps") + count(as, "\tmulps");
  int packed_add = count(as, "vaddps") + count(as, "\taddps");
  int wide = count(as, "%ymm") + count(as, "%zmm");
  CHECK(packed_mul > 0 && packed_add > 0, "asm has packed mulps/addps "
        "(mul %d add %d)", packed_mul, packed_add);
  CHECK(count(as, "vfmadd") == 0, "strict saxpy must not contract to FMA");
  printf("saxpy asm: %d packed mul, %d packed add, %d ymm/zmm operands\n",
         packed_mul, packed_add, wide);
  enum { N = 1003 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y),
        *out = malloc(N * sizeof *out);
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.5f, y[i] = (float)(N - i);
  ((void (*)(float, float *, float *, float *, long long))p)(2.5f, x, y, out, N);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    volatile float ax = 2.5f * x[i];
    if (out[i] != ax + y[i]) bad++;
  }
  CHECK(bad == 0, "saxpy results (%d wrong)", bad);
  free(x);
  free(y);
  free(out);
  free(ir);
  free(as);
  kc_free(c);
}

/* f64 sum: the fast-math helpers vectorize, the strict loop stays scalar. */
static void test_fastmath(void) {
  enum { N = 10001 };
  double *x = malloc(N * sizeof *x), want = 0;
  for (int i = 0; i < N; i++) x[i] = 1.0 / (i + 1), want += x[i];
  for (int fast = 0; fast <= 1; fast++) {
    LLVMOrcThreadSafeContextRef ctx;
    LLVMModuleRef M = new_module(&ctx, "sum");
    const char *name = fast ? "kc_sum_fast" : "kc_sum_strict";
    if (build_sum(M, name, fast)) {
      CHECK(0, "build_sum");
      LLVMDisposeModule(M);
      kc_dispose_context(ctx);
      continue;
    }
    void *p = NULL;
    char *ir = NULL, *as = NULL;
    KCpuCode *c = compile1(ctx, M, 3, name, &p, &ir, &as);
    CHECK(c && p, "%s compiles", name);
    if (!c) continue;
    int packed = count(as, "vaddpd") + count(as, "\taddpd");
    if (fast) {
      CHECK(packed > 0, "fast sum vectorizes (addpd count %d)", packed);
      CHECK(strstr(ir, "fadd fast <") != NULL, "IR has fast vector fadd");
      CHECK(strstr(ir, "kjit_fadd_fast_f64") == NULL, "helper inlined, gone");
    } else {
      CHECK(packed == 0, "strict sum must not reassociate (addpd count %d)",
            packed);
      CHECK(count(as, "vaddsd") + count(as, "\taddsd") > 0, "strict uses addsd");
    }
    double got = ((double (*)(double *, long long))p)(x, N);
    if (fast)
      CHECK(fabs(got - want) < 1e-9, "fast sum %.17g vs %.17g", got, want);
    else
      CHECK(got == want, "strict sum is exact C order: %.17g vs %.17g", got, want);
    free(ir);
    free(as);
    kc_free(c);
  }
  free(x);
}

/* Helpers declared before kc_link_ir bind to its definitions; linking the
   library twice is harmless; the flags survive inlining at -O0 too. */
static void test_link_order(void) {
  LLVMOrcThreadSafeContextRef ctx;
  LLVMModuleRef M = new_module(&ctx, "linkorder");
  CHECK(*LLVMGetTarget(M) != 0, "kc_prepare_module sets the triple");
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMTypeRef fl = LLVMFloatTypeInContext(C), ps[2] = {fl, fl};
  LLVMTypeRef fty = LLVMFunctionType(fl, ps, 2, 0);
  LLVMValueRef h = LLVMAddFunction(M, "kjit_fmul_fast_f32", fty);
  LLVMValueRef f = LLVMAddFunction(M, "kc_mul_fast", fty);
  LLVMBuilderRef B = LLVMCreateBuilderInContext(C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, f, "entry"));
  LLVMValueRef args[2] = {LLVMGetParam(f, 0), LLVMGetParam(f, 1)};
  LLVMBuildRet(B, LLVMBuildCall2(B, fty, h, args, 2, "r"));
  LLVMDisposeBuilder(B);
  char *err = NULL;
  CHECK(kc_link_ir(M, KC_FASTMATH_IR, &err) == 0, "link after declare: %s",
        err ? err : "");
  free(err);
  err = NULL;
  CHECK(kc_link_ir(M, KC_FASTMATH_IR, &err) == 0, "link twice: %s",
        err ? err : "");
  free(err);
  LLVMValueRef d = LLVMGetNamedFunction(M, "kjit_fmul_fast_f32");
  CHECK(d && !LLVMIsDeclaration(d) && LLVMGetLinkage(d) == LLVMInternalLinkage,
        "declaration became an internal definition");
  /* A second entry using frem (fmod from libm) fetched after linking. */
  LLVMValueRef rem = LLVMGetNamedFunction(M, "kjit_frem_fast_f64");
  LLVMTypeRef db = LLVMDoubleTypeInContext(C), pd[2] = {db, db};
  LLVMTypeRef dty = LLVMFunctionType(db, pd, 2, 0);
  LLVMValueRef g = LLVMAddFunction(M, "kc_rem_fast", dty);
  B = LLVMCreateBuilderInContext(C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, g, "entry"));
  LLVMValueRef gargs[2] = {LLVMGetParam(g, 0), LLVMGetParam(g, 1)};
  LLVMBuildRet(B, LLVMBuildCall2(B, dty, rem, gargs, 2, "r"));
  LLVMDisposeBuilder(B);
  void *pp[2] = {NULL, NULL};
  char *ir = NULL;
  KCpuOptions o = {0, 1, 0, NULL};
  const char *names[2] = {"kc_mul_fast", "kc_rem_fast"};
  KCpuCode *c = rem ? kc_compile(ctx, M, &o, names, 2, pp, &ir, NULL, &err)
                    : NULL;
  CHECK(c != NULL, "compile two entries: %s", err ? err : "");
  free(err);
  void *p = pp[0];
  CHECK(c && p && ((float (*)(float, float))p)(3.0f, 4.0f) == 12.0f,
        "fast mul result");
  CHECK(c && pp[1] && ((double (*)(double, double))pp[1])(7.5, 2.0) == 1.5,
        "fast rem result");
  CHECK(ir && strstr(ir, "fmul fast float") && strstr(ir, "frem fast double") &&
            !strstr(ir, "call "),
        "inlined at O0 with flags");
  free(ir);
  kc_free(c);
}

/* Errors come back as text: verifier, bad IR, unknown names, clashes. */
static void test_errors(void) {
  char *err = NULL;
  /* A block without terminator. */
  LLVMOrcThreadSafeContextRef ctx;
  LLVMModuleRef M = new_module(&ctx, "bad");
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(C);
  LLVMValueRef f = LLVMAddFunction(M, "kc_bad", LLVMFunctionType(i64, &i64, 1, 0));
  LLVMBuilderRef B = LLVMCreateBuilderInContext(C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, f, "entry"));
  LLVMBuildAdd(B, LLVMGetParam(f, 0), LLVMGetParam(f, 0), "x");
  LLVMDisposeBuilder(B);
  KCpuOptions o = {2, 0, 0, NULL};
  const char *nm[1] = {"kc_bad"};
  void *addr = NULL;
  KCpuCode *c = kc_compile(ctx, M, &o, nm, 1, &addr, NULL, NULL, &err);
  CHECK(!c && err && strstr(err, "terminator"), "verifier error: %s",
        err ? err : "(none)");
  printf("verifier error text: %s\n", err ? err : "(none)");
  free(err);
  err = NULL;

  /* Unparsable IR for kc_link_ir. */
  M = new_module(&ctx, "badir");
  CHECK(kc_link_ir(M, "define i32 @f( {", &err) == -1 && err, "bad IR");
  printf("bad IR error text: %s\n", err ? err : "(none)");
  free(err);
  err = NULL;
  /* Linking a clashing definition reports, does not exit. */
  CHECK(kc_link_ir(M, "define i32 @g() { ret i32 1 }", &err) == 0, "link g");
  free(err);
  err = NULL;
  CHECK(kc_link_ir(M, "define i32 @g() { ret i32 2 }", &err) == -1 && err,
        "clashing link fails");
  printf("link clash error text: %s\n", err ? err : "(none)");
  free(err);
  err = NULL;
  LLVMDisposeModule(M);
  kc_dispose_context(ctx);

  /* A call to an undefined external function. */
  M = new_module(&ctx, "undef");
  build_call(M, "kc_calls_undef", "kc_no_such_function_anywhere");
  const char *nm2[1] = {"kc_calls_undef"};
  c = kc_compile(ctx, M, &o, nm2, 1, &addr, NULL, NULL, &err);
  CHECK(!c && err && strstr(err, "kc_no_such_function_anywhere"),
        "undefined symbol error: %s", err ? err : "(none)");
  printf("undefined symbol error text: %s\n", err ? err : "(none)");
  free(err);
  err = NULL;

  /* Looking up a name that the module does not define. */
  M = new_module(&ctx, "noname");
  build_add(M, "kc_has_name", 1);
  const char *nm3[1] = {"kc_has_no_name"};
  c = kc_compile(ctx, M, &o, nm3, 1, &addr, NULL, NULL, &err);
  CHECK(!c && err && strstr(err, "kc_has_no_name"), "missing name error: %s",
        err ? err : "(none)");
  free(err);
  err = NULL;

  /* Two live modules defining the same name: kjit's own loader (objload.c,
  ** what kc_compile uses for one entry point) keeps no process-wide names,
  ** so both load and each runs its own code. */
  M = new_module(&ctx, "own1");
  build_add(M, "kc_own", 1);
  KCpuCode *o1 = compile1(ctx, M, 1, "kc_own", &addr, NULL, NULL);
  void *addr1 = addr;
  M = new_module(&ctx, "own2");
  build_add(M, "kc_own", 2);
  KCpuCode *o2 = compile1(ctx, M, 1, "kc_own", &addr, NULL, NULL);
  CHECK(o1 && o2 && ((long long (*)(long long, long long))addr1)(2, 1) == 3 &&
            ((long long (*)(long long, long long))addr)(2, 1) == 5,
        "same name in two modules loaded by objload.c");
  kc_free(o1);
  kc_free(o2);
  /* The LLVM JIT (what KJIT_GDB selects, and where objects objload.c
  ** refuses go) shares one namespace: a clash is an error. */
  setenv("KJIT_GDB", "1", 1);
  M = new_module(&ctx, "dup1");
  build_add(M, "kc_dup", 1);
  KCpuCode *c1 = compile1(ctx, M, 1, "kc_dup", &addr, NULL, NULL);
  CHECK(c1 != NULL, "first kc_dup");
  M = new_module(&ctx, "dup2");
  build_add(M, "kc_dup", 2);
  const char *nm4[1] = {"kc_dup"};
  c = kc_compile(ctx, M, &o, nm4, 1, &addr, NULL, NULL, &err);
  CHECK(!c && err && strstr(err, "kc_dup"), "duplicate error: %s",
        err ? err : "(none)");
  printf("duplicate definition error text: %s\n", err ? err : "(none)");
  free(err);
  err = NULL;
  /* After freeing the first, the name can be defined again. */
  kc_free(c1);
  M = new_module(&ctx, "dup3");
  build_add(M, "kc_dup", 3);
  c1 = compile1(ctx, M, 1, "kc_dup", &addr, NULL, NULL);
  CHECK(c1 && ((long long (*)(long long, long long))addr)(2, 1) == 7,
        "kc_dup redefined after free");
  kc_free(c1);
  unsetenv("KJIT_GDB");

  /* NULL arguments. */
  c = kc_compile(NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, &err);
  CHECK(!c && err, "NULL module");
  free(err);
}

/* Calling a registered runtime symbol and libm's sin. */
static void test_symbols(void) {
  CHECK(kc_register_symbol("kc_rt_triple", (void *)rt_triple) == 0,
        "register");
  CHECK(kc_register_symbol("kc_rt_triple", (void *)rt_triple) == 0,
        "register again, same address");
  CHECK(kc_register_symbol("kc_rt_triple", (void *)test_symbols) == -1,
        "register clash");
  LLVMOrcThreadSafeContextRef ctx;
  LLVMModuleRef M = new_module(&ctx, "rt");
  build_call(M, "kc_call_rt", "kc_rt_triple");
  void *p = NULL;
  KCpuCode *c = compile1(ctx, M, 3, "kc_call_rt", &p, NULL, NULL);
  CHECK(c && p && ((double (*)(double))p)(2.0) == 7.0, "runtime call");
  kc_free(c);

  /* Registering a name that live JIT code defines fails cleanly (code
  ** loaded by objload.c, the default, defines no process-wide name). */
  setenv("KJIT_GDB", "1", 1);
  M = new_module(&ctx, "defd");
  build_add(M, "kc_defined_here", 1);
  c = compile1(ctx, M, 1, "kc_defined_here", &p, NULL, NULL);
  CHECK(c && kc_register_symbol("kc_defined_here", (void *)rt_triple) == -1,
        "register over JIT code");
  kc_free(c);
  unsetenv("KJIT_GDB");

  M = new_module(&ctx, "sin");
  build_call(M, "kc_call_sin", "sin");
  c = compile1(ctx, M, 3, "kc_call_sin", &p, NULL, NULL);
  volatile double x = 0.75;
  CHECK(c && p && ((double (*)(double))p)(x) == sin(x) + 1.0, "libm sin");
  kc_free(c);

  M = new_module(&ctx, "fmod");
  build_call(M, "kc_call_exp", "exp");
  c = compile1(ctx, M, 0, "kc_call_exp", &p, NULL, NULL);
  CHECK(c && p && ((double (*)(double))p)(x) == exp(x) + 1.0, "libm exp, O0");
  kc_free(c);
}

/* 1000 compile/free cycles must not grow memory unboundedly. */
static void test_memory(void) {
  char name[64];
  long long bad = 0;
  for (int round = 0; round < 2; round++) {
    int n = round == 0 ? 100 : 1000;
    double r0 = rss_mb(), t0 = now_ms();
    for (int i = 0; i < n; i++) {
      LLVMOrcThreadSafeContextRef ctx;
      snprintf(name, sizeof name, "kc_mem_%lu", kc_unique_id());
      LLVMModuleRef M = new_module(&ctx, name);
      build_add(M, name, i);
      void *p = NULL;
      KCpuCode *c = compile1(ctx, M, 3, name, &p, NULL, NULL);
      if (!c || ((long long (*)(long long, long long))p)(2, 1) != 2LL * i + 1)
        bad++;
      kc_free(c);
    }
    double dt = now_ms() - t0, r1 = rss_mb();
    if (round == 1) {
      printf("%d compile/free cycles: %.1f ms total, %.3f ms each; "
             "RSS %.1f -> %.1f MB (%+.1f MB)\n",
             n, dt, dt / n, r0, r1, r1 - r0);
      CHECK(r1 - r0 < 30.0, "RSS growth %.1f MB over %d cycles", r1 - r0, n);
    }
  }
  CHECK(bad == 0, "%lld bad cycles", bad);
}

/* Thread body: compiles and calls 50 functions. */
static void *thread_main(void *ud) {
  long tid = (long)(intptr_t)ud, bad = 0;
  char name[64];
  for (int i = 0; i < 50; i++) {
    LLVMOrcThreadSafeContextRef ctx;
    snprintf(name, sizeof name, "kc_thr%ld_%lu", tid, kc_unique_id());
    LLVMModuleRef M = new_module(&ctx, name);
    build_add(M, name, tid * 1000 + i);
    void *p = NULL;
    KCpuCode *c = compile1(ctx, M, 2, name, &p, NULL, NULL);
    if (!c || ((long long (*)(long long, long long))p)(3, 4) !=
                  3 * (tid * 1000 + i) + 4)
      bad++;
    kc_free(c);
  }
  return (void *)(intptr_t)bad;
}

static void test_threads(void) {
  pthread_t th[2];
  for (long t = 0; t < 2; t++)
    pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)(t + 1));
  long bad = 0;
  for (int t = 0; t < 2; t++) {
    void *r;
    pthread_join(th[t], &r);
    bad += (long)(intptr_t)r;
  }
  CHECK(bad == 0, "threads: %ld bad compiles", bad);
}

/* Shutdown refuses while code lives, then the JIT can be made again.
** Code in the JIT: KJIT_GDB (objload.c's code needs no JIT). */
static void test_shutdown(void) {
  setenv("KJIT_GDB", "1", 1);
  LLVMOrcThreadSafeContextRef ctx;
  LLVMModuleRef M = new_module(&ctx, "live");
  build_add(M, "kc_live", 2);
  void *p = NULL;
  KCpuCode *c = compile1(ctx, M, 1, "kc_live", &p, NULL, NULL);
  CHECK(c && kc_shutdown() == -1, "shutdown refused while code lives");
  kc_free(c);
  CHECK(kc_shutdown() == 0, "shutdown");
  M = new_module(&ctx, "again");
  build_call(M, "kc_call_rt_again", "kc_rt_triple");
  c = compile1(ctx, M, 3, "kc_call_rt_again", &p, NULL, NULL);
  CHECK(c && p && ((double (*)(double))p)(1.0) == 4.0,
        "new JIT keeps registered symbols");
  kc_free(c);
  CHECK(kc_shutdown() == 0, "final shutdown");
  unsetenv("KJIT_GDB");
}

int main(int argc, char **argv) {
  test_first_compile();
  test_host();
  test_saxpy();
  test_fastmath();
  test_link_order();
  test_errors();
  test_symbols();
  test_memory();
  test_threads();
  test_shutdown();
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) {
      fprintf(f, "%d %d 0\n", npass, nfail);
      fclose(f);
    }
  }
  printf("test_cpu: %d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
