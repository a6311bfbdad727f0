/*
** karray.h: what every stage knows of a kjit array: the dtype table, the
** metatable's name, and the in-memory layout (KBuffer) that compiled code
** reads (data pointer, shape). host/buffer.c implements the kjit.array
** objects over it; the typer and the code generator need only this.
**
** A buffer is always C-contiguous and row-major: element (i1,...,in),
** 1-based, lives at data[((i1-1)*shape[1] + (i2-1))*shape[2] ...].
*/
#ifndef KJIT_KARRAY_H
#define KJIT_KARRAY_H

#include <stdint.h>
#include "kjit.h"

/* The dtype table, written once: X(ENUM, name, ctype, is_float, is_signed) */
#define KJIT_DTYPES(X) \
  X(KJIT_I8,  "i8",  int8_t,   0, 1) \
  X(KJIT_U8,  "u8",  uint8_t,  0, 0) \
  X(KJIT_I16, "i16", int16_t,  0, 1) \
  X(KJIT_U16, "u16", uint16_t, 0, 0) \
  X(KJIT_I32, "i32", int32_t,  0, 1) \
  X(KJIT_U32, "u32", uint32_t, 0, 0) \
  X(KJIT_I64, "i64", int64_t,  0, 1) \
  X(KJIT_U64, "u64", uint64_t, 0, 0) \
  X(KJIT_F32, "f32", float,    1, 1) \
  X(KJIT_F64, "f64", double,   1, 1)

/* The dtypes that are not numbers, same columns: bool is one byte (0 or
** 1; any nonzero byte reads as true), its elements are Lua booleans and
** take only booleans. Kept out of KJIT_DTYPES because the users of that
** list convert numbers (buffer.c's setint/getval, ...); the tables of
** names and sizes are generated from KJIT_ALLDTYPES. */
#define KJIT_DTYPES_NONNUM(X) \
  X(KJIT_BOOL, "bool", uint8_t, 0, 0)

/* f16 (IEEE binary16): a number, but C has no portable type for it, so
** it is kept out of KJIT_DTYPES too: its storage is the 16 bits, and
** every conversion goes through common/khalf.h. Last, as in kjit.h (the
** enum's values are ABI). */
#define KJIT_DTYPES_HALF(X) \
  X(KJIT_F16, "f16", uint16_t, 1, 1)

#define KJIT_ALLDTYPES(X) KJIT_DTYPES(X) KJIT_DTYPES_NONNUM(X) KJIT_DTYPES_HALF(X)

/* Size in bytes of one element of dtype d, from the table above (0 for
** anything else: a record's size is its layout's, krecord.h). */
static inline int kb_dtype_bytes(int d) {
  switch (d) {
#define KB_DTYPE_BYTES(E, n, ct, isf, iss) case E: return (int)sizeof(ct);
  KJIT_ALLDTYPES(KB_DTYPE_BYTES)
#undef KB_DTYPE_BYTES
  default: return 0;
  }
}

/* The error of a store of anything but a boolean into a bool array (%s:
** the value's Lua type name), in the interpreter (buffer.c) and in
** compiled code (cg_array.c), at the store's line. */
#define KB_BOOL_EXPECTED "boolean expected, got %s"

#define KB_METATABLE "kjit.array"

/* The hint after "index 0 out of bounds [1, n]": the same text from Lua
** (buffer.c) and from compiled code (runtime.c), so both agree. */
#define KJIT_HINT_1BASED " (kjit arrays are 1-based: the first element is a[1])"
/* The hint after "attempt to perform arithmetic on a kjit.array value",
** from buffer.c's arithmetic metamethods and from compiled code alike. */
#define KJIT_HINT_ARRAY_ARITH " (kjit arrays have no arithmetic operators: write the loop " \
  "in a kjit.jit function, or make an element-wise function with kjit.vectorize)"

typedef void (*kb_release_fn)(void *ud, void *data);

typedef struct KBuffer {
  char *data;                    /* first element (64-byte aligned if owned) */
  int64_t shape[KJIT_MAXDIMS];   /* extents; shape[k] for k >= ndim is 1 */
  int64_t size;                  /* product of shape[0..ndim-1] */
  int ndim;                      /* 1..4 */
  kjit_dtype dtype;
  kb_release_fn release;         /* borrowed memory: called once from __gc */
  void *release_ud;
  /* Borrowed memory (a buffer over host memory, and every view of one):
  ** the guard's flag, set once the host's release function has run. Only
  ** a resurrected buffer (kept alive by another object's __gc) can see it
  ** set; every access checks it (kb_released) and raises instead of
  ** touching memory the host may have reused. NULL for memory Lua owns,
  ** which cannot be freed while a buffer or view refers to it. The flag
  ** lives in the guard, the buffer's user value, so it outlives the
  ** buffer. After the fields compiled code reads (data, shape). */
  const int *released;
  /* kb_tag_key ^ the buffer's own address (buffer.c): lets the call path
  ** recognise a kjit array with two Lua API calls instead of a metatable
  ** comparison (host/buffer.h, kb_fast). */
  uint64_t tag;
  /* dtype KJIT_RECORD: the records' layout (common/krecord.h; elements are
  ** record->size bytes); NULL for every other dtype. */
  const struct kjit_record *record;
} KBuffer;

/* 1 if b's borrowed memory has been handed back to the host. */
#define kb_released(b) ((b)->released != NULL && *(b)->released)
#endif
