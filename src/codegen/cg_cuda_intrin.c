/*
** cg_cuda_intrin.c: numba-cuda's intrinsics in kernels (the INTRIN rows of
** ir_builtins.h, typed by ir_type_cuda.c), for every target: the lane,
** warp and block operations through the target's intrin hook (NVVM
** intrinsics on the GPU, cudasim.c in the simulator), the bit operations
** and atomics as LLVM instructions.
**
** Values cross a shuffle or a match as 64 bits: an integer as it is, an
** f64 as its bits, an f32 as its 32 bits (is64 = 0: one 32-bit shuffle).
** Bit operations work on Lua's 64-bit integers: cuda.clz(1) is 63 and
** cuda.brev reverses 64 bits (numba-cuda counts in the width of the
** argument's type; cast with cuda.uint32 and shift to get 32-bit answers).
*/
#include "codegen/cg.h"
#include "ir/ir_builtins.h"
#include "common/karray.h"

static LLVMValueRef hook(CG *G, const KirInsn *v, int op, LLVMValueRef mask, LLVMValueRef x,
                         LLVMValueRef b, int is64) {
  if (G->target->intrin == NULL)
    cg_error(G, v, "%s can only be used in a kernel compiled by cuda.jit",
             kir_builtin_name(G->sp->types[v->args[0]->id].ref));
  if (mask == NULL) mask = cg_i32(G, -1);
  if (x == NULL) x = cg_i64(G, 0);
  if (b == NULL) b = cg_i32(G, 0);
  return G->target->intrin(G, op, mask, x, b, is64);
}

static LLVMValueRef i32_of(CG *G, CgVal x) { return LLVMBuildTrunc(G->B, x.v, G->i32, ""); }

/* A value's 64 bits (is64) or 32 (f32). */
static LLVMValueRef bits_of(CG *G, CgVal x, int *is64) {
  *is64 = x.t.kind != T_F32;
  if (x.t.kind == T_INT) return x.v;
  if (x.t.kind == T_F64) return LLVMBuildBitCast(G->B, x.v, G->i64, "");
  return LLVMBuildZExt(G->B, LLVMBuildBitCast(G->B, x.v, G->i32, ""), G->i64, "");
}

static CgVal from_bits(CG *G, Type t, LLVMValueRef r) {
  if (t.kind == T_F64) return cg_mk(TY(T_F64), LLVMBuildBitCast(G->B, r, G->f64, ""));
  if (t.kind == T_F32)
    return cg_mk(TY(T_F32), LLVMBuildBitCast(G->B, LLVMBuildTrunc(G->B, r, G->i32, ""), G->f32, ""));
  return cg_mk(TY(T_INT), r);
}

/* A predicate (a boolean, or a number: non-zero is true) as 0/1 in an i64. */
static LLVMValueRef pred_of(CG *G, CgVal x) {
  LLVMValueRef p;
  if (x.t.kind == T_BOOL) p = x.v;
  else if (x.t.kind == T_INT) p = LLVMBuildICmp(G->B, LLVMIntNE, x.v, cg_i64(G, 0), "");
  else p = LLVMBuildFCmp(G->B, LLVMRealUNE, x.v, LLVMConstReal(LLVMTypeOf(x.v), 0.0), "");
  return LLVMBuildZExt(G->B, p, G->i64, "");
}

static CgVal boolean(CG *G, LLVMValueRef r) {
  return cg_mk(TY(T_BOOL), LLVMBuildICmp(G->B, LLVMIntNE, r, cg_i64(G, 0), ""));
}

/* ---- Atomics ------------------------------------------------------------------ */

/* The value v stored into an element of dtype d. */
static LLVMValueRef elem_of(CG *G, const KirInsn *v, int d, CgVal x) {
  if (d == KJIT_F32) return x.t.kind == T_INT ? LLVMBuildSIToFP(G->B, x.v, G->f32, "") : cg_tofloat(G, x, T_F32);
  if (d == KJIT_F64) return cg_tofloat(G, x, T_F64);
  LLVMValueRef r = cg_to_int_checked(G, x, v->line, NULL, 0);
  LLVMTypeRef ty = cg_dtype_llty(G, d);
  return ty == G->i64 ? r : LLVMBuildTrunc(G->B, r, ty, "");
}

static CgVal elem_result(CG *G, int d, LLVMValueRef old) {
  switch (d) {
  case KJIT_I32: return cg_mk(TY(T_INT), LLVMBuildSExt(G->B, old, G->i64, ""));
  case KJIT_U32: return cg_mk(TY(T_INT), LLVMBuildZExt(G->B, old, G->i64, ""));
  case KJIT_F32: return cg_mk(TY(T_F32), old);
  case KJIT_F64: return cg_mk(TY(T_F64), old);
  default: return cg_mk(TY(T_INT), old);
  }
}

/* *p = f(old, x) by a compare-and-swap loop on the element's bits (ity);
** returns the old value (ety). */
static LLVMValueRef cas_loop(CG *G, int id, int d, LLVMValueRef p, LLVMValueRef x) {
  LLVMTypeRef ety = LLVMTypeOf(x);
  int isf = d == KJIT_F32 || d == KJIT_F64, uns = d == KJIT_U32 || d == KJIT_U64;
  LLVMTypeRef ity = LLVMGetTypeKind(ety) == LLVMFloatTypeKind ? G->i32
                  : LLVMGetTypeKind(ety) == LLVMDoubleTypeKind ? G->i64 : ety;
  LLVMValueRef ip = LLVMBuildBitCast(G->B, p, LLVMPointerType(ity, LLVMGetPointerAddressSpace(LLVMTypeOf(p))), "");
  LLVMValueRef old0 = LLVMBuildLoad2(G->B, ity, ip, "");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(G->B);
  LLVMBasicBlockRef loop = cg_bb(G, "atomloop"), done = cg_bb(G, "atomdone");
  LLVMBuildBr(G->B, loop);
  LLVMPositionBuilderAtEnd(G->B, loop);
  LLVMValueRef oldb = LLVMBuildPhi(G->B, ity, "");
  LLVMValueRef old = isf ? LLVMBuildBitCast(G->B, oldb, ety, "") : oldb;
  LLVMValueRef nv;
  switch (id) {
  case B_CUDA_ATOMIC_INC: {   /* old >= x ? 0 : old + 1 (unsigned) */
    LLVMValueRef ge = LLVMBuildICmp(G->B, LLVMIntUGE, old, x, "");
    nv = LLVMBuildSelect(G->B, ge, LLVMConstInt(ety, 0, 0), LLVMBuildAdd(G->B, old, LLVMConstInt(ety, 1, 0), ""), "");
    break;
  }
  case B_CUDA_ATOMIC_DEC: {   /* old == 0 or old > x ? x : old - 1 (unsigned) */
    LLVMValueRef z = LLVMBuildICmp(G->B, LLVMIntEQ, old, LLVMConstInt(ety, 0, 0), "");
    LLVMValueRef gt = LLVMBuildICmp(G->B, LLVMIntUGT, old, x, "");
    nv = LLVMBuildSelect(G->B, LLVMBuildOr(G->B, z, gt, ""), x, LLVMBuildSub(G->B, old, LLVMConstInt(ety, 1, 0), ""), "");
    break;
  }
  default: {   /* nanmax, nanmin: a NaN is a missing value */
    int max = id == B_CUDA_ATOMIC_NANMAX;
    if (!isf) {
      LLVMIntPredicate pr = max ? (uns ? LLVMIntUGT : LLVMIntSGT) : (uns ? LLVMIntULT : LLVMIntSLT);
      nv = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, pr, x, old, ""), x, old, "");
    } else {
      LLVMValueRef better = LLVMBuildFCmp(G->B, max ? LLVMRealOGT : LLVMRealOLT, x, old, "");
      LLVMValueRef oldnan = LLVMBuildFCmp(G->B, LLVMRealUNO, old, old, "");
      nv = LLVMBuildSelect(G->B, LLVMBuildOr(G->B, better, oldnan, ""), x, old, "");
    }
    break;
  }
  }
  LLVMValueRef nb = isf ? LLVMBuildBitCast(G->B, nv, ity, "") : nv;
  LLVMValueRef pair = LLVMBuildAtomicCmpXchg(G->B, ip, oldb, nb, LLVMAtomicOrderingMonotonic,
                                             LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef seen = LLVMBuildExtractValue(G->B, pair, 0, "");
  LLVMValueRef ok = LLVMBuildICmp(G->B, LLVMIntEQ, seen, oldb, "");
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  LLVMValueRef inc[2] = { old0, seen };
  LLVMBasicBlockRef from[2] = { pre, here };
  LLVMAddIncoming(oldb, inc, from, 2);
  LLVMBuildCondBr(G->B, ok, done, loop);
  LLVMPositionBuilderAtEnd(G->B, done);
  return old;
}

static CgVal atomic(CG *G, const KirInsn *v, int id, CgVal *a) {
  int d = a[0].t.dtype;
  if (id == B_CUDA_ATOMIC_COMPARE_AND_SWAP) {   /* (array, old, new) on its first element */
    LLVMValueRef p = cg_elem_ptr(G, v, a[0], cg_mk(TY(T_INT), cg_i64(G, 1)));
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(G->B, p, elem_of(G, v, d, a[1]), elem_of(G, v, d, a[2]),
                                               LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
    return elem_result(G, d, LLVMBuildExtractValue(G->B, pair, 0, ""));
  }
  LLVMValueRef p = cg_elem_ptr(G, v, a[0], a[1]);
  LLVMValueRef x = elem_of(G, v, d, a[2]);
  LLVMAtomicRMWBinOp op;
  switch (id) {
  case B_CUDA_ATOMIC_AND: op = LLVMAtomicRMWBinOpAnd; break;
  case B_CUDA_ATOMIC_OR: op = LLVMAtomicRMWBinOpOr; break;
  case B_CUDA_ATOMIC_XOR: op = LLVMAtomicRMWBinOpXor; break;
  default: return elem_result(G, d, cas_loop(G, id, d, p, x));
  }
  return elem_result(G, d, LLVMBuildAtomicRMW(G->B, op, p, x, LLVMAtomicOrderingMonotonic, 0));
}

/* ---- The rest ------------------------------------------------------------------ */

/* A special register (0 threadIdx, 1 blockIdx, 2 blockDim, 3 gridDim), an i64. */
static LLVMValueRef sreg(CG *G, const KirInsn *v, int group, int axis) {
  if (G->target->special_reg == NULL)
    cg_error(G, v, "cuda.cg can only be used in a kernel compiled by cuda.jit");
  return G->target->special_reg(G->M, G->B, group, axis);
}

/* g:thread_rank(): the thread's 0-based rank in the grid, as CUDA's
** grid_group::thread_rank() (blocks in x-fastest order, then the threads
** of the block, x fastest); g:size(): the grid's thread count. */
static CgVal grid_rank(CG *G, const KirInsn *v, int id) {
  LLVMValueRef bx = sreg(G, v, 2, 0), by = sreg(G, v, 2, 1), bz = sreg(G, v, 2, 2);
  LLVMValueRef gx = sreg(G, v, 3, 0), gy = sreg(G, v, 3, 1), gz = sreg(G, v, 3, 2);
  LLVMValueRef nblock = LLVMBuildMul(G->B, LLVMBuildMul(G->B, bx, by, ""), bz, "");
  if (id == B_CUDA_CG_SIZE)
    return cg_mk(TY(T_INT), LLVMBuildMul(G->B, nblock,
                                         LLVMBuildMul(G->B, LLVMBuildMul(G->B, gx, gy, ""), gz, ""), ""));
  LLVMValueRef blk = LLVMBuildAdd(G->B, LLVMBuildMul(G->B, LLVMBuildAdd(G->B,
                       LLVMBuildMul(G->B, sreg(G, v, 1, 2), gy, ""), sreg(G, v, 1, 1), ""), gx, ""),
                       sreg(G, v, 1, 0), "");
  LLVMValueRef tid = LLVMBuildAdd(G->B, LLVMBuildMul(G->B, LLVMBuildAdd(G->B,
                       LLVMBuildMul(G->B, sreg(G, v, 0, 2), by, ""), sreg(G, v, 0, 1), ""), bx, ""),
                       sreg(G, v, 0, 0), "");
  return cg_mk(TY(T_INT), LLVMBuildAdd(G->B, LLVMBuildMul(G->B, blk, nblock, ""), tid, ""));
}

CgVal cg_cuda_intrin(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  for (int i = 0; i < n; i++) a[i] = cg_unwrap(G, a[i], v->line, v, i + 1);
  int is64 = 1;
  LLVMValueRef r;
  switch (id) {
  case B_CUDA_LANEID: return cg_mk(TY(T_INT), hook(G, v, KI_LANEID, NULL, NULL, NULL, 1));
  case B_CUDA_LANEMASK_LT: return cg_mk(TY(T_INT), hook(G, v, KI_LANEMASK_LT, NULL, NULL, NULL, 1));
  case B_CUDA_ACTIVEMASK:
    G->uses_sync |= KI_USES_WAIT;   /* the simulator: the warp's lanes meet (fibers) */
    return cg_mk(TY(T_INT), hook(G, v, KI_ACTIVEMASK, NULL, NULL, NULL, 1));
  case B_CUDA_SYNCWARP:
    G->uses_sync |= KI_USES_WAIT;
    hook(G, v, KI_SYNCWARP, n >= 1 ? i32_of(G, a[0]) : NULL, NULL, NULL, 1);
    return cg_mk(TY(T_NIL), NULL);
  case B_CUDA_SHFL_SYNC: case B_CUDA_SHFL_UP_SYNC: case B_CUDA_SHFL_DOWN_SYNC:
  case B_CUDA_SHFL_XOR_SYNC: {
    G->uses_sync |= KI_USES_WAIT;
    LLVMValueRef x = bits_of(G, a[1], &is64);
    r = hook(G, v, KI_SHFL_IDX + (id - B_CUDA_SHFL_SYNC), i32_of(G, a[0]), x, i32_of(G, a[2]), is64);
    return from_bits(G, a[1].t, r);
  }
  case B_CUDA_ALL_SYNC: case B_CUDA_ANY_SYNC: case B_CUDA_EQ_SYNC: case B_CUDA_BALLOT_SYNC:
    G->uses_sync |= KI_USES_WAIT;
    r = hook(G, v, KI_VOTE_ALL + (id - B_CUDA_ALL_SYNC), i32_of(G, a[0]), pred_of(G, a[1]), NULL, 1);
    return id == B_CUDA_BALLOT_SYNC ? cg_mk(TY(T_INT), r) : boolean(G, r);
  case B_CUDA_MATCH_ANY_SYNC: case B_CUDA_MATCH_ALL_SYNC: {
    G->uses_sync |= KI_USES_WAIT;
    LLVMValueRef x = bits_of(G, a[1], &is64);
    r = hook(G, v, id == B_CUDA_MATCH_ANY_SYNC ? KI_MATCH_ANY : KI_MATCH_ALL, i32_of(G, a[0]), x, NULL, is64);
    if (id == B_CUDA_MATCH_ANY_SYNC) return cg_mk(TY(T_INT), r);
    CgVal *res = ka_alloc(G->S->A, sizeof(CgVal) * 2);
    if (res == NULL) cg_error(G, v, "not enough memory");
    res[0] = cg_mk(TY(T_INT), r);   /* the mask, 0 unless every value is the same */
    res[1] = boolean(G, r);
    G->results[v->id] = res;
    G->nresults[v->id] = 2;
    return res[0];
  }
  case B_CUDA_SYNCTHREADS_COUNT: case B_CUDA_SYNCTHREADS_AND: case B_CUDA_SYNCTHREADS_OR:
    G->uses_sync |= KI_USES_WAIT;
    r = hook(G, v, KI_BAR_POPC + (id - B_CUDA_SYNCTHREADS_COUNT), NULL, pred_of(G, a[0]), NULL, 1);
    return id == B_CUDA_SYNCTHREADS_COUNT ? cg_mk(TY(T_INT), r) : boolean(G, r);
  case B_CUDA_THREADFENCE_BLOCK: case B_CUDA_THREADFENCE_SYSTEM:
    hook(G, v, id == B_CUDA_THREADFENCE_BLOCK ? KI_FENCE_BLOCK : KI_FENCE_SYSTEM, NULL, NULL, NULL, 1);
    return cg_mk(TY(T_NIL), NULL);
  case B_CUDA_NANOSLEEP:
    hook(G, v, KI_NANOSLEEP, NULL, a[0].v, NULL, 1);
    return cg_mk(TY(T_NIL), NULL);
  case B_CUDA_CG_THIS_GRID: return cg_mk(G->sp->types[v->id], NULL);   /* no run-time content */
  case B_CUDA_CG_SYNC:
    /* launched cooperatively (kernel.c); in the simulator every block runs at once */
    G->uses_sync |= KI_USES_WAIT | KI_USES_GRID;
    hook(G, v, KI_GRID_SYNC, NULL, NULL, NULL, 1);
    return cg_mk(TY(T_NIL), NULL);
  case B_CUDA_CG_THREAD_RANK: case B_CUDA_CG_SIZE: return grid_rank(G, v, id);
  case B_CUDA_POPC: return cg_mk(TY(T_INT), cg_intrinsic(G, "llvm.ctpop", G->i64, &a[0].v, 1));
  case B_CUDA_BREV: return cg_mk(TY(T_INT), cg_intrinsic(G, "llvm.bitreverse", G->i64, &a[0].v, 1));
  case B_CUDA_CLZ: case B_CUDA_FFS: {
    LLVMValueRef av[2] = { a[0].v, cg_i1(G, 0) };   /* defined at 0: 64 */
    if (id == B_CUDA_CLZ) return cg_mk(TY(T_INT), cg_intrinsic(G, "llvm.ctlz", G->i64, av, 2));
    LLVMValueRef tz = cg_intrinsic(G, "llvm.cttz", G->i64, av, 2);
    LLVMValueRef z = LLVMBuildICmp(G->B, LLVMIntEQ, a[0].v, cg_i64(G, 0), "");
    return cg_mk(TY(T_INT), LLVMBuildSelect(G->B, z, cg_i64(G, 0), LLVMBuildAdd(G->B, tz, cg_i64(G, 1), ""), ""));
  }
  case B_CUDA_SELP: {
    Type rt = G->sp->types[v->id];
    LLVMValueRef c = LLVMBuildICmp(G->B, LLVMIntNE, pred_of(G, a[0]), cg_i64(G, 0), "");
    LLVMValueRef x = rt.kind == T_INT ? a[1].v : cg_num_to(G, a[1], rt.kind);
    LLVMValueRef y = rt.kind == T_INT ? a[2].v : cg_num_to(G, a[2], rt.kind);
    return cg_mk(TY(rt.kind), LLVMBuildSelect(G->B, c, x, y, ""));
  }
  default:
    if (id >= B_CUDA_ATOMIC_AND && id <= B_CUDA_ATOMIC_COMPARE_AND_SWAP) return atomic(G, v, id, a);
    cg_error(G, v, "'%s' is not supported in compiled code", kir_builtin_name(id));
  }
}
