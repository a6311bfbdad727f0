/*
** types.c: type inference for one argument signature.
**
** Abstract interpretation over the AST to a fixpoint: each local's type is
** the join of everything assigned to it, expressions get their types from
** their operands, calls create callee specializations whose return types
** feed back (recursion converges because the lattice is finite). The
** rules are those of DESIGN.md §3:
**   - integers are i64, floats f64; i64 joined with f64 is f64;
**   - values read from f32 buffers are f32, and stay f32 among themselves;
**   - numeric literals are *weak*: with an f32 operand they become f32;
**   - `c and x or y` is typed through T_MAYBE (false-or-number).
*/
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "compile.h"
#include "parse.h"
#include "buffer.h"
#include "ir/ir_builtins.h"
#include <setjmp.h>

static const char *const dtype_names[] = {
#define KD_NAME(e, name, ct, f, s) name,
  KJIT_DTYPES(KD_NAME)
#undef KD_NAME
};

const char *kt_name(Type t, char *buf, size_t n) {
  switch (t.kind) {
  case T_UNKNOWN: return "unknown";
  case T_NIL: return "nil";
  case T_BOOL: return "boolean";
  case T_INT: return "i64";
  case T_F64: return "f64";
  case T_F32: return "f32";
  case T_BUF:
    snprintf(buf, n, "%s[%s]", dtype_names[t.dtype],
             t.ndim == 1 ? ":" : t.ndim == 2 ? ":,:" : t.ndim == 3 ? ":,:,:" : ":,:,:,:");
    return buf;
  case T_MAYBE: return "false-or-number";
  case T_FUNC: return "function";
  case T_BUILTIN: return "built-in function";
  case T_TABLE: return "table";
  case T_STR: return "string";
  case T_SHAPE: return "shape";
  default: return "conflicting types";
  }
}

int kt_isnum(Type t) { return t.kind == T_INT || t.kind == T_F64 || t.kind == T_F32; }
static int isfloat(Type t) { return t.kind == T_F64 || t.kind == T_F32; }

/* A maybe-false-or-nil number used as a number: its number type (compiled
** code checks at run time that it is not false/nil, as Lua would fail). */
static Type numview(Type t) {
  if (t.kind == T_MAYBE) return TY(t.sub);
  return t;
}

int kt_equal(Type a, Type b) {
  if (a.kind != b.kind) return 0;
  if (a.kind == T_BUF) return a.dtype == b.dtype && a.ndim == b.ndim;
  if (a.kind == T_MAYBE) return a.sub == b.sub && a.dtype == b.dtype;
  if (a.kind == T_FUNC || a.kind == T_BUILTIN || a.kind == T_TABLE || a.kind == T_STR)
    return a.ref == b.ref;
  return a.weak == b.weak;
}

Type kt_elem(kjit_dtype t) {
  if (t == KJIT_F32) return TY(T_F32);
  if (t == KJIT_F64) return TY(T_F64);
  return TY(T_INT);
}

/* Set while a kernel's types are inferred: there an integer operand of an
** f32 operation converts to f32, as in CUDA C, so f32 kernels written
** with integer indices stay f32 on the GPU (interpreted Lua computes in
** double; the difference is f32 rounding). On the CPU it converts to f64. */
static __thread int kernel_rules;

/* The float kind that two numeric operands compute in (weak rule). */
static Type float_of(Type a, Type b) {
  Type r;
  int a32 = a.kind == T_F32, b32 = b.kind == T_F32;
  if ((a32 && (b32 || b.weak)) || (b32 && (a32 || a.weak))) r = TY(T_F32);
  else if (kernel_rules && ((a32 && b.kind == T_INT) || (b32 && a.kind == T_INT))) r = TY(T_F32);
  else r = TY(T_F64);
  r.weak = a.weak && b.weak;
  return r;
}

/* Join of two numeric types, with the weak-literal rule. */
static Type join_num(Type a, Type b) {
  if (a.kind == T_INT && b.kind == T_INT) { Type r = TY(T_INT); r.weak = a.weak && b.weak; return r; }
  return float_of(a, b);
}

Type kt_join(Type a, Type b) {
  if (a.kind == T_UNKNOWN) return b;
  if (b.kind == T_UNKNOWN) return a;
  if (a.kind == T_NIL && b.kind == T_NIL) return a;
  if (b.kind == T_NIL) { Type t = a; a = b; b = t; }
  if (a.kind == T_NIL) {
    /* nil or a number: a maybe-nil number (`local best` ... best = i) */
    if (kt_isnum(b)) { Type r = TY(T_MAYBE); r.sub = b.kind; r.dtype = 1; return r; }
    if (b.kind == T_MAYBE && b.dtype == 1) return b;
    return TY(T_CONFLICT);
  }
  if (kt_isnum(a) && kt_isnum(b)) return join_num(a, b);
  if (a.kind == T_MAYBE || b.kind == T_MAYBE) {
    Type x = a.kind == T_MAYBE ? TY(a.sub) : a, y = b.kind == T_MAYBE ? TY(b.sub) : b;
    if (!kt_isnum(x) || !kt_isnum(y)) return TY(T_CONFLICT);
    /* the falsy value (nil or false) must be the same on both sides */
    if (a.kind == T_MAYBE && b.kind == T_MAYBE && a.dtype != b.dtype) return TY(T_CONFLICT);
    Type r = TY(T_MAYBE);
    r.sub = join_num(x, y).kind;
    r.dtype = a.kind == T_MAYBE ? a.dtype : b.dtype;
    return r;
  }
  if (kt_equal(a, b)) return a;
  if (a.kind == b.kind && a.kind != T_BUF && a.kind != T_FUNC && a.kind != T_TABLE
      && a.kind != T_STR && a.kind != T_BUILTIN) { Type r = a; r.weak = a.weak && b.weak; return r; }
  return TY(T_CONFLICT);
}

/* ---- The inference walk -------------------------------------------------- */

typedef struct Infer {
  Session *S;
  KSpec *sp;
  KFunc *f;
  int strict;     /* report type errors (else skip the statement this pass) */
} Infer;

#define ERR(I, line, ...) ks_error((I)->S, (I)->f, (line), __VA_ARGS__)

static Type infer_expr(Infer *I, Expr *e);

static void set_var(Infer *I, Var *v, Type t, int line) {
  Type *slot = &I->sp->vartypes[v->id];
  Type j = kt_join(*slot, t);
  if (j.kind == T_CONFLICT) {
    char b1[32], b2[32];
    const char *hint = (slot->kind == T_NIL || t.kind == T_NIL)
        ? " (nil mixes only with numbers: initialize it, e.g. with false or 0)" : "";
    ERR(I, line, "local '%s' holds both %s and %s values; a compiled local has one type%s",
        v->name, kt_name(*slot, b1, sizeof b1), kt_name(t, b2, sizeof b2), hint);
  }
  if (t.kind == T_STR || t.kind == T_TABLE || t.kind == T_SHAPE || t.kind == T_BUILTIN) {
    char b[32];
    ERR(I, line, "local '%s' cannot hold a %s in compiled code", v->name, kt_name(t, b, sizeof b));
  }
  if (!kt_equal(j, *slot)) { *slot = j; I->S->changed = 1; }
}

/* "local 'v' is f64", "global 'g'", "" ... for messages about e. */
static const char *describe(Infer *I, Expr *e, char *buf, size_t n) {
  char tb[32];
  if (e->kind == E_NAME) {
    Type t = I->sp->exprtypes[e->id];
    if (e->u.name.var && (t.kind == T_NIL || t.kind == T_BOOL))
      snprintf(buf, n, " (local '%s')", e->u.name.name);
    else if (e->u.name.var)
      snprintf(buf, n, " (local '%s' is %s)", e->u.name.name, kt_name(t, tb, sizeof tb));
    else
      snprintf(buf, n, " (%s '%s')", "global or upvalue", e->u.name.name);
  } else if (e->kind == E_FIELD) {
    snprintf(buf, n, " (field '%s')", e->u.field.name);
  } else buf[0] = '\0';
  return buf;
}

static const char *unsupported_what(ExprKind k) {
  switch (k) {
  case E_TABLE: return "table constructors are";
  case E_FUNC: return "closures (function literals) are";
  case E_VARARG: return "varargs ('...') are";
  case E_METHCALL: return "method calls are";
  default: return "this expression is";
  }
}

/* Marks e as the compile-time constant k; returns its type. */
static Type set_const(Infer *I, Expr *e, KConst k) {
  I->sp->consts[e->id] = k;
  Type t = k.type;
  if (t.kind == T_INT || t.kind == T_F64) t.weak = 0;
  if (t.kind == T_TABLE || t.kind == T_FUNC || t.kind == T_STR) t.ref = k.tableref;
  return t;
}

/* A free name or a field of a constant table, checked for use. */
static Type use_const(Infer *I, Expr *e, KConst k, const char *what, const char *name) {
  if (k.type.kind == T_UNKNOWN)
    ERR(I, e->line, "%s '%s' is %s: compiled code can use only numbers, booleans, "
        "functions and tables of them", what, name, k.str ? k.str : "unsupported");
  if (k.type.kind == T_NIL)
    ERR(I, e->line, "%s '%s' is nil (compiled code freezes globals and upvalues "
        "when it compiles: define it first)", what, name);
  return set_const(I, e, k);
}

/* Reads field `name` of the session-kept table number ref. */
static KConst table_field(Infer *I, int ref, const char *name) {
  lua_State *L = I->S->L;
  ks_push_value(I->S, ref);
  lua_pushstring(L, name);
  lua_rawget(L, -2);
  KConst k = ks_const_from_value(I->S, -1);
  lua_pop(L, 2);
  return k;
}

static Type infer_call(Infer *I, Expr *e);

/* Type of a binary arithmetic or bitwise operation. */
/* Before convergence a nil operand may be a local not yet seen assigned:
** treat it as not known yet; the strict pass reports what remains. */
static int pending(Infer *I, Type t) {
  return t.kind == T_UNKNOWN || (!I->strict && t.kind == T_NIL);
}

static Type arith_type(Infer *I, Expr *e, Type a, Type b) {
  OpKind op = e->u.bin.op;
  if (pending(I, a) || pending(I, b)) return TY(T_UNKNOWN);
  a = numview(a); b = numview(b);
  if (!kt_isnum(a) || !kt_isnum(b)) {
    Expr *bad = kt_isnum(a) ? e->u.bin.b : e->u.bin.a;
    Type bt = kt_isnum(a) ? b : a;
    char tb[32], db[96];
    const char *what = (op >= OP_BAND && op <= OP_SHR) ? "perform bitwise operation on"
                                                       : "perform arithmetic on";
    ERR(I, e->line, "attempt to %s a %s value%s", what,
        bt.kind == T_BOOL ? "boolean" : bt.kind == T_NIL ? "nil" : kt_name(bt, tb, sizeof tb),
        describe(I, bad, db, sizeof db));
  }
  switch (op) {
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_IDIV: case OP_MOD:
    return join_num(a, b);
  case OP_DIV: case OP_POW:
    if (a.kind == T_INT && b.kind == T_INT) { Type r = TY(T_F64); r.weak = a.weak && b.weak; return r; }
    return float_of(a, b);
  default: {   /* bitwise */
    Type r = TY(T_INT); r.weak = a.weak && b.weak; return r;
  }
  }
}

/* Type of a condition's truth test: anything but strings is fine. */
static void check_cond(Infer *I, Expr *e, Type t) {
  if (t.kind == T_STR || t.kind == T_TABLE || t.kind == T_SHAPE)
    ERR(I, e->line, "a %s cannot be used as a condition in compiled code",
        t.kind == T_STR ? "string" : "table");
}

/* `a and b`, `a or b`. Numbers and arrays are always true; T_MAYBE carries
** in .dtype whether its false value is nil (1) or false (0). */
static Type infer_logic(Infer *I, Expr *e) {
  Type a = infer_expr(I, e->u.bin.a), b = infer_expr(I, e->u.bin.b);
  check_cond(I, e->u.bin.a, a);
  if (a.kind == T_UNKNOWN || b.kind == T_UNKNOWN) return TY(T_UNKNOWN);
  int a_truthy = kt_isnum(a) || a.kind == T_BUF || a.kind == T_FUNC;
  if (e->u.bin.op == OP_AND) {
    if (a_truthy) return b;
    if (a.kind == T_NIL) return a;
    int afalse_nil = a.kind == T_MAYBE && a.dtype == 1;   /* a's false value */
    if (b.kind == T_BOOL && !afalse_nil) return b;
    if (kt_isnum(b)) { Type r = TY(T_MAYBE); r.sub = b.kind; r.dtype = afalse_nil; return r; }
    if (b.kind == T_MAYBE && b.dtype == afalse_nil) return b;
    if (b.kind == T_NIL && afalse_nil) return a;
  } else {
    if (a_truthy) return a;
    if (a.kind == T_NIL) return b;
    if (a.kind == T_BOOL && b.kind == T_BOOL) return a;
    if (a.kind == T_MAYBE && kt_isnum(b)) return join_num(TY(a.sub), b);
    if (a.kind == T_MAYBE && b.kind == T_MAYBE) {   /* falsy only when b is */
      Type r = b; r.sub = join_num(TY(a.sub), TY(b.sub)).kind; return r;
    }
    if (a.kind == T_MAYBE && b.kind == T_NIL) { Type r = a; r.dtype = 1; return r; }
  }
  char b1[32], b2[32];
  ERR(I, e->line, "'%s' mixes %s and %s values; compiled code needs one type",
      kp_opname(e->u.bin.op), kt_name(a, b1, sizeof b1), kt_name(b, b2, sizeof b2));
}

static Type infer_binop(Infer *I, Expr *e) {
  OpKind op = e->u.bin.op;
  if (op == OP_AND || op == OP_OR) return infer_logic(I, e);
  Type a = infer_expr(I, e->u.bin.a), b = infer_expr(I, e->u.bin.b);
  switch (op) {
  case OP_CONCAT:
    ERR(I, e->line, "concatenation ('..') is not supported in compiled code (strings are not supported)");
  case OP_EQ: case OP_NE:
    if ((a.kind == T_STR) != (b.kind == T_STR) && a.kind != T_UNKNOWN && b.kind != T_UNKNOWN)
      ERR(I, e->line, "strings are not supported in compiled code (only constant strings compare)");
    if (a.kind == T_BUF || b.kind == T_BUF || a.kind == T_TABLE || b.kind == T_TABLE)
      ERR(I, e->line, "comparing arrays or tables is not supported in compiled code");
    return TY(T_BOOL);
  case OP_LT: case OP_LE: case OP_GT: case OP_GE:
    if (pending(I, a) || pending(I, b)) return TY(T_BOOL);
    a = numview(a); b = numview(b);
    if (!kt_isnum(a) || !kt_isnum(b)) {
      char b1[32], b2[32];
      ERR(I, e->line, "attempt to compare %s with %s", kt_name(a, b1, sizeof b1),
          kt_name(b, b2, sizeof b2));
    }
    return TY(T_BOOL);
  default:
    return arith_type(I, e, a, b);
  }
}

static Type infer_unop(Infer *I, Expr *e) {
  Type a = infer_expr(I, e->u.un.a);
  char tb[32], db[96];
  if (pending(I, a)) return e->u.un.op == OP_NOT ? TY(T_BOOL) : TY(T_UNKNOWN);
  if (e->u.un.op != OP_NOT) a = numview(a);
  switch (e->u.un.op) {
  case OP_NOT: check_cond(I, e->u.un.a, a); return TY(T_BOOL);
  case OP_LEN:
    if (a.kind != T_BUF)
      ERR(I, e->line, "attempt to get length of a %s value%s",
          kt_isnum(a) ? "number" : kt_name(a, tb, sizeof tb), describe(I, e->u.un.a, db, sizeof db));
    return TY(T_INT);
  case OP_NEG:
    if (!kt_isnum(a))
      ERR(I, e->line, "attempt to perform arithmetic on a %s value%s",
          kt_name(a, tb, sizeof tb), describe(I, e->u.un.a, db, sizeof db));
    return a;
  default: /* OP_BNOT */
    if (!kt_isnum(a))
      ERR(I, e->line, "attempt to perform bitwise operation on a %s value%s",
          kt_name(a, tb, sizeof tb), describe(I, e->u.un.a, db, sizeof db));
    { Type r = TY(T_INT); r.weak = a.weak; return r; }
  }
}

static Type infer_index(Infer *I, Expr *e) {
  Expr *obj = e->u.index.obj;
  Type o = infer_expr(I, obj);
  Type k = infer_expr(I, e->u.index.key);
  char tb[32], db[96];
  if (pending(I, o)) return TY(T_UNKNOWN);
  if (o.kind == T_BUF || o.kind == T_SHAPE) {
    if (k.kind != T_UNKNOWN && !kt_isnum(numview(k)))
      ERR(I, e->line, "array index must be a number, got %s", kt_name(k, tb, sizeof tb));
    if (o.kind == T_SHAPE) {
      /* a.shape[k] is nil outside 1..ndim, as for the Lua table */
      Expr *key = e->u.index.key;
      KConst *kc = &I->sp->consts[key->id];
      if (key->kind == E_INT || kc->type.kind == T_INT) {
        int64_t c = key->kind == E_INT ? key->u.i : kc->v.i;
        return (c >= 1 && c <= o.ndim) ? TY(T_INT) : TY(T_NIL);
      }
      Type r = TY(T_MAYBE); r.sub = T_INT; r.dtype = 1;
      return r;
    }
    if (o.ndim > 1) { Type r = o; r.ndim--; return r; }
    return kt_elem(o.dtype);
  }
  if (o.kind == T_TABLE) {
    KConst *kc = &I->sp->consts[e->u.index.key->id];
    if (e->u.index.key->kind == E_STR)
      return use_const(I, e, table_field(I, o.ref, e->u.index.key->u.str.s), "field",
                       e->u.index.key->u.str.s);
    if (kc->type.kind == T_INT || e->u.index.key->kind == E_INT) {
      lua_Integer n = e->u.index.key->kind == E_INT ? e->u.index.key->u.i : kc->v.i;
      ks_push_value(I->S, o.ref);
      lua_rawgeti(I->S->L, -1, n);
      KConst v = ks_const_from_value(I->S, -1);
      lua_pop(I->S->L, 2);
      char nm[32];
      snprintf(nm, sizeof nm, "[%lld]", (long long)n);
      return use_const(I, e, v, "table element", nm);
    }
    ERR(I, e->line, "tables are not supported in compiled code (only constant "
        "fields of tables known at compile time)");
  }
  ERR(I, e->line, "cannot index a %s%s", o.kind == T_INT || isfloat(o) ? "number" :
      kt_name(o, tb, sizeof tb), describe(I, obj, db, sizeof db));
}

static Type infer_field(Infer *I, Expr *e) {
  Expr *obj = e->u.field.obj;
  Type o = infer_expr(I, obj);
  const char *name = e->u.field.name;
  char tb[32], db[96];
  if (o.kind == T_UNKNOWN) return o;
  if (o.kind == T_BUF) {
    if (strcmp(name, "shape") == 0) { Type r = TY(T_SHAPE); r.ndim = o.ndim; return r; }
    if (strcmp(name, "size") == 0 || strcmp(name, "ndim") == 0) return TY(T_INT);
    ERR(I, e->line, "kjit array has no field '%s' usable in compiled code "
        "(shape, size, ndim)", name);
  }
  if (o.kind == T_BUILTIN && B_IS_DIM3(o.ref)) {
    if (!I->S->kernel)
      ERR(I, e->line, "%s can only be used in a kernel compiled by cuda.jit", kir_builtin_name(o.ref));
    if ((name[0] == 'x' || name[0] == 'y' || name[0] == 'z') && name[1] == 0) return TY(T_INT);
    ERR(I, e->line, "%s has no field '%s' (x, y, z)", kir_builtin_name(o.ref), name);
  }
  if (o.kind == T_TABLE) {
    char full[128];
    snprintf(full, sizeof full, "%s", name);
    return use_const(I, e, table_field(I, o.ref, name), "field", full);
  }
  ERR(I, e->line, "cannot index a %s%s", kt_isnum(o) ? "number" :
      kt_name(o, tb, sizeof tb), describe(I, obj, db, sizeof db));
}

static Type infer_expr(Infer *I, Expr *e) {
  Type t;
  switch (e->kind) {
  case E_NIL: t = TY(T_NIL); break;
  case E_TRUE: case E_FALSE: t = TY(T_BOOL); break;
  case E_INT: t = TY(T_INT); t.weak = 1; break;
  case E_FLT: t = TY(T_F64); t.weak = 1; break;
  case E_STR: {
    KConst k; memset(&k, 0, sizeof k);
    k.type = TY(T_STR); k.str = e->u.str.s;
    I->sp->consts[e->id] = k;
    t = TY(T_STR);
    break;
  }
  case E_VARARG: case E_FUNC: case E_TABLE: case E_METHCALL:
    ERR(I, e->line, "%s not supported in compiled code", unsupported_what(e->kind));
  case E_NAME:
    if (e->u.name.var) t = I->sp->vartypes[e->u.name.var->id];
    else {
      for (int i = 0; i < I->f->nfree; i++)
        if (strcmp(I->f->free[i].name, e->u.name.name) == 0) {
          t = use_const(I, e, I->f->free[i].value, I->f->free[i].what, e->u.name.name);
          goto done;
        }
      ERR(I, e->line, "internal error: unresolved name '%s'", e->u.name.name);
    }
    break;
  case E_INDEX: t = infer_index(I, e); break;
  case E_FIELD: t = infer_field(I, e); break;
  case E_CALL: t = infer_call(I, e); break;
  case E_BINOP: t = infer_binop(I, e); break;
  case E_UNOP: t = infer_unop(I, e); break;
  case E_PAREN: t = infer_expr(I, e->u.paren); break;
  default: t = TY(T_UNKNOWN); break;
  }
done:
  I->sp->exprtypes[e->id] = t;
  return t;
}

/* ---- Calls ----------------------------------------------------------------- */

static Type math_unary_float(Type a) {
  if (a.kind == T_F32) return a;
  Type r = TY(T_F64); r.weak = a.weak; return r;
}

/* The value of an integer constant expression (a literal or a frozen
** name), or 0 with *ok = 0. */
static int64_t const_int(Infer *I, Expr *a, int *ok) {
  *ok = 1;
  if (a->kind == E_INT) return a->u.i;
  if (a->kind == E_UNOP && a->u.un.op == OP_NEG && a->u.un.a->kind == E_INT) return -a->u.un.a->u.i;
  KConst *k = &I->sp->consts[a->id];
  if (k->type.kind == T_INT) return k->v.i;
  *ok = 0;
  return 0;
}

/* cuda.grid(n) and cuda.gridsize(n) return n values; -1 for other calls. */
static int cuda_nresults(Infer *I, Expr *e) {
  if (e->kind != E_CALL) return -1;
  Type ft = I->sp->exprtypes[e->u.call.fn->id];
  if (ft.kind != T_BUILTIN || (ft.ref != B_CUDA_GRID && ft.ref != B_CUDA_GRIDSIZE)) return -1;
  int ok;
  if (e->u.call.nargs < 1) return -1;
  int64_t n = const_int(I, e->u.call.args[0], &ok);
  return ok && n >= 1 && n <= 3 ? (int)n : -1;
}

/* The kernel built-ins (kjit.cuda.*): only in cuda.jit kernels. */
static Type infer_cuda(Infer *I, Expr *e, int id, Type *args, int n) {
  const char *name = kir_builtin_name(id);
  char tb[32];
  if (!I->S->kernel)
    ERR(I, e->line, "%s can only be used in a kernel compiled by cuda.jit", name);
  for (int i = 0; i < n; i++) if (pending(I, args[i])) return TY(T_UNKNOWN);
  switch (id) {
  case B_CUDA_GRID: case B_CUDA_GRIDSIZE: {
    int ok = 0;
    int64_t d = n == 1 ? const_int(I, e->u.call.args[0], &ok) : 0;
    if (!ok || d < 1 || d > 3)
      ERR(I, e->line, "%s takes one constant argument: 1, 2 or 3", name);
    return TY(T_INT);
  }
  case B_CUDA_SYNCTHREADS: case B_CUDA_THREADFENCE:
    if (n != 0) ERR(I, e->line, "%s takes no arguments", name);
    return TY(T_NIL);
  case B_CUDA_SHARED_ARRAY: case B_CUDA_LOCAL_ARRAY: {
    int ok = 0;
    int64_t len = n == 2 ? const_int(I, e->u.call.args[0], &ok) : 0;
    int minlen = id == B_CUDA_SHARED_ARRAY ? 0 : 1;
    if (!ok || len < minlen || len > (1 << 24))
      ERR(I, e->line, "bad argument #1 to '%s' (a constant size %s expected%s)", name,
          minlen ? "of at least 1" : "(0: dynamic shared memory)",
          ok ? "" : ", as in cuda.shared.array(256, \"f32\")");
    KConst *k = &I->sp->consts[e->u.call.args[1]->id];
    int dt = -1;
    if (args[1].kind == T_STR && k->str)
      for (int d = 0; d < KJIT_NDTYPES; d++)
        if (strcmp(k->str, kjit_dtype_name((kjit_dtype)d)) == 0) dt = d;
    if (dt < 0)
      ERR(I, e->line, "bad argument #2 to '%s' (a constant dtype name such as \"f32\" expected)", name);
    Type r = TY(T_BUF); r.dtype = (uint8_t)dt; r.ndim = 1;
    return r;
  }
  case B_CUDA_THREADIDX: case B_CUDA_BLOCKIDX: case B_CUDA_BLOCKDIM: case B_CUDA_GRIDDIM:
    ERR(I, e->line, "%s is not a function (read its fields .x, .y, .z)", name);
  default: {   /* atomics */
    int want = id == B_CUDA_ATOMIC_CAS ? 4 : 3;
    if (n != want)
      ERR(I, e->line, "%s takes %d arguments (array, index, %s)", name, want,
          want == 4 ? "expected, new value" : "value");
    if (args[0].kind != T_BUF || args[0].ndim != 1)
      ERR(I, e->line, "bad argument #1 to '%s' (1-D array expected, got %s)", name,
          kt_name(args[0], tb, sizeof tb));
    kjit_dtype d = (kjit_dtype)args[0].dtype;
    if (d != KJIT_I32 && d != KJIT_U32 && d != KJIT_I64 && d != KJIT_U64 &&
        d != KJIT_F32 && d != KJIT_F64)
      ERR(I, e->line, "%s: atomics work on i32, u32, i64, u64, f32 and f64 arrays, not %s",
          name, kjit_dtype_name(d));
    if ((id == B_CUDA_ATOMIC_CAS) && (d == KJIT_F32 || d == KJIT_F64))
      ERR(I, e->line, "%s works on integer arrays only", name);
    for (int i = 1; i < n; i++) {
      Type a = numview(args[i]);
      if (!kt_isnum(a))
        ERR(I, e->line, "bad argument #%d to '%s' (number expected, got %s)", i + 1, name,
            kt_name(args[i], tb, sizeof tb));
    }
    return kt_elem(d);
  }
  }
}

static Type infer_builtin(Infer *I, Expr *e, int id, Type *args, int n) {
  const char *name = kir_builtin_name(id);
  char tb[32];
  int minargs = 1;
  if (B_IS_CUDA(id)) return infer_cuda(I, e, id, args, n);
  if (id == B_ERROR || id == B_ASSERT) minargs = 1;
  if (id == B_MATH_FMOD || id == B_MATH_ULT) minargs = 2;
  if (n < minargs)
    ERR(I, e->line, "bad argument #%d to '%s' (number expected, got no value)", n + 1, name);
  if (id != B_ERROR && id != B_ASSERT)
    for (int i = 0; i < n; i++) {
      args[i] = numview(args[i]);
      if (pending(I, args[i])) return TY(T_UNKNOWN);
    }
  if (id != B_ERROR && id != B_ASSERT && id != B_MATH_TYPE)
    for (int i = 0; i < n; i++)
      if (args[i].kind != T_UNKNOWN && !kt_isnum(args[i]))
        ERR(I, e->line, "bad argument #%d to '%s' (number expected, got %s)", i + 1, name,
            args[i].kind == T_BOOL ? "boolean" : kt_name(args[i], tb, sizeof tb));
  for (int i = 0; i < n; i++) if (args[i].kind == T_UNKNOWN) return TY(T_UNKNOWN);
  switch (id) {
  case B_MATH_FLOOR: case B_MATH_CEIL: return TY(T_INT);
  case B_MATH_ABS: return args[0];
  case B_MATH_SQRT: case B_MATH_SIN: case B_MATH_COS: case B_MATH_TAN:
  case B_MATH_ASIN: case B_MATH_ACOS: case B_MATH_EXP:
    return math_unary_float(args[0]);
  case B_MATH_ATAN: case B_MATH_LOG:
    if (n >= 2) return float_of(math_unary_float(args[0]), math_unary_float(args[1]));
    return math_unary_float(args[0]);
  case B_MATH_FMOD:
    if (args[0].kind == T_INT && args[1].kind == T_INT) return TY(T_INT);
    return float_of(args[0], args[1]);
  case B_MATH_MAX: case B_MATH_MIN: {
    Type r = args[0];
    for (int i = 1; i < n; i++) r = join_num(r, args[i]);
    return r;
  }
  case B_MATH_TOINTEGER:
    if (args[0].kind == T_INT) return TY(T_INT);
    { Type r = TY(T_MAYBE); r.sub = T_INT; r.dtype = 1; return r; }
  case B_MATH_TYPE: {
    KConst k; memset(&k, 0, sizeof k);
    k.type = TY(T_STR);
    k.str = args[0].kind == T_INT ? "integer" : isfloat(args[0]) ? "float" : NULL;
    if (k.str == NULL) ERR(I, e->line, "bad argument #1 to 'math.type' (number expected)");
    I->sp->consts[e->id] = k;
    return TY(T_STR);
  }
  case B_MATH_ULT: return TY(T_BOOL);
  case B_MATH_MODF:
    ERR(I, e->line, "math.modf is not supported in compiled code");
  case B_ERROR:
    if (args[0].kind != T_STR)
      ERR(I, e->line, "error() in compiled code takes a constant string message");
    if (n >= 2 && (args[1].kind != T_INT || (e->u.call.args[1]->kind != E_INT &&
                   I->sp->consts[e->u.call.args[1]->id].type.kind != T_INT)))
      ERR(I, e->line, "error() level must be an integer constant");
    return TY(T_NIL);
  case B_ASSERT:
    if (n >= 2 && args[1].kind != T_STR)
      ERR(I, e->line, "assert() in compiled code takes a constant string message");
    check_cond(I, e, args[0]);
    return args[0];
  case B_KJIT_PRANGE:
    ERR(I, e->line, "kjit.prange can only be the iterator of a for loop: "
        "'for i in kjit.prange(a, b [, step]) do'");
  default:
    ERR(I, e->line, "'%s' is not supported in compiled code", name);
  }
}

/* Types a call; returns the type of its first result (T_NIL if none). When
** the call's results are expanded, the callee spec's rets give the rest. */
static Type infer_call(Infer *I, Expr *e) {
  Type ft = infer_expr(I, e->u.call.fn);
  int n = e->u.call.nargs;
  if (n > KJIT_MAXARGS) ERR(I, e->line, "too many arguments (at most %d)", KJIT_MAXARGS);
  Type args[KJIT_MAXARGS];
  int nargs = n;
  for (int i = 0; i < nargs; i++) {
    args[i] = infer_expr(I, e->u.call.args[i]);
    if (e->u.call.args[i]->kind == E_CALL && i == nargs - 1 && args[i].kind != T_UNKNOWN) {
      /* f(g()) passes all of g's results */
      KSpec *g = I->sp->calls[e->u.call.args[i]->id];
      if (g && g->nret > 1) {
        if (n + g->nret - 1 > KJIT_MAXARGS)
          ERR(I, e->line, "too many arguments (at most %d)", KJIT_MAXARGS);
        for (int j = 1; j < g->nret; j++) args[n++] = g->rets[j];
      }
    }
  }
  char tb[32], db[96];
  if (ft.kind == T_UNKNOWN) return ft;
  if (ft.kind == T_BUILTIN) return infer_builtin(I, e, ft.ref, args, n);
  if (ft.kind != T_FUNC)
    ERR(I, e->line, "attempt to call a %s value%s",
        kt_isnum(ft) ? "number" : kt_name(ft, tb, sizeof tb),
        describe(I, e->u.call.fn, db, sizeof db));
  for (int i = 0; i < n; i++) {
    if (args[i].kind == T_UNKNOWN) return TY(T_UNKNOWN);
    if (args[i].kind == T_STR || args[i].kind == T_TABLE || args[i].kind == T_SHAPE ||
        args[i].kind == T_BUILTIN)
      ERR(I, e->line, "cannot pass a %s to a compiled function (argument #%d)",
          kt_name(args[i], tb, sizeof tb), i + 1);
    args[i].weak = 0;
  }
  ks_push_value(I->S, ft.ref);
  KFunc *callee = kr_function(I->S, -1);
  lua_pop(I->S->L, 1);
  int np = callee->ast->nparams;
  if (np > KJIT_MAXARGS)
    ERR(I, e->line, "cannot call a function with more than %d parameters from compiled code",
        KJIT_MAXARGS);
  Type pargs[KJIT_MAXARGS];
  for (int i = 0; i < np && i < KJIT_MAXARGS; i++) pargs[i] = i < n ? args[i] : TY(T_NIL);
  KSpec *sp = kt_spec(I->S, callee, np, pargs);
  I->sp->calls[e->id] = sp;
  if (sp->nret <= 0) return sp->nret == 0 ? TY(T_NIL) : TY(T_UNKNOWN);
  return sp->rets[0];
}

/* ---- Statements ------------------------------------------------------------ */

static void infer_block(Infer *I, Block *b);

/* Types of an expression list, the last call expanded to `want` values. */
static int infer_explist(Infer *I, Expr **es, int n, Type *out, int want, int line) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    Type t = infer_expr(I, es[i]);
    if (i == n - 1 && es[i]->kind == E_CALL && I->sp->calls[es[i]->id]) {
      KSpec *g = I->sp->calls[es[i]->id];
      if (g->nret < 0) { /* not known yet: all unknown, count unknown (-1) */
        while (k < want && k < KJIT_MAXRETS) out[k++] = TY(T_UNKNOWN);
        return -1;
      }
      if (k + g->nret > KJIT_MAXRETS) ERR(I, line, "too many values (at most %d)", KJIT_MAXRETS);
      for (int j = 0; j < g->nret; j++) out[k++] = g->rets[j];
      return k;
    }
    if (i == n - 1 && t.kind == T_INT && cuda_nresults(I, es[i]) > 1) {
      for (int j = 0; j < cuda_nresults(I, es[i]) && k < KJIT_MAXRETS; j++) out[k++] = TY(T_INT);
      return k;
    }
    if (i == n - 1 && es[i]->kind == E_CALL && t.kind == T_UNKNOWN &&
        I->sp->exprtypes[es[i]->u.call.fn->id].kind != T_BUILTIN) {
      /* a call whose callee is not typed yet: its result count is unknown */
      while (k < want && k < KJIT_MAXRETS) out[k++] = TY(T_UNKNOWN);
      return -1;
    }
    if (k < KJIT_MAXRETS) out[k++] = t;
    else ERR(I, line, "too many values (at most %d)", KJIT_MAXRETS);
  }
  return k;
}

/* `for i in kjit.prange(a, b [, step]) do` is a numeric for over the same
** values (run in parallel by codegen.c when the jit has parallel = true):
** the statement becomes an S_FORNUM marked prange, for every later pass.
** Returns 0 when s is another generic for. */
static int prange_to_fornum(Infer *I, Stmt *s) {
  if (s->u.forin.nexprs != 1 || s->u.forin.exprs[0]->kind != E_CALL) return 0;
  Expr *call = s->u.forin.exprs[0], *fn = call->u.call.fn;
  /* only a callee spelled ...prange is typed here: typing `ipairs` would
  ** report the C function instead of the unsupported generic for */
  const char *spelled = fn->kind == E_FIELD ? fn->u.field.name : fn->kind == E_NAME ? fn->u.name.name : "";
  if (strcmp(spelled, "prange") != 0) return 0;
  Type ft = infer_expr(I, fn);
  if (ft.kind != T_BUILTIN || ft.ref != B_KJIT_PRANGE) return 0;
  if (s->u.forin.nnames != 1)
    ERR(I, s->line, "kjit.prange gives one loop variable, not %d", s->u.forin.nnames);
  int n = call->u.call.nargs;
  if (n < 2 || n > 3)
    ERR(I, s->line, "kjit.prange takes 2 or 3 arguments (start, limit [, step]), not %d", n);
  Var *v = s->u.forin.vars[0];
  Block *body = s->u.forin.body;
  const char *name = s->u.forin.names[0];
  Expr **args = call->u.call.args;
  memset(&s->u, 0, sizeof s->u);
  s->kind = S_FORNUM;
  s->u.fornum.name = name;
  s->u.fornum.var = v;
  v->is_loopvar = 1;
  s->u.fornum.start = args[0];
  s->u.fornum.limit = args[1];
  s->u.fornum.step = n == 3 ? args[2] : NULL;
  s->u.fornum.body = body;
  s->u.fornum.prange = 1;
  return 1;
}

static void infer_stmt(Infer *I, Stmt *s) {
  Type ts[KJIT_MAXRETS];
  switch (s->kind) {
  case S_LOCAL: {
    for (int i = 0; i < s->u.local.nnames; i++)
      if (s->u.local.attribs[i] && strcmp(s->u.local.attribs[i], "close") == 0)
        ERR(I, s->line, "to-be-closed variables are not supported in compiled code");
    int n = infer_explist(I, s->u.local.exprs, s->u.local.nexprs, ts,
                          s->u.local.nnames, s->line);
    if (n < 0) n = s->u.local.nnames;
    for (int i = 0; i < s->u.local.nnames; i++)
      set_var(I, s->u.local.vars[i], i < n ? ts[i] : TY(T_NIL), s->line);
    break;
  }
  case S_ASSIGN: {
    int n = infer_explist(I, s->u.assign.exprs, s->u.assign.nexprs, ts,
                          s->u.assign.ntargets, s->line);
    if (n < 0) n = s->u.assign.ntargets;
    for (int i = 0; i < s->u.assign.ntargets; i++) {
      Expr *t = s->u.assign.targets[i];
      Type v = i < n ? ts[i] : TY(T_NIL);
      char tb[32];
      if (t->kind == E_NAME) {
        if (t->u.name.var == NULL)
          ERR(I, s->line, "cannot assign to global or upvalue '%s' in compiled code "
              "(they are frozen constants)", t->u.name.name);
        set_var(I, t->u.name.var, v, s->line);
      } else if (t->kind == E_INDEX) {
        Type o = infer_expr(I, t->u.index.obj);
        Type k = infer_expr(I, t->u.index.key);
        I->sp->exprtypes[t->id] = o.kind == T_BUF && o.ndim == 1 ? kt_elem(o.dtype) : o;
        if (o.kind == T_UNKNOWN) continue;
        if (o.kind != T_BUF) {
          char db[96];
          ERR(I, s->line, "cannot index a %s%s", kt_isnum(o) ? "number" :
              kt_name(o, tb, sizeof tb), describe(I, t->u.index.obj, db, sizeof db));
        }
        if (o.ndim > 1)
          ERR(I, s->line, "cannot assign to a row of a %d-D array: index all %d dimensions",
              o.ndim, o.ndim);
        if (k.kind != T_UNKNOWN && !kt_isnum(numview(k)))
          ERR(I, s->line, "array index must be a number, got %s", kt_name(k, tb, sizeof tb));
        if (v.kind != T_UNKNOWN && !kt_isnum(numview(v)))
          ERR(I, s->line, "cannot store a %s value in a kjit array",
              v.kind == T_BOOL ? "boolean" : kt_name(v, tb, sizeof tb));
      } else {
        ERR(I, s->line, "cannot assign to a field in compiled code");
      }
    }
    break;
  }
  case S_CALL:
    if (s->u.call->kind == E_METHCALL)
      ERR(I, s->line, "method calls are not supported in compiled code");
    infer_expr(I, s->u.call);
    break;
  case S_DO: infer_block(I, s->u.block); break;
  case S_WHILE:
    check_cond(I, s->u.loop.cond, infer_expr(I, s->u.loop.cond));
    infer_block(I, s->u.loop.body);
    break;
  case S_REPEAT:
    infer_block(I, s->u.loop.body);
    check_cond(I, s->u.loop.cond, infer_expr(I, s->u.loop.cond));
    break;
  case S_IF:
    for (int i = 0; i < s->u.ifs.n; i++) {
      check_cond(I, s->u.ifs.conds[i], infer_expr(I, s->u.ifs.conds[i]));
      infer_block(I, s->u.ifs.blocks[i]);
    }
    if (s->u.ifs.els) infer_block(I, s->u.ifs.els);
    break;
  case S_FORNUM: {
    Expr *st = s->u.fornum.start;
    Type a, b, c;
    a = infer_expr(I, st);
    b = infer_expr(I, s->u.fornum.limit);
    if (s->u.fornum.prange && !s->u.fornum.step && s->u.fornum.limit->kind == E_CALL) {
      /* kjit.prange(a, f()): Lua passes all of f's results, the second as the step */
      KSpec *g = I->sp->calls[s->u.fornum.limit->id];
      if (g && g->nret > 1)
        ERR(I, s->line, "kjit.prange's limit is a call returning %d values: the second would be "
            "the step; give the step, or put the call in parentheses", g->nret);
    }
    c = s->u.fornum.step ? infer_expr(I, s->u.fornum.step) : TY(T_INT);
    a = numview(a); b = numview(b); c = numview(c);
    const char *which[3] = { "initial", "limit", "step" };
    Type tt[3] = { a, b, c };
    for (int i = 0; i < 3; i++) {
      char tb[32];
      if (tt[i].kind != T_UNKNOWN && !kt_isnum(tt[i]))
        ERR(I, s->line, "'for' %s value must be a number", which[i]);
      if (s->u.fornum.prange && tt[i].kind != T_UNKNOWN && tt[i].kind != T_INT)
        ERR(I, s->line, "kjit.prange: the %s value must be an integer (it is %s)", which[i],
            kt_name(tt[i], tb, sizeof tb));
    }
    Type v = (a.kind == T_INT && c.kind == T_INT) ? TY(T_INT) : TY(T_F64);
    if (a.kind == T_UNKNOWN || c.kind == T_UNKNOWN) v = TY(T_UNKNOWN);
    if (v.kind != T_UNKNOWN) set_var(I, s->u.fornum.var, v, s->line);
    infer_block(I, s->u.fornum.body);
    break;
  }
  case S_FORIN:
    if (prange_to_fornum(I, s)) { infer_stmt(I, s); break; }
    ERR(I, s->line, "generic for ('for ... in') is not supported in compiled code, "
        "except 'for i in kjit.prange(a, b [, step])'");
  case S_FUNCTION: case S_LOCALFUNC:
    ERR(I, s->line, "closures (nested function definitions) are not supported in compiled code");
  case S_RETURN: {
    int n = infer_explist(I, s->u.ret.exprs, s->u.ret.n, ts, KJIT_MAXRETS, s->line);
    KSpec *sp = I->sp;
    if (n < 0) break;   /* `return f(...)` with f's results not known yet */
    for (int i = 0; i < n; i++) {
      char tb[32];
      if (ts[i].kind == T_STR || ts[i].kind == T_TABLE || ts[i].kind == T_SHAPE ||
          ts[i].kind == T_BUILTIN || ts[i].kind == T_FUNC || ts[i].kind == T_BUF)
        ERR(I, s->line, "cannot return a %s from compiled code", kt_name(ts[i], tb, sizeof tb));
    }
    if (sp->nret < 0) { sp->nret = n; I->S->changed = 1; for (int i = 0; i < n; i++) sp->rets[i] = TY(T_UNKNOWN); }
    else if (sp->nret != n)
      ERR(I, s->line, "compiled functions must return the same number of values on every "
          "path (%d here, %d elsewhere)", n, sp->nret);
    for (int i = 0; i < n; i++) {
      Type j = kt_join(sp->rets[i], ts[i]);
      j.weak = 0;
      if (j.kind == T_CONFLICT) {
        char b1[32], b2[32];
        ERR(I, s->line, "return value #%d is %s here but %s elsewhere", i + 1,
            kt_name(ts[i], b1, sizeof b1), kt_name(sp->rets[i], b2, sizeof b2));
      }
      if (!kt_equal(j, sp->rets[i])) { sp->rets[i] = j; I->S->changed = 1; }
    }
    break;
  }
  default: break;
  }
}

/* Until the types have converged, an operand may still be typed too
** narrowly (`local best` is nil until a later statement assigns it), so a
** type error then only skips its statement for this pass; the final,
** strict pass reports the errors that remain. */
static void infer_block(Infer *I, Block *b) {
  for (int i = 0; i < b->n; i++) {
    if (I->strict) { infer_stmt(I, b->stmts[i]); continue; }
    jmp_buf jb, *saved = I->S->jb;
    I->S->jb = &jb;
    if (setjmp(jb) == 0) infer_stmt(I, b->stmts[i]);
    I->S->jb = saved;
  }
}

/* ---- Specializations ------------------------------------------------------- */

KSpec *kt_spec(Session *S, KFunc *f, int nargs, const Type *args) {
  for (KSpec *sp = f->specs; sp; sp = sp->next) {
    if (sp->nargs != nargs) continue;
    int same = 1;
    for (int i = 0; i < nargs && same; i++) same = kt_equal(sp->args[i], args[i]);
    if (same) return sp;
  }
  if (S->nspecs >= 256)
    ks_error(S, f, f->ast->line, "too many specializations in one compile (recursion over types?)");
  KSpec *sp = ks_alloc(S, sizeof *sp);
  sp->fn = f;
  sp->nargs = nargs;
  for (int i = 0; i < nargs; i++) sp->args[i] = args[i];
  sp->nret = -1;
  sp->vartypes = ks_alloc(S, (f->nvars + 1) * sizeof(Type));
  sp->exprtypes = ks_alloc(S, (f->chunk->nexprs + 1) * sizeof(Type));
  sp->calls = ks_alloc(S, (f->chunk->nexprs + 1) * sizeof(KSpec *));
  sp->consts = ks_alloc(S, (f->chunk->nexprs + 1) * sizeof(KConst));
  for (int i = 0; i < f->ast->nparams; i++)
    sp->vartypes[f->ast->paramvars[i]->id] = i < nargs ? args[i] : TY(T_NIL);
  sp->next = f->specs;
  f->specs = sp;
  S->specs = ks_grow(S, S->specs, S->nspecs, &S->capspecs, sizeof *S->specs);
  sp->index = S->nspecs;
  snprintf(sp->name, sizeof sp->name, "kjit_f%d_s%d", f->index, sp->index);
  S->specs[S->nspecs++] = sp;
  S->changed = 1;
  return sp;
}

void kt_infer_all(Session *S) {
  kernel_rules = S->kernel;
  for (int round = 0, strict = 0; ; round++) {
    S->changed = 0;
    for (int i = 0; i < S->nspecs; i++) {
      Infer I = { S, S->specs[i], S->specs[i]->fn, strict };
      infer_block(&I, I.f->ast->body);
    }
    if (strict && !S->changed) break;
    strict = !S->changed;   /* converged: one more pass, reporting errors */
    /* A callee's result types reach its caller one round later, so a chain
    ** of n calls needs n rounds: the bound grows with the specializations
    ** (at most 256 of them). Past it, the error names the compiled
    ** function (the root specialization is the first). */
    if (round > 200 + 2 * S->nspecs) {
      KFunc *root = S->nspecs > 0 ? S->specs[0]->fn : NULL;
      ks_error(S, root, root ? root->ast->line : 0, "type inference did not converge "
               "(%d specializations; recursion over types?)", S->nspecs);
    }
  }
  /* A result still unknown is never produced (the function only returns
  ** through itself or raises): any type will do; settle the rest again. */
  int again = 0;
  for (int i = 0; i < S->nspecs; i++) {
    KSpec *sp = S->specs[i];
    if (sp->nret < 0) { sp->nret = 0; again = 1; }
    for (int r = 0; r < sp->nret; r++)
      if (sp->rets[r].kind == T_UNKNOWN) { sp->rets[r] = TY(T_INT); again = 1; }
  }
  if (again) kt_infer_all(S);
}
