/*
** cg_alloc.c: arrays made by compiled code and the array methods on the
** CPU: kjit.zeros, empty, full, array, arange, linspace, a:copy() (a new
** array from runtime/alloc.c's kjit_rt_alloc, in the call's allocation
** list), a:fill(v), a:reshape(shape), a:slice(first [, last]) (views: a
** pointer and extents, no memory), row assignment m[i] = row, and the
** table constructors that give them shapes and elements ({n, m}).
**
** Scratch arrays (decided here, documented in docs/guide/allocation.md).
** A site whose array, and every view of it, never reaches a phi, a return,
** a table, a function value or a callee that returns arrays (nor becomes
** a Lua value anywhere: runtime/luaarray.c) cannot be used after its site runs
** again, nor after its function returns: such a site keeps its last array
** in a stack slot, reuses it when it runs again (kjit_rt_alloc_scratch:
** the same block when it has room, else a new one and the old one freed),
** and every return of the function frees it. A loop that makes a scratch array per
** iteration thus holds one at a time, and a callee's scratch arrays go
** when it returns. Any other site's arrays live until the call of the jit
** function returns (the dispatcher then frees what it does not return),
** so a loop that keeps its arrays (`last = kjit.zeros(n)`) holds them all
** until then. Sites inside kjit.prange bodies keep their slot in the
** worker's frame (freed when the site runs again in the same chunk).
**
** Errors are the interpreter's (buffer.c), located at the call's line:
** the allocation helpers fill err and return NULL (or 1), and the code
** here fails the function as cg_raise does.
*/
#include <stdio.h>
#include <string.h>
#include "codegen/cg.h"
#include "common/karray.h"
#include "common/krecord.h"
#include "runtime/alloc.h"
#include "backend/cpu.h"   /* kc_register_symbol */

static int dt_size(int d) { return kb_dtype_bytes(d); }   /* karray.h's table */

/* An array type's element size: a record's from its layout. */
static int64_t elem_size(Type t) {
  return t.dtype == KJIT_RECORD ? krec_byid(t.ref)->size : dt_size(t.dtype);
}

/* The dtype as runtime/alloc.c takes it: a record's layout id above the
** dtype's byte (KAL_DTYPE_RECORD), so the block knows its element size
** and the dispatcher its layout. A record's is read from the layout's
** global (alloc.h's kal_record_cell), not compiled in: the layout's id is
** this process's, and exported code is given the loading process's. */
static LLVMValueRef alloc_dtype(CG *G, Type t) {
  if (t.dtype != KJIT_RECORD) return cg_i32(G, t.dtype);
  char name[48];
  snprintf(name, sizeof name, KAL_LAYOUT_SYM "%d", (int)t.ref);
  kc_register_symbol(name, (void *)kal_record_cell(t.ref));   /* for the JIT's linker */
  LLVMValueRef g = LLVMGetNamedGlobal(G->M, name);
  if (g == NULL) {
    g = LLVMAddGlobal(G->M, G->i32, name);
    LLVMSetGlobalConstant(g, 1);
  }
  LLVMValueRef d = LLVMBuildLoad2(G->B, G->i32, g, "layout");
  LLVMSetMetadata(d, LLVMGetMDKindIDInContext(G->C, "invariant.load", 14),
                  LLVMMDNodeInContext(G->C, NULL, 0));
  return d;
}

/* Fails the function when ok is false (a helper filled err). */
static void fail_unless(CG *G, LLVMValueRef ok) {
  LLVMBasicBlockRef fail = cg_bb(G, "allocfail"), cont = cg_bb(G, "allocok");
  cg_cold_false(G, LLVMBuildCondBr(G->B, ok, cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  cg_fail_ret(G);
  LLVMPositionBuilderAtEnd(G->B, cont);
}

static LLVMValueRef product(CG *G, LLVMValueRef *dims, int nd) {
  LLVMValueRef s = dims[0];
  for (int d = 1; d < nd; d++) s = LLVMBuildMul(G->B, s, dims[d], "");
  return s;
}

/* ---- Scratch sites ---------------------------------------------------------- */

static int is_alloc_site(CG *G, const KirInsn *v) {
  if (v->op != KIR_CALL || (v->flags & KIR_F_TFOR)) return 0;
  Type ft = G->sp->types[v->args[0]->id];
  if (ft.kind != T_BUILTIN) return 0;
  switch (ft.ref) {
  case B_KJIT_ZEROS: case B_KJIT_EMPTY: case B_KJIT_FULL: case B_KJIT_ARRAY:
  case B_KJIT_ARANGE: case B_KJIT_LINSPACE: case B_ARR_COPY: return 1;
  default: return 0;
  }
}

/* 1 when the array d (made at a site, or a view of one) may be used after
** its site runs again or its function returns (see the top). */
static int escapes(CG *G, const KirInsn *d, int depth) {
  if (depth > 16) return 1;
  KtySpec *sp = G->sp;
  for (int i = 0; i < d->nusers; i++) {
    const KirInsn *u = d->users[i];
    switch (u->op) {
    case KIR_GETFIELD:   /* r.pos, an array field of a record: a view of the same memory */
      if (sp->types[u->id].kind == T_BUF && escapes(G, u, depth + 1)) return 1;
      break;
    case KIR_LEN: break;
    case KIR_EQ:   /* compared with a Lua value: made one (luaarray.c), kept */
      if (sp->types[u->args[0]->id].kind == T_LUA || sp->types[u->args[1]->id].kind == T_LUA ||
          cg_lua_eq_ident(sp, u))
        return 1;
      break;
    case KIR_SETINDEX:   /* a store into it; stored into a table, it is kept (luaarray.c) */
      if (u->args[0] != d) return 1;
      break;
    case KIR_INDEX:   /* a row view is the same memory */
      if (u->args[0] == d && sp->types[u->id].kind == T_BUF && escapes(G, u, depth + 1)) return 1;
      break;
    case KIR_CALL: {
      Type ft = sp->types[u->args[0]->id];
      if (u->args[0] == d) return 1;
      if (ft.kind == T_BUILTIN) {
        int view = ft.ref == B_ARR_FILL || ft.ref == B_ARR_RESHAPE || ft.ref == B_ARR_SLICE;
        if (view && u->nargs > 1 && u->args[1] == d && escapes(G, u, depth + 1)) return 1;
        break;
      }
      KtySpec *c = sp->callees[u->id];
      if (c == NULL) return 1;
      for (int r = 0; r < c->nret; r++)
        if (c->rets[r].kind == T_BUF) return 1;   /* it may give it back */
      if (cg_lua_spec_uses_deep(G->S, c)) return 1;   /* it may keep it in a table (luaarray.c) */
      break;
    }
    default: return 1;   /* phi, return, anything else: kept */
    }
  }
  return 0;
}

#define KCG_STACK_ARRAY 1024   /* bytes of a scratch array kept on the stack */

/* A constant extent (the typer's constant), or -1. */
static int64_t const_extent(CG *G, const KirInsn *x) {
  const KtyConst *k = &G->sp->consts[x->id];
  return k->kind == T_INT ? (int64_t)k->v.i : -1;
}

/* The bytes of site v's array when its shape is made of constants (a
** small positive size), or -1. */
static int64_t const_bytes(CG *G, const KirInsn *v) {
  Type ft = G->sp->types[v->args[0]->id];
  Type rt = G->sp->types[v->id];
  if (v->nargs < 2 || rt.kind != T_BUF) return -1;
  const KirInsn *shape = v->args[1];
  int64_t n = 1;
  if (ft.ref == B_KJIT_ZEROS || ft.ref == B_KJIT_EMPTY || ft.ref == B_KJIT_FULL) {
    Type st = G->sp->types[shape->id];
    if (st.kind == T_INT) {
      n = const_extent(G, shape);
    } else if (st.kind == T_SHAPE && st.sub == 1 && shape->op == KIR_NEWTABLE) {
      const KirInsn *items[KJIT_MAXDIMS + 1];
      int m = kty_ctor_items(shape, items, KJIT_MAXDIMS);
      if (m < 1 || m > KJIT_MAXDIMS) return -1;
      for (int i = 0; i < m && n > 0; i++) {
        int64_t e = const_extent(G, items[i]);
        n = e < 1 || e > KCG_STACK_ARRAY ? -1 : n * e;
      }
    } else {
      return -1;
    }
  } else if (ft.ref == B_KJIT_ARRAY && shape->op == KIR_NEWTABLE) {
    int nd = 0;
    const KirInsn *c = shape;
    for (;;) {   /* (as ctor_shape, without LLVM values) */
      const KirInsn *items[4097];
      int m = kty_ctor_items(c, items, 4096);
      if (m < 1) return -1;
      n *= m;
      if (++nd == KJIT_MAXDIMS || G->sp->types[items[0]->id].kind != T_SHAPE) break;
      c = items[0];
    }
  } else {
    return -1;
  }
  if (n < 1 || n > KCG_STACK_ARRAY) return -1;
  n *= elem_size(rt);
  return n <= KCG_STACK_ARRAY ? n : -1;
}

/* The slot of site v (its last array), or NULL when v's arrays escape or
** live on the stack. */
static LLVMValueRef site_slot(CG *G, const KirInsn *v) {
  if (G->scratchkind == NULL) return NULL;
  if (G->scratchkind[v->id] == 0)
    G->scratchkind[v->id] = escapes(G, v, 0) ? 2 : const_bytes(G, v) > 0 ? 3 : 1;
  if (G->scratchkind[v->id] != 1) return NULL;
  if (G->scratch[v->id] && G->scratchfn[v->id] == G->fn) return G->scratch[v->id];
  /* a slot at the top of the function (a prange worker: of its own),
  ** NULL from the start */
  LLVMValueRef slot = cg_alloca(G, G->i8p, "scratch");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(G->C);
  LLVMValueRef next = LLVMGetNextInstruction(slot);
  if (next) LLVMPositionBuilderBefore(b, next);
  else LLVMPositionBuilderAtEnd(b, G->allocas);
  LLVMBuildStore(b, LLVMConstNull(G->i8p), slot);
  LLVMDisposeBuilder(b);
  G->scratch[v->id] = slot;
  G->scratchfn[v->id] = G->fn;
  return slot;
}

static void call_free(CG *G, LLVMValueRef p) {
  LLVMTypeRef pt[1] = { G->i8p };
  cg_ccall(G, "kjit_rt_free", LLVMVoidTypeInContext(G->C), pt, &p, 1);
}

/* Before a return of the function: its scratch arrays go. The slots of
** every site of the function are made up front, so that a return emitted
** before a site still frees it. */
void cg_free_scratch(CG *G) {
  KirFunc *f = G->sp->ir;
  if (G->scratchkind == NULL) return;
  for (int b = 0; b < f->nblocks; b++) {
    if (!G->sp->live[b] || cg_prange_owns(G, f->blocks[b])) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      KirInsn *v = blk->insns[i];
      if (!is_alloc_site(G, v) || G->sp->types[v->id].kind != T_BUF) continue;
      LLVMValueRef slot = site_slot(G, v);
      if (slot) call_free(G, LLVMBuildLoad2(G->B, G->i8p, slot, ""));
    }
  }
}

/* A new array of dtype, ndim extents dims (not zeroed unless zero): its
** elements' address (i8*). argn, fname: the interpreter's words. */
static LLVMValueRef emit_alloc(CG *G, const KirInsn *v, Type at, int nd, LLVMValueRef *dims,
                               int zero, int argn, const char *fname) {
  LLVMValueRef slot = site_slot(G, v);
  if (G->scratchkind && G->scratchkind[v->id] == 3) {   /* on the stack */
    int64_t bytes = const_bytes(G, v);
    LLVMValueRef buf = cg_alloca(G, LLVMArrayType(G->i8, (unsigned)bytes), "stackarray");
    LLVMSetAlignment(buf, 64);
    LLVMValueRef p = LLVMBuildBitCast(G->B, buf, G->i8p, "");
    if (zero) LLVMBuildMemSet(G->B, p, LLVMConstInt(G->i8, 0, 0), cg_i64(G, bytes), 64);
    return p;
  }
  /* a scratch site reuses its last array when it has room */
  LLVMTypeRef pt[13] = { G->i8p, G->i32, G->i32, G->i64, G->i64, G->i64, G->i64, G->i32, G->errp,
                         G->i32, G->i8p, G->i32, G->i8p };
  LLVMValueRef av[13] = { slot ? LLVMBuildLoad2(G->B, G->i8p, slot, "") : NULL,
                          alloc_dtype(G, at), cg_i32(G, nd), NULL, NULL, NULL, NULL,
                          cg_i32(G, zero), G->err, cg_i32(G, v->line), G->chunkname,
                          cg_i32(G, argn), cg_msg(G, fname) };
  for (int d = 0; d < KJIT_MAXDIMS; d++) av[3 + d] = d < nd ? dims[d] : cg_i64(G, 1);
  LLVMValueRef p = slot ? cg_ccall(G, "kjit_rt_alloc_scratch", G->i8p, pt, av, 13)
                        : cg_ccall(G, "kjit_rt_alloc", G->i8p, pt + 1, av + 1, 12);
  fail_unless(G, LLVMBuildIsNotNull(G->B, p, ""));
  if (slot) LLVMBuildStore(G->B, p, slot);
  return p;
}

static CgVal mkbuf(CG *G, Type t, LLVMValueRef p, LLVMValueRef *dims) {
  CgVal r = cg_mk(t, LLVMBuildBitCast(G->B, p, cg_bufptr_ty(G, t), ""));
  for (int d = 0; d < t.ndim; d++) r.dims[d] = dims[d];
  return r;
}

/* The extents of a shape argument (an integer, a.shape, {n, m}). */
static int shape_dims(CgVal x, LLVMValueRef *dims) {
  if (x.t.kind == T_INT) { dims[0] = x.v; return 1; }
  for (int d = 0; d < x.t.ndim; d++) dims[d] = x.dims[d];
  return x.t.ndim;
}

/* Every element of the array at p (dtype d, n elements) set to number x. */
static void fill(CG *G, const KirInsn *v, int d, LLVMValueRef p, LLVMValueRef n, CgVal x) {
  LLVMValueRef tmp = cg_alloca(G, cg_dtype_llty(G, d), "fillv");
  cg_store_value(G, v, d, tmp, x);   /* converted once (its error first) */
  LLVMTypeRef pt[4] = { G->i8p, G->i64, G->i64, G->i8p };
  LLVMValueRef av[4] = { LLVMBuildBitCast(G->B, p, G->i8p, ""), cg_i64(G, dt_size(d)), n,
                         LLVMBuildBitCast(G->B, tmp, G->i8p, "") };
  cg_ccall(G, "kjit_rt_fill", LLVMVoidTypeInContext(G->C), pt, av, 4);
}

/* Every record of the array at p (layout of t, n records) set to a copy of
** record x (the typer: same layout), read once first: x may be one of them. */
static void fill_records(CG *G, Type t, LLVMValueRef p, LLVMValueRef n, CgVal x) {
  int64_t es = elem_size(t);
  LLVMValueRef tmp = cg_alloca(G, LLVMArrayType(G->i8, (unsigned)es), "fillrec");
  tmp = LLVMBuildBitCast(G->B, tmp, G->i8p, "");
  LLVMBuildMemCpy(G->B, tmp, 1, LLVMBuildBitCast(G->B, x.v, G->i8p, ""), 1, cg_i64(G, es));
  LLVMTypeRef pt[4] = { G->i8p, G->i64, G->i64, G->i8p };
  LLVMValueRef av[4] = { LLVMBuildBitCast(G->B, p, G->i8p, ""), cg_i64(G, es), n, tmp };
  cg_ccall(G, "kjit_rt_fill", LLVMVoidTypeInContext(G->C), pt, av, 4);
}

/* for (j = 0; j < n; j++) body(j): the loop's index phi is returned with
** the builder in the body; loop_end closes it. */
typedef struct Loop { LLVMBasicBlockRef head, body, done, pre; LLVMValueRef j; } Loop;

static Loop loop_begin(CG *G, LLVMValueRef n) {
  Loop l;
  l.pre = LLVMGetInsertBlock(G->B);
  l.head = cg_bb(G, "aloop");
  l.body = cg_bb(G, "abody");
  l.done = cg_bb(G, "adone");
  LLVMBuildBr(G->B, l.head);
  LLVMPositionBuilderAtEnd(G->B, l.head);
  l.j = LLVMBuildPhi(G->B, G->i64, "j");
  LLVMValueRef z = cg_i64(G, 0);
  LLVMAddIncoming(l.j, &z, &l.pre, 1);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntSLT, l.j, n, ""), l.body, l.done);
  LLVMPositionBuilderAtEnd(G->B, l.body);
  return l;
}

static void loop_end(CG *G, Loop *l) {
  LLVMValueRef nx = LLVMBuildAdd(G->B, l->j, cg_i64(G, 1), "");
  LLVMBasicBlockRef at = LLVMGetInsertBlock(G->B);
  LLVMAddIncoming(l->j, &nx, &at, 1);
  LLVMBuildBr(G->B, l->head);
  LLVMPositionBuilderAtEnd(G->B, l->done);
}

/* n elements of array src (dtype sd) into dst (dtype dd), with the store
** rules: a memcpy for the same dtype. */
static void copy_elems(CG *G, const KirInsn *v, LLVMValueRef dst, int dd, LLVMValueRef src, int sd,
                       LLVMValueRef n) {
  if (dd == sd) {
    LLVMValueRef bytes = LLVMBuildMul(G->B, n, cg_i64(G, dt_size(dd)), "");
    LLVMBuildMemMove(G->B, dst, 1, src, 1, bytes);
    return;
  }
  Loop l = loop_begin(G, n);
  LLVMValueRef sp = LLVMBuildInBoundsGEP2(G->B, cg_dtype_llty(G, sd), src, &l.j, 1, "");
  LLVMValueRef dp = LLVMBuildInBoundsGEP2(G->B, cg_dtype_llty(G, dd), dst, &l.j, 1, "");
  cg_store_value(G, v, dd, dp, cg_load_elem(G, sd, sp));
  loop_end(G, &l);
}

/* kjit.array's constructor: the leaves in order, stored at dst from
** element *at on. */
static void store_ctor(CG *G, const KirInsn *v, const KirInsn *ctor, int d, LLVMValueRef dst,
                       int64_t *at) {
  const KirInsn *items[4097];
  int n = kty_ctor_items(ctor, items, 4096);
  for (int i = 0; i < n; i++) {
    if (G->sp->types[items[i]->id].kind == T_SHAPE) { store_ctor(G, v, items[i], d, dst, at); continue; }
    LLVMValueRef k = cg_i64(G, (*at)++);
    cg_store_value(G, v, d, LLVMBuildInBoundsGEP2(G->B, cg_dtype_llty(G, d), dst, &k, 1, ""),
                   cg_val(G, items[i]));
  }
}

/* The static shape of kjit.array's constructor (the typer checked it). */
static int ctor_shape(CG *G, const KirInsn *ctor, LLVMValueRef *dims) {
  int nd = 0;
  for (;;) {
    const KirInsn *items[4097];
    int n = kty_ctor_items(ctor, items, 4096);
    dims[nd++] = cg_i64(G, n);
    if (n == 0 || nd == KJIT_MAXDIMS || G->sp->types[items[0]->id].kind != T_SHAPE) break;
    ctor = items[0];
  }
  return nd;
}

/* ---- The built-ins ---------------------------------------------------------- */

CgVal cg_array_builtin(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  Type rt = G->sp->types[v->id];
  LLVMValueRef dims[KJIT_MAXDIMS];
  int line = v->line;
  switch (id) {
  case B_KJIT_ZEROS: case B_KJIT_EMPTY: case B_KJIT_FULL: {
    int nd = shape_dims(a[0], dims);
    LLVMValueRef p = emit_alloc(G, v, rt, nd, dims, id != B_KJIT_FULL, 1,
                                id == B_KJIT_ZEROS ? "zeros" : id == B_KJIT_EMPTY ? "empty" : "full");
    if (id == B_KJIT_FULL && rt.dtype == KJIT_RECORD) fill_records(G, rt, p, product(G, dims, nd), a[1]);
    else if (id == B_KJIT_FULL) fill(G, v, rt.dtype, p, product(G, dims, nd), a[1]);
    return mkbuf(G, rt, p, dims);
  }
  case B_KJIT_ARRAY: case B_ARR_COPY: {
    if (a[0].t.kind == T_BUF) {
      int nd = a[0].t.ndim;
      for (int d = 0; d < nd; d++) dims[d] = a[0].dims[d];
      LLVMValueRef p = emit_alloc(G, v, rt, nd, dims, 0, 1, id == B_ARR_COPY ? "copy" : "array");
      CgVal r = mkbuf(G, rt, p, dims);
      if (rt.dtype == KJIT_RECORD) {   /* the same layout (the typer): the bytes */
        LLVMValueRef bytes = LLVMBuildMul(G->B, product(G, dims, nd), cg_i64(G, elem_size(rt)), "");
        LLVMBuildMemMove(G->B, r.v, 1, a[0].v, 1, bytes);
        return r;
      }
      copy_elems(G, v, r.v, rt.dtype, a[0].v, a[0].t.dtype, product(G, dims, nd));
      return r;
    }
    int nd = ctor_shape(G, v->args[1], dims);
    LLVMValueRef p = emit_alloc(G, v, rt, nd, dims, 0, 1, "array");
    CgVal r = mkbuf(G, rt, p, dims);
    int64_t at = 0;
    store_ctor(G, v, v->args[1], rt.dtype, r.v, &at);
    return r;
  }
  case B_KJIT_ARANGE: {
    int nnum = 0, allint = 1;
    while (nnum < 3 && nnum < n && (a[nnum].t.kind == T_INT || a[nnum].t.kind == T_F64 ||
                                    a[nnum].t.kind == T_F32)) {
      allint &= a[nnum].t.kind == T_INT;
      nnum++;
    }
    LLVMValueRef iv[3], fv[3];
    for (int k = 0; k < 3; k++) { iv[k] = cg_i64(G, k == 2); fv[k] = cg_f64(G, k == 2); }
    for (int k = 0; k < nnum; k++) {
      int slot = nnum == 1 ? 1 : k;   /* arange(stop) */
      if (allint) iv[slot] = a[k].v;
      else fv[slot] = cg_tofloat(G, a[k], T_F64);
    }
    LLVMValueRef cnt = cg_alloca(G, G->i64, "count");
    LLVMTypeRef pt[12] = { G->i32, G->i64, G->i64, G->i64, G->f64, G->f64, G->f64, G->i32,
                           LLVMPointerType(G->i64, 0), G->errp, G->i32, G->i8p };
    LLVMValueRef av[12] = { cg_i32(G, allint), iv[0], iv[1], iv[2], fv[0], fv[1], fv[2],
                            cg_i32(G, rt.dtype), cnt, G->err, cg_i32(G, line), G->chunkname };
    LLVMValueRef slot = site_slot(G, v);
    if (slot) call_free(G, LLVMBuildLoad2(G->B, G->i8p, slot, ""));
    LLVMValueRef p = cg_ccall(G, "kjit_rt_arange", G->i8p, pt, av, 12);
    fail_unless(G, LLVMBuildIsNotNull(G->B, p, ""));
    if (slot) LLVMBuildStore(G->B, p, slot);
    dims[0] = LLVMBuildLoad2(G->B, G->i64, cnt, "");
    return mkbuf(G, rt, p, dims);
  }
  case B_KJIT_LINSPACE: {
    LLVMTypeRef pt[7] = { G->f64, G->f64, G->i64, G->i32, G->errp, G->i32, G->i8p };
    LLVMValueRef av[7] = { cg_tofloat(G, a[0], T_F64), cg_tofloat(G, a[1], T_F64), a[2].v,
                           cg_i32(G, rt.dtype), G->err, cg_i32(G, line), G->chunkname };
    LLVMValueRef slot = site_slot(G, v);
    if (slot) call_free(G, LLVMBuildLoad2(G->B, G->i8p, slot, ""));
    LLVMValueRef p = cg_ccall(G, "kjit_rt_linspace", G->i8p, pt, av, 7);
    fail_unless(G, LLVMBuildIsNotNull(G->B, p, ""));
    if (slot) LLVMBuildStore(G->B, p, slot);
    dims[0] = a[2].v;
    return mkbuf(G, rt, p, dims);
  }
  case B_ARR_FILL:
    if (a[0].t.dtype == KJIT_RECORD)
      fill_records(G, a[0].t, a[0].v, product(G, a[0].dims, a[0].t.ndim), a[1]);
    else
      fill(G, v, a[0].t.dtype, a[0].v, product(G, a[0].dims, a[0].t.ndim), a[1]);
    return a[0];
  case B_ARR_RESHAPE: {
    int nd = shape_dims(a[1], dims);
    if (G->target->kernel) {
      /* a kernel (GPU and simulator alike): kjit_rt_reshape_check's checks
      ** inline (the extents' product is not checked against the
      ** allocation limit: no array a kernel sees is that large) */
      for (int d = 0; d < nd; d++)
        cg_check(G, LLVMBuildICmp(G->B, LLVMIntSGE, dims[d], cg_i64(G, 0), ""), KE_ALLOC, line,
                 dims[d], cg_i64(G, KA_NEGDIM), cg_i64(G, 1), "reshape");
      LLVMValueRef size = product(G, a[0].dims, a[0].t.ndim);
      LLVMValueRef nz = nd > 0 ? product(G, dims, nd) : cg_i64(G, 1);
      cg_check(G, LLVMBuildICmp(G->B, LLVMIntEQ, nz, size, ""), KE_RESHAPE, line, size, nz,
               NULL, NULL);
      CgVal r = a[0];
      r.t = rt;
      for (int d = 0; d < KJIT_MAXDIMS; d++) r.dims[d] = d < nd ? dims[d] : NULL;
      return r;
    }
    LLVMTypeRef pt[10] = { G->i64, G->i32, G->i32, G->i64, G->i64, G->i64, G->i64, G->errp,
                           G->i32, G->i8p };
    LLVMValueRef av[10] = { product(G, a[0].dims, a[0].t.ndim), alloc_dtype(G, a[0].t),
                            cg_i32(G, nd), NULL, NULL, NULL, NULL, G->err, cg_i32(G, line),
                            G->chunkname };
    for (int d = 0; d < KJIT_MAXDIMS; d++) av[3 + d] = d < nd ? dims[d] : cg_i64(G, 1);
    LLVMValueRef st = cg_ccall(G, "kjit_rt_reshape_check", G->i32, pt, av, 10);
    fail_unless(G, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""));
    CgVal r = a[0];
    r.t = rt;
    for (int d = 0; d < KJIT_MAXDIMS; d++) r.dims[d] = d < nd ? dims[d] : NULL;
    r.isf = LLVMConstInt(G->i1, 1, 0);   /* a view (cg_lua.c cg_lua_box) */
    return r;
  }
  case B_ARR_SLICE: {
    CgVal o = a[0];
    LLVMValueRef ext = o.dims[0], first = a[1].v;
    LLVMValueRef last = n > 2 && a[2].t.kind == T_INT ? a[2].v : ext;
    /* buffer.c's m_slice: last + 1 would overflow for maxinteger */
    LLVMValueRef back = LLVMBuildAnd(G->B,
        LLVMBuildICmp(G->B, LLVMIntNE, last, cg_i64(G, INT64_MAX), ""),
        LLVMBuildICmp(G->B, LLVMIntSGT, first, LLVMBuildAdd(G->B, last, cg_i64(G, 1), ""), ""), "");
    LLVMValueRef bad = LLVMBuildOr(G->B, LLVMBuildOr(G->B,
        LLVMBuildICmp(G->B, LLVMIntSLT, first, cg_i64(G, 1), ""),
        LLVMBuildICmp(G->B, LLVMIntSGT, last, ext, ""), ""), back, "");
    cg_check(G, LLVMBuildNot(G->B, bad, ""), KE_SLICE, line, first, last, ext, NULL);
    LLVMValueRef off = LLVMBuildSub(G->B, first, cg_i64(G, 1), "");
    for (int d = 1; d < o.t.ndim; d++) off = LLVMBuildMul(G->B, off, o.dims[d], "");
    if (o.t.dtype == KJIT_RECORD)   /* records: i8, a byte offset */
      off = LLVMBuildMul(G->B, off, cg_i64(G, elem_size(o.t)), "");
    CgVal r = o;
    r.v = LLVMBuildInBoundsGEP2(G->B, cg_dtype_llty(G, o.t.dtype), o.v, &off, 1, "");
    r.dims[0] = LLVMBuildAdd(G->B, LLVMBuildSub(G->B, last, first, ""), cg_i64(G, 1), "");
    r.isf = LLVMConstInt(G->i1, 1, 0);   /* a view (cg_lua.c cg_lua_box) */
    return r;
  }
  default:
    cg_error(G, v, "internal error: array built-in %s", kir_builtin_name(id));
  }
}

/* newtable: a constructor typed as a shape (its extents come with its
** setlist); setlist: the integers of a shape. */
void cg_ctor(CG *G, const KirInsn *v) {
  if (v->op == KIR_NEWTABLE) {
    G->vals[v->id] = cg_mk(G->sp->types[v->id], NULL);
    return;
  }
  const KirInsn *t = v->args[0];
  CgVal *tv = &G->vals[t->id];
  for (int j = 1; j < v->nargs; j++) {
    int at = v->aux + j - 1;
    if (at < tv->t.ndim && G->sp->types[v->args[j]->id].kind == T_INT)
      tv->dims[at] = cg_val(G, v->args[j]).v;
  }
}

/* m[i] = x: the row o (bounds checked by the caller) gets x's elements,
** same dtype (the typer), same extents (checked here, as buffer.c). */
void cg_setrow(CG *G, const KirInsn *v, CgVal o, CgVal k, CgVal x) {
  (void)k;
  for (int d = 0; d < o.t.ndim; d++)
    cg_check(G, LLVMBuildICmp(G->B, LLVMIntEQ, x.dims[d], o.dims[d], ""), KE_ROWSHAPE, v->line,
             x.dims[d], o.dims[d], cg_i64(G, d + 1), NULL);
  copy_elems(G, v, o.v, o.t.dtype, x.v, x.t.dtype, product(G, o.dims, o.t.ndim));
}
