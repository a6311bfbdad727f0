/*
** clock.h: the monotonic wall clock in milliseconds, for the times kjit
** reports (compile_ms, cache load times, simulated events, LLVM start-up).
*/
#ifndef KJIT_CLOCK_H
#define KJIT_CLOCK_H

#include <time.h>

static inline double k_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#endif
