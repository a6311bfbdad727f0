/*
** cg_defer.c: deferred bounds checks of array reads in kernels.
**
** A GPU thread issues its loads in program order and stalls at the first
** use of a value still in flight. With a bounds check's branch before each
** load, `a[i-1][j] + a[i+1][j] + a[i][j-1] + a[i][j+1]` issues two loads,
** waits for them at the first add, then checks and issues the next one:
** the latencies add up (the earlier source-text generator measured a 2-D stencil
** 1.27x slower than unchecked on an H100). So in a kernel, the checks of
** reads are recorded instead of branched on while only straight code runs
** (cg_defer_straight: array reads, + - * /, unary minus, #, fields,
** comparisons, constants), each such read loads through
** select(all checks so far passed, element, fallback) and one branch tests
** them all before anything else runs (a store, a call, a check of another
** kind, a raise, the block's end). Its cold side repeats the checks in
** order, so the error is the one the interpreter raises: the first failing
** read, with its line and index.
**
** The fallback is a valid address in the array's own memory space (a
** fallback elsewhere would make NVVM's loads generic, and slower): for an
** array parameter of the kernel itself, kjit_safe, 16 zero bytes in the
** target's global address space; for a shared array of constant size or a
** local array, its own first element. Other arrays (device function
** parameters, phis) are checked at once.
*/
#include "codegen/cg.h"

#define MAX_DEFER ((int)(sizeof ((CG *)0)->defer / sizeof ((CG *)0)->defer[0]))

/* The root of v's array operand (through row views). */
static const KirInsn *array_root(const KirInsn *v) {
  const KirInsn *r = v->args[0];
  while (r->op == KIR_INDEX) r = r->args[0];
  return r;
}

/* 1: a parameter of the kernel (global memory); 2: an array of its own
** (shared of constant size, or local); 0: neither. */
static int origin(CG *G, const KirInsn *v) {
  const KirInsn *r = array_root(v);
  if (r->op == KIR_PARAM) return G->sp->root ? 1 : 0;
  if (r->op == KIR_CALL && r->nargs >= 2) {
    Type ft = G->sp->types[r->args[0]->id];
    if (ft.kind != T_BUILTIN) return 0;
    if (ft.ref == B_CUDA_LOCAL_ARRAY) return 2;
    if (ft.ref == B_CUDA_SHARED_ARRAY) {
      const KtyConst *k = &G->sp->consts[r->args[1]->id];
      return k->kind == T_INT && k->v.i > 0 ? 2 : 0;
    }
  }
  return 0;
}

static int enabled(CG *G) { return G->S->kernel && G->boundscheck; }

static int straight_op(int op) {
  switch (op) {
  case KIR_PARAM: case KIR_UNDEF: case KIR_NIL: case KIR_TRUE: case KIR_FALSE: case KIR_INT:
  case KIR_FLT: case KIR_STR: case KIR_GETUPVAL: case KIR_PHI: case KIR_GETFIELD:
  case KIR_INDEX: case KIR_LEN: case KIR_EQ: case KIR_LT: case KIR_LE: case KIR_NOT:
  case KIR_RESULT:
    return 1;
  case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_UNM:
    return 1;   /* no errors on numbers (a T_MAYBE operand's check flushes) */
  default:
    return 0;
  }
}

int cg_defer_straight(CG *G, const KirInsn *v) {
  return G->ndefer == 0 || straight_op(v->op);
}

/* A read whose check may wait: an INDEX of an array with a fallback by an
** integer key (a float key's conversion checks at once). */
static int deferrable(CG *G, const KirInsn *v) {
  if (v->op != KIR_INDEX || G->sp->types[v->args[0]->id].kind != T_BUF ||
      G->sp->types[v->args[1]->id].kind != T_INT || !origin(G, v))
    return 0;
  /* the row a store writes into (b[i] of b[i][j] = ...) is checked at
  ** once, before the reads, as the earlier source-text generator did */
  int stores = v->nusers > 0;
  for (int u = 0; u < v->nusers && stores; u++)
    stores = v->users[u]->op == KIR_SETINDEX && v->users[u]->args[0] == v;
  return !stores;
}

/* Whether v starts a run of straight code with another deferrable read:
** a lone read gains nothing from waiting (its branch would follow at
** once, with a select before its load). */
static int worth_it(CG *G, const KirInsn *v) {
  const KirBlock *b = v->block;
  int i = 0;
  while (i < b->ninsns && b->insns[i] != v) i++;
  int n = 0, j = i;
  for (; i < b->ninsns; i++) {
    const KirInsn *x = b->insns[i];
    if (!G->sp->live[b->id] || !straight_op(x->op)) break;
    if (x->op == KIR_INDEX && G->sp->types[x->args[0]->id].kind == T_BUF) {
      if (!deferrable(G, x)) break;   /* checked at once: flushes */
      if (G->sp->types[x->args[0]->id].ndim == 1) n++;   /* loads */
    }
  }
  /* reads that are arguments of a call on their own line (one statement
  ** with a call, `out[i] = f(x[i], y[i])`) are checked at once, as the AST
  ** code generator did: LLVM sinks such loads past the one branch anyway,
  ** and the selects stay (a grid-stride ufunc kernel: two more PTX
  ** instructions an iteration) */
  if (i < b->ninsns && b->insns[i]->op == KIR_CALL && b->insns[i]->line == b->insns[j]->line)
    return 0;
  return n >= 2;
}

int cg_defer_check(CG *G, const KirInsn *v, LLVMValueRef ok, int line, LLVMValueRef index,
                   LLVMValueRef extent) {
  if (!enabled(G) || !deferrable(G, v)) return 0;
  if (G->ndefer == 0 && !worth_it(G, v)) return 0;
  if (G->ndefer == MAX_DEFER) cg_defer_flush(G);
  G->defer[G->ndefer++] = (struct CgDefer){ ok, index, extent, line };
  G->defer_all = G->defer_all ? LLVMBuildAnd(G->B, G->defer_all, ok, "") : ok;
  return 1;
}

LLVMValueRef cg_defer_ptr(CG *G, const KirInsn *v, LLVMValueRef elem, LLVMTypeRef ety) {
  if (G->ndefer == 0 || !enabled(G) || v->op != KIR_INDEX) return elem;
  int o = origin(G, v);
  LLVMValueRef safe;
  LLVMTypeRef ep = LLVMTypeOf(elem);
  if (o == 1) {
    unsigned as = G->target->global_addrspace;
    LLVMValueRef g = LLVMGetNamedGlobal(G->M, "kjit_safe");
    if (g == NULL) {
      LLVMTypeRef ty = LLVMArrayType(G->i64, 2);
      g = LLVMAddGlobalInAddressSpace(G->M, ty, "kjit_safe", as);
      LLVMSetLinkage(g, LLVMInternalLinkage);
      LLVMSetInitializer(g, LLVMConstNull(ty));
      LLVMSetAlignment(g, 16);
    }
    safe = LLVMBuildBitCast(G->B, g, LLVMPointerType(ety, as), "");
    if (as != LLVMGetPointerAddressSpace(ep)) safe = LLVMBuildAddrSpaceCast(G->B, safe, ep, "");
  } else if (o == 2) {
    safe = G->vals[array_root(v)->id].v;   /* its element 1 */
    if (safe == NULL) return elem;
  } else {
    return elem;
  }
  return LLVMBuildSelect(G->B, G->defer_all, elem, safe, "");
}

void cg_defer_flush(CG *G) {
  if (G->ndefer == 0) return;
  int n = G->ndefer;
  struct CgDefer pend[sizeof G->defer / sizeof G->defer[0]];
  for (int k = 0; k < n; k++) pend[k] = G->defer[k];
  LLVMValueRef all = G->defer_all;
  G->ndefer = 0;
  G->defer_all = NULL;
  LLVMBasicBlockRef fail = cg_bb(G, "oob"), cont = cg_bb(G, "inbounds");
  cg_cold_false(G, LLVMBuildCondBr(G->B, all, cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  for (int k = 0; k < n; k++)
    cg_check(G, pend[k].ok, KE_BOUNDS, pend[k].line, pend[k].index, NULL, pend[k].extent, NULL);
  LLVMBuildUnreachable(G->B);   /* one of them failed */
  LLVMPositionBuilderAtEnd(G->B, cont);
}
