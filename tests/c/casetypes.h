/*
** casetypes.h: the argument types of a test case's "-- args:" line
** ("i64", "f64", "f32", "boolean", "nil", "f64[:]", "u8[:,:]" ...), for
** test_irtype.c and test_irfacts.c.
*/
#ifndef KJIT_CASETYPES_H
#define KJIT_CASETYPES_H
#include <string.h>
#include "kjit.h"
#include "common/compile.h"

/* Reads the type named by s[0..n) into *t; 0 if it names none. */
static int parse_type(const char *s, size_t n, Type *t) {
  memset(t, 0, sizeof *t);
  static const struct { const char *name; int kind; } scalars[] = {
    { "i64", T_INT }, { "f64", T_F64 }, { "f32", T_F32 }, { "boolean", T_BOOL },
    { "nil", T_NIL }
  };
  const char *br = memchr(s, '[', n);
  if (br == NULL) {
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
      if (strlen(scalars[i].name) == n && memcmp(scalars[i].name, s, n) == 0) {
        t->kind = (uint8_t)scalars[i].kind;
        return 1;
      }
    return 0;
  }
  for (int d = 0; d < KJIT_NDTYPES; d++) {
    const char *dn = kjit_dtype_name((kjit_dtype)d);
    if (strlen(dn) == (size_t)(br - s) && memcmp(dn, s, (size_t)(br - s)) == 0) {
      t->kind = T_BUF;
      t->dtype = (uint8_t)d;
      t->ndim = 1;
      for (const char *p = br; p < s + n; p++) t->ndim += *p == ',';
      return 1;
    }
  }
  return 0;
}

#endif
