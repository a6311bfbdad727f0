/*
** runtime_err.h: the layout of the run-time error records, by name.
**
** Two records carry an error out of compiled code:
**  - KErr (compile.h), filled by CPU and simulated code through a pointer;
**    code generation addresses its fields as an LLVM struct: KErrField.
**  - the device record of a GPU kernel (KT_NVPTX), KJIT_KERR_WORDS i64
**    words of device memory, zero = no error. The first failing thread
**    claims it (compare-and-swap of word KERR_W_CLAIMED from 0 to 1) and
**    fills the rest; kernel.c reads it back into a KErr: KErrWord.
*/
#ifndef KJIT_RUNTIME_ERR_H
#define KJIT_RUNTIME_ERR_H
#include <stddef.h>
#include "common/compile.h"

/* Compiled code polls after about this many back edges or entries (the
** generator charges a countdown; runtime/runtime_poll.c answers). */
#define KRT_POLL_INTERVAL ((int64_t)1 << 16)

/* The fields of KErr the code generators mirror, in its order (the LLVM
** struct codegen builds). KErr's later fields (poll_left, L) are the
** dispatchers' and the run time's: a generator that uses poll_left mirrors
** it too (KERR_F_POLL_LEFT). */
typedef enum KErrField {
  KERR_F_KIND,          /* i32: KErrKind, 0 = no error */
  KERR_F_LINE,          /* i32 */
  KERR_F_A, KERR_F_B, KERR_F_C,   /* i64 operands (C: the error level for error(msg, n)) */
  KERR_F_MSG,           /* i8*: message (NVPTX: its number in the session's msgs) */
  KERR_F_CHUNK,         /* i8*: chunk name */
  KERR_F_STACK_LIMIT,   /* i64: stack limit; kernels: the dynamic shared bytes */
  KERR_F_F,             /* double: float operand */
  KERR_F_COUNT,         /* the mirrored prefix ends here */
  KERR_F_POLL_LEFT = KERR_F_COUNT   /* i64: countdown to kjit_rt_poll */
} KErrField;

/* The field order above is KErr's (a reordering of either fails here). */
_Static_assert(offsetof(KErr, kind) < offsetof(KErr, line) &&
               offsetof(KErr, line) < offsetof(KErr, a) &&
               offsetof(KErr, a) < offsetof(KErr, b) && offsetof(KErr, b) < offsetof(KErr, c) &&
               offsetof(KErr, c) < offsetof(KErr, msg) &&
               offsetof(KErr, msg) < offsetof(KErr, chunk) &&
               offsetof(KErr, chunk) < offsetof(KErr, stack_limit) &&
               offsetof(KErr, stack_limit) < offsetof(KErr, f) &&
               offsetof(KErr, f) + sizeof(double) == offsetof(KErr, poll_left),
               "KErrField must follow struct KErr");

/* Words of the device error record (i64 each). */
typedef enum KErrWord {
  KERR_W_CLAIMED = 0,   /* 1 once a thread failed; 0 = no error */
  KERR_W_KIND,          /* KErrKind */
  KERR_W_LINE,
  KERR_W_A, KERR_W_B, KERR_W_C,
  KERR_W_MSG,           /* message number in the spec's msgs, 1-based; 0 = none */
  KERR_W_FBITS,         /* the float operand's bits */
  KERR_W_TID,           /* threadIdx x, y, z: 3 words */
  KERR_W_BID = KERR_W_TID + 3,    /* blockIdx x, y, z: 3 words */
  KERR_W_END = KERR_W_BID + 3     /* words written */
} KErrWord;

#define KJIT_KERR_WORDS 16   /* room to grow: the record's size in words */
_Static_assert(KERR_W_END <= KJIT_KERR_WORDS, "the device error record is too small");

#endif
