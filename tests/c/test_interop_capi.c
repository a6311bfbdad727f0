/*
** test_interop_capi.c: a C host sharing device memory with kjit.cuda
** (kjit_device_array_ptr, kjit_push_device_array_wrap: src/host/interop.c).
**
**   simulator (cuda.simulate(true)): host memory wrapped as a device array,
**     a simulated kernel writes it, the host reads the result in place; a
**     kjit-made device array's pointer is read and written by the host;
**   the mock driver (build/libmockcuda.so through KJIT_LIBCUDA, found next
**     to the results file): the host's own cuMemAlloc block wrapped, written
**     by Lua, read back by the host with cuMemcpyDtoH; kjit's block read by
**     the host; the wrap's collection frees nothing (the host frees it).
*/
#define _DEFAULT_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"
#include "kjit.h"
#include "check.h"

static lua_State *new_state(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_setglobal(L, "kjit");
  return L;
}

/* Runs code with the value at the top of the stack as global `d`. */
static int run(lua_State *L, const char *code) {
  lua_setglobal(L, "d");
  if (luaL_dostring(L, code) != LUA_OK) {
    printf("lua error: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

static void test_sim(void) {
  lua_State *L = new_state();
  CHECK(luaL_dostring(L, "kjit.cuda.simulate(true)") == LUA_OK, "simulate");
  /* the host's memory, wrapped: a simulated kernel writes it in place */
  float *host = aligned_alloc(64, 64 * sizeof(float));
  for (int i = 0; i < 64; i++) host[i] = (float)i;
  int64_t shape[2] = { 8, 8 };
  CHECK(kjit_push_device_array_wrap(L, (uint64_t)(uintptr_t)host, KJIT_F32, 2, shape) == KJIT_OK,
        "wrap host memory");
  CHECK(run(L, "local k = kjit.cuda.jit(function(a) local i, j = kjit.cuda.grid(2)\n"
               "  if i <= 8 and j <= 8 then a[i][j] = a[i][j] * 2 + i end end)\n"
               "k[{1, {8, 8}}](d)\n"
               "assert(tostring(d) == 'kjit.devarray(f32, {8, 8}) in the simulator')"),
        "kernel on the wrap");
  int ok = 1;
  for (int i = 0; i < 64; i++) ok &= host[i] == (float)i * 2 + (float)(i / 8 + 1);
  CHECK(ok, "the host sees the kernel's writes");
  /* a kjit device array's pointer: in the simulator, a host address */
  CHECK(luaL_dostring(L, "return kjit.cuda.to_device(kjit.arange(5, 'i32'))") == LUA_OK, "to_device");
  uint64_t p = 0;
  size_t bytes = 0;
  CHECK(kjit_device_array_ptr(L, -1, &p, &bytes) == KJIT_OK && bytes == 20, "ptr, bytes %zu", bytes);
  int32_t *q = (int32_t *)(uintptr_t)p;
  CHECK(q[4] == 4, "the host reads kjit's device memory");
  q[0] = 99;
  CHECK(run(L, "assert(d:copy_to_host()[1] == 99)"), "Lua sees the host's write");
  /* refusals */
  lua_pushinteger(L, 3);
  CHECK(kjit_device_array_ptr(L, -1, &p, NULL) == KJIT_ERRARG, "not a device array");
  lua_pop(L, 1);
  /* an array made before cuda.close(): its memory is gone */
  CHECK(luaL_dostring(L, "local a = kjit.cuda.device_array(3); kjit.cuda.close(); return a") == LUA_OK,
        "close: %s", lua_tostring(L, -1));
  CHECK(kjit_device_array_ptr(L, -1, &p, NULL) == KJIT_ERRARG, "made before cuda.close()");
  lua_pop(L, 1);
  CHECK(kjit_push_device_array_wrap(L, 0, KJIT_F32, 0, shape) == KJIT_ERRARG, "ndim 0");
  lua_pop(L, 1);
  CHECK(kjit_push_device_array_wrap(L, 0, (kjit_dtype)99, 1, shape) == KJIT_ERRARG, "dtype");
  lua_pop(L, 1);
  CHECK(kjit_push_device_array_wrap(L, 0, KJIT_F32, 2, shape) == KJIT_ERRARG, "NULL, not empty");
  lua_pop(L, 1);
  int64_t zero[1] = { 0 };
  CHECK(kjit_push_device_array_wrap(L, 0, KJIT_F32, 1, zero) == KJIT_OK, "NULL, empty");
  lua_pop(L, 1);
  int64_t neg[1] = { -1 };
  CHECK(kjit_push_device_array_wrap(L, 0, KJIT_F32, 1, neg) == KJIT_ERRARG, "negative");
  lua_pop(L, 1);
  lua_close(L);   /* the wrap is collected: host stays the host's */
  host[0] = 1.0f;
  free(host);
}

typedef int (*cuAlloc)(uint64_t *, size_t);
typedef int (*cuFree)(uint64_t);
typedef int (*cuHtoD)(uint64_t, const void *, size_t);
typedef int (*cuDtoH)(void *, uint64_t, size_t);

static void test_mock(void *h) {
  if (h == NULL) return;
  cuAlloc alloc = (cuAlloc)dlsym(h, "cuMemAlloc_v2");
  cuFree mfree = (cuFree)dlsym(h, "cuMemFree_v2");
  cuHtoD htod = (cuHtoD)dlsym(h, "cuMemcpyHtoD_v2");
  cuDtoH dtoh = (cuDtoH)dlsym(h, "cuMemcpyDtoH_v2");
  lua_State *L = new_state();
  CHECK(luaL_dostring(L, "kjit.cuda.simulate(false); return kjit.cuda.device_array(4, 'f64')")
        == LUA_OK, "driver: %s", lua_tostring(L, -1));
  /* kjit's block, read by the host (the context kjit made current) */
  uint64_t kp = 0;
  CHECK(kjit_device_array_ptr(L, -1, &kp, NULL) == KJIT_OK && kp != 0, "kjit's pointer");
  CHECK(run(L, "d:copy_to_device(kjit.array({1.5, 2.5, 3.5, 4.5}))"), "Lua writes");
  double got[4] = { 0 };
  CHECK(dtoh(got, kp, sizeof got) == 0 && got[3] == 4.5, "the host reads kjit's block");
  /* the host's block, wrapped */
  uint64_t mine = 0;
  CHECK(alloc(&mine, 6 * sizeof(int64_t)) == 0, "host cuMemAlloc");
  int64_t vals[6] = { 1, 2, 3, 4, 5, 6 };
  CHECK(htod(mine, vals, sizeof vals) == 0, "host copy in");
  int64_t shape[2] = { 2, 3 };
  CHECK(kjit_push_device_array_wrap(L, mine, KJIT_I64, 2, shape) == KJIT_OK, "wrap");
  CHECK(run(L, "local h = d:copy_to_host(); assert(h[2][3] == 6)\n"
               "d:copy_to_device(kjit.full({2, 3}, -7, 'i64'))\n"
               "assert(d:device_ptr() == " "d:cuda_array_interface().data[1])"), "Lua on the wrap");
  int64_t back[6] = { 0 };
  CHECK(dtoh(back, mine, sizeof back) == 0 && back[0] == -7 && back[5] == -7, "the host sees -7");
  CHECK(luaL_dostring(L, "d = nil; collectgarbage(); collectgarbage(); kjit.cuda.synchronize()")
        == LUA_OK, "collect");
  CHECK(mfree(mine) == 0, "the host frees its block (kjit did not)");
  lua_close(L);
}

int main(int argc, char **argv) {
  /* the mock driver next to the results file: <build>/test-results/x.txt */
  char mock[1024] = "build/libmockcuda.so";
  if (argc > 1) {
    snprintf(mock, sizeof mock, "%s", argv[1]);
    char *s = strrchr(mock, '/');
    if (s) { *s = 0; s = strrchr(mock, '/'); }
    if (s) snprintf(s, sizeof mock - (size_t)(s - mock), "/libmockcuda.so");
    else snprintf(mock, sizeof mock, "libmockcuda.so");
  }
  /* before kjit first looks for the driver (once per process): the same
  ** library, which kjit's dlopen then shares with this host */
  void *h = dlopen(mock, RTLD_NOW | RTLD_GLOBAL);
  if (h) setenv("KJIT_LIBCUDA", mock, 1);
  else printf("skip: the mock driver tests (no %s)\n", mock);
  test_sim();
  test_mock(h);
  printf("test_interop_capi: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}
