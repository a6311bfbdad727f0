/*
** jit.h: the dispatcher. kjit.jit(fn [, opts]) objects, their
** specialization cache, and the fast call path.
*/
#ifndef KJIT_JIT_H
#define KJIT_JIT_H
#include "lua.h"

/* Registers kjit.jit and friends into the module table at the top. */
void kd_open(lua_State *L);

/* Disk cache, load only (process-wide): while on, a compile that finds no
** code in the disk cache raises instead of compiling. Returns the old
** setting. (kjit_ext.h's cache_load_only.) */
int kd_cache_load_only(int on);

/* ---- For the C API (capi.c) ------------------------------------------ */
#include "common/compile.h"

/* What a caller from C needs to call one compiled specialization. */
typedef struct KdSpecInfo {
  int32_t (*entry)(int64_t *args, int64_t *rets, KErr *err); /* KEntry */
  int nargs;                    /* slots the entry reads (= parameters) */
  int nsig;                     /* arguments in the signature */
  Type args[KJIT_MAXARGS];      /* T_NIL, T_BOOL, T_INT, T_F64, T_BUF */
  int nret;
  Type rets[KJIT_MAXRETS];      /* kind; T_MAYBE: .sub is the number's
                                   kind, .dtype is 1 if falsy means nil */
  int calls;                    /* makes compiled calls: pass the stack limit */
  const int *dead;              /* set when the owning jit object's __gc ran
                                   (the entry's code is freed then) */
  int arrays;                   /* makes or returns arrays: only Lua calls it
                                   (jit.c's call_arrays) */
  int dyncount;                 /* returns give different numbers of values:
                                   the call's count is rets[KJIT_RETCOUNT] */
} KdSpecInfo;

/* Pushes a new kjit.jit object for the value at idx: a Lua function (with
** the default options) or a kjit.jit object (its function and options).
** The new object is private to the caller, so no script can drop its
** specializations (f:inspect recompiles). Raises a Lua error otherwise. */
void kd_push_private(lua_State *L, int idx);
/* The same, for a plain Lua function, with these options instead of
** kjit.jit's defaults (host/callval.c: the caller's; refuse3). */
void kd_push_private_opts(lua_State *L, int idx, int boundscheck, int fastmath, int opt);

/* Compiles the jit object at objidx for a signature text, exactly as
** f:compile(sig), and describes the specialization in *info. The code
** lives as long as the jit object. Raises Lua errors. */
void kd_compile_sig(lua_State *L, int objidx, const char *sig, KdSpecInfo *info);
/* The same, for a signature whose `record` arguments take the layouts
** recs[0..nrecs) in order (kjit_compile_records). */
struct kjit_record;
void kd_compile_sig_records(lua_State *L, int objidx, const char *sig,
                            const struct kjit_record *const *recs, int nrecs, KdSpecInfo *info);

/* Describes the last specialization of the jit object at objidx (for
** kjit_load: its only one) in *info; raises "who: ..." when the C API
** cannot call it. */
void kd_spec_info(lua_State *L, int objidx, const char *who, KdSpecInfo *info);

/* For host/callval.c (a Lua function value called from compiled code): the
** specialization of the jit object at objidx for the n values at argbase
** (found, or compiled now: a refusal raises, as a call would), pushed as
** f:native's function. Returns how many of the values it takes (trailing
** nils left out, as a call does), or -1 with nothing pushed when nothing
** may be compiled: KJIT_DISABLE_JIT, a finalized or loaded object, or one
** that has maxspecs specializations already. */
int kd_native_for(lua_State *L, int objidx, int argbase, int n, int maxspecs);
/* How many specializations this process retired: a table they read frozen
** became live (ir/ir_live.c; kjit.testing.callees's seventh result). */
long kd_retired_specs(void);
/* The specialization of the native function at idx when kd_run_direct can
** run it (no arrays made or returned, no function or record arguments),
** else NULL. */
const void *kd_native_direct(lua_State *L, int idx);
/* Runs that specialization on arguments given as (tag, bits, slot)
** (runtime/luavalue.h; those of its signature, of its types), for the call
** whose trampoline is site (where error(msg, 2) points); pushes its
** results and returns how many, or raises its error. */
int kd_run_direct(lua_State *L, const void *spec, int32_t site, const int32_t *tags,
                  const int64_t *bits, const int32_t *slots);
/* The same for exactly nres results taken as luacall.c takes a call's
** (each a number in (tags[r], bits[r]), else in slot dst + r; nil past
** the callee's own); returns nres. The arguments are read first, so
** tags and bits may be the arguments' arrays. */
int kd_run_direct_to(lua_State *L, const void *spec, int32_t site, int32_t *tags,
                     int64_t *bits, const int32_t *slots, int32_t nres, int32_t dst);
/* The native call protocol (runtime/luacall.c "Native calls"): fills the
** parts of site s that come from the specialization (its entry, its
** parameters, its results' kinds) and returns 1 when a call site may call
** it natively with nargs arguments: every argument a number or a table,
** every result a number or a Lua value, one count of results; else 0. */
struct KlcFill;
int kd_native_site(const void *spec, int nargs, struct KlcFill *s);
/* Raises the error a direct run's entry left in err (error(msg, 2) at the
** call's line: site, its trampoline). */
int kd_direct_error(lua_State *L, const KErr *err, int32_t site);

#endif
