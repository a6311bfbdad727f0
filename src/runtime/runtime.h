/*
** runtime.h: helpers called by compiled code (registered with the JIT by
** name) and the text of run-time errors.
*/
#ifndef KJIT_RUNTIME_H
#define KJIT_RUNTIME_H
#include <stdint.h>
#include "lua.h"
#include "common/compile.h"

int32_t kjit_rt_cmp_int_float(int32_t op, int64_t i, double f);
int32_t kjit_rt_forlimit(double lim, int64_t init, int64_t step, int64_t *out);

/* Lowest stack address compiled frames may use here: on a stack declared
** with krt_set_stack, the thread's own stack, or another one (see
** runtime.c). Cheap: thread-local reads and compares. */
uint64_t krt_stack_limit(void);

/* kjit_set_stack_limit: declares (base != NULL) or forgets the C stack
** [base, base + size) of the calling thread. Returns 0, or -1 if size is
** 0 or the range wraps. */
int krt_set_stack(const void *base, size_t size);

/* Pushes "file:line: message" for the error compiled code reported. */
void krt_push_error(lua_State *L, const KErr *e);

#endif
