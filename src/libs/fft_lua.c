/*
** fft_lua.c: the Lua side of kjit.fft (host arrays, FFTW) and kjit.cuda.fft
** (device arrays: cuFFT on a GPU, FFTW on the simulator's memory).
**
**   fft(x [, opts])   ifft   fft2   fftn      complex -> complex
**   rfft(x [, opts])   rfftn                   real -> complex (n/2+1 kept
**                                              along the last axis)
**   irfft(x [, opts])  irfftn                  complex (n/2+1) -> real
**   opts: axis (1-based or negative, the 1-D calls), axes (fft2, fftn),
**         n (1-D: length the input is cut or zero-padded to; irfft: the
**         output's length, default 2*(m-1)), s (fft2, fftn: one n per axis),
**         norm ("backward" default, "ortho", "forward": as NumPy),
**         out (the result array; out = x transforms a complex array in
**         place: fft, ifft, fft2, fftn without n or s), stream
**         (kjit.cuda.fft), planner
**         (FFTW's effort: "estimate" default, "measure", "patient").
**   plan(name, x [, opts]) -> p; p:exec(x [, out [, stream]])
**   backend() -> the library in use, as text
**
** Complex arrays are real arrays (f32 or f64) whose last dimension is 2
** (re, im); axes count the complex dimensions. The call builds a Plan (the
** transform's KFftDesc, the shapes, the copy the input needs, the scale);
** the one-shot calls build it on the C stack each time and find the cuFFT
** plans in a per-state cache keyed by (descriptor, device); fft.plan keeps
** one in a userdata, with its own cuFFT plans.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/buffer.h"
#include "host/cudadrv.h"
#include "host/record.h"
#include "libs/fft_cuda.h"
#include "libs/fft_host.h"
#include "libs/libs.h"

#define PLAN_MT   "kjit.fft.plan"
#define CACHE_KEY "kjit.cuda.fft.cache"
#define CACHE_MAX 64

/* W_FFT..W_IRFFT transform one axis (axis, n), the others several (axes, s) */
enum { W_FFT, W_IFFT, W_RFFT, W_IRFFT, W_FFT2, W_FFTN, W_RFFTN, W_IRFFTN, W_COUNT };
static const char *const wnames[] = { "fft", "ifft", "rfft", "irfft", "fft2", "fftn", "rfftn",
                                      "irfftn", NULL };
#define REAL_IN(w)  ((w) == W_RFFT || (w) == W_RFFTN)
#define REAL_OUT(w) ((w) == W_IRFFT || (w) == W_IRFFTN)

typedef struct Plan {
  int which, gpu, sim, device;
  kjit_dtype dtype;
  int in_ndim, rs_ndim, out_ndim;
  int64_t in_shape[KJIT_MAXDIMS];    /* what x must be */
  int copy;                          /* x goes through a scratch array of rs_shape */
  int64_t rs_shape[KJIT_MAXDIMS];
  int64_t out_shape[KJIT_MAXDIMS];
  KFftDesc d;
  double scale;
  KCufft *cu;                        /* gpu: owned by this userdata (or the cache's) */
  unsigned cugen;                    /* kcu_gen of the context cu was made in */
} Plan;

/* cu, made again if cuda.close() released the context it was made in (the
** old plans went with it: forgotten, not destroyed). */
static KCufft *live_cufft(lua_State *L, Plan *p, const char *what) {
  if (p->cu == NULL || kcu_stale(0, p->device, p->cugen)) {
    p->cu = NULL;
    p->cu = kcufft_make(L, &p->d, what);
    p->cugen = kcu_gen(0, p->device);
  }
  return p->cu;
}

/* An array argument, host or device. */
typedef struct Arr {
  char *ptr;
  kjit_dtype dtype;
  int ndim;
  int64_t shape[KJIT_MAXDIMS];
  size_t bytes;
} Arr;

static void shape_text(char *buf, size_t n, int ndim, const int64_t *s) {
  size_t k = (size_t)snprintf(buf, n, "{");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)s[i]);
  if (k < n) snprintf(buf + k, n - k, "}");
}

static void get_arr(lua_State *L, int idx, int gpu, const char *what, const char *arg, Arr *a) {
  memset(a, 0, sizeof *a);
  if (gpu) {
    KDevArray *d = kcu_test_devarray(L, idx);
    if (d == NULL) {
      if (kb_test_raw(L, idx))
        luaL_error(L, "%s: %s: a device array expected, got a kjit array (copy it with "
                   "cuda.to_device, or use kjit.fft on the host)", what, arg);
      luaL_error(L, "%s: %s: a device array expected, got %s", what, arg, luaL_typename(L, idx));
    }
    kcu_check_usable(L, d, idx);
    if (d->record) luaL_error(L, "%s: %s: an f32 or f64 array expected, got records", what, arg);
    a->ptr = (char *)(uintptr_t)d->ptr;
    a->dtype = d->dtype;
    a->ndim = d->ndim;
    memcpy(a->shape, d->shape, sizeof a->shape);
    a->bytes = d->bytes;
  } else {
    KBuffer *b = kb_test(L, idx);
    if (b == NULL) {
      if (kcu_test_devarray(L, idx))
        luaL_error(L, "%s: %s: a kjit array expected, got a device array (use kjit.cuda.fft)",
                   what, arg);
      if (krec_test_array(L, idx))   /* (kb_test takes numeric arrays only) */
        luaL_error(L, "%s: %s: a kjit array of numbers expected, got an array of records", what, arg);
      luaL_error(L, "%s: %s: a kjit array expected, got %s", what, arg, luaL_typename(L, idx));
    }
    if (b->record) luaL_error(L, "%s: %s: an f32 or f64 array expected, got records", what, arg);
    a->ptr = b->data;
    a->dtype = b->dtype;
    a->ndim = b->ndim;
    memcpy(a->shape, b->shape, sizeof a->shape);
    a->bytes = (size_t)b->size * (size_t)kb_dtype_bytes(b->dtype);
  }
  if (a->dtype != KJIT_F32 && a->dtype != KJIT_F64)
    luaL_error(L, "%s: %s: an f32 or f64 array expected, got %s", what, arg,
               kjit_dtype_name(a->dtype));
}

/* opts.<field> as an integer, or def when absent. */
static lua_Integer opt_int(lua_State *L, int opts, const char *field, lua_Integer def,
                           const char *what) {
  if (opts == 0) return def;
  lua_getfield(L, opts, field);
  if (lua_isnil(L, -1)) { lua_pop(L, 1); return def; }
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok) luaL_error(L, "%s: option %s: an integer expected, got %s", what, field,
                      luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* An axis of a rank-dimensional (complex) array: 1..rank or -rank..-1. */
static int norm_axis(lua_State *L, lua_Integer a, int rank, const char *what) {
  if (a >= 1 && a <= rank) return (int)a - 1;
  if (a <= -1 && a >= -rank) return rank + (int)a;
  return luaL_error(L, "%s: axis %I out of range for %d dimension%s (1..%d or -%d..-1)", what,
                    a, rank, rank == 1 ? "" : "s", rank, rank);
}

/* Fills p from the template x (at xi) and the options table (0: none). */
static void build(lua_State *L, Plan *p, int which, int gpu, int xi, int opts, const char *what) {
  Arr x;
  char sh[96];
  int axes[3], naxes = 0;
  int64_t len[3];   /* per transformed axis: the logical length */
  memset(p, 0, sizeof *p);
  p->which = which;
  p->gpu = gpu;
  get_arr(L, xi, gpu, what, "argument #1", &x);
  p->dtype = x.dtype;
  p->in_ndim = x.ndim;
  memcpy(p->in_shape, x.shape, sizeof x.shape);
  int cin = !REAL_IN(which), rank = cin ? x.ndim - 1 : x.ndim;
  if (cin && (x.ndim < 2 || x.shape[x.ndim - 1] != 2)) {
    shape_text(sh, sizeof sh, x.ndim, x.shape);
    luaL_error(L, "%s: argument #1: a complex array expected (its last dimension 2: re, "
               "im), got shape %s", what, sh);
  }
  if (rank > 3)
    luaL_error(L, "%s: argument #1: at most 3 %sdimensions, got %d", what, cin ? "complex " : "",
               rank);
  /* axes */
  int nd = which == W_FFT2 ? 2 : which > W_FFT2 ? rank : 1;
  if (which == W_FFT2 && rank < 2)
    luaL_error(L, "%s: argument #1: fft2 needs 2 complex dimensions, got %d", what, rank);
  int has_axes = 0;
  if (opts) {
    lua_getfield(L, opts, "axes");
    has_axes = !lua_isnil(L, -1);
    if (has_axes) {
      if (which <= W_IRFFT)
        luaL_error(L, "%s: option axes: %s transforms one axis (use axis)", what, wnames[which]);
      if (!lua_istable(L, -1))
        luaL_error(L, "%s: option axes: a table expected, got %s", what, luaL_typename(L, -1));
      nd = (int)luaL_len(L, -1);
      if (nd < 1 || nd > rank || (which == W_FFT2 && nd != 2))
        luaL_error(L, "%s: option axes: %s axes expected, got %d", what,
                   which == W_FFT2 ? "2" : "1 to the number of dimensions of", nd);
      for (int k = 0; k < nd; k++) {
        lua_rawgeti(L, -1, k + 1);
        int ok;
        lua_Integer a = lua_tointegerx(L, -1, &ok);
        if (!ok) luaL_error(L, "%s: option axes: integers expected", what);
        axes[k] = norm_axis(L, a, rank, what);
        lua_pop(L, 1);
        /* NumPy halves the last axis given; kjit's transforms take the axes
        ** in increasing order, so rfftn and irfftn ask for them so */
        if (k > 0 && (REAL_IN(which) || REAL_OUT(which)) && axes[k] <= axes[k - 1])
          luaL_error(L, "%s: option axes: increasing axes expected (the last one is the "
                     "halved one), got axis %d after axis %d", what, axes[k] + 1, axes[k - 1] + 1);
      }
    }
    lua_pop(L, 1);
    lua_getfield(L, opts, "axis");
    if (!lua_isnil(L, -1) && which > W_IRFFT)
      luaL_error(L, "%s: option axis: %s takes axes", what, wnames[which]);
    lua_pop(L, 1);
  }
  if (!has_axes) {
    if (which <= W_IRFFT) axes[0] = norm_axis(L, opt_int(L, opts, "axis", -1, what), rank, what);
    else for (int k = 0; k < nd; k++) axes[k] = rank - nd + k;
  }
  naxes = nd;
  for (int i = 1; i < naxes; i++)   /* sort; no repeats */
    for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) { int t = axes[j]; axes[j] = axes[j - 1]; axes[j - 1] = t; }
  for (int i = 1; i < naxes; i++)
    if (axes[i] == axes[i - 1]) luaL_error(L, "%s: option axes: axis %d given twice", what, axes[i] + 1);
  /* lengths */
  for (int k = 0; k < naxes; k++) len[k] = x.shape[axes[k]];
  /* irfft, irfftn: the last axis's output length 2 (m - 1) by default */
  if (REAL_OUT(which)) len[naxes - 1] = 2 * (x.shape[axes[naxes - 1]] - 1);
  if (which <= W_IRFFT) {
    lua_Integer n = opt_int(L, opts, "n", -1, what);
    if (n != -1) {
      if (n < 1) luaL_error(L, "%s: option n: a length of at least 1 expected, got %I", what, n);
      len[0] = n;
    }
  } else if (opts) {
    lua_getfield(L, opts, "s");
    if (!lua_isnil(L, -1)) {
      if (!lua_istable(L, -1) || luaL_len(L, -1) != naxes)
        luaL_error(L, "%s: option s: a table of %d lengths expected (one per axis)", what, naxes);
      for (int k = 0; k < naxes; k++) {
        lua_rawgeti(L, -1, k + 1);
        int ok;
        lua_Integer n = lua_tointegerx(L, -1, &ok);
        if (!ok || n < 1) luaL_error(L, "%s: option s: lengths of at least 1 expected", what);
        len[k] = n;
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  for (int k = 0; k < naxes; k++)
    if (len[k] < 1)
      luaL_error(L, "%s: a transform of length %I along axis %d (give n%s)", what,
                 (lua_Integer)len[k], axes[k] + 1,
                 which == W_IRFFT ? ", the output's length" : which == W_IRFFTN ? " in s" : "");
  /* the descriptor */
  KFftDesc *d = &p->d;
  memset(d, 0, sizeof *d);   /* compared bytewise (plan caches) */
  d->kind = REAL_IN(which) ? KFFT_R2C : REAL_OUT(which) ? KFFT_C2R
          : which == W_IFFT ? KFFT_INV : KFFT_FWD;
  if (opts && which == W_FFTN) {   /* fftn(x, {inverse = true}) is ifftn */
    lua_getfield(L, opts, "inverse");
    if (lua_toboolean(L, -1)) d->kind = KFFT_INV;
    lua_pop(L, 1);
  }
  d->dbl = x.dtype == KJIT_F64;
  d->rank = rank;
  d->naxes = naxes;
  for (int k = 0; k < rank; k++) d->n[k] = x.shape[k];
  for (int k = 0; k < naxes; k++) { d->axes[k] = axes[k]; d->n[axes[k]] = len[k]; }
  int64_t in[3], out[3];
  kfft_sides(d, in, out);
  p->rs_ndim = cin ? rank + 1 : rank;
  for (int k = 0; k < KJIT_MAXDIMS; k++) p->rs_shape[k] = 1;
  for (int k = 0; k < rank; k++) p->rs_shape[k] = in[k];
  if (cin) p->rs_shape[rank] = 2;
  p->copy = d->kind == KFFT_C2R;   /* c2r may overwrite its input */
  for (int k = 0; k < p->rs_ndim; k++) p->copy |= p->rs_shape[k] != x.shape[k];
  int cout = !REAL_OUT(which);
  p->out_ndim = cout ? rank + 1 : rank;
  for (int k = 0; k < KJIT_MAXDIMS; k++) p->out_shape[k] = 1;
  for (int k = 0; k < rank; k++) p->out_shape[k] = out[k];
  if (cout) p->out_shape[rank] = 2;
  /* scale */
  double N = 1;
  for (int k = 0; k < naxes; k++) N *= (double)d->n[axes[k]];
  static const char *const norms[] = { "backward", "ortho", "forward", NULL };
  int norm = 0;
  if (opts) {
    lua_getfield(L, opts, "norm");
    if (!lua_isnil(L, -1)) {
      const char *s = lua_tostring(L, -1);
      for (norm = 0; s && norms[norm] && strcmp(norms[norm], s) != 0; norm++) {}
      if (s == NULL || norms[norm] == NULL)
        luaL_error(L, "%s: option norm: \"backward\", \"ortho\" or \"forward\" expected, got %s",
                   what, s ? s : luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  if (opts) {   /* FFTW's planner effort */
    static const char *const efforts[] = { "estimate", "measure", "patient", NULL };
    lua_getfield(L, opts, "planner");
    if (!lua_isnil(L, -1)) {
      const char *s = lua_tostring(L, -1);
      int e;
      for (e = 0; s && efforts[e] && strcmp(efforts[e], s) != 0; e++) {}
      if (s == NULL || efforts[e] == NULL)
        luaL_error(L, "%s: option planner: \"estimate\", \"measure\" or \"patient\" expected, "
                   "got %s", what, s ? s : luaL_typename(L, -1));
      d->effort = e;
    }
    lua_pop(L, 1);
  }
  int inverse = d->kind == KFFT_INV || d->kind == KFFT_C2R;
  p->scale = norm == 1 ? 1 / sqrt(N) : (norm == 2) != inverse ? 1 / N : 1;
  if (gpu) {
    p->sim = kcu_sim_mode() != 0;
    p->device = kcu_device();
  }
}

/* ---- execution ---------------------------------------------------------- */

/* Copies the overlap of src (shape ss) into dst (shape ds, zeroed). */
static void resize_host(char *dst, const int64_t *ds, const char *src, const int64_t *ss,
                        int ndim, size_t es) {
  int64_t m[KJIT_MAXDIMS], idx[KJIT_MAXDIMS] = { 0 }, sstr[KJIT_MAXDIMS], dstr[KJIT_MAXDIMS];
  int64_t s1 = 1, d1 = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    m[k] = ss[k] < ds[k] ? ss[k] : ds[k];
    if (m[k] == 0) return;
    sstr[k] = s1; dstr[k] = d1;
    s1 *= ss[k]; d1 *= ds[k];
  }
  size_t run = (size_t)m[ndim - 1] * es;
  for (;;) {
    int64_t so = 0, dof = 0;
    for (int k = 0; k < ndim - 1; k++) { so += idx[k] * sstr[k]; dof += idx[k] * dstr[k]; }
    memcpy(dst + dof * (int64_t)es, src + so * (int64_t)es, run);
    int k = ndim - 2;
    while (k >= 0 && ++idx[k] == m[k]) idx[k--] = 0;
    if (k < 0) return;
  }
}

static int64_t count(int ndim, const int64_t *s) {
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) n *= s[k];
  return n;
}

/* The cuFFT plans of p->d on this device, from the state's cache. */
static KCufft *cached_cufft(lua_State *L, Plan *p, const char *what);

/* Runs plan p on x (at xi); out at oi (0: a new array), stream at si (0:
** none). Leaves the result on top of the stack and returns it. */
static void run(lua_State *L, Plan *p, int xi, int oi, int si, const char *what) {
  Arr x, o;
  char a[96], b[96];
  int top = lua_gettop(L);
  if (p->gpu && ((kcu_sim_mode() != 0) != p->sim || (!p->sim && kcu_device() != p->device)))
    luaL_error(L, "%s: this plan was made %s and cannot be used %s", what,
               p->sim ? "in simulator mode" : "for a device",
               p->sim ? "with the simulator off" : "on another device or in simulator mode");
  get_arr(L, xi, p->gpu, what, "argument #1", &x);
  int same = x.dtype == p->dtype && x.ndim == p->in_ndim;
  for (int k = 0; same && k < x.ndim; k++) same = x.shape[k] == p->in_shape[k];
  if (!same) {
    shape_text(a, sizeof a, x.ndim, x.shape);
    shape_text(b, sizeof b, p->in_ndim, p->in_shape);
    luaL_error(L, "%s: argument #1: %s array of shape %s, but the plan is for %s %s", what,
               kjit_dtype_name(x.dtype), a, kjit_dtype_name(p->dtype), b);
  }
  KCuStream st = NULL;
  if (p->gpu && si) st = kcu_check_stream(L, si);
  if (p->gpu && !p->sim) kcu_ensure(L);
  /* the result */
  if (oi) {
    get_arr(L, oi, p->gpu, what, "out", &o);
    same = o.dtype == p->dtype && o.ndim == p->out_ndim;
    for (int k = 0; same && k < o.ndim; k++) same = o.shape[k] == p->out_shape[k];
    if (!same) {
      shape_text(a, sizeof a, o.ndim, o.shape);
      shape_text(b, sizeof b, p->out_ndim, p->out_shape);
      luaL_error(L, "%s: out: %s array of shape %s, but the result is %s %s", what,
                 kjit_dtype_name(o.dtype), a, kjit_dtype_name(p->dtype), b);
    }
    /* out = x: in place, for a complex transform whose input is x itself
    ** (not a resized copy: then the shapes differ anyway) */
    int inplace = o.ptr == x.ptr && o.bytes == x.bytes && !p->copy &&
                  (p->d.kind == KFFT_FWD || p->d.kind == KFFT_INV);
    if (!inplace && o.ptr < x.ptr + x.bytes && x.ptr < o.ptr + o.bytes)
      luaL_error(L, "%s: out overlaps the input (only fft, ifft, fft2 and fftn transform in "
                 "place, with out = x itself)", what);
    lua_pushvalue(L, oi);
  } else if (p->gpu) {
    KDevArray *d = kcu_push_devarray(L, p->dtype, p->out_ndim, p->out_shape);
    o.ptr = (char *)(uintptr_t)d->ptr;
  } else {
    o.ptr = kb_push_new(L, p->dtype, p->out_ndim, p->out_shape, 0)->data;
  }
  int res = lua_gettop(L);
  int64_t nout = count(p->out_ndim, p->out_shape);
  if (nout == 0) {
    lua_pushvalue(L, res);
    lua_replace(L, top + 1);
    lua_settop(L, top + 1);
    return;
  }
  /* the input, through a scratch copy if needed */
  char *in = x.ptr;
  size_t es = (size_t)kb_dtype_bytes(p->dtype);
  int host = !p->gpu || p->sim;
  if (p->copy) {
    if (host) {
      if (p->gpu) in = (char *)(uintptr_t)kcu_push_devarray(L, p->dtype, p->rs_ndim, p->rs_shape)->ptr;
      else in = kb_push_new(L, p->dtype, p->rs_ndim, p->rs_shape, 1)->data;
      resize_host(in, p->rs_shape, x.ptr, x.shape, x.ndim, es);
    } else {
      KDevArray *t = kcu_push_devarray(L, p->dtype, p->rs_ndim, p->rs_shape);
      in = (char *)(uintptr_t)t->ptr;
      kcufft_resize(L, t->ptr, p->rs_shape, (KCuDevPtr)(uintptr_t)x.ptr, x.shape, x.ndim, es,
                    st, what);
    }
  }
  if (host) {
    char err[256];
    if (kfft_host_exec(&p->d, in, o.ptr, err, sizeof err) != 0) {
      if (p->gpu) luaL_error(L, "%s: the simulator runs FFTW, and %s", what, err);
      luaL_error(L, "%s: %s", what, err);
    }
    if (p->scale != 1) kfft_host_scale(o.ptr, nout, p->d.dbl, p->scale);
  } else {
    KCufft *cu = p->cu ? live_cufft(L, p, what) : cached_cufft(L, p, what);
    kcufft_exec(L, cu, (KCuDevPtr)(uintptr_t)in, (KCuDevPtr)(uintptr_t)o.ptr, st, what);
    if (p->scale != 1) kcufft_scale(L, (KCuDevPtr)(uintptr_t)o.ptr, nout, p->d.dbl, p->scale, st, what);
  }
  lua_pushvalue(L, res);
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
}

/* ---- plan objects --------------------------------------------------------- */

static int plan_gc(lua_State *L) {
  Plan *p = luaL_checkudata(L, 1, PLAN_MT);
  if (!kcu_stale(0, p->device, p->cugen)) kcufft_destroy(p->cu);
  p->cu = NULL;
  return 0;
}

static Plan *push_plan(lua_State *L) {
  Plan *p = lua_newuserdatauv(L, sizeof *p, 0);
  memset(p, 0, sizeof *p);
  luaL_setmetatable(L, PLAN_MT);
  return p;
}

static KCufft *cached_cufft(lua_State *L, Plan *p, const char *what) {
  struct { KFftDesc d; int device; } key;
  memset(&key, 0, sizeof key);
  key.d = p->d;
  key.d.effort = 0;   /* FFTW's alone */
  key.device = p->device;
  int top = lua_gettop(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, CACHE_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, CACHE_KEY);
  }
  int cache = lua_gettop(L);
  lua_pushlstring(L, (const char *)&key, sizeof key);
  if (lua_rawget(L, cache) == LUA_TUSERDATA) {
    KCufft *cu = live_cufft(L, (Plan *)lua_touserdata(L, -1), what);
    lua_settop(L, top);
    return cu;
  }
  lua_pop(L, 1);
  int n = 0;   /* the entries: few, and counted only when a plan is made */
  lua_pushnil(L);
  while (lua_next(L, cache)) { n++; lua_pop(L, 1); }
  Plan *h = push_plan(L);   /* holds the cuFFT plans */
  *h = *p;
  h->cu = NULL;
  live_cufft(L, h, what);
  if (n < CACHE_MAX) {
    lua_pushlstring(L, (const char *)&key, sizeof key);
    lua_pushvalue(L, -2);
    lua_rawset(L, cache);
  }
  KCufft *cu = h->cu;
  /* beyond CACHE_MAX: the holder stays on the caller's stack for this call
  ** (it is collected afterwards) */
  lua_replace(L, cache);
  lua_settop(L, cache);
  return cu;
}

/* p:exec(x [, out [, stream]]) */
static int plan_exec(lua_State *L) {
  Plan *p = luaL_checkudata(L, 1, PLAN_MT);
  const char *what = p->gpu ? "kjit.cuda.fft.plan:exec" : "kjit.fft.plan:exec";
  lua_settop(L, 4);   /* the plan stays at 1: referenced while it runs */
  run(L, p, 2, lua_isnil(L, 3) ? 0 : 3, lua_isnil(L, 4) ? 0 : 4, what);
  return 1;
}

static int plan_index(lua_State *L) {
  Plan *p = luaL_checkudata(L, 1, PLAN_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "exec") == 0) lua_pushcfunction(L, plan_exec);
  else if (strcmp(k, "shape") == 0) kb_push_shape(L, p->in_ndim, p->in_shape);
  else if (strcmp(k, "out_shape") == 0) kb_push_shape(L, p->out_ndim, p->out_shape);
  else if (strcmp(k, "dtype") == 0) lua_pushstring(L, kjit_dtype_name(p->dtype));
  else if (strcmp(k, "kind") == 0) lua_pushstring(L, wnames[p->which]);
  else if (strcmp(k, "scale") == 0) lua_pushnumber(L, p->scale);
  else lua_pushnil(L);
  return 1;
}

static int plan_tostring(lua_State *L) {
  Plan *p = luaL_checkudata(L, 1, PLAN_MT);
  char a[96];
  shape_text(a, sizeof a, p->in_ndim, p->in_shape);
  lua_pushfstring(L, "kjit.%sfft.plan(%s, %s %s)", p->gpu ? "cuda." : "", wnames[p->which],
                  kjit_dtype_name(p->dtype), a);
  return 1;
}

/* ---- the module functions --------------------------------------------------- */

/* opts at idx: a table or nothing */
static int opts_at(lua_State *L, int idx, const char *what) {
  if (lua_isnoneornil(L, idx)) return 0;
  if (!lua_istable(L, idx))
    luaL_error(L, "%s: argument #%d: an options table expected, got %s", what, idx,
               luaL_typename(L, idx));
  return idx;
}

static int call(lua_State *L, int which, int gpu) {
  /* the call's name for messages (static: no formatting on every call) */
  static const char *const names[2][W_COUNT] = {
    { "kjit.fft.fft", "kjit.fft.ifft", "kjit.fft.rfft", "kjit.fft.irfft", "kjit.fft.fft2",
      "kjit.fft.fftn", "kjit.fft.rfftn", "kjit.fft.irfftn" },
    { "kjit.cuda.fft.fft", "kjit.cuda.fft.ifft", "kjit.cuda.fft.rfft", "kjit.cuda.fft.irfft",
      "kjit.cuda.fft.fft2", "kjit.cuda.fft.fftn", "kjit.cuda.fft.rfftn",
      "kjit.cuda.fft.irfftn" } };
  const char *what = names[gpu][which];
  Plan p;
  lua_settop(L, 2);
  int opts = opts_at(L, 2, what);
  build(L, &p, which, gpu, 1, opts, what);
  int oi = 0, si = 0;
  if (opts) {
    lua_getfield(L, opts, "out");   /* 3 */
    lua_getfield(L, opts, "stream");   /* 4 */
    if (!lua_isnil(L, 3)) oi = 3;
    if (!lua_isnil(L, 4)) {
      if (!gpu) luaL_error(L, "%s: option stream: kjit.fft runs on the CPU (streams are for "
                           "kjit.cuda.fft)", what);
      si = 4;
    }
  }
  run(L, &p, 1, oi, si, what);
  return 1;
}

#define WRAP(name, W) \
  static int h_##name(lua_State *L) { return call(L, W, 0); } \
  static int g_##name(lua_State *L) { return call(L, W, 1); }
WRAP(fft, W_FFT) WRAP(ifft, W_IFFT) WRAP(rfft, W_RFFT) WRAP(irfft, W_IRFFT)
WRAP(fft2, W_FFT2) WRAP(fftn, W_FFTN) WRAP(rfftn, W_RFFTN) WRAP(irfftn, W_IRFFTN)

static int plan_new(lua_State *L, int gpu) {
  char what[48];
  snprintf(what, sizeof what, "kjit.%sfft.plan", gpu ? "cuda." : "");
  int which = luaL_checkoption(L, 1, NULL, wnames);
  lua_settop(L, 3);
  int opts = opts_at(L, 3, what);
  Plan tmp;
  build(L, &tmp, which, gpu, 2, opts, what);
  Plan *p = push_plan(L);
  *p = tmp;
  if (gpu && !p->sim) {
    kcu_ensure(L);
    live_cufft(L, p, what);
  }
  return 1;
}
static int h_plan(lua_State *L) { return plan_new(L, 0); }
static int g_plan(lua_State *L) { return plan_new(L, 1); }

static void push_fftw_backend(lua_State *L) {
  const char *why;
  if (kfft_host_available(&why)) lua_pushfstring(L, "FFTW %s", kfft_host_version());
  else lua_pushfstring(L, "none: %s", why);
}

static int h_backend(lua_State *L) { push_fftw_backend(L); return 1; }
static int g_backend(lua_State *L) {
  if (kcu_sim_mode()) {
    push_fftw_backend(L);
    lua_pushliteral(L, " (the simulator)");
    lua_concat(L, 2);
  } else {
    lua_pushstring(L, kcufft_backend());
  }
  return 1;
}

static const luaL_Reg host_fns[] = {
  {"fft", h_fft}, {"ifft", h_ifft}, {"rfft", h_rfft}, {"irfft", h_irfft},
  {"fft2", h_fft2}, {"fftn", h_fftn}, {"rfftn", h_rfftn}, {"irfftn", h_irfftn},
  {"plan", h_plan}, {"backend", h_backend}, {NULL, NULL}
};
static const luaL_Reg gpu_fns[] = {
  {"fft", g_fft}, {"ifft", g_ifft}, {"rfft", g_rfft}, {"irfft", g_irfft},
  {"fft2", g_fft2}, {"fftn", g_fftn}, {"rfftn", g_rfftn}, {"irfftn", g_irfftn},
  {"plan", g_plan}, {"backend", g_backend}, {NULL, NULL}
};

void klib_fft_open(lua_State *L) {
  int kjit = lua_gettop(L);
  if (luaL_newmetatable(L, PLAN_MT)) {
    lua_pushcfunction(L, plan_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, plan_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, plan_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  luaL_getsubtable(L, kjit, "fft");
  luaL_setfuncs(L, host_fns, 0);
  lua_pop(L, 1);
  luaL_getsubtable(L, kjit, "cuda");
  luaL_getsubtable(L, -1, "fft");
  luaL_setfuncs(L, gpu_fns, 0);
  lua_pop(L, 2);
}
