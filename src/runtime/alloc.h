/*
** alloc.h: arrays made by compiled code (kjit.zeros ... inside kjit.jit
** functions and their callees), and the per-call list that owns them.
** See alloc.c for the design.
*/
#ifndef KJIT_RUNTIME_ALLOC_H
#define KJIT_RUNTIME_ALLOC_H

#include <stdint.h>
#include <pthread.h>
#include "common/compile.h"
#include "common/karray.h"

typedef struct KAllocList KAllocList;

/* The dtype of an array of records in the helpers' dtype arguments and a
** block's dtype: KJIT_RECORD in the low byte, the layout's id (krecord.h's
** krec_byid) above it. */
static inline int32_t kal_record_dtype(int32_t layout_id) { return (int32_t)KJIT_RECORD | layout_id << 8; }
static inline int kal_is_record(int32_t dtype) { return (dtype & 0xff) == (int32_t)KJIT_RECORD; }
static inline int32_t kal_record_id(int32_t dtype) { return dtype >> 8; }

/* Compiled code does not hold a layout's dtype as a constant: it reads it
** from the global KAL_LAYOUT_SYM "<id>" (cg_alloc.c), whose address is
** this cell, kal_record_dtype(id), made once per layout and never freed.
** Code exported from one process and loaded in another (host/export.c)
** then gets the cell of the loading process's id for the same layout. */
#define KAL_LAYOUT_SYM "kjit.layout."
const int32_t *kal_record_cell(int32_t layout_id);

/* One allocation: its header sits in front of the elements (the elements
** start KAL_HEADER bytes after it, 64-byte aligned). */
typedef struct KAllocBlock {
  struct KAllocBlock *prev, *next;   /* in its list while the list owns it */
  KAllocList *list;                  /* NULL once adopted (or freed) */
  int64_t bytes;                     /* of the elements */
  int64_t cap;                       /* bytes the block has room for */
  int64_t shape[KJIT_MAXDIMS];
  int32_t dtype, ndim;
  int mark;                          /* the dispatcher's (jit.c): stack index
                                        of the userdata that adopted it */
} KAllocBlock;

#define KAL_HEADER 128   /* >= sizeof(KAllocBlock), a multiple of 64 */

/* The list of one call (jit.c keeps it in a userdata on the Lua stack,
** whose __gc calls kal_free_all: a longjmp out of the call leaks nothing). */
struct KAllocList {
  pthread_mutex_t mutex;  /* prange bodies allocate from several threads */
  KAllocBlock head;       /* circular, head.next is the newest */
  int64_t live_bytes;     /* what the list holds now */
};

void kal_init(KAllocList *l);
/* Frees every block the list still owns, and the mutex. */
void kal_free_all(KAllocList *l);
/* Frees every block the list still owns; the list stays usable. */
void kal_reset(KAllocList *l);
/* The block holding data .. data + bytes, or NULL. */
KAllocBlock *kal_find(KAllocList *l, const char *data, int64_t bytes);
/* Takes b out of its list: the caller owns it (frees it with kal_release). */
void kal_unlink(KAllocBlock *b);
/* Frees an unlinked block, by its elements' address (a kb_release_fn:
** the guard of the userdata that adopted it calls it). */
void kal_release(void *ud, void *data);

/* The list compiled code allocates into, for this thread: set by the
** dispatcher around a call (kal_enter returns the previous one, which
** kal_leave puts back), copied into the threads of a prange job. */
KAllocList *kal_enter(KAllocList *l);
void kal_leave(KAllocList *prev);
KAllocList *kal_current(void);

/* Test hook: KJIT_TEST_ALLOC_FAIL=n makes the n-th allocation of compiled
** code from now on fail as if out of memory (n >= 1; read per process,
** at the first allocation); kjit_rt_alloc_fail_after(n) sets the same
** countdown (kjit._test_alloc_fail, tests only). */
void kjit_rt_alloc_fail_after(long n);

/* Blocks of compiled code alive in the process now, and the most alive
** at once since the last reset (reset: the peak starts again from now). */
void kal_stats(long *live, long *peak, int reset);

/* ---- called by compiled code (registered with the JIT: jit.c) ---- */

/* A new array of dtype and shape (ndim extents d0..d3) in the current
** list: the elements' address, or NULL with err filled (KE_ALLOC: a
** negative extent, more than 2^48 bytes, no memory), located at line of
** chunk. zero: 1 to zero the elements. argn, fname: the shape argument
** and the function, for the interpreter's words. */
char *kjit_rt_alloc(int32_t dtype, int32_t ndim, int64_t d0, int64_t d1, int64_t d2,
                    int64_t d3, int32_t zero, KErr *err, int32_t line, const char *chunk,
                    int32_t argn, const char *fname);
/* kjit_rt_alloc for a scratch site (cg_alloc.c) whose last array is prev
** (NULL: none): prev again when it has room (zeroed if zero), else prev
** freed and a new one. The checks and errors are kjit_rt_alloc's. */
char *kjit_rt_alloc_scratch(char *prev, int32_t dtype, int32_t ndim, int64_t d0, int64_t d1,
                            int64_t d2, int64_t d3, int32_t zero, KErr *err, int32_t line,
                            const char *chunk, int32_t argn, const char *fname);
/* Frees an array kjit_rt_alloc made (NULL: nothing), at once: compiled
** code calls it for a scratch array whose site runs again or whose
** function returns (cg_alloc.c). */
void kjit_rt_free(char *data);
/* kjit.arange: the integer arguments (allint) or the float ones, already
** completed (arange(n) is 0, n, 1); the count in *count. */
char *kjit_rt_arange(int32_t allint, int64_t istart, int64_t istop, int64_t istep,
                     double start, double stop, double step, int32_t dtype, int64_t *count,
                     KErr *err, int32_t line, const char *chunk);
char *kjit_rt_linspace(double a, double z, int64_t n, int32_t dtype, KErr *err, int32_t line,
                       const char *chunk);
/* a:reshape(shape) of an array of size elements: 0, or 1 with err filled. */
int32_t kjit_rt_reshape_check(int64_t size, int32_t dtype, int32_t ndim, int64_t d0, int64_t d1,
                              int64_t d2, int64_t d3, KErr *err, int32_t line, const char *chunk);
/* Fills n elements of es bytes at data with the element at elem. */
void kjit_rt_fill(char *data, int64_t es, int64_t n, const char *elem);

#endif
