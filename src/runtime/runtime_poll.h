/*
** runtime_poll.h: stopping runaway compiled code (see runtime_poll.c).
**
** Compiled code calls kjit_rt_poll(err) every KRT_POLL_INTERVAL loop back
** edges or function entries, with the KErr its dispatcher gave it (the
** pointer it received, never a copy of its own: the poll reads err->L, a
** field generators do not mirror). Inside a parallel job (kjit.prange
** chunks, simulated kernel threads) the poll reads its context from the
** OS thread instead (thread-local, set by parallel.c and cudasim.c): the
** Lua thread, NULL on worker threads, and the chain of stop flags.
**
** The contract with a CPU code generator (KT_CPU and KT_SIM; NVPTX code
** never polls):
**   - declare `i32 kjit_rt_poll(%KErr*)` (registered by name in jit.c and
**     cudasim.c) and call it about every KRT_POLL_INTERVAL loop back edges
**     and function entries, and between strip-mined chunks of counted
**     loops (so the inner chunk stays free of calls and vectorizes); where
**     the countdown lives is the generator's choice: a local per loop, or
**     KErr.poll_left (after the mirrored fields; every dispatcher sets it
**     to KRT_POLL_INTERVAL, the run time never reads it; a prange worker's
**     zeroed copy simply polls at once);
**   - pass the KErr* the function received (from its dispatcher, its
**     caller, or kjit_rt_parallel_for for a prange body), never a local
**     copy: outside jobs the poll reads err->L;
**   - nonzero: the record is filled (kind KE_INTERRUPT, KE_LUAERR or
**     KE_STOPPED; line 0, chunk NULL): fail-return at once, as after any
**     run-time error, copying the record out where a local copy is kept
**     (prange bodies); the dispatcher raises it. 0: go on;
**   - nothing else: the poll never longjmps through compiled frames (a
**     hook's error comes back as KE_LUAERR).
*/
#ifndef KJIT_RUNTIME_POLL_H
#define KJIT_RUNTIME_POLL_H
#include <stdint.h>
#include <stdatomic.h>
#include "lua.h"
#include "common/runtime_err.h"

/* KRT_POLL_INTERVAL (common/runtime_err.h): compiled code polls after
** about this many back edges or entries. */

/* The poll: 0 continue; nonzero: err is filled (KE_INTERRUPT, KE_LUAERR,
** KE_STOPPED), return failure now. Registered with the JIT by name. */
int32_t kjit_rt_poll(KErr *err);

/* Polls made on this thread so far: loop work, which the dispatcher
** measures around calls of first-tier code (host/jit.c, tiered compiles). */
extern _Thread_local uint64_t krt_npolls;

/* A parallel job's stop flag; up: the flag of the job the creating
** thread was working for (nested jobs), NULL at the top. */
typedef struct KStop {
  atomic_int flag;
  const struct KStop *up;
} KStop;

/* Thread context inside a parallel job (saved and restored). */
typedef struct KPollCtx {
  lua_State *L;
  const KStop *stop;         /* NULL: not inside a job */
} KPollCtx;

/* Every dispatcher, before calling compiled code for the Lua thread L
** with err (two stores: the call path stays as fast as it was). */
static inline void krt_poll_begin(lua_State *L, KErr *err) {
  err->L = L;
  err->poll_left = KRT_POLL_INTERVAL;
}

/* A worker thread (L NULL: never touches Lua) or the Lua thread itself
** (L) runs compiled code of a job with stop flag s (never NULL). Returns
** the context to restore with krt_poll_job_end. */
KPollCtx krt_poll_job(lua_State *L, const KStop *s);
void krt_poll_job_end(KPollCtx saved);
/* The calling thread's job context ({NULL, NULL} outside jobs). */
KPollCtx krt_poll_here(void);
/* The Lua thread for compiled code that received err: the job's inside a
** job, else err->L (err must then be a dispatcher's full KErr). */
lua_State *krt_poll_lua(const KErr *err);

/* kjit_interrupt / kjit_interrupt_clear: async-signal-safe. */
int krt_interrupt(lua_State *L);
void krt_interrupt_clear(lua_State *L);

/* err becomes a record of kind (every other field cleared). */
void krt_set_err(KErr *err, int kind);

/* The error value on top of L (popped) kept in the registry: err becomes
** KE_LUAERR, raised as is by krt_push_error (or "not enough memory"). */
void krt_keep_error(lua_State *L, KErr *err);

/* KE_LUAERR: frees the kept error value of a record never raised. */
void krt_err_discard(lua_State *L, KErr *e);

/* Copies the fields every generator mirrors (not the tail). */
void krt_err_copy(KErr *dst, const KErr *src);

#endif
