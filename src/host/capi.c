/*
** capi.c: the C API of include/kjit.h for programs that embed Lua.
**
**   kjit_pusharray -> buffer.c (kb_push_borrowed: a buffer over host memory)
**   kjit_toarray   -> buffer.c (kb_test)
**   kjit_compile   -> jit.c (kd_push_private, kd_compile_sig: f:compile)
**   kjit_call      -> the compiled entry itself, as jit.c's fast path does
**
** Nothing here raises into the host: every step that can raise (allocating,
** compiling, formatting a message) runs under lua_pcall in a small
** lua_CFunction that takes its inputs from a context struct (a light
** userdata), and the status comes back as a KJIT_* code with the message on
** the stack. kjit_call allocates nothing and touches no Lua state unless
** it fails.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "host/buffer.h"
#include "host/record.h"
#include "common/compile.h"
#include "ir/ir_type.h"
#include "runtime/runtime.h"
#include "runtime/runtime_poll.h"
#include "host/jit.h"
#include "host/export.h"

#define CFN_METATABLE "kjit.cfn"

/* The object kjit_compile pushes (a userdata) holds this; its user value is
** the private jit object that owns the native code. */
struct kjit_fn {
  KdSpecInfo info;
  char sigtext[160];             /* "(f64[:], f64)", for messages */
};

/* ---- Protected execution -------------------------------------------------- */

/* The error object at 2 as a message string, as lua.c's msghandler
** makes it: its __tostring (if 1 is true) when that gives a string, else
** "(error object is a table value)". */
static int tostring_p(lua_State *L) {
  if (lua_type(L, 2) == LUA_TNUMBER) {
    lua_pushstring(L, lua_tostring(L, 2));   /* converts the copy only */
    return 1;
  }
  if (lua_toboolean(L, 1) && luaL_callmeta(L, 2, "__tostring") &&
      lua_type(L, -1) == LUA_TSTRING)
    return 1;
  lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 2));
  return 1;
}

/* Replaces the error object on top by a string (protected); returns
** LUA_OK, or LUA_ERRMEM (then the top is Lua's "not enough memory"). */
static int error_to_string(lua_State *L) {
  for (int meta = 1; meta >= 0; meta--) {
    /* the stack has room: protect checked for 4 slots, 1 is used */
    lua_pushcfunction(L, tostring_p);
    lua_pushboolean(L, meta);
    lua_pushvalue(L, -3);
    int st = lua_pcall(L, 2, 1, 0);
    /* a string: the text, or the conversion's own error (out of memory,
    ** C stack overflow), which then stands for the original */
    if ((st == LUA_OK || !meta) && lua_type(L, -1) == LUA_TSTRING) {
      lua_remove(L, -2);
      return st == LUA_ERRMEM ? LUA_ERRMEM : LUA_OK;
    }
    lua_pop(L, 1);   /* __tostring raised, or gave no string: without it */
  }
  /* not reached: Lua's errors are strings; keep the promise anyway, with
  ** a value that needs no allocation */
  lua_pop(L, 1);
  lua_pushliteral(L, "not enough memory");   /* interned, never collected */
  return LUA_ERRMEM;
}

/* Runs f(ctx [, the value at idx]) under lua_pcall, leaving its one result
** or the error message on the stack. *code classifies a Lua error raised
** by f (f sets it before each step that may fail); memory errors are
** always KJIT_ERRMEM. kjit.h promises a string: an error object of
** another type (a script may raise a table, or nil, from a metamethod the
** compiler runs) is replaced by its text. */
static int protect(lua_State *L, lua_CFunction f, void *ctx, int idx,
                   const int *code) {
  if (!lua_checkstack(L, 4)) return KJIT_ERRMEM;   /* cannot push a message */
  int nargs = 1;
  if (idx != 0) idx = lua_absindex(L, idx);
  lua_pushcfunction(L, f);        /* neither push allocates */
  lua_pushlightuserdata(L, ctx);
  if (idx != 0) { lua_pushvalue(L, idx); nargs = 2; }
  int st = lua_pcall(L, nargs, 1, 0);
  if (st == LUA_OK) return KJIT_OK;
  if (lua_type(L, -1) != LUA_TSTRING && error_to_string(L) == LUA_ERRMEM)
    return KJIT_ERRMEM;
  if (st == LUA_ERRMEM) return KJIT_ERRMEM;
  return code ? *code : KJIT_ERRRUN;
}

static int pushstring_p(lua_State *L) {
  lua_pushstring(L, (const char *)lua_touserdata(L, 1));
  return 1;
}

/* Pushes "fmt..." (protected) and returns code (or KJIT_ERRMEM). */
static int fail(lua_State *L, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int st = protect(L, pushstring_p, msg, 0, NULL);
  return st == KJIT_OK ? code : st;
}

/* ---- Arrays ------------------------------------------------------------------- */

typedef struct PushCtx {
  void *data;
  kjit_dtype dtype;
  int ndim;
  const int64_t *shape, *strides;
  kjit_release release;
  void *ud;
  int code;
} PushCtx;

/* Checks the host's description, then pushes the borrowed buffer. Every
** check comes before kb_push_borrowed, which arms the release callback
** only once nothing can fail any more. */
static int pusharray_p(lua_State *L) {
  PushCtx *c = (PushCtx *)lua_touserdata(L, 1);
  c->code = KJIT_ERRARG;
  size_t esize = kjit_dtype_size(c->dtype);
  if (esize == 0) return luaL_error(L, "kjit_pusharray: invalid dtype %d", (int)c->dtype);
  if (c->ndim < 1 || c->ndim > KJIT_MAXDIMS)
    return luaL_error(L, "kjit_pusharray: kjit arrays have 1 to %d dimensions, got %d",
                      KJIT_MAXDIMS, c->ndim);
  if (c->shape == NULL) return luaL_error(L, "kjit_pusharray: shape is NULL");
  int empty = 0;
  for (int k = 0; k < c->ndim; k++) {
    if (c->shape[k] < 0)
      return luaL_error(L, "kjit_pusharray: negative extent %I in dimension %d",
                        (lua_Integer)c->shape[k], k + 1);
    if (c->shape[k] == 0) empty = 1;
  }
  if (c->data == NULL && !empty) return luaL_error(L, "kjit_pusharray: data is NULL");
  if (c->strides != NULL) {
    /* the C-contiguous strides, checked where they matter: a dimension of
    ** extent 1 (or an empty array) is never stepped along */
    int64_t want[KJIT_MAXDIMS], s = (int64_t)esize;
    for (int k = c->ndim - 1; k >= 0; k--) {
      want[k] = s;
      s *= c->shape[k] > 0 ? c->shape[k] : 1;
    }
    for (int k = 0; k < c->ndim && !empty; k++) {
      if (c->shape[k] <= 1 || c->strides[k] == want[k]) continue;
      char got[128], exp[128];
      int ng = 0, ne = 0;
      for (int j = 0; j < c->ndim; j++) {
        ng += snprintf(got + ng, sizeof got - ng, "%s%lld", j ? ", " : "", (long long)c->strides[j]);
        ne += snprintf(exp + ne, sizeof exp - ne, "%s%lld", j ? ", " : "", (long long)want[j]);
      }
      return luaL_error(L, "kjit_pusharray: strides (%s) are not C-contiguous for this shape "
                        "(expected (%s)): kjit arrays are always C-contiguous, copy the data "
                        "into a contiguous block first", got, exp);
    }
  }
  kb_push_borrowed(L, c->data, c->dtype, c->ndim, c->shape, c->release, c->ud);
  return 1;
}

KJIT_API int kjit_pusharray(lua_State *L, void *data, kjit_dtype dtype, int ndim,
                            const int64_t *shape, const int64_t *strides,
                            kjit_release release, void *ud) {
  PushCtx c = { data, dtype, ndim, shape, strides, release, ud, KJIT_ERRARG };
  return protect(L, pusharray_p, &c, 0, &c.code);
}

static int toarray_p(lua_State *L) {
  kjit_array *out = (kjit_array *)lua_touserdata(L, 1);
  const KBuffer *b = kb_test_raw(L, 2);
  if (b == NULL) b = luaL_testudata(L, 2, KREC_ARRAY_MT);   /* records (record.c) */
  /* an array whose borrowed memory was released is not readable */
  if (b == NULL || kb_released(b)) { lua_pushboolean(L, 0); return 1; }
  out->data = b->data;
  out->dtype = b->dtype;
  out->ndim = b->ndim ? b->ndim : 1;   /* a record view: an array of one */
  for (int k = 0; k < KJIT_MAXDIMS; k++) out->shape[k] = k < b->ndim ? b->shape[k] : 1;
  out->record = b->record;
  lua_pushboolean(L, 1);
  return 1;
}

KJIT_API int kjit_toarray(lua_State *L, int idx, kjit_array *out) {
  if (out == NULL) return KJIT_ERRARG;
  if (lua_type(L, idx) != LUA_TUSERDATA) return KJIT_ERRARG;
  /* the metatable lookup could (only) run out of memory: protect it, and
  ** leave the stack as it was whatever happens */
  kjit_array tmp;
  int st = protect(L, toarray_p, &tmp, idx, NULL);
  int isarray = st == KJIT_OK && lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (st != KJIT_OK) return st;
  if (!isarray) return KJIT_ERRARG;
  *out = tmp;
  return KJIT_OK;
}

/* ---- Compiling ------------------------------------------------------------------ */

typedef struct CompileCtx {
  const char *sig;
  kjit_fn *fn;
  int code;
  const kjit_record *const *recs;   /* kjit_compile_records: the layouts */
  int nrecs;
} CompileCtx;

/* Opens kjit when the host has not (a host may compile before, or without,
** require "kjit": the jit metatables must exist), then checks that the
** value at 2 is a Lua function or a kjit.jit object; raises naming api. */
static void check_function_arg(lua_State *L, const char *api) {
  if (luaL_getmetatable(L, "kjit.jit") == LUA_TNIL) {
    lua_pushcfunction(L, luaopen_kjit);
    lua_call(L, 0, 0);
  }
  lua_pop(L, 1);
  int isfn = lua_type(L, 2) == LUA_TFUNCTION && !lua_iscfunction(L, 2);
  if (!isfn && !luaL_testudata(L, 2, "kjit.jit"))
    luaL_error(L, "%s: expected a Lua function or a kjit.jit object, got %s", api,
               lua_iscfunction(L, 2) ? "a C function" : luaL_typename(L, 2));
}

static int compile_p(lua_State *L) {
  CompileCtx *c = (CompileCtx *)lua_touserdata(L, 1);
  c->code = KJIT_ERRARG;
  check_function_arg(L, "kjit_compile");
  c->code = KJIT_ERRCOMPILE;
  kjit_fn *fn = (kjit_fn *)lua_newuserdatauv(L, sizeof *fn, 1);   /* 3 */
  memset(fn, 0, sizeof *fn);
  if (kb_newmeta(L, CFN_METATABLE)) {   /* registered once complete */
    lua_pushliteral(L, CFN_METATABLE);
    lua_setfield(L, -2, "__metatable");
    kb_regmeta(L, CFN_METATABLE);
  }
  lua_setmetatable(L, 3);
  kd_push_private(L, 2);                                            /* 4 */
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, 3, 1);
  kd_compile_sig_records(L, 4, c->sig, c->recs, c->nrecs, &fn->info);
  /* the argument list, for kjit_call's messages */
  size_t n = 0;
  char tb[32];
  fn->sigtext[n++] = '(';
  for (int i = 0; i < fn->info.nsig; i++) {
    const char *t = kty_name(fn->info.args[i], tb, sizeof tb);
    n += snprintf(fn->sigtext + n, sizeof fn->sigtext - n, "%s%s", i ? ", " : "", t);
    if (n >= sizeof fn->sigtext - 2) { n = sizeof fn->sigtext - 5; memcpy(fn->sigtext + n, "...", 3); n += 3; break; }
  }
  fn->sigtext[n++] = ')';
  fn->sigtext[n] = '\0';
  c->fn = fn;
  lua_settop(L, 3);
  return 1;
}

KJIT_API int kjit_compile(lua_State *L, int idx, const char *sig, kjit_fn **out) {
  if (out) *out = NULL;
  if (sig == NULL) return fail(L, KJIT_ERRARG, "kjit_compile: signature is NULL");
  if (out == NULL) return fail(L, KJIT_ERRARG, "kjit_compile: out is NULL");
  if (lua_type(L, idx) == LUA_TNONE)
    return fail(L, KJIT_ERRARG, "kjit_compile: no value at stack index %d", idx);
  CompileCtx c = { sig, NULL, KJIT_ERRARG, NULL, 0 };
  int st = protect(L, compile_p, &c, idx, &c.code);
  if (st == KJIT_OK) *out = c.fn;
  return st;
}

/* kjit_compile for signatures with records ("void(record[:], f64)"): each
** `record` takes the next of recs[0..nrecs). */
KJIT_API int kjit_compile_records(lua_State *L, int idx, const char *sig,
                                  const kjit_record *const *recs, int nrecs, kjit_fn **out) {
  if (out) *out = NULL;
  if (sig == NULL || out == NULL || nrecs < 0 || (nrecs > 0 && recs == NULL))
    return fail(L, KJIT_ERRARG, "kjit_compile_records: %s is NULL", sig == NULL ? "sig"
                : out == NULL ? "out" : "recs");
  CompileCtx c = { sig, NULL, KJIT_ERRARG, recs, nrecs };
  int st = protect(L, compile_p, &c, idx, &c.code);
  if (st == KJIT_OK) *out = c.fn;
  return st;
}

/* ---- Exported code (host/export.c) ------------------------------------------------ */

typedef struct ExportCtx { const char *sig; int code; } ExportCtx;

/* (ctx, value): the value's export for sig, as f:export(sig) gives it. */
static int export_p(lua_State *L) {
  ExportCtx *c = (ExportCtx *)lua_touserdata(L, 1);
  c->code = KJIT_ERRARG;
  check_function_arg(L, "kjit_export");
  c->code = KJIT_ERRCOMPILE;
  kd_push_private(L, 2);                 /* 3: compiles privately */
  lua_getfield(L, 3, "export");
  lua_pushvalue(L, 3);
  lua_pushstring(L, c->sig);
  lua_call(L, 2, 1);
  return 1;
}

KJIT_API int kjit_export(lua_State *L, int idx, const char *sig) {
  if (sig == NULL) return fail(L, KJIT_ERRARG, "kjit_export: signature is NULL");
  if (lua_type(L, idx) == LUA_TNONE)
    return fail(L, KJIT_ERRARG, "kjit_export: no value at stack index %d", idx);
  ExportCtx c = { sig, KJIT_ERRARG };
  return protect(L, export_p, &c, idx, &c.code);
}

typedef struct LoadCtx { const void *bytes; size_t len; kjit_fn *fn; int code; } LoadCtx;

static int load_p(lua_State *L) {
  LoadCtx *c = (LoadCtx *)lua_touserdata(L, 1);
  c->code = KJIT_ERRARG;
  if (luaL_getmetatable(L, "kjit.jit") == LUA_TNIL) {
    lua_pushcfunction(L, luaopen_kjit);
    lua_call(L, 0, 0);
  }
  lua_pop(L, 1);
  kjit_fn *fn = (kjit_fn *)lua_newuserdatauv(L, sizeof *fn, 1);   /* 2 */
  memset(fn, 0, sizeof *fn);
  if (kb_newmeta(L, CFN_METATABLE)) {
    lua_pushliteral(L, CFN_METATABLE);
    lua_setfield(L, -2, "__metatable");
    kb_regmeta(L, CFN_METATABLE);
  }
  lua_setmetatable(L, 2);
  lua_pushcfunction(L, kexp_l_load);
  lua_pushlstring(L, (const char *)c->bytes, c->len);
  lua_call(L, 1, 1);                                                /* 3 */
  if (!luaL_testudata(L, 3, "kjit.jit"))
    return luaL_error(L, "kjit_load: the bytes hold a kernel (load it with kjit.load from Lua)");
  lua_pushvalue(L, 3);
  lua_setiuservalue(L, 2, 1);
  kd_spec_info(L, 3, "kjit_load", &fn->info);
  size_t n = 0;
  char tb[32];
  fn->sigtext[n++] = '(';
  for (int i = 0; i < fn->info.nsig; i++) {
    const char *t = kty_name(fn->info.args[i], tb, sizeof tb);
    n += snprintf(fn->sigtext + n, sizeof fn->sigtext - n, "%s%s", i ? ", " : "", t);
    if (n >= sizeof fn->sigtext - 2) { n = sizeof fn->sigtext - 5; memcpy(fn->sigtext + n, "...", 3); n += 3; break; }
  }
  fn->sigtext[n++] = ')';
  fn->sigtext[n] = '\0';
  c->fn = fn;
  lua_settop(L, 2);
  return 1;
}

KJIT_API int kjit_load(lua_State *L, const void *bytes, size_t len, kjit_fn **out) {
  if (out) *out = NULL;
  if (bytes == NULL || out == NULL)
    return fail(L, KJIT_ERRARG, "kjit_load: %s is NULL", bytes == NULL ? "bytes" : "out");
  LoadCtx c = { bytes, len, NULL, KJIT_ERRARG };
  int st = protect(L, load_p, &c, 0, &c.code);
  if (st == KJIT_OK) *out = c.fn;
  return st;
}

/* ---- Calling ---------------------------------------------------------------------- */

static int pusherr_p(lua_State *L) {
  krt_push_error(L, (const KErr *)lua_touserdata(L, 1));
  return 1;
}

/* The type of a call argument, as signatures write it. */
static const char *valname(const kjit_value *v, char *buf, size_t n) {
  switch (v->type) {
  case KJIT_TNIL: return "nil";
  case KJIT_TBOOL: return "bool";
  case KJIT_TINT: return "i64";
  case KJIT_TFLOAT: return "f64";
  case KJIT_TARRAY: {
    const kjit_array *a = v->v.a;
    if (a == NULL) return "a NULL array";
    const char *dn = a->dtype == KJIT_RECORD ? "record" : kjit_dtype_name(a->dtype);
    if (dn == NULL || a->ndim < 1 || a->ndim > KJIT_MAXDIMS) return "an invalid array";
    static const char *const dims[] = { ":", ":,:", ":,:,:", ":,:,:,:" };
    snprintf(buf, n, "%s[%s]", dn, dims[a->ndim - 1]);
    return buf;
  }
  default: snprintf(buf, n, "an invalid kjit_value (type %d)", (int)v->type); return buf;
  }
}

KJIT_API int kjit_call(lua_State *L, const kjit_fn *fn, const kjit_value *args, int nargs,
                       kjit_value *results, int nresults) {
  if (fn == NULL) return fail(L, KJIT_ERRARG, "kjit_call: fn is NULL");
  const KdSpecInfo *in = &fn->info;
  /* the owner object was resurrected after its code was freed */
  if (in->dead && *in->dead)
    return fail(L, KJIT_ERRARG, "kjit_call: the compiled function was used after it was finalized");
  if (in->arrays)
    return fail(L, KJIT_ERRARG, "kjit_call: the function makes or returns kjit arrays (signature "
                "%s): call it from Lua", fn->sigtext);
  if (nargs != in->nsig)
    return fail(L, KJIT_ERRARG, "kjit_call: %d argument%s given, the signature %s takes %d",
                nargs, nargs == 1 ? "" : "s", fn->sigtext, in->nsig);
  if (nargs > 0 && args == NULL) return fail(L, KJIT_ERRARG, "kjit_call: args is NULL");
  if (nresults < 0 || (nresults > 0 && results == NULL))
    return fail(L, KJIT_ERRARG, "kjit_call: bad results (%d, %s)", nresults,
                results ? "non-NULL" : "NULL");
  int64_t slots[KJIT_MAXARGS + 1];
  KBuffer bufs[KJIT_MAXARGS];   /* compiled code reads .data and .shape only */
  for (int i = 0; i < nargs; i++) {
    const kjit_value *v = &args[i];
    Type t = in->args[i];
    char want[32], got[64];
    int ok;
    switch (t.kind) {
    case T_INT: ok = v->type == KJIT_TINT; slots[i] = v->v.i; break;
    case T_F64: ok = v->type == KJIT_TFLOAT; memcpy(&slots[i], &v->v.f, 8); break;
    case T_BOOL: ok = v->type == KJIT_TBOOL; slots[i] = v->v.b != 0; break;
    case T_NIL: ok = v->type == KJIT_TNIL; slots[i] = 0; break;
    case T_BUF: {
      const kjit_array *a = v->v.a;
      ok = v->type == KJIT_TARRAY && a != NULL && a->dtype == (kjit_dtype)t.dtype &&
           a->ndim == t.ndim;
      /* records: the layout the code was compiled for */
      if (ok && t.dtype == KJIT_RECORD && a->record != krec_byid(t.ref))
        return fail(L, KJIT_ERRARG, "kjit_call: argument #%d: the records have another layout "
                    "than the signature's", i + 1);
      if (!ok) break;
      int empty = 0;
      for (int k = 0; k < a->ndim; k++) {
        if (a->shape[k] < 0)
          return fail(L, KJIT_ERRARG, "kjit_call: argument #%d: negative extent %lld in "
                      "dimension %d", i + 1, (long long)a->shape[k], k + 1);
        if (a->shape[k] == 0) empty = 1;
      }
      if (a->data == NULL && !empty)
        return fail(L, KJIT_ERRARG, "kjit_call: argument #%d: array data is NULL", i + 1);
      if ((uintptr_t)a->data % (a->dtype == KJIT_RECORD ? (size_t)a->record->align
                                                        : kjit_dtype_size(a->dtype)) != 0)
        return fail(L, KJIT_ERRARG, "kjit_call: argument #%d: array data %p is not aligned "
                    "to its elements", i + 1, a->data);
      KBuffer *b = &bufs[i];
      b->data = (char *)a->data;
      b->size = 1;
      for (int k = 0; k < KJIT_MAXDIMS; k++) {
        b->shape[k] = k < a->ndim ? a->shape[k] : 1;
        b->size *= b->shape[k];
      }
      b->ndim = a->ndim;
      b->dtype = a->dtype;
      b->record = t.dtype == KJIT_RECORD ? a->record : NULL;
      b->release = NULL;
      b->release_ud = NULL;
      b->released = NULL;
      slots[i] = (int64_t)(intptr_t)b;
      break;
    }
    default: ok = 0; break;
    }
    if (!ok)
      return fail(L, KJIT_ERRARG, "kjit_call: argument #%d is %s, expected %s (signature %s)",
                  i + 1, valname(v, got, sizeof got), kty_name(t, want, sizeof want),
                  fn->sigtext);
  }
  for (int i = nargs; i < in->nargs; i++) slots[i] = 0;
  int64_t rets[KJIT_RETSLOTS];
  KErr err;
  memset(&err, 0, sizeof err);
  err.stack_limit = in->calls ? krt_stack_limit() : 0;
  krt_poll_begin(L, &err);   /* kjit_rt_poll's context (runtime_poll.c) */
  if (in->entry(slots, rets, &err) != 0) {
    int st = protect(L, pusherr_p, &err, 0, NULL);
    return st == KJIT_OK ? KJIT_ERRRUN : st;
  }
  /* returns of different lengths: the call says how many (as jit.c's
  ** nresults_of); the rest are nil, as lua_call adjusts */
  int given = in->nret;
  if (in->dyncount) {
    int64_t c = rets[KJIT_RETCOUNT];
    given = c < 0 ? 0 : c > in->nret ? in->nret : (int)c;
  }
  for (int r = 0; r < nresults; r++) {
    kjit_value *o = &results[r];
    if (r >= given) { o->type = KJIT_TNIL; o->v.i = 0; continue; }
    int kind = in->rets[r].kind;
    if (kind == T_MAYBE) {
      int64_t tag = rets[KJIT_MAXRETS + r];
      if (tag == 0) {
        if (in->rets[r].dtype) { o->type = KJIT_TNIL; o->v.i = 0; }
        else { o->type = KJIT_TBOOL; o->v.b = 0; }
        continue;
      }
      kind = in->rets[r].sub;
      if (kind == T_NUMBER) kind = tag == 2 ? T_F64 : T_INT;   /* cg_entry.c, jit.c's push_result */
    } else if (kind == T_NUMBER) {   /* an integer or a float: the flag says which */
      kind = rets[KJIT_MAXRETS + r] ? T_F64 : T_INT;
    } else if (kind == T_LUA) {   /* a number (tag 1 integer, 2 float); a Lua
                                  ** value (tag 0) needs Lua, refused at compile */
      int64_t tag = rets[KJIT_MAXRETS + r];
      kind = tag == 1 ? T_INT : tag == 2 ? T_F64 : T_NIL;
    }
    switch (kind) {
    case T_NIL: o->type = KJIT_TNIL; o->v.i = 0; break;
    case T_INT: o->type = KJIT_TINT; o->v.i = rets[r]; break;
    case T_BOOL: o->type = KJIT_TBOOL; o->v.b = rets[r] != 0; break;
    default: o->type = KJIT_TFLOAT; memcpy(&o->v.f, &rets[r], 8); break;
    }
  }
  return KJIT_OK;
}

KJIT_API int kjit_nargs(const kjit_fn *fn) { return fn ? fn->info.nsig : -1; }

KJIT_API int kjit_nresults(const kjit_fn *fn) { return fn ? fn->info.nret : -1; }

/* ---- C stacks --------------------------------------------------------------------- */

KJIT_API int kjit_set_stack_limit(const void *base, size_t size) {
  return krt_set_stack(base, size) == 0 ? KJIT_OK : KJIT_ERRARG;
}

/* ---- Stopping compiled code (runtime_poll.c) ---------------------------------- */

KJIT_API int kjit_interrupt(lua_State *L) {
  return krt_interrupt(L) == 0 ? KJIT_OK : KJIT_ERRARG;
}

KJIT_API void kjit_interrupt_clear(lua_State *L) {
  krt_interrupt_clear(L);
}
