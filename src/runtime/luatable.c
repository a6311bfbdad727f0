/*
** runtime/luatable.c: fast paths for compiled code's table reads and writes
** over Lua 5.4's own table layout. THE ONLY FILE of kjit that knows how a
** Lua 5.4 table, its nodes and short strings are laid out (lobject.h,
** ltable.c of 5.4.0 to 5.4.6, which agree on everything used here).
**
** What it does: t.x and t[i] on a table whose slot holds a number are read
** without the API (kjit_lt_getfield, kjit_lt_geti), and any other present
** value is copied into compiled code's stack slot (copy_to_slot, through
** host/lua_stack.h's checked mirrors of the stack); t.x = v and t[i] = v,
** v a number or a boolean, where the key is present with a non-nil value,
** overwrite it in place (kjit_lt_setfield, kjit_lt_seti), as does t[i] = v
** into an empty element of the array part of a table without a metatable
** (writenum says why that is exact), and any value in compiled code's slot
** over a present one of a table that is not black; a constructor's list is
** written into its fresh table's array part (kjit_lt_setlist), its named
** fields into nodes as luaH_newkey places them (kjit_lt_ctorfield);
** setmetatable of a table without one, by a metatable without __gc, is
** done in place (kjit_lt_setmt); a method is found through its class by
** the site's hints (kjit_lt_smethod); t[i] missing from
** a table without a metatable reads nil (absent_int). Compiled code does the same inline
** (codegen/cg_lua.c, from the offsets kjit_lt_layout gives: a table's
** 'marked' and white bits for a constructor's list, its 'lastfree' for an
** absent element), and for a
** field looks first in the node where its site found the key last time
** (kjit_lt_findfield walks the chain and remembers the node). Anything
** else (a missing key, a table with its key absent where a metamethod
** could run, a string key longer than short strings) answers 0 and the
** caller (luavalue.c) takes the Lua API path, which is always right. Why
** these shortcuts are exact:
**   - a read of a present non-nil value never consults __index;
**   - a write over a present non-nil value never consults __newindex, and
**     storing a number or a boolean (not collectable) needs no GC barrier;
**     the key's presence does not change, so the metamethod-absence cache
**     (flags) stays valid;
**   - an array index is used only below alimit (luaH_getint's first test).
** Short strings are interned: a field name is compared by its TString
** pointer, which compiled code caches per call site (ks) after anchoring
** the string in the registry (so the pointer stays valid as long as the
** Lua state lives).
**
** Checked at load: kjit_lt_probe builds a table through the API and reads
** it back through these structures (an integer and a float in the array
** part, fields in the hash part, a missing field, booleans' tags, the
** metatable's place); any disagreement, or a
** Lua that is not 5.4, turns the fast paths off for the process
** (kjit_lt_enabled) and every access takes the API path.
*/
#include "runtime/luavalue.h"
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lauxlib.h"
#include "host/lua_stack.h"
#include "runtime/luacall.h"

/* ---- Lua 5.4's layout (lobject.h) ---------------------------------------------- */

typedef union LtValue {
  void *gc;
  void *p;
  lua_CFunction f;
  lua_Integer i;
  lua_Number n;
} LtValue;

typedef struct LtTValue {
  LtValue value_;
  unsigned char tt_;
} LtTValue;

typedef union LtNode {
  struct {
    LtValue value_;
    unsigned char tt_;
    unsigned char key_tt;
    int next;
    LtValue key_val;
  } u;
  LtTValue i_val;
} LtNode;

typedef struct LtTable {
  void *next; unsigned char tt; unsigned char marked;   /* CommonHeader */
  unsigned char flags;
  unsigned char lsizenode;
  unsigned int alimit;
  LtTValue *array;
  LtNode *node;
  LtNode *lastfree;
  struct LtTable *metatable;
  void *gclist;
} LtTable;

typedef struct LtString {
  void *next; unsigned char tt; unsigned char marked;   /* CommonHeader */
  unsigned char extra;
  unsigned char shrlen;
  unsigned int hash;
  /* (the union and the contents follow) */
} LtString;

/* Type tags (lobject.h: makevariant, ctb). */
#define LT_NUMINT 0x03
#define LT_NUMFLT 0x13
#define LT_SHRSTR_KEY 0x44   /* ctb(LUA_VSHRSTR): a short string key */
#define LT_TABLE 0x45        /* ctb(LUA_VTABLE) */
#define LT_FALSE 0x01        /* LUA_VFALSE */
#define LT_TRUE 0x11         /* LUA_VTRUE */
#define LT_MAXSHORTLEN 40    /* LUAI_MAXSHORTLEN */
#define LT_ISNIL(tt) (((tt) & 0x0F) == 0)
#define LT_NIL 0x00          /* LUA_VNIL */
#define LT_WHITEBITS 0x18    /* lgc.h: WHITE0BIT 3, WHITE1BIT 4 (BLACKBIT 5) of 'marked' */
#define LT_BLACKBIT 0x20
#define LT_NOGC 0x04         /* ltm.h: a table's flags bit 1u << TM_GC: it has no __gc */

/* ---- The check at load ------------------------------------------------------------ */

/* 1 once the probe agreed: read by the helpers below and by compiled code
** (its inline paths: kjit_lt_layout), which registers it by name. */
int kjit_lt_on;
#define enabled __atomic_load_n(&kjit_lt_on, __ATOMIC_ACQUIRE)

/* The table compiled code's inline checks look into when it has no table
** to look into (no hint, or the layout off: cg_lua.c hint): alimit 0 and
** one node with no key, so that every check misses by itself, and an
** access needs no branch of its own to test for "no table". Laid out by
** kjit's own LtTable, which is the layout the generated code's offsets
** come from (kjit_lt_layout), whatever Lua runs. Read-only; the site
** helpers take it for NULL (luavalue.c site_obj). Its lastfree is set, as
** if it had a hash part, so that the inline read of an index past the
** array part (cg_lua.c absent_inline: nil where no hash part exists) misses
** too: a number indexed is an error, not nil. */
static const LtNode none_node;
const LtTable kjit_lt_none = { .node = (LtNode *)&none_node, .lastfree = (LtNode *)&none_node };
/* The probe runs once per process, with the calling thread's own state
** (states of other threads are not ours to touch). */
static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static int probed;
/* 1 when the probe also found a metatable's cache of an absent __gc where
** LT_NOGC says (kjit_lt_setmt); written before kjit_lt_on */
static int setmt_on;

static const LtTValue *field(const LtTable *h, const LtString *s) {
  const LtNode *n = &h->node[s->hash & ((1u << h->lsizenode) - 1)];
  for (;;) {
    if (n->u.key_tt == LT_SHRSTR_KEY && n->u.key_val.gc == (const void *)s) return &n->i_val;
    if (n->u.next == 0) return NULL;
    n += n->u.next;
  }
}

static int probe_gc(lua_State *L) { (void)L; return 0; }   /* (the probe's finalizer) */

static void probe(lua_State *L) {
  if (lua_version(L) != 504 || sizeof(LtTValue) != 16 || sizeof(LtNode) != 24) return;
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 4)) return;
  lua_createtable(L, 2, 2);
  lua_pushinteger(L, 10); lua_rawseti(L, -2, 1);
  lua_pushnumber(L, 20.5); lua_rawseti(L, -2, 2);
  lua_pushinteger(L, 7); lua_setfield(L, -2, "kjit_probe_x");
  lua_pushnumber(L, 0.25); lua_setfield(L, -2, "kjit_probe_y");
  const LtTable *h = lua_topointer(L, -1);
  lua_pushstring(L, "kjit_probe_x");
  const LtString *sx = lua_topointer(L, -1);
  lua_pushstring(L, "kjit_probe_y");
  const LtString *sy = lua_topointer(L, -1);
  lua_pushstring(L, "kjit_probe_z");
  const LtString *sz = lua_topointer(L, -1);
  int ok = h && sx && sy && sz && h->alimit >= 2 && h->array && h->node &&
           h->array[0].tt_ == LT_NUMINT && h->array[0].value_.i == 10 &&
           h->array[1].tt_ == LT_NUMFLT && h->array[1].value_.n == 20.5 &&
           sx->shrlen == 12 && sx->tt == 0x04;
  if (ok) {
    const LtTValue *x = field(h, sx), *y = field(h, sy), *z = field(h, sz);
    ok = x && x->tt_ == LT_NUMINT && x->value_.i == 7 && y && y->tt_ == LT_NUMFLT &&
         y->value_.n == 0.25 && (z == NULL || LT_ISNIL(z->tt_));
  }
  if (ok) {   /* booleans' tags, and the metatable's place */
    lua_pushboolean(L, 1); lua_rawseti(L, -5, 1);
    lua_pushboolean(L, 0); lua_rawseti(L, -5, 2);
    ok = h->metatable == NULL && h->array[0].tt_ == LT_TRUE && h->array[1].tt_ == LT_FALSE;
    lua_newtable(L);
    const void *mt = lua_topointer(L, -1);
    lua_setmetatable(L, -5);
    ok = ok && (const void *)h->metatable == mt;
  }
  if (ok) {   /* the flags' bit for an absent __gc (ltm.h ORDER TM: TM_GC is 2):
              ** clear once a key is set in a table, set when setmetatable
              ** found no __gc there (luaC_checkfinalizer's fasttm), clear
              ** where it found one (a no-op finalizer) */
    lua_newtable(L);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "kjit_probe_x");
    const LtTable *mt = lua_topointer(L, -1);
    int before = mt->flags & LT_NOGC;
    lua_newtable(L);
    lua_pushvalue(L, -2);
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushcfunction(L, probe_gc);
    lua_setfield(L, -2, "__gc");
    const LtTable *gmt = lua_topointer(L, -1);
    lua_newtable(L);
    lua_pushvalue(L, -2);
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    __atomic_store_n(&setmt_on, before == 0 && (mt->flags & LT_NOGC) && !(gmt->flags & LT_NOGC),
                     __ATOMIC_RELAXED);
    lua_pop(L, 2);
  }
  if (ok) {   /* 'marked': a fresh table is white (luaC_newobj) unless a GC
              ** step in lua_createtable marked it already; never two colours */
    int white = 0;
    for (int k = 0; k < 4; k++) {
      lua_createtable(L, 1, 0);
      unsigned char m = ((const LtTable *)lua_topointer(L, -1))->marked & 0x38;
      if (m == 0x08 || m == 0x10) white++;
      else if (m != 0x00 && m != 0x20) ok = 0;
      lua_pop(L, 1);
    }
    ok = ok && white > 0;
  }
  if (ok) {   /* 'lastfree': NULL for the shared dummy node (no hash part), else
              ** just past the node vector of a table nothing was inserted into */
    lua_createtable(L, 0, 0);
    const LtTable *e = lua_topointer(L, -1);
    lua_createtable(L, 0, 4);
    const LtTable *f = lua_topointer(L, -1);
    ok = e->lastfree == NULL && f->lsizenode == 2 && f->lastfree == f->node + 4 &&
         f->node[0].u.key_tt == LT_NIL && LT_ISNIL(f->node[0].u.tt_);
    lua_pop(L, 2);
  }
  lua_settop(L, top);
  __atomic_store_n(&kjit_lt_on, ok, __ATOMIC_RELEASE);
}

int kjit_lt_enabled(void) { return enabled; }

static void ensure_probe(lua_State *L) {
  if (__atomic_load_n(&probed, __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&probe_mu);
  if (!probed) {
    probe(L);
    __atomic_store_n(&probed, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&probe_mu);
}

/* The layout, as numbers, for the code generator's inline paths (cg_lua.c),
** after the probe ran with L; NULL when the fast paths are off. Compiled
** code still tests kjit_lt_on before using them (code from the disk cache
** may run in a process whose Lua disagrees). */
const KltLayout *kjit_lt_layout(lua_State *L) {
  static const KltLayout lay = {
    offsetof(LtTable, alimit), offsetof(LtTable, array), offsetof(LtTable, node),
    offsetof(LtTable, lsizenode), sizeof(LtNode), offsetof(LtNode, u.key_tt),
    offsetof(LtNode, u.key_val), offsetof(LtNode, u.tt_), sizeof(LtTValue),
    offsetof(LtTValue, tt_), offsetof(LtString, hash), LT_NUMINT, LT_NUMFLT, LT_SHRSTR_KEY,
    LT_TABLE, offsetof(LtTable, metatable), LT_FALSE, LT_TRUE, offsetof(LtNode, u.next),
    offsetof(KlsState, ci), offsetof(KlsCallInfo, func), sizeof(KlsStackValue),
    offsetof(LtTable, marked), LT_WHITEBITS, offsetof(LtTable, lastfree)
  };
  ensure_probe(L);
  return enabled ? &lay : NULL;
}

/* The table in slot t (NULL if it is not a table, or the layout is off);
** h: its address when compiled code knows it (no API call then). */
static LtTable *table_at(lua_State *L, int32_t t, void *h) {
  if (!enabled) {
    ensure_probe(L);   /* the first call: check the layout once */
    if (!enabled) return NULL;
  }
  if (h) return h;
  if (lua_type(L, t) != LUA_TTABLE) return NULL;
  return (LtTable *)lua_topointer(L, t);
}

/* The interned short string for field name k, cached per call site in *ks
** (anchored in the registry first, so that the pointer stays valid);
** NULL for a long one. */
static const LtString *shortstr(lua_State *L, const char *k, void **ks) {
  if (*ks) return *ks == (void *)1 ? NULL : *ks;
  if (strlen(k) > LT_MAXSHORTLEN) { *ks = (void *)1; return NULL; }
  if (lua_getfield(L, LUA_REGISTRYINDEX, "kjit.fieldnames") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "kjit.fieldnames");
  }
  lua_pushstring(L, k);
  const LtString *s = lua_topointer(L, -1);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  *ks = (void *)s;
  return s;
}

/* ---- The fast paths ---------------------------------------------------------------- */

static int readnum(const LtTValue *v, int64_t *out, int32_t *tag) {
  if (v == NULL) return 0;
  if (v->tt_ == LT_NUMINT) { *out = v->value_.i; *tag = KLV_INT; return 1; }
  if (v->tt_ == LT_NUMFLT) { memcpy(out, &v->value_.n, 8); *tag = KLV_FLT; return 1; }
  return 0;
}

/* A number or a boolean (vtag KLV_INT, KLV_FLT, KLV_BOOL: none is
** collectable, so no GC barrier) written over v: a present non-nil value,
** or, with nil_ok (an element of the array part of a table without a
** metatable), an empty one: luaV_finishset then stores into that same
** slot (luaH_finishset) with no metamethod to consult; its only other
** effect, clearing the table's cache of absent metamethods, concerns
** string keys, and an integer key cannot name a metamethod. */
static int writenum(LtTValue *v, int32_t vtag, int64_t vbits, int nil_ok) {
  if (v == NULL || (LT_ISNIL(v->tt_) && !nil_ok)) return 0;
  if (vtag == KLV_INT) { v->value_.i = vbits; v->tt_ = LT_NUMINT; }
  else if (vtag == KLV_FLT) { memcpy(&v->value_.n, &vbits, 8); v->tt_ = LT_NUMFLT; }
  else if (vtag == KLV_BOOL) v->tt_ = vbits ? LT_TRUE : LT_FALSE;
  else return 0;
  return 1;
}

static LtTValue *arrayslot(LtTable *h, int64_t i) {
  if (h == NULL || (uint64_t)i - 1u >= h->alimit) return NULL;
  return &h->array[i - 1];
}

/* Copies the present value v (not a number) into slot dst of the running
** C function (the dispatcher's: compiled code's frame), a table's address
** given back in *out as the hint. The slot's address comes from
** host/lua_stack.h, the one place that knows (and checks, kls_on) how a
** lua_State finds its C function's stack slots. A stack slot needs no GC
** barrier (the collector traverses a thread's stack again in its atomic
** phase: lapi.c's setobj2s has none). Without kls_on: 0, and the caller
** goes through the API (two cheap calls). */
static int copy_to_slot(lua_State *L, const LtTValue *v, int32_t dst, int64_t *out, int32_t *tag) {
  *out = v->tt_ == LT_TABLE ? (int64_t)(intptr_t)v->value_.gc : 0;
  *tag = KLV_INSLOT;
  if (!__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) return 0;
  KlsStackValue *d = ((KlsState *)L)->ci->func + dst;
  memcpy(&d->val.value_, &v->value_, sizeof v->value_);
  d->val.tt_ = v->tt_;
  return 1;
}

/* The free node luaH_newkey takes (ltable.c getfreepos: lastfree moves
** down to the next node without a key), or NULL where there is none
** left (the API path then rehashes: it finds none either). */
static LtNode *freepos(LtTable *t) {
  while (t->lastfree > t->node) {
    t->lastfree--;
    if (t->lastfree->u.key_tt == LT_NIL) return t->lastfree;
  }
  return NULL;
}

/* t.k = v, v a number or a boolean, written by t's own constructor into
** its fresh table h (luavalue.c kjit_lv_ctorfield: `{x = a, y = b}`):
** what luaH_newkey does for a short string key not in h, so that the
** nodes are laid out as the interpreter's SETFIELD lays them (the same
** chains, the same order for `next`). Where k's main position mp is a
** node never used (no key, no value) the key and the value go there;
** where another key's value holds it, a free node f is taken
** (freepos) and, as luaH_newkey does, either that key moves to f when mp
** is not its own main position (its chain relinked) or k goes to f,
** chained after mp. Taken only when h has a hash part of its own
** (lastfree set: not the shared dummy node), no metatable, and is white
** (the key's GC barrier, luaC_barrierback, is a no-op then; the key is
** anchored by shortstr anyway), k is short and not a metamethod's name
** (so the table's cache of absent metamethods, flags, stays true), and a
** key met on the way is a short string too (its main position computed
** from its hash; anything else, k already there (`{x = 1, x = 2}`), or a
** node with a key and no value: the API, before anything moved). Else 0:
** the API. */
int kjit_lt_ctorfield(lua_State *L, void *h, const char *k, void **ks, int32_t vtag, int64_t vbits) {
  LtTable *t = h;
  if (!enabled || t == NULL || t->metatable != NULL || t->lastfree == NULL ||
      (t->marked & LT_WHITEBITS) == 0 || (k[0] == '_' && k[1] == '_') ||
      (vtag != KLV_INT && vtag != KLV_FLT && vtag != KLV_BOOL))
    return 0;
  const LtString *s = shortstr(L, k, ks);
  if (s == NULL) return 0;
  unsigned mask = (1u << t->lsizenode) - 1;
  LtNode *mp = &t->node[s->hash & mask];
  if (!LT_ISNIL(mp->u.tt_)) {   /* taken: luaH_newkey's collision */
    if (mp->u.key_tt != LT_SHRSTR_KEY || field(t, s) != NULL) return 0;   /* ({x = 1, x = 2}) */
    LtNode *other = &t->node[((const LtString *)mp->u.key_val.gc)->hash & mask];
    LtNode *f = freepos(t);
    if (f == NULL) return 0;
    if (other != mp) {   /* the colliding key is not in its main position: it moves to f */
      while (other + other->u.next != mp) other += other->u.next;
      other->u.next = (int)(f - other);
      *f = *mp;
      if (mp->u.next != 0) {
        f->u.next += (int)(mp - f);
        mp->u.next = 0;
      }
      mp->u.tt_ = LT_NIL;
    } else {   /* it is: k goes to f, chained after mp */
      if (mp->u.next != 0) f->u.next = (int)((mp + mp->u.next) - f);
      mp->u.next = (int)(f - mp);
      mp = f;
    }
  } else if (mp->u.key_tt != LT_NIL) {
    return 0;   /* (a key without a value: luaH_newkey reuses the node; the API) */
  }
  mp->u.key_val.gc = (void *)s;
  mp->u.key_tt = LT_SHRSTR_KEY;
  return writenum(&mp->i_val, vtag, vbits, 1);
}

/* The constructor's list written straight into the array part of its
** fresh table h (kjit_lv_setlist): what lua_rawseti does for each item
** (setobj into array[k - 1], no metamethod: a raw set), when the array
** part has room for base + n (the constructor sized it: always), the
** table has no metatable (it cannot have one yet) and it is white. A
** white table makes the GC barrier of a collectable item a no-op
** (luaC_barrierback acts on black tables only); the table is black only
** when a collection step between its making and here traversed it. The
** items in slots are read through host/lua_stack.h's mirrors, so kls_on
** must hold too. Else 0: the caller stores each item through the API. */
int kjit_lt_setlist(lua_State *L, void *h, int64_t base, int32_t n, const KlvItem *items) {
  LtTable *t = h;
  if (!enabled || t == NULL || !__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) return 0;
  if (base < 0 || (uint64_t)base + (uint64_t)n > t->alimit || t->metatable != NULL ||
      !(t->marked & LT_WHITEBITS))
    return 0;
  const KlsStackValue *func = ((const KlsState *)(void *)L)->ci->func;
  LtTValue *d = &t->array[base];
  for (int32_t k = 0; k < n; k++) {
    const KlvItem *it = &items[k];
    switch (it->tag) {
    case KLV_INT: d[k].value_.i = it->bits; d[k].tt_ = LT_NUMINT; break;
    case KLV_FLT: memcpy(&d[k].value_.n, &it->bits, 8); d[k].tt_ = LT_NUMFLT; break;
    case KLV_BOOL: d[k].tt_ = it->bits ? LT_TRUE : LT_FALSE; break;
    case KLV_NIL: d[k].tt_ = LT_NIL; break;
    default: {
      const KlsTValue *v = &func[it->slot].val;
      memcpy(&d[k].value_, &v->value_, sizeof d[k].value_);
      d[k].tt_ = v->tt_;
    }
    }
  }
  return 1;
}

/* setmetatable(t, mt), t and mt tables in compiled code's slots t and m
** (luavalue.c kjit_lv_setmt's common case), as lua_setmetatable does it
** for a table: t's metatable set, then luaC_objbarrier (a no-op unless t
** is black: required here, as a fresh table is) and luaC_checkfinalizer
** (a no-op where mt's flags cache says it has no __gc: LT_NOGC, set by
** the first setmetatable with mt through the API, cleared by any new key
** in mt). t must have no metatable yet: a protected one's __metatable
** is the library's to see. t is copied into slot dst (a stack slot: no
** barrier), its address returned; 0 where the API must do it. */
int64_t kjit_lt_setmt(lua_State *L, int32_t t, int32_t m, int32_t dst) {
  if (!enabled || !__atomic_load_n(&setmt_on, __ATOMIC_RELAXED) ||
      !__atomic_load_n(&kls_on, __ATOMIC_RELAXED))
    return 0;
  KlsStackValue *func = ((KlsState *)(void *)L)->ci->func;
  const KlsTValue *tv = &func[t].val, *mv = &func[m].val;
  if (tv->tt_ != LT_TABLE || mv->tt_ != LT_TABLE) return 0;
  LtTable *h = (LtTable *)tv->value_.gc;
  const LtTable *mt = (const LtTable *)mv->value_.gc;
  if (h->metatable != NULL || (h->marked & LT_BLACKBIT) || !(mt->flags & LT_NOGC)) return 0;
  h->metatable = (LtTable *)mt;
  func[dst].val.value_ = tv->value_;
  func[dst].val.tt_ = tv->tt_;
  return (int64_t)(intptr_t)h;
}

/* t[i] on a table without a metatable where i is in neither part: nil,
** with no __index to consult (luaV_finishget with a NULL metatable). The
** array part's real size is alimit, or the next power of 2 above it when
** alimit is not one (luaH_realasize: 5.4 may keep alimit below the size);
** a small hash part (up to 8 nodes) is scanned whole for the integer key
** (no hash function needed: a key is in at most one node). */
static int absent_int(const LtTable *h, int64_t i) {
  if (h->metatable != NULL || h->lsizenode > 3) return 0;
  uint64_t size = h->alimit;
  if (size & (size - 1)) {
    size |= size >> 1; size |= size >> 2; size |= size >> 4; size |= size >> 8; size |= size >> 16;
    size++;
  }
  if ((uint64_t)i - 1u < size) return 0;
  for (int k = 0; k < (1 << h->lsizenode); k++)
    if (h->node[k].u.key_tt == LT_NUMINT && h->node[k].u.key_val.i == i) return 0;
  return 1;
}

/* A present value of the array part that is not a number (a list of
** records: ps[i]; a boolean: nsieve's flags[i]; a string) is copied into
** the slot dst (copy_to_slot, else two cheap API calls: a present value
** never consults __index), a table's address given back as the hint. */
int kjit_lt_geti(lua_State *L, int32_t t, void *hint, int64_t i, int32_t dst, int64_t *out,
                 int32_t *tag) {
  LtTable *h = table_at(L, t, hint);
  const LtTValue *v = arrayslot(h, i);
  if (v == NULL && h && __atomic_load_n(&kls_on, __ATOMIC_RELAXED) && absent_int(h, i)) {
    static const LtTValue nil = { { 0 }, LT_NIL };   /* `if t[i + 1] then`: a missing key */
    return copy_to_slot(L, &nil, dst, out, tag);
  }
  if (v && !LT_ISNIL(v->tt_) && v->tt_ != LT_NUMINT && v->tt_ != LT_NUMFLT) {
    if (copy_to_slot(L, v, dst, out, tag)) return 1;
    lua_rawgeti(L, t, (lua_Integer)i);
    lua_replace(L, dst);
    return 1;
  }
  return readnum(v, out, tag);
}

/* kjit_lv_sgeti's first try, where compiled code holds the indexed
** table's address (hint): t[i] in the array part, any value (a number's
** tag with its bits in *out; anything else copied into slot dst, as
** kjit_lt_geti does), or nil where the key is absent and no __index can
** run (absent_int, or an empty element of a table without a metatable).
** The tag, or -1 where the full path must run. One flat function for the
** reads of a walk over a tree of tables (binary-trees' tree[2]). */
int32_t kjit_lt_sgeti(lua_State *L, void *hint, int64_t i, int32_t dst, int64_t *out) {
  const LtTable *h = hint;
  /* (kjit_lt_none: compiled code knows no table there, cg_lua.c's hint) */
  if (h == NULL || h == &kjit_lt_none || !enabled || !__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) return -1;
  static const LtTValue nil = { { 0 }, LT_NIL };
  const LtTValue *v = (uint64_t)i - 1u < h->alimit ? &h->array[i - 1] : NULL;
  int32_t tag;
  if (v && !LT_ISNIL(v->tt_)) {
    if (readnum(v, out, &tag)) return tag;
  } else if (v ? h->metatable == NULL : absent_int(h, i)) {
    v = &nil;
  } else {
    return -1;
  }
  copy_to_slot(L, v, dst, out, &tag);
  return KLV_INSLOT;
}

int kjit_lt_seti(lua_State *L, int32_t t, void *hint, int64_t i, int32_t vtag, int64_t vbits) {
  LtTable *h = table_at(L, t, hint);
  return writenum(arrayslot(h, i), vtag, vbits, h && h->metatable == NULL);
}

/* The interned "__index" of the running thread's Lua state, for
** index_chain: strings are interned per state (its global state, l_G),
** and luaC_fix keeps the metamethod names for the state's life. Cached
** per thread with the global state's address and kjit_lc_epoch, which a
** closing state bumps (luacall.c kjit_lc_watch_state: the one sentinel of
** every cache that names a state by its address), so that a new state at
** the address of a closed one is never taken for it. */
static _Thread_local const void *index_g;
static _Thread_local uint32_t index_ep;
static _Thread_local const LtString *index_s;

static __attribute__((noinline)) const LtString *index_name_slow(lua_State *L, const void *g,
                                                                uint32_t ep) {
  kjit_lc_watch_state(L);
  lua_pushliteral(L, "__index");
  index_s = lua_topointer(L, -1);
  lua_pop(L, 1);
  index_g = g;
  index_ep = ep;
  return index_s;
}

static const LtString *index_name(lua_State *L) {
  const void *g = ((const KlsState *)(void *)L)->l_G;
  uint32_t ep = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
  if (__builtin_expect(index_g == g && index_ep == ep, 1)) return index_s;
  return index_name_slow(L, g, ep);
}

/* t.k with k absent from table h (v: its node's value, NULL or nil):
** luaV_finishget's walk, for as long as each __index is a table. A
** metatable's __index is read raw (luaT_gettm; fasttm's flags only cache
** its absence), and a table's present non-nil value ends the walk
** (luaV_fastget). Returns the value found, or a nil TValue when the walk
** ends without a metamethod (no metatable, no __index: nil, as Lua
** gives), or NULL when a function or another value stands in the way (the
** API path runs it). Only with the stack reads on (the result may go to
** a slot). */
static const LtTValue nilvalue = { { NULL }, 0 };
static const LtTValue *index_chain(lua_State *L, const LtTable *h, const LtString *s,
                                   const LtTValue *v) {
  if (!__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) return NULL;
  for (int loop = 0; loop < 8; loop++) {   /* (deeper chains: the API, as Lua's MAXTAGLOOP) */
    if (v != NULL && !LT_ISNIL(v->tt_)) return v;
    const LtTable *mt = h->metatable;
    if (mt == NULL) return &nilvalue;
    const LtTValue *tm = field(mt, index_name(L));
    if (tm == NULL || LT_ISNIL(tm->tt_)) return &nilvalue;
    if (tm->tt_ != LT_TABLE) return NULL;
    h = tm->value_.gc;
    v = field(h, s);
  }
  return NULL;
}

/* t.k: a number, or (with the probe's word on the stack) any other
** present value copied into slot dst: self.pos, a method's table; a key
** absent from t is looked for along __index tables (index_chain: a
** method found through the class's __index). */
int kjit_lt_getfield(lua_State *L, int32_t t, void *hint, const char *k, void **ks,
                     int32_t dst, int64_t *out, int32_t *tag) {
  LtTable *h = table_at(L, t, hint);
  if (h == NULL) return 0;
  const LtString *s = shortstr(L, k, ks);
  if (s == NULL) return 0;
  const LtTValue *v = field(h, s);
  if (v == NULL || LT_ISNIL(v->tt_)) {
    v = index_chain(L, h, s, v);
    if (v == NULL) return 0;
    if (LT_ISNIL(v->tt_)) return copy_to_slot(L, v, dst, out, tag);
  }
  if (v && !LT_ISNIL(v->tt_) && v->tt_ != LT_NUMINT && v->tt_ != LT_NUMFLT)
    return copy_to_slot(L, v, dst, out, tag);
  return readnum(v, out, tag);
}

/* obj:method(...) where the site's inline read missed (issue 29, the
** call protocol's method lookup): obj a table without the key, its
** metatable's __index a table holding it (the class pattern). What Lua
** does (luaV_finishget: the object's own field, then its metatable's
** __index read raw, then that table's field), with the two lookups past
** the object replaced by the site's hints: the node where the metatable
** held "__index" (s->mn) and the node where the class held the key
** (s->cn), each checked by its key, so a replaced method, a new
** metatable, an __index changed to a function or another table, or a
** method added to the object itself are all seen at the next call (the
** hints only say where to look; nothing found there is trusted without
** its key). Costs the object's own lookup (a short chain walk) and two
** compares a level, where the general path took ~250 instructions (its
** wrappers, the interned name's thread-local, three walks). Deeper chains
** (a class's base class), an __index function or any other shape: -1. */
static int64_t node_of(const LtTable *h, const LtTValue *v) {
  return (int64_t)((const LtNode *)(const void *)v - h->node);
}

/* The method's value v copied where compiled code takes it: a number's
** bits in *out (its tag returned), anything else into slot dst (its tag
** KLV_INSLOT; kls_on holds: both callers tested it). */
static int32_t method_found(lua_State *L, const LtTValue *v, int32_t dst, int64_t *out) {
  int32_t tag;
  if (readnum(v, out, &tag)) return tag;
  copy_to_slot(L, v, dst, out, &tag);
  return tag;
}

/* The site's hints refilled (the first call, a method or a metatable
** replaced, the node arrays resized): the lookups past the object by
** their keys, the nodes where they were found kept in s->mn and s->cn. */
static __attribute__((noinline)) int32_t smethod_refill(lua_State *L, KlvSite *s,
                                                        const LtTable *mt, int32_t dst,
                                                        int64_t *out) {
  const LtString *k = s->ks;
  const LtString *ix = index_name(L);
  const LtTValue *v = field(mt, ix);
  if (v == NULL) return -1;
  s->ixs = (void *)ix;
  s->mn = node_of(mt, v);
  if (v->tt_ != LT_TABLE) return -1;   /* no __index, or a function: the general path */
  const LtTable *c = v->value_.gc;
  v = field(c, k);
  if (v == NULL || LT_ISNIL(v->tt_)) return -1;   /* not in the class: its metatable's */
  s->cn = node_of(c, v);
  return method_found(L, v, dst, out);
}

/* The hot path makes no call but the copy's (every hint checked by its
** key; any doubt refills them, smethod_refill): the object's own chain
** walked, then one node compared at each level. */
int32_t kjit_lt_smethod(lua_State *L, KlvSite *s, void *hv, int32_t dst, int64_t *out) {
  const LtTable *h = hv;
  const LtString *k = s->ks;
  /* (kjit_lt_none, compiled code's "no table", has no metatable) */
  if (h == NULL || (uintptr_t)k <= 1 || !enabled || !__atomic_load_n(&kls_on, __ATOMIC_RELAXED))
    return -1;
  const LtTable *mt = h->metatable;
  if (mt == NULL) return -1;
  const LtTValue *own = field(h, k);
  if (own != NULL && !LT_ISNIL(own->tt_)) return -1;   /* its own field (the general path) */
  const LtNode *n = &mt->node[(uint64_t)s->mn & ((1u << mt->lsizenode) - 1)];
  if (n->u.key_tt != LT_SHRSTR_KEY || n->u.key_val.gc != s->ixs)
    return smethod_refill(L, s, mt, dst, out);
  if (n->u.tt_ != LT_TABLE) return -1;   /* no __index, or a function: the general path */
  const LtTable *c = n->u.value_.gc;
  const LtNode *m = &c->node[(uint64_t)s->cn & ((1u << c->lsizenode) - 1)];
  if (m->u.key_tt != LT_SHRSTR_KEY || m->u.key_val.gc != (const void *)k || LT_ISNIL(m->u.tt_))
    return smethod_refill(L, s, mt, dst, out);
  return method_found(L, &m->i_val, dst, out);
}

/* t.k = v over a present non-nil value (no __newindex can run): a number
** or a boolean (writenum), or a value in compiled code's slot v (a table:
** `e.vel = v:clamp(10)`, a string, nil), copied as luaV_finishfastset
** copies it. Its GC barrier (luaC_barrierback: a black table given a white
** value turns gray again) is a no-op where t is not black; a black t
** answers 2: the key is there, lua_setfield's fast set (with the barrier)
** is all the caller needs. Else 1 when done, 0 for the API's whole path. */
int kjit_lt_setfield(lua_State *L, int32_t t, void *hint, const char *k, void **ks,
                     int32_t vtag, int64_t vbits, int32_t v) {
  LtTable *h = table_at(L, t, hint);
  if (h == NULL) return 0;
  const LtString *s = shortstr(L, k, ks);
  if (s == NULL) return 0;
  LtTValue *d = (LtTValue *)field(h, s);
  if (vtag != KLV_INSLOT) return writenum(d, vtag, vbits, 0);
  if (d == NULL || LT_ISNIL(d->tt_)) return 0;
  if ((h->marked & LT_BLACKBIT) || !__atomic_load_n(&kls_on, __ATOMIC_RELAXED)) return 2;
  const KlsTValue *sv = &((const KlsState *)(void *)L)->ci->func[v].val;
  memcpy(&d->value_, &sv->value_, sizeof d->value_);
  d->tt_ = sv->tt_;
  return 1;
}

/* ---- The shortest paths: no lua_State, called first by compiled code ------------------ */

/* The node holding short string key *ks in table h (NULL when absent, the
** layout is off or the site has no key yet); its index in the node array
** is left in *kn, where compiled code looks first next time (cg_lua.c
** probe: masked by the node array's size there, so any kn is safe). */
void *kjit_lt_findfield(void *h, void **ks, int64_t *kn) {
  if (!enabled || h == NULL || *ks == NULL || *ks == (void *)1) return NULL;
  const LtTValue *v = field(h, *ks);   /* the node itself: its value comes first */
  if (v == NULL) return NULL;
  *kn = (int64_t)((const LtNode *)v - ((LtTable *)h)->node);
  return (void *)v;
}

/* h: the table's address (compiled code's hint, or NULL); ks: the call
** site's cached field name (NULL before its first full call). Each
** answers -1 (or 0 for the stores) when the full helper must run. */
int32_t kjit_lt_fgetfield(void *h, void **ks, int64_t *out) {
  int32_t tag;
  if (!enabled || h == NULL || *ks == NULL || *ks == (void *)1) return -1;
  return readnum(field(h, *ks), out, &tag) ? tag : -1;
}

int32_t kjit_lt_fgeti(void *h, int64_t i, int64_t *out) {
  int32_t tag;
  if (!enabled || h == NULL) return -1;
  return readnum(arrayslot(h, i), out, &tag) ? tag : -1;
}

int32_t kjit_lt_fsetfield(void *h, void **ks, int32_t vtag, int64_t vbits) {
  if (!enabled || h == NULL || *ks == NULL || *ks == (void *)1) return 0;
  return writenum((LtTValue *)field(h, *ks), vtag, vbits, 0);
}

int32_t kjit_lt_fseti(void *h, int64_t i, int32_t vtag, int64_t vbits) {
  if (!enabled || h == NULL) return 0;
  return writenum(arrayslot(h, i), vtag, vbits, ((LtTable *)h)->metatable == NULL);
}
