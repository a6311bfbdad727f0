/*
** fft_host.c: KFftDesc (fft_host.h) executed with FFTW 3 on host memory.
**
** One FFTW "guru64" plan per transform: the transformed axes are its dims,
** every other axis a howmany dim, each with its own stride, so any set of
** axes of a C-contiguous array is one plan and one pass (no transposes).
**
** Plans are made with FFTW_ESTIMATE by default, which never touches the
** arrays (FFTW_MEASURE and FFTW_PATIENT, asked for with the planner option,
** time candidate plans on scratch arrays of the same alignment), and are
** cached for the process by (descriptor, precision, FFTW's alignment of
** both pointers): a cached plan then runs on new arrays through
** fftw_execute_dft & co. (FFTW's "new-array execute", which needs the same
** alignment, and in or out of place like the plan: in == out, c2c only,
** is another cache entry). FFTW's planner is not
** thread-safe, so planning (and nothing else) holds plan_mu; the cache only
** grows (up to CACHE_MAX plans; after that a plan is made, used and
** destroyed per call), so a plan found in it stays valid without a lock.
**
** FFTW is not linked: its two libraries (double and single precision) are
** opened on the first transform (or kjit.fft.backend()), like OpenBLAS's.
** Loaded with kjit.so they cost every `require "kjit"` 0.55 ms of CPU,
** most of what require costs over a bare lua5.4, in every script, also
** those that never transform anything. The functions this file calls go
** through pointers of their own declared types (fw below).
**
** Built without FFTW (cmake/fftw.cmake did not find it), every call
** reports what to install.
*/
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libs/fft_host.h"

/* r2c and c2r halve the last transformed axis (NumPy's rfftn; FFTW's guru
** r2c halves the last of its dims, which are the axes in order) */
void kfft_sides(const KFftDesc *d, int64_t in[3], int64_t out[3]) {
  int h = d->axes[d->naxes > 0 ? d->naxes - 1 : 0];
  for (int k = 0; k < 3; k++) in[k] = out[k] = k < d->rank ? d->n[k] : 1;
  if (d->kind == KFFT_R2C) out[h] = d->n[h] / 2 + 1;
  if (d->kind == KFFT_C2R) in[h] = d->n[h] / 2 + 1;
}

void kfft_host_scale(void *x, int64_t count, int dbl, double s) {
  if (dbl) { double *p = x; for (int64_t i = 0; i < count; i++) p[i] *= s; }
  else { float *p = x; float f = (float)s; for (int64_t i = 0; i < count; i++) p[i] *= f; }
}

#ifndef KJIT_HAVE_FFTW

int kfft_host_available(const char **why) {
  if (why) *why = "kjit was built without FFTW (install it: Debian/Ubuntu "
                  "sudo apt-get install libfftw3-dev, then rebuild kjit)";
  return 0;
}

const char *kfft_host_version(void) { return NULL; }

int kfft_host_exec(const KFftDesc *d, void *in, void *out, char *err, size_t errn) {
  const char *why;
  (void)d; (void)in; (void)out;
  kfft_host_available(&why);
  snprintf(err, errn, "%s", why);
  return -1;
}

#else
#include <dlfcn.h>
#include <fftw3.h>
#include "libs/libfind.h"

/* FFTW's functions, found in the libraries by their sonames, then the
** files the build found (KJIT_FFTW_LIB, KJIT_FFTWF_LIB): libfind.h. */
#define FFTW_FUNCS(X)                                                            \
  X(fftw_plan_guru64_dft) X(fftw_plan_guru64_dft_r2c) X(fftw_plan_guru64_dft_c2r) \
  X(fftw_execute_dft) X(fftw_execute_dft_r2c) X(fftw_execute_dft_c2r)             \
  X(fftw_alignment_of) X(fftw_destroy_plan)
#define FFTWF_FUNCS(X)                                                              \
  X(fftwf_plan_guru64_dft) X(fftwf_plan_guru64_dft_r2c) X(fftwf_plan_guru64_dft_c2r) \
  X(fftwf_execute_dft) X(fftwf_execute_dft_r2c) X(fftwf_execute_dft_c2r)             \
  X(fftwf_alignment_of) X(fftwf_destroy_plan)

static struct {
#define FIELD(f) __typeof__(f) *f;
  FFTW_FUNCS(FIELD) FFTWF_FUNCS(FIELD)
#undef FIELD
  const char *version;   /* fftw_version */
} fw;
static pthread_once_t fw_once = PTHREAD_ONCE_INIT;
static int fw_ok;
static char fw_err[512];

static void fw_load(void) {
  /* (libfind.h: the loader path, then the files cmake found) */
  static const char *const dn[] = { "libfftw3.so.3", NULL }, *const fn[] = { "libfftw3f.so.3", NULL };
  static const kl_spec dspec = { "FFTW", NULL, dn, NULL, KJIT_FFTW_LIB,
                                 "install it (e.g. apt-get install libfftw3-3)" };
  static const kl_spec fspec = { "FFTW (single precision)", NULL, fn, NULL, KJIT_FFTWF_LIB,
                                 "install it (e.g. apt-get install libfftw3-3)" };
  void *d = kl_open(&dspec, NULL, 0, fw_err, sizeof fw_err);
  void *f = d ? kl_open(&fspec, NULL, 0, fw_err, sizeof fw_err) : NULL;
  if (!f) return;   /* (a library that loaded stays loaded) */
#define FIND(lib, name)                                                           \
  if (!(*(void **)&fw.name = dlsym(lib, #name))) {                                \
    snprintf(fw_err, sizeof fw_err, "FFTW has no function %s", #name);           \
    return;                                                                       \
  }
#define FIND_D(name) FIND(d, name)
#define FIND_F(name) FIND(f, name)
  FFTW_FUNCS(FIND_D) FFTWF_FUNCS(FIND_F)
#undef FIND_F
#undef FIND_D
#undef FIND
  const char *v = dlsym(d, "fftw_version");   /* (a char array, not a pointer) */
  fw.version = v ? v : "3";
  fw_ok = 1;
}

#define CACHE_MAX 256

typedef struct Entry {
  KFftDesc d;
  int align_in, align_out;
  int inplace;         /* planned with in == out */
  void *plan;          /* fftw_plan or fftwf_plan */
} Entry;

static pthread_mutex_t plan_mu = PTHREAD_MUTEX_INITIALIZER;
static Entry cache[CACHE_MAX];
static _Atomic int ncache;     /* entries [0, ncache) are complete */

int kfft_host_available(const char **why) {
  pthread_once(&fw_once, fw_load);
  if (!fw_ok && why) *why = fw_err;
  return fw_ok;
}

const char *kfft_host_version(void) { return kfft_host_available(NULL) ? fw.version : NULL; }

static int same(const Entry *e, const KFftDesc *d, int ai, int ao, int ip) {
  return e->align_in == ai && e->align_out == ao && e->inplace == ip &&
         memcmp(&e->d, d, sizeof *d) == 0;
}

/* The guru dims: the transformed axes (dims) and the others (loops), with
** the strides of each side in its own units (reals or complex numbers). */
static void geometry(const KFftDesc *d, fftw_iodim64 *dims, int *rank,
                     fftw_iodim64 *loops, int *hm) {
  int64_t in[3], out[3], is = 1, os = 1, istr[3], ostr[3];
  kfft_sides(d, in, out);
  for (int k = d->rank - 1; k >= 0; k--) {
    istr[k] = is; ostr[k] = os;
    is *= in[k]; os *= out[k];
  }
  *rank = *hm = 0;
  for (int k = 0; k < d->rank; k++) {
    int t = 0;
    for (int a = 0; a < d->naxes; a++) t |= d->axes[a] == k;
    /* a transformed axis has the logical length (the real one for r2c/c2r) */
    fftw_iodim64 io = { t ? d->n[k] : in[k], istr[k], ostr[k] };
    if (t) dims[(*rank)++] = io;
    else loops[(*hm)++] = io;
  }
}

/* Bytes of each side of d, in reals of its precision. */
static void side_bytes(const KFftDesc *d, size_t *ib, size_t *ob) {
  int64_t in[3], out[3];
  size_t es = d->dbl ? 8 : 4, ni = 1, no = 1;
  kfft_sides(d, in, out);
  for (int k = 0; k < d->rank; k++) { ni *= (size_t)in[k]; no *= (size_t)out[k]; }
  *ib = ni * es * (d->kind == KFFT_R2C ? 1 : 2);
  *ob = no * es * (d->kind == KFFT_C2R ? 1 : 2);
}

static void *make(const KFftDesc *d, void *in, void *out) {
  fftw_iodim64 dims[3], loops[3];
  int rank, hm;
  static const unsigned efforts[] = { FFTW_ESTIMATE, FFTW_MEASURE, FFTW_PATIENT };
  unsigned flags = efforts[d->effort];
  geometry(d, dims, &rank, loops, &hm);
  if (d->dbl) {
    switch (d->kind) {
      case KFFT_FWD: case KFFT_INV:
        return fw.fftw_plan_guru64_dft(rank, dims, hm, loops, in, out,
                                    d->kind == KFFT_FWD ? FFTW_FORWARD : FFTW_BACKWARD, flags);
      case KFFT_R2C: return fw.fftw_plan_guru64_dft_r2c(rank, dims, hm, loops, in, out, flags);
      default: return fw.fftw_plan_guru64_dft_c2r(rank, dims, hm, loops, in, out, flags);
    }
  }
  switch (d->kind) {
    case KFFT_FWD: case KFFT_INV:
      return fw.fftwf_plan_guru64_dft(rank, (fftwf_iodim64 *)dims, hm, (fftwf_iodim64 *)loops,
                                   in, out, d->kind == KFFT_FWD ? FFTW_FORWARD : FFTW_BACKWARD,
                                   flags);
    case KFFT_R2C:
      return fw.fftwf_plan_guru64_dft_r2c(rank, (fftwf_iodim64 *)dims, hm, (fftwf_iodim64 *)loops,
                                       in, out, flags);
    default:
      return fw.fftwf_plan_guru64_dft_c2r(rank, (fftwf_iodim64 *)dims, hm, (fftwf_iodim64 *)loops,
                                       in, out, flags);
  }
}

static void run(const KFftDesc *d, void *p, void *in, void *out) {
  if (d->dbl) {
    if (d->kind == KFFT_R2C) fw.fftw_execute_dft_r2c(p, in, out);
    else if (d->kind == KFFT_C2R) fw.fftw_execute_dft_c2r(p, in, out);
    else fw.fftw_execute_dft(p, in, out);
  } else {
    if (d->kind == KFFT_R2C) fw.fftwf_execute_dft_r2c(p, in, out);
    else if (d->kind == KFFT_C2R) fw.fftwf_execute_dft_c2r(p, in, out);
    else fw.fftwf_execute_dft(p, in, out);
  }
}

int kfft_host_exec(const KFftDesc *d, void *in, void *out, char *err, size_t errn) {
  const char *why;
  if (!kfft_host_available(&why)) {
    snprintf(err, errn, "%s", why);
    return -1;
  }
  int ai = d->dbl ? fw.fftw_alignment_of(in) : fw.fftwf_alignment_of(in);
  int ao = d->dbl ? fw.fftw_alignment_of(out) : fw.fftwf_alignment_of(out);
  int n = ncache, k, cached = 1, ip = in == out;
  void *p = NULL;
  for (k = 0; k < n; k++)
    if (same(&cache[k], d, ai, ao, ip)) { p = cache[k].plan; break; }
  if (p == NULL) {
    pthread_mutex_lock(&plan_mu);
    n = ncache;   /* another thread may have made it meanwhile */
    for (k = 0; k < n; k++)
      if (same(&cache[k], d, ai, ao, ip)) { p = cache[k].plan; break; }
    if (p == NULL) {
      if (d->effort == 0) {
        p = make(d, in, out);
      } else {   /* the planner writes its arrays: scratch ones, same alignment */
        size_t ib, ob;
        side_bytes(d, &ib, &ob);
        char *si = aligned_alloc(64, (ib + 64 + 63) / 64 * 64);
        char *so = aligned_alloc(64, (ob + 64 + 63) / 64 * 64);
        if (si && so) p = make(d, si + ((uintptr_t)in & 63), ip ? si + ((uintptr_t)in & 63)
                                                                  : so + ((uintptr_t)out & 63));
        free(si);
        free(so);
      }
      if (p && n < CACHE_MAX) {
        cache[n].d = *d;
        cache[n].align_in = ai;
        cache[n].align_out = ao;
        cache[n].inplace = ip;
        cache[n].plan = p;
        ncache = n + 1;
      } else {
        cached = 0;
      }
    }
    pthread_mutex_unlock(&plan_mu);
  }
  if (p == NULL) {
    snprintf(err, errn, "FFTW could not plan this transform");
    return -1;
  }
  run(d, p, in, out);
  if (!cached) {
    pthread_mutex_lock(&plan_mu);
    if (d->dbl) fw.fftw_destroy_plan(p); else fw.fftwf_destroy_plan(p);
    pthread_mutex_unlock(&plan_mu);
  }
  return 0;
}

#endif
