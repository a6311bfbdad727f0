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

/* A message buffer made from a kjit array (host or device) at some index. */
typedef struct LBuf {
  void *ptr;                /* what MPI reads or writes */
  int count;                /* elements of type */
  MPI_Datatype type;
  kjit_ext_buffer eb;       /* the array */
  int staged;               /* device array through host memory at ptr */
} LBuf;

/* 1 if the value at idx is a kjit array or device array. */
int lm_isarray(lua_State *L, int idx);
/* Fills b from the array at idx (argument argn of fname for messages).
** A device array that MPI cannot take directly gets host staging memory,
** a userdata pushed on the stack (nothing is pushed otherwise); with
** `in` set its contents are copied there first. */
void lm_getbuf(lua_State *L, int idx, LBuf *b, int in, const char *fname, int argn);
/* After MPI wrote into b: copies staging memory back to the device. */
void lm_putbuf(lua_State *L, LBuf *b);
/* Raises unless a and b have the same dtype and n * a's count == b's count. */
void lm_samekind(lua_State *L, const LBuf *a, const LBuf *b, int n, const char *fname,
                 const char *what);
/* The MPI_Op of a name ("sum", "max", "min", "prod") at idx for buffers of
** dtype t (bool: only max and min). */
MPI_Op lm_checkop(lua_State *L, int idx, kjit_dtype t, const char *fname);

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

/* The Lua-written part (lmpi_lua.c): compile_once, pool. */
void lm_open_lua(lua_State *L, int modidx);

#endif
