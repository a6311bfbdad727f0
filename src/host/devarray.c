/*
** devarray.c: device arrays used from the host as numba-cuda's
** DeviceNDArray is (issue 25, item 8): d[i] and d[i][j] reads and writes
** (one element copied each way, as numba-cuda does), ipairs(d), row views
** d[i] of n-D arrays, d:slice, d:reshape, d:ravel and d:split, and the
** host functions cuda.profile_start/profile_stop.
**
** Views. Every view is C-contiguous (a row, a range of rows, the same
** bytes under another shape), so a view is a device array whose pointer
** is inside another's memory (KDevArray.owner, kept alive by the view's
** user value) and kernels take it like any device array. Its memory is
** never freed through it.
**
** Elements are copied through a one-element host kjit array, so a store
** follows the kjit array store rules (wrap, exact integers, f32 rounding,
** records from tables) and a read gives what the host array would.
*/
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "host/cudadrv.h"
#include "host/record.h"

static const char *tname(lua_State *L, int idx) { return luaL_typename(L, idx); }

/* The integer index at 2 (a float with an integer value too). */
static lua_Integer keyindex(lua_State *L) {
  if (lua_isinteger(L, 2)) return lua_tointeger(L, 2);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    int exact = 0;
    lua_Integer i = lua_tointegerx(L, 2, &exact);   /* floats with an integral value */
    if (exact) return i;
    kb_where_error(L, "index %f is not an integer", lua_tonumber(L, 2));
  }
  luaL_error(L, "a device array cannot be indexed with a %s value (expected an integer "
             "index or a field name)", tname(L, 2));
  return 0;
}

/* d[#d + 1] read by ipairs's iterator (upvalue 2 of the __index closure in
** cudadrv.c): ipairs(d) then ends after #d, as over a kjit array. */
static int from_ipairs(lua_State *L) {
  lua_Debug ar;
  int same;
  if (lua_type(L, lua_upvalueindex(2)) != LUA_TFUNCTION || !lua_getstack(L, 1, &ar)) return 0;
  if (!lua_getinfo(L, "f", &ar)) return 0;
  same = lua_rawequal(L, -1, lua_upvalueindex(2));
  lua_pop(L, 1);
  return same;
}

static int64_t rowsize(const KDevArray *d) {
  int64_t n = 1;
  for (int k = 1; k < d->ndim; k++) n *= d->shape[k];
  return n;
}

/* A one-element host array of d's dtype (records: of its layout). */
static KBuffer *push_scratch(lua_State *L, const KDevArray *d) {
  int64_t one[1] = { 1 };
  if (d->record) return krec_push_new(L, d->record, 1, one);
  return kb_push_new(L, d->dtype, 1, one, 0);
}

int kcu_devarray_index(lua_State *L, KDevArray *d) {
  kcu_check_usable(L, d, 0);
  lua_Integer i = keyindex(L);
  if (i < 1 || i > d->shape[0]) {
    if (i == d->shape[0] + 1 && from_ipairs(L)) { lua_pushnil(L); return 1; }
    return kb_bounds_error(L, i, d->shape[0]);
  }
  size_t es = kcu_elem_size(d);
  if (d->ndim > 1) {
    kcu_push_devview(L, 1, (size_t)(i - 1) * (size_t)rowsize(d) * es, d->ndim - 1, d->shape + 1);
    return 1;
  }
  KBuffer *t = push_scratch(L, d);
  kcu_dev_read(L, d, (size_t)(i - 1) * es, t->data, es);
  if (d->record) { lua_geti(L, -1, 1); return 1; }   /* a copy of the record */
  kb_push_element(L, t, 0);
  return 1;
}

int kcu_devarray_newindex(lua_State *L, KDevArray *d) {
  kcu_check_usable(L, d, 0);
  lua_Integer i = keyindex(L);
  if (d->ndim > 1) {
    /* d[i] = a: the row's elements from a host or device array of its shape */
    if (!kcu_test_devarray(L, 3) && !kb_test(L, 3) && !krec_test_array(L, 3))
      return luaL_error(L, "cannot assign a %s to a row of a %d-D device array: index all "
                        "%d dimensions (d[i][j] = v), or assign an array of the row's shape",
                        tname(L, 3), d->ndim, d->ndim);
    if (i < 1 || i > d->shape[0]) return kb_bounds_error(L, i, d->shape[0]);
    size_t es = kcu_elem_size(d);
    kcu_push_devview(L, 1, (size_t)(i - 1) * (size_t)rowsize(d) * es, d->ndim - 1, d->shape + 1);
    lua_getfield(L, -1, "copy_to_device");
    lua_insert(L, -2);
    lua_pushvalue(L, 3);
    lua_call(L, 2, 0);
    return 0;
  }
  if (i < 1 || i > d->shape[0]) return kb_bounds_error(L, i, d->shape[0]);
  size_t es = kcu_elem_size(d);
  KBuffer *t = push_scratch(L, d);
  if (d->record) {
    lua_pushvalue(L, 3);
    lua_seti(L, -2, 1);   /* the record store rules (a table of fields, a record) */
  } else {
    kb_store_element(L, t, 0, 3);
  }
  kcu_dev_write(L, d, (size_t)(i - 1) * es, t->data, es, NULL);
  return 0;
}

/* The receiver of a view method: views of any device's array (a view
** touches no memory; using it is checked as the array's own). */
static KDevArray *checkself(lua_State *L) {
  KDevArray *d = kcu_test_devarray(L, 1);
  if (d == NULL) luaL_typeerror(L, 1, "device array");
  kcu_check_live(L, d, 0);
  return d;
}

/* d:slice(first [, last]): rows first..last (inclusive, 1-based; last
** defaults to #d; slice(k, k - 1) is empty), a view, as kjit arrays' slice. */
static int d_slice(lua_State *L) {
  KDevArray *d = checkself(L);
  lua_Integer n = d->shape[0];
  lua_Integer first = luaL_checkinteger(L, 2);
  lua_Integer last = luaL_optinteger(L, 3, n);
  if (first < 1 || first > n + 1 || last < first - 1 || last > n)
    return luaL_error(L, "slice(%I, %I) out of bounds for a device array of length %I",
                      first, last, n);
  int64_t shape[KJIT_MAXDIMS];
  memcpy(shape, d->shape, sizeof shape);
  shape[0] = last - first + 1;
  kcu_push_devview(L, 1, (size_t)(first - 1) * (size_t)rowsize(d) * kcu_elem_size(d),
                   d->ndim, shape);
  return 1;
}

/* d:reshape(shape): the same elements under another shape (a view). */
static int d_reshape(lua_State *L) {
  KDevArray *d = checkself(L);
  int64_t shape[KJIT_MAXDIMS];
  int ndim = kb_checkshape(L, 2, shape);
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) n *= shape[k];
  if (n != d->size)
    return luaL_error(L, "cannot reshape a device array of size %I into a shape of size %I",
                      (lua_Integer)d->size, (lua_Integer)n);
  kcu_push_devview(L, 1, 0, ndim, shape);
  return 1;
}

/* d:ravel(): the elements as a 1-D view. */
static int d_ravel(lua_State *L) {
  KDevArray *d = checkself(L);
  int64_t shape[1] = { d->size };
  kcu_push_devview(L, 1, 0, 1, shape);
  return 1;
}

/* d:split(section): a list of views of `section` elements each (the last
** shorter when #d is not a multiple), of a 1-D array, as numba-cuda's. */
static int d_split(lua_State *L) {
  KDevArray *d = checkself(L);
  lua_Integer sec = luaL_checkinteger(L, 2);
  if (d->ndim != 1) return luaL_error(L, "d:split works on 1-D device arrays only (got %d-D)", d->ndim);
  if (sec < 1) return luaL_argerror(L, 2, "a section size of at least 1 expected");
  int64_t n = d->shape[0];
  lua_createtable(L, (int)((n + sec - 1) / sec), 0);
  size_t es = kcu_elem_size(d);
  int k = 1;
  for (int64_t at = 0; at < n; at += sec) {
    int64_t shape[1] = { n - at < sec ? n - at : sec };
    kcu_push_devview(L, 1, (size_t)at * es, 1, shape);
    lua_rawseti(L, -2, k++);
  }
  return 1;
}

const luaL_Reg kcu_devarray_methods[] = {
  {"slice", d_slice}, {"reshape", d_reshape}, {"ravel", d_ravel}, {"split", d_split},
  {NULL, NULL}
};

static int c_profile_start(lua_State *L) { kcu_profile(L, 1); return 0; }
static int c_profile_stop(lua_State *L) { kcu_profile(L, 0); return 0; }

void kcu_open_extra(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"profile_start", c_profile_start}, {"profile_stop", c_profile_stop}, {NULL, NULL}
  };
  luaL_setfuncs(L, fns, 0);
  kcu_open_hostmem(L);
  kcu_open_interop(L);
}
