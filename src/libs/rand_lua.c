/*
** rand_lua.c: kjit.random (host arrays) and kjit.cuda.random.generator
** (device arrays), cuRAND's host API with its generator kinds:
**
**   g = generator{kind = "philox" | "xorwow" | "mrg32k3a" | "sobol32",
**                 seed = 0, offset = 0, dimensions = 1 (sobol32),
**                 stream = s (kjit.cuda), backend = "curand" | "kjit"}
**   g:uniform(a)  g:normal(a [, mean, std])  g:lognormal(a [, mean, std])
**   g:poisson(a, lambda)  g:bits(a)          fill a (and return it)
**   g:set_stream(s)   g.kind  g.seed  g.backend       backend()
**
** Which numbers (docs/guide/fft-random.md):
**   - on a GPU: cuRAND's device generator (curandCreateGenerator);
**   - on the host (kjit.random) and in the simulator: cuRAND's host
**     generator (curandCreateGeneratorHost) when libcurand loads: the same
**     numbers as the device generator for a kind, seed and offset; it needs
**     no GPU;
**   - without libcurand, or with backend = "kjit": kjit's own Philox
**     (rand_host.h), kind "philox" only, whose bits and f32 uniforms are
**     cuRAND's philox numbers exactly.
** Normal and lognormal draws of a pseudo-random kind come in pairs (cuRAND
** refuses an odd count): an odd-sized array is filled from n + 1 draws (a
** scratch array), so it is the first n numbers of that request.
*/
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "host/cudadrv.h"
#include "host/record.h"
#include "libs/libs.h"
#include "libs/rand_cuda.h"
#include "libs/rand_host.h"

#define GEN_MT "kjit.random.generator"

static const char *const kinds[] = { "philox", "xorwow", "mrg32k3a", "sobol32", NULL };

typedef struct Gen {
  int gpu, sim, device;   /* gpu: made by kjit.cuda.random (sim: in the simulator) */
  int kind;
  int own;                /* kjit's Philox, else cuRAND */
  int on_device;          /* a cuRAND device generator */
  void *cu;
  unsigned cugen;         /* on_device: kcu_gen of the context cu was made in */
  KPhilox ph;
  uint64_t seed;
} Gen;

static void rerr(lua_State *L, const char *what, const char *call, int status) {
  luaL_error(L, "%s: %s: %s (%d)", what, call, kcurand_status_name(status), status);
}

static int gen_gc(lua_State *L) {
  Gen *g = luaL_checkudata(L, 1, GEN_MT);
  /* after cuda.close() a device generator went with its context */
  if (!g->on_device || !kcu_stale(0, g->device, g->cugen)) kcurand_destroy(g->cu);
  g->cu = NULL;
  return 0;
}

static Gen *check_gen(lua_State *L) {
  Gen *g = luaL_checkudata(L, 1, GEN_MT);
  if (!g->own && g->cu == NULL) luaL_error(L, "kjit.random: generator used after it was finalized");
  if (g->gpu && ((kcu_sim_mode() != 0) != g->sim || (!g->sim && kcu_device() != g->device)))
    luaL_error(L, "kjit.cuda.random: this generator was made %s and cannot be used %s",
               g->sim ? "in simulator mode" : "for a device",
               g->sim ? "with the simulator off" : "on another device or in simulator mode");
  if (g->on_device && kcu_stale(0, g->device, g->cugen))
    luaL_error(L, "kjit.cuda.random: this generator was made before cuda.close(), which released "
               "it with the device's context: make it again");
  if (g->on_device) kcu_ensure(L);
  return g;
}

/* opts.field as a non-negative integer (seeds and offsets are 64-bit: a
** negative Lua integer is refused rather than wrapped). */
static uint64_t opt_u64(lua_State *L, int opts, const char *field, const char *what) {
  lua_getfield(L, opts, field);
  if (lua_isnil(L, -1)) { lua_pop(L, 1); return 0; }
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok || v < 0)
    luaL_error(L, "%s: option %s: a non-negative integer expected", what, field);
  lua_pop(L, 1);
  return (uint64_t)v;
}

static void set_stream(lua_State *L, Gen *g, int idx, const char *what) {
  if (!g->gpu) luaL_error(L, "%s: streams are for kjit.cuda.random (kjit.random runs on the CPU)", what);
  KCuStream s = kcu_check_stream(L, idx);
  lua_pushvalue(L, idx);
  lua_setiuservalue(L, 1, 1);   /* keeps the stream alive while the generator uses it */
  if (g->on_device) {
    const char *call;
    int r = kcurand_set_stream(g->cu, s, &call);
    if (r) rerr(L, what, call, r);
  }
}

static int new_gen(lua_State *L, int gpu) {
  const char *what = gpu ? "kjit.cuda.random.generator" : "kjit.random.generator";
  lua_settop(L, 1);
  if (lua_isnil(L, 1)) { lua_newtable(L); lua_replace(L, 1); }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "kind");
  int kind = 0;
  if (!lua_isnil(L, -1)) {
    const char *k = lua_tostring(L, -1);
    for (kind = 0; k && kinds[kind] && strcmp(kinds[kind], k) != 0; kind++) {}
    if (k == NULL || kinds[kind] == NULL)
      luaL_error(L, "%s: option kind: \"philox\", \"xorwow\", \"mrg32k3a\" or \"sobol32\" "
                 "expected, got %s", what, k ? k : luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  uint64_t seed = opt_u64(L, 1, "seed", what), offset = opt_u64(L, 1, "offset", what);
  uint64_t dims = opt_u64(L, 1, "dimensions", what);
  if (dims == 0) dims = 1;
  if (dims > 20000) luaL_error(L, "%s: option dimensions: 1 to 20000 expected", what);
  lua_getfield(L, 1, "backend");
  const char *be = lua_tostring(L, -1);
  if (!lua_isnil(L, -1) && (be == NULL || (strcmp(be, "curand") && strcmp(be, "kjit"))))
    luaL_error(L, "%s: option backend: \"curand\" or \"kjit\" expected", what);
  int sim = kcu_sim_mode() != 0, device = gpu && !sim;
  const char *why = NULL;
  int have = kcurand_available(&why);
  int own;
  if (be && strcmp(be, "kjit") == 0) {
    if (device) luaL_error(L, "%s: backend \"kjit\" runs on the CPU (kjit.random, or the simulator)", what);
    own = 1;
  } else if (be || device || kind != 0) {
    if (!have) {
      if (device || be) luaL_error(L, "%s: cuRAND is not available: %s", what, why);
      luaL_error(L, "%s: kind \"%s\" needs cuRAND, which is not available (%s); kind "
                 "\"philox\" works without it", what, kinds[kind], why);
    }
    own = 0;
  } else {
    own = !have;
  }
  if (own && kind != 0)
    luaL_error(L, "%s: backend \"kjit\" has kind \"philox\" only, not \"%s\"", what, kinds[kind]);
  lua_pop(L, 1);
  Gen *g = lua_newuserdatauv(L, sizeof *g, 1);
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, GEN_MT);
  g->gpu = gpu;
  g->sim = sim;
  g->device = kcu_device();
  g->kind = kind;
  g->own = own;
  g->seed = seed;
  g->on_device = device && !own;
  if (own) {
    g->ph.seed = seed;
    g->ph.pos = offset;
  } else {
    const char *call;
    if (g->on_device) kcu_ensure(L);
    g->cugen = kcu_gen(0, g->device);
    int r = kcurand_create(&g->cu, kind, !g->on_device, seed, offset, (unsigned)dims, &call);
    if (r) rerr(L, what, call, r);
  }
  lua_getfield(L, 1, "stream");
  if (!lua_isnil(L, -1)) {
    lua_replace(L, 1);   /* stack: stream, g */
    lua_insert(L, 1);    /* g, stream */
    set_stream(L, g, 2, what);
    lua_settop(L, 1);
  } else {
    lua_pop(L, 1);
  }
  return 1;
}
static int h_generator(lua_State *L) { return new_gen(L, 0); }
static int g_generator(lua_State *L) { return new_gen(L, 1); }

/* cuMemcpyDtoDAsync_v2 from the driver cudadrv.c loaded (odd normal counts) */
static int dtod(KCuDevPtr dst, KCuDevPtr src, size_t n, KCuStream s) {
  static int (*fn)(KCuDevPtr, KCuDevPtr, size_t, KCuStream);
  if (fn == NULL) {
    const char *p = getenv("KJIT_LIBCUDA");
    void *h = dlopen(p && *p ? p : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      *(void **)&fn = dlsym(h, "cuMemcpyDtoDAsync_v2");
      dlclose(h);   /* cudadrv.c keeps the driver loaded */
    }
    if (fn == NULL) return -1;
  }
  return fn(dst, src, n, s);
}

static int draw(lua_State *L, int which) {
  Gen *g = check_gen(L);
  static const char *const names[2][5] = {
    { "kjit.random.generator:bits", "kjit.random.generator:uniform",
      "kjit.random.generator:normal", "kjit.random.generator:lognormal",
      "kjit.random.generator:poisson" },
    { "kjit.cuda.random.generator:bits", "kjit.cuda.random.generator:uniform",
      "kjit.cuda.random.generator:normal", "kjit.cuda.random.generator:lognormal",
      "kjit.cuda.random.generator:poisson" } };
  const char *what = names[g->gpu][which];
  char *ptr;
  kjit_dtype t;
  int64_t n;
  if (g->gpu) {
    KDevArray *d = kcu_test_devarray(L, 2);
    if (d == NULL)
      luaL_error(L, "%s: argument #1: a device array expected, got %s", what,
                 kb_test_raw(L, 2) ? "a kjit array (kjit.random fills those)" : luaL_typename(L, 2));
    kcu_check_usable(L, d, 2);
    ptr = (char *)(uintptr_t)d->ptr; t = d->record ? KJIT_RECORD : d->dtype; n = d->size;
  } else {
    KBuffer *b = kb_test(L, 2);
    if (b == NULL && krec_test_array(L, 2))   /* (kb_test takes numeric arrays only) */
      luaL_error(L, "%s: argument #1: a kjit array of numbers expected, got an array of records",
                 what);
    if (b == NULL)
      luaL_error(L, "%s: argument #1: a kjit array expected, got %s", what,
                 kcu_test_devarray(L, 2) ? "a device array (kjit.cuda.random fills those)"
                                         : luaL_typename(L, 2));
    ptr = b->data; t = b->record ? KJIT_RECORD : b->dtype; n = b->size;
  }
  int intdraw = which == KR_BITS || which == KR_POISSON;
  if (intdraw ? t != KJIT_U32 : (t != KJIT_F32 && t != KJIT_F64))
    luaL_error(L, "%s: argument #1: %s array expected, got %s", what,
               intdraw ? "a u32" : "an f32 or f64", t == KJIT_RECORD ? "records" : kjit_dtype_name(t));
  int dbl = t == KJIT_F64;
  double a = 0, b = 1;
  if (which == KR_NORMAL || which == KR_LOGNORMAL) {
    a = luaL_optnumber(L, 3, 0.0);
    b = luaL_optnumber(L, 4, 1.0);
    if (!(b >= 0)) luaL_error(L, "%s: std must be >= 0, got %f", what, b);
  } else if (which == KR_POISSON) {
    a = luaL_checknumber(L, 3);
    if (!(a > 0) || a > 1e9) luaL_error(L, "%s: lambda must be > 0 (and at most 1e9), got %f", what, a);
  }
  lua_settop(L, 2);
  if (n == 0) return 1;
  if (g->own) {
    switch (which) {
      case KR_BITS: kphilox_bits(&g->ph, (uint32_t *)ptr, (size_t)n); break;
      case KR_UNIFORM: kphilox_uniform(&g->ph, ptr, (size_t)n, dbl); break;
      case KR_NORMAL: kphilox_normal(&g->ph, ptr, (size_t)n, dbl, a, b); break;
      case KR_LOGNORMAL: kphilox_lognormal(&g->ph, ptr, (size_t)n, dbl, a, b); break;
      default: kphilox_poisson(&g->ph, (uint32_t *)ptr, (size_t)n, a); break;
    }
    return 1;
  }
  const char *call;
  int r;
  int pairs = (which == KR_NORMAL || which == KR_LOGNORMAL) && g->kind != KR_SOBOL32 && (n & 1);
  if (!pairs) {
    r = kcurand_generate(g->cu, which, ptr, (size_t)n, dbl, a, b, &call);
    if (r) rerr(L, what, call, r);
    return 1;
  }
  /* odd count of pairs: n + 1 draws into a scratch array, n of them copied */
  size_t es = dbl ? 8 : 4;
  int64_t n1 = n + 1;
  if (g->on_device) {
    KDevArray *s = kcu_push_devarray(L, dbl ? KJIT_F64 : KJIT_F32, 1, &n1);
    r = kcurand_generate(g->cu, which, (void *)(uintptr_t)s->ptr, (size_t)n1, dbl, a, b, &call);
    if (r) rerr(L, what, call, r);
    lua_getiuservalue(L, 1, 1);
    KCuStream st = lua_isnil(L, -1) ? NULL : kcu_check_stream(L, -1);
    if (dtod((KCuDevPtr)(uintptr_t)ptr, s->ptr, (size_t)n * es, st) != 0)
      luaL_error(L, "%s: cuMemcpyDtoDAsync failed (odd count of normal draws)", what);
  } else {
    KBuffer *s = kb_push_new(L, dbl ? KJIT_F64 : KJIT_F32, 1, &n1, 0);
    r = kcurand_generate(g->cu, which, s->data, (size_t)n1, dbl, a, b, &call);
    if (r) rerr(L, what, call, r);
    memcpy(ptr, s->data, (size_t)n * es);
  }
  lua_settop(L, 2);
  return 1;
}

static int g_bits(lua_State *L) { return draw(L, KR_BITS); }
static int g_uniform(lua_State *L) { return draw(L, KR_UNIFORM); }
static int g_normal(lua_State *L) { return draw(L, KR_NORMAL); }
static int g_lognormal(lua_State *L) { return draw(L, KR_LOGNORMAL); }
static int g_poisson(lua_State *L) { return draw(L, KR_POISSON); }

static int g_set_stream(lua_State *L) {
  Gen *g = check_gen(L);
  set_stream(L, g, 2, "kjit.cuda.random.generator:set_stream");
  lua_settop(L, 1);
  return 1;
}

static const luaL_Reg gen_methods[] = {
  {"bits", g_bits}, {"uniform", g_uniform}, {"normal", g_normal},
  {"lognormal", g_lognormal}, {"poisson", g_poisson}, {"set_stream", g_set_stream},
  {NULL, NULL}
};

static int gen_index(lua_State *L) {
  Gen *g = luaL_checkudata(L, 1, GEN_MT);
  const char *k = luaL_checkstring(L, 2);
  for (const luaL_Reg *m = gen_methods; m->name; m++)
    if (strcmp(m->name, k) == 0) { lua_pushcfunction(L, m->func); return 1; }
  if (strcmp(k, "kind") == 0) lua_pushstring(L, kinds[g->kind]);
  else if (strcmp(k, "seed") == 0) lua_pushinteger(L, (lua_Integer)g->seed);
  else if (strcmp(k, "backend") == 0)
    lua_pushstring(L, g->own ? "kjit philox4x32-10" : g->on_device ? "cuRAND (device)" : "cuRAND (host)");
  else lua_pushnil(L);
  return 1;
}

static int gen_tostring(lua_State *L) {
  Gen *g = luaL_checkudata(L, 1, GEN_MT);
  lua_pushfstring(L, "kjit.%srandom.generator(%s, seed %I, %s)", g->gpu ? "cuda." : "",
                  kinds[g->kind], (lua_Integer)g->seed,
                  g->own ? "kjit philox4x32-10" : g->on_device ? "cuRAND (device)" : "cuRAND (host)");
  return 1;
}

/* backend(): the library the generators use by default, as text */
static int r_backend(lua_State *L) {
  const char *why;
  if (kcurand_available(&why)) lua_pushstring(L, kcurand_backend());
  else lua_pushfstring(L, "kjit philox4x32-10 (no cuRAND: %s)", why);
  return 1;
}

void klib_rand_open(lua_State *L) {
  int kjit = lua_gettop(L);
  if (luaL_newmetatable(L, GEN_MT)) {
    lua_pushcfunction(L, gen_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, gen_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, gen_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  luaL_getsubtable(L, kjit, "random");
  lua_pushcfunction(L, h_generator);
  lua_setfield(L, -2, "generator");
  lua_pushcfunction(L, r_backend);
  lua_setfield(L, -2, "backend");
  lua_pop(L, 1);
  luaL_getsubtable(L, kjit, "cuda");
  luaL_getsubtable(L, -1, "random");   /* shared with the in-kernel generator: add, never replace */
  lua_pushcfunction(L, g_generator);
  lua_setfield(L, -2, "generator");
  lua_pushcfunction(L, r_backend);
  lua_setfield(L, -2, "backend");
  lua_pop(L, 2);
}
