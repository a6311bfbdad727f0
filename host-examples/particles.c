/*
** particles.c: a C program (a game, say) that owns its particles, an
** array of C structs, and lets a Lua script update them every frame,
** through kjit.
**
** The particles are malloc'd here as `struct Particle { float x, y, vx,
** vy; }`, described to kjit once (kjit_record_new: the fields, their
** offsetof offsets and sizeof), handed to Lua once as a borrowed array of
** records (kjit_pushrecords: no copy, the release callback tells when Lua
** is done with it), and each frame calls the script's update(dt), which
** reads p.x, p.vy ... of the host's structs in place. The same update runs
** interpreted, compiled by kjit.jit, and compiled by kjit_compile_records
** and called straight from C with kjit_call (no Lua call at all), and as a
** cuda.jit kernel over a device copy (on the GPU, or in kjit's simulator
** without one). Every backend starts from the same state; after the run,
** their particles must equal the interpreter's exactly, else the program
** exits with status 1.
**
**   particles [script [particles [frames]]]
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime under -std=c11 */
#endif
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

#define MAXB 8

/* The game's own particle, as its renderer and physics use it. */
typedef struct Particle { float x, y, vx, vy; } Particle;

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

  /* The host's memory: n particles, plus the initial state and one result
  ** per backend for the comparison. */
  size_t bytes = (size_t)n * sizeof(Particle);
  Particle *ps = malloc(bytes), *ps0 = malloc(bytes);
  Particle *result[MAXB] = { 0 };
  if (!ps || !ps0) { fprintf(stderr, "out of memory\n"); return 1; }
  unsigned seed = 12345;
  for (int i = 0; i < n; i++) {
    float v[4];
    for (int k = 0; k < 4; k += 2) {
      seed = seed * 1103515245u + 12345u;
      v[k] = (float)((seed >> 8) % 10000) / 100.0f;                 /* 0..100 */
      seed = seed * 1103515245u + 12345u;
      v[k + 1] = (float)((int)((seed >> 8) % 4001) - 2000) / 100.0f; /* -20..20 */
    }
    ps0[i].x = v[0]; ps0[i].vx = v[1]; ps0[i].y = v[2]; ps0[i].vy = v[3];
  }

  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  if (luaL_loadfile(L, script) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) return die(L, script);
  int M = lua_gettop(L);

  /* Describe the struct to kjit (the same layout kjit.struct gives for these
  ** fields), then hand the array to Lua, once. Lua never frees it: it calls
  ** back. */
  const kjit_field fields[4] = {
    { "x", KJIT_F32, NULL, 0, offsetof(Particle, x) },
    { "y", KJIT_F32, NULL, 0, offsetof(Particle, y) },
    { "vx", KJIT_F32, NULL, 0, offsetof(Particle, vx) },
    { "vy", KJIT_F32, NULL, 0, offsetof(Particle, vy) },
  };
  const kjit_record *rec;
  if (kjit_record_new(L, fields, 4, sizeof(Particle), &rec) != KJIT_OK) return die(L, "kjit_record_new");
  int nreleased = 0;
  int64_t count = n;
  if (kjit_pushrecords(L, ps, rec, 1, &count, released, &nreleased) != KJIT_OK)
    return die(L, "kjit_pushrecords");
  int P = M + 1;

  printf("particles: %d particles, %d frames\n", n, frames);
  int nb = 0, status = 0;
  const char *names[MAXB];

  /* The script's backends: update = backend.make(ps), then update(dt)
  ** each frame through lua_pcall. */
  lua_getfield(L, M, "backends");
  int nback = (int)luaL_len(L, -1);
  for (int b = 1; b <= nback && nb < MAXB - 1; b++) {
    lua_geti(L, -1, b);
    lua_getfield(L, -1, "name");
    const char *name = lua_tostring(L, -1);
    lua_getfield(L, -2, "make");
    lua_pushvalue(L, P);
    memcpy(ps, ps0, bytes);
    if (lua_pcall(L, 1, 2, 0) != LUA_OK) return die(L, name);
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
    memcpy(result[nb++], ps, bytes);
    lua_pop(L, 3);
  }
  lua_pop(L, 1);

  /* The same step, compiled from C and called with kjit_call: the array is
  ** a plain C description of the host's structs (with their layout); no
  ** Lua call per frame. The signature's `record` is that layout. */
  lua_getfield(L, M, "step");
  lua_getfield(L, M, "SIGNATURE");
  kjit_fn *step;
  if (kjit_compile_records(L, -2, lua_tostring(L, -1), &rec, 1, &step) != KJIT_OK)
    return die(L, "kjit_compile_records");
  lua_getfield(L, M, "G");
  lua_getfield(L, M, "BOUNCE");
  double g = lua_tonumber(L, -2), bounce = lua_tonumber(L, -1);
  lua_pop(L, 2);
  kjit_array aps = { ps, KJIT_RECORD, 1, { n, 1, 1, 1 }, rec };
  kjit_value args[4] = { kjit_arr(&aps), kjit_float(dt), kjit_float(g), kjit_float(bounce) };
  memcpy(ps, ps0, bytes);
  double t0 = now_s();
  for (int f = 0; f < frames; f++)
    if (kjit_call(L, step, args, 4, NULL, 0) != KJIT_OK) return die(L, "kjit_call");
  double t = now_s() - t0;
  printf("%-24s %10.1f fps  (%.3f ms/frame)\n", "CPU (kjit_call from C)", frames / t, 1e3 * t / frames);
  names[nb] = "CPU (kjit_call from C)";
  result[nb] = malloc(bytes);
  if (!result[nb]) { fprintf(stderr, "out of memory\n"); return 1; }
  memcpy(result[nb++], ps, bytes);
  lua_pop(L, 3);   /* step, SIGNATURE, the compiled code's owner */

  /* Every backend must agree with the interpreter (backend 0), exactly:
  ** positions and velocities, every field of every struct. */
  int moved = memcmp(result[0], ps0, bytes) != 0;
  if (!moved) { printf("FAIL: the interpreter did not move any particle\n"); status = 1; }
  for (int b = 1; b < nb; b++) {
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
      if (memcmp(&result[b][i], &result[0][i], sizeof(Particle)) != 0) bad = i;
    if (bad >= 0) {
      printf("FAIL: %s differs from the interpreter at particle %d: (%.9g, %.9g), expected "
             "(%.9g, %.9g)\n", names[b], bad + 1, result[b][bad].x, result[b][bad].y,
             result[0][bad].x, result[0][bad].y);
      status = 1;
    }
  }
  if (nb < 2) { printf("FAIL: no compiled backend ran\n"); status = 1; }
  if (status == 0)
    printf("all %d backends computed the same positions as the interpreter, bit for bit\n", nb);

  /* Lua lets go of the array: the release callback runs once. */
  lua_close(L);
  if (nreleased != 1) { printf("FAIL: %d arrays released, expected 1\n", nreleased); status = 1; }
  for (int b = 0; b < nb; b++) free(result[b]);
  free(ps); free(ps0);
  return status;
}
