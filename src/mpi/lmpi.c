/*
** lmpi.c: kjit.mpi, MPI for kjit arrays (a separate module, built with the
** MPI library's flags: MPI implementations differ in ABI, kjit does not).
**
** Design decisions:
** - kjit is reached only through the extension C API that require "kjit"
**   leaves in the registry (include/kjit_ext.h): no kjit symbol is linked.
** - Ranks are 0-based, as in every MPI program. Argument orders follow MPI
**   and mpi4py's buffer API (send(buf, dest [, tag]), recv(buf, source
**   [, tag]), ...). Every function exists twice: mpi.f(...) on
**   COMM_WORLD and comm:f(...) on a communicator; one implementation
**   impl(L, comm, index of the first argument) serves both.
** - Arrays (and their row views and slices, which kjit keeps contiguous)
**   are passed to MPI in place: no copy. Device arrays go to MPI directly
**   when the MPI is CUDA-aware; otherwise (and always in the simulator)
**   they are staged through host memory, page-locked and reused
**   (lmpi_stage.c). Collectives on device arrays go through NCCL when it
**   loads (lmpi_nccl.c).
** - Lua values (numbers, strings, booleans, tables of them) travel as
**   packed bytes (lmpi_pack.c); a receive of a Lua value passes nil as
**   its buffer and gets the value back.
** - MPI errors are Lua errors: every communicator has MPI_ERRORS_RETURN.
**   Nothing here aborts the process; mpi.abort() and the launcher
**   (kjit.mpi.run) do, when asked.
** - Non-blocking requests keep their buffers alive (user values of the
**   request userdata). A request dropped while still active is moved to
**   a list of orphans (its buffers referenced from the registry) and
**   completed later, so a full collection never frees memory MPI is
**   still writing to.
** - MPI is initialized by require (unless the host did it) and finalized
**   by mpi.finalize() or at a successful exit; a process that exits with a
**   failure status leaves it unfinalized, so that mpirun ends the job
**   (exit_handler).
*/
#define _GNU_SOURCE   /* on_exit */
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include "lmpi.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

const kjit_ext_api *lm_api;
int lm_cuda_aware;
static int we_initialized, local_rank = -1;

#define LM_REQ "kjit.mpi.request"

int lm_error(lua_State *L, int rc, const char *what) {
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
  msg[len] = 0;
  return luaL_error(L, "kjit.mpi: %s: %s", what, len ? msg : "MPI error");
}

static void check_ready(lua_State *L) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) luaL_error(L, "kjit.mpi: MPI was finalized (mpi.finalize()): no more MPI calls");
}

/* ---- Buffers ---------------------------------------------------------------- */

static MPI_Datatype dtype_mpi(kjit_dtype t) {
  switch ((int)t) {
  case KJIT_I8: return MPI_INT8_T;
  case KJIT_U8: return MPI_UINT8_T;
  case KJIT_I16: return MPI_INT16_T;
  case KJIT_U16: return MPI_UINT16_T;
  case KJIT_I32: return MPI_INT32_T;
  case KJIT_U32: return MPI_UINT32_T;
  case KJIT_I64: return MPI_INT64_T;
  case KJIT_U64: return MPI_UINT64_T;
  case KJIT_F32: return MPI_FLOAT;
  case KJIT_F64: return MPI_DOUBLE;
  case KJIT_BOOL: return MPI_UINT8_T;   /* 0/1 bytes: max is "or", min is "and" */
  default: return MPI_BYTE;             /* records: their bytes */
  }
}

int lm_isarray(lua_State *L, int idx) {
  kjit_ext_buffer eb;
  return lua_type(L, idx) == LUA_TUSERDATA &&
         (lm_api->toarray(L, idx, &eb) || lm_api->todevarray(L, idx, &eb));
}

void lm_describe(lua_State *L, int idx, LBuf *b, const char *fname, int argn) {
  memset(b, 0, sizeof *b);
  if (!lm_api->toarray(L, idx, &b->eb)) {
    if (!lm_api->todevarray(L, idx, &b->eb))
      luaL_error(L, "bad argument #%d to '%s' (kjit array expected, got %s)", argn, fname,
                 luaL_typename(L, idx));
    b->dev = 1;
  }
  kjit_ext_buffer *eb = &b->eb;
  b->type = dtype_mpi(eb->dtype);
  int64_t count = b->type == MPI_BYTE ? (int64_t)eb->nbytes : eb->size;
  if (count > INT_MAX)
    luaL_error(L, "%s: the array has %I elements, more than MPI's counts (int) allow: "
               "send it in parts", fname, (lua_Integer)count);
  b->count = (int)count;
  b->ptr = eb->data;
}

void lm_getbuf_s(lua_State *L, int idx, LBuf *b, int in, const char *fname, int argn,
                 void *stream) {
  lm_describe(L, idx, b, fname, argn);
  kjit_ext_buffer *eb = &b->eb;
  b->stream = stream;
  if (b->dev && (eb->sim || !lm_cuda_aware)) {
    /* staged: page-locked memory from the pool (lmpi_stage.c); the copy in
    ** goes on the stream, after the work queued there, and is waited for */
    b->staged = 1;
    b->stage = lm_stage(L, eb->nbytes ? eb->nbytes : 1, !eb->sim);
    b->ptr = b->stage->p;
    if (in) {
      lm_api->dev_to_host(L, b->ptr, eb, stream);
      if (stream) lm_api->synchronize(L, stream);
    }
  } else if (b->dev) {
    lm_api->synchronize(L, stream);   /* kernels that write it have finished */
  }
}

void lm_getbuf(lua_State *L, int idx, LBuf *b, int in, const char *fname, int argn) {
  lm_getbuf_s(L, idx, b, in, fname, argn, NULL);
}

void lm_putbuf(lua_State *L, LBuf *b) {
  if (!b->staged) return;
  lm_api->host_to_dev(L, &b->eb, b->ptr, b->stream);
  /* the staging memory goes back to the pool when the call returns: the
  ** copy from it must have finished */
  if (b->stream) lm_api->synchronize(L, b->stream);
}

void lm_samekind(lua_State *L, const LBuf *a, const LBuf *b, int n, const char *fname,
                 const char *what) {
  if (a->eb.dtype != b->eb.dtype)
    luaL_error(L, "%s: the arrays have different dtypes", fname);
  if ((int64_t)a->count * n != b->count)
    luaL_error(L, "%s: %s has %d elements, %d expected (%d x %d)", fname, what, b->count,
               a->count * n, n, a->count);
}

int lm_checkop_index(lua_State *L, int idx, kjit_dtype t, const char *fname) {
  static const char *const names[] = { "sum", "max", "min", "prod", NULL };
  int k = luaL_checkoption(L, idx, NULL, names);
  if (t == KJIT_BOOL && (k == 0 || k == 3))
    luaL_error(L, "%s: \"%s\" on a bool array: use \"max\" (or) or \"min\" (and)", fname, names[k]);
  if (t == KJIT_F16)   /* sent as bytes: MPI has no half type to add */
    luaL_error(L, "%s: f16 arrays cannot be reduced (MPI has no half type): reduce an f32 copy", fname);
  if (t != KJIT_BOOL && dtype_mpi(t) == MPI_BYTE)
    luaL_error(L, "%s: arrays of records cannot be reduced", fname);
  return k;
}

MPI_Op lm_checkop(lua_State *L, int idx, kjit_dtype t, const char *fname) {
  MPI_Op ops[] = { MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD };
  return ops[lm_checkop_index(L, idx, t, fname)];
}

/* ---- Communicators ------------------------------------------------------------ */

static LComm *push_comm(lua_State *L, MPI_Comm c, int owned) {
  LComm *lc = lua_newuserdatauv(L, sizeof *lc, 0);
  lc->c = c;
  lc->owned = owned;
  luaL_setmetatable(L, LM_COMM);
  return lc;
}

static MPI_Comm check_comm(lua_State *L, int idx) {
  LComm *lc = luaL_checkudata(L, idx, LM_COMM);
  if (lc->c == MPI_COMM_NULL) luaL_error(L, "kjit.mpi: communicator used after comm:free()");
  check_ready(L);
  return lc->c;
}

static MPI_Comm world(lua_State *L) {
  check_ready(L);
  return MPI_COMM_WORLD;
}

static int comm_gc(lua_State *L) {
  LComm *lc = luaL_checkudata(L, 1, LM_COMM);
  int fin = 0;
  MPI_Finalized(&fin);
  if (lc->owned && lc->c != MPI_COMM_NULL) lm_nccl_forget(lc->c);
  if (lc->owned && lc->c != MPI_COMM_NULL && !fin) MPI_Comm_free(&lc->c);
  lc->c = MPI_COMM_NULL;
  return 0;
}

static int comm_tostring(lua_State *L) {
  LComm *lc = luaL_checkudata(L, 1, LM_COMM);
  int r = -1, n = 0;
  if (lc->c != MPI_COMM_NULL) { MPI_Comm_rank(lc->c, &r); MPI_Comm_size(lc->c, &n); }
  lua_pushfstring(L, "kjit.mpi communicator (rank %d of %d)", r, n);
  return 1;
}

/* ---- Point to point ------------------------------------------------------------ */

static int opt_tag(lua_State *L, int idx) {
  lua_Integer t = luaL_optinteger(L, idx, 0);
  if (t < MPI_ANY_TAG || t > INT_MAX) luaL_argerror(L, idx, "tag out of range");
  return (int)t;
}

static int check_rank(lua_State *L, int idx) {
  lua_Integer r = luaL_checkinteger(L, idx);
  if (r < INT_MIN || r > INT_MAX) luaL_argerror(L, idx, "rank out of range");
  return (int)r;
}

static int impl_send(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int dest = check_rank(L, a + 1), tag = opt_tag(L, a + 2);
  if (lm_isarray(L, a)) {
    LBuf b;
    lm_getbuf(L, a, &b, 1, "send", 1);
    LM_CHECK(L, MPI_Send(b.ptr, b.count, b.type, dest, tag, c), "send");
  } else {
    LPack *p = lm_pack_new(L);
    lm_pack(L, a, p, "send", 1);
    if (p->n > INT_MAX) luaL_error(L, "send: the value is too large for one message");
    LM_CHECK(L, MPI_Send(p->p, (int)p->n, MPI_BYTE, dest, tag, c), "send");
  }
  return 0;
}

/* Receives into the array at a (nil: a Lua value) from source/tag; pushes
** the array or value, the source and the tag. */
static int do_recv(lua_State *L, MPI_Comm c, int a, int argn, int source, int tag,
                   const char *fname) {
  MPI_Status st;
  if (lm_isarray(L, a)) {
    LBuf b;
    lm_getbuf(L, a, &b, 0, fname, argn);
    LM_CHECK(L, MPI_Recv(b.ptr, b.count, b.type, source, tag, c, &st), fname);
    int n = 0;
    MPI_Get_count(&st, b.type, &n);
    if (n != b.count && st.MPI_SOURCE != MPI_PROC_NULL)
      luaL_error(L, "%s: received %d elements into an array of %d (from rank %d)", fname, n,
                 b.count, st.MPI_SOURCE);
    lm_putbuf(L, &b);
    lua_pushvalue(L, a);
  } else {
    if (!lua_isnil(L, a))
      luaL_error(L, "bad argument #%d to '%s' (kjit array, or nil to receive a Lua value, "
                 "expected, got %s)", argn, fname, luaL_typename(L, a));
    if (source == MPI_PROC_NULL) { lua_pushnil(L); lua_pushinteger(L, MPI_PROC_NULL); lua_pushinteger(L, MPI_ANY_TAG); return 3; }
    MPI_Message msg;
    LM_CHECK(L, MPI_Mprobe(source, tag, c, &msg, &st), fname);
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    char *p = lua_newuserdatauv(L, n ? (size_t)n : 1, 0);
    LM_CHECK(L, MPI_Mrecv(p, n, MPI_BYTE, &msg, &st), fname);
    lm_unpack(L, p, (size_t)n, fname);
    lua_remove(L, -2);   /* the bytes */
  }
  lua_pushinteger(L, st.MPI_SOURCE);
  lua_pushinteger(L, st.MPI_TAG);
  return 3;
}

static int impl_recv(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int source = check_rank(L, a + 1);
  int tag = lua_isnoneornil(L, a + 2) ? MPI_ANY_TAG : opt_tag(L, a + 2);
  return do_recv(L, c, a, 1, source, tag, "recv");
}

/* sendrecv(sendbuf, dest, recvbuf, source [, sendtag [, recvtag]]) */
static int impl_sendrecv(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 5);   /* staging memory goes above the arguments */
  int dest = check_rank(L, a + 1), source = check_rank(L, a + 3);
  int stag = opt_tag(L, a + 4);
  int rtag = lua_isnoneornil(L, a + 5) ? stag : opt_tag(L, a + 5);
  if (lm_isarray(L, a) && lm_isarray(L, a + 2)) {
    LBuf s, r;
    MPI_Status st;
    lm_getbuf(L, a, &s, 1, "sendrecv", 1);
    lm_getbuf(L, a + 2, &r, 0, "sendrecv", 3);
    LM_CHECK(L, MPI_Sendrecv(s.ptr, s.count, s.type, dest, stag, r.ptr, r.count, r.type,
                             source, rtag, c, &st), "sendrecv");
    int n = 0;
    MPI_Get_count(&st, r.type, &n);
    if (n != r.count && st.MPI_SOURCE != MPI_PROC_NULL)
      luaL_error(L, "sendrecv: received %d elements into an array of %d (from rank %d)", n,
                 r.count, st.MPI_SOURCE);
    lm_putbuf(L, &r);
    lua_pushvalue(L, a + 2);
    lua_pushinteger(L, st.MPI_SOURCE);
    lua_pushinteger(L, st.MPI_TAG);
    return 3;
  }
  /* a Lua value on either side: the send goes first, non-blocking, so that
  ** two ranks exchanging with each other never wait on each other */
  MPI_Request req;
  if (lm_isarray(L, a)) {
    LBuf s;
    lm_getbuf(L, a, &s, 1, "sendrecv", 1);
    LM_CHECK(L, MPI_Isend(s.ptr, s.count, s.type, dest, stag, c, &req), "sendrecv");
  } else {
    LPack *p = lm_pack_new(L);
    lm_pack(L, a, p, "sendrecv", 1);
    if (p->n > INT_MAX) luaL_error(L, "sendrecv: the value is too large for one message");
    LM_CHECK(L, MPI_Isend(p->p, (int)p->n, MPI_BYTE, dest, stag, c, &req), "sendrecv");
  }
  int top = lua_gettop(L);   /* the send's buffer (staging or pack) stays below */
  do_recv(L, c, a + 2, 3, source, rtag, "sendrecv");
  LM_CHECK(L, MPI_Wait(&req, MPI_STATUS_IGNORE), "sendrecv");
  return lua_gettop(L) - top;
}

/* ---- Requests ----------------------------------------------------------------- */

/* User values: 1 the array (or the packed value; for a receive of a Lua
** value, the communicator's userdata, or nil for COMM_WORLD), 2 its
** staging memory. */
typedef struct LReq {
  MPI_Request r;
  int active, isrecv;   /* isrecv 2: a Lua value (no MPI request posted) */
  LBuf b;
  MPI_Comm comm;        /* isrecv 2: where, from whom, which tag */
  int source, tag;
} LReq;

/* Dropped active requests, completed later (see the top of the file). */
typedef struct Orphan { MPI_Request r; int ref1, ref2; } Orphan;
static Orphan *orphans;
static int norphans, caporphans;

static void reap(lua_State *L, int all) {
  for (int i = 0; i < norphans;) {
    int done = 0;
    MPI_Test(&orphans[i].r, &done, MPI_STATUS_IGNORE);
    if (!done && all) {
      /* the state is closing: a receive nobody sends to, or a send nobody
      ** receives, is given up (never waited for: that could hang) */
      MPI_Cancel(&orphans[i].r);
      MPI_Request_free(&orphans[i].r);
      done = 1;
    }
    if (done) {
      luaL_unref(L, LUA_REGISTRYINDEX, orphans[i].ref1);
      luaL_unref(L, LUA_REGISTRYINDEX, orphans[i].ref2);
      orphans[i] = orphans[--norphans];
    } else {
      i++;
    }
  }
}

static LReq *push_req(lua_State *L, int bufidx) {
  bufidx = lua_absindex(L, bufidx);
  LReq *q = lua_newuserdatauv(L, sizeof *q, 2);
  memset(q, 0, sizeof *q);
  q->r = MPI_REQUEST_NULL;
  luaL_setmetatable(L, LM_REQ);
  lua_pushvalue(L, bufidx);
  lua_setiuservalue(L, -2, 1);
  return q;
}

static int impl_isend(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int dest = check_rank(L, a + 1), tag = opt_tag(L, a + 2);
  reap(L, 0);
  if (lm_isarray(L, a)) {
    LBuf b;
    int top = lua_gettop(L);
    lm_getbuf(L, a, &b, 1, "isend", 1);
    int stage = lua_gettop(L) > top ? lua_gettop(L) : 0;
    LReq *q = push_req(L, a);
    q->b = b;
    if (stage) { lua_pushvalue(L, stage); lua_setiuservalue(L, -2, 2); }
    if (b.stage) b.stage->held = 1;   /* given back when the request completes */
    LM_CHECK(L, MPI_Isend(b.ptr, b.count, b.type, dest, tag, c, &q->r), "isend");
  } else {
    LPack *p = lm_pack_new(L);
    lm_pack(L, a, p, "isend", 1);
    if (p->n > INT_MAX) luaL_error(L, "isend: the value is too large for one message");
    LReq *q = push_req(L, -1);
    LM_CHECK(L, MPI_Isend(p->p, (int)p->n, MPI_BYTE, dest, tag, c, &q->r), "isend");
  }
  LReq *q = lua_touserdata(L, -1);
  q->active = 1;
  return 1;
}

static int impl_irecv(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int source = check_rank(L, a + 1);
  int tag = lua_isnoneornil(L, a + 2) ? MPI_ANY_TAG : opt_tag(L, a + 2);
  if (!lm_isarray(L, a)) {
    if (!lua_isnil(L, a))
      luaL_error(L, "bad argument #1 to 'irecv' (kjit array, or nil to receive a Lua value, "
                 "expected, got %s)", luaL_typename(L, a));
    /* a Lua value: its size is known only when its message has come, so
    ** nothing is posted now; wait/test match it (MPI_Mprobe/MPI_Improbe)
    ** and receive it into memory of that size (MPI_Mrecv) */
    LReq *q = push_req(L, a > 1 ? 1 : a);   /* keeps the communicator alive */
    q->isrecv = 2;
    q->comm = c;
    q->source = source;
    q->tag = tag;
    q->active = 1;
    return 1;
  }
  reap(L, 0);
  LBuf b;
  int top = lua_gettop(L);
  lm_getbuf(L, a, &b, 0, "irecv", 1);
  int stage = lua_gettop(L) > top ? lua_gettop(L) : 0;
  LReq *q = push_req(L, a);
  q->b = b;
  q->isrecv = 1;
  if (stage) { lua_pushvalue(L, stage); lua_setiuservalue(L, -2, 2); }
  if (b.stage) b.stage->held = 1;   /* given back when the request completes */
  LM_CHECK(L, MPI_Irecv(b.ptr, b.count, b.type, source, tag, c, &q->r), "irecv");
  q->active = 1;
  return 1;
}

/* A request MPI is done with (completed, or never posted): inactive, its
** staging memory back to the pool. (One MPI still uses is orphaned
** instead: req_gc.) */
static void req_done(LReq *q) {
  q->active = 0;
  if (q->b.stage) lm_stage_release(q->b.stage);
  q->b.stage = NULL;
}

/* A completed request (at 1): pushes what wait/test return. */
static int completed(lua_State *L, LReq *q, MPI_Status *st) {
  q->active = 0;
  if (q->isrecv) {
    int n = 0;
    MPI_Get_count(st, q->b.type, &n);
    if (n != q->b.count && st->MPI_SOURCE != MPI_PROC_NULL) {
      req_done(q);
      luaL_error(L, "wait: received %d elements into an array of %d (from rank %d)", n,
                 q->b.count, st->MPI_SOURCE);
    }
    lm_putbuf(L, &q->b);   /* (from the staging memory, for a device array) */
  }
  req_done(q);
  if (!q->isrecv) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_getiuservalue(L, 1, 1);
  lua_pushinteger(L, st->MPI_SOURCE);
  lua_pushinteger(L, st->MPI_TAG);
  return 3;
}

/* A receive of a Lua value (isrecv 2): matches its message (blocking: wait,
** or not: test) and receives it; pushes what wait returns (value, source,
** tag), or nothing when test found no message. Returns the count. */
static int value_recv(lua_State *L, LReq *q, int block, const char *fname) {
  lua_getiuservalue(L, 1, 1);
  LComm *lc = luaL_testudata(L, -1, LM_COMM);
  lua_pop(L, 1);
  if (lc && lc->c == MPI_COMM_NULL)
    luaL_error(L, "kjit.mpi: %s: its communicator was freed (comm:free())", fname);
  if (q->source == MPI_PROC_NULL) {
    q->active = 0;
    lua_pushnil(L);
    lua_pushinteger(L, MPI_PROC_NULL);
    lua_pushinteger(L, MPI_ANY_TAG);
    return 3;
  }
  MPI_Message msg;
  MPI_Status st;
  int flag = 1;
  if (block) LM_CHECK(L, MPI_Mprobe(q->source, q->tag, q->comm, &msg, &st), fname);
  else LM_CHECK(L, MPI_Improbe(q->source, q->tag, q->comm, &flag, &msg, &st), fname);
  if (!flag) return 0;
  q->active = 0;   /* matched: the message is this request's */
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  char *p = lua_newuserdatauv(L, n ? (size_t)n : 1, 0);
  LM_CHECK(L, MPI_Mrecv(p, n, MPI_BYTE, &msg, &st), fname);
  lm_unpack(L, p, (size_t)n, fname);
  lua_remove(L, -2);   /* the bytes */
  lua_pushinteger(L, st.MPI_SOURCE);
  lua_pushinteger(L, st.MPI_TAG);
  return 3;
}

static int req_wait(lua_State *L) {
  LReq *q = luaL_checkudata(L, 1, LM_REQ);
  if (!q->active) luaL_error(L, "kjit.mpi: request already completed");
  check_ready(L);
  if (q->isrecv == 2) return value_recv(L, q, 1, "wait");
  MPI_Status st;
  LM_CHECK(L, MPI_Wait(&q->r, &st), "wait");
  return completed(L, q, &st);
}

static int req_test(lua_State *L) {
  LReq *q = luaL_checkudata(L, 1, LM_REQ);
  if (!q->active) luaL_error(L, "kjit.mpi: request already completed");
  check_ready(L);
  if (q->isrecv == 2) {
    lua_pushboolean(L, 1);
    int k = value_recv(L, q, 0, "test");
    if (k == 0) lua_pushboolean(L, 0);
    return k ? 1 + k : 1;
  }
  MPI_Status st;
  int flag = 0;
  LM_CHECK(L, MPI_Test(&q->r, &flag, &st), "test");
  lua_pushboolean(L, flag);
  if (!flag) return 1;
  return 1 + completed(L, q, &st);
}

static int req_gc(lua_State *L) {
  LReq *q = luaL_checkudata(L, 1, LM_REQ);
  int fin = 0;
  MPI_Finalized(&fin);
  if (!q->active || fin) return 0;
  /* a receive of a Lua value posted nothing: its message (if it comes)
  ** stays for a later receive */
  int done = q->isrecv == 2;
  if (!done) MPI_Test(&q->r, &done, MPI_STATUS_IGNORE);
  if (!done && norphans == caporphans) {
    int cap = caporphans ? 2 * caporphans : 16;
    Orphan *o = realloc(orphans, (size_t)cap * sizeof *o);
    if (o == NULL) {   /* cannot keep the buffers: wait for the request here */
      MPI_Wait(&q->r, MPI_STATUS_IGNORE);
      done = 1;
    } else {
      orphans = o;
      caporphans = cap;
    }
  }
  if (done) {
    req_done(q);
    return 0;
  }
  Orphan *o = &orphans[norphans++];
  o->r = q->r;
  lua_getiuservalue(L, 1, 1);
  o->ref1 = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getiuservalue(L, 1, 2);
  o->ref2 = luaL_ref(L, LUA_REGISTRYINDEX);
  q->active = 0;
  return 0;
}

static int req_tostring(lua_State *L) {
  LReq *q = luaL_checkudata(L, 1, LM_REQ);
  lua_pushfstring(L, "kjit.mpi request (%s, %s)",
                  q->isrecv == 2 ? "irecv of a Lua value" : q->isrecv ? "irecv" : "isend",
                  q->active ? "active" : "completed");
  return 1;
}

/* ---- Environment ----------------------------------------------------------------- */

static int impl_rank(lua_State *L, MPI_Comm c, int a) {
  (void)a;
  int r;
  LM_CHECK(L, MPI_Comm_rank(c, &r), "rank");
  lua_pushinteger(L, r);
  return 1;
}

static int impl_size(lua_State *L, MPI_Comm c, int a) {
  (void)a;
  int n;
  LM_CHECK(L, MPI_Comm_size(c, &n), "size");
  lua_pushinteger(L, n);
  return 1;
}

static int impl_barrier(lua_State *L, MPI_Comm c, int a) {
  (void)a;
  LM_CHECK(L, MPI_Barrier(c), "barrier");
  return 0;
}

/* split(color, key): color nil (MPI_UNDEFINED) gives nil. */
static int impl_split(lua_State *L, MPI_Comm c, int a) {
  int color = lua_isnil(L, a) ? MPI_UNDEFINED : (int)luaL_checkinteger(L, a);
  if (color < 0 && color != MPI_UNDEFINED) luaL_argerror(L, a, "color must be >= 0 (or nil)");
  int key = (int)luaL_optinteger(L, a + 1, 0);
  MPI_Comm n;
  LM_CHECK(L, MPI_Comm_split(c, color, key, &n), "comm_split");
  if (n == MPI_COMM_NULL) { lua_pushnil(L); return 1; }
  MPI_Comm_set_errhandler(n, MPI_ERRORS_RETURN);
  push_comm(L, n, 1);
  return 1;
}

static int impl_dup(lua_State *L, MPI_Comm c, int a) {
  (void)a;
  MPI_Comm n;
  LM_CHECK(L, MPI_Comm_dup(c, &n), "dup");
  MPI_Comm_set_errhandler(n, MPI_ERRORS_RETURN);
  push_comm(L, n, 1);
  return 1;
}

static int comm_free(lua_State *L) {
  LComm *lc = luaL_checkudata(L, 1, LM_COMM);
  if (!lc->owned) luaL_error(L, "kjit.mpi: COMM_WORLD cannot be freed");
  return comm_gc(L);
}

static int l_wtime(lua_State *L) { lua_pushnumber(L, MPI_Wtime()); return 1; }

static int l_local_rank(lua_State *L) { lua_pushinteger(L, local_rank); return 1; }

static int l_abort(lua_State *L) {
  int code = (int)luaL_optinteger(L, 1, 1);
  MPI_Abort(MPI_COMM_WORLD, code);
  return 0;
}

static int l_cuda_aware(lua_State *L) {
  lua_pushboolean(L, lm_cuda_aware);
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  lua_pushstring(L, lm_cuda_aware ? "CUDA-aware MPI: device arrays are passed directly"
                 : "this MPI was built CUDA-aware but has no CUDA support at run time: "
                   "device arrays are staged through page-locked host memory (reused)");
#else
  lua_pushstring(L, "this MPI was built without CUDA support: device arrays are staged "
                 "through page-locked host memory (reused)");
#endif
  return 2;
}

static int l_finalize(lua_State *L) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) {
    reap(L, 1);
    lm_nccl_forget(MPI_COMM_NULL);
    MPI_Finalize();
  }
  return 0;
}

/* The sentinel's __gc, at lua_close: the requests left are given up. MPI
** itself is finalized at exit (exit_handler), not here: lua5.4 closes the
** state after an uncaught error too, and only the exit status tells the
** two apart. */
static int sentinel_gc(lua_State *L) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (we_initialized && !fin) reap(L, 1);
  lm_nccl_forget(MPI_COMM_NULL);
  lm_stage_close();
  return 0;
}

/* At exit (glibc's on_exit, which sees the status): a process that exits
** with 0 finalizes MPI. One that fails (lua5.4 after an uncaught error,
** os.exit(1)) leaves MPI unfinalized, which mpirun (Open MPI's, MPICH's
** Hydra) takes as an abnormal end: it ends the other ranks, instead of
** letting them wait in a collective for this one forever. Nothing is
** aborted from here. */
static void exit_handler(int status, void *ud) {
  (void)ud;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && status == 0) MPI_Finalize();
}

static int l_load_only(lua_State *L) {
  lua_pushboolean(L, lm_api->cache_load_only(lua_toboolean(L, 1)));
  return 1;
}

/* ---- Registration ------------------------------------------------------------------ */

/* Each implementation twice: on COMM_WORLD (mpi.f) and as a method (comm:f). */
#define BOTH(X) X(send) X(recv) X(sendrecv) X(isend) X(irecv) X(rank) X(size) \
  X(barrier) X(split) X(dup) X(allreduce) X(reduce) X(bcast) X(gather) X(allgather) \
  X(scatter) X(alltoall) X(reduce_scatter)
#define impl_reduce_scatter lm_reduce_scatter
#define impl_allreduce lm_allreduce
#define impl_reduce lm_reduce
#define impl_bcast lm_bcast
#define impl_gather lm_gather
#define impl_allgather lm_allgather
#define impl_scatter lm_scatter
#define impl_alltoall lm_alltoall
/* Both give back the staging memory the call took (lmpi_stage.c): it lies
** on the stack between the arguments and the results. */
#define WRAP(n) \
  static int w_##n(lua_State *L) { \
    int r = impl_##n(L, world(L), 1); \
    lm_release_stack(L, 1, lua_gettop(L) - r); \
    return r; \
  } \
  static int m_##n(lua_State *L) { \
    MPI_Comm c = check_comm(L, 1); \
    int r = impl_##n(L, c, 2); \
    lm_release_stack(L, 1, lua_gettop(L) - r); \
    return r; \
  }
BOTH(WRAP)
#define MOD_ENTRY(n) { #n, w_##n },
#define METH_ENTRY(n) { #n, m_##n },

static const luaL_Reg mod_fns[] = {
  BOTH(MOD_ENTRY)
  { "wtime", l_wtime }, { "local_rank", l_local_rank }, { "abort", l_abort },
  { "cuda_aware", l_cuda_aware }, { "finalize", l_finalize }, { "_load_only", l_load_only },
  { "nccl", lm_nccl_info }, { "_staging", lm_staging_stats },
  { NULL, NULL }
};
static const luaL_Reg comm_methods[] = {
  BOTH(METH_ENTRY)
  { "free", comm_free }, { NULL, NULL }
};

__attribute__((visibility("default"))) int luaopen_kjit_mpi(lua_State *L) {
  /* kjit first: its extension API */
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kjit");
  lua_call(L, 1, 0);
  lua_getfield(L, LUA_REGISTRYINDEX, KJIT_EXT_REGISTRY_KEY);
  const kjit_ext_api *api = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (api == NULL || api->version < 1 || api->size < sizeof(kjit_ext_api))
    return luaL_error(L, "kjit.mpi: the kjit loaded has no extension API of version %d or "
                      "later (kjit.mpi needs a kjit at least as new as itself)", KJIT_EXT_VERSION);
  lm_api = api;

  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return lm_error(L, rc, "MPI_Init");
    we_initialized = 1;
    on_exit(exit_handler, NULL);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  lm_cuda_aware = MPIX_Query_cuda_support() == 1;
#endif
  if (local_rank < 0) {   /* collective: every rank requires kjit.mpi */
    MPI_Comm node;
    LM_CHECK(L, MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                    &node), "local_rank");
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
  }

  if (luaL_newmetatable(L, LM_COMM)) {
    luaL_newlib(L, comm_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, comm_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, comm_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, LM_REQ)) {
    lua_newtable(L);
    lua_pushcfunction(L, req_wait);
    lua_setfield(L, -2, "wait");
    lua_pushcfunction(L, req_test);
    lua_setfield(L, -2, "test");
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, req_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, req_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  /* the sentinel that finalizes MPI when the state closes (once) */
  if (lua_getfield(L, LUA_REGISTRYINDEX, "kjit.mpi.sentinel") == LUA_TNIL) {
    lua_newuserdatauv(L, 1, 0);
    lua_newtable(L);
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "kjit.mpi.sentinel");
  }
  lua_pop(L, 1);

  luaL_newlib(L, mod_fns);
  int mod = lua_gettop(L);
  lua_pushcfunction(L, w_split);
  lua_setfield(L, mod, "comm_split");
  push_comm(L, MPI_COMM_WORLD, 0);
  lua_setfield(L, mod, "COMM_WORLD");
  lua_pushinteger(L, MPI_ANY_SOURCE);
  lua_setfield(L, mod, "ANY_SOURCE");
  lua_pushinteger(L, MPI_ANY_TAG);
  lua_setfield(L, mod, "ANY_TAG");
  lua_pushinteger(L, MPI_PROC_NULL);
  lua_setfield(L, mod, "PROC_NULL");
  {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    while (len > 0 && (v[len - 1] == '\n' || v[len - 1] == 0)) len--;
    const char *nl = memchr(v, '\n', (size_t)len);
    lua_pushlstring(L, v, nl ? (size_t)(nl - v) : (size_t)len);
    lua_setfield(L, mod, "library");
  }
  lm_nccl_open(L);
  lm_open_lua(L, mod);
  lua_settop(L, mod);
  return 1;
}
