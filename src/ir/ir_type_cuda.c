/*
** ir_type_cuda.c: the typing rules of numba-cuda's intrinsics (see
** ir_type_cuda.h). Lua has one integer type (64-bit) and two float kinds
** in kernels (f32, f64), so:
**   - lane ids, masks, counts and bit operations are integers (the masks'
**     upper 32 bits zero);
**   - predicates are booleans, or numbers as in numba-cuda (non-zero is
**     true): Lua's `if 0 then` is true, so all_sync, any_sync, eq_sync,
**     syncthreads_and and syncthreads_or return booleans, not 0/1;
**   - shuffled and matched values are integers, f32 or f64, and keep
**     their type;
**   - the atomics take 1-D arrays (global or shared) of the dtypes
**     numba-cuda allows for each.
*/
#include <stdio.h>
#include <string.h>
#include "common/karray.h"
#include "ir/ir_type_cuda.h"

static Type mk(int kind) { Type t; memset(&t, 0, sizeof t); t.kind = (uint8_t)kind; return t; }

static int is_number(Type t) { return t.kind == T_INT || t.kind == T_F32 || t.kind == T_F64; }

static Type refuse(char *err, size_t n, const char *fmt, const char *name, int argn,
                   Type got) {
  char tb[32];
  snprintf(err, n, fmt, argn, name, kty_name(got, tb, sizeof tb));
  return mk(T_UNKNOWN);
}

#define WANT(cond, i, what) \
  do { if (!(cond)) return refuse(err, errlen, "bad argument #%d to '%s' (" what " expected, got %s)", \
                                  name, (i) + 1, args[i]); } while (0)

Type kty_cuda_intrin(int id, const Type *args, const KtyConst *kargs, int n, char *err,
                     size_t errlen) {
  (void)kargs;
  const char *name = kir_builtin_name(id);
  switch (id) {
  case B_CUDA_LANEID: case B_CUDA_ACTIVEMASK: case B_CUDA_LANEMASK_LT:
    return mk(T_INT);
  case B_CUDA_SYNCWARP:
    if (n >= 1) WANT(args[0].kind == T_INT, 0, "an integer mask");
    return mk(T_NIL);
  case B_CUDA_THREADFENCE_BLOCK: case B_CUDA_THREADFENCE_SYSTEM:
    return mk(T_NIL);
  case B_CUDA_NANOSLEEP:
    WANT(args[0].kind == T_INT, 0, "an integer number of nanoseconds");
    return mk(T_NIL);
  case B_CUDA_SHFL_SYNC: case B_CUDA_SHFL_UP_SYNC: case B_CUDA_SHFL_DOWN_SYNC:
  case B_CUDA_SHFL_XOR_SYNC:
    WANT(args[0].kind == T_INT, 0, "an integer mask");
    WANT(is_number(args[1]), 1, "an integer, f32 or f64 value");
    WANT(args[2].kind == T_INT, 2, "an integer lane");
    return mk(args[1].kind);
  case B_CUDA_ALL_SYNC: case B_CUDA_ANY_SYNC: case B_CUDA_EQ_SYNC: case B_CUDA_BALLOT_SYNC:
    WANT(args[0].kind == T_INT, 0, "an integer mask");
    WANT(args[1].kind == T_BOOL || is_number(args[1]), 1, "a boolean or number predicate");
    return mk(id == B_CUDA_BALLOT_SYNC ? T_INT : T_BOOL);
  case B_CUDA_MATCH_ANY_SYNC: case B_CUDA_MATCH_ALL_SYNC:
    WANT(args[0].kind == T_INT, 0, "an integer mask");
    WANT(is_number(args[1]), 1, "an integer, f32 or f64 value");
    return mk(T_INT);   /* match_all_sync's second result: ir_type.c's result_of */
  case B_CUDA_SYNCTHREADS_COUNT: case B_CUDA_SYNCTHREADS_AND: case B_CUDA_SYNCTHREADS_OR:
    WANT(args[0].kind == T_BOOL || is_number(args[0]), 0, "a boolean or number predicate");
    return mk(id == B_CUDA_SYNCTHREADS_COUNT ? T_INT : T_BOOL);
  case B_CUDA_CG_THIS_GRID: {   /* a grid group: a value of no run-time content */
    Type g = mk(T_BUILTIN);
    g.ref = B_CUDA_CG_THIS_GRID;
    g.sub = 1;
    return g;
  }
  case B_CUDA_CG_SYNC: case B_CUDA_CG_THREAD_RANK: case B_CUDA_CG_SIZE:
    /* g:sync(), or numba-cuda's g.sync() as written in Python (no self:
    ** there is one grid) */
    if (n >= 1)
      WANT(args[0].kind == T_BUILTIN && args[0].ref == B_CUDA_CG_THIS_GRID && args[0].sub, 0,
           "a grid group (call it as g:sync() with g = cuda.cg.this_grid())");
    return mk(id == B_CUDA_CG_SYNC ? T_NIL : T_INT);
  case B_CUDA_POPC: case B_CUDA_CLZ: case B_CUDA_FFS: case B_CUDA_BREV:
    WANT(args[0].kind == T_INT, 0, "an integer");
    return mk(T_INT);
  case B_CUDA_SELP: {
    WANT(args[0].kind == T_BOOL || is_number(args[0]), 0, "a boolean or number predicate");
    WANT(is_number(args[1]), 1, "a number");
    WANT(is_number(args[2]), 2, "a number");
    Type a = args[1], b = args[2];
    if (a.kind == b.kind) return mk(a.kind);
    /* a float literal beside an f32 is an f32, as in arithmetic */
    if (a.kind == T_F32 && b.kind == T_F64 && b.weak) return mk(T_F32);
    if (b.kind == T_F32 && a.kind == T_F64 && a.weak) return mk(T_F32);
    char ta[32], tb[32];
    snprintf(err, errlen, "cuda.selp's two values must have one type (got %s and %s)",
             kty_name(a, ta, sizeof ta), kty_name(b, tb, sizeof tb));
    return mk(T_UNKNOWN);
  }
  default: break;
  }
  /* the atomics: (array, index, value) or compare_and_swap(array, old, new) */
  if (args[0].kind != T_BUF || args[0].ndim != 1)
    return refuse(err, errlen, "bad argument #%d to '%s' (1-D array expected, got %s)", name, 1,
                  args[0]);
  for (int i = 1; i < n; i++) WANT(is_number(args[i]), i, "number");
  kjit_dtype d = (kjit_dtype)args[0].dtype;
  int isint = d == KJIT_I32 || d == KJIT_U32 || d == KJIT_I64 || d == KJIT_U64;
  int ok, isf = d == KJIT_F32 || d == KJIT_F64;
  const char *which;
  switch (id) {
  case B_CUDA_ATOMIC_INC: case B_CUDA_ATOMIC_DEC: ok = d == KJIT_U32 || d == KJIT_U64; which = "u32 and u64"; break;
  case B_CUDA_ATOMIC_NANMAX: case B_CUDA_ATOMIC_NANMIN: ok = isint || isf; which = "i32, u32, i64, u64, f32 and f64"; break;
  default: ok = isint; which = "i32, u32, i64 and u64"; break;
  }
  if (!ok) {
    snprintf(err, errlen, "%s works on %s arrays, not %s", name, which, kjit_dtype_name(d));
    return mk(T_UNKNOWN);
  }
  return mk(d == KJIT_F32 ? T_F32 : d == KJIT_F64 ? T_F64 : T_INT);
}
