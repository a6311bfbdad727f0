/*
** runtime/luavalue.c: Lua values in compiled code (tables, and whatever
** is read from a table until it is checked), through the Lua API.
**
** How values are anchored
** -----------------------
** Compiled code never holds a pointer to a collectable object. Every IR
** value of Lua type (compile.h T_LUA) lives in a slot of the Lua stack,
** and compiled code holds only the slot's absolute stack index (an i32).
** A specialization that holds Lua values opens a frame on entry
** (kjit_lv_open: base = lua_gettop(L) + 1, then lua_settop(L, base + n - 1))
** and gives each such IR value a slot of its own, as the VM gives each
** local a register: a loop overwrites the same slot each iteration. A phi
** has a slot of its own too, written on every edge into its block (see
** codegen/cg_lua.c). The frame is closed on return (kjit_lv_close). The
** garbage collector therefore sees every value compiled code holds: it is
** on the stack of the dispatcher's C function, between its arguments and
** the top. Arguments of Lua type are the dispatcher's own stack slots (the
** caller's arguments), and a compiled callee's are its caller's slots:
** neither is ever written by the callee. A result of Lua type is copied by
** the callee into a slot of its caller's frame (the caller says which),
** and the root's into a slot the entry wrapper reserves, which the
** dispatcher pushes. Numbers boxed for an API call (a key, a stored value)
** go into a few scratch slots at the end of the frame. Numbers are not
** collectable: a number read from a table is handed back to compiled code
** as (tag, bits) and kept in registers, its slot left unwritten. Compiled
** code may also keep the address of a table next to its slot (a hint for
** luatable.c's fast paths): valid only while that slot holds the table,
** which it does for as long as compiled code uses the value.
**
** Why these helpers may longjmp
** -----------------------------
** They call the Lua API: lua_gettable runs an __index metamethod, which
** may raise; a table may fail to grow (memory). A Lua error raised inside
** such a call longjmps through the compiled frames to the enclosing pcall,
** as in Ravi. That is safe because compiled code holds nothing that needs
** freeing across these calls: its stack frames are plain C frames, its
** Lua values are on the Lua stack (discarded by the unwinding), and the
** dispatcher has nothing to undo. Writes done before the error stay done,
** as interpreted. Type errors kjit can foresee (indexing a nil, arithmetic
** on a table without metamethods, comparing a table with a number) are
** NOT raised here: the helper returns a KLV_* code and compiled code raises
** the error through kjit_lv_typeerror and co. with the user's file:line
** and Lua's description of the operand ("(field 'x')"), since an error
** raised from inside the dispatcher's C function would get no position
** from the VM.
**
** Every helper takes L: the dispatcher's KErr.L (krt_poll_begin). None is
** ever called from a kjit.prange worker or a GPU kernel (the code
** generator refuses Lua values there).
*/
#include "runtime/luavalue.h"
#include "host/lua_stack.h"   /* kls_on, for the JIT linker */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lauxlib.h"
#include "host/buffer.h"
#include "backend/cpu.h"
#include "runtime/luastring.h"
#include "runtime/runtime_lib.h"
#include "host/lua_stack.h"

/* ---- Frames --------------------------------------------------------------- */

/* A frame is opened and closed by moving the stack's top directly
** (host/lua_stack.h kls_open, kls_close: what lua_settop does, without
** its checks) when the load-time probe agreed (kls_on) and the running C
** function's reserved stack already has room; else through the API, which
** grows the stack. Either way closes either kind of frame. */
int32_t kjit_lv_open(lua_State *L, int32_t n) {
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) {
    int first = kls_open(L, n, LUA_MINSTACK);
    if (first) return first;
  }
  int first = lua_gettop(L) + 1;
  /* room for the frame and for what the helpers push above it */
  luaL_checkstack(L, n + LUA_MINSTACK, "kjit: too many values in compiled frames");
  lua_settop(L, first + n - 1);
  return first;
}

void kjit_lv_close(lua_State *L, int32_t first) {
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) kls_close(L, first);
  else lua_settop(L, first - 1);
}

void kjit_lv_copy(lua_State *L, int32_t from, int32_t to) {
  if (from == to) return;
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) kls_copy(L, from, to);
  else lua_copy(L, from, to);
}

/* ---- Boxing and unboxing --------------------------------------------------- */

void kjit_lv_setint(lua_State *L, int32_t slot, int64_t i) {
  lua_pushinteger(L, (lua_Integer)i);
  lua_replace(L, slot);
}

void kjit_lv_setnum(lua_State *L, int32_t slot, double d) {
  lua_pushnumber(L, d);
  lua_replace(L, slot);
}

/* A number given as (tag KLV_INT or KLV_FLT, bits) into slot. */
void kjit_lv_settagged(lua_State *L, int32_t slot, int32_t tag, int64_t bits) {
  if (tag == KLV_FLT) {
    double d;
    memcpy(&d, &bits, 8);
    lua_pushnumber(L, d);
  } else {
    lua_pushinteger(L, (lua_Integer)bits);
  }
  lua_replace(L, slot);
}

void kjit_lv_setbool(lua_State *L, int32_t slot, int32_t b) {
  lua_pushboolean(L, b);
  lua_replace(L, slot);
}

void kjit_lv_setnil(lua_State *L, int32_t slot) {
  lua_pushnil(L);
  lua_replace(L, slot);
}

void kjit_lv_setstr(lua_State *L, int32_t slot, const char *s, int64_t len) {
  lua_pushlstring(L, s, (size_t)len);
  lua_replace(L, slot);
}

int32_t kjit_lv_truthy(lua_State *L, int32_t slot) {
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) return kls_truthy(L, slot);
  return lua_toboolean(L, slot);
}

/* Whether slot holds nil (x == nil: codegen/cg_lua.c eq_nil). */
int32_t kjit_lv_isnil(lua_State *L, int32_t slot) {
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED))
    return (((const KlsState *)(void *)L)->ci->func[slot].val.tt_ & 0x0f) == KLS_NIL;
  return lua_isnil(L, slot);
}

/* The number in slot: 0 an integer, 1 a float (its bits in *out), -1 not
** a number. With strings set, a string that converts is a float, as
** luaL_checknumber and a numeric for's bounds read it. */
int32_t kjit_lv_tonum(lua_State *L, int32_t slot, int32_t strings, int64_t *out) {
  int t = lua_type(L, slot);
  if (t == LUA_TNUMBER) {
    if (lua_isinteger(L, slot)) { *out = (int64_t)lua_tointeger(L, slot); return 0; }
    double d = lua_tonumber(L, slot);
    memcpy(out, &d, 8);
    return 1;
  }
  if (t == LUA_TSTRING && strings) {
    int ok;
    double d = (double)lua_tonumberx(L, slot, &ok);
    if (!ok) return -1;
    memcpy(out, &d, 8);
    return 1;
  }
  return -1;
}

/* ---- Metamethods ------------------------------------------------------------ */

/* Has the value at idx a metamethod `event` (luaT_gettmbyobj: its
** metatable's raw field, strings' shared metatable included)? */
static int hasmeta(lua_State *L, int idx, const char *event) {
  if (!lua_getmetatable(L, idx)) return 0;
  lua_pushstring(L, event);
  int t = lua_rawget(L, -2);
  lua_pop(L, 2);
  return t != LUA_TNIL;
}

/* luaT_objtypename: a table's or userdata's __name, else its type. The
** name is left on the stack (a string the caller pops). */
static const char *objtypename(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  if ((t == LUA_TTABLE || t == LUA_TUSERDATA) && lua_getmetatable(L, idx)) {
    lua_pushliteral(L, "__name");
    lua_rawget(L, -2);
    lua_remove(L, -2);
    if (lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_pushstring(L, lua_typename(L, t));
  return lua_tostring(L, -1);
}

/* ---- Tables ------------------------------------------------------------------- */

/* Results of reads (and of arithmetic): a number comes back in *out with
** its tag (KLV_INT, KLV_FLT) and is not written to the slot; anything else
** goes to the slot dst (KLV_INSLOT). Compiled code keeps numbers in
** registers that way (codegen/cg_lua.c). */
int32_t kjit_lv_take(lua_State *L, int32_t dst, int64_t *out) {
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED) && dst > 0) {
    /* read and moved in place (host/lua_stack.h; dst a stack index of the
    ** running C function, a stack slot needs no barrier): every result of
    ** a call through a value comes here, 110 instructions through the API
    ** (lua_type, lua_isinteger, lua_tointeger, lua_settop) */
    KlsState *s = (KlsState *)(void *)L;
    const KlsTValue *v = &s->top[-1].val;
    unsigned char tt = v->tt_;
    if (tt == KLS_INT || tt == KLS_FLT) {
      memcpy(out, &v->value_, 8);
      s->top--;
      return tt == KLS_INT ? KLV_INT : KLV_FLT;
    }
    KlsTValue m = kls_replace(L, dst);
    *out = m.tt_ == KLS_TABLE ? (int64_t)(intptr_t)m.value_.gc : 0;
    return KLV_INSLOT;
  }
  if (lua_type(L, -1) == LUA_TNUMBER) {
    int32_t tag;
    if (lua_isinteger(L, -1)) { *out = (int64_t)lua_tointeger(L, -1); tag = KLV_INT; }
    else { double d = lua_tonumber(L, -1); memcpy(out, &d, 8); tag = KLV_FLT; }
    lua_settop(L, -2);
    return tag;
  }
  /* a table's address, for the fast paths of later accesses (luatable.c):
  ** valid while the slot holds it (tables do not move) */
  *out = lua_type(L, -1) == LUA_TTABLE ? (int64_t)(intptr_t)lua_topointer(L, -1) : 0;
  lua_replace(L, dst);
  return KLV_INSLOT;
}

/* A view of the kjit array in slot t (codegen/cg_luaview.c): compiled
** code indexes it natively while the value stays in its slot (which keeps
** the userdata alive). Only 1-D arrays of f64 or i64 whose memory is Lua's
** (not borrowed from a host, which may release it): info[0] the elements'
** address, info[1] the length; returns 1 for f64, 2 for i64, else 0
** (every access takes the helpers, which do what the array's metamethods
** do). Reads only: no metamethod, no allocation. */
int32_t kjit_lv_arrview(lua_State *L, int32_t t, int64_t *info) {
  info[0] = 0;
  info[1] = 0;
  const KBuffer *b = lua_type(L, t) == LUA_TUSERDATA ? kb_fast(L, t) : NULL;
  if (b == NULL || b->ndim != 1 || b->record != NULL || b->released != NULL) return 0;
  int kind = b->dtype == KJIT_F64 ? 1 : b->dtype == KJIT_I64 ? 2 : 0;
  if (kind == 0) return 0;
  info[0] = (int64_t)(uintptr_t)b->data;
  info[1] = b->shape[0];
  return kind;
}

/* Pushes a value given as (tag, bits, slot). */
void kjit_lv_push(lua_State *L, int32_t tag, int64_t bits, int32_t slot) {
  switch (tag) {
  case KLV_INT: lua_pushinteger(L, (lua_Integer)bits); break;
  case KLV_FLT: { double d; memcpy(&d, &bits, 8); lua_pushnumber(L, d); break; }
  case KLV_BOOL: lua_pushboolean(L, bits != 0); break;
  case KLV_NIL: lua_pushnil(L); break;
  default: lua_pushvalue(L, slot); break;
  }
}

/* Can the value at t be indexed (read: __index; write: __newindex)? */
static int indexable(lua_State *L, int t, const char *event) {
  return lua_type(L, t) == LUA_TTABLE || hasmeta(L, t, event);
}

/* Errors the VM raises inside an API call, located (refuse3). lua_gettable
** and co. follow the indexed value's __index (__newindex) chain; where it
** ends at a value that has no such metamethod (`__index = 5`), the VM
** raises "attempt to index a number value" from inside the call, whose
** running function is kjit's C function: the message gets no position.
** dead_end follows the chain first, raw (lua_getmetatable and lua_rawget
** call nothing), and raises that error itself at the site's file:line in
** the interpreter's words (the value is no variable of the user's: no
** "(field ...)"), and the VM's "'__index' chain too long; possibly a loop"
** the same way. It runs only on the API path (fields found in place never
** get here), and only where compiled code gave a site (s; NULL: as
** before). The key is at stack index key; the indexed value at t, which
** the caller has checked (indexable) itself. */
enum { MAXTAGLOOP = 2000 };   /* (lvm.c) */
static void raise_at(lua_State *L, const char *chunk, int32_t line);

/* "'__index' chain too long; possibly a loop" in the running Lua's own
** words (5.4.0-5.4.4 say "possible loop"), found by following such a
** loop for real, protected (as kjit_lv_keyerror finds its words). */
static int chain_p(lua_State *L) {
  int set = lua_toboolean(L, 1);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, set ? "__newindex" : "__index");
  lua_setmetatable(L, -2);
  if (set) { lua_pushinteger(L, 1); lua_setfield(L, -2, "x"); }
  else lua_getfield(L, -1, "x");
  return 0;
}
static void chain_error(lua_State *L, int set, const char *chunk, int32_t line) {
  lua_pushcfunction(L, chain_p);
  lua_pushboolean(L, set);
  if (lua_pcall(L, 1, 0, 0) == LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
    lua_settop(L, lua_gettop(L) - 1);
    lua_pushstring(L, set ? "'__newindex' chain too long; possibly a loop"
                          : "'__index' chain too long; possibly a loop");
  }
  raise_at(L, chunk, line);
}
/* Returns 1 where the chain ends at a C function (its errors are located
** by its caller's position: access_at makes the access from the site's
** line), else 0. */
static int dead_end(lua_State *L, const KlvSite *s, int t, int key, int set) {
  if (s == NULL) return 0;
  const char *event = set ? "__newindex" : "__index";
  int top = lua_gettop(L);
  luaL_checkstack(L, 6, "kjit: an __index chain");
  lua_pushvalue(L, t);
  int v = top + 1;
  for (int loop = 0; loop < MAXTAGLOOP; loop++) {
    int istab = lua_type(L, v) == LUA_TTABLE;
    if (istab) {
      lua_pushvalue(L, key);
      if (lua_rawget(L, v) != LUA_TNIL) { lua_settop(L, top); return 0; }   /* found there */
      lua_pop(L, 1);
    }
    int tt = LUA_TNIL;
    if (lua_getmetatable(L, v)) {
      lua_pushstring(L, event);
      tt = lua_rawget(L, -2);
    }
    if (tt == LUA_TNIL) {
      if (istab || loop == 0) { lua_settop(L, top); return 0; }   /* a plain table: no error */
      lua_pushfstring(L, "attempt to index a %s value", objtypename(L, v));
      kjit_lv_raise(L, lua_tostring(L, -1), s->chunk, s->line);
    }
    if (tt == LUA_TFUNCTION) {   /* called: its own errors */
      int c = lua_iscfunction(L, -1);
      lua_settop(L, top);
      return c;
    }
    lua_copy(L, -1, v);   /* t = tm, as lvm.c luaV_finishget */
    lua_settop(L, v);
  }
  chain_error(L, set, s->chunk, s->line);
  return 0;
}

/* t[k] (set: t[k] = v; k then v on top, popped), an __index (__newindex)
** chain ending at a C function: made by a Lua function on s's line
** (runtime_lib.c's trampolines "[]" and "[]="), so the C function's errors
** read as interpreted: "t.lua:5: bad argument #1 to 'index' ...". A get's
** result is left on top. */
static void access_at(lua_State *L, const KlvSite *s, int t, int set) {
  char site[LUA_IDSIZE + 48];
  snprintf(site, sizeof site, "%.*s\n%d\n%s\n", LUA_IDSIZE, s->chunk ? s->chunk : "?",
           (int)s->line, set ? "[]=" : "[]");
  krt_push_trampoline_at(L, (const char *)s + set, site, !set);   /* (one key per kind) */
  lua_pushvalue(L, t);
  lua_rotate(L, -2 - (set ? 2 : 1), 2);   /* fn, t below k [v] */
  lua_call(L, set ? 3 : 2, set ? 0 : 1);
}

/* The key k (a field name, an integer) pushed, dead_end, popped; or, where
** the access is to be made by access_at, left on top (returns 1). */
static int dead_end_field(lua_State *L, const KlvSite *s, int t, const char *k, int set) {
  if (s == NULL) return 0;
  lua_pushstring(L, k);
  if (dead_end(L, s, t, lua_gettop(L), set)) return 1;
  lua_pop(L, 1);
  return 0;
}
static int dead_end_int(lua_State *L, const KlvSite *s, int t, int64_t i, int set) {
  if (s == NULL) return 0;
  lua_pushinteger(L, (lua_Integer)i);
  if (dead_end(L, s, t, lua_gettop(L), set)) return 1;
  lua_pop(L, 1);
  return 0;
}

static int32_t gettable_at(lua_State *L, const KlvSite *s, int32_t t, int32_t k, int32_t dst,
                           int64_t *out) {
  if (!indexable(L, t, "__index")) return KLV_BADA;
  int viac = dead_end(L, s, t, k, 0);
  lua_pushvalue(L, k);
  if (viac) access_at(L, s, t, 0);
  else lua_gettable(L, t);
  return kjit_lv_take(L, dst, out);
}

int32_t kjit_lv_gettable(lua_State *L, int32_t t, int32_t k, int32_t dst, int64_t *out) {
  return gettable_at(L, NULL, t, k, dst, out);
}

/* kjit_lv_gettable and kjit_lv_settable with the access's site, for its
** position where the API would raise without one (dead_end). */
int32_t kjit_lv_gettable_at(lua_State *L, const KlvSite *s, int32_t t, int32_t k, int32_t dst,
                            int64_t *out) {
  return gettable_at(L, s, t, k, dst, out);
}
int32_t kjit_lv_settable_at(lua_State *L, const KlvSite *s, int32_t t, int32_t k, int32_t vtag,
                            int64_t vbits, int32_t v);

static int32_t geti_at(lua_State *L, const KlvSite *s, int32_t t, void *h, int64_t i,
                       int32_t dst, int64_t *out) {
  int32_t tag;
  if (kjit_lt_geti(L, t, h, i, dst, out, &tag)) return tag;
  /* a[i] of a 1-D kjit array read from a table (`self.data[i]`), in range:
  ** the element as its __index gives it (buffer.c m_index), without the
  ** metamethod call (refuse2; anything else takes the generic path) */
  KBuffer *b = lua_type(L, t) == LUA_TUSERDATA ? kb_fast(L, t) : NULL;
  if (b && b->ndim == 1 && b->record == NULL && !(b->released && *b->released) && i >= 1 &&
      i <= b->shape[0]) {
    kb_push_element(L, b, i - 1);
    return kjit_lv_take(L, dst, out);
  }
  if (!indexable(L, t, "__index")) return KLV_BADA;
  if (dead_end_int(L, s, t, i, 0)) access_at(L, s, t, 0);
  else lua_geti(L, t, (lua_Integer)i);
  return kjit_lv_take(L, dst, out);
}

int32_t kjit_lv_geti(lua_State *L, int32_t t, void *h, int64_t i, int32_t dst, int64_t *out) {
  return geti_at(L, NULL, t, h, i, dst, out);
}

static int32_t getfield_at(lua_State *L, const KlvSite *s, int32_t t, void *h, const char *k,
                           void **ks, int32_t dst, int64_t *out) {
  int32_t tag;
  if (kjit_lt_getfield(L, t, h, k, ks, dst, out, &tag)) return tag;
  if (!indexable(L, t, "__index")) return KLV_BADA;
  if (dead_end_field(L, s, t, k, 0)) access_at(L, s, t, 0);
  else lua_getfield(L, t, k);
  return kjit_lv_take(L, dst, out);
}

int32_t kjit_lv_getfield(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                         int32_t dst, int64_t *out) {
  return getfield_at(L, NULL, t, h, k, ks, dst, out);
}

/* t.k where compiled code's inline check missed (cg_lua.c lookup): the
** key's node is remembered in the site's *kn for the next inline check
** (luatable.c kjit_lt_findfield), then t.k as kjit_lv_getfield. */
int32_t kjit_lv_getfieldk(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                          int64_t *kn, int32_t dst, int64_t *out) {
  kjit_lt_findfield(h, ks, kn);
  return kjit_lv_getfield(L, t, h, k, ks, dst, out);
}

static int32_t settable_at(lua_State *L, const KlvSite *s, int32_t t, int32_t k, int32_t vtag,
                           int64_t vbits, int32_t v) {
  if (!indexable(L, t, "__newindex")) return KLV_BADA;
  if (lua_type(L, t) == LUA_TTABLE) {
    /* a nil or NaN key is never in the table: without __newindex, Lua
    ** raises (luaH_newkey) */
    int kt = lua_type(L, k);
    int nan = kt == LUA_TNUMBER && !lua_isinteger(L, k) && isnan(lua_tonumber(L, k));
    if ((kt == LUA_TNIL || nan) && !hasmeta(L, t, "__newindex"))
      return kt == LUA_TNIL ? KLV_KEYNIL : KLV_KEYNAN;
  }
  int viac = dead_end(L, s, t, k, 1);
  lua_pushvalue(L, k);
  kjit_lv_push(L, vtag, vbits, v);
  if (viac) access_at(L, s, t, 1);
  else lua_settable(L, t);
  return KLV_OK;
}

int32_t kjit_lv_settable(lua_State *L, int32_t t, int32_t k, int32_t vtag, int64_t vbits,
                         int32_t v) {
  return settable_at(L, NULL, t, k, vtag, vbits, v);
}

int32_t kjit_lv_settable_at(lua_State *L, const KlvSite *s, int32_t t, int32_t k, int32_t vtag,
                            int64_t vbits, int32_t v) {
  return settable_at(L, s, t, k, vtag, vbits, v);
}

static int32_t seti_at(lua_State *L, const KlvSite *s, int32_t t, void *h, int64_t i,
                       int32_t vtag, int64_t vbits, int32_t v) {
  if (kjit_lt_seti(L, t, h, i, vtag, vbits)) return KLV_OK;
  if (!indexable(L, t, "__newindex")) return KLV_BADA;
  int viac = dead_end_int(L, s, t, i, 1);
  kjit_lv_push(L, vtag, vbits, v);
  if (viac) access_at(L, s, t, 1);
  else lua_seti(L, t, (lua_Integer)i);
  return KLV_OK;
}

int32_t kjit_lv_seti(lua_State *L, int32_t t, void *h, int64_t i, int32_t vtag, int64_t vbits,
                     int32_t v) {
  return seti_at(L, NULL, t, h, i, vtag, vbits, v);
}

static int32_t setfield_at(lua_State *L, const KlvSite *s, int32_t t, void *h, const char *k,
                           void **ks, int32_t vtag, int64_t vbits, int32_t v) {
  int done = kjit_lt_setfield(L, t, h, k, ks, vtag, vbits, v);
  if (done == 1) return KLV_OK;
  if (done == 2) {   /* t holds k with a value: no metamethod, no dead end */
    kjit_lv_push(L, vtag, vbits, v);
    lua_setfield(L, t, k);
    return KLV_OK;
  }
  if (!indexable(L, t, "__newindex")) return KLV_BADA;
  int viac = dead_end_field(L, s, t, k, 1);
  kjit_lv_push(L, vtag, vbits, v);
  if (viac) access_at(L, s, t, 1);
  else lua_setfield(L, t, k);
  return KLV_OK;
}

int32_t kjit_lv_setfield(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                         int32_t vtag, int64_t vbits, int32_t v) {
  return setfield_at(L, NULL, t, h, k, ks, vtag, vbits, v);
}

/* t.k = v where the inline write missed: as kjit_lv_getfieldk. */
int32_t kjit_lv_setfieldk(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                          int64_t *kn, int32_t vtag, int64_t vbits, int32_t v) {
  kjit_lt_findfield(h, ks, kn);
  return kjit_lv_setfield(L, t, h, k, ks, vtag, vbits, v);
}

/* The accesses of a site (luavalue.h KlvSite): a number indexed is boxed
** into t (a scratch slot) first, where Lua looks for its metatable's
** __index (debug.setmetatable on numbers) or raises "attempt to index a
** number value" naming it. */
static int32_t site_obj(lua_State *L, int32_t otag, int64_t obits, int32_t t, void **h) {
  if (*h == (void *)&kjit_lt_none) *h = NULL;   /* (no table known: cg_lua.c hint) */
  if (otag != KLV_INSLOT) {
    kjit_lv_settagged(L, t, otag, obits);
    *h = NULL;
  }
  return t;
}

long kjit_lv_sgetfield_calls;   /* (the tests' fact: a method read inline calls none) */

int32_t kjit_lv_sgetfield(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                          void *h, int32_t dst, int64_t *out) {
  kjit_lv_sgetfield_calls++;
  t = site_obj(L, otag, obits, t, &h);
  if (otag == KLV_INSLOT) {   /* a method through its class: the site's hints (luatable.c) */
    int32_t r = kjit_lt_smethod(L, s, h, dst, out);
    if (r >= 0) return r;
  }
  kjit_lt_findfield(h, &s->ks, &s->kn);   /* (kjit_lv_getfieldk) */
  int32_t rc = getfield_at(L, s, t, h, s->name, &s->ks, dst, out);
  if (rc >= 0x10) kjit_lv_indexerror(L, rc, t, s->info, s->chunk, s->line);
  return rc;
}

static void raise_at(lua_State *L, const char *chunk, int32_t line);

/* t[i] and t[i] = v on a kjit array, whose metamethods (C functions,
** buffer.c) may raise (out of bounds, a value the array does not take):
** run protected, their message then raised again at the site's line, as
** interpreted (a C function raising inside the dispatcher gets no
** position from the VM). The in-range read takes kjit_lv_geti's direct
** path instead, and a view (codegen/cg_luaview.c) most others. */
static int arr_geti(lua_State *L) { lua_geti(L, 1, lua_tointeger(L, 2)); return 1; }
static int arr_seti(lua_State *L) { lua_seti(L, 1, lua_tointeger(L, 2)); return 0; }
static int arr_get(lua_State *L) { lua_gettable(L, 1); return 1; }
static int arr_set(lua_State *L) { lua_settable(L, 1); return 0; }
static int is_array(lua_State *L, int32_t t) {
  return lua_type(L, t) == LUA_TUSERDATA && kb_fast(L, t) != NULL;
}
static void array_call(lua_State *L, const KlvSite *s, int nargs, int nres) {
  if (lua_pcall(L, nargs, nres, 0) == LUA_OK) return;
  if (lua_type(L, -1) == LUA_TSTRING) raise_at(L, s->chunk, s->line);
  lua_error(L);   /* (an error value that is not a message: as it is) */
}

int32_t kjit_lv_sgeti(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int64_t i, int32_t dst, int64_t *out) {
  if (otag == KLV_INSLOT && h) {   /* a table whose address compiled code holds */
    int32_t r = kjit_lt_sgeti(L, h, i, dst, out);
    if (r >= 0) return r;
  }
  t = site_obj(L, otag, obits, t, &h);
  if (is_array(L, t)) {
    const KBuffer *b = kb_fast(L, t);
    if (!(b->ndim == 1 && b->record == NULL && !b->released && i >= 1 && i <= b->shape[0])) {
      lua_pushcfunction(L, arr_geti);
      lua_pushvalue(L, t);
      lua_pushinteger(L, (lua_Integer)i);
      array_call(L, s, 2, 1);
      return kjit_lv_take(L, dst, out);
    }
  }
  int32_t rc = geti_at(L, s, t, h, i, dst, out);
  if (rc >= 0x10) kjit_lv_indexerror(L, rc, t, s->info, s->chunk, s->line);
  return rc;
}

int32_t kjit_lv_ssetfield(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                          void *h, int32_t vtag, int64_t vbits, int32_t v) {
  t = site_obj(L, otag, obits, t, &h);
  kjit_lt_findfield(h, &s->ks, &s->kn);   /* (kjit_lv_setfieldk) */
  int32_t rc = setfield_at(L, s, t, h, s->name, &s->ks, vtag, vbits, v);
  if (rc != KLV_OK) kjit_lv_indexerror(L, rc, t, s->info, s->chunk, s->line);
  return rc;
}

int32_t kjit_lv_sseti(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int64_t i, int32_t vtag, int64_t vbits, int32_t v) {
  t = site_obj(L, otag, obits, t, &h);
  if (is_array(L, t)) {
    lua_pushcfunction(L, arr_seti);
    lua_pushvalue(L, t);
    lua_pushinteger(L, (lua_Integer)i);
    kjit_lv_push(L, vtag, vbits, v);
    array_call(L, s, 3, 0);
    return KLV_OK;
  }
  int32_t rc = seti_at(L, s, t, h, i, vtag, vbits, v);
  if (rc != KLV_OK) kjit_lv_indexerror(L, rc, t, s->info, s->chunk, s->line);
  return rc;
}

int32_t kjit_lv_sgetk(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int32_t ktag, int64_t kbits, int32_t kslot, int32_t dst, int64_t *out) {
  if (ktag == KLV_INT) return kjit_lv_sgeti(L, s, otag, obits, t, h, kbits, dst, out);
  t = site_obj(L, otag, obits, t, &h);
  if (is_array(L, t)) {   /* a[1.5], a[2.0]: the array's rules, located */
    lua_pushcfunction(L, arr_get);
    lua_pushvalue(L, t);
    kjit_lv_push(L, ktag, kbits, kslot);
    array_call(L, s, 2, 1);
    return kjit_lv_take(L, dst, out);
  }
  kjit_lv_push(L, ktag, kbits, kslot);
  int32_t rc = gettable_at(L, s, t, lua_gettop(L), dst, out);
  lua_pop(L, 1);   /* the key (gettable's result went to dst) */
  if (rc >= 0x10) kjit_lv_indexerror(L, rc, t, s->info, s->chunk, s->line);
  return rc;
}

int32_t kjit_lv_ssetk(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int32_t ktag, int64_t kbits, int32_t kslot, int32_t vtag,
                      int64_t vbits, int32_t v) {
  if (ktag == KLV_INT) return kjit_lv_sseti(L, s, otag, obits, t, h, kbits, vtag, vbits, v);
  t = site_obj(L, otag, obits, t, &h);
  if (is_array(L, t)) {
    lua_pushcfunction(L, arr_set);
    lua_pushvalue(L, t);
    kjit_lv_push(L, ktag, kbits, kslot);
    kjit_lv_push(L, vtag, vbits, v);
    array_call(L, s, 3, 0);
    return KLV_OK;
  }
  kjit_lv_push(L, ktag, kbits, kslot);
  int32_t rc = settable_at(L, s, t, lua_gettop(L), vtag, vbits, v);
  lua_pop(L, 1);
  if (rc != KLV_OK) kjit_lv_indexerror(L, rc, t, s->info, s->chunk, s->line);
  return rc;
}

/* #t; a __len metamethod (of any value but a string) is called from
** site's trampoline ("chunk\nline\n#\n": runtime_lib.c), a Lua function on
** the user's line, so that one which cannot be called ("attempt to call a
** number value (metamethod 'len')") or a C function's error ("bad argument
** #1 to 'len'") is located as interpreted. */
int32_t kjit_lv_len(lua_State *L, int32_t t, int32_t dst, int64_t *out, const char *site) {
  int tt = lua_type(L, t);
  if (tt != LUA_TSTRING && hasmeta(L, t, "__len")) {
    krt_push_trampoline(L, site, 1);
    lua_pushvalue(L, t);
    lua_call(L, 1, 1);
  } else if (tt == LUA_TTABLE || tt == LUA_TSTRING) {
    lua_len(L, t);
  } else {
    return KLV_BADA;
  }
  return kjit_lv_take(L, dst, out);
}

int64_t kjit_lv_newtable(lua_State *L, int32_t dst, int32_t narr, int32_t nrec) {
  lua_createtable(L, narr, nrec);
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED))
    return (int64_t)(intptr_t)kls_replace(L, dst).value_.gc;
  int64_t h = (int64_t)(intptr_t)lua_topointer(L, -1);
  lua_replace(L, dst);
  return h;
}

/* t.k = v into the table its constructor is filling (codegen/cg_lua.c
** in_ctor: `{x = a, y = b}`, k a constant short name): nothing else holds
** t yet, so it has no metatable and the write is a raw one, which
** lua_setfield does as the VM's SETFIELD does (luaH's insertion, the
** metamethod cache reset), without the site's inline path and checks; a
** number or a boolean into a node of its own is written in place
** (luatable.c kjit_lt_ctorfield; h the table, ks the site's key cache). */
void kjit_lv_ctorfield(lua_State *L, int32_t t, void *h, const char *k, void **ks, int32_t vtag,
                       int64_t vbits, int32_t v) {
  if (h != (void *)&kjit_lt_none && kjit_lt_ctorfield(L, h, k, ks, vtag, vbits)) return;
  kjit_lv_push(L, vtag, vbits, v);
  lua_setfield(L, t, k);
}

/* setmetatable(t, mt) as compiled code calls it (codegen/cg_lua.c
** cg_lua_setmetatable): t and mt as (tag, bits, slot) triples, the result
** into slot dst and its address returned (0: not a table). The common case,
** t a table in its slot, mt a table or nil in its slot, t's metatable (if
** any) without a __metatable field, is luaB_setmetatable's own work:
** lua_setmetatable, which marks t for finalization when mt has __gc (as
** the library's call does); both stay in their slots, where the collector
** sees them. Anything else (a bad argument, a protected metatable) calls
** the library's setmetatable from the site's trampoline ("chunk\nline\n
** setmetatable\nalias": runtime_lib.c), so that its error reads as
** interpreted, the name as the source spells it, at the user's line.
** Where t has no metatable and mt is known to have no __gc, luatable.c
** kjit_lt_setmt sets it in place first. */
int64_t kjit_lv_setmt(lua_State *L, int32_t ttag, int64_t tbits, int32_t t, int32_t mtag,
                      int64_t mbits, int32_t m, int32_t dst, const char *site) {
  if (ttag == KLV_INSLOT && mtag == KLV_INSLOT) {   /* (luatable.c: the common case inline) */
    int64_t h = kjit_lt_setmt(L, t, m, dst);
    if (h != 0) return h;
  }
  if (ttag == KLV_INSLOT && lua_type(L, t) == LUA_TTABLE &&
      (mtag == KLV_NIL || (mtag == KLV_INSLOT && (lua_type(L, m) == LUA_TTABLE || lua_isnil(L, m))))) {
    if (luaL_getmetafield(L, t, "__metatable") == LUA_TNIL) {   /* (pushes nothing then) */
      if (mtag == KLV_NIL) lua_pushnil(L);
      else lua_pushvalue(L, m);
      lua_setmetatable(L, t);
      lua_copy(L, t, dst);
      return (int64_t)(intptr_t)lua_topointer(L, dst);
    }
    lua_pop(L, 1);
  }
  krt_push_trampoline(L, site, 1);
  kjit_lv_push(L, ttag, tbits, t);
  kjit_lv_push(L, mtag, mbits, m);
  lua_call(L, 2, 1);
  lua_replace(L, dst);
  return lua_type(L, dst) == LUA_TTABLE ? (int64_t)(intptr_t)lua_topointer(L, dst) : 0;
}

void kjit_lv_setlist(lua_State *L, int32_t t, void *h, int64_t base, int32_t n,
                     const KlvItem *items) {
  if (kjit_lt_setlist(L, h, base, n, items)) return;
  for (int32_t i = 0; i < n; i++)
    kjit_lv_rawseti(L, t, base + i + 1, items[i].tag, items[i].bits, items[i].slot);
}

/* The constructor's table in slot dst, made with narr array and nrec hash
** slots, its list about to end at index last (`{x = 1, g(x)}` with g's
** count known only now: ir_type.c kty_ctor_grows): grown as luaV_execute's
** OP_SETLIST grows it, luaH_resizearray(t, last) when last passes narr.
** The API cannot resize a table in place, so the grown table is a new one
** with the same hash size (nrec gives the one the VM's OP_NEWTABLE gave:
** the constructor's fields never outgrow it) and T's entries reinserted
** in lua_next's order, the array part's then the nodes' in index order,
** as luaH_resize's reinsert does: the same array, the same node layout.
** Nothing else can hold the old table yet (a constructor is reachable
** only when it ends). Returns the table's address. */
int64_t kjit_lv_ctor_grow(lua_State *L, int32_t dst, int32_t last, int32_t narr, int32_t nrec) {
  if (last > narr) {
    luaL_checkstack(L, 4, "kjit: table constructor");
    lua_createtable(L, last, nrec);
    lua_pushnil(L);
    while (lua_next(L, dst)) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -4);
    }
    lua_replace(L, dst);
  }
  return (int64_t)(intptr_t)lua_topointer(L, dst);
}

/* The table registered at ref (a live upvalue or global: ir_type.c) into
** slot dst; its address. */
int64_t kjit_lv_getref(lua_State *L, int32_t ref, int32_t dst) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  int64_t h = lua_type(L, -1) == LUA_TTABLE ? (int64_t)(intptr_t)lua_topointer(L, -1) : 0;
  lua_replace(L, dst);
  return h;
}

/* The address of the table in slot t (0 for anything else): see result. */
int64_t kjit_lv_ptr(lua_State *L, int32_t t) {
  if (__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) {   /* read in place (host/lua_stack.h) */
    const KlsTValue *v = &((const KlsState *)(void *)L)->ci->func[t].val;
    return v->tt_ == KLS_TABLE ? (int64_t)(intptr_t)v->value_.gc : 0;
  }
  return lua_type(L, t) == LUA_TTABLE ? (int64_t)(intptr_t)lua_topointer(L, t) : 0;
}

void kjit_lv_rawseti(lua_State *L, int32_t t, int64_t i, int32_t vtag, int64_t vbits, int32_t v) {
  kjit_lv_push(L, vtag, vbits, v);
  lua_rawseti(L, t, (lua_Integer)i);
}

/* ---- Arithmetic and comparisons --------------------------------------------- */

static const char *const arith_events[] = {
  "__add", "__sub", "__mul", "__mod", "__pow", "__div", "__idiv",
  "__band", "__bor", "__bxor", "__shl", "__shr", "__unm", "__bnot"
};

static int isbitop(int op) {
  return op == LUA_OPBAND || op == LUA_OPBOR || op == LUA_OPBXOR || op == LUA_OPSHL ||
         op == LUA_OPSHR || op == LUA_OPBNOT;
}

/* Converts to an integer as the VM's bitwise operators do (numbers and
** strings, floats only when integral). */
static int tointeger(lua_State *L, int idx) {
  int ok;
  lua_tointegerx(L, idx, &ok);
  return ok;
}

/* Lua's op on a and b (b ignored for LUA_OPUNM, LUA_OPBNOT) into dst, or
** the code of the error Lua would raise, found before anything runs. */
int32_t kjit_lv_arith(lua_State *L, int32_t op, int32_t a, int32_t b, int32_t dst, int64_t *out) {
  int unary = op == LUA_OPUNM || op == LUA_OPBNOT;
  if (unary) b = a;
  int na = lua_type(L, a) == LUA_TNUMBER, nb = lua_type(L, b) == LUA_TNUMBER;
  int raw;   /* luaO_rawarith succeeds: no metamethod is looked at */
  if (isbitop(op)) raw = tointeger(L, a) && tointeger(L, b);
  else raw = na && nb;
  if (raw && (op == LUA_OPIDIV || op == LUA_OPMOD) && lua_isinteger(L, a) &&
      lua_isinteger(L, b) && lua_tointeger(L, b) == 0)
    return op == LUA_OPIDIV ? KLV_IDIV0 : KLV_MOD0;
  if (!raw && !hasmeta(L, a, arith_events[op]) && (unary || !hasmeta(L, b, arith_events[op]))) {
    if (isbitop(op) && na && nb)   /* luaG_tointerror */
      return tointeger(L, a) ? KLV_NOINTB : KLV_NOINTA;
    return na ? KLV_BADB : KLV_BADA;   /* luaG_opinterror */
  }
  lua_pushvalue(L, a);
  if (!unary) lua_pushvalue(L, b);
  lua_arith(L, op);
  return kjit_lv_take(L, dst, out);
}

/* a == b, a < b, a <= b (LUA_OPEQ, LUA_OPLT, LUA_OPLE) as Lua compares
** them: 0 or 1, or KLV_CMP for an ordering Lua raises on. */
int32_t kjit_lv_compare(lua_State *L, int32_t op, int32_t a, int32_t b) {
  if (op != LUA_OPEQ) {
    int ta = lua_type(L, a), tb = lua_type(L, b);
    int plain = (ta == LUA_TNUMBER && tb == LUA_TNUMBER) || (ta == LUA_TSTRING && tb == LUA_TSTRING);
    if (!plain) {
      const char *ev = op == LUA_OPLT ? "__lt" : "__le";
      int mm = hasmeta(L, a, ev) || hasmeta(L, b, ev);
      if (!mm && op == LUA_OPLE) mm = hasmeta(L, a, "__lt") || hasmeta(L, b, "__lt");
      if (!mm) return KLV_CMP;
    }
  }
  return lua_compare(L, a, b, op);
}

/* ---- Errors raised by compiled code --------------------------------------------- */

/* "chunk:line: " then the message at the top, raised. */
static void raise_at(lua_State *L, const char *chunk, int32_t line) {
  lua_pushfstring(L, "%s:%d: ", chunk ? chunk : "?", (int)line);
  lua_insert(L, -2);
  lua_concat(L, 2);
  lua_error(L);
}

/* pre, the Lua type name of the value in slot (luaT_objtypename), post:
** "attempt to index a " nil " value (field 'x')", "bad argument #1 to
** 'sqrt' (number expected, got " table ")", raised at chunk:line. */
void kjit_lv_typeerror(lua_State *L, int32_t slot, const char *pre, const char *post,
                       const char *chunk, int32_t line) {
  const char *tn = objtypename(L, slot);
  lua_pushfstring(L, "%s%s%s", pre, tn, post ? post : "");
  lua_remove(L, -2);
  raise_at(L, chunk, line);
}

/* luaG_ordererror. */
void kjit_lv_cmperror(lua_State *L, int32_t a, int32_t b, const char *chunk, int32_t line) {
  const char *t1 = objtypename(L, a);
  const char *t2 = objtypename(L, b);
  if (strcmp(t1, t2) == 0) lua_pushfstring(L, "attempt to compare two %s values", t1);
  else lua_pushfstring(L, "attempt to compare %s with %s", t1, t2);
  lua_remove(L, -2);
  lua_remove(L, -2);
  raise_at(L, chunk, line);
}

/* t[nil] = v and t[0/0] = v: the running Lua's own words (5.4.0-5.4.2
** say "index is nil", later releases "table index is nil"), found by
** making the same store on a fresh table, protected. */
static int badkey_p(lua_State *L) {
  lua_newtable(L);
  if (lua_toboolean(L, 1)) lua_pushnumber(L, 0.0 / 0.0); else lua_pushnil(L);
  lua_pushinteger(L, 1);
  lua_rawset(L, -3);
  return 0;
}

void kjit_lv_keyerror(lua_State *L, int32_t nan, const char *chunk, int32_t line) {
  lua_pushcfunction(L, badkey_p);
  lua_pushboolean(L, nan);
  if (lua_pcall(L, 1, 0, 0) == LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
    lua_settop(L, lua_gettop(L) - 1);
    lua_pushstring(L, nan ? "table index is NaN" : "table index is nil");
  }
  raise_at(L, chunk, line);
}

void kjit_lv_raise(lua_State *L, const char *msg, const char *chunk, int32_t line) {
  lua_pushstring(L, msg);
  raise_at(L, chunk, line);
}

/* The cold paths of compiled code, one call each (so that an access or an
** operation costs one call site for all its errors, not a block per
** message): rc is the code the helper returned; info, infob: cg_varinfo's
** description of the operands (" (field 'x')", or ""). */
void kjit_lv_indexerror(lua_State *L, int32_t rc, int32_t obj, const char *info,
                        const char *chunk, int32_t line) {
  if (rc == KLV_KEYNIL || rc == KLV_KEYNAN) kjit_lv_keyerror(L, rc == KLV_KEYNAN, chunk, line);
  lua_pushfstring(L, " value%s", info);
  kjit_lv_typeerror(L, obj, "attempt to index a ", lua_tostring(L, -1), chunk, line);
}

void kjit_lv_aritherror(lua_State *L, int32_t rc, int32_t a, int32_t b, int32_t bitwise,
                        const char *infoa, const char *infob, const char *chunk, int32_t line) {
  const char *info = (rc & 0xF) == 2 ? infob : infoa;
  switch (rc) {
  case KLV_BADA: case KLV_BADB:
    lua_pushfstring(L, " value%s", info);
    kjit_lv_typeerror(L, rc == KLV_BADB ? b : a,
                      bitwise ? "attempt to perform bitwise operation on a "
                              : "attempt to perform arithmetic on a ",
                      lua_tostring(L, -1), chunk, line);
    break;
  case KLV_NOINTA: case KLV_NOINTB:
    lua_pushfstring(L, "number%s has no integer representation", info);
    raise_at(L, chunk, line);
    break;
  case KLV_IDIV0: kjit_lv_raise(L, "attempt to divide by zero", chunk, line); break;
  default: kjit_lv_raise(L, "attempt to perform 'n%0'", chunk, line); break;   /* KLV_MOD0 */
  }
}

/* ---- Slow paths, whole ------------------------------------------------------------- */

/* Pushes an operand given as (tag, bits, slot); its absolute index. */
static int32_t pushop(lua_State *L, int32_t tag, int64_t bits, int32_t slot) {
  kjit_lv_push(L, tag, bits, slot);
  return lua_gettop(L);
}

/* Arithmetic that is not on two numbers (metamethods, strings, errors),
** its operands as compiled code holds them: the result as kjit_lv_arith
** gives it (a tag, a number in *out, anything else in dst); an error is
** raised here, located, with the operands' descriptions. One call per
** operation, so the operation's cold path is small code. */
/* The metamethod for event (a name, "__add") that Lua would call for the
** values at a and then b (b 0: a only), where it is there but cannot be
** called (neither a function nor a value with __call): the VM raises
** "attempt to call a number value (metamethod 'add')" from inside the API
** call, with no position; raised here instead, located (refuse3).
** Returns 1 where it is a function or has a __call (arith_at then makes
** the operation from the user's line, so that the errors located by the
** metamethod's caller are located as interpreted: a C function's
** luaL_error and luaL_argerror, a Lua function's error(msg, 2); called
** from here they had no position), else 0. */
static int mm_callable(lua_State *L, int a, int b, const char *event, const char *chunk,
                       int32_t line) {
  int top = lua_gettop(L);
  if (luaL_getmetafield(L, a, event) == LUA_TNIL &&
      (b == 0 || luaL_getmetafield(L, b, event) == LUA_TNIL))
    return 0;   /* none: the caller's own check says what Lua says */
  if (lua_type(L, -1) == LUA_TFUNCTION || luaL_getmetafield(L, -1, "__call") != LUA_TNIL) {
    lua_settop(L, top);
    return 1;
  }
  lua_pushfstring(L, "attempt to call a %s value (metamethod '%s')", objtypename(L, -1),
                  event + 2);
  raise_at(L, chunk, line);
  return 0;
}

/* Arithmetic op (LUA_OPADD ...) on the values at a and b (0: unary) made
** by a Lua function on chunk:line (runtime_lib.c's trampoline "op:+" ...,
** cached under key), so that a C function's error as the metamethod reads
** as interpreted ("t.lua:3: bad argument #1 to 'add'"). The result on top. */
static void arith_at(lua_State *L, const void *key, int op, int a, int b, const char *chunk,
                     int32_t line) {
  static const char *const paths[] = { "op:+", "op:-", "op:*", "op:%", "op:^", "op:/", "op://",
                                       "op:&", "op:|", "op:~", "op:<<", "op:>>", "op:u-",
                                       "op:u~" };   /* (lua.h's LUA_OP* order) */
  krt_push_op_trampoline(L, key, chunk, line, paths[op]);
  lua_pushvalue(L, a);
  if (b) lua_pushvalue(L, b);
  lua_call(L, b ? 2 : 1, 1);
}

int32_t kjit_lv_arithx(lua_State *L, int32_t op, int32_t atag, int64_t abits, int32_t aslot,
                       int32_t btag, int64_t bbits, int32_t bslot, int32_t dst, int64_t *out,
                       const char *chunk, int32_t line, const char *infoa, const char *infob,
                       const void *key) {
  int top = lua_gettop(L);
  int32_t a = pushop(L, atag, abits, aslot);
  int32_t b = op == LUA_OPUNM || op == LUA_OPBNOT ? a : pushop(L, btag, bbits, bslot);
  int viac = 0;
  if (lua_type(L, a) != LUA_TNUMBER || lua_type(L, b) != LUA_TNUMBER)   /* metamethods may run */
    viac = mm_callable(L, a, b == a ? 0 : b, arith_events[op], chunk, line);
  int str = lua_type(L, a) == LUA_TSTRING || lua_type(L, b) == LUA_TSTRING;
  /* a string in a bitwise operation with no metamethod to take it (the
  ** string library has none for them): the VM's error, naming the first
  ** operand that is not a number (luaT_trybinTM, luaG_opinterror), which
  ** lua_arith called from here would not name */
  int bitwise = op >= LUA_OPBAND && op != LUA_OPUNM;
  if (bitwise && str && !hasmeta(L, a, arith_events[op]) && !hasmeta(L, b, arith_events[op]))
    kjit_lv_aritherror(L, lua_type(L, a) != LUA_TNUMBER ? KLV_BADA : KLV_BADB, a, b, 1, infoa,
                       infob, chunk, line);
  /* a function as a table's or userdata's metamethod (a Lua one's
  ** error(msg, 2) names the user's line: found/arith-metamethod-error-level.lua), or a string
  ** operand beside a value with a metamethod of its own (a kjit array's
  ** __add, which calls the string's: lstrlib.c trymt; a Lua __add):
  ** computed by the operator's trampoline at the user's line, so that
  ** every error is located as interpreted: a Lua metamethod's at its own
  ** line only, one raised inside another C function at none, error(msg,
  ** 2) at the user's line (difffuzz 660170: kjit_ls_arith gave them all
  ** the user's line in front). A string with numbers and strings only runs
  ** the string library's metamethods alone, whose errors kjit_ls_arith
  ** locates, for about 1,200 instructions less an operation. */
  const char *event = arith_events[op];
  if (str ? (lua_type(L, a) != LUA_TSTRING && hasmeta(L, a, event)) ||
                (b != a && lua_type(L, b) != LUA_TSTRING && hasmeta(L, b, event))
          : viac) {
    arith_at(L, key ? key : (const void *)&arith_events[op], op, a, b == a ? 0 : b, chunk, line);
    int32_t rc = kjit_lv_take(L, dst, out);
    lua_settop(L, top);
    return rc;
  }
  int32_t rc = str ? kjit_ls_arith(L, op, a, b, dst, out, chunk, line)
                   : kjit_lv_arith(L, op, a, b, dst, out);
  if (rc >= 0x10) {
    kjit_lv_aritherror(L, rc, a, b, bitwise, infoa, infob, chunk, line);
  }
  lua_settop(L, top);
  return rc;
}

int32_t kjit_lv_sarith(lua_State *L, const KlvArith *s, int32_t atag, int64_t abits, int32_t aslot,
                       int32_t btag, int64_t bbits, int32_t bslot, int32_t dst, int64_t *out) {
  return kjit_lv_arithx(L, s->op, atag, abits, aslot, btag, bbits, bslot, dst, out, s->chunk,
                        s->line, s->infoa, s->infob, s);
}

static int32_t comparex_at(lua_State *L, int32_t op, int32_t atag, int64_t abits, int32_t aslot,
                           int32_t btag, int64_t bbits, int32_t bslot, const char *chunk,
                           int32_t line, const void *key, const char *site);

long kjit_lv_chain_calls;   /* (the tests' fact: a chain whose checks hold calls none) */
int32_t kjit_lv_chain(lua_State *L, const KlvChainOp *ops, int32_t nops, int32_t base,
                      const int64_t *leaves, int64_t *outs) {
  kjit_lv_chain_calls++;
  for (int32_t k = 0; k < nops; k++) {
    const KlvChainOp *o = &ops[k];
    int32_t tag[3] = { 0, 0, 0 }, slot[3] = { 0, 0, 0 };
    int64_t bits[3] = { 0, 0, 0 };
    int32_t ref[3] = { o->x, o->y, o->z };
    int n = o->a.op == KLV_CHAIN_GET ? 1 : o->a.op == KLV_CHAIN_SETI ? 3 : 2;
    for (int i = 0; i < n; i++) {
      if (ref[i] >= 0) {
        tag[i] = (int32_t)leaves[4 * ref[i]];
        bits[i] = leaves[4 * ref[i] + 1];
        slot[i] = (int32_t)leaves[4 * ref[i] + 2];
      } else {
        int32_t j = -1 - ref[i];
        tag[i] = (int32_t)outs[2 * j];
        bits[i] = outs[2 * j + 1];
        slot[i] = base + ops[j].dst;
      }
    }
    int64_t out = 0;
    int32_t rc = KLV_OK;
    void *h = o->a.op < 0 && o->a.op > KLV_CHAIN_EQ ? (void *)(intptr_t)leaves[4 * o->x + 3] : NULL;
    switch (o->a.op) {
    case KLV_CHAIN_GET:
      rc = kjit_lv_sgetfield(L, o->site, tag[0], bits[0], slot[0], h, base + o->dst, &out);
      break;
    case KLV_CHAIN_SET:
      kjit_lv_ssetfield(L, o->site, tag[0], bits[0], slot[0], h, tag[1], bits[1], slot[1]);
      break;
    case KLV_CHAIN_GETI:   /* (a key of any type: an integer as kjit_lv_sgeti) */
      rc = kjit_lv_sgetk(L, o->site, tag[0], bits[0], slot[0], h, tag[1], bits[1], slot[1], base + o->dst, &out);
      break;
    case KLV_CHAIN_SETI:
      kjit_lv_ssetk(L, o->site, tag[0], bits[0], slot[0], h, tag[1], bits[1], slot[1], tag[2], bits[2], slot[2]);
      break;
    case KLV_CHAIN_EQ: case KLV_CHAIN_LT: case KLV_CHAIN_LE: {
      /* a C function as the metamethod is called from the site's
      ** trampoline (as kjit_lv_comparex's), cached under the operation */
      int cop = o->a.op == KLV_CHAIN_EQ ? LUA_OPEQ : o->a.op == KLV_CHAIN_LT ? LUA_OPLT : LUA_OPLE;
      rc = comparex_at(L, cop, tag[0], bits[0], slot[0], tag[1], bits[1], slot[1], o->a.chunk,
                       o->a.line, &o->a, NULL);
      break;
    }
    case KLV_CHAIN_SQRT: {   /* its argument as luaL_checknumber takes it (strings convert) */
      int top = lua_gettop(L), ok;
      int32_t a = pushop(L, tag[0], bits[0], slot[0]);
      double d = (double)lua_tonumberx(L, a, &ok);
      if (!ok) kjit_lv_typeerror(L, a, o->a.infoa, o->a.infob, o->a.chunk, o->a.line);
      lua_settop(L, top);
      d = sqrt(d);
      memcpy(&out, &d, 8);
      rc = KLV_FLT;
      break;
    }
    default:
      rc = kjit_lv_arithx(L, o->a.op, tag[0], bits[0], slot[0], tag[1], bits[1], slot[1],
                          base + o->dst, &out, o->a.chunk, o->a.line, o->a.infoa, o->a.infob, &o->a);
    }
    outs[2 * k] = rc;
    outs[2 * k + 1] = out;
  }
  return 0;
}

/* A comparison that is not of two numbers: 0 or 1, or the ordering error
** raised here, located. A C function as the metamethod is called from
** site's trampoline ("chunk\nline\nop:<\n": runtime_lib.c), its errors
** located as interpreted. */
/* (key: the trampoline's cache key, a constant of the site; site: its
** text, or NULL: made from chunk, line and op where the cache misses) */
static int32_t comparex_at(lua_State *L, int32_t op, int32_t atag, int64_t abits, int32_t aslot,
                           int32_t btag, int64_t bbits, int32_t bslot, const char *chunk,
                           int32_t line, const void *key, const char *site) {
  int top = lua_gettop(L);
  int32_t a = pushop(L, atag, abits, aslot);
  int32_t b = pushop(L, btag, bbits, bslot);
  int ta = lua_type(L, a), tb = lua_type(L, b), viac = 0;
  if (op != LUA_OPEQ && !(ta == LUA_TNUMBER && tb == LUA_TNUMBER) &&
      !(ta == LUA_TSTRING && tb == LUA_TSTRING))
    viac = mm_callable(L, a, b, op == LUA_OPLT ? "__lt" : "__le", chunk, line);
  else if (op == LUA_OPEQ && ta == tb && (ta == LUA_TTABLE || ta == LUA_TUSERDATA) &&
           !lua_rawequal(L, a, b))   /* (luaV_equalobj: __eq of a, else of b) */
    viac = mm_callable(L, a, b, "__eq", chunk, line);
  if (viac) {
    if (site) krt_push_trampoline_at(L, key, site, 1);
    else krt_push_op_trampoline(L, key, chunk, line, op == LUA_OPEQ ? "op:==" : op == LUA_OPLT ? "op:<" : "op:<=");
    lua_pushvalue(L, a);
    lua_pushvalue(L, b);
    lua_call(L, 2, 1);
    int32_t r = lua_toboolean(L, -1);
    lua_settop(L, top);
    return r;
  }
  int32_t r = kjit_lv_compare(L, op, a, b);
  if (r == KLV_CMP) kjit_lv_cmperror(L, a, b, chunk, line);
  lua_settop(L, top);
  return r;
}

int32_t kjit_lv_comparex(lua_State *L, int32_t op, int32_t atag, int64_t abits, int32_t aslot,
                         int32_t btag, int64_t bbits, int32_t bslot, const char *chunk,
                         int32_t line, const char *site) {
  return comparex_at(L, op, atag, abits, aslot, btag, bbits, bslot, chunk, line, site, site);
}

/* ---- Names for the JIT linker ----------------------------------------------------- */

void kjit_lv_register(void) {
#define REG(f) kc_register_symbol(#f, (void *)f)
  REG(kjit_lv_open); REG(kjit_lv_close); REG(kjit_lv_copy);
  REG(kjit_lv_setint); REG(kjit_lv_setnum); REG(kjit_lv_setbool); REG(kjit_lv_setnil);
  REG(kjit_lv_setstr); REG(kjit_lv_truthy); REG(kjit_lv_isnil); REG(kjit_lv_tonum);
  REG(kjit_lv_gettable); REG(kjit_lv_getfield); REG(kjit_lv_settable); REG(kjit_lv_setfield);
  REG(kjit_lv_gettable_at); REG(kjit_lv_settable_at);
  REG(kjit_lv_geti); REG(kjit_lv_seti); REG(kjit_lv_getfieldk); REG(kjit_lv_setfieldk); REG(kjit_lv_ptr); REG(kjit_lv_getref);
  kc_register_symbol("kjit_lt_on", (void *)&kjit_lt_on);
  kc_register_symbol("kjit_lt_none", (void *)&kjit_lt_none);
  kc_register_symbol("kls_on", (void *)&kls_on);   /* inline frames and slot copies (codegen/cg_lua.c) */
  REG(kjit_lv_sarith); REG(kjit_lv_sgetfield); REG(kjit_lv_sgeti); REG(kjit_lv_ssetfield); REG(kjit_lv_sseti);
  REG(kjit_lv_sgetk); REG(kjit_lv_ssetk); REG(kjit_lv_arrview);
  REG(kjit_lt_fgetfield); REG(kjit_lt_findfield); REG(kjit_lt_fgeti); REG(kjit_lt_fsetfield); REG(kjit_lt_fseti);
  REG(kjit_lt_smethod);   /* (a method through its class: cg_lua.c inline_get) */
  REG(kjit_lv_len); REG(kjit_lv_newtable); REG(kjit_lv_setmt); REG(kjit_lv_ctorfield); REG(kjit_lv_setlist); REG(kjit_lv_ctor_grow); REG(kjit_lv_rawseti);
  REG(kjit_lv_arith); REG(kjit_lv_compare);
  REG(kjit_lv_typeerror); REG(kjit_lv_cmperror); REG(kjit_lv_indexerror); REG(kjit_lv_aritherror);
  REG(kjit_lv_settagged); REG(kjit_lv_arithx); REG(kjit_lv_chain); REG(kjit_lv_comparex); REG(kjit_lv_raise); REG(kjit_lv_keyerror);
#undef REG
}
