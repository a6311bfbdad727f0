/*
** alloc.c: the memory of arrays made by compiled code.
**
** Design (valuemodel.md point 5). kjit.zeros, empty, full, array, arange,
** linspace and a:copy() in compiled code call kjit_rt_alloc, which takes
** one block from malloc (posix_memalign: header, then the elements,
** 64-byte aligned like kjit arrays) and links it into the list of the
** call that runs: a KAllocList the dispatcher (jit.c) keeps in a userdata
** on the Lua stack for every specialization that allocates or returns
** arrays. When the call returns, the dispatcher hands the blocks that are
** returned to userdata that adopt them (a kjit array over the block, whose
** guard frees it: kal_release) and frees the rest; on an error, or a
** longjmp through the compiled frames (an interrupt hook's error), the
** userdata's __gc frees what is left. Nothing is leaked, nothing is freed
** twice: a block is in a list, or adopted, or freed.
**
** Scratch arrays. A site whose array never leaves its iteration or its
** function (no phi, no return, no callee that returns an array takes it:
** cg_alloc.c decides) reuses its previous array when it runs again (or
** frees it for a larger one: kjit_rt_alloc_scratch) and frees it when its
** function returns (kjit_rt_free), so a loop that allocates a scratch
** array per iteration holds one at a time.
**
** Threads. kjit.prange bodies allocate from the pool's threads: the list
** has a mutex, and each thread finds the list of the call it works for in
** a thread-local variable (kal_enter; parallel.c copies it into workers).
**
** Why malloc and not Lua's allocator: compiled code must not call Lua
** (prange workers cannot), and a block must survive a longjmp until the
** list's __gc. The dispatcher tells the GC about adopted bytes (jit.c).
*/
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <stdatomic.h>
#include "common/karray.h"
#include "common/krecord.h"
#include "common/khalf.h"
#include "runtime/alloc.h"

_Static_assert(sizeof(KAllocBlock) <= KAL_HEADER && KAL_HEADER % 64 == 0, "KAL_HEADER");

#define KAL_MAXBYTES ((int64_t)1 << 48)   /* as buffer.c's KB_MAXBYTES */

/* element sizes: karray.h's table (bool included); a record's from its
** layout (alloc.h's kal_record_dtype) */
static int64_t dt_sizes_of(int32_t d) {
  if (kal_is_record(d)) return krec_byid(kal_record_id(d))->size;
  return (int64_t)kb_dtype_bytes(d);
}

static pthread_mutex_t cells_mu = PTHREAD_MUTEX_INITIALIZER;
static int32_t **cells;   /* by layout id */
static int32_t ncells;

const int32_t *kal_record_cell(int32_t id) {
  int32_t *c = NULL;
  if (id < 0) return NULL;
  pthread_mutex_lock(&cells_mu);
  if (id >= ncells) {
    int32_t n = ncells ? ncells : 16;
    while (n <= id) n *= 2;
    int32_t **m = realloc(cells, (size_t)n * sizeof *m);
    if (m) {
      memset(m + ncells, 0, (size_t)(n - ncells) * sizeof *m);
      cells = m;
      ncells = n;
    }
  }
  if (id < ncells) {
    if (cells[id] == NULL && (cells[id] = malloc(sizeof(int32_t))) != NULL)
      *cells[id] = kal_record_dtype(id);
    c = cells[id];
  }
  pthread_mutex_unlock(&cells_mu);
  return c;
}

static __thread KAllocList *current;

/* Blocks alive now and the most alive at once since the last reset, in
** the whole process (kjit._alloc_stats: tests of the scratch rule). */
static atomic_long live_blocks, peak_blocks;

static void count_block(long d) {
  long now = atomic_fetch_add(&live_blocks, d) + d;
  long peak = atomic_load(&peak_blocks);
  while (now > peak && !atomic_compare_exchange_weak(&peak_blocks, &peak, now)) {}
}

void kal_stats(long *live, long *peak, int reset) {
  *live = atomic_load(&live_blocks);
  *peak = atomic_load(&peak_blocks);
  if (reset) atomic_store(&peak_blocks, *live);
}

KAllocList *kal_enter(KAllocList *l) { KAllocList *p = current; current = l; return p; }
void kal_leave(KAllocList *prev) { current = prev; }
KAllocList *kal_current(void) { return current; }

void kal_init(KAllocList *l) {
  pthread_mutex_init(&l->mutex, NULL);
  l->head.next = l->head.prev = &l->head;
  l->head.list = l;
  l->live_bytes = 0;
}

static char *data_of(KAllocBlock *b) { return (char *)b + KAL_HEADER; }
static KAllocBlock *block_of(const char *data) { return (KAllocBlock *)(void *)(data - KAL_HEADER); }

void kal_free_all(KAllocList *l) {
  if (l->head.next == NULL) return;   /* already done */
  KAllocBlock *b = l->head.next;
  while (b != &l->head) {
    KAllocBlock *n = b->next;
    free(b);
    count_block(-1);
    b = n;
  }
  l->head.next = l->head.prev = NULL;
  l->live_bytes = 0;
  pthread_mutex_destroy(&l->mutex);
}

void kal_reset(KAllocList *l) {
  if (l->head.next == NULL) return;
  KAllocBlock *b = l->head.next;
  while (b != &l->head) {
    KAllocBlock *n = b->next;
    free(b);
    count_block(-1);
    b = n;
  }
  l->head.next = l->head.prev = &l->head;
  l->live_bytes = 0;
}

KAllocBlock *kal_find(KAllocList *l, const char *data, int64_t bytes) {
  for (KAllocBlock *b = l->head.next; b && b != &l->head; b = b->next) {
    const char *d = data_of(b);
    if (data >= d && data <= d + b->bytes && bytes <= d + b->bytes - data) return b;
  }
  return NULL;
}

void kal_unlink(KAllocBlock *b) {
  KAllocList *l = b->list;
  if (l == NULL) return;
  pthread_mutex_lock(&l->mutex);
  b->prev->next = b->next;
  b->next->prev = b->prev;
  l->live_bytes -= b->bytes;
  pthread_mutex_unlock(&l->mutex);
  b->list = NULL;
  b->prev = b->next = NULL;
}

void kal_release(void *ud, void *data) {
  (void)data;
  free(ud);
  count_block(-1);
}

/* KJIT_TEST_ALLOC_FAIL (alloc.h): allocations left before the one that
** fails; 0: none fails. -1: not read yet. */
static atomic_long fail_countdown = -1;

void kjit_rt_alloc_fail_after(long n) { atomic_store(&fail_countdown, n); }

static int injected_failure(void) {
  long c = atomic_load(&fail_countdown);
  if (c < 0) {
    const char *e = getenv("KJIT_TEST_ALLOC_FAIL");
    long n = e ? strtol(e, NULL, 10) : 0;
    long expect = -1;
    atomic_compare_exchange_strong(&fail_countdown, &expect, n > 0 ? n : 0);
    c = atomic_load(&fail_countdown);
  }
  while (c > 0) {
    if (atomic_compare_exchange_weak(&fail_countdown, &c, c - 1)) return c == 1;
  }
  return 0;
}

static char *fail(KErr *err, int reason, int64_t a, int32_t argn, int32_t line,
                  const char *chunk, const char *fname) {
  err->kind = KE_ALLOC;
  err->line = line;
  err->chunk = chunk;
  err->a = a;
  err->b = reason;
  err->c = argn;
  err->msg = fname;
  return NULL;
}

/* The checks of kjit_rt_alloc: the elements' bytes, or -1 with err filled. */
static int64_t checked_bytes(int32_t dtype, int32_t ndim, const int64_t *shape, KErr *err,
                             int32_t line, const char *chunk, int32_t argn, const char *fname) {
  int known = kal_is_record(dtype) ? krec_byid(kal_record_id(dtype)) != NULL
                                   : dtype >= 0 && dtype < KJIT_NDTYPES;
  if (!known || ndim < 1 || ndim > KJIT_MAXDIMS) {
    fail(err, KA_NOMEM, 0, argn, line, chunk, fname);
    return -1;
  }
  /* the interpreter's order: every extent's sign (kb_checkshape), then
  ** the size (checksize) */
  for (int k = 0; k < ndim; k++)
    if (shape[k] < 0) { fail(err, KA_NEGDIM, shape[k], argn, line, chunk, fname); return -1; }
  int64_t es = dt_sizes_of(dtype), limit = KAL_MAXBYTES / es, nz = 1;
  int anyzero = 0;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] == 0) { anyzero = 1; continue; }
    if (nz > limit / shape[k]) { fail(err, KA_TOOLARGE, 0, argn, line, chunk, fname); return -1; }
    nz *= shape[k];
  }
  return anyzero ? 0 : nz * es;
}

char *kjit_rt_alloc_scratch(char *prev, int32_t dtype, int32_t ndim, int64_t d0, int64_t d1,
                            int64_t d2, int64_t d3, int32_t zero, KErr *err, int32_t line,
                            const char *chunk, int32_t argn, const char *fname) {
  if (prev != NULL) {
    int64_t shape[KJIT_MAXDIMS] = { d0, d1, d2, d3 };
    int64_t bytes = checked_bytes(dtype, ndim, shape, err, line, chunk, argn, fname);
    if (bytes < 0) return NULL;   /* (prev stays in the list: freed with it) */
    KAllocBlock *b = block_of(prev);
    if (bytes <= b->cap) {   /* the same site again: its last array has room */
      b->dtype = dtype;
      b->ndim = ndim;
      for (int k = 0; k < KJIT_MAXDIMS; k++) b->shape[k] = k < ndim ? shape[k] : 1;
      if (zero) memset(prev, 0, (size_t)bytes);
      return prev;
    }
    kjit_rt_free(prev);
  }
  return kjit_rt_alloc(dtype, ndim, d0, d1, d2, d3, zero, err, line, chunk, argn, fname);
}

char *kjit_rt_alloc(int32_t dtype, int32_t ndim, int64_t d0, int64_t d1, int64_t d2,
                    int64_t d3, int32_t zero, KErr *err, int32_t line, const char *chunk,
                    int32_t argn, const char *fname) {
  int64_t shape[KJIT_MAXDIMS] = { d0, d1, d2, d3 };
  int64_t bytes = checked_bytes(dtype, ndim, shape, err, line, chunk, argn, fname);
  if (bytes < 0) return NULL;
  KAllocList *l = current;
  void *p = NULL;
  /* at least one cache line of elements: every array has its own address */
  int64_t cap = bytes > 64 ? bytes : 64;
  if (l == NULL || injected_failure() ||
      posix_memalign(&p, 64, (size_t)KAL_HEADER + (size_t)cap) != 0)
    return fail(err, KA_NOMEM, bytes, argn, line, chunk, fname);
  KAllocBlock *b = p;
  count_block(1);
  b->list = l;
  b->bytes = bytes;
  b->cap = cap;
  for (int k = 0; k < KJIT_MAXDIMS; k++) b->shape[k] = k < ndim ? shape[k] : 1;
  b->dtype = dtype;
  b->ndim = ndim;
  b->mark = 0;
  if (zero) memset(data_of(b), 0, (size_t)bytes);
  pthread_mutex_lock(&l->mutex);
  b->next = l->head.next;
  b->prev = &l->head;
  l->head.next->prev = b;
  l->head.next = b;
  l->live_bytes += bytes;
  pthread_mutex_unlock(&l->mutex);
  return data_of(b);
}

void kjit_rt_free(char *data) {
  if (data == NULL) return;
  KAllocBlock *b = block_of(data);
  if (b->list == NULL) return;   /* (never: an adopted block is not scratch) */
  kal_unlink(b);
  free(b);
  count_block(-1);
}

void kjit_rt_fill(char *data, int64_t es, int64_t n, const char *elem) {
  size_t total = (size_t)(n * es), done;
  if (total == 0) return;
  memcpy(data, elem, (size_t)es);
  for (done = (size_t)es; done < total; done *= 2)
    memcpy(data + done, data, done < total - done ? done : total - done);
}

/* ---- kjit.arange and kjit.linspace (buffer.c's b_arange, b_linspace) ---- */

/* Stores integer i at p: a C cast's wrap for integers, int->float. */
static void store_int(int32_t t, void *p, int64_t i) {
  switch (t) {
#define X_SETI(E, n, ct, isf, iss) \
    case E: if (isf) *(ct *)p = (ct)i; else { uint64_t u = (uint64_t)i; memcpy(p, &u, sizeof(ct)); } break;
    KJIT_DTYPES(X_SETI)
#undef X_SETI
    case KJIT_F16: { uint16_t h = kh_from_double((double)i); memcpy(p, &h, 2); break; }
    default: break;
  }
}

/* Stores float d at p; an integer type needs an exact integer value:
** returns 0 when it has none. (little-endian: the low bytes first) */
static int store_num(int32_t t, void *p, double d) {
  if (t == KJIT_F64) { *(double *)p = d; return 1; }
  if (t == KJIT_F32) { *(float *)p = (float)d; return 1; }
  if (t == KJIT_F16) { uint16_t h = kh_from_double(d); memcpy(p, &h, 2); return 1; }
  if (!(d >= -0x1p63 && d < 0x1p63) || (double)(int64_t)d != d) return 0;
  store_int(t, p, (int64_t)d);
  return 1;
}

char *kjit_rt_arange(int32_t allint, int64_t istart, int64_t istop, int64_t istep,
                     double start, double stop, double step, int32_t dtype, int64_t *count,
                     KErr *err, int32_t line, const char *chunk) {
  int64_t n;
  if (allint ? istep == 0 : step == 0)
    return fail(err, KA_STEP0, 0, 3, line, chunk, "arange");
  if (allint) {
    if (istep > 0 ? istart >= istop : istart <= istop) {
      n = 0;
    } else {   /* unsigned span: exact even for mininteger..maxinteger */
      uint64_t span = istep > 0 ? (uint64_t)istop - (uint64_t)istart
                                : (uint64_t)istart - (uint64_t)istop;
      uint64_t ustep = istep > 0 ? (uint64_t)istep : 0 - (uint64_t)istep;
      span = (span - 1) / ustep + 1;
      if (span > (uint64_t)KAL_MAXBYTES) return fail(err, KA_TOOLARGE, 0, 1, line, chunk, "arange");
      n = (int64_t)span;
    }
  } else {
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
      return fail(err, KA_NOTFINITE, 0, 1, line, chunk, "arange");
    double len = ceil((stop - start) / step);
    if (!(len > 0)) len = 0;
    if (len > (double)KAL_MAXBYTES) return fail(err, KA_TOOLARGE, 0, 1, line, chunk, "arange");
    n = (int64_t)len;
  }
  char *d = kjit_rt_alloc(dtype, 1, n, 1, 1, 1, 0, err, line, chunk, 1, "arange");
  if (d == NULL) return NULL;
  int64_t es = dt_sizes_of(dtype);
  for (int64_t j = 0; j < n; j++) {
    if (allint) store_int(dtype, d + j * es, (int64_t)((uint64_t)istart + (uint64_t)j * (uint64_t)istep));
    else if (!store_num(dtype, d + j * es, start + (double)j * step)) {
      err->kind = KE_STORENOINT;
      err->line = line;
      err->chunk = chunk;
      return NULL;   /* (the array stays in the list: freed with it) */
    }
  }
  *count = n;
  return d;
}

char *kjit_rt_linspace(double a, double z, int64_t n, int32_t dtype, KErr *err, int32_t line,
                       const char *chunk) {
  if (n < 0) return fail(err, KA_NEGPOINTS, n, 3, line, chunk, "linspace");
  char *d = kjit_rt_alloc(dtype, 1, n, 1, 1, 1, 0, err, line, chunk, 3, "linspace");
  if (d == NULL || n == 0) return d;
  int64_t es = dt_sizes_of(dtype);
  double step = n > 1 ? (z - a) / (double)(n - 1) : 0;
  for (int64_t j = 0; j < n; j++) {
    double v;
    if (j == n - 1 && n > 1) v = z;
    else if (isfinite(step)) v = a + (double)j * step;
    else {   /* z - a overflowed: interpolate without the difference */
      double s = (double)j / (double)(n - 1);
      v = a * (1 - s) + z * s;
    }
    if (!store_num(dtype, d + j * es, v)) {
      err->kind = KE_STORENOINT;
      err->line = line;
      err->chunk = chunk;
      return NULL;
    }
  }
  return d;
}

int32_t kjit_rt_reshape_check(int64_t size, int32_t dtype, int32_t ndim, int64_t d0, int64_t d1,
                              int64_t d2, int64_t d3, KErr *err, int32_t line, const char *chunk) {
  int64_t shape[KJIT_MAXDIMS] = { d0, d1, d2, d3 }, nz = 1, limit = KAL_MAXBYTES / dt_sizes_of(dtype);
  int anyzero = 0;
  for (int k = 0; k < ndim; k++)
    if (shape[k] < 0) { fail(err, KA_NEGDIM, shape[k], 1, line, chunk, "reshape"); return 1; }
  for (int k = 0; k < ndim; k++) {
    if (shape[k] == 0) { anyzero = 1; continue; }
    if (nz > limit / shape[k]) { fail(err, KA_TOOLARGE, 0, 1, line, chunk, "reshape"); return 1; }
    nz *= shape[k];
  }
  if (anyzero) nz = 0;
  if (nz != size) {
    err->kind = KE_RESHAPE;
    err->line = line;
    err->chunk = chunk;
    err->a = size;
    err->b = nz;
    return 1;
  }
  return 0;
}
