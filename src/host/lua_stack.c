/*
** lua_stack.c: the probe that decides whether the call path may read its
** arguments from the Lua stack directly (lua_stack.h says what is assumed
** and which Lua releases were checked).
**
** At the first require, a C closure with a full-userdata upvalue is called
** through lua_call with known arguments (integers, floats including -0.0
** and NaN, booleans, nil, kjit arrays, userdata with 0, 1 and 3 user
** values, a light userdata, a string, a table), at two stack depths, once
** after the stack has been made to grow (and so move), and with none. It
** compares every direct read with the API's answer: the count against
** lua_gettop, each tag against lua_type/lua_isinteger, values against
** lua_tointeger/lua_tonumber/lua_toboolean, a userdata's block against
** lua_touserdata and its size against lua_rawlen, the upvalue against
** lua_touserdata(L, lua_upvalueindex(1)); and it opens and closes frames
** of slots directly (frames_agree). Any difference, a lua_version
** other than 504, or KJIT_NO_STACK_READS=1 leaves kls_on 0.
*/
#include "host/lua_stack.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "host/buffer.h"

int kls_on;
const char *kls_status = "off: not probed";

typedef struct ProbeBox { uint64_t pad[3]; int calls, bad; } ProbeBox;

/* KJIT_TEST_PROBE_SKEW=1 (tests only): the probe reads each argument one
** slot off, as a Lua with another layout would look to it, so that the
** tests can see the direct reads turned off. */
static int probe_skew;
/* Every lua_State that opens kjit may probe at once (threads: each writes
** the same answer), so the shared fields are written and read atomically. */
static void set_status(const char *s) { __atomic_store_n(&kls_status, s, __ATOMIC_RELAXED); }

/* One argument: 1 if the direct read agrees with the API. */
static int agrees(lua_State *L, int i, const KlsTValue *v) {
  unsigned char tt = v->tt_;
  switch (lua_type(L, i)) {
  case LUA_TNIL: return (tt & 0x0f) == KLS_NIL;
  case LUA_TBOOLEAN:
    return tt == (lua_toboolean(L, i) ? KLS_TRUE : KLS_FALSE);
  case LUA_TNUMBER:
    if (lua_isinteger(L, i)) return tt == KLS_INT && v->value_.i == lua_tointeger(L, i);
    {
      double d = lua_tonumber(L, i);
      return tt == KLS_FLT && memcmp(&v->value_.n, &d, sizeof d) == 0;
    }
  case LUA_TUSERDATA: {
    if (tt != KLS_UDATA) return 0;
    size_t len;
    void *p = kls_udata(v, &len);
    return p == lua_touserdata(L, i) && len == lua_rawlen(L, i);
  }
  case LUA_TFUNCTION:   /* a Lua closure: its tag and object (host/callval.c) */
    if (!lua_iscfunction(L, i)) return tt == KLS_LCL && v->value_.gc == lua_topointer(L, i);
    return tt != KLS_LCL && tt != KLS_INT && tt != KLS_FLT && tt != KLS_UDATA;
  default:   /* must not look like anything the call path takes */
    return tt != KLS_INT && tt != KLS_FLT && tt != KLS_UDATA &&
           tt != KLS_TRUE && tt != KLS_FALSE && (tt & 0x0f) != KLS_NIL;
  }
}

/* Frames opened and closed directly (kls_open, kls_close), slots copied
** (kls_copy, kls_replace), against
** lua_gettop, lua_type and lua_checkstack's promise: 1 if they agree. The
** slots a frame takes held integers before (pushed, then dropped by
** lua_settop, which leaves them in place), so that its nils are its own. */
static int frames_agree(lua_State *L) {
  int g = lua_gettop(L);
  if (!lua_checkstack(L, 40)) return 0;
  if (kls_open(L, 1 << 20, 0) != 0 || lua_gettop(L) != g) return 0;   /* no room: refused */
  for (int i = 0; i < 12; i++) lua_pushinteger(L, i + 1);
  lua_settop(L, g);
  int first = kls_open(L, 8, 20);
  if (first != g + 1 || lua_gettop(L) != g + 8) return 0;
  for (int i = first; i < first + 8; i++) if (lua_type(L, i) != LUA_TNIL) return 0;
  lua_pushinteger(L, 5);
  kls_replace(L, first + 3);
  if (lua_gettop(L) != g + 8 || lua_tointeger(L, first + 3) != 5) return 0;
  kls_copy(L, first + 3, first + 5);
  if (!lua_isinteger(L, first + 5) || lua_tointeger(L, first + 5) != 5) return 0;
  lua_newtable(L);
  const void *t = lua_topointer(L, -1);
  if (kls_replace(L, first + 6).value_.gc != t || lua_topointer(L, first + 6) != t ||
      lua_gettop(L) != g + 8)
    return 0;
  int second = kls_open(L, 4, 10);
  if (second != g + 9 || lua_gettop(L) != g + 12 || lua_type(L, second + 3) != LUA_TNIL) return 0;
  kls_close(L, second);
  if (lua_gettop(L) != g + 8 || lua_tointeger(L, first + 3) != 5) return 0;
  kls_close(L, first);
  return lua_gettop(L) == g;
}

static int probe_fn(lua_State *L) {
  ProbeBox *box = lua_touserdata(L, lua_upvalueindex(1));
  int n, ok = 1;
  const KlsStackValue *a = kls_args(L, &n);
  if (box == NULL || kls_upvalue1_udata(L, sizeof *box) != (void *)box) ok = 0;
  if (n != lua_gettop(L)) ok = 0;
  /* (with probe_skew, a[n] is L->top's slot: inside the stack, which
  ** always has slots beyond its top) */
  for (int i = 1; ok && i <= n; i++) ok = agrees(L, i, &a[i - 1 + __atomic_load_n(&probe_skew, __ATOMIC_RELAXED)].val);
  if (ok && !frames_agree(L)) ok = 0;
  if (box) { box->calls++; if (!ok) box->bad++; }
  return 0;
}

/* Pushes the probe's arguments; returns how many. */
static int push_args(lua_State *L) {
  int64_t shape1[1] = { 3 }, shape2[2] = { 2, 2 };
  lua_pushinteger(L, 42);
  lua_pushinteger(L, LUA_MININTEGER);
  lua_pushnumber(L, -0.0);
  lua_pushnumber(L, 2.5);
  lua_pushnumber(L, NAN);
  lua_pushnumber(L, 3.0);
  /* (the probe's f64 array is no array of the program's: it does not
  ** count as one for kb_viewable_made) */
  int made = __atomic_load_n(&kb_viewable_made, __ATOMIC_RELAXED);
  kb_push_new(L, KJIT_F64, 1, shape1, 1);
  __atomic_store_n(&kb_viewable_made, made, __ATOMIC_RELAXED);
  kb_push_new(L, KJIT_I32, 2, shape2, 1);
  lua_pushnil(L);
  lua_pushboolean(L, 1);
  lua_pushboolean(L, 0);
  lua_newuserdatauv(L, 24, 0);
  lua_newuserdatauv(L, 1, 3);
  lua_newuserdatauv(L, 40, 1);
  lua_pushlightuserdata(L, (void *)L);
  lua_pushliteral(L, "2.5");
  lua_newtable(L);
  lua_pushcfunction(L, probe_fn);
  luaL_loadstring(L, "return 1");   /* a Lua closure */
  return 19;
}

static int run_probe(lua_State *L) {
  if (lua_version(L) != 504) { set_status("off: lua_version is not 504"); return 0; }
  int top = lua_gettop(L);
  ProbeBox *box = lua_newuserdatauv(L, sizeof *box, 1);
  memset(box, 0, sizeof *box);
  int boxidx = lua_gettop(L);
  int calls = 0;
  for (int round = 0; round < 3; round++) {
    if (round == 2) luaL_checkstack(L, 4000, "kjit probe");   /* the stack moves */
    for (int k = 0; k < round * 7; k++) lua_pushinteger(L, k);   /* another depth */
    lua_pushvalue(L, boxidx);
    lua_pushcclosure(L, probe_fn, 1);
    lua_pushvalue(L, -1);
    lua_call(L, 0, 0);   /* no arguments */
    int n = push_args(L);
    lua_call(L, n, 0);
    calls += 2;
  }
  int ok = box->calls == calls && box->bad == 0;
  lua_settop(L, top);
  set_status(ok ? "on" : "off: the probe read the stack differently from the Lua API");
  return ok;
}

/* The probe runs on a thread of its own, dropped after it: its round that
** moves the stack grows the stack of the thread it runs on by 4000 slots
** (64 KB). On the state's main thread that stack stayed for the
** process's life (Lua 5.4.4 here: 62 KB more on the heap after require,
** whatever collections ran), and every collection cycle wrote nils over
** its unused part (the atomic phase clears it), costing an allocating
** interpreted loop (binary-trees) a third more L1 write misses once kjit
** was loaded. lua_resume: the thread's errors (memory) are returned, not
** raised. */
static int probe_main(lua_State *T) {
  lua_pushboolean(T, run_probe(T));
  return 1;
}

static int run_on_own_thread(lua_State *L) {
  lua_State *T = lua_newthread(L);
  lua_pushcfunction(T, probe_main);
  int nres = 0;
  int on = lua_resume(T, L, 0, &nres) == LUA_OK && nres == 1 && lua_toboolean(T, -1);
  lua_pop(L, 1);   /* the thread, and its stack with it */
  return on;
}

void kls_probe(lua_State *L) {
  /* once per process; not under a lock, since the probe's lua_call may
  ** raise (memory): two states probing at once reach the same answer */
  static int probed;
  if (__atomic_load_n(&probed, __ATOMIC_ACQUIRE)) return;
  const char *e = getenv("KJIT_NO_STACK_READS");
  int on = 0;
  if (e && *e && strcmp(e, "0") != 0) set_status("off: KJIT_NO_STACK_READS is set");
  else {
    const char *t = getenv("KJIT_TEST_PROBE_SKEW");
    __atomic_store_n(&probe_skew, t && strcmp(t, "1") == 0, __ATOMIC_RELAXED);
    on = run_on_own_thread(L);
  }
  __atomic_store_n(&kls_on, on, __ATOMIC_RELAXED);
  __atomic_store_n(&probed, 1, __ATOMIC_RELEASE);
}

const KlsFrameLayout *kls_frame_layout(void) {
  static const KlsFrameLayout lay = {
    offsetof(KlsState, top), offsetof(KlsState, ci), offsetof(KlsCallInfo, func),
    offsetof(KlsCallInfo, top), sizeof(KlsStackValue), offsetof(KlsTValue, tt_), LUA_MINSTACK
  };
  return __atomic_load_n(&kls_on, __ATOMIC_RELAXED) ? &lay : NULL;
}

/* ---- A Lua closure's upvalues (lua_stack.h) ---- */

/* Reads the upvalues of the closure at idx both ways: 1 if all agree. */
static int upvalues_agree(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TFUNCTION || lua_iscfunction(L, idx)) return 0;
  const KlsLClosure *c = lua_topointer(L, idx);
  int n = 0;
  while (lua_getupvalue(L, idx, n + 1) != NULL) {
    const KlsTValue *v = n < c->nupvalues ? kls_upvalue(c, n) : NULL;
    int ok = v != NULL && agrees(L, lua_gettop(L), v);
    if (ok && v->tt_ >= 0x40)   /* (collectable: the same object) */
      ok = v->value_.gc == lua_topointer(L, -1) || lua_type(L, -1) == LUA_TSTRING;
    lua_pop(L, 1);
    if (!ok) return 0;
    n++;
  }
  return n == c->nupvalues && n == 5;
}

static int upvalues_probe_check(lua_State *L) {
  lua_pushboolean(L, upvalues_agree(L, 1));
  return 1;
}

/* Protected: a closure over five locals of a running function (open
** upvalues) and, returned, over five closed ones. */
static int upvalues_probe_p(lua_State *L) {
  if (luaL_loadstring(L,
        "local a, b, c, d, e = 42, -0.5, {}, 'k', true\n"
        "local function f() return a, b, c, d, e end\n"
        "local check = ...\n"
        "if not check(f) then return false end\n"
        "return f") != LUA_OK) return 0;
  lua_pushcfunction(L, upvalues_probe_check);
  lua_call(L, 1, 1);
  lua_pushboolean(L, lua_type(L, -1) == LUA_TFUNCTION && upvalues_agree(L, lua_gettop(L)));
  return 1;
}

int kls_upvalues_on(lua_State *L) {
  static int state;   /* 0 not probed, 1 on, 2 off */
  int st = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (st == 0) {
    int on = 0;
    if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) {
      int top = lua_gettop(L);
      lua_pushcfunction(L, upvalues_probe_p);
      on = lua_pcall(L, 0, 1, 0) == LUA_OK && lua_toboolean(L, -1);
      lua_settop(L, top);
    }
    st = on ? 1 : 2;
    __atomic_store_n(&state, st, __ATOMIC_RELEASE);
  }
  return st == 1;
}
