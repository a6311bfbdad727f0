/*
** cg_func.c: the driver of the bytecode code generator. One LLVM function
** per specialization in use, one LLVM block per live KirBlock, KIR phis as
** LLVM phis (one per part of the value, see cg.h), terminators (branches,
** returns, numeric for loops), calls of Lua functions and their results.
**
** Phi operands are converted to the phi's type on their edge, at the end
** of the predecessor, just before its branch (an integer entering a
** T_NUMBER phi gets its tag there). Edges the typer found never run are
** not emitted; values of dead blocks are never emitted.
*/
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/cg.h"
#include "ir/ir_closure.h"
#include "codegen/kcg.h"
#include "ir/ir_facts.h"
#include "ir/ir_varinfo.h"

/* ---- Small helpers ---------------------------------------------------- */

LLVMValueRef cg_i64(CG *G, int64_t v) { return LLVMConstInt(G->i64, (unsigned long long)v, 1); }
LLVMValueRef cg_i32(CG *G, int32_t v) { return LLVMConstInt(G->i32, (unsigned long long)(int64_t)v, 1); }
LLVMValueRef cg_f64(CG *G, double v) { return LLVMConstReal(G->f64, v); }
LLVMValueRef cg_i1(CG *G, int v) { return LLVMConstInt(G->i1, v ? 1 : 0, 0); }

LLVMBasicBlockRef cg_bb(CG *G, const char *name) {
  return LLVMAppendBasicBlockInContext(G->C, G->fn, name);
}

LLVMValueRef cg_alloca(CG *G, LLVMTypeRef ty, const char *name) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(G->C);
  LLVMValueRef first = LLVMGetFirstInstruction(G->allocas);
  if (first) LLVMPositionBuilderBefore(b, first);
  else LLVMPositionBuilderAtEnd(b, G->allocas);
  LLVMValueRef a = LLVMBuildAlloca(b, ty, name);
  LLVMDisposeBuilder(b);
  return a;
}

LLVMValueRef cg_intrinsic(CG *G, const char *name, LLVMTypeRef ty, LLVMValueRef *args,
                          unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[1] = { ty };
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(G->M, id, tys, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(G->C, id, tys, 1);
  return LLVMBuildCall2(G->B, fty, fn, args, n, "");
}

LLVMValueRef cg_ccall(CG *G, const char *name, LLVMTypeRef ret, LLVMTypeRef *ptys,
                      LLVMValueRef *args, unsigned n) {
  LLVMTypeRef fty = LLVMFunctionType(ret, ptys, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(G->M, name);
  if (fn == NULL) fn = LLVMAddFunction(G->M, name, fty);
  LLVMValueRef r = LLVMBuildCall2(G->B, fty, fn, args, n, "");
  cg_lview_forget(G);   /* a helper may change any table (cg_luaview.c) */
  return r;
}

/* Math function `base` on ty: the target's routine when it names one,
** else the LLVM intrinsic when there is one, else the C library. */
static LLVMValueRef math_call(CG *G, const char *base, LLVMTypeRef ty, LLVMValueRef *args,
                              unsigned n) {
  char name[48];
  int f32 = ty == G->f32;
  LLVMTypeRef p[2] = { ty, ty };
  if (G->target->math_name && G->target->math_name(base, f32, name, sizeof name))
    return cg_ccall(G, name, ty, p, args, n);
  static const char *const intrinsics[] = { "sqrt", "sin", "cos", "exp", "log",
    "log2", "log10", "pow", "floor", "ceil", "fabs", NULL };
  for (int i = 0; intrinsics[i]; i++)
    if (strcmp(intrinsics[i], base) == 0) {
      snprintf(name, sizeof name, "llvm.%s", base);
      return cg_intrinsic(G, name, ty, args, n);
    }
  snprintf(name, sizeof name, "%s%s", base, f32 ? "f" : "");
  return cg_ccall(G, name, ty, p, args, n);
}

LLVMValueRef cg_math(CG *G, const char *base, LLVMTypeRef ty, LLVMValueRef *args, unsigned n) {
  G->lview_quiet++;   /* (math runs no Lua: the views stay, cg_luaview.c) */
  LLVMValueRef r = math_call(G, base, ty, args, n);
  G->lview_quiet--;
  return r;
}

LLVMTypeRef cg_dtype_llty(CG *G, int d) {
  switch (d) {
  case KJIT_I8: case KJIT_U8: case KJIT_BOOL: return G->i8;
  case KJIT_I16: case KJIT_U16: case KJIT_F16: return G->i16;   /* f16: its bits (cg_half_*) */
  case KJIT_I32: case KJIT_U32: return G->i32;
  case KJIT_I64: case KJIT_U64: return G->i64;
  case KJIT_F32: return G->f32;
  case KJIT_RECORD: return G->i8;   /* records: bytes, offsets from the layout */
  default: return G->f64;
  }
}

LLVMTypeRef cg_bufptr_ty(CG *G, Type t) {
  return LLVMPointerType(cg_dtype_llty(G, t.dtype), G->target->data_addrspace);
}

LLVMTypeRef cg_llty(CG *G, Type t) {
  switch (t.kind) {
  case T_INT: case T_NUMBER: return G->i64;
  case T_F64: return G->f64;
  case T_F32: return G->f32;
  case T_BOOL: return G->i1;
  case T_MAYBE: return cg_llty(G, TY(t.sub));
  default: return NULL;
  }
}

/* The run-time parts of a value of type t, in order (see cg.h). */
static int parts(CG *G, Type t, LLVMTypeRef *tys) {
  switch (t.kind) {
  case T_INT: case T_F64: case T_F32: case T_BOOL: tys[0] = cg_llty(G, t); return 1;
  case T_NUMBER: tys[0] = G->i64; tys[1] = G->i1; return 2;
  case T_MAYBE:
    tys[0] = cg_llty(G, t);
    if (t.sub == T_NUMBER) { tys[1] = G->i1; tys[2] = G->i1; return 3; }
    tys[1] = G->i1;
    return 2;
  case T_BUF:
    tys[0] = cg_bufptr_ty(G, t);
    for (int d = 0; d < t.ndim; d++) tys[1 + d] = G->i64;
    return 1 + t.ndim;
  case T_SHAPE:
    for (int d = 0; d < t.ndim; d++) tys[d] = G->i64;
    return t.ndim;
  case T_LUA: tys[0] = G->i32; tys[1] = G->i8; tys[2] = G->i64; return 3;   /* slot, tag, bits (cg_lua.c) */
  case T_CLOSURE:   /* its environment's address, if any (cg_closure.c) */
    if (!t.sub) return 0;
    tys[0] = G->i8p;
    return 1;
  default: return 0;
  }
}

static int pack(CgVal x, LLVMValueRef *out) {
  switch (x.t.kind) {
  case T_INT: case T_F64: case T_F32: case T_BOOL: out[0] = x.v; return 1;
  case T_NUMBER: out[0] = x.v; out[1] = x.isf; return 2;
  case T_MAYBE:
    out[0] = x.v;
    if (x.t.sub == T_NUMBER) { out[1] = x.isf; out[2] = x.flag; return 3; }
    out[1] = x.flag;
    return 2;
  case T_BUF:
    out[0] = x.v;
    for (int d = 0; d < x.t.ndim; d++) out[1 + d] = x.dims[d];
    return 1 + x.t.ndim;
  case T_SHAPE:
    for (int d = 0; d < x.t.ndim; d++) out[d] = x.dims[d];
    return x.t.ndim;
  case T_LUA: out[0] = x.v; out[1] = x.flag; out[2] = x.dims[0]; return 3;
  case T_CLOSURE:
    if (!x.t.sub) return 0;
    out[0] = x.v;
    return 1;
  default: return 0;
  }
}

static CgVal unpack(Type t, LLVMValueRef *p) {
  CgVal x = cg_mk(t, NULL);
  switch (t.kind) {
  case T_INT: case T_F64: case T_F32: case T_BOOL: x.v = p[0]; break;
  case T_NUMBER: x.v = p[0]; x.isf = p[1]; break;
  case T_MAYBE:
    x.v = p[0];
    if (t.sub == T_NUMBER) { x.isf = p[1]; x.flag = p[2]; } else x.flag = p[1];
    break;
  case T_BUF:
    x.v = p[0];
    for (int d = 0; d < t.ndim; d++) x.dims[d] = p[1 + d];
    break;
  case T_SHAPE:
    for (int d = 0; d < t.ndim; d++) x.dims[d] = p[d];
    break;
  case T_LUA: x.v = p[0]; x.flag = p[1]; x.dims[0] = p[2]; break;
  case T_CLOSURE: if (t.sub) x.v = p[0]; break;
  default: break;
  }
  return x;
}

/* A pure specialization's result (CG.pure) in registers: its one part,
** or a T_NUMBER's value and float flag as a pair {i64, i1} (two registers
** on x86-64 and AArch64, as the old rule foresaw). */
static LLVMTypeRef pure_ret_ty(CG *G, Type t) {
  LLVMTypeRef tys[3 + KJIT_MAXDIMS];
  int np = parts(G, t, tys);
  return np == 1 ? tys[0] : LLVMStructTypeInContext(G->C, tys, (unsigned)np, 0);
}

static LLVMValueRef pure_ret_pack(CG *G, CgVal x) {
  LLVMValueRef pv[3 + KJIT_MAXDIMS];
  int np = pack(x, pv);
  if (np == 1) return pv[0];
  LLVMValueRef agg = LLVMGetUndef(pure_ret_ty(G, x.t));
  for (int k = 0; k < np; k++) agg = LLVMBuildInsertValue(G->B, agg, pv[k], (unsigned)k, "");
  return agg;
}

int cg_pure_ret_parts(CG *G, Type t, LLVMValueRef r, LLVMValueRef *out) {
  LLVMTypeRef tys[3 + KJIT_MAXDIMS];
  int np = parts(G, t, tys);
  if (np == 1) out[0] = r;
  else for (int k = 0; k < np; k++) out[k] = LLVMBuildExtractValue(G->B, r, (unsigned)k, "");
  return np;
}

/* ---- Errors --------------------------------------------------------------- */

void cg_error(CG *G, const KirInsn *v, const char *fmt, ...) {
  KtySession *S = G->S;
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *chunk = G->sp && G->sp->chunkname ? G->sp->chunkname : "?";
  int line = v ? v->line : (G->sp ? G->sp->ir->proto->linedefined : 0);
  snprintf(S->err, sizeof S->err, "%s:%d: %s", chunk, line, msg);
  longjmp(*S->jb, 1);
}

void cg_store_err(CG *G, int idx, LLVMValueRef v) {
  LLVMBuildStore(G->B, v, LLVMBuildStructGEP2(G->B, G->errty, G->err, (unsigned)idx, ""));
}

int cg_is_pure(CG *G, const KtySpec *sp) { return G->pure && sp && G->pure[sp->index]; }

/* Whether sp keeps its poll countdown in its KErr (KErr.poll_left, which
** every dispatcher sets; runtime_poll.h) rather than taking a pointer to
** one: a pure function without loops, such as fib. Its recursive calls
** then pass one argument less, and the register that held the pointer
** stays free for the callee's address (fib: two instructions fewer per
** call, 3.24M -> 3.0M for fib(24) - fib(20); polls off: 2.95M). A function
** with loops keeps the pointer: its countdown, not passed to the poll
** call, can live in a register through a loop (see float_recurrence),
** where one in err could not. Such a callee counts apart from a caller
** with a pointer (each polls after at most KCG_POLL_PERIOD of its own
** charges). */
int cg_poll_in_err(CG *G, const KtySpec *sp) {
  return G->target->poll && cg_is_pure(G, sp) && sp->ir->nloops == 0;
}

/* A pure function fails with a zero result, the error in err->kind. */
void cg_fail_ret(CG *G) {
  if (cg_is_pure(G, G->sp)) LLVMBuildRet(G->B, LLVMConstNull(pure_ret_ty(G, G->sp->rets[0])));
  else LLVMBuildRet(G->B, cg_i32(G, 1));
}

/* A pure function runs on after a callee failed (its values garbage, and
** it has no side effects): the first error recorded stays. Emits: if
** err->kind is set, fail now. */
void cg_pure_keep_first_error(CG *G) {
  if (!cg_is_pure(G, G->sp)) return;
  LLVMValueRef k = LLVMBuildLoad2(G->B, G->i32, LLVMBuildStructGEP2(G->B, G->errty, G->err, 0, ""), "");
  LLVMBasicBlockRef ret = cg_bb(G, "errset"), fill = cg_bb(G, "fill");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, k, cg_i32(G, 0), ""), fill, ret);
  LLVMPositionBuilderAtEnd(G->B, ret);
  cg_fail_ret(G);
  LLVMPositionBuilderAtEnd(G->B, fill);
}

void cg_raise(CG *G, KErrKind kind, int line, LLVMValueRef a, LLVMValueRef b,
              LLVMValueRef c, const char *msg) {
  cg_defer_flush(G);   /* a pending bounds error comes first */
  cg_pure_keep_first_error(G);
  cg_store_err(G, 0, cg_i32(G, kind));
  cg_store_err(G, 1, cg_i32(G, line));
  if (a) cg_store_err(G, 2, a);
  if (b) cg_store_err(G, 3, b);
  if (c) cg_store_err(G, 4, c);
  if (msg) cg_store_err(G, 5, cg_msg(G, msg));
  cg_store_err(G, 6, G->chunkname);
  cg_fail_ret(G);
  LLVMPositionBuilderAtEnd(G->B, cg_bb(G, "dead"));
}

/* Marks a branch whose false edge (an error) is almost never taken. */
LLVMValueRef cg_cold_false(CG *G, LLVMValueRef br) {
  LLVMMetadataRef md[3] = {
    LLVMMDStringInContext2(G->C, "branch_weights", 14),
    LLVMValueAsMetadata(LLVMConstInt(G->i32, 1u << 20, 0)),
    LLVMValueAsMetadata(LLVMConstInt(G->i32, 1, 0)),
  };
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(G->C, "prof", 4),
                  LLVMMetadataAsValue(G->C, LLVMMDNodeInContext2(G->C, md, 3)));
  return br;
}

void cg_check(CG *G, LLVMValueRef ok, KErrKind kind, int line, LLVMValueRef a,
              LLVMValueRef b, LLVMValueRef c, const char *msg) {
  if (LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok) == 1) return;
  cg_defer_flush(G);   /* a pending bounds error comes first */
  LLVMBasicBlockRef fail = cg_bb(G, "fail"), cont = cg_bb(G, "ok");
  cg_cold_false(G, LLVMBuildCondBr(G->B, ok, cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  cg_raise(G, kind, line, a, b, c, msg);
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, cont);
}

/* Lua's description of where a value came from (ir_varinfo.c). */
const char *cg_varinfo(CG *G, const KirInsn *use, int argi) {
  const char *s = kir_var_text_dup(G->S->A, kir_varinfo(G->sp, use, argi));
  if (s == NULL) cg_error(G, use, "not enough memory");
  return s;
}

const char *cg_argerror_name(CG *G, const KirInsn *v, const char *libname) {
  const char *name = kir_argerror_name(G->sp, v, libname);
  const char *s = ka_strndup(G->S->A, name, strlen(name));
  if (s == NULL) cg_error(G, v, "not enough memory");
  return s;
}

const char *cg_strf(CG *G, const KirInsn *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = len < 0 ? NULL : ka_alloc(G->S->A, (size_t)len + 1);
  if (s == NULL) cg_error(G, v, "not enough memory");
  va_start(ap, fmt);
  vsnprintf(s, (size_t)len + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* ---- Values ------------------------------------------------------------------ */


CgVal cg_val(CG *G, const KirInsn *v) {
  const KtyConst *k = &G->sp->consts[v->id];
  Type t = G->sp->types[v->id];
  if (k->kind != T_UNKNOWN && t.kind != T_BUF && t.kind != T_SHAPE) return cg_const(G, t, k);
  if (G->spill && G->spill[v->id][0] && G->curblock && !kir_inloop(v->block->loop, G->curblock)) {
    /* made in a peeled loop, used after it: the copy that ran wrote the slot */
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    int n = parts(G, t, tys);
    for (int k = 0; k < n; k++) pv[k] = LLVMBuildLoad2(G->B, tys[k], G->spill[v->id][k], "");
    return unpack(t, pv);
  }
  CgVal x = G->vals[v->id];
  if (G->chunklive && G->curblock && G->curblock->loop == G->chunklive)
    for (int i = 0; i < G->nchunkin; i++)   /* (see chunk_locals) */
      if (G->chunkin_id[i] == v->id) x.v = G->chunkin_v[i];
  x.t = G->owntype[v->id].kind ? G->owntype[v->id] : t;   /* a peeled loop's header */
  if (x.t.kind == T_UNKNOWN) x.t = TY(T_NIL);
  return x;
}

int cg_operands(CG *G, const KirInsn *v, int from, CgVal *out, int max) {
  int n = 0;
  int last = v->nargs - ((v->flags & KIR_F_OPEN) ? 1 : 0);
  for (int i = from; i < last && n < max; i++) out[n++] = cg_val(G, v->args[i]);
  if (v->flags & KIR_F_OPEN) {
    const KirInsn *c = v->args[v->nargs - 1];
    if (c->op != KIR_CALL && c->op != KIR_VARARG)
      cg_error(G, v, "internal error: an open operand that is not a call");
    if (G->results[c->id] || c->op == KIR_VARARG) {
      for (int j = 0; j < G->nresults[c->id] && n < max; j++) out[n++] = G->results[c->id][j];
    } else if (G->sp->types[c->id].kind != T_NIL && G->sp->types[c->id].kind != T_UNKNOWN && n < max) {
      out[n++] = cg_val(G, c);
    } else if (G->sp->types[c->id].kind == T_NIL && n < max) {
      /* a built-in whose value is nil (tonumber(nil), math.tointeger of a
      ** non-number) gives that one value; print, error and the kernel
      ** barriers give none */
      Type ft = G->sp->types[c->args[0]->id];
      int none = ft.kind != T_BUILTIN || ft.ref == B_PRINT || ft.ref == B_ERROR ||
                 ft.ref == B_TABLE_INSERT ||
                 B_IS_CUDA(ft.ref) || ft.ref == B_MATH_RANDOMSEED || ft.ref == B_IO_WRITE;
      if (!none) out[n++] = cg_mk(TY(T_NIL), NULL);
    }
  }
  return n;
}

/* ---- Phis and edges ------------------------------------------------------ */

/* The type a phi's LLVM phis have: its own (a peeled loop's header, see
** cg_peel.c) or the typer's. */
static Type phi_type(CG *G, const KirInsn *p) {
  return G->phity[p->id].kind ? G->phity[p->id] : G->sp->types[p->id];
}

/* Creates the LLVM phis of b's KIR phis at the start of bb, in table. */
static void make_phis(CG *G, KirBlock *b, LLVMBasicBlockRef bb, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  LLVMPositionBuilderAtEnd(G->B, bb);
  for (int i = 0; i < b->nphis; i++) {
    KirInsn *p = b->phis[i];
    Type t = phi_type(G, p);
    if (t.kind == T_UNKNOWN || G->sp->consts[p->id].kind != T_UNKNOWN) continue;
    if (t.kind == T_LUA) { cg_lua_make_phi(G, p, table); continue; }   /* tag, bits; the slot
                                                                        is written on each edge */
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int n = parts(G, t, tys);
    for (int j = 0; j < n; j++) table[p->id][j] = LLVMBuildPhi(G->B, tys[j], p->name ? p->name : "");
  }
}

/* Makes b's phis the values of its KIR phis (from table). */
static void use_phis(CG *G, KirBlock *b, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  for (int i = 0; i < b->nphis; i++) {
    KirInsn *p = b->phis[i];
    Type t = phi_type(G, p);
    if (t.kind == T_UNKNOWN || G->sp->consts[p->id].kind != T_UNKNOWN) continue;
    if (t.kind == T_LUA) { G->vals[p->id] = cg_lua_phi(G, p, table); continue; }
    G->vals[p->id] = unpack(t, table[p->id]);
    G->owntype[p->id] = G->phity[p->id];
  }
}

/* Where the edge from -> to lands: the peeled copy of a loop's block (the
** peeled header from outside, an inner block from inside the copy), or
** the block itself; *table: the phis there (NULL: none, the peeled
** header takes its entry values directly). */
LLVMBasicBlockRef cg_edge_target(CG *G, KirBlock *from, KirBlock *to,
                                 LLVMValueRef (**table)[3 + KJIT_MAXDIMS]) {
  if (G->nestloop && !kir_inloop(G->nestloop, to)) {   /* leaving a nest's checked copy
                                                          (cg_version.c): the outer tables */
    KirLoop *n = G->nestloop;
    cg_version_swap(G);
    G->nestloop = NULL;
    LLVMBasicBlockRef r = cg_edge_target(G, from, to, table);
    cg_version_swap(G);
    G->nestloop = n;
    return r;
  }
  if (G->freeloop && !kir_inloop(G->freeloop, to)) {   /* leaving a copy without polls
                                                          (cg_pollfree.c): the outer tables */
    KirLoop *n = G->freeloop;
    struct CgFree *c = G->freecopy;
    int pf = G->pollfree;
    cg_pollfree_swap(G);
    G->freeloop = NULL;
    G->freecopy = NULL;
    G->pollfree = 0;
    LLVMBasicBlockRef r = cg_edge_target(G, from, to, table);
    G->freecopy = c;
    G->freeloop = n;
    G->pollfree = pf;
    cg_pollfree_swap(G);
    return r;
  }
  if (G->versioning && kir_inloop(G->versioning, to)) {   /* a checked copy (cg_version.c) */
    *table = G->vphis;
    return G->vbbs[to->id];
  }
  if (G->freeloop) {   /* in a copy without polls: its blocks, its loops' tests */
    KirLoop *V = G->ver_at ? G->ver_at[to->id] : NULL;
    if (V && !kir_inloop(V, from)) { *table = G->vsphis; return G->vselbb[to->id]; }
    *table = G->phis;
    return G->bbs[to->id];
  }
  KirLoop *L = G->peel_at ? G->peel_at[to->id] : NULL;
  if (L && !kir_inloop(L, from)) { *table = NULL; return G->pbbs[to->id]; }
  L = G->ver_at ? G->ver_at[to->id] : NULL;   /* a versioned loop's entry: its test */
  if (L && !kir_inloop(L, from)) { *table = G->vsphis; return G->vselbb[to->id]; }
  if (G->free_at && G->free_at[to->id] && !kir_inloop(to->loop, from) && G->nestloop == NULL) {
    LLVMBasicBlockRef fb = cg_pollfree_entry(G, to, table);   /* its fit test */
    if (fb) return fb;
  }
  L = G->fit_at ? G->fit_at[to->id] : NULL;   /* its test: one chunk or more */
  if (L && !kir_inloop(L, from)) { *table = G->vsphis; return G->vselbb[to->id]; }
  L = G->strip_at ? G->strip_at[to->id] : NULL;
  if (L && !kir_inloop(L, from)) { *table = G->ophis; return G->chunkbb[to->id]; }
  if (G->peeling && kir_inloop(G->peeling, to) && to != G->peeling->header) {
    *table = G->pphis;
    return G->pbbs[to->id];
  }
  *table = G->phis;
  return G->bbs[to->id];
}

/* The operands of `to`'s phis for the edge from `from`, converted, added
** as incoming values from the current block. */
/* Adds the incoming values of the edge from -> to, from the current
** block, to the phis of `to` in table. */
static void add_edge_tab(CG *G, KirBlock *from, KirBlock *to, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  int i;
  for (i = 0; i < to->npreds; i++) if (to->preds[i] == from) break;
  if (i == to->npreds) cg_error(G, NULL, "internal error: edge without predecessor");
  for (int j = 0; j < to->nphis; j++) {
    KirInsn *p = to->phis[j];
    Type t = phi_type(G, p);
    if (t.kind == T_UNKNOWN || G->sp->consts[p->id].kind != T_UNKNOWN) continue;
    if (t.kind == T_LUA) continue;   /* written by cg_lua_edge (add_edge) */
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int n = parts(G, t, tys);
    if (n == 0) continue;
    KirInsn *a = p->args[i];
    LLVMValueRef vs[3 + KJIT_MAXDIMS];
    if (cg_never_produced(G, a)) {
      for (int k = 0; k < n; k++) vs[k] = LLVMGetUndef(tys[k]);
    } else {
      CgVal x = cg_val(G, a);
      /* `z and 5`: z, a number or nil, reaches the join only as nil (the
      ** typer narrowed it there: its number part may not convert to t's) */
      if (x.t.kind == T_MAYBE && kty_edge_truth(a, to, i) == 0) x = cg_mk(TY(T_NIL), NULL);
      x = cg_convert(G, x, t, p->line >= 0 ? p->line : a->line);
      pack(x, vs);
      for (int k = 0; k < n; k++)   /* an i32 counter's phi (cg_version.c): the value fits */
        if (LLVMTypeOf(table[p->id][k]) != LLVMTypeOf(vs[k])) vs[k] = cg_version_i32(G, vs[k]);
    }
    LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
    for (int k = 0; k < n; k++) LLVMAddIncoming(table[p->id][k], &vs[k], &here, 1);
  }
}

static LLVMBasicBlockRef add_edge(CG *G, KirBlock *from, KirBlock *to) {
  LLVMValueRef (*table)[3 + KJIT_MAXDIMS];
  LLVMBasicBlockRef target = cg_edge_target(G, from, to, &table);
  if (G->narrowing && !kir_inloop(G->versioning, to)) {
    /* leaving a loop with an i32 counter (cg_version.c): a block of its
    ** own copies the counter back to its 64-bit slot on the way out */
    LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), land = cg_bb(G, "narrowexit");
    LLVMPositionBuilderAtEnd(G->B, land);
    cg_version_narrow_exit(G);
    if (table != NULL) add_edge_tab(G, from, to, table);
    LLVMBuildBr(G->B, target);
    LLVMPositionBuilderAtEnd(G->B, here);
    return land;
  }
  if (cg_lua_has_phis(G, to)) {
    /* the Lua phis' slots are written on the edge itself (a block of its
    ** own: the other edge of a branch must not see the writes) */
    LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B), land = cg_bb(G, "lvedge");
    LLVMPositionBuilderAtEnd(G->B, land);
    cg_lua_edge(G, from, to, table);
    if (table != NULL) add_edge_tab(G, from, to, table);
    LLVMBuildBr(G->B, target);
    LLVMPositionBuilderAtEnd(G->B, here);
    return land;
  }
  if (table != NULL) add_edge_tab(G, from, to, table);
  return target;
}

/* Branches to succ[s] of b (its phis' incoming values first). */
static void jump(CG *G, KirBlock *b, int s) {
  LLVMBuildBr(G->B, add_edge(G, b, b->succ[s]));
}

/* A two-way branch on c: succ[0] when true; edges that never run are left
** out. */
static void branch(CG *G, KirBlock *b, LLVMValueRef c) {
  int e0 = G->sp->edges[b->id] & 1, e1 = (G->sp->edges[b->id] >> 1) & 1;
  if (e0 && e1 && b->succ[0] != b->succ[1]) {
    LLVMBasicBlockRef t0 = add_edge(G, b, b->succ[0]);
    LLVMBasicBlockRef t1 = add_edge(G, b, b->succ[1]);
    LLVMBuildCondBr(G->B, c, t0, t1);
  } else if (e0 || (e1 && b->succ[0] == b->succ[1])) {
    jump(G, b, 0);
  } else if (e1) {
    jump(G, b, 1);
  } else {
    LLVMBuildUnreachable(G->B);
  }
}

/* ---- Polling for interrupts ------------------------------------------------
** With a target's poll flag, compiled code calls kjit_rt_poll(err) often
** enough to stop within milliseconds and rarely enough to cost little: a
** countdown (an i64 in the entry's frame, passed to every function) loses
** one at each call that can recur (charged by the caller, see call_charge:
** at a function's entry it would cost every leaf call its full prologue,
** fib ran 1.8x slower) and each loop iteration, and the poll runs
** when it goes below zero (cg_poll_charge; a nonzero answer fails the call, err filled).
** Innermost integer for loops are strip-mined instead: they run in chunks
** of at most KCG_POLL_PERIOD iterations with nothing added inside (so they
** still vectorize), each chunk charging its length at its start. A loop
** around them whose bounds it knows charges their first chunks instead,
** once for a chunk of its own iterations (cg_pollcover.c).
** Measured against KJIT_BENCH_NOPOLL=1 (bench kernels; issue 15): nbody's
** 0-4 iteration j loop ran inside a chunk loop level of its own (4-6%
** slower; now not strip-mined, see stores_invariant), fib's recursive
** calls charged (8-10%; 1-2% since they charge at one depth in 8, see
** sampled_levels), jacobi's rows pay a chunk's set-up (1-3%, see
** emit_chunk_head). Tried and
** left out: a plain copy for runs of at most 32 iterations (not
** vectorized, not unrolled): a 2-D stencil's compile +5 ms; a plain copy
** for every single-chunk run (as LLVM likes it): compile 37 -> 50 ms; no
** run-time unrolling in the chunks: matmul and prefix_sum 7-9% slower;
** per-iteration charges in every loop that stores to an invariant
** element, small bodies too: up to 2x slower (see stores_invariant). */

/* Charges amount (at least 1) to the countdown; the poll runs when it goes
** below zero. Why below zero and not at zero: the test is then the sign of
** the subtraction, which x86 reads from the flags the subtraction sets
** (`dec; js`: two instructions, where `c > 0` took `dec; test; jle`), and
** a loop charging each iteration gets that branch as its latch (LLVM
** rotated the parallel mandelbrot's `while` loop around it: 15
** instructions an iteration against 17, 13 with polls off). A countdown of
** 0 (a prange worker's zeroed record) still polls at the first charge. */
void cg_poll_charge(CG *G, LLVMValueRef amount) {
  if (G->pollctr == NULL || G->pollfree) return;   /* (a copy charged whole: cg_pollfree.c) */
  LLVMValueRef c = LLVMBuildSub(G->B, LLVMBuildLoad2(G->B, G->i64, G->pollctr, ""), amount, "");
  LLVMBuildStore(G->B, c, G->pollctr);
  LLVMBasicBlockRef slow = cg_bb(G, "poll"), cont = cg_bb(G, "polled");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSGE, c, cg_i64(G, 0), ""), cont, slow));
  LLVMPositionBuilderAtEnd(G->B, slow);
  /* a pure function runs on after a callee failed, charging its calls:
  ** the poll would then record an interrupt, or a hook's error, over the
  ** first error (and call the hook after it). Fail with the first one
  ** instead (a test in the cold block only). */
  cg_pure_keep_first_error(G);
  LLVMBuildStore(G->B, cg_i64(G, KCG_POLL_PERIOD), G->pollctr);
  LLVMTypeRef pt[1] = { G->errp };
  LLVMValueRef perr = G->pollerr ? G->pollerr : G->err;
  LLVMValueRef st = cg_ccall(G, "kjit_rt_poll", G->i32, pt, &perr, 1);
  LLVMBasicBlockRef fail = cg_bb(G, "interrupted");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""), cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  if (G->pollerr)   /* the record into err too: a failing return copies err out */
    LLVMBuildStore(G->B, LLVMBuildLoad2(G->B, G->errty, G->pollerr, ""), G->err);
  cg_fail_ret(G);   /* err is filled */
  LLVMPositionBuilderAtEnd(G->B, cont);
}

/* Whether loop L has a big body (KCG_BIG_BODY instructions or more) that
** stores to an element at the same place in every iteration (table and
** key from outside L, or constants): nbody's `vx[i] = vx[i] - dx * mj`
** in its j loop. LLVM 14 never vectorizes a loop with a store to an
** invariant address, so chunks buy nothing there, and they cost: a loop
** level of their own, whose set-up LSR fills with a base register per
** array, run at each entry of a loop of a few iterations (nbody 1.05-1.06
** of polls off). Such a loop charges each iteration at its header
** instead, as an outer loop does (a register when the function makes no
** calls: nbody 1.00). Why only big bodies: the poll call in the loop
** stops LLVM keeping the stored element in a register from one iteration
** to the next (a store-load chain through memory) and unrolling the loop
** (`s[i] = s[i] + x[j] * y[j] + x[j]`, 7 instructions: 1.36x slower than
** chunked; 15: 1.28x; 21: 1.00; 35: 1.01-1.02). */
#define KCG_BIG_BODY 40
static int stores_invariant(const KirLoop *L) {
  int size = 0, inv = 0;
  for (int b = 0; b < L->nblocks; b++) {
    KirBlock *blk = L->blocks[b];
    size += blk->ninsns;
    for (int i = 0; i < blk->ninsns; i++) {
      KirInsn *v = blk->insns[i];
      if (v->op != KIR_SETINDEX || v->nargs < 2 || inv) continue;
      int here = 1;
      for (int a = 0; a < 2; a++)
        here &= KIR_ISCONST(v->args[a]->op) || !kir_inloop(L, v->args[a]->block);
      inv = here;
    }
  }
  return inv && size >= KCG_BIG_BODY;
}

/* Whether loop L only computes floating-point recurrences: no memory
** access, call or allocation in it, and every value it carries from one
** iteration to the next (its header's phis but the control variable) a
** float, with fastmath off. LLVM vectorizes nothing in such a loop (no
** loads or stores to widen; strict float sums and products are not
** reassociated), so chunks buy nothing there, and they cost compile time:
** a chunk loop around `for i = 1, n do s = s + x * i end` doubled the
** instructions of its first compile (28.0M against 14.4M with polls off;
** LLVM's induction-variable passes on the nest). It charges each
** iteration at its header instead, in a register (the countdown is a
** noalias argument, the loop makes no other call), beside the float chain
** that bounds its speed. */
static int float_recurrence(CG *G, const KirLoop *L) {
  const KtySpec *sp = G->sp;
  if (G->fastmath) return 0;
  KirBlock *h = L->header;
  int nfloat = 0;
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *p = h->phis[i];
    int k = sp->types[p->id].kind;
    if (sp->consts[p->id].kind != T_UNKNOWN || k == T_UNKNOWN) continue;
    if (k == T_F64 || k == T_F32) { nfloat++; continue; }
    if (p != L->var) return 0;   /* an integer or other carried value */
  }
  if (nfloat == 0) return 0;
  for (int b = 0; b < L->nblocks; b++) {
    KirBlock *blk = L->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      KirOp op = blk->insns[i]->op;
      if (!(KIR_ISCONST(op) || op == KIR_PHI || KIR_ISARITH(op) || op == KIR_UNM ||
            op == KIR_NOT || op == KIR_EQ || op == KIR_LT || op == KIR_LE ||
            op == KIR_JMP || op == KIR_BR || op == KIR_FORLOOP))
        return 0;
    }
  }
  return 1;
}

/* Whether versioned loop L (cg_version.c) is charged whole at its test:
** an integer for loop that is not strip-mined (it stores to an invariant
** element: see stores_invariant) has its fast copy entered only when its
** iterations fit a poll period (forprep's count at most KCG_POLL_PERIOD -
** 1), charged them all there, and carries no poll of its own (its checked
** copy, which takes longer runs too, charges each iteration). Its fast
** copy is then the loop compiled without polls (nbody's j loop: the same
** instructions an iteration as with polls off, against those and a
** decrement and a branch before). Measured on bench nbody (5 bodies, 0-4
** iterations an entry): no change in instructions a call (1.088 -> 1.092
** of polls off, within the noise: the entry's test and charge cost what
** the few iterations' charges did); the saving is for longer rows. Such a
** loop never vectorizes (LLVM 14 does not vectorize a store to an
** invariant address), so the checked copy taking runs longer than a
** period loses no vector code, only the hoisted checks of those runs; no
** copy is added (a single-chunk copy beside the chunked one costs a
** stencil's compile 35%, see cg_version.c). */
int cg_fit_version(CG *G, const KirLoop *L) {
  return G->pollctr != NULL && !G->pollfree && L->kind == KIR_LOOP_FORNUM && !G->S->kernel &&
         !(G->kindsplit && G->kindsplit[L->header->id]) &&   /* (two kinds, not ranges) */
         !(G->strip_at && G->strip_at[L->header->id] == L) && stores_invariant(L);
}

/* Whether inner for loop L, entered from forprep, charges at least one
** at each entry where it runs, here: at its chunk head (strip-mined), at
** its single-chunk test (a prange body's), or at its fit test (see
** cg_fit_version), each of whose other copies charges each iteration. */
static int charged_at_entry(CG *G, const KirLoop *L) {
  const KirBlock *h = L->header;
  if (L->kind != KIR_LOOP_FORNUM || L->prep == NULL || L->entry != L->prep->block ||
      (G->peel_at && G->peel_at[h->id]))
    return 0;
  if (G->strip_at && G->strip_at[h->id] == L && G->chunkbb[h->id]) return 1;
  return G->ver_at && G->ver_at[h->id] == L && cg_fit_version(G, L);
}

/* The inner for loop whose forprep charges for each iteration of loop P
** (cg_func.c, emit_block leaves P's own charge out), or NULL: a loop
** charged at its entry (charged_at_entry) whose forprep block is in P
** itself and dominates P's latches, so that each iteration of P enters it
** or skips it there; the skip charges one (emit_forprep). An iteration of
** jacobi's row loop, of nbody's i loop, of a parallel matmul's k loop,
** then costs nothing of its own (a subtraction and a branch, 2 of the 8
** instructions polls added to each k of the parallel matmul). Not in
** copies (a checked or single-chunk copy, a nest's checked copy), nor in
** kernels. */
static KirLoop *for_covers(CG *G, const KirLoop *P) {
  if (G->pollctr == NULL || G->pollfree || G->versioning || G->nestloop || G->S->kernel ||
      P->nlatches == 0 || cg_poll_weighed(G, P))   /* (P charges its iterations: cg_pollcover.c) */
    return NULL;
  KirFunc *f = G->sp->ir;
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *L = f->loops[l];
    if (L->parent != P || !charged_at_entry(G, L) || L->entry->loop != P) continue;
    const KirBlock *e = L->entry;
    if ((G->sp->edges[e->id] & 3) != 3 || e->succ[0] == e->succ[1] || e->succ[0] != L->header)
      continue;   /* (forprep both enters and skips L) */
    int all = 1;
    for (int i = 0; i < P->nlatches && all; i++) all = kir_dominates(e, P->latches[i]);
    if (all) return L;
  }
  return NULL;
}

/* The tables of strip-mined loops (and of chunked prange loops). */
void cg_strip_tables(CG *G) {
  KirFunc *f = G->sp->ir;
  if (G->strip_at != NULL) return;
  G->strip_at = cg_zalloc(G, sizeof(KirLoop *) * (size_t)f->nblocks);
  G->chunkbb = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
  G->ophis = cg_zalloc(G, sizeof *G->ophis * (size_t)f->ninsns);
  G->chunk = cg_zalloc(G, sizeof(LLVMValueRef) * (size_t)f->ninsns);
}

/* Strip-mined loop L's chunk head and chunk counter, in the function
** being emitted: at the plan, or in the worker of the parallel loop that
** holds L (cg_prange.c), whose blocks and frame are its own. */
void cg_strip_begin(CG *G, KirLoop *L) {
  KirBlock *h = L->header;
  G->chunkbb[h->id] = cg_bb(G, "chunk");
  /* a counted while loop (cg_countloop.c): its chunk's end, by its
  ** counter; a for loop, or a prange loop (a generic for: cg_prange.c),
  ** by its prep */
  KirInsn *key = L->kind == KIR_LOOP_FORNUM || L->kind == KIR_LOOP_FORIN ? L->prep
                                                                        : cg_count_var(G, L);
  G->chunk[key->id] = cg_alloca(G, G->i64, "chunk");
}

/* Which loops are strip-mined: innermost integer for loops (not peeled),
** but for those that store to an invariant element (see above); inside
** a parallel loop's body too (set up in its worker). */
static void strip_plan(CG *G) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  if (G->pollctr == NULL || f->irreducible) return;
  for (int l = 0; l < f->nloops; l++) {
    KirLoop *L = f->loops[l];
    KirBlock *h = L->header;
    if (cg_count_var(G, L) && !(G->peel_at && G->peel_at[h->id]) && !cg_lua_loop_uses(G, L)) {
      cg_strip_tables(G);   /* a while loop counted by an integer (cg_countloop.c) */
      G->strip_at[h->id] = L;
      if (!cg_prange_owns(G, h)) cg_strip_begin(G, L);
      continue;
    }
    if (L->kind != KIR_LOOP_FORNUM || L->prep == NULL || !sp->live[h->id] ||
        sp->types[L->prep->id].kind != T_INT || (G->peel_at && G->peel_at[h->id]) ||
        L->prep->block->succ[0] != h)
      continue;
    int inner = 1;
    for (int b = 0; b < L->nblocks; b++) inner &= L->blocks[b]->loop == L;
    if (!inner) continue;
    if (stores_invariant(L) || float_recurrence(G, L)) continue;
    if (cg_lua_loop_uses(G, L)) continue;   /* (Lua phis are written on edges) */
    cg_strip_tables(G);
    G->strip_at[h->id] = L;
    if (!cg_prange_owns(G, h)) {
      cg_strip_begin(G, L);
    } else {   /* in a parallel body: a single-chunk copy too (cg_version.c) */
      if (G->fit_at == NULL) G->fit_at = cg_zalloc(G, sizeof(KirLoop *) * (size_t)f->nblocks);
      G->fit_at[h->id] = L;
    }
  }
}

/* x, an i64, through an empty inline asm (no instruction: the same
** register), a value no pass sees through: the start of a strip-mined
** loop's next chunk (strip_latch). freeze was not enough there: it is
** folded away where its operand cannot be poison, and LLVM then saw the
** chunk loop's recurrence (start + k * 65536 * step) in every address of
** the row, computed those per row from the row's index (jacobi: an imul
** and a spill for each of ten addresses, about 80 instructions a row of
** 98). With the start opaque, each chunk's addresses are the row's own
** plus a register: bench jacobi (100 x 100, 4 sweeps) 1.215 -> 1.039 of
** polls off in instructions, convolve 1.027 -> 1.007. Its price: LLVM's
** loop strength reduction searches longer on the nest (the full-tier
** compile of bench/compile_time.lua's stencil 247.5M -> 339.4M
** instructions; its first tier, what that benchmark times, is optnone
** code without the passes: 75.8M either way; since chunk_locals, whose
** copies leave LSR no row recurrence to search in a storing nest's inner
** loop, 312.9M -> 210.5M). readnone: it neither
** reads nor writes memory, so loads can still be hoisted across it. */
static LLVMValueRef cg_opaque(CG *G, LLVMValueRef x, LLVMValueRef dep) {
  /* dep (or NULL): a second input the asm only reads, so that the value
  ** is computed where dep is (LICM cannot hoist it out of dep's loop) */
  LLVMTypeRef ps[2] = { G->i64, G->i64 };
  LLVMValueRef av[2] = { x, dep };
  unsigned na = dep ? 2 : 1;
  LLVMTypeRef fty = LLVMFunctionType(G->i64, ps, na, 0);
  const char *cons = dep ? "=r,0,r" : "=r,0";
  LLVMValueRef a = LLVMGetInlineAsm(fty, "", 0, (char *)cons, strlen(cons), 0, 0,
                                    LLVMInlineAsmDialectATT, 0);
  LLVMValueRef c = LLVMBuildCall2(G->B, fty, a, av, na, "");
  static const char *const attrs[] = { "readnone", "nounwind", "willreturn" };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(G->C,
        LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i])), 0));
  return c;
}

/* The chunk-local copies of strip-mined loop L (emitted at its chunk head,
** dep the chunk's length): each integer that L reads and that the loop
** around L computes (the row's index in a nest: jacobi's i), through
** cg_opaque with dep as a second input, is a new value at each chunk, and
** L's blocks, emitted right after the chunk head (emit_block: they are
** dominated by it), read that copy (cg_val). Why: LLVM's vectorizer
** places its alias tests' addresses, and LICM the row's addresses, at the
** outermost loop where they are invariant, which with a chunk loop
** between is the row loop's header, above the chunk loop; the machine
** sinker never sinks into a loop, so they stay live across the chunk
** loop, about ten registers spilled at each row and reloaded at each
** chunk (bench jacobi 1.17 of polls off in instructions). Computed from
** the copy, they are placed at the chunk's head, where they are used, as
** without polls: bench jacobi 1.144 -> 1.094 of polls off (what is left:
** the row's index times each stride at each row, where LLVM without polls
** adds a stride from one row to the next, and the chunk's charge).
** Only in loops that store to an array element (only they get alias
** tests): in loops that only read (matmul's and convolve's
** sums), LLVM took the row's addresses from one row to the next by
** adding a stride, and the copies made it compute them anew at each
** chunk (bench matmul 1.455M -> 1.468M instructions a call, convolve
** 6.71M -> 6.79M). */
int cg_loop_stores(const KirLoop *L) {
  for (int b = 0; b < L->nblocks; b++)
    for (int i = 0; i < L->blocks[b]->ninsns; i++)
      if (L->blocks[b]->insns[i]->op == KIR_SETINDEX) return 1;
  return 0;
}
static void chunk_locals(CG *G, KirLoop *L, LLVMValueRef dep) {
  const KtySpec *sp = G->sp;
  G->nchunkin = 0;
  G->chunkpend = L;
  if (L->parent == NULL || !cg_loop_stores(L)) return;
  int max = (int)(sizeof G->chunkin_id / sizeof G->chunkin_id[0]);
  for (int b = 0; b < L->nblocks; b++) {
    const KirBlock *blk = L->blocks[b];
    for (int i = 0; i < blk->ninsns; i++)
      for (int a = 0; a < blk->insns[i]->nargs; a++) {
        const KirInsn *x = blk->insns[i]->args[a];
        if (kir_inloop(L, x->block) || !kir_inloop(L->parent, x->block) ||
            sp->types[x->id].kind != T_INT || sp->consts[x->id].kind != T_UNKNOWN ||
            G->owntype[x->id].kind || (G->spill && G->spill[x->id][0]) ||
            G->vals[x->id].v == NULL || LLVMTypeOf(G->vals[x->id].v) != G->i64)
          continue;
        int seen = 0;
        for (int k = 0; k < G->nchunkin; k++) seen |= G->chunkin_id[k] == x->id;
        if (seen || G->nchunkin == max) continue;
        G->chunkin_id[G->nchunkin] = x->id;
        G->chunkin_v[G->nchunkin++] = cg_opaque(G, G->vals[x->id].v, dep);
      }
  }
}

/* The start of a chunk of strip-mined loop L: its iterations are taken
** from what remains and charged; then the loop's header. F->rem keeps
** what remained at the chunk's start; the latch moves it on by a whole
** chunk (see strip_latch). */
static void chunk_enter(CG *G, KirBlock *h);
static void emit_chunk_head(CG *G, KirLoop *L) {
  KirBlock *h = L->header;
  if (L->kind != KIR_LOOP_FORNUM && cg_count_var(G, L)) {   /* cg_countloop.c */
    cg_count_head(G, L);
    chunk_enter(G, h);
    return;
  }
  if (L->kind != KIR_LOOP_FORNUM) return;   /* a prange loop: cg_prange.c */
  CgFor *F = &G->fors[L->prep->id];
  F->chunkmax = NULL;   /* this copy's own (a copy without the weighed head
                        ** must not use another copy's value: strip_latch) */
  LLVMValueRef chunk = G->chunk[L->prep->id];
  LLVMPositionBuilderAtEnd(G->B, G->chunkbb[h->id]);
  LLVMValueRef cmax = cg_i64(G, KCG_POLL_PERIOD - 1), weight = NULL;
  if (cg_poll_weighed(G, L)) {   /* charged for its inner loops' first chunks
                                    (cg_pollcover.c): chunks of PERIOD / W */
    cg_before_loop(G, L);
    weight = cg_cover_weight(G, L);
    LLVMValueRef c = LLVMBuildUDiv(G->B, cg_i64(G, KCG_POLL_PERIOD), weight, "");
    c = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, c, cg_i64(G, 0), ""), cg_i64(G, 1), c, "");
    cmax = F->chunkmax = LLVMBuildSub(G->B, c, cg_i64(G, 1), "");
  }
  LLVMValueRef rem = LLVMBuildLoad2(G->B, G->i64, F->rem, "");
  LLVMValueRef big = LLVMBuildICmp(G->B, LLVMIntUGT, rem, cmax, "");
  /* frozen (a plain value to SCEV; made opaque too, as the next chunk's
  ** start is, see strip_latch, bench jacobi counted 175.6k instructions a
  ** call against 166.8k): else the vector loop's trip count is an expression of
  ** the chunk loop's recurrence that each entry re-derives (three umins
  ** and a shift in jacobi's rows; about 1 point of its 2-3% of polls off,
  ** within the noise of a 2-core machine) */
  LLVMValueRef take = LLVMBuildFreeze(G->B, LLVMBuildSelect(G->B, big, cmax, rem, ""), "");
  LLVMBuildStore(G->B, take, chunk);
  LLVMValueRef iters = LLVMBuildAdd(G->B, take, cg_i64(G, 1), "");
  if (weight) {
    cg_poll_charge(G, LLVMBuildMul(G->B, iters, weight, ""));
    G->nchunkin = 0;   /* (no chunk-local copies: they are for innermost loops) */
    G->chunkpend = NULL;
  } else {
    if (!cg_poll_covered(G, L)) cg_poll_charge(G, iters);   /* (else: in its parent's) */
    chunk_locals(G, L, take);
  }
  chunk_enter(G, h);
}

/* From the current block into header h, its phis taking the values
** in from[] (per part of each phi). */
static void enter_header(CG *G, KirBlock *h, LLVMValueRef (*from)[3 + KJIT_MAXDIMS]) {
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *p = h->phis[i];
    Type t = phi_type(G, p);
    if (t.kind == T_UNKNOWN || G->sp->consts[p->id].kind != T_UNKNOWN) continue;
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int n = parts(G, t, tys);
    for (int k = 0; k < n; k++) LLVMAddIncoming(G->phis[p->id][k], &from[p->id][k], &here, 1);
  }
  LLVMBuildBr(G->B, G->bbs[h->id]);
}

/* From a chunk head (the current block) into header h: its phis take the
** chunk head's. */
static void chunk_enter(CG *G, KirBlock *h) { enter_header(G, h, G->ophis); }

/* From the current block back into header h with the values its phis
** have (cg_countloop.c: the header's test again after a chunk). */
void cg_reenter_header(CG *G, KirBlock *h) { enter_header(G, h, G->phis); }

/* The latch of a strip-mined loop: the next iteration in this chunk, else
** the next chunk (when more than a chunk remained at this one's start:
** this one was whole), else the exit. The next chunk's control variable
** is this chunk's start plus a chunk of steps (the value the last
** iteration's step gives, wrapping as Lua's does), made opaque
** (cg_opaque). Why: with it
** the last iteration's value plus a step (an expression of the chunk's
** length, a umin), LLVM's loop strength reduction took 20 ms on a 2-D
** stencil's vectorized inner loop (200 ms while vector loops were still
** unrolled again, see cpu.c); unfrozen, the start is an affine recurrence
** of the chunk loop, LSR takes 6 ms but keeps a chunk-level base register
** per array, and nbody's 0-4 iteration j loop (seven arrays) spilled and
** ran 11% slower; frozen (meant to be opaque to SCEV): 6 ms, no
** spills. But instcombine drops a freeze whose operand cannot be poison,
** so the recurrence came back, and each row of a nest computed the
** chunk-level bases of its addresses anew (jacobi 1.215 of polls off);
** through an empty asm the start stays opaque (1.039; see cg_opaque for
** what it costs to compile). */
static void strip_latch(CG *G, KirInsn *v, CgFor *F, LLVMValueRef chunkp) {
  KirBlock *b = v->block, *h = b->succ[0], *exit = b->succ[1];
  LLVMValueRef chunk = LLVMBuildLoad2(G->B, G->i64, chunkp, "");
  LLVMBuildStore(G->B, LLVMBuildSub(G->B, chunk, cg_i64(G, 1), ""), chunkp);
  LLVMValueRef inchunk = LLVMBuildICmp(G->B, LLVMIntNE, chunk, cg_i64(G, 0), "");
  LLVMBasicBlockRef tail = cg_bb(G, "chunkend"), next = cg_bb(G, "nextchunk");
  LLVMBasicBlockRef th = add_edge(G, b, h);
  LLVMBuildCondBr(G->B, inchunk, th, tail);
  LLVMPositionBuilderAtEnd(G->B, tail);
  LLVMValueRef rem = LLVMBuildLoad2(G->B, G->i64, F->rem, "");
  LLVMBasicBlockRef te = add_edge(G, b, exit);
  /* a chunk's length: KCG_POLL_PERIOD, or a loop's own (cg_pollcover.c) */
  LLVMValueRef cmax = F->chunkmax ? F->chunkmax : cg_i64(G, KCG_POLL_PERIOD - 1);
  LLVMValueRef clen = LLVMBuildAdd(G->B, cmax, cg_i64(G, 1), "");
  LLVMValueRef more = LLVMBuildICmp(G->B, LLVMIntUGT, rem, cmax, "");
  LLVMBuildCondBr(G->B, more, next, te);
  LLVMPositionBuilderAtEnd(G->B, next);
  LLVMValueRef left = LLVMBuildSub(G->B, rem, clen, "");
  LLVMBuildStore(G->B, left, F->rem);
  if (cg_poll_covered(G, b->loop)) {   /* the next chunk: its head charges only the first */
    LLVMValueRef big = LLVMBuildICmp(G->B, LLVMIntUGT, left, cmax, "");
    cg_poll_charge(G, LLVMBuildAdd(G->B, LLVMBuildSelect(G->B, big, cmax, left, ""), cg_i64(G, 1), ""));
  }
  KirInsn *iv = v->args[0];
  CgVal saved = G->vals[v->id];
  if (iv->op == KIR_PHI && iv->block == h && phi_type(G, iv).kind == T_INT &&
      G->sp->consts[iv->id].kind == T_UNKNOWN && G->ophis[iv->id][0] != NULL) {
    LLVMValueRef span = LLVMBuildMul(G->B, F->step, clen, "");
    G->vals[v->id].v = cg_opaque(G, LLVMBuildAdd(G->B, G->ophis[iv->id][0], span, ""), NULL);
  }
  add_edge_tab(G, b, h, G->ophis);   /* (v's value only for this edge) */
  G->vals[v->id] = saved;
  LLVMBuildBr(G->B, G->chunkbb[h->id]);
}

/* ---- Numeric for loops ----------------------------------------------------
** forprep computes the iteration count of an integer loop (in unsigned
** arithmetic, never overflowing, as Lua's forprep) into a stack slot that
** forloop counts down; mem2reg makes it a register. A float loop keeps its
** step, limit and direction for forloop. */

/* An integer loop's iteration count minus one (in unsigned arithmetic,
** never overflowing) and whether it runs at all; the limit l may be a
** float (clipped by kjit_rt_forlimit) or a T_NUMBER. step is never 0
** here (checked, or replaced by 1 where the loop is not an integer one). */
static LLVMValueRef int_count(CG *G, LLVMValueRef init, CgVal l, LLVMValueRef step,
                              LLVMValueRef *skipp) {
  LLVMValueRef lim, fskip = cg_i1(G, 0);
  int sconst = LLVMIsAConstantInt(step) != NULL;
  long long sc = sconst ? LLVMConstIntGetSExtValue(step) : 0;
  if (l.t.kind == T_INT) lim = l.v;
  else {
    /* a float limit: floor/ceil and clip, as Lua's forlimit */
    LLVMValueRef out = cg_alloca(G, G->i64, "lim");
    LLVMTypeRef pt[4] = { G->f64, G->i64, G->i64, LLVMPointerType(G->i64, 0) };
    LLVMValueRef fl = l.t.kind == T_NUMBER ? cg_num_to(G, cg_number_side(G, l, 1), T_F64)
                                           : cg_num_to(G, l, T_F64);
    LLVMValueRef av[4] = { fl, init, step, out };
    LLVMValueRef sk = cg_ccall(G, "kjit_rt_forlimit", G->i32, pt, av, 4);
    lim = LLVMBuildLoad2(G->B, G->i64, out, "");
    fskip = LLVMBuildICmp(G->B, LLVMIntNE, sk, cg_i32(G, 0), "");
    if (l.t.kind == T_NUMBER) {   /* the integer side needs no forlimit */
      lim = LLVMBuildSelect(G->B, l.isf, lim, l.v, "");
      fskip = LLVMBuildAnd(G->B, l.isf, fskip, "");
    }
  }
  LLVMValueRef pos = sconst ? cg_i1(G, sc > 0) : LLVMBuildICmp(G->B, LLVMIntSGT, step, cg_i64(G, 0), "");
  LLVMValueRef skip = LLVMBuildSelect(G->B, pos, LLVMBuildICmp(G->B, LLVMIntSGT, init, lim, ""),
                                      LLVMBuildICmp(G->B, LLVMIntSLT, init, lim, ""), "");
  *skipp = LLVMBuildOr(G->B, skip, fskip, "");
  LLVMValueRef cpos = LLVMBuildSub(G->B, lim, init, "");
  if (!(sconst && sc == 1)) {
    LLVMValueRef sd = sconst ? step : LLVMBuildSelect(G->B, pos, step, cg_i64(G, 1), "");
    cpos = LLVMBuildUDiv(G->B, cpos, sd, "");
  }
  if (sconst && sc > 0) return cpos;
  /* -(step+1)+1 = -step, without overflow for minint */
  LLVMValueRef nstep = LLVMBuildAdd(G->B, LLVMBuildSub(G->B, cg_i64(G, 0),
                           LLVMBuildAdd(G->B, step, cg_i64(G, 1), ""), ""), cg_i64(G, 1), "");
  LLVMValueRef nd = sconst ? nstep : LLVMBuildSelect(G->B, pos, cg_i64(G, 1), nstep, "");
  LLVMValueRef cneg = LLVMBuildUDiv(G->B, LLVMBuildSub(G->B, init, lim, ""), nd, "");
  return sconst ? cneg : LLVMBuildSelect(G->B, pos, cpos, cneg, "");
}

/* A float loop: init, limit and step as doubles; whether it runs. */
static LLVMValueRef float_prep(CG *G, CgFor *F, CgVal a, CgVal l, CgVal st, LLVMValueRef *init) {
  *init = cg_num_to(G, a, T_F64);
  F->limit = cg_num_to(G, l, T_F64);
  F->fstep = cg_num_to(G, st, T_F64);
  F->pos = LLVMBuildFCmp(G->B, LLVMRealOLT, cg_f64(G, 0.0), F->fstep, "");
  return LLVMBuildSelect(G->B, F->pos, LLVMBuildFCmp(G->B, LLVMRealOLT, F->limit, *init, ""),
                         LLVMBuildFCmp(G->B, LLVMRealOLT, *init, F->limit, ""), "");
}

static void emit_forprep(CG *G, KirInsn *v) {
  KirBlock *b = v->block;
  int line = v->line;
  Type t = G->sp->types[v->id];
  CgFor *F = &G->fors[v->id];
  /* lvm.c's forprep checks the limit, then the step, then the initial value */
  CgVal l = cg_unwrap(G, cg_val(G, v->args[1]), line, v, 1);
  CgVal st = cg_unwrap(G, cg_val(G, v->args[2]), line, v, 2);
  CgVal a = cg_unwrap(G, cg_val(G, v->args[0]), line, v, 0);
  F->kind = t.kind;
  if (t.kind == T_INT) {
    LLVMValueRef skip, step = st.v;
    if (!(LLVMIsAConstantInt(step) && LLVMConstIntGetSExtValue(step) != 0))
      cg_check(G, LLVMBuildICmp(G->B, LLVMIntNE, step, cg_i64(G, 0), ""), KE_FORSTEP0, line,
               NULL, NULL, NULL, NULL);
    LLVMValueRef count = int_count(G, a.v, l, step, &skip);
    F->rem = cg_alloca(G, G->i64, "rem");
    LLVMBuildStore(G->B, count, F->rem);
    F->step = step;
    G->vals[v->id] = cg_mk(TY(T_INT), a.v);
    KirLoop *L = b->succ[0]->loop;
    if (L && L->prep == v && b->loop && for_covers(G, b->loop) == L) {
      /* the loop around charges here (see for_covers): one when L is skipped */
      LLVMBasicBlockRef t0 = add_edge(G, b, b->succ[0]), sk = cg_bb(G, "skipcharge");
      LLVMBuildCondBr(G->B, LLVMBuildNot(G->B, skip, ""), t0, sk);
      LLVMPositionBuilderAtEnd(G->B, sk);
      cg_poll_charge(G, cg_i64(G, 1));
      LLVMBuildBr(G->B, add_edge(G, b, b->succ[1]));
      return;
    }
    branch(G, b, LLVMBuildNot(G->B, skip, ""));
    return;
  }
  if (t.kind == T_F64) {
    LLVMValueRef init;
    cg_check(G, LLVMBuildFCmp(G->B, LLVMRealUNE, cg_num_to(G, st, T_F64), cg_f64(G, 0.0), ""),
             KE_FORSTEP0, line, NULL, NULL, NULL, NULL);
    LLVMValueRef skip = float_prep(G, F, a, l, st, &init);
    G->vals[v->id] = cg_mk(TY(T_F64), init);
    branch(G, b, LLVMBuildNot(G->B, skip, ""));
    return;
  }
  /* T_NUMBER: an integer loop when the initial value and the step are
  ** integers at run time, else a float loop; the control variable is a
  ** number whose tag says which */
  LLVMValueRef aint = a.t.kind == T_INT ? cg_i1(G, 1) : a.t.kind == T_NUMBER ? LLVMBuildNot(G->B, a.isf, "") : cg_i1(G, 0);
  LLVMValueRef sint = st.t.kind == T_INT ? cg_i1(G, 1) : st.t.kind == T_NUMBER ? LLVMBuildNot(G->B, st.isf, "") : cg_i1(G, 0);
  LLVMValueRef dyn = LLVMBuildAnd(G->B, aint, sint, "");
  LLVMValueRef ival = a.t.kind == T_INT || a.t.kind == T_NUMBER ? a.v : cg_i64(G, 0);
  LLVMValueRef sval = st.t.kind == T_INT || st.t.kind == T_NUMBER ? st.v : cg_i64(G, 0);
  CgVal af = a.t.kind == T_NUMBER ? cg_mk(TY(T_F64), cg_num_to(G, a, T_F64)) : a;
  CgVal sf = st.t.kind == T_NUMBER ? cg_mk(TY(T_F64), cg_num_to(G, st, T_F64)) : st;
  LLVMValueRef zero = LLVMBuildSelect(G->B, dyn, LLVMBuildICmp(G->B, LLVMIntEQ, sval, cg_i64(G, 0), ""),
                                      LLVMBuildFCmp(G->B, LLVMRealOEQ, cg_num_to(G, sf, T_F64), cg_f64(G, 0.0), ""), "");
  cg_check(G, LLVMBuildNot(G->B, zero, ""), KE_FORSTEP0, line, NULL, NULL, NULL, NULL);
  LLVMValueRef istep = LLVMBuildSelect(G->B, dyn, sval, cg_i64(G, 1), "");
  LLVMValueRef iskip, finit;
  LLVMValueRef count = int_count(G, ival, l, istep, &iskip);
  LLVMValueRef fskip = float_prep(G, F, af, l, sf, &finit);
  F->rem = cg_alloca(G, G->i64, "rem");
  LLVMBuildStore(G->B, count, F->rem);
  F->step = istep;
  F->dyn = dyn;
  Type nt = TY(T_NUMBER);
  nt.fsub = T_F64;
  CgVal r = cg_mk(nt, LLVMBuildSelect(G->B, dyn, ival, LLVMBuildBitCast(G->B, finit, G->i64, ""), ""));
  r.isf = LLVMBuildNot(G->B, dyn, "");
  G->vals[v->id] = r;
  branch(G, b, LLVMBuildNot(G->B, LLVMBuildSelect(G->B, dyn, iskip, fskip, ""), ""));
}

static void emit_forloop(CG *G, KirInsn *v) {
  KirBlock *b = v->block;
  KirInsn *prep = v->args[1];
  CgFor *F = &G->fors[prep->id];
  CgVal i = cg_val(G, v->args[0]);
  LLVMValueRef imore = NULL, inext = NULL, fmore = NULL, fnext = NULL;
  if (F->kind == T_INT && G->chunk && G->chunk[prep->id] && !G->versioning) {   /* not in a
                                                           checked copy (cg_version.c) */
    G->vals[v->id] = cg_mk(TY(T_INT), LLVMBuildAdd(G->B, i.v, F->step, ""));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(G->B);
    strip_latch(G, v, F, G->chunk[prep->id]);
    cg_loop_hints(G, b->loop, LLVMGetBasicBlockTerminator(latch));   /* cg_peel.c */
    return;
  }
  /* the integer and the float copy of a loop of either kind (cg_version.c
  ** emit_kind_split): the kind its forprep decided, a constant in each */
  LLVMValueRef dyn = F->dyn;
  if (G->kindsplit && G->kindsplit[prep->block->succ[0]->id]) dyn = cg_i1(G, G->kindint == prep);
  if (F->kind == T_INT || F->kind == T_NUMBER) {
    LLVMValueRef rem = LLVMBuildLoad2(G->B, G->i64, F->rem, "");
    imore = LLVMBuildICmp(G->B, LLVMIntNE, rem, cg_i64(G, 0), "");
    LLVMBuildStore(G->B, LLVMBuildSub(G->B, rem, cg_i64(G, 1), ""), F->rem);
    inext = LLVMBuildAdd(G->B, i.v, F->step, "");
  }
  if (F->kind == T_F64 || F->kind == T_NUMBER) {
    LLVMValueRef x = F->kind == T_NUMBER ? LLVMBuildBitCast(G->B, i.v, G->f64, "") : i.v;
    fnext = LLVMBuildFAdd(G->B, x, F->fstep, "");
    fmore = LLVMBuildSelect(G->B, F->pos, LLVMBuildFCmp(G->B, LLVMRealOLE, fnext, F->limit, ""),
                            LLVMBuildFCmp(G->B, LLVMRealOLE, F->limit, fnext, ""), "");
  }
  if (F->kind == T_INT) {
    G->vals[v->id] = cg_mk(TY(T_INT), inext);
    branch(G, b, imore);
    if (!G->versioning || G->plaincopy)
      cg_loop_hints(G, b->loop, LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(G->B)));
  } else if (F->kind == T_F64) {
    G->vals[v->id] = cg_mk(TY(T_F64), fnext);
    branch(G, b, fmore);
  } else {
    Type nt = TY(T_NUMBER);
    nt.fsub = T_F64;
    CgVal r = cg_mk(nt, LLVMBuildSelect(G->B, dyn, inext, LLVMBuildBitCast(G->B, fnext, G->i64, ""), ""));
    r.isf = LLVMBuildNot(G->B, dyn, "");
    G->vals[v->id] = r;
    branch(G, b, LLVMBuildSelect(G->B, dyn, imore, fmore, ""));
  }
}

/* ---- Calls and returns ------------------------------------------------------ */

/* Whether a compiled call from v charges the poll countdown (a call of a
** Lua function with a callee specialization). */
static KtySpec *charged_callee(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_CALL || (v->flags & KIR_F_TFOR) || sp->callees == NULL) return NULL;
  int k = sp->types[v->args[0]->id].kind;
  return k == T_FUNC || k == T_CLOSURE || (k == T_LUA && sp->direct && sp->direct[v->id])
         ? sp->callees[v->id] : NULL;
}

/* Whether specialization `from` can reach `to` through calls (seen: one
** byte a specialization, zeroed). */
static int spec_reaches(CG *G, KtySpec *from, const KtySpec *to, uint8_t *seen) {
  if (from == to) return 1;
  if (from->index < 0 || from->index >= G->S->nspecs || seen[from->index]) return 0;
  seen[from->index] = 1;
  KirFunc *f = from->ir;
  for (int b = 0; b < f->nblocks; b++) {
    if (!from->live[b]) continue;
    for (int i = 0; i < f->blocks[b]->ninsns; i++) {
      KtySpec *c = charged_callee(from, f->blocks[b]->insns[i]);
      if (c && spec_reaches(G, c, to, seen)) return 1;
    }
  }
  return 0;
}

/* Whether a call of callee can come back to the function being compiled
** (a cycle of the typed call graph). */
static int call_recurs(CG *G, KtySpec *callee) {
  uint8_t *seen = cg_zalloc(G, (size_t)G->S->nspecs);
  return spec_reaches(G, callee, G->sp, seen);
}

int cg_charged_call(CG *G, const KirInsn *v) {
  KtySpec *c = charged_callee(G->sp, v);
  return c != NULL && call_recurs(G, c);
}

/* What call v charges the poll countdown. Calls charge only where they
** can recur: a callee outside every recursion cycle through its caller
** ends on its own unless it loops or recurses, and its loops and its own
** recursive calls charge. And a block charges all of its recursive calls
** at its first one (its code runs straight through; a failing call returns
** at once): fib's two calls charge once, which halves the counter's
** load-store chain through memory that every call otherwise waits on. */
static int call_charge(CG *G, KirInsn *v) {
  KirBlock *b = v->block;
  int i = 0, n = 0;
  while (i < b->ninsns && b->insns[i] != v) {
    KtySpec *c = charged_callee(G->sp, b->insns[i++]);
    if (c && call_recurs(G, c)) return 0;   /* charged there */
  }
  for (; i < b->ninsns; i++) {
    KtySpec *c = charged_callee(G->sp, b->insns[i]);
    if (c && call_recurs(G, c)) n++;
  }
  return n;
}

/* A pure function that recurses only into itself (no other charged
** callee) carries its call depth in a register: its recursive calls then
** charge at one level in (skip + 1) only, sparing the others the
** countdown's load-store chain through memory (bench fib, against
** KJIT_BENCH_NOPOLL: 1.09 -> 1.02). Between two charging levels lie at
** most skip levels of its own calls, each call making at most F recursive
** calls (F: its charged call sites; its loops charge on their own), so a
** charging call charges for itself and those: 1 + F + ... + F^skip per
** call site, the same bound on the work between polls as a charge at
** every call. Returns skip (0: every call charges) and the span. */
static int sampled_levels(CG *G, int *span) {
  KirFunc *f = G->sp->ir;
  int fan = 0;
  for (int b = 0; b < f->nblocks; b++) {
    if (!G->sp->live[b]) continue;
    for (int i = 0; i < f->blocks[b]->ninsns; i++) {
      KtySpec *c = charged_callee(G->sp, f->blocks[b]->insns[i]);
      if (c == NULL) continue;
      if (c != G->sp) return 0;
      fan++;
    }
  }
  int skip = fan <= 2 ? 7 : fan <= 4 ? 3 : fan <= 16 ? 1 : 0;   /* (skip + 1): a power of 2 */
  *span = 1;
  for (int k = 0, p = 1; k < skip; k++) *span += p *= fan;
  return skip;
}

/* Whether callee is a leaf: pure, no loops (so no poll, whose hook may run
** Lua), no calls of any kind (compiled, C, builtins that allocate) and
** small, so its frame is a few scalars. A call of it needs no C stack
** check: the limit keeps MIN_MARGIN (runtime.c) for the C code between
** two checks, which such a frame does not approach. spectral-norm's
** A(i, j), called 3.6M times from Av's loop. */
static int leaf_callee(CG *G, const KtySpec *callee) {
  if (!cg_is_pure(G, callee) || callee->ir->nloops != 0) return 0;
  KirFunc *f = callee->ir;
  int n = 0;
  for (int b = 0; b < f->nblocks; b++) {
    if (!callee->live[b]) continue;
    for (int i = 0; i < f->blocks[b]->ninsns; i++) {
      if (f->blocks[b]->insns[i]->op == KIR_CALL) return 0;
      n++;
    }
  }
  return n <= 64;
}

static void emit_lua_call(CG *G, KirInsn *v, KtySpec *callee) {
  int line = v->line;
  CgVal args[KJIT_MAXARGS + KJIT_MAXRETS];
  int n = cg_operands(G, v, 1, args, KJIT_MAXARGS + KJIT_MAXRETS);
  LLVMValueRef av[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 3 * KJIT_MAXRETS + 1];
  int na = 0;
  G->has_calls = 1;
  for (int i = 0; i < callee->nparams; i++) {
    Type pt = callee->args[i];
    CgVal x = i < n ? args[i] : cg_mk(TY(T_NIL), NULL);
    if (x.t.kind == T_TABLE && pt.kind == T_LUA)   /* a frozen table passed on (ir_type.c t_call) */
      x = cg_lua_to(G, x, cg_lua_arg_slot(G, v, i), v);
    x = cg_convert(G, x, pt, line);
    na += pack(x, av + na);
  }
  if (callee->clos)   /* a function literal: its upvalues follow */
    for (int u = 0; u < KTY_NCAPS(callee); u++) {
      CgVal x = cg_clos_upval(G, v, callee, u);
      x.t = callee->args[callee->nparams + u];
      na += pack(x, av + na);
    }
  for (int j = 0; j < callee->nvar; j++) {   /* a vararg callee: the values of its '...' */
    Type pt = callee->args[KTY_VARBASE(callee) + j];
    CgVal x = callee->nparams + j < n ? args[callee->nparams + j] : cg_mk(TY(T_NIL), NULL);
    na += pack(cg_convert(G, x, pt, line), av + na);
  }
  LLVMValueRef rp[KJIT_MAXRETS][3 + KJIT_MAXDIMS];
  int nr = callee->nret > 0 ? callee->nret : 0;
  int pure = cg_is_pure(G, callee), mepure = cg_is_pure(G, G->sp);
  /* A pure caller runs on after a pure callee failed; an ordinary callee
  ** neither tests for a recorded error nor keeps it, so given the garbage
  ** it would raise an error of its own over the first one (difffuzz
  ** 420413). The pure set is closed under calls (pure_convention_fits,
  ** kfa_mark_pure), so a pure caller never has one. */
  if (mepure && !pure) cg_error(G, v, "internal error: a pure function calls an ordinary one");
  for (int r = 0; r < nr && !pure; r++) {
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int np = parts(G, callee->rets[r], tys);
    for (int k = 0; k < np; k++) av[na++] = rp[r][k] = cg_alloca(G, tys[k], "ret");
    if (callee->rets[r].kind == T_LUA)   /* the callee fills this slot of ours */
      LLVMBuildStore(G->B, cg_lua_result_slot(G, v, r), rp[r][0]);
  }
  LLVMValueRef cntp = NULL;   /* a callee whose returns differ in length: how many */
  if (callee->dyncount && !pure) av[na++] = cntp = cg_alloca(G, G->i32, "nres");
  if (G->pollctr && !cg_poll_in_err(G, callee)) av[na++] = G->pollctr;
  av[na++] = G->err;
  int charge = G->pollctr ? call_charge(G, v) : 0;
  int span = 1, levels = pure && mepure && G->pollctr ? sampled_levels(G, &span) : 0;
  int skip = charge > 0 ? levels : 0;
  /* a call the block's first recursive call charges for, at the same depth */
  int checked = levels > 0 && charge == 0 && charged_callee(G->sp, v) && call_recurs(G, callee);
  LLVMValueRef d = NULL;
  if (pure) {
    /* a pure recursion may become a loop (no stack growth to check): its
    ** depth counts instead, so infinite recursion still ends in "stack
    ** overflow". Where recursive calls charge at sampled depths only
    ** (sampled_levels), the depth is checked there only, by the block's
    ** charging call: at most skip levels past the limit (the interpreter's
    ** own limit differs anyway), and a compare and a branch a call less,
    ** which pays for the sampling test (bench fib(20), instructions a
    ** call against polls off, KJIT_TIER=0: 1.024 -> 0.962). Tried before
    ** (d84aae8) and reverted when timings on another machine could not
    ** tell it from noise; instruction counts can. */
    d = mepure ? LLVMBuildAdd(G->B, G->depth, cg_i32(G, 1), "") : cg_i32(G, 1);
    if (skip == 0 && !checked)
      cg_check(G, LLVMBuildICmp(G->B, LLVMIntSLE, d, cg_i32(G, CG_PURE_MAXDEPTH), ""), KE_STACK,
               line, NULL, NULL, NULL, NULL);
    av[na++] = d;
  }
  int leaf = leaf_callee(G, callee);
  if (G->target->stack_checks && mepure && !leaf) {
    /* an escaped alloca would stop LLVM marking the calls after it as
    ** tail calls, which tail-recursion elimination needs: a pure function
    ** reads its frame address instead */
    LLVMValueRef zero = cg_i32(G, 0);
    LLVMTypeRef i8p = G->i8p;
    unsigned id = LLVMLookupIntrinsicID("llvm.frameaddress", 17);
    LLVMValueRef fa = LLVMGetIntrinsicDeclaration(G->M, id, &i8p, 1);
    LLVMValueRef probe = LLVMBuildCall2(G->B, LLVMIntrinsicGetType(G->C, id, &i8p, 1), fa, &zero, 1, "");
    LLVMValueRef spv = LLVMBuildPtrToInt(G->B, probe, G->i64, "");
    LLVMValueRef lim = LLVMBuildLoad2(G->B, G->i64, LLVMBuildStructGEP2(G->B, G->errty, G->err, 7, ""), "");
    cg_check(G, LLVMBuildICmp(G->B, LLVMIntUGT, spv, lim, ""), KE_STACK, line, NULL, NULL, NULL, NULL);
  } else if (G->target->stack_checks && !leaf) {
    /* compiled frames live on the C stack: stop before it runs out and
    ** report it at this call, as Lua does */
    LLVMValueRef probe = cg_alloca(G, G->i64, "sp");
    LLVMValueRef spv = LLVMBuildPtrToInt(G->B, probe, G->i64, "");
    LLVMValueRef lim = LLVMBuildLoad2(G->B, G->i64, LLVMBuildStructGEP2(G->B, G->errty, G->err, 7, ""), "");
    cg_check(G, LLVMBuildICmp(G->B, LLVMIntUGT, spv, lim, ""), KE_STACK, line, NULL, NULL, NULL, NULL);
  }
  if (skip > 0) {
    /* see sampled_levels: only calls at depths 0 mod skip + 1 charge,
    ** each for its calls and the unsampled levels below them */
    LLVMBasicBlockRef yes = cg_bb(G, "charge"), done = cg_bb(G, "charged");
    LLVMValueRef lvl = LLVMBuildURem(G->B, G->depth, cg_i32(G, skip + 1), "");
    LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, lvl, cg_i32(G, 0), ""), yes, done);
    LLVMPositionBuilderAtEnd(G->B, yes);
    cg_check(G, LLVMBuildICmp(G->B, LLVMIntSLE, d, cg_i32(G, CG_PURE_MAXDEPTH), ""), KE_STACK,
             line, NULL, NULL, NULL, NULL);
    cg_poll_charge(G, cg_i64(G, (int64_t)charge * span));
    LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, done);
  } else if (charge > 0) {
    cg_poll_charge(G, cg_i64(G, charge));
  }
  CgFunc *cf = &G->funcs[callee->index];
  if (cf->fn == NULL) cg_error(G, v, "internal error: a call of a specialization not emitted");
  /* an ordinary caller runs only while err->kind is 0 (each failure
  ** returns at once), and says so before a pure callee, as the entry does
  ** (cg_entry.c): where LLVM inlines the callee, its test of an earlier
  ** error folds, and so does the test after it when the callee cannot fail
  ** (spectral-norm's A(i, j): two loads and branches a call) */
  if (pure && !mepure) cg_store_err(G, 0, cg_i32(G, 0));
  LLVMValueRef st = LLVMBuildCall2(G->B, cf->fnty, cf->fn, av, (unsigned)na, "");
  cg_lview_forget(G);   /* the callee may change any table (cg_luaview.c) */
  if (pure) {
    /* the result in a register, a failure in err->kind; a pure caller
    ** carries on (nothing to undo, the first error stays): no test, so
    ** `return f(n - 1) + 1` stays a tail position */
    if (!mepure) {
      LLVMValueRef k = LLVMBuildLoad2(G->B, G->i32, LLVMBuildStructGEP2(G->B, G->errty, G->err, 0, ""), "");
      LLVMBasicBlockRef pfail = cg_bb(G, "callfail"), pok = cg_bb(G, "callok");
      cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, k, cg_i32(G, 0), ""), pok, pfail));
      LLVMPositionBuilderAtEnd(G->B, pfail);
      cg_fail_ret(G);
      LLVMPositionBuilderAtEnd(G->B, pok);
    }
    G->results[v->id] = ka_alloc(G->S->A, sizeof(CgVal) * 2);
    if (G->results[v->id] == NULL) cg_error(G, v, "not enough memory");
    G->nresults[v->id] = 1;
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    cg_pure_ret_parts(G, callee->rets[0], st, pv);
    G->results[v->id][0] = G->vals[v->id] = unpack(callee->rets[0], pv);
    return;
  }
  LLVMBasicBlockRef fail = cg_bb(G, "callfail"), cont = cg_bb(G, "callok");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""), cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  /* error("msg", 2) in the callee: the position is this call's line. Not
  ** for a tail call (`return h(x)`): the interpreter's h then replaces this
  ** function's frame, so level 2 names this function's caller, which
  ** the level left as it is names (found/tail-call-error-level.lua) */
  if (!(v->flags & KIR_F_TAIL)) {
    LLVMValueRef lp = LLVMBuildStructGEP2(G->B, G->errty, G->err, 4, "");
    LLVMValueRef lv = LLVMBuildLoad2(G->B, G->i64, lp, "");
    LLVMValueRef kind = LLVMBuildLoad2(G->B, G->i32, LLVMBuildStructGEP2(G->B, G->errty, G->err, 0, ""), "");
    LLVMValueRef pending = LLVMBuildAnd(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, kind, cg_i32(G, KE_USER), ""),
                                        LLVMBuildICmp(G->B, LLVMIntSGT, lv, cg_i64(G, 0), ""), "");
    LLVMBasicBlockRef move = cg_bb(G, "errlevel"), out = cg_bb(G, "errout");
    LLVMBuildCondBr(G->B, pending, move, out);
    LLVMPositionBuilderAtEnd(G->B, move);
    LLVMBuildStore(G->B, LLVMBuildSub(G->B, lv, cg_i64(G, 1), ""), lp);
    cg_store_err(G, 1, cg_i32(G, line));
    cg_store_err(G, 6, G->chunkname);
    LLVMBuildBr(G->B, out);
    LLVMPositionBuilderAtEnd(G->B, out);
  }
  LLVMBuildRet(G->B, st);   /* (the caller is not pure: see above) */
  LLVMPositionBuilderAtEnd(G->B, cont);
  if (cntp) G->ncount[v->id] = LLVMBuildLoad2(G->B, G->i32, cntp, "");
  G->results[v->id] = ka_alloc(G->S->A, sizeof(CgVal) * (size_t)(nr + 1));
  if (G->results[v->id] == NULL) cg_error(G, v, "not enough memory");
  G->nresults[v->id] = nr;
  for (int r = 0; r < nr; r++) {
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int np = parts(G, callee->rets[r], tys);
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    for (int k = 0; k < np; k++) pv[k] = LLVMBuildLoad2(G->B, tys[k], rp[r][k], "");
    G->results[v->id][r] = unpack(callee->rets[r], pv);
  }
  if (nr > 0) G->vals[v->id] = G->results[v->id][0];
}

static void emit_call(CG *G, KirInsn *v);
void cg_func_call(CG *G, const KirInsn *v) { emit_call(G, (KirInsn *)v); }   /* (v itself unchanged) */

static void emit_call(CG *G, KirInsn *v) {
  Type ft = G->sp->types[v->args[0]->id];
  /* kjit.prange (cg_prange.c): the call setting up the loop, its tfor call */
  if ((v->flags & KIR_F_TFOR) && kty_calls_value(G->sp, v)) { cg_fn_call(G, v); return; }
  if (v->flags & KIR_F_TFOR) { cg_prange_tfor(G, v); return; }
  if (ft.kind == T_BUILTIN && (ft.ref == B_KJIT_PRANGE || ft.ref == B_IPAIRS)) {
    cg_prange_setup(G, v);   /* ipairs(a): a serial loop over 1..#a */
    return;
  }
  if (G->sp->types[v->id].kind == T_UNKNOWN && (ft.kind == T_BUILTIN || G->sp->callees[v->id] == NULL)) {
    /* an argument never produced (a callee's result past the first that
    ** it never returns): the call never runs */
    G->notrun[v->id] = 1;
    return;
  }
  if (ft.kind == T_BUILTIN) {
    CgVal args[KJIT_MAXARGS];
    /* (those it reads: the typer's cut) */
    int n = kty_builtin_reads(ft.ref, cg_operands(G, v, 1, args, KJIT_MAXARGS));
    G->vals[v->id] = cg_builtin(G, v, ft.ref, args, n);
    return;
  }
  KtySpec *callee = G->sp->callees[v->id];
  if (ft.kind == T_EXTERN && callee == NULL) { cg_cuda_extern_call(G, v); return; }   /* cg_cuda.c */
  /* (a T_EXTERN with a callee: its sim implementation, off the GPU) */
  if ((ft.kind != T_FUNC && ft.kind != T_CLOSURE && ft.kind != T_EXTERN &&
       !(ft.kind == T_LUA && callee && callee->clos)) || callee == NULL)   /* (kcl_direct_call) */
    cg_error(G, v, "internal error: call without a callee");
  emit_lua_call(G, v, callee);
}

static void emit_ret(CG *G, KirInsn *v) {
  KtySpec *sp = G->sp;
  CgVal vals[KJIT_MAXRETS];
  int n = cg_operands(G, v, 0, vals, KJIT_MAXRETS);
  if (cg_is_pure(G, sp)) {
    LLVMBuildRet(G->B, pure_ret_pack(G, cg_convert(G, n > 0 ? vals[0] : cg_mk(TY(T_NIL), NULL), sp->rets[0], v->line)));
    return;
  }
  cg_free_scratch(G);   /* cg_alloc.c: the arrays that die with the function */
  if (G->retcount) cg_store_retcount(G, v, n);   /* cg_vararg.c */
  for (int i = 0; i < sp->nret; i++) {
    CgVal x = i < n ? vals[i] : cg_mk(TY(T_NIL), NULL);
    if (sp->rets[i].kind == T_LUA) {   /* a number in registers, else into the caller's slot */
      CgVal r = cg_lua_to(G, x, LLVMBuildLoad2(G->B, G->i32, G->retptrs[i][0], ""), v);
      LLVMBuildStore(G->B, r.flag, G->retptrs[i][1]);
      LLVMBuildStore(G->B, r.dims[0], G->retptrs[i][2]);
      continue;
    }
    x = cg_convert(G, x, sp->rets[i], v->line);
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    int np = pack(x, pv);
    for (int k = 0; k < np; k++) LLVMBuildStore(G->B, pv[k], G->retptrs[i][k]);
  }
  cg_lua_end(G);
  LLVMBuildRet(G->B, cg_i32(G, 0));
}

/* ---- Instructions -------------------------------------------------------------- */

int cg_never_produced(CG *G, const KirInsn *v) {
  return G->sp->types[v->id].kind == T_UNKNOWN || (G->notrun && G->notrun[v->id]);
}

/* An operation that raises whenever it runs (the typer's raises[]): Lua's
** message, the operand described as Lua describes it, at its line. */
static const char *raise_message(CG *G, KirInsn *v, const char *words, const char *info) {
  size_t n = strlen(words), m = strlen(info);
  char *msg = ka_alloc(G->S->A, n + m + 1);
  if (msg == NULL) cg_error(G, v, "not enough memory");
  memcpy(msg, words, n);
  memcpy(msg + n, info, m + 1);
  return msg;
}

static void emit_raise(CG *G, KirInsn *v) {
  const KtyRaise *r = &G->sp->raises[v->id];
  const char *info = r->argi >= 0 ? cg_varinfo(G, v, r->argi) : "";
  const char *msg = raise_message(G, v, r->msg, info);
  if (r->falsy && r->argi >= 0 && !cg_never_produced(G, v->args[r->argi])) {
    /* a number-or-nil (-false): Lua names what it holds ("attempt to index
    ** a nil value" where it is nil, "... a number value" elsewhere) */
    CgVal x = cg_val(G, v->args[r->argi]);
    const char *falsy = raise_message(G, v, r->falsy, info);
    if (x.t.kind == T_MAYBE && x.flag)
      cg_check(G, x.flag, KE_TYPEERR, v->line, cg_i64(G, r->nopos), NULL, NULL, falsy);
    else if (x.t.kind == T_NIL || x.t.kind == T_BOOL)   /* (a peeled copy's own type) */
      msg = falsy;
  }
  cg_raise(G, KE_TYPEERR, v->line, cg_i64(G, r->nopos), NULL, NULL, msg);
}

static void emit_insn(CG *G, KirInsn *v) {
  KtySpec *sp = G->sp;
  Type t = sp->types[v->id];
  cg_debug_line(G, v->line);   /* lineinfo (cg_debug.c) */
  if (sp->raises[v->id].msg) { emit_raise(G, v); G->notrun[v->id] = 1; return; }
  /* an operand never produced (it raised, or a call that never returns):
  ** v never runs */
  for (int i = 0; i < v->nargs; i++)
    if (v->op != KIR_PHI && cg_never_produced(G, v->args[i])) {
      G->notrun[v->id] = 1;
      cg_chain_notrun(G, v);   /* (cg_chain.c) */
      return;
    }
  if (!cg_defer_straight(G, v)) cg_defer_flush(G);   /* kernels: cg_defer.c */
  if (G->narrowing && cg_version_narrow_insn(G, v)) return;   /* an i32 counter */
  /* a call folded by the typer (math.max of constants) is its constant */
  if (v->op == KIR_CALL && sp->varop[v->id]) { cg_select(G, v); return; }   /* cg_vararg.c */
  if (kty_calls_value(sp, v)) { cg_fn_call(G, v); return; }   /* cg_callvalue.c */
  if (v->op == KIR_SETUPVAL) { cg_fn_setupval(G, v); return; }   /* cg_callvalue.c */
  if (v->op == KIR_NEWCELL || v->op == KIR_GETCELL || v->op == KIR_SETCELL) {
    cg_cell(G, v);   /* a local shared with literals: cg_closure.c */
    return;
  }
  if (sp->consts[v->id].kind == T_BUF && sp->types[v->id].kind == T_BUF) {
    G->vals[v->id] = cg_const_array(G, v);   /* a kernel's constant array: cg_frozen.c */
    return;
  }
  if (v->op == KIR_CALL && (sp->consts[v->id].kind == T_UNKNOWN ||
                            sp->types[v->args[0]->id].kind != T_BUILTIN)) {
    if (cg_chain_take(G, v)) return;   /* math.sqrt of a Lua value in a chain: cg_chain.c */
    emit_call(G, v);
    return;
  }
  if ((v->op == KIR_SETINDEX || v->op == KIR_SETFIELD || v->op == KIR_SETLIST) &&
      (sp->types[v->args[0]->id].kind == T_LUA ||
       (v->op == KIR_SETFIELD && sp->liveref && sp->liveref[v->args[0]->id]))) {   /* (a global) */
    if (cg_chain_take(G, v)) return;   /* a field written in a chain: cg_chain.c */
    if (v->op == KIR_SETLIST) cg_lua_setlist(G, v); else cg_lua_store(G, v);
    return;
  }
  if (v->op == KIR_SETINDEX) { cg_setindex(G, v); return; }
  if (v->op == KIR_SETFIELD) { cg_rec_setfield(G, v); return; }   /* records only (the typer) */
  if (t.kind == T_UNKNOWN) return;   /* never produced */
  if (t.kind == T_LUA || ((v->op == KIR_EQ || v->op == KIR_LT || v->op == KIR_LE) &&
                          (sp->types[v->args[0]->id].kind == T_LUA ||
                           sp->types[v->args[1]->id].kind == T_LUA)) ||
      cg_lua_eq_ident(sp, v)) {
    if (cg_select_only(G, v)) return;   /* select, not loaded: cg_vararg.c */
    if ((v->op == KIR_GETUPVAL || v->op == KIR_GETFIELD || v->op == KIR_INDEX) && sp->upvref &&
        sp->upvref[v->id]) {
      G->vals[v->id] = cg_fn_getupval(G, v);   /* an upvalue compiled code assigns */
      return;
    }
    if (sp->liveref && sp->liveref[v->id]) { G->vals[v->id] = cg_lua_live(G, v); return; }
    switch (v->op) {
    case KIR_GETFIELD: case KIR_INDEX:
      if (cg_chain_take(G, v)) return;   /* a field read in a chain: cg_chain.c */
      G->vals[v->id] = cg_lua_index(G, v);
      return;
    case KIR_NEWTABLE: G->vals[v->id] = cg_lua_newtable(G, v); return;
    case KIR_LEN: G->vals[v->id] = cg_lua_len(G, v); return;
    case KIR_UNM: case KIR_BNOT:
      if (cg_chain_take(G, v)) return;   /* unary minus in a chain: cg_chain.c */
      G->vals[v->id] = cg_lua_arith(G, v);
      return;
    case KIR_EQ: case KIR_LT: case KIR_LE:
      if (cg_chain_take(G, v)) return;   /* a comparison in a chain: cg_chain.c */
      G->vals[v->id] = cg_lua_compare(G, v);
      return;
    case KIR_CONCAT: G->vals[v->id] = cg_lib_concat(G, v); return;   /* cg_lib.c */
    case KIR_CLOSURE: cg_closure_box(G, v); return;   /* it escapes: cg_closure.c */
    case KIR_GETUPVAL:   /* a literal's captured Lua value: set up front */
      if (sp->clos && sp->nparams + v->aux < sp->nargs) break;
      cg_error(G, v, "internal error: 'getupval' of a Lua value");
      break;
    case KIR_PARAM: case KIR_PHI: case KIR_RESULT: case KIR_VARARG: break;
    default:
      if (cg_chain_take(G, v)) return;   /* an operation of a chain: cg_chain.c */
      if (KIR_ISARITH(v->op)) { G->vals[v->id] = cg_lua_arith(G, v); return; }
      cg_error(G, v, "internal error: '%s' of a Lua value", kir_opname[v->op]);
    }
  }
  if (sp->consts[v->id].kind != T_UNKNOWN && t.kind != T_BUF && t.kind != T_SHAPE) return;
  switch (v->op) {
  case KIR_PARAM: case KIR_PHI: case KIR_VARARG: break;   /* set up front */
  case KIR_UNDEF: case KIR_NIL: case KIR_TRUE: case KIR_FALSE: case KIR_INT: case KIR_FLT:
  case KIR_STR: case KIR_GETUPVAL:
    break;   /* constants */
  case KIR_CLOSURE: cg_closure_make(G, v); break;   /* cg_closure.c */
  case KIR_NEWTABLE: case KIR_SETLIST: cg_ctor(G, v); break;   /* cg_alloc.c */
  case KIR_GETFIELD: G->vals[v->id] = cg_getfield(G, v); break;
  case KIR_INDEX:   /* a frozen table's element by a computed key: cg_frozen.c */
    G->vals[v->id] = sp->types[v->args[0]->id].kind == T_TABLE ? cg_frozen_index(G, v) : cg_index(G, v);
    break;
  case KIR_LEN: G->vals[v->id] = cg_len(G, v); break;
  case KIR_UNM: case KIR_BNOT: case KIR_NOT: G->vals[v->id] = cg_unary(G, v); break;
  case KIR_EQ: case KIR_LT: case KIR_LE: G->vals[v->id] = cg_compare(G, v); break;
  case KIR_CONCAT:   /* a Lua value (a string made when it runs), or a constant */
    G->vals[v->id] = t.kind == T_LUA ? cg_lib_concat(G, v) : cg_mk(t, NULL);
    break;
  case KIR_RESULT: {
    const KirInsn *c = v->args[0];
    if (G->results[c->id] && v->aux < G->nresults[c->id]) G->vals[v->id] = G->results[c->id][v->aux];
    break;
  }
  default:
    if (KIR_ISARITH(v->op) && cg_chain_take(G, v)) break;   /* on a chain's sqrt: cg_chain.c */
    if (KIR_ISARITH(v->op)) { G->vals[v->id] = cg_arith(G, v); break; }
    cg_error(G, v, "'%s' is not supported by the bytecode code generator", kir_opname[v->op]);
  }
}

static void store_spill(CG *G, const KirInsn *v);

/* `a and b` tested by one branch (cg_fuse.c says when and why): the next
** block's instructions here, then a branch on both tests to where the next
** block went when both hold, and to the common exit otherwise. Its own
** LLVM block in this copy is left unreachable (emit_block). */
static int fuse_branch(CG *G, KirBlock *b) {
  KirBlock *s = cg_fuse_next(G, b);
  if (s == NULL) return 0;
  LLVMValueRef (*tab)[3 + KJIT_MAXDIMS];
  LLVMBasicBlockRef sbb = cg_edge_target(G, b, s, &tab);
  if (G->nfused == G->capfused) {
    int cap = G->capfused ? 2 * G->capfused : 16;
    LLVMBasicBlockRef *n = cg_zalloc(G, sizeof *n * (size_t)cap);
    if (G->nfused) memcpy(n, G->fusedbb, sizeof *n * (size_t)G->nfused);
    G->fusedbb = n;
    G->capfused = cap;
  }
  G->fusedbb[G->nfused++] = sbb;
  int si = b->succ[0] == s ? 0 : 1;
  KirBlock *x = b->succ[1 - si];
  LLVMValueRef c1 = cg_truthy(G, cg_val(G, b->term->args[0]));
  if (si == 1) c1 = LLVMBuildNot(G->B, c1, "");
  KirBlock *saved = G->curblock;
  G->curblock = s;
  for (int i = 0; i < s->ninsns; i++) {
    emit_insn(G, s->insns[i]);
    store_spill(G, s->insns[i]);
    cg_lua_kill_after(G, s->insns[i]);
  }
  G->curblock = saved;
  int yi = s->succ[0] == x ? 1 : 0;   /* where s goes when its test holds */
  LLVMValueRef c2 = cg_truthy(G, cg_val(G, s->term->args[0]));
  if (yi == 1) c2 = LLVMBuildNot(G->B, c2, "");
  LLVMValueRef both = LLVMBuildAnd(G->B, c1, c2, "both");
  LLVMBasicBlockRef ty = add_edge(G, s, s->succ[yi]);
  LLVMBasicBlockRef tx = add_edge(G, b, x);
  LLVMBuildCondBr(G->B, both, ty, tx);
  return 1;
}

static void emit_term(CG *G, KirBlock *b) {
  KirInsn *v = b->term;
  cg_defer_flush(G);
  if (v == NULL) { LLVMBuildUnreachable(G->B); return; }
  switch (v->op) {
  case KIR_JMP:
    if (G->sp->edges[b->id] & 1) jump(G, b, 0);
    else LLVMBuildUnreachable(G->B);
    break;
  case KIR_BR:
    if (cg_never_produced(G, v->args[0])) {   /* a test never made (its value raised) */
      LLVMBuildUnreachable(G->B);
      break;
    }
    if (cg_prange_br(G, b, v)) break;   /* a prange loop's header test */
    if (cg_count_br(G, b)) break;       /* a counted while loop's (cg_countloop.c) */
    if (fuse_branch(G, b)) break;
    branch(G, b, cg_truthy(G, cg_val(G, v->args[0])));
    break;
  case KIR_RET: case KIR_FORPREP: {
    if (G->sp->raises[v->id].msg) {   /* a bound that is nil, a boolean or an array */
      emit_raise(G, v);
      LLVMBuildUnreachable(G->B);
      break;
    }
    int never = 0;   /* a value returned or a bound never produced: never reached */
    for (int i = 0; i < v->nargs; i++) never |= cg_never_produced(G, v->args[i]);
    if (never) {
      G->notrun[v->id] = 1;   /* a forprep: its loop never runs (in_dead_for) */
      LLVMBuildUnreachable(G->B);
    }
    else if (v->op == KIR_RET) emit_ret(G, v);
    else emit_forprep(G, v);
    break;
  }
  case KIR_FORLOOP: emit_forloop(G, v); break;
  default: LLVMBuildUnreachable(G->B); break;
  }
}

/* ---- Functions ---------------------------------------------------------------- */

static void declare_spec(CG *G, KtySpec *sp) {
  LLVMTypeRef ps[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 3 * KJIT_MAXRETS + 1];
  int n = 0;
  char tb[32];
  G->sp = sp;
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    if (i < sp->nparams && (t.kind == T_CONFLICT || t.kind == T_TABLE ||
                            (t.kind == T_STR && t.ref == 0) ||
                            (t.kind == T_BUILTIN && kty_builtin_libname(t.ref) == NULL &&
                             t.dtype != 1)))   /* (dtype 1: kjit.f32, a constant: no parts) */
      cg_error(G, NULL, "cannot take a %s argument", kty_name(t, tb, sizeof tb));
    n += parts(G, t, ps + n);
  }
  int pure = cg_is_pure(G, sp);
  for (int r = 0; r < sp->nret && !pure; r++) {
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int np = parts(G, sp->rets[r], tys);
    for (int k = 0; k < np; k++) ps[n++] = LLVMPointerType(tys[k], 0);
  }
  if (sp->dyncount && !pure) ps[n++] = LLVMPointerType(G->i32, 0);   /* how many it gave */
  int ctrparam = G->target->poll && !cg_poll_in_err(G, sp);
  if (ctrparam) ps[n++] = LLVMPointerType(G->i64, 0);   /* the poll countdown */
  ps[n++] = G->errp;
  int errparam = n;   /* 1-based attribute index of err */
  if (pure) ps[n++] = G->i32;   /* depth */
  LLVMTypeRef fty = LLVMFunctionType(pure ? pure_ret_ty(G, sp->rets[0]) : G->i32, ps, (unsigned)n, 0);
  char name[96];
  int fi = sp->index;   /* the function: its first specialization */
  for (int i = 0; i < G->S->nspecs; i++) if (G->S->specs[i]->ir == sp->ir) { fi = i; break; }
  /* kjit_f<function>_s<specialization>_<chunk>_<line>: the Lua function
  ** in profiles (the perf map, backend/perfmap.c) and in inspect("llvm");
  ** the chunk name cut to 40 characters of [A-Za-z0-9_] (PTX names allow
  ** no more) */
  int k = snprintf(name, sizeof name, "kjit_f%d_s%d_", fi, sp->index);
  const char *cn = sp->chunkname ? sp->chunkname : "?";
  for (int i = 0; cn[i] && i < 40 && k < (int)sizeof name - 16; i++) {
    char c = cn[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    name[k++] = ok ? c : '_';
  }
  snprintf(name + k, sizeof name - (size_t)k, "_%d", sp->ir->proto->linedefined);
  LLVMValueRef fn = LLVMAddFunction(G->M, name, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  if (G->fastmath) {
    static const char *const attrs[] = { "unsafe-fp-math", "no-nans-fp-math",
      "no-infs-fp-math", "no-signed-zeros-fp-math", "approx-func-fp-math" };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
      LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
          LLVMCreateStringAttribute(G->C, attrs[i], (unsigned)strlen(attrs[i]), "true", 4));
  }
  /* the KErr lives on the dispatcher's stack, where no array points */
  unsigned kind = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(fn, (unsigned)errparam, LLVMCreateEnumAttribute(G->C, kind, 0));
  if (ctrparam)   /* the countdown too: in the entry's frame */
    LLVMAddAttributeAtIndex(fn, (unsigned)errparam - 1, LLVMCreateEnumAttribute(G->C, kind, 0));
  G->funcs[sp->index].fn = fn;
  G->funcs[sp->index].fnty = fty;
}

void cg_make_spill(CG *G, const KirInsn *v, Type t) {
  if (G->spill == NULL) G->spill = cg_zalloc(G, sizeof *G->spill * (size_t)G->sp->ir->ninsns);
  LLVMTypeRef tys[3 + KJIT_MAXDIMS];
  int n = parts(G, t, tys);
  for (int k = 0; k < n; k++) G->spill[v->id][k] = cg_alloca(G, tys[k], "spill");
}

/* Code is about to be emitted ahead of loop L's blocks: a peeled loop's
** entry values, a versioned loop's test. It runs where L's header would,
** so it reads a value of an earlier peeled or versioned loop from the
** slot that loop's copies write (cg_val), never one copy's instruction,
** which does not dominate it. */
void cg_before_loop(CG *G, KirLoop *L) {
  G->curblock = L->header;
  G->chunkpend = G->chunklive = NULL;   /* (code ahead of a loop is in no chunk) */
  G->blockgen++;   /* (no cg_array.c memo of an earlier block applies) */
}

/* Writes v's slot (a value of a peeled loop used after it). */
static void store_spill(CG *G, const KirInsn *v) {
  if (G->spill == NULL || G->spill[v->id][0] == NULL) return;
  Type t = G->sp->types[v->id];
  CgVal x = cg_convert(G, cg_val(G, v), t, v->line);
  LLVMValueRef pv[3 + KJIT_MAXDIMS];
  int n = pack(x, pv);
  for (int k = 0; k < n; k++) {
    LLVMValueRef x = pv[k];   /* an i32 counter's slot (cg_version.c) */
    if (LLVMGetAllocatedType(G->spill[v->id][k]) != LLVMTypeOf(x)) x = cg_version_i32(G, x);
    LLVMBuildStore(G->B, x, G->spill[v->id][k]);
  }
}

/* Whether blk is in a numeric for loop whose forprep never runs (a bound
** whose operand raised: emit_insn's notrun, which the typer's live blocks
** do not follow). The loop's blocks are unreachable; its forprep set no
** CgFor for its forloop or its copies (cg_version.c, cg_pollfree.c). */
static int in_dead_for(const CG *G, const KirBlock *blk) {
  for (const KirLoop *L = blk->loop; L; L = L->parent)
    if (L->kind == KIR_LOOP_FORNUM && L->prep && G->notrun[L->prep->id]) return 1;
  return 0;
}

/* Emits block blk at bb: its phis' slots, its instructions, its terminator. */
static void emit_block(CG *G, KirBlock *blk, LLVMBasicBlockRef bb) {
  if (in_dead_for(G, blk)) {
    LLVMPositionBuilderAtEnd(G->B, bb);
    LLVMBuildUnreachable(G->B);
    return;
  }
  for (int i = 0; i < G->nfused; i++)
    if (G->fusedbb[i] == bb) {   /* emitted in its predecessor (fuse_branch) */
      LLVMPositionBuilderAtEnd(G->B, bb);
      LLVMBuildUnreachable(G->B);
      return;
    }
  /* chunk-local copies: only in the blocks of the loop whose chunk head
  ** was emitted just before its header (chunk_locals) */
  if (G->chunkpend && blk == G->chunkpend->header)
    G->chunklive = G->chunkpend;
  else if (G->chunklive && (blk == G->chunklive->header || !kir_inloop(G->chunklive, blk)))
    G->chunklive = NULL;
  G->chunkpend = NULL;
  G->curblock = blk;
  G->blockgen++;
  LLVMPositionBuilderAtEnd(G->B, bb);
  /* an iteration of a loop that is not strip-mined (calls charge at the
  ** call site: a leaf function's entry stays free, see poll_charge) */
  if (blk->loop && blk->loop->header == blk &&
      !(G->strip_at && G->strip_at[blk->id] && (!G->versioning || G->plaincopy)) &&
      !(G->ver_at && G->ver_at[blk->id] == blk->loop && !G->versioning &&
        cg_fit_version(G, blk->loop)) &&   /* (charged whole at its test) */
      !cg_count_covers(G, blk->loop) &&   /* (charged by a counted loop inside) */
      !for_covers(G, blk->loop))         /* (or by a for loop's forprep) */
    cg_poll_charge(G, cg_i64(G, 1));
  if (G->freecopy) cg_pollfree_header(G, blk);   /* (a deep nest's copy: cg_pollfree.c) */
  for (int i = 0; i < blk->nphis; i++) store_spill(G, blk->phis[i]);
  for (int i = 0; i < blk->ninsns; i++) {
    emit_insn(G, blk->insns[i]);
    store_spill(G, blk->insns[i]);
    cg_lua_kill_after(G, blk->insns[i]);   /* dead call results' slots (cg_lua.c) */
  }
  emit_term(G, blk);
  G->curblock = NULL;
  G->blockgen++;
}

/* The first iteration of loop L, emitted apart (cg_peel.c says which
** loops and why): its header takes the entry values as they are (an
** integer stays an integer), its back edges go to the loop proper, whose
** header phis then have the type of the back-edge values. */
static void emit_peeled(CG *G, KirLoop *L) {
  KtySpec *sp = G->sp;
  KirFunc *f = sp->ir;
  KirBlock *h = L->header;
  int ie;
  for (ie = 0; ie < h->npreds; ie++) if (!kir_inloop(L, h->preds[ie])) break;
  G->peeling = L;
  for (int b = 0; b < f->nblocks; b++)   /* edges reach blocks before they are emitted */
    if (sp->live[b] && f->blocks[b] != h && kir_inloop(L, f->blocks[b]))
      make_phis(G, f->blocks[b], G->pbbs[b], G->pphis);
  for (int b = 0; b < f->nblocks; b++) {
    KirBlock *blk = f->blocks[b];
    if (!sp->live[b] || !kir_inloop(L, blk)) continue;
    if (blk == h) {
      LLVMPositionBuilderAtEnd(G->B, G->pbbs[b]);
      cg_before_loop(G, L);
      for (int i = 0; i < h->nphis; i++) {
        KirInsn *p = h->phis[i];
        Type t = sp->types[p->id];
        if (t.kind == T_UNKNOWN || sp->consts[p->id].kind != T_UNKNOWN) continue;
        if (t.kind == T_LUA) cg_error(G, p, "internal error: a peeled loop with Lua values");
        CgVal x = cg_val(G, p->args[ie]);
        if (G->phity[p->id].kind) {   /* the entry value as it is */
          G->vals[p->id] = x;
          G->owntype[p->id] = x.t;
        } else {
          G->vals[p->id] = cg_convert(G, x, t, p->line);
          G->owntype[p->id] = TY(T_UNKNOWN);
        }
      }
    } else {
      use_phis(G, blk, G->pphis);
    }
    emit_block(G, blk, G->pbbs[b]);
  }
  G->peeling = NULL;
}

void *cg_zalloc(CG *G, size_t n) {
  void *p = ka_alloc(G->S->A, n ? n : 1);
  if (p == NULL) cg_error(G, NULL, "not enough memory");
  memset(p, 0, n ? n : 1);
  return p;
}

static void emit_spec(CG *G, KtySpec *sp) {
  KirFunc *f = sp->ir;
  G->sp = sp;
  G->fn = G->funcs[sp->index].fn;
  cg_debug_function(G, sp, f->nblocks > 0 && f->blocks[0]->ninsns > 0 ? f->blocks[0]->insns[0]->line : 0);
  G->vals = cg_zalloc(G, sizeof(CgVal) * (size_t)f->ninsns);
  G->notrun = cg_zalloc(G, (size_t)f->ninsns);
  G->scratch = cg_zalloc(G, sizeof(LLVMValueRef) * (size_t)f->ninsns);     /* cg_alloc.c */
  G->scratchfn = cg_zalloc(G, sizeof(LLVMValueRef) * (size_t)f->ninsns);
  G->scratchkind = cg_zalloc(G, (size_t)f->ninsns);
  G->fors = cg_zalloc(G, sizeof(CgFor) * (size_t)f->ninsns);
  G->phis = cg_zalloc(G, sizeof *G->phis * (size_t)f->ninsns);
  G->bbs = cg_zalloc(G, sizeof(LLVMBasicBlockRef) * (size_t)f->nblocks);
  G->phity = cg_zalloc(G, sizeof(Type) * (size_t)f->ninsns);
  G->owntype = cg_zalloc(G, sizeof(Type) * (size_t)f->ninsns);
  G->peel_at = NULL;
  G->peeling = NULL;
  G->spill = NULL;
  G->curblock = NULL;
  G->strip_at = NULL;
  G->fit_at = NULL;
  G->weigh_at = NULL;
  G->free_at = NULL;
  G->freecopy = NULL;
  G->freeloop = NULL;
  G->pollfree = 0;
  G->plaincopy = 0;
  G->chunk = NULL;
  G->chunkbb = NULL;
  G->chunkpend = G->chunklive = NULL;
  G->nchunkin = 0;
  G->ophis = NULL;
  G->nfused = 0;   /* (blocks of the functions before are all emitted) */
  G->results = cg_zalloc(G, sizeof(CgVal *) * (size_t)f->ninsns);
  G->nresults = cg_zalloc(G, sizeof(int) * (size_t)f->ninsns);
  if (f->nblocks > 0 && f->blocks[0]->npreds > 0)
    cg_error(G, NULL, "internal error: the entry block has predecessors");
  G->allocas = cg_bb(G, "entry");
  for (int i = 0; i < f->nblocks; i++)
    if (sp->live[i]) {
      char nm[16];
      snprintf(nm, sizeof nm, "b%d", i);
      G->bbs[i] = cg_bb(G, nm);
    }
  LLVMPositionBuilderAtEnd(G->B, G->allocas);
  G->chunkname = G->target->string_globals   /* else the host knows it */
      ? LLVMBuildGlobalStringPtr(G->B, sp->chunkname ? sp->chunkname : "?", "kcg.chunk")
      : LLVMConstNull(G->i8p);
  /* parameters, result pointers, err */
  unsigned p = 0;
  CgVal params[KJIT_MAXARGS];
  for (int i = 0; i < sp->nargs; i++) {
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int np = parts(G, sp->args[i], tys);
    LLVMValueRef pv[3 + KJIT_MAXDIMS];
    for (int k = 0; k < np; k++) pv[k] = LLVMGetParam(G->fn, p++);
    params[i] = unpack(sp->args[i], pv);
    /* a constant string the function is specialized on (ir_type.c
    ** const_string_arg): its constant, which a value of '...' carries
    ** (a PARAM's comes from the typer's consts, cg_val) */
    if (sp->args[i].kind == T_STR && sp->args[i].ref > 0 && sp->args[i].ref <= G->S->nstrs)
      params[i].k = &G->S->strs[sp->args[i].ref - 1];
  }
  for (int r = 0; r < sp->nret && !cg_is_pure(G, sp); r++) {
    LLVMTypeRef tys[3 + KJIT_MAXDIMS];
    int np = parts(G, sp->rets[r], tys);
    for (int k = 0; k < np; k++) G->retptrs[r][k] = LLVMGetParam(G->fn, p++);
  }
  G->retcount = sp->dyncount && !cg_is_pure(G, sp) ? LLVMGetParam(G->fn, p++) : NULL;
  G->ncount = cg_zalloc(G, sizeof(LLVMValueRef) * (size_t)f->ninsns);
  int inerr = cg_poll_in_err(G, sp);
  G->pollctr = G->target->poll && !inerr ? LLVMGetParam(G->fn, p++) : NULL;
  G->err = LLVMGetParam(G->fn, p++);
  if (inerr) G->pollctr = LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_POLL_LEFT, "pollctr");
  G->depth = cg_is_pure(G, sp) ? LLVMGetParam(G->fn, p++) : NULL;
  cg_lua_begin(G, sp);   /* the frame of stack slots, when it holds Lua values */
  G->upvals = NULL;
  if (sp->clos) {   /* a function literal: its upvalues after its parameters */
    G->upvals = cg_zalloc(G, sizeof(CgVal) * (size_t)(KTY_NCAPS(sp) + 1));
    memcpy(G->upvals, params + sp->nparams, sizeof(CgVal) * (size_t)KTY_NCAPS(sp));
  }
  CgVal *varargs = params + KTY_VARBASE(sp);   /* '...': the last parameters (ir_type.c) */
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      KirInsn *in = blk->insns[i];
      if (in->op == KIR_PARAM && in->aux < sp->nparams) G->vals[in->id] = params[in->aux];
      if (in->op == KIR_GETUPVAL && sp->clos && in->aux < KTY_NCAPS(sp))
        G->vals[in->id] = G->upvals[in->aux];
      if (in->op == KIR_VARARG) {   /* its values, as a call's results */
        G->results[in->id] = varargs;
        G->nresults[in->id] = sp->nvar;
        G->vals[in->id] = sp->nvar > 0 ? varargs[0] : cg_mk(TY(T_NIL), NULL);
      }
    }
  }
  cg_prange_begin(G, sp);   /* loop facts, prange errors, notes: before the
                               plans, which leave outlined loops alone */
  cg_peel_plan(G);
  strip_plan(G);
  cg_cover_plan(G);
  cg_version_plan(G);
  cg_pollfree_plan(G);
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    make_phis(G, f->blocks[b], G->bbs[b], G->phis);
    if (G->strip_at && G->strip_at[b] && G->chunkbb[b])   /* (in a worker: made there) */
      make_phis(G, f->blocks[b], G->chunkbb[b], G->ophis);
    if (G->ver_at && G->ver_at[b]) make_phis(G, f->blocks[b], G->vselbb[b], G->vsphis);
  }
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    if (in_dead_for(G, blk)) {   /* (no copy or plan of a loop never entered) */
      emit_block(G, blk, G->bbs[b]);
      continue;
    }
    if (cg_prange_owns(G, blk)) {   /* a parallel loop, outlined (its phis'
                                      ** values are the entry's, for the header) */
      use_phis(G, blk, G->phis);
      cg_prange_block(G, blk);
      continue;
    }
    if (G->peel_at && G->peel_at[b]) emit_peeled(G, G->peel_at[b]);
    if (G->ver_at && G->ver_at[b]) cg_version_emit(G, G->ver_at[b]);
    if (G->free_at && G->free_at[b]) cg_pollfree_emit(G, blk->loop);
    if (G->strip_at && G->strip_at[b]) emit_chunk_head(G, G->strip_at[b]);
    use_phis(G, blk, G->phis);
    emit_block(G, blk, G->bbs[b]);
  }
  /* blocks left open (after a raise) end in unreachable */
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(G->fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    if (bb == G->allocas || bb == G->lentry) continue;   /* (ended below) */
    if (LLVMGetBasicBlockTerminator(bb) == NULL) {
      LLVMPositionBuilderAtEnd(G->B, bb);
      LLVMBuildUnreachable(G->B);
    }
  }
  /* (the entry code goes on after cg_lua_begin's inline frame opening) */
  LLVMPositionBuilderAtEnd(G->B, G->lentry ? G->lentry : G->allocas);
  /* a pure caller that failed before calling does no more work here
  ** (still needed with the pure set closed under calls: the arguments
  ** may be garbage, and a recursion on them need not end) */
  cg_pure_keep_first_error(G);
  LLVMBuildBr(G->B, G->bbs[0]);
  cg_debug_end_function(G);
}

/* ---- For cg_prange.c: the driver's pieces ------------------------------ */

int cg_parts(CG *G, Type t, LLVMTypeRef *tys) { return parts(G, t, tys); }
int cg_pack(CgVal x, LLVMValueRef *out) { return pack(x, out); }
CgVal cg_unpack(Type t, LLVMValueRef *p) { return unpack(t, p); }
void cg_make_phis(CG *G, KirBlock *b) { make_phis(G, b, G->bbs[b->id], G->phis); }
LLVMBasicBlockRef cg_add_edge(CG *G, KirBlock *from, KirBlock *to) { return add_edge(G, from, to); }
void cg_branch(CG *G, KirBlock *b, LLVMValueRef c) { branch(G, b, c); }
LLVMValueRef cg_int_count(CG *G, LLVMValueRef init, CgVal l, LLVMValueRef step,
                          LLVMValueRef *skip) {
  return int_count(G, init, l, step, skip);
}
Type cg_phi_type(CG *G, const KirInsn *p) { return phi_type(G, p); }
void cg_make_phis_at(CG *G, KirBlock *b, LLVMBasicBlockRef bb, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) {
  make_phis(G, b, bb, table);
}
void cg_use_phis(CG *G, KirBlock *b, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]) { use_phis(G, b, table); }
void cg_emit_block_at(CG *G, KirBlock *b, LLVMBasicBlockRef bb) { emit_block(G, b, bb); }
void cg_emit_chunk_head(CG *G, KirLoop *L) { emit_chunk_head(G, L); }
void cg_emit_block(CG *G, KirBlock *blk) {
  use_phis(G, blk, G->phis);
  emit_block(G, blk, G->bbs[blk->id]);
}

/* Whether the pure convention (CG.pure) can carry sp: its one result in
** registers (an integer, a float, a boolean, or either number: its value
** and flag as a pair, pure_ret_ty), no
** Lua frames (L, slots: it or a callee holds Lua values) and a fixed
** result count (the convention returns no count). kfa_mark_pure takes it
** into its seed, so a caller of one that does not fit is not pure either:
** a pure function calls only pure ones (emit_lua_call relies on it). */
static int pure_convention_fits(KtySession *S, const KtySpec *sp) {
  TypeKind k = sp->nret == 1 ? sp->rets[0].kind : T_UNKNOWN;
  if (k != T_INT && k != T_F64 && k != T_F32 && k != T_BOOL && k != T_NUMBER) return 0;
  return !sp->dyncount && !cg_lua_spec_uses_deep(S, sp);
}

/* One module: every specialization in use, then the entry (a KEntry
** wrapper, or the target's kernel entry). */
static void emit_module(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
                        const char *entry_name, const KcgTarget *t, int boundscheck,
                        int fastmath, int *has_calls, KcgParallel *par, KcgKernelInfo *info) {
  CG G0, *G = &G0;
  memset(G, 0, sizeof *G);
  G->par = par;
  G->S = S; G->C = C; G->M = M; G->target = t;
  G->boundscheck = boundscheck;
  G->fastmath = fastmath;
  G->i1 = LLVMInt1TypeInContext(C);
  G->i8 = LLVMInt8TypeInContext(C);
  G->i16 = LLVMInt16TypeInContext(C);
  G->i32 = LLVMInt32TypeInContext(C);
  G->i64 = LLVMInt64TypeInContext(C);
  G->f32 = LLVMFloatTypeInContext(C);
  G->f64 = LLVMDoubleTypeInContext(C);
  G->i8p = LLVMPointerType(G->i8, 0);
  /* compile.h's KErr: the mirrored fields (runtime_err.h), then poll_left
  ** (cg_poll_in_err) */
  LLVMTypeRef fields[KERR_F_POLL_LEFT + 1] = { G->i32, G->i32, G->i64, G->i64, G->i64, G->i8p,
                                               G->i8p, G->i64, G->f64, G->i64 };
  G->errty = LLVMStructCreateNamed(C, "KErr");
  LLVMStructSetBody(G->errty, fields, KERR_F_POLL_LEFT + 1, 0);
  G->errp = LLVMPointerType(G->errty, 0);
  G->funcs = cg_zalloc(G, sizeof(CgFunc) * (size_t)(S->nspecs + 1));
  /* pure specializations (targets with pure_calls), closed under calls */
  G->pure = cg_zalloc(G, (size_t)S->nspecs + 1);
  kfa_mark_pure(S, t->pure_calls, pure_convention_fits, G->pure);
  G->B = LLVMCreateBuilderInContext(C);
  /* the builder must not leak when a compile error unwinds */
  jmp_buf jb, *saved = S->jb;
  S->jb = &jb;
  if (setjmp(jb)) {
    cg_debug_dispose(G);
    LLVMDisposeBuilder(G->B);
    S->jb = saved;
    longjmp(*saved, 1);
  }
  for (int i = 0; i < S->nspecs; i++) if (S->specs[i]->used) declare_spec(G, S->specs[i]);
  cg_debug_begin(G);
  for (int i = 0; i < S->nspecs; i++) if (S->specs[i]->used) emit_spec(G, S->specs[i]);
  G->sp = root;
  if (t->kernel_entry) cg_emit_kernel_entry(G, root, entry_name);
  else cg_emit_entry(G, root, entry_name);
  cg_debug_end(G);
  S->jb = saved;
  LLVMDisposeBuilder(G->B);
  if (has_calls) *has_calls = G->has_calls;
  if (info) {
    info->msgs = G->msgs;
    info->nmsgs = G->nmsgs;
    info->uses_sync = G->uses_sync;
  }
}

void kcg_emit(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
              const char *entry_name, const KcgTarget *t, int boundscheck, int fastmath,
              int *has_calls) {
  KcgParallel par = { 0, NULL, 0, NULL };
  emit_module(S, C, M, root, entry_name, t, boundscheck, fastmath, has_calls, &par, NULL);
}

void kcg_emit_par(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
                  const char *entry_name, const KcgTarget *t, int boundscheck, int fastmath,
                  int *has_calls, KcgParallel *par) {
  emit_module(S, C, M, root, entry_name, t, boundscheck, fastmath, has_calls, par, NULL);
}

void kcg_emit_kernel(KtySession *S, LLVMContextRef C, LLVMModuleRef M, KtySpec *root,
                     const char *entry_name, const KcgTarget *t, int boundscheck,
                     int fastmath, KcgKernelInfo *info) {
  KcgParallel par = { 0, NULL, 0, NULL };   /* kernels have no kjit.prange */
  emit_module(S, C, M, root, entry_name, t, boundscheck, fastmath, NULL, &par, info);
}
