/*
** runtime_poll.h: stopping runaway compiled code (see runtime_poll.c).
**
** Compiled code calls kjit_rt_poll(err) every KRT_POLL_INTERVAL loop back
** edges or function entries. The poll reads its context from the calling
** OS thread (thread-local), set by the dispatchers around every call of
** compiled code: the Lua thread the code runs for, and the stop flags of
** the parallel jobs (kjit.prange, threaded simulator blocks) the thread
** works for. It never reads the KErr beyond the fields every code
** generator mirrors, because generated code may pass a copy of its own.
*/
#ifndef KJIT_RUNTIME_POLL_H
#define KJIT_RUNTIME_POLL_H
#include <stdint.h>
#include <stdatomic.h>
#include "lua.h"
#include "compile.h"

/* Compiled code polls after about this many back edges or entries. */
#define KRT_POLL_INTERVAL ((int64_t)1 << 16)

/* The poll: 0 continue; nonzero: err is filled (KE_INTERRUPT, KE_LUAERR,
** KE_STOPPED), return failure now. Registered with the JIT by name. */
int32_t kjit_rt_poll(KErr *err);

/* A parallel job's stop flag; up: the flag of the job the creating
** thread was working for (nested jobs), NULL at the top. */
typedef struct KStop {
  atomic_int flag;
  const struct KStop *up;
} KStop;

/* Saved thread context, restored by krt_poll_end. */
typedef struct KPollCtx {
  lua_State *L;
  const KStop *stop;
} KPollCtx;

/* Dispatcher on the Lua thread L: compiled code about to run for L.
** Also sets err->poll_left. Returns the context to restore. */
KPollCtx krt_poll_begin(lua_State *L, KErr *err);
/* A worker thread (L NULL: never touches Lua) or the Lua thread itself
** (L: the Lua thread) runs compiled code of a job with stop flag s. */
KPollCtx krt_poll_job(lua_State *L, const KStop *s);
void krt_poll_end(KPollCtx saved);
/* The calling thread's context (L NULL off a Lua thread). */
KPollCtx krt_poll_here(void);

/* kjit_interrupt / kjit_interrupt_clear: async-signal-safe. */
int krt_interrupt(lua_State *L);
void krt_interrupt_clear(lua_State *L);

/* KE_LUAERR: frees the kept error value of a record never raised. */
void krt_err_discard(lua_State *L, KErr *e);

/* Copies the fields every generator mirrors (not the tail). */
void krt_err_copy(KErr *dst, const KErr *src);

#endif
