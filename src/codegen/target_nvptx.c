/*
** target_nvptx.c: the NVPTX target (cuda.jit kernels for libNVVM, which
** reads LLVM 7-era IR: no fneg, no globals in the generic address space,
** no llvm.memset attributes; see /work/shared/NOTES-gpu.md): libdevice
** math (__nv_*), the PTX special registers, barrier and fence intrinsics,
** shared arrays in address space 3, NVVM's float atomic add, no C
** runtime (kjit_rt_* come as IR text, runtime_ir), no string globals
** (error messages travel as numbers), the device kernel entry.
** Array data pointers stay generic (address space 0), as the AST code
** generator had them: NVVM infers the global space from the parameters.
*/
#include <stdio.h>
#include <string.h>
#include "codegen/cg.h"
#include "common/runtime_err.h"

static int math_name(const char *base, int is_f32, char *buf, size_t n) {
  snprintf(buf, n, "__nv_%s%s", base, is_f32 ? "f" : "");
  return 1;
}

static LLVMValueRef call0(LLVMModuleRef M, LLVMBuilderRef B, const char *name, LLVMTypeRef ret) {
  LLVMTypeRef fty = LLVMFunctionType(ret, NULL, 0, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(M, name);
  if (fn == NULL) fn = LLVMAddFunction(M, name, fty);
  return LLVMBuildCall2(B, fty, fn, NULL, 0, "");
}

static LLVMValueRef special_reg(LLVMModuleRef M, LLVMBuilderRef B, int group, int axis) {
  static const char *const grp[] = { "tid", "ctaid", "ntid", "nctaid" };
  char name[48];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", grp[group], 'x' + axis);
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMValueRef r = call0(M, B, name, LLVMInt32TypeInContext(C));
  return LLVMBuildZExt(B, r, LLVMInt64TypeInContext(C), "");
}

static void barrier(CG *G) { call0(G->M, G->B, "llvm.nvvm.barrier0", LLVMVoidTypeInContext(G->C)); }
static void fence(CG *G) { call0(G->M, G->B, "llvm.nvvm.membar.gl", LLVMVoidTypeInContext(G->C)); }

/* A static array (n > 0) is a module global in the shared space; a dynamic
** one is the one extern array the launch sizes, whose bytes the kernel
** entry keeps in err->stack_limit. */
static LLVMValueRef shared_array(CG *G, LLVMTypeRef ety, long long n, long long esize,
                                 long long site, LLVMValueRef *len) {
  (void)site;
  LLVMValueRef g;
  if (n > 0) {
    LLVMTypeRef aty = LLVMArrayType(ety, (unsigned)n);
    g = LLVMAddGlobalInAddressSpace(G->M, aty, "kjit_shared", 3);
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetInitializer(g, LLVMGetUndef(aty));
  } else {
    g = LLVMGetNamedGlobal(G->M, "kjit_dynshared");
    if (g == NULL) {
      g = LLVMAddGlobalInAddressSpace(G->M, LLVMArrayType(G->i8, 0), "kjit_dynshared", 3);
      LLVMSetLinkage(g, LLVMExternalLinkage);
    }
    LLVMValueRef bytes = LLVMBuildLoad2(G->B, G->i64,
        LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_STACK_LIMIT, ""), "");
    *len = LLVMBuildUDiv(G->B, bytes, cg_i64(G, esize), "");
  }
  LLVMSetAlignment(g, 16);
  LLVMValueRef p3 = LLVMBuildBitCast(G->B, g, LLVMPointerType(ety, 3), "");
  return LLVMBuildAddrSpaceCast(G->B, p3, LLVMPointerType(ety, 0), "");
}

/* LLVM 7 has no atomicrmw fadd: NVVM's own intrinsic */
static LLVMValueRef atomic_fadd(CG *G, LLVMValueRef p, LLVMValueRef v) {
  LLVMTypeRef fty = LLVMTypeOf(v);
  LLVMTypeRef pt[2] = { LLVMTypeOf(p), fty };
  LLVMValueRef av[2] = { p, v };
  return cg_ccall(G, fty == G->f32 ? "llvm.nvvm.atomic.load.add.f32.p0f32"
                                   : "llvm.nvvm.atomic.load.add.f64.p0f64", fty, pt, av, 2);
}

/* Calls NVVM intrinsic name (ret (args...)). */
static LLVMValueRef nvcall(CG *G, const char *name, LLVMTypeRef ret, LLVMValueRef *av, unsigned n) {
  LLVMTypeRef pt[4];
  for (unsigned i = 0; i < n; i++) pt[i] = LLVMTypeOf(av[i]);
  return cg_ccall(G, name, ret, pt, av, n);
}

/* Inline PTX: asm with one i32 result ("=r") or one i32 operand ("r"). */
static LLVMValueRef inline_asm(CG *G, const char *text, LLVMValueRef arg) {
  LLVMTypeRef pt[1] = { G->i32 };
  LLVMTypeRef fty = LLVMFunctionType(arg ? LLVMVoidTypeInContext(G->C) : G->i32, pt, arg ? 1 : 0, 0);
  const char *cons = arg ? "r" : "=r";
  LLVMValueRef a = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1,
                                    0, LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(G->B, fty, a, &arg, arg ? 1 : 0, "");
}

/* A 32-bit shuffle of v (i32). */
static LLVMValueRef shfl32(CG *G, int op, LLVMValueRef mask, LLVMValueRef v, LLVMValueRef b) {
  static const char *const mode[] = { "idx", "up", "down", "bfly" };
  char name[48];
  snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.i32", mode[op - KI_SHFL_IDX]);
  /* c: the lane clamp (31; shfl.up counts from lane 0) */
  LLVMValueRef av[4] = { mask, v, b, cg_i32(G, op == KI_SHFL_UP ? 0 : 0x1f) };
  return nvcall(G, name, G->i32, av, 4);
}

/* match.any (the lanes with v's value) or match.all (the mask, or 0) of
** a 32-bit v. */
static LLVMValueRef match32(CG *G, int op, LLVMValueRef mask, LLVMValueRef v) {
  LLVMValueRef av[2] = { mask, v };
  if (op == KI_MATCH_ANY) return nvcall(G, "llvm.nvvm.match.any.sync.i32", G->i32, av, 2);
  LLVMTypeRef el[2] = { G->i32, G->i1 };
  LLVMValueRef pair = nvcall(G, "llvm.nvvm.match.all.sync.i32p", LLVMStructTypeInContext(G->C, el, 2, 0), av, 2);
  return LLVMBuildExtractValue(G->B, pair, 0, "");
}

/* cuda.cg.this_grid():sync(), as CUDA's cooperative groups do it (libNVVM
** has no intrinsic; numba-cuda calls cudadevrt's cudaCGSynchronizeGrid,
** which does the same): a cooperative launch gives the kernel a grid
** workspace from the driver, its address in %envreg1 (low 32 bits) and
** %envreg2 (high), whose second u32 is the grid barrier. After a block
** barrier, thread (0,0,0) of each block adds 1 to it, block (0,0,0)'s adds
** 0x80000000 - (blocks - 1): once every block has added, the top bit has
** flipped (and the low bits are back where they were, so the barrier
** needs no reset between syncs or launches); each waits for the flip with
** volatile loads, between fences, and a block barrier lets its threads on.
** (The CUDA toolkit's cooperative_groups/details/driver_abi.h and sync.h:
** this is their path for GPUs before sm_70, also right on later ones.) */
static void grid_sync(CG *G) {
  LLVMTypeRef v0 = LLVMVoidTypeInContext(G->C);
  LLVMValueRef z = cg_i64(G, 0);
  barrier(G);
  LLVMValueRef tsum = LLVMBuildAdd(G->B, LLVMBuildAdd(G->B, special_reg(G->M, G->B, 0, 0),
                        special_reg(G->M, G->B, 0, 1), ""), special_reg(G->M, G->B, 0, 2), "");
  LLVMBasicBlockRef master = cg_bb(G, "gridsync.master"), spin = cg_bb(G, "gridsync.spin"),
                    out = cg_bb(G, "gridsync.out"), done = cg_bb(G, "gridsync.done");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, tsum, z, ""), master, done);
  LLVMPositionBuilderAtEnd(G->B, master);
  LLVMValueRef bsum = LLVMBuildAdd(G->B, LLVMBuildAdd(G->B, special_reg(G->M, G->B, 1, 0),
                        special_reg(G->M, G->B, 1, 1), ""), special_reg(G->M, G->B, 1, 2), "");
  LLVMValueRef nblocks = LLVMBuildTrunc(G->B, LLVMBuildMul(G->B, LLVMBuildMul(G->B,
                           special_reg(G->M, G->B, 3, 0), special_reg(G->M, G->B, 3, 1), ""),
                           special_reg(G->M, G->B, 3, 2), ""), G->i32, "");
  LLVMValueRef first = LLVMBuildSub(G->B, cg_i32(G, (int)0x80000000u),
                                    LLVMBuildSub(G->B, nblocks, cg_i32(G, 1), ""), "");
  LLVMValueRef nb = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, bsum, z, ""), first,
                                    cg_i32(G, 1), "");
  LLVMValueRef lo = LLVMBuildZExt(G->B, inline_asm(G, "mov.u32 $0, %envreg1;", NULL), G->i64, "");
  LLVMValueRef hi = LLVMBuildZExt(G->B, inline_asm(G, "mov.u32 $0, %envreg2;", NULL), G->i64, "");
  LLVMValueRef ws = LLVMBuildOr(G->B, lo, LLVMBuildShl(G->B, hi, cg_i64(G, 32), ""), "");
  LLVMValueRef bar = LLVMBuildIntToPtr(G->B, LLVMBuildAdd(G->B, ws, cg_i64(G, 4), ""),
                                       LLVMPointerType(G->i32, 0), "gridbar");
  call0(G->M, G->B, "llvm.nvvm.membar.gl", v0);
  LLVMValueRef old = LLVMBuildAtomicRMW(G->B, LLVMAtomicRMWBinOpAdd, bar, nb,
                                        LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(G->B, spin);
  LLVMPositionBuilderAtEnd(G->B, spin);
  LLVMValueRef cur = LLVMBuildLoad2(G->B, G->i32, bar, "");
  LLVMSetVolatile(cur, 1);
  LLVMValueRef flipped = LLVMBuildAnd(G->B, LLVMBuildXor(G->B, old, cur, ""),
                                      cg_i32(G, (int)0x80000000u), "");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntNE, flipped, cg_i32(G, 0), ""), out, spin);
  LLVMPositionBuilderAtEnd(G->B, out);
  call0(G->M, G->B, "llvm.nvvm.membar.gl", v0);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  barrier(G);
}

/* numba-cuda's intrinsics (target.h) as NVVM intrinsics and inline PTX,
** as numba-cuda itself lowers them. */
static LLVMValueRef intrin(CG *G, int op, LLVMValueRef mask, LLVMValueRef v, LLVMValueRef b,
                           int is64) {
  LLVMTypeRef i32 = G->i32, i64 = G->i64, v0 = LLVMVoidTypeInContext(G->C);
  LLVMValueRef r = NULL, pred = NULL;
  if (op >= KI_VOTE_ALL && op <= KI_BALLOT)
    pred = LLVMBuildICmp(G->B, LLVMIntNE, v, cg_i64(G, 0), "");
  switch (op) {
  case KI_LANEID: r = call0(G->M, G->B, "llvm.nvvm.read.ptx.sreg.laneid", i32); break;
  case KI_LANEMASK_LT: r = call0(G->M, G->B, "llvm.nvvm.read.ptx.sreg.lanemask.lt", i32); break;
  case KI_ACTIVEMASK: r = inline_asm(G, "activemask.b32 $0;", NULL); break;
  case KI_SYNCWARP: nvcall(G, "llvm.nvvm.bar.warp.sync", v0, &mask, 1); return cg_i64(G, 0);
  case KI_SHFL_IDX: case KI_SHFL_UP: case KI_SHFL_DOWN: case KI_SHFL_XOR:
    if (!is64) { r = shfl32(G, op, mask, LLVMBuildTrunc(G->B, v, i32, ""), b); break; }
    {   /* two 32-bit shuffles, as numba-cuda does for 64-bit values */
      LLVMValueRef lo = shfl32(G, op, mask, LLVMBuildTrunc(G->B, v, i32, ""), b);
      LLVMValueRef hi = shfl32(G, op, mask, LLVMBuildTrunc(G->B, LLVMBuildLShr(G->B, v, cg_i64(G, 32), ""), i32, ""), b);
      return LLVMBuildOr(G->B, LLVMBuildZExt(G->B, lo, i64, ""),
                         LLVMBuildShl(G->B, LLVMBuildZExt(G->B, hi, i64, ""), cg_i64(G, 32), ""), "");
    }
  case KI_VOTE_ALL: case KI_VOTE_ANY: case KI_VOTE_UNI: {
    static const char *const names[] = { "llvm.nvvm.vote.all.sync", "llvm.nvvm.vote.any.sync",
                                         "llvm.nvvm.vote.uni.sync" };
    LLVMValueRef av[2] = { mask, pred };
    return LLVMBuildZExt(G->B, nvcall(G, names[op - KI_VOTE_ALL], G->i1, av, 2), i64, "");
  }
  case KI_BALLOT: {
    LLVMValueRef av[2] = { mask, pred };
    r = nvcall(G, "llvm.nvvm.vote.ballot.sync", i32, av, 2);
    break;
  }
  case KI_MATCH_ANY: case KI_MATCH_ALL:
    /* 64-bit values as two 32-bit matches (the lanes equal in both
    ** halves): LLVM 7 (libNVVM) and LLVM 14 disagree on the result type
    ** of the 64-bit intrinsics */
    r = match32(G, op, mask, LLVMBuildTrunc(G->B, v, i32, ""));
    if (is64)
      r = LLVMBuildAnd(G->B, r, match32(G, op, mask, LLVMBuildTrunc(G->B, LLVMBuildLShr(G->B, v, cg_i64(G, 32), ""), i32, "")), "");
    break;
  case KI_BAR_POPC: case KI_BAR_AND: case KI_BAR_OR: {
    static const char *const names[] = { "llvm.nvvm.barrier0.popc", "llvm.nvvm.barrier0.and",
                                         "llvm.nvvm.barrier0.or" };
    LLVMValueRef p = LLVMBuildZExt(G->B, LLVMBuildICmp(G->B, LLVMIntNE, v, cg_i64(G, 0), ""), i32, "");
    r = nvcall(G, names[op - KI_BAR_POPC], i32, &p, 1);
    break;
  }
  case KI_FENCE_BLOCK: call0(G->M, G->B, "llvm.nvvm.membar.cta", v0); return cg_i64(G, 0);
  case KI_FENCE_SYSTEM: call0(G->M, G->B, "llvm.nvvm.membar.sys", v0); return cg_i64(G, 0);
  case KI_NANOSLEEP: inline_asm(G, "nanosleep.u32 $0;", LLVMBuildTrunc(G->B, v, i32, "")); return cg_i64(G, 0);
  case KI_GRID_SYNC: grid_sync(G); return cg_i64(G, 0);
  default: return cg_i64(G, 0);
  }
  return LLVMBuildZExt(G->B, r, i64, "");
}

/* A constant string in global memory, as a generic i8*. */
static LLVMValueRef global_str(CG *G, const char *s, size_t len) {
  LLVMTypeRef aty = LLVMArrayType(G->i8, (unsigned)len + 1);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(G->M, aty, "kjit_str", 1);
  LLVMSetInitializer(g, LLVMConstStringInContext(G->C, s, (unsigned)len, 0));
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMValueRef idx[2] = { cg_i32(G, 0), cg_i32(G, 0) };
  LLVMValueRef p1 = LLVMConstInBoundsGEP2(aty, g, idx, 2);
  return LLVMConstAddrSpaceCast(p1, G->i8p);
}

/* print(...): one vprintf of a format made here (constant strings inline,
** %% escaped) and 8-byte argument slots, as CUDA C's printf. A float
** prints as %.14g with ".0" appended where Lua's print appends it (an
** integral value below 1e14). */
static void print(CG *G, int n, const int *kinds, LLVMValueRef *vals, const char *const *strs) {
  size_t cap = 16;
  for (int i = 0; i < n; i++) cap += 8 + (kinds[i] == KP_STR ? 2 * strlen(strs[i]) : 0);
  char *fmt = ka_alloc(G->S->A, cap);
  LLVMValueRef *slots = ka_alloc(G->S->A, sizeof(LLVMValueRef) * (size_t)(2 * n + 1));
  if (fmt == NULL || slots == NULL) cg_error(G, NULL, "not enough memory");
  size_t k = 0;
  int ns = 0;
  LLVMValueRef yes = NULL, no = NULL, dot0 = NULL, empty = NULL;
  for (int i = 0; i < n; i++) {
    if (i) fmt[k++] = '\t';
    switch (kinds[i]) {
    case KP_STR:
      for (const char *c = strs[i]; *c; c++) {
        if (*c == '%') fmt[k++] = '%';
        fmt[k++] = *c;
      }
      break;
    case KP_INT:
      memcpy(fmt + k, "%lld", 4); k += 4;
      slots[ns++] = vals[i];
      break;
    case KP_NUM: {
      memcpy(fmt + k, "%.14g%s", 7); k += 7;
      LLVMValueRef x = vals[i];
      slots[ns++] = LLVMBuildBitCast(G->B, x, G->i64, "");
      LLVMValueRef t = cg_math(G, "trunc", G->f64, &x, 1), ax = cg_math(G, "fabs", G->f64, &x, 1);
      LLVMValueRef whole = LLVMBuildAnd(G->B, LLVMBuildFCmp(G->B, LLVMRealOEQ, t, x, ""),
                                        LLVMBuildFCmp(G->B, LLVMRealOLT, ax, cg_f64(G, 1e14), ""), "");
      if (dot0 == NULL) { dot0 = global_str(G, ".0", 2); empty = global_str(G, "", 0); }
      slots[ns++] = LLVMBuildPtrToInt(G->B, LLVMBuildSelect(G->B, whole, dot0, empty, ""), G->i64, "");
      break;
    }
    default:   /* KP_BOOL */
      memcpy(fmt + k, "%s", 2); k += 2;
      if (yes == NULL) { yes = global_str(G, "true", 4); no = global_str(G, "false", 5); }
      slots[ns++] = LLVMBuildPtrToInt(G->B, LLVMBuildSelect(G->B, vals[i], yes, no, ""), G->i64, "");
      break;
    }
  }
  fmt[k++] = '\n';
  fmt[k] = 0;
  LLVMValueRef buf = LLVMConstPointerNull(G->i8p);
  if (ns > 0) {
    LLVMValueRef arr = cg_alloca(G, LLVMArrayType(G->i64, (unsigned)ns), "printargs");
    for (int i = 0; i < ns; i++) {
      LLVMValueRef idx[2] = { cg_i32(G, 0), cg_i32(G, i) };
      LLVMBuildStore(G->B, slots[i], LLVMBuildInBoundsGEP2(G->B, LLVMArrayType(G->i64, (unsigned)ns), arr, idx, 2, ""));
    }
    buf = LLVMBuildBitCast(G->B, arr, G->i8p, "");
  }
  LLVMTypeRef pt[2] = { G->i8p, G->i8p };
  LLVMValueRef av[2] = { global_str(G, fmt, k), buf };
  cg_ccall(G, "vprintf", G->i32, pt, av, 2);
}

/* Lua's exact integer/float comparison and float for-loop limits, the
** same algorithms as runtime.c, written with libdevice's floor and ceil. */
static const char runtime_ir[] =
  "declare double @__nv_floor(double)\n"
  "declare double @__nv_ceil(double)\n"
  "define internal i32 @kjit_rt_cmp_int_float(i32 %op, i64 %i, double %f) {\n"
  "entry:\n"
  "  %nan = fcmp uno double %f, %f\n"
  "  br i1 %nan, label %no, label %num\n"
  "num:\n"
  "  %lo = fcmp oge double %f, 0xC3E0000000000000\n"
  "  %hi = fcmp olt double %f, 0x43E0000000000000\n"
  "  %inr = and i1 %lo, %hi\n"
  "  %iseq = icmp eq i32 %op, 4\n"
  "  br i1 %iseq, label %eq, label %ord\n"
  "eq:\n"
  "  br i1 %inr, label %eq2, label %no\n"
  "eq2:\n"
  "  %fl = call double @__nv_floor(double %f)\n"
  "  %isint = fcmp oeq double %fl, %f\n"
  "  %fi = fptosi double %f to i64\n"
  "  %same = icmp eq i64 %fi, %i\n"
  "  %r = and i1 %isint, %same\n"
  "  %rz = zext i1 %r to i32\n"
  "  ret i32 %rz\n"
  "ord:\n"
  "  br i1 %hi, label %ord2, label %big\n"
  "big:\n"
  "  %le1 = icmp sle i32 %op, 1\n"
  "  %bz = zext i1 %le1 to i32\n"
  "  ret i32 %bz\n"
  "ord2:\n"
  "  br i1 %lo, label %ord3, label %small\n"
  "small:\n"
  "  %ge2 = icmp sge i32 %op, 2\n"
  "  %sz = zext i1 %ge2 to i32\n"
  "  ret i32 %sz\n"
  "ord3:\n"
  "  %c = call double @__nv_ceil(double %f)\n"
  "  %fl2 = call double @__nv_floor(double %f)\n"
  "  %ci = fptosi double %c to i64\n"
  "  %fi2 = fptosi double %fl2 to i64\n"
  "  %r0 = icmp slt i64 %i, %ci\n"
  "  %r1 = icmp sle i64 %i, %fi2\n"
  "  %r2 = icmp slt i64 %fi2, %i\n"
  "  %r3 = icmp sle i64 %ci, %i\n"
  "  %is0 = icmp eq i32 %op, 0\n"
  "  %is1 = icmp eq i32 %op, 1\n"
  "  %is2 = icmp eq i32 %op, 2\n"
  "  %s3 = select i1 %is2, i1 %r2, i1 %r3\n"
  "  %s2 = select i1 %is1, i1 %r1, i1 %s3\n"
  "  %s1 = select i1 %is0, i1 %r0, i1 %s2\n"
  "  %oz = zext i1 %s1 to i32\n"
  "  ret i32 %oz\n"
  "no:\n"
  "  ret i32 0\n"
  "}\n"
  "define internal i32 @kjit_rt_forlimit(double %lim, i64 %init, i64 %step, i64* %out) {\n"
  "entry:\n"
  "  %neg = icmp slt i64 %step, 0\n"
  "  %c = call double @__nv_ceil(double %lim)\n"
  "  %f = call double @__nv_floor(double %lim)\n"
  "  %fl = select i1 %neg, double %c, double %f\n"
  "  %lo = fcmp oge double %fl, 0xC3E0000000000000\n"
  "  %hi = fcmp olt double %fl, 0x43E0000000000000\n"
  "  %inr = and i1 %lo, %hi\n"
  "  br i1 %inr, label %fits, label %outside\n"
  "fits:\n"
  "  %v = fptosi double %fl to i64\n"
  "  store i64 %v, i64* %out\n"
  "  br label %cmp\n"
  "outside:\n"
  "  %pos = fcmp ogt double %lim, 0.0\n"
  "  br i1 %pos, label %above, label %below\n"
  "above:\n"
  "  br i1 %neg, label %skip, label %amax\n"
  "amax:\n"
  "  store i64 9223372036854775807, i64* %out\n"
  "  br label %cmp\n"
  "below:\n"
  "  %sp = icmp sgt i64 %step, 0\n"
  "  br i1 %sp, label %skip, label %amin\n"
  "amin:\n"
  "  store i64 -9223372036854775808, i64* %out\n"
  "  br label %cmp\n"
  "skip:\n"
  "  ret i32 1\n"
  "cmp:\n"
  "  %o = load i64, i64* %out\n"
  "  %sp2 = icmp sgt i64 %step, 0\n"
  "  %gt = icmp sgt i64 %init, %o\n"
  "  %lt = icmp slt i64 %init, %o\n"
  "  %r = select i1 %sp2, i1 %gt, i1 %lt\n"
  "  %z = zext i1 %r to i32\n"
  "  ret i32 %z\n"
  "}\n";

const KcgTarget kcg_target_nvptx = {
  .name = "nvptx",
  .math_name = math_name,
  .data_addrspace = 0,
  .special_reg = special_reg,
  .has_fneg = 0,
  .has_runtime = 0,
  .string_globals = 0,
  .stack_checks = 0,
  .poll = 0,
  .pure_calls = 0,
  .kernel = 1,
  .kernel_entry = 1,
  .const_addrspace = 4,       /* .const */
  .barrier = barrier,
  .fence = fence,
  .shared_array = shared_array,
  .atomic_fadd = atomic_fadd,
  .global_addrspace = 1,
  .zero_by_store = 1,
  .runtime_ir = runtime_ir,
  .version_novec = 0,          /* LLVM 7 NVVM: no llvm.loop hints */
  .fuse_tests = 1,             /* a branch per test cost mandelbrot 10% */
  .intrin = intrin,
  .print = print,
};
