/*
** cudasim_warp.c: what a warp collective gives each lane, in both
** simulators (cudasim.h: ksim_warp_op), with numba-cuda's semantics.
*/
#include <stdint.h>
#include "common/cuda_intrin.h"
#include "runtime/cudasim.h"

int64_t ksim_warp_op(int op, unsigned lane, uint32_t group, const int64_t *vals, int32_t b) {
  int64_t own = vals[lane];
  int src;
  switch (op) {
  case KI_SHFL_IDX: src = (int)((uint32_t)b & 31u); break;
  case KI_SHFL_UP: src = b < 0 || b > 31 ? -1 : (int)lane - b; break;
  case KI_SHFL_DOWN: src = b < 0 || b > 31 ? 32 : (int)lane + b; break;
  case KI_SHFL_XOR: src = (int)(lane ^ (uint32_t)b); break;
  case KI_VOTE_ALL: case KI_VOTE_ANY: case KI_VOTE_UNI: case KI_BALLOT: {
    uint32_t yes = 0;
    for (unsigned i = 0; i < 32; i++)
      if ((group >> i & 1u) && vals[i]) yes |= 1u << i;
    if (op == KI_BALLOT) return yes;
    if (op == KI_VOTE_ALL) return yes == group;
    if (op == KI_VOTE_ANY) return yes != 0;
    return yes == group || yes == 0;
  }
  case KI_MATCH_ANY: case KI_MATCH_ALL: {
    uint32_t same = 0;
    for (unsigned i = 0; i < 32; i++)
      if ((group >> i & 1u) && vals[i] == own) same |= 1u << i;
    if (op == KI_MATCH_ANY) return same;
    return same == group ? group : 0;
  }
  case KI_ACTIVEMASK: return group;
  default: return 0;   /* syncwarp */
  }
  if (src < 0 || src > 31 || !(group >> src & 1u)) return own;
  return vals[src];
}
