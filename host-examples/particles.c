/*
** particles.c: a C program (a game, say) that owns its particle arrays and
** lets a Lua script update them every frame, through kjit.
**
** The positions and velocities are malloc'd here, handed to Lua once as
** borrowed kjit arrays (kjit_pusharray: no copy, the release callback
** tells when Lua is done with them), and each frame calls the script's
** update(dt). The same update runs interpreted, compiled by kjit.jit, and
** compiled by kjit_compile and called straight from C with kjit_call (no
** Lua call at all), and as a cuda.jit kernel over device copies (on the
** GPU, or in kjit's simulator without one). Every backend
** starts from the same state; after the run, their positions must equal
** the interpreter's exactly, else the program exits with status 1.
**
**   particles [script [particles [frames]]]
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

#define MAXB 8

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void released(void *ud, void *data) {
  (void)data;
  ++*(int *)ud;
}

static int die(lua_State *L, const char *what) {
  fprintf(stderr, "particles: %s: %s\n", what, lua_tostring(L, -1));
  return 1;
}

int main(int argc, char **argv) {
  const char *script = argc > 1 ? argv[1] : "host-examples/particles.lua";
  int n = argc > 2 ? atoi(argv[2]) : 10000;
  int frames = argc > 3 ? atoi(argv[3]) : 30;
  const double dt = 1.0 / 60.0;
  if (n < 1 || frames < 1) { fprintf(stderr, "usage: particles [script [n [frames]]]\n"); return 2; }

  /* The host's memory: n rows of (x, y), plus the initial state and one
  ** result per backend for the comparison. */
  size_t bytes = (size_t)n * 2 * sizeof(float);
  float *pos = malloc(bytes), *vel = malloc(bytes), *pos0 = malloc(bytes), *vel0 = malloc(bytes);
  float *result[MAXB] = { 0 };
  if (!pos || !vel || !pos0 || !vel0) { fprintf(stderr, "out of memory\n"); return 1; }
  unsigned seed = 12345;
  for (int i = 0; i < 2 * n; i++) {
    seed = seed * 1103515245u + 12345u;
    pos0[i] = (float)((seed >> 8) % 10000) / 100.0f;              /* 0..100 */
    seed = seed * 1103515245u + 12345u;
    vel0[i] = (float)((int)((seed >> 8) % 4001) - 2000) / 100.0f; /* -20..20 */
  }

  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  if (luaL_loadfile(L, script) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) return die(L, script);
  int M = lua_gettop(L);

  /* Hand the arrays to Lua, once. Lua never frees them: it calls back. */
  int nreleased = 0;
  int64_t shape[2] = { n, 2 };
  if (kjit_pusharray(L, pos, KJIT_F32, 2, shape, NULL, released, &nreleased) != KJIT_OK ||
      kjit_pusharray(L, vel, KJIT_F32, 2, shape, NULL, released, &nreleased) != KJIT_OK)
    return die(L, "kjit_pusharray");
  int P = M + 1, V = M + 2;

  printf("particles: %d particles, %d frames\n", n, frames);
  int nb = 0, status = 0;
  const char *names[MAXB];

  /* The script's backends: update = backend.make(pos, vel), then
  ** update(dt) each frame through lua_pcall. */
  lua_getfield(L, M, "backends");
  int nback = (int)luaL_len(L, -1);
  for (int b = 1; b <= nback && nb < MAXB - 1; b++) {
    lua_geti(L, -1, b);
    lua_getfield(L, -1, "name");
    const char *name = lua_tostring(L, -1);
    lua_getfield(L, -2, "make");
    lua_pushvalue(L, P);
    lua_pushvalue(L, V);
    memcpy(pos, pos0, bytes);
    memcpy(vel, vel0, bytes);
    if (lua_pcall(L, 2, 2, 0) != LUA_OK) return die(L, name);
    if (lua_isnil(L, -2)) {
      printf("%s: skipped (%s)\n", name, lua_tostring(L, -1));
      lua_pop(L, 4);
      continue;
    }
    lua_pop(L, 1);   /* update is at the top */
    double t0 = now_s();
    for (int f = 0; f < frames; f++) {
      lua_pushvalue(L, -1);
      lua_pushnumber(L, dt);
      if (lua_pcall(L, 1, 0, 0) != LUA_OK) return die(L, name);
    }
    double t = now_s() - t0;
    printf("%-24s %10.1f fps  (%.3f ms/frame)\n", name, frames / t, 1e3 * t / frames);
    names[nb] = name;   /* the string lives in the script's table */
    result[nb] = malloc(bytes);
    if (!result[nb]) { fprintf(stderr, "out of memory\n"); return 1; }
    memcpy(result[nb++], pos, bytes);
    lua_pop(L, 3);
  }
  lua_pop(L, 1);

  /* The same step, compiled from C and called with kjit_call: the arrays
  ** are plain C descriptions of the host's memory; no Lua call per frame. */
  lua_getfield(L, M, "step");
  lua_getfield(L, M, "SIGNATURE");
  kjit_fn *step;
  if (kjit_compile(L, -2, lua_tostring(L, -1), &step) != KJIT_OK) return die(L, "kjit_compile");
  lua_getfield(L, M, "G");
  lua_getfield(L, M, "BOUNCE");
  double g = lua_tonumber(L, -2), bounce = lua_tonumber(L, -1);
  lua_pop(L, 2);
  kjit_array apos = { pos, KJIT_F32, 2, { n, 2, 1, 1 } }, avel = { vel, KJIT_F32, 2, { n, 2, 1, 1 } };
  kjit_value args[5] = { kjit_arr(&apos), kjit_arr(&avel), kjit_float(dt), kjit_float(g),
                         kjit_float(bounce) };
  memcpy(pos, pos0, bytes);
  memcpy(vel, vel0, bytes);
  double t0 = now_s();
  for (int f = 0; f < frames; f++)
    if (kjit_call(L, step, args, 5, NULL, 0) != KJIT_OK) return die(L, "kjit_call");
  double t = now_s() - t0;
  printf("%-24s %10.1f fps  (%.3f ms/frame)\n", "CPU (kjit_call from C)", frames / t, 1e3 * t / frames);
  names[nb] = "CPU (kjit_call from C)";
  result[nb] = malloc(bytes);
  if (!result[nb]) { fprintf(stderr, "out of memory\n"); return 1; }
  memcpy(result[nb++], pos, bytes);
  lua_pop(L, 3);   /* step, SIGNATURE, the compiled code's owner */

  /* Every backend must agree with the interpreter (backend 0), exactly. */
  int moved = memcmp(result[0], pos0, bytes) != 0;
  if (!moved) { printf("FAIL: the interpreter did not move any particle\n"); status = 1; }
  for (int b = 1; b < nb; b++) {
    int bad = -1;
    for (int i = 0; i < 2 * n && bad < 0; i++)
      if (memcmp(&result[b][i], &result[0][i], sizeof(float)) != 0) bad = i;
    if (bad >= 0) {
      printf("FAIL: %s differs from the interpreter at particle %d: %.9g, expected %.9g\n",
             names[b], bad / 2 + 1, result[b][bad], result[0][bad]);
      status = 1;
    }
  }
  if (nb < 2) { printf("FAIL: no compiled backend ran\n"); status = 1; }
  if (status == 0)
    printf("all %d backends computed the same positions as the interpreter, bit for bit\n", nb);

  /* Lua lets go of the arrays: the release callback runs once for each. */
  lua_close(L);
  if (nreleased != 2) { printf("FAIL: %d arrays released, expected 2\n", nreleased); status = 1; }
  for (int b = 0; b < nb; b++) free(result[b]);
  free(pos); free(vel); free(pos0); free(vel0);
  return status;
}
