/*
** cuda_intrin.h: the ops of numba-cuda's lane, warp and block intrinsics,
** one numbering for the code generator's intrin hook (codegen/target.h)
** and both simulators (runtime/cudasim.c, host/kernel_intrin.c).
** Values: v of the votes and barriers is the predicate (0/1).
*/
#ifndef KJIT_CUDA_INTRIN_H
#define KJIT_CUDA_INTRIN_H

enum {
  KI_LANEID, KI_LANEMASK_LT, KI_ACTIVEMASK, KI_SYNCWARP,
  KI_SHFL_IDX, KI_SHFL_UP, KI_SHFL_DOWN, KI_SHFL_XOR,
  KI_VOTE_ALL, KI_VOTE_ANY, KI_VOTE_UNI, KI_BALLOT, KI_MATCH_ANY, KI_MATCH_ALL,
  KI_BAR_POPC, KI_BAR_AND, KI_BAR_OR,
  KI_FENCE_BLOCK, KI_FENCE_SYSTEM, KI_NANOSLEEP,
  KI_GRID_SYNC,        /* cuda.cg.this_grid():sync(): every thread of the grid */
  KI__COUNT
};

/* Ops where the warp's lanes meet (cudasim.h). */
#define KI_IS_WARP(op) ((op) == KI_ACTIVEMASK || ((op) >= KI_SYNCWARP && (op) <= KI_MATCH_ALL))
/* A kernel's uses_sync bits (kcg.h): 1 it waits for other threads
** (syncthreads, warp collectives: fibers in the simulator); 2 it syncs
** the grid (a cooperative launch; the simulator runs every block at once) */
#define KI_USES_WAIT 1
#define KI_USES_GRID 2

#define KI_IS_BAR(op) ((op) >= KI_BAR_POPC && (op) <= KI_BAR_OR)

#endif
