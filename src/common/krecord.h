/*
** krecord.h: record dtypes (kjit.struct), as every stage sees them.
**
** A record layout (KRecord, the public kjit_record of kjit.h) is a C
** struct's layout: named fields, each a numeric dtype, a fixed-length
** array of one, or a nested record (or an array of them), at a byte
** offset, and the struct's size and alignment. Layouts are process-wide,
** immutable and interned (common/krecord.c): two equal layouts (the same
** fields, dtypes, counts, offsets and size) are the same object, so a
** pointer comparison tells layouts apart, and a layout never moves or
** dies (they are few: a program declares a handful). Each has a small id,
** which the typer keeps in Type.ref of a T_BUF whose dtype is KJIT_RECORD
** (krec_byid turns it back into the layout), and a canonical text (key),
** which names the layout in signatures, messages and the disk-cache key.
**
** An array of records is a KBuffer with dtype KJIT_RECORD and record set
** (KBuffer.record); its elements are record->size bytes each. A record
** view (p[i]: one record, in the interpreter and in compiled code) is such
** a KBuffer with ndim 0: a pointer to the record, no extents.
*/
#ifndef KJIT_KRECORD_H
#define KJIT_KRECORD_H

#include <stdint.h>
#include <stddef.h>
#include "kjit.h"

/* One field: a scalar (count 0) or an array of count elements, of dtype
** (a numeric dtype, or KJIT_RECORD with rec the nested layout). */
typedef struct KRecField {
  const char *name;
  int dtype;                       /* kjit_dtype, or KJIT_RECORD */
  const struct kjit_record *rec;   /* KJIT_RECORD: the nested layout */
  int64_t count;                   /* 0: a scalar; n >= 1: n elements */
  int64_t offset;                  /* bytes from the record's start */
} KRecField;

struct kjit_record {
  int32_t id;                      /* Type.ref: krec_byid(id) is this */
  int64_t size, align;             /* sizeof and alignment of the struct */
  const char *key;                 /* canonical text, e.g.
                                      "{x:f32@0,y:f32@4}8" (krecord.c) */
  int nfields;
  KRecField fields[];
};
typedef struct kjit_record KRecord;

/* Size and alignment of one element of field f (a dtype's size, or the
** nested record's). */
int64_t krec_elemsize(const KRecField *f);
int64_t krec_elemalign(const KRecField *f);

/* Interns a layout: fields[0..n) (names copied), size and alignment as
** given. Checks it (names unique and nonempty, dtypes valid, counts >= 0,
** every field inside size and aligned to its element's alignment, no two
** overlapping, size a multiple of align); returns the one process-wide
** object for it, or NULL with a message in err. Thread-safe. */
const KRecord *krec_intern(const KRecField *fields, int n, int64_t size,
                           int64_t align, char *err, size_t errlen);

/* The C layout of fields[0..n) (their offsets ignored): in order, each at
** its natural alignment, the size rounded up to the largest alignment, as
** a C compiler lays out the same struct. Then krec_intern. */
const KRecord *krec_c_layout(const KRecField *fields, int n, char *err,
                             size_t errlen);

/* The layout with this id, or NULL. */
const KRecord *krec_byid(int32_t id);

/* tostring(P)'s text, "struct{x: f32 @0, v: f64[3] @8; size 32}" (malloc'd;
** NULL when out of memory). */
char *krec_text(const KRecord *r);

/* kjit.struct's values (host/record.c): full userdata of this metatable
** holding the layout; the typer reads them as compile-time constants. */
#define KREC_STRUCT_MT "kjit.struct"
typedef struct KRecStructUD { const KRecord *r; } KRecStructUD;

/* The field named name (len bytes), or NULL. */
const KRecField *krec_field(const KRecord *r, const char *name, size_t len);

#endif
