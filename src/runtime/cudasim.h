/*
** cudasim.h: the compiled CUDA simulator. A kernel compiled for the CPU
** (codegen/target_sim.c) runs block after block on the calling thread;
** within a block every thread is a fiber (fiber.h) when the kernel calls
** cuda.syncthreads (a barrier that counts exited threads as arrived, as
** Volta and later GPUs do) or a warp collective, else the threads run one
** after another. A kernel that syncs the grid (threaded & KI_USES_GRID,
** cuda_intrin.h) runs all its blocks at once, each thread a fiber, passes
** over the blocks in order; its grid barrier waits for every thread of the
** grid that has not exited.
** Shared memory is per block and zeroed; atomics are real CPU atomics.
*/
#ifndef KJIT_CUDASIM_H
#define KJIT_CUDASIM_H
#include <stdint.h>
#include "common/compile.h"

/* Registers the kjit_sim_* routines the KT_SIM code calls. */
void ksim_register_symbols(void);

/* A kernel that syncs the grid (cuda.cg.this_grid():sync()) runs every
** block at once, every thread a fiber: at most this many threads (the
** simulator's co-residency limit; both simulators refuse more). */
#define KSIM_GRID_MAX_THREADS 16384
#define KSIM_GRID_MAX_THREADS_S "16384"

/* Runs entry over the grid. args: the entry's argument slots. Returns 0;
** 1 when a thread failed (*err holds the first failure, tid/bid its
** thread); -1 when the simulator itself failed (*err->msg describes it:
** no threads, no memory). *printed: what the kernel's print calls wrote
** (malloc'd, NULL for nothing), for the caller to write out. */
int ksim_run(KEntry entry, int64_t *args, const unsigned grid[3], const unsigned block[3],
             size_t dynbytes, int threaded, KErr *err, unsigned tid[3], unsigned bid[3],
             char **printed);

/* numba-cuda's warp intrinsics in both simulators (this file's and the
** interpreted one, host/kernel_intrin.c). A warp is 32 consecutive threads
** of the block (x fastest, as on the GPU). A warp collective (shuffles,
** votes, matches, syncwarp, activemask) is a meeting: a lane waits until
** every lane of its mask that is still in the kernel and not waiting at
** cuda.syncthreads has reached a warp collective too; then each lane's
** result is computed from the values of the lanes of its mask that met
** (group). This is lockstep as far as results can tell, with divergence:
** lanes that left the kernel or wait at a block barrier do not take part
** (activemask() is the lanes that met). A shuffle from a lane that did not
** take part, or beyond the warp, gives the lane its own value.
** ksim_warp_op is that computation, for lane `lane` and op (target.h's
** KI_* numbering), from vals[32] (64-bit values; predicates 0/1). */
int64_t ksim_warp_op(int op, unsigned lane, uint32_t group, const int64_t *vals, int32_t b);

#endif
