/*
** mock_libnccl.c: a fake NCCL over the mock driver's memory (host memory:
** tests/c/mock_libcuda.c), for kjit.mpi's tests. Built as libmocknccl.so;
** tests/mpi/test_nccl_mock.lua runs under mpirun with KJIT_NCCL=<path> and
** KJIT_LIBCUDA=<libmockcuda.so>, so src/mpi/lmpi_nccl.c runs without a GPU.
**
** The ranks are separate processes, so the mock needs a transport of its
** own, as NCCL has (MPI only carries the unique id): files. The unique id
** names a fresh directory (under MOCK_NCCL_DIR, else /tmp); in its k-th
** collective a rank writes its send buffer to <dir>/<k>.<rank> (written
** aside, then renamed: never seen half-written), waits for the files of
** every rank of step k, and computes the result from them in rank order
** (sum, prod, max, min on each NCCL dtype; broadcast, all-gather and
** reduce-scatter by their definitions). A rank deletes its file of step k
** at step k + 2 (by then every rank has read it). A wait longer than
** MOCK_NCCL_TIMEOUT seconds (default 60) fails with ncclSystemError: a
** test never hangs on a rank that did not come.
**
** Stricter than NCCL where that catches bugs: every call checks that the
** context current on the calling thread is the communicator's device's,
** that the stream is the default one or a live stream of that device, and
** that every buffer lies inside one live allocation of that device
** (through the mock driver's mock_cuda_* functions).
**
** Environment:
**   MOCK_NCCL_LOG=prefix   one line per call, in <prefix>.<world rank>
**                          (OMPI_COMM_WORLD_RANK / PMI_RANK, else the pid)
**   MOCK_NCCL_FAIL=a,b     entry points that fail (ncclInternalError)
**   MOCK_NCCL_FAIL_COUNT=k collectives of k elements fail (ncclInternalError)
**   MOCK_NCCL_DIR, MOCK_NCCL_TIMEOUT  as above
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

typedef int nres;
enum { OK = 0, UNHANDLED_CUDA = 1, SYSTEM_ERROR = 2, INTERNAL_ERROR = 3, INVALID_ARGUMENT = 4,
       INVALID_USAGE = 5 };
enum { T_I8, T_U8, T_I32, T_U32, T_I64, T_U64, T_F16, T_F32, T_F64 };
enum { O_SUM, O_PROD, O_MAX, O_MIN };
#define MAGIC 0x4e43434cU
#define ID_MAGIC "MOCKNCCL"

typedef struct { char internal[128]; } Id;
typedef struct Comm {
  unsigned magic;
  int n, rank, dev;
  long step;
  char dir[100];
} Comm;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static FILE *log_file;
static const char *failspec;
static int (*cur_dev)(void);
static int (*valid_range)(uint64_t, size_t);
static int (*stream_ok)(void *);

static void setup(void) {
  const char *e = getenv("MOCK_NCCL_LOG");
  failspec = getenv("MOCK_NCCL_FAIL");
  if (e && *e) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (r == NULL) r = getenv("PMI_RANK");
    char path[1024];
    if (r) snprintf(path, sizeof path, "%s.%s", e, r);
    else snprintf(path, sizeof path, "%s.%ld", e, (long)getpid());
    log_file = fopen(path, "w");
  }
}

/* The mock driver kjit loaded (KJIT_LIBCUDA), once it is in the process
** (NCCL may be loaded before the driver is). */
static int driver(void) {
  if (cur_dev && valid_range && stream_ok) return 1;
  const char *e = getenv("KJIT_LIBCUDA");
  void *drv = e && *e ? dlopen(e, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (drv) {
    *(void **)&cur_dev = dlsym(drv, "mock_cuda_current_device");
    *(void **)&valid_range = dlsym(drv, "mock_cuda_valid_range");
    *(void **)&stream_ok = dlsym(drv, "mock_cuda_stream_ok");
  }
  return cur_dev && valid_range && stream_ok;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  va_list ap;
  if (!log_file) return;
  va_start(ap, fmt);
  vfprintf(log_file, fmt, ap);
  va_end(ap);
  fputc('\n', log_file);
  fflush(log_file);
}

static int injected(const char *name) {
  size_t n = strlen(name);
  for (const char *p = failspec; p && *p;) {
    const char *end = p + strcspn(p, ",");
    if ((size_t)(end - p) == n && strncmp(p, name, n) == 0) return 1;
    p = *end ? end + 1 : end;
  }
  return 0;
}

#define ENTER(name) \
  do { pthread_once(&once, setup); \
       if (injected(name)) { logf_("%s injected failure", name); return INTERNAL_ERROR; } } while (0)

static size_t tsize(int t) {
  switch (t) {
  case T_I8: case T_U8: return 1;
  case T_F16: return 2;
  case T_I32: case T_U32: case T_F32: return 4;
  case T_I64: case T_U64: case T_F64: return 8;
  default: return 0;
  }
}

/* The checks of every collective: handle, context, stream, buffers. */
static nres check(const char *name, Comm *c, const void *sb, size_t sn, const void *rb, size_t rn,
                  void *stream) {
  if (c == NULL || c->magic != MAGIC) { logf_("%s bad communicator", name); return INVALID_ARGUMENT; }
  if (!driver()) { logf_("%s no mock driver", name); return UNHANDLED_CUDA; }
  if (cur_dev() != c->dev) {
    logf_("%s bad context: current device %d, communicator's %d", name, cur_dev(), c->dev);
    return INVALID_USAGE;
  }
  if (!stream_ok(stream)) { logf_("%s bad stream", name); return INVALID_ARGUMENT; }
  if ((sb && !valid_range((uint64_t)(uintptr_t)sb, sn)) ||
      (rb && !valid_range((uint64_t)(uintptr_t)rb, rn))) {
    logf_("%s bad buffer range", name);
    return INVALID_ARGUMENT;
  }
  return OK;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One step: publishes n bytes at p, returns every rank's bytes (malloc'd,
** rank after rank, n each), or NULL (timeout, I/O). */
static char *exchange(Comm *c, const void *p, size_t n) {
  char tmp[200], fin[200];
  long k = ++c->step;
  snprintf(tmp, sizeof tmp, "%s/%ld.%d.tmp", c->dir, k, c->rank);
  snprintf(fin, sizeof fin, "%s/%ld.%d", c->dir, k, c->rank);
  FILE *f = fopen(tmp, "wb");
  if (!f || (n && fwrite(p, 1, n, f) != n)) { if (f) fclose(f); return NULL; }
  fclose(f);
  if (rename(tmp, fin) != 0) return NULL;
  char *all = malloc(n * (size_t)c->n + 1);
  if (!all) return NULL;
  const char *e = getenv("MOCK_NCCL_TIMEOUT");
  double limit = e && *e ? atof(e) : 60, t0 = now_s();
  for (int r = 0; r < c->n; r++) {
    char name[200];
    snprintf(name, sizeof name, "%s/%ld.%d", c->dir, k, r);
    for (;;) {
      FILE *g = fopen(name, "rb");
      if (g) {
        size_t got = n ? fread(all + (size_t)r * n, 1, n, g) : 0;
        fclose(g);
        if (got != n) { free(all); return NULL; }
        break;
      }
      if (now_s() - t0 > limit) { free(all); return NULL; }
      struct timespec ts = { 0, 1000000 };
      nanosleep(&ts, NULL);
    }
  }
  /* every rank wrote step k, so every rank has read step k - 1: my file of
  ** that step can go */
  if (k > 1) {
    snprintf(fin, sizeof fin, "%s/%ld.%d", c->dir, k - 1, c->rank);
    unlink(fin);
  }
  return all;
}

/* dst[i] = dst[i] op src[i], count elements of type t */
static void combine(void *dst, const void *src, size_t count, int t, int op) {
#define LOOP(T) do { T *d = dst; const T *s = src; \
    for (size_t i = 0; i < count; i++) { \
      switch (op) { \
      case O_SUM: d[i] = (T)(d[i] + s[i]); break; \
      case O_PROD: d[i] = (T)(d[i] * s[i]); break; \
      case O_MAX: if (s[i] > d[i]) d[i] = s[i]; break; \
      default: if (s[i] < d[i]) d[i] = s[i]; break; \
      } } } while (0)
  switch (t) {
  case T_I8: LOOP(int8_t); break;
  case T_U8: LOOP(uint8_t); break;
  case T_I32: LOOP(int32_t); break;
  case T_U32: LOOP(uint32_t); break;
  case T_I64: LOOP(int64_t); break;
  case T_U64: LOOP(uint64_t); break;
  case T_F32: LOOP(float); break;
  case T_F64: LOOP(double); break;
  }
#undef LOOP
}

/* The reduction of the n blocks of all (each count elements) into out. */
static void reduce_all(void *out, const char *all, int n, size_t count, int t, int op) {
  size_t bytes = count * tsize(t);
  memmove(out, all, bytes);
  for (int r = 1; r < n; r++) combine(out, all + (size_t)r * bytes, count, t, op);
}

static int type_ok(int t) { return t >= 0 && t <= T_F64 && t != T_F16; }
static int op_ok(int op) { return op >= 0 && op <= O_MIN; }

static const char *sname(void *stream) { return stream ? "stream" : "default"; }

/* ------------------------------------------------------------------ */

API nres ncclGetVersion(int *v) {
  pthread_once(&once, setup);
  *v = 22800;   /* 2.28.0 */
  return OK;
}

API const char *ncclGetErrorString(nres r) {
  switch (r) {
  case OK: return "no error";
  case UNHANDLED_CUDA: return "unhandled cuda error (mock)";
  case SYSTEM_ERROR: return "unhandled system error (mock: a rank did not come)";
  case INTERNAL_ERROR: return "internal error (mock: injected)";
  case INVALID_ARGUMENT: return "invalid argument (mock)";
  case INVALID_USAGE: return "invalid usage (mock)";
  default: return "unknown result code (mock)";
  }
}

API nres ncclGetUniqueId(Id *id) {
  ENTER("ncclGetUniqueId");
  const char *base = getenv("MOCK_NCCL_DIR");
  char dir[100];
  snprintf(dir, sizeof dir, "%s/mocknccl.XXXXXX", base && *base ? base : "/tmp");
  if (mkdtemp(dir) == NULL) { logf_("ncclGetUniqueId mkdtemp: %s", strerror(errno)); return SYSTEM_ERROR; }
  memset(id, 0, sizeof *id);
  memcpy(id->internal, ID_MAGIC, 8);
  snprintf(id->internal + 8, sizeof id->internal - 8, "%s", dir);
  logf_("ncclGetUniqueId");
  return OK;
}

API nres ncclCommInitRank(Comm **out, int n, Id id, int rank) {
  ENTER("ncclCommInitRank");
  if (memcmp(id.internal, ID_MAGIC, 8) != 0 || n < 1 || rank < 0 || rank >= n) {
    logf_("ncclCommInitRank bad arguments");
    return INVALID_ARGUMENT;
  }
  if (!driver() || cur_dev() < 0) { logf_("ncclCommInitRank no current context"); return UNHANDLED_CUDA; }
  Comm *c = calloc(1, sizeof *c);
  if (!c) return SYSTEM_ERROR;
  c->magic = MAGIC;
  c->n = n;
  c->rank = rank;
  c->dev = cur_dev();
  snprintf(c->dir, sizeof c->dir, "%.99s", id.internal + 8);
  *out = c;
  logf_("ncclCommInitRank nranks=%d rank=%d dev=%d", n, rank, c->dev);
  return OK;
}

static nres destroy(const char *name, Comm *c) {
  if (c == NULL || c->magic != MAGIC) { logf_("%s bad communicator", name); return INVALID_ARGUMENT; }
  logf_("%s rank=%d steps=%ld", name, c->rank, c->step);
  c->magic = 0;
  free(c);
  return OK;
}

API nres ncclCommDestroy(Comm *c) { ENTER("ncclCommDestroy"); return destroy("ncclCommDestroy", c); }
API nres ncclCommAbort(Comm *c) { ENTER("ncclCommAbort"); return destroy("ncclCommAbort", c); }

/* MOCK_NCCL_FAIL_COUNT: a collective of that many elements fails */
static int fails_count(size_t count) {
  const char *e = getenv("MOCK_NCCL_FAIL_COUNT");
  return e && *e && strtoull(e, NULL, 10) == count;
}

API nres ncclAllReduce(const void *sb, void *rb, size_t count, int t, int op, Comm *c, void *stream) {
  ENTER("ncclAllReduce");
  if (fails_count(count)) { logf_("ncclAllReduce injected failure (count)"); return INTERNAL_ERROR; }
  if (!type_ok(t) || !op_ok(op)) return INVALID_ARGUMENT;
  size_t bytes = count * tsize(t);
  nres r = check("ncclAllReduce", c, sb, bytes, rb, bytes, stream);
  if (r) return r;
  char *all = exchange(c, sb, bytes);
  if (!all) { logf_("ncclAllReduce exchange failed"); return SYSTEM_ERROR; }
  reduce_all(rb, all, c->n, count, t, op);
  free(all);
  logf_("ncclAllReduce count=%zu type=%d op=%d inplace=%d stream=%s dev=%d", count, t, op,
        sb == rb, sname(stream), c->dev);
  return OK;
}

API nres ncclReduce(const void *sb, void *rb, size_t count, int t, int op, int root, Comm *c,
                    void *stream) {
  ENTER("ncclReduce");
  if (!type_ok(t) || !op_ok(op)) return INVALID_ARGUMENT;
  size_t bytes = count * tsize(t);
  if (c && c->magic == MAGIC && (root < 0 || root >= c->n)) return INVALID_ARGUMENT;
  nres r = check("ncclReduce", c, sb, bytes, c && c->rank == root ? rb : NULL, bytes, stream);
  if (r) return r;
  char *all = exchange(c, sb, bytes);
  if (!all) { logf_("ncclReduce exchange failed"); return SYSTEM_ERROR; }
  if (c->rank == root) reduce_all(rb, all, c->n, count, t, op);
  free(all);
  logf_("ncclReduce count=%zu type=%d op=%d root=%d stream=%s", count, t, op, root, sname(stream));
  return OK;
}

API nres ncclBroadcast(const void *sb, void *rb, size_t count, int t, int root, Comm *c,
                       void *stream) {
  ENTER("ncclBroadcast");
  if (!type_ok(t)) return INVALID_ARGUMENT;
  size_t bytes = count * tsize(t);
  if (c && c->magic == MAGIC && (root < 0 || root >= c->n)) return INVALID_ARGUMENT;
  nres r = check("ncclBroadcast", c, c && c->rank == root ? sb : NULL, bytes, rb, bytes, stream);
  if (r) return r;
  /* every rank publishes as many bytes (the others' are not used) */
  char *all = exchange(c, c->rank == root ? sb : rb, bytes);
  if (!all) { logf_("ncclBroadcast exchange failed"); return SYSTEM_ERROR; }
  memmove(rb, all + (size_t)root * bytes, bytes);
  free(all);
  logf_("ncclBroadcast count=%zu type=%d root=%d stream=%s", count, t, root, sname(stream));
  return OK;
}

API nres ncclAllGather(const void *sb, void *rb, size_t count, int t, Comm *c, void *stream) {
  ENTER("ncclAllGather");
  if (!type_ok(t)) return INVALID_ARGUMENT;
  size_t bytes = count * tsize(t);
  nres r = check("ncclAllGather", c, sb, bytes, rb, bytes * (size_t)(c && c->magic == MAGIC ? c->n : 1),
                 stream);
  if (r) return r;
  char *all = exchange(c, sb, bytes);
  if (!all) { logf_("ncclAllGather exchange failed"); return SYSTEM_ERROR; }
  memcpy(rb, all, bytes * (size_t)c->n);
  free(all);
  logf_("ncclAllGather count=%zu type=%d stream=%s", count, t, sname(stream));
  return OK;
}

API nres ncclReduceScatter(const void *sb, void *rb, size_t count, int t, int op, Comm *c,
                           void *stream) {
  ENTER("ncclReduceScatter");
  if (!type_ok(t) || !op_ok(op)) return INVALID_ARGUMENT;
  size_t bytes = count * tsize(t);
  nres r = check("ncclReduceScatter", c, sb, bytes * (size_t)(c && c->magic == MAGIC ? c->n : 1),
                 rb, bytes, stream);
  if (r) return r;
  size_t total = bytes * (size_t)c->n;
  char *all = exchange(c, sb, total);
  if (!all) { logf_("ncclReduceScatter exchange failed"); return SYSTEM_ERROR; }
  /* rank i gets the reduction of block i of every rank's buffer */
  char *mine = malloc(bytes * (size_t)c->n + 1);
  if (!mine) { free(all); return SYSTEM_ERROR; }
  for (int q = 0; q < c->n; q++)
    memcpy(mine + (size_t)q * bytes, all + (size_t)q * total + (size_t)c->rank * bytes, bytes);
  reduce_all(rb, mine, c->n, count, t, op);
  free(mine);
  free(all);
  logf_("ncclReduceScatter count=%zu type=%d op=%d stream=%s", count, t, op, sname(stream));
  return OK;
}
