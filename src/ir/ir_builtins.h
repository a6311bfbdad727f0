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
  X(MATH_MODF, "math.modf", 1, 1, MODF) \
  X(MATH_MAX, "math.max", 1, -1, JOIN) \
  X(MATH_MIN, "math.min", 1, -1, JOIN) \
  X(MATH_TOINTEGER, "math.tointeger", 1, 1, TOINTEGER) \
  X(MATH_TYPE, "math.type", 1, 1, TYPE) \
  X(MATH_ULT, "math.ult", 2, 2, ULT) \
  X(ERROR, "error", 0, 2, ERROR) \
  X(ASSERT, "assert", 1, 2, ASSERT) \
  X(KJIT_PRANGE, "kjit.prange", 2, 3, PRANGE) \
  X(MATH_DEG, "math.deg", 1, 1, FLOAT) \
  X(MATH_RAD, "math.rad", 1, 1, FLOAT) \
  X(PRINT, "print", 0, -1, LIB) \
  X(IO_WRITE, "io.write", 0, -1, LIB) \
  X(OS_CLOCK, "os.clock", 0, 0, LIB) \
  X(OS_TIME, "os.time", 0, 0, LIB) \
  X(MATH_RANDOM, "math.random", 0, 2, LIB) \
  X(MATH_RANDOMSEED, "math.randomseed", 0, 2, LIB) \
  X(TOSTRING, "tostring", 1, 1, STRING) \
  X(STRING_FORMAT, "string.format", 1, -1, STRING) \
  X(STRING_SUB, "string.sub", 1, 3, STRING) \
  X(STRING_REP, "string.rep", 1, 3, STRING) \
  X(STRING_BYTE, "string.byte", 1, 2, STRING) \
  X(STRING_CHAR, "string.char", 0, -1, STRING) \
  X(STRING_UPPER, "string.upper", 1, 1, STRING) \
  X(STRING_LOWER, "string.lower", 1, 1, STRING) \
  X(STRING_LEN, "string.len", 1, 1, STRING) \
  X(TABLE_INSERT, "table.insert", 2, 3, LIB) \
  X(TABLE_REMOVE, "table.remove", 1, 2, STRING) \
  X(TABLE_CONCAT, "table.concat", 1, 4, STRING) \
  X(SETMETATABLE, "setmetatable", 0, -1, LIB) \
  X(TYPE, "type", 1, 1, LUATYPE) \
  X(TONUMBER, "tonumber", 1, 2, TONUMBER) \
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
  KTY_KMATH_BUILTINS(X) \
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
  X(CUDA_GRIDDIM, "cuda.gridDim", 0, -1, DIM3) \
  KTY_CUDA_INTRINSICS(X)

/* numba-cuda's casts and the math beyond Lua's (kjit.math.*, also in
** kjit.cuda), usable on the CPU too; typed and compiled by
** ir_type.c (CAST, KMATH) and cg_kmath.c. */
#define KTY_KMATH_BUILTINS(X) \
  X(CUDA_INT8, "cuda.int8", 1, 1, CAST) \
  X(CUDA_UINT8, "cuda.uint8", 1, 1, CAST) \
  X(CUDA_INT16, "cuda.int16", 1, 1, CAST) \
  X(CUDA_UINT16, "cuda.uint16", 1, 1, CAST) \
  X(CUDA_INT32, "cuda.int32", 1, 1, CAST) \
  X(CUDA_UINT32, "cuda.uint32", 1, 1, CAST) \
  X(CUDA_INT64, "cuda.int64", 1, 1, CAST) \
  X(CUDA_UINT64, "cuda.uint64", 1, 1, CAST) \
  X(CUDA_FLOAT32, "cuda.float32", 1, 1, CAST) \
  X(CUDA_FLOAT64, "cuda.float64", 1, 1, CAST) \
  X(KJIT_BOOL, "kjit.bool", 1, 1, CAST) \
  X(CUDA_FLOAT16, "cuda.float16", 1, 1, CAST) \
  X(KMATH_FMA, "kjit.math.fma", 3, 3, KMATH) \
  X(KMATH_CBRT, "kjit.math.cbrt", 1, 1, KMATH) \
  X(KMATH_ERF, "kjit.math.erf", 1, 1, KMATH) \
  X(KMATH_ERFC, "kjit.math.erfc", 1, 1, KMATH) \
  X(KMATH_TANH, "kjit.math.tanh", 1, 1, KMATH) \
  X(KMATH_SINH, "kjit.math.sinh", 1, 1, KMATH) \
  X(KMATH_COSH, "kjit.math.cosh", 1, 1, KMATH) \
  X(KMATH_HYPOT, "kjit.math.hypot", 2, 2, KMATH) \
  X(KMATH_LOG2, "kjit.math.log2", 1, 1, KMATH) \
  X(KMATH_LOG10, "kjit.math.log10", 1, 1, KMATH) \
  X(KMATH_LOG1P, "kjit.math.log1p", 1, 1, KMATH) \
  X(KMATH_EXPM1, "kjit.math.expm1", 1, 1, KMATH) \
  X(KMATH_GAMMA, "kjit.math.gamma", 1, 1, KMATH) \
  X(KMATH_LGAMMA, "kjit.math.lgamma", 1, 1, KMATH) \
  X(KMATH_ASINH, "kjit.math.asinh", 1, 1, KMATH) \
  X(KMATH_ACOSH, "kjit.math.acosh", 1, 1, KMATH) \
  X(KMATH_ATANH, "kjit.math.atanh", 1, 1, KMATH) \
  X(KMATH_REMAINDER, "kjit.math.remainder", 2, 2, KMATH) \
  X(KMATH_COPYSIGN, "kjit.math.copysign", 2, 2, KMATH) \
  X(KMATH_TRUNC, "kjit.math.trunc", 1, 1, KMATH) \
  X(KMATH_ISNAN, "kjit.math.isnan", 1, 1, KMATH) \
  X(KMATH_ISINF, "kjit.math.isinf", 1, 1, KMATH) \
  X(KMATH_ISFINITE, "kjit.math.isfinite", 1, 1, KMATH) \
  KTY_FP16_BUILTINS(X)

/* numba-cuda's cuda.fp16 (codegen/cg_half.c, host/kernel_intrin.c): each
** argument is rounded to f16 first (as numba converts to its float16
** parameters), the result is rounded to f16 once (computed exactly or in
** a precision where rounding twice is rounding once: common/khalf.h) and
** typed as an f64, a Lua float holding a half (as f16 elements are read:
** ir_type.c's elem_of); the comparisons give
** booleans. Usable anywhere, as kjit.math is (numba-cuda: kernels only). */
#define KTY_FP16_BUILTINS(X) \
  X(FP16_HADD, "cuda.fp16.hadd", 2, 2, KMATH) \
  X(FP16_HSUB, "cuda.fp16.hsub", 2, 2, KMATH) \
  X(FP16_HMUL, "cuda.fp16.hmul", 2, 2, KMATH) \
  X(FP16_HDIV, "cuda.fp16.hdiv", 2, 2, KMATH) \
  X(FP16_HNEG, "cuda.fp16.hneg", 1, 1, KMATH) \
  X(FP16_HABS, "cuda.fp16.habs", 1, 1, KMATH) \
  X(FP16_HFMA, "cuda.fp16.hfma", 3, 3, KMATH) \
  X(FP16_HSQRT, "cuda.fp16.hsqrt", 1, 1, KMATH) \
  X(FP16_HEXP, "cuda.fp16.hexp", 1, 1, KMATH) \
  X(FP16_HLOG, "cuda.fp16.hlog", 1, 1, KMATH) \
  X(FP16_HSIN, "cuda.fp16.hsin", 1, 1, KMATH) \
  X(FP16_HCOS, "cuda.fp16.hcos", 1, 1, KMATH) \
  X(FP16_HEXP2, "cuda.fp16.hexp2", 1, 1, KMATH) \
  X(FP16_HEXP10, "cuda.fp16.hexp10", 1, 1, KMATH) \
  X(FP16_HLOG2, "cuda.fp16.hlog2", 1, 1, KMATH) \
  X(FP16_HLOG10, "cuda.fp16.hlog10", 1, 1, KMATH) \
  X(FP16_HRCP, "cuda.fp16.hrcp", 1, 1, KMATH) \
  X(FP16_HRSQRT, "cuda.fp16.hrsqrt", 1, 1, KMATH) \
  X(FP16_HCEIL, "cuda.fp16.hceil", 1, 1, KMATH) \
  X(FP16_HFLOOR, "cuda.fp16.hfloor", 1, 1, KMATH) \
  X(FP16_HRINT, "cuda.fp16.hrint", 1, 1, KMATH) \
  X(FP16_HTRUNC, "cuda.fp16.htrunc", 1, 1, KMATH) \
  X(FP16_HMAX, "cuda.fp16.hmax", 2, 2, KMATH) \
  X(FP16_HMIN, "cuda.fp16.hmin", 2, 2, KMATH) \
  X(FP16_HEQ, "cuda.fp16.heq", 2, 2, KMATH) \
  X(FP16_HNE, "cuda.fp16.hne", 2, 2, KMATH) \
  X(FP16_HGT, "cuda.fp16.hgt", 2, 2, KMATH) \
  X(FP16_HGE, "cuda.fp16.hge", 2, 2, KMATH) \
  X(FP16_HLT, "cuda.fp16.hlt", 2, 2, KMATH) \
  X(FP16_HLE, "cuda.fp16.hle", 2, 2, KMATH)

/* numba-cuda's intrinsics, kernels only: typed by ir_type_cuda.c, compiled
** by cg_cuda_intrin.c (through the target's intrin hook), run interpreted
** by host/kernel_intrin.c. */
#define KTY_CUDA_INTRINSICS(X) \
  X(CUDA_LANEID, "cuda.laneid", 0, 0, INTRIN) \
  X(CUDA_ACTIVEMASK, "cuda.activemask", 0, 0, INTRIN) \
  X(CUDA_LANEMASK_LT, "cuda.lanemask_lt", 0, 0, INTRIN) \
  X(CUDA_SYNCWARP, "cuda.syncwarp", 0, 1, INTRIN) \
  X(CUDA_SHFL_SYNC, "cuda.shfl_sync", 3, 3, INTRIN) \
  X(CUDA_SHFL_UP_SYNC, "cuda.shfl_up_sync", 3, 3, INTRIN) \
  X(CUDA_SHFL_DOWN_SYNC, "cuda.shfl_down_sync", 3, 3, INTRIN) \
  X(CUDA_SHFL_XOR_SYNC, "cuda.shfl_xor_sync", 3, 3, INTRIN) \
  X(CUDA_ALL_SYNC, "cuda.all_sync", 2, 2, INTRIN) \
  X(CUDA_ANY_SYNC, "cuda.any_sync", 2, 2, INTRIN) \
  X(CUDA_EQ_SYNC, "cuda.eq_sync", 2, 2, INTRIN) \
  X(CUDA_BALLOT_SYNC, "cuda.ballot_sync", 2, 2, INTRIN) \
  X(CUDA_MATCH_ANY_SYNC, "cuda.match_any_sync", 2, 2, INTRIN) \
  X(CUDA_MATCH_ALL_SYNC, "cuda.match_all_sync", 2, 2, INTRIN) \
  X(CUDA_SYNCTHREADS_COUNT, "cuda.syncthreads_count", 1, 1, INTRIN) \
  X(CUDA_SYNCTHREADS_AND, "cuda.syncthreads_and", 1, 1, INTRIN) \
  X(CUDA_SYNCTHREADS_OR, "cuda.syncthreads_or", 1, 1, INTRIN) \
  X(CUDA_THREADFENCE_BLOCK, "cuda.threadfence_block", 0, 0, INTRIN) \
  X(CUDA_THREADFENCE_SYSTEM, "cuda.threadfence_system", 0, 0, INTRIN) \
  X(CUDA_NANOSLEEP, "cuda.nanosleep", 1, 1, INTRIN) \
  X(CUDA_POPC, "cuda.popc", 1, 1, INTRIN) \
  X(CUDA_CLZ, "cuda.clz", 1, 1, INTRIN) \
  X(CUDA_FFS, "cuda.ffs", 1, 1, INTRIN) \
  X(CUDA_BREV, "cuda.brev", 1, 1, INTRIN) \
  X(CUDA_SELP, "cuda.selp", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_AND, "cuda.atomic.and_", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_OR, "cuda.atomic.or_", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_XOR, "cuda.atomic.xor", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_INC, "cuda.atomic.inc", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_DEC, "cuda.atomic.dec", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_NANMAX, "cuda.atomic.nanmax", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_NANMIN, "cuda.atomic.nanmin", 3, 3, INTRIN) \
  X(CUDA_ATOMIC_COMPARE_AND_SWAP, "cuda.atomic.compare_and_swap", 3, 3, INTRIN) \
  X(CUDA_CG_THIS_GRID, "cuda.cg.this_grid", 0, 0, INTRIN) \
  X(CUDA_CG_SYNC, "sync", 0, 1, INTRIN) \
  X(CUDA_CG_THREAD_RANK, "thread_rank", 0, 1, INTRIN) \
  X(CUDA_CG_SIZE, "size", 0, 1, INTRIN) \
  X(CUDA_CONST_ARRAY_LIKE, "cuda.const.array_like", 1, 1, INTRIN)

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
**   LIB        a call into the Lua library at run time (runtime_lib.c) with
**              native arguments (numbers, booleans, nil, strings constant or
**              built): print, io.write (no result), os.clock (float),
**              os.time() (integer), math.random (a float without
**              arguments, else an integer), math.randomseed (no result)
**   STRING     a string made at run time by the library (tostring,
**              string.format, string.sub/rep/byte/char/upper/lower; '..'
**              likewise): a Lua value (T_LUA) in a slot of the compiled
**              frame, made by the real function (runtime_lib.c), usable
**              wherever a value read from a table is; string.len: an
**              integer. (KTY_STR_BUILT is no longer produced.)
**   LUATYPE    type(x) of a native value: a constant string
**   TONUMBER   tonumber(x) of a number: x; of a constant string: folded
**   ALLOC      kjit.zeros ...: a new array (cg_alloc.c); the dtype a
**              constant string, the shape an integer, a.shape or {n, m}
**   METHOD     a:fill(v) ... (the array's methods, found by a.fill): the
**              array first; ipairs(a) only as a generic for's iterator
**   (print in kernels: numba-cuda's print, compiled by cg_print.c: numbers,
**   booleans, nil and constant strings; ir_type.c types it apart)
**   MODF       math.modf: two results, integer -> integer, 0.0; float -> its kind twice
**   CAST       a number -> the cast's type (cuda.int32: an integer, wrapped)
**   KMATH      as FLOAT over every argument (isnan, isinf, isfinite: boolean)
**   UNSUPPORTED  refused with a message
** and in kernels:
**   GRID       a constant n of 1..3: n integers
**   SYNC       no arguments, no result
**   NEWARRAY   a constant size and a constant dtype name: a 1-D array
**   ATOMIC     a 1-D array of i32, u32, i64, u64, f32 or f64 (cas: integer
**              arrays), an index, values: the array's element (the old one)
**   DIM3       not a function: only its fields .x .y .z (integers)
**   INTRIN     numba-cuda's intrinsics: each its own rule (ir_type_cuda.c) */
#define KTY_RULES(X) \
  X(ROUND) X(SAME) X(FLOAT) X(FMOD) X(JOIN) X(TOINTEGER) X(TYPE) X(ULT) \
  X(ERROR) X(ASSERT) X(PRANGE) X(UNSUPPORTED) X(ALLOC) X(METHOD) X(MODF) X(CAST) X(KMATH) \
  X(GRID) X(SYNC) X(NEWARRAY) X(ATOMIC) X(DIM3) X(INTRIN) \
  X(LIB) X(STRING) X(LUATYPE) X(TONUMBER)

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
/* Built-ins whose call needs the Lua state at run time (runtime_lib.c):
** refused in kernels and kjit.prange bodies */
#define B_NEEDS_L(id) ((id) >= B_PRINT && (id) <= B_SETMETATABLE)

/* Type.sub of a T_STR built at run time (rule STRING, '..') */
#define KTY_STR_BUILT 1
#define B_IS_KMATH(id) ((id) >= B_CUDA_INT8 && (id) <= B_FP16_HLE)
#define B_IS_FP16(id) ((id) >= B_FP16_HADD && (id) <= B_FP16_HLE)
#define B_IS_FP16_CMP(id) ((id) >= B_FP16_HEQ && (id) <= B_FP16_HLE)
#define B_IS_INTRIN(id) ((id) >= B_CUDA_LANEID && (id) < B__COUNT)
/* cooperative groups: cuda.cg.this_grid() gives a grid group (a T_BUILTIN
** value of id B_CUDA_CG_THIS_GRID, sub 1), whose methods g:sync(),
** g:thread_rank() and g:size() are the other three rows */
#define B_IS_CG(id) ((id) >= B_CUDA_CG_THIS_GRID && (id) <= B_CUDA_CG_SIZE)

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

/* kjit.f32 and the other dtype objects (host/dtype.c): full userdata whose
** metatable holds KIR_DTYPE_FIELD = the dtype (a kjit_dtype). They are
** registered as the cast built-in of their dtype (the B_CUDA_INT8 ...
** B_CUDA_FLOAT64 rows, in the dtypes' order; kjit.bool: B_KJIT_BOOL;
** kjit.f16: B_CUDA_FLOAT16), so
** kjit.f32(x) compiles as cuda.float32(x). kir_dtype_of returns the dtype
** of the dtype object at idx, or -1 for any other value. */
#define KIR_DTYPE_FIELD "__kjit_dtype"
/* The error of kjit.bool(x), interpreted (host/dtype.c) and compiled (ir_type.c). */
#define KIR_BOOL_NOT_CALLABLE "kjit.bool is a dtype, not a cast (Lua counts every number " \
  "as true, numba 0 as false: write x ~= 0, or not not x)"
int kir_dtype_of(struct lua_State *L, int idx);
/* As kir_dtype_of, and numba's casts name their dtype too (cuda.float32 is
** f32, as numba's float32 is a type and a cast): for the arguments that
** take a dtype (kb_checkdtype; the typer's const_dtype). kir_dtype_of alone
** tells a dtype object from the cast functions. */
int kir_dtype_or_cast_of(struct lua_State *L, int idx);
/* The cast built-in of dtype d, and back (-1: none); kjit.h names KJIT_BOOL. */
#define KIR_DTYPE_CAST(d) ((d) == KJIT_BOOL ? B_KJIT_BOOL : (d) == KJIT_F16 ? B_CUDA_FLOAT16 \
  : B_CUDA_INT8 + (d))
#define KIR_CAST_DTYPE(id) ((id) == B_KJIT_BOOL ? (int)KJIT_BOOL \
  : (id) == B_CUDA_FLOAT16 ? (int)KJIT_F16 \
  : (id) >= B_CUDA_INT8 && (id) <= B_CUDA_FLOAT64 ? (id) - B_CUDA_INT8 : -1)

/* 1 where the running Lua's math.fmod names argument #2 first when
** neither argument is a number (ir_builtins.c; set by host/driver.c). */
extern int kjit_fmod_checks_arg2_first;

#endif
