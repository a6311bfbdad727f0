/*
** runtime/luastring.c: run-time helpers for Lua values that are not about
** tables: conversions of a value in a slot where compiled code needs a
** native value (a bool array's element). Same rules as luavalue.c (its
** head says how values are anchored and why helpers may longjmp): slots
** are absolute stack indices of the compiled frame, L is KErr.L.
*/
#include "runtime/luastring.h"
#include <string.h>
#include "lauxlib.h"
#include "backend/cpu.h"
#include "common/karray.h"
#include "runtime/luavalue.h"

/* The boolean in slot: 0 or 1; -1 when it holds another type (compiled
** code raises buffer.c's "boolean expected, got <type>"). */
int32_t kjit_ls_tobool(lua_State *L, int32_t slot) {
  if (lua_type(L, slot) != LUA_TBOOLEAN) return -1;
  return lua_toboolean(L, slot);
}

/* buffer.c's tname: a metatable's __name, else the type's name (pushes
** nothing: the name is kept by the registry's metatable or is static). */
static const char *tname(lua_State *L, int idx) {
  int mt = luaL_getmetafield(L, idx, "__name");
  if (mt == LUA_TSTRING) {   /* kept alive by the metatable */
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1);
    return s;
  }
  if (mt != LUA_TNIL) lua_pop(L, 1);
  return luaL_typename(L, idx);
}

/* The key in slot for a kjit array (a[t.i], a[t.i] = v): a number gives
** KLV_INT or KLV_FLT and *out (compiled code then checks it as any
** index); anything else raises at chunk:line what the array's __index or
** __newindex (buffer.c) raises for it. A string naming a field or method
** (a.shape, a:copy) is read interpreted; compiled code types arrays'
** fields by their constant names only, so such a read raises a kjit
** message saying so instead of a silent difference. store: 1 for a store,
** | 2 for an array of records (record.c's messages). */
int32_t kjit_ls_arraykey(lua_State *L, int32_t slot, int32_t store, const char *chunk,
                         int32_t line, int64_t *out) {
  int t = lua_type(L, slot);
  if (t == LUA_TNUMBER) {
    if (lua_isinteger(L, slot)) { *out = (int64_t)lua_tointeger(L, slot); return KLV_INT; }
    double d = (double)lua_tonumber(L, slot);
    memcpy(out, &d, sizeof d);
    return KLV_FLT;
  }
  if (t == LUA_TSTRING) {
    const char *k = lua_tostring(L, slot);
    int known = 0;
    luaL_getmetatable(L, KB_METATABLE);   /* __newindex's upvalue 1: the names */
    if (lua_istable(L, -1) && lua_getfield(L, -1, "__newindex") == LUA_TFUNCTION &&
        lua_getupvalue(L, -1, 1) != NULL) {
      lua_pushvalue(L, slot);
      known = lua_rawget(L, -2) != LUA_TNIL;
    }
    int record = store & 2;
    store &= 1;
    if (record && store)   /* record.c m_newindex: any name */
      lua_pushfstring(L, "cannot assign to field '%s' of a kjit.array", k);
    else if (!known && record)   /* record.c arrayfield */
      lua_pushfstring(L, "kjit.array has no field '%s' (an array of records: index it, "
                      "p[i].%s)", k, k);
    else if (!known) lua_pushfstring(L, "kjit.array has no field '%s'", k);
    else if (store) lua_pushfstring(L, "cannot assign to field '%s' of a kjit.array", k);
    else lua_pushfstring(L, "compiled code reads field '%s' of a kjit.array by its name only "
                         "(a.%s), not through a key held in a variable", k, k);
  } else {
    lua_pushfstring(L, "kjit.array cannot be indexed with a %s value (expected an integer "
                    "index or a field name)", tname(L, slot));
  }
  kjit_lv_raise(L, lua_tostring(L, -1), chunk, line);
  return 0;
}

/* May `..` take the value in slot (a string, a number, or a value with a
** __concat metamethod, which lua_concat then calls)? 1 or 0. */
int32_t kjit_ls_concatok(lua_State *L, int32_t slot) {
  int t = lua_type(L, slot);
  if (t == LUA_TSTRING || t == LUA_TNUMBER) return 1;
  if (luaL_getmetafield(L, slot, "__concat") == LUA_TNIL) return 0;
  lua_pop(L, 1);
  return 1;
}

/* kjit_ls_concatok, or the partner in slot p (0: none) has __concat. */
/* Is the value in slot a string or a number (what a dtype object's
** __concat takes: host/dtype.c dt_concat)? 1 or 0. */
int32_t kjit_ls_strnum(lua_State *L, int32_t slot) {
  return lua_type(L, slot) == LUA_TSTRING || lua_type(L, slot) == LUA_TNUMBER;
}

int32_t kjit_ls_concatok2(lua_State *L, int32_t slot, int32_t p) {
  if (kjit_ls_concatok(L, slot)) return 1;
  if (p == 0 || lua_type(L, p) == LUA_TSTRING || lua_type(L, p) == LUA_TNUMBER) return 0;
  if (luaL_getmetafield(L, p, "__concat") == LUA_TNIL) return 0;
  lua_pop(L, 1);
  return 1;
}

/* Has the value in slot a __concat metamethod (strings' and numbers'
** concatenation is not one)? */
int32_t kjit_ls_hasconcat(lua_State *L, int32_t slot) {
  if (lua_type(L, slot) == LUA_TSTRING || lua_type(L, slot) == LUA_TNUMBER) return 0;
  if (luaL_getmetafield(L, slot, "__concat") == LUA_TNIL) return 0;
  lua_pop(L, 1);
  return 1;
}

/* lua_arith of the two values on top, protected (a string operand's
** metamethod raises from C: luaL_where there names no line). */
static int arith_p(lua_State *L) {
  lua_arith(L, (int)lua_tointeger(L, lua_upvalueindex(1)));
  return 1;
}

/* kjit_lv_arith where an operand may be a string and no other value's
** metamethod can run (luavalue.c kjit_lv_arithx sends those through the
** operator's trampoline): the string library's arithmetic metamethods
** (lstrlib.c) raise with luaL_error, whose position is the caller's line,
** here a C function's: none. Run protected, and a message raised there
** gets the user's chunk:line as interpreted. */
int32_t kjit_ls_arith(lua_State *L, int32_t op, int32_t a, int32_t b, int32_t dst, int64_t *out,
                      const char *chunk, int32_t line) {
  int unary = op == LUA_OPUNM || op == LUA_OPBNOT;
  if (lua_type(L, a) != LUA_TSTRING && (unary || lua_type(L, b) != LUA_TSTRING))
    return kjit_lv_arith(L, op, a, b, dst, out);
  lua_pushinteger(L, op);
  lua_pushcclosure(L, arith_p, 1);
  lua_pushvalue(L, a);
  lua_pushvalue(L, unary ? a : b);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    /* (an integer // or % by zero once the strings converted is raised by
    ** the VM's luaG_runerror inside the C metamethod: no position, as
    ** interpreted; found/string-idiv-zero-position.lua) */
    const char *m = lua_tostring(L, -1);
    if (m && strcmp(m, "attempt to perform 'n%0'") != 0 && strcmp(m, "attempt to divide by zero") != 0)
      kjit_lv_raise(L, m, chunk, line);
    lua_error(L);
  }
  lua_replace(L, dst);   /* the result: compiled code reads it from the slot */
  if (lua_type(L, dst) == LUA_TNUMBER) {
    if (lua_isinteger(L, dst)) { *out = (int64_t)lua_tointeger(L, dst); return KLV_INT; }
    double d = (double)lua_tonumber(L, dst);
    memcpy(out, &d, sizeof d);
    return KLV_FLT;
  }
  *out = 0;   /* no table address hint */
  return KLV_INSLOT;
}

void kjit_ls_register(void) {
#define REG(f) kc_register_symbol(#f, (void *)f)
  REG(kjit_ls_tobool); REG(kjit_ls_arraykey); REG(kjit_ls_concatok); REG(kjit_ls_arith);
  REG(kjit_ls_concatok2); REG(kjit_ls_hasconcat); REG(kjit_ls_strnum);
#undef REG
}
