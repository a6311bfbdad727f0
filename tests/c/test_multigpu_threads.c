/*
** test_multigpu_threads.c: the current device is per OS thread. Two
** pthreads, each with its own lua_State, against the mock driver with two
** devices (tests/c/mock_libcuda.c through KJIT_LIBCUDA; the mock cuBLAS
** through KJIT_CUBLAS): thread k selects device k, then both work at once
** (a barrier between steps, so each step of one thread runs while the
** other holds its own device): each allocates, launches a kernel, runs a
** gemm and copies back, and must find its own device current, its arrays
** on it, and the driver's context current on the thread that of its
** device. The mock's call log (MOCK_CUDA_LOG) then shows every allocation
** and launch of one thread in one device's context, a different one for
** each thread, and one module per (kernel, device).
**
** Usage: test_multigpu_threads [results-file]   (the build dir is the
** results file's grandparent; default build/)
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

#define NTHREADS 2

static pthread_barrier_t barrier;
static int (*mock_current_device)(void);


/* barrier(): both threads meet (a Lua global in each state) */
static int l_barrier(lua_State *L) {
  (void)L;
  pthread_barrier_wait(&barrier);
  return 0;
}

/* driver_device(): the device of the context the mock has current on
** this thread (-1: none) */
static int l_driver_device(lua_State *L) {
  lua_pushinteger(L, mock_current_device ? mock_current_device() : -2);
  return 1;
}

/* Returns true, or false and why. */
static const char *script =
  "local dev = ...\n"
  "local kjit = require 'kjit'\n"
  "local cuda = kjit.cuda\n"
  "local function check(c, what) if not c then error(what, 2) end end\n"
  "check(cuda.current_device() == 0, 'a new thread starts on device 0')\n"
  "cuda.select_device(dev)\n"
  "barrier()                  -- both have selected: each must still see its own\n"
  "check(cuda.current_device() == dev, 'current_device after the other thread selected')\n"
  "check(driver_device() == dev, 'the driver context current on this thread: ' .. driver_device())\n"
  "local k = cuda.jit(function(x, out) local i = cuda.grid(1) if i <= #x then out[i] = 2 * x[i] end end)\n"
  "local a = kjit.array({ { 1, 2 }, { 3, 4 } })\n"
  "for round = 1, 5 do\n"
  "  barrier()\n"
  "  local dx = cuda.to_device(kjit.arange(1, 9, 'f32'))\n"
  "  check(dx.device == dev, 'array on device ' .. dx.device)\n"
  "  local out = cuda.device_array_like(dx)\n"
  "  k[{ 1, 32 }](dx, out)\n"
  "  local da = cuda.to_device(a)\n"
  "  local c = cuda.blas.gemm(da, da)\n"
  "  check(c.device == dev, 'gemm result on device ' .. c.device)\n"
  "  local h = c:copy_to_host()\n"
  "  check(h[1][1] == 7 and h[2][2] == 22, 'gemm values')\n"
  "  barrier()\n"
  "  check(cuda.current_device() == dev, 'round ' .. round .. ': current_device')\n"
  "  check(driver_device() == dev, 'round ' .. round .. ': driver context')\n"
  "  cuda.synchronize()\n"
  "end\n"
  "do\n"
  "  local _ <close> = cuda.use_device(1 - dev)\n"
  "  check(cuda.current_device() == 1 - dev, 'use_device')\n"
  "end\n"
  "check(cuda.current_device() == dev, 'after use_device')\n"
  "collectgarbage(); collectgarbage(); cuda.synchronize()\n"
  "return true\n";

static void *worker(void *arg) {
  int k = (int)(intptr_t)arg;
  lua_State *L = kt_state();
  if (L) {
    lua_register(L, "barrier", l_barrier);
    lua_register(L, "driver_device", l_driver_device);
  }
  kt_check_script(L, script, k, k);
  return NULL;
}

int main(int argc, char **argv) {
  char build[1024], path[1200], logpath[] = "/tmp/kjit_mgpu_log_XXXXXX";
  kt_build_dir(argc, argv, build, sizeof build);
  snprintf(path, sizeof path, "%s/libmockcuda.so", build);
  if (access(path, R_OK) != 0) {
    printf("SKIP test_multigpu_threads: no %s (build target mockcuda)\n", path);
    kt_result(argc, argv, 0, 0, 1);
    return 0;
  }
  int fd = mkstemp(logpath);
  if (fd >= 0) close(fd);
  setenv("KJIT_LIBCUDA", path, 1);
  setenv("MOCK_CUDA_DEVICES", "2", 1);
  setenv("MOCK_CUDA_LOG", logpath, 1);
  unsetenv("KJIT_CUDASIM");
  unsetenv("MOCK_CUDA_FAIL");
  unsetenv("MOCK_CUBLAS_FAIL");
  unsetenv("MOCK_CUDA_ERRREC");
  void *mock = dlopen(path, RTLD_NOW | RTLD_GLOBAL);   /* the one kjit will open */
  if (mock) mock_current_device = (int (*)(void))dlsym(mock, "mock_cuda_current_device");
  CHECK(mock_current_device != NULL, "mock_cuda_current_device in %s", path);
  snprintf(path, sizeof path, "%s/libmockcublas.so", build);
  setenv("KJIT_CUBLAS", path, 1);

  pthread_barrier_init(&barrier, NULL, NTHREADS);
  kt_run_threads(NTHREADS, worker);
  pthread_barrier_destroy(&barrier);

  /* the log: "name dev=D thread=T"; allocations and launches of one mock
  ** thread all in one device's context, the two threads' devices differ;
  ** one module load per device (one kernel per thread) */
  int devof[16], loads[2] = { 0, 0 }, launches = 0, mixed = 0;
  for (int i = 0; i < 16; i++) devof[i] = -1;
  FILE *f = fopen(logpath, "r");
  CHECK(f != NULL, "the mock's log %s", logpath);
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    char name[128];
    int dev, th;
    if (sscanf(line, "%127s dev=%d thread=%d", name, &dev, &th) != 3 || th < 0 || th >= 16) continue;
    if (strcmp(name, "cuModuleLoadDataEx") == 0 && dev >= 0 && dev < 2) loads[dev]++;
    if (strcmp(name, "cuMemAlloc_v2") != 0 && strcmp(name, "cuLaunchKernel") != 0) continue;
    if (strcmp(name, "cuLaunchKernel") == 0) launches++;
    if (devof[th] == -1) devof[th] = dev;
    else if (devof[th] != dev) mixed++;
  }
  if (f) fclose(f);
  unlink(logpath);
  CHECK(mixed == 0, "allocations or launches of one thread in another device's context: %d", mixed);
  int seen0 = 0, seen1 = 0;
  for (int i = 0; i < 16; i++) { seen0 |= devof[i] == 0; seen1 |= devof[i] == 1; }
  CHECK(seen0 && seen1, "a thread worked on each device");
  CHECK(launches == 2 * 5, "launches: %d", launches);
  CHECK(loads[0] == 1 && loads[1] == 1, "modules loaded: %d on device 0, %d on device 1",
        loads[0], loads[1]);

  return kt_finish("test_multigpu_threads", argc, argv);
}
