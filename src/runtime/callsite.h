/*
** runtime/callsite.h: a call site's native cache (KlcSite), and how the
** threads that share it read and write it (callsite.c says why this way).
*/
#ifndef KJIT_RUNTIME_CALLSITE_H
#define KJIT_RUNTIME_CALLSITE_H
#include <stdint.h>
#include "lua.h"
#include "common/compile.h"
#include "host/lua_stack.h"

/* The check of a compiled closure's frozen upvalues at each call
** (host/callval.c makes it: a userdata): which ones (mask, and as 0-based
** indices) and the values they held when its code compiled, compared in
** place (lua_stack.h kls_upvalue: a tag and a word each). Never changed
** once made. */
typedef struct KlcGuard {
  uint64_t mask;
  int n;
  uint8_t up[64];
  KlsTValue val[64];
} KlcGuard;

/* One fill of a site (runtime/luacall.c "Native calls"): the compiled
** callee it called last. Written only whole, by kjit_lc_site_publish. */
typedef struct KlcFill {
  const void *fn;        /* the Lua closure (NULL: empty) */
  const void *reg;       /* its Lua state's global state */
  uint32_t epoch;        /* kjit_lc_epoch when filled */
  int32_t nargs;         /* the call's arguments, each of kind kinds[i] */
  int32_t nparams;       /* the entry's argument slots (those past nargs: 0) */
  int32_t nret;          /* the callee's results, each of kind rets[r] */
  uint8_t kinds[KJIT_MAXARGS];
  union {                /* (retw: the kinds read in two words, native_call) */
    uint8_t rets[KJIT_MAXRETS];
    uint64_t retw[KJIT_MAXRETS / 8];
  };
  KEntry const *entryp;  /* the specialization's entry (a tier-up replaces it) */
  int calls;             /* the callee makes compiled calls: needs err->stack_limit */
  const KlcGuard *guard; /* its frozen upvalues' check, or NULL (guardref: its userdata) */
  int guardref;
  int refills;           /* times filled with another closure or kinds (host/
                            callval.c stops at a few: a site that alternates
                            keeps the inline cache's path) */
  int fnref, natref;     /* registry references to the closure and its native
                            function: neither is freed (nor its address reused)
                            while the site names them */
  /* 1 where the caller's code may make the native call itself
  ** (codegen/cg_callvalue.c native_inline): no guard, as many parameters
  ** as arguments, every result a number (KLC_RINT, KLC_RFLT, KLC_RNUM), a
  ** Lua value (KLC_RLUA) or a number or nil (KLC_RMAYBE) */
  int32_t inl;
} __attribute__((aligned(8))) KlcFill;

/* A call site's native cache: a private global of the caller's code
** (codegen/cg_callvalue.c), zero at first, shared by every thread that
** runs that code. */
typedef struct KlcSite {
  uint32_t seq;          /* the sequence word (callsite.c): odd while written */
  KlcFill fill;          /* read under seq; written by kjit_lc_site_publish */
  /* The closure the hook last left to the interpreter for good at this
  ** site (host/callval.c kcv_compiled: one that never compiles), of the
  ** state interp_reg in epoch interp_epoch: its next calls skip the hook
  ** (luacall.c call_lua). No reference is kept: another closure at a
  ** reused address runs interpreted here, which computes what Lua does,
  ** only slower. Written under seq too (kjit_lc_site_interp), read
  ** whole (kjit_lc_site_interp_is). */
  const void *interp;
  const void *interp_reg;
  uint32_t interp_epoch;
  /* Released with the caller's code (host/callval.c kcv_code_freed): the
  ** registered sites of live code, linked through next while linked; the
  ** main thread of the references' state, the call's trampoline. Written
  ** under callval.c's sites_mu (linked read atomically: 0 not yet, 1
  ** registered, -1 never filled). */
  lua_State *L;
  struct KlcSite *next;
  int linked;
  int32_t tramp;
} KlcSite;

/* Reading a site: q = kjit_lc_site_begin(s), the fields read with
** KLC_FILL, then kjit_lc_site_still(s, q): only where it holds were they
** all of one fill, which may then be used (its guard's values read, its
** entry called). */
static inline uint32_t kjit_lc_site_begin(const KlcSite *s) {
  return __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
}
#define KLC_FILL(s, field) __atomic_load_n(&(s)->fill.field, __ATOMIC_RELAXED)
static inline int kjit_lc_site_still(const KlcSite *s, uint32_t q) {
  __atomic_thread_fence(__ATOMIC_ACQUIRE);   /* (the fields' loads before the word's) */
  return (q & 1) == 0 && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == q;
}
/* A whole fill of s copied into *out; returns the sequence word it was
** read at (even), for kjit_lc_site_publish. Waits out a writer. */
uint32_t kjit_lc_site_snapshot(const KlcSite *s, KlcFill *out);
/* Publishes fill f at s where s is still as kjit_lc_site_snapshot read
** it at q: 1; else (another writer came first) 0, s unchanged. */
int kjit_lc_site_publish(KlcSite *s, const KlcFill *f, uint32_t q);
/* Marks closure fn of L's state as left interpreted at site s (NULL: none). */
void kjit_lc_site_interp(lua_State *L, KlcSite *s, const void *fn);
/* Is fn of the state reg the closure s left interpreted, in epoch ep?
** (s NULL: no) */
int kjit_lc_site_interp_is(const KlcSite *s, const void *fn, const void *reg, uint32_t ep);
#endif
