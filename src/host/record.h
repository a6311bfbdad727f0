/*
** record.h: record dtypes in Lua (host/record.c): kjit.struct, arrays of
** records and record views in the interpreter, and what buffer.c's
** constructors and the C API call for them.
*/
#ifndef KJIT_RECORD_H
#define KJIT_RECORD_H

#include "lua.h"
#include "common/karray.h"
#include "common/krecord.h"

#define KREC_ARRAY_MT  "kjit.records"    /* arrays of records and record views */

/* The layout of the kjit.struct at idx, or NULL. */
const KRecord *krec_test(lua_State *L, int idx);
/* Pushes the (per state, unique) kjit.struct value of r. */
void krec_push_struct(lua_State *L, const KRecord *r);

/* The array of records (or record view, ndim 0) at idx, or NULL; raises
** kb_released_error for released borrowed memory. */
KBuffer *krec_test_array(lua_State *L, int idx);

/* Pushes a view over data, which lies in the memory of the array of
** records at base: of records of layout r (its layout or a nested
** record's; ndim 0: one record), or with r NULL of numbers of dtype (an
** array field). It keeps base alive. */
KBuffer *krec_push_view(lua_State *L, int base, char *data, const KRecord *r, int dtype,
                        int ndim, const int64_t *shape);

/* Pushes a new owned array of records, zero-filled. */
KBuffer *krec_push_new(lua_State *L, const KRecord *r, int ndim, const int64_t *shape);
/* Pushes an array of records over host memory (borrowed: buffer.c's rules). */
KBuffer *krec_push_borrowed(lua_State *L, void *data, const KRecord *r, int ndim,
                            const int64_t *shape, kb_release_fn release, void *ud);

/* buffer.c's constructors hand over when their dtype argument (at dt) is
** a kjit.struct: fn is "zeros", "empty", "full", "array", "arange" or
** "linspace"; returns the constructor's results. */
int krec_construct(lua_State *L, const char *fn, int dt);

/* Adds kjit.struct and kjit.isrecord to the module table on top. */
void krec_open(lua_State *L);

#endif
