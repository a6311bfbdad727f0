/*
** cudasim.h: the compiled CUDA simulator. A kernel compiled for the CPU
** (codegen/target_sim.c) runs block after block; within a block every
** thread is an OS thread when the kernel calls cuda.syncthreads (a
** barrier that counts exited threads as arrived, as Volta and later GPUs
** do), else the threads run one after another on the calling thread.
** Shared memory is per block and zeroed; atomics are real CPU atomics.
*/
#ifndef KJIT_CUDASIM_H
#define KJIT_CUDASIM_H
#include <stdint.h>
#include "common/compile.h"

/* Registers the kjit_sim_* routines the KT_SIM code calls. */
void ksim_register_symbols(void);

/* Runs entry over the grid. args: the entry's argument slots. Returns 0;
** 1 when a thread failed (*err holds the first failure, tid/bid its
** thread); -1 when the simulator itself failed (*err->msg describes it:
** no threads, no memory). */
int ksim_run(KEntry entry, int64_t *args, const unsigned grid[3], const unsigned block[3],
             size_t dynbytes, int threaded, KErr *err, unsigned tid[3], unsigned bid[3]);

#endif
