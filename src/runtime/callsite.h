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
** callee it called last, of the site's owner. */
typedef struct KlcFill {
  const void *fn;        /* the Lua closure (NULL: empty) */
  const void *reg;       /* its Lua state's global state */
  uint32_t epoch;        /* kjit_lc_epoch when filled */
  int32_t nargs;         /* the call's arguments, each of kind kinds[i] */
  int32_t nparams;       /* the entry's argument slots (those past nargs: 0) */
  int32_t nret;          /* the callee's results, each of kind rets[r] */
  uint8_t kinds[KJIT_MAXARGS];
  uint8_t rets[KJIT_MAXRETS];
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
} KlcFill;

/* A call site's native cache: a private global of the caller's code
** (codegen/cg_callvalue.c), zero at first, read by every thread that
** runs that code and written only by the threads of one Lua state, its
** owner (callsite.c says why). */
typedef struct KlcSite {
  const void *owner;     /* the owner's global state (NULL: none yet), set once */
  KlcFill fill;          /* read and written by the owner's thread only */
  /* A second callee of the site (another closure than fill's: a method
  ** call over objects of two classes, ray's `c:intersect` over spheres
  ** and groups), filled as fill is (host/callval.c fill_site) and read
  ** by the helper where fill's closure is not the callee (luacall.c
  ** native_call); compiled code's inline path reads fill only. */
  KlcFill fill2;
  /* The closure the hook last left to the interpreter for good at this
  ** site (host/callval.c kcv_compiled: one that never compiles), of the
  ** state interp_reg in epoch interp_epoch: its next calls skip the hook
  ** (luacall.c call_lua). No reference is kept: another closure at a
  ** reused address runs interpreted here, which computes what Lua does,
  ** only slower. Written by the owner only (kjit_lc_site_interp). */
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

/* Is the Lua state of global state reg the owner of s (callsite.c)? Any
** thread may ask; only an owner's thread then reads or writes s's fill
** and its interp mark. */
static inline int kjit_lc_site_mine(const KlcSite *s, const void *reg) {
  return __atomic_load_n(&s->owner, __ATOMIC_RELAXED) == reg;
}
/* Is reg the owner of s? Makes it the owner where s has none. */
int kjit_lc_site_own(KlcSite *s, const void *reg);
/* Marks closure fn of L's state as left interpreted at site s (NULL: none),
** where that state owns s (or comes to own it). */
void kjit_lc_site_interp(lua_State *L, KlcSite *s, const void *fn);
/* Is fn of the state reg the closure s left interpreted, in epoch ep?
** (s NULL: no) */
int kjit_lc_site_interp_is(const KlcSite *s, const void *fn, const void *reg, uint32_t ep);
#endif
