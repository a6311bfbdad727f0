/*
** cg_frozen.c: P[k] of a frozen table P (an upvalue or global read when
** the function compiled) with a computed integer key: its numbers become a
** constant array in the module, and the read is a load, nil outside
** 1..#P (the typer's number-or-nil: ir_type.c's t_frozen_index). The
** table's contents enter the disk cache's key (host/cache_key.c).
**
** A kernel's constant array (ir_type.h's KTY_BUF_CONST: a kjit array read
** from an upvalue or global, or cuda.const.array_like of one): its bytes
** become a constant global in the target's constant address space (the
** GPU's 64 KiB of .const memory), one per array and module, and the value
** is an array over it with constant extents. The bytes are in the LLVM
** module, so they key the PTX disk cache too. A CPU function's frozen
** array (KTY_BUF_FROZEN, refuse2): its memory, used in place (below).
*/
#include <stdio.h>
#include <string.h>
#include "codegen/cg.h"
#include "common/karray.h"
#include "runtime/luaarray.h"

CgVal cg_frozen_index(CG *G, const KirInsn *v) {
  Type t = G->sp->types[v->id], o = G->sp->types[v->args[0]->id];
  int64_t n, *vals;
  uint8_t *isf;
  const char *why;
  if (!kty_frozen_array(G->S, o.ref, &n, &vals, &isf, &why))
    cg_error(G, v, "internal error: the frozen table changed (%s)", why);
  int flt = t.sub == T_F64;
  LLVMTypeRef ety = flt ? G->f64 : G->i64;
  int64_t m = n > 0 ? n : 1;   /* a dummy element for the empty table */
  LLVMValueRef *ev = ka_alloc(G->S->A, sizeof *ev * (size_t)m);
  LLVMValueRef *fv = ka_alloc(G->S->A, sizeof *fv * (size_t)m);
  if (ev == NULL || fv == NULL) cg_error(G, v, "not enough memory");
  for (int64_t i = 0; i < m; i++) {
    int64_t w = i < n ? vals[i] : 0;
    if (flt) { double d; memcpy(&d, &w, sizeof d); ev[i] = LLVMConstReal(G->f64, d); }
    else ev[i] = cg_i64(G, w);
    fv[i] = LLVMConstInt(G->i8, i < n ? isf[i] : 0, 0);
  }
  LLVMTypeRef aty = LLVMArrayType(ety, (unsigned)m);
  LLVMValueRef arr = LLVMAddGlobal(G->M, aty, "kcg.frozen");
  LLVMSetInitializer(arr, LLVMConstArray(ety, ev, (unsigned)m));
  LLVMSetGlobalConstant(arr, 1);
  LLVMSetLinkage(arr, LLVMPrivateLinkage);
  CgVal k = cg_val(G, v->args[1]);
  LLVMValueRef km1 = LLVMBuildSub(G->B, k.v, cg_i64(G, 1), "");
  LLVMValueRef in = LLVMBuildICmp(G->B, LLVMIntULT, km1, cg_i64(G, n), "");
  LLVMValueRef idx[2] = { cg_i64(G, 0), LLVMBuildSelect(G->B, in, km1, cg_i64(G, 0), "") };
  CgVal r = cg_mk(t, LLVMBuildLoad2(G->B, ety, LLVMBuildGEP2(G->B, aty, arr, idx, 2, ""), ""));
  r.flag = in;
  if (t.sub == T_NUMBER) {
    LLVMTypeRef fty = LLVMArrayType(G->i8, (unsigned)m);
    LLVMValueRef farr = LLVMAddGlobal(G->M, fty, "kcg.frozenf");
    LLVMSetInitializer(farr, LLVMConstArray(G->i8, fv, (unsigned)m));
    LLVMSetGlobalConstant(farr, 1);
    LLVMSetLinkage(farr, LLVMPrivateLinkage);
    LLVMValueRef f = LLVMBuildLoad2(G->B, G->i8, LLVMBuildGEP2(G->B, fty, farr, idx, 2, ""), "");
    r.isf = LLVMBuildICmp(G->B, LLVMIntNE, f, LLVMConstInt(G->i8, 0, 0), "");
  }
  return r;
}

/* A CPU function's frozen array (KTY_BUF_FROZEN): the same userdata on
** every call, pinned for the process (runtime/luaarray.c kjit_la_pin: a
** full userdata never moves, and an array's memory and extents never
** change), so its element pointer and extents are constants here; the
** code is bound to this process (host/cache_key.c). */
static CgVal frozen_host_array(CG *G, const KirInsn *v, Type t, const KtyConst *k) {
  KBuffer *b = kty_push_host_array(G->S, k->ref);
  if (b == NULL || (int)b->dtype != t.dtype || b->ndim != t.ndim)
    cg_error(G, v, "internal error: a frozen array changed");
  kjit_la_pin(G->S->L, -1);
  lua_pop(G->S->L, 1);
  LLVMTypeRef pty = LLVMPointerType(cg_dtype_llty(G, t.dtype), 0);
  CgVal r = cg_mk(t, LLVMConstIntToPtr(cg_i64(G, (int64_t)(intptr_t)b->data), pty));
  for (int d = 0; d < t.ndim; d++) r.dims[d] = cg_i64(G, b->shape[d]);
  return r;
}

CgVal cg_const_array(CG *G, const KirInsn *v) {
  Type t = G->sp->types[v->id];
  const KtyConst *k = &G->sp->consts[v->id];
  if (t.sub == KTY_BUF_FROZEN) return frozen_host_array(G, v, t, k);
  const char *data;
  size_t bytes;
  int dtype, ndim;
  int64_t shape[4];
  if (!kty_const_array(G->S, k->ref, &data, &bytes, &dtype, &ndim, shape) || dtype != t.dtype ||
      ndim != t.ndim)
    cg_error(G, v, "internal error: a kernel's constant array changed");
  char name[48];
  snprintf(name, sizeof name, "kjit_const_%d", k->ref);
  unsigned as = G->target->const_addrspace;
  LLVMValueRef g = LLVMGetNamedGlobal(G->M, name);
  size_t n = bytes > 0 ? bytes : 1;
  LLVMTypeRef aty = LLVMArrayType(G->i8, (unsigned)n);
  if (g == NULL) {
    G->const_bytes += (int64_t)n;
    if (G->const_bytes > 65536)
      cg_error(G, v, "the kernel's constant arrays total %lld bytes, above the GPU's 64 KiB of "
               "constant memory: pass some as arguments", (long long)G->const_bytes);
    g = LLVMAddGlobalInAddressSpace(G->M, aty, name, as);
    char zero = 0;
    LLVMSetInitializer(g, LLVMConstStringInContext(G->C, bytes > 0 ? data : &zero, (unsigned)n, 1));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 16);
  }
  LLVMTypeRef ety = cg_dtype_llty(G, dtype);
  LLVMValueRef p = LLVMBuildBitCast(G->B, g, LLVMPointerType(ety, as), "");
  if (as != G->target->data_addrspace)
    p = LLVMBuildAddrSpaceCast(G->B, p, LLVMPointerType(ety, G->target->data_addrspace), "");
  CgVal r = cg_mk(t, p);
  for (int d = 0; d < ndim; d++) r.dims[d] = cg_i64(G, shape[d]);
  return r;
}
