/*
** test_blas_threads.c: kjit.cuda.blas from several lua_States on different
** pthreads at once, on the driver path against the mock driver and mock
** cuBLAS (tests/c/mock_libcuda.c, mock_libcublas.c, loaded through
** KJIT_LIBCUDA and KJIT_CUBLAS, set here before kjit loads them). Each
** thread multiplies on its own stream and checks the results; the mock
** cuBLAS checks that every call comes with its handle's context current and
** a live stream of that device. Then: one handle was made per thread (the
** handles are per OS thread), and all of them were destroyed when their
** threads ended. Also kjit.blas (OpenBLAS) from the same threads.
**
** Usage: test_blas_threads [results-file]   (the build dir is the results
** file's grandparent: <build>/test-results/<name>.txt; default build/)
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

#define NTHREADS 3

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static int npass, nfail;

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

/* K differs per thread: C = (K I) B = K B, on the thread's own stream;
** kjit.blas checks the same on the host. Returns true or false, why. */
static const char *script =
  "local K = ...\n"
  "local kjit = require 'kjit'\n"
  "local cuda = kjit.cuda\n"
  "local s = cuda.stream()\n"
  "for round = 1, 20 do\n"
  "  local n = 4 + round\n"
  "  local a, b = kjit.zeros({ n, n }), kjit.zeros({ n, n })\n"
  "  for i = 1, n do a[i][i] = K; for j = 1, n do b[i][j] = i - j end end\n"
  "  local dc = cuda.blas.gemm(cuda.to_device(a), cuda.to_device(b), nil, { stream = s })\n"
  "  s:synchronize()\n"
  "  local c, h = dc:copy_to_host(), kjit.blas.gemm(a, b)\n"
  "  for i = 1, n do for j = 1, n do\n"
  "    if c[i][j] ~= K * (i - j) then return false, 'cuda.blas: c[' .. i .. '][' .. j .. '] = ' .. c[i][j] end\n"
  "    if h[i][j] ~= K * (i - j) then return false, 'blas: h[' .. i .. '][' .. j .. '] = ' .. h[i][j] end\n"
  "  end end\n"
  "  local x = cuda.to_device(kjit.array({ 3 * K, 4 * K }))\n"
  "  if cuda.blas.nrm2(x, { stream = s }) ~= 5 * K then return false, 'nrm2' end\n"
  "end\n"
  "return true\n";

static void *worker(void *arg) {
  int k = (int)(intptr_t)arg;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  int ok = luaL_loadstring(L, script) == LUA_OK;
  if (ok) {
    lua_pushinteger(L, k + 1);
    ok = lua_pcall(L, 1, 2, 0) == LUA_OK;
  }
  CHECK(ok && lua_toboolean(L, -2), "thread %d: %s", k,
        lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
  lua_close(L);
  return NULL;
}

int main(int argc, char **argv) {
  char build[1024] = "build", path[1200];
  if (argc > 1) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", argv[1]);
    snprintf(build, sizeof build, "%s", dirname(dirname(tmp)));
  }
  snprintf(path, sizeof path, "%s/libmockcuda.so", build);
  if (access(path, R_OK) != 0) {
    printf("SKIP test_blas_threads: no %s (build target mockcuda)\n", path);
    if (argc > 1) {
      FILE *f = fopen(argv[1], "w");
      if (f) { fprintf(f, "0 0 1\n"); fclose(f); }
    }
    return 0;
  }
  setenv("KJIT_LIBCUDA", path, 1);
  snprintf(path, sizeof path, "%s/libmockcublas.so", build);
  setenv("KJIT_CUBLAS", path, 1);
  unsetenv("KJIT_CUDASIM");
  unsetenv("MOCK_CUBLAS_FAIL");
  unsetenv("MOCK_CUDA_FAIL");

  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);

  /* kjit opened the mock cuBLAS: ask it */
  void *cb = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  CHECK(cb != NULL, "the mock cuBLAS was loaded (%s)", path);
  if (cb) {
    long (*creates)(void) = (long (*)(void))dlsym(cb, "mock_cublas_creates");
    long (*live)(void) = (long (*)(void))dlsym(cb, "mock_cublas_live_handles");
    long (*bad)(void) = (long (*)(void))dlsym(cb, "mock_cublas_bad_calls");
    CHECK(creates && live && bad, "mock_cublas_* entry points");
    if (creates && live && bad) {
      CHECK(creates() == NTHREADS, "handles made: %ld, want one per thread (%d)", creates(), NTHREADS);
      CHECK(live() == 0, "handles alive after the threads ended: %ld", live());
      CHECK(bad() == 0, "calls with a bad handle, context, stream or range: %ld", bad());
    }
  }

  printf("test_blas_threads: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}
