/*
** lblas.c: the Lua binding of kjit.blas (host arrays, OpenBLAS) and
** kjit.cuda.blas (device arrays, cuBLAS; in the simulator, OpenBLAS on the
** simulated device memory, which is host memory).
**
** One C function per BLAS call serves both modules (the upvalue says which
** kind of array it takes); it checks the arguments (arrays of the module's
** kind, f32 or f64, one dtype per call, shapes that fit, no output sharing
** memory with an input), fills a kbl_call (libs/blas.h) in row-major terms
** and runs it. Errors are Lua errors at the caller's line, naming the call:
** "kjit.cuda.blas.gemm: shapes do not match: A is 3x2, B is 3x4".
**
** Defaults follow BLAS's meaning with the obvious values: alpha = 1, beta =
** 0 (a C or y given is an output unless beta says otherwise), no
** transposes; geam's beta is 1 (C = A + B); trsm's A is lower triangular
** with a non-unit diagonal. Results that are arrays are returned (the one
** given, or a new one); dot, nrm2 and asum return a float, iamax an integer.
**
** Streams and lifetime: a device call is queued on opts.stream (the
** default stream when absent) and returns at once, except the calls that
** return a number. The arrays it reads and writes stay valid until it has
** run: device memory is only given back after a context synchronize
** (cudadrv.c's deferred free), whatever Lua collects meanwhile.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "host/cudadrv.h"
#include "host/record.h"
#include "libs/blas.h"
#include "libs/lblas.h"

typedef struct operand {
  uint64_t addr;
  size_t bytes;
  kjit_dtype dt;
  int ndim;
  int64_t shape[KJIT_MAXDIMS];
  int64_t size;
} operand;

typedef struct call_ctx {
  lua_State *L;
  int cuda;               /* kjit.cuda.blas */
  char fn[48];            /* "kjit.cuda.blas.gemm" */
} call_ctx;

static int cx_error(call_ctx *cx, const char *fmt, ...) {
  lua_State *L = cx->L;
  va_list ap;
  luaL_where(L, 1);
  lua_pushfstring(L, "%s: ", cx->fn);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 3);
  return lua_error(L);
}

static const char *dtype_name(kjit_dtype t) {
  switch (t) {
#define DT_NAME(E, n, ct, isf, iss) case E: return n;
  KJIT_ALLDTYPES(DT_NAME)
#undef DT_NAME
  default: return "record";
  }
}

/* "3x4" (a 0-D shape is "scalar") into buf */
static const char *shape_str(const operand *o, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < o->ndim && k + 24 < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? "x%lld" : "%lld", (long long)o->shape[i]);
  return buf;
}

static const char *type_name(lua_State *L, int idx) {
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1);   /* the metatable keeps the string alive */
    return s;
  }
  return luaL_typename(L, idx);
}

/* The array at idx, of this module's kind, f32 or f64. */
static operand get_array(call_ctx *cx, int idx, const char *what) {
  lua_State *L = cx->L;
  operand o;
  memset(&o, 0, sizeof o);
  if (cx->cuda) {
    KDevArray *d = kcu_test_devarray(L, idx);
    if (d == NULL)
      cx_error(cx, "%s must be a device array, got %s%s", what, type_name(L, idx),
               kb_test_raw(L, idx) ? " (copy it to the device with cuda.to_device, or use kjit.blas)" : "");
    kcu_check_usable(L, d, idx);
    o.addr = d->ptr;
    o.dt = d->record ? KJIT_RECORD : d->dtype;
    o.ndim = d->ndim;
    memcpy(o.shape, d->shape, sizeof o.shape);
    o.size = d->size;
    o.bytes = d->bytes;
  } else {
    KBuffer *b = kb_test(L, idx);
    if (b == NULL && krec_test_array(L, idx))   /* (kb_test takes numeric arrays only) */
      cx_error(cx, "%s is an array of records; BLAS takes f32 or f64 arrays", what);
    if (b == NULL)
      cx_error(cx, "%s must be a kjit array, got %s%s", what, type_name(L, idx),
               kcu_test_devarray(L, idx) ? " (use kjit.cuda.blas for device arrays)" : "");
    o.addr = (uint64_t)(uintptr_t)b->data;
    o.dt = b->record ? KJIT_RECORD : b->dtype;
    o.ndim = b->ndim;
    memcpy(o.shape, b->shape, sizeof o.shape);
    o.size = b->size;
    o.bytes = (size_t)b->size * (size_t)kb_dtype_bytes(b->dtype);
  }
  if (o.dt != KJIT_F32 && o.dt != KJIT_F64)
    cx_error(cx, "%s has dtype %s; BLAS takes f32 or f64 arrays", what, dtype_name(o.dt));
  return o;
}

static void same_dtype(call_ctx *cx, const operand *a, const char *an, const operand *b,
                       const char *bn) {
  if (a->dt != b->dt)
    cx_error(cx, "%s is %s and %s is %s: BLAS needs one dtype for both", an, dtype_name(a->dt),
             bn, dtype_name(b->dt));
}

/* An output must not share memory with an input (BLAS reads them while
** writing it: the result would depend on the library's order). */
static void no_overlap(call_ctx *cx, const operand *out, const char *on, const operand *in,
                       const char *in_name) {
  if (out->bytes && in->bytes && out->addr < in->addr + in->bytes && in->addr < out->addr + out->bytes)
    cx_error(cx, "%s shares memory with %s (BLAS writes %s while reading %s)", on, in_name, on, in_name);
}

/* A new zero-filled array of this module's kind, pushed. */
static operand new_array(call_ctx *cx, kjit_dtype dt, int ndim, const int64_t *shape) {
  int64_t s[KJIT_MAXDIMS] = { 1, 1, 1, 1 };
  memcpy(s, shape, (size_t)ndim * sizeof *shape);
  if (cx->cuda) kcu_push_devarray(cx->L, dt, ndim, s);
  else kb_push_new(cx->L, dt, ndim, s, 1);
  return get_array(cx, lua_gettop(cx->L), "the result");
}

/* ---- options ------------------------------------------------------------ */

enum { O_ALPHA = 1, O_BETA = 2, O_TA = 4, O_TB = 8, O_STREAM = 16, O_LOWER = 32, O_UNIT = 64 };
static const struct { int bit; const char *name; } opt_names[] = {
  { O_ALPHA, "alpha" }, { O_BETA, "beta" }, { O_TA, "trans_a" }, { O_TB, "trans_b" },
  { O_LOWER, "lower" }, { O_UNIT, "unit_diagonal" }, { O_STREAM, "stream" } };

typedef struct opts {
  double alpha, beta;
  int ta, tb, lower, unit;
  void *stream;
} opts;

/* Reads the options table at idx (none or nil: the defaults in o). */
static void get_opts(call_ctx *cx, int idx, int allowed, opts *o) {
  lua_State *L = cx->L;
  o->stream = NULL;
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx)) cx_error(cx, "options must be a table, got %s", type_name(L, idx));
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int bit = 0;
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    for (size_t i = 0; k && i < sizeof opt_names / sizeof opt_names[0]; i++)
      if (strcmp(k, opt_names[i].name) == 0) bit = opt_names[i].bit;
    if (bit == O_STREAM && !cx->cuda)
      cx_error(cx, "option 'stream' is for kjit.cuda.blas (kjit.blas runs on the host, "
                   "synchronously)");
    if (!(bit & allowed)) {
      if (k == NULL) k = luaL_tolstring(L, -2, NULL);   /* {true}: option '1' */
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (size_t i = 0; i < sizeof opt_names / sizeof opt_names[0]; i++)
        if ((opt_names[i].bit & allowed) && (opt_names[i].bit != O_STREAM || cx->cuda)) {
          if (luaL_bufflen(&b)) luaL_addstring(&b, ", ");
          luaL_addstring(&b, opt_names[i].name);
        }
      luaL_pushresult(&b);
      cx_error(cx, "unknown option '%s' (options: %s)", k, lua_tostring(L, -1));
    }
    switch (bit) {
    case O_ALPHA: case O_BETA:
      if (lua_type(L, -1) != LUA_TNUMBER)
        cx_error(cx, "option '%s' must be a number, got %s", k, type_name(L, -1));
      *(bit == O_ALPHA ? &o->alpha : &o->beta) = lua_tonumber(L, -1);
      break;
    case O_STREAM:
      if (!lua_isnil(L, -1) && !(lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) == 0) &&
          luaL_testudata(L, -1, "kjit.cuda.stream") == NULL)
        cx_error(cx, "option 'stream' must be a kjit.cuda stream, got %s", type_name(L, -1));
      o->stream = kcu_check_stream(L, lua_gettop(L));
      break;
    default:
      if (!lua_isboolean(L, -1))
        cx_error(cx, "option '%s' must be a boolean, got %s", k, type_name(L, -1));
      *(bit == O_TA ? &o->ta : bit == O_TB ? &o->tb : bit == O_LOWER ? &o->lower : &o->unit) =
          lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
  }
}

/* ---- running ------------------------------------------------------------ */

static void run(call_ctx *cx, kbl_call *c, const opts *o) {
  char err[512];
  int r;
  c->stream = o->stream;
  if (!cx->cuda || kcu_sim_mode()) {
    r = kbl_host_run(c, err, sizeof err);
  } else {
    kcu_ensure(cx->L);
    r = kbl_cuda_run(kcu_device(), c, err, sizeof err);
  }
  if (r != 0) cx_error(cx, "%s", err);
}

static call_ctx ctx_of(lua_State *L, kbl_op op) {
  call_ctx cx;
  cx.L = L;
  cx.cuda = lua_toboolean(L, lua_upvalueindex(1));
  snprintf(cx.fn, sizeof cx.fn, "%s.%s", cx.cuda ? "kjit.cuda.blas" : "kjit.blas", kbl_op_names[op]);
  return cx;
}

/* Is the argument at idx an array (of either kind)? Tells gemm(A, B, C)
** from gemm(A, B, opts). */
static int is_array_arg(lua_State *L, int idx) {
  return lua_type(L, idx) == LUA_TUSERDATA;
}

/* ---- the calls ---------------------------------------------------------- */

/* gemm(A, B [, C] [, opts]) */
static int l_gemm(lua_State *L) {
  call_ctx cx = ctx_of(L, KBL_GEMM);
  int has_c = is_array_arg(L, 3);
  opts o = { 1, 0, 0, 0, 0, 0, NULL };
  get_opts(&cx, has_c || lua_isnil(L, 3) ? 4 : 3, O_ALPHA | O_BETA | O_TA | O_TB | O_STREAM, &o);
  operand A = get_array(&cx, 1, "A"), B = get_array(&cx, 2, "B");
  same_dtype(&cx, &A, "A", &B, "B");
  char sa[64], sb[64], sc[64], se[64];
  if (A.ndim < 2 || A.ndim > 3 || B.ndim < 2 || B.ndim > 3)
    cx_error(&cx, "A and B must be matrices (2-D) or batches of matrices (3-D), got A %s and B %s",
             shape_str(&A, sa, sizeof sa), shape_str(&B, sb, sizeof sb));
  int ba = A.ndim == 3, bb = B.ndim == 3;
  int64_t batch = ba ? A.shape[0] : bb ? B.shape[0] : 1;
  if (ba && bb && A.shape[0] != B.shape[0])
    cx_error(&cx, "batch sizes differ: A is %s and B is %s", shape_str(&A, sa, sizeof sa),
             shape_str(&B, sb, sizeof sb));
  const int64_t *as = A.shape + ba, *bs = B.shape + bb;
  int64_t m = o.ta ? as[1] : as[0], k = o.ta ? as[0] : as[1];
  int64_t kb = o.tb ? bs[1] : bs[0], n = o.tb ? bs[0] : bs[1];
  if (k != kb)
    cx_error(&cx, "shapes do not match: %s is %s and %s is %s (%s's columns must equal %s's rows)",
             o.ta ? "A (transposed)" : "A", shape_str(&A, sa, sizeof sa),
             o.tb ? "B (transposed)" : "B", shape_str(&B, sb, sizeof sb),
             o.ta ? "op(A)" : "A", o.tb ? "op(B)" : "B");
  int batched = ba || bb;
  int64_t cshape[3] = { batch, m, n };
  operand C;
  if (has_c) {
    C = get_array(&cx, 3, "C");
    same_dtype(&cx, &A, "A", &C, "C");
    operand want = { 0, 0, A.dt, batched ? 3 : 2, { 0 }, 0 };
    memcpy(want.shape, batched ? cshape : cshape + 1, (size_t)want.ndim * sizeof(int64_t));
    int ok = C.ndim == want.ndim;
    for (int i = 0; ok && i < want.ndim; i++) ok = C.shape[i] == want.shape[i];
    if (!ok)
      cx_error(&cx, "C is %s, expected %s (A is %s, B is %s)", shape_str(&C, sc, sizeof sc),
               shape_str(&want, se, sizeof se), shape_str(&A, sa, sizeof sa), shape_str(&B, sb, sizeof sb));
    no_overlap(&cx, &C, "C", &A, "A");
    no_overlap(&cx, &C, "C", &B, "B");
    lua_pushvalue(L, 3);
  } else {
    C = new_array(&cx, A.dt, batched ? 3 : 2, batched ? cshape : cshape + 1);
  }
  kbl_call c = { .op = KBL_GEMM, .dt = A.dt, .ta = o.ta, .tb = o.tb, .m = m, .n = n, .k = k,
                 .lda = as[1], .ldb = bs[1], .ldc = n, .batch = batch,
                 .sa = ba ? as[0] * as[1] : 0, .sb = bb ? bs[0] * bs[1] : 0, .sc = m * n,
                 .alpha = o.alpha, .beta = o.beta, .a = A.addr, .b = B.addr, .c = C.addr };
  run(&cx, &c, &o);
  return 1;
}

/* gemv(A, x [, y] [, opts]) */
static int l_gemv(lua_State *L) {
  call_ctx cx = ctx_of(L, KBL_GEMV);
  int has_y = is_array_arg(L, 3);
  opts o = { 1, 0, 0, 0, 0, 0, NULL };
  get_opts(&cx, has_y || lua_isnil(L, 3) ? 4 : 3, O_ALPHA | O_BETA | O_TA | O_STREAM, &o);
  operand A = get_array(&cx, 1, "A"), x = get_array(&cx, 2, "x");
  same_dtype(&cx, &A, "A", &x, "x");
  char sa[64], sx[64], sy[64];
  if (A.ndim != 2) cx_error(&cx, "A must be a matrix (2-D), got %s", shape_str(&A, sa, sizeof sa));
  int64_t rows = o.ta ? A.shape[1] : A.shape[0], cols = o.ta ? A.shape[0] : A.shape[1];
  if (x.ndim != 1 || x.shape[0] != cols)
    cx_error(&cx, "shapes do not match: %s is %s and x is %s (x needs %I elements)",
             o.ta ? "A (transposed)" : "A", shape_str(&A, sa, sizeof sa), shape_str(&x, sx, sizeof sx),
             (lua_Integer)cols);
  operand y;
  if (has_y) {
    y = get_array(&cx, 3, "y");
    same_dtype(&cx, &A, "A", &y, "y");
    if (y.ndim != 1 || y.shape[0] != rows)
      cx_error(&cx, "y is %s, expected %I (A is %s%s)", shape_str(&y, sy, sizeof sy),
               (lua_Integer)rows, shape_str(&A, sa, sizeof sa), o.ta ? ", transposed" : "");
    no_overlap(&cx, &y, "y", &A, "A");
    no_overlap(&cx, &y, "y", &x, "x");
    lua_pushvalue(L, 3);
  } else {
    y = new_array(&cx, A.dt, 1, &rows);
  }
  kbl_call c = { .op = KBL_GEMV, .dt = A.dt, .ta = o.ta, .m = A.shape[0], .n = A.shape[1],
                 .lda = A.shape[1], .alpha = o.alpha, .beta = o.beta, .a = A.addr, .b = x.addr,
                 .c = y.addr };
  if (cols == 0) {
    /* an empty product: y = beta y. BLAS's gemv leaves y alone when A has
    ** no columns (a quick return); gemm with k = 0 computes beta y in
    ** every library, so that is what runs */
    c = (kbl_call){ .op = KBL_GEMM, .dt = A.dt, .m = rows, .n = 1, .k = 0, .lda = 1, .ldb = 1,
                    .ldc = 1, .batch = 1, .alpha = o.alpha, .beta = o.beta, .a = A.addr,
                    .b = x.addr, .c = y.addr };
  }
  run(&cx, &c, &o);
  return 1;
}

/* Two vectors of one shape (dot, axpy). */
static void same_shape(call_ctx *cx, const operand *x, const operand *y) {
  int ok = x->ndim == y->ndim;
  for (int i = 0; ok && i < x->ndim; i++) ok = x->shape[i] == y->shape[i];
  char sx[64], sy[64];
  if (!ok)
    cx_error(cx, "shapes do not match: x is %s and y is %s", shape_str(x, sx, sizeof sx),
             shape_str(y, sy, sizeof sy));
}

/* dot(x, y [, opts]) */
static int l_dot(lua_State *L) {
  call_ctx cx = ctx_of(L, KBL_DOT);
  opts o = { 1, 0, 0, 0, 0, 0, NULL };
  get_opts(&cx, 3, O_STREAM, &o);
  operand x = get_array(&cx, 1, "x"), y = get_array(&cx, 2, "y");
  same_dtype(&cx, &x, "x", &y, "y");
  same_shape(&cx, &x, &y);
  kbl_call c = { .op = KBL_DOT, .dt = x.dt, .n = x.size, .a = x.addr, .b = y.addr };
  run(&cx, &c, &o);
  lua_pushnumber(L, c.result);
  return 1;
}

static double check_alpha(call_ctx *cx, int idx) {
  if (lua_type(cx->L, idx) != LUA_TNUMBER)
    cx_error(cx, "alpha (argument 1) must be a number, got %s", type_name(cx->L, idx));
  return lua_tonumber(cx->L, idx);
}

/* axpy(alpha, x, y [, opts]): y = alpha x + y, returns y */
static int l_axpy(lua_State *L) {
  call_ctx cx = ctx_of(L, KBL_AXPY);
  opts o = { 1, 0, 0, 0, 0, 0, NULL };
  double alpha = check_alpha(&cx, 1);
  get_opts(&cx, 4, O_STREAM, &o);
  operand x = get_array(&cx, 2, "x"), y = get_array(&cx, 3, "y");
  same_dtype(&cx, &x, "x", &y, "y");
  same_shape(&cx, &x, &y);
  if (x.addr != y.addr) no_overlap(&cx, &y, "y", &x, "x");   /* y = a y + y is fine */
  kbl_call c = { .op = KBL_AXPY, .dt = x.dt, .n = x.size, .alpha = alpha, .a = x.addr, .b = y.addr };
  run(&cx, &c, &o);
  lua_pushvalue(L, 3);
  return 1;
}

/* scal(alpha, x [, opts]): x = alpha x, returns x */
static int l_scal(lua_State *L) {
  call_ctx cx = ctx_of(L, KBL_SCAL);
  opts o = { 1, 0, 0, 0, 0, 0, NULL };
  double alpha = check_alpha(&cx, 1);
  get_opts(&cx, 3, O_STREAM, &o);
  operand x = get_array(&cx, 2, "x");
  kbl_call c = { .op = KBL_SCAL, .dt = x.dt, .n = x.size, .alpha = alpha, .a = x.addr };
  run(&cx, &c, &o);
  lua_pushvalue(L, 2);
  return 1;
}

/* nrm2, asum, iamax (x [, opts]) */
static int reduce(lua_State *L, kbl_op op) {
  call_ctx cx = ctx_of(L, op);
  opts o = { 1, 0, 0, 0, 0, 0, NULL };
  get_opts(&cx, 2, O_STREAM, &o);
  operand x = get_array(&cx, 1, "x");
  kbl_call c = { .op = op, .dt = x.dt, .n = x.size, .a = x.addr };
  run(&cx, &c, &o);
  if (op == KBL_IAMAX) lua_pushinteger(L, (lua_Integer)c.iresult);
  else lua_pushnumber(L, c.result);
  return 1;
}
static int l_nrm2(lua_State *L) { return reduce(L, KBL_NRM2); }
static int l_asum(lua_State *L) { return reduce(L, KBL_ASUM); }
static int l_iamax(lua_State *L) { return reduce(L, KBL_IAMAX); }

/* The shape of op(M) for a 2-D M. */
static void op_shape(const operand *M, int t, int64_t s[2]) {
  s[0] = t ? M->shape[1] : M->shape[0];
  s[1] = t ? M->shape[0] : M->shape[1];
}

/* geam(A, B [, opts]): alpha op(A) + beta op(B), a new array */
static int geam(call_ctx *cx, int transpose_only) {
  opts o = { 1, 1, 0, 0, 0, 0, NULL };
  operand A, B;
  char sa[64], sb[64];
  if (transpose_only) {
    get_opts(cx, 2, O_STREAM, &o);
    A = get_array(cx, 1, "A");
    o.ta = 1, o.beta = 0;
  } else {
    get_opts(cx, 3, O_ALPHA | O_BETA | O_TA | O_TB | O_STREAM, &o);
    A = get_array(cx, 1, "A");
  }
  if (A.ndim != 2) cx_error(cx, "A must be a matrix (2-D), got %s", shape_str(&A, sa, sizeof sa));
  int64_t s[2], t[2];
  op_shape(&A, o.ta, s);
  operand C = new_array(cx, A.dt, 2, s);
  kbl_call c = { .op = KBL_GEAM, .dt = A.dt, .ta = o.ta, .tb = o.tb, .m = s[0], .n = s[1],
                 .lda = A.shape[1], .ldc = s[1], .alpha = o.alpha, .beta = o.beta, .a = A.addr,
                 .c = C.addr };
  if (transpose_only) {
    c.b = C.addr, c.ldb = s[1];   /* beta = 0: B is not read (cuBLAS wants a valid one) */
  } else {
    B = get_array(cx, 2, "B");
    same_dtype(cx, &A, "A", &B, "B");
    if (B.ndim != 2) cx_error(cx, "B must be a matrix (2-D), got %s", shape_str(&B, sb, sizeof sb));
    op_shape(&B, o.tb, t);
    if (s[0] != t[0] || s[1] != t[1])
      cx_error(cx, "shapes do not match: %s is %s and %s is %s", o.ta ? "A (transposed)" : "A",
               shape_str(&A, sa, sizeof sa), o.tb ? "B (transposed)" : "B", shape_str(&B, sb, sizeof sb));
    c.b = B.addr, c.ldb = B.shape[1];
  }
  run(cx, &c, &o);
  return 1;
}
static int l_geam(lua_State *L) { call_ctx cx = ctx_of(L, KBL_GEAM); return geam(&cx, 0); }
static int l_transpose(lua_State *L) {
  call_ctx cx = ctx_of(L, KBL_GEAM);
  snprintf(cx.fn, sizeof cx.fn, "%s.transpose", cx.cuda ? "kjit.cuda.blas" : "kjit.blas");
  return geam(&cx, 1);
}

/* trsm(A, B [, opts]): solves op(A) X = alpha B, X written over B, returns B */
static int l_trsm(lua_State *L) {
  call_ctx cx = ctx_of(L, KBL_TRSM);
  opts o = { 1, 0, 0, 0, 1, 0, NULL };
  get_opts(&cx, 3, O_ALPHA | O_TA | O_LOWER | O_UNIT | O_STREAM, &o);
  operand A = get_array(&cx, 1, "A"), B = get_array(&cx, 2, "B");
  same_dtype(&cx, &A, "A", &B, "B");
  char sa[64], sb[64];
  if (A.ndim != 2 || A.shape[0] != A.shape[1])
    cx_error(&cx, "A must be a square matrix, got %s", shape_str(&A, sa, sizeof sa));
  if (B.ndim > 2 || B.shape[0] != A.shape[0])
    cx_error(&cx, "shapes do not match: A is %s and B is %s (B needs %I rows)",
             shape_str(&A, sa, sizeof sa), shape_str(&B, sb, sizeof sb), (lua_Integer)A.shape[0]);
  no_overlap(&cx, &B, "B", &A, "A");
  int64_t n = B.ndim == 2 ? B.shape[1] : 1;   /* a vector is one column */
  kbl_call c = { .op = KBL_TRSM, .dt = A.dt, .ta = o.ta, .lower = o.lower, .unit = o.unit,
                 .m = A.shape[0], .n = n, .lda = A.shape[1], .ldb = n, .alpha = o.alpha,
                 .a = A.addr, .b = B.addr };
  run(&cx, &c, &o);
  lua_pushvalue(L, 2);
  return 1;
}

/* backend(): the library's name and version (and, for OpenBLAS, its
** configuration); nil and the reason when it cannot be loaded */
static int l_backend(lua_State *L) {
  int cuda = lua_toboolean(L, lua_upvalueindex(1));
  char err[512];
  const char *detail = NULL, *name;
  if (!cuda || kcu_sim_mode()) {
    name = kbl_host_backend(&detail, err, sizeof err);
    if (name && cuda) {
      lua_pushfstring(L, "%s (simulator)", name);
      return 1;
    }
  } else {
    name = kbl_cuda_backend(err, sizeof err);
  }
  if (name == NULL) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushstring(L, name);
  if (detail == NULL) return 1;
  lua_pushstring(L, detail);
  return 2;
}

static const luaL_Reg blas_fns[] = {
  { "gemm", l_gemm }, { "gemv", l_gemv }, { "dot", l_dot }, { "axpy", l_axpy },
  { "scal", l_scal }, { "nrm2", l_nrm2 }, { "asum", l_asum }, { "iamax", l_iamax },
  { "geam", l_geam }, { "transpose", l_transpose }, { "trsm", l_trsm },
  { "backend", l_backend }, { NULL, NULL } };

static void push_module(lua_State *L, int cuda) {
  lua_createtable(L, 0, sizeof blas_fns / sizeof blas_fns[0]);
  lua_pushboolean(L, cuda);
  luaL_setfuncs(L, blas_fns, 1);
}

void kbl_open(lua_State *L) {
  push_module(L, 0);
  lua_setfield(L, -2, "blas");
  if (lua_getfield(L, -1, "cuda") == LUA_TTABLE) {
    push_module(L, 1);
    lua_setfield(L, -2, "blas");
  }
  lua_pop(L, 1);
}
