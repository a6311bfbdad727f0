/*
** lmpi.h: what the files of kjit.mpi share (see lmpi.c for the design).
*/
#ifndef KJIT_LMPI_H
#define KJIT_LMPI_H

#include <mpi.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit_ext.h"

extern const kjit_ext_api *lm_api;   /* kjit's extension C API */
extern int lm_cuda_aware;            /* device pointers go to MPI directly */

#define LM_COMM "kjit.mpi.comm"
typedef struct LComm {
  MPI_Comm c;
  int owned;        /* made by comm_split/dup: freed by __gc */
} LComm;

/* Raises "kjit.mpi: <what>: <MPI's message>" at the calling Lua line. */
int lm_error(lua_State *L, int rc, const char *what);
#define LM_CHECK(L, call, what) \
  do { int rc_ = (call); if (rc_ != MPI_SUCCESS) lm_error(L, rc_, what); } while (0)

/* Staging memory for a device array (lmpi_stage.c): a userdata on the
** stack (or held by a request) owning a block of the reuse pool. */
typedef struct LStage {
  void *p;
  size_t cap;
  int pinned;       /* page-locked (cuMemHostAlloc) */
  int held;         /* by a request: not given back when the call returns */
  unsigned gen;     /* the extension API's close_count when made */
} LStage;
/* Pushes staging memory of at least n bytes; device: for a device array of
** the driver (page-locked when the driver gives it). */
LStage *lm_stage(lua_State *L, size_t n, int device);
void lm_stage_release(LStage *s);
/* Gives back the staging memory at stack slots from..to (not held ones):
** every entry point runs it before returning. */
void lm_release_stack(lua_State *L, int from, int to);
void lm_stage_close(void);
int lm_staging_stats(lua_State *L);

/* A message buffer made from a kjit array (host or device) at some index. */
typedef struct LBuf {
  void *ptr;                /* what MPI reads or writes */
  int count;                /* elements of type */
  MPI_Datatype type;
  kjit_ext_buffer eb;       /* the array */
  int staged;               /* device array through host memory at ptr */
  int dev;                  /* a device array (staged or not) */
  LStage *stage;            /* the staging memory, when staged */
  void *stream;             /* copies go on this stream (NULL: default) */
} LBuf;

/* 1 if the value at idx is a kjit array or device array. */
int lm_isarray(lua_State *L, int idx);
/* Fills b from the array at idx (argument argn of fname for messages).
** A device array that MPI cannot take directly gets host staging memory,
** a userdata pushed on the stack (nothing is pushed otherwise); with
** `in` set its contents are copied there first. */
void lm_getbuf(lua_State *L, int idx, LBuf *b, int in, const char *fname, int argn);
/* The same, with the device copies on a stream (NULL: the default one). */
void lm_getbuf_s(lua_State *L, int idx, LBuf *b, int in, const char *fname, int argn,
                 void *stream);
/* After MPI wrote into b: copies staging memory back to the device. */
void lm_putbuf(lua_State *L, LBuf *b);
/* Raises unless a and b have the same dtype and n * a's count == b's count. */
void lm_samekind(lua_State *L, const LBuf *a, const LBuf *b, int n, const char *fname,
                 const char *what);
/* The MPI_Op of a name ("sum", "max", "min", "prod") at idx for buffers of
** dtype t (bool: only max and min). */
MPI_Op lm_checkop(lua_State *L, int idx, kjit_dtype t, const char *fname);
/* The same op as an index: 0 sum, 1 max, 2 min, 3 prod (checked as above). */
int lm_checkop_index(lua_State *L, int idx, kjit_dtype t, const char *fname);

/* Lua values as messages (lmpi_pack.c). */
typedef struct LPack { char *p; size_t n, cap; } LPack;
LPack *lm_pack_new(lua_State *L);                 /* pushes it (a userdata) */
void lm_pack(lua_State *L, int idx, LPack *b, const char *fname, int argn);
void lm_unpack(lua_State *L, const char *p, size_t n, const char *fname);   /* pushes */

/* Collectives (lmpi_coll.c): impl(L, comm, first argument's index). */
int lm_allreduce(lua_State *L, MPI_Comm c, int a);
int lm_reduce(lua_State *L, MPI_Comm c, int a);
int lm_bcast(lua_State *L, MPI_Comm c, int a);
int lm_gather(lua_State *L, MPI_Comm c, int a);
int lm_allgather(lua_State *L, MPI_Comm c, int a);
int lm_scatter(lua_State *L, MPI_Comm c, int a);
int lm_alltoall(lua_State *L, MPI_Comm c, int a);
int lm_reduce_scatter(lua_State *L, MPI_Comm c, int a);

/* NCCL (lmpi_nccl.c): collectives on device arrays of the driver when
** libnccl loads. */
enum { LM_NC_ALLREDUCE, LM_NC_REDUCE, LM_NC_BCAST, LM_NC_ALLGATHER, LM_NC_REDUCE_SCATTER };
/* Loads NCCL (once per process; collective over COMM_WORLD: every rank
** agrees on whether it is on). */
void lm_nccl_open(lua_State *L);
/* 1 when NCCL is on (the collectives must then agree per call). */
int lm_nccl_on(void);
/* Runs the collective with NCCL and returns 1, or returns 0 (nothing done)
** when some rank cannot (host arrays, the simulator, a dtype NCCL lacks):
** collective over c whenever lm_nccl_on(). send/recv: LBufs filled with
** lm_getbuf_nccl (recv may equal send: in place); op: index of
** sum/max/min/prod; root for reduce/bcast. */
int lm_nccl_coll(lua_State *L, MPI_Comm c, int kind, LBuf *send, LBuf *recv, int op, int root,
                 void *stream, const char *fname);
/* Whether this rank could use NCCL for a buffer (a driver device array of
** a dtype NCCL has; for reductions, a numeric one). */
int lm_nccl_fits(const LBuf *b, int reduction);
/* mpi.nccl([on]) */
int lm_nccl_info(lua_State *L);
/* Destroys the NCCL communicators made for c (all of them: MPI_COMM_NULL). */
void lm_nccl_forget(MPI_Comm c);
/* An LBuf describing the array at idx without staging it (for NCCL). */
void lm_describe(lua_State *L, int idx, LBuf *b, const char *fname, int argn);

/* The Lua-written part (lmpi_lua.c): compile_once, pool. */
void lm_open_lua(lua_State *L, int modidx);

#endif
