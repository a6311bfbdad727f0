/*
** ir_type.c: the IR typer (see ir_type.h): types per SSA value, per
** specialization, by sparse conditional propagation to a fixpoint, with
** upvalues and globals frozen into constants. The rules are Lua 5.4's
** (DESIGN.md §3):
**   - integers are i64, floats f64; where an integer and a float meet (a
**     phi, math.max, math.floor of a float) the value is a "number";
**   - `/` and `^` give floats, `//` and `%` keep integers, bitwise
**     operators give integers; arithmetic on a number is the join of the
**     operation on its integer side and on its float side;
**   - values read from f32 arrays are f32 and stay f32 among themselves;
**     literals are weak: with an f32 operand they compute in f32;
**   - false-or-number and nil-or-number (T_MAYBE) for `c and x or y` and
**     `local best` ... `best = i`.
*/
#include "ir/ir_type.h"
#include "common/cuda_extern.h"
#include "ir/ir_closure.h"
#include "runtime/luaclosure.h"
#include "common/krecord.h"
#include "ir/ir_fold.h"
#include "ir/ir_varinfo.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "ir/ir_builtins.h"
#include "ir/ir_type_cuda.h"
#include "frontend/bytecode.h"
#include "common/karray.h"

/* ---- The built-in table ---------------------------------------------- */

typedef struct BuiltinRow {
  int id; const char *name; int minargs, maxargs; KtyRule rule;
} BuiltinRow;

static const BuiltinRow builtins[] = {
#define KTY_ROW(id, name, lo, hi, rule) { B_##id, name, lo, hi, KTY_R_##rule },
  KTY_BUILTINS(KTY_ROW)
#undef KTY_ROW
};
#define NBUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

static const BuiltinRow *builtin_row(int id) {
  for (int i = 0; i < NBUILTINS; i++)
    if (builtins[i].id == id) return &builtins[i];
  return NULL;
}

/* How many of a call's n arguments built-in id is given where compiled code
** computes it: those its C function reads, the rest evaluated and ignored
** as it ignores them (math.floor(x, t.s), a:fill(v, w), string.rep(s, n,
** sep, T)). The one place that cuts them (t_call, the code generator's
** emit_call). Given them all: math.random and table.insert, which count
** them, string.byte, which reads its third, os.time, whose row says none
** but which takes a table (t_lib), assert, which returns them
** all, and the kernels' built-ins, which check their count. */
int kty_builtin_reads(int id, int n) {
  const BuiltinRow *row = builtin_row(id);
  if (row == NULL || row->maxargs < 0 || n <= row->maxargs) return n;
  if (id == B_MATH_RANDOM || id == B_TABLE_INSERT || id == B_STRING_BYTE || id == B_OS_TIME ||
      id == B_ASSERT || B_IS_CUDA(id))
    return n;
  return row->maxargs;
}

/* Whether built-in id's second argument is optional in lmathlib.c, nil
** read as none: math.log's base, math.atan's x (luaL_optnumber). */
static int optional_second(int id) { return id == B_MATH_LOG || id == B_MATH_ATAN; }

/* The argument built-in id's C function checks j-th of n (lmathlib.c:
** in order, but math.fmod's two as this Lua's C compiler evaluates them,
** kjit_fmod_checks_arg2_first). */
static int checked_arg(int id, int n, int j) {
  if (id == B_MATH_FMOD && n == 2 && __atomic_load_n(&kjit_fmod_checks_arg2_first, __ATOMIC_RELAXED))
    return 1 - j;
  return j;
}

static const char *builtin_name(int id) {
  const BuiltinRow *r = builtin_row(id);
  return r ? r->name : kir_builtin_name(id);
}

/* The name of the dtype object constant k is (kjit.f32, kjit.bool: a
** T_BUILTIN constant with v.i 1, the object itself rather than the cast
** function cuda.float32), else NULL. tostring gives it, and `..` with
** strings and numbers concatenates it (host/dtype.c's __tostring and
** __concat), so compiled code folds both to this constant. */
const char *kty_dtype_obj_name(const KtyConst *k) {
  static const char *const names[] = {
#define KTY_DTOBJ(E, nm, ct, isf, iss) nm,
    KJIT_ALLDTYPES(KTY_DTOBJ)
#undef KTY_DTOBJ
  };
  if (k == NULL || k->kind != T_BUILTIN || k->v.i != 1) return NULL;
  int d = KIR_CAST_DTYPE(k->ref);
  if (d < 0 || d >= (int)(sizeof names / sizeof names[0])) return NULL;
  return names[d];
}

/* ---- Types --------------------------------------------------------------- */

static Type ty(int kind) { Type t; memset(&t, 0, sizeof t); t.kind = (uint8_t)kind; return t; }
static Type weakty(int kind, int weak) { Type t = ty(kind); t.weak = (uint8_t)weak; return t; }

static int isfloat(Type t) { return t.kind == T_F64 || t.kind == T_F32; }
static int isnum(Type t) { return t.kind == T_INT || isfloat(t) || t.kind == T_NUMBER; }
/* The type a load of a number of dtype d gives (as an array element). An
** f16 element is read as the interpreter reads it, a Lua float (exact),
** on the CPU and in kernels alike: arithmetic on it is Lua's, in f64, so
** compiled code, both simulators and the GPU compute the same bits (f32
** arithmetic would round differently from the interpreted function);
** rounding to half happens at stores, kjit.f16(x) and in cuda.fp16.* */
static Type elem_of(int d) {
  return ty(d == KJIT_F32 ? T_F32 : d == KJIT_F64 || d == KJIT_F16 ? T_F64
            : d == KJIT_BOOL ? T_BOOL : T_INT);
}

/* A false-or-number used as a number: its number (compiled code checks
** at run time that it is not false or nil, failing as Lua would). */
static Type numview(Type t) {
  if (t.kind != T_MAYBE) return t;
  Type r = ty(t.sub);
  r.fsub = t.fsub;
  return r;
}

static int tyeq(Type a, Type b) {
  if (a.kind != b.kind || a.weak != b.weak) return 0;
  switch (a.kind) {
  case T_BUF: return a.dtype == b.dtype && a.ndim == b.ndim &&
                     (a.dtype != KJIT_RECORD || a.ref == b.ref) &&   /* records: the layout */
                     a.sub == b.sub;   /* a kernel's constant array is not another array */
  case T_MAYBE: return a.sub == b.sub && a.dtype == b.dtype && a.fsub == b.fsub;
  case T_NUMBER: return a.fsub == b.fsub;
  case T_LUA: return a.sub == b.sub;
  case T_SHAPE: return a.ndim == b.ndim;
  case T_BUILTIN:   /* (dtype 1: the dtype object kjit.f32, not the cast cuda.float32) */
    return a.ref == b.ref && a.sub == b.sub && a.dtype == b.dtype;
  case T_FUNC: case T_TABLE: case T_STR: case T_CLOSURE: case T_EXTERN:
    return a.ref == b.ref && a.sub == b.sub;
  default: return 1;
  }
}

/* Set while a kernel is typed (KtySession.kernel): there an integer
** operand of an f32 operation converts to f32, as in CUDA C (and in
** the earlier source-text typer); on the CPU it converts to f64. */
static __thread int kernel_rules;

/* The float kind two numbers compute in: f32 when one is f32 and the
** other f32 or a weak literal (or, in kernels, an integer), else f64. */
static Type float_of(Type a, Type b) {
  int a32 = a.kind == T_F32, b32 = b.kind == T_F32;
  int ai = kernel_rules && a.kind == T_INT, bi = kernel_rules && b.kind == T_INT;
  Type r = ty(((a32 && (b32 || b.weak || bi)) || (b32 && (a32 || a.weak || ai))) ? T_F32 : T_F64);
  r.weak = a.weak && b.weak;
  return r;
}

static Type number(int fsub, int weak) {
  Type r = weakty(T_NUMBER, weak);
  r.fsub = (uint8_t)fsub;
  return r;
}

/* The join of two numbers where they meet (a phi, math.max): Lua keeps
** the subtype, so an integer and a float make a number. */
static Type numjoin(Type a, Type b) {
  if (a.kind == T_UNKNOWN) return b;
  if (b.kind == T_UNKNOWN) return a;
  int w = a.weak && b.weak;
  if (a.kind == T_INT && b.kind == T_INT) return weakty(T_INT, w);
  if (isfloat(a) && isfloat(b)) return float_of(a, b);
  if (a.kind == T_NUMBER && b.kind == T_NUMBER)
    return number(float_of(ty(a.fsub), ty(b.fsub)).kind, w);
  if (b.kind == T_NUMBER) { Type t = a; a = b; b = t; }
  if (a.kind == T_NUMBER)   /* and an integer or a float */
    return b.kind == T_INT ? number(a.fsub, w) : number(float_of(ty(a.fsub), b).kind, a.weak);
  /* an integer and a float: the number's weakness is its integer side's */
  return a.kind == T_INT ? number(b.kind, a.weak) : number(a.kind, b.weak);
}

/* The integer and the float side of a number. */
static Type intside(Type n) { return weakty(T_INT, n.weak); }
static Type floatside(Type n) { return ty(n.fsub); }

static int isbitwise(int op) { return op >= KIR_BAND && op <= KIR_SHR; }

/* Lua's arithmetic on two numbers. */
static Type arith_type(int op, Type a, Type b) {
  if (a.kind == T_NUMBER)
    return numjoin(arith_type(op, intside(a), b), arith_type(op, floatside(a), b));
  if (b.kind == T_NUMBER)
    return numjoin(arith_type(op, a, intside(b)), arith_type(op, a, floatside(b)));
  int w = a.weak && b.weak;
  if (isbitwise(op)) return weakty(T_INT, w);
  if (op == KIR_DIV || op == KIR_POW) {
    if (a.kind == T_INT && b.kind == T_INT) return weakty(T_F64, w);
    return float_of(a, b);
  }
  if (a.kind == T_INT && b.kind == T_INT) return weakty(T_INT, w);
  return float_of(a, b);
}

static const char *dimstr(int ndim) {
  return ndim == 1 ? ":" : ndim == 2 ? ":,:" : ndim == 3 ? ":,:,:" : ":,:,:,:";
}

/* A record type's name: "record{x,y}" (a record), "record{x,y}[:]" ... */
static const char *rec_name(Type t, char *buf, size_t n) {
  const KRecord *r = krec_byid(t.ref);
  size_t k = (size_t)snprintf(buf, n, "record{");
  for (int i = 0; r && i < r->nfields && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", r->fields[i].name);
  if (k < n) snprintf(buf + k, n - k, t.ndim ? "}[%s]" : "}", dimstr(t.ndim));
  return buf;
}

const char *kty_name(Type t, char *buf, size_t n) {
  switch (t.kind) {
  case T_UNKNOWN: return "?";
  case T_NIL: return "nil";
  case T_BOOL: return "boolean";
  case T_INT: return "i64";
  case T_F64: return "f64";
  case T_F32: return "f32";
  case T_NUMBER: return t.fsub == T_F32 ? "number(f32)" : "number";
  case T_BUF:
    if (t.dtype == KJIT_RECORD) return rec_name(t, buf, n);
    snprintf(buf, n, "%s%s[%s]", t.sub == KTY_BUF_CONST ? "constant " : "",
             kjit_dtype_name((kjit_dtype)t.dtype), dimstr(t.ndim));
    return buf;
  case T_MAYBE: {
    const char *num = t.sub == T_INT ? "i64" : t.sub == T_F64 ? "f64" : t.sub == T_F32 ? "f32"
                    : t.fsub == T_F32 ? "number(f32)" : "number";
    snprintf(buf, n, "%s|%s", t.dtype ? "nil" : "false", num);
    return buf;
  }
  case T_FUNC: case T_CLOSURE: return "function";
  case T_EXTERN: return "external device function";
  case T_BUILTIN:
    if (t.ref == B_KJIT_PRANGE && t.sub) return "prange iterator";
    if (t.ref == B_IPAIRS && t.sub) return "ipairs iterator";
    if (t.ref == B_CUDA_CG_THIS_GRID && t.sub) return "grid group";
    if (KIR_CAST_DTYPE(t.ref) >= 0 && t.ref != B_KJIT_BOOL) {
      /* kjit.f32 is the built-in cuda.float32 (ir_builtins.h): a message
      ** about the value names both, the user having written either */
      int d = KIR_CAST_DTYPE(t.ref);
      static const char *const dtnames[] = {
#define KTY_DTNAME(E, nm, ct, isf, iss) nm,
        KJIT_ALLDTYPES(KTY_DTNAME)
#undef KTY_DTNAME
      };
      snprintf(buf, n, "kjit.%s (%s)", dtnames[d], builtin_name(t.ref));
      return buf;
    }
    return builtin_name(t.ref);
  case T_TABLE: return "table";
  case T_STR: return "string";
  case T_SHAPE: snprintf(buf, n, "shape(%d)", t.ndim); return buf;
  case T_LUA: return t.sub == KTY_LUA_TABLE ? "table" : t.sub == KTY_LUA_STRING ? "string" : "value";
  case T_LAYOUT: return "kjit.struct";
  default: return "conflict";
  }
}

/* ---- Errors ---------------------------------------------------------------- */

static void fail(KtySession *S, KtySpec *sp, const KirInsn *v, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 4, 5), noreturn))
#endif
  ;

static void fail(KtySession *S, KtySpec *sp, const KirInsn *v, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(S->err, sizeof S->err, "%s:%d: %s", sp ? sp->chunkname : "?",
           v ? v->line : (sp ? sp->ir->proto->linedefined : 0), msg);
  longjmp(*S->jb, 1);
}

static const char *unusable_hint(const KtySession *S, const char *what);

/* Reports only in the error pass; before, the caller waits (unknown). */
/* Static shared memory per kernel (CUDA's limit without opt-in), and one
** cuda.local_array per thread (GPU local memory; the simulator's threads
** have 1 MiB stacks). */
#define KTY_SHARED_LIMIT 49152
#define KTY_LOCAL_LIMIT  65536
#define KTY_MAXSPECS 256   /* specializations in one compile */

#define REFUSE(S, sp, v, ...) \
  do { if ((S)->strict) fail((S), (sp), (v), __VA_ARGS__); return ty(T_UNKNOWN); } while (0)

static void raise_at(KtySession *S, KtySpec *sp, const KirInsn *v, int argi, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 5, 6)))
#endif
  ;

/* Records that v raises this Lua error whenever it runs (the message
** without its position; argi: the operand Lua describes after it, or -1). */
static void raise_at(KtySession *S, KtySpec *sp, const KirInsn *v, int argi, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);   /* (whole: names of any length) */
  va_end(ap);
  char *m = len < 0 ? NULL : ka_alloc(S->A, (size_t)len + 1);
  if (m == NULL) fail(S, sp, v, "not enough memory");
  va_start(ap, fmt);
  vsnprintf(m, (size_t)len + 1, fmt, ap);
  va_end(ap);
  sp->raises[v->id].msg = m;
  sp->raises[v->id].argi = argi;
  sp->raises[v->id].nopos = 0;
  sp->raises[v->id].falsy = NULL;
}

/* A type error the interpreter raises only when the operation runs: the
** value is never produced (unknown), and the error pass records the error
** for the code generator to raise there (ir_type.h). Lua's wording. */
#define RAISE(S, sp, v, argi, ...) \
  do { if ((S)->strict) raise_at((S), (sp), (v), (argi), __VA_ARGS__); return ty(T_UNKNOWN); } while (0)

/* Lua's name of a value's type in its run-time errors (luaT_objtypename):
** a kjit array is a "kjit.array" (its metatable's __name). */
static const char *objtypename(Type t) {
  switch (t.kind) {
  case T_NIL: return "nil";
  case T_BOOL: return "boolean";
  case T_BUF: return "kjit.array";
  case T_FUNC: case T_CLOSURE: return "function";
  default: return "number";
  }
}

/* Do operations on a value of type t raise Lua's type error whenever they
** run, with no metamethod to call (nil, booleans, kjit arrays)? */
static int raises_on(Type t) {
  return t.kind == T_NIL || t.kind == T_BOOL || t.kind == T_BUF;
}

static int no_op(lua_State *L) { (void)L; return 0; }

/* Do values of type t have the metamethod event now? Nil, booleans,
** numbers and functions have one where a host's debug.setmetatable gave
** their type a metatable (differences.md item 13), strings the string
** library's, kjit arrays buffer.c's, records record.c's. Read when
** compiling, as string_method reads the strings' methods; a type whose
** metatable is not known here is taken to have it. */
static int has_event(KtySession *S, Type t, const char *event) {
  lua_State *L = S->L;
  int top = lua_gettop(L), mt;
  switch (t.kind) {
  case T_MAYBE:   /* a number, nil or false */
    return has_event(S, ty(T_INT), event) || has_event(S, ty(T_NIL), event) ||
           has_event(S, ty(T_BOOL), event);
  case T_BUF:   /* (records and arrays of them: host/record.h KREC_ARRAY_MT) */
    mt = luaL_getmetatable(L, t.dtype == KJIT_RECORD ? "kjit.records" : KB_METATABLE) == LUA_TTABLE;
    break;
  case T_NIL: lua_pushnil(L); mt = lua_getmetatable(L, -1); break;
  case T_BOOL: lua_pushboolean(L, 0); mt = lua_getmetatable(L, -1); break;
  case T_STR: lua_pushliteral(L, ""); mt = lua_getmetatable(L, -1); break;
  case T_FUNC: case T_BUILTIN:   /* (one metatable for all functions) */
    lua_pushcfunction(L, no_op);
    mt = lua_getmetatable(L, -1);
    break;
  default:
    if (!isnum(t)) return 1;
    lua_pushinteger(L, 0);
    mt = lua_getmetatable(L, -1);
    break;
  }
  int has = mt && lua_getfield(L, -1, event) != LUA_TNIL;
  lua_settop(L, top);
  return has;
}

/* Has a value of type t the metamethod of the arithmetic or bitwise
** operation v now (has_event: "__add" for v an ADD)? */
static int op_meta(KtySession *S, Type t, const KirInsn *v) {
  char event[16];
  snprintf(event, sizeof event, "__%s", kir_opname[v->op]);
  return has_event(S, t, event);
}

/* Is a value of type t nil, a boolean or a known Lua or library function,
** with no metamethod for the operation v now? */
static int no_arith_meta(KtySession *S, Type t, const KirInsn *v) {
  return (t.kind == T_NIL || t.kind == T_BOOL || t.kind == T_FUNC ||
          (t.kind == T_BUILTIN && kty_builtin_libname(t.ref) != NULL)) &&
         !op_meta(S, t, v);
}

/* Has a value of type t a metamethod for the order comparison v (__lt;
** for <=, __le, or __lt, which a Lua built with LUA_COMPAT_LT_LE tries
** for it) now? */
static int order_meta(KtySession *S, Type t, const KirInsn *v) {
  return has_event(S, t, "__lt") || (v->op == KIR_LE && has_event(S, t, "__le"));
}

/* luaL_typename of a value of type t, for the kinds no_arith_meta and
** numbers. */
static const char *lua_typename_of(Type t) {
  switch (t.kind) {
  case T_NIL: return "nil";
  case T_BOOL: return "boolean";
  case T_FUNC: case T_BUILTIN: return "function";
  default: return "number";
  }
}

/* Does indexing or calling a value of type t raise Lua's type error
** whenever it runs, with no metamethod to consult? nil, booleans, numbers
** and numbers-or-nil (-false) do while their type has no metatable:
** debug.setmetatable(0, mt) gives numbers one, which is read when
** compiling, as the strings' is (string_method); a number is then indexed
** or called when it runs (index_at_run_time). nil and booleans while
** their type has the metamethod (event: "__index", "__call" or
** "__newindex") are refused (TYPE_META_REFUSED; differences.md item 13). */
static int index_raises(KtySession *S, Type t, const char *event) {
  if (t.kind == T_NIL || t.kind == T_BOOL || t.kind == T_MAYBE) return !has_event(S, t, event);
  if (!isnum(t)) return 0;
  lua_pushinteger(S->L, 0);
  int has = lua_getmetatable(S->L, -1);
  lua_pop(S->L, has ? 2 : 1);
  return !has;
}

/* nil, a boolean or a number-or-nil (-false) indexed, assigned into or
** called (what: "index", "call") while debug.setmetatable gave its type
** the metamethod event: the interpreter calls it; refused, where compiled
** code would raise Lua's type error (found/nil-index-metamethod.lua). */
#define TYPE_META_REFUSED(S, sp, v, o, what, event) \
  do { \
    if ((o).kind == T_NIL || (o).kind == T_BOOL || (o).kind == T_MAYBE) \
      REFUSE(S, sp, v, "cannot %s a %s value while debug.setmetatable gave its type %s in " \
             "compiled code: its metamethod is not called there (index or call it in an " \
             "interpreted function)", what, (o).kind == T_BOOL ? "boolean" : \
             (o).kind == T_NIL ? "nil" : "number-or-nil", event); \
  } while (0)

/* v indexes or calls (what: "index", "call") its operand 0, of type o,
** which index_raises: Lua's error whenever v runs, the operand named as
** Lua names it ("attempt to index a nil value (local 'x')"). A number-or-
** nil names what it holds when v runs (cg_func.c emit_raise), so code that
** may not run compiles (differences.md item 13, before 2026-11-28 a
** compile error). */
static void raise_not_table(KtySession *S, KtySpec *sp, const KirInsn *v, Type o,
                            const char *what) {
  raise_at(S, sp, v, 0, "attempt to %s a %s value", what, objtypename(o));
  if (o.kind == T_MAYBE) {
    char msg[64];
    snprintf(msg, sizeof msg, "attempt to %s a %s value", what, o.dtype ? "nil" : "boolean");
    sp->raises[v->id].falsy = ka_strndup(S->A, msg, strlen(msg));
    if (sp->raises[v->id].falsy == NULL) fail(S, sp, v, "not enough memory");
  }
}
#define RAISE_NOT_TABLE(S, sp, v, o, what) \
  do { if ((S)->strict) raise_not_table((S), (sp), (v), (o), (what)); return ty(T_UNKNOWN); } while (0)

static int is_env(const KirFunc *f, const KirInsn *v) {
  if (v->op != KIR_GETUPVAL || v->aux >= f->proto->nup) return 0;
  const char *n = f->proto->up[v->aux].name;
  return n && strcmp(n, "_ENV") == 0;
}

/* " (local 'v' is f64)", " (global 'g')" ... naming the value v. */
static const char *describe(KtySpec *sp, const KirInsn *v, char *buf, size_t n) {
  char tb[32];
  Type t = sp->types[v->id];
  const KbcProto *p = sp->ir->proto;
  if (v->name && (t.kind == T_NIL || t.kind == T_BOOL || t.kind == T_BUF))   /* Lua's words */
    snprintf(buf, n, " (local '%s')", v->name);
  else if (v->name)
    snprintf(buf, n, " (local '%s' is %s)", v->name, kty_name(t, tb, sizeof tb));
  else if (v->op == KIR_GETUPVAL && v->aux < p->nup && p->up[v->aux].name)
    snprintf(buf, n, " (upvalue '%s')", p->up[v->aux].name);
  else if (v->op == KIR_GETFIELD && v->pc >= 0 && v->pc < p->ncode &&
           KBC_OP(p->code[v->pc]) == KBC_GETTABLE && kbc_localname(p, KBC_C(p->code[v->pc]), v->pc))
    snprintf(buf, n, " (field '?')");   /* `local k = "x"; t[k]`: Lua names no key */
  else if (v->op == KIR_GETFIELD)
    snprintf(buf, n, " (%s '%s')", is_env(sp->ir, v->args[0]) ? "global" : "field", v->k.str.s);
  else buf[0] = '\0';
  return buf;
}

/* "number", "boolean", "nil", "kjit.array" ... naming a value's type as
** Lua does (an array's metatable __name). */
static const char *luaname(Type t, char *buf, size_t n) {
  if (isnum(t)) return "number";
  if (t.kind == T_BUF) return "kjit.array";
  if (t.kind == T_LUA && t.sub == 0) return "Lua";   /* not "a value value" */
  return kty_name(t, buf, n);
}

/* A global or upvalue frozen as nil used as a value: refused with the
** reason (as the earlier source-text typer worded it). */
#define FROZEN_NIL(S, sp, v, x) \
  do { \
    const KirInsn *x_ = (x); \
    if ((sp)->consts[x_->id].kind == T_NIL && \
        (x_->op == KIR_GETUPVAL || (x_->op == KIR_GETFIELD && is_env((sp)->ir, x_->args[0]))) && \
        !(x_->op == KIR_GETUPVAL && (sp)->clos && kty_clos_frozen_upval((S), (sp), x_->aux) < 0)) { \
      const KbcProto *p_ = (sp)->ir->proto; \
      const char *n_ = x_->op == KIR_GETFIELD ? x_->k.str.s \
                     : x_->aux < p_->nup && p_->up[x_->aux].name ? p_->up[x_->aux].name : "?"; \
      REFUSE(S, sp, v, "%s '%s' is nil (compiled code freezes globals and upvalues when it " \
             "compiles: define it first)", x_->op == KIR_GETFIELD ? "global" : "upvalue", n_); \
    } \
  } while (0)

/* ---- Lua values (T_LUA) ------------------------------------------------ */

static int islua(Type t) { return t.kind == T_LUA; }

/* Can a value of type t go into a Lua stack slot (a table key or value, an
** operand of an operation on a Lua value)? Numbers, booleans, nil,
** constant strings, Lua values and kjit arrays (outside kernels; not
** arrays of records) can; frozen tables have no run-time Lua form in
** compiled code yet. */
static int boxable(Type t, KtyConst k) {
  switch (t.kind) {
  case T_NIL: case T_BOOL: case T_INT: case T_F64: case T_F32: case T_NUMBER: case T_MAYBE:
  case T_LUA:
    return 1;
  case T_FUNC: return t.ref > 0;   /* a Lua function known here (cg_callvalue.c) */
  /* a table read from an upvalue or a global (frozen: its fields are
  ** constants here) passed on as a value, `setmetatable(o, Class)`: the
  ** table itself, through a registry reference (cg_callvalue.c) */
  case T_TABLE: return !kernel_rules && t.ref > 0;
  case T_BUILTIN:   /* math.cos; a dtype object, kjit.f32 (cg_callvalue.c) */
    return t.sub == 0 && (kty_builtin_libname(t.ref) != NULL || kty_dtype_obj_name(&k));
  case T_STR: return k.kind == T_STR;
  case T_BUF:   /* a kjit array: its userdata (runtime/luaarray.c), not in kernels; an
                ** array of records too, and one record (p[i]: a view of it) */
    return !kernel_rules && t.sub != KTY_BUF_CONST && (t.ndim >= 1 || t.dtype == KJIT_RECORD);
  default: return 0;
  }
}

/* Why a value of type t has no Lua form (boxable is 0), and what to
** write instead. */
static const char *unboxable_why(Type t) {
  if (t.kind == T_TABLE && kernel_rules)   /* (elsewhere a frozen table is boxable) */
    return "a cuda.jit kernel has no Lua state, so no tables: copy the table's numbers into a "
           "kjit array and pass it";
  if (t.kind == T_TABLE)
    return "a table read from an upvalue or a global is frozen when the function compiles: "
           "pass it as an argument";
  if (t.kind == T_BUF && t.dtype == KJIT_RECORD)
    return "an array of records has no Lua value in compiled code yet: make it outside and "
           "pass it as an argument";
  return "only numbers, booleans, nil, strings, functions, kjit arrays and tables passed in "
         "or made here";
}

/* What to write instead of passing a value of type t to a compiled
** function, which cannot take it (the refusals of t_call). */
static const char *pass_hint(Type t) {
  switch (t.kind) {
  case T_SHAPE: return "pass the array itself, or its extents (a.shape[1], #a)";
  case T_TABLE:
    return kernel_rules ? "a cuda.jit kernel has no Lua state: copy the table's numbers into a "
                          "kjit array and pass it"
                        : "a function literal reads such a table by its name: use it there "
                          "instead of passing it";
  case T_STR:
    return kernel_rules ? "a kernel has no strings: pass a number that stands for it"
                        : "make the string in the function that uses it";
  case T_CONFLICT: return "it holds values of different types on different paths: give it "
                          "one type (initialize it with a value of that type)";
  default: return "call it where it is needed, and pass its result";
  }
}

/* What to write instead where compiled code needs a Lua value and has a
** value frozen when it compiled (a library call's argument, '..', an
** ipairs loop, an assert's condition), or NULL for other values. */
static const char *frozen_value_hint(Type t) {
  if (t.kind == T_TABLE)
    return "a table read from an upvalue or a global is frozen when the function compiles, "
           "its fields constants: pass the table as an argument, where it is a Lua value";
  if (t.kind == T_FUNC || t.kind == T_BUILTIN)
    return "a function read from an upvalue or a global is frozen when the function compiles: "
           "pass it as an argument";
  return NULL;
}

/* Refuses (in the error pass) operand x of v that cannot become a Lua
** value: what it is and what to write instead. */
#define REFUSE_UNBOXABLE(S, sp, v, x, role) \
  do { \
    char tb_[32]; \
    REFUSE(S, sp, v, "a %s cannot be %s in compiled code yet (%s)", \
           kty_name(sp->types[(x)->id], tb_, sizeof tb_), role, \
           unboxable_why(sp->types[(x)->id])); \
  } while (0)

/* A Lua value where a number is needed (a math function's argument, a
** for loop's bound): checked at run time, then a number of either subtype. */
static Type luanum(Type t) { return islua(t) ? number(T_F64, 0) : t; }

/* ---- Reading a frozen table -------------------------------------------- */

/* t[k] with Lua's rules (an __index metamethod runs, as the interpreter's
** read would: an environment with __index = _G, a strict-globals guard),
** protected: the table is at -2, the key at -1; both are replaced by the
** value. Returns NULL, or the error the read raised as a message (kept on
** the stack in place of the value until the caller pops it). */
static int gettable_p(lua_State *L) {
  lua_gettable(L, 1);
  return 1;
}

static int errstring_p(lua_State *L) {   /* the error object at 1, as lua.c shows it */
  if (lua_type(L, 1) == LUA_TSTRING) { lua_settop(L, 1); return 1; }
  if (lua_type(L, 1) == LUA_TNUMBER) { lua_pushstring(L, lua_tostring(L, 1)); return 1; }
  if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
  lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  return 1;
}

static const char *table_get(lua_State *L) {
  if (!lua_getmetatable(L, -2)) { lua_rawget(L, -2); return NULL; }
  lua_pop(L, 1);
  int t = lua_absindex(L, -2);
  lua_pushcfunction(L, gettable_p);
  lua_pushvalue(L, t);
  lua_pushvalue(L, t + 1);
  int st = lua_pcall(L, 2, 1, 0);
  lua_remove(L, t + 1);   /* the key */
  if (st == LUA_OK) return NULL;
  lua_pushcfunction(L, errstring_p);
  lua_pushvalue(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
    lua_pop(L, 1);   /* __tostring raised: the object's type, as lua.c */
    lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, -1));
  }
  lua_remove(L, -2);   /* the error object */
  return lua_tostring(L, -1);
}

/* ---- Frozen values ----------------------------------------------------- */

/* The slot of the value at idx (a table or a function), the same slot for
** the same value: the values table maps slots to values and back. */
int kty_keep_value(KtySession *S, int idx) {
  lua_State *L = S->L;
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, S->values_ref);
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);
  if (lua_isinteger(L, -1)) {
    int ref = (int)lua_tointeger(L, -1);
    lua_pop(L, 2);
    return ref;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, ++S->nvalues);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, S->nvalues);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return S->nvalues;
}

static void push_value(KtySession *S, int ref) {
  lua_rawgeti(S->L, LUA_REGISTRYINDEX, S->values_ref);
  lua_rawgeti(S->L, -1, ref);
  lua_remove(S->L, -2);
}

/* The built-in the C function at idx is, or -1. */
static int builtin_of(lua_State *L, int idx) {
  lua_CFunction cf = lua_tocfunction(L, idx);
  if (cf == NULL) return -1;
  int host = kir_builtin_of(L, idx);   /* kjit.prange, kjit.cuda.* */
  if (host >= 0) return host;
  static const char *const globals[] = { "error", "assert", "print", "type", "tostring",
                                          "tonumber", "ipairs", "setmetatable" };
  static const int gids[] = { B_ERROR, B_ASSERT, B_PRINT, B_TYPE, B_TOSTRING, B_TONUMBER,
                              B_IPAIRS, B_SETMETATABLE };
  for (int i = 0; i < 8; i++) {
    lua_getglobal(L, globals[i]);
    int same = lua_tocfunction(L, -1) == cf;
    lua_pop(L, 1);
    if (same) return gids[i];
  }
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int found = -1;
  static const char *const libs[] = { "math", "io", "os", "string", "table" };
  for (int l = 0; l < 5 && found < 0; l++) {
    size_t ln = strlen(libs[l]);
    lua_getfield(L, -1, libs[l]);
    if (lua_istable(L, -1))
      for (int i = 0; i < NBUILTINS && found < 0; i++) {
        if (strncmp(builtins[i].name, libs[l], ln) != 0 || builtins[i].name[ln] != '.') continue;
        lua_getfield(L, -1, builtins[i].name + ln + 1);
        if (lua_tocfunction(L, -1) == cf) found = builtins[i].id;
        lua_pop(L, 1);
      }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return found;
}

/* Freezes the value on top of the stack (popped) into a constant; an
** unsupported value gets kind T_UNKNOWN and str saying what it is. */
/* A kernel's constant arrays are read-only (KTY_BUF_CONST). */
#define CONST_ARRAY_WRITE "cannot write to a constant array in a kernel (a kjit array read " \
  "from an upvalue or global is frozen into the kernel when it compiles, in constant memory " \
  "on the GPU): pass the array as an argument to write it"

/* The most bytes of constant memory a kernel has on the GPU. */
#define KTY_CONST_BYTES 65536

int kty_const_array(KtySession *S, int ref, const char **data, size_t *bytes, int *dtype,
                    int *ndim, int64_t shape[4]) {
  push_value(S, ref);
  KBuffer *b = luaL_testudata(S->L, -1, KB_METATABLE);
  lua_pop(S->L, 1);   /* the values table keeps it alive */
  if (b == NULL || b->record) return 0;
  *data = b->data;
  *bytes = (size_t)b->size * kjit_dtype_size(b->dtype);
  *dtype = b->dtype;
  *ndim = b->ndim;
  for (int k = 0; k < 4; k++) shape[k] = k < b->ndim ? b->shape[k] : 1;
  return 1;
}

KBuffer *kty_push_host_array(KtySession *S, int ref) {
  push_value(S, ref);
  KBuffer *b = luaL_testudata(S->L, -1, KB_METATABLE);
  if (b == NULL || b->record) { lua_pop(S->L, 1); return NULL; }
  return b;
}

static KtyConst freeze(KtySession *S) {
  lua_State *L = S->L;
  KtyConst k;
  memset(&k, 0, sizeof k);
  switch (lua_type(L, -1)) {
  case LUA_TNIL: k.kind = T_NIL; break;
  case LUA_TBOOLEAN: k.kind = T_BOOL; k.v.b = lua_toboolean(L, -1); break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, -1)) { k.kind = T_INT; k.v.i = lua_tointeger(L, -1); }
    else { k.kind = T_F64; k.v.f = lua_tonumber(L, -1); }
    break;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    k.kind = T_STR; k.str = ka_strndup(S->A, s, n); k.len = n;
    break;
  }
  case LUA_TTABLE: k.kind = T_TABLE; k.ref = kty_keep_value(S, -1); break;
  case LUA_TFUNCTION:
    if (!lua_iscfunction(L, -1)) { k.kind = T_FUNC; k.ref = kty_keep_value(S, -1); }
    else if ((k.ref = builtin_of(L, -1)) >= 0) k.kind = T_BUILTIN;
    else k.str = "a C function";
    break;
  case LUA_TUSERDATA:
    if (luaL_testudata(L, -1, "kjit.jit")) {   /* a kjit.jit object: its function */
      if (lua_getiuservalue(L, -1, 1) == LUA_TFUNCTION) { k.kind = T_FUNC; k.ref = kty_keep_value(S, -1); }
      else k.str = "a userdata";
      lua_pop(L, 1);
    } else if ((k.ref = kir_builtin_of(L, -1)) >= 0) {
      k.kind = T_BUILTIN;
      k.v.i = kir_dtype_of(L, -1) >= 0;   /* kjit.f32 ...: a dtype, and a cast (const_dtype) */
    } else if (luaL_testudata(L, -1, KEXT_MT)) {   /* cuda.declare_device (t_call_extern) */
      k.kind = T_EXTERN;
      k.ref = kty_keep_value(S, -1);
    } else if (luaL_testudata(L, -1, KREC_STRUCT_MT)) {   /* a record layout: a dtype */
      k.kind = T_LAYOUT;
      k.ref = ((KRecStructUD *)lua_touserdata(L, -1))->r->id;
    } else if (S->kernel && luaL_testudata(L, -1, KB_METATABLE)) {
      /* a kernel's constant array (KTY_BUF_CONST), numba-cuda's frozen globals */
      KBuffer *b = lua_touserdata(L, -1);
      size_t bytes = b->record ? 0 : (size_t)b->size * kjit_dtype_size(b->dtype);
      if (b->record) k.str = "an array of records (pass it as an argument)";
      else if (bytes > KTY_CONST_BYTES)
        k.str = "a kjit array larger than the GPU's 64 KiB of constant memory (pass it as an "
                "argument)";
      else {
        k.kind = T_BUF;
        k.ref = kty_keep_value(S, -1);
        k.v.i = b->dtype | b->ndim << 8;
      }
    } else if (!S->kernel && luaL_testudata(L, -1, KB_METATABLE)) {
      /* a CPU function's frozen array (KTY_BUF_FROZEN) */
      KBuffer *b = lua_touserdata(L, -1);
      if (b->record) k.str = "an array of records (pass it as an argument)";
      else {
        k.kind = T_BUF;
        k.ref = kty_keep_value(S, -1);
        k.v.i = b->dtype | b->ndim << 8 | 1 << 16;
      }
    } else k.str = luaL_testudata(L, -1, KB_METATABLE) ? "a kjit array (pass arrays as arguments)"
                                                    : "a userdata";
    break;
  default: k.str = lua_typename(L, lua_type(L, -1)); break;
  }
  lua_pop(L, 1);
  return k;
}

/* The type of a frozen constant (numbers are not weak: only literals are). */
static Type const_type(KtyConst k) {
  Type t = ty(k.kind);
  if (k.kind == T_TABLE || k.kind == T_FUNC || k.kind == T_BUILTIN || k.kind == T_LAYOUT ||
      k.kind == T_EXTERN)
    t.ref = k.ref;
  if (k.kind == T_BUF) {   /* a kernel's constant array, a CPU function's frozen one */
    t.dtype = (uint8_t)(k.v.i & 0xff);
    t.ndim = (uint8_t)((k.v.i >> 8) & 0xff);
    t.sub = (k.v.i >> 16) & 1 ? KTY_BUF_FROZEN : KTY_BUF_CONST;
    t.ref = k.ref;
  }
  return t;
}

static int consteq(KtyConst a, KtyConst b) {
  if (a.kind != b.kind || a.kind == T_UNKNOWN) return 0;
  switch (a.kind) {
  case T_NIL: return 1;
  case T_BOOL: return a.v.b == b.v.b;
  case T_INT: return a.v.i == b.v.i;
  case T_F64: return memcmp(&a.v.f, &b.v.f, sizeof a.v.f) == 0;
  case T_STR: return a.len == b.len && memcmp(a.str, b.str, a.len) == 0;
  case T_BUILTIN: return a.ref == b.ref && a.v.i == b.v.i;   /* kjit.f32 is not cuda.float32 */
  default: return a.ref == b.ref;
  }
}

/* Is the value always true (1), always false (0), either (2), or not
** known yet (-1)? Numbers, arrays and functions are true. */
static int truth(Type t, KtyConst k) {
  switch (t.kind) {
  case T_UNKNOWN: return -1;
  case T_NIL: return 0;
  case T_BOOL: return k.kind == T_BOOL ? k.v.b != 0 : 2;
  case T_MAYBE: case T_CONFLICT: case T_LUA: return 2;
  default: return 1;
  }
}

/* ---- The worklist --------------------------------------------------------- */

static void push(KtySpec *sp, KirInsn *v) {
  if (sp->queued[v->id]) return;
  sp->queued[v->id] = 1;
  sp->work[sp->nwork++] = v;
}

static void push_users(KtySpec *sp, KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) push(sp, v->users[i]);
}

/* sp's results rose: every call of it is typed again, and so are the
** call's users, which read the results past the first (RESULT, an open
** consumer): the call's own type, its first result, may stay the same. */
static void notify_callers(KtySpec *sp) {
  for (KtyCaller *c = sp->callers; c; c = c->next) {
    push(c->spec, c->call);
    push_users(c->spec, c->call);
  }
}

static void push_block(KtySpec *sp, KirBlock *b, int phis_only) {
  for (int i = 0; i < b->nphis; i++) push(sp, b->phis[i]);
  if (phis_only) return;
  for (int i = 0; i < b->ninsns; i++) push(sp, b->insns[i]);
  if (b->term) push(sp, b->term);
}

static void mark_edge(KtySpec *sp, KirBlock *b, int s) {
  if (sp->edges[b->id] & (1 << s)) return;
  sp->edges[b->id] |= (uint8_t)(1 << s);
  KirBlock *to = b->succ[s];
  if (!sp->live[to->id]) { sp->live[to->id] = 1; push_block(sp, to, 0); }
  else push_block(sp, to, 1);
}

/* Does the edge from to's i-th predecessor run? */
static int edge_runs(KtySpec *sp, KirBlock *to, int i) {
  KirBlock *p = to->preds[i];
  uint8_t e = sp->edges[p->id];
  return ((e & 1) && p->succ[0] == to) || ((e & 2) && p->nsucc > 1 && p->succ[1] == to);
}

/* ---- Specializations ------------------------------------------------------- */

static KtySpec *get_spec(KtySession *S, int fidx, int nargs, const Type *args,
                         KtySpec *from, const KirInsn *at);

/* How many results a call of cuda.grid(n) or cuda.gridsize(n) gives (n,
** a constant 1..3), math.modf and cuda.match_all_sync 2, or 0 for other
** calls. */
static int grid_results(KtySpec *sp, const KirInsn *v) {
  Type ft = sp->types[v->args[0]->id];
  if (ft.kind == T_BUILTIN && (ft.ref == B_MATH_MODF || ft.ref == B_CUDA_MATCH_ALL_SYNC) &&
      sp->types[v->id].kind != T_UNKNOWN)
    return 2;
  if (ft.kind != T_BUILTIN || (ft.ref != B_CUDA_GRID && ft.ref != B_CUDA_GRIDSIZE) ||
      v->nargs < 2 || sp->types[v->id].kind == T_UNKNOWN)
    return 0;
  KtyConst n = sp->consts[v->args[1]->id];
  return n.kind == T_INT && n.v.i >= 1 && n.v.i <= 3 ? (int)n.v.i : 0;
}

/* Is call v one of a Lua value through lua_call (cg_callvalue.c): a
** function value, or a library built-in given Lua values (string.format
** of a value read from a table), called as the Lua function it is? */
int kty_calls_value(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_CALL) return 0;
  if (sp->varop && sp->varop[v->id]) return 0;   /* select, done here ("Varargs") */
  Type ft = sp->types[v->args[0]->id];
  if (v->flags & KIR_F_TFOR)   /* for ... in pairs(t): runtime/luatfor.c */
    return ft.kind == T_LUA || ft.kind == T_FUNC;
  if (ft.kind == T_LUA && sp->direct && sp->direct[v->id]) return 0;   /* compiled: t_call */
  /* (a known Lua function with a trampoline: given values whose count is
  ** known only when it runs, t_call) */
  return ft.kind == T_LUA || ((ft.kind == T_BUILTIN || ft.kind == T_FUNC || isnum(ft)) &&
                              sp->upvref && sp->upvref[v->id]);
}

/* ---- Varargs (issue 29 item 4) ------------------------------------------
** A vararg function is specialized on how many values '...' holds and on
** their types, as on its parameters' (Numba's *args): they are its last
** sp->nvar arguments (get_spec, t_call_closure), passed by the caller as
** more parameters. So '...' costs nothing at run time: `local a, b = ...`
** reads parameters, `f(...)`, `return ...` and `{...}` pass on a known
** number of values, and `select('#', ...)` is a constant. A value of
** '...' past the last is nil, as interpreted. */
static Type vararg_type(const KtySpec *sp, int j) {
  if (j >= sp->nvar) return ty(T_NIL);
  Type t = sp->args[KTY_VARBASE(sp) + j];
  if (t.kind == T_STR && t.ref > 0) return ty(T_STR);   /* a constant string (vararg_const) */
  return t;
}

/* Value j of '...' and its constant in *k (a constant string passed in, a
** library built-in, nil past the last), as a parameter's (eval's PARAM). */
static Type vararg_const(KtySession *S, const KtySpec *sp, int j, KtyConst *k) {
  if (j >= sp->nvar) { k->kind = T_NIL; return ty(T_NIL); }
  Type t = sp->args[KTY_VARBASE(sp) + j];
  if (t.kind == T_STR && t.ref > 0) { *k = S->strs[t.ref - 1]; return ty(T_STR); }
  if (t.kind == T_BUILTIN) { k->kind = T_BUILTIN; k->ref = t.ref; }
  return t;
}

static int nresults(KtySpec *sp, const KirInsn *v);
static Type result_of(KtySpec *sp, const KirInsn *v, int k);

/* select's list (the operands of call v after its first): its length, or
** -1 while an open call's count is pending; its j-th value's type. */
static int select_count(KtySpec *sp, const KirInsn *v) {
  int fixed = v->nargs - 2 - ((v->flags & KIR_F_OPEN) ? 1 : 0);
  if (!(v->flags & KIR_F_OPEN)) return fixed;
  int m = nresults(sp, v->args[v->nargs - 1]);
  return m < 0 ? -1 : fixed + m;
}

/* The type of value j (0-based) of v's operands from `from` on, an open
** last one expanded: select's list (from 2), assert's results (from 1). */
static Type list_type(KtySpec *sp, const KirInsn *v, int from, int j) {
  int fixed = v->nargs - from - ((v->flags & KIR_F_OPEN) ? 1 : 0);
  if (j < fixed) return sp->types[v->args[from + j]->id];
  if (!(v->flags & KIR_F_OPEN)) return ty(T_NIL);
  return result_of(sp, v->args[v->nargs - 1], j - fixed);
}

static Type select_type(KtySpec *sp, const KirInsn *v, int j) { return list_type(sp, v, 2, j); }

/* ... and its constant (a string, a built-in), where it is one of the
** fixed operands or a value of an open '...' (a vararg helper's
** `select(2, ...)` given constant strings: vararg_const). */
static KtyConst list_const(KtySession *S, const KtySpec *sp, const KirInsn *v, int from, int j) {
  KtyConst k;
  memset(&k, 0, sizeof k);
  int fixed = v->nargs - from - ((v->flags & KIR_F_OPEN) ? 1 : 0);
  if (j < fixed) k = sp->consts[v->args[from + j]->id];
  else if ((v->flags & KIR_F_OPEN) && v->args[v->nargs - 1]->op == KIR_VARARG)
    vararg_const(S, sp, j - fixed, &k);
  return k;
}

/* The constant of result j of v where v is a select(i, ...) done by
** compiled code (KTY_SELECT_FROM): its list's value (a string, a known
** function or table: `select(2, "a", "b")` is "b", returned or measured as
** a constant is); else none. */
static KtyConst select_const(KtySession *S, const KtySpec *sp, const KirInsn *v, int j) {
  KtyConst k;
  memset(&k, 0, sizeof k);
  if (v->op == KIR_CALL && sp->varop[v->id] >= KTY_SELECT_FROM)
    k = list_const(S, sp, v, 2, sp->varop[v->id] - KTY_SELECT_FROM + j);
  return k;
}

/* A call of assert compiled code computes: it returns all its arguments
** (luaB_assert), the first as the call's value. */
static int assert_call(const KtySpec *sp, const KirInsn *v) {
  Type ft = sp->types[v->args[0]->id];
  return v->op == KIR_CALL && ft.kind == T_BUILTIN && ft.ref == B_ASSERT &&
         !(v->flags & KIR_F_TFOR) && sp->types[v->id].kind != T_UNKNOWN;
}

/* The k-th result (0-based) of call or vararg v; unknown while pending. */
static Type result_of(KtySpec *sp, const KirInsn *v, int k) {
  if (v->op == KIR_VARARG) return vararg_type(sp, k);
  if (v->op == KIR_CALL && sp->varop[v->id] == KTY_SELECT_COUNT) return k == 0 ? ty(T_INT) : ty(T_NIL);
  if (v->op == KIR_CALL && sp->varop[v->id] == KTY_SELECT_AT)
    return k == 0 ? sp->types[v->id] : ty(T_NIL);
  if (v->op == KIR_CALL && sp->varop[v->id] >= KTY_SELECT_FROM) {
    int s = sp->varop[v->id] - KTY_SELECT_FROM, m = select_count(sp, v);
    if (m < 0) return ty(T_UNKNOWN);
    return s + k < m ? select_type(sp, v, s + k) : ty(T_NIL);
  }
  if (v->op != KIR_CALL) return ty(T_UNKNOWN);
  if (kty_calls_value(sp, v) && kty_callvalue_tocallee(sp, v) >= 0)
    return sp->types[v->id].kind == T_UNKNOWN ? ty(T_UNKNOWN)
           : k < kty_callvalue_tocallee(sp, v) ? ty(T_LUA) : ty(T_NIL);
  if (kty_calls_value(sp, v)) {   /* lua_call's */
    int cap = kty_callvalue_toret(sp, v);
    return sp->types[v->id].kind == T_UNKNOWN ? ty(T_UNKNOWN)
           : k < (v->aux < 0 ? (cap ? cap : 1) : v->aux) ? ty(T_LUA) : ty(T_NIL);
  }
  KtySpec *c = sp->callees[v->id];
  if (c) {
    if (c->nret < 0) return ty(T_UNKNOWN);
    return k < c->nret ? c->rets[k] : ty(T_NIL);
  }
  Type t = sp->types[v->id];
  if (assert_call(sp, v))
    return k == 0 ? t : k < kty_noperands(sp, v, 1) ? list_type(sp, v, 1, k) : ty(T_NIL);
  int g = grid_results(sp, v);
  if (g > 0) {
    if (k >= g) return ty(T_NIL);
    int fid = sp->types[v->args[0]->id].ref;
    if (fid == B_MATH_MODF) {   /* the integral part, the fraction: f32 of an f32 */
      Type a = v->nargs > 1 ? sp->types[v->args[1]->id] : ty(T_F64);
      return k == 0 ? t : ty(a.kind == T_F32 || (a.kind == T_MAYBE && a.sub == T_F32) ? T_F32 : T_F64);
    }
    if (fid == B_CUDA_MATCH_ALL_SYNC) return k == 0 ? ty(T_INT) : ty(T_BOOL);
    return ty(T_INT);
  }
  if (t.kind == T_BUILTIN && (t.ref == B_KJIT_PRANGE || t.ref == B_IPAIRS) && t.sub)
    return k == 0 ? t : k <= 2 ? ty(T_INT) : ty(T_NIL);   /* the state, the control */
  if ((v->flags & KIR_F_TFOR) && k == 1) {   /* for i, x in ipairs(a): x is a[i] */
    Type it = sp->types[v->args[0]->id];
    if (it.kind == T_BUILTIN && it.ref == B_IPAIRS && it.sub && v->args[0]->nargs > 1) {
      Type o = sp->types[v->args[0]->args[1]->id];
      if (o.kind != T_BUF) return ty(T_UNKNOWN);
      if (o.ndim > 1 || o.dtype == KJIT_RECORD) { o.ndim--; return o; }   /* a row or record view */
      return elem_of(o.dtype);
    }
  }
  if (t.kind == T_UNKNOWN) return t;
  return k == 0 ? t : ty(T_NIL);
}

/* How many results the open call v gives: -1 while pending. */
static int nresults(KtySpec *sp, const KirInsn *v) {
  if (v->op == KIR_VARARG) return sp->nvar;
  if (v->op != KIR_CALL) return -1;
  if (sp->varop[v->id] == KTY_SELECT_COUNT || sp->varop[v->id] == KTY_SELECT_AT) return 1;
  if (kty_callvalue_toret(sp, v) && sp->types[v->id].kind != T_UNKNOWN)
    return kty_callvalue_toret(sp, v);
  if (kty_callvalue_tocallee(sp, v) >= 0 && sp->types[v->id].kind != T_UNKNOWN)
    return kty_callvalue_tocallee(sp, v);
  if (sp->varop[v->id] >= KTY_SELECT_FROM) {
    int m = select_count(sp, v);
    return m < 0 ? -1 : m - (sp->varop[v->id] - KTY_SELECT_FROM);
  }
  KtySpec *c = sp->callees[v->id];
  if (c) return c->nret;
  if (assert_call(sp, v)) return kty_noperands(sp, v, 1);
  if (grid_results(sp, v) > 0) return grid_results(sp, v);
  Type ft = sp->types[v->args[0]->id];
  if (ft.kind == T_BUILTIN && (ft.ref == B_PRINT || ft.ref == B_TABLE_INSERT))
    return 0;   /* print and table.insert return no value */
  return sp->types[v->id].kind == T_UNKNOWN ? -1 : 1;
}

int kty_select_only(const KtySpec *sp, const KirInsn *v) {
  if (v->nusers == 0 || (v->op != KIR_GETUPVAL && v->op != KIR_GETFIELD)) return 0;
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op != KIR_CALL || !sp->varop[u->id] || u->args[0] != v) return 0;
    for (int j = 1; j < u->nargs; j++) if (u->args[j] == v) return 0;
  }
  return 1;
}

int kty_callvalue_toret(const KtySpec *sp, const KirInsn *v) {
  if (!kty_calls_value(sp, v) || v->aux >= 0 || v->nusers != 1) return 0;
  const KirInsn *u = v->users[0];
  if (u->op != KIR_RET || !(u->flags & KIR_F_OPEN) || u->args[u->nargs - 1] != v) return 0;
  /* (half the results a function may have, so that its callers may pass
  ** them on after values of their own) */
  int cap = KJIT_MAXRETS / 2 - (u->nargs - 1);
  return cap > 0 ? cap : 0;
}

/* An open call v of a function value whose values all go to a compiled
** Lua function without '...' (`g(t.f())`, `local function g(a, b)`): it
** gives that function's parameters past the ones before it, as many as
** there are (lua_call adjusts: missing ones nil, extra ones dropped, as
** the interpreter's call does): their number, -1 when v is not such a call. */
int kty_callvalue_tocallee(const KtySpec *sp, const KirInsn *v) {
  if (!kty_calls_value(sp, v) || v->aux >= 0 || v->nusers != 1 || (v->flags & KIR_F_TFOR)) return -1;
  const KirInsn *u = v->users[0];
  if (u->op != KIR_CALL || !(u->flags & KIR_F_OPEN) || u->args[u->nargs - 1] != v ||
      (u->flags & KIR_F_TFOR) || kty_calls_value(sp, u) || (sp->varop && sp->varop[u->id]))
    return -1;
  const KtySpec *c = sp->callees[u->id];
  if (c == NULL || c->vararg || c->ir == NULL) return -1;
  for (int i = 1; i < u->nargs - 1; i++) if (u->args[i] == v) return -1;
  int k = c->ir->proto->numparams - (u->nargs - 2);
  return k < 0 ? 0 : k;
}

int kty_noperands(KtySpec *sp, const KirInsn *v, int from) {
  int n = v->nargs - from - ((v->flags & KIR_F_OPEN) ? 1 : 0);
  if (v->flags & KIR_F_OPEN) {
    int m = nresults(sp, v->args[v->nargs - 1]);
    if (m > 0) n += m;
  }
  return n < 0 ? 0 : n;
}

/* Call v of an array method ending in the values of a compiled call whose
** count varies (`a:fill(g(x))`, cs g's specialization): the method reads
** none past g's first, which every return of g gives, and its C function
** ignores the rest, so they are passed as typed (t_builtin reads the
** first maxargs). Methods are not called as function values: lua_call
** would name their arguments from #2, not from #1 as a method call does. */
static int dyn_ignored(const KtySpec *sp, const KirInsn *v, const KtySpec *cs) {
  if (v->op != KIR_CALL || cs == NULL) return 0;
  Type ft = sp->types[v->args[0]->id];
  if (ft.kind != T_BUILTIN || !B_IS_ARRAY(ft.ref) || kty_builtin_valuename(ft.ref)) return 0;
  int given = (v->nargs - 2) + 1;   /* (self included) and g's first */
  return kty_builtin_reads(ft.ref, given + 1) <= given && cs->nretmin >= 1;
}

/* The values of v's operands from `from` on, an open last one expanded:
** their count, or -1 while an open call's count is pending. */
static int operands(KtySession *S, KtySpec *sp, const KirInsn *v, int from, Type *out,
                    KtyConst *kout, int max) {
  KtyConst kv;
  int n = 0;
  int last = v->nargs - ((v->flags & KIR_F_OPEN) ? 1 : 0);
  for (int i = from; i < last; i++) {
    if (n >= max) fail(S, sp, v, "too many values (at most %d)", max);
    if (kout) kout[n] = sp->consts[v->args[i]->id];
    out[n++] = sp->types[v->args[i]->id];
  }
  if (v->flags & KIR_F_OPEN) {
    const KirInsn *c = v->args[v->nargs - 1];
    int m = nresults(sp, c);
    if (m < 0) return -1;
    KtySpec *cs = c->op == KIR_CALL ? sp->callees[c->id] : NULL;
    if (S->strict && cs && cs->dyncount && v->op != KIR_RET &&
        !(v->op == KIR_CALL && sp->callees[v->id] && !sp->callees[v->id]->vararg) &&
        !(kty_calls_value(sp, v) && !(v->flags & KIR_F_TFOR)) &&
        !kty_ctor_deferred(sp, v) && !kty_ctor_grows(sp, v) &&
        !(v->op == KIR_CALL && sp->varop[v->id] == KTY_SELECT_COUNT) &&
        !dyn_ignored(sp, v, cs)) {
      /* how many values it gave is known when it runs: passed on where
      ** the code generator uses that count (a return, a function value's
      ** arguments: cg_vararg.c) or where the count does not show (a
      ** compiled function's parameters, which are nil when missing); not
      ** into a table constructor, whose array part the VM sizes by that
      ** count (`#` of it would differ) */
      const char *what = v->op == KIR_SETLIST ? "in a table constructor" :
                         v->op == KIR_CALL ? "as the last argument of this call" : "here";
      fail(S, sp, v, "the function called here returns different numbers of values on "
           "different paths (up to %d); compiled code cannot pass all of them on %s: take "
           "them into locals first (`local a, b = f(x)`) or return the same number on "
           "every path", m, what);
    }
    for (int j = 0; j < m; j++) {
      if (n >= max) fail(S, sp, v, "too many values (at most %d)", max);
      if (c->op == KIR_VARARG) {   /* f(...): each value with its constant */
        memset(&kv, 0, sizeof kv);
        out[n] = vararg_const(S, sp, j, &kv);
        if (kout) kout[n] = kv;
        n++;
        continue;
      }
      if (kout) {
        memset(&kout[n], 0, sizeof kout[n]);
        if (j == 0) kout[n] = sp->consts[c->id];
        else if (assert_call(sp, c)) kout[n] = list_const(S, sp, c, 1, j);   /* assert(x, "m") */
        else kout[n] = select_const(S, sp, c, j);
      }
      out[n++] = result_of(sp, c, j);
    }
  }
  return n;
}

/* ---- Transfer functions --------------------------------------------------- */

/* The join of the values reaching a phi (or returned), numbers keeping
** their subtypes; a constant false or nil with numbers is a T_MAYBE. */
typedef struct KtyJoin {
  int lua, luasub;      /* a Lua value (T_LUA) joined: anything boxable joins it */
  int nil, fals, boolv;
  Type num, other;
  int conflict;
  Type first, second;   /* two types that conflict, for the message */
} Join;

static void join_add(Join *J, Type t, KtyConst k) {
  if (t.kind == T_UNKNOWN) return;
  if (J->first.kind == T_UNKNOWN) J->first = t;
  else if (J->second.kind == T_UNKNOWN && !tyeq(J->first, t)) J->second = t;
  switch (t.kind) {
  case T_LUA:
    J->luasub = J->lua ? (J->luasub == t.sub ? t.sub : 0) : t.sub;
    J->lua = 1;
    break;
  case T_NIL: J->nil = 1; break;
  case T_BOOL: if (k.kind == T_BOOL && !k.v.b) J->fals = 1; else J->boolv = 1; break;
  case T_MAYBE:
    if (t.dtype) J->nil = 1; else J->fals = 1;
    J->num = numjoin(J->num, numview(t));
    break;
  case T_INT: case T_F64: case T_F32: case T_NUMBER: J->num = numjoin(J->num, t); break;
  default:
    if (J->other.kind == T_UNKNOWN) J->other = t;
    else if (!tyeq(J->other, t)) {
      Type a = J->other, b = t;
      a.weak = b.weak = 0;
      if (!tyeq(a, b)) J->conflict = 1;
    }
  }
}

static Type join_result(Join *J) {
  int falsy = J->nil || J->fals || J->boolv;
  if (J->lua) {
    /* a Lua value joined with numbers, booleans, nil or strings: each is
    ** boxed into the phi's stack slot (codegen/cg_lua.c) */
    Type r = ty(T_LUA);
    int only = !falsy && J->num.kind == T_UNKNOWN &&
               (J->other.kind == T_UNKNOWN ||   /* strings with constant strings */
                (J->other.kind == T_STR && J->other.sub != T_NUMBER && J->luasub == KTY_LUA_STRING));
    r.sub = (uint8_t)(only ? J->luasub : 0);
    if (J->conflict || (J->other.kind != T_UNKNOWN && J->other.kind != T_STR)) return ty(T_CONFLICT);
    return r;
  }
  if (J->conflict) return ty(T_CONFLICT);
  if (J->other.kind != T_UNKNOWN)
    return (falsy || J->num.kind != T_UNKNOWN) ? ty(T_CONFLICT) : J->other;
  if (J->num.kind != T_UNKNOWN) {
    if (J->boolv || (J->nil && J->fals)) return ty(T_CONFLICT);
    if (!J->nil && !J->fals) return J->num;
    Type r = ty(T_MAYBE);
    r.sub = J->num.kind; r.fsub = J->num.fsub; r.dtype = (uint8_t)J->nil;
    return r;
  }
  if (J->boolv || J->fals) return J->nil ? ty(T_CONFLICT) : ty(T_BOOL);
  return J->nil ? ty(T_NIL) : ty(T_UNKNOWN);
}

/* What value a is known to be on the edge into `to` from its i-th
** predecessor: true (1) or false (0) when that edge leaves a branch on a
** itself, through blocks that only jump (`c and x`: c is false where it
** reaches the join; `m or y`: m is true); else -1. */
int kty_edge_truth(const KirInsn *a, const KirBlock *to, int i) {
  const KirBlock *from = to, *p = to->preds[i];
  for (int hops = 0; hops < 4; hops++) {
    const KirInsn *t = p->term;
    if (t && t->op == KIR_BR && t->args[0] == a)
      return p->succ[0] == p->succ[1] ? -1 : p->succ[0] == from;
    if (p->npreds != 1 || p->nphis || p->ninsns || !t || t->op != KIR_JMP) return -1;
    from = p;
    p = p->preds[0];
  }
  return -1;
}

/* Narrows (t, k) to what it is when known true or false. */
static void narrow(Type *t, KtyConst *k, int truthy) {
  if (t->kind == T_MAYBE) {
    if (truthy) { *t = numview(*t); return; }
    int isnil = t->dtype;
    *t = ty(isnil ? T_NIL : T_BOOL);
    memset(k, 0, sizeof *k);
    k->kind = isnil ? T_NIL : T_BOOL;
  } else if (t->kind == T_BOOL) {
    memset(k, 0, sizeof *k);
    k->kind = T_BOOL;
    k->v.b = truthy;
  }
}

/* Every string reaching phi v is a constant (each edge can box it). */
static int phi_strs_boxable(KtySpec *sp, const KirInsn *v) {
  for (int i = 0; i < v->nargs; i++) {
    if (!edge_runs(sp, v->block, i)) continue;
    const KirInsn *a = v->args[i];
    Type t = sp->types[a->id];
    if (t.kind == T_STR && (t.sub == T_NUMBER || sp->consts[a->id].kind != T_STR)) return 0;
  }
  return 1;
}

/* Function, table and library-function constants (different ones: `local
** f = c and g or h`, `local t = c and K or {}`, `f = math.abs` on one path)
** meet at phi v, with nothing else than Lua values, numbers, booleans and
** nil: each edge can box its value (cg_lua_box, cg_fn_boxconst) into the
** phi's slot, which holds a Lua value. */
static int phi_consts_boxable(KtySpec *sp, const KirInsn *v) {
  int consts = 0;
  for (int i = 0; i < v->nargs; i++) {
    if (!edge_runs(sp, v->block, i)) continue;
    Type t = sp->types[v->args[i]->id];
    switch (t.kind) {
    case T_FUNC: case T_TABLE:
      if (t.ref <= 0) return 0;
      consts++;
      break;
    case T_BUILTIN:
      if (kty_builtin_valuename(t.ref) == NULL) return 0;
      consts++;
      break;
    case T_LUA: case T_NIL: case T_BOOL: case T_MAYBE: case T_UNKNOWN:
    case T_INT: case T_F64: case T_F32: case T_NUMBER:
      break;
    default: return 0;
    }
  }
  return consts > 0;
}

/* A phi's type from the join of what reaches it: join_result, and a Lua
** value where numbers, booleans, nil and constant strings have no native
** type in common (see t_phi). */
static Type phi_join(KtySession *S, KtySpec *sp, const KirInsn *v, Join *J) {
  Type r = join_result(J);
  /* numbers, booleans and nil with no native type in common (`local v = c
  ** and x or (y > 2)`, a number-or-false that may also be nil): a Lua
  ** value, as ret_join makes of such returns; each edge boxes its value
  ** into the phi's slot, and uses go through Lua's rules (truthiness, ==,
  ** arithmetic with its "attempt to perform arithmetic on a boolean
  ** value"). Kernels have no Lua values: the conflict stays theirs. */
  if (r.kind == T_CONFLICT && !J->conflict && J->other.kind == T_UNKNOWN && !S->kernel)
    r = ty(T_LUA);
  /* ... and a constant string with numbers, booleans or nil (`local v; if
  ** x > 0 then v = "pos" else v = x end`): the same, each string boxed on
  ** its edge (math.type's integer-or-float strings have no value to box) */
  if (r.kind == T_CONFLICT && !J->conflict && J->other.kind == T_STR && J->other.sub != T_NUMBER &&
      !S->kernel && phi_strs_boxable(sp, v))
    r = ty(T_LUA);
  /* ... and different function, table or library-function constants
  ** (phi_consts_boxable) */
  if (r.kind == T_CONFLICT && !S->kernel && phi_consts_boxable(sp, v)) r = ty(T_LUA);
  return r;
}

#define PHI_SOURCES 32
/* The types that reach phi v on its running edges (narrowed as t_phi
** narrows them), looking through the phis whose own type is a conflict:
** the phis of a loop that conflict do so in a cycle, and each one's edges
** would only name the other's "conflict". seen: the phis looked through. */
static int phi_sources(KtySpec *sp, KirInsn *v, Type *ts, int n, KirInsn **seen, int *nseen) {
  seen[(*nseen)++] = v;
  for (int i = 0; i < v->nargs && n < PHI_SOURCES; i++) {
    if (!edge_runs(sp, v->block, i)) continue;
    KirInsn *a = v->args[i];
    Type t = sp->types[a->id];
    if (t.kind == T_UNKNOWN) continue;
    if (t.kind == T_CONFLICT && a->op == KIR_PHI) {
      int known = 0;
      for (int j = 0; j < *nseen; j++) known |= seen[j] == a;
      if (!known && *nseen < PHI_SOURCES) n = phi_sources(sp, a, ts, n, seen, nseen);
      continue;
    }
    KtyConst ka = sp->consts[a->id];
    int tr = kty_edge_truth(a, v->block, i);
    if (tr >= 0) narrow(&t, &ka, tr);
    ts[n++] = t;
  }
  return n;
}

/* For the message of a phi that conflicts: two types reaching it that
** have no type in common (phi_join), neither of them a conflict already.
** The first two types to arrive (Join.first, .second) need not be such a
** pair: a loop's header phi with 1 on entry and, from its body, a phi
** holding an array or itself named "i64 and conflict"; a weak and a plain
** i64 print alike. prev: a loop header phi's own previous type (t_phi),
** or T_UNKNOWN. Returns 0 when no two of them conflict alone. */
static int phi_conflict_pair(KtySession *S, KtySpec *sp, KirInsn *v, Type prev, Type *x, Type *y) {
  Type ts[PHI_SOURCES + 1];
  KirInsn *seen[PHI_SOURCES];
  int nseen = 0, n = phi_sources(sp, v, ts, 0, seen, &nseen);
  if (prev.kind != T_UNKNOWN && prev.kind != T_CONFLICT) ts[n++] = prev;
  KtyConst none;
  memset(&none, 0, sizeof none);
  for (int j = 1; j < n; j++)
    for (int i = 0; i < j; i++) {
      if (ts[i].kind == T_CONFLICT || ts[j].kind == T_CONFLICT) continue;
      Join P;
      memset(&P, 0, sizeof P);
      join_add(&P, ts[i], none);
      join_add(&P, ts[j], none);
      if (phi_join(S, sp, v, &P).kind == T_CONFLICT) { *x = ts[i]; *y = ts[j]; return 1; }
    }
  return 0;
}

static Type t_phi(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  Join J;
  memset(&J, 0, sizeof J);
  int nk = 0, same = 1;
  KirInsn *second = NULL;   /* the value that brought a second type */
  KtyConst k0;
  memset(&k0, 0, sizeof k0);
  for (int i = 0; i < v->nargs; i++) {
    if (!edge_runs(sp, v->block, i)) continue;
    KirInsn *a = v->args[i];
    Type t = sp->types[a->id];
    if (t.kind == T_UNKNOWN) { same = 0; continue; }
    KtyConst ka = sp->consts[a->id];
    int tr = kty_edge_truth(a, v->block, i);
    if (tr >= 0) narrow(&t, &ka, tr);
    int had = J.second.kind != T_UNKNOWN;
    join_add(&J, t, ka);
    if (!had && J.second.kind != T_UNKNOWN) second = a;
    if (nk++ == 0) k0 = ka; else if (!consteq(k0, ka)) same = 0;
  }
  /* A loop header's phi of numbers, booleans, nil or Lua values only
  ** rises: its previous type joins the edges'. While types rise, a call's
  ** result is not monotone in its arguments: a wider argument picks
  ** another specialization whose results may not have risen yet (a
  ** recursive callee with only its base case typed). A loop's phi feeding
  ** such a call fell back, the call picked the first specialization
  ** again, the phi rose again, forever (difffuzz 410054; settle drains
  ** one specialization's work before the next one's, so the new one never
  ** rose). Joined with its previous type, the phi climbs at most the
  ** lattice's height and holds every value the interpreter brings there
  ** (each edge converts or boxes its value into it). Header phis only
  ** (every phi where loops are irreducible): every cycle of values passes
  ** through one, and an and/or join's passing type (an edge typed before
  ** its narrowing applied) must still go (`c and 7` stays false|i64).
  ** Messages name the edges' types; a widened phi is no constant. */
  Type exact = join_result(&J), before = sp->types[v->id];
  int widened = 0;
  KirBlock *b = v->block;
  int loop_phi = sp->ir->irreducible || (b->loop != NULL && b->loop->header == b);
  if (loop_phi && nk > 0 && (isnum(before) || before.kind == T_MAYBE || before.kind == T_NIL ||
                             before.kind == T_BOOL || before.kind == T_LUA)) {
    Type first = J.first, two = J.second;
    join_add(&J, before, sp->consts[v->id]);
    J.first = first;
    J.second = two;
    Type w = join_result(&J), e = exact;
    w.weak = e.weak = 0;
    widened = !tyeq(w, e);   /* (not weakness alone) */
  }
  Type r = phi_join(S, sp, v, &J);
  if (same && nk > 0 && k0.kind != T_UNKNOWN && !widened) *k = k0;
  /* a string that differs between paths becomes a Lua value (below);
  ** math.type's integer-or-float strings (sub T_NUMBER) have no such form */
  if (nk > 0 && k->kind != T_STR &&
      ((r.kind == T_STR) || (r.kind == T_CONFLICT && J.first.kind == T_STR && J.second.kind == T_STR))) {
    /* constant strings that differ between paths (`s = s .. "x"` in a
    ** loop): the phi holds a Lua value, each constant boxed on its edge */
    if (J.first.sub != T_NUMBER && (J.second.kind == T_UNKNOWN || J.second.sub != T_NUMBER)) {
      memset(k, 0, sizeof *k);
      Type r = ty(T_LUA);
      r.sub = KTY_LUA_STRING;
      return r;
    }
    REFUSE(S, sp, v, "a string that differs between paths (%s) is not supported in compiled "
           "code: strings must be constants here", v->name ? v->name : "a value");
  }
  if (r.kind == T_CONFLICT && S->strict) {
    char b1[32], b2[32];
    /* at the assignment that brought the second type, as Lua reports it */
    const KirInsn *at = second && second->line >= 0 ? second : v;
    Type x = J.first, y = J.second;
    phi_conflict_pair(S, sp, v, loop_phi ? before : ty(T_UNKNOWN), &x, &y);   /* the real one */
    if (v->name)
      fail(S, sp, at, "local '%s' holds both %s and %s values; a compiled local has one type",
           v->name, kty_name(x, b1, sizeof b1), kty_name(y, b2, sizeof b2));
    fail(S, sp, at, "a value here is %s on one path and %s on another; compiled code needs "
         "one type ('and'/'or' or a local)", kty_name(x, b1, sizeof b1), kty_name(y, b2, sizeof b2));
  }
  return r;
}

/* Does the running Lua convert a numeric string in a bitwise operation
** ("3" | 0)? (A build with LUA_NOCVTS2N does not.) */
static int bor_probe(lua_State *L) {
  lua_pushliteral(L, "3");
  lua_pushinteger(L, 0);
  lua_arith(L, LUA_OPBOR);
  return 1;
}
static int bitwise_converts_strings(lua_State *L) {
  lua_pushcfunction(L, bor_probe);
  int ok = lua_pcall(L, 0, 1, 0) == LUA_OK;
  lua_pop(L, 1);
  return ok;
}

static Type t_arith(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  KirInsn *x = v->args[0], *y = v->args[1];
  Type a = numview(sp->types[x->id]), b = numview(sp->types[y->id]);
  if (a.kind == T_UNKNOWN || b.kind == T_UNKNOWN) return ty(T_UNKNOWN);
  /* a constant string with a number or a string (`s + 1` with s "0x10" on
  ** the path that runs): Lua converts it (the string library's
  ** metamethods, the VM's coercion for bitwise operators) or raises its
  ** own error; Lua's arithmetic does both, as for a Lua value */
  int stra = a.kind == T_STR && a.sub != T_NUMBER && sp->consts[x->id].kind == T_STR,
      strb = b.kind == T_STR && b.sub != T_NUMBER && sp->consts[y->id].kind == T_STR;
  /* ... with nil, a boolean or a known function, which have no metamethod:
  ** the string library's runs and raises its own words (lstrlib.c trymt),
  ** when the operation runs (difffuzz, found/string-arith-bool-message.lua) */
  if (stra != strb && v->nargs == 2 && !S->kernel && !isbitwise(v->op) &&
      no_arith_meta(S, stra ? b : a, v)) {
    RAISE(S, sp, v, -1, "attempt to %s a '%s' with a '%s'", kir_opname[v->op],
          stra ? "string" : lua_typename_of(a), strb ? "string" : lua_typename_of(b));
  }
  if ((stra || strb) && v->nargs == 2 && !S->kernel && (stra || isnum(a) || islua(a)) &&
      (strb || isnum(b) || islua(b))) {
    if (!isbitwise(v->op)) return ty(T_LUA);
    /* bitwise: the VM converts a string only where the running Lua was
    ** built to (cvt2num); where it does not, Lua's error, named, when the
    ** operation runs */
    if (!bitwise_converts_strings(S->L))
      RAISE(S, sp, v, stra ? 0 : 1, "attempt to perform bitwise operation on a string value");
  }
  if (islua(a) || islua(b)) {   /* Lua's arithmetic, metamethods included */
    if (!boxable(a, sp->consts[x->id])) REFUSE_UNBOXABLE(S, sp, v, x, "an operand of arithmetic on a table value");
    if (!boxable(b, sp->consts[y->id])) REFUSE_UNBOXABLE(S, sp, v, y, "an operand of arithmetic on a table value");
    return ty(T_LUA);
  }
  if (!isnum(a) || !isnum(b)) {
    KirInsn *bad = isnum(a) ? y : x;
    char tb[32], db[128];
    FROZEN_NIL(S, sp, v, bad);
    /* arithmetic with an array: buffer.c's metamethods raise it
    ** interpreted, without the variable's name, the array's with a hint */
    int witharr = !isbitwise(v->op) && ((a.kind == T_BUF && a.dtype != KJIT_RECORD) ||
                                        (b.kind == T_BUF && b.dtype != KJIT_RECORD));
    if (raises_on(sp->types[bad->id]) && witharr)
      RAISE(S, sp, v, -1, "attempt to perform arithmetic on a %s value%s",
            objtypename(sp->types[bad->id]),
            sp->types[bad->id].kind == T_BUF && sp->types[bad->id].dtype != KJIT_RECORD
            ? KJIT_HINT_ARRAY_ARITH : "");
    /* (nil and booleans: where neither type has the metamethod, which
    ** debug.setmetatable may give them: op_meta; else refused below) */
    Type ta = sp->types[x->id], tb2 = sp->types[y->id];
    int meta = !S->kernel && (op_meta(S, ta, v) || op_meta(S, tb2, v));
    if (raises_on(sp->types[bad->id]) && !meta)
      RAISE(S, sp, v, bad == x ? 0 : 1, "attempt to %s a %s value",
            isbitwise(v->op) ? "perform bitwise operation on" : "perform arithmetic on",
            objtypename(sp->types[bad->id]));
    /* a known function (Lua's or a library's) with a number, nil, a
    ** boolean or another: no metamethod, Lua's error when it runs
    ** (difffuzz, found/function-arith-compile-error.lua) */
    /* (a number-or-nil after a function first: Lua names the function;
    ** numbers and nil may have a metatable too: has_event) */
    if (!S->kernel && (no_arith_meta(S, ta, v) || (isnum(ta) && !op_meta(S, ta, v))) &&
        (no_arith_meta(S, tb2, v) || ((isnum(tb2) || (bad == x && tb2.kind == T_MAYBE)) &&
                                      !op_meta(S, tb2, v))) &&
        (sp->types[bad->id].kind == T_FUNC || sp->types[bad->id].kind == T_BUILTIN))
      RAISE(S, sp, v, bad == x ? 0 : 1, "attempt to %s a function value",
            isbitwise(v->op) ? "perform bitwise operation on" : "perform arithmetic on");
    REFUSE(S, sp, v, "attempt to %s a %s value%s",
           isbitwise(v->op) ? "perform bitwise operation on" : "perform arithmetic on",
           luaname(sp->types[bad->id], tb, sizeof tb), describe(sp, bad, db, sizeof db));
  }
  Type t = arith_type(v->op, a, b);
  KtyConst r;
  if (kty_fold_arith(v->op, sp->consts[x->id], sp->consts[y->id], &r)) {
    *k = r;
    if (r.kind != t.kind) t = weakty(r.kind, t.weak);   /* 2^2 of integers: f64 */
  }
  return t;
}

/* #P of a frozen table (an upvalue or global read at compile time): its
** length then, a constant like its elements (issue 29 item 7). A table
** whose metatable has __len is refused: the metamethod would have to run
** at every call to stay what the interpreter computes. */
static Type t_frozen_len(KtySession *S, KtySpec *sp, KirInsn *v, Type a, KtyConst *k) {
  lua_State *L = S->L;
  push_value(S, a.ref);
  int has_len = 0;
  if (lua_getmetatable(L, -1)) {
    has_len = lua_getfield(L, -1, "__len") != LUA_TNIL;
    lua_pop(L, 2);
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  lua_pop(L, 1);
  if (has_len)
    REFUSE(S, sp, v, "the length of a table with a __len metamethod is not supported in "
           "compiled code");
  k->kind = T_INT;
  k->v.i = n;
  return ty(T_INT);
}

static Type t_unary(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  KirInsn *x = v->args[0];
  Type a = sp->types[x->id];
  KtyConst ka = sp->consts[x->id];
  char tb[32], db[128];
  if (a.kind == T_UNKNOWN) return a;
  if (v->op == KIR_NOT) {
    int tr = truth(a, ka);
    if (tr == 0 || tr == 1) { k->kind = T_BOOL; k->v.b = !tr; }
    return ty(T_BOOL);
  }
  if (islua(a)) return ty(T_LUA);   /* #t, -t, ~t: Lua's, metamethods included */
  if (v->op == KIR_LEN) {
    if (ka.kind == T_STR) {   /* #"text": a constant, as Lua counts it (bytes) */
      k->kind = T_INT;
      k->v.i = (lua_Integer)ka.len;
      return ty(T_INT);
    }
    if (a.kind == T_STR)
      REFUSE(S, sp, v, "the length of a string that is not a constant is not supported in "
             "compiled code");
    if (a.kind == T_TABLE) return t_frozen_len(S, sp, v, a, k);
    if ((a.kind == T_NIL || a.kind == T_BOOL || a.kind == T_INT || isfloat(a) || a.kind == T_NUMBER ||
         a.kind == T_FUNC || a.kind == T_CLOSURE) &&   /* (one metatable for all functions) */
        (S->kernel || !has_event(S, a.kind == T_CLOSURE ? ty(T_FUNC) : a, "__len")))   /* (debug.setmetatable: refused below) */
      RAISE(S, sp, v, 0, "attempt to get length of a %s value", objtypename(a));
    /* a number or nil (false) always raises, naming what it holds when it
    ** runs: Lua's own #, on the value boxed (cg_lua.c cg_lua_len), never a
    ** compile error for code that may not run (fuzzer program 148204) */
    if (a.kind == T_MAYBE && !S->kernel) return ty(T_LUA);
    if (a.kind != T_BUF)
      REFUSE(S, sp, v, "attempt to get length of a %s value%s", luaname(a, tb, sizeof tb),
             describe(sp, x, db, sizeof db));
    if (a.dtype == KJIT_RECORD && a.ndim == 0) RAISE(S, sp, v, -1, "attempt to get length of a record");
    return ty(T_INT);
  }
  /* -"1": a constant string converted as Lua converts it (t_arith) */
  if (v->op == KIR_UNM && a.kind == T_STR && a.sub != T_NUMBER && ka.kind == T_STR && !S->kernel)
    return ty(T_LUA);
  a = numview(a);
  if (raises_on(a) && a.kind == T_BUF && a.dtype != KJIT_RECORD && v->op == KIR_UNM)   /* buffer.c's __unm */
    RAISE(S, sp, v, -1, "attempt to perform arithmetic on a kjit.array value"
          KJIT_HINT_ARRAY_ARITH);
  if ((raises_on(a) && (S->kernel || a.kind == T_BUF || !op_meta(S, a, v))) ||
      ((a.kind == T_FUNC || a.kind == T_BUILTIN) && no_arith_meta(S, a, v) && !S->kernel))
    RAISE(S, sp, v, 0, "attempt to %s a %s value", v->op == KIR_UNM ? "perform arithmetic on"
          : "perform bitwise operation on", raises_on(a) ? objtypename(a) : "function");
  if (!isnum(a))
    REFUSE(S, sp, v, "attempt to %s a %s value%s", v->op == KIR_UNM ? "perform arithmetic on"
           : "perform bitwise operation on", luaname(a, tb, sizeof tb),
           describe(sp, x, db, sizeof db));
  if (v->op == KIR_UNM) {
    if (ka.kind == T_INT) { *k = ka; k->v.i = (lua_Integer)(0u - (lua_Unsigned)ka.v.i); }
    else if (ka.kind == T_F64) { *k = ka; k->v.f = -ka.v.f; }
    return a;
  }
  lua_Integer i;   /* BNOT */
  if (ka.kind == T_INT || (ka.kind == T_F64 && kty_float_to_int(ka.v.f, &i))) {
    k->kind = T_INT;
    k->v.i = ~(ka.kind == T_INT ? ka.v.i : i);
  }
  return weakty(T_INT, a.weak);
}

/* A string built at run time (tostring, string.format, '..': runtime_lib.c). */
static int is_built_str(Type t) { return t.kind == T_STR && t.sub == KTY_STR_BUILT; }

/* a == b where an operand is a kjit array or a frozen table (refuse3):
** Lua compares them by identity (arrays have no __eq; a table's __eq runs
** only against another table). Values of different kinds, or arrays of
** different dtypes or ranks, are never the same object: false, known now;
** one value is itself: true. Otherwise both are made Lua values (an
** array's userdata, runtime/luaarray.c; a frozen table by its registry
** reference) and compared when the code runs (codegen/cg_lua.c
** cg_lua_eq_ident: lua_compare, the table's __eq included). */
static Type t_compare_ident(KtySession *S, KtySpec *sp, KirInsn *v, Type a, Type b, KtyConst ka,
                            KtyConst kb, KtyConst *k) {
  k->kind = T_BOOL;
  if (v->args[0] == v->args[1]) { k->v.b = 1; return ty(T_BOOL); }
  k->v.b = 0;
  if (a.kind != b.kind) return ty(T_BOOL);   /* a table and an array, a number ... */
  if (a.kind == T_BUF && (a.dtype != b.dtype || a.ndim != b.ndim ||
                          (a.dtype == KJIT_RECORD && a.ref != b.ref)))
    return ty(T_BOOL);
  k->kind = T_UNKNOWN;
  if (S->kernel)
    REFUSE(S, sp, v, "comparing two arrays with '==' is not supported in kernels: compare "
           "something that tells them apart (a size, an index, a flag passed in)");
  if (!boxable(a, ka) || !boxable(b, kb))
    REFUSE(S, sp, v, "comparing two %s with '==' is not supported in compiled code yet: compare "
           "them in the caller and pass the result in (a boolean argument)",
           a.kind == T_TABLE ? "tables read from upvalues or globals" : "arrays of records");
  return ty(T_BOOL);
}

static Type t_compare(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  Type a = sp->types[v->args[0]->id], b = sp->types[v->args[1]->id];
  KtyConst ka = sp->consts[v->args[0]->id], kb = sp->consts[v->args[1]->id];
  char b1[32], b2[32];
  /* an operand never produced (its operation always raises): the
  ** comparison never runs, as the code generator knows (cg_never_produced);
  ** typed as a boolean, the branch on it made both ways live here and
  ** unreachable there (a loop behind it planned on values never emitted).
  ** An operand not typed yet waits likewise: a boolean meanwhile marked
  ** both edges for good (edges stay marked), so the error() behind `v ==
  ** nil` of an array was refused as if it could run. */
  if (a.kind == T_UNKNOWN || b.kind == T_UNKNOWN) return ty(T_UNKNOWN);
  if (is_built_str(a) || is_built_str(b))
    REFUSE(S, sp, v, "comparing a string built at run time is not supported in compiled code "
           "(such strings can be printed, written or raised: print, io.write, error, assert)");
  if (islua(a) || islua(b)) {   /* lua_compare: __eq, __lt, __le */
    if (!boxable(a, ka)) REFUSE_UNBOXABLE(S, sp, v, v->args[0], "compared with a table value");
    if (!boxable(b, kb)) REFUSE_UNBOXABLE(S, sp, v, v->args[1], "compared with a table value");
    return ty(T_BOOL);
  }
  if (v->op == KIR_EQ && (a.kind == T_CLOSURE || b.kind == T_CLOSURE)) {
    /* function literals: one value is itself; literals of two sites, or a
    ** literal and anything else, differ; two values of one site may be
    ** two closures (made in two iterations) */
    if (v->args[0] != v->args[1] && a.kind == b.kind && a.ref == b.ref)
      REFUSE(S, sp, v, "comparing two function values made by the same function literal is "
             "not supported in compiled code");
    k->kind = T_BOOL;
    k->v.b = v->args[0] == v->args[1];
    return ty(T_BOOL);
  }
  if (v->op == KIR_EQ) {
    /* two records: equal fields (host/record.c's __eq); other layouts: false */
    if (a.kind == T_BUF && b.kind == T_BUF && a.dtype == KJIT_RECORD && b.dtype == KJIT_RECORD &&
        a.ndim == 0 && b.ndim == 0) {
      if (a.ref != b.ref) { k->kind = T_BOOL; k->v.b = 0; }
      return ty(T_BOOL);
    }
    if (a.kind == T_BUF || b.kind == T_BUF || a.kind == T_TABLE || b.kind == T_TABLE)
      return t_compare_ident(S, sp, v, a, b, ka, kb, k);
    /* math.type of an integer-or-float against a constant string: the
    ** generator compares the number's tag; against a non-string: false */
    int am = a.kind == T_STR && a.sub == T_NUMBER, bm = b.kind == T_STR && b.sub == T_NUMBER;
    if (am || bm) {
      Type o = am ? b : a;
      KtyConst ko = am ? kb : ka;
      if (o.kind == T_STR && ko.kind == T_STR && !(am && bm)) return ty(T_BOOL);
      if (o.kind != T_STR && o.kind != T_MAYBE) { k->kind = T_BOOL; k->v.b = 0; return ty(T_BOOL); }
      REFUSE(S, sp, v, "math.type of a value that may be an integer or a float can only be "
             "compared with a constant string in compiled code");
    }
    /* constants of one kind fold (math.type(x) == "float"); nil against a
    ** value never nil does not: a generic for's exit test is one */
    if (ka.kind != T_UNKNOWN && ka.kind == kb.kind && ka.kind != T_TABLE && ka.kind != T_FUNC) {
      k->kind = T_BOOL;
      k->v.b = ka.kind == T_F64 ? ka.v.f == kb.v.f : consteq(ka, kb);
    }
    return ty(T_BOOL);
  }
  if (a.kind == T_STR && b.kind == T_STR && ka.kind == T_STR && kb.kind == T_STR &&
      a.sub != T_NUMBER && b.sub != T_NUMBER) {   /* two constants: Lua's order (strcoll) */
    lua_State *L = S->L;
    lua_pushlstring(L, ka.str, ka.len);
    lua_pushlstring(L, kb.str, kb.len);
    k->kind = T_BOOL;
    k->v.b = lua_compare(L, -2, -1, v->op == KIR_LT ? LUA_OPLT : LUA_OPLE);
    lua_pop(L, 2);
    return ty(T_BOOL);
  }
  if (a.kind == T_STR && b.kind == T_STR)
    REFUSE(S, sp, v, "ordering strings ('<', '<=', '>', '>=') is not supported in compiled code");
  a = numview(a); b = numview(b);
  if (!isnum(a)) FROZEN_NIL(S, sp, v, v->args[0]);
  if (!isnum(b)) FROZEN_NIL(S, sp, v, v->args[1]);
  /* two definite types (a number-or-nil is checked at run time, where
  ** the message names what it holds), neither of whose types has an order
  ** metamethod (order_meta: numbers may have one, debug.setmetatable; the
  ** comparison is then refused below) */
  Type ra = sp->types[v->args[0]->id], rb = sp->types[v->args[1]->id];
  int ordered = !(isnum(ra) && isnum(rb)) && (order_meta(S, ra, v) || order_meta(S, rb, v));
  if ((!isnum(a) || !isnum(b)) && (raises_on(ra) || isnum(ra)) && (raises_on(rb) || isnum(rb)) &&
      !ordered) {
    const char *t1 = objtypename(ra), *t2 = objtypename(rb);
    if (strcmp(t1, t2) == 0) RAISE(S, sp, v, -1, "attempt to compare two %s values", t1);
    RAISE(S, sp, v, -1, "attempt to compare %s with %s", t1, t2);
  }
  /* a number-or-nil (or -false) ordered with nil or a boolean raises
  ** whatever it holds, when it runs, naming its run-time type (cg_num.c's
  ** cmp_check): code that never runs compiles */
  if (((ra.kind == T_MAYBE && (rb.kind == T_NIL || rb.kind == T_BOOL)) ||
       (rb.kind == T_MAYBE && (ra.kind == T_NIL || ra.kind == T_BOOL))) && !ordered)
    return ty(T_BOOL);
  /* a string ordered with a number (or nil, a boolean, an array) raises
  ** Lua's order error when it runs, unless one of the two types has an
  ** order metamethod (order_meta: the strings', or one debug.setmetatable
  ** gave numbers): code that does not run compiles (difffuzz,
  ** found/string-number-order-compile-error.lua) */
  /* ... and a known function ordered with a string, a number, nil, a
  ** boolean or a function (functions have no __lt/__le) */
  int fa = ra.kind == T_FUNC || (ra.kind == T_BUILTIN && kty_builtin_libname(ra.ref) != NULL),
      fb = rb.kind == T_FUNC || (rb.kind == T_BUILTIN && kty_builtin_libname(rb.ref) != NULL);
  int sa = ra.kind == T_STR && ra.sub != T_NUMBER, sb = rb.kind == T_STR && rb.sub != T_NUMBER;
  /* ... and either of those ordered with a number-or-nil (-false): the
  ** message names what that holds when it runs (cg_num.c cmp_check;
  ** found/string-maybe-order-compile-error.lua) */
  if (!S->kernel && (((sa || fa) && rb.kind == T_MAYBE) || ((sb || fb) && ra.kind == T_MAYBE)) &&
      !ordered)
    return ty(T_BOOL);
  if (!S->kernel && (((sa || fa) && (isnum(rb) || raises_on(rb) || fb || (fa && sb))) ||
                     ((sb || fb) && (isnum(ra) || raises_on(ra) || fa || (fb && sa)))) && !ordered) {
    const char *t1 = sa ? "string" : fa ? "function" : objtypename(ra);
    const char *t2 = sb ? "string" : fb ? "function" : objtypename(rb);
    if (strcmp(t1, t2) == 0) RAISE(S, sp, v, -1, "attempt to compare two %s values", t1);
    RAISE(S, sp, v, -1, "attempt to compare %s with %s", t1, t2);
  }
  if (!isnum(a) || !isnum(b))
    REFUSE(S, sp, v, "attempt to compare %s with %s", luaname(a, b1, sizeof b1),
           luaname(b, b2, sizeof b2));
  return ty(T_BOOL);
}

/* Is the prange call v the iterator of a generic for? */
static int feeds_tfor(const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op == KIR_CALL && (u->flags & KIR_F_TFOR) && u->args[0] == v) return 1;
  }
  return 0;
}

/* Is v a function called to set up a generic for (ipairs(x), pairs(t))? */
static int makes_tfor(const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op == KIR_CALL && u->args[0] == v && feeds_tfor(u)) return 1;
  }
  return 0;
}

/* the interpreter's words (buffer.c's keyindex) */
#define BAD_KEY "kjit.array cannot be indexed with a %s value (expected an integer index or a field name)"

/* An array indexed by nil or a boolean (`a[z]` with z always nil, `a[i >
** 2]`): buffer.c's __index and __newindex raise BAD_KEY, so the read or
** store raises it when it runs, at its line (was a compile error, also
** where the code does not run: differences.md item 13). */
static int bad_key_raises(Type kt) { return kt.kind == T_NIL || kt.kind == T_BOOL; }

#define GENERIC_FOR "this generic for ('for ... in') is not supported in compiled code: " \
                    "its iterator must be pairs(t), ipairs(t), next or a function value, or " \
                    "'for i in kjit.prange(a, b [, step])', 'for i, x in ipairs(a)' over a kjit array"

/* ---- Records (kjit.struct): r.x, r.pos, r.inner on a record view ---------- */

/* The type a load of a number of dtype d gives (as an array element). */


/* The field v names on the record (operand 0), or NULL after recording the
** interpreter's error ("record has no field ..."), raised when v runs. */
static const KRecField *rec_field_of(KtySession *S, KtySpec *sp, KirInsn *v) {
  const KRecord *r = krec_byid(sp->types[v->args[0]->id].ref);
  const KRecField *f = r ? krec_field(r, v->k.str.s, v->k.str.len) : NULL;
  if (f == NULL && S->strict) {
    char names[160];
    size_t k = 0;
    names[0] = 0;
    for (int i = 0; r && i < r->nfields && k < sizeof names; i++)
      k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "", r->fields[i].name);
    raise_at(S, sp, v, -1, "record has no field '%s' (fields: %s)", v->k.str.s, names);
  }
  return f;
}

static Type t_recfield(KtySession *S, KtySpec *sp, KirInsn *v) {
  const KRecField *f = rec_field_of(S, sp, v);
  if (f == NULL) return ty(T_UNKNOWN);
  if (f->count == 0 && f->dtype != KJIT_RECORD) return elem_of(f->dtype);
  Type t = ty(T_BUF);   /* an array field, a nested record: views */
  t.dtype = (uint8_t)f->dtype;
  t.ndim = f->count ? 1 : 0;
  if (f->dtype == KJIT_RECORD) t.ref = f->rec->id;
  return t;
}

/* Values a number element or field refuses when the store runs, with
** buffer.c's "number expected, got <type>" (cg_array.c's store_type_error). */
static int stores_raise(Type t) {
  return t.kind == T_BOOL || t.kind == T_NIL || t.kind == T_BUF || t.kind == T_STR;
}

static Type t_recsetfield(KtySession *S, KtySpec *sp, KirInsn *v) {
  Type val = sp->types[v->args[1]->id];
  char tb[32];
  const KRecField *f = rec_field_of(S, sp, v);
  if (f == NULL) return ty(T_UNKNOWN);
  if (f->count)
    RAISE(S, sp, v, -1, "cannot assign to array field '%s' of a record: assign its elements "
          "(r.%s[i] = v)", f->name, f->name);
  if (val.kind == T_UNKNOWN) return ty(T_NIL);
  if (f->dtype == KJIT_RECORD) {
    if (val.kind == T_BUF && val.dtype == KJIT_RECORD && val.ndim == 0 && val.ref == f->rec->id)
      return ty(T_NIL);
    REFUSE(S, sp, v, "compiled code assigns to a record only a record of the same layout "
           "(r.%s = q[j]), not a %s value", f->name, luaname(val, tb, sizeof tb));
  }
  /* a bool field takes booleans; any other value with a run-time form
  ** raises KB_BOOL_EXPECTED when the store runs (cg_array.c), as for a
  ** bool array's elements */
  if (f->dtype == KJIT_BOOL && (val.kind == T_BOOL || val.kind == T_NIL || val.kind == T_BUF ||
                                val.kind == T_MAYBE || isnum(numview(val))))
    return ty(T_NIL);
  if (islua(val)) return ty(T_NIL);   /* converted when it runs (cg_lua_store_number) */
  /* a boolean, nil, an array or a constant string: the store raises the
  ** interpreter's "number expected, got ..." when it runs (cg_array.c) */
  if (stores_raise(val)) return ty(T_NIL);
  if (!isnum(numview(val)))
    REFUSE(S, sp, v, "cannot store a %s value in a record field", luaname(val, tb, sizeof tb));
  return ty(T_NIL);
}

/* ---- A frozen table indexed by a computed integer key ------------------- */

/* The numbers of the frozen table at slot ref when it is a plain array of
** them (keys exactly 1..n, numbers only, no metatable): 1, with n, the
** values (integers, or the floats' bits) and which are floats (arena
** copies, for the code generator and the cache key); else 0 and why. */
int kty_frozen_array(KtySession *S, int ref, int64_t *n, int64_t **vals, uint8_t **isf,
                     const char **why) {
  lua_State *L = S->L;
  push_value(S, ref);
  int ok = 1;
  if (lua_getmetatable(L, -1)) { lua_pop(L, 1); ok = 0; *why = "it has a metatable"; }
  lua_Integer len = (lua_Integer)lua_rawlen(L, -1), count = 0;
  if (ok) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      count++;
      if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1 || lua_tointeger(L, -2) > len) {
        ok = 0; *why = "it has keys other than 1 .. #t";
      } else if (lua_type(L, -1) != LUA_TNUMBER) {
        ok = 0; *why = "it holds values that are not numbers";
      }
      lua_pop(L, 1);
      if (!ok) { lua_pop(L, 1); break; }
    }
  }
  if (ok && count != len) { ok = 0; *why = "it has holes"; }
  if (ok && len > ((lua_Integer)1 << 24)) { ok = 0; *why = "it is too long (2^24 numbers at most)"; }
  if (ok) {
    *n = len;
    *vals = ka_alloc(S->A, sizeof **vals * (size_t)(len + 1));
    *isf = ka_alloc(S->A, (size_t)(len + 1));
    if (*vals == NULL || *isf == NULL) { ok = 0; *why = "not enough memory"; }
    for (lua_Integer i = 1; ok && i <= len; i++) {
      lua_rawgeti(L, -1, i);
      (*isf)[i - 1] = !lua_isinteger(L, -1);
      if ((*isf)[i - 1]) { double d = lua_tonumber(L, -1); memcpy(&(*vals)[i - 1], &d, sizeof d); }
      else (*vals)[i - 1] = (int64_t)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return ok;
}

/* P[k] of a frozen table P with an integer k: an element (numbers of the
** table as it was when the function compiled, like its constant fields),
** nil outside 1..#P: a number-or-nil (issue 29, item 1's last point). */
static int t_frozen_values(KtySession *S, KtySpec *sp, KirInsn *v, Type o, Type kt, KtyConst kk,
                           Type *r);

static Type t_frozen_index(KtySession *S, KtySpec *sp, KirInsn *v, Type o) {
  int64_t n, *vals;
  uint8_t *isf;
  const char *why = "";
  if (!kty_frozen_array(S, o.ref, &n, &vals, &isf, &why))
    REFUSE(S, sp, v, "a table known at compile time can be indexed by a computed key only when "
           "it is an array of numbers (1 .. #t, no metatable): %s", why);
  int nf = 0;
  for (int64_t i = 0; i < n; i++) nf += isf[i];
  Type r = ty(T_MAYBE);
  r.dtype = 1;   /* nil */
  r.sub = nf == 0 ? T_INT : nf == n ? T_F64 : T_NUMBER;
  r.fsub = r.sub == T_NUMBER ? T_F64 : 0;
  return r;
}

/* The session's set at key of its values table pushed (0: upvalues it
** marks live; -1: globals it assigns; -2: own_writer's answers; -3:
** tables it marks live, kept until the compile succeeds: kty_live_commit);
** where missing, made (create) or nil pushed. Returns whether a table is. */
static int push_session_set(KtySession *S, int key, int create) {
  lua_State *L = S->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, S->values_ref);
  if (lua_rawgeti(L, -1, key) != LUA_TTABLE && create) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, key);
  }
  lua_remove(L, -2);
  return lua_type(L, -1) == LUA_TTABLE;
}
enum { SET_LIVE_TABLES = -3 };

/* Is the table on top one that compiled code writes into: marked by an
** earlier compile (ir_live.c) or by this one (mark_live)? */
static int live_now(KtySession *S) {
  lua_State *L = S->L;
  if (kty_live_has(L, -1)) return 1;
  int t = lua_gettop(L);
  int yes = 0;
  if (push_session_set(S, SET_LIVE_TABLES, 0)) {
    lua_pushvalue(L, t);
    yes = lua_rawget(L, -2) != LUA_TNIL;
  }
  lua_settop(L, t);
  return yes;
}

/* Is the table at slot ref one that compiled code writes into (t_live,
** in this compile or an earlier one: ir_live.c)? */
static int is_live(KtySession *S, int ref) {
  push_value(S, ref);
  int live = live_now(S);
  lua_pop(S->L, 1);
  return live;
}

/* What is left of the refusal of a frozen read of a live table: a kernel
** (no Lua state to read it live in), or a table reached another way than
** by a name that t_live sees (an upvalue, a global, a constant field or a
** constant index of one). */
#define LIVE_FROZEN \
  "this table is written by compiled code and read here as a constant frozen at compile " \
  "time, which would not see the writes: read it by its name (Pt.x, M.state.items), or pass " \
  "the table as an argument"
#define LIVE_FROZEN_KERNEL \
  "this table is written by compiled code, and a cuda.jit kernel can read only values frozen " \
  "when it compiles (it has no Lua state): copy the values into a kjit array and pass it"

/* Does v (a getupval, a getfield of _ENV: a global, or a constant field
** of one, `M.cache`, `M.state.items`, or an element by a constant
** integer, `L[1]`) read the same upvalue, global or field as w? */
static int same_var(const KirFunc *f, const KirInsn *v, const KirInsn *w) {
  if (v == w) return 1;   /* `local e = T[1]; e.v = x`: the very value */
  if (v->op != w->op) return 0;
  if (v->op == KIR_GETUPVAL) return v->aux == w->aux;
  if (v->op == KIR_INDEX) {   /* T[1], by the same integer constant */
    const KirInsn *a = v->args[1], *b = w->args[1];
    return a->op == KIR_INT && b->op == KIR_INT && a->k.i == b->k.i &&
           same_var(f, v->args[0], w->args[0]);
  }
  if (v->op != KIR_GETFIELD || v->k.str.len != w->k.str.len ||
      memcmp(v->k.str.s, w->k.str.s, v->k.str.len) != 0)
    return 0;
  if (is_env(f, v->args[0])) return is_env(f, w->args[0]);
  return !is_env(f, w->args[0]) && same_var(f, v->args[0], w->args[0]);
}

/* Marks the table on top of the stack (kept) live: compiled code writes
** into it. Every value of this compile that holds it frozen (an upvalue,
** a global, a constant field read: typed before this mark) is typed
** again, so that it is read live too, whichever function of the compile
** was typed first. For later compiles (ir_live.c, which retires code
** compiled before that read it frozen) the mark waits for this compile to
** succeed (kty_live_commit): a compile refused after the mark writes
** nothing, and retiring readers for it would only cost their recompiles. */
static void mark_live(KtySession *S) {
  lua_State *L = S->L;
  if (live_now(S)) return;
  int t = lua_gettop(L);
  push_session_set(S, SET_LIVE_TABLES, 1);
  lua_pushvalue(L, t);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_settop(L, t);
  int slot = kty_keep_value(S, -1);
  for (int s = 0; s < S->nspecs; s++) {
    KtySpec *sp = S->specs[s];
    KirFunc *f = sp->ir;
    for (int b = 0; b < f->nblocks; b++) {
      KirBlock *blk = f->blocks[b];
      for (int i = 0; i < blk->nphis; i++)
        if (sp->consts[blk->phis[i]->id].kind == T_TABLE && sp->consts[blk->phis[i]->id].ref == slot)
          push(sp, blk->phis[i]);
      for (int i = 0; i < blk->ninsns; i++)
        if (sp->consts[blk->insns[i]->id].kind == T_TABLE && sp->consts[blk->insns[i]->id].ref == slot)
          push(sp, blk->insns[i]);
    }
  }
}

void kty_live_commit(KtySession *S) {
  lua_State *L = S->L;
  int top = lua_gettop(L);
  if (push_session_set(S, SET_LIVE_TABLES, 0)) {
    lua_pushnil(L);
    while (lua_next(L, top + 1)) {
      lua_pop(L, 1);
      kty_live_mark(L, -1);   /* (the readers retired there: ir_live.c) */
    }
  }
  lua_settop(L, top);
  if (push_session_set(S, -1, 0)) {
    lua_pushnil(L);
    while (lua_next(L, top + 1)) {
      lua_pop(L, 1);
      size_t len;
      const char *name = lua_tolstring(L, -1, &len);   /* (a string key: no conversion) */
      kty_live_global_mark(L, name, len);
    }
  }
  lua_settop(L, top);
}

/* Notes, for the jit object at owner, the tables whose fields or elements
** the used specializations of S read frozen, and the globals they read
** frozen (ir_live.c: retired when one of them becomes live). */
static int global_assigned(KtySession *S, KtySpec *sp, const char *name, size_t len);
void kty_note_frozen_reads(KtySession *S, int owner) {
  lua_State *L = S->L;
  owner = lua_absindex(L, owner);
  lua_newtable(L);   /* the global names noted (once each) */
  int seen = lua_gettop(L);
  for (int s = 0; s < S->nspecs; s++) {
    KtySpec *sp = S->specs[s];
    KirFunc *f = sp->ir;
    if (!sp->used) continue;
    for (int b = 0; b < f->nblocks; b++) {
      KirBlock *blk = f->blocks[b];
      if (!sp->live[blk->id]) continue;
      for (int i = 0; i < blk->ninsns; i++) {
        KirInsn *w = blk->insns[i];
        if ((w->op != KIR_GETFIELD && w->op != KIR_INDEX && w->op != KIR_LEN) || w->nargs < 1)
          continue;
        Type o = sp->types[w->args[0]->id];
        if (o.kind != T_TABLE) continue;
        if (is_env(f, w->args[0])) {   /* a global read frozen */
          if (w->op != KIR_GETFIELD) continue;
          lua_pushlstring(L, w->k.str.s, w->k.str.len);
          int noted = lua_rawget(L, seen) != LUA_TNIL;
          lua_pop(L, 1);
          if (noted || global_assigned(S, sp, w->k.str.s, w->k.str.len)) continue;
          kty_live_note_global_reader(L, w->k.str.s, w->k.str.len, owner);
          lua_pushlstring(L, w->k.str.s, w->k.str.len);
          lua_pushboolean(L, 1);
          lua_rawset(L, seen);
          continue;
        }
        push_value(S, o.ref);
        if (lua_type(L, -1) == LUA_TTABLE) kty_live_note_reader(L, -1, owner);
        lua_pop(L, 1);
      }
    }
  }
  lua_pop(L, 1);
}

/* Is w a call of table.insert or table.remove, spelled so (a global
** `table`'s field): they write into their first argument. */
static int calls_table_writer(const KirFunc *f, const KirInsn *w) {
  if (w->op != KIR_CALL || w->nargs < 2 || w->args[0]->op != KIR_GETFIELD) return 0;
  const KirInsn *fn = w->args[0];
  const KirInsn *lib = fn->args[0];
  if (lib->op != KIR_GETFIELD || !is_env(f, lib->args[0]) || lib->k.str.len != 5 ||
      memcmp(lib->k.str.s, "table", 5) != 0)
    return 0;
  return (fn->k.str.len == 6 && memcmp(fn->k.str.s, "insert", 6) == 0) ||
         (fn->k.str.len == 6 && memcmp(fn->k.str.s, "remove", 6) == 0);
}

/* kty_live_own_writer of the table on top, asked once per compile (the
** answers at key -2 of the session's values table). */
static int own_writer(KtySession *S) {
  lua_State *L = S->L;
  int t = lua_gettop(L);
  push_session_set(S, -2, 1);
  lua_pushvalue(L, t);
  int known = lua_rawget(L, -2);
  int yes = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (known == LUA_TNIL) {
    yes = kty_live_own_writer(L, t);
    lua_pushvalue(L, t);
    lua_pushboolean(L, yes);
    lua_rawset(L, -3);
  }
  lua_settop(L, t);
  return yes;
}

/* A table read from an upvalue or a global (or a constant field of one)
** that this function writes into (t.x = v, t[i] = v, table.insert(t, v),
** anywhere in it), or that compiled code writes elsewhere (marked live:
** ir_live.c), is live: compiled code reads the real table at run time
** (through a registry reference made here, released with the code: the
** frozen table is the one compiled code sees, its fields are not), so
** that its writes reach it and its reads see them. The table on top of
** the stack (kept). Returns 1 and sets v's type, or 0 (frozen as before). */
static int t_live(KtySession *S, KtySpec *sp, KirInsn *v, Type *r) {
  if (lua_type(S->L, -1) != LUA_TTABLE || S->kernel || is_env(sp->ir, v)) return 0;
  KirFunc *f = sp->ir;
  int stored = 0;
  for (int b = 0; b < f->nblocks && !stored; b++) {
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns && !stored; i++) {
      KirInsn *w = blk->insns[i];
      if ((w->op == KIR_SETFIELD || w->op == KIR_SETINDEX) && same_var(f, w->args[0], v)) stored = 1;
      /* table.insert(log, x) on an upvalue's table (before 2026-11-28 refused) */
      if (calls_table_writer(f, w) && same_var(f, w->args[1], v)) stored = 1;
    }
  }
  /* (a table other compiled code writes, or one of its own functions:
  ** read live here too, ir_live.c) */
  if (!stored && !live_now(S)) {
    if (!own_writer(S)) return 0;
    stored = 1;   /* (marked live below, as if written here) */
  }
  if (sp->liveref[v->id] == 0) {
    lua_pushvalue(S->L, -1);
    sp->liveref[v->id] = kty_ref(S);
  }
  if (stored) mark_live(S);
  *r = ty(T_LUA);
  r->sub = KTY_LUA_TABLE;
  return 1;
}

static int escape_closure(KtySession *S, Type t);

/* ---- Assigned globals ------------------------------------------------------
** A global that compiled code assigns (`count = count + 1`, `G = {}`) is
** written into the real environment table when the store runs
** (lua_setfield: __newindex included, as interpreted), and every read of
** that name in the compile (this function, its callees, any function whose
** read is typed after the store is seen: the mark below re-queues them)
** reads the table when it runs, so that it sees the writes; the other
** globals stay frozen. The environment is reached through a registry
** reference kept in sp->liveref of the _ENV getupval, whose type stays the
** frozen table (cg_lua.c live_env): a liveref matters to cg_func.c only for
** values of Lua type. */

/* Is the global `name` assigned in the compile: by a store in sp's own
** function, or marked by one typed elsewhere (the session's set at key -1
** of its values table)? */
static int global_assigned(KtySession *S, KtySpec *sp, const char *name, size_t len) {
  KirFunc *f = sp->ir;
  for (int b = 0; b < f->nblocks; b++)
    for (int i = 0; i < f->blocks[b]->ninsns; i++) {
      KirInsn *w = f->blocks[b]->insns[i];
      if (w->op == KIR_SETFIELD && is_env(f, w->args[0]) && w->k.str.len == len &&
          memcmp(w->k.str.s, name, len) == 0)
        return 1;
    }
  lua_State *L = S->L;
  if (kty_live_global_has(L, name, len)) return 1;   /* by an earlier compile (ir_live.c) */
  lua_rawgeti(L, LUA_REGISTRYINDEX, S->values_ref);
  int yes = 0;
  if (lua_rawgeti(L, -1, -1) == LUA_TTABLE) {
    lua_pushlstring(L, name, len);
    yes = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return yes;
}

/* Global `name` is assigned (store v): marked for the session, and every
** read of it typed before (in other functions of the compile) typed again.
** (Later compiles see it, and earlier code is retired, once this compile
** succeeds: kty_live_commit.) */
static void mark_global_assigned(KtySession *S, const char *name, size_t len) {
  lua_State *L = S->L;
  push_session_set(S, -1, 1);
  lua_pushlstring(L, name, len);
  int had = lua_rawget(L, -2) != LUA_TNIL;
  if (!had) {
    lua_pushlstring(L, name, len);
    lua_pushboolean(L, 1);
    lua_rawset(L, -4);
  }
  lua_pop(L, 2);
  if (had) return;
  for (int s = 0; s < S->nspecs; s++) {
    KtySpec *sp = S->specs[s];
    KirFunc *f = sp->ir;
    for (int b = 0; b < f->nblocks; b++)
      for (int i = 0; i < f->blocks[b]->ninsns; i++) {
        KirInsn *w = f->blocks[b]->insns[i];
        if (w->op == KIR_GETFIELD && is_env(f, w->args[0]) && w->k.str.len == len &&
            memcmp(w->k.str.s, name, len) == 0)
          push(sp, w);
      }
  }
}

/* The registry reference to the environment table (the frozen table
** value o of env getupval e), made once per getupval. */
static void env_ref(KtySession *S, KtySpec *sp, const KirInsn *e, Type o) {
  if (sp->liveref[e->id] != 0) return;
  push_value(S, o.ref);
  sp->liveref[e->id] = kty_ref(S);
}

/* name = x, a store into the environment. */
static Type t_setglobal(KtySession *S, KtySpec *sp, KirInsn *v) {
  const KirInsn *e = v->args[0], *x = v->args[1];
  Type o = sp->types[e->id], t = sp->types[x->id];
  if (S->kernel)
    REFUSE(S, sp, v, "a kernel cannot assign global '%s' (cuda.jit code has no Lua state): pass "
           "an array and store into it", v->k.str.s);
  if (o.kind == T_UNKNOWN || t.kind == T_UNKNOWN) return ty(T_NIL);
  if (o.kind != T_TABLE)
    REFUSE(S, sp, v, "cannot assign to global '%s' in compiled code: _ENV is not a table known "
           "when it compiles", v->k.str.s);
  if (!boxable(t, sp->consts[x->id])) {
    if (escape_closure(S, t)) return ty(T_UNKNOWN);
    char tb[32];
    REFUSE(S, sp, v, "a %s cannot be assigned to global '%s' in compiled code yet (%s)",
           kty_name(t, tb, sizeof tb), v->k.str.s, unboxable_why(t));
  }
  env_ref(S, sp, e, o);
  mark_global_assigned(S, v->k.str.s, v->k.str.len);
  return ty(T_NIL);
}

/* r[k] with k a string value (not a constant field name): interpreted it
** reads or writes the field named k, so compiled code must not raise
** buffer.c's "indexed by field names" (that is for numbers, booleans, ...);
** the field's offset is compiled in, so a key known only when it runs is
** refused instead. */
static int may_be_string(Type t) {
  return t.kind == T_STR || (t.kind == T_LUA && t.sub != KTY_LUA_TABLE);
}
#define RECORD_STRING_KEY \
  "a record field is named by a string value here: compiled code needs the field's " \
  "name in the source (r.x or r[\"x\"])"

static Type frozen_type(const KirInsn *v, const KtyConst *k);
static int t_cfunc_value(KtySession *S, KtySpec *sp, KirInsn *v, Type *r);

/* s[k], s.k with s a constant string: what Lua does, the string's
** metatable's __index (the string library), read when the function
** compiles as the strings' metatable is (string_method): with a constant
** key, the value read then (s.len, a method, nil for any other key:
** `K.s.q`, `("x")[1]`); with a computed key, read when it runs
** (lua_gettable on the boxed string: cg_lua_index). Before 2026-11-28 a
** compile error ("cannot index a string"). */
static Type t_string_index(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k,
                           const KtyConst *key) {
  KtyConst s = sp->consts[v->args[0]->id];
  if (key->kind != T_INT && key->kind != T_F64 && key->kind != T_STR && key->kind != T_BOOL) {
    if (S->kernel)
      REFUSE(S, sp, v, "a kernel cannot index a string by a computed key (cuda.jit code has no "
             "Lua state)");
    return ty(T_LUA);
  }
  lua_State *L = S->L;
  lua_pushlstring(L, s.str, s.len);
  if (key->kind == T_INT) lua_pushinteger(L, key->v.i);
  else if (key->kind == T_F64) lua_pushnumber(L, key->v.f);
  else if (key->kind == T_BOOL) lua_pushboolean(L, key->v.b);
  else lua_pushlstring(L, key->str, key->len);
  const char *err = table_get(L);
  if (err) {
    char eb[300];
    snprintf(eb, sizeof eb, "%s", err);
    lua_pop(L, 2);
    REFUSE(S, sp, v, "indexing a string raised an error: %s", eb);
  }
  Type live;   /* s:gmatch(p), s:find(p): the library's C function, called */
  if (t_cfunc_value(S, sp, v, &live)) { lua_pop(L, 2); return live; }
  *k = freeze(S);
  lua_pop(L, 1);
  if (k->kind == T_UNKNOWN)
    REFUSE(S, sp, v, "a string's field is %s: %s", k->str, unusable_hint(S, k->str));
  return frozen_type(v, k);
}

/* Can o be indexed by lua_gettable when compiled code runs: a constant
** string with a computed key, or a number while numbers have a metatable
** (debug.setmetatable(0, mt); index_raises is 0 for a number then). */
static int index_at_run_time(const KtySession *S, const KtySpec *sp, const KirInsn *obj, Type o) {
  return !S->kernel && ((o.kind == T_STR && sp->consts[obj->id].kind == T_STR) || isnum(o));
}

static Type t_index(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  KirInsn *obj = v->args[0], *key = v->args[1];
  Type o = sp->types[obj->id], kt = sp->types[key->id];
  KtyConst kk = sp->consts[key->id];
  char tb[32], db[128];
  if (o.kind == T_UNKNOWN) return o;
  /* a key never produced (its operation always raises, `a[#g]` with g a
  ** nil global): the read never runs, as the code generator knows
  ** (cg_never_produced). Typed as the element, it made what depends on
  ** it live here and unreachable there: a loop bounded by it was planned
  ** (versioned, peeled) on values never emitted (a crash in LLVM). */
  if (kt.kind == T_UNKNOWN) return kt;
  if (o.kind == T_BUF && o.dtype == KJIT_RECORD && o.ndim == 0) {   /* a record: r[k] */
    if (may_be_string(kt)) REFUSE(S, sp, v, RECORD_STRING_KEY);
    RAISE(S, sp, v, -1, "a record is indexed by field names, not with a %s value",
          luaname(kt, tb, sizeof tb));
  }
  if (islua(o)) {   /* t[k]: lua_gettable (__index included) */
    if (!boxable(kt, kk)) REFUSE_UNBOXABLE(S, sp, v, key, "a table key");
    return ty(T_LUA);
  }
  if (o.kind == T_BUF || o.kind == T_SHAPE) {
    /* a[t.i]: a key read from a table is checked when it runs (cg_lua_array_key) */
    if (o.kind == T_BUF && bad_key_raises(kt)) RAISE(S, sp, v, -1, BAD_KEY, luaname(kt, tb, sizeof tb));
    if (kt.kind != T_UNKNOWN && !isnum(numview(kt)) && !(islua(kt) && o.kind == T_BUF))
      REFUSE(S, sp, v, BAD_KEY, luaname(kt, tb, sizeof tb));
    if (o.kind == T_BUF && o.dtype == KJIT_RECORD) { Type r = o; r.ndim--; return r; }   /* rows, records */
    if (o.kind == T_SHAPE) {   /* a.shape[k] is nil outside 1..ndim, as for the table */
      if (kk.kind == T_INT) {
        if (kk.v.i >= 1 && kk.v.i <= o.ndim) return ty(T_INT);
        k->kind = T_NIL;
        return ty(T_NIL);
      }
      Type r = ty(T_MAYBE); r.sub = T_INT; r.dtype = 1;
      return r;
    }
    if (o.ndim > 1) { Type r = o; r.ndim--; return r; }
    return elem_of(o.dtype);
  }
  if (o.kind == T_TABLE) {
    if (S->strict && is_live(S, o.ref)) fail(S, sp, v, S->kernel ? LIVE_FROZEN_KERNEL : LIVE_FROZEN);
    Type rv;
    if (kk.kind == T_UNKNOWN && t_frozen_values(S, sp, v, o, kt, kk, &rv)) return rv;   /* ops[i] */
    if (kk.kind == T_UNKNOWN && kt.kind == T_INT) return t_frozen_index(S, sp, v, o);
    if (kk.kind != T_INT && kk.kind != T_STR && kk.kind != T_F64 && kk.kind != T_BOOL)
      REFUSE(S, sp, v, "a table read from an upvalue or a global is indexed here by a %s key, "
             "which compiled code cannot read from a frozen table: pass the table as an "
             "argument", luaname(kt, tb, sizeof tb));
    push_value(S, o.ref);
    if (kk.kind == T_INT) lua_pushinteger(S->L, kk.v.i);
    else if (kk.kind == T_F64) lua_pushnumber(S->L, kk.v.f);   /* (Lua's key rules: 2.0 is 2) */
    else if (kk.kind == T_BOOL) lua_pushboolean(S->L, kk.v.b);   /* T[true] */
    else lua_pushlstring(S->L, kk.str, kk.len);
    const char *err = table_get(S->L);
    if (err) {
      char eb[300];
      snprintf(eb, sizeof eb, "%s", err);
      lua_pop(S->L, 2);
      REFUSE(S, sp, v, "reading a table element raised an error: %s", eb);
    }
    Type live;   /* T[1].x = v somewhere: the element table read live */
    if (t_live(S, sp, v, &live)) { lua_pop(S->L, 2); return live; }
    *k = freeze(S);
    lua_pop(S->L, 1);
    if (k->kind == T_UNKNOWN)
      REFUSE(S, sp, v, "table element is %s: %s", k->str, unusable_hint(S, k->str));
    return const_type(*k);
  }
  FROZEN_NIL(S, sp, v, obj);
  if (index_raises(S, o, "__index")) RAISE_NOT_TABLE(S, sp, v, o, "index");
  TYPE_META_REFUSED(S, sp, v, o, "index", "__index");
  if (o.kind == T_STR && sp->consts[obj->id].kind == T_STR) return t_string_index(S, sp, v, k, &kk);
  if (index_at_run_time(S, sp, obj, o)) {
    if (!boxable(kt, kk)) REFUSE_UNBOXABLE(S, sp, v, key, "a table key");
    return ty(T_LUA);
  }
  REFUSE(S, sp, v, "cannot index a %s%s", luaname(o, tb, sizeof tb),
         describe(sp, obj, db, sizeof db));
}

/* The type of a frozen value read by v. A nil that arithmetic or an
** ordering uses is a number-or-nil that is nil: the use raises Lua's own
** error ("attempt to perform arithmetic on a nil value (global 'g')") when
** it runs, as interpreted, and a path that never runs compiles. */
static Type frozen_type(const KirInsn *v, const KtyConst *k) {
  if (k->kind == T_NIL) {
    for (int i = 0; i < v->nusers; i++) {
      KirOp op = v->users[i]->op;
      if (KIR_ISARITH(op) || op == KIR_UNM || op == KIR_LT || op == KIR_LE) {
        Type r = ty(T_MAYBE);
        r.sub = T_INT;
        r.dtype = 1;   /* nil, not false */
        return r;
      }
    }
  }
  return const_type(*k);
}

/* What to say after "global 'x' is <what>:" when compiled code cannot use
** a frozen value: the remedy for a C function (the common case: print,
** string.format, math.random ...), else what compiled code can use. */
static const char *unusable_hint(const KtySession *S, const char *what) {
  if (strcmp(what, "a C function") == 0 && S->kernel)   /* (select too: varargs.md) */
    return "a cuda.jit kernel has no Lua state and calls no C function of Lua (select, "
           "print, string.format ...): compute the value before the launch and pass it in "
           "(for '...', take the values into locals: local a, b = ...)";
  if (strcmp(what, "a C function") == 0)
    return "compiled code cannot call coroutine.yield, coroutine.isyieldable or the debug "
           "functions (they work on the interpreter's call stack, which compiled frames are not "
           "on): call them in an "
           "interpreted function around the compiled one (yield there, between its calls; pass "
           "debug.getinfo's or debug.traceback's results in), or run with KJIT_DISABLE_JIT=1 "
           "to debug";
  if (strcmp(what, "a userdata") == 0 && !S->kernel)   /* (an upvalue's: t_cfunc_value) */
    return "compiled code uses a userdata kept in an upvalue (local out = io.stderr, outside "
           "the function) or passed as an argument";
  return "compiled code can use only numbers, booleans, strings, functions and tables of them";
}

static int t_cfunc_value(KtySession *S, KtySpec *sp, KirInsn *v, Type *r);
/* The built-in a string's method `name` is (s:sub: strings' metatable's
** __index, read when the function compiles, as globals are), or -1. */
static int string_method(KtySession *S, const char *name) {
  lua_State *L = S->L;
  int id = -1;
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) {
    if (lua_getfield(L, -1, "__index") == LUA_TTABLE) {
      lua_getfield(L, -1, name);
      id = builtin_of(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  return id >= B_STRING_FORMAT && id <= B_STRING_LEN ? id : -1;
}

static Type t_getfield(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  KirInsn *obj = v->args[0];
  Type o = sp->types[obj->id];
  const char *name = v->k.str.s;
  char tb[32], db[128];
  if (o.kind == T_UNKNOWN) return o;
  if (o.kind == T_BUF && o.dtype == KJIT_RECORD && o.ndim == 0) return t_recfield(S, sp, v);
  if ((islua(o) && o.sub == KTY_LUA_STRING) || (o.kind == T_STR && o.sub != T_NUMBER)) {
    /* s:sub(i, j), ("%d"):format(n): the string library */
    int id = string_method(S, name);
    if (id >= 0) { k->kind = T_BUILTIN; k->ref = id; return const_type(*k); }
  }
  if (islua(o)) return ty(T_LUA);   /* t.x: lua_getfield (__index included) */
  if (o.kind == T_BUF) {
    if (strcmp(name, "shape") == 0) { Type r = ty(T_SHAPE); r.ndim = o.ndim; return r; }
    if (strcmp(name, "size") == 0 || strcmp(name, "ndim") == 0) return ty(T_INT);
    if (strcmp(name, "dtype") == 0) {   /* a constant string (compared, or a message) */
      k->kind = T_STR;
      k->str = kjit_dtype_name((kjit_dtype)o.dtype);
      k->len = strlen(k->str);
      return ty(T_STR);
    }
    for (int id = B_ARR_FILL; id <= B_ARR_TOTABLE; id++)
      if (strcmp(name, kir_builtin_name(id)) == 0) {   /* a method: a:fill(v) */
        k->kind = T_BUILTIN;
        k->ref = id;
        return const_type(*k);
      }
    REFUSE(S, sp, v, "kjit array has no field '%s' usable in compiled code (shape, size, ndim, "
           "dtype, fill, copy, reshape, slice)", name);
  }
  if (o.kind == T_TABLE && !S->kernel && is_env(sp->ir, obj) &&
      global_assigned(S, sp, name, v->k.str.len)) {
    env_ref(S, sp, obj, o);   /* a global compiled code assigns: read when it runs */
    return ty(T_LUA);
  }
  if (o.kind == T_TABLE) {
    if (S->strict && !is_env(sp->ir, obj) && is_live(S, o.ref))
      fail(S, sp, v, S->kernel ? LIVE_FROZEN_KERNEL : LIVE_FROZEN);
    push_value(S, o.ref);
    lua_pushlstring(S->L, name, v->k.str.len);
    const char *err = table_get(S->L);
    if (err) {
      char eb[300];
      snprintf(eb, sizeof eb, "%s", err);
      lua_pop(S->L, 2);
      REFUSE(S, sp, v, "reading %s '%s' raised an error: %s",
             is_env(sp->ir, obj) ? "global" : "field", name, eb);
    }
    Type live;
    /* (a field of a frozen table: live where this function writes into it,
    ** `M.cache[k] = v`; before 2026-11-28 "cannot index a table") */
    if (t_live(S, sp, v, &live)) { lua_pop(S->L, 2); return live; }
    if (t_cfunc_value(S, sp, v, &live)) { lua_pop(S->L, 2); return live; }
    *k = freeze(S);
    lua_pop(S->L, 1);
    if (k->kind == T_UNKNOWN && makes_tfor(v)) REFUSE(S, sp, v, GENERIC_FOR);
    if (k->kind == T_UNKNOWN)
      REFUSE(S, sp, v, "%s '%s' is %s: %s", is_env(sp->ir, obj) ? "global" : "field", name,
             k->str, unusable_hint(S, k->str));
    return frozen_type(v, k);
  }
  if (o.kind == T_BUILTIN && o.ref == B_CUDA_CG_THIS_GRID && o.sub) {
    /* a grid group (cuda.cg.this_grid()): its methods, g:sync() ... */
    for (int id = B_CUDA_CG_SYNC; id <= B_CUDA_CG_SIZE; id++)
      if (strcmp(name, kir_builtin_name(id)) == 0) {
        k->kind = T_BUILTIN;
        k->ref = id;
        return const_type(*k);
      }
    REFUSE(S, sp, v, "a grid group (cuda.cg.this_grid()) has no field '%s' (sync, thread_rank, "
           "size)", name);
  }
  if (o.kind == T_BUILTIN && B_IS_DIM3(o.ref)) {
    if (!S->kernel)
      REFUSE(S, sp, v, "%s can only be used in a kernel compiled by cuda.jit",
             builtin_name(o.ref));
    if ((name[0] == 'x' || name[0] == 'y' || name[0] == 'z') && name[1] == 0) return ty(T_INT);
    REFUSE(S, sp, v, "%s has no field '%s' (x, y, z)", builtin_name(o.ref), name);
  }
  FROZEN_NIL(S, sp, v, obj);
  if (index_raises(S, o, "__index")) RAISE_NOT_TABLE(S, sp, v, o, "index");
  TYPE_META_REFUSED(S, sp, v, o, "index", "__index");
  if (o.kind == T_STR && sp->consts[obj->id].kind == T_STR) {
    KtyConst key = { .kind = T_STR, .str = name, .len = v->k.str.len };
    return t_string_index(S, sp, v, k, &key);
  }
  if (index_at_run_time(S, sp, obj, o)) return ty(T_LUA);
  REFUSE(S, sp, v, "cannot index a %s%s", luaname(o, tb, sizeof tb),
         describe(sp, obj, db, sizeof db));
}

static int t_live_upval(KtySession *S, KtySpec *sp, KirInsn *v, Type *r);
static Type t_setupval(KtySession *S, KtySpec *sp, KirInsn *v);
static Type t_luacall(KtySession *S, KtySpec *sp, KirInsn *v, const Type *args,
                      const KtyConst *kargs, int n);
static int escape_closure(KtySession *S, Type t);
static int clos_desc(KtySession *S, KtySpec *sp, KirInsn *v);
static int direct_literal(KtySession *S, KtySpec *sp, KirInsn *v);

static Type t_getupval(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  int aux = v->aux;
  Type lv;
  if (t_live_upval(S, sp, v, &lv)) return lv;   /* assigned by compiled code: read live */
  if (sp->clos) {   /* a function literal's: a parameter, or the root's upvalue */
    aux = kty_clos_frozen_upval(S, sp, v->aux);
    if (aux < 0) {
      /* (a Lua value is captured as its maker's slot: clos_captures
      ** checks that the slot keeps that value while the literal lives) */
      Type t = sp->args[sp->nparams + v->aux];
      if (t.kind == T_NIL || t.kind == T_FUNC || t.kind == T_TABLE || t.kind == T_BUILTIN) {
        k->kind = t.kind;
        k->ref = t.ref;
      }
      return t;
    }
  }
  push_value(S, sp->ref);
  const char *name = lua_getupvalue(S->L, -1, aux + 1);
  if (name == NULL) { lua_pop(S->L, 1); REFUSE(S, sp, v, "internal error: no upvalue %d", aux + 1); }
  Type live;
  if (t_live(S, sp, v, &live)) { lua_pop(S->L, 2); return live; }
  if (t_cfunc_value(S, sp, v, &live)) { lua_pop(S->L, 2); return live; }
  *k = freeze(S);
  lua_pop(S->L, 1);
  if (k->kind == T_UNKNOWN && makes_tfor(v)) REFUSE(S, sp, v, GENERIC_FOR);
  if (k->kind == T_UNKNOWN)
    REFUSE(S, sp, v, "upvalue '%s' is %s: %s", name[0] ? name : "?", k->str,
           unusable_hint(S, k->str));
  return frozen_type(v, k);
}

/* A float math function of a: f32 stays f32, weakness kept. */
static Type float_fn(Type a) {
  if (a.kind == T_NUMBER) return ty(a.fsub);
  if (a.kind == T_F32) return a;
  return weakty(T_F64, a.weak);
}

/* math.type(x): a constant string where x's subtype is known, nil where x
** is not a number (Lua's fail). For an integer-or-float it is decided at
** run time: the result is a string typed T_STR with sub T_NUMBER, which
** compiled code can only compare with a constant string (t_compare; the
** generator compares the number's tag). Strings are not values in compiled
** code otherwise. */
/* Is v's value only compared (==, ~=) with a constant string (the code
** generator compares math.type's number tag: t_compare)? */
static int only_compared(const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op != KIR_EQ) return 0;
    const KirInsn *o = u->args[0] == v ? u->args[1] : u->args[0];
    if (o->op != KIR_STR) return 0;
  }
  return 1;
}

static Type t_mathtype(KtySession *S, KtySpec *sp, KirInsn *v, Type a, KtyConst *k) {
  Type r = ty(T_STR);
  switch (a.kind) {
  case T_UNKNOWN: return a;
  case T_INT: k->kind = T_STR; k->str = "integer"; k->len = 7; return r;
  case T_F64: case T_F32: k->kind = T_STR; k->str = "float"; k->len = 5; return r;
  case T_NUMBER: r.sub = T_NUMBER; return r;
  case T_MAYBE:
    REFUSE(S, sp, v, "math.type of a value that may be nil or false is not supported in "
           "compiled code");
  default: return ty(T_NIL);
  }
}

/* ---- Calls into the Lua library (runtime_lib.c) --------------------------- */


/* Can a value of type t be handed to a library function at run time
** (runtime_lib.c pushes it)? Numbers, booleans, nil, number-or-nil and
** strings (constant or built); refused otherwise, naming argument argn. */
static int lib_value_ok(KtySession *S, KtySpec *sp, KirInsn *v, Type t, int argn,
                        const char *fname) {
  char tb[32];
  if (isnum(t) || t.kind == T_BOOL || t.kind == T_NIL || t.kind == T_MAYBE ||
      (t.kind == T_STR && t.sub != T_NUMBER) || islua(t))   /* a Lua value: its slot */
    return 1;
  if (S->strict)
    fail(S, sp, v, "cannot pass a %s to %s in compiled code (argument #%d): %s",
         kty_name(t, tb, sizeof tb), fname, argn,
         frozen_value_hint(t) ? frozen_value_hint(t) : "only numbers, booleans, nil and strings");
  return 0;
}

/* Is one of the n values a kjit array (or records) that a library function
** is then given as the Lua value it is (boxable)? Such a call is the
** library's own, called as a function value (t_luacall): it formats the
** array (tostring: its __tostring) or raises what it raises interpreted
** ("bad argument #1 to 'format' (string expected, got kjit.array)"),
** where runtime_lib.c's recipes take numbers, booleans, nil and strings
** only (found/format-array-refused.lua). Not in kernels. */
static int lib_array_arg(KtySession *S, const Type *args, const KtyConst *kargs, int n) {
  if (S->kernel) return 0;
  for (int i = 0; i < n; i++)
    if (args[i].kind == T_BUF && boxable(args[i], kargs[i])) return 1;
  return 0;
}

/* print, io.write, os.*, math.random(seed), tostring, string.format, type,
** tonumber (ir_builtins.h's LIB, STRING, LUATYPE and TONUMBER rules). */
static Type t_lib(KtySession *S, KtySpec *sp, KirInsn *v, int id, Type *args, KtyConst *kargs,
                  int n, KtyConst *k) {
  const char *name = kir_builtin_name(id);
  char tb[32];
  for (int i = 0; i < n; i++) if (args[i].kind == T_UNKNOWN) return args[i];
  if (B_NEEDS_L(id) && S->kernel)
    REFUSE(S, sp, v, "%s cannot be called in a kernel compiled by cuda.jit (it needs the Lua "
           "state): call it from the host code around the launch", name);
  switch (id) {
  case B_TYPE: {   /* a constant: the kind of a native value is known here */
    const char *r;
    Type a = args[0];
    if (n < 1) REFUSE(S, sp, v, "bad argument #1 to 'type' (value expected)");
    switch (a.kind) {
    case T_NIL: r = "nil"; break;
    case T_BOOL: r = "boolean"; break;
    case T_INT: case T_F64: case T_F32: case T_NUMBER: r = "number"; break;
    case T_BUF: r = "userdata"; break;
    case T_STR: r = "string"; break;
    case T_TABLE: r = "table"; break;
    case T_FUNC: case T_CLOSURE: r = "function"; break;
    case T_EXTERN: r = "userdata"; break;
    case T_BUILTIN: r = B_IS_DIM3(a.ref) || a.ref == B_KJIT_PRANGE || (a.ref == B_CUDA_CG_THIS_GRID && a.sub) ||
                        kty_dtype_obj_name(&kargs[0])   /* kjit.f32, the object, not cuda.float32 */
                      ? "userdata" : "function"; break;
    case T_LUA:   /* a value: type() called when it runs (cg_lib.c), its result a value */
      if (a.sub == KTY_LUA_TABLE) { r = "table"; break; }
      if (S->kernel) REFUSE(S, sp, v, "type() of a Lua value in a kernel");
      { Type s = ty(T_LUA); s.sub = KTY_LUA_STRING; return s; }
    case T_MAYBE:   /* a number or nil (false): the same, the value passed as it is */
      if (!S->kernel) { Type s = ty(T_LUA); s.sub = KTY_LUA_STRING; return s; }
      /* fall through */
    default:
      REFUSE(S, sp, v, "type() of a value that may be nil, false or a number is not supported "
             "in compiled code (test it with 'if x then' or math.type)");
    }
    k->kind = T_STR; k->str = r; k->len = strlen(r);
    return ty(T_STR);
  }
  case B_SETMETATABLE:
    /* setmetatable(t, mt), t a Lua value, mt one, a frozen table (a class
    ** in an upvalue) or nil: done by compiled code itself (cg_lua.c
    ** cg_lua_setmetatable), one result, the table; any other form is the
    ** library's, called (its errors, its results). The value called is the
    ** one frozen when compiling, as every global's */
    if (n == 2 && islua(args[0]) &&
        (islua(args[1]) || args[1].kind == T_NIL || (args[1].kind == T_TABLE && boxable(args[1], kargs[1])))) {
      Type r = ty(T_LUA);
      r.sub = KTY_LUA_TABLE;
      return r;
    }
    return t_luacall(S, sp, v, args, kargs, n);
  case B_TONUMBER:
    if (n >= 2 && !S->kernel)   /* the library's, called (its conversions, its errors) */
      return t_luacall(S, sp, v, args, kargs, n);
    if (n >= 2)
      REFUSE(S, sp, v, "tonumber with a base is not supported in compiled code");
    if (isnum(args[0])) { *k = kargs[0]; Type r = args[0]; r.weak = 0; return r; }
    if (islua(args[0])) return ty(T_LUA);   /* tonumber(t.s): called when it runs */
    if (args[0].kind == T_NIL || args[0].kind == T_BOOL) { k->kind = T_NIL; return ty(T_NIL); }
    if (args[0].kind == T_MAYBE) {   /* the number, else nil (false too: luaB_tonumber's fail) */
      Type r = args[0];
      r.dtype = 1;
      r.weak = 0;
      return r;
    }
    if (kargs[0].kind == T_STR) {   /* folded as Lua converts it */
      lua_State *L = S->L;
      lua_pushlstring(L, kargs[0].str, kargs[0].len);
      if (strlen(lua_tostring(L, -1)) == kargs[0].len && lua_stringtonumber(L, lua_tostring(L, -1))) {
        *k = freeze(S);
        lua_pop(L, 1);
        return const_type(*k);
      }
      lua_pop(L, 1);
      k->kind = T_NIL;
      return ty(T_NIL);
    }
    if (args[0].kind == T_TABLE || args[0].kind == T_FUNC || args[0].kind == T_BUILTIN ||
        args[0].kind == T_BUF || (args[0].kind == T_STR && args[0].sub == T_NUMBER)) {
      k->kind = T_NIL;   /* not a number nor a string (math.type's is "integer"): fail */
      return ty(T_NIL);
    }
    REFUSE(S, sp, v, "tonumber of a %s is not supported in compiled code",
           kty_name(args[0], tb, sizeof tb));
  case B_TOSTRING: case B_STRING_FORMAT: case B_STRING_SUB: case B_STRING_REP:
  case B_STRING_BYTE: case B_STRING_CHAR: case B_STRING_UPPER: case B_STRING_LOWER:
  case B_STRING_LEN: case B_TABLE_REMOVE: case B_TABLE_CONCAT: {
    if (id == B_TOSTRING && n >= 1 && kty_dtype_obj_name(&kargs[0])) {   /* tostring(kjit.f32) */
      const char *dn = kty_dtype_obj_name(&kargs[0]);
      k->kind = T_STR; k->str = dn; k->len = strlen(dn);
      return ty(T_STR);
    }
    /* strings are Lua values (T_LUA): made by the real function when the
    ** call runs (runtime_lib.c), into a slot of the compiled frame; its
    ** errors are the library's, at the call's line (the trampolines) */
    /* string.byte gives as many values as the range holds (none past the
    ** end): where more than one, or all of them, are taken, the library's
    ** own, called, its count known when it runs (cg_vararg.c) */
    if (id == B_STRING_BYTE && !S->kernel && (v->aux < 0 || v->aux > 1))
      return t_luacall(S, sp, v, args, kargs, n);
    if (id == B_STRING_FORMAT && isnum(args[0]) && !S->kernel)   /* string.format(12): "12" */
      return t_luacall(S, sp, v, args, kargs, n);
    if (lib_array_arg(S, args, kargs, n))   /* string.format("%s", a), string.rep(a) */
      return t_luacall(S, sp, v, args, kargs, n);
    if (id == B_STRING_FORMAT && args[0].kind != T_STR && !islua(args[0]))
      REFUSE(S, sp, v, "string.format in compiled code takes a string format (argument #1 is %s)",
             kty_name(args[0], tb, sizeof tb));
    for (int i = 0; i < n; i++)
      if (!kty_dtype_obj_name(&kargs[i]) &&   /* kjit.f32: the object (cg_lib.c put_val) */
          !lib_value_ok(S, sp, v, args[i], i + 1, name)) return ty(T_UNKNOWN);
    if (id == B_STRING_LEN) return ty(T_INT);
    Type r = ty(T_LUA);   /* string.byte: a number or nothing; table.remove: any value */
    if (id != B_STRING_BYTE && id != B_TABLE_REMOVE) r.sub = KTY_LUA_STRING;
    return r;
  }
  default: break;
  }
  if ((id == B_PRINT || id == B_IO_WRITE) && lib_array_arg(S, args, kargs, n))   /* print(a) */
    return t_luacall(S, sp, v, args, kargs, n);
  for (int i = 0; i < n; i++)
    if (!((id == B_PRINT || id == B_IO_WRITE) && kty_dtype_obj_name(&kargs[i])) &&   /* the object */
        !lib_value_ok(S, sp, v, args[i], i + 1, name)) return ty(T_UNKNOWN);
  switch (id) {
  case B_PRINT: return ty(T_NIL);
  case B_TABLE_INSERT: return ty(T_NIL);   /* the real table.insert: its checks, its errors */
  case B_IO_WRITE:   /* its file (io.write(a):write(b)): the library's, called */
    if (v->aux != 0 && !S->kernel) return t_luacall(S, sp, v, args, kargs, n);
    if (v->aux != 0)
      REFUSE(S, sp, v, "the file io.write returns is not supported in compiled code (call it "
             "as a statement)");
    return ty(T_NIL);
  case B_OS_CLOCK: return ty(T_F64);
  case B_OS_TIME:
    if (n > 0 && !S->kernel) return t_luacall(S, sp, v, args, kargs, n);   /* os.time(t): called */
    if (n > 0) REFUSE(S, sp, v, "os.time with a table is not supported in compiled code");
    return ty(T_INT);
  case B_MATH_RANDOM:
    for (int i = 0; i < n; i++)
      if (!isnum(args[i]))
        REFUSE(S, sp, v, "bad argument #%d to 'random' (number expected, got %s)", i + 1,
               luaname(args[i], tb, sizeof tb));
    return ty(n == 0 ? T_F64 : T_INT);
  case B_MATH_RANDOMSEED:   /* its seeds (5.4.4): the library's, called */
    if (v->aux != 0 && !S->kernel) return t_luacall(S, sp, v, args, kargs, n);
    if (v->aux != 0)
      REFUSE(S, sp, v, "the seeds math.randomseed returns are not supported in compiled code "
             "(call it as a statement)");
    for (int i = 0; i < n; i++)
      if (!isnum(args[i]))
        REFUSE(S, sp, v, "bad argument #%d to 'randomseed' (number expected, got %s)", i + 1,
               luaname(args[i], tb, sizeof tb));
    return ty(T_NIL);
  default:
    REFUSE(S, sp, v, "'%s' is not supported in compiled code", name);
  }
}

/* a .. b .. c: a string built at run time (runtime_lib.c) from numbers and
** strings; constants fold here as Lua converts them. nil and booleans raise
** Lua's error, naming the operand Lua's concatenation meets first (it
** joins the last two, then goes left). */
/* May a number-or-nil (false) operand of concatenation v be checked when
** it runs (cg_lib.c: Lua's "attempt to concatenate a nil value (local
** 'v')")? Not beside a Lua value, whose __concat Lua would call with it,
** nor beside a nil or boolean known here (the VM's choice of the operand
** it names depends on both). */
static int maybe_concat_ok(const KtySpec *sp, const KirInsn *v) {
  for (int i = 0; i < v->nargs; i++) {
    Type t = sp->types[v->args[i]->id];
    if (islua(t) || t.kind == T_NIL || t.kind == T_BOOL) return 0;
  }
  return 1;
}

/* ... or, in the last pair beside a Lua value (`v .. t`, v a number-or-nil),
** with no nil, boolean or number-or-nil before: where it is nil the Lua
** value's __concat takes it, as for `nil .. t` (cg_lib.c) */
static int maybe_concat_pair(const KtySpec *sp, const KirInsn *v, int i) {
  int n = v->nargs;
  if (n < 2 || i < n - 2 || !islua(sp->types[v->args[i == n - 1 ? n - 2 : n - 1]->id])) return 0;
  for (int j = 0; j < n - 2; j++) {
    Type t = sp->types[v->args[j]->id];
    if (t.kind == T_NIL || t.kind == T_BOOL || t.kind == T_MAYBE) return 0;
  }
  return 1;
}

/* Is concatenation v run step by step when it runs, every operand checked
** there in the VM's order (runtime_lib.c KRL_CONCATN; cg_lib.c)? Where a
** Lua value is among the operands (its __concat, if any, runs first and
** its result meets the operands on its left: whether they raise, and
** whom the error names, is known only then), or a number-or-nil sits
** where the rules above cannot place it (beside a nil or a boolean).
** Numbers, strings, nil, booleans, number-or-nils and Lua values; a dtype
** object's concatenation keeps the checks below. */
int kty_concat_late(const KtySpec *sp, const KirInsn *v) {
  int late = 0;
  for (int i = 0; i < v->nargs; i++) {
    Type t = sp->types[v->args[i]->id];
    if (kty_dtype_obj_name(&sp->consts[v->args[i]->id])) return 0;
    if (!isnum(t) && !(t.kind == T_STR && t.sub != T_NUMBER) && t.kind != T_NIL &&
        t.kind != T_BOOL && t.kind != T_MAYBE && !islua(t))
      return 0;
    if (islua(t) || (t.kind == T_MAYBE && !maybe_concat_ok(sp, v) && !maybe_concat_pair(sp, v, i)))
      late = 1;
  }
  return late;
}

static Type t_concat(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  int n = v->nargs, allk = 1;
  char tb[32];
  for (int i = 0; i < n; i++) {
    Type t = sp->types[v->args[i]->id];
    if (t.kind == T_UNKNOWN) return t;
  }
  if (kty_concat_late(sp, v)) {   /* no error known here: all checked when it runs */
    if (S->kernel)
      REFUSE(S, sp, v, "concatenation ('..') is not supported in kernels (strings need the Lua state)");
    for (int i = 0; i < n; i++) FROZEN_NIL(S, sp, v, v->args[i]);
    Type r = ty(T_LUA);
    r.sub = KTY_LUA_STRING;
    return r;
  }
  /* From here: numbers, strings, nil, booleans and number-or-nils the
  ** rules above place, or a dtype object among the operands (then Lua
  ** values too, with the rules below) */
  int bad = -1;
  /* nil or a boolean beside a Lua value in the last pair (`nil .. t`):
  ** the Lua value's __concat may take it (luaT_tryconcatTM), so whether
  ** it raises is known when it runs (cg_lib.c cg_lib_concat) */
  int pairlua = 0;
  if (n >= 2) {
    Type a = sp->types[v->args[n - 2]->id], b = sp->types[v->args[n - 1]->id];
    pairlua = ((a.kind == T_NIL || a.kind == T_BOOL) && islua(b)) ||
              ((b.kind == T_NIL || b.kind == T_BOOL) && islua(a));
    for (int i = 0; i < n - 2 && pairlua; i++) {
      Type t = sp->types[v->args[i]->id];
      if (t.kind == T_NIL || t.kind == T_BOOL || t.kind == T_MAYBE) pairlua = 0;
    }
  }
  for (int i = n - 2; i >= 0 && bad < 0 && !pairlua; i--) {
    if (i == n - 2) {
      Type a = sp->types[v->args[i]->id], b = sp->types[v->args[i + 1]->id];
      if (a.kind == T_NIL || a.kind == T_BOOL) bad = i;
      else if (b.kind == T_NIL || b.kind == T_BOOL) bad = i + 1;
    } else {
      Type a = sp->types[v->args[i]->id];
      if (a.kind == T_NIL || a.kind == T_BOOL) bad = i;
    }
  }
  /* a dtype object among numbers and constant strings (`"void(" ..
  ** kjit.f32 .. "[:])"`): its __concat gives its name with them, so it is
  ** that constant string (kty_dtype_obj_name; cg_lib.c the same) */
  int dtobj = 0, plain = 1;
  for (int i = 0; i < n; i++) {
    Type t = sp->types[v->args[i]->id];
    if (kty_dtype_obj_name(&sp->consts[v->args[i]->id])) dtobj = 1;
    else if (!isnum(t) && !(t.kind == T_STR && t.sub != T_NUMBER)) plain = 0;
  }
  /* ... and beside values that may be nil or false (a number-or-nil, `c
  ** and x`): the same, checked when it runs; where the dtype object is in
  ** the last pair, its __concat (host/dtype.c dt_concat) raises the error,
  ** which names no variable (cg_lib.c the same) */
  /* A Lua value elsewhere is concatenated by the VM's rules first (the
  ** last pair, or with the string made on its right), and the dtype object
  ** then meets a string; right of it in the last pair (`kjit.f32 .. t.x`)
  ** the object's __concat runs first: a string or a number, checked when
  ** it runs (cg_lua.c cg_lua_concat_dtype); left of it (`t.x .. kjit.f32`)
  ** the value's own __concat runs first, given the object itself: checked
  ** when it runs (cg_lua_concat_dtype_left), concatenated by lua_concat. */
  int dtpair = -1;   /* the operand of the last pair beside a dtype object */
  if (dtobj && !plain) {
    if (n >= 2 && kty_dtype_obj_name(&sp->consts[v->args[n - 2]->id])) dtpair = n - 1;
    else if (n >= 2 && kty_dtype_obj_name(&sp->consts[v->args[n - 1]->id])) dtpair = n - 2;
    for (int i = 0; i < n; i++) {
      Type t = sp->types[v->args[i]->id];
      if (kty_dtype_obj_name(&sp->consts[v->args[i]->id]) || isnum(t) ||
          (t.kind == T_STR && t.sub != T_NUMBER) || t.kind == T_MAYBE || t.kind == T_NIL ||
          t.kind == T_BOOL || islua(t))
        continue;   /* (`t.x .. kjit.f32`: cg_lua.c cg_lua_concat_dtype_left) */
      REFUSE(S, sp, v, "concatenating a dtype object (kjit.f32 ...) with a %s is not supported in "
             "compiled code: write tostring(kjit.f32)", kty_name(t, tb, sizeof tb));
    }
  }
  for (int i = 0; i < n; i++) {
    Type t = sp->types[v->args[i]->id];
    if (dtobj && kty_dtype_obj_name(&sp->consts[v->args[i]->id])) continue;
    if (i == bad) {
      FROZEN_NIL(S, sp, v, v->args[i]);
      RAISE(S, sp, v, i == dtpair ? -1 : i, "attempt to concatenate a %s value", objtypename(t));
    }
    if (t.kind == T_MAYBE && i == dtpair) t = ty(T_INT);   /* checked when it runs (cg_lib.c) */
    if (t.kind == T_MAYBE && (maybe_concat_ok(sp, v) || maybe_concat_pair(sp, v, i)))
      t = ty(T_INT);   /* checked when it runs */
    if (!isnum(t) && !(t.kind == T_STR && t.sub != T_NUMBER) && t.kind != T_NIL && t.kind != T_BOOL &&
        !islua(t))   /* a Lua value: checked when it runs (cg_lua_concat_check) */
      REFUSE(S, sp, v, "concatenating a %s is not supported in compiled code (%s)",
             kty_name(t, tb, sizeof tb),
             frozen_value_hint(t) ? frozen_value_hint(t) : "only numbers and strings");
    KtyConst c = sp->consts[v->args[i]->id];
    if (c.kind != T_STR && c.kind != T_INT && c.kind != T_F64 && !kty_dtype_obj_name(&c)) allk = 0;
  }
  if (S->kernel)
    REFUSE(S, sp, v, "concatenation ('..') is not supported in kernels (strings need the Lua state)");
  if (allk) {   /* constants: Lua's own conversion */
    lua_State *L = S->L;
    for (int i = 0; i < n; i++) {
      KtyConst c = sp->consts[v->args[i]->id];
      const char *dn = kty_dtype_obj_name(&c);
      if (dn) lua_pushstring(L, dn);
      else if (c.kind == T_STR) lua_pushlstring(L, c.str, c.len);
      else if (c.kind == T_INT) lua_pushinteger(L, c.v.i);
      else lua_pushnumber(L, c.v.f);
    }
    lua_concat(L, n);
    *k = freeze(S);
    return ty(T_STR);
  }
  /* a string made when it runs (cg_lib.c), a value in a slot. (A __concat
  ** metamethod of a Lua operand may make another value: typed a string
  ** all the same; a method call on it, (a .. b):m(), still dispatches on
  ** the value itself (runtime_lib.c's method trampolines), with one result.) */
  Type r = ty(T_LUA);
  r.sub = KTY_LUA_STRING;
  return r;
}


/* ---- Arrays made in compiled code, array methods (alloc) -------------------
** kjit.zeros/empty/full/array/arange/linspace and a:fill/copy/reshape/slice
** (ir_builtins.h rules ALLOC and METHOD; lowered by codegen/cg_alloc.c). A
** shape is an integer, a.shape, or a table constructor of 1 to 4 integers
** ({n, m}); kjit.array takes a constructor of numbers (nested for n-D). A
** constructor is typed T_SHAPE with sub 1 (ndim its length, 0 when longer
** than 4) and may only be filled by setlist and passed to those calls. */

/* The dtype argument: a constant name or dtype object (kjit.f32), or
** nil/absent for def; -1: bad. */
static int const_dtype(const KtyConst *k, int present, int def) {
  if (!present || k->kind == T_NIL) return def;
  if (k->kind == T_LAYOUT) return KJIT_RECORD;   /* the caller takes the layout (k->ref) */
  /* kjit.f32, and the casts as numba's types: cuda.float32 (kir_dtype_or_cast_of) */
  if (k->kind == T_BUILTIN && KIR_CAST_DTYPE(k->ref) >= 0) return KIR_CAST_DTYPE(k->ref);
  if (k->kind != T_STR) return -1;
  for (int d = 0; d < KJIT_NDTYPES; d++)
    if (strcmp(k->str, kjit_dtype_name((kjit_dtype)d)) == 0) return d;
  return -1;
}

/* v (a newtable) is a constructor that only setlist fills, with a known
** number of items, and that a call or an enclosing constructor of the same
** kind uses (else it is a Lua table: tables.md). */
static int ctor_shape_ok(const KirInsn *v) {
  int calls = 0, inner = 0, items = 0;
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op == KIR_SETLIST) {
      if (u->flags & KIR_F_OPEN) return 0;
      items += u->args[0] == v;
      if (u->args[0] != v) {   /* an item of an enclosing constructor */
        if (u->args[0]->op != KIR_NEWTABLE || !ctor_shape_ok(u->args[0])) return 0;
        inner++;
      }
      continue;
    }
    if (u->op == KIR_CALL && u->args[0] != v) { calls++; continue; }
    return 0;
  }
  /* an empty {} is a Lua table (a shape has 1 to 4 extents) */
  return items > 0 && calls + inner == 1;
}

/* A constructor of numbers that ctor_shape_ok takes for a shape, given to
** a library function, a function value or a compiled function
** (ipairs({a, b}), print({1}), f({x, y, z})): a Lua table, as interpreted. *wait when the callee's type is not known yet
** (the call pushes the constructor again: t_call). */
static int ctor_lua_use(KtySpec *sp, const KirInsn *v, int *wait) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op == KIR_CALL && u->args[0] != v) {
      Type ft = sp->types[u->args[0]->id];
      if (ft.kind == T_UNKNOWN) { *wait = 1; return 0; }
      /* only kjit's own functions take shapes (kjit.zeros({n, m}), kjit.array) */
      return !(ft.kind == T_BUILTIN && kty_builtin_libname(ft.ref) == NULL);
    }
    if (u->op == KIR_SETLIST && u->args[0] != v && u->args[0]->op == KIR_NEWTABLE)
      return ctor_lua_use(sp, u->args[0], wait);   /* an item of an enclosing constructor */
  }
  return 0;
}

/* Items of constructor v in order (nested constructors not expanded):
** their count, or -1 when setlist left gaps. */
static int ctor_items(const KirInsn *v, const KirInsn **out, int max) {
  int n = 0;
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op != KIR_SETLIST || u->args[0] != v) continue;
    if (u->aux != n) return -1;   /* aux: the items before (SETLIST C) */
    for (int j = 1; j < u->nargs; j++) {
      if (n >= max) return n + 1;
      out[n++] = u->args[j];
    }
  }
  return n;
}

int kty_ctor_items(const KirInsn *v, const KirInsn **out, int max) {
  return ctor_items(v, out, max);
}

#define KTY_MAXCTOR 4096   /* items of a kjit.array constructor */

static Type t_ctor(KtySession *S, KtySpec *sp, KirInsn *v) {
  if (v->op == KIR_SETLIST) {
    for (int j = 1; j < v->nargs; j++) {
      Type t = sp->types[v->args[j]->id];
      if (t.kind == T_UNKNOWN) return ty(T_NIL);
      if (!isnum(numview(t)) && !(t.kind == T_SHAPE && t.sub == 1))
        REFUSE(S, sp, v, "a table constructor in compiled code can only hold numbers (a shape "
               "such as {n, m}, or the elements given to kjit.array)");
    }
    return ty(T_NIL);
  }
  const KirInsn *items[KJIT_MAXDIMS + 1];
  int n = ctor_items(v, items, KJIT_MAXDIMS + 1);
  Type r = ty(T_SHAPE);
  r.sub = 1;
  r.ndim = (uint8_t)(n >= 0 && n <= KJIT_MAXDIMS ? n : 0);
  return r;
}

/* The shape argument of an ALLOC call or reshape: its ndim, or 0. */
static int shape_ndim(KtySpec *sp, const KirInsn *arg, Type t) {
  if (t.kind == T_INT) return 1;
  if (t.kind != T_SHAPE || t.ndim < 1) return 0;
  if (t.sub == 1) {   /* a constructor: integers only */
    const KirInsn *items[KJIT_MAXDIMS + 1];
    int n = ctor_items(arg, items, KJIT_MAXDIMS + 1);
    if (n < 1 || n > KJIT_MAXDIMS) return 0;
    for (int i = 0; i < n; i++)
      if (sp->types[items[i]->id].kind != T_INT) return 0;
  }
  return t.ndim;
}

/* kjit.array's constructor: its shape (ndim, extents), following the
** first items down as the interpreter does; 0 when it is not a regular
** constructor of numbers (a ragged one, or another value inside). */
static int array_ctor_shape(KtySpec *sp, const KirInsn *v, int64_t *shape, int depth) {
  const KirInsn *items[KTY_MAXCTOR + 1];
  int n = ctor_items(v, items, KTY_MAXCTOR + 1);
  if (n < 0 || n > KTY_MAXCTOR || depth >= KJIT_MAXDIMS) return 0;
  shape[depth] = n;
  if (n == 0) return depth + 1;
  int nd = -1;
  for (int i = 0; i < n; i++) {
    Type t = sp->types[items[i]->id];
    int d;
    if (t.kind == T_SHAPE && t.sub == 1 && items[i]->op == KIR_NEWTABLE) {
      int64_t sub[KJIT_MAXDIMS];
      memcpy(sub, shape, sizeof sub);
      d = array_ctor_shape(sp, items[i], sub, depth + 1);
      if (d == 0) return 0;
      if (i == 0) memcpy(shape, sub, sizeof sub);
      else for (int k = depth + 1; k < d; k++) if (sub[k] != shape[k]) return 0;
    } else if (isnum(numview(t))) {
      d = depth + 1;
    } else {
      return 0;
    }
    if (nd >= 0 && d != nd) return 0;
    nd = d;
  }
  return nd;
}

/* The value kjit.full(shape, x, P) or p:fill(x) gives every record of
** layout id: a record of that layout (copied); a table of fields is Lua's
** work (refused: compiled code has no record from a table yet); anything
** else raises host/record.c's error when it runs. T_NIL: fine; else the
** result type of v (unknown: refused or raising). */
static Type record_fill_value(KtySession *S, KtySpec *sp, KirInsn *v, Type x, int id,
                              const char *fn) {
  char tb[32], text[200];
  char *t = krec_text(krec_byid(id));
  snprintf(text, sizeof text, "%s", t ? t : "?");
  free(t);
  if (x.kind == T_BUF && x.dtype == KJIT_RECORD && x.ndim == 0) {
    if (x.ref != id)
      RAISE(S, sp, v, -1, "cannot assign a record of another layout to a record of %s (assign a "
            "record of that layout or a table of fields)", text);
    return ty(T_NIL);
  }
  if (x.kind == T_LUA)
    REFUSE(S, sp, v, "%s of records from a %s is not supported in compiled code: give it a "
           "record (p[i]) of the layout, or assign the fields", fn, luaname(x, tb, sizeof tb));
  RAISE(S, sp, v, -1, "cannot assign a %s value to a record of %s (assign a record of that "
        "layout or a table of fields)", x.kind == T_BUF ? "kjit.array" : objtypename(x), text);
}

static Type t_array_builtin(KtySession *S, KtySpec *sp, KirInsn *v, int id, Type *args,
                            KtyConst *kargs, int n) {
  const char *name = kir_builtin_name(id);
  char tb[32];
  for (int i = 0; i < n; i++) if (args[i].kind == T_UNKNOWN) return args[i];
  if (id == B_IPAIRS) {   /* for i, x in ipairs(a): a counted loop over 1..#a */
    if (!feeds_tfor(v))
      REFUSE(S, sp, v, "ipairs can only be the iterator of a for loop in compiled code: "
             "'for i, x in ipairs(a) do'");
    if (args[0].kind != T_BUF)
      REFUSE(S, sp, v, "ipairs in compiled code iterates over a kjit array or a Lua value, not "
             "a %s%s%s%s", luaname(args[0], tb, sizeof tb), args[0].kind == T_TABLE ? " (" : "",
             args[0].kind == T_TABLE ? frozen_value_hint(args[0]) : "",
             args[0].kind == T_TABLE ? ")" : "");
    Type it = ty(T_BUILTIN);
    it.ref = B_IPAIRS;
    it.sub = 1;
    return it;
  }
  /* a:slice and a:reshape are views (a pointer and extents,
  ** codegen/cg_alloc.c): no allocation, so kernels take them, as
  ** numba-cuda's a[i:j] and a.reshape */
  if (S->kernel && id != B_ARR_SLICE && id != B_ARR_RESHAPE)
    REFUSE(S, sp, v, "%s%s cannot be used in a kernel: kernels do not allocate (use "
           "cuda.local_array or cuda.shared.array)", id >= B_ARR_FILL ? "a:" : "", name);
  /* arrays of records: the copies and views here move elements of a
  ** number's size; records have their layout's (host/record.c does these
  ** interpreted) */
  if (n >= 1 && args[0].kind == T_BUF && args[0].dtype == KJIT_RECORD && id != B_ARR_FILL &&
      id != B_ARR_COPY && id != B_ARR_SLICE && id != B_ARR_RESHAPE && id != B_KJIT_ARRAY)
    REFUSE(S, sp, v, "%s%s of an array of records is not supported in compiled code: call it "
           "outside the compiled function", id >= B_ARR_FILL ? "a:" : "", id >= B_ARR_FILL ? name : name + 5);
  Type r = ty(T_BUF);
  int dtarg, dt;
  switch (id) {
  case B_KJIT_ZEROS: case B_KJIT_EMPTY: case B_KJIT_FULL: {
    int nd = shape_ndim(sp, v->args[1], args[0]);
    if (nd == 0)
      REFUSE(S, sp, v, "bad argument #1 to '%s' (in compiled code, a shape is an integer, "
             "a.shape or a constructor of 1 to %d integers such as {n, m}; got %s)",
             name + 5, KJIT_MAXDIMS, kty_name(args[0], tb, sizeof tb));
    dtarg = id == B_KJIT_FULL ? 2 : 1;
    /* kjit.full(shape, true) is a bool array, as interpreted (buffer.c) */
    dt = const_dtype(&kargs[dtarg], n > dtarg,
                     id == B_KJIT_FULL && n >= 2 && args[1].kind == T_BOOL ? KJIT_BOOL : KJIT_F64);
    if (dt == KJIT_RECORD) {   /* kjit.zeros(n, P): P a kjit.struct read when compiling */
      if (id == B_KJIT_FULL) {
        Type e = record_fill_value(S, sp, v, args[1], kargs[dtarg].ref, "full");
        if (e.kind != T_NIL) return e;
      }
      r.ndim = (uint8_t)nd;
      r.dtype = KJIT_RECORD;
      r.ref = kargs[dtarg].ref;
      return r;
    }
    /* a bool array takes booleans; nil or a number raises "boolean
    ** expected" when the fill runs (cg_store_value), as buffer.c's storeval */
    int boolfill = id == B_KJIT_FULL && dt == KJIT_BOOL && n >= 2 &&
                   (args[1].kind == T_BOOL || args[1].kind == T_NIL || isnum(numview(args[1])) ||
                    islua(args[1]));
    if (id == B_KJIT_FULL && !boolfill && n >= 2 && raises_on(args[1]))   /* buffer.c's storeval */
      RAISE(S, sp, v, -1, "number expected, got %s", objtypename(args[1]));
    if (id == B_KJIT_FULL && !boolfill && (n < 2 || !isnum(numview(args[1]))))
      REFUSE(S, sp, v, "bad argument #2 to 'full' (number expected, got %s)",
             n < 2 ? "no value" : luaname(args[1], tb, sizeof tb));
    r.ndim = (uint8_t)nd;
    break;
  }
  case B_KJIT_ARRAY: {
    dtarg = 1;
    if (args[0].kind == T_BUF) {   /* a copy, in dtype (the array's by default) */
      dt = const_dtype(&kargs[1], n > 1, args[0].dtype);
      r.ndim = args[0].ndim;
      if (args[0].dtype == KJIT_RECORD || dt == KJIT_RECORD) {   /* records: a copy, one layout */
        if (args[0].ndim == 0)
          REFUSE(S, sp, v, "bad argument #1 to 'array' (a record is not an array: kjit.full(1, r, P))");
        if (args[0].dtype != KJIT_RECORD)   /* numbers into records: host/record.c's words */
          RAISE(S, sp, v, -1, "kjit.array: a list of records (tables of fields) expected, got userdata");
        if (dt != KJIT_RECORD)
          RAISE(S, sp, v, -1, "bad argument #1 to 'kjit.array' (table or kjit.array expected, got kjit.array)");
        if (n > 1 && kargs[1].kind == T_LAYOUT && kargs[1].ref != args[0].ref)
          RAISE(S, sp, v, -1, "kjit.array: the records have another layout");
        r.dtype = KJIT_RECORD;
        r.ref = args[0].ref;
        return r;
      }
      /* booleans into numbers (or numbers into booleans): the interpreter
      ** reads each element and stores it, which raises (buffer.c) */
      if (dt >= 0 && args[0].dtype == KJIT_BOOL && dt != KJIT_BOOL && args[0].dtype != KJIT_RECORD)
        RAISE(S, sp, v, -1, "number expected, got boolean");
      break;
    }
    int64_t shape[KJIT_MAXDIMS];
    int nd = args[0].kind == T_SHAPE && args[0].sub == 1 && v->args[1]->op == KIR_NEWTABLE
           ? array_ctor_shape(sp, v->args[1], shape, 0) : 0;
    if (nd == 0)
      REFUSE(S, sp, v, "bad argument #1 to 'array' (in compiled code, a constructor of at most "
             "%d numbers, nested for more dimensions, such as {1, 2, 3} or {{1, 2}, {3, 4}}, "
             "or a kjit array; got %s)", KTY_MAXCTOR, kty_name(args[0], tb, sizeof tb));
    dt = const_dtype(&kargs[1], n > 1, KJIT_F64);
    r.ndim = (uint8_t)nd;
    break;
  }
  case B_KJIT_ARANGE: {
    int nnum = 0, allint = 1;
    while (nnum < 3 && nnum < n && isnum(numview(args[nnum]))) {
      allint &= args[nnum].kind == T_INT;
      if (args[nnum].kind == T_NUMBER)
        REFUSE(S, sp, v, "kjit.arange in compiled code: argument #%d may be an integer or a "
               "float (its type decides the result's dtype): convert it (math.floor, + 0.0)",
               nnum + 1);
      nnum++;
    }
    if (nnum == 0)
      REFUSE(S, sp, v, "bad argument #1 to 'arange' (number expected, got %s)",
             luaname(args[0], tb, sizeof tb));
    if (n > nnum + 1) REFUSE(S, sp, v, "bad argument #%d to 'arange' (too many arguments)", nnum + 2);
    dtarg = nnum;
    dt = const_dtype(&kargs[nnum], n > nnum, allint ? KJIT_I64 : KJIT_F64);
    r.ndim = 1;   /* (cg_alloc.c reads the call's operands again) */
    break;
  }
  case B_KJIT_LINSPACE:
    for (int i = 0; i < 3; i++)
      if (!isnum(numview(args[i])))
        REFUSE(S, sp, v, "bad argument #%d to 'linspace' (number expected, got %s)", i + 1,
               luaname(args[i], tb, sizeof tb));
    if (args[2].kind != T_INT)
      REFUSE(S, sp, v, "kjit.linspace in compiled code: the number of points must be an "
             "integer (it is %s)", kty_name(args[2], tb, sizeof tb));
    dtarg = 3;
    dt = const_dtype(&kargs[3], n > 3, KJIT_F64);
    r.ndim = 1;
    break;
  case B_ARR_FILL:
    if (args[0].sub == KTY_BUF_CONST) REFUSE(S, sp, v, CONST_ARRAY_WRITE);
    if (args[0].dtype == KJIT_RECORD) {
      Type e = record_fill_value(S, sp, v, args[1], args[0].ref, "fill");
      return e.kind != T_NIL ? e : args[0];
    }
    /* a bool array takes booleans; nil or a number raises "boolean
    ** expected" when the fill runs (cg_store_value), as interpreted */
    if (args[0].dtype == KJIT_BOOL &&
        (args[1].kind == T_BOOL || args[1].kind == T_NIL || isnum(numview(args[1])) ||
         islua(args[1])))
      return args[0];
    if (raises_on(args[1])) RAISE(S, sp, v, -1, "number expected, got %s", objtypename(args[1]));
    if (!isnum(numview(args[1])))
      REFUSE(S, sp, v, "bad argument #1 to 'fill' (a number expected in compiled code, got %s)",
             luaname(args[1], tb, sizeof tb));
    return args[0];
  case B_ARR_COPY: return args[0];
  case B_ARR_RESHAPE: {
    int nd = shape_ndim(sp, v->args[2], args[1]);
    if (nd == 0)
      REFUSE(S, sp, v, "bad argument #1 to 'reshape' (in compiled code, a shape is an integer, "
             "a.shape or a constructor of 1 to %d integers such as {n, m}; got %s)",
             KJIT_MAXDIMS, kty_name(args[1], tb, sizeof tb));
    r = args[0];
    r.ndim = (uint8_t)nd;
    return r;
  }
  case B_ARR_SLICE:
    for (int i = 1; i < n; i++)
      if (args[i].kind != T_INT && !(i == 2 && args[i].kind == T_NIL))
        REFUSE(S, sp, v, "bad argument #%d to 'slice' (an integer expected in compiled code, "
               "got %s)", i, kty_name(args[i], tb, sizeof tb));
    return args[0];
  default:
    REFUSE(S, sp, v, "a:%s() makes a Lua table: not supported in compiled code", name);
  }
  if (dt == KJIT_RECORD)   /* kjit.array(list, P), arange, linspace: host/record.c's words */
    REFUSE(S, sp, v, "kjit.%s with a record dtype is not supported in compiled code (make "
           "records with kjit.zeros(n, P) and assign the fields)", name + 5);
  if (dt < 0)
    REFUSE(S, sp, v, "bad argument #%d to '%s' (in compiled code, the dtype is a constant "
           "name such as \"f32\" or a kjit.struct)", dtarg + 1, name + 5);
  if (dt == KJIT_BOOL && (id == B_KJIT_ARANGE || id == B_KJIT_LINSPACE))   /* buffer.c's words */
    RAISE(S, sp, v, -1, "bad argument #%d to '%s' (bool is not a numeric dtype)", dtarg + 1,
          name + 5);
  r.dtype = (uint8_t)dt;
  return r;
}

/* The name of built-in id called by v: its row's, but kjit.f32(x) (a dtype
** object, host/dtype.c, calling cuda.float32's built-in) is "kjit.f32". */
const char *kty_call_name(const KtySpec *sp, const KirInsn *v, int id) {
  int d = KIR_CAST_DTYPE(id);
  if (d >= 0 && d < KJIT_NDTYPES && v->op == KIR_CALL &&
      sp->consts[v->args[0]->id].kind == T_BUILTIN && sp->consts[v->args[0]->id].v.i == 1) {
    static const char *const dtnames[] = {
#define KTY_DTNAME(E, n, ct, isf, iss) "kjit." n,
      KJIT_ALLDTYPES(KTY_DTNAME)
#undef KTY_DTNAME
    };
    return dtnames[d];
  }
  return builtin_name(id);
}

static Type t_builtin(KtySession *S, KtySpec *sp, KirInsn *v, int id, Type *args,
                      KtyConst *kargs, int n, KtyConst *k) {
  const BuiltinRow *row = builtin_row(id);
  char tb[32];
  if (row == NULL)
    REFUSE(S, sp, v, "%s is not yet supported by the bytecode typer", kir_builtin_name(id));
  const char *name = kty_call_name(sp, v, id);
  if (id == B_KJIT_BOOL) RAISE(S, sp, v, -1, KIR_BOOL_NOT_CALLABLE);
  /* ipairs of anything but a kjit array (nil, a number, a string, a
  ** table read from an upvalue, no value at all): the library function,
  ** called where the code runs, as ipairs of a Lua value is (t_call): it
  ** raises Lua's "bad argument #1 to 'ipairs'" there, and its iterator
  ** "attempt to index a nil value" on the loop's first turn; code that does
  ** not run compiles (found/ipairs-nil-refused.lua) */
  if (id == B_IPAIRS && !S->kernel && (n == 0 || args[0].kind != T_BUF)) {
    if (n > 0 && args[0].kind == T_UNKNOWN) return args[0];
    return t_luacall(S, sp, v, args, kargs, n);
  }
  if (B_IS_ARRAY(id)) {
    if (n < row->minargs)
      REFUSE(S, sp, v, "bad argument #%d to '%s' (%s expected, got no value)", n + 1 -
             (row->rule == KTY_R_METHOD), row->rule == KTY_R_METHOD ? name : name + 5,
             row->rule == KTY_R_METHOD ? "value" : "number");
    return t_array_builtin(S, sp, v, id, args, kargs, n);
  }
  if (B_IS_CUDA(id) && !S->kernel)
    REFUSE(S, sp, v, "%s can only be used in a kernel compiled by cuda.jit", name);
  if (row->rule == KTY_R_DIM3)
    REFUSE(S, sp, v, "%s is not a function (read its fields .x, .y, .z)", name);
  if (id == B_PRINT && S->kernel) {   /* numba-cuda's print (elsewhere: t_lib) */
    for (int i = 0; i < n; i++) {
      if (args[i].kind == T_UNKNOWN) return args[i];
      int ok = args[i].kind == T_INT || args[i].kind == T_F32 || args[i].kind == T_F64 ||
               args[i].kind == T_BOOL || (args[i].kind == T_STR && kargs[i].kind == T_STR) ||
               args[i].kind == T_NIL;
      if (!ok)
        REFUSE(S, sp, v, "print in a kernel takes numbers, booleans, nil and constant strings "
               "(argument #%d is %s)", i + 1, luaname(args[i], tb, sizeof tb));
    }
    return ty(T_NIL);
  }
  if ((row->rule == KTY_R_ATOMIC || (row->rule == KTY_R_INTRIN && id >= B_CUDA_ATOMIC_AND &&
                                      id <= B_CUDA_ATOMIC_COMPARE_AND_SWAP)) &&
      n >= 1 && args[0].kind == T_BUF && args[0].sub == KTY_BUF_CONST)
    REFUSE(S, sp, v, CONST_ARRAY_WRITE);
  if (id == B_CUDA_CONST_ARRAY_LIKE) {   /* numba-cuda's: the constant array itself */
    if (n < 1 || kargs[0].kind != T_BUF)
      REFUSE(S, sp, v, "cuda.const.array_like takes a kjit array known when the kernel compiles "
             "(an upvalue or a global; got %s)", n < 1 ? "no value" : kty_name(args[0], tb, sizeof tb));
    *k = kargs[0];
    return args[0];
  }
  if (row->rule == KTY_R_INTRIN) {   /* numba-cuda's intrinsics: ir_type_cuda.c */
    for (int i = 0; i < n; i++) if (args[i].kind == T_UNKNOWN) return args[i];
    char eb[200];
    Type r = kty_cuda_intrin(id, args, kargs, n, eb, sizeof eb);
    if (r.kind == T_UNKNOWN) REFUSE(S, sp, v, "%s", eb);
    return r;
  }
  if (row->rule == KTY_R_SYNC) {
    if (n != 0) REFUSE(S, sp, v, "%s takes no arguments", name);
    return ty(T_NIL);
  }
  if (row->rule == KTY_R_GRID) {
    if (n != 1 || kargs[0].kind != T_INT || kargs[0].v.i < 1 || kargs[0].v.i > 3)
      REFUSE(S, sp, v, "%s takes one constant argument: 1, 2 or 3", name);
    return ty(T_INT);
  }
  if (row->rule == KTY_R_NEWARRAY) {
    int minlen = id == B_CUDA_SHARED_ARRAY ? 0 : 1;
    /* a shape {n, m [, ...]} of constant extents: numba's
    ** cuda.shared.array((n, m), dtype), indexed s[i][j] */
    int nd = 1;
    if (n == 2 && args[0].kind == T_SHAPE && args[0].sub == 1 && v->args[1]->op == KIR_NEWTABLE) {
      const KirInsn *items[KJIT_MAXDIMS + 1];
      int m = kty_ctor_items(v->args[1], items, KJIT_MAXDIMS + 1);
      int64_t cnt = 1;
      for (int i = 0; i < m && m <= KJIT_MAXDIMS && cnt > 0; i++) {
        const KtyConst *ki = &sp->consts[items[i]->id];
        cnt = ki->kind == T_INT && ki->v.i >= 1 && ki->v.i <= ((int64_t)1 << 31) ? cnt * ki->v.i : -1;
      }
      if (m < 1 || m > KJIT_MAXDIMS || cnt < 1)
        REFUSE(S, sp, v, "bad argument #1 to '%s' (a shape of 1 to %d constant extents of at "
               "least 1 expected, as in %s({16, 16}, \"f32\"))", name, KJIT_MAXDIMS, name);
      nd = m;
      kargs[0].kind = T_INT;   /* the element count, checked below as a size */
      kargs[0].v.i = cnt;
    }
    int ok = n == 2 && kargs[0].kind == T_INT;
    if (!ok || kargs[0].v.i < minlen)
      REFUSE(S, sp, v, "bad argument #1 to '%s' (a constant size %s expected%s)", name,
             minlen ? "of at least 1" : "(0: dynamic shared memory)",
             ok ? "" : ", as in cuda.shared.array(256, \"f32\")");
    int dt = kargs[1].kind == T_STR || kargs[1].kind == T_BUILTIN ? const_dtype(&kargs[1], 1, -1)
                                                                   : -1;
    if (dt < 0)
      REFUSE(S, sp, v, "bad argument #2 to '%s' (a constant dtype name such as \"f32\" "
             "expected)", name);
    /* sizes LLVM and the GPU can take, checked before either sees them
    ** (2^24 f64 of shared memory once took 17 s and 3.9 GB to compile) */
    int64_t cnt = kargs[0].v.i, esz = (int64_t)kjit_dtype_size((kjit_dtype)dt);
    int64_t limit = id == B_CUDA_SHARED_ARRAY ? KTY_SHARED_LIMIT : KTY_LOCAL_LIMIT;
    int over = cnt > INT64_MAX / esz;
    int64_t bytes = over ? INT64_MAX : cnt * esz;
    if (bytes > limit)
      REFUSE(S, sp, v, "%s(%lld, \"%s\"): %lld bytes%s, above the limit of %lld bytes (%s)",
             name, (long long)cnt, kjit_dtype_name((kjit_dtype)dt),
             (long long)(over ? cnt : bytes), over ? " times the element size" : "",
             (long long)limit, id == B_CUDA_SHARED_ARRAY
             ? "48 KiB of static shared memory per kernel" : "64 KiB per thread");
    if (id == B_CUDA_SHARED_ARRAY && S->strict) {   /* every live site once, all callees */
      S->shared_bytes += bytes;
      if (S->shared_bytes > limit)
        REFUSE(S, sp, v, "%s(%lld, \"%s\"): the kernel's static shared memory reaches %lld "
               "bytes with this array's %lld, above the limit of %lld bytes (48 KiB per kernel)", name,
               (long long)cnt, kjit_dtype_name((kjit_dtype)dt), (long long)S->shared_bytes,
               (long long)bytes, (long long)limit);
    }
    Type r = ty(T_BUF); r.dtype = (uint8_t)dt; r.ndim = (uint8_t)nd;
    return r;
  }
  if (row->rule == KTY_R_ATOMIC) {
    int want = row->minargs;
    if (n != want)
      REFUSE(S, sp, v, "%s takes %d arguments (array, index, %s)", name, want,
             want == 4 ? "expected, new value" : "value");
    for (int i = 0; i < n; i++) if (args[i].kind == T_UNKNOWN) return args[i];
    if (args[0].kind != T_BUF || args[0].ndim != 1)
      REFUSE(S, sp, v, "bad argument #1 to '%s' (1-D array expected, got %s)", name,
             kty_name(args[0], tb, sizeof tb));
    kjit_dtype d = (kjit_dtype)args[0].dtype;
    if (d != KJIT_I32 && d != KJIT_U32 && d != KJIT_I64 && d != KJIT_U64 &&
        d != KJIT_F32 && d != KJIT_F64)
      REFUSE(S, sp, v, "%s: atomics work on i32, u32, i64, u64, f32 and f64 arrays, not %s",
             name, kjit_dtype_name(d));
    if (id == B_CUDA_ATOMIC_CAS && (d == KJIT_F32 || d == KJIT_F64))
      REFUSE(S, sp, v, "%s works on integer arrays only", name);
    for (int i = 1; i < n; i++)
      if (!isnum(numview(args[i])))
        REFUSE(S, sp, v, "bad argument #%d to '%s' (number expected, got %s)", i + 1, name,
               luaname(args[i], tb, sizeof tb));
    return ty(d == KJIT_F32 ? T_F32 : d == KJIT_F64 ? T_F64 : T_INT);
  }
  /* too few arguments for a library function: the function itself,
  ** called when the code runs, raises its own message there (table.insert(t):
  ** "wrong number of arguments to 'insert'"); code that does not run
  ** compiles (difffuzz, found/too-few-arguments-compile-error.lua) */
  if (n < row->minargs && row->rule != KTY_R_PRANGE && !S->kernel && kty_builtin_libname(id) != NULL) {
    for (int i = 0; i < n; i++) if (args[i].kind == T_UNKNOWN) return args[i];
    return t_luacall(S, sp, v, args, kargs, n);
  }
  if (n < row->minargs && row->rule != KTY_R_PRANGE)   /* prange: its own message */
    REFUSE(S, sp, v, "bad argument #%d to '%s' (%s expected, got no value)", n + 1, name,
           row->rule == KTY_R_ERROR ? "message" :
           row->rule == KTY_R_ASSERT || row->rule == KTY_R_TYPE ? "value" : "number");
  if (row->rule == KTY_R_ERROR) {
    if (n == 0) return ty(T_NIL);   /* error(): the value nil */
    if (kargs[0].kind != T_STR) {   /* a value built or known at run time: runtime_lib.c */
      if (args[0].kind == T_UNKNOWN) return args[0];
      lib_value_ok(S, sp, v, args[0], 1, "error");
      if (S->kernel)
        REFUSE(S, sp, v, "error() in a kernel takes a constant string message");
    }
    if (n >= 2 && kargs[1].kind != T_INT)
      REFUSE(S, sp, v, "error() level must be an integer constant");
    return ty(T_NIL);
  }
  if (row->rule == KTY_R_ASSERT) {
    if (args[0].kind == T_UNKNOWN) return args[0];
    if (n >= 2 && kargs[1].kind != T_STR) {
      if (args[1].kind == T_UNKNOWN) return args[1];
      lib_value_ok(S, sp, v, args[1], 2, "assert");
      if (S->kernel)
        REFUSE(S, sp, v, "assert() in a kernel takes a constant string message");
    }
    if (args[0].kind == T_STR || args[0].kind == T_TABLE)
      REFUSE(S, sp, v, "assert of a %s is not supported in compiled code (%s)",
             kty_name(args[0], tb, sizeof tb),
             frozen_value_hint(args[0]) ? frozen_value_hint(args[0]) : "assert a value passed in");
    /* its results past the first are its other arguments (result_of),
    ** whose types may rise after its own */
    if (n > 1) push_users(sp, v);
    Type r = args[0];
    r.weak = 0;
    return r;
  }
  if (row->rule == KTY_R_LIB || row->rule == KTY_R_STRING || row->rule == KTY_R_LUATYPE ||
      row->rule == KTY_R_TONUMBER)
    return t_lib(S, sp, v, id, args, kargs, n, k);
  /* math.type of a number-or-nil: the library function, called (its
  ** result is nil or a string, a Lua value) */
  if (row->rule == KTY_R_TYPE && args[0].kind == T_MAYBE && !S->kernel)
    return t_luacall(S, sp, v, args, kargs, n);
  if (row->rule == KTY_R_TYPE) {
    /* math.type of an integer-or-float used otherwise than compared with a
    ** constant (returned, stored, concatenated): the library's, called,
    ** its string a Lua value (before 2026-11-28 "cannot return a string") */
    if (args[0].kind == T_NUMBER && !S->kernel && !only_compared(v))
      return t_luacall(S, sp, v, args, kargs, n);
    return t_mathtype(S, sp, v, args[0], k);
  }
  if ((id == B_MATH_MAX || id == B_MATH_MIN) && n == 1) {
    /* lmathlib.c compares nothing: the argument itself, whatever it is */
    *k = kargs[0];
    return args[0];
  }
  if ((id == B_MATH_MAX || id == B_MATH_MIN) && n >= 2) {
    /* lmathlib.c compares the arguments in order (max: extreme < next,
    ** min: next < extreme) with lua_compare: a nil, boolean or array raises
    ** Lua's order error there, from C (no position); the extreme so far
    ** is a number until the first error */
    for (int i = 0; i < n; i++) if (args[i].kind == T_UNKNOWN) return args[i];
    for (int i = 1; i < n; i++) {
      Type x = i == 1 ? args[0] : ty(T_INT), y = args[i];
      if (x.kind == T_MAYBE || y.kind == T_MAYBE) break;   /* known at run time */
      if (isnum(x) && isnum(y)) continue;
      if (!(raises_on(x) || isnum(x)) || !(raises_on(y) || isnum(y))) break;
      const char *t1 = objtypename(id == B_MATH_MAX ? x : y), *t2 = objtypename(id == B_MATH_MAX ? y : x);
      if (S->strict) {
        if (strcmp(t1, t2) == 0) raise_at(S, sp, v, -1, "attempt to compare two %s values", t1);
        else raise_at(S, sp, v, -1, "attempt to compare %s with %s", t1, t2);
        sp->raises[v->id].nopos = 1;
      }
      return ty(T_UNKNOWN);
    }
    /* anything else that is not a number (a number-or-nil beside a boolean,
    ** strings, which lua_compare orders): the library function itself,
    ** called, so that the order error (or the string) is Lua's when it runs */
    for (int i = 0; i < n && !S->kernel; i++)
      if (!isnum(numview(args[i]))) return t_luacall(S, sp, v, args, kargs, n);
  }
  if (row->rule == KTY_R_TOINTEGER) {
    /* lmathlib.c's math_toint: fail (nil) for anything but a number with
    ** an integer value, no error */
    if (args[0].kind == T_UNKNOWN) return args[0];
    if (raises_on(args[0])) { k->kind = T_NIL; return ty(T_NIL); }
    if (args[0].kind == T_MAYBE) {
      Type r = ty(T_MAYBE); r.sub = T_INT; r.dtype = 1;
      return r;
    }
  }
  if (row->rule == KTY_R_CAST && args[0].kind == T_STR && kargs[0].kind == T_STR) {
    /* kjit.i32("12"), cuda.float32("1.5") of a constant string. A kernel
    ** is typed: it converts no strings. Elsewhere the cast converts it as
    ** the interpreter's does (luaL_checknumber: Lua's string conversion,
    ** then the float's cast, even for "12"), folded here; a string that is
    ** not a number raises luaL_checknumber's error when the call runs. A
    ** string known only at run time is a Lua value: cg_lua_tonumber */
    if (S->kernel)
      REFUSE(S, sp, v, "bad argument #1 to '%s' (number expected, got string): a kernel "
             "converts no strings (write the number)", name);
    lua_State *L = S->L;
    lua_pushlstring(L, kargs[0].str, kargs[0].len);
    int ok = strlen(lua_tostring(L, -1)) == kargs[0].len &&
             lua_stringtonumber(L, lua_tostring(L, -1)) != 0;
    lua_Number x = ok ? lua_tonumber(L, -1) : 0;
    lua_pop(L, ok ? 2 : 1);
    if (!ok) {
      RAISE(S, sp, v, -1, "bad argument #1 to '%s' (number expected, got string)",
            kir_argerror_name(sp, v, name));
    }
    /* a constant (float32's: the f32 value as an f64 constant, which
    ** folds in double with other constants, as the interpreter computes) */
    kty_fold_cast(id, x, k);
    return const_type(*k);
  }
  if (optional_second(id) && n >= 2) {
    /* nil there is none: math.log's natural logarithm, math.atan's x of 1
    ** (luaL_optnumber); a number-or-nil is the library's, called */
    if (args[1].kind == T_NIL) n = 1;
    else if (args[1].kind == T_MAYBE && args[1].dtype && !S->kernel)
      return t_luacall(S, sp, v, args, kargs, n);
  }
  int nnum = n;   /* (those it reads: kty_builtin_reads) */
  /* a string given to a math function (math.floor("3.5")): luaL_checknumber
  ** converts it, or raises its error, when the call runs: the library's
  ** function, called (before 2026-11-28 a compile error) */
  for (int i = 0; i < nnum && !S->kernel && kty_builtin_libname(id); i++)
    if (args[i].kind == T_STR && kargs[i].kind == T_STR && boxable(args[i], kargs[i]))
      return t_luacall(S, sp, v, args, kargs, n);
  if (id != B_MATH_MAX && id != B_MATH_MIN) {   /* (max and min of one argument return it) */
    int bad = -1;   /* the argument lmathlib.c names first of those that always raise */
    for (int j = 0; j < nnum && bad < 0; j++) {
      int i = checked_arg(id, nnum, j);
      if (args[i].kind == T_UNKNOWN) return args[i];
      if (raises_on(args[i])) bad = i;
    }
    if (bad >= 0) {
      /* one checked when the call runs beside it (a number-or-nil, math.ult's
      ** float) may fail first: the library function, called, checks them
      ** in its order */
      for (int i = 0; i < nnum && !S->kernel; i++)
        if (args[i].kind == T_MAYBE || (id == B_MATH_ULT && args[i].kind != T_INT && isnum(args[i])))
          return t_luacall(S, sp, v, args, kargs, n);
      /* luaL_checknumber's error, the function named as the call names it
      ** (math.sqrt: 'sqrt', local f = math.sqrt: 'f'), when the call runs */
      RAISE(S, sp, v, -1, "bad argument #%d to '%s' (number expected, got %s)", bad + 1,
            kir_argerror_name(sp, v, name), objtypename(args[bad]));
    }
  }
  for (int i = 0; i < nnum; i++) {
    args[i] = numview(args[i]);
    if (args[i].kind == T_UNKNOWN) return args[i];
    if (!isnum(args[i]))
      REFUSE(S, sp, v, "bad argument #%d to '%s' (number expected, got %s)", i + 1, name,
             luaname(args[i], tb, sizeof tb));
  }
  Type a = args[0];
  if (kty_fold_builtin(row->rule, id, kargs, nnum, k)) {   /* weak when its arguments are */
    Type r = const_type(*k);
    r.weak = r.kind == T_INT || r.kind == T_F64;
    for (int i = 0; i < nnum; i++) r.weak &= args[i].weak;
    return r;
  }
  switch (row->rule) {
  case KTY_R_ROUND:
    if (a.kind == T_INT) return a;
    return number(a.kind == T_NUMBER ? a.fsub : a.kind, 0);
  case KTY_R_SAME: return a;
  case KTY_R_FLOAT:
    if (nnum >= 2) return float_of(float_fn(a), float_fn(args[1]));
    return float_fn(a);
  case KTY_R_FMOD:
    return arith_type(KIR_MOD, a, args[1]);   /* integers stay integers, as '%' */
  case KTY_R_JOIN: {
    Type r = a;
    for (int i = 1; i < nnum; i++) r = numjoin(r, args[i]);
    return r;
  }
  case KTY_R_TOINTEGER: {
    if (a.kind == T_INT) return a;
    Type r = ty(T_MAYBE); r.sub = T_INT; r.dtype = 1;
    return r;
  }
  case KTY_R_ULT: return ty(T_BOOL);
  case KTY_R_CAST:   /* cuda.float32(x) ...: the cast's type; float16: a half held by an f64 */
    return ty(id == B_CUDA_FLOAT32 ? T_F32 : id == B_CUDA_FLOAT64 || id == B_CUDA_FLOAT16 ? T_F64
              : T_INT);
  case KTY_R_KMATH: {   /* kjit.math.*: the float of every argument */
    if (id == B_KMATH_ISNAN || id == B_KMATH_ISINF || id == B_KMATH_ISFINITE) return ty(T_BOOL);
    if (B_IS_FP16(id)) return ty(B_IS_FP16_CMP(id) ? T_BOOL : T_F64);   /* cg_half.c */
    Type r = float_fn(a);
    for (int i = 1; i < nnum; i++) r = float_of(r, float_fn(args[i]));
    return r;
  }
  case KTY_R_MODF:   /* the integral part (result_of: the fraction, a float) */
    return a.kind == T_INT ? ty(T_INT) : number(T_F64, 0);
  case KTY_R_PRANGE: {
    if (!feeds_tfor(v))
      REFUSE(S, sp, v, "kjit.prange can only be the iterator of a for loop: "
             "'for i in kjit.prange(a, b [, step]) do'");
    if (n < 2 || n > 3)
      REFUSE(S, sp, v, "kjit.prange takes 2 or 3 arguments (start, limit [, step]), not %d", n);
    static const char *const which[3] = { "initial", "limit", "step" };
    for (int i = 0; i < n; i++)
      if (args[i].kind != T_INT)
        REFUSE(S, sp, v, "kjit.prange: the %s value must be an integer (it is %s)", which[i],
               kty_name(args[i], tb, sizeof tb));
    Type r = ty(T_BUILTIN); r.ref = B_KJIT_PRANGE; r.sub = 1;
    return r;
  }
  default:
    REFUSE(S, sp, v, "'%s' is not supported in compiled code", name);
  }
}

/* Is the call v written `obj:m(...)` (its function from OP_SELF)? Its
** first argument is then the object, which the source does not show as
** one: messages count the arguments as written. */
static int is_method_call(const KirFunc *f, const KirInsn *v) {
  const KirInsn *fn = v->args[0];
  const KbcProto *p = f->proto;
  return fn->op == KIR_GETFIELD && fn->pc >= 0 && fn->pc < p->ncode &&
         KBC_OP(p->code[fn->pc]) == KBC_SELF && v->nargs >= 2 && v->args[1] == fn->args[0];
}

/* The name the source gives the object of a method call, or "?". */
static const char *self_name(const KirFunc *f, const KirInsn *o) {
  if (o->name) return o->name;
  if (o->op == KIR_GETUPVAL && o->aux < f->proto->nup && f->proto->up[o->aux].name)
    return f->proto->up[o->aux].name;
  if (o->op == KIR_GETFIELD) return o->k.str.s;
  return "?";
}

static Type t_call_closure(KtySession *S, KtySpec *sp, KirInsn *v, int di, Type *args, int n);
static Type t_call_extern(KtySession *S, KtySpec *sp, KirInsn *v, int ref, Type *args, int n);
static int const_string_arg(KtySession *S, KtySpec *sp, KirInsn *v, Type *t, KtyConst *k);
static Type call_of(KtySession *S, KtySpec *sp, KirInsn *v, KtySpec *c);
static int dtype_obj_arg(Type *t, const KtyConst *k);
static int param_may_change(const KtySpec *c, int i);

/* A constant string passed to a Lua function (`pr("%.9f\n", x)`): the
** callee is specialized on it (Type.ref: 1 + its index in S->strs), and
** its parameter is that constant. Strings built at run time are not. */
static int const_string_arg(KtySession *S, KtySpec *sp, KirInsn *v, Type *t, KtyConst *k) {
  if (t->kind != T_STR || t->sub == KTY_STR_BUILT || k->kind != T_STR) return 0;
  int id = -1;
  for (int i = 0; i < S->nstrs && id < 0; i++)
    if (consteq(S->strs[i], *k)) id = i;
  if (id < 0) {
    if (S->nstrs == S->capstrs) {
      int cap = S->capstrs ? 2 * S->capstrs : 8;
      KtyConst *ns = ka_alloc(S->A, sizeof *ns * (size_t)cap);
      if (ns == NULL) fail(S, sp, v, "not enough memory");
      if (S->nstrs) memcpy(ns, S->strs, sizeof *ns * (size_t)S->nstrs);
      S->strs = ns;
      S->capstrs = cap;
    }
    id = S->nstrs++;
    S->strs[id] = *k;
  }
  t->ref = id + 1;
  return 1;
}

const KExtern *kty_extern(KtySession *S, int ref) {
  push_value(S, ref);
  const KExtern *e = luaL_testudata(S->L, -1, KEXT_MT);
  lua_pop(S->L, 1);   /* kept alive by the session's values table */
  return e;
}

/* A call of an external device function (cuda.declare_device) in a GPU
** kernel (elsewhere, a declaration without a sim implementation: the call
** raises when it runs). The declared parameters take numbers (an integer
** parameter an integer: a float would need Lua's conversion, which may
** fail, so it is written out) or arrays of the declared dtype (passed as
** the address of their first element); the result has the declared type,
** integers widened to Lua's i64. */
static Type t_call_extern(KtySession *S, KtySpec *sp, KirInsn *v, int ref, Type *args, int n) {
  const KExtern *e = kty_extern(S, ref);
  char tb[32];
  if (e == NULL) REFUSE(S, sp, v, "internal error: not an external device function");
  if (!S->gpu)   /* no sim implementation (else it is that): interop.c's extern_call's error */
    RAISE(S, sp, v, -1, "external device function '%s' (cuda.declare_device) runs only in "
          "kernels compiled for the GPU; give the declaration a Lua implementation to run it "
          "in the simulator and on the CPU: cuda.declare_device(name, signature, {sim = "
          "function(...) ... end})", e->name);
  if (n != e->nargs)
    REFUSE(S, sp, v, "external device function '%s' (%s) takes %d argument%s, got %d", e->name,
           e->sig, e->nargs, e->nargs == 1 ? "" : "s", n);
  for (int i = 0; i < n; i++) {
    Type a = args[i];
    if (a.kind == T_UNKNOWN) return a;
    const char *dn = kjit_dtype_name((kjit_dtype)e->args[i]);
    if (e->ptr[i]) {
      if (a.kind != T_BUF || a.dtype != e->args[i])
        REFUSE(S, sp, v, "argument #%d of external device function '%s' (%s) is a pointer to "
               "%s: pass a %s array, not %s", i + 1, e->name, e->sig, dn, dn,
               kty_name(a, tb, sizeof tb));
      continue;
    }
    int isint = e->args[i] != KJIT_F32 && e->args[i] != KJIT_F64;
    if (!(a.kind == T_INT ||
          (!isint && (a.kind == T_F64 || a.kind == T_F32 || a.kind == T_NUMBER))))
      REFUSE(S, sp, v, "argument #%d of external device function '%s' (%s) is %s: pass %s, "
             "not %s", i + 1, e->name, e->sig, dn,
             isint ? "an integer (math.floor(x) converts a float)" : "a number",
             kty_name(a, tb, sizeof tb));
  }
  switch (e->ret) {
  case -1: return ty(T_NIL);
  case KJIT_F32: return ty(T_F32);
  case KJIT_F64: return ty(T_F64);
  default: return ty(T_INT);
  }
}

/* select(i, ...) with i '#' or a constant integer, over a list of known
** length (the values of '...' in this specialization, a compiled call's):
** done by compiled code itself, as Lua's luaB_select does, the values
** passed on as they are (sp->varop). Any other select is called through
** lua_call (0 returned). */
static int t_select(KtySession *S, KtySpec *sp, KirInsn *v, const Type *args,
                    const KtyConst *kargs, int n, KtyConst *k, Type *r) {
  sp->varop[v->id] = 0;
  KirInsn *fn = v->args[0];
  if (S->kernel || n < 1 || (v->flags & KIR_F_TFOR) || !sp->upvref[fn->id] || sp->upvidx[fn->id] != 0)
    return 0;
  lua_State *L = S->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, sp->upvref[fn->id]);
  lua_CFunction cf = lua_tocfunction(L, -1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "_G");
  int is_select = 0;
  if (cf != NULL && lua_istable(L, -1)) {
    is_select = lua_getfield(L, -1, "select") == LUA_TFUNCTION && lua_tocfunction(L, -1) == cf;
    lua_pop(L, 1);
  }
  lua_pop(L, 3);
  if (!is_select) return 0;
  /* a list ending in a function value's values (`select('#', pcall(g))`),
  ** or in a compiled call's whose count varies by path other than under
  ** '#': the library's select, given as many as there are (lua_call) */
  int dyn = kty_open_dyn(sp, v);
  if (dyn == 2 || (dyn == 1 && !(kargs[0].kind == T_STR && kargs[0].len > 0 &&
                                 kargs[0].str[0] == '#')))
    return 0;
  int m = n - 1;   /* the list's length */
  if (kargs[0].kind == T_STR && kargs[0].len > 0 && kargs[0].str[0] == '#') {
    sp->varop[v->id] = KTY_SELECT_COUNT;
    /* a constant, but where the list ends in a call whose count varies
    ** (cg_vararg.c counts it when it runs) */
    const KirInsn *c = (v->flags & KIR_F_OPEN) ? v->args[v->nargs - 1] : NULL;
    KtySpec *cs = c && c->op == KIR_CALL ? sp->callees[c->id] : NULL;
    if (!(cs && cs->dyncount)) { k->kind = T_INT; k->v.i = m; }
    *r = ty(T_INT);
    return 1;
  }
  /* i as luaL_checkinteger reads it: an integer, a float with an integer
  ** value, a string that converts to one */
  lua_Integer i;
  const char *bad = NULL;
  if (kargs[0].kind == T_INT) i = kargs[0].v.i;
  else if (kargs[0].kind == T_F64 || kargs[0].kind == T_STR) {
    if (kargs[0].kind == T_F64) lua_pushnumber(L, kargs[0].v.f);
    else lua_pushlstring(L, kargs[0].str, kargs[0].len);
    int isint;
    i = lua_tointegerx(L, -1, &isint);
    if (!isint) bad = lua_isnumber(L, -1) ? "number has no integer representation"
                                          : "number expected, got string";
    lua_pop(L, 1);
  } else if (args[0].kind == T_INT && v->aux == 1 && m >= 1) {
    /* `local x = select(i, ...)` (a loop over '...'): value i of the list,
    ** chosen when it runs, where the list's values and nil have a native
    ** type in common (numbers); the rest is lua_call's */
    Join J;
    memset(&J, 0, sizeof J);
    KtyConst knil;
    memset(&knil, 0, sizeof knil);
    knil.kind = T_NIL;
    for (int j = 1; j < n; j++) join_add(&J, args[j], kargs[j]);
    join_add(&J, ty(T_NIL), knil);
    Type t = join_result(&J);
    if (t.kind == T_CONFLICT || t.kind == T_LUA || t.kind == T_UNKNOWN) return 0;
    t.weak = 0;
    sp->varop[v->id] = KTY_SELECT_AT;
    *r = t;
    return 1;
  } else return 0;
  if (bad) {
    sp->varop[v->id] = KTY_SELECT_FROM;   /* (typed: not a lua_call) */
    *r = ty(T_UNKNOWN);
    if (S->strict) raise_at(S, sp, v, -1, "bad argument #1 to 'select' (%s)", bad);
    return 1;
  }
  lua_Integer top = m + 1;   /* luaB_select's n and top */
  if (i < 0) i = top + i;
  else if (i > top) i = top;
  sp->varop[v->id] = KTY_SELECT_FROM;   /* (typed: not a lua_call) */
  if (i < 1) {
    *r = ty(T_UNKNOWN);
    if (S->strict) raise_at(S, sp, v, -1, "bad argument #1 to 'select' (index out of range)");
    return 1;
  }
  sp->varop[v->id] = KTY_SELECT_FROM + (int)(i - 1);
  *r = result_of(sp, v, 0);
  if (i - 1 >= m) k->kind = T_NIL;
  else *k = select_const(S, sp, v, 0);
  return 1;
}

/* Does call or constructor v end in values whose number is known only
** when it runs (issue 29: `print(g(x))`, `{g(x)}`, `f(table.unpack(t))`)?
** 1: a compiled function whose returns differ in length (its count comes
** back with its values, cg_vararg.c); 2: an open call of a function value
** (lua_call's, as many as it gives). 0 otherwise. */
/* Is the Lua function at value reference ref a vararg one? */
static int lua_func_is_vararg(KtySession *S, int ref) {
  lua_Debug ar;
  push_value(S, ref);
  if (!lua_isfunction(S->L, -1)) { lua_pop(S->L, 1); return 0; }
  return lua_getinfo(S->L, ">u", &ar) && ar.isvararg;   /* (pops the function) */
}

int kty_open_dyn(const KtySpec *sp, const KirInsn *v) {
  if (!(v->flags & KIR_F_OPEN) || v->nargs < 2) return 0;
  const KirInsn *c = v->args[v->nargs - 1];
  if (c->op != KIR_CALL || (v->op == KIR_CALL && (v->flags & KIR_F_TFOR))) return 0;
  const KtySpec *cs = sp->callees[c->id];
  if (cs && cs->dyncount) return 1;
  if (kty_calls_value(sp, c) && c->aux < 0 && !(c->flags & KIR_F_TFOR)) return 2;
  return 0;
}

/* A constructor whose list ends in values counted only when it runs
** (`{g(x)}`, `{a, f(...)}`, `{table.unpack(t)}`): the VM sizes its array
** part by that count (luaV_execute's SETLIST), which `#` and later
** stores see, so compiled code makes the table only there, at the SETLIST
** v, with the VM's sizes (cg_lua.c cg_lua_setlist). That needs nothing
** to have touched it before: the constructor is its list alone (no
** `x = 1` fields, one flush, all in one block). kty_open_dyn's kind, or 0. */
int kty_ctor_deferred(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_SETLIST || v->args[0]->op != KIR_NEWTABLE) return 0;
  int dyn = kty_open_dyn(sp, v);
  const KirInsn *t = v->args[0];
  if (!dyn || t->block != v->block || v->aux != 0) return 0;
  for (int i = 0; i < t->nusers; i++) {
    const KirInsn *u = t->users[i];
    if (u != v && u->block == v->block && u->pc <= v->pc) return 0;
  }
  return dyn;
}

/* A constructor whose list ends in values counted only when it runs and
** that is not kty_ctor_deferred (`{x = 1, g(x)}`, more than 50 items, a
** field computed in blocks of its own): the table is made at its NEWTABLE
** with the VM's sizes, its fields stored as the VM stores them, and its
** SETLIST grows the array part to the last index as luaV_execute's does
** (cg_lua.c setlist_grow, runtime/luactor.c). kty_open_dyn's kind, or 0. */
int kty_ctor_grows(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_SETLIST || v->args[0]->op != KIR_NEWTABLE || kty_ctor_deferred(sp, v)) return 0;
  return kty_open_dyn(sp, v);
}

/* g(t.f()) with g a compiled Lua function of np parameters, no '...'
** (kty_callvalue_tocallee): f's values fill g's parameters after the ones
** before, each a Lua value, as many as g has; *n becomes that count, so
** that g is specialized on what the call passes. */
static void pad_callvalue_args(const KtySpec *sp, const KirInsn *v, int np, Type *args, int *n) {
  if (kty_open_dyn(sp, v) != 2) return;
  int fixed = v->nargs - 2, want = np > fixed ? np : fixed;
  for (int i = fixed; i < want && i < KJIT_MAXARGS; i++) args[i] = ty(T_LUA);
  *n = want < KJIT_MAXARGS ? want : KJIT_MAXARGS;
}

static Type t_call(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  KirInsn *fn = v->args[0];
  Type ft = sp->types[fn->id];
  Type args[KJIT_MAXARGS];
  KtyConst kargs[KJIT_MAXARGS];
  char tb[32], db[128];
  if (ft.kind == T_UNKNOWN) return ft;
  for (int i = 1; i < v->nargs; i++)   /* a constructor waiting for its callee (ctor_lua_use) */
    if (v->args[i]->op == KIR_NEWTABLE && sp->types[v->args[i]->id].kind == T_UNKNOWN)
      push(sp, v->args[i]);
  int n = operands(S, sp, v, 1, args, kargs, KJIT_MAXARGS);
  if (n < 0) return ty(T_UNKNOWN);
  /* an argument never produced (its operation always raises): the call
  ** never runs, as the code generator knows (cg_never_produced); typed,
  ** what depends on its result was live here and unreachable there */
  for (int i = 1; i < v->nargs - ((v->flags & KIR_F_OPEN) ? 1 : 0); i++)
    if (sp->types[v->args[i]->id].kind == T_UNKNOWN && v->args[i]->op != KIR_NEWTABLE)
      return ty(T_UNKNOWN);
  if (v->flags & KIR_F_TFOR) {
    if (ft.kind == T_BUILTIN && ft.ref == B_KJIT_PRANGE && ft.sub) {
      if (v->aux > 1)
        REFUSE(S, sp, v, "kjit.prange gives one loop variable, not %d", v->aux);
      return ty(T_INT);
    }
    if (ft.kind == T_BUILTIN && ft.ref == B_IPAIRS && ft.sub) {
      if (v->aux > 2) REFUSE(S, sp, v, "ipairs gives two loop variables, not %d", v->aux);
      return ty(T_INT);
    }
    /* any other iterator is a Lua value (pairs(t)'s next, ipairs(t)'s, a
    ** function returned by a call): called through lua_call each turn */
    if (islua(ft) || ft.kind == T_FUNC) return t_luacall(S, sp, v, args, kargs, n);
    /* a literal made here: it escapes (a real Lua closure, called as any
    ** iterator; its captured locals shared through cells: ir_closure.c),
    ** where what it is given has a Lua form */
    int given = 1;
    for (int i = 0; i < n; i++)
      given &= boxable(args[i], kargs[i]) || args[i].kind == T_CLOSURE;
    if (given && escape_closure(S, ft)) return ty(T_UNKNOWN);
    if (ft.kind == T_CLOSURE)
      REFUSE(S, sp, v, "a generic for whose iterator is a function literal made in compiled "
             "code is not supported yet: define the iterator outside the compiled function "
             "(an upvalue or an argument), or use a numeric for");
    REFUSE(S, sp, v, GENERIC_FOR);
  }
  if (ft.kind == T_BUILTIN) {
    /* a math function of a value read from a table: the value is checked
    ** to be a number at run time (cg_lua.c), as luaL_checknumber does */
    const BuiltinRow *row = builtin_row(ft.ref);
    /* the values of a compiled call whose count varies by path
    ** (`print(g(x))`, `string.format("%d %d", g(x))`, `math.max(g(x))`,
    ** `kjit.zeros(g(x))`): the library function itself, called through
    ** lua_call with as many as g gave (cg_callvalue.c, cg_open_count), so
    ** that what it prints, returns and raises is the interpreter's (an
    ** array method ignoring g's values past its first: dyn_ignored) */
    if (kty_open_dyn(sp, v) == 1 && kty_builtin_valuename(ft.ref) && !S->kernel)
      return t_luacall(S, sp, v, args, kargs, n);
    /* the values of an open call of a function value (char(unpack(t))):
    ** however many there are at run time, passed on by the library
    ** function called through lua_call (runtime/luacall.c) */
    if ((v->flags & KIR_F_OPEN) && !(v->flags & KIR_F_TFOR) && v->nargs > 1 &&
        islua(sp->types[v->args[v->nargs - 1]->id]) && kty_builtin_libname(ft.ref) &&
        (row == NULL || !(row->rule == KTY_R_ROUND || row->rule == KTY_R_SAME ||
                          row->rule == KTY_R_FLOAT || row->rule == KTY_R_FMOD)))
      return t_luacall(S, sp, v, args, kargs, n);
    /* arguments past those the function reads (math.floor(x, t.s), a:fill(v,
    ** g()) with g giving two) are evaluated and go no further, here and in
    ** the code generator (kty_builtin_reads); the library function called
    ** through lua_call is given them all */
    int nall = n;
    n = kty_builtin_reads(ft.ref, n);
    /* a Lua value (checked when the call runs) beside a nil, a boolean or
    ** an array (which always raise) in a math function: which one the
    ** library names is its order's, so the library function is called */
    int lua_arg = 0, raising_arg = 0;
    for (int i = 0; i < n; i++) { lua_arg |= islua(args[i]); raising_arg |= raises_on(args[i]); }
    if (lua_arg && raising_arg && row && kty_builtin_libname(ft.ref) && !S->kernel &&
        (row->rule == KTY_R_ROUND || row->rule == KTY_R_SAME || row->rule == KTY_R_FLOAT ||
         row->rule == KTY_R_FMOD))
      return t_luacall(S, sp, v, args, kargs, nall);
    for (int i = 0; i < n; i++) {
      if (!islua(args[i])) continue;
      /* the library takes any value: passed as it is (cg_lib.c) */
      if (row && (row->rule == KTY_R_LIB || row->rule == KTY_R_STRING ||
                  row->rule == KTY_R_LUATYPE || row->rule == KTY_R_TONUMBER ||
                  row->rule == KTY_R_ERROR || row->rule == KTY_R_ASSERT) &&
          ft.ref != B_MATH_RANDOM && ft.ref != B_MATH_RANDOMSEED)
        continue;
      if ((row == NULL || !(row->rule == KTY_R_ROUND || row->rule == KTY_R_SAME ||
                            row->rule == KTY_R_FLOAT || row->rule == KTY_R_FMOD)) &&
          kty_builtin_libname(ft.ref) && !(v->flags & KIR_F_TFOR))
        return t_luacall(S, sp, v, args, kargs, nall);   /* the library function, called */
      /* the dtype of an array made here (a name or a kjit.struct): its
      ** layout is compiled in, so it cannot come from a table at run time */
      if (((ft.ref == B_KJIT_ZEROS || ft.ref == B_KJIT_EMPTY) && i == 1) ||
          (ft.ref == B_KJIT_FULL && i == 2))
      {
        /* kjit.struct{...} called in the compiled function: kjit.struct
        ** returns the same dtype for the same fields, so making it outside
        ** changes nothing (docs/guide/lua-library.md) */
        const KirInsn *d = v->args[i + 1];
        if (d->op == KIR_CALL)
          REFUSE(S, sp, v, "%s: the dtype (argument #%d) must be known when compiling, not "
                 "made when the code runs: make the kjit.struct outside the compiled function "
                 "(`local P = kjit.struct{...}` beside it; it is the same dtype for the same "
                 "fields) and use it as an upvalue", builtin_name(ft.ref), i + 1);
        REFUSE(S, sp, v, "%s: the dtype (argument #%d) must be known when compiling: a "
               "constant name or a kjit.struct in an upvalue or global, not a value read from "
               "a table", builtin_name(ft.ref), i + 1);
      }
      /* the fill value of a:fill(v) on a number array: checked strictly when
      ** the call runs, as buffer.c's storeval does (cg_lua_tonumber). Not
      ** kjit.full's: its dtype follows the value (a boolean makes a bool array) */
      if (i == 1 && ft.ref == B_ARR_FILL && args[0].kind == T_BUF &&
          args[0].dtype != KJIT_BOOL && args[0].dtype != KJIT_RECORD) {
        args[i] = luanum(args[i]);
        continue;
      }
      /* ... on a bool array: checked to be a boolean (cg_array.c store_bool) */
      if (i == 1 && ft.ref == B_ARR_FILL && args[0].kind == T_BUF && args[0].dtype == KJIT_BOOL)
        continue;
      /* kjit.full(shape, v) with v a Lua value: the dtype follows v
      ** (buffer.c: a boolean makes a bool array, any number an f64 one) but
      ** compiled code fixes it when compiling. Given (kjit.full(n, v, "bool")),
      ** v is checked against it when the fill runs; not given, the array is
      ** f64, the dtype of every number, and v is checked to be a number
      ** ("number expected, got boolean" for a boolean: lua-library.md) */
      if (i == 1 && ft.ref == B_KJIT_FULL) {
        int dt = n > 2 ? const_dtype(&kargs[2], 1, KJIT_F64) : KJIT_F64;
        if (dt != KJIT_BOOL && dt != KJIT_RECORD) args[i] = luanum(args[i]);
        continue;
      }
      /* math.log's base, math.atan's x: lmathlib.c reads nil as none, so
      ** a Lua value there is the library's to check (t_builtin) */
      if (i == 1 && optional_second(ft.ref) && !S->kernel)
        return t_luacall(S, sp, v, args, kargs, nall);
      if (row == NULL || !(row->rule == KTY_R_ROUND || row->rule == KTY_R_SAME ||
                           row->rule == KTY_R_FLOAT || row->rule == KTY_R_FMOD ||
                           row->rule == KTY_R_CAST))
        REFUSE(S, sp, v, "%s cannot take a table value or a value read from a table in "
               "compiled code yet (argument #%d): copy it to a number first",
               kty_call_name(sp, v, ft.ref), i + 1);
      args[i] = luanum(args[i]);
    }
    /* (compiled from here on: no trampoline left from an earlier round,
    ** when an argument was a Lua value and the library was called, which
    ** kty_calls_value would read as "called through lua_call": difffuzz
    ** 1554, math.min(3, x) with x typed a Lua value, then a number-or-false) */
    sp->upvref[v->id] = 0;
    return t_builtin(S, sp, v, ft.ref, args, kargs, n, k);
  }
  if (ft.kind == T_CLOSURE) {
    if (!S->clos[ft.ref].ir->proto->is_vararg)
      pad_callvalue_args(sp, v, S->clos[ft.ref].ir->proto->numparams, args, &n);
    else if (kty_open_dyn(sp, v) && escape_closure(S, ft))
      /* given values counted only when the call runs (`h(t.f(x))`, `h(g(x))`
      ** with g's returns of varying number): compiled, it would be
      ** specialized on one count; made as the real closure instead (as an
      ** escaping literal is) and called as that Lua value, through
      ** lua_call, which passes them all (the T_LUA case below) */
      return ty(T_UNKNOWN);
    for (int i = 0; i < n; i++)
      if (!const_string_arg(S, sp, v, &args[i], &kargs[i])) dtype_obj_arg(&args[i], &kargs[i]);
    return t_call_closure(S, sp, v, ft.ref, args, n);
  }
  if (ft.kind == T_LUA && !S->kernel) {
    int di = direct_literal(S, sp, v);
    /* A vararg literal given values counted only when the call runs (`h(t.f(x))`,
    ** `h(table.unpack(t))`, `h(g(x))` with g's returns of varying number) is
    ** called as the Lua value it is, through lua_call, which passes them all:
    ** compiled directly it would be specialized on one count (T_CLOSURE's
    ** refusal above). */
    if (di >= 0 && S->clos[di].ir->proto->is_vararg && kty_open_dyn(sp, v)) di = -1;
    /* (set on every visit: kty_open_dyn may see the count's call as a
    ** function value's only once that call is typed) */
    sp->direct[v->id] = di >= 0;
    if (di >= 0) {   /* an escaping literal known here: compiled directly */
      for (int i = 0; i < n; i++)
        if (!const_string_arg(S, sp, v, &args[i], &kargs[i])) dtype_obj_arg(&args[i], &kargs[i]);
      return t_call_closure(S, sp, v, di, args, n);
    }
  }
  if (ft.kind == T_EXTERN) {
    /* off the GPU, a declaration's sim implementation is called instead, as
    ** any Lua function (the value stays the declaration: type() is
    ** "userdata", as interpreted) */
    int simref = 0;
    if (!S->gpu) {
      push_value(S, ft.ref);
      if (lua_getiuservalue(S->L, -1, 1) == LUA_TFUNCTION) simref = kty_keep_value(S, -1);
      lua_pop(S->L, 2);
    }
    if (simref == 0) return t_call_extern(S, sp, v, ft.ref, args, n);
    ft = ty(T_FUNC);
    ft.ref = simref;
  }
  if (islua(ft)) {
    Type r;
    if (t_select(S, sp, v, args, kargs, n, k, &r)) return r;   /* select, done here */
    return t_luacall(S, sp, v, args, kargs, n);   /* lua_call */
  }
  if (ft.kind != T_FUNC) FROZEN_NIL(S, sp, v, fn);
  if (ft.kind == T_BUF || index_raises(S, ft, "__call")) RAISE_NOT_TABLE(S, sp, v, ft, "call");
  TYPE_META_REFUSED(S, sp, v, ft, "call", "__call");
  /* a number while numbers have a metatable: its __call (or Lua's error)
  ** when the call runs, the number a Lua value (kty_calls_value) */
  if (isnum(ft) && !S->kernel) return t_luacall(S, sp, v, args, kargs, n);
  if (ft.kind != T_FUNC)
    REFUSE(S, sp, v, "attempt to call a %s value%s", luaname(ft, tb, sizeof tb),
           describe(sp, fn, db, sizeof db));
  /* a vararg Lua function given values whose count is known only when it
  ** runs (`sum(g(x))`, `sum(table.unpack(t, 1, t.n))`): it is specialized
  ** on that count, so it is called as the Lua value it is, through
  ** lua_call, with as many as there are; a function without '...' is
  ** compiled for its parameters, which a function value's values fill */
  {
    int dyn = kty_open_dyn(sp, v);
    if (!S->kernel && dyn && lua_func_is_vararg(S, ft.ref))
      return t_luacall(S, sp, v, args, kargs, n);
    /* (compiled from here on: no trampoline, which kty_calls_value reads
    ** as "called through lua_call", left from an earlier round) */
    sp->upvref[v->id] = 0;
    if (dyn == 2) {   /* no '...': as many as its parameters (kty_callvalue_tocallee) */
      lua_Debug ar;
      push_value(S, ft.ref);
      if (lua_getinfo(S->L, ">u", &ar)) pad_callvalue_args(sp, v, ar.nparams, args, &n);
    }
  }
  int self = is_method_call(sp->ir, v);
  int boxed[KJIT_MAXARGS] = { 0 };   /* frozen tables passed on: their refs */
  for (int i = 0; i < n; i++) {
    if (args[i].kind == T_UNKNOWN) return args[i];
    if (const_string_arg(S, sp, v, &args[i], &kargs[i])) continue;
    if ((args[i].kind == T_STR || (args[i].kind == T_TABLE && S->kernel) ||
         args[i].kind == T_SHAPE || args[i].kind == T_BUILTIN || args[i].kind == T_CONFLICT) &&
        self && i == 0)
      REFUSE(S, sp, v, "cannot pass a %s to a compiled function (the object of method call "
             "'%s:%s(...)', its self): %s", kty_name(args[i], tb, sizeof tb),
             self_name(sp->ir, fn->args[0]), fn->k.str.s, pass_hint(args[i]));
    if (args[i].kind == T_BUILTIN && args[i].sub == 0 && kty_builtin_libname(args[i].ref)) {
      args[i].weak = 0;   /* a library function: the callee is specialized on it */
      continue;
    }
    if (dtype_obj_arg(&args[i], &kargs[i])) continue;   /* kjit.f32: specialized on it */
    if (args[i].kind == T_TABLE && !S->kernel) {
      /* (a self too, since 2026-11-28: `player:update()` on an object
      ** held by an upvalue, its method found when the function compiled) */
      /* a frozen table (an upvalue's, a global's) passed on: the callee
      ** gets the table itself as a Lua value (boxed by its registry
      ** reference, cg_callvalue.c cg_fn_boxconst, into a slot of the
      ** call's: cg_lua.c) and reads and writes it when it runs, as
      ** interpreted (SciMark's closures pass their matrices so); the
      ** caller's own reads of its fields would not see the callee's
      ** writes: where the callee may write it, the table is marked live
      ** (below), and the caller's reads of it are typed again, live */
      boxed[i] = args[i].ref;
      args[i] = ty(T_LUA);
      args[i].sub = KTY_LUA_TABLE;
      continue;
    }
    if (args[i].kind == T_STR || args[i].kind == T_TABLE || args[i].kind == T_SHAPE ||
        args[i].kind == T_BUILTIN || args[i].kind == T_CONFLICT)
      REFUSE(S, sp, v, "cannot pass a %s to a compiled function (argument #%d%s): %s",
             kty_name(args[i], tb, sizeof tb), self ? i : i + 1,
             self ? " of the method call, after its self" : "", pass_hint(args[i]));
    args[i].weak = 0;
  }
  push_value(S, ft.ref);
  KtySpec *c = get_spec(S, -1, n, args, sp, v);
  lua_pop(S->L, 1);
  for (int i = 0; i < n && i < KJIT_MAXARGS; i++)
    if (boxed[i] && param_may_change(c, i)) {
      push_value(S, boxed[i]);
      mark_live(S);
      lua_pop(S->L, 1);
    }
  return call_of(S, sp, v, c);
}

/* A dtype object (kjit.f32) passed to a compiled function (refuse3): the
** callee is specialized on it, as on a library function, and its
** parameter is that object again (KIR_PARAM: the constant, v.i 1), so
** that kjit.zeros(n, d), tostring(d) and `..` fold in the callee as they
** do where kjit.f32 is written. Marked by Type.dtype 1 (tyeq tells it from
** the cast function cuda.float32, which has the same BuiltinId). */
static int dtype_obj_arg(Type *t, const KtyConst *k) {
  if (t->kind != T_BUILTIN || t->sub != 0 || !kty_dtype_obj_name(k)) return 0;
  t->dtype = 1;
  t->weak = 0;
  return 1;
}

/* Whether callee c may change the table it gets as parameter i (0-based):
** any use of it but reading a field or an element or its length (a
** write, a call it is passed to, a value it is stored into). */
static int param_may_change(const KtySpec *c, int i) {
  const KirFunc *f = c->ir;
  for (int b = 0; b < f->nblocks; b++)
    for (int k = 0; k < f->blocks[b]->ninsns; k++) {
      const KirInsn *p = f->blocks[b]->insns[k];
      if (p->op != KIR_PARAM || p->aux != i) continue;
      for (int u = 0; u < p->nusers; u++) {
        const KirInsn *w = p->users[u];
        if (!((w->op == KIR_INDEX || w->op == KIR_GETFIELD || w->op == KIR_LEN) && w->args[0] == p))
          return 1;
      }
    }
  return 0;
}

/* v calls specialization c: recorded, and c's results are v's. */
static Type call_of(KtySession *S, KtySpec *sp, KirInsn *v, KtySpec *c) {
  if (sp->callees[v->id] != c) {
    sp->callees[v->id] = c;
    push_users(sp, v);   /* the results past the first come from c now */
    KtyCaller *cl = ka_alloc(S->A, sizeof *cl);
    if (cl == NULL) fail(S, sp, v, "not enough memory");
    cl->spec = sp; cl->call = v; cl->next = c->callers;
    c->callers = cl;
  }
  return result_of(sp, v, 0);
}

static Type t_setindex(KtySession *S, KtySpec *sp, KirInsn *v) {
  Type o = sp->types[v->args[0]->id], kt = sp->types[v->args[1]->id];
  Type val = sp->types[v->args[2]->id];
  char tb[32], db[128];
  if (o.kind == T_UNKNOWN) return ty(T_NIL);
  if (o.kind == T_BUF && o.sub == KTY_BUF_CONST) REFUSE(S, sp, v, CONST_ARRAY_WRITE);
  if (islua(o)) {   /* t[k] = v: lua_settable (__newindex included) */
    if (kt.kind != T_UNKNOWN && !boxable(kt, sp->consts[v->args[1]->id]))
      REFUSE_UNBOXABLE(S, sp, v, v->args[1], "a table key");
    if (val.kind != T_UNKNOWN && !boxable(val, sp->consts[v->args[2]->id]))
    {
      if (escape_closure(S, val)) return ty(T_UNKNOWN);
      REFUSE_UNBOXABLE(S, sp, v, v->args[2], "stored in a table");
    }
    return ty(T_NIL);
  }
  if (index_raises(S, o, "__newindex")) RAISE_NOT_TABLE(S, sp, v, o, "index");
  TYPE_META_REFUSED(S, sp, v, o, "index", "__newindex");
  if (o.kind != T_BUF)
    REFUSE(S, sp, v, "cannot index a %s%s", luaname(o, tb, sizeof tb),
           describe(sp, v->args[0], db, sizeof db));
  if (o.dtype == KJIT_RECORD && o.ndim == 0) {
    if (kt.kind == T_UNKNOWN) return ty(T_NIL);
    if (may_be_string(kt)) REFUSE(S, sp, v, RECORD_STRING_KEY);
    RAISE(S, sp, v, -1, "a record is indexed by field names, not with a %s value",
          luaname(kt, tb, sizeof tb));
  }
  if (o.ndim > 1 && o.dtype == KJIT_RECORD)
    REFUSE(S, sp, v, "cannot assign to a row of a %d-D array of records in compiled code: "
           "index all %d dimensions", o.ndim, o.ndim);
  if (o.ndim > 1 && val.kind == T_BUF) {   /* m[i] = row: copies the elements */
    if (kt.kind != T_UNKNOWN && !isnum(numview(kt)) && !islua(kt))
      REFUSE(S, sp, v, BAD_KEY, luaname(kt, tb, sizeof tb));
    if (val.ndim != o.ndim - 1)   /* buffer.c's message, when it runs */
      RAISE(S, sp, v, -1, "cannot assign a %d-D kjit.array to a row of a %d-D kjit.array "
            "(rows are %d-D)", val.ndim, o.ndim, o.ndim - 1);
    if (val.dtype != o.dtype)
      REFUSE(S, sp, v, "row assignment from a %s array to a %s array is not supported in "
             "compiled code (convert it first: kjit.array(row, \"%s\"))",
             kjit_dtype_name((kjit_dtype)val.dtype), kjit_dtype_name((kjit_dtype)o.dtype),
             kjit_dtype_name((kjit_dtype)o.dtype));
    return ty(T_NIL);
  }
  if (o.ndim > 1 && (isnum(numview(val)) || raises_on(val)))   /* buffer.c's words */
    RAISE(S, sp, v, -1, "cannot assign a %s to a row of a %d-D kjit.array: index all %d "
          "dimensions (a[i][j] = v), or assign a kjit.array of the row's shape",
          objtypename(val), o.ndim, o.ndim);
  if (o.ndim > 1)
    REFUSE(S, sp, v, "cannot assign to a row of a %d-D array: index all %d dimensions "
           "(or assign a kjit array of the row's shape)", o.ndim, o.ndim);
  if (o.dtype == KJIT_RECORD) {   /* p[i] = r: a copy of a record of the same layout */
    if (kt.kind != T_UNKNOWN && !isnum(numview(kt)) && !islua(kt))
      REFUSE(S, sp, v, BAD_KEY, luaname(kt, tb, sizeof tb));
    if (val.kind == T_UNKNOWN || (val.kind == T_BUF && val.dtype == KJIT_RECORD &&
                                  val.ndim == 0 && val.ref == o.ref))
      return ty(T_NIL);
    REFUSE(S, sp, v, "compiled code assigns to a record only a record of the same layout "
           "(p[i] = q[j]), not a %s value", luaname(val, tb, sizeof tb));
  }
  if (bad_key_raises(kt)) RAISE(S, sp, v, -1, BAD_KEY, luaname(kt, tb, sizeof tb));
  if (kt.kind != T_UNKNOWN && !isnum(numview(kt)) && !islua(kt))
    REFUSE(S, sp, v, BAD_KEY, luaname(kt, tb, sizeof tb));
  /* a bool array takes booleans; any other value with a run-time form
  ** raises KB_BOOL_EXPECTED when the store runs, after the index checks
  ** (cg_array.c), as the interpreter's __newindex does */
  if (o.dtype == KJIT_BOOL && (val.kind == T_BOOL || val.kind == T_NIL || val.kind == T_BUF ||
                               isnum(numview(val))))
    return ty(T_NIL);
  /* a value read from a table (a[i] = t.x): converted when it runs with
  ** the array's __newindex rules, its errors included (cg_lua_store_number) */
  if (islua(val)) return ty(T_NIL);
  /* a boolean, nil, an array or a constant string: the store raises the
  ** interpreter's "number expected, got ..." when it runs, after the index
  ** checks (cg_array.c), as __newindex does */
  if (stores_raise(val)) return ty(T_NIL);
  if (val.kind != T_UNKNOWN && !isnum(numview(val)))
    REFUSE(S, sp, v, "cannot store a %s value in a kjit array", luaname(val, tb, sizeof tb));
  return ty(T_NIL);
}

/* forprep's and forloop's value: the control variable. Lua runs an integer
** loop when the initial value and the step are integers. */
static Type t_for(KtySession *S, KtySpec *sp, KirInsn *v) {
  if (v->op == KIR_FORPREP) {
    /* a nil, boolean or array bound raises when the loop starts (lvm.c's
    ** forprep checks the limit, then the step, then the initial value) */
    static const int order[3] = { 1, 2, 0 };
    static const char *const what[3] = { "initial value", "limit", "step" };
    for (int j = 0; j < 3; j++) {
      Type r = sp->types[v->args[order[j]]->id];
      if (r.kind == T_UNKNOWN) return r;
      if (raises_on(r))
        RAISE(S, sp, v, -1, "bad 'for' %s (number expected, got %s)", what[order[j]], objtypename(r));
    }
  }
  if (v->op == KIR_FORLOOP) return sp->types[v->args[1]->id];
  static const char *const which[3] = { "initial value", "limit", "step" };
  Type t[3];
  char tb[32];
  for (int i = 0; i < 3; i++) {
    t[i] = luanum(numview(sp->types[v->args[i]->id]));   /* a Lua value: checked (cg_lua.c) */
    if (t[i].kind == T_UNKNOWN) return t[i];
    if (!isnum(t[i]))   /* Lua 5.4's luaG_forerror */
      REFUSE(S, sp, v, "bad 'for' %s (number expected, got %s)", which[i], luaname(t[i], tb, sizeof tb));
  }
  if (isfloat(t[0]) || isfloat(t[2])) return ty(T_F64);
  if (t[0].kind == T_INT && t[2].kind == T_INT) return ty(T_INT);
  return number(T_F64, 0);   /* an integer or a float loop, decided at run time */
}

static const char *unsupported(const KirFunc *f, const KirInsn *v, char *buf, size_t n) {
  switch (v->op) {
  case KIR_NEWTABLE: case KIR_SETLIST:
    return "table constructors are not supported in compiled code";
  case KIR_CLOSURE: return "closures (function literals) are not supported in compiled code";
  case KIR_TBC: return "to-be-closed variables are not supported in compiled code";
  case KIR_SETUPVAL: {
    const char *name = v->aux < f->proto->nup ? f->proto->up[v->aux].name : NULL;
    snprintf(buf, n, "cannot assign to upvalue '%s' in compiled code (upvalues are frozen "
             "constants)", name ? name : "?");
    return buf;
  }
  case KIR_SETFIELD:
    if (is_env(f, v->args[0]))
      snprintf(buf, n, "cannot assign to global '%s' in compiled code (globals are frozen "
               "constants)", v->k.str.s);
    else snprintf(buf, n, "cannot assign to a field ('%s') in compiled code", v->k.str.s);
    return buf;
  default: return NULL;
  }
}

static Type t_closure(KtySession *S, KtySpec *sp, KirInsn *v);
static Type late_literal(KtySession *S, KtySpec *P, int pc);
static int clos_captures(KtySession *S, KtySpec *sp, KirInsn *v, int di, Type *caps, int site);
static int timeless(Type t);

/* A function literal value (T_CLOSURE) that reaches a library function or a
** function value (pcall(function() ... end)), or a table through a
** parameter: its site is marked to escape (a real Lua closure from now on,
** upvidx -1 until its maker is made) and typed again. Returns 1 when t is
** such a literal (the caller then waits: T_UNKNOWN). */
static int escape_closure(KtySession *S, Type t) {
  if (t.kind != T_CLOSURE || S->kernel || t.ref < 0 || t.ref >= S->nclos) return 0;
  KtyClosure *D = &S->clos[t.ref];
  KtySpec *P = D->parent;
  KirInsn *site = (KirInsn *)D->site;
  if (P->upvref[site->id] == 0 && P->upvidx[site->id] != -1) {
    P->upvidx[site->id] = -1;
    push(P, site);
  }
  return 1;
}

/* The type (and constant, in *k) of value v from its operands. */
/* t.x = v, {...}, and the constructor's list part, on Lua values. Returns
** 1 with *r set when v is one of them on a Lua value, else 0 (the old
** refusals apply). */
static int t_luastore(KtySession *S, KtySpec *sp, KirInsn *v, Type *r) {
  *r = ty(T_NIL);
  if (v->op == KIR_NEWTABLE) {
    if (S->kernel) { *r = ty(T_UNKNOWN); if (S->strict) fail(S, sp, v, "a kernel cannot make a table (cuda.jit code uses arrays only)"); return 1; }
    *r = ty(T_LUA);
    r->sub = KTY_LUA_TABLE;
    return 1;
  }
  if (v->op != KIR_SETFIELD && v->op != KIR_SETLIST) return 0;
  Type o = sp->types[v->args[0]->id];
  if (o.kind == T_UNKNOWN) return 1;
  if (!islua(o)) return 0;
  /* {...}, {f()}: the values of '...' or of a compiled call, as many as
  ** this specialization knows there are ("Varargs"); a function value's,
  ** which are known only when it runs, are not */
  Type items[KTY_CTOR_MAX];
  KtyConst kitems[KTY_CTOR_MAX];
  if (v->op == KIR_SETLIST && (v->flags & KIR_F_OPEN) &&
      kty_calls_value(sp, v->args[v->nargs - 1]) && !kty_ctor_deferred(sp, v) &&
      !kty_ctor_grows(sp, v)) {
    if (S->strict)
      fail(S, sp, v, "a table constructor ending in a call of a function value or of a "
           "library function ({t.f()}, {table.unpack(t)}) is not supported in compiled code "
           "yet: store the results one by one (`local a, b = t.f(); local r = {a, b}`)");
    return 1;
  }
  int nitems = operands(S, sp, v, 1, items, kitems, KTY_CTOR_MAX);
  for (int i = 0; i < nitems; i++) {
    Type t = items[i];
    if (t.kind == T_UNKNOWN) continue;
    if (escape_closure(S, t)) { *r = ty(T_UNKNOWN); return 1; }
    if (!boxable(t, kitems[i])) {
      *r = ty(T_UNKNOWN);
      if (S->strict) {
        char tb[32];
        fail(S, sp, v, "a %s cannot be stored in a table in compiled code yet (%s)",
             kty_name(t, tb, sizeof tb), unboxable_why(t));
      }
      return 1;
    }
  }
  return 1;
}

/* Locals shared with a literal and assigned afterwards live in cells
** (ir_closure.c): a cell is a Lua value (a closure whose upvalue is the
** variable), what is read from it a Lua value like a read from a table,
** and what is written into it must have a Lua form (a literal written
** there escapes: a real Lua closure). */
static Type t_cell(KtySession *S, KtySpec *sp, KirInsn *v) {
  const char *name = v->op == KIR_NEWCELL ? v->name : v->args[0]->name;
  if (S->kernel)
    REFUSE(S, sp, v, "a kernel cannot share local '%s' with a function literal that captures "
           "it when either assigns it after the literal is made (cuda.jit code has no Lua "
           "state): pass the value as an argument and return the new value instead",
           name ? name : "?");
  Type c = v->op == KIR_NEWCELL ? ty(T_LUA) : sp->types[v->args[0]->id];
  if (c.kind == T_UNKNOWN) return v->op == KIR_SETCELL ? ty(T_NIL) : c;
  if (v->op == KIR_GETCELL) return ty(T_LUA);
  const KirInsn *x = v->args[v->op == KIR_SETCELL];
  Type t = sp->types[x->id];
  if (t.kind == T_UNKNOWN) return v->op == KIR_SETCELL ? ty(T_NIL) : t;
  if (escape_closure(S, t)) return ty(T_UNKNOWN);
  if (!boxable(t, sp->consts[x->id])) {
    char tb[32];
    REFUSE(S, sp, v, "a %s cannot be kept in a local that a function literal captures and that "
           "is assigned after the literal is made, in compiled code yet (only numbers, booleans, "
           "nil, strings, tables and functions): copy it into a new local instead",
           kty_name(t, tb, sizeof tb));
  }
  return v->op == KIR_SETCELL ? ty(T_NIL) : ty(T_LUA);
}

static Type eval(KtySession *S, KtySpec *sp, KirInsn *v, KtyConst *k) {
  char ub[200];
  if (v->op == KIR_NEWTABLE && ctor_shape_ok(v)) {
    int wait = 0;
    if (!ctor_lua_use(sp, v, &wait)) return wait ? ty(T_UNKNOWN) : t_ctor(S, sp, v);
    /* (given to a library function or a function value: a Lua table) */
  }
  if (v->op == KIR_SETLIST && v->args[0]->op == KIR_NEWTABLE && ctor_shape_ok(v->args[0]) &&
      sp->types[v->args[0]->id].kind != T_LUA)
    return t_ctor(S, sp, v);
  if (v->op == KIR_SETFIELD && !is_env(sp->ir, v->args[0])) {   /* r.x = v on a record */
    Type o = sp->types[v->args[0]->id];
    if (o.kind == T_UNKNOWN) return ty(T_NIL);
    if (o.kind == T_BUF && o.dtype == KJIT_RECORD && o.ndim == 0) return t_recsetfield(S, sp, v);
    if (index_raises(S, o, "__newindex")) {   /* x.f = v with x nil, false or a number */
      FROZEN_NIL(S, sp, v, v->args[0]);
      RAISE_NOT_TABLE(S, sp, v, o, "index");
    }
    TYPE_META_REFUSED(S, sp, v, o, "index", "__newindex");
  }
  if (v->op == KIR_CLOSURE) return t_closure(S, sp, v);
  Type lr;
  if (t_luastore(S, sp, v, &lr)) return lr;
  if (v->op == KIR_SETUPVAL) return t_setupval(S, sp, v);   /* written through */
  if (v->op == KIR_SETFIELD && is_env(sp->ir, v->args[0])) return t_setglobal(S, sp, v);
  if (v->op == KIR_NEWCELL || v->op == KIR_GETCELL || v->op == KIR_SETCELL) return t_cell(S, sp, v);
  const char *u = unsupported(sp->ir, v, ub, sizeof ub);
  if (u) REFUSE(S, sp, v, "%s", u);
  switch (v->op) {
  case KIR_PARAM:
    if (v->aux < sp->nargs && sp->args[v->aux].kind == T_STR && sp->args[v->aux].ref > 0) {
      *k = S->strs[sp->args[v->aux].ref - 1];   /* a constant string argument */
      return ty(T_STR);
    }
    if (v->aux < sp->nargs && sp->args[v->aux].kind == T_BUILTIN) {   /* apply(math.cos, x) */
      k->kind = T_BUILTIN;
      k->ref = sp->args[v->aux].ref;
      if (sp->args[v->aux].dtype == 1) k->v.i = 1;   /* the dtype object (dtype_obj_arg) */
    }
    return v->aux < sp->nargs ? sp->args[v->aux] : ty(T_NIL);
  case KIR_UNDEF: case KIR_NIL: k->kind = T_NIL; return ty(T_NIL);
  case KIR_TRUE: case KIR_FALSE:
    k->kind = T_BOOL; k->v.b = v->op == KIR_TRUE; return ty(T_BOOL);
  case KIR_INT: k->kind = T_INT; k->v.i = v->k.i; return weakty(T_INT, 1);
  case KIR_FLT: k->kind = T_F64; k->v.f = v->k.f; return weakty(T_F64, 1);
  case KIR_STR: k->kind = T_STR; k->str = v->k.str.s; k->len = v->k.str.len; return ty(T_STR);
  case KIR_GETUPVAL: return t_getupval(S, sp, v, k);
  case KIR_PHI: return t_phi(S, sp, v, k);
  case KIR_GETFIELD: return t_getfield(S, sp, v, k);
  case KIR_INDEX: return t_index(S, sp, v, k);
  case KIR_EQ: case KIR_LT: case KIR_LE: return t_compare(S, sp, v, k);
  case KIR_CALL: return t_call(S, sp, v, k);
  case KIR_CONCAT: return t_concat(S, sp, v, k);
  case KIR_VARARG: return vararg_const(S, sp, 0, k);
  case KIR_RESULT:
    if (v->args[0]->op == KIR_VARARG) return vararg_const(S, sp, v->aux, k);
    if (v->aux > 0 && assert_call(sp, v->args[0])) *k = list_const(S, sp, v->args[0], 1, v->aux);
    else if (v->aux > 0) *k = select_const(S, sp, v->args[0], v->aux);
    return result_of(sp, v->args[0], v->aux);
  case KIR_SETINDEX: return t_setindex(S, sp, v);
  case KIR_FORPREP: case KIR_FORLOOP: return t_for(S, sp, v);
  default:
    if (KIR_ISARITH(v->op)) return t_arith(S, sp, v, k);
    if (KIR_ISUNARY(v->op)) return t_unary(S, sp, v, k);
    return ty(T_NIL);
  }
}

/* The values one return gives: their count, or -1 while pending (or
** refused: a string, a table ... the error pass reports it). */
static int ret_values(KtySession *S, KtySpec *sp, KirInsn *v, Type *vals, KtyConst *ks) {
  int n = operands(S, sp, v, 0, vals, ks, KJIT_MAXRETS);
  char tb[32];
  for (int i = 0; i < n; i++) {
    Type t = vals[i];
    if (t.kind == T_CLOSURE) {
      if (S->strict)
        fail(S, sp, v, "cannot return a function literal from compiled code (the closure "
             "would escape: compiled closures are called where they are made, or passed to "
             "compiled functions; return its results instead, or keep this function "
             "interpreted)");
      return -1;
    }
    if ((t.kind == T_FUNC || t.kind == T_BUILTIN) && boxable(t, ks[i])) {
      vals[i] = ty(T_LUA);   /* a function known here, returned as the Lua value */
      memset(&ks[i], 0, sizeof ks[i]);
      continue;
    }
    if (t.kind == T_STR && ks[i].kind == T_STR && t.sub != T_NUMBER) {
      vals[i] = ty(T_LUA);   /* a constant string returned: a Lua value (boxed there) */
      vals[i].sub = KTY_LUA_STRING;
      memset(&ks[i], 0, sizeof ks[i]);
      continue;
    }
    if (t.kind == T_STR || t.kind == T_TABLE || t.kind == T_SHAPE || t.kind == T_BUILTIN ||
        t.kind == T_FUNC) {
      if (S->strict) fail(S, sp, v, "cannot return a %s from compiled code", kty_name(t, tb, sizeof tb));
      return -1;
    }
  }
  return n;
}

/* What a function's returns give at result #i: their join, or, where the
** returns give values of kinds that have no native type in common (nil
** on one path and a boolean on another, true and a number), a Lua value
** (T_LUA): each return boxes its value into the caller's result slot, as
** interpreted code would hold it (issue 29 item 4). Arrays still need one
** type. */
static Type ret_join(Join *J) {
  Type j = join_result(J);
  if (j.kind == T_CONFLICT && !J->conflict && J->other.kind == T_UNKNOWN) j = ty(T_LUA);
  return j;
}

/* A return, while types rise: its values join what the function returned
** so far (each return costs O(1), so that functions of thousands of
** returns type in linear time); exact_rets recomputes the join afterwards. */
/* Returns of different lengths (issue 29 item 4): the function returns
** as many values as its longest return (sp->nret), a shorter return nil
** in the others, and how many it gave at run time (sp->dyncount: the
** code generator's count out-parameter), which the dispatcher pushes and
** `return f(x)` passes on. Returns v's own count, which may vary when it
** ends in a call of such a function: then the values from fixed on may be
** nil (*fixed set; else -1). */
static int ret_open_dyn(KtySpec *sp, const KirInsn *v) {
  if (!(v->flags & KIR_F_OPEN)) return -1;
  const KirInsn *c = v->args[v->nargs - 1];
  KtySpec *cs = c->op == KIR_CALL ? sp->callees[c->id] : NULL;
  return (cs && cs->dyncount) || kty_callvalue_toret(sp, c) ? v->nargs - 1 : -1;
}

static void t_ret(KtySession *S, KtySpec *sp, KirInsn *v) {
  Type vals[KJIT_MAXRETS];
  KtyConst ks[KJIT_MAXRETS];
  KtyConst knil;
  memset(&knil, 0, sizeof knil);
  knil.kind = T_NIL;
  if (S->strict) return;   /* exact_rets checks the returns */
  int n = ret_values(S, sp, v, vals, ks);
  if (n < 0) return;
  int changed = 0, fixed = ret_open_dyn(sp, v);
  int least = fixed >= 0 ? fixed : n;
  if (sp->nretmin < 0 || least < sp->nretmin) { sp->nretmin = least; changed = 1; }
  if (sp->nret < 0) { sp->nret = n; changed = 1; }
  if (n != sp->nret || fixed >= 0) {   /* returns of different lengths */
    if (!sp->dyncount) { sp->dyncount = 1; changed = 1; }
    for (int i = sp->nret; i < n; i++) join_add(&sp->retjoin[i], ty(T_NIL), knil);
    if (n > sp->nret) { sp->nret = n; changed = 1; }
  }
  for (int i = 0; i < sp->nret; i++) {
    if (i < n) join_add(&sp->retjoin[i], vals[i], ks[i]);
    if (i >= n || (fixed >= 0 && i >= fixed)) join_add(&sp->retjoin[i], ty(T_NIL), knil);
    Type j = ret_join(&sp->retjoin[i]);
    j.weak = 0;
    if (j.kind != T_CONFLICT && !tyeq(j, sp->rets[i])) { sp->rets[i] = j; changed = 1; }
  }
  if (changed) notify_callers(sp);
}

/* The function's result count and types, the join of what every return
** that runs gives now: a value seen on the way to the fixpoint (a constant
** folded before its loop was typed) leaves nothing behind. Reports the
** returns' errors in the error pass. Returns whether the results changed
** (the callers are then queued). */
static int exact_rets(KtySession *S, KtySpec *sp) {
  Join J[KJIT_MAXRETS];
  Type vals[KJIT_MAXRETS];
  KtyConst ks[KJIT_MAXRETS];
  int nret = -1, dyn = 0, least = -1;
  KirFunc *f = sp->ir;
  KtyConst knil;
  memset(&knil, 0, sizeof knil);
  knil.kind = T_NIL;
  memset(J, 0, sizeof J);
  /* the longest return first (the others give nil past their length) */
  for (int b = 0; b < f->nblocks; b++) {
    KirInsn *r = f->blocks[b]->term;
    if (!sp->live[b] || r == NULL || r->op != KIR_RET) continue;
    int n = ret_values(S, sp, r, vals, ks);
    if (n < 0) continue;
    if (nret >= 0 && n != nret) dyn = 1;
    if (ret_open_dyn(sp, r) >= 0) dyn = 1;
    if (n > nret) nret = n;
    int fewest = ret_open_dyn(sp, r) >= 0 ? ret_open_dyn(sp, r) : n;
    if (least < 0 || fewest < least) least = fewest;
  }
  if (dyn && nret >= KJIT_MAXRETS) {   /* (the count's slot is the last flag's: jit.c) */
    for (int b = 0; b < f->nblocks; b++) {
      KirInsn *r = f->blocks[b]->term;
      if (S->strict && sp->live[b] && r && r->op == KIR_RET)
        fail(S, sp, r, "a function whose returns give different numbers of values returns "
             "at most %d in compiled code", KJIT_MAXRETS - 1);
    }
  }
  for (int b = 0; b < f->nblocks; b++) {
    KirInsn *r = f->blocks[b]->term;
    if (!sp->live[b] || r == NULL || r->op != KIR_RET) continue;
    int n = ret_values(S, sp, r, vals, ks);
    if (n < 0) continue;
    int fixed = ret_open_dyn(sp, r);
    for (int i = n; i < nret; i++) join_add(&J[i], ty(T_NIL), knil);
    for (int i = 0; i < n; i++) {
      if (fixed >= 0 && i >= fixed) join_add(&J[i], ty(T_NIL), knil);
      join_add(&J[i], vals[i], ks[i]);
      if (S->strict && ret_join(&J[i]).kind == T_CONFLICT) {
        char b1[32], b2[32];
        /* (an array among Lua values, nil and numbers: name the array) */
        Type one = J[i].first, two = J[i].second;
        if (J[i].other.kind != T_UNKNOWN && !tyeq(J[i].other, one) && !tyeq(J[i].other, two))
          two = J[i].other;
        fail(S, sp, r, "return value #%d is %s on one path and %s on another; compiled "
             "code needs one type", i + 1, kty_name(one, b1, sizeof b1),
             kty_name(two, b2, sizeof b2));
      }
    }
  }
  if (nret < 0) return 0;
  int changed = nret != sp->nret || dyn != sp->dyncount || least != sp->nretmin;
  sp->nret = nret;
  sp->dyncount = dyn;
  sp->nretmin = least;
  for (int i = 0; i < nret; i++) {
    sp->retjoin[i] = J[i];
    Type j = ret_join(&J[i]);
    j.weak = 0;
    if (j.kind == T_CONFLICT) continue;
    if (!tyeq(j, sp->rets[i])) { sp->rets[i] = j; changed = 1; }
  }
  if (changed) notify_callers(sp);
  return changed;
}

static void terminator(KtySession *S, KtySpec *sp, KirInsn *v) {
  KirBlock *b = v->block;
  switch (v->op) {
  case KIR_JMP: mark_edge(sp, b, 0); break;
  case KIR_BR: {
    KirInsn *c = v->args[0];
    Type t = sp->types[c->id];
    if (t.kind == T_STR || t.kind == T_TABLE || t.kind == T_SHAPE) {
      /* a string or a table is true, as in Lua (`arg and arg[1]`): only
      ** the first edge runs; the code generator's cg_truthy agrees */
      mark_edge(sp, b, 0);
      break;
    }
    int tr = truth(t, sp->consts[c->id]);
    if (tr == 1 || tr == 2) mark_edge(sp, b, 0);
    if (tr == 0 || tr == 2) mark_edge(sp, b, 1);
    break;
  }
  case KIR_RET: t_ret(S, sp, v); break;
  default: {   /* FORPREP, FORLOOP: a value too */
    Type t = t_for(S, sp, v);
    if (t.kind == T_UNKNOWN) return;
    if (!tyeq(t, sp->types[v->id])) { sp->types[v->id] = t; push_users(sp, v); }
    mark_edge(sp, b, 0);
    mark_edge(sp, b, 1);
    break;
  }
  }
}

static void visit(KtySession *S, KtySpec *sp, KirInsn *v) {
  if (!sp->live[v->block->id]) return;
  if (S->strict) sp->raises[v->id].msg = NULL;   /* the error pass records it anew */
  if (KIR_ISTERM(v->op)) { terminator(S, sp, v); return; }
  KtyConst k;
  memset(&k, 0, sizeof k);
  Type t = eval(S, sp, v, &k);
  KtyConst ok = sp->consts[v->id];
  /* a value known stays known (an operand may be refused until it rises) */
  if (t.kind == T_UNKNOWN && v->op != KIR_PHI) return;
  int samek = k.kind == T_UNKNOWN ? ok.kind == T_UNKNOWN : consteq(k, ok);
  if (tyeq(t, sp->types[v->id]) && samek) return;
  sp->types[v->id] = t;
  sp->consts[v->id] = k;
  push_users(sp, v);
}

/* ---- Sessions and specializations ---------------------------------------- */

void kty_open(KtySession *S, lua_State *L, Arena *A) {
  memset(S, 0, sizeof *S);
  S->L = L;
  S->A = A;
  lua_newtable(L);
  S->values_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

int kty_forget_sites(lua_State *L, const int *refs, int n) {
  /* (no Lua API call for none: kty_close after a compile's output is
  ** allocated, where lua_getfield's key string could raise a memory error
  ** past it: driver.c) */
  if (n == 0) return 0;
  int top = lua_gettop(L), sites = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, KTY_SITEOPTS_KEY) == LUA_TTABLE)
    for (int i = 0; i < n; i++) {
      sites += lua_rawgeti(L, -1, refs[i]) != LUA_TNIL;
      lua_pop(L, 1);
      lua_pushnil(L);
      lua_rawseti(L, -2, refs[i]);
    }
  lua_settop(L, top);
  return sites;
}

void kty_close(KtySession *S) {
  if (S->values_ref) luaL_unref(S->L, LUA_REGISTRYINDEX, S->values_ref);
  S->values_ref = 0;
  /* (a failed compile's: its trampolines' options go with them) */
  kty_forget_sites(S->L, S->refs, S->nrefs);
  for (int i = 0; i < S->nrefs; i++) luaL_unref(S->L, LUA_REGISTRYINDEX, S->refs[i]);
  S->nrefs = 0;
}

void kty_keep_ref(KtySession *S, int ref) {
  if (S->nrefs == S->caprefs) {
    int cap = S->caprefs ? 2 * S->caprefs : 16;
    int *r = ka_alloc(S->A, sizeof(int) * (size_t)cap);
    if (r == NULL) return;   /* (not recorded: kept as long as the state) */
    if (S->nrefs) memcpy(r, S->refs, sizeof(int) * (size_t)S->nrefs);
    S->refs = r;
    S->caprefs = cap;
  }
  S->refs[S->nrefs++] = ref;
}

int kty_ref(KtySession *S) {
  int ref = luaL_ref(S->L, LUA_REGISTRYINDEX);
  kty_keep_ref(S, ref);
  return ref;
}

int *kty_take_refs(KtySession *S, int *n) {
  *n = 0;
  if (S->nrefs == 0) return NULL;
  int *r = malloc(sizeof(int) * (size_t)S->nrefs);
  if (r == NULL) {   /* (forgotten: kept as long as the state, never released under the code) */
    S->nrefs = 0;
    return NULL;
  }
  memcpy(r, S->refs, sizeof(int) * (size_t)S->nrefs);
  *n = S->nrefs;
  S->nrefs = 0;
  return r;
}

static void *alloc(KtySession *S, size_t n) {
  void *p = ka_alloc(S->A, n ? n : 1);
  if (p == NULL) fail(S, NULL, NULL, "not enough memory");
  return p;
}

/* The specialization of the Lua function at fidx for these arguments,
** made (and queued) when new. from/at: the call, for messages. */
static KtySpec *new_spec(KtySession *S, KirFunc *ir, const void *ptr, int ref,
                         const char *chunkname, int np, const Type *pargs);

/* Refuses the function at fidx: located at the call (from, at), or at the
** function's header when it is the one being compiled (from NULL). */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void fail_function(KtySession *S, int fidx, KtySpec *from, const KirInsn *at,
                          const char *msg) {
  if (from) fail(S, from, at, "%s", msg);
  lua_Debug ar;
  lua_pushvalue(S->L, fidx);
  lua_getinfo(S->L, ">S", &ar);
  snprintf(S->err, sizeof S->err, "%s:%d: %s", ar.short_src, ar.linedefined, msg);
  longjmp(*S->jb, 1);
}

static KtySpec *get_spec(KtySession *S, int fidx, int nargs, const Type *args,
                         KtySpec *from, const KirInsn *at) {
  lua_State *L = S->L;
  fidx = lua_absindex(L, fidx);
  const void *ptr = lua_topointer(L, fidx);
  KirFunc *ir = NULL;
  for (int i = 0; i < S->nspecs && !ir; i++)
    if (S->specs[i]->luaptr == ptr) ir = S->specs[i]->ir;
  if (ir == NULL) {
    char e[256];
    KbcChunk *c = kbc_load(L, fidx, S->A, e, sizeof e);
    if (c) ir = kir_build(S->A, c->main, e, sizeof e);
    if (ir == NULL) fail_function(S, fidx, from, at, e);
  }
  Type pargs[KJIT_MAXARGS];
  int np = ir->proto->numparams;
  if (np > KJIT_MAXARGS) {
    char e[96];
    snprintf(e, sizeof e, "cannot compile a function with more than %d parameters", KJIT_MAXARGS);
    fail_function(S, fidx, from, at, e);
  }
  for (int i = 0; i < np; i++) pargs[i] = i < nargs ? args[i] : ty(T_NIL);
  /* a vararg function: the values of '...' after the parameters */
  int nvar = ir->proto->is_vararg && nargs > np ? nargs - np : 0;
  if (nvar > 0) {
    if (nargs > KJIT_MAXARGS) fail(S, from, at, "too many values passed to '...' (at most %d "
                                   "arguments in all)", KJIT_MAXARGS);
    for (int i = np; i < nargs; i++) pargs[i] = args[i];
  }
  for (int i = 0; i < S->nspecs; i++) {
    KtySpec *sp = S->specs[i];
    if (sp->luaptr != ptr || sp->clos || sp->nvar != nvar) continue;
    int same = 1;
    for (int j = 0; j < np + nvar && same; j++) same = tyeq(sp->args[j], pargs[j]);
    if (same) return sp;
  }
  /* (the old pipeline's limit too: a chain of 250 callees compiles) */
  if (S->nspecs >= KTY_MAXSPECS)
    fail(S, from, at, "too many specializations in one compile (more than %d functions or "
         "argument-type combinations reached from the compiled function: a call chain this "
         "deep, or recursion whose argument types keep changing; shorten the chain or call "
         "with fewer argument types)", KTY_MAXSPECS);
  lua_Debug ar;
  lua_pushvalue(L, fidx);
  lua_getinfo(L, ">S", &ar);
  KtySpec *sp = new_spec(S, ir, ptr, kty_keep_value(S, fidx),
                         ka_strndup(S->A, ar.short_src, strlen(ar.short_src)), np + nvar, pargs);
  sp->nparams = np;
  sp->vararg = ir->proto->is_vararg;
  sp->nvar = nvar;
  return sp;
}

/* A new specialization (queued) of ir for these np argument types. */
static KtySpec *new_spec(KtySession *S, KirFunc *ir, const void *ptr, int ref,
                         const char *chunkname, int np, const Type *pargs) {
  KtySpec *sp = alloc(S, sizeof *sp);
  sp->index = S->nspecs;
  sp->luaptr = ptr;
  sp->ref = ref;
  sp->chunkname = chunkname;
  sp->ir = ir;
  sp->nargs = np;
  sp->nparams = np;
  memcpy(sp->args, pargs, sizeof(Type) * (size_t)np);
  int n = ir->ninsns;
  sp->types = alloc(S, sizeof(Type) * (size_t)n);
  sp->consts = alloc(S, sizeof(KtyConst) * (size_t)n);
  sp->callees = alloc(S, sizeof(KtySpec *) * (size_t)n);
  sp->raises = alloc(S, sizeof(KtyRaise) * (size_t)n);
  sp->liveref = alloc(S, sizeof(int) * (size_t)n);
  sp->upvref = alloc(S, sizeof(int) * (size_t)n);
  sp->upvidx = alloc(S, sizeof(int) * (size_t)n);
  sp->varop = alloc(S, sizeof(int) * (size_t)n);
  sp->direct = alloc(S, (size_t)n);
  sp->queued = alloc(S, (size_t)n);
  sp->work = alloc(S, sizeof(KirInsn *) * (size_t)n);
  sp->live = alloc(S, (size_t)ir->nblocks);
  sp->edges = alloc(S, (size_t)ir->nblocks);
  sp->nret = -1;
  sp->nretmin = -1;
  sp->retjoin = alloc(S, sizeof(Join) * KJIT_MAXRETS);
  if (S->nspecs == S->capspecs) {
    int cap = S->capspecs ? S->capspecs * 2 : 8;
    KtySpec **ns = alloc(S, sizeof *ns * (size_t)cap);
    if (S->nspecs) memcpy(ns, S->specs, sizeof *ns * (size_t)S->nspecs);
    S->specs = ns;
    S->capspecs = cap;
  }
  S->specs[S->nspecs++] = sp;
  sp->live[0] = 1;
  push_block(sp, ir->blocks[0], 0);
  return sp;
}

/* ---- Function literals (design: ir_closure.c) ---------------------------- */

int kty_clos_frozen_upval(KtySession *S, const KtySpec *sp, int u) {
  const KtyClosure *D = &S->clos[sp->clos - 1];
  const KbcUpval *up = &D->ir->proto->up[u];
  if (up->instack) return -1;
  if (D->parent->clos == 0) return up->idx;   /* the Lua function's own upvalue */
  return kty_clos_frozen_upval(S, D->parent, up->idx);
}

/* The specialization whose function value was dumped for sp's code (the
** root of sp's chain of literals). */
static KtySpec *clos_root(KtySession *S, KtySpec *sp) {
  while (sp->clos) sp = S->clos[sp->clos - 1].parent;
  return sp;
}

/* How a boxed literal (site v of sp) gets its upvalue u: 0 its value
** (pushed by compiled code), 0xff itself (`local function f`), k > 0 the
** root function's real upvalue k (joined). The same rule for the code
** generator (cg_closure.c). */
int kty_box_how(KtySession *S, const KtySpec *sp, const KirInsn *v, int u) {
  const KbcProto *p = sp->ir->proto, *cp = p->p[v->aux];
  const KbcUpval *up = &cp->up[u];
  if (kcl_cell_upvalue(cp, u)) return 0xfe;   /* a cell: joined (ir_closure.c) */
  if (up->instack)
    return up->idx == KBC_A(p->code[v->pc]) || kcl_late_literal(p, v->pc, u) == v->pc ? 0xff : 0;
  if (sp->clos == 0) return up->idx + 1;
  int fa = kty_clos_frozen_upval(S, sp, up->idx);
  return fa >= 0 ? fa + 1 : 0;
}

/* Captured value a of a literal that escapes is a kjit array that is an
** argument of the function kjit.jit was given, called only by the
** dispatcher (a root specialization no compiled code calls): the closure
** captures that argument's own userdata, found on the dispatcher's stack
** when the closure is made (cg_closure.c, runtime/luaclosure.c
** kjit_lc_mkpush_arg). An array made in compiled code, or one a compiled
** caller passes, has no userdata yet: still refused. */
int kty_capture_argarray(const KtySpec *sp, const KirInsn *a) {
  Type t = sp->types[a->id];
  return t.kind == T_BUF && a->op == KIR_PARAM && a->aux < sp->nparams && sp->root &&
         sp->clos == 0 && sp->callers == NULL;
}

/* The values literal site v of sp captures, checked for its real Lua
** closure (t_closure_boxed): CAP_OK when each has a Lua form; CAP_WAIT
** while the type of one is unknown or, with escape, when one is a literal
** that is made to escape now (typed again then); CAP_LATE (a local
** assigned after the literal) or CAP_UNBOXABLE (a value with no Lua form),
** the upvalue in *bad and its type in *bt. Without escape (whether a
** literal may be left to the interpreter: left_to_interpreter), a literal
** it captures is asked the same question instead, to a few levels. */
enum { CAP_OK, CAP_WAIT, CAP_LATE, CAP_UNBOXABLE };
static int boxed_captures(KtySession *S, KtySpec *sp, const KirInsn *v, int escape, int depth,
                          int *bad, Type *bt) {
  const KbcProto *p = sp->ir->proto, *cp = p->p[v->aux];
  for (int u = 0, k = 0; u < cp->nup; u++) {
    const KbcUpval *up = &cp->up[u];
    Type t;
    KtyConst kc = { 0 };
    *bad = u;
    if (up->instack) {
      const KirInsn *a = v->args[k++];
      if (kty_box_how(S, sp, v, u) == 0xff) continue;
      if (kcl_late_literal(p, v->pc, u) >= 0) return CAP_LATE;
      t = sp->types[a->id];
      kc = sp->consts[a->id];
    } else {
      if (kty_box_how(S, sp, v, u) > 0) continue;
      t = sp->args[sp->nparams + up->idx];
    }
    *bt = t;
    if (t.kind == T_UNKNOWN) return CAP_WAIT;
    if (t.kind == T_CLOSURE && !S->kernel && t.ref >= 0 && t.ref < S->nclos) {
      /* a literal it captures escapes too */
      if (escape) { escape_closure(S, t); return CAP_WAIT; }
      const KtyClosure *D = &S->clos[t.ref];
      int r = depth < 4 ? boxed_captures(S, D->parent, D->site, 0, depth + 1, bad, bt) : CAP_WAIT;
      if (r != CAP_OK) return r;
      continue;
    }
    if (up->instack && kty_capture_argarray(sp, v->args[k - 1])) continue;
    if (!boxable(t, kc)) return CAP_UNBOXABLE;
  }
  return CAP_OK;
}

/* May literal site v of sp, one to leave to the interpreter
** (ir_escape.c kcl_left_to_interpreter), be made a real Lua closure: has
** every value it captures a Lua form? (Else it compiles with its maker,
** as any literal.) */
static int kept_literal(const KtySession *S, const KirInsn *v) {
  for (int i = 0; i < S->nkept; i++) if (S->kept[i] == v) return 1;
  return 0;
}

static int left_to_interpreter(KtySession *S, KtySpec *sp, const KirInsn *v) {
  int bad;
  Type bt;
  return !S->kernel && kcl_left_to_interpreter(sp->ir->proto, v) && !kept_literal(S, v) &&
         boxed_captures(S, sp, v, 0, 0, &bad, &bt) == CAP_OK;
}

/* Call v of sp passes a value with no Lua form (a shape, a kjit.struct)
** to fn: where fn is a literal left to the interpreter (a real Lua
** closure only by that choice, not because it escapes), it compiles with
** its maker after all, as any literal, and the call with it (before the
** rule, such a call compiled; with it, it was refused). Its site is typed
** again (T_CLOSURE from now on); returns 1, the caller then waits
** (T_UNKNOWN). 0: fn is no such literal. */
static int keep_literal(KtySession *S, KtySpec *sp, KirInsn *fn) {
  if (fn->op != KIR_CLOSURE || sp->upvidx[fn->id] == -1 || kept_literal(S, fn) ||
      !kcl_left_to_interpreter(sp->ir->proto, fn) || kcl_literal_escapes(S->A, sp->ir->proto, fn))
    return 0;
  if (S->nkept == S->capkept) {
    int cap = S->capkept ? 2 * S->capkept : 8;
    const KirInsn **k = alloc(S, sizeof *k * (size_t)cap);
    if (S->nkept) memcpy(k, S->kept, sizeof *k * (size_t)S->nkept);
    S->kept = k;
    S->capkept = cap;
  }
  S->kept[S->nkept++] = fn;
  sp->upvref[fn->id] = 0;   /* (its maker's references: released with the code, kty_ref) */
  sp->upvidx[fn->id] = 0;
  push(sp, fn);
  return 1;
}

/* A literal that escapes (ir_escape.c): a real Lua closure, made where
** the literal is made by its maker (runtime/luaclosure.c: reference in
** sp->upvref, the root function's in sp->upvidx for the joins). */
static Type t_closure_boxed(KtySession *S, KtySpec *sp, KirInsn *v) {
  const KbcProto *p = sp->ir->proto, *cp = p->p[v->aux];
  char tb[32];
  if (cp->nup > 250) REFUSE(S, sp, v, "cannot compile a function literal with so many upvalues");
  int bad;
  Type t;
  switch (boxed_captures(S, sp, v, 1, 0, &bad, &t)) {
  case CAP_WAIT: return ty(T_UNKNOWN);
  case CAP_LATE: {
    const char *name = cp->up[bad].name ? cp->up[bad].name : "?";
    REFUSE(S, sp, v, "a function literal stored in a table or returned cannot capture "
           "'%s', assigned after it, in compiled code yet: define '%s' first", name, name);
  }
  case CAP_UNBOXABLE: {
    const char *name = cp->up[bad].name ? cp->up[bad].name : "?";
    REFUSE(S, sp, v, "a function literal stored in a table or returned cannot capture '%s', "
           "a %s, in compiled code yet (only numbers, booleans, nil, strings, tables and "
           "functions): pass it to the function as an argument", name,
           kty_name(t, tb, sizeof tb));
  }
  default: break;
  }
  if (sp->upvref[v->id] == 0) {
    /* the path from the dumped function's prototype to the literal's */
    KtySpec *R = clos_root(S, sp);
    int path[64], depth = 0;
    const KbcProto *x = cp;
    while (x->parent && depth < 64) {
      const KbcProto *pp = x->parent;
      int i = 0;
      while (i < pp->np && pp->p[i] != x) i++;
      path[depth++] = i;
      x = pp;
    }
    if (x != R->ir->proto || depth == 0 || depth >= 64)
      fail(S, sp, v, "internal error: a function literal outside its function's dump");
    for (int i = 0; i < depth / 2; i++) {
      int t = path[i]; path[i] = path[depth - 1 - i]; path[depth - 1 - i] = t;
    }
    char err[200];
    push_value(S, R->ref);
    int ref = kjit_lc_maker(S->L, path, depth, err, sizeof err);
    if (ref == 0) { lua_pop(S->L, 1); fail(S, sp, v, "%s", err); }
    kty_keep_ref(S, ref);
    sp->upvidx[v->id] = kty_ref(S);   /* the root closure */
    sp->upvref[v->id] = ref;
  }
  return ty(T_LUA);
}

/* A KIR_CLOSURE: the compile-time value naming this site of sp, when the
** locals it captures keep one value (ir_closure.c). */
/* The descriptor of the literal sp makes at site v (made the first time). */
static int clos_desc(KtySession *S, KtySpec *sp, KirInsn *v) {
  int di = -1;
  for (int i = 0; i < S->nclos && di < 0; i++)
    if (S->clos[i].parent == sp && S->clos[i].site == v) di = i;
  if (di < 0) {
    const KbcProto *cp = sp->ir->proto->p[v->aux];
    KirFunc *ir = NULL;
    for (int i = 0; i < S->nclos && !ir; i++)
      if (S->clos[i].ir->proto == cp) ir = S->clos[i].ir;
    if (ir == NULL) {
      char e[256];
      ir = kir_build(S->A, cp, e, sizeof e);
      if (ir == NULL) fail(S, sp, v, "%s", e);
    }
    if (S->nclos == S->capclos) {
      int cap = S->capclos ? S->capclos * 2 : 8;
      KtyClosure *nc = alloc(S, sizeof *nc * (size_t)cap);
      if (S->nclos) memcpy(nc, S->clos, sizeof *nc * (size_t)S->nclos);
      S->clos = nc;
      S->capclos = cap;
    }
    di = S->nclos++;
    S->clos[di].parent = sp;
    S->clos[di].site = v;
    S->clos[di].ir = ir;
  }
  return di;
}

/* Call v of a Lua value that is an escaping literal known when compiling
** (ir_closure.c's kcl_direct_call): the literal's descriptor, else -1.
** Either the literal made by sp itself (its captured values are read
** where it is made), or one that the literal sp is captured, as its
** maker made it, whose own captures have no run-time parts (functions and
** constants known here: nothing to pass). The closure's upvalues are those
** values (ir_closure.c), so its compiled code computes what it does. */
static int direct_literal(KtySession *S, KtySpec *sp, KirInsn *v) {
  KirInsn *fn = v->args[0];
  if (v->flags & KIR_F_TFOR) return -1;
  if (fn->op == KIR_CLOSURE) {
    if (!kcl_direct_call(sp->ir->proto, v)) return -1;
    /* (a Lua value captured from inside a loop: clos_captures refuses it) */
    for (int j = 0; j < fn->nargs; j++)
      if (sp->types[fn->args[j]->id].kind == T_LUA && fn->args[j]->block->loop != NULL) return -1;
    return clos_desc(S, sp, fn);
  }
  if (fn->op != KIR_GETUPVAL || sp->clos == 0) return -1;
  KtyClosure *D = &S->clos[sp->clos - 1];
  KtySpec *P = D->parent;
  const KbcProto *lp = sp->ir->proto, *pp = P->ir->proto;
  if (fn->aux >= lp->nup || !lp->up[fn->aux].instack || kcl_cell_upvalue(lp, fn->aux)) return -1;
  int k = 0;
  for (int u = 0; u < fn->aux; u++) k += lp->up[u].instack != 0;
  KirInsn *x = D->site->args[k];
  if (x->op != KIR_CLOSURE || P->types[x->id].kind != T_LUA) return -1;
  const KbcProto *xp = pp->p[x->aux];
  if (kcl_left_to_interpreter(pp, x)) return -1;   /* called through its value */
  for (int u = 0, j = 0; u < xp->nup; u++) {
    const KbcUpval *up = &xp->up[u];
    Type t;
    if (up->instack) {
      if (up->idx == KBC_A(pp->code[x->pc]) || kcl_late_literal(pp, x->pc, u) >= 0) return -1;
      t = P->types[x->args[j++]->id];
    } else if (P->clos == 0 || kty_clos_frozen_upval(S, P, up->idx) >= 0) {
      continue;   /* the root function's upvalue: read as the literal reads it */
    } else {
      t = P->args[P->nparams + up->idx];
    }
    if (!timeless(t) || t.kind == T_CLOSURE) return -1;
  }
  return clos_desc(S, P, x);
}

static Type t_closure(KtySession *S, KtySpec *sp, KirInsn *v) {
  char buf[400];
  const char *why = kcl_capture_problem(sp->ir->proto, v->pc, buf, sizeof buf);
  if (why) REFUSE(S, sp, v, "%s", why);
  if (!S->kernel && (sp->upvref[v->id] != 0 || sp->upvidx[v->id] == -1 ||
                     kcl_literal_escapes(S->A, sp->ir->proto, v) ||
                     left_to_interpreter(S, sp, v))) {
    push_users(sp, v);   /* (its direct calls: kcl_direct_call) */
    return t_closure_boxed(S, sp, v);
  }
  int di = clos_desc(S, sp, v);
  /* a captured value's type rose: the calls re-type */
  push_users(sp, v);
  Type caps[KJIT_MAXARGS];
  const KbcProto *cp = S->clos[di].ir->proto;
  if (cp->nup > KJIT_MAXARGS)
    REFUSE(S, sp, v, "cannot compile a function literal with more than %d upvalues", KJIT_MAXARGS);
  Type t = ty(T_CLOSURE);
  t.ref = di;
  if (clos_captures(S, sp, v, di, caps, 1) < 0) return ty(T_UNKNOWN);
  for (int u = 0; u < cp->nup; u++)
    if (!kty_clos_self(S, di, u) && !timeless(caps[u])) t.sub = 1;
  if (!tyeq(t, sp->types[v->id])) {
    /* a literal made before this one may capture it (mutual recursion,
    ** kcl_late_literal): those re-type */
    KirFunc *f = sp->ir;
    for (int b = 0; b < f->nblocks; b++)
      for (int i = 0; i < f->blocks[b]->ninsns; i++) {
        KirInsn *x = f->blocks[b]->insns[i];
        if (x->op == KIR_CLOSURE && x != v && x->pc < v->pc) push_users(sp, x);
      }
  }
  return t;
}

/* The type of the function literal P makes at pc (unknown until typed). */
static Type late_literal(KtySession *S, KtySpec *P, int pc) {
  (void)S;
  KirFunc *f = P->ir;
  for (int b = 0; b < f->nblocks; b++)
    for (int i = 0; i < f->blocks[b]->ninsns; i++) {
      KirInsn *x = f->blocks[b]->insns[i];
      if (x->op == KIR_CLOSURE && x->pc == pc) return P->types[x->id];
    }
  return ty(T_UNKNOWN);
}

/* Has a value of type t no run-time parts (a compile-time value)? A
** literal that captures values with run-time parts (sub 1) is the address
** of those values, kept in its maker's frame (the code generator's
** "environment"): a literal never outlives the call that made it. */
static int timeless(Type t) {
  return t.kind == T_NIL || t.kind == T_FUNC || t.kind == T_TABLE || t.kind == T_BUILTIN ||
         t.kind == T_EXTERN ||
         (t.kind == T_CLOSURE && !t.sub);
}

int kty_clos_self(const KtySession *S, int di, int u) {
  const KtyClosure *D = &S->clos[di];
  const KbcUpval *up = &D->ir->proto->up[u];
  const KbcProto *p = D->parent->ir->proto;
  if (!up->instack || kcl_cell_upvalue(D->ir->proto, u)) return 0;
  /* `local function f`, or `local f; function f() ... end` (made in a
  ** temporary, then moved into f) */
  return up->idx == KBC_A(p->code[D->site->pc]) || kcl_late_literal(p, D->site->pc, u) == D->site->pc;
}

/* The types of what literal di captures, in its upvalues' order (the
** parameters its specializations take after their own): -1 while one is
** unknown, or refused (from sp's call v, for messages). A literal itself
** (self) has sub 1 when some other capture has run-time parts. site: for
** the literal's own type, literals assigned after it (mutual recursion,
** never in its environment) left out, so that two such literals do not
** wait for each other. */
/* A Lua value (a table, a cell: ir_closure.c) made in a loop and captured
** by a literal made in the same iteration (the literal inside the value's
** innermost loop): each iteration makes both again, and a literal that
** compiled code calls is never carried to a later iteration (one that
** reaches a phi escapes: a real Lua closure, holding its own copies), so
** the value's slot holds the literal's value whenever the literal runs. */
static int made_in_iteration(const KirInsn *a, const KirInsn *site) {
  for (const KirLoop *l = site->block->loop; l; l = l->parent)
    if (l == a->block->loop) return 1;
  return 0;
}

static int clos_captures(KtySession *S, KtySpec *sp, KirInsn *v, int di, Type *caps, int site) {
  KtyClosure *D = &S->clos[di];
  const KbcProto *cp = D->ir->proto;
  KtySpec *P = D->parent;
  char tb[32];
  int env = 0;
  for (int u = 0, k = 0; u < cp->nup; u++) {
    const KbcUpval *up = &cp->up[u];
    Type t;
    if (up->instack) {
      const KirInsn *a = D->site->args[k++];
      int late = kcl_late_literal(P->ir->proto, D->site->pc, u);
      if (kty_clos_self(S, di, u)) { t = ty(T_CLOSURE); t.ref = di; }   /* `local function f` */
      else if (late >= 0 && site) t = ty(T_NIL);
      else if (late >= 0) {   /* mutual recursion */
        t = late_literal(S, P, late);
        if (t.kind == T_CLOSURE && t.sub) {
          if (S->strict)
            fail(S, sp, v, "cannot compile this call: the function literal (line %d) calls "
                 "'%s', a function literal made after it that captures values of the "
                 "function that made both (not supported yet: pass them as arguments)",
                 cp->linedefined, up->name ? up->name : "?");
          return -1;
        }
      }
      else {
        t = P->types[a->id];
        /* a Lua value is passed as its slot in the maker's frame, which
        ** holds it as long as the literal lives when nothing writes the
        ** slot again: a value made outside every loop of the maker */
        if (t.kind == T_LUA && a->block->loop != NULL && !site &&
            !made_in_iteration(a, D->site)) {   /* (checked at its calls: a literal that
                                                   escapes never is) */
          if (S->strict)
            fail(S, sp, v, "cannot compile this call: the function literal (line %d) captures "
                 "'%s', a table or Lua value made inside a loop (not supported yet in compiled "
                 "closures: pass it as an argument)", cp->linedefined, up->name ? up->name : "?");
          return -1;
        }
      }
    } else if (P->clos == 0 || kty_clos_frozen_upval(S, P, up->idx) >= 0) {
      t = ty(T_NIL);   /* frozen: the literal reads the root function's upvalue */
    } else {
      t = P->args[P->nparams + up->idx];
    }
    if (t.kind == T_UNKNOWN) return -1;
    t.weak = 0;
    if (t.kind == T_STR || t.kind == T_SHAPE || t.kind == T_CONFLICT) {
      if (S->strict)
        fail(S, sp, v, "cannot compile this call: the function literal (line %d) captures "
             "'%s', a %s (compiled closures capture numbers, booleans, arrays and "
             "functions: pass it as an argument)", cp->linedefined,
             up->name ? up->name : "?", kty_name(t, tb, sizeof tb));
      return -1;
    }
    if (!kty_clos_self(S, di, u) && !timeless(t)) env = 1;
    caps[u] = t;
  }
  for (int u = 0; u < cp->nup; u++)
    if (kty_clos_self(S, di, u)) caps[u].sub = (uint8_t)env;
  return cp->nup;
}

/* A call of function literal di from sp: its specialization for the
** argument types and the types of what it captures (passed after them). */
static Type t_call_closure(KtySession *S, KtySpec *sp, KirInsn *v, int di, Type *args, int n) {
  KtyClosure *D = &S->clos[di];
  const KbcProto *cp = D->ir->proto;
  KtySpec *P = D->parent;
  char tb[32];
  int np = cp->numparams;
  Type all[KJIT_MAXARGS];
  if (np + cp->nup > KJIT_MAXARGS)
    REFUSE(S, sp, v, "cannot compile a function literal with more than %d parameters and "
           "upvalues", KJIT_MAXARGS);
  for (int i = 0; i < n; i++) {
    if (args[i].kind == T_UNKNOWN) return args[i];
    if ((args[i].kind == T_STR && args[i].ref == 0) || args[i].kind == T_TABLE ||
        args[i].kind == T_SHAPE || args[i].kind == T_CONFLICT ||
        /* a dtype object (dtype_obj_arg) or a library function: specialized on it */
        (args[i].kind == T_BUILTIN && args[i].dtype != 1 &&
         !(args[i].sub == 0 && kty_builtin_libname(args[i].ref))))
      REFUSE(S, sp, v, "cannot pass a %s to a compiled function (argument #%d): %s",
             kty_name(args[i], tb, sizeof tb), i + 1, pass_hint(args[i]));
  }
  for (int i = 0; i < np; i++) { all[i] = i < n ? args[i] : ty(T_NIL); all[i].weak = 0; }
  if (clos_captures(S, sp, v, di, all + np, 0) < 0) return ty(T_UNKNOWN);
  /* a vararg literal: the values of '...' after its captures ("Varargs") */
  int nvar = cp->is_vararg && n > np ? n - np : 0;
  if (np + cp->nup + nvar > KJIT_MAXARGS)
    REFUSE(S, sp, v, "too many values passed to '...' (at most %d arguments and upvalues in "
           "all)", KJIT_MAXARGS);
  for (int i = 0; i < nvar; i++) { all[np + cp->nup + i] = args[np + i]; all[np + cp->nup + i].weak = 0; }
  /* called where it is made: its captured values are read there */
  if (sp == P && !kir_dominates(D->site->block, v->block))
    REFUSE(S, sp, v, "cannot compile this call: the function literal it calls (line %d) "
           "is not always made before it", cp->linedefined);
  int na = np + cp->nup + nvar;
  KtySpec *c = NULL;
  for (int i = 0; i < S->nspecs && !c; i++) {
    KtySpec *o = S->specs[i];
    if (o->clos != di + 1 || o->nvar != nvar) continue;
    int same = 1;
    for (int j = 0; j < na && same; j++) same = tyeq(o->args[j], all[j]);
    if (same) c = o;
  }
  if (c == NULL) {
    if (S->nspecs >= KTY_MAXSPECS)
      fail(S, sp, v, "too many specializations in one compile (more than %d)", KTY_MAXSPECS);
    c = new_spec(S, D->ir, cp, P->ref, P->chunkname, na, all);
    c->nparams = np;
    c->clos = di + 1;
    c->vararg = cp->is_vararg;
    c->nvar = nvar;
  }
  return call_of(S, sp, v, c);
}

int kty_clos_captures(KtySession *S, int di, Type *caps) {
  KtyClosure *D = &S->clos[di];
  return clos_captures(S, D->parent, (KirInsn *)D->site, di, caps, 0);
}

/* Runs every worklist dry; the stack of a spec's worklist is LIFO, which
** reaches the same fixpoint (the order changes only the work done). */
static void settle(KtySession *S) {
  long steps = 0, limit = 0;
  for (int i = 0; i < S->nspecs; i++) limit += S->specs[i]->ir->ninsns;
  limit = limit * 200 + 100000;
  for (int again = 1; again; ) {
    again = 0;
    for (int i = 0; i < S->nspecs; i++) {
      KtySpec *sp = S->specs[i];
      while (sp->nwork > 0) {
        KirInsn *v = sp->work[--sp->nwork];
        sp->queued[v->id] = 0;
        visit(S, sp, v);
        again = 1;
        if (++steps > limit) fail(S, sp, v, "type inference did not converge");
      }
    }
  }
}

/* Marks the specializations the roots run: a call typed on the way to the
** fixpoint with a narrower argument type may have made one that no call
** uses at the end; it is neither checked nor printed. */
static void mark_used(KtySpec *sp) {
  if (sp->used) return;
  sp->used = 1;
  KirFunc *f = sp->ir;
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns; i++)
      if (sp->callees[blk->insns[i]->id]) mark_used(sp->callees[blk->insns[i]->id]);
  }
}

static void mark_all(KtySession *S) {
  for (int i = 0; i < S->nspecs; i++) S->specs[i]->used = 0;
  for (int i = 0; i < S->nspecs; i++) if (S->specs[i]->root) mark_used(S->specs[i]);
}

/* ---- One specialization for a table and for a value ------------------------
**
** A function called with a table it is known to be (a constructor's
** result) in one place and with a Lua value in another (binary-trees'
** ItemCheck: its caller passes the tree it made, its recursion passes
** tree[2]) got a specialization for each, the same code twice for the
** code generator (a quarter of binary-trees' compile). Once typing is
** done, a call to a specialization whose arguments differ from those of
** another, used one of the same function only where it knows a Lua
** value's kind (table, string) and the other does not, and which returns
** the same types, calls the other: it does what the interpreter does
** with any value, so with this one too (the value is passed the same way,
** a slot: cg_convert). The narrower one is then used by no call, and is
** neither printed nor compiled. Roots (the compiled functions themselves)
** stay. */
static int wider_spec(const KtySpec *w, const KtySpec *n) {
  if (w == n || w->luaptr != n->luaptr || w->clos != n->clos || w->nvar != n->nvar ||
      w->nargs != n->nargs || w->nret != n->nret)
    return 0;
  int wider = 0;
  for (int j = 0; j < n->nargs; j++) {
    Type a = n->args[j];
    if (a.kind == T_LUA && w->args[j].kind == T_LUA && a.sub != 0 && w->args[j].sub == 0) {
      a.sub = 0;
      wider = 1;
    }
    if (!tyeq(a, w->args[j])) return 0;
  }
  for (int r = 0; r < n->nret; r++)
    if (!tyeq(n->rets[r], w->rets[r])) return 0;
  return wider;
}

/* Returns whether a call was redirected (mark_all then runs again). */
static int merge_narrow_specs(KtySession *S) {
  int merged = 0;
  for (int i = 0; i < S->nspecs; i++) {
    KtySpec *n = S->specs[i], *w = NULL;
    if (!n->used || n->root) continue;
    for (int j = 0; j < S->nspecs && w == NULL; j++)
      if (S->specs[j]->used && wider_spec(S->specs[j], n)) w = S->specs[j];
    if (w == NULL) continue;
    for (int k = 0; k < S->nspecs; k++) {
      KtySpec *c = S->specs[k];
      for (int id = 0; id < c->ir->ninsns; id++)
        if (c->callees[id] == n) c->callees[id] = w;
    }
    merged = 1;
  }
  return merged;
}

/* The error pass: every value that runs, in program order. */
static void check(KtySession *S, KtySpec *sp) {
  KirFunc *f = sp->ir;
  for (int j = 0; j < f->nblocks; j++) {
    KirBlock *b = f->blocks[j];
    if (!sp->live[b->id]) continue;
    for (int i = 0; i < b->nphis; i++) visit(S, sp, b->phis[i]);
    for (int i = 0; i < b->ninsns; i++) visit(S, sp, b->insns[i]);
    if (b->term) visit(S, sp, b->term);
  }
  exact_rets(S, sp);
}

KtySpec *kty_spec(KtySession *S, int fidx, int nargs, const Type *args) {
  jmp_buf jb, *saved = S->jb;
  int top = lua_gettop(S->L);
  fidx = lua_absindex(S->L, fidx);
  KtySpec *volatile sp = NULL;
  volatile int nold = S->nspecs;
  S->jb = &jb;
  S->err[0] = '\0';
  kernel_rules = S->kernel;
  if (setjmp(jb) == 0) {
    if (nargs > KJIT_MAXARGS) fail(S, NULL, NULL, "too many arguments (at most %d)", KJIT_MAXARGS);
    sp = get_spec(S, fidx, nargs, args, NULL, NULL);
    sp->root = 1;
    settle(S);
    for (int round = 0, again = 1; again; round++) {   /* results exactly as returned */
      again = 0;
      for (int i = 0; i < S->nspecs; i++) again |= exact_rets(S, S->specs[i]);
      if (again) settle(S);
      if (round > 50) fail(S, sp, NULL, "type inference did not converge");
    }
    mark_all(S);
    S->strict = 1;
    S->shared_bytes = 0;
    for (int i = 0; i < S->nspecs; i++) if (S->specs[i]->used) check(S, S->specs[i]);
    S->strict = 0;
    settle(S);   /* the checks change nothing once settled */
    if (merge_narrow_specs(S)) mark_all(S);
  } else {   /* what this call began is dropped: a later call starts afresh */
    sp = NULL;
    S->strict = 0;
    S->nspecs = nold;
  }
  S->jb = saved;
  lua_settop(S->L, top);
  return sp;
}

/* ---- Printing ------------------------------------------------------------- */

typedef struct NoteCtx { KtySpec *sp; char buf[320]; } NoteCtx;

static const char *note(void *ud, const KirBlock *b, const KirInsn *v) {
  NoteCtx *c = ud;
  if (b) return c->sp->live[b->id] ? NULL : "dead";
  if (!c->sp->live[v->block->id]) return NULL;
  char tb[32];
  Type t = c->sp->types[v->id];
  KtyConst k = c->sp->consts[v->id];
  int n = snprintf(c->buf, sizeof c->buf, "%s%s", kty_name(t, tb, sizeof tb), t.weak ? "~" : "");
  if (n < 0 || (size_t)n >= sizeof c->buf) return c->buf;
  char *p = c->buf + n;
  size_t left = sizeof c->buf - (size_t)n;
  if (v->op == KIR_INT || v->op == KIR_FLT || v->op == KIR_STR || v->op == KIR_NIL ||
      v->op == KIR_TRUE || v->op == KIR_FALSE)
    return c->buf;   /* the literal shows its value */
  switch (k.kind) {
  case T_INT: snprintf(p, left, "=%lld", (long long)k.v.i); break;
  case T_F64: snprintf(p, left, "=%.17g", k.v.f); break;
  case T_BOOL: snprintf(p, left, "=%s", k.v.b ? "true" : "false"); break;
  case T_NIL: if (t.kind != T_NIL) snprintf(p, left, "=nil"); break;
  case T_STR: snprintf(p, left, "=\"%.*s\"", (int)(k.len < 40 ? k.len : 40), k.str); break;
  default: break;
  }
  if (v->op == KIR_CALL && c->sp->callees[v->id]) {
    size_t m = strlen(c->buf);
    snprintf(c->buf + m, sizeof c->buf - m, "@spec%d", c->sp->callees[v->id]->index);
  }
  if (c->sp->raises[v->id].msg) {   /* raised at run time (Lua's message) */
    size_t m = strlen(c->buf);
    snprintf(c->buf + m, sizeof c->buf - m, " raises \"%s\"", c->sp->raises[v->id].msg);
    if (c->sp->raises[v->id].falsy) {   /* (where a number-or-nil is nil) */
      m = strlen(c->buf);
      snprintf(c->buf + m, sizeof c->buf - m, " or \"%s\"", c->sp->raises[v->id].falsy);
    }
  }
  return c->buf;
}

static void put(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*buf == NULL || *len + n + 1 > *cap) {
    size_t nc = (*len + n + 1) * 2;
    char *nb = realloc(*buf, nc);
    if (nb == NULL) return;
    *buf = nb;
    *cap = nc;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
}

void kty_print(KtySession *S, char **buf, size_t *len, size_t *cap) {
  for (int i = 0; i < S->nspecs; i++) {
    KtySpec *sp = S->specs[i];
    char line[600], tb[32];
    if (!sp->used) continue;
    int n = snprintf(line, sizeof line, "spec %d (", sp->index);
    for (int a = 0; a < sp->nargs && n < 500; a++)
      n += snprintf(line + n, sizeof line - (size_t)n, "%s%s", a ? ", " : "",
                    kty_name(sp->args[a], tb, sizeof tb));
    n += snprintf(line + n, sizeof line - (size_t)n, ") ->");
    if (sp->nret < 0) n += snprintf(line + n, sizeof line - (size_t)n, " ?");
    for (int r = 0; r < sp->nret && n < 560; r++)
      n += snprintf(line + n, sizeof line - (size_t)n, "%s %s", r ? "," : "",
                    kty_name(sp->rets[r], tb, sizeof tb));
    snprintf(line + n, sizeof line - (size_t)n, "\n");
    put(buf, len, cap, line);
    NoteCtx nc = { sp, {0} };
    kir_print_noted(sp->ir, note, &nc, buf, len, cap);
  }
}

/* ---- Functions as values (issue 29 item 2; runtime/luacall.c) -------------
**
** Upvalues compiled code assigns. An upvalue that a compiled function
** assigns (SETUPVAL), or that a literal nested in it assigns, or that
** another function compiled in this session assigns, is not frozen: every
** read and write of it goes to the real upvalue of the real closure at
** run time (sp->upvref: a registry reference to the closure, released
** with the code, like live tables' liveref: kty_ref; sp->upvidx: the upvalue's
** 1-based index). Its reads are Lua values (T_LUA): a number read is
** checked and then runs native. An upvalue is identified by
** lua_upvalueid, so closures sharing one agree; the session's live set
** (values[0], beside the live tables) holds the ones assigned, and a new
** one re-types every upvalue read, so a reader typed before the writer
** turns live too. Upvalues nothing compiled assigns stay frozen.
**
** Calls of Lua values. A function read from a table, passed in, or read
** from a live upvalue (T_LUA) is called through lua_call (cg_callvalue.c),
** its results Lua values like reads from a table. A call whose results are
** all passed on (`return t.f(x)`, `g(t.f(x))`) passes on one value: the
** callee must return exactly one, else a located error says so (compiled
** code has one number of results per return: differences.md 3). */

/* The name by which a library built-in is found at run time ("math.cos":
** package.loaded.math.cos; "print": _G.print), or NULL for kjit's own
** (prange, the array methods, cuda). A built-in boxed as a Lua value (stored
** in a table, passed to a function value) is read there when that runs, as
** library calls are (differences.md 7). */
const char *kty_builtin_libname(int id) {
  static const char *const libs[] = { "math.", "io.", "os.", "string.", "table.", "utf8." };
  static const char *const globals[] = { "print", "error", "assert", "type", "tostring",
                                          "tonumber", "ipairs", "pairs", "next", "select",
                                          "rawget", "rawset", "rawequal", "rawlen",
                                          "setmetatable", "getmetatable", "pcall" };
  if (id < 0 || B_IS_CUDA(id)) return NULL;
  const char *n = builtin_name(id);
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
    if (strncmp(n, libs[i], strlen(libs[i])) == 0) return n;
  for (size_t i = 0; i < sizeof globals / sizeof globals[0]; i++)
    if (strcmp(n, globals[i]) == 0) return n;
  return NULL;
}

/* The name compiled code finds built-in id by where it calls the function
** value itself (kjit_lc_setbuiltin, cg_callvalue.c): a library's
** (kty_builtin_libname), or a function of the kjit module (kjit.zeros ...);
** NULL for the others (array methods, kjit.prange, the kernels'). */
const char *kty_builtin_valuename(int id) {
  const char *n = kty_builtin_libname(id);
  if (n == NULL && id >= B_KJIT_ZEROS && id <= B_KJIT_LINSPACE) n = builtin_name(id);
  return n;
}

/* The closure whose upvalue v (a getupval or setupval of sp) reads, pushed,
** and the upvalue's 1-based index; 0 and nothing pushed for a literal's
** captured local (passed by value: ir_closure.c). */
static int upv_owner(KtySession *S, KtySpec *sp, const KirInsn *v) {
  int aux = v->aux;
  if (sp->clos) {
    aux = kty_clos_frozen_upval(S, sp, v->aux);
    if (aux < 0) return 0;
  }
  push_value(S, sp->ref);
  if (lua_type(S->L, -1) != LUA_TFUNCTION || lua_iscfunction(S->L, -1)) { lua_pop(S->L, 1); return 0; }
  return aux + 1;
}

/* Is upvalue n of the closure on top in the session's live set? With
** mark, it is put there; returns whether it was. */
static int upv_marked(KtySession *S, int n, int mark) {
  lua_State *L = S->L;
  void *id = lua_upvalueid(L, -1, n);
  if (id == NULL) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, S->values_ref);
  if (lua_rawgeti(L, -1, 0) != LUA_TTABLE) {
    lua_pop(L, 1);
    if (!mark) { lua_pop(L, 1); return 0; }
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, 0);
  }
  lua_pushlightuserdata(L, id);
  int was = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 1);
  if (mark && !was) {
    lua_pushlightuserdata(L, id);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
  }
  lua_pop(L, 2);
  return was;
}

/* v reaches upvalue n of the closure on top at run time. */
static void upv_ref(KtySession *S, KtySpec *sp, const KirInsn *v, int n) {
  if (sp->upvref[v->id] == 0) {
    lua_pushvalue(S->L, -1);
    sp->upvref[v->id] = kty_ref(S);
  }
  sp->upvidx[v->id] = n;
}

/* Does sp, or a literal nested in its function, assign the upvalue v reads? */
static int upv_assigned_here(const KtySpec *sp, const KirInsn *v) {
  const KirFunc *f = sp->ir;
  for (int b = 0; b < f->nblocks; b++)
    for (int i = 0; i < f->blocks[b]->ninsns; i++) {
      const KirInsn *w = f->blocks[b]->insns[i];
      if (w->op == KIR_SETUPVAL && w->aux == v->aux) return 1;
    }
  return kcl_sets_upvalue(f->proto, v->aux);
}

/* t_getupval's first question: is the upvalue v reads assigned by compiled
** code? Then *r is a Lua value read at run time, and 1; else 0. */
static int is_envname(const KtySpec *sp, const KirInsn *v) {
  const KbcProto *p = sp->ir->proto;
  return v->aux < p->nup && p->up[v->aux].name && strcmp(p->up[v->aux].name, "_ENV") == 0;
}

static int t_live_upval(KtySession *S, KtySpec *sp, KirInsn *v, Type *r) {
  if (S->kernel || is_envname(sp, v)) return 0;   /* (every global's read: never assigned) */
  int n = upv_owner(S, sp, v);
  if (n == 0) return 0;
  int live = upv_assigned_here(sp, v) || upv_marked(S, n, 0);
  if (live) upv_ref(S, sp, v, n);
  lua_pop(S->L, 1);
  if (!live) return 0;
  *r = ty(T_LUA);
  return 1;
}

/* A new upvalue became live: every upvalue read is typed again. */
static void upv_retype(KtySession *S) {
  for (int i = 0; i < S->nspecs; i++) {
    KtySpec *sp = S->specs[i];
    for (int b = 0; b < sp->ir->nblocks; b++) {
      if (!sp->live[b]) continue;
      KirBlock *blk = sp->ir->blocks[b];
      for (int j = 0; j < blk->ninsns; j++)
        if (blk->insns[j]->op == KIR_GETUPVAL) push(sp, blk->insns[j]);
    }
  }
}

/* upvalue = x: written through to the real upvalue. */
static Type t_setupval(KtySession *S, KtySpec *sp, KirInsn *v) {
  const KbcProto *p = sp->ir->proto;
  const char *name = v->aux < p->nup && p->up[v->aux].name ? p->up[v->aux].name : "?";
  if (S->kernel) REFUSE(S, sp, v, "a kernel cannot assign upvalue '%s' (cuda.jit code has no Lua "
                        "state): pass an array and store into it", name);
  if (is_envname(sp, v))
    REFUSE(S, sp, v, "cannot assign _ENV in compiled code (globals are frozen when it compiles)");
  Type t = sp->types[v->args[0]->id];
  if (t.kind == T_UNKNOWN) return ty(T_NIL);
  if (!boxable(t, sp->consts[v->args[0]->id])) {
    char tb[32];
    REFUSE(S, sp, v, "a %s cannot be assigned to upvalue '%s' in compiled code yet (%s)",
           kty_name(t, tb, sizeof tb), name, unboxable_why(t));
  }
  int n = upv_owner(S, sp, v);
  if (n == 0) REFUSE(S, sp, v, "cannot assign to upvalue '%s' in compiled code here", name);
  upv_ref(S, sp, v, n);
  int was = upv_marked(S, n, 1);
  lua_pop(S->L, 1);
  if (!was) upv_retype(S);
  return ty(T_NIL);
}

/* The name Lua's messages give the function v calls (luaL_argerror's "bad
** argument #1 to 'concat'"): its local, upvalue or field name; "f" where
** the interpreter would say '?' (ops[i](a, b)). */
static const char *callee_name(const KtySpec *sp, const KirInsn *v) {
  const KirInsn *fn = v->args[0];
  const KbcProto *p = sp->ir->proto;
  const char *n = NULL;
  if (fn->name) n = fn->name;
  else if (fn->op == KIR_GETUPVAL && fn->aux < p->nup) n = p->up[fn->aux].name;
  else if (fn->op == KIR_GETFIELD && strlen(fn->k.str.s) == fn->k.str.len) n = fn->k.str.s;
  if (n == NULL || !(isalpha((unsigned char)n[0]) || n[0] == '_')) return "f";
  for (const char *c = n; *c; c++) if (!isalnum((unsigned char)*c) && *c != '_') return "f";
  static const char *const kw[] = { "and", "break", "do", "else", "elseif", "end", "false",
    "for", "function", "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return",
    "then", "true", "until", "while" };
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) if (strcmp(n, kw[i]) == 0) return "f";
  return n;
}

/* Records the compile's options for the trampoline at registry reference
** ref (refuse3): host/callval.c compiles the Lua functions called through
** it with the caller's boundscheck, fastmath and opt, not kjit.jit's
** defaults. (Written for every new reference: one reused after an unref
** forgets the old site's.) */
static void site_options(KtySession *S, int ref) {
  lua_State *L = S->L;
  if (lua_getfield(L, LUA_REGISTRYINDEX, KTY_SITEOPTS_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, KTY_SITEOPTS_KEY);
  }
  if (S->siteopts) lua_pushinteger(L, S->siteopts); else lua_pushnil(L);
  lua_rawseti(L, -2, ref);
  lua_pop(L, 1);
}

/* The call statement of a trampoline: prefix..callee(args), its values
** returned (all of them, counted, where nres < 0). */
static void tramp_call(luaL_Buffer *b, const char *prefix, const char *callee, const char *args,
                       int nres) {
  char head[64];
  if (nres < 0) luaL_addstring(b, "return __kjit_n(");
  else if (nres > 0) {
    luaL_addstring(b, "local ");
    for (int r = 0; r < nres; r++) {
      snprintf(head, sizeof head, "%sr%d", r ? ", " : "", r);
      luaL_addstring(b, head);
    }
    luaL_addstring(b, " = ");
  }
  luaL_addstring(b, prefix);
  luaL_addstring(b, callee);
  luaL_addchar(b, '(');
  luaL_addstring(b, args);
  luaL_addstring(b, nres < 0 ? "))" : ") ");
  if (nres >= 0) {
    luaL_addstring(b, "return");
    for (int r = 0; r < nres; r++) {
      snprintf(head, sizeof head, "%sr%d", r ? ", " : " ", r);
      luaL_addstring(b, head);
    }
  }
}

/* A method call's C function (t:byte(i), `t` a table whose __index gives
** string.byte) is called by a trampoline that cannot repeat the call as a
** method (`t:byte(i)` would index t again: an __index function would run
** twice), so luaL_argerror, seeing a plain call, counts the object as
** argument #1 where the interpreter counts from the one after it. The
** trampoline calls such a function from __kjit_in, a function standing at
** the call's line, under xpcall with method_msgh as its message handler:
** an error raised by the C function itself (level 1 a C function, level 2
** __kjit_in: not one raised deeper, by a Lua callback it calls or by a
** library function that callback calls, whatever its text) that is a
** "bad argument" error of that very call (luaL_where's text for the line,
** the function's name) is worded as luaL_argerror words it for a method:
** #N becomes #N-1, #1 "calling 'name' on bad self". method_msgh's
** upvalues: __kjit_in, the line's luaL_where text, the name (method_msgh_new
** makes it once per trampoline). method_fix passes xpcall's values on, or
** raises its error value again (a memory error so becomes a run-time one:
** the call is caught and raised again). That trampoline, __kjit_mc, is
** the first upvalue of the site's own (named so), which luacall.c calls in
** its place where the callee is a C function. */
static int method_msgh(lua_State *L) {
  lua_Debug ar;
  lua_settop(L, 1);
  if (lua_type(L, 1) != LUA_TSTRING || !lua_getstack(L, 1, &ar) || !lua_getinfo(L, "S", &ar) ||
      strcmp(ar.what, "C") != 0 || !lua_getstack(L, 2, &ar) || !lua_getinfo(L, "f", &ar))
    return 1;
  int direct = lua_rawequal(L, -1, lua_upvalueindex(1));
  lua_pop(L, 1);
  if (!direct) return 1;
  size_t wl, nl;
  const char *w = lua_tolstring(L, lua_upvalueindex(2), &wl);
  const char *name = lua_tolstring(L, lua_upvalueindex(3), &nl);
  const char *m = lua_tostring(L, 1);
  static const char bad[] = "bad argument #";
  if (w && name && strncmp(m, w, wl) == 0 && strncmp(m + wl, bad, sizeof bad - 1) == 0) {
    char *end;
    long arg = strtol(m + wl + sizeof bad - 1, &end, 10);
    if (arg >= 1 && strncmp(end, " to '", 5) == 0 && strncmp(end + 5, name, nl) == 0 &&
        strncmp(end + 5 + nl, "' (", 3) == 0) {
      const char *rest = end + 5 + nl + 2;   /* "(why)" */
      if (arg == 1) lua_pushfstring(L, "%scalling '%s' on bad self %s", w, name, rest);
      else lua_pushfstring(L, "%s%s%d to '%s' %s", w, bad, (int)(arg - 1), name, rest);
    }
  }
  return 1;
}

/* method_msgh_new(__kjit_in, where, name): the handler for one trampoline */
static int method_msgh_new(lua_State *L) {
  lua_settop(L, 3);
  lua_pushcclosure(L, method_msgh, 3);
  return 1;
}

static int method_fix(lua_State *L) {
  if (lua_toboolean(L, 1)) return lua_gettop(L) - 1;
  lua_settop(L, 2);
  return lua_error(L);
}

/* The trampoline through which call v runs (runtime/luacall.c says why): a
** Lua function loaded with the caller's chunk name whose call of the
** function value stands at v's line and names it as the source does, so
** that what the callee raises says what it says interpreted (luaL_where's
** position, luaL_argerror's name, error(msg, 2)'s level). Its registry
** reference (sp->upvref of the call). */
static int trampoline(KtySession *S, KtySpec *sp, KirInsn *v) {
  lua_State *L = S->L;
  push_value(S, sp->ref);
  lua_Debug ar;   /* (lua_getinfo pops the function) */
  if (!lua_isfunction(L, -1) || !lua_getinfo(L, ">S", &ar))
    fail(S, sp, v, "internal error: no source for a call");
  const char *name = callee_name(sp, v);
  int line = v->line > 0 ? v->line : 1, nres = v->aux;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  if (v->flags & KIR_F_TFOR) {
    /* a generic for's iterator call: a generic for itself, so that the
    ** iterator's errors name it 'for iterator' as interpreted */
    char head[64];
    luaL_addstring(&b, "return function(f, s, c) ");
    for (int i = 1; i < line; i++) luaL_addchar(&b, '\n');
    luaL_addstring(&b, "for ");
    for (int r = 0; r < nres; r++) {
      snprintf(head, sizeof head, "%sr%d", r ? ", " : "", r);
      luaL_addstring(&b, head);
    }
    luaL_addstring(&b, " in f, s, c do return");
    for (int r = 0; r < nres; r++) {
      snprintf(head, sizeof head, "%sr%d", r ? ", " : " ", r);
      luaL_addstring(&b, head);
    }
    luaL_addstring(&b, " end end");
    goto load;
  }
  /* a library function read from a table by an integer key (t[1](x)) or
  ** a computed one (t[k](x)) is called from a table the same way (the
  ** trampoline's own, which keeps the last one: a library function lives
  ** as long as the library), so that its argument errors name it
  ** 'integer index' or '?' as interpreted. (Not a function known only
  ** when the call runs: the table would keep it alive, and the store costs
  ** about 270 instructions a call; differences.md 7.) */
  KirVarKind how = kir_varinfo(sp, v, 0).kind;
  const char *key = sp->types[v->args[0]->id].kind != T_BUILTIN ? NULL
                    : how == KIR_VAR_INTKEY ? "__kjit_t[1]"
                    : how == KIR_VAR_ANYKEY ? "__kjit_t[__kjit_k]" : NULL;
  const char *callee = key ? key : name;
  /* a call with a fixed number of arguments (not open: cg_fn_call passes
  ** exactly v->nargs - 1, and luacall.c no more) takes them as parameters
  ** and passes them on: a vararg trampoline's VARARGPREP and VARARG cost
  ** about 180 instructions a call. (A native function the hook gives for
  ** fewer, the trailing nils dropped, is passed them as nils: the same
  ** values.) The parameters' names are the trampoline's own (__kjit_...):
  ** a callee named so keeps the vararg form. */
  int fixed = !(v->flags & KIR_F_OPEN) && v->nargs - 1 <= KJIT_MAXARGS &&
              strncmp(name, "__kjit", 6) != 0 ? v->nargs - 1 : -1;
  char params[KJIT_MAXARGS * 12 + 8];
  params[0] = '\0';
  for (int i = 0, at = 0; i < fixed; i++)
    at += snprintf(params + at, sizeof params - (size_t)at, "%s__kjit_%d", i ? ", " : "", i + 1);
  /* a method call whose object may be a string (`return s:byte(i)`, all
  ** its values): where it is one, the callee is called as a method on it,
  ** so that luaL_argerror counts the arguments as the source does ("bad
  ** argument #1 to 'byte'", not #2); a string's methods are read from its
  ** metatable's __index table (string_method), which has no side effects.
  ** Other objects keep the plain call (indexing them again could run an
  ** __index function twice). found/string-method-argument-number.lua */
  Type self = v->nargs >= 2 ? sp->types[v->args[1]->id] : ty(T_UNKNOWN);
  int strself = !key && is_method_call(sp->ir, v) && strcmp(name, "f") != 0 &&
                ((self.kind == T_STR && self.sub != T_NUMBER) ||
                 (islua(self) && self.sub != KTY_LUA_TABLE));
  /* the parameters after the callee, the object's name and the arguments
  ** after it (a fixed call's first parameter is the object: fixed >= 1) */
  if (fixed < 0) snprintf(params, sizeof params, "%s", strself ? "__kjit_self, ..." : "...");
  const char *selfname = fixed < 0 ? "__kjit_self" : "__kjit_1";
  const char *rest = fixed < 0 ? "..." : fixed <= 1 ? "" : params + strlen("__kjit_1, ");
  /* a method call whose object may be other than a string: a C function
  ** as its callee is called through method_fix (its head says why), from
  ** __kjit_in, which stands on the call's line as the trampoline does */
  int cfself = !key && is_method_call(sp->ir, v) &&   /* (its name: the method's, an identifier) */
               !(self.kind == T_STR && self.sub != T_NUMBER);
  luaL_addstring(&b, "local __kjit_mfix, __kjit_w, __kjit_mkh = ...; ");
  luaL_addstring(&b, "local __kjit_t, __kjit_k, __kjit_type, __kjit_xpcall = {}, 1, type, xpcall; ");
  luaL_addstring(&b, "local __kjit_n = function(...) return select('#', ...), ... end; ");
  if (cfself) {
    char args[KJIT_MAXARGS * 12 + 96];
    snprintf(args, sizeof args, "__kjit_xpcall(__kjit_in, __kjit_mh, %s%s%s)", name,
             params[0] ? ", " : "", params);
    for (int i = 1; i < line; i++) luaL_addchar(&b, '\n');
    luaL_addstring(&b, "local __kjit_in = function(");
    luaL_addstring(&b, name);
    luaL_addstring(&b, ", ...) return ");
    luaL_addstring(&b, name);
    luaL_addstring(&b, "(...) end; local __kjit_mh = __kjit_mkh(__kjit_in, __kjit_w, '");
    luaL_addstring(&b, name);
    luaL_addstring(&b, "'); local __kjit_mc = function(");
    luaL_addstring(&b, name);
    if (params[0]) luaL_addstring(&b, ", ");
    luaL_addstring(&b, params);
    luaL_addstring(&b, ") ");
    tramp_call(&b, "", "__kjit_mfix", args, nres);
    luaL_addstring(&b, " end ");
  }
  luaL_addstring(&b, "return function(");
  luaL_addstring(&b, name);
  if (params[0]) luaL_addstring(&b, ", ");
  luaL_addstring(&b, params);
  luaL_addstring(&b, ") ");
  if (cfself) luaL_addstring(&b, "local __kjit_m = __kjit_mc ");   /* (its first upvalue) */
  if (key) {
    luaL_addstring(&b, "if __kjit_t[1] ~= ");
    luaL_addstring(&b, name);
    luaL_addstring(&b, " then __kjit_t[1] = ");
    luaL_addstring(&b, name);
    luaL_addstring(&b, " end ");
  }
  if (!cfself) for (int i = 1; i < line; i++) luaL_addchar(&b, '\n');
  if (strself) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s:", selfname);
    luaL_addstring(&b, "if __kjit_type(");
    luaL_addstring(&b, selfname);
    luaL_addstring(&b, ") == 'string' then ");
    tramp_call(&b, prefix, name, rest, nres);
    luaL_addstring(&b, " end ");
    tramp_call(&b, "", name, params, nres);
  } else {
    tramp_call(&b, "", callee, params, nres);
  }
  luaL_addstring(&b, " end");
load:
  luaL_pushresult(&b);
  size_t len;
  const char *src = lua_tolstring(L, -1, &len);
  int loaded = luaL_loadbuffer(L, src, len, ar.source) == LUA_OK;
  if (loaded) {   /* the chunk's values: method_fix, luaL_where's text at the line,
                     method_msgh_new */
    lua_pushcfunction(L, method_fix);
    lua_pushfstring(L, "%s:%d: ", ar.short_src, line);
    lua_pushcfunction(L, method_msgh_new);
  }
  if (!loaded || lua_pcall(L, 3, 1, 0) != LUA_OK) {
    char eb[200];
    snprintf(eb, sizeof eb, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    fail(S, sp, v, "internal error: a call's trampoline: %s", eb);
  }
  int ref = kty_ref(S);
  lua_pop(L, 1);   /* the source */
  site_options(S, ref);
  return ref;
}

/* f(...) where f is a Lua value: lua_call, its results Lua values. */
static Type t_luacall(KtySession *S, KtySpec *sp, KirInsn *v, const Type *args,
                      const KtyConst *kargs, int n) {
  if (S->kernel) REFUSE(S, sp, v, "a kernel cannot call a function value (cuda.jit code has no "
                        "Lua state)");
  if (v->aux > KJIT_MAXRETS)
    REFUSE(S, sp, v, "a call of a function value for more than %d results", KJIT_MAXRETS);
  /* a built-in given arguments it ignores (kty_builtin_reads) is called
  ** with them all, as cg_fn_call passes them (args holds them all) */
  if (!(v->flags & KIR_F_TFOR)) {
    int all = kty_noperands(sp, v, 1);
    if (all > n && all <= KJIT_MAXARGS) n = all;
  }
  int strs = 0;
  for (int i = 0; i < n; i++) {
    if (args[i].kind == T_UNKNOWN) return args[i];
    if (escape_closure(S, args[i])) return ty(T_UNKNOWN);
    if (!boxable(args[i], kargs[i])) {
      if (keep_literal(S, sp, v->args[0])) return ty(T_UNKNOWN);
      char tb[32];
      REFUSE(S, sp, v, "a %s cannot be passed to a function value in compiled code yet "
             "(argument #%d; %s)", kty_name(args[i], tb, sizeof tb), i + 1,
             unboxable_why(args[i]));
    }
    strs += args[i].kind == T_STR;   /* (a maybe-nil number needs no slot: cg_callvalue.c) */
  }
  if (strs > 3)
    REFUSE(S, sp, v, "a call of a function value with more than 3 string arguments is not "
           "supported in compiled code yet");
  if (sp->upvref[v->id] == 0) sp->upvref[v->id] = trampoline(S, sp, v);
  /* (a literal first called compiled, then made a real closure because
  ** it escapes: no compiled callee is left behind for this call) */
  sp->callees[v->id] = NULL;
  return ty(T_LUA);
}

/* A frozen value that is a C function kjit does not compile (unpack,
** require, os.getenv, a host's function): a Lua value, the function itself,
** reached at run time through a registry reference (sp->upvref, upvidx 0)
** and called through lua_call. The value on top of the stack (kept). */
/* Is cf the loaded library lib's function name (coroutine.resume)? */
static int lib_fn_is(lua_State *L, lua_CFunction cf, const char *lib, const char *name) {
  int is = 0;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, lib) == LUA_TTABLE) {
    lua_getfield(L, -1, name);
    is = lua_tocfunction(L, -1) == cf;
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return is;
}

static int in_lib(lua_State *L, lua_CFunction cf, const char *lib);
static int in_lib(lua_State *L, lua_CFunction cf, const char *lib) {
  int found = 0;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, lib) == LUA_TTABLE) {
    lua_pushnil(L);
    while (!found && lua_next(L, -2)) {
      found = lua_tocfunction(L, -1) == cf;
      lua_pop(L, 1);
    }
    if (found) lua_pop(L, 1);   /* the key lua_next left */
  }
  lua_pop(L, 2);
  return found;
}

/* Is v called (the function of a call)? A callable table only read from
** (fields of a configuration object) stays frozen, as other tables. */
static int is_called(const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++)
    if (v->users[i]->op == KIR_CALL && v->users[i]->args[0] == v) return 1;
  return 0;
}

/* Does a user of v (a frozen table) need the table itself as a Lua value:
** '..' (its __concat, else Lua's error), '#' where it has a __len, or an
** argument of a library function that only reads it (tostring, ipairs,
** assert, print, io.write, string.format, table.concat)? (Refused while
** frozen, before 2026-11-28. table.insert and table.remove write into it,
** where this function's other reads of it are constants: still refused.) */
static int used_as_value(KtySession *S, const KtySpec *sp, const KirInsn *v) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    if (u->op == KIR_CONCAT) return 1;
    if (u->op == KIR_LEN && luaL_getmetafield(S->L, -1, "__len") != LUA_TNIL) {
      lua_pop(S->L, 1);
      return 1;
    }
    if (u->op == KIR_CALL && u->args[0] != v) {
      KtyConst c = sp->consts[u->args[0]->id];
      if (c.kind == T_BUILTIN && (c.ref == B_TOSTRING || c.ref == B_IPAIRS || c.ref == B_ASSERT ||
                                  c.ref == B_PRINT || c.ref == B_IO_WRITE ||
                                  c.ref == B_STRING_FORMAT || c.ref == B_TABLE_CONCAT))
        return 1;
    }
  }
  return 0;
}

static int t_cfunc_value(KtySession *S, KtySpec *sp, KirInsn *v, Type *r) {
  lua_State *L = S->L;
  /* a table with __call (a callable object) is reached the same way: frozen
  ** as a table, a call of it was refused as "attempt to call a table value"
  ** where the interpreter calls its __call. So is a called table without
  ** one, or a called string: the call raises Lua's "attempt to call a
  ** table value" when it runs, as interpreted (a compile error, even where
  ** it did not run, before 2026-11-28) */
  if (!S->kernel && (lua_istable(L, -1) || lua_type(L, -1) == LUA_TSTRING) && !makes_tfor(v) &&
      is_called(v))
    goto live;
  if (!S->kernel && lua_istable(L, -1) && !makes_tfor(v) && used_as_value(S, sp, v)) goto live;
  /* a userdata compiled code has no type for (a host's object, a file, an
  ** array of records) held in an upvalue is a Lua value the same way: its
  ** fields, methods and metamethods reached when it runs, as interpreted
  ** (before 2026-11-28 "upvalue 'u' is a userdata"). Only an upvalue's: a
  ** library's (io.stderr:write in an error branch) would make whole
  ** functions compile that ran interpreted, at a compile cost SciMark FFT's
  ** set-up measured (+165M instructions, benchmarks.FFT) */
  if (!S->kernel && v->op == KIR_GETUPVAL && lua_type(L, -1) == LUA_TUSERDATA) {
    lua_pushvalue(L, -1);
    KtyConst c = freeze(S);
    if (c.kind == T_UNKNOWN && c.str && strcmp(c.str, "a userdata") == 0)   /* (records too) */
      goto live;
    return 0;
  }
  if (S->kernel || !lua_iscfunction(L, -1) || builtin_of(L, -1) >= 0) return 0;
  /* the coroutine and debug functions see the interpreter's call stack
  ** (a yield across compiled frames, isyieldable, debug.getinfo's levels,
  ** a traceback): refused; the coroutine functions that run or inspect
  ** another coroutine (create, resume, wrap, status, close, running) are
  ** called as any C function (before 2026-11-28 refused too) */
  lua_CFunction cf = lua_tocfunction(L, -1);
  if (in_lib(L, cf, "debug")) return 0;
  if (in_lib(L, cf, "coroutine") && !lib_fn_is(L, cf, "coroutine", "create") &&
      !lib_fn_is(L, cf, "coroutine", "resume") && !lib_fn_is(L, cf, "coroutine", "wrap") &&
      !lib_fn_is(L, cf, "coroutine", "status") && !lib_fn_is(L, cf, "coroutine", "close") &&
      !lib_fn_is(L, cf, "coroutine", "running"))
    return 0;
live:
  if (sp->upvref[v->id] == 0) {
    lua_pushvalue(L, -1);
    sp->upvref[v->id] = kty_ref(S);
  }
  sp->upvidx[v->id] = 0;
  *r = ty(T_LUA);
  return 1;
}

/* t[k] with t a table known when compiling (an upvalue, a global) and k
** computed, where t is not an array of numbers (cg_frozen.c's case): a
** table of functions (`ops[i](a, b)`), of tables, of strings. The real
** table is indexed when this runs (a registry reference: sp->upvref,
** upvidx -1), its element a Lua value. Returns 0 for an array of numbers
** or a key that cannot be a Lua value (the old paths and refusals). */
static int t_frozen_values(KtySession *S, KtySpec *sp, KirInsn *v, Type o, Type kt, KtyConst kk,
                           Type *r) {
  if (S->kernel || kt.kind == T_UNKNOWN || !boxable(kt, kk)) return 0;
  lua_State *L = S->L;
  if (kt.kind == T_INT) {   /* an array of numbers stays cg_frozen.c's */
    int64_t n, *vals;
    uint8_t *isf;
    const char *why = "";
    if (kty_frozen_array(S, o.ref, &n, &vals, &isf, &why)) return 0;
  }
  push_value(S, o.ref);
  if (sp->upvref[v->id] == 0) {
    lua_pushvalue(L, -1);
    sp->upvref[v->id] = kty_ref(S);
  }
  sp->upvidx[v->id] = -1;
  lua_pop(L, 1);
  *r = ty(T_LUA);
  return 1;
}
