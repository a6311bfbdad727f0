/*
** lmpi_coll.c: collectives of kjit.mpi. Arrays (host or device) are given
** to MPI in place; the receiving array is filled in place (non-root ranks
** pass nil where they supply nothing). Lua values take the packed path
** (lmpi_pack.c): counts first, then the bytes (the v-variants of MPI).
** Numbers in allreduce/reduce stay numbers: integers as int64 (exact, and
** wrapping around as Lua's integers do), floats as doubles; all ranks must
** pass the same subtype, which is checked.
*/
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include "lmpi.h"

static int comm_size(lua_State *L, MPI_Comm c) {
  int n;
  LM_CHECK(L, MPI_Comm_size(c, &n), "size");
  return n;
}

static int comm_rank(lua_State *L, MPI_Comm c) {
  int r;
  LM_CHECK(L, MPI_Comm_rank(c, &r), "rank");
  return r;
}

static int check_root(lua_State *L, int idx, MPI_Comm c) {
  lua_Integer r = luaL_checkinteger(L, idx);
  if (r < 0 || r >= comm_size(L, c)) luaL_argerror(L, idx, "root is not a rank of the communicator");
  return (int)r;
}

/* Packs the value at idx into a new LPack (pushed); checks its size. */
static LPack *pack1(lua_State *L, int idx, const char *fname, int argn) {
  LPack *p = lm_pack_new(L);
  lm_pack(L, idx, p, fname, argn);
  if (p->n > INT_MAX) luaL_error(L, "%s: the value is too large for one message", fname);
  return p;
}

/* Displacements of n counts; raises when they pass MPI's int. */
static int *displs(lua_State *L, const int *counts, int n, const char *fname) {
  int *d = lua_newuserdatauv(L, (size_t)n * sizeof(int) + 1, 0);
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    d[i] = (int)at;
    at += counts[i];
    if (at > INT_MAX) luaL_error(L, "%s: more than 2 GiB of Lua values in one call", fname);
  }
  return d;
}

/* Pushes a table of the n packed values at buf (counts/displs). */
static void unpack_all(lua_State *L, const char *buf, const int *counts, const int *d, int n,
                       const char *fname) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lm_unpack(L, buf + d[i], (size_t)counts[i], fname);
    lua_rawseti(L, -2, i + 1);
  }
}

/* An optional stream argument (device arrays: their copies, or NCCL's
** collective, go on it). */
static void *opt_stream(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : lm_api->tostream(L, idx);
}

static int *int_array(lua_State *L, int n) {
  return lua_newuserdatauv(L, (size_t)n * sizeof(int) + 1, 0);
}

/* ---- reductions ------------------------------------------------------------------- */

/* Numbers: checks every rank passed the same subtype; returns isint. */
static int same_subtype(lua_State *L, MPI_Comm c, int idx, const char *fname) {
  int isint = lua_isinteger(L, idx);
  int in[2] = { isint, -isint }, out[2];
  LM_CHECK(L, MPI_Allreduce(in, out, 2, MPI_INT, MPI_MAX, c), fname);
  if (out[0] + out[1] != 0)
    luaL_error(L, "%s: some ranks passed an integer and others a float: convert first "
               "(math.tointeger(x) or x + 0.0)", fname);
  return isint;
}

/* allreduce(x, op [, out [, stream]]) */
int lm_allreduce(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 3);   /* staging memory goes above the arguments */
  if (lua_type(L, a) == LUA_TNUMBER) {
    int isint = same_subtype(L, c, a, "allreduce");
    MPI_Op op = lm_checkop(L, a + 1, isint ? KJIT_I64 : KJIT_F64, "allreduce");
    if (isint) {
      int64_t v = lua_tointeger(L, a), r;
      LM_CHECK(L, MPI_Allreduce(&v, &r, 1, MPI_INT64_T, op, c), "allreduce");
      lua_pushinteger(L, (lua_Integer)r);
    } else {
      double v = lua_tonumber(L, a), r;
      LM_CHECK(L, MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, op, c), "allreduce");
      lua_pushnumber(L, r);
    }
    return 1;
  }
  LBuf x, o;
  void *stream = opt_stream(L, a + 3);
  int has_out = !lua_isnoneornil(L, a + 2);
  if (lm_nccl_on()) {
    lm_describe(L, a, &x, "allreduce", 1);
    int k = lm_checkop_index(L, a + 1, x.eb.dtype, "allreduce");
    if (has_out) {
      lm_describe(L, a + 2, &o, "allreduce", 3);
      lm_samekind(L, &x, &o, 1, "allreduce", "the result array");
    }
    if (lm_nccl_coll(L, c, LM_NC_ALLREDUCE, &x, has_out ? &o : NULL, k, 0, stream, "allreduce")) {
      lua_pushvalue(L, has_out ? a + 2 : a);
      return 1;
    }
  }
  lm_getbuf_s(L, a, &x, 1, "allreduce", 1, stream);
  MPI_Op op = lm_checkop(L, a + 1, x.eb.dtype, "allreduce");
  if (!has_out) {
    LM_CHECK(L, MPI_Allreduce(MPI_IN_PLACE, x.ptr, x.count, x.type, op, c), "allreduce");
    lm_putbuf(L, &x);
    lua_pushvalue(L, a);
    return 1;
  }
  lm_getbuf_s(L, a + 2, &o, 0, "allreduce", 3, stream);
  lm_samekind(L, &x, &o, 1, "allreduce", "the result array");
  LM_CHECK(L, MPI_Allreduce(x.ptr, o.ptr, x.count, x.type, op, c), "allreduce");
  lm_putbuf(L, &o);
  lua_pushvalue(L, a + 2);
  return 1;
}

/* reduce(x, op, root [, out [, stream]]) */
int lm_reduce(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 4);   /* staging memory goes above the arguments */
  int root = check_root(L, a + 2, c), me = comm_rank(L, c);
  if (lua_type(L, a) == LUA_TNUMBER) {
    int isint = same_subtype(L, c, a, "reduce");
    MPI_Op op = lm_checkop(L, a + 1, isint ? KJIT_I64 : KJIT_F64, "reduce");
    if (isint) {
      int64_t v = lua_tointeger(L, a), r = 0;
      LM_CHECK(L, MPI_Reduce(&v, &r, 1, MPI_INT64_T, op, root, c), "reduce");
      if (me == root) lua_pushinteger(L, (lua_Integer)r); else lua_pushnil(L);
    } else {
      double v = lua_tonumber(L, a), r = 0;
      LM_CHECK(L, MPI_Reduce(&v, &r, 1, MPI_DOUBLE, op, root, c), "reduce");
      if (me == root) lua_pushnumber(L, r); else lua_pushnil(L);
    }
    return 1;
  }
  LBuf x, o;
  void *stream = opt_stream(L, a + 4);
  int has_out = me == root && !lua_isnoneornil(L, a + 3);
  if (lm_nccl_on()) {
    lm_describe(L, a, &x, "reduce", 1);
    int k = lm_checkop_index(L, a + 1, x.eb.dtype, "reduce");
    if (has_out) {
      lm_describe(L, a + 3, &o, "reduce", 4);
      lm_samekind(L, &x, &o, 1, "reduce", "the result array");
    }
    if (lm_nccl_coll(L, c, LM_NC_REDUCE, &x, has_out ? &o : NULL, k, root, stream, "reduce")) {
      if (me != root) lua_pushnil(L);
      else lua_pushvalue(L, has_out ? a + 3 : a);
      return 1;
    }
  }
  lm_getbuf_s(L, a, &x, 1, "reduce", 1, stream);
  MPI_Op op = lm_checkop(L, a + 1, x.eb.dtype, "reduce");
  if (me != root) {
    LM_CHECK(L, MPI_Reduce(x.ptr, NULL, x.count, x.type, op, root, c), "reduce");
    lua_pushnil(L);
    return 1;
  }
  if (lua_isnoneornil(L, a + 3)) {
    LM_CHECK(L, MPI_Reduce(MPI_IN_PLACE, x.ptr, x.count, x.type, op, root, c), "reduce");
    lm_putbuf(L, &x);
    lua_pushvalue(L, a);
    return 1;
  }
  lm_getbuf_s(L, a + 3, &o, 0, "reduce", 4, stream);
  lm_samekind(L, &x, &o, 1, "reduce", "the result array");
  LM_CHECK(L, MPI_Reduce(x.ptr, o.ptr, x.count, x.type, op, root, c), "reduce");
  lm_putbuf(L, &o);
  lua_pushvalue(L, a + 3);
  return 1;
}

/* ---- bcast(x, root) ---------------------------------------------------------------- */

/* bcast(x, root [, stream]) */
int lm_bcast(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int root = check_root(L, a + 1, c), me = comm_rank(L, c);
  if (lm_isarray(L, a)) {
    LBuf x;
    void *stream = opt_stream(L, a + 2);
    if (lm_nccl_on()) {
      lm_describe(L, a, &x, "bcast", 1);
      if (lm_nccl_coll(L, c, LM_NC_BCAST, &x, NULL, 0, root, stream, "bcast")) {
        lua_pushvalue(L, a);
        return 1;
      }
    }
    lm_getbuf_s(L, a, &x, me == root, "bcast", 1, stream);
    LM_CHECK(L, MPI_Bcast(x.ptr, x.count, x.type, root, c), "bcast");
    if (me != root) lm_putbuf(L, &x);
    lua_pushvalue(L, a);
    return 1;
  }
  int64_t n = 0;
  LPack *p = NULL;
  if (me == root) { p = pack1(L, a, "bcast", 1); n = (int64_t)p->n; }
  LM_CHECK(L, MPI_Bcast(&n, 1, MPI_INT64_T, root, c), "bcast");
  if (n > INT_MAX || n < 0) luaL_error(L, "bcast: the value is too large for one message");
  char *buf = me == root ? p->p : lua_newuserdatauv(L, (size_t)n + 1, 0);
  LM_CHECK(L, MPI_Bcast(buf, (int)n, MPI_BYTE, root, c), "bcast");
  if (me == root) lua_pushvalue(L, a);
  else lm_unpack(L, buf, (size_t)n, "bcast");
  return 1;
}

/* ---- gather(send, recv, root), allgather(send, recv) --------------------------------- */

int lm_gather(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int root = check_root(L, a + 2, c), me = comm_rank(L, c), n = comm_size(L, c);
  if (lm_isarray(L, a)) {
    LBuf s, r;
    lm_getbuf(L, a, &s, 1, "gather", 1);
    if (me != root) {
      LM_CHECK(L, MPI_Gather(s.ptr, s.count, s.type, NULL, 0, s.type, root, c), "gather");
      lua_pushnil(L);
      return 1;
    }
    lm_getbuf(L, a + 1, &r, 0, "gather", 2);
    lm_samekind(L, &s, &r, n, "gather", "the receiving array");
    LM_CHECK(L, MPI_Gather(s.ptr, s.count, s.type, r.ptr, s.count, r.type, root, c), "gather");
    lm_putbuf(L, &r);
    lua_pushvalue(L, a + 1);
    return 1;
  }
  if (!lua_isnil(L, a + 1))
    luaL_error(L, "gather: to gather into an array, send an array (Lua values are gathered "
               "into a table: pass nil as the receiving array)");
  LPack *p = pack1(L, a, "gather", 1);
  int mine = (int)p->n;
  int *counts = me == root ? int_array(L, n) : NULL;
  LM_CHECK(L, MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, root, c), "gather");
  if (me != root) {
    LM_CHECK(L, MPI_Gatherv(p->p, mine, MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, root, c), "gather");
    lua_pushnil(L);
    return 1;
  }
  int *d = displs(L, counts, n, "gather");
  char *buf = lua_newuserdatauv(L, (size_t)d[n - 1] + (size_t)counts[n - 1] + 1, 0);
  LM_CHECK(L, MPI_Gatherv(p->p, mine, MPI_BYTE, buf, counts, d, MPI_BYTE, root, c), "gather");
  unpack_all(L, buf, counts, d, n, "gather");
  return 1;
}

/* allgather(send, recv [, stream]) */
int lm_allgather(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int n = comm_size(L, c);
  if (lm_isarray(L, a)) {
    LBuf s, r;
    void *stream = opt_stream(L, a + 2);
    if (lm_nccl_on()) {
      lm_describe(L, a, &s, "allgather", 1);
      lm_describe(L, a + 1, &r, "allgather", 2);
      lm_samekind(L, &s, &r, n, "allgather", "the receiving array");
      if (lm_nccl_coll(L, c, LM_NC_ALLGATHER, &s, &r, 0, 0, stream, "allgather")) {
        lua_pushvalue(L, a + 1);
        return 1;
      }
    }
    lm_getbuf_s(L, a, &s, 1, "allgather", 1, stream);
    lm_getbuf_s(L, a + 1, &r, 0, "allgather", 2, stream);
    lm_samekind(L, &s, &r, n, "allgather", "the receiving array");
    LM_CHECK(L, MPI_Allgather(s.ptr, s.count, s.type, r.ptr, s.count, r.type, c), "allgather");
    lm_putbuf(L, &r);
    lua_pushvalue(L, a + 1);
    return 1;
  }
  if (!lua_isnoneornil(L, a + 1))
    luaL_error(L, "allgather: to gather into an array, send an array (Lua values are "
               "gathered into a table: pass nil as the receiving array)");
  LPack *p = pack1(L, a, "allgather", 1);
  int mine = (int)p->n;
  int *counts = int_array(L, n);
  LM_CHECK(L, MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, c), "allgather");
  int *d = displs(L, counts, n, "allgather");
  char *buf = lua_newuserdatauv(L, (size_t)d[n - 1] + (size_t)counts[n - 1] + 1, 0);
  LM_CHECK(L, MPI_Allgatherv(p->p, mine, MPI_BYTE, buf, counts, d, MPI_BYTE, c), "allgather");
  unpack_all(L, buf, counts, d, n, "allgather");
  return 1;
}

/* ---- scatter(send, recv, root), alltoall(send, recv) --------------------------------- */

/* Packs t[1..n] (the table at idx) one after the other into a new LPack
** (pushed), their sizes into counts. */
static LPack *pack_seq(lua_State *L, int idx, int n, int *counts, const char *fname) {
  if (!lua_istable(L, idx))
    luaL_error(L, "%s: Lua values go in a table of one value per rank (got %s)", fname,
               luaL_typename(L, idx));
  LPack *p = lm_pack_new(L);
  for (int i = 0; i < n; i++) {
    size_t before = p->n;
    lua_geti(L, idx, i + 1);
    if (lua_isnil(L, -1)) luaL_error(L, "%s: the table has no value for rank %d", fname, i);
    lm_pack(L, -1, p, fname, 1);
    lua_pop(L, 1);
    if (p->n - before > INT_MAX || p->n > INT_MAX)
      luaL_error(L, "%s: more than 2 GiB of Lua values in one call", fname);
    counts[i] = (int)(p->n - before);
  }
  return p;
}

int lm_scatter(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 2);   /* staging memory goes above the arguments */
  int root = check_root(L, a + 2, c), me = comm_rank(L, c), n = comm_size(L, c);
  if (lm_isarray(L, a + 1)) {
    LBuf s, r;
    lm_getbuf(L, a + 1, &r, 0, "scatter", 2);
    if (me == root) {
      lm_getbuf(L, a, &s, 1, "scatter", 1);
      lm_samekind(L, &r, &s, n, "scatter", "the array sent");
      LM_CHECK(L, MPI_Scatter(s.ptr, r.count, s.type, r.ptr, r.count, r.type, root, c), "scatter");
    } else {
      LM_CHECK(L, MPI_Scatter(NULL, 0, r.type, r.ptr, r.count, r.type, root, c), "scatter");
    }
    lm_putbuf(L, &r);
    lua_pushvalue(L, a + 1);
    return 1;
  }
  if (!lua_isnoneornil(L, a + 1))
    luaL_error(L, "bad argument #2 to 'scatter' (kjit array, or nil to receive a Lua value, "
               "expected, got %s)", luaL_typename(L, a + 1));
  int *counts = NULL, *d = NULL, mine = 0;
  LPack *p = NULL;
  if (me == root) {
    counts = int_array(L, n);
    p = pack_seq(L, a, n, counts, "scatter");
    d = displs(L, counts, n, "scatter");
  }
  LM_CHECK(L, MPI_Scatter(counts, 1, MPI_INT, &mine, 1, MPI_INT, root, c), "scatter");
  char *buf = lua_newuserdatauv(L, (size_t)mine + 1, 0);
  LM_CHECK(L, MPI_Scatterv(p ? p->p : NULL, counts, d, MPI_BYTE, buf, mine, MPI_BYTE, root, c),
           "scatter");
  lm_unpack(L, buf, (size_t)mine, "scatter");
  return 1;
}

int lm_alltoall(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 1);   /* staging memory goes above the arguments */
  int n = comm_size(L, c);
  if (lm_isarray(L, a)) {
    LBuf s, r;
    lm_getbuf(L, a, &s, 1, "alltoall", 1);
    lm_getbuf(L, a + 1, &r, 0, "alltoall", 2);
    lm_samekind(L, &s, &r, 1, "alltoall", "the receiving array");
    if (s.count % n != 0)
      luaL_error(L, "alltoall: %d elements do not split evenly among %d ranks", s.count, n);
    int k = s.count / n;
    LM_CHECK(L, MPI_Alltoall(s.ptr, k, s.type, r.ptr, k, r.type, c), "alltoall");
    lm_putbuf(L, &r);
    lua_pushvalue(L, a + 1);
    return 1;
  }
  if (!lua_isnoneornil(L, a + 1))
    luaL_error(L, "alltoall: to receive into an array, send an array (Lua values come back "
               "in a table: pass nil as the receiving array)");
  int *sc = int_array(L, n), *rc = int_array(L, n);
  LPack *p = pack_seq(L, a, n, sc, "alltoall");
  int *sd = displs(L, sc, n, "alltoall");
  LM_CHECK(L, MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, c), "alltoall");
  int *rd = displs(L, rc, n, "alltoall");
  char *buf = lua_newuserdatauv(L, (size_t)rd[n - 1] + (size_t)rc[n - 1] + 1, 0);
  LM_CHECK(L, MPI_Alltoallv(p->p, sc, sd, MPI_BYTE, buf, rc, rd, MPI_BYTE, c), "alltoall");
  unpack_all(L, buf, rc, rd, n, "alltoall");
  return 1;
}

/* ---- reduce_scatter(send, recv, op [, stream]) ---------------------------------------- */

/* MPI_Reduce_scatter_block: send holds size x recv's elements; rank i gets
** the reduction of block i. Arrays only. */
int lm_reduce_scatter(lua_State *L, MPI_Comm c, int a) {
  lua_settop(L, a + 3);   /* staging memory goes above the arguments */
  int n = comm_size(L, c);
  if (!lm_isarray(L, a) || !lm_isarray(L, a + 1))
    luaL_error(L, "reduce_scatter: kjit arrays expected (send and receive)");
  LBuf s, r;
  void *stream = opt_stream(L, a + 3);
  lm_describe(L, a, &s, "reduce_scatter", 1);
  lm_describe(L, a + 1, &r, "reduce_scatter", 2);
  int k = lm_checkop_index(L, a + 2, s.eb.dtype, "reduce_scatter");
  lm_samekind(L, &r, &s, n, "reduce_scatter", "the array sent");
  if (lm_nccl_on() &&
      lm_nccl_coll(L, c, LM_NC_REDUCE_SCATTER, &s, &r, k, 0, stream, "reduce_scatter")) {
    lua_pushvalue(L, a + 1);
    return 1;
  }
  lm_getbuf_s(L, a, &s, 1, "reduce_scatter", 1, stream);
  lm_getbuf_s(L, a + 1, &r, 0, "reduce_scatter", 2, stream);
  MPI_Op op = lm_checkop(L, a + 2, s.eb.dtype, "reduce_scatter");
  LM_CHECK(L, MPI_Reduce_scatter_block(s.ptr, r.ptr, r.count, s.type, op, c), "reduce_scatter");
  lm_putbuf(L, &r);
  lua_pushvalue(L, a + 1);
  return 1;
}
