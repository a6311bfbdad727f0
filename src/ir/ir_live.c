/*
** ir_live.c: tables that compiled code writes into, across compiles.
**
** A table held by an upvalue or a global (or reached from one through
** constant fields: `M.state.items`) is frozen when a function compiles:
** its fields are read then and folded into the code as constants (a
** method table's functions become direct calls). That is only right while
** nothing compiled writes into the table. So that compiled code always
** sees the writes other compiled code makes, whatever the order in which
** they compiled, two sets are kept per Lua state (registry tables, weak in
** their keys: a table collected leaves them):
**
**   kjit.live      table -> true: tables some compile found compiled code
**                  writing into by their name (t.x = v, t[i] = v,
**                  table.insert(t, v) on an upvalue's or a global's table,
**                  or a frozen table passed to a callee that may change
**                  it: ir_type.c t_live, mark_live). Every later compile
**                  reads such a table live: the table itself is found
**                  once (a registry reference, the same table), its
**                  fields read when the code runs.
**   kjit.frozenby  table -> { owner -> true }: the jit objects (host/jit.c)
**                  whose code read fields of that table frozen
**                  (kty_note_frozen_reads, after a compile).
**
** Marking a table live that some code read frozen calls the hook that the
** host registered (host/jit.c kd_retire_readers): those owners' compiled
** specializations are retired, and their next call compiles anew, now
** reading the table live. The decision (design, docs/guide/tables.md):
**   - code compiled before a writer is known is invalidated, not kept: a
**     callee compiled frozen cannot go on reading stale values once
**     compiled code writes the table;
**   - a call already running when that happens (a compiled loop whose
**     callee compiles during the loop, and writes) finishes with the values
**     it froze, as it would if the writer had stayed interpreted (writes
**     the interpreter makes are not seen by frozen reads: the documented
**     rule); its next call reads live;
**   - writes made through another name (a table passed as an argument and
**     written there, `self.x = v`) are not seen by the compiler: they count
**     as the interpreter's writes (the documented frozen rule);
**   - a table one of whose own functions writes into it by its name (a
**     class's `function Pt.setscale(k) Pt.scale = k end`, a module's
**     `function M.bump() M.count = M.count + 1 end`: kty_live_own_writer)
**     is live too, whether that function runs compiled or interpreted: the
**     class and module patterns do not depend on the callee policy or on
**     the order of first calls.
*/
#include <string.h>
#include "ir/ir_type.h"
#include "frontend/bytecode.h"
#include "host/lua_stack.h"
#include "lauxlib.h"

static const char LIVE_KEY[] = "kjit.live";
static const char FROZENBY_KEY[] = "kjit.frozenby";

static KtyLiveHook live_hook;   /* set once, before any compile (jit.c) */

void kty_set_live_hook(KtyLiveHook h) { live_hook = h; }

/* A new table, weak in its keys, pushed. */
static void push_weak_keys(lua_State *L) {
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
}

int kty_push_weak_set(lua_State *L, const char *key) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return 0;
  lua_pop(L, 1);
  push_weak_keys(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
  return 1;
}

/* registry[key], made weak in its keys when missing, pushed (create: 0
** pushes nil instead of making it). Returns whether a table is. */
static int push_set(lua_State *L, const char *key, int create) {
  if (create) {
    kty_push_weak_set(L, key);
    return 1;
  }
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return 1;
  lua_pop(L, 1);
  lua_pushnil(L);
  return 0;
}

int kty_live_has(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (!push_set(L, LIVE_KEY, 0)) { lua_pop(L, 1); return 0; }
  lua_pushvalue(L, idx);
  int live = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return live;
}

int kty_live_mark(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  push_set(L, LIVE_KEY, 1);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, -2) != LUA_TNIL) { lua_pop(L, 2); return 0; }
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  /* the code that read it frozen: retired (the hook), forgotten here */
  if (push_set(L, FROZENBY_KEY, 0)) {
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) == LUA_TTABLE) {
      lua_pushvalue(L, idx);
      lua_pushnil(L);
      lua_rawset(L, -4);
      if (live_hook) live_hook(L, lua_gettop(L));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 1;
}

void kty_live_note_reader(lua_State *L, int tidx, int owner) {
  tidx = lua_absindex(L, tidx);
  owner = lua_absindex(L, owner);
  push_set(L, FROZENBY_KEY, 1);
  lua_pushvalue(L, tidx);
  if (lua_rawget(L, -2) != LUA_TTABLE) {   /* its owners: weak too */
    lua_pop(L, 1);
    push_weak_keys(L);
    lua_pushvalue(L, tidx);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, owner);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 2);
}

/* ---- Tables their own functions write into ---------------------------------- */

/* Does prototype p write into the table held by its upvalue u, by that
** name: `T.x = v` (SETTABUP u), `T[k] = v`, `T.a = v` through a register
** loaded from u (GETUPVAL, MOVE), `table.insert(T, v)` / `table.remove(T)`?
** Registers are followed in code order, not along jumps: a register
** reloaded on one path may be taken for T (a live read more, never a
** write missed on straight code). */
static int proto_writes_upvalue(const KbcProto *p, int u) {
  enum { NONE, TAB, WRITER };
  uint8_t r[256];
  memset(r, NONE, sizeof r);
  for (int pc = 0; pc < p->ncode; pc++) {
    uint32_t i = p->code[pc];
    int op = KBC_OP(i), a = KBC_A(i), b = KBC_B(i), c = KBC_C(i);
    switch (op) {
    case KBC_SETTABUP: if (a == u) return 1; break;
    case KBC_SETTABLE: case KBC_SETI: case KBC_SETFIELD: case KBC_SETLIST:
      if (r[a] == TAB) return 1;
      break;
    case KBC_GETUPVAL: r[a] = b == u ? TAB : NONE; break;
    case KBC_MOVE: r[a] = r[b]; break;
    case KBC_GETFIELD: {   /* table.insert, table.remove (the global `table`'s) */
      const KbcConst *k = c < p->nk ? &p->k[c] : NULL;
      int w = k && k->kind == KBC_KSTR && (strcmp(k->u.str.s, "insert") == 0 ||
                                           strcmp(k->u.str.s, "remove") == 0);
      r[a] = w && r[b] == WRITER ? WRITER : NONE;
      break;
    }
    case KBC_GETTABUP: {
      const KbcConst *k = c < p->nk ? &p->k[c] : NULL;
      r[a] = k && k->kind == KBC_KSTR && strcmp(k->u.str.s, "table") == 0 ? WRITER : NONE;
      break;
    }
    case KBC_CALL: case KBC_TAILCALL:
      if (r[a] == WRITER && a + 1 < 256 && r[a + 1] == TAB) return 1;
      r[a] = NONE;
      break;
    /* (instructions that do not set R[A]) */
    case KBC_SETUPVAL: case KBC_EQ: case KBC_LT: case KBC_LE: case KBC_EQK: case KBC_EQI:
    case KBC_LTI: case KBC_LEI: case KBC_GTI: case KBC_GEI: case KBC_TEST: case KBC_JMP:
    case KBC_RETURN: case KBC_RETURN0: case KBC_RETURN1: case KBC_CLOSE: case KBC_TBC:
    case KBC_MMBIN: case KBC_MMBINI: case KBC_MMBINK: case KBC_EXTRAARG: case KBC_VARARGPREP:
      break;
    default: r[a] = NONE; break;
    }
  }
  return 0;
}

/* The upvalues (bit u for upvalue u + 1, the first 62) that the Lua
** function at fidx writes into by their names, decoded once per prototype
** where the upvalues are read in place, else once per closure: the answer
** kept per closure (kjit.writesups, weak in its keys: its code never
** changes), and per prototype one closure of it (kjit.writesproto: the
** prototype's address -> a closure, weak in its values: while that
** closure lives, so does its prototype, so the address names the same
** one), whose answer a new closure of that prototype takes. */
static const char WRITES_KEY[] = "kjit.writesups";
static const char PROTOS_KEY[] = "kjit.writesproto";

/* The prototype of the Lua function at fidx (NULL: not known here). */
static const void *proto_of(lua_State *L, int fidx) {
  if (!kls_upvalues_on(L)) return NULL;
  return ((const KlsLClosure *)lua_topointer(L, fidx))->p;
}

static lua_Integer written_upvalues(lua_State *L, int fidx) {
  fidx = lua_absindex(L, fidx);
  push_set(L, WRITES_KEY, 1);
  int writes = lua_gettop(L);
  lua_pushvalue(L, fidx);
  if (lua_rawget(L, writes) == LUA_TNUMBER) {
    lua_Integer m = lua_tointeger(L, -1);
    lua_pop(L, 2);
    return m;
  }
  lua_pop(L, 1);
  const void *proto = proto_of(L, fidx);
  if (proto != NULL) {   /* another closure of the same prototype answered */
    if (lua_getfield(L, LUA_REGISTRYINDEX, PROTOS_KEY) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_createtable(L, 0, 1);
      lua_pushliteral(L, "v");
      lua_setfield(L, -2, "__mode");
      lua_setmetatable(L, -2);
      lua_pushvalue(L, -1);
      lua_setfield(L, LUA_REGISTRYINDEX, PROTOS_KEY);
    }
    int protos = lua_gettop(L);
    lua_pushlightuserdata(L, (void *)proto);
    if (lua_rawget(L, protos) == LUA_TFUNCTION && lua_rawget(L, writes) == LUA_TNUMBER) {
      lua_Integer m = lua_tointeger(L, -1);
      lua_pushvalue(L, fidx);
      lua_pushinteger(L, m);
      lua_rawset(L, writes);
      lua_settop(L, writes - 1);
      return m;
    }
    lua_settop(L, protos);
    lua_pushlightuserdata(L, (void *)proto);   /* (this closure answers for it now) */
    lua_pushvalue(L, fidx);
    lua_rawset(L, protos);
    lua_settop(L, writes);
  }
  lua_Integer mask = 0;
  Arena A;
  ka_init(&A);
  char err[128];
  KbcChunk *ch = kbc_load(L, fidx, &A, err, sizeof err);
  for (int u = 0; ch && u < ch->main->nup && u < 62; u++)
    if (proto_writes_upvalue(ch->main, u)) mask |= (lua_Integer)1 << u;
  ka_free(&A);
  lua_pushvalue(L, fidx);
  lua_pushinteger(L, mask);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return mask;
}

/* Does the Lua function at fidx write, by its name, into the table at
** tidx that one of its upvalues holds? */
static int function_writes(lua_State *L, int fidx, int tidx) {
  lua_Integer mask = written_upvalues(L, fidx);
  int yes = 0;
  for (int u = 0; mask >> u != 0 && !yes; u++) {
    if (!(mask >> u & 1) || lua_getupvalue(L, fidx, u + 1) == NULL) continue;
    yes = lua_rawequal(L, -1, tidx);
    lua_pop(L, 1);
  }
  return yes;
}

int kty_live_own_writer(lua_State *L, int tidx) {
  enum { MAXFIELDS = 256 };   /* (a longer table is data, not a class) */
  tidx = lua_absindex(L, tidx);
  int yes = 0, seen = 0;
  lua_pushnil(L);
  while (!yes && lua_next(L, tidx)) {
    if (++seen > MAXFIELDS) { lua_pop(L, 2); return 0; }
    if (lua_type(L, -1) == LUA_TFUNCTION && !lua_iscfunction(L, -1))
      yes = function_writes(L, lua_gettop(L), tidx);
    lua_pop(L, 1);
  }
  if (yes) lua_pop(L, 1);   /* the key */
  return yes;
}

/* ---- Globals compiled code assigns -------------------------------------------
** The same for globals (by name, whatever the environment: a name one
** compiled function assigns is read live by every later compile): code
** compiled before that read the global frozen is retired when the first
** compiled assignment is typed (ir_type.c global_assigned). */
static const char GLOBALS_KEY[] = "kjit.liveglobals";        /* name -> true */
static const char GREADERS_KEY[] = "kjit.frozenglobals";     /* name -> { owner -> true } */

int kty_live_global_has(lua_State *L, const char *name, size_t len) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, GLOBALS_KEY) != LUA_TTABLE) { lua_pop(L, 1); return 0; }
  lua_pushlstring(L, name, len);
  int yes = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return yes;
}

/* registry[key], a plain table (its keys are strings), made when missing. */
static void push_names(lua_State *L, const char *key) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

int kty_live_global_mark(lua_State *L, const char *name, size_t len) {
  if (kty_live_global_has(L, name, len)) return 0;
  push_names(L, GLOBALS_KEY);
  lua_pushlstring(L, name, len);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, GREADERS_KEY) == LUA_TTABLE) {
    lua_pushlstring(L, name, len);
    if (lua_rawget(L, -2) == LUA_TTABLE) {
      lua_pushlstring(L, name, len);
      lua_pushnil(L);
      lua_rawset(L, -4);
      if (live_hook) live_hook(L, lua_gettop(L));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 1;
}

void kty_live_note_global_reader(lua_State *L, const char *name, size_t len, int owner) {
  owner = lua_absindex(L, owner);
  push_names(L, GREADERS_KEY);
  lua_pushlstring(L, name, len);
  if (lua_rawget(L, -2) != LUA_TTABLE) {   /* its owners: weak */
    lua_pop(L, 1);
    push_weak_keys(L);
    lua_pushlstring(L, name, len);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, owner);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 2);
}
