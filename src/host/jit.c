/*
** jit.c: the dispatcher. kjit.jit(fn [, opts]) returns a callable object;
** each call classifies its arguments into a signature, finds the compiled
** specialization (last one used first, then a list), compiles a new one
** on a miss, unpacks the arguments into 64-bit slots and calls native code.
**
**   compile: host/driver.c (the function's bytecode -> SSA IR -> types
**            -> LLVM IR, src/frontend, src/ir, src/codegen) -> cpu.c (O3,
**            ORC LLJIT) -> KEntry
**
** Compile errors and run-time errors become Lua errors only here, after
** every native frame has returned and every temporary is owned by a
** userdata the GC will collect.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include "common/clock.h"
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "host/buffer.h"
#include "host/record.h"
#include "common/krecord.h"
#include "host/lua_stack.h"
#include "common/compile.h"
#include "backend/cpu.h"
#include "backend/cache.h"
#include "backend/llvm_load.h"
#include "runtime/runtime.h"
#include "runtime/runtime_poll.h"
#include "runtime/runtime_lib.h"
#include "runtime/luavalue.h"
#include "runtime/luacall.h"
#include "runtime/halfrt.h"
#include "runtime/luastring.h"
#include "runtime/parallel.h"
#include "runtime/alloc.h"
#include "runtime/luaarray.h"
#include "host/jit.h"
#include "host/callval.h"
#include "host/chunkpolicy.h"
#include "host/session.h"
#include "host/options.h"
#include "host/signature.h"
#include "host/driver.h"
#include "ir/ir_builtins.h"
#include "ir/ir_type.h"
#include "host/cache_key.h"
#include "host/export.h"

#define JIT_METATABLE "kjit.jit"

/* Argument classes in a signature (one byte per argument). */
enum { SIG_NIL = 1, SIG_BOOL, SIG_INT, SIG_FLOAT, SIG_FUNC, SIG_BUF = 16 };
/* A table (any table: not keyed by identity); its slot holds its stack
** index, and compiled code reaches it through the Lua API (cg_lua.c). */
#define SIG_TABLE 15
/* A C function (math.cos, a host's function): a Lua value in its slot like
** a table, called through lua_call (runtime/luacall.c). */
#define SIG_CFUNC 13
/* A string: a Lua value as a table is (its slot holds its stack index). */
#define SIG_STRING 14
#define SIG_BUFCODE(dt, nd) (SIG_BUF + (dt) * 4 + ((nd) - 1))
/* Records (kjit.struct): SIG_REC + ndim (0: a record view, 1..4: arrays of
** records); the layout is the argument's key (JitSpec.fnkey), compared as
** functions' identities are. */
#define SIG_REC 6
#define SIG_ISREC(c) ((c) >= SIG_REC && (c) <= SIG_REC + KJIT_MAXDIMS)
/* A dtype object (kjit.f32: refuse3): the dtype is the argument's key
** (JitSpec.fnkey, its slot), compared as functions' identities are; the
** compiled code gets it as the constant it is where kjit.f32 is written
** (ir_type.c dtype_obj_arg: a T_BUILTIN of dtype 1), so kjit.zeros(n, d),
** tostring(d) and `..` fold per specialization. */
#define SIG_DTYPE 11

typedef struct JitSpec {
  struct JitSpec *next;
  int nargs;                     /* arguments the entry reads (= nparams) */
  uint8_t sig[KJIT_MAXARGS];
  int nsig;                      /* arguments in the signature */
  int64_t fnkey[KJIT_MAXARGS];   /* SIG_FUNC arguments: identity of the function;
                                    SIG_REC: the layout (const KRecord *) */
  int fnref[KJIT_MAXARGS];       /* ... kept alive by a registry reference */
  lua_State *L;                  /* the state owning those references */
  int *refs; int nrefs;          /* the code's own registry references (driver.h):
                                    released with it (release_refs) */
  int calls;                     /* makes compiled calls: needs the stack limit */
  int lua;                       /* holds Lua values: calls the Lua API (driver.h) */
  int fast;                      /* no function arguments: read_args may read them */
  int plain;                     /* every argument an integer or a float: the
                                    direct reads compare tags[i] alone (spec_reads) */
  uint8_t tags[KJIT_MAXARGS];    /* plain: each argument's Lua 5.4 tag (lua_stack.h) */
  KEntry entry;
  KCpuCode *code;
  int noraise;                   /* entry cannot fail (kc_code_noraise: 0, 1, 2):
                                    called without the KErr set-up or the status
                                    test; 2: given no memory (native_call0) */
  int nret;
  uint8_t rets[KJIT_MAXRETS];    /* TypeKind of each result */
  uint8_t rsub[KJIT_MAXRETS];    /* T_MAYBE: kind of the number */
  uint8_t rnil[KJIT_MAXRETS];    /* T_MAYBE: falsy value is nil (else false);
                                    T_BUF: the dtype */
  uint8_t rndim[KJIT_MAXRETS];   /* T_BUF: the rank */
  uint8_t rview[KJIT_MAXRETS];   /* T_BUF: a view the function made (driver.h) */
  const KRecord *rrec[KJIT_MAXRETS];   /* T_BUF of records: the layout */
  int arrays;                    /* returns arrays or makes them: call_arrays */
  int allocates;                 /* makes arrays: an allocation list per call */
  char *ir, *asmtext, *types;
  double compile_ms;             /* wall time of the compile (f.compile_ms) */
  char *parnotes;                /* f:inspect("parallel") */
  int dyncount;                  /* returns of different lengths: the count
                                    in rets[KJIT_RETCOUNT] (cg_entry.c) */
  /* Tiered compiles (tier_up): */
  KCpuSaved *warm;               /* first tier: the module kept for the full
                                    tier (NULL: full tier, or staying first) */
  int64_t work;                  /* first tier: calls + TIER_POLL_WORK x polls */
  int tier1;                     /* the code running is the first tier's */
  KCpuCode *code1;               /* after tier-up: the first tier's code, kept
                                    while the spec lives (a frame below may
                                    still run it) */
  int retired;                   /* a table it read frozen became live
                                    (kd_retire_readers): never called again,
                                    kept while its object lives */
} JitSpec;

typedef struct JitObj {
  uint64_t tag;                  /* JIT_TAG: first, checked by jit_call */
  JitSpec *specs;                /* most recently used first */
  JitSpec *last;
  int nspecs;
  int boundscheck, fastmath, opt;
  int cache;                     /* {cache = true}: object code on disk (cache.c) */
  int parallel;                  /* {parallel = true}: kjit.prange loops on the pool */
  int dead;                      /* __gc ran: the code is freed; a resurrected
                                    object refuses calls and compiles */
  int loaded;                    /* made by kjit.load: one specialization, no
                                    Lua function to compile others from */
  int tiered;                    /* {tiered = true}: first compiles at the cheap
                                    tier (tier_up) */
  int interp;                    /* a main chunk left to the interpreter
                                    (host/chunkpolicy.c): 1 yes, -1 no, 0
                                    not asked yet (runs_interpreted) */
  JitSpec *retired;              /* specializations retired (kd_retire_readers):
                                    a frame below may still run one, a native
                                    function still names one; freed with the object */
} JitObj;

/* ---- Tiered compiles -----------------------------------------------------------
**
** A call that compiles a new specialization compiles it at a cheap first
** tier (backend/cpu.c: a short IR list and LLVM's fast code generator;
** bench/compile_time.lua's small loop 5.2 against 8.3 ms, Mandelbrot 11
** against 25 ms, the stencil 11 against 41; its code ran Mandelbrot as
** fast, matmul 1.5 times and a saxpy (not vectorized) twice as slow, a
** small Jacobi sweep with 9.7 times the instructions:
** docs/performance.md), keeping the unoptimized LLVM module. The
** dispatcher counts the work done in first-tier code: each call, and each
** interrupt poll made during a call (a poll stands for KRT_POLL_INTERVAL
** loop iterations or compiled calls). At the first call after that work
** reaches tier_after units, the kept module is compiled at full tier
** (synchronously, at that call boundary) and its entry replaces the
** specialization's for every later call: f(...), f:native, callees run
** through values. Both tiers compile the same LLVM module, made once, so
** they compute the same thing: upvalues and globals stay frozen as they
** were at the first compile, and errors are the same (run-time errors are
** generated into the module before any pass).
**
** Rules (design decisions):
**   - A single long call stays at the first tier (no on-stack
**     replacement): a kernel called once runs its first-tier code to the
**     end. Its second call is full tier when the first made 4 polls or
**     more (about 260,000 loop iterations): so the kernels of a benchmark,
**     called repeatedly, run at full speed after one call. (At 64 units a
**     poll, a saxpy over 10^6 elements, 15 polls, took three first-tier
**     calls: the first tier runs it with 7.4 times the instructions.)
**   - 1000 calls of a loop-free function tier it up (a call is one unit,
**     a poll TIER_POLL_WORK units).
**   - The disk cache holds full-tier code only: {cache = true} compiles the
**     full tier at once (the compile is paid once for every later
**     process), and a cache hit runs at full speed at once.
**   - f:compile, f:native, the C API, f:export and callees compiled for
**     calls through values are full tier, at once (a first-tier
**     specialization they name is tiered up then).
**   - Modules where the first tier does not pay or would behave
**     differently (small ones without loops, Lua-value code, recursive
**     code: cpu.c's kc_tier1_pays) compile at full tier at once.
**   - The first tier's code is freed with the specialization, not at the
**     tier-up: a frame below (a callback calling f again) may still run it.
**   - KJIT_TIER=0 (or {tiered = false}) turns it off: every compile is
**     full tier; KJIT_TIER=first keeps the first tier forever (tests, and
**     measuring the first tier's code). */
enum { TIER_OFF, TIER_ON, TIER_FIRST };
static int tier_mode = TIER_ON;             /* KJIT_TIER, read once (kd_open) */
static int64_t tier_after = 1000;           /* kjit.testing.tier_after */
#define TIER_POLL_WORK 250

/* Keyed like the arrays' tags (buffer.h), distinct from them. */
#define JIT_TAG(o) (KB_TAG(o) ^ 0x6a69746f626a0000u)

static int dead_error(lua_State *L) {
  return luaL_error(L, "kjit function used after it was finalized");
}

/* ---- Signatures ------------------------------------------------------------- */

static Type sig_type(uint8_t c) {
  switch (c) {
  case SIG_NIL: return TY(T_NIL);
  case SIG_BOOL: return TY(T_BOOL);
  case SIG_INT: return TY(T_INT);
  case SIG_FLOAT: return TY(T_F64);
  case SIG_FUNC: return TY(T_FUNC);
  case SIG_DTYPE: return TY(T_BUILTIN);   /* (rec_types gives its dtype) */
  case SIG_TABLE: { Type t = TY(T_LUA); t.sub = KTY_LUA_TABLE; return t; }
  case SIG_CFUNC: return TY(T_LUA);
  case SIG_STRING: { Type t = TY(T_LUA); t.sub = KTY_LUA_STRING; return t; }
  default: {
    Type t = TY(T_BUF);
    if (SIG_ISREC(c)) {   /* the layout: rec_types fills Type.ref */
      t.dtype = KJIT_RECORD;
      t.ndim = (uint8_t)(c - SIG_REC);
      return t;
    }
    t.dtype = (c - SIG_BUF) / 4;
    t.ndim = (c - SIG_BUF) % 4 + 1;
    return t;
  }
  }
}

/* An array of records (or a record view) as an argument. */
static uint8_t sig_record(lua_State *L, const KBuffer *b, int argn) {
  (void)L; (void)argn;
  return (uint8_t)(SIG_REC + b->ndim);
}

/* The layout of a record argument whose slot holds its KBuffer*. */
#define SLOT_RECORD(slot) ((int64_t)(intptr_t)((const KBuffer *)(intptr_t)(slot))->record)

/* Sets Type.ref (the layout's id) of the record arguments among t[0..n),
** keyed by fnkey[i] (a layout). */
static void rec_types(Type *t, const uint8_t *sig, const int64_t *keys, int n) {
  for (int i = 0; i < n; i++) {
    if (SIG_ISREC(sig[i])) t[i].ref = ((const KRecord *)(intptr_t)keys[i])->id;
    if (sig[i] == SIG_DTYPE) {   /* ... and the dtype objects' dtypes */
      t[i] = TY(T_BUILTIN);
      t[i].ref = KIR_DTYPE_CAST((int)keys[i]);
      t[i].dtype = 1;
    }
  }
}

/* Classifies argument i (stack index idx); fills its slot. Raises on
** values compiled code cannot take. The slow path: a call whose
** arguments match the last specialization never comes here (read_args). */
static uint8_t classify(lua_State *L, int idx, int argn, int64_t *slot) {
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) { *slot = lua_tointeger(L, idx); return SIG_INT; }
    { double d = lua_tonumber(L, idx); memcpy(slot, &d, 8); return SIG_FLOAT; }
  case LUA_TBOOLEAN: *slot = lua_toboolean(L, idx); return SIG_BOOL;
  case LUA_TNIL: *slot = 0; return SIG_NIL;
  case LUA_TUSERDATA: {
    KBuffer *b = kb_fast(L, idx);   /* by its tag: see buffer.h */
    if (b) {
      if (kb_released(b)) kb_released_error(L);
      *slot = (int64_t)(intptr_t)b;
      if (b->record) return sig_record(L, b, argn);
      return SIG_BUFCODE(b->dtype, b->ndim);
    }
    if (luaL_testudata(L, idx, JIT_METATABLE)) {
      *slot = (int64_t)(intptr_t)lua_topointer(L, idx);
      return SIG_FUNC;
    }
    break;
  }
  case LUA_TFUNCTION:
    if (!lua_iscfunction(L, idx)) { *slot = (int64_t)(intptr_t)lua_topointer(L, idx); return SIG_FUNC; }
    *slot = lua_absindex(L, idx);
    return SIG_CFUNC;
  case LUA_TTABLE: *slot = lua_absindex(L, idx); return SIG_TABLE;
  case LUA_TSTRING: *slot = lua_absindex(L, idx); return SIG_STRING;
  default: break;
  }
  if (krec_test(L, idx))
    return (uint8_t)luaL_error(L, "argument #%d is a kjit.struct: compiled code takes a record "
                               "layout as an upvalue or a global (read when it compiles), not as "
                               "an argument", argn);
  if (kir_dtype_of(L, idx) >= 0) {   /* kjit.f32 ...: keyed by its dtype (SIG_DTYPE) */
    *slot = kir_dtype_of(L, idx);
    return SIG_DTYPE;
  }
  return (uint8_t)luaL_error(L, "argument #%d is a %s: kjit functions take numbers, "
                             "booleans, strings, tables, kjit arrays and Lua functions", argn,
                             luaL_typename(L, idx));
}

/* How the call path reads js's arguments (js->sig and js->nsig set):
** fast unless one is a function (its identity is compared); plain when
** every one is an integer or a float, each then read by one tag compare
** and one copy (read_args_direct). */
static void spec_reads(JitSpec *js) {
  js->fast = 1;
  js->plain = 1;
  for (int i = 0; i < js->nsig; i++) {
    uint8_t c = js->sig[i];
    if (c == SIG_FUNC || c == SIG_DTYPE) js->fast = 0;
    js->tags[i] = c == SIG_INT ? KLS_INT : c == SIG_FLOAT ? KLS_FLT : 0;
    if (js->tags[i] == 0) js->plain = 0;
  }
  /* (none: read_args_direct's general loop is as short) */
  if (!js->fast || js->nsig == 0) js->plain = 0;
}

/* The fast path: reads the arguments at stack indices base.. into slots if
** each is exactly of js's signature (its number of arguments checked by
** the caller), with the fewest API calls: an integer two, a float three,
** an array two (kb_fast). Returns 0 at the first one that is not, and for
** specializations that take functions (js->fast == 0): the caller then
** classifies them all (which also raises what must be raised, a released
** array included). */
#define K_INLINE static inline __attribute__((always_inline))
K_INLINE int read_args(lua_State *L, const JitSpec *js, int base, int64_t *slots) {
  if (!js->fast) return 0;
  for (int i = 0; i < js->nsig; i++) {
    int idx = base + i;
    uint8_t c = js->sig[i];
    switch (c) {
    case SIG_INT:
      if (!lua_isinteger(L, idx)) return 0;
      slots[i] = lua_tointegerx(L, idx, NULL);
      break;
    case SIG_FLOAT: {
      /* lua_type excludes numeric strings ("2.5"); a value that is not
      ** integral cannot be an integer, so only an integral one (2.0, or
      ** the integer 2) costs the third call */
      if (lua_type(L, idx) != LUA_TNUMBER) return 0;
      double d = lua_tonumberx(L, idx, NULL);
      int maybe_int = !(d > -0x1p63 && d < 0x1p63) || d == (double)(int64_t)d;
      if (maybe_int && lua_isinteger(L, idx)) return 0;
      memcpy(&slots[i], &d, 8);
      break;
    }
    case SIG_BOOL:
      if (lua_type(L, idx) != LUA_TBOOLEAN) return 0;
      slots[i] = lua_toboolean(L, idx);
      break;
    case SIG_NIL:
      if (lua_type(L, idx) != LUA_TNIL) return 0;
      slots[i] = 0;
      break;
    case SIG_TABLE:
      if (lua_type(L, idx) != LUA_TTABLE) return 0;
      slots[i] = idx;
      break;
    case SIG_CFUNC:
      if (!lua_iscfunction(L, idx)) return 0;
      slots[i] = idx;
      break;
    case SIG_STRING:
      if (lua_type(L, idx) != LUA_TSTRING) return 0;
      slots[i] = idx;
      break;
    default: {   /* an array (of records: its layout too) */
      KBuffer *b = kb_fast(L, idx);
      if (b == NULL || kb_released(b)) return 0;
      if (SIG_ISREC(c) ? b->record == NULL || SIG_REC + b->ndim != c ||
                         (int64_t)(intptr_t)b->record != js->fnkey[i]
                       : SIG_BUFCODE(b->dtype, b->ndim) != c)
        return 0;
      slots[i] = (int64_t)(intptr_t)b;
      break;
    }
    }
  }
  return 1;
}

/* read_args from the stack itself (lua_stack.h; only when kls_on): a
** the arguments' tags and values read in place, no API call. The same
** answers as read_args: an integer only for an integer, a float only for
** a float, an array only for a full userdata large enough for a header
** that carries its keyed tag (buffer.h), not released, of the dtype and
** rank. */
K_INLINE int read_args_direct(const JitSpec *js, const KlsStackValue *a, int64_t *slots) {
  if (js->plain) {   /* numbers only: the tag decides (the value is copied as bits) */
    for (int i = 0; i < js->nsig; i++) {
      if (a[i].val.tt_ != js->tags[i]) return 0;
      slots[i] = a[i].val.value_.i;
    }
    return 1;
  }
  if (!js->fast) return 0;
  for (int i = 0; i < js->nsig; i++) {
    const KlsTValue *v = &a[i].val;
    uint8_t c = js->sig[i];
    switch (c) {
    case SIG_INT:
      if (v->tt_ != KLS_INT) return 0;
      slots[i] = v->value_.i;
      break;
    case SIG_FLOAT:
      if (v->tt_ != KLS_FLT) return 0;
      memcpy(&slots[i], &v->value_.n, 8);
      break;
    case SIG_BOOL:
      if (v->tt_ == KLS_TRUE) slots[i] = 1;
      else if (v->tt_ == KLS_FALSE) slots[i] = 0;
      else return 0;
      break;
    case SIG_NIL:
      if ((v->tt_ & 0x0f) != KLS_NIL) return 0;
      slots[i] = 0;
      break;
    case SIG_TABLE: case SIG_CFUNC: case SIG_STRING: return 0;   /* read_args knows the stack index */
    default: {   /* an array */
      if (v->tt_ != KLS_UDATA) return 0;
      size_t len;
      KBuffer *b = kls_udata(v, &len);
      if (len < sizeof(KBuffer) || b->tag != KB_TAG(b) || kb_released(b)) return 0;
      if (SIG_ISREC(c) ? b->record == NULL || SIG_REC + b->ndim != c ||
                         (int64_t)(intptr_t)b->record != js->fnkey[i]
                       : SIG_BUFCODE(b->dtype, b->ndim) != c)
        return 0;
      slots[i] = (int64_t)(intptr_t)b;
      break;
    }
    }
  }
  return 1;
}

/* "f64(f32[:], i64)"-style text for a list of types. */
static void sig_text(luaL_Buffer *b, const Type *t, int n) {
  char tb[32];
  luaL_addchar(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) luaL_addstring(b, ", ");
    luaL_addstring(b, kty_name(t[i], tb, sizeof tb));
  }
  luaL_addchar(b, ')');
}

/* ---- Compile sessions ------------------------------------------------------------ */

/* The code's registry references (trampolines, live upvalues' closures,
** live tables: ir_type.h kty_ref) released, after the code itself is freed
** (callval.c's site caches name trampolines: kcv_code_freed has run): the
** call-value caches told first (kcv_refs_freed), since a reference's
** number is reused by the next luaL_ref. */
static void release_refs(JitSpec *js) {
  if (js->nrefs == 0 || js->L == NULL) { free(js->refs); js->refs = NULL; return; }
  kcv_refs_freed(js->L, js->refs, js->nrefs);
  for (int i = 0; i < js->nrefs; i++) luaL_unref(js->L, LUA_REGISTRYINDEX, js->refs[i]);
  free(js->refs);
  js->refs = NULL;
  js->nrefs = 0;
}

/* Everything a compile allocates hangs off a session userdata (session.c),
** so that a Lua error anywhere (even out of memory in the Lua API) leaks
** nothing. This frees a specialization that never reached its jit object,
** with the registry references its compile took: the session's
** free_result. */
static void free_unlinked_spec(void *p) {
  JitSpec *js = p;
  kc_saved_free(js->warm);
  kc_free(js->code);
  release_refs(js);
  free(js->ir); free(js->asmtext); free(js->types); free(js->parnotes);
  free(js);
}

/* ---- Code that read a table frozen, retired (ir/ir_live.c) ----------------------
** A table that compiled code writes into became live after code of the
** owners in the table at `readers` (jit objects) compiled reading its
** fields frozen: their specializations are retired (no call reaches them
** again: the object's list, its last one, the call-value caches, native
** functions), and the next call of each compiles anew, reading the table
** live. A frame already running one finishes with the values it froze
** (docs/guide/tables.md). Retired code is freed with its object. */
static long nretired;   /* specializations retired (kjit.testing.callees) */
long kd_retired_specs(void) { return __atomic_load_n(&nretired, __ATOMIC_RELAXED); }

static void retire_specs(JitObj *o) {
  for (JitSpec *s = o->specs; s;) {
    JitSpec *n = s->next;
    __atomic_add_fetch(&nretired, 1, __ATOMIC_RELAXED);
    s->retired = 1;
    s->next = o->retired;
    o->retired = s;
    s = n;
  }
  o->specs = o->last = NULL;
  o->nspecs = 0;
}

static void kd_retire_readers(lua_State *L, int readers) {
  int any = 0;
  lua_pushnil(L);
  while (lua_next(L, readers)) {
    JitObj *o = luaL_testudata(L, -2, JIT_METATABLE);
    if (o != NULL && !o->dead && !o->loaded && o->specs != NULL) {
      retire_specs(o);
      any = 1;
    }
    lua_pop(L, 1);
  }
  if (any) kcv_forget_natives(L);
}

static void register_runtime_once(void) {
  kty_set_live_hook(kd_retire_readers);   /* (before any compile) */
  /* layouts of arrays of records: exported code loaded gets this process's */
  kc_set_name_hook(kexp_layout_symbol);
  kc_register_symbol("kjit_rt_cmp_int_float", (void *)kjit_rt_cmp_int_float);
  kc_register_symbol("kjit_rt_forlimit", (void *)kjit_rt_forlimit);
  kc_register_symbol("kjit_rt_lib", (void *)kjit_rt_lib);
  kc_register_symbol("kjit_rt_parallel_for", (void *)kjit_rt_parallel_for);
  kc_register_symbol("kjit_rt_poll", (void *)kjit_rt_poll);
  kc_register_symbol("kjit_rt_alloc", (void *)kjit_rt_alloc);
  kc_register_symbol("kjit_rt_free", (void *)kjit_rt_free);
  kc_register_symbol("kjit_rt_alloc_scratch", (void *)kjit_rt_alloc_scratch);
  kc_register_symbol("kjit_rt_fill", (void *)kjit_rt_fill);
  kc_register_symbol("kjit_rt_arange", (void *)kjit_rt_arange);
  kc_register_symbol("kjit_rt_linspace", (void *)kjit_rt_linspace);
  kc_register_symbol("kjit_rt_reshape_check", (void *)kjit_rt_reshape_check);
  kjit_lv_register();   /* Lua values (runtime/luavalue.c) */
  kjit_la_register();   /* arrays made Lua values (runtime/luaarray.c) */
  kjit_lc_register();   /* function values, assigned upvalues (runtime/luacall.c) */
  kcv_init();           /* ... whose Lua callees run compiled (host/callval.c) */
  kjit_ls_register();   /* conversions, strings (runtime/luastring.c) */
  kjit_half_register();   /* f16 conversion libcalls (runtime/halfrt.c) */
}

/* Once per process: states in other threads may compile at the same time
** (a plain flag here was a data race). */
static void register_runtime(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_runtime_once);
}

static void free_spec(JitSpec *s) {
  for (int i = 0; i < s->nsig; i++)
    if (s->sig[i] == SIG_FUNC && s->L) luaL_unref(s->L, LUA_REGISTRYINDEX, s->fnref[i]);
  kc_saved_free(s->warm);
  kc_free(s->code);
  kc_free(s->code1);
  release_refs(s);
  free(s->ir); free(s->asmtext); free(s->types); free(s->parnotes);
  free(s);
}

/* ---- The disk cache ({cache = true}) ---------------------------------------- */

/* A performance warning (Lua's warn: off until "@on" or lua5.4 -W): the
** object asks for parallel = true, but no loop of the specialization just
** compiled runs in parallel, so the option costs and gains nothing. */
static void warn_not_parallel(lua_State *L, int objidx) {
  lua_Debug ar;
  lua_getiuservalue(L, objidx, 1);
  lua_getinfo(L, ">S", &ar);
  lua_pushfstring(L, "kjit: the function at %s:%d has parallel = true, but none of its "
                  "loops runs in parallel (only for i in kjit.prange(a, b) loops do; "
                  "f:inspect(\"parallel\") says why for each loop)", ar.short_src,
                  ar.linedefined);
  lua_warning(L, lua_tostring(L, -1), 0);
  lua_pop(L, 1);
}

/* Load only (kd_cache_load_only; kjit_ext.h's cache_load_only, set by
** kjit.mpi's compile_once on the ranks that must not compile): a compile
** that finds no code in the disk cache raises instead of compiling. */
static int cache_load_only;

int kd_cache_load_only(int on) {
  int was = __atomic_exchange_n(&cache_load_only, on != 0, __ATOMIC_ACQ_REL);
  return was;
}

/* The message of a load-only compile that would have to compile. */
static void load_only_error(char *buf, size_t n, const char *why) {
  char *dir = kcache_dir();
  snprintf(buf, n, "kjit: no compiled code for this signature in the disk cache (%s): %s",
           dir ? dir : "no cache directory", why);
  free(dir);
}

/* What compile_spec's driver hook (cache_typed) shares with it. */
typedef struct CacheCtx {
  SessionBox *sb;
  const JitObj *o;
  JitSpec *js;
  char *key;            /* in the session's arena */
  size_t keylen;
  void *addr;           /* a hit's entry */
  int hit, calls;
  int exporting;        /* f:export: no disk cache, refuse process-bound code */
  int32_t layouts[16];  /* exporting: the layouts of arrays of records it makes */
  int nlayouts;
} CacheCtx;

/* A new module for the CPU target, owned by the session. Returns 0, or -1
** with the message in err (errsz bytes). */
static int new_cpu_module(SessionBox *sb, int fastmath, char *errbuf, size_t errsz) {
  char *err = NULL;
  const char *lerr = NULL;
  if (kjit_llvm_load(&lerr) != 0) {   /* the first compile loads LLVM */
    snprintf(errbuf, errsz, "kjit: %s", lerr);
    return -1;
  }
  sb->ctx = kc_new_context();
  if (sb->ctx == NULL) {
    snprintf(errbuf, errsz, "kjit: not enough memory");
    return -1;
  }
  LLVMContextRef C = LLVMOrcThreadSafeContextGetContext(sb->ctx);
  sb->M = LLVMModuleCreateWithNameInContext("kjit", C);
  if (kc_prepare_module(sb->M, &err) != 0 ||
      (fastmath && kc_link_ir(sb->M, KC_FASTMATH_IR, &err) != 0)) {
    snprintf(errbuf, errsz, "kjit: %s", err ? err : "LLVM error");
    free(err);
    return -1;
  }
  return 0;
}

/* "name" or "lib.name" of the C function at idx, as a script reaches it
** (a global, or a field of a loaded library), or NULL. For messages. */
static const char *cfunc_name(lua_State *L, int idx, char *buf, size_t n) {
  idx = lua_absindex(L, idx);
  int found = 0;
  luaL_checkstack(L, 6, NULL);
  /* (each loop's step pops the value: a found one leaves its key on the stack) */
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  for (lua_pushnil(L); !found && lua_next(L, -2); lua_pop(L, 1))
    if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, idx)) {
      snprintf(buf, n, "%s", lua_tostring(L, -2));
      found = 1;
    }
  lua_pop(L, found ? 2 : 1);
  if (found) return buf;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  for (lua_pushnil(L); !found && lua_next(L, -2); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TTABLE) continue;
    for (lua_pushnil(L); !found && lua_next(L, -2); lua_pop(L, 1))
      if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, idx)) {
        snprintf(buf, n, "%s.%s", lua_tostring(L, -4), lua_tostring(L, -2));
        found = 1;
      }
    if (found) lua_pop(L, 1);   /* the library's key in it */
  }
  lua_pop(L, found ? 2 : 1);
  return found ? buf : NULL;
}

/* Why code bound to this process (kck_process_bound's why) cannot leave it,
** as the end of a sentence "this function ..."; ref: the C function's
** registry reference (KCK_CFUNCTION), to name it. */
static void process_bound_text(lua_State *L, int why, int ref, char *out, size_t n) {
  static const char *const whys[] = {
    [KCK_LIVE_TABLE] = "uses a table upvalue or global that compiled code writes into (read "
                       "live), a value of this process that exported code cannot take along "
                       "(pass the table as an argument, or use arrays)",
    [KCK_UPVALUE] = "assigns an upvalue, a variable of this process that exported code "
                    "cannot take along (pass the value in and return the new one)",
    [KCK_FUNCTION] = "uses a Lua function as a value (not only calls it), a value of this "
                     "process that exported code cannot take along",
    [KCK_LAYOUT] = "makes an array of records, whose layout compiled code knows by this "
                   "process's number for it (make the array outside and pass it in)",
    [KCK_CALLVALUE] = "calls a function value through a Lua function of this process "
                      "that exported code cannot take along (call functions it can "
                      "compile, by name)",
    [KCK_CFUNCTION] = NULL,   /* below: it names the function */
    [KCK_FROZEN_TABLE] = "indexes a table upvalue or global with a computed key, a value "
                         "of this process that exported code cannot take along (pass the "
                         "table as an argument)",
    [KCK_CLOSURE] = "makes a function literal that escapes (stored in a table, returned "
                    "or passed on): a real Lua closure of this process's function, which "
                    "exported code cannot take along",
    [KCK_FROZEN_ARRAY] = "uses a kjit array upvalue or global, memory of this process that "
                         "exported code cannot take along (pass the array as an argument)",
  };
  if (why != KCK_CFUNCTION) {
    snprintf(out, n, "%s", why > 0 && why <= KCK_FROZEN_ARRAY && whys[why] ? whys[why]
                                                                     : "holds a value of this process");
    return;
  }
  /* pairs, next, pcall, setmetatable, utf8.char...: compiled code calls them
  ** through the Lua state, holding a reference to this process's function */
  char name[96];
  const char *nm = NULL;
  int tab = 0;
  if (ref) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    tab = lua_istable(L, -1);
    if (lua_iscfunction(L, -1)) nm = cfunc_name(L, -1, name, sizeof name);
    lua_pop(L, 1);
  }
  if (tab)
    snprintf(out, n, "calls a table with __call: its metamethod runs in this process's Lua "
             "state, which exported code cannot take along (call a function it can compile)");
  else
    snprintf(out, n, "calls %s%s, which kjit does not compile: compiled code calls it through "
             "this process's Lua state, which exported code cannot take along (call it outside "
             "the exported function and pass in what it gives%s)",
             nm ? nm : "a C function", nm ? " (a C function)" : "",
             nm && (!strcmp(nm, "pairs") || !strcmp(nm, "next"))
                 ? ", or loop over arrays with a numeric for" : "");
}

/* The driver's hook once typing is done (driver.h): the key from the
** typed IR (host/cache_key.c), then the cache; a hit loads the code
** without LLVM and restores what the code generator would have told the
** dispatcher (the payload's extra bytes: calls, then the parallel notes);
** a miss makes the LLVM module the code generator fills. */
static int cache_typed(void *ud, KtySession *T, LLVMContextRef *C, LLVMModuleRef *M) {
  CacheCtx *cc = ud;
  Session *S = &cc->sb->S;
  if (cc->exporting) {
    const char *chunk;
    int line, ref;
    int why = kck_process_bound(T, &chunk, &line, &ref);
    if (why) {
      char text[400];
      process_bound_text(T->L, why, ref, text, sizeof text);
      snprintf(T->err, sizeof T->err, "%.60s:%d: f:export: this function %s",
               chunk ? chunk : "?", line, text);
      return -1;
    }
    cc->nlayouts = kck_layouts(T, cc->layouts, 16);
    if (cc->nlayouts > 16) {
      snprintf(T->err, sizeof T->err, "f:export: this function makes arrays of %d record "
               "layouts; exported code carries 16 at most", cc->nlayouts);
      return -1;
    }
    goto make_module;
  }
  char head[1536];
  snprintf(head, sizeof head, "%s\nhost %s\nopt %d\nboundscheck=%d fastmath=%d parallel=%d nopoll=%d",
           kcache_build_id(), kcache_host_id(), cc->o->opt, cc->o->boundscheck,
           cc->o->fastmath, cc->o->parallel, getenv("KJIT_BENCH_NOPOLL") != NULL);
  size_t len = 0;
  int local = 0;
  char *key = kck_key(T, head, &len, &local);
  if (local) {
    /* code holding a reference of this process (pairs, pcall, a closure
    ** that escapes, a table it writes into...): its key has this process's
    ** salt, so no other process can ever hit it. It stays off the disk
    ** (a file per run otherwise: the directory grew without end) */
    free(key);
    key = NULL;
    if (__atomic_load_n(&cache_load_only, __ATOMIC_ACQUIRE)) {
      const char *chunk;
      int line = 0, ref;
      chunk = NULL;
      kck_process_bound(T, &chunk, &line, &ref);
      char because[256];
      snprintf(because, sizeof because, "%.60s:%d: the code holds a value of this process (a C "
               "function such as pairs or pcall, a closure...), so it is compiled in each process, "
               "never kept on disk", chunk ? chunk : "?", line);
      load_only_error(T->err, sizeof T->err, because);
      return -1;
    }
  }
  if (key) {
    cc->key = ka_alloc(&S->arena, len);
    if (cc->key) memcpy(cc->key, key, len);
    cc->keylen = len;
    free(key);
  }
  if (cc->key) {
    void *extra = NULL;
    size_t xl = 0;
    KCpuCode *code = kcache_cpu_load(cc->key, cc->keylen, &cc->addr, &extra, &xl);
    if (code && xl >= 4 && xl - 4 < sizeof S->parnotes) {
      int32_t calls;
      memcpy(&calls, extra, 4);
      cc->js->code = code;   /* the session frees it on an error */
      cc->hit = 1;
      cc->calls = calls;
      memcpy(S->parnotes, (char *)extra + 4, xl - 4);
      S->parnotes[xl - 4] = 0;
      S->nparnotes = (int)(xl - 4);
      free(extra);
      return 1;
    }
    kc_free(code);
    free(extra);
  }
  if (__atomic_load_n(&cache_load_only, __ATOMIC_ACQUIRE)) {
    load_only_error(T->err, sizeof T->err, "the process that compiles it must use the same "
                    "cache directory (a file system every process sees) and the same kjit build");
    return -1;
  }
make_module:   /* (f:export compiles even where loading only: its bytes are the point) */
  if (new_cpu_module(cc->sb, cc->o->fastmath, T->err, sizeof T->err)) return -1;
  *C = LLVMOrcThreadSafeContextGetContext(cc->sb->ctx);
  *M = cc->sb->M;
  return 0;
}

/* f:export's output: the payload (backend/cache.h's CPU payload whose
** extra bytes describe the specialization: put_spec), owned by a userdata
** on the stack so that an error leaks nothing. */
typedef struct ExportBox { void *p; size_t n; } ExportBox;
static void put_spec(KexpW *w, const JitSpec *js, const int64_t *keys, const char *where);

static JitSpec *compile_spec_ex(lua_State *L, JitObj *o, int objidx, const uint8_t *sig,
                                int nsig, int argbase, int want_text, const int64_t *reckeys,
                                ExportBox *ex, int tiered);

/* Compiles the function (jit object at 1, Lua function in its user value)
** for the signature sig[0..nsig). Returns the new spec (already linked in
** the object's list). Raises Lua errors. tiered: a call's compile, which
** may start at the first tier (tier_up); the others (f:compile, f:native,
** the C API, callees run through values, inspect's text) are full tier. */
static JitSpec *compile_spec(lua_State *L, JitObj *o, int objidx, const uint8_t *sig,
                             int nsig, int argbase, int want_text, const int64_t *reckeys,
                             int tiered) {
  return compile_spec_ex(L, o, objidx, sig, nsig, argbase, want_text, reckeys, NULL, tiered);
}

/* "(f64[:], i64)" of a dispatcher signature, pushed. */
static void push_sig_text(lua_State *L, const uint8_t *sig, const int64_t *keys, int n);

/* The same; with ex (f:export), compiled for export: no disk cache, the
** payload in ex. */
static JitSpec *compile_spec_ex(lua_State *L, JitObj *o, int objidx, const uint8_t *sig,
                                int nsig, int argbase, int want_text, const int64_t *reckeys,
                                ExportBox *ex, int tiered) {
  if (o->loaded) {   /* kjit.load's: nothing to compile from */
    push_sig_text(L, sig, reckeys, nsig);
    push_sig_text(L, o->specs->sig, o->specs->fnkey, o->specs->nsig);
    luaL_error(L, "kjit: this function was loaded from exported code, compiled for %s only: "
               "it cannot compile for %s", lua_tostring(L, -1), lua_tostring(L, -2));
  }
  double t0 = k_now_ms();
  register_runtime();
  const int obj = lua_absindex(L, objidx);   /* (a new name: a parameter assigned before setjmp draws -Wclobbered) */
  SessionBox *sb = ks_push_session(L, o->boundscheck, o->fastmath, o->opt);
  int sbidx = lua_gettop(L);
  Session *S = &sb->S;
  S->parallel = o->parallel;
  JitSpec *js = ks_session_result(L, sb, sizeof *js, free_unlinked_spec);
  jmp_buf jb;
  S->jb = &jb;
  int top = lua_gettop(L);
  if (setjmp(jb)) {
    lua_settop(L, top);
    lua_pushstring(L, S->errmsg);
    ks_release_session(L, sb);
    lua_error(L);
  }
  Type args[KJIT_MAXARGS];
  for (int i = 0; i < nsig; i++) args[i] = sig_type(sig[i]);
  int64_t keys[KJIT_MAXARGS];   /* record arguments: their layouts */
  for (int i = 0; i < nsig; i++)
    keys[i] = SIG_ISREC(sig[i]) ? (reckeys ? reckeys[i] : SLOT_RECORD(kb_fast(L, argbase + i)))
              : sig[i] == SIG_DTYPE ? (reckeys ? reckeys[i] : kir_dtype_of(L, argbase + i)) : 0;
  rec_types(args, sig, keys, nsig);

  /* the disk cache looks at the typed IR first (cache_typed): a hit
  ** makes no LLVM module at all; inspect's recompiles want text, which the
  ** disk cache does not keep */
  int cached = (o->cache && !want_text) || ex;
  if (!want_text && !o->cache && !ex && __atomic_load_n(&cache_load_only, __ATOMIC_ACQUIRE)) {
    load_only_error(S->errmsg, sizeof S->errmsg,
                    "the function was made without {cache = true}");
    longjmp(jb, 1);
  }
  CacheCtx cc = { sb, o, js, NULL, 0, NULL, 0, 0, ex != NULL, { 0 }, 0 };
  if (!cached && new_cpu_module(sb, S->fastmath, S->errmsg, sizeof S->errmsg)) longjmp(jb, 1);
  char entry_name[64];
  snprintf(entry_name, sizeof entry_name, "kjit_entry_%lu", kc_unique_id());
  /* the driver (host/driver.c): bytecode -> IR -> types -> LLVM IR */
  KdrvOutput bc;
  lua_getiuservalue(L, obj, 1);
  KdrvInput in = { -1, nsig, args, argbase, &kcg_target_cpu,
                   sb->ctx ? LLVMOrcThreadSafeContextGetContext(sb->ctx) : NULL, sb->M,
                   entry_name, cached ? cache_typed : NULL, &cc, obj };
  kdrv_compile(S, &in, &bc);   /* errors raise through S->jb */
  lua_pop(L, 1);
  /* the code's references, released with it (free_spec), or with js
  ** where the compile fails from here (free_unlinked_spec): through the
  ** main thread, which outlives any coroutine that compiled this */
  js->refs = bc.refs;
  js->nrefs = bc.nrefs;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  js->L = lua_tothread(L, -1);
  lua_pop(L, 1);

  js->types = bc.types;
  js->parnotes = strdup(S->parnotes[0] ? S->parnotes : "no loops\n");
  if (js->parnotes == NULL) { snprintf(S->errmsg, sizeof S->errmsg, "not enough memory"); longjmp(jb, 1); }
  js->nargs = bc.nargs;
  js->nsig = nsig;
  memcpy(js->sig, sig, nsig);
  spec_reads(js);
  js->nret = bc.nret;
  js->dyncount = bc.dyncount;
  js->calls = cc.hit ? cc.calls : bc.calls;
  js->lua = bc.lua;
  for (int r = 0; r < js->nret; r++) {
    Type rt = bc.rets[r];
    js->rets[r] = rt.kind;
    js->rsub[r] = rt.sub;
    js->rnil[r] = rt.dtype;
    js->rndim[r] = rt.ndim;
    js->rview[r] = bc.rview[r];
    js->rrec[r] = rt.kind == T_BUF && rt.dtype == KJIT_RECORD ? krec_byid(rt.ref) : NULL;
    if (rt.kind == T_BUF) js->arrays = 1;
  }
  js->allocates = bc.allocates;
  if (js->allocates) js->arrays = 1;

  /* the first tier: a call's compile, not for the disk cache (which holds
  ** full-tier code only: {cache = true} compiles the full tier at once) */
  int first = !want_text && (tier_mode == TIER_FIRST ||
                             (tiered && o->tiered && tier_mode == TIER_ON));
  KCpuOptions co = { o->opt, want_text, want_text, first ? &js->warm : NULL };
  const char *names[1] = { entry_name };
  void *addr = cc.addr;
  char *err = NULL;
  LLVMModuleRef M = sb->M;
  LLVMOrcThreadSafeContextRef ctx = sb->ctx;
  sb->M = NULL; sb->ctx = NULL;     /* kc_compile owns them now */
  if (cc.hit) {
    /* loaded by cache_typed */
  } else if (ex) {
    KexpW w = { NULL, 0, 0, 0 };
    lua_getiuservalue(L, obj, 1);
    lua_Debug ar;
    lua_getinfo(L, ">S", &ar);
    char where[LUA_IDSIZE + 32];
    snprintf(where, sizeof where, "%s:%d", ar.short_src, ar.linedefined);
    put_spec(&w, js, keys, where);
    if (w.oom) { free(w.p); snprintf(S->errmsg, sizeof S->errmsg, "not enough memory"); longjmp(jb, 1); }
    js->code = kcache_cpu_build(ctx, M, o->opt, entry_name, w.p, w.n, &addr, &ex->p, &ex->n, &err);
    free(w.p);
    if (js->code && ex->p == NULL) {
      snprintf(S->errmsg, sizeof S->errmsg, "f:export: no object code could be made for this "
               "platform (kjit exports ELF objects only)");
      longjmp(jb, 1);
    }
    if (js->code) {   /* the layouts first: the loader needs them to link the object */
      KexpW lw = { NULL, 0, 0, 0 };
      kexp_put_layouts(&lw, cc.layouts, cc.nlayouts);
      kexp_put(&lw, ex->p, ex->n);
      free(ex->p);
      ex->p = lw.p;
      ex->n = lw.n;
      if (lw.oom) {
        free(lw.p);
        ex->p = NULL;
        snprintf(S->errmsg, sizeof S->errmsg, "not enough memory");
        longjmp(jb, 1);
      }
    }
  } else if (cached) {
    /* stored with the code: calls, then the parallel notes */
    size_t nl = (size_t)S->nparnotes < sizeof S->parnotes ? strlen(S->parnotes) : 0;
    char extra[4 + sizeof S->parnotes];
    int32_t calls = bc.calls;
    memcpy(extra, &calls, 4);
    memcpy(extra + 4, S->parnotes, nl);
    js->code = kcache_cpu_compile(ctx, M, o->opt, entry_name, cc.key, cc.keylen, extra, 4 + nl,
                                  &addr, &err);
  } else {
    js->code = kc_compile(ctx, M, &co, names, 1, &addr, want_text ? &js->ir : NULL,
                          want_text ? &js->asmtext : NULL, &err);
    js->tier1 = js->warm != NULL;
  }
  if (js->code == NULL) {
    snprintf(S->errmsg, sizeof S->errmsg, "kjit: LLVM failed to compile %s: %s",
             bc.chunkname, err ? err : "unknown error");
    free(err);
    longjmp(jb, 1);
  }
  js->entry = (KEntry)addr;
  js->noraise = kc_code_noraise(js->code);
  /* (js->L: the main thread, set above) */
  for (int i = 0; i < nsig; i++)
    if (sig[i] == SIG_FUNC) {
      lua_pushvalue(L, argbase + i);
      js->fnkey[i] = (int64_t)(intptr_t)lua_topointer(L, -1);
      js->fnref[i] = luaL_ref(L, LUA_REGISTRYINDEX);
    } else if (SIG_ISREC(sig[i]) || sig[i] == SIG_DTYPE) {
      js->fnkey[i] = keys[i];
    }
  sb->result = NULL;   /* owned by the jit object from here on */
  ks_release_session(L, sb);
  lua_settop(L, sbidx - 1);
  js->compile_ms = k_now_ms() - t0;
  js->next = o->specs;
  o->specs = js;
  o->nspecs++;
  if (o->parallel && !want_text && js->parnotes && strstr(js->parnotes, "loop: parallel") == NULL)
    warn_not_parallel(L, obj);
  return js;
}

/* ---- Calls -------------------------------------------------------------------------- */

/* Pushes result r of a call of js (anything but an array: those need the
** call's allocation list, push_array_result). */
static void push_result(lua_State *L, const JitSpec *js, const int64_t *rets, int r) {
  int kind = js->rets[r];
  if (kind == T_MAYBE) {
    int64_t tag = rets[KJIT_MAXRETS + r];
    if (tag == 0) {
      if (js->rnil[r]) lua_pushnil(L); else lua_pushboolean(L, 0);
      return;
    }
    kind = js->rsub[r];
    if (kind == T_NUMBER) kind = tag == 2 ? T_F64 : T_INT;   /* see cg_entry.c */
  } else if (kind == T_NUMBER) {
    kind = rets[KJIT_MAXRETS + r] ? T_F64 : T_INT;
  }
  switch (kind) {
  case T_LUA: {   /* a slot, or a number (cg_entry.c) */
    int64_t tag = rets[KJIT_MAXRETS + r];
    if (tag == 0) lua_pushvalue(L, (int)rets[r]);
    else if (tag == 1) lua_pushinteger(L, rets[r]);
    else { double d; memcpy(&d, &rets[r], 8); lua_pushnumber(L, d); }
    break;
  }
  case T_NIL: lua_pushnil(L); break;
  case T_INT: lua_pushinteger(L, rets[r]); break;
  case T_BOOL: lua_pushboolean(L, rets[r] != 0); break;
  default: { double d; memcpy(&d, &rets[r], 8); lua_pushnumber(L, d); break; }
  }
}

/* How many results a call of js gave: its returns' one count, or the
** count the call said (returns of different lengths). */
static int nresults_of(const JitSpec *js, const int64_t *rets) {
  if (!js->dyncount) return js->nret;
  int64_t n = rets[KJIT_RETCOUNT];
  return n < 0 ? 0 : n > js->nret ? js->nret : (int)n;
}

static int push_results(lua_State *L, const JitSpec *js, const int64_t *rets) {
  int n = nresults_of(js, rets);
  for (int r = 0; r < n; r++) push_result(L, js, rets, r);
  return n;
}

/* ---- Calls that make or return arrays ------------------------------------------------ */

/* The allocation list of a call (runtime/alloc.h) lives in a userdata
** whose __gc frees what is left in it. One per Lua state is kept in the
** registry and reused by call after call (a finalized userdata per call
** cost about 100 ns); a call made while another one uses it (a hook's, or
** a coroutine's, while compiled code runs) gets a new one on the stack.
** The call frees its blocks when it returns or fails; should a longjmp
** ever unwind a call past that (an error raised through compiled frames),
** the next call finds the list busy with an owner frame that is no longer
** on the C stack (at or below its own) and frees what was left then. */
#define ALLOC_METATABLE "kjit.alloclist"

typedef struct AllocBox {
  KAllocList list;
  const void *owner;   /* the frame of the call using it, or NULL */
} AllocBox;

static const char alloc_key = 0;   /* registry key of the state's AllocBox */

static int alloclist_gc(lua_State *L) {
  AllocBox *b = luaL_checkudata(L, 1, ALLOC_METATABLE);
  kjit_la_drop(L, &b->list);   /* (arrays made Lua values: their userdata own them) */
  kal_free_all(&b->list);
  return 0;
}

static AllocBox *push_allocbox(lua_State *L) {
  AllocBox *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->list.head.next = NULL;   /* nothing to free until kal_init */
  b->owner = NULL;
  if (kb_newmeta(L, ALLOC_METATABLE)) {
    lua_pushcfunction(L, alloclist_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, ALLOC_METATABLE);
    lua_setfield(L, -2, "__metatable");
    kb_regmeta(L, ALLOC_METATABLE);
  }
  lua_setmetatable(L, -2);
  kal_init(&b->list);
  return b;
}

/* Pushes the box a call whose frame is at `frame` allocates into. */
static AllocBox *take_allocbox(lua_State *L, const void *frame) {
  AllocBox *b;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &alloc_key) != LUA_TUSERDATA) {
    lua_pop(L, 1);
    b = push_allocbox(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &alloc_key);
  } else {
    b = lua_touserdata(L, -1);
    if (b->owner != NULL) {
      if ((uintptr_t)b->owner > (uintptr_t)frame) {   /* an enclosing call uses it */
        lua_pop(L, 1);
        b = push_allocbox(L);
      } else {
        kjit_la_drop(L, &b->list);
        kal_reset(&b->list);   /* left by a call that never returned */
      }
    }
  }
  b->owner = frame;
  return b;
}

/* The call that took b is done with it. */
static void give_allocbox(AllocBox *b) {
  kal_reset(&b->list);
  b->owner = NULL;
}

/* The blocks of the list that results live in, now userdata: where the
** block's elements were (old, bytes), its shape, where they are now
** (base) and the userdata's stack index. */
typedef struct Adopted {
  const char *old;
  int64_t bytes;
  int ndim;
  int64_t shape[KJIT_MAXDIMS];
  char *base;
  int idx;
  int records;   /* the userdata is an array of records (host/record.c) */
} Adopted;

/* Pushes a view over data, which lies in the memory of the array at idx
** (records or numbers), of records of layout rec or numbers of dtype dt. */
static void push_view_in(lua_State *L, int idx, int records, char *data, const KRecord *rec,
                         kjit_dtype dt, int nd, const int64_t *shape) {
  if (records) krec_push_view(L, idx, data, rec, (int)dt, nd, shape);
  else kb_push_view(L, idx, data, nd, shape);
}

/* Pushes returned array r: the argument itself when it is one (f(a) == a,
** as interpreted), a view of an argument or of an adopted block, or the
** adopted block itself. */
static void push_array_result(lua_State *L, const JitSpec *js, const int64_t *slots, int n,
                              int base, const int64_t *rets, int r, const Adopted *ad, int nad,
                              int anchors) {
  char *data = (char *)(intptr_t)rets[r];
  int nd = js->rndim[r];
  kjit_dtype dt = (kjit_dtype)js->rnil[r];
  int64_t shape[KJIT_MAXDIMS], size = 1;
  for (int d = 0; d < KJIT_MAXDIMS; d++) {
    shape[d] = d < nd ? rets[KJIT_RETDIMS + r * KJIT_MAXDIMS + d] : 1;
    size *= shape[d];
  }
  const KRecord *rec = js->rrec[r];   /* records: their layout's size, record views */
  int64_t es = rec ? rec->size : (int64_t)kjit_dtype_size(dt);
  int64_t bytes = size * es;
  for (int k = 0; k < nad; k++) {   /* memory made by this call */
    const Adopted *a = &ad[k];
    if (data < a->old || data > a->old + a->bytes || bytes > a->old + a->bytes - data) continue;
    int same = data == a->old && a->ndim == nd && !js->rview[r] && a->records == (rec != NULL);
    for (int d = 0; same && d < nd; d++) same = a->shape[d] == shape[d];
    if (same) lua_pushvalue(L, a->idx);
    else push_view_in(L, a->idx, a->records, a->base + (data - a->old), rec, dt, nd, shape);
    return;
  }
  if (anchors && rec == NULL) {   /* made a Lua value by compiled code (runtime/luaarray.c) */
    int na = (int)lua_rawlen(L, anchors);
    for (int pass = 0; pass < 2; pass++)
      for (int i = 1; i <= na; i++) {
        lua_rawgeti(L, anchors, i);
        const KBuffer *b = luaL_testudata(L, -1, KB_METATABLE);
        int64_t have = b ? b->size * (int64_t)kjit_dtype_size(b->dtype) : 0;
        lua_pushvalue(L, -1);
        int isview = lua_rawget(L, anchors) != LUA_TNIL;   /* (a view boxed: luaarray.c) */
        lua_pop(L, 1);
        int same = b && b->dtype == dt && b->data == data && b->ndim == nd && isview == js->rview[r];
        for (int d = 0; same && d < nd; d++) same = b->shape[d] == shape[d];
        if (pass == 0 && same) return;   /* (the userdata, pushed) */
        if (pass == 1 && b && b->dtype == dt && data >= b->data && data <= b->data + have &&
            bytes <= b->data + have - data) {
          push_view_in(L, lua_gettop(L), 0, data, NULL, dt, nd, shape);
          lua_remove(L, -2);
          return;
        }
        lua_pop(L, 1);
      }
  }
  for (int pass = js->rview[r]; pass < 2; pass++)   /* an exact argument first, then one holding it */
    for (int i = 0; i < n; i++) {
      if (js->sig[i] < SIG_BUF && !SIG_ISREC(js->sig[i])) continue;
      const KBuffer *b = (const KBuffer *)(intptr_t)slots[i];
      if (pass == 0) {
        if (b->dtype != dt || (rec && b->record != rec)) continue;
        int same = b->data == data && b->ndim == nd;
        for (int d = 0; same && d < nd; d++) same = b->shape[d] == shape[d];
        if (same) { lua_pushvalue(L, base + i); return; }
      } else {
        /* (a record's fields are views of other dtypes in its memory) */
        int64_t have = b->size * (b->record ? b->record->size : (int64_t)kjit_dtype_size(b->dtype));
        if (b->record == NULL && b->dtype != dt) continue;
        if (data >= b->data && data <= b->data + have && bytes <= b->data + have - data) {
          push_view_in(L, base + i, b->record != NULL, data, rec, dt, nd, shape);
          return;
        }
      }
    }
  /* a frozen array (an upvalue or a global), or a view of one (luaarray.c) */
  if (rec == NULL && kjit_la_push_pinned(L, data, (int32_t)dt, nd, shape, js->rview[r])) return;
  luaL_error(L, "kjit: internal error: a returned array whose memory is not known");
}

/* Returned arrays up to this size are copied into a kjit array the GC owns
** (one userdata, no finalizer), and their block freed; larger ones are
** adopted by a userdata over the block, without a copy (its guard frees
** the block: kal_release). */
#define ADOPT_BYTES ((int64_t)64 << 10)

/* The error record every dispatcher hands compiled code (call_arrays,
** call_spec, native_call0): no error yet, the C stack limit when the code
** makes compiled calls (calls), and kjit_rt_poll's context
** (runtime_poll.c). */
static inline void kerr_begin(lua_State *L, KErr *err, int calls) {
  err->kind = 0;
  err->stack_limit = calls ? krt_stack_limit() : 0;
  err->c = 0;
  err->msg = NULL;
  krt_poll_begin(L, err);
}

/* call_spec for a specialization that makes or returns arrays. */
static __attribute__((noinline)) int call_arrays(lua_State *L, const JitSpec *js, int64_t *slots,
                                                 int n, int base) {
  for (int i = n; i < js->nargs; i++) slots[i] = 0;
  int top0 = lua_gettop(L);
  luaL_checkstack(L, 2 * KJIT_MAXRETS + 8, "kjit results");
  int64_t rets[KJIT_RETSLOTS];
  AllocBox *box = js->allocates ? take_allocbox(L, rets) : NULL;
  KAllocList *l = box ? &box->list : NULL;
  KErr err;
  kerr_begin(L, &err, js->calls);
  KAllocList *prev = kal_enter(l);
  int32_t st = js->entry(slots, rets, &err);
  kal_leave(prev);
  if (st != 0) {
    if (box) { kjit_la_drop(L, l); give_allocbox(box); }
    krt_push_error(L, &err);
    return lua_error(L);
  }
  /* the blocks returned arrays live in become userdata (each once) */
  Adopted ad[KJIT_MAXRETS];
  int nad = 0;
  int64_t adopted_bytes = 0;
  for (int r = 0; r < js->nret && l; r++) {
    if (js->rets[r] != T_BUF) continue;
    char *data = (char *)(intptr_t)rets[r];
    KAllocBlock *b = kal_find(l, data, 0);
    if (b == NULL) continue;   /* an argument's memory, or adopted already */
    Adopted *a = &ad[nad++];
    a->old = (char *)b + KAL_HEADER;
    a->bytes = b->bytes;
    a->ndim = b->ndim;
    memcpy(a->shape, b->shape, sizeof a->shape);
    const KRecord *brec = kal_is_record(b->dtype) ? krec_byid(kal_record_id(b->dtype)) : NULL;
    a->records = brec != NULL;
    if (b->bytes <= ADOPT_BYTES) {   /* raises before the block leaves the list */
      KBuffer *nb = brec ? krec_push_new(L, brec, b->ndim, b->shape)
                         : kb_push_new(L, (kjit_dtype)b->dtype, b->ndim, b->shape, 0);
      memcpy(nb->data, a->old, (size_t)b->bytes);
      a->base = nb->data;
      kjit_rt_free((char *)a->old);   /* (a->old is only compared from here on) */
    } else {
      if (brec) krec_push_borrowed(L, (char *)a->old, brec, b->ndim, b->shape, kal_release, b);
      else kb_push_borrowed(L, (char *)a->old, (kjit_dtype)b->dtype, b->ndim, b->shape, kal_release, b);
      kal_unlink(b);   /* the userdata's guard owns it now */
      a->base = (char *)a->old;
      adopted_bytes += b->bytes;
    }
    a->idx = lua_gettop(L);
  }
  if (box) give_allocbox(box);   /* the scratch arrays left: freed as the call returns */
  /* arrays compiled code made Lua values (runtime/luaarray.c): a result
  ** that lives in one is that userdata, or a view of it */
  int anchors = kjit_la_push_anchors(L, l) ? lua_gettop(L) : 0;
  kjit_la_drop(L, l);
  int first = lua_gettop(L) + 1;
  for (int r = 0; r < js->nret; r++) {
    int kind = js->rets[r];
    if (kind == T_BUF) {
      push_array_result(L, js, slots, n, base, rets, r, ad, nad, anchors);
      continue;
    }
    push_result(L, js, rets, r);
  }
  /* the results where the list and the adopted userdata were */
  int nres = nresults_of(js, rets);
  for (int r = 0; r < nres; r++) lua_copy(L, first + r, top0 + 1 + r);
  lua_settop(L, top0 + nres);
  /* the GC does not see malloc'd bytes: it is told, so that it paces
  ** itself as for arrays made by kjit.zeros in Lua */
  if (adopted_bytes >= 1024 && lua_gc(L, LUA_GCISRUNNING))   /* (a step runs even when stopped) */
    lua_gc(L, LUA_GCSTEP, (int)(adopted_bytes >> 10 > 1 << 30 ? 1 << 30 : adopted_bytes >> 10));
  return nres;
}

/* Same signature; function arguments must also be the same functions. */
static int spec_matches(const JitSpec *s, const uint8_t *sig, int n, const int64_t *slots) {
  if (s->nsig != n) return 0;
  for (int i = 0; i < n; i++) {
    if (s->sig[i] != sig[i]) return 0;
    if (sig[i] == SIG_FUNC && slots && s->fnkey[i] != slots[i]) return 0;
    if (SIG_ISREC(sig[i]) && slots && s->fnkey[i] != SLOT_RECORD(slots[i])) return 0;
    if (sig[i] == SIG_DTYPE && slots && s->fnkey[i] != slots[i]) return 0;
  }
  return 1;
}

static JitSpec *find_spec(JitObj *o, const uint8_t *sig, int n, const int64_t *slots) {
  for (JitSpec *s = o->specs; s; s = s->next)
    if (spec_matches(s, sig, n, slots)) return s;
  return NULL;
}

/* KJIT_DISABLE_JIT set (and not "0"): calls of jit objects run their Lua
** function, interpreted, for debugging with ordinary Lua tools. Read once
** per process (kd_open). */
static int jit_disabled;   /* KJIT_DISABLE_JIT, read once (read_disable_jit) */
/* kls_on (the probe agreed: lua_stack.h) and not jit_disabled: one flag
** for the fast paths. Set by kd_open. */
static int direct_reads;

/* Runs js with the argument slots filled (slots has room for
** KJIT_MAXARGS + 1); pushes its results or raises its error. */
static int call_arrays(lua_State *L, const JitSpec *js, int64_t *slots, int n, int base);

/* The full-tier compile of js's kept module (see "Tiered compiles"): its
** entry replaces js's. If it fails (LLVM out of memory), js stays at the
** first tier, which computes the same. */
static void tier_up(JitSpec *js) {
  if (tier_mode == TIER_FIRST) return;
  KCpuSaved *s = js->warm;
  js->warm = NULL;
  char name[64];
  snprintf(name, sizeof name, "kjit_entry_%lu", kc_unique_id());
  const char *names[1] = { name };
  void *addr = NULL;
  char *err = NULL;
  KCpuCode *c = kc_tier_up(s, names, 1, &addr, &err);
  free(err);
  if (c == NULL) return;
  js->code1 = js->code;
  js->code = c;
  js->noraise = kc_code_noraise(c);
  js->entry = (KEntry)addr;
  js->tier1 = 0;
}

/* A first call that will likely run long compiles at full tier at once
** (see "Tiered compiles"): one given arrays of TIER_BIG_CALL elements or
** more in all, or an integer argument that large (a loop's bound). The
** first tier has no on-stack replacement, so such a call would run its
** first-tier code to the end: for a vectorizable loop 2 to 10 times the
** instructions (bench/tier_cost.sh), which outweighs the compile time the
** first tier saves (3 to 30 ms) from about a million elements on, and a
** loop over n elements may do n^2 work. Calls on small data (a warm-up, a
** test, a frame of a game) keep the cheap compile. */
#define TIER_BIG_CALL (1 << 16)
static int call_looks_long(const uint8_t *sig, const int64_t *slots, int n) {
  int64_t elems = 0;
  for (int i = 0; i < n; i++) {
    if (sig[i] == SIG_INT && (slots[i] >= TIER_BIG_CALL || slots[i] <= -TIER_BIG_CALL)) return 1;
    if (sig[i] >= SIG_BUF || SIG_ISREC(sig[i])) {
      const KBuffer *b = (const KBuffer *)(intptr_t)slots[i];
      if (b && (elems += b->size) >= TIER_BIG_CALL) return 1;
    }
  }
  return 0;
}

/* call_spec without the tier's test. */
K_INLINE int call_now(lua_State *L, const JitSpec *js, int64_t *slots, int n, int base) {
  if (js->arrays) return call_arrays(L, js, slots, n, base);   /* out of line */
  for (int i = n; i < js->nargs; i++) slots[i] = 0;
  int64_t rets[2 * KJIT_MAXRETS];
  KErr err;
  if (js->noraise) {   /* err is never read (at most given kind = 0), the status is 0 */
    js->entry(slots, rets, &err);
  } else {
    kerr_begin(L, &err, js->calls);
    if (js->entry(slots, rets, &err) != 0) {
      krt_push_error(L, &err);
      return lua_error(L);
    }
  }
  if (js->nret == 0) return 0;
  return push_results(L, js, rets);
}

/* call_spec for a first-tier specialization: tiers it up once its work
** is done, else runs it, counting the call and the polls it makes. */
static __attribute__((noinline)) int call_warm(lua_State *L, JitSpec *js, int64_t *slots, int n,
                                               int base) {
  if (js->work >= tier_after && tier_mode == TIER_ON) tier_up(js);
  if (js->warm == NULL) return call_now(L, js, slots, n, base);
  uint64_t p0 = krt_npolls;
  js->work++;   /* (a call that raises counts as one) */
  int r = call_now(L, js, slots, n, base);
  js->work += (int64_t)(krt_npolls - p0) * TIER_POLL_WORK;
  return r;
}

K_INLINE int call_spec(lua_State *L, const JitSpec *js, int64_t *slots, int n, int base) {
  if (__builtin_expect(js->warm != NULL, 0)) return call_warm(L, (JitSpec *)js, slots, n, base);
  return call_now(L, js, slots, n, base);
}

/* Does the jit object o (at objidx) run its function interpreted: a main
** chunk that host/chunkpolicy.c leaves to the interpreter? Asked once per
** object, at its first call or f:compile, and never for objects made to
** hold code ({cache = true}, {parallel = true}, kjit.load's). Until a
** specialization is compiled on request (f:native, f:export, f:inspect
** with a signature, the C API), its calls run the Lua function
** (run_interpreted) and f:compile compiles nothing. */
static int runs_interpreted(lua_State *L, JitObj *o, int objidx) {
  if (o->interp == 0) {
    o->interp = -1;
    if (!o->loaded && !o->dead && !o->cache && !o->parallel) {
      lua_getiuservalue(L, objidx, 1);
      if (kcp_runs_interpreted(L, -1)) o->interp = 1;
      lua_pop(L, 1);
    }
  }
  return o->interp > 0;
}

static int interpreted_done(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  return lua_gettop(L);
}

/* The call f(...) at stack index 1, arguments after it, run by the
** interpreter: the Lua function in f's place, called with every argument
** as given and giving all its results (a continuation, so that a yield
** inside it works as it does interpreted). */
static int run_interpreted(lua_State *L) {
  lua_getiuservalue(L, 1, 1);
  lua_replace(L, 1);
  lua_callk(L, lua_gettop(L) - 1, LUA_MULTRET, 0, interpreted_done);
  return lua_gettop(L);
}

/* f(...): the object's __call. Arguments start at stack index 2. A call
** whose arguments are exactly those of the last specialization used reads
** them once (read_args); any other classifies them, finds or compiles the
** specialization, and makes it the last one. */
static int jit_call_slow(lua_State *L);

/* Is the Lua function of the jit object at idx a vararg one? */
static int takes_varargs(lua_State *L, int idx) {
  lua_Debug ar;
  lua_getiuservalue(L, idx, 1);
  if (lua_type(L, -1) != LUA_TFUNCTION) { lua_pop(L, 1); return 0; }
  lua_getinfo(L, ">u", &ar);
  return ar.isvararg;
}

/* jit_call once js's arity matched: reads the n - 1 arguments from a + 1
** and runs js. Out of line, so that jit_call keeps no frame. */
static __attribute__((noinline)) int jit_call_run(lua_State *L, JitSpec *js,
                                                  const KlsStackValue *a, int n) {
  int64_t slots[KJIT_MAXARGS + 1];
  if (read_args_direct(js, a + 1, slots)) return call_spec(L, js, slots, n - 1, 2);
  return jit_call_slow(L);
}

static int jit_call(lua_State *L) {
  if (__atomic_load_n(&direct_reads, __ATOMIC_RELAXED)) {   /* the arguments read in place (lua_stack.h) */
    int n;
    const KlsStackValue *a = kls_args(L, &n);
    if (n >= 1 && a[0].val.tt_ == KLS_UDATA) {
      size_t len;
      JitObj *o = kls_udata(&a[0].val, &len);
      JitSpec *js = len >= sizeof *o && o->tag == JIT_TAG(o) ? o->last : NULL;
      if (js != NULL && n - 1 == js->nsig) {
        /* no arguments, an entry that uses none of its parameters and
        ** cannot fail, no result (native_call0), full tier: jumped to */
        if (n == 1 && js->noraise == 2 && js->nret == 0 && js->warm == NULL)
          return js->entry(NULL, NULL, NULL);
        return jit_call_run(L, js, a, n);
      }
    }
  }
  return jit_call_slow(L);
}

/* jit_call without direct reads, or whose arguments are not exactly those
** of the last specialization: out of line, so that the fast path above
** keeps a small frame. */
static __attribute__((noinline)) int jit_call_slow(lua_State *L) {
  JitObj *o = lua_touserdata(L, 1);
  /* only reachable through the metatable, which is hidden (__metatable);
  ** the debug library could still pass something else: the keyed tag
  ** refuses it; checked for a full userdata of the size first, since the
  ** debug library can hand over a light one (debug.upvalueid) or a small
  ** one (this path is not the hot one) */
  if (o == NULL || lua_type(L, 1) != LUA_TUSERDATA || lua_rawlen(L, 1) < sizeof *o ||
      o->tag != JIT_TAG(o))
    return luaL_typeerror(L, 1, JIT_METATABLE);
  int n = lua_gettop(L) - 1;
  int64_t slots[KJIT_MAXARGS + 1];
  JitSpec *js = o->last;   /* NULL once finalized */
  if (js != NULL && n == js->nsig && !jit_disabled && read_args(L, js, 2, slots))
    return call_spec(L, js, slots, n, 2);
  if (jit_disabled && !o->loaded) {   /* KJIT_DISABLE_JIT: the Lua function itself runs */
    if (o->dead) return dead_error(L);
    lua_getiuservalue(L, 1, 1);
    lua_replace(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
  }
  if (o->specs == NULL && !o->dead && runs_interpreted(L, o, 1)) return run_interpreted(L);
  if (n > KJIT_MAXARGS) return luaL_error(L, "too many arguments to a kjit function (at most %d)", KJIT_MAXARGS);
  uint8_t sig[KJIT_MAXARGS];
  for (int i = 0; i < n; i++) sig[i] = classify(L, i + 2, i + 1, &slots[i]);
  /* trailing nils do not change the specialization, except of a vararg
  ** function, where select('#', ...) counts them */
  if (n > 0 && sig[n - 1] == SIG_NIL && !o->loaded && !takes_varargs(L, 1))
    while (n > 0 && sig[n - 1] == SIG_NIL) n--;
  if (js == NULL || !spec_matches(js, sig, n, slots)) {
    js = find_spec(o, sig, n, slots);
    if (js == NULL) {
      /* a finalized object has no specializations left: it ends here */
      if (o->dead) return dead_error(L);
      js = compile_spec(L, o, 1, sig, n, 2, 0, NULL, !call_looks_long(sig, slots, n));
    }
    o->last = js;
  }
  return call_spec(L, js, slots, n, 2);
}

/* ---- The direct form: f:native(sig) -------------------------------------------------- */

/* A native closure's only upvalue: a full userdata whose user value is the
** jit object, which keeps the specialization alive (specializations live
** as long as their object, at the same address: see jit_inspect). Only
** the debug library can replace it (debug.setupvalue): the keyed tag (as
** arrays', buffer.h) refuses anything else that lua_touserdata accepts,
** without a second API call. (Lua scripts see no light userdata, and a
** full one smaller than 8 bytes is read within its allocation's header
** slack: never a fault.) */
typedef struct NativeBox {
  uint64_t tag;                  /* first: the one field read before it is checked */
  JitObj *o;
  JitSpec *js;
} NativeBox;
#define NATIVE_TAG(nb) (KB_TAG(nb) ^ 0x6e61746976650000u)
/* The box of a specialization without arguments (native_call0): another
** tag, so that native_call0 needs no look at js to know its arity, and a
** box moved from another native function (debug.setupvalue) takes the
** slow route. */
#define NATIVE0_TAG(nb) (KB_TAG(nb) ^ 0x6e61746976300000u)

/* A plain C function bound to one specialization: no __call, no search.
** Arguments of any other types, or count, take f's ordinary route (and
** get what f(...) gives them). */
static int native_slow(lua_State *L);
static int native_call(lua_State *L) {
  if (__atomic_load_n(&direct_reads, __ATOMIC_RELAXED)) {   /* the box and the arguments read in place (lua_stack.h) */
    const NativeBox *nb = kls_upvalue1_udata(L, sizeof *nb);
    if (nb != NULL && nb->tag == NATIVE_TAG(nb)) {
      const JitSpec *js = nb->js;
      int n;
      const KlsStackValue *a = kls_args(L, &n);
      int64_t slots[KJIT_MAXARGS + 1];
      /* dead first: a collected jit object's specializations are freed */
      if (!nb->o->dead && !js->retired && n == js->nsig && read_args_direct(js, a, slots))
        return call_spec(L, js, slots, n, 1);
    }
  }
  return native_slow(L);
}

/* Is js one for native_call0: no arguments (none in the signature, none
** read by the entry), and no arrays made or returned (call_arrays)? */
static int native0_ok(const JitSpec *js) {
  return js->nsig == 0 && js->nargs == 0 && !js->arrays;
}

/* call_spec's ends, out of line for native_call0's small frame. */
static __attribute__((noinline)) int raise_err(lua_State *L, const KErr *err) {
  krt_push_error(L, err);
  return lua_error(L);
}
static __attribute__((noinline)) int push_results_ool(lua_State *L, const JitSpec *js,
                                                      const int64_t *rets) {
  return push_results(L, js, rets);
}

/* native_call0's run of js: out of line, so that native_call0 itself
** keeps no frame (its paths are tail calls). */
static __attribute__((noinline)) int native0_run(lua_State *L, const JitSpec *js) {
  int64_t rets[2 * KJIT_MAXRETS];
  KErr err;
  /* (the entry reads no slot: it is given rets, not read either) */
  if (js->noraise) {   /* no KErr set-up, no status (kc_code_noraise) */
    js->entry(rets, rets, &err);
  } else {
    kerr_begin(L, &err, js->calls);
    if (js->entry(rets, rets, &err) != 0) return raise_err(L, &err);
  }
  if (js->nret == 0) return 0;
  return push_results_ool(L, js, rets);
}

/* native_call for a specialization of native0_ok: a call with no
** arguments runs it without the argument loop, the slots or the arrays'
** test, in a smaller frame (a quarter of the C function's instructions
** fewer: issue 23). The closure is always jit_native's (one upvalue, never
** a light C function: see kls_closure_upvalue1_udata); its upvalue is
** checked as native_call's is, and only a box tagged NATIVE0_TAG (made
** for a native0_ok specialization) is run here. An entry that uses none
** of its parameters and cannot fail (kc_code_noraise 2: no check, poll,
** call or Lua value left in it) and gives no result is jumped to with
** none: its status, 0, is the count of its results. */
static int native_call0(lua_State *L) {
  if (__atomic_load_n(&direct_reads, __ATOMIC_RELAXED)) {
    const NativeBox *nb = kls_closure_upvalue1_udata(L, sizeof *nb);
    if (nb != NULL && nb->tag == NATIVE0_TAG(nb) && kls_noargs(L) && !nb->o->dead &&
        !nb->js->retired) {
      const JitSpec *js = nb->js;
      if (js->noraise == 2 && js->nret == 0) return js->entry(NULL, NULL, NULL);
      return native0_run(L, js);
    }
  }
  return native_slow(L);
}

/* native_call without direct reads, or whose arguments are not exactly
** the specialization's: out of line, so that the fast path above keeps a
** small frame. */
static __attribute__((noinline)) int native_slow(lua_State *L) {
  const NativeBox *nb = lua_touserdata(L, lua_upvalueindex(1));
  /* a full userdata of the box's size first: debug.setupvalue can put a
  ** light or a small one there */
  if (nb == NULL || lua_type(L, lua_upvalueindex(1)) != LUA_TUSERDATA ||
      lua_rawlen(L, lua_upvalueindex(1)) < sizeof *nb ||
      (nb->tag != NATIVE_TAG(nb) && nb->tag != NATIVE0_TAG(nb)))
    return luaL_error(L, "kjit: a native function whose upvalue was replaced");
  const JitSpec *js = nb->js;
  int64_t slots[KJIT_MAXARGS + 1];
  if (!nb->o->dead && !js->retired && lua_gettop(L) == js->nsig && !jit_disabled &&
      read_args(L, js, 1, slots))
    return call_spec(L, js, slots, js->nsig, 1);
  /* (a retired specialization: the object's own route, which compiles it anew) */
  lua_getiuservalue(L, lua_upvalueindex(1), 1);   /* the jit object */
  lua_insert(L, 1);
  return jit_call(L);
}

/* ---- Signatures from text: f:compile("f64(f32[:], i64)") --------------------------- */

/* The dispatcher's code for an argument type (the inverse of sig_type). */
static uint8_t sig_code(Type t) {
  switch (t.kind) {
  case T_BOOL: return SIG_BOOL;
  case T_INT: return SIG_INT;
  case T_F64: return SIG_FLOAT;
  case T_BUF:
    if (t.dtype == KJIT_RECORD) return (uint8_t)(SIG_REC + t.ndim);
    return (uint8_t)SIG_BUFCODE(t.dtype, t.ndim);
  default: return SIG_NIL;
  }
}

/* The signature text read into ks, args, ret and has_ret, or its error raised. */
static void parse_sig_text(lua_State *L, const char *text, KSig *ks, Type *args, Type *ret,
                           int *has_ret) {
  char err[256];
  if (ksig_parse(text, KSIG_JIT, ks, err, sizeof err) != 0 ||
      ksig_types(ks, KSIG_JIT, args, ret, has_ret, err, sizeof err) != 0)
    luaL_error(L, "bad signature '%s': %s", text, err);
}

/* f:compile(sig) and f:native(sig): the specialization for the text at
** index 2 (compiled now if new), read by the one signature grammar
** (host/signature.c), its declared result checked; made the last one. */
static JitSpec *spec_for_text(lua_State *L) {
  JitObj *o = luaL_checkudata(L, 1, JIT_METATABLE);
  if (o->dead) dead_error(L);
  const char *text = luaL_checkstring(L, 2);
  KSig ks;
  Type args[KJIT_MAXARGS], ret;
  int has_ret;
  parse_sig_text(L, text, &ks, args, &ret, &has_ret);
  uint8_t sig[KJIT_MAXARGS];
  int n = ks.nargs;
  for (int i = 0; i < n; i++) sig[i] = sig_code(args[i]);
  /* records: each `record` of the text takes the next layout given after
  ** it, f:compile("void(record[:], f64)", P) */
  int64_t keys[KJIT_MAXARGS];
  int nrec = 0;
  for (int i = 0; i < n; i++) {
    keys[i] = 0;
    if (!SIG_ISREC(sig[i])) continue;
    const KRecord *r = krec_test(L, 3 + nrec);
    if (r == NULL)
      luaL_error(L, "bad signature '%s': argument #%d is a record: give its layout (a "
                 "kjit.struct) as argument #%d of compile", text, i + 1, 3 + nrec - 1);
    keys[i] = (int64_t)(intptr_t)r;
    nrec++;
  }
  JitSpec *js = NULL;
  for (JitSpec *s = o->specs; s && js == NULL; s = s->next) {
    int same = spec_matches(s, sig, n, NULL);
    for (int i = 0; same && i < n; i++) same = !SIG_ISREC(sig[i]) || s->fnkey[i] == keys[i];
    if (same) js = s;
  }
  if (js == NULL) js = compile_spec(L, o, 1, sig, n, 0, 0, keys, 0);
  else if (js->warm) tier_up(js);   /* f:native and the C API run the full tier */
  /* check the declared return type, if any */
  if (has_ret) {
    if (ret.kind == T_NIL) {
      if (js->nret != 0) luaL_error(L, "signature '%s' says no result, but the function returns %d", text, js->nret);
    } else if (js->nret < 1 || js->rets[0] != ret.kind) {
      char tb[32];
      luaL_error(L, "signature '%s' declares result %s, but the function's inferred types are:\n%s",
                        text, ks.ret.ndim ? kty_name(ret, tb, sizeof tb) : ks.ret.name,
                        js->types ? js->types : "?");
    }
  }
  o->last = js;
  return js;
}

/* f:compile(sig) that compiles whatever the chunk policy says (f:inspect's
** compile); returns f. */
static int jit_compile_code(lua_State *L) {
  spec_for_text(L);
  lua_settop(L, 1);
  return 1;
}

/* f:compile(sig): compiles eagerly, except a main chunk left to the
** interpreter (runs_interpreted), whose signature is only read; returns f. */
static int jit_compile(lua_State *L) {
  JitObj *o = luaL_checkudata(L, 1, JIT_METATABLE);
  if (o->dead || o->specs != NULL || !runs_interpreted(L, o, 1)) return jit_compile_code(L);
  KSig ks;
  Type args[KJIT_MAXARGS], ret;
  int has_ret;
  parse_sig_text(L, luaL_checkstring(L, 2), &ks, args, &ret, &has_ret);
  lua_settop(L, 1);
  return 1;
}

/* The native function of specialization js of the jit object at objidx. */
static void push_native(lua_State *L, int objidx, JitSpec *js) {
  objidx = lua_absindex(L, objidx);
  NativeBox *nb = lua_newuserdatauv(L, sizeof *nb, 1);
  nb->o = lua_touserdata(L, objidx);
  nb->js = js;
  nb->tag = native0_ok(js) ? NATIVE0_TAG(nb) : NATIVE_TAG(nb);
  lua_pushvalue(L, objidx);
  lua_setiuservalue(L, -2, 1);
  lua_pushcclosure(L, native0_ok(js) ? native_call0 : native_call, 1);
}

/* f:native(sig): a C function bound to that specialization (native_call). */
static int jit_native(lua_State *L) {
  JitSpec *js = spec_for_text(L);
  push_native(L, 1, js);
  return 1;
}

/* For host/callval.c (jit.h says what). */
const void *kd_native_direct(lua_State *L, int idx) {
  if (lua_tocfunction(L, idx) != native_call && lua_tocfunction(L, idx) != native_call0) return NULL;
  lua_getupvalue(L, idx, 1);
  const NativeBox *nb = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (nb == NULL || (nb->tag != NATIVE_TAG(nb) && nb->tag != NATIVE0_TAG(nb))) return NULL;
  const JitSpec *js = nb->js;
  /* retired code (kd_retire_readers) and freed code are never handed out,
  ** whatever the caches still hold (native_call checks the same) */
  if (js->retired || nb->o->dead) return NULL;
  /* what makes or returns arrays needs call_arrays' list; functions as
  ** arguments are keyed by identity (callval.c does not key on them) */
  if (js->arrays || !js->fast) return NULL;
  for (int i = 0; i < js->nsig; i++)
    if (js->sig[i] == SIG_CFUNC || SIG_ISREC(js->sig[i]) || js->sig[i] == SIG_DTYPE) return NULL;
  return js;
}

/* The position of the call at site (a trampoline: its call stands on its
** last active line), as luaL_where gives it, pushed. */
static void push_site_where(lua_State *L, int32_t site) {
  lua_Debug ar;
  lua_rawgeti(L, LUA_REGISTRYINDEX, site);
  if (lua_type(L, -1) != LUA_TFUNCTION || !lua_getinfo(L, ">SL", &ar)) {
    lua_pushliteral(L, "");
    return;
  }
  lua_Integer line = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    if (lua_isinteger(L, -1) && lua_tointeger(L, -1) > line) line = lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  if (line > 0) lua_pushfstring(L, "%s:%d: ", ar.short_src, (int)line);
  else lua_pushliteral(L, "");
}

__attribute__((noinline)) int kd_direct_error(lua_State *L, const KErr *err, int32_t site) {
  if (err->kind == KE_USER && err->c > 0) {
    /* error(msg, level): level 2 is the call's own line (no Lua frame
    ** stands for it here); higher ones the frames above this C function */
    if (err->c == 1) push_site_where(L, site);
    else luaL_where(L, (int)err->c - 1);
    lua_pushstring(L, err->msg ? err->msg : "");
    lua_concat(L, 2);
  } else krt_push_error(L, err);
  return lua_error(L);
}

/* The arguments of a direct run, given as (tag, bits, slot), as the entry's
** slots. A number in a slot is read in place where the stack reads are on
** (lua_stack.h; the slot index is one of the running C function's). */
static inline void direct_args(lua_State *L, const JitSpec *js, const int32_t *tags,
                               const int64_t *bits, const int32_t *slotsin, int64_t *slots) {
  int kls = __atomic_load_n(&direct_reads, __ATOMIC_RELAXED);
  for (int i = 0; i < js->nsig; i++) {
    if (tags[i] != KLV_INSLOT) { slots[i] = tags[i] == KLV_NIL ? 0 : bits[i]; continue; }
    int idx = slotsin[i];
    const KlsTValue *v = kls ? &((const KlsState *)(void *)L)->ci->func[idx].val : NULL;
    switch (js->sig[i]) {
    case SIG_INT:
      slots[i] = v && v->tt_ == KLS_INT ? v->value_.i : lua_tointegerx(L, idx, NULL);
      break;
    case SIG_FLOAT: {
      double d = v && v->tt_ == KLS_FLT ? v->value_.n : lua_tonumberx(L, idx, NULL);
      memcpy(&slots[i], &d, 8);
      break;
    }
    case SIG_BOOL: slots[i] = lua_toboolean(L, idx); break;
    case SIG_NIL: slots[i] = 0; break;
    case SIG_TABLE: case SIG_STRING: slots[i] = idx; break;
    default: slots[i] = (int64_t)(intptr_t)kb_fast(L, idx); break;   /* an array (callval.c checked) */
    }
  }
  for (int i = js->nsig; i < js->nargs; i++) slots[i] = 0;
}

int kd_run_direct(lua_State *L, const void *spec, int32_t site, const int32_t *tags,
                  const int64_t *bits, const int32_t *slotsin) {
  const JitSpec *js = spec;
  int64_t slots[KJIT_MAXARGS + 1];
  direct_args(L, js, tags, bits, slotsin, slots);
  int64_t rets[2 * KJIT_MAXRETS];
  KErr err;
  int top = lua_gettop(L);
  kerr_begin(L, &err, js->calls);
  if (js->entry(slots, rets, &err) != 0) return kd_direct_error(L, &err, site);
  if (js->nret == 0) { lua_settop(L, top); return 0; }
  /* (a result of Lua type is in a slot the entry left above top) */
  int n = nresults_of(js, rets), first = lua_gettop(L) + 1;
  luaL_checkstack(L, n + LUA_MINSTACK, "kjit: too many results");
  for (int r = 0; r < n; r++) push_result(L, js, rets, r);
  for (int r = 0; r < n; r++) lua_copy(L, first + r, top + 1 + r);
  lua_settop(L, top + n);
  return n;
}

/* Result r of a direct run as a read's result (luavalue.c kjit_lv_take's
** rule): a number as its tag and bits, anything else into slot dst (a
** table's address in *out). Lua values the entry left in a slot of its
** own (above top) are copied from there. */
static int32_t direct_take(lua_State *L, const JitSpec *js, const int64_t *rets, int r,
                           int32_t dst, int64_t *out) {
  int kind = js->rets[r];
  int64_t tag = rets[KJIT_MAXRETS + r];
  if (kind == T_MAYBE) {
    if (tag == 0) {
      if (js->rnil[r]) lua_pushnil(L); else lua_pushboolean(L, 0);
      lua_replace(L, dst);
      *out = 0;
      return KLV_INSLOT;
    }
    kind = js->rsub[r];
    if (kind == T_NUMBER) kind = tag == 2 ? T_F64 : T_INT;
  } else if (kind == T_NUMBER) kind = tag ? T_F64 : T_INT;
  switch (kind) {
  case T_INT: *out = rets[r]; return KLV_INT;
  case T_F64: *out = rets[r]; return KLV_FLT;
  case T_LUA:
    if (tag == 1) { *out = rets[r]; return KLV_INT; }
    if (tag != 0) { *out = rets[r]; return KLV_FLT; }
    lua_pushvalue(L, (int)rets[r]);
    return kjit_lv_take(L, dst, out);
  default:   /* nil, booleans, other numbers (f32 ...): as pushed */
    push_result(L, js, rets, r);
    return kjit_lv_take(L, dst, out);
  }
}

int kd_run_direct_to(lua_State *L, const void *spec, int32_t site, int32_t *tags,
                     int64_t *bits, const int32_t *slotsin, int32_t nres, int32_t dst) {
  const JitSpec *js = spec;
  int64_t slots[KJIT_MAXARGS + 1];
  direct_args(L, js, tags, bits, slotsin, slots);
  int64_t rets[2 * KJIT_MAXRETS];
  KErr err;
  /* the top read and put back in place where the stack reads are on (the
  ** entry leaves its Lua results' slots above it; lua_gettop and
  ** lua_settop were a sixth of a small method's call) */
  int kls = __atomic_load_n(&direct_reads, __ATOMIC_RELAXED);
  const KlsState *ks = (const KlsState *)(void *)L;
  int top = kls ? (int)(ks->top - ks->ci->func) - 1 : lua_gettop(L);
  kerr_begin(L, &err, js->calls);
  if (js->entry(slots, rets, &err) != 0) return kd_direct_error(L, &err, site);
  int n = js->nret == 0 ? 0 : nresults_of(js, rets);
  /* (room for the one value pushed at a time: the entry's frame is closed,
  ** and the C function's LUA_MINSTACK stays above the slots it left) */
  for (int r = 0; r < nres; r++) {
    if (r < n) tags[r] = direct_take(L, js, rets, r, dst + r, &bits[r]);
    else {
      lua_pushnil(L);
      lua_replace(L, dst + r);
      tags[r] = KLV_INSLOT;
      bits[r] = 0;
    }
  }
  if (kls) kls_close(L, top + 1);   /* (lua_settop(L, top): nothing to close there) */
  else if (lua_gettop(L) != top) lua_settop(L, top);
  return nres;
}
int kd_native_site(const void *spec, int nargs, KlcFill *s) {
  const JitSpec *js = spec;
  if (js->nsig != nargs || js->nargs > KJIT_MAXARGS || js->dyncount || js->nret > KJIT_MAXRETS)
    return 0;
  for (int i = 0; i < js->nsig; i++)
    if (js->sig[i] != SIG_INT && js->sig[i] != SIG_FLOAT && js->sig[i] != SIG_TABLE) return 0;
  for (int r = 0; r < js->nret; r++) {
    switch (js->rets[r]) {
    case T_INT: s->rets[r] = KLC_RINT; break;
    case T_F64: s->rets[r] = KLC_RFLT; break;
    case T_NUMBER: s->rets[r] = KLC_RNUM; break;
    case T_LUA: s->rets[r] = KLC_RLUA; break;
    case T_MAYBE:   /* (push_result's reading of the entry's tag) */
      if (js->rsub[r] != T_INT && js->rsub[r] != T_F64 && js->rsub[r] != T_NUMBER) return 0;
      s->rets[r] = KLC_RMAYBE | (js->rnil[r] ? 0 : KLC_RFALSE) |
                   (js->rsub[r] == T_INT ? KLC_RINT : js->rsub[r] == T_F64 ? KLC_RFLT : KLC_RNUM);
      break;
    default: return 0;
    }
  }
  s->nparams = js->nargs;
  s->nret = js->nret;
  s->entryp = &js->entry;
  s->calls = js->calls;
  return 1;
}

int kd_native_for(lua_State *L, int objidx, int argbase, int n, int maxspecs) {
  objidx = lua_absindex(L, objidx);
  argbase = lua_absindex(L, argbase);
  JitObj *o = luaL_checkudata(L, objidx, JIT_METATABLE);
  if (jit_disabled || o->dead || o->loaded || n > KJIT_MAXARGS) return -1;
  uint8_t sig[KJIT_MAXARGS];
  int64_t slots[KJIT_MAXARGS + 1];
  for (int i = 0; i < n; i++) sig[i] = classify(L, argbase + i, i + 1, &slots[i]);
  if (n > 0 && sig[n - 1] == SIG_NIL && !takes_varargs(L, objidx))   /* as jit_call_slow */
    while (n > 0 && sig[n - 1] == SIG_NIL) n--;
  JitSpec *js = find_spec(o, sig, n, slots);
  if (js == NULL) {
    if (o->nspecs >= maxspecs) return -1;
    js = compile_spec(L, o, objidx, sig, n, argbase, 0, NULL, 0);
  } else if (js->warm) {
    tier_up(js);
  }
  o->last = js;
  push_native(L, objidx, js);
  return n;
}

/* f:inspect([what [, sig]]): "types", "llvm", "asm", "parallel", "ir" or
** "bytecode" of the last (or the given) specialization. */
static int jit_inspect(lua_State *L) {
  JitObj *o = luaL_checkudata(L, 1, JIT_METATABLE);
  if (o->dead) return dead_error(L);
  static const char *const whats[] = { "types", "llvm", "asm", "parallel", "ir", "bytecode",
                                        NULL };
  int what = luaL_checkoption(L, 2, "types", whats);
  JitSpec *js = o->last;
  if (!lua_isnoneornil(L, 3)) {
    lua_pushcfunction(L, jit_compile_code);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 3);
    lua_call(L, 2, 0);
    js = o->last;
  }
  if (js == NULL && o->interp > 0)
    return luaL_error(L, "nothing compiled: this main chunk runs interpreted (its loops call "
                      "functions that run interpreted: docs/guide/functions.md); "
                      "f:inspect(what, sig) compiles it");
  if (js == NULL) return luaL_error(L, "nothing compiled yet: call the function or use f:compile(sig) first");
  if (o->loaded && what != 0 && what != 3)
    return luaL_error(L, "inspect: exported code keeps only \"types\" and \"parallel\"");
  if (what == 0) { lua_pushstring(L, js->types ? js->types : ""); return 1; }
  if (what == 3) { lua_pushstring(L, js->parnotes ? js->parnotes : ""); return 1; }
  if (what == 4 || what == 5) {   /* typed again from the bytecode: no code generated */
    Type args[KJIT_MAXARGS];
    lua_getiuservalue(L, 1, 1);
    int fidx = lua_gettop(L);
    for (int i = 0; i < js->nsig; i++) {
      args[i] = sig_type(js->sig[i]);
      if (js->sig[i] == SIG_FUNC) lua_rawgeti(L, LUA_REGISTRYINDEX, js->fnref[i]);
      else lua_pushnil(L);
    }
    kdrv_text(L, fidx, js->nsig, args, fidx + 1, 0, what == 4 ? 0 : 1);
    return 1;
  }
  if (js->ir == NULL || js->asmtext == NULL) {
    /* recompile this signature, keeping the text this time */
    for (int i = 0; i < js->nsig; i++)
      if (js->sig[i] == SIG_FUNC)
        return luaL_error(L, "inspect: cannot recompile a specialization that takes functions");
    JitSpec *nj = compile_spec(L, o, 1, js->sig, js->nsig, 0, 1, js->fnkey, 0);
    /* the old one takes the new code and text, keeping its address (a
    ** native closure holds it: f:native); the new one, holding the old
    ** code now, goes (it is first in the list) */
    o->specs = nj->next;
    o->nspecs--;
#define SWAP(f) do { __typeof__(js->f) t_ = js->f; js->f = nj->f; nj->f = t_; } while (0)
    SWAP(entry); SWAP(code); SWAP(ir); SWAP(asmtext); SWAP(types); SWAP(parnotes);
    SWAP(compile_ms);
    SWAP(warm); SWAP(code1); SWAP(tier1); SWAP(work);   /* js: full tier now */
    SWAP(refs); SWAP(nrefs);   /* (each code's own references with it) */
#undef SWAP
    free_spec(nj);
    o->last = js;
  }
  lua_pushstring(L, what == 1 ? js->ir : js->asmtext);
  return 1;
}

static int jit_gc(lua_State *L) {
  JitObj *o = luaL_checkudata(L, 1, JIT_METATABLE);
  JitSpec *s = o->specs;
  while (s) { JitSpec *n = s->next; free_spec(s); s = n; }
  for (s = o->retired; s;) { JitSpec *n = s->next; free_spec(s); s = n; }
  o->specs = o->last = o->retired = NULL;
  o->nspecs = 0;
  o->dead = 1;
  return 0;
}

static int jit_export(lua_State *L);
static int jit_index(lua_State *L) {
  luaL_checkudata(L, 1, JIT_METATABLE);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "lua") == 0 || strcmp(k, "py_func") == 0) { lua_getiuservalue(L, 1, 1); return 1; }
  if (strcmp(k, "inspect") == 0) { lua_pushcfunction(L, jit_inspect); return 1; }
  if (strcmp(k, "compile") == 0) { lua_pushcfunction(L, jit_compile); return 1; }
  if (strcmp(k, "native") == 0) { lua_pushcfunction(L, jit_native); return 1; }
  if (strcmp(k, "export") == 0) { lua_pushcfunction(L, jit_export); return 1; }
  if (strcmp(k, "compile_ms") == 0) {   /* of the last specialization used */
    JitObj *o = lua_touserdata(L, 1);
    JitSpec *s = o->last ? o->last : o->specs;
    if (s) lua_pushnumber(L, s->compile_ms);
    else lua_pushnil(L);
    return 1;
  }
  if (strcmp(k, "tier") == 0) {   /* of the last specialization used: 1 or 2; 0: interpreted */
    JitObj *o = lua_touserdata(L, 1);
    JitSpec *s = o->last ? o->last : o->specs;
    if (s) lua_pushinteger(L, s->tier1 ? 1 : 2);
    else if (o->interp > 0) lua_pushinteger(L, 0);
    else lua_pushnil(L);
    return 1;
  }
  if (strcmp(k, "signatures") == 0) {
    JitObj *o = lua_touserdata(L, 1);
    lua_createtable(L, o->nspecs, 0);
    int i = 1;
    for (JitSpec *s = o->specs; s; s = s->next) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      Type t[KJIT_MAXARGS];
      for (int a = 0; a < s->nsig; a++) t[a] = sig_type(s->sig[a]);
      rec_types(t, s->sig, s->fnkey, s->nsig);
      sig_text(&b, t, s->nsig);
      luaL_pushresult(&b);
      lua_rawseti(L, -2, i++);
    }
    return 1;
  }
  return luaL_error(L, "kjit function has no field '%s'", k);
}

static int jit_tostring(lua_State *L) {
  JitObj *o = luaL_checkudata(L, 1, JIT_METATABLE);
  if (o->loaded && o->specs) {
    lua_getiuservalue(L, 1, 2);
    push_sig_text(L, o->specs->sig, o->specs->fnkey, o->specs->nsig);
    lua_pushfstring(L, "kjit.jit(loaded: %s for %s)", lua_tostring(L, -2), lua_tostring(L, -1));
    return 1;
  }
  lua_getiuservalue(L, 1, 1);
  lua_pushfstring(L, "kjit.jit(%s)", luaL_tolstring(L, -1, NULL));
  return 1;
}

static int l_nop(lua_State *L) { (void)L; return 0; }

/* kjit.testing.print_to_output: Lua 5.4's print (luaB_print: each value
** through luaL_tolstring, tabs between, a newline, a flush), writing to
** the io library's default output (io.output(), the registry's
** "_IO_output") instead of C's stdout, so that a test that sets
** io.output(tmpfile) gets print's and io.write's output in one file, in
** the order written. A C function, so that set as the global print it is
** what compiled code knows as print (ir_type.c builtin_of compares a C
** function with the current global). Tests only (tests/difffuzz/check.lua). */
static int l_print_to_output(lua_State *L) {
  int n = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_IO_output");
  luaL_Stream *p = luaL_testudata(L, -1, LUA_FILEHANDLE);
  FILE *f = p != NULL && p->closef != NULL ? p->f : stdout;   /* (closed: print's own) */
  for (int i = 1; i <= n; i++) {
    size_t l;
    const char *s = luaL_tolstring(L, i, &l);
    if (i > 1) fwrite("\t", 1, 1, f);
    fwrite(s, 1, l, f);
    lua_pop(L, 1);
  }
  fwrite("\n", 1, 1, f);
  fflush(f);
  return 0;
}

/* The second peer of the call benchmarks: a C function that reads its
** arguments as a hand-written binding would (luaL_checknumber,
** luaL_checkudata), and does nothing with them. */
static int l_reads(lua_State *L) {
  int n = lua_gettop(L);
  volatile double sink = 0;
  for (int i = 1; i <= n; i++) {
    if (lua_type(L, i) == LUA_TUSERDATA) sink += (double)((KBuffer *)luaL_checkudata(L, i, KB_METATABLE))->size;
    else sink += luaL_checknumber(L, i);
  }
  (void)sink;
  return 0;
}

/* kjit.jit(fn [, opts]) */
static int l_jit(lua_State *L) {
  if (lua_type(L, 1) == LUA_TUSERDATA && luaL_testudata(L, 1, JIT_METATABLE)) {
    if (lua_isnoneornil(L, 2)) { lua_settop(L, 1); return 1; }   /* as is */
    /* new options: a new object for the same function */
    lua_getiuservalue(L, 1, 1);
    lua_replace(L, 1);
  }
  if (lua_type(L, 1) == LUA_TTABLE)   /* Numba's decorator shape: @jit(parallel=True) */
    return luaL_error(L, "bad argument #1 to 'jit' (Lua function expected, got table; "
                      "the options come second: kjit.jit(fn, {parallel = true}))");
  if (lua_type(L, 1) != LUA_TFUNCTION || lua_iscfunction(L, 1)) {
    return luaL_error(L, "bad argument #1 to 'jit' (Lua function expected, got %s)",
                      lua_iscfunction(L, 1) ? "C function" : luaL_typename(L, 1));
  }
  int v[KO_JIT_N];
  kopt_read(L, 2, &kopt_jit, v);   /* host/options.c: names, types, defaults */
  JitObj *o = lua_newuserdatauv(L, sizeof *o, 1);
  memset(o, 0, sizeof *o);
  o->boundscheck = v[KO_JIT_BOUNDSCHECK];
  o->fastmath = v[KO_JIT_FASTMATH];
  o->opt = v[KO_JIT_OPT];
  o->cache = v[KO_JIT_CACHE];
  o->parallel = v[KO_JIT_PARALLEL];
  o->tiered = v[KO_JIT_TIERED];
  o->tag = JIT_TAG(o);
  luaL_setmetatable(L, JIT_METATABLE);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  return 1;
}

/* kjit._test_alloc_fail(n): the n-th allocation of compiled code from
** now on fails as if out of memory (0: none). Tests only. */
static int l_test_alloc_fail(lua_State *L) {
  kjit_rt_alloc_fail_after((long)luaL_checkinteger(L, 1));
  return 0;
}

/* kjit._alloc_stats([reset]): arrays made by compiled code alive now (not
** yet freed, adopted ones included), and the most alive at once since the
** last reset. Tests only. */
static int l_alloc_stats(lua_State *L) {
  long live, peak;
  kal_stats(&live, &peak, lua_toboolean(L, 1));
  lua_pushinteger(L, live);
  lua_pushinteger(L, peak);
  return 2;
}

static void read_disable_jit(void) {
  const char *e = getenv("KJIT_DISABLE_JIT");
  jit_disabled = e && *e && strcmp(e, "0") != 0;
  e = getenv("KJIT_TIER");   /* 0: full tier only; first: first tier only */
  if (e && strcmp(e, "0") == 0) tier_mode = TIER_OFF;
  else if (e && strcmp(e, "first") == 0) tier_mode = TIER_FIRST;
}

/* kjit.testing.tier_after([n]): the work (calls, polls x TIER_POLL_WORK)
** after which first-tier code is compiled at full tier; returns the old
** value. Tests only. */
static int l_tier_after(lua_State *L) {
  int64_t old = tier_after;
  if (!lua_isnoneornil(L, 1)) tier_after = luaL_checkinteger(L, 1);
  lua_pushinteger(L, old);
  return 1;
}

/* kjit.testing.noraise(f): kc_code_noraise of f's last specialization
** (0 it may fail, 1 it cannot, 2 nor does it use its parameters), or nil
** before any. Tests only: whether the dispatchers skip the KErr set-up. */
static int l_noraise(lua_State *L) {
  JitObj *o = luaL_checkudata(L, 1, JIT_METATABLE);
  if (o->last == NULL) return 0;
  lua_pushinteger(L, o->last->noraise);
  return 1;
}

/* kjit.testing.pipelines(): how many modules each IR pass list has
** optimized in this process, { o3 =, lua =, simple =, other =, tier1 = }
** (backend/cpu.c kc_optimize). Tests only: which list a compile ran. */
static int l_pipelines(lua_State *L) {
  static const char *const names[KC_NPIPES] = { "o3", "lua", "simple", "other", "tier1" };
  long n[KC_NPIPES];
  kc_pipeline_counts(n);
  lua_createtable(L, 0, KC_NPIPES);
  for (int i = 0; i < KC_NPIPES; i++) {
    lua_pushinteger(L, n[i]);
    lua_setfield(L, -2, names[i]);
  }
  return 1;
}

void kd_open(lua_State *L) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, read_disable_jit);
  if (kb_newmeta(L, JIT_METATABLE)) {   /* registered once complete (kb_regmeta) */
    static const luaL_Reg mt[] = {
      { "__gc", jit_gc }, { "__index", jit_index },
      { "__tostring", jit_tostring }, { NULL, NULL } };
    luaL_setfuncs(L, mt, 0);
    lua_pushcfunction(L, jit_call);   /* arrays are told by their tags: no upvalue */
    lua_setfield(L, -2, "__call");
    lua_pushliteral(L, JIT_METATABLE);    /* getmetatable(f) gives this name */
    lua_setfield(L, -2, "__metatable");
    kb_regmeta(L, JIT_METATABLE);
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_jit);
  lua_setfield(L, -2, "jit");
  /* may the call path read arguments from the stack? (lua_stack.c) */
  kls_probe(L);
  __atomic_store_n(&direct_reads, __atomic_load_n(&kls_on, __ATOMIC_RELAXED) &&
                   !jit_disabled, __ATOMIC_RELAXED);
  lua_pushstring(L, __atomic_load_n(&kls_status, __ATOMIC_RELAXED));
  lua_setfield(L, -2, "stack_reads");
  /* helpers for kjit's own benchmarks and tests, kept off the public
  ** table: require "kjit.testing" (package.loaded, no file) */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_newtable(L);
  lua_pushcfunction(L, l_nop);   /* an empty C function: the call benchmarks' peer */
  lua_setfield(L, -2, "nop");
  lua_pushcfunction(L, l_print_to_output);
  lua_setfield(L, -2, "print_to_output");
  lua_pushcfunction(L, l_reads);
  lua_setfield(L, -2, "reads");
  lua_pushcfunction(L, l_test_alloc_fail);
  lua_setfield(L, -2, "alloc_fail_after");
  lua_pushcfunction(L, l_alloc_stats);
  lua_setfield(L, -2, "alloc_stats");
  lua_pushcfunction(L, kcv_l_callees);   /* which Lua callees compile (host/callval.c) */
  lua_setfield(L, -2, "callees");
  lua_pushcfunction(L, kcp_l_interp_chunks);   /* main chunks left interpreted (host/chunkpolicy.c) */
  lua_setfield(L, -2, "interp_chunks");
  lua_pushcfunction(L, l_tier_after);
  lua_setfield(L, -2, "tier_after");
  lua_pushcfunction(L, l_noraise);
  lua_setfield(L, -2, "noraise");
  lua_pushcfunction(L, l_pipelines);
  lua_setfield(L, -2, "pipelines");
  lua_setfield(L, -2, "kjit.testing");
  lua_pop(L, 1);
  kcache_open(L);   /* kjit.cache_clear, cache_stats, cache_dir */
  kexp_open(L);     /* kjit.load */
}


/* ---- Exported code: f:export(sig), kjit.load (host/export.h) ------------------------ */

/* The extra bytes of an exported specialization: what the dispatcher
** keeps of a compile (JitSpec), the record layouts of its arguments, its
** types text, its parallel notes, and where the function was defined. */
static void put_spec(KexpW *w, const JitSpec *js, const int64_t *keys, const char *where) {
  uint32_t h[8] = { (uint32_t)js->nargs, (uint32_t)js->nsig, (uint32_t)js->nret,
                    (uint32_t)js->calls, (uint32_t)js->lua, (uint32_t)js->allocates,
                    (uint32_t)js->arrays, (uint32_t)js->dyncount };
  kexp_put(w, h, sizeof h);
  kexp_put(w, js->sig, (size_t)js->nsig);
  for (int i = 0; i < js->nsig; i++)
    if (SIG_ISREC(js->sig[i])) kexp_record(w, (const KRecord *)(intptr_t)keys[i]);
  kexp_put(w, js->rets, (size_t)js->nret);
  kexp_put(w, js->rsub, (size_t)js->nret);
  kexp_put(w, js->rnil, (size_t)js->nret);
  kexp_put(w, js->rndim, (size_t)js->nret);
  kexp_put(w, js->rview, (size_t)js->nret);
  for (int r = 0; r < js->nret; r++)   /* returned arrays of records: their layouts */
    if (js->rrec[r]) kexp_record(w, js->rrec[r]);
  kexp_str(w, js->types);
  kexp_str(w, js->parnotes);
  kexp_str(w, where);
}

/* Reads put_spec's bytes into js (malloc'd texts); *where malloc'd.
** Returns 0, or -1 (damaged). */
static int get_spec(KexpR *r, JitSpec *js, char **where) {
  const uint32_t *hp = kexp_get(r, 8 * 4);
  if (!hp) return -1;
  uint32_t h[8];
  memcpy(h, hp, sizeof h);
  if (h[0] > KJIT_MAXARGS || h[1] > KJIT_MAXARGS || h[2] > KJIT_MAXRETS) return -1;
  js->nargs = (int)h[0];
  js->nsig = (int)h[1];
  js->nret = (int)h[2];
  js->calls = (int)h[3];
  js->lua = (int)h[4];
  js->allocates = (int)h[5];
  js->arrays = (int)h[6];
  js->dyncount = h[7] != 0;   /* (0 in code exported before it existed) */
  const void *p = kexp_get(r, (size_t)js->nsig);
  if (p) memcpy(js->sig, p, (size_t)js->nsig);
  spec_reads(js);
  for (int i = 0; i < js->nsig && !r->bad; i++) {
    uint8_t c = js->sig[i];
    int valid = (c >= SIG_NIL && c <= SIG_FLOAT) || c == SIG_TABLE || SIG_ISREC(c) ||
                (c >= SIG_BUF && (c - SIG_BUF) / 4 < KJIT_NDTYPES);
    if (!valid) return -1;
    if (SIG_ISREC(c)) {
      const KRecord *rec = kexp_getrecord(r, 0);
      if (!rec) return -1;
      js->fnkey[i] = (int64_t)(intptr_t)rec;
    }
  }
  uint8_t *dst[5] = { js->rets, js->rsub, js->rnil, js->rndim, js->rview };
  for (int k = 0; k < 5; k++)
    if ((p = kexp_get(r, (size_t)js->nret))) memcpy(dst[k], p, (size_t)js->nret);
  for (int k = 0; k < js->nret && !r->bad; k++)   /* put_spec: returned records' layouts */
    if (js->rets[k] == T_BUF && js->rnil[k] == KJIT_RECORD && !(js->rrec[k] = kexp_getrecord(r, 0)))
      return -1;
  js->types = kexp_getstr(r);
  js->parnotes = kexp_getstr(r);
  *where = kexp_getstr(r);
  return r->bad || r->at != r->n ? -1 : 0;
}

static void push_sig_text(lua_State *L, const uint8_t *sig, const int64_t *keys, int n) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  Type t[KJIT_MAXARGS];
  for (int a = 0; a < n; a++) t[a] = sig_type(sig[a]);
  if (keys) rec_types(t, sig, keys, n);
  sig_text(&b, t, n);
  luaL_pushresult(&b);
}

#define EXPORT_BOX_MT "kjit.exportbox"
static int exportbox_gc(lua_State *L) {
  ExportBox *b = lua_touserdata(L, 1);
  free(b->p);
  b->p = NULL;
  return 0;
}

/* f:export([sig [, layouts...]]): the bytes of one specialization (the
** given signature's, compiled first if new; else the last one used). */
static int jit_export(lua_State *L) {
  JitObj *o = luaL_checkudata(L, 1, JIT_METATABLE);
  if (o->dead) return dead_error(L);
  if (o->loaded)
    return luaL_error(L, "f:export: this function was loaded from exported code: export the "
                      "original, or pass these bytes on");
  JitSpec *js = lua_isnoneornil(L, 2) ? o->last : spec_for_text(L);
  if (js == NULL)
    return luaL_error(L, "f:export: nothing compiled yet: give a signature, f:export(\"f64(f64[:])\")");
  for (int i = 0; i < js->nsig; i++) {
    if (js->sig[i] == SIG_FUNC)
      return luaL_error(L, "f:export: argument #%d of this specialization is a function: code "
                        "that takes functions cannot be exported (a function is a value of "
                        "this process); call it from a function that names it", i + 1);
  }
  lua_settop(L, 1);
  ExportBox *box = lua_newuserdatauv(L, sizeof *box, 0);
  box->p = NULL;
  box->n = 0;
  if (kb_newmeta(L, EXPORT_BOX_MT)) {
    lua_pushcfunction(L, exportbox_gc);
    lua_setfield(L, -2, "__gc");
    kb_regmeta(L, EXPORT_BOX_MT);
  }
  lua_setmetatable(L, -2);
  JitSpec *nj = compile_spec_ex(L, o, 1, js->sig, js->nsig, 0, 0, js->fnkey, box, 0);
  /* the export's own compile is not kept: it is first in the list */
  o->specs = nj->next;
  o->nspecs--;
  free_spec(nj);
  kexp_push(L, KEXP_JIT, box->p, box->n);
  free(box->p);
  box->p = NULL;
  return 1;
}

/* kjit.load's loader for KEXP_JIT (export.h): a jit object with the one
** specialization. */
void kd_load(lua_State *L, const void *payload, size_t len) {
  register_runtime();
  JitObj *o = lua_newuserdatauv(L, sizeof *o, 2);   /* its __gc frees what is attached */
  memset(o, 0, sizeof *o);
  o->loaded = 1;
  o->tag = JIT_TAG(o);
  luaL_setmetatable(L, JIT_METATABLE);
  JitSpec *js = calloc(1, sizeof *js);
  if (!js) luaL_error(L, "not enough memory");
  void *addr = NULL, *extra = NULL;
  size_t xl = 0;
  /* the layouts of the arrays of records it makes: interned here, and their
  ** globals given this process's ids while the object is linked */
  KexpR lr = { payload, len, 0, 0, "" };
  if (!kexp_get_layouts(&lr)) {
    free(js);
    kexp_damaged(L, &lr, "the layouts of the arrays of records it makes");
  }
  js->code = kcache_cpu_payload_load((const char *)payload + lr.at, len - lr.at, &addr, &extra, &xl);
  kexp_clear_layouts();
  if (js->code == NULL) {
    free(js);
    luaL_error(L, "kjit.load: the object code could not be loaded in this process");
  }
  KexpR r = { extra, xl, 0, 0, "" };
  char *where = NULL;
  int bad = get_spec(&r, js, &where);
  free(extra);
  if (bad) {
    free(where);
    free_unlinked_spec(js);
    kexp_damaged(L, &r, "the specialization's description");
  }
  js->entry = (KEntry)addr;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  js->L = lua_tothread(L, -1);
  lua_pop(L, 1);
  o->specs = o->last = js;
  o->nspecs = 1;
  /* user value 2: where the function was defined, for tostring */
  lua_pushstring(L, where ? where : "?");
  free(where);
  lua_setiuservalue(L, -2, 2);
}

/* ---- For the C API (capi.c) ------------------------------------------------------- */

void kd_push_private_opts(lua_State *L, int idx, int boundscheck, int fastmath, int opt) {
  int plain = lua_type(L, idx) == LUA_TFUNCTION;
  kd_push_private(L, idx);
  if (!plain) return;   /* a kjit.jit object keeps its own */
  JitObj *o = lua_touserdata(L, -1);
  o->boundscheck = boundscheck;
  o->fastmath = fastmath;
  o->opt = opt;
}

void kd_push_private(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  JitObj *src = luaL_testudata(L, idx, JIT_METATABLE);
  if (src == NULL && (lua_type(L, idx) != LUA_TFUNCTION || lua_iscfunction(L, idx)))
    luaL_error(L, "expected a Lua function or a kjit.jit object, got %s",
               lua_iscfunction(L, idx) ? "a C function" : luaL_typename(L, idx));
  if (src && src->dead) dead_error(L);
  JitObj *o = lua_newuserdatauv(L, sizeof *o, 1);
  memset(o, 0, sizeof *o);
  if (src) {            /* every option, whatever fields JitObj grows; no specs */
    *o = *src;
    o->specs = o->last = NULL;
    o->nspecs = 0;
  } else {              /* kjit.jit's defaults */
    int v[KO_JIT_N];
    kopt_defaults(&kopt_jit, v);
    o->boundscheck = v[KO_JIT_BOUNDSCHECK];
    o->fastmath = v[KO_JIT_FASTMATH];
    o->opt = v[KO_JIT_OPT];
    o->cache = v[KO_JIT_CACHE];
    o->parallel = v[KO_JIT_PARALLEL];
    o->tiered = v[KO_JIT_TIERED];
  }
  o->tag = JIT_TAG(o);   /* its own address: not the copied one */
  luaL_setmetatable(L, JIT_METATABLE);
  if (src) lua_getiuservalue(L, idx, 1);
  else lua_pushvalue(L, idx);
  lua_setiuservalue(L, -2, 1);
}

void kd_compile_sig(lua_State *L, int objidx, const char *sig, KdSpecInfo *info) {
  kd_compile_sig_records(L, objidx, sig, NULL, 0, info);
}

void kd_compile_sig_records(lua_State *L, int objidx, const char *sig, const KRecord *const *recs,
                            int nrecs, KdSpecInfo *info) {
  objidx = lua_absindex(L, objidx);
  luaL_checkudata(L, objidx, JIT_METATABLE);
  lua_pushcfunction(L, jit_compile);   /* same parsing and checks as f:compile */
  lua_pushvalue(L, objidx);
  lua_pushstring(L, sig);
  luaL_checkstack(L, nrecs, "too many records");
  for (int i = 0; i < nrecs; i++) {
    if (recs[i] == NULL) luaL_error(L, "record layout #%d is NULL", i + 1);
    krec_push_struct(L, recs[i]);
  }
  lua_call(L, 2 + nrecs, 0);
  kd_spec_info(L, objidx, "kjit_compile", info);
}

void kd_spec_info(lua_State *L, int objidx, const char *who, KdSpecInfo *info) {
  JitObj *o = luaL_checkudata(L, objidx, JIT_METATABLE);
  JitSpec *js = o->last;
  if (js == NULL) luaL_error(L, "%s: nothing compiled", who);
  if (js->lua)   /* kjit_call runs compiled code without Lua's protection */
    luaL_error(L, "%s: this function uses Lua values at run time (tables, function literals it "
               "makes, or C functions such as pairs or pcall, which compiled code calls through "
               "the Lua state), and kjit_call makes no Lua calls: call it through Lua, or use "
               "arrays", who);
  memset(info, 0, sizeof *info);
  info->entry = js->entry;
  info->nargs = js->nargs;
  info->nsig = js->nsig;
  for (int i = 0; i < js->nsig; i++) info->args[i] = sig_type(js->sig[i]);
  rec_types(info->args, js->sig, js->fnkey, js->nsig);
  info->nret = js->nret;
  for (int r = 0; r < js->nret; r++) {
    info->rets[r] = TY(js->rets[r]);
    info->rets[r].sub = js->rsub[r];
    info->rets[r].dtype = js->rnil[r];
  }
  info->calls = js->calls;
  info->dead = &o->dead;
  info->arrays = js->arrays;
  info->dyncount = js->dyncount;
}
