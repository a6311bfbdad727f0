/*
** cg_array.c: kjit arrays in the bytecode code generator: x[i] (a row view
** of an n-D array, or an element), x[i] = v, #x, x.shape, x.shape[k],
** x.size, x.ndim. Row-major; an index is an integer or an integral float;
** each access checks its bounds (unless boundscheck = false) and raises
** the interpreter's message at the access's line.
*/
#include <stdio.h>
#include <string.h>
#include "codegen/cg.h"
#include "common/karray.h"
#include "common/krecord.h"

/* The key as an integer: floats must be integral (else "index 1.5 is not
** an integer"; an integral float beyond i64 is out of bounds). upper: the
** extent, for that message. */
static LLVMValueRef index_int(CG *G, CgVal k, int line, LLVMValueRef upper, const KirInsn *use,
                              int argi) {
  k = cg_unwrap(G, k, line, use, argi);
  if (k.t.kind == T_INT) return k.v;
  cg_defer_flush(G);   /* its error comes after the pending ones */
  LLVMValueRef x;
  LLVMBasicBlockRef intside = NULL, join = NULL;
  struct CgIdxMemo *memo = NULL;
  if (k.t.kind == T_NUMBER && G->curblock) {
    for (int m = 0; m < 4; m++) {
      struct CgIdxMemo *e = &G->idxmemo[m];
      if (e->gen == G->blockgen && e->v == k.v && e->isf == k.isf) return e->i;
      if (memo == NULL || e->gen != G->blockgen) memo = e;
    }
  }
  if (k.t.kind == T_NUMBER) {
    /* a branch on the tag, not selects: the integer side needs nothing,
    ** and with a constant tag there (math.floor's, cg_builtin.c) LLVM
    ** threads it away */
    LLVMBasicBlockRef fside = cg_bb(G, "idxfloat");
    intside = LLVMGetInsertBlock(G->B);
    join = cg_bb(G, "idxint");
    LLVMBuildCondBr(G->B, k.isf, fside, join);
    LLVMPositionBuilderAtEnd(G->B, fside);
    x = cg_num_to(G, cg_number_side(G, k, 1), T_F64);
  } else {
    x = cg_num_to(G, k, T_F64);
  }
  LLVMValueRef ok;
  LLVMValueRef i = cg_float_to_int_exact(G, x, &ok);
  if (!(LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok) == 1)) {
    LLVMBasicBlockRef fail = cg_bb(G, "badindex"), cont = cg_bb(G, "ok");
    cg_cold_false(G, LLVMBuildCondBr(G->B, ok, cont, fail));
    LLVMPositionBuilderAtEnd(G->B, fail);
    cg_pure_keep_first_error(G);   /* a callee's error before it stays */
    cg_store_err(G, 8, x);
    LLVMValueRef fl = cg_math(G, "floor", G->f64, &x, 1);
    LLVMValueRef integral = LLVMBuildFCmp(G->B, LLVMRealOEQ, fl, x, "");
    if (upper) cg_store_err(G, 4, upper);
    else integral = cg_i1(G, 0);
    cg_store_err(G, 0, LLVMBuildSelect(G->B, integral, cg_i32(G, KE_BOUNDSF), cg_i32(G, KE_INDEXINT), ""));
    cg_store_err(G, 1, cg_i32(G, line));
    cg_store_err(G, 6, G->chunkname);
    cg_fail_ret(G);
    LLVMPositionBuilderAtEnd(G->B, cont);
  }
  if (join) {
    LLVMBasicBlockRef fend = LLVMGetInsertBlock(G->B);
    LLVMBuildBr(G->B, join);
    LLVMPositionBuilderAtEnd(G->B, join);
    LLVMValueRef phi = LLVMBuildPhi(G->B, G->i64, "");
    LLVMValueRef vs[2] = { k.v, i };
    LLVMBasicBlockRef from[2] = { intside, fend };
    LLVMAddIncoming(phi, vs, from, 2);
    i = phi;
    if (memo) { memo->v = k.v; memo->isf = k.isf; memo->i = i; memo->gen = G->blockgen; }
  }
  return i;
}

/* dims[1] * ... * dims[n-1]: the stride of dimension 0. */
static LLVMValueRef row_stride(CG *G, CgVal b) {
  LLVMValueRef s = b.dims[1];
  for (int i = 2; i < b.t.ndim; i++) s = LLVMBuildMul(G->B, s, b.dims[i], "");
  return s;
}

/* One index applied to array o: a row view (n-D), or the element pointer
** in *elem (1-D). */
static CgVal index_buffer(CG *G, const KirInsn *v, CgVal o, CgVal k, LLVMValueRef *elem) {
  int line = v->line;
  if (k.t.kind == T_LUA)   /* a[t.i]; 2: an array of records (its own messages) */
    k = cg_lua_array_key(G, k, v, (v->op == KIR_SETINDEX) | (o.t.dtype == KJIT_RECORD) << 1);
  LLVMValueRef i = index_int(G, k, line, o.dims[0], v, 1);
  LLVMValueRef off = LLVMBuildSub(G->B, i, cg_i64(G, 1), "");
  if (G->boundscheck && !cg_version_unchecked(G, v)) {   /* hoisted: cg_version.c */
    LLVMValueRef ok = LLVMBuildICmp(G->B, LLVMIntULT, off, o.dims[0], "");
    if (!cg_defer_check(G, v, ok, line, i, o.dims[0]))   /* kernels: cg_defer.c */
      cg_check(G, ok, KE_BOUNDS, line, i, NULL, o.dims[0], NULL);
  }
  LLVMTypeRef ety = cg_dtype_llty(G, o.t.dtype);
  if (o.t.dtype == KJIT_RECORD) {   /* records: a byte offset; p[i] is a record view (ndim 0) */
    if (o.t.ndim > 1) off = LLVMBuildMul(G->B, off, row_stride(G, o), "");
    off = LLVMBuildMul(G->B, off, cg_i64(G, krec_byid(o.t.ref)->size), "");
    CgVal r = o;
    r.t.ndim--;
    r.v = LLVMBuildInBoundsGEP2(G->B, G->i8, o.v, &off, 1, "");
    for (int d = 0; d + 1 < o.t.ndim; d++) r.dims[d] = o.dims[d + 1];
    r.dims[o.t.ndim - 1] = NULL;
    *elem = NULL;
    return r;
  }
  if (o.t.ndim > 1) {
    CgVal r = o;
    r.t.ndim--;
    r.isf = LLVMConstInt(G->i1, 1, 0);   /* a row view (cg_lua.c cg_lua_box) */
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

LLVMValueRef cg_elem_ptr(CG *G, const KirInsn *v, CgVal o, CgVal k) {
  LLVMValueRef elem;
  index_buffer(G, v, o, k, &elem);
  return elem;
}

/* Loads an element: narrow integers widen to i64. */
static CgVal load_elem(CG *G, int d, LLVMValueRef p) {
  LLVMValueRef x = LLVMBuildLoad2(G->B, cg_dtype_llty(G, d), p, "");
  switch (d) {
  case KJIT_I8: case KJIT_I16: case KJIT_I32: return cg_mk(TY(T_INT), LLVMBuildSExt(G->B, x, G->i64, ""));
  case KJIT_U8: case KJIT_U16: case KJIT_U32: return cg_mk(TY(T_INT), LLVMBuildZExt(G->B, x, G->i64, ""));
  case KJIT_I64: case KJIT_U64: return cg_mk(TY(T_INT), x);
  case KJIT_F32: return cg_mk(TY(T_F32), x);
  case KJIT_F16: return cg_mk(TY(T_F64), cg_half_to_f64(G, x));   /* exact, as Lua reads it */
  case KJIT_BOOL:   /* any nonzero byte is true, as buffer.c reads it */
    return cg_mk(TY(T_BOOL), LLVMBuildICmp(G->B, LLVMIntNE, x, LLVMConstInt(G->i8, 0, 0), ""));
  default: return cg_mk(TY(T_F64), x);
  }
}

static CgVal concrete_elem(CG *G, const KirInsn *v, CgVal *a, int n, Type rt) {
  (void)n;
  /* a[0]: the value (concrete), a[1].t.dtype: the element type */
  int d = rt.dtype;
  CgVal x = a[0];
  LLVMValueRef r;
  if (d == KJIT_F32)   /* an integer rounds once, as buffer.c's (float)i */
    r = x.t.kind == T_INT ? LLVMBuildSIToFP(G->B, x.v, G->f32, "") : cg_num_to(G, x, T_F32);
  else if (d == KJIT_F64) r = cg_num_to(G, x, T_F64);
  else if (d == KJIT_F16)   /* one rounding, from the double (buffer.c's kh_from_double) */
    r = cg_f64_to_half(G, x.t.kind == T_INT ? LLVMBuildSIToFP(G->B, x.v, G->f64, "")
                                            : cg_num_to(G, x, T_F64));
  else {
    /* the array's __newindex raises this (buffer.c, luaL_error: no
    ** position in a stripped chunk, unlike the VM's conversions) */
    if (x.t.kind == T_INT) r = x.v;
    else {
      LLVMValueRef ok;
      r = cg_float_to_int_exact(G, x.v, &ok);
      cg_check(G, ok, KE_STORENOINT, v->line, NULL, NULL, NULL, NULL);
    }
    LLVMTypeRef ty = cg_dtype_llty(G, d);
    if (ty != G->i64) r = LLVMBuildTrunc(G->B, r, ty, "");
  }
  LLVMBuildStore(G->B, r, a[1].v);
  return cg_mk(TY(T_NIL), NULL);
}

/* The key of a.shape[k] as an integer, and whether the table a.shape has
** it at all: reading a table never raises, so a nil, false or non-integral
** key gives nil (present 0), where an array's own index would raise. */
static LLVMValueRef shape_key(CG *G, CgVal k, LLVMValueRef *present) {
  *present = cg_i1(G, 1);
  if (k.t.kind == T_MAYBE) {
    *present = k.flag;
    Type nt = TY(k.t.sub);
    nt.fsub = k.t.fsub;
    CgVal x = cg_mk(nt, k.v);
    x.isf = k.isf;
    k = x;
  }
  if (k.t.kind == T_INT) return k.v;
  LLVMValueRef ok, i;
  if (k.t.kind == T_NUMBER) {
    LLVMValueRef fi = cg_float_to_int_exact(G, cg_num_to(G, cg_number_side(G, k, 1), T_F64), &ok);
    i = LLVMBuildSelect(G->B, k.isf, fi, cg_number_side(G, k, 0).v, "");
    ok = LLVMBuildOr(G->B, ok, LLVMBuildNot(G->B, k.isf, ""), "");
  } else {
    i = cg_float_to_int_exact(G, cg_num_to(G, k, T_F64), &ok);
  }
  *present = LLVMBuildAnd(G->B, *present, ok, "");
  return i;
}

/* Stores number x into the element at p of dtype d with the store rules
** (cg_alloc.c: fill, full, array). */
static void store_bool(CG *G, const KirInsn *v, CgVal x, LLVMValueRef elem);
void cg_store_value(CG *G, const KirInsn *v, int d, LLVMValueRef p, CgVal x) {
  if (d == KJIT_BOOL) { store_bool(G, v, x, p); return; }   /* booleans only */
  if (x.t.kind == T_LUA) x = cg_lua_store_number(G, x, v);
  x = cg_unwrap(G, x, v->line, v, 2);
  CgVal a[2] = { x, cg_mk(TY(T_NIL), p) };
  Type rt = TY(T_NIL);
  rt.dtype = (uint8_t)d;
  cg_split(G, v, a, 2, rt, concrete_elem);
}

/* Loads the element at p of dtype d as Lua reads it. */
CgVal cg_load_elem(CG *G, int d, LLVMValueRef p) { return load_elem(G, d, p); }

CgVal cg_index(CG *G, const KirInsn *v) {
  Type t = G->sp->types[v->id];
  CgVal o = cg_val(G, v->args[0]);
  CgVal k = cg_val(G, v->args[1]);
  if (o.t.kind == T_SHAPE) {
    /* a.shape[k]: nil outside 1..ndim (the typer gives i64 or nil|i64) */
    LLVMValueRef present;
    LLVMValueRef i = shape_key(G, k, &present);
    int nd = o.t.ndim;
    if (t.kind == T_INT && LLVMIsAConstantInt(i)) {
      long long c = LLVMConstIntGetSExtValue(i);
      if (c >= 1 && c <= nd) return cg_mk(t, o.dims[c - 1]);
    }
    LLVMValueRef im1 = LLVMBuildSub(G->B, i, cg_i64(G, 1), "");
    LLVMValueRef r = o.dims[nd - 1];
    for (int d = nd - 2; d >= 0; d--)
      r = LLVMBuildSelect(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, im1, cg_i64(G, d), ""), o.dims[d], r, "");
    CgVal x = cg_mk(t, r);
    if (t.kind == T_MAYBE)
      x.flag = LLVMBuildAnd(G->B, present, LLVMBuildICmp(G->B, LLVMIntULT, im1, cg_i64(G, nd), ""), "");
    return x;
  }
  if (o.t.kind != T_BUF) cg_error(G, v, "internal error: index of a non-array");
  LLVMValueRef elem;
  CgVal r = index_buffer(G, v, o, k, &elem);
  if (elem == NULL) return r;
  elem = cg_defer_ptr(G, v, elem, cg_dtype_llty(G, o.t.dtype));   /* checks pending? */
  return load_elem(G, o.t.dtype, elem);
}

/* Raises buffer.c's error for a store of a `tname` value into a bool array
** (where ok is false; unconditionally when ok is NULL). */
static void bool_store_error(CG *G, const KirInsn *v, LLVMValueRef ok, const char *tname) {
  char msg[64];
  snprintf(msg, sizeof msg, KB_BOOL_EXPECTED, tname);
  char *m = ka_strndup(G->S->A, msg, strlen(msg));
  if (m == NULL) cg_error(G, v, "not enough memory");
  if (ok) cg_check(G, ok, KE_TYPEERR, v->line, cg_i64(G, 0), NULL, NULL, m);
  else cg_raise(G, KE_TYPEERR, v->line, cg_i64(G, 0), NULL, NULL, m);
}

/* Raises buffer.c's error for a store of x (a boolean, nil, an array or a
** string: ir_type.c's stores_raise) into a number element or field, where
** the store runs (after the index checks). */
static int store_type_error(CG *G, const KirInsn *v, CgVal x) {
  const char *t = x.t.kind == T_BOOL ? "boolean" : x.t.kind == T_NIL ? "nil"
                : x.t.kind == T_BUF ? "kjit.array" : x.t.kind == T_STR ? "string" : NULL;
  if (t == NULL) return 0;
  char msg[64];
  snprintf(msg, sizeof msg, "number expected, got %s", t);
  char *m = ka_strndup(G->S->A, msg, strlen(msg));
  if (m == NULL) cg_error(G, v, "not enough memory");
  cg_raise(G, KE_TYPEERR, v->line, cg_i64(G, 0), NULL, NULL, m);
  return 1;
}

/* x stored at elem of a bool array: a boolean as 0 or 1; false from a
** false-or-number; anything else raises, after the index checks (the
** typer let every value with a run-time form through: ir_type.c). */
static void store_bool(CG *G, const KirInsn *v, CgVal x, LLVMValueRef elem) {
  LLVMValueRef b;
  if (x.t.kind == T_LUA) x = cg_mk(TY(T_BOOL), cg_lua_store_bool(G, x, v));   /* a[i] = t.flag */
  if (x.t.kind == T_BOOL) {
    b = LLVMBuildZExt(G->B, x.v, G->i8, "");
  } else if (x.t.kind == T_MAYBE) {   /* flag: holds a number */
    bool_store_error(G, v, LLVMBuildNot(G->B, x.flag, ""), "number");
    if (x.t.dtype) bool_store_error(G, v, NULL, "nil");   /* the falsy side is nil */
    b = LLVMConstInt(G->i8, 0, 0);
  } else {
    bool_store_error(G, v, NULL, x.t.kind == T_NIL ? "nil" : x.t.kind == T_BUF ? "kjit.array"
                                                                               : "number");
    return;
  }
  LLVMBuildStore(G->B, b, elem);
}

void cg_setindex(CG *G, const KirInsn *v) {
  if (!G->sp->live[v->block->id]) return;
  CgVal o = cg_val(G, v->args[0]);
  CgVal k = cg_val(G, v->args[1]);
  CgVal x = cg_val(G, v->args[2]);
  if (o.t.kind != T_BUF) cg_error(G, v, "internal error: store into a non-array");
  LLVMValueRef elem;
  if (o.t.dtype == KJIT_RECORD && o.t.ndim == 1) {   /* p[i] = r: copies the record (the typer: same layout) */
    CgVal dst = index_buffer(G, v, o, k, &elem);
    cg_rec_copy(G, dst.v, x.v, krec_byid(o.t.ref)->size);
    return;
  }
  if (o.t.ndim > 1) {   /* m[i] = row (cg_alloc.c) */
    if (x.t.kind != T_BUF) cg_error(G, v, "internal error: store of a number into a row");
    cg_setrow(G, v, index_buffer(G, v, o, k, &elem), k, x);
    return;
  }
  index_buffer(G, v, o, k, &elem);
  if (o.t.dtype == KJIT_BOOL) { store_bool(G, v, x, elem); return; }
  if (store_type_error(G, v, x)) return;
  if (x.t.kind == T_LUA) x = cg_lua_store_number(G, x, v);   /* a[i] = t.x */
  x = cg_unwrap(G, x, v->line, v, 2);
  CgVal a[2] = { x, cg_mk(TY(T_NIL), elem) };   /* a[1]: the element pointer, never split */
  Type rt = TY(T_NIL);
  rt.dtype = o.t.dtype;
  /* a T_NUMBER value splits on its tag: each side stores by its own rule */
  cg_split(G, v, a, 2, rt, concrete_elem);
}

CgVal cg_getfield(CG *G, const KirInsn *v) {
  CgVal o = cg_val(G, v->args[0]);
  const char *n = v->k.str.s;
  if (o.t.kind == T_BUILTIN)   /* cuda.threadIdx.x ... */
    return cg_cuda_dim3(G, v, G->sp->types[v->args[0]->id].ref);
  if (o.t.kind != T_BUF) cg_error(G, v, "internal error: field of a non-array");
  if (o.t.dtype == KJIT_RECORD && o.t.ndim == 0) return cg_rec_field(G, v, o);
  if (strcmp(n, "shape") == 0) {
    CgVal r = o;
    r.t = TY(T_SHAPE);
    r.t.ndim = o.t.ndim;
    r.v = NULL;
    return r;
  }
  if (strcmp(n, "ndim") == 0) return cg_mk(TY(T_INT), cg_i64(G, o.t.ndim));
  LLVMValueRef s = o.dims[0];   /* size */
  for (int i = 1; i < o.t.ndim; i++) s = LLVMBuildMul(G->B, s, o.dims[i], "");
  return cg_mk(TY(T_INT), s);
}

CgVal cg_len(CG *G, const KirInsn *v) {
  CgVal o = cg_val(G, v->args[0]);
  return cg_mk(TY(T_INT), o.dims[0]);
}

/* ---- Records (kjit.struct): fields of a record view ---------------------- */
/* A record view is a T_BUF of dtype KJIT_RECORD and ndim 0: an i8 pointer to
** the record; p[i] on an array of records makes one (index_buffer). Field
** offsets are constants compiled in from the layout (Type.ref). */

void cg_rec_copy(CG *G, LLVMValueRef dst, LLVMValueRef src, int64_t size) {
  /* memmove: p[i] = p[j] may copy a record onto itself */
  LLVMBuildMemMove(G->B, dst, 1, src, 1, cg_i64(G, size));
}

/* The field's address, typed as a pointer to its first element. */
static LLVMValueRef field_ptr(CG *G, CgVal o, const KRecField *f) {
  LLVMValueRef off = cg_i64(G, f->offset);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, G->i8, o.v, &off, 1, "");
  if (f->dtype == KJIT_RECORD) return p;
  return LLVMBuildBitCast(G->B, p, LLVMPointerType(cg_dtype_llty(G, f->dtype),
                                                   G->target->data_addrspace), "");
}

CgVal cg_rec_field(CG *G, const KirInsn *v, CgVal o) {
  const KRecField *f = krec_field(krec_byid(o.t.ref), v->k.str.s, v->k.str.len);
  if (f == NULL) cg_error(G, v, "internal error: no such record field");
  LLVMValueRef p = field_ptr(G, o, f);
  if (f->count == 0 && f->dtype != KJIT_RECORD) return load_elem(G, f->dtype, p);
  CgVal r = cg_mk(G->sp->types[v->id], p);   /* a view: array field or nested record */
  if (f->count) r.dims[0] = cg_i64(G, f->count);
  return r;
}

void cg_rec_setfield(CG *G, const KirInsn *v) {
  if (!G->sp->live[v->block->id]) return;
  CgVal o = cg_val(G, v->args[0]);
  CgVal x = cg_val(G, v->args[1]);
  const KRecField *f = krec_field(krec_byid(o.t.ref), v->k.str.s, v->k.str.len);
  if (f == NULL || f->count) cg_error(G, v, "internal error: store into a record field");
  LLVMValueRef p = field_ptr(G, o, f);
  if (f->dtype == KJIT_RECORD) { cg_rec_copy(G, p, x.v, f->rec->size); return; }
  if (f->dtype == KJIT_BOOL) { store_bool(G, v, x, p); return; }   /* booleans only */
  if (store_type_error(G, v, x)) return;
  if (x.t.kind == T_LUA) x = cg_lua_store_number(G, x, v);   /* r.x = t.x */
  x = cg_unwrap(G, x, v->line, v, 1);
  CgVal a[2] = { x, cg_mk(TY(T_NIL), p) };
  Type rt = TY(T_NIL);
  rt.dtype = (uint8_t)f->dtype;
  cg_split(G, v, a, 2, rt, concrete_elem);
}

/* Field-by-field equality of the records at a and b (i8 pointers) of layout
** r, and-ed into acc: numbers compare as Lua compares them (0.0 == -0.0),
** except that NaN equals NaN, as host/record.c's __eq (equality stays
** reflexive: Lua answers r == r for one view object without __eq). */
static LLVMValueRef rec_eq(CG *G, const KRecord *r, LLVMValueRef a, LLVMValueRef b,
                           LLVMValueRef acc) {
  for (int i = 0; i < r->nfields; i++) {
    const KRecField *f = &r->fields[i];
    int64_t es = krec_elemsize(f);
    for (int64_t j = 0; j < (f->count ? f->count : 1); j++) {
      LLVMValueRef off = cg_i64(G, f->offset + j * es);
      LLVMValueRef pa = LLVMBuildInBoundsGEP2(G->B, G->i8, a, &off, 1, "");
      LLVMValueRef pb = LLVMBuildInBoundsGEP2(G->B, G->i8, b, &off, 1, "");
      if (f->dtype == KJIT_RECORD) { acc = rec_eq(G, f->rec, pa, pb, acc); continue; }
      LLVMTypeRef pty = LLVMPointerType(cg_dtype_llty(G, f->dtype), G->target->data_addrspace);
      CgVal x = load_elem(G, f->dtype, LLVMBuildBitCast(G->B, pa, pty, ""));
      CgVal y = load_elem(G, f->dtype, LLVMBuildBitCast(G->B, pb, pty, ""));
      LLVMValueRef eq = x.t.kind == T_INT || x.t.kind == T_BOOL
                        ? LLVMBuildICmp(G->B, LLVMIntEQ, x.v, y.v, "")
                                          : LLVMBuildOr(G->B, LLVMBuildFCmp(G->B, LLVMRealOEQ, x.v, y.v, ""),
                                                        LLVMBuildAnd(G->B,
                                                          LLVMBuildFCmp(G->B, LLVMRealUNO, x.v, x.v, ""),
                                                          LLVMBuildFCmp(G->B, LLVMRealUNO, y.v, y.v, ""), ""), "");
      acc = LLVMBuildAnd(G->B, acc, eq, "");
    }
  }
  return acc;
}

CgVal cg_rec_eq(CG *G, CgVal a, CgVal b) {
  return cg_mk(TY(T_BOOL), rec_eq(G, krec_byid(a.t.ref), a.v, b.v, cg_i1(G, 1)));
}
