/*
** compile.h: the data shared by the compile pipeline (host/driver.c,
** src/ir, src/codegen), the dispatchers (jit.c, kernel.c, capi.c) and the
** run time: types, built-in ids, the entry ABI, run-time error records,
** the compile session.
**
** One compilation (a "session") starts from one Lua function and one
** argument signature; the typer (ir/ir_type.h) pulls in its callees and
** their specializations. What it allocates lives in the session's Arena,
** freed as a whole when the session ends (session.c).
*/
#ifndef KJIT_COMPILE_H
#define KJIT_COMPILE_H

#include <stdint.h>
#include <setjmp.h>
#include "lua.h"
#include "kjit.h"
#include "common/arena.h"

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
  T_NUMBER,    /* integer or float, Lua's subtype kept at run time: where an
                  integer and a float meet (fsub: the float's kind) */
  T_LUA,       /* a Lua value held in a stack slot (runtime/luavalue.c): a
                  table argument, a table made here, anything read from a
                  table (sub: KTY_LUA_TABLE when known to be a table) */
  T_CLOSURE,   /* a function literal made by compiled code, known at compile
                  time (no run-time object; ref: the typer's KtyClosure, see
                  ir/ir_closure.c) */
  T_LAYOUT,    /* a kjit.struct record layout read at compile time (ref: its
                  krec_byid id): only a dtype argument (kjit.zeros(n, P)) */
  T_EXTERN     /* an external device function (cuda.declare_device) in a
                  kernel compiled for the GPU (ref: the typer's slot of its
                  userdata, common/cuda_extern.h): only called */
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
  int32_t ref;     /* T_FUNC, T_TABLE: the typer's slot of the Lua value
                      (ir_type.h); T_BUILTIN: BuiltinId */
} Type;

#define TY(k) ((Type){ .kind = (k) })


#define KJIT_MAXARGS 32
#define KJIT_MAXRETS 16
/* the entry's result slots (see KEntry below) */
#define KJIT_RETDIMS (2 * KJIT_MAXRETS)
#define KJIT_RETSLOTS (KJIT_RETDIMS + KJIT_MAXRETS * KJIT_MAXDIMS)
/* A function whose returns give different numbers of values (at most
** KJIT_MAXRETS - 1) says how many in the last result's flag slot */
#define KJIT_RETCOUNT (2 * KJIT_MAXRETS - 1)
/* A kjit.prange loop runs in at most this many chunks (parallel.c); the
** compiled caller keeps one partial result per chunk for each reduction. */
#define KJIT_PRANGE_MAXCHUNKS 256

/* Run-time error kinds reported by compiled code (see runtime.c). */
typedef enum KErrKind {
  KE_NONE, KE_IDIV0, KE_MOD0, KE_FORSTEP0, KE_NOINT, KE_BOUNDS,
  KE_USER, KE_USER_NOPOS, KE_FMOD0, KE_STACK, KE_ASSERT,
  KE_INDEXINT, KE_NILARITH, KE_ARGNOINT, KE_BOUNDSF,
  /* kjit_rt_poll (runtime_poll.c): kjit_interrupt; an error raised by the
  ** host's hook (its value kept in the registry, reference in .a); a job's
  ** stop flag (never raised: the failure that set it is) */
  KE_INTERRUPT, KE_LUAERR, KE_STOPPED,
  /* `a < b` with an operand that is nil or false (a, b: the operands'
  ** Lua types, KE_CMP_NUMBER ...); a non-integral float stored into an
  ** integer array (the array's __newindex: luaL_error, not the VM's) */
  KE_CMP, KE_STORENOINT,
  /* a type error the typer found in an operation that runs (arithmetic on
  ** nil, ...): the whole message but the position in msg, as the VM words
  ** it; a nonzero: raised inside a C function, no position (math.max) */
  KE_TYPEERR,
  /* arrays made or reshaped by compiled code (runtime/alloc.c, codegen
  ** cg_alloc.c). KE_ALLOC: a the bytes asked for (KA_NOMEM), the dimension
  ** (KA_NEGDIM) ..., b the KA_* reason, c the argument number, msg the
  ** function's name; KE_SLICE: a first, b last, c the extent; KE_RESHAPE:
  ** a the size, b the new shape's size; KE_ROWSHAPE: a the row's extent
  ** k (c), b the value's, c the dimension (1-based) that differs, or 0
  ** when the dimensions differ in number (a, b then the numbers) */
  KE_ALLOC, KE_SLICE, KE_RESHAPE, KE_ROWSHAPE
} KErrKind;

/* KE_ALLOC's reasons (KErr.b) */
enum { KA_NOMEM = 1, KA_NEGDIM, KA_TOOLARGE, KA_NEGPOINTS, KA_STEP0, KA_NOTFINITE };

/* KE_CMP's operand types, in Lua's operand order (a constant string or a
** known function ordered with a number-or-nil: ir_type.c t_compare). */
enum { KE_CMP_NUMBER, KE_CMP_NIL, KE_CMP_BOOLEAN, KE_CMP_STRING, KE_CMP_FUNCTION };

/* Filled by compiled code when it fails; read by the dispatcher. The
** layout is mirrored by the code generator (src/codegen: the KErr struct
** type it builds); keep them in step. */
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


/* Calling convention of the entry point the dispatchers call (the code
** generator emits it: src/codegen/cg_entry.c):
**   int32_t entry(int64_t *args, int64_t *rets, KErr *err)
** args[i]: i64 value, f64 bits, 0/1 for booleans, or a KBuffer* for arrays;
** rets[i]: i64 value, f64 bits (f32 results widened) or 0/1; for results
** that may be false/nil, rets[KJIT_MAXRETS + i] is 1 when it holds a number.
** T_NUMBER results (integer or float, Lua's subtype kept): rets[i] the
** integer or the f64 bits, rets[KJIT_MAXRETS + i] 0 for an integer, 1 for
** a float; and for a false/nil-or-number (T_MAYBE of sub T_NUMBER)
** rets[KJIT_MAXRETS + i] is 0 (false/nil), 1 (an integer) or 2 (a float).
** T_BUF results (arrays): rets[r] the element pointer, and the extents
** in rets[KJIT_RETDIMS + r * KJIT_MAXDIMS + d]; the dispatcher finds the
** array they belong to (an argument, or an allocation: jit.c).
** rets must have room for KJIT_RETSLOTS slots.
** Returns 0 on success, nonzero with *err filled on a run-time error.
**
** GPU kernels (cuda.jit for the NVPTX target; cg_kernel.c) have instead a
** `void name(params...)` entry whose parameters are, for each argument of
** the kernel in order: i64 (integer), double, float, i8 (boolean, 0/1), or
** an element pointer followed by one i64 extent per dimension (array);
** then `i64* errrec` (KJIT_KERR_WORDS words of device memory, zero = no
** error) and `i64 dynshared` (dynamic shared bytes). The first failing
** thread fills errrec: runtime_err.h KErrWord. Simulated kernels
** (cudasim.c) use KEntry. */
typedef int32_t (*KEntry)(int64_t *args, int64_t *rets, KErr *err);

/* ---- The session -------------------------------------------------------- */

/* What one compile carries from the dispatcher to the driver
** (host/driver.c) and back: options in, the error message out. */
typedef struct Session {
  lua_State *L;
  Arena arena;
  jmp_buf *jb;             /* compile errors longjmp here */
  char errmsg[1024];
  int boundscheck, fastmath, opt;
  int parallel;            /* kjit.prange loops run on the thread pool */
  char parnotes[2048];     /* CPU: what parallel = true did with each loop, one
                              line per loop (f:inspect("parallel"); the code
                              generator's cg_prange.c writes them) */
  int nparnotes;           /* bytes used in parnotes */
} Session;

#endif
