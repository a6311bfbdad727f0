/*
** runtime/luaarray.c: a kjit array that compiled code holds natively (a
** T_BUF value: its element pointer and extents) made a Lua value, where
** compiled code stores it into a table, passes it to a function value,
** assigns it to a global or an upvalue, keeps it in a cell (issue 29 item
** 1; the value model's point 5).
**
** The value is the userdata the array already is when there is one: an
** argument of a dispatcher (on the Lua stack below the compiled frames:
** the same userdata, so `t.a == a` as interpreted), or an array of this
** call made a userdata already (the anchors below). An array made by
** compiled code (a block of the call's allocation list, runtime/alloc.c)
** becomes a userdata here, once: the block is adopted as the dispatcher
** adopts returned arrays (kb_push_borrowed over it; its guard frees it,
** kal_release), and that userdata is anchored for the rest of the call in
** the registry (anchors[list] = {ud, ...}), because compiled code goes on
** using the memory through its native pointer while nothing else need hold
** the userdata (the table it went into may drop it). A view (a row m[i],
** a:slice(...)) becomes a view userdata of its owner (kb_push_view keeps
** the owner alive), anchored too, so that one view boxed twice is one
** value (anchors[view] = true marks those). The dispatcher (host/jit.c
** call_arrays) looks a returned array up
** in the anchors (kjit_la_push_anchors) and drops them when the call ends
** (kjit_la_drop; also when a call that never returned is found, and from
** the allocation box's __gc).
**
** A frozen array (an upvalue or a global a CPU function reads: cg_frozen.c)
** is pinned for the process (kjit_la_pin), found here among the pins.
**
** Arrays of records (refuse3) are boxed the same way: compiled code gives
** their dtype as the allocation list does (KJIT_RECORD | layout id << 8,
** alloc.h), an array of that layout holding the memory is the value, or a
** view of the records over it (krec_push_view), and a made one is adopted
** as an array of records (krec_push_borrowed). A record view (p[i], ndim
** 0) is a view of one record. An array field of records (`ps[i].v`,
** numbers in their memory) is a view of them.
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "common/karray.h"
#include "host/buffer.h"
#include "host/record.h"
#include "common/krecord.h"
#include "runtime/alloc.h"
#include "backend/cpu.h"
#include "runtime/luaarray.h"

static const char anchors_key = 0;   /* registry: { [lightuserdata list] = {ud, ...} } */
static const char pins_key = 0;      /* registry: { [ud] = true } (frozen arrays, cg_frozen.c) */

void kjit_la_pin(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &pins_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &pins_key);
  }
  lua_pushvalue(L, idx);   /* (a set: pinned once however often compiled) */
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* Pushes the anchors' table of list l (creating it when make), or returns
** 0 with nothing pushed. */
static int push_list_anchors(lua_State *L, const KAllocList *l, int make) {
  if (l == NULL) return 0;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &anchors_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    if (!make) return 0;
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &anchors_key);
  }
  if (lua_rawgetp(L, -1, l) != LUA_TTABLE) {
    lua_pop(L, 1);
    if (!make) { lua_pop(L, 1); return 0; }
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, -3, l);
  }
  lua_remove(L, -2);
  return 1;
}

int kjit_la_push_anchors(lua_State *L, const KAllocList *l) { return push_list_anchors(L, l, 0); }

void kjit_la_drop(lua_State *L, const KAllocList *l) {
  if (l == NULL) return;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &anchors_key) == LUA_TTABLE) {
    lua_pushnil(L);
    lua_rawsetp(L, -2, l);
  }
  lua_pop(L, 1);
}

/* Anchors the userdata on top (kept there) for the call of list l; a view
** is marked (anchors[view] = true: the dispatcher returns it for a view
** result only). */
static void anchor(lua_State *L, const KAllocList *l, int view) {
  if (l == NULL) return;
  push_list_anchors(L, l, 1);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  if (view) {
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
  }
  lua_pop(L, 1);
}

typedef struct Want {
  const char *data;
  int64_t bytes;
  kjit_dtype dtype;
  int ndim;
  const int64_t *shape;
  const KRecord *rec;   /* records of this layout (dtype KJIT_RECORD), else NULL */
} Want;

/* The Want for compiled code's (data, dtype, ndim, shape): dtype as the
** allocation list encodes it (a record layout's id above the low byte). */
static Want want(const char *data, int32_t dtype, int32_t ndim, const int64_t *shape) {
  Want w = { data, 0, (kjit_dtype)(dtype & 0xff), ndim, shape, NULL };
  if (kal_is_record(dtype)) {
    w.rec = krec_byid(kal_record_id(dtype));
    w.bytes = w.rec ? (int64_t)w.rec->size : 0;
  } else w.bytes = kb_dtype_bytes((kjit_dtype)dtype);
  for (int d = 0; d < ndim; d++) w.bytes *= shape[d];
  return w;
}

/* How the kjit array at idx holds w: 2 it is w, 1 w lies in its memory
** (same dtype; or an array of records, whose array fields are views of
** other dtypes in its memory), 0 neither. */
static int holds(lua_State *L, int idx, const Want *w) {
  const KBuffer *b = luaL_testudata(L, idx, KB_METATABLE);
  if (b == NULL) b = luaL_testudata(L, idx, KREC_ARRAY_MT);
  if (b == NULL) return 0;
  if (w->rec != NULL) {   /* records: in an array of records (of any layout: nested ones) */
    if (b->record == NULL) return 0;
    int64_t have = b->size * b->record->size;
    if (w->data < b->data || w->data > b->data + have || w->bytes > b->data + have - w->data) return 0;
    int same = b->record == w->rec && b->data == w->data && b->ndim == w->ndim;
    for (int d = 0; same && d < w->ndim; d++) same = b->shape[d] == w->shape[d];
    return same ? 2 : 1;
  }
  if (b->record != NULL) {
    int64_t have = b->size * b->record->size;
    return w->data >= b->data && w->data <= b->data + have && w->bytes <= b->data + have - w->data;
  }
  if (b->dtype != w->dtype) return 0;
  int64_t have = b->size * kb_dtype_bytes(b->dtype);
  if (w->data < b->data || w->data > b->data + have || w->bytes > b->data + have - w->data) return 0;
  int same = b->data == w->data && b->ndim == w->ndim;
  for (int d = 0; same && d < w->ndim; d++) same = b->shape[d] == w->shape[d];
  return same ? 2 : 1;
}

/* Pushes w itself (got 2) or a view of it over the array at idx (got 1,
** anchored for l). */
static void push_found(lua_State *L, int idx, int got, const Want *w, const KAllocList *l) {
  if (got == 2) { lua_pushvalue(L, idx); return; }
  const KBuffer *o = luaL_testudata(L, idx, KB_METATABLE);
  if (o == NULL) o = luaL_testudata(L, idx, KREC_ARRAY_MT);
  if (w->rec)   /* records in an array of records */
    krec_push_view(L, idx, (char *)w->data, w->rec, 0, w->ndim, w->shape);
  else if (o && o->record)   /* an array field of records */
    krec_push_view(L, idx, (char *)w->data, NULL, w->dtype, w->ndim, w->shape);
  else
    kb_push_view(L, idx, (char *)w->data, w->ndim, w->shape);
  anchor(L, l, 1);
}

/* Is the anchor at idx a view boxed here (anchors[ud] = true)? */
static int is_view(lua_State *L, int anchors, int idx) {
  lua_pushvalue(L, idx);
  int v = lua_rawget(L, anchors) != LUA_TNIL;
  lua_pop(L, 1);
  return v;
}

int kjit_la_push_pinned(lua_State *L, const char *data, int32_t dtype, int32_t ndim,
                        const int64_t *shape, int32_t view) {
  Want w = want(data, dtype, ndim, shape);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &pins_key) != LUA_TTABLE) { lua_pop(L, 1); return 0; }
  int pins = lua_gettop(L);
  for (int pass = 2; pass >= 1; pass--) {
    lua_pushnil(L);
    while (lua_next(L, pins)) {
      lua_pop(L, 1);   /* (the key is the array) */
      int got = holds(L, -1, &w);
      if (got == 2 && view) got = 1;
      if (got == pass) {
        if (got == 2) lua_pushvalue(L, -1);
        else push_found(L, lua_gettop(L), 1, &w, NULL);
        lua_replace(L, pins);
        lua_settop(L, pins);
        return 1;
      }
    }
  }
  lua_pop(L, 1);
  return 0;
}

void kjit_la_box(lua_State *L, int32_t dst, const char *data, int32_t dtype, int32_t ndim,
                 const int64_t *shape, int32_t view) {
  luaL_checkstack(L, 8, "kjit: an array as a Lua value");
  Want w = want(data, dtype, ndim, shape);
  KAllocList *l = kal_current();
  int top = lua_gettop(L);
  /* the anchors of this call, then the stack (arguments): the array
  ** itself first, then one that holds it */
  int na = 0, at = 0;
  if (push_list_anchors(L, l, 0)) { at = lua_gettop(L); na = (int)lua_rawlen(L, at); }
  /* (a view the code made, a:slice(...) or m[i], is a new userdata even
  ** where it covers its whole array, as interpreted: itself only when it
  ** was boxed before, else a view of the array holding it) */
  for (int pass = 2; pass >= 1; pass--) {
    for (int i = 1; i <= na; i++) {
      lua_rawgeti(L, at, i);
      int got = holds(L, -1, &w);
      if (got == 2 && view && !is_view(L, at, lua_gettop(L))) got = 1;
      if (got == pass) {
        push_found(L, lua_gettop(L), got, &w, l);
        lua_replace(L, dst);
        lua_settop(L, top);
        return;
      }
      lua_pop(L, 1);
    }
    for (int idx = 1; idx <= top; idx++) {
      int got = holds(L, idx, &w);
      if (got == 2 && view) got = 1;
      if (got == pass) {
        push_found(L, idx, got, &w, l);
        lua_replace(L, dst);
        lua_settop(L, top);
        return;
      }
    }
  }
  /* a frozen array (an upvalue or a global the code reads: pinned), or
  ** one holding it */
  if (kjit_la_push_pinned(L, data, dtype, ndim, shape, view)) {
    lua_replace(L, dst);
    lua_settop(L, top);
    return;
  }
  /* made by this call and not yet a userdata: its block adopted now */
  KAllocBlock *b = l ? kal_find(l, data, w.bytes) : NULL;
  if (b == NULL)
    luaL_error(L, "kjit: internal error: an array whose memory is not known made a Lua value");
  if (kal_is_record(b->dtype))   /* (an array field of records made here) */
    krec_push_borrowed(L, (char *)b + KAL_HEADER, krec_byid(kal_record_id(b->dtype)), b->ndim,
                       b->shape, kal_release, b);
  else
    kb_push_borrowed(L, (char *)b + KAL_HEADER, (kjit_dtype)b->dtype, b->ndim, b->shape,
                     kal_release, b);   /* (raises before the block leaves the list) */
  kal_unlink(b);   /* the userdata's guard owns it now */
  anchor(L, l, 0);
  int owner = lua_gettop(L), got = holds(L, owner, &w);
  push_found(L, owner, got == 2 && view ? 1 : got, &w, l);
  lua_replace(L, dst);
  lua_settop(L, top);
}

void kjit_la_register(void) {
  kc_register_symbol("kjit_la_box", (void *)kjit_la_box);
}
