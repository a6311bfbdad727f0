/*
** buffer.h: kjit typed buffers (the userdata behind kjit.array objects).
**
** A buffer is always C-contiguous and row-major: element (i1,...,in),
** 1-based, lives at data[((i1-1)*shape[1] + (i2-1))*shape[2] ...]. Views
** (rows a[i] of an n-D buffer, slice, reshape) share memory with their
** base and keep it alive through the userdata's user value. Compiled code
** relies on contiguity: it sees a buffer as (data pointer, shape[0..n-1]).
*/
#ifndef KJIT_BUFFER_H
#define KJIT_BUFFER_H

#include <stdint.h>
#include "lua.h"
#include "kjit.h"

#include "common/karray.h"

/* Raises "array used after its memory was released", located at the
** caller's line. */
int kb_released_error(lua_State *L);

int kb_dtype_isfloat(kjit_dtype t);
int kb_dtype_issigned(kjit_dtype t);
/* Parses a dtype argument (kjit.f32 or a string like "f32"); def if none/nil; Lua error if bad. */
kjit_dtype kb_checkdtype(lua_State *L, int idx, kjit_dtype def);

/* Returns the buffer at idx, or NULL if it is not a kjit array; raises
** kb_released_error for an array whose borrowed memory was released. */
KBuffer *kb_test(lua_State *L, int idx);
/* The same, never raising: the buffer even if released (check
** kb_released before touching its memory). */
KBuffer *kb_test_raw(lua_State *L, int idx);

/* Metatables built completely before they are registered (an allocation
** failure half way must not leave a half-filled one in the registry):
**   if (kb_newmeta(L, name)) { ...fill the table on top...; kb_regmeta(L, name); }
** kb_newmeta pushes the registered table (returns 0) or a new one with
** __name set (returns 1); kb_regmeta registers the table on top. */
int kb_newmeta(lua_State *L, const char *name);
void kb_regmeta(lua_State *L, const char *name);

/* Set (never cleared) once the process has made an f64 or i64 array, the
** dtypes that compiled code indexes through views when they are read from
** tables (codegen/cg_luaview.c emits views only then). */
extern int kb_viewable_made;

/* The tags (KBuffer.tag): kb_tag_key ^ the buffer's address. */
extern uint64_t kb_tag_key;
#define KB_TAG(b) (kb_tag_key ^ (uint64_t)(uintptr_t)(b))

/* The call path's test: the buffer at idx (released or not: check
** kb_released), or NULL. Two API calls: a full userdata (light ones have
** no length) large enough to hold a header, carrying its tag. */
static inline KBuffer *kb_fast(lua_State *L, int idx) {
  KBuffer *b = (KBuffer *)lua_touserdata(L, idx);
  if (b == NULL || lua_rawlen(L, idx) < sizeof(KBuffer) || b->tag != KB_TAG(b)) return NULL;
  return b;
}

/* Returns the buffer at idx, or raises a Lua argument error (or
** kb_released_error). */
KBuffer *kb_check(lua_State *L, int idx);

/* Pushes a new owned buffer, zero-filled if zero != 0. Errors on bad shape. */
KBuffer *kb_push_new(lua_State *L, kjit_dtype t, int ndim,
                     const int64_t *shape, int zero);

/* Pushes a buffer that borrows memory owned by the host; release (if not
** NULL) is called with (ud, data) when Lua collects the last reference. */
KBuffer *kb_push_borrowed(lua_State *L, void *data, kjit_dtype t, int ndim,
                          const int64_t *shape, kb_release_fn release,
                          void *ud);

/* Reads element at flat offset k as a Lua value (integer or float). */
void kb_push_element(lua_State *L, const KBuffer *b, int64_t k);
/* Stores the Lua value at idx into flat offset k with the store rules
** (exact-integer check, C-cast wrap for narrow ints, f32 rounding). */
void kb_store_element(lua_State *L, KBuffer *b, int64_t k, int idx);

/* Registers the buffer functions (zeros, empty, ...) and dtype constants
** into the table at the top of the stack, and creates the metatable. */
void kb_open(lua_State *L);

/* Appended (buffer.c): helpers other stages reuse. */
/* Parses a shape argument (integer or table of 1..4 integers) at idx into
** shape; returns ndim and sets shape[ndim..] to 1. Lua error if bad. */
int kb_checkshape(lua_State *L, int idx, int64_t shape[KJIT_MAXDIMS]);
/* Pushes a view of the buffer at base: same dtype, data inside base's
** memory, the given shape (whose size must fit in base). Keeps base's
** memory alive. */
KBuffer *kb_push_view(lua_State *L, int base, char *data, int ndim,
                      const int64_t *shape);
/* Pushes {shape[0], ..., shape[ndim-1]} (the .shape field of arrays and
** device arrays). */
void kb_push_shape(lua_State *L, int ndim, const int64_t *shape);
/* Raises "index i out of bounds [1, n]", the message compiled code uses too. */
int kb_bounds_error(lua_State *L, int64_t i, int64_t n);
/* An __index closure's upvalue `up` holds kb_push_ipairs_iter's value:
** is ipairs's iterator reading one past the end (then __index gives nil,
** so ipairs(a) ends after #a as over a table)? */
int kb_from_ipairs(lua_State *L, int up);
void kb_push_ipairs_iter(lua_State *L);

/* Raises fmt located at the Lua code doing the access (level 1: the
** caller of the metamethod or constructor), as compiled code reports. */
int kb_where_error(lua_State *L, const char *fmt, ...);

#endif
