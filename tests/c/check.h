/*
** check.h: CHECK and its counts, for the C tests that run on one thread
** (test_threads.c counts under a lock of its own; the case-file tests use
** casetest.h). Included once, by a test's .c file.
*/
#ifndef KJIT_TEST_CHECK_H
#define KJIT_TEST_CHECK_H

#include <stdio.h>

static int npass, nfail;

/* CHECK(cond, fmt, ...): counts a pass, or prints "FAIL file:line: ..." */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      npass++;                                                                 \
    } else {                                                                   \
      nfail++;                                                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

#endif
