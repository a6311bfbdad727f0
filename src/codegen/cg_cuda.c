/*
** cg_cuda.c: the kjit.cuda built-ins inside cuda.jit kernels, for every
** target through its hooks (target.h): cuda.grid(n) and cuda.gridsize(n)
** (n integer results), cuda.threadIdx.x ... (special registers),
** syncthreads, threadfence, shared.array, local_array and the atomics.
** Which target runs them is never asked here.
*/
#include <string.h>
#include "codegen/cg.h"
#include "ir/ir_builtins.h"
#include "common/karray.h"
#include "common/cuda_extern.h"
#include "ir/ir_type.h"

/* A special register (0 threadIdx, 1 blockIdx, 2 blockDim, 3 gridDim). */
static LLVMValueRef sreg(CG *G, const KirInsn *v, int group, int axis) {
  if (G->target->special_reg == NULL)
    cg_error(G, v, "the kjit.cuda built-ins can only be used in a kernel compiled by cuda.jit");
  return G->target->special_reg(G->M, G->B, group, axis);
}

CgVal cg_cuda_dim3(CG *G, const KirInsn *v, int id) {
  const char *f = v->k.str.s;
  int axis = strcmp(f, "x") == 0 ? 0 : strcmp(f, "y") == 0 ? 1 : strcmp(f, "z") == 0 ? 2 : -1;
  if (axis < 0) cg_error(G, v, "internal error: field '%s' of a dim3", f);
  return cg_mk(TY(T_INT), sreg(G, v, id - B_CUDA_THREADIDX, axis));
}

/* cuda.grid(n): blockIdx * blockDim + threadIdx + 1 per axis (1-based, as
** kjit arrays); cuda.gridsize(n): blockDim * gridDim. n results. */
static CgVal grid(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  if (n < 1 || a[0].v == NULL || !LLVMIsAConstantInt(a[0].v))
    cg_error(G, v, "internal error: cuda.grid without a constant dimension count");
  int nd = (int)LLVMConstIntGetSExtValue(a[0].v);
  if (nd < 1 || nd > 3) cg_error(G, v, "internal error: cuda.grid(%d)", nd);
  CgVal *r = ka_alloc(G->S->A, sizeof(CgVal) * 3);
  if (r == NULL) cg_error(G, v, "not enough memory");
  for (int axis = 0; axis < nd; axis++) {
    LLVMValueRef x;
    if (id == B_CUDA_GRID) {
      LLVMValueRef tid = sreg(G, v, 0, axis), ctaid = sreg(G, v, 1, axis), ntid = sreg(G, v, 2, axis);
      x = LLVMBuildAdd(G->B, LLVMBuildAdd(G->B, LLVMBuildMul(G->B, ctaid, ntid, ""), tid, ""),
                       cg_i64(G, 1), "");
    } else {
      x = LLVMBuildMul(G->B, sreg(G, v, 2, axis), sreg(G, v, 3, axis), "");
    }
    r[axis] = cg_mk(TY(T_INT), x);
  }
  G->results[v->id] = r;
  G->nresults[v->id] = nd;
  return r[0];
}

/* cuda.shared.array(n, dtype) and cuda.local_array(n, dtype): a 1-D array
** over per-block shared memory or per-thread memory. */
static CgVal array_alloc(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  Type rt = G->sp->types[v->id];
  long long cnt = 1;
  LLVMValueRef ext[KJIT_MAXDIMS];
  if (rt.kind == T_BUF && n >= 1 && a[0].t.kind == T_SHAPE) {
    /* {n, m, ...}: constant extents (the typer), an n-D array, C order */
    for (int k = 0; k < rt.ndim; k++) {
      ext[k] = a[0].dims[k];
      if (ext[k] == NULL || !LLVMIsAConstantInt(ext[k]))
        cg_error(G, v, "internal error: an array shape without constant extents");
      cnt *= LLVMConstIntGetSExtValue(ext[k]);
    }
  } else {
    if (rt.kind != T_BUF || n < 1 || a[0].v == NULL || !LLVMIsAConstantInt(a[0].v))
      cg_error(G, v, "internal error: an array allocation without a constant size");
    cnt = LLVMConstIntGetSExtValue(a[0].v);
    ext[0] = cg_i64(G, cnt);
  }
  LLVMTypeRef ety = cg_dtype_llty(G, rt.dtype);
  long long esize = (long long)kjit_dtype_size((kjit_dtype)rt.dtype);
  CgVal r = cg_mk(rt, NULL);
  LLVMTypeRef ep = LLVMPointerType(ety, 0);
  if (id == B_CUDA_LOCAL_ARRAY) {
    if (cnt < 1) cg_error(G, v, "internal error: an empty local array");
    /* zeroed, so a kernel reads what the interpreted one reads */
    LLVMTypeRef aty = LLVMArrayType(ety, (unsigned)cnt);
    LLVMValueRef arr = cg_alloca(G, aty, "local");
    if (G->target->zero_by_store)
      LLVMBuildStore(G->B, LLVMConstNull(aty), arr);
    else
      LLVMBuildMemSet(G->B, LLVMBuildBitCast(G->B, arr, G->i8p, ""), LLVMConstInt(G->i8, 0, 0),
                      cg_i64(G, cnt * esize), 16);
    r.v = LLVMBuildBitCast(G->B, arr, ep, "");
    for (int k = 0; k < rt.ndim; k++) r.dims[k] = ext[k];
    return r;
  }
  if (G->target->shared_array == NULL)
    cg_error(G, v, "cuda.shared.array can only be used in a kernel compiled by cuda.jit");
  LLVMValueRef len = NULL;
  long long site = ((long long)G->sp->index << 24) | v->id;
  r.v = G->target->shared_array(G, ety, cnt > 0 ? cnt : 0, esize, site, &len);
  if (cnt > 0) for (int k = 0; k < rt.ndim; k++) r.dims[k] = ext[k];
  else r.dims[0] = len;
  return r;
}

/* A value stored into an element of dtype d (as an array store). */
static LLVMValueRef elem_value(CG *G, const KirInsn *v, int d, CgVal x) {
  if (d == KJIT_F32)
    return x.t.kind == T_INT ? LLVMBuildSIToFP(G->B, x.v, G->f32, "") : cg_tofloat(G, x, T_F32);
  if (d == KJIT_F64) return cg_tofloat(G, x, T_F64);
  LLVMValueRef r = cg_to_int_checked(G, x, v->line, NULL, 0);
  LLVMTypeRef ty = cg_dtype_llty(G, d);
  return ty == G->i64 ? r : LLVMBuildTrunc(G->B, r, ty, "");
}

static LLVMValueRef cas(CG *G, LLVMValueRef p, LLVMValueRef cmp, LLVMValueRef nv) {
  LLVMValueRef pair = LLVMBuildAtomicCmpXchg(G->B, p, cmp, nv, LLVMAtomicOrderingMonotonic,
                                             LLVMAtomicOrderingMonotonic, 0);
  return LLVMBuildExtractValue(G->B, pair, 0, "");
}

/* A compare-and-swap loop computing *p = max/min(*p, v) for floats. */
static LLVMValueRef float_minmax(CG *G, LLVMValueRef p, LLVMValueRef v, int ismax) {
  LLVMTypeRef fty = LLVMTypeOf(v);
  LLVMTypeRef ity = fty == G->f32 ? G->i32 : G->i64;
  LLVMValueRef ip = LLVMBuildBitCast(G->B, p, LLVMPointerType(ity, 0), "");
  LLVMValueRef old0 = LLVMBuildLoad2(G->B, ity, ip, "");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(G->B);
  LLVMBasicBlockRef loop = cg_bb(G, "casloop"), done = cg_bb(G, "casdone");
  LLVMBuildBr(G->B, loop);
  LLVMPositionBuilderAtEnd(G->B, loop);
  LLVMValueRef old = LLVMBuildPhi(G->B, ity, "");
  LLVMValueRef oldf = LLVMBuildBitCast(G->B, old, fty, "");
  LLVMValueRef better = ismax ? LLVMBuildFCmp(G->B, LLVMRealOGT, v, oldf, "")
                              : LLVMBuildFCmp(G->B, LLVMRealOLT, v, oldf, "");
  LLVMValueRef nf = LLVMBuildSelect(G->B, better, v, oldf, "");
  LLVMValueRef seen = cas(G, ip, old, LLVMBuildBitCast(G->B, nf, ity, ""));
  LLVMValueRef ok = LLVMBuildICmp(G->B, LLVMIntEQ, seen, old, "");
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  LLVMValueRef inc[2] = { old0, seen };
  LLVMBasicBlockRef from[2] = { pre, here };
  LLVMAddIncoming(old, inc, from, 2);
  LLVMBuildCondBr(G->B, ok, done, loop);
  LLVMPositionBuilderAtEnd(G->B, done);
  return oldf;
}

/* cuda.atomic.*(arr, i, v [, new]): the element's old value. */
static CgVal atomic(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  if (n < 3 || (id == B_CUDA_ATOMIC_CAS && n < 4) || a[0].t.kind != T_BUF || a[0].t.ndim != 1)
    cg_error(G, v, "internal error: atomic operands");
  for (int i = 1; i < n; i++) a[i] = cg_unwrap(G, a[i], v->line, v, i + 1);
  int d = a[0].t.dtype;
  LLVMValueRef p = cg_elem_ptr(G, v, a[0], a[1]);
  int isf = d == KJIT_F32 || d == KJIT_F64, uns = d == KJIT_U32 || d == KJIT_U64;
  LLVMValueRef x = elem_value(G, v, d, a[2]);
  LLVMValueRef old;
  LLVMAtomicOrdering mo = LLVMAtomicOrderingMonotonic;
  if (!isf) {
    LLVMAtomicRMWBinOp op;
    switch (id) {
    case B_CUDA_ATOMIC_ADD: op = LLVMAtomicRMWBinOpAdd; break;
    case B_CUDA_ATOMIC_SUB: op = LLVMAtomicRMWBinOpSub; break;
    case B_CUDA_ATOMIC_MAX: op = uns ? LLVMAtomicRMWBinOpUMax : LLVMAtomicRMWBinOpMax; break;
    case B_CUDA_ATOMIC_MIN: op = uns ? LLVMAtomicRMWBinOpUMin : LLVMAtomicRMWBinOpMin; break;
    case B_CUDA_ATOMIC_EXCH: op = LLVMAtomicRMWBinOpXchg; break;
    default: op = LLVMAtomicRMWBinOpXchg; break;
    }
    if (id == B_CUDA_ATOMIC_CAS) old = cas(G, p, x, elem_value(G, v, d, a[3]));
    else old = LLVMBuildAtomicRMW(G->B, op, p, x, mo, 0);
  } else {
    LLVMTypeRef fty = LLVMTypeOf(x);
    switch (id) {
    case B_CUDA_ATOMIC_ADD: case B_CUDA_ATOMIC_SUB:
      if (id == B_CUDA_ATOMIC_SUB) x = LLVMBuildFSub(G->B, LLVMConstReal(fty, -0.0), x, "");
      old = G->target->atomic_fadd ? G->target->atomic_fadd(G, p, x)
                                   : LLVMBuildAtomicRMW(G->B, LLVMAtomicRMWBinOpFAdd, p, x, mo, 0);
      break;
    case B_CUDA_ATOMIC_MAX: case B_CUDA_ATOMIC_MIN:
      old = float_minmax(G, p, x, id == B_CUDA_ATOMIC_MAX);
      break;
    case B_CUDA_ATOMIC_CAS: {
      LLVMTypeRef ity = fty == G->f32 ? G->i32 : G->i64;
      LLVMValueRef ip = LLVMBuildBitCast(G->B, p, LLVMPointerType(ity, 0), "");
      LLVMValueRef nv = elem_value(G, v, d, a[3]);
      old = cas(G, ip, LLVMBuildBitCast(G->B, x, ity, ""), LLVMBuildBitCast(G->B, nv, ity, ""));
      old = LLVMBuildBitCast(G->B, old, fty, "");
      break;
    }
    default: {   /* exch */
      LLVMTypeRef ity = fty == G->f32 ? G->i32 : G->i64;
      LLVMValueRef ip = LLVMBuildBitCast(G->B, p, LLVMPointerType(ity, 0), "");
      old = LLVMBuildAtomicRMW(G->B, LLVMAtomicRMWBinOpXchg, ip, LLVMBuildBitCast(G->B, x, ity, ""), mo, 0);
      old = LLVMBuildBitCast(G->B, old, fty, "");
      break;
    }
    }
  }
  switch (d) {
  case KJIT_I8: case KJIT_I16: case KJIT_I32: return cg_mk(TY(T_INT), LLVMBuildSExt(G->B, old, G->i64, ""));
  case KJIT_U8: case KJIT_U16: case KJIT_U32: return cg_mk(TY(T_INT), LLVMBuildZExt(G->B, old, G->i64, ""));
  case KJIT_F32: return cg_mk(TY(T_F32), old);
  case KJIT_F64: return cg_mk(TY(T_F64), old);
  default: return cg_mk(TY(T_INT), old);
  }
}

CgVal cg_cuda(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  switch (id) {
  case B_CUDA_GRID: case B_CUDA_GRIDSIZE: return grid(G, v, id, a, n);
  case B_CUDA_SYNCTHREADS:
    if (G->target->barrier == NULL)
      cg_error(G, v, "cuda.syncthreads can only be used in a kernel compiled by cuda.jit");
    G->uses_sync |= KI_USES_WAIT;
    G->target->barrier(G);
    return cg_mk(TY(T_NIL), NULL);
  case B_CUDA_THREADFENCE:
    if (G->target->fence) G->target->fence(G);
    else LLVMBuildFence(G->B, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
    return cg_mk(TY(T_NIL), NULL);
  case B_CUDA_SHARED_ARRAY: case B_CUDA_LOCAL_ARRAY: return array_alloc(G, v, id, a, n);
  case B_CUDA_ATOMIC_ADD: case B_CUDA_ATOMIC_SUB: case B_CUDA_ATOMIC_MAX:
  case B_CUDA_ATOMIC_MIN: case B_CUDA_ATOMIC_EXCH: case B_CUDA_ATOMIC_CAS:
    return atomic(G, v, id, a, n);
  default:
    if (B_IS_INTRIN(id)) return cg_cuda_intrin(G, v, id, a, n);   /* cg_cuda_intrin.c */
    cg_error(G, v, "'%s' is not supported in compiled code", kir_builtin_name(id));
  }
}

/* A call of an external device function (cuda.declare_device; typed by
** ir_type.c's t_call_extern) in numba-cuda's convention (cuda_extern.h):
**     %slot = alloca T;  %st = call i32 @name(T* %slot, args...);  load %slot
** The status is ignored, as numba does for foreign functions. The module
** keeps the declaration external: the kernel's PTX then has an .extern
** .func, resolved when the link files are linked (host/kernel.c). */
void cg_cuda_extern_call(CG *G, KirInsn *v) {
  const KExtern *e = kty_extern(G->S, G->sp->types[v->args[0]->id].ref);
  if (e == NULL) cg_error(G, v, "internal error: not an external device function");
  CgVal a[KJIT_MAXARGS];
  int n = cg_operands(G, v, 1, a, KJIT_MAXARGS);
  if (n != e->nargs) cg_error(G, v, "internal error: external call with %d arguments", n);
  LLVMTypeRef rty = e->ret < 0 ? G->i32 : cg_dtype_llty(G, e->ret);
  LLVMTypeRef ps[KJIT_MAXARGS + 1];
  LLVMValueRef xs[KJIT_MAXARGS + 1];
  ps[0] = LLVMPointerType(rty, 0);
  LLVMValueRef slot = cg_alloca(G, rty, "extret");
  xs[0] = slot;
  for (int i = 0; i < n; i++) {
    LLVMTypeRef ety = cg_dtype_llty(G, e->args[i]);
    if (e->ptr[i]) {   /* the address of the first element, generic */
      ps[i + 1] = LLVMPointerType(ety, 0);
      LLVMValueRef p = a[i].v;
      if (LLVMGetPointerAddressSpace(LLVMTypeOf(p)) != 0)
        p = LLVMBuildAddrSpaceCast(G->B, p, LLVMPointerType(LLVMGetElementType(LLVMTypeOf(p)), 0), "");
      xs[i + 1] = LLVMBuildBitCast(G->B, p, ps[i + 1], "");
      continue;
    }
    ps[i + 1] = ety;
    if (e->args[i] == KJIT_F32 || e->args[i] == KJIT_F64) {
      xs[i + 1] = cg_num_to(G, a[i], e->args[i] == KJIT_F32 ? T_F32 : T_F64);
    } else {   /* an integer (the typer): its low bits, as C converts */
      LLVMValueRef x = cg_num_to(G, a[i], T_INT);
      xs[i + 1] = ety == G->i64 ? x : LLVMBuildTrunc(G->B, x, ety, "");
    }
  }
  LLVMTypeRef fty = LLVMFunctionType(G->i32, ps, (unsigned)n + 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(G->M, e->name);
  if (f == NULL) f = LLVMAddFunction(G->M, e->name, fty);
  else if (LLVMGlobalGetValueType(f) != fty)
    cg_error(G, v, "external device function '%s' is declared twice with different signatures "
             "(%s here)", e->name, e->sig);
  LLVMBuildCall2(G->B, fty, f, xs, (unsigned)n + 1, "");
  if (e->ret < 0) { G->vals[v->id] = cg_mk(TY(T_NIL), NULL); return; }
  LLVMValueRef r = LLVMBuildLoad2(G->B, rty, slot, "");
  switch (e->ret) {
  case KJIT_F32: G->vals[v->id] = cg_mk(TY(T_F32), r); return;
  case KJIT_F64: G->vals[v->id] = cg_mk(TY(T_F64), r); return;
  case KJIT_U8: case KJIT_U16: case KJIT_U32:
    G->vals[v->id] = cg_mk(TY(T_INT), LLVMBuildZExt(G->B, r, G->i64, "")); return;
  case KJIT_I64: case KJIT_U64: G->vals[v->id] = cg_mk(TY(T_INT), r); return;
  default: G->vals[v->id] = cg_mk(TY(T_INT), LLVMBuildSExt(G->B, r, G->i64, "")); return;
  }
}
