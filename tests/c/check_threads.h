/*
** check_threads.h: what the C tests that run kjit on several threads at
** once share (test_threads.c, test_blas_threads.c, test_multigpu_threads.c):
** CHECK counting under a lock, a Lua state with kjit opened, running a
** script in it and checking what it returns, starting and joining the
** threads, the build directory and the results file. Included once, by a
** test's .c file (after pthread.h, lua.h, lauxlib.h, lualib.h and kjit.h).
** Tests on one thread use check.h.
*/
#ifndef KJIT_TEST_CHECK_THREADS_H
#define KJIT_TEST_CHECK_THREADS_H

#include <libgen.h>
#include <stdint.h>
#include <stdio.h>

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static int npass, nfail;

/* CHECK(cond, fmt, ...): counts a pass, or prints "FAIL file:line: ...",
** from any thread */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    int ok_ = (cond) != 0;                                                     \
    pthread_mutex_lock(&count_lock);                                           \
    if (ok_) npass++;                                                          \
    else {                                                                     \
      nfail++;                                                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
    pthread_mutex_unlock(&count_lock);                                         \
  } while (0)

/* A new state with the standard libraries and kjit (as require "kjit"),
** or NULL. */
static inline lua_State *kt_state(void) {
  lua_State *L = luaL_newstate();
  if (L == NULL) return NULL;
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  return L;
}

/* Runs script in L with the argument arg; it must return true (or false
** and why): a CHECK naming thread k. Closes L. */
static inline void kt_check_script(lua_State *L, const char *script, lua_Integer arg, int k) {
  int ok = L != NULL && luaL_loadstring(L, script) == LUA_OK;
  if (ok) {
    lua_pushinteger(L, arg);
    ok = lua_pcall(L, 1, 2, 0) == LUA_OK;
  }
  CHECK(ok && lua_toboolean(L, -2), "thread %d: %s", k,
        L && lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
  if (L) lua_close(L);
}

/* Runs fn((void *)i) on n threads (i = 0..n-1) and waits for them all;
** -1 (and a FAIL) if a thread could not be started. */
static inline int kt_run_threads(int n, void *(*fn)(void *)) {
  pthread_t th[64];
  int started = 0;
  if (n > 64) n = 64;
  while (started < n && pthread_create(&th[started], NULL, fn, (void *)(intptr_t)started) == 0)
    started++;
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  CHECK(started == n, "pthread_create: %d of %d threads started", started, n);
  return started == n ? 0 : -1;
}

/* The build directory: that of the results file (argv[1],
** <build>/test-results/<name>.txt), else "build". */
static inline void kt_build_dir(int argc, char **argv, char *build, size_t n) {
  char tmp[1024];
  snprintf(build, n, "build");
  if (argc < 2) return;
  snprintf(tmp, sizeof tmp, "%s", argv[1]);
  snprintf(build, n, "%s", dirname(dirname(tmp)));
}

/* Writes "passed failed skipped\n" to the results file (argv[1]), if any. */
static inline void kt_result(int argc, char **argv, int pass, int fail, int skip) {
  if (argc < 2) return;
  FILE *f = fopen(argv[1], "w");
  if (f) { fprintf(f, "%d %d %d\n", pass, fail, skip); fclose(f); }
}

/* The end of main: the counts, printed and written; the exit status. */
static inline int kt_finish(const char *name, int argc, char **argv) {
  printf("%s: %d passed, %d failed\n", name, npass, nfail);
  kt_result(argc, argv, npass, nfail, 0);
  return nfail != 0;
}

#endif
