/*
** lmpi_nccl.c: NCCL collectives on device arrays (allreduce, reduce, bcast,
** allgather, reduce_scatter), when libnccl loads.
**
** Design decisions:
** - Automatic, not a separate API: the collectives of kjit.mpi take device
**   arrays already; when NCCL is on, those of the CUDA driver go through
**   NCCL (GPU to GPU, no host staging), else through MPI as before (staged
**   through page-locked host memory, or passed directly to a CUDA-aware
**   MPI). mpi.nccl() says which and why; mpi.nccl(false) switches it off
**   (collective: every rank calls it).
** - Loaded with dlopen through kjit's one library search (src/libs/
**   libfind.c: KJIT_NCCL, the loader path, CUDA_HOME and /usr/local/cuda,
**   pip's nvidia/nccl). KJIT_NCCL=0 (or off/no/false) switches it off.
**   No nccl.h is needed to build: the few entry points are declared here
**   (NCCL's ABI is stable across 2.x).
** - On only where it can work, decided once at require, over COMM_WORLD:
**   libnccl loaded and kjit's device arrays are the driver's (not the
**   simulator) on every rank; otherwise off on every rank, so that the
**   ranks never disagree about it.
** - Per call, the ranks agree first (one small MPI_Allreduce): NCCL only
**   when every rank passes driver device arrays of a dtype NCCL has
**   (it lacks 16-bit integers); otherwise every rank takes the MPI path.
**   A collective where some ranks pass host arrays and others device
**   arrays therefore still works, never hangs.
** - One NCCL communicator per MPI communicator, made at its first NCCL
**   collective (rank 0's ncclGetUniqueId broadcast over MPI, then
**   ncclCommInitRank on every rank), for the device current then; it is
**   made again (collectively) when some rank has changed devices. If any
**   rank fails to make it, every rank falls back to MPI for that
**   communicator, and mpi.nccl() says why. Freed with the communicator
**   (comm:free, its collection), by mpi.finalize, and (ncclCommAbort,
**   which waits for no peer) when the Lua state closes.
** - Streams: with a stream argument the collective is queued on it, after
**   the work queued there before, and the call returns at once (as a
**   kernel launch does: s:synchronize() before reading the result on the
**   host). Without one it is queued on the default stream, and the call
**   waits for it, as every MPI call does.
*/
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lmpi.h"
#include "libs/libfind.h"

typedef int nres;   /* ncclResult_t */
typedef struct { char internal[128]; } NId;   /* ncclUniqueId */
enum { nInt8 = 0, nUint8 = 1, nInt32 = 2, nUint32 = 3, nInt64 = 4, nUint64 = 5,
       nFloat32 = 7, nFloat64 = 8 };

static struct {
  nres (*GetVersion)(int *);
  nres (*GetUniqueId)(NId *);
  nres (*CommInitRank)(void **, int, NId, int);
  nres (*CommDestroy)(void *);
  nres (*CommAbort)(void *);
  const char *(*GetErrorString)(nres);
  nres (*AllReduce)(const void *, void *, size_t, int, int, void *, void *);
  nres (*Reduce)(const void *, void *, size_t, int, int, int, void *, void *);
  nres (*Broadcast)(const void *, void *, size_t, int, int, void *, void *);
  nres (*AllGather)(const void *, void *, size_t, int, void *, void *);
  nres (*ReduceScatter)(const void *, void *, size_t, int, int, void *, void *);
} nc;

static int on, opened, version;
static char path[512], why[1024];
static char fellback[600];   /* the last communicator that could not be made */

/* The NCCL communicator of an MPI communicator. */
/* gen: the extension API's close_count when made: a communicator made
** before a kjit.cuda.close() died with its context (made again, never
** destroyed) */
typedef struct NComm { MPI_Comm c; void *comm; int dev; int failed; unsigned gen; } NComm;

static unsigned close_count(void) { return lm_api->close_count ? lm_api->close_count() : 0; }
static NComm *comms;
static int ncomms, capcomms;

static const char *errstr(nres r) {
  const char *s = nc.GetErrorString ? nc.GetErrorString(r) : NULL;
  return s ? s : "NCCL error";
}

/* dlopen and dlsym; 1 on success, else why is set. */
static int load(void) {
  static const char *const sonames[] = { "libnccl.so.2", "libnccl.so", NULL };
  static const kl_spec spec = { "NCCL", "KJIT_NCCL", sonames, NULL, NULL, NULL };
  const char *e = getenv("KJIT_NCCL");
  if (e && (!strcmp(e, "0") || !strcmp(e, "off") || !strcmp(e, "no") || !strcmp(e, "false"))) {
    snprintf(why, sizeof why, "NCCL switched off (KJIT_NCCL=%s)", e);
    return 0;
  }
  void *h = kl_open(&spec, path, sizeof path, why, sizeof why);
  if (h == NULL) return 0;
  static const struct { const char *name; size_t off; } syms[] = {
#define S(n) { "nccl" #n, offsetof(__typeof__(nc), n) }
    S(GetVersion), S(GetUniqueId), S(CommInitRank), S(CommDestroy), S(CommAbort),
    S(GetErrorString), S(AllReduce), S(Reduce), S(Broadcast), S(AllGather), S(ReduceScatter),
#undef S
  };
  for (size_t k = 0; k < sizeof syms / sizeof syms[0]; k++) {
    void *p = dlsym(h, syms[k].name);
    if (p == NULL) {
      snprintf(why, sizeof why, "%.500s has no %s (not NCCL 2?)", path, syms[k].name);
      memset(&nc, 0, sizeof nc);
      return 0;
    }
    memcpy((char *)&nc + syms[k].off, &p, sizeof p);
  }
  if (nc.GetVersion(&version) != 0) version = 0;
  return 1;
}

void lm_nccl_open(lua_State *L) {
  if (opened) return;
  opened = 1;
  int mine = load();
  if (mine && !(lm_api->version >= 2 && lm_api->cuda_driver())) {
    snprintf(why, sizeof why, "NCCL loaded (%.500s) but kjit's device arrays are not the CUDA "
             "driver's (no driver, or the simulator)", path);
    mine = 0;
  }
  int all = 0;
  LM_CHECK(L, MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "nccl");
  if (mine && !all) snprintf(why, sizeof why, "NCCL loaded (%.500s) but not on every rank", path);
  on = all;
}

int lm_nccl_on(void) { return on; }

static NComm *find(MPI_Comm c) {
  for (int i = 0; i < ncomms; i++)
    if (comms[i].c == c) return &comms[i];
  return NULL;
}

static void drop(NComm *n, int abort) {
  if (n->comm && n->gen == close_count()) {
    if (abort) nc.CommAbort(n->comm);
    else nc.CommDestroy(n->comm);
  }
  *n = comms[--ncomms];
}

void lm_nccl_forget(MPI_Comm c) {
  for (int i = 0; i < ncomms;) {
    if (c == MPI_COMM_NULL || comms[i].c == c) drop(&comms[i], c == MPI_COMM_NULL);
    else i++;
  }
}

int lm_nccl_fits(const LBuf *b, int reduction) {
  if (!on || !b->dev || b->eb.sim) return 0;
  switch ((int)b->eb.dtype) {
  case KJIT_I16: case KJIT_U16: return 0;   /* NCCL has no 16-bit integers */
  case KJIT_BOOL: return 1;
  default:
    return !reduction || b->type != MPI_BYTE;   /* records: bytes, never reduced */
  }
}

static int ndtype(const LBuf *b, size_t *count) {
  *count = (size_t)b->eb.size;
  switch ((int)b->eb.dtype) {
  case KJIT_I8: return nInt8;
  case KJIT_U8: case KJIT_BOOL: return nUint8;
  case KJIT_I32: return nInt32;
  case KJIT_U32: return nUint32;
  case KJIT_I64: return nInt64;
  case KJIT_U64: return nUint64;
  case KJIT_F32: return nFloat32;
  case KJIT_F64: return nFloat64;
  default: *count = b->eb.nbytes; return nUint8;   /* records */
  }
}

/* Makes (collectively) the NCCL communicator of c for device dev; returns
** it, or NULL when some rank could not (c then stays on MPI). */
static NComm *make(lua_State *L, MPI_Comm c, int dev) {
  NComm *n = find(c);
  if (n) drop(n, 0);
  if (ncomms == capcomms) {
    int cap = capcomms ? 2 * capcomms : 8;
    NComm *m = realloc(comms, (size_t)cap * sizeof *m);
    if (m == NULL) luaL_error(L, "kjit.mpi: not enough memory");
    comms = m;
    capcomms = cap;
  }
  n = &comms[ncomms++];
  memset(n, 0, sizeof *n);
  n->c = c;
  n->dev = dev;
  n->gen = close_count();
  int rank, size;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  struct { int rc; NId id; } msg;
  memset(&msg, 0, sizeof msg);
  if (rank == 0) msg.rc = nc.GetUniqueId(&msg.id);
  LM_CHECK(L, MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, c), "nccl");
  nres r = msg.rc;
  if (r == 0) r = nc.CommInitRank(&n->comm, size, msg.id, rank);
  int bad = r != 0 ? rank + 1 : 0, first = 0;
  LM_CHECK(L, MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MAX, c), "nccl");
  if (first) {
    if (r == 0 && n->comm) nc.CommAbort(n->comm);
    n->comm = NULL;
    n->failed = 1;
    if (r != 0)
      snprintf(fellback, sizeof fellback, "NCCL could not make a communicator (%s): its device "
               "arrays go through MPI", rank == 0 && msg.rc ? "ncclGetUniqueId" : errstr(r));
    else
      snprintf(fellback, sizeof fellback, "NCCL could not make a communicator on rank %d: its "
               "device arrays go through MPI", first - 1);
    return NULL;
  }
  return n;
}

int lm_nccl_coll(lua_State *L, MPI_Comm c, int kind, LBuf *send, LBuf *recv, int op, int root,
                 void *stream, const char *fname) {
  if (!on) return 0;
  int reduction = kind == LM_NC_ALLREDUCE || kind == LM_NC_REDUCE ||
                  kind == LM_NC_REDUCE_SCATTER;
  NComm *n = find(c);
  int dev = send->eb.device;
  int stale = n && n->gen != close_count();   /* made before a cuda.close() */
  int fits = lm_nccl_fits(send, reduction) && (recv == NULL || lm_nccl_fits(recv, reduction)) &&
             !(n && n->failed && !stale);
  int in[2] = { -fits, fits && (n == NULL || n->dev != dev || stale) }, out[2];
  LM_CHECK(L, MPI_Allreduce(in, out, 2, MPI_INT, MPI_MAX, c), fname);
  if (out[0] != -1) return 0;   /* some rank cannot */
  if (out[1] && (n = make(L, c, dev)) == NULL) return 0;
  static const int ops[] = { 0 /* sum */, 2 /* max */, 3 /* min */, 1 /* prod */ };
  size_t count;
  int t = ndtype(send, &count);
  void *sp = send->eb.data, *rp = recv ? recv->eb.data : sp;
  nres r = 0;
  /* without a stream, as an MPI call: after every kernel that writes the
  ** arrays, on whatever stream (kjit's streams need not wait for the
  ** default one) */
  if (stream == NULL) lm_api->synchronize(L, NULL);
  switch (kind) {
  case LM_NC_ALLREDUCE: r = nc.AllReduce(sp, rp, count, t, ops[op], n->comm, stream); break;
  case LM_NC_REDUCE: r = nc.Reduce(sp, rp, count, t, ops[op], root, n->comm, stream); break;
  case LM_NC_BCAST: r = nc.Broadcast(sp, sp, count, t, root, n->comm, stream); break;
  case LM_NC_ALLGATHER: r = nc.AllGather(sp, rp, count, t, n->comm, stream); break;
  case LM_NC_REDUCE_SCATTER: {
    size_t rc;
    ndtype(recv, &rc);
    r = nc.ReduceScatter(sp, rp, rc, t, ops[op], n->comm, stream);
    break;
  }
  }
  if (r != 0) luaL_error(L, "kjit.mpi: %s: NCCL: %s", fname, errstr(r));
  if (stream == NULL) lm_api->synchronize(L, NULL);   /* as an MPI call: done on return */
  return 1;
}

/* mpi.nccl([on]): true and the library, or false and why. With an
** argument (collective): switches NCCL off (false) or back on (true,
** where it loaded). */
int lm_nccl_info(lua_State *L) {
  if (!lua_isnone(L, 1)) {
    int want = lua_toboolean(L, 1);
    int mine = want && nc.AllReduce != NULL && lm_api->version >= 2 && lm_api->cuda_driver();
    int all = 0;
    LM_CHECK(L, MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "nccl");
    if (!want) {
      if (on) snprintf(why, sizeof why, "NCCL switched off by mpi.nccl(false)");
      on = 0;
      lm_nccl_forget(MPI_COMM_NULL);
    } else if (all) {
      on = 1;
      why[0] = 0;
    }
  }
  lua_pushboolean(L, on);
  if (on) {
    int big = version >= 10000;
    lua_pushfstring(L, "NCCL %d.%d.%d (%s): collectives on device arrays go through NCCL%s%s",
                    big ? version / 10000 : version / 1000,
                    big ? version / 100 % 100 : version / 100 % 10, version % 100, path,
                    fellback[0] ? "; " : "", fellback);
  } else {
    lua_pushstring(L, why[0] ? why : "NCCL not loaded");
  }
  return 2;
}
