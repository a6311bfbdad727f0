/*
** target_sim.c: the simulator target (cuda.jit kernels run on the CPU by
** cudasim.c, "simulate = 1"): CPU code like target_cpu.c, whose thread and
** block registers, barrier and shared memory are cudasim.c's kjit_sim_*
** routines (one call each; the simulator keeps the current thread). The
** entry is the usual KEntry wrapper.
*/
#include "codegen/cg.h"

static LLVMValueRef call(LLVMModuleRef M, LLVMBuilderRef B, const char *name, LLVMTypeRef ret,
                         LLVMTypeRef *pt, LLVMValueRef *av, unsigned n) {
  LLVMTypeRef fty = LLVMFunctionType(ret, pt, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(M, name);
  if (fn == NULL) fn = LLVMAddFunction(M, name, fty);
  return LLVMBuildCall2(B, fty, fn, av, n, "");
}

/* kjit_sim_sreg(group * 3 + axis) */
static LLVMValueRef special_reg(LLVMModuleRef M, LLVMBuilderRef B, int group, int axis) {
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(C);
  LLVMTypeRef pt[1] = { i32 };
  LLVMValueRef av[1] = { LLVMConstInt(i32, (unsigned long long)(group * 3 + axis), 0) };
  return call(M, B, "kjit_sim_sreg", LLVMInt64TypeInContext(C), pt, av, 1);
}

static void barrier(CG *G) {
  call(G->M, G->B, "kjit_sim_syncthreads", LLVMVoidTypeInContext(G->C), NULL, NULL, 0);
}

/* The simulator keeps each block's shared memory by allocation site. */
static LLVMValueRef shared_array(CG *G, LLVMTypeRef ety, long long n, long long esize,
                                 long long site, LLVMValueRef *len) {
  LLVMValueRef p;
  if (n > 0) {
    LLVMTypeRef pt[2] = { G->i64, G->i64 };
    LLVMValueRef av[2] = { cg_i64(G, site), cg_i64(G, n * esize) };
    p = call(G->M, G->B, "kjit_sim_shared", G->i8p, pt, av, 2);
  } else {
    LLVMValueRef out = cg_alloca(G, G->i64, "dynbytes");
    LLVMTypeRef pt[1] = { LLVMPointerType(G->i64, 0) };
    p = call(G->M, G->B, "kjit_sim_dynshared", G->i8p, pt, &out, 1);
    *len = LLVMBuildUDiv(G->B, LLVMBuildLoad2(G->B, G->i64, out, ""), cg_i64(G, esize), "");
  }
  return LLVMBuildBitCast(G->B, p, LLVMPointerType(ety, 0), "");
}

/* kjit_sim_intrin(op, mask, v, b): cudasim.c runs every op (its warps
** meet there). */
static LLVMValueRef intrin(CG *G, int op, LLVMValueRef mask, LLVMValueRef v, LLVMValueRef b,
                           int is64) {
  (void)is64;
  LLVMTypeRef pt[4] = { G->i32, G->i32, G->i64, G->i32 };
  LLVMValueRef av[4] = { cg_i32(G, op), mask, v, b };
  return call(G->M, G->B, "kjit_sim_intrin", G->i64, pt, av, 4);
}

/* print(...): kjit_sim_print(kind, bits, text) per item and (4, 0, NULL) to
** end the line; cudasim.c formats them as Lua's print. */
static void print(CG *G, int n, const int *kinds, LLVMValueRef *vals, const char *const *strs) {
  LLVMTypeRef pt[3] = { G->i32, G->i64, G->i8p };
  for (int i = 0; i <= n; i++) {
    int kind = i == n ? 4 : kinds[i];
    LLVMValueRef bits = cg_i64(G, 0), text = LLVMConstPointerNull(G->i8p);
    if (i < n) {
      if (kind == KP_INT) bits = vals[i];
      else if (kind == KP_NUM) bits = LLVMBuildBitCast(G->B, vals[i], G->i64, "");
      else if (kind == KP_BOOL) bits = LLVMBuildZExt(G->B, vals[i], G->i64, "");
      else text = LLVMBuildGlobalStringPtr(G->B, strs[i], "kjit_str");
    }
    LLVMValueRef av[3] = { cg_i32(G, kind), bits, text };
    call(G->M, G->B, "kjit_sim_print", LLVMVoidTypeInContext(G->C), pt, av, 3);
  }
}

const KcgTarget kcg_target_sim = {
  .name = "sim",
  .math_name = NULL,          /* intrinsics, else libm */
  .data_addrspace = 0,
  .special_reg = special_reg,
  .has_fneg = 1,
  .has_runtime = 1,
  .string_globals = 1,
  .stack_checks = 1,
  .poll = 1,                  /* kjit_rt_poll: the simulator stops on interrupts */
  .pure_calls = 0,
  .kernel = 1,
  .kernel_entry = 0,
  .barrier = barrier,
  .fence = NULL,              /* a sequentially consistent fence */
  .shared_array = shared_array,
  .atomic_fadd = NULL,        /* atomicrmw fadd */
  .global_addrspace = 0,
  .zero_by_store = 0,
  .runtime_ir = NULL,
  .version_novec = 1,
  .intrin = intrin,
  .print = print,
};
