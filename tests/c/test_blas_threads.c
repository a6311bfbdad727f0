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
#include "check_threads.h"

#define NTHREADS 3


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
  kt_check_script(kt_state(), script, k + 1, k);
  return NULL;
}

int main(int argc, char **argv) {
  char build[1024], path[1200];
  kt_build_dir(argc, argv, build, sizeof build);
  snprintf(path, sizeof path, "%s/libmockcuda.so", build);
  if (access(path, R_OK) != 0) {
    printf("SKIP test_blas_threads: no %s (build target mockcuda)\n", path);
    kt_result(argc, argv, 0, 0, 1);
    return 0;
  }
  setenv("KJIT_LIBCUDA", path, 1);
  snprintf(path, sizeof path, "%s/libmockcublas.so", build);
  setenv("KJIT_CUBLAS", path, 1);
  unsetenv("KJIT_CUDASIM");
  unsetenv("MOCK_CUBLAS_FAIL");
  unsetenv("MOCK_CUDA_FAIL");

  kt_run_threads(NTHREADS, worker);

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

  return kt_finish("test_blas_threads", argc, argv);
}
