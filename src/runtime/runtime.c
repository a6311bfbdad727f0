/*
** runtime.c: the few helpers compiled code calls, and the text of the
** run-time errors it reports.
**
** Compiled code never calls Lua: it fills a KErr and returns nonzero. The
** dispatcher turns that record into a Lua error with the user's file:line
** and Lua 5.4's own wording (checked against lua5.4 by the differential
** tests), after the native frames are gone.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include "lua.h"
#include "lauxlib.h"
#include "common/compile.h"
#include "common/karray.h"
#include "runtime/runtime.h"

/* Lua's exact integer/float comparisons for integers beyond 2^53.
** op: 0 i<f, 1 i<=f, 2 f<i, 3 f<=i, 4 i==f. */
int32_t kjit_rt_cmp_int_float(int32_t op, int64_t i, double f) {
  if (f != f) return 0;                                  /* NaN: all false */
  if (op == 4) {
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return 0;
    return floor(f) == f && (int64_t)f == i;
  }
  /* Compare i with f through integers: floor/ceil of f, clipped. */
  if (f >= 9223372036854775808.0) return op <= 1;        /* f beyond every i */
  if (f < -9223372036854775808.0) return op >= 2;        /* f below every i */
  switch (op) {
  case 0: return i < (int64_t)ceil(f);
  case 1: return i <= (int64_t)floor(f);
  case 2: return (int64_t)floor(f) < i;
  default: return (int64_t)ceil(f) <= i;
  }
}

/* Lua 5.4's forlimit for a float limit of an integer loop. Writes the
** integer limit; returns 1 if the loop must not run at all. */
int32_t kjit_rt_forlimit(double lim, int64_t init, int64_t step, int64_t *out) {
  double fl = step < 0 ? ceil(lim) : floor(lim);
  if (fl >= -9223372036854775808.0 && fl < 9223372036854775808.0) {
    *out = (int64_t)fl;
  } else if (lim > 0) {                                  /* beyond maxinteger */
    if (step < 0) return 1;
    *out = INT64_MAX;
  } else {                              /* below mininteger, or NaN (as Lua) */
    if (step > 0) return 1;
    *out = INT64_MIN;
  }
  return step > 0 ? init > *out : init < *out;
}

/* Pushes the message of a run-time error reported by compiled code. */
void krt_push_error(lua_State *L, const KErr *e) {
  const char *chunk = e->chunk ? e->chunk : "?";
  char where[LUA_IDSIZE + 32];
  snprintf(where, sizeof where, "%s:%d: ", chunk, (int)e->line);
  /* The interpreter raises these from C functions (luaL_error, whose
  ** luaL_where gives no position for a line it does not know: a stripped
  ** chunk's), the others from the VM (luaG_runerror: "?:-1:" there). */
  switch (e->kind) {
  case KE_BOUNDS: case KE_BOUNDSF: case KE_INDEXINT: case KE_USER: case KE_ASSERT:
  case KE_FMOD0: case KE_ARGNOINT: case KE_STORENOINT:
  case KE_ALLOC: case KE_SLICE: case KE_RESHAPE: case KE_ROWSHAPE:
    if (e->line <= 0) where[0] = '\0';
    break;
  default: break;
  }
  switch (e->kind) {
  case KE_IDIV0: lua_pushfstring(L, "%sattempt to divide by zero", where); break;
  case KE_MOD0: lua_pushfstring(L, "%sattempt to perform 'n%%0'", where); break;
  case KE_FORSTEP0: lua_pushfstring(L, "%s'for' step is zero", where); break;
  case KE_STORENOINT:   /* buffer.c's __newindex (where_error) */
    lua_pushfstring(L, "%snumber has no integer representation", where);
    break;
  case KE_CMP: {   /* luaG_ordererror's words */
    static const char *const tn[] = { "number", "nil", "boolean", "string", "function" };
    const char *t1 = tn[e->a >= 0 && e->a <= KE_CMP_FUNCTION ? e->a : 0];
    const char *t2 = tn[e->b >= 0 && e->b <= KE_CMP_FUNCTION ? e->b : 0];
    if (t1 == t2) lua_pushfstring(L, "%sattempt to compare two %s values", where, t1);
    else lua_pushfstring(L, "%sattempt to compare %s with %s", where, t1, t2);
    break;
  }
  case KE_NOINT:
    if (e->msg) lua_pushfstring(L, "%snumber%s has no integer representation", where, e->msg);
    else lua_pushfstring(L, "%snumber has no integer representation", where);
    break;
  case KE_BOUNDS:   /* index 0: the hint buffer.c's kb_bounds_error gives too */
    lua_pushfstring(L, "%sindex %I out of bounds [1, %I]%s", where, (lua_Integer)e->a,
                    (lua_Integer)e->c, e->a == 0 ? KJIT_HINT_1BASED : "");
    break;
  case KE_BOUNDSF:
    lua_pushfstring(L, "%sindex %f out of bounds [1, %I]", where, (lua_Number)e->f,
                    (lua_Integer)e->c);
    break;
  case KE_INDEXINT:
    lua_pushfstring(L, "%sindex %f is not an integer", where, (lua_Number)e->f);
    break;
  case KE_USER:
    if (e->c > 0) {   /* error(msg, level) pointing above the compiled code */
      luaL_where(L, (int)e->c);
      lua_pushstring(L, e->msg ? e->msg : "");
      lua_concat(L, 2);
      break;
    }
    /* fall through */
  case KE_ASSERT:
    lua_pushfstring(L, "%s%s", where, e->msg ? e->msg : "");
    break;
  case KE_USER_NOPOS: lua_pushstring(L, e->msg ? e->msg : ""); break;
  case KE_FMOD0:   /* msg: the name the call gives math.fmod */
    lua_pushfstring(L, "%sbad argument #2 to '%s' (zero)", where, e->msg ? e->msg : "fmod");
    break;
  case KE_STACK:   /* compiled calls nested past the C stack's room: the interpreter's words */
    lua_pushfstring(L, "%sstack overflow", where);
    break;
  case KE_ARGNOINT:
    lua_pushfstring(L, "%sbad argument #%d to '%s' (number has no integer representation)",
                    where, (int)e->a, e->msg ? e->msg : "?");
    break;
  case KE_TYPEERR:   /* a: raised inside a C function that gives no position */
    lua_pushfstring(L, "%s%s", e->a ? "" : where, e->msg ? e->msg : "");
    break;
  case KE_NILARITH:
    lua_pushfstring(L, "%sattempt to perform arithmetic on a %s value%s", where,
                    e->a ? "nil" : "boolean", e->msg ? e->msg : "");
    break;
  case KE_INTERRUPT:   /* kjit_interrupt: the place that called compiled code */
    luaL_where(L, 1);
    lua_pushliteral(L, "interrupted");
    lua_concat(L, 2);
    break;
  case KE_LUAERR:      /* the host's hook raised this value (runtime_poll.c) */
    lua_rawgeti(L, LUA_REGISTRYINDEX, (int)e->a);
    luaL_unref(L, LUA_REGISTRYINDEX, (int)e->a);
    break;
  case KE_STOPPED:
    lua_pushliteral(L, "kjit: compiled code stopped for another thread's failure "
                    "(a kjit bug if it shows)");
    break;
  case KE_ALLOC:   /* buffer.c's words (runtime/alloc.c) */
    switch ((int)e->b) {
    case KA_NEGDIM:
      lua_pushfstring(L, "%sbad argument #%d to '%s' (negative dimension %I in shape)", where,
                      (int)e->c, e->msg ? e->msg : "?", (lua_Integer)e->a);
      break;
    case KA_TOOLARGE: lua_pushfstring(L, "%sarray too large (over 2^48 bytes)", where); break;
    case KA_NEGPOINTS:
      lua_pushfstring(L, "%sbad argument #3 to 'linspace' (number of points must not be "
                      "negative)", where);
      break;
    case KA_STEP0:
      lua_pushfstring(L, "%sbad argument #3 to 'arange' (step must not be zero)", where);
      break;
    case KA_NOTFINITE: lua_pushfstring(L, "%sarange: arguments must be finite", where); break;
    default:
      lua_pushfstring(L, "%snot enough memory (a kjit array of %I bytes)", where, (lua_Integer)e->a);
      break;
    }
    break;
  case KE_SLICE: {
    lua_Integer first = e->a, last = e->b;
    int back = last != LUA_MAXINTEGER && first > last + 1;
    lua_pushfstring(L, "%sslice %I..%I out of bounds [1, %I]%s", where, first, last,
                    (lua_Integer)e->c, back ? " (first > last + 1)" : "");
    break;
  }
  case KE_RESHAPE:
    lua_pushfstring(L, "%scannot reshape a kjit.array of size %I into a shape of size %I", where,
                    (lua_Integer)e->a, (lua_Integer)e->b);
    break;
  case KE_ROWSHAPE:
    lua_pushfstring(L, "%scannot assign a kjit.array of extent %I to a row of extent %I "
                    "(dimension %d)", where, (lua_Integer)e->a, (lua_Integer)e->b, (int)e->c);
    break;
  default: lua_pushfstring(L, "%sunknown run-time error %d", where, (int)e->kind); break;
  }
}

/* ---- C stack bounds ------------------------------------------------------
**
** Compiled calls compare the stack pointer with a limit and raise "stack
** overflow" below it. The limit depends on the stack the call runs on:
**   - a stack the host declared (kjit_set_stack_limit) and the call runs
**     on: its lowest address plus a margin (a quarter of it, 32 KiB to
**     256 KiB) for the C code that runs between checks (runtime helpers,
**     libm, the dispatcher's frames; kjit_rt_parallel_for alone keeps 16
**     KiB of error records on the stack);
**   - the thread's own stack (pthread_getattr_np, read once per thread):
**     its lowest address plus 256 KiB;
**   - any other stack (a fiber or coroutine stack the host did not
**     declare, or a thread whose stack is unknown): UNDECLARED_ALLOW
**     bytes below the point of the call, no more (compiled frames down
**     to MIN_MARGIN above that, the C code between checks below).
** A declaration that does not contain the stack pointer (the host
** switched stacks without telling) is ignored, so a wrong or stale one
** cannot make compiled code overflow a stack. */
#define THREAD_MARGIN     ((uint64_t)256 << 10)
#define MIN_MARGIN        ((uint64_t)32 << 10)
#define UNDECLARED_ALLOW  ((uint64_t)64 << 10)

static _Thread_local uint64_t thr_lo, thr_hi;   /* this thread's stack; 0: unknown */
static _Thread_local int thr_known;             /* thr_lo/thr_hi were read */
static _Thread_local uint64_t decl_lo, decl_hi, decl_limit;   /* kjit_set_stack_limit */

static void read_thread_stack(uint64_t sp) {
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  thr_known = 1;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  uint64_t lo = (uint64_t)(uintptr_t)addr;
  if (addr == NULL || size <= THREAD_MARGIN || lo + size < lo) return;
  thr_hi = lo + size;
  /* an unlimited stack (ulimit -s unlimited: the bound is the next
  ** mapping, with the kernel's guard gap above it): as before, 1 MiB
  ** below the first compiled call made on it */
  if (size > ((uint64_t)1 << 34) && sp > lo + ((uint64_t)1 << 20) + THREAD_MARGIN &&
      sp <= thr_hi)
    lo = sp - ((uint64_t)1 << 20) - THREAD_MARGIN;
  thr_lo = lo;
}

uint64_t krt_stack_limit(void) {
  char here;
  uint64_t sp = (uint64_t)(uintptr_t)&here;
  if (decl_hi != 0 && sp > decl_lo && sp <= decl_hi) return decl_limit;
  if (!thr_known) read_thread_stack(sp);
  if (thr_hi != 0 && sp > thr_lo && sp <= thr_hi) return thr_lo + THREAD_MARGIN;
  /* a stack kjit knows nothing about: stay close to where we are */
  return sp > UNDECLARED_ALLOW ? sp - (UNDECLARED_ALLOW - MIN_MARGIN) : 1;
}

int krt_set_stack(const void *base, size_t size) {
  uint64_t lo = (uint64_t)(uintptr_t)base;
  if (base == NULL) {
    decl_lo = decl_hi = decl_limit = 0;
    return 0;
  }
  if (size == 0 || lo + size < lo) return -1;
  uint64_t margin = size / 4;
  if (margin < MIN_MARGIN) margin = MIN_MARGIN;
  if (margin > THREAD_MARGIN) margin = THREAD_MARGIN;
  decl_lo = lo;
  decl_hi = lo + size;
  /* a stack smaller than the margin: every compiled call overflows */
  decl_limit = margin < size ? lo + margin : decl_hi;
  return 0;
}
