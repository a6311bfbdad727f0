/*
** record.c: record dtypes in Lua: kjit.struct (layouts), arrays of records
** and record views in the interpreter.
**
** Decisions (issue 24, item 4; the lead's value model, point 7):
** - kjit.struct{ {"x", "f32"}, {"pos", "f64", 3}, {"inner", Q} } lays the
**   fields out as a C compiler does (common/krecord.c) and returns the
**   layout's value, one per state and layout: equal declarations give the
**   same value (P1 == P2), as they give the same process-wide layout.
** - An array of records is a KBuffer (dtype KJIT_RECORD, record set) with
**   its own metatable, KREC_ARRAY_MT, so buffer.c's element code never
**   sees records; kjit.isarray is true for it. Its memory, views and
**   borrowed-memory guard follow buffer.c's rules exactly (anchor: the
**   user value, or the object itself).
** - p[i] is a record view: the same kind of object with ndim 0 (no
**   extents), keeping p's memory alive. r.x reads or writes a field with
**   the array store rules (buffer.c: kb_push_element/kb_store_element); an
**   array field r.pos is a kjit.array view of the field's elements, a
**   nested record r.inner a record view.
** - Assigning a record (p[i] = r, r.inner = s, kjit.full(n, r, P)) copies
**   a record of the same layout, or a table of fields as a C compound
**   literal does: the fields named are set, the others are zero.
** - r1 == r2 compares two record views by content: the same layout and
**   every field equal as Lua numbers (so 0.0 == -0.0 and NaN ~= NaN, as
**   NumPy compares structured values field by field); arrays of records
**   compare by identity, as kjit arrays do.
** - tostring(r) is "{x = 1.0, y = 2.0, pos = [1.0, 2.0, 3.0]}".
*/
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "host/record.h"
#include "ir/ir_builtins.h"

#define STRUCTS_KEY "kjit.structs"   /* registry: layout (light) -> value, weak */
#define EDGE 3                       /* tostring: records kept at each end */
#define SUMMARIZE 10                 /* tostring: elide above this count */

typedef KRecStructUD StructUD;   /* krecord.h: the typer reads them too */

/* ---- kjit.struct values ------------------------------------------------- */

const KRecord *krec_test(lua_State *L, int idx) {
  StructUD *s = luaL_testudata(L, idx, KREC_STRUCT_MT);
  return s ? s->r : NULL;
}

static void pushstructmeta(lua_State *L);

void krec_push_struct(lua_State *L, const KRecord *r) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, STRUCTS_KEY);
  if (lua_getmetatable(L, -1) == 0) {   /* weak values: unused values go */
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
  } else {
    lua_pop(L, 1);
  }
  if (lua_rawgetp(L, -1, r) == LUA_TUSERDATA) { lua_remove(L, -2); return; }
  lua_pop(L, 1);
  StructUD *s = lua_newuserdatauv(L, sizeof *s, 0);
  s->r = r;
  pushstructmeta(L);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, r);
  lua_remove(L, -2);
}

/* The dtype of a field spec at idx: a dtype name or a kjit.struct. */
static void fielddtype(lua_State *L, int idx, int i, KRecField *f) {
  const KRecord *r = krec_test(L, idx);
  if (r) { f->dtype = (int)KJIT_RECORD; f->rec = r; return; }
  int d = kir_dtype_of(L, idx);   /* kjit.f32 ... (host/dtype.c) */
  if (d >= 0) { f->dtype = d; f->rec = NULL; return; }
  if (lua_type(L, idx) == LUA_TSTRING) {
    const char *s = lua_tostring(L, idx);
    for (int t = 0; t < KJIT_NDTYPES; t++)
      if (strcmp(kjit_dtype_name((kjit_dtype)t), s) == 0) { f->dtype = t; f->rec = NULL; return; }
    luaL_error(L, "kjit.struct: field #%d ('%s'): unknown dtype '%s'", i, f->name, s);
  }
  luaL_error(L, "kjit.struct: field #%d ('%s'): the dtype must be a dtype name or a "
             "kjit.struct, got %s", i, f->name, luaL_typename(L, idx));
}

/* kjit.struct{ {name, dtype [, count]}, ... } */
static int l_struct(lua_State *L) {
  KRecField f[256];
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  if (n < 1) return luaL_error(L, "kjit.struct: a record needs at least one field, "
                               "e.g. kjit.struct{ {\"x\", \"f32\"} }");
  if (n > 256) return luaL_error(L, "kjit.struct: at most 256 fields");
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    int e = lua_gettop(L);
    if (!lua_istable(L, e))
      return luaL_error(L, "kjit.struct: field #%d must be a table {name, dtype [, count]}, "
                        "got %s", i + 1, luaL_typename(L, e));
    lua_rawgeti(L, e, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      return luaL_error(L, "kjit.struct: field #%d: the name must be a string", i + 1);
    f[i].name = lua_tostring(L, -1);   /* kept alive by the spec table */
    lua_rawgeti(L, e, 2);
    fielddtype(L, lua_gettop(L), i + 1, &f[i]);
    f[i].count = 0;
    if (lua_rawgeti(L, e, 3) != LUA_TNIL) {
      int ok;
      lua_Integer c = lua_tointegerx(L, -1, &ok);
      if (!ok || c < 1 || c > ((lua_Integer)1 << 32))
        return luaL_error(L, "kjit.struct: field #%d ('%s'): the count must be a positive "
                          "integer", i + 1, f[i].name);
      f[i].count = c;
    }
    f[i].offset = 0;
    lua_settop(L, 1);
  }
  char err[256];
  const KRecord *r = krec_c_layout(f, (int)n, err, sizeof err);
  if (r == NULL) return luaL_error(L, "kjit.struct: %s", err);
  krec_push_struct(L, r);
  return 1;
}

/* The layout's text (krecord.c's krec_text: the typer's messages use it too). */
static void addlayout(luaL_Buffer *B, const KRecord *r) {
  char *t = krec_text(r);
  if (t == NULL) luaL_error(B->L, "not enough memory");
  lua_pushstring(B->L, t);
  free(t);
  luaL_addvalue(B);
}

static int s_tostring(lua_State *L) {
  const KRecord *r = ((StructUD *)luaL_checkudata(L, 1, KREC_STRUCT_MT))->r;
  luaL_Buffer B;
  luaL_buffinit(L, &B);
  luaL_addstring(&B, "kjit.");
  addlayout(&B, r);
  luaL_pushresult(&B);
  return 1;
}

/* P.size, P.align, P.offset (name -> byte offset), P.fields (a list of
** {name =, dtype =, count =, offset =}; dtype a name or a kjit.struct). */
static int s_index(lua_State *L) {
  const KRecord *r = ((StructUD *)luaL_checkudata(L, 1, KREC_STRUCT_MT))->r;
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "size") == 0) { lua_pushinteger(L, r->size); return 1; }
  if (strcmp(k, "align") == 0) { lua_pushinteger(L, r->align); return 1; }
  if (strcmp(k, "offset") == 0) {
    lua_createtable(L, 0, r->nfields);
    for (int i = 0; i < r->nfields; i++) {
      lua_pushinteger(L, r->fields[i].offset);
      lua_setfield(L, -2, r->fields[i].name);
    }
    return 1;
  }
  if (strcmp(k, "fields") == 0) {
    lua_createtable(L, r->nfields, 0);
    for (int i = 0; i < r->nfields; i++) {
      const KRecField *f = &r->fields[i];
      lua_createtable(L, 0, 4);
      lua_pushstring(L, f->name);
      lua_setfield(L, -2, "name");
      if (f->dtype == (int)KJIT_RECORD) krec_push_struct(L, f->rec);
      else lua_pushstring(L, kjit_dtype_name((kjit_dtype)f->dtype));
      lua_setfield(L, -2, "dtype");
      lua_pushinteger(L, f->count);
      lua_setfield(L, -2, "count");
      lua_pushinteger(L, f->offset);
      lua_setfield(L, -2, "offset");
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  return luaL_error(L, "kjit.struct has no field '%s' (size, align, offset, fields)", k);
}

static void pushstructmeta(lua_State *L) {
  if (!kb_newmeta(L, KREC_STRUCT_MT)) return;
  lua_pushcfunction(L, s_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, s_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, KREC_STRUCT_MT);
  lua_setfield(L, -2, "__metatable");
  kb_regmeta(L, KREC_STRUCT_MT);
}

/* ---- arrays of records: creation and views ------------------------------ */

static void pusharraymeta(lua_State *L);

static void initheader(KBuffer *b, char *data, const KRecord *r, int ndim, const int64_t *shape) {
  int64_t size = 1;
  b->data = data;
  for (int k = 0; k < KJIT_MAXDIMS; k++) {
    b->shape[k] = k < ndim ? shape[k] : 1;
    if (k < ndim) size *= shape[k];
  }
  b->size = size;
  b->ndim = ndim;
  b->dtype = KJIT_RECORD;
  b->release = NULL;
  b->release_ud = NULL;
  b->released = NULL;
  b->tag = KB_TAG(b);
  b->record = r;
}

/* The number of records of a shape, checked as buffer.c checks sizes. */
static int64_t checkcount(lua_State *L, const KRecord *r, int ndim, const int64_t *shape) {
  int64_t nz = 1, limit = ((int64_t)1 << 48) / r->size;
  int zero = 0;
  if (ndim < 1 || ndim > KJIT_MAXDIMS)
    luaL_error(L, "kjit arrays have 1 to %d dimensions, got %d", KJIT_MAXDIMS, ndim);
  for (int k = 0; k < ndim; k++) {
    if (shape[k] < 0) luaL_error(L, "negative dimension %I in shape", (lua_Integer)shape[k]);
    if (shape[k] == 0) { zero = 1; continue; }
    if (nz > limit / shape[k]) luaL_error(L, "array too large (over 2^48 bytes)");
    nz *= shape[k];
  }
  return zero ? 0 : nz;
}

KBuffer *krec_push_new(lua_State *L, const KRecord *r, int ndim, const int64_t *shape) {
  size_t bytes = (size_t)checkcount(L, r, ndim, shape) * (size_t)r->size;
  KBuffer *b = lua_newuserdatauv(L, sizeof(KBuffer) + 63 + bytes, 1);
  uintptr_t p = ((uintptr_t)(b + 1) + 63) & ~(uintptr_t)63;
  initheader(b, (char *)p, r, ndim, shape);
  memset(b->data, 0, bytes);
  pusharraymeta(L);
  lua_setmetatable(L, -2);
  return b;
}

/* Over host memory: buffer.c makes a borrowed byte array (its guard calls
** the host's release function once, its checks apply), which becomes the
** array of records: the same header, retyped, and this metatable. */
KBuffer *krec_push_borrowed(lua_State *L, void *data, const KRecord *r, int ndim,
                            const int64_t *shape, kb_release_fn release, void *ud) {
  int64_t n = checkcount(L, r, ndim, shape);
  pusharraymeta(L);   /* made now: nothing may fail once the guard is armed */
  lua_pop(L, 1);
  if ((uintptr_t)data % (uintptr_t)r->align != 0)
    luaL_error(L, "borrowed records at %p are not aligned to their %d-byte alignment",
               data, (int)r->align);
  int64_t bytes[1] = { n * r->size };
  KBuffer *b = kb_push_borrowed(L, data, KJIT_U8, 1, bytes, release, ud);
  const int *released = b->released;
  kb_release_fn rel = b->release;
  void *rud = b->release_ud;
  initheader(b, (char *)data, r, ndim, shape);
  b->released = released;
  b->release = rel;
  b->release_ud = rud;
  pusharraymeta(L);
  lua_setmetatable(L, -2);
  return b;
}

/* Pushes anchor(base): its user value, or base itself (buffer.c). */
static void pushanchor(lua_State *L, int base) {
  if (lua_getiuservalue(L, base, 1) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushvalue(L, base);
  }
}

/* A view of records (ndim 0: one record) inside the memory of base. */
static KBuffer *pushrecview(lua_State *L, int base, const KBuffer *src, char *data,
                            const KRecord *r, int ndim, const int64_t *shape) {
  KBuffer *v = lua_newuserdatauv(L, sizeof(KBuffer), 1);
  initheader(v, data, r, ndim, shape);
  v->released = src->released;
  pusharraymeta(L);
  lua_setmetatable(L, -2);
  pushanchor(L, base);
  lua_setiuservalue(L, -2, 1);
  return v;
}

KBuffer *krec_push_view(lua_State *L, int base, char *data, const KRecord *r, int dtype,
                        int ndim, const int64_t *shape) {
  base = lua_absindex(L, base);
  KBuffer *src = luaL_checkudata(L, base, KREC_ARRAY_MT);
  if (r) return pushrecview(L, base, src, data, r, ndim, shape);
  KBuffer *v = kb_push_borrowed(L, data, (kjit_dtype)dtype, ndim, shape, NULL, NULL);
  v->released = src->released;   /* as pushnumview's */
  pushanchor(L, base);
  lua_setiuservalue(L, -2, 1);
  return v;
}

/* A kjit.array view of n elements of dtype t (an array field). */
static void pushnumview(lua_State *L, int base, const KBuffer *src, char *data, int t,
                        int64_t n) {
  int64_t shape[1] = { n };
  KBuffer *v = kb_push_borrowed(L, data, (kjit_dtype)t, 1, shape, NULL, NULL);
  v->released = src->released;
  pushanchor(L, base);
  lua_setiuservalue(L, -2, 1);
}

KBuffer *krec_test_array(lua_State *L, int idx) {
  KBuffer *b = luaL_testudata(L, idx, KREC_ARRAY_MT);
  if (b && kb_released(b)) kb_released_error(L);
  return b;
}

static KBuffer *self(lua_State *L) {
  KBuffer *b = luaL_checkudata(L, 1, KREC_ARRAY_MT);
  if (kb_released(b)) kb_released_error(L);
  return b;
}

/* ---- fields -------------------------------------------------------------- */

/* "x, y, pos" for messages. */
static const char *pushnames(lua_State *L, const KRecord *r) {
  luaL_Buffer B;
  luaL_buffinit(L, &B);
  for (int i = 0; i < r->nfields; i++) {
    if (i) luaL_addstring(&B, ", ");
    luaL_addstring(&B, r->fields[i].name);
  }
  luaL_pushresult(&B);
  return lua_tostring(L, -1);
}

static const KRecField *checkfield(lua_State *L, const KRecord *r, int k) {
  if (lua_type(L, k) != LUA_TSTRING)
    kb_where_error(L, "a record is indexed by field names, not with a %s value",
                luaL_typename(L, k));
  size_t len;
  const char *s = lua_tolstring(L, k, &len);
  const KRecField *f = krec_field(r, s, len);
  if (f == NULL) kb_where_error(L, "record has no field '%s' (fields: %s)", s, pushnames(L, r));
  return f;
}

/* A header for one scalar of dtype t at p, for buffer.c's element code. */
static KBuffer scalar(char *p, int t) {
  KBuffer h;
  memset(&h, 0, sizeof h);
  h.data = p;
  h.dtype = (kjit_dtype)t;
  h.ndim = 1;
  h.size = 1;
  h.shape[0] = h.shape[1] = h.shape[2] = h.shape[3] = 1;
  return h;
}

/* Pushes field f of the record at p (which lives in the memory of base). */
static void pushfield(lua_State *L, int base, const KBuffer *src, char *p, const KRecField *f) {
  char *q = p + f->offset;
  if (f->count) {
    if (f->dtype == (int)KJIT_RECORD) {
      int64_t shape[1] = { f->count };
      pushrecview(L, base, src, q, f->rec, 1, shape);
    } else {
      pushnumview(L, base, src, q, f->dtype, f->count);
    }
  } else if (f->dtype == (int)KJIT_RECORD) {
    pushrecview(L, base, src, q, f->rec, 0, NULL);
  } else {
    KBuffer h = scalar(q, f->dtype);
    kb_push_element(L, &h, 0);
  }
}

static void setrecord(lua_State *L, const KRecord *r, char *p, int idx);

/* Stores the value at idx into field f of the record at p. */
static void setfield(lua_State *L, char *p, const KRecField *f, int idx) {
  char *q = p + f->offset;
  if (f->count) {
    kb_where_error(L, "cannot assign to array field '%s' of a record: assign its elements "
                "(r.%s[i] = v)", f->name, f->name);
  } else if (f->dtype == (int)KJIT_RECORD) {
    setrecord(L, f->rec, q, idx);
  } else {
    KBuffer h = scalar(q, f->dtype);
    kb_store_element(L, &h, 0, idx);
  }
}

/* Stores the value at idx, a record of layout r or a table of fields (the
** others zero, as a C compound literal), into the record at p. */
static void setrecord(lua_State *L, const KRecord *r, char *p, int idx) {
  idx = lua_absindex(L, idx);
  KBuffer *v = luaL_testudata(L, idx, KREC_ARRAY_MT);
  if (v && v->ndim == 0 && v->record == r) {
    if (kb_released(v)) kb_released_error(L);
    memmove(p, v->data, (size_t)r->size);
    return;
  }
  if (lua_type(L, idx) == LUA_TTABLE) {
    char tmp[512];
    char *dst = r->size <= (int64_t)sizeof tmp ? tmp : lua_newuserdatauv(L, (size_t)r->size, 0);
    memset(dst, 0, (size_t)r->size);   /* built aside: an error leaves p as it was */
    luaL_checkstack(L, 4, "record");
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      setfield(L, dst, checkfield(L, r, lua_gettop(L) - 1), lua_gettop(L));
      lua_pop(L, 1);
    }
    memcpy(p, dst, (size_t)r->size);
    if (dst != tmp) lua_pop(L, 1);
    return;
  }
  luaL_Buffer B;
  if (v) lua_pushstring(L, v->ndim ? "an array of records" : "a record of another layout");
  else lua_pushfstring(L, "a %s value", luaL_typename(L, idx));
  luaL_buffinit(L, &B);
  addlayout(&B, r);
  luaL_pushresult(&B);
  kb_where_error(L, "cannot assign %s to a record of %s (assign a record of that layout or a "
              "table of fields)", lua_tostring(L, -2), lua_tostring(L, -1));
}

/* ---- metamethods ---------------------------------------------------------- */

static int64_t rowrecords(const KBuffer *b) {
  return b->shape[1] * b->shape[2] * b->shape[3];
}

static lua_Integer keyindex(lua_State *L, const KBuffer *b, int ipairs_up) {
  int ok;
  if (lua_type(L, 2) != LUA_TNUMBER)
    kb_where_error(L, "kjit.array cannot be indexed with a %s value (expected an integer "
                "index or a field name)", luaL_typename(L, 2));
  lua_Integer i = lua_tointegerx(L, 2, &ok);
  if (!ok) {   /* buffer.c's words */
    lua_Number d = lua_tonumber(L, 2);
    if (d == floor(d))
      kb_where_error(L, "index %f out of bounds [1, %I]", d, (lua_Integer)b->shape[0]);
    kb_where_error(L, "index %f is not an integer", d);
  }
  if (i < 1 || i > b->shape[0]) {
    if (ipairs_up && i == b->shape[0] + 1 && kb_from_ipairs(L, ipairs_up)) return 0;
    kb_bounds_error(L, i, b->shape[0]);
  }
  return i;
}

static int arrayfield(lua_State *L, KBuffer *b);

static int m_index(lua_State *L) {
  KBuffer *b = self(L);
  if (b->ndim == 0) {
    pushfield(L, 1, b, b->data, checkfield(L, b->record, 2));
    return 1;
  }
  if (lua_type(L, 2) == LUA_TSTRING) return arrayfield(L, b);
  lua_Integer i = keyindex(L, b, 1);
  if (i == 0) { lua_pushnil(L); return 1; }   /* ipairs(p) ends after #p */
  char *p = b->data + (i - 1) * rowrecords(b) * b->record->size;
  pushrecview(L, 1, b, p, b->record, b->ndim - 1, b->shape + 1);
  return 1;
}

static int m_newindex(lua_State *L) {
  KBuffer *b = self(L);
  if (b->ndim == 0) {
    setfield(L, b->data, checkfield(L, b->record, 2), 3);
    return 0;
  }
  if (lua_type(L, 2) == LUA_TSTRING)
    return kb_where_error(L, "cannot assign to field '%s' of a kjit.array", lua_tostring(L, 2));
  if (b->ndim > 1)
    return kb_where_error(L, "cannot assign a whole row of a %d-D kjit.array: index all %d "
                       "dimensions (a[i][j] = v)", b->ndim, b->ndim);
  lua_Integer i = keyindex(L, b, 0);
  setrecord(L, b->record, b->data + (i - 1) * b->record->size, 3);
  return 0;
}

static int m_len(lua_State *L) {
  KBuffer *b = self(L);
  if (b->ndim == 0) return kb_where_error(L, "attempt to get length of a record");
  lua_pushinteger(L, (lua_Integer)b->shape[0]);
  return 1;
}

/* Field-by-field equality of two records of layout r. Numbers compare as
** Lua compares them (0.0 == -0.0), except that a NaN field equals a NaN
** field: equality stays reflexive, as it must, because Lua answers `r == r`
** for one view object without calling __eq (lvm.c's luaV_equalobj), and
** compiled code cannot tell one view object from two views of a record. */
static int receq(lua_State *L, const KRecord *r, char *a, char *b) {
  for (int i = 0; i < r->nfields; i++) {
    const KRecField *f = &r->fields[i];
    int64_t n = f->count ? f->count : 1, es = krec_elemsize(f);
    for (int64_t j = 0; j < n; j++) {
      char *p = a + f->offset + j * es, *q = b + f->offset + j * es;
      if (f->dtype == (int)KJIT_RECORD) {
        if (!receq(L, f->rec, p, q)) return 0;
        continue;
      }
      KBuffer hp = scalar(p, f->dtype), hq = scalar(q, f->dtype);
      kb_push_element(L, &hp, 0);
      kb_push_element(L, &hq, 0);
      int eq = lua_rawequal(L, -1, -2);
      if (!eq && lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1) && !lua_isinteger(L, -2)) {
        lua_Number x = lua_tonumber(L, -1), y = lua_tonumber(L, -2);
        eq = x != x && y != y;   /* both NaN */
      }
      lua_pop(L, 2);
      if (!eq) return 0;
    }
  }
  return 1;
}

static int m_eq(lua_State *L) {
  KBuffer *a = luaL_testudata(L, 1, KREC_ARRAY_MT), *b = luaL_testudata(L, 2, KREC_ARRAY_MT);
  int eq = a && b && a->ndim == 0 && b->ndim == 0 && a->record == b->record;
  if (eq && (kb_released(a) || kb_released(b))) kb_released_error(L);
  lua_pushboolean(L, eq && receq(L, a->record, a->data, b->data));
  return 1;
}

/* ---- tostring ------------------------------------------------------------ */

static void addscalar(lua_State *L, luaL_Buffer *B, char *p, int t) {
  char buf[64];
  if (t == KJIT_U64) {
    snprintf(buf, sizeof buf, "%" PRIu64, *(const uint64_t *)p);
  } else if (t == KJIT_F32 || t == KJIT_F64) {
    double d = t == KJIT_F32 ? (double)*(const float *)p : *(const double *)p;
    snprintf(buf, sizeof buf, "%.*g", t == KJIT_F32 ? 7 : 14, d);
    if (buf[strspn(buf, "-0123456789")] == '\0') strcat(buf, ".0");
  } else if (t == KJIT_BOOL) {   /* any nonzero byte is true, as read */
    snprintf(buf, sizeof buf, "%s", *(const uint8_t *)p ? "true" : "false");
  } else {
    KBuffer h = scalar(p, t);
    kb_push_element(L, &h, 0);
    luaL_addvalue(B);   /* integers */
    return;
  }
  luaL_addstring(B, buf);
}

static void addrecord(lua_State *L, luaL_Buffer *B, const KRecord *r, char *p) {
  luaL_addchar(B, '{');
  for (int i = 0; i < r->nfields; i++) {
    const KRecField *f = &r->fields[i];
    int64_t es = krec_elemsize(f);
    if (i) luaL_addstring(B, ", ");
    luaL_addstring(B, f->name);
    luaL_addstring(B, " = ");
    if (f->count) luaL_addchar(B, '[');
    for (int64_t j = 0; j < (f->count ? f->count : 1); j++) {
      if (j) luaL_addstring(B, ", ");
      if (f->dtype == (int)KJIT_RECORD) addrecord(L, B, f->rec, p + f->offset + j * es);
      else addscalar(L, B, p + f->offset + j * es, f->dtype);
    }
    if (f->count) luaL_addchar(B, ']');
  }
  luaL_addchar(B, '}');
}

static void addrows(lua_State *L, luaL_Buffer *B, const KBuffer *b, int d, char *p) {
  int64_t n = b->shape[d], st = b->record->size;
  for (int k = d + 1; k < b->ndim; k++) st *= b->shape[k];
  luaL_addchar(B, '[');
  for (int64_t i = 0; i < n; i++) {
    if (i) luaL_addstring(B, ", ");
    if (b->size > SUMMARIZE && n > 2 * EDGE && i == EDGE) {
      luaL_addstring(B, "...");
      i = n - EDGE - 1;
      continue;
    }
    if (d + 1 < b->ndim) addrows(L, B, b, d + 1, p + i * st);
    else addrecord(L, B, b->record, p + i * st);
  }
  luaL_addchar(B, ']');
}

static int m_tostring(lua_State *L) {
  KBuffer *b = self(L);
  luaL_Buffer B;
  char tmp[32];
  luaL_buffinit(L, &B);
  if (b->ndim == 0) {
    addrecord(L, &B, b->record, b->data);
  } else {
    luaL_addstring(&B, "kjit.array(");
    addlayout(&B, b->record);
    luaL_addstring(&B, ", {");
    for (int k = 0; k < b->ndim; k++) {
      snprintf(tmp, sizeof tmp, k ? ", %lld" : "%lld", (long long)b->shape[k]);
      luaL_addstring(&B, tmp);
    }
    luaL_addstring(&B, "}) ");
    addrows(L, &B, b, 0, b->data);
  }
  luaL_pushresult(&B);
  return 1;
}

/* ---- methods of arrays of records --------------------------------------- */

static KBuffer *checkarray(lua_State *L) {
  KBuffer *b = self(L);
  if (b->ndim == 0) kb_where_error(L, "a record view has no methods (only its fields)");
  return b;
}

static int m_copy(lua_State *L) {
  KBuffer *b = checkarray(L);
  KBuffer *c = krec_push_new(L, b->record, b->ndim, b->shape);
  memcpy(c->data, b->data, (size_t)(b->size * b->record->size));
  return 1;
}

/* Every record of b set to the value at vidx (a record or a table of
** fields), in the caller's C frame: its errors name the Lua caller's line. */
static void fillrecords(lua_State *L, KBuffer *b, int vidx) {
  int64_t rs = b->record->size;
  if (b->size == 0) {   /* still checks the value */
    KBuffer *t = krec_push_new(L, b->record, 1, (int64_t[1]){ 1 });
    setrecord(L, b->record, t->data, vidx);
    lua_pop(L, 1);
    return;
  }
  setrecord(L, b->record, b->data, vidx);
  for (int64_t k = 1; k < b->size; k++) memcpy(b->data + k * rs, b->data, (size_t)rs);
}

static int m_fill(lua_State *L) {
  KBuffer *b = checkarray(L);
  lua_settop(L, 2);
  fillrecords(L, b, 2);
  lua_settop(L, 1);
  return 1;
}

static int m_reshape(lua_State *L) {
  KBuffer *b = checkarray(L);
  int64_t shape[KJIT_MAXDIMS];
  int ndim = kb_checkshape(L, 2, shape);
  int64_t n = checkcount(L, b->record, ndim, shape);
  if (n != b->size)
    return luaL_error(L, "cannot reshape a kjit.array of size %I into a shape of size %I",
                      (lua_Integer)b->size, (lua_Integer)n);
  pushrecview(L, 1, b, b->data, b->record, ndim, shape);
  return 1;
}

static int m_slice(lua_State *L) {
  KBuffer *b = checkarray(L);
  lua_Integer n = b->shape[0];
  lua_Integer first = luaL_checkinteger(L, 2);
  lua_Integer last = lua_isnoneornil(L, 3) ? n : luaL_checkinteger(L, 3);
  int backwards = last != LUA_MAXINTEGER && first > last + 1;
  if (first < 1 || last > n || backwards)
    return luaL_error(L, "slice %I..%I out of bounds [1, %I]%s", first, last, n,
                      backwards ? " (first > last + 1)" : "");
  int64_t shape[KJIT_MAXDIMS];
  memcpy(shape, b->shape, sizeof shape);
  shape[0] = last - first + 1;
  pushrecview(L, 1, b, b->data + (first - 1) * rowrecords(b) * b->record->size,
              b->record, b->ndim, shape);
  return 1;
}

/* A record as a table of its fields (array fields: lists). */
static void pushrectable(lua_State *L, const KRecord *r, char *p) {
  luaL_checkstack(L, 4, "totable");
  lua_createtable(L, 0, r->nfields);
  for (int i = 0; i < r->nfields; i++) {
    const KRecField *f = &r->fields[i];
    int64_t es = krec_elemsize(f);
    if (f->count) lua_createtable(L, (int)f->count, 0);
    for (int64_t j = 0; j < (f->count ? f->count : 1); j++) {
      char *q = p + f->offset + j * es;
      if (f->dtype == (int)KJIT_RECORD) pushrectable(L, f->rec, q);
      else { KBuffer h = scalar(q, f->dtype); kb_push_element(L, &h, 0); }
      if (f->count) lua_rawseti(L, -2, j + 1);
    }
    lua_setfield(L, -2, f->name);
  }
}

static void totable(lua_State *L, const KBuffer *b, int d, char *p) {
  int64_t n = b->shape[d], st = b->record->size;
  for (int k = d + 1; k < b->ndim; k++) st *= b->shape[k];
  luaL_checkstack(L, 3, "totable");
  lua_createtable(L, n < (1 << 30) ? (int)n : 1 << 30, 0);
  for (int64_t i = 0; i < n; i++) {
    if (d + 1 < b->ndim) totable(L, b, d + 1, p + i * st);
    else pushrectable(L, b->record, p + i * st);
    lua_rawseti(L, -2, i + 1);
  }
}

/* p:totable(): a list of tables of fields; r:totable() is not a method
** (records have only fields): use kjit.totable-free code, p:totable(). */
static int m_totable(lua_State *L) {
  KBuffer *b = checkarray(L);
  totable(L, b, 0, b->data);
  return 1;
}

static const luaL_Reg methods[] = {
  {"copy", m_copy}, {"fill", m_fill}, {"reshape", m_reshape}, {"slice", m_slice},
  {"totable", m_totable}, {NULL, NULL}
};

/* p.shape, p.dtype (the kjit.struct), p.ndim, p.size, and the methods. */
static int arrayfield(lua_State *L, KBuffer *b) {
  const char *k = lua_tostring(L, 2);
  if (strcmp(k, "shape") == 0) { kb_push_shape(L, b->ndim, b->shape); return 1; }
  if (strcmp(k, "dtype") == 0) { krec_push_struct(L, b->record); return 1; }
  if (strcmp(k, "ndim") == 0) { lua_pushinteger(L, b->ndim); return 1; }
  if (strcmp(k, "size") == 0) { lua_pushinteger(L, (lua_Integer)b->size); return 1; }
  for (const luaL_Reg *m = methods; m->name; m++)
    if (strcmp(k, m->name) == 0) { lua_pushcfunction(L, m->func); return 1; }
  return luaL_error(L, "kjit.array has no field '%s' (an array of records: index it, "
                    "p[i].%s)", k, k);
}

static void pusharraymeta(lua_State *L) {
  if (!kb_newmeta(L, KREC_ARRAY_MT)) return;
  static const luaL_Reg mm[] = {
    {"__newindex", m_newindex}, {"__len", m_len},
    {"__eq", m_eq}, {"__tostring", m_tostring}, {NULL, NULL}
  };
  luaL_setfuncs(L, mm, 0);
  kb_push_ipairs_iter(L);   /* __index's upvalue 1: ipairs(p) ends after #p */
  lua_pushcclosure(L, m_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushliteral(L, KB_METATABLE);   /* getmetatable(p): as for other arrays */
  lua_setfield(L, -2, "__metatable");
  lua_pushliteral(L, KB_METATABLE);   /* Lua's messages name it as other arrays */
  lua_setfield(L, -2, "__name");
  kb_regmeta(L, KREC_ARRAY_MT);
}

/* ---- constructors ---------------------------------------------------------- */

/* The shape of nested lists of records (lists: tables with a length). */
static int listshape(lua_State *L, int idx, int64_t *shape) {
  int nd = 0;
  lua_pushvalue(L, idx);
  while (lua_type(L, -1) == LUA_TTABLE && lua_rawlen(L, -1) > 0) {
    if (nd == KJIT_MAXDIMS) luaL_error(L, "kjit.array: too many dimensions (lists nested more "
                                       "than %d deep)", KJIT_MAXDIMS);
    shape[nd++] = (int64_t)lua_rawlen(L, -1);
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);
  if (nd == 0) shape[nd++] = 0;   /* {}: no records */
  return nd;
}

static void fillfrom(lua_State *L, KBuffer *b, int d, int idx, char *p) {
  int64_t st = b->record->size;
  for (int k = d + 1; k < b->ndim; k++) st *= b->shape[k];
  if (lua_type(L, idx) != LUA_TTABLE || (int64_t)lua_rawlen(L, idx) != b->shape[d])
    luaL_error(L, "kjit.array: ragged list of records (expected a list of %I at depth %d)",
               (lua_Integer)b->shape[d], d + 1);
  luaL_checkstack(L, 2, "kjit.array");
  for (int64_t i = 0; i < b->shape[d]; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (d + 1 < b->ndim) fillfrom(L, b, d + 1, lua_gettop(L), p + i * st);
    else setrecord(L, b->record, p + i * st, -1);
    lua_pop(L, 1);
  }
}

int krec_construct(lua_State *L, const char *fn, int dt) {
  const KRecord *r = krec_test(L, dt);
  int64_t shape[KJIT_MAXDIMS];
  if (strcmp(fn, "zeros") == 0 || strcmp(fn, "empty") == 0) {
    int ndim = kb_checkshape(L, 1, shape);
    krec_push_new(L, r, ndim, shape);
    return 1;
  }
  if (strcmp(fn, "full") == 0) {
    int ndim = kb_checkshape(L, 1, shape);
    lua_settop(L, 3);
    KBuffer *b = krec_push_new(L, r, ndim, shape);
    fillrecords(L, b, 2);
    return 1;
  }
  if (strcmp(fn, "array") == 0) {
    KBuffer *src = krec_test_array(L, 1);
    if (src && src->ndim > 0) {
      if (src->record != r) luaL_error(L, "kjit.array: the records have another layout");
      lua_settop(L, 1);
      return m_copy(L);
    }
    if (lua_type(L, 1) != LUA_TTABLE)
      luaL_error(L, "kjit.array: a list of records (tables of fields) expected, got %s",
                 luaL_typename(L, 1));
    lua_settop(L, 2);
    int ndim = listshape(L, 1, shape);
    KBuffer *b = krec_push_new(L, r, ndim, shape);
    if (b->size > 0) fillfrom(L, b, 0, 1, b->data);
    return 1;
  }
  return luaL_error(L, "kjit.%s: a record dtype has no numeric values (make records with "
                    "kjit.zeros(n, P), kjit.full(n, r, P) or kjit.array(list, P))", fn);
}

/* ---- registration ---------------------------------------------------------- */

void krec_open(lua_State *L) {
  pusharraymeta(L);
  pushstructmeta(L);
  lua_pop(L, 2);
  lua_pushcfunction(L, l_struct);
  lua_setfield(L, -2, "struct");
}

/* ---- the C API (kjit.h) ------------------------------------------------------ */

/* Runs fn(L) (its argument: the light userdata ud) protected; on error
** the message is left on the stack. */
static int protect(lua_State *L, lua_CFunction fn, void *ud, int nres) {
  if (!lua_checkstack(L, 3)) return KJIT_ERRMEM;
  lua_pushcfunction(L, fn);
  lua_pushlightuserdata(L, ud);
  int st = lua_pcall(L, 1, nres, 0);
  return st == LUA_OK ? KJIT_OK : st == LUA_ERRMEM ? KJIT_ERRMEM : KJIT_ERRARG;
}

typedef struct NewCtx {
  const kjit_field *fields;
  int n;
  size_t size;
  const kjit_record *out;
} NewCtx;

static int record_new_p(lua_State *L) {
  NewCtx *c = lua_touserdata(L, 1);
  KRecField f[256];
  if (c->fields == NULL || c->n < 1 || c->n > 256)
    return luaL_error(L, "kjit_record_new: 1 to 256 fields expected, got %d%s", c->n,
                      c->fields ? "" : " (fields is NULL)");
  int64_t align = 1;
  for (int i = 0; i < c->n; i++) {
    const kjit_field *h = &c->fields[i];
    f[i].name = h->name;
    f[i].dtype = (int)h->dtype;
    f[i].rec = h->dtype == KJIT_RECORD ? h->rec : NULL;
    f[i].count = h->count;
    f[i].offset = h->offset > (size_t)INT64_MAX ? -1 : (int64_t)h->offset;
    if (h->dtype == KJIT_RECORD && h->rec == NULL)
      return luaL_error(L, "kjit_record_new: field #%d: dtype KJIT_RECORD needs rec", i + 1);
    if (h->dtype != KJIT_RECORD && kjit_dtype_size(h->dtype) == 0)
      return luaL_error(L, "kjit_record_new: field #%d: invalid dtype %d", i + 1, (int)h->dtype);
    if (h->count < 0) return luaL_error(L, "kjit_record_new: field #%d: negative count", i + 1);
    int64_t a = krec_elemalign(&f[i]);
    if (a > align) align = a;
  }
  char err[256];
  c->out = krec_intern(f, c->n, c->size > ((size_t)1 << 40) ? -1 : (int64_t)c->size, align,
                       err, sizeof err);
  if (c->out == NULL) return luaL_error(L, "kjit_record_new: %s", err);
  return 0;
}

KJIT_API int kjit_record_new(lua_State *L, const kjit_field *fields, int nfields, size_t size,
                             const kjit_record **out) {
  NewCtx c = { fields, nfields, size, NULL };
  if (out) *out = NULL;
  int st = protect(L, record_new_p, &c, 0);
  if (st == KJIT_OK && out == NULL) {
    lua_pushliteral(L, "kjit_record_new: out is NULL");
    return KJIT_ERRARG;
  }
  if (st == KJIT_OK) *out = c.out;
  return st;
}

KJIT_API int kjit_torecord(lua_State *L, int idx, const kjit_record **out) {
  if (out == NULL || lua_type(L, idx) != LUA_TUSERDATA) return KJIT_ERRARG;
  /* (the metatable comparison, without lauxlib calls that may allocate) */
  if (!lua_checkstack(L, 2) || !lua_getmetatable(L, idx)) return KJIT_ERRARG;
  lua_getfield(L, LUA_REGISTRYINDEX, KREC_STRUCT_MT);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (!same) return KJIT_ERRARG;
  *out = ((StructUD *)lua_touserdata(L, idx))->r;
  return KJIT_OK;
}

static int pushrecord_p(lua_State *L) {
  const KRecord *r = lua_touserdata(L, 1);
  if (r == NULL) return luaL_error(L, "kjit_pushrecord: the layout is NULL");
  krec_push_struct(L, r);
  return 1;
}

KJIT_API int kjit_pushrecord(lua_State *L, const kjit_record *rec) {
  return protect(L, pushrecord_p, (void *)rec, 1);
}

KJIT_API size_t kjit_record_size(const kjit_record *rec) {
  return rec ? (size_t)rec->size : 0;
}

KJIT_API int kjit_record_nfields(const kjit_record *rec) {
  return rec ? rec->nfields : 0;
}

KJIT_API int kjit_record_field(const kjit_record *rec, int i, kjit_field *out) {
  if (rec == NULL || out == NULL || i < 0 || i >= rec->nfields) return KJIT_ERRARG;
  const KRecField *f = &rec->fields[i];
  out->name = f->name;
  out->dtype = (kjit_dtype)f->dtype;
  out->rec = f->rec;
  out->count = f->count;
  out->offset = (size_t)f->offset;
  return KJIT_OK;
}

typedef struct PushCtx {
  void *data;
  const KRecord *r;
  int ndim;
  const int64_t *shape;
  kjit_release release;
  void *ud;
} PushCtx;

static int pushrecords_p(lua_State *L) {
  PushCtx *c = lua_touserdata(L, 1);
  if (c->r == NULL) return luaL_error(L, "kjit_pushrecords: the layout is NULL");
  if (c->shape == NULL) return luaL_error(L, "kjit_pushrecords: shape is NULL");
  if (c->ndim < 1 || c->ndim > KJIT_MAXDIMS)
    return luaL_error(L, "kjit_pushrecords: kjit arrays have 1 to %d dimensions, got %d",
                      KJIT_MAXDIMS, c->ndim);
  int64_t n = checkcount(L, c->r, c->ndim, c->shape);
  if (c->data == NULL && n > 0) return luaL_error(L, "kjit_pushrecords: data is NULL");
  krec_push_borrowed(L, c->data, c->r, c->ndim, c->shape, c->release, c->ud);
  return 1;
}

KJIT_API int kjit_pushrecords(lua_State *L, void *data, const kjit_record *rec, int ndim,
                              const int64_t *shape, kjit_release release, void *ud) {
  PushCtx c = { data, rec, ndim, shape, release, ud };
  return protect(L, pushrecords_p, &c, 1);
}
