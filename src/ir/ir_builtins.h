/*
** ir_builtins.h: the built-ins the IR typer knows, one row each.
**
** X(id, name, minargs, maxargs, rule): id names the BuiltinId below (B_id),
** name is how messages spell it, maxargs -1 means any number, rule is how
** ir_type.c types a call (KTY_R_*, below). The kjit.cuda rows are usable
** only in kernels (cuda.jit). A built-in missing here is refused by the
** typer as "not yet supported".
** The lowering of each row per target is the code generator's (a column
** to add here when it moves onto the IR).
*/
#ifndef KJIT_IR_BUILTINS_H
#define KJIT_IR_BUILTINS_H

#define KTY_BUILTINS(X) \
  X(MATH_FLOOR, "math.floor", 1, 1, ROUND) \
  X(MATH_CEIL, "math.ceil", 1, 1, ROUND) \
  X(MATH_ABS, "math.abs", 1, 1, SAME) \
  X(MATH_SQRT, "math.sqrt", 1, 1, FLOAT) \
  X(MATH_SIN, "math.sin", 1, 1, FLOAT) \
  X(MATH_COS, "math.cos", 1, 1, FLOAT) \
  X(MATH_TAN, "math.tan", 1, 1, FLOAT) \
  X(MATH_ASIN, "math.asin", 1, 1, FLOAT) \
  X(MATH_ACOS, "math.acos", 1, 1, FLOAT) \
  X(MATH_ATAN, "math.atan", 1, 2, FLOAT) \
  X(MATH_EXP, "math.exp", 1, 1, FLOAT) \
  X(MATH_LOG, "math.log", 1, 2, FLOAT) \
  X(MATH_FMOD, "math.fmod", 2, 2, FMOD) \
  X(MATH_MODF, "math.modf", 1, 1, UNSUPPORTED) \
  X(MATH_MAX, "math.max", 1, -1, JOIN) \
  X(MATH_MIN, "math.min", 1, -1, JOIN) \
  X(MATH_TOINTEGER, "math.tointeger", 1, 1, TOINTEGER) \
  X(MATH_TYPE, "math.type", 1, 1, TYPE) \
  X(MATH_ULT, "math.ult", 2, 2, ULT) \
  X(ERROR, "error", 1, 2, ERROR) \
  X(ASSERT, "assert", 1, 2, ASSERT) \
  X(KJIT_PRANGE, "kjit.prange", 2, 3, PRANGE) \
  X(KJIT_ZEROS, "kjit.zeros", 1, 2, ALLOC) \
  X(KJIT_EMPTY, "kjit.empty", 1, 2, ALLOC) \
  X(KJIT_FULL, "kjit.full", 2, 3, ALLOC) \
  X(KJIT_ARRAY, "kjit.array", 1, 2, ALLOC) \
  X(KJIT_ARANGE, "kjit.arange", 1, 4, ALLOC) \
  X(KJIT_LINSPACE, "kjit.linspace", 3, 4, ALLOC) \
  X(ARR_FILL, "fill", 2, 2, METHOD) \
  X(ARR_COPY, "copy", 1, 1, METHOD) \
  X(ARR_RESHAPE, "reshape", 2, 2, METHOD) \
  X(ARR_SLICE, "slice", 2, 3, METHOD) \
  X(ARR_TOTABLE, "totable", 1, 1, METHOD) \
  X(IPAIRS, "ipairs", 1, 1, METHOD) \
  X(CUDA_GRID, "cuda.grid", 1, 1, GRID) \
  X(CUDA_GRIDSIZE, "cuda.gridsize", 1, 1, GRID) \
  X(CUDA_SYNCTHREADS, "cuda.syncthreads", 0, 0, SYNC) \
  X(CUDA_THREADFENCE, "cuda.threadfence", 0, 0, SYNC) \
  X(CUDA_SHARED_ARRAY, "cuda.shared.array", 2, 2, NEWARRAY) \
  X(CUDA_LOCAL_ARRAY, "cuda.local_array", 2, 2, NEWARRAY) \
  X(CUDA_ATOMIC_ADD, "cuda.atomic.add", 3, 3, ATOMIC) \
  X(CUDA_ATOMIC_SUB, "cuda.atomic.sub", 3, 3, ATOMIC) \
  X(CUDA_ATOMIC_MAX, "cuda.atomic.max", 3, 3, ATOMIC) \
  X(CUDA_ATOMIC_MIN, "cuda.atomic.min", 3, 3, ATOMIC) \
  X(CUDA_ATOMIC_EXCH, "cuda.atomic.exch", 3, 3, ATOMIC) \
  X(CUDA_ATOMIC_CAS, "cuda.atomic.cas", 4, 4, ATOMIC) \
  X(CUDA_THREADIDX, "cuda.threadIdx", 0, -1, DIM3) \
  X(CUDA_BLOCKIDX, "cuda.blockIdx", 0, -1, DIM3) \
  X(CUDA_BLOCKDIM, "cuda.blockDim", 0, -1, DIM3) \
  X(CUDA_GRIDDIM, "cuda.gridDim", 0, -1, DIM3)

/* The typing rules:
**   ROUND      integer -> integer; float -> number (Lua: an integer when
**              the result fits, else the float)
**   SAME       the argument's type (math.abs)
**   FLOAT      float; f32 stays f32; 2 arguments: the float of both
**   FMOD       integers -> integer; else the float of both
**   JOIN       the join of the arguments (mixed subtypes: number)
**   TOINTEGER  integer -> integer; else integer-or-nil
**   TYPE       the constant "integer" or "float"; nil for a non-number; for an
**              integer-or-float, compared with constant strings at run time
**   ULT        boolean
**   ERROR      a constant string message, a constant integer level
**   ASSERT     the first argument (the message a constant string)
**   PRANGE     only as the iterator of a generic for; integer bounds
**   ALLOC      kjit.zeros ...: a new array (cg_alloc.c); the dtype a
**              constant string, the shape an integer, a.shape or {n, m}
**   METHOD     a:fill(v) ... (the array's methods, found by a.fill): the
**              array first; ipairs(a) only as a generic for's iterator
**   UNSUPPORTED  refused with a message
** and in kernels:
**   GRID       a constant n of 1..3: n integers
**   SYNC       no arguments, no result
**   NEWARRAY   a constant size and a constant dtype name: a 1-D array
**   ATOMIC     a 1-D array of i32, u32, i64, u64, f32 or f64 (cas: integer
**              arrays), an index, values: the array's element (the old one)
**   DIM3       not a function: only its fields .x .y .z (integers) */
#define KTY_RULES(X) \
  X(ROUND) X(SAME) X(FLOAT) X(FMOD) X(JOIN) X(TOINTEGER) X(TYPE) X(ULT) \
  X(ERROR) X(ASSERT) X(PRANGE) X(UNSUPPORTED) X(ALLOC) X(METHOD) \
  X(GRID) X(SYNC) X(NEWARRAY) X(ATOMIC) X(DIM3)

typedef enum KtyRule {
#define KTY_RULE_ENUM(r) KTY_R_##r,
  KTY_RULES(KTY_RULE_ENUM)
#undef KTY_RULE_ENUM
  KTY_R__COUNT
} KtyRule;

/* ---- Built-ins (math.*, error, assert, kjit.*, kjit.cuda.*) --------- */

/* One id per row of the table above, in its order (the kjit.cuda
** rows last, the four dim3 objects threadIdx ... at the end). */
typedef enum BuiltinId {
#define KB_ENUM(id, name, lo, hi, rule) B_##id,
  KTY_BUILTINS(KB_ENUM)
#undef KB_ENUM
  B__COUNT
} BuiltinId;

#define B_IS_CUDA(id) ((id) >= B_CUDA_GRID && (id) < B__COUNT)
/* the array built-ins (allocation and methods: cg_alloc.c) */
#define B_IS_ARRAY(id) ((id) >= B_KJIT_ZEROS && (id) <= B_IPAIRS)
#define B_IS_DIM3(id) ((id) >= B_CUDA_THREADIDX && (id) <= B_CUDA_GRIDDIM)

struct lua_State;

/* How messages spell built-in id (a BuiltinId), "?" for none. */
const char *kir_builtin_name(int id);

/* The Lua values of the built-ins the host makes (kjit.prange, the
** kjit.cuda functions and dim3 objects) are known by a registry table,
** value -> id, that the host fills as it builds its module tables: the
** typers recognise them with plain Lua calls, without calling up into
** the host. kir_builtin_register records the value at idx as id;
** kir_builtin_of returns the id of the value at idx, or -1 (math.*,
** error and assert are found in the state's own libraries, not here). */
void kir_builtin_register(struct lua_State *L, int idx, int id);
int kir_builtin_of(struct lua_State *L, int idx);

#endif
