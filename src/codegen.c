/*
** codegen.c: LLVM IR for typed specializations, with Lua 5.4 semantics.
**
** Every specialization becomes one internal function
**     i32 @kjit_fN_sM(params..., retptrs..., %KErr* err)
** returning 0, or 1 after filling *err (so run-time errors unwind through
** ordinary returns and are raised by the dispatcher in C, never longjmp
** over native frames). Buffers are passed as (data pointer, dim1..dimN)
** so that their shape is loop-invariant SSA the optimizer can reason about.
** A value that may be false/nil (T_MAYBE) travels as (number, i1 flag), in
** locals, parameters and results alike; results that are always nil have
** no slot. Compile-time values (functions, constant tables, strings) have
** no run-time representation at all.
**
** Bounds checks of indices that are affine in a numeric for's control
** variable (i, i + c, c + i, i - c) or invariant in the loop are hoisted:
** the loop is emitted twice, a checked copy and an unchecked copy, and a
** test before the loop picks the unchecked one when every such index stays
** in bounds over the whole iteration range. The checked copy still raises
** the exact error at the exact iteration, so semantics are unchanged.
** On the CPU only innermost numeric for loops are versioned (their test runs
** on each entry, so indices invariant in them, such as a row index, are
** proven there too), and the checked copy is marked not to be vectorized:
** versioning every level multiplied the code LLVM optimizes (2^depth copies
** of the innermost body, each vectorized), which made the compile time of
** nested loops several times that of the unchecked code. GPU kernels keep
** the nested versioning (their PTX is unchanged).
*/
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stddef.h>
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include "codegen.h"
#include "buffer.h"
#include "parse.h"
#include "ir/ir_builtins.h"

/* Pure calls nested deeper than this raise "stack overflow" even when LLVM
** turned the recursion into a loop (about where the interpreter stops). */
#define KJIT_PURE_MAXDEPTH 1000000

typedef struct Val {
  Type t;
  LLVMValueRef v;               /* scalar value, buffer data pointer, or MAYBE value */
  LLVMValueRef flag;            /* T_MAYBE: i1 truthiness */
  LLVMValueRef dims[KJIT_MAXDIMS];  /* T_BUF, T_SHAPE: extents */
  KConst *k;                    /* compile-time constant (T_STR ...) */
  uint8_t own_base;             /* T_BUF: a shared or local array of constant size > 0 */
} Val;

typedef struct VarSlot {
  int init;
  int narrow;                   /* T_INT held in an i32 slot (see "Narrow loop counters") */
  int own_base;                 /* holds only a Val.own_base array (never reassigned) */
  LLVMValueRef v, flag, dims[KJIT_MAXDIMS];
} VarSlot;

typedef struct LoopCtx {
  LLVMBasicBlockRef exit;
  struct LoopCtx *prev;
} LoopCtx;

typedef struct LabelScope {
  Block *block;
  LLVMBasicBlockRef *bbs;       /* per statement index, for S_LABEL */
  struct LabelScope *prev;
} LabelScope;

/* A hoisted bounds check: the index expression's check is proven by the
** test before the loop. */
typedef struct Hoist {
  Expr *index;                  /* the E_INDEX node whose check is removed */
  Var *base;                    /* buffer local at the root of the chain */
  int dim;                      /* which extent of base the key indexes */
  Expr *key;
  int affine;                   /* key = loopvar + off (else invariant) */
  Expr *off;                    /* NULL (0), or the invariant offset */
  int negoff;                   /* key = loopvar - off */
} Hoist;

/* A bounds check whose branch is deferred (kernels only): index in
** [1, extent], reported at line if it fails. */
typedef struct PendingCheck {
  LLVMValueRef ok, index, extent;
  int line;
} PendingCheck;
#define MAX_PENDING_CHECKS 16

typedef struct CG {
  Session *S;
  const KTarget *target;
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  LLVMTypeRef i1, i8, i32, i64, i128, f32, f64, i8p, errty, errp;
  KSpec *sp;
  KFunc *f;
  LLVMValueRef fn, err;
  LLVMBasicBlockRef allocas;    /* entry block holding the allocas */
  VarSlot *slots;               /* by Var.id */
  LLVMValueRef retptrs[KJIT_MAXRETS];
  LLVMValueRef retflags[KJIT_MAXRETS];  /* T_MAYBE results: i1* */
  LoopCtx *loop;
  LabelScope *labels;
  uint8_t *nocheck;             /* by Expr.id: bounds check proven */
  int versioning;               /* nesting of versioned loops */
  int checked_copy;             /* emitting the checked copy of a versioned loop */
  LLVMValueRef depth;           /* pure functions: i32 call depth (mark_pure) */
  LLVMValueRef chunkname;       /* i8* constant */
  int in_prange;                /* emitting a prange worker: inner pranges are plain loops */
  int nprange;                  /* workers emitted so far (their names) */
  /* kernels: bounds checks deferred to the end of the statement's values
  ** (see "Deferred bounds checks") */
  int narrowing;                /* inside a loop emitted with narrow counters */
  KSpec *root;                  /* the compile's entry (the kernel itself) */
  int deferring;
  int npend;
  PendingCheck pend[MAX_PENDING_CHECKS];
  LLVMValueRef pend_all;        /* i1: every pending check passed (NULL: none) */
} CG;

#define ERR(G, line, ...) ks_error((G)->S, (G)->f, (line), __VA_ARGS__)

/* ---- Small helpers ---------------------------------------------------------- */

static LLVMValueRef ci64(CG *G, int64_t v) { return LLVMConstInt(G->i64, (unsigned long long)v, 1); }
static LLVMValueRef ci32(CG *G, int32_t v) { return LLVMConstInt(G->i32, (unsigned long long)(int64_t)v, 1); }
static LLVMValueRef cf64(CG *G, double v) { return LLVMConstReal(G->f64, v); }
static LLVMValueRef ci1(CG *G, int v) { return LLVMConstInt(G->i1, v ? 1 : 0, 0); }

static LLVMBasicBlockRef new_bb(CG *G, const char *name) {
  return LLVMAppendBasicBlockInContext(G->C, G->fn, name);
}

/* True when the current block already ends (after return, break ...). */
static int terminated(CG *G) {
  return LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(G->B)) != NULL;
}

/* Continue emitting into a fresh (unreachable) block after a terminator. */
static void dead_block(CG *G) {
  LLVMPositionBuilderAtEnd(G->B, new_bb(G, "dead"));
}

static LLVMTypeRef llty(CG *G, Type t) {
  switch (t.kind) {
  case T_INT: return G->i64;
  case T_F64: return G->f64;
  case T_F32: return G->f32;
  case T_BOOL: return G->i1;
  case T_MAYBE: return llty(G, TY(t.sub));
  default: return NULL;
  }
}

static LLVMTypeRef dtype_llty(CG *G, kjit_dtype d) {
  switch (d) {
  case KJIT_I8: case KJIT_U8: return G->i8;
  case KJIT_I16: case KJIT_U16: return LLVMInt16TypeInContext(G->C);
  case KJIT_I32: case KJIT_U32: return G->i32;
  case KJIT_I64: case KJIT_U64: return G->i64;
  case KJIT_F32: return G->f32;
  default: return G->f64;
  }
}

static LLVMValueRef alloca_in_entry(CG *G, LLVMTypeRef ty, const char *name) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(G->C);
  LLVMValueRef first = LLVMGetFirstInstruction(G->allocas);
  if (first) LLVMPositionBuilderBefore(b, first);
  else LLVMPositionBuilderAtEnd(b, G->allocas);
  LLVMValueRef a = LLVMBuildAlloca(b, ty, name);
  LLVMDisposeBuilder(b);
  return a;
}

/* The KErr lives on the dispatcher's (or kernel entry's) stack, where no
** array can point: telling LLVM so lets it keep err->kind and
** err->stack_limit in registers across array stores, which a loop calling
** a compiled function needs to be vectorized. */
static void mark_err_noalias(CG *G, LLVMValueRef fn, unsigned param) {
  unsigned kind = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(fn, param + 1, LLVMCreateEnumAttribute(G->C, kind, 0));
}

/* Calls intrinsic `name` overloaded on type ty. */
static LLVMValueRef intrinsic(CG *G, const char *name, LLVMTypeRef ty,
                              LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[1] = { ty };
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(G->M, id, tys, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(G->C, id, tys, 1);
  return LLVMBuildCall2(G->B, fty, fn, args, n, "");
}

/* Calls an external C function (libm or the kjit runtime). */
static LLVMValueRef ccall(CG *G, const char *name, LLVMTypeRef ret,
                          LLVMTypeRef *ptys, LLVMValueRef *args, unsigned n) {
  LLVMTypeRef fty = LLVMFunctionType(ret, ptys, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(G->M, name);
  if (fn == NULL) fn = LLVMAddFunction(G->M, name, fty);
  return LLVMBuildCall2(G->B, fty, fn, args, n, "");
}


/* Math function `base` ("sin", "floor", "atan2", ...) on ty: the target's
** own routine when it names one (libdevice's __nv_sinf on the GPU), else
** the LLVM intrinsic when there is one, else the C library (CPU). */
static LLVMValueRef emit_math(CG *G, const char *base, LLVMTypeRef ty,
                              LLVMValueRef *args, unsigned n) {
  char name[48];
  int f32 = ty == G->f32;
  if (G->target->math_name && G->target->math_name(base, f32, name, sizeof name)) {
    LLVMTypeRef p[2] = { ty, ty };
    return ccall(G, name, ty, p, args, n);
  }
  static const char *const intrinsics[] = { "sqrt", "sin", "cos", "exp", "log",
    "log2", "log10", "pow", "floor", "ceil", "fabs", NULL };
  for (int i = 0; intrinsics[i]; i++)
    if (strcmp(intrinsics[i], base) == 0) {
      snprintf(name, sizeof name, "llvm.%s", base);
      return intrinsic(G, name, ty, args, n);
    }
  snprintf(name, sizeof name, "%s%s", base, f32 ? "f" : "");
  LLVMTypeRef p[2] = { ty, ty };
  return ccall(G, name, ty, p, args, n);
}

/* ---- Errors raised by compiled code ------------------------------------------ */

static void store_err_field(CG *G, int idx, LLVMValueRef v) {
  LLVMValueRef p = LLVMBuildStructGEP2(G->B, G->errty, G->err, idx, "");
  LLVMBuildStore(G->B, v, p);
}

/* A constant message for err->msg. NVVM modules cannot hold strings in the
** generic address space (and the host could not read them): there the
** message travels as its number in S->msgs. */
static LLVMValueRef msg_ptr(CG *G, const char *msg) {
  if (G->target->kind != KT_NVPTX) return LLVMBuildGlobalStringPtr(G->B, msg, "kjit.msg");
  Session *S = G->S;
  S->msgs = ks_grow(S, S->msgs, S->nmsgs, &S->capmsgs, sizeof *S->msgs);
  S->msgs[S->nmsgs++] = msg;
  return LLVMConstIntToPtr(ci64(G, S->nmsgs), G->i8p);
}

/* Returns from the current function after an error: status 1, or for a
** pure function (mark_pure) a zero result, the error being in err->kind. */
static void emit_fail_ret(CG *G) {
  if (G->sp->pure) LLVMBuildRet(G->B, LLVMConstNull(llty(G, G->sp->rets[0])));
  else LLVMBuildRet(G->B, ci32(G, 1));
}

/* A pure function keeps running after a callee failed (its results are
** then garbage, and it has no side effects): the first error recorded
** must stay. Emits: if err->kind is already set, return now. */
static void pure_keep_first_error(CG *G) {
  if (!G->sp->pure) return;
  LLVMValueRef k = LLVMBuildLoad2(G->B, G->i32, LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_KIND, ""), "");
  LLVMBasicBlockRef ret = new_bb(G, "errset"), fill = new_bb(G, "fill");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, k, ci32(G, 0), ""), fill, ret);
  LLVMPositionBuilderAtEnd(G->B, ret);
  emit_fail_ret(G);
  LLVMPositionBuilderAtEnd(G->B, fill);
}

static void flush_checks(CG *G);

/* Emits: fill *err and return 1. Leaves the builder in a dead block. */
static void emit_raise(CG *G, KErrKind kind, int line, LLVMValueRef a,
                       LLVMValueRef b, LLVMValueRef c, const char *msg) {
  flush_checks(G);   /* an earlier deferred bounds error comes first */
  pure_keep_first_error(G);
  store_err_field(G, KERR_F_KIND, ci32(G, kind));
  store_err_field(G, KERR_F_LINE, ci32(G, line));
  if (a) store_err_field(G, KERR_F_A, a);
  if (b) store_err_field(G, KERR_F_B, b);
  if (c) store_err_field(G, KERR_F_C, c);
  if (msg) store_err_field(G, KERR_F_MSG, msg_ptr(G, msg));
  store_err_field(G, KERR_F_CHUNK, G->chunkname);
  emit_fail_ret(G);
  dead_block(G);
}

/* Marks a conditional branch whose false edge (an error) is almost never
** taken: block placement then keeps the error paths out of the hot code,
** as __builtin_expect does in C. */
static LLVMValueRef cold_false(CG *G, LLVMValueRef br) {
  LLVMMetadataRef md[3] = {
    LLVMMDStringInContext2(G->C, "branch_weights", 14),
    LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(G->C), 1u << 20, 0)),
    LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(G->C), 1, 0)),
  };
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(G->C, "prof", 4),
                  LLVMMetadataAsValue(G->C, LLVMMDNodeInContext2(G->C, md, 3)));
  return br;
}

/* if (!ok) raise(kind, ...); continues in the ok branch. */
static void emit_check_msg(CG *G, LLVMValueRef ok, KErrKind kind, int line, LLVMValueRef a,
                           LLVMValueRef b, LLVMValueRef c, const char *msg) {
  if (LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok) == 1) return;
  flush_checks(G);   /* an earlier deferred bounds error comes first */
  LLVMBasicBlockRef fail = new_bb(G, "fail"), cont = new_bb(G, "ok");
  cold_false(G, LLVMBuildCondBr(G->B, ok, cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  emit_raise(G, kind, line, a, b, c, msg);
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, cont);
}

/* ---- Deferred bounds checks (kernels) ------------------------------------------
** A GPU thread issues its loads in program order and stalls at the first use
** of a value still in flight. With a bounds check's branch before each load,
** `a[i-1][j] + a[i+1][j] + a[i][j-1] + a[i][j+1]` issues two loads, waits
** for them at the first add, then checks and issues the next one: the
** latencies add up (a 2-D stencil measured 1.27x slower than unchecked on an
** H100). So in a kernel, while the values of an assignment or `local`
** statement made only of arithmetic and array reads are emitted (see
** straight_expr), the checks are recorded instead of branched on, each load
** reads through select(all checks so far passed, element, kjit_safe), a
** valid dummy address, and one branch before the stores tests them all. Its
** cold side repeats the checks in order, so the error is the one the
** interpreter raises: the first failing read, with its line and index. */

static void emit_check(CG *G, LLVMValueRef ok, KErrKind kind, int line,
                       LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);

/* The dummy element address loads fall back to while a check is pending. */
static LLVMValueRef safe_elem_ptr(CG *G, LLVMTypeRef ety) {
  unsigned as = G->target->kind == KT_NVPTX ? 1 : 0;   /* NVVM: global memory */
  LLVMValueRef g = LLVMGetNamedGlobal(G->M, "kjit_safe");
  if (g == NULL) {
    LLVMTypeRef ty = LLVMArrayType(G->i64, 2);
    g = LLVMAddGlobalInAddressSpace(G->M, ty, "kjit_safe", as);
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetInitializer(g, LLVMConstNull(ty));
    LLVMSetAlignment(g, 16);
  }
  LLVMValueRef p = LLVMBuildBitCast(G->B, g, LLVMPointerType(ety, as), "");
  return as ? LLVMBuildAddrSpaceCast(G->B, p, LLVMPointerType(ety, 0), "") : p;
}

/* Emits the pending checks' one branch; leaves the builder after it. */
static void flush_checks(CG *G) {
  if (G->npend == 0) return;
  int n = G->npend;
  PendingCheck pend[MAX_PENDING_CHECKS];
  memcpy(pend, G->pend, sizeof pend);
  LLVMValueRef all = G->pend_all;
  G->npend = 0;
  G->pend_all = NULL;
  LLVMBasicBlockRef fail = new_bb(G, "oob"), cont = new_bb(G, "inbounds");
  cold_false(G, LLVMBuildCondBr(G->B, all, cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  for (int k = 0; k < n; k++)
    emit_check(G, pend[k].ok, KE_BOUNDS, pend[k].line, pend[k].index, NULL, pend[k].extent);
  LLVMBuildUnreachable(G->B);   /* one of them failed */
  LLVMPositionBuilderAtEnd(G->B, cont);
}

/* A bounds check: deferred while G->deferring, else a branch. */
static void bounds_check(CG *G, LLVMValueRef ok, int line, LLVMValueRef index, LLVMValueRef extent) {
  if (LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok) == 1) return;
  if (!G->deferring) { emit_check(G, ok, KE_BOUNDS, line, index, NULL, extent); return; }
  if (G->npend == MAX_PENDING_CHECKS) flush_checks(G);
  G->pend[G->npend++] = (PendingCheck){ ok, index, extent, line };
  G->pend_all = G->pend_all ? LLVMBuildAnd(G->B, G->pend_all, ok, "") : ok;
}

/* Where a deferred read of the array expression obj may fall back to,
** from the local at its root: DEFER_GLOBAL (an array parameter of the
** kernel itself, never reassigned: global memory, so kjit_safe), DEFER_OWN
** (a shared or local array of constant size, never reassigned: its own
** first element, in its own memory space), or 0: not deferred. A fallback
** in another memory space than the array's would make NVVM's loads
** generic, and slower (a shared-memory block reduction measured 15%
** slower). */
enum { DEFER_GLOBAL = 1, DEFER_OWN = 2 };
static VarSlot *var_slot(CG *G, Var *v);
static int defer_origin(CG *G, Expr *obj) {
  while (obj->kind == E_INDEX || obj->kind == E_PAREN)
    obj = obj->kind == E_INDEX ? obj->u.index.obj : obj->u.paren;
  Var *v = obj->kind == E_NAME ? obj->u.name.var : NULL;
  if (v == NULL || v->nassign != 0) return 0;
  if (var_slot(G, v)->own_base) return DEFER_OWN;
  if (G->sp == G->root)
    for (int i = 0; i < G->f->ast->nparams; i++)
      if (G->f->ast->paramvars[i] == v) return DEFER_GLOBAL;
  return 0;
}

/* True when emitting e creates no block: constants, locals, fields, + - * /
** and unary minus on numbers, #, and integer-indexed reads of arrays with a
** known fallback (defer_origin). Its bounds checks can then wait for one
** branch after it. */
static Type etype(CG *G, Expr *e);
static int straight_expr(CG *G, Expr *e) {
  int num = kt_isnum(etype(G, e));
  switch (e->kind) {
  case E_INT: case E_FLT: case E_TRUE: case E_FALSE: case E_NAME: case E_FIELD: return 1;
  case E_PAREN: return straight_expr(G, e->u.paren);
  case E_INDEX: {
    Type ot = etype(G, e->u.index.obj), kt = etype(G, e->u.index.key);
    return ((ot.kind == T_BUF && defer_origin(G, e->u.index.obj)) || (ot.kind == T_SHAPE && num)) &&
           kt.kind == T_INT && straight_expr(G, e->u.index.obj) && straight_expr(G, e->u.index.key);
  }
  case E_BINOP: {
    OpKind op = e->u.bin.op;
    return (op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV) && num &&
           kt_isnum(etype(G, e->u.bin.a)) && kt_isnum(etype(G, e->u.bin.b)) &&
           straight_expr(G, e->u.bin.a) && straight_expr(G, e->u.bin.b);
  }
  case E_UNOP:
    if (e->u.un.op == OP_LEN) return etype(G, e->u.un.a).kind == T_BUF && straight_expr(G, e->u.un.a);
    return e->u.un.op == OP_NEG && num && kt_isnum(etype(G, e->u.un.a)) && straight_expr(G, e->u.un.a);
  default: return 0;
  }
}

/* Whether a statement's value list may defer its bounds checks. */
static int defer_checks_for(CG *G, Expr **es, int n) {
  if (!G->S->kernel || !G->f->boundscheck || n == 0) return 0;
  for (int i = 0; i < n; i++) if (!straight_expr(G, es[i])) return 0;
  return 1;
}

static void emit_check(CG *G, LLVMValueRef ok, KErrKind kind, int line,
                       LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  emit_check_msg(G, ok, kind, line, a, b, c, NULL);
}

static Val unwrap(CG *G, Val v, int line, Expr *src);
static LLVMValueRef sreg(CG *G, int group, int axis);
static int is_grid_call(CG *G, Expr *e);
static Val emit_cuda(CG *G, Expr *e, int id, Val *a, int n);

/* ---- Conversions ----------------------------------------------------------------- */

static Val mkval(Type t, LLVMValueRef v) {
  Val r;
  memset(&r, 0, sizeof r);
  r.t = t; r.v = v;
  return r;
}

/* Float value with an exact integer value in i64 range -> (ok, int). */
static LLVMValueRef float_to_int_exact(CG *G, LLVMValueRef x, LLVMValueRef *ok) {
  LLVMTypeRef ty = LLVMTypeOf(x);
  if (ty == G->f32) x = LLVMBuildFPExt(G->B, x, G->f64, ""), ty = G->f64;
  LLVMValueRef args[1] = { x };
  LLVMValueRef fl = emit_math(G, "floor", G->f64, args, 1);
  LLVMValueRef integral = LLVMBuildFCmp(G->B, LLVMRealOEQ, fl, x, "");
  LLVMValueRef ge = LLVMBuildFCmp(G->B, LLVMRealOGE, x, cf64(G, -9223372036854775808.0), "");
  LLVMValueRef lt = LLVMBuildFCmp(G->B, LLVMRealOLT, x, cf64(G, 9223372036854775808.0), "");
  *ok = LLVMBuildAnd(G->B, integral, LLVMBuildAnd(G->B, ge, lt, ""), "");
  /* freeze-free guard: convert a safe value when out of range */
  LLVMValueRef safe = LLVMBuildSelect(G->B, *ok, x, cf64(G, 0.0), "");
  return LLVMBuildFPToSI(G->B, safe, G->i64, "");
}

/* A literal Lua's parser folds to a true constant: 1, -2.5, ~3, "s", true. */
static int true_literal(Expr *e) {
  while (e->kind == E_PAREN) e = e->u.paren;
  if (e->kind == E_INT || e->kind == E_FLT || e->kind == E_TRUE || e->kind == E_STR) return 1;
  if (e->kind == E_UNOP && (e->u.un.op == OP_NEG || e->u.un.op == OP_BNOT))
    return e->u.un.a->kind == E_INT || e->u.un.a->kind == E_FLT;
  return 0;
}

/* Lua's description of the value an operand came from, for messages:
** " (local 'x')", " (upvalue 'x')", " (global 'x')", " (field 'x')" or "". */
static void varinfo(CG *G, Expr *src, char *buf, size_t n) {
  buf[0] = '\0';
  for (;;) {
    if (src == NULL) return;
    if (src->kind == E_PAREN) { src = src->u.paren; continue; }
    /* `k and x` with k a true constant, `nil or x`: Lua reuses x's register */
    if (src->kind == E_BINOP && src->u.bin.op == OP_AND && true_literal(src->u.bin.a)) {
      src = src->u.bin.b; continue;
    }
    if (src->kind == E_BINOP && src->u.bin.op == OP_OR &&
        (src->u.bin.a->kind == E_NIL || src->u.bin.a->kind == E_FALSE)) { src = src->u.bin.b; continue; }
    break;
  }
  if (src->kind == E_NAME) {
    const char *what = "local";
    if (src->u.name.var == NULL) {
      what = "global";
      for (int i = 0; i < G->f->nfree; i++)
        if (strcmp(G->f->free[i].name, src->u.name.name) == 0) what = G->f->free[i].what;
    }
    snprintf(buf, n, " (%s '%s')", what, src->u.name.name);
  } else if (src->kind == E_FIELD) {
    snprintf(buf, n, " (field '%s')", src->u.field.name);
  } else if (src->kind == E_INDEX) {
    /* Lua names a[k] by its opcode: GETI for small constant keys */
    Expr *k = src->u.index.key;
    int geti = k->kind == E_INT && k->u.i >= 0 && k->u.i <= 255;
    snprintf(buf, n, " (field '%s')", geti ? "integer index" : "?");
  }
}

static LLVMValueRef to_int_checked_src(CG *G, Val v, int line, Expr *src);
static LLVMValueRef to_int_checked(CG *G, Val v, int line) {
  return to_int_checked_src(G, v, line, NULL);
}

/* As to_int_checked; the error describes the operand src as Lua does:
** "number (local 'x') has no integer representation". */
static LLVMValueRef to_int_checked_src(CG *G, Val v, int line, Expr *src) {
  if (v.t.kind == T_INT) return v.v;
  if (LLVMIsAConstantFP(v.v)) {
    LLVMBool lost;
    double d = LLVMConstRealGetDouble(v.v, &lost);
    if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
      return ci64(G, (int64_t)d);
  }
  LLVMValueRef ok;
  LLVMValueRef i = float_to_int_exact(G, v.v, &ok);
  char info[96];
  varinfo(G, src, info, sizeof info);
  emit_check_msg(G, ok, KE_NOINT, line, NULL, NULL, NULL, info[0] ? info : NULL);
  return i;
}

/* An integer argument of a library function: "bad argument #n to 'ult'
** (number has no integer representation)". */
static LLVMValueRef to_int_arg(CG *G, Val v, int line, int argn, const char *fname) {
  if (v.t.kind == T_INT) return v.v;
  LLVMValueRef ok;
  LLVMValueRef i = float_to_int_exact(G, v.v, &ok);
  emit_check_msg(G, ok, KE_ARGNOINT, line, ci64(G, argn), NULL, NULL, fname);
  return i;
}

/* Numeric conversion to kind `to` (T_INT, T_F64, T_F32). */
static LLVMValueRef num_to(CG *G, Val v, TypeKind to) {
  TypeKind from = v.t.kind;
  if (from == to) return v.v;
  if (from == T_NIL || v.v == NULL) {
    return to == T_INT ? ci64(G, 0) : LLVMConstReal(to == T_F32 ? G->f32 : G->f64, 0);
  }
  if (from == T_INT) {
    if (to == T_F64) return LLVMBuildSIToFP(G->B, v.v, G->f64, "");
    /* int -> Lua float -> f32, as a store into an f32 buffer would round */
    /* (kernels convert once, as CUDA C does, without an f64 step) */
    if (LLVMIsAConstantInt(v.v) || G->S->kernel) return LLVMBuildSIToFP(G->B, v.v, G->f32, "");
    return LLVMBuildFPTrunc(G->B, LLVMBuildSIToFP(G->B, v.v, G->f64, ""), G->f32, "");
  }
  if (from == T_F32 && to == T_F64) return LLVMBuildFPExt(G->B, v.v, G->f64, "");
  if (from == T_F64 && to == T_F32) return LLVMBuildFPTrunc(G->B, v.v, G->f32, "");
  return v.v;
}

/* Converts v to type t (for stores into locals, returns, arguments). */
static Val convert(CG *G, Val v, Type t, int line) {
  if (t.kind == T_MAYBE) {
    Val r = mkval(t, NULL);
    if (v.t.kind == T_MAYBE) {
      r.flag = v.flag;
      r.v = num_to(G, mkval(TY(v.t.sub), v.v), t.sub);
    } else if (kt_isnum(v.t)) {
      r.flag = ci1(G, 1);
      r.v = num_to(G, v, t.sub);
    } else {   /* false or nil */
      r.flag = ci1(G, 0);
      r.v = LLVMConstNull(llty(G, TY(t.sub)));
    }
    return r;
  }
  if (kt_isnum(t)) {
    v = unwrap(G, v, line, NULL);
    return mkval(t, num_to(G, v, t.kind));
  }
  if (t.kind == T_BOOL) {
    if (v.t.kind == T_NIL || v.v == NULL) return mkval(t, ci1(G, 0));
    return mkval(t, v.v);
  }
  if (t.kind == T_BUF) {
    if (v.t.kind != T_BUF) {   /* nil: a null buffer with zero extents */
      Val r = mkval(t, LLVMConstNull(LLVMPointerType(dtype_llty(G, t.dtype), 0)));
      for (int i = 0; i < t.ndim; i++) r.dims[i] = ci64(G, 0);
      return r;
    }
    v.t = t;
    return v;
  }
  v.t = t;
  return v;
}

/* Lua truthiness as i1. */
static LLVMValueRef truthy(CG *G, Val v) {
  switch (v.t.kind) {
  case T_BOOL: return v.v;
  case T_MAYBE: return v.flag;
  case T_NIL: return ci1(G, 0);
  default: return ci1(G, 1);
  }
}

/* A maybe-false/nil number used as a number: raise Lua's error when it is
** false or nil, else its number. src (may be NULL) names it in messages. */
static Val unwrap(CG *G, Val v, int line, Expr *src) {
  if (v.t.kind != T_MAYBE) return v;
  char info[96];
  varinfo(G, src, info, sizeof info);
  emit_check_msg(G, v.flag, KE_NILARITH, line, ci64(G, v.t.dtype), NULL, NULL, info);
  return mkval(TY(v.t.sub), v.v);
}

/* ---- Local variables ------------------------------------------------------------ */

/* Array data pointers live in the target's global address space. */
static LLVMTypeRef bufptr_ty(CG *G, Type t) {
  return LLVMPointerType(dtype_llty(G, t.dtype), G->target->data_addrspace);
}

/* The stack slots of a local, created (and zeroed) on first use. */
static VarSlot *var_slot(CG *G, Var *v) {
  VarSlot *s = &G->slots[v->id];
  if (s->init) return s;
  s->init = 1;
  Type t = G->sp->vartypes[v->id];
  LLVMBuilderRef b = LLVMCreateBuilderInContext(G->C);
  LLVMPositionBuilderAtEnd(b, G->allocas);
  switch (t.kind) {
  case T_INT: case T_F64: case T_F32: case T_BOOL:
    s->v = alloca_in_entry(G, llty(G, t), v->name);
    LLVMBuildStore(b, LLVMConstNull(llty(G, t)), s->v);
    break;
  case T_MAYBE:
    s->v = alloca_in_entry(G, llty(G, t), v->name);
    s->flag = alloca_in_entry(G, G->i1, v->name);
    LLVMBuildStore(b, LLVMConstNull(llty(G, t)), s->v);
    LLVMBuildStore(b, ci1(G, 0), s->flag);
    break;
  case T_BUF:
    s->v = alloca_in_entry(G, bufptr_ty(G, t), v->name);
    LLVMBuildStore(b, LLVMConstNull(bufptr_ty(G, t)), s->v);
    for (int i = 0; i < t.ndim; i++) {
      s->dims[i] = alloca_in_entry(G, G->i64, v->name);
      LLVMBuildStore(b, ci64(G, 0), s->dims[i]);
    }
    break;
  default: break;   /* nil, or never used */
  }
  LLVMDisposeBuilder(b);
  return s;
}

static Val load_var(CG *G, Var *v) {
  Type t = G->sp->vartypes[v->id];
  VarSlot *s = var_slot(G, v);
  Val r = mkval(t, NULL);
  switch (t.kind) {
  case T_INT: case T_F64: case T_F32: case T_BOOL:
    if (s->narrow) r.v = LLVMBuildSExt(G->B, LLVMBuildLoad2(G->B, G->i32, s->v, v->name), G->i64, "");
    else r.v = LLVMBuildLoad2(G->B, llty(G, t), s->v, v->name);
    break;
  case T_MAYBE:
    r.v = LLVMBuildLoad2(G->B, llty(G, t), s->v, v->name);
    r.flag = LLVMBuildLoad2(G->B, G->i1, s->flag, "");
    break;
  case T_BUF:
    r.v = LLVMBuildLoad2(G->B, bufptr_ty(G, t), s->v, v->name);
    for (int i = 0; i < t.ndim; i++) r.dims[i] = LLVMBuildLoad2(G->B, G->i64, s->dims[i], "");
    break;
  default: break;
  }
  r.t.weak = t.weak;
  return r;
}

static void store_var(CG *G, Var *v, Val x, int line) {
  Type t = G->sp->vartypes[v->id];
  VarSlot *s = var_slot(G, v);
  if (t.kind == T_NIL || t.kind == T_UNKNOWN) return;
  x = convert(G, x, t, line);
  switch (t.kind) {
  case T_INT: case T_F64: case T_F32: case T_BOOL:
    /* a narrow slot only ever receives values in int32 range (its loop's
    ** entry test proves it) */
    LLVMBuildStore(G->B, s->narrow ? LLVMBuildTrunc(G->B, x.v, G->i32, "") : x.v, s->v);
    break;
  case T_MAYBE:
    LLVMBuildStore(G->B, x.v, s->v);
    LLVMBuildStore(G->B, x.flag, s->flag);
    break;
  case T_BUF:
    LLVMBuildStore(G->B, x.v, s->v);
    for (int i = 0; i < t.ndim; i++) LLVMBuildStore(G->B, x.dims[i], s->dims[i]);
    if (x.own_base && v->nassign == 0) s->own_base = 1;
    break;
  default: break;
  }
}

/* ---- Expressions --------------------------------------------------------------- */

static Val emit_expr(CG *G, Expr *e);
static int emit_call(CG *G, Expr *e, Val *out, int max);

static Type etype(CG *G, Expr *e) { return G->sp->exprtypes[e->id]; }

/* The value of a compile-time constant expression. */
static Val const_val(CG *G, Expr *e, KConst *k) {
  Type t = etype(G, e);
  Val r = mkval(t, NULL);
  r.k = k;
  switch (k->type.kind) {
  case T_INT: r.v = ci64(G, k->v.i); break;
  case T_F64: r.v = cf64(G, k->v.f); break;
  case T_BOOL: r.v = ci1(G, k->v.b); break;
  default: break;
  }
  return r;
}

/* An index value as an integer (floats must be integral); upper (the
** extent, or NULL) goes into the out-of-bounds message for huge floats. */
static LLVMValueRef index_int(CG *G, Val k, int line, LLVMValueRef upper) {
  k = unwrap(G, k, line, NULL);
  if (k.t.kind == T_INT) return k.v;
  LLVMValueRef x = k.v;
  if (k.t.kind == T_F32) x = LLVMBuildFPExt(G->B, x, G->f64, "");
  LLVMValueRef ok;
  LLVMValueRef i = float_to_int_exact(G, x, &ok);
  if (!(LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok) == 1)) {
    LLVMBasicBlockRef fail = new_bb(G, "badindex"), cont = new_bb(G, "ok");
    LLVMBuildCondBr(G->B, ok, cont, fail);
    LLVMPositionBuilderAtEnd(G->B, fail);
    pure_keep_first_error(G);
    store_err_field(G, KERR_F_F, x);
    /* an integral float beyond i64 (or infinite) is out of bounds, as in
    ** the interpreter; anything else is not an integer */
    LLVMValueRef fl = emit_math(G, "floor", G->f64, &x, 1);
    LLVMValueRef integral = LLVMBuildFCmp(G->B, LLVMRealOEQ, fl, x, "");
    if (upper) store_err_field(G, KERR_F_C, upper);
    else integral = ci1(G, 0);
    store_err_field(G, KERR_F_KIND, LLVMBuildSelect(G->B, integral, ci32(G, KE_BOUNDSF), ci32(G, KE_INDEXINT), ""));
    store_err_field(G, KERR_F_LINE, ci32(G, line));
    store_err_field(G, KERR_F_CHUNK, G->chunkname);
    emit_fail_ret(G);
    dead_block(G);
    LLVMBuildUnreachable(G->B);
    LLVMPositionBuilderAtEnd(G->B, cont);
  }
  return i;
}

/* Row-major stride of dimension 0 of a buffer value: dims[1]*...*dims[n-1]. */
static LLVMValueRef row_stride(CG *G, Val b) {
  LLVMValueRef s = b.dims[1];
  for (int i = 2; i < b.t.ndim; i++) s = LLVMBuildMul(G->B, s, b.dims[i], "");
  return s;
}

/* Applies one index to a buffer value: a view for n-D, else an element
** pointer (returned in *elem). */
static Val index_buffer(CG *G, Expr *e, Val o, Val k, LLVMValueRef *elem) {
  int line = e->line;
  LLVMValueRef i = index_int(G, k, line, o.dims[0]);
  if (G->f->boundscheck && !G->nocheck[e->id]) {
    LLVMValueRef im1 = LLVMBuildSub(G->B, i, ci64(G, 1), "");
    LLVMValueRef ok = LLVMBuildICmp(G->B, LLVMIntULT, im1, o.dims[0], "");
    bounds_check(G, ok, line, i, o.dims[0]);
  }
  LLVMValueRef off = LLVMBuildSub(G->B, i, ci64(G, 1), "");
  LLVMTypeRef ety = dtype_llty(G, o.t.dtype);
  if (o.t.ndim > 1) {
    Val r = o;
    r.t.ndim--;
    off = LLVMBuildMul(G->B, off, row_stride(G, o), "");
    r.v = LLVMBuildInBoundsGEP2(G->B, ety, o.v, &off, 1, "");
    for (int d = 0; d + 1 < o.t.ndim; d++) r.dims[d] = o.dims[d + 1];
    r.dims[o.t.ndim - 1] = NULL;
    *elem = NULL;
    return r;
  }
  *elem = LLVMBuildInBoundsGEP2(G->B, ety, o.v, &off, 1, "");
  return o;
}

/* Loads an element with the read rules: narrow ints widen to i64. */
static Val load_elem(CG *G, kjit_dtype d, LLVMValueRef p) {
  LLVMValueRef x = LLVMBuildLoad2(G->B, dtype_llty(G, d), p, "");
  switch (d) {
  case KJIT_I8: case KJIT_I16: case KJIT_I32: return mkval(TY(T_INT), LLVMBuildSExt(G->B, x, G->i64, ""));
  case KJIT_U8: case KJIT_U16: case KJIT_U32: return mkval(TY(T_INT), LLVMBuildZExt(G->B, x, G->i64, ""));
  case KJIT_I64: case KJIT_U64: return mkval(TY(T_INT), x);
  case KJIT_F32: return mkval(TY(T_F32), x);
  default: return mkval(TY(T_F64), x);
  }
}

/* A value converted to element type d with the store rules: exact
** integers, C-cast wrap, f32 rounding. */
static LLVMValueRef elem_value(CG *G, kjit_dtype d, Val v, int line) {
  LLVMValueRef x;
  v = unwrap(G, v, line, NULL);
  if (d == KJIT_F32)   /* an integer rounds once, as buffer.c's (float)i */
    x = v.t.kind == T_INT ? LLVMBuildSIToFP(G->B, v.v, G->f32, "") : num_to(G, v, T_F32);
  else if (d == KJIT_F64) x = num_to(G, v, T_F64);
  else {
    x = to_int_checked(G, v, line);
    LLVMTypeRef ty = dtype_llty(G, d);
    if (ty != G->i64) x = LLVMBuildTrunc(G->B, x, ty, "");
  }
  return x;
}

static void store_elem(CG *G, kjit_dtype d, LLVMValueRef p, Val v, int line) {
  LLVMBuildStore(G->B, elem_value(G, d, v, line), p);
}

static Val emit_index(CG *G, Expr *e) {
  Type t = etype(G, e);
  if (G->sp->consts[e->id].type.kind) return const_val(G, e, &G->sp->consts[e->id]);
  Val o = emit_expr(G, e->u.index.obj);
  Val k = emit_expr(G, e->u.index.key);
  if (o.t.kind == T_SHAPE) {
    /* a.shape[k]: nil outside 1..ndim (typed by types.c: i64, nil or maybe) */
    if (t.kind == T_NIL) return mkval(t, NULL);
    LLVMValueRef i = index_int(G, k, e->line, NULL);
    int nd = o.t.ndim;
    if (t.kind == T_INT && LLVMIsAConstantInt(i)) {
      long long c = LLVMConstIntGetSExtValue(i);
      return mkval(TY(T_INT), o.dims[c - 1]);
    }
    LLVMValueRef im1 = LLVMBuildSub(G->B, i, ci64(G, 1), "");
    LLVMValueRef r = o.dims[nd - 1];
    for (int d = nd - 2; d >= 0; d--)
      r = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, im1, ci64(G, d), ""), o.dims[d], r, "");
    Val v = mkval(t, r);
    v.flag = LLVMBuildICmp(G->B, LLVMIntULT, im1, ci64(G, nd), "");
    return v;
  }
  LLVMValueRef elem;
  Val r = index_buffer(G, e, o, k, &elem);
  if (elem == NULL) return r;
  if (G->pend_all) {   /* a pending check may fail: never read out of bounds */
    LLVMValueRef fallback = defer_origin(G, e->u.index.obj) == DEFER_OWN
      ? o.v                                   /* 1-D, at least one element */
      : safe_elem_ptr(G, dtype_llty(G, o.t.dtype));
    elem = LLVMBuildSelect(G->B, G->pend_all, elem, fallback, "");
  }
  Val x = load_elem(G, o.t.dtype, elem);
  x.t = t;
  return x;
}

static Val emit_field(CG *G, Expr *e) {
  if (G->sp->consts[e->id].type.kind) return const_val(G, e, &G->sp->consts[e->id]);
  Type ot = etype(G, e->u.field.obj);
  if (ot.kind == T_BUILTIN && B_IS_DIM3(ot.ref))   /* cuda.threadIdx.x ... */
    return mkval(TY(T_INT), sreg(G, ot.ref - B_CUDA_THREADIDX, e->u.field.name[0] - 'x'));
  Val o = emit_expr(G, e->u.field.obj);
  const char *n = e->u.field.name;
  if (strcmp(n, "shape") == 0) { Val r = o; r.t = TY(T_SHAPE); r.t.ndim = o.t.ndim; return r; }
  if (strcmp(n, "ndim") == 0) return mkval(TY(T_INT), ci64(G, o.t.ndim));
  /* size */
  LLVMValueRef s = o.dims[0];
  for (int i = 1; i < o.t.ndim; i++) s = LLVMBuildMul(G->B, s, o.dims[i], "");
  return mkval(TY(T_INT), s);
}

/* ---- Arithmetic ------------------------------------------------------------------- */

/* Lua's integer floor division and modulo; b == 0 raises. */
static LLVMValueRef int_idivmod(CG *G, LLVMValueRef a, LLVMValueRef b, int ismod, int line) {
  int bconst = LLVMIsAConstantInt(b) != NULL;
  long long bc = bconst ? LLVMConstIntGetSExtValue(b) : 0;
  if (!bconst || bc == 0)
    emit_check(G, LLVMBuildICmp(G->B, LLVMIntNE, b, ci64(G, 0), ""),
               ismod ? KE_MOD0 : KE_IDIV0, line, NULL, NULL, NULL);
  /* b == -1 would overflow sdiv for minint: a // -1 is -a (wrapping), a % -1 is 0 */
  LLVMValueRef isneg1 = LLVMBuildICmp(G->B, LLVMIntEQ, b, ci64(G, -1), "");
  LLVMValueRef sb = bconst ? b : LLVMBuildSelect(G->B, isneg1, ci64(G, 1), b, "");
  if (bconst && bc == -1) sb = ci64(G, 1);
  LLVMValueRef r = LLVMBuildSRem(G->B, a, sb, "");
  /* floor adjustment when the remainder's sign differs from b's */
  LLVMValueRef adj = LLVMBuildAnd(G->B,
      LLVMBuildICmp(G->B, LLVMIntNE, r, ci64(G, 0), ""),
      LLVMBuildICmp(G->B, LLVMIntSLT, LLVMBuildXor(G->B, r, b, ""), ci64(G, 0), ""), "");
  if (ismod) {
    LLVMValueRef m = LLVMBuildSelect(G->B, adj, LLVMBuildAdd(G->B, r, b, ""), r, "");
    return m;
  }
  LLVMValueRef q = LLVMBuildSDiv(G->B, a, sb, "");
  q = LLVMBuildSelect(G->B, adj, LLVMBuildSub(G->B, q, ci64(G, 1), ""), q, "");
  if (bconst && bc != -1) return q;
  return LLVMBuildSelect(G->B, isneg1, LLVMBuildSub(G->B, ci64(G, 0), a, ""), q, "");
}

/* Lua's float modulo: fmod, then adjust toward b's sign. */
static LLVMValueRef float_mod(CG *G, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  LLVMValueRef zero = LLVMConstReal(ty, 0.0);
  LLVMValueRef m = LLVMBuildFRem(G->B, a, b, "");
  LLVMValueRef mpos = LLVMBuildFCmp(G->B, LLVMRealOGT, m, zero, "");
  LLVMValueRef bneg = LLVMBuildFCmp(G->B, LLVMRealOLT, b, zero, "");
  LLVMValueRef mneg = LLVMBuildFCmp(G->B, LLVMRealOLT, m, zero, "");
  LLVMValueRef bpos = LLVMBuildFCmp(G->B, LLVMRealOGT, b, zero, "");
  /* adjust when m and b have opposite signs */
  LLVMValueRef adj = LLVMBuildSelect(G->B, mpos, bneg, LLVMBuildAnd(G->B, mneg, bpos, ""), "");
  return LLVMBuildSelect(G->B, adj, LLVMBuildFAdd(G->B, m, b, ""), m, "");
}

/* Lua's shift left (negative n shifts right; |n| >= 64 gives 0). */
static LLVMValueRef shift_left(CG *G, LLVMValueRef x, LLVMValueRef n) {
  LLVMValueRef amt = LLVMBuildAnd(G->B, n, ci64(G, 63), "");
  LLVMValueRef namt = LLVMBuildAnd(G->B, LLVMBuildSub(G->B, ci64(G, 0), n, ""), ci64(G, 63), "");
  LLVMValueRef l = LLVMBuildShl(G->B, x, amt, "");
  LLVMValueRef r = LLVMBuildLShr(G->B, x, namt, "");
  LLVMValueRef big = LLVMBuildICmp(G->B, LLVMIntSGE, n, ci64(G, 64), "");
  LLVMValueRef small = LLVMBuildICmp(G->B, LLVMIntSLE, n, ci64(G, -64), "");
  LLVMValueRef neg = LLVMBuildICmp(G->B, LLVMIntSLT, n, ci64(G, 0), "");
  LLVMValueRef v = LLVMBuildSelect(G->B, neg, r, l, "");
  return LLVMBuildSelect(G->B, LLVMBuildOr(G->B, big, small, ""), ci64(G, 0), v, "");
}

static LLVMValueRef float_pow(CG *G, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  if (LLVMIsAConstantFP(b)) {
    LLVMBool lost;
    if (LLVMConstRealGetDouble(b, &lost) == 2.0) return LLVMBuildFMul(G->B, a, a, "");
  }
  LLVMValueRef args[2] = { a, b };
  LLVMValueRef p = emit_math(G, "pow", ty, args, 2);
  /* Lua computes x^2 as x*x */
  LLVMValueRef two = LLVMBuildFCmp(G->B, LLVMRealOEQ, b, LLVMConstReal(ty, 2.0), "");
  return LLVMBuildSelect(G->B, two, LLVMBuildFMul(G->B, a, a, ""), p, "");
}

static Val emit_arith(CG *G, Expr *e, Val a, Val b) {
  Type rt = etype(G, e);
  OpKind op = e->u.bin.op;
  int line = e->line;
  a = unwrap(G, a, line, e->u.bin.a);
  b = unwrap(G, b, line, e->u.bin.b);
  if (op >= OP_BAND && op <= OP_SHR) {
    LLVMValueRef x = to_int_checked_src(G, a, line, e->u.bin.a);
    LLVMValueRef y = to_int_checked_src(G, b, line, e->u.bin.b);
    LLVMValueRef r;
    switch (op) {
    case OP_BAND: r = LLVMBuildAnd(G->B, x, y, ""); break;
    case OP_BOR: r = LLVMBuildOr(G->B, x, y, ""); break;
    case OP_BXOR: r = LLVMBuildXor(G->B, x, y, ""); break;
    case OP_SHL: r = shift_left(G, x, y); break;
    default: r = shift_left(G, x, LLVMBuildSub(G->B, ci64(G, 0), y, "")); break;
    }
    return mkval(rt, r);
  }
  if (rt.kind == T_INT) {
    LLVMValueRef x = a.v, y = b.v, r;
    switch (op) {
    case OP_ADD: r = LLVMBuildAdd(G->B, x, y, ""); break;
    case OP_SUB: r = LLVMBuildSub(G->B, x, y, ""); break;
    case OP_MUL: r = LLVMBuildMul(G->B, x, y, ""); break;
    case OP_IDIV: r = int_idivmod(G, x, y, 0, line); break;
    default: r = int_idivmod(G, x, y, 1, line); break;
    }
    return mkval(rt, r);
  }
  LLVMValueRef x = num_to(G, a, rt.kind), y = num_to(G, b, rt.kind), r;
  LLVMTypeRef ty = rt.kind == T_F32 ? G->f32 : G->f64;
  if (G->f->fastmath && op <= OP_DIV && op != OP_IDIV) {
    /* fast-math: call the linked helpers (fadd fast ...), inlined by -O */
    static const char *const nm[] = { "fadd", "fsub", "fmul", "fdiv" };
    char name[40];
    snprintf(name, sizeof name, "kjit_%s_fast_%s", nm[op - OP_ADD], rt.kind == T_F32 ? "f32" : "f64");
    LLVMValueRef fn = LLVMGetNamedFunction(G->M, name);
    if (fn) {
      LLVMTypeRef pt[2] = { ty, ty };
      LLVMValueRef av[2] = { x, y };
      return mkval(rt, LLVMBuildCall2(G->B, LLVMFunctionType(ty, pt, 2, 0), fn, av, 2, ""));
    }
  }
  switch (op) {
  case OP_ADD: r = LLVMBuildFAdd(G->B, x, y, ""); break;
  case OP_SUB: r = LLVMBuildFSub(G->B, x, y, ""); break;
  case OP_MUL: r = LLVMBuildFMul(G->B, x, y, ""); break;
  case OP_DIV: r = LLVMBuildFDiv(G->B, x, y, ""); break;
  case OP_POW: r = float_pow(G, x, y); break;
  case OP_IDIV: {
    LLVMValueRef q = LLVMBuildFDiv(G->B, x, y, "");
    r = emit_math(G, "floor", ty, &q, 1);
    break;
  }
  default: r = float_mod(G, x, y); break;
  }
  return mkval(rt, r);
}

/* ---- Comparisons ------------------------------------------------------------------ */

enum { CMP_LT, CMP_LE, CMP_EQ };

/* Exact comparison of an integer with a float, as Lua does it. ifirst says
** whether the integer is the left operand. */
static LLVMValueRef cmp_int_float(CG *G, int cmp, LLVMValueRef i, LLVMValueRef f, int ifirst) {
  if (LLVMTypeOf(f) == G->f32) f = LLVMBuildFPExt(G->B, f, G->f64, "");
  LLVMValueRef fi = LLVMBuildSIToFP(G->B, i, G->f64, "");
  LLVMRealPredicate pred = cmp == CMP_EQ ? LLVMRealOEQ :
      cmp == CMP_LT ? LLVMRealOLT : LLVMRealOLE;
  LLVMValueRef fast = ifirst ? LLVMBuildFCmp(G->B, pred, fi, f, "")
                             : LLVMBuildFCmp(G->B, pred, f, fi, "");
  if (LLVMIsAConstantInt(i)) {
    long long c = LLVMConstIntGetSExtValue(i);
    if (c >= -(1LL << 53) && c <= (1LL << 53)) return fast;
  }
  /* integers beyond 2^53 are not exact as doubles: ask the runtime */
  LLVMValueRef fits = LLVMBuildICmp(G->B, LLVMIntULE,
      LLVMBuildAdd(G->B, i, ci64(G, 1LL << 53), ""), ci64(G, 1LL << 54), "");
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  LLVMBasicBlockRef slow = new_bb(G, "cmpslow"), done = new_bb(G, "cmpdone");
  LLVMBuildCondBr(G->B, fits, done, slow);
  LLVMPositionBuilderAtEnd(G->B, slow);
  int code = cmp == CMP_EQ ? 4 : (ifirst ? 0 : 2) + (cmp == CMP_LE);
  LLVMTypeRef pt[3] = { G->i32, G->i64, G->f64 };
  LLVMValueRef av[3] = { ci32(G, code), i, f };
  LLVMValueRef r = ccall(G, "kjit_rt_cmp_int_float", G->i32, pt, av, 3);
  r = LLVMBuildICmp(G->B, LLVMIntNE, r, ci32(G, 0), "");
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMValueRef phi = LLVMBuildPhi(G->B, G->i1, "");
  LLVMValueRef vals[2] = { fast, r };
  LLVMBasicBlockRef bbs[2] = { here, slow };
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

static LLVMValueRef cmp_num(CG *G, int cmp, Val a, Val b) {
  if (a.t.kind == T_INT && b.t.kind == T_INT) {
    LLVMIntPredicate p = cmp == CMP_EQ ? LLVMIntEQ : cmp == CMP_LT ? LLVMIntSLT : LLVMIntSLE;
    return LLVMBuildICmp(G->B, p, a.v, b.v, "");
  }
  if (a.t.kind == T_INT) return cmp_int_float(G, cmp, a.v, b.v, 1);
  if (b.t.kind == T_INT) return cmp_int_float(G, cmp, b.v, a.v, 0);
  TypeKind k = (a.t.kind == T_F32 && b.t.kind == T_F32) ? T_F32 : T_F64;
  LLVMValueRef x = num_to(G, a, k), y = num_to(G, b, k);
  LLVMRealPredicate p = cmp == CMP_EQ ? LLVMRealOEQ : cmp == CMP_LT ? LLVMRealOLT : LLVMRealOLE;
  return LLVMBuildFCmp(G->B, p, x, y, "");
}

static Val emit_compare(CG *G, Expr *e, Val a, Val b) {
  OpKind op = e->u.bin.op;
  LLVMValueRef r;
  if (op == OP_EQ || op == OP_NE) {
    if (a.t.kind == T_MAYBE && kt_isnum(b.t))
      r = LLVMBuildAnd(G->B, a.flag, cmp_num(G, CMP_EQ, mkval(TY(a.t.sub), a.v), b), "");
    else if (b.t.kind == T_MAYBE && kt_isnum(a.t))
      r = LLVMBuildAnd(G->B, b.flag, cmp_num(G, CMP_EQ, a, mkval(TY(b.t.sub), b.v)), "");
    else if (kt_isnum(a.t) && kt_isnum(b.t)) r = cmp_num(G, CMP_EQ, a, b);
    else if (a.t.kind == T_BOOL && b.t.kind == T_BOOL)
      r = LLVMBuildICmp(G->B, LLVMIntEQ, a.v, b.v, "");
    else if (a.t.kind == T_STR && b.t.kind == T_STR)
      r = ci1(G, a.k && b.k && a.k->str && b.k->str && strcmp(a.k->str, b.k->str) == 0);
    else if (a.t.kind == T_NIL && b.t.kind == T_NIL) r = ci1(G, 1);
    else if (a.t.kind == T_MAYBE || b.t.kind == T_MAYBE) {
      if (b.t.kind == T_MAYBE && a.t.kind != T_MAYBE) { Val t = a; a = b; b = t; }
      /* a is maybe-false/nil (.dtype 1: nil); b is nil, a boolean or a maybe */
      LLVMValueRef isfalsy = LLVMBuildNot(G->B, a.flag, "");
      if (b.t.kind == T_NIL) r = a.t.dtype ? isfalsy : ci1(G, 0);
      else if (b.t.kind == T_BOOL)
        r = a.t.dtype ? ci1(G, 0) : LLVMBuildAnd(G->B, isfalsy, LLVMBuildNot(G->B, b.v, ""), "");
      else if (b.t.kind == T_MAYBE) {
        LLVMValueRef both_falsy = a.t.dtype == b.t.dtype
            ? LLVMBuildAnd(G->B, isfalsy, LLVMBuildNot(G->B, b.flag, ""), "") : ci1(G, 0);
        LLVMValueRef vals = cmp_num(G, CMP_EQ, mkval(TY(a.t.sub), a.v), mkval(TY(b.t.sub), b.v));
        LLVMValueRef both_num = LLVMBuildAnd(G->B, LLVMBuildAnd(G->B, a.flag, b.flag, ""), vals, "");
        r = LLVMBuildOr(G->B, both_falsy, both_num, "");
      } else r = ci1(G, 0);
    }
    else if (a.t.kind == T_FUNC && b.t.kind == T_FUNC) r = ci1(G, a.t.ref == b.t.ref);
    else r = ci1(G, 0);    /* different types are never equal */
    if (op == OP_NE) r = LLVMBuildNot(G->B, r, "");
    return mkval(TY(T_BOOL), r);
  }
  a = unwrap(G, a, e->line, e->u.bin.a);
  b = unwrap(G, b, e->line, e->u.bin.b);
  switch (op) {
  case OP_LT: r = cmp_num(G, CMP_LT, a, b); break;
  case OP_LE: r = cmp_num(G, CMP_LE, a, b); break;
  case OP_GT: r = cmp_num(G, CMP_LT, b, a); break;
  default: r = cmp_num(G, CMP_LE, b, a); break;
  }
  return mkval(TY(T_BOOL), r);
}

/* ---- and / or ------------------------------------------------------------------------ */

/* Merges two values of type t arriving from two blocks. */
static Val phi_val(CG *G, Type t, Val x, LLVMBasicBlockRef bx, Val y, LLVMBasicBlockRef by) {
  Val r = mkval(t, NULL);
  LLVMBasicBlockRef bbs[2] = { bx, by };
  if (t.kind == T_NIL) return r;
  LLVMValueRef pv = LLVMBuildPhi(G->B, llty(G, t), "");
  LLVMValueRef vs[2] = { x.v, y.v };
  LLVMAddIncoming(pv, vs, bbs, 2);
  r.v = pv;
  if (t.kind == T_MAYBE) {
    LLVMValueRef pf = LLVMBuildPhi(G->B, G->i1, "");
    LLVMValueRef fs[2] = { x.flag, y.flag };
    LLVMAddIncoming(pf, fs, bbs, 2);
    r.flag = pf;
  }
  return r;
}

/* The value `a` contributes to `a and b` (when a is falsy) or to `a or b`
** (when a is truthy), as a value of the result type rt. */
static Val logic_side(CG *G, Val a, Type rt, int isand, int line) {
  if (rt.kind == T_MAYBE) {
    if (isand) {   /* a is false or nil here: only the flag matters */
      Val r = mkval(rt, LLVMConstNull(llty(G, rt)));
      r.flag = ci1(G, 0);
      return r;
    }
    return convert(G, a, rt, line);   /* a truthy maybe: its number */
  }
  if (rt.kind == T_BOOL) {
    if (a.t.kind == T_BOOL) return a;
    return mkval(rt, ci1(G, !isand));
  }
  if (a.t.kind == T_MAYBE) return mkval(rt, num_to(G, mkval(TY(a.t.sub), a.v), rt.kind));
  return convert(G, a, rt, line);
}

static Val emit_logic(CG *G, Expr *e) {
  Type rt = etype(G, e);
  int isand = e->u.bin.op == OP_AND;
  Val a = emit_expr(G, e->u.bin.a);
  int always = kt_isnum(a.t) || a.t.kind == T_BUF;
  if (a.t.kind == T_NIL) return isand ? a : emit_expr(G, e->u.bin.b);
  if (always) return isand ? emit_expr(G, e->u.bin.b) : a;
  /* a is a boolean or maybe-false: branch on it */
  LLVMValueRef t = truthy(G, a);
  Val av = logic_side(G, a, rt, isand, e->line);
  LLVMBasicBlockRef from_a = LLVMGetInsertBlock(G->B);
  LLVMBasicBlockRef evalb = new_bb(G, isand ? "and" : "or"), done = new_bb(G, "logic");
  if (isand) LLVMBuildCondBr(G->B, t, evalb, done);
  else LLVMBuildCondBr(G->B, t, done, evalb);
  LLVMPositionBuilderAtEnd(G->B, evalb);
  Val b = emit_expr(G, e->u.bin.b);
  b = (rt.kind == T_BOOL && b.t.kind == T_MAYBE) ? mkval(rt, b.flag) : convert(G, b, rt, e->line);
  LLVMBasicBlockRef from_b = LLVMGetInsertBlock(G->B);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  return phi_val(G, rt, av, from_a, b, from_b);
}

static Val emit_unop(CG *G, Expr *e) {
  Val a = emit_expr(G, e->u.un.a);
  Type rt = etype(G, e);
  if (e->u.un.op == OP_NEG || e->u.un.op == OP_BNOT) a = unwrap(G, a, e->line, e->u.un.a);
  switch (e->u.un.op) {
  case OP_NOT: return mkval(TY(T_BOOL), LLVMBuildNot(G->B, truthy(G, a), ""));
  case OP_LEN: return mkval(TY(T_INT), a.dims[0]);
  case OP_NEG:
    if (a.t.kind == T_INT) return mkval(rt, LLVMBuildSub(G->B, ci64(G, 0), a.v, ""));
    if (G->target->kind == KT_NVPTX)   /* LLVM 7 IR has no fneg */
      return mkval(rt, LLVMBuildFSub(G->B, LLVMConstReal(LLVMTypeOf(a.v), -0.0), a.v, ""));
    return mkval(rt, LLVMBuildFNeg(G->B, a.v, ""));
  default:
    return mkval(rt, LLVMBuildXor(G->B, to_int_checked_src(G, a, e->line, e->u.un.a), ci64(G, -1), ""));
  }
}

/* ---- Calls --------------------------------------------------------------------------- */

/* Evaluates an expression list into out[], expanding a final call. */
static int emit_explist(CG *G, Expr **es, int n, Val *out, int max) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    Expr *e = es[i];
    if (i == n - 1 && e->kind == E_CALL && (G->sp->calls[e->id] || is_grid_call(G, e))) {
      Val tmp[KJIT_MAXRETS];
      int got = emit_call(G, e, tmp, KJIT_MAXRETS);
      for (int j = 0; j < got && k < max; j++) out[k++] = tmp[j];
      return k;
    }
    Val v = emit_expr(G, e);
    if (k < max) out[k++] = v;
  }
  return k;
}


/* Min/max with Lua's comparison order: keeps the first of equal values. */
static Val emit_minmax(CG *G, Expr *e, Val *a, int n, int ismax) {
  Type rt = etype(G, e);
  Val r = mkval(rt, num_to(G, a[0], rt.kind));
  for (int i = 1; i < n; i++) {
    Val x = mkval(rt, num_to(G, a[i], rt.kind));
    LLVMValueRef c = ismax ? cmp_num(G, CMP_LT, r, x) : cmp_num(G, CMP_LT, x, r);
    r.v = LLVMBuildSelect(G->B, c, x.v, r.v, "");
  }
  return r;
}

/* ---- Kernels: cuda.* built-ins ------------------------------------------------------ */

/* A special register as i64: group 0 threadIdx, 1 blockIdx, 2 blockDim,
** 3 gridDim; axis 0..2 (x, y, z). */
static LLVMValueRef sreg(CG *G, int group, int axis) {
  if (G->target->kind == KT_NVPTX) {
    static const char *const grp[] = { "tid", "ctaid", "ntid", "nctaid" };
    char name[48];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", grp[group], 'x' + axis);
    LLVMValueRef r = ccall(G, name, G->i32, NULL, NULL, 0);
    return LLVMBuildZExt(G->B, r, G->i64, "");
  }
  LLVMTypeRef pt[1] = { G->i32 };
  LLVMValueRef av[1] = { ci32(G, group * 3 + axis) };
  return ccall(G, "kjit_sim_sreg", G->i64, pt, av, 1);
}

/* Compare-and-swap on the integer at p: returns the old value. */
static LLVMValueRef atomic_cas(CG *G, LLVMValueRef p, LLVMValueRef cmp, LLVMValueRef nv) {
  LLVMValueRef pair = LLVMBuildAtomicCmpXchg(G->B, p, cmp, nv, LLVMAtomicOrderingMonotonic,
                                             LLVMAtomicOrderingMonotonic, 0);
  return LLVMBuildExtractValue(G->B, pair, 0, "");
}

static int is_grid_call(CG *G, Expr *e) {
  Type ft = etype(G, e->u.call.fn);
  return ft.kind == T_BUILTIN && (ft.ref == B_CUDA_GRID || ft.ref == B_CUDA_GRIDSIZE);
}

/* cuda.shared.array(n, dtype) and cuda.local_array(n, dtype): a 1-D array
** value over per-block shared memory or per-thread stack memory. */
static Val emit_array_alloc(CG *G, Expr *e, int id) {
  Type rt = etype(G, e);
  kjit_dtype d = (kjit_dtype)rt.dtype;
  LLVMTypeRef ety = dtype_llty(G, d);
  int64_t n = LLVMConstIntGetSExtValue(emit_expr(G, e->u.call.args[0]).v);
  int64_t esize = (int64_t)kjit_dtype_size(d);
  Val r = mkval(rt, NULL);
  LLVMTypeRef ep = LLVMPointerType(ety, 0);
  if (id == B_CUDA_LOCAL_ARRAY) {
    /* zeroed, so a kernel reads what the interpreted one reads */
    LLVMValueRef a = alloca_in_entry(G, LLVMArrayType(ety, (unsigned)n), "local");
    LLVMValueRef p = LLVMBuildBitCast(G->B, a, ep, "");
    if (G->target->kind == KT_NVPTX)   /* llvm.memset carries attributes LLVM 7 cannot read */
      LLVMBuildStore(G->B, LLVMConstNull(LLVMArrayType(ety, (unsigned)n)), a);
    else
      LLVMBuildMemSet(G->B, LLVMBuildBitCast(G->B, a, G->i8p, ""), LLVMConstInt(G->i8, 0, 0),
                      ci64(G, n * esize), 16);
    r.v = p;
    r.dims[0] = ci64(G, n);
    r.own_base = 1;   /* n >= 1 */
    return r;
  }
  r.own_base = n > 0;   /* a dynamic shared array may be empty */
  if (G->target->kind == KT_NVPTX) {
    LLVMValueRef g;
    if (n > 0) {
      g = LLVMAddGlobalInAddressSpace(G->M, LLVMArrayType(ety, (unsigned)n), "kjit_shared", 3);
      LLVMSetLinkage(g, LLVMInternalLinkage);
      LLVMSetInitializer(g, LLVMGetUndef(LLVMArrayType(ety, (unsigned)n)));
    } else {
      /* dynamic: one extern array, sized by the launch */
      g = LLVMGetNamedGlobal(G->M, "kjit_dynshared");
      if (g == NULL) {
        g = LLVMAddGlobalInAddressSpace(G->M, LLVMArrayType(G->i8, 0), "kjit_dynshared", 3);
        LLVMSetLinkage(g, LLVMExternalLinkage);
      }
    }
    LLVMSetAlignment(g, 16);
    LLVMValueRef p3 = LLVMBuildBitCast(G->B, g, LLVMPointerType(ety, 3), "");
    r.v = LLVMBuildAddrSpaceCast(G->B, p3, ep, "");
    if (n > 0) r.dims[0] = ci64(G, n);
    else {
      /* the kernel entry keeps the dynamic size in err->stack_limit */
      LLVMValueRef bytes = LLVMBuildLoad2(G->B, G->i64, LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_STACK_LIMIT, ""), "");
      r.dims[0] = LLVMBuildUDiv(G->B, bytes, ci64(G, esize), "");
    }
    return r;
  }
  /* simulator: the runtime keeps each block's shared memory */
  LLVMValueRef p;
  if (n > 0) {
    LLVMTypeRef pt[2] = { G->i64, G->i64 };
    LLVMValueRef av[2] = { ci64(G, ((int64_t)G->sp->index << 24) | e->id), ci64(G, n * esize) };
    p = ccall(G, "kjit_sim_shared", G->i8p, pt, av, 2);
    r.dims[0] = ci64(G, n);
  } else {
    LLVMValueRef out = alloca_in_entry(G, G->i64, "dynbytes");
    LLVMTypeRef pt[1] = { LLVMPointerType(G->i64, 0) };
    p = ccall(G, "kjit_sim_dynshared", G->i8p, pt, &out, 1);
    r.dims[0] = LLVMBuildUDiv(G->B, LLVMBuildLoad2(G->B, G->i64, out, ""), ci64(G, esize), "");
  }
  r.v = LLVMBuildBitCast(G->B, p, ep, "");
  return r;
}

/* Compare-and-swap loop computing *p = op(*p, v) for float max/min. */
static LLVMValueRef atomic_float_minmax(CG *G, LLVMValueRef p, LLVMValueRef v, int ismax) {
  LLVMTypeRef fty = LLVMTypeOf(v);
  LLVMTypeRef ity = fty == G->f32 ? G->i32 : G->i64;
  LLVMValueRef ip = LLVMBuildBitCast(G->B, p, LLVMPointerType(ity, 0), "");
  LLVMValueRef old0 = LLVMBuildLoad2(G->B, ity, ip, "");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(G->B);
  LLVMBasicBlockRef loop = new_bb(G, "casloop"), done = new_bb(G, "casdone");
  LLVMBuildBr(G->B, loop);
  LLVMPositionBuilderAtEnd(G->B, loop);
  LLVMValueRef old = LLVMBuildPhi(G->B, ity, "");
  LLVMValueRef oldf = LLVMBuildBitCast(G->B, old, fty, "");
  LLVMValueRef better = ismax ? LLVMBuildFCmp(G->B, LLVMRealOGT, v, oldf, "")
                              : LLVMBuildFCmp(G->B, LLVMRealOLT, v, oldf, "");
  LLVMValueRef nf = LLVMBuildSelect(G->B, better, v, oldf, "");
  LLVMValueRef seen = atomic_cas(G, ip, old, LLVMBuildBitCast(G->B, nf, ity, ""));
  LLVMValueRef ok = LLVMBuildICmp(G->B, LLVMIntEQ, seen, old, "");
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  LLVMValueRef inc[2] = { old0, seen };
  LLVMBasicBlockRef from[2] = { pre, here };
  LLVMAddIncoming(old, inc, from, 2);
  LLVMBuildCondBr(G->B, ok, done, loop);
  LLVMPositionBuilderAtEnd(G->B, done);
  return oldf;
}

/* cuda.atomic.*(arr, i, v [, new]): returns the element's old value. */
static Val emit_atomic(CG *G, Expr *e, int id, Val *a) {
  int line = e->line;
  kjit_dtype d = (kjit_dtype)a[0].t.dtype;
  LLVMValueRef p;
  index_buffer(G, e, a[0], a[1], &p);
  int isf = d == KJIT_F32 || d == KJIT_F64, uns = d == KJIT_U32 || d == KJIT_U64;
  LLVMValueRef v = elem_value(G, d, a[2], line);
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
    default: {   /* cas(arr, i, expected, new) */
      LLVMValueRef nv = elem_value(G, d, a[3], line);
      LLVMValueRef pair = LLVMBuildAtomicCmpXchg(G->B, p, v, nv, mo, mo, 0);
      old = LLVMBuildExtractValue(G->B, pair, 0, "");
      goto widen;
    }
    }
    old = LLVMBuildAtomicRMW(G->B, op, p, v, mo, 0);
  } else {
    LLVMTypeRef fty = LLVMTypeOf(v);
    switch (id) {
    case B_CUDA_ATOMIC_ADD: case B_CUDA_ATOMIC_SUB:
      if (id == B_CUDA_ATOMIC_SUB) v = LLVMBuildFSub(G->B, LLVMConstReal(fty, -0.0), v, "");
      if (G->target->kind == KT_NVPTX) {
        /* LLVM 7 has no atomicrmw fadd: NVVM's own intrinsic */
        LLVMTypeRef pt[2] = { LLVMTypeOf(p), fty };
        LLVMValueRef av[2] = { p, v };
        old = ccall(G, fty == G->f32 ? "llvm.nvvm.atomic.load.add.f32.p0f32"
                                     : "llvm.nvvm.atomic.load.add.f64.p0f64", fty, pt, av, 2);
      } else {
        old = LLVMBuildAtomicRMW(G->B, LLVMAtomicRMWBinOpFAdd, p, v, mo, 0);
      }
      break;
    case B_CUDA_ATOMIC_MAX: case B_CUDA_ATOMIC_MIN:
      old = atomic_float_minmax(G, p, v, id == B_CUDA_ATOMIC_MAX);
      break;
    default: {   /* exch */
      LLVMTypeRef ity = fty == G->f32 ? G->i32 : G->i64;
      LLVMValueRef ip = LLVMBuildBitCast(G->B, p, LLVMPointerType(ity, 0), "");
      old = LLVMBuildAtomicRMW(G->B, LLVMAtomicRMWBinOpXchg, ip, LLVMBuildBitCast(G->B, v, ity, ""), mo, 0);
      old = LLVMBuildBitCast(G->B, old, fty, "");
      break;
    }
    }
  }
widen:
  switch (d) {
  case KJIT_I32: return mkval(TY(T_INT), LLVMBuildSExt(G->B, old, G->i64, ""));
  case KJIT_U32: return mkval(TY(T_INT), LLVMBuildZExt(G->B, old, G->i64, ""));
  case KJIT_F32: return mkval(TY(T_F32), old);
  case KJIT_F64: return mkval(TY(T_F64), old);
  default: return mkval(TY(T_INT), old);
  }
}

static Val emit_cuda(CG *G, Expr *e, int id, Val *a, int n) {
  (void)n;
  switch (id) {
  case B_CUDA_SYNCTHREADS:
    G->S->uses_sync = 1;
    if (G->target->kind == KT_NVPTX) ccall(G, "llvm.nvvm.barrier0", LLVMVoidTypeInContext(G->C), NULL, NULL, 0);
    else ccall(G, "kjit_sim_syncthreads", LLVMVoidTypeInContext(G->C), NULL, NULL, 0);
    return mkval(TY(T_NIL), NULL);
  case B_CUDA_THREADFENCE:
    if (G->target->kind == KT_NVPTX) ccall(G, "llvm.nvvm.membar.gl", LLVMVoidTypeInContext(G->C), NULL, NULL, 0);
    else LLVMBuildFence(G->B, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
    return mkval(TY(T_NIL), NULL);
  case B_CUDA_SHARED_ARRAY: case B_CUDA_LOCAL_ARRAY:
    return emit_array_alloc(G, e, id);
  case B_CUDA_ATOMIC_ADD: case B_CUDA_ATOMIC_SUB: case B_CUDA_ATOMIC_MAX:
  case B_CUDA_ATOMIC_MIN: case B_CUDA_ATOMIC_EXCH: case B_CUDA_ATOMIC_CAS:
    for (int i = 1; i < n; i++) a[i] = unwrap(G, a[i], e->line, NULL);
    return emit_atomic(G, e, id, a);
  default:
    ERR(G, e->line, "'%s' is not supported in compiled code", kir_builtin_name(id));
  }
}

static Val emit_builtin(CG *G, Expr *e, int id, Val *a, int n) {
  Type rt = etype(G, e);
  int line = e->line;
  if (B_IS_CUDA(id)) return emit_cuda(G, e, id, a, n);
  if (id != B_ERROR && id != B_ASSERT)
    for (int i = 0; i < n; i++) a[i] = unwrap(G, a[i], line, e->u.call.args[i < e->u.call.nargs ? i : e->u.call.nargs - 1]);
  LLVMTypeRef fty = rt.kind == T_F32 ? G->f32 : G->f64;
  switch (id) {
  case B_MATH_FLOOR: case B_MATH_CEIL: {
    if (a[0].t.kind == T_INT) return a[0];
    LLVMValueRef x = num_to(G, a[0], T_F64);
    LLVMValueRef f = emit_math(G, id == B_MATH_FLOOR ? "floor" : "ceil", G->f64, &x, 1);
    /* f is integral, infinite or NaN: it converts exactly iff it lies in
    ** [-2^63, 2^63). The hot path tests |f| < 2^63 only (false for NaN);
    ** -2^63 itself is admitted on the cold path, before raising. */
    LLVMValueRef af = emit_math(G, "fabs", G->f64, &f, 1);
    LLVMBasicBlockRef slow = new_bb(G, "floorslow"), cont = new_bb(G, "floorok");
    cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildFCmp(G->B, LLVMRealOLT, af, cf64(G, 9223372036854775808.0), ""),
                                  cont, slow));
    LLVMPositionBuilderAtEnd(G->B, slow);
    emit_check(G, LLVMBuildFCmp(G->B, LLVMRealOEQ, f, cf64(G, -9223372036854775808.0), ""), KE_NOINT, line,
               NULL, NULL, NULL);
    LLVMBuildBr(G->B, cont);
    LLVMPositionBuilderAtEnd(G->B, cont);
    return mkval(TY(T_INT), LLVMBuildFPToSI(G->B, f, G->i64, ""));
  }
  case B_MATH_ABS:
    if (a[0].t.kind == T_INT) {
      LLVMValueRef neg = LLVMBuildICmp(G->B, LLVMIntSLT, a[0].v, ci64(G, 0), "");
      return mkval(rt, LLVMBuildSelect(G->B, neg, LLVMBuildSub(G->B, ci64(G, 0), a[0].v, ""), a[0].v, ""));
    }
    return mkval(rt, emit_math(G, "fabs", LLVMTypeOf(a[0].v), &a[0].v, 1));
  case B_MATH_SQRT: case B_MATH_SIN: case B_MATH_COS: case B_MATH_EXP: {
    static const char *in[] = { "sqrt", "sin", "cos", "exp" };
    int w = id == B_MATH_SQRT ? 0 : id == B_MATH_SIN ? 1 : id == B_MATH_COS ? 2 : 3;
    LLVMValueRef x = num_to(G, a[0], rt.kind);
    return mkval(rt, emit_math(G, in[w], fty, &x, 1));
  }
  case B_MATH_TAN: case B_MATH_ASIN: case B_MATH_ACOS: {
    const char *nm = id == B_MATH_TAN ? "tan" : id == B_MATH_ASIN ? "asin" : "acos";
    LLVMValueRef x = num_to(G, a[0], rt.kind);
    return mkval(rt, emit_math(G, nm, fty, &x, 1));
  }
  case B_MATH_ATAN: {
    LLVMValueRef y = num_to(G, a[0], rt.kind);
    LLVMValueRef x = n >= 2 ? num_to(G, a[1], rt.kind) : LLVMConstReal(fty, 1.0);
    LLVMValueRef av[2] = { y, x };
    return mkval(rt, emit_math(G, "atan2", fty, av, 2));
  }
  case B_MATH_LOG: {
    LLVMValueRef x = num_to(G, a[0], rt.kind);
    LLVMValueRef lx = emit_math(G, "log", fty, &x, 1);
    if (n < 2) return mkval(rt, lx);
    LLVMValueRef b = num_to(G, a[1], rt.kind);
    LLVMValueRef l2 = emit_math(G, "log2", fty, &x, 1);
    LLVMValueRef l10 = emit_math(G, "log10", fty, &x, 1);
    LLVMValueRef lb = emit_math(G, "log", fty, &b, 1);
    LLVMValueRef q = LLVMBuildFDiv(G->B, lx, lb, "");
    LLVMValueRef is2 = LLVMBuildFCmp(G->B, LLVMRealOEQ, b, LLVMConstReal(fty, 2.0), "");
    LLVMValueRef is10 = LLVMBuildFCmp(G->B, LLVMRealOEQ, b, LLVMConstReal(fty, 10.0), "");
    return mkval(rt, LLVMBuildSelect(G->B, is2, l2, LLVMBuildSelect(G->B, is10, l10, q, ""), ""));
  }
  case B_MATH_FMOD:
    if (rt.kind == T_INT) {
      LLVMValueRef d = a[1].v;
      emit_check(G, LLVMBuildICmp(G->B, LLVMIntNE, d, ci64(G, 0), ""), KE_FMOD0, line, NULL, NULL, NULL);
      LLVMValueRef neg1 = LLVMBuildICmp(G->B, LLVMIntEQ, d, ci64(G, -1), "");
      LLVMValueRef sd = LLVMBuildSelect(G->B, neg1, ci64(G, 1), d, "");
      return mkval(rt, LLVMBuildSRem(G->B, a[0].v, sd, ""));
    }
    return mkval(rt, LLVMBuildFRem(G->B, num_to(G, a[0], rt.kind), num_to(G, a[1], rt.kind), ""));
  case B_MATH_MAX: return emit_minmax(G, e, a, n, 1);
  case B_MATH_MIN: return emit_minmax(G, e, a, n, 0);
  case B_MATH_TOINTEGER: {
    if (a[0].t.kind == T_INT) return a[0];
    Val r = mkval(rt, NULL);
    LLVMValueRef ok;
    r.v = float_to_int_exact(G, num_to(G, a[0], T_F64), &ok);
    r.flag = ok;
    return r;
  }
  case B_MATH_TYPE: {
    Val r = mkval(TY(T_STR), NULL);
    r.k = &G->sp->consts[e->id];
    return r;
  }
  case B_MATH_ULT:
  {
    LLVMValueRef x = to_int_arg(G, a[0], line, 1, "ult");   /* argument #1 is checked first */
    LLVMValueRef y = to_int_arg(G, a[1], line, 2, "ult");
    return mkval(TY(T_BOOL), LLVMBuildICmp(G->B, LLVMIntULT, x, y, ""));
  }
  case B_ERROR: {
    int level = 1;
    if (n >= 2 && a[1].v && LLVMIsAConstantInt(a[1].v)) level = (int)LLVMConstIntGetSExtValue(a[1].v);
    /* field c: how many callers up the position is (error's level - 1) */
    emit_raise(G, level == 0 ? KE_USER_NOPOS : KE_USER, line, NULL, NULL,
               ci64(G, level > 1 ? level - 1 : 0), a[0].k && a[0].k->str ? a[0].k->str : "");
    return mkval(TY(T_NIL), NULL);
  }
  case B_ASSERT: {
    LLVMValueRef ok = truthy(G, a[0]);
    LLVMBasicBlockRef fail = new_bb(G, "assert"), cont = new_bb(G, "ok");
    LLVMBuildCondBr(G->B, ok, cont, fail);
    LLVMPositionBuilderAtEnd(G->B, fail);
    emit_raise(G, KE_ASSERT, line, NULL, NULL, NULL,
               n >= 2 && a[1].k && a[1].k->str ? a[1].k->str : "assertion failed!");
    LLVMBuildUnreachable(G->B);
    LLVMPositionBuilderAtEnd(G->B, cont);
    return a[0];
  }
  default:
    ERR(G, line, "'%s' is not supported in compiled code", kir_builtin_name(id));
  }
}

/* Emits a call; writes up to max results into out and returns how many. */
static int emit_call(CG *G, Expr *e, Val *out, int max) {
  Type ft = etype(G, e->u.call.fn);
  Val args[KJIT_MAXARGS + KJIT_MAXRETS];
  if (ft.kind == T_BUILTIN && (ft.ref == B_CUDA_GRID || ft.ref == B_CUDA_GRIDSIZE)) {
    Val d = emit_expr(G, e->u.call.args[0]);
    int nd = (int)LLVMConstIntGetSExtValue(d.v), k = 0;
    for (int axis = 0; axis < nd && k < max; axis++) {
      LLVMValueRef tid = sreg(G, 0, axis), ctaid = sreg(G, 1, axis), ntid = sreg(G, 2, axis);
      out[k++] = mkval(TY(T_INT), ft.ref == B_CUDA_GRID
          ? LLVMBuildAdd(G->B, LLVMBuildAdd(G->B, LLVMBuildMul(G->B, ctaid, ntid, ""), tid, ""), ci64(G, 1), "")
          : LLVMBuildMul(G->B, ntid, sreg(G, 3, axis), ""));
    }
    return nd;
  }
  if (ft.kind == T_BUILTIN) {
    int n = emit_explist(G, e->u.call.args, e->u.call.nargs, args, KJIT_MAXARGS);
    Val r = emit_builtin(G, e, ft.ref, args, n);
    if (max > 0) out[0] = r;
    return r.t.kind == T_NIL ? 0 : 1;
  }
  emit_expr(G, e->u.call.fn);   /* a constant; nothing to evaluate */
  KSpec *callee = G->sp->calls[e->id];
  G->S->has_calls = 1;
  int n = emit_explist(G, e->u.call.args, e->u.call.nargs, args, KJIT_MAXARGS);
  LLVMValueRef av[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 2 * KJIT_MAXRETS + 1];
  int na = 0;
  for (int i = 0; i < callee->nargs; i++) {
    Type pt = callee->args[i];
    if (pt.kind == T_NIL || pt.kind == T_FUNC) continue;
    Val v = i < n ? convert(G, args[i], pt, e->line) : convert(G, mkval(TY(T_NIL), NULL), pt, e->line);
    av[na++] = v.v;
    if (pt.kind == T_MAYBE) av[na++] = v.flag;
    if (pt.kind == T_BUF) for (int d = 0; d < pt.ndim; d++) av[na++] = v.dims[d];
  }
  LLVMValueRef rp[KJIT_MAXRETS], rf[KJIT_MAXRETS];
  for (int r = 0; r < callee->nret; r++) {
    rp[r] = rf[r] = NULL;
    if (callee->rets[r].kind == T_NIL || callee->pure) continue;
    rp[r] = alloca_in_entry(G, llty(G, callee->rets[r]), "ret");
    av[na++] = rp[r];
    rf[r] = NULL;
    if (callee->rets[r].kind == T_MAYBE) av[na++] = rf[r] = alloca_in_entry(G, G->i1, "retflag");
  }
  if (callee->pure) {
    /* a pure recursion may become a loop (no stack growth to check): its
    ** depth counts instead, so infinite recursion still ends in "stack
    ** overflow" */
    LLVMValueRef d = G->sp->pure ? LLVMBuildAdd(G->B, G->depth, ci32(G, 1), "") : ci32(G, 1);
    emit_check(G, LLVMBuildICmp(G->B, LLVMIntSLE, d, ci32(G, KJIT_PURE_MAXDEPTH), ""), KE_STACK,
               e->line, NULL, NULL, NULL);
    av[na++] = d;
  }
  av[na++] = G->err;
  if (G->target->kind != KT_NVPTX) {
    /* compiled frames live on the C stack: stop before it runs out
    ** (err->stack_limit comes from the dispatcher, per thread) and report
    ** it at this call, as Lua does */
    /* the address of a return slot in this frame stands for the stack
    ** pointer (llvm.frameaddress would force a frame pointer) */
    LLVMValueRef probe;
    if (G->sp->pure) {
      /* the address of an alloca would escape, and LLVM does not mark
      ** calls after an escaped alloca as tail calls, which tail-recursion
      ** elimination needs: pure functions pay for a frame pointer instead */
      LLVMValueRef zero = ci32(G, 0);
      LLVMTypeRef i8p = G->i8p;
      unsigned id = LLVMLookupIntrinsicID("llvm.frameaddress", 17);
      LLVMValueRef fn = LLVMGetIntrinsicDeclaration(G->M, id, &i8p, 1);
      probe = LLVMBuildCall2(G->B, LLVMIntrinsicGetType(G->C, id, &i8p, 1), fn, &zero, 1, "");
    } else {
      probe = callee->nret > 0 && rp[0] ? rp[0] : alloca_in_entry(G, G->i64, "sp");
    }
    LLVMValueRef sp = LLVMBuildPtrToInt(G->B, probe, G->i64, "");
    LLVMValueRef lim = LLVMBuildLoad2(G->B, G->i64, LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_STACK_LIMIT, ""), "");
    emit_check(G, LLVMBuildICmp(G->B, LLVMIntUGT, sp, lim, ""), KE_STACK, e->line, NULL, NULL, NULL);
  }
  LLVMValueRef st = LLVMBuildCall2(G->B, (LLVMTypeRef)callee->llfnty,
                                   (LLVMValueRef)callee->llfunc, av, na, "");
  if (callee->pure) {
    /* the result comes back in a register; a failure is in err->kind.
    ** A pure caller carries on (nothing to undo, the first error stays):
    ** no test here, so `return f(n-1) + f(n-2)` stays a tail position */
    if (!G->sp->pure) {
      LLVMValueRef k = LLVMBuildLoad2(G->B, G->i32, LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_KIND, ""), "");
      LLVMBasicBlockRef fail = new_bb(G, "callfail"), cont = new_bb(G, "callok");
      cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, k, ci32(G, 0), ""), cont, fail));
      LLVMPositionBuilderAtEnd(G->B, fail);
      emit_fail_ret(G);
      LLVMPositionBuilderAtEnd(G->B, cont);
    }
    if (max > 0) out[0] = mkval(callee->rets[0], st);
    return 1;
  }
  /* propagate a callee's error: *err is already filled */
  LLVMBasicBlockRef fail = new_bb(G, "callfail"), cont = new_bb(G, "callok");
  cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, ci32(G, 0), ""), cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  {
    /* error("msg", 2) in the callee: the position is this call's line */
    LLVMValueRef lp = LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_C, "");
    LLVMValueRef lv = LLVMBuildLoad2(G->B, G->i64, lp, "");
    LLVMValueRef kind = LLVMBuildLoad2(G->B, G->i32, LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_KIND, ""), "");
    LLVMValueRef pending = LLVMBuildAnd(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, kind, ci32(G, KE_USER), ""),
                                        LLVMBuildICmp(G->B, LLVMIntSGT, lv, ci64(G, 0), ""), "");
    LLVMBasicBlockRef move = new_bb(G, "errlevel"), out = new_bb(G, "errout");
    LLVMBuildCondBr(G->B, pending, move, out);
    LLVMPositionBuilderAtEnd(G->B, move);
    LLVMBuildStore(G->B, LLVMBuildSub(G->B, lv, ci64(G, 1), ""), lp);
    store_err_field(G, KERR_F_LINE, ci32(G, e->line));
    store_err_field(G, KERR_F_CHUNK, G->chunkname);
    LLVMBuildBr(G->B, out);
    LLVMPositionBuilderAtEnd(G->B, out);
  }
  LLVMBuildRet(G->B, st);
  LLVMPositionBuilderAtEnd(G->B, cont);
  int k = 0;
  for (int r = 0; r < callee->nret && k < max; r++) {
    if (rp[r] == NULL) { out[k++] = mkval(TY(T_NIL), NULL); continue; }
    out[k] = mkval(callee->rets[r], LLVMBuildLoad2(G->B, llty(G, callee->rets[r]), rp[r], ""));
    if (rf[r]) out[k].flag = LLVMBuildLoad2(G->B, G->i1, rf[r], "");
    k++;
  }
  return k;
}

/* The first result of a call (nil if none). Kept out of emit_expr so the
** recursive emit_expr frame stays small. */
static __attribute__((noinline)) Val emit_call1(CG *G, Expr *e) {
  Val r[KJIT_MAXRETS];
  int n = emit_call(G, e, r, KJIT_MAXRETS);
  if (n == 0) return mkval(TY(T_NIL), NULL);
  return r[0];
}

/* A narrowed local (its i32 value) or an int32 constant, for a 32-bit
** compare inside a loop with narrow counters. */
static int narrow_operand(CG *G, Expr *x, LLVMValueRef *v) {
  if (x->kind == E_INT && x->u.i >= INT32_MIN && x->u.i <= INT32_MAX) {
    *v = ci32(G, (int32_t)x->u.i);
    return 1;
  }
  if (x->kind != E_NAME || !x->u.name.var || G->sp->vartypes[x->u.name.var->id].kind != T_INT) return 0;
  VarSlot *s = var_slot(G, x->u.name.var);
  if (!s->narrow) return 0;
  *v = LLVMBuildLoad2(G->B, G->i32, s->v, x->u.name.var->name);
  return 1;
}

static Val emit_expr(CG *G, Expr *e) {
  Type t = etype(G, e);
  switch (e->kind) {
  case E_NIL: return mkval(TY(T_NIL), NULL);
  case E_TRUE: return mkval(TY(T_BOOL), ci1(G, 1));
  case E_FALSE: return mkval(TY(T_BOOL), ci1(G, 0));
  case E_INT: return mkval(t, ci64(G, e->u.i));
  case E_FLT: return mkval(t, cf64(G, e->u.f));
  case E_STR: { Val r = mkval(TY(T_STR), NULL); r.k = &G->sp->consts[e->id]; return r; }
  case E_NAME:
    if (e->u.name.var) return load_var(G, e->u.name.var);
    return const_val(G, e, &G->sp->consts[e->id]);
  case E_INDEX: return emit_index(G, e);
  case E_FIELD: return emit_field(G, e);
  case E_CALL: return emit_call1(G, e);
  case E_BINOP: {
    OpKind op = e->u.bin.op;
    if (op == OP_AND || op == OP_OR) return emit_logic(G, e);
    if (G->narrowing && op >= OP_EQ && op <= OP_GE) {
      LLVMValueRef x, y;   /* compared in 32 bits: see "Narrow loop counters" */
      if (narrow_operand(G, e->u.bin.a, &x) && narrow_operand(G, e->u.bin.b, &y)) {
        static const LLVMIntPredicate pred[] = { LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE };
        return mkval(TY(T_BOOL), LLVMBuildICmp(G->B, pred[op - OP_EQ], x, y, ""));
      }
    }
    Val a = emit_expr(G, e->u.bin.a);
    Val b = emit_expr(G, e->u.bin.b);
    if (op >= OP_EQ && op <= OP_GE) return emit_compare(G, e, a, b);
    return emit_arith(G, e, a, b);
  }
  case E_UNOP: return emit_unop(G, e);
  case E_PAREN: return emit_expr(G, e->u.paren);
  default:
    ERR(G, e->line, "expression not supported in compiled code");
  }
}

/* ---- Statements ------------------------------------------------------------------------ */

static void emit_block(CG *G, Block *b);

/* The values of an assignment or `local` statement, their bounds checks
** deferred to one branch after them when they allow it. */
static int emit_values(CG *G, Expr **es, int n, Val *vals) {
  G->deferring = defer_checks_for(G, es, n);
  int k = emit_explist(G, es, n, vals, KJIT_MAXRETS);
  G->deferring = 0;
  flush_checks(G);
  return k;
}

static void emit_local(CG *G, Stmt *s) {
  Val vals[KJIT_MAXRETS];
  int n = emit_values(G, s->u.local.exprs, s->u.local.nexprs, vals);
  for (int i = 0; i < s->u.local.nnames; i++)
    store_var(G, s->u.local.vars[i], i < n ? vals[i] : mkval(TY(T_NIL), NULL), s->line);
}

static void emit_assign(CG *G, Stmt *s) {
  /* Lua evaluates the targets' subexpressions, then the values, then assigns */
  int nt = s->u.assign.ntargets;
  Val objs[KJIT_MAXRETS], keys[KJIT_MAXRETS];
  if (nt > KJIT_MAXRETS) ERR(G, s->line, "too many assignment targets");
  for (int i = 0; i < nt; i++) {
    Expr *t = s->u.assign.targets[i];
    if (t->kind == E_INDEX) {
      objs[i] = emit_expr(G, t->u.index.obj);
      keys[i] = emit_expr(G, t->u.index.key);
    }
  }
  Val vals[KJIT_MAXRETS];
  int n = emit_values(G, s->u.assign.exprs, s->u.assign.nexprs, vals);
  for (int i = nt - 1; i >= 0; i--) {
    Expr *t = s->u.assign.targets[i];
    Val v = i < n ? vals[i] : mkval(TY(T_NIL), NULL);
    if (t->kind == E_NAME) store_var(G, t->u.name.var, v, s->line);
    else {
      if (!kt_isnum(v.t) && v.t.kind != T_MAYBE)
        ERR(G, s->line, "cannot store a %s value in a kjit array",
            v.t.kind == T_NIL ? "nil" : v.t.kind == T_MAYBE ? "false-or-number" : "non-number");
      LLVMValueRef elem;
      index_buffer(G, t, objs[i], keys[i], &elem);
      store_elem(G, objs[i].t.dtype, elem, v, s->line);
    }
  }
}

static void emit_if(CG *G, Stmt *s) {
  LLVMBasicBlockRef done = new_bb(G, "endif");
  for (int i = 0; i < s->u.ifs.n; i++) {
    Val c = emit_expr(G, s->u.ifs.conds[i]);
    LLVMBasicBlockRef then = new_bb(G, "then"), next = new_bb(G, "else");
    LLVMBuildCondBr(G->B, truthy(G, c), then, next);
    LLVMPositionBuilderAtEnd(G->B, then);
    emit_block(G, s->u.ifs.blocks[i]);
    if (!terminated(G)) LLVMBuildBr(G->B, done);
    LLVMPositionBuilderAtEnd(G->B, next);
  }
  if (s->u.ifs.els) emit_block(G, s->u.ifs.els);
  if (!terminated(G)) LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
}

/* A loop body: `break` leaves to exit; falling off its end goes to next. */
static void emit_loop_body(CG *G, Block *body, LLVMBasicBlockRef exit, LLVMBasicBlockRef next) {
  LoopCtx lc = { exit, G->loop };
  G->loop = &lc;
  emit_block(G, body);
  G->loop = lc.prev;
  if (!terminated(G)) LLVMBuildBr(G->B, next);
}

static void emit_while_loop(CG *G, Stmt *s) {
  LLVMBasicBlockRef head = new_bb(G, "while"), body = new_bb(G, "body"), exit = new_bb(G, "wend");
  LLVMBuildBr(G->B, head);
  LLVMPositionBuilderAtEnd(G->B, head);
  Val c = emit_expr(G, s->u.loop.cond);
  LLVMBuildCondBr(G->B, truthy(G, c), body, exit);
  LLVMPositionBuilderAtEnd(G->B, body);
  emit_loop_body(G, s->u.loop.body, exit, head);
  LLVMPositionBuilderAtEnd(G->B, exit);
}

/* ---- Narrow loop counters (kernels) -------------------------------------------
** Lua integers are 64 bits wide, and on the GPU a 64-bit add or compare is
** two instructions: mandelbrot's `while k < maxit and ... do ... k = k + 1
** end` measured 1.22x the time of the same CUDA C loop with an int counter
** on an H100 (1.03x with a long long one). So in a kernel, a while loop
** whose condition requires `k < e` or `k <= e` (an `and` operand at the
** top), k an integer local that the body changes only by one `k = k + 1`
** (not inside an inner loop), e an integer constant or a local the body
** never assigns, is emitted twice. When k and e are in [INT32_MIN,
** INT32_MAX - 1] at entry, k + 1 stays in int32 range while the condition
** holds, so the first copy keeps k and e in 32-bit slots, read sign-extended
** (the same values: only the instructions change); otherwise the plain loop
** runs. k is copied back to its 64-bit slot when the loop ends. Compares
** between narrowed locals and int32 constants are emitted in 32 bits
** (narrow_operand): LLVM keeps a compare of two sign extensions 64-bit, and
** then widens the counter back. The step needs nothing: LLVM folds
** trunc(sext(k) + 1) into a 32-bit add. */

typedef struct NarrowScan { Var *k; int steps, other; } NarrowScan;

/* x is `k + 1` or `1 + k` */
static int is_step(Expr *x, Var *k) {
  if (x == NULL || x->kind != E_BINOP || x->u.bin.op != OP_ADD) return 0;
  Expr *a = x->u.bin.a, *b = x->u.bin.b;
  if (a->kind == E_INT) { Expr *t = a; a = b; b = t; }
  return a->kind == E_NAME && a->u.name.var == k && b->kind == E_INT && b->u.i == 1;
}

/* Counts in b the `k = k + 1` statements outside inner loops (steps) and
** anything else that would break the proof (other): another assignment to
** k, a step inside an inner loop, goto or a label. */
static void narrow_scan_block(Block *b, NarrowScan *ns, int inloop);
static void narrow_scan_stmt(Stmt *s, NarrowScan *ns, int inloop) {
  switch (s->kind) {
  case S_ASSIGN:
    for (int i = 0; i < s->u.assign.ntargets; i++) {
      Expr *t = s->u.assign.targets[i];
      if (t->kind != E_NAME || t->u.name.var != ns->k) continue;
      int step = !inloop && s->u.assign.ntargets == 1 && s->u.assign.nexprs == 1 &&
                 is_step(s->u.assign.exprs[0], ns->k);
      if (step) ns->steps++; else ns->other++;
    }
    break;
  case S_DO: narrow_scan_block(s->u.block, ns, inloop); break;
  case S_WHILE: case S_REPEAT: narrow_scan_block(s->u.loop.body, ns, 1); break;
  case S_FORNUM:
    if (s->u.fornum.var == ns->k) ns->other++;
    narrow_scan_block(s->u.fornum.body, ns, 1);
    break;
  case S_FORIN: narrow_scan_block(s->u.forin.body, ns, 1); break;
  case S_IF:
    for (int i = 0; i < s->u.ifs.n; i++) narrow_scan_block(s->u.ifs.blocks[i], ns, inloop);
    if (s->u.ifs.els) narrow_scan_block(s->u.ifs.els, ns, inloop);
    break;
  case S_GOTO: case S_LABEL: case S_FUNCTION: case S_LOCALFUNC: ns->other++; break;
  default: break;
  }
}
static void narrow_scan_block(Block *b, NarrowScan *ns, int inloop) {
  for (int i = 0; i < b->n; i++) narrow_scan_stmt(b->stmts[i], ns, inloop);
}

static int int_local(CG *G, Expr *e) {
  return e->kind == E_NAME && e->u.name.var && !e->u.name.var->is_loopvar &&
         G->sp->vartypes[e->u.name.var->id].kind == T_INT;
}

/* Finds `k < e` / `k <= e` (or `e > k` / `e >= k`) among the top-level
** `and` operands of cond that fits the rules above. */
static int narrow_find(CG *G, Expr *cond, Block *body, Var **k, Expr **bound) {
  while (cond->kind == E_PAREN) cond = cond->u.paren;
  if (cond->kind != E_BINOP) return 0;
  OpKind op = cond->u.bin.op;
  if (op == OP_AND)
    return narrow_find(G, cond->u.bin.a, body, k, bound) || narrow_find(G, cond->u.bin.b, body, k, bound);
  Expr *kx, *ex;
  if (op == OP_LT || op == OP_LE) { kx = cond->u.bin.a; ex = cond->u.bin.b; }
  else if (op == OP_GT || op == OP_GE) { kx = cond->u.bin.b; ex = cond->u.bin.a; }
  else return 0;
  if (!int_local(G, kx)) return 0;
  if (ex->kind == E_INT) {
    if (ex->u.i < INT32_MIN || ex->u.i > INT32_MAX - 1) return 0;
  } else {
    if (!int_local(G, ex) || ex->u.name.var == kx->u.name.var) return 0;
    NarrowScan es = { ex->u.name.var, 0, 0 };
    narrow_scan_block(body, &es, 0);
    if (es.steps || es.other) return 0;   /* e is assigned in the loop */
  }
  NarrowScan ns = { kx->u.name.var, 0, 0 };
  narrow_scan_block(body, &ns, 0);
  if (ns.steps != 1 || ns.other) return 0;
  *k = kx->u.name.var;
  *bound = ex;
  return 1;
}

/* i64 x in [INT32_MIN, INT32_MAX - 1] */
static LLVMValueRef fits_narrow(CG *G, LLVMValueRef x) {
  LLVMValueRef off = LLVMBuildSub(G->B, x, ci64(G, INT32_MIN), "");
  return LLVMBuildICmp(G->B, LLVMIntULE, off, ci64(G, (int64_t)UINT32_MAX - 1), "");
}

/* Moves v into a fresh i32 slot (v's value fits). Returns the old slot. */
static VarSlot narrow_slot(CG *G, Var *v) {
  VarSlot *s = var_slot(G, v), old = *s;
  LLVMValueRef x = LLVMBuildLoad2(G->B, G->i64, s->v, "");
  s->v = alloca_in_entry(G, G->i32, v->name);
  s->narrow = 1;
  LLVMBuildStore(G->B, LLVMBuildTrunc(G->B, x, G->i32, ""), s->v);
  return old;
}

static void par_note(CG *G, const char *fmt, ...);

static void emit_while(CG *G, Stmt *s) {
  par_note(G, "line %d: while loop: sequential (only kjit.prange loops run in parallel)", s->line);
  Var *k = NULL;
  Expr *bound = NULL;
  if (!G->S->kernel || G->narrowing || !narrow_find(G, s->u.loop.cond, s->u.loop.body, &k, &bound)) {
    emit_while_loop(G, s);
    return;
  }
  Var *e = bound->kind == E_NAME ? bound->u.name.var : NULL;
  LLVMValueRef ok = fits_narrow(G, load_var(G, k).v);
  if (e) ok = LLVMBuildAnd(G->B, ok, fits_narrow(G, load_var(G, e).v), "");
  LLVMBasicBlockRef narrow = new_bb(G, "narrow"), wide = new_bb(G, "wide"), done = new_bb(G, "loopdone");
  LLVMBuildCondBr(G->B, ok, narrow, wide);
  LLVMPositionBuilderAtEnd(G->B, narrow);
  VarSlot kold = narrow_slot(G, k), eold;
  if (e) eold = narrow_slot(G, e);
  G->narrowing++;
  emit_while_loop(G, s);
  G->narrowing--;
  LLVMValueRef kval = load_var(G, k).v;   /* sign-extended */
  VarSlot *ks = var_slot(G, k);
  *ks = kold;
  if (e) *var_slot(G, e) = eold;           /* never assigned: nothing to copy back */
  LLVMBuildStore(G->B, kval, ks->v);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, wide);
  emit_while_loop(G, s);
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
}


static void emit_repeat(CG *G, Stmt *s) {
  par_note(G, "line %d: repeat loop: sequential (only kjit.prange loops run in parallel)", s->line);
  LLVMBasicBlockRef body = new_bb(G, "repeat"), exit = new_bb(G, "rend");
  LLVMBuildBr(G->B, body);
  LLVMPositionBuilderAtEnd(G->B, body);
  LoopCtx lc = { exit, G->loop };
  G->loop = &lc;
  emit_block(G, s->u.loop.body);   /* the condition is inside the body's scope */
  G->loop = lc.prev;
  if (!terminated(G)) {
    Val c = emit_expr(G, s->u.loop.cond);
    LLVMBuildCondBr(G->B, truthy(G, c), exit, body);
  }
  LLVMPositionBuilderAtEnd(G->B, exit);
}

/* -- bounds-check hoisting for numeric for loops -- */

typedef struct LoopInfo {
  uint8_t *variant;      /* by Var.id: declared or assigned in the body */
  Hoist *h; int n, cap;
} LoopInfo;

static void mark_variant_block(CG *G, Block *b, uint8_t *variant);

static void mark_variant_stmt(CG *G, Stmt *s, uint8_t *variant) {
  switch (s->kind) {
  case S_LOCAL:
    for (int i = 0; i < s->u.local.nnames; i++) variant[s->u.local.vars[i]->id] = 1;
    break;
  case S_ASSIGN:
    for (int i = 0; i < s->u.assign.ntargets; i++) {
      Expr *t = s->u.assign.targets[i];
      if (t->kind == E_NAME && t->u.name.var) variant[t->u.name.var->id] = 1;
    }
    break;
  case S_DO: mark_variant_block(G, s->u.block, variant); break;
  case S_WHILE: case S_REPEAT: mark_variant_block(G, s->u.loop.body, variant); break;
  case S_IF:
    for (int i = 0; i < s->u.ifs.n; i++) mark_variant_block(G, s->u.ifs.blocks[i], variant);
    if (s->u.ifs.els) mark_variant_block(G, s->u.ifs.els, variant);
    break;
  case S_FORNUM:
    variant[s->u.fornum.var->id] = 1;
    mark_variant_block(G, s->u.fornum.body, variant);
    break;
  default: break;
  }
}

static void mark_variant_block(CG *G, Block *b, uint8_t *variant) {
  for (int i = 0; i < b->n; i++) mark_variant_stmt(G, b->stmts[i], variant);
}

/* An integer expression whose value cannot change inside the loop. */
static int invariant_int(CG *G, LoopInfo *li, Expr *e) {
  if (etype(G, e).kind != T_INT) return 0;
  if (e->kind == E_INT) return 1;
  if (e->kind == E_PAREN) return invariant_int(G, li, e->u.paren);
  if (e->kind == E_NAME)
    return e->u.name.var ? !li->variant[e->u.name.var->id] : G->sp->consts[e->id].type.kind == T_INT;
  return 0;
}

#define KJIT_MAXHOIST 256   /* hoisted checks per loop; the rest stay in place */

static void add_hoist(CG *G, LoopInfo *li, Hoist h) {
  if (li->n >= KJIT_MAXHOIST) return;
  li->h = ks_grow(G->S, li->h, li->n, &li->cap, sizeof *li->h);
  li->h[li->n++] = h;
}

/* Looks at one E_INDEX node: base chain and key form. */
static void consider_index(CG *G, LoopInfo *li, Var *lv, Expr *e) {
  int depth = 0;
  Expr *o = e->u.index.obj;
  while (o->kind == E_INDEX) { depth++; o = o->u.index.obj; }
  if (o->kind != E_NAME || o->u.name.var == NULL) return;
  Var *base = o->u.name.var;
  Type bt = G->sp->vartypes[base->id];
  if (bt.kind != T_BUF || li->variant[base->id] || depth >= bt.ndim) return;
  Expr *k = e->u.index.key;
  while (k->kind == E_PAREN) k = k->u.paren;
  if (etype(G, k).kind != T_INT) return;
  Hoist h = { e, base, depth, k, 0, NULL, 0 };
  if (k->kind == E_NAME && k->u.name.var == lv) { h.affine = 1; add_hoist(G, li, h); return; }
  if (k->kind == E_BINOP && (k->u.bin.op == OP_ADD || k->u.bin.op == OP_SUB)) {
    Expr *a = k->u.bin.a, *b = k->u.bin.b;
    while (a->kind == E_PAREN) a = a->u.paren;
    while (b->kind == E_PAREN) b = b->u.paren;
    if (a->kind == E_NAME && a->u.name.var == lv && invariant_int(G, li, b)) {
      h.affine = 1; h.off = b; h.negoff = k->u.bin.op == OP_SUB;
      add_hoist(G, li, h); return;
    }
    if (k->u.bin.op == OP_ADD && b->kind == E_NAME && b->u.name.var == lv && invariant_int(G, li, a)) {
      h.affine = 1; h.off = a; add_hoist(G, li, h); return;
    }
  }
  if (invariant_int(G, li, k)) add_hoist(G, li, h);
}

static void collect_expr(CG *G, LoopInfo *li, Var *lv, Expr *e) {
  if (e == NULL) return;
  switch (e->kind) {
  case E_INDEX:
    if (etype(G, e->u.index.obj).kind == T_BUF) consider_index(G, li, lv, e);
    collect_expr(G, li, lv, e->u.index.obj);
    collect_expr(G, li, lv, e->u.index.key);
    break;
  case E_FIELD: collect_expr(G, li, lv, e->u.field.obj); break;
  case E_CALL:
    for (int i = 0; i < e->u.call.nargs; i++) collect_expr(G, li, lv, e->u.call.args[i]);
    break;
  case E_BINOP: collect_expr(G, li, lv, e->u.bin.a); collect_expr(G, li, lv, e->u.bin.b); break;
  case E_UNOP: collect_expr(G, li, lv, e->u.un.a); break;
  case E_PAREN: collect_expr(G, li, lv, e->u.paren); break;
  default: break;
  }
}

static void collect_block(CG *G, LoopInfo *li, Var *lv, Block *b) {
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    switch (s->kind) {
    case S_LOCAL:
      for (int j = 0; j < s->u.local.nexprs; j++) collect_expr(G, li, lv, s->u.local.exprs[j]);
      break;
    case S_ASSIGN:
      for (int j = 0; j < s->u.assign.nexprs; j++) collect_expr(G, li, lv, s->u.assign.exprs[j]);
      for (int j = 0; j < s->u.assign.ntargets; j++) collect_expr(G, li, lv, s->u.assign.targets[j]);
      break;
    case S_CALL: collect_expr(G, li, lv, s->u.call); break;
    case S_DO: collect_block(G, li, lv, s->u.block); break;
    case S_WHILE: case S_REPEAT:
      collect_expr(G, li, lv, s->u.loop.cond);
      collect_block(G, li, lv, s->u.loop.body);
      break;
    case S_IF:
      for (int j = 0; j < s->u.ifs.n; j++) {
        collect_expr(G, li, lv, s->u.ifs.conds[j]);
        collect_block(G, li, lv, s->u.ifs.blocks[j]);
      }
      if (s->u.ifs.els) collect_block(G, li, lv, s->u.ifs.els);
      break;
    case S_FORNUM:
      collect_expr(G, li, lv, s->u.fornum.start);
      collect_expr(G, li, lv, s->u.fornum.limit);
      collect_expr(G, li, lv, s->u.fornum.step);
      collect_block(G, li, lv, s->u.fornum.body);
      break;
    case S_RETURN:
      for (int j = 0; j < s->u.ret.n; j++) collect_expr(G, li, lv, s->u.ret.exprs[j]);
      break;
    default: break;
    }
  }
}

static LLVMValueRef sext128(CG *G, LLVMValueRef x) { return LLVMBuildSExt(G->B, x, G->i128, ""); }

/* The test that proves every hoisted index in bounds for idx in [lo, hi]. */
static LLVMValueRef hoist_test(CG *G, LoopInfo *li, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMValueRef all = ci1(G, 1);
  for (int i = 0; i < li->n; i++) {
    Hoist *h = &li->h[i];
    Val b = load_var(G, h->base);
    LLVMValueRef dim = sext128(G, b.dims[h->dim]);
    LLVMValueRef one = LLVMConstInt(G->i128, 1, 0);
    LLVMValueRef klo, khi;
    if (h->affine) {
      LLVMValueRef off = h->off ? sext128(G, emit_expr(G, h->off).v) : LLVMConstInt(G->i128, 0, 0);
      if (h->negoff) off = LLVMBuildSub(G->B, LLVMConstInt(G->i128, 0, 0), off, "");
      klo = LLVMBuildAdd(G->B, sext128(G, lo), off, "");
      khi = LLVMBuildAdd(G->B, sext128(G, hi), off, "");
    } else {
      klo = khi = sext128(G, emit_expr(G, h->key).v);
    }
    LLVMValueRef ok = LLVMBuildAnd(G->B, LLVMBuildICmp(G->B, LLVMIntSGE, klo, one, ""),
                                   LLVMBuildICmp(G->B, LLVMIntSLE, khi, dim, ""), "");
    all = LLVMBuildAnd(G->B, all, ok, "");
  }
  return all;
}

/* Marks the loop whose back edge is br as not to be vectorized (nor
** interleaved): llvm.loop metadata, a distinct node naming itself. */
static void no_vectorize(CG *G, LLVMValueRef br) {
  LLVMMetadataRef self = LLVMTemporaryMDNode(G->C, NULL, 0);
  static const char key[] = "llvm.loop.vectorize.enable";
  LLVMMetadataRef hint[2] = { LLVMMDStringInContext2(G->C, key, sizeof key - 1),
                              LLVMValueAsMetadata(ci1(G, 0)) };
  LLVMMetadataRef ops[2] = { self, LLVMMDNodeInContext2(G->C, hint, 2) };
  LLVMMetadataRef id = LLVMMDNodeInContext2(G->C, ops, 2);
  LLVMMetadataReplaceAllUsesWith(self, id);   /* frees the temporary */
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(G->C, "llvm.loop", 9),
                  LLVMMetadataAsValue(G->C, id));
}

/* One copy of an integer for loop: runs count+1 iterations from init. */
static void emit_int_loop(CG *G, Stmt *s, LLVMValueRef init, LLVMValueRef step,
                          LLVMValueRef count, LLVMBasicBlockRef exit) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(G->B);
  LLVMBasicBlockRef body = new_bb(G, "for"), latch = new_bb(G, "fnext"), cont = new_bb(G, "fcont");
  LLVMBuildBr(G->B, body);
  LLVMPositionBuilderAtEnd(G->B, body);
  LLVMValueRef idx = LLVMBuildPhi(G->B, G->i64, "i");
  LLVMValueRef rem = LLVMBuildPhi(G->B, G->i64, "rem");
  store_var(G, s->u.fornum.var, mkval(TY(T_INT), idx), s->line);
  emit_loop_body(G, s->u.fornum.body, exit, latch);
  LLVMPositionBuilderAtEnd(G->B, latch);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, rem, ci64(G, 0), ""), exit, cont);
  LLVMPositionBuilderAtEnd(G->B, cont);
  LLVMValueRef idx2 = LLVMBuildAdd(G->B, idx, step, "");
  LLVMValueRef rem2 = LLVMBuildSub(G->B, rem, ci64(G, 1), "");
  LLVMValueRef back = LLVMBuildBr(G->B, body);
  /* the checked copy runs only when an index leaves its bounds: it is
  ** kept scalar, which halves what LLVM vectorizes and compiles */
  if (G->checked_copy && G->target->kind != KT_NVPTX) no_vectorize(G, back);
  LLVMValueRef iv[2] = { init, idx2 }, rv[2] = { count, rem2 };
  LLVMBasicBlockRef from[2] = { pre, cont };
  LLVMAddIncoming(idx, iv, from, 2);
  LLVMAddIncoming(rem, rv, from, 2);
}

/* True when b contains a numeric for loop (at any depth). */
static int has_fornum(Block *b) {
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    switch (s->kind) {
    case S_FORNUM: return 1;
    case S_DO: if (has_fornum(s->u.block)) return 1; break;
    case S_WHILE: case S_REPEAT: if (has_fornum(s->u.loop.body)) return 1; break;
    case S_IF:
      for (int j = 0; j < s->u.ifs.n; j++) if (has_fornum(s->u.ifs.blocks[j])) return 1;
      if (s->u.ifs.els && has_fornum(s->u.ifs.els)) return 1;
      break;
    default: break;
    }
  }
  return 0;
}

/* An integer for loop of count+1 iterations from init, with its bounds
** checks hoisted when it can (a checked and an unchecked copy). On the CPU
** only an innermost loop is versioned (see the top of the file). */
static void emit_int_for(CG *G, Stmt *s, LLVMValueRef init, LLVMValueRef step,
                         LLVMValueRef count, LLVMValueRef pos, LLVMBasicBlockRef exit) {
  LoopInfo li;
  memset(&li, 0, sizeof li);
  Var *lv = s->u.fornum.var;
  if (G->f->boundscheck && G->versioning < 3 && lv->nassign == 0 &&
      G->sp->vartypes[lv->id].kind == T_INT &&
      (G->target->kind == KT_NVPTX || !has_fornum(s->u.fornum.body))) {
    li.variant = ks_alloc(G->S, G->f->nvars + 1);
    mark_variant_block(G, s->u.fornum.body, li.variant);
    li.variant[lv->id] = 1;
    collect_block(G, &li, lv, s->u.fornum.body);
  }
  if (li.n == 0) {
    emit_int_loop(G, s, init, step, count, exit);
  } else {
    LLVMValueRef last = LLVMBuildAdd(G->B, init, LLVMBuildMul(G->B, count, step, ""), "");
    LLVMValueRef lo = LLVMBuildSelect(G->B, pos, init, last, "");
    LLVMValueRef hi = LLVMBuildSelect(G->B, pos, last, init, "");
    LLVMValueRef ok = hoist_test(G, &li, lo, hi);
    LLVMBasicBlockRef fast = new_bb(G, "ffast"), slow = new_bb(G, "fslow");
    LLVMBuildCondBr(G->B, ok, fast, slow);
    LLVMPositionBuilderAtEnd(G->B, fast);
    uint8_t saved[KJIT_MAXHOIST];
    int nh = li.n;
    for (int i = 0; i < nh; i++) { saved[i] = G->nocheck[li.h[i].index->id]; G->nocheck[li.h[i].index->id] = 1; }
    G->versioning++;
    emit_int_loop(G, s, init, step, count, exit);
    for (int i = nh - 1; i >= 0; i--) G->nocheck[li.h[i].index->id] = saved[i];
    LLVMPositionBuilderAtEnd(G->B, slow);
    int cc = G->checked_copy;
    G->checked_copy = 1;
    emit_int_loop(G, s, init, step, count, exit);
    G->checked_copy = cc;
    G->versioning--;
  }
}

static int prange_parallel(CG *G);
static void note_loop(CG *G, Stmt *s);
static void emit_prange(CG *G, Stmt *s, LLVMValueRef init, LLVMValueRef step,
                        LLVMValueRef count, LLVMValueRef pos, LLVMBasicBlockRef exit);

static void emit_fornum(CG *G, Stmt *s) {
  int line = s->line;
  Val a = emit_expr(G, s->u.fornum.start);
  Val l = emit_expr(G, s->u.fornum.limit);
  Val st = s->u.fornum.step ? emit_expr(G, s->u.fornum.step) : mkval(TY(T_INT), ci64(G, 1));
  a = unwrap(G, a, line, NULL); l = unwrap(G, l, line, NULL); st = unwrap(G, st, line, NULL);
  LLVMBasicBlockRef exit = new_bb(G, "fend");
  if (a.t.kind == T_INT && st.t.kind == T_INT) {
    LLVMValueRef init = a.v, step = st.v, lim;
    int sconst = LLVMIsAConstantInt(step) != NULL;
    long long sc = sconst ? LLVMConstIntGetSExtValue(step) : 0;
    if (!sconst || sc == 0)
      emit_check(G, LLVMBuildICmp(G->B, LLVMIntNE, step, ci64(G, 0), ""), KE_FORSTEP0, line, NULL, NULL, NULL);
    LLVMValueRef skip;
    if (l.t.kind == T_INT) lim = l.v;
    else {
      /* float limit: floor/ceil and clip, as Lua's forlimit */
      LLVMValueRef out = alloca_in_entry(G, G->i64, "lim");
      LLVMTypeRef pt[4] = { G->f64, G->i64, G->i64, LLVMPointerType(G->i64, 0) };
      LLVMValueRef av[4] = { num_to(G, l, T_F64), init, step, out };
      LLVMValueRef sk = ccall(G, "kjit_rt_forlimit", G->i32, pt, av, 4);
      lim = LLVMBuildLoad2(G->B, G->i64, out, "");
      skip = LLVMBuildICmp(G->B, LLVMIntNE, sk, ci32(G, 0), "");
      LLVMBasicBlockRef go = new_bb(G, "fgo");
      LLVMBuildCondBr(G->B, skip, exit, go);
      LLVMPositionBuilderAtEnd(G->B, go);
    }
    LLVMValueRef pos = sconst ? ci1(G, sc > 0) : LLVMBuildICmp(G->B, LLVMIntSGT, step, ci64(G, 0), "");
    skip = LLVMBuildSelect(G->B, pos, LLVMBuildICmp(G->B, LLVMIntSGT, init, lim, ""),
                           LLVMBuildICmp(G->B, LLVMIntSLT, init, lim, ""), "");
    /* iteration count, computed once in unsigned arithmetic (never overflows) */
    LLVMValueRef cpos = LLVMBuildSub(G->B, lim, init, "");
    if (!(sconst && sc == 1)) cpos = LLVMBuildUDiv(G->B, cpos, step, "");
    LLVMValueRef count;
    if (sconst && sc > 0) count = cpos;
    else {
      LLVMValueRef cneg = LLVMBuildUDiv(G->B, LLVMBuildSub(G->B, init, lim, ""),
          LLVMBuildAdd(G->B, LLVMBuildSub(G->B, ci64(G, 0), LLVMBuildAdd(G->B, step, ci64(G, 1), ""), ""),
                       ci64(G, 1), ""), "");
      count = sconst ? cneg : LLVMBuildSelect(G->B, pos, cpos, cneg, "");
      if (!sconst) {
        /* avoid udiv by zero on the unused arm when step is negative */
        cpos = NULL;
      }
    }
    LLVMBasicBlockRef pre = new_bb(G, "fpre");
    LLVMBuildCondBr(G->B, skip, exit, pre);
    LLVMPositionBuilderAtEnd(G->B, pre);

    if (s->u.fornum.prange && prange_parallel(G)) emit_prange(G, s, init, step, count, pos, exit);
    else {
      note_loop(G, s);
      emit_int_for(G, s, init, step, count, pos, exit);
    }
  } else {
    /* float loop */
    note_loop(G, s);
    LLVMValueRef init = num_to(G, a, T_F64), lim = num_to(G, l, T_F64), step = num_to(G, st, T_F64);
    LLVMValueRef zero = cf64(G, 0.0);
    emit_check(G, LLVMBuildFCmp(G->B, LLVMRealUNE, step, zero, ""), KE_FORSTEP0, line, NULL, NULL, NULL);
    LLVMValueRef pos = LLVMBuildFCmp(G->B, LLVMRealOLT, zero, step, "");
    LLVMValueRef skip = LLVMBuildSelect(G->B, pos, LLVMBuildFCmp(G->B, LLVMRealOLT, lim, init, ""),
                                        LLVMBuildFCmp(G->B, LLVMRealOLT, init, lim, ""), "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(G->B);
    LLVMBasicBlockRef body = new_bb(G, "ffor"), latch = new_bb(G, "ffnext");
    LLVMBuildCondBr(G->B, skip, exit, body);
    LLVMPositionBuilderAtEnd(G->B, body);
    LLVMValueRef idx = LLVMBuildPhi(G->B, G->f64, "x");
    store_var(G, s->u.fornum.var, mkval(TY(T_F64), idx), line);
    emit_loop_body(G, s->u.fornum.body, exit, latch);
    LLVMPositionBuilderAtEnd(G->B, latch);
    LLVMValueRef nx = LLVMBuildFAdd(G->B, idx, step, "");
    LLVMValueRef more = LLVMBuildSelect(G->B, pos, LLVMBuildFCmp(G->B, LLVMRealOLE, nx, lim, ""),
                                        LLVMBuildFCmp(G->B, LLVMRealOLE, lim, nx, ""), "");
    LLVMBuildCondBr(G->B, more, body, exit);
    LLVMValueRef iv[2] = { init, nx };
    LLVMBasicBlockRef from[2] = { pre, latch };
    LLVMAddIncoming(idx, iv, from, 2);
  }
  LLVMPositionBuilderAtEnd(G->B, exit);
}

/* ---- Parallel loops: kjit.prange ------------------------------------------------------ */

/* With {parallel = true}, the body of `for i in kjit.prange(a, b, step)` is
** outlined into a worker function that runs a range of iterations, and the
** loop becomes a call to kjit_rt_parallel_for (parallel.c), which runs the
** ranges on the thread pool. The worker sees the enclosing function's
** locals through an environment: an array of pointers to their stack slots
** (the enclosing frame waits in the call, so the slots outlive the loop),
** copied into its own slots on entry so that LLVM keeps them in registers.
** Locals of the enclosing function may be read in the body but assigned
** only as reductions (s = s + e, s - e, s * e, math.min(s, e), math.max(s,
** e)): each chunk accumulates a private copy (chunk 0 from the variable's
** value, the others from the identity; min/max from the value), and the
** enclosing function combines the partial results in chunk order. Any
** other assignment would race, so it is a compile error, as are return,
** break and goto that would leave the body. Nested prange loops, kernels
** and jit functions without parallel = true run an ordinary loop. */

/* RED_MIN: s = math.min(s, e); RED_MIN_EF: s = math.min(e, s). Lua's
** math.min(a, b) keeps a unless b < a, so the argument order decides which
** of two equal values (0.0 and -0.0) or which NaN survives: the order is
** kept when the partial results are combined. */
enum { RED_NONE, RED_ADD, RED_MUL, RED_MIN, RED_MAX, RED_MIN_EF, RED_MAX_EF };
#define KJIT_PRANGE_MAXRED 16   /* reductions per loop: 16 partials arrays in the frame */

typedef struct PVar {
  Var *v;
  int red;          /* RED_*: how the body assigns it (RED_NONE: only read) */
  int nreads;       /* reads in the body */
  int nred;         /* reduction statements */
} PVar;

typedef struct PAnalysis {
  Stmt *loop;
  uint8_t *inner;   /* by Var.id: declared inside the body */
  PVar *vars; int n, cap;
  const char **labels; int nlabels, caplabels;
  Stmt **gotos; int ngotos, capgotos;
  int depth;        /* loops nested inside the body */
} PAnalysis;

static PVar *pvar(CG *G, PAnalysis *A, Var *v) {
  for (int i = 0; i < A->n; i++) if (A->vars[i].v == v) return &A->vars[i];
  A->vars = ks_grow(G->S, A->vars, A->n, &A->cap, sizeof(PVar));
  PVar *p = &A->vars[A->n++];
  memset(p, 0, sizeof *p);
  p->v = v;
  return p;
}

static void pa_expr(CG *G, PAnalysis *A, Expr *e);
static void pa_block(CG *G, PAnalysis *A, Block *b);

static void pa_exprs(CG *G, PAnalysis *A, Expr **es, int n) {
  for (int i = 0; i < n; i++) pa_expr(G, A, es[i]);
}

static void pa_expr(CG *G, PAnalysis *A, Expr *e) {
  if (e == NULL) return;
  switch (e->kind) {
  case E_NAME:
    if (e->u.name.var && !A->inner[e->u.name.var->id]) pvar(G, A, e->u.name.var)->nreads++;
    break;
  case E_INDEX: pa_expr(G, A, e->u.index.obj); pa_expr(G, A, e->u.index.key); break;
  case E_FIELD: pa_expr(G, A, e->u.field.obj); break;
  case E_CALL: pa_expr(G, A, e->u.call.fn); pa_exprs(G, A, e->u.call.args, e->u.call.nargs); break;
  case E_METHCALL: pa_expr(G, A, e->u.meth.obj); pa_exprs(G, A, e->u.meth.args, e->u.meth.nargs); break;
  case E_BINOP: pa_expr(G, A, e->u.bin.a); pa_expr(G, A, e->u.bin.b); break;
  case E_UNOP: pa_expr(G, A, e->u.un.a); break;
  case E_PAREN: pa_expr(G, A, e->u.paren); break;
  default: break;
  }
}

static int is_var(Expr *e, Var *v) { return e->kind == E_NAME && e->u.name.var == v; }

/* The reduction `v = rhs` makes (RED_*), or RED_NONE. */
static int reduction_kind(CG *G, Var *v, Expr *rhs) {
  if (rhs->kind == E_BINOP) {
    Expr *a = rhs->u.bin.a, *b = rhs->u.bin.b;
    switch (rhs->u.bin.op) {
    case OP_ADD: return is_var(a, v) || is_var(b, v) ? RED_ADD : RED_NONE;
    case OP_SUB: return is_var(a, v) ? RED_ADD : RED_NONE;   /* s - e = s + (-e) */
    case OP_MUL: return is_var(a, v) || is_var(b, v) ? RED_MUL : RED_NONE;
    default: return RED_NONE;
    }
  }
  if (rhs->kind == E_CALL && rhs->u.call.nargs == 2) {
    Type ft = etype(G, rhs->u.call.fn);
    if (ft.kind != T_BUILTIN || (ft.ref != B_MATH_MIN && ft.ref != B_MATH_MAX)) return RED_NONE;
    int sfirst = is_var(rhs->u.call.args[0], v);
    if (!sfirst && !is_var(rhs->u.call.args[1], v)) return RED_NONE;
    if (ft.ref == B_MATH_MIN) return sfirst ? RED_MIN : RED_MIN_EF;
    return sfirst ? RED_MAX : RED_MAX_EF;
  }
  return RED_NONE;
}

static const char *red_name(int r) {
  static const char *const names[] = { "", "s + e", "s * e", "math.min(s, e)", "math.max(s, e)",
                                       "math.min(e, s)", "math.max(e, s)" };
  return names[r];
}

#define PERR(G, A, ln, fmt, ...) \
  ERR(G, ln, "kjit.prange loop (line %d): " fmt, (A)->loop->line, __VA_ARGS__)

static void pa_stmt(CG *G, PAnalysis *A, Stmt *s) {
  switch (s->kind) {
  case S_LOCAL:
    pa_exprs(G, A, s->u.local.exprs, s->u.local.nexprs);
    for (int i = 0; i < s->u.local.nnames; i++) A->inner[s->u.local.vars[i]->id] = 1;
    break;
  case S_ASSIGN:
    pa_exprs(G, A, s->u.assign.exprs, s->u.assign.nexprs);
    for (int i = 0; i < s->u.assign.ntargets; i++) {
      Expr *t = s->u.assign.targets[i];
      if (t->kind != E_NAME) { pa_expr(G, A, t); continue; }
      Var *v = t->u.name.var;
      if (v == NULL || A->inner[v->id]) continue;
      int r = s->u.assign.ntargets == 1 && s->u.assign.nexprs == 1
              ? reduction_kind(G, v, s->u.assign.exprs[0]) : RED_NONE;
      if (r == RED_NONE)
        PERR(G, A, s->line, "local '%s' is assigned in the loop but not as a reduction "
             "('%s = %s + e', '%s - e', '%s * e', 'math.min(%s, e)' or 'math.max(%s, e)'): "
             "the iterations would race for it", v->name, v->name, v->name, v->name,
             v->name, v->name, v->name);
      PVar *p = pvar(G, A, v);
      if (p->red != RED_NONE && p->red != r)
        PERR(G, A, s->line, "local '%s' is reduced as both %s and %s", v->name,
             red_name(p->red), red_name(r));
      p->red = r;
      p->nred++;
    }
    break;
  case S_CALL: pa_expr(G, A, s->u.call); break;
  case S_DO: pa_block(G, A, s->u.block); break;
  case S_WHILE: case S_REPEAT:
    A->depth++;
    if (s->kind == S_WHILE) pa_expr(G, A, s->u.loop.cond);
    pa_block(G, A, s->u.loop.body);
    if (s->kind == S_REPEAT) pa_expr(G, A, s->u.loop.cond);
    A->depth--;
    break;
  case S_IF:
    for (int i = 0; i < s->u.ifs.n; i++) {
      pa_expr(G, A, s->u.ifs.conds[i]);
      pa_block(G, A, s->u.ifs.blocks[i]);
    }
    if (s->u.ifs.els) pa_block(G, A, s->u.ifs.els);
    break;
  case S_FORNUM:
    pa_expr(G, A, s->u.fornum.start); pa_expr(G, A, s->u.fornum.limit); pa_expr(G, A, s->u.fornum.step);
    A->inner[s->u.fornum.var->id] = 1;
    A->depth++;
    pa_block(G, A, s->u.fornum.body);
    A->depth--;
    break;
  case S_RETURN:
    ERR(G, s->line, "cannot return from inside a kjit.prange loop (line %d): its iterations "
        "run in parallel", A->loop->line);
  case S_BREAK:
    if (A->depth == 0)
      ERR(G, s->line, "cannot break out of a kjit.prange loop (line %d): its iterations run "
          "in parallel", A->loop->line);
    break;
  case S_GOTO:
    A->gotos = ks_grow(G->S, A->gotos, A->ngotos, &A->capgotos, sizeof(Stmt *));
    A->gotos[A->ngotos++] = s;
    break;
  case S_LABEL:
    A->labels = ks_grow(G->S, A->labels, A->nlabels, &A->caplabels, sizeof(char *));
    A->labels[A->nlabels++] = s->u.label;
    break;
  default: break;   /* nested functions were refused by types.c */
  }
}

static void pa_block(CG *G, PAnalysis *A, Block *b) {
  for (int i = 0; i < b->n; i++) pa_stmt(G, A, b->stmts[i]);
}

static void analyze_prange(CG *G, Stmt *s, PAnalysis *A) {
  memset(A, 0, sizeof *A);
  A->loop = s;
  A->inner = ks_alloc(G->S, G->f->nvars + 1);
  A->inner[s->u.fornum.var->id] = 1;
  pa_block(G, A, s->u.fornum.body);
  for (int i = 0; i < A->ngotos; i++) {
    int found = 0;
    for (int k = 0; k < A->nlabels && !found; k++) found = strcmp(A->labels[k], A->gotos[i]->u.label) == 0;
    if (!found)
      ERR(G, A->gotos[i]->line, "cannot goto out of a kjit.prange loop (line %d): its iterations "
          "run in parallel", s->line);
  }
  for (int i = 0; i < A->n; i++) {
    PVar *p = &A->vars[i];
    if (p->red == RED_NONE) continue;
    Type t = G->sp->vartypes[p->v->id];
    char tb[32];
    if (t.kind != T_INT && t.kind != T_F64 && t.kind != T_F32)
      PERR(G, A, s->line, "the reduction variable '%s' must be a number (it is %s)", p->v->name,
           kt_name(t, tb, sizeof tb));
    if ((p->red == RED_MIN_EF || p->red == RED_MAX_EF) && t.kind != T_INT)
      PERR(G, A, s->line, "write the float reduction of '%s' as '%s = %s(%s, e)', not '%s(e, %s)': "
           "in that order a NaN element restarts the reduction, which the parallel chunks cannot "
           "reproduce", p->v->name, p->v->name, p->red == RED_MIN_EF ? "math.min" : "math.max",
           p->v->name, p->red == RED_MIN_EF ? "math.min" : "math.max", p->v->name);
    if (p->nreads != p->nred)
      PERR(G, A, s->line, "local '%s' is a reduction (%s = %s) and may appear in the loop only in "
           "its reduction statements, where e does not mention it", p->v->name, p->v->name,
           red_name(p->red));
  }
}

static int prange_parallel(CG *G) {
  return G->S->parallel && G->target->kind == KT_CPU && !G->in_prange;
}

/* One line of f:inspect("parallel") (CPU code only): what became of the
** loop of a line. A loop emitted twice (the checked and unchecked copies of
** a versioned loop) is noted once; notes that do not fit are dropped. */
static void par_note(CG *G, const char *fmt, ...) {
  Session *S = G->S;
  if (G->target->kind != KT_CPU) return;
  char line[600];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  line[n] = '\0';
  if (strstr(S->parnotes, line) || S->nparnotes + n >= (int)sizeof S->parnotes) return;
  memcpy(S->parnotes + S->nparnotes, line, (size_t)n + 1);
  S->nparnotes += n;
}

/* A numeric for loop that runs as an ordinary loop, and why. */
static void note_loop(CG *G, Stmt *s) {
  int ln = s->line;
  if (!s->u.fornum.prange)
    par_note(G, "line %d: for loop: sequential (only kjit.prange loops run in parallel)", ln);
  else if (!G->S->parallel)
    par_note(G, "line %d: kjit.prange loop: sequential (the function does not have parallel = true)", ln);
  else if (G->in_prange)
    par_note(G, "line %d: kjit.prange loop: sequential, inside each iteration of the enclosing "
             "parallel loop (nested prange loops do not run in parallel)", ln);
  else
    par_note(G, "line %d: kjit.prange loop: sequential (a float loop)", ln);
}

/* The parallel loop's note: its reductions and the locals it shares. */
static void note_prange(CG *G, Stmt *s, PAnalysis *A) {
  char red[400] = "", rd[400] = "";
  size_t nr = 0, nd = 0;
  for (int i = 0; i < A->n; i++) {
    const PVar *p = &A->vars[i];
    if (p->red != RED_NONE)
      nr += (size_t)snprintf(red + nr, nr < sizeof red ? sizeof red - nr : 0, "%s%s (%s)",
                             nr ? ", " : "", p->v->name, red_name(p->red));
    else
      nd += (size_t)snprintf(rd + nd, nd < sizeof rd ? sizeof rd - nd : 0, "%s%s",
                             nd ? ", " : "", p->v->name);
    if (nr >= sizeof red) nr = sizeof red - 1;
    if (nd >= sizeof rd) nd = sizeof rd - 1;
  }
  par_note(G, "line %d: kjit.prange loop: parallel, its iterations split in chunks over the "
           "thread pool; reductions: %s; shared, read only: %s", s->line,
           nr ? red : "none", nd ? rd : "none");
}

/* The stack slots of a local (value, flag, extents), with their types. */
static int slot_parts(CG *G, Var *v, LLVMValueRef *ptrs, LLVMTypeRef *tys) {
  Type t = G->sp->vartypes[v->id];
  VarSlot *s = var_slot(G, v);
  int n = 0;
  switch (t.kind) {
  case T_INT: case T_F64: case T_F32: case T_BOOL:
    ptrs[n] = s->v; tys[n++] = llty(G, t); break;
  case T_MAYBE:
    ptrs[n] = s->v; tys[n++] = llty(G, t);
    ptrs[n] = s->flag; tys[n++] = G->i1; break;
  case T_BUF:
    ptrs[n] = s->v; tys[n++] = bufptr_ty(G, t);
    for (int d = 0; d < t.ndim; d++) { ptrs[n] = s->dims[d]; tys[n++] = G->i64; }
    break;
  default: break;   /* compile-time values have no slot */
  }
  return n;
}

/* Combines the partial result x of a later chunk into acc, the result of
** the earlier ones: acc op x, with the tie and NaN rules of the statement
** (math.min(s, e) keeps s unless e < s; math.min(e, s) keeps s only if
** s < e). */
static LLVMValueRef reduce_op(CG *G, int red, Type t, LLVMValueRef acc, LLVMValueRef x) {
  int flt = t.kind != T_INT;
#define LESS(a, b) (flt ? LLVMBuildFCmp(G->B, LLVMRealOLT, (a), (b), "") : LLVMBuildICmp(G->B, LLVMIntSLT, (a), (b), ""))
  switch (red) {
  case RED_ADD: return flt ? LLVMBuildFAdd(G->B, acc, x, "") : LLVMBuildAdd(G->B, acc, x, "");
  case RED_MUL: return flt ? LLVMBuildFMul(G->B, acc, x, "") : LLVMBuildMul(G->B, acc, x, "");
  case RED_MIN: return LLVMBuildSelect(G->B, LESS(x, acc), x, acc, "");
  case RED_MAX: return LLVMBuildSelect(G->B, LESS(acc, x), x, acc, "");
  case RED_MIN_EF: return LLVMBuildSelect(G->B, LESS(acc, x), acc, x, "");
  default: return LLVMBuildSelect(G->B, LESS(x, acc), acc, x, "");   /* RED_MAX_EF */
  }
#undef LESS
}

/* The value a chunk other than the first starts a reduction from. For
** math.min(s, e) and math.max(s, e) it is the variable's value (they keep
** it on ties, and min/max are idempotent); for the other forms an
** identity: x + -0.0 == x even for -0.0, and an element always replaces
** +inf in math.min(e, s). */
static LLVMValueRef reduce_identity(CG *G, int red, Type t) {
  LLVMTypeRef ty = llty(G, t);
  int isint = t.kind == T_INT;
  switch (red) {
  case RED_MUL: return isint ? ci64(G, 1) : LLVMConstReal(ty, 1.0);
  case RED_MIN_EF: return isint ? ci64(G, INT64_MAX) : LLVMConstReal(ty, HUGE_VAL);
  case RED_MAX_EF: return isint ? ci64(G, INT64_MIN) : LLVMConstReal(ty, -HUGE_VAL);
  default: return isint ? ci64(G, 0) : LLVMConstReal(ty, -0.0);   /* RED_ADD */
  }
}

/* The env layout: [0] &first value, [1] &step, then every slot of every
** captured local (in A->vars order), then one partials array per reduction. */
static LLVMValueRef emit_prange_worker(CG *G, Stmt *s, PAnalysis *A, LLVMValueRef step0) {
  /* the enclosing function's emission state, restored at the end */
  LLVMValueRef fn0 = G->fn, err0 = G->err, chunk0 = G->chunkname, depth0 = G->depth;
  LLVMBasicBlockRef allocas0 = G->allocas, at0 = LLVMGetInsertBlock(G->B);
  VarSlot *slots0 = G->slots;
  LoopCtx *loop0 = G->loop;
  LabelScope *labels0 = G->labels;
  int versioning0 = G->versioning, checked0 = G->checked_copy;

  LLVMTypeRef envp = LLVMPointerType(G->i8p, 0);
  LLVMTypeRef ps[5] = { envp, G->i64, G->i64, G->i64, G->errp };
  LLVMTypeRef fty = LLVMFunctionType(G->i32, ps, 5, 0);
  char name[80];
  /* named by a per-compile count: the same source gives the same module
  ** (and disk-cache key) in every process */
  snprintf(name, sizeof name, "%s_prange%d", G->sp->name, G->nprange++);
  LLVMValueRef fn = LLVMAddFunction(G->M, name, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  mark_err_noalias(G, fn, 4);
  /* the same float semantics as the enclosing function */
  unsigned nattr = LLVMGetAttributeCountAtIndex(fn0, LLVMAttributeFunctionIndex);
  if (nattr > 0) {
    LLVMAttributeRef *attrs = ks_alloc(G->S, nattr * sizeof *attrs);
    LLVMGetAttributesAtIndex(fn0, LLVMAttributeFunctionIndex, attrs);
    for (unsigned i = 0; i < nattr; i++) LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, attrs[i]);
  }
  G->fn = fn;
  G->slots = ks_alloc(G->S, (G->f->nvars + 1) * sizeof(VarSlot));
  G->loop = NULL; G->labels = NULL; G->versioning = 0; G->depth = NULL;
  G->checked_copy = 0;
  G->in_prange = 1;
  G->allocas = new_bb(G, "entry");
  LLVMBasicBlockRef start = new_bb(G, "start");
  LLVMPositionBuilderAtEnd(G->B, start);
  G->chunkname = LLVMBuildGlobalStringPtr(G->B, G->f->chunkname, "kjit.chunk");
  /* The body reports into a KErr of its own frame, copied out on failure:
  ** the runtime's KErr is reached through memory (the pool), so LLVM could
  ** not otherwise tell it from the arrays the body stores to, and would
  ** reload err->kind and err->stack_limit at every iteration (which stops
  ** loops calling a function from vectorizing). */
  LLVMValueRef perr = LLVMGetParam(fn, 4);
  G->err = alloca_in_entry(G, G->errty, "lerr");
  LLVMBuildStore(G->B, LLVMConstNull(G->errty), G->err);
  LLVMBuildStore(G->B, LLVMBuildLoad2(G->B, G->i64, LLVMBuildStructGEP2(G->B, G->errty, perr, KERR_F_STACK_LIMIT, ""), ""),
                 LLVMBuildStructGEP2(G->B, G->errty, G->err, KERR_F_STACK_LIMIT, ""));
  LLVMValueRef env = LLVMGetParam(fn, 0), chunk = LLVMGetParam(fn, 3);
  int k = 0;
#define ENV_PTR(ty) LLVMBuildBitCast(G->B, LLVMBuildLoad2(G->B, G->i8p, \
      LLVMBuildInBoundsGEP2(G->B, G->i8p, env, (LLVMValueRef[]){ ci64(G, k++) }, 1, ""), ""), \
      LLVMPointerType((ty), 0), "")
  LLVMValueRef first = LLVMBuildLoad2(G->B, G->i64, ENV_PTR(G->i64), "first");
  LLVMValueRef step = LLVMBuildLoad2(G->B, G->i64, ENV_PTR(G->i64), "step");
  /* a constant step stays a constant: with a unit stride the body's
  ** accesses are contiguous, which the vectorizer needs to know */
  if (LLVMIsAConstantInt(step0)) step = step0;
  for (int i = 0; i < A->n; i++) {
    PVar *p = &A->vars[i];
    LLVMValueRef mine[KJIT_MAXDIMS + 2];
    LLVMTypeRef tys[KJIT_MAXDIMS + 2];
    int n = slot_parts(G, p->v, mine, tys);
    for (int j = 0; j < n; j++) {
      LLVMValueRef x = LLVMBuildLoad2(G->B, tys[j], ENV_PTR(tys[j]), p->v->name);
      if (p->red != RED_NONE && p->red != RED_MIN && p->red != RED_MAX) {
        Type t = G->sp->vartypes[p->v->id];
        LLVMValueRef is0 = LLVMBuildICmp(G->B, LLVMIntEQ, chunk, ci64(G, 0), "");
        x = LLVMBuildSelect(G->B, is0, x, reduce_identity(G, p->red, t), "");
      }
      LLVMBuildStore(G->B, x, mine[j]);
    }
  }
  /* iterations kbegin..kend-1: i = first + k*step (wrapping arithmetic is
  ** exact here: every i of the loop is an i64) */
  LLVMValueRef kb = LLVMGetParam(fn, 1), ke = LLVMGetParam(fn, 2);
  LLVMValueRef init = LLVMBuildAdd(G->B, first, LLVMBuildMul(G->B, kb, step, ""), "");
  LLVMValueRef count = LLVMBuildSub(G->B, LLVMBuildSub(G->B, ke, kb, ""), ci64(G, 1), "");
  LLVMValueRef pos = LLVMBuildICmp(G->B, LLVMIntSGT, step, ci64(G, 0), "");
  LLVMBasicBlockRef done = new_bb(G, "pdone");
  emit_int_for(G, s, init, step, count, pos, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  for (int i = 0; i < A->n; i++) {
    PVar *p = &A->vars[i];
    if (p->red == RED_NONE) continue;
    Type t = G->sp->vartypes[p->v->id];
    LLVMValueRef parts = ENV_PTR(llty(G, t));
    LLVMValueRef x = load_var(G, p->v).v;
    LLVMBuildStore(G->B, x, LLVMBuildInBoundsGEP2(G->B, llty(G, t), parts, &chunk, 1, ""));
  }
#undef ENV_PTR
  LLVMBuildRet(G->B, ci32(G, 0));
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    if (bb == G->allocas) continue;
    LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
    if (term == NULL) {
      LLVMPositionBuilderAtEnd(G->B, bb);
      LLVMBuildUnreachable(G->B);
    } else if (LLVMGetInstructionOpcode(term) == LLVMRet && LLVMGetNumOperands(term) == 1 &&
               !(LLVMIsAConstantInt(LLVMGetOperand(term, 0)) &&
                 LLVMConstIntGetZExtValue(LLVMGetOperand(term, 0)) == 0)) {
      /* every return but the one of success (a constant 0) is a failure,
      ** raised here or passed on from a callee: the error goes to the
      ** runtime's KErr */
      LLVMPositionBuilderBefore(G->B, term);
      LLVMBuildStore(G->B, LLVMBuildLoad2(G->B, G->errty, G->err, ""), perr);
    }
  }
  LLVMPositionBuilderAtEnd(G->B, G->allocas);
  LLVMBuildBr(G->B, start);

  G->fn = fn0; G->err = err0; G->chunkname = chunk0; G->depth = depth0;
  G->allocas = allocas0; G->slots = slots0; G->loop = loop0; G->labels = labels0;
  G->versioning = versioning0; G->checked_copy = checked0; G->in_prange = 0;
  LLVMPositionBuilderAtEnd(G->B, at0);
  return fn;
}

static void emit_prange(CG *G, Stmt *s, LLVMValueRef init, LLVMValueRef step,
                        LLVMValueRef count, LLVMValueRef pos, LLVMBasicBlockRef exit) {
  (void)pos;
  PAnalysis A;
  analyze_prange(G, s, &A);
  note_prange(G, s, &A);
  /* the environment, filled in the enclosing frame: first and step, the
  ** slots of the locals the body uses, the reductions' partials (the
  ** worker reads them in this order) */
  LLVMValueRef *entries = ks_alloc(G->S, (size_t)(2 + A.n * (KJIT_MAXDIMS + 2)) * sizeof *entries);
  int nenv = 0;
  LLVMValueRef a_init = alloca_in_entry(G, G->i64, "pfirst"), a_step = alloca_in_entry(G, G->i64, "pstep");
  LLVMBuildStore(G->B, init, a_init);
  LLVMBuildStore(G->B, step, a_step);
  entries[nenv++] = a_init;
  entries[nenv++] = a_step;
  for (int i = 0; i < A.n; i++) {
    LLVMTypeRef tys[KJIT_MAXDIMS + 2];
    nenv += slot_parts(G, A.vars[i].v, entries + nenv, tys);
  }
  LLVMValueRef parts[KJIT_PRANGE_MAXRED];
  int nparts = 0;
  for (int i = 0; i < A.n; i++) {
    if (A.vars[i].red == RED_NONE) continue;
    if (nparts == KJIT_PRANGE_MAXRED)
      ERR(G, s->line, "too many reductions in one kjit.prange loop (at most %d)", KJIT_PRANGE_MAXRED);
    Type t = G->sp->vartypes[A.vars[i].v->id];
    parts[nparts] = alloca_in_entry(G, LLVMArrayType(llty(G, t), KJIT_PRANGE_MAXCHUNKS), "partials");
    entries[nenv++] = parts[nparts++];
  }
  LLVMValueRef env = alloca_in_entry(G, LLVMArrayType(G->i8p, (unsigned)nenv), "penv");
  LLVMValueRef env0 = LLVMBuildBitCast(G->B, env, LLVMPointerType(G->i8p, 0), "");
  for (int k = 0; k < nenv; k++)
    LLVMBuildStore(G->B, LLVMBuildBitCast(G->B, entries[k], G->i8p, ""),
                   LLVMBuildInBoundsGEP2(G->B, G->i8p, env0, (LLVMValueRef[]){ ci64(G, k) }, 1, ""));
  LLVMValueRef worker = emit_prange_worker(G, s, &A, step);
  LLVMValueRef a_nchunks = alloca_in_entry(G, G->i64, "nchunks");
  LLVMTypeRef pt[5] = { G->i8p, LLVMPointerType(G->i8p, 0), G->i64, G->errp, LLVMPointerType(G->i64, 0) };
  LLVMValueRef av[5] = { LLVMBuildBitCast(G->B, worker, G->i8p, ""), env0, count, G->err, a_nchunks };
  LLVMValueRef st = ccall(G, "kjit_rt_parallel_for", G->i32, pt, av, 5);
  LLVMBasicBlockRef fail = new_bb(G, "pfail"), ok = new_bb(G, "pok");
  cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, ci32(G, 0), ""), ok, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  emit_fail_ret(G);
  LLVMPositionBuilderAtEnd(G->B, ok);
  if (nparts == 0) { LLVMBuildBr(G->B, exit); return; }
  /* combine the partial results in chunk order: v = p[0] op p[1] op ... */
  LLVMValueRef nchunks = LLVMBuildLoad2(G->B, G->i64, a_nchunks, "");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(G->B), body = new_bb(G, "pcomb"), end = new_bb(G, "pcombend");
  LLVMValueRef accs0[KJIT_PRANGE_MAXRED];
  int r = 0;
  for (int i = 0; i < A.n; i++) {
    if (A.vars[i].red == RED_NONE) continue;
    LLVMTypeRef ty = llty(G, G->sp->vartypes[A.vars[i].v->id]);
    accs0[r] = LLVMBuildLoad2(G->B, ty, LLVMBuildBitCast(G->B, parts[r], LLVMPointerType(ty, 0), ""), "");
    r++;
  }
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSGT, nchunks, ci64(G, 1), ""), body, end);
  LLVMPositionBuilderAtEnd(G->B, body);
  LLVMValueRef c = LLVMBuildPhi(G->B, G->i64, "c");
  LLVMValueRef accs[KJIT_PRANGE_MAXRED], nexts[KJIT_PRANGE_MAXRED];
  for (int j = 0; j < nparts; j++) accs[j] = LLVMBuildPhi(G->B, LLVMTypeOf(accs0[j]), "acc");
  r = 0;
  for (int i = 0; i < A.n; i++) {
    if (A.vars[i].red == RED_NONE) continue;
    Type t = G->sp->vartypes[A.vars[i].v->id];
    LLVMTypeRef ty = llty(G, t);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, ty, LLVMBuildBitCast(G->B, parts[r], LLVMPointerType(ty, 0), ""), &c, 1, "");
    nexts[r] = reduce_op(G, A.vars[i].red, t, accs[r], LLVMBuildLoad2(G->B, ty, p, ""));
    r++;
  }
  LLVMValueRef c2 = LLVMBuildAdd(G->B, c, ci64(G, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(G->B);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSLT, c2, nchunks, ""), body, end);
  LLVMAddIncoming(c, (LLVMValueRef[]){ ci64(G, 1), c2 }, (LLVMBasicBlockRef[]){ pre, latch }, 2);
  for (int j = 0; j < r; j++)
    LLVMAddIncoming(accs[j], (LLVMValueRef[]){ accs0[j], nexts[j] }, (LLVMBasicBlockRef[]){ pre, latch }, 2);
  LLVMPositionBuilderAtEnd(G->B, end);
  LLVMValueRef fins[KJIT_PRANGE_MAXRED];
  for (int j = 0; j < nparts; j++) {
    fins[j] = LLVMBuildPhi(G->B, LLVMTypeOf(accs0[j]), "red");
    LLVMAddIncoming(fins[j], (LLVMValueRef[]){ accs0[j], nexts[j] }, (LLVMBasicBlockRef[]){ pre, latch }, 2);
  }
  r = 0;
  for (int i = 0; i < A.n; i++) {
    if (A.vars[i].red == RED_NONE) continue;
    store_var(G, A.vars[i].v, mkval(G->sp->vartypes[A.vars[i].v->id], fins[r]), s->line);
    r++;
  }
  LLVMBuildBr(G->B, exit);
}

static void emit_return(CG *G, Stmt *s) {
  Val vals[KJIT_MAXRETS];
  int n = emit_explist(G, s->u.ret.exprs, s->u.ret.n, vals, KJIT_MAXRETS);
  if (G->sp->pure) {
    Val v = convert(G, n > 0 ? vals[0] : mkval(TY(T_NIL), NULL), G->sp->rets[0], s->line);
    LLVMBuildRet(G->B, v.v);
    dead_block(G);
    return;
  }
  for (int i = 0; i < n && i < G->sp->nret; i++) {
    if (G->retptrs[i] == NULL) continue;   /* a nil result */
    Val v = convert(G, vals[i], G->sp->rets[i], s->line);
    LLVMBuildStore(G->B, v.v, G->retptrs[i]);
    if (G->retflags[i]) LLVMBuildStore(G->B, v.flag, G->retflags[i]);
  }
  LLVMBuildRet(G->B, ci32(G, 0));
  dead_block(G);
}

static LLVMBasicBlockRef find_label(CG *G, const char *name) {
  for (LabelScope *sc = G->labels; sc; sc = sc->prev)
    for (int i = 0; i < sc->block->n; i++) {
      Stmt *s = sc->block->stmts[i];
      if (s->kind == S_LABEL && strcmp(s->u.label, name) == 0) return sc->bbs[i];
    }
  return NULL;
}

static void emit_stmt(CG *G, Stmt *s, int index) {
  switch (s->kind) {
  case S_LOCAL: emit_local(G, s); break;
  case S_ASSIGN: emit_assign(G, s); break;
  case S_CALL: {
    if (s->u.call->kind == E_CALL) { Val r[KJIT_MAXRETS]; emit_call(G, s->u.call, r, 0); }
    else emit_expr(G, s->u.call);
    break;
  }
  case S_DO: emit_block(G, s->u.block); break;
  case S_WHILE: emit_while(G, s); break;
  case S_REPEAT: emit_repeat(G, s); break;
  case S_IF: emit_if(G, s); break;
  case S_FORNUM: emit_fornum(G, s); break;
  case S_RETURN: emit_return(G, s); break;
  case S_BREAK:
    if (G->loop == NULL) ERR(G, s->line, "break outside a loop");
    LLVMBuildBr(G->B, G->loop->exit);
    dead_block(G);
    break;
  case S_GOTO: {
    LLVMBasicBlockRef bb = find_label(G, s->u.label);
    if (bb == NULL) ERR(G, s->line, "no visible label '%s' for goto", s->u.label);
    LLVMBuildBr(G->B, bb);
    dead_block(G);
    break;
  }
  case S_LABEL: {
    LLVMBasicBlockRef bb = G->labels->bbs[index];
    if (!terminated(G)) LLVMBuildBr(G->B, bb);
    LLVMPositionBuilderAtEnd(G->B, bb);
    break;
  }
  default: break;
  }
}

/* A block, with its labels visible to gotos inside it. */
static void emit_block(CG *G, Block *b) {
  LabelScope sc = { b, NULL, G->labels };
  sc.bbs = ks_alloc(G->S, (b->n + 1) * sizeof(LLVMBasicBlockRef));
  for (int i = 0; i < b->n; i++)
    if (b->stmts[i]->kind == S_LABEL) sc.bbs[i] = new_bb(G, b->stmts[i]->u.label);
  G->labels = &sc;
  for (int i = 0; i < b->n; i++) emit_stmt(G, b->stmts[i], i);
  G->labels = sc.prev;
}


/* ---- Functions ---------------------------------------------------------------------- */

/* Declares the inner function of a specialization. */
static void declare_spec(CG *G, KSpec *sp) {
  LLVMTypeRef ps[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 2 * KJIT_MAXRETS + 1];
  int n = 0;
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    switch (t.kind) {
    case T_NIL: case T_FUNC: break;   /* compile-time values: no parameter */
    case T_BUF:
      ps[n++] = bufptr_ty(G, t);
      for (int d = 0; d < t.ndim; d++) ps[n++] = G->i64;
      break;
    case T_INT: case T_F64: case T_F32: case T_BOOL: ps[n++] = llty(G, t); break;
    case T_MAYBE: ps[n++] = llty(G, t); ps[n++] = G->i1; break;   /* value, flag */
    default: {
      char tb[32];
      ks_error(G->S, sp->fn, sp->fn->ast->line, "cannot take a %s argument", kt_name(t, tb, sizeof tb));
    }
    }
  }
  for (int r = 0; r < sp->nret && !sp->pure; r++) {
    if (sp->rets[r].kind == T_NIL) continue;   /* always nil: no slot */
    if (llty(G, sp->rets[r]) == NULL) {
      char tb[32];
      ks_error(G->S, sp->fn, sp->fn->ast->line, "cannot return a %s value",
               kt_name(sp->rets[r], tb, sizeof tb));
    }
    ps[n++] = LLVMPointerType(llty(G, sp->rets[r]), 0);
    if (sp->rets[r].kind == T_MAYBE) ps[n++] = LLVMPointerType(G->i1, 0);
  }
  if (sp->pure) ps[n++] = G->i32;   /* depth */
  ps[n++] = G->errp;
  LLVMTypeRef fty = LLVMFunctionType(sp->pure ? llty(G, sp->rets[0]) : G->i32, ps, n, 0);
  LLVMValueRef fn = LLVMAddFunction(G->M, sp->name, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  if (sp->fn->fastmath) {
    static const char *const attrs[] = { "unsafe-fp-math", "no-nans-fp-math",
      "no-infs-fp-math", "no-signed-zeros-fp-math", "approx-func-fp-math" };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
      LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
          LLVMCreateStringAttribute(G->C, attrs[i], strlen(attrs[i]), "true", 4));
  }
  mark_err_noalias(G, fn, n - 1);
  sp->llfunc = fn;
  sp->llfnty = fty;
}

static void emit_spec(CG *G, KSpec *sp) {
  KFunc *f = sp->fn;
  G->sp = sp; G->f = f;
  G->fn = (LLVMValueRef)sp->llfunc;
  G->slots = ks_alloc(G->S, (f->nvars + 1) * sizeof(VarSlot));
  G->nocheck = ks_alloc(G->S, f->chunk->nexprs + 1);
  G->loop = NULL; G->labels = NULL; G->versioning = 0; G->checked_copy = 0;
  G->allocas = new_bb(G, "entry");
  LLVMBasicBlockRef start = new_bb(G, "start");
  LLVMPositionBuilderAtEnd(G->B, start);
  G->chunkname = G->target->kind == KT_NVPTX ? LLVMConstNull(G->i8p)   /* the host knows it */
                 : LLVMBuildGlobalStringPtr(G->B, f->chunkname, "kjit.chunk");
  /* parameters into their locals */
  unsigned p = 0;
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    Var *v = i < f->ast->nparams ? f->ast->paramvars[i] : NULL;
    Val x = mkval(t, NULL);
    if (t.kind == T_BUF) {
      x.v = LLVMGetParam(G->fn, p++);
      for (int d = 0; d < t.ndim; d++) x.dims[d] = LLVMGetParam(G->fn, p++);
    } else if (t.kind == T_MAYBE) {
      x.v = LLVMGetParam(G->fn, p++);
      x.flag = LLVMGetParam(G->fn, p++);
    } else if (t.kind != T_NIL && t.kind != T_FUNC) x.v = LLVMGetParam(G->fn, p++);
    if (v) store_var(G, v, x, f->ast->line);
  }
  for (int r = 0; r < sp->nret; r++) {
    G->retptrs[r] = G->retflags[r] = NULL;
    if (sp->rets[r].kind == T_NIL || sp->pure) continue;
    G->retptrs[r] = LLVMGetParam(G->fn, p++);
    G->retflags[r] = sp->rets[r].kind == T_MAYBE ? LLVMGetParam(G->fn, p++) : NULL;
  }
  G->depth = sp->pure ? LLVMGetParam(G->fn, p++) : NULL;
  G->err = LLVMGetParam(G->fn, p++);
  /* a caller that failed before calling (its results garbage) does no
  ** more work here */
  pure_keep_first_error(G);
  emit_block(G, f->ast->body);
  if (!terminated(G)) {
    if (sp->nret > 0) {
      emit_raise(G, KE_NORET, f->ast->lastline, NULL, NULL, NULL, NULL);
      LLVMBuildUnreachable(G->B);
    } else {
      LLVMBuildRet(G->B, ci32(G, 0));
    }
  }
  /* dead blocks left open get an unreachable terminator */
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(G->fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    if (bb == G->allocas) continue;
    if (LLVMGetBasicBlockTerminator(bb) == NULL) {
      LLVMPositionBuilderAtEnd(G->B, bb);
      LLVMBuildUnreachable(G->B);
    }
  }
  LLVMPositionBuilderAtEnd(G->B, G->allocas);
  LLVMBuildBr(G->B, start);
}

/* The entry point the dispatcher calls: unpacks argument slots. */
static void emit_entry(CG *G, KSpec *sp, const char *name) {
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  LLVMTypeRef ps[3] = { i64p, i64p, G->errp };
  LLVMTypeRef fty = LLVMFunctionType(G->i32, ps, 3, 0);
  LLVMValueRef fn = LLVMAddFunction(G->M, name, fty);
  G->fn = fn;
  LLVMPositionBuilderAtEnd(G->B, new_bb(G, "entry"));
  LLVMValueRef args = LLVMGetParam(fn, 0), rets = LLVMGetParam(fn, 1);
  LLVMValueRef av[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 2 * KJIT_MAXRETS + 1];
  int n = 0;
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    LLVMValueRef idx = ci64(G, i);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(G->B, G->i64, args, &idx, 1, "");
    LLVMValueRef raw = LLVMBuildLoad2(G->B, G->i64, slot, "");
    switch (t.kind) {
    case T_NIL: case T_FUNC: break;
    case T_INT: av[n++] = raw; break;
    case T_F64: av[n++] = LLVMBuildBitCast(G->B, raw, G->f64, ""); break;
    case T_F32: av[n++] = LLVMBuildFPTrunc(G->B, LLVMBuildBitCast(G->B, raw, G->f64, ""), G->f32, ""); break;
    case T_BOOL: av[n++] = LLVMBuildICmp(G->B, LLVMIntNE, raw, ci64(G, 0), ""); break;
    case T_BUF: {
      /* raw is a KBuffer*: data at offsetof(data), extents at offsetof(shape) */
      LLVMValueRef kb = LLVMBuildIntToPtr(G->B, raw, i64p, "");
      LLVMValueRef di = ci64(G, offsetof(KBuffer, data) / 8);
      LLVMValueRef data = LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, kb, &di, 1, ""), "");
      av[n++] = LLVMBuildIntToPtr(G->B, data, bufptr_ty(G, t), "");
      for (int d = 0; d < t.ndim; d++) {
        LLVMValueRef si = ci64(G, offsetof(KBuffer, shape) / 8 + d);
        av[n++] = LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, kb, &si, 1, ""), "");
      }
      break;
    }
    default: break;
    }
  }
  LLVMValueRef rp[KJIT_MAXRETS], rf[KJIT_MAXRETS];
  for (int r = 0; r < sp->nret; r++) {
    rp[r] = rf[r] = NULL;
    if (sp->rets[r].kind == T_NIL) continue;
    LLVMTypeRef rt = llty(G, sp->rets[r]);
    LLVMValueRef idx = ci64(G, r);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(G->B, G->i64, rets, &idx, 1, "");
    rp[r] = LLVMBuildBitCast(G->B, slot, LLVMPointerType(rt, 0), "");
    if (sp->pure) continue;
    av[n++] = rp[r];
    rf[r] = NULL;
    if (sp->rets[r].kind == T_MAYBE) {
      rf[r] = LLVMBuildAlloca(G->B, G->i1, "flag");
      av[n++] = rf[r];
    }
  }
  if (sp->pure) av[n++] = ci32(G, 0);   /* depth */
  av[n++] = LLVMGetParam(fn, 2);
  LLVMValueRef st = LLVMBuildCall2(G->B, (LLVMTypeRef)sp->llfnty, (LLVMValueRef)sp->llfunc, av, n, "");
  if (sp->pure) {   /* the value in a register, a failure in err->kind */
    LLVMBuildStore(G->B, st, rp[0]);
    LLVMValueRef k = LLVMBuildLoad2(G->B, G->i32, LLVMBuildStructGEP2(G->B, G->errty, LLVMGetParam(fn, 2), KERR_F_KIND, ""), "");
    st = LLVMBuildZExt(G->B, LLVMBuildICmp(G->B, LLVMIntNE, k, ci32(G, 0), ""), G->i32, "");
  }
  /* widen f32 and booleans in place so every slot is a full i64/f64 */
  for (int r = 0; r < sp->nret; r++) {
    Type t = sp->rets[r];
    if (t.kind == T_NIL) continue;
    LLVMValueRef idx = ci64(G, r);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(G->B, G->i64, rets, &idx, 1, "");
    if (t.kind == T_MAYBE) {
      /* the flag goes to slot KJIT_MAXRETS + r; the value is widened below */
      LLVMValueRef fidx = ci64(G, KJIT_MAXRETS + r);
      LLVMValueRef fslot = LLVMBuildInBoundsGEP2(G->B, G->i64, rets, &fidx, 1, "");
      LLVMBuildStore(G->B, LLVMBuildZExt(G->B, LLVMBuildLoad2(G->B, G->i1, rf[r], ""), G->i64, ""), fslot);
      t = TY(t.sub);
    }
    if (t.kind == T_F32) {
      LLVMValueRef x = LLVMBuildLoad2(G->B, G->f32, rp[r], "");
      LLVMBuildStore(G->B, LLVMBuildFPExt(G->B, x, G->f64, ""),
                     LLVMBuildBitCast(G->B, slot, LLVMPointerType(G->f64, 0), ""));
    } else if (t.kind == T_BOOL) {
      LLVMValueRef x = LLVMBuildLoad2(G->B, G->i1, rp[r], "");
      LLVMBuildStore(G->B, LLVMBuildZExt(G->B, x, G->i64, ""), slot);
    }
  }
  LLVMBuildRet(G->B, st);
}

/* ---- Pure functions -------------------------------------------------------------- */

/* A specialization is pure when it returns one number or boolean, has no
** loops or gotos, stores into no array and calls only pure functions (and
** no error()): fib, gcd, a clamp. Pure functions return their value in a
** register and leave a failure in err->kind; a pure caller carries on with
** the (garbage) value, which is harmless because it can only compute and
** return: the first error stays recorded, every pure function returns at
** entry once one is, and a non-pure caller tests err->kind after the call.
** Without a test after each call, LLVM can turn `return f(n-1) + f(n-2)`
** into a loop with an accumulator, as C compilers do. */
static int pure_expr(KSpec *sp, Expr *e);

static int pure_exprs(KSpec *sp, Expr **es, int n) {
  for (int i = 0; i < n; i++) if (!pure_expr(sp, es[i])) return 0;
  return 1;
}

static int pure_expr(KSpec *sp, Expr *e) {
  if (e == NULL) return 1;
  switch (e->kind) {
  case E_INDEX: return pure_expr(sp, e->u.index.obj) && pure_expr(sp, e->u.index.key);
  case E_FIELD: return pure_expr(sp, e->u.field.obj);
  case E_CALL: {
    Type ft = sp->exprtypes[e->u.call.fn->id];
    if (ft.kind == T_BUILTIN && (ft.ref == B_ERROR || B_IS_CUDA(ft.ref))) return 0;
    if (ft.kind != T_BUILTIN && (sp->calls[e->id] == NULL || !sp->calls[e->id]->pure)) return 0;
    return pure_exprs(sp, e->u.call.args, e->u.call.nargs);
  }
  case E_BINOP: return pure_expr(sp, e->u.bin.a) && pure_expr(sp, e->u.bin.b);
  case E_UNOP: return pure_expr(sp, e->u.un.a);
  case E_PAREN: return pure_expr(sp, e->u.paren);
  case E_NIL: case E_TRUE: case E_FALSE: case E_INT: case E_FLT: case E_STR: case E_NAME:
    return 1;
  default: return 0;
  }
}

static int pure_block(KSpec *sp, Block *b) {
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    switch (s->kind) {
    case S_LOCAL:
      if (!pure_exprs(sp, s->u.local.exprs, s->u.local.nexprs)) return 0;
      break;
    case S_ASSIGN:
      for (int t = 0; t < s->u.assign.ntargets; t++)
        if (s->u.assign.targets[t]->kind != E_NAME) return 0;   /* array stores */
      if (!pure_exprs(sp, s->u.assign.exprs, s->u.assign.nexprs)) return 0;
      break;
    case S_CALL: if (!pure_expr(sp, s->u.call)) return 0; break;
    case S_DO: if (!pure_block(sp, s->u.block)) return 0; break;
    case S_IF:
      if (!pure_exprs(sp, s->u.ifs.conds, s->u.ifs.n)) return 0;
      for (int k = 0; k < s->u.ifs.n; k++) if (!pure_block(sp, s->u.ifs.blocks[k])) return 0;
      if (s->u.ifs.els && !pure_block(sp, s->u.ifs.els)) return 0;
      break;
    case S_RETURN: if (!pure_exprs(sp, s->u.ret.exprs, s->u.ret.n)) return 0; break;
    case S_EMPTY: break;
    default: return 0;   /* loops, goto, labels, nested functions */
    }
  }
  return 1;
}

/* Marks the pure specializations: the greatest set closed under calls. */
static void mark_pure(Session *S, const KTarget *target) {
  for (int i = 0; i < S->nspecs; i++) {
    KSpec *sp = S->specs[i];
    TypeKind k = sp->nret == 1 ? sp->rets[0].kind : T_UNKNOWN;
    sp->pure = target->kind == KT_CPU && (k == T_INT || k == T_F64 || k == T_F32 || k == T_BOOL);
  }
  for (int changed = 1; changed; ) {
    changed = 0;
    for (int i = 0; i < S->nspecs; i++) {
      KSpec *sp = S->specs[i];
      if (sp->pure && !pure_block(sp, sp->fn->ast->body)) { sp->pure = 0; changed = 1; }
    }
  }
}

static void cg_init(CG *G, Session *S, LLVMContextRef C, LLVMModuleRef M, const KTarget *target,
                    KSpec *root) {
  memset(G, 0, sizeof *G);
  G->S = S; G->C = C; G->M = M; G->target = target; G->root = root;
  G->B = LLVMCreateBuilderInContext(C);
  S->builder = G->B;   /* disposed by the session if a compile error unwinds */
  G->i1 = LLVMInt1TypeInContext(C);
  G->i8 = LLVMInt8TypeInContext(C);
  G->i32 = LLVMInt32TypeInContext(C);
  G->i64 = LLVMInt64TypeInContext(C);
  G->i128 = LLVMIntTypeInContext(C, 128);
  G->f32 = LLVMFloatTypeInContext(C);
  G->f64 = LLVMDoubleTypeInContext(C);
  G->i8p = LLVMPointerType(G->i8, 0);
  LLVMTypeRef fields[KERR_F_COUNT] = { G->i32, G->i32, G->i64, G->i64, G->i64, G->i8p, G->i8p, G->i64, G->f64 };
  G->errty = LLVMStructCreateNamed(C, "KErr");
  LLVMStructSetBody(G->errty, fields, KERR_F_COUNT, 0);
  G->errp = LLVMPointerType(G->errty, 0);
  mark_pure(S, target);
  for (int i = 0; i < S->nspecs; i++) declare_spec(G, S->specs[i]);
  for (int i = 0; i < S->nspecs; i++) emit_spec(G, S->specs[i]);
}

static void cg_done(CG *G) {
  LLVMDisposeBuilder(G->B);
  G->S->builder = NULL;
}

void kg_emit(Session *S, LLVMContextRef C, LLVMModuleRef M, KSpec *root,
             const char *entry_name, const KTarget *target) {
  CG G;
  cg_init(&G, S, C, M, target, root);
  emit_entry(&G, root, entry_name);
  cg_done(&G);
}

/* The NVVM kernel: scalar and array parameters straight from
** cuLaunchKernel, a KErr on the thread's stack, and the error record. */
void kg_emit_kernel(Session *S, LLVMContextRef C, LLVMModuleRef M, KSpec *sp,
                    const char *name, const KTarget *target) {
  CG G0, *G = &G0;
  cg_init(G, S, C, M, target, sp);
  LLVMTypeRef ps[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 2];
  int np = 0;
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    switch (t.kind) {
    case T_INT: case T_F64: case T_F32: ps[np++] = llty(G, t); break;
    case T_BOOL: ps[np++] = G->i8; break;
    case T_BUF:
      ps[np++] = bufptr_ty(G, t);
      for (int d = 0; d < t.ndim; d++) ps[np++] = G->i64;
      break;
    default: break;
    }
  }
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  ps[np++] = i64p;
  ps[np++] = G->i64;
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(C), ps, np, 0);
  LLVMValueRef fn = LLVMAddFunction(M, name, fty);
  G->fn = fn;
  LLVMPositionBuilderAtEnd(G->B, new_bb(G, "entry"));
  LLVMValueRef av[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 1];
  int n = 0, p = 0;
  for (int i = 0; i < sp->nargs; i++) {
    Type t = sp->args[i];
    switch (t.kind) {
    case T_INT: case T_F64: case T_F32: av[n++] = LLVMGetParam(fn, p++); break;
    case T_BOOL: av[n++] = LLVMBuildICmp(G->B, LLVMIntNE, LLVMGetParam(fn, p++), LLVMConstInt(G->i8, 0, 0), ""); break;
    case T_BUF:
      for (int d = 0; d <= t.ndim; d++) av[n++] = LLVMGetParam(fn, p++);
      break;
    default: break;
    }
  }
  LLVMValueRef rec = LLVMGetParam(fn, p++);
  LLVMValueRef dyn = LLVMGetParam(fn, p++);
  LLVMValueRef err = LLVMBuildAlloca(G->B, G->errty, "err");
  G->err = err;
  store_err_field(G, KERR_F_STACK_LIMIT, dyn);
  store_err_field(G, KERR_F_MSG, LLVMConstNull(G->i8p));
  store_err_field(G, KERR_F_F, cf64(G, 0));
  av[n++] = err;
  LLVMValueRef st = LLVMBuildCall2(G->B, (LLVMTypeRef)sp->llfnty, (LLVMValueRef)sp->llfunc, av, n, "");
  LLVMBasicBlockRef fail = new_bb(G, "fail"), fill = new_bb(G, "fill"), done = new_bb(G, "done");
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, ci32(G, 0), ""), done, fail);
  /* the first failing thread claims the record */
  LLVMPositionBuilderAtEnd(G->B, fail);
  LLVMValueRef prev = atomic_cas(G, rec, ci64(G, 0), ci64(G, 1));
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, prev, ci64(G, 0), ""), fill, done);
  LLVMPositionBuilderAtEnd(G->B, fill);
  LLVMValueRef w[KJIT_KERR_WORDS];
  memset(w, 0, sizeof w);
#define FIELD(i, ty) LLVMBuildLoad2(G->B, ty, LLVMBuildStructGEP2(G->B, G->errty, err, i, ""), "")
  w[KERR_W_KIND] = LLVMBuildSExt(G->B, FIELD(KERR_F_KIND, G->i32), G->i64, "");
  w[KERR_W_LINE] = LLVMBuildSExt(G->B, FIELD(KERR_F_LINE, G->i32), G->i64, "");
  w[KERR_W_A] = FIELD(KERR_F_A, G->i64);
  w[KERR_W_B] = FIELD(KERR_F_B, G->i64);
  w[KERR_W_C] = FIELD(KERR_F_C, G->i64);
  w[KERR_W_MSG] = LLVMBuildPtrToInt(G->B, FIELD(KERR_F_MSG, G->i8p), G->i64, "");
  w[KERR_W_FBITS] = LLVMBuildBitCast(G->B, FIELD(KERR_F_F, G->f64), G->i64, "");
#undef FIELD
  for (int a = 0; a < 3; a++) { w[KERR_W_TID + a] = sreg(G, 0, a); w[KERR_W_BID + a] = sreg(G, 1, a); }
  /* KERR_W_CLAIMED was set by the compare-and-swap above */
  for (int k = KERR_W_KIND; k < KERR_W_END; k++) {
    LLVMValueRef idx = ci64(G, k);
    LLVMBuildStore(G->B, w[k], LLVMBuildInBoundsGEP2(G->B, G->i64, rec, &idx, 1, ""));
  }
  LLVMBuildBr(G->B, done);
  LLVMPositionBuilderAtEnd(G->B, done);
  LLVMBuildRetVoid(G->B);
  /* !nvvm.annotations = !{!{void (...)* @name, !"kernel", i32 1}} */
  LLVMValueRef md[3] = { fn, LLVMMDStringInContext(C, "kernel", 6), ci32(G, 1) };
  LLVMAddNamedMetadataOperand(M, "nvvm.annotations", LLVMMDNodeInContext(C, md, 3));
  cg_done(G);
}

/* Lua's exact integer/float comparison and float for-loop limits for NVVM
** modules, the same algorithms as runtime.c (see there). */
const char kg_nvptx_runtime_ir[] =
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
