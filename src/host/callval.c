/*
** host/callval.c: Lua functions that compiled code calls through values
** (a method found through __index, a function read from a table, passed
** in, or made by compiled code as a real closure) run compiled (issue 29).
**
** runtime/luacall.c calls every function value through a trampoline made
** for its call site (so that errors say what they say interpreted). Just
** before the call, its hook (kcv_compiled, here) is asked for the compiled
** form of a Lua function callee: the specialization of a private
** kjit.jit object of that very closure for the arguments' types, which
** luacall.c runs directly (jit.c kd_run_direct: no Lua frame, no
** lua_call), or, for one that makes arrays, its native function (jit.c's
** f:native) standing in the callee's place under the trampoline. What it
** computes is what kjit.jit(callee) computes called with those arguments: compiled as a
** root function when first called (the upvalues and globals it does not
** assign frozen then, as every compiled function's; those it assigns
** live, read and written on this closure), errors with the callee's
** file:line.
**
** Design decisions:
**   - Keyed on the closure, not its prototype: a closure's frozen
**     upvalues and its live ones belong to it.
**   - Upvalues stay the interpreter's: those the callee assigns are live
**     (the typer's rule); those it only reads are frozen into its code, so
**     each call first checks that they still hold the values they held
**     when it compiled (guard_holds: one lua_getupvalue and one raw
**     comparison each). If one changed (a setting another function
**     assigns), the closure compiles anew, at most KCV_MAXRECOMPILES times,
**     then runs interpreted. (Fields of a table held by such an upvalue are
**     frozen as in every compiled function: the documented rule.) A prototype whose closures
**     keep coming (an iterator factory called in a loop) compiles its
**     first KCV_MAXCLOSURES closures at their first call; a later one runs
**     interpreted until it has been called KCV_LATE_CALLS times from one
**     compiled site, then compiles (late closures). The count is kept
**     forever, on purpose: forgetting collected closures would not help,
**     since the inline cache below holds a reference to each closure it
**     names (up to KCV_WAYS of them per thread), and would bring back the
**     compile per closure it exists to avoid; a closure called that often
**     pays for its compile (about 1.4 ms, some 2,000 calls' saving), one
**     called a few times (an iterator over a short list) never compiles.
**   - A refusal (kjit will not compile the callee, or not for these
**     argument types) is remembered for the closure and types: the callee
**     then always runs interpreted, tried once.
**   - Arguments whose types say too little to key on cheaply (userdata
**     other than kjit arrays) make the call run interpreted; so do calls
**     once too deep (luacall.c's nesting rule). Arrays of records and Lua
**     functions (refuse3) are keyed by identity (the layout, the function:
**     jit.c keys its specializations on them the same way): such a call
**     skips the inline cache, whose entries have no room for the keys, and
**     looks the specialization up in the per-state cache, its key the
**     kinds followed by those identities (kind_by_identity).
**   - Per call site, an inline cache: a small table hashed by (site,
**     closure), in luacall.c's per-thread block, each entry the closure's
**     address, the argument kinds, the specialization, and registry
**     references to the closure (kept alive, so that its address is not
**     reused while the entry names it) and to its native function (which
**     keeps the code alive). A hit costs a few compares. Entries name their
**     Lua state (its global state's address); one closing bumps an epoch
**     (a sentinel's __gc) that invalidates every entry. A miss goes to the
**     per-state cache (a registry table, weak in its keys: closure -> a
**     table of the closure's jit object and, per argument kinds, its
**     native function or false), compiling there when new.
**   - The compiled callee gets its caller's options (boundscheck,
**     fastmath, opt: refuse3), which the caller's compile recorded for the
**     call site's trampoline (ir_type.c site_options); a caller with
**     kjit.jit's defaults uses the per-state cache below, one with other
**     options a cache of its own for them (opts_cache), so that one
**     closure called from both compiles once per set of options.
**   - Which callees compile (worth_compiling): those with a mostly
**     arithmetic loop or a loop over arrays of their own, or whose
**     upvalue holds a Lua function with one (calls_arith_loop, one level:
**     a closure over its data calling its kernel). Today a table read
**     or write, a method call or a library call in compiled code costs
**     several times the interpreter's (each goes through the Lua API;
**     setmetatable through a trampoline), so a loop-free method (an
**     accessor, Vec:add) or a loop over tables runs slower compiled than
**     interpreted: compiling every callee made bench/lua_programs.lua's
**     ray, array3d and vectors 1.2 to 2.3 times slower, and a method
**     `for i = #self.c, 1, -1 do s = s * x + self.c[i] end` 2.3 times
**     slower, where `for i = 1, n do s = s + i * i * self.k end` runs 1.7
**     times faster. The count of instructions is a crude cost model; widen
**     it as table access gets faster. kjit.testing.callees("all")
**     compiles every Lua callee (the tests; measuring), and so does
**     KJIT_CALLEES=all in the environment.
**   - The default ("leaves", issue 29's call protocol): those, and small
**     leaves that compute, read and write given tables and their own
**     upvalues, and call nothing but assert (is_small_leaf: Vec:dot, an
**     iterator closure, array3d's array_set), which
**     run directly from here where the interpreter's call under the
**     trampoline cost more (s = s + a:dot(b): 1,071 instructions a call
**     compiled, 1,703 interpreted from compiled code, the interpreter's
**     own loop 820; called natively from the site's own cache, luacall.c
**     "Native calls", which fill_site fills: 760); and small callers that
**     compute more than they call and call only methods, local functions
**     of an enclosing scope or math's, methods only for their results
**     (is_small_leaf: perlin's Noise:fbm and Noise:noise2, 4.79G -> 2.79G
**     instructions, 0.244 -> 0.194 s; not ray's ray_trace, which calls
**     scene:intersect for its effect). "loops" is the policy before it; "all" still makes bench/lua_programs.lua's vectors and
**     ray slower (their callees make tables and call methods), so it is
**     not the default.
*/
#include "host/callval.h"
#include "host/chunkpolicy.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "common/compile.h"
#include "host/buffer.h"
#include "host/lua_stack.h"
#include "host/jit.h"
#include "host/options.h"
#include "ir/ir_type.h"
#include "common/arena.h"
#include "frontend/bytecode.h"
#include "runtime/luacall.h"
#include "runtime/luavalue.h"
#include "backend/cpu.h"

enum {
  KCV_MAXCLOSURES = 8,   /* closures of one prototype compiled at their first call */
  KCV_LATE_CALLS = 2000, /* calls from one site that compile a later one */
  KCV_MAXSPECS = 8,      /* specializations of one closure */
  KCV_WAYS = 512,        /* inline cache entries (per thread) */
  KCV_MAXRECOMPILES = 3, /* compiles of one closure whose frozen upvalues changed */
  KCV_SITE_REFILLS = 4   /* native caches filled anew (fill_site) */
};

static const char CACHE_KEY[] = "kjit.callval";          /* closure -> record */
static const char PROTOS_KEY[] = "kjit.callval.protos";  /* prototype -> closures compiled */
static const char OPTS_KEY[] = "kjit.callval.opts";       /* options -> a cache like CACHE_KEY's */

typedef KlcGuard Guard;   /* (luacall.h: native calls check it too) */

typedef struct Entry {
  int32_t site;
  uint32_t epoch;
  const void *reg;              /* the Lua state (its global state, or registry) */
  const void *fn;               /* the closure */
  uint8_t kinds[KJIT_MAXARGS];
  int fnref, natref;            /* registry references (natref 0: refused) */
  int snapref;                  /* (the registry's reference to guard) */
  uint32_t gen;                 /* kcv_sites_gen when filled or last checked */
  int16_t npush;                /* arguments the native function takes; -1
                                   refused for these kinds, -2 for all */
  uint16_t late;                /* npush -2 for a late closure: calls left
                                   until it compiles (0: never) */
  uint8_t nkind;
  uint8_t opts;                 /* the site's options it was filled under
                                   (site_opts: 0 for kjit.jit's defaults) */
  uint8_t nonative;             /* its specialization cannot be called natively
                                   (kd_native_site said no: not asked again) */
  const void *spec;             /* its specialization, when run directly */
  const Guard *guard;           /* frozen upvalues to check, or NULL */
} Entry;

/* Trampolines' registry references released so far (kcv_refs_freed), in
** every state and thread. An entry names its site by that reference's
** number, which Lua reuses; kcv_refs_freed drops only the entries of the
** thread it runs on, while a Lua state used by two threads in turn has
** entries in both, and a reference made anew with other options
** (boundscheck) must not find the old site's specialization there. So an
** entry filled before the latest release checks its site's options once
** on its next hit (site_opts: a registry read) and misses where they
** differ; an entry whose options agree gives what a fill would (the same
** closure, argument kinds and options). The count is read on every hit
** (one load and compare); a thread taking a state over from another is
** ordered after it by whatever hands the state over. */
static uint32_t kcv_sites_gen;

/* The check of a closure's frozen upvalues at each call (a userdata, its
** user value the record's table of their values when the code compiled):
** which ones (mask, and as 0-based indices) and the values they held when
** the entry was filled (equal to that table's, raw), compared in place
** (lua_stack.h kls_upvalue: a tag and a word each, no API call) where the
** stack reads are on; else guard_holds. A value that is raw equal but not
** identical (1 and 1.0) fails the quick check and goes to the slow path,
** which refills the entry: the same answer, later. */


/* (the inline cache: luacall.c's per-thread block for the hook) */
_Static_assert(sizeof(Entry) * KCV_WAYS <= KLC_HOOK_TLS, "the inline cache fits");
/* (luacall.c's kjit_lc_epoch: bumped when a Lua state closes) */

enum { CALLEES_NONE, CALLEES_LOOPS, CALLEES_ALL, CALLEES_LEAVES };
static int callees = CALLEES_LEAVES;   /* (kjit.testing.callees) */
static const char *const callee_modes[] = { "none", "loops", "all", "leaves", NULL };
static long ncompiled;                /* callee specializations made (tests) */
static int upv_direct;                /* lua_stack.h kls_upvalues_on (at the first lookup) */

int kcv_l_callees(lua_State *L) {
  int old = callees;
  if (!lua_isnoneornil(L, 1)) {
    callees = luaL_checkoption(L, 1, NULL, callee_modes);
    /* decisions made so far: forgotten */
    kjit_lc_bump_epoch();
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "kjit.callval");
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, OPTS_KEY);
  }
  lua_pushstring(L, callee_modes[old]);
  lua_pushinteger(L, ncompiled);
  lua_pushinteger(L, kjit_lc_native_calls);
  lua_pushinteger(L, kjit_lv_sgetfield_calls);   /* field reads the inline path left */
  lua_pushinteger(L, kjit_lv_chain_calls);       /* chains whose checks failed */
  lua_pushinteger(L, __atomic_load_n(&kcp_chunks_interpreted, __ATOMIC_RELAXED));    /* main chunks left to the interpreter */
  lua_pushinteger(L, kd_retired_specs());   /* specializations retired (jit.c) */
  return 7;
}

/* Is one of the loops of prototype p (a for, or a backward
** jump: while, repeat) mostly arithmetic: at least twice as many
** arithmetic instructions in its body as table reads and writes, calls and
** other operations that go through the Lua API in compiled code, and no
** method call? */
static int is_arith(int op) {
  return (op >= KBC_ADDI && op <= KBC_SHR) || op == KBC_UNM || op == KBC_BNOT ||
         op == KBC_LT || op == KBC_LE || op == KBC_LTI || op == KBC_LEI || op == KBC_GTI ||
         op == KBC_GEI;
}
static int is_heavy(int op) {
  return op == KBC_GETTABLE || op == KBC_GETI || op == KBC_GETFIELD || op == KBC_SETTABLE ||
         op == KBC_SETI || op == KBC_SETFIELD || op == KBC_SELF || op == KBC_CALL ||
         op == KBC_TAILCALL || op == KBC_TFORCALL || op == KBC_NEWTABLE || op == KBC_CONCAT ||
         op == KBC_LEN || op == KBC_CLOSURE || op == KBC_SETTABUP;
}
/* An element read or write with a key in a register or a constant integer
** (t[i], t[i + 1], t[1]): in a numeric loop, an integer key into an array
** part, which compiled code reads and writes inline (no Lua API). */
static int is_element(int op) {
  return op == KBC_GETTABLE || op == KBC_SETTABLE || op == KBC_GETI || op == KBC_SETI;
}

/* ... or a loop over arrays (tables' array parts): element reads and
** writes and arithmetic only (no call, no field, no constructor), at least
** one arithmetic operation per two elements: SciMark's kernels' shape
** (`v[x] = om4 * ((vp[x] + vn[x]) + (v[x - 1] + v[x + 1])) + om1 * v[x]`,
** `sum = sum + vx[col[i]] * val[i]`), which run 1.25 to 1.4 times as fast
** compiled once compiled (the elements' inline reads, codegen/cg_lua.c;
** bench/lua_programs.lua scimark-sor 6000 cycles: 1.39 s against 1.99 s). */
int kcv_arith_loop(const KbcProto *p) {
  int yes = 0;
  for (int pc = 0; pc < p->ncode && !yes; pc++) {
    int op = KBC_OP(p->code[pc]), to = kbc_jumpdest(p, pc);
    if (!(op == KBC_FORLOOP || op == KBC_TFORLOOP || op == KBC_JMP) || to < 0 || to > pc) continue;
    int arith = 0, heavy = 0, method = 0, elems = 0;
    for (int i = to; i < pc; i++) {
      int o = KBC_OP(p->code[i]);
      arith += is_arith(o);
      heavy += is_heavy(o);
      elems += is_element(o);
      method |= o == KBC_SELF;
    }
    /* a loop that calls a method spends its time in that callee, which
    ** runs as a function value either way (perlin's fbm: compiling it
    ** cost more than it saved, bench/lua_programs.lua perlin 0.85 -> 0.69) */
    yes = arith > 0 && !method && (arith >= 2 * heavy || (heavy == elems && 2 * arith >= elems));
  }
  return yes;
}

/* Loads the Lua function at idx and asks test of its prototype (0 when it
** cannot be loaded). */
static int ask_proto(lua_State *L, int idx, int (*test)(const KbcProto *)) {
  Arena A;
  ka_init(&A);
  char err[128];
  KbcChunk *c = kbc_load(L, idx, &A, err, sizeof err);
  int yes = c != NULL && test(c->main);
  ka_free(&A);
  return yes;
}

static int has_arith_loop(lua_State *L, int idx) { return ask_proto(L, idx, kcv_arith_loop); }

/* Whether a Lua function one of the upvalues of the function at idx holds
** (the kernel a closure calls: SciMark's `function(cycles) sor_run(mat,
** ...) end`, whose upvalues compiled code freezes, so that the kernel
** compiles with it) has such a loop. */
static int calls_arith_loop(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  int yes = 0;
  for (int u = 1; !yes && lua_getupvalue(L, idx, u) != NULL; u++) {
    if (lua_type(L, -1) == LUA_TFUNCTION && !lua_iscfunction(L, -1) && !lua_rawequal(L, -1, idx))
      yes = has_arith_loop(L, -1);
    lua_pop(L, 1);
  }
  return yes;
}

/* The upvalues (bit n - 1 for upvalue n, the first 64) of the Lua function
** at idx that its compiled code freezes: all but those it assigns itself
** (SETUPVAL: live, read and written on the closure) and those a function
** literal inside it captures (which may assign them: the typer makes them
** live then); p is its prototype (NULL: it could not be loaded). *all:
** whether the mask covers every upvalue. */
static uint64_t frozen_upvalues(const KbcProto *p, int *all) {
  uint64_t mask = 0;
  *all = p != NULL && p->nup <= 64;
  for (int u = 0; p && u < p->nup && u < 64; u++) mask |= (uint64_t)1 << u;
  for (int pc = 0; p && pc < p->ncode; pc++)
    if (KBC_OP(p->code[pc]) == KBC_SETUPVAL) {
      int b = (int)((p->code[pc] >> 16) & 0xff);   /* SETUPVAL A B: UpValue[B] := R[A] */
      if (b < 64) mask &= ~((uint64_t)1 << b);
    }
  for (int k = 0; p && k < p->np; k++)
    for (int u = 0; u < p->p[k]->nup; u++)
      if (!p->p[k]->up[u].instack && p->p[k]->up[u].idx < 64)
        mask &= ~((uint64_t)1 << p->p[k]->up[u].idx);
  return mask;
}

/* frozen_upvalues of the Lua function at idx, its bytecode loaded here. */
static uint64_t closure_frozen_upvalues(lua_State *L, int idx) {
  Arena A;
  ka_init(&A);
  char err[128];
  KbcChunk *c = kbc_load(L, idx, &A, err, sizeof err);
  int all;
  uint64_t mask = frozen_upvalues(c ? c->main : NULL, &all);
  ka_free(&A);
  return mask;
}

/* Is prototype p a small leaf: at most LEAF_MAXCODE
** instructions, some arithmetic, no call but `assert`, no method call,
** table made, concatenation, closure, global written or varargs? It may
** read and write fields and elements of the tables it is given and assign
** its own upvalues. Such a callee costs less compiled than interpreted:
** compiled code calling it interpreted goes through its trampoline and
** lua_call, compiled it runs directly (s = s + a:dot(b): 1,820
** instructions a call interpreted, 1,070 compiled; an iterator closure
** stepping x, y, z in its upvalues, called by a generic for, 2,020 and
** 1,380; a method checking its arguments with assert and writing
** image[pos] = p, self.changed = true: 2,100 and 1,230: bench/programs/
** array3d.lua's). Callees that call or make tables stay interpreted: the
** API costs them more than the call saves (vectors' Vec:add, which makes
** a table and calls setmetatable, and its callers). */
enum { LEAF_MAXCODE = 96 };

/* Is the CALL at pc one of `assert(...)`: its function's register set by a
** GETTABUP of _ENV's "assert"? */
static int calls_assert(const KbcProto *p, int pc) {
  int i = kbc_setter_of(p, pc, KBC_A(p->code[pc]));
  if (i < 0) return 0;
  uint32_t ins = p->code[i];
  if (KBC_OP(ins) != KBC_GETTABUP || KBC_C(ins) >= p->nk) return 0;
  const KbcConst *k = &p->k[KBC_C(ins)];
  const KbcUpval *u = KBC_B(ins) < p->nup ? &p->up[KBC_B(ins)] : NULL;
  return k->kind == KBC_KSTR && strcmp(k->u.str.s, "assert") == 0 && u != NULL &&
         (u->name == NULL || strcmp(u->name, "_ENV") == 0);
}

/* Does the CALL or TAILCALL at pc call a local function of an enclosing
** scope (an upvalue: perlin's fade and lerp, compiled with their caller)
** or a field of the global math (math.floor)? Not a field of another
** table (vectors' Vec.new, which makes a table: a compiled caller would
** call it interpreted, through its trampoline). */
static int calls_local_or_math(const KbcProto *p, int pc) {
  int i = kbc_setter_of(p, pc, KBC_A(p->code[pc]));
  if (i < 0) return 0;
  uint32_t ins = p->code[i];
  if (KBC_OP(ins) == KBC_GETUPVAL) return 1;
  if (KBC_OP(ins) != KBC_GETFIELD) return 0;
  int t = kbc_setter_of(p, i, KBC_B(ins));
  if (t < 0 || KBC_OP(p->code[t]) != KBC_GETTABUP || KBC_C(p->code[t]) >= p->nk) return 0;
  const KbcConst *k = &p->k[KBC_C(p->code[t])];
  return k->kind == KBC_KSTR && strcmp(k->u.str.s, "math") == 0;
}

/* Is the CALL at pc a method call (its function set by SELF)? */
static int is_method_call(const KbcProto *p, int pc) {
  int i = kbc_setter_of(p, pc, KBC_A(p->code[pc]));
  return i >= 0 && KBC_OP(p->code[i]) == KBC_SELF;
}

/* A small leaf, or a small caller: one that may also call functions and
** methods with a fixed number of arguments and results, or return what
** such a call returns (perlin's
** Noise:fbm and Noise:noise2, whose callees are such functions too: each
** call then runs natively from its site, luacall.c "Native calls"). A call
** whose values all go to another call (`math.sqrt(self:dot(self))`: B or C
** 0) keeps it interpreted: that shape runs through the Lua stack
** (kjit_lc_call_spread, lua_call) and cost ray more than it saved. */
int kcv_small_leaf(const KbcProto *p) {
  int yes = p->ncode <= LEAF_MAXCODE && p->np == 0 && !p->is_vararg;
  int arith = 0, calls = 0;
  for (int pc = 0; yes && pc < p->ncode; pc++) {
    uint32_t ins = p->code[pc];
    int op = KBC_OP(ins);
    arith += is_arith(op);
    calls += (op == KBC_CALL && !calls_assert(p, pc)) || op == KBC_TAILCALL;
    /* a method called for its effect alone (C == 1: no result used; ray's
    ** scene:intersect, a loop over children that stays interpreted) keeps
    ** the caller interpreted: compiled, each such call costs about 1,700
    ** instructions against 820 (ray 4 96: 0.69 -> 0.76 s with it compiled) */
    int fixed_call = ((op == KBC_CALL && KBC_C(ins) != 0) || op == KBC_TAILCALL) &&
                     KBC_B(ins) != 0 &&
                     (calls_local_or_math(p, pc) ||
                      (is_method_call(p, pc) && (op == KBC_TAILCALL || KBC_C(ins) >= 2)));
    if ((op == KBC_TAILCALL && !fixed_call) || op == KBC_TFORPREP ||
        op == KBC_TFORCALL || op == KBC_NEWTABLE || op == KBC_SETLIST || op == KBC_CONCAT ||
        op == KBC_CLOSURE || op == KBC_SETTABUP || op == KBC_VARARG || op == KBC_VARARGPREP ||
        op == KBC_TBC || op == KBC_LEN || (op == KBC_CALL && !fixed_call && !calls_assert(p, pc)))
      yes = 0;
  }
  /* a caller must compute more than it calls (vectors' Vec:clamp, a
  ** compare and a division around two methods that stay interpreted, ran
  ** slower compiled: 0.36 -> 0.43 s) */
  return yes && arith > 0 && arith > calls;
}

int kcv_policy_compiles(const KbcProto *p) {
  return callees == CALLEES_ALL ||
         ((callees == CALLEES_LOOPS || callees == CALLEES_LEAVES) && kcv_arith_loop(p)) ||
         (callees == CALLEES_LEAVES && kcv_small_leaf(p));
}

int kcv_compiles_all(void) { return callees == CALLEES_ALL; }

/* Whether the Lua function at idx, of prototype p, compiles under the
** policy: p itself, or one level down (calls_arith_loop). */
static int worth_compiling(lua_State *L, int idx, const KbcProto *p) {
  return kcv_policy_compiles(p) ||
         ((callees == CALLEES_LOOPS || callees == CALLEES_LEAVES) && calls_arith_loop(L, idx));
}

/* The kind of argument i, a byte that decides its specialization with
** the closure (jit.c classify's signature), or 0: not keyed here. */
static uint8_t kind_of(lua_State *L, int32_t tag, int32_t slot) {
  switch (tag) {
  case KLV_INT: return KLC_KINT;
  case KLV_FLT: return KLC_KFLT;
  case KLV_BOOL: return 3;
  case KLV_NIL: return 4;
  default: break;
  }
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) {   /* the common kinds read in place */
    switch (((const KlsState *)(void *)L)->ci->func[slot].val.tt_) {
    case KLS_INT: return KLC_KINT;
    case KLS_FLT: return KLC_KFLT;
    case KLS_TABLE: return KLC_KTABLE;
    default: break;
    }
  }
  switch (lua_type(L, slot)) {
  case LUA_TNUMBER: return lua_isinteger(L, slot) ? KLC_KINT : KLC_KFLT;
  case LUA_TBOOLEAN: return 3;
  case LUA_TNIL: return 4;
  case LUA_TTABLE: return KLC_KTABLE;
  case LUA_TSTRING: return 6;
  case LUA_TUSERDATA: {
    KBuffer *b = kb_fast(L, slot);
    if (b == NULL || b->record != NULL || kb_released(b)) return 0;
    return (uint8_t)(16 + (int)b->dtype * 8 + b->ndim);   /* (dtype < 29: fits) */
  }
  default: return 0;   /* functions (keyed by identity), threads, other userdata */
  }
}

/* The kind of an argument kind_of does not key (refuse3): an array of
** records or a record (KIND_REC + ndim, *id its layout), a Lua function
** (KIND_FN, *id the function), a C function (KIND_CFN: a Lua value, one
** specialization for all), or 0 (interpreted). */
enum { KIND_CFN = 0xE0, KIND_FN = 0xE1, KIND_REC = 0xF0 };
static uint8_t kind_by_identity(lua_State *L, int32_t tag, int32_t slot, int64_t *id) {
  *id = 0;
  if (tag != KLV_INSLOT) return 0;
  switch (lua_type(L, slot)) {
  case LUA_TUSERDATA: {
    KBuffer *b = kb_fast(L, slot);
    if (b == NULL || b->record == NULL || kb_released(b)) return 0;
    *id = (int64_t)(intptr_t)b->record;
    return (uint8_t)(KIND_REC + b->ndim);
  }
  case LUA_TFUNCTION:
    if (lua_iscfunction(L, slot)) return KIND_CFN;
    *id = (int64_t)(intptr_t)lua_topointer(L, slot);
    return KIND_FN;
  default: return 0;
  }
}

/* The per-state cache (made with its sentinel on first use) pushed. */
static void push_cache(lua_State *L) {
  if (kty_push_weak_set(L, CACHE_KEY))
    kjit_lc_watch_state(L);   /* closed with the state: the entries die */
}

/* The options of the compile that made call site `site` (its trampoline's
** registry reference: ir_type.c site_options), or 0 where they are
** kjit.jit's defaults or unknown. */
static int site_opts(lua_State *L, int32_t site) {
  static int defaults;
  if (defaults == 0) {
    int v[KO_JIT_N];
    kopt_defaults(&kopt_jit, v);
    defaults = KTY_SITEOPTS(v[KO_JIT_BOUNDSCHECK], v[KO_JIT_FASTMATH], v[KO_JIT_OPT]);
  }
  int o = 0, top = lua_gettop(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, KTY_SITEOPTS_KEY) == LUA_TTABLE &&
      lua_rawgeti(L, -1, site) == LUA_TNUMBER)
    o = (int)lua_tointeger(L, -1);
  lua_settop(L, top);
  return o == defaults ? 0 : o;
}

/* Replaces the per-state cache on top by the one for callers compiled
** with options opts (made on first use, weak in its keys like it). */
static void opts_cache(lua_State *L, int opts) {
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, OPTS_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, OPTS_KEY);
  }
  if (lua_rawgeti(L, -1, opts) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, opts);
  }
  lua_remove(L, -2);
}

/* May one more closure of the prototype of the function at idx compile?
** (Counts it.) The prototype is named by its source and lines. */
static int proto_allows(lua_State *L, int idx) {
  lua_Debug ar;
  lua_pushvalue(L, idx);
  if (!lua_getinfo(L, ">S", &ar)) return 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, PROTOS_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, PROTOS_KEY);
  }
  lua_pushfstring(L, "%s:%d:%d", ar.source, ar.linedefined, ar.lastlinedefined);
  lua_pushvalue(L, -1);
  lua_Integer n = (lua_rawget(L, -3) == LUA_TNUMBER) ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  int ok = n < KCV_MAXCLOSURES;
  if (ok) {
    lua_pushinteger(L, n + 1);
    lua_rawset(L, -3);
  } else lua_pop(L, 1);
  lua_pop(L, 1);
  return ok;
}

/* Protected: (record, n arguments); pushes the native function and how
** many arguments it takes, or false. */
static int resolve_p(lua_State *L) {
  int n = lua_gettop(L) - 1;
  lua_getfield(L, 1, "obj");
  int np = kd_native_for(L, -1, 2, n, KCV_MAXSPECS);
  if (np < 0) { lua_pushboolean(L, 0); return 1; }
  lua_pushinteger(L, np);
  return 2;
}

/* Do the upvalues of the closure at f named by mask still hold the values
** of the table at snap (their values when its code compiled)? */
static int guard_holds(lua_State *L, int f, uint64_t mask, int snap) {
  for (int n = 1; mask != 0; n++, mask >>= 1) {
    if (!(mask & 1)) continue;
    if (lua_getupvalue(L, f, n) == NULL) return 0;
    lua_rawgeti(L, snap, n);
    /* the same value: raw equal, and a number of the same subtype and
    ** bits (1 and 1.0, 0.0 and -0.0 are raw equal, but code compiled for
    ** one computes the other's results wrong) */
    int eq = lua_rawequal(L, -1, -2);
    if (eq && lua_type(L, -1) == LUA_TNUMBER) {
      if (lua_isinteger(L, -1) != lua_isinteger(L, -2)) eq = 0;
      else if (!lua_isinteger(L, -1)) {
        lua_Number a = lua_tonumber(L, -1), b = lua_tonumber(L, -2);
        eq = memcmp(&a, &b, sizeof a) == 0;
      }
    }
    lua_pop(L, 2);
    if (!eq) return 0;
  }
  return 1;
}

/* The closure at f's jit object, the mask of its frozen upvalues and
** their values now, into the record at rec. */
static void record_compiles(lua_State *L, int rec, int f, uint64_t mask, int opts) {
  if (opts) kd_push_private_opts(L, f, (opts & 2) != 0, (opts & 4) != 0, opts >> 3);
  else kd_push_private(L, f);
  lua_setfield(L, rec, "obj");
  lua_pushinteger(L, (lua_Integer)mask);
  lua_setfield(L, rec, "guard");
  lua_newtable(L);
  for (int n = 1; n <= 64 && lua_getupvalue(L, f, n) != NULL; n++) lua_rawseti(L, -2, n);
  lua_setfield(L, rec, "snap");
}

/* A new record for the closure at f (redo: how many records it had
** before), pushed and stored in the cache at index cache: its jit object
** (none: never compiled; late = true: a late closure, which compiles when
** called often, lookup's hot), the mask of its frozen upvalues and their
** values now. */
static void new_record(lua_State *L, int cache, int f, int redo, int opts) {
  lua_createtable(L, 0, 4);
  int rec = lua_gettop(L), all;
  Arena A;   /* (the closure's bytecode, loaded once for both questions) */
  ka_init(&A);
  char err[128];
  KbcChunk *c = kbc_load(L, f, &A, err, sizeof err);
  uint64_t mask = frozen_upvalues(c ? c->main : NULL, &all);
  int worth = all && redo <= KCV_MAXRECOMPILES && worth_compiling(L, f, c->main);
  ka_free(&A);
  if (worth) {
    if (proto_allows(L, f)) record_compiles(L, rec, f, mask, opts);
    else {
      lua_pushboolean(L, 1);
      lua_setfield(L, rec, "late");
    }
  }
  lua_pushinteger(L, redo);
  lua_setfield(L, -2, "redo");
  lua_pushvalue(L, f);
  lua_pushvalue(L, -2);
  lua_rawset(L, cache);
}

/* The slow path: the per-state cache (that of the call site's options,
** opts: site_opts), compiling when new. Pushes the
** native function and returns its argument count, or returns -1 (not for
** these arguments) or -2 (the closure never compiles). On success, the
** record's guard mask in *guard and its snapshot table's reference in
** *snapref (0: no guard). hot: a late closure called KCV_LATE_CALLS times
** from one site, which compiles now; *late: -2 returned for a late closure
** not yet hot. */
static int lookup(lua_State *L, int opts, int32_t f, int32_t nargs, const int32_t *tags,
                  const int64_t *bits, const int32_t *slots, const char *key, size_t klen,
                  uint64_t *guard, int *snapref, int hot, int *late) {
  *late = 0;
  int top = lua_gettop(L);
  if (!upv_direct && kls_upvalues_on(L)) upv_direct = 1;
  push_cache(L);
  if (opts) opts_cache(L, opts);   /* (replaces the default cache on top) */
  int cache = lua_gettop(L);
  lua_pushvalue(L, f);
  if (lua_rawget(L, cache) != LUA_TTABLE) {   /* a closure seen for the first time */
    lua_pop(L, 1);
    new_record(L, cache, f, 0, opts);
  } else if (lua_getfield(L, -1, "snap") == LUA_TTABLE) {
    /* compiled while its frozen upvalues held other values: compile anew */
    lua_getfield(L, -2, "guard");
    uint64_t mask = (uint64_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
    int holds = guard_holds(L, f, mask, lua_gettop(L));
    lua_pop(L, 1);
    if (!holds) {
      lua_getfield(L, -1, "redo");
      int redo = (int)lua_tointeger(L, -1) + 1;
      lua_pop(L, 2);
      new_record(L, cache, f, redo, opts);
    }
  } else lua_pop(L, 1);
  int rec = lua_gettop(L);
  if (lua_getfield(L, rec, "obj") == LUA_TNIL) {
    *late = lua_getfield(L, rec, "late") == LUA_TBOOLEAN;
    if (!*late || !hot) { lua_settop(L, top); return -2; }   /* never, or not yet */
    *late = 0;
    record_compiles(L, rec, f, closure_frozen_upvalues(L, f), opts);
    lua_pushnil(L);
    lua_setfield(L, rec, "late");
  }
  lua_settop(L, rec);
  lua_pushlstring(L, key, klen);
  int kidx = lua_gettop(L);
  lua_pushvalue(L, kidx);
  if (lua_rawget(L, rec) == LUA_TNIL) {   /* new argument kinds: compile (protected) */
    lua_pop(L, 1);
    lua_pushcfunction(L, resolve_p);
    lua_pushvalue(L, rec);
    for (int i = 0; i < nargs; i++) kjit_lv_push(L, tags[i], bits[i], slots[i]);
    if (lua_pcall(L, nargs + 1, 2, 0) != LUA_OK || lua_type(L, -2) != LUA_TFUNCTION) {
      lua_settop(L, kidx);
      lua_pushboolean(L, 0);   /* refused: remembered */
    } else {
      ncompiled++;
      lua_createtable(L, 2, 0);   /* {native, count} */
      lua_insert(L, -3);
      lua_rawseti(L, -3, 2);
      lua_rawseti(L, -2, 1);
    }
    lua_pushvalue(L, kidx);
    lua_pushvalue(L, -2);
    lua_rawset(L, rec);
  }
  if (lua_type(L, -1) != LUA_TTABLE) { lua_settop(L, top); return -1; }
  lua_rawgeti(L, -1, 2);
  int np = (int)lua_tointeger(L, -1);
  lua_getfield(L, rec, "guard");
  *guard = (uint64_t)lua_tointeger(L, -1);
  *snapref = 0;
  if (*guard != 0) {
    lua_getfield(L, rec, "snap");
    *snapref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, -3, 1);
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return np;
}

/* The guard of entry e for the closure fn at f (its frozen upvalues hold
** the values its code was compiled with). */
static int guard_ok(lua_State *L, int f, const void *fn, const Entry *e) {
  const Guard *g = e->guard;
  if (upv_direct) {
    for (int i = 0; i < g->n; i++) {
      const KlsTValue *v = kls_upvalue(fn, g->up[i]), *w = &g->val[i];
      if (v->tt_ != w->tt_) return 0;
      /* (nil and the booleans are their tags; anything else has a word) */
      if ((v->tt_ & 0x0f) > 1 && v->value_.i != w->value_.i) return 0;
    }
    return 1;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, e->snapref);
  lua_getiuservalue(L, -1, 1);
  int ok = guard_holds(L, f, g->mask, lua_gettop(L));
  lua_pop(L, 2);
  return ok;
}

/* The Guard for mask over the closure at f, whose frozen upvalues hold
** raw the values of the table at registry reference snapref (which it
** takes over): the userdata's reference returned, the Guard in *g. */
static int new_guard(lua_State *L, int f, uint64_t mask, int snapref, const Guard **g) {
  Guard *gd = lua_newuserdatauv(L, sizeof *gd, 1);
  memset(gd, 0, sizeof *gd);
  gd->mask = mask;
  lua_rawgeti(L, LUA_REGISTRYINDEX, snapref);
  lua_setiuservalue(L, -2, 1);
  luaL_unref(L, LUA_REGISTRYINDEX, snapref);
  const void *fn = lua_topointer(L, f);
  for (int n = 0; n < 64; n++) {
    if (!(mask >> n & 1)) continue;
    gd->up[gd->n] = (uint8_t)n;
    if (upv_direct) gd->val[gd->n] = *kls_upvalue(fn, n);
    gd->n++;
  }
  *g = gd;
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* kcv_compiled for a call whose argument `from` kind_of does not key
** (kinds[0 .. from) filled): keyed by identity where kind_by_identity can, through
** the per-state cache only (the inline cache is left as it is); -1 when
** the callee runs interpreted, else as kcv_compiled (the native function
** pushed). */
static int by_identity(lua_State *L, int32_t site, int32_t f, int32_t nargs, const int32_t *tags,
                       const int64_t *bits, const int32_t *slots, uint8_t *kinds, int from) {
  char key[KJIT_MAXARGS * 9];
  size_t klen = (size_t)nargs;
  for (int i = from; i < nargs; i++) {
    if (i > from) kinds[i] = kind_of(L, tags[i], slots[i]);
    else kinds[i] = 0;
    int64_t id = 0;
    if (kinds[i] == 0 && (kinds[i] = kind_by_identity(L, tags[i], slots[i], &id)) == 0) return -1;
    if (id != 0) {   /* the identity after the kinds */
      memcpy(key + klen, &id, sizeof id);
      klen += sizeof id;
    }
  }
  memcpy(key, kinds, (size_t)nargs);
  uint64_t guard = 0;
  int snapref = 0;
  int late;
  int np = lookup(L, site_opts(L, site), f, nargs, tags, bits, slots, key, klen, &guard, &snapref, 0,
                  &late);
  if (snapref) luaL_unref(L, LUA_REGISTRYINDEX, snapref);
  return np < 0 ? -1 : np;
}

/* A call site's life (luacall.h KlcSite): at its first slow call
** (kcv_compiled) a site in code that kjit's loader mapped is registered:
** linked into the list of live sites with its trampoline and its state's
** main thread, so that when that code is freed (kcv_code_freed, told by
** the backend before it unmaps the code: backend/cpu.h) the site's
** references are released and this thread's inline-cache entries for its
** trampoline dropped, and a program that compiles functions again and
** again does not keep every closure they called. A site elsewhere (code
** the LLVM JIT loaded: its range is not known when it is freed) is marked
** -1 and never filled. */
static pthread_mutex_t sites_mu = PTHREAD_MUTEX_INITIALIZER;
static KlcSite *sites;   /* the registered sites of live code (KlcSite.next) */

static void register_site(lua_State *L, KlcSite *s, int32_t site) {
  if (!kc_in_mapped_code(s)) { __atomic_store_n(&s->linked, -1, __ATOMIC_RELAXED); return; }
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);   /* (outlives any coroutine) */
  lua_State *main = lua_tothread(L, -1);
  lua_pop(L, 1);
  pthread_mutex_lock(&sites_mu);
  if (__atomic_load_n(&s->linked, __ATOMIC_RELAXED) == 0) {   /* (once: threads may race here) */
    s->L = main;
    s->tramp = site;
    s->next = sites;
    sites = s;
    __atomic_store_n(&s->linked, 1, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&sites_mu);
}

/* Releases the references of fill f where they are of the state reg in
** epoch ep (else not ours to free: another state's, or a closed one's). */
static void release_fill(lua_State *L, const KlcFill *f, const void *reg, uint32_t ep) {
  if (f->fn == NULL || f->reg != reg || f->epoch != ep) return;
  luaL_unref(L, LUA_REGISTRYINDEX, f->fnref);
  luaL_unref(L, LUA_REGISTRYINDEX, f->natref);
  if (f->guard) luaL_unref(L, LUA_REGISTRYINDEX, f->guardref);
}

/* Empties site s where its fill is of the state reg in epoch ep, that
** fill's references released (only reg's thread, where reg owns s, reads
** or writes its fill: runtime/callsite.c). */
static void clear_fill(lua_State *L, KlcFill *f, const void *reg, uint32_t ep) {
  KlcFill old = *f;
  if (old.fn == NULL || old.reg != reg || old.epoch != ep) return;
  memset(f, 0, sizeof *f);
  release_fill(L, &old, reg, ep);
}

static void clear_site(lua_State *L, KlcSite *s, const void *reg, uint32_t ep) {
  if (!kjit_lc_site_mine(s, reg)) return;
  clear_fill(L, &s->fill, reg, ep);
  clear_fill(L, &s->fill2, reg, ep);
}

/* The inline cache's entry (way) for closure fn called through trampoline
** site, in a thread's block ic. */
static Entry *way_of(void *ic, const void *fn, int32_t site) {
  uintptr_t h = ((uintptr_t)fn >> 4) * 0x9e3779b97f4a7c15u ^ (uintptr_t)site * 0x85ebca6bu;
  return &((Entry *)ic)[(h >> 20) % KCV_WAYS];
}

/* Are the stack reads on (lua_stack.h kls_on)? */
static int kls_on_now(void) { return __atomic_load_n(&kls_on, __ATOMIC_RELAXED) != 0; }

/* The inline cache's key for the state of L (kcv_compiled's reg). */
static const void *reg_of(lua_State *L) {
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) return ((const KlsState *)(void *)L)->l_G;
  return lua_topointer(L, LUA_REGISTRYINDEX);
}

/* Fills the native cache s of the call at site (runtime/luacall.c "Native
** calls") from inline-cache entry e, whose specialization runs directly,
** when the callee may be called natively there: its frozen upvalues, if
** any, checked in place (the entry's guard, which the site then checks
** at each call too), the arguments numbers and tables, the results
** numbers or Lua values (kd_native_site). The site takes references of
** its own to the closure, its native function and its guard (an entry may
** be replaced while the site still names them); only a registered site is
** filled (register_site), so that they are released with its code. */
static void fill_site(lua_State *L, KlcSite *s, int32_t f, Entry *e) {
  if (s == NULL || __atomic_load_n(&s->linked, __ATOMIC_RELAXED) != 1 || e->spec == NULL ||
      e->nonative || !__atomic_load_n(&kls_on, __ATOMIC_RELAXED) || (e->guard != NULL && !upv_direct))
    return;
  /* only its owner writes a site (runtime/callsite.c: another state's
  ** calls there take this slow path) */
  if (!kjit_lc_site_own(s, e->reg)) return;
  /* which of the site's two fills (callsite.h): the one naming this
  ** closure; else the second where the first names another closure of
  ** this state and epoch and the second is empty or stale (a site over
  ** two classes keeps both); else the first */
  KlcFill *at = &s->fill;
  if (s->fill2.fn == e->fn && s->fill2.reg == e->reg && s->fill2.epoch == e->epoch) at = &s->fill2;
  else if (s->fill.fn != NULL && s->fill.fn != e->fn && s->fill.reg == e->reg &&
           s->fill.epoch == e->epoch &&
           !(s->fill2.fn != NULL && s->fill2.reg == e->reg && s->fill2.epoch == e->epoch))
    at = &s->fill2;
  KlcFill old = *at;
  if (old.fn == e->fn && old.reg == e->reg && old.epoch == e->epoch && old.nargs == e->nkind &&
      old.guard == e->guard && memcmp(old.kinds, e->kinds, (size_t)e->nkind) == 0)
    return;   /* (filled: the call missed for another reason) */
  /* a fill whose callee or kinds keep changing (objects of more classes
  ** than two at one call) stops being refilled: each refill costs
  ** registry references, more than the native call saves */
  int same_state = old.fn != NULL && old.reg == e->reg && old.epoch == e->epoch;
  if (same_state && old.refills >= KCV_SITE_REFILLS) return;
  KlcFill n;
  memset(&n, 0, sizeof n);
  e->nonative = 1;
  for (int i = 0; i < e->nkind; i++)
    if (e->kinds[i] != KLC_KINT && e->kinds[i] != KLC_KFLT && e->kinds[i] != KLC_KTABLE) return;
  if (!kd_native_site(e->spec, e->nkind, &n)) return;
  e->nonative = 0;
  n.refills = same_state ? old.refills + 1 : 0;
  n.fn = e->fn;
  n.reg = e->reg;
  n.epoch = e->epoch;
  n.nargs = e->nkind;
  memcpy(n.kinds, e->kinds, (size_t)e->nkind);
  lua_pushvalue(L, f);
  n.fnref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_rawgeti(L, LUA_REGISTRYINDEX, e->natref);
  n.natref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (e->guard != NULL) {   /* (the guard's userdata: new_guard) */
    n.guard = e->guard;
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->snapref);
    n.guardref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  /* compiled code may call it itself (callsite.h KlcFill.inl) */
  n.inl = n.guard == NULL && n.nparams == n.nargs;
  for (int r = 0; r < n.nret; r++)
    n.inl &= n.rets[r] == KLC_RINT || n.rets[r] == KLC_RFLT || n.rets[r] == KLC_RNUM ||
             n.rets[r] == KLC_RLUA || (n.rets[r] & KLC_RMAYBE) != 0;
  /* the old fill's references released once the site no longer names it
  ** (references of a closed state, or of an earlier epoch, are not ours
  ** to free) */
  *at = n;
  if (same_state) release_fill(L, &old, e->reg, e->epoch);
}

/* This thread's inline-cache entry e dropped, its references released
** where they are this state's (reg) of this epoch (else not ours to free,
** as kcv_compiled says). */
static void drop_entry(lua_State *L, Entry *e, const void *reg, uint32_t ep) {
  if (e->reg == reg && e->epoch == ep) {
    if (e->fnref) luaL_unref(L, LUA_REGISTRYINDEX, e->fnref);
    if (e->natref) luaL_unref(L, LUA_REGISTRYINDEX, e->natref);
    if (e->snapref) luaL_unref(L, LUA_REGISTRYINDEX, e->snapref);
  }
  memset(e, 0, sizeof *e);
}

/* The code at [lo, lo + len) is being freed (the backend's hook, before it
** is unmapped): its registered sites unlinked, their references released,
** and this thread's inline-cache entries for their trampolines dropped
** (another thread's stay until replaced: at most KCV_WAYS per thread).
** The state is alive: the code belongs to a jit object of that state,
** freed by its collector (lua_close included). */
static void kcv_code_freed(void *lo, size_t len) {
  KlcSite *mine = NULL;
  pthread_mutex_lock(&sites_mu);
  for (KlcSite **p = &sites; *p;) {
    KlcSite *s = *p;
    if ((char *)s >= (char *)lo && (char *)s < (char *)lo + len) {
      *p = s->next;
      s->next = mine;
      mine = s;
    } else p = &s->next;
  }
  pthread_mutex_unlock(&sites_mu);
  Entry *ic = kjit_lc_hook_tls();
  uint32_t ep = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  while (mine) {
    KlcSite *s = mine;
    mine = s->next;
    lua_State *L = s->L;
    const void *reg = reg_of(L);
    for (int w = 0; w < KCV_WAYS; w++) {
      Entry *e = &ic[w];
      if (e->site != s->tramp || e->reg != reg || e->fn == NULL) continue;
      drop_entry(L, e, reg, ep);
    }
    clear_site(L, s, reg, ep);   /* (no thread runs this code any more) */
    memset(s, 0, sizeof *s);
  }
}

/* (Another thread's entries for these trampolines stay until replaced;
** the generation bumped here makes each check its site's options at its
** next hit: kcv_sites_gen.) */
void kcv_refs_freed(lua_State *L, const int *refs, int n) {
  /* (bumped for any reference freed, not only those whose options were
  ** recorded: a session opened without site options stores none) */
  kty_forget_sites(L, refs, n);
  if (n > 0) __atomic_add_fetch(&kcv_sites_gen, 1, __ATOMIC_RELAXED);
  Entry *ic = kjit_lc_hook_tls();
  const void *reg = reg_of(L);
  uint32_t ep = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  for (int w = 0; w < KCV_WAYS; w++) {
    Entry *e = &ic[w];
    if (e->fn == NULL || e->reg != reg) continue;
    for (int i = 0; i < n; i++)
      if (e->site == refs[i]) { drop_entry(L, e, reg, ep); break; }
  }
}

/* Clears the native functions of every record of the per-state cache on
** top (their kinds' entries; refusals, the jit objects and their guards
** stay): found again through kd_native_for at the next call. */
static void forget_record_natives(lua_State *L) {
  int cache = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, cache)) {
    if (lua_type(L, -1) == LUA_TTABLE) {
      int rec = lua_gettop(L);
      lua_pushnil(L);
      while (lua_next(L, rec)) {   /* (assigning nil to a present key while traversing: allowed) */
        int native = 0;   /* a kinds key's {native, count} ("snap" is a table too) */
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
          native = lua_rawgeti(L, -1, 1) == LUA_TFUNCTION;
          lua_pop(L, 1);
        }
        if (native) {
          lua_pushvalue(L, -2);
          lua_pushnil(L);
          lua_rawset(L, rec);
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
}

void kcv_forget_natives(lua_State *L) {
  int top = lua_gettop(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, CACHE_KEY) == LUA_TTABLE) forget_record_natives(L);
  lua_settop(L, top);
  if (lua_getfield(L, LUA_REGISTRYINDEX, OPTS_KEY) == LUA_TTABLE) {
    int opts = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, opts)) {
      if (lua_type(L, -1) == LUA_TTABLE) forget_record_natives(L);
      lua_settop(L, opts + 1);
    }
  }
  lua_settop(L, top);
  /* this thread's inline-cache entries and this state's filled sites
  ** released (their references are ours), then every entry and site of
  ** the epoch is empty */
  const void *reg = reg_of(L);
  uint32_t ep = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  Entry *ic = kjit_lc_hook_tls();
  for (int w = 0; w < KCV_WAYS; w++)
    if (ic[w].fn != NULL && ic[w].reg == reg) drop_entry(L, &ic[w], reg, ep);
  pthread_mutex_lock(&sites_mu);
  for (KlcSite *s = sites; s; s = s->next) clear_site(L, s, reg, ep);
  pthread_mutex_unlock(&sites_mu);
  kjit_lc_bump_epoch();
}

static int kcv_compiled(lua_State *L, int32_t site, int32_t f, int32_t nargs, const int32_t *tags,
                        const int64_t *bits, const int32_t *slots, const void **spec, void *tls,
                        KlcSite *nsite) {
  if (nargs > KJIT_MAXARGS) return -1;
  if (nsite != NULL && __atomic_load_n(&nsite->linked, __ATOMIC_RELAXED) == 0)
    register_site(L, nsite, site);
  const void *fn, *reg;
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) {   /* read in place (lua_stack.h) */
    const KlsState *st = (const KlsState *)(void *)L;
    const KlsTValue *v = &st->ci->func[f].val;   /* (f: an index of this C function's frame) */
    if (v->tt_ != KLS_LCL) return -1;            /* a Lua function only */
    fn = v->value_.gc;
    reg = st->l_G;
  } else {
    if (lua_type(L, f) != LUA_TFUNCTION || lua_iscfunction(L, f)) return -1;
    fn = lua_topointer(L, f);
    reg = lua_topointer(L, LUA_REGISTRYINDEX);
  }
  uint32_t ep = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  uint32_t gen = __atomic_load_n(&kcv_sites_gen, __ATOMIC_RELAXED);
  Entry *e = way_of(tls, fn, site);
  int same = e->fn == fn && e->site == site && e->reg == reg && e->epoch == ep;
  if (same && e->gen != gen) {   /* a trampoline released since: its number reused? */
    same = site_opts(L, site) == e->opts;
    if (same) e->gen = gen;
  }
  int hot = 0;   /* a late closure called KCV_LATE_CALLS times here: compiles now */
  if (same && e->npush == -2) {   /* a closure that never compiles, or not yet */
    if (e->late == 0) {   /* never: the site skips this hook from now on */
      if (kls_on_now()) kjit_lc_site_interp(L, nsite, fn);
      return -1;
    }
    if (--e->late > 0) return -1;
    hot = 1;
  }
  uint8_t kinds[KJIT_MAXARGS];
  int hit = same && e->nkind == nargs;
  for (int i = 0; i < nargs; i++) {   /* (compared as they come: no memcmp call) */
    if ((kinds[i] = kind_of(L, tags[i], slots[i])) == 0)
      return by_identity(L, site, f, nargs, tags, bits, slots, kinds, i);
    hit &= kinds[i] == e->kinds[i];
  }
  if (hit && !hot && (e->guard == NULL || guard_ok(L, f, fn, e))) {
    if (e->npush < 0) return -1;
    if (nsite != NULL && e->spec != NULL) fill_site(L, nsite, f, e);
    if (e->spec != NULL) *spec = e->spec;
    else lua_rawgeti(L, LUA_REGISTRYINDEX, e->natref);
    return e->npush;
  }
  uint64_t guard = 0;
  int snapref = 0;
  int late;
  int opts = site_opts(L, site);
  int np = lookup(L, opts, f, nargs, tags, bits, slots, (const char *)kinds, (size_t)nargs, &guard,
                  &snapref, hot, &late);
  /* (a compile in lookup may have retired code and moved the epoch on:
  ** kcv_forget_natives; what lookup found is this epoch's) */
  ep = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  /* the entry, replaced (references of another state, or of a closed
  ** one, are not ours to free: left) */
  if (e->reg == reg && e->epoch == ep) {
    if (e->fnref) luaL_unref(L, LUA_REGISTRYINDEX, e->fnref);
    if (e->natref) luaL_unref(L, LUA_REGISTRYINDEX, e->natref);
    if (e->snapref) luaL_unref(L, LUA_REGISTRYINDEX, e->snapref);
  }
  e->guard = NULL;
  e->snapref = 0;
  if (guard != 0) e->snapref = new_guard(L, f, guard, snapref, &e->guard);
  e->site = site;
  e->epoch = ep;
  e->gen = gen;
  e->opts = (uint8_t)opts;
  e->reg = reg;
  e->fn = fn;
  e->nkind = (uint8_t)nargs;
  memcpy(e->kinds, kinds, (size_t)nargs);
  lua_pushvalue(L, f);
  e->fnref = luaL_ref(L, LUA_REGISTRYINDEX);
  e->npush = (int16_t)np;
  e->late = late ? KCV_LATE_CALLS : 0;
  e->natref = 0;
  e->spec = NULL;
  e->nonative = 0;
  if (np == -2 && !late && kls_on_now()) kjit_lc_site_interp(L, nsite, fn);
  if (np >= 0) {
    lua_pushvalue(L, -1);
    e->natref = luaL_ref(L, LUA_REGISTRYINDEX);
    e->spec = kd_native_direct(L, -1);
    if (e->spec != NULL) {   /* run directly: nothing pushed */
      lua_pop(L, 1);
      *spec = e->spec;
      fill_site(L, nsite, f, e);
    }
  }
  return np < 0 ? -1 : np;
}

void kcv_init(void) {
  /* KJIT_CALLEES=none|loops|all: kjit.testing.callees's mode from the
  ** start (measuring whole programs) */
  const char *e = getenv("KJIT_CALLEES");
  for (int m = 0; e && callee_modes[m]; m++) if (strcmp(e, callee_modes[m]) == 0) callees = m;
  kjit_lc_set_compiled(kcv_compiled, kd_run_direct);
  kjit_lc_set_direct_to(kd_run_direct_to);
  kjit_lc_set_raise(kd_direct_error);
  kc_set_free_hook(kcv_code_freed);   /* (sites released with their code) */
}
