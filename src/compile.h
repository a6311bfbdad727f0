/*
** compile.h: the data shared by the compile stages (resolve.c, types.c,
** codegen.c) and the driver (jit.c).
**
** One compilation (a "session") starts from one Lua function and one
** argument signature. It may pull in callees (other Lua functions, each a
** KFunc) and several specializations of each (KSpec). Everything lives in
** the session's Arena, freed as a whole when the session ends.
*/
#ifndef KJIT_COMPILE_H
#define KJIT_COMPILE_H

#include <stdint.h>
#include <setjmp.h>
#include "lua.h"
#include "kjit.h"
#include "arena.h"
#include "ast.h"

/* ---- Types ------------------------------------------------------------ */

typedef enum TypeKind {
  T_UNKNOWN,   /* not known yet (bottom of the lattice during inference) */
  T_NIL,
  T_BOOL,
  T_INT,       /* Lua integer: i64 */
  T_F64,       /* Lua float: double */
  T_F32,       /* value read from an f32 buffer, and arithmetic among them */
  T_BUF,       /* kjit array: dtype + ndim; a (data, dims...) tuple */
  T_MAYBE,     /* false/nil or a number: the `c and x or y` idiom */
  /* compile-time only values (no run-time representation) */
  T_FUNC,      /* a Lua function known at compile time (callee) */
  T_BUILTIN,   /* a built-in such as math.sqrt */
  T_TABLE,     /* a table known at compile time (math, a config table) */
  T_STR,       /* a constant string (error messages, math.type results) */
  T_SHAPE,     /* a.shape: only indexable */
  T_CONFLICT,  /* result of joining incompatible types (an error) */
  /* the IR typer (src/ir/ir_type.c) only; after T_CONFLICT so that the
  ** kinds above keep their values */
  T_NUMBER     /* integer or float, Lua's subtype kept at run time: where an
                  integer and a float meet (fsub: the float's kind) */
} TypeKind;

typedef struct Type {
  uint8_t kind;    /* TypeKind */
  uint8_t weak;    /* numeric literal: adapts to an f32 operand */
  uint8_t dtype;   /* T_BUF: kjit_dtype; T_MAYBE: 1 if the falsy value is nil */
  uint8_t ndim;    /* T_BUF: 1..4 */
  uint8_t sub;     /* T_MAYBE: kind of the number (T_INT, T_F64, T_F32,
                      T_NUMBER) */
  uint8_t fsub;    /* T_NUMBER, T_MAYBE of a T_NUMBER: the kind of its
                      float side (T_F64 or T_F32) */
  int32_t ref;     /* T_FUNC: KFunc index; T_BUILTIN: builtin id;
                      T_TABLE/T_STR: KConst index */
} Type;

#define TY(k) ((Type){ .kind = (k) })

/* ---- Built-ins (math.*, error, assert, kjit.*) ------------------------ */

#define KJIT_BUILTINS(X) \
  X(MATH_FLOOR, "floor") X(MATH_CEIL, "ceil") X(MATH_ABS, "abs") \
  X(MATH_SQRT, "sqrt") X(MATH_SIN, "sin") X(MATH_COS, "cos") \
  X(MATH_TAN, "tan") X(MATH_ASIN, "asin") X(MATH_ACOS, "acos") \
  X(MATH_ATAN, "atan") X(MATH_EXP, "exp") X(MATH_LOG, "log") \
  X(MATH_FMOD, "fmod") X(MATH_MODF, "modf") X(MATH_MAX, "max") \
  X(MATH_MIN, "min") X(MATH_TOINTEGER, "tointeger") X(MATH_TYPE, "type") \
  X(MATH_ULT, "ult") X(ERROR, "error") X(ASSERT, "assert") \
  X(KJIT_PRANGE, "prange")

/* kjit.cuda.* inside kernels (kernel.c identifies the Lua values). The
** four dim3 objects (threadIdx ...) are only read through .x .y .z. */
#define KJIT_CUDA_BUILTINS(X) \
  X(CUDA_GRID, "grid") X(CUDA_GRIDSIZE, "gridsize") \
  X(CUDA_SYNCTHREADS, "syncthreads") X(CUDA_THREADFENCE, "threadfence") \
  X(CUDA_SHARED_ARRAY, "shared.array") X(CUDA_LOCAL_ARRAY, "local_array") \
  X(CUDA_ATOMIC_ADD, "atomic.add") X(CUDA_ATOMIC_SUB, "atomic.sub") \
  X(CUDA_ATOMIC_MAX, "atomic.max") X(CUDA_ATOMIC_MIN, "atomic.min") \
  X(CUDA_ATOMIC_EXCH, "atomic.exch") X(CUDA_ATOMIC_CAS, "atomic.cas") \
  X(CUDA_THREADIDX, "threadIdx") X(CUDA_BLOCKIDX, "blockIdx") \
  X(CUDA_BLOCKDIM, "blockDim") X(CUDA_GRIDDIM, "gridDim")

typedef enum BuiltinId {
#define KB_ENUM(id, name) B_##id,
  KJIT_BUILTINS(KB_ENUM)
  KJIT_CUDA_BUILTINS(KB_ENUM)
#undef KB_ENUM
  B__COUNT
} BuiltinId;

#define B_IS_CUDA(id) ((id) >= B_CUDA_GRID && (id) < B__COUNT)
#define B_IS_DIM3(id) ((id) >= B_CUDA_THREADIDX && (id) <= B_CUDA_GRIDDIM)

/* ---- Variables (resolver) --------------------------------------------- */

struct Var {
  const char *name;
  int line;           /* declaration line */
  int id;             /* index in KFunc.vars */
  int nassign;        /* assignments after the declaration */
  int is_loopvar;     /* numeric for control variable */
};

/* A compile-time constant: the frozen value of an upvalue or global. */
typedef struct KConst {
  Type type;          /* T_INT/T_F64/T_BOOL/T_FUNC/T_BUILTIN/T_TABLE/T_STR/T_NIL */
  union { int64_t i; double f; int b; } v;
  const char *str;    /* T_STR */
  int tableref;       /* T_TABLE: index in the session's Lua table list */
} KConst;

/* How a free name (not a local of the function) was resolved. */
typedef struct FreeName {
  const char *name;
  KConst value;
  const char *what;   /* "upvalue" or "global", for messages */
} FreeName;

typedef struct KSpec KSpec;

/* One Lua function taking part in the compile. */
typedef struct KFunc {
  int index;
  const void *luaptr; /* identity (lua_topointer) */
  Chunk *chunk;
  Func *ast;
  const char *chunkname;   /* short source for messages */
  Var **vars; int nvars;
  FreeName *free; int nfree, capfree;
  KSpec *specs;       /* linked list of specializations */
  int boundscheck, fastmath;
} KFunc;

#define KJIT_MAXARGS 32
#define KJIT_MAXRETS 16
/* A kjit.prange loop runs in at most this many chunks (parallel.c); the
** compiled caller keeps one partial result per chunk for each reduction. */
#define KJIT_PRANGE_MAXCHUNKS 256

/* One specialization: a KFunc for one argument signature. */
struct KSpec {
  KFunc *fn;
  KSpec *next;
  int index;                  /* in session order */
  int nargs;
  Type args[KJIT_MAXARGS];
  Type *vartypes;             /* by Var.id */
  Type *exprtypes;            /* by Expr.id */
  int nret;                   /* -1 until a return with values is seen */
  Type rets[KJIT_MAXRETS];
  KSpec **calls;              /* by Expr.id: the callee of an E_CALL */
  KConst *consts;             /* by Expr.id: value of compile-time constants */
  int pure;                   /* codegen: returns its one result in a register
                                 (see codegen.c mark_pure) */
  void *llfunc;               /* LLVMValueRef of the inner function */
  void *llfnty;               /* its LLVMTypeRef */
  char name[48];
};

/* Run-time error kinds reported by compiled code (see runtime.c). */
typedef enum KErrKind {
  KE_NONE, KE_IDIV0, KE_MOD0, KE_FORSTEP0, KE_NOINT, KE_BOUNDS,
  KE_USER, KE_USER_NOPOS, KE_NORET, KE_FMOD0, KE_STACK, KE_ASSERT,
  KE_INDEXINT, KE_NILARITH, KE_ARGNOINT, KE_BOUNDSF,
  /* kjit_rt_poll (runtime_poll.c): kjit_interrupt; an error raised by the
  ** host's hook (its value kept in the registry, reference in .a); a job's
  ** stop flag (never raised: the failure that set it is) */
  KE_INTERRUPT, KE_LUAERR, KE_STOPPED,
  /* `a < b` with an operand that is nil or false (a, b: the operands'
  ** Lua types, KE_CMP_NUMBER ...); a non-integral float stored into an
  ** integer array (the array's __newindex: luaL_error, not the VM's) */
  KE_CMP, KE_STORENOINT
} KErrKind;

/* KE_CMP's operand types, in Lua's operand order. */
enum { KE_CMP_NUMBER, KE_CMP_NIL, KE_CMP_BOOLEAN };

/* Filled by compiled code when it fails; read by the dispatcher. The
** layout is mirrored in codegen.c (err_struct_type); keep them in step. */
typedef struct KErr {
  int32_t kind;
  int32_t line;
  int64_t a, b, c;           /* operands: index, lower, upper ... */
  const char *msg;           /* KE_USER: message; else unused */
  const char *chunk;         /* chunk name for the message */
  uint64_t stack_limit;      /* compiled calls fail below this address; in
                                kernels: the dynamic shared memory bytes */
  double f;                  /* float operand (index that is not integer) */
  /* ---- after the fields the code generators mirror ---- */
  int64_t poll_left;         /* countdown to the next kjit_rt_poll, for a
                                generator that keeps it here (it then mirrors
                                this field too): set to KRT_POLL_INTERVAL by
                                every dispatcher; the run time never reads it */
  lua_State *L;              /* the Lua thread the dispatcher runs compiled
                                code for (krt_poll_begin); read by
                                kjit_rt_poll outside parallel jobs only */
} KErr;


/* ---- The session -------------------------------------------------------- */

typedef struct Session {
  lua_State *L;
  Arena arena;
  jmp_buf *jb;             /* compile errors longjmp here */
  char errmsg[512];
  KFunc **funcs; int nfuncs, capfuncs;
  KSpec **specs; int nspecs, capspecs;
  int boundscheck, fastmath, opt;
  int parallel;            /* kjit.prange loops run on the thread pool */
  int changed;             /* inference fixpoint flag */
  int values_ref;          /* registry ref: array of the Lua values the compile
                              refers to (tables, functions), kept alive */
  int nvalues;
  void *builder;           /* LLVMBuilderRef while code generation runs */
  int has_calls;           /* code generation emitted a compiled call */
  int kernel;              /* compiling a cuda.jit kernel: cuda.* allowed */
  int uses_sync;           /* code generation emitted cuda.syncthreads */
  const char **msgs;       /* KT_NVPTX: error()/assert() messages, numbered from 1 */
  int nmsgs, capmsgs;
  char parnotes[2048];     /* CPU: what parallel = true did with each loop, one
                              line per loop (f:inspect("parallel"); codegen.c) */
  int nparnotes;           /* bytes used in parnotes */
} Session;

/* Raises a compile error "chunk:line: message" (longjmp to the driver). */
void ks_error(Session *S, KFunc *f, int line, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 4, 5), noreturn))
#endif
  ;
void *ks_alloc(Session *S, size_t n);
/* Room for one more element in an arena array of n elements of elsize
** bytes with capacity *cap (doubling): returns the array, maybe moved. */
void *ks_grow(Session *S, void *arr, int n, int *cap, size_t elsize);

/* resolve.c: parses the function's chunk, resolves names, freezes free
** names. The Lua function is at stack index idx. Returns the KFunc (cached
** per function in the session). */
KFunc *kr_function(Session *S, int idx);

/* Freezes the Lua value at stack index idx into a constant. */
KConst ks_const_from_value(Session *S, int idx);
/* Pushes the session-kept value number ref (a T_FUNC or T_TABLE). */
void ks_push_value(Session *S, int ref);

/* types.c: infers the types of a specialization (and of every callee
** specialization it reaches), to a fixpoint. */
KSpec *kt_spec(Session *S, KFunc *f, int nargs, const Type *args);
void kt_infer_all(Session *S);
const char *kt_name(Type t, char *buf, size_t n);
int kt_equal(Type a, Type b);
Type kt_join(Type a, Type b);
int kt_isnum(Type t);
/* The T_* of a value read from a buffer of dtype t. */
Type kt_elem(kjit_dtype t);

#endif
