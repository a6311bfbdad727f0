/*
** parallel.h: kjit.prange and the thread pool that runs its iterations
** (parallel.c). src/codegen/cg_prange.c emits the calls to kjit_rt_parallel_for.
*/
#ifndef KJIT_PARALLEL_H
#define KJIT_PARALLEL_H
#include <stdint.h>
#include "lua.h"
#include "common/compile.h"

/* Threads a pool may have, the caller included. */
#define KJIT_MAX_THREADS 64

/* An outlined prange body: runs iterations kbegin..kend-1 of the loop;
** returns 0, or 1 after filling *err. */
typedef int32_t (*KPrangeWorker)(void **env, int64_t kbegin, int64_t kend,
                                 int64_t chunk, KErr *err);

/* Runs count + 1 iterations (count as in a numeric for: unsigned) in at
** most KJIT_PRANGE_MAXCHUNKS chunks; *nchunks_out tells how many, for the
** caller to combine its reductions' partial results. Returns 0, or 1 with
** the error of the lowest failing chunk in *err. */
int32_t kjit_rt_parallel_for(KPrangeWorker worker, void **env, int64_t count,
                             KErr *err, int64_t *nchunks_out);

int kp_pool_size(void);          /* $KJIT_NUM_THREADS or the core count, <= 64 */
int kp_num_threads(void);        /* threads a loop uses now */
int kp_set_num_threads(int n);   /* 1..kp_pool_size(); -1 otherwise */

/* Registers prange, get_num_threads, set_num_threads and clock into the
** table at the top (prange also for the typers: ir/ir_builtins.h). */
void kp_open(lua_State *L);

#endif
