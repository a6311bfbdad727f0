/*
** runtime/luacall.h: upvalues compiled code assigns, and calls of function
** values, through the Lua API (luacall.c says how and why).
*/
#ifndef KJIT_RUNTIME_LUACALL_H
#define KJIT_RUNTIME_LUACALL_H
#include <stdint.h>
#include "lua.h"
#include "runtime/luavalue.h"
#include "common/compile.h"
#include "host/lua_stack.h"
#include "runtime/callsite.h"

enum { KLC_BOOL = KLV_BOOL, KLC_NIL = KLV_NIL };   /* argument tags past KLV_FLT (luavalue.h) */
enum { KLC_NRES = 0x90 };             /* an open call gave other than one value */
enum { KLC_INNER = 0x100 };
/* kjit_lc_call's nres for an open call whose values go to a compiled
** function's k parameters (ir_type.c kty_callvalue_tocallee): KLC_ADJUST - k */
enum { KLC_ADJUST = -1000 };           /* kjit_lc_call_spread: the inner call's code + this */

/* The compiled form of the Lua function in slot f called with these
** arguments (host/callval.c): returns how many of the arguments it takes,
** with either *spec set (to run by the KlcRunDirect function, nothing
** pushed) or a function pushed (to call in f's place); or -1, nothing
** pushed: call f itself. site: the call's trampoline reference. */
/* f may hold any value. tls: KLC_HOOK_TLS bytes of the hook's own, one
** block per thread (zeroed at first). */
enum { KLC_HOOK_TLS = 49152 };
/* nsite: the call's native cache (NULL: none), which the hook may fill. */
typedef int (*KlcCompiledHook)(lua_State *L, int32_t site, int32_t f, int32_t nargs,
                               const int32_t *tags, const int64_t *bits, const int32_t *slots,
                               const void **spec, void *tls, KlcSite *nsite);
/* Runs *spec with those arguments; pushes its results, returns how many. */
typedef int (*KlcRunDirect)(lua_State *L, const void *spec, int32_t site, const int32_t *tags,
                            const int64_t *bits, const int32_t *slots);
void kjit_lc_set_compiled(KlcCompiledHook fn, KlcRunDirect run);
/* Runs *spec for exactly nres results, each a number in (tags[r],
** bits[r]) or in slot dst + r (host/jit.c kd_run_direct_to). */
typedef int (*KlcRunDirectTo)(lua_State *L, const void *spec, int32_t site, int32_t *tags,
                              int64_t *bits, const int32_t *slots, int32_t nres, int32_t dst);
void kjit_lc_set_direct_to(KlcRunDirectTo run);

/* The native call protocol (luacall.c "Native calls"): a call site's own
** cache of the compiled callee it called last, a private global of the
** caller's code (codegen/cg_callvalue.c), zero at first, filled by the
** hook (host/callval.c, through kjit_lc_fill_site) and read by
** kjit_lc_call before anything else. */
enum { KLC_KINT = 1, KLC_KFLT = 2, KLC_KTABLE = 5 };   /* argument kinds (callval.c kind_of) */
/* result kinds: an integer, a float, a number of either kind (its tag says
** which), a Lua value (a number by its tag, else in a slot above the top);
** KLC_RMAYBE + RINT, RFLT or RNUM: that number or, where its tag is 0,
** nil (KLC_RFALSE set: false), as a T_MAYBE result (a generic for's
** iterator: `return nil, nil` at the end, cg_entry.c: tag 1 an integer,
** 2 a float) */
enum { KLC_RINT = 1, KLC_RFLT = 2, KLC_RNUM = 3, KLC_RLUA = 4, KLC_RMAYBE = 8, KLC_RFALSE = 16 };
/* (KlcGuard, KlcFill and KlcSite, the site's cache and how threads share
** it: runtime/callsite.h) */
/* A native call's Lua result left in the entry's slot `from` (cg_entry.c),
** taken into slot dst as a read's result (kjit_lv_take). */
int32_t kjit_lc_native_take(lua_State *L, int32_t from, int32_t dst, int64_t *out);
/* C stack kept above err->stack_limit (runtime.c krt_stack_limit) for the
** slow path's nested calls after the native ones: KLC_MAXNEST calls through
** lua_call and the interpreter, a few KiB each at most */
#define KLC_NATIVE_ROOM ((uint64_t)1 << 20)
/* Raises the error a native call's callee left in err (compiled code's
** inline native call, cg_callvalue.c): as kjit_lc_call would. */
int32_t kjit_lc_native_raise(lua_State *L, const KErr *err, int32_t tramp);
/* Bumped whenever cached decisions about callees become wrong (a Lua
** state closed, the callee policy changed): a site or inline-cache
** entry of another epoch is empty, and so are the upvalue caches and
** luatable.c's interned "__index" of a state. */
extern uint32_t kjit_lc_epoch;
void kjit_lc_bump_epoch(void);
extern long kjit_lc_native_calls;   /* native calls made (the tests' fact) */
/* Raises the error a compiled callee left in err, as a direct run does
** (host/jit.c kd_direct_error). */
typedef int (*KlcRaise)(lua_State *L, const KErr *err, int32_t site);
void kjit_lc_set_raise(KlcRaise raise);

/* One call of a function value through its trampoline (luacall.c). */
typedef struct KlcCall {
  int32_t tramp, f, nargs;
  const int32_t *tags;
  const int64_t *bits;
  const int32_t *slots;
  int open;      /* the trampoline of an open call: gives the count first */
  int depth;     /* (set by the call: its nesting, -1 too deep) */
  int pushed;    /* (luacall.c only) */
  void *thread;  /* (luacall.c only) */
  KlcSite *nsite;   /* the call's native cache, or NULL (the hook's) */
} KlcCall;
/* This thread's block of the hook's own memory (KlcCompiledHook's tls). */
void *kjit_lc_hook_tls(void);

/* Runs c (any Lua value: the callee compiled where it can be) for
** nresults values (lua_call's), left on the stack; returns how many. */
int32_t kjit_lc_run_call(lua_State *L, KlcCall *c, int nresults);

/* A live upvalue's site cache (luacall.c "Upvalues compiled code
** assigns"): a private global of the compiled code per read or write,
** zero at first, filled by kjit_lc_getupv / kjit_lc_setupv where the
** upvalues are read in place; compiled code then reaches a number in the
** upvalue itself (codegen/cg_callvalue.c), no call. A fill names its Lua
** state and kjit_lc_epoch, as KlcSite does: a closing state bumps the
** epoch (kjit_lc_watch_state), so a later state at the same address never
** meets a filled cache. epoch is also the fill's sequence word (a
** seqlock): a filler claims it (KLC_UPV_BUSY) before writing reg and cl and
** publishes the epoch last (release); compiled code reads epoch, reg, cl
** and epoch again and takes cl only where both reads of epoch agree with
** kjit_lc_epoch, so that two threads filling one cache can never make a
** reader take one state's closure for another's. A cache filled in this
** epoch is not filled again (another state's fill is left: its reads take
** the helper's path). */
enum { KLC_UPV_BUSY = 0xffffffffu };
typedef struct KlcUpvCache {
  const void *reg;   /* the Lua state's global state */
  const void *cl;    /* the closure the registry reference names */
  uint32_t epoch;    /* kjit_lc_epoch when filled (0: empty; KLC_UPV_BUSY: being filled) */
} KlcUpvCache;
/* Makes sure L's state bumps kjit_lc_epoch when it closes (a sentinel's
** __gc in its registry, made once): every cache that names a state by its
** address needs it. */
void kjit_lc_watch_state(lua_State *L);
/* cache: the site's KlcUpvCache, or NULL */
int32_t kjit_lc_getupv(lua_State *L, int32_t ref, int32_t n, int32_t dst, int64_t *out,
                       KlcUpvCache *cache);
void kjit_lc_setupv(lua_State *L, int32_t ref, int32_t n, int32_t vtag, int64_t vbits, int32_t v,
                    KlcUpvCache *cache);
/* nsite, err: the call site's native cache (NULL where the call wants
** other than exactly nres >= 0 values) and the caller's error record. */
int32_t kjit_lc_call(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags,
                     int64_t *bits, int32_t *slots, int32_t nres, int32_t dst, KlcSite *nsite,
                     KErr *err);
int32_t kjit_lc_ctor_spread(lua_State *L, int32_t itramp, int32_t g, int32_t n, int32_t ni,
                            int32_t *tags, int64_t *bits, int32_t *slots, int32_t narr,
                            int32_t nrec, int32_t dst, int64_t *h);
int32_t kjit_lc_ctor_spread_grow(lua_State *L, int32_t itramp, int32_t g, int32_t n, int32_t ni,
                                 int32_t *tags, int64_t *bits, int32_t *slots, int32_t narr,
                                 int32_t nrec, int32_t dst, int64_t *h, int32_t off);
int32_t kjit_lc_call_spread(lua_State *L, int32_t tramp, int32_t f, int32_t n, int32_t itramp,
                            int32_t g, int32_t ni, int32_t *tags, int64_t *bits, int32_t *slots,
                            int32_t nres, int32_t dst, KlcSite *nsite, KErr *err);
int32_t kjit_lc_refindex(lua_State *L, int32_t ref, int32_t ktag, int64_t kbits, int32_t kslot,
                         int32_t dst, int64_t *out);
void kjit_lc_setbuiltin(lua_State *L, int32_t dst, const char *name);
/* lua_call(L, nargs, nresults) of a function value through trampoline
** tramp; inside a coroutine, a yield in it fails located (luayield.c). */
void kjit_lc_callk(lua_State *L, int nargs, int nresults, int32_t tramp);
void kjit_lc_register(void);
#endif
