/*
** runtime/luacall.c: functions as values in compiled code (issue 29 item
** 2): upvalues that compiled code assigns, and calls of function values
** known only at run time, through the Lua API.
**
** Upvalues compiled code assigns. An upvalue that compiled code writes
** (`seed = (seed * a + c) % m` in a function compiled code calls) is not
** frozen: compiled code reads and writes the real upvalue of the real
** closure at every use, through lua_getupvalue / lua_setupvalue on the
** closure, which the typer keeps in the registry (ir_type.c's live
** upvalues: a reference made when the function compiles, released with
** its code, like live tables': ir_type.h kty_ref). Since the upvalue itself is shared by
** every closure over it, interpreted and compiled code see each other's
** writes in any order, as Lua's semantics say. Where the upvalues are
** read in place (lua_stack.h kls_upvalues_on), each read or write site
** keeps the closure's address in a cache of its own (KlcUpvCache), which
** the helpers below fill, and compiled code reads or writes a number
** through closure->upvals[n]->v itself (cg_callvalue.c): no registry
** lookup, no call (array3d's iterator reads two upvalues a turn, 100
** instructions each through the helper). The closure's address is
** constant (the registry keeps it; Lua does not move objects); its UpVal
** and that UpVal's value pointer are read at every use, so that
** lua_upvaluejoin, the upvalue's closing and a stack reallocation (which
** moves an open upvalue's value) are all seen.
**
** Calls of function values. A function read from a table, passed as an
** argument, or held by an upvalue compiled code assigns (a Lua value,
** T_LUA: its slot on the Lua stack, luavalue.c) is called with lua_call:
** the function and its arguments are pushed, the results come back like
** values read from a table (numbers as (tag, bits), anything else into
** the caller's result slots). The call goes through a trampoline made for
** its call site when it compiled (ir_type.c's trampoline: a Lua function
** of the caller's chunk whose call instruction stands at the call's line
** and names the callee as the source does), so that the level above the
** callee is a Lua frame at the user's line: luaL_error's position,
** luaL_argerror's "bad argument #1 to 'concat'" and error(msg, 2) say
** what they say interpreted, where a call from C would give none. A Lua error raised by the callee longjmps
** through the compiled frames as any helper's may (luavalue.c's head says
** why that is safe). Calling a value that is not a function and has no
** __call is foreseen: KLV_BADA comes back, and compiled code raises Lua's
** "attempt to call a nil value (field 'f')" at the user's line.
**
** Lua functions called through values run compiled. run_call asks
** host/callval.c (through a hook, since the run time does not include the
** compiler) for the compiled form of a Lua function about to be called:
** a specialization for the arguments' types, run directly from here (no
** Lua frame: error(msg, 2) is pointed at the call's line by the
** trampoline's position, host/jit.c kd_run_direct), or, where it makes
** arrays, its native function in the function's place under the same
** trampoline. C functions, callables with __call, and callees kjit
** refuses are called as they are, under the trampoline. A call site that
** ran a compiled callee directly calls it natively next time, before any
** of this ("Native calls" below).
**
** Nesting. Each call from compiled code into Lua is a C call the VM
** counts toward its C-stack limit (LUAI_MAXCCALLS, 200 in every 5.4
** release), where an interpreted Lua-to-Lua call is not: a recursion
** through compiled callees would fail with "C stack overflow" where the
** interpreter goes on. So once KLC_MAXNEST such calls are open on this
** thread, the callee runs interpreted (its own calls nest as the
** interpreter's do, to Lua's "stack overflow"). The open calls are kept as
** their C frame addresses: a Lua error longjmps past a call without
** closing it, so an entry whose frame lies below the current one is dead
** and dropped (the C stack grows down; a coroutine runs on its resumer's
** C stack in 5.4).
*/
#include "runtime/luacall.h"
#include <string.h>
#include "runtime/luavalue.h"
#include "runtime/luatfor.h"
#include "runtime/luaclosure.h"
#include "runtime/luacell.h"
#include "lauxlib.h"
#include "backend/cpu.h"
#include "host/lua_stack.h"
#include "runtime/runtime.h"

/* Arguments are (tag, bits, slot) triples (luavalue.h's KLV_INSLOT, KLV_INT,
** KLV_FLT; luacall.h's KLC_BOOL, KLC_NIL), pushed by kjit_lv_push; results
** are taken by kjit_lv_take (luavalue.c's rule). */

/* The closure at registry reference ref, pushed, its address returned when
** its upvalues may be read and written in place (lua_stack.h's mirrors,
** kls_upvalues_on), else NULL. The registry keeps it alive. */
static const void *push_closure(lua_State *L, int32_t ref) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  if (!kls_upvalues_on(L)) return NULL;
  const KlsTValue *v = &((const KlsState *)(void *)L)->top[-1].val;
  return v->tt_ == KLS_LCL ? v->value_.gc : NULL;
}

/* The closure push_closure pushed, popped (it sits above the C function's
** frame: nothing to close). */
static void pop_closure(lua_State *L) { ((KlsState *)(void *)L)->top--; }

void kjit_lc_bump_epoch(void) {
  /* (0 marks an empty upvalue cache, KLC_UPV_BUSY a claimed one: neither is
  ** an epoch, and neither is ever stored, even for a moment, so that no
  ** reader can take a cache being filled for one filled in this epoch) */
  uint32_t e = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED), next;
  do {
    next = e + 1;
    while (next == 0 || next == KLC_UPV_BUSY) next++;
  } while (!__atomic_compare_exchange_n(&kjit_lc_epoch, &e, next, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
}

/* The state sentinel's finalizer: a closing state bumps the epoch. */
static int state_closed(lua_State *L) {
  (void)L;
  kjit_lc_bump_epoch();
  return 0;
}

void kjit_lc_watch_state(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, "kjit.lc.sentinel") == LUA_TNIL) {
    lua_newuserdatauv(L, 1, 0);   /* closed with the state: its __gc bumps the epoch */
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, state_closed);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "kjit.lc.sentinel");
  }
  lua_pop(L, 1);
}

/* The site's cache filled with closure cl of L's state (upvalues in place),
** as luacall.h's KlcUpvCache says: claimed, written, the epoch published
** last. A cache filled in this epoch, or being filled, is left. */
static void fill_upv(lua_State *L, KlcUpvCache *cache, const void *cl) {
  if (cache == NULL || cl == NULL) return;
  uint32_t ep = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  uint32_t held = __atomic_load_n(&cache->epoch, __ATOMIC_ACQUIRE);
  if (held == ep || held == KLC_UPV_BUSY) return;
  kjit_lc_watch_state(L);   /* (before the claim: it may raise) */
  if (!__atomic_compare_exchange_n(&cache->epoch, &held, (uint32_t)KLC_UPV_BUSY, 0,
                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return;   /* another thread's fill */
  /* the claim is seen before the words change (a seqlock writer's fence:
  ** the acquire above orders later loads, not these stores) */
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&cache->cl, cl, __ATOMIC_RELAXED);
  __atomic_store_n(&cache->reg, ((const KlsState *)(void *)L)->l_G, __ATOMIC_RELAXED);
  __atomic_store_n(&cache->epoch, ep, __ATOMIC_RELEASE);
}

/* Upvalue n (1-based) of the closure at registry reference ref. A number
** is read in place (the iterator of a generic for keeping its position in
** upvalues reads them every turn: a quarter of its call through the API). */
int32_t kjit_lc_getupv(lua_State *L, int32_t ref, int32_t n, int32_t dst, int64_t *out,
                       KlcUpvCache *cache) {
  const void *cl = push_closure(L, ref);
  fill_upv(L, cache, cl);
  if (cl != NULL) {
    const KlsTValue *v = kls_upvalue(cl, n - 1);
    if (v->tt_ == KLS_INT || v->tt_ == KLS_FLT) {
      pop_closure(L);
      memcpy(out, &v->value_, sizeof *out);
      return v->tt_ == KLS_INT ? KLV_INT : KLV_FLT;
    }
  }
  if (lua_getupvalue(L, -1, n) == NULL) lua_pushnil(L);   /* (cannot happen) */
  lua_remove(L, -2);
  return kjit_lv_take(L, dst, out);
}

/* A number is written in place (no barrier: not collectable). */
void kjit_lc_setupv(lua_State *L, int32_t ref, int32_t n, int32_t vtag, int64_t vbits,
                    int32_t v, KlcUpvCache *cache) {
  const void *cl = push_closure(L, ref);
  fill_upv(L, cache, cl);
  if (cl != NULL && (vtag == KLV_INT || vtag == KLV_FLT)) {
    kls_upvalue_set_number(cl, n - 1, vtag == KLV_INT ? KLS_INT : KLS_FLT, vbits);
    pop_closure(L);
    return;
  }
  kjit_lv_push(L, vtag, vbits, v);
  if (lua_setupvalue(L, -2, n) == NULL) lua_pop(L, 1);
  lua_pop(L, 1);
}

/* Is the value at f callable: a function, or a value whose __call is, as
** Lua follows them (luaD_tryfuncTM: a __call's own __call, raw)? Where it
** is not, the value that cannot be called (the last __call) replaces f's,
** so that the caller's message is Lua's: the callee named as the source
** names it, the type the last value's ("attempt to call a number value
** (upvalue 'C')" for a table whose __call is 42). A chain longer than
** KLC_MAXCALLTM is left to Lua's own call. */
enum { KLC_MAXCALLTM = 64 };
static int callable(lua_State *L, int32_t f) {
  if (lua_type(L, f) == LUA_TFUNCTION) return 1;
  lua_pushvalue(L, f);
  for (int depth = 0; depth < KLC_MAXCALLTM; depth++) {
    if (luaL_getmetafield(L, -1, "__call") == LUA_TNIL) {
      if (depth > 0) lua_replace(L, f);
      else lua_pop(L, 1);
      return 0;
    }
    lua_remove(L, -2);
    if (lua_type(L, -1) == LUA_TFUNCTION) break;
  }
  lua_pop(L, 1);
  return 1;
}

/* ---- The callee: compiled where it can be --------------------------------- */

static KlcCompiledHook compiled_hook;
static KlcRunDirect run_direct;
static KlcRunDirectTo run_direct_to;

void kjit_lc_set_direct_to(KlcRunDirectTo run) { run_direct_to = run; }

void kjit_lc_set_compiled(KlcCompiledHook fn, KlcRunDirect run) {
  compiled_hook = fn;
  run_direct = run;
}

enum { KLC_MAXNEST = 120 };   /* well under LUAI_MAXCCALLS (200): see the head */

/* This thread's open calls, and the hook's own per-thread memory (its
** inline cache): one thread-local block, reached once per call. */
typedef struct KlcThread {
  int nnest;
  const char *nest[KLC_MAXNEST];
  _Alignas(16) unsigned char hook[KLC_HOOK_TLS];
} KlcThread;
static _Thread_local KlcThread thr;

/* Opens call c at C frame `here`: its depth (-1 when too deep: the callee
** runs interpreted) and this thread's block into c. */
static void nest_open(KlcCall *c, const char *here) {
  KlcThread *t = &thr;
  c->thread = t;
  while (t->nnest > 0 && t->nest[t->nnest - 1] <= here) t->nnest--;   /* left by a longjmp */
  if (t->nnest >= KLC_MAXNEST) { c->depth = -1; return; }
  t->nest[t->nnest] = here;
  c->depth = t->nnest++;
}

void *kjit_lc_hook_tls(void) { return thr.hook; }

static void nest_close(const KlcCall *c) {
  if (c->depth >= 0) ((KlcThread *)c->thread)->nnest = c->depth;
}

/* A C function called through a method call's trampoline: the trampoline
** on top is replaced by the one for C functions it keeps as its first
** upvalue, __kjit_mc (ir_type.c method_fix: luaL_argerror's count as for a
** method). Other trampolines have no upvalue of that name. (Only where
** the callee is a C function: a Lua method pays nothing here.) */
static void method_tramp(lua_State *L) {
  const char *n = lua_getupvalue(L, -1, 1);
  if (n == NULL) return;
  if (strcmp(n, "__kjit_mc") == 0) lua_replace(L, -2);
  else lua_pop(L, 1);
}

/* Runs call c for nresults values (lua_call's count), which it leaves from
** base + 1 on (base: the top now) as its trampoline leaves them: an open
** call's count first. The one place a call is pushed: the callee runs compiled when
** the hook gives its compiled form (directly, no Lua frame of its own, or
** a native function under the trampoline), else the value itself under
** the trampoline. */
static void run_call(lua_State *L, int base, const KlcCall *c, int nresults) {
  int n = -1;
  const void *spec = NULL;
  if (c->depth >= 0 && compiled_hook != NULL)
    n = compiled_hook(L, c->tramp, c->f, c->nargs, c->tags, c->bits, c->slots, &spec,
                      ((KlcThread *)c->thread)->hook, c->nsite);
  if (n >= 0 && spec != NULL) {
    int got = run_direct(L, spec, c->tramp, c->tags, c->bits, c->slots);
    if (c->open) {
      lua_pushinteger(L, got);
      lua_insert(L, base + 1);
    }
    if (nresults != LUA_MULTRET) lua_settop(L, base + nresults);
    return;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->tramp);
  if (n >= 0) lua_insert(L, -2);   /* under the native function the hook pushed */
  else {
    if (lua_iscfunction(L, c->f)) method_tramp(L);
    lua_pushvalue(L, c->f);
    n = c->nargs;
  }
  for (int i = 0; i < n; i++) kjit_lv_push(L, c->tags[i], c->bits[i], c->slots[i]);
  kjit_lc_callk(L, n + 1, nresults, c->tramp);   /* (a yield in it: luayield.c) */
}

int32_t kjit_lc_run_call(lua_State *L, KlcCall *c, int nresults) {
  int base = lua_gettop(L);
  nest_open(c, __builtin_frame_address(0));
  run_call(L, base, c, nresults);
  nest_close(c);
  return lua_gettop(L) - base;
}

/* Calls c for nres results (-1: an open call, exactly one value) and
** takes them; c->pushed: trampoline, function and c->nargs arguments stand
** above base already. */
static int32_t finish(lua_State *L, int base, const KlcCall *c, int32_t nres, int32_t *tags,
                      int64_t *bits, int32_t dst) {
#define CALL(nr) \
  (c->pushed ? kjit_lc_callk(L, c->nargs + 1, (nr), c->tramp) : run_call(L, base, c, (nr)))
  if (nres <= KLC_ADJUST) {   /* to a compiled function's parameters: exactly that many */
    int k = KLC_ADJUST - nres;
    CALL(k + 1);   /* (the trampoline of an open call: count first) */
    lua_remove(L, base + 1);
    for (int r = k - 1; r >= 0; r--) tags[r] = kjit_lv_take(L, dst + r, &bits[r]);
    return KLV_OK;
  }
  if (nres < -1) {   /* to a return: up to -nres - 1 values, nil after them, how many in
                     ** bits[that] (cg_vararg.c) */
    int cap = -nres - 1;
    CALL(LUA_MULTRET);
    int got = lua_gettop(L) - base - 1;
    if (got > cap) { lua_settop(L, base); return KLC_NRES; }
    lua_settop(L, base + 1 + cap);
    lua_remove(L, base + 1);
    for (int r = cap - 1; r >= 0; r--) tags[r] = kjit_lv_take(L, dst + r, &bits[r]);
    bits[cap] = got;
    return KLV_OK;
  }
  if (nres < 0) {   /* an open call: exactly one value passed on (after the count) */
    CALL(LUA_MULTRET);
    if (lua_gettop(L) - base != 2) { lua_settop(L, base); return KLC_NRES; }
    lua_remove(L, base + 1);
    nres = 1;
  } else CALL(nres);
#undef CALL
  for (int r = nres - 1; r >= 0; r--) tags[r] = kjit_lv_take(L, dst + r, &bits[r]);
  return KLV_OK;
}

/* Is the Lua closure in slot f the one site s left to the interpreter
** (kjit_lc_site_interp), in this state and epoch? (kls_on holds.) */
static int site_interp(lua_State *L, int32_t f, const KlcSite *s) {
  const KlsState *st = (const KlsState *)(void *)L;
  return kjit_lc_site_interp_is(s, st->ci->func[f].val.value_.gc, st->l_G,
                                __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED));
}

/* Calls the value in slot f with nargs arguments (tags[i], bits[i],
** slots[i]) for nres results, through trampoline tramp: result r goes to
** slot dst + r, or, a number, into (tags[r], bits[r]) as a read's result.
** nres -1: an open call, which must give exactly one value. Returns
** KLV_OK, KLV_BADA when f is neither a function nor has a __call, or
** KLC_NRES. */
/* The common call (a Lua function value, exactly nres results wanted) in
** one go, without the pushes and pops of the general path: the callee's
** compiled form runs directly, its results going straight to (tags, bits)
** or their slots (kd_run_direct_to); otherwise it is called as run_call
** calls it, under its trampoline. What it computes is what finish
** computes for such a call (the same hook, the same nesting rule). */
static int32_t call_lua(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags,
                        int64_t *bits, int32_t *slots, int32_t nres, int32_t dst,
                        KlcSite *nsite) {
  KlcCall c = { tramp, f, nargs, tags, bits, slots, 0, 0, 0, NULL, nsite };
  nest_open(&c, __builtin_frame_address(0));
  int n = -1;
  const void *spec = NULL;
  /* (a callee this site left interpreted: the hook's answer known, about
  ** 100 instructions a call saved) */
  if (c.depth >= 0 && compiled_hook != NULL && !site_interp(L, f, nsite))
    n = compiled_hook(L, tramp, f, nargs, tags, bits, slots, &spec, ((KlcThread *)c.thread)->hook,
                      nsite);
  if (n >= 0 && spec != NULL) {
    run_direct_to(L, spec, tramp, tags, bits, slots, nres, dst);
    nest_close(&c);
    return KLV_OK;
  }
  luaL_checkstack(L, nargs + nres + LUA_MINSTACK, "kjit: too many arguments in a call");
  lua_rawgeti(L, LUA_REGISTRYINDEX, tramp);
  if (n >= 0) lua_insert(L, -2);   /* under the native function the hook pushed */
  else {
    if (lua_iscfunction(L, f)) method_tramp(L);
    lua_pushvalue(L, f);
    n = nargs;
  }
  for (int i = 0; i < n; i++) kjit_lv_push(L, tags[i], bits[i], slots[i]);
  kjit_lc_callk(L, n + 1, nres, tramp);
  for (int r = nres - 1; r >= 0; r--) tags[r] = kjit_lv_take(L, dst + r, &bits[r]);
  nest_close(&c);
  return KLV_OK;
}

/* ---- Native calls ------------------------------------------------------------
**
** The native call protocol (issue 29). A call site of a function value in
** compiled code has a KlcSite of its own (a private global of the caller's
** code, cg_callvalue.c): the closure it called last, when that closure ran
** as a compiled specialization that takes only numbers and tables and
** gives numbers or Lua values (KLC_RLUA: left in the entry's slot), with
** the specialization's entry and the argument
** kinds it was made for, and a second such closure (KlcSite.fill2: a
** site over objects of two classes keeps both; native_second tries it
** where the first missed). kjit_lc_call tries it first (native_call): when
** the value in the callee's slot is that very closure, of the same Lua
** state and epoch, and the arguments are of those kinds, the entry is
** called at once with the arguments as its slots (numbers as their bits,
** a table as its stack slot, which the caller's frame holds) and the
** caller's own error record. No Lua stack push, no inline-cache hash, no
** generic direct run; what runs is what the slow path would run for the
** same call (it filled the site: host/callval.c kcv_compiled), so the
** answers are the same. Not only calls for exactly nres values: an open
** call passing on its one value, a return of a call and an open call
** adjusted to a compiled callee's parameters have sites too, and call
** natively where the callee's fixed count of results serves them
** (native_open: nil after them, as lua_call pads them); the slow path
** keeps what would raise kjit's count errors.
**
** When Lua would see another function, the site misses and the slow path
** runs (and refills it):
**   - a method replaced, a method put on the object, another metatable,
**     __index changed, a global or upvalue reassigned: the value compiled
**     code calls is read as before (the method cache, the global, the
**     upvalue), so the slot holds another closure, whose address differs
**     from the site's: the site keeps its closure alive (fnref), so the
**     address is not reused while the site names it;
**   - a callee with frozen upvalues (their values compiled in): the site
**     checks them in place at each call as the inline cache does (its
**     guard: callval.c guard_ok), so that an upvalue another function
**     assigned sends the call to the slow path, which compiles anew;
**   - a Lua state closed, or the callee policy changed: the epoch.
** Errors: the callee fills the caller's error record and returns non-zero;
** it is raised at once as a direct run raises it (jit.c kd_direct_error:
** the callee's file:line, error(msg, 2) at the call's line), a longjmp
** through the compiled frames as any helper's. Interrupts: the callee
** polls with the caller's record, whose poll context the caller's
** dispatcher set. Nesting: a native call takes no Lua C-call count (no
** lua_call) and is not counted by nest_open; it runs while the C stack
** has KLC_NATIVE_ROOM above the limit compiled calls check
** (err->stack_limit, set here as a dispatcher sets it, so that a callee's
** own compiled calls check it too); below that the slow path runs, which
** nests up to KLC_MAXNEST and then runs the callee interpreted, so that
** deep recursion ends in Lua's own "stack overflow".
** Frames: the callee opens its own Lua frame above the caller's top only
** where it holds Lua values (cg_lua.c), and closes it before it returns;
** no CallInfo is made, as in every direct run (a traceback through such a
** callee shows the caller's line, the call, not the callee's). */

uint32_t kjit_lc_epoch = 1;
long kjit_lc_native_calls;   /* native calls made (tests: kjit.testing.callees) */
static KlcRaise raise_error;
void kjit_lc_set_raise(KlcRaise raise) { raise_error = raise; }

enum { KLC_MISS = -1 };
_Static_assert((int)KLV_INT == (int)KLC_KINT && (int)KLV_FLT == (int)KLC_KFLT && KLV_INSLOT == 0,
               "a number's tag is its kind (native_call)");
_Static_assert((int)KLC_KTABLE > (int)KLV_NIL, "no value tag is a table's kind (native_call)");
/* (KLC_NATIVE_ROOM: luacall.h, which compiled code's inline native call
** checks too) */

int32_t kjit_lc_native_raise(lua_State *L, const KErr *err, int32_t tramp) {
  return raise_error(L, err, tramp);
}

int32_t kjit_lc_native_take(lua_State *L, int32_t from, int32_t dst, int64_t *out) {
  lua_pushvalue(L, from);
  return kjit_lv_take(L, dst, out);
}

/* The call through fill sf of site s (s->fill or s->fill2). (Inlined into
** each of its callers: kjit_lc_call's common call for exactly nres >= 0
** values through the first fill, where it was 15 instructions a call
** cheaper than with native_open's counts folded in, and 9 than with the
** choice of fill folded in; native_second; native_open.) */
static inline __attribute__((always_inline)) int32_t
native_call(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags, int64_t *bits,
            const int32_t *slots, int32_t nres, int32_t dst, KlcSite *s, const KlcFill *sf,
            KErr *err) {
  const KlsState *st = (const KlsState *)(void *)L;
  const KlsStackValue *fr = st->ci->func;
  const KlsTValue *fv = &fr[f].val;
  /* (the fill read only where this state owns the site, whose fills only
  ** this thread writes meanwhile: callsite.c) */
  if (!kjit_lc_site_mine(s, st->l_G)) return KLC_MISS;
  /* (its fill's state is its owner's: no compare of sf->reg) */
  if (fv->tt_ != KLS_LCL || fv->value_.gc != sf->fn ||
      sf->epoch != __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED) || nargs != sf->nargs)
    return KLC_MISS;
  if (nres > sf->nret) return KLC_MISS;   /* (nres >= 0: native_open's count) */
  int64_t a[KJIT_MAXARGS + 1];
  for (int i = 0; i < nargs; i++) {
    /* the argument's kind (a number's tag is its kind, KLV_INT = KLC_KINT
    ** and KLV_FLT = KLC_KFLT; a value in its slot by the slot's type)
    ** against the site's, without a switch: 20 instructions an argument
    ** were a third of the call */
    int32_t tg = tags[i];
    if (tg != KLV_INSLOT) {
      if (tg != sf->kinds[i]) return KLC_MISS;
      a[i] = bits[i];
      continue;
    }
    const KlsTValue *v = &fr[slots[i]].val;
    unsigned char tt = v->tt_;
    int k = tt == KLS_INT ? KLC_KINT : tt == KLS_FLT ? KLC_KFLT : tt == KLS_TABLE ? KLC_KTABLE : 0;
    if (k != sf->kinds[i]) return KLC_MISS;
    /* (a number's bits; a table: the slot's index, which the entry reads,
    ** cg_entry.c) */
    a[i] = k == KLC_KTABLE ? slots[i] : v->value_.i;
  }
  for (int i = nargs, np = sf->nparams; i < np; i++) a[i] = 0;
  /* what is read after the call, read before it (a recursive call through
  ** this site may refill it) */
  const KlcGuard *g = sf->guard;
  KEntry const *entryp = sf->entryp;
  uint8_t rk[KJIT_MAXRETS];
  memcpy(rk, sf->rets, sizeof rk);
  /* frozen upvalues still as compiled (callval.c guard_ok) */
  for (int i = 0; g != NULL && i < g->n; i++) {
    const KlsTValue *v = kls_upvalue(fv->value_.gc, g->up[i]), *w = &g->val[i];
    if (v->tt_ != w->tt_ || ((v->tt_ & 0x0f) > 1 && v->value_.i != w->value_.i)) return KLC_MISS;
  }
  /* deep enough: the slow path, which nests (nest_open) until it runs the
  ** callee interpreted */
  if (err->stack_limit == 0) err->stack_limit = krt_stack_limit();
  if ((uint64_t)(uintptr_t)__builtin_frame_address(0) < err->stack_limit + KLC_NATIVE_ROOM)
    return KLC_MISS;
  KEntry entry = *entryp;
  /* (an index: the callee may grow the stack, which moves it) */
  int top = (int)(st->top - st->ci->func);
  int64_t rets[2 * KJIT_MAXRETS];
  /* (counted without a locked add: threads of their own states may lose
  ** an increment of this tests' fact, never race on it) */
  __atomic_store_n(&kjit_lc_native_calls, __atomic_load_n(&kjit_lc_native_calls, __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELAXED);
  if (entry(a, rets, err) != 0) return raise_error(L, err, tramp);
  for (int r = 0; r < nres; r++) {
    int64_t tag = rets[KJIT_MAXRETS + r];
    bits[r] = rets[r];
    if (rk[r] & KLC_RMAYBE) {
      if (tag == 0) {   /* nil or false, into its slot (not collectable: no barrier; the
                        ** frame read again: the callee may have moved the stack) */
        st->ci->func[dst + r].val.tt_ = rk[r] & KLC_RFALSE ? KLS_FALSE : KLS_NIL;
        tags[r] = KLV_INSLOT;
      } else if ((rk[r] & 7) == KLC_RNUM) tags[r] = tag == 2 ? KLV_FLT : KLV_INT;
      else tags[r] = rk[r] & 7;
      continue;
    }
    switch (rk[r]) {
    case KLC_RNUM: tags[r] = tag ? KLV_FLT : KLV_INT; break;
    case KLC_RLUA:   /* a number (tag 1, 2), else in the entry's slot (cg_entry.c) */
      if (tag != 0) tags[r] = (int32_t)tag;
      else {
        lua_pushvalue(L, (int)rets[r]);
        tags[r] = kjit_lv_take(L, dst + r, &bits[r]);
      }
      break;
    default: tags[r] = rk[r]; break;
    }
  }
  /* the slots the entry opened for Lua results closed (lua_settop: nothing
  ** to close there) */
  kls_close(L, top);
  return KLV_OK;
}

/* A native call whose values go on (kjit_lc_call's nres < 0): the callee
** gives exactly its fill's count (kd_native_site: no open count), so the
** call is native_call's for the results taken (take), with nil after them
** up to those wanted (want), as lua_call pads them and kjit_lv_take
** leaves a nil (in its slot); where the slow path would raise KLC_NRES
** (an open call's value not exactly one, a return's more than it passes
** on), it is left to it. */
static __attribute__((noinline)) int32_t
native_open(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags, int64_t *bits,
            const int32_t *slots, int32_t nres, int32_t dst, KlcSite *s, KErr *err) {
  const KlsState *st = (const KlsState *)(void *)L;
  if (!kjit_lc_site_mine(s, st->l_G)) return KLC_MISS;   /* (then the fill is ours to read) */
  const KlcFill *sf = &s->fill;
  if (st->ci->func[f].val.value_.gc != sf->fn) sf = &s->fill2;   /* (the site's second callee) */
  int nret = sf->nret, take, want;
  if (nres == -1) {   /* an open call passing on its one value (finish: else KLC_NRES) */
    if (nret != 1) return KLC_MISS;
    take = want = 1;
  } else if (nres <= KLC_ADJUST) {   /* to a compiled function's k parameters: adjusted */
    want = KLC_ADJUST - nres;
    take = nret < want ? nret : want;
  } else {   /* to a return: up to -nres - 1 values, nil after them, the count in bits[want] */
    want = -nres - 1;
    if (nret > want) return KLC_MISS;
    take = nret;
  }
  int32_t rc = native_call(L, tramp, f, nargs, tags, bits, slots, take, dst, s, sf, err);
  if (rc != KLV_OK) return rc;
  for (int r = take; r < want; r++) {
    st->ci->func[dst + r].val.tt_ = KLS_NIL;   /* (not collectable: no barrier) */
    tags[r] = KLV_INSLOT;
    bits[r] = 0;
  }
  if (nres < -1 && nres > KLC_ADJUST) bits[want] = take;
  return KLV_OK;
}

/* The call through the site's second fill (callsite.h KlcSite.fill2: a
** site over two classes), where the first missed. */
static __attribute__((noinline)) int32_t
native_second(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags, int64_t *bits,
              const int32_t *slots, int32_t nres, int32_t dst, KlcSite *s, KErr *err) {
  return native_call(L, tramp, f, nargs, tags, bits, slots, nres, dst, s, &s->fill2, err);
}

int32_t kjit_lc_call(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags,
                     int64_t *bits, int32_t *slots, int32_t nres, int32_t dst, KlcSite *nsite,
                     KErr *err) {
  if (nsite != NULL &&
      (nres >= 0
           ? native_call(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite, &nsite->fill, err) == KLV_OK ||
                 native_second(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite, err) == KLV_OK
           : native_open(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite, err) == KLV_OK))
    return KLV_OK;
  if (nres >= 0 && run_direct_to != NULL && __atomic_load_n(&kls_on, __ATOMIC_RELAXED) &&
      ((const KlsState *)(void *)L)->ci->func[f].val.tt_ == KLS_LCL)
    return call_lua(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite);
  if (!callable(L, f)) return KLV_BADA;
  luaL_checkstack(L, nargs + (nres >= 0 ? nres : 64) + LUA_MINSTACK, "kjit: too many arguments in a call");
  int base = lua_gettop(L);
  KlcCall c = { tramp, f, nargs, tags, bits, slots, nres < 0, 0, 0, NULL, nsite };
  nest_open(&c, __builtin_frame_address(0));
  int32_t rc = finish(L, base, &c, nres, tags, bits, dst);
  nest_close(&c);
  return rc;
}

/* Pushes f's trampoline, f and its n arguments (a C function under the
** method call's second trampoline where it has one: method_tramp). */
static void push_under_tramp(lua_State *L, int32_t tramp, int32_t f, int32_t n,
                             const int32_t *tags, const int64_t *bits, const int32_t *slots) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, tramp);
  if (lua_iscfunction(L, f)) method_tramp(L);
  lua_pushvalue(L, f);
  for (int i = 0; i < n; i++) kjit_lv_push(L, tags[i], bits[i], slots[i]);
}

/* f(a, b, g(c, ...)) where g's values all go to f (both Lua values): the
** arguments of f are tags[0 .. n), g's tags[n .. n + ni); g runs first,
** its results left on the stack as f's last arguments, as many as it
** gives. Then f is called as kjit_lc_call calls any value, g's values
** passed as the slots they stand in: a Lua function runs compiled where
** the hook compiles it, as at any call (f pushed under the trampoline and
** called there ran interpreted: vectors' `p:add(e.vel:scale(dt))`); C
** functions, other callables and more values than a compiled call takes
** (KJIT_MAXARGS) are still called that way. nsite: f's native cache
** (kjit_lc_call's), err the caller's record. Returns kjit_lc_call's
** codes for f, or KLC_INNER + the code for g. */
int32_t kjit_lc_call_spread(lua_State *L, int32_t tramp, int32_t f, int32_t n, int32_t itramp,
                            int32_t g, int32_t ni, int32_t *tags, int64_t *bits, int32_t *slots,
                            int32_t nres, int32_t dst, KlcSite *nsite, KErr *err) {
  if (!callable(L, g)) return KLC_INNER + KLV_BADA;
  luaL_checkstack(L, n + ni + nres + 2 * LUA_MINSTACK, "kjit: too many arguments in a call");
  int base = lua_gettop(L);
  /* (a Lua function: g's values stay where they stand, f's arguments by
  ** their slots; anything else, as before, under its trampoline first,
  ** without the hook's question: mandelbrot's char(unpack(buf, 1, p))) */
  int luaf = lua_type(L, f) == LUA_TFUNCTION && !lua_iscfunction(L, f);
  if (!luaf) {   /* (a C function called as a method: under the method
                   ** call's second trampoline, which counts its arguments
                   ** as for a method) */
    push_under_tramp(L, tramp, f, n, tags, bits, slots);
  }
  int mid = lua_gettop(L);
  KlcCall gc = { itramp, g, ni, tags + n, bits + n, slots + n, 1, 0, 0, NULL, NULL };
  nest_open(&gc, __builtin_frame_address(0));
  run_call(L, mid, &gc, LUA_MULTRET);   /* (an open call: count first) */
  lua_remove(L, mid + 1);
  int k = lua_gettop(L) - mid;   /* g's values, from mid + 1 on */
  if (luaf && n + k <= KJIT_MAXARGS) {
    /* (g's values stay on the Lua stack, which anchors them, until f has
    ** returned and the stack is put back to base) */
    nest_close(&gc);
    for (int i = 0; i < k; i++) {
      tags[n + i] = KLV_INSLOT;
      bits[n + i] = 0;
      slots[n + i] = mid + 1 + i;
    }
    int32_t rc = kjit_lc_call(L, tramp, f, n + k, tags, bits, slots, nres, dst, nsite, err);
    lua_settop(L, base);
    return rc;
  }
  if (luaf) {   /* more values than a compiled call takes: f and its own put below them
                 ** (room for them: g's open call left no spare stack) */
    luaL_checkstack(L, n + 2 + LUA_MINSTACK, "kjit: too many arguments in a call");
    push_under_tramp(L, tramp, f, n, tags, bits, slots);
    lua_rotate(L, base + 1, n + 2);
  }
  if (!callable(L, f)) { lua_settop(L, base); nest_close(&gc); return KLV_BADA; }
  KlcCall fc = { tramp, f, lua_gettop(L) - base - 2, tags, bits, slots, 0, 0, 1, NULL, NULL };
  int32_t rc = finish(L, base, &fc, nres, tags, bits, dst);
  nest_close(&gc);
  return rc;
}

/* {a, b, g(c, ...)} (codegen/cg_callvalue.c cg_fn_ctor_spread): the n
** items tags[0 .. n), then g, a function value, called with tags[n .. n +
** ni) and all its results; the table is made with the sizes the VM gives
** it (NEWTABLE's narr and nrec, the array part grown to the last item by
** luaV_execute's SETLIST) into slot dst, its address in *h. Returns KLV_OK
** or KLV_BADA (g not callable). */
int32_t kjit_lc_ctor_spread(lua_State *L, int32_t itramp, int32_t g, int32_t n, int32_t ni,
                            int32_t *tags, int64_t *bits, int32_t *slots, int32_t narr,
                            int32_t nrec, int32_t dst, int64_t *h) {
  if (!callable(L, g)) return KLV_BADA;
  luaL_checkstack(L, n + ni + 2 * LUA_MINSTACK, "kjit: too many items in a table constructor");
  int base = lua_gettop(L);
  for (int i = 0; i < n; i++) kjit_lv_push(L, tags[i], bits[i], slots[i]);
  KlcCall gc = { itramp, g, ni, tags + n, bits + n, slots + n, 1, 0, 0, NULL, NULL };
  int mid = lua_gettop(L);
  kjit_lc_run_call(L, &gc, LUA_MULTRET);   /* (an open call: count first) */
  lua_remove(L, mid + 1);
  int cnt = lua_gettop(L) - base;
  lua_createtable(L, cnt > narr ? cnt : narr, nrec);
  for (int i = 1; i <= cnt; i++) {
    lua_pushvalue(L, base + i);
    lua_rawseti(L, -2, i);
  }
  *h = (int64_t)(intptr_t)lua_topointer(L, -1);
  lua_replace(L, dst);
  lua_settop(L, base);
  return KLV_OK;
}

/* The same for a constructor that is not deferred (`{x = 1, t.f()}`:
** ir_type.c kty_ctor_grows): its table, made at its NEWTABLE with narr
** array slots and given its fields, is in slot dst; the n items before
** and all g gives go from index off + 1 on, the array part grown first as
** the VM's SETLIST grows it (kjit_lv_ctor_grow). */
int32_t kjit_lc_ctor_spread_grow(lua_State *L, int32_t itramp, int32_t g, int32_t n, int32_t ni,
                                 int32_t *tags, int64_t *bits, int32_t *slots, int32_t narr,
                                 int32_t nrec, int32_t dst, int64_t *h, int32_t off) {
  if (!callable(L, g)) return KLV_BADA;
  luaL_checkstack(L, n + ni + 2 * LUA_MINSTACK, "kjit: too many items in a table constructor");
  int base = lua_gettop(L);
  for (int i = 0; i < n; i++) kjit_lv_push(L, tags[i], bits[i], slots[i]);
  int mid = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, itramp);
  lua_pushvalue(L, g);
  for (int i = 0; i < ni; i++) kjit_lv_push(L, tags[n + i], bits[n + i], slots[n + i]);
  kjit_lc_callk(L, ni + 1, LUA_MULTRET, itramp);   /* (the trampoline of an open call: count first) */
  lua_remove(L, mid + 1);
  int cnt = lua_gettop(L) - base;
  *h = kjit_lv_ctor_grow(L, dst, off + cnt, narr, nrec);
  for (int i = 1; i <= cnt; i++) {
    lua_pushvalue(L, base + i);
    lua_rawseti(L, dst, off + i);
  }
  lua_settop(L, base);
  return KLV_OK;
}

/* t[k] of the table at registry reference ref (a table known when
** compiling, indexed by a computed key: ir_type.c t_frozen_values), Lua's
** read with __index, as a read's result. */
int32_t kjit_lc_refindex(lua_State *L, int32_t ref, int32_t ktag, int64_t kbits, int32_t kslot,
                         int32_t dst, int64_t *out) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  kjit_lv_push(L, ktag, kbits, kslot);
  lua_gettable(L, -2);
  lua_remove(L, -2);
  return kjit_lv_take(L, dst, out);
}

/* The library function named name ("math.cos": package.loaded.math.cos;
** "print": the global) into slot dst. */
void kjit_lc_setbuiltin(lua_State *L, int32_t dst, const char *name) {
  const char *dot = strchr(name, '.');
  if (dot) {
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushlstring(L, name, (size_t)(dot - name));
    if (lua_rawget(L, -2) == LUA_TTABLE) lua_getfield(L, -1, dot + 1);
    else lua_pushnil(L);
    lua_replace(L, dst);
    lua_pop(L, 2);
  } else {
    lua_getglobal(L, name);
    lua_replace(L, dst);
  }
}

void kjit_lc_register(void) {
#define REG(f) kc_register_symbol(#f, (void *)f)
  REG(kjit_lc_getupv); REG(kjit_lc_setupv); REG(kjit_lc_call); REG(kjit_lc_call_spread); REG(kjit_lc_ctor_spread); REG(kjit_lc_ctor_spread_grow);
  REG(kjit_lc_setbuiltin); REG(kjit_lc_refindex); REG(kjit_lc_native_raise); REG(kjit_lc_native_take);
#undef REG
  kc_register_symbol("kjit_lc_epoch", (void *)&kjit_lc_epoch);   /* (upvalue caches: cg_callvalue.c) */
  kc_register_symbol("kjit_lc_native_calls", (void *)&kjit_lc_native_calls);   /* (native_inline) */
  kjit_lc_tfor_register();   /* a generic for's iterator call (luatfor.c) */
  kjit_lc_closure_register();   /* closures of literals that escape (luaclosure.c) */
  kjit_lc_cell_register();   /* shared, assigned captured locals (luacell.c) */
}
