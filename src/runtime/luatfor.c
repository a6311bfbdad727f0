/*
** runtime/luatfor.c: the iterator call of a generic for whose iterator is
** a Lua value (`for k, v in pairs(t)`, `for i, x in ipairs(t)` over a
** table, `for k in next, t`, `for x in it`), issue 29 item 5.
**
** The typer treats such a for's call like any call of a function value
** (ir_type.c t_luacall, codegen cg_callvalue.c): each turn calls the
** iterator with (state, control) and takes the loop variables as values
** read from a table (a number's tag and bits, anything else into the
** call's result slots); the loop ends when the first is nil (the IR's
** tfor test). pairs(t) and ipairs(t) themselves are ordinary calls of the
** library functions, so __pairs is honoured and their errors are Lua's.
**
** The call goes through a trampoline that is itself a generic for at the
** user's line (ir_type.c's trampoline for KIR_F_TFOR), so what the
** iterator raises, and calling a value that is not callable, say what the
** interpreter says ("bad argument #1 to 'for iterator'", "attempt to call
** a nil value (for iterator 'for iterator')"), in every 5.4 release.
**
** A Lua closure iterator (a factory's `return function(s, x) ... end, s,
** 0`) is called as kjit_lc_call calls any Lua function value: its compiled
** form run directly where host/callval.c gives one (small iterators
** compile: is_small_leaf), its values taken straight into the loop's
** variables, else under the same trampoline.
**
** Two fast paths skip the trampoline: the base library's own `next` and
** ipairs's iterator (told apart by their C function pointers, read once
** from a fresh state, so a program that replaced the global `next`
** changes nothing) run lua_next / lua_geti directly, which is what those C
** functions do; their errors ("invalid key to 'next'", an __index's) carry
** no position either way, since they are raised inside a C function.
*/
#include "runtime/luatfor.h"
#include <string.h>
#include "runtime/luavalue.h"
#include "runtime/luacall.h"
#include "lauxlib.h"
#include "lualib.h"
#include "backend/cpu.h"
#include "host/lua_stack.h"

static lua_CFunction base_next, base_ipairsaux;
static int looked;

/* The base library's next and ipairs iterator, from a state of our own. */
static void look_up(void) {
  looked = 1;
  lua_State *S = luaL_newstate();
  if (S == NULL) return;
  luaL_requiref(S, "_G", luaopen_base, 1);
  lua_getglobal(S, "next");
  base_next = lua_tocfunction(S, -1);
  lua_getglobal(S, "ipairs");
  lua_newtable(S);
  lua_call(S, 1, 1);
  base_ipairsaux = lua_tocfunction(S, -1);
  lua_close(S);
}

/* nres values pushed above base (padded with nils, extra ones dropped),
** taken into the results. */
static int32_t finish(lua_State *L, int base, int32_t nres, int32_t *tags, int64_t *bits,
                      int32_t dst) {
  lua_settop(L, base + nres);
  for (int r = nres - 1; r >= 0; r--) tags[r] = kjit_lv_take(L, dst + r, &bits[r]);
  return KLV_OK;
}

/* An iterator that is not a Lua closure (kjit_lc_tforcall): next and
** ipairs' own, else under the trampoline. Out of line, so that the
** closure's path is a jump to kjit_lc_call (the same parameters) with
** a small frame: 20 instructions a call, where this path's frame made it
** 52 (array3d's loop, 1.7M calls). */
static __attribute__((noinline)) int32_t tfor_other(lua_State *L, int32_t tramp, int32_t f,
                                                    int32_t nargs, int32_t *tags, int64_t *bits,
                                                    int32_t *slots, int32_t nres, int32_t dst,
                                                    KlcSite *nsite) {
  if (!looked) look_up();
  luaL_checkstack(L, nargs + nres + LUA_MINSTACK, "kjit: too many values in a for");
  int base = lua_gettop(L);
  lua_CFunction cf = nargs == 2 ? lua_tocfunction(L, f) : NULL;
  if (cf != NULL && cf == base_next && tags[0] == KLV_INSLOT &&
      lua_type(L, slots[0]) == LUA_TTABLE) {
    kjit_lv_push(L, tags[1], bits[1], slots[1]);   /* the key */
    if (lua_next(L, slots[0]) == 0) lua_pushnil(L);
    return finish(L, base, nres, tags, bits, dst);
  }
  if (cf != NULL && cf == base_ipairsaux && tags[1] == KLV_INT && tags[0] == KLV_INSLOT) {
    lua_Integer i = (lua_Integer)((uint64_t)bits[1] + 1);
    lua_pushinteger(L, i);
    if (lua_geti(L, slots[0], i) == LUA_TNIL) { lua_settop(L, base); lua_pushnil(L); }
    return finish(L, base, nres, tags, bits, dst);
  }
  /* any other iterator (a callable table) runs compiled where it can
  ** (luacall.c's run_call) */
  KlcCall c = { tramp, f, nargs, tags, bits, slots, 0, 0, 0, NULL, nsite };
  kjit_lc_run_call(L, &c, nres);
  return finish(L, base, nres, tags, bits, dst);
}

/* kjit_lc_tforcall where the stack is not read in place. */
static __attribute__((noinline)) int32_t tfor_api(lua_State *L, int32_t tramp, int32_t f,
                                                  int32_t nargs, int32_t *tags, int64_t *bits,
                                                  int32_t *slots, int32_t nres, int32_t dst,
                                                  KlcSite *nsite, KErr *err) {
  if (lua_type(L, f) == LUA_TFUNCTION && !lua_iscfunction(L, f))
    return kjit_lc_call(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite, err);
  return tfor_other(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite);
}

/* Calls the iterator in slot f with (state, control) = arguments 0 and 1
** (tags, bits, slots as kjit_lc_call's) for nres loop variables; nsite,
** err: the loop's native cache and the caller's error record (luacall.h). */
int32_t kjit_lc_tforcall(lua_State *L, int32_t tramp, int32_t f, int32_t nargs, int32_t *tags,
                         int64_t *bits, int32_t *slots, int32_t nres, int32_t dst, KlcSite *nsite,
                         KErr *err) {
  /* a Lua closure (array3d's `for x, y, z in arr:points()`): kjit_lc_call,
  ** which calls its compiled entry from the loop's own native cache
  ** (luacall.c "Native calls": the closure the loop called last, its
  ** arguments' kinds; as many values as the loop wants or more, extra ones
  ** dropped as the VM drops them), else its one-go path (its compiled
  ** form run directly, the values straight into tags and bits, no pushes
  ** and pops); under the trampoline otherwise, as run_call would
  ** call it (tfor_other). Its tag read in place where the stack reads are on: this
  ** runs every turn. */
  if (!__atomic_load_n(&kls_on, __ATOMIC_RELAXED))
    return tfor_api(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite, err);
  if (((const KlsState *)(void *)L)->ci->func[f].val.tt_ == KLS_LCL)
    return kjit_lc_call(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite, err);
  return tfor_other(L, tramp, f, nargs, tags, bits, slots, nres, dst, nsite);
}

void kjit_lc_tfor_register(void) {
  kc_register_symbol("kjit_lc_tforcall", (void *)kjit_lc_tforcall);
}
