/*
** kjit.h: the public C API of kjit (Numba for Lua 5.4).
**
** A host program opens kjit in its own lua_State with luaopen_kjit (or
** luaL_requiref(L, "kjit", luaopen_kjit, 0)). Everything exported by the
** library starts with kjit_ or is luaopen_kjit.
*/
#ifndef KJIT_H
#define KJIT_H

#include <stdint.h>
#include <stddef.h>
#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KJIT_API __attribute__((visibility("default")))
#else
#define KJIT_API
#endif

/* Element types of kjit arrays. The order is part of the ABI. */
typedef enum kjit_dtype {
  KJIT_I8, KJIT_U8, KJIT_I16, KJIT_U16, KJIT_I32, KJIT_U32,
  KJIT_I64, KJIT_U64, KJIT_F32, KJIT_F64,
  KJIT_NDTYPES
} kjit_dtype;

#define KJIT_MAXDIMS 4

/* Opens the kjit module: pushes the module table (for luaL_requiref). */
KJIT_API int luaopen_kjit(lua_State *L);

/* Size in bytes of one element of dtype t, or 0 for an invalid dtype. */
KJIT_API size_t kjit_dtype_size(kjit_dtype t);

/* Name of dtype t ("f32", ...), or NULL for an invalid dtype. */
KJIT_API const char *kjit_dtype_name(kjit_dtype t);

#ifdef __cplusplus
}
#endif
#endif
